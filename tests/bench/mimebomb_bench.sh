#!/bin/bash
# mimebomb_bench.sh --patchbridge BIN --milter BIN [--size SIZE] [--work DIR]
#
# Peak memory and time of `patchbridge parse` and of patchbridge-milter on
# hostile MIME structure at the configured message size limit ([milter]
# max_message_size, default 10M; --size sets it, e.g. 64k, 10M, 100M).
# Each mail fills the limit (less 256 bytes for the Date: field Postfix
# adds) and answers a bridged patch through the
# bridge's Message-ID scheme, so the milter buffers, classifies, parses
# and spools it:
#
#   parts    "--b\n\n" repeated: empty MIME parts (the part bomb)
#   fields   parts with a hundred header fields each
#   nested   "Content-Type: message/rfc822\n\n" repeated
#   lines    a text/plain reply of one-character lines
#   text     a text/plain reply of 60-byte lines (a large honest reply)
#
# For each: `patchbridge -c CONF parse` and `patchbridge-milter --test`
# (the callbacks' code from a file) under GNU time, and - as root with
# Postfix - the milter behind a private Postfix (tests/postfix/pfbed), a
# fresh process for each mail: its VmHWM after the mail went through,
# against a small reply's (the seconds there are Postfix's too, from the
# connection to its answer).  The
# table gives seconds and peak RSS in KiB, and RSS divided by the mail's
# size.  Nothing is asserted: it fails only when a command
# fails.  Registered with CTest (label bench, -DPB_BENCH=ON) as
# bench_mimebomb; README.md here has the figures and the bound.
set -u
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd -P)
PFBED=$HERE/../postfix/pfbed
pb=""
milter=""
size=10M
work=""
while [ $# -gt 0 ]; do
	case $1 in
	--patchbridge) pb=$(realpath "$2"); shift 2 ;;
	--milter) milter=$(realpath "$2"); shift 2 ;;
	--size) size=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
[ -n "$pb" ] && [ -n "$milter" ] || {
	echo "usage: $0 --patchbridge BIN --milter BIN [--size SIZE]" >&2
	exit 2
}
[ -x /usr/bin/time ] || { echo "mimebomb_bench: SKIP: no GNU time" >&2; exit 77; }
case $size in
*k | *K) bytes=$((${size%?} * 1024)) ;;
*M) bytes=$((${size%?} * 1024 * 1024)) ;;
*G) bytes=$((${size%?} * 1024 * 1024 * 1024)) ;;
*) bytes=$size ;;
esac
[ -n "$work" ] || work=$(mktemp -d "${TMPDIR:-/tmp}/pb-mimebomb.XXXXXX")
rm -rf "$work"
mkdir -p "$work/spool" "$work/state" "$work/mail"
work=$(cd "$work" && pwd -P)
MPID=""
PFDIR=""
cleanup() {
	if [ -n "$MPID" ] && kill -0 "$MPID" 2>/dev/null; then
		kill -TERM "$MPID"
		for _ in $(seq 1 150); do
			kill -0 "$MPID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$MPID" 2>/dev/null
	fi
	[ -n "$PFDIR" ] && "$PFBED" stop "$PFDIR" >/dev/null 2>&1
}
trap cleanup EXIT

conf=$work/pb.conf
cat >"$conf" <<CONF
[bridge]
address = patchbridge@bridge.example.org
domain = bridge.example.org
[forge]
url = https://gitlab.example.org
token_file = $work/token
[milter]
socket = unix:$work/run/milter.sock
max_message_size = $size
trusted_authserv_id = lists.example.test
[state]
path = $work/state/state.db
[spool]
dir = $work/spool
[log]
level = notice
CONF

# The mails, each $bytes long (the limit), made by Python.
/usr/bin/python3 - "$work/mail" "$bytes" <<'PY' || exit 1
import os, sys
out, limit = sys.argv[1], int(sys.argv[2])
irt = "<pb.v3.2-7.group.project.12.0123456789ab@bridge.example.org>"

def head(n, ctype):
    return ("From: Bench <bench@example.org>\nTo: patches@lists.example.test\n"
            "Subject: Re: [PATCH v3 2/7] list: grow\n"
            "Message-ID: <%s@example.org>\nIn-Reply-To: %s\n"
            "MIME-Version: 1.0\nContent-Type: %s\n\n" % (n, irt, ctype))

def fill(name, top, unit, tail=""):
    # 256 bytes below the limit: Postfix adds a Date: field
    room = limit - len(top) - len(tail) - 256
    body = unit * (room // len(unit))
    with open(os.path.join(out, name + ".eml"), "w") as f:
        f.write(top + body + tail)

fill("parts", head("parts", "multipart/mixed; boundary=b"), "--b\n\n",
     "--b--\n")
fields = "--b\n" + "".join("X-F%d: v\n" % i for i in range(100)) + "\nx\n"
fill("fields", head("fields", "multipart/mixed; boundary=b"), fields,
     "--b--\n")
fill("nested", head("nested", "message/rfc822"),
     "Content-Type: message/rfc822\n\n")
fill("lines", head("lines", "text/plain"), "x\n")
fill("text", head("text", "text/plain"),
     "a line of an honest, very long reply, some sixty bytes long.\n",
     "\nAcked-by: Bench <bench@example.org>\n")
with open(os.path.join(out, "small.eml"), "w") as f:
    f.write(head("small", "text/plain") + "Looks fine.\n")
PY

# timed CMD...: "SECONDS RSS_KIB" of one run.
timed() {
	/usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>"$work/err" ||
		{ echo "FAIL: $*: $(tail -3 "$work/err")" >&2; exit 1; }
	cat "$work/time"
}

ratio() { # KIB BYTES
	echo "scale=1; $1 * 1024 / $2" | bc
}

declare -A prow mrow
for k in parts fields nested lines text; do
	f=$work/mail/$k.eml
	prow[$k]=$(timed "$pb" -c "$conf" parse "$f")
	rm -f "$work"/spool/new/*
	mrow[$k]=$(timed "$milter" -c "$conf" --test "$f")
done

# The milter behind Postfix, as root with Postfix: its VmHWM, in a fresh
# milter for each mail (memory a process got back stays in its RSS).
declare -A frow
pfnote=""
start_milter() {
	rm -f "$work/run/milter.pid"
	"$milter" -f -c "$conf" -P "$work/run/milter.pid" 2>>"$work/milter.log" &
	MPID=$!
	for _ in $(seq 1 100); do
		[ -f "$work/run/milter.pid" ] && return 0
		sleep 0.1
	done
	echo "FAIL: the milter did not start: $(tail -3 "$work/milter.log")" >&2
	exit 1
}
stop_milter() {
	kill -TERM "$MPID"
	for _ in $(seq 1 150); do
		kill -0 "$MPID" 2>/dev/null || break
		sleep 0.1
	done
	wait "$MPID" 2>/dev/null
	MPID=""
}
if [ "$(id -u)" -eq 0 ] && command -v postfix >/dev/null 2>&1; then
	install -d -g postfix -m 2750 "$work/run"
	PFDIR=$work/pf
	port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	PFBED_MILTER_CONTENT_TIMEOUT=300s "$PFBED" start "$PFDIR" --port "$port" \
		--milter "unix:$work/run/milter.sock" \
		--set "message_size_limit = $((bytes * 2))" \
		--set "default_transport = discard:" >/dev/null 2>"$work/pfbed.err" ||
		{ echo "FAIL: pfbed start: $(tail -3 "$work/pfbed.err")" >&2; exit 1; }
	n=0
	for k in small parts fields nested lines text; do
		start_milter
		t0=$(date +%s.%N)
		out=$("$PFBED" send "$PFDIR" "$work/mail/$k.eml" --timeout 600)
		t1=$(date +%s.%N)
		case $out in *SMTP_CODE=250*) ;; *) echo "FAIL: $k: $out" >&2; exit 1 ;; esac
		n=$((n + 1))
		"$PFBED" wait-mail "$PFDIR" "$n" 120 >/dev/null ||
			{ echo "FAIL: $k not delivered" >&2; exit 1; }
		frow[$k]="$(printf '%.2f' "$(echo "$t1 - $t0" | bc)") $(awk '/^VmHWM:/ { print $2 }' "/proc/$MPID/status")"
		stop_milter
	done
else
	pfnote="(not root or no Postfix: the Postfix column is empty)"
fi

echo
echo "MIME structure at the size limit: [milter] max_message_size = $size ($bytes bytes)"
echo "CPUs: $(nproc); peak RSS in KiB, and as a multiple of the mail's size"
printf '%-7s | %-26s | %-26s | %-26s\n' mail "patchbridge parse" \
	"patchbridge-milter --test" "milter behind Postfix"
printf '%-7s | %-26s | %-26s | %-26s\n' "" "s / KiB / x size" \
	"s / KiB / x size" "s / VmHWM KiB / x size"
for k in parts fields nested lines text; do
	read -r ps pk <<<"${prow[$k]}"
	read -r ms mk <<<"${mrow[$k]}"
	fcol=""
	if [ -n "${frow[$k]:-}" ]; then
		read -r fs fk <<<"${frow[$k]}"
		fcol="$fs / $fk / $(ratio "$fk" "$bytes")"
	fi
	printf '%-7s | %-26s | %-26s | %-26s\n' "$k" \
		"$ps / $pk / $(ratio "$pk" "$bytes")" \
		"$ms / $mk / $(ratio "$mk" "$bytes")" "$fcol"
done
[ -n "${frow[small]:-}" ] && echo "milter behind Postfix, a small reply: VmHWM ${frow[small]#* } KiB"
[ -n "$pfnote" ] && echo "$pfnote"
exit 0
