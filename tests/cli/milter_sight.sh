#!/bin/bash
# milter_sight.sh PATCHBRIDGE
#
# A milter that does not see the list's mail is not invisible: the
# bridge's last mail reached the MTA ten minutes ago (a row of the state
# database, as the daemon records a sent mail) and the milter has seen
# none since (no statistics file: it is not running), so
#
#   - `patchbridge status` says "milter: the milter is not seeing the
#     list's mail: ...";
#   - /readyz has the line "milter: not ready: the milter is not seeing
#     the list's mail: ..." and answers 503;
#   - /metrics has patchbridge_milter_sees_list_mail 0;
#
# and once the milter's file shows a mail seen since, all three say it
# sees the list's mail.  The rule is core/health.h's; the alert rule's
# own test is contrib/prometheus/alerts.test.yml.  Runs as any user.
set -u
export LC_ALL=C
unset PATCHBRIDGE_CONFIG
[ $# -eq 1 ] || {
	echo "usage: $0 PATCHBRIDGE" >&2
	exit 2
}
PB=$1
. "$(dirname "$0")/daemon_conf.sh"
command -v sqlite3 >/dev/null 2>&1 || {
	echo "SKIP: sqlite3 is not installed" >&2
	exit 77
}
T=$(mktemp -d "${PB_TEST_TMP:-/tmp}/cli_milter_sight.XXXXXX") || exit 1
DPID=
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID"
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	[ -f "$T/log" ] && sed 's/^/  | /' "$T/log" >&2
	exit 1
}
mkdir -m 0700 "$T/etc" "$T/state" "$T/run"
mkdir -m 2770 "$T/spool"
printf 'token\n' >"$T/etc/token"
chmod 0600 "$T/etc/token"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
daemon_conf "$T/etc/pb.conf" "$T" "$PORT"
chmod 0600 "$T/etc/pb.conf"
"$PB" -c "$T/etc/pb.conf" run --once --foreground 2>"$T/log" ||
	fail "run --once failed"

# A mail the bridge sent ten minutes ago, as the daemon records it.
SENT=$(($(date +%s) - 600))
sqlite3 "$T/state/state.db" "INSERT INTO thread_map (message_id, project,
	iid, patch, total, kind, state, created, sent) VALUES
	('<c1@bridge.example.org>', 'g/p', 1, 0, 0, 'forge-comment', 'sent',
	$SENT, $SENT)" || fail "sqlite3 failed"
AT=$(date -u -d "@$SENT" +%Y-%m-%dT%H:%M:%SZ)
# The message, for M minutes ago (10, or 11 on a slow machine).
blind() {
	echo "the milter is not seeing the list's mail: the bridge's last mail reached the MTA at $AT, $1 min ago, and the milter has seen none since (its last: never); is it running (systemctl status patchbridge-milter), and does Postfix call it for every mail (postconf smtpd_milters non_smtpd_milters; patchbridge check-config)?"
}
# has FILE PREFIX: FILE has PREFIX followed by the message.
has_blind() {
	grep -qxF "$2$(blind 10)" "$1" || grep -qxF "$2$(blind 11)" "$1" ||
		fail "no '$2$(blind 10)' in: $(cat "$1")"
}

echo "[status] the milter has seen nothing since the bridge's mail"
"$PB" -c "$T/etc/pb.conf" status >"$T/out" 2>"$T/err" ||
	fail "status failed: $(cat "$T/err")"
has_blind "$T/out" "milter: "

echo "[readyz, metrics] the same, from the daemon"
"$PB" -c "$T/etc/pb.conf" run --foreground 2>"$T/log" &
DPID=$!
# get PATH: the status server's answer into $T/body, its code printed.
get() {
	python3 - "$PORT" "$1" "$T/body" <<'PY'
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen("http://127.0.0.1:%s%s" % (sys.argv[1], sys.argv[2]), timeout=30)
    code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
except OSError:
    code, body = 0, b""
open(sys.argv[3], "wb").write(body)
print(code)
PY
}
n=0
until [ "$(get /healthz)" = 200 ]; do
	n=$((n + 1))
	[ $n -le 300 ] || fail "the status server did not answer"
	kill -0 "$DPID" 2>/dev/null || fail "the daemon exited"
	sleep 0.1
done
[ "$(get /readyz)" = 503 ] || fail "/readyz: not 503: $(cat "$T/body")"
has_blind "$T/body" "milter: not ready: "
[ "$(get /metrics)" = 200 ] || fail "/metrics failed"
grep -qx 'patchbridge_milter_sees_list_mail 0' "$T/body" ||
	fail "no patchbridge_milter_sees_list_mail 0: $(grep milter "$T/body")"
grep -qx "patchbridge_mails_last_sent_timestamp_seconds $SENT" "$T/body" ||
	fail "no last sent $SENT: $(grep last_sent "$T/body")"

echo "[seen] the milter's file shows a mail seen since"
SEEN=$(date +%s)
printf 'patchbridge_milter_last_seen_timestamp_seconds %s\n' "$SEEN" \
	>"$T/spool/milter.prom.tmp"
mv "$T/spool/milter.prom.tmp" "$T/spool/milter.prom"
SEENAT=$(date -u -d "@$SEEN" +%Y-%m-%dT%H:%M:%SZ)
OK="the milter sees the list's mail (it last saw one $SEENAT; the bridge's last mail reached the MTA $AT)"
get /readyz >/dev/null
grep -qxF "milter: ok: $OK" "$T/body" || fail "/readyz: $(cat "$T/body")"
get /metrics >/dev/null
grep -qx 'patchbridge_milter_sees_list_mail 1' "$T/body" ||
	fail "no patchbridge_milter_sees_list_mail 1"
"$PB" -c "$T/etc/pb.conf" status >"$T/out" 2>"$T/err" ||
	fail "status failed: $(cat "$T/err")"
grep -qxF "milter: $OK" "$T/out" || fail "status: $(cat "$T/out")"
kill "$DPID"
wait "$DPID"
DPID=

echo "[no metrics] without the milter's counters, status does not guess"
daemon_conf "$T/etc/pb.conf" "$T"
"$PB" -c "$T/etc/pb.conf" status >"$T/out" 2>"$T/err" ||
	fail "status failed: $(cat "$T/err")"
grep -qxF "milter: not checked: with [metrics] enabled = no the milter writes no counters to tell by" "$T/out" ||
	fail "status: $(cat "$T/out")"
echo PASS
