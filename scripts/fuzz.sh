#!/bin/sh
# Build the libFuzzer targets with clang and run each for a bounded time,
# seeded from the test data.  A crash, leak, sanitizer report or timeout
# fails the run; findings are left in build-fuzz/findings/.
#   ./scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 30)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-30}
bdir=$top/build-fuzz
cd "$top"

echo "== fuzz: configure and build (clang)"
cmake -S "$top" -B "$bdir" -DCMAKE_C_COMPILER=clang -DPB_WERROR=ON \
	-DCMAKE_BUILD_TYPE=Debug >"$bdir.cmake.log" 2>&1 ||
	{ cat "$bdir.cmake.log"; exit 1; }
targets="fuzz_owners fuzz_mail fuzz_reply fuzz_trailers fuzz_header"
# shellcheck disable=SC2086
cmake --build "$bdir" -j "$(nproc)" --target $targets

d=$top/tests/data
seeds_for() {
	case $1 in
	fuzz_owners) echo "$d/owners" ;;
	fuzz_mail) echo "$d/corpus/replies $d/parse $d/parse/mail" ;;
	fuzz_header) echo "$top/tests/fuzz/header-seeds" ;;
	*) echo "$d/corpus/replies" ;;
	esac
}

rc=0
for t in $targets; do
	work=$bdir/corpus-$t
	findings=$bdir/findings/$t
	mkdir -p "$work" "$findings"
	echo "== fuzz: $t for ${secs}s"
	dict=
	[ -f "$top/tests/fuzz/$t.dict" ] && dict=-dict=$top/tests/fuzz/$t.dict
	# shellcheck disable=SC2046,SC2086
	if ! "$bdir/tests/fuzz/$t" $dict -max_total_time="$secs" -max_len=65536 \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$findings/" "$work" $(seeds_for "$t") \
		>"$bdir/$t.log" 2>&1; then
		echo "fuzz: $t FAILED; the last lines of $bdir/$t.log:"
		tail -40 "$bdir/$t.log"
		rc=1
	else
		grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' \
			"$bdir/$t.log" | tail -1 | sed "s/^/fuzz: $t: /"
	fi
done
[ $rc = 0 ] && echo "== fuzz: all targets ran clean"
exit $rc
