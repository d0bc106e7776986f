#!/usr/bin/env python3
"""A series posted to the list becomes a merge request (GitLab simulator).

Run through tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL), with the
path of emailmr_tool.  A three-patch topic made with real git (git
format-patch --cover-letter --thread --base, the mails git send-email
sends), fed out of order, is collected until whole and opened as one
merge request: its commits have the originals' authors, dates, messages
and patch-ids; title and description come from the cover letter, with
"From: ... by email" on top and the label from-email; the thread map
holds the mails as revision 1.  The same mails again change nothing (no
second series, no second merge request).  Not collected: a pull
request, a reply, any mail when the project takes none ("off"), an
unverified sender under "verified".  A single patch that does not apply
is not opened, and says which patch and which base.  A run that stops
between the push and the merge request (the forge refuses the request
until the run gives up: what a kill -9 there leaves) is followed by one
that makes the same commits and opens one merge request.  A next
version not sent in reply to the one before updates its topic's merge
request, found by the change-id of its cover letter (under another
title) or by its title from the same sender; the same v2 from another
sender opens its own; a version not newer than the latest taken updates
nothing.
"""

import json
import re
import os
import sqlite3
import subprocess
import sys
import tempfile
import urllib.request

URL = os.environ.get("PB_FORGESIM_URL")
TOOL = sys.argv[1] if len(sys.argv) > 1 else None
PROJECT = "group/project"


def fail(msg):
    print("mailmr_sim: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def git(*args, cwd=None, env=None):
    e = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull,
             GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0",
             GIT_COMMITTER_NAME="Ann Author",
             GIT_COMMITTER_EMAIL="ann@example.org")
    for key in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        e.pop(key, None)
    e.update(env or {})
    return subprocess.run(["git"] + list(args), cwd=cwd, env=e, check=True,
                          stdout=subprocess.PIPE).stdout.decode()


def ctl(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(URL + "/_sim/" + path, data=data,
                                 method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        r.read()


def api(path):
    req = urllib.request.Request(URL + "/api/v4" + path,
                                 headers={"PRIVATE-TOKEN": "user-token"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def tool(state, mirror, policy, *mails):
    p = subprocess.run([TOOL, state, URL, "bot-token", PROJECT, mirror,
                        "main", policy] + list(mails),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=False)
    out = p.stdout.decode()
    sys.stdout.write(out)
    sys.stderr.write(p.stderr.decode())
    return p.returncode, out


def commit(work, n, date):
    with open(os.path.join(work, "topic-%d.txt" % n), "w") as f:
        f.write("change %d\n" % n)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "topic: change %d" % n, "-m",
        "Why change %d matters.\n\nSigned-off-by: Ann Author "
        "<ann@example.org>" % n, cwd=work,
        env={"GIT_AUTHOR_NAME": "Ann Author",
             "GIT_AUTHOR_EMAIL": "ann@example.org",
             "GIT_AUTHOR_DATE": date,
             "GIT_COMMITTER_NAME": "Ann Author",
             "GIT_COMMITTER_EMAIL": "ann@example.org"})


def patch_ids(work, rev_range):
    out = []
    for c in git("rev-list", "--reverse", rev_range, cwd=work).split():
        fp = git("format-patch", "-1", "--stdout", c, cwd=work)
        p = subprocess.run(["git", "patch-id", "--stable"], input=fp.encode(),
                           stdout=subprocess.PIPE, check=True)
        out.append(p.stdout.decode().split()[0])
    return out


def main():
    if not URL or not TOOL:
        print("run through run-with-sim.sh with the path of emailmr_tool")
        return 2
    tmp = tempfile.mkdtemp(prefix="mailmr.",
                           dir=os.environ.get("PB_TEST_TMP"))
    state = os.path.join(tmp, "state.db")
    mirror = os.path.join(tmp, "mirror.git")
    work = os.path.join(tmp, "work")
    git("clone", "-q", URL + "/" + PROJECT + ".git", work)
    base = git("rev-parse", "HEAD", cwd=work).strip()
    commit(work, 1, "@1700000000 +0100")
    commit(work, 2, "@1700000600 -0500")
    commit(work, 3, "@1700001200 +0530")
    mails = os.path.join(tmp, "v1")
    git("format-patch", "-q", "--cover-letter", "--thread", "--base=" + base,
        "-o", mails, base + "..HEAD", cwd=work,
        env={"GIT_COMMITTER_NAME": "Ann Author",
             "GIT_COMMITTER_EMAIL": "ann@example.org"})
    files = sorted(os.listdir(mails))
    cover = os.path.join(mails, files[0])
    with open(cover) as f:
        text = f.read()
    text = text.replace("*** SUBJECT HERE ***", "topic: three changes")
    text = text.replace("*** BLURB HERE ***", "Three small changes, by mail.")
    with open(cover, "w") as f:
        f.write(text)
    p = [os.path.join(mails, n) for n in files]

    # Out of order: 2, the cover, 3, then 1 makes it whole.
    rc, out = tool(state, mirror, "anyone", p[2], p[0], p[3], p[1])
    if rc != 0:
        fail("emailmr_tool exited %d" % rc)
    lines = out.splitlines()
    if not all(" collected " in l for l in lines[:3]) or \
            " whole " not in lines[3]:
        fail("collected out of order: %r" % lines)
    iid = int(lines[4].rsplit("!", 1)[1])
    mr = api("/projects/1/merge_requests/%d" % iid)
    if mr["title"] != "topic: three changes":
        fail("title %r" % mr["title"])
    # No keyring and no trusted Authentication-Results: nothing vouches
    # for the mails, and the description says so (emailattest.h).
    if not mr["description"].startswith(
            "From: Ann Author <ann@example.org> by email\n"
            "Not verified: no project keyring to check a patatt "
            "signature against, and no DKIM/DMARC pass (each of the 4 "
            "mails).\n\n"
            "Three small changes, by mail."):
        fail("description %r" % mr["description"])
    if mr["labels"] != ["from-email"] or mr["target_branch"] != "main" or \
            not mr["source_branch"].startswith("email/ann/topic-three-"):
        fail("labels/branches %r %r %r" % (mr["labels"],
                                           mr["target_branch"],
                                           mr["source_branch"]))
    # The commits are the originals', but for the committer.
    git("fetch", "-q", URL + "/" + PROJECT + ".git",
        "refs/heads/%s:refs/mr" % mr["source_branch"], cwd=work)
    fmt = "--format=%an%x00%ae%x00%ad%x00%B%x01"
    ours = git("log", "--reverse", "--date=raw", fmt, base + "..refs/mr",
               cwd=work)
    theirs = git("log", "--reverse", "--date=raw", fmt, base + "..HEAD",
                 cwd=work)
    if ours != theirs:
        fail("commits differ:\n%s\n---\n%s" % (ours, theirs))
    if patch_ids(work, base + "..refs/mr") != patch_ids(work, base + "..HEAD"):
        fail("patch-ids differ")
    print("!%d: %s, 3 commits as mailed" % (iid, mr["source_branch"]))

    # The thread map: the mails are revision 1 of the MR.
    db = sqlite3.connect(state)
    rows = db.execute("SELECT patch, kind, revision, state FROM thread_map"
                      " WHERE project = ? AND iid = ? ORDER BY patch",
                      (PROJECT, iid)).fetchall()
    db.close()
    if rows != [(0, "cover", 1, "sent"), (1, "patch", 1, "sent"),
                (2, "patch", 1, "sent"), (3, "patch", 1, "sent")]:
        fail("thread map %r" % rows)

    # Again: nothing new.
    rc, out = tool(state, mirror, "anyone", *p)
    if rc != 0 or out.count("refused") != 4 or "!" in out:
        fail("second run: %r" % out)
    mrs = api("/projects/1/merge_requests?state=opened&source_branch=" +
              mr["source_branch"])
    if len(mrs) != 1:
        fail("%d merge requests from the branch" % len(mrs))

    # v2, one patch changed, sent in reply to the v1 cover letter: the
    # same merge request, force-pushed; the forge shows two versions and
    # the thread map follows v2.
    v1_cover = [l.split(":", 1)[1].strip() for l in text.splitlines()
                if l.lower().startswith("message-id:")][0]
    git("checkout", "-q", "-B", "v2", base, cwd=work)
    commit(work, 1, "@1700000000 +0100")
    with open(os.path.join(work, "topic-2.txt"), "w") as f:
        f.write("change 2, second try\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "topic: change 2", "-m",
        "Why change 2 matters, said better.\n\nSigned-off-by: Ann "
        "Author <ann@example.org>", cwd=work,
        env={"GIT_AUTHOR_NAME": "Ann Author",
             "GIT_AUTHOR_EMAIL": "ann@example.org",
             "GIT_AUTHOR_DATE": "@1700000600 -0500"})
    commit(work, 3, "@1700001200 +0530")
    v2 = os.path.join(tmp, "v2")
    git("format-patch", "-q", "-v2", "--cover-letter", "--thread",
        "--in-reply-to=" + v1_cover, "--base=" + base, "-o", v2,
        base + "..HEAD", cwd=work)
    p2 = [os.path.join(v2, n) for n in sorted(os.listdir(v2))]
    # git format-patch makes a Message-ID of the time in seconds and the
    # commit: v1 and v2 made within one second may share some.  As two
    # runs of git send-email would not, give v2's its own.
    for k, path in enumerate(p2):
        with open(path) as f:
            head, sep, body = f.read().partition("\n\n")
        fields = re.split(r"\n(?![ \t])", head)
        for i, field in enumerate(fields):
            name = field.split(":", 1)[0].lower()
            if name == "message-id" or (k and name in ("in-reply-to",
                                                       "references")):
                fields[i] = re.sub(r">(\s*)$", r".v2>\1", field)
        with open(path, "w") as f:
            f.write("\n".join(fields) + sep + body)
    with open(p2[0]) as f:
        t2 = f.read()
    with open(p2[0], "w") as f:
        f.write(t2.replace("*** SUBJECT HERE ***", "topic: three changes")
                .replace("*** BLURB HERE ***", "v2: change 2 said better."))
    rc, out = tool(state, mirror, "anyone", *p2)
    if rc != 0 or not out.rstrip().endswith(": !%d" % iid):
        fail("v2 did not update !%d: %r" % (iid, out))
    versions = api("/projects/1/merge_requests/%d/versions" % iid)
    if len(versions) != 2:
        fail("%d versions of !%d" % (len(versions), iid))
    db = sqlite3.connect(state)
    rows = db.execute("SELECT patch, revision FROM thread_map WHERE"
                      " project = ? AND iid = ? AND revision = 2"
                      " ORDER BY patch", (PROJECT, iid)).fetchall()
    db.close()
    if rows != [(0, 2), (1, 2), (2, 2), (3, 2)]:
        fail("v2 in the thread map: %r" % rows)
    if len(api("/projects/1/merge_requests?state=opened&source_branch=" +
               mr["source_branch"])) != 1:
        fail("v2 opened another merge request")
    print("v2: !%d updated, 2 versions" % iid)

    # Not collected.
    pull = os.path.join(tmp, "pull.eml")
    with open(pull, "w") as f:
        f.write("From: Mae <mae@example.org>\nSubject: [GIT PULL] fixes\n"
                "Message-ID: <pull@example.org>\n\nThe following changes "
                "since commit %s:\n\nare available in the Git repository "
                "at:\n" % base)
    reply = os.path.join(tmp, "reply.eml")
    with open(reply, "w") as f:
        f.write("From: Rita <rita@example.org>\n"
                "Subject: Re: [PATCH 1/3] topic: change 1\n"
                "Message-ID: <reply@example.org>\n"
                "In-Reply-To: <x@example.org>\n\n> quoted\n\nNice.\n")
    single = os.path.join(tmp, "single")
    git("format-patch", "-q", "-1", "-o", single, "HEAD", cwd=work)
    single = os.path.join(single, os.listdir(single)[0])
    rc, out = tool(state, mirror, "anyone", pull, reply)
    if "not a new series: pull-request" not in out or \
            "not a new series: reply" not in out:
        fail("pull request or reply collected: %r" % out)
    rc, out = tool(state, mirror, "off", single)
    if "takes no series" not in out:
        fail("policy off: %r" % out)
    rc, out = tool(state, mirror, "verified", single)
    if "not DKIM/DMARC-verified" not in out:
        fail("policy verified: %r" % out)

    # Does not apply: patch 3 alone, onto main without 1 and 2.
    with open(p[3]) as f:
        lone = f.read()
    lone = lone.replace("[PATCH 3/3]", "[PATCH]")
    lone = "\n".join(l for l in lone.splitlines()
                     if not l.startswith(("In-Reply-To:", "References:")))
    lone = lone.replace("diff --git a/topic-3.txt", "diff --git a/topic-3.txt",
                        1).replace("new file mode 100644\n", "")
    lone = lone.replace("--- /dev/null", "--- a/topic-3.txt")
    path = os.path.join(tmp, "lone.eml")
    with open(path, "w") as f:
        f.write(lone.replace("Message-Id: <", "Message-Id: <lone.")
                .replace("Message-ID: <", "Message-ID: <lone.") + "\n")
    rc, out = tool(state, mirror, "anyone", path)
    if rc == 0 or "patch 1/1 does not apply on " + base not in out:
        fail("a patch that does not apply: %r" % out)
    print("refusals and a failed apply as expected")

    # Stopped between the push and the merge request, then run again.
    git("checkout", "-q", "-b", "later", base, cwd=work)
    with open(os.path.join(work, "later.txt"), "w") as f:
        f.write("later\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "later: one more", cwd=work,
        env={"GIT_AUTHOR_NAME": "Ann Author",
             "GIT_AUTHOR_EMAIL": "ann@example.org",
             "GIT_COMMITTER_NAME": "Ann Author",
             "GIT_COMMITTER_EMAIL": "ann@example.org"})
    later = os.path.join(tmp, "later")
    git("format-patch", "-q", "--thread", "-1", "-o", later, "HEAD",
        cwd=work)
    later = os.path.join(later, os.listdir(later)[0])
    ctl("POST", "faults", {"kind": "error", "status": 503, "count": 50,
                           "method": "POST", "path": "/merge_requests$"})
    rc, out = tool(state, mirror, "anyone", later)
    ctl("DELETE", "faults")
    if rc == 0 or ": failed: " not in out:
        fail("the forge refused the merge request, yet: %r" % out)
    heads = git("ls-remote", URL + "/" + PROJECT + ".git",
                "refs/heads/email/ann/later-*", cwd=work).split()
    if len(heads) != 2:
        fail("the branch was not pushed before the merge request: %r" %
             heads)
    rc, out = tool(state, mirror, "anyone")
    if rc != 0 or "!" not in out:
        fail("the second run: %r" % out)
    again = git("ls-remote", URL + "/" + PROJECT + ".git",
                "refs/heads/email/ann/later-*", cwd=work).split()
    if again != heads:
        fail("the second run made other commits: %r, %r" % (heads, again))
    branch = heads[1][len("refs/heads/"):]
    mrs = api("/projects/1/merge_requests?state=all&source_branch=" + branch)
    if len(mrs) != 1:
        fail("%d merge requests from %s" % (len(mrs), branch))
    print("stopped before the merge request: one merge request, !%d, on "
          "the same commits" % mrs[0]["iid"])
    next_versions(tmp, state, mirror, work, base)
    return 0


def one_topic(tmp, work, base, name, version, files, cover=None):
    """Mails of a topic: files {path: text} committed on base by Ann, as
    git format-patch makes them (-vN, --thread, a cover letter with the
    text cover when given), not in reply to anything.  Their paths."""
    git("checkout", "-q", "-B", "%s-v%d" % (name, version), base, cwd=work)
    for path, body in sorted(files.items()):
        with open(os.path.join(work, path), "w") as f:
            f.write(body)
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", "%s: %s" % (name, path), cwd=work,
            env={"GIT_AUTHOR_NAME": "Ann Author",
                 "GIT_AUTHOR_EMAIL": "ann@example.org",
                 "GIT_AUTHOR_DATE": "@1700002000 +0000"})
    out = os.path.join(tmp, "%s-v%d" % (name, version))
    args = ["format-patch", "-q", "-v%d" % version, "--thread",
            "--base=" + base, "-o", out, base + "..HEAD"]
    if cover is not None:
        args.insert(1, "--cover-letter")
    git(*args, cwd=work)
    paths = [os.path.join(out, n) for n in sorted(os.listdir(out))]
    # Message-IDs of their own (git makes them of the commit and the
    # second: two versions made in one second may share some).
    for path in paths:
        with open(path) as f:
            text = f.read()
        text = re.sub(r"(?im)^((?:message-id|in-reply-to|references):"
                      r"\s*<)", r"\1%s-v%d." % (name, version), text)
        if cover is not None:
            title, blurb = cover
            text = text.replace("*** SUBJECT HERE ***", title) \
                .replace("*** BLURB HERE ***", blurb)
        with open(path, "w") as f:
            f.write(text)
    return paths


def versions_of(iid):
    return len(api("/projects/1/merge_requests/%d/versions" % iid))


def opened(out):
    """The merge requests the tool's run opened or updated."""
    return [int(l.rsplit("!", 1)[1]) for l in out.splitlines()
            if re.search(r": !\d+$", l)]


def next_versions(tmp, state, mirror, work, base):
    """A next version not sent in reply to the one before."""
    # By its change-id (b4's cover letter), under another title.
    cid = "change-id: 20261207-topic-b-0123456789ab"
    v1 = one_topic(tmp, work, base, "topic-b", 1,
                   {"b1.txt": "b one\n", "b2.txt": "b two\n"},
                   ("topic b: two files", "Two files.\n\n---\n" + cid))
    rc, out = tool(state, mirror, "anyone", *v1)
    if rc != 0 or len(opened(out)) != 1:
        fail("topic b v1: %r" % out)
    iid = opened(out)[0]
    v2 = one_topic(tmp, work, base, "topic-b", 2,
                   {"b1.txt": "b one, again\n", "b2.txt": "b two\n"},
                   ("topic b: two files, the first said again",
                    "Two files, v2.\n\n---\n" + cid))
    rc, out = tool(state, mirror, "anyone", *v2)
    if rc != 0 or opened(out) != [iid] or versions_of(iid) != 2:
        fail("topic b v2 by its change-id did not update !%d: %r" %
             (iid, out))
    notes = [n["body"] for n in
             api("/projects/1/merge_requests/%d/notes?per_page=100" % iid)
             if "v2 of this series came by email from ann@example.org"
             in n["body"]]
    if len(notes) != 1:
        fail("topic b v2: %d notes say where v2 came from" % len(notes))
    # The same run again: the note is not posted twice (its marker).
    rc, out = tool(state, mirror, "anyone", *v2)
    if len([n for n in
            api("/projects/1/merge_requests/%d/notes?per_page=100" % iid)
            if "v2 of this series came by email" in n["body"]]) != 1:
        fail("topic b v2 again: the version's note posted twice")
    print("v2 not in reply, by its change-id: !%d updated, 2 versions, "
          "one note: %r" % (iid, notes[0].split("\n")[0]))

    # By its title: a single patch, then its v2, not in reply.
    c1 = one_topic(tmp, work, base, "topic-c", 1, {"c.txt": "c\n"})
    rc, out = tool(state, mirror, "anyone", *c1)
    if rc != 0 or len(opened(out)) != 1:
        fail("topic c v1: %r" % out)
    cid_ = opened(out)[0]
    c2 = one_topic(tmp, work, base, "topic-c", 2, {"c.txt": "c, v2\n"})
    rc, out = tool(state, mirror, "anyone", *c2)
    if rc != 0 or opened(out) != [cid_] or versions_of(cid_) != 2:
        fail("topic c v2 by its title did not update !%d: %r" % (cid_, out))
    print("v2 not in reply, by its title: !%d updated, 2 versions" % cid_)

    # The same v2 from another sender: a merge request of its own.
    with open(c2[0]) as f:
        text = f.read()
    bob = os.path.join(tmp, "bob-v2.eml")
    with open(bob, "w") as f:
        f.write(text.replace("Ann Author <ann@example.org>",
                             "Bob Other <bob@example.org>")
                .replace("topic-c-v2.", "bob-topic-c-v2."))
    rc, out = tool(state, mirror, "anyone", bob)
    mine = opened(out)
    if rc != 0 or len(mine) != 1 or mine[0] == cid_ or \
            versions_of(cid_) != 2:
        fail("another sender's v2 touched !%d: %r" % (cid_, out))
    mr = api("/projects/1/merge_requests/%d" % mine[0])
    if not mr["source_branch"].startswith("email/bob/"):
        fail("bob's v2: %r" % mr["source_branch"])
    print("the same v2 from another sender: !%d of its own" % mine[0])

    # Ann's v2 again, under other Message-IDs: not newer, nothing moves.
    again = os.path.join(tmp, "ann-v2-again.eml")
    with open(again, "w") as f:
        f.write(text.replace("topic-c-v2.", "again-topic-c-v2."))
    heads = git("ls-remote", URL + "/" + PROJECT + ".git", cwd=work)
    rc, out = tool(state, mirror, "anyone", again)
    if rc == 0 or "v2 is not newer than v2" not in out or \
            versions_of(cid_) != 2 or \
            git("ls-remote", URL + "/" + PROJECT + ".git", cwd=work) != heads:
        fail("a v2 sent again updated !%d: %r" % (cid_, out))
    print("the same version again: nothing updated")


if __name__ == "__main__":
    sys.exit(main())
