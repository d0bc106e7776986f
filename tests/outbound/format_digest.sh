#!/bin/sh
# format_digest.sh PATCHBRIDGE [--update]: `patchbridge format` of a fixed
# range of this repository's own history - the one the format benchmark
# times (tests/bench/format_bench.sh): 727 commits from a31311f to
# 3a875bc, 15 MB of mbox - and of a later 89-commit range with a
# range-diff against an earlier one, hashed with SHA-256 and compared
# with tests/data/outbound/format-history.sha256.  The recorded digests
# are those of the build before the renderer was made faster, so a speed
# change that alters one byte fails here.  The version string is replaced
# by "VERSION" before hashing, as in golden.sh.  --update rewrites the
# file (only for a change that means to alter the output: review it with
# the golden tests first).
#
# Skipped (77) when the history is not in the repository holding this
# script (a shallow clone, a tarball).
set -eu
pb=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
name=format-digest
. "$here/testenv.sh"

root=a31311f5c1bd6c96d04ba980ea198970b4cd01bd
head=3a875bc50b2fb7ae49ee65fa9d32991e05a37fbd
# 89 commits to head, and the 4 of them an earlier revision had.
b2=63a40c0ce4469b39f669f66283c5ce6d41a34c65
v1=7fb3eef36f0dd0c6dab905bdf627ab38b93b1e29

repo=$(git -C "$here" rev-parse --path-format=absolute --git-common-dir \
	2>/dev/null) || repo=
for c in $root $head $b2 $v1; do
	if [ -z "$repo" ] || ! git -C "$repo" cat-file -e "$c^{commit}" \
		2>/dev/null; then
		echo "format_digest: SKIP: commit $c is not in this clone"
		exit 77
	fi
done

digest() {
	"$pb" format --repo "$repo" --max-series 9999 --date 1700000000 \
		--project history "$@" -o "$tmp/out.mbox"
	sed -E 's/patchbridge [0-9]+\.[0-9]+\.[0-9]+[^ ]*$/patchbridge VERSION/' \
		"$tmp/out.mbox" | sha256sum | cut -d' ' -f1
}
{
	echo "$(digest --base $root --head $head) series $root..$head"
	echo "$(digest --base $b2 --head $head --version 2 \
		--range-diff $b2..$v1) range-diff $b2..$v1 $b2..$head"
} >"$tmp/got"

if [ "${2:-}" = --update ]; then
	cp "$tmp/got" "$data/format-history.sha256"
	echo "format_digest: updated $data/format-history.sha256"
	exit 0
fi
cmp -s "$data/format-history.sha256" "$tmp/got" || {
	diff "$data/format-history.sha256" "$tmp/got" >&2 || true
	echo "format_digest: FAIL: the output of the history ranges changed" >&2
	exit 1
}
echo "format_digest: ok"
