#!/bin/bash
# The milter's test mode against golden output: the callbacks' logic run
# from files, with a real thread map and a real spool, no MTA.
#
# usage: golden.sh MILTER_BINARY SEED_BINARY WORKDIR
#
# 1. a state database whose thread map holds the corpus parent patch
#    (tests/data/corpus/replies/parents/01-...) as patch 3/3 of
#    group/project!12 v3, put there through the store (milter_seed)
# 2. patchbridge-milter --test on: the corpus reply to that patch (thread
#    map), a reply to one of our Message-IDs (scheme fallback, no row),
#    an announcement (unthreaded), the bridge's own cover letter (loop)
#    and the corpus reply with its threading headers removed (subject
#    fallback: title and quoted hunks); its output must equal
#    data/golden.expect
# 3. exactly three spool records, with the queue id, target and message
#    the milter saw
#
# Exit 0 = pass, 1 = fail.
NAME=golden
. "$(dirname "$0")/lib.sh"

[ $# -eq 3 ] || {
	echo "usage: $0 MILTER_BINARY SEED_BINARY WORKDIR" >&2
	exit 2
}
MBIN=$(abs_path "$1")
SEED=$(abs_path "$2")
W=$3
DATA=$MLIB_DIR/data

rm -rf "$W"
mkdir -p "$W/state" "$W/run" "$W/mail" || fail "cannot create $W"
W=$(cd "$W" && pwd -P)
write_conf "$W/pb.conf" "$W"

step "thread map: the corpus parent as group/project!12 v3 3/3"
seed_store "$SEED" "$W/state/state.db"

step "patchbridge-milter --test on five mails"
cp "$CORPUS/replies/01-nf-mutt-nack-inline.eml" "$DATA/reply-msgid.eml" \
	"$DATA/irrelevant.eml" "$DATA/own-outbound.eml" "$W/mail/" ||
	fail "cannot copy the mails"
# The corpus reply with its threading lost (a web client): no
# In-Reply-To, no References, another Message-ID.
awk 'BEGIN { h = 1 }
	h && /^$/ { h = 0 }
	h && /^[^ \t]/ { skip = /^(In-Reply-To|References):/ }
	h && /^Message-ID:/ { print "Message-ID: <broken-threading@example.org>"; next }
	!(h && skip) { print }' "$CORPUS/replies/01-nf-mutt-nack-inline.eml" \
	>"$W/mail/broken-threading.eml"
grep -q -i '^in-reply-to\|^references' "$W/mail/broken-threading.eml" &&
	fail "threading headers left in broken-threading.eml"
(cd "$W/mail" && "$MBIN" -c "$W/pb.conf" --queue-id 4GOLDEN1 \
	--sender '<rev@example.org>' --test 01-nf-mutt-nack-inline.eml \
	reply-msgid.eml irrelevant.eml own-outbound.eml broken-threading.eml) \
	>"$W/out" 2>"$W/log"
rc=$?
[ $rc -eq 0 ] || fail "exit status $rc: $(cat "$W/log")"
diff -u "$DATA/golden.expect" "$W/out" ||
	fail "output differs from data/golden.expect (log: $W/log)"
grep -q 'warn\|error' "$W/log" &&
	fail "unexpected warnings: $(grep 'warn\|error' "$W/log")"
say "output matches data/golden.expect"

step "three spool records, with what the milter saw"
[ "$(spool_count "$W/spool")" -eq 3 ] ||
	fail "expected 3 records in $W/spool/new: $(spool_names "$W/spool")"
found=0
for f in "$W"/spool/new/*; do
	[ "$(spool_field "$f" Queue-Id)" = 4GOLDEN1 ] ||
		fail "$f: Queue-Id $(spool_field "$f" Queue-Id)"
	[ "$(spool_field "$f" Sender)" = rev@example.org ] ||
		fail "$f: Sender $(spool_field "$f" Sender)"
	[ "$(spool_field "$f" Project)" = group/project ] ||
		fail "$f: Project"
	[ "$(spool_field "$f" MR)" = 12 ] || fail "$f: MR"
	[ "$(spool_field "$f" Revision)" = 3 ] || fail "$f: Revision"
	case $(spool_field "$f" Message-Id) in
	ZTEVHOLSk/SSMJNM@calendula | broken-threading@example.org)
		[ "$(spool_field "$f" Patch)" = 3 ] || fail "$f: Patch"
		# the body as received, byte for byte after the header
		sed '1,/^$/d' "$f" | grep -q -F 'NACK.' ||
			fail "$f: the message is not in the record"
		found=$((found + 1))
		;;
	reply-msgid.1@example.org)
		[ "$(spool_field "$f" Patch)" = 2 ] || fail "$f: Patch"
		[ "$(spool_field "$f" Kind)" = reply ] || fail "$f: Kind"
		found=$((found + 1))
		;;
	*) fail "$f: unexpected Message-Id $(spool_field "$f" Message-Id)" ;;
	esac
done
[ $found -eq 3 ] || fail "records do not match the three replies"
# nothing half-written left behind
[ -z "$(ls -A "$W/spool/tmp")" ] || fail "files left in spool/tmp"
say "records: $(spool_names "$W/spool" | tr '\n' ' ')"

step "PASS in $((SECONDS - T0))s"
exit 0
