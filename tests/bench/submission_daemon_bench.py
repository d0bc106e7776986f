#!/usr/bin/python3
"""submission_daemon_bench.py: a series posted to the list, through the
daemon: from the last mail's "250" at Postfix to the merge request on
the forge, and the daemon's peak memory.

usage: submission_daemon_bench.py --bin BUILD --work DIR [-n N] [-r R]

Run under tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL), as root
with Postfix (exit 77 otherwise).  The bed is the inbound end-to-end
test's submission story (tests/e2e/inbound_e2e.py submission_bed(): a
private Postfix as the list server with the DKIM stand-in and
patchbridge-milter in smtpd_milters; the project takes series by mail
from anyone, onto main).

Each of R runs (default 3) starts `patchbridge run --foreground` on the
state of the runs before it (the spool watched, as by default), makes a
series of N patches (default 100; each adds a 40-line file, as
submission_bench.sh's) with git format-patch --cover-letter --thread
--base, and sends its N + 1 mails in order over one SMTP session, as
git send-email does, each mail's time taken when Postfix answers 250 to
its DATA (the milter has spooled it then).  The merge request's
created_at (milliseconds, the simulator's clock, which is the host's)
minus the last 250 is the figure: the milter's spool, the daemon's
journal and collection of the N + 1 mails, git am of the N patches in
the mirror, the push, and the forge call.  The daemon's peak resident
memory is VmHWM of /proc/PID/status once the merge request is there;
its VmRSS before the series is given beside it.  The daemon is then
stopped, so that each run's peak is its own.

The table: per run, the seconds from the first to the last 250, from the
last 250 to the merge request, the daemon's VmRSS before and VmHWM
after; then the medians.  Asserts nothing about time; exit status 1 only
when a command fails, a mail is refused, or no merge request comes
within --timeout seconds.
"""

import argparse
import os
import smtplib
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import bedlib  # noqa: E402
import inbound_e2e  # noqa: E402
from bedlib import Fail, check, say, sim  # noqa: E402
from latency_bench import epoch, wait_log  # noqa: E402

SENDER = "ann@example.com"
LAST_FORMAT = [0]


def status_kib(pid, field):
    """VmRSS or VmHWM of pid, in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise Fail("no %s in /proc/%d/status" % (field, pid))


def make_series(bed, env, run, n):
    """N commits on the project's main, formatted as git send-email
    sends them: the mails' bytes, the cover letter first; the title."""
    work = os.path.join(bed.work, "series-%d" % run)
    git = bedlib.project_clone(work, dict(env, GIT_AUTHOR_NAME="Ann Sender",
                                          GIT_AUTHOR_EMAIL=SENDER))
    base = git("rev-parse", "HEAD").strip()
    for i in range(1, n + 1):
        with open(os.path.join(work, "r%d-f-%d.txt" % (run, i)), "w") as f:
            f.write("".join("patch %d line %d\n" % (i, k)
                            for k in range(1, 41)))
        git("add", "-A")
        git("commit", "-q", "-m", "bench: file %d of run %d" % (i, run),
            "-m", "Patch %d of %d." % (i, n))
    out = os.path.join(bed.work, "mails-%d" % run)
    # git format-patch names the cover letter by the time in seconds:
    # two series made within one second would share its Message-ID,
    # which two runs of git send-email never do
    bedlib.wait_for(lambda: int(time.time()) > LAST_FORMAT[0], 5,
                    "the clock")
    LAST_FORMAT[0] = int(time.time())
    git("format-patch", "-q", "--cover-letter", "--thread",
        "--base=" + base, "-o", out, base + "..HEAD")
    title = "bench: a long series, run %d" % run
    mails = []
    for name in sorted(os.listdir(out)):
        with open(os.path.join(out, name), "rb") as f:
            raw = f.read()
        # git format-patch's mbox "From " line is not part of the mail
        raw = raw.split(b"\n", 1)[1]
        if name.startswith("0000-"):
            raw = raw.replace(b"*** SUBJECT HERE ***", title.encode())
        mails.append(raw)
    check(len(mails) == n + 1, "%d mails for %d patches" % (len(mails), n))
    return mails, title


def send(bed, mails):
    """The mails in order over one SMTP session; each one's 250 time."""
    times = []
    with smtplib.SMTP(bed.addr, int(bed.env["PORT"]), timeout=120) as s:
        for raw in mails:
            s.sendmail(SENDER, [bedlib.LIST], raw)
            times.append(time.time())
    return times


def one_run(bed, env, run, n, timeout):
    mails, title = make_series(bed, env, run, n)
    logname = "daemon-%d.log" % run
    log = os.path.join(bed.work, logname)
    open(log, "w").close()
    daemon = bed.spawn([bed.exe("bridge", "patchbridge"), "-c", bed.cfg,
                        "run", "--foreground"], logname)
    try:
        # it watches the spool: what the milter spools is taken at once
        wait_log(log, "inbound: watching", bedlib.bound(60))
        rss0 = status_kib(daemon.pid, "VmRSS")
        say("run %d: %d mails to the list" % (run, len(mails)))
        times = send(bed, mails)
        deadline = time.monotonic() + bedlib.bound(timeout)
        mr = None
        while mr is None:
            check(daemon.poll() is None, "the daemon exited")
            check(time.monotonic() < deadline,
                  "no merge request %r after %d s" % (title, timeout))
            mr = next((m for m in sim(
                "GET", "/api/v4/projects/1/merge_requests?per_page=100")
                if m["title"] == title), None)
            if mr is None:
                time.sleep(0.1)
        hwm = status_kib(daemon.pid, "VmHWM")
        commits = sim("GET", "/api/v4/projects/1/merge_requests/%d/commits"
                      "?per_page=100&page=%d" % (mr["iid"], (n + 99) // 100))
        check(len(commits) == (n - 1) % 100 + 1,
              "!%d holds the wrong number of commits" % mr["iid"])
        latency = epoch(mr["created_at"]) - times[-1]
        say("run %d: !%d %.2f s after the last 250; VmHWM %d KiB" %
            (run, mr["iid"], latency, hwm))
        return times[-1] - times[0], latency, rss0, hwm
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the build directory")
    ap.add_argument("--work", required=True)
    ap.add_argument("-n", type=int, default=100, help="patches a series")
    ap.add_argument("-r", type=int, default=3, help="runs")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds to wait for each merge request")
    args = ap.parse_args()
    check(args.n >= 1 and args.r >= 1, "-n and -r take 1 or more")
    rc = bedlib.skip_milters(args.bin, "submission_daemon_bench")
    if rc is not None:
        return rc
    bed = inbound_e2e.Bed(args, "submission-bench")
    rows = []
    try:
        env = inbound_e2e.submission_bed(bed, target="main")
        for run in range(1, args.r + 1):
            rows.append(one_run(bed, env, run, args.n, args.timeout))
    except (Fail, subprocess.SubprocessError, smtplib.SMTPException,
            OSError) as e:
        say("FAIL: %s" % e)
        print(bed.log_tail())
        return 1
    finally:
        bed.stop()
    print()
    print("a %d-patch series posted to the list, through Postfix, "
          "patchbridge-milter and the daemon (%d runs)" % (args.n, args.r))
    print("CPUs: %d, load average: %s" %
          (os.cpu_count(), " ".join(open("/proc/loadavg").read().split()[:3])))
    fmt = "%-8s %14s %18s %16s %16s"
    print(fmt % ("run", "sending s", "last 250 to MR s", "VmRSS before KiB",
                 "VmHWM KiB"))
    for k, (sending, latency, rss0, hwm) in enumerate(rows, 1):
        print(fmt % (k, "%.2f" % sending, "%.2f" % latency, rss0, hwm))
    print(fmt % ("median",
                 "%.2f" % statistics.median(r[0] for r in rows),
                 "%.2f" % statistics.median(r[1] for r in rows),
                 int(statistics.median(r[2] for r in rows)),
                 int(statistics.median(r[3] for r in rows))))
    print("sending: the first mail's 250 to the last's (one SMTP session, "
          "as git send-email); last 250 to MR: the merge request's "
          "created_at on the forge minus the last 250")
    return 0


if __name__ == "__main__":
    sys.exit(main())
