#!/bin/bash
# End-to-end test of outbound/submit.c against real mail servers.
#
# usage: submit_e2e.sh SUBMIT_TOOL WORKDIR
#
#  1. a private Postfix (tests/postfix/pfbed) with STARTTLS (a throw-away
#     self-signed certificate, tlsmgr added to master.cf)
#  2. SMTP: a patch mail with lines starting with ".", "From ", a
#     998-byte line and 8-bit UTF-8 lands byte for byte in the archive;
#     the queue id from "250 ... queued as ID" is the one in Received
#  3. the same message with CRLF line ends lands identical
#  4. STARTTLS with the certificate as CA: lands, Received says ESMTPS;
#     without the CA the certificate is refused (tempfail)
#  5. credentials, but the server offers no AUTH: tempfail, nothing sent
#  6. the sendmail pipe, /usr/sbin/sendmail -C <instance>/etc: lands;
#     three messages through one submit object share one SMTP session
#  7. smtp_capture.py: AUTH PLAIN carries the credentials; on the wire
#     every line ends in CRLF and leading dots are doubled
#  8. smtp-sink faults: 4xx to RCPT and to the end of data -> tempfail;
#     5xx to MAIL and to the end of data -> rejected; connection dropped
#     after DATA -> tempfail, after the end of data -> unknown; a server
#     slower than the timeout -> tempfail (before data) or unknown (after
#     it, smtp_capture.py --delay-dot), in time, with no wait for QUIT;
#     connection refused -> tempfail
#  9. exactly the accepted messages are in the archive
#
# Exit 0 = pass, 1 = fail, 77 = skipped (not root, or Postfix, smtp-sink,
# openssl or python3 missing).
set -u
export LC_ALL=C
unset MAIL_CONFIG

TOOL=${1:?usage: submit_e2e.sh SUBMIT_TOOL WORKDIR}
WORK=${2:?usage: submit_e2e.sh SUBMIT_TOOL WORKDIR}
HERE=$(cd "$(dirname "$0")" && pwd -P)
PFBED=$HERE/../postfix/pfbed
. "$HERE/../tools/slowdown.sh"
PY=/usr/bin/python3
SINK=/usr/sbin/smtp-sink
FROM=bridge@example.org
LIST=patches@lists.example.test
T0=$SECONDS
STEP=0
PF=
KIDS=

step() {
	STEP=$((STEP + 1))
	printf 'submit_e2e: [%d] %s (t=%ds)\n' "$STEP" "$*" $((SECONDS - T0))
}

fail() {
	printf 'submit_e2e: FAIL: %s\n' "$*" >&2
	[ -n "$PF" ] && [ -f "$WORK/pf/postfix.log" ] &&
		{ echo '---- postfix.log (tail)'; tail -n 20 "$WORK/pf/postfix.log"; } >&2
	exit 1
}

skip() {
	printf 'submit_e2e: SKIP: %s\n' "$*"
	exit 77
}

cleanup() {
	local pid
	for pid in $KIDS; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	[ -n "$PF" ] && "$PFBED" stop "$WORK/pf" >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ "$(id -u)" -eq 0 ] || skip "needs root (the private Postfix)"
command -v postfix >/dev/null 2>&1 || skip "postfix is not installed"
[ -x "$SINK" ] || skip "smtp-sink is not installed"
command -v openssl >/dev/null 2>&1 || skip "openssl is not installed"
[ -x "$PY" ] || skip "$PY is missing"
[ -x "$TOOL" ] || fail "no submit tool at $TOOL"

rm -rf "$WORK"
mkdir -p "$WORK/tls" "$WORK/cap" "$WORK/cap2"

# submit ARGS...: run the tool; its assignments land in STATUS, RC, CODE,
# QUEUE_ID, REFUSED, ELAPSED_MS, REPLY; EXIT is its exit status.
submit() {
	local out
	STATUS= CODE= QUEUE_ID= REPLY= ELAPSED_MS=
	out=$("$TOOL" "$@" 2>>"$WORK/tool.log")
	EXIT=$?
	eval "$out"
}

# expect STATUS EXIT: the last submit ended so.
expect() {
	[ "$STATUS" = "$1" ] && [ "$EXIT" = "$2" ] ||
		fail "expected $1 (exit $2), got '$STATUS' (exit $EXIT," \
			"code $CODE, reply '$REPLY'); log: $(tail -n 2 "$WORK/tool.log")"
}

# make_msg FILE MESSAGE-ID: the patch mail whose lines are hard to carry.
make_msg() {
	"$PY" - "$1" "$2" <<'EOF'
import sys
path, msgid = sys.argv[1], sys.argv[2]
lines = [
    "From: Bridge <bridge@example.org>",
    "To: patches@lists.example.test",
    "Subject: [PATCH v2 1/1] submit: lines that are hard to carry",
    "Date: Thu, 03 Dec 2026 09:00:00 +0000",
    "Message-ID: " + msgid,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=UTF-8",
    "Content-Transfer-Encoding: 8bit",
    "",
    ".a line that starts with a dot",
    ".",
    "..",
    "...",
    "From the start of a line, as mbox would mangle it",
    ">From already quoted",
    "Gr\u00fc\u00dfe, na\u00efve caf\u00e9 \u2014 \u2713 \u65e5\u672c",
    "trailing blanks   \t",
    "",
    "---",
    " a/.dotfile | 2 +-",
    "",
    "diff --git a/.dotfile b/.dotfile",
    "--- a/.dotfile",
    "+++ b/.dotfile",
    "@@ -1,3 +1,3 @@",
    " .context",
    "-.old",
    "+.new",
    "+" + "x" * 997,
    ".",
    "-- ",
    "2.39.5",
]
open(path, "wb").write(("\n".join(lines) + "\n").encode())
EOF
}

# landed MESSAGE-ID FILE [QUEUE-ID] [WITH]: the archive holds exactly one
# mail with that Message-ID, and from its first original header on it is
# FILE byte for byte (Postfix only prepends Return-Path, Delivered-To,
# Received ...).  With QUEUE-ID, Received names it (and WITH, "ESMTPS").
landed() {
	"$PY" - "$ARCHIVE/new" "$@" <<'EOF' || fail "message $2 did not land intact"
import os, sys
d, msgid, want_file = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
qid = sys.argv[4].encode() if len(sys.argv) > 4 else b""
with_ = sys.argv[5].encode() if len(sys.argv) > 5 else b""
want = open(want_file, "rb").read()
hits = []
for name in sorted(os.listdir(d)):
    data = open(os.path.join(d, name), "rb").read()
    if b"\nMessage-ID: " + msgid + b"\n" in data:
        hits.append(data)
if len(hits) != 1:
    sys.exit("%d archived copies of %s" % (len(hits), msgid.decode()))
got = hits[0]
start = got.find(want.split(b"\n", 1)[0] + b"\n")
head, tail = got[:start], got[start:]
if tail != want:
    for i, (a, b) in enumerate(zip(tail.split(b"\n"), want.split(b"\n"))):
        if a != b:
            sys.exit("line %d differs:\n got  %r\n want %r" % (i + 1, a, b))
    sys.exit("length differs: got %d, want %d" % (len(tail), len(want)))
if qid and b" id " + qid + b"\n" not in head.replace(b";", b"\n"):
    sys.exit("Received does not name queue id %s:\n%s" % (qid, head))
if with_ and b" with " + with_ + b" id " not in head:
    sys.exit("Received does not say 'with %s':\n%s" % (with_, head))
EOF
}

# free_port: an unused loopback port.
free_port() {
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT: until something accepts connections there (5 s at most).
wait_port() {
	"$PY" - "$1" <<'EOF' || fail "nothing listens on port $1"
import socket, sys, time
end = time.time() + 5
while time.time() < end:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
EOF
}

# capture DIR [ARGS...]: start smtp_capture.py; its port in CPORT.
capture() {
	local dir=$1
	shift
	"$PY" "$HERE/smtp_capture.py" "$dir" "$@" 2>>"$WORK/capture.log" &
	KIDS="$KIDS $!"
	for _ in $(seq "$(scaled 50)"); do [ -f "$dir/port" ] && break; sleep 0.1; done
	[ -f "$dir/port" ] || fail "smtp_capture.py did not start"
	CPORT=$(cat "$dir/port")
}

# now_ms: a clock for wall times around the tool, which include its exit.
now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# sink ARGS...: start smtp-sink with fault flags on a fresh port (SPORT).
sink() {
	SPORT=$(free_port)
	"$SINK" -u nobody "$@" "127.0.0.1:$SPORT" 10 2>>"$WORK/sink.log" &
	SPID=$!
	KIDS="$KIDS $SPID"
	wait_port "$SPORT"
}

sink_stop() {
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
}

# sink_case "FLAGS" STATUS EXIT [TIMEOUT-MS]: one fault, one verdict.
sink_case() {
	local flags=$1
	# shellcheck disable=SC2086
	sink $flags
	submit --smtp "smtp://127.0.0.1:$SPORT" --timeout "${4:-5000}" \
		--from "$FROM" --to "$LIST" --to "cc@example.org" "$WORK/lf.eml"
	sink_stop
	expect "$2" "$3"
}

make_msg "$WORK/lf.eml" "<e2e-smtp@example.org>"
make_msg "$WORK/crlf-src.eml" "<e2e-crlf@example.org>"
sed 's/$/\r/' "$WORK/crlf-src.eml" >"$WORK/crlf.eml"
make_msg "$WORK/tls.eml" "<e2e-tls@example.org>"
make_msg "$WORK/sendmail.eml" "<e2e-sendmail@example.org>"
make_msg "$WORK/noauth.eml" "<e2e-noauth@example.org>"
make_msg "$WORK/series.eml" "<e2e-series@example.org>"

step "self-signed certificate for 127.0.0.1"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
	-keyout "$WORK/tls/key.pem" -out "$WORK/tls/cert.pem" \
	>"$WORK/openssl.log" 2>&1 || fail "openssl: $(cat "$WORK/openssl.log")"

step "start the private Postfix with STARTTLS"
out=$("$PFBED" start "$WORK/pf" \
	--set "smtpd_tls_cert_file = $WORK/tls/cert.pem" \
	--set "smtpd_tls_key_file = $WORK/tls/key.pem" \
	--set "smtpd_tls_security_level = may" 2>"$WORK/pfbed.log") ||
	fail "pfbed start: $(cat "$WORK/pfbed.log")"
PF=1
eval "$out"
eval "$("$PFBED" env "$WORK/pf")"
# pfbed's master.cf has no tlsmgr, without which smtpd disables TLS.
postconf -c "$CONFIG" -Me 'tlsmgr/unix=tlsmgr unix - - n 1000? 1 tlsmgr' ||
	fail "postconf -M tlsmgr"
# A config file younger than a second costs Postfix 2-3 s (pfbed README).
touch -d "@$(($(date +%s) - 10))" "$CONFIG/main.cf" "$CONFIG/master.cf"
"$PFBED" reload "$WORK/pf" >>"$WORK/pfbed.log" 2>&1 || fail "pfbed reload"

step "SMTP to 127.0.0.1:$PORT: a patch mail with dots, From, 998 bytes, UTF-8"
submit --smtp "smtp://127.0.0.1:$PORT" --from "$FROM" --to "$LIST" \
	"$WORK/lf.eml"
expect accepted 0
[ "$CODE" = 250 ] && [ -n "$QUEUE_ID" ] ||
	fail "no queue id from '$REPLY'"
QID_SMTP=$QUEUE_ID

step "SMTP: the same message with CRLF line ends"
submit --smtp "smtp://127.0.0.1:$PORT" --from "$FROM" --to "$LIST" \
	"$WORK/crlf.eml"
expect accepted 0
QID_CRLF=$QUEUE_ID

step "STARTTLS with the certificate as CA; then without it"
submit --smtp "smtp://127.0.0.1:$PORT" --starttls \
	--ca-file "$WORK/tls/cert.pem" --from "$FROM" --to "$LIST" \
	"$WORK/tls.eml"
expect accepted 0
QID_TLS=$QUEUE_ID
submit --smtp "smtp://127.0.0.1:$PORT" --starttls --from "$FROM" \
	--to "$LIST" "$WORK/tls.eml"
expect tempfail 4

step "credentials, but Postfix offers no AUTH: nothing is sent"
printf 's3cret\n' >"$WORK/password"
submit --smtp "smtp://localhost:$PORT" --starttls \
	--ca-file "$WORK/tls/cert.pem" --user bot \
	--password-file "$WORK/password" --from "$FROM" --to "$LIST" \
	"$WORK/noauth.eml"
expect tempfail 4
grep -q "offered no AUTH" "$WORK/tool.log" || fail "no word on the missing AUTH"

step "sendmail pipe: /usr/sbin/sendmail -C $CONFIG"
submit --sendmail "/usr/sbin/sendmail -C $CONFIG" --from "$FROM" \
	--to "$LIST" "$WORK/sendmail.eml"
expect accepted 0

step "three messages, one after the other, through one SMTP session"
submit --smtp "smtp://127.0.0.1:$PORT" --count 3 --from "$FROM" \
	--to "$LIST" "$WORK/series.eml"
expect accepted 0

step "wait for 7 messages in the archive and compare them"
"$PFBED" wait-mail "$WORK/pf" 7 20 >/dev/null || fail "not all mail arrived"
grep -q "disconnect from .* mail=3 rcpt=3 data=3 " "$LOG" ||
	fail "the three messages did not share one session"
n=$(grep -l "^Message-ID: <e2e-series@example.org>" "$ARCHIVE"/new/* | wc -l)
[ "$n" = 3 ] || fail "$n copies of the series message"
landed "<e2e-smtp@example.org>" "$WORK/lf.eml" "$QID_SMTP" ESMTP
landed "<e2e-crlf@example.org>" "$WORK/crlf-src.eml" "$QID_CRLF" ESMTP
landed "<e2e-tls@example.org>" "$WORK/tls.eml" "$QID_TLS" ESMTPS
landed "<e2e-sendmail@example.org>" "$WORK/sendmail.eml"

step "AUTH PLAIN and the bytes on the wire (smtp_capture.py)"
capture "$WORK/cap"
submit --smtp "smtp://127.0.0.1:$CPORT" --user bot \
	--password-file "$WORK/password" --from "$FROM" --to "$LIST" \
	"$WORK/lf.eml"
expect accepted 0
[ "$QUEUE_ID" = CAPTURE1 ] || fail "queue id '$QUEUE_ID'"
printf 'bot\ns3cret\n' | cmp -s - "$WORK/cap/auth" ||
	fail "AUTH carried '$(cat "$WORK/cap/auth" 2>/dev/null)'"
"$PY" - "$WORK/lf.eml" "$WORK/cap/wire" <<'EOF' || fail "wire format"
import sys
src, wire = (open(p, "rb").read() for p in sys.argv[1:3])
body = wire[: -len(b".\r\n")]
# Every line end is CRLF, no CR or LF alone.
if body.replace(b"\r\n", b"").count(b"\n") or body.replace(b"\r\n", b"").count(b"\r"):
    sys.exit("bare CR or LF on the wire")
lines = body.split(b"\r\n")[:-1]
want = [(b"." + l if l.startswith(b".") else l) for l in src.split(b"\n")[:-1]]
if lines != want:
    sys.exit("dot-stuffing: got %r" % [l for l in lines if l.startswith(b".")])
EOF

step "credentials over plain smtp:// to another host are refused"
"$TOOL" --smtp "smtp://mail.example.org:25" --user bot \
	--password-file "$WORK/password" --from "$FROM" --to "$LIST" \
	"$WORK/lf.eml" >/dev/null 2>>"$WORK/tool.log"
[ $? = 2 ] && grep -q "clear text" "$WORK/tool.log" ||
	fail "clear-text credentials were not refused"

step "smtp-sink: 4xx to RCPT and to the end of data -> tempfail"
sink_case "-r rcpt" tempfail 4
[ "$CODE" = 450 ] || fail "code $CODE"
sink_case "-r ." tempfail 4

step "smtp-sink: 5xx to MAIL and to the end of data -> rejected"
sink_case "-f mail" rejected 5
case $REPLY in 5*) ;; *) fail "reply '$REPLY'" ;; esac
sink_case "-f ." rejected 5

step "smtp-sink: dropped after DATA -> tempfail; after the end -> unknown"
sink_case "-q data" tempfail 4
sink_case "-q ." unknown 6
sink_case "-Q ." tempfail 4

# The slow servers below wait 20 s: a run well under that (not a timing
# to meet: a loaded machine and a sanitizer build take their time) shows
# the 1.5 s timeout cut the wait short.
step "smtp-sink: slower than the 1.5 s timeout before the data -> tempfail"
t=$(now_ms)
sink_case "-w 20" tempfail 4 1500
t=$(($(now_ms) - t))
[ "$t" -lt 10000 ] || fail "took $t ms: the timeout did not cut it short"

step "a server slower than the timeout after the end of data -> unknown"
capture "$WORK/cap2" --no-auth --delay-dot 20
t=$(now_ms)
submit --smtp "smtp://127.0.0.1:$CPORT" --timeout 1500 --from "$FROM" \
	--to "$LIST" "$WORK/lf.eml"
t=$(($(now_ms) - t))
expect unknown 6
# Not even the QUIT when the tool exits waits for the server.
[ "$t" -lt 10000 ] || fail "took $t ms: the timeout did not cut it short"

step "connection refused -> tempfail"
submit --smtp "smtp://127.0.0.1:$SPORT" --timeout 5000 --from "$FROM" \
	--to "$LIST" "$WORK/lf.eml"
expect tempfail 4
# Refused at once: not a wait for the 5 s timeout.
[ "$ELAPSED_MS" -lt 5000 ] || fail "took $ELAPSED_MS ms: waited for the timeout"

step "the archive holds exactly the 7 accepted messages"
n=$(find "$ARCHIVE/new" "$ARCHIVE/cur" -type f | wc -l)
[ "$n" = 7 ] || fail "$n messages in the archive"

step "stop the private Postfix"
"$PFBED" stop "$WORK/pf" >/dev/null 2>&1 || fail "pfbed stop"
PF=
step "PASS in $((SECONDS - T0))s"
exit 0
