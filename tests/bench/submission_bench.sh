#!/bin/sh
# submission_bench.sh EMAILMR_TOOL [N], under tests/forgesim/run-with-sim.sh:
# a series of N patches (default 100) posted to the list, from its mails
# to the merge request: emailmr_tool collects the N + 1 mails (cover
# letter included) in a fresh state database and opens the merge request
# (mirror fetch, N patches applied as git am would, push, the forge call,
# the thread map), against the GitLab simulator.  Prints the wall time
# and the peak memory of that process (/usr/bin/time), with `git am` of
# the same mails as a yardstick.  The daemon adds its spool and journal
# around the same work.  Asserts nothing about time.
set -eu
tool=$(realpath "$1")
n=${2:-100}
url=${PB_FORGESIM_URL:?run through tests/forgesim/run-with-sim.sh}
[ -x /usr/bin/time ] || { echo "submission_bench: SKIP: no /usr/bin/time"; exit 77; }
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/subbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C.UTF-8 TZ=UTC \
	GIT_TERMINAL_PROMPT=0
mkdir -p "$HOME"
git config --global user.name "Ann Author"
git config --global user.email "ann@example.org"
unset http_proxy HTTP_PROXY all_proxy ALL_PROXY 2>/dev/null || true

git clone -q "$url/group/project.git" "$tmp/work"
base=$(git -C "$tmp/work" rev-parse HEAD)
i=1
while [ "$i" -le "$n" ]; do
	seq 1 40 | sed "s/^/patch $i line /" >"$tmp/work/f-$i.txt"
	git -C "$tmp/work" add -A
	git -C "$tmp/work" commit -q -m "bench: file $i" -m "Patch $i of $n."
	i=$((i + 1))
done
git -C "$tmp/work" format-patch -q --cover-letter --thread \
	--base="$base" -o "$tmp/mails" "$base..HEAD"
sed -i 's/\*\*\* SUBJECT HERE \*\*\*/bench: a long series/' \
	"$tmp/mails"/0000-cover-letter.patch

/usr/bin/time -f '%e %M' -o "$tmp/time" "$tool" "$tmp/state.db" "$url" \
	bot-token group/project "$tmp/mirror.git" main anyone \
	"$tmp/mails"/*.patch >"$tmp/out" 2>"$tmp/err" || {
	tail -5 "$tmp/err" >&2
	echo "submission_bench: FAIL: emailmr_tool" >&2
	exit 1
}
grep -q ': !' "$tmp/out" || { echo "submission_bench: FAIL: no MR" >&2; exit 1; }
read -r secs kib <"$tmp/time"

git clone -q "$url/group/project.git" "$tmp/am"
git -C "$tmp/am" checkout -q --detach "$base"
# shellcheck disable=SC2046  # file names made above, without blanks
/usr/bin/time -f '%e %M' -o "$tmp/amtime" \
	git -C "$tmp/am" am -q $(ls "$tmp/mails"/*.patch |
		grep -v '/0000-cover-letter.patch$') || {
	echo "submission_bench: FAIL: git am" >&2
	exit 1
}
read -r amsecs amkib <"$tmp/amtime"

printf '%-44s %10s %12s\n' "what" "seconds" "peak RSS KiB"
printf '%-44s %10s %12s\n' "$n-patch series: mails to merge request" \
	"$secs" "$kib"
printf '%-44s %10s %12s\n' "git am of the same $n mails (yardstick)" \
	"$amsecs" "$amkib"
