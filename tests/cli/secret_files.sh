#!/bin/bash
# secret_files.sh PATCHBRIDGE
#
# check-config passes a secret file exactly when run takes it: both call
# the one check of core/secret.h.  For each form run refuses - the
# token, the webhook secret, the SMTP password and the PostgreSQL
# connection string at mode 0644, owned by another user, a link into a
# directory others may write, a directory, a FIFO, a file the daemon's
# user cannot read - run stops with a reason and check-config fails with
# the same reason (never "ok"), naming the fix as the owning user.  So
# is a file whose content run refuses: empty, two lines, over the cap.  The
# form a check-config run as root used to miss: a token only root can
# read, for a daemon that runs as another user (checked as that user).
set -u
export LC_ALL=C
unset PATCHBRIDGE_CONFIG
[ $# -eq 1 ] || {
	echo "usage: $0 PATCHBRIDGE" >&2
	exit 2
}
pb=$1
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/cli_secret.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
failed=0

fail() {
	echo "FAIL: $*" >&2
	failed=1
}

# The reason a program gave for KEY: the text after "KEY: " on the
# line of stderr (file) that names it.
reason() {
	grep -m1 -F -- "$1" "$2" | sed -e "s/^.*$(printf '%s' "$1" |
		sed -e 's/[][\.*^$/]/\\&/g'): //"
}

mkdir -m 0755 "$tmp/etc" "$tmp/open" "$tmp/state" "$tmp/state.spool" \
	"$tmp/nobody" "$tmp/nobody.spool"
state=state
chmod 0777 "$tmp/open"
for f in token webhook smtp conninfo; do
	printf 'good-%s\n' "$f" >"$tmp/etc/$f"
	chmod 0600 "$tmp/etc/$f"
done
conf=$tmp/etc/patchbridge.conf
# A port nothing listens on, for the webhook receiver run may start.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
write_conf() {
	cat >"$conf" <<CONF
[bridge]
address = bridge@example.org
domain = bridge.example.org
list_address = list@example.org
[forge]
url = http://127.0.0.1:9/
token_file = $tmp/etc/token
connect_timeout = 1s
max_retries = 0
[smtp]
url = smtp://127.0.0.1:9
username = bridge
password_file = $tmp/etc/smtp
[webhook]
enabled = yes
listen = 127.0.0.1:$port
secret_file = $tmp/etc/webhook
[milter]
socket = unix:$tmp/milter.sock
[state]
path = $tmp/$state/state.db
$1
[spool]
dir = $tmp/$state.spool
[inbound]
approval_policy = none
CONF
	chmod 0644 "$conf"
}

# try KEY FILE FORM [RUNAS]: with FILE in FORM, run (as RUNAS, else as
# this user) refuses with a reason for KEY, and check-config fails with
# the same reason.
try() {
	local key=$1 file=$2 form=$3 runas=${4:-} want got was=$failed
	failed=0
	# run --once starts no webhook receiver: the daemon itself, which
	# timeout stops should it take the file.
	local once=--once
	[ "$key" = "[webhook] secret_file" ] && once=
	if [ -n "$runas" ]; then
		timeout 20 setpriv --reuid="$runas" --regid="$runas" \
			--clear-groups "$pb" -c "$conf" run $once \
			--foreground >"$tmp/out" 2>"$tmp/run.err" </dev/null
	else
		timeout 20 "$pb" -c "$conf" run $once --foreground \
			>"$tmp/out" 2>"$tmp/run.err" </dev/null
	fi
	got=$?
	[ "$got" != 0 ] && [ "$got" != 124 ] || fail "$form $key: run took it"
	want=$(reason "$key" "$tmp/run.err")
	[ -n "$want" ] || fail "$form $key: run gave no reason for $key:" \
		"$(head -c 600 "$tmp/run.err")"
	timeout 20 "$pb" check-config --no-postfix --no-database "$conf" \
		>"$tmp/out" 2>"$tmp/cc.err" </dev/null
	got=$?
	[ "$got" = 78 ] || fail "$form $key: check-config exit $got, not 78:" \
		"$(head -c 600 "$tmp/cc.err")"
	grep -q ': ok$' "$tmp/out" && fail "$form $key: check-config said ok"
	got=$(reason "$key" "$tmp/cc.err")
	[ -n "$want" ] && [ "$got" != "$want" ] &&
		fail "$form $key: check-config says '$got', run says '$want'"
	case $want in
	*"run as root"* | *"sudo "*) fail "$form $key: advice to be root: $want" ;;
	esac
	[ $failed = 0 ] && echo "ok: $form $key: $want"
	[ $was = 0 ] || failed=1
}

good() {
	chmod 0600 "$tmp/etc/$1"
	chown 0:0 "$tmp/etc/$1"
}

write_conf ""
for pair in "[forge] token_file:token" "[webhook] secret_file:webhook" \
	"[smtp] password_file:smtp"; do
	key=${pair%:*}
	f=${pair##*:}
	path=$tmp/etc/$f

	chmod 0644 "$path"
	try "$key" "$path" "mode 0644"
	good "$f"

	chmod 0640 "$path"
	try "$key" "$path" "mode 0640"
	good "$f"

	chown 65534:65534 "$path"
	try "$key" "$path" "owned by another user"
	good "$f"

	mv "$path" "$tmp/open/$f"
	ln -s "$tmp/open/$f" "$path"
	try "$key" "$path" "link into a world-writable directory"
	rm "$path"
	mv "$tmp/open/$f" "$path"

	mv "$path" "$path.keep"
	: >"$path"
	chmod 0600 "$path"
	try "$key" "$path" "empty"
	printf 'two\nlines\n' >"$path"
	try "$key" "$path" "two lines"
	if [ "$f" = webhook ]; then
		# over the receiver's cap, within the token's
		head -c 1025 /dev/zero | tr '\0' x >"$path"
		try "$key" "$path" "1025 bytes"
	fi
	rm "$path"
	mkdir -m 0700 "$path"
	try "$key" "$path" "a directory"
	rmdir "$path"
	mkfifo -m 0600 "$path"
	try "$key" "$path" "a FIFO"
	rm "$path"
	mv "$path.keep" "$path"
done

# The PostgreSQL connection string (the database is never reached: the
# file is refused first).
write_conf "backend = postgresql
conninfo_file = $tmp/etc/conninfo"
chmod 0644 "$tmp/etc/conninfo"
try "[state] conninfo_file" "$tmp/etc/conninfo" "mode 0644"
good conninfo

# A daemon that runs as another user: the state directory says whom
# (nobody here).  A 0600 token of root's is refused by run as nobody
# (it cannot read it); check-config, run as root, must say so too.
if ! command -v setpriv >/dev/null || [ "$(id -u)" != 0 ]; then
	echo "SKIP: the other user's forms need root and setpriv" >&2
	[ $failed = 0 ] && exit 77
	exit 1
fi
state=nobody
write_conf ""
chown 65534:65534 "$tmp/nobody" "$tmp/nobody.spool"
for f in webhook smtp; do chown 65534:65534 "$tmp/etc/$f"; done
try "[forge] token_file" "$tmp/etc/token" "root's, unreadable by the daemon" \
	65534
grep -q "chown nobody:nogroup $tmp/etc/token; chmod 0600 $tmp/etc/token" \
	"$tmp/cc.err" || fail "no fix as the owning user: $(cat "$tmp/cc.err")"
chown 65534:65534 "$tmp/etc/token"
chmod 0644 "$tmp/etc/token"
try "[forge] token_file" "$tmp/etc/token" "the daemon's, mode 0644" 65534

# A third user cannot look as the daemon: check-config says the secret
# was not checked rather than guess (its other findings aside).
setpriv --reuid=daemon --regid=daemon --clear-groups "$pb" check-config \
	--no-postfix --no-database "$conf" >"$tmp/out" 2>"$tmp/cc.err" \
	</dev/null
grep -q "warning: \[forge\] token_file: $tmp/etc/token not checked: what the daemon's user nobody may read is seen only as that user" \
	"$tmp/cc.err" || fail "no warning for another user: $(cat "$tmp/cc.err")"

exit $failed
