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
  * patchbridge, mailing revisions and applying the replies to the forge.

Each step prints what happens in plain words.  Exit status 0 when the
story went as told, 1 when a step did not.
"""

import argparse
import email
import email.policy
import email.utils
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PFBED = os.path.join(TOP, "tests", "postfix", "pfbed")
LIST = "patches@lists.example.test"
AUTHSERV = "lists.example.test"
T0 = time.time()
STEP = [0]


def step(text):
    STEP[0] += 1
    print("\n== %d. %s" % (STEP[0], text), flush=True)


def say(text=""):
    for line in str(text).splitlines() or [""]:
        print("   " + line, flush=True)


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


# --- the forge (simulator) -------------------------------------------------

def sim(method, path, body=None, token="bridge-token", ok=(200, 201, 202)):
    url = os.environ["PB_FORGESIM_URL"] + path
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if path.startswith("/api/"):
        req.add_header("PRIVATE-TOKEN", token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, text = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read()
    if status not in ok:
        raise Failed("%s %s: %d %s" % (method, path, status, text[:300]))
    return json.loads(text) if text else None


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


# --- the list server --------------------------------------------------------

class Bed:
    def __init__(self, bindir, work):
        self.bin = bindir
        self.work = work
        self.pf = os.path.join(work, "list-server")
        self.cfg = os.path.join(work, "patchbridge.conf")
        self.log = os.path.join(work, "patchbridge.log")
        self.procs = []
        self.env = {}

    def pb(self, *argv, ok=(0,)):
        with open(self.log, "a", encoding="utf-8") as log:
            log.write("\n$ patchbridge %s\n" % " ".join(argv))
            log.flush()
            out = subprocess.run(
                [os.path.join(self.bin, "bridge", "patchbridge"), "-c",
                 self.cfg] + list(argv), stdout=subprocess.PIPE,
                stderr=log, text=True, timeout=300)
        if out.returncode not in ok:
            raise Failed("patchbridge %s exited %d (log: %s)" %
                         (" ".join(argv), out.returncode, self.log))
        return out.stdout

    def write(self, name, text, mode=0o644):
        path = os.path.join(self.work, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def spawn(self, argv, logname):
        log = open(os.path.join(self.work, logname), "a", encoding="utf-8")
        p = subprocess.Popen(argv, stdout=log, stderr=log,
                             start_new_session=True)
        log.close()
        self.procs.append(p)
        return p

    def wait_socket(self, path, what):
        for _ in range(200):
            if os.path.exists(path):
                return
            time.sleep(0.05)
        raise Failed("%s did not create %s" % (what, path))

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        subprocess.run([PFBED, "stop", self.pf], capture_output=True,
                       timeout=60)

    def archive(self):
        mails = []
        d = self.env.get("ARCHIVE")
        for sub in ("new", "cur"):
            path = os.path.join(d, sub) if d else None
            if not path or not os.path.isdir(path):
                continue
            for name in sorted(os.listdir(path)):
                with open(os.path.join(path, name), "rb") as f:
                    raw = f.read()
                m = email.message_from_bytes(raw,
                                             policy=email.policy.default)
                m.raw = raw
                mails.append(m)
        mails.sort(key=lambda m: (m.get("Date", ""), m.get("Subject", "")))
        return mails

    def wait_mail(self, n, timeout=60):
        out = subprocess.run([PFBED, "wait-mail", self.pf, str(n),
                              str(timeout)], capture_output=True, text=True)
        if out.returncode:
            raise Failed("the list archive did not reach %d mails" % n)

    def settle(self):
        for _ in range(200):
            out = subprocess.run(["postqueue", "-c", self.env["CONFIG"],
                                  "-j"], capture_output=True, text=True)
            if out.stdout.strip() == "":
                return
            time.sleep(0.1)

    def send(self, raw, sender):
        path = self.write("outgoing.eml", raw)
        out = subprocess.run([PFBED, "send", self.pf, path, "--from",
                              sender, "--to", LIST], capture_output=True,
                             text=True, timeout=60)
        if out.returncode:
            raise Failed("SMTP submission failed: %s %s" %
                         (out.stdout, out.stderr[-500:]))


def config(bed, token, milter_sock):
    owners = bed.write("owners.yaml", OWNERS)
    os.makedirs(os.path.join(bed.work, "state"), exist_ok=True)
    os.makedirs(os.path.join(bed.work, "spool"), exist_ok=True)
    bed.write("patchbridge.conf", """\
[bridge]
name = patchbridge
address = bridge@example.org
domain = bridge.example.org
list_address = {list}
[forge]
url = {url}
token_file = {token}
bot_username = patchbridge
max_retries = 2
retry_max = 2s
[smtp]
url = smtp://127.0.0.1:{port}
timeout = 20s
[milter]
socket = unix:{sock}
trusted_authserv_id = {authserv}
[state]
path = {work}/state/state.db
[spool]
dir = {work}/spool
[log]
level = info
[outbound]
poll_interval = 1h
threading = shallow
cc_owners = yes
cc_author = yes
cc_reviewers = yes
[inbound]
owners_file = {owners}
approval_policy = owners
[project "group/project"]
""".format(list=LIST, url=os.environ["PB_FORGESIM_URL"], token=token,
           port=bed.env["PORT"], sock=milter_sock, authserv=AUTHSERV,
           work=bed.work, owners=owners))


def free_port():
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def reply(parent, frm, body, extra_headers=""):
    """A plain-text reply to a mail of the archive, as mutt would make it."""
    subject = parent["Subject"]
    if not subject.lower().startswith("re:"):
        subject = "Re: " + subject
    refs = (parent.get("References", "") + " " +
            parent["Message-ID"]).strip()
    return ("From: {frm}\nTo: {lst}\nSubject: {subj}\n"
            "Date: {date}\nMessage-ID: <{mid}@mail.example>\n"
            "In-Reply-To: {irt}\nReferences: {refs}\n{extra}"
            "MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n"
            "\n{body}").format(
                frm=frm, lst=LIST, subj=subject,
                date=email.utils.formatdate(localtime=False),
                mid="demo.%d.%d" % (os.getpid(), time.monotonic_ns()),
                irt=parent["Message-ID"], refs=refs, extra=extra_headers,
                body=body)


def quote(text):
    return "".join("> " + line + "\n" if line else ">\n"
                   for line in text.splitlines())


def patch_body(msg):
    return msg.get_body(preferencelist=("plain",)).get_content()


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
    work = args.work or tempfile.mkdtemp(prefix="patchbridge-demo.")
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o755)
    bed = Bed(os.path.abspath(args.bin), work)
    try:
        story(bed)
        print("\nThe demo went as told (%.0f s)." % (time.time() - T0))
        return 0
    except Failed as e:
        print("\nDEMO FAILED at step %d: %s" % (STEP[0], e))
        print("Logs are in %s" % work)
        args.keep = True
        return 1
    finally:
        step("Stop everything")
        bed.stop()
        left = subprocess.run(["pgrep", "-f", work], capture_output=True,
                              text=True).stdout.split()
        say("milters, daemon and the list server stopped; "
            "%d processes left behind" % len(left))
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def story(bed):
    step("Start a GitLab simulator and a private Postfix as the list server")
    sim("POST", "/_sim/reset", {"seed": SEED})
    milter_bin = os.path.join(bed.bin, "milter", "patchbridge-milter")
    verifier_bin = os.path.join(bed.bin, "tests", "postfix", "test_milter")
    have_milter = os.access(milter_bin, os.X_OK)
    sockdir = os.path.join(bed.work, "sockets")
    # As contrib/postfix/README.md sets it up: Postfix reaches the socket
    # through the directory's group.
    os.makedirs(sockdir, exist_ok=True)
    shutil.chown(sockdir, group="postfix")
    os.chmod(sockdir, 0o2750)
    vsock = os.path.join(sockdir, "verifier.sock")
    msock = os.path.join(sockdir, "patchbridge.sock")
    milters = "unix:%s" % vsock
    if have_milter:
        milters += ", unix:%s" % msock
    # The milters first, so that Postfix's first connection finds them.
    bed.env["PORT"] = str(free_port())
    token = bed.write("gitlab-token", "bridge-token\n", 0o600)
    config(bed, token, msock)
    bed.pb("check-config")
    say("patchbridge check-config: ok")
    bed.spawn([verifier_bin, "-p", "unix:" + vsock, "-A", AUTHSERV,
               "-D", "kernel.example", "-D", "review.example"],
              "verifier.log")
    bed.wait_socket(vsock, "the DKIM stand-in")
    say("DKIM/DMARC stand-in in front: kernel.example and review.example "
        "mail verifies, nothing else does")
    if have_milter:
        bed.spawn([milter_bin, "-c", bed.cfg, "-f"], "milter.log")
        bed.wait_socket(msock, "patchbridge-milter")
        say("patchbridge-milter reads the list's mail on %s" % msock)
    else:
        say("patchbridge-milter is not built yet: replies are not read")

    out = subprocess.run([PFBED, "start", bed.pf, "--port", bed.env["PORT"],
                          "--milter", milters,
                          "--set", "default_transport = discard:"],
                         capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, "pfbed start: " + out.stderr[-800:])
    env = subprocess.run([PFBED, "env", bed.pf], capture_output=True,
                         text=True, check=True).stdout
    for line in env.splitlines():
        k, _, v = line.partition("=")
        bed.env[k] = v.strip("'\"")
    say("GitLab simulator at %s (project group/project)" %
        os.environ["PB_FORGESIM_URL"])
    say("list server: Postfix on 127.0.0.1:%s, list %s, archive %s" %
        (bed.env["PORT"], LIST, bed.env["ARCHIVE"]))

    step("Alice opens a merge request with 3 commits on the forge")
    made = sim("POST", "/_sim/projects/1/commits",
               {"branch": "step", "start": "main", "commits": V1})
    mr = sim("POST", "/_sim/projects/1/merge_requests",
             {"source_branch": "step", "target_branch": "main",
              "title": "counter: count by a step",
              "description": "Callers want to count by more than one.\n\n"
              "This adds a step argument and documents it.",
              "author": "alice", "reviewers": ["mary", "rob"]})
    say("group/project!%d \"%s\" by Alice, reviewers Mary and Rob" %
        (mr["iid"], mr["title"]))

    step("patchbridge mails revision 1 to the list")
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

    step("A list reader applies the series with git am")
    clone = os.path.join(bed.work, "reader")
    subprocess.run(["git", "clone", "-q", os.environ["PB_FORGESIM_URL"] +
                    "/group/project.git", clone], check=True)
    mbox = os.path.join(bed.work, "series.mbox")
    with open(mbox, "wb") as f:
        for m in series[1:]:
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

    if not have_milter:
        say("(the inbound half of the story needs patchbridge-milter)")
        return

    step("Mary (DKIM verified, maintainer of src/) acks the series")
    bed.send(reply(cover, "Mary Maintainer <mary@kernel.example>",
                   quote(patch_body(cover)[:400]) +
                   "\nNice and small.\n\n"
                   "Acked-by: Mary Maintainer <mary@kernel.example>\n"),
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
                   "On patch 2:\n\n" + inline), "rob@review.example")

    step("Mallory (no DKIM pass) tries to ack, and to merge by quick action")
    bed.send(reply(patch1, "Mallory Spoofer <mallory@example.net>",
                   "Ship it.\n/merge\n\nAcked-by: Mallory Spoofer "
                   "<mallory@example.net>\n"), "mallory@example.net")
    bed.wait_mail(7)
    bed.settle()
    for m in bed.archive():
        if m["Subject"].startswith("Re:"):
            say("archive: %-40s X-Patchbridge: %s" %
                (m["Subject"][:40], m.get("X-Patchbridge", "-")))

    step("patchbridge applies the spooled replies to the forge")
    bed.pb("run", "--once", ok=(0, 75))
    show_forge(sim("GET", "/_sim/state"))

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
    bed.pb("run", "--once", ok=(0, 75))
    bed.wait_mail(11)
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
    end = text.find("Alice Author (", at)
    say(text[at:end if end > at else at + 800].rstrip())

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
    bed.pb("run", "--once", ok=(0, 75))
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
    state = sim("GET", "/_sim/state")
    mr = next(m for m in state["projects"][0]["merge_requests"]
              if m["iid"] == 1)
    notes = sum(len(d["notes"]) for d in mr["discussions"])
    bed.pb("run", "--once", ok=(0, 75))
    state = sim("GET", "/_sim/state")
    mr = next(m for m in state["projects"][0]["merge_requests"]
              if m["iid"] == 1)
    check(sum(len(d["notes"]) for d in mr["discussions"]) == notes,
          "the bridge's mail came back to the forge")
    say("the mail did not come back to the forge (%d notes before and "
        "after another run)" % notes)

    step("The whole conversation, exported to a public-inbox archive")
    inbox = os.path.join(bed.work, "inbox")
    say(bed.pb("export", "--public-inbox", inbox, "group/project!1").strip())
    if not shutil.which("public-inbox-index"):
        say("(public-inbox is not installed: not imported)")
        return
    env = dict(os.environ, HOME=os.path.join(bed.work, "pihome"),
               PI_CONFIG=os.path.join(bed.work, "pi-config"))
    os.makedirs(env["HOME"], exist_ok=True)
    for argv in (["public-inbox-init", "-V2", "demo", inbox,
                  "http://archive.example.test/demo", LIST],
                 ["public-inbox-index", inbox]):
        r = subprocess.run(argv, env=env, capture_output=True, text=True,
                           timeout=120)
        check(r.returncode == 0, "%s: %s" % (argv[0], r.stderr[-500:]))
    r = subprocess.run(["perl", "-MPublicInbox::Config", "-e", PI_THREAD,
                        "demo"], env=env, capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, "querying the archive: " + r.stderr[-500:])
    lines = r.stdout.splitlines()
    say("public-inbox-init + public-inbox-index: %d messages; the thread "
        "as public-inbox sees it:" % len(lines))
    for line in lines:
        say("  " + line)
    check(len(lines) == len(bed.archive()),
          "the archive has %d messages, the list %d" %
          (len(lines), len(bed.archive())))


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
