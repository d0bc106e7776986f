#!/bin/bash
# admin_checks.sh PATCHBRIDGE MILTER
#
# What stops the daemon is what check-config finds, with a fix that names
# the daemon's user (never root), and the daemon's own error says the
# same (core/preflight.h, preflight_start() and preflight_owner()):
#
#  1. a file the daemon opens, left by a run as root: the spool's lock
#     (check-config, run, a warning of patchbridge-milter --check, and
#     the daemon's own error when it meets one while running), a record
#     in new/, the state database's -wal file;
#  2. run --once as root on the daemon's user's state directory: the
#     runuser line, and nothing made as root;
#  3. what stops the start: a token at mode 0644, a token the daemon's
#     user cannot read, the [metrics] port in use - check-config and
#     run give the same line.
#
# The daemon's user is nobody:nogroup (no user is created); the files of
# "a run as root" are made by this script as root.  Skipped (77) when not
# root: only root can make files of two users, and run as another.
set -u
export LC_ALL=C
unset PATCHBRIDGE_CONFIG
[ $# -eq 2 ] || {
	echo "usage: $0 PATCHBRIDGE MILTER" >&2
	exit 2
}
PB=$1
MILTER=$2
. "$(dirname "$0")/daemon_conf.sh"
skip() {
	echo "SKIP: $*" >&2
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "must run as root (files of another user)"
command -v setpriv >/dev/null 2>&1 || skip "setpriv is not installed"
getent passwd nobody >/dev/null && getent group nogroup >/dev/null ||
	skip "user nobody or group nogroup missing"
T=$(mktemp -d "${PB_TEST_TMP:-/tmp}/cli_admin.XXXXXX") || exit 1
HOLDER=
DPID=
cleanup() {
	[ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null && wait "$HOLDER"
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID"
	rm -rf "$T"
}
trap cleanup EXIT
chmod 0755 "$T"
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
# nobody must reach $T: every directory above it must let others through.
d=$T
while [ "$d" != / ]; do
	d=$(dirname "$d")
	[ $(($(stat -c %a "$d") % 2)) -eq 1 ] ||
		skip "$d is closed to others: set PB_TEST_TMP"
done

ERR=$T/err
OUT=$T/out
# run WANT CMD...: CMD exits WANT, its stdout in $OUT, stderr in $ERR.
run() {
	local want=$1 got
	shift
	timeout 60 "$@" >"$OUT" 2>"$ERR" </dev/null
	got=$?
	[ "$got" = "$want" ] ||
		fail "$*: exit $got, expected $want: $(head -c 2000 "$ERR")"
}
said() {
	grep -qF -- "$1" "$ERR" || fail "no '$1' in: $(cat "$ERR")"
}
not_said() {
	if grep -qF -- "$1" "$ERR"; then
		fail "'$1' in: $(cat "$ERR")"
	fi
}
AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
check_pb() { run "$1" "$PB" check-config --no-postfix --no-database "$T/etc/pb.conf"; }

# The README's layout, with nobody:nogroup as the daemon's user.
mkdir -m 0755 "$T/etc"
install -d -o nobody -g nogroup -m 2750 "$T/state" "$T/run"
install -d -o nobody -g nogroup -m 2770 "$T/spool"
for a in tmp new cur done dead; do
	install -d -o nobody -g nogroup -m 2770 "$T/spool/$a"
done
printf 'token\n' >"$T/etc/token"
chown nobody:nogroup "$T/etc/token"
chmod 0600 "$T/etc/token"
# conf [METRICS_PORT]
conf() {
	daemon_conf "$T/etc/pb.conf" "$T" "${1:-}"
	chmod 0644 "$T/etc/pb.conf"
}
conf
check_pb 0
# The daemon's user makes its state as it will find it at every start.
run 0 "${AS[@]}" "$PB" -c "$T/etc/pb.conf" run --once --foreground
check_pb 0

echo "[1a] the spool's lock, left by a run as root"
rm -f "$T/spool/.inbound.lock"
(umask 022 && : >"$T/spool/.inbound.lock")
LOCKMSG="[spool] dir: $T/spool/.inbound.lock is root:nogroup 0644, not the daemon's user's (nobody): the daemon cannot take the spool's lock (\"Permission denied\" every five seconds, no reply applied): chown nobody:nogroup $T/spool/.inbound.lock"
check_pb 78
said "$T/etc/pb.conf: $LOCKMSG"
grep -q ': ok$' "$OUT" && fail "check-config said ok"
# The milter's check warns (the daemon's file must not keep the milter,
# and the list's mail, from starting).
run 0 "${AS[@]}" "$MILTER" -c "$T/etc/pb.conf" --check \
	--postfix-config "$T/no-postfix"
said "patchbridge-milter: warning: $LOCKMSG"
run 77 "${AS[@]}" "$PB" -c "$T/etc/pb.conf" run --once --foreground
said "patchbridge run: $LOCKMSG"
# status, which would show only the records waiting, says it too.
run 0 "$PB" -c "$T/etc/pb.conf" status
cp "$OUT" "$ERR"
said "stops the daemon: $LOCKMSG"

echo "[1b] the daemon's own error, on a lock gone bad while it runs"
chown nobody:nogroup "$T/spool/.inbound.lock"
check_pb 0
"${AS[@]}" "$PB" -c "$T/etc/pb.conf" run --foreground 2>"$T/log" &
DPID=$!
wait_log "$T/log" "inbound: watching" "the daemon does not look at the spool"
rm -f "$T/spool/.inbound.lock"
(umask 022 && : >"$T/spool/.inbound.lock")
# A reload lets go of the lock; the next cycle takes it again.
kill -HUP "$DPID"
wait_log "$T/log" "inbound\.lock:" "no error on the lock"
kill "$DPID"
wait "$DPID"
DPID=
cp "$T/log" "$ERR"
said "$T/spool/.inbound.lock: Permission denied: the spool's lock is not the daemon's user's (left by a run as root?): chown nobody:nogroup $T/spool/.inbound.lock"
chown nobody:nogroup "$T/spool/.inbound.lock"

echo "[1c] a record in new/ and the database's -wal file, made by root"
printf 'x\n' >"$T/spool/new/1.root"
chmod 0600 "$T/spool/new/1.root"
check_pb 78
said "[spool] dir: the record $T/spool/new/1.root is root:nogroup 0600, which the daemon's user nobody cannot read or move on: chown nobody:nogroup $T/spool/new/1.root"
rm -f "$T/spool/new/1.root"
chown root:root "$T/state/state.db-wal"
check_pb 78
said "[state] path: $T/state/state.db-wal is root:root 0644, not the daemon's user's (nobody): the daemon cannot write the state (\"attempt to write a readonly database\", or no start): chown nobody:nogroup $T/state/state.db-wal"
chown nobody:nogroup "$T/state/state.db-wal"
check_pb 0

echo "[2] run --once as root, on the daemon's user's state"
run 77 "$PB" -c "$T/etc/pb.conf" run --once --foreground
said "patchbridge run: running as root, but the state directory $T/state is nobody's: what root makes there (the database's journal, locks, the spool's lock) would be root's and stop the daemon run as nobody; run it as nobody: runuser -u nobody -- patchbridge run --once"
not_said "owned by root"
not_said "chown root"
[ -z "$(find "$T/state" "$T/spool" -user root)" ] ||
	fail "run as root made: $(find "$T/state" "$T/spool" -user root)"

# A file root refuses to trust: the fix is to run as its owner.
install -d -o nobody -g nogroup -m 0755 "$T/nb"
install -o nobody -g nogroup -m 0644 "$T/etc/pb.conf" "$T/nb/pb.conf"
run 78 "$PB" check-config --no-postfix --no-database "$T/nb/pb.conf"
said "$T/nb/pb.conf is owned by nobody (uid $(id -u nobody)) (mode 0644): a file this program trusts, and every directory above it, must be owned by root, and not writable by group or others; or run the program as nobody, not as root (runuser -u nobody -- ...)"

echo "[3a] a token at mode 0644"
chmod 0644 "$T/etc/token"
TOKMSG="[forge] token_file: secret file $T/etc/token: mode 0644 lets the group or others in: chown nobody:nogroup $T/etc/token; chmod 0600 $T/etc/token"
check_pb 78
said "$T/etc/pb.conf: $TOKMSG"
run 77 "${AS[@]}" "$PB" -c "$T/etc/pb.conf" run --once --foreground
said "patchbridge run: $TOKMSG"

echo "[3b] a token the daemon's user cannot read"
chown root:root "$T/etc/token"
chmod 0600 "$T/etc/token"
TOKMSG="[forge] token_file: secret file $T/etc/token: Permission denied: nobody (uid $(id -u nobody)) may not read it: chown nobody:nogroup $T/etc/token; chmod 0600 $T/etc/token"
check_pb 78
said "$T/etc/pb.conf: $TOKMSG"
run 77 "${AS[@]}" "$PB" -c "$T/etc/pb.conf" run --once --foreground
said "patchbridge run: $TOKMSG"
chown nobody:nogroup "$T/etc/token"

echo "[3c] the metrics port in use"
python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
' "$T/port" &
HOLDER=$!
n=0
until [ -s "$T/port" ]; do
	n=$((n + 1))
	[ $n -le 300 ] || fail "the port holder did not start"
	sleep 0.1
done
PORT=$(cat "$T/port")
conf "$PORT"
PORTMSG="[metrics] listen: 127.0.0.1:$PORT: Address already in use: another program listens there (ss -ltnp 'sport = :$PORT' names it), and the daemon would not start: stop it, or set listen to a free port"
check_pb 78
said "$T/etc/pb.conf: $PORTMSG"
run 69 "${AS[@]}" "$PB" -c "$T/etc/pb.conf" run --foreground
said "patchbridge run: $PORTMSG"
kill "$HOLDER"
wait "$HOLDER"
HOLDER=
check_pb 0
echo PASS
