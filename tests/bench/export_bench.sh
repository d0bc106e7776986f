#!/bin/sh
# export_bench.sh PATCHBRIDGE EXPORT_SEED [N...]
#
# Benchmark of `patchbridge export`: for each N (default 200 and 2000), a
# state database whose archive holds one MR's conversation of N mails of
# about 8 KiB (export_seed.c) is exported as mbox and as a public-inbox
# archive; the table shows the wall-clock time and the peak resident
# memory (GNU time) of each, next to `git mailsplit` reading the mbox back
# as a yardstick.  The export streams the mails, so its memory should not
# grow with N; the table shows whether it does.
#
# Registered with CTest under the label "bench" when configured with
# -DPB_BENCH=ON (tests/bench/CMakeLists.txt; ctest -L bench): it runs the
# benchmark and fails only if a command fails, never on timings.
set -eu
pb=$(realpath "$1")
seed=$(realpath "$2")
shift 2
[ $# -gt 0 ] || set -- 200 2000
size=8192
out=$(mktemp -d "${TMPDIR:-/tmp}/pb-export-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
export HOME="$out/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
mkdir -p "$HOME"

gnutime=
if [ -x /usr/bin/time ] && /usr/bin/time -v true 2>/dev/null; then
	gnutime=/usr/bin/time
fi

now() { date +%s.%N; }

# timed NAME CMD...: "SECONDS RSS_KIB" of one run.
timed() {
	name=$1
	shift
	t0=$(now)
	if [ -n "$gnutime" ]; then
		$gnutime -v -o "$out/$name.tv" "$@" >"$out/$name.out"
		rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/$name.tv")
	else
		"$@" >"$out/$name.out"
		rss=n/a
	fi
	t1=$(now)
	printf '%.3f %s\n' "$(echo "$t1 - $t0" | bc -l)" "$rss"
}

echo
echo "export benchmark: one MR's archive of N mails of about $size bytes"
echo "CPUs: $(nproc)"
printf '%6s %10s  %-34s %9s %12s\n' N MiB command seconds "peak RSS KiB"
for n in "$@"; do
	d="$out/n$n"
	mkdir -p "$d/spool"
	cat >"$d/pb.conf" <<CONF
[bridge]
name = patchbridge
address = bridge@example.org
domain = bridge.example.org
list_address = list@example.org
[forge]
url = http://127.0.0.1:9
token_file = $d/token
[state]
path = $d/state.db
[spool]
dir = $d/spool
CONF
	"$seed" "$d/state.db" "$n" "$size"
	set -- $(timed mbox$n "$pb" -c "$d/pb.conf" export --mbox "$d/x.mbox" \
		group/project!1)
	mib=$(echo "$(wc -c <"$d/x.mbox") / 1048576" | bc -l)
	printf '%6s %10.1f  %-34s %9s %12s\n' "$n" "$mib" "export --mbox" "$1" "$2"
	set -- $(timed pi$n "$pb" -c "$d/pb.conf" export --public-inbox \
		"$d/inbox" group/project!1)
	printf '%6s %10s  %-34s %9s %12s\n' "" "" "export --public-inbox" "$1" "$2"
	mkdir "$d/split"
	set -- $(timed split$n git mailsplit -o"$d/split" "$d/x.mbox")
	printf '%6s %10s  %-34s %9s %12s\n' "" "" "git mailsplit (yardstick)" "$1" "$2"
	got=$(cat "$out/split$n.out")
	[ "$got" = "$n" ] || {
		echo "export_bench: git mailsplit found $got mails, not $n" >&2
		exit 1
	}
	commits=$(git --git-dir="$d/inbox/git/0.git" rev-list --count master)
	[ "$commits" = "$n" ] || {
		echo "export_bench: the inbox has $commits commits, not $n" >&2
		exit 1
	}
done
