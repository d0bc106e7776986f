#!/bin/sh
# Every metric is documented in the README, exactly as the code has it.
#
#   metrics_documented.sh PATCHBRIDGE README.md
#   metrics_documented.sh --self-test PATCHBRIDGE README.md
#
# The table between <!-- METRICS-BEGIN --> and <!-- METRICS-END --> must
# be what `patchbridge list-metrics --markdown` prints (generated from the
# table in bridge/core/metrics.c), and name every metric `patchbridge
# list-metrics` lists.  --self-test shows that the check fails, naming
# the metric, when a row is missing or out of date.
set -u

# table README: the lines between the markers ("MISSING-MARKERS" when
# they are not both there).
table() {
	awk '
	/<!-- METRICS-BEGIN -->/ { inside = 1; found = 1; next }
	/<!-- METRICS-END -->/ { inside = 0; ended = 1; next }
	inside { print }
	END { if (!found || !ended) print "MISSING-MARKERS" }' "$1"
}

# check PATCHBRIDGE README: 0 when the table is the generated one.
check() {
	tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/metrics_documented.XXXXXX") ||
		return 2
	"$1" list-metrics --markdown >"$tmp/want" &&
		"$1" list-metrics >"$tmp/names" || {
		echo "metrics_documented: $1 list-metrics failed"
		rm -rf "$tmp"
		return 2
	}
	table "$2" >"$tmp/have"
	rc=0
	if grep -qx MISSING-MARKERS "$tmp/have"; then
		echo "$2: no <!-- METRICS-BEGIN --> ... <!-- METRICS-END -->"
		rc=1
	elif [ ! -s "$tmp/names" ]; then
		echo "metrics_documented: no metrics listed"
		rc=1
	else
		while read -r name; do
			grep -q "^| \`$name\` |" "$tmp/have" ||
				{ echo "$2: undocumented metric: $name"; rc=1; }
		done <"$tmp/names"
		if ! cmp -s "$tmp/want" "$tmp/have"; then
			echo "$2: the metrics table differs from" \
				"\`patchbridge list-metrics --markdown\`" \
				"(< generated, > README):"
			diff "$tmp/want" "$tmp/have" | grep '^[<>]'
			rc=1
		fi
	fi
	rm -rf "$tmp"
	return $rc
}

self_test() {
	dir=$(mktemp -d "${PB_TEST_TMP:-/tmp}/metrics_selftest.XXXXXX") ||
		exit 2
	trap 'rm -rf "$dir"' EXIT
	bad=0
	check "$1" "$2" >"$dir/out" ||
		{ echo "self-test: the README does not pass:"; cat "$dir/out"; bad=1; }
	grep -v '^| `patchbridge_naks_total` |' "$2" >"$dir/missing.md"
	if check "$1" "$dir/missing.md" >"$dir/out"; then
		echo "self-test: a README without patchbridge_naks_total passed"
		bad=1
	elif ! grep -q 'undocumented metric: patchbridge_naks_total$' \
		"$dir/out"; then
		echo "self-test: the missing metric was not named:"
		cat "$dir/out"
		bad=1
	fi
	sed 's/^\(| `patchbridge_naks_total` |.*\)NAKs/\1Naks/' "$2" \
		>"$dir/stale.md"
	if check "$1" "$dir/stale.md" >/dev/null; then
		echo "self-test: a README with a stale row passed"
		bad=1
	fi
	grep -v 'METRICS-' "$2" >"$dir/nomarkers.md"
	if check "$1" "$dir/nomarkers.md" >/dev/null; then
		echo "self-test: a README without markers passed"
		bad=1
	fi
	[ $bad = 0 ] && echo "metrics_documented self-test: ok"
	exit $bad
}

if [ "${1:-}" = "--self-test" ]; then
	[ $# = 3 ] || { echo "usage: $0 --self-test PATCHBRIDGE README" >&2; exit 2; }
	self_test "$2" "$3"
fi
[ $# = 2 ] || { echo "usage: $0 PATCHBRIDGE README" >&2; exit 2; }
if check "$1" "$2"; then
	echo "metrics_documented: ok ($("$1" list-metrics | wc -l) metrics)"
	exit 0
fi
exit 1
