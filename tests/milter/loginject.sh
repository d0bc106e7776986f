#!/bin/bash
# Log injection through a Message-ID: a reply whose In-Reply-To is one of
# our ids with "=0A" (a newline, once decoded) in its project, and whose
# own Message-ID and Subject carry raw control bytes.  The milter's test
# mode runs the callbacks on it with a real spool and no thread map.
#
# usage: loginject.sh MILTER_BINARY PATCHBRIDGE_BINARY WORKDIR
#
# 1. the id is not ours (a GitLab project path holds no newline): the
#    mail passes untouched, nothing is spooled, no X-Patchbridge header
# 2. every line the milter logged is one of its own: none starts with
#    the forged "info: ..." text, no control byte but the line ends
# 3. the daemon's side: a spool record whose Project holds that newline
#    (what an older or a subverted milter could leave) is ignored by
#    `patchbridge replay --apply-now`, and every line it logs is its own:
#    the log facility makes each argument printable, whoever the caller
#
# Exit 0 = pass, 1 = fail.
NAME=loginject
. "$(dirname "$0")/lib.sh"

[ $# -eq 3 ] || {
	echo "usage: $0 MILTER_BINARY PATCHBRIDGE_BINARY WORKDIR" >&2
	exit 2
}
MBIN=$(abs_path "$1")
PB=$(abs_path "$2")
W=$3

rm -rf "$W"
mkdir -p "$W/state" "$W/run" "$W/mail" || fail "cannot create $W"
W=$(cd "$W" && pwd -P)
# The time stamp that begins a log line written to a file (util/log.h).
STAMP="[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"
write_conf "$W/pb.conf" "$W"
sed -i 's/^level = info/level = debug/' "$W/pb.conf"

FORGED='info: 4Y3ZQk1XyZz9: <x@example.org>: X-Patchbridge: reply group/project!12 v3 2/7; auth=verified'
ENC=$(printf '%s' "$FORGED" | sed 's/=/=3D/g; s/ /=20/g; s/:/=3A/g; s/</=3C/g;
	s/>/=3E/g; s/@/=40/g; s/!/=21/g; s/;/=3B/g; s|/|=2F|g; s/\./=2E/g')
ID="pb.v3.2-7.group.project=0A$ENC.12.0123456789ab@$DOMAIN"
step "a reply to <${ID:0:60}...>"
{
	printf 'From: Mallory <mallory@example.net>\n'
	printf 'To: patches@lists.example.test\n'
	printf 'Subject: Re: [PATCH v3 2/7] x\r\x1b[2Jforged: subject\n'
	printf 'Message-ID: <evil\x1b[31m.1@example.net>\n'
	printf 'In-Reply-To: <%s>\n' "$ID"
	printf 'References: <%s>\n' "$ID"
	printf 'Date: Tue, 03 Dec 2024 10:00:00 +0000\n\n'
	printf 'Acked-by: Mallory <mallory@example.net>\n'
} >"$W/mail/evil.eml"

(cd "$W/mail" && "$MBIN" -c "$W/pb.conf" --queue-id 4LOGINJ1 \
	--sender '<mallory@example.net>' --test evil.eml) >"$W/out" 2>"$W/log"
rc=$?
[ $rc -eq 0 ] || fail "exit status $rc: $(cat "$W/log")"

step "not ours: passed untouched, nothing spooled"
[ "$(cat "$W/out")" = "evil.eml: pass (not-bridged)" ] ||
	fail "outcome: $(cat "$W/out")"
[ "$(spool_count "$W/spool")" -eq 0 ] ||
	fail "spooled: $(spool_names "$W/spool")"

step "every log line is the milter's own"
[ -s "$W/log" ] || fail "nothing logged at level debug"
# (a line written to a file begins with its time, util/log.h)
bad=$(grep -v -n -E "^$STAMP patchbridge-milter: " "$W/log")
[ -z "$bad" ] || fail "a line the milter did not write: $bad"
grep -q -F 'forged' "$W/log" && ! grep -q -F '?' "$W/log" &&
	fail "control bytes logged raw: $(cat -v "$W/log")"
LC_ALL=C grep -q -P '[\x00-\x08\x0b-\x1f\x7f]' "$W/log" &&
	fail "a control byte in the log: $(cat -v "$W/log")"
say "$(wc -l <"$W/log") line(s) logged, all the milter's own"

step "the daemon on a record whose project holds the newline"
printf 'secret\n' >"$W/token" && chmod 600 "$W/token" || fail "token"
BODY='Subject: Re: x

Acked-by: Mallory <mallory@example.net>
'
REC=$W/spool/new/1733220000000000.4LOGINJ2.1.0
{
	printf 'PB-Spool: 1\nSpool-Time: 1733220000\nQueue-Id: 4LOGINJ2\n'
	printf 'Message-Id: evil.2@example.net\nSender: mallory@example.net\n'
	printf 'Kind: reply\nProject: group/project%%0A%s\n' "$FORGED"
	printf 'MR: 12\nRevision: 3\nPatch: 2\nSize: %d\n\n%s' \
		"${#BODY}" "$BODY"
} >"$REC.tmp" && mv "$REC.tmp" "$REC" || fail "cannot write $REC"
"$PB" -c "$W/pb.conf" replay --apply-now >"$W/replay.out" 2>"$W/replay.log"
rc=$?
[ $rc -eq 0 ] || fail "replay exit status $rc: $(cat "$W/replay.log")"
grep -q 'ignored 1' "$W/replay.out" ||
	fail "the record was not ignored: $(cat "$W/replay.out")"
grep -q 'is not bridged' "$W/replay.log" ||
	fail "no 'not bridged' line: $(cat "$W/replay.log")"
bad=$(grep -v -n -E "^$STAMP patchbridge: " "$W/replay.log")
[ -z "$bad" ] || fail "a line the daemon did not write: $bad"
LC_ALL=C grep -q -P '[\x00-\x08\x0b-\x1f\x7f]' "$W/replay.log" &&
	fail "a control byte in the log: $(cat -v "$W/replay.log")"
say "$(wc -l <"$W/replay.log") line(s) logged, all the daemon's own"
say "PASS"
