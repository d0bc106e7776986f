#!/bin/sh
# The patchbridge program's configuration commands, run for real:
#   check_config.sh PATCHBRIDGE SOURCE_DIR
# check-config names every error with FILE:LINE and exits 78; it accepts
# the shipped example as a file (--file-only), and as a whole only once
# the files it names exist; --dump-config, -c, $PATCHBRIDGE_CONFIG,
# --version, and the exit codes of usage errors.
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

# The shipped example is a valid file ...  (A copy with the mode an
# install gives it: a checkout or an archive extracted with umask 002
# leaves it group-writable, which check-config rightly refuses.)
mkdir -p "$tmp/contrib"
example=$tmp/contrib/patchbridge.conf.example
install -m 0644 "$src/contrib/patchbridge.conf.example" "$example" || exit 1
run 0 check-config --file-only "$example"
has "$tmp/out" "$example: ok"
run_env "$example" 0 check-config --file-only
has "$tmp/out" "$example: ok"
# -c wins over the environment.
run_env "$tmp/bad.conf" 0 --config "$example" check-config --file-only
# ... that passes the whole check only when the files it names exist:
# no Postfix here (an empty configuration directory: a warning), the
# example's paths moved below $tmp.
mkdir -p "$tmp/nopostfix"
sed -e "s|/etc/patchbridge|$tmp/etc|g" -e "s|/var/|$tmp/var/|g" \
	"$example" >"$tmp/example.conf"
run 78 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
has "$tmp/err" "$tmp/example.conf: [forge] token_file: $tmp/etc/gitlab-token: No such file or directory: create it for the daemon's user alone and write the token into it: install -o patchbridge -g patchbridge -m 0600 /dev/null $tmp/etc/gitlab-token"
grep -q "^$tmp/example.conf: \[inbound\] owners_file: $tmp/etc/owners.yaml: No such file or directory: write it (.*patchbridge.conf(5), OWNERS FILE), or set approval_policy = forge or none" "$tmp/err" ||
	fail "check-config does not name the missing owners file: $(cat "$tmp/err")"
grep -q "\[spool\] dir: $tmp/var/spool/patchbridge: No such file or directory: create it .*install -d -o patchbridge -g patchbridge -m 2770" "$tmp/err" ||
	fail "check-config does not name the missing spool: $(cat "$tmp/err")"
grep -q "warning: \[milter\] socket: Postfix's settings were not checked" "$tmp/err" ||
	fail "no warning about the missing Postfix: $(cat "$tmp/err")"
# The example bridges no project: the sample ones' files are not needed.
grep -q "kernel-net" "$tmp/err" && fail "a disabled sample project was checked"
mkdir -p "$tmp/etc" "$tmp/var/spool/patchbridge" "$tmp/var/lib/patchbridge" \
	"$tmp/var/spool/postfix/patchbridge"
printf 'token\n' >"$tmp/etc/gitlab-token"
printf 'subsystems: []\n' >"$tmp/etc/owners.yaml"
# The token as run takes it: mode 0600 (cli_secret_files has the rest).
run 78 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
# The fix names the daemon's user: never root, the documented user when
# root owns everything (core/preflight.h, preflight_owner()).
if [ "$(id -u)" -eq 0 ]; then
	if getent passwd patchbridge >/dev/null; then
		owner=patchbridge:$(id -gn patchbridge)
	else
		owner=patchbridge:patchbridge
	fi
else
	owner=$(id -un):$(id -gn)
fi
has "$tmp/err" "$tmp/example.conf: [forge] token_file: secret file $tmp/etc/gitlab-token: mode 0644 lets the group or others in: chown $owner $tmp/etc/gitlab-token; chmod 0600 $tmp/etc/gitlab-token"
chmod 0600 "$tmp/etc/gitlab-token"
run 0 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
has "$tmp/out" "$tmp/example.conf: ok"
# The attestation key is a secret file like the token.
cp "$tmp/example.conf" "$tmp/example.conf.orig"
printf '[outbound]\nattest = yes\nattest_key_file = %s\n' \
	"$tmp/etc/attest.key" >>"$tmp/example.conf"
run 78 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
has "$tmp/err" "$tmp/example.conf: [outbound] attest_key_file: $tmp/etc/attest.key: No such file or directory: make the key as the daemon's user: patchbridge attest-key --generate FILE"
run 0 -c "$tmp/example.conf" attest-key --generate
grep -q '^keyring: *ed25519/[^/]*/[^/]*/default$' "$tmp/out" ||
	fail "attest-key printed no keyring path: $(cat "$tmp/out")"
run 0 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
# What run would refuse as no key, check-config refuses too.
cp -p "$tmp/etc/attest.key" "$tmp/etc/attest.key.good"
printf 'not a key\n' >"$tmp/etc/attest.key"
run 78 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
has "$tmp/err" "$tmp/example.conf: [outbound] attest_key_file: secret file $tmp/etc/attest.key: not an ed25519 private key (the base64 of 32 bytes, as patatt genkey writes)"
mv "$tmp/etc/attest.key.good" "$tmp/etc/attest.key"
run 0 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
chmod 0644 "$tmp/etc/attest.key"
run 78 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
has "$tmp/err" "$tmp/example.conf: [outbound] attest_key_file: secret file $tmp/etc/attest.key: mode 0644 lets the group or others in: chown $owner $tmp/etc/attest.key; chmod 0600 $tmp/etc/attest.key"
mv "$tmp/example.conf.orig" "$tmp/example.conf"
# A project's keyring for series posted to the list: a directory; and
# with attestation required, something to verify a mail with.
cp "$tmp/example.conf" "$tmp/example.conf.orig"
printf '[project "k/attest"]\nattest_keyring = %s\nemail_require_attestation = yes\n' \
	"$tmp/etc/keyring" >>"$tmp/example.conf"
run 78 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
has "$tmp/err" "$tmp/example.conf: [project \"k/attest\"] attest_keyring: $tmp/etc/keyring: No such file or directory: check out the project's keyring there (ed25519/DOMAIN/LOCAL/SELECTOR), or unset attest_keyring"
mkdir -p "$tmp/etc/keyring/ed25519"
run 0 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
grep -v '^trusted_authserv_id' "$tmp/example.conf.orig" >"$tmp/example.conf"
printf '[project "k/attest"]\nemail_require_attestation = yes\n' \
	>>"$tmp/example.conf"
run 0 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
has "$tmp/err" "$tmp/example.conf: warning: project k/attest: email_require_attestation = yes, but neither attest_keyring nor [milter] trusted_authserv_id is set: every series posted to the list is refused"
mv "$tmp/example.conf.orig" "$tmp/example.conf"
# An owners.yaml that does not load is named with its line and column.
printf 'subsystems:\n  - subsystem: x\n    maintainers: 3\n' >"$tmp/etc/owners.yaml"
run 78 check-config --postfix-config "$tmp/nopostfix" "$tmp/example.conf"
grep -q "^$tmp/example.conf: \[inbound\] owners_file: .*owners.yaml:[0-9]*:[0-9]*: " "$tmp/err" ||
	fail "a broken owners.yaml is not named: $(cat "$tmp/err")"
run 64 check-config --frobnicate "$example"

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
has "$tmp/out" "[project \"tools/patchbridge\"] enabled = no"
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

# Hosts sharing a PostgreSQL state: a reply's claim is renewed before
# each try of a forge request once a quarter of the lease has gone, so
# three quarters of the lease must outlast one try and the wait before
# the next ([forge] timeout + retry_max; no wait without retries), and
# the lease one submission ([smtp] timeout).  Each figure is named, with
# what to set.
# lease_conf NAME [forge]-LINES [smtp]-LINES [state]-LINES
lease_conf() {
	printf '%s\n' "[bridge]" "address = bridge@example.org" \
		"domain = example.org" "list_address = list@example.org" \
		"[forge]" "url = https://gitlab.example.org" \
		"token_file = /etc/patchbridge/token" "$2" "[smtp]" "$3" \
		"[inbound]" "approval_policy = none" "[state]" \
		"backend = postgresql" "conninfo_file = /etc/patchbridge/db" \
		"$4" >"$tmp/$1.conf"
}
# The defaults fit: 4/3 x (1m + 5m) = 8m, under the default lease of 10m.
lease_conf lease-default "" "" ""
run 0 check-config --file-only "$tmp/lease-default.conf"
# 4/3 x (10s + 5s) = 20s: a lease of 20s is refused, 21s is the shortest;
# the error is on the latest line of those that set it (the lease's).
lease_conf lease-equal "timeout = 10s
max_retries = 1
retry_max = 5s" "timeout = 15s" "lease = 20s"
run 78 check-config --file-only "$tmp/lease-equal.conf"
has "$tmp/err" "$tmp/lease-equal.conf:18: [state] lease: 20s is too short for a forge request and the wait before its retry, [forge] timeout 10s + retry_max 5s, with the claim renewed after a quarter of the lease; set lease to 21s or more, or lower [forge] timeout or retry_max"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "a short lease: one error expected"
lease_conf lease-ok "timeout = 10s
max_retries = 1
retry_max = 5s" "timeout = 15s" "lease = 21s"
run 0 check-config --file-only "$tmp/lease-ok.conf"
# The number of retries does not count (each try renews the claim)...
lease_conf lease-retries "timeout = 10s
max_retries = 10
retry_max = 5s" "timeout = 15s" "lease = 21s"
run 0 check-config --file-only "$tmp/lease-retries.conf"
# ... and without retries there is no wait: 4/3 x 10s < 14s.
lease_conf lease-noretry "timeout = 10s
max_retries = 0" "timeout = 13s" "lease = 14s"
run 0 check-config --file-only "$tmp/lease-noretry.conf"
lease_conf lease-noretry-short "timeout = 10s
max_retries = 0" "timeout = 12s" "lease = 13s"
run 78 check-config --file-only "$tmp/lease-noretry-short.conf"
has "$tmp/err" "$tmp/lease-noretry-short.conf:17: [state] lease: 13s is too short for a forge request, [forge] timeout 10s (max_retries 0), with the claim renewed after a quarter of the lease; set lease to 14s or more, or lower [forge] timeout"
# The SMTP timeout: one submission under a mail's claim.
lease_conf lease-smtp "timeout = 10s
max_retries = 0" "" "lease = 30s"
run 78 check-config --file-only "$tmp/lease-smtp.conf"
has "$tmp/err" "$tmp/lease-smtp.conf:17: [state] lease: 30s is not longer than [smtp] timeout 1m, the longest submission of a mail under one claim; set lease above 1m, or lower [smtp] timeout"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "a short lease for a mail: one error expected"
# One host on SQLite: no other claimer, no rule.
sed -e '/^backend = /d' -e '/^conninfo_file = /d' "$tmp/lease-smtp.conf" \
	>"$tmp/lease-sqlite.conf"
run 0 check-config --file-only "$tmp/lease-sqlite.conf"

[ $failed = 0 ] && echo "cli_check_config: ok"
exit $failed
