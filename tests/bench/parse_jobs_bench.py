#!/usr/bin/python3
"""The threads of `patchbridge parse --mbox` on two inputs built from
the corpus (tests/data/corpus): the corpus's mails eight times as one
mboxrd file (even sizes), and the same with a reply of about 2 MiB
(the corpus's largest mail, its body repeated) after every 40th mail
(uneven: a thread held by a long mail while the others go on).

usage: parse_jobs_bench.py --patchbridge BIN [--before BIN] [-j N] [-r R]

For each binary and input: R runs of `BIN parse -j N --mbox FILE` (its
output to /dev/null; each run's output compared with the first
binary's; the binaries in turn), the median wall time, CPU time (user
+ system), context switches (voluntary + involuntary) and peak RSS
(with GNU time, Debian's package time; else nan), as a table.  A
figure, never a pass or fail.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(TOP, "tests", "tools"))
from mboxrd import mboxrd  # noqa: E402  (tests/tools, put on the path above)


def inputs(work):
    corpus = os.path.join(TOP, "tests", "data", "corpus")
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(corpus)
                   for f in fs if f.endswith(".eml"))
    if not files:
        sys.exit("parse_jobs_bench: no .eml files under %s" % corpus)
    mails = [open(f, "rb").read() for f in files]
    big = max(mails, key=len)
    head, _, body = big.partition(b"\n\n")
    large = head + b"\n\n" + body * max(1, (2 << 20) // max(1, len(body)))
    even = mails * 8
    uneven = []
    for i, m in enumerate(even):
        uneven.append(m)
        if i % 40 == 0:
            uneven.append(large)
    made = []
    for name, ms in (("even", even), ("uneven", uneven)):
        path = os.path.join(work, name + ".mbox")
        with open(path, "wb") as f:
            f.write(mboxrd(ms))
        made.append((name, path, len(ms), os.path.getsize(path)))
    return made


# Peak RSS from GNU time (Debian's package time) when there is one: a
# child's ru_maxrss counts the memory of the process that forked it.
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def one_run(binary, jobs, path):
    work = os.path.dirname(path)
    argv = [binary, "parse", "-j", str(jobs), "--mbox", path]
    if GNU_TIME:
        argv = [GNU_TIME, "-f", "%M", "-o", os.path.join(work, "rss")] + argv
    t = time.monotonic()
    with open(os.path.join(work, "out.jsonl"), "wb") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("parse_jobs_bench: %s parse --mbox %s: exit %d" %
                 (binary, path, os.waitstatus_to_exitcode(status)))
    with open(os.path.join(work, "out.jsonl"), "rb") as f:
        digest = hash(f.read())
    rss = float("nan")
    if GNU_TIME:
        with open(os.path.join(work, "rss")) as f:
            rss = int(f.read().split()[-1]) / 1024
    return (wall, ru.ru_utime + ru.ru_stime, ru.ru_nvcsw + ru.ru_nivcsw,
            rss, digest)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--patchbridge", required=True)
    ap.add_argument("--before")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("-r", "--runs", type=int, default=7)
    args = ap.parse_args()
    bins = [("patchbridge", args.patchbridge)]
    if args.before:
        bins.append(("before", args.before))
    with tempfile.TemporaryDirectory(prefix="pb-jobs-bench.") as work:
        made = inputs(work)
        print("parse --mbox on %d threads, median of %d runs; load average "
              "%s" % (args.jobs, args.runs,
                      " ".join("%.2f" % x for x in os.getloadavg())))
        print("%-8s %-12s %6s %8s %9s %8s %9s %9s" %
              ("input", "binary", "mails", "MiB", "wall s", "CPU s",
               "ctx sw", "RSS MiB"))
        for name, path, n, size in made:
            want = None
            runs = {label: [] for label, _ in bins}
            # the binaries in turn, so that a change of load hits both
            for _ in range(args.runs):
                for label, binary in bins:
                    r = one_run(binary, args.jobs, path)
                    if want is None:
                        want = r[4]
                    if r[4] != want:
                        sys.exit("parse_jobs_bench: %s: other output than "
                                 "%s on %s" % (binary, bins[0][1], name))
                    runs[label].append(r)
            for label, _ in bins:
                med = [statistics.median(x[i] for x in runs[label])
                       for i in range(4)]
                print("%-8s %-12s %6d %8.1f %9.3f %8.3f %9d %9.1f" %
                      (name, label, n, size / 2**20, med[0], med[1],
                       med[2], med[3]))


if __name__ == "__main__":
    main()
