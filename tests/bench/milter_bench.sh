#!/bin/bash
# milter_bench.sh [--build DIR] [-n N] [-r R] [-c C] [--irrelevant PCT]
#                 [--traffic replies|list] [--before BIN] [--pad BYTES]
#                 [--memory-limit SIZE]
#                 [--work DIR] [--milter BIN --test-milter BIN --seed BIN]
#
# Benchmark of patchbridge-milter under Postfix, on reply traffic: one
# private Postfix (tests/postfix/pfbed) with three SMTP listeners that
# differ only in their milters, measured alternately in the same run:
#
#   (a) no milter
#   (b) the do-nothing milter: tests/postfix/test_milter, which adds one
#       header and accepts (the baseline cost of libmilter and Postfix's
#       milter protocol on a unix socket)
#   (c) patchbridge-milter, with its thread map and durable spool, set up
#       as tests/milter/postfix.sh does (as nobody, socket nobody:postfix
#       0660, spool nobody:nogroup)
#   (d) with --before BIN: another patchbridge-milter binary (an older
#       build), set up as (c) with the same thread map and a spool of its
#       own: before/after figures from one run
#
# The traffic: the 161 corpus replies (tests/data/corpus, truth.json kind
# "reply"), sent as they are, cycled, each copy with a Message-ID of its
# own.  The thread map is seeded so that every one of them answers a
# bridged series under its own In-Reply-To/References (milter_load.py
# seed-plan): the milter classifies (thread map), parses (review_parse,
# against the parent patch when the corpus has it) and spools each one.
# A preflight runs the milter's --test mode over the set and stops unless
# all 161 are bridged.  --irrelevant PCT mixes in PCT % of unthreaded
# list mail (tests/milter/data/irrelevant.eml), which the milter passes
# after the headers; the default is 0: replies only, the milter's worst
# case.
#
# --traffic list: list mail that is no reply to a bridged series - every
# corpus mail (17 cover letters, 66 patches, 161 replies with their own
# "Re: [PATCH vN k/M]" subjects and threading), with the thread map seeded
# with the same 56 MRs under other Message-IDs and counters
# (milter_load.py seed-plan --foreign): the common case on a busy list.
# The preflight then checks that none is bridged, and the sanity check
# that no record is written.
#
#   --build DIR  build tree with patchbridge-milter, test_milter and
#                milter_seed (default: build-ci, else build); --milter,
#                --test-milter and --seed name the three binaries instead
#   -n N         messages per timed run (default 1000)
#   -r R         timed runs per configuration (default 5); the table shows
#                medians.  Runs are interleaved a b c, b c a, c a b, ... so
#                that drift on a noisy VM hits all three alike.
#   -c C         concurrent SMTP sessions (default 10)
#   --traffic T  replies (default) or list, see above
#   --before BIN configuration (d): an older patchbridge-milter
#   --pad BYTES  send only the single-part mails, each grown to BYTES by
#                quoted lines at the start of its text (memory: with
#                -c 50 --pad 1048576, 50 sessions of 1 MiB replies);
#                [milter] max_message_size is raised above BYTES
#   --memory-limit SIZE  [milter] memory_limit (default 256M, which 50
#                sessions of 1 MiB do not reach): e.g. 32M, to measure
#                mail going on in files past it
#
# The table also gives each milter's peak resident memory (VmHWM of
# /proc/PID/status at the end, warm-up included) and its CPU time per
# message.
#   --work DIR   where the Postfix instance and logs go (default
#                DIR/tests/bench/run/milter)
#
# Load: tests/bench/milter_load.py, a plain-socket SMTP client with C
# threads, one session per message like smtp-source (which can send only
# one fixed message per process, and the milter's cost depends on the
# message).  Postfix delivers everything to discard(8) (default_transport
# and virtual_transport), so the figure is acceptance: from the first
# connection to the last "250" after DATA.  Before each run the queue is
# drained.  Each configuration first gets one untimed warm-up run of N/5.
#
# Sanity check, not a timing assertion: every reply accepted through (c)
# left exactly one spool record; the script fails if not, or if any
# message was refused, or if a command fails - never on timings.
#
# Needs root, postfix (smtp-source is not used), setpriv, flock and
# /usr/bin/python3; exit 77 (skipped) otherwise.  Stops everything it
# started (by pid) on every exit path.  Loopback only.
set -u
NAME=milter_bench
# shellcheck source=../milter/lib.sh
. "$(cd "$(dirname "$0")" && pwd -P)/../milter/lib.sh"
BENCH_DIR=$SRC_DIR/tests/bench
PY=/usr/bin/python3

build=""
MBIN=""
TBIN=""
SEED=""
N=1000
R=5
C=10
IRR=0
TRAFFIC=replies
PAD=0
MEMLIM=""
DBIN=""
DPID=""
work=""
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=${2?}; shift 2 ;;
	--milter) MBIN=${2?}; shift 2 ;;
	--test-milter) TBIN=${2?}; shift 2 ;;
	--seed) SEED=${2?}; shift 2 ;;
	-n) N=${2?}; shift 2 ;;
	-r) R=${2?}; shift 2 ;;
	-c) C=${2?}; shift 2 ;;
	--irrelevant) IRR=${2?}; shift 2 ;;
	--traffic) TRAFFIC=${2?}; shift 2 ;;
	--before) DBIN=${2?}; shift 2 ;;
	--pad) PAD=${2?}; shift 2 ;;
	--memory-limit) MEMLIM=${2?}; shift 2 ;;
	--work) work=${2?}; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) echo "$NAME: unknown option $1 (try --help)" >&2; exit 2 ;;
	esac
done
case "$N$R$C" in *[!0-9]*) fail "-n, -r and -c take numbers" ;; esac
case $TRAFFIC in replies | list) ;; *) fail "--traffic replies or list" ;; esac
case $PAD in *[!0-9]*) fail "--pad takes a number of bytes" ;; esac
[ "$N" -ge 10 ] && [ "$R" -ge 1 ] && [ "$C" -ge 1 ] || fail "-n >= 10, -r >= 1, -c >= 1"
if [ -z "$build" ] && [ -z "$MBIN" ]; then
	for b in build-ci build; do
		[ -x "$SRC_DIR/$b/milter/patchbridge-milter" ] && build=$SRC_DIR/$b && break
	done
	[ -n "$build" ] || fail "no build-ci/ or build/ with patchbridge-milter; give --build DIR"
fi
need_pfbed nobody
command -v flock >/dev/null 2>&1 || skip "flock is not installed"
MBIN=$(abs_path "${MBIN:-$build/milter/patchbridge-milter}")
TBIN=$(abs_path "${TBIN:-$build/tests/postfix/test_milter}")
SEED=$(abs_path "${SEED:-$build/tests/milter/milter_seed}")
[ -z "$DBIN" ] || DBIN=$(abs_path "$DBIN")
CFGS="a b c"
[ -n "$DBIN" ] && CFGS="a b c d"
[ -n "$work" ] || work=${build:-$(dirname "$(dirname "$MBIN")")}/tests/bench/run/milter
# Sockets, spool and state under /tmp, as in tests/milter/postfix.sh.
bed_dirs "$work" pbbench

step "$TRAFFIC traffic and thread map"
if [ "$TRAFFIC" = list ]; then
	"$PY" "$BENCH_DIR/milter_load.py" list "$CORPUS" >"$W/replies.list"
else
	"$PY" "$BENCH_DIR/milter_load.py" replies "$CORPUS" >"$W/replies.list"
fi || fail "cannot list the corpus mails"
NREPLIES=$(wc -l <"$W/replies.list")
milter_dirs nobody
if [ "$PAD" -gt 0 ]; then
	sed -i "s|^max_message_size = .*|max_message_size = $((PAD / 1048576 + 2))M|" \
		"$T/pb.conf"
fi
if [ -n "$MEMLIM" ]; then
	sed -i "s|^max_message_size = .*|&\nmemory_limit = $MEMLIM|" "$T/pb.conf"
fi
install -d -o nobody -g postfix -m 2750 "$T/tm" || fail "install -d failed"
foreign=()
[ "$TRAFFIC" = list ] && foreign=(--foreign)
"$PY" "$BENCH_DIR/milter_load.py" seed-plan "${foreign[@]}" "$CORPUS" \
	>"$W/seed.plan" || fail "cannot make the seed plan"
(
	umask 027
	while read -r -a args; do
		"$SEED" "$T/state/state.db" "${args[@]}" >/dev/null || exit 1
	done <"$W/seed.plan"
) 2>"$W/seed.log" || fail "milter_seed failed: $(tail -n 3 "$W/seed.log")"
chgrp nogroup "$T"/state/state.db* && chmod 640 "$T"/state/state.db*
say "$NREPLIES mails; $(grep -c '^mail ' "$W/seed.plan") thread-map rows" \
	"in $(grep -c '^revision ' "$W/seed.plan") MRs"

mapfile -t files <"$W/replies.list"
if [ "$TRAFFIC" = list ]; then
	step "preflight: the milter's --test mode bridges none of them"
	WANT_BRIDGED=0
else
	step "preflight: the milter's --test mode bridges every reply"
	WANT_BRIDGED=$NREPLIES
fi
# as the milter runs: it refuses root with a spool that is nobody's
setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
	"$MBIN" -c "$T/pb.conf" --sender "<reviewer@bench.example.org>" \
	--queue-id PREFLIGHT --test "${files[@]}" >"$W/preflight.out" \
	2>"$W/preflight.log" || fail "--test failed: $(tail -n 3 "$W/preflight.log")"
bridged=$(grep -c ': X-Patchbridge: reply ' "$W/preflight.out")
[ "$bridged" -eq "$WANT_BRIDGED" ] ||
	fail "$bridged of $NREPLIES mails bridged, $WANT_BRIDGED expected: $(grep -v X-Patchbridge "$W/preflight.out" | head -n 3)"
say "$bridged/$NREPLIES bridged ($(grep -o 'via=[a-z-]*' "$W/preflight.out" |
	sort | uniq -c | xargs)); inline comments in" \
	"$(grep -c 'inline=[1-9]' "$W/preflight.out"), NAKs $(grep -c 'nak=yes' "$W/preflight.out")"
rm -f "$T"/spool/new/* "$T"/spool/tmp/* 2>/dev/null

step "the two milters, as nobody:nogroup"
start_milter "$W/pb-milter.log" nobody
setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
	"$TBIN" -p "unix:$T/tm/milter.sock" -P "$T/tm/milter.pid" \
	2>"$W/test-milter.log" &
TPID=$!
wait_file "$T/tm/milter.pid" 10 ||
	fail "test_milter did not start: $(tail -n 3 "$W/test-milter.log")"
if [ -n "$DBIN" ]; then
	# (d): the same thread map, a spool and socket of its own
	install -d -o root -g nogroup -m 2755 "$T/d" &&
		install -d -o nobody -g nogroup -m 2770 "$T/d/spool" &&
		install -d -o nobody -g postfix -m 2750 "$T/d/run" ||
		fail "install -d failed"
	sed -e "s|^socket = .*|socket = unix:$T/d/run/milter.sock|" \
		-e "s|^dir = .*|dir = $T/d/spool|" "$T/pb.conf" >"$T/d/pb.conf"
	chmod 644 "$T/d/pb.conf"
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
		"$DBIN" -f -c "$T/d/pb.conf" -P "$T/d/run/milter.pid" \
		2>"$W/before-milter.log" &
	DPID=$!
	wait_file "$T/d/run/milter.pid" 10 ||
		fail "the --before milter did not start: $(tail -n 3 "$W/before-milter.log")"
fi

step "private postfix: three listeners, everything to discard(8)"
pfbed_start --default-action tempfail \
	--set 'default_transport = discard:bench' \
	--set 'virtual_transport = discard:bench'
PORT_A=$PORT
# Two more smtpd listeners that differ only in smtpd_milters.  Ports are
# picked and bound under pfbed's start lock, so a concurrent pfbed start
# cannot take them (Postfix binds with SO_REUSEPORT: see pfbed).
port_free() {
	"$PY" -c 'import socket,sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' \
		"$1" 2>/dev/null
}
listeners() {
	awk -v p=":$(printf '%04X' "$1")" '$2 ~ p"$" && $4 == "0A"' /proc/net/tcp | wc -l
}
exec 8>>/tmp/pfbed.start.lock
flock -w 120 8 || fail "cannot take /tmp/pfbed.start.lock"
ports=()
nports=2
[ -n "$DBIN" ] && nports=3
for _ in $(seq 1 50); do
	p=$((20000 + (RANDOM * 32768 + RANDOM) % 10000))
	[ "$p" != "$PORT_A" ] && [ "$p" != "${ports[0]:-}" ] &&
		[ "$p" != "${ports[1]:-}" ] && port_free "$p" && ports+=("$p")
	[ ${#ports[@]} -eq $nports ] && break
done
[ ${#ports[@]} -eq $nports ] || fail "no free ports"
PORT_B=${ports[0]}
PORT_C=${ports[1]}
PORT_D=${ports[2]:-}
postconf -c "$CONFIG" -Me "127.0.0.1:$PORT_B/inet = 127.0.0.1:$PORT_B inet n - n - - smtpd -o smtpd_milters=unix:$T/tm/milter.sock" &&
	postconf -c "$CONFIG" -Me "127.0.0.1:$PORT_C/inet = 127.0.0.1:$PORT_C inet n - n - - smtpd -o smtpd_milters=unix:$T/run/milter.sock" ||
	fail "postconf -M failed"
if [ -n "$DBIN" ]; then
	postconf -c "$CONFIG" -Me "127.0.0.1:$PORT_D/inet = 127.0.0.1:$PORT_D inet n - n - - smtpd -o smtpd_milters=unix:$T/d/run/milter.sock" ||
		fail "postconf -M failed"
fi
# A config file younger than ~1 s makes Postfix wait (tests/postfix/README.md,
# pitfall 2).
touch -d "@$(($(date +%s) - 10))" "$CONFIG/main.cf" "$CONFIG/master.cf"
"$PFBED" reload "$INST" 2>/dev/null || fail "pfbed reload failed"
for p in "$PORT_B" "$PORT_C" $PORT_D; do
	t=$SECONDS
	until [ "$(listeners "$p")" -ge 1 ]; do
		[ $((SECONDS - t)) -ge 20 ] && fail "nothing listens on $p after reload"
		sleep 0.1
	done
	[ "$(listeners "$p")" -eq 1 ] || fail "port $p is shared with another process"
done
flock -u 8
exec 8>&-
say "a=$PORT_A (none) b=$PORT_B (test_milter) c=$PORT_C (patchbridge-milter)${DBIN:+ d=$PORT_D (before: $DBIN)}"

# run CONFIG N TAG: one load run; appends its result line to $W/results.
# cpu_ticks PID: the user + system CPU time of PID, in clock ticks.
cpu_ticks() {
	[ -n "$1" ] && awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

run() {
	local cfg=$1 n=$2 tag=$3 port before after line mpid="" t0 t1
	local spool=$T/spool
	case $cfg in a) port=$PORT_A ;; b) port=$PORT_B mpid=$TPID ;;
	c) port=$PORT_C mpid=$MPID ;; d) port=$PORT_D mpid=$DPID spool=$T/d/spool ;;
	esac
	queue_drained 60
	before=$(spool_count "$spool")
	t0=$(cpu_ticks "$mpid")
	"$PY" "$BENCH_DIR/milter_load.py" load --port "$port" -n "$n" -c "$C" \
		--tag "$tag" --irrelevant "$IRR" --pad "$PAD" \
		--irrelevant-file "$MLIB_DIR/data/irrelevant.eml" \
		"${files[@]}" >"$W/load.out" 2>"$W/load.err" &
	LOAD_PID=$!
	wait "$LOAD_PID" || fail "load generator failed: $(tail -n 3 "$W/load.err")"
	LOAD_PID=""
	line=$(cat "$W/load.out")
	t1=$(cpu_ticks "$mpid")
	after=$(spool_count "$spool")
	printf '%s %s %s records=%d round=%d milter_ticks=%d\n' "$cfg" "$tag" \
		"$line" $((after - before)) "${ROUND:-0}" $((t1 - t0)) >>"$W/results"
	say "$cfg $tag $line records=$((after - before)) milter_ticks=$((t1 - t0))"
	# Keep the spool small between runs (the milter only adds files).
	find "$spool/new" -type f -delete
}

step "warm-up: $((N / 5)) messages per configuration (not counted)"
: >"$W/results"
for cfg in $CFGS; do
	run "$cfg" $((N / 5)) "w$cfg"
done
mv "$W/results" "$W/warmup"

step "$R rounds of $N messages per configuration, C=$C, interleaved"
for r in $(seq 1 "$R"); do
	ROUND=$r
	# rotate the order round by round
	set -- $CFGS
	k=$(((r - 1) % $#))
	order="${*:k+1} ${*:1:k}"
	for cfg in $order; do
		run "$cfg" "$N" "r$r$cfg"
	done
done

# peak_kib PID: the peak resident set of PID (VmHWM), KiB.
peak_kib() {
	[ -n "$1" ] && awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0
}
printf 'b %s\nc %s\nd %s\n' "$(peak_kib "$TPID")" "$(peak_kib "$MPID")" \
	"$(peak_kib "$DPID")" >"$W/peaks"

step "stop"
pfbed_stop
kill -TERM "$MPID" "$TPID" $DPID
for p in "$MPID" "$TPID" $DPID; do
	wait_pid_gone "$p" 15 || fail "milter $p still running 15s after SIGTERM"
done
no_sanitizer_report "$W/pb-milter.log"

# The table.  A result line: CFG TAG sent= ok= tempfail= permfail= errors=
# seconds= rate= p50_ms= p99_ms= cpu_s= records=
"$PY" - "$W/results" "$N" "$R" "$C" "$IRR" "$NREPLIES" "$(nproc)" \
	"$TRAFFIC" "$WANT_BRIDGED" "$DBIN" "$(getconf CLK_TCK)" "$W/peaks" \
	"$PAD" <<'EOF'
import statistics, sys
(path, n, r, c, irr, nrep, cpus, traffic, want, dbin, hz, peaks,
 pad) = sys.argv[1:]
peak = dict(l.split() for l in open(peaks) if len(l.split()) == 2)
runs = {}
for line in open(path):
    f = line.split()
    kv = dict(x.split("=", 1) for x in f[2:])
    runs.setdefault(f[0], []).append({k: float(v) for k, v in kv.items()})
names = {"a": "(a) no milter", "b": "(b) do-nothing milter (test_milter)",
         "c": "(c) patchbridge-milter + spool",
         "d": "(d) before: patchbridge-milter + spool"}
cfgs = "abcd" if "d" in runs else "abc"
med = {k: statistics.median(x["rate"] for x in v) for k, v in runs.items()}
print()
what = ("%s corpus replies to bridged series" % nrep if traffic == "replies"
        else "%s corpus mails, none a reply to a bridged series" % nrep)
print("milter benchmark: Postfix acceptance, %s messages x %s runs, C=%s, "
      "%s cycled, %s%% irrelevant%s" % (n, r, c, what, irr,
      ", single-part mails grown to %s bytes" % pad if pad != "0" else ""))
if dbin:
    print("(d) is %s" % dbin)
print("CPUs: %s, load average: %s" % (cpus, " ".join(open("/proc/loadavg").read().split()[:3])))
hdr = ("configuration", "msg/s", "min-max", "vs (a)", "vs (b)", "p50 ms",
       "p99 ms", "gen CPU", "milter ms", "peak MiB")
fmt = "%-40s %7s %11s %7s %7s %7s %7s %7s %9s %8s"
print(fmt % hdr)
tick = 1000.0 / int(hz)
for k in cfgs:
    v = runs[k]
    rates = [x["rate"] for x in v]
    cpu = statistics.median(x["cpu_s"] / x["seconds"] for x in v)
    mcpu = ("%.2f" % (tick * sum(x["milter_ticks"] for x in v)
                      / max(1, sum(x["ok"] for x in v)))
            if k != "a" else "-")
    print(fmt % (names[k], "%.0f" % med[k],
                 "%.0f-%.0f" % (min(rates), max(rates)),
                 "%.2f" % (med[k] / med["a"]), "%.2f" % (med[k] / med["b"]),
                 "%.1f" % statistics.median(x["p50_ms"] for x in v),
                 "%.1f" % statistics.median(x["p99_ms"] for x in v),
                 "%.0f%%" % (100 * cpu), mcpu,
                 "%.1f" % (int(peak[k]) / 1024.0)
                 if k != "a" and int(peak.get(k, "0")) else "-"))
# Per round, each configuration against the others of the same round:
# adjacent runs, so load that comes and goes on a shared VM cancels.
rounds = {}
for k, v in runs.items():
    for x in v:
        rounds.setdefault(int(x["round"]), {})[k] = x["rate"]
def per_round(p, q):
    return statistics.median(v[p] / v[q] for v in rounds.values())
pairs = [("b", "a"), ("c", "a"), ("c", "b")]
if "d" in runs:
    pairs += [("d", "b"), ("c", "d")]
print("per-round ratios (median over %d rounds): %s"
      % (len(rounds), ", ".join("%s/%s %.2f" % (p, q, per_round(p, q))
                                for p, q in pairs)))
print("msg/s: median of the runs; p50/p99: median over the runs of each "
      "run's per-message latency (connect to 250 after DATA); gen CPU: the "
      "load generator's CPU time / wall time; milter ms: the milter "
      "process's CPU time per message accepted, over all runs; peak MiB: "
      "the milter's peak resident memory (VmHWM)")
refused = int(sum(x["tempfail"] + x["permfail"] + x["errors"]
                  for v in runs.values() for x in v))
bad = refused > 0
for k in cfgs[2:]:
    acc = int(sum(x["ok"] for x in runs[k]))
    irr_acc = int(sum(x["ok_irrelevant"] for x in runs[k]))
    rec = int(sum(x["records"] for x in runs[k]))
    want_rec = (acc - irr_acc) if traffic == "replies" else 0
    print("spool records written by (%s): %d for %d mails accepted "
          "(%d expected; + %d irrelevant, no record)"
          % (k, rec, acc - irr_acc, want_rec, irr_acc))
    bad = bad or rec != want_rec
print("messages refused in all runs: %d" % refused)
sys.exit(1 if bad else 0)
EOF
rc=$?
[ $rc -eq 0 ] || fail "refused messages or spool records not as expected (see $W/results)"
step "done in $((SECONDS - T0))s"
exit 0
