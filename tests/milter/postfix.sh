#!/bin/bash
# patchbridge-milter behind the real private Postfix (tests/postfix/pfbed),
# running as an unprivileged user the way contrib/postfix/README.md says.
#
# usage: postfix.sh MILTER_BINARY SEED_BINARY WORKDIR
#
#  1. directories as documented: socket directory nobody:postfix 2750,
#     spool nobody:nogroup 2770, state root:nogroup 2750 (database 0640),
#     a forge token root 0600; the thread map holds the corpus parent
#  2. the milter runs as nobody:nogroup with no supplementary groups
#     (setpriv); its socket is nobody:postfix 0660 from the start, and
#     with its credentials the token file cannot be read
#  3. the first SMTP connection: a reply to the bridged patch lands in the
#     list archive with the X-Patchbridge header, and a spool record
#     carries the queue id Postfix gave it
#  4. the same through sendmail(1) (non_smtpd_milters)
#  5. an announcement and the bridge's own cover letter land untouched,
#     no record
#  6. header_checks as patchbridge-milter --header-checks writes them
#     (contrib/postfix/header_checks is that for mx.example.org): every
#     forged Authentication-Results form of tests/data/authres/forged.txt
#     is gone before the milter sees the mail, a foreign field stays; the
#     milter alone (--test, under a verifier's two fields) would remove
#     every one of them too
#  7. the milter stopped, default_action=accept: list mail still flows
#     (no header, no record)
#
# Exit 0 = pass, 1 = fail, 77 = skipped (not root, postfix or setpriv
# missing).
NAME=postfix-e2e
. "$(dirname "$0")/lib.sh"

[ $# -eq 3 ] || {
	echo "usage: $0 MILTER_BINARY SEED_BINARY WORKDIR" >&2
	exit 2
}
need_pfbed nobody
MBIN=$(abs_path "$1")
SEED=$(abs_path "$2")
bed_dirs "$3" pbpf
MLOG=$W/milter.log
DATA=$MLIB_DIR/data

# archived MESSAGE-ID: the archive file holding that Message-ID.
archived() {
	grep -l -i -F -x "Message-ID: <$1>" "$ARCHIVE"/new/* "$ARCHIVE"/cur/* \
		2>/dev/null | head -n 1
}

# send FILE [pfbed options]: submit over SMTP, expect 250; sets QUEUE_ID.
send() {
	local out
	out=$("$PFBED" send "$INST" "$@") || fail "SMTP submission of $1: $out"
	eval "$out"
	[ "$SMTP_CODE" = 250 ] && [ -n "$QUEUE_ID" ] || fail "SMTP: $out"
}

step "directories as documented, thread map seeded"
milter_dirs nobody
(umask 027 && seed_store "$SEED" "$T/state/state.db") 2>/dev/null ||
	fail "cannot seed the thread map"
printf 'glpat-not-for-the-milter\n' >"$T/token"
chmod 600 "$T/token"
say "$(stat -c '%A %U:%G %n' "$T/run" "$T/spool" "$T/state" \
	"$T"/state/state.db* "$T/token" | tr '\n' ';')"

step "start the milter as nobody:nogroup"
start_milter "$MLOG" nobody
[ -S "$SOCK" ] || fail "no socket $SOCK"
got=$(stat -c '%U:%G %a' "$SOCK")
[ "$got" = "nobody:postfix 660" ] ||
	fail "socket is $got, expected nobody:postfix 660"
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$MPID/status")
gid=$(awk '/^Gid:/ { print $2 }' "/proc/$MPID/status")
groups=$(awk '/^Groups:/ { $1 = ""; print }' "/proc/$MPID/status")
[ "$uid" = "$(id -u nobody)" ] || fail "milter runs as uid $uid"
[ -z "${groups// /}" ] || fail "milter has supplementary groups: $groups"
if setpriv --reuid="$uid" --regid="$gid" --clear-groups -- \
	cat "$T/token" >/dev/null 2>&1; then
	fail "the milter's user can read the forge token $T/token"
fi
say "milter pid $MPID uid $uid gid $gid; socket $got; token unreadable"

step "private postfix, milter default_action=accept"
# The rule for this test's authserv-id, as the milter writes it; the one
# shipped in contrib is the same code's for mx.example.org.
"$MBIN" -c "$T/pb.conf" --header-checks >"$T/header_checks" ||
	fail "patchbridge-milter --header-checks failed"
chmod 644 "$T/header_checks"
write_conf "$T/mx.conf" "$T/mx" 1M mx.example.org
cmp -s <("$MBIN" -c "$T/mx.conf" --header-checks | grep -v '^#') \
	<(grep -v '^#' "$SRC_DIR/contrib/postfix/header_checks") ||
	fail "contrib/postfix/header_checks is not what --header-checks writes"
pfbed_start --milter "unix:$SOCK" --default-action accept \
	--set "header_checks = regexp:$T/header_checks"

step "first connection: a reply to the bridged patch"
send "$CORPUS/replies/01-nf-mutt-nack-inline.eml"
QID=$QUEUE_ID
"$PFBED" wait-mail "$INST" 1 30 >/dev/null || fail "reply not delivered"
f=$(archived ZTEVHOLSk/SSMJNM@calendula)
[ -n "$f" ] || fail "the reply is not in the archive"
want=$(sed -n 's/^01-nf-mutt-nack-inline.eml: //p' "$DATA/golden.expect")
[ "$(grep -c '^X-Patchbridge:' "$f")" -eq 1 ] || fail "$f: X-Patchbridge count"
grep -q -x -F "$want" "$f" ||
	fail "$f: $(grep '^X-Patchbridge:' "$f"), expected $want"
rec=$(grep -l "^Queue-Id: $QID\$" "$T"/spool/new/* 2>/dev/null)
[ -n "$rec" ] || fail "no spool record with Queue-Id $QID"
case $(basename "$rec") in *".$QID."*) ;; *) fail "record name $rec" ;; esac
[ "$(stat -c %U "$rec")" = nobody ] || fail "record not written by nobody"
grep -q -i 'permission denied\|milter.*connect' "$LOG" &&
	fail "postfix could not reach the milter: $(grep -i 'milter' "$LOG")"
say "archived with $want; record $(basename "$rec")"

step "the same through sendmail(1): non_smtpd_milters"
"$PFBED" sendmail "$INST" "$DATA/reply-msgid.eml" ||
	fail "sendmail failed"
"$PFBED" wait-mail "$INST" 2 30 >/dev/null || fail "not delivered"
f=$(archived reply-msgid.1@example.org)
[ -n "$f" ] || fail "the sendmail reply is not in the archive"
grep -q '^X-Patchbridge: reply group/project!12 v3 2/7; via=msgid;' "$f" ||
	fail "$f: $(grep '^X-Patchbridge:' "$f")"
[ "$(spool_count "$T/spool")" -eq 2 ] || fail "expected 2 records"

step "irrelevant mail and the bridge's own mail land untouched"
send "$DATA/irrelevant.eml"
send "$DATA/own-outbound.eml"
"$PFBED" wait-mail "$INST" 4 30 >/dev/null || fail "not delivered"
for id in announce.1@example.org \
	pb.v3.0-7.group.project.12.0123456789ab@bridge.example.org; do
	f=$(archived "$id")
	[ -n "$f" ] || fail "<$id> is not in the archive"
	grep -q '^X-Patchbridge:' "$f" && fail "$f: has an X-Patchbridge header"
done
sed '1,/^$/d' "$(archived announce.1@example.org)" |
	cmp -s - <(sed '1,/^$/d' "$DATA/irrelevant.eml") ||
	fail "the announcement's body changed"
[ "$(spool_count "$T/spool")" -eq 2 ] || fail "irrelevant mail was spooled"

step "header_checks strip every forged Authentication-Results form"
# One reply carrying every form of forged.txt (and one foreign field),
# the forms one per line of $W/forms (escapes undone, folding as LF).
/usr/bin/python3 -c '
import sys
sys.path.insert(0, sys.argv[1])
import authres_forms
for n, what, v in authres_forms.forms():
    print("Authentication-Results: " + v)
' "$SRC_DIR/tests/tools" >"$W/forms" || fail "cannot read the forms"
nforms=$(grep -c '^Authentication-Results:' "$W/forms")
[ "$nforms" -ge 10 ] || fail "only $nforms forms"
{
	sed -n '1,/^$/p' "$DATA/reply-msgid.eml" | sed '/^$/d' |
		sed 's/reply-msgid\.1@/reply-msgid.3@/'
	cat "$W/forms"
	printf 'Authentication-Results: other.example; dkim=pass header.d=example.org\n'
	printf '\n'
	sed '1,/^$/d' "$DATA/reply-msgid.eml"
} >"$W/forged.eml"
# control: the milter alone, under a verifier's two fields, removes each
mkdir -p "$T/ctl"
write_conf "$T/ctl.conf" "$T/ctl"
{
	printf 'Authentication-Results: lists.example.test; dmarc=none header.from=example.org\n'
	printf 'Authentication-Results: lists.example.test; dkim=none\n'
	cat "$W/forged.eml"
} >"$W/verified-on-top.eml"
ctl=$("$MBIN" -c "$T/ctl.conf" --test "$W/verified-on-top.eml" 2>/dev/null)
[ "$(grep -c ': removes Authentication-Results #[0-9]* (forged)$' \
	<<<"$ctl")" -eq "$nforms" ] ||
	fail "control: the milter alone does not remove all $nforms: $ctl"
grep -q 'auth=unverified; queued$' <<<"$ctl" || fail "control: $ctl"
send "$W/forged.eml"
"$PFBED" wait-mail "$INST" 5 30 >/dev/null || fail "not delivered"
f=$(archived reply-msgid.3@example.org)
[ -n "$f" ] || fail "the forged reply is not in the archive"
if grep -i -A3 '^Authentication-Results:' "$f" |
	grep -q -i 'lists.example.test\|lists\\.example\|LiStS\|exa\\mple'; then
	fail "$f: a forged field survived header_checks"
fi
grep -q '^Authentication-Results: other\.example' "$f" ||
	fail "$f: the foreign field was removed too"
grep -q '^X-Patchbridge: .*auth=unverified; queued$' "$f" ||
	fail "$f: $(grep '^X-Patchbridge:' "$f")"
[ "$(spool_count "$T/spool")" -eq 3 ] || fail "expected 3 records"
say "$nforms forged forms removed by cleanup; the milter saw: unverified"

step "milter stopped: with default_action=accept mail still flows"
kill -TERM "$MPID"
reap_milter "$MPID" 15
[ -e "$SOCK" ] && fail "socket left behind"
sed 's/reply-msgid\.1@/reply-msgid.2@/' "$DATA/reply-msgid.eml" \
	>"$W/while-down.eml"
send "$W/while-down.eml"
"$PFBED" wait-mail "$INST" 6 30 >/dev/null || fail "not delivered"
f=$(archived reply-msgid.2@example.org)
[ -n "$f" ] || fail "mail sent while the milter was down is missing"
grep -q '^X-Patchbridge:' "$f" && fail "$f: header without a milter"
[ "$(spool_count "$T/spool")" -eq 3 ] || fail "a record appeared"
say "accepted as $QUEUE_ID and delivered without the bridge"

step "stop postfix"
pfbed_stop
no_sanitizer_report "$MLOG"

step "PASS in $((SECONDS - T0))s"
exit 0
