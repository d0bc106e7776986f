#!/usr/bin/python3
"""The inbound side end to end against the GitLab simulator.

Run through tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL):

    test_inbound_sim.py PATCHBRIDGE INBOUND_SEED [TEST...]

Each test starts from a reset simulator (MR !1 of group/project: two
commits by alice, one diff version) and a fresh state directory whose
thread map holds that version as mailed: the cover letter and the two
patches as `git format-patch` writes them from the simulator's own
repository.  Replies go through `patchbridge replay --apply-now`, exactly
as the milter would spool them; the simulator's state (which runs quick
actions and checks diff positions by GitLab's rules) is the judge.
No test asserts on wall-clock time.

With PB_TEST_BACKEND=postgresql (and PB_TEST_PGBED, the directory of a
tests/pg/pgbed server) the state is a fresh PostgreSQL database of that
server instead of a SQLite file.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

URL = os.environ.get("PB_FORGESIM_URL")
PB = SEED = None
ADMIN = "admin-token"
AUTHSERV = "lists.example.test"
DOMAIN = "bridge.example.org"
MARKER = "<!-- patchbridge:pb1-"
PROJECT = "group/project"


def http(method, url, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
            return r.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, text


def sim(method, path, body=None):
    status, out = http(method, URL + "/_sim/" + path, body)
    if status >= 400:
        raise AssertionError("control %s %s: %s %s" % (method, path, status,
                                                      out))
    return out


def api(method, path, body=None, token=ADMIN):
    return http(method, URL + "/api/v4/" + path, body,
                {"PRIVATE-TOKEN": token})


def mr_state():
    state = sim("GET", "state")
    for p in state["projects"]:
        if p["path_with_namespace"] == PROJECT:
            for mr in p["merge_requests"]:
                if mr["iid"] == 1:
                    return mr
    raise AssertionError("no MR !1 in the simulator")


def user_notes(mr):
    """Every non-system note, with its discussion."""
    return [(d, n) for d in mr["discussions"] for n in d["notes"]
            if not n["system"]]


def marker_count(mr, key):
    return sum(1 for _, n in user_notes(mr)
               if ("<!-- patchbridge:%s -->" % key) in n["body"])


# This host's name in a shared state ([state] host), as `why` names it.
PG_HOST = "mx-b.example.org"


class Bridge:
    """A state directory, a configuration and a seeded thread map."""

    def __init__(self, max_attempts=30, policy="owners", forge_retries=0,
                 third_patch=False):
        self.dir = tempfile.mkdtemp(prefix="pb-inbound.")
        state = self.new_state()
        sim("POST", "reset", {})
        repo = os.path.join(self.dir, "repo")
        run(["git", "clone", "-q", URL + "/group/project.git", repo])
        if third_patch:
            # A third patch that moves patch 1's lines in src/hello.c.
            text = run(["git", "-C", repo, "show",
                        "origin/feature:src/hello.c"])
            lines = text.split("\n")
            text = "\n".join(lines[:1] + ["/* one */", "/* two */"] +
                             lines[1:])
            sim("POST", "projects/1/merge_requests/1/push",
                {"commits": [{"message": "hello: two comments\n",
                              "files": {"src/hello.c": text}}]})
            run(["git", "-C", repo, "fetch", "-q", "origin"])
        _, versions = api("GET", "projects/1/merge_requests/1/versions")
        v = versions[0]
        self.version = v
        self.base = v["base_commit_sha"]
        self.start = v["start_commit_sha"]
        self.head = v["head_commit_sha"]
        run(["git", "-C", repo, "format-patch", "-q", "-o",
             os.path.join(self.dir, "patches"),
             "%s..%s" % (self.base, self.head)])
        patches = sorted(os.listdir(os.path.join(self.dir, "patches")))
        self.cover = "v1-0.2-1.%s@%s" % (self.head[:12], DOMAIN)
        self.patch_ids = []
        # The version's patch_id_sha, as the outbound side records it.
        vid = "%d:%s" % (v["id"], v["patch_id_sha"]) \
            if v.get("patch_id_sha") else str(v["id"])
        args = [SEED, "mail", self.db(), PROJECT, "1", "1", self.base,
                self.start, self.head, vid, self.cover]
        for k, name in enumerate(patches, 1):
            mid = "v1-%d.2-1.%s@%s" % (k, self.head[:12], DOMAIN)
            path = os.path.join(self.dir, "patches", name)
            with open(path) as f:
                commit = f.readline().split()[1]
            args += [mid, commit, path]
            self.patch_ids.append(mid)
        run(args)
        with open(os.path.join(self.dir, "token"), "w") as f:
            f.write(ADMIN + "\n")
        os.chmod(os.path.join(self.dir, "token"), 0o600)
        with open(os.path.join(self.dir, "owners.yaml"), "w") as f:
            f.write(OWNERS)
        with open(self.conf(), "w") as f:
            f.write(CONFIG % {"url": URL, "dir": self.dir,
                              "max_attempts": max_attempts,
                              "retries": forge_retries,
                              "policy": policy, "state": state})
        self.n = 0

    def db(self):
        """The state database: its file, or its connection string."""
        return self.target

    def new_state(self):
        """A fresh state database; the [state] lines that name it."""
        if os.environ.get("PB_TEST_BACKEND") != "postgresql":
            self.target = os.path.join(self.dir, "state.db")
            return "path = %s/state.db\n" % self.dir
        pgbed = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "pg", "pgbed")
        name = "pb_inbound_%d_%s" % (os.getpid(),
                                     os.path.basename(self.dir)[11:])
        self.target = run([pgbed, "createdb", os.environ["PB_TEST_PGBED"],
                           name.lower().replace(".", "_")]).strip()
        path = os.path.join(self.dir, "conninfo")
        with open(path, "w") as f:
            f.write(self.target + "\n")
        os.chmod(path, 0o600)
        return ("backend = postgresql\nconninfo_file = %s\n"
                "path = %s/state.db\nhost = %s\n" % (path, self.dir, PG_HOST))

    def conf(self):
        return os.path.join(self.dir, "patchbridge.conf")

    def close(self):
        if os.environ.get("PB_TEST_KEEP") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)

    def reply(self, body, sender="Bob Maintainer <bob@corp.example>",
              patch=1, ar=None, subject=None, parent=None, refs=()):
        """Write a reply to patch (0: the cover letter), or to the mail
        parent (a Message-ID without <>) with refs after the patch in
        its References; return (path, Message-ID without <>)."""
        self.n += 1
        mid = "reply-%d.%d@%s" % (self.n, os.getpid(),
                                  sender.split("@")[1].rstrip(">"))
        patch_id = self.patch_ids[patch - 1] if patch else self.cover
        chain = [self.cover] + ([patch_id] if patch else []) + list(refs)
        if parent:
            chain.append(parent)
        else:
            parent = patch_id
        if subject is None:
            subject = ("Re: [PATCH v1 %d/2] hello: greet more loudly" %
                       patch if patch else "Re: [PATCH v1 0/2] Greet")
        head = ["From: " + sender,
                "To: list@example.org",
                "Subject: " + subject,
                "Date: Thu, 03 Dec 2026 10:00:00 +0000",
                "Message-ID: <%s>" % mid,
                "In-Reply-To: <%s>" % parent,
                "References: " + " ".join("<%s>" % r for r in chain),
                "MIME-Version: 1.0",
                "Content-Type: text/plain; charset=utf-8"]
        if ar:
            head.insert(0, "Authentication-Results: " + ar)
        path = os.path.join(self.dir, "mail-%d.eml" % self.n)
        with open(path, "w") as f:
            f.write("\n".join(head) + "\n\n" + body)
        return path, mid

    def replay(self, *args, check=True):
        cmd = [PB, "-c", self.conf(), "replay"] + list(args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if check and p.returncode != 0:
            raise AssertionError("%s: exit %d\n%s%s" % (
                " ".join(cmd), p.returncode, p.stdout, p.stderr))
        return p

    def dump(self, mid):
        out = run([SEED, "dump", self.db(), mid])
        row = None
        actions = {}
        for line in out.splitlines():
            f = line.split(" ", 3)
            if f[0] == "row":
                row = f[1:]
            else:
                g = line.split()
                actions[int(g[1])] = (g[2], g[3])
        return row, actions


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("%s: exit %d\n%s%s" % (
            " ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout


def key(mid, index):
    """The marker key of action index, as inbound/marker.c makes it."""
    import hashlib
    return "pb1-%s.%d" % (hashlib.sha256(mid.encode()).hexdigest()[:32],
                          index)


CONFIG = """\
[bridge]
address = patchbridge@bridge.example.org
domain = bridge.example.org
list_address = list@example.org
[forge]
url = %(url)s
token_file = %(dir)s/token
max_retries = %(retries)d
retry_base = 10ms
retry_max = 5s
timeout = 20s
[milter]
trusted_authserv_id = lists.example.test
[state]
%(state)s[spool]
dir = %(dir)s/spool
[log]
level = debug
[inbound]
approval_policy = %(policy)s
owners_file = %(dir)s/owners.yaml
retry_base = 1s
retry_max = 2s
max_attempts = %(max_attempts)d
[project "group/project"]
"""

OWNERS = """\
users:
  - &bob
    name: Bob Maintainer
    email: bob@corp.example
subsystems:
  - subsystem: Greeting
    labels:
      name: greet
    status: Supported
    maintainers:
      - *bob
    paths:
      includes:
        - src/
"""

DKIM_PASS = ("%s; dkim=pass header.d=corp.example header.i=@corp.example"
             % AUTHSERV)

QUOTE_REMOVED = '> -\tprintf("hello, %s\\n", who);\n'
QUOTE_ADDED = '> +\tfflush(stdout);\n'
QUOTE_CONTEXT = '>  \thello("world");\n'


class InboundTest(unittest.TestCase):
    def setUp(self):
        self.b = Bridge()

    def tearDown(self):
        self.b.close()

    # (a)
    def test_comment_is_inert(self):
        b = self.b
        path, mid = b.reply(
            "Please rename this first.\n"
            "/approve\n"
            "  /merge\n"
            "/label ~bug\n"
            "\n"
            "@all <b>look</b> <!-- hidden -->\n",
            sender="Gus Guest <gus@example.net>")
        p = b.replay("--apply-now", path)
        self.assertIn("spooled as", p.stdout)
        self.assertIn("applied 1", p.stdout)
        mr = mr_state()
        notes = user_notes(mr)
        self.assertEqual(len(notes), 1, notes)
        body = notes[0][1]["body"]
        self.assertEqual(marker_count(mr, key(mid, 0)), 1)
        self.assertIn("Please rename this first.", body)
        self.assertIn("\\/approve", body)
        self.assertIn("Gus Guest &lt;gus@example.net&gt; via email, on v1 "
                      "1/2 (not verified: no DKIM/DMARC pass from "
                      "lists.example.test)", body)
        self.assertNotIn("<b>", body)
        self.assertNotIn("<!-- hidden", body)
        self.assertNotIn("@all", body)  # a word joiner sits inside
        # Nothing ran.
        self.assertEqual(mr["approvals"], [])
        self.assertEqual(mr["state"], "opened")
        self.assertEqual(mr["labels"], [])
        self.assertEqual(notes[0][1]["author"], "root")
        row, actions = b.dump(mid)
        self.assertEqual(row[0], "applied")
        self.assertEqual(actions, {0: ("comment", "done")})
        # The same mail again (a Postfix retry): applied once.
        p = b.replay("--apply-now", path)
        self.assertIn("duplicates 1", p.stdout)
        self.assertEqual(len(user_notes(mr_state())), 1)

    # (b)
    def test_inline_positions(self):
        b = self.b
        path, mid = b.reply(
            "On the greeting:\n\n" + QUOTE_REMOVED + "\nWas fine.\n\n" +
            QUOTE_ADDED + "\nWhy flush?\n\n" + QUOTE_CONTEXT +
            "\nKeep this.\n", ar=DKIM_PASS)
        b.replay("--apply-now", path)
        mr = mr_state()
        diff = {n["body"].split("\n")[0]: n for _, n in user_notes(mr)
                if n["type"] == "DiffNote"}
        self.assertEqual(len(diff), 3, [n["body"] for _, n in
                                        user_notes(mr)])
        want = {"Was fine.": (6, None), "Why flush?": (None, 7),
                "Keep this.": (20, 21)}
        for text, (old, new) in want.items():
            n = diff[text]
            pos = n["position"]
            self.assertEqual(pos["new_path"], "src/hello.c")
            self.assertEqual(pos["old_line"], old, text)
            self.assertEqual(pos["new_line"], new, text)
            self.assertEqual(pos["head_sha"], b.head)
            self.assertEqual(n["version_id"], b.version["id"])
            self.assertTrue(n["line_code"])
        row, actions = b.dump(mid)
        self.assertEqual(row[0], "applied")
        self.assertEqual(sorted(actions), [0, 1, 2, 3])

    # (b) on a series where a later patch moves the lines
    def test_inline_positions_through_later_patch(self):
        b = self.b
        b.close()
        self.b = b = Bridge(third_patch=True)
        self.assertEqual(len(b.patch_ids), 3)
        path, mid = b.reply(
            QUOTE_REMOVED + "\nWas fine.\n\n" + QUOTE_ADDED +
            "\nWhy flush?\n\n" + QUOTE_CONTEXT + "\nKeep this.\n",
            ar=DKIM_PASS,
            subject="Re: [PATCH v1 1/3] hello: greet more loudly")
        b.replay("--apply-now", path)
        mr = mr_state()
        diff = {n["body"].split("\n")[0]: n for _, n in user_notes(mr)
                if n["type"] == "DiffNote"}
        self.assertEqual(len(diff), 3, [n["body"] for _, n in
                                        user_notes(mr)])
        # patch 1's numbers, moved by patch 3's two lines on the new side
        want = {"Was fine.": (6, None), "Why flush?": (None, 9),
                "Keep this.": (20, 23)}
        for text, (old, new) in want.items():
            pos = diff[text]["position"]
            self.assertEqual((pos["old_line"], pos["new_line"]),
                             (old, new), text)
            self.assertEqual(pos["head_sha"], b.head)

    # (b) a position GitLab refuses: the text is kept as a discussion
    def test_refused_position_falls_back(self):
        b = self.b
        path, mid = b.reply(QUOTE_ADDED + "\nPosition me.\n", ar=DKIM_PASS)
        # GitLab refuses the position with its line_code 400 (injected:
        # the simulator accepts every position the patch can produce).
        sim("POST", "faults", {"kind": "error", "status": 400,
                               "method": "POST",
                               "path": "/discussions$", "count": 1,
                               "body": json.dumps({"message": "400 Bad "
                                                   "request - Note "
                                                   "{:line_code=>[\"can't "
                                                   "be blank\"]}"}),
                               "content_type": "application/json"})
        b.replay("--apply-now", path)
        mr = mr_state()
        notes = user_notes(mr)
        self.assertEqual(len(notes), 1)
        n = notes[0][1]
        self.assertNotEqual(n["type"], "DiffNote")
        self.assertIn("On src/hello.c line 7", n["body"])
        self.assertIn("Position me.", n["body"])
        self.assertEqual(marker_count(mr, key(mid, 1)), 1)

    # (c)
    def test_ack_verified_maintainer_approves(self):
        b = self.b
        path, mid = b.reply("Looks right.\n\nAcked-by: Bob Maintainer "
                            "<bob@corp.example>\n", ar=DKIM_PASS)
        b.replay("--apply-now", path)
        mr = mr_state()
        self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
        body = user_notes(mr)[0][1]["body"]
        self.assertIn("approval by GitLab user bob", body)
        self.assertIn("(DKIM verified)", body)
        row, actions = b.dump(mid)
        self.assertEqual(actions[1000], ("approve", "done"))

    def test_token_without_sudo_is_the_operators_problem(self):
        """GitLab refuses the Sudo itself: nothing on the MR says the
        reviewer may not approve; status says what the operator must do,
        and the approval lands once the token can."""
        b = self.b
        with open(os.path.join(b.dir, "token"), "w") as f:
            f.write("admin-nosudo-token\n")
        path, mid = b.reply("Fine.\n\nAcked-by: Bob Maintainer "
                            "<bob@corp.example>\n", ar=DKIM_PASS)
        b.replay("--apply-now", path, check=False)
        mr = mr_state()
        self.assertEqual(mr["approvals"], [])
        for _, n in user_notes(mr):
            self.assertNotIn("was not recorded", n["body"])
            self.assertNotIn("did not accept", n["body"])
        out = run([PB, "-c", b.conf(), "status"])
        self.assertIn("forge: needs the operator", out)
        self.assertIn("lacks the sudo scope", out)
        self.assertIn("failed group/project!1 v1 patch 1", out)
        with open(os.path.join(b.dir, "token"), "w") as f:
            f.write(ADMIN + "\n")
        b.replay("--apply-now", "--retry-now")
        mr = mr_state()
        self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
        out = run([PB, "-c", b.conf(), "status"])
        self.assertNotIn("forge: needs the operator", out)

    def test_series_ack_on_cover_letter(self):
        b = self.b
        path, mid = b.reply("For the whole series:\n\nReviewed-by: Bob "
                            "Maintainer <bob@corp.example>\n", patch=0,
                            ar=DKIM_PASS)
        b.replay("--apply-now", path)
        mr = mr_state()
        self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
        self.assertIn("on the v1 cover letter",
                      user_notes(mr)[0][1]["body"])

    def test_ack_without_pass_does_not_approve(self):
        b = self.b
        for ar, why in [(None, "the sender is not verified"),
                        ("evil.example; dkim=pass header.d=corp.example",
                         "the sender is not verified")]:
            path, mid = b.reply("Acked-by: Bob Maintainer "
                                "<bob@corp.example>\n", ar=ar)
            b.replay("--apply-now", path)
            mr = mr_state()
            self.assertEqual(mr["approvals"], [])
            bodies = [n["body"] for _, n in user_notes(mr)
                      if key(mid, 0) in n["body"]]
            self.assertEqual(len(bodies), 1)
            self.assertIn(why, bodies[0])
            self.assertIn("not honoured as an approval", bodies[0])

    def test_quoted_ack_is_nothing(self):
        b = self.b
        path, mid = b.reply("> Acked-by: Bob Maintainer <bob@corp.example>"
                            "\n\nI agree with the above.\n", ar=DKIM_PASS)
        b.replay("--apply-now", path)
        mr = mr_state()
        self.assertEqual(mr["approvals"], [])
        body = user_notes(mr)[0][1]["body"]
        self.assertNotIn("Acked-by", body)

    def test_ack_for_someone_else(self):
        b = self.b
        path, mid = b.reply("Acked-by: Alice Developer "
                            "<alice@example.com>\n", ar=DKIM_PASS)
        b.replay("--apply-now", path)
        mr = mr_state()
        self.assertEqual(mr["approvals"], [])
        self.assertIn("only the sender may approve",
                      user_notes(mr)[0][1]["body"])

    # (d)
    def test_nak(self):
        b = self.b
        status, _ = api("PUT", "projects/1/merge_requests/1",
                        {"add_labels": ["Acks::ACKed", "keep"]})
        self.assertEqual(status, 200)
        status, _ = api("POST", "projects/1/merge_requests/1/approve",
                        {"sha": b.head}, token="bob-token")
        self.assertEqual(status, 201)
        self.assertEqual([a["user"] for a in mr_state()["approvals"]],
                         ["bob"])
        path, mid = b.reply("NAK.\n\nThis breaks the build on 32-bit.\n",
                            ar=DKIM_PASS)
        b.replay("--apply-now", path)
        mr = mr_state()
        self.assertEqual(sorted(mr["labels"]), ["Acks::NACKed", "keep"])
        self.assertEqual(mr["approvals"], [])
        naks = [(d, n) for d, n in user_notes(mr)
                if key(mid, 2001) in n["body"]]
        self.assertEqual(len(naks), 1)
        d, n = naks[0]
        self.assertIn("NAK", n["body"])
        self.assertIn("breaks the build on 32-bit", n["body"])
        self.assertFalse(d["individual_note"])
        self.assertFalse(n["resolved"])
        row, actions = b.dump(mid)
        self.assertEqual(row[0], "applied")
        self.assertEqual(sorted(actions), [2000, 2001, 2002])

    def test_nak_in_prose_is_possibly_an_objection(self):
        """A NAK in a sentence is posted as words and flagged: no label,
        no approval withdrawn, an unresolved discussion says why."""
        b = self.b
        status, _ = api("POST", "projects/1/merge_requests/1/approve",
                        {"sha": b.head}, token="bob-token")
        self.assertEqual(status, 201)
        path, mid = b.reply("I would NAK this if it broke 32-bit, "
                            "but it does not.\n", ar=DKIM_PASS)
        b.replay("--apply-now", path)
        mr = mr_state()
        self.assertNotIn("Acks::NACKed", mr["labels"])
        self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
        notes = [(d, n) for d, n in user_notes(mr)
                 if key(mid, 0) in n["body"]]
        self.assertEqual(len(notes), 1)
        d, n = notes[0]
        self.assertIn("Possibly an objection", n["body"])
        self.assertIn("I would NAK this", n["body"])
        self.assertFalse(d["individual_note"])
        self.assertFalse(n["resolved"])
        row, actions = b.dump(mid)
        self.assertEqual(sorted(actions), [0])

    # only the sender's own words act (docs/SECURITY.md)
    def test_bait_in_parent_is_a_quotation(self):
        """The attacker's mail carries the maintainer's Acked-by; the
        maintainer answers it, and the bait comes back in his reply
        with no quote marker, separator or header block at all.  The
        trailer is in the mail he answers: a quotation, no approval."""
        b = self.b
        bait = "Acked-by: Bob Maintainer <bob@corp.example>\n"
        path, xid = b.reply("Bob, can you check this? Here is what I "
                            "need from you:\n\n" + bait,
                            sender="Mallory <mallory@evil.example>")
        b.replay("--apply-now", path)
        path, mid = b.reply("Will do.\n\n" + bait, ar=DKIM_PASS,
                            parent=xid)
        b.replay("--apply-now", path)
        mr = mr_state()
        self.assertEqual(mr["approvals"], [])
        body = [n["body"] for _, n in user_notes(mr)
                if key(mid, 0) in n["body"]][0]
        self.assertIn("is in a mail this one answers", body)
        # the same words in answer to the bridge's own patch approve
        path, mid = b.reply("Will do.\n\n" + bait, ar=DKIM_PASS)
        b.replay("--apply-now", path)
        self.assertEqual([a["user"] for a in mr_state()["approvals"]],
                         ["bob"])

    def test_reply_to_an_unknown_mail_acts_on_nothing(self):
        """Answered off the list: what it quotes cannot be accounted
        for, so its trailer is listed, not acted on."""
        b = self.b
        path, mid = b.reply("Acked-by: Bob Maintainer "
                            "<bob@corp.example>\n", ar=DKIM_PASS,
                            parent="private.1@corp.example")
        b.replay("--apply-now", path)
        mr = mr_state()
        self.assertEqual(mr["approvals"], [])
        body = [n["body"] for _, n in user_notes(mr)
                if key(mid, 0) in n["body"]][0]
        self.assertIn("never reached the list", body)

    def test_cross_mr_steering(self):
        """A mail threaded under MR !1 whose References end with MR !2's
        patch: the honest ack that answers it stays on !1, where the
        mail it answers is, and approves nothing."""
        b = self.b
        other = "v1-1.2-2.%s@%s" % (b.head[:12], DOMAIN)
        run([SEED, "mail", b.db(), PROJECT, "2", "1", b.base, b.start,
             b.head, str(b.version["id"]), "v1-0.2-2.x@" + DOMAIN,
             other, b.head, os.path.join(b.dir, "patches",
                                         sorted(os.listdir(os.path.join(
                                             b.dir, "patches")))[0])])
        # In-Reply-To the patch of !1, References ending with !2's
        path, xid = b.reply("What do you think, Bob?\n",
                            sender="Mallory <mallory@evil.example>",
                            refs=[other])
        b.replay("--apply-now", path)
        path, mid = b.reply("Fine by me.\n\nAcked-by: Bob Maintainer "
                            "<bob@corp.example>\n", ar=DKIM_PASS,
                            parent=xid, refs=[other])
        b.replay("--apply-now", path)
        mr = mr_state()
        self.assertEqual(mr["approvals"], [])
        bodies = [n["body"] for _, n in user_notes(mr)
                  if key(mid, 0) in n["body"]]
        self.assertEqual(len(bodies), 1)
        self.assertIn("do not agree on one merge request", bodies[0])
        row, actions = b.dump(mid)
        self.assertEqual(row[0], "applied")
        self.assertEqual(sorted(actions), [0])

    # (e)
    def test_lost_response_posts_once(self):
        # The forge client, allowed to retry, looks for the marker after
        # an empty reply and finds the note instead of posting it again.
        b = self.b
        b.close()
        self.b = b = Bridge(forge_retries=2)
        sim("POST", "faults", {"kind": "drop_after_commit",
                               "method": "POST", "path": "/discussions$",
                               "count": 2})
        path, mid = b.reply("Comment.\n\n" + QUOTE_ADDED + "\nInline.\n",
                            ar=DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertIn("applied 1", p.stdout)
        mr = mr_state()
        self.assertEqual(marker_count(mr, key(mid, 0)), 1)
        self.assertEqual(marker_count(mr, key(mid, 1)), 1)
        self.assertEqual(len(user_notes(mr)), 2)

    def test_lost_response_then_retry(self):
        # Without retries the outcome stays unknown: the mail waits, and
        # the next attempt finds the note by its marker.
        b = self.b
        sim("POST", "faults", {"kind": "drop_after_commit",
                               "method": "POST", "path": "/discussions$",
                               "count": 1})
        path, mid = b.reply("Comment.\n\n" + QUOTE_ADDED + "\nInline.\n",
                            ar=DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertIn("waiting for a retry 1", p.stdout)
        row, actions = b.dump(mid)
        self.assertEqual(actions[0], ("comment", "failed"))
        self.assertIn("outcome unknown", row[2])
        p = b.replay("--apply-now", "--retry-now")
        self.assertIn("applied 1", p.stdout)
        mr = mr_state()
        self.assertEqual(marker_count(mr, key(mid, 0)), 1)
        self.assertEqual(marker_count(mr, key(mid, 1)), 1)
        self.assertEqual(len(user_notes(mr)), 2)
        row, actions = b.dump(mid)
        self.assertEqual(row[0], "applied")
        self.assertEqual(actions, {0: ("comment", "done"),
                                   1: ("diff-note", "done")})

    def kill_after_comment(self, path, mid):
        """Apply the reply at path; kill -9 the applier once its first
        note is on the forge (its answer held back by a fault)."""
        proc = subprocess.Popen([PB, "-c", self.b.conf(), "replay",
                                 "--apply-now", path],
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):
                if marker_count(mr_state(), key(mid, 0)):
                    break
                time.sleep(0.05)
            else:
                self.fail("the first note never arrived")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()

    def test_kill_between_intent_and_completion(self):
        b = self.b
        # The first discussion is written, then its answer is held back:
        # the daemon dies with the action journaled as an intent.
        sim("POST", "faults", {"kind": "latency", "ms": 20000,
                               "method": "POST", "path": "/discussions$",
                               "count": 1})
        path, mid = b.reply("Comment.\n\n" + QUOTE_ADDED + "\nInline.\n\n"
                            "Acked-by: Bob Maintainer <bob@corp.example>\n",
                            ar=DKIM_PASS)
        self.kill_after_comment(path, mid)
        row, actions = b.dump(mid)
        self.assertEqual(row[0], "applying")
        self.assertEqual(actions[0], ("comment", "intent"))
        sim("DELETE", "faults")
        # The next run recovers the row and finds the note by its marker.
        p = b.replay("--apply-now")
        self.assertIn("applied 1", p.stdout)
        mr = mr_state()
        self.assertEqual(marker_count(mr, key(mid, 0)), 1)
        self.assertEqual(marker_count(mr, key(mid, 1)), 1)
        self.assertEqual(len(user_notes(mr)), 2)
        self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
        row, actions = b.dump(mid)
        self.assertEqual(row[0], "applied")
        self.assertTrue(all(s == "done" for _, s in actions.values()))

    def notices(self, mid):
        """The notices queued for reply mid (SQLite state only)."""
        import sqlite3
        db = sqlite3.connect(self.b.db())
        try:
            row = db.execute("SELECT decision, notice_id FROM notices"
                             " WHERE message_id = ?", (mid,)).fetchone()
            queued = db.execute(
                "SELECT o.recipients, o.message FROM outmail o"
                " JOIN thread_map t ON t.message_id = o.message_id"
                " WHERE t.kind = 'receipt'").fetchall()
        finally:
            db.close()
        return row, queued

    # An unverified ack's notice to its sender: one, though the daemon
    # was killed -9 while applying the reply and applied it again.
    def test_notice_once_across_kill(self):
        b = self.b
        sim("POST", "faults", {"kind": "latency", "ms": 20000,
                               "method": "POST", "path": "/discussions$",
                               "count": 1})
        path, mid = b.reply("Ship it.\n\n"
                            "Acked-by: Mallory <mallory@corp.example>\n",
                            sender="Mallory <mallory@corp.example>")
        self.kill_after_comment(path, mid)
        row, _ = b.dump(mid)
        self.assertEqual(row[0], "applying")
        self.assertEqual(self.notices(mid), (None, []))
        sim("DELETE", "faults")
        p = b.replay("--apply-now")
        self.assertIn("applied 1", p.stdout)
        p = b.replay("--apply-now", "--retry-now")
        notice, queued = self.notices(mid)
        self.assertEqual(notice[0], "sent")
        self.assertEqual(len(queued), 1)
        self.assertEqual(queued[0][0], "mallory@corp.example")
        text = bytes(queued[0][1]).decode() \
            if not isinstance(queued[0][1], str) else queued[0][1]
        self.assertIn("Message-ID: <%s>" % notice[1], text)
        self.assertIn("In-Reply-To: <%s>" % mid, text)
        self.assertIn("Auto-Submitted: auto-replied", text)
        self.assertIn("not verified", text)
        self.assertEqual(marker_count(mr_state(), key(mid, 0)), 1)
        out = run([PB, "-c", b.conf(), "why", mid])
        self.assertIn("notice to the sender: sent as <%s>" % notice[1], out)

    # An inline comment the bridge cannot place on the diff (the MR
    # version it answers is not known: no start commit) is posted as a
    # general comment quoting file:line, and its sender is told so.
    def test_notice_inline_as_general_comment(self):
        b = self.b
        import sqlite3
        db = sqlite3.connect(b.db())
        db.execute("UPDATE thread_map SET start_sha = NULL")
        db.execute("UPDATE revisions SET start_sha = NULL")
        db.commit()
        db.close()
        path, mid = b.reply("Comment.\n\n" + QUOTE_ADDED + "\nInline.\n",
                            ar=DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertIn("applied 1", p.stdout)
        mr = mr_state()
        self.assertFalse(any(n.get("position") for _, n in
                             user_notes(mr)))
        notice, queued = self.notices(mid)
        self.assertEqual(notice[0], "sent")
        self.assertEqual(queued[0][0], "bob@corp.example")
        text = queued[0][1]
        text = " ".join((text if isinstance(text, str) else
                         bytes(text).decode()).split())
        self.assertIn("could not be placed on a line of the merge "
                      "request's diff", text)

    # `why` says why a reply's sender was not told: an automatic mail
    # (RFC 3834), whose unverified ack still did not count.
    def test_why_no_notice_to_automatic_mail(self):
        b = self.b
        path, mid = b.reply("Ship it.\n\n"
                            "Acked-by: Mallory <mallory@corp.example>\n",
                            sender="Mallory <mallory@corp.example>",
                            ar="other.example; none\n"
                            "Auto-Submitted: auto-generated")
        p = b.replay("--apply-now", path)
        self.assertIn("applied 1", p.stdout)
        notice, queued = self.notices(mid)
        self.assertEqual(notice[0], "auto_submitted")
        self.assertEqual(queued, [])
        out = run([PB, "-c", b.conf(), "why", mid])
        self.assertIn("notice to the sender: not sent: the reply is "
                      "automatic", out)
        self.assertIn("not counted as an approval", out)
        j = json.loads(run([PB, "-c", b.conf(), "why", "--json", mid]))
        self.assertEqual(j["notice"]["decision"], "auto_submitted")
        self.assertIsNone(j["notice"]["message_id"])

    # (f)
    def test_forge_down_then_back(self):
        b = self.b
        sim("POST", "faults", {"kind": "error", "status": 503,
                               "path": "^/api/v4/", "count": 1000})
        path, mid = b.reply("While it was down.\n", ar=DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertIn("waiting for a retry 1", p.stdout)
        row, _ = b.dump(mid)
        self.assertEqual(row[0], "failed")
        self.assertEqual(user_notes(mr_state()), [])
        # Not due yet: nothing happens.
        sim("DELETE", "faults")
        # Due now (the operator's "retry now"), the forge is back.
        p = b.replay("--apply-now", "--retry-now")
        self.assertIn("applied 1", p.stdout)
        mr = mr_state()
        self.assertEqual(marker_count(mr, key(mid, 0)), 1)
        row, _ = b.dump(mid)
        self.assertEqual(row[0], "applied")

    def test_keeps_failing_goes_dead(self):
        b = self.b
        b.close()
        self.b = b = Bridge(max_attempts=2)
        sim("POST", "faults", {"kind": "error", "status": 503,
                               "path": "^/api/v4/", "count": 1000})
        path, mid = b.reply("Never lands.\n", ar=DKIM_PASS)
        b.replay("--apply-now", path)
        p = b.replay("--apply-now", "--retry-now")
        self.assertIn("dead 1", p.stdout)
        row, _ = b.dump(mid)
        self.assertEqual(row[0], "dead")
        self.assertIn("gave up after 2 attempts", row[2])
        dead = os.listdir(os.path.join(b.dir, "spool", "dead"))
        self.assertEqual(len([d for d in dead if d.endswith(".reason")]),
                         1)
        self.assertEqual(len(dead), 2)

    def test_expired_token_waits_uncounted(self):
        """GitLab refuses the token itself (401 invalid_token,
        lib/api/api_guard.rb): with max_attempts = 1 a comment and an
        ack are tried again and again and never dead; once a working
        token is in the file they are applied."""
        b = self.b
        b.close()
        self.b = b = Bridge(max_attempts=1)
        sim("POST", "tokens", {"user": "root", "token": "dead-token",
                               "scopes": ["api", "sudo"]})
        sim("PUT", "tokens/dead-token", {"expire": True})
        token = os.path.join(b.dir, "token")
        with open(token, "w") as f:
            f.write("dead-token\n")
        comment, cmid = b.reply("Seen while the token is dead.\n",
                                ar=DKIM_PASS)
        ack, amid = b.reply("Fine.\n\nAcked-by: Bob Maintainer "
                            "<bob@corp.example>\n", ar=DKIM_PASS)
        b.replay("--apply-now", comment, ack)
        tries = 0
        for _ in range(3):
            # --retry-now claims what is due within retry_max (2 s); a
            # wait is retry_base (1 s) after the pass's own horizon
            time.sleep(1.1)
            p = b.replay("--apply-now", "--retry-now")
            self.assertIn(" dead 0;", p.stdout)
            tries += int(p.stdout.split("waiting for a retry ")[1]
                         .split(",")[0])
        self.assertGreaterEqual(tries, 2)
        for mid in (cmid, amid):
            row, _ = b.dump(mid)
            self.assertEqual(row[0], "failed", row)
            self.assertEqual(row[1], "0", row)
            self.assertIn("the forge token has expired", row[2])
        self.assertEqual(os.listdir(os.path.join(b.dir, "spool", "dead")),
                         [])
        with open(token, "w") as f:
            f.write(ADMIN + "\n")
        time.sleep(1.1)
        for _ in range(2):
            b.replay("--apply-now", "--retry-now")
        mr = mr_state()
        self.assertEqual(marker_count(mr, key(cmid, 0)), 1)
        self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
        for mid in (cmid, amid):
            self.assertEqual(b.dump(mid)[0][0], "applied")

    # (g)
    def test_ack_after_new_revision(self):
        b = self.b
        out = sim("POST", "projects/1/merge_requests/1/push",
                  {"commits": [{"message": "hello: one more\n",
                                "files": {"README.md": "more\n"}}]})
        self.assertTrue(out["created"])
        path, mid = b.reply("Acked-by: Bob Maintainer "
                            "<bob@corp.example>\n", ar=DKIM_PASS)
        b.replay("--apply-now", path)
        mr = mr_state()
        self.assertEqual(mr["approvals"], [])
        notes = [(d, n) for d, n in user_notes(mr)
                 if key(mid, 1500) in n["body"]]
        self.assertEqual(len(notes), 1)
        self.assertIn("was given for v1 (head %s)" % b.head[:12],
                      notes[0][1]["body"])
        self.assertIn("no longer the head", notes[0][1]["body"])
        self.assertIn("the patches changed since v1", notes[0][1]["body"])
        # ... in the thread of the mail's comment.
        first = [d for d, n in user_notes(mr) if key(mid, 0) in n["body"]]
        self.assertEqual(first[0]["id"], notes[0][0]["id"])

    def rebase_mr(self):
        """Move the target branch by a file the MR does not touch and
        rebase the MR onto it: a new head, the same patch-id."""
        target = mr_state()["target_branch"]
        sim("POST", "projects/1/commits",
            {"branch": target, "message": "docs: unrelated\n",
             "files": {"UNRELATED.md": "elsewhere\n"}})
        out = sim("POST", "projects/1/merge_requests/1/rebase", {})
        self.assertTrue(out["rebased"])
        v = out["version"]
        self.assertNotEqual(v["head_commit_sha"], self.b.head)
        self.assertEqual(v["patch_id_sha"], self.b.version["patch_id_sha"])
        return v["head_commit_sha"]

    def test_ack_after_pure_rebase(self):
        """An ack of v1, to a patch and to the cover letter, after a
        rebase that left every patch as it was (mail_rebases = no never
        mailed it): approved at the current head, as GitLab itself
        keeps approvals across such a push."""
        b = self.b
        head = self.rebase_mr()
        for patch in (1, 0):
            api("POST", "projects/1/merge_requests/1/unapprove",
                token="bob-token")
            path, mid = b.reply("Acked-by: Bob Maintainer "
                                "<bob@corp.example>\n", ar=DKIM_PASS,
                                patch=patch)
            b.replay("--apply-now", path)
            mr = mr_state()
            self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
            notes = [n["body"] for _, n in user_notes(mr)
                     if key(mid, 1500) in n["body"]]
            self.assertEqual(len(notes), 1)
            self.assertIn("approved at the current head %s: the patches "
                          "you reviewed are unchanged by the rebase" %
                          head[:12], notes[0])
            self.assertNotIn("was not recorded", notes[0])
            row, _ = b.dump(mid)
            self.assertEqual(row[0], "applied")

    # replies to replies continue the thread
    def test_reply_to_reply_continues_thread(self):
        b = self.b
        path, mid = b.reply("First thought.\n", ar=DKIM_PASS)
        b.replay("--apply-now", path)
        second = os.path.join(b.dir, "second.eml")
        with open(path) as f, open(second, "w") as g:
            text = f.read()
            text = text.replace("<%s>" % mid, "<second.%s>" % mid, 1)
            text = text.replace("In-Reply-To: <%s>" % b.patch_ids[0],
                                "In-Reply-To: <%s>" % mid)
            text = text.replace("First thought.", "> First thought.\n\n"
                                "Second thought.")
            g.write(text)
        p = b.replay("--apply-now", second)
        self.assertIn("applied 1", p.stdout)
        mr = mr_state()
        threads = [d for d in mr["discussions"]
                   if any(not n["system"] for n in d["notes"])]
        self.assertEqual(len(threads), 1)
        self.assertEqual(len(threads[0]["notes"]), 2)
        self.assertIn("Second thought.", threads[0]["notes"][1]["body"])

    # an answer under a quoted inline comment goes on in its diff thread
    def inline_thread_mails(self, general=True, before=None):
        """Bob's inline review, and Alice's reply quoting his hunk and
        comment: (Bob's Message-ID, Alice's mail, her Message-ID).
        before() runs before Bob's review is applied."""
        b = self.b
        if before:
            before()
        path, mid = b.reply(
            "On the greeting:\n\n" + QUOTE_REMOVED + "\nWas fine.\n\n" +
            QUOTE_ADDED + "\nWhy flush?\n\n" + QUOTE_CONTEXT, ar=DKIM_PASS)
        b.replay("--apply-now", path)
        path2, mid2 = b.reply(
            ("Thanks for looking.\n\n" if general else "") +
            "On Thu, 03 Dec 2026, Bob Maintainer wrote:\n"
            "> " + QUOTE_ADDED + ">\n> Why flush?\n\n"
            "Because the test reads stdout through a pipe.\n\n"
            "> " + QUOTE_CONTEXT + "\nThis call goes in v2.\n",
            sender="Alice Developer <alice@example.com>")
        with open(path2) as f:
            text = f.read()
        text = text.replace("In-Reply-To: <%s>" % b.patch_ids[0],
                            "In-Reply-To: <%s>" % mid)
        text = text.replace("<%s>\n" % b.patch_ids[0],
                            "<%s> <%s>\n" % (b.patch_ids[0], mid))
        with open(path2, "w") as f:
            f.write(text)
        return mid, path2, mid2

    def check_inline_thread(self, mid, mid2):
        mr = mr_state()
        threads = {d["id"]: d for d, _ in user_notes(mr)}
        self.assertEqual(len(threads), 4)
        first = {n["body"].split("\n")[0]: (d, n) for d, n in user_notes(mr)
                 if key(mid, 0)[:-1] in n["body"]}
        d, n = first["Why flush?"]
        self.assertEqual(len(d["notes"]), 2, d["notes"])
        answer = d["notes"][1]
        self.assertIn("Because the test reads stdout", answer["body"])
        self.assertIn("Alice Developer &lt;alice@example.com&gt; via email",
                      answer["body"])
        self.assertEqual(answer["type"], "DiffNote")
        self.assertEqual(answer["position"], n["position"])
        self.assertEqual(marker_count(mr, key(mid2, 1)), 1)
        self.assertIn(key(mid2, 1), answer["body"])
        self.assertEqual(len(first["Was fine."][0]["notes"]), 1)
        # the comment at another line: a diff thread of its own
        new = [(d, n) for d, n in user_notes(mr) if key(mid2, 2) in n["body"]]
        self.assertEqual(len(new), 1)
        d, n = new[0]
        self.assertEqual(len(d["notes"]), 1)
        self.assertEqual(n["type"], "DiffNote")
        self.assertEqual((n["position"]["old_line"],
                          n["position"]["new_line"]), (20, 21))
        self.assertIn("This call goes in v2.", n["body"])
        return mr

    def test_reply_to_inline_comment_continues_diff_thread(self):
        b = self.b
        mid, path2, mid2 = self.inline_thread_mails()
        p = b.replay("--apply-now", path2)
        self.assertIn("applied 1", p.stdout)
        mr = self.check_inline_thread(mid, mid2)
        # the general text goes on in the general thread, as before
        general = [d for d, n in user_notes(mr) if key(mid, 0) in n["body"]]
        self.assertEqual(len(general[0]["notes"]), 2)
        self.assertIn("Thanks for looking.", general[0]["notes"][1]["body"])
        row, actions = b.dump(mid2)
        self.assertEqual(row[0], "applied")
        self.assertEqual(actions, {0: ("comment", "done"),
                                   1: ("diff-reply", "done"),
                                   2: ("diff-note", "done")})
        # Again: the same mail, and the daemon's pass, change nothing.
        p = b.replay("--apply-now", path2)
        self.assertIn("duplicates 1", p.stdout)
        run([PB, "-c", b.conf(), "run", "--once", "--foreground"])
        self.assertEqual(mr_state()["discussions"], mr["discussions"])

    def push_v2(self):
        out = sim("POST", "projects/1/merge_requests/1/push",
                  {"commits": [{"message": "docs: more\n",
                                "files": {"README.md": "more\n"}}]})
        self.assertTrue(out["created"])

    def test_reply_to_inline_comment_after_push_continues_thread(self):
        # GitLab moves Bob's diff notes to v2 on the push (the file's diff
        # is unchanged) and shows only the moved position; Alice's answer
        # to his mail on v1 still goes on in his thread, found by what the
        # bridge recorded when it made his notes.
        self.check_after_push(push_first=False)

    def test_inline_comment_on_v1_applied_after_push_continues_thread(self):
        # Bob's review of v1 is applied after the push: GitLab moves his
        # notes to v2 as they are made (DiffPositionableNote
        # #update_position); Alice's answer still goes on in his thread.
        self.check_after_push(push_first=True)

    def check_after_push(self, push_first):
        b = self.b
        mid, path2, mid2 = self.inline_thread_mails(
            before=self.push_v2 if push_first else None)
        if not push_first:
            self.push_v2()
        moved = [n for _, n in user_notes(mr_state())
                 if n["type"] == "DiffNote"]
        self.assertTrue(moved)
        self.assertFalse([n for n in moved
                          if n["position"]["head_sha"] == b.head])
        p = b.replay("--apply-now", path2)
        self.assertIn("applied 1", p.stdout)
        self.check_inline_thread(mid, mid2)
        row, actions = b.dump(mid2)
        self.assertEqual(actions, {0: ("comment", "done"),
                                   1: ("diff-reply", "done"),
                                   2: ("diff-note", "done")})

    def test_reply_in_diff_thread_lost_response(self):
        # The answer lands but its response is lost: the retry finds it
        # by its marker instead of answering twice.
        b = self.b
        mid, path2, mid2 = self.inline_thread_mails(general=False)
        sim("POST", "faults", {"kind": "drop_after_commit",
                               "method": "POST",
                               "path": "/discussions/[^/]+/notes$",
                               "count": 1})
        p = b.replay("--apply-now", path2)
        self.assertIn("waiting for a retry 1", p.stdout)
        row, actions = b.dump(mid2)
        self.assertEqual(actions[1], ("diff-reply", "failed"))
        p = b.replay("--apply-now", "--retry-now")
        self.assertIn("applied 1", p.stdout)
        self.check_inline_thread(mid, mid2)
        row, actions = b.dump(mid2)
        self.assertEqual(actions, {1: ("diff-reply", "done"),
                                   2: ("diff-note", "done")})

    # the daemon drains what the milter (here: replay) spooled
    # A ~7 MB reply: a comment, an inline comment, megabytes of a pasted
    # log, an Acked-by at the end.  It is applied, not a dead letter: the
    # approval and the diff note are there, and the comment, cut to fit a
    # GitLab note, says where the whole mail is.
    def test_large_reply_applied(self):
        b = self.b
        log = "".join("log line %06d: the quick brown fox jumps over the "
                      "lazy dog\n" % i for i in range(110000))
        path, mid = b.reply(
            "INLINE-LARGE: the flush is needed, the log:\n\n" + log +
            "\n" + QUOTE_ADDED + "\nINLINE-LARGE-2: keep it.\n\n"
            "Acked-by: Bob Maintainer <bob@corp.example>\n", ar=DKIM_PASS)
        self.assertGreater(os.path.getsize(path), 6 * 1024 * 1024)
        p = b.replay("--apply-now", path)
        self.assertIn("applied 1", p.stdout, p.stdout + p.stderr)
        row, actions = b.dump(mid)
        self.assertEqual(row[0], "applied")
        mr = mr_state()
        self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
        notes = user_notes(mr)
        comment = [n["body"] for _, n in notes
                   if "INLINE-LARGE:" in n["body"]]
        self.assertEqual(len(comment), 1)
        body = comment[0]
        self.assertLessEqual(len(body), 1000000)
        self.assertIn("log line 000000", body)
        self.assertIn("truncated, the whole mail is on the list as "
                      "Message-ID &lt;%s&gt;" % mid, body)
        self.assertIn("approval by GitLab user bob", body)
        diff = [n for _, n in notes if n["type"] == "DiffNote"]
        self.assertEqual(len(diff), 1)
        self.assertIn("INLINE-LARGE-2", diff[0]["body"])

    # A mail over the milter's max_message_size: the milter spools its
    # first part with the size it had (Received-Size), the daemon applies
    # it, and the comment says it was cut and where the whole mail is.
    def test_milter_cut_reply_applied(self):
        b = self.b
        milter = os.path.join(os.path.dirname(os.path.dirname(
            os.path.abspath(PB))), "milter", "patchbridge-milter")
        self.assertTrue(os.access(milter, os.X_OK), milter)
        conf = os.path.join(b.dir, "milter.conf")
        with open(b.conf()) as f:
            text = f.read()
        with open(conf, "w") as f:
            f.write(text.replace("[milter]\n",
                                 "[milter]\nmax_message_size = 64k\n"))
        # run as root, the milter never makes its spool: it is made for
        # it, as an installation does
        os.makedirs(os.path.join(b.dir, "spool"), mode=0o770, exist_ok=True)
        path, mid = b.reply("Acked-by: Bob Maintainer <bob@corp.example>\n"
                            "\nCUT-TOP: fine by me; the rest is a log.\n\n" +
                            "".join("line %d of a log\n" % i
                                    for i in range(20000)), ar=DKIM_PASS)
        p = subprocess.run([milter, "-c", conf, "--test", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("; cut=", p.stdout)
        run([PB, "-c", b.conf(), "run", "--once", "--foreground"])
        row, _ = b.dump(mid)
        self.assertEqual(row[0], "applied")
        mr = mr_state()
        self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
        body = [n["body"] for _, n in user_notes(mr)
                if "CUT-TOP" in n["body"]][0]
        self.assertIn("truncated, the whole mail is on the list as "
                      "Message-ID &lt;%s&gt;" % mid, body)

    def test_daemon_applies_spool(self):
        b = self.b
        path, mid = b.reply("For the daemon.\n", ar=DKIM_PASS)
        p = b.replay(path)
        self.assertIn("spooled as", p.stdout)
        self.assertEqual(user_notes(mr_state()), [])
        run([PB, "-c", b.conf(), "run", "--once", "--foreground"])
        mr = mr_state()
        self.assertEqual(marker_count(mr, key(mid, 0)), 1)
        row, _ = b.dump(mid)
        self.assertEqual(row[0], "applied")
        out = run([PB, "-c", b.conf(), "status"])
        self.assertIn("inbound replies: 1 applied, 0 ignored", out)

    def test_disabled_webhook_in_status(self):
        """A webhook GitLab disabled after failed deliveries: the daemon's
        poll finds it and `status` says so, until it is re-enabled."""
        b = self.b
        secret = os.path.join(b.dir, "hook.secret")
        with open(secret, "w") as f:
            f.write("s3cret\n")
        os.chmod(secret, 0o600)
        with open(b.conf(), "a") as f:
            f.write("[webhook]\nenabled = yes\nsecret_file = %s\n" % secret)
        hook = sim("POST", "webhooks",
                   {"url": "http://127.0.0.1:9/hooks/gitlab"})["id"]
        sim("POST", "webhooks/%d/failures" % hook, {"count": 4})
        run([PB, "-c", b.conf(), "run", "--once", "--foreground"])
        out = run([PB, "-c", b.conf(), "status"])
        self.assertIn("  webhook: GitLab disabled the webhook "
                      "http://127.0.0.1:9/hooks/gitlab (id %d) after 4 or "
                      "more failures in a row" % hook, out)
        self.assertIn("re-enable it in Settings > Webhooks; until then the "
                      "bridge falls back to polling", out)
        sim("POST", "webhooks/%d/enable" % hook, {})
        run([PB, "-c", b.conf(), "run", "--once", "--foreground"])
        out = run([PB, "-c", b.conf(), "status"])
        self.assertNotIn("webhook:", out)

    # [spool] keep_done: the daemon removes old applied records from done/
    def test_daemon_prunes_done(self):
        b = self.b
        path, mid = b.reply("Pruned later.\n", ar=DKIM_PASS)
        b.replay(path)
        run([PB, "-c", b.conf(), "run", "--once", "--foreground"])
        done = os.path.join(b.dir, "spool", "done")
        self.assertEqual(len(os.listdir(done)), 1)
        # As if journaled before the archive existed (schema 3): the
        # daemon archives it from done/ before pruning done/.
        import sqlite3
        db = sqlite3.connect(b.db())
        db.execute("DELETE FROM archive")
        db.execute("DELETE FROM cursors WHERE name LIKE 'archive:%'")
        db.commit()
        db.close()
        p = subprocess.run([PB, "-c", b.conf(), "export", "--mbox", "-",
                            "group/project!1"], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 66, p.stderr)
        # the seeded series (3 mails) and the reply
        self.assertIn("no archived mail; 4 predate the archive", p.stderr)
        with open(b.conf()) as f:
            text = f.read()
        with open(b.conf(), "w") as f:
            f.write(text.replace("[spool]\n", "[spool]\nkeep_done = 1s\n"))
        time.sleep(2.2)
        run([PB, "-c", b.conf(), "run", "--once", "--foreground"])
        self.assertEqual(os.listdir(done), [])
        row, _ = b.dump(mid)
        self.assertEqual(row[0], "applied")
        out = run([PB, "-c", b.conf(), "export", "--mbox", "-",
                   "group/project!1"])
        self.assertIn("Message-ID: <%s>" % mid, out)
        self.assertIn("Pruned later.", out)
        # [state] archive_keep bounds the archive.
        with open(b.conf()) as f:
            text = f.read()
        with open(b.conf(), "w") as f:
            f.write(text.replace("[state]\n", "[state]\narchive_keep = 1s\n"))
        run([PB, "-c", b.conf(), "run", "--once", "--foreground"])
        p = subprocess.run([PB, "-c", b.conf(), "export", "--mbox", "-",
                            "group/project!1"], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 66, p.stderr)

    def test_status_shows_dead_letters(self):
        b = self.b
        b.close()
        self.b = b = Bridge(max_attempts=1)
        sim("POST", "faults", {"kind": "error", "status": 503,
                               "path": "^/api/v4/", "count": 1000})
        path, mid = b.reply("Never lands.\n", ar=DKIM_PASS)
        b.replay("--apply-now", path)
        out = run([PB, "-c", b.conf(), "status"])
        self.assertIn("<%s> dead group/project!1 v1 patch 1, 1 "
                      "attempt(s): gave up after 1 attempts" % mid, out)

    def test_not_a_reply_is_skipped(self):
        b = self.b
        path = os.path.join(b.dir, "other.eml")
        with open(path, "w") as f:
            f.write("From: x@example.net\nSubject: hello\n"
                    "Message-ID: <other@example.net>\n\nhi\n")
        p = b.replay("--apply-now", path)
        self.assertIn("not bridged", p.stdout)
        self.assertEqual(user_notes(mr_state()), [])


def main():
    """Run the tests of the __main__ module: this one's, or those of a
    script that shares the fixture (test_why_sim.py ...)."""
    global PB, SEED
    if not URL:
        print("PB_FORGESIM_URL is not set (run through run-with-sim.sh)")
        return 1
    PB, SEED = sys.argv[1], sys.argv[2]
    argv = [sys.argv[0]] + sys.argv[3:]
    shard = os.environ.get("PB_TEST_SHARD")
    if not shard or len(argv) > 1:
        prog = unittest.main(argv=argv, exit=False, verbosity=2)
        return 0 if prog.result.wasSuccessful() else 1
    # PB_TEST_SHARD=K/N: only the tests K, K+N, K+2N ... (by name), so
    # that CTest runs the script as N tests side by side, each with its
    # own simulator; every test is in exactly one shard.
    k, n = (int(x) for x in shard.split("/"))
    loader = unittest.TestLoader()
    every = []

    def flatten(suite):
        for t in suite:
            if isinstance(t, unittest.TestSuite):
                flatten(t)
            else:
                every.append(t)
    flatten(loader.loadTestsFromModule(sys.modules["__main__"]))
    every.sort(key=lambda t: t.id())
    mine = unittest.TestSuite(t for i, t in enumerate(every)
                              if i % n == k - 1)
    print("shard %d/%d: %d of %d tests" % (k, n, mine.countTestCases(),
                                           len(every)))
    result = unittest.TextTestRunner(verbosity=2).run(mine)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
