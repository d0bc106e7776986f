#!/bin/sh
# format_jobs.sh PATCHBRIDGE: `patchbridge format --jobs N` (patches
# rendered ahead on N threads, outbound/patchahead.c) writes the bytes
# `--jobs 1` writes, on the round-trip repository of make-repo.sh (renames,
# binary files, mode changes, a 100-file commit) and on 60 commits of the
# bench one; and a patch that cannot be rendered (its blob is missing)
# fails the same way whatever N: the same exit status, the same message,
# the mails before it written and none after.
set -eu
pb=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
name=format-jobs
. "$here/testenv.sh"

fail() {
	echo "format_jobs: FAIL: $*" >&2
	exit 1
}

# fmt REPO OUT JOBS [ARGS...]: format base..head; the exit status in
# OUT.rc, standard error in OUT.err.
fmt() {
	fmt_repo=$1
	fmt_out=$2
	fmt_jobs=$3
	shift 3
	fmt_rc=0
	"$pb" format --repo "$fmt_repo" --base base --head head \
		--max-series 9999 --date 1700000000 --project jobs \
		--jobs "$fmt_jobs" "$@" -o - >"$fmt_out" 2>"$fmt_out.err" ||
		fmt_rc=$?
	echo "$fmt_rc" >"$fmt_out.rc"
}

sh "$here/make-repo.sh" roundtrip "$tmp/rt" >/dev/null
sh "$here/make-repo.sh" bench "$tmp/bench" 60 >/dev/null
for r in rt bench; do
	fmt "$tmp/$r" "$tmp/$r.1" 1
	[ "$(cat "$tmp/$r.1.rc")" = 0 ] || fail "$r: --jobs 1 failed"
	[ -s "$tmp/$r.1" ] || fail "$r: --jobs 1 wrote nothing"
	for j in 2 8; do
		fmt "$tmp/$r" "$tmp/$r.$j" "$j"
		[ "$(cat "$tmp/$r.$j.rc")" = 0 ] || fail "$r: --jobs $j failed"
		cmp -s "$tmp/$r.1" "$tmp/$r.$j" ||
			fail "$r: --jobs $j differs from --jobs 1"
	done
done
# Above --max-series: the cover letter alone, no patch rendered.
for j in 1 2; do
	fmt "$tmp/bench" "$tmp/cover.$j" "$j" --max-series 50
	[ "$(cat "$tmp/cover.$j.rc")" = 0 ] || fail "cover only: --jobs $j failed"
done
cmp -s "$tmp/cover.1" "$tmp/cover.2" || fail "cover only: --jobs 2 differs"

# A blob lost from a repository of loose objects: the fifth commit's
# file as the fourth made it, which the fourth and fifth patches need
# and the cover letter's diffstat (base to head) does not.
f=$tmp/lost
git init -q -b main "$f"
git -C "$f" config user.name "Setup"
git -C "$f" config user.email "setup@example.org"
export GIT_AUTHOR_DATE="@1700000000 +0000" GIT_COMMITTER_DATE="@1700000000 +0000"
echo base >"$f/README"
git -C "$f" add README
git -C "$f" commit -q -m base
git -C "$f" tag base
i=1
while [ $i -le 9 ]; do
	if [ $i = 4 ]; then
		echo "first version" >"$f/x"
	elif [ $i = 5 ]; then
		echo "second version" >"$f/x"
	else
		seq 1 $((i * 10)) >"$f/f$i"
	fi
	git -C "$f" add -A
	git -C "$f" commit -q -m "change $i"
	i=$((i + 1))
done
git -C "$f" tag head
lost=$(echo "first version" | git -C "$f" hash-object --stdin)
rm "$f/.git/objects/$(echo "$lost" | cut -c1-2)/$(echo "$lost" | cut -c3-)"

fmt "$f" "$tmp/lost.1" 1
[ "$(cat "$tmp/lost.1.rc")" != 0 ] || fail "a lost blob: --jobs 1 succeeded"
grep -q "${lost%${lost#???????}}" "$tmp/lost.1.err" ||
	fail "a lost blob: the message does not name it: $(cat "$tmp/lost.1.err")"
# The cover letter and patches 1-3, nothing of the fourth.
[ "$(grep -c '^From [0-9a-f]\{40\} Mon Sep 17 00:00:00 2001$' \
	"$tmp/lost.1")" = 4 ] || fail "a lost blob: not the mails before it"
for j in 2 8; do
	fmt "$f" "$tmp/lost.$j" "$j"
	for x in "" .rc .err; do
		cmp -s "$tmp/lost.1$x" "$tmp/lost.$j$x" ||
			fail "a lost blob: --jobs $j: ${x:-.out} differs from --jobs 1"
	done
done
echo "format_jobs: ok"
