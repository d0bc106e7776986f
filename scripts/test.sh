#!/bin/sh
# The whole test suite, from a fresh clone, as root on Debian 12:
#   1. install the Debian packages (scripts/install-deps.sh),
#   2. build with -Werror and run CTest, and print how many requests and
#      responses were checked against GitLab's OpenAPI document,
#   3. build the libFuzzer targets with clang and run each for
#      FUZZ_SECONDS (default 30) seeded from tests/data,
#   4. build with AddressSanitizer + UndefinedBehaviorSanitizer and run
#      CTest again (the Python-only simulator tests are skipped there:
#      they exercise no C code).
# .ci/run runs exactly this.  Build trees: build-ci/, build-asan/ and
# build-fuzz/.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc 2>/dev/null || echo 2)

"$top/scripts/install-deps.sh"

run_suite() { # name cmake-args... ; ctest args come from $CTEST_ARGS
	name=$1
	shift
	echo "== $name: configure and build"
	cmake -S "$top" -B "$top/$name" -DPB_WERROR=ON "$@" >"$top/$name.cmake.log" 2>&1 ||
		{ cat "$top/$name.cmake.log"; return 1; }
	cmake --build "$top/$name" -j "$jobs"
	echo "== $name: ctest"
	# shellcheck disable=SC2086
	(cd "$top/$name" && ctest --output-on-failure -j "$jobs" $CTEST_ARGS)
}

rc=0
CTEST_ARGS="" run_suite build-ci -DCMAKE_BUILD_TYPE=RelWithDebInfo || rc=1
# Every request the bridge sent to the simulator and every response it
# gave, checked against GitLab's OpenAPI document (the CTest test
# openapi_conformance fails on a violation): the count.
echo "== OpenAPI conformance"
/usr/bin/python3 "$top/tests/tools/openapi_report.py" \
	"$top/build-ci/openapi-reports" || rc=1
"$top/scripts/fuzz.sh" "${FUZZ_SECONDS:-30}" || rc=1
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS
CTEST_ARGS="-LE forgesim|slow" run_suite build-asan -DCMAKE_BUILD_TYPE=Debug \
	-DPB_SANITIZE=ON || rc=1

if [ $rc = 0 ]; then
	echo "== all test suites passed"
else
	echo "== FAILED: see the output above"
fi
exit $rc
