#!/bin/bash
# static_front.sh SRC_DIR FRONT
#
# The build option -DPB_STATIC_FRONT=ON (bridge/cmd/CMakeLists.txt): a
# tree configured with it, and only the front built, must
#   1. load neither GMime nor GLib, GObject or GIO as shared objects
#      (they are linked in), nor anything the shared front does not;
#   2. print, for every mail of the corpus, byte for byte what FRONT (the
#      shared build's front) prints, and the same --version;
#   3. configure with the same warnings-as-errors as CI.
set -u
export LC_ALL=C
unset PATCHBRIDGE_CONFIG
[ $# -eq 2 ] || {
	echo "usage: $0 SRC_DIR FRONT" >&2
	exit 2
}
src=$1
front=$2
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/static_front.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() {
	echo "FAIL: $*" >&2
	failed=1
}

# Configured afresh (no sanitizer, whatever the tree this test runs in).
if ! cmake -S "$src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DPB_STATIC_FRONT=ON -DPB_TESTS=OFF -DPB_WERROR=ON \
	>"$tmp/configure.log" 2>&1; then
	tail -20 "$tmp/configure.log" >&2
	echo "FAIL: configuring with -DPB_STATIC_FRONT=ON" >&2
	exit 1
fi
if ! cmake --build "$tmp/build" -j2 --target patchbridge \
	>"$tmp/build.log" 2>&1; then
	grep -E "error|undefined" "$tmp/build.log" | head -20 >&2
	echo "FAIL: building the static front" >&2
	exit 1
fi
pb=$tmp/build/bridge/patchbridge

# 1. what it loads
loads() {
	ldd "$1" | awk '{ print $1 }' | sed 's#.*/##' | sort
}
shared=$(loads "$pb" | grep -E '^lib(gmime|glib|gobject|gio|gmodule|gpgme|assuan)-?[0-9.]*\.so')
[ -z "$shared" ] || fail "the static front loads $(echo $shared)"
extra=$(comm -23 <(loads "$pb") <(loads "$front"))
[ -z "$extra" ] || fail "the static front loads what the shared one does not: $(echo $extra)"
echo "static front loads $(loads "$pb" | wc -l) objects, the shared one $(loads "$front" | wc -l)"

# 2. the same output
mapfile -t mails < <(find "$src/tests/data/corpus" -name '*.eml' -type f | sort)
[ ${#mails[@]} -gt 100 ] || fail "the corpus is missing under $src/tests/data/corpus"
"$pb" parse "${mails[@]}" >"$tmp/static.jsonl" 2>"$tmp/static.err"
rs=$?
"$front" parse "${mails[@]}" >"$tmp/shared.jsonl" 2>"$tmp/shared.err"
rd=$?
[ $rs -eq $rd ] || fail "exit $rs against the shared front's $rd"
cmp -s "$tmp/static.jsonl" "$tmp/shared.jsonl" ||
	fail "parse of the corpus differs from the shared front's"
cmp -s "$tmp/static.err" "$tmp/shared.err" ||
	fail "parse's messages differ from the shared front's"
"$pb" parse "${mails[0]}" >"$tmp/one.json" &&
	"$front" parse "${mails[0]}" | cmp -s - "$tmp/one.json" ||
	fail "parse FILE differs from the shared front's"
[ "$("$pb" --version)" = "$("$front" --version)" ] ||
	fail "--version differs: $("$pb" --version)"

[ $failed -eq 0 ] && echo "static_front: ok (${#mails[@]} mails)"
exit $failed
