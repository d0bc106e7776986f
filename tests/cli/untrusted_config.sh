#!/bin/bash
# untrusted_config.sh PATCHBRIDGE MILTER
#
# A configuration others could write is refused by both programs before
# anything else: the attack is a world-writable patchbridge.conf whose
# [forge] url names another host, which would get the admin token with
# Sudo.  Each program exits 78 (EX_CONFIG, so systemd does not restart
# it) with a message naming the file, its mode and what is expected;
# the same file, made 0640 in a directory only root writes, loads.
# A 0640 file in a world-writable directory (not sticky) is refused too.
# (The owners file and the user map: test_owners, test_usermap.)
set -u
export LC_ALL=C
unset PATCHBRIDGE_CONFIG
[ $# -eq 2 ] || {
	echo "usage: $0 PATCHBRIDGE MILTER" >&2
	exit 2
}
pb=$1
milter=$2
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/cli_untrusted.XXXXXX") || exit 1
trap 'chmod -R u+rwx "$tmp"; rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
failed=0

fail() {
	echo "FAIL: $*" >&2
	failed=1
}

# expect WANT PATTERN PROGRAM ARGS...: exit status WANT and, unless
# PATTERN is empty, a line of stderr matching it.
expect() {
	local want=$1 pattern=$2 got
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	got=$?
	[ "$got" = "$want" ] ||
		fail "$(basename "$1") ${*:2}: exit $got, expected $want" \
			"($(head -c 400 "$tmp/err"))"
	[ -z "$pattern" ] || grep -Eq -- "$pattern" "$tmp/err" ||
		fail "$(basename "$1") ${*:2}: no '$pattern' in: $(cat "$tmp/err")"
}

mkdir -m 0755 "$tmp/etc" "$tmp/spool" "$tmp/state"
# The checks read Postfix's settings: from a configuration of our own.
. "$(dirname "$0")/private_postfix.sh"
private_postfix "$tmp/postfix" || exit 1
printf 'token\n' >"$tmp/etc/token"
chmod 0600 "$tmp/etc/token"
conf=$tmp/etc/patchbridge.conf
cat >"$conf" <<CONF
[bridge]
address = bridge@example.org
domain = bridge.example.org
list_address = list@example.org
[forge]
url = https://gitlab.attacker.example
token_file = $tmp/etc/token
[milter]
socket = unix:$tmp/milter.sock
[state]
path = $tmp/state/state.db
[spool]
dir = $tmp/spool
[inbound]
approval_policy = none
CONF

echo "1. world-writable: refused by check-config, run and the milter"
chmod 0666 "$conf"
expect 78 "patchbridge.conf is writable by .*others.*mode 0666" \
	"$pb" check-config "$conf"
expect 78 "patchbridge.conf is writable by" "$pb" -c "$conf" run --once \
	--foreground
expect 78 "patchbridge.conf is writable by" "$milter" -c "$conf" --check
[ -e "$tmp/state/state.db" ] && fail "run created the state database"

echo "2. group-writable: refused"
chmod 0664 "$conf"
expect 78 "writable by its group" "$pb" check-config "$conf"

echo "3. 0640 in a directory only root writes: loads"
chmod 0640 "$conf"
expect 0 "" "$pb" check-config "$conf"
expect 0 "" "$milter" -c "$conf" --check

echo "4. 0640 in a world-writable directory: refused"
chmod 0777 "$tmp/etc"
expect 78 "the directory .*/etc above it is writable by" \
	"$pb" check-config "$conf"
expect 78 "the directory .*/etc above it is writable by" \
	"$milter" -c "$conf" --check
chmod 0755 "$tmp/etc"

exit $failed
