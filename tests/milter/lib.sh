# Shared helpers of the milter's test scripts (sourced, bash).
#
# Each script sets NAME (its log prefix) before sourcing.  Exit codes:
# 0 pass, 1 fail, 77 skipped.

set -u
export LC_ALL=C
unset MAIL_CONFIG PATCHBRIDGE_CONFIG

MLIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
SRC_DIR=$(cd "$MLIB_DIR/../.." && pwd -P)
PFBED=$SRC_DIR/tests/postfix/pfbed
CORPUS=$SRC_DIR/tests/data/corpus
T0=$SECONDS
STEP=0
# The bridge's domain in every test configuration.
DOMAIN=bridge.example.org

say() {
	printf '%s: %s\n' "$NAME" "$*"
}

step() {
	STEP=$((STEP + 1))
	printf '%s: [%d] %s (t=%ds)\n' "$NAME" "$STEP" "$*" $((SECONDS - T0))
}

fail() {
	printf '%s: FAIL: %s\n' "$NAME" "$*" >&2
	exit 1
}

skip() {
	printf '%s: SKIP: %s\n' "$NAME" "$*"
	exit 77
}

# An absolute path for an existing file (scripts change directory).
abs_path() {
	[ -e "$1" ] || fail "$1 not found"
	printf '%s/%s' "$(cd "$(dirname "$1")" && pwd -P)" "$(basename "$1")"
}

# Alive = exists and is not a zombie (see tests/postfix/README.md).
pid_alive() {
	local st
	[ -n "$1" ] || return 1
	{ read -r st <"/proc/$1/stat"; } 2>/dev/null || return 1
	st=${st##*) }
	case ${st%% *} in
	Z | X | "") return 1 ;;
	esac
	return 0
}

# Wait up to $2 seconds for pid $1 to exit; true if it did.
wait_pid_gone() {
	local pid=$1 limit=$2 t0=$SECONDS
	while pid_alive "$pid"; do
		[ $((SECONDS - t0)) -ge "$limit" ] && return 1
		sleep 0.05
	done
	return 0
}

# Wait up to $2 seconds for file $1 to exist and be non-empty.
wait_file() {
	local f=$1 limit=$2 t0=$SECONDS
	while [ ! -s "$f" ]; do
		[ $((SECONDS - t0)) -ge "$limit" ] && return 1
		sleep 0.05
	done
	return 0
}

# --- a private Postfix (tests/postfix/pfbed) in front of the milter --------

# What a script started, for on_exit to stop: the load generator, the
# milters, and the instance (STARTED, set by pfbed_start).
LOAD_PID=""
MPID=""
TPID=""
STARTED=""

# need_pfbed [nobody] [smtp-source]: skip unless a private Postfix can
# run here, and the milter as nobody:nogroup (setpriv, the users and
# groups), and smtp-source is there.
need_pfbed() {
	local what
	[ "$(id -u)" -eq 0 ] || skip "must run as root (private Postfix)"
	command -v postfix >/dev/null 2>&1 || skip "postfix is not installed"
	[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is not installed"
	for what in "$@"; do
		case $what in
		nobody)
			command -v setpriv >/dev/null 2>&1 ||
				skip "setpriv is not installed"
			getent passwd nobody >/dev/null &&
				getent group nogroup >/dev/null &&
				getent group postfix >/dev/null ||
				skip "users nobody/postfix missing"
			;;
		smtp-source)
			[ -x /usr/sbin/smtp-source ] ||
				skip "smtp-source (postfix) is missing"
			;;
		esac
	done
}

# bed_dirs WORKDIR PREFIX: W, WORKDIR made absolute; INST, the instance in
# it; T, a new /tmp/PREFIX.XXXXXX for the milter's files (the build tree
# may not be reachable for nobody and postfix, and socket paths must be
# short).  Then on_exit is the exit trap.
bed_dirs() {
	mkdir -p "$1" || fail "cannot create $1"
	W=$(cd "$1" && pwd -P)
	INST=$W/instance
	T=$(mktemp -d "/tmp/$2.XXXXXX") || fail "mktemp failed"
	chmod 755 "$T"
	trap on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
}

# The exit trap: stops, by pid, what the script started - the load
# generator (SIGKILL), the instance, the milters (SIGTERM to all at once,
# SIGKILL after 30 s).  After a failure $T and $W stay for inspection and
# the logs' last lines are shown; after a pass, a skip or an interrupt $T
# goes, and the instance too when pfbed put it outside $W.
# shellcheck disable=SC2317  # invoked through trap
on_exit() {
	local rc=$? p
	trap - EXIT INT TERM HUP
	pid_alive "$LOAD_PID" && kill -KILL "$LOAD_PID" 2>/dev/null
	[ -n "$STARTED" ] && "$PFBED" stop "$INST" >/dev/null 2>&1
	for p in $MPID $TPID; do
		pid_alive "$p" && kill -TERM "$p" 2>/dev/null
	done
	for p in $MPID $TPID; do
		pid_alive "$p" && ! wait_pid_gone "$p" 30 && kill -KILL "$p" 2>/dev/null
	done
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ "$rc" -lt 128 ]; then
		say "kept for inspection: $T, $W"
		tail -n 10 "$W"/*milter*.log "$INST/postfix.log" 2>/dev/null
	else
		rm -rf "$T"
		[ -n "${RUNDIR:-}" ] && [ "$RUNDIR" != "$INST" ] &&
			"$PFBED" clean "$INST" >/dev/null 2>&1
	fi
	exit "$rc"
}

# mt_setup PREFIX MILTER_BINARY WORKDIR: the set-up of the scripts that
# drive the milter with miltertest (miltertest.sh, stop.sh): skips without
# miltertest; MBIN; W, WORKDIR emptied and made absolute; SOCKDIR, a new
# /tmp/PREFIX.XXXXXX (a socket path must fit in sun_path, 108 bytes,
# wherever the build tree is) holding SOCK and PIDFILE; $W/pb.conf
# listening on SOCK; MT_DIR and MT_SOCK exported for the Lua scripts;
# mt_on_exit as the exit trap.  The script sets MLOG, MPID and LPID.
mt_setup() {
	command -v miltertest >/dev/null 2>&1 ||
		skip "miltertest is not installed (apt-get install miltertest)"
	MBIN=$(abs_path "$2")
	W=$3
	rm -rf "$W"
	mkdir -p "$W/state" || fail "cannot create $W"
	W=$(cd "$W" && pwd -P)
	SOCKDIR=$(mktemp -d "/tmp/$1.XXXXXX") || fail "mktemp failed"
	SOCK=$SOCKDIR/milter.sock
	PIDFILE=$SOCKDIR/milter.pid
	MLOG=""
	MPID=""
	LPID=""
	export MT_DIR=$MLIB_DIR/lua MT_SOCK=unix:$SOCK
	trap mt_on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	write_conf "$W/pb.conf" "$W" 64k
	sed -i "s|^socket = .*|socket = unix:$SOCK|" "$W/pb.conf"
}

# The exit trap of mt_setup: the miltertest client (SIGKILL) and the
# milter (SIGTERM, SIGKILL after 30 s) stopped, SOCKDIR removed, and after
# a failure the milter log's last lines shown.
# shellcheck disable=SC2317  # invoked through trap
mt_on_exit() {
	local rc=$?
	trap - EXIT INT TERM HUP
	pid_alive "$LPID" && kill -KILL "$LPID" 2>/dev/null
	if pid_alive "$MPID"; then
		kill -TERM "$MPID" 2>/dev/null
		wait_pid_gone "$MPID" 30 || kill -KILL "$MPID" 2>/dev/null
	fi
	rm -rf "$SOCKDIR"
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -n "$MLOG" ] &&
		[ -f "$MLOG" ]; then
		say "---- last lines of $MLOG ----"
		tail -n 20 "$MLOG"
	fi
	exit "$rc"
}

# milter_dirs [nobody]: $T/pb.conf and the milter's directories below $T;
# SOCK, its socket.  The socket directory is setgid postfix, so that the
# socket (0660) gets group postfix.  With "nobody", the owners
# contrib/postfix/README.md gives them for a milter running as
# nobody:nogroup: state root:nogroup 2750, spool nobody:nogroup 2770,
# socket directory nobody:postfix 2750.
milter_dirs() {
	write_conf "$T/pb.conf" "$T"
	SOCK=$T/run/milter.sock
	if [ "${1:-}" = nobody ]; then
		chmod 644 "$T/pb.conf"
		install -d -o root -g nogroup -m 2750 "$T/state" &&
			install -d -o nobody -g nogroup -m 2770 "$T/spool" &&
			install -d -o nobody -g postfix -m 2750 "$T/run" ||
			fail "install -d failed"
	else
		mkdir -p "$T/state"
		install -d -g postfix -m 2750 "$T/run" || fail "install -d failed"
	fi
}

# start_milter LOG [nobody]: start $MBIN on $T/pb.conf, its stderr on
# LOG, as root or as nobody:nogroup with no supplementary groups; sets
# MPID once its pid file is written.
start_milter() {
	local as=()
	[ "${2:-}" = nobody ] &&
		as=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
	rm -f "$T/run/milter.pid"
	"${as[@]}" "$MBIN" -f -c "$T/pb.conf" -P "$T/run/milter.pid" 2>"$1" &
	MPID=$!
	wait_file "$T/run/milter.pid" 10 || fail "milter did not start: $(cat "$1")"
}

# reap_milter PID SECONDS: after SIGTERM, milter PID must exit within
# SECONDS, with status 0.
reap_milter() {
	local st
	wait_pid_gone "$1" "$2" ||
		fail "milter $1 still running $2s after SIGTERM"
	wait "$1"
	st=$?
	[ "$st" -eq 0 ] || fail "milter $1 exit status $st"
}

# No AddressSanitizer, LeakSanitizer or UBSan report in the files given.
no_sanitizer_report() {
	grep -q 'ERROR: \|runtime error\|LeakSanitizer' "$@" &&
		fail "sanitizer report in $*"
	return 0
}

# pfbed_start OPTION...: start the instance $INST and take its variables
# (PORT, CONFIG, LOG, ARCHIVE, LIST_DOMAIN, RUNDIR ...).
pfbed_start() {
	local out
	out=$("$PFBED" start "$INST" "$@") || fail "pfbed start failed"
	STARTED=1
	eval "$out"
	eval "$("$PFBED" env "$INST")"
}

pfbed_stop() {
	"$PFBED" stop "$INST" >/dev/null || fail "pfbed stop failed"
	STARTED=""
}

# queue_drained SECONDS: wait until the instance's queue is empty.
queue_drained() {
	local t=$SECONDS
	until postqueue -c "$CONFIG" -p 2>/dev/null | grep -q 'Mail queue is empty'; do
		[ $((SECONDS - t)) -ge "$1" ] && fail "queue not empty after $1s"
		sleep 0.1
	done
}

# write_conf FILE DIR [MAX_SIZE] [AUTHSERV]: a milter configuration whose
# state, spool and socket live under DIR.  The spool directory is made
# here: the milter run as root never makes one (core/preflight.h).
write_conf() {
	mkdir -p "$2/spool" || fail "cannot create $2/spool"
	cat >"$1" <<EOF
[bridge]
address = patchbridge@$DOMAIN
domain = $DOMAIN
[forge]
url = https://gitlab.example.org
token_file = $2/token
[milter]
socket = unix:$2/run/milter.sock
max_message_size = ${3:-1M}
trusted_authserv_id = ${4:-lists.example.test}
timeout = 60s
[state]
path = $2/state/state.db
[spool]
dir = $2/spool
[log]
level = info
EOF
}

# Records waiting in a spool: their names, one per line.
spool_names() {
	ls -1 "$1/new" 2>/dev/null | grep -v '^\.'
}

spool_count() {
	spool_names "$1" | wc -l
}

# The value of header KEY in spool record FILE.
spool_field() {
	sed -n "1,/^\$/s/^$2: //p" "$1" | head -n 1
}

# Our Message-ID for patch K of M of group/project!12 vREV.
our_msgid() {
	printf 'pb.v%s.%s-%s.group.project.12.0123456789ab@%s' "$1" "$2" "$3" \
		"$DOMAIN"
}

# Seed the thread map of DB with group/project!12: revisions 1..3 (the
# corpus reply 01 answers "v3 3/3"), and the parent patch as patch 3/3.
seed_store() {
	local seed=$1 db=$2 i
	for i in 1 2 3; do
		"$seed" "$db" revision group/project 12 \
			"${i}123456789abcdef0123456789abcdef0123456" 3 >/dev/null ||
			fail "seed revision $i"
	done
	"$seed" "$db" mail 20231019113347.8753-4-phil@nwl.cc group/project 12 \
		3 3 3 "$CORPUS/replies/parents/01-patch-nf-mutt-nack-inline.eml" ||
		fail "seed patch mail"
}

# --- smtp-source under load (kill9.sh, sigterm.sh) --------------------------

# under_load N WHAT: the instance (default_action=tempfail) in front of a
# milter (PID1, log $W/milter1.log), and smtp-source sending it N copies
# of one reply to patch 2/7 of v3 at concurrency 10 (each copy gets its
# own queue id; LOAD_PID).  Returns once a quarter of them are spooled
# and smtp-source is still sending, for WHAT to happen mid-way.
under_load() {
	local n=$1 t
	milter_dirs
	{
		printf 'From: Rev Iewer <rev@example.org>\n'
		printf 'Subject: Re: [PATCH v3 2/7] list: grow the array on demand\n'
		printf 'Message-ID: <%s.%s@example.org>\n' "$NAME" "$$"
		printf 'In-Reply-To: <%s>\n' "$(our_msgid 3 2 7)"
		printf '\n> +\tl->generation++;\n\nWhy?\n\n'
		printf 'Reviewed-by: Rev Iewer <rev@example.org>\n'
	} >"$W/reply.eml"

	step "private postfix (default_action=tempfail) and the milter"
	pfbed_start --milter "unix:$SOCK" --default-action tempfail
	start_milter "$W/milter1.log"
	PID1=$MPID

	step "smtp-source: $n replies at concurrency 10; $2 mid-way"
	/usr/sbin/smtp-source -4 -A -m "$n" -s 10 -F "$W/reply.eml" \
		-f sender@example.org -t "patches@$LIST_DOMAIN" -M loadgen.example \
		"127.0.0.1:$PORT" >"$W/smtp-source.out" 2>&1 &
	LOAD_PID=$!
	t=$SECONDS
	until [ "$(spool_count "$T/spool")" -ge $((n / 4)) ]; do
		[ $((SECONDS - t)) -ge 30 ] && fail "fewer than $((n / 4)) spooled in 30s"
		pid_alive "$LOAD_PID" || fail "smtp-source ended before the $2"
		sleep 0.02
	done
	pid_alive "$LOAD_PID" || fail "smtp-source ended before the $2"
}

# Wait up to 60 s for smtp-source to finish.
wait_load() {
	local t=$SECONDS
	while pid_alive "$LOAD_PID"; do
		[ $((SECONDS - t)) -ge 60 ] && fail "smtp-source still running after 60s"
		sleep 0.1
	done
	wait "$LOAD_PID"
	LOAD_PID=""
}

# check_delivered SPOOLED: every queue id Postfix logged status=sent for
# is in SPOOLED (sorted, one a line); sets SENT, and TEMPFAILED, the
# number of milter-reject lines.
check_delivered() {
	local missing
	sed -n 's/.*postfix\/virtual\[[0-9]*\]: \([0-9A-Za-z]*\): to=.*status=sent.*/\1/p' \
		"$LOG" | sort -u >"$W/sent.ids"
	SENT=$(wc -l <"$W/sent.ids")
	TEMPFAILED=$(grep -c 'milter-reject' "$LOG")
	missing=$(comm -23 "$W/sent.ids" "$1")
	[ "$SENT" -gt 0 ] || fail "nothing was delivered"
	[ -z "$missing" ] ||
		fail "delivered but not spooled: $(printf '%s' "$missing" | tr '\n' ' ')"
}
