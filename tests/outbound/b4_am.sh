#!/bin/sh
# b4_am.sh PATCHBRIDGE: b4, offline, reads a `patchbridge format` mbox as
# the series it is: the version, every patch in order, the cover letter.
#
# The series is revision 2 of the roundtrip repository (make-repo.sh), with
# a range-diff against v1 in its cover letter.  b4 reads the mbox from
# standard input (`b4 am -m -`): b4 0.12 (Debian 12) parses a named mbox
# file with the legacy compat32 email policy and then fails on any folded
# header ("Header values may not contain linefeed"), git format-patch's
# own output included; its standard-input path uses a modern policy.
set -eu
pb=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
command -v b4 >/dev/null || {
	echo "b4_am: b4 not installed, skipping"
	exit 77
}
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/b4am.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# b4 reads git's config (it wants an identity) and writes a cache under
# HOME; keep both private.  No network: -m reads a local mbox.
export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C.UTF-8 TZ=UTC
export XDG_CACHE_HOME="$tmp/cache" XDG_DATA_HOME="$tmp/data"
mkdir -p "$HOME"
git config --global user.name "B4 Tester"
git config --global user.email "b4@example.org"

fail() {
	echo "b4_am: FAIL: $*" >&2
	exit 1
}

sh "$here/make-repo.sh" roundtrip "$tmp/repo" >/dev/null
"$pb" format --repo "$tmp/repo" --base base --head head --version 2 \
	--range-diff base..v1 --to "list@example.org" -o "$tmp/v2.mbox" ||
	fail "patchbridge format exited $?"
total=$(grep -c '^Subject: \[PATCH v2 [0-9]*/11\]' "$tmp/v2.mbox") || true
[ "$total" = 12 ] || fail "expected 12 mails in the mbox, found $total"

mkdir "$tmp/out"
(cd "$tmp" && b4 am -m - -o "$tmp/out" <"$tmp/v2.mbox") >"$tmp/b4.log" 2>&1 || {
	cat "$tmp/b4.log" >&2
	fail "b4 am exited non-zero"
}
cat "$tmp/b4.log"

# All eleven patches, in order, as v2.
grep -E '^  \[PATCH v2 [0-9]+/11\]' "$tmp/b4.log" |
	sed -E 's/^  \[PATCH v2 ([0-9]+)\/11\].*/\1/' >"$tmp/order"
seq 1 11 >"$tmp/want"
cmp -s "$tmp/order" "$tmp/want" || fail "patches not found in order 1..11"
grep -q '^Total patches: 11$' "$tmp/b4.log" || fail "b4 did not count 11"
grep -q 'ERROR' "$tmp/b4.log" && fail "b4 reported an error"
# The cover letter, found and saved.
grep -q '^Cover: ' "$tmp/b4.log" || fail "b4 found no cover letter"
cover=$(ls "$tmp/out"/v2_*.cover 2>/dev/null) || fail "no v2 cover file"
grep -q 'Range-diff against v1:' "$cover" || fail "cover lacks the range-diff"
mbx=$(ls "$tmp/out"/v2_*.mbx 2>/dev/null) || fail "no v2 mbx file"
n=$(grep -c '^Subject: \[PATCH v2 [0-9]*/11\]' "$mbx") || true
[ "$n" = 11 ] || fail "b4's mbx holds $n patches, want 11"
echo "b4_am: ok (v2, 11 patches in order, cover letter)"
