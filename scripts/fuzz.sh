#!/bin/sh
# Build the libFuzzer targets and run each for a bounded time, seeded
# from the test data (tests/fuzz/README.md).
#
#   ./scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 20: CI's short run)
#
# The build is optimised (RelWithDebInfo: -O2 -g) with AddressSanitizer
# and UndefinedBehaviorSanitizer over every module the targets reach, and
# with libFuzzer's coverage instrumentation over all of it
# (-fsanitize=fuzzer-no-link), not only over the module under test.
# Each target gets its dictionary (tests/fuzz/dict/, joined per target)
# and the input size that fits what it parses.
#
# Environment:
#   FUZZ_TARGETS   the targets to run (default: all five)
#   FUZZ_PARALLEL  how many targets run at once (default: the cores)
#   FUZZ_BUILD     the build tree (default build-fuzz/)
#
# A longer campaign, one target at a time and at low priority on a
# shared machine:
#   FUZZ_PARALLEL=1 nice -n 19 ./scripts/fuzz.sh 600
# The work corpus of each target stays in BUILD/corpus-TARGET/, so the
# next run goes on from it.  A crash, leak, sanitizer report or timeout
# fails the run; the input that caused it is left in
# BUILD/findings/TARGET/ and the last lines of BUILD/TARGET.log are shown.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-20}
bdir=${FUZZ_BUILD:-$top/build-fuzz}
targets=${FUZZ_TARGETS:-fuzz_owners fuzz_mail fuzz_reply fuzz_trailers fuzz_header fuzz_notice fuzz_patatt}
parallel=${FUZZ_PARALLEL:-$(nproc 2>/dev/null || echo 2)}
cd "$top"

echo "== fuzz: configure and build (clang, -O2, ASan + UBSan)"
cmake -S "$top" -B "$bdir" -DCMAKE_C_COMPILER=clang -DPB_WERROR=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DPB_SANITIZE=ON \
	-DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >"$bdir.cmake.log" 2>&1 ||
	{ cat "$bdir.cmake.log"; exit 1; }
# shellcheck disable=SC2086
cmake --build "$bdir" -j "$(nproc)" --target $targets

d=$top/tests/data
dicts=$top/tests/fuzz/dict
# target: seeds, dictionary parts, max_len.  The sizes: owners.yaml files
# are a few KiB (the seeds at most 4); a whole reply mail is about 8 KiB
# (the corpus median) with headers and MIME around its text, and the bugs
# of a MIME or RFC 2047 parser show in far less; fuzz_reply reads a
# reply's text, an own paragraph or two around a quoted hunk; trailer
# blocks, subjects and Authentication-Results fields are a line or a few.
# Longer inputs only slow the search down.
seeds_for() {
	case $1 in
	fuzz_owners) echo "$d/owners" ;;
	fuzz_mail) echo "$d/corpus/replies $d/parse $d/parse/mail" ;;
	fuzz_header) echo "$top/tests/fuzz/header-seeds" ;;
	fuzz_patatt) echo "$d/patatt" ;;
	*) echo "$d/corpus/replies" ;;
	esac
}
dict_for() {
	case $1 in
	fuzz_owners) echo owners ;;
	fuzz_mail) echo mime rfc2047 quote diff trailers subject authres ;;
	fuzz_reply) echo quote diff trailers ;;
	fuzz_trailers) echo trailers subject authres rfc2047 ;;
	fuzz_header) echo header rfc2047 subject ;;
	fuzz_notice) echo notice ;;
	fuzz_patatt) echo patatt rfc2047 ;;
	esac
}
max_len_for() {
	case $1 in
	fuzz_owners) echo 4096 ;;
	fuzz_mail) echo 16384 ;;
	fuzz_reply) echo 8192 ;;
	fuzz_trailers) echo 2048 ;;
	fuzz_header) echo 2048 ;;
	fuzz_notice) echo 4096 ;;
	fuzz_patatt) echo 16384 ;;
	esac
}

# A smaller quarantine than ASan's 256 MiB: a freed block is still held
# back for the rest of the input, and a run no longer page-faults its way
# through fresh memory (a third faster on fuzz_reply).
ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=32}
export ASAN_OPTIONS

run_one() { # target: 0 when clean
	t=$1
	work=$bdir/corpus-$t
	findings=$bdir/findings/$t
	dict=$bdir/$t.dict
	mkdir -p "$work" "$findings"
	: >"$dict"
	for part in $(dict_for "$t"); do
		cat "$dicts/$part.dict" >>"$dict"
	done
	# shellcheck disable=SC2046
	"$bdir/tests/fuzz/$t" -max_total_time="$secs" \
		-max_len="$(max_len_for "$t")" -dict="$dict" \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$findings/" "$work" $(seeds_for "$t") \
		>"$bdir/$t.log" 2>&1
}

report() { # target status
	if [ "$2" != 0 ]; then
		echo "fuzz: $1 FAILED; the last lines of $bdir/$1.log:"
		tail -40 "$bdir/$1.log"
		return 1
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$bdir/$1.log")
	per=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$bdir/$1.log")
	cov=$(grep -E '^#[0-9]+' "$bdir/$1.log" | tail -1 |
		sed -n 's/.* cov: \([0-9]*\) .*/\1/p')
	echo "fuzz: $1: $runs runs in ${secs}s, $per exec/s, coverage $cov"
}

rc=0
# shellcheck disable=SC2086
set -- $targets
while [ $# -gt 0 ]; do
	started=""
	n=0
	while [ $# -gt 0 ] && [ $n -lt "$parallel" ]; do
		echo "== fuzz: $1 for ${secs}s"
		run_one "$1" &
		started="$started $1:$!"
		n=$((n + 1))
		shift
	done
	for tp in $started; do
		st=0
		wait "${tp#*:}" || st=$?
		report "${tp%%:*}" "$st" || rc=1
	done
done
[ $rc = 0 ] && echo "== fuzz: all targets ran clean"
exit $rc
