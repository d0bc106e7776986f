#!/usr/bin/python3
"""The patchbridge demo: one merge request's story, told step by step.

usage: demo.py --bin BUILD_DIR [--work DIR] [--keep]

Run by scripts/demo.sh under tests/forgesim/run-with-sim.sh, which starts
the GitLab simulator and exports PB_FORGESIM_URL.  Everything else it
starts itself, on loopback, and stops before it exits:

  * a private Postfix (tests/postfix/pfbed) that plays the list server,
    delivering the list's mail into a Maildir "list archive";
  * tests/postfix/test_milter in front of patchbridge-milter, standing in
    for OpenDKIM/OpenDMARC: it says which senders' signatures verified;
  * patchbridge-milter, reading replies as they reach the list;
  * `patchbridge run --foreground`, the daemon, mailing revisions and
    applying the replies to the forge, woken by SIGUSR1 where a step
    waits for it (its poll interval is an hour), and serving /metrics.

The bridge attests what it mails with its own ed25519 key (`patchbridge
attest-key --generate`, published in a keyring laid out as patatt's),
and a list reader checks it with the real `patatt validate`; the cover
letter says which commit signature the forge verified.

Near its end a contributor sends a series to the list with git
send-email through that Postfix, and the forge shows it as a merge
request from email (README "Contributing by email").

The daemon's /metrics is scraped before and after the story: every
scrape must pass `promtool check metrics` and python3-prometheus-client's
parser, and the counters must have moved by exactly what the story did
(METRICS_MOVED).

Each step prints what happens in plain words.  Exit status 0 when the
story went as told, 1 when a step did not.
"""

import argparse
import html
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tests", "e2e"))
sys.path.insert(0, os.path.join(TOP, "tests", "tools"))
import bedlib  # noqa: E402
import prom_scrape  # noqa: E402
from bedlib import (LIST, Fail, bound, check, patch_body, quote,  # noqa: E402
                    reply, sim, the_mr, wait_for)

T0 = time.time()
STEP = [0]


def step(text):
    STEP[0] += 1
    print("\n== %d. %s" % (STEP[0], text), flush=True)


def say(text=""):
    for line in str(text).splitlines() or [""]:
        print("   " + line, flush=True)


# --- the forge (simulator) -------------------------------------------------

SEED = {
    "users": [
        {"username": "root", "name": "Administrator",
         "email": "root@example.com", "admin": True},
        {"username": "alice", "name": "Alice Author",
         "email": "alice@example.com", "public_email": "alice@example.com"},
        {"username": "mary", "name": "Mary Maintainer",
         "email": "mary@kernel.example", "public_email": "mary@kernel.example"},
        {"username": "rob", "name": "Rob Reviewer",
         "email": "rob@review.example", "public_email": "rob@review.example"},
        {"username": "mallory", "name": "Mallory Spoofer",
         "email": "mallory@example.net"},
        # The bridge's own account: an administrator, so that its token
        # may approve as the mapped user through Sudo.
        {"username": "patchbridge", "name": "patchbridge",
         "email": "bridge@example.org", "admin": True},
    ],
    "tokens": [{"token": "bridge-token", "user": "patchbridge",
                "scopes": ["api", "sudo"]},
               {"token": "rob-token", "user": "rob", "scopes": ["api"]}],
    "projects": [{
        "path": "group/project", "default_branch": "main",
        "members": {"alice": "developer", "mary": "maintainer",
                    "rob": "developer", "mallory": "developer",
                    "patchbridge": "developer"},
        "files": {
            "README": "counter: counts things\n",
            "src/counter.c": "#include \"counter.h\"\n\nint count(int n)\n"
                             "{\n\treturn n + 1;\n}\n",
            "src/counter.h": "int count(int n);\n",
            "docs/counter.txt": "count(n) returns n + 1.\n",
        },
    }],
}

OWNERS = """\
users:
  - &mary
    name: Mary Maintainer
    email: mary@kernel.example
    gluser: mary
  - &rob
    name: Rob Reviewer
    email: rob@review.example
    gluser: rob
subsystems:
  - subsystem: Counter library
    labels:
      name: counter
    maintainers:
      - *mary
    reviewers:
      - *rob
    paths:
      includes:
        - src/
"""

AUTHOR = {"name": "Alice Author", "email": "alice@example.com"}


def commit(subject, body, files):
    return {"message": "%s\n\n%s\n\nSigned-off-by: Alice Author "
            "<alice@example.com>\n" % (subject, body),
            "author": AUTHOR, "files": files}


V1 = [
    commit("counter: count by a step", "Let callers choose the step.",
           {"src/counter.c": "#include \"counter.h\"\n\n"
            "int count(int n, int step)\n{\n\treturn n + step;\n}\n",
            "src/counter.h": "int count(int n, int step);\n"}),
    commit("counter: refuse a negative step", "A negative step counts "
           "backwards, which no caller wants.",
           {"src/counter.c": "#include \"counter.h\"\n\n"
            "int count(int n, int step)\n{\n\tif (step < 0)\n"
            "\t\treturn n;\n\treturn n + step;\n}\n"}),
    commit("docs: describe the step", "Keep the manual in line.",
           {"docs/counter.txt": "count(n, step) returns n + step;\n"
            "a negative step leaves n as it is.\n"}),
]

V2_FIX = commit("counter: refuse a negative step",
                "A negative step counts backwards, which no caller wants.\n"
                "Return -1 so that callers notice.",
                {"src/counter.c": "#include \"counter.h\"\n\n"
                 "int count(int n, int step)\n{\n\tif (step < 0)\n"
                 "\t\treturn -1;\n\treturn n + step;\n}\n"})


# --- the daemon and its /metrics ---------------------------------------------

P = "group/project"
# What the story moves, exactly: (metric, labels, delta).  The v1 series
# is mailed by `patchbridge send`, not by the daemon; the daemon mails v2
# (a cover letter and 3 patches) and Rob's forge comment.  The milter
# sees those 9 mails of the bridge's, the 3 replies and Carol's series
# (a cover letter and 2 patches), which the daemon journals and collects
# like replies.
METRICS_MOVED = [
    # the 15 mails of the list, the pipeline's result, and Mallory's
    # notice on its way out
    ("patchbridge_milter_mails_seen_total", {}, 17),
    ("patchbridge_milter_mails_spooled_total", {}, 6),
    ("patchbridge_milter_mails_classified_total", {"kind": "reply"}, 3),
    ("patchbridge_milter_mails_classified_total", {"kind": "submission"},
     3),
    ("patchbridge_milter_mails_classified_total", {"kind": "own"}, 11),
    # the patches by their Message-ID; the forge comment, the pipeline's
    # result and the notice by their header
    ("patchbridge_milter_mails_ignored_total",
     {"reason": "own-message-id"}, 8),
    ("patchbridge_milter_mails_ignored_total",
     {"reason": "x-patchbridge-header"}, 3),
    ("patchbridge_milter_mails_ignored_total", {}, 11),
    ("patchbridge_milter_tempfails_total", {}, 0),
    ("patchbridge_replies_received_total", {"result": "journaled"}, 6),
    ("patchbridge_replies_received_total", {"result": "duplicate"}, 0),
    ("patchbridge_replies_applied_total", {"project": P}, 6),
    ("patchbridge_replies_dead_total", {}, 0),
    ("patchbridge_approvals_made_total", {"project": P}, 2),
    ("patchbridge_approvals_refused_total", {"reason": "unverified"}, 1),
    ("patchbridge_approvals_refused_total", {}, 1),
    ("patchbridge_naks_total", {}, 0),
    ("patchbridge_notices_total", {"decision": "sent"}, 1),
    ("patchbridge_notices_total", {}, 1),
    ("patchbridge_series_sent_total", {"project": P}, 1),
    ("patchbridge_mails_sent_total", {"project": P}, 7),
    ("patchbridge_smtp_failures_total", {}, 0),
    ("patchbridge_polls_total", {"project": P, "result": "auth"}, 0),
    ("patchbridge_polls_total", {"project": P, "result": "unreachable"}, 0),
]


def parse_metrics(text):
    """prom_scrape.parse(), failing the demo."""
    try:
        return prom_scrape.parse(text)
    except AssertionError as e:
        raise Fail(str(e))


def total(scrape, name, labels=None):
    return prom_scrape.total(scrape, name, **(labels or {}))


class Daemon:
    """`patchbridge run --foreground` on bed's configuration, with
    [metrics] on port."""

    def __init__(self, bed, port):
        self.bed, self.port = bed, port
        self.proc = bed.spawn([bed.patchbridge, "-c", bed.cfg, "run",
                               "--foreground"], "daemon.log")
        def healthy():
            check(self.proc.poll() is None, "the daemon exited: " +
                  bed.log_tail(2000))
            return self.get("/healthz")[0] == 200
        wait_for(healthy, 30, "the daemon's /healthz does not answer")

    def get(self, path):
        return prom_scrape.get(self.port, path)

    def text(self):
        status, text = self.get("/metrics")
        check(status == 200, "/metrics answered %d" % status)
        return text

    def scrape(self):
        return parse_metrics(self.text())

    def cycle(self):
        """What `run --once` did: SIGUSR1, then wait for a whole round
        that began after it (a round in progress when the signal came
        ends first; a second signal wakes a daemon that went back to
        sleep after the first)."""
        c0 = total(self.scrape(), "patchbridge_loop_cycles_total")
        for k in (1, 2):
            self.proc.send_signal(signal.SIGUSR1)

            def done():
                check(self.proc.poll() is None, "the daemon exited")
                return total(self.scrape(),
                             "patchbridge_loop_cycles_total") >= c0 + k
            wait_for(done, 60, "the daemon did not finish a round",
                     every=0.05)

    def settled(self, before, moved, timeout=30):
        """The scrape once every counter of moved has moved by its
        delta from before (the milter's file lags by up to its
        interval), or the last one."""
        deadline = time.monotonic() + bound(timeout)
        while True:
            now = self.scrape()
            if all(total(now, n, ls) - total(before, n, ls) == d
                   for n, ls, d in moved) or time.monotonic() >= deadline:
                return now
            time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the build directory")
    ap.add_argument("--work", help="scratch directory (default: a new one)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the scratch directory")
    args = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("postfix"):
        print("demo: needs root and Postfix (scripts/install-deps.sh)")
        return 77
    if prom_scrape.missing():
        print("demo: needs %s (scripts/install-deps.sh)" %
              prom_scrape.missing())
        return 77
    work = args.work or tempfile.mkdtemp(prefix="patchbridge-demo.")
    bindir = os.path.abspath(args.bin)
    bed = bedlib.Bed(work, os.path.join(bindir, "bridge", "patchbridge"),
                     fresh=False)
    rc = 1
    try:
        story(bed, bindir)
        rc = 0
    except Fail as e:
        print("\nDEMO FAILED at step %d: %s" % (STEP[0], e))
    finally:
        step("Stop everything")
        bed.stop()
        left = subprocess.run(["pgrep", "-f", work], capture_output=True,
                              text=True).stdout.split()
        say("milters, daemon and the list server stopped; "
            "%d processes left behind" % len(left))
    # the ASan+UBSan build (scripts/test.sh): the daemon and the milter
    # ran the whole story and stopped
    for name in ("daemon.log", "milter.log"):
        path = os.path.join(work, name)
        text = open(path, errors="replace").read() \
            if os.path.exists(path) else ""
        if any(r in text for r in ("ERROR: AddressSanitizer",
                                   "LeakSanitizer", "runtime error:")):
            print("\nDEMO FAILED: a sanitizer report in %s" % name)
            rc = 1
    if rc == 0:
        print("\nThe demo went as told (%.0f s)." % (time.time() - T0))
    else:
        print("Logs are in %s" % work)
    if rc == 0 and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return rc


def bridge_key(bed):
    """The bridge's ed25519 key (patchbridge attest-key --generate) and
    the keyring a list reader fetches its public key from, laid out as
    patatt's: the key file's path and the keyring's."""
    key = os.path.join(bed.work, "bridge.key")
    out = subprocess.run([bed.patchbridge, "attest-key", "--generate",
                          "--identity", "bridge@example.org", key],
                         capture_output=True, text=True)
    check(out.returncode == 0, "attest-key: " + out.stderr[-500:])
    os.chmod(key, 0o600)
    pub = subprocess.run([bed.patchbridge, "attest-key", "--public", key],
                         capture_output=True, text=True, check=True)
    keys = os.path.join(bed.work, "keyring", ".keys")
    where = os.path.join(keys, "ed25519", "example.org", "bridge")
    os.makedirs(where)
    with open(os.path.join(where, "default"), "w") as f:
        f.write(pub.stdout)
    return key, keys


def check_attestation(bed, keys, series):
    """patatt, as a list reader runs it, checks the bridge's attestation
    of the series as the archive has it."""
    mbox = os.path.join(bed.work, "attested.mbox")
    with open(mbox, "wb") as f:
        for m in series:
            f.write(b"From patchbridge Mon Sep 17 00:00:00 2001\n")
            f.write(m.raw.replace(b"\r\n", b"\n"))
            f.write(b"\n")
    gitconfig = os.path.join(bed.work, "reader.gitconfig")
    with open(gitconfig, "w") as f:
        f.write("[patatt]\n\tkeyringsrc = %s\n" % keys)
    env = dict(os.environ, GIT_CONFIG_GLOBAL=gitconfig,
               GIT_CONFIG_NOSYSTEM="1",
               XDG_CACHE_HOME=os.path.join(bed.work, "cache"),
               XDG_DATA_HOME=os.path.join(bed.work, "data"))
    out = subprocess.run(["/usr/bin/python3", "-c",
                          "import sys, patatt; sys.exit(patatt.command())",
                          "validate", mbox], capture_output=True, text=True,
                         env=env)
    passed = [line.strip() for line in (out.stdout + out.stderr).splitlines()
              if "PASS" in line]
    check(out.returncode == 0 and len(passed) == len(series),
          "patatt validate: %s" % (out.stdout + out.stderr)[-800:])
    say("patatt validate, with the bridge's key from the keyring: %d of %d "
        "mails PASS (%s)" % (len(passed), len(series), passed[0]))


def story(bed, bindir):
    step("Start a GitLab simulator and a private Postfix as the list server")
    sim("POST", "/_sim/reset", {"seed": SEED})
    milter_bin = os.path.join(bindir, "milter", "patchbridge-milter")
    verifier_bin = os.path.join(bindir, "tests", "postfix", "test_milter")
    have_milter = os.access(milter_bin, os.X_OK)
    sockdir = bed.sockets()
    vsock = os.path.join(sockdir, "verifier.sock")
    msock = os.path.join(sockdir, "patchbridge.sock")
    milters = "unix:%s" % vsock
    if have_milter:
        milters += ", unix:%s" % msock
    # The milters first, so that Postfix's first connection finds them.
    bed.env["PORT"] = str(bedlib.free_port())
    key, keys = bridge_key(bed)
    bedlib.write_config(bed, msock, OWNERS, outbound="cc_owners = yes\n"
                        "cc_author = yes\ncc_reviewers = yes\n"
                        "attest = yes\nattest_key_file = %s\n" % key)
    mport = bedlib.free_port()
    with open(bed.cfg, "a") as f:
        f.write("[metrics]\nenabled = yes\nlisten = 127.0.0.1:%d\n"
                "milter_interval = 1s\n" % mport)
    bed.pb("check-config")
    say("patchbridge check-config: ok")
    bed.start_verifier(verifier_bin, vsock)
    say("DKIM/DMARC stand-in in front: kernel.example and review.example "
        "mail verifies, nothing else does")
    if have_milter:
        bed.start_milter(milter_bin, msock)
        say("patchbridge-milter reads the list's mail on %s" % msock)
    else:
        say("patchbridge-milter is not built yet: replies are not read")

    bed.start_postfix("--port", bed.env["PORT"], "--milter", milters,
                      mailboxes=("mallory@example.net",))
    say("GitLab simulator at %s (project group/project)" %
        os.environ["PB_FORGESIM_URL"])
    say("list server: Postfix on 127.0.0.1:%s, list %s, archive %s" %
        (bed.env["PORT"], LIST, bed.env["ARCHIVE"]))
    d = Daemon(bed, mport)
    say("patchbridge run --foreground: /metrics, /healthz and /readyz on "
        "127.0.0.1:%d" % mport)
    # the first poll, the first probe of the MTA
    wait_for(lambda: d.get("/readyz")[0] == 200, 30,
             "/readyz: %d %s" % d.get("/readyz"))
    before = d.settled({}, [])
    if have_milter:
        def milter_up():
            nonlocal before
            before = d.scrape()
            return total(before, "patchbridge_milter_up") == 1
        wait_for(milter_up, 10,
                 "the milter's counters do not reach /metrics")

    step("Alice opens a merge request with 3 commits on the forge")
    # Alice signs her first commit; GitLab verifies it against her key.
    v1 = [dict(V1[0], signature={"type": "PGP", "user": "alice"})] + V1[1:]
    made = sim("POST", "/_sim/projects/1/commits",
               {"branch": "step", "start": "main", "commits": v1})
    mr = sim("POST", "/_sim/projects/1/merge_requests",
             {"source_branch": "step", "target_branch": "main",
              "title": "counter: count by a step",
              "description": "Callers want to count by more than one.\n\n"
              "This adds a step argument and documents it.",
              "author": "alice", "reviewers": ["mary", "rob"]})
    say("group/project!%d \"%s\" by Alice, reviewers Mary and Rob" %
        (mr["iid"], mr["title"]))

    step("patchbridge mails revision 1 to the list, attested")
    say(bed.pb("send", "group/project!1").strip())
    bed.wait_mail(4)
    bed.settle()
    series = [m for m in bed.archive() if "PATCH" in m["Subject"]]
    for m in series:
        say("archive: %-45s Cc: %s" % (m["Subject"],
                                       m.get("Cc", "-")[:40]))
    check(len(series) == 4, "expected a cover letter and 3 patches")
    cover = next(m for m in series if " 0/3]" in m["Subject"])
    patch1 = next(m for m in series if " 1/3]" in m["Subject"])
    patch2 = next(m for m in series if " 2/3]" in m["Subject"])
    text = cover.raw.decode("utf-8", "replace").replace("\r\n", "\n")
    sigs = text.split("Commit signatures, as the forge verified them:\n")
    check(len(sigs) == 2, "the cover letter says nothing of signatures")
    say("the cover letter: Commit signatures, as the forge verified them:")
    for line in sigs[1].split("\n\n")[0].splitlines():
        say("  " + line)
    check(all(m.get("X-Developer-Signature") for m in series),
          "a mail of the series is not attested")
    say("each mail carries X-Developer-Signature: the bridge's ed25519 "
        "attestation")

    step("A list reader checks the attestation and applies the series "
         "with git am")
    clone = os.path.join(bed.work, "reader")
    subprocess.run(["git", "clone", "-q", os.environ["PB_FORGESIM_URL"] +
                    "/group/project.git", clone], check=True)
    mbox = os.path.join(bed.work, "series.mbox")
    # The archive has them in the order Postfix delivered them, which
    # need not be the order they were sent in: git am wants 1/3 first.
    patches = sorted((m for m in series if " 0/3]" not in m["Subject"]),
                     key=lambda m: m["Subject"].split("/3]")[0][-1])
    with open(mbox, "wb") as f:
        for m in patches:
            f.write(b"From patchbridge Mon Sep 17 00:00:00 2001\n")
            f.write(m.raw.replace(b"\r\n", b"\n"))
            f.write(b"\n")
    am = subprocess.run(["git", "-C", clone, "-c", "user.name=Reader",
                         "-c", "user.email=reader@example.org", "am", "-q",
                         mbox], capture_output=True, text=True)
    check(am.returncode == 0, "git am failed: " + am.stderr[-500:])
    log = subprocess.run(["git", "-C", clone, "log", "--format=%an: %s",
                          "-3"], capture_output=True, text=True).stdout
    say("git am applied 3 patches:")
    say(log.strip())
    check_attestation(bed, keys, series)

    ci_result(bed, d, cover)

    if not have_milter:
        say("(the inbound half of the story needs patchbridge-milter)")
        return

    the_story_in_replies(bed, d, cover, patch1, patch2, made)
    contributed_by_email(bed, d)
    show_metrics(d, before)


def ci_result(bed, d, cover):
    """Revision 1's pipeline passes on the forge; the list gets the result
    in reply to the cover letter ([project] mail_pipelines)."""
    step("GitLab CI runs revision 1's pipeline; it passes, the list is told")
    pl = sim("POST", "/_sim/projects/1/merge_requests/1/pipelines",
             {"jobs": [{"name": "build", "stage": "build"},
                       {"name": "unit-tests", "stage": "test"}]})
    sim("POST", "/_sim/projects/1/pipelines/%d/finish" % pl["id"], {})
    say("pipeline #%d on %.12s: build and unit-tests passed" %
        (pl["id"], pl["sha"]))
    before = len(bed.archive())
    d.cycle()
    bed.wait_mail(before + 1)
    bed.settle()
    mail = next(m for m in bed.archive()
                if m.get("From", "").startswith("CI via"))
    say("archive: %s" % mail["Subject"])
    say("From: %s" % mail["From"])
    say("In-Reply-To: %s (the cover letter)" % mail["In-Reply-To"])
    for line in patch_body(mail).strip().splitlines():
        say("  | " + line)
    check(mail["In-Reply-To"] == cover["Message-ID"],
          "the pipeline's result does not answer the cover letter")
    check(patch_body(mail).startswith("Pipeline #%d for v1 " % pl["id"]) and
          " passed." in patch_body(mail), "the result does not say passed")


def show_metrics(d, before):
    step("The operator's Prometheus scrapes /metrics")
    after = d.settled(before, METRICS_MOVED)
    text = d.text()
    say("curl http://127.0.0.1:%d/metrics: %d lines, %d series; "
        "promtool check metrics and prometheus_client's parser: ok" %
        (d.port, len(text.splitlines()), len(after)))
    say("%-66s %6s %6s" % ("what the story moved", "before", "after"))
    wrong = []
    for name, labels, delta in METRICS_MOVED:
        b, a = total(before, name, labels), total(after, name, labels)
        sel = name + ("{%s}" % ",".join('%s="%s"' % kv for kv in
                                        sorted(labels.items()))
                      if labels else "")
        say("%-66s %6g %6g%s" % (sel[:66], b, a, "" if a - b == delta
                                 else "   (expected +%d)" % delta))
        if a - b != delta:
            wrong.append(sel)
    ready = d.get("/readyz")
    say("/readyz: %d %s" % (ready[0], ready[1].strip().replace("\n", "; ")))
    check(not wrong, "the counters did not move as the story did: " +
          ", ".join(wrong))
    check(ready[0] == 200, "/readyz is not ready after the story")
    check(total(after, "patchbridge_spool_records", {"area": "dead"}) == 0,
          "dead letters after the story")
    check(total(after, "patchbridge_forge_requests_total") >
          total(before, "patchbridge_forge_requests_total"),
          "no forge request counted")


def the_story_in_replies(bed, d, cover, patch1, patch2, made):
    """The replies on the list, revision 2, a forge comment mailed, the
    public-inbox export."""
    step("Mary (DKIM verified, maintainer of src/) acks the series")
    bed.send(reply(cover, "Mary Maintainer <mary@kernel.example>",
                   quote(patch_body(cover)[:400]) +
                   "\nNice and small.\n\n"
                   "Acked-by: Mary Maintainer <mary@kernel.example>\n")[0],
             "mary@kernel.example")

    step("Rob (DKIM verified) reviews patch 2 inline")
    body2 = patch_body(patch2)
    diff2 = body2[body2.index("diff --git"):]
    lines = diff2.splitlines()
    cut = next(i for i, l in enumerate(lines) if l.startswith("+\tif"))
    inline = (quote("\n".join(lines[:cut + 2])) +
              "\nReturning n hides the mistake from the caller; "
              "-1 would be clearer.\n\n" +
              quote("\n".join(lines[cut + 2:cut + 4])) +
              "\nOtherwise fine.\n\nReviewed-by: Rob Reviewer "
              "<rob@review.example>\n")
    bed.send(reply(patch2, "Rob Reviewer <rob@review.example>",
                   "On patch 2:\n\n" + inline)[0], "rob@review.example")

    step("Mallory (no DKIM pass) tries to ack, and to merge by quick action")
    bed.send(reply(patch1, "Mallory Spoofer <mallory@example.net>",
                   "Ship it.\n/merge\n\nAcked-by: Mallory Spoofer "
                   "<mallory@example.net>\n")[0], "mallory@example.net")
    bed.wait_mail(8)
    bed.settle()
    for m in bed.archive():
        if m["Subject"].startswith("Re:"):
            say("archive: %-40s X-Patchbridge: %s" %
                (m["Subject"][:40], m.get("X-Patchbridge", "-")))

    step("patchbridge applies the spooled replies to the forge")
    d.cycle()
    show_forge(sim("GET", "/_sim/state"))

    mallory_hears_back(bed, d)

    step("An operator asks: what did the bridge do with Mallory's mail?")
    mallory = next(m for m in bed.archive()
                   if "mallory@" in m.get("From", ""))
    say("$ patchbridge why %s" % mallory["Message-ID"])
    story = bed.pb("why", mallory["Message-ID"])
    for line in story.strip().splitlines():
        say("  " + line)
    check("not" in story and "approv" in story,
          "why does not say that Mallory's ack approved nothing")

    step("Alice reworks patch 2 and force-pushes revision 2")
    sim("POST", "/_sim/projects/1/merge_requests/1/push",
        {"start": made["shas"][0], "commits": [V2_FIX, V1[2]],
         "user": "alice"})
    say("patchbridge notices the new version on its next poll")
    d.cycle()
    bed.wait_mail(12)
    bed.settle()
    v2 = [m for m in bed.archive() if "PATCH v2" in m["Subject"] and
          not m["Subject"].startswith("Re:")]
    for m in v2:
        say("archive: %s" % m["Subject"])
    v2cover = next((m for m in v2 if " 0/" in m["Subject"]), None)
    check(v2cover is not None, "no v2 cover letter")
    say("In-Reply-To: %s (the v1 cover letter: %s)" %
        (v2cover["In-Reply-To"], cover["Message-ID"]))
    text = patch_body(v2cover)
    at = text.find("Changes in v2")
    check(at >= 0, "the v2 cover letter has no 'Changes in v2'")
    end = text.find("Open from v", at)
    if end < 0:
        end = text.find("Alice Author (", at)
    say(text[at:end if end > at else at + 800].rstrip())
    show_open_threads(v2cover)

    step("Rob comments on a line in GitLab's web UI; the list gets it")
    ver = sim("GET", "/api/v4/projects/1/merge_requests/1/versions",
              token="rob-token")[0]
    disc = sim("POST", "/api/v4/projects/1/merge_requests/1/discussions",
               {"body": "Please add a comment saying why -1 and not 0.",
                "position": {"position_type": "text",
                             "base_sha": ver["base_commit_sha"],
                             "start_sha": ver["start_commit_sha"],
                             "head_sha": ver["head_commit_sha"],
                             "old_path": "src/counter.c",
                             "new_path": "src/counter.c",
                             "new_line": 7}}, token="rob-token")
    say("Rob's diff note on src/counter.c:7 (discussion %s...)" %
        disc["id"][:8])
    before = len(bed.archive())
    d.cycle()
    bed.wait_mail(before + 1)
    bed.settle()
    mail = next(m for m in bed.archive()
                if m.get("X-Patchbridge-Origin") == "forge" and
                "-1 and not 0" in patch_body(m))
    parent = next(m for m in bed.archive()
                  if m["Message-ID"] == mail["In-Reply-To"])
    say("archive: %s" % mail["Subject"])
    say("From: %s" % mail["From"])
    say("In-Reply-To: %s (that is \"%s\")" % (mail["In-Reply-To"],
                                                parent["Subject"]))
    for line in patch_body(mail).strip().splitlines()[:14]:
        say("  | " + line)
    check(" 2/3]" in parent["Subject"],
          "the forge comment is not threaded under patch 2")
    check(not mail.get("X-Patchbridge", "").startswith("reply"),
          "the milter took the bridge's own mail for a reply")
    notes = sum(len(d["notes"]) for d in the_mr()["discussions"])
    d.cycle()
    check(sum(len(d["notes"]) for d in the_mr()["discussions"]) == notes,
          "the bridge's mail came back to the forge")
    say("the mail did not come back to the forge (%d notes before and "
        "after another run)" % notes)

    step("The whole conversation, exported to a public-inbox archive")
    inbox = os.path.join(bed.work, "inbox")
    say(bed.pb("export", "--public-inbox", inbox, "group/project!1").strip())
    if not shutil.which("public-inbox-index"):
        say("(public-inbox is not installed: not imported)")
        return
    lines = bedlib.public_inbox(bed.work, "demo", inbox, PI_THREAD,
                                "demo").splitlines()
    say("public-inbox-init + public-inbox-index: %d messages; the thread "
        "as public-inbox sees it:" % len(lines))
    for line in lines:
        say("  " + line)
    check(len(lines) == len(bed.archive()),
          "the archive has %d messages, the list %d" %
          (len(lines), len(bed.archive())))


CAROL = "Carol Contributor <carol@review.example>"


def contributed_by_email(bed, d):
    """Carol contributes by email: a series sent with git send-email to
    the list becomes a merge request (README "Contributing by email");
    the list gets nothing new, her mails are the series."""
    step("Carol (DKIM verified) sends a series to the list with "
         "git send-email")
    work = os.path.join(bed.work, "carol")
    env = dict(os.environ, GIT_CONFIG_GLOBAL=bed.write("carol.gitconfig",
                                                       ""),
               GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0",
               GIT_AUTHOR_NAME="Carol Contributor",
               GIT_AUTHOR_EMAIL="carol@review.example",
               GIT_COMMITTER_NAME="Carol Contributor",
               GIT_COMMITTER_EMAIL="carol@review.example")
    git = bedlib.project_clone(work, env)
    base = git("rev-parse", "HEAD").strip()
    for path, text, msg in (
            ("README", "counter: counts things\n\nSee docs/counter.txt.\n",
             "README: point at the manual\n\nSay where count() is "
             "described."),
            ("docs/counter.txt", "count(n) returns n + 1.\n\n"
             "Example: count(41) is 42.\n",
             "docs: an example of count()\n\nOne line says more than "
             "a definition.")):
        with open(os.path.join(work, path), "w") as f:
            f.write(text)
        git("commit", "-q", "-a", "-s", "-m", msg)
    out = os.path.join(bed.work, "carol-v1")
    git("format-patch", "-q", "--cover-letter", "--thread",
        "--base=" + base, "-o", out, base + "..HEAD")
    names = sorted(os.listdir(out))
    with open(os.path.join(out, names[0])) as f:
        text = f.read()
    with open(os.path.join(out, names[0]), "w") as f:
        f.write(text.replace("*** SUBJECT HERE ***", "Say more about count()")
                .replace("*** BLURB HERE ***", "Two small documentation "
                         "patches: the README points at the manual, and "
                         "the manual gets an example."))
    before = len(bed.archive())
    say("$ git send-email --to=%s --smtp-server=127.0.0.1 "
        "--smtp-server-port=%s %s" % (LIST, bed.env["PORT"],
                                      " ".join(names)))
    sent = subprocess.run(
        ["git", "send-email", "--to=" + LIST, "--from=" + CAROL,
         "--confirm=never", "--suppress-cc=all", "--quiet",
         "--smtp-server=" + bed.addr, "--smtp-server-port=" +
         bed.env["PORT"]] + [os.path.join(out, n) for n in names],
        env=env, capture_output=True, text=True, timeout=bound(120))
    check(sent.returncode == 0, "git send-email: " + sent.stderr[-800:])
    bed.wait_mail(before + 3)
    bed.settle()
    mails = [m for m in bed.archive() if "carol@" in m.get("From", "")]
    for m in mails:
        say("archive: %-40s X-Patchbridge: %s" %
            (m["Subject"][:40], m.get("X-Patchbridge", "-")[:40]))
    check(len(mails) == 3, "%d of Carol's mails in the archive" % len(mails))

    step("patchbridge makes a merge request of it")

    def opened():
        d.cycle()
        return [m for m in sim("GET", "/api/v4/projects/1/merge_requests")
                if "from-email" in m["labels"]]
    mrs = wait_for(opened, 60, "no merge request from Carol's series")
    check(len(mrs) == 1, "%d merge requests from email" % len(mrs))
    mr = mrs[0]
    path = "/api/v4/projects/1/merge_requests/%d" % mr["iid"]
    commits = sim("GET", path + "/commits")
    say("group/project!%d \"%s\"" % (mr["iid"], mr["title"]))
    say("  %s -> %s, labels: %s, opened by %s" % (
        mr["source_branch"], mr["target_branch"], ", ".join(mr["labels"]),
        mr["author"]["username"]))
    for line in mr["description"].strip().splitlines()[:3]:
        say("  | " + line)
    for c in reversed(commits):
        say("  commit %.12s %s: %s" % (c["id"], c["author_name"],
                                       c["title"]))
    check(mr["title"] == "Say more about count()", "title %r" % mr["title"])
    check(mr["description"].startswith("From: %s by email" % CAROL),
          "the description does not say whose series it is")
    check(mr["target_branch"] == "main" and
          mr["source_branch"].startswith("email/carol/"),
          "branches %s -> %s" % (mr["source_branch"], mr["target_branch"]))
    check([c["author_email"] for c in commits] ==
          ["carol@review.example"] * 2, "the commits are not Carol's")
    check(len(bed.archive()) == before + 3, "the bridge mailed the list")
    say("the list got nothing new: Carol's own mails are the series, and "
        "replies to them reach !%d as for any bridged series" % mr["iid"])
    cover = next(m for m in mails if " 0/2]" in m["Subject"])
    say("$ patchbridge why %s" % cover["Message-ID"])
    for line in bed.pb("why", cover["Message-ID"]).strip().splitlines():
        say("  " + line)


def show_open_threads(v2cover):
    """The review threads of v1 still open on the forge, as the v2 cover
    letter lists them: Rob's inline comments on patch 2 became threads
    on the forge, and nobody resolved them."""
    step("The v2 cover letter lists the review threads still open")
    text = patch_body(v2cover)
    at = text.find("Open from v1:")
    check(at >= 0, "the v2 cover letter lists no open thread")
    end = text.find("\n\n", at)
    block = text[at:end if end > at else at + 1200]
    for line in block.splitlines():
        say("  | " + line)
    check("src/counter.c:" in block and "(Rob Reviewer)" in block,
          "Rob's thread on src/counter.c is not listed")


# Every message of the inbox as a thread tree: "  " per level, subject.
PI_THREAD = r"""
my $ibx = PublicInbox::Config->new->lookup_name($ARGV[0]) or die "no inbox";
my $over = $ibx->over or die "no overview";
my @all = sort { $a->{ds} <=> $b->{ds} || $a->{num} <=> $b->{num} }
          @{$over->recent({ limit => 1000 })};
my (%kids, %have);
$have{$_->{mid}} = 1 for @all;
my @roots;
for my $m (@all) {
    my @refs = ($m->{references} // '') =~ /<([^>]+)>/g;
    my $p = $refs[-1];
    if (defined $p && $have{$p}) { push @{$kids{$p}}, $m } else { push @roots, $m }
}
sub show { my ($m, $d) = @_; print "  " x $d, $m->{subject}, "
";
           show($_, $d + 1) for @{$kids{$m->{mid}} // []}; }
show($_, 0) for @roots;
"""


def mallory_hears_back(bed, d):
    """Mallory's ack counted for nothing: a private notice tells her so
    (README "Notices to senders"), in her mailbox, not on the list."""
    step("Mallory hears back")
    mine = next(m for m in bed.archive()
                if "mallory@" in m.get("From", ""))

    def delivered():
        d.cycle()
        bed.settle()
        return bed.mailbox("mallory@example.net")
    wait_for(delivered, 60, "no notice reached Mallory's mailbox")
    box = bed.mailbox("mallory@example.net")
    notice = box[0]
    say("Mallory's mailbox: \"%s\" from %s" % (notice["Subject"],
                                                notice["From"]))
    body = notice.get_content()
    for line in body.split("\n\n")[1:3]:
        for part in line.splitlines():
            say("  " + part)
    check(len(box) == 1, "Mallory got %d mails, want one notice" % len(box))
    check(notice["To"].addresses[0].addr_spec == "mallory@example.net" and
          not notice["Cc"], "the notice is not to Mallory alone")
    check(notice["In-Reply-To"] == mine["Message-ID"],
          "the notice does not answer Mallory's mail")
    check(notice["Auto-Submitted"] == "auto-replied",
          "the notice does not say Auto-Submitted: auto-replied")
    check("not verified" in " ".join(body.split()) and
          "DKIM signs" in " ".join(body.split()),
          "the notice does not say why nor what to do")
    check(not any(m.get("X-Patchbridge-Origin") == "notice"
                  for m in bed.archive()), "the notice reached the list")


def show_forge(state, checks=True):
    proj = next(p for p in state["projects"] if p["id"] == 1)
    mr = next(m for m in proj["merge_requests"] if m["iid"] == 1)
    say("the forge now holds, on group/project!1:")
    seen = {"diffnote": 0, "mallory": None}
    for d in mr["discussions"]:
        notes = [n for n in d["notes"] if not n["system"]]
        if not notes:
            continue
        n = notes[0]
        pos = n.get("position") or {}
        if pos:
            line = pos.get("new_line") or pos.get("old_line")
            where = "DiffNote at %s:%s" % (pos.get("new_path"), line)
            seen["diffnote"] += 1
        else:
            where = "Discussion"
        text = [html.unescape(l) for l in n["body"].splitlines()
                if l.strip() and not l.startswith("<!--")]
        say("  %s by %s, %s" % (where, n["author"],
                                "unresolved" if not n.get("resolved")
                                else "resolved"))
        for l in text[:2] + (["  ..."] if len(text) > 4 else []) + \
                text[-2:] if len(text) > 4 else text:
            say("      | " + l[:74])
        if "mallory" in n["body"].lower():
            seen["mallory"] = n["body"]
    approvers = [a["user"] for a in mr["approvals"]]
    say("  approved by: %s" % (", ".join(approvers) or "nobody"))
    say("  state: %s; labels: %s" % (mr["state"],
                                      ", ".join(mr["labels"]) or "none"))
    if not checks:
        return
    check("mary" in approvers, "Mary's verified Acked-by did not approve")
    check("mallory" not in approvers, "Mallory's unverified ack approved")
    check(mr["state"] == "opened", "Mallory's /merge ran")
    check(seen["diffnote"] >= 1, "Rob's inline comment is not a diff note")
    check(seen["mallory"] is not None, "Mallory's reply was not posted")


if __name__ == "__main__":
    sys.exit(main())
