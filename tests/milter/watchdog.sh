#!/bin/bash
# patchbridge-milter under systemd's watchdog, with a socket of the
# test's standing in for systemd's ($NOTIFY_SOCKET, WATCHDOG_USEC=1 s;
# tests/tools/notify_listen.py records each datagram):
#
#   1. READY=1 once the socket accepts connections, then WATCHDOG=1 from
#      the main thread at least every quarter second while idle;
#   2. an end of message that hangs (the thread map is a FIFO nobody
#      writes to, as a stalled disk would hold it, through miltertest's
#      stop_eom.lua): the pings stop - systemd would kill and restart
#      the milter after WatchdogSec - while the milter's own counters
#      keep being written;
#   3. the FIFO written to: the callback ends, the mail is answered, the
#      pings come again, and the counters the daemon reads
#      (milter.prom in the spool, [metrics] milter_interval = 1s) count
#      the mail seen;
#   4. SIGTERM: STOPPING=1, exit 0.
#
# usage: watchdog.sh MILTER_BINARY WORKDIR
# Exit 0 = pass, 1 = fail, 77 = skipped (miltertest missing).
NAME=watchdog
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../tools/slowdown.sh"

[ $# -eq 2 ] || {
	echo "usage: $0 MILTER_BINARY WORKDIR" >&2
	exit 2
}
mt_setup pbwdog "$1" "$2"
LISTEN=$SRC_DIR/tests/tools/notify_listen.py
NOTES=$W/notify.log
NPID=""
on_exit() {
	local rc=$?
	[ -n "$NPID" ] && kill -TERM "$NPID" 2>/dev/null
	# the FIFO's reader, if still blocked, is let go
	[ -p "$W/state.fifo" ] && timeout 2 sh -c ": >'$W/state.fifo'" 2>/dev/null
	mt_on_exit_rc "$rc"
}
mt_on_exit_rc() {
	(exit "$1")
	mt_on_exit
}
trap on_exit EXIT
export MT_MARK=$SOCKDIR/mark

now() {
	/usr/bin/python3 -c 'import time; print("%.3f" % time.monotonic())'
}

# pings_since T: WATCHDOG=1 datagrams received after monotonic time T.
pings_since() {
	awk -v t="$1" '$1 >= t && $2 ~ /(^|\|)WATCHDOG=1(\||$)/ { n++ }
		END { print n + 0 }' "$NOTES"
}

# last_ping: the monotonic time of the last WATCHDOG=1.
last_ping() {
	awk '$2 ~ /(^|\|)WATCHDOG=1(\||$)/ { t = $1 } END { print t + 0 }' \
		"$NOTES"
}

step "systemd's socket and the milter"
/usr/bin/python3 "$LISTEN" "$SOCKDIR/notify" "$NOTES" &
NPID=$!
wait_file "$NOTES.pid" 10 || fail "the notify listener did not start"
rm -f "$W/state.fifo"
mkfifo "$W/state.fifo" || fail "mkfifo failed"
sed "s|^path = .*|path = $W/state.fifo|" "$W/pb.conf" >"$W/wd.conf"
cat >>"$W/wd.conf" <<EOF
[metrics]
enabled = yes
milter_interval = 1s
EOF
MLOG=$W/milter.log
rm -f "$PIDFILE" "$MT_MARK"
NOTIFY_SOCKET=$SOCKDIR/notify WATCHDOG_USEC=1000000 \
	"$MBIN" -f -c "$W/wd.conf" -P "$PIDFILE" 2>"$MLOG" &
MPID=$!
wait_file "$PIDFILE" 10 || fail "no pid file within 10s: $(cat "$MLOG")"
for _ in $(seq "$(scaled 100)"); do
	grep -q ' READY=1$' "$NOTES" && break
	sleep 0.05
done
grep -q ' READY=1$' "$NOTES" || fail "no READY=1: $(cat "$NOTES")"

step "idle: pings at least every quarter second"
t=$(now)
sleep 1.5
n=$(pings_since "$t")
say "$n pings in 1.5 s"
[ "$n" -ge 4 ] || fail "only $n pings in 1.5 s with WATCHDOG_USEC=1 s"
wait_file "$W/spool/milter.prom" 5 || fail "no $W/spool/milter.prom"

step "an end of message stuck on the thread map: the pings stop"
miltertest -s "$MT_DIR/stop_eom.lua" >"$W/eom.out" 2>&1 &
LPID=$!
for _ in $(seq "$(scaled 200)"); do
	[ -e "$MT_MARK" ] && break
	sleep 0.02
done
[ -e "$MT_MARK" ] || fail "stop_eom.lua did not reach its mark"
sleep 3
pid_alive "$LPID" || fail "the mail was answered: $(cat "$W/eom.out")"
t=$(now)
gap=$(awk -v a="$t" -v b="$(last_ping)" 'BEGIN { printf "%.1f", a - b }')
say "no ping for $gap s (the watchdog interval: 1 s)"
awk -v g="$gap" 'BEGIN { exit !(g >= 2.0) }' ||
	fail "pinged $gap s ago while a callback hangs: $(tail -n 5 "$NOTES")"
mtime1=$(stat -c %Y "$W/spool/milter.prom")

step "the thread map answers: the mail goes on, the pings come again"
timeout 10 sh -c ": >'$W/state.fifo'" || fail "the FIFO has no reader"
wait "$LPID" || fail "stop_eom.lua: $(tail -n 5 "$W/eom.out")"
LPID=""
say "$(tail -n 1 "$W/eom.out")"
t=$(now)
sleep 1
n=$(pings_since "$t")
[ "$n" -ge 2 ] || fail "only $n pings in the second after the callback ended"
sleep 1.5
grep -qx 'patchbridge_milter_mails_seen_total 1' "$W/spool/milter.prom" ||
	fail "milter.prom does not count the mail: $(cat "$W/spool/milter.prom")"
[ "$(stat -c %Y "$W/spool/milter.prom")" -ge "$mtime1" ] ||
	fail "milter.prom was not written again"

step "SIGTERM: STOPPING=1"
kill -TERM "$MPID"
wait_pid_gone "$MPID" 30 || fail "still running 30 s after SIGTERM"
wait "$MPID" || fail "exit status $? after SIGTERM"
MPID=""
sleep 0.2
grep -q ' STOPPING=1$' "$NOTES" || fail "no STOPPING=1: $(tail -n 3 "$NOTES")"
no_sanitizer_report "$MLOG"

step "PASS in $((SECONDS - T0))s"
exit 0
