#!/bin/sh
# attest_b4.sh PATCHBRIDGE: the real b4 and the real patatt check the
# attestation of a series the bridge signed.
#
# The bridge's key is made with `patchbridge attest-key --generate` and
# published as an operator would: committed to a keyring repository in
# patatt's layout (ed25519/DOMAIN/LOCAL/SELECTOR).  The series is
# revision 2 of the roundtrip repository (make-repo.sh: QP bodies,
# encoded subjects, in-body From lines, CRLF in a patch), signed by
# `patchbridge format --attest-key`, which signs with the daemon's code
# (series_attest_text()).  Then, as a reader of the list would:
#
#   - patatt validate (python3-patatt, keys from the keyring directory)
#     passes every mail for the bridge's identity;
#   - b4 am (Debian's b4 0.12, the keyring repository as b4.keyringsrc,
#     attestation-policy hardfail) reports "Signed" for the bridge's
#     key and applies the series;
#   - a mail with one byte changed in transit fails both: patatt says
#     BADSIG for that mail, b4 refuses the series (hardfail);
#   - without the key published, both say so (no key), never "passed".
#
# Both tools are required: without them the test fails (the real tools
# are the point).
set -eu
pb=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
fail() {
	echo "attest_b4: FAIL: $*" >&2
	exit 1
}
command -v b4 >/dev/null || fail "b4 is not installed (scripts/install-deps.sh)"
"$py" -c 'import patatt, nacl' 2>/dev/null ||
	fail "python3-patatt is not installed (scripts/install-deps.sh)"
name=attest_b4
. "$here/testenv.sh"
# b4 and patatt keep their caches and keyrings under XDG's directories
export XDG_CACHE_HOME="$tmp/cache" XDG_DATA_HOME="$tmp/data"
git config --global init.defaultBranch main
git config --global user.email "reader@example.org"
git config --global user.name "A Reader"
patatt() {
	"$py" -c 'import sys, patatt; sys.exit(patatt.command())' "$@"
}
id=patchbridge@lists.example.org

# The key, and the keyring an operator commits it to.
umask 077
"$pb" attest-key --generate --identity "$id" "$tmp/bridge.key" \
	>"$tmp/attest-key.out" || fail "attest-key --generate exited $?"
umask 022
grep -q "^keyring: *ed25519/lists.example.org/patchbridge/default$" \
	"$tmp/attest-key.out" || fail "attest-key printed no keyring path"
pub=$("$pb" attest-key --public "$tmp/bridge.key")
[ -n "$pub" ] || fail "attest-key --public printed nothing"
git init -q "$tmp/keyring"
mkdir -p "$tmp/keyring/.keys/ed25519/lists.example.org/patchbridge"
echo "$pub" >"$tmp/keyring/.keys/ed25519/lists.example.org/patchbridge/default"
git -C "$tmp/keyring" add .keys
git -C "$tmp/keyring" commit -q -m "keys: $id"

sh "$here/make-repo.sh" roundtrip "$tmp/repo" >/dev/null
"$pb" format --repo "$tmp/repo" --base base --head head --version 2 \
	--range-diff base..v1 --to "list@example.org" \
	--bridge-address "$id" --attest-key "$tmp/bridge.key" \
	-o "$tmp/v2.mbox" || fail "patchbridge format exited $?"
n=$(grep -c '^X-Developer-Signature: v=1; a=ed25519-sha256;' "$tmp/v2.mbox") ||
	true
[ "$n" = 12 ] || fail "expected 12 signed mails, found $n"
grep -q "^X-Developer-Key: i=$id; a=ed25519;" "$tmp/v2.mbox" ||
	fail "no X-Developer-Key for $id"

# patatt validate, keys from the keyring's directory.
git config --global patatt.keyringsrc "$tmp/keyring/.keys"
patatt validate "$tmp/v2.mbox" >"$tmp/patatt.log" 2>&1 || {
	cat "$tmp/patatt.log" >&2
	fail "patatt validate exited $? on the series as signed"
}
n=$(grep -c "^  PASS | $id, " "$tmp/patatt.log") || true
[ "$n" = 12 ] || {
	cat "$tmp/patatt.log" >&2
	fail "patatt passed $n mails of 12"
}
git config --global --unset patatt.keyringsrc

# b4 am, keys from the keyring repository's branch, as b4 reads them.
git config --global b4.keyringsrc "ref:$tmp/keyring:refs/heads/main:.keys"
git config --global b4.attestation-policy hardfail
b4am() { # mbox outdir log
	mkdir -p "$2"
	(cd "$tmp" && b4 am -m - -o "$2" <"$1") >"$3" 2>&1
}
b4am "$tmp/v2.mbox" "$tmp/out" "$tmp/b4.log" || {
	cat "$tmp/b4.log" >&2
	fail "b4 am exited $? on the series as signed"
}
cat "$tmp/b4.log"
grep -q "Signed: ed25519/$id" "$tmp/b4.log" ||
	fail "b4 did not report the bridge's signature"
grep -qE 'BADSIG|No key|ERROR' "$tmp/b4.log" && fail "b4 reported a failure"
grep -q '^Total patches: 11$' "$tmp/b4.log" || fail "b4 did not take 11 patches"

# One byte changed in transit: in patch 1's diff, a "+" line's letter.
awk 'BEGIN { m = 0 }
	/^From [0-9a-f]+ Mon Sep 17 00:00:00 2001$/ { m++ }
	m == 2 && !done && /^\+[a-z]/ { sub(/^\+./, "+X"); done = 1 }
	{ print }' "$tmp/v2.mbox" >"$tmp/changed.mbox"
cmp -s "$tmp/v2.mbox" "$tmp/changed.mbox" && fail "the byte was not changed"
git config --global patatt.keyringsrc "$tmp/keyring/.keys"
if patatt validate "$tmp/changed.mbox" >"$tmp/patatt-bad.log" 2>&1; then
	cat "$tmp/patatt-bad.log" >&2
	fail "patatt validate passed a changed mail"
fi
cat "$tmp/patatt-bad.log"
n=$(grep -c "^BADSIG | $id, \[PATCH v2 01/11\]" "$tmp/patatt-bad.log") || true
[ "$n" = 1 ] || fail "patatt did not find patch 1 BADSIG"
n=$(grep -c "^  PASS | $id, " "$tmp/patatt-bad.log") || true
[ "$n" = 11 ] || fail "patatt passed $n of the 11 unchanged mails"
git config --global --unset patatt.keyringsrc
if b4am "$tmp/changed.mbox" "$tmp/out-bad" "$tmp/b4-bad.log"; then
	cat "$tmp/b4-bad.log" >&2
	fail "b4 am (hardfail) took a series with a changed mail"
fi
cat "$tmp/b4-bad.log"
grep -q "BADSIG: ed25519/$id" "$tmp/b4-bad.log" ||
	fail "b4 did not report BADSIG for the bridge's key"

# No key published: told apart from a pass and from a forgery.
git config --global b4.keyringsrc "$tmp/nowhere"
git config --global b4.attestation-policy softfail
b4am "$tmp/v2.mbox" "$tmp/out-nokey" "$tmp/b4-nokey.log" || true
grep -q "No key: ed25519/$id" "$tmp/b4-nokey.log" || {
	cat "$tmp/b4-nokey.log" >&2
	fail "b4 did not say the key is missing"
}
echo "attest_b4: ok (patatt validate and b4 am pass the bridge's" \
	"signature on 12 mails; one changed byte fails both)"
