#!/usr/bin/python3
"""The daemon's monitoring against the GitLab simulator: /metrics,
/healthz, /readyz, the alert rules of contrib/prometheus on its real
output, and systemd's watchdog.

Run through tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL):

    test_monitor_sim.py PATCHBRIDGE INBOUND_SEED [TEST...]

The state is test_inbound_sim.py's (whose Bridge fixture this shares):
MR !1 of group/project as mailed, replies spooled with `patchbridge
replay` exactly as the milter spools them; `patchbridge run
--foreground` with [metrics] enabled on a free loopback port.  Every
scrape is checked with Prometheus' own parsers: `promtool check
metrics` (Debian's prometheus package) and python3-prometheus-client's.

  test_forge_401_and_the_spool
      The forge answers 401 to everything (GitLab's body for a token it
      does not know): /readyz turns 503 telling the operator to install
      a new token, the replies spooled meanwhile wait in cur/ uncounted
      (no dead letter: the operator's to fix), and the counters and
      `status` say so.  Then the forge fails writes with 503: the
      replies wait for their retries, one aged by its spool name (the
      clock cannot be moved), and the oldest record's age shows it.
      Then the forge is back: ready, every reply applied, the spool
      empty, nothing dead.  The daemon logs with
      [log] format = json: every line is a JSON object, and the lines
      about each reply carry its Message-ID as the correlation id.
      The four scrapes,
      laid one after the other on promtool's clock, drive
      contrib/prometheus/alerts.yml (`promtool test rules`): the forge
      alert and the token alert fire in the 401 phase (the dead letters
      do not), the stuck spool in the 503 phase, and all clear after.
  test_unknown_token_replaced
      The token file holds a token GitLab does not know (its plain
      401): the replies wait uncounted, /readyz and status say to
      install a new token, and a working one written to the file is
      taken up with no command: every reply applied, none dead.
  test_readyz_names_each_failure
      /readyz with the MTA's port closed (smtp), then the spool's tmp/
      not a directory (spool) and the state database not a file
      (store): 503, each check's line with its reason, the gauge of
      that check 0; each recovers once put back.
  test_watchdog_stops_while_the_forge_hangs
      With a socket of the test's as systemd's ($NOTIFY_SOCKET,
      WATCHDOG_USEC=1 s): READY=1, then WATCHDOG=1 pings; a poll whose
      forge request hangs for 6 s stops the pings for that long (a gap
      of 5 s at least, whatever the machine's load) - systemd would kill
      and restart the daemon - while /healthz and /metrics still answer;
      the pings come again once the forge answers; SIGTERM sends
      STOPPING=1.
"""

import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "tools"))
import test_inbound_sim as sim  # noqa: E402  (the shared fixture)
import notify_listen  # noqa: E402
import prom_scrape  # noqa: E402
from prom_scrape import parse, total  # noqa: E402

ALERTS = os.path.join(TOP, "contrib", "prometheus", "alerts.yml")
UNAUTHORIZED = {"kind": "error", "status": 401, "path": "^/api/v4/",
                "count": None, "content_type": "application/json",
                "body": '{"message":"401 Unauthorized"}'}


def free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def wait_until(what, cond, timeout=30, step=0.1):
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        got = cond()
        if got:
            return got
        time.sleep(step)
    raise AssertionError("timed out waiting for " + what)


class Daemon:
    """`patchbridge run --foreground` with [metrics] on port."""

    def __init__(self, conf, logpath, port, env=None):
        self.port = port
        self.logpath = logpath
        self.log = open(logpath, "w")
        self.proc = subprocess.Popen(
            [sim.PB, "-c", conf, "run", "--foreground"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            env=dict(os.environ, **(env or {})))
        wait_until("the status server", lambda: self.get("/healthz")[0]
                   == 200 or self.proc.poll() is not None)
        if self.proc.poll() is not None:
            self.log.close()
            raise AssertionError("the daemon exited:\n" + self.text())

    def get(self, path, timeout=10):
        return prom_scrape.get(self.port, path, timeout)

    def scrape(self):
        # No answer at all (status 0) while the daemon lives is the
        # moment it reloads (SIGHUP, or a new token in its file) and
        # starts its status server again: wait for it, up to a minute.
        t = time.monotonic()
        while True:
            status, text = self.get("/metrics")
            if status != 0 or self.proc.poll() is not None or \
                    time.monotonic() - t > 60:
                break
            time.sleep(0.1)
        if status != 200:
            raise AssertionError("/metrics: %d %s" % (status, text))
        return text

    def text(self):
        with open(self.logpath) as f:
            return f.read()

    def kick(self):
        """SIGUSR1: poll and look at the spool now."""
        self.proc.send_signal(signal.SIGUSR1)

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class MonitorTest(unittest.TestCase):
    def setUp(self):
        self.b = sim.Bridge(max_attempts=30)
        self.port = free_port()
        with open(self.b.conf()) as f:
            conf = f.read()
        with open(self.b.conf(), "w") as f:
            f.write(conf.replace("[log]\n", "[log]\nformat = json\n", 1))
        with open(self.b.conf(), "a") as f:
            f.write("[metrics]\nenabled = yes\nlisten = 127.0.0.1:%d\n"
                    "[outbound]\npoll_interval = 1h\n"
                    # an MTA that is there: a program that takes the mail
                    "[smtp]\nurl = sendmail\nsendmail_path = /bin/true\n"
                    % self.port)
        self.d = None
        self.tmp = tempfile.mkdtemp(prefix="pb-monitor.")

    def tearDown(self):
        if self.d:
            self.d.close()
            log = self.d.text()
            if os.environ.get("PB_TEST_VERBOSE") == "1":
                sys.stderr.write("--- daemon log\n" + log)
            # the ASan+UBSan build (scripts/test.sh)
            for report in ("ERROR: AddressSanitizer", "LeakSanitizer",
                           "runtime error:"):
                self.assertNotIn(report, log)
        sim.sim("DELETE", "faults")
        self.b.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, env=None):
        self.d = Daemon(self.b.conf(), os.path.join(self.b.dir, "log"),
                        self.port, env)
        return self.d

    def spool(self, body):
        path, mid = self.b.reply(body, ar=sim.DKIM_PASS)
        p = self.b.replay(path)
        self.assertIn("spooled as", p.stdout)
        return mid

    def readyz(self):
        return self.d.get("/readyz")

    def scrape(self):
        return parse(self.d.scrape())

    # --- the 401 outage, the spool, the alerts ----------------------------

    def test_forge_401_and_the_spool(self):
        d = self.start()
        spool = os.path.join(self.b.dir, "spool")
        status, body = wait_until("ready", lambda: self.readyz()
                                  if self.readyz()[0] == 200 else None)
        self.assertEqual(body.split("\n")[0], "ready")
        for check in ("store: ok", "spool: ok", "forge: ok", "smtp: ok",
                      "milter: ok"):
            self.assertIn(check, body)
        a = self.scrape()
        # every metric the code has is in the output, with its HELP
        names = sim.run([sim.PB, "list-metrics"]).split()
        text = d.scrape()
        for n in names:
            self.assertIn("# HELP %s " % n, text)
        self.assertEqual(total(a, "patchbridge_ready"), 5)
        self.assertEqual(total(a, "patchbridge_polls_total", result="ok"),
                         1)
        self.assertEqual(total(a, "patchbridge_build_info"), 1)

        # 1. GitLab does not know the token (deleted, mistyped, from
        # another instance): its plain 401 to everything.  The operator's
        # to fix, so the replies spooled meanwhile wait, uncounted.
        token_file = os.path.join(self.b.dir, "token")
        sim.sim("POST", "faults", UNAUTHORIZED)
        mids = [self.spool("LGTM, but a nit.\n"),
                self.spool("Another comment.\n")]
        d.kick()
        status, body = wait_until(
            "not ready", lambda: self.readyz()
            if self.readyz()[0] == 503 else None)
        self.assertEqual(body.split("\n")[0], "not ready")
        self.assertIn("forge: not ready: the forge token was not accepted: "
                      "GitLab does not know it (deleted, mistyped, or from "
                      "another instance): install a new one in %s"
                      % token_file, body)
        self.assertIn("spool: ok", body)
        def waited():
            ids = set()
            for line in d.text().splitlines():
                try:
                    o = json.loads(line)
                except ValueError:
                    continue
                if "waits for a working forge token" in o.get("msg", ""):
                    ids.add(o.get("id"))
            return set(mids) <= ids
        wait_until("both replies waiting", waited)
        # The poll's refusal is counted when the poll ends, which may be
        # after the replies waited: an event to wait on, not a given.
        wait_until("the poll refused", lambda: total(
            self.scrape(), "patchbridge_polls_total", result="auth") >= 1)
        b = self.scrape()
        self.assertEqual(total(b, "patchbridge_ready", check="forge"), 0)
        self.assertEqual(total(b, "patchbridge_forge_token_failing"), 1)
        self.assertGreaterEqual(total(b, "patchbridge_forge_requests_"
                                      "total", code="401"), 3)
        self.assertEqual(total(b, "patchbridge_replies_received_total",
                               result="journaled") -
                         total(a, "patchbridge_replies_received_total",
                               result="journaled"), 2)
        self.assertEqual(total(b, "patchbridge_replies_dead_total") -
                         total(a, "patchbridge_replies_dead_total"), 0)
        self.assertEqual(total(b, "patchbridge_spool_records", area="dead"),
                         0)
        self.assertEqual(total(b, "patchbridge_spool_records", area="cur"),
                         2)
        self.assertEqual(total(b, "patchbridge_replies_applied_total"), 0)
        self.assertLess(total(b, "patchbridge_spool_oldest_record_age_"
                              "seconds"), 900)
        out = sim.run([sim.PB, "-c", self.b.conf(), "status"])
        self.assertIn("the forge token was not accepted: GitLab does not "
                      "know it", out)
        self.assertNotIn(" dead ", out)
        for mid in mids:
            row, _ = self.b.dump(mid)
            self.assertIn(row[0], ("received", "applying", "failed"))
            self.assertLessEqual(int(row[1]), 1, row)

        # 2. the token works again, but the forge fails writes: the
        # replies wait for their retries, counted now.  One more is aged
        # by its name while the daemon is stopped (SIGSTOP), so it
        # cannot be claimed half renamed.
        sim.sim("DELETE", "faults")
        sim.sim("POST", "faults", {"kind": "error", "status": 503,
                                   "method": "write", "count": None})
        d.proc.send_signal(signal.SIGSTOP)
        try:
            waiting = self.spool("This one waits.\n")
            new = os.path.join(spool, "new")
            [name] = os.listdir(new)
            old = "%016d%s" % ((time.time() - 1200) * 1e6, name[16:])
            os.rename(os.path.join(new, name), os.path.join(new, old))
        finally:
            d.proc.send_signal(signal.SIGCONT)
        d.kick()
        c = wait_until("three replies waiting in cur/", lambda: (
            lambda s: s if total(s, "patchbridge_spool_records", area="cur")
            == 3 and total(s, "patchbridge_replies_retried_total") >= 1
            and total(s, "patchbridge_forge_token_failing") == 0
            else None)(self.scrape()))
        self.assertGreaterEqual(total(c, "patchbridge_spool_oldest_record_"
                                      "age_seconds"), 1200)
        self.assertEqual(total(c, "patchbridge_ready", check="forge"), 1)
        self.assertEqual(self.readyz()[0], 200)

        # 3. the forge is back: every reply applied, none dead, with no
        # command
        sim.sim("DELETE", "faults")
        d.kick()
        e = wait_until("the replies applied", lambda: (
            lambda s: s if total(s, "patchbridge_replies_applied_total")
            == 3 and total(s, "patchbridge_spool_records", area="cur") == 0
            else None)(self.scrape()), timeout=30)
        self.assertEqual(total(e, "patchbridge_spool_oldest_record_age_"
                               "seconds"), 0)
        self.assertEqual(total(e, "patchbridge_spool_records", area="dead"),
                         0)
        self.assertEqual(total(e, "patchbridge_replies_dead_total"), 0)
        self.assertEqual(total(e, "patchbridge_ready"), 5)
        self.assertEqual(self.readyz()[0], 200)
        for mid in [waiting] + mids:
            self.assertEqual(sim.marker_count(sim.mr_state(),
                                              sim.key(mid, 0)), 1)
        out = sim.run([sim.PB, "-c", self.b.conf(), "status"])
        self.assertNotIn("forge token", out)

        self.json_log({mids[0]: "waits for a working forge token",
                       mids[1]: "waits for a working forge token"})
        self.json_log({mids[0]: "applied", mids[1]: "applied",
                       waiting: "applied"})
        self.alerts_on([a, b, c, e])

    def json_log(self, expect):
        """Every line of the daemon's log is a JSON object of [log]
        format = json; for each Message-ID of expect, a line with it as
        the id has the word in its message."""
        lines = self.d.text().splitlines()
        self.assertGreater(len(lines), 10)
        by_id = {}
        for line in lines:
            try:
                o = json.loads(line)
            except ValueError:
                self.fail("not a JSON log line: %r" % line)
            for k in ("time", "level", "program", "pid", "msg"):
                self.assertIn(k, o, line)
            self.assertEqual(o["program"], "patchbridge")
            self.assertEqual(o["pid"], self.d.proc.pid)
            if "id" in o:
                by_id.setdefault(o["id"], []).append(o["msg"])
        for mid, word in expect.items():
            msgs = by_id.get(mid, [])
            self.assertTrue(any(word in m for m in msgs),
                            "no line with id %s says %r: %r" %
                            (mid, word, msgs))

    def alerts_on(self, scrapes):
        """contrib/prometheus/alerts.yml on the scrapes, each held for
        20 minutes of promtool's clock (the first for 10): what must fire
        in each phase fires, and nothing else."""
        import yaml
        with open(ALERTS) as f:
            rules = {r["alert"]: r for g in yaml.safe_load(f)["groups"]
                     for r in g["rules"]}
        families = ("patchbridge_spool_oldest_record_age_seconds",
                    "patchbridge_spool_records",
                    "patchbridge_forge_requests_total",
                    "patchbridge_milter_tempfails_total",
                    "patchbridge_milter_up", "patchbridge_ready",
                    "patchbridge_forge_token_failing")
        keys = sorted({k for s in scrapes for k in s if k[0] in families})
        runs = (9, 19, 19, 19)  # samples after the first of each phase
        series = []
        for name, labels in keys:
            lab = dict(labels, instance="pb", job="patchbridge")
            # promtool's expanding notation: "VxN" is N+1 samples, but
            # "_xN" (absent) is N
            values = " ".join(
                "%rx%d" % (s[(name, labels)], n) if (name, labels) in s
                else "_x%d" % (n + 1) for s, n in zip(scrapes, runs))
            series.append({"series": name + "{" + ",".join(
                '%s="%s"' % kv for kv in sorted(lab.items())) + "}",
                "values": values})

        def alert(name, **labels):
            r = rules[name]
            return {"exp_labels": dict(r["labels"], instance="pb",
                                       job="patchbridge", **labels),
                    "exp_annotations": r["annotations"]}

        silent = alert("PatchbridgeMilterSilent")  # no milter here
        expect = {
            # the 401 phase (minutes 10 to 29): the token alert, no
            # dead letters (the replies wait for a working token)
            # (the 401s stopped at minute 10: gone from the window)
            25: {"PatchbridgeForgeAuth": [],
                 "PatchbridgeDeadLetters": [],
                 "PatchbridgeForgeTokenFailing": [
                     alert("PatchbridgeForgeTokenFailing")],
                 "PatchbridgeNotReady": [alert("PatchbridgeNotReady",
                                               check="forge")],
                 "PatchbridgeSpoolStuck": []},
            15: {"PatchbridgeForgeAuth": [alert("PatchbridgeForgeAuth")],
                 "PatchbridgeForgeTokenFailing": [
                     alert("PatchbridgeForgeTokenFailing")],
                 "PatchbridgeMilterSilent": [silent]},
            # the 503 phase (30 to 49): a record waits
            45: {"PatchbridgeSpoolStuck": [alert("PatchbridgeSpoolStuck")],
                 "PatchbridgeDeadLetters": [],
                 "PatchbridgeForgeTokenFailing": [],
                 "PatchbridgeForgeAuth": [],
                 "PatchbridgeNotReady": []},
            # recovered (50 to 69)
            65: {"PatchbridgeSpoolStuck": [], "PatchbridgeDeadLetters": [],
                 "PatchbridgeForgeAuth": [], "PatchbridgeNotReady": [],
                 "PatchbridgeForgeTokenFailing": [],
                 "PatchbridgeMilterTempfails": [],
                 "PatchbridgeMilterSilent": [silent]},
            # healthy before (0 to 9)
            9: {name: [] for name in rules
                if name not in ("PatchbridgeMilterSilent",
                                "PatchbridgeNoPoll")},
        }
        tests = [{"eval_time": "%dm" % t, "alertname": name,
                  "exp_alerts": exp}
                 for t, byname in sorted(expect.items())
                 for name, exp in sorted(byname.items())]
        doc = {"rule_files": [ALERTS], "evaluation_interval": "1m",
               "tests": [{"interval": "1m", "input_series": series,
                          "alert_rule_test": tests}]}
        path = os.path.join(self.tmp, "from-scrapes.test.yml")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)  # YAML is a superset of JSON
        p = subprocess.run(["promtool", "test", "rules", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr +
                         "\n(the test: %s)" % json.dumps(tests, indent=1))

    # --- the bot's token expires and is replaced ------------------------------

    def test_token_expires_replies_wait(self):
        """The token expires a week on (the gauge, a warning); then it
        has expired (GitLab's 401 invalid_token) while a comment, an ack
        and a NAK arrive: none is dead, none counts towards max_attempts
        (2 here), /readyz and status tell the operator to install a new
        token in the file; once one is there (no SIGHUP, no command) all
        three are applied.  The alert rules fire on the scrapes."""
        with open(self.b.conf()) as f:
            conf = f.read()
        with open(self.b.conf(), "w") as f:
            f.write(conf.replace("max_attempts = 30", "max_attempts = 2"))
        today = datetime.date.fromisoformat(
            sim.sim("GET", "time")["now"][:10])
        token_file = os.path.join(self.b.dir, "token")

        def new_token(name, days):
            sim.sim("POST", "tokens", {
                "user": "root", "token": name, "scopes": ["api", "sudo"],
                "expires_at": (today + datetime.timedelta(days)).isoformat()})
            with open(token_file, "w") as f:
                f.write(name + "\n")

        new_token("bot-2026", 7)
        d = self.start()
        expiry = "patchbridge_forge_token_expiry_timestamp_seconds"
        a = wait_until("the expiry date read", lambda: (
            lambda s: s if (expiry, ()) in s else None)(self.scrape()))
        self.assertEqual(total(a, expiry), (today - datetime.date(
            1970, 1, 1)).days * 86400 + 7 * 86400)
        self.assertEqual(total(a, "patchbridge_forge_token_failing"), 0)
        wait_until("ready", lambda: self.readyz()[0] == 200)
        self.assertIn("7 days left", d.text())

        # 1. the day comes: GitLab refuses the token
        sim.sim("PUT", "tokens/bot-2026", {"expire": True})
        mids = [self.spool("A comment while the token is dead.\n"),
                self.spool("Fine.\n\nAcked-by: Bob Maintainer "
                           "<bob@corp.example>\n"),
                self.spool("NAK.\n\nThis breaks the build.\n")]
        d.kick()
        status, body = wait_until("not ready", lambda: self.readyz()
                                  if self.readyz()[0] == 503 else None)
        self.assertIn("forge: not ready: the forge token has expired: "
                      "install a new one in %s" % token_file, body)
        # more tries than max_attempts: none counted, none dead
        wait_until("retries", lambda: d.text().count(
            "waits for a working forge token") >= 9, timeout=60)
        b = self.scrape()
        self.assertEqual(total(b, "patchbridge_forge_token_failing"), 1)
        self.assertEqual(total(b, "patchbridge_spool_records", area="dead"),
                         0)
        self.assertEqual(total(b, "patchbridge_replies_dead_total"), 0)
        self.assertEqual(total(b, "patchbridge_replies_applied_total"), 0)
        out = sim.run([sim.PB, "-c", self.b.conf(), "status"])
        self.assertIn("the forge token has expired: install a new one in "
                      "%s" % token_file, out)
        self.assertNotIn(" dead ", out)
        for mid in mids:
            row, _ = self.b.dump(mid)
            self.assertIn(row[0], ("received", "applying", "failed"))
            self.assertLessEqual(int(row[1]), 1, row)

        # 2. a new token in the file: no signal, no command
        new_token("bot-2027", 365)
        e = wait_until("all three applied", lambda: (
            lambda s: s if total(s, "patchbridge_replies_applied_total")
            == 3 else None)(self.scrape()), timeout=60)
        self.assertEqual(total(e, "patchbridge_forge_token_failing"), 0)
        self.assertEqual(total(e, "patchbridge_replies_dead_total"), 0)
        wait_until("ready again", lambda: self.readyz()[0] == 200,
                   timeout=120)
        out = sim.run([sim.PB, "-c", self.b.conf(), "status"])
        self.assertNotIn("forge token", out)
        mr = sim.mr_state()
        self.assertEqual([x["user"] for x in mr["approvals"]], [])  # NAKed
        self.assertIn("Acks::NACKed", mr["labels"])
        self.assertEqual(sim.marker_count(mr, sim.key(mids[0], 0)), 1)
        self.assertEqual(sim.marker_count(mr, sim.key(mids[2], 2001)), 1)
        for mid in mids:
            row, actions = self.b.dump(mid)
            self.assertEqual(row[0], "applied", row)
        self.assertEqual(self.b.dump(mids[1])[1][1000], ("approve", "done"))
        self.assertIn("a new token in %s" % token_file, d.text())
        self.assertEqual(total(e, expiry) - total(a, expiry), 358 * 86400)
        self.token_alerts_on([a, b, e], total(a, expiry) - 7 * 86400)

    def test_unknown_token_replaced(self):
        """The token in the file is one GitLab does not know (mistyped,
        or deleted on the forge): GitLab's plain 401.  The daemon starts,
        the comment and the ack that arrive wait uncounted (max_attempts
        is 2), nothing is dead, /readyz and status tell the operator to
        install a new token; once a working one is in the file (no
        SIGHUP, no command) both are applied."""
        with open(self.b.conf()) as f:
            conf = f.read()
        with open(self.b.conf(), "w") as f:
            f.write(conf.replace("max_attempts = 30", "max_attempts = 2"))
        token_file = os.path.join(self.b.dir, "token")
        with open(token_file) as f:
            good = f.read()
        with open(token_file, "w") as f:
            f.write("glpat-mistyped\n")
        d = self.start()
        mids = [self.spool("A comment with the wrong token.\n"),
                self.spool("Fine.\n\nAcked-by: Bob Maintainer "
                           "<bob@corp.example>\n")]
        d.kick()
        status, body = wait_until("not ready", lambda: self.readyz()
                                  if self.readyz()[0] == 503 else None)
        self.assertIn("forge: not ready: the forge token was not accepted: "
                      "GitLab does not know it (deleted, mistyped, or from "
                      "another instance): install a new one in %s"
                      % token_file, body)
        # more tries than max_attempts: none counted, none dead
        wait_until("retries", lambda: d.text().count(
            "waits for a working forge token") >= 6, timeout=60)
        b = self.scrape()
        self.assertEqual(total(b, "patchbridge_forge_token_failing"), 1)
        self.assertEqual(total(b, "patchbridge_spool_records", area="dead"),
                         0)
        self.assertEqual(total(b, "patchbridge_replies_dead_total"), 0)
        self.assertEqual(total(b, "patchbridge_replies_applied_total"), 0)
        out = sim.run([sim.PB, "-c", self.b.conf(), "status"])
        self.assertIn("the forge token was not accepted: GitLab does not "
                      "know it", out)
        self.assertNotIn(" dead ", out)
        for mid in mids:
            row, _ = self.b.dump(mid)
            self.assertIn(row[0], ("received", "applying", "failed"))
            self.assertLessEqual(int(row[1]), 1, row)

        # a working token in the file: no signal, no command
        with open(token_file, "w") as f:
            f.write(good)
        e = wait_until("both applied", lambda: (
            lambda s: s if total(s, "patchbridge_replies_applied_total")
            == 2 else None)(self.scrape()), timeout=60)
        self.assertEqual(total(e, "patchbridge_forge_token_failing"), 0)
        self.assertEqual(total(e, "patchbridge_replies_dead_total"), 0)
        wait_until("ready again", lambda: self.readyz()[0] == 200,
                   timeout=120)
        mr = sim.mr_state()
        self.assertEqual(sim.marker_count(mr, sim.key(mids[0], 0)), 1)
        self.assertEqual(self.b.dump(mids[1])[1][1000], ("approve", "done"))
        self.assertIn("a new token in %s" % token_file, d.text())

    def token_alerts_on(self, scrapes, today):
        """The token alerts of contrib/prometheus/alerts.yml on the
        scrapes, each held for 20 minutes: the warning while it expires
        in a week, the critical one while it is refused, none after.
        promtool's clock starts at 0: the expiry is moved by today."""
        expiry = "patchbridge_forge_token_expiry_timestamp_seconds"
        series = []
        for name in (expiry, "patchbridge_forge_token_failing"):
            shift = today if name == expiry else 0
            values = " ".join("%rx19" % (s[(name, ())] - shift)
                              if (name, ()) in s else "_x20"
                              for s in scrapes)
            series.append({"series": name + '{instance="pb",'
                           'job="patchbridge"}', "values": values})
        fires = {10: ["PatchbridgeForgeTokenExpiring"],
                 30: ["PatchbridgeForgeTokenExpiring",
                      "PatchbridgeForgeTokenFailing"],
                 50: []}
        import yaml
        with open(ALERTS) as f:
            rules = {r["alert"]: r for g in yaml.safe_load(f)["groups"]
                     for r in g["rules"]}
        tests = []
        for t, names in sorted(fires.items()):
            for name in ("PatchbridgeForgeTokenExpiring",
                         "PatchbridgeForgeTokenFailing"):
                tests.append({"eval_time": "%dm" % t, "alertname": name,
                              "exp_alerts": [{
                                  "exp_labels": dict(rules[name]["labels"],
                                                     instance="pb",
                                                     job="patchbridge"),
                                  "exp_annotations":
                                  rules[name]["annotations"]}]
                              if name in names else []})
        doc = {"rule_files": [ALERTS], "evaluation_interval": "1m",
               "tests": [{"interval": "1m", "input_series": series,
                          "alert_rule_test": tests}]}
        path = os.path.join(self.tmp, "token.test.yml")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        p = subprocess.run(["promtool", "test", "rules", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    # --- each check's reason -------------------------------------------------

    def test_readyz_names_each_failure(self):
        closed = free_port()  # nothing listens there
        with open(self.b.conf()) as f:
            conf = f.read()
        smtp = "url = sendmail\nsendmail_path = /bin/true\n"
        self.assertIn(smtp, conf)
        with open(self.b.conf(), "w") as f:
            f.write(conf.replace(smtp, "url = smtp://127.0.0.1:%d\n"
                                 "timeout = 2s\n" % closed))
        d = self.start()

        def not_ready(check, reason):
            status, body = wait_until(
                check + " not ready", lambda: (lambda r: r if r[0] == 503
                                               and check + ": not ready"
                                               in r[1] else None)(
                                                   self.readyz()))
            self.assertEqual(body.split("\n")[0], "not ready")
            line = next(l for l in body.splitlines()
                        if l.startswith(check + ": "))
            self.assertRegex(line, reason)
            self.assertEqual(total(self.scrape(), "patchbridge_ready",
                                   check=check), 0)
            return body

        # the MTA: connection refused (smtp is probed when asked)
        wait_until("the first poll", lambda: "forge: ok" in self.readyz()[1])
        body = not_ready("smtp", r"^smtp: not ready: .*127\.0\.0\.1.*%d"
                         % closed)
        for check in ("store: ok", "spool: ok", "forge: ok"):
            self.assertIn(check, body)

        # the spool: tmp/ is not a directory
        tmp = os.path.join(self.b.dir, "spool", "tmp")
        os.rename(tmp, tmp + ".away")
        with open(tmp, "w") as f:
            f.write("not a directory\n")
        try:
            not_ready("spool", r"^spool: not ready: .*tmp")
        finally:
            os.unlink(tmp)
            os.rename(tmp + ".away", tmp)
        wait_until("spool ok", lambda: "spool: ok" in self.readyz()[1])

        # the store: the state database is a directory
        db = self.b.db()
        os.rename(db, db + ".away")
        os.mkdir(db)
        try:
            not_ready("store", r"^store: not ready: .*state\.db")
        finally:
            os.rmdir(db)
            os.rename(db + ".away", db)
        wait_until("store ok", lambda: "store: ok" in self.readyz()[1])
        self.assertEqual(total(self.scrape(), "patchbridge_ready",
                               check="store"), 1)
        self.assertIsNone(d.proc.poll())

    # --- the watchdog --------------------------------------------------------

    def test_watchdog_stops_while_the_forge_hangs(self):
        sock = os.path.join(self.tmp, "notify")
        lis = notify_listen.Listener(sock)
        try:
            self.watchdog(lis, sock)
        finally:
            lis.close()

    def watchdog(self, lis, sock):
        # Every check waits on an event or bounds a gap from below: a
        # loaded machine only makes the waits longer and the gaps wider.
        d = self.start({"NOTIFY_SOCKET": sock, "WATCHDOG_USEC": "1000000"})
        self.assertTrue(lis.wait_for("READY=1", 10), lis.messages())
        wait_until("ready", lambda: self.readyz()[0] == 200)
        t = time.monotonic()
        wait_until("pings", lambda: len(lis.pings(t)) >= 4, timeout=30)

        # the next listing answers after 6 s
        sim.sim("POST", "faults", {"kind": "latency", "ms": 6000,
                                   "path": "/merge_requests$", "count": 1})
        d.kick()
        wait_until("the poll in the forge", lambda: sim.sim(
            "GET", "faults")[0]["hits"] == 1, timeout=30, step=0.05)
        hang = time.monotonic()
        # the status server answers while the loop waits on the forge
        self.assertEqual(d.get("/healthz"), (200, "ok\n"))
        self.assertIn("patchbridge_ready", d.scrape())
        # the forge answers: progress, pings again
        wait_until("pings after the forge answered",
                   lambda: len(lis.pings(hang)) >= 2, timeout=60)
        # The loop was held in the forge for the fault's 6 s and pinged
        # not once meanwhile: systemd, with a 1 s watchdog, would have
        # acted.  The gap is at least that long whatever the load.
        pings = lis.pings()
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        self.assertGreaterEqual(max(gaps), 5.0, "no gap for the forge's "
                                "6 s: the loop pinged while it hung")
        self.assertEqual(self.readyz()[0], 200)

        d.proc.send_signal(signal.SIGTERM)
        self.assertEqual(d.proc.wait(30), 0)
        self.assertTrue(lis.wait_for("STOPPING=1", 5), lis.messages())


def main():
    if not sim.URL:
        print("PB_FORGESIM_URL is not set (run through run-with-sim.sh)")
        return 77
    if prom_scrape.missing():
        print("SKIP: %s is not installed" % prom_scrape.missing())
        return 77
    sim.PB, sim.SEED = sys.argv[1], sys.argv[2]
    argv = [sys.argv[0]] + sys.argv[3:]
    prog = unittest.main(argv=argv, exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
