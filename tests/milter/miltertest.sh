#!/bin/bash
# patchbridge-milter against miltertest (the MTA side of the milter
# protocol, scripted in Lua: Debian package "miltertest"), then its signal
# handling.
#
# usage: miltertest.sh MILTER_BINARY WORKDIR
#
# One milter is started (-f, pid file) and every script connects to it:
#   relevant.lua   a reply to a bridged patch: CONTINUE + X-Patchbridge,
#                  one spool record with the queue id sent as macro {i}
#   irrelevant.lua unthreaded mail, and mail threaded under ids the bridge
#                  never sent: ACCEPT at the end of the header (no body,
#                  no EOM), no header, no record, also for a
#                  "Re: [PATCH k/M]" no open revision could take; an
#                  encoded subject is read to the end; a reply after them
#                  on the same connection is bridged (one record)
#   loop.lua       the bridge's own mail, each marker: ACCEPT at the end
#                  of the header, no header, no record
#   oversize.lua   over max_message_size: CONTINUE, what fits bridged
#                  (past memory_limit, from its file)
#   budget.lua     [milter] memory_limit = 64k: of two replies at once
#                  one or both go on in files, both bridged whole; an
#                  aborted message and a connection closed mid-message
#                  give their share and their file back (a 40 KiB reply
#                  alone after them needs no file, no descriptor is left
#                  open, tmp/ is left empty)
# Then signals (libmilter's own sigwait thread would stop on SIGHUP):
#   a SIGHUP with a broken file keeps the running configuration;
#   a burst of SIGHUPs with a new file (another spool directory) reloads
#   it and the milter keeps serving;
#   tempfail.lua   spool2/tmp removed under the milter: TEMPFAIL, and
#                  counted in milter.prom ([metrics] enabled, written
#                  every second), what the daemon serves and
#                  contrib/prometheus's PatchbridgeMilterTempfails reads
#   SIGTERM stops it within ~5 s, exit 0, socket and pid file removed.
#
# Exit 0 = pass, 1 = fail, 77 = skipped (miltertest missing).
NAME=miltertest
. "$(dirname "$0")/lib.sh"

[ $# -eq 2 ] || {
	echo "usage: $0 MILTER_BINARY WORKDIR" >&2
	exit 2
}
mt_setup pbmt "$1" "$2"
MLOG=$W/milter.log
printf '[metrics]\nenabled = yes\nmilter_interval = 1s\n' >>"$W/pb.conf"
sed -i 's/^max_message_size = .*/&\nmemory_limit = 64k/' "$W/pb.conf"

# run_lua SCRIPT: run one miltertest script, fail with its output.
run_lua() {
	local out
	out=$(miltertest -s "$MT_DIR/$1" 2>&1) ||
		fail "$1: $(printf '%s' "$out" | tail -n 5)"
	say "$out"
}

expect_records() {
	local n
	n=$(spool_count "$1")
	[ "$n" -eq "$2" ] || fail "$3: $n records in $1/new, expected $2"
}

step "start patchbridge-milter on unix:$SOCK"
"$MBIN" -f -c "$W/pb.conf" -P "$PIDFILE" 2>"$MLOG" &
MPID=$!
wait_file "$PIDFILE" 10 || fail "no pid file within 10s: $(cat "$MLOG")"
[ "$(cat "$PIDFILE")" = "$MPID" ] || fail "pid file says $(cat "$PIDFILE")"
[ -S "$SOCK" ] || fail "no socket $SOCK"
mode=$(stat -c %a "$SOCK")
[ "$mode" = 660 ] || fail "socket mode $mode, expected 660"
say "milter pid $MPID, socket mode $mode"

step "relevant reply: header added, spooled"
MT_QID=4RELEVANT1 run_lua relevant.lua
expect_records "$W/spool" 1 relevant
f=$(ls "$W"/spool/new/*)
[ "$(spool_field "$f" Queue-Id)" = 4RELEVANT1 ] ||
	fail "record has Queue-Id '$(spool_field "$f" Queue-Id)'"
[ "$(spool_field "$f" Message-Id)" = mt-relevant@example.org ] ||
	fail "record has Message-Id '$(spool_field "$f" Message-Id)'"
grep -q '^4RELEVANT1: <mt-relevant@example.org>: reply ' "$MLOG" ||
	grep -q ': 4RELEVANT1: <mt-relevant@example.org>: reply ' "$MLOG" ||
	fail "the log line does not carry the queue id"

step "irrelevant mail: no header, no record"
run_lua irrelevant.lua
# only the reply sent after the irrelevant mail
expect_records "$W/spool" 2 irrelevant

step "the bridge's own mail: no header, no record"
run_lua loop.lua
expect_records "$W/spool" 2 loop

step "oversize reply: what fits is bridged, cut at a line end"
run_lua oversize.lua
# it and the reply after it on the same connection are spooled
expect_records "$W/spool" 4 oversize
grep -q 'over \[milter\] max_message_size.*the first [0-9]* are bridged' \
	"$MLOG" || fail "oversize not logged"
grep -l '^Message-Id: mt-oversize@example.org$' "$W"/spool/new/* |
	xargs grep -q '^Received-Size: [0-9]*$' ||
	fail "the cut record has no Received-Size"

step "memory budget: files past memory_limit, shares given back"
files() { grep -c 'this one goes on in a file' "$MLOG"; }
before=$(files)
fds=$(ls /proc/"$MPID"/fd | wc -l)
run_lua budget.lua
# a or b (both when one asked while the other was moving to its file),
# and c, went to files; d, alone after the others ended, did not
n=$(($(files) - before))
[ "$n" -ge 1 ] && [ "$n" -le 3 ] ||
	fail "$n mails went to files, expected 1 to 3"
grep -q '4BUDGETD1: .*goes on in a file' "$MLOG" &&
	fail "a 40 KiB reply alone went to a file: a share was not given back"
# Back to as many descriptors as before: an event to wait for (the
# counters file written every second holds one for a moment).
. "$(dirname "$0")/../tools/slowdown.sh"
same_fds=
for _ in $(seq "$(scaled 100)"); do
	[ "$(ls /proc/"$MPID"/fd | wc -l)" -eq "$fds" ] && {
		same_fds=1
		break
	}
	sleep 0.1
done
[ -n "$same_fds" ] ||
	fail "descriptors: $fds before, $(ls /proc/"$MPID"/fd | wc -l) after"
expect_records "$W/spool" 7 budget
[ -z "$(ls -A "$W/spool/tmp")" ] ||
	fail "left in spool/tmp: $(ls -A "$W/spool/tmp")"
# milter.prom (written every second) counts them, and holds nothing now
prom=$W/spool/milter.prom
want=$(files)
prom_ok() {
	grep -qx "patchbridge_milter_mails_in_files_total $want" "$prom" \
		2>/dev/null &&
		grep -qx 'patchbridge_milter_memory_held_bytes 0' "$prom"
}
for i in $(seq 1 50); do
	prom_ok && break
	sleep 0.1
done
prom_ok || fail "milter.prom: $(grep 'in_files\|memory_held' "$prom")"
say "milter.prom: $(grep -h '^patchbridge_milter_\(mails_in_files\|memory_held\)' \
	"$prom" | xargs)"

step "SIGHUP with a broken file keeps the running configuration"
cp "$W/pb.conf" "$W/pb.conf.good"
printf '[milter\nbroken = \n' >>"$W/pb.conf"
kill -HUP "$MPID"
t=$SECONDS
until grep -q 'keeping the running configuration' "$MLOG"; do
	[ $((SECONDS - t)) -ge 10 ] && fail "no refusal logged after SIGHUP"
	pid_alive "$MPID" || fail "milter died on SIGHUP"
	sleep 0.05
done
MT_QID=4RELOAD1 run_lua relevant.lua
expect_records "$W/spool" 8 "after a refused reload"

step "a burst of SIGHUPs with a new file: reloaded, still serving"
mkdir -p "$W/spool2" || fail "cannot create $W/spool2"
sed "s|^dir = .*|dir = $W/spool2|" "$W/pb.conf.good" >"$W/pb.conf"
for i in $(seq 1 50); do
	kill -HUP "$MPID" || fail "milter gone after $i SIGHUPs"
done
t=$SECONDS
until [ -d "$W/spool2/new" ] && grep -q 'reload: configuration' "$MLOG"; do
	[ $((SECONDS - t)) -ge 10 ] && fail "no reload within 10s"
	sleep 0.05
done
MT_QID=4RELOAD2 run_lua relevant.lua
# Had libmilter's sigwait thread taken one SIGHUP, its listener would stop
# within its 5 s poll (MI_CHK_TIME): give it that long.
sleep 5.5
pid_alive "$MPID" || fail "milter stopped by the SIGHUP burst"
grep -q 'notice: stopp' "$MLOG" && fail "milter is stopping after SIGHUPs"
expect_records "$W/spool2" 1 "after the reload"
expect_records "$W/spool" 8 "old spool after the reload"
say "$(grep -c 'reload: configuration' "$MLOG") reloads logged, milter alive"

step "spool unwritable: TEMPFAIL"
# The spool works on directory descriptors opened at start (or reload);
# removing tmp/ under it makes every record creation fail, also for root.
rmdir "$W/spool2/tmp" || fail "cannot remove spool2/tmp"
run_lua tempfail.lua
expect_records "$W/spool2" 1 tempfail
grep -q 'cannot spool the reply <mt-tempfail@example.org>' "$MLOG" ||
	fail "the spool failure is not logged"
for i in $(seq 1 50); do
	grep -qx 'patchbridge_milter_tempfails_total 1' "$W/spool2/milter.prom" \
		2>/dev/null && break
	sleep 0.1
done
grep -qx 'patchbridge_milter_tempfails_total 1' "$W/spool2/milter.prom" ||
	fail "milter.prom does not count the tempfail: $(cat "$W/spool2/milter.prom")"
say "milter.prom: $(grep -x 'patchbridge_milter_tempfails_total.*' "$W/spool2/milter.prom")"

step "SIGTERM stops it cleanly"
t=$(date +%s%N)
kill -TERM "$MPID"
wait_pid_gone "$MPID" 15 || fail "still running 15s after SIGTERM"
wait "$MPID"
rc=$?
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"
[ -e "$SOCK" ] && fail "socket $SOCK left behind"
[ -e "$PIDFILE" ] && fail "pid file left behind"
say "stopped $((($(date +%s%N) - t) / 1000000)) ms after SIGTERM"
grep -q 'ERROR: \|runtime error\|LeakSanitizer' "$MLOG" &&
	fail "sanitizer report in $MLOG"

step "PASS in $((SECONDS - T0))s"
exit 0
