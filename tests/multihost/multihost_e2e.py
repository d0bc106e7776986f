#!/usr/bin/python3
"""End-to-end tests on two list hosts that share one bridge state on
PostgreSQL (hostbed.py): two private Postfix instances on their own
loopback addresses (127.0.0.2, 127.0.0.3), each with its own DKIM
stand-in, patchbridge-milter, spool and `patchbridge run`, one
PostgreSQL server started here on 127.0.0.1, the GitLab simulator as the
forge.

usage: multihost_e2e.py SCENARIO --bin BUILD_DIR --work DIR

Run under tests/forgesim/run-with-sim.sh, which exports PB_FORGESIM_URL.
Scenarios:

  inbound-NAME   tests/e2e/inbound_e2e.py's scenario NAME, unchanged, on
  outbound-NAME  the two hosts (outbound_e2e.py's for outbound-NAME,
  forgemail-NAME forgemail_e2e.py's for forgemail-NAME):
                 the replies go to the hosts in turn, `run --once` runs on
                 both (a host that exited 75 runs once more when the
                 other finished: it may have waited on that host's
                 claim), the MTA hooks of the outbound stories count the
                 list's deliveries across both hosts, the list archive
                 is what both delivered (hostbed's Pair), so every check
                 of the single-host story must hold with the work split
                 between two hosts.
  same-reply     one reply delivered to both hosts (a sender's MTA that
                 retried on the second MX): a comment with an inline
                 review and a maintainer's Acked-by.  Both hosts journal
                 it and apply it at once - first `run --once` on both at
                 the same moment, then with both daemons running - and
                 the forge sees one set of actions: one discussion per
                 comment, one approval, one POST of each; the journal one
                 row, applied; the other copy filed as a duplicate at
                 once (when the two hosts journal it in the same instant,
                 one meets a serialization failure and runs its
                 transaction again: a normal race, which no host logs
                 as a warning).
  same-series    a series posted to the list reaching both hosts: every
                 mail to both at once, then half of the mails to each
                 with both daemons running; each time one branch, one
                 merge request, opened by one host, the thread map its
                 revision 1.
  takeover       host A's daemon journals a reply while the forge is down
                 and its attempt fails; then A hangs (SIGSTOP); once the
                 reply has waited a lease, host B applies it from the
                 journal's copy of the spool record; when A goes on, its
                 daemon's next pass files its own record (done/), which B
                 cannot reach, and posts nothing.

Exit status: 0 pass, 1 fail, 77 skipped (not root, no Postfix, no
PostgreSQL server, no libmilter build).
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import bedlib  # noqa: E402
import hostbed  # noqa: E402
import forgemail_e2e  # noqa: E402
import inbound_e2e  # noqa: E402
import outbound_e2e  # noqa: E402
from bedlib import Fail, check, say, sim  # noqa: E402
from inbound_e2e import MARY, ROB, approvers, notes_with  # noqa: E402


def posts(path_re):
    return [r for r in sim("GET", "/_sim/requests")
            if r["method"] in ("POST", "PUT") and re.search(path_re,
                                                             r["path"])]


def send_to_both(bed, raw, sender):
    """raw to both hosts' SMTP at the same moment."""
    errors = []

    def one(h):
        try:
            h.send(raw, sender)
        except Fail as e:
            errors.append(str(e))

    threads = [threading.Thread(target=one, args=(h,)) for h in bed.hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, "; ".join(errors))


def journal(bed, mid):
    return bed.pg.query("SELECT convert_from(state, 'UTF8'), "
                        "convert_from(spooled_by, 'UTF8'), "
                        "convert_from(claimed_by, 'UTF8') FROM inbound "
                        "WHERE message_id = convert_to('%s', 'UTF8')" %
                        mid.replace("'", "''"))


def check_once(bed, mid, texts, what):
    mr = inbound_e2e.the_mr()
    for t in texts:
        got = notes_with(mr, t)
        check(len(got) == 1, "%s: %d notes carry %r" % (what, len(got), t))
    rows = journal(bed, mid)
    check(len(rows) == 1 and rows[0][0] == "applied",
          "%s: the journal has %s" % (what, rows))
    say("%s: applied once, journaled by %s, applied by %s" %
        (what, rows[0][1], rows[0][2]))
    return mr


def copies_filed(bed, mid):
    """The hosts whose daemon filed its copy of mid as a duplicate."""
    return [h.name for h in bed.hosts
            if re.search(r"is a copy of <%s>" % re.escape(mid),
                         h.log_text_all())]


def scenario_same_reply(bed):
    patches, made = inbound_e2e.start(bed)
    head = made["head"] if "head" in made else made["shas"][-1]
    sim("DELETE", "/_sim/requests")

    say("round 1: one reply (inline review + Acked-by) to both hosts; "
        "`run --once` on both at the same moment")
    inline, expect = inbound_e2e.inline_review(patches[1])
    raw, mid = bedlib.reply(patches[1], MARY, inline + "\nAcked-by: " +
                            MARY + "\n")
    send_to_both(bed, raw, "mary@kernel.example")
    bed.wait_mail(6)
    bed.settle()
    for h in bed.hosts:
        check(any(m["Message-ID"].strip("<> ") == mid for m in h.archive()),
              "host %s did not accept the reply" % h.name)
    procs = [subprocess.Popen([bed.patchbridge, "-c", h.cfg, "run",
                               "--once"], stdout=subprocess.DEVNULL,
                              stderr=open(h.log, "a"))
             for h in bed.hosts]
    rcs = [p.wait(timeout=120) for p in procs]
    check(rcs == [0, 0], "run --once on the two hosts: %s" % rcs)
    # (A host whose journaling met the other's in the same instant - a
    # serialization failure - ran it again and filed its copy.)  One more
    # pass changes nothing.
    bed.pb("run", "--once")
    mr = check_once(bed, mid, ["Comments inline."] +
                    [t for t, _ in expect], "round 1")
    inbound_e2e.check_diffnotes(mr, expect, head)
    check(approvers(mr) == ["mary"], "approvals: %s" % approvers(mr))
    check(len(posts(r"/approve$")) == 1, "POST approve %d times" %
          len(posts(r"/approve$")))
    check(len(posts(r"/discussions$")) == len(expect) + 1,
          "%d discussions POSTed, want %d" %
          (len(posts(r"/discussions$")), len(expect) + 1))
    filed = copies_filed(bed, mid)
    check(len(filed) == 1, "copies filed as duplicates on %s" % filed)
    say("round 1 ok: one discussion per comment, one approval; the copy "
        "on %s filed as a duplicate" % filed[0])

    say("round 2: both daemons running; Rob's comment to both hosts")
    sim("DELETE", "/_sim/requests")
    daemons = bed.daemon()
    raw, mid2 = bedlib.reply(patches[3], ROB, "SAME-REPLY-2: the manual "
                             "reads well.\n\nReviewed-by: " + ROB + "\n")
    send_to_both(bed, raw, "rob@review.example")
    t = time.monotonic()
    while True:
        rows = journal(bed, mid2)
        if rows and rows[0][0] == "applied" and \
                len(copies_filed(bed, mid2)) >= 1:
            break
        check(daemons.poll() is None, "a daemon exited")
        check(time.monotonic() - t < 60, "not applied after 60 s: %s" %
              rows)
        time.sleep(0.5)
    time.sleep(6)  # one more pass of each daemon: nothing twice
    check_once(bed, mid2, ["SAME-REPLY-2"], "round 2")
    check(len(posts(r"/discussions$")) == 1,
          "%d discussions POSTed" % len(posts(r"/discussions$")))
    check(copies_filed(bed, mid2) and len(copies_filed(bed, mid2)) == 1,
          "copies filed: %s" % copies_filed(bed, mid2))
    status = bed.pb("status")
    m = re.search(r"inbound replies: (\d+) applied", status)
    check(m and m.group(1) == "2", "status:\n" + status)
    daemons.terminate()
    check(daemons.wait(timeout=30) == 0, "a daemon did not stop cleanly")
    say("round 2 ok: one discussion, the other copy a duplicate")
    # The hosts' race for one reply is normal: no warning says so.
    for h in bed.hosts:
        noisy = [line for line in h.log_text_all().splitlines()
                 if "warning:" in line and
                 re.search(r"serializ|SQLSTATE 40001|SQLSTATE 40P01|"
                           r"deadlock", line)]
        check(not noisy, "host %s warns of a normal race: %s" %
              (h.name, noisy[:3]))


def submissions(bed):
    """The series in the shared state: (series, state, iid) rows."""
    return bed.pg.query("SELECT convert_from(series_id, 'UTF8'), "
                        "convert_from(state, 'UTF8'), iid FROM submissions "
                        "ORDER BY created, series_id")


def from_email():
    return [m for m in sim("GET", "/api/v4/projects/1/merge_requests?"
                           "state=all&per_page=100")
            if "from-email" in m["labels"]]


def series_mails(bed, name, files):
    """A topic by Ann (files {path: text}) made with real git on the
    forge's main, as git format-patch makes what git send-email sends: a
    cover letter and a patch per file, threaded.  Their raw texts."""
    url = os.environ["PB_FORGESIM_URL"] + "/group/project.git"
    gitcfg = bed.write("gitconfig", "")
    env = dict(os.environ, GIT_CONFIG_GLOBAL=gitcfg,
               GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0",
               GIT_AUTHOR_NAME="Ann Sender",
               GIT_AUTHOR_EMAIL="ann@example.com",
               GIT_COMMITTER_NAME="Ann Sender",
               GIT_COMMITTER_EMAIL="ann@example.com")
    work = os.path.join(bed.work, name)

    def git(*args):
        return subprocess.run(["git"] + list(args), env=env, check=True,
                              capture_output=True, text=True).stdout

    git("clone", "-q", url.replace("://", "://oauth2:bridge-token@"), work)
    base = git("-C", work, "rev-parse", "HEAD").strip()
    for path, body in sorted(files.items()):
        with open(os.path.join(work, path), "w") as f:
            f.write(body)
        git("-C", work, "add", "-A")
        git("-C", work, "commit", "-q", "-m", "%s: add %s" % (name, path))
    out = os.path.join(bed.work, name + ".mails")
    git("-C", work, "format-patch", "-q", "--cover-letter", "--thread",
        "--base=" + base, "-o", out, base + "..HEAD")
    raws = []
    for n in sorted(os.listdir(out)):
        with open(os.path.join(out, n)) as f:
            text = f.read()
        if text.startswith("From "):  # git send-email sends no mbox line
            text = text.split("\n", 1)[1]
        raws.append(text.replace("*** SUBJECT HERE ***", name + ": a topic")
                    .replace("*** BLURB HERE ***", "Sent to both hosts."))
    return raws


def one_mr_of(bed, name, before):
    """The one merge request and the one branch of topic name (its
    branch's slug), with its mails as revision 1 of the thread map."""
    mrs = [m for m in from_email() if m["iid"] not in before]
    check(len(mrs) == 1, "%s: %d merge requests from email" %
          (name, len(mrs)))
    heads = subprocess.run(
        ["git", "ls-remote", os.environ["PB_FORGESIM_URL"] +
         "/group/project.git", "refs/heads/email/ann/%s-*" % name],
        capture_output=True, text=True, check=True,
        env=dict(os.environ, GIT_CONFIG_NOSYSTEM="1",
                 GIT_TERMINAL_PROMPT="0")).stdout.split()
    branches = [r[len("refs/heads/"):] for r in heads[1::2]]
    check(branches == [mrs[0]["source_branch"]], "%s: branches %s" %
          (name, branches))
    rows = bed.pg.query("SELECT patch, revision FROM thread_map WHERE "
                        "iid = %d ORDER BY patch" % mrs[0]["iid"])
    check(rows == [[str(k), "1"] for k in range(4)], "%s: thread map %s" %
          (name, rows))
    opened = [h.name for h in bed.hosts for line in
              h.log_text_all().splitlines()
              if re.search(r"!%d: opened from the series" % mrs[0]["iid"],
                           line)]
    check(len(opened) == 1, "%s: opened by %s" % (name, opened))
    say("%s: one merge request, !%d, from %s, opened by %s" %
        (name, mrs[0]["iid"], branches[0], opened[0]))
    return mrs[0]


def scenario_same_series(bed):
    """One series reaching both list hosts becomes one merge request.
    Round 1: every mail to both hosts at the same moment (a sender's MTA
    that tried the second MX too), then `run --once` on both at the same
    moment.  Round 2: the cover letter and patch 1 to host A, patches 2
    and 3 to host B, both daemons running: the series is whole in the
    shared state when its last mail comes to either host, and said so
    once (store_submission.h).  Each time: one branch, one merge
    request, opened by one host; the thread map holds the mails as its
    revision 1."""
    sim("POST", "/_sim/reset", {"seed": inbound_e2e.SEED})
    sockdir = bed.sockets()
    vsock = os.path.join(sockdir, "verifier.sock")
    msock = os.path.join(sockdir, "patchbridge.sock")
    bed.env["PORT"] = str(bedlib.free_port())
    bedlib.write_config(bed, msock, inbound_e2e.OWNERS)
    with open(bed.cfg, encoding="utf-8") as f:
        conf = f.read()
    bed.write("patchbridge.conf", conf + "email_submissions = anyone\n"
              "email_target_branch = main\n")
    bed.pb("check-config")
    bed.start_verifier(bed.exe("tests", "postfix", "test_milter"), vsock)
    bed.start_milter(bed.exe("milter", "patchbridge-milter"), msock)
    bed.start_postfix("--port", bed.env["PORT"], "--milter",
                      "unix:%s, unix:%s" % (vsock, msock))
    a, b = bed.hosts

    say("round 1: a cover letter and 3 patches, each to both hosts at "
        "once; `run --once` on both at once")
    raws = series_mails(bed, "twice", {"t1.txt": "1\n", "t2.txt": "2\n",
                                       "t3.txt": "3\n"})
    for raw in raws:
        send_to_both(bed, raw, "ann@example.com")
    bed.wait_mail(8)
    bed.settle()
    procs = [subprocess.Popen([bed.patchbridge, "-c", h.cfg, "run",
                               "--once"], stdout=subprocess.DEVNULL,
                              stderr=open(h.log, "a"))
             for h in bed.hosts]
    rcs = [p.wait(timeout=120) for p in procs]
    check(all(rc in (0, 75) for rc in rcs), "run --once: %s" % rcs)
    bed.pb("run", "--once", ok=(0, 75))
    one_mr_of(bed, "twice", set())
    rows = submissions(bed)
    check(len(rows) == 1 and rows[0][1] == "opened", "series: %s" % rows)

    say("round 2: the cover letter and 1/3 to host A, 2/3 and 3/3 to "
        "host B; both daemons running")
    before = {m["iid"] for m in from_email()}
    raws = series_mails(bed, "halves", {"h1.txt": "1\n", "h2.txt": "2\n",
                                        "h3.txt": "3\n"})
    daemons = bed.daemon()
    for k, raw in enumerate(raws):
        (a if k < 2 else b).send(raw, "ann@example.com")
    bed.wait_mail(12)
    t = time.monotonic()
    while True:
        rows = submissions(bed)
        if len(rows) == 2 and rows[1][1] == "opened":
            break
        check(daemons.poll() is None, "a daemon exited")
        check(time.monotonic() - t < 120, "the second series is not "
              "opened after 120 s: %s" % rows)
        time.sleep(0.5)
    # every mail of the series journaled and taken, on its own host
    t = time.monotonic()
    while True:
        states = bed.pg.query("SELECT convert_from(state, 'UTF8') FROM "
                              "inbound WHERE classification = "
                              "convert_to('submission', 'UTF8')")
        if len(states) == 8 and all(s[0] in ("applied", "ignored")
                                    for s in states):
            break
        check(time.monotonic() - t < 60, "journal: %s" % states)
        time.sleep(0.5)
    mr = one_mr_of(bed, "halves", before)
    daemons.terminate()
    check(daemons.wait(timeout=30) == 0, "a daemon did not stop cleanly")
    check(len(from_email()) == 2 and mr["iid"] in
          {m["iid"] for m in from_email()}, "merge requests: %s" %
          [m["iid"] for m in from_email()])


class TakeoverPair(hostbed.pair_class(inbound_e2e.Bed)):
    lease = "3s"

    def write(self, name, text, mode=0o644):
        if name == "patchbridge.conf":
            text = hostbed.short_timeouts(text, 3)
        return super().write(name, text, mode)


def scenario_takeover(bed):
    patches, _ = inbound_e2e.start(bed, "retry_base = 1s\nretry_max = "
                                   "1s\n", forge_retries=0)
    a, b = bed.hosts
    say("host A's daemon journals a reply while the forge is down; its "
        "attempt fails")
    raw, mid = bedlib.reply(patches[2], ROB, "TAKEOVER-TEXT: taken over "
                            "by the other host.\n")
    a.send(raw, "rob@review.example")
    bed.wait_mail(5)
    bed.settle()
    sim("POST", "/_sim/faults", {"kind": "error", "status": 503,
                                 "path": "^/api/v4/", "count": 1000000})
    daemon = a.daemon()
    t = time.monotonic()
    while not (journal(bed, mid) and journal(bed, mid)[0][0] == "failed"):
        check(time.monotonic() - t < 30, "A did not journal the reply: %s"
              % journal(bed, mid))
        time.sleep(0.2)
    say("A hangs (SIGSTOP); the forge is back")
    os.killpg(daemon.pid, signal.SIGSTOP)
    sim("DELETE", "/_sim/faults")
    check(len(os.listdir(os.path.join(a.work, "spool", "cur"))) == 1,
          "A's record is not in cur/")
    time.sleep(1 + 3 + 1.5)  # the retry's due time, the lease, a second
    t = time.monotonic()
    while True:
        out = b.pb_run(["run", "--once"])
        check(out.returncode in (0, 75), "B's run --once: %d" %
              out.returncode)
        if journal(bed, mid)[0][0] == "applied":
            break
        check(time.monotonic() - t < 20, "B did not take the reply over: "
              "%s" % journal(bed, mid))
        time.sleep(1)
    rows = check_once(bed, mid, ["TAKEOVER-TEXT"], "taken over")
    rows = journal(bed, mid)
    check(rows[0][2] == b.name, "applied by %s, not B" % rows[0][2])
    say("A goes on (SIGCONT): its next pass files the record B applied")
    os.killpg(daemon.pid, signal.SIGCONT)
    t = time.monotonic()
    while os.listdir(os.path.join(a.work, "spool", "cur")):
        check(daemon.poll() is None, "A's daemon exited")
        check(time.monotonic() - t < 20, "A's record is still in cur/ "
              "after 20 s")
        time.sleep(0.5)
    check(len(os.listdir(os.path.join(a.work, "spool", "done"))) == 1,
          "A's record is not in done/")
    check(re.search(r"<%s> was applied by %s; \S+ filed" %
                    (re.escape(mid), re.escape(b.name)), a.log_text_all()),
          "A did not say it filed the record")
    time.sleep(6)  # one more pass of A: nothing posted again
    check_once(bed, mid, ["TAKEOVER-TEXT"], "after A's passes")
    daemon.terminate()
    check(daemon.wait(timeout=30) == 0, "A's daemon did not stop cleanly")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--bin", required=True, help="the build directory")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    args.patchbridge = os.path.join(os.path.abspath(args.bin), "bridge",
                                    "patchbridge")
    rc = hostbed.skip_status()
    if rc is not None:
        return rc
    for exe in (("milter", "patchbridge-milter"),
                ("tests", "postfix", "test_milter")):
        if not os.access(os.path.join(args.bin, *exe), os.X_OK):
            print("e2e: SKIP: %s is not built (libmilter)" % "/".join(exe))
            return 77
    kind, _, name = args.scenario.partition("-")
    work = args
    if kind == "inbound" and name in inbound_e2e.SCENARIOS:
        bed = hostbed.pair_class(inbound_e2e.Bed)(work, name)
        run = inbound_e2e.SCENARIOS[name]
    elif kind == "outbound" and name in outbound_e2e.SCENARIOS:
        sim("POST", "/_sim/reset", {"seed": outbound_e2e.SEED})
        bed = hostbed.pair_class(outbound_e2e.Bed)(work, "outbound-" + name)
        run = outbound_e2e.SCENARIOS[name]
    elif kind == "forgemail" and name in forgemail_e2e.SCENARIOS:
        # forgemail_e2e.py's stories run on outbound_e2e.py's bed, with
        # its own seed (as its main() sets them)
        outbound_e2e.SEED = forgemail_e2e.SEED
        sim("POST", "/_sim/reset", {"seed": forgemail_e2e.SEED})
        bed = hostbed.pair_class(outbound_e2e.Bed)(work, "forgemail-" + name)
        run = forgemail_e2e.SCENARIOS[name]
    elif args.scenario == "takeover":
        bed = TakeoverPair(args, "takeover")
        run = scenario_takeover
    elif args.scenario == "same-series":
        bed = hostbed.pair_class(inbound_e2e.Bed)(work, "same-series")
        run = scenario_same_series
    elif args.scenario == "same-reply":
        bed = hostbed.pair_class(inbound_e2e.Bed)(work, "same-reply")
        run = scenario_same_reply
    else:
        ap.error("unknown scenario %s" % args.scenario)
    try:
        bed.pair_init()
    except Fail as e:
        say("FAIL: %s" % e)
        bed.stop()
        return 1
    return bedlib.run_scenario(bed, run)


if __name__ == "__main__":
    sys.exit(main())
