#!/usr/bin/python3
"""End-to-end tests of the outbound daemon: forgesim -> patchbridge ->
private Postfix (pfbed) -> list archive.

usage: outbound_e2e.py SCENARIO --patchbridge BIN --work DIR

Run under tests/forgesim/run-with-sim.sh, which exports PB_FORGESIM_URL.
Scenarios:

  series    a 3-commit MR -> `send` -> [PATCH 0/3]..[PATCH 3/3] in the
            archive, threaded, Cc per owners.yaml / author / reviewers;
            git am reproduces the head tree; `send` and `run --once` again
            send nothing; a pushed v2 -> `run --once` -> [PATCH v2 0/3]
            in reply to the v1 cover, with the range-diff  (items 3, 4)
  crash     the MTA hangs on the 3rd mail, the daemon is killed -9; a
            restart completes the series, no Message-ID twice  (item 4)
  webhook   a wrong token gets 401 and mails nothing; a valid MR event
            mails the series without waiting for the poll; SIGHUP with a
            broken file keeps the old configuration  (item 6)
  handed    the host dies after the MTA took a mail, before the 250 was
            recorded: the restart finds it in the list archive (a real
            public-inbox, fed from the list, served by public-inbox-httpd)
            and does not send it again; it dies before the MTA took one:
            the mail waits [outbound] archive_wait, is not in the archive,
            and goes again, once; the archive's requests carry no token
  dbgone    (PostgreSQL) the database goes away while the MTA takes a
            mail: the daemon keeps the acceptance, records it when the
            database is back, and the mail reaches the list once
  drafts    a draft MR is skipped; a malformed owners.yaml is reported with
            line and column and the series goes out without owners Cc; a
            pure rebase is not mailed with mail_rebases = no
  retarget  an MR stacked on another branch, retargeted onto it: GitLab's
            new version has the same head on a new base, mailed as v2
            with the range-diff; its target branch takes one of its
            commits: v3; retargeted to a branch with the same merge
            base: nothing is mailed
  attest    [outbound] attest = yes: the series as the list archive
            (public-inbox) serves it passes b4 am and patatt validate
            for the bridge's key; one changed byte fails both

Exit status: 0 pass, 1 fail, 77 skipped (not root, no Postfix).
"""

import argparse
import gzip
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bedlib  # noqa: E402
from bedlib import (LIST, Fail, bound, check, free_port, say,  # noqa: E402
                    wait_for)


# --- the simulator -------------------------------------------------------

def sim(method, path, body=None, ok=(200, 201, 202)):
    """bedlib.sim as the bridge's bot account."""
    return bedlib.sim(method, path, body, token="bot-token", ok=ok)


SEED = {
    "users": [
        {"username": "root", "name": "Administrator",
         "email": "root@example.com", "admin": True},
        {"username": "alice", "name": "Alice Developer",
         "email": "alice@example.com", "public_email": "alice@example.com"},
        {"username": "bob", "name": "Bob Maintainer",
         "email": "bob@corp.example", "public_email": "bob@corp.example"},
        # No public email: never Cc'd, her private address never shown.
        {"username": "carol", "name": "Carol Private",
         "email": "carol@private.example"},
        {"username": "patchbridge", "name": "patchbridge bot",
         "email": "patchbridge@example.org", "bot": True},
    ],
    "tokens": [{"token": "bot-token", "user": "patchbridge",
                "scopes": ["api"]}],
    "projects": [{
        "path": "group/project", "default_branch": "main",
        "members": {"alice": "developer", "bob": "maintainer",
                    "carol": "developer", "patchbridge": "developer"},
        "files": {
            "README.md": "# project\n",
            "src/a/x.c": "int x(void)\n{\n\treturn 1;\n}\n",
            "src/b/y.c": "int y(void)\n{\n\treturn 2;\n}\n",
            "docs/readme.txt": "Nothing to read yet.\n",
        },
    }],
}

OWNERS = """\
users:
  - &anna
    name: Anna Alpha
    email: anna@alpha.example
  - &bert
    name: Bert Beta
    email: bert@beta.example
subsystems:
  - subsystem: Subsystem A
    labels:
      name: sub-a
    maintainers:
      - *anna
    paths:
      includes:
        - src/a/
  - subsystem: Subsystem B
    labels:
      name: sub-b
    maintainers:
      - *bert
    paths:
      includes:
        - src/b/
"""

# Line 5, column 10: a mapping value where none may be.
OWNERS_BROKEN = """\
users:
  - &anna
    name: Anna Alpha
    email: anna@alpha.example
    bad: : [
subsystems: []
"""

AUTHOR = {"name": "Alice Developer", "email": "alice@example.com"}


def commit(message, files):
    return {"message": message + "\n\nSigned-off-by: Alice Developer "
            "<alice@example.com>\n", "author": AUTHOR, "files": files}


V1 = [
    commit("a: count in x", {"src/a/x.c": "int x(int n)\n{\n"
                             "\treturn n + 1;\n}\n"}),
    commit("b: count in y", {"src/b/y.c": "int y(int n)\n{\n"
                             "\treturn n + 2;\n}\n"}),
    commit("docs: describe counting", {"docs/readme.txt":
                                       "x and y count now.\n"}),
]


def create_mr(branch, title, draft=False, commits=None):
    made = sim("POST", "/_sim/projects/1/commits",
               {"branch": branch, "start": "main",
                "commits": commits or V1})
    mr = sim("POST", "/_sim/projects/1/merge_requests",
             {"source_branch": branch, "target_branch": "main",
              "title": title, "description": "Teach x and y to count.\n\n"
              "Both take the number to count from.",
              "author": "alice", "reviewers": ["bob", "carol"],
              "draft": draft})
    return mr, made


# --- the bridge and the archive -------------------------------------------

class Bed(bedlib.Bed):
    def __init__(self, args, name):
        super().__init__(os.path.join(args.work, name), args.patchbridge)

    def start_postfix(self, *options):
        super().start_postfix(*options)
        say("postfix on port %d, archive %s" % (self.port,
                                                 self.env["ARCHIVE"]))

    def config(self, smtp=None, sendmail=None, extra="", owners=OWNERS,
               outbound="", state=""):
        token = self.write("token", "bot-token\n", 0o600)
        owners_file = self.write("owners.yaml", owners)
        if sendmail:
            smtp_part = "url = sendmail\nsendmail_path = %s\n" % sendmail
        else:
            smtp_part = "url = smtp://%s:%d\n" % (self.addr, self.port)
        # the spool under the bed, unless the scenario names its own
        spool = "" if "[spool]" in extra + outbound + state else \
            "[spool]\ndir = %s/spool\n" % self.work
        text = """\
[bridge]
name = patchbridge
address = bridge@example.org
domain = bridge.example.org
list_address = %s
[forge]
url = %s
token_file = %s
max_retries = 1
retry_max = 2s
[smtp]
%stimeout = 20s
[state]
path = %s/state/state.db
%s
%s[log]
level = debug
[outbound]
poll_interval = 1h
threading = shallow
cc_owners = yes
cc_author = yes
cc_reviewers = yes
%s
[inbound]
owners_file = %s
%s
[project "group/project"]
""" % (LIST, os.environ["PB_FORGESIM_URL"], token, smtp_part, self.work,
            state, spool, outbound, owners_file, extra)
        os.makedirs(os.path.join(self.work, "state"), exist_ok=True)
        self.write("patchbridge.conf", text)

    def run(self, *argv, ok=(0,), timeout=120):
        out = self.pb_run(argv, timeout)
        say("patchbridge %s -> %d %s" % (" ".join(argv), out.returncode,
                                         out.stdout.strip()))
        if out.returncode not in ok:
            raise Fail("patchbridge %s exited %d" % (" ".join(argv),
                                                     out.returncode))
        return out.stdout

    def daemon(self):
        log = open(self.log, "a", encoding="utf-8")
        log.write("\n$ patchbridge run --foreground\n")
        log.flush()
        p = subprocess.Popen([self.patchbridge, "-c", self.cfg, "run",
                              "--foreground"], stdout=log, stderr=log)
        log.close()
        self.procs.append(p)
        return p

    def log_text(self):
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()


def addrs(msg, field):
    return {a.addr_spec.lower() for h in msg.get_all(field, [])
            for a in h.addresses}


def series_of(mails, mr, rev):
    got = {}
    for m in mails:
        if (m["X-Patchbridge-MR"] == str(mr) and
                m["X-Patchbridge-Revision"] == str(rev)):
            k = re.search(r"(\d+)/\d+\]", m["Subject"])
            got[int(k.group(1)) if k else 1] = m
    return got


def msgid(m):
    return m["Message-ID"].strip().strip("<>")


def check_threading(s, total):
    check(sorted(s) == list(range(0, total + 1)),
          "want mails 0..%d, got %s" % (total, sorted(s)))
    cover = msgid(s[0])
    for k in range(1, total + 1):
        irt = s[k]["In-Reply-To"].strip().strip("<>")
        check(irt == cover, "patch %d: In-Reply-To %s, not the cover %s" %
              (k, irt, cover))
        check(cover in s[k]["References"], "patch %d: References" % k)


def git(*argv, cwd=None):
    env = dict(os.environ, GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t")
    out = subprocess.run(["git"] + list(argv), cwd=cwd, env=env,
                         capture_output=True, text=True)
    if out.returncode:
        raise Fail("git %s: %s" % (" ".join(argv), out.stderr[-1500:]))
    return out.stdout.strip()


def check_git_am(bed, s, total, base, head):
    repo = os.path.join(bed.work, "am")
    git("clone", "-q", os.environ["PB_FORGESIM_URL"] + "/group/project.git",
        repo)
    git("fetch", "-q", "origin", "refs/merge-requests/1/head", cwd=repo)
    git("checkout", "-q", base, cwd=repo)
    mbox = os.path.join(bed.work, "series.mbox")
    with open(mbox, "wb") as f:
        for k in range(1, total + 1):
            f.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n")
            f.write(s[k].raw.replace(b"\r\n", b"\n"))
            f.write(b"\n")
    git("am", "-q", mbox, cwd=repo)
    got = git("rev-parse", "HEAD^{tree}", cwd=repo)
    want = git("rev-parse", head + "^{tree}", cwd=repo)
    check(got == want, "git am gives tree %s, the head has %s" % (got, want))
    authors = git("log", "--format=%an <%ae>", base + "..HEAD", cwd=repo)
    check(set(authors.splitlines()) == {"Alice Developer <alice@example.com>"},
          "git am lost the author: %s" % authors)


def version_shas(iid):
    vers = sim("GET", "/api/v4/projects/1/merge_requests/%d/versions" % iid)
    return vers[0]["base_commit_sha"], vers[0]["head_commit_sha"]


# --- scenarios -----------------------------------------------------------

def scenario_series(bed):
    bed.start_postfix()
    bed.config()
    create_mr("topic", "Teach x and y to count")
    base, head = version_shas(1)

    say("send: v1")
    out = bed.run("send", "group/project!1")
    check("mailed v1 (4 mails)" in out, "send said: %s" % out)
    bed.wait_mail(4)
    bed.settle()
    mails = bed.archive()
    check(len(mails) == 4, "want 4 mails, got %d" % len(mails))
    s = series_of(mails, 1, 1)
    check_threading(s, 3)
    check(s[0]["Subject"].startswith("[PATCH 0/3] Teach x and y to count"),
          "cover subject: %s" % s[0]["Subject"])
    for k, title in ((1, "a: count in x"), (2, "b: count in y"),
                     (3, "docs: describe counting")):
        check(s[k]["Subject"] == "[PATCH %d/3] %s" % (k, title),
              "subject %d: %s" % (k, s[k]["Subject"]))
    people = {"alice@example.com", "bob@corp.example"}
    for k in range(4):
        cc = addrs(s[k], "Cc")
        check(addrs(s[k], "To") == {LIST}, "mail %d: To" % k)
        check(people <= cc, "mail %d: author/reviewer not Cc'd: %s" % (k, cc))
        check(LIST not in cc, "mail %d: the list is Cc'd too" % k)
        check(b"carol@private.example" not in s[k].raw,
              "mail %d shows a private address" % k)
    want = {0: {"anna@alpha.example", "bert@beta.example"},
            1: {"anna@alpha.example"}, 2: {"bert@beta.example"}, 3: set()}
    for k, owners in want.items():
        got = addrs(s[k], "Cc") - people
        check(got == owners, "mail %d: owners Cc %s, want %s" %
              (k, sorted(got), sorted(owners)))
    say("threading and Cc ok; git am")
    check_git_am(bed, s, 3, base, head)

    say("again: nothing is sent")
    out = bed.run("send", "group/project!1")
    check("already mailed as v1" in out, "send said: %s" % out)
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 4, "a re-run sent mail")

    say("push v2 (patch 2 changed) -> run --once")
    c1 = sim("GET", "/api/v4/projects/1/merge_requests/1/commits")
    first = [c["id"] for c in c1 if c["title"] == "a: count in x"][0]
    v2 = [commit("b: count in y", {"src/b/y.c": "int y(int n)\n{\n"
                                   "\treturn n + 20;\n}\n"}), V1[2]]
    made = sim("POST", "/_sim/projects/1/commits",
               {"branch": "topic-v2", "start": first, "commits": v2})
    sim("POST", "/_sim/projects/1/merge_requests/1/push",
        {"sha": made["head"]})
    bed.run("run", "--once")
    bed.wait_mail(8)
    bed.settle()
    mails = bed.archive()
    check(len(mails) == 8, "want 8 mails, got %d" % len(mails))
    s2 = series_of(mails, 1, 2)
    check_threading(s2, 3)
    check(s2[0]["Subject"].startswith("[PATCH v2 0/3]"),
          "v2 cover subject: %s" % s2[0]["Subject"])
    check(s2[0]["In-Reply-To"].strip("<> ") == msgid(s[0]),
          "v2 cover is not a reply to the v1 cover (shallow)")
    body = s2[0].get_content()
    check("Changes in v2" in body, "no 'Changes in v2' in the cover")
    check(re.search(r"1:  [0-9a-f]{7} = 1:  [0-9a-f]{7} a: count in x", body),
          "range-diff misses the unchanged patch:\n" + body)
    check(re.search(r"2:  [0-9a-f]{7} ! 2:  [0-9a-f]{7} b: count in y", body),
          "range-diff misses the changed patch:\n" + body)
    out = bed.run("status")
    check("!1 v2 sent" in out and "queue: empty" in out,
          "status: %s" % out)


# The MTA hooks below count the list's deliveries under a lock, in files
# every host of the list shares (bed.shared_path()): on a pair of hosts
# the 3rd delivery is the list's 3rd, whichever host makes it.  A hook
# hands its mail to the Postfix of the host it runs on (%(etc)s).

SENDMAIL_WRAPPER = """#!/bin/sh
# Count deliveries; hang on the 3rd while %(flag)s exists (the "slow MTA");
# fail for now while %(tempfail)s exists, for good while %(reject)s does.
n=$(flock %(count)s.lock sh -c \
	'n=$(($(cat %(count)s 2>/dev/null || echo 0) + 1)); echo $n > %(count)s; echo $n')
if [ -e %(tempfail)s ]; then
	echo "451 4.3.0 try again later" >&2
	exit 75
fi
if [ -e %(reject)s ]; then
	echo "550 5.7.1 not from you" >&2
	exit 65
fi
if [ "$n" -eq 3 ] && [ -e %(flag)s ]; then
	echo $$ > %(pid)s
	exec sleep 300
fi
exec /usr/sbin/sendmail -C %(etc)s "$@"
"""


def scenario_crash(bed):
    bed.start_postfix()
    paths = {k: bed.shared_path(k)
             for k in ("count", "flag", "pid", "tempfail", "reject")}
    paths["etc"] = bed.env["CONFIG"]
    wrapper = bed.write("sendmail.sh", SENDMAIL_WRAPPER % paths, 0o755)
    open(paths["flag"], "w").close()
    bed.config(sendmail=wrapper)
    create_mr("topic", "Teach x and y to count")

    say("daemon; the MTA hangs on mail 3; kill -9")
    kill_at_the_mta(bed, bed.daemon(), paths)
    os.unlink(paths["flag"])
    bed.wait_mail(2)
    bed.settle()
    check(len(bed.archive()) == 2, "want 2 mails before the restart")
    out = bed.run("status")
    check(out.count(": queued") == 2, "status shows no queued mails: %s" % out)

    say("restart: run --once completes the series")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    mails = bed.archive()
    ids = [msgid(m) for m in mails]
    check(len(ids) == 4 and len(set(ids)) == 4,
          "Message-IDs delivered: %s" % ids)
    check_threading(series_of(mails, 1, 1), 3)
    check(bed.run("status").count("queue: empty") == 1, "queue not empty")

    say("the MTA fails for now: deferred, shown, retried")
    open(paths["tempfail"], "w").close()
    create_mr("topic2", "Count in y too")
    bed.run("run", "--once", ok=(75,))
    out = bed.run("status")
    check(re.search(r"!2 v1 mail 0: deferred, 1 attempt, next \S+: "
                    r"tempfail: .*451 4\.3\.0 try again later", out),
          "status does not show the deferred mail: %s" % out)
    check(out.count(": queued") == 3, "the rest of v1 is not held back")
    os.unlink(paths["tempfail"])
    out = bed.run("send", "--force", "group/project!2")
    check("already mailed as v1; its 4 waiting mails sent now" in out,
          "send --force said: %s" % out)
    bed.wait_mail(8)

    say("the MTA refuses: failed, shown, queued again by send --retry")
    open(paths["reject"], "w").close()
    create_mr("topic3", "Count in z")
    bed.run("send", "group/project!3", ok=(69,))
    out = bed.run("status")
    check(out.count(": failed, 1 attempt: rejected: ") == 4 and
          "550 5.7.1 not from you" in out,
          "status does not show the failed mails: %s" % out)
    os.unlink(paths["reject"])
    out = bed.run("send", "group/project!3", ok=(69,))
    check("v1: the MTA refused: 0 mails sent now, 0 waiting, 4 failed "
          "for good" in out, "send said: %s" % out)
    check("!3 v1 sending" in bed.run("status"), "v3 not held as sending")
    out = bed.run("send", "--retry", "group/project!3")
    bed.wait_mail(12)
    bed.settle()
    ids = [msgid(m) for m in bed.archive()]
    check(len(ids) == 12 and len(set(ids)) == 12,
          "Message-IDs delivered: %s" % ids)


def wait_listen(port, proc, bed):
    def listens():
        check(proc.poll() is None,
              "the daemon died: %s" % bed.log_text()[-2000:])
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            return False
    wait_for(listens, 10, "the webhook receiver does not listen",
             every=0.05)


def post_hook(port, token):
    req = urllib.request.Request(
        "http://127.0.0.1:%d/hooks/gitlab" % port, data=b"{}",
        method="POST", headers={"X-Gitlab-Token": token,
                                "X-Gitlab-Event": "Merge Request Hook",
                                "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def deliveries(url):
    sim("POST", "/_sim/webhooks/wait", {"timeout_s": bound(20)})
    return [d for d in sim("GET", "/_sim/webhooks/deliveries")
            if d["url"] == url]


def scenario_webhook(bed):
    bed.start_postfix()
    port = free_port()
    secret = bed.write("webhook.secret", "s3cret-token\n", 0o600)
    extra = ("[webhook]\nenabled = yes\nlisten = 127.0.0.1:%d\n"
             "secret_file = %s\n" % (port, secret))
    bed.config(extra=extra)
    d = bed.daemon()
    wait_listen(port, d, bed)
    # The daemon's first poll, before the MR exists: what it mails later
    # comes from a delivery, or from nothing.
    wait_log(bed, "merge request(s) to look at")
    url = "http://127.0.0.1:%d/hooks/gitlab" % port

    say("a hook with the wrong token")
    check(post_hook(port, "wrong") == 401, "a wrong token is not 401")
    sim("POST", "/_sim/webhooks", {"project": 1, "url": url + "?wrong",
                                   "token": "not-the-secret"})
    create_mr("topic", "Teach x and y to count")
    got = deliveries(url + "?wrong")
    check(got and all(x["response_status"] == 401 for x in got),
          "deliveries with the wrong token: %s" %
          [(x["event"], x["response_status"]) for x in got])
    time.sleep(2)
    bed.settle()
    check(len(bed.archive()) == 0, "a refused delivery mailed something")

    say("a hook with the right token; a new MR is mailed at once")
    sim("POST", "/_sim/webhooks", {"project": 1, "url": url,
                                   "token": "s3cret-token"})
    t = time.monotonic()
    create_mr("topic2", "Count in y too")
    got = deliveries(url)
    check(got and got[-1]["response_status"] == 200,
          "the valid delivery: %s" % [x["response_status"] for x in got])
    bed.wait_mail(4, 30)
    say("series mailed %.1fs after the event" % (time.monotonic() - t))
    bed.settle()
    mails = bed.archive()
    check(len(mails) == 4 and len(series_of(mails, 2, 1)) == 4,
          "want MR 2's series only, got %s" %
          [(m["X-Patchbridge-MR"], m["Subject"]) for m in mails])

    say("SIGHUP with a broken configuration: refused, old one kept")
    with open(bed.cfg, encoding="utf-8") as f:
        broken = f.read() + "[outbound]\npoll_interval = soon\n"
    bed.write("patchbridge.conf", broken)  # (on every host of a pair)
    d.send_signal(signal.SIGHUP)
    wait_log(bed, "reload refused", 5)
    check(post_hook(port, "wrong") == 401, "the receiver is gone after HUP")
    d.send_signal(signal.SIGTERM)
    check(d.wait(timeout=30) == 0, "the daemon did not stop cleanly")
    check("stopped (signal)" in bed.log_text(), "no clean stop logged")


def scenario_drafts(bed):
    bed.start_postfix()
    bed.config(owners=OWNERS_BROKEN, outbound="mail_rebases = no")
    create_mr("wip", "Draft: not yet", draft=True)
    create_mr("topic", "Teach x and y to count")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    mails = bed.archive()
    check(len(mails) == 4, "want 4 mails, got %d" % len(mails))
    s = series_of(mails, 2, 1)
    check_threading(s, 3)
    log = bed.log_text()
    check(re.search(r"draft: skipped", log), "the draft was not reported")
    m = re.search(r"owners\.yaml:(\d+):(\d+): [^\n]*; mailing without "
                  r"owners Cc", log)
    check(m, "the broken owners.yaml is not reported with line and column")
    say("owners.yaml reported at line %s, column %s" % m.groups())
    for k in range(4):
        cc = addrs(s[k], "Cc")
        check(cc == {"alice@example.com", "bob@corp.example"},
              "mail %d: Cc %s" % (k, sorted(cc)))
    out = bed.run("send", "group/project!1")
    check("not mailed: a draft" in out, "send on a draft said: %s" % out)

    say("a pure rebase with mail_rebases = no is not mailed")
    sim("POST", "/_sim/projects/1/commits",
        {"branch": "main", "commits": [commit("README: say more", {
            "README.md": "# project\n\nIt counts.\n"})]})
    made = sim("POST", "/_sim/projects/1/commits",
               {"branch": "topic-rebased", "start": "main", "commits": V1})
    sim("POST", "/_sim/projects/1/merge_requests/2/push",
        {"sha": made["head"]})
    out = bed.run("send", "group/project!2")
    check(re.search(r"not mailed: head [0-9a-f]{12} is a pure rebase of v1 "
                    r"\(mail_rebases = no\)", out),
          "send on a rebase said: %s" % out)
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 4, "the draft or the rebase was mailed")


def scenario_retarget(bed):
    bed.start_postfix()
    bed.config(outbound="mail_rebases = no")
    sim("POST", "/_sim/projects/1/commits",
        {"branch": "dep", "start": "main", "commits": [
            commit("lib: add a helper", {"src/lib/h.c": "int h(void)\n{\n"
                                         "\treturn 0;\n}\n"})]})
    sim("POST", "/_sim/projects/1/commits",
        {"branch": "topic", "start": "dep", "commits": V1})
    sim("POST", "/_sim/projects/1/merge_requests",
        {"source_branch": "topic", "target_branch": "main",
         "title": "Teach x and y to count", "author": "alice",
         "description": "Teach x and y to count.", "reviewers": ["bob"]})
    bed.run("run", "--once")
    bed.wait_mail(5)
    bed.settle()
    s1 = series_of(bed.archive(), 1, 1)
    check(s1[0]["Subject"].startswith("[PATCH 0/4]"),
          "v1 cover subject: %s" % s1[0]["Subject"])
    base1, head1 = version_shas(1)

    say("retarget onto dep: the same head on a new base is v2")
    mr = sim("PUT", "/api/v4/projects/1/merge_requests/1",
             {"target_branch": "dep"})
    check(mr["target_branch"] == "dep", "not retargeted: %s" % mr)
    base2, head2 = version_shas(1)
    check(head2 == head1 and base2 != base1,
          "the retarget gave no new base: %s..%s" % (base2, head2))
    bed.run("run", "--once")
    bed.wait_mail(9)
    bed.settle()
    mails = bed.archive()
    check(len(mails) == 9, "want 9 mails, got %d" % len(mails))
    s2 = series_of(mails, 1, 2)
    check_threading(s2, 3)
    check(s2[0]["Subject"].startswith("[PATCH v2 0/3]"),
          "v2 cover subject: %s" % s2[0]["Subject"])
    check(s2[0]["In-Reply-To"].strip("<> ") == msgid(s1[0]),
          "v2 cover is not a reply to the v1 cover")
    body = s2[0].get_content()
    check("Changes in v2" in body and "lib: add a helper" in body,
          "the range-diff does not show the patch left out:\n" + body)
    check_git_am(bed, s2, 3, base2, head2)
    out = bed.run("send", "group/project!1")
    check("already mailed as v2" in out, "send said: %s" % out)

    say("dep takes the first patch: the same head on a new base is v3")
    first = [c["id"] for c in
             sim("GET", "/api/v4/projects/1/merge_requests/1/commits")
             if c["title"] == "a: count in x"][0]
    moved = sim("PUT", "/_sim/projects/1/branches/dep", {"sha": first})
    check([u["iid"] for u in moved["updated"]] == [1],
          "moving dep reloaded: %s" % moved)
    base3, head3 = version_shas(1)
    check(head3 == head1 and base3 == first, "v3 is %s..%s" % (base3, head3))
    bed.run("run", "--once")
    bed.wait_mail(12)
    bed.settle()
    s3 = series_of(bed.archive(), 1, 3)
    check(s3[0]["Subject"].startswith("[PATCH v3 0/2]"),
          "v3 cover subject: %s" % s3[0]["Subject"])

    say("retarget to a branch at dep: the same head and base, not mailed")
    sim("PUT", "/_sim/projects/1/branches/stable", {"sha": first})
    sim("PUT", "/api/v4/projects/1/merge_requests/1",
        {"target_branch": "stable"})
    base4, head4 = version_shas(1)
    check((base4, head4) == (base3, head3), "a new base: %s" % base4)
    out = bed.run("send", "group/project!1")
    check("already mailed as v3" in out, "send said: %s" % out)
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 12, "the same head and base was mailed")


HANDED_WRAPPER = """#!/bin/sh
# Count deliveries; on the 2nd while %(taken)s exists, hand the mail to
# Postfix and then hang (the MTA took it; no answer reaches the daemon);
# on the 6th while %(flag)s exists, hang before handing it over.
n=$(flock %(count)s.lock sh -c \
	'n=$(($(cat %(count)s 2>/dev/null || echo 0) + 1)); echo $n > %(count)s; echo $n')
if [ "$n" -eq 2 ] && [ -e %(taken)s ]; then
	cat > %(count)s.$$.msg
	/usr/sbin/sendmail -C %(etc)s "$@" < %(count)s.$$.msg || exit 75
	echo $$ > %(pid)s
	exec sleep 300
fi
if [ "$n" -eq 6 ] && [ -e %(flag)s ]; then
	echo $$ > %(pid)s
	exec sleep 300
fi
exec /usr/sbin/sendmail -C %(etc)s "$@"
"""


class ListArchive:
    """The list's public-inbox (v2), fed from the list server's maildir
    with public-inbox-mda, served by public-inbox-httpd on a free
    loopback port behind a recording pass-through, so the test sees the
    headers of every request the bridge makes."""

    def __init__(self, bed):
        self.bed = bed
        self.fed = set()
        self.seen = []  # (path, headers) of each request
        self.env, self.dir, self.pi_port, p = bedlib.public_inbox_served(bed.work)
        bed.procs.append(p)
        upstream, seen = self.pi_port, self.seen

        class Pass(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append((self.path, dict(self.headers)))
                try:
                    r = urllib.request.urlopen(
                        "http://127.0.0.1:%d%s" % (upstream, self.path),
                        timeout=10)
                    code, body = r.status, r.read()
                except urllib.error.HTTPError as e:
                    code, body = e.code, e.read()
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pass)
        self.url = "http://127.0.0.1:%d/list" % self.httpd.server_port
        threading.Thread(target=self.httpd.serve_forever,
                         daemon=True).start()

    def feed(self):
        """Deliver what the list got since the last feed, as the list's
        public-inbox-mda would."""
        for m in self.bed.archive():
            mid = msgid(m)
            if mid in self.fed:
                continue
            r = subprocess.run(["public-inbox-mda", "--no-precheck"],
                               input=m.raw, env=dict(
                                   self.env, ORIGINAL_RECIPIENT=LIST),
                               capture_output=True, timeout=60)
            check(r.returncode == 0, "public-inbox-mda: %s" %
                  r.stderr[-800:].decode(errors="replace"))
            self.fed.add(mid)

    def has(self, mid):
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/list/%s/raw" %
                                   (self.pi_port, mid), timeout=10)
            return True
        except urllib.error.HTTPError as e:
            check(e.code == 404, "public-inbox answered %d" % e.code)
            return False

    def stop(self):
        self.httpd.shutdown()


def kill_at_the_mta(bed, d, paths):
    """Wait until the wrapper hangs, then kill -9 the daemon and it."""
    wait_file(paths["pid"], d, bed, "the mail never reached the MTA")
    d.send_signal(signal.SIGKILL)
    d.wait()
    with open(paths["pid"]) as f:
        os.kill(int(f.read()), signal.SIGKILL)
    os.unlink(paths["pid"])


def scenario_handed(bed):
    bed.start_postfix()
    paths = {k: bed.shared_path(k)
             for k in ("count", "flag", "pid", "taken")}
    paths["etc"] = bed.env["CONFIG"]
    wrapper = bed.write("sendmail.sh", HANDED_WRAPPER % paths, 0o755)
    arch = ListArchive(bed)
    try:
        handed_steps(bed, paths, wrapper, arch)
    finally:
        arch.stop()


ARCHIVE_WAIT = 15  # s


def handed_steps(bed, paths, wrapper, arch):
    open(paths["taken"], "w").close()
    # archive_wait: long enough for the steps between the kill and the
    # look that must find mail 6 held, on a loaded machine under ASan
    # (they took 10 s once with 3 s: the mail had gone already).
    bed.config(sendmail=wrapper, outbound="archive_wait = %ds" % ARCHIVE_WAIT,
               extra="archive_url = %s/" % arch.url)
    create_mr("topic", "Teach x and y to count")

    say("the MTA takes mail 2, the daemon is killed before its answer")
    kill_at_the_mta(bed, bed.daemon(), paths)
    os.unlink(paths["taken"])
    bed.wait_mail(2)
    bed.settle()
    ids = [msgid(m) for m in bed.archive()]
    check(len(ids) == 2, "want 2 mails on the list: %s" % ids)
    out = bed.run("status")
    check(out.count("outcome unknown") == 1,
          "status does not show the mail handed over: %s" % out)
    taken = re.search(r"mail 1: queued, handed to the MTA at [^\n]*\n"
                      r"\s*<([^>]+)>", out)
    check(taken and taken.group(1) in ids, "the handed mail: %s" % out)
    why = bed.run("why", taken.group(1))
    check("outcome unknown: the list archive is asked" in why,
          "why does not tell: %s" % why)

    say("the list archive has it: the restart records it, sends the rest")
    arch.feed()
    check(arch.has(taken.group(1)), "public-inbox does not have the mail")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    ids = [msgid(m) for m in bed.archive()]
    check(len(ids) == 4 and len(set(ids)) == 4,
          "Message-IDs delivered: %s" % ids)
    check("<%s> found in the list archive: recorded as sent" %
          taken.group(1) in bed.log_text(), "no log line of the archive")
    why = bed.run("why", taken.group(1))
    check("sent: found in the list archive" in why and
          "not sent again" in why, "why does not tell: %s" % why)
    sent = json.loads(bed.run("why", "--json", taken.group(1)))["sent"]
    check(sent["sent_how"] == "archive", "why --json: %s" % sent)
    check(bed.run("status").count("queue: empty") == 1, "queue not empty")
    check(any(taken.group(1).replace("/", "%2F") in p
              for p, _ in arch.seen), "the archive was not asked: %s" %
          arch.seen)

    say("the MTA never got mail 6: not archived, sent after archive_wait")
    arch.feed()
    open(paths["flag"], "w").close()
    create_mr("topic2", "Count in y too")
    kill_at_the_mta(bed, bed.daemon(), paths)
    os.unlink(paths["flag"])
    bed.wait_mail(5)
    bed.settle()
    arch.feed()
    asked = len(arch.seen)
    bed.run("run", "--once", ok=(0, 75))
    check(len(arch.seen) > asked, "the archive was not asked")
    out = bed.run("status")
    check("not in the list archive yet" in out and
          "outcome unknown" in out, "status: %s" % out)
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 5, "mail 6 was sent before archive_wait")
    # Sent again once archive_wait has run out since it was handed over.
    deadline = time.monotonic() + ARCHIVE_WAIT + bound(30)
    while len(bed.archive()) < 6:
        check(time.monotonic() < deadline, "mail 6 not sent again %d s "
              "after archive_wait" % 30)
        time.sleep(1)
        bed.run("run", "--once", ok=(0, 75))
        bed.settle()
    bed.wait_mail(8)
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    ids = [msgid(m) for m in bed.archive()]
    check(len(ids) == 8 and len(set(ids)) == 8,
          "Message-IDs delivered: %s" % ids)
    check("is not in the list archive" in bed.log_text() and
          "sending it again" in bed.log_text(), "no log line of the resend")

    say("the archive never saw the forge token")
    for path, headers in arch.seen:
        for k, v in headers.items():
            check(k.lower() not in ("private-token", "authorization",
                                    "job-token", "cookie") and
                  "bot-token" not in v,
                  "the archive got %s: %s on %s" % (k, v, path))
    check(arch.seen, "no request reached the archive")


DBGONE_WRAPPER = """#!/bin/sh
# On the 2nd delivery while %(flag)s exists: hand the mail to Postfix,
# then wait for %(release)s before answering 0 (accepted).
n=$(flock %(count)s.lock sh -c \
	'n=$(($(cat %(count)s 2>/dev/null || echo 0) + 1)); echo $n > %(count)s; echo $n')
if [ "$n" -eq 2 ] && [ -e %(flag)s ]; then
	cat > %(count)s.$$.msg
	/usr/sbin/sendmail -C %(etc)s "$@" < %(count)s.$$.msg || exit 75
	echo $$ > %(pid)s
	while [ ! -e %(release)s ]; do sleep 0.1; done
	exit 0
fi
exec /usr/sbin/sendmail -C %(etc)s "$@"
"""

PGBED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pg",
                     "pgbed")


def pgbed(*argv):
    out = subprocess.run([PGBED] + list(argv), capture_output=True,
                         text=True, timeout=120)
    if out.returncode == 77:
        raise Fail("pgbed: no PostgreSQL (scripts/install-deps.sh)")
    check(out.returncode == 0, "pgbed %s: %s" % (argv[0], out.stderr[-800:]))
    return out.stdout.strip()


def wait_log(bed, text, timeout=60):
    """The daemon's log line text, for at most bound(timeout) s."""
    wait_for(lambda: text in bed.log_text(), timeout,
             "no %r in the log" % text)


def wait_file(path, d, bed, what, timeout=30):
    """path exists (the MTA stand-in wrote it) while the daemon runs."""
    def there():
        check(d.poll() is None, "the daemon died: %s" %
              bed.log_text()[-2000:])
        return os.path.exists(path)
    wait_for(there, timeout, what, every=0.05)


def scenario_dbgone(bed):
    if bed.state_server():
        # the bed's hosts share a PostgreSQL state already: that one
        dbgone_steps(bed, bed.state_server(), own=False)
        return
    pgdir = os.path.join(bed.work, "pg")
    os.makedirs(pgdir, exist_ok=True)
    pgbed("start", pgdir)
    try:
        dbgone_steps(bed, pgdir, own=True)
    finally:
        subprocess.run([PGBED, "stop", pgdir], capture_output=True,
                       timeout=120)


def dbgone_steps(bed, pgdir, own):
    bed.start_postfix()
    state = ""
    if own:
        conninfo = bed.write("conninfo", pgbed("createdb", pgdir,
                                               "bridge") + "\n", 0o600)
        state = "backend = postgresql\nconninfo_file = %s\nlease = 10m" % \
            conninfo
    paths = {k: bed.shared_path(k)
             for k in ("count", "flag", "pid", "release")}
    paths["etc"] = bed.env["CONFIG"]
    wrapper = bed.write("sendmail.sh", DBGONE_WRAPPER % paths, 0o755)
    open(paths["flag"], "w").close()
    # No list archive: only the daemon's memory keeps the mail once.
    bed.config(sendmail=wrapper, state=state)
    create_mr("topic", "Teach x and y to count")

    say("the MTA takes mail 2; the database goes before the 250 comes")
    d = bed.daemon()
    wait_file(paths["pid"], d, bed, "mail 2 never reached the MTA")
    pgbed("down", pgdir, "immediate")
    open(paths["release"], "w").close()
    wait_log(bed, "but not recorded as sent")
    time.sleep(6)  # a pass or more with the database away
    pgbed("up", pgdir)
    wait_log(bed, "the MTA's acceptance is recorded now", 60)
    late = re.search(r"mail <([^>]+)>: the MTA's acceptance is recorded now",
                     bed.log_text())
    check(late, "no log line names the mail recorded late")
    why = bed.run("why", late.group(1))
    check("once the state database was back" in why,
          "why does not tell: %s" % why)
    sent = json.loads(bed.run("why", "--json", late.group(1)))["sent"]
    check(sent["sent_how"] == "late", "why --json: %s" % sent)
    bed.wait_mail(4)
    time.sleep(2)
    bed.settle()
    ids = [msgid(m) for m in bed.archive()]
    check(len(ids) == 4 and len(set(ids)) == 4,
          "Message-IDs delivered: %s" % ids)
    check(d.poll() is None, "the daemon died")
    check(bed.run("status").count("queue: empty") == 1, "queue not empty")


def attest_env(bed, keyring, policy):
    """b4's and patatt's environment: a private HOME whose git config
    names keyring (patatt's layout) as the key source of both."""
    home = os.path.join(bed.work, "readerhome")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, HOME=home, GIT_CONFIG_NOSYSTEM="1",
               XDG_CACHE_HOME=os.path.join(home, "cache"),
               XDG_DATA_HOME=os.path.join(home, "data"), LC_ALL="C.UTF-8")
    for k, v in (("user.name", "Reader"), ("user.email", "r@example.org"),
                 ("b4.keyringsrc", keyring),
                 ("b4.attestation-policy", policy),
                 ("patatt.keyringsrc", keyring)):
        subprocess.run(["git", "config", "--global", k, v], env=env,
                       check=True)
    return env


def attest_check(bed, mbox, env, what):
    """b4 am and patatt validate on mbox: (b4's exit, its output,
    patatt's exit, its output)."""
    out = os.path.join(bed.work, "b4-" + what)
    os.makedirs(out, exist_ok=True)
    with open(mbox, "rb") as f:
        b4 = subprocess.run(["b4", "am", "-m", "-", "-o", out], stdin=f,
                            env=env, cwd=bed.work, capture_output=True,
                            timeout=bound(120))
    pt = subprocess.run(["/usr/bin/python3", "-c",
                         "import sys, patatt; sys.exit(patatt.command())",
                         "validate", mbox], env=env, capture_output=True,
                        timeout=bound(120))
    b4out = (b4.stdout + b4.stderr).decode(errors="replace")
    ptout = (pt.stdout + pt.stderr).decode(errors="replace")
    say("b4 am (%s) -> %d\n%s" % (what, b4.returncode, b4out))
    say("patatt validate (%s) -> %d\n%s" % (what, pt.returncode, ptout))
    return b4.returncode, b4out, pt.returncode, ptout


def scenario_attest(bed):
    """[outbound] attest: the daemon signs the series it mails; b4 and
    patatt validate it as the list archive serves it (public-inbox's
    thread mbox), and a byte changed on the way fails both."""
    for tool in ("b4", "public-inbox-mda", "/usr/bin/python3"):
        check(subprocess.run(["sh", "-c", "command -v %s" % tool],
                             capture_output=True).returncode == 0,
              "%s is not installed (scripts/install-deps.sh)" % tool)
    bed.start_postfix()
    key = os.path.join(bed.work, "bridge.key")
    bed.config(outbound="attest = yes\nattest_key_file = %s\n" % key)
    say("the key, and the keyring an operator publishes")
    out = bed.run("attest-key", "--generate")
    check(oct(os.stat(key).st_mode & 0o777) == "0o600",
          "the key file is not 0600")
    path = re.search(r"^keyring: +(\S+)$", out, re.M)
    check(path and path.group(1) ==
          "ed25519/example.org/bridge/default", "keyring path: %s" % out)
    pub = bed.run("attest-key", "--public").strip()
    keyring = os.path.join(bed.work, "keyring")
    os.makedirs(os.path.dirname(os.path.join(keyring, path.group(1))))
    with open(os.path.join(keyring, path.group(1)), "w") as f:
        f.write(pub + "\n")

    create_mr("topic", "Teach x and y to count")
    out = bed.run("send", "group/project!1")
    check("mailed v1 (4 mails)" in out, "send said: %s" % out)
    bed.wait_mail(4)
    bed.settle()
    s = series_of(bed.archive(), 1, 1)
    for k in range(4):
        check(s[k]["X-Developer-Signature"] and
              "i=bridge@example.org;" in
              re.sub(r"\s+", " ", s[k]["X-Developer-Signature"]),
              "mail %d is not signed for the bridge" % k)

    say("the list archive's thread, as a reader fetches it")
    arch = ListArchive(bed)
    try:
        arch.feed()
        raw = urllib.request.urlopen(
            "http://127.0.0.1:%d/list/%s/t.mbox.gz" %
            (arch.pi_port, msgid(s[0])), timeout=bound(30)).read()
    finally:
        arch.stop()
    mbox = os.path.join(bed.work, "thread.mbox")
    with open(mbox, "wb") as f:
        f.write(gzip.decompress(raw))
    env = attest_env(bed, keyring, "hardfail")
    b4rc, b4out, ptrc, ptout = attest_check(bed, mbox, env, "archive")
    check(b4rc == 0, "b4 am exited %d" % b4rc)
    check("Signed: ed25519/bridge@example.org" in b4out,
          "b4 did not report the bridge's signature")
    check("BADSIG" not in b4out and "No key" not in b4out,
          "b4 reported a failure")
    check(ptrc == 0 and ptout.count("PASS | bridge@example.org,") == 4,
          "patatt validate did not pass the 4 mails")

    say("one byte changed on the way: both fail")
    with open(mbox, "rb") as f:
        data = f.read()
    at = data.index(b"\n+", data.index(b"[PATCH 2/3]"))
    data = data[:at + 2] + bytes([data[at + 2] ^ 0x20]) + data[at + 3:]
    bad = os.path.join(bed.work, "changed.mbox")
    with open(bad, "wb") as f:
        f.write(data)
    b4rc, b4out, ptrc, ptout = attest_check(bed, bad, env, "changed")
    check(b4rc != 0 and "BADSIG: ed25519/bridge@example.org" in b4out,
          "b4 (hardfail) did not refuse the changed series")
    check(ptrc != 0 and re.search(r"^BADSIG \| bridge@example.org, "
                                  r"\[PATCH 2/3\]", ptout, re.M),
          "patatt did not find patch 2 BADSIG")
    check(ptout.count("PASS | bridge@example.org,") == 3,
          "patatt did not pass the 3 unchanged mails")


SCENARIOS = {"series": scenario_series, "crash": scenario_crash,
             "webhook": scenario_webhook, "drafts": scenario_drafts,
             "handed": scenario_handed, "dbgone": scenario_dbgone,
             "retarget": scenario_retarget, "attest": scenario_attest}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--patchbridge", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    rc = bedlib.skip_status()
    if rc is not None:
        return rc
    sim("POST", "/_sim/reset", {"seed": SEED})
    return bedlib.run_scenario(Bed(args, args.scenario),
                               SCENARIOS[args.scenario])


if __name__ == "__main__":
    sys.exit(main())
