#!/bin/bash
# exit_codes.sh PATCHBRIDGE MILTER
#
# --version of both programs, and the sysexits.h codes they exit with:
# 0, 64 EX_USAGE for bad options and arguments, 66 EX_NOINPUT
# for a missing file, 78 EX_CONFIG for a configuration that does not load.
# The milter is only run with --check, --test or a bad configuration: it
# never listens here.  tests/cli/check_config.sh has more of patchbridge's
# own (check-config, dump-config, help).
set -u
export LC_ALL=C
unset PATCHBRIDGE_CONFIG
[ $# -eq 2 ] || {
	echo "usage: $0 PATCHBRIDGE MILTER" >&2
	exit 2
}
pb=$1
milter=$2
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/cli_exit_codes.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

fail() {
	echo "FAIL: $*" >&2
	failed=1
}

# run WANT PROGRAM ARGS...: PROGRAM must exit WANT; stdout and stderr are
# kept in $tmp/out and $tmp/err.
run() {
	local want=$1 got
	shift
	"$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	got=$?
	[ "$got" = "$want" ] ||
		fail "$(basename "$1") ${*:2}: exit $got, expected $want" \
			"($(head -c 300 "$tmp/err"))"
}

# has FILE PATTERN: FILE has a line matching the extended regex PATTERN.
has() {
	grep -qE -- "$2" "$1" || fail "no /$2/ in: $(head -c 300 "$1")"
}

# A configuration the milter loads, and one it does not.  (The spool
# directory exists: the milter run as root never makes one.)
mkdir -p "$tmp/state" "$tmp/spool"
cat >"$tmp/good.conf" <<EOF
[bridge]
address = patchbridge@bridge.example.org
domain = bridge.example.org
[forge]
url = https://gitlab.example.org
token_file = $tmp/token
[milter]
socket = unix:$tmp/milter.sock
[state]
path = $tmp/state/state.db
[spool]
dir = $tmp/spool
EOF
printf '[bridge]\ncolour = blue\n' >"$tmp/bad.conf"
# --check reads Postfix's settings: from a configuration of our own.
. "$(dirname "$0")/private_postfix.sh"
private_postfix "$tmp/postfix" || exit 1
printf 'Subject: hello\nMessage-ID: <x@example.org>\n\nhi\n' >"$tmp/mail.eml"

# --- patchbridge ---------------------------------------------------------
run 0 "$pb" --version
has "$tmp/out" '^patchbridge [0-9]+\.[0-9]+\.[0-9]+'
run 64 "$pb" --frobnicate
has "$tmp/err" '^usage:'
run 64 "$pb" -c "$tmp/good.conf" run --frobnicate
has "$tmp/err" 'unknown argument: --frobnicate'
run 66 "$pb" -c "$tmp/missing.conf" run --once
has "$tmp/err" 'missing\.conf'
run 78 "$pb" -c "$tmp/bad.conf" run --once
has "$tmp/err" 'bad\.conf:2: \[bridge\] colour: unknown key'
run 78 "$pb" -c "$tmp/bad.conf" status
run 66 "$pb" -c "$tmp/good.conf" parse "$tmp/missing.eml"

# --- patchbridge-milter --------------------------------------------------
run 0 "$milter" --version
has "$tmp/out" '^patchbridge-milter [0-9]+\.[0-9]+\.[0-9]+ \(libmilter [0-9.]+\)$'
v_pb=$("$pb" --version | awk '{ print $2 }')
v_m=$(awk '{ print $2 }' "$tmp/out")
[ "$v_pb" = "$v_m" ] || fail "versions differ: patchbridge $v_pb, milter $v_m"
run 0 "$milter" -V
has "$tmp/out" '^patchbridge-milter '
run 0 "$milter" --help
has "$tmp/out" '^usage: patchbridge-milter'
run 64 "$milter" --frobnicate
has "$tmp/err" '^usage: patchbridge-milter'
run 64 "$milter" -c "$tmp/good.conf" extra-argument
run 64 "$milter" -c "$tmp/good.conf" --test
run 64 "$milter" -m 999 -c "$tmp/good.conf" --check
has "$tmp/err" 'bad umask 999'
run 64 "$milter" -c "$tmp/good.conf" -p bogus:x --check
has "$tmp/err" 'bad milter socket bogus:x'
run 66 "$milter" -c "$tmp/missing.conf" --check
has "$tmp/err" 'missing\.conf'
run 66 "$milter" -c "$tmp/missing.conf" -f
run 78 "$milter" -c "$tmp/bad.conf" --check
has "$tmp/err" 'bad\.conf:2: \[bridge\] colour: unknown key'
run 78 "$milter" -c "$tmp/bad.conf" -f
run 0 "$milter" -c "$tmp/good.conf" --check
has "$tmp/out" 'good\.conf: ok'
run 66 "$milter" -c "$tmp/good.conf" --test "$tmp/missing.eml"
run 0 "$milter" -c "$tmp/good.conf" --test "$tmp/mail.eml"
# $PATCHBRIDGE_CONFIG is the default, as for patchbridge
PATCHBRIDGE_CONFIG=$tmp/bad.conf run 78 "$milter" --check

# --header-checks -o FILE: written whole and only on success (the README
# names the file in main.cf; an empty or missing table stops the mail).
# Without a trusted id the table removes nothing: comments only.
run 64 "$milter" -c "$tmp/good.conf" -o "$tmp/hc"
[ -e "$tmp/hc" ] && fail "-o without --header-checks wrote $tmp/hc"
run 78 "$milter" -c "$tmp/bad.conf" --header-checks -o "$tmp/hc"
[ -e "$tmp/hc" ] && fail "--header-checks left $tmp/hc behind a failure"
run 0 "$milter" -c "$tmp/good.conf" --header-checks -o "$tmp/hc"
has "$tmp/hc" '^# \[milter\] trusted_authserv_id is not set'
grep -qv '^#' "$tmp/hc" && fail "a rule without a trusted id: $(cat "$tmp/hc")"
has "$tmp/err" 'trusted_authserv_id is not set'
sed 's/^\[milter\]$/&\ntrusted_authserv_id = mx.example.org/' "$tmp/good.conf" \
	>"$tmp/id.conf"
run 0 "$milter" -c "$tmp/id.conf" --header-checks -o "$tmp/hc"
has "$tmp/hc" '^/\^Authentication-Results.* IGNORE$'
cp "$tmp/hc" "$tmp/hc.before"
run 78 "$milter" -c "$tmp/bad.conf" --header-checks -o "$tmp/hc"
cmp -s "$tmp/hc" "$tmp/hc.before" || fail "a failure changed $tmp/hc"
run 73 "$milter" -c "$tmp/id.conf" --header-checks -o "$tmp/none/hc"
[ -n "$(ls -A "$tmp" | grep '^\.tmp\.')" ] && fail "a temporary file left in $tmp"

[ $failed = 0 ] && echo "cli_exit_codes: ok"
exit $failed
