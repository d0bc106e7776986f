#!/bin/bash
# export_links.sh PATCHBRIDGE EXPORT_SEED
#
# `patchbridge export --public-inbox DIR` writes below DIR, and libgit2
# follows links there: whoever could plant a link at DIR, at a directory
# above it, or at an entry inside it while the export runs, could have
# the operator's export overwrite or remove their files.  So the export
# opens every directory from / to DIR without following links, and
# refuses a path where another user could change what a name leads to.
# Each attack: a link at DIR to a directory of the victim's, a link at a
# directory above DIR, DIR below a directory others may write (where an
# attacker swaps DIR for a directory of links), DIR planted by another
# user in a sticky directory (as a link, and as a directory of theirs);
# the victim's files survive untouched and nothing is written there.
# An export into a fresh DIR, also below a sticky directory like /tmp,
# still works.
set -u
export LC_ALL=C
unset PATCHBRIDGE_CONFIG
[ $# -eq 2 ] || {
	echo "usage: $0 PATCHBRIDGE EXPORT_SEED" >&2
	exit 2
}
pb=$1
seed=$2
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/cli_export_links.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
export HOME=$tmp/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
failed=0

fail() {
	echo "FAIL: $*" >&2
	failed=1
}

mkdir -p "$tmp/spool"
cat >"$tmp/pb.conf" <<CONF
[bridge]
address = bridge@example.org
domain = bridge.example.org
list_address = list@example.org
[forge]
url = http://127.0.0.1:9
token_file = $tmp/token
[state]
path = $tmp/state.db
[spool]
dir = $tmp/spool
CONF
"$seed" "$tmp/state.db" 3 2000 >/dev/null || {
	echo "FAIL: cannot seed the state database" >&2
	exit 1
}

# The victim's files: a "state database" and an empty directory.
mkdir -p "$tmp/victim/empty"
printf 'the victim keeps these bytes\n' >"$tmp/victim/state.db"
snapshot() {
	(cd "$tmp/victim" && find . -printf '%p %y %s %m\n' | sort &&
		cat state.db)
}
before=$(snapshot)

# export DIR: the public-inbox export of the seeded MR into DIR.
export_to() {
	"$pb" -c "$tmp/pb.conf" export --public-inbox "$1" 'group/project!1' \
		>"$tmp/out" 2>"$tmp/err" </dev/null
}

# refused FORM DIR PATTERN: the export fails with a message matching
# PATTERN, and the victim's files are as they were.
refused() {
	local was=$failed
	failed=0
	if export_to "$2"; then
		fail "$1: the export into $2 succeeded"
	elif ! grep -Eq -- "$3" "$tmp/err"; then
		fail "$1: no '$3' in: $(cat "$tmp/err")"
	fi
	[ "$(snapshot)" = "$before" ] ||
		fail "$1: the victim's files changed: $(snapshot)"
	[ $failed = 0 ] && echo "ok: $1: $(head -c 300 "$tmp/err")"
	[ $was = 0 ] || failed=1
}

echo "1. a link at DIR to a directory of the victim's"
mkdir -m 0755 "$tmp/pub"
ln -s "$tmp/victim/empty" "$tmp/pub/inbox"
refused "link at DIR" "$tmp/pub/inbox" "inbox is a symbolic link"
rm "$tmp/pub/inbox"

echo "2. a link at a directory above DIR"
ln -s "$tmp/victim" "$tmp/pub/archives"
refused "link above DIR" "$tmp/pub/archives/inbox" \
	"archives is a symbolic link"
rm "$tmp/pub/archives"

echo "3. DIR in a directory others may write (not sticky)"
mkdir -m 0777 "$tmp/open"
chmod 0777 "$tmp/open"
refused "parent writable by others" "$tmp/open/inbox" \
	"open is writable by"
[ -e "$tmp/open/inbox" ] && fail "the refused export made $tmp/open/inbox"

echo "4. a directory above DIR writable by others"
mkdir -m 0755 "$tmp/open/deep"
refused "grandparent writable by others" "$tmp/open/deep/inbox" \
	"open is writable by"

echo "5. a link inside DIR (a DIR others may write)"
mkdir -m 0755 "$tmp/pub/shared"
chmod 0777 "$tmp/pub/shared"
ln -s "$tmp/victim" "$tmp/pub/shared/git"
refused "DIR writable by others, a link inside" "$tmp/pub/shared" \
	"shared is writable by|not empty"
rm -rf "$tmp/pub/shared"

echo "6. a fresh DIR: exported"
export_to "$tmp/pub/inbox" || fail "export into a fresh DIR: $(cat "$tmp/err")"
git --git-dir="$tmp/pub/inbox/git/0.git" log --oneline 2>/dev/null |
	wc -l | grep -qx 3 || fail "the export did not write 3 commits"
[ -e "$tmp/pub/inbox/git/0.git.tmp" ] && fail "0.git.tmp left behind"

echo "7. an existing DIR that is not empty: refused, left alone"
refused "DIR not empty" "$tmp/pub/inbox" "not empty"
[ -d "$tmp/pub/inbox/git/0.git" ] || fail "the refused export removed DIR"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	echo "SKIP: the other user's forms need root and setpriv" >&2
	[ $failed = 0 ] && exit 77
	exit 1
fi
as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
}

echo "8. a sticky directory like /tmp: another user's link at DIR"
mkdir -m 1777 "$tmp/sticky"
chmod 1777 "$tmp/sticky"
as_nobody ln -s "$tmp/victim/empty" "$tmp/sticky/inbox"
refused "another user's link in a sticky directory" "$tmp/sticky/inbox" \
	"inbox is a symbolic link"

echo "9. a sticky directory: another user's (empty) DIR"
as_nobody mkdir -m 0755 "$tmp/sticky/theirs"
refused "another user's DIR" "$tmp/sticky/theirs" "owned by nobody"

echo "10. a sticky directory: a fresh DIR of ours is exported"
export_to "$tmp/sticky/ours" ||
	fail "export into a fresh DIR in a sticky directory: $(cat "$tmp/err")"
[ -d "$tmp/sticky/ours/git/0.git" ] || fail "no epoch in $tmp/sticky/ours"

[ "$(snapshot)" = "$before" ] || fail "the victim's files changed"
exit $failed
