#!/bin/bash
# run-with-sim.sh CMD [ARGS...]
#
# Start a forgesim (GitLab simulator) on an ephemeral 127.0.0.1 port with a
# temporary state directory, wait until it accepts connections, run CMD with
#   PB_FORGESIM_URL        base URL, e.g. http://127.0.0.1:41234
#   PB_FORGESIM_STATE_DIR  the simulator's state directory (bare repos)
# exported, stop the simulator (by PID) and exit with CMD's status.  When
# CMD fails, the tail of the simulator's log (tracebacks, and every request
# with PB_FORGESIM_ARGS=--verbose) goes to stderr.
#
# Environment:
#   PB_FORGESIM_ARGS   extra simulator arguments (e.g. "--seed my.json")
#   PB_FORGESIM_KEEP=1 keep the temporary directory (log, state) afterwards
#   PB_PYTHON          interpreter (default /usr/bin/python3)
# If the simulator cannot start, exits 125 and prints its log.
set -u

here=$(cd "$(dirname "$0")" && pwd)
python=${PB_PYTHON:-/usr/bin/python3}
if [ $# -eq 0 ]; then
	echo "usage: $0 CMD [ARGS...]" >&2
	exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/forgesim.XXXXXX") || exit 125
sim_pid=

# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
	if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
		kill -TERM "$sim_pid" 2>/dev/null
		wait "$sim_pid" 2>/dev/null
	fi
	sim_pid=
	if [ "${PB_FORGESIM_KEEP:-0}" = 1 ]; then
		echo "run-with-sim: kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# shellcheck disable=SC2086  # PB_FORGESIM_ARGS is a word list on purpose
"$python" "$here/forgesim.py" --port 0 --state-dir "$tmp/state" \
	--port-file "$tmp/url" ${PB_FORGESIM_ARGS:-} >"$tmp/log" 2>&1 &
sim_pid=$!

# The URL file appears (atomically) once the listener is up.
for _ in $(seq 1 300); do
	[ -s "$tmp/url" ] && break
	if ! kill -0 "$sim_pid" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
if [ ! -s "$tmp/url" ]; then
	echo "run-with-sim: forgesim did not start; its log:" >&2
	cat "$tmp/log" >&2
	exit 125
fi

PB_FORGESIM_URL=$(cat "$tmp/url")
PB_FORGESIM_STATE_DIR="$tmp/state"
export PB_FORGESIM_URL PB_FORGESIM_STATE_DIR

"$@"
status=$?
if [ "$status" -ne 0 ] && [ "$(wc -l <"$tmp/log")" -gt 1 ]; then
	# More than the URL line: the simulator had something to say.
	echo "run-with-sim: command failed ($status); forgesim log tail:" >&2
	tail -n 50 "$tmp/log" >&2
fi
exit "$status"
