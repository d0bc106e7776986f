#!/bin/sh
# mailam_push.sh AM_TOOL, under tests/forgesim/run-with-sim.sh: a patch
# mail applied by the bridge (am_tool) is pushed over HTTP to the GitLab
# simulator with a token, as the bridge pushes a series posted to the
# list: the branch then holds exactly the commit made; a push with a bad
# token, or a token without the Developer role, is refused (the
# simulator asks for the token as GitLab does) and moves nothing; a
# second version is force-pushed over the first.
set -eu
tool=$(realpath "$1")
url=${PB_FORGESIM_URL:?run through tests/forgesim/run-with-sim.sh}
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/mailampush.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C.UTF-8 TZ=UTC \
	GIT_TERMINAL_PROMPT=0
mkdir -p "$HOME"
git config --global user.name "Ann Author"
git config --global user.email "ann@example.org"
unset http_proxy HTTP_PROXY all_proxy ALL_PROXY 2>/dev/null || true

fail() {
	echo "mailam_push: FAIL: $*" >&2
	exit 1
}

repo="$url/group/project.git"
git clone -q "$repo" "$tmp/work"
base=$(git -C "$tmp/work" rev-parse HEAD)
echo "a line from a mail" >>"$tmp/work/README.md"
git -C "$tmp/work" add -A
git -C "$tmp/work" commit -q -m "readme: a line from a mail"
git -C "$tmp/work" format-patch -q -1 -o "$tmp/v1"
git -C "$tmp/work" reset -q --hard "$base"

# Refused: a token the forge does not know, a guest's.  Nothing moves.
for token in no-such-token guest-token; do
	rc=0
	"$tool" --push "$repo" "$token" email/ann/readme "$tmp/work" "$base" \
		"$tmp/v1"/*.patch >/dev/null 2>"$tmp/err" || rc=$?
	[ "$rc" = 3 ] || {
		cat "$tmp/err" >&2
		fail "push with $token: exit $rc, want 3"
	}
	[ -z "$(git ls-remote "$repo" refs/heads/email/ann/readme)" ] ||
		fail "push with $token moved the branch"
done
echo "refused: $(cat "$tmp/err")"

head=$("$tool" --push "$repo" user-token email/ann/readme "$tmp/work" \
	"$base" "$tmp/v1"/*.patch) || fail "push with user-token"
got=$(git ls-remote "$repo" refs/heads/email/ann/readme | cut -f1)
[ "$got" = "$head" ] || fail "branch at $got, want $head"
echo "pushed: email/ann/readme at $head"

# v2: the same change said otherwise, force-pushed over v1.
echo "a line from a second mail" >>"$tmp/work/README.md"
git -C "$tmp/work" add -A
git -C "$tmp/work" commit -q -m "readme: a line from a second mail"
git -C "$tmp/work" format-patch -q -1 -o "$tmp/v2"
head2=$("$tool" --push "$repo" user-token email/ann/readme "$tmp/work" \
	"$base" "$tmp/v2"/*.patch) || fail "force-push of v2"
got=$(git ls-remote "$repo" refs/heads/email/ann/readme | cut -f1)
[ "$got" = "$head2" ] && [ "$head2" != "$head" ] ||
	fail "branch at $got after v2, want $head2"
echo "force-pushed: email/ann/readme at $head2"
