#!/bin/bash
# How patchbridge-milter stops (SIGTERM) with work still open, through
# miltertest (Debian package "miltertest"):
#
#   stop_envelope.lua  MAIL FROM answered, then an idle client: the drain
#                      waits only its short envelope grace for the
#                      message to arrive, so the milter is gone within
#                      ENVELOPE_S seconds (not the 20 s of the drain),
#                      status 0, and logs the message it did not wait for
#   stop_content.lua   the headers sent, then a pause longer than that
#                      grace: the drain waits, the message is answered
#                      with the X-Patchbridge header and spooled, and the
#                      milter stops cleanly after it
#   stop_eom.lua       the end of message hangs (the thread map is a FIFO
#                      nobody writes to): after the 20 s drain the milter
#                      logs the running callback and exits with status 0
#                      at once, through _exit(), without releasing what
#                      the callback uses; socket and pid file removed
#
# Each case fails on a sanitizer report in the milter's log.
#
# usage: stop.sh MILTER_BINARY WORKDIR
# Exit 0 = pass, 1 = fail, 77 = skipped (miltertest missing).
NAME=stop
. "$(dirname "$0")/lib.sh"

[ $# -eq 2 ] || {
	echo "usage: $0 MILTER_BINARY WORKDIR" >&2
	exit 2
}
mt_setup pbstop "$1" "$2"
# The drain's grace for messages not sent yet is 2 s (glue.c); the whole
# drain is 20 s (main.c).
ENVELOPE_S=8
DRAIN_S=20
export MT_MARK=$SOCKDIR/mark

# start LOG [CONF]: the milter in the foreground, its stderr on LOG.
start() {
	MLOG=$1
	rm -f "$PIDFILE" "$MT_MARK"
	"$MBIN" -f -c "${2:-$W/pb.conf}" -P "$PIDFILE" 2>"$MLOG" &
	MPID=$!
	wait_file "$PIDFILE" 10 || fail "no pid file within 10s: $(cat "$MLOG")"
}

# client SCRIPT: run a miltertest script in the background (LPID); its
# output goes to $W/SCRIPT.out.  Waits until it calls mark().
client() {
	miltertest -s "$MT_DIR/$1" >"$W/$1.out" 2>&1 &
	LPID=$!
	wait_file_exists "$MT_MARK" 10 ||
		fail "$1 did not reach its mark: $(cat "$W/$1.out")"
}

wait_file_exists() {
	local t0=$SECONDS
	while [ ! -e "$1" ]; do
		[ $((SECONDS - t0)) -ge "$2" ] && return 1
		sleep 0.02
	done
	return 0
}

# term LIMIT: SIGTERM, then the milter must exit with status 0 within
# LIMIT seconds, its socket and pid file gone; sets MS, the time taken.
term() {
	local t st
	t=$(date +%s%N)
	kill -TERM "$MPID" || fail "kill -TERM $MPID"
	wait_pid_gone "$MPID" "$1" || fail "still running $1s after SIGTERM"
	wait "$MPID"
	st=$?
	MS=$((($(date +%s%N) - t) / 1000000))
	MPID=""
	[ $st -eq 0 ] || fail "exit status $st after SIGTERM"
	[ -e "$SOCK" ] && fail "socket $SOCK left behind"
	[ -e "$PIDFILE" ] && fail "pid file left behind"
	grep -q 'notice: stopped$' "$MLOG" || fail "no 'stopped' in $MLOG"
	no_sanitizer_report "$MLOG"
}

step "an idle client between MAIL FROM and its message"
start "$W/envelope.log"
MT_IDLE=$((DRAIN_S + 10)) client stop_envelope.lua
term "$ENVELOPE_S"
say "stopped $MS ms after SIGTERM"
grep -q 'not sent yet by their SMTP clients were not waited for' \
	"$W/envelope.log" || fail "the message not waited for is not logged"
grep -q 'still in flight' "$W/envelope.log" &&
	fail "the drain timed out: $(grep 'still in flight' "$W/envelope.log")"
kill -KILL "$LPID" 2>/dev/null
wait "$LPID" 2>/dev/null
LPID=""

step "a message whose content is arriving is waited for"
start "$W/content.log"
MT_PAUSE=4 client stop_content.lua
term 15
wait "$LPID" || fail "stop_content.lua: $(tail -n 5 "$W/stop_content.lua.out")"
LPID=""
say "stopped $MS ms after SIGTERM; $(tail -n 1 "$W/stop_content.lua.out")"
[ "$MS" -ge 3000 ] || fail "stopped before the message was answered"
n=$(spool_count "$W/spool")
[ "$n" -eq 1 ] || fail "$n records in $W/spool/new, expected 1"
grep -q 'still in flight\|not waited for' "$W/content.log" &&
	fail "a message was given up: $(grep 'in flight\|waited' "$W/content.log")"

step "an end of message that hangs: _exit after the drain"
rm -f "$W/state.fifo"
mkfifo "$W/state.fifo" || fail "mkfifo failed"
sed "s|^path = .*|path = $W/state.fifo|" "$W/pb.conf" >"$W/fifo.conf"
start "$W/eom.log" "$W/fifo.conf"
client stop_eom.lua
sleep 2
pid_alive "$LPID" || fail "stop_eom.lua was answered: $(cat "$W/stop_eom.lua.out")"
term $((DRAIN_S + 10))
say "stopped $MS ms after SIGTERM"
[ "$MS" -ge $((DRAIN_S * 1000)) ] || fail "stopped before the drain ended"
grep -q '1 callback(s) still running after' "$W/eom.log" ||
	fail "the running callback is not logged"
kill -KILL "$LPID" 2>/dev/null
wait "$LPID" 2>/dev/null
LPID=""

step "PASS in $((SECONDS - T0))s"
exit 0
