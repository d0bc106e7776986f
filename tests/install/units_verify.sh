#!/bin/sh
# The systemd units as they are installed: systemd-analyze verify finds
# nothing to say about them (systemd itself cannot run in the test bed),
# both are Type=notify with a watchdog (the programs send READY=1 and
# WATCHDOG=1, util/sdnotify.h; tests/milter/watchdog.sh and
# tests/inbound/test_monitor_sim.py show the pings stop when the main
# loop is stuck), WatchdogSec is longer than the daemon's default
# [forge] timeout and [smtp] timeout (one forge request or submission
# must not trip it), and a watchdog kill is restarted.
#
#   units_verify.sh PATCHBRIDGE MILTER SRCDIR WORKDIR
#   units_verify.sh --self-test PATCHBRIDGE MILTER SRCDIR WORKDIR
#
# The .in files get the build's program paths.  --self-test shows that a
# misspelt setting, a watchdog shorter than [forge] timeout and a unit
# without one each fail.  Exit 77: systemd-analyze is missing (Debian
# package "systemd").
set -u
selftest=0
[ "${1:-}" = --self-test ] && { selftest=1; shift; }
[ $# -eq 4 ] || { echo "usage: $0 [--self-test] PATCHBRIDGE MILTER SRCDIR WORKDIR" >&2; exit 2; }
pb=$1
milter=$2
src=$3
w=$4
command -v systemd-analyze >/dev/null 2>&1 ||
	{ echo "units_verify: SKIP: systemd-analyze is not installed"; exit 77; }
rm -rf "$w"
mkdir -p "$w" || exit 2

# Seconds of a systemd time span ("5min", "90s").
secs() {
	systemd-analyze timespan "$1" 2>/dev/null |
		awk '/μs:|us:/ { printf "%d\n", $2 / 1000000 }'
}

# The daemon's default timeouts, from a minimal configuration.
cat >"$w/pb.conf" <<EOC
[bridge]
address = bridge@example.org
domain = example.org
[forge]
url = https://gitlab.example.org
token_file = $w/token
EOC
forge_t=$(secs "$("$pb" -c "$w/pb.conf" --dump-config |
	sed -n 's/^\[forge\] timeout = //p')")
smtp_t=$(secs "$("$pb" -c "$w/pb.conf" --dump-config |
	sed -n 's/^\[smtp\] timeout = //p')")
[ -n "$forge_t" ] && [ -n "$smtp_t" ] ||
	{ echo "units_verify: cannot read the default timeouts"; exit 1; }

# unit NAME: the installed unit, with the build's programs.
unit() {
	sed -e "s|@PB_BINDIR@|$(dirname "$pb")|g" \
		-e "s|@PB_SBINDIR@|$(dirname "$milter")|g" \
		-e "s|@PB_CONFIG_DIR@|$w|g" \
		"$src/contrib/systemd/$1.service.in" >"$w/$1.service"
}

# check FILE: 0 when it verifies silently and has what it must.
check() {
	out=$(systemd-analyze verify --man=no "$1" 2>&1)
	st=$?
	if [ $st -ne 0 ] || [ -n "$out" ]; then
		echo "$1: systemd-analyze verify ($st): $out"
		return 1
	fi
	for want in 'Type=notify' 'NotifyAccess=main' 'Restart=on-failure'; do
		grep -qx "$want" "$1" || { echo "$1: no $want"; return 1; }
	done
	wd=$(sed -n 's/^WatchdogSec=//p' "$1")
	[ -n "$wd" ] || { echo "$1: no WatchdogSec="; return 1; }
	wds=$(secs "$wd")
	if [ -z "$wds" ] || [ "$wds" -le "$forge_t" ] ||
		[ "$wds" -le "$smtp_t" ]; then
		echo "$1: WatchdogSec=$wd is not longer than [forge] timeout" \
			"(${forge_t}s) and [smtp] timeout (${smtp_t}s)"
		return 1
	fi
	return 0
}

unit patchbridge
unit patchbridge-milter
if [ $selftest -eq 1 ]; then
	bad=0
	check "$w/patchbridge.service" >/dev/null ||
		{ echo "self-test: the real unit does not pass"; exit 1; }
	sed 's/^WatchdogSec=.*/WatchdogSec=5 fortnights/' \
		"$w/patchbridge.service" >"$w/typo.service"
	check "$w/typo.service" >/dev/null &&
		{ echo "self-test: a misspelt WatchdogSec passed"; bad=1; }
	sed 's/^WatchdogSec=.*/WatchdogSec=30s/' \
		"$w/patchbridge.service" >"$w/short.service"
	check "$w/short.service" >/dev/null &&
		{ echo "self-test: a watchdog shorter than the timeouts passed"; bad=1; }
	grep -v '^WatchdogSec=' "$w/patchbridge.service" >"$w/none.service"
	check "$w/none.service" >/dev/null &&
		{ echo "self-test: a unit without a watchdog passed"; bad=1; }
	[ $bad = 0 ] && echo "units_verify self-test: ok"
	exit $bad
fi
rc=0
for u in patchbridge patchbridge-milter; do
	if check "$w/$u.service"; then
		echo "$u.service: verifies; Type=notify, WatchdogSec=$(sed -n 's/^WatchdogSec=//p' "$w/$u.service")"
	else
		rc=1
	fi
done
exit $rc
