#!/usr/bin/python3
"""latency_bench.py: how long from a reply's "250" at Postfix to its
note on the forge.

usage: latency_bench.py --bin BUILD --work DIR [--duration S]
                        [--rates 1,20,100] [--modes poll,watch]
                        [--drain S] [--senders N] [--seed-notes N]
                        [--worst N] [--debug-log]

Run under tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL), as root
with Postfix (exit 77 otherwise).  The bed is the inbound end-to-end
test's (tests/e2e/inbound_e2e.py: a private Postfix as the list server
with the DKIM stand-in and patchbridge-milter in smtpd_milters, the
simulator's MR mailed as a 3-patch series); `patchbridge run
--foreground` runs without webhooks, the forge polled as configured.

For each mode, one daemon:
  poll   [spool] watch = no: the daemon looks at the spool every 5 s,
         as it did before it watched it;
  watch  [spool] watch = yes (the default): inotify on the spool's new/.
and for each rate R (replies/s), R x S replies to patch 1 are sent over
SMTP, open loop: message i is sent at t0 + i/R by one of N sender
threads (one SMTP session per reply), whatever became of the earlier
ones.  Each reply's time is taken when Postfix answers 250 to its DATA
(the milter spooled it then).  Once the spool is empty again (or after
--drain seconds), the MR's notes are read from the forge: each reply's
note carries the bridge's hidden marker of its Message-ID, and its
created_at (milliseconds, the simulator's clock, which is the host's)
minus the 250's time is the latency.

--seed-notes N puts N notes on the MR first (each with the bridge's
marker, as the replies of earlier runs: an MR with a long conversation),
waits for the simulator's clock to be the host's again (a burst runs it
ahead) and, once the daemon runs, for its first reading of them.
--worst N lists the N slowest replies of each run; --debug-log has the
daemon log at debug level in JSON, each line with its time.

The table: per mode and rate, replies sent and accepted, the rate the
senders achieved, how many notes arrived, and the latency's p50, p99
and maximum.  A rate the pipeline cannot sustain on this machine shows
as a growing latency and notes missing at the end of the drain: that is
a figure too, not a failure.  Exit status 1 only when a command fails
or a reply is refused.
"""

import argparse
import datetime
import hashlib
import math
import os
import re
import smtplib
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import bedlib  # noqa: E402
import inbound_e2e  # noqa: E402
from bedlib import Fail, check, say, sim  # noqa: E402

SENDER = "rob@review.example"
FROM = "Rob Reviewer <rob@review.example>"
MARKER = re.compile(r"<!-- patchbridge:(pb1-[0-9a-f]{32})\.0 -->")


def marker_key(mid):
    """inbound/marker.c's key of a reply's first action, without ".0"."""
    return "pb1-" + hashlib.sha256(mid.encode()).hexdigest()[:32]


def percentile(vals, p):
    """Nearest-rank percentile of a sorted list."""
    if not vals:
        return float("nan")
    k = math.ceil(p / 100.0 * len(vals)) - 1
    return vals[max(0, min(len(vals) - 1, k))]


def epoch(iso):
    """GitLab's "2022-05-13T07:26:38.402Z" as Unix seconds."""
    t = datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ")
    return t.replace(tzinfo=datetime.timezone.utc).timestamp()


def all_notes():
    """Every note of MR !1, through GitLab's paginated notes API."""
    notes, page = [], 1
    while True:
        got = sim("GET", "/api/v4/projects/1/merge_requests/1/notes"
                  "?per_page=100&sort=asc&order_by=created_at&page=%d"
                  % page, timeout=120)
        notes += got
        if len(got) < 100:
            return notes
        page += 1


def seed_notes(n, threads=8):
    """Put n notes on MR !1 before the measure, as the bridge posts
    replies (each with its hidden marker, so the daemon mails none of
    them): an MR that carries a long conversation already."""
    if n <= 0:
        return
    say("seeding MR !1 with %d notes" % n)
    left = list(range(n))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not left:
                    return
                i = left.pop()
            key = hashlib.sha256(b"seed-%d" % i).hexdigest()[:32]
            sim("POST", "/api/v4/projects/1/merge_requests/1/notes",
                {"body": "Seeded reply %d.\n\n<!-- patchbridge:pb1-%s.0 -->"
                 % (i, key)}, timeout=120)

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    # The simulator never gives two events the same millisecond: a burst
    # of notes runs its clock ahead of the host's, and the notes' times
    # would be late by that much.  Measure once the host's caught up.
    t = time.monotonic()
    while time.monotonic() - t < 120:
        ahead = epoch(sim("GET", "/_sim/time")["now"]) - time.time()
        if ahead < 0.01:
            break
        time.sleep(min(ahead, 1.0))
    else:
        raise Fail("the simulator's clock stays ahead of the host's")


def send_all(bed, patch, rate, n, senders, tag):
    """Send n replies to patch at rate/s, open loop.  Returns
    {message_id: time of the 250}, the refused count and the rate the
    senders achieved."""
    port = int(bed.env["PORT"])
    lock = threading.Lock()
    accepted = {}
    refused = [0]
    nxt = [0]
    t0 = time.time() + 0.5

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= n:
                return
            raw, mid = bedlib.reply(patch, FROM,
                                    "%s reply %d: the loop needs a bound."
                                    "\n" % (tag, i))
            delay = t0 + i / rate - time.time()
            if delay > 0:
                time.sleep(delay)
            try:
                with smtplib.SMTP("127.0.0.1", port, timeout=120) as s:
                    s.sendmail(SENDER, [bedlib.LIST], raw.encode())
                    t = time.time()
                with lock:
                    accepted[mid] = t
            except (smtplib.SMTPException, OSError) as e:
                with lock:
                    refused[0] += 1
                say("reply %d not accepted: %s" % (i, e))

    threads = [threading.Thread(target=worker) for _ in range(senders)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    times = sorted(accepted.values())
    achieved = ((len(times) - 1) / (times[-1] - times[0])
                if len(times) > 1 and times[-1] > times[0] else float("nan"))
    return accepted, refused[0], achieved


def spool_busy(bed):
    """Records the daemon has not finished: in new/ or cur/."""
    n = 0
    for sub in ("new", "cur"):
        d = os.path.join(bed.work, "spool", sub)
        if os.path.isdir(d):
            n += sum(1 for x in os.listdir(d) if not x.startswith("."))
    return n


def set_watch(bed, value):
    with open(bed.cfg) as f:
        text = f.read()
    text = re.sub(r"(?m)^watch = .*\n", "", text)
    text = text.replace("[spool]\n", "[spool]\nwatch = %s\n" % value)
    with open(bed.cfg, "w") as f:
        f.write(text)


def settle(path, timeout=300):
    """Wait until the daemon has read the seeded notes once."""
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        with open(path, errors="replace") as f:
            if "forge comments: read in" in f.read():
                return
        time.sleep(0.5)
    say("the daemon did not log its reading of the seeded notes in "
        "%d s; measuring anyway" % timeout)


def debug_log(bed):
    """The daemon logs at debug level, one JSON object a line (each with
    its time): where a slow reply waited can be read there."""
    with open(bed.cfg) as f:
        text = f.read()
    text = re.sub(r"(?m)^(level|format) = .*\n", "", text)
    text = text.replace("[log]\n", "[log]\nlevel = debug\nformat = json\n")
    with open(bed.cfg, "w") as f:
        f.write(text)


def wait_log(path, what, timeout):
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        with open(path, errors="replace") as f:
            if what in f.read():
                return
        time.sleep(0.1)
    raise Fail("%r not in %s after %d s" % (what, path, timeout))


def run(args):
    bed = inbound_e2e.Bed(args, "latency")
    rows = []
    try:
        patches, _ = inbound_e2e.start(bed)
        seed_notes(args.seed_notes)
        if args.debug_log:
            debug_log(bed)
        for mode in args.modes:
            set_watch(bed, "yes" if mode == "watch" else "no")
            bed.pb("check-config")
            logname = "daemon-%s.log" % mode
            daemon = bed.spawn([bed.exe("bridge", "patchbridge"), "-c",
                                bed.cfg, "run", "--foreground"], logname)
            wait_log(os.path.join(bed.work, logname),
                     '"msg":"started' if args.debug_log else
                     "notice: started", 60)
            time.sleep(1)
            if args.seed_notes and mode == args.modes[0]:
                # the daemon's first reading of the seeded notes (logged
                # as it takes more than a second) is not part of the
                # measure: a daemon that has kept up with the MR is
                settle(os.path.join(bed.work, logname))
            for rate in args.rates:
                n = max(1, int(round(rate * args.duration)))
                tag = "LAT-%s-%g" % (mode, rate)
                say("%s: %d replies at %g/s" % (mode, n, rate))
                accepted, refused, achieved = send_all(
                    bed, patches[1], rate, n, args.senders, tag)
                check(refused == 0, "%d replies were refused" % refused)
                t = time.monotonic()
                while spool_busy(bed) and \
                        time.monotonic() - t < args.drain:
                    check(daemon.poll() is None, "the daemon exited")
                    time.sleep(0.5)
                left = spool_busy(bed)
                created = {}
                for note in all_notes():
                    m = MARKER.search(note.get("body") or "")
                    if m:
                        created[m.group(1)] = epoch(note["created_at"])
                lat = sorted((created[marker_key(mid)] - t250) * 1000
                             for mid, t250 in accepted.items()
                             if marker_key(mid) in created)
                # notes per second from the first 250 to the last note
                ends = [created[marker_key(m)] for m in accepted
                        if marker_key(m) in created]
                span = (max(ends) - min(accepted.values())) if ends else 0
                drained = len(ends) / span if span > 0 else float("nan")
                first = min(accepted.values()) if accepted else 0
                for mid, t250 in sorted(
                        accepted.items(),
                        key=lambda a: created.get(marker_key(a[0]), 1e20)
                        - a[1])[-args.worst:] if args.worst else []:
                    say("slow: %s sent at +%.2f s (%s), note after %.0f ms"
                        % (mid, t250 - first, time.strftime(
                            "%H:%M:%S", time.gmtime(t250)),
                           (created.get(marker_key(mid), float("nan"))
                            - t250) * 1000))
                rows.append((mode, rate, n, len(accepted), achieved,
                             len(lat), left, lat, drained))
                say("%s %g/s: %d notes of %d, p50 %.0f ms, p99 %.0f ms, "
                    "max %.0f ms%s" %
                    (mode, rate, len(lat), len(accepted),
                     percentile(lat, 50), percentile(lat, 99),
                     lat[-1] if lat else float("nan"),
                     ", %d records left in the spool" % left if left
                     else ""))
            daemon.terminate()
            daemon.wait(timeout=60)
    finally:
        bed.stop()
    print()
    print("reply-to-forge latency: Postfix's 250 to the note's created_at, "
          "%g s per rate, %d senders" % (args.duration, args.senders))
    print("CPUs: %d, load average: %s" %
          (os.cpu_count(), " ".join(open("/proc/loadavg").read().split()[:3])))
    fmt = "%-38s %6s %6s %8s %10s %7s %8s %8s %8s %8s"
    print(fmt % ("daemon", "rate/s", "sent", "accepted", "achieved/s",
                 "notes", "notes/s", "p50 ms", "p99 ms", "max ms"))
    names = {"poll": "spool looked at every 5 s (watch = no)",
             "watch": "spool watched (inotify)"}
    for mode, rate, n, acc, achieved, got, left, lat, drained in rows:
        print(fmt % (names[mode], "%g" % rate, n, acc, "%.1f" % achieved,
                     "%d%s" % (got, "*" if got < acc else ""),
                     "%.1f" % drained,
                     "%.0f" % percentile(lat, 50),
                     "%.0f" % percentile(lat, 99),
                     "%.0f" % (lat[-1] if lat else float("nan"))))
    print("achieved/s: the senders' rate of 250s; notes/s: notes on the "
          "forge per second from the first 250 to the last note - below "
          "the rate, the pipeline is saturated and the latency grows with "
          "the duration")
    if any(r[5] < r[3] for r in rows):
        print("* not every accepted reply's note was on the forge at the "
              "end of the %d s drain (the rate outran the pipeline)"
              % args.drain)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the build directory")
    ap.add_argument("--work", required=True)
    ap.add_argument("--duration", type=float, default=60.0,
                    help="seconds of sending per rate (default 60)")
    ap.add_argument("--rates", default="1,20,100",
                    help="replies per second, comma-separated")
    ap.add_argument("--modes", default="poll,watch")
    ap.add_argument("--drain", type=float, default=180.0,
                    help="seconds to wait for the spool to empty")
    ap.add_argument("--senders", type=int, default=32,
                    help="SMTP sender threads")
    ap.add_argument("--seed-notes", type=int, default=0,
                    help="notes put on the MR before the first run (an MR "
                    "with a long conversation)")
    ap.add_argument("--worst", type=int, default=0,
                    help="list the N slowest replies of each run")
    ap.add_argument("--debug-log", action="store_true",
                    help="the daemon logs at debug level in JSON (times)")
    args = ap.parse_args()
    args.rates = [float(r) for r in args.rates.split(",")]
    args.modes = args.modes.split(",")
    check(all(m in ("poll", "watch") for m in args.modes),
          "--modes: poll and/or watch")
    rc = bedlib.skip_milters(args.bin, "latency_bench")
    if rc is not None:
        return rc
    try:
        return run(args)
    except (Fail, subprocess.TimeoutExpired) as e:
        say("FAIL: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
