#!/bin/bash
# README.md's "Installing", step by step, next to a Postfix as Debian's
# package leaves it: the commands are read from the README, so the
# recipe cannot drift from what works.
#
# usage: recipe_e2e.sh SOURCE_DIR BUILD_DIR WORKDIR   (under run-with-sim.sh)
#
# Each step is the code block that follows a "<!-- recipe: NAME -->"
# line in README.md; the test fails when one is missing.  The commands
# run as written, with the paths of this host moved below a scratch
# directory ($S) and to a private Postfix (tests/postfix/pfbed, started
# with Debian 12's own master.cf: smtpd and cleanup chrooted in its
# queue directory):
#
#   /usr/local /etc/patchbridge /var/lib/patchbridge /var/spool/patchbridge
#   /var/log/patchbridge      -> the same below $S
#   /var/spool/postfix        -> the private Postfix's queue directory
#   /etc/postfix              -> its configuration directory
#   cmake --install build     -> DESTDIR=$S cmake --install BUILD_DIR
#
# and MAIL_CONFIG (postconf and postfix read it) and PATCHBRIDGE_CONFIG
# name the private Postfix and the staged configuration.  The users are
# real: patchbridge and patchbridge-milter are made by the recipe's
# useradd lines (a user that exists already is used as it is) and removed
# at the end when this test made them.
#
#  1. packages: every library the built programs load comes from a
#     package the README lists
#  2. build: the README's configure line with PB_TESTS=OFF works and
#     registers no test (configured only: the build itself is the one
#     CI makes anyway)
#  3. install, users and directories (the recipe without systemd); the
#     systemd recipe's sysusers.d and tmpfiles.d files, run with --root
#     in a second scratch root, give every directory the same owner,
#     group and mode
#  4. configuration, token and owners.yaml (the edits an admin makes:
#     the simulator's URL and token, the list, the SMTP port, a project;
#     owners.yaml is patchbridge.conf(5)'s example); Postfix's settings;
#     check-config and patchbridge-milter --check as their users: ok
#  5. the start without systemd: the milter, postfix reload, the daemon
#     (with HOME=/root, which the daemon's user cannot read: it must not
#     matter); the daemon mails the seeded merge request's series; a
#     reply to a patch goes through the chrooted smtpd and the milter
#     (X-Patchbridge: ... queued) and becomes a note on the forge
#  6. contrib/postfix/main.cf.fragment pasted as it is (no OpenDKIM or
#     OpenDMARC here): the settings stay those of the recipe; with the
#     milter stopped, a reply is accepted and delivered, not bridged, as
#     README and contrib/postfix/README.md say of default_action=accept
#  7. README "Uninstalling", its Postfix steps: main.cf names no milter
#     and no header_checks table, the table is gone, and mail is still
#     accepted and delivered
#
# Exit 0 pass, 1 fail, 77 skipped (not root; postfix, useradd, setpriv,
# runuser missing).
set -u
NAME=recipe-e2e
T0=$SECONDS
say() { echo "$NAME: [$((SECONDS - T0))s] $*"; }
fail() { say "FAIL: $*"; exit 1; }
skip() { say "SKIP: $*"; exit 77; }

[ $# -eq 3 ] || { echo "usage: $0 SOURCE_DIR BUILD_DIR WORKDIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || skip "must run as root (users, private Postfix)"
for c in postfix postconf useradd userdel setpriv runuser objdump; do
	command -v $c >/dev/null 2>&1 || skip "$c is not installed"
done
getent group postfix >/dev/null || skip "no group postfix"
[ -n "${PB_FORGESIM_URL:-}" ] || fail "run me under run-with-sim.sh"
SRC=$(cd "$1" && pwd)
BUILD=$(cd "$2" && pwd)
README=$SRC/README.md
PFBED=$SRC/tests/postfix/pfbed
. "$SRC/tests/tools/slowdown.sh"
rm -rf "$3"
mkdir -p "$3" && W=$(cd "$3" && pwd) || fail "cannot create $3"
# Everything the two users touch is below /tmp, 0755: the build tree may
# be closed to them, and socket paths must stay short.
S=$(mktemp -d /tmp/pbrecipe.XXXXXX) || fail "mktemp failed"
chmod 755 "$S"
PF=$S/pf
MADE_USERS=""
STARTED=""
PIDS=""

pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
stop_pid() {
	pid_alive "$1" || return 0
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq "$(scaled 300)"); do pid_alive "$1" || return 0; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
}
cleanup() {
	local rc=$? p u
	trap - EXIT
	for p in $PIDS; do stop_pid "$p"; done
	[ -n "$STARTED" ] && "$PFBED" stop "$PF" >/dev/null 2>&1
	# The build directory's manifest is the staged install's: undo it.
	[ -f "$BUILD/install_manifest.txt" ] && [ -d "$S/usr/local" ] &&
		DESTDIR=$S cmake --build "$BUILD" --target uninstall >/dev/null 2>&1
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		for f in "$S"/var/log/patchbridge/*.log "$PF/postfix.log"; do
			[ -f "$f" ] && { say "--- $f"; tail -n 15 "$f"; }
		done
	fi
	for u in $MADE_USERS; do
		userdel "$u" >/dev/null 2>&1
		getent group "$u" >/dev/null && groupdel "$u" >/dev/null 2>&1
	done
	"$PFBED" clean "$PF" >/dev/null 2>&1
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]; then
		rm -rf "$S"
	else
		say "kept for inspection: $S"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# block NAME: the commands of README's step NAME, one per line (lines
# continued with "\" joined).
block() {
	awk -v want="<!-- recipe: $1 -->" '
		$0 == want { found = 1; next }
		found && !inside && /^```/ { inside = 1; next }
		inside && /^```/ { exit }
		inside {
			if (sub(/\\$/, "")) { cmd = cmd $0; next }
			print cmd $0; cmd = ""
		}
		END { if (!found) exit 1 }' "$README" ||
		fail "README.md has no step \"$1\""
}

# mapped: this host's paths moved (see the top).
mapped() {
	sed -e "s|/usr/local|$S/usr/local|g" \
		-e "s|/etc/patchbridge|$S/etc/patchbridge|g" \
		-e "s|/var/lib/patchbridge|$S/var/lib/patchbridge|g" \
		-e "s|/var/spool/patchbridge|$S/var/spool/patchbridge|g" \
		-e "s|/var/log/patchbridge|$S/var/log/patchbridge|g" \
		-e "s|/var/spool/postfix|$QUEUE|g" \
		-e "s|/etc/postfix|$CONFIG|g" \
		-e "s|cmake --install build|cmake --install $BUILD|g"
}

# run_step NAME: every command of step NAME, mapped, in this shell.
run_step() {
	local cmd
	block "$1" >"$W/step-$1" || exit 1
	while IFS= read -r cmd; do
		[ -n "$cmd" ] || continue
		case $cmd in
		useradd*)
			local u=${cmd##* }
			if getent passwd "$u" >/dev/null; then
				say "  (user $u exists: used as it is)"
				continue
			fi
			MADE_USERS="$MADE_USERS $u"
			;;
		esac
		cmd=$(printf '%s\n' "$cmd" | mapped)
		say "  $ ${cmd//$S/\$S}"
		eval "$cmd" || fail "step $1: '$cmd' failed"
	done <"$W/step-$1"
}

say "[0] a private Postfix with Debian's master.cf"
out=$("$PFBED" start "$PF" --master-cf "$SRC/tests/data/postfix/debian12-master.cf" 2>&1) ||
	fail "pfbed start: $out"
STARTED=1
eval "$("$PFBED" env "$PF")"
[ -d "$QUEUE" ] && [ -f "$CONFIG/main.cf" ] || fail "no queue or main.cf"
chroots=$(postconf -c "$CONFIG" -Fh "127.0.0.1:$PORT/inet/chroot" cleanup/unix/chroot |
	tr '\n' ' ')
[ "$chroots" = "y y " ] || fail "smtpd and cleanup not chrooted: $chroots"
export MAIL_CONFIG=$CONFIG
export PATCHBRIDGE_CONFIG=$S/etc/patchbridge/patchbridge.conf
export PATH=$S/usr/local/bin:$S/usr/local/sbin:$PATH
export HOME=/root

say "[1] packages: the libraries the programs load"
pkgs=$(block packages | tr ' ' '\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$' |
	grep -vxE 'apt-get|install')
: >"$W/libs"
for lib in $(objdump -p "$BUILD/bridge/patchbridge" "$BUILD/milter/patchbridge-milter" |
	awk '/NEEDED/ { print $2 }' | sort -u); do
	path=$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')
	[ -n "$path" ] || fail "$lib: not found by ldconfig"
	echo "$lib $path $(readlink -f "$path")" >>"$W/libs"
done
# One dpkg -S for all (it reads every package's file list each time);
# with /usr merged, a file is known under /lib or under /usr/lib.
# shellcheck disable=SC2046
dpkg -S $(awk '{ print $2, $3 }' "$W/libs") >"$W/dpkg-S" 2>/dev/null
while read -r lib path real; do
	pkg=$(awk -v a="$path" -v b="$real" '$2 == a || $2 == b {
		sub(/:.*/, "", $1); print $1; exit }' "$W/dpkg-S")
	[ -n "$pkg" ] || fail "$lib ($real): in no package"
	# libc6 is there anyway; a -DPB_SANITIZE build loads the
	# sanitizers' runtimes, which no install needs
	case $pkg in libc6 | libasan[0-9]* | libubsan[0-9]* | liblsan[0-9]*) continue ;; esac
	printf '%s\n' "$pkgs" | grep -qx "$pkg" ||
		fail "the programs load $lib from $pkg, which README's packages lack"
done <"$W/libs"
printf '%s\n' "$pkgs" | grep -qx postfix || fail "postfix not in README's packages"

say "[2] build: the README's configure line, without tests"
cfg=$(block build | head -1)
case $cfg in *-DPB_TESTS=OFF*) ;; *) fail "the build step does not turn the tests off: $cfg" ;; esac
(cd "$SRC" && eval "${cfg/-B build/-B $W/notests}") >"$W/notests.log" 2>&1 ||
	fail "configure without tests: $(tail -5 "$W/notests.log")"
(cd "$W/notests" && ctest -N) | grep -q '^Total Tests: 0$' ||
	fail "PB_TESTS=OFF still registers tests"

say "[3] install, users and directories"
export DESTDIR=$S
run_step install
unset DESTDIR
[ -x "$S/usr/local/bin/patchbridge" ] && [ -x "$S/usr/local/sbin/patchbridge-milter" ] ||
	fail "cmake --install put no programs in $S/usr/local"
run_step users
# The systemd recipe's files, in a root of their own, must give the same
# owners and modes.  (With --root, systemd resolves names in that root:
# it gets this host's passwd and group files.)
R=$S/sysroot
mkdir -p "$R/etc"
cp /etc/passwd /etc/group "$R/etc/"
block users-systemd | mapped | sed -E "s@^(systemd-[a-z]+) @\1 --root=$R @" >"$W/users-systemd"
while IFS= read -r cmd; do
	say "  $ ${cmd//$S/\$S}"
	eval "$cmd" >>"$W/users-systemd.log" 2>&1 || fail "'$cmd' failed: $(tail -3 "$W/users-systemd.log")"
done <"$W/users-systemd"
for d in etc/patchbridge var/spool/patchbridge var/spool/patchbridge/tmp \
	var/spool/patchbridge/new var/spool/patchbridge/cur \
	var/spool/patchbridge/done var/spool/patchbridge/dead var/lib/patchbridge; do
	a=$(stat -c '%U:%G %a' "$S/$d")
	b=$(stat -c '%U:%G %a' "$R/$d")
	[ "$a" = "$b" ] || fail "/$d: $a by hand, $b by tmpfiles.d"
done
a=$(stat -c '%U:%G %a' "$QUEUE/patchbridge")
b=$(stat -c '%U:%G %a' "$R/var/spool/postfix/patchbridge")
[ "$a" = "$b" ] || fail "/var/spool/postfix/patchbridge: $a by hand, $b by tmpfiles.d"
[ "$a" = "patchbridge-milter:postfix 2750" ] || fail "socket directory is $a"
id -nG patchbridge-milter | grep -qw patchbridge ||
	fail "patchbridge-milter is not in group patchbridge"

say "[4] configuration, Postfix, checks"
run_step config
CONF=$PATCHBRIDGE_CONFIG
# The admin's edits: where the forge and the list are, and a project.
# The example's paths move like the README's.
mapped <"$CONF" | awk -v url="$PB_FORGESIM_URL" -v port="$PORT" '
	/^\[/ { sec = $0 }
	function set(s, k, v) {
		if (sec == "[" s "]" && $0 ~ "^" k " *=") { print k " = " v; return 1 }
		return 0
	}
	set("bridge", "list_address", "patches@lists.example.test") { next }
	set("forge", "url", url) { next }
	set("forge", "bot_username", "patchbridge") { next }
	set("smtp", "url", "smtp://127.0.0.1:" port) { next }
	set("milter", "trusted_authserv_id", "lists.example.test") { next }
	{ print }
	END { print ""; print "[project \"group/project\"]" }' >"$W/conf" ||
	fail "cannot edit the configuration"
cat "$W/conf" >"$CONF"
printf 'bot-token\n' >"$S/etc/patchbridge/gitlab-token"
# owners.yaml: the example of patchbridge.conf(5), as the page shows it.
sed -n '/owners-example-begin/,/owners-example-end/p' "$SRC/man/patchbridge.conf.5.in" |
	sed -e '/owners-example/d' -e 's/\\-/-/g' -e 's/\\e/\\/g' \
		>"$S/etc/patchbridge/owners.yaml"
grep -q '^subsystems:' "$S/etc/patchbridge/owners.yaml" || fail "no owners example"
[ "$(stat -c '%U:%G %a' "$CONF")" = "root:patchbridge 640" ] || fail "conf mode"
[ "$(stat -c '%U:%G %a' "$S/etc/patchbridge/gitlab-token")" = "patchbridge:patchbridge 600" ] ||
	fail "token mode"
run_step postfix
# The rule --header-checks wrote is for the configured id, not the
# example's (a backslash may stand before each of its letters).
grep -q '^/^Authentication-Results.*l.*i.*s.*t.*s.*e.*x.*a.*m.*p.*l.*e.*t.*e.*s.*t/ IGNORE$' \
	"$CONFIG/patchbridge_header_checks" ||
	fail "header_checks has no rule for lists.example.test: $(cat "$CONFIG/patchbridge_header_checks")"
block check | mapped >"$W/check"
while IFS= read -r cmd; do
	say "  $ ${cmd//$S/\$S}"
	eval "$cmd" >"$W/check.out" 2>&1 || fail "'$cmd': $(cat "$W/check.out")"
	grep -q ": ok$" "$W/check.out" || fail "'$cmd' not ok: $(cat "$W/check.out")"
	grep -q "socket" "$W/check.out" && fail "'$cmd' has socket findings: $(cat "$W/check.out")"
done <"$W/check"
# Nothing of root's in the spool, nothing of root's in the socket directory.
[ -z "$(find "$S/var/spool/patchbridge" "$QUEUE/patchbridge" -user root)" ] ||
	fail "root made: $(find "$S/var/spool/patchbridge" "$QUEUE/patchbridge" -user root)"

say "[5] the start without systemd; a reply bridged"
run_step start
PIDS=$(jobs -p | tr '\n' ' ')
PIDS=${PIDS% }
[ "$(echo $PIDS | wc -w)" -eq 2 ] || fail "not two programs started: $PIDS"
MPID=${PIDS%% *}
SOCK=$QUEUE/patchbridge/milter.sock
for _ in $(seq "$(scaled 100)"); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || fail "no socket $SOCK"
[ "$(stat -c '%U:%G %a' "$SOCK")" = "patchbridge-milter:postfix 660" ] ||
	fail "socket is $(stat -c '%U:%G %a' "$SOCK")"
for p in $PIDS; do
	u=$(awk '/^Uid:/ { print $2 }' "/proc/$p/status")
	[ "$u" != 0 ] || fail "pid $p runs as root"
done
# The daemon's first poll mails the seeded merge request.
patch=""
for _ in $(seq "$(scaled 600)"); do
	patch=$(grep -l '^Subject: \[PATCH.* 1/' "$ARCHIVE"/new/* "$ARCHIVE"/cur/* 2>/dev/null |
		head -1)
	[ -n "$patch" ] && break
	pid_alive "${PIDS##* }" || fail "the daemon exited"
	sleep 0.1
done
[ -n "$patch" ] || fail "no patch mail in the archive"
grep -qi '^X-Patchbridge:' "$patch" && fail "the bridge's own mail was marked"
msgid=$(awk 'BEGIN { IGNORECASE = 1 } /^Message-ID:/ { print $2; exit }' "$patch")
subj=$(sed -n 's/^Subject: //p' "$patch" | head -1)
say "mailed: $subj $msgid"
reply() { # reply FILE ID TEXT
	cat >"$1" <<MAIL
From: Bob Maintainer <bob@corp.example>
To: patches@lists.example.test
Subject: Re: $subj
Message-ID: <$2@corp.example>
In-Reply-To: $msgid
References: $msgid
Date: Thu, 03 Dec 2026 10:00:00 +0000

$3
MAIL
}
reply "$W/reply1.eml" recipe-reply-1 "Reviewed from a Debian list server behind its own chroot."
"$PFBED" send "$PF" "$W/reply1.eml" --from bob@corp.example >"$W/send1" 2>&1 ||
	fail "the reply was not accepted: $(cat "$W/send1")"
"$PFBED" wait-mail "$PF" 2 30 >/dev/null 2>&1 || true
got=$(grep -l 'recipe-reply-1@' "$ARCHIVE"/new/* "$ARCHIVE"/cur/* 2>/dev/null | head -1)
[ -n "$got" ] || { sleep 2; got=$(grep -l 'recipe-reply-1@' "$ARCHIVE"/new/* 2>/dev/null | head -1); }
[ -n "$got" ] || fail "the reply is not in the archive"
grep -q '^X-Patchbridge: reply group/project!1 .*queued' "$got" ||
	fail "the reply was not bridged: $(grep -i '^X-Patchbridge' "$got")"
# The running daemon applies it (its spool scan runs every 5 s).
notes() {
	"${PB_PYTHON:-/usr/bin/python3}" - "$PB_FORGESIM_URL" <<'EOF'
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1] +
    "/api/v4/projects/group%2Fproject/merge_requests/1/notes?per_page=100")
req.add_header("PRIVATE-TOKEN", "admin-token")
with urllib.request.urlopen(req, timeout=10) as r:
    for n in json.load(r):
        print(n["body"].replace("\n", " "))
EOF
}
for _ in $(seq "$(scaled 60)"); do
	notes 2>/dev/null | grep -q 'behind its own chroot' && break
	sleep 0.5
done
notes | grep -q 'behind its own chroot' || fail "the reply is not on the forge"
runuser -u patchbridge -- patchbridge why '<recipe-reply-1@corp.example>' >"$W/why1" 2>&1 ||
	fail "why: $(cat "$W/why1")"
grep -q 'applied to the forge' "$W/why1" || fail "why: $(cat "$W/why1")"
say "the reply is a note on group/project!1"

say "[6] the shipped fragment as it is, then the milter down"
before=$(postconf -h smtpd_milters non_smtpd_milters milter_default_action | tr -s ' \t' ' ')
cat "$S/usr/local/share/doc/patchbridge/postfix/main.cf.fragment" >>"$CONFIG/main.cf"
after=$(postconf -h smtpd_milters non_smtpd_milters milter_default_action | tr -s ' \t' ' ')
[ "$before" = "$after" ] ||
	fail "the fragment's settings are not the recipe's: '$before' / '$after'"
postfix check >"$W/pfcheck" 2>&1 || fail "postfix check: $(cat "$W/pfcheck")"
postfix reload >/dev/null 2>&1 || fail "postfix reload"
spooled=$(ls "$S/var/spool/patchbridge/new" "$S/var/spool/patchbridge/cur" \
	"$S/var/spool/patchbridge/done" 2>/dev/null | grep -c '^[0-9]')
LOG0=$(wc -l <"$PF/postfix.log")
stop_pid "$MPID"
[ -e "$SOCK" ] && fail "the stopped milter left its socket"
# delivered N WHEN: send reply N (sent WHEN) and wait until the archive
# has it: its file in $got.
delivered() {
	reply "$W/reply$1.eml" "recipe-reply-$1" "Sent $2."
	"$PFBED" send "$PF" "$W/reply$1.eml" --from bob@corp.example >"$W/send$1" 2>&1 ||
		fail "$2, the reply was refused: $(cat "$W/send$1")"
	for _ in $(seq "$(scaled 100)"); do
		got=$(grep -l "recipe-reply-$1@" "$ARCHIVE"/new/* "$ARCHIVE"/cur/* 2>/dev/null | head -1)
		[ -n "$got" ] && return
		sleep 0.2
	done
	fail "$2, the reply was not delivered"
}
delivered 2 "while the milter is down"
grep -qi '^X-Patchbridge' "$got" && fail "a reply marked while the milter was down"
tail -n +"$((LOG0 + 1))" "$PF/postfix.log" |
	grep -q 'connect to Milter service unix:patchbridge/milter.sock: No such file or directory' ||
	fail "no milter connect failure in the log"
now=$(ls "$S/var/spool/patchbridge/new" "$S/var/spool/patchbridge/cur" \
	"$S/var/spool/patchbridge/done" 2>/dev/null | grep -c '^[0-9]')
[ "$now" = "$spooled" ] || fail "spooled while the milter was down ($spooled -> $now)"
say "accepted and delivered, not bridged (default_action=accept)"

say "[7] uninstalling: the milter out of Postfix first, then its table"
run_step uninstall-postfix
[ -e "$CONFIG/patchbridge_header_checks" ] && fail "the header_checks table is still there"
left=$(postconf -n smtpd_milters non_smtpd_milters header_checks 2>/dev/null)
[ -z "$left" ] || fail "main.cf still names: $left"
delivered 3 "after the bridge was taken out of Postfix"
say "Postfix takes and delivers mail without the bridge"
say "PASS"
