#!/usr/bin/python3
"""Mails as one mboxrd file, for the tests and benchmarks of
`patchbridge parse --mbox`: before each mail a From_ line, in it every
line that starts with "From " after any number of ">" quoted with one
more ">", after it an empty line (and a newline first if it has none at
its end), as public-inbox and `patchbridge export --mbox` write it.

As a program (tests/cli/parse_jsonl.sh, tests/bench/parse_bench.sh):

    mboxrd.py OUT FILE...

writes the mails FILE... to OUT.

As a module (tests/bench/parse_jobs_bench.py, tests/cli/parse_jsonl.sh):
mboxrd(mails) returns the mails (a list of bytes) as one mboxrd file.
"""

import re
import sys

FROM_LINE = b"From mboxrd@z Thu Jan  1 00:00:00 1970\n"
# a line (after a newline, as the mbox reader splits them) that
# starts with "From " after any number of ">"
FROM_QUOTED = re.compile(rb"(?m)^(>*From )")


def mboxrd(mails):
    out = []
    for m in mails:
        out.append(FROM_LINE)
        out.append(FROM_QUOTED.sub(rb">\1", m))
        if not m.endswith(b"\n"):
            out.append(b"\n")
        out.append(b"\n")
    return b"".join(out)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: mboxrd.py OUT FILE...\n")
        return 2
    with open(argv[0], "wb") as out:
        for name in argv[1:]:
            with open(name, "rb") as f:
                out.write(mboxrd([f.read()]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
