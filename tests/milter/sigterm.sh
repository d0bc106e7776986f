#!/bin/bash
# SIGTERM of the milter under load: it drains and stops cleanly, and a
# reader finds only complete records (issue 6, must show 3; DESIGN.md
# rule 2).
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
[ "$(id -u)" -eq 0 ] || skip "must run as root (private Postfix)"
command -v postfix >/dev/null 2>&1 || skip "postfix is not installed"
[ -x /usr/sbin/smtp-source ] || skip "smtp-source (postfix) is missing"
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is not installed"
MBIN=$(abs_path "$1")
CHECK=$(abs_path "$2")
mkdir -p "$3" || fail "cannot create $3"
W=$(cd "$3" && pwd -P)
INST=$W/instance
N=${SIGTERM_N:-400}
T=$(mktemp -d /tmp/pbterm.XXXXXX) || fail "mktemp failed"
chmod 755 "$T"
mkdir -p "$T/state"
# The socket gets group postfix from the setgid directory (mode 0660).
install -d -g postfix -m 2750 "$T/run" || fail "install -d failed"
SOCK=$T/run/milter.sock
MPID=""
SPID=""
STARTED=""

# shellcheck disable=SC2317  # invoked through trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	pid_alive "$SPID" && kill -KILL "$SPID" 2>/dev/null
	[ -n "$STARTED" ] && "$PFBED" stop "$INST" >/dev/null 2>&1
	if pid_alive "$MPID"; then
		kill -TERM "$MPID" 2>/dev/null
		wait_pid_gone "$MPID" 30 || kill -KILL "$MPID" 2>/dev/null
	fi
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		say "kept for inspection: $T, $W"
		tail -n 10 "$W"/milter*.log 2>/dev/null
	else
		rm -rf "$T"
		[ -n "${RUNDIR:-}" ] && [ "$RUNDIR" != "$INST" ] &&
			"$PFBED" clean "$INST" >/dev/null 2>&1
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# start_milter LOG: start one milter; sets MPID.
start_milter() {
	rm -f "$T/run/milter.pid"
	"$MBIN" -f -c "$T/pb.conf" -P "$T/run/milter.pid" 2>"$1" &
	MPID=$!
	wait_file "$T/run/milter.pid" 10 || fail "milter did not start: $(cat "$1")"
}

# stop_milter PID LOG: SIGTERM, then the checks on a clean stop.
stop_milter() {
	local pid=$1 log=$2 t st
	kill -TERM "$pid" || fail "kill -TERM $pid"
	t=$SECONDS
	while [ -S "$SOCK" ]; do
		[ $((SECONDS - t)) -ge 2 ] &&
			fail "the socket still takes connections 2s after SIGTERM"
		sleep 0.02
	done
	wait_pid_gone "$pid" 30 || fail "milter $pid still running 30s after SIGTERM"
	wait "$pid"
	st=$?
	[ "$st" -eq 0 ] || fail "milter $pid exit status $st"
	grep -q 'notice: stopping (signal 15)' "$log" ||
		fail "no 'stopping (signal 15)' in $log"
	grep -q 'notice: stopped$' "$log" || fail "no 'stopped' in $log"
	grep -q 'still in flight' "$log" &&
		fail "the drain timed out: $(grep 'still in flight' "$log")"
	grep -q 'ERROR: \|runtime error' "$log" && fail "sanitizer report in $log"
	say "milter $pid stopped $((SECONDS - t))s after SIGTERM, status 0"
}

# Replies Postfix could not get from the milter inside a message: the
# command names are milter8.c's (SMFIC_MAIL and earlier are outside one).
cut_off() {
	grep "milter unix:$SOCK" "$LOG" |
		grep -E "SMFIC_(HEADER|EOH|BODY|BODYEOB)[ :]|timeout" || true
}

write_conf "$T/pb.conf" "$T"
# One reply, sent N times (smtp-source -F); each copy gets its own queue id.
{
	printf 'From: Rev Iewer <rev@example.org>\n'
	printf 'Subject: Re: [PATCH v3 2/7] list: grow the array on demand\n'
	printf 'Message-ID: <sigterm.%s@example.org>\n' "$$"
	printf 'In-Reply-To: <%s>\n' "$(our_msgid 3 2 7)"
	printf '\n> +\tl->generation++;\n\nWhy?\n\n'
	printf 'Reviewed-by: Rev Iewer <rev@example.org>\n'
} >"$W/reply.eml"

step "private postfix (default_action=tempfail) and the milter"
out=$("$PFBED" start "$INST" --milter "unix:$SOCK" --default-action tempfail) ||
	fail "pfbed start failed"
STARTED=1
eval "$out"
eval "$("$PFBED" env "$INST")"
start_milter "$W/milter1.log"
PID1=$MPID

step "smtp-source: $N replies at concurrency 10; SIGTERM mid-way"
/usr/sbin/smtp-source -4 -A -m "$N" -s 10 -F "$W/reply.eml" \
	-f sender@example.org -t "patches@$LIST_DOMAIN" -M loadgen.example \
	"127.0.0.1:$PORT" >"$W/smtp-source.out" 2>&1 &
SPID=$!
t=$SECONDS
until [ "$(spool_count "$T/spool")" -ge $((N / 4)) ]; do
	[ $((SECONDS - t)) -ge 30 ] && fail "fewer than $((N / 4)) spooled in 30s"
	pid_alive "$SPID" || fail "smtp-source ended before the signal"
	sleep 0.02
done
pid_alive "$SPID" || fail "smtp-source ended before the signal"
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
t=$SECONDS
while pid_alive "$SPID"; do
	[ $((SECONDS - t)) -ge 60 ] && fail "smtp-source still running after 60s"
	sleep 0.1
done
wait "$SPID"
SPID=""

step "wait for the queue to drain"
t=$SECONDS
until postqueue -c "$CONFIG" -p 2>/dev/null | grep -q 'Mail queue is empty'; do
	[ $((SECONDS - t)) -ge 30 ] && fail "queue not empty after 30s"
	sleep 0.2
done
stop_milter "$PID2" "$W/milter2.log"
MPID=""

step "every mail Postfix delivered has a complete record"
"$CHECK" "$T/spool" 2>"$W/check2.err" | sort -u >"$W/spooled.ids" ||
	fail "spool_check: $(cat "$W/check2.err")"
grep -q ' 0 bad, 0 left in tmp/' "$W/check2.err" ||
	fail "spool_check: $(cat "$W/check2.err")"
sed -n 's/.*postfix\/virtual\[[0-9]*\]: \([0-9A-Za-z]*\): to=.*status=sent.*/\1/p' \
	"$LOG" | sort -u >"$W/sent.ids"
sent=$(wc -l <"$W/sent.ids")
spooled=$(wc -l <"$W/spooled.ids")
tempfailed=$(grep -c 'milter-reject' "$LOG")
missing=$(comm -23 "$W/sent.ids" "$W/spooled.ids")
[ "$sent" -gt 0 ] || fail "nothing was delivered"
[ -z "$missing" ] ||
	fail "delivered but not spooled: $(printf '%s' "$missing" | tr '\n' ' ')"
# The successor may get no mail at all: smtp-source can be through its
# list (with 451s) before it listens.
from1=$(spool_names "$T/spool" | grep -c "\.$PID1\.")
from2=$(spool_names "$T/spool" | grep -c "\.$PID2\.")
say "sent=$sent spooled=$spooled (first milter $from1, second $from2)," \
	"milter-reject lines=$tempfailed"

"$PFBED" stop "$INST" >/dev/null || fail "pfbed stop failed"
STARTED=""
step "PASS in $((SECONDS - T0))s"
exit 0
