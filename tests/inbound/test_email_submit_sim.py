#!/usr/bin/env python3
"""A series posted to the list becomes a merge request, through the daemon.

Run through tests/forgesim/run-with-sim.sh as SCRIPT PATCHBRIDGE SEED
(PB_FORGESIM_URL).  A three-patch topic made with real git (git
format-patch --cover-letter --thread --base, what git send-email sends)
is spooled as the milter spools it (`patchbridge replay`, out of order)
and taken by `patchbridge run --once`: one merge request appears, from a
branch under email/, labelled from-email, whose commits have the
originals' authors, dates, messages and patch-ids; the thread map holds
the mails as its revision 1, nothing is mailed to the list, and a list
reply to patch 2/3 becomes a comment on that merge request through the
existing inbound path; a forge comment is mailed in reply to the
contributor's own cover letter; `patchbridge why` on a submitted mail
says what became of it.  A second run changes nothing.

Then, each with a state of its own: a verified sender whose address
maps to a forge user ([inbound] user_map) has the merge request opened
as that user (GitLab's Sudo; the simulator records the Sudo user as its
author), an unverified one by the bridge with "From: ... by email"; and
the daemon killed with SIGKILL after its push, while the simulator
holds its POST merge_requests (the fault kind "hold"), then started
again: one branch on the same commits, one merge request, the thread
map its revision 1.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

URL = os.environ.get("PB_FORGESIM_URL")
PROJECT = "group/project"
# `run --once` answers 75 (EX_TEMPFAIL) when a mail could not be sent:
# the seeded merge request !1 is mailed to no MTA here.
DAEMON_OK = (0, 75)

CONFIG = """\
[bridge]
address = patchbridge@bridge.example.org
domain = bridge.example.org
list_address = list@example.org
[forge]
url = %(url)s
token_file = %(dir)s/token
retry_base = 10ms
retry_max = 5s
timeout = 20s
[state]
path = %(dir)s/state.db
[spool]
dir = %(dir)s/spool
[log]
level = debug
[inbound]
approval_policy = none
retry_base = 1s
retry_max = 2s
[project "group/project"]
email_submissions = anyone
email_target_branch = main
"""


def fail(msg):
    print("test_email_submit_sim: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


GITCONFIG = None  # an empty global configuration, made in main()


def run(cmd, env=None, ok=(0,)):
    e = dict(os.environ, GIT_CONFIG_GLOBAL=GITCONFIG,
             GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    e.update(env or {})
    p = subprocess.run(cmd, env=e, capture_output=True, text=True,
                       timeout=300, check=False)
    if p.returncode not in ok:
        fail("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout,
                                    p.stderr))
    return p.stdout


def api(path):
    req = urllib.request.Request(URL + "/api/v4/" + path,
                                 headers={"PRIVATE-TOKEN": "admin-token"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def patch_ids(work, rev_range):
    out = []
    for c in run(["git", "-C", work, "rev-list", "--reverse",
                  rev_range]).split():
        fp = run(["git", "-C", work, "format-patch", "-1", "--stdout", c])
        p = subprocess.run(["git", "patch-id", "--stable"], input=fp,
                           capture_output=True, text=True, check=True)
        out.append(p.stdout.split()[0])
    return out


def main():
    if not URL or len(sys.argv) < 2:
        print("run through run-with-sim.sh with the path of patchbridge")
        return 2
    pb = sys.argv[1]
    global GITCONFIG
    tmp = tempfile.mkdtemp(prefix="pb-email.")
    GITCONFIG = os.path.join(tmp, "gitconfig")
    with open(GITCONFIG, "w"):
        pass
    try:
        rc = story(pb, tmp)
        if rc == 0:
            rc = sudo_story(pb, os.path.join(tmp, "sudo"))
        if rc == 0:
            rc = kill_story(pb, os.path.join(tmp, "kill"))
        return rc
    finally:
        if os.environ.get("PB_TEST_KEEP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)


ANN = {"GIT_AUTHOR_NAME": "Ann Author",
       "GIT_AUTHOR_EMAIL": "ann@example.org",
       "GIT_COMMITTER_NAME": "Ann Author",
       "GIT_COMMITTER_EMAIL": "ann@example.org"}


def setup(tmp, config=CONFIG, token="bot-token"):
    """tmp's configuration (config) and token file, and a clone of the
    project in tmp/work: (the configuration's path, work, main's
    commit)."""
    conf = os.path.join(tmp, "patchbridge.conf")
    with open(conf, "w") as f:
        f.write(config % {"url": URL, "dir": tmp})
    with open(os.path.join(tmp, "token"), "w") as f:
        f.write(token + "\n")
    os.chmod(os.path.join(tmp, "token"), 0o600)
    work = os.path.join(tmp, "work")
    run(["git", "clone", "-q", URL + "/" + PROJECT + ".git", work])
    return conf, work, run(["git", "-C", work, "rev-parse", "HEAD"]).strip()


def commit_file(work, path, text, message, date):
    """path with text, committed by Ann at date with message."""
    with open(os.path.join(work, path), "w") as f:
        f.write(text)
    run(["git", "-C", work, "add", "-A"])
    run(["git", "-C", work, "commit", "-q", "-m", message, "-m",
         "Signed-off-by: Ann Author <ann@example.org>"],
        env=dict(ANN, GIT_AUTHOR_DATE=date))


def mails_of(out, work, base, cover=None):
    """base..HEAD of work as git format-patch makes it for git send-email
    (threaded; a cover letter (subject, blurb) when cover is given) in
    out: the files, the cover letter first."""
    run(["git", "-C", work, "format-patch", "-q", "--thread",
         "--base=" + base, "-o", out, base + "..HEAD"] +
        (["--cover-letter"] if cover else []), env=ANN)
    files = [os.path.join(out, n) for n in sorted(os.listdir(out))]
    if cover:
        with open(files[0]) as f:
            text = f.read()
        with open(files[0], "w") as f:
            f.write(text.replace("*** SUBJECT HERE ***", cover[0])
                    .replace("*** BLURB HERE ***", cover[1]))
    return files


def story(pb, tmp):
    conf, work, base = setup(tmp)
    for n, date in ((1, "@1700000000 +0100"), (2, "@1700000600 -0500"),
                    (3, "@1700001200 +0530")):
        commit_file(work, "topic-%d.txt" % n, "change %d\n" % n,
                    "topic: change %d" % n, date)
    files = mails_of(os.path.join(tmp, "v1"), work, base,
                     ("topic: three changes", "Three changes, by mail."))

    # Spooled as the milter spools them, out of order; then the daemon.
    out = run([pb, "-c", conf, "replay", files[2], files[0], files[3],
               files[1]])
    if out.count("spooled as") != 4:
        fail("replay: %r" % out)
    before = {m["iid"] for m in api("projects/1/merge_requests")}
    run([pb, "-c", conf, "run", "--once", "--foreground"], ok=DAEMON_OK)
    mrs = [m for m in api("projects/1/merge_requests")
           if m["iid"] not in before]
    if len(mrs) != 1:
        fail("%d new merge requests" % len(mrs))
    mr = mrs[0]
    iid = mr["iid"]
    if mr["title"] != "topic: three changes" or \
            mr["labels"] != ["from-email"] or \
            not mr["source_branch"].startswith("email/ann/") or \
            not mr["description"].startswith(
                "From: Ann Author <ann@example.org> by email"):
        fail("merge request %r" % mr)
    run(["git", "-C", work, "fetch", "-q", URL + "/" + PROJECT + ".git",
         "refs/heads/%s:refs/mr" % mr["source_branch"]])
    fmt = "--format=%an%x00%ae%x00%ad%x00%B%x01"
    if run(["git", "-C", work, "log", "--reverse", "--date=raw", fmt,
            base + "..refs/mr"]) != \
            run(["git", "-C", work, "log", "--reverse", "--date=raw", fmt,
                 base + "..HEAD"]):
        fail("commits differ from the originals")
    if patch_ids(work, base + "..refs/mr") != \
            patch_ids(work, base + "..HEAD"):
        fail("patch-ids differ")
    db = sqlite3.connect(os.path.join(tmp, "state.db"))
    rows = db.execute("SELECT patch, kind, revision, state FROM thread_map"
                      " WHERE project = ? AND iid = ? ORDER BY patch",
                      (PROJECT, iid)).fetchall()
    queued = db.execute("SELECT COUNT(*) FROM outmail o JOIN thread_map t"
                        " ON t.message_id = o.message_id WHERE t.iid = ?",
                        (iid,)).fetchone()[0]
    db.close()
    if rows != [(0, "cover", 1, "sent"), (1, "patch", 1, "sent"),
                (2, "patch", 1, "sent"), (3, "patch", 1, "sent")]:
        fail("thread map %r" % rows)
    if queued:
        fail("%d mails queued for the list about !%d" % (queued, iid))
    print("!%d: %s, 3 commits as mailed" % (iid, mr["source_branch"]))

    # A list reply to patch 2/3 becomes a comment on that MR.
    with open(files[2]) as f:
        p2 = f.read()
    p2_id = [l.split(":", 1)[1].strip() for l in p2.splitlines()
             if l.lower().startswith("message-id:")][0]
    # `why` on the submitted mail says what became of it.
    out = run([pb, "-c", conf, "why", p2_id.strip("<>")])
    if "a new series posted to the list: patch 2 of v1, 3 patches" \
            not in out or "opened as group/project!%d" % iid not in out:
        fail("why: %r" % out)
    reply = os.path.join(tmp, "reply.eml")
    with open(reply, "w") as f:
        f.write("From: Rita Reviewer <rita@example.org>\n"
                "To: list@example.org\n"
                "Subject: Re: [PATCH 2/3] topic: change 2\n"
                "Message-ID: <reply-1@example.org>\n"
                "In-Reply-To: %s\nReferences: %s\n\n"
                "Change 2 reads well.\n" % (p2_id, p2_id))
    out = run([pb, "-c", conf, "replay", reply])
    if "group/project!%d v1 patch 2" % iid not in out:
        fail("the reply was not placed on !%d: %r" % (iid, out))
    run([pb, "-c", conf, "run", "--once", "--foreground"], ok=DAEMON_OK)
    notes = api("projects/1/merge_requests/%d/notes" % iid)
    if not any("Change 2 reads well." in n["body"] for n in notes):
        fail("no comment on !%d" % iid)
    print("a list reply to 2/3: a comment on !%d" % iid)

    # A forge comment is mailed in reply to the contributor's own mail
    # (queued: no MTA here).
    req = urllib.request.Request(
        URL + "/api/v4/projects/1/merge_requests/%d/notes" % iid,
        data=json.dumps({"body": "Thanks, Ann: looks right."}).encode(),
        method="POST", headers={"PRIVATE-TOKEN": "user-token",
                                "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        r.read()
    run([pb, "-c", conf, "run", "--once", "--foreground"], ok=DAEMON_OK)
    with open(files[0]) as f:
        cover_id = [l.split(":", 1)[1].strip() for l in f.read().splitlines()
                    if l.lower().startswith("message-id:")][0]
    db = sqlite3.connect(os.path.join(tmp, "state.db"))
    queued = [bytes(m[0]).decode("utf-8", "replace") for m in db.execute(
        "SELECT o.message FROM outmail o JOIN thread_map t"
        " ON t.message_id = o.message_id WHERE t.iid = ?", (iid,))]
    db.close()
    answers = [m for m in queued if "Thanks, Ann: looks right." in m]
    if len(answers) != 1 or ("In-Reply-To: %s" % cover_id) not in answers[0]:
        fail("the forge comment is not mailed in reply to %s: %r" %
             (cover_id, queued))
    print("a forge comment: mailed in reply to the cover letter %s" %
          cover_id)

    # Again: nothing new.
    run([pb, "-c", conf, "run", "--once", "--foreground"], ok=DAEMON_OK)
    if len([m for m in api("projects/1/merge_requests")
            if m["iid"] not in before]) != 1:
        fail("a second merge request")
    return 0


SUDO_CONFIG = CONFIG.replace(
    "[state]\n", "[milter]\ntrusted_authserv_id = lists.example.test\n"
    "[state]\n").replace("[inbound]\n",
                          "[inbound]\nuser_map = %(dir)s/users\n")

VERIFIED = ("Authentication-Results: lists.example.test; dkim=pass"
            " header.d=example.org header.i=@example.org")


def sudo_story(pb, tmp):
    """The merge request is opened as the sender's forge user (GitLab's
    Sudo, as approvals are given) when the address maps to one and the
    series is verified; else, and when the token may not act for anyone,
    by the bridge, with "From: ... by email"."""
    os.makedirs(tmp)
    # an administrator's token with the sudo scope (seed-default.json)
    conf, work, base = setup(tmp, SUDO_CONFIG, "admin-token")
    with open(os.path.join(tmp, "users"), "w") as f:
        f.write("ann@example.org alice\n")
    results = {}
    # the last with a token that may not act for anyone: the bridge
    for name, verified in (("signed", True), ("unsigned", False),
                           ("nosudo", True)):
        if name == "nosudo":
            with open(os.path.join(tmp, "token"), "w") as f:
                f.write("bot-token\n")
        run(["git", "-C", work, "checkout", "-q", "-B", name, base])
        commit_file(work, name + ".txt", name + "\n", "%s: one file" % name,
                    "@1700003000 +0000")
        mail = mails_of(os.path.join(tmp, name), work, base)[0]
        with open(mail) as f:
            lines = f.read().split("\n")
        if verified:
            lines.insert(1 if lines[0].startswith("From ") else 0, VERIFIED)
        with open(mail, "w") as f:
            f.write("\n".join(lines))
        before = {m["iid"] for m in api("projects/1/merge_requests")}
        out = run([pb, "-c", conf, "replay", mail])
        if "spooled as" not in out:
            fail("replay: %r" % out)
        run([pb, "-c", conf, "run", "--once", "--foreground"],
            ok=DAEMON_OK)
        mrs = [m for m in api("projects/1/merge_requests")
               if m["iid"] not in before]
        if len(mrs) != 1:
            fail("%s: %d new merge requests" % (name, len(mrs)))
        results[name] = mrs[0]
    signed, unsigned = results["signed"], results["unsigned"]
    if signed["author"]["username"] != "alice" or \
            "by email" in signed["description"]:
        fail("a verified sender's merge request: by %s, %r" %
             (signed["author"]["username"], signed["description"]))
    if unsigned["author"]["username"] != "root" or \
            not unsigned["description"].startswith(
                "From: Ann Author <ann@example.org> by email"):
        fail("an unverified sender's merge request: by %s, %r" %
             (unsigned["author"]["username"], unsigned["description"]))
    nosudo = results["nosudo"]
    if nosudo["author"]["username"] != "patchbridge" or \
            not nosudo["description"].startswith(
                "From: Ann Author <ann@example.org> by email"):
        fail("a verified sender's merge request, no sudo: by %s, %r" %
             (nosudo["author"]["username"], nosudo["description"]))
    print("!%d opened as alice (verified, mapped), !%d by the bridge "
          "(unverified), !%d by the bridge (a token without sudo)" %
          (signed["iid"], unsigned["iid"], nosudo["iid"]))
    return 0


def sim(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(URL + "/_sim/" + path, data=data,
                                 method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")


def wait_for(what, cond, timeout=120):
    """Poll cond until it is true; fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            fail("waited %d s for %s" % (timeout, what))
        time.sleep(0.05)


def kill_story(pb, tmp):
    """kill -9 of the daemon after the push, before POST merge_requests
    (the simulator holds that request until the daemon is dead), then a
    restart: one branch, on the same commits, one merge request, and the
    thread map holds the mails as its revision 1."""
    os.makedirs(tmp)
    conf, work, base = setup(tmp)
    for n in (1, 2):
        commit_file(work, "killed-%d.txt" % n, "killed %d\n" % n,
                    "killed: file %d" % n, "@1700004000 +0000")
    files = mails_of(os.path.join(tmp, "mails"), work, base,
                     ("killed: two files", "Sent before a kill -9."))
    out = run([pb, "-c", conf, "replay"] + files)
    if out.count("spooled as") != 3:
        fail("replay: %r" % out)

    def heads():
        return run(["git", "-C", work, "ls-remote", URL + "/" + PROJECT +
                    ".git", "refs/heads/email/ann/killed-*"]).split()

    def mrs():
        return [m for m in api("projects/1/merge_requests?state=all")
                if m["source_branch"].startswith("email/ann/killed-")]

    rule = sim("POST", "faults", {"kind": "hold", "method": "POST",
                                  "path": "/merge_requests$", "count": 1})
    log = open(os.path.join(tmp, "daemon.log"), "w")
    e = dict(os.environ, GIT_CONFIG_GLOBAL=GITCONFIG,
             GIT_CONFIG_NOSYSTEM="1")
    daemon = subprocess.Popen([pb, "-c", conf, "run", "--foreground"],
                              stdout=log, stderr=log, env=e)
    try:
        wait_for("the daemon's POST merge_requests",
                 lambda: any(r["id"] == rule["id"] and r["hits"] >= 1
                             for r in sim("GET", "faults")))
        pushed = heads()
        if len(pushed) != 2:
            fail("held before the merge request, yet no branch: %r" %
                 pushed)
        daemon.kill()  # SIGKILL
        daemon.wait(timeout=60)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(timeout=60)
        log.close()
        sim("DELETE", "faults")  # the held request: closed, never run
    if mrs():
        fail("a merge request before the restart: %r" % mrs())
    print("killed (SIGKILL) after the push of %s, before POST "
          "merge_requests" % pushed[1])

    run([pb, "-c", conf, "run", "--once", "--foreground"], ok=DAEMON_OK)
    got = mrs()
    if len(got) != 1:
        fail("%d merge requests after the restart" % len(got))
    if heads() != pushed:
        fail("the restart pushed other commits: %r, %r" % (pushed, heads()))
    iid = got[0]["iid"]
    db = sqlite3.connect(os.path.join(tmp, "state.db"))
    rows = db.execute("SELECT patch, kind, revision, state FROM thread_map"
                      " WHERE project = ? AND iid = ? ORDER BY patch",
                      (PROJECT, iid)).fetchall()
    sub = db.execute("SELECT state, iid FROM submissions").fetchall()
    db.close()
    if rows != [(0, "cover", 1, "sent"), (1, "patch", 1, "sent"),
                (2, "patch", 1, "sent")]:
        fail("thread map after the restart: %r" % rows)
    if sub != [("opened", iid)]:
        fail("the series after the restart: %r" % sub)
    run([pb, "-c", conf, "run", "--once", "--foreground"], ok=DAEMON_OK)
    if len(mrs()) != 1 or heads() != pushed:
        fail("a second restart changed something")
    print("restarted: one branch, one merge request (!%d), the thread map "
          "its revision 1" % iid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
