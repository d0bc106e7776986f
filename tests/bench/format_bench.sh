#!/bin/sh
# format_bench.sh [-r REPS] [--before OLD] [--attest DRIVER] [--repo GITDIR
#                 --base REV --head REV] [--generated COMMITS] PATCHBRIDGE
#
# Benchmark of the outbound renderer: `patchbridge format --max-series
# 9999 -o -` against `git format-patch --cover-letter --stdout` on the
# same range of a real history, interleaved in one run (patchbridge, git,
# patchbridge, git, ...), so that both see the same load.  Prints, for
# each command, the median wall-clock time, the median user and system
# CPU time, the largest peak resident set size, the mails and the mbox
# bytes; then the ratio of the medians and the median of the per-round
# ratios, and the load average at the start and at the end.
#
# The history: by default this repository's own, from its first commit
# a31311f to 3a875bc (813 commits, 727 of them no merge: 728 mails with
# the cover letter, about 15 MB).  git.git's history is not at hand
# offline; this one is real (code, documentation, renames, a few binary
# files) and every clone holding 3a875bc has it.  It is cloned once
# (`git clone --bare --no-local`: one pack, as a fetched mirror has it)
# into $PB_BENCH_DIR (default ${TMPDIR:-/tmp}/pb-bench-history.git).  In
# a tree without that history (a shallow clone, a tarball) give --repo,
# --base and --head, or --generated COMMITS for the synthetic repository
# of tests/outbound/make-repo.sh bench.
#
#   -r REPS         rounds (default 7); the table shows medians
#   --before OLD    another patchbridge (an older build) timed in the same
#                   rounds; its mbox must equal PATCHBRIDGE's byte for
#                   byte (both run with a fixed --date and --project)
#   --repo GITDIR   a repository to read instead (with --base, --head)
#   --generated N   the generated repository of N commits instead
#   --attest DRIVER also `format --attest-key` (a key made with
#                   attest-key --generate) in the same rounds, its ratios
#                   to git and to the unsigned run; then DRIVER
#                   (attest_driver) times the signature alone per mail
#
# Needs GNU time (/usr/bin/time) for CPU and memory; without it those
# columns say n/a.  Registered with CTest under the label "bench" when
# configured with -DPB_BENCH=ON (tests/bench/CMakeLists.txt): it fails
# only if a command fails or the mboxes disagree, never on timings.
set -eu
reps=7
before=
repo=
base=
head=
generated=
attest=
while [ $# -gt 1 ]; do
	case $1 in
	-r) reps=$2; shift 2 ;;
	--before) before=$(realpath "$2"); shift 2 ;;
	--repo) repo=$2; shift 2 ;;
	--base) base=$2; shift 2 ;;
	--head) head=$2; shift 2 ;;
	--generated) generated=$2; shift 2 ;;
	--attest) attest=$(realpath "$2"); shift 2 ;;
	*) echo "format_bench: unknown option $1" >&2; exit 2 ;;
	esac
done
[ $# -eq 1 ] || {
	sed -n '2,4p' "$0" >&2
	exit 2
}
pb=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
export HOME="${TMPDIR:-/tmp}/pb-bench-home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
mkdir -p "$HOME"
out=$(mktemp -d "${TMPDIR:-/tmp}/pb-bench-out.XXXXXX")
trap 'rm -rf "$out"' EXIT

# The range of this repository's history the table in README.md is for.
hist_base=a31311f5c1bd6c96d04ba980ea198970b4cd01bd
hist_head=3a875bc50b2fb7ae49ee65fa9d32991e05a37fbd

if [ -n "$generated" ]; then
	repo=${PB_BENCH_DIR:-${TMPDIR:-/tmp}/pb-bench-$generated}
	base=base
	head=head
	if ! git -C "$repo" rev-parse -q --verify head >/dev/null 2>&1; then
		echo "building a repository with $generated commits in $repo ..."
		sh "$here/../outbound/make-repo.sh" bench "$repo" \
			"$generated" >/dev/null
	fi
elif [ -z "$repo" ]; then
	repo=${PB_BENCH_DIR:-${TMPDIR:-/tmp}/pb-bench-history.git}
	base=$hist_base
	head=$hist_head
	if ! git -C "$repo" cat-file -e "$head^{commit}" 2>/dev/null; then
		src=$(git -C "$here" rev-parse --path-format=absolute \
			--git-common-dir 2>/dev/null) || src=
		if [ -z "$src" ] ||
		   ! git -C "$src" cat-file -e "$head^{commit}" 2>/dev/null ||
		   ! git -C "$src" cat-file -e "$base^{commit}" 2>/dev/null; then
			echo "format_bench: no history up to ${hist_head%${hist_head#????????????}} here;" \
				"use --repo/--base/--head or --generated N" >&2
			exit 2
		fi
		echo "cloning $src into $repo ..."
		rm -rf "$repo"
		git clone -q --bare --no-local "$src" "$repo"
		git -C "$repo" cat-file -e "$head^{commit}"
	fi
fi
[ -n "$base" ] && [ -n "$head" ] || {
	echo "format_bench: --repo needs --base and --head" >&2
	exit 2
}
n=$(git -C "$repo" rev-list --no-merges --count "$base..$head")

gnutime=
if [ -x /usr/bin/time ] && /usr/bin/time -f %M true 2>/dev/null; then
	gnutime=/usr/bin/time
fi
now() { date +%s.%N; }
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a; }

# run NAME CMD...: one timed run; appends "wall user sys rss" to
# $out/NAME.runs and leaves the mbox in $out/NAME.mbox.
run() {
	name=$1
	shift
	t0=$(now)
	if [ -n "$gnutime" ]; then
		$gnutime -f '%U %S %M' -o "$out/$name.tv" "$@" >"$out/$name.mbox"
	else
		"$@" >"$out/$name.mbox"
		echo "n/a n/a n/a" >"$out/$name.tv"
	fi
	t1=$(now)
	echo "$(echo "$t1 - $t0" | bc -l) $(tail -n 1 "$out/$name.tv")" \
		>>"$out/$name.runs"
}

# run_pb NAME BIN [ARGS]: one timed run of BIN format.
run_pb() {
	name=$1
	bin=$2
	shift 2
	run "$name" "$bin" format --repo "$repo" --base "$base" \
		--head "$head" --max-series 9999 --date 1700000000 \
		--project bench "$@" -o -
}
names="patchbridge git"
[ -n "$before" ] && names="patchbridge before git"
if [ -n "$attest" ]; then
	names="patchbridge attested${before:+ before} git"
	(umask 077 && "$pb" attest-key --generate --identity \
		bench@example.org "$out/bench.key" >/dev/null)
fi

load0=$(load)
i=0
while [ $i -lt "$reps" ]; do
	run_pb patchbridge "$pb"
	[ -z "$attest" ] || run_pb attested "$pb" --attest-key "$out/bench.key"
	[ -z "$before" ] || run_pb before "$before"
	run git git -C "$repo" format-patch --cover-letter --stdout \
		"$base..$head"
	i=$((i + 1))
done
load1=$(load)

# median FILE COLUMN
median() {
	cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 }
		END { if (v[1] == "n/a") { print "n/a"; exit }
		      if (NR % 2) m = v[(NR + 1) / 2];
		      else m = (v[NR / 2] + v[NR / 2 + 1]) / 2;
		      printf "%.3f\n", m }'
}
maxrss() {
	cut -d' ' -f4 "$1" | sort -n | tail -n 1 | awk '
		$1 == "n/a" { print "n/a"; exit }
		{ printf "%.1f\n", $1 / 1024 }'
}
mails() {
	grep -c '^From [0-9a-f]\{40\} Mon Sep 17 00:00:00 2001$' "$1" || true
}

echo
echo "format benchmark: $n commits ($base..$head in $repo)," \
	"$reps interleaved rounds"
echo "git: $(git --version | sed 's/git version //'), CPUs: $(nproc)," \
	"load average at start: $load0, at end: $load1"
printf '%-20s %10s %8s %8s %14s %6s %10s\n' command "wall s" "user s" \
	"sys s" "peak RSS MiB" mails "mbox bytes"
for name in $names; do
	printf '%-20s %10s %8s %8s %14s %6s %10s\n' "$name" \
		"$(median "$out/$name.runs" 1)" "$(median "$out/$name.runs" 2)" \
		"$(median "$out/$name.runs" 3)" "$(maxrss "$out/$name.runs")" \
		"$(mails "$out/$name.mbox")" "$(wc -c <"$out/$name.mbox")"
done
# ratio A B COLUMN: of the medians; 0 when B's is 0 (too short to time).
ratio() {
	echo "d = $(median "$out/$2.runs" "$3")
		if (d == 0) 0 else $(median "$out/$1.runs" "$3") / d" | bc -l
}
# The median of the per-round ratios: steadier than the ratio of the
# medians when the load moves during the run.
round_ratio() {
	paste -d' ' "$out/$1.runs" "$out/$2.runs" |
		awk '{ print $1 / $5 }' | sort -n | awk '{ v[NR] = $1 }
		END { if (NR % 2) m = v[(NR + 1) / 2];
		      else m = (v[NR / 2] + v[NR / 2 + 1]) / 2;
		      printf "%.2f\n", m }'
}
printf 'ratio patchbridge / git: wall %.2f (per-round median %s)' \
	"$(ratio patchbridge git 1)" "$(round_ratio patchbridge git)"
[ -z "$gnutime" ] || printf ', user %.2f' "$(ratio patchbridge git 2)"
echo
if [ -n "$attest" ]; then
	printf 'ratio attested / git: wall %.2f (per-round median %s)' \
		"$(ratio attested git 1)" "$(round_ratio attested git)"
	[ -z "$gnutime" ] || printf ', user %.2f' "$(ratio attested git 2)"
	echo
	printf 'ratio attested / patchbridge: wall %.2f (per-round median %s)' \
		"$(ratio attested patchbridge 1)" \
		"$(round_ratio attested patchbridge)"
	[ -z "$gnutime" ] || printf ', user %.2f' \
		"$(ratio attested patchbridge 2)"
	echo
	s=$(grep -c '^X-Developer-Signature: ' "$out/attested.mbox") || true
	[ "$s" = "$(mails "$out/patchbridge.mbox")" ] || {
		echo "format_bench: $s of the mails are signed" >&2
		exit 1
	}
	echo "the signature alone (attest_driver, in one process):"
	"$attest" "$out/patchbridge.mbox" 5
fi
if [ -n "$before" ]; then
	printf 'ratio patchbridge / before: wall %.2f (per-round median %s)' \
		"$(ratio patchbridge before 1)" \
		"$(round_ratio patchbridge before)"
	[ -z "$gnutime" ] || printf ', user %.2f' \
		"$(ratio patchbridge before 2)"
	echo
	if cmp -s "$out/patchbridge.mbox" "$out/before.mbox"; then
		echo "patchbridge and before: the same bytes"
	else
		echo "format_bench: patchbridge and before differ" >&2
		exit 1
	fi
fi
[ "$(mails "$out/patchbridge.mbox")" = "$(mails "$out/git.mbox")" ] || {
	echo "format_bench: patchbridge and git wrote different numbers of mails" >&2
	exit 1
}
