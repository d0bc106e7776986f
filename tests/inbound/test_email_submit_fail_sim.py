#!/usr/bin/env python3
"""A series posted to the list that becomes no merge request: its sender
is told, once, privately; the list is told nothing.

Run through tests/forgesim/run-with-sim.sh as SCRIPT PATCHBRIDGE SEED
(PB_FORGESIM_URL).  Series made with real git (git format-patch
--cover-letter --thread, what git send-email sends) are spooled as the
milter spools them (`patchbridge replay`) and taken by `patchbridge run
--once`, each story on a state of its own:

  not_applied  patch 2/2 changes a file the target does not have: no
               merge request, one notice in reply to the cover letter,
               to the sender alone, naming the patch, the base tried
               and git's message; `why` says the same
  unverified   email_submissions = verified and no verified sender: one
               notice for the whole series, nothing on the forge; a
               second refused series past [inbound] notice_rate is
               recorded, not mailed; an auto-submitted series gets no
               answer; with email_submissions = off, nothing at all
  missing      patch 2/3 does not come: after email_series_wait (1s
               here, waited for by running the daemon until the notice
               is there, never by a fixed sleep) one notice names 2/3,
               and only one; `why` names it; the late patch then opens
               the merge request
  limits       email_max_patches, email_max_bytes, email_series_per_hour:
               each refuses with one notice naming the limit, no merge
               request, the journal's reason submission_limit

In every story no mail is queued to the list address.
"""

import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time

# The setup of the stories that do become merge requests.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_email_submit_sim as base  # noqa: E402
from test_email_submit_sim import ANN, DAEMON_OK, PROJECT, URL, api  # noqa: E402,E501

LIST = "list@example.org"
# The longest a story waits for the daemon to decide a reminder.
WAIT_S = float(os.environ.get("PB_TEST_WAIT", "120"))
# Who may, and the limits: each story's own.
CONFIG = base.CONFIG.replace("email_submissions = anyone\n", "%(extra)s\n")


def fail(msg):
    print("test_email_submit_fail_sim: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


run = base.run


def mr_iids():
    return {m["iid"] for m in api("projects/1/merge_requests")}


class Story:
    """A state of its own: configuration, token, spool, database."""

    def __init__(self, pb, tmp, name, extra):
        self.pb = pb
        self.known = mr_iids()
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.conf = os.path.join(self.dir, "patchbridge.conf")
        with open(self.conf, "w") as f:
            f.write(CONFIG % {"url": URL, "dir": self.dir,
                              "extra": extra})
        tok = os.path.join(self.dir, "token")
        with open(tok, "w") as f:
            f.write("bot-token\n")
        os.chmod(tok, 0o600)

    def replay(self, *files, spooled=True):
        out = run([self.pb, "-c", self.conf, "replay"] + list(files))
        if spooled is not None and \
                out.count("spooled as") != (len(files) if spooled else 0):
            fail("replay: %r" % out)

    def daemon(self):
        run([self.pb, "-c", self.conf, "run", "--once", "--foreground"],
            ok=DAEMON_OK)

    def why(self, msgid):
        return run([self.pb, "-c", self.conf, "why", msgid.strip("<>")])

    def queued(self):
        """(recipients, message) of every mail in the outbound queue."""
        db = sqlite3.connect(os.path.join(self.dir, "state.db"))
        rows = [(bytes(r[0]).decode() if isinstance(r[0], bytes) else r[0],
                 bytes(r[1]).decode("utf-8", "replace"))
                for r in db.execute("SELECT recipients, message"
                                    " FROM outmail")]
        db.close()
        return rows

    def journal(self):
        db = sqlite3.connect(os.path.join(self.dir, "state.db"))
        rows = db.execute("SELECT state, last_error FROM inbound"
                          " WHERE classification = 'submission'").fetchall()
        db.close()
        return rows

    def notices(self):
        """The notices queued: each to the sender alone, none to the list."""
        out = []
        for rcpts, msg in self.queued():
            head = msg.split("\n\n", 1)[0]
            if any("X-Patchbridge-MR: %d\n" % i in head
                   for i in self.known):
                continue  # the merge requests of the simulator's seed
                # and of the stories before, new to this state
            if LIST in rcpts or LIST in msg.split("\n\n", 1)[0]:
                fail("a mail queued to the list: %r" % msg[:400])
            if "X-Patchbridge-Origin: notice" not in msg:
                fail("a mail that is no notice: %r" % msg[:400])
            out.append((rcpts, msg))
        return out


def unfold(msg):
    """The body with its lines joined (quoted-printable soft breaks and
    the template's wrapping undone), for matching words."""
    head, body = msg.split("\n\n", 1)
    body = body.replace("=\n", "").replace("=3D", "=")
    return head, " ".join(body.split())


def msgid_of(path):
    with open(path) as f:
        for line in f:
            if line.lower().startswith("message-id:"):
                return line.split(":", 1)[1].strip()
    fail("no Message-ID in " + path)
    return None


def series(work, tmp, name, base, changes, cover=True, size=0, version=1,
           out=None):
    """Commit changes (a list of (file, text)) on base in work and make
    the series' mails; returns their paths, cover first."""
    run(["git", "-C", work, "checkout", "-q", "--detach", base])
    for i, (path, text) in enumerate(changes):
        with open(os.path.join(work, path), "w") as f:
            f.write(text)
            if size and i == 0:  # a patch of about size bytes
                f.write(("y" * 75 + "\n") * (size // 76 + 1))
        run(["git", "-C", work, "add", "-A"])
        run(["git", "-C", work, "commit", "-q", "-m",
             "%s: change %d" % (name, i + 1), "-m",
             "Signed-off-by: Ann Author <ann@example.org>"],
            env=dict(ANN, GIT_AUTHOR_DATE="@%d +0000" % (1700000000 + i)))
    out = os.path.join(tmp, out or "mails-" + name)
    args = ["git", "-C", work, "format-patch", "-q", "--thread", "-o", out]
    if version > 1:
        args.append("-v%d" % version)
    if cover:
        args.append("--cover-letter")
    run(args + ["HEAD~%d..HEAD" % len(changes)], env=ANN)
    files = [os.path.join(out, n) for n in sorted(os.listdir(out))]
    if cover:
        with open(files[0]) as f:
            text = f.read()
        text = text.replace("*** SUBJECT HERE ***", name + ": the topic")
        text = text.replace("*** BLURB HERE ***", "A topic by mail.")
        with open(files[0], "w") as f:
            f.write(text)
    return files


def not_applied(pb, tmp, work, main):
    st = Story(pb, tmp, "not-applied", "email_submissions = anyone")
    # A file the target branch never had, changed by patch 2/2.
    run(["git", "-C", work, "checkout", "-q", "--detach", main])
    with open(os.path.join(work, "local-only.txt"), "w") as f:
        f.write("one\ntwo\nthree\n")
    run(["git", "-C", work, "add", "-A"])
    run(["git", "-C", work, "commit", "-q", "-m", "local only"], env=ANN)
    local = run(["git", "-C", work, "rev-parse", "HEAD"]).strip()
    files = series(work, tmp, "conflict", local,
                   [("applies.txt", "new file\n"),
                    ("local-only.txt", "one\nTWO\nthree\n")])
    before = mr_iids()
    st.replay(*files)
    st.daemon()
    st.daemon()  # again: nothing more
    if mr_iids() != before:
        fail("not_applied: a merge request was opened")
    n = st.notices()
    if len(n) != 1:
        fail("not_applied: %d notices" % len(n))
    rcpts, msg = n[0]
    head, body = unfold(msg)
    cover = msgid_of(files[0])
    if rcpts.strip() != "ann@example.org" or \
            "In-Reply-To: " + cover not in head or \
            "Auto-Submitted: auto-replied" not in head or \
            'Patch 2/2 "conflict: change 2" does not apply on ' + \
            main[:12] not in body or "the tip of main" not in body or \
            "A fixed version is welcome" not in body:
        fail("not_applied: notice %r" % msg)
    out = st.why(cover)
    if "not opened: see what its sender was told" not in out or \
            "does not apply" not in out or \
            "Patch 2/2" not in out:
        fail("not_applied: why %r" % out)
    # The series' end, not a fault of the mail that completed it.
    out = st.why(msgid_of(files[-1]))
    if "dead letter" in out or "not opened, its sender told" not in out:
        fail("not_applied: why of the last mail %r" % out)
    # Her answers to the notice, on the list: there is no merge request
    # to put them on, so they pass (the milter once tempfailed them).
    notice_id = re.search(r"^Message-ID: (<[^>]+>)", head, re.M).group(1)
    answers = []
    for k, text in enumerate(("Thanks, a fixed v2 comes soon.\n",
                              "unsubscribe notices\n")):
        path = os.path.join(st.dir, "answer%d.eml" % k)
        with open(path, "w") as f:
            f.write("From: Ann Author <ann@example.org>\n"
                    "To: list@example.org\n"
                    "Subject: Re: your series\n"
                    "Date: Mon, 07 Dec 2026 05:00:0%d +0000\n"
                    "Message-ID: <answer%d.notice@example.org>\n"
                    "In-Reply-To: %s\n"
                    "References: %s %s\n"
                    "Content-Type: text/plain\n\n%s"
                    % (k, k, notice_id, cover, notice_id, text))
        answers.append(path)
    st.replay(*answers, spooled=False)
    st.daemon()
    for k in range(2):
        # 66: a mail the bridge never took (passed, not spooled)
        out = run([pb, "-c", st.conf, "why",
                   "answer%d.notice@example.org" % k], ok=(0, 66))
        if "dead letter" in out or "!0" in out:
            fail("not_applied: answer %d to the notice: %r" % (k, out))
    print("not applied: one notice to the sender, naming 2/2 and %s; "
          "her answers to it placed on no merge request" % main[:12])


def stale(pb, tmp, work, main):
    """A version no newer than the one its merge request took (the same
    v2 sent again under other Message-IDs): nothing pushed, the sender
    told once, no dead letter."""
    st = Story(pb, tmp, "stale", "email_submissions = anyone")
    changes = [("stale.txt", "first\n")]
    first = series(work, tmp, "stale", main, changes, version=2)
    before = mr_iids()
    st.replay(*first)
    st.daemon()
    opened = mr_iids() - before
    if len(opened) != 1:
        fail("stale: v2 opened %d merge requests" % len(opened))
    iid = opened.pop()
    # Other commits and another cover letter's Message-ID: git
    # format-patch makes them of the commit (the cover's of nothing)
    # and the second, so a copy made in the same second could share them.
    again = series(work, tmp, "stale", main, [("stale.txt", "again\n")],
                   version=2, out="mails-stale-again")
    for path in again:
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("<cover.", "<cover-again."))
    if set(map(msgid_of, again)) & set(map(msgid_of, first)):
        fail("stale: the second copy has the first's Message-IDs")
    st.replay(*again)
    st.daemon()
    st.daemon()  # again: nothing more
    if mr_iids() - before != {iid}:
        fail("stale: the same v2 again opened a merge request")
    n = st.notices()
    if len(n) != 1:
        fail("stale: %d notices" % len(n))
    rcpts, msg = n[0]
    head, body = unfold(msg)
    if rcpts.strip() != "ann@example.org" or \
            "In-Reply-To: " + msgid_of(again[0]) not in head or \
            "merge request !%d has taken v2 already" % iid not in body or \
            "send the next version as v3" not in body:
        fail("stale: notice %r" % msg)
    out = st.why(msgid_of(again[-1]))
    if "dead letter" in out or "not opened, its sender told" not in out \
            or "has taken v2 already" not in " ".join(out.split()):
        fail("stale: why of the last mail %r" % out)
    print("stale: the same v2 again, one notice to the sender, "
          "no dead letter")


def unverified(pb, tmp, work, main):
    st = Story(pb, tmp, "unverified", "email_submissions = verified")
    files = series(work, tmp, "unverified", main,
                   [("u1.txt", "1\n"), ("u2.txt", "2\n")])
    before = mr_iids()
    st.replay(*files)
    st.daemon()
    st.daemon()
    if mr_iids() != before:
        fail("unverified: a merge request was opened")
    n = st.notices()
    if len(n) != 1:
        fail("unverified: %d notices for one series" % len(n))
    head, body = unfold(n[0][1])
    if "In-Reply-To: " + msgid_of(files[0]) not in head or \
            "DKIM or DMARC" not in body or \
            "email_submissions = verified" not in body:
        fail("unverified: notice %r" % n[0][1])
    out = st.why(msgid_of(files[2]))
    if "not DKIM/DMARC-verified" not in out and \
            "its series was refused" not in out:
        fail("unverified: why %r" % out)
    print("unverified: one notice for the series, nothing on the forge")

    # A forged From gets its owner at most notice_rate notices an hour:
    # the second series' refusal is recorded, not mailed.
    rate = Story(pb, tmp, "rate", "email_submissions = verified")
    with open(rate.conf) as f:
        text = f.read()
    with open(rate.conf, "w") as f:
        f.write(text.replace("[inbound]\n", "[inbound]\nnotice_rate = 1\n"))
    one = series(work, tmp, "rate-1", main, [("r1.txt", "1\n")],
                 cover=False)
    two = series(work, tmp, "rate-2", main, [("r2.txt", "2\n")],
                 cover=False)
    rate.replay(*one)
    rate.daemon()
    rate.replay(*two)
    rate.daemon()
    if len(rate.notices()) != 1:
        fail("notice_rate: %d notices" % len(rate.notices()))
    db = sqlite3.connect(os.path.join(rate.dir, "state.db"))
    told = sorted(r[0] for r in db.execute(
        "SELECT decision FROM notices WHERE message_id LIKE 'refused %'"))
    db.close()
    if told != ["rate_limit", "sent"]:
        fail("notice_rate: decisions %r" % told)
    print("notice_rate: the second refusal recorded, not mailed")

    # RFC 3834: no answer to an automatic mail, even a series'.
    auto = Story(pb, tmp, "auto", "email_submissions = verified")
    bot = series(work, tmp, "auto", main, [("a1.txt", "1\n")],
                 cover=False)
    with open(bot[0]) as f:
        text = f.read()
    with open(bot[0], "w") as f:
        f.write("Auto-Submitted: auto-generated\n" + text)
    auto.replay(*bot, spooled=None)
    auto.daemon()
    if mr_iids() != before or auto.notices():
        fail("auto-submitted: %r" % auto.notices())
    print("an auto-submitted series: no notice, nothing on the forge")

    off = Story(pb, tmp, "off", "email_submissions = off")
    off.replay(*files, spooled=False)  # not even spooled
    off.daemon()
    if mr_iids() != before or off.notices():
        fail("off: %r" % off.notices())
    print("email_submissions = off: nothing at all")


def missing(pb, tmp, work, main):
    st = Story(pb, tmp, "missing",
               "email_submissions = anyone\nemail_series_wait = 1s")
    files = series(work, tmp, "missing", main,
                   [("m1.txt", "1\n"), ("m2.txt", "2\n"), ("m3.txt", "3\n")])
    before = mr_iids()
    st.replay(files[0], files[1], files[3])
    deadline = time.monotonic() + WAIT_S
    while not st.notices():
        if time.monotonic() > deadline:
            fail("missing: no reminder within %ds" % WAIT_S)
        st.daemon()
    st.daemon()
    n = st.notices()
    if len(n) != 1:
        fail("missing: %d reminders" % len(n))
    head, body = unfold(n[0][1])
    if "In-Reply-To: " + msgid_of(files[0]) not in head or \
            "for 2/3;" not in body:
        fail("missing: reminder %r" % n[0][1])
    out = st.why(msgid_of(files[1]))
    if "waits for 2/3" not in out:
        fail("missing: why %r" % out)
    j = json.loads(run([pb, "-c", st.conf, "why", "--json",
                        msgid_of(files[1]).strip("<>")]))
    if j["series"]["missing"] != "2/3" or \
            j["series"]["state"] != "collecting" or \
            j["series"]["told"]["missing"]["decision"] != "sent":
        fail("missing: why --json %r" % j.get("series"))
    if mr_iids() != before:
        fail("missing: a merge request before the series is whole")
    # The late patch completes it.
    st.replay(files[2])
    st.daemon()
    new = mr_iids() - before
    if len(new) != 1:
        fail("missing: the late patch opened %d merge requests" % len(new))
    if len(st.notices()) != 1:
        fail("missing: a second notice")
    print("missing: one reminder naming 2/3; the late patch opened !%d" %
          new.pop())


def limits(pb, tmp, work, main):
    cases = (
        ("max-patches", "email_max_patches = 2",
         [("p1.txt", "1\n"), ("p2.txt", "2\n"), ("p3.txt", "3\n")], 0,
         "(email_max_patches)"),
        ("max-bytes", "email_max_bytes = 64k",
         [("b1.txt", "big\n"), ("b2.txt", "2\n")], 80 * 1024,
         "(email_max_bytes)"),
    )
    for name, extra, changes, size, says in cases:
        st = Story(pb, tmp, name, "email_submissions = anyone\n" + extra)
        files = series(work, tmp, name, main, changes, size=size)
        before = mr_iids()
        st.replay(*files)
        st.daemon()
        st.daemon()
        if mr_iids() != before:
            fail("%s: a merge request was opened" % name)
        n = st.notices()
        if len(n) != 1 or says not in unfold(n[0][1])[1]:
            fail("%s: notices %r" % (name, n))
        if not any(s == "ignored" and e and "refused" in e
                   for s, e in st.journal()):
            fail("%s: journal %r" % (name, st.journal()))
        print("%s: refused with one notice" % name)

    # One series an hour: the second, another topic, is refused.
    st = Story(pb, tmp, "per-hour",
               "email_submissions = anyone\nemail_series_per_hour = 1")
    first = series(work, tmp, "hour-1", main, [("h1.txt", "1\n")],
                   cover=False)
    second = series(work, tmp, "hour-2", main, [("h2.txt", "2\n")],
                    cover=False)
    before = mr_iids()
    st.replay(*first)
    st.daemon()
    st.replay(*second)
    st.daemon()
    if len(mr_iids() - before) != 1:
        fail("per-hour: %d merge requests" % len(mr_iids() - before))
    n = st.notices()
    if len(n) != 1 or "(email_series_per_hour)" not in unfold(n[0][1])[1] \
            or "In-Reply-To: " + msgid_of(second[0]) not in n[0][1]:
        fail("per-hour: notices %r" % n)
    print("email_series_per_hour: the second series refused, one notice")


def main():
    if not URL or len(sys.argv) < 2:
        print("run through run-with-sim.sh with the path of patchbridge")
        return 2
    pb = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="pb-email-fail.")
    base.GITCONFIG = os.path.join(tmp, "gitconfig")
    base.fail = fail  # its run() fails under this test's name
    with open(base.GITCONFIG, "w"):
        pass
    try:
        work = os.path.join(tmp, "work")
        run(["git", "clone", "-q", URL + "/" + PROJECT + ".git", work])
        main_sha = run(["git", "-C", work, "rev-parse", "HEAD"]).strip()
        not_applied(pb, tmp, work, main_sha)
        unverified(pb, tmp, work, main_sha)
        missing(pb, tmp, work, main_sha)
        limits(pb, tmp, work, main_sha)
        stale(pb, tmp, work, main_sha)
        return 0
    finally:
        if os.environ.get("PB_TEST_KEEP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
