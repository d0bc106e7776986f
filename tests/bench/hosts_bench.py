#!/usr/bin/python3
"""hosts_bench.py - list replies applied to the forge: one host on
SQLite, one host on PostgreSQL, two hosts sharing PostgreSQL.

usage: tests/forgesim/run-with-sim.sh /usr/bin/python3 \\
           tests/bench/hosts_bench.py --bin BUILD [--work DIR] [-n N]
           [-m M] [--rate R] [--only sqlite-1,pg-1,pg-2]

As root (private Postfix).  Each configuration is set up afresh on the
test bed of tests/multihost/hostbed.py: per host a private Postfix with
the DKIM stand-in and patchbridge-milter, a spool and `patchbridge run
--foreground`; PostgreSQL (tests/pg/pgbed) on loopback over TCP; the
GitLab simulator as the forge; a 3-patch series mailed first.  Then:

  burst     the daemons stopped, N replies (one comment each, to the
            series' patches) are sent over SMTP to the hosts in turn and
            spooled; the daemons start, and the clock runs until the
            last is applied (the forge has its note).  applied/s = N /
            that time: the daemons' capacity, Postfix not included.
  latency   the daemons running, M replies at R per second; for each,
            the time from the 250 of its SMTP DATA to the creation time
            of its note on the forge.  p50, p99 and max.

The table also gives the forge requests per applied reply (the
simulator's request log) and the PostgreSQL serialization retries seen
in the daemons' logs.  No timing is asserted; the run fails only when a
step fails.  Figures are of this machine, with the simulator (Python,
single process) as the forge: see docs/SCALING.md.
"""

import argparse
import datetime
import os
import re
import smtplib
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "multihost"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import bedlib  # noqa: E402
import hostbed  # noqa: E402
import inbound_e2e  # noqa: E402
from bedlib import Fail, check, say, sim  # noqa: E402

CONFIGS = {
    # name: (hosts, backend)
    "sqlite-1": (1, "sqlite"),
    "pg-1": (1, "postgresql"),
    "pg-2": (2, "postgresql"),
}


def smtp_send(host, raw, sender):
    """raw to host's Postfix in one SMTP session; the time of the 250."""
    data = re.sub(r"\r?\n", "\r\n", raw).encode()
    with smtplib.SMTP(host.addr, host.port, timeout=30,
                      source_address=(host.addr, 0)) as s:
        s.ehlo("bench.example")
        code, msg = s.mail(sender)
        check(code == 250, "MAIL: %d %s" % (code, msg))
        code, msg = s.rcpt(bedlib.LIST)
        check(code in (250, 251), "RCPT: %d %s" % (code, msg))
        code, msg = s.data(data)
        t = time.time()
        check(code == 250, "DATA: %d %s" % (code, msg))
    return t


def iso_time(s):
    return datetime.datetime.strptime(
        s.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def notes_by_token(prefix):
    """token -> creation time of its note, for notes carrying prefix."""
    out = {}
    for d in inbound_e2e.the_mr()["discussions"]:
        for n in d["notes"]:
            m = re.search(r"(%s\d+)" % re.escape(prefix), n["body"])
            if m and m.group(1) not in out:
                out[m.group(1)] = iso_time(n["created_at"])
    return out


class Setup:
    """One configuration: its hosts, its PostgreSQL, its series."""

    def __init__(self, args, name):
        self.name = name
        nhosts, self.backend = CONFIGS[name]
        self.work = os.path.join(os.path.abspath(args.work), name)
        subprocess.run(["rm", "-rf", self.work])
        os.makedirs(self.work)
        self.bin = os.path.abspath(args.bin)
        pb = os.path.join(self.bin, "bridge", "patchbridge")
        self.hosts = [hostbed.Host(self.work, n, pb)
                      for n in hostbed.HOSTS[:nhosts]]
        self.pg = hostbed.Postgres(self.work) \
            if self.backend == "postgresql" else None
        self.daemons = []

    def exe(self, *parts):
        return os.path.join(self.bin, *parts)

    def start(self):
        sim("POST", "/_sim/reset", {"seed": inbound_e2e.SEED})
        if self.pg:
            self.pg.start()
        for h in self.hosts:
            sockdir = h.sockets()
            vsock = os.path.join(sockdir, "verifier.sock")
            msock = os.path.join(sockdir, "patchbridge.sock")
            h.env["PORT"] = str(h.port_hint)
            bedlib.write_config(h, msock, inbound_e2e.OWNERS,
                                inbound="retry_base = 1s\n"
                                "retry_max = 2s\n", forge_retries=2)
            if self.pg:
                with open(h.cfg, encoding="utf-8") as f:
                    conf = f.read()
                # (the lease: the two-host bed's, which check-config
                # accepts with these [forge] settings)
                lines = hostbed.state_lines(h, self.pg,
                                            hostbed.PairMixin.lease)
                h.write("patchbridge.conf", hostbed.with_state(
                    conf, lines, hostbed.milter_lines(h)))
            h.pb("check-config")
            h.start_verifier(self.exe("tests", "postfix", "test_milter"),
                             vsock)
            h.start_milter(self.exe("milter", "patchbridge-milter"), msock)
            h.start_postfix("--port", str(h.port_hint), "--milter",
                            "unix:%s, unix:%s" % (vsock, msock))
        sim("POST", "/_sim/projects/1/commits",
            {"branch": "step", "start": "main",
             "commits": inbound_e2e.SERIES})
        sim("POST", "/_sim/projects/1/merge_requests",
            {"source_branch": "step", "target_branch": "main",
             "title": "counter: count by a step",
             "description": "Callers want to count by more than one.",
             "author": "alice", "reviewers": ["mary", "rob"]})
        a = self.hosts[0]
        a.pb("send", "group/project!1")
        a.wait_mail(4)
        a.settle()
        self.patches = [m for m in a.archive() if "PATCH" in m["Subject"]]
        check(len(self.patches) == 4, "the series was not mailed")

    def start_daemons(self):
        self.daemons = [h.daemon() for h in self.hosts]

    def stop_daemons(self):
        for d in self.daemons:
            d.terminate()
        for d in self.daemons:
            d.wait(timeout=60)
        self.daemons = []

    def stop(self):
        for h in self.hosts:
            h.stop()
        if self.pg:
            self.pg.stop()

    def reply(self, token):
        parent = self.patches[hash(token) % len(self.patches)]
        raw, _ = bedlib.reply(parent, inbound_e2e.ROB, "%s a comment for "
                              "the benchmark.\n" % token)
        return raw

    def spooled(self):
        n = 0
        for h in self.hosts:
            d = os.path.join(h.work, "spool", "new")
            n += len(os.listdir(d)) if os.path.isdir(d) else 0
        return n

    def retries(self):
        n = 0
        for h in self.hosts:
            path = os.path.join(h.work, "daemon.log")
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    n += len(re.findall(r"could not serialize|deadlock",
                                        f.read()))
        return n


def wait_applied(prefix, tokens, timeout):
    t = time.monotonic()
    while True:
        got = notes_by_token(prefix)
        if all(tok in got for tok in tokens):
            return got
        check(time.monotonic() - t < timeout,
              "%d of %d replies applied after %d s" %
              (sum(1 for tok in tokens if tok in got), len(tokens),
               timeout))
        time.sleep(0.2)


def api_requests():
    return sum(1 for r in sim("GET", "/_sim/requests")
               if r["path"].startswith("/api/"))


def bench(args, name):
    s = Setup(args, name)
    row = {"config": name}
    try:
        s.start()
        # burst: spooled first, then applied by the daemons
        tokens = ["BURST-%d" % i for i in range(args.n)]
        for i, tok in enumerate(tokens):
            smtp_send(s.hosts[i % len(s.hosts)], s.reply(tok),
                      "rob@review.example")
        t = time.monotonic()
        while s.spooled() < args.n:
            check(time.monotonic() - t < 60, "the replies were not "
                  "spooled: %d of %d" % (s.spooled(), args.n))
            time.sleep(0.1)
        sim("DELETE", "/_sim/requests")
        t0 = time.monotonic()
        s.start_daemons()
        # the last note's creation, not the moment we saw it
        got = wait_applied("BURST-", tokens, 600)
        wall0 = time.time() - (time.monotonic() - t0)
        elapsed = max(got.values()) - wall0
        row["burst_s"] = elapsed
        row["rate"] = args.n / elapsed
        row["req_per_reply"] = api_requests() / args.n
        # latency: a steady stream
        tokens = ["LAT-%d" % i for i in range(args.m)]
        accepted = {}
        t = time.monotonic()
        for i, tok in enumerate(tokens):
            due = t + i / args.rate
            time.sleep(max(0.0, due - time.monotonic()))
            accepted[tok] = smtp_send(s.hosts[i % len(s.hosts)],
                                      s.reply(tok), "rob@review.example")
        got = wait_applied("LAT-", tokens, 120)
        lat = sorted(got[tok] - accepted[tok] for tok in tokens)
        row["p50"] = statistics.median(lat)
        row["p99"] = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        row["max"] = lat[-1]
        row["retries"] = s.retries()
        s.stop_daemons()
    finally:
        s.stop()
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the build directory")
    ap.add_argument("--work", default="/tmp/pb-hosts-bench")
    ap.add_argument("-n", type=int, default=200,
                    help="replies in the burst (default 200)")
    ap.add_argument("-m", type=int, default=60,
                    help="replies in the latency run (default 60)")
    ap.add_argument("--rate", type=float, default=2.0,
                    help="replies per second in the latency run")
    ap.add_argument("--only", default=",".join(CONFIGS))
    args = ap.parse_args()
    rc = hostbed.skip_status()
    if rc is not None:
        return rc
    def seconds(t):
        return "%.1f ms" % (t * 1000) if t < 1 else "%.2f s" % t

    rows = []
    for name in args.only.split(","):
        check(name in CONFIGS, "unknown configuration %s" % name)
        say("configuration %s" % name)
        rows.append(bench(args, name))
        say("%s: %r" % (name, rows[-1]))
    print()
    print("replies applied to the forge (simulator); burst of %d, latency "
          "over %d at %.1f/s" % (args.n, args.m, args.rate))
    print("| configuration | burst: applied/s | burst time | forge "
          "requests/reply | latency p50 | p99 | max | serialization "
          "retries |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        hosts, backend = CONFIGS[r["config"]]
        print("| %d host%s, %s | %.1f | %.1f s | %.1f | %s | %s | %s | %d |"
              % (hosts, "s" if hosts > 1 else "", backend, r["rate"],
                 r["burst_s"], r["req_per_reply"], seconds(r["p50"]),
                 seconds(r["p99"]), seconds(r["max"]), r["retries"]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Fail as e:
        print("hosts_bench: FAIL: %s" % e)
        sys.exit(1)
