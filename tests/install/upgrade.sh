#!/bin/bash
# upgrade.sh PATCHBRIDGE STATE_SCHEMA SOURCE_DIR WORKDIR
#
# README.md "Upgrading", on the state the previous release left: the
# SQLite database of tests/data/state/schema8.sql (schema 8, rows in
# every table: revisions, mails, a forge comment, a queued mail, replies
# applied and dead, actions, verdicts, archived mail, a cursor).
#
#  1. status on the old schema says the daemon upgrades it, and changes
#     nothing;
#  2. the current daemon (run --once, the forge and the MTA unreachable:
#     the upgrade needs neither) migrates it to the latest schema and
#     logs it;
#  3. every row of the fixture is still there, its key and its data;
#  4. status and why read the upgraded state: the revisions mailed, the
#     replies applied and dead.
#
# Exit 0 pass, 1 fail.
set -u
export LC_ALL=C
unset PATCHBRIDGE_CONFIG
[ $# -eq 4 ] || {
	echo "usage: $0 PATCHBRIDGE STATE_SCHEMA SOURCE_DIR WORKDIR" >&2
	exit 2
}
pb=$1
schema=$2
fixture=$3/tests/data/state/schema8.sql
W=$4
PY=${PB_PYTHON:-/usr/bin/python3}
fail() {
	echo "FAIL: $*"
	[ -f "$W/run.log" ] && tail -n 20 "$W/run.log"
	exit 1
}
rm -rf "$W"
mkdir -p "$W/state" "$W/spool" || exit 1
W=$(cd "$W" && pwd)
chmod 0755 "$W"
printf 'token\n' >"$W/token" && chmod 0600 "$W/token"
cat >"$W/pb.conf" <<CONF
[bridge]
address = patchbridge@bridge.example.org
domain = bridge.example.org
list_address = list@example.org
[forge]
url = http://127.0.0.1:9
token_file = $W/token
max_retries = 0
[smtp]
url = smtp://127.0.0.1:9
[state]
path = $W/state/state.db
# The fixture's mail is from 2024: kept for ever, as before this release
# (README "Upgrading", step 1: the new default would prune it).
archive_keep = 0
[spool]
dir = $W/spool
[inbound]
approval_policy = none
[project "group/project"]
CONF
chmod 0640 "$W/pb.conf"

# rows DB: every row of every table of the fixture, one line each
# (table, then its columns in order; blobs in hex), sorted.
rows() {
	"$PY" - "$1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
tables = [r[0] for r in db.execute(
    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
for t in tables:
    for row in db.execute("SELECT * FROM %s" % t):
        print(t, "|".join(v.hex() if isinstance(v, bytes) else repr(v)
                          for v in row))
EOF
}
"$PY" -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.executescript(open(sys.argv[2]).read())
db.close()' "$W/state/state.db" "$fixture" || fail "cannot load $fixture"
ver() {
	"$PY" -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("PRAGMA user_version").fetchone()[0])' "$1"
}
[ "$(ver "$W/state/state.db")" = 8 ] || fail "the fixture is not schema 8"
rows "$W/state/state.db" >"$W/before"
[ "$(wc -l <"$W/before")" -ge 14 ] || fail "too few rows in the fixture: $(cat "$W/before")"
for t in revisions thread_map cursors inbound forge_actions outmail archive trailer_verdicts; do
	grep -q "^$t " "$W/before" || fail "the fixture has no row in $t"
done
cp "$W/state/state.db" "$W/old.db"

echo "1. status on the old schema"
"$pb" -c "$W/pb.conf" status >"$W/status0.out" 2>"$W/status0.err"
grep -q "schema version 8 is older than $("$schema" latest); the daemon upgrades it on start" \
	"$W/status0.err" || fail "status on schema 8: $(cat "$W/status0.out" "$W/status0.err")"
[ "$(ver "$W/state/state.db")" = 8 ] || fail "status changed the schema"

echo "2. the current daemon on it"
"$pb" -c "$W/pb.conf" run --once >"$W/run.out" 2>"$W/run.log"
grep -q "schema migrated from version 8 to $("$schema" latest)" "$W/run.log" ||
	fail "no migration in the daemon's log"
[ "$(ver "$W/state/state.db")" = "$("$schema" latest)" ] ||
	fail "schema $(ver "$W/state/state.db") after the daemon's start"

echo "3. every row kept"
# The columns of schema 8 of each table, read from the migrated
# database: a column a step added is not compared; the daemon's one
# cycle may have tried the queued mail (its attempt counted) and added
# cursors, so those two tables are compared by key.
"$PY" - "$W/old.db" "$W/state/state.db" <<'EOF' || fail "rows lost or changed"
import sqlite3, sys
old = sqlite3.connect(sys.argv[1])
new = sqlite3.connect(sys.argv[2])
keys = {"outmail": ["message_id", "message", "envelope_from", "recipients"],
        "cursors": ["name"]}
bad = 0
for (t,) in old.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'"):
    cols = keys.get(t) or [r[1] for r in old.execute(
        "PRAGMA table_info(%s)" % t)]
    q = "SELECT %s FROM %s" % (", ".join(cols), t)
    before = set(old.execute(q))
    after = set(new.execute(q))
    for row in sorted(before - after, key=repr):
        print("%s: lost or changed: %r" % (t, row))
        bad += 1
    print("%s: %d row(s) kept" % (t, len(before & after)))
sys.exit(1 if bad else 0)
EOF

echo "4. status and why on the upgraded state"
"$pb" -c "$W/pb.conf" status >"$W/status.out" 2>"$W/status.err" ||
	fail "status: $(cat "$W/status.out" "$W/status.err")"
grep -q "mailed: 1 merge request.*, 2 revisions" "$W/status.out" ||
	fail "status lost the revisions: $(cat "$W/status.out")"
grep -q "1 applied.* 1 dead" "$W/status.out" ||
	fail "status lost the replies: $(cat "$W/status.out")"
"$pb" -c "$W/pb.conf" why '<reply-1@corp.example>' >"$W/why.out" 2>&1 ||
	fail "why: $(cat "$W/why.out")"
grep -q "applied to the forge" "$W/why.out" || fail "why: $(cat "$W/why.out")"
rm -rf "$W"
echo "upgrade: PASS"
