# Sourced by tests/cli scripts that start the daemon against nothing:
# a configuration whose forge and MTA are closed ports on loopback, so
# that run --once finishes at once, and a wait for a log line.

# daemon_conf FILE DIR [METRICS_PORT]: FILE names DIR/etc/token,
# DIR/state/state.db, DIR/spool and DIR/run/milter.sock, with the status
# server on METRICS_PORT when given.
daemon_conf() {
	cat >"$1" <<CONF
[bridge]
address = bridge@example.org
domain = bridge.example.org
list_address = list@example.org
[forge]
url = http://127.0.0.1:9/
token_file = $2/etc/token
connect_timeout = 1s
max_retries = 0
[smtp]
url = smtp://127.0.0.1:9
[milter]
socket = unix:$2/run/milter.sock
[state]
path = $2/state/state.db
[spool]
dir = $2/spool
[inbound]
approval_policy = none
[project "g/p"]
CONF
	[ -z "${3:-}" ] ||
		printf '[metrics]\nenabled = yes\nlisten = 127.0.0.1:%s\n' "$3" \
			>>"$1"
}

# wait_log FILE PATTERN WHAT: wait (up to a minute) until FILE has a line
# matching PATTERN (grep -E), else fail with WHAT (fail() is the caller's).
wait_log() {
	local n=0
	until grep -qE -- "$2" "$1"; do
		n=$((n + 1))
		[ $n -le 600 ] || fail "$3: $(cat "$1")"
		sleep 0.1
	done
}
