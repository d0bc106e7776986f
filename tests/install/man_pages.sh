#!/bin/sh
# The manual pages render cleanly and say what the program does.
#
#   man_pages.sh PATCHBRIDGE MANDIR
#   man_pages.sh --self-test PATCHBRIDGE MANDIR
#
# MANDIR is the build's man/ directory (patchbridge.8,
# patchbridge-milter.8, patchbridge.conf.5 as they will be installed).
#
#  1. each page renders with `man -l` and `groff -ww -z -man` without a
#     single warning on stderr
#  2. every parameter `PATCHBRIDGE list-params` prints has a paragraph
#     in patchbridge.conf(5): a ".TP" whose tag starts with the key in
#     bold, under the ".SS [section]" it belongs to ("[project ...]" for
#     what a project section may set); paragraphs of parameters that do
#     not exist fail too
#  3. the COMMANDS section of patchbridge(8) names exactly the commands
#     `PATCHBRIDGE help` lists
#  4. every metric `PATCHBRIDGE list-metrics` prints has a paragraph in
#     the METRICS section of patchbridge.conf(5), and no other does
#
# --self-test shows that 2, 3 and 4 can fail: a conf page with one
# parameter or metric paragraph deleted, and a patchbridge(8) with one
# command deleted, must each fail, naming what is missing.
set -u

# params PAGE: print section.key for every parameter paragraph.
params() {
	awk '
	/^\.SH/ { inside = ($0 ~ /^\.SH "?PARAMETERS"?$/); section = ""; next }
	!inside { next }
	/^\.SS/ {
		section = ""
		if (match($0, /\[[a-z_]+[] ]/))
			section = substr($0, RSTART + 1, RLENGTH - 2)
		next
	}
	/^\.TP/ { tag = 1; next }
	tag {
		tag = 0
		if (section != "" && match($0, /^(\\&)?\\fB[a-z0-9_]+\\f[RP]/)) {
			s = substr($0, RSTART, RLENGTH)
			sub(/^(\\&)?\\fB/, "", s)
			sub(/\\f[RP]$/, "", s)
			print section "." s
		}
	}' "$1" | sort -u
}

# metrics PAGE: the metric names of the METRICS section's paragraphs.
metrics() {
	awk '
	/^\.SH/ { inside = ($0 ~ /^\.SH "?METRICS"?$/); next }
	!inside { next }
	/^\.TP/ { tag = 1; next }
	tag {
		tag = 0
		if (match($0, /^(\\&)?\\fB[a-z0-9_]+\\f[RP]/)) {
			s = substr($0, RSTART, RLENGTH)
			sub(/^(\\&)?\\fB/, "", s)
			sub(/\\f[RP]$/, "", s)
			print s
		}
	}' "$1" | sort -u
}

# check_metrics PATCHBRIDGE CONFPAGE
check_metrics() {
	"$1" list-metrics | sort -u >"$tmp/met_want" || {
		echo "$1 list-metrics failed"
		return 2
	}
	metrics "$2" >"$tmp/met_have"
	[ -s "$tmp/met_want" ] || { echo "no metrics listed"; return 1; }
	if ! cmp -s "$tmp/met_want" "$tmp/met_have"; then
		echo "$2: METRICS differ from \`patchbridge list-metrics\`" \
			"(< list, > page):"
		diff "$tmp/met_want" "$tmp/met_have" | grep '^[<>]'
		return 1
	fi
	return 0
}

# commands PAGE: the command names of the COMMANDS section.
commands() {
	awk '
	/^\.SH/ { inside = ($0 ~ /^\.SH "?COMMANDS"?$/); next }
	!inside { next }
	/^\.TP/ { tag = 1; next }
	tag {
		tag = 0
		if (match($0, /^\\fB[a-z\\-]+\\f[RP]/)) {
			s = substr($0, 4, RLENGTH - 6)
			gsub(/\\-/, "-", s)
			print s
		}
	}' "$1" | sort -u
}

# render PAGE: 0 when man and groff print nothing on stderr.
render() {
	err=$(MANWIDTH=80 man -l "$1" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -ne 0 ] || [ -n "$err" ]; then
		echo "$1: man -l exited $rc: $err"
		return 1
	fi
	err=$(groff -ww -z -man "$1" 2>&1)
	if [ -n "$err" ]; then
		echo "$1: groff warnings:"
		echo "$err"
		return 1
	fi
	return 0
}

# check_params PATCHBRIDGE CONFPAGE
check_params() {
	"$1" list-params | sort -u >"$tmp/want" || {
		echo "$1 list-params failed"
		return 2
	}
	params "$2" >"$tmp/have"
	[ -s "$tmp/want" ] || { echo "no parameters listed"; return 1; }
	rc=0
	missing=$(comm -23 "$tmp/want" "$tmp/have")
	extra=$(comm -13 "$tmp/want" "$tmp/have")
	if [ -n "$missing" ]; then
		echo "$2: parameters missing from patchbridge.conf(5):"
		echo "$missing" | sed 's/^/  /'
		rc=1
	fi
	if [ -n "$extra" ]; then
		echo "$2: paragraphs for parameters that do not exist:"
		echo "$extra" | sed 's/^/  /'
		rc=1
	fi
	return $rc
}

# check_commands PATCHBRIDGE PAGE
check_commands() {
	"$1" help | awk '/^Commands:/ { on = 1; next }
		on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }' |
		sort -u >"$tmp/cmds_want"
	commands "$2" >"$tmp/cmds_have"
	[ -s "$tmp/cmds_want" ] || { echo "patchbridge help lists no commands"; return 1; }
	if ! cmp -s "$tmp/cmds_want" "$tmp/cmds_have"; then
		echo "$2: COMMANDS differ from \`patchbridge help\` (< help, > page):"
		diff "$tmp/cmds_want" "$tmp/cmds_have" | grep '^[<>]'
		return 1
	fi
	return 0
}

selftest=0
if [ "${1:-}" = --self-test ]; then
	selftest=1
	shift
fi
if [ $# -ne 2 ]; then
	echo "usage: $0 [--self-test] PATCHBRIDGE MANDIR" >&2
	exit 2
fi
pb=$1
mandir=$2
for t in man groff awk comm; do
	command -v $t >/dev/null 2>&1 || { echo "$t is not installed: skipped"; exit 77; }
done
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/man_pages.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

if [ $selftest -eq 1 ]; then
	fail=0
	check_params "$pb" "$mandir/patchbridge.conf.5" >/dev/null ||
		{ echo "self-test: the real page does not pass"; exit 1; }
	# Delete the paragraph of [forge] timeout (.TP, tag, description).
	awk '/^\.SS "\[forge\]"/ { s = 1 } /^\.SS/ && !/forge/ { s = 0 }
	     s && /^\.TP/ { getline tag; if (tag ~ /fBtimeout\\f/) { getline; next }
	                    print; print tag; next } { print }' \
		"$mandir/patchbridge.conf.5" >"$tmp/broken.5"
	if out=$(check_params "$pb" "$tmp/broken.5"); then
		echo "self-test: a page without [forge] timeout passed"
		fail=1
	elif ! echo "$out" | grep -qx '  forge.timeout'; then
		echo "self-test: the failure does not name forge.timeout: $out"
		fail=1
	else
		echo "self-test: missing parameter detected: $(echo "$out" | tr '\n' ' ')"
	fi
	render "$tmp/broken.5" >/dev/null || { echo "self-test: broken page does not render"; fail=1; }
	# Delete the paragraph of patchbridge_naks_total.
	awk '/^\.TP/ { getline tag; if (tag ~ /fBpatchbridge_naks_total\\f/) { getline; next }
	                print; print tag; next } { print }' \
		"$mandir/patchbridge.conf.5" >"$tmp/nometric.5"
	if out=$(check_metrics "$pb" "$tmp/nometric.5"); then
		echo "self-test: a page without patchbridge_naks_total passed"
		fail=1
	elif ! echo "$out" | grep -qx '< patchbridge_naks_total'; then
		echo "self-test: the failure does not name the metric: $out"
		fail=1
	else
		echo "self-test: missing metric detected"
	fi
	# Delete the "status" command from patchbridge(8).
	awk '/^\.TP/ { getline tag; if (tag ~ /^\\fBstatus\\fR/) { skip = 1; next }
	               skip = 0; print; print tag; next }
	     /^\.(TP|SH)/ { skip = 0 } !skip { print }' \
		"$mandir/patchbridge.8" >"$tmp/broken.8"
	if out=$(check_commands "$pb" "$tmp/broken.8"); then
		echo "self-test: a page without the status command passed"
		fail=1
	elif ! echo "$out" | grep -qx '< status'; then
		echo "self-test: the failure does not name status: $out"
		fail=1
	else
		echo "self-test: missing command detected"
	fi
	exit $fail
fi

rc=0
for page in patchbridge.8 patchbridge-milter.8 patchbridge.conf.5; do
	if render "$mandir/$page"; then
		echo "$page: renders without warnings"
	else
		rc=1
	fi
done
if check_params "$pb" "$mandir/patchbridge.conf.5"; then
	echo "patchbridge.conf.5: all $(wc -l <"$tmp/want") parameters documented"
else
	rc=1
fi
if check_metrics "$pb" "$mandir/patchbridge.conf.5"; then
	echo "patchbridge.conf.5: all $(wc -l <"$tmp/met_want") metrics documented"
else
	rc=1
fi
if check_commands "$pb" "$mandir/patchbridge.8"; then
	echo "patchbridge.8: the commands of \`patchbridge help\`: $(tr '\n' ' ' <"$tmp/cmds_want")"
else
	rc=1
fi
exit $rc
