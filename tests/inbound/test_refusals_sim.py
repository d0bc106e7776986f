#!/usr/bin/python3
"""Replies that meet a forge refusing or holding back, against the GitLab
simulator.

Run through tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL):

    test_refusals_sim.py PATCHBRIDGE INBOUND_SEED [TEST...]

The fixture is test_inbound_sim.py's (MR !1 of group/project mailed as
v1, replies through `patchbridge replay --apply-now`).  Each test is a
day GitLab answers something other than yes: a Resource lock, a merged
or closed MR, a project that wants a password to approve, a locked
discussion.  None of them may leave a dead letter, and none may tell the
reviewer they are not allowed when the forge said something else.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_inbound_sim as sim  # noqa: E402  (the shared fixture)

ACK = "Looks right.\n\nAcked-by: Bob Maintainer <bob@corp.example>\n"
NAK = "NAK.\n\nThis breaks the build on 32-bit.\n"


def bodies(mr):
    return [n["body"] for _, n in sim.user_notes(mr)]


class ResourceLockTest(unittest.TestCase):
    """lib/api/api.rb: 409 {"message":"409 Conflict: Resource lock"}."""

    def setUp(self):
        self.b = sim.Bridge()

    def tearDown(self):
        self.b.close()

    def test_lock_on_label_waits_and_lands(self):
        b = self.b
        sim.sim("POST", "faults", {"kind": "resource_lock", "method": "PUT",
                                   "path": "/merge_requests/1$"})
        path, mid = b.reply(NAK, ar=sim.DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertIn("waiting for a retry 1", p.stdout)
        self.assertNotIn("dead 1", p.stdout)
        row, _ = b.dump(mid)
        self.assertEqual(row[0], "failed")
        self.assertIn("Resource lock", row[2])
        p = b.replay("--apply-now", "--retry-now")
        self.assertIn("applied 1", p.stdout)
        mr = sim.mr_state()
        self.assertIn("Acks::NACKed", mr["labels"])
        row, _ = b.dump(mid)
        self.assertEqual(row[0], "applied")

    def test_lock_on_approve_is_no_stale_sha(self):
        b = self.b
        b.close()
        self.b = b = sim.Bridge(forge_retries=2)
        sim.sim("POST", "faults", {"kind": "resource_lock",
                                   "method": "POST", "path": "/approve$"})
        path, mid = b.reply(ACK, ar=sim.DKIM_PASS)
        b.replay("--apply-now", path)
        mr = sim.mr_state()
        self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
        for text in bodies(mr):
            self.assertNotIn("no longer the head", text)
            self.assertNotIn("was not recorded", text)
        row, actions = b.dump(mid)
        self.assertEqual(row[0], "applied")
        self.assertEqual(actions[1000], ("approve", "done"))


def merge(b):
    status, out = sim.api("PUT", "projects/1/merge_requests/1/merge",
                          {"sha": b.head}, token="bob-token")
    assert status == 200, (status, out)
    return out


def pb_why(b, mid):
    return sim.run([sim.PB, "-c", b.conf(), "why", "<%s>" % mid])


class AfterMergeTest(unittest.TestCase):
    """ApprovalService / RemoveApprovalService: `return if
    merge_request.merged?`, answered 401 and 404."""

    def setUp(self):
        self.b = sim.Bridge()

    def tearDown(self):
        self.b.close()

    def refusal_free(self, mr):
        for text in bodies(mr):
            self.assertNotIn("not allowed", text)
            self.assertNotIn("did not accept", text)

    def test_ack_after_merge(self):
        b = self.b
        out = merge(b)
        landed = out["merge_commit_sha"] or out["sha"]
        path, mid = b.reply(ACK, ar=sim.DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertIn("applied 1", p.stdout)
        mr = sim.mr_state()
        self.assertEqual(mr["approvals"], [])
        self.assertEqual(sim.marker_count(mr, sim.key(mid, 0)), 1)
        notes = [n["body"] for _, n in sim.user_notes(mr)
                 if sim.key(mid, 1500) in n["body"]]
        self.assertEqual(len(notes), 1, bodies(mr))
        self.assertIn("Acked-by", notes[0])
        self.assertIn("the merge request was already merged (at %s)"
                      % landed[:12], notes[0])
        self.refusal_free(mr)
        row, _ = b.dump(mid)
        self.assertEqual(row[0], "applied")

    def test_nak_after_merge(self):
        b = self.b
        status, _ = sim.api("POST", "projects/1/merge_requests/1/approve",
                            {"sha": b.head}, token="bob-token")
        self.assertEqual(status, 201)
        merge(b)
        path, mid = b.reply(NAK, ar=sim.DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertIn("applied 1", p.stdout)
        self.assertNotIn("dead 1", p.stdout)
        mr = sim.mr_state()
        # GitLab keeps a merged MR's approvals; the NAK is said.
        self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
        self.assertEqual(sim.marker_count(mr, sim.key(mid, 2001)), 1)
        self.refusal_free(mr)
        row, actions = b.dump(mid)
        self.assertEqual(row[0], "applied")
        self.assertTrue(all(s == "done" for _, s in actions.values()),
                        actions)
        self.assertEqual(os.listdir(os.path.join(b.dir, "spool", "dead")),
                         [])

    def mr_unreadable_once(self):
        """The MR cannot be read before the actions (a 404 for it): the
        answers to approve and unapprove are judged by reading it
        again."""
        sim.sim("POST", "faults", {"kind": "error", "status": 404,
                                   "method": "GET",
                                   "path": "/merge_requests/1$",
                                   "body": '{"message":"404 Not found"}',
                                   "content_type": "application/json"})

    def test_ack_after_merge_unread_before(self):
        b = self.b
        out = merge(b)
        landed = out["merge_commit_sha"] or out["sha"]
        self.mr_unreadable_once()
        path, mid = b.reply(ACK, ar=sim.DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertIn("applied 1", p.stdout)
        mr = sim.mr_state()
        self.assertEqual(mr["approvals"], [])
        notes = [n["body"] for _, n in sim.user_notes(mr)
                 if sim.key(mid, 1500) in n["body"]]
        self.assertEqual(len(notes), 1, bodies(mr))
        self.assertIn("already merged (at %s)" % landed[:12], notes[0])
        self.refusal_free(mr)

    def test_nak_after_merge_unread_before(self):
        b = self.b
        status, _ = sim.api("POST", "projects/1/merge_requests/1/approve",
                            {"sha": b.head}, token="bob-token")
        self.assertEqual(status, 201)
        merge(b)
        self.mr_unreadable_once()
        path, mid = b.reply(NAK, ar=sim.DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertIn("applied 1", p.stdout)
        mr = sim.mr_state()
        self.assertEqual([a["user"] for a in mr["approvals"]], ["bob"])
        self.refusal_free(mr)
        self.assertEqual(os.listdir(os.path.join(b.dir, "spool", "dead")),
                         [])

    def test_ack_after_close(self):
        b = self.b
        status, _ = sim.api("PUT", "projects/1/merge_requests/1",
                            {"state_event": "close"}, token="bob-token")
        self.assertEqual(status, 200)
        path, mid = b.reply(ACK, ar=sim.DKIM_PASS)
        b.replay("--apply-now", path)
        mr = sim.mr_state()
        self.assertEqual(mr["approvals"], [])
        notes = [n["body"] for _, n in sim.user_notes(mr)
                 if sim.key(mid, 1500) in n["body"]]
        self.assertEqual(len(notes), 1, bodies(mr))
        self.assertIn("the merge request was closed", notes[0])
        self.refusal_free(mr)


class LockedDiscussionTest(unittest.TestCase):
    """discussion_locked: IssuablePolicy lets only members comment."""

    def setUp(self):
        self.b = sim.Bridge()

    def tearDown(self):
        self.b.close()

    def lock(self, locked=True):
        status, out = sim.api("PUT", "projects/1/merge_requests/1",
                              {"discussion_locked": locked},
                              token="bob-token")
        self.assertEqual(status, 200, out)
        self.assertEqual(out["discussion_locked"], locked)

    def check_not_posted(self, token):
        b = self.b
        with open(os.path.join(b.dir, "token"), "w") as f:
            f.write(token + "\n")
        self.lock()
        path, mid = b.reply("Said while it was locked.\n\n" + ACK,
                            ar=sim.DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertNotIn("dead 1", p.stdout)
        self.assertIn("ignored 1", p.stdout)
        mr = sim.mr_state()
        self.assertEqual(sim.user_notes(mr), [])
        self.assertEqual(mr["approvals"], [])
        row, actions = b.dump(mid)
        self.assertEqual(row[0], "ignored")
        self.assertIn("discussion is locked", row[2])
        self.assertEqual(actions, {})
        self.assertIn("discussion is locked", pb_why(b, mid))
        self.assertEqual(os.listdir(os.path.join(b.dir, "spool", "dead")),
                         [])
        # Unlocked later: what came while it was locked stays recorded
        # as not posted; what comes now is posted.
        self.lock(False)
        b.replay("--apply-now", "--retry-now")
        self.assertEqual(sim.user_notes(sim.mr_state()), [])
        path, mid2 = b.reply("After the unlock.\n", ar=sim.DKIM_PASS)
        b.replay("--apply-now", path)
        mr = sim.mr_state()
        self.assertEqual(sim.marker_count(mr, sim.key(mid2, 0)), 1)
        self.assertEqual(sim.marker_count(mr, sim.key(mid, 0)), 0)

    def test_locked_unread_before(self):
        """The MR could not be read before the actions: GitLab's 403 to a
        bridge that is no member is judged by reading it again."""
        b = self.b
        self.lock()
        sim.sim("POST", "faults", {"kind": "error", "status": 404,
                                   "method": "GET",
                                   "path": "/merge_requests/1$",
                                   "body": '{"message":"404 Not found"}',
                                   "content_type": "application/json"})
        path, mid = b.reply("Said while it was locked.\n",
                            ar=sim.DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertIn("ignored 1", p.stdout)
        self.assertEqual(sim.user_notes(sim.mr_state()), [])
        row, _ = b.dump(mid)
        self.assertEqual(row[0], "ignored")
        self.assertIn("discussion is locked", row[2])
        self.assertEqual(os.listdir(os.path.join(b.dir, "spool", "dead")),
                         [])

    def test_locked_bot_no_member(self):
        # root: GitLab would answer 403 to the comment
        self.check_not_posted(sim.ADMIN)

    def test_locked_bot_member(self):
        # the bot's own user is a Developer: GitLab would let it through
        self.check_not_posted("bot-token")


class ReauthenticationTest(unittest.TestCase):
    """EE's require_password_to_approve: every approval by API is 401."""

    def setUp(self):
        self.b = sim.Bridge()

    def tearDown(self):
        self.b.close()

    def test_password_to_approve(self):
        b = self.b
        sim.sim("PUT", "projects/1/settings",
                {"require_password_to_approve": True})
        path, mid = b.reply(ACK, ar=sim.DKIM_PASS)
        p = b.replay("--apply-now", path)
        self.assertIn("applied 1", p.stdout)
        mr = sim.mr_state()
        self.assertEqual(mr["approvals"], [])
        notes = [n["body"] for _, n in sim.user_notes(mr)
                 if sim.key(mid, 1500) in n["body"]]
        self.assertEqual(len(notes), 1, bodies(mr))
        self.assertIn("the project's setting stops approvals by email",
                      notes[0])
        for text in bodies(mr):
            self.assertNotIn("not allowed", text)
            self.assertNotIn("did not accept", text)
        # No approval was even asked for: the state said it would fail.
        reqs = sim.sim("GET", "requests")
        self.assertFalse([r for r in reqs if r["method"] == "POST" and
                          r["path"].endswith("/approve")])
        out = sim.run([sim.PB, "-c", b.conf(), "status"])
        self.assertIn("approvals by mail cannot work: the project requires "
                      "re-authentication", out)
        # The operator turns it off: the next ack lands, status is quiet.
        sim.sim("PUT", "projects/1/settings",
                {"require_password_to_approve": False})
        path, mid = b.reply(ACK, ar=sim.DKIM_PASS)
        b.replay("--apply-now", path)
        self.assertEqual([a["user"] for a in sim.mr_state()["approvals"]],
                         ["bob"])
        out = sim.run([sim.PB, "-c", b.conf(), "status"])
        self.assertNotIn("approvals by mail cannot work", out)


if __name__ == "__main__":
    sys.exit(sim.main())
