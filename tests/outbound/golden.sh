#!/bin/sh
# golden.sh PATCHBRIDGE [--update]: `patchbridge format` of a fixed small
# repository (make-repo.sh golden) and MR (tests/data/outbound/
# mr-golden.json) gives, byte for byte, tests/data/outbound/golden.mbox,
# and formatting twice gives the same bytes (DESIGN.md rule 5).  The
# version string is replaced by "VERSION" before comparing.  --update
# rewrites the expected file (review the diff before committing it).
set -eu
pb=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
name=golden
. "$here/testenv.sh"

sh "$here/make-repo.sh" golden "$tmp/repo" >/dev/null
run() {
	"$pb" format --repo "$tmp/repo" --base base --head head \
		--mr-json "$data/mr-golden.json" \
		--to "Greeter List <greeter@lists.example.org>" \
		--cc "Zoë Çelik <zoe@example.org>" --cc "ZOE@example.org" \
		--bridge-address bridge@bridge.example.org "$@"
}
run -o "$tmp/one.mbox"
run >"$tmp/two.mbox"
cmp -s "$tmp/one.mbox" "$tmp/two.mbox" || {
	diff -a "$tmp/one.mbox" "$tmp/two.mbox" >&2 || true
	echo "golden: FAIL: two runs differ" >&2
	exit 1
}
sed -E 's/patchbridge [0-9]+\.[0-9]+\.[0-9]+[^ ]*$/patchbridge VERSION/' \
	"$tmp/one.mbox" >"$tmp/got.mbox"
if [ "${2:-}" = --update ]; then
	cp "$tmp/got.mbox" "$data/golden.mbox"
	echo "golden: updated $data/golden.mbox"
	exit 0
fi
cmp -s "$data/golden.mbox" "$tmp/got.mbox" || {
	diff -a "$data/golden.mbox" "$tmp/got.mbox" >&2 || true
	echo "golden: FAIL: output differs from tests/data/outbound/golden.mbox" >&2
	exit 1
}
echo "golden: ok"
