#!/bin/bash
# memory_bench.sh PATCHBRIDGE STATE_SEED [N...]
#
# The daemon's memory with N merge requests in its state (default: 0 and
# 10000).  Run under tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL).
#
# For each N, a fresh state database gets N MRs of group/project
# (tests/bench/state_seed: each mailed as one revision of 3 patches, its 4
# mails in the thread map and the archive, one list reply journaled as
# applied), then, against the simulator (whose own group/project!1 is
# mailed in the first cycle, to a sendmail that is /bin/true):
#   run --once        one whole cycle: poll, mail, forge comments, spool
#   run (20 s)        `run --foreground` for 20 s, then SIGTERM: the peak
#                     of a daemon that keeps cycling (the spool looked at,
#                     the forge polled every 5 s)
#   status            the operator's view of all N MRs
# and prints the peak resident memory of each (GNU time's maximum RSS;
# for the 20 s run, VmHWM of /proc/PID/status before the SIGTERM), with
# the size of the database.  No timing or size is asserted: it fails only
# when a command does.
set -u
export LC_ALL=C
pb=${1:?usage: memory_bench.sh PATCHBRIDGE STATE_SEED [N...]}
seed=${2:?usage: memory_bench.sh PATCHBRIDGE STATE_SEED [N...]}
shift 2
[ $# -gt 0 ] || set -- 0 10000
[ -n "${PB_FORGESIM_URL:-}" ] || {
	echo "memory_bench: run me under tests/forgesim/run-with-sim.sh" >&2
	exit 1
}
[ -x /usr/bin/time ] || {
	echo "memory_bench: GNU time (/usr/bin/time) is needed" >&2
	exit 1
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pb-memory-bench.XXXXXX") || exit 1
pid=""
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

die() {
	echo "memory_bench: $*" >&2
	[ -f "$tmp/log" ] && tail -n 20 "$tmp/log" >&2
	exit 1
}

# maxrss CMD...: run CMD, print its peak RSS in KiB.
maxrss() {
	/usr/bin/time -f '%M' -o "$tmp/rss" "$@" >>"$tmp/log" 2>&1 ||
		die "$* failed"
	tail -n 1 "$tmp/rss"
}

printf 'bridge-token\n' >"$tmp/token"
chmod 600 "$tmp/token"
rows=""
for n in "$@"; do
	case $n in '' | *[!0-9]*) die "N must be a number: $n" ;; esac
	d=$tmp/n$n
	mkdir -p "$d/spool"
	curl -s -X POST -H 'Content-Type: application/json' -d '{}' \
		"$PB_FORGESIM_URL/_sim/reset" >/dev/null || die "cannot reset the simulator"
	cat >"$d/pb.conf" <<EOF
[bridge]
address = patchbridge@bridge.example.org
domain = bridge.example.org
list_address = list@example.org
[forge]
url = $PB_FORGESIM_URL
token_file = $tmp/token
bot_username = patchbridge
[smtp]
url = sendmail
sendmail_path = /bin/true
[state]
path = $d/state.db
[spool]
dir = $d/spool
[log]
level = notice
[outbound]
poll_interval = 5s
[inbound]
approval_policy = none
[project "group/project"]
EOF
	if [ "$n" -gt 0 ]; then
		"$seed" "$d/state.db" group/project "$n" >>"$tmp/log" 2>&1 ||
			die "state_seed failed"
	fi
	once=$(maxrss "$pb" -c "$d/pb.conf" run --once --foreground) || exit 1
	"$pb" -c "$d/pb.conf" run --foreground >>"$tmp/log" 2>&1 &
	pid=$!
	sleep 20
	kill -0 "$pid" 2>/dev/null || die "run --foreground exited"
	long=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
	kill -TERM "$pid"
	wait "$pid" || die "run --foreground did not stop cleanly"
	pid=""
	status=$(maxrss "$pb" -c "$d/pb.conf" status) || exit 1
	db=$(du -k "$d/state.db" | cut -f1)
	rows="$rows$(printf '%8s %10s %12s %12s %12s' "$n" "$((db / 1024))" \
		"$((once / 1024))" "$((long / 1024))" "$((status / 1024))")
"
done
echo
echo "daemon memory: peak resident set (MiB) with N merge requests in the state"
echo "CPUs: $(nproc), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%8s %10s %12s %12s %12s\n' "N MRs" "state MiB" "run --once" "run (20 s)" "status"
printf '%s' "$rows"
exit 0
