#!/bin/bash
# SIGTERM of the milter under load: it drains and stops cleanly, and a
# reader finds only complete records (docs/DESIGN.md rule 2).
#
# usage: sigterm.sh MILTER_BINARY SPOOL_CHECK WORKDIR
#
# smtp-source sends N replies to a bridged patch at concurrency 10 through
# the private Postfix (milter_default_action = tempfail).  Once a quarter
# of them are spooled the milter gets SIGTERM.  Then:
#
#  - the socket is gone within 2 s: new connections find the milter down
#    and Postfix applies default_action;
#  - the milter exits with status 0 within 30 s, logging "stopping
#    (signal 15)" and "stopped", and no drain time-out;
#  - no message it had begun was cut off: Postfix logged no failed reply
#    to a command inside a message (header, end of header, body, end of
#    message) from this milter;
#  - spool_check: tmp/ is empty and every record in new/ parses
#    completely.
#
# A second milter is started (smtp-source goes on meanwhile, the mails in
# the gap get 451) and stopped the same way once the queue has drained;
# every queue id Postfix logged status=sent for must have a record.  How
# many records the drain wrote after the signal is reported, not checked
# (it depends on timing; the Postfix log check above is the exact one).
#
# N defaults to 400 (SIGTERM_N).  Exit 0 = pass, 1 = fail, 77 = skipped.
NAME=sigterm
. "$(dirname "$0")/lib.sh"

[ $# -eq 3 ] || {
	echo "usage: $0 MILTER_BINARY SPOOL_CHECK WORKDIR" >&2
	exit 2
}
need_pfbed smtp-source
MBIN=$(abs_path "$1")
CHECK=$(abs_path "$2")
bed_dirs "$3" pbterm
N=${SIGTERM_N:-400}

# stop_milter PID LOG: SIGTERM, then the checks on a clean stop.
stop_milter() {
	local pid=$1 log=$2 t
	kill -TERM "$pid" || fail "kill -TERM $pid"
	t=$SECONDS
	while [ -S "$SOCK" ]; do
		[ $((SECONDS - t)) -ge 2 ] &&
			fail "the socket still takes connections 2s after SIGTERM"
		sleep 0.02
	done
	reap_milter "$pid" 30
	grep -q 'notice: stopping (signal 15)' "$log" ||
		fail "no 'stopping (signal 15)' in $log"
	grep -q 'notice: stopped$' "$log" || fail "no 'stopped' in $log"
	grep -q 'still in flight' "$log" &&
		fail "the drain timed out: $(grep 'still in flight' "$log")"
	no_sanitizer_report "$log"
	say "milter $pid stopped $((SECONDS - t))s after SIGTERM, status 0"
}

# Replies Postfix could not get from the milter inside a message: the
# command names are milter8.c's (SMFIC_MAIL and earlier are outside one).
cut_off() {
	grep "milter unix:$SOCK" "$LOG" |
		grep -E "SMFIC_(HEADER|EOH|BODY|BODYEOB)[ :]|timeout" || true
}

under_load "$N" SIGTERM
stop_milter "$PID1" "$W/milter1.log"
MPID=""
drained=$(sed -n '/stopping (signal 15)/,$p' "$W/milter1.log" | grep -c 'spooled as')
say "$drained record(s) written after SIGTERM by messages in flight"

step "after the stop: tmp/ empty, every record complete"
"$CHECK" "$T/spool" >"$W/check1.ids" 2>"$W/check1.err" ||
	fail "spool_check: $(cat "$W/check1.err")"
cat "$W/check1.err"
cut=$(cut_off)
[ -z "$cut" ] || fail "messages in flight were cut off: $cut"

step "a new milter; smtp-source finishes"
start_milter "$W/milter2.log"
PID2=$MPID
wait_load

step "wait for the queue to drain"
queue_drained 30
stop_milter "$PID2" "$W/milter2.log"
MPID=""

step "every mail Postfix delivered has a complete record"
"$CHECK" "$T/spool" 2>"$W/check2.err" | sort -u >"$W/spooled.ids" ||
	fail "spool_check: $(cat "$W/check2.err")"
grep -q ' 0 bad, 0 left in tmp/' "$W/check2.err" ||
	fail "spool_check: $(cat "$W/check2.err")"
check_delivered "$W/spooled.ids"
spooled=$(wc -l <"$W/spooled.ids")
# The successor may get no mail at all: smtp-source can be through its
# list (with 451s) before it listens.
from1=$(spool_names "$T/spool" | grep -c "\.$PID1\.")
from2=$(spool_names "$T/spool" | grep -c "\.$PID2\.")
say "sent=$SENT spooled=$spooled (first milter $from1, second $from2)," \
	"milter-reject lines=$TEMPFAILED"

pfbed_stop
step "PASS in $((SECONDS - T0))s"
exit 0
