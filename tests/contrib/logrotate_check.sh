#!/bin/bash
# logrotate_check.sh SOURCE_DIR
#
# contrib/logrotate/patchbridge, forced once by logrotate(8) on a log
# below a temporary directory (the file's path moved there): the lines
# written before are in daemon.log.1, the log is cut, and a line the
# program writes after the cut, through the descriptor the shell opened
# with ">>" (O_APPEND) as in README.md "Installing", step 6, lands at
# the start of the cut file, not after a hole at its old offset.
#
# Exit 0 pass, 1 fail, 77 skipped (logrotate not installed).
set -u
export LC_ALL=C
[ $# -eq 1 ] || {
	echo "usage: $0 SOURCE_DIR" >&2
	exit 2
}
command -v logrotate >/dev/null 2>&1 ||
	{ echo "SKIP: logrotate is not installed"; exit 77; }
conf=$1/contrib/logrotate/patchbridge
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/logrotate.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

mkdir -m 0750 "$tmp/log" || exit 1
# The shipped file, its path moved; "su" needs root, and logrotate
# refuses a configuration others may write.
sed -e "s|/var/log/patchbridge|$tmp/log|" "$conf" >"$tmp/patchbridge"
[ "$(id -u)" -eq 0 ] || sed -i '/^[[:space:]]*su /d' "$tmp/patchbridge"
chmod 0644 "$tmp/patchbridge"
grep -q "^$tmp/log/\*\.log {" "$tmp/patchbridge" ||
	fail "$conf does not name /var/log/patchbridge/*.log"
grep -qw copytruncate "$tmp/patchbridge" ||
	fail "$conf: no copytruncate (neither program reopens its log)"

exec 3>>"$tmp/log/daemon.log"
for i in 1 2 3; do echo "2026-12-03T10:00:0$i.000Z patchbridge: info: before $i" >&3; done
logrotate --force --state "$tmp/state" "$tmp/patchbridge" >"$tmp/out" 2>&1 ||
	fail "logrotate: $(cat "$tmp/out")"
[ -f "$tmp/log/daemon.log.1" ] || fail "no daemon.log.1: $(ls -l "$tmp/log")"
[ "$(grep -c 'before' "$tmp/log/daemon.log.1")" = 3 ] ||
	fail "daemon.log.1: $(cat "$tmp/log/daemon.log.1")"
[ -s "$tmp/log/daemon.log" ] && fail "daemon.log not cut: $(cat "$tmp/log/daemon.log")"
echo "2026-12-03T10:00:09.000Z patchbridge: info: after" >&3
exec 3>&-
[ "$(cat "$tmp/log/daemon.log")" = "2026-12-03T10:00:09.000Z patchbridge: info: after" ] ||
	fail "the line after the cut: $(od -c "$tmp/log/daemon.log" | head -3)"
echo "logrotate_check: ok"
