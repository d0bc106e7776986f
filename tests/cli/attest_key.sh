#!/bin/bash
# attest_key.sh PATCHBRIDGE: `patchbridge attest-key` and the daemon's
# start with [outbound] attest.
#
#   1. --generate writes a key of mode 0600 and never over a file; the
#      public key and the keyring path (quote_plus'd, lower-cased) as
#      patatt lays them out; --public alone; usage errors;
#   2. a key file the group may read, or one that is not a key, is
#      refused with the file named;
#   3. run --once with attest = yes starts with a good key and stops at
#      once, naming the file, with a bad one (the daemon against closed
#      ports: daemon_conf.sh).
set -u
PB=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/daemon_conf.sh"
T=$(mktemp -d "${PB_TEST_TMP:-/tmp}/attest_key.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() {
	echo "attest_key: FAIL: $*" >&2
	exit 1
}
run() { # WANT CMD...: stdout in $T/out, stderr in $T/err
	local want=$1 got
	shift
	timeout 60 "$@" >"$T/out" 2>"$T/err" </dev/null
	got=$?
	[ "$got" = "$want" ] ||
		fail "$*: exit $got, expected $want: $(head -c 2000 "$T/err")"
}
has() { # FILE TEXT: a line of FILE is TEXT
	grep -qxF -- "$2" "$1" || fail "$1 lacks: $2 (has: $(cat "$1"))"
}
export PATCHBRIDGE_CONFIG=$T/none.conf

echo "[1] --generate, --public, the keyring path"
run 0 "$PB" attest-key --generate --identity Bridge@Lists.Example.org \
	"$T/k1"
[ "$(stat -c %a "$T/k1")" = 600 ] || fail "the key is not mode 0600"
[ "$(wc -c <"$T/k1")" = 44 ] || fail "the key is not 44 bytes of base64"
has "$T/out" "identity:    Bridge@Lists.Example.org"
has "$T/out" "keyring:     ed25519/lists.example.org/bridge/default"
pub=$(sed -n 's/^public key: *//p' "$T/out")
run 0 "$PB" attest-key --public "$T/k1"
has "$T/out" "$pub"
[ "$(wc -l <"$T/out")" = 1 ] || fail "--public printed more than the key"
run 73 "$PB" attest-key --generate "$T/k1"
grep -q "File exists" "$T/err" || fail "no reason: $(cat "$T/err")"
run 0 "$PB" attest-key --selector "2027 a" --identity "a/b@x" "$T/k1"
has "$T/out" "keyring:     ed25519/x/a%2Fb/2027+a"
run 64 "$PB" attest-key
run 64 "$PB" attest-key --frobnicate "$T/k1"
run 64 "$PB" attest-key "$T/k1" "$T/k2"

echo "[2] a key file others may read, a file that is no key"
cp -p "$T/k1" "$T/k2"
chmod 0640 "$T/k2"
run 77 "$PB" attest-key --public "$T/k2"
grep -q "mode 0640 lets the group or others in" "$T/err" ||
	fail "no mode in: $(cat "$T/err")"
(umask 077 && printf 'not a key\n' >"$T/k3")
run 65 "$PB" attest-key --public "$T/k3"
grep -qF "$T/k3: not an ed25519 private key" "$T/err" ||
	fail "the file is not named: $(cat "$T/err")"

echo "[3] the daemon's start"
mkdir -p "$T/etc" "$T/state" "$T/run" "$T/spool"
for a in tmp new cur done dead; do mkdir -p "$T/spool/$a"; done
(umask 077 && printf 'token\n' >"$T/etc/token")
daemon_conf "$T/pb.conf" "$T"
printf '[outbound]\nattest = yes\nattest_key_file = %s\n' "$T/k1" \
	>>"$T/pb.conf"
run 0 "$PB" -c "$T/pb.conf" run --once --foreground
sed -i "s|^attest_key_file = .*|attest_key_file = $T/k3|" "$T/pb.conf"
run 78 "$PB" -c "$T/pb.conf" run --once --foreground
grep -qF "[outbound] attest_key_file: secret file $T/k3: not an ed25519 private key" \
	"$T/err" || fail "run does not name the bad key: $(cat "$T/err")"
sed -i "s|^attest_key_file = .*|attest_key_file = $T/k2|" "$T/pb.conf"
run 77 "$PB" -c "$T/pb.conf" run --once --foreground
grep -q "mode 0640 lets the group or others in" "$T/err" ||
	fail "run does not refuse a readable key: $(cat "$T/err")"
echo "attest_key: ok"
