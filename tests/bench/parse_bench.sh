#!/bin/bash
# parse_bench.sh [--build DIR] [-r R] [--patchbridge BIN] [--driver BIN]
#                 [--before BIN] [--hello BIN]
#
# Benchmark of the inbound parser: `patchbridge parse FILE` against
# `git mailinfo -u msg patch < FILE` on the same messages - every .eml of
# tests/data/corpus (244 real list mails: replies, patches and cover
# letters, 2.3 MB) - in the same run, and prints messages/s, MB/s
# (10^6 bytes) and their ratio.
#
# Like for like: both are one process per message, started by the same
# shell loop, output to a file on the same file system.  They do not do
# the same work - git mailinfo splits a mail into message, patch and
# author info; patchbridge parse also decodes HTML and flowed text, cuts
# quotes and signatures, finds trailers, NAKs and inline comments and
# writes JSON - so the ratio is the price of that, start-up included.
# More rows for scale, clearly not comparisons:
#   - "loop overhead": the same loop running /bin/true per file (fork and
#     exec as the shell does them), a floor under both per-process rows;
#   - "start-up": the same loop running `patchbridge --version`: what the
#     patchbridge process costs before it reads a byte (the front loads
#     GMime and what GMime needs, 20 shared objects; before the programs
#     were split it loaded libgit2, libcurl, SQLite ... too, 55);
#   - "floor": tests/bench/gmime_hello per mail (g_mime_init(), parse the
#     file, print its Subject): the same shared objects and library
#     start-up as patchbridge parse, and none of its work - what a
#     GMime program cannot go below.  Its ratio to git mailinfo is the
#     best `patchbridge parse FILE` can reach while it uses GMime as a
#     shared library.  Built only with -DPB_BENCH=ON, like:
#   - "in-process": tests/bench/parse_driver, which calls review_parse()
#     and review_to_json() over all files held in memory - the parser's
#     own cost without process start-up and file I/O.  It is built only
#     with -DPB_BENCH=ON; without it the row says so.
# And the fast path for many mails, one process for all of them, against
# git mailinfo once per mail (the way to get the same from git):
#   - `patchbridge parse FILE...` (JSON Lines);
#   - `patchbridge parse --mbox FILE` on the same mails as one mboxrd
#     file (made once, before the runs).
# With --before BIN, `BIN parse FILE` per mail is timed in the same loop
# as the others: an older build, for before/after figures.
#
#   --build DIR        build tree (default: build-ci, else build) where
#                      bridge/patchbridge and tests/bench/parse_driver are
#   --patchbridge BIN  the patchbridge binary (instead of --build)
#   --driver BIN       the parse_driver binary (instead of --build)
#   --before BIN       another patchbridge to time per mail as well
#   --hello BIN        the gmime_hello binary (instead of --build)
#   -r R               repetitions of each loop, alternated (default 5);
#                      the table shows medians.  The driver makes R timed
#                      passes after one untimed warm-up pass.
#
# Registered with CTest under the label "bench" when configured with
# -DPB_BENCH=ON: it fails only if a command fails, never on timings.
set -u
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd -P)
top=$(cd "$here/../.." && pwd -P)
corpus=$top/tests/data/corpus

die() {
	echo "parse_bench: $*" >&2
	exit 1
}

build=""
pb=""
driver=""
before=""
hello=""
reps=5
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=${2?}; shift 2 ;;
	--patchbridge) pb=${2?}; shift 2 ;;
	--driver) driver=${2?}; shift 2 ;;
	--before) before=${2?}; shift 2 ;;
	--hello) hello=${2?}; shift 2 ;;
	-r) reps=${2?}; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) die "unknown option $1 (try --help)" ;;
	esac
done
case $reps in '' | *[!0-9]*) die "-r takes a number" ;; esac
[ "$reps" -ge 1 ] || die "-r must be at least 1"
if [ -z "$build" ] && [ -z "$pb" ]; then
	for b in build-ci build; do
		[ -x "$top/$b/bridge/patchbridge" ] && build=$top/$b && break
	done
	[ -n "$build" ] || die "no build-ci/ or build/ with bridge/patchbridge; give --build DIR"
fi
[ -n "$pb" ] || pb=$build/bridge/patchbridge
[ -n "$driver" ] || { [ -n "$build" ] && driver=$build/tests/bench/parse_driver; }
[ -x "$pb" ] || die "$pb is not an executable"
pb=$(realpath "$pb")
[ -n "$driver" ] && [ -x "$driver" ] && driver=$(realpath "$driver") || driver=""
[ -n "$hello" ] || { [ -n "$build" ] && hello=$build/tests/bench/gmime_hello; }
[ -n "$hello" ] && [ -x "$hello" ] && hello=$(realpath "$hello") || hello=""
if [ -n "$before" ]; then
	[ -x "$before" ] || die "$before is not an executable"
	before=$(realpath "$before")
fi
command -v git >/dev/null 2>&1 || die "git is not installed"
command -v python3 >/dev/null 2>&1 || die "python3 is not installed"

out=$(mktemp -d "${TMPDIR:-/tmp}/pb-parse-bench.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$out"' EXIT
export HOME=$out/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"

find "$corpus" -name '*.eml' -type f | sort >"$out/files"
mapfile -t files <"$out/files"
n=${#files[@]}
[ "$n" -gt 0 ] || die "no .eml files under $corpus"
bytes=$(cat "${files[@]}" | wc -c)
# The same mails as one mboxrd file (">From " quoting, as export writes).
python3 "$top/tests/tools/mboxrd.py" "$out/corpus.mbox" "${files[@]}" ||
	die "tests/tools/mboxrd.py failed"

now() { date +%s.%N; }

# loop_pb, loop_git, loop_true: one pass over all files, one process per
# file; a failing command fails the benchmark.
loop_pb() {
	local f
	for f in "${files[@]}"; do
		"$pb" parse "$f" >"$out/pb.json" 2>"$out/pb.err" ||
			die "patchbridge parse $f failed: $(cat "$out/pb.err")"
	done
}
loop_git() {
	local f
	for f in "${files[@]}"; do
		git mailinfo -u "$out/msg" "$out/patch" <"$f" >"$out/info" \
			2>"$out/git.err" ||
			die "git mailinfo < $f failed: $(cat "$out/git.err")"
	done
}
loop_true() {
	local f
	for f in "${files[@]}"; do
		/bin/true <"$f" >"$out/true.out"
	done
}
loop_before() {
	local f
	for f in "${files[@]}"; do
		"$before" parse "$f" >"$out/before.json" 2>"$out/before.err" ||
			die "$before parse $f failed: $(cat "$out/before.err")"
	done
}
loop_hello() {
	local f
	for f in "${files[@]}"; do
		"$hello" "$f" >"$out/hello.out" 2>"$out/hello.err" ||
			die "gmime_hello $f failed: $(cat "$out/hello.err")"
	done
}
# The fast path: all mails in one process.
batch_files() {
	"$pb" parse "${files[@]}" >"$out/batch.jsonl" 2>"$out/batch.err" ||
		die "patchbridge parse FILE... failed: $(head -c 300 "$out/batch.err")"
}
batch_mbox() {
	"$pb" parse --mbox "$out/corpus.mbox" >"$out/mbox.jsonl" \
		2>"$out/mbox.err" ||
		die "patchbridge parse --mbox failed: $(head -c 300 "$out/mbox.err")"
}
loop_start() {
	local f
	for f in "${files[@]}"; do
		"$pb" --version <"$f" >"$out/start.out" ||
			die "patchbridge --version failed"
	done
}

# timed NAME FUNC: run FUNC once, append its seconds to $out/NAME.times.
timed() {
	local t0 t1
	t0=$(now)
	"$2"
	t1=$(now)
	echo "$t1 - $t0" | bc -l >>"$out/$1.times"
}

median() {
	sort -n "$1" | awk '{ v[NR] = $1 }
		END { if (NR % 2) m = v[(NR + 1) / 2];
		      else m = (v[NR / 2] + v[NR / 2 + 1]) / 2;
		      printf "%.4f\n", m }'
}

# One untimed pass of each warms the page cache and the dynamic loader.
loop_pb
loop_git
: >"$out/pb.times"
: >"$out/git.times"
: >"$out/true.times"
: >"$out/start.times"
: >"$out/before.times"
: >"$out/hello.times"
: >"$out/files.times"
: >"$out/mbox.times"
i=0
while [ $i -lt "$reps" ]; do
	if [ $((i % 2)) -eq 0 ]; then
		timed pb loop_pb
		timed git loop_git
	else
		timed git loop_git
		timed pb loop_pb
	fi
	timed true loop_true
	timed start loop_start
	[ -n "$before" ] && timed before loop_before
	[ -n "$hello" ] && timed hello loop_hello
	timed files batch_files
	timed mbox batch_mbox
	i=$((i + 1))
done
pb_t=$(median "$out/pb.times")
git_t=$(median "$out/git.times")
true_t=$(median "$out/true.times")
start_t=$(median "$out/start.times")
files_t=$(median "$out/files.times")
mbox_t=$(median "$out/mbox.times")
[ "$(wc -l <"$out/batch.jsonl")" -eq "$n" ] ||
	die "patchbridge parse FILE... printed $(wc -l <"$out/batch.jsonl") lines for $n mails"
[ "$(wc -l <"$out/mbox.jsonl")" -eq "$n" ] ||
	die "patchbridge parse --mbox printed $(wc -l <"$out/mbox.jsonl") lines for $n mails"
drv_t=""
if [ -n "$driver" ]; then
	"$driver" $((reps + 1)) "${files[@]}" >"$out/driver.out" 2>"$out/driver.err" ||
		die "parse_driver failed: $(cat "$out/driver.err")"
	sed -n '2,$s/.*seconds=//p' "$out/driver.out" >"$out/drv.times"
	drv_t=$(median "$out/drv.times")
fi

# row LABEL SECONDS RATIO-TEXT
row() {
	printf '%-50s %9s %9s %8s  %s\n' "$1" "$2" \
		"$(echo "$n / $2" | bc -l | xargs printf '%.0f')" \
		"$(echo "$bytes / $2 / 1000000" | bc -l | xargs printf '%.2f')" "$3"
}

echo
echo "parse benchmark: $n corpus mails, $bytes bytes, median of $reps runs"
echo "git: $(git --version | sed 's/git version //'), CPUs: $(nproc)," \
	"load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-50s %9s %9s %8s  %s\n' command "median s" "msgs/s" "MB/s" "vs git mailinfo"
row "patchbridge parse FILE (1 process/mail)" "$pb_t" \
	"$(echo "$git_t / $pb_t" | bc -l | xargs printf '%.2f')"
row "git mailinfo -u msg patch <FILE (1 process/mail)" "$git_t" "1.00"
if [ -n "$before" ]; then
	before_t=$(median "$out/before.times")
	row "before: $(basename "$before") parse FILE (1 process/mail)" "$before_t" \
		"$(echo "$git_t / $before_t" | bc -l | xargs printf '%.2f')"
fi
row "patchbridge parse FILE... (1 process, JSON Lines)" "$files_t" \
	"$(echo "$git_t / $files_t" | bc -l | xargs printf '%.1f')"
row "patchbridge parse --mbox FILE (1 process)" "$mbox_t" \
	"$(echo "$git_t / $mbox_t" | bc -l | xargs printf '%.1f')"
row "loop overhead: /bin/true per mail" "$true_t" "(floor of the per-mail rows)"
row "start-up: patchbridge --version per mail" "$start_t" "(start-up only)"
if [ -n "$hello" ]; then
	hello_t=$(median "$out/hello.times")
	row "floor: GMime hello (init, parse, Subject) per mail" "$hello_t" \
		"$(echo "$git_t / $hello_t" | bc -l | xargs printf '%.2f')"
else
	printf '%-50s %s\n' "floor: GMime hello per mail" \
		"n/a (gmime_hello: configure with -DPB_BENCH=ON)"
fi
if [ -n "$drv_t" ]; then
	row "in-process: review_parse+JSON, all mails" "$drv_t" \
		"(not comparable: no process start, no file I/O)"
else
	printf '%-50s %s\n' "in-process: review_parse+JSON, all mails" \
		"n/a (parse_driver: configure with -DPB_BENCH=ON)"
fi
# The same ratio per repetition (adjacent runs), whose median shrugs off
# load that comes and goes on a shared machine.
paste -d' ' "$out/git.times" "$out/pb.times" |
	awk '{ printf "%.6f\n", $1 / $2 }' >"$out/ratio.times"
printf 'ratio patchbridge parse / git mailinfo, throughput: %.2f of the medians, %.2f median of the %d per-run ratios (range %s)\n' \
	"$(echo "$git_t / $pb_t" | bc -l)" "$(median "$out/ratio.times")" "$reps" \
	"$(sort -n "$out/ratio.times" | sed -n '1p;$p' | xargs printf '%.2f ' | sed 's/ $//;s/ /-/')"
if [ -n "$hello" ]; then
	paste -d' ' "$out/git.times" "$out/hello.times" |
		awk '{ printf "%.6f\n", $1 / $2 }' >"$out/hratio.times"
	paste -d' ' "$out/hello.times" "$out/pb.times" |
		awk '{ printf "%.6f\n", $1 / $2 }' >"$out/fratio.times"
	printf 'ratio GMime hello / git mailinfo, throughput: %.2f median of the %d per-run ratios (range %s); patchbridge parse / GMime hello: %.2f\n' \
		"$(median "$out/hratio.times")" "$reps" \
		"$(sort -n "$out/hratio.times" | sed -n '1p;$p' | xargs printf '%.2f ' | sed 's/ $//;s/ /-/')" \
		"$(median "$out/fratio.times")"
fi
if [ -n "$before" ]; then
	paste -d' ' "$out/git.times" "$out/before.times" |
		awk '{ printf "%.6f\n", $1 / $2 }' >"$out/bratio.times"
	printf 'ratio before / git mailinfo, throughput: %.2f median of the %d per-run ratios (range %s)\n' \
		"$(median "$out/bratio.times")" "$reps" \
		"$(sort -n "$out/bratio.times" | sed -n '1p;$p' | xargs printf '%.2f ' | sed 's/ $//;s/ /-/')"
fi
paste -d' ' "$out/git.times" "$out/files.times" "$out/mbox.times" |
	awk '{ printf "%.6f %.6f\n", $1 / $2, $1 / $3 }' >"$out/fast.times"
printf 'ratio one process for all / git mailinfo per mail, throughput: FILE... %.1f, --mbox %.1f (medians of the %d per-run ratios)\n' \
	"$(cut -d' ' -f1 "$out/fast.times" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')" \
	"$(cut -d' ' -f2 "$out/fast.times" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')" \
	"$reps"
