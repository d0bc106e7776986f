#!/bin/bash
# Mail flow never waits for the database: the milter on a shared
# PostgreSQL state, with the server answering, hung and stopped.
#
# usage: dbdown.sh MILTER_BINARY SEED_BINARY WORKDIR
#
# A private PostgreSQL (tests/pg/pgbed) of this test's own, so stopping
# it disturbs no other test.  Its thread map holds the corpus parent
# patch as group/project!12 v3 3/3 (milter_seed, through the store).  The
# milter reads it as a role that may only read schema_version,
# thread_map and revisions (the README's grant), with [milter] db_timeout
# = 500ms; its host's copy of
# the thread map (the SQLite file at [state] path, which the daemon keeps
# with store_threadmap_mirror(), here milter_seed copy-to) is made in
# step 2.  patchbridge-milter --test runs the real callbacks: classify,
# spool, the X-Patchbridge line.
#
# 1. server up, no copy yet: the reply is placed from PostgreSQL
#    (via=thread-map), the reply to our Message-ID by the scheme
# 2. the copy is made
# 3. server hung (SIGSTOP): placed from the copy, the milter's wait for
#    the server cut at db_timeout (the run takes seconds, not the 30 s of
#    Postfix's milter_command_timeout; the time is printed), one warning
# 4. server stopped: placed from the copy again
# 5. no [milter] conninfo_file: the copy only, the server never asked
# Every mail is accepted and spooled ("queued"): 8 records.
#
# Exit 0 = pass, 1 = fail, 77 = no PostgreSQL (pgbed says which).
NAME=dbdown
. "$(dirname "$0")/lib.sh"

[ $# -eq 3 ] || {
	echo "usage: $0 MILTER_BINARY SEED_BINARY WORKDIR" >&2
	exit 2
}
MBIN=$(abs_path "$1")
SEED=$(abs_path "$2")
W=$3
PGBED=$SRC_DIR/tests/pg/pgbed
DATA=$MLIB_DIR/data
PGPID=

rm -rf "$W"
mkdir -p "$W/state" "$W/run" "$W/mail" "$W/pg" || fail "cannot create $W"
W=$(cd "$W" && pwd -P)

# shellcheck disable=SC2317  # invoked through trap
on_exit() {
	local rc=$?
	trap - EXIT INT TERM HUP
	[ -n "$PGPID" ] && kill -CONT "$PGPID" 2>/dev/null
	"$PGBED" stop "$W/pg" >/dev/null 2>&1
	exit "$rc"
}
trap on_exit EXIT INT TERM HUP

step "a private PostgreSQL"
"$PGBED" start "$W/pg" >"$W/conninfo" 2>"$W/pg.log"
rc=$?
[ $rc -eq 77 ] && skip "$(cat "$W/pg.log")"
[ $rc -eq 0 ] || fail "pgbed start: $(cat "$W/pg.log")"
chmod 600 "$W/conninfo"
PGPID=$(head -n 1 "$(cat "$W/pg/datadir")/db/postmaster.pid") ||
	fail "no postmaster.pid"

write_conf "$W/pb.conf" "$W"
# The same without the milter's connection string: the copy only.
# (lease: any that check-config accepts with the default [forge]
# settings; these tests never take work over)
sed "/^\[state\]\$/a backend = postgresql\nconninfo_file = $W/conninfo\nlease = 2h" \
	"$W/pb.conf" >"$W/pb-copy.conf" || fail "sed"
sed "/^\[milter\]\$/a conninfo_file = $W/milter-conninfo\ndb_timeout = 500ms" \
	"$W/pb-copy.conf" >"$W/pb.conf" || fail "sed"
grep -q '^backend = postgresql' "$W/pb-copy.conf" || fail "no backend line"
grep -q '^db_timeout = 500ms' "$W/pb.conf" || fail "no db_timeout line"
chmod 600 "$W/pb.conf" "$W/pb-copy.conf"

step "the thread map in PostgreSQL: the corpus parent as group/project!12 v3 3/3"
seed_store "$SEED" "postgresql:$W/conninfo"
# The milter's role may read the thread map and nothing else (README).
"$PGBED" psql "$W/pg" postgres -c "CREATE ROLE pbmilter LOGIN;
	GRANT USAGE ON SCHEMA public TO pbmilter;
	GRANT SELECT ON schema_version, thread_map, revisions TO pbmilter;" ||
	fail "cannot create the milter's role"
sed 's/user=[^ ]*/user=pbmilter/' "$W/conninfo" >"$W/milter-conninfo"
chmod 600 "$W/milter-conninfo"
grep -q 'user=pbmilter' "$W/milter-conninfo" || fail "no milter conninfo"
[ ! -e "$W/state/state.db" ] || fail "a copy exists before step 2"

cp "$CORPUS/replies/01-nf-mutt-nack-inline.eml" "$DATA/reply-msgid.eml" \
	"$W/mail/" || fail "cannot copy the mails"

# run_test CONF OUT LOG: --test on the two replies; sets ELAPSED (ms).
run_test() {
	local t0 t1 rc
	t0=$(date +%s%N)
	(cd "$W/mail" && "$MBIN" -c "$1" --queue-id 4DBDOWN1 \
		--sender '<rev@example.org>' --test 01-nf-mutt-nack-inline.eml \
		reply-msgid.eml) >"$2" 2>"$3"
	rc=$?
	t1=$(date +%s%N)
	ELAPSED=$(((t1 - t0) / 1000000))
	[ $rc -eq 0 ] || fail "exit status $rc: $(cat "$3")"
}

# expect OUT VIA: both replies queued, the corpus one placed VIA.
expect() {
	grep -q "^01-nf-mutt-nack-inline.eml: X-Patchbridge: reply group/project!12 v3 3/3; via=$2;.*; queued\$" "$1" ||
		fail "corpus reply not placed via $2: $(cat "$1")"
	grep -q '^reply-msgid.eml: X-Patchbridge: reply group/project!12 v3 2/7; via=msgid;.*; queued$' "$1" ||
		fail "reply to our Message-ID not placed: $(cat "$1")"
}

step "1. server up, no copy: the thread map read from PostgreSQL"
run_test "$W/pb.conf" "$W/out1" "$W/log1"
expect "$W/out1" thread-map
grep -q 'warn\|error' "$W/log1" && fail "warnings: $(grep 'warn\|error' "$W/log1")"
say "placed from PostgreSQL in ${ELAPSED} ms"

step "2. this host's copy of the thread map"
n=$("$SEED" "postgresql:$W/conninfo" copy-to "$W/state/state.db") ||
	fail "copy-to failed"
[ "$n" = 1 ] || fail "copied $n rows, expected 1"
say "copied $n row"

step "3. server hung (SIGSTOP): the copy, within db_timeout"
kill -STOP "$PGPID" || fail "cannot stop the postmaster"
run_test "$W/pb.conf" "$W/out3" "$W/log3"
kill -CONT "$PGPID"
expect "$W/out3" thread-map
grep -q 'thread map: PostgreSQL: .*no answer within 500 ms' "$W/log3" ||
	fail "no word of the hung server: $(cat "$W/log3")"
[ "$(grep -c 'thread map: PostgreSQL:' "$W/log3")" -eq 1 ] ||
	fail "the hung server was asked more than once: $(cat "$W/log3")"
[ "$ELAPSED" -lt 10000 ] ||
	fail "two mails took ${ELAPSED} ms with db_timeout 500ms"
say "placed from the copy in ${ELAPSED} ms (db_timeout 500 ms)"

step "4. server stopped: the copy"
"$PGBED" stop "$W/pg" >/dev/null 2>&1 || fail "pgbed stop"
PGPID=
run_test "$W/pb.conf" "$W/out4" "$W/log4"
expect "$W/out4" thread-map
grep -q 'thread map: PostgreSQL: .*cannot connect' "$W/log4" ||
	fail "no word of the stopped server: $(cat "$W/log4")"
say "placed from the copy in ${ELAPSED} ms"

step "5. no [milter] conninfo_file: the copy only"
run_test "$W/pb-copy.conf" "$W/out5" "$W/log5"
expect "$W/out5" thread-map
grep -q 'warn\|error' "$W/log5" && fail "warnings: $(grep 'warn\|error' "$W/log5")"

step "every mail accepted and spooled"
[ "$(spool_count "$W/spool")" -eq 8 ] ||
	fail "expected 8 records in $W/spool/new: $(spool_names "$W/spool")"
for f in "$W"/spool/new/*; do
	[ "$(spool_field "$f" Project)" = group/project ] || fail "$f: Project"
	[ "$(spool_field "$f" MR)" = 12 ] || fail "$f: MR"
done
[ -z "$(ls -A "$W/spool/tmp")" ] || fail "files left in spool/tmp"

step "PASS in $((SECONDS - T0))s"
exit 0
