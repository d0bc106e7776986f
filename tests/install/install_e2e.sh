#!/bin/bash
# The installed programs with the installed example configuration.
#
# usage: install_e2e.sh BUILD_DIR WORKDIR   (under tests/forgesim/run-with-sim.sh)
#
#  1. DESTDIR=STAGE cmake --install BUILD_DIR: the programs, the man pages,
#     the example configuration
#  2. the example is copied to STAGE/etc/patchbridge/patchbridge.conf and
#     filled in (forge URL and token file, list, SMTP port of the private
#     Postfix, state and spool under STAGE/var), nothing else changed but
#     a [project "group/project"] section
#  3. installed patchbridge check-config; send 'group/project!1' (the
#     simulator's seeded MR): the series lands in the list archive
#  4. installed patchbridge-milter --check with the same file
#  5. the uninstall target removes every installed file and the
#     directories the install made, and leaves the state, the spool, the
#     real patchbridge.conf, owners.yaml and the token
#
# Exit 0 pass, 1 fail, 77 skipped (not root, Postfix missing).
set -u
NAME=install-e2e
T0=$SECONDS
say() { echo "$NAME: [$((SECONDS - T0))s] $*"; }
fail() { say "FAIL: $*"; exit 1; }
skip() { say "SKIP: $*"; exit 77; }

[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR WORKDIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || skip "must run as root (private Postfix)"
command -v postfix >/dev/null 2>&1 || skip "postfix is not installed"
[ -n "${PB_FORGESIM_URL:-}" ] || fail "run me under run-with-sim.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PFBED=$HERE/../postfix/pfbed
BUILD=$(cd "$1" && pwd)
mkdir -p "$2" && W=$(cd "$2" && pwd) || fail "cannot create $2"
STAGE=$W/stage
PF=$W/pf
STARTED=""
rm -rf "$STAGE" "$W/pf"

cleanup() {
	local rc=$?
	trap - EXIT
	[ -n "$STARTED" ] && "$PFBED" stop "$PF" >/dev/null 2>&1
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		say "kept for inspection: $W"
		[ -f "$W/bridge.log" ] && tail -n 20 "$W/bridge.log"
	else
		"$PFBED" clean "$PF" >/dev/null 2>&1
		rm -rf "$STAGE"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "[1] DESTDIR=$STAGE cmake --install $BUILD"
DESTDIR=$STAGE cmake --install "$BUILD" >"$W/install.log" 2>&1 ||
	fail "cmake --install failed: $(tail -5 "$W/install.log")"
PB=$(find "$STAGE" -path '*/bin/patchbridge' -type f | head -1)
MILTER=$(find "$STAGE" -path '*/sbin/patchbridge-milter' -type f | head -1)
EXAMPLE=$(find "$STAGE" -name patchbridge.conf.example | head -1)
[ -x "$PB" ] || fail "no installed bin/patchbridge"
[ -x "$MILTER" ] || fail "no installed sbin/patchbridge-milter"
[ -f "$EXAMPLE" ] || fail "no installed patchbridge.conf.example"
for page in man8/patchbridge.8 man8/patchbridge-milter.8 man5/patchbridge.conf.5; do
	f=$(find "$STAGE" -path "*/share/man/$page" | head -1)
	[ -f "$f" ] || fail "no installed $page"
	MANWIDTH=80 man -l "$f" >/dev/null 2>&1 || fail "man -l $f failed"
done
say "installed: ${PB#"$STAGE"} ${MILTER#"$STAGE"} ${EXAMPLE#"$STAGE"}"

say "[2] private Postfix"
out=$("$PFBED" start "$PF" --set "default_transport = discard:" 2>&1) ||
	fail "pfbed start: $out"
STARTED=1
PORT=$(echo "$out" | sed -n 's/.*PORT=\([0-9]*\).*/\1/p' | head -1)
[ -n "$PORT" ] || fail "no port from pfbed: $out"

CONF=$(dirname "$EXAMPLE")/patchbridge.conf
STATE=$STAGE/var/lib/patchbridge
SPOOL=$STAGE/var/spool/patchbridge
# The spool exists before the milter's --check, run as root here (as
# root the milter never makes one).
mkdir -p "$STATE" "$SPOOL"
printf 'bot-token\n' >"$W/token" && chmod 600 "$W/token"
cp "$W/token" "$(dirname "$EXAMPLE")/gitlab-token"
TOKEN=$(dirname "$EXAMPLE")/gitlab-token
OWNERS=$(dirname "$EXAMPLE")/owners.yaml
printf 'subsystems: []\n' >"$OWNERS"
# set SECTION KEY VALUE, on the example as installed: only the values
# below change, every other line stays the example's own.
awk -v url="$PB_FORGESIM_URL" -v token="$TOKEN" -v port="$PORT" \
    -v state="$STATE/state.db" -v spool="$SPOOL" -v sock="unix:$W/m.sock" \
    -v owners="$OWNERS" '
	/^\[/ { sec = $0 }
	function set(s, k, v) {
		if (sec == "[" s "]" && $0 ~ "^" k " *=") { print k " = " v; return 1 }
		return 0
	}
	set("bridge", "list_address", "patches@lists.example.test") { next }
	set("forge", "url", url) { next }
	set("forge", "token_file", token) { next }
	set("forge", "bot_username", "patchbridge") { next }
	set("smtp", "url", "smtp://127.0.0.1:" port) { next }
	set("milter", "socket", sock) { next }
	set("state", "path", state) { next }
	set("spool", "dir", spool) { next }
	set("inbound", "owners_file", owners) { next }
	{ print }
	END { print ""; print "[project \"group/project\"]" }' "$EXAMPLE" >"$CONF" ||
	fail "cannot write $CONF"
diff "$EXAMPLE" "$CONF" >"$W/conf.diff"
[ "$(grep -c '^>' "$W/conf.diff")" -ge 9 ] ||
	fail "the example did not take every value: $(cat "$W/conf.diff")"

say "[3] installed patchbridge check-config, send group/project!1"
out=$("$PB" -c "$CONF" check-config 2>&1) || fail "check-config: $out"
say "$out"
out=$("$PB" -c "$CONF" send 'group/project!1' 2>>"$W/bridge.log") ||
	fail "send exited $?: $out"
say "$out"
n=$(echo "$out" | sed -n 's/.*(\([0-9]*\) mails\?).*/\1/p')
[ -n "$n" ] || fail "send did not mail a series: $out"
"$PFBED" wait-mail "$PF" "$n" 60 >/dev/null 2>&1 ||
	fail "the archive did not get $n mails"
ARCHIVE=$("$PFBED" env "$PF" | sed -n "s/^ARCHIVE=['\"]\{0,1\}\([^'\"]*\).*/\1/p")
grep -l '^Subject: \[PATCH' "$ARCHIVE"/new/* "$ARCHIVE"/cur/* 2>/dev/null |
	wc -l | grep -qx "$n" || fail "not $n [PATCH] mails in $ARCHIVE"
say "$n mails in the list archive"

say "[4] installed patchbridge-milter --check"
out=$("$MILTER" -c "$CONF" --check 2>&1) || fail "milter --check exited $?: $out"
[ -d "$SPOOL/new" ] || fail "--check did not set up the spool"

say "[5] uninstall"
DESTDIR=$STAGE cmake --build "$BUILD" --target uninstall >"$W/uninstall.log" 2>&1 ||
	fail "uninstall failed: $(tail -5 "$W/uninstall.log")"
left=$(find "$STAGE" -type f ! -path "$STATE/*" ! -path "$SPOOL/*" \
	! -path "$CONF" ! -path "$TOKEN" ! -path "$OWNERS" | sed "s|^$STAGE||")
[ -z "$left" ] || fail "uninstall left: $left"
# ... nor the directories the install made, once empty.
left=$(find "$STAGE" -depth -type d -empty ! -path "$STATE*" ! -path "$SPOOL*" |
	sed "s|^$STAGE||")
[ -z "$left" ] || fail "uninstall left empty directories: $left"
[ -d "$STAGE/usr" ] && fail "uninstall left $STAGE/usr: $(find "$STAGE/usr")"
[ -f "$STATE/state.db" ] || fail "uninstall removed the state"
[ -f "$CONF" ] && [ -f "$TOKEN" ] || fail "uninstall removed patchbridge.conf or the token"
[ -d "$SPOOL/new" ] || fail "uninstall removed the spool"
say "PASS"
