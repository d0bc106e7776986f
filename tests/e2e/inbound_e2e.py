#!/usr/bin/python3
"""End-to-end tests of the inbound half: list replies -> private Postfix
(pfbed) -> DKIM/DMARC stand-in (test_milter) -> patchbridge-milter ->
spool -> `patchbridge run` -> forgesim.

usage: inbound_e2e.py SCENARIO --bin BUILD_DIR --work DIR

Run under tests/forgesim/run-with-sim.sh, which exports PB_FORGESIM_URL.
Scenarios:

  replies   a 3-commit MR mailed as a series; replies over SMTP to our
            Message-IDs; `run --once` applies them:
            (a) a discussion per replied patch with the reviewer's text
                and the footer naming the sender;
            (b) inline comments on an added, a removed and a context line
                become DiffNotes at the lines computed from the mailed
                patch;
            (c) a verified maintainer's Acked-by approves as that user;
                the same from an unverified domain does not, and the
                comment says why;
            (d) a Nacked-by from that maintainer: the NAK label, an
                unresolved discussion quoting the reason, the approval
                withdrawn;
            (e) a quoted Acked-by approves nobody; /approve and /merge in
                a reply do not run;
            (f) the unverified sender hears back: one private notice in
                his own mailbox, none to the others, none on the list.
  acks      the same verified maintainer acks the cover letter
            and two patches; the forge commits the first approval but
            answers 5xx to it (and to the client's retries), so the daemon
            retries the mail later: GitLab answers a second approval by
            the same user with 401, yet there is one approval and no
            comment claiming a refusal.
  outage    the forge is down while `run --foreground` runs: it refuses
            connections for PB_OUTAGE_SECONDS (default 20), then answers
            503; replies sent meanwhile are accepted by the list and
            spooled, nothing is applied or dead-lettered during the
            outage, and after the forge returns every reply's action
            exists exactly once.  The retry bounds are short ([inbound]
            retry_base = retry_max = 1s, one forge try per attempt) and
            the forge comes back only once every reply went through
            OUTAGE_MIN_ROUNDS retry rounds: to the daemon that is as long
            an outage as hours are with the default bounds (30 s
            doubling to 1 h), in seconds, on a fast or a loaded machine.
  export    the series, list replies through the
            milter, and a forge comment mailed back make one conversation;
            `patchbridge export --mbox --public-inbox` writes it; the mbox
            holds every mail of the list archive once, oldest first, and
            `git mailsplit` splits it; the public-inbox output, imported with
            public-inbox-init -V2 + public-inbox-index, finds every message,
            answers a search, and threads them all under the cover letter.
  forged    a maintainer whose domain does not verify acks with a forged
            Authentication-Results field claiming the trusted id, in every
            form of tests/data/authres/forged.txt (comments, quoting,
            folding, case), through Postfix without header_checks: the
            milter removes each before delivery, the list copy carries only
            the verifier's two fields, nobody is approved, and each comment
            says the field was ignored; a verified maintainer's ack in the
            same run approves.
  renamed   the project is moved to another group and renamed between
            replies and between revisions, and a new project takes its
            old path over: replies after it are applied
            (comments, an approval) with no dead letter and no write
            refused as moved, v2 and v3 are mailed, a webhook naming the
            new path is recognised by the project's id, and the log,
            `status` and `check-config --forge` tell the operator to
            change the configured path; once the section is renamed as
            told, the state follows it (logged once): nothing is mailed
            again, replies spooled before and after the restart are
            applied, and the rename is no longer reported; a third
            name with state of the same project is not merged, and the
            log, `status` and `check-config --forge` say so.
  year      a year in an afternoon: on one MR, the simulator's clock
            moved over a year, replies keep arriving (comments, answers
            to an inline comment, acks, a NAK) while the bot's token
            expires and is replaced in its file (the replies wait and are
            applied with no command), the project is renamed, the MR is
            pushed four times (one a pure rebase, acked at the rebased
            head), its discussion is locked (the replies meanwhile are
            recorded as not posted, counted apart) and unlocked, and it is
            merged; then more replies.  Printed: replies sent and
            applied, dead letters, answers that split from their diff
            thread, notes blaming a reviewer's rights (each must be 0),
            and what the operator was told, with the simulated date.

  submission  a 5-patch topic of this repository's own history sent with
            git send-email becomes one merge request with the originals'
            commits; a verified maintainer's Reviewed-by on 3/5
            approves it.  v2 (3/5 changed, git send-email
            --in-reply-to=<v1 cover>) updates the same merge request,
            which then has two versions; on v2 3/5 a Reviewed-by
            approves again (approvals reset on push) and an inline
            comment is a diff note at its file:line of v2; a diff note
            on the forge is mailed in reply to the sender's v2 4/5, and
            the merge's "applied" in reply to the v2 cover letter.

Exit status: 0 pass, 1 fail, 77 skipped (not root, no Postfix, no
libmilter build).
"""

import argparse
import datetime
import email
import email.utils
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tools"))
import authres_forms  # noqa: E402
import bedlib  # noqa: E402
from bedlib import (Fail, bound, check, patch_body, quote,  # noqa: E402
                    reply, say, sim, the_mr, wait_for)

NAK_LABEL = "Acks::NACKed"


def sim_up():
    try:
        sim("GET", "/_sim/health", timeout=3)
        return True
    except (OSError, Fail):
        return False


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
        # A maintainer too, but his domain's mail does not verify.
        {"username": "ned", "name": "Ned Maintainer",
         "email": "ned@corp.example", "public_email": "ned@corp.example"},
        # An administrator, so that its token may approve through Sudo.
        {"username": "patchbridge", "name": "patchbridge",
         "email": "bridge@example.org", "admin": True},
    ],
    "tokens": [{"token": "bridge-token", "user": "patchbridge",
                "scopes": ["api", "sudo"]}],
    "projects": [{
        "path": "group/project", "default_branch": "main",
        "members": {"alice": "developer", "mary": "maintainer",
                    "rob": "developer", "ned": "maintainer",
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
  - &ned
    name: Ned Maintainer
    email: ned@corp.example
    gluser: ned
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
      - *ned
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


# Patch 1 is the only one touching src/counter.c, and it shifts lines, so
# that a context line has different old and new numbers.
SERIES = [
    commit("counter: count by a step", "Let callers choose the step.",
           {"src/counter.c": "#include \"counter.h\"\n#include <limits.h>\n"
            "\nint count(int n, int step)\n{\n\treturn n + step;\n}\n",
            "src/counter.h": "int count(int n, int step);\n"}),
    commit("counter: add a reset", "Callers want to start again.",
           {"src/reset.c": "#include \"counter.h\"\n\nint reset(void)\n"
            "{\n\treturn 0;\n}\n"}),
    commit("docs: describe the step", "Keep the manual in line.",
           {"docs/counter.txt": "count(n, step) returns n + step.\n"}),
]


# --- the list server and the bridge ----------------------------------------

class Bed(bedlib.Bed):
    def __init__(self, args, name):
        self.bin = os.path.abspath(args.bin)
        super().__init__(os.path.join(args.work, "inbound-" + name),
                         self.exe("bridge", "patchbridge"))

    def exe(self, *parts):
        return os.path.join(self.bin, *parts)

    def log_text(self):
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()


def start(bed, inbound_extra="", seed=None, forge_retries=2, mailboxes=()):
    """The milters, the list server (mailboxes: addresses with a Maildir
    of their own, bedlib's start_postfix()); the MR mailed as a
    series."""
    sim("POST", "/_sim/reset", {"seed": seed or SEED})
    sockdir = bed.sockets()
    vsock = os.path.join(sockdir, "verifier.sock")
    msock = os.path.join(sockdir, "patchbridge.sock")
    bed.env["PORT"] = str(bedlib.free_port())
    bedlib.write_config(bed, msock, OWNERS, inbound="nak_label = %s\n%s" %
                        (NAK_LABEL, inbound_extra),
                        forge_retries=forge_retries)
    bed.pb("check-config")
    bed.start_verifier(bed.exe("tests", "postfix", "test_milter"), vsock)
    bed.start_milter(bed.exe("milter", "patchbridge-milter"), msock)
    bed.start_postfix("--port", bed.env["PORT"], "--milter",
                      "unix:%s, unix:%s" % (vsock, msock),
                      mailboxes=mailboxes)

    made = sim("POST", "/_sim/projects/1/commits",
               {"branch": "step", "start": "main", "commits": SERIES})
    sim("POST", "/_sim/projects/1/merge_requests",
        {"source_branch": "step", "target_branch": "main",
         "title": "counter: count by a step",
         "description": "Callers want to count by more than one.",
         "author": "alice", "reviewers": ["mary", "rob"]})
    say(bed.pb("send", "group/project!1").strip())
    bed.wait_mail(4)
    bed.settle()
    series = [m for m in bed.archive() if "PATCH" in m["Subject"]]
    check(len(series) == 4, "expected a cover letter and 3 patches, got %d"
          % len(series))
    patches = {}
    for m in series:
        k = re.search(r" (\d)/3\]", m["Subject"])
        check(k, "unexpected subject %s" % m["Subject"])
        patches[int(k.group(1))] = m
    say("series in the archive: %s" %
        ", ".join(patches[k]["Subject"] for k in sorted(patches)))
    return patches, made


# --- mail -----------------------------------------------------------------

def file_diff(msg, path):
    """The mailed diff of PATH: its lines, and for each diff line
    (kind, old_line, new_line) computed from the hunk headers."""
    lines = patch_body(msg).splitlines()
    start = next(i for i, l in enumerate(lines)
                 if l == "diff --git a/%s b/%s" % (path, path))
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].startswith("diff --git ") or lines[i] == "-- "),
               len(lines))
    part = lines[start:end]
    numbers = []
    old = new = None
    for l in part:
        h = re.match(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", l)
        if h:
            old, new = int(h.group(1)), int(h.group(2))
            numbers.append(("hunk", None, None))
        elif old is None:
            numbers.append(("header", None, None))
        elif l.startswith("+"):
            numbers.append(("added", None, new))
            new += 1
        elif l.startswith("-"):
            numbers.append(("removed", old, None))
            old += 1
        else:
            numbers.append(("context", old, new))
            old += 1
            new += 1
    return part, numbers


# --- the forge's state ------------------------------------------------------

def user_notes(mr):
    """(discussion, note, body unescaped) of every non-system note."""
    out = []
    for d in mr["discussions"]:
        for n in d["notes"]:
            if not n.get("system"):
                out.append((d, n, html.unescape(n["body"])))
    return out


def approvers(mr):
    return sorted(a["user"] for a in mr["approvals"])


def notes_with(mr, text):
    return [(d, n, b) for d, n, b in user_notes(mr) if text in b]


def one_note(mr, text, what):
    found = notes_with(mr, text)
    check(len(found) == 1, "%s: %d notes carry %r (want 1)" %
          (what, len(found), text))
    return found[0]


def footer_ok(body, name, k, verified):
    pat = r"\u2014 %s.* via email, on v1 %d/3 \((DKIM|DMARC) verified\)" % (
        re.escape(name), k) if verified else \
        r"\u2014 %s.* via email, on v1 %d/3 \(not verified" % (
            re.escape(name), k)
    return re.search(pat, body) is not None


# --- scenario: replies --------------------------------------------------------

MARY = "Mary Maintainer <mary@kernel.example>"
ROB = "Rob Reviewer <rob@review.example>"
NED = "Ned Maintainer <ned@corp.example>"
ALICE = "Alice Author <alice@example.com>"


def inline_review(patch):
    """Rob's inline review of patch 1's src/counter.c: a comment after a
    removed, a context and an added line.  Returns the body and, per
    comment, its text and the expected (old_line, new_line)."""
    part, nums = file_diff(patch, "src/counter.c")

    def at(kind, text):
        return next(i for i, l in enumerate(part)
                    if nums[i][0] == kind and l[1:] == text)

    removed = at("removed", "int count(int n)")
    context = at("context", "{")
    added = at("added", "\treturn n + step;")
    check(removed < context < added, "unexpected diff layout:\n" +
          "\n".join(part))
    texts = ["INLINE-REMOVED: the old one-argument signature had callers "
             "in tree.",
             "INLINE-CONTEXT: the brace stays; fine.",
             "INLINE-ADDED: step may overflow n here."]
    body = "Comments inline.\n\n"
    prev = 0
    for cut, text in zip((removed, context, added), texts):
        body += quote("\n".join(part[prev:cut + 1])) + "\n" + text + "\n\n"
        prev = cut + 1
    body += "Thanks.\n"
    expect = [(texts[0], nums[removed][1:]), (texts[1], nums[context][1:]),
              (texts[2], nums[added][1:])]
    for text, (o, n) in expect:
        say("expect %s at src/counter.c old_line=%s new_line=%s" %
            (text.split(":")[0], o, n))
    return body, expect


def check_diffnotes(mr, expect, head_sha):
    for text, (old, new) in expect:
        d, n, b = one_note(mr, text, "inline comment")
        pos = n.get("position")
        check(pos, "%s is not a DiffNote: %s" % (text, b[:200]))
        check(pos.get("new_path") == "src/counter.c",
              "%s on %s" % (text, pos.get("new_path")))
        check((pos.get("old_line"), pos.get("new_line")) == (old, new),
              "%s at old_line=%s new_line=%s, expected %s/%s" %
              (text, pos.get("old_line"), pos.get("new_line"), old, new))
        check(pos.get("head_sha") == head_sha,
              "%s not on the mailed version (head %s, want %s)" %
              (text, pos.get("head_sha"), head_sha))


def scenario_replies(bed):
    patches, made = start(bed, mailboxes=("ned@corp.example",
                                          "rob@review.example",
                                          "mary@kernel.example"))
    head = made["head"] if "head" in made else made["shas"][-1]

    say("round 1: comments, inline review, acks, a quoted ack, quick "
        "actions")
    sent = 4
    # (a) one reply per patch, plus (b) inline on patch 1.
    inline, expect = inline_review(patches[1])
    raw, _ = reply(patches[1], ROB, inline)
    bed.send(raw, "rob@review.example")
    # (c) a verified maintainer acks patch 2.
    raw, _ = reply(patches[2], MARY,
                   quote("\n".join(patch_body(patches[2]).splitlines()[:6]))
                   + "\nACK-TEXT-MARY: reset is obviously right.\n\n"
                   "Acked-by: " + MARY + "\n")
    bed.send(raw, "mary@kernel.example")
    # (c) the same from a maintainer whose domain does not verify.
    raw, ned_id = reply(patches[2], NED, "ACK-TEXT-NED: reset is obviously "
                        "right.\n\nAcked-by: " + NED + "\n")
    bed.send(raw, "ned@corp.example")
    # (e) a quoted Acked-by and quick actions, from a verified reviewer.
    raw, _ = reply(patches[3], ROB,
                   "> Acked-by: " + ROB + "\n>\n"
                   "QUOTED-ACK-TEXT: I would ack this once the manual "
                   "names the header.\n/approve\n/merge\n")
    bed.send(raw, "rob@review.example")
    sent += 4
    bed.wait_mail(sent)
    bed.settle()
    for m in bed.archive():
        if m["Subject"].startswith("Re:"):
            say("archive: %-45s X-Patchbridge: %s" %
                (m["Subject"][:45], m.get("X-Patchbridge", "-")))
            check(m.get("X-Patchbridge"), "a reply was not read by the "
                  "milter: %s" % m["Subject"])

    bed.pb("run", "--once", ok=(0,))
    mr = the_mr()
    for d, n, b in user_notes(mr):
        pos = n.get("position") or {}
        say("note by %s%s: %s" % (
            n["author"], " at %s old=%s new=%s" % (
                pos.get("new_path"), pos.get("old_line"),
                pos.get("new_line")) if pos else "",
            " | ".join(l for l in b.splitlines()
                       if l.strip() and not l.startswith("<!--"))[:160]))
    say("approved by: %s; labels: %s; state: %s" %
        (approvers(mr), mr["labels"], mr["state"]))

    # (a) a discussion per replied patch with the text and the footer.
    for k, text, name, verified in (
            (1, "Comments inline.", "Rob Reviewer", True),
            (2, "ACK-TEXT-MARY", "Mary Maintainer", True),
            (2, "ACK-TEXT-NED", "Ned Maintainer", False),
            (3, "QUOTED-ACK-TEXT", "Rob Reviewer", True)):
        d, n, b = one_note(mr, text, "the comment on patch %d" % k)
        check(footer_ok(b, name, k, verified),
              "patch %d: no footer for %s (%s) in:\n%s" %
              (k, name, "verified" if verified else "unverified", b))
        check(n["author"] == "patchbridge",
              "the comment is posted as %s" % n["author"])
    say("(a) ok: a discussion per replied patch, with text and footer")

    # (b) DiffNotes at the exact lines of the mailed version.
    check_diffnotes(mr, expect, head)
    say("(b) ok: DiffNotes on the removed, context and added lines")

    # (c) Mary approved; Ned did not, and his comment says why.
    apr = approvers(mr)
    check("mary" in apr, "Mary's verified Acked-by did not approve")
    check("ned" not in apr, "Ned's unverified Acked-by approved")
    _, _, b = one_note(mr, "ACK-TEXT-NED", "Ned's comment")
    check("not honoured" in b and "not verified" in b,
          "Ned's comment does not say why the ack was not honoured:\n" + b)
    say("(c) ok: verified ack approved as mary; unverified one refused "
        "with the reason")

    # (e) a quoted ack approves nobody; /approve and /merge did not run.
    check(apr == ["mary"], "approvals after round 1: %s (want mary only)"
          % apr)
    check(mr["state"] == "opened", "the MR is %s: /merge ran" % mr["state"])
    _, _, b = one_note(mr, "QUOTED-ACK-TEXT", "Rob's quick actions")
    check(not re.search(r"^/(approve|merge)", b, re.M),
          "a quick action line survived unescaped:\n" + b)
    check("approve" in b and "merge" in b,
          "the /approve and /merge lines were dropped from the comment")
    say("(e) ok: quoted ack and /approve, /merge did nothing")
    notices(bed, ned_id)

    say("round 2: Mary NAKs patch 2")
    raw, _ = reply(patches[2], MARY,
                   "NAK-REASON: the step must be unsigned; a negative step "
                   "is a caller bug.\n\nNacked-by: " + MARY + "\n")
    bed.send(raw, "mary@kernel.example")
    sent += 1
    bed.wait_mail(sent)
    bed.settle()
    bed.pb("run", "--once", ok=(0,))
    mr = the_mr()
    say("approved by: %s; labels: %s" % (approvers(mr), mr["labels"]))
    check(NAK_LABEL in mr["labels"], "no %s label: %s" %
          (NAK_LABEL, mr["labels"]))
    naks = notes_with(mr, "the step must be unsigned")
    check(naks, "no discussion quotes the NAK's reason")
    # Resolvable (a thread, not an individual note) and not resolved.
    check(any(n.get("type") in ("DiscussionNote", "DiffNote") and
              not d.get("individual_note") and not n.get("resolved")
              for d, n, b in naks),
          "the NAK's discussion is not an unresolved thread: %s" %
          [(n.get("type"), d.get("individual_note"), n.get("resolved"))
           for d, n, b in naks])
    check("mary" not in approvers(mr), "Mary's approval was not withdrawn")
    check(mr["state"] == "opened", "the MR is %s" % mr["state"])
    say("(d) ok: label, unresolved discussion, approval withdrawn")

    # Applied once: another run changes nothing.
    count = len(user_notes(mr))
    bed.pb("run", "--once", ok=(0,))
    check(len(user_notes(the_mr())) == count, "a second run posted again")
    status = bed.pb("status")
    check(re.search(r"inbound replies: 5 applied", status),
          "status: " + status)


def notices(bed, ned_id):
    """(f) Ned, whose ack did not count (unverified), hears back once,
    privately (README "Notices to senders"), in his own mailbox; Mary,
    whose ack counted, and Rob, who only quoted one, do not; the list
    never."""
    def delivered():
        bed.pb("run", "--once", ok=(0,))
        bed.settle()
        return bed.mailbox("ned@corp.example")
    wait_for(delivered, 60, "the notice did not reach Ned")
    ned = bed.mailbox("ned@corp.example")
    check(len(ned) == 1, "Ned got %d mails, want one notice" % len(ned))
    n = ned[0]
    body = " ".join(n.get_content().split())
    say("Ned's mailbox: \"%s\": %s" % (n["Subject"], body[:150]))
    check([a.addr_spec for a in n["To"].addresses] == ["ned@corp.example"]
          and not n["Cc"], "Ned's notice is not to Ned alone")
    check(n["In-Reply-To"] == "<%s>" % ned_id,
          "Ned's notice answers %s" % n["In-Reply-To"])
    check(ned_id in n["References"], "Ned's notice has no References")
    check(n["Auto-Submitted"] == "auto-replied",
          "Ned's notice is not Auto-Submitted: auto-replied")
    check("not verified" in body and "DKIM signs" in body,
          "Ned's notice does not say why and what to do: " + body)
    check(not bed.mailbox("rob@review.example"),
          "Rob, who quoted an ack, got a notice")
    check(not bed.mailbox("mary@kernel.example"),
          "Mary, whose ack counted, got a notice")
    check(not any(m.get("X-Patchbridge-Origin") == "notice"
                  for m in bed.archive()), "a notice reached the list")
    bed.pb("run", "--once", ok=(0,))
    bed.settle()
    check(len(bed.mailbox("ned@corp.example")) == 1,
          "Ned's notice was mailed again")
    say("(f) ok: Ned told privately, once; Mary, Rob and the list not")


# --- scenario: outage -----------------------------------------------------------

DEAD = re.compile(r"^\s+<[^>]*> dead\b", re.M)


def applied_count(status):
    m = re.search(r"inbound replies: (\d+) applied", status)
    check(m, "status has no inbound line:\n" + status)
    return int(m.group(1))


# Attempts each reply must have had before the forge comes back.
OUTAGE_MIN_ROUNDS = 10


def outage_status(bed, daemon):
    """status during the outage: nothing applied, nothing dead."""
    last = bed.pb("status")
    check(applied_count(last) == 0, "applied during the outage:\n" + last)
    check(not DEAD.search(last), "dead letter during the outage:\n" + last)
    check(daemon.poll() is None, "the daemon exited %s" % daemon.poll())
    return last


def scenario_outage(bed):
    refuse = int(os.environ.get("PB_OUTAGE_SECONDS", "20"))
    check(5 <= refuse <= 300, "PB_OUTAGE_SECONDS must be in 5..300")
    patches, made = start(bed, "retry_base = 1s\nretry_max = 1s\n"
                          "max_attempts = 1000\n", forge_retries=0)
    head = made["head"] if "head" in made else made["shas"][-1]
    daemon = bed.spawn([bed.exe("bridge", "patchbridge"), "-c", bed.cfg,
                        "run", "--foreground"], "daemon.log")
    time.sleep(2)
    check(daemon.poll() is None, "the daemon exited %s" % daemon.poll())

    # The outage: the API answers 503 (GitLab's front end with its
    # backends down) until the end of the scenario, and for the first
    # `refuse` seconds nothing even listens (the host down).  The 503s
    # come first, so no request slips through when the refusal ends.
    sim("POST", "/_sim/faults", {"kind": "error", "status": 503,
                                 "path": "^/api/v4/", "count": 1000000})
    say("the forge is down: connections refused for %d s, then 503" %
        refuse)
    sim("POST", "/_sim/faults/refuse", {"seconds": refuse})
    t_down = time.monotonic()
    check(not sim_up(), "the forge still answers")

    inline, expect = inline_review(patches[1])
    mails = [
        (reply(patches[1], ROB, inline)[0], "rob@review.example"),
        (reply(patches[2], MARY, "OUTAGE-ACK: fine by me.\n\nAcked-by: " +
               MARY + "\n")[0], "mary@kernel.example"),
        (reply(patches[3], ROB, "OUTAGE-COMMENT: the manual reads "
               "well.\n")[0], "rob@review.example"),
        (reply(patches[2], NED, "OUTAGE-NED: me too.\n\nAcked-by: " + NED +
               "\n")[0], "ned@corp.example"),
    ]
    for raw, sender in mails:
        bed.send(raw, sender)
    bed.wait_mail(4 + len(mails))
    bed.settle()
    say("%d replies accepted by the list during the outage (%.1f s)" %
        (len(mails), time.monotonic() - t_down))
    spooled = [m for m in bed.archive() if m["Subject"].startswith("Re:")]
    check(all(m.get("X-Patchbridge") for m in spooled),
          "a reply has no X-Patchbridge header")

    # Until every reply went through OUTAGE_MIN_ROUNDS retry rounds, and
    # the refusal is over: nothing applied, nothing dead.
    while True:
        last = outage_status(bed, daemon)
        waiting = re.findall(r"^\s+<[^>]*> (\w+).*?(\d+) attempt", last,
                             re.M)
        rounds = min([int(n) for _, n in waiting] or [0])
        if len(waiting) == len(mails) and rounds >= OUTAGE_MIN_ROUNDS \
                and sim_up():
            break
        check(time.monotonic() - t_down < refuse + 240,
              "after %.0f s, the replies went through %d retry rounds, "
              "want %d:\n%s" % (time.monotonic() - t_down, rounds,
                                 OUTAGE_MIN_ROUNDS, last))
        time.sleep(1)
    say("after %.0f s down: %s" % (time.monotonic() - t_down, waiting))
    check(not os.listdir(os.path.join(bed.work, "spool", "dead"))
          if os.path.isdir(os.path.join(bed.work, "spool", "dead"))
          else True, "a spool record went to dead/")

    sim("DELETE", "/_sim/faults")
    t_up = time.monotonic()
    say("the forge is back after %.0f s" % (t_up - t_down))

    texts = ["Comments inline.", "OUTAGE-ACK", "OUTAGE-COMMENT",
             "OUTAGE-NED"] + [t for t, _ in expect]
    while True:
        mr = the_mr()
        have = {t: len(notes_with(mr, t)) for t in texts}
        if all(have.values()) and "mary" in approvers(mr):
            break
        check(time.monotonic() - t_up < 120,
              "not all applied 120 s after the forge returned: %s, "
              "approvals %s" % (have, approvers(mr)))
        time.sleep(1)
    say("all replies applied %.0f s after the forge returned" %
        (time.monotonic() - t_up))
    time.sleep(6)  # one more scan: nothing may be posted twice
    mr = the_mr()
    for t in texts:
        one_note(mr, t, "after the outage")
    check_diffnotes(mr, expect, head)
    check(approvers(mr) == ["mary"], "approvals: %s" % approvers(mr))
    status = bed.pb("status")
    check(applied_count(status) == len(mails), "status:\n" + status)
    check(not DEAD.search(status), "dead letters:\n" + status)
    say("exactly once; status: %s" %
        re.search(r"inbound replies:.*", status).group(0))

    daemon.send_signal(signal.SIGTERM)
    try:
        rc = daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise Fail("the daemon did not stop on SIGTERM")
    check(rc == 0, "the daemon exited %d on SIGTERM" % rc)


# --- scenario: export ----------------------------------------------------------

PI_QUERY = r"""
use strict; use warnings;
use PublicInbox::Config;
my ($name, $cover, $word) = @ARGV;
my $ibx = PublicInbox::Config->new->lookup_name($name) or die "no inbox\n";
my $over = $ibx->over or die "no overview db\n";
for my $smsg (@{$over->recent({ limit => 1000 })}) {
    print "mid $smsg->{mid}\n";
}
for my $smsg (@{$over->get_thread($cover)}) {
    print "thread $smsg->{mid}\n";
}
my $mset = $ibx->isrch->mset("b:$word");
for my $mi ($mset->items) {
    my $smsg = $over->get_art($mi->get_docid) or next;
    print "hit $smsg->{mid}\n";
}
"""


def mid_of(m):
    return (m["Message-ID"] or "").strip().strip("<>")


def scenario_export(bed):
    import mailbox
    seed = json.loads(json.dumps(SEED))
    seed["tokens"].append({"token": "rob-token", "user": "rob",
                           "scopes": ["api"]})
    patches, _ = start(bed, seed=seed)
    inline, _ = inline_review(patches[1])
    raw, _ = reply(patches[1], ROB, inline)
    bed.send(raw, "rob@review.example")
    # A line starting "From " must survive the mbox (mboxrd quoting).
    raw, _ = reply(patches[2], MARY, "EXPORT-WORD-ZEBRA: fine by me.\n"
                   "From what I see the reset is right.\n\n"
                   "Acked-by: " + MARY + "\n")
    bed.send(raw, "mary@kernel.example")
    bed.wait_mail(6)
    bed.settle()
    bed.pb("run", "--once", ok=(0,))
    # A comment made on the forge, mailed to the list by the next run.
    sim("POST", "/api/v4/projects/group%2Fproject/merge_requests/1/notes",
        {"body": "FORGE-SIDE: looks good to me too."}, token="rob-token",
        ok=(201,))
    bed.pb("run", "--once", ok=(0,))
    bed.wait_mail(7)
    bed.settle()
    archive = bed.archive()
    want = [mid_of(m) for m in archive]
    check(any(m.get("X-Patchbridge-Origin") == "forge" for m in archive),
          "the forge comment did not reach the list")
    say("the list archive holds %d mails" % len(want))

    mbox = os.path.join(bed.work, "export.mbox")
    pidir = os.path.join(bed.work, "inbox")
    out = bed.pb("export", "--mbox", mbox, "--public-inbox", pidir,
                 "group/project!1")
    say(out.strip())
    got = [mid_of(m) for m in mailbox.mbox(mbox)]
    check(sorted(got) == sorted(want) and len(set(got)) == len(got),
          "the mbox holds %s, the list archive %s" % (got, want))
    dates = [email.utils.parsedate_to_datetime(m["Date"]).timestamp()
             for m in mailbox.mbox(mbox)]
    check(dates == sorted(dates), "the mbox is not in date order")
    split = os.path.join(bed.work, "split")
    os.makedirs(split)
    n = subprocess.run(["git", "mailsplit", "-o" + split, mbox],
                       capture_output=True, text=True, check=True)
    check(n.stdout.strip() == str(len(want)),
          "git mailsplit found %s mails" % n.stdout.strip())
    say("mbox ok: every mail once, in date order; git mailsplit: %s"
        % n.stdout.strip())
    # b4 collects the series and Mary's ack from the replies (from
    # standard input: see tests/outbound/b4_am.sh on b4 0.12's -m FILE).
    b4home = os.path.join(bed.work, "b4home")
    b4out = os.path.join(bed.work, "b4out")
    os.makedirs(b4home)
    os.makedirs(b4out)
    b4env = dict(os.environ, HOME=b4home, GIT_CONFIG_NOSYSTEM="1",
                 LC_ALL="C.UTF-8", XDG_CACHE_HOME=b4home,
                 XDG_DATA_HOME=b4home, GIT_AUTHOR_NAME="B4 Tester",
                 GIT_AUTHOR_EMAIL="b4@example.org",
                 GIT_COMMITTER_NAME="B4 Tester",
                 GIT_COMMITTER_EMAIL="b4@example.org")
    for k, v in (("user.name", "B4 Tester"), ("user.email",
                                               "b4@example.org")):
        subprocess.run(["git", "config", "--global", k, v], env=b4env,
                       check=True)
    with open(mbox, "rb") as f:
        r = subprocess.run(["b4", "am", "-m", "-", "-o", b4out], stdin=f,
                           env=b4env, cwd=bed.work, capture_output=True,
                           text=True, timeout=120)
    check(r.returncode == 0 and "Total patches: 3" in r.stdout + r.stderr,
          "b4 am on the export: %s" % (r.stdout + r.stderr)[-1200:])
    mbx = [os.path.join(b4out, x) for x in os.listdir(b4out)
           if x.endswith(".mbx")]
    check(len(mbx) == 1, "b4 wrote %s" % os.listdir(b4out))
    with open(mbx[0], encoding="utf-8", errors="replace") as f:
        check("Acked-by: " + MARY in f.read(),
              "b4 did not collect Mary's Acked-by from the export")
    say("b4 am on the export: 3 patches, Mary's Acked-by collected")
    # Standard output gives the same bytes; an MR with nothing archived
    # and a used directory are refused, and leave no file behind.
    with open(mbox, "rb") as f:
        check(bed.pb("export", "--mbox", "-", "group/project!1").encode()
              == f.read(), "--mbox - differs from --mbox FILE")
    bed.pb("export", "--mbox", mbox + ".none", "group/project!99",
           ok=(66,))
    bed.pb("export", "--mbox", mbox + ".used", "--public-inbox", pidir,
           "group/project!1", ok=(73,))
    check(not os.path.exists(mbox + ".none") and
          not os.path.exists(mbox + ".used") and
          not [x for x in os.listdir(bed.work) if x.startswith(".tmp.")],
          "a refused export left a file: %s" % os.listdir(bed.work))
    # A write that fails half way (standard output is /dev/full) leaves
    # no public-inbox directory behind either.
    broken = os.path.join(bed.work, "inbox-broken")
    with open("/dev/full", "wb") as full:
        r = subprocess.run([bed.exe("bridge", "patchbridge"), "-c",
                            bed.command_cfg(), "export", "--mbox", "-",
                            "--public-inbox", broken, "group/project!1"],
                           stdout=full, stderr=subprocess.PIPE, text=True,
                           timeout=60)
    check(r.returncode == 73 and not os.path.exists(broken),
          "a failed export: exit %d, %s left: %s" %
          (r.returncode, broken, r.stderr[-300:]))

    if not shutil.which("public-inbox-index"):
        raise Fail("public-inbox is not installed (scripts/install-deps.sh)")
    cover = mid_of(next(m for m in archive
                        if re.search(r" 0/3\]", m["Subject"])))
    out = bedlib.public_inbox(bed.work, "mr1", pidir, PI_QUERY, "mr1", cover,
                              "EXPORT-WORD-ZEBRA")
    rows = [l.split(" ", 1) for l in out.splitlines()]
    indexed = [v for k, v in rows if k == "mid"]
    thread = [v for k, v in rows if k == "thread"]
    hits = [v for k, v in rows if k == "hit"]
    check(sorted(indexed) == sorted(want),
          "public-inbox indexed %s, want %s" % (indexed, want))
    check(sorted(thread) == sorted(want),
          "the thread of the cover letter holds %s, want %s" %
          (thread, want))
    mary = [mid_of(m) for m in archive
            if "EXPORT-WORD-ZEBRA" in m.raw.decode("utf-8", "replace")]
    check(hits == mary, "searching b:EXPORT-WORD-ZEBRA found %s, want %s"
          % (hits, mary))
    say("public-inbox ok: %d messages indexed, one thread under the cover "
        "letter, search finds Mary's reply" % len(indexed))


# --- scenario: acks --------------------------------------------------------

def scenario_acks(bed):
    patches, _ = start(bed, "retry_base = 1s\nretry_max = 2s\n")
    say("mary acks the cover letter and patches 1 and 2")
    for k in (0, 1, 2):
        raw, _ = reply(patches[k], MARY, "ACKS-%d: fine by me.\n\n"
                       "Acked-by: %s\n" % (k, MARY))
        bed.send(raw, "mary@kernel.example")
    bed.wait_mail(7)
    bed.settle()
    say("the forge commits the first approval, then answers 502 to it and "
        "to the client's two retries")
    sim("POST", "/_sim/faults", {"kind": "error_after_commit",
                                 "status": 502, "path": "/approve$",
                                 "count": 3})
    out = bed.pb_run(["run", "--once"])
    check(out.returncode == 75, "run --once: %d, expected 75 (a reply "
          "waits for its retry)" % out.returncode)
    mr = the_mr()
    check(approvers(mr) == ["mary"], "approvals after the 5xx: %s" %
          approvers(mr))
    say("the daemon retries the reply that met the 5xx")
    deadline = time.monotonic() + bound(10)
    while True:
        time.sleep(0.5)
        out = bed.pb_run(["run", "--once"])
        if out.returncode == 0 or time.monotonic() > deadline:
            break
    check(out.returncode == 0, "the retry did not finish: %d" %
          out.returncode)
    mr = the_mr()
    check(approvers(mr) == ["mary"], "want one approval by mary, got %s" %
          approvers(mr))
    for k in (0, 1, 2):
        one_note(mr, "ACKS-%d" % k, "the comment of ack %d" % k)
    for _, n, b in user_notes(mr):
        check("was not recorded" not in b and "did not accept" not in b,
              "a comment claims a refusal:\n" + b)
    log = sim("GET", "/_sim/requests")
    posts = [r for r in log if r["method"] == "POST" and
             r["path"].endswith("/approve")]
    say("POST .../approve: %s" % [(r["status"], r["fault"]) for r in posts])
    check(len(posts) == 3, "approve was POSTed %d times, not 3 (the state "
          "said it stood afterwards)" % len(posts))
    status = bed.pb("status")
    check("3 applied" in status, "status:\n" + status)


# --- scenario: forged -------------------------------------------------------

WHY_FORGED = ("not honoured as an approval: the sender is not verified (no "
              "DKIM or DMARC pass from %s; 1 Authentication-Results field "
              "claiming %s was not added by its verifier and was ignored)"
              % (bedlib.AUTHSERV, bedlib.AUTHSERV))


def scenario_forged(bed):
    patches, _ = start(bed)
    forms = authres_forms.forms()
    check(len(forms) >= 10, "only %d forged forms" % len(forms))
    say("Ned (corp.example does not verify) acks patch 2 %d times, each "
        "mail with a forged field claiming %s on top of its header" %
        (len(forms), bedlib.AUTHSERV))
    for n, what, value in forms:
        raw, _ = reply(patches[2], NED, "FORGED-%d: %s.\n\nAcked-by: %s\n" %
                       (n, what, NED))
        bed.send("Authentication-Results: " + value + "\n" + raw,
                 "ned@corp.example")
    raw, _ = reply(patches[2], MARY, "CONTROL-MARY: verified.\n\n"
                   "Acked-by: " + MARY + "\n")
    bed.send(raw, "mary@kernel.example")
    bed.wait_mail(4 + len(forms) + 1)
    bed.settle()

    seen = 0
    for m in bed.archive():
        body = m.raw.decode("utf-8", "replace")
        k = re.search(r"FORGED-(\d+):", body)
        if not k:
            continue
        seen += 1
        fields = [str(v) for v in m.get_all("Authentication-Results", [])]
        ours = [v for v in fields if bedlib.AUTHSERV in v.lower() or
                "lists" in v.lower()]
        check(len(ours) == 2 and all("=pass" not in v for v in ours),
              "form %s: the list copy carries %s" % (k.group(1), fields))
        xpb = m.get("X-Patchbridge", "")
        check("auth=unverified" in xpb,
              "form %s: X-Patchbridge: %s" % (k.group(1), xpb))
    check(seen == len(forms), "%d of %d forged replies in the archive" %
          (seen, len(forms)))
    say("the list copies: each forged field removed by the milter, only "
        "the verifier's two left; X-Patchbridge auth=unverified")

    bed.pb("run", "--once", ok=(0,))
    mr = the_mr()
    apr = approvers(mr)
    check("ned" not in apr, "a forged field approved as ned: %s" % apr)
    check("mary" in apr, "the verified control did not approve: %s" % apr)
    for n, what, _ in forms:
        _, _, b = one_note(mr, "FORGED-%d:" % n, "form %d" % n)
        check(WHY_FORGED in b, "form %d (%s): the comment does not say "
              "why:\n%s" % (n, what, b))
    say("no approval from any form, each comment says the forged field "
        "was ignored; the verified control approved as mary")


# --- scenario: renamed -----------------------------------------------------

NEW_PATH = "counting/counter"
MOVED = ('project group/project was renamed to %s: change [project '
         '"group/project"] to [project "%s"] in the configuration' %
         (NEW_PATH, NEW_PATH))


def dead_letters(bed):
    return DEAD.findall(bed.pb("status"))


def wait_log(bed, text, proc, timeout=30):
    deadline = time.monotonic() + bound(timeout)
    while time.monotonic() < deadline:
        if text in bed.log_text():
            return
        check(proc.poll() is None, "the daemon exited %s" % proc.poll())
        time.sleep(0.1)
    raise Fail("no log line %r" % text)


def send_all(bed, mails):
    """Submit each (raw, sender) to the list; wait until it is archived."""
    n = len(bed.archive())
    for raw, sender in mails:
        bed.send(raw, sender)
    bed.wait_mail(n + len(mails))
    bed.settle()


def wait_series(bed, rev, count, timeout=60):
    """The mails of revision rev once count of them are archived."""
    deadline = time.monotonic() + bound(timeout)
    while True:
        got = [m for m in bed.archive()
               if re.search(r"\[PATCH v%d \d+/\d+\]" % rev, m["Subject"])]
        if len(got) >= count or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    check(len(got) == count, "v%d mails: %s" %
          (rev, [m["Subject"] for m in got]))
    return got


def scenario_renamed(bed):
    patches, _ = start(bed)

    say("round 1, on group/project: rob comments on patch 1")
    raw, _ = reply(patches[1], ROB, "RENAMED-1: fine so far.\n")
    send_all(bed, [(raw, "rob@review.example")])
    bed.pb("run", "--once", ok=(0,))
    one_note(the_mr(), "RENAMED-1", "the comment before the rename")

    say("the project moves to another group and is renamed: %s" % NEW_PATH)
    moved = sim("POST", "/_sim/projects/1/move", {"path": NEW_PATH})
    check(moved["id"] == 1, "the project's id changed: %s" % moved["id"])

    say("round 2, after the rename: mary acks patch 2, rob NAKs nothing "
        "but comments on patch 3")
    ack, _ = reply(patches[2], MARY, "RENAMED-2: reset is right.\n\n"
                   "Acked-by: " + MARY + "\n")
    raw, _ = reply(patches[3], ROB, "RENAMED-3: the manual reads well.\n")
    send_all(bed, [(ack, "mary@kernel.example"),
                   (raw, "rob@review.example")])
    bed.pb("run", "--once", ok=(0,))
    mr = the_mr()
    one_note(mr, "RENAMED-2", "mary's comment after the rename")
    one_note(mr, "RENAMED-3", "rob's comment after the rename")
    check(approvers(mr) == ["mary"], "approvals after the rename: %s" %
          approvers(mr))
    check(not dead_letters(bed), "dead letters after the rename:\n" +
          bed.pb("status"))
    say("replies after the rename applied, by the project's id; no dead "
        "letter")

    say("the operator is told: log, status, check-config --forge")
    check(MOVED in bed.log_text(), "the log does not say: " + MOVED)
    status = bed.pb("status")
    check(MOVED in status, "status does not say it:\n" + status)
    out = bed.pb_run(["check-config", "--forge"])
    check(out.returncode == 78 and MOVED in out.stdout,
          "check-config --forge: %d\n%s" % (out.returncode, out.stdout))
    say("status: " + next(line.strip() for line in status.splitlines()
                          if MOVED in line))

    say("someone makes a new project on the old path: it takes the path "
        "over from the redirect")
    other = sim("POST", "/_sim/projects", {
        "path": "group/project", "members": {"patchbridge": "developer"}})
    check(other["id"] != 1, "the old path is still project 1")
    out = bed.pb_run(["check-config", "--forge"])
    check(out.returncode == 78 and MOVED in out.stdout,
          "check-config --forge after the takeover: %d\n%s" %
          (out.returncode, out.stdout))

    say("a new revision after the rename is mailed, from the project's "
        "repository, not the newcomer's")
    sim("POST", "/_sim/projects/1/merge_requests/1/push",
        {"commits": [commit("counter: name the step", "Say what it is.",
                            {"docs/step.txt": "the step counts.\n"})]})
    bed.pb("run", "--once", ok=(0,))
    v2 = wait_series(bed, 2, 5)

    say("a webhook names the project by its new path and its id: the "
        "daemon knows it")
    port = bedlib.free_port()
    secret = bed.write("webhook.secret", "s3cret-token\n", 0o600)
    with open(bed.cfg, "a", encoding="utf-8") as f:
        f.write("[webhook]\nenabled = yes\nlisten = 127.0.0.1:%d\n"
                "secret_file = %s\n" % (port, secret))
    log = open(bed.log, "a", encoding="utf-8")
    log.write("\n$ patchbridge run --foreground\n")
    log.flush()
    d = subprocess.Popen([bed.patchbridge, "-c", bed.cfg, "run",
                          "--foreground"], stdout=log, stderr=log)
    log.close()
    bed.procs.append(d)
    # Each start says it again, once the first poll pinned the id; the
    # spool is watched once the first round is over, after which only the
    # webhook brings the MR up (poll_interval = 1h).
    told = bed.log_text().count(MOVED)
    watching = bed.log_text().count("inbound: watching")
    deadline = time.monotonic() + bound(30)
    while bed.log_text().count(MOVED) == told or \
            bed.log_text().count("inbound: watching") == watching:
        check(d.poll() is None and time.monotonic() < deadline,
              "the daemon did not tell the rename at its start")
        time.sleep(0.1)
    url = "http://127.0.0.1:%d/hooks/gitlab" % port
    sim("POST", "/_sim/webhooks", {"project": 1, "url": url,
                                   "token": "s3cret-token"})
    sim("POST", "/_sim/projects/1/merge_requests/1/push",
        {"commits": [commit("counter: one more word", "Still counting.",
                            {"docs/step.txt": "the step counts up.\n"})]})
    sim("POST", "/_sim/webhooks/wait", {"timeout_s": 20})
    got = [x for x in sim("GET", "/_sim/webhooks/deliveries")
           if x["url"] == url]
    check(got and all(x["response_status"] == 200 for x in got),
          "deliveries: %s" % [(x["event"], x["response_status"])
                              for x in got])
    wait_log(bed, "webhook push: mailed v3", d)
    v3 = wait_series(bed, 3, 6)
    d.send_signal(signal.SIGTERM)
    check(d.wait(timeout=30) == 0, "the daemon did not stop cleanly")
    check("not a bridged project" not in bed.log_text(),
          "a webhook of the renamed project was ignored")

    say("a reply to v3 after a restart, still by the id")
    raw, _ = reply(sorted(v3, key=lambda m: m["Subject"])[1], ROB,
                   "RENAMED-4: v3 is fine.\n")
    send_all(bed, [(raw, "rob@review.example")])
    bed.pb("run", "--once", ok=(0,))
    one_note(the_mr(), "RENAMED-4", "rob's comment on v3")
    check(not dead_letters(bed), "dead letters:\n" + bed.pb("status"))
    log = sim("GET", "/_sim/requests")
    refused = [r for r in log if r["status"] == 405]
    check(not refused, "writes refused as moved: %s" %
          [(r["method"], r["path"]) for r in refused])
    say("4 replies applied, v2 and v3 mailed, the webhook recognised, "
        "no dead letter, no write refused")

    say("mary acks a v1 mail sent before the rename; then the operator "
        "renames the section as told and restarts")
    raw, mid = reply(patches[1], MARY, "RENAMED-5: still fine.\n\n"
                     "Acked-by: " + MARY + "\n")
    send_all(bed, [(raw, "mary@kernel.example")])
    with open(bed.cfg, encoding="utf-8") as f:
        text = f.read()
    with open(bed.cfg, "w", encoding="utf-8") as f:
        f.write(text.replace('[project "group/project"]',
                             '[project "%s"]' % NEW_PATH))
    series = len([m for m in bed.archive()
                  if re.search(r"\[PATCH", m["Subject"])])
    bed.pb("run", "--once", ok=(0,))
    followed = ('the state of group/project now belongs to [project '
                '"%s"]' % NEW_PATH)
    check(bed.log_text().count(followed) == 1,
          "the log does not say once: " + followed)
    bed.settle()
    again = [m["Subject"] for m in bed.archive()
             if re.search(r"\[PATCH", m["Subject"])]
    check(len(again) == series, "mailed again after the section was "
          "renamed: %s" % again[series:])
    one_note(the_mr(), "RENAMED-5", "mary's comment spooled before the "
             "section was renamed")
    why = bed.pb("why", mid)
    check("not bridged" not in why and "thread_conflict" not in why and
          "more than one merge request" not in bed.log_text(),
          "the reply spooled under the old name:\n" + why)

    say("a reply to a v1 mail after the section was renamed")
    raw, mid = reply(patches[1], ROB, "RENAMED-6: still fine.\n")
    send_all(bed, [(raw, "rob@review.example")])
    bed.pb("run", "--once", ok=(0,))
    one_note(the_mr(), "RENAMED-6", "rob's comment after the section "
             "was renamed")
    check("not bridged" not in bed.pb("why", mid),
          "the reply was not bridged")
    check(bed.log_text().count(followed) == 1,
          "the state was moved again: " + bed.log_text())
    check(not dead_letters(bed), "dead letters:\n" + bed.pb("status"))
    status = bed.pb("status")
    check(MOVED not in status and "needs the operator" not in status,
          "status after the section was renamed:\n" + status)
    out = bed.pb_run(["check-config", "--forge"])
    check(MOVED not in out.stdout,
          "check-config --forge after the section was renamed: %d\n%s" %
          (out.returncode, out.stdout))
    say("the state followed the section: nothing mailed again, the reply "
        "applied, the rename no longer reported")

    say("state kept under a third name of the same project (a run with "
        "both sections): not merged, the operator told")
    import sqlite3
    db = sqlite3.connect(os.path.join(bed.work, "state", "state.db"))
    db.executemany("INSERT INTO cursors (name, value, updated) "
                   "VALUES (?, ?, 0)",
                   [("project-id:group/older", "1"),
                    ("poll:group/older", "2020-01-01T00:00:00Z")])
    db.commit()
    db.close()
    bed.pb("run", "--once", ok=(0,))
    apart = ('the state db keeps state under both group/older and '
             '[project "%s"], the same project: it is not merged' %
             NEW_PATH)
    check(apart in bed.log_text(), "the log does not say: " + apart)
    status = bed.pb("status")
    check(apart in status, "status does not say it:\n" + status)
    out = bed.pb_run(["check-config", "--forge"])
    check(out.returncode == 78 and apart in out.stdout,
          "check-config --forge: %d\n%s" % (out.returncode, out.stdout))
    check(bed.state_cursor("poll:group/older") == "2020-01-01T00:00:00Z" and
          bed.state_cursor("project-id:%s" % NEW_PATH) == "1",
          "a state was changed")
    one_note(the_mr(), "RENAMED-6", "rob's comment, after the refusal")
    say("status: " + next(line.strip() for line in status.splitlines()
                          if apart in line))


# --- scenario: year ----------------------------------------------------------

DAY = 86400
NOT_ALLOWED = re.compile(r"not allowed|not permitted|no right|"
                         r"permission|not a member", re.I)


class Year:
    """The story's bookkeeping: what was sent, what the operator was
    told and on which simulated date."""

    def __init__(self, bed, patches):
        self.bed = bed
        self.patches = patches
        self.sent = []          # (mid, text, kind)
        self.locked = []        # mids sent while the discussion was locked
        self.told = []          # (simulated date, where, line)
        self.daemon = None

    def today(self):
        return sim("GET", "/_sim/time")["now"]

    def advance(self, days, what):
        now = sim("POST", "/_sim/time", {"advance_s": days * DAY})["now"]
        say("%s: %s" % (now[:10], what))

    def tell(self, where, line):
        self.told.append((self.today()[:10], where, line.strip()))

    def send(self, parent, frm, body, text, kind="reply"):
        raw, mid = reply(parent, frm, body)
        send_all(self.bed, [(raw, re.search(r"<(.*)>", frm).group(1))])
        self.sent.append((mid, text, kind))
        return raw, mid

    def daemon_log(self):
        path = os.path.join(self.bed.work, "daemon.log")
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def wait(self, what, cond, timeout=120):
        """Until cond() is true; the daemon must stay up."""
        timeout = bound(timeout)
        deadline = time.monotonic() + timeout
        while True:
            got = cond()
            if got:
                return got
            check(self.daemon.poll() is None, "the daemon exited %s" %
                  self.daemon.poll())
            check(time.monotonic() < deadline, "after %d s, still no %s"
                  % (timeout, what))
            time.sleep(0.2)

    def applied(self, text):
        self.wait("note %r on the forge" % text,
                  lambda: notes_with(the_mr(), text))

    def readyz(self):
        try:
            with urllib.request.urlopen(self.ready_url, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return 0, ""


def set_token(bed, name, expires):
    sim("POST", "/_sim/tokens", {"user": "patchbridge", "token": name,
                                 "scopes": ["api", "sudo"],
                                 "expires_at": expires.isoformat()})
    path = os.path.join(bed.work, "gitlab-token")
    with open(path + ".new", "w", encoding="utf-8") as f:
        f.write(name + "\n")
    os.chmod(path + ".new", 0o600)
    os.replace(path + ".new", path)
    return path


def scenario_year(bed):
    patches, _ = start(bed, "retry_base = 1s\nretry_max = 2s\n")
    y = Year(bed, patches)
    today = datetime.date.fromisoformat(y.today()[:10])
    # The bot's token was made a year ago: ten days are left of it.
    token_file = set_token(bed, "bot-last-year",
                           today + datetime.timedelta(days=10))
    port = bedlib.free_port()
    # The daemon polls as an installation does, only more often: a
    # rename is noticed by the poll, and each revision is mailed.
    with open(bed.cfg, encoding="utf-8") as f:
        conf = f.read().replace("poll_interval = 1h", "poll_interval = 5s\n"
                                "mail_rebases = no")
    with open(bed.cfg, "w", encoding="utf-8") as f:
        f.write(conf + "[metrics]\nenabled = yes\nlisten = 127.0.0.1:%d\n"
                % port)
    y.ready_url = "http://127.0.0.1:%d/readyz" % port
    metrics_url = "http://127.0.0.1:%d/metrics" % port
    sim("POST", "/_sim/tokens", {"user": "mary", "token": "mary-token",
                                 "scopes": ["api"]})

    out = bed.pb_run(["check-config", "--forge"])
    for line in out.stdout.splitlines():
        if "expires" in line:
            y.tell("check-config --forge", line)
    y.daemon = bed.spawn([bed.exe("bridge", "patchbridge"), "-c", bed.cfg,
                          "run", "--foreground"], "daemon.log")
    y.wait("ready", lambda: y.readyz()[0] == 200)
    warn = y.wait("a warning of the expiry", lambda: next(
        (l for l in y.daemon_log().splitlines() if "days left" in l), None))
    y.tell("log", warn)
    with urllib.request.urlopen(metrics_url, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("patchbridge_forge_token_expiry"):
                y.tell("/metrics", line)

    say("%s: v1 mailed; rob reviews patch 1 inline, comments on patch 3"
        % y.today()[:10])
    inline, _ = inline_review(patches[1])
    rob_raw, _ = y.send(patches[1], ROB, inline, "INLINE-ADDED")
    y.send(patches[3], ROB, "YEAR-1: the manual reads well.\n", "YEAR-1")
    y.applied("INLINE-ADDED")
    y.applied("YEAR-1")
    rob_mail = email.message_from_string(rob_raw)

    def answer(text):
        # Alice answers under rob's comment at the added line.
        body = inline.split("INLINE-ADDED")[0] + "INLINE-ADDED" + \
            inline.split("INLINE-ADDED")[1].split("\n")[0] + "\n"
        y.send(rob_mail, ALICE, quote(body.rstrip("\n")) + "\n" + text +
               ": fixed, the step is checked now.\n", text, "answer")

    y.advance(10, "the token's day has come: GitLab refuses it")
    answer("YEAR-ANSWER-1")
    y.send(patches[2], ROB, "YEAR-2: reset looks fine.\n", "YEAR-2")
    y.wait("replies waiting for a token", lambda: "waits for a working "
           "forge token" in y.daemon_log())
    code, body = y.wait("/readyz failing", lambda: (
        lambda r: r if r[0] == 503 else None)(y.readyz()))
    y.tell("/readyz", next(l for l in body.splitlines() if "token" in l))
    status = bed.pb("status")
    y.tell("status", next(l for l in status.splitlines() if "token" in l))
    y.tell("log", next(l for l in y.daemon_log().splitlines()
                       if "waits for a working forge token" in l))
    check(not dead_letters(bed), "dead letters with the token expired:\n"
          + status)
    check(not notes_with(the_mr(), "YEAR-2"), "applied with a dead token")

    say("%s: the operator installs a new token; no command" %
        y.today()[:10])
    set_token(bed, "bot-this-year", datetime.date.fromisoformat(
        y.today()[:10]) + datetime.timedelta(days=364))
    y.applied("YEAR-ANSWER-1")
    y.applied("YEAR-2")
    y.wait("ready again", lambda: y.readyz()[0] == 200)
    y.tell("log", next(l for l in y.daemon_log().splitlines()
                       if "a new token in %s" % token_file in l))

    y.advance(40, "v2: a commit is added")
    sim("POST", "/_sim/projects/1/merge_requests/1/push",
        {"commits": [commit("counter: name the step", "Say what it is.",
                            {"docs/step.txt": "the step counts.\n"})]})
    v2 = wait_series(bed, 2, 5)
    answer("YEAR-ANSWER-2")
    y.applied("YEAR-ANSWER-2")

    y.advance(30, "the project moves to %s" % NEW_PATH)
    sim("POST", "/_sim/projects/1/move", {"path": NEW_PATH})
    y.send(patches[3], ROB, "YEAR-3: still fine after the move.\n",
           "YEAR-3")
    y.applied("YEAR-3")
    line = y.wait("the rename told", lambda: next(
        (l for l in y.daemon_log().splitlines() if MOVED in l), None))
    y.tell("log", line)
    y.tell("status", next(l for l in bed.pb("status").splitlines()
                          if MOVED in l))

    y.advance(30, "v3: a pure rebase on a moved main")
    sim("POST", "/_sim/projects/1/commits",
        {"branch": "main", "commits": [commit(
            "README: say what it counts", "Words.",
            {"README": "counter: counts things, by steps\n"})]})
    sim("POST", "/_sim/projects/1/merge_requests/1/rebase", {})
    # Mary acks v2's patch 2, which the rebase left as it was: the
    # approval is made at the rebased head (v3 is not mailed).
    y.send(next(m for m in v2 if " 2/4]" in m["Subject"]), MARY, "YEAR-ACK: reset is right.\n\nAcked-by: " +
           MARY + "\n", "YEAR-ACK", "ack")
    y.applied("YEAR-ACK")
    y.wait("mary's approval", lambda: "mary" in approvers(the_mr()))
    y.wait("the note on the rebase", lambda: notes_with(
        the_mr(), "unchanged by the rebase"))
    answer("YEAR-ANSWER-3")
    y.applied("YEAR-ANSWER-3")

    y.advance(70, "v4: another commit")
    sim("POST", "/_sim/projects/1/merge_requests/1/push",
        {"commits": [commit("counter: one more word", "Still counting.",
                            {"docs/step.txt": "the step counts up.\n"})]})
    say("%s: mary locks the discussion" % y.today()[:10])
    sim("PUT", "/api/v4/projects/1/merge_requests/1",
        {"discussion_locked": True}, token="mary-token")
    for k, text in ((1, "YEAR-LOCKED-1"), (3, "YEAR-LOCKED-2")):
        _, mid = y.send(patches[k], ROB, text + ": while it is locked.\n",
                        text, "locked")
        y.locked.append(mid)
    for mid in y.locked:
        y.wait("a reply during the lock handled", lambda: re.search(
            r"journal: (applied|dead|ignored)",
            bed.pb_run(["why", "<%s>" % mid]).stdout))
    y.tell("why", next((l for l in bed.pb_run(
        ["why", "<%s>" % y.locked[0]]).stdout.splitlines()
        if "locked" in l), "(nothing about the lock)"))
    y.advance(30, "mary unlocks it")
    sim("PUT", "/api/v4/projects/1/merge_requests/1",
        {"discussion_locked": False}, token="mary-token")
    answer("YEAR-ANSWER-4")
    y.applied("YEAR-ANSWER-4")

    y.advance(80, "v5: the last commit, then the merge")
    sim("POST", "/_sim/projects/1/merge_requests/1/push",
        {"commits": [commit("docs: the last word", "Done.",
                            {"docs/step.txt": "the step counts up by n.\n"})]})
    sim("PUT", "/api/v4/projects/1/merge_requests/1/merge", {},
        token="mary-token")
    check(the_mr()["state"] == "merged", "the MR did not merge")

    y.advance(75, "replies after the merge: a comment, an ack, a NAK, an "
              "answer")
    late = len(y.sent)
    y.send(patches[3], ROB, "YEAR-4: thanks for merging.\n", "YEAR-4")
    # rob, who has not approved, may approve patch 1 (he reviews src/):
    # GitLab answers 401 for the merged MR, which is no word about him.
    y.send(patches[1], ROB, "YEAR-LATE-ACK: late, but yes.\n\n"
           "Reviewed-by: " + ROB + "\n", "YEAR-LATE-ACK", "ack")
    y.send(patches[2], MARY, "YEAR-NAK: the reset must go after all.\n\n"
           "Nacked-by: " + MARY + "\n", "YEAR-NAK", "nak")
    answer("YEAR-ANSWER-5")
    # Each handled, for good or ill: the figures say which.
    for mid, text, _ in y.sent[late:]:
        y.wait("%s handled" % text, lambda: re.search(
            r"journal: (applied|dead|ignored)",
            bed.pb_run(["why", "<%s>" % mid]).stdout))

    # The figures.
    mr = the_mr()
    status = bed.pb("status")
    applied = applied_count(status)
    # status lists the dead letters; the spool's dead/ holds each as a
    # record and its NAME.reason.
    dead_dir = os.path.join(bed.work, "spool", "dead")
    dead = max(len(dead_letters(bed)), len(
        [f for f in os.listdir(dead_dir) if not f.endswith(".reason")]
        if os.path.isdir(dead_dir) else []))
    first = one_note(mr, "INLINE-ADDED", "rob's inline comment")[0]
    split = 0
    for mid, text, kind in y.sent:
        if kind != "answer":
            continue
        d, n, b = one_note(mr, text, "an answer")
        if d["id"] != first["id"]:
            split += 1
            say("split: %s started its own thread" % text)
    blamed = [b for d, n, b in user_notes(mr) if NOT_ALLOWED.search(b)]
    for b in blamed:
        say("blames a reviewer: %s" % b[:200])
    posted_locked = [t for _, t, k in y.sent
                     if k == "locked" and notes_with(mr, t)]
    say("")
    say("a year, %s to %s:" % (today.isoformat(), y.today()[:10]))
    say("  replies sent:              %d" % len(y.sent))
    say("  replies applied:           %d" % applied)
    say("  not posted (locked):       %d of %d" % (
        len(y.locked) - len(posted_locked), len(y.locked)))
    say("  dead letters:              %d" % dead)
    say("  threads split:             %d" % split)
    say("  false \"not allowed\" notes: %d" % len(blamed))
    say("  the operator was told:")
    for date, where, line in y.told:
        say("    %s %s: %s" % (date, where, line))
    check(dead == 0, "dead letters:\n" + status)
    check(split == 0, "%d answers split from their thread" % split)
    check(not blamed, "notes blame a reviewer")
    for mid, text, kind in y.sent[late:]:
        one_note(mr, text, "a reply after the merge")
    check(NAK_LABEL in mr["labels"], "no NAK label after the merge")
    check(notes_with(mr, "already merged"), "the late ack is not listed "
          "as given after the merge")
    check(not posted_locked, "posted through the lock: %s" % posted_locked)
    check(applied == len(y.sent) - len(y.locked),
          "%d applied of %d sent, %d locked" %
          (applied, len(y.sent), len(y.locked)))
    check(len(first["notes"]) == 1 + sum(
        1 for _, _, k in y.sent if k == "answer"),
        "rob's thread holds %d notes" % len(first["notes"]))


# --- a series posted to the list -------------------------------------------

SUBMIT_OWNERS = """\
users:
  - &mary
    name: Mary Maintainer
    email: mary@kernel.example
    gluser: mary
subsystems:
  - subsystem: The test beds
    labels:
      name: testbeds
    maintainers:
      - *mary
    paths:
      includes:
        - tests/
        - README.md
"""


SUBMIT_SEED = dict(SEED, tokens=SEED["tokens"] + [
    {"token": "rob-token", "user": "rob", "scopes": ["api"]},
    {"token": "mary-token", "user": "mary", "scopes": ["api"]}])


def submission_bed(bed, target="pb-base"):
    """The list server with the DKIM stand-in and patchbridge-milter in
    front of it; the project takes series by mail from anyone, onto
    target when the series names no base, and the merge request
    targets it.  A git environment of its own, committing as Ann
    Sender."""
    sim("POST", "/_sim/reset", {"seed": SUBMIT_SEED})
    sockdir = bed.sockets()
    vsock = os.path.join(sockdir, "verifier.sock")
    msock = os.path.join(sockdir, "patchbridge.sock")
    bed.env["PORT"] = str(bedlib.free_port())
    bedlib.write_config(bed, msock, SUBMIT_OWNERS)
    with open(bed.cfg, "a", encoding="utf-8") as f:
        f.write("email_submissions = anyone\nemail_target_branch = "
                "%s\n" % target)
    bed.pb("check-config")
    bed.start_verifier(bed.exe("tests", "postfix", "test_milter"), vsock)
    bed.start_milter(bed.exe("milter", "patchbridge-milter"), msock)
    bed.start_postfix("--port", bed.env["PORT"], "--milter",
                      "unix:%s, unix:%s" % (vsock, msock))
    gitcfg = bed.write("gitconfig", "")
    return dict(os.environ, GIT_CONFIG_GLOBAL=gitcfg, GIT_CONFIG_NOSYSTEM="1",
                GIT_TERMINAL_PROMPT="0", GIT_COMMITTER_NAME="Ann Sender",
                GIT_COMMITTER_EMAIL="ann@example.com")


def send_series(bed, env, repo, base, head, out, blurb, *extra):
    """git format-patch base..head of repo with a cover letter ("The
    first steps", blurb) into out, sent with git send-email to the list
    through the list server; extra: more options of git format-patch
    (-v2) and git send-email (--in-reply-to=...).  The mails' paths,
    the cover letter first."""
    fp = [a for a in extra if not a.startswith("--in-reply-to")]
    se = [a for a in extra if a.startswith("--in-reply-to")]
    subprocess.run(["git", "-C", repo, "format-patch", "-q",
                    "--cover-letter", "--thread", "--base=" + base, "-o",
                    out] + fp + ["%s..%s" % (base, head)], env=env,
                   check=True, capture_output=True)
    names = sorted(os.listdir(out))
    cover = os.path.join(out, names[0])
    with open(cover, encoding="utf-8") as f:
        text = f.read()
    with open(cover, "w", encoding="utf-8") as f:
        f.write(text.replace("*** SUBJECT HERE ***", "The first steps")
                .replace("*** BLURB HERE ***", blurb))
    sent = subprocess.run(
        ["git", "send-email", "--to=" + bedlib.LIST,
         "--from=Ann Sender <ann@example.com>", "--confirm=never",
         "--suppress-cc=all", "--smtp-server=" + bed.addr,
         "--smtp-server-port=" + bed.env["PORT"], "--quiet"] + se +
        [os.path.join(out, n) for n in names],
        env=env, capture_output=True, text=True, timeout=bound(120))
    check(sent.returncode == 0, "git send-email: %s" % sent.stderr[-1500:])
    return [os.path.join(out, n) for n in names]


def listed_series(bed, version):
    """The list archive's mails of [PATCH vN k/5] (v1: no vN), by k."""
    tag = "PATCH v%d " % version if version > 1 else "PATCH "
    got = {}
    for m in bed.archive():
        k = re.search(r"\[%s(\d)/5\]" % re.escape(tag), m["Subject"])
        if k and not m["Subject"].startswith("Re:"):
            got[int(k.group(1))] = m
    check(sorted(got) == list(range(6)), "[%s0-5/5] in the archive: %s" %
          (tag, sorted(got)))
    # what the milter took each for, on the list's copy
    for k, m in got.items():
        check((m["X-Patchbridge"] or "").startswith("submission; via="),
              "%s/5: X-Patchbridge: %s" % (k, m["X-Patchbridge"]))
    return got


def patch_ids(git, repo, rev_range, env):
    out = []
    for c in git("-C", repo, "rev-list", "--reverse", rev_range).split():
        p = subprocess.run(["git", "patch-id", "--stable"],
                           input=git("-C", repo, "format-patch", "-1",
                                     "--stdout", c),
                           env=env, capture_output=True, text=True,
                           check=True)
        out.append(p.stdout.split()[0])
    return out


def same_as_git_am(bed, git, cmp, base, ref, listed, name):
    """The commits base..ref of cmp are what git am makes of the list's
    copies listed (k: mail) on base: trees, authors, dates, messages."""
    am = os.path.join(bed.work, "am-" + name)
    git("clone", "-q", "--no-checkout", cmp, am)
    git("-C", am, "checkout", "-q", "--detach", base)
    for k in range(1, 6):
        path = bed.write("listed-%s-%d.eml" % (name, k),
                         listed[k].raw.decode("utf-8", "replace"))
        git("-C", am, "am", "-q", path)
    fmt = "--format=%T%x00%an%x00%ae%x00%ad%x00%B%x01"
    ours = git("-C", cmp, "log", "--reverse", "--date=raw", fmt,
               "%s..%s" % (base, ref))
    theirs = git("-C", am, "log", "--reverse", "--date=raw", fmt,
                 base + "..HEAD")
    check(ours == theirs, "%s: commits differ from git am's of the list's "
          "copies:\n%s\n---\n%s" % (name, ours, theirs))


def submitted_mrs():
    return [m for m in sim("GET", "/api/v4/projects/1/merge_requests")
            if "from-email" in m["labels"]]


def run_until(bed, cond, what):
    """patchbridge run --once until cond() is true (each run does what
    it finds; a mail the milter spooled meanwhile waits for the next)."""
    def once():
        bed.pb("run", "--once", "--foreground", ok=(0, 75))
        return cond()
    return wait_for(once, 120, what, every=0.5)


def scenario_submission(bed):
    """A 5-patch topic of this repository's own history (its first
    commits after the root), sent to the list with real git send-email
    through the private Postfix, becomes one merge request: the milter
    spools the mails, `run --once` collects them, applies them as git am
    would and opens the merge request; its commits have the originals'
    patch-ids, authors and messages, and are what git am makes of the
    list's copies (trees, authors, dates - git send-email dates each mail
    when it sends it - and messages).  A Reviewed-by of a verified
    maintainer in reply to 3/5 then approves it.

    v2 (3/5 changed, git send-email --in-reply-to the v1 cover) updates
    the same merge request: GitLab's versions API lists two versions,
    the newest v2's head, whose commits are git am's of v2's list
    copies.  Approvals reset on push (the project's setting), so the
    Reviewed-by on v2 3/5 approves again, and the inline comment under a
    quoted line of v2 3/5 is a diff note at its file and line of v2.  A
    diff note posted on the forge on 4/5's file is mailed to the list in
    reply to the sender's own v2 4/5; the merge on the forge mails
    "applied" in reply to the v2 cover letter."""
    env = submission_bed(bed)

    def git(*args):
        return subprocess.run(["git"] + list(args), env=env, check=True,
                              capture_output=True, text=True).stdout

    src = git("-C", os.path.dirname(os.path.abspath(__file__)),
              "rev-parse", "--show-toplevel").strip()
    first = git("-C", src, "rev-list", "--reverse", "--first-parent",
                "HEAD").split()[:6]
    check(len(first) == 6, "the repository's history is too short")
    for c in first[1:]:
        check(len(git("-C", src, "rev-list", "--parents", "-n1",
                      c).split()) == 2, "%s is a merge" % c)
    base, head = first[0], first[5]
    url = os.environ["PB_FORGESIM_URL"]
    git("-C", src, "push", "-q",
        url.replace("://", "://oauth2:bridge-token@") +
        "/group/project.git", "%s:refs/heads/pb-base" % base)
    made_v1 = int(time.time())
    send_series(bed, env, src, base, head, os.path.join(bed.work, "v1"),
                "Five early patches.")
    bed.wait_mail(6)
    bed.settle()
    say("git send-email: 6 mails in the list archive")

    bed.pb("run", "--once", "--foreground", ok=(0, 75))
    mrs = submitted_mrs()
    check(len(mrs) == 1, "%d merge requests from email" % len(mrs))
    mr = mrs[0]
    iid = mr["iid"]
    mrpath = "/api/v4/projects/1/merge_requests/%d" % iid
    say("!%d %s from %s" % (iid, mr["title"], mr["source_branch"]))
    check(mr["title"] == "The first steps", "title %r" % mr["title"])
    cmp = os.path.join(bed.work, "cmp.git")
    git("init", "-q", "--bare", cmp)
    git("-C", cmp, "fetch", "-q", src, head)
    git("-C", cmp, "fetch", "-q", url + "/group/project.git",
        "refs/heads/%s:refs/mr" % mr["source_branch"])
    # Authors and messages are the originals'; the date is the mail's,
    # which git send-email sets when it sends: what git am makes of the
    # list's copies is the reference for all of it.
    fmt = "--format=%an%x00%ae%x00%B%x01"
    ours = git("-C", cmp, "log", "--reverse", fmt, base + "..refs/mr")
    theirs = git("-C", cmp, "log", "--reverse", fmt,
                 "%s..%s" % (base, head))
    check(ours == theirs, "commits differ:\n%s\n---\n%s" % (ours, theirs))
    v1 = listed_series(bed, 1)
    same_as_git_am(bed, git, cmp, base, "refs/mr", v1, "v1")
    check(patch_ids(git, cmp, base + "..refs/mr", env) ==
          patch_ids(git, cmp, "%s..%s" % (base, head), env),
          "patch-ids differ")
    say("5 commits with the originals' patch-ids, authors and messages, "
        "and what git am makes of the list's copies (trees, dates)")

    raw, _ = reply(v1[3], MARY, "Reads well.\n\nReviewed-by: Mary "
                   "Maintainer <mary@kernel.example>\n")
    bed.send(raw, "mary@kernel.example")
    bed.wait_mail(7)
    bed.settle()
    bed.pb("run", "--once", "--foreground", ok=(0, 75))
    approvals = sim("GET", mrpath + "/approvals")
    who = [a["user"]["username"] for a in approvals.get("approved_by", [])]
    notes = sim("GET", mrpath + "/notes")
    check("mary" in who, "not approved by mary: %r; notes: %r" % (
        who, [n["body"][:300] for n in notes]))
    say("Reviewed-by on 3/5: approved by mary")

    # --- v2: 3/5 changed, in reply to the v1 cover letter ---------------
    # GitLab drops approvals when new commits are pushed, if the project
    # says so (doc/user/project/merge_requests/approvals/settings.md,
    # "Remove all approvals when commits are added to the source
    # branch"): the approval on v2 is then the v2 reply's own.
    sim("PUT", "/_sim/projects/1/settings", {"reset_approvals_on_push": True})
    work = os.path.join(bed.work, "v2-work")
    git("clone", "-q", "--no-checkout", cmp, work)
    git("-C", work, "checkout", "-q", "--detach", first[3])
    milter_c = os.path.join(work, "tests", "postfix", "test_milter.c")
    with open(milter_c, encoding="utf-8") as f:
        lines = f.read().split("\n")
    # a line of v2's own, third from the top of the new file
    added = "/* v2: a stand-in for OpenDKIM and OpenDMARC in the tests. */"
    lines.insert(2, added)
    with open(milter_c, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    git("-C", work, "commit", "-q", "-a", "--amend", "--no-edit")
    git("-C", work, "cherry-pick", "--allow-empty", first[4], first[5])
    head2 = git("-C", work, "rev-parse", "HEAD").strip()
    # git format-patch names a mail by its commit and the time in
    # seconds: unchanged patches made in v1's second would share its
    # Message-IDs, which two runs of git send-email never do.
    wait_for(lambda: int(time.time()) > made_v1, 5, "the clock")
    v1_cover = mid_of(v1[0])
    send_series(bed, env, work, base, head2, os.path.join(bed.work, "v2"),
                "Five early patches; 3/5 now says what it is.", "-v2",
                "--in-reply-to=<%s>" % v1_cover)
    bed.wait_mail(13)
    bed.settle()
    v2 = listed_series(bed, 2)
    check(v2[0]["In-Reply-To"].strip().strip("<>") == v1_cover,
          "v2's cover is not a reply to v1's: %s" % v2[0]["In-Reply-To"])
    say("git send-email --in-reply-to=<v1 cover>: [PATCH v2 0-5/5] in the "
        "list archive")

    run_until(bed, lambda: len(sim("GET", mrpath + "/versions")) >= 2,
              "v2 did not become the merge request's second version")
    mrs = submitted_mrs()
    check([m["iid"] for m in mrs] == [iid],
          "merge requests from email after v2: %s" %
          [m["iid"] for m in mrs])
    versions = sim("GET", mrpath + "/versions")
    check(len(versions) == 2, "%d versions" % len(versions))
    git("-C", cmp, "fetch", "-q", url + "/group/project.git",
        "+refs/heads/%s:refs/mr2" % mr["source_branch"])
    mr_head2 = git("-C", cmp, "rev-parse", "refs/mr2").strip()
    check(versions[0]["head_commit_sha"] == mr_head2,
          "the newest version's head %s is not the branch's %s" %
          (versions[0]["head_commit_sha"], mr_head2))
    check(versions[1]["head_commit_sha"] ==
          git("-C", cmp, "rev-parse", "refs/mr").strip(),
          "the older version is not v1")
    git("-C", cmp, "fetch", "-q", work, head2)
    check(patch_ids(git, cmp, base + "..refs/mr2", env) ==
          patch_ids(git, cmp, "%s..%s" % (base, head2), env),
          "v2's patch-ids differ")
    same_as_git_am(bed, git, cmp, base, "refs/mr2", v2, "v2")
    check(not sim("GET", mrpath + "/approvals").get("approved_by"),
          "approvals kept over the push")
    say("v2 updated !%d: two versions, the newest v2's commits (as git am "
        "makes them)" % iid)

    # --- review of v2 on the list --------------------------------------
    path = "tests/postfix/test_milter.c"
    part, nums = file_diff(v2[3], path)
    at = next(i for i, l in enumerate(part)
              if nums[i][0] == "added" and l[1:] == added)
    inline = "INLINE-V2: say which milters it stands in for, by version."
    raw, _ = reply(v2[3], MARY, "One thing inline.\n\n" +
                   quote("\n".join(part[:at + 1])) + "\n" + inline +
                   "\n\nReviewed-by: Mary Maintainer "
                   "<mary@kernel.example>\n")
    bed.send(raw, "mary@kernel.example")
    bed.wait_mail(14)
    bed.settle()
    run_until(bed, lambda: "mary" in [
        a["user"]["username"] for a in
        sim("GET", mrpath + "/approvals").get("approved_by", [])],
        "the Reviewed-by on v2 3/5 did not approve")
    mrstate = the_mr(iid)
    d, n, b = one_note(mrstate, inline, "inline comment on v2 3/5")
    pos = n.get("position") or {}
    check(pos.get("new_path") == path and pos.get("new_line") ==
          nums[at][2] and pos.get("head_sha") == mr_head2,
          "the inline comment is not a diff note at %s:%s of v2: %r" %
          (path, nums[at][2], pos))
    say("Reviewed-by on v2 3/5: approved by mary; the inline comment a "
        "diff note at %s:%d of v2" % (path, nums[at][2]))

    # --- the forge to the list -----------------------------------------
    forge_note = "FORGE-NOTE: pfbed could say which Postfix it needs."
    ver = versions[0]
    sim("POST", mrpath + "/discussions", {
        "body": forge_note, "position": {
            "position_type": "text", "base_sha": ver["base_commit_sha"],
            "start_sha": ver["start_commit_sha"],
            "head_sha": ver["head_commit_sha"],
            "old_path": "tests/postfix/pfbed",
            "new_path": "tests/postfix/pfbed", "new_line": 3}},
        token="rob-token")
    bed.pb("run", "--once", "--foreground", ok=(0, 75))
    bed.wait_mail(15)
    bed.settle()
    mailed = [m for m in bed.archive()
              if forge_note in bedlib.patch_body(m)]
    check(len(mailed) == 1, "the forge comment mailed %d times" %
          len(mailed))
    check(mailed[0]["In-Reply-To"].strip().strip("<>") == mid_of(v2[4]),
          "the forge comment answers %s, not v2 4/5 %s" %
          (mailed[0]["In-Reply-To"], mid_of(v2[4])))
    say("rob's diff note on pfbed: mailed in reply to Ann's own v2 4/5 "
        "(%s)" % mailed[0]["Subject"])

    mr = sim("GET", mrpath)
    sim("PUT", mrpath + "/merge", {"sha": mr["sha"]}, token="mary-token")
    bed.pb("run", "--once", "--foreground", ok=(0, 75))
    bed.wait_mail(16)
    bed.settle()
    applied = [m for m in bed.archive()
               if m["X-Patchbridge-Origin"] == "forge" and
               "applied" in bedlib.patch_body(m)]
    check(len(applied) == 1, "%d applied mails" % len(applied))
    check(applied[0]["In-Reply-To"].strip().strip("<>") == mid_of(v2[0]),
          "applied answers %s, not the v2 cover %s" %
          (applied[0]["In-Reply-To"], mid_of(v2[0])))
    body = bedlib.patch_body(applied[0])
    for c in sim("GET", mrpath + "/commits"):
        check(c["id"] in body, "applied does not name v2's %s:\n%s" %
              (c["id"], body))
    say("merged on the forge: \"applied\" in reply to Ann's v2 cover "
        "letter (%s)" % applied[0]["Subject"])
    # the two versions, two reviews, and the bridge's two mails: it
    # mailed no series of its own
    listed = bed.archive()
    ours = [m["Subject"] for m in listed if m["X-Patchbridge-Origin"]]
    check(len(listed) == 16 and len(ours) == 2,
          "%d mails in the archive, the bridge's: %s" % (len(listed), ours))


SCENARIOS = {"replies": scenario_replies, "outage": scenario_outage,
             "export": scenario_export, "acks": scenario_acks,
             "forged": scenario_forged, "renamed": scenario_renamed,
             "year": scenario_year, "submission": scenario_submission}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--bin", required=True, help="the build directory")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    rc = bedlib.skip_milters(args.bin, "e2e")
    if rc is not None:
        return rc
    return bedlib.run_scenario(Bed(args, args.scenario),
                               SCENARIOS[args.scenario])


if __name__ == "__main__":
    sys.exit(main())
