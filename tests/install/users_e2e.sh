#!/bin/bash
# The service layout of contrib/systemd/README.md without systemd: each
# program as its own non-root user, the documented
# directories, owners and modes.
#
# usage: users_e2e.sh PATCHBRIDGE MILTER WORKDIR   (under run-with-sim.sh)
#
#  1. two system users as sysusers.d would make them: pbtest-d (the
#     daemon, group pbtest-d) and pbtest-m (the milter, group pbtest-m,
#     member of pbtest-d); removed at the end
#  2. etc root:pbtest-d 0750, patchbridge.conf 0640, token pbtest-d 0600;
#     state pbtest-d 2750, spool and its five areas pbtest-d 2770 (as
#     tmpfiles.d makes them); the socket directory as tmpfiles.d makes
#     it: pbtest-m:postfix 2750
#  3. the private Postfix is started first, with the milter as
#     default_action=tempfail: a refused connection would be a 451
#  4. the milter starts as pbtest-m (setpriv --init-groups), and a mail
#     goes through Postfix right when its pid file appears: accepted,
#     with no "Permission denied" or milter error in the Postfix log
#  5. pbtest-m cannot read the token, pbtest-d can; the daemon runs as
#     pbtest-d (run --foreground) and creates its state database
#
# Exit 0 pass, 1 fail, 77 skipped (not root; postfix, useradd, setpriv
# missing; group postfix missing).
set -u
NAME=users-e2e
T0=$SECONDS
say() { echo "$NAME: [$((SECONDS - T0))s] $*"; }
fail() { say "FAIL: $*"; exit 1; }
skip() { say "SKIP: $*"; exit 77; }

[ $# -eq 3 ] || { echo "usage: $0 PATCHBRIDGE MILTER WORKDIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || skip "must run as root"
for c in postfix useradd userdel setpriv runuser; do
	command -v $c >/dev/null 2>&1 || skip "$c is not installed"
done
getent group postfix >/dev/null || skip "no group postfix"
[ -n "${PB_FORGESIM_URL:-}" ] || fail "run me under run-with-sim.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PFBED=$HERE/../postfix/pfbed
. "$HERE/../tools/slowdown.sh"
PB=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
MILTER=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
mkdir -p "$3" && W=$(cd "$3" && pwd) || fail "cannot create $3"
PF=$W/pf
DU=pbtest-d
MU=pbtest-m
# Everything the two users touch lives under /tmp: the build tree may not
# be reachable for them, and socket paths are short.
T=$(mktemp -d /tmp/pbusers.XXXXXX) || fail "mktemp failed"
chmod 755 "$T"
MPID=""
DPID=""
STARTED=""
USERS=""

pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
stop_pid() {
	pid_alive "$1" || return 0
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq "$(scaled 100)"); do pid_alive "$1" || return 0; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
}
del_users() {
	userdel "$MU" >/dev/null 2>&1
	userdel "$DU" >/dev/null 2>&1
	getent group "$MU" >/dev/null && groupdel "$MU" >/dev/null 2>&1
	getent group "$DU" >/dev/null && groupdel "$DU" >/dev/null 2>&1
	return 0
}
cleanup() {
	local rc=$?
	trap - EXIT
	stop_pid "$MPID"
	stop_pid "$DPID"
	[ -n "$STARTED" ] && "$PFBED" stop "$PF" >/dev/null 2>&1
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		for f in "$W/milter.log" "$W/daemon.log" "$PF/postfix.log"; do
			[ -f "$f" ] && { say "--- $f"; tail -n 15 "$f"; }
		done
	fi
	[ -n "$USERS" ] && del_users
	rm -rf "$T"
	[ "$rc" -eq 0 ] && "$PFBED" clean "$PF" >/dev/null 2>&1
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "[1] users $DU and $MU (a leftover of an earlier run is removed)"
del_users
USERS=1
useradd -r -U -M -d /nonexistent -s /usr/sbin/nologin "$DU" ||
	fail "useradd $DU"
useradd -r -U -M -d /nonexistent -s /usr/sbin/nologin -G "$DU" "$MU" ||
	fail "useradd $MU"

say "[2] directories as documented"
install -d -o root -g "$DU" -m 0750 "$T/etc"
install -d -o "$DU" -g "$DU" -m 2750 "$T/state"
install -d -o "$DU" -g "$DU" -m 2770 "$T/spool"
# tmpfiles.d makes the spool's areas too: they are the daemon's, and the
# milter, which may start first, makes none of them.
for a in tmp new cur done dead; do
	install -d -o "$DU" -g "$DU" -m 2770 "$T/spool/$a"
done
# tmpfiles.d: d /var/spool/postfix/patchbridge 2750 patchbridge-milter postfix
install -d -o "$MU" -g postfix -m 2750 "$T/run"
[ "$(stat -c '%U:%G %a' "$T/run")" = "$MU:postfix 2750" ] ||
	fail "socket directory is $(stat -c '%U:%G %a' "$T/run")"
printf 'bot-token\n' >"$T/etc/token"
chown "$DU:$DU" "$T/etc/token"
chmod 0600 "$T/etc/token"

say "[3] private Postfix, milter default_action=tempfail"
out=$("$PFBED" start "$PF" --milter "unix:$T/run/milter.sock" \
	--default-action tempfail --set "default_transport = discard:" 2>&1) ||
	fail "pfbed start: $out"
STARTED=1
PORT=$(echo "$out" | sed -n 's/.*PORT=\([0-9]*\).*/\1/p' | head -1)
[ -n "$PORT" ] || fail "no port from pfbed: $out"
cat >"$T/etc/patchbridge.conf" <<CONF
[bridge]
address = bridge@example.org
domain = bridge.example.org
list_address = patches@lists.example.test
[forge]
url = $PB_FORGESIM_URL
token_file = $T/etc/token
bot_username = patchbridge
[smtp]
url = smtp://127.0.0.1:$PORT
[milter]
socket = unix:$T/run/milter.sock
trusted_authserv_id = lists.example.test
[state]
path = $T/state/state.db
[spool]
dir = $T/spool
[outbound]
poll_interval = 1h
[inbound]
approval_policy = none
[project "group/project"]
CONF
chown "root:$DU" "$T/etc/patchbridge.conf"
chmod 0640 "$T/etc/patchbridge.conf"
say "$(stat -c '%A %U:%G %n' "$T/etc" "$T/etc/"* "$T/state" "$T/spool" \
	"$T/run" | sed "s|$T/||" | tr '\n' ';')"

say "[4] the milter as $MU; a mail right after start"
setpriv --reuid="$MU" --regid="$MU" --init-groups -- \
	"$MILTER" -c "$T/etc/patchbridge.conf" --check >"$W/milter.log" 2>&1 ||
	fail "milter --check as $MU failed: $(cat "$W/milter.log")"
cat >"$T/mail.eml" <<'MAIL'
From: Alice <alice@example.com>
To: patches@lists.example.test
Subject: first mail after the milter started
Message-ID: <users-e2e-first@example.com>
Date: Thu, 03 Dec 2026 10:00:00 +0000

The first connection Postfix makes to the milter.
MAIL
# pfbed's own start-up probe connected before there was a milter: only
# what Postfix logs from now on counts.
LOG0=$(wc -l <"$PF/postfix.log")
setpriv --reuid="$MU" --regid="$MU" --init-groups -- \
	"$MILTER" -f -c "$T/etc/patchbridge.conf" -P "$T/run/milter.pid" \
	>>"$W/milter.log" 2>&1 &
MPID=$!
for _ in $(seq "$(scaled 100)"); do
	[ -s "$T/run/milter.pid" ] && break
	pid_alive "$MPID" || fail "the milter exited: $(cat "$W/milter.log")"
	sleep 0.05
done
[ -s "$T/run/milter.pid" ] || fail "no pid file"
"$PFBED" send "$PF" "$T/mail.eml" --from alice@example.com \
	--to patches@lists.example.test >"$W/send.log" 2>&1 ||
	fail "Postfix did not accept the first mail: $(cat "$W/send.log")"
got=$(stat -c '%U:%G %a' "$T/run/milter.sock")
[ "$got" = "$MU:postfix 660" ] || fail "socket is $got, want $MU:postfix 660"
"$PFBED" wait-mail "$PF" 1 30 >/dev/null 2>&1 || fail "the mail was not delivered"
if tail -n +"$((LOG0 + 1))" "$PF/postfix.log" |
	grep -Ei 'permission denied|milter|451' >"$W/bad.log"; then
	fail "Postfix log: $(cat "$W/bad.log")"
fi
groups=$(awk '/^Groups:/ { $1 = ""; print }' "/proc/$MPID/status")
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$MPID/status")
[ "$uid" = "$(id -u "$MU")" ] || fail "the milter runs as uid $uid"
say "accepted at the first connection; socket $got; milter groups:$groups"

say "[5] the token: $MU cannot read it, $DU can; the daemon as $DU"
if runuser -u "$MU" -- cat "$T/etc/token" >/dev/null 2>&1; then
	fail "$MU can read the token"
fi
runuser -u "$DU" -- cat "$T/etc/token" >/dev/null 2>&1 ||
	fail "$DU cannot read the token"
runuser -u "$MU" -- cat "$T/etc/patchbridge.conf" >/dev/null 2>&1 ||
	fail "$MU cannot read patchbridge.conf"
setpriv --reuid="$DU" --regid="$DU" --init-groups -- \
	"$PB" -c "$T/etc/patchbridge.conf" run --foreground >"$W/daemon.log" 2>&1 &
DPID=$!
for _ in $(seq "$(scaled 100)"); do
	[ -f "$T/state/state.db" ] && break
	pid_alive "$DPID" || fail "the daemon exited: $(tail -5 "$W/daemon.log")"
	sleep 0.1
done
[ -f "$T/state/state.db" ] || fail "the daemon made no state database"
sleep 1
pid_alive "$DPID" || fail "the daemon exited: $(tail -5 "$W/daemon.log")"
[ "$(stat -c %U "$T/state/state.db")" = "$DU" ] || fail "state.db not owned by $DU"
stop_pid "$DPID"
wait "$DPID"
rc=$?
[ "$rc" -eq 0 ] || fail "the daemon exited $rc on SIGTERM"
DPID=""
say "PASS"
