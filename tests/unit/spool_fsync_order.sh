#!/bin/sh
# The order of spool_put()'s system calls, seen by strace: the record is
# written and fsynced in tmp/, then renamed into new/, then new/ is
# fsynced; only then may the milter answer Postfix.  Nothing is written
# to the record after its fsync.
# Then 8 threads at once, whose fsyncs of new/ are shared (spool.c, "The
# fsync of new/"): each thread's answer (its write of the name) must come
# after an fsync of new/ that began after its rename and succeeded.
#
# usage: spool_fsync_order.sh SPOOL_PUT_DRIVER
# Exits 77 (skipped) when strace is missing or cannot trace here.
set -u
driver=$1
base=${PB_TEST_TMP:-/tmp}

if ! command -v strace >/dev/null 2>&1; then
	echo "strace is not installed: skipped"
	exit 77
fi
if ! strace -o /dev/null true >/dev/null 2>&1; then
	echo "strace cannot trace here (ptrace not permitted): skipped"
	exit 77
fi
dir=$(mktemp -d "$base/spool-strace.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

# LeakSanitizer cannot run under ptrace; the unit tests check leaks.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS
if ! strace -f -y -o "$dir/trace" \
	-e trace=openat,write,fsync,fdatasync,rename,renameat,renameat2 \
	"$driver" "$dir/spool" >"$dir/name"; then
	echo "the driver failed"
	cat "$dir/trace"
	exit 1
fi
name=$(cat "$dir/name")

awk -v name="$name" '
	function fail(msg) { print "FAIL: " msg; bad = 1; exit 1 }
	/(fsync|fdatasync)\(/ && index($0, "/tmp/" name ">") && / = 0$/ {
		if (!fsync_file) fsync_file = NR
		print
	}
	/write\(/ && index($0, "/tmp/" name ">") {
		if (fsync_file) fail("write after the fsync: " $0)
		wrote = NR
	}
	/rename/ && index($0, "\"" name "\"") && / = 0$/ {
		rename = NR
		print
	}
	/(fsync|fdatasync)\(/ && index($0, "/spool/new>)") && / = 0$/ {
		if (rename && !fsync_dir) fsync_dir = NR
		print
	}
	END {
		if (bad) exit 1
		if (!wrote) fail("no write to tmp/" name)
		if (!fsync_file) fail("the record was never fsynced")
		if (!rename) fail("no rename of " name)
		if (rename < fsync_file) fail("rename before the fsync")
		if (!fsync_dir) fail("new/ not fsynced after the rename")
		print "ok: write < fsync(record) < rename < fsync(new/)"
	}
' "$dir/trace" || {
	cat "$dir/trace"
	exit 1
}

# 8 writers at once
if ! strace -f -y -s 256 -o "$dir/trace8" \
	-e trace=write,fsync,fdatasync,rename,renameat,renameat2 \
	"$driver" "$dir/group" 8 >"$dir/names"; then
	echo "the driver failed with 8 threads"
	cat "$dir/trace8"
	exit 1
fi
[ "$(wc -l <"$dir/names")" -eq 8 ] || {
	echo "FAIL: 8 records expected, got: $(cat "$dir/names")"
	exit 1
}
awk '
	function fail(msg) { print "FAIL: " msg; bad = 1; exit 1 }
	function quoted(line,   a) {
		a = line
		sub(/^[^"]*"/, "", a)
		sub(/".*$/, "", a)
		sub(/\\n$/, "", a)
		return a
	}
	{ pid = $1 }
	/ rename(at2?)?\(/ && index($0, "/group/tmp>") {
		nm = quoted($0)
		if (/<unfinished/) pend_rename[pid] = nm
		else if (/ = 0$/) renamed[nm] = NR
		next
	}
	/<\.\.\. rename(at2?)? resumed>/ && (pid in pend_rename) {
		if (/ = 0$/) renamed[pend_rename[pid]] = NR
		delete pend_rename[pid]
		next
	}
	/ fsync\(/ && index($0, "/group/new>") {
		if (/<unfinished/) pend_sync[pid] = NR
		else if (/ = 0$/) { n++; s_start[n] = NR; s_end[n] = NR }
		next
	}
	/<\.\.\. fsync resumed>/ && (pid in pend_sync) {
		if (/ = 0$/) { n++; s_start[n] = pend_sync[pid]; s_end[n] = NR }
		delete pend_sync[pid]
		next
	}
	/ write\(1</ { answered[quoted($0)] = NR }
	END {
		if (bad) exit 1
		for (nm in answered) {
			if (!(nm in renamed)) fail("no rename of " nm)
			ok = 0
			for (i = 1; i <= n; i++)
				if (s_start[i] > renamed[nm] && s_end[i] < answered[nm])
					ok = 1
			if (!ok) fail(nm " answered before an fsync of new/ after its rename")
			k++
		}
		if (k != 8) fail(k " answers traced, 8 expected")
		printf "ok: 8 writers, each answered after an fsync of new/ begun after its rename (%d fsyncs of new/)\n", n
	}
' "$dir/trace8" || {
	cat "$dir/trace8"
	exit 1
}
