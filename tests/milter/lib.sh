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

# write_conf FILE DIR [MAX_SIZE] [AUTHSERV]: a milter configuration whose
# state, spool and socket live under DIR.
write_conf() {
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
