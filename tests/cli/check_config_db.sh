#!/bin/sh
# `patchbridge check-config` and the state database, for real:
#   check_config_db.sh PATCHBRIDGE STATE_SCHEMA PGBED_DIR
# On SQLite (a file) and on the PostgreSQL server of tests/pg/pgbed
# (PGBED_DIR, started by CTest's pgbed fixture): no database yet, no
# schema yet, a schema that needs migration, the current one, one newer
# than this patchbridge (exit 78), a server that does not answer (75),
# a login refused (77), a connection string file others may read (77),
# and --no-database.
set -u
pb=$1
schema=$2
bed=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
pgbed=$src/tests/pg/pgbed
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/cli_check_config_db.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0
latest=$("$schema" latest) || exit 1

fail() {
	echo "FAIL: $*"
	failed=1
}

# What the configurations name around them, so that only the database
# is in question (no Postfix here: a warning).
mkdir -p "$tmp/nopostfix" "$tmp/spool" "$tmp/sock"
(umask 077 && printf 'token\n' >"$tmp/token")

# run STATUS [OPTION] CONFIG: check-config must exit STATUS.
run() {
	want=$1
	shift
	env -u PATCHBRIDGE_CONFIG "$pb" check-config \
		--postfix-config "$tmp/nopostfix" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" != "$want" ]; then
		fail "check-config $*: exit $got, expected $want"
		sed 's/^/  stdout: /' "$tmp/out"
		sed 's/^/  stderr: /' "$tmp/err"
	fi
}

# has FILE TEXT: FILE holds TEXT (a fixed string) on some line.
has() {
	grep -qF -- "$2" "$1" || {
		fail "$1 lacks: $2"
		sed 's/^/  | /' "$1"
	}
}

# config NAME STATE-LINES: a valid configuration with those [state] lines.
config() {
	cat >"$tmp/$1.conf" <<CONF
[bridge]
address = bridge@example.org
domain = example.org
list_address = list@example.org
[forge]
url = https://gitlab.example.org
token_file = $tmp/token
timeout = 30s
max_retries = 2
retry_max = 30s
[milter]
socket = unix:$tmp/sock/milter.sock
[spool]
dir = $tmp/spool
[inbound]
approval_policy = none
[state]
$2
CONF
}

# conninfo NAME STRING: a connection string file, mode 600.
conninfo() {
	(umask 077 && echo "$2" >"$tmp/$1.conninfo")
}

# --- SQLite ---------------------------------------------------------------
config lite "path = $tmp/state.db"
run 0 "$tmp/lite.conf"
has "$tmp/out" "$tmp/lite.conf: ok"
has "$tmp/out" "state: $tmp/state.db: no database yet; patchbridge run creates it"
"$schema" sqlite "$tmp/state.db" 4 || fail "state_schema sqlite 4"
run 0 "$tmp/lite.conf"
has "$tmp/out" "schema version 4 needs migration to $latest; patchbridge run migrates it at start"
"$schema" sqlite "$tmp/state.db" 0 || fail "state_schema sqlite"
run 0 "$tmp/lite.conf"
has "$tmp/out" "state: $tmp/state.db: schema version $latest (current)"
sqlite3 "$tmp/state.db" "PRAGMA user_version = 99" || fail "sqlite3"
run 78 "$tmp/lite.conf"
has "$tmp/err" "schema version 99 is newer than this patchbridge knows ($latest)"
run 0 --no-database "$tmp/lite.conf"
[ "$(cat "$tmp/out")" = "$tmp/lite.conf: ok" ] ||
	fail "--no-database printed more than ok: $(cat "$tmp/out")"

# --- PostgreSQL -----------------------------------------------------------
[ -f "$bed/conninfo" ] || {
	echo "FAIL: no pgbed server in $bed (tests/pg/pgbed start $bed)"
	exit 1
}
db=$("$pgbed" createdb "$bed" pb_check_config) || fail "pgbed createdb"
conninfo pg "$db"
config pg "backend = postgresql
conninfo_file = $tmp/pg.conninfo"
run 0 "$tmp/pg.conf"
has "$tmp/out" "/pb_check_config: no schema yet; patchbridge run creates it"
"$schema" postgresql "$db" 4 || fail "state_schema postgresql 4"
run 0 "$tmp/pg.conf"
has "$tmp/out" "schema version 4 needs migration to $latest; patchbridge run migrates it at start"
"$schema" postgresql "$db" 0 || fail "state_schema postgresql"
run 0 "$tmp/pg.conf"
has "$tmp/out" "/pb_check_config: schema version $latest (current)"
# Several hosts: a project without a list archive is warned of, as a
# mail whose 250 was not recorded is then sent again unasked.
cp "$tmp/pg.conf" "$tmp/pgproj.conf"
printf '[project "g/p"]\n' >>"$tmp/pgproj.conf"
run 0 "$tmp/pgproj.conf"
cat "$tmp/err" >>"$tmp/out"
has "$tmp/out" "project g/p: no [inbound] archive_url: with several hosts"
sed -i "/^\[inbound\]\$/a archive_url = https://lists.example.org/list" \
	"$tmp/pgproj.conf"
run 0 "$tmp/pgproj.conf"
grep -q "archive_url" "$tmp/out" "$tmp/err" &&
	fail "warned with an archive_url: $(cat "$tmp/out" "$tmp/err")"
"$pgbed" psql "$bed" pb_check_config \
	-c "UPDATE schema_version SET version = 99" || fail "psql"
run 78 "$tmp/pg.conf"
has "$tmp/err" "schema version 99 is newer than this patchbridge knows ($latest)"

# Over TCP with the password; then with a wrong one.
conninfo tcp "$("$pgbed" conninfo-tcp "$bed" pb_check_config)"
config tcp "backend = postgresql
conninfo_file = $tmp/tcp.conninfo"
run 78 "$tmp/tcp.conf" # connected: the same too-new schema
conninfo tcp "$("$pgbed" conninfo-tcp "$bed" pb_check_config wrong)"
run 77 "$tmp/tcp.conf"
has "$tmp/err" "authentication failed"
has "$tmp/err" "password authentication failed for user"
grep -q "wrong" "$tmp/err" && fail "the password was printed"

# Nobody listens: a port just closed.
port=$(python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
conninfo down "host=127.0.0.1 port=$port user=pbtest dbname=x connect_timeout=5"
config down "backend = postgresql
conninfo_file = $tmp/down.conninfo"
run 75 "$tmp/down.conf"
has "$tmp/err" "cannot connect"

# A connection string the group may read is refused, like the token:
# by the check of every secret file, a configuration error (78) found
# before the database is asked.
chmod 640 "$tmp/pg.conninfo"
run 78 "$tmp/pg.conf"
has "$tmp/err" "[state] conninfo_file"
has "$tmp/err" "chmod 0600"
# backend postgresql without conninfo_file: a configuration error.
config none "backend = postgresql"
run 78 "$tmp/none.conf"
has "$tmp/err" "[state] backend: postgresql needs conninfo_file"
# A milter connection string on SQLite would be ignored: refused.
config mconn "path = $tmp/state.db"
sed -i "/^\[milter\]\$/a conninfo_file = $tmp/pg.conninfo" "$tmp/mconn.conf"
run 78 "$tmp/mconn.conf"
has "$tmp/err" "[milter] conninfo_file: needs [state] backend = postgresql"

[ $failed = 0 ] && echo "cli_check_config_db: ok"
exit $failed
