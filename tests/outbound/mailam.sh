#!/bin/sh
# mailam.sh AM_TOOL: a series posted to the list, applied by the bridge
# (AM_TOOL: mail/mailinfo.c and gitrepo_am()), makes the commits `git am`
# makes of the same mails: for each commit the same tree, author name,
# email and date (time and zone), and message, and the patch-id of the
# mail.  The mails are `git format-patch` output, the text git
# send-email mails, of:
#   golden   make-repo.sh's small series: a change, a rename with a mode
#            change by a non-ASCII author, a binary file;
#   topic    a topic written here to cover what mailinfo reads: an
#            in-body From and Date (a patch sent for another author), a
#            zone west of UTC, trailers, a body with blank-line runs and
#            trailing blanks, a "Re:" and a list tag removed, a name of
#            two letters;
#   roundtrip  make-repo.sh's hard cases (below);
# and a patch that does not apply is named with libgit2's message.
set -eu
tool=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
name=mailam
. "$here/testenv.sh"
git config --global user.name "Applier"
git config --global user.email "applier@example.org"
git config --global init.defaultBranch main
git config --global advice.detachedHead false

fail() {
	echo "mailam: FAIL: $*" >&2
	exit 1
}

# What is compared of each commit: tree, author, date as git keeps it
# (seconds and zone), message.
fmt='%T%x00%an%x00%ae%x00%ad%x00%B%x01'

check() { # NAME REPO MAIL...
	name=$1
	repo=$2
	shift 2
	base=$(git -C "$repo" rev-parse 'base^{commit}')
	git clone -q "$repo" "$tmp/$name-ref"
	git -C "$tmp/$name-ref" checkout -q --detach "$base"
	git -C "$tmp/$name-ref" am -q "$@" >"$tmp/$name-am.log" 2>&1 || {
		cat "$tmp/$name-am.log" >&2
		fail "$name: git am"
	}
	head=$("$tool" "$repo" "$base" "$@") ||
		fail "$name: am_tool exited $?"
	git -C "$repo" log --reverse --date=raw --format="$fmt" \
		"$base..$head" >"$tmp/$name-ours.log"
	git -C "$tmp/$name-ref" log --reverse --date=raw --format="$fmt" \
		"$base..HEAD" >"$tmp/$name-ref.log"
	cmp -s "$tmp/$name-ours.log" "$tmp/$name-ref.log" || {
		diff -a "$tmp/$name-ref.log" "$tmp/$name-ours.log" >&2 || true
		fail "$name: commits differ from git am's"
	}
	# The patch-id of each commit is its mail's.
	: >"$tmp/$name-ids.mail"
	for m in "$@"; do
		git patch-id --stable <"$m" | cut -d' ' -f1 >>"$tmp/$name-ids.mail"
	done
	: >"$tmp/$name-ids.ours"
	for c in $(git -C "$repo" rev-list --reverse "$base..$head"); do
		git -C "$repo" format-patch -1 --stdout "$c" | git patch-id --stable |
			cut -d' ' -f1 >>"$tmp/$name-ids.ours"
	done
	cmp -s "$tmp/$name-ids.mail" "$tmp/$name-ids.ours" || {
		diff "$tmp/$name-ids.mail" "$tmp/$name-ids.ours" >&2 || true
		fail "$name: patch-ids differ from the mails'"
	}
	n=$(wc -l <"$tmp/$name-ids.ours")
	[ "$n" -gt 0 ] || fail "$name: no commits"
	echo "$name: $n commits as git am makes them (head $head)"
}

# 1. make-repo.sh's golden series.
sh "$here/make-repo.sh" golden "$tmp/golden" >/dev/null
git -C "$tmp/golden" format-patch -q -o "$tmp/golden-mails" base..head
check golden "$tmp/golden" "$tmp/golden-mails"/*.patch

# 2. A topic of what mailinfo reads.
r="$tmp/topic"
git init -q "$r"
git -C "$r" config user.name "Setup"
git -C "$r" config user.email "setup@example.org"
seq 1 40 | sed 's/^/row /' >"$r/table.txt"
git -C "$r" add -A
GIT_AUTHOR_DATE="@1700000000 +0000" GIT_COMMITTER_DATE="@1700000000 +0000" \
	git -C "$r" commit -q -m "Initial"
git -C "$r" tag base
sed -i 's/^row 5$/row five/' "$r/table.txt"
git -C "$r" add -A
printf '%s\n' "table: spell out five" "" "" "" \
	"Runs of blank lines above collapse to one.   " "" \
	"Signed-off-by: Ann Author <ann@example.org>" >"$tmp/m1"
GIT_AUTHOR_NAME="Ann Author" GIT_AUTHOR_EMAIL="ann@example.org" \
	GIT_AUTHOR_DATE="@1700003600 -0700" \
	git -C "$r" commit -q --cleanup=verbatim -F "$tmp/m1"
sed -i 's/^row 9$/row nine/' "$r/table.txt"
git -C "$r" add -A
GIT_AUTHOR_NAME="Bo" GIT_AUTHOR_EMAIL="bo@example.org" \
	GIT_AUTHOR_DATE="@1700007200 +0930" \
	git -C "$r" commit -q -m "table: nine, by an author with a short name"
git -C "$r" tag head
git -C "$r" format-patch -q -o "$tmp/topic-mails" base..head
# Sent by someone else for Ann: git send-email's in-body From, and the
# sender's own From and Date.
f=$(ls "$tmp/topic-mails"/0001-*)
awk 'BEGIN { body = 0 }
	!body && /^From: / { print "From: Sam Sender <sam@example.org>"; next }
	!body && /^Date: / { print "Date: Wed, 6 Dec 2023 10:00:00 +0100"; next }
	!body && /^Subject: / { sub(/^Subject: /, "Subject: Re: [list] "); print; next }
	!body && /^$/ { body = 1; print; print "From: Ann Author <ann@example.org>"; print "Date: Tue, 14 Nov 2023 15:13:20 -0700"; print ""; next }
	{ print }' "$f" >"$tmp/sent" && mv "$tmp/sent" "$f"
check topic "$r" "$tmp/topic-mails"/*.patch

# 3. make-repo.sh's hard cases for git am, the first five: a non-ASCII
# author east of UTC, renames (with a change, pure), a deletion, binary
# files (new, changed), mode changes, a 100-file commit.  (Its sixth,
# CRLF in content, git am itself does not apply without --keep-cr.)
sh "$here/make-repo.sh" roundtrip "$tmp/rt" >/dev/null
git -C "$tmp/rt" format-patch -q -o "$tmp/rt-mails" base..head
check roundtrip "$tmp/rt" "$tmp/rt-mails"/000[1-5]-*.patch

# 4. A patch that does not apply names itself.
sed -i 's/^-row 9$/-row 99/' "$tmp/topic-mails"/0002-*
base=$(git -C "$r" rev-parse 'base^{commit}')
if "$tool" "$r" "$base" "$tmp/topic-mails"/*.patch 2>"$tmp/err"; then
	fail "a patch that does not apply was applied"
fi
grep -q '^patch 2: apply the patch: ' "$tmp/err" || {
	cat "$tmp/err" >&2
	fail "no message naming patch 2"
}
echo "does not apply: $(cat "$tmp/err")"
