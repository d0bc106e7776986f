#!/usr/bin/python3
"""Signals to the daemon (`patchbridge run --foreground`) while it applies
spooled replies to the GitLab simulator.

Run through tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL):

    test_daemon_signals.py PATCHBRIDGE INBOUND_SEED [TEST...]

The state is built as in test_inbound_sim.py (whose Bridge fixture this
shares): a thread map seeded with MR !1 of group/project as mailed, and
replies spooled by `patchbridge replay` exactly as the milter spools
them.  The daemon runs in the foreground with its log on a file.

  test_sighup_broken_then_good
      SIGHUP with a configuration that does not load: "reload refused",
      the daemon lives on and keeps applying replies with the old
      configuration; then SIGHUP with a good new one (another spool
      directory): "configuration reloaded", and a reply spooled there is
      applied.  SIGTERM: exit 0, "stopped (signal)".
  test_sigterm_mid_batch
      Four spooled replies, the forge answering each new discussion only
      after a delay: SIGTERM once the first note is on the forge.  The
      daemon exits 0 with "stopped (signal)" after the reply it is
      applying, without applying the whole batch first; a restart
      (`run --once`) applies the rest, and every action is on the forge
      exactly once.  At the stop, a reply with its first action on the
      forge has all of them there: the row in hand was finished.
  test_sigterm_forge_503, test_sigterm_forge_hangs
      The forge answers every new discussion 503 (with 5 retries 2 s
      apart), or writes it and then does not answer for 30 s: SIGTERM
      while a reply is being applied stops the daemon within a few
      seconds, not after the retries and timeouts; the reply is filed to
      be tried again.  Once the forge is back a restart applies every
      reply, each action on the forge exactly once.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_inbound_sim as sim  # noqa: E402  (the shared fixture)


class Daemon:
    """`patchbridge run --foreground` with its stderr on a file."""

    def __init__(self, conf, logpath):
        self.logpath = logpath
        self.log = open(logpath, "w")
        self.proc = subprocess.Popen(
            [sim.PB, "-c", conf, "run", "--foreground"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        self.wait_log("notice: started", 30)

    def text(self):
        with open(self.logpath) as f:
            return f.read()

    def wait_log(self, what, timeout, after=0):
        """Wait until what is logged past offset after; return the
        offset just past it."""
        t = time.monotonic()
        while time.monotonic() - t < timeout:
            text = self.text()
            i = text.find(what, after)
            if i >= 0:
                return i + len(what)
            if self.proc.poll() is not None:
                raise AssertionError("the daemon exited (%d) waiting for "
                                     "%r:\n%s" % (self.proc.returncode,
                                                  what, text))
            time.sleep(0.05)
        raise AssertionError("%r not logged in %ds:\n%s" %
                             (what, timeout, self.text()))

    def alive(self):
        return self.proc.poll() is None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=30):
        """SIGTERM; return (exit status, seconds it took)."""
        t = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=timeout)
        return rc, time.monotonic() - t

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def wait_marker(d, mid, index, timeout):
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        if sim.marker_count(sim.mr_state(), sim.key(mid, index)):
            return
        time.sleep(0.1)
    raise AssertionError("the note of <%s> action %d never arrived; "
                         "daemon log:\n%s" % (mid, index, d.text()))


class DaemonSignalTest(unittest.TestCase):
    def setUp(self):
        self.b = sim.Bridge()
        self.d = None

    def tearDown(self):
        if self.d:
            self.d.close()
            if os.environ.get("PB_TEST_VERBOSE") == "1":
                sys.stderr.write("--- daemon log\n" + self.d.text())
        self.b.close()

    def spool(self, body, conf=None):
        """Spool a reply as the milter would; return its Message-ID."""
        path, mid = self.b.reply(body, ar=sim.DKIM_PASS)
        cmd = [sim.PB, "-c", conf or self.b.conf(), "replay", path]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("spooled as", p.stdout)
        return mid

    def restart_applies_once(self, mids):
        """With the forge healthy again, one run applies the rest: each
        reply's two actions exactly once, every row applied."""
        b = self.b
        sim.sim("DELETE", "faults")
        p = subprocess.run([sim.PB, "-c", b.conf(), "run", "--once",
                            "--foreground"], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        mr = sim.mr_state()
        for m in mids:
            for k in (0, 1):
                self.assertEqual(sim.marker_count(mr, sim.key(m, k)), 1,
                                 (m, k))
            row, actions = b.dump(m)
            self.assertEqual(row[0], "applied", m)
            self.assertTrue(all(s == "done" for _, s in actions.values()))
        self.assertEqual(len(sim.user_notes(mr)), 2 * len(mids))

    def test_sighup_broken_then_good(self):
        b = self.b
        conf = b.conf()
        with open(conf) as f:
            good = f.read()
        # replay reads the file too: it keeps a good copy
        old = os.path.join(b.dir, "old.conf")
        shutil.copy(conf, old)
        self.d = d = Daemon(conf, os.path.join(b.dir, "daemon.log"))

        with open(conf, "a") as f:
            f.write("[outbound]\npoll_interval = soon\n")
        d.signal(signal.SIGHUP)
        at = d.wait_log("reload refused", 20)
        self.assertTrue(d.alive(), "the daemon died on a broken reload")
        self.assertNotIn("configuration reloaded", d.text())
        # Still at work, with the configuration it had.
        mid = self.spool("Applied under the old configuration.\n", old)
        wait_marker(d, mid, 0, 30)

        spool2 = os.path.join(b.dir, "spool2")
        with open(conf, "w") as f:
            f.write(good.replace(os.path.join(b.dir, "spool"), spool2))
        d.signal(signal.SIGHUP)
        d.wait_log("configuration reloaded", 20, at)
        self.assertTrue(d.alive())
        mid2 = self.spool("Applied from the new spool directory.\n")
        self.assertTrue(os.listdir(os.path.join(spool2, "new")),
                        "the reply did not go to the new spool")
        wait_marker(d, mid2, 0, 30)

        rc, _ = d.stop()
        self.assertEqual(rc, 0, d.text())
        self.assertIn("stopped (signal)", d.text())
        mr = sim.mr_state()
        self.assertEqual(sim.marker_count(mr, sim.key(mid, 0)), 1)
        self.assertEqual(sim.marker_count(mr, sim.key(mid2, 0)), 1)

    def test_sigterm_mid_batch(self):
        b = self.b
        mids = [self.spool("Reply %d of a batch.\n\n%sInline %d.\n" %
                           (k, sim.QUOTE_ADDED, k)) for k in range(4)]
        # Each new discussion takes 2 s to be answered (after the write).
        sim.sim("POST", "faults", {"kind": "latency", "ms": 2000,
                                   "method": "POST",
                                   "path": "/discussions$"})
        self.d = d = Daemon(b.conf(), os.path.join(b.dir, "daemon.log"))
        t = time.monotonic()
        while time.monotonic() - t < 60:
            mr = sim.mr_state()
            if any(sim.marker_count(mr, sim.key(m, 0)) for m in mids):
                break
            time.sleep(0.05)
        else:
            self.fail("no note arrived:\n" + d.text())
        rc, took = d.stop(timeout=60)
        self.assertEqual(rc, 0, d.text())
        self.assertIn("stopped (signal)", d.text())
        mr = sim.mr_state()
        done = [m for m in mids if sim.marker_count(mr, sim.key(m, 1))]
        sys.stderr.write("stopped %.1fs after SIGTERM, %d of %d replies "
                         "applied\n" % (took, len(done), len(mids)))
        # 8 discussions of 2 s each were due: it did not finish the batch.
        self.assertLess(len(done), len(mids),
                        "SIGTERM waited for the whole batch")
        for m in mids:
            for k in (0, 1):
                self.assertLessEqual(sim.marker_count(mr, sim.key(m, k)), 1)
            # The reply in hand at SIGTERM was finished before the exit
            # (a restart would complete it too, which must not hide a
            # stop in mid-row).
            if sim.marker_count(mr, sim.key(m, 0)):
                self.assertEqual(sim.marker_count(mr, sim.key(m, 1)), 1,
                                 "<%s> stopped in mid-row:\n%s" %
                                 (m, d.text()))
                self.assertEqual(b.dump(m)[0][0], "applied", m)

        self.restart_applies_once(mids)

    def sigterm_forge_down(self, fault, started):
        """Three replies of two actions each; the forge fails with
        fault; SIGTERM once started(d, mids) returns: a prompt exit, the
        reply kept for the next start, which applies all exactly once."""
        b = self.b
        mids = [self.spool("Reply %d in an outage.\n\n%sInline %d.\n" %
                           (k, sim.QUOTE_ADDED, k)) for k in range(3)]
        sim.sim("POST", "faults", fault)
        self.d = d = Daemon(b.conf(), os.path.join(b.dir, "daemon.log"))
        started(d, mids)
        rc, took = d.stop(timeout=180)
        sys.stderr.write("stopped %.1fs after SIGTERM\n" % took)
        self.assertEqual(rc, 0, d.text())
        self.assertIn("stopped (signal)", d.text())
        # Within a few seconds (a bound on behaviour, not a benchmark):
        # not the retries' waits or [forge] timeout.
        self.assertLess(took, 10, d.text())
        self.assertIn("cut short by the stop", d.text())
        mr = sim.mr_state()
        for m in mids:
            for k in (0, 1):
                self.assertLessEqual(sim.marker_count(mr, sim.key(m, k)), 1)
        self.assertIn(b.dump(mids[0])[0][0], ("failed", "received"))

        self.restart_applies_once(mids)

    def test_sigterm_forge_503(self):
        self.b.close()
        self.b = sim.Bridge(forge_retries=5)
        conf = self.b.conf()
        with open(conf) as f:
            text = f.read()
        with open(conf, "w") as f:  # [forge]'s; [inbound] has 1s
            f.write(text.replace("retry_base = 10ms", "retry_base = 2s"))
        self.sigterm_forge_down({"kind": "error", "status": 503,
                                 "count": 1000, "method": "POST",
                                 "path": "/discussions$"},
                                lambda d, mids: d.wait_log("HTTP 503", 60))

    def test_sigterm_forge_hangs(self):
        # The write lands, the answer does not come ([forge] timeout is
        # 20 s here, a minute by default): SIGTERM once a note landed.
        def landed(d, mids):
            t = time.monotonic()
            while time.monotonic() - t < 60:
                mr = sim.mr_state()
                if any(sim.marker_count(mr, sim.key(m, 0)) for m in mids):
                    return
                time.sleep(0.05)
            self.fail("no note arrived:\n" + d.text())

        self.sigterm_forge_down({"kind": "latency", "ms": 30000,
                                 "method": "POST", "path": "/discussions$"},
                                landed)


if __name__ == "__main__":
    sys.exit(sim.main())
