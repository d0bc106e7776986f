#!/bin/bash
# parse_jsonl.sh PATCHBRIDGE SRC_DIR
#
# `patchbridge parse` on many mails in one process: `parse FILE...` and
# `parse --mbox FILE` print JSON Lines, one compact object per mail, in
# order, each the same object `parse FILE` prints for that mail alone
# (which stays one indented object), with "file" (and "index" in an mbox)
# first.  Checked on corpus threads (cover letters, patches, replies with
# inline comments), against one process per mail:
#   1. FILE... gives the single-file objects, in order;
#   2. the same mails as an mboxrd file (one body line starting "From "
#      added, quoted ">From " as mboxrd does) give them again, with
#      index 1..N, from a file and from standard input;
#   3. --jsonl makes one FILE a line; --patch applies to every mail;
#   4. an unreadable file and a mail that does not parse get an "error"
#      line, the others go on, and the exit status says so (66, 65); a
#      file that is not an mbox is refused (65); bad usage is 64;
#   5. --jobs N (threads) changes nothing a user sees: the same lines,
#      the same messages on standard error in the same order and the
#      same exit status for N = 1, 2 and 7, errors mixed in;
#   6. nor when the mails outnumber the ring of mails read ahead many
#      times and some are large (the read-ahead's byte bound is reached,
#      large buffers are given back, a worker is held by a long mail
#      while the others go on).
set -u
export LC_ALL=C
unset PATCHBRIDGE_CONFIG
[ $# -eq 2 ] || {
	echo "usage: $0 PATCHBRIDGE SRC_DIR" >&2
	exit 2
}
pb=$1
src=$2
py=/usr/bin/python3
tmp=$(mktemp -d "${PB_TEST_TMP:-/tmp}/cli_parse_jsonl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

fail() {
	echo "FAIL: $*" >&2
	failed=1
}

[ -x "$py" ] || {
	echo "FAIL: $py is needed to compare the JSON" >&2
	exit 1
}
corpus=$src/tests/data/corpus/threads
files=("$corpus"/01-iwl-iavf-channels-v1/*.eml "$corpus"/07-nf-ipv6-jumbo-v1/*.eml)
[ ${#files[@]} -ge 10 ] || {
	echo "FAIL: the corpus threads are missing under $corpus" >&2
	exit 1
}

# A reply whose text has lines starting "From " and ">From ", which the
# mbox must quote and give back.
cat >"$tmp/from-lines.eml" <<'MAIL'
From: Rob Reviewer <rob@review.example>
To: list@lists.example.org
Subject: Re: [PATCH 1/6] net: a change
Message-ID: <from-lines@review.example>
In-Reply-To: <patch-1@example.org>

From the first version on this was wrong.
>From a quote that mboxrd quotes once more.

Acked-by: Rob Reviewer <rob@review.example>
MAIL
files+=("$tmp/from-lines.eml")

# One process per mail: the reference objects, one JSON document a file.
i=0
for f in "${files[@]}"; do
	i=$((i + 1))
	"$pb" parse "$f" >"$tmp/single.$i.json" 2>"$tmp/err" ||
		fail "parse $f: $(cat "$tmp/err")"
done

# compare LINES-FILE MODE: each line against the single-file objects.
compare() {
	"$py" - "$1" "$2" "$tmp" "${files[@]}" <<'EOF'
import json, sys
lines_path, mode, tmp = sys.argv[1:4]
files = sys.argv[4:]
lines = open(lines_path, encoding="utf-8").read().split("\n")
if lines[-1] != "":
    sys.exit("the output does not end with a newline")
lines = lines[:-1]
if len(lines) != len(files):
    sys.exit("%d lines for %d mails" % (len(lines), len(files)))
for i, (line, f) in enumerate(zip(lines, files), 1):
    if line != line.strip() or "\n" in line:
        sys.exit("line %d is not one compact line" % i)
    obj = json.loads(line)
    keys = list(obj)
    if mode == "files":
        if keys[0] != "file" or obj.pop("file") != f:
            sys.exit("line %d: \"file\" is not first or not %s" % (i, f))
    else:
        if keys[:2] != ["file", "index"] or obj["index"] != i:
            sys.exit("line %d: \"file\", \"index\": %d expected first"
                     % (i, i))
        del obj["file"], obj["index"]
    want = json.load(open("%s/single.%d.json" % (tmp, i), encoding="utf-8"))
    if obj != want:
        sys.exit("line %d (%s) differs from `parse FILE`" % (i, f))
EOF
}

# 1. FILE...
"$pb" parse "${files[@]}" >"$tmp/batch.jsonl" 2>"$tmp/err" ||
	fail "parse FILE...: exit $? ($(cat "$tmp/err"))"
compare "$tmp/batch.jsonl" files || fail "parse FILE...: see above"

# 2. the same mails as an mboxrd file: "From " lines quoted, a From_
# line before each, an empty line after each (as public-inbox writes it).
"$py" "$src/tests/tools/mboxrd.py" "$tmp/mails.mbox" "${files[@]}" ||
	fail "tests/tools/mboxrd.py: exit $?"
grep -q '^>From ' "$tmp/mails.mbox" ||
	fail "no quoted \">From \" line in the test mbox"
"$pb" parse --mbox "$tmp/mails.mbox" >"$tmp/mbox.jsonl" 2>"$tmp/err" ||
	fail "parse --mbox: exit $? ($(cat "$tmp/err"))"
compare "$tmp/mbox.jsonl" mbox || fail "parse --mbox: see above"
"$pb" parse --mbox - <"$tmp/mails.mbox" >"$tmp/stdin.jsonl" 2>"$tmp/err" ||
	fail "parse --mbox -: exit $? ($(cat "$tmp/err"))"
compare "$tmp/stdin.jsonl" mbox || fail "parse --mbox -: see above"
grep -q '"file":"-"' "$tmp/stdin.jsonl" || fail "parse --mbox -: file is not \"-\""

# 3. --jsonl for one FILE; --patch for all of them
"$pb" parse --jsonl "${files[1]}" >"$tmp/one.jsonl" 2>"$tmp/err" ||
	fail "parse --jsonl FILE: exit $?"
[ "$(wc -l <"$tmp/one.jsonl")" -eq 1 ] || fail "parse --jsonl FILE: not one line"
reply=$corpus/07-nf-ipv6-jumbo-v1/003-re-p1-simon-horman.eml
patch=$corpus/07-nf-ipv6-jumbo-v1/002-patch-1of6.eml
if [ -f "$reply" ] && [ -f "$patch" ]; then
	"$pb" parse --patch "$patch" "$reply" >"$tmp/p1.json" 2>/dev/null
	"$pb" parse --patch "$patch" "$reply" "$reply" >"$tmp/p2.jsonl" 2>/dev/null
	"$py" - "$tmp/p1.json" "$tmp/p2.jsonl" <<'EOF' || fail "--patch is not applied to every mail"
import json, sys
one = json.load(open(sys.argv[1]))
for line in open(sys.argv[2]):
    obj = json.loads(line)
    del obj["file"]
    if obj != one:
        sys.exit(1)
EOF
else
	fail "the --patch test mails are missing"
fi

# 4. errors: the others go on
printf 'not a mail at all\n' >"$tmp/junk.eml"
"$pb" parse "${files[0]}" "$tmp/missing.eml" "${files[1]}" >"$tmp/err.jsonl" 2>"$tmp/err"
rc=$?
[ $rc -eq 66 ] || fail "parse with a missing file: exit $rc, expected 66"
[ "$(wc -l <"$tmp/err.jsonl")" -eq 3 ] || fail "parse with a missing file: not 3 lines"
sed -n 2p "$tmp/err.jsonl" | grep -q '^{"file":"[^"]*missing.eml","error":"' ||
	fail "no error line for the missing file: $(sed -n 2p "$tmp/err.jsonl")"
"$pb" parse "${files[0]}" "$tmp/junk.eml" "${files[1]}" >"$tmp/junk.jsonl" 2>"$tmp/err"
rc=$?
[ $rc -eq 65 ] || fail "parse with a mail that does not parse: exit $rc, expected 65"
[ "$(wc -l <"$tmp/junk.jsonl")" -eq 3 ] && sed -n 3p "$tmp/junk.jsonl" | grep -q '"message_id"' ||
	fail "parse with a mail that does not parse: the mails after it are missing"
sed -n 2p "$tmp/junk.jsonl" | grep -q '^{"file":"[^"]*junk.eml","error":"not a mail' ||
	fail "no error line for the junk mail: $(sed -n 2p "$tmp/junk.jsonl")"
"$pb" parse --mbox "${files[0]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 65 ] || fail "parse --mbox on a mail: exit $rc, expected 65"
grep -q "not an mbox" "$tmp/err" || fail "parse --mbox on a mail: $(cat "$tmp/err")"
"$pb" parse --mbox "$tmp/mails.mbox" "${files[0]}" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 64 ] || fail "parse --mbox FILE with a FILE: exit $rc, expected 64"
"$pb" parse --mbox >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 64 ] || fail "parse --mbox without a file: exit $rc, expected 64"

# 5. --jobs: the output of many threads is the output of one
mixed=("${files[@]}" "$tmp/missing.eml" "${files[@]}" "$tmp/junk.eml" "${files[0]}")
for j in 1 2 7; do
	"$pb" parse --jobs $j "${mixed[@]}" >"$tmp/j$j.jsonl" 2>"$tmp/j$j.err"
	echo $? >"$tmp/j$j.rc"
	"$pb" parse -j $j --mbox "$tmp/mails.mbox" >"$tmp/m$j.jsonl" 2>&1 ||
		fail "parse -j $j --mbox: exit $?"
done
[ "$(cat "$tmp/j1.rc")" = 66 ] || fail "parse --jobs 1 with errors: exit $(cat "$tmp/j1.rc"), expected 66"
[ "$(wc -l <"$tmp/j1.jsonl")" -eq ${#mixed[@]} ] ||
	fail "parse --jobs 1: $(wc -l <"$tmp/j1.jsonl") lines for ${#mixed[@]} mails"
for j in 2 7; do
	cmp -s "$tmp/j1.jsonl" "$tmp/j$j.jsonl" || fail "parse --jobs $j: other lines than --jobs 1"
	cmp -s "$tmp/j1.err" "$tmp/j$j.err" || fail "parse --jobs $j: other messages than --jobs 1"
	cmp -s "$tmp/j1.rc" "$tmp/j$j.rc" || fail "parse --jobs $j: exit $(cat "$tmp/j$j.rc"), --jobs 1: $(cat "$tmp/j1.rc")"
	cmp -s "$tmp/m1.jsonl" "$tmp/m$j.jsonl" || fail "parse --jobs $j --mbox: other lines than --jobs 1"
done
compare "$tmp/m7.jsonl" mbox || fail "parse -j 7 --mbox: see above"
# 6. --jobs on many mails, some large: 40 rounds of the mails, with
# replies of 5.3 MiB each (a long quoted patch, comments between) in
# rounds 5 and 30 and eight in a row in round 20 (42 MiB: above the
# 32 MiB the ring reads ahead).
"$py" - "$src/tests/tools" "$tmp/many.mbox" "${files[@]}" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from mboxrd import mboxrd  # noqa: E402  (tests/tools)
out, files = sys.argv[2], sys.argv[3:]
mails = [open(f, "rb").read() for f in files]
quoted = b"".join(b"> +\tline %d of a long patch\n" % i for i in range(90000))
large = (b"From: Rob Reviewer <rob@review.example>\n"
         b"Subject: Re: [PATCH 1/6] net: a change\n"
         b"Message-ID: <large-%d@review.example>\n"
         b"In-Reply-To: <patch-1@example.org>\n\n"
         b"Before.\n\n" + quoted.replace(b"%", b"%%") + b"\nBetween.\n\n" +
         quoted.replace(b"%", b"%%") +
         b"\nAcked-by: Rob Reviewer <rob@review.example>\n")
with open(out, "wb") as f:
    for r in range(40):
        batch = list(mails)
        if r in (5, 30):
            batch.insert(r % len(batch), large % r)
        if r == 20:
            batch[3:3] = [large % (100 + k) for k in range(8)]
        f.write(mboxrd(batch))
EOF
for j in 1 2 7; do
	"$pb" parse -j $j --mbox "$tmp/many.mbox" >"$tmp/many$j.jsonl" 2>&1 ||
		fail "parse -j $j --mbox (many mails): exit $?"
done
[ "$(wc -l <"$tmp/many1.jsonl")" -eq $((40 * ${#files[@]} + 10)) ] ||
	fail "parse --mbox (many mails): $(wc -l <"$tmp/many1.jsonl") lines for $((40 * ${#files[@]} + 10)) mails"
for j in 2 7; do
	cmp -s "$tmp/many1.jsonl" "$tmp/many$j.jsonl" ||
		fail "parse -j $j --mbox (many mails, some large): other lines than -j 1"
done

for bad in 0 65 x ""; do
	"$pb" parse --jobs "$bad" "${files[0]}" >"$tmp/out" 2>&1
	rc=$?
	[ $rc -eq 64 ] || fail "parse --jobs '$bad': exit $rc, expected 64"
done

[ $failed -eq 0 ] && echo "parse_jsonl: ok"
exit $failed
