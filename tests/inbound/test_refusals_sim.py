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


if __name__ == "__main__":
    sys.exit(sim.main())
