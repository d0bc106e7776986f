#!/bin/bash
# Smoke test for the private Postfix test bed (pfbed) and the test milter.
#
# usage: smoke.sh TEST_MILTER_BINARY WORKDIR
#
# 1. start test_milter on a unix socket (pid recorded)
# 2. pfbed start WORKDIR/instance wired to it (default action tempfail)
# 3. SMTP submission -> archive Maildir; header X-Test-Milter carries the
#    queue id from the SMTP reply; body unchanged
# 4. sendmail -C (non_smtpd_milters path) -> same checks
# 5. stop the milter by pid; an SMTP submission now gets a 4xx
# 6. pfbed stop; no process of the instance or of the milter remains
#
# Exit 0 = pass, 1 = fail, 77 = skipped (not root / postfix missing).

set -u
export LC_ALL=C
unset MAIL_CONFIG

HERE=$(cd "$(dirname "$0")" && pwd -P)
PFBED=$HERE/pfbed
T0=$SECONDS
STEP=0

say() {
	printf 'smoke: %s\n' "$*"
}

step() {
	STEP=$((STEP + 1))
	printf 'smoke: [%d] %s (t=%ds)\n' "$STEP" "$*" $((SECONDS - T0))
}

fail() {
	printf 'smoke: FAIL: %s\n' "$*" >&2
	exit 1
}

skip() {
	printf 'smoke: SKIP: %s\n' "$*"
	exit 77
}

# Alive = exists and is not a zombie (our own unreaped child is a zombie
# until we wait for it, and kill -0 would still succeed on it).
pid_alive() {
	local st
	[ -n "$1" ] || return 1
	{ read -r st <"/proc/$1/stat"; } 2>/dev/null || return 1
	st=${st##*) }
	case ${st%% *} in
	Z | X | "") return 1 ;;
	esac
	return 0
}

# Wait up to $2 seconds for pid $1 to exit; true if it did.
wait_pid_gone() {
	local pid=$1 limit=$2 t0=$SECONDS
	while pid_alive "$pid"; do
		[ $((SECONDS - t0)) -ge "$limit" ] && return 1
		sleep 0.05
	done
	return 0
}

[ $# -eq 2 ] || {
	echo "usage: $0 TEST_MILTER_BINARY WORKDIR" >&2
	exit 2
}
MILTER_BIN=$1
WORK=$2

[ "$(id -u)" -eq 0 ] || skip "must run as root (private Postfix needs root to start)"
command -v postfix >/dev/null 2>&1 || skip "postfix is not installed"
command -v sendmail >/dev/null 2>&1 || skip "sendmail (postfix) is not installed"
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is not installed"
[ -x "$MILTER_BIN" ] || fail "test milter binary '$MILTER_BIN' not found"
[ -x "$PFBED" ] || fail "$PFBED not found or not executable"

mkdir -p "$WORK" || fail "cannot create $WORK"
WORK=$(cd "$WORK" && pwd -P)
INST=$WORK/instance
MLOG=$WORK/milter.log
# The milter socket must be reachable by user postfix and short enough for
# sun_path, wherever the build tree is; so it lives under /tmp.
SOCKDIR=$(mktemp -d /tmp/pfsmoke.XXXXXX) || fail "mktemp failed"
chmod 755 "$SOCKDIR"
SOCK=$SOCKDIR/milter.sock
MPIDFILE=$SOCKDIR/milter.pid
MPID=""
STARTED=""
MASTER=""

# shellcheck disable=SC2317  # invoked through trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	if [ -n "$STARTED" ]; then
		"$PFBED" stop "$INST" >/dev/null 2>&1 ||
			say "cleanup: pfbed stop failed"
	fi
	if pid_alive "$MPID"; then
		kill -TERM "$MPID" 2>/dev/null
		wait_pid_gone "$MPID" 15 || kill -KILL "$MPID" 2>/dev/null
	fi
	[ -n "$MPID" ] && wait "$MPID" 2>/dev/null
	rm -rf "$SOCKDIR"
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		say "debug: postfix log: $INST/postfix.log, milter log: $MLOG"
		if [ -f "$MLOG" ]; then
			say "---- last lines of $MLOG ----"
			tail -n 10 "$MLOG"
		fi
		if [ -f "$INST/postfix.log" ]; then
			say "---- last lines of $INST/postfix.log ----"
			tail -n 20 "$INST/postfix.log"
		fi
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------------------
step "start test milter on unix:$SOCK"
rm -f "$MLOG"
"$MILTER_BIN" -p "unix:$SOCK" -P "$MPIDFILE" -v 2>"$MLOG" &
MPID=$!
t=$SECONDS
while [ ! -s "$MPIDFILE" ]; do
	pid_alive "$MPID" || fail "test milter exited at start-up: $(cat "$MLOG")"
	[ $((SECONDS - t)) -ge 10 ] && fail "test milter wrote no pid file in 10s"
	sleep 0.05
done
[ "$(cat "$MPIDFILE")" = "$MPID" ] ||
	fail "milter pid file says $(cat "$MPIDFILE"), expected $MPID"
[ -S "$SOCK" ] || fail "milter socket $SOCK missing"
mode=$(stat -c %a "$SOCK")
case $mode in
*6 | *7) ;;
*) fail "milter socket mode $mode: user postfix could not connect" ;;
esac
say "milter pid $MPID, socket mode $mode"

# ---------------------------------------------------------------------------
step "start private postfix in $INST"
out=$("$PFBED" start "$INST" --milter "unix:$SOCK" --default-action tempfail) ||
	fail "pfbed start failed"
STARTED=1
eval "$out"
MASTER=$PID
[ -n "$MASTER" ] && [ -n "$PORT" ] || fail "pfbed start printed '$out'"
eval "$("$PFBED" env "$INST")" || fail "pfbed env failed"
[ "$RUNNING" = yes ] && [ "$PID" = "$MASTER" ] || fail "pfbed env: RUNNING=$RUNNING PID=$PID"
say "master pid $MASTER, smtp 127.0.0.1:$PORT, archive $ARCHIVE"

# ---------------------------------------------------------------------------
TOKEN=smoke-$$-$(date +%s%N)
MSG1=$WORK/msg1.eml
BODY1=$WORK/body1.txt
cat >"$BODY1" <<EOF
This is the pfbed smoke test body.
token: $TOKEN
.a line that starts with a dot (must survive dot-stuffing)
Signed-off-by: Smoke Tester <smoke@example.org>
EOF
{
	printf 'From: Smoke Tester <smoke@example.org>\n'
	printf 'To: patches@%s\n' "$LIST_DOMAIN"
	printf 'Subject: [PATCH] smoke test over SMTP\n'
	printf 'Message-ID: <%s.smtp@example.org>\n' "$TOKEN"
	printf 'Date: %s\n' "$(date -R)"
	printf '\n'
	cat "$BODY1"
} >"$MSG1"

# Find the archived copy by Message-ID; check milter header and body.
check_archived() {
	local msgid=$1 qid=$2 body=$3 f hdr got
	f=$(grep -l -F -x "Message-ID: <$msgid>" "$ARCHIVE"/new/* "$ARCHIVE"/cur/* 2>/dev/null | head -n 1)
	[ -n "$f" ] || fail "no archived message with Message-ID <$msgid> in $ARCHIVE"
	hdr=$(sed '/^$/q' "$f")
	got=$(printf '%s\n' "$hdr" | grep -c '^X-Test-Milter:')
	[ "$got" -eq 1 ] || fail "$f: expected 1 X-Test-Milter header, found $got"
	printf '%s\n' "$hdr" | grep -q -x -F "X-Test-Milter: seen qid=$qid" ||
		fail "$f: X-Test-Milter header is '$(printf '%s\n' "$hdr" | grep '^X-Test-Milter:')', expected qid=$qid"
	sed '1,/^$/d' "$f" | cmp -s - "$body" ||
		fail "$f: body differs from the original: $(sed '1,/^$/d' "$f" | diff "$body" - | head -n 5)"
	say "archived $f carries X-Test-Milter: seen qid=$qid and the original body"
}

step "send message over SMTP to 127.0.0.1:$PORT"
out=$("$PFBED" send "$INST" "$MSG1") || fail "SMTP submission failed: $out"
eval "$out"
[ "$SMTP_CODE" = 250 ] && [ -n "$QUEUE_ID" ] || fail "unexpected SMTP result: $out"
QID1=$QUEUE_ID
say "accepted: $SMTP_CODE $SMTP_REPLY"

step "wait for it in the archive Maildir"
"$PFBED" wait-mail "$INST" 1 30 >/dev/null || fail "message $QID1 not delivered within 30s"
check_archived "$TOKEN.smtp@example.org" "$QID1" "$BODY1"
grep -q "postfix/smtpd\[[0-9]*\]: $QID1: client=" "$LOG" ||
	fail "queue id $QID1 not logged by smtpd in $LOG"
grep -q ": qid=$QID1 " "$MLOG" || fail "milter did not log qid=$QID1"

# ---------------------------------------------------------------------------
step "submit a message with sendmail -C $CONFIG (non_smtpd_milters)"
MSG2=$WORK/msg2.eml
sed -e "s/^Message-ID: .*/Message-ID: <$TOKEN.sendmail@example.org>/" \
	-e 's/^Subject: .*/Subject: [PATCH] smoke test via sendmail/' "$MSG1" >"$MSG2"
sendmail -C "$CONFIG" -f smoke@example.org -- "patches@$LIST_DOMAIN" <"$MSG2" ||
	fail "sendmail -C $CONFIG failed"
"$PFBED" wait-mail "$INST" 2 30 >/dev/null || fail "sendmail message not delivered within 30s"
f=$(grep -l -F -x "Message-ID: <$TOKEN.sendmail@example.org>" "$ARCHIVE"/new/* "$ARCHIVE"/cur/* 2>/dev/null | head -n 1)
[ -n "$f" ] || fail "sendmail message not found in archive"
QID2=$(sed -n 's/^X-Test-Milter: seen qid=\([0-9A-Za-z]*\)$/\1/p' "$f" | head -n 1)
[ -n "$QID2" ] || fail "$f: no X-Test-Milter header (non_smtpd_milters not applied)"
grep -q "postfix/pickup\[[0-9]*\]: $QID2: uid=0 " "$LOG" ||
	fail "qid $QID2 from the milter header is not the queue id pickup logged"
check_archived "$TOKEN.sendmail@example.org" "$QID2" "$BODY1"

# ---------------------------------------------------------------------------
step "stop test milter (pid $MPID) and wait for it to exit"
t=$(date +%s%N)
kill -TERM "$MPID" || fail "cannot signal milter $MPID"
wait_pid_gone "$MPID" 20 || fail "milter $MPID still running 20s after SIGTERM"
wait "$MPID"
mrc=$?
[ $mrc -eq 0 ] || fail "milter exited with status $mrc"
say "milter exited (status 0) $((($(date +%s%N) - t) / 1000000)) ms after SIGTERM"

step "SMTP with milter down and milter_default_action=tempfail must get 4xx"
MSG3=$WORK/msg3.eml
sed -e "s/^Message-ID: .*/Message-ID: <$TOKEN.tempfail@example.org>/" "$MSG1" >"$MSG3"
out=$("$PFBED" send "$INST" "$MSG3")
rc=$?
eval "$out"
case $SMTP_CODE in
4??) ;;
*) fail "expected a 4xx with the milter down, got rc=$rc: $out" ;;
esac
[ $rc -eq 4 ] || fail "pfbed send exit status $rc for a 4xx (expected 4)"
say "refused at $SMTP_STAGE: $SMTP_CODE $SMTP_REPLY"

# ---------------------------------------------------------------------------
step "stop private postfix (master pid $MASTER)"
"$PFBED" stop "$INST" >/dev/null || fail "pfbed stop failed"
STARTED=""
pid_alive "$MASTER" && fail "master $MASTER still running after pfbed stop"
left=$("$PFBED" pids "$INST")
[ -z "$left" ] || fail "instance processes still running: $left"
pid_alive "$MPID" && fail "milter $MPID still running"
[ -e "$SOCK" ] && fail "milter socket $SOCK left behind"
"$PFBED" stop "$INST" >/dev/null || fail "second pfbed stop (idempotence) failed"
# The instance stays in WORKDIR for inspection, unless pfbed had to put it
# under /tmp (WORKDIR not reachable by user postfix, or path too long).
if [ "$RUNDIR" != "$INST" ]; then
	"$PFBED" clean "$INST" || fail "pfbed clean failed"
fi

step "PASS in $((SECONDS - T0))s"
exit 0
