#!/bin/bash
# kill -9 of the milter under load: anything Postfix answered 250 for is
# in the spool (docs/DESIGN.md rule 2).
#
# usage: kill9.sh MILTER_BINARY WORKDIR
#
# smtp-source sends N replies to a bridged patch (placed by our Message-ID
# scheme) at concurrency 10 through the private Postfix, with
# milter_default_action = tempfail.  Once part of them are spooled the
# milter is killed with SIGKILL and started again at once, and N/4 more
# are sent to the new one.  When the queue
# has drained, every queue id Postfix logged status=sent for must have a
# spool record (record names carry the queue id).  The reverse - spooled,
# then tempfailed because the answer was lost with the process - is
# allowed: the daemon deduplicates by Message-ID.
#
# N defaults to 400 (KILL9_N).  Exit 0 = pass, 1 = fail, 77 = skipped.
NAME=kill9
. "$(dirname "$0")/lib.sh"

[ $# -eq 2 ] || {
	echo "usage: $0 MILTER_BINARY WORKDIR" >&2
	exit 2
}
need_pfbed smtp-source
MBIN=$(abs_path "$1")
bed_dirs "$2" pbk9
N=${KILL9_N:-400}
under_load "$N" "kill -9"
kill -KILL "$PID1"
wait "$PID1" 2>/dev/null
before=$(spool_count "$T/spool")
start_milter "$W/milter2.log"
PID2=$MPID
say "killed $PID1 with $before records spooled; restarted as $PID2"
wait_load
# The rest of the load may all have met the gap before the successor
# listened (tempfailed: Postfix's default_action); a second batch shows
# the successor taking mail.
/usr/sbin/smtp-source -4 -A -m $((N / 4)) -s 10 -F "$W/reply.eml" \
	-f sender@example.org -t "patches@$LIST_DOMAIN" -M loadgen.example \
	"127.0.0.1:$PORT" >"$W/smtp-source2.out" 2>&1 ||
	fail "smtp-source after the restart: $(tail -n 3 "$W/smtp-source2.out")"

step "wait for the queue to drain"
queue_drained 30

step "every mail Postfix accepted is in the spool"
spool_names "$T/spool" | cut -d. -f2 | sort -u >"$W/spooled.ids"
check_delivered "$W/spooled.ids"
spooled=$(wc -l <"$W/spooled.ids")
from1=$(spool_names "$T/spool" | grep -c "\.$PID1\.")
from2=$(spool_names "$T/spool" | grep -c "\.$PID2\.")
[ "$from1" -gt 0 ] && [ "$from2" -gt 0 ] ||
	fail "records from the killed milter ($from1) and its successor ($from2)"
say "sent=$SENT spooled=$spooled (killed milter $from1, restarted $from2)," \
	"milter-reject lines=$TEMPFAILED, partial files in tmp/=$(ls "$T/spool/tmp" | wc -l)"

step "stop"
kill -TERM "$PID2"
reap_milter "$PID2" 15
pfbed_stop
no_sanitizer_report "$W"/milter*.log

step "PASS in $((SECONDS - T0))s"
exit 0
