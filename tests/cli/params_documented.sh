#!/bin/sh
# Every configuration parameter is documented in the README.
#
#   params_documented.sh PATCHBRIDGE README.md
#   params_documented.sh --self-test PATCHBRIDGE README.md
#
# The parameters are what `patchbridge --list-params` prints (section.key,
# with "project" for what a [project "group/name"] section may set).  The
# documentation is the part of README.md between <!-- CONFIG-BEGIN --> and
# <!-- CONFIG-END -->.  A parameter counts as documented when a table row
# starting with "| `key` |" stands under the heading "### [section]" (for
# projects: "### [project ...]"); any other heading ends the section, so a
# key documented in the wrong table does not count.  Rows for parameters
# that do not exist (renamed, removed) fail the check as well.
#
# --self-test shows that the check can fail: a README made from
# `patchbridge --list-params --markdown` must pass, and the same with one
# row deleted, or with that row moved under another section, must fail
# naming the parameter.  The real README is also checked for its markers.
set -u

# documented README: print section.key for every documented row.
documented() {
	awk '
	/<!-- CONFIG-BEGIN -->/ { inside = 1; found = 1; next }
	/<!-- CONFIG-END -->/ { inside = 0; ended = 1; next }
	!inside { next }
	/^#/ {
		section = ""
		if (match($0, /^### \[[a-z_]+[] ]/))
			section = substr($0, 6, RLENGTH - 6)
		next
	}
	section != "" && match($0, /^\| `[a-z0-9_]+` \|/) {
		print section "." substr($0, 4, RLENGTH - 6)
	}
	END {
		if (!found || !ended)
			print "MISSING-MARKERS"
	}' "$1" | sort -u
}

# check PATCHBRIDGE README: 0 when every parameter is documented.
check() {
	tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/params_documented.XXXXXX") ||
		return 2
	"$1" --list-params | sort -u >"$tmp/params" || {
		echo "params_documented: $1 --list-params failed"
		rm -rf "$tmp"
		return 2
	}
	documented "$2" >"$tmp/documented"
	rc=0
	if grep -qx MISSING-MARKERS "$tmp/documented"; then
		echo "$2: no <!-- CONFIG-BEGIN --> ... <!-- CONFIG-END --> section"
		rc=1
	fi
	if [ ! -s "$tmp/params" ]; then
		echo "params_documented: no parameters listed"
		rc=1
	fi
	for p in $(comm -23 "$tmp/params" "$tmp/documented"); do
		echo "$2: undocumented parameter: $p" \
			"(want a \"| \`${p#*.}\` |\" row under \"### [${p%%.*}]\")"
		rc=1
	done
	for p in $(comm -13 "$tmp/params" "$tmp/documented" |
		grep -vx MISSING-MARKERS); do
		echo "$2: documented parameter that does not exist: $p"
		rc=1
	done
	rm -rf "$tmp"
	return $rc
}

self_test() {
	pb=$1
	readme=$2
	dir=$(mktemp -d "${PB_TEST_TMP:-/tmp}/params_selftest.XXXXXX") ||
		exit 2
	trap 'rm -rf "$dir"' EXIT
	bad=0

	{
		echo "# x"
		echo "<!-- CONFIG-BEGIN -->"
		"$pb" --list-params --markdown
		echo "<!-- CONFIG-END -->"
	} >"$dir/good.md"
	if ! check "$pb" "$dir/good.md" >"$dir/out"; then
		echo "self-test: the generated tables do not pass:"
		cat "$dir/out"
		bad=1
	fi

	# Delete [forge]'s timeout row ([smtp] and [milter] keep theirs).
	awk '/^### \[/ { s = $0 }
	     s == "### [forge]" && /^\| `timeout` \|/ { next }
	     { print }' "$dir/good.md" >"$dir/missing.md"
	if check "$pb" "$dir/missing.md" >"$dir/out"; then
		echo "self-test: a README without forge.timeout passed"
		bad=1
	elif ! grep -q 'undocumented parameter: forge.timeout ' "$dir/out"; then
		echo "self-test: forge.timeout not named:"
		cat "$dir/out"
		bad=1
	fi

	# Move that row into the [log] table: still undocumented for [forge],
	# and a [log] timeout does not exist.
	row=$(grep -m1 '^| `timeout` |' "$dir/good.md")
	awk -v row="$row" '{ print }
	     $0 == "### [log]" { print ""; print row }' \
		"$dir/missing.md" >"$dir/moved.md"
	if check "$pb" "$dir/moved.md" >"$dir/out"; then
		echo "self-test: a README with forge.timeout under [log] passed"
		bad=1
	elif ! grep -q 'undocumented parameter: forge.timeout ' "$dir/out" ||
		! grep -q 'does not exist: log.timeout' "$dir/out"; then
		echo "self-test: the moved row was not reported:"
		cat "$dir/out"
		bad=1
	fi

	# Without the markers nothing is documented.
	grep -v 'CONFIG-' "$dir/good.md" >"$dir/nomarkers.md"
	if check "$pb" "$dir/nomarkers.md" >/dev/null; then
		echo "self-test: a README without markers passed"
		bad=1
	fi

	if ! grep -q '<!-- CONFIG-BEGIN -->' "$readme" ||
		! grep -q '<!-- CONFIG-END -->' "$readme"; then
		echo "self-test: $readme lacks the CONFIG markers"
		bad=1
	fi
	[ $bad = 0 ] && echo "params_documented self-test: ok"
	exit $bad
}

if [ "${1:-}" = "--self-test" ]; then
	[ $# = 3 ] || { echo "usage: $0 --self-test PATCHBRIDGE README" >&2; exit 2; }
	self_test "$2" "$3"
fi
[ $# = 2 ] || { echo "usage: $0 PATCHBRIDGE README" >&2; exit 2; }
if check "$1" "$2"; then
	echo "params_documented: ok ($("$1" --list-params | wc -l) parameters)"
	exit 0
fi
exit 1
