#!/bin/sh
# gitam_roundtrip.sh PATCHBRIDGE: `git am` of a `patchbridge format` mbox
# rebuilds the series exactly.
#
# The repository (make-repo.sh roundtrip) holds what breaks naive patch
# mailers: non-ASCII names, committer != author, renames, binary files,
# mode changes, a 100-file commit, CRLF and > 998-byte lines in content,
# a title spanning lines (CRLF ends) with "=?...?=" in it, a body line
# starting "From ", a merge and an empty commit.  Checks:
#  1. the mbox follows the mail rules (mboxtool.py check);
#  2. git am onto base in a fresh clone gives head's tree, byte for byte;
#  3. every commit's author name, email, date and message equal those of
#     git's own round trip (git format-patch | git am --keep-cr), and
#     equal the original commit's except where git itself normalises the
#     message (the multi-line title);
#  4. the patch text (from "---" to the signature) equals git
#     format-patch's, except for what libgit2 computes differently and
#     git apply does not read: rename similarity and deflate bytes of
#     binary patches.
set -eu
pb=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/roundtrip.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C.UTF-8 TZ=UTC
mkdir -p "$HOME"
git config --global user.name "Applier"
git config --global user.email "applier@example.org"
git config --global init.defaultBranch main
git config --global advice.detachedHead false

fail() {
	echo "gitam_roundtrip: FAIL: $*" >&2
	exit 1
}

sh "$here/make-repo.sh" roundtrip "$tmp/repo" >/dev/null
"$pb" format --repo "$tmp/repo" --base base --head head \
	--to "list@example.org" -o "$tmp/ours.mbox" ||
	fail "patchbridge format exited $?"
/usr/bin/python3 "$here/mboxtool.py" check "$tmp/ours.mbox" >"$tmp/subjects" ||
	fail "mbox check"
echo "subjects:"
sed 's/^/  /' "$tmp/subjects"

apply() { # MBOX DIR [git-am options]
	mbox=$1
	dir=$2
	shift 2
	git clone -q "$tmp/repo" "$dir"
	git -C "$dir" checkout -q --detach base
	git -C "$dir" am -q "$@" "$mbox" >"$dir.log" 2>&1 || {
		cat "$dir.log" >&2
		fail "git am $mbox"
	}
}

# 2. the tree.
/usr/bin/python3 "$here/mboxtool.py" strip-cover "$tmp/ours.mbox" >"$tmp/ours-patches.mbox"
apply "$tmp/ours-patches.mbox" "$tmp/ours" --quoted-cr=nowarn
want=$(git -C "$tmp/repo" rev-parse 'head^{tree}')
got=$(git -C "$tmp/ours" rev-parse 'HEAD^{tree}')
[ "$want" = "$got" ] || {
	git -C "$tmp/ours" diff --stat HEAD head >&2 || true
	fail "tree $got after git am, want $want"
}
echo "tree: $got (= head)"

# 3. authorship and messages.
fmt='%an%x00%ae%x00%ad%x00%B%x01'
git -C "$tmp/repo" format-patch --stdout base..head >"$tmp/git.mbox"
apply "$tmp/git.mbox" "$tmp/ref" --keep-cr
git -C "$tmp/ours" log --reverse --format="$fmt" base..HEAD >"$tmp/ours.log"
git -C "$tmp/ref" log --reverse --format="$fmt" base..HEAD >"$tmp/ref.log"
cmp -s "$tmp/ours.log" "$tmp/ref.log" || {
	diff -a "$tmp/ref.log" "$tmp/ours.log" >&2 || true
	fail "authors/messages differ from git's own round trip"
}
# The original commits in the same order, merges and empty commits out.
: >"$tmp/orig.log"
for c in $(git -C "$tmp/repo" rev-list --reverse --date-order --no-merges base..head); do
	if [ "$(git -C "$tmp/repo" rev-parse "$c^{tree}")" = \
	     "$(git -C "$tmp/repo" rev-parse "$c^^{tree}")" ]; then
		continue
	fi
	git -C "$tmp/repo" log -1 --format="$fmt" "$c" >>"$tmp/orig.log"
done
n=$(tr -cd '\001' <"$tmp/ours.log" | wc -c)
m=$(tr -cd '\001' <"$tmp/orig.log" | wc -c)
[ "$n" = "$m" ] || fail "$n commits applied, $m expected"
# Compare record by record; only the multi-line title may differ, and
# only in its message.
/usr/bin/python3 - "$tmp/orig.log" "$tmp/ours.log" <<'PY' || fail "commits differ from the originals"
import sys
def records(path):
    recs = open(path, 'rb').read().split(b'\x01')
    return [r.lstrip(b'\n').split(b'\0') for r in recs if r.strip()]
orig = records(sys.argv[1])
ours = records(sys.argv[2])
bad = 0
for o, a in zip(orig, ours):
    if o[:3] != a[:3]:
        print('author differs: %r vs %r' % (o[:3], a[:3]))
        bad += 1
    elif o[3] != a[3]:
        if o[3].startswith(b'Title with =?UTF-8?q?'):
            # git joins a title's lines and drops CRs (pretty.c).
            want = (b'Title with =?UTF-8?q?not=20encoded?= and continued '
                    b'on a second line\n\nFrom the body: a line an mbox '
                    b'reader would split at.\n')
            if a[3] == want:
                continue
        print('message differs: %r vs %r' % (o[3], a[3]))
        bad += 1
print('commits: %d compared with the originals, %d differ' % (len(orig), bad))
sys.exit(1 if bad else 0)
PY

# 4. the patch text against git format-patch's.
/usr/bin/python3 "$here/mboxtool.py" patches "$tmp/ours.mbox" >"$tmp/ours.p"
/usr/bin/python3 "$here/mboxtool.py" patches "$tmp/git.mbox" >"$tmp/git.p"
# Numbering differs (git counts the empty commit it does not mail).
normalise() {
	sed -e 's/^=== \[PATCH [0-9]*\/[0-9]*\]/=== [PATCH]/' \
	    -e 's/^\( rename .*\) ([0-9]*%)$/\1 (N%)/' \
	    -e 's/^similarity index [0-9]*%$/similarity index N%/' "$1" |
		awk '/^(literal|delta) [0-9]+$/ { bin = 1; print; next }
		     bin && /^$/ { bin = 0 }
		     bin { next } { print }'
}
normalise "$tmp/git.p" >"$tmp/git.n"
normalise "$tmp/ours.p" >"$tmp/ours.n"
cmp -s "$tmp/git.n" "$tmp/ours.n" || {
	diff -a "$tmp/git.n" "$tmp/ours.n" >&2 || true
	fail "patch text differs from git format-patch"
}
echo "patch text: identical to git format-patch (similarity %, deflate aside)"
echo "gitam_roundtrip: ok"
