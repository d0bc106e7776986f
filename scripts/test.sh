#!/bin/sh
# The whole test suite, from a fresh clone, as root on Debian 12, in
# tiers (HACKING.md, "Building and testing by hand"):
#   1. install the Debian packages (scripts/install-deps.sh);
#   2. build as shipped (RelWithDebInfo, -Werror) and run the quick tier,
#      ctest -L quick: unit tests, golden files, the parser graded on the
#      corpus, layering;
#   3. build with AddressSanitizer + UndefinedBehaviorSanitizer (-Werror)
#      and run every test under them: the quick tier again, then the
#      simulator, client, milter, Postfix, install and end-to-end tests,
#      PB_TEST_JOBS at a time (default three times the cores: they mostly wait
#      on their peers and timers);
#      then print how many requests and responses the simulator checked
#      against GitLab's OpenAPI document;
#   4. build the libFuzzer targets and run each for FUZZ_SECONDS (default
#      20), seeded from tests/data (scripts/fuzz.sh).
# .ci/run runs exactly this.  Build trees: build-ci/, build-asan/ and
# build-fuzz/.  Each stage prints the wall time since the start and the
# CPU time used so far (on a shared machine the second says more); the
# last line says whether all passed.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
cores=$(nproc 2>/dev/null || echo 2)
jobs=${PB_TEST_JOBS:-$((3 * cores))}

"$top/scripts/install-deps.sh"

t0=$(date +%s)
cpu=$(mktemp)
trap 'rm -f "$cpu"' EXIT
stage() { # name: the wall time since the start, and the CPU time used
	times >"$cpu" # the builtin, in this shell: its children's user, system
	echo "== $1 ($(($(date +%s) - t0)) s since the start;" \
		"CPU user, system: $(tail -n 1 "$cpu"))"
}

build() { # dir cmake-args...
	name=$1
	shift
	stage "$name: configure and build"
	cmake -S "$top" -B "$top/$name" -DPB_WERROR=ON "$@" \
		>"$top/$name.cmake.log" 2>&1 ||
		{ cat "$top/$name.cmake.log"; return 1; }
	cmake --build "$top/$name" -j "$cores"
}

run_ctest() { # dir what ctest-args...
	dir=$1
	what=$2
	shift 2
	stage "$dir: ctest $what"
	(cd "$top/$dir" && ctest --output-on-failure "$@")
}

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS

rc=0
{ build build-ci -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
	run_ctest build-ci "-L quick" -L quick -j "$cores"; } || rc=1
{ build build-asan -DCMAKE_BUILD_TYPE=Debug -DPB_SANITIZE=ON &&
	run_ctest build-asan "-L quick" -L quick -j "$cores" &&
	run_ctest build-asan "-LE quick" -LE quick -j "$jobs"; } || rc=1
# Every request the bridge sent to the simulator and every response it
# gave, checked against GitLab's OpenAPI document (the CTest test
# openapi_conformance fails on a violation): the count.
stage "OpenAPI conformance"
/usr/bin/python3 "$top/tests/tools/openapi_report.py" \
	"$top/build-asan/openapi-reports" || rc=1
stage "fuzz"
"$top/scripts/fuzz.sh" "${FUZZ_SECONDS:-20}" || rc=1

stage "done"
if [ $rc = 0 ]; then
	echo "== all test suites passed"
else
	echo "== FAILED: see the output above"
fi
exit $rc
