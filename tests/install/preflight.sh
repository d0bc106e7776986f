#!/bin/bash
# What patchbridge check-config and patchbridge-milter --check say about
# the host around a valid configuration: each misconfiguration of a
# Debian list server is caught, by both, with a message that names the
# fix; the corrected set-up passes.
#
# usage: preflight.sh PATCHBRIDGE MILTER SOURCE_DIR WORKDIR
#
# Postfix is not started: its settings are read with postconf -c from a
# configuration directory holding Debian 12's own master.cf
# (tests/data/postfix/debian12-master.cf: smtpd and cleanup chrooted)
# and a main.cf naming a queue directory below WORKDIR.
#
#  1. the socket where the old documentation put it (/run/...) with
#     Postfix naming the same path: chrooted smtpd and cleanup look for
#     it inside the queue directory - a problem for both programs, naming
#     the socket to use and the postconf -e line; the absolute path of a
#     socket inside the queue directory: the relative form; an -o
#     override in master.cf: a postconf -P line; Postfix not calling the
#     milter at all: a warning only; the recipe's setting: ok, unless
#     Postfix's user could not write the socket
#  2. the spool owned by the wrong user: the milter run as root refuses a
#     spool that is not root's (and one that does not exist), naming the
#     runuser line; run as its user on a spool root made, it names the
#     owners and modes found and wanted; check-config names a
#     subdirectory made by root, and a spool the daemon does not own
#  3. a missing owners.yaml (approval_policy = owners): both name it and
#     the fix; then a broken one: its line and column
#  4. patchbridge status run by a user outside the state directory's
#     group: not only "Permission denied", but which group to join
#
# Exit 0 pass, 1 fail, 77 skipped (not root; postconf, setpriv or user
# nobody missing).
set -u
NAME=preflight
T0=$SECONDS
say() { echo "$NAME: [$((SECONDS - T0))s] $*"; }
fail() { say "FAIL: $*"; exit 1; }
skip() { say "SKIP: $*"; exit 77; }

[ $# -eq 4 ] || { echo "usage: $0 PATCHBRIDGE MILTER SOURCE_DIR WORKDIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || skip "must run as root (owners, setpriv)"
command -v postconf >/dev/null 2>&1 || skip "postconf (postfix) is not installed"
command -v setpriv >/dev/null 2>&1 || skip "setpriv is not installed"
getent passwd nobody >/dev/null && getent group nogroup >/dev/null &&
	getent group postfix >/dev/null || skip "users nobody, postfix missing"
PB=$1
MILTER=$2
SRC=$3
MASTER=$SRC/tests/data/postfix/debian12-master.cf
[ -f "$MASTER" ] || fail "no $MASTER"
rm -rf "$4"
mkdir -p "$4" || fail "cannot create $4"
# Below /tmp, 0755: user nobody must reach it, whatever the build tree.
T=$(mktemp -d /tmp/pbpreflight.XXXXXX) || fail "mktemp failed"
chmod 755 "$T"
trap 'rc=$?; [ $rc -eq 0 ] && rm -rf "$T"; [ $rc -ne 0 ] && say "kept: $T"; exit $rc' EXIT
OUT=$4/out
ERR=$4/err

# run WANT PROGRAM ARGS...: PROGRAM exits WANT; stdout and stderr kept.
run() {
	local want=$1 got
	shift
	"$@" >"$OUT" 2>"$ERR" </dev/null
	got=$?
	[ "$got" = "$want" ] ||
		fail "$(basename "$1") ${*:2}: exit $got, expected $want: $(cat "$ERR")"
}
# said TEXT: stderr has TEXT (fixed string).
said() {
	grep -qF -- "$1" "$ERR" || fail "no '$1' in: $(cat "$ERR")"
}
not_said() {
	grep -qF -- "$1" "$ERR" && fail "'$1' in: $(cat "$ERR")"
	return 0
}

# The layout: a Postfix configuration (not running), the daemon's and
# the milter's directories, root's (the root rule allows a root-owned
# spool; the socket directory as the recipe makes it).
PF=$T/postfix
Q=$T/queue
mkdir -p "$PF" "$Q" "$T/state" "$T/spool" "$T/etc" "$T/run/x" || fail "mkdir"
cp "$MASTER" "$PF/master.cf"
cat >"$PF/main.cf" <<EOF
compatibility_level = 3.6
queue_directory = $Q
mail_owner = postfix
EOF
install -d -g postfix -m 2750 "$Q/patchbridge"
printf 'token\n' >"$T/etc/token" && chmod 600 "$T/etc/token"
cat >"$T/etc/owners.yaml" <<'EOF'
subsystems:
  - subsystem: Everything
    labels:
      name: all
    maintainers:
      - name: Bob Maintainer
        email: bob@corp.example
    paths:
      includes:
        - "*"
        - "*/"
EOF
# conf SOCKET [OWNERS_FILE]: $T/etc/pb.conf
conf() {
	cat >"$T/etc/pb.conf" <<EOF
[bridge]
address = patchbridge@bridge.example.org
domain = bridge.example.org
list_address = patches@lists.example.test
[forge]
url = https://gitlab.example.org
token_file = $T/etc/token
[milter]
socket = $1
[state]
path = $T/state/state.db
[spool]
dir = $T/spool
[inbound]
approval_policy = owners
owners_file = ${2:-$T/etc/owners.yaml}
[project "group/project"]
EOF
	chmod 644 "$T/etc/pb.conf"
}
postconf -c "$PF" -e 'non_smtpd_milters = $smtpd_milters' ||
	fail "postconf -e failed"
# both: each check of the current set-up by both programs, exit WANT.
check_pb() { run "$1" "$PB" check-config --postfix-config "$PF" "$T/etc/pb.conf"; }
check_milter() { run "$1" "$MILTER" -c "$T/etc/pb.conf" --postfix-config "$PF" --check; }
[ "$(postconf -c "$PF" -Fh smtp/inet/chroot cleanup/unix/chroot | tr '\n' ' ')" = "y y " ] ||
	fail "Debian's master.cf does not chroot smtpd and cleanup here"

say "[1a] the socket in /run, Postfix names the same path, chrooted"
conf "unix:$T/run/x/milter.sock"
postconf -c "$PF" -e "smtpd_milters = unix:$T/run/x/milter.sock" || fail "postconf"
for p in check_pb check_milter; do
	"$p" 78
	said "[milter] socket: Postfix's smtp/inet (smtpd), cleanup/unix (cleanup) chrooted in $Q connect to unix:$T/run/x/milter.sock at $Q$T/run/x/milter.sock, but the milter listens on $T/run/x/milter.sock: put the socket inside the queue directory and name it relative to it: [milter] socket = unix:$Q/patchbridge/milter.sock (install -d -o patchbridge-milter -g postfix -m 2750 $Q/patchbridge), then postconf -e 'smtpd_milters = unix:patchbridge/milter.sock'; postfix reload"
done

say "[1b] the socket in the queue directory, named by its absolute path"
conf "unix:$Q/patchbridge/milter.sock"
postconf -c "$PF" -e "smtpd_milters = unix:/run/opendkim.sock, { unix:$Q/patchbridge/milter.sock, default_action=accept }" ||
	fail "postconf"
for p in check_pb check_milter; do
	"$p" 78
	said "at $Q$Q/patchbridge/milter.sock, but the milter listens on $Q/patchbridge/milter.sock: postconf -e 'smtpd_milters = unix:/run/opendkim.sock, { unix:patchbridge/milter.sock, default_action=accept }'; postfix reload"
done

say "[1c] an -o override in master.cf"
postconf -c "$PF" -e "smtpd_milters = unix:patchbridge/milter.sock" || fail "postconf"
postconf -c "$PF" -P "smtp/inet/smtpd_milters=unix:$Q/patchbridge/milter.sock" ||
	fail "postconf -P"
for p in check_pb check_milter; do
	"$p" 78
	said "[milter] socket: Postfix's smtp/inet (smtpd) chrooted in $Q connects to unix:$Q/patchbridge/milter.sock at $Q$Q/patchbridge/milter.sock, but the milter listens on $Q/patchbridge/milter.sock: postconf -P 'smtp/inet/smtpd_milters=unix:patchbridge/milter.sock'; postfix reload"
	not_said "cleanup/unix"
done
postconf -c "$PF" -PX "smtp/inet/smtpd_milters" || fail "postconf -PX"

say "[1d] Postfix not calling the milter yet: a warning, no problem"
postconf -c "$PF" -e "smtpd_milters =" || fail "postconf"
for p in check_pb check_milter; do
	"$p" 0
	said "warning: [milter] socket: no smtpd of Postfix ($PF) calls the milter yet, so no reply is bridged: postconf -e 'smtpd_milters = ... unix:patchbridge/milter.sock'"
done

say "[1e] the recipe's setting: ok"
postconf -c "$PF" -e 'smtpd_milters = { unix:patchbridge/milter.sock, default_action=accept }' ||
	fail "postconf"
for p in check_pb check_milter; do
	"$p" 0
	grep -qxF "$T/etc/pb.conf: ok" "$OUT" || fail "no ok: $(cat "$OUT")"
	not_said "[milter] socket"
done
# ... and Postfix's user must get to the socket and be able to write it
# as the milter makes it: not through a directory of another group.
chgrp nogroup "$Q/patchbridge"
check_milter 77
said "[milter] socket: Postfix's user postfix cannot reach $Q/patchbridge/milter.sock: $Q/patchbridge is root:nogroup 2750; give the socket's directory Postfix's group (chgrp postfix DIR; chmod 2750 DIR)"
chmod 2755 "$Q/patchbridge"
check_milter 77
said "[milter] socket: the socket will be root:nogroup 0660, which Postfix's user postfix cannot write (\"Permission denied\" at every connection): chgrp postfix $Q/patchbridge; chmod 2750 $Q/patchbridge"
chgrp postfix "$Q/patchbridge"
chmod 2750 "$Q/patchbridge"

say "[2a] the milter as root, on a spool that is not root's"
chown -R nobody:nogroup "$T/spool"
chmod 2770 "$T/spool"
check_milter 77
said "running as root, but [spool] dir $T/spool is nobody:nogroup 2770: what root makes there (tmp/, new/, records) would be root's, and the milter's user could not write it; run the milter as its own user, a member of that group: runuser -u patchbridge-milter -- patchbridge-milter"
[ -z "$(find "$T/spool" -user root)" ] || fail "root made something in the spool"
rmdir "$T/spool"/* 2>/dev/null
rmdir "$T/spool" || fail "cannot remove the spool"
check_milter 77
said "running as root, and [spool] dir $T/spool does not exist (No such file or directory): what root makes there would be root's"
said "install -d -o patchbridge -g patchbridge -m 2770 $T/spool"
[ -e "$T/spool" ] && fail "the milter as root made the spool"

say "[2b] the milter as its user, on a spool root made"
mkdir -p "$T/spool" && chmod 755 "$T/spool"
mkdir -p "$T/spool/tmp" "$T/spool/new"
chown nobody:nogroup "$T/state"
run 77 setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
	"$MILTER" -c "$T/etc/pb.conf" --postfix-config "$PF" --check
said "$T/spool is root:root 0755, tmp/ root:root 0755, new/ root:root 0755; this process is uid $(id -u nobody) (nobody), groups nogroup; the layout is the daemon's user as owner, a group shared with the milter's user, mode 2770 on the spool and its subdirectories (patchbridge:patchbridge 2770, patchbridge-milter in group patchbridge)"

say "[2c] check-config: a subdirectory root made, a spool the daemon does not own"
chown -R nobody:nogroup "$T/spool"
chmod 2770 "$T/spool" "$T/spool"/*
chown root:root "$T/spool/new"
check_pb 78
said "[spool] dir: $T/spool/new is root:root 2770, made by a run as root; the spool is nobody's: chown nobody:nogroup $T/spool/new"
chown nobody:nogroup "$T/spool/new"
chown root:root "$T/spool"
check_pb 78
said "[spool] dir: $T/spool belongs to root, the state directory $T/state to nobody: the daemon's user owns both: chown nobody:nogroup $T/spool"
# the daemon's user itself, on a spool it cannot use
chgrp root "$T/spool"
run 78 setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
	"$PB" check-config --postfix-config "$PF" "$T/etc/pb.conf"
said "[spool] dir: $T/spool is root:root 2770, and this process (uid $(id -u nobody) (nobody), groups nogroup) is neither its owner nor in its group: the spool is the daemon's user's, shared with the milter through its group: chown nobody:nogroup $T/spool; run the daemon as nobody and the milter as a member of group nogroup"
not_said "as root"
not_said "group root"
chown nobody:nogroup "$T/spool"
# The token is read by the daemon's user: root's own is refused for it,
# as run as that user refuses it.
check_pb 78
said "[forge] token_file: secret file $T/etc/token: Permission denied: nobody (uid $(id -u nobody)) may not read it: chown nobody:nogroup $T/etc/token; chmod 0600 $T/etc/token"
chown nobody:nogroup "$T/etc/token"
check_pb 0
# Back to root's layout for the rest.
chown -R root:root "$T/spool" "$T/state" "$T/etc/token"

say "[3] a missing owners.yaml, then a broken one"
conf "unix:$Q/patchbridge/milter.sock" "$T/etc/missing-owners.yaml"
for p in check_pb check_milter; do
	[ "$p" = check_pb ] && w=78 || w=66
	"$p" "$w"
	said "[inbound] owners_file: $T/etc/missing-owners.yaml: No such file or directory: write it ([inbound] names it; its format is in patchbridge.conf(5), OWNERS FILE), or set approval_policy = forge or none and cc_owners = no"
done
printf 'subsystems:\n  - maintainers: [\n' >"$T/etc/missing-owners.yaml"
check_pb 78
said "[inbound] owners_file: $T/etc/missing-owners.yaml:3:"
# The milter only looks whether it is there (it does not read owners).
check_milter 0

say "[4] status as a user outside the state's group"
: >"$T/state/state.db"
chmod 0750 "$T/state"
chmod 0640 "$T/state/state.db"
run 77 setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
	"$PB" -c "$T/etc/pb.conf" status
if getent passwd patchbridge >/dev/null; then
	owner=patchbridge:$(id -gn patchbridge)
else
	owner=patchbridge:patchbridge
fi
said "patchbridge status: $T/state is root:root 0750, and this process (uid $(id -u nobody) (nobody), groups nogroup) may not enter it: it is root's, not the daemon's user's: chown $owner $T/state (the layout: state directory 2750, files 0640, spool 2770), then join its group ${owner#*:} (adduser nobody ${owner#*:}, then log in again), or run it as ${owner%%:*} (runuser -u ${owner%%:*} -- patchbridge ...)"
not_said "run it as root"
say "PASS"
