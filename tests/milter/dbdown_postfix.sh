#!/bin/bash
# Mail flow never waits for the database, through a real Postfix: the
# milter on a shared PostgreSQL state whose server is stopped.
#
# usage: dbdown_postfix.sh MILTER_BINARY SEED_BINARY WORKDIR
#
# A private PostgreSQL of this test's own (tests/pg/pgbed) holds the
# thread map (the corpus parent as group/project!12 v3 3/3); this host's
# copy of it is made (milter_seed copy-to, what the daemon does every few
# seconds); the milter starts with [milter] conninfo_file and db_timeout
# 500ms, in front of a private Postfix with default_action=tempfail (a
# milter that failed would keep the mail out).  Then PostgreSQL is
# stopped and two replies come in over SMTP: both are accepted (250),
# delivered with the X-Patchbridge header - the corpus reply placed
# through the copy of the thread map, the reply to our Message-ID by the
# scheme - and spooled.
#
# Exit 0 = pass, 1 = fail, 77 = skipped (not root, Postfix or PostgreSQL
# missing).
NAME=dbdown-postfix
. "$(dirname "$0")/lib.sh"

[ $# -eq 3 ] || {
	echo "usage: $0 MILTER_BINARY SEED_BINARY WORKDIR" >&2
	exit 2
}
need_pfbed
MBIN=$(abs_path "$1")
SEED=$(abs_path "$2")
rm -rf "$3"
bed_dirs "$3" pbdb
PGBED=$SRC_DIR/tests/pg/pgbed
MLOG=$W/milter.log
DATA=$MLIB_DIR/data

# shellcheck disable=SC2317  # invoked through trap
stop_all() {
	local rc=$?
	"$PGBED" stop "$W/pg" >/dev/null 2>&1
	(exit "$rc")
	on_exit
}
trap stop_all EXIT

archived() {
	grep -l -i -F -x "Message-ID: <$1>" "$ARCHIVE"/new/* "$ARCHIVE"/cur/* \
		2>/dev/null | head -n 1
}

send() {
	local out
	out=$("$PFBED" send "$INST" "$@") || fail "SMTP submission of $1: $out"
	eval "$out"
	[ "$SMTP_CODE" = 250 ] && [ -n "$QUEUE_ID" ] || fail "SMTP: $out"
}

step "a private PostgreSQL with the thread map; this host's copy"
mkdir -p "$W/pg"
"$PGBED" start "$W/pg" >"$W/conninfo" 2>"$W/pg.log"
rc=$?
[ $rc -eq 77 ] && skip "$(cat "$W/pg.log")"
[ $rc -eq 0 ] || fail "pgbed start: $(cat "$W/pg.log")"
chmod 600 "$W/conninfo"
milter_dirs
# (lease: any that check-config accepts with the default [forge]
# settings; these tests never take work over)
sed -i -e "/^\\[state\\]\$/a backend = postgresql\\nconninfo_file = $W/conninfo\\nlease = 2h" \
	-e "/^\\[milter\\]\$/a conninfo_file = $W/conninfo\\ndb_timeout = 500ms" \
	"$T/pb.conf" || fail "sed"
grep -q '^db_timeout = 500ms' "$T/pb.conf" || fail "no db_timeout line"
seed_store "$SEED" "postgresql:$W/conninfo"
n=$("$SEED" "postgresql:$W/conninfo" copy-to "$T/state/state.db") ||
	fail "copy-to failed"
[ "$n" = 1 ] || fail "copied $n rows, expected 1"

step "the milter, and Postfix with default_action=tempfail"
start_milter "$MLOG"
pfbed_start --milter "unix:$SOCK" --default-action tempfail

step "PostgreSQL stopped"
"$PGBED" stop "$W/pg" >/dev/null 2>&1 || fail "pgbed stop"

step "two replies over SMTP: accepted, delivered, spooled"
send "$CORPUS/replies/01-nf-mutt-nack-inline.eml"
send "$DATA/reply-msgid.eml"
"$PFBED" wait-mail "$INST" 2 60 >/dev/null || fail "replies not delivered"
f=$(archived ZTEVHOLSk/SSMJNM@calendula)
[ -n "$f" ] || fail "the corpus reply is not in the archive"
want=$(sed -n 's/^01-nf-mutt-nack-inline.eml: //p' "$DATA/golden.expect")
grep -q -x -F "$want" "$f" ||
	fail "$f: $(grep '^X-Patchbridge:' "$f"), expected $want"
f=$(archived reply-msgid.1@example.org)
[ -n "$f" ] || fail "the reply to our Message-ID is not in the archive"
grep -q '^X-Patchbridge: reply group/project!12 v3 2/7; via=msgid;' "$f" ||
	fail "$f: $(grep '^X-Patchbridge:' "$f")"
[ "$(spool_count "$T/spool")" -eq 2 ] ||
	fail "expected 2 records: $(spool_names "$T/spool")"
grep -q 'thread map: PostgreSQL: .*cannot connect' "$MLOG" ||
	fail "the milter did not say the database failed: $(tail -n 5 "$MLOG")"
say "both delivered with X-Patchbridge and spooled; $(grep -c 'thread map: PostgreSQL:' "$MLOG") database failure(s) logged"

step "PASS in $((SECONDS - T0))s"
exit 0
