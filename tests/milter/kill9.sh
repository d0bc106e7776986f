#!/bin/bash
# kill -9 of the milter under load: anything Postfix answered 250 for is
# in the spool (notes §3.4; DESIGN.md rule 2).
#
# usage: kill9.sh MILTER_BINARY WORKDIR
#
# smtp-source sends N replies to a bridged patch (placed by our Message-ID
# scheme) at concurrency 10 through the private Postfix, with
# milter_default_action = tempfail.  Once part of them are spooled the
# milter is killed with SIGKILL and started again at once.  When the queue
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
[ "$(id -u)" -eq 0 ] || skip "must run as root (private Postfix)"
command -v postfix >/dev/null 2>&1 || skip "postfix is not installed"
[ -x /usr/sbin/smtp-source ] || skip "smtp-source (postfix) is missing"
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is not installed"
MBIN=$(abs_path "$1")
mkdir -p "$2" || fail "cannot create $2"
W=$(cd "$2" && pwd -P)
INST=$W/instance
N=${KILL9_N:-400}
T=$(mktemp -d /tmp/pbk9.XXXXXX) || fail "mktemp failed"
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
		wait_pid_gone "$MPID" 15 || kill -KILL "$MPID" 2>/dev/null
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

write_conf "$T/pb.conf" "$T"
# One reply, sent N times (smtp-source -F); each copy gets its own queue id.
{
	printf 'From: Rev Iewer <rev@example.org>\n'
	printf 'Subject: Re: [PATCH v3 2/7] list: grow the array on demand\n'
	printf 'Message-ID: <kill9.%s@example.org>\n' "$$"
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

step "smtp-source: $N replies at concurrency 10; kill -9 mid-way"
/usr/sbin/smtp-source -4 -A -m "$N" -s 10 -F "$W/reply.eml" \
	-f sender@example.org -t "patches@$LIST_DOMAIN" -M loadgen.example \
	"127.0.0.1:$PORT" >"$W/smtp-source.out" 2>&1 &
SPID=$!
t=$SECONDS
until [ "$(spool_count "$T/spool")" -ge $((N / 4)) ]; do
	[ $((SECONDS - t)) -ge 30 ] && fail "fewer than $((N / 4)) spooled in 30s"
	pid_alive "$SPID" || fail "smtp-source ended before the kill"
	sleep 0.02
done
kill -KILL "$PID1"
wait "$PID1" 2>/dev/null
before=$(spool_count "$T/spool")
start_milter "$W/milter2.log"
PID2=$MPID
say "killed $PID1 with $before records spooled; restarted as $PID2"
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

step "every mail Postfix accepted is in the spool"
sed -n 's/.*postfix\/virtual\[[0-9]*\]: \([0-9A-Za-z]*\): to=.*status=sent.*/\1/p' \
	"$LOG" | sort -u >"$W/sent.ids"
spool_names "$T/spool" | cut -d. -f2 | sort -u >"$W/spooled.ids"
sent=$(wc -l <"$W/sent.ids")
spooled=$(wc -l <"$W/spooled.ids")
tempfailed=$(grep -c 'milter-reject' "$LOG")
missing=$(comm -23 "$W/sent.ids" "$W/spooled.ids")
[ "$sent" -gt 0 ] || fail "nothing was delivered"
[ -z "$missing" ] ||
	fail "accepted but not spooled: $(printf '%s' "$missing" | tr '\n' ' ')"
from1=$(spool_names "$T/spool" | grep -c "\.$PID1\.")
from2=$(spool_names "$T/spool" | grep -c "\.$PID2\.")
[ "$from1" -gt 0 ] && [ "$from2" -gt 0 ] ||
	fail "records from the killed milter ($from1) and its successor ($from2)"
say "sent=$sent spooled=$spooled (killed milter $from1, restarted $from2)," \
	"milter-reject lines=$tempfailed, partial files in tmp/=$(ls "$T/spool/tmp" | wc -l)"

step "stop"
kill -TERM "$PID2"
wait_pid_gone "$PID2" 15 || fail "milter still running 15s after SIGTERM"
wait "$PID2" || fail "milter exit status $?"
"$PFBED" stop "$INST" >/dev/null || fail "pfbed stop failed"
STARTED=""
grep -q 'ERROR: \|runtime error' "$W"/milter*.log &&
	fail "sanitizer report in $W/milter*.log"

step "PASS in $((SECONDS - T0))s"
exit 0
