#!/usr/bin/python3
"""`patchbridge why` and `patchbridge status` on real state.

Run through tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL):

    test_why_sim.py PATCHBRIDGE INBOUND_SEED [TEST...]

Each test builds its state with the real pipeline, as test_inbound_sim.py
does (whose Bridge fixture it shares): a thread map seeded with MR !1 of
group/project as mailed, replies spooled by `patchbridge replay` exactly
as the milter spools them, and applied by the daemon (`run --once`) or
by `replay --apply-now` against the GitLab simulator.  Then `why` must
tell each mail's story right: an applied reply with its notes' links, an
ignored mail, dead letters (the forge refusing for good, a corrupt spool
record), a reply waiting for its retry, a mail still in the spool, the
bridge's own mail and a Message-ID the bridge never saw.  `status` must
show the spool depth, retries and dead letters with their reasons.
"""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_inbound_sim as sim  # noqa: E402  (the shared fixture)

EX_USAGE, EX_DATAERR, EX_NOINPUT = 64, 65, 66


class WhyTest(unittest.TestCase):
    def setUp(self):
        self.b = sim.Bridge()

    def tearDown(self):
        self.b.close()

    def pb(self, *args, want=0):
        p = subprocess.run([sim.PB, "-c", self.b.conf()] + list(args),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, want, "%s: exit %d\n%s%s" % (
            " ".join(args), p.returncode, p.stdout, p.stderr))
        return p.stdout

    def why(self, mid, want=0):
        return self.pb("why", mid, want=want)

    def why_json(self, mid, want=0):
        return json.loads(self.pb("why", "--json", mid, want=want))

    def daemon(self):
        self.pb("run", "--once", "--foreground")

    def note_id(self, mid, index):
        """The simulator's id of the note carrying action index's
        marker."""
        marker = "<!-- patchbridge:%s -->" % sim.key(mid, index)
        ids = [n["id"] for _, n in sim.user_notes(sim.mr_state())
               if marker in n["body"]]
        self.assertEqual(len(ids), 1, ids)
        return ids[0]

    def mr_url(self):
        return sim.URL + "/group/project/-/merge_requests/1"

    def spool_names(self, area):
        return sorted(n for n in os.listdir(os.path.join(self.b.dir,
                                                         "spool", area))
                      if not n.endswith(".reason"))

    # Story 1: an applied reply, its actions and their links
    def test_applied_reply(self):
        b = self.b
        path, mid = b.reply(
            "Looks right, one question.\n\n" + sim.QUOTE_ADDED +
            "\nWhy flush?\n\n"
            "Acked-by: Bob Maintainer <bob@corp.example>\n"
            "Reviewed-by: Alice Developer <alice@example.com>\n",
            ar=sim.DKIM_PASS)
        b.replay(path)
        self.daemon()
        comment, inline = self.note_id(mid, 0), self.note_id(mid, 1)
        out = self.why(mid)
        lines = out.splitlines()
        self.assertEqual(lines[0], "<%s>" % mid)
        self.assertIn("  applied to the forge: 3 action(s)\n", out)
        self.assertIn("  classified: a reply to group/project!1 v1, "
                      "patch 1/2\n", out)
        self.assertIn("  from: Bob Maintainer <bob@corp.example>, "
                      "DKIM/DMARC verified\n", out)
        self.assertIn("  forge: 3 actions on %s\n" % self.mr_url(), out)
        # On a shared state, which host spooled, applied and acted.
        pg = os.environ.get("PB_TEST_BACKEND") == "postgresql"
        by = ", by %s" % sim.PG_HOST if pg else ""
        if pg:
            self.assertIn("  hosts: spooled and journaled by %s; applied "
                          "by %s\n" % (sim.PG_HOST, sim.PG_HOST), out)
        else:
            self.assertNotIn("  hosts:", out)
        self.assertIn("    #0 comment (the comment): done, note %d%s\n"
                      "      %s#note_%d\n" % (comment, by, self.mr_url(),
                                              comment), out)
        self.assertIn("    #1 diff-note (inline comment 1): done, note %d%s\n"
                      "      %s#note_%d\n" % (inline, by, self.mr_url(),
                                              inline), out)
        self.assertIn("    #1000 approve (approval for trailer 1): done%s\n"
                      % by, out)
        self.assertIn("    Acked-by: Bob Maintainer <bob@corp.example>: "
                      "honoured: an approval (#1000 done)\n", out)
        # The reason, as the comment gives it, not "the comment says why".
        self.assertIn("    Reviewed-by: Alice Developer "
                      "<alice@example.com>: not honoured as an approval: "
                      "it names Alice Developer <alice@example.com>, not "
                      "the sender; only the sender may approve by mail\n",
                      out)
        done = self.spool_names("done")
        self.assertEqual(len(done), 1)
        self.assertIn("  spool: done/%s: filed after it was applied or "
                      "ignored\n" % done[0], out)
        self.assertNotIn("dead", out)
        # The same with <>, and as JSON.
        self.assertEqual(self.why("<%s>" % mid), out)
        j = self.why_json("<%s>" % mid)
        self.assertEqual(j["message_id"], mid)
        self.assertEqual(j["verdict"], "applied")
        self.assertEqual(j["classification"],
                         {"kind": "reply", "project": "group/project",
                          "mr": 1, "revision": 1, "patch": 1, "total": 2,
                          "mr_url": self.mr_url()})
        self.assertEqual(j["journal"]["state"], "applied")
        self.assertEqual(j["journal"]["attempts"], 1)
        self.assertIsNone(j["journal"]["next_attempt"])
        if pg:
            self.assertEqual(j["journal"]["spooled_by"], sim.PG_HOST)
            self.assertEqual(j["journal"]["claimed_by"], sim.PG_HOST)
            self.assertIsNone(j["journal"]["lease_until"])
        acts = {a["index"]: a for a in j["actions"]}
        self.assertEqual(sorted(acts), [0, 1, 1000])
        self.assertEqual(acts[0]["url"],
                         "%s#note_%d" % (self.mr_url(), comment))
        self.assertEqual(acts[1]["note_id"], inline)
        self.assertEqual((acts[1000]["kind"], acts[1000]["state"],
                          acts[1000]["url"]), ("approve", "done", None))
        self.assertEqual([(t["type"], t["honoured"], t["approval"])
                          for t in j["trailers"]],
                         [("Acked-by", True, "done"),
                          ("Reviewed-by", False, None)])
        self.assertEqual([t["verdict"] for t in j["trailers"]],
                         ["an approval as bob",
                          "not honoured as an approval: it names Alice "
                          "Developer <alice@example.com>, not the sender; "
                          "only the sender may approve by mail"])
        self.assertEqual(j["warnings"], [])
        self.assertTrue(j["from"]["verified"])
        self.assertEqual(j["spool"], [{"area": "done", "name": done[0],
                                       "journaled": True, "error": None,
                                       "reason": None}])
        self.assertIsNone(j["sent"])

    # Story 2: an ignored mail, and why
    def test_ignored_mail(self):
        b = self.b
        path, mid = b.reply("> Only a quote, nothing of my own.\n")
        b.replay("--apply-now", path)
        out = self.why(mid)
        self.assertIn("  ignored: nothing to apply\n"
                      "    (the mail has no text of its own, no inline "
                      "comment, trailer or NAK: only quotes, or a "
                      "signature)\n", out)
        self.assertIn("  classified: a reply to group/project!1 v1, "
                      "patch 1/2\n", out)
        self.assertIn("  forge: nothing was done on the forge\n", out)
        self.assertIn("  spool: done/", out)
        j = self.why_json(mid)
        self.assertEqual(j["verdict"], "ignored")
        self.assertEqual(j["journal"]["reason"], "nothing to apply")
        self.assertEqual(j["actions"], [])
        self.assertEqual(sim.user_notes(sim.mr_state()), [])

    # Story 3: the forge refuses for good -> a dead letter
    def test_dead_letter_forge_refuses(self):
        b = self.b
        sim.sim("POST", "faults", {
            "kind": "error", "status": 403, "method": "POST",
            "path": "/discussions$", "count": 100,
            "body": json.dumps({"message": "403 Forbidden"}),
            "content_type": "application/json"})
        path, mid = b.reply("The forge will not take this.\n",
                            ar=sim.DKIM_PASS)
        b.replay(path)
        self.daemon()
        dead = self.spool_names("dead")
        self.assertEqual(len(dead), 1)
        out = self.why(mid)
        self.assertIn("  dead letter: 1 action(s) failed: action 0 "
                      "(comment): POST /projects/1/"
                      "merge_requests/1/discussions: HTTP 403: 403 "
                      "Forbidden\n", out)
        self.assertIn("    (the forge refused an action for good; its "
                      "answer is with the action below)\n", out)
        self.assertIn("    #0 comment (the comment): failed: POST ", out)
        self.assertIn("  spool: dead/%s: a dead letter, kept until an "
                      "operator removes it\n" % dead[0], out)
        self.assertRegex(out, r"    reason \(%s\.reason, \d{4}-\d\d-\d\dT"
                         r"[0-9:]+Z\): 1 action\(s\) failed: action 0 "
                         r"\(comment\): .*HTTP 403" % dead[0])
        j = self.why_json(mid)
        self.assertEqual(j["verdict"], "dead")
        self.assertEqual(j["actions"][0]["state"], "failed")
        self.assertIn("HTTP 403", j["actions"][0]["error"])
        self.assertEqual(j["spool"][0]["area"], "dead")
        self.assertTrue(j["spool"][0]["journaled"])
        self.assertIn("HTTP 403", j["spool"][0]["reason"])
        self.assertIsNotNone(j["spool"][0]["dead_time"])
        # status: the dead letter and its reason, under its project.
        out = self.pb("status")
        self.assertIn("  inbound: 0 applied, 0 ignored, 0 waiting, "
                      "0 retrying, 1 dead\n", out)
        self.assertIn("    <%s> dead group/project!1 v1 patch 1, 1 "
                      "attempt(s): 1 action(s) failed: action 0 "
                      "(comment): " % mid, out)
        self.assertIn("spool %s/spool: 0 in new/, 0 in cur/, 0 in done/, "
                      "1 dead\n" % b.dir, out)
        self.assertNotIn("could not read", out)

    # a dead letter the daemon could not even read: only the spool knows
    def test_dead_letter_corrupt_record(self):
        b = self.b
        path, mid = b.reply("Cut short on disk.\n", ar=sim.DKIM_PASS)
        b.replay(path)
        new = self.spool_names("new")
        self.assertEqual(len(new), 1)
        rec = os.path.join(b.dir, "spool", "new", new[0])
        with open(rec, "rb+") as f:
            f.truncate(os.path.getsize(rec) - 3)
        self.daemon()
        self.assertEqual(self.spool_names("dead"), new)
        out = self.why(mid)
        self.assertIn("  dead letter: the daemon could not read its spool "
                      "record (see below)\n", out)
        self.assertIn("  spool: dead/%s: a dead letter" % new[0], out)
        self.assertRegex(out, r"    reason \(%s\.reason, [^)]+\): corrupt "
                         r"record: " % new[0])
        self.assertIn("the record's mail cannot be read back", out)
        j = self.why_json(mid)
        self.assertEqual(j["verdict"], "dead")
        self.assertIsNone(j["journal"])
        self.assertIn("corrupt record", j["spool"][0]["reason"])
        out = self.pb("status")
        self.assertIn("  dead letters the daemon could not read:\n"
                      "    dead/%s <%s>: corrupt record: " % (new[0], mid),
                      out)

    # a record that cannot be read is no "unknown" and no project's
    # mail, and a corrupt one is told as corrupt
    def test_unreadable_and_corrupt_records(self):
        b = self.b
        path, mid = b.reply("Locked away.\n")
        b.replay(path)
        name = self.spool_names("new")[0]
        bad = "0000000000000001.q1.1.1"
        with open(os.path.join(b.dir, "spool", "new", bad), "w") as f:
            f.write("not a record\n")
        # Everything readable by all but the record, read as nobody.
        for d, _, files in os.walk(b.dir):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        os.chmod(os.path.join(b.dir, "spool", "new", name), 0)
        root = os.geteuid() == 0

        def nobody():
            if root:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)

        def run(*args):
            return subprocess.run([sim.PB, "-c", b.conf()] + list(args),
                                  capture_output=True, text=True,
                                  timeout=120, preexec_fn=nobody)

        p = run("status")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("spool %s/spool: 2 in new/" % b.dir, p.stdout)
        self.assertIn("  1 record in new/ could not be read: spool: "
                      "cannot read new/%s: Permission denied\n" % name,
                      p.stdout)
        self.assertIn("  1 record in new/ is corrupt: spool: new/%s: "
                      % bad, p.stdout)
        self.assertIn("  spool: 0 waiting (0 in new/, 0 in cur/)\n",
                      p.stdout)
        self.assertNotIn("no configured project", p.stdout)
        p = run("why", mid)
        self.assertEqual(p.returncode, 77, p.stdout + p.stderr)
        self.assertIn("  cannot tell: not in the state database, and a "
                      "spool record that may be this mail's exists but "
                      "cannot be read (see below)\n", p.stdout)
        self.assertIn("  spool: new/%s: a record that may be this mail's "
                      "is there, but it cannot be read: Permission "
                      "denied\n" % name, p.stdout)
        p = run("why", "--json", mid)
        self.assertEqual(p.returncode, 77, p.stderr)
        j = json.loads(p.stdout)
        self.assertEqual(j["verdict"], "unreadable")
        self.assertEqual(j["spool"], [{
            "area": "new", "name": name, "journaled": False,
            "error": "Permission denied", "reason": None}])

    # a forge outage: the retry count and the next attempt
    def test_waiting_for_retry(self):
        b = self.b
        sim.sim("POST", "faults", {"kind": "error", "status": 503,
                                   "path": "^/api/v4/", "count": 1000})
        path, mid = b.reply("While the forge is down.\n", ar=sim.DKIM_PASS)
        b.replay("--apply-now", path)
        out = self.why(mid)
        self.assertRegex(out, r"  waiting for a retry after 1 failed "
                         r"attempt, next at \d{4}-[-0-9T:]+Z: .*503")
        self.assertIn("    (the daemon retries it then; with the daemon "
                      "stopped, `patchbridge replay --apply-now "
                      "--retry-now` retries it now: while the daemon "
                      "runs, that only leaves the spool to it)\n", out)
        self.assertIn("  spool: cur/", out)
        j = self.why_json(mid)
        self.assertEqual(j["verdict"], "failed")
        self.assertEqual(j["journal"]["attempts"], 1)
        self.assertIsNotNone(j["journal"]["next_attempt"])
        out = self.pb("status")
        self.assertIn("  spool: 1 waiting (0 in new/, 1 in cur/)\n", out)
        self.assertIn("  inbound: 0 applied, 0 ignored, 0 waiting, "
                      "1 retrying, 0 dead\n", out)
        self.assertRegex(out, r"    <%s> failed group/project!1 v1 patch "
                         r"1, 1 attempt\(s\), next \d{4}-[-0-9T:]+Z: "
                         % mid.replace(".", r"\."))

    # status lists 20 open replies of a project, and counts the rest
    def test_status_caps_open_rows(self):
        b = self.b
        sim.sim("POST", "faults", {"kind": "error", "status": 503,
                                   "path": "^/api/v4/", "count": 1000})
        paths = [b.reply("Outage %d.\n" % i)[0] for i in range(23)]
        b.replay("--apply-now", *paths)
        out = self.pb("status")
        self.assertIn("  inbound: 0 applied, 0 ignored, 0 waiting, "
                      "23 retrying, 0 dead\n", out)
        self.assertEqual(len([line for line in out.splitlines()
                              if line.startswith("    <reply-")]), 20)
        self.assertIn("    ... and 3 more\n", out)

    # spooled by the milter, not yet read by the daemon
    def test_spooled_not_read_yet(self):
        b = self.b
        path, mid = b.reply("Soon.\n")
        b.replay(path)
        out = self.why(mid)
        self.assertIn("  spooled by the milter, not journaled by the daemon "
                      "yet\n", out)
        self.assertIn("  classified by the milter: reply to "
                      "group/project!1\n", out)
        self.assertIn("  spool: new/", out)
        self.assertEqual(self.why_json(mid)["verdict"], "spooled")
        out = self.pb("status")
        self.assertIn("  spool: 1 waiting (1 in new/, 0 in cur/)\n", out)

    # the bridge's own mail, and mail the bridge never saw
    def test_own_and_unknown_mail(self):
        b = self.b
        out = self.why(b.patch_ids[0])
        self.assertIn("  sent by the bridge: a patch mail (patch) of "
                      "group/project!1 v1 1/2\n", out)
        self.assertRegex(out, r"    sent: the MTA accepted it at \d{4}-")
        j = self.why_json(b.cover)
        self.assertEqual(j["verdict"], "sent-by-bridge")
        self.assertEqual((j["sent"]["kind"], j["sent"]["patch"],
                          j["sent"]["state"]), ("cover", 0, "sent"))
        out = self.why("<never-seen@example.net>", want=EX_NOINPUT)
        self.assertIn("the bridge has no record of this Message-ID", out)
        self.assertIn("without spooling it", out)
        j = self.why_json("never-seen@example.net", want=EX_NOINPUT)
        self.assertEqual(j["verdict"], "unknown")

    def test_usage(self):
        self.pb("why", want=EX_USAGE)
        self.pb("why", "--bogus", "x@y", want=EX_USAGE)
        self.pb("why", "a@b", "c@d", want=EX_USAGE)
        self.pb("why", "<>", want=EX_DATAERR)
        self.pb("why", " <<>> ", want=EX_DATAERR)
        # A blank inside is an id the journal may hold (see below).
        self.pb("why", "a b@c", want=EX_NOINPUT)
        p = subprocess.run([sim.PB, "-c", self.b.conf(), "why",
                            "a\x1bb@c"], capture_output=True, text=True)
        self.assertEqual(p.returncode, EX_DATAERR)
        self.assertIn("control character", p.stderr)
        self.assertIn("MESSAGE-ID", self.pb("why", "--help"))

    # ids the journal keys as inbound_message_id() does: every leading
    # '<' and trailing '>' off, blanks and 8-bit bytes inside kept
    def test_ambiguous_mime(self):
        """A mail GMime reads two ways: why says which warnings made it
        ambiguous, and that this is why the Acked-by did not count."""
        path, mid = self.b.reply("Fine by me.\n\n"
                                 "Acked-by: Bob Maintainer <bob@corp.example>\n",
                                 ar=sim.DKIM_PASS)
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("Content-Type: text/plain; charset=utf-8",
                                 "Content-Type: text/plain; charset=utf-8\n"
                                 "Content-Type: text/plain; charset=us-ascii", 1))
        self.b.replay(path)
        self.daemon()
        out = self.why(mid)
        self.assertIn("  applied to the forge: ", out)
        self.assertIn("    Acked-by: Bob Maintainer <bob@corp.example>: not "
                      "honoured as an approval: the mail's MIME structure "
                      "is ambiguous", out)
        self.assertIn("  the parser warned (critical: its MIME structure is "
                      "ambiguous, so no trailer of it becomes an "
                      "approval):\n", out)
        self.assertRegex(out, r'\n    critical: conflicting header fields: '
                              r'"Content-Type" \(at byte \d+\)\n')
        j = self.why_json(mid)
        self.assertTrue(any(w.startswith("critical: conflicting header")
                            for w in j["warnings"]), j["warnings"])

    def test_odd_message_ids(self):
        b = self.b
        path, mid = b.reply("Doubled brackets.\n", ar=sim.DKIM_PASS)
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("<%s>" % mid, "<<%s>>" % mid, 1))
        b.replay(path)
        # Spooled as the milter does, then the id the journal keys.
        new = self.spool_names("new")
        odd = "odd id \u00e9@example.org"
        path2, _ = b.reply("Spooled by an older milter.\n",
                           ar=sim.DKIM_PASS)
        b.replay(path2)
        rec = os.path.join(b.dir, "spool", "new",
                           [n for n in self.spool_names("new")
                            if n not in new][0])
        with open(rec, "rb") as f:
            data = f.read()
        head, _, body = data.partition(b"\n\n")
        head = b"\n".join(b"Message-Id: odd id %C3%A9@example.org"
                          if line.startswith(b"Message-Id: ") else line
                          for line in head.split(b"\n"))
        with open(rec, "wb") as f:
            f.write(head + b"\n\n" + body)
        self.daemon()
        out = self.why("<<%s>>" % mid)
        self.assertIn("  applied to the forge: ", out)
        self.assertIn("  spool: done/", out)
        self.assertEqual(self.why(mid), out)
        self.assertEqual(self.why("<%s>" % mid), out)
        out = self.why("<%s>" % odd)
        self.assertEqual(out.splitlines()[0], "<odd id ??@example.org>")
        self.assertIn("  applied to the forge: ", out)
        self.assertIn("  spool: done/", out)
        j = self.why_json(" %s " % odd)
        self.assertEqual((j["message_id"], j["verdict"]), (odd, "applied"))
        self.assertEqual(j["spool"][0]["error"], None)


if __name__ == "__main__":
    sys.exit(sim.main())
