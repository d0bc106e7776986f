#!/bin/sh
# The patchbridge program's configuration commands, run for real:
#   check_config.sh PATCHBRIDGE SOURCE_DIR
# check-config names every error with FILE:LINE and exits 78, accepts the
# shipped example; --dump-config, -c, $PATCHBRIDGE_CONFIG, --version, and
# the exit codes of usage errors.
set -u
pb=$1
src=$2
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/cli_check_config.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

fail() {
	echo "FAIL: $*"
	failed=1
}

# run STATUS ARGS...: patchbridge ARGS (with no $PATCHBRIDGE_CONFIG) must
# exit with STATUS; its stdout is in $tmp/out, its stderr in $tmp/err.
run() {
	want=$1
	shift
	env -u PATCHBRIDGE_CONFIG "$pb" "$@" >"$tmp/out" 2>"$tmp/err"
	status $? "$want" "$@"
}

# run_env CONFIG STATUS ARGS...: the same with $PATCHBRIDGE_CONFIG=CONFIG.
run_env() {
	cfg=$1
	want=$2
	shift 2
	env PATCHBRIDGE_CONFIG="$cfg" "$pb" "$@" >"$tmp/out" 2>"$tmp/err"
	status $? "$want" "$@"
}

status() {
	got=$1
	want=$2
	shift 2
	if [ "$got" != "$want" ]; then
		fail "patchbridge $*: exit $got, expected $want"
		sed 's/^/  stdout: /' "$tmp/out"
		sed 's/^/  stderr: /' "$tmp/err"
	fi
}

# has FILE TEXT: FILE holds the line TEXT exactly.
has() {
	grep -qxF -- "$2" "$1" || {
		fail "$1 lacks: $2"
		sed 's/^/  | /' "$1"
	}
}

cat >"$tmp/bad.conf" <<'EOF'
[bridge]
address = bridge@example.org
domain = example.org
list_address = list@example.org
[forge]
url = https://gitlab.example.org
token_file = /etc/patchbridge/token
# two mistakes, both reported:
timeout = 0
colour = blue
[inbound]
approval_policy = none
EOF
run 78 check-config "$tmp/bad.conf"
has "$tmp/err" "$tmp/bad.conf:9: [forge] timeout: 0 is below the minimum 1s"
has "$tmp/err" "$tmp/bad.conf:10: [forge] colour: unknown key"
[ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "expected exactly 2 errors"
[ -s "$tmp/out" ] && fail "check-config of a bad file wrote to stdout"

# The same file through -c and through the environment.
run 78 -c "$tmp/bad.conf" check-config
has "$tmp/err" "$tmp/bad.conf:10: [forge] colour: unknown key"
run_env "$tmp/bad.conf" 78 check-config
has "$tmp/err" "$tmp/bad.conf:10: [forge] colour: unknown key"
# A bad configuration is not dumped.
run 78 -c "$tmp/bad.conf" --dump-config
[ -s "$tmp/out" ] && fail "--dump-config printed a bad configuration"

# The shipped example is valid.
example=$src/contrib/patchbridge.conf.example
run 0 check-config "$example"
has "$tmp/out" "$example: ok"
run_env "$example" 0 check-config
has "$tmp/out" "$example: ok"
# -c wins over the environment.
run_env "$tmp/bad.conf" 0 --config "$example" check-config

# --dump-config: every effective value, defaults included.
run 0 -c "$example" --dump-config
has "$tmp/out" "[forge] url = https://gitlab.example.org"
has "$tmp/out" "[forge] ca_file ="
has "$tmp/out" "[state] path = /var/lib/patchbridge/state.db"
has "$tmp/out" "[inbound] nak_label = Acks::NACKed"
has "$tmp/out" "[project \"kernel/net\"] threading = deep"
has "$tmp/out" "[project \"tools/patchbridge\"] threading = shallow"
n=$("$pb" --list-params | wc -l)
[ "$(grep -c '^\[[a-z]*\] ' "$tmp/out")" -gt 40 ] ||
	fail "--dump-config printed too few parameters"
[ "$n" -gt 40 ] || fail "--list-params printed $n lines"
# -n: only what the file sets; dump-config is the same command.
run 0 -c "$example" dump-config -n
has "$tmp/out" "[project \"kernel/net\"] threading = deep"
has "$tmp/out" "[project \"tools/patchbridge\"]"
grep -q '^\[forge\] ca_file' "$tmp/out" && fail "dump-config -n shows unset ca_file"
run 64 -c "$example" dump-config -x

# --version and help.
run 0 --version
grep -qE '^patchbridge [0-9]+\.[0-9]+\.[0-9]+' "$tmp/out" ||
	fail "--version: $(cat "$tmp/out")"
run 0 --help
grep -q 'check-config' "$tmp/out" || fail "--help does not list check-config"
grep -q 'list-params' "$tmp/out" && fail "--help lists the hidden list-params"
run 0 check-config --help
grep -q '^usage: patchbridge .*check-config' "$tmp/out" ||
	fail "check-config --help"

# Usage errors and unreadable files.
run 64
run 64 frobnicate
grep -q 'unknown command: frobnicate' "$tmp/err" || fail "unknown command"
grep -q '^usage:' "$tmp/err" || fail "no usage on stderr"
run 64 -c
run 64 check-config a b
run 66 check-config "$tmp/does-not-exist.conf"
grep -q 'does-not-exist.conf' "$tmp/err" || fail "missing file not named"

[ $failed = 0 ] && echo "cli_check_config: ok"
exit $failed
