#!/bin/sh
# format_bench.sh PATCHBRIDGE [COMMITS] [REPS]
#
# Benchmark of the outbound renderer: times `patchbridge format` and
# `git format-patch --cover-letter --stdout` on the same range of a
# generated repository, in the same run, and prints both, their ratio and
# (with GNU time) the peak resident memory of each.
#
#   COMMITS  commits in the range (default 500): tests/outbound/
#            make-repo.sh bench builds a base of 200 files and COMMITS
#            commits that each change two of them
#   REPS     repetitions of each command (default 5); the table shows the
#            median wall-clock time
#
# Both commands write the whole mbox to a file on the same file system;
# the mbox sizes are printed too, as a check that both did the same work.
# The generated repository is cached under $PB_BENCH_DIR (default
# ${TMPDIR:-/tmp}/pb-bench-COMMITS) and rebuilt when missing.
#
# Registered with CTest under the label "bench" when configured with
# -DPB_BENCH=ON (tests/bench/CMakeLists.txt; ctest -L bench): it runs the
# benchmark and fails only if a command fails, never on timings.
set -eu
pb=$(realpath "$1")
commits=${2:-500}
reps=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
export HOME="${TMPDIR:-/tmp}/pb-bench-home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
mkdir -p "$HOME"
repo=${PB_BENCH_DIR:-${TMPDIR:-/tmp}/pb-bench-$commits}
out=$(mktemp -d "${TMPDIR:-/tmp}/pb-bench-out.XXXXXX")
trap 'rm -rf "$out"' EXIT

if ! git -C "$repo" rev-parse -q --verify head >/dev/null 2>&1; then
	echo "building a repository with $commits commits in $repo ..."
	sh "$here/../outbound/make-repo.sh" bench "$repo" "$commits" >/dev/null
fi
n=$(git -C "$repo" rev-list --count base..head)

gnutime=
if [ -x /usr/bin/time ] && /usr/bin/time -v true 2>/dev/null; then
	gnutime=/usr/bin/time
fi

now() { date +%s.%N; }

# run NAME CMD...: REPS timed runs; prints the median seconds, keeps the
# largest peak RSS (KiB) in $out/NAME.rss.
run() {
	name=$1
	shift
	: >"$out/$name.times"
	echo 0 >"$out/$name.rss"
	i=0
	while [ $i -lt "$reps" ]; do
		t0=$(now)
		if [ -n "$gnutime" ]; then
			$gnutime -v -o "$out/$name.tv" "$@" >"$out/$name.mbox"
			rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/$name.tv")
			[ "$rss" -gt "$(cat "$out/$name.rss")" ] && echo "$rss" >"$out/$name.rss"
		else
			"$@" >"$out/$name.mbox"
		fi
		t1=$(now)
		echo "$t1 - $t0" | bc -l >>"$out/$name.times"
		i=$((i + 1))
	done
	sort -n "$out/$name.times" | awk '{ v[NR] = $1 }
		END { if (NR % 2) m = v[(NR + 1) / 2];
		      else m = (v[NR / 2] + v[NR / 2 + 1]) / 2;
		      printf "%.3f\n", m }'
}

pb_t=$(run patchbridge "$pb" format --repo "$repo" --base base --head head \
	--max-series 9999 -o -)
git_t=$(run git git -C "$repo" format-patch --cover-letter --stdout base..head)
pb_rss=n/a
git_rss=n/a
if [ -n "$gnutime" ]; then
	pb_rss=$(cat "$out/patchbridge.rss")
	git_rss=$(cat "$out/git.rss")
fi
pb_mails=$(grep -c '^From [0-9a-f]\{40\} Mon Sep 17 00:00:00 2001$' "$out/patchbridge.mbox")
git_mails=$(grep -c '^From [0-9a-f]\{40\} Mon Sep 17 00:00:00 2001$' "$out/git.mbox")
pb_size=$(wc -c <"$out/patchbridge.mbox")
git_size=$(wc -c <"$out/git.mbox")

echo
echo "format benchmark: $n commits (base..head), median of $reps runs"
echo "git: $(git --version | sed 's/git version //'), CPUs: $(nproc)"
printf '%-34s %10s %12s %8s %12s\n' command "median s" "peak RSS KiB" mails "mbox bytes"
printf '%-34s %10s %12s %8s %12s\n' "patchbridge format" "$pb_t" \
	"$pb_rss" "$pb_mails" "$pb_size"
printf '%-34s %10s %12s %8s %12s\n' "git format-patch --cover-letter" \
	"$git_t" "$git_rss" "$git_mails" "$git_size"
ratio=$(echo "$pb_t / $git_t" | bc -l)
printf 'ratio patchbridge / git: %.2f\n' "$ratio"
[ "$pb_mails" = "$git_mails" ] || {
	echo "format_bench: the two mboxes hold $pb_mails and $git_mails mails" >&2
	exit 1
}
