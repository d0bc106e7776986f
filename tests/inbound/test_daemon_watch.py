#!/usr/bin/python3
"""The daemon takes a spooled reply as it comes ([spool] watch, inotify on
the spool's new/), and looks at the spool every few seconds all the same.

Run through tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL):

    test_daemon_watch.py PATCHBRIDGE INBOUND_SEED [TEST...]

The state is built as in test_inbound_sim.py (its Bridge fixture), the
daemon runs as in test_daemon_signals.py (`run --foreground`, log level
debug).  No timing is asserted: the tests wait up to a generous bound for
what must happen and check the log for why it happened.

  test_watch_takes_the_record
      With the default [spool] watch = yes the daemon says it watches
      new/; a reply spooled after it went to sleep wakes it ("a record
      arrived in the spool") and is applied to the forge.
  test_watch_off_falls_back
      With watch = no it says it looks every few seconds; a spooled reply
      is applied all the same, without any arrival being noticed.
  test_watch_after_reload
      After a SIGHUP that moves the spool elsewhere the new new/ is
      watched: a reply spooled there wakes the daemon and is applied.
"""

import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_daemon_signals as ds  # noqa: E402  (Daemon, wait_marker)
import test_inbound_sim as sim  # noqa: E402  (the shared fixture)

ARRIVED = "inbound: a record arrived in the spool"


class DaemonWatchTest(unittest.TestCase):
    def setUp(self):
        self.b = sim.Bridge()
        self.d = None

    def tearDown(self):
        if self.d:
            self.d.close()
            if os.environ.get("PB_TEST_VERBOSE") == "1":
                sys.stderr.write("--- daemon log\n" + self.d.text())
        self.b.close()

    def spool(self, body):
        """Spool a reply as the milter would; return its Message-ID."""
        path, mid = self.b.reply(body, ar=sim.DKIM_PASS)
        p = subprocess.run([sim.PB, "-c", self.b.conf(), "replay", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("spooled as", p.stdout)
        return mid

    def set_watch(self, value):
        with open(self.b.conf()) as f:
            text = f.read()
        text = text.replace("[spool]\n", "[spool]\nwatch = %s\n" % value)
        with open(self.b.conf(), "w") as f:
            f.write(text)

    def start(self):
        self.d = ds.Daemon(self.b.conf(), os.path.join(self.b.dir,
                                                        "daemon.log"))
        # the first cycle is done once the spool is looked at
        self.d.wait_log("inbound: ", 30)
        return self.d

    def test_watch_takes_the_record(self):
        d = self.start()
        at = d.wait_log("inbound: watching %s" %
                        os.path.join(self.b.dir, "spool", "new"), 30)
        mid = self.spool("Taken as it comes.\n")
        d.wait_log(ARRIVED, 30, at)
        ds.wait_marker(d, mid, 0, 30)
        rc, _ = d.stop()
        self.assertEqual(rc, 0, d.text())

    def test_watch_off_falls_back(self):
        self.set_watch("no")
        d = self.start()
        d.wait_log("[spool] watch = no: looking at the spool every", 30)
        mid = self.spool("Found by the periodic look.\n")
        ds.wait_marker(d, mid, 0, 60)
        self.assertNotIn(ARRIVED, d.text())
        self.assertNotIn("inbound: watching", d.text())
        rc, _ = d.stop()
        self.assertEqual(rc, 0, d.text())

    def test_watch_after_reload(self):
        b = self.b
        d = self.start()
        d.wait_log("inbound: watching", 30)
        spool2 = os.path.join(b.dir, "spool2")
        with open(b.conf()) as f:
            text = f.read()
        with open(b.conf(), "w") as f:
            f.write(text.replace(os.path.join(b.dir, "spool"), spool2))
        d.signal(signal.SIGHUP)
        at = d.wait_log("configuration reloaded", 30)
        at = d.wait_log("inbound: watching %s" %
                        os.path.join(spool2, "new"), 30, at)
        mid = self.spool("Taken from the new spool.\n")
        self.assertTrue(os.listdir(os.path.join(spool2, "new")) or
                        os.listdir(os.path.join(spool2, "cur")) or
                        os.listdir(os.path.join(spool2, "done")))
        d.wait_log(ARRIVED, 30, at)
        ds.wait_marker(d, mid, 0, 30)
        rc, _ = d.stop()
        self.assertEqual(rc, 0, d.text())


if __name__ == "__main__":
    sys.exit(sim.main())
