#!/bin/sh
# make-repo.sh KIND DIR [N]: build a test repository with real git, with
# fixed identities and dates so that every run gives the same commits.
#
#   roundtrip  the hard cases for git am: non-ASCII names, committer !=
#              author, renames, binary files, mode changes, a 100-file
#              commit, CRLF and > 998-byte lines in content, a title that
#              spans lines (CRLF ends) and holds "=?...?=", a body line
#              starting "From ", a merge commit and an empty commit in the
#              range.  Tags: base, head, v1 (an earlier revision of head).
#   golden     a small fixed series for the golden mbox.  Tags: base, head.
#   bench      N commits on top of a base with many files.  Tags: base,
#              head.
set -eu
kind=$1
dir=$2
n=${3:-500}

rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
git init -q -b main .
git config user.name "Setup"
git config user.email "setup@example.org"
git config commit.gpgsign false
git config core.autocrlf false

# Fixed clock: every commit one minute after the previous.
t=1700000000
tick() {
	t=$((t + 60))
	export GIT_AUTHOR_DATE="@$t ${TZ_AUTHOR:-+0000}"
	export GIT_COMMITTER_DATE="@$t +0000"
}
as() { # NAME EMAIL
	export GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2"
	export GIT_COMMITTER_NAME="${CNAME:-$1}" GIT_COMMITTER_EMAIL="${CMAIL:-$2}"
}
commit() { # TITLE | -m PARA [-m PARA...]
	tick
	git add -A
	if [ "$1" = -m ]; then
		git commit -q --allow-empty "$@"
	else
		git commit -q --allow-empty -m "$1"
	fi
}
commit_file() { # FILE: verbatim message from a file
	tick
	git add -A
	git commit -q --allow-empty --cleanup=verbatim -F "$1"
}

case $kind in
golden)
	as "Ada Lovelace" "ada@example.org"
	printf 'hello\nworld\n' >hello.txt
	printf '#!/bin/sh\necho hi\n' >run.sh
	commit "Initial import"
	git tag base
	printf 'hello\nbrave new\nworld\n' >hello.txt
	commit -m "hello: add a line" -m "The world deserves an adjective."
	as "Zoë Çelik" "zoe@example.org"
	git mv run.sh tool.sh
	chmod +x tool.sh
	commit -m "Rename run.sh to tool.sh and make it executable"
	as "Ada Lovelace" "ada@example.org"
	printf '\000\001\002binary\377' >blob.bin
	commit -m "Add a small binary blob"
	git tag head
	;;
roundtrip)
	as "Setup" "setup@example.org"
	mkdir -p src docs bin
	seq 1 50 | sed 's/^/line /' >src/main.c
	seq 1 30 | sed 's/^/doc /' >docs/guide.txt
	printf 'alpha\r\nbeta\r\ngamma\r\n' >docs/dos.txt
	printf 'keep me\n' >docs/keep.txt
	printf 'to be renamed\n%s\n' "$(seq 1 20)" >docs/old-name.txt
	printf 'pure rename\n' >docs/pure.txt
	printf '#!/bin/sh\necho tool\n' >bin/tool
	printf 'doomed\n' >docs/delete-me.txt
	head -c 3000 /dev/zero | tr '\0' 'x' >docs/wide.txt
	printf '\n' >>docs/wide.txt
	printf '\211PNG\r\n\032\n\000\000\000\rIHDR' >docs/logo.png
	commit "Initial import"
	git tag base

	# Non-ASCII author, a different committer, a tz east of UTC.
	as "Jöhn Döe-Müller" "john@example.org"
	CNAME="Ćommitter Ünïcode" CMAIL="committer@example.org" \
		TZ_AUTHOR=+0530 as "Jöhn Döe-Müller" "john@example.org"
	sed -i 's/^line 10$/line ten/' src/main.c
	commit -m "main: spell out ten" -m "Zweiter Absatz mit Umlauten: äöü ß." \
		-m "Signed-off-by: Jöhn Döe-Müller <john@example.org>"
	unset CNAME CMAIL

	# Renames: one with a change, one pure; a deletion.
	as "Name, Jr." "jr@example.org"
	git mv docs/old-name.txt docs/new-name.txt
	printf 'one more line\n' >>docs/new-name.txt
	git mv docs/pure.txt src/pure.txt
	git rm -q docs/delete-me.txt
	commit "docs: rename and prune"

	# Binary files: a new one and a change to an existing one.
	as "Jöhn Döe-Müller" "john@example.org"
	awk 'BEGIN { for (i = 0; i < 2048; i++) printf "%c", (i * 7) % 256 }' >bin/data.bin
	printf '\211PNG\r\n\032\n\000\000\000\rIHDR\000\001' >docs/logo.png
	commit "Add a binary table and touch the logo"

	# Mode changes: with and without a content change.
	chmod +x docs/keep.txt
	chmod -x bin/tool
	printf 'echo more\n' >>bin/tool
	commit "Fix modes"

	# A 100-file commit.
	mkdir -p gen
	i=0
	while [ $i -lt 100 ]; do
		printf 'generated file %d\n' $i >gen/file-$(printf %03d $i).txt
		i=$((i + 1))
	done
	commit "gen: add 100 generated files"

	# CRLF and very long lines in content.
	printf 'alpha\r\nBETA\r\ngamma\r\ndelta\r\n' >docs/dos.txt
	head -c 5000 /dev/zero | tr '\0' 'y' >docs/wide.txt
	printf '\n' >>docs/wide.txt
	printf 'mixed\r\nendings\nhere\r\n' >docs/mixed.txt
	commit "docs: CRLF and wide lines"

	# A side branch with a merge commit in the range.
	git checkout -q -b side
	as "Ümit Yılmaz" "umit@example.org"
	printf 'side work\n' >docs/side.txt
	commit "side: add notes"
	git checkout -q main
	as "Jöhn Döe-Müller" "john@example.org"
	printf 'main work\n' >docs/main-only.txt
	commit "main: add notes"
	tick
	git merge -q --no-ff --no-edit side -m "Merge branch 'side'"

	# A title spanning two lines with CRLF ends and an encoded-word
	# look-alike; a body line that starts with "From ".
	printf 'Title with =?UTF-8?q?not=20encoded?= and\r\ncontinued on a second line\r\n\r\nFrom the body: a line an mbox reader would split at.\r\n' >../msg1.txt
	sed -i 's/^line 20$/line twenty/' src/main.c
	commit_file ../msg1.txt

	# An empty commit (left out like git format-patch does) and a long,
	# non-ASCII title that must be folded.
	commit "An empty commit that changes nothing"
	sed -i 's/^line 30$/line thirty/' src/main.c
	commit "Ein sehr langer Titel mit Umlauten äöü, der über die Grenze von achtundsiebzig Spalten hinausgeht"

	# A file with a non-ASCII name, and a title-only commit.
	printf 'unicode\n' >"docs/ünïcode.txt"
	commit "docs: add a file with a non-ASCII name"
	git tag head

	# v1: an earlier revision of the same work, for a range-diff.
	git checkout -q -b v1-branch base
	as "Jöhn Döe-Müller" "john@example.org"
	sed -i 's/^line 10$/line TEN/' src/main.c
	commit "main: spell out ten"
	printf 'dropped later\n' >docs/dropped.txt
	commit "docs: a patch that v2 drops"
	git tag v1
	git checkout -q main
	rm -f ../msg1.txt
	;;
bench)
	as "Bench Mark" "bench@example.org"
	mkdir -p src
	i=0
	while [ $i -lt 200 ]; do
		seq 1 100 | sed "s/^/file $i line /" >src/f$i.c
		i=$((i + 1))
	done
	commit "Initial import"
	git tag base
	i=1
	while [ $i -le "$n" ]; do
		f=$((i % 200))
		sed -i "s/^file $f line $((i % 100 + 1))\$/changed by commit $i/" src/f$f.c
		printf 'new %d\n' $i >>src/f$((i * 7 % 200)).c
		commit -m "bench: change $i" -m "Commit $i of $n changes two files."
		i=$((i + 1))
	done
	git tag head
	;;
*)
	echo "make-repo.sh: unknown kind $kind" >&2
	exit 2
	;;
esac
