#!/bin/sh
# The order of spool_put()'s system calls, seen by strace: the record is
# written and fsynced in tmp/, then renamed into new/, then new/ is
# fsynced; only then may the milter answer Postfix.  Nothing is written
# to the record after its fsync.
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
