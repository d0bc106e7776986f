#!/bin/sh
# parse_golden.sh PATCHBRIDGE DATA_DIR
#
# The golden parse cases of tests/data/parse through the command line, as
# a user (and the corpus grader) runs it: for every NAME.eml,
#   patchbridge parse NAME.eml [--patch PARENT] [--thread MAIL...]
# (PARENT named in NAME.parent, the thread's mails in NAME.thread, one a
# line) must print exactly NAME.json.  test_review compares the same
# files through the library; this shows the options and the output path.
set -u
export LC_ALL=C
[ $# -eq 2 ] || {
	echo "usage: $0 PATCHBRIDGE DATA_DIR" >&2
	exit 2
}
pb=$1
dir=$2
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/parse_golden.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0
n=0
for eml in "$dir"/*.eml; do
	name=${eml%.eml}
	[ -f "$name.json" ] || continue
	set -- "$eml"
	if [ -f "$name.parent" ]; then
		set -- "$@" --patch "$dir/$(cat "$name.parent")"
	fi
	if [ -f "$name.thread" ]; then
		while read -r mail; do
			[ -n "$mail" ] && set -- "$@" --thread "$dir/$mail"
		done <"$name.thread"
	fi
	if ! "$pb" parse "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL: parse ${eml##*/}: exit $?: $(cat "$tmp/err")" >&2
		failed=1
	elif ! cmp -s "$tmp/out" "$name.json"; then
		echo "FAIL: ${eml##*/}: the output differs from ${name##*/}.json:" >&2
		diff -u "$name.json" "$tmp/out" | head -40 >&2
		failed=1
	fi
	n=$((n + 1))
done
[ "$n" -gt 0 ] || {
	echo "FAIL: no golden case in $dir" >&2
	exit 1
}
[ $failed = 0 ] && echo "parse_golden: $n cases"
exit $failed
