#!/bin/bash
# milter_bench.sh [--build DIR] [-n N] [-r R] [-c C] [--irrelevant PCT]
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
#   --build DIR  build tree with patchbridge-milter, test_milter and
#                milter_seed (default: build-ci, else build); --milter,
#                --test-milter and --seed name the three binaries instead
#   -n N         messages per timed run (default 1000)
#   -r R         timed runs per configuration (default 5); the table shows
#                medians.  Runs are interleaved a b c, b c a, c a b, ... so
#                that drift on a noisy VM hits all three alike.
#   -c C         concurrent SMTP sessions (default 10)
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
	--work) work=${2?}; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) echo "$NAME: unknown option $1 (try --help)" >&2; exit 2 ;;
	esac
done
case "$N$R$C" in *[!0-9]*) fail "-n, -r and -c take numbers" ;; esac
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
[ -n "$work" ] || work=${build:-$(dirname "$(dirname "$MBIN")")}/tests/bench/run/milter
# Sockets, spool and state under /tmp, as in tests/milter/postfix.sh.
bed_dirs "$work" pbbench

step "reply set and thread map"
"$PY" "$BENCH_DIR/milter_load.py" replies "$CORPUS" >"$W/replies.list" ||
	fail "cannot list the corpus replies"
NREPLIES=$(wc -l <"$W/replies.list")
milter_dirs nobody
install -d -o nobody -g postfix -m 2750 "$T/tm" || fail "install -d failed"
"$PY" "$BENCH_DIR/milter_load.py" seed-plan "$CORPUS" >"$W/seed.plan" ||
	fail "cannot make the seed plan"
(
	umask 027
	while read -r -a args; do
		"$SEED" "$T/state/state.db" "${args[@]}" >/dev/null || exit 1
	done <"$W/seed.plan"
) 2>"$W/seed.log" || fail "milter_seed failed: $(tail -n 3 "$W/seed.log")"
chgrp nogroup "$T"/state/state.db* && chmod 640 "$T"/state/state.db*
say "$NREPLIES replies; $(grep -c '^mail ' "$W/seed.plan") thread-map rows" \
	"in $(grep -c '^revision ' "$W/seed.plan") MRs"

step "preflight: the milter's --test mode bridges every reply"
mapfile -t files <"$W/replies.list"
"$MBIN" -c "$T/pb.conf" --sender "<reviewer@bench.example.org>" \
	--queue-id PREFLIGHT --test "${files[@]}" >"$W/preflight.out" \
	2>"$W/preflight.log" || fail "--test failed: $(tail -n 3 "$W/preflight.log")"
bridged=$(grep -c ': X-Patchbridge: reply ' "$W/preflight.out")
[ "$bridged" -eq "$NREPLIES" ] ||
	fail "only $bridged of $NREPLIES replies bridged: $(grep -v X-Patchbridge "$W/preflight.out" | head -n 3)"
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
for _ in $(seq 1 50); do
	p=$((20000 + (RANDOM * 32768 + RANDOM) % 10000))
	[ "$p" != "$PORT_A" ] && port_free "$p" && ports+=("$p")
	[ ${#ports[@]} -eq 2 ] && break
done
[ ${#ports[@]} -eq 2 ] || fail "no free ports"
PORT_B=${ports[0]}
PORT_C=${ports[1]}
postconf -c "$CONFIG" -Me "127.0.0.1:$PORT_B/inet = 127.0.0.1:$PORT_B inet n - n - - smtpd -o smtpd_milters=unix:$T/tm/milter.sock" &&
	postconf -c "$CONFIG" -Me "127.0.0.1:$PORT_C/inet = 127.0.0.1:$PORT_C inet n - n - - smtpd -o smtpd_milters=unix:$T/run/milter.sock" ||
	fail "postconf -M failed"
# A config file younger than ~1 s makes Postfix wait (tests/postfix/README.md,
# pitfall 2).
touch -d "@$(($(date +%s) - 10))" "$CONFIG/main.cf" "$CONFIG/master.cf"
"$PFBED" reload "$INST" 2>/dev/null || fail "pfbed reload failed"
for p in "$PORT_B" "$PORT_C"; do
	t=$SECONDS
	until [ "$(listeners "$p")" -ge 1 ]; do
		[ $((SECONDS - t)) -ge 20 ] && fail "nothing listens on $p after reload"
		sleep 0.1
	done
	[ "$(listeners "$p")" -eq 1 ] || fail "port $p is shared with another process"
done
flock -u 8
exec 8>&-
say "a=$PORT_A (none) b=$PORT_B (test_milter) c=$PORT_C (patchbridge-milter)"

# run CONFIG N TAG: one load run; appends its result line to $W/results.
run() {
	local cfg=$1 n=$2 tag=$3 port before after line
	case $cfg in a) port=$PORT_A ;; b) port=$PORT_B ;; c) port=$PORT_C ;; esac
	queue_drained 60
	before=$(spool_count "$T/spool")
	"$PY" "$BENCH_DIR/milter_load.py" load --port "$port" -n "$n" -c "$C" \
		--tag "$tag" --irrelevant "$IRR" \
		--irrelevant-file "$MLIB_DIR/data/irrelevant.eml" \
		"${files[@]}" >"$W/load.out" 2>"$W/load.err" &
	LOAD_PID=$!
	wait "$LOAD_PID" || fail "load generator failed: $(tail -n 3 "$W/load.err")"
	LOAD_PID=""
	line=$(cat "$W/load.out")
	after=$(spool_count "$T/spool")
	printf '%s %s %s records=%d round=%d\n' "$cfg" "$tag" "$line" \
		$((after - before)) "${ROUND:-0}" >>"$W/results"
	say "$cfg $tag $line records=$((after - before))"
	# Keep the spool small between runs (the milter only adds files).
	find "$T/spool/new" -type f -delete
}

step "warm-up: $((N / 5)) messages per configuration (not counted)"
: >"$W/results"
for cfg in a b c; do
	run "$cfg" $((N / 5)) "w$cfg"
done
mv "$W/results" "$W/warmup"

step "$R rounds of $N messages per configuration, C=$C, interleaved"
for r in $(seq 1 "$R"); do
	ROUND=$r
	case $(((r - 1) % 3)) in
	0) order="a b c" ;;
	1) order="b c a" ;;
	*) order="c a b" ;;
	esac
	for cfg in $order; do
		run "$cfg" "$N" "r$r$cfg"
	done
done

step "stop"
pfbed_stop
kill -TERM "$MPID" "$TPID"
for p in "$MPID" "$TPID"; do
	wait_pid_gone "$p" 15 || fail "milter $p still running 15s after SIGTERM"
done
no_sanitizer_report "$W/pb-milter.log"

# The table.  A result line: CFG TAG sent= ok= tempfail= permfail= errors=
# seconds= rate= p50_ms= p99_ms= cpu_s= records=
"$PY" - "$W/results" "$N" "$R" "$C" "$IRR" "$NREPLIES" "$(nproc)" <<'EOF'
import statistics, sys
path, n, r, c, irr, nrep, cpus = sys.argv[1:]
runs = {}
for line in open(path):
    f = line.split()
    kv = dict(x.split("=", 1) for x in f[2:])
    runs.setdefault(f[0], []).append({k: float(v) for k, v in kv.items()})
names = {"a": "(a) no milter", "b": "(b) do-nothing milter (test_milter)",
         "c": "(c) patchbridge-milter + spool"}
med = {k: statistics.median(x["rate"] for x in v) for k, v in runs.items()}
print()
print("milter benchmark: Postfix acceptance, %s messages x %s runs, C=%s, "
      "%s corpus replies cycled, %s%% irrelevant"
      % (n, r, c, nrep, irr))
print("CPUs: %s, load average: %s" % (cpus, " ".join(open("/proc/loadavg").read().split()[:3])))
hdr = ("configuration", "msg/s", "min-max", "vs (a)", "vs (b)", "p50 ms",
       "p99 ms", "gen CPU")
fmt = "%-36s %7s %11s %7s %7s %7s %7s %7s"
print(fmt % hdr)
for k in "abc":
    v = runs[k]
    rates = [x["rate"] for x in v]
    cpu = statistics.median(x["cpu_s"] / x["seconds"] for x in v)
    print(fmt % (names[k], "%.0f" % med[k],
                 "%.0f-%.0f" % (min(rates), max(rates)),
                 "%.2f" % (med[k] / med["a"]), "%.2f" % (med[k] / med["b"]),
                 "%.1f" % statistics.median(x["p50_ms"] for x in v),
                 "%.1f" % statistics.median(x["p99_ms"] for x in v),
                 "%.0f%%" % (100 * cpu)))
# Per round, each configuration against the others of the same round:
# adjacent runs, so load that comes and goes on a shared VM cancels.
rounds = {}
for k, v in runs.items():
    for x in v:
        rounds.setdefault(int(x["round"]), {})[k] = x["rate"]
def per_round(p, q):
    return statistics.median(v[p] / v[q] for v in rounds.values())
print("per-round ratios (median over %d rounds): b/a %.2f, c/a %.2f, c/b %.2f"
      % (len(rounds), per_round("b", "a"), per_round("c", "a"),
         per_round("c", "b")))
acc = int(sum(x["ok"] for x in runs["c"]))
irr_acc = int(sum(x["ok_irrelevant"] for x in runs["c"]))
rec = int(sum(x["records"] for x in runs["c"]))
refused = int(sum(x["tempfail"] + x["permfail"] + x["errors"]
                  for v in runs.values() for x in v))
print("msg/s: median of the runs; p50/p99: median over the runs of each "
      "run's per-message latency (connect to 250 after DATA); gen CPU: the "
      "load generator's CPU time / wall time")
print("spool records written by (c): %d for %d replies accepted "
      "(+ %d irrelevant, no record); messages refused in all runs: %d"
      % (rec, acc - irr_acc, irr_acc, refused))
sys.exit(1 if refused or rec != acc - irr_acc else 0)
EOF
rc=$?
[ $rc -eq 0 ] || fail "refused messages or spool records != replies accepted (see $W/results)"
step "done in $((SECONDS - T0))s"
exit 0
