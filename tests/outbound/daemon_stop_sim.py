#!/usr/bin/python3
"""SIGTERM to `patchbridge run` with merge requests still on its work
queue: none is lost.

usage: daemon_stop_sim.py PATCHBRIDGE WORKDIR

Run through tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL).  Mail goes
to a sendmail stand-in that keeps each message in a file, so no MTA is
needed.

Three open MRs: !1 and !2, then, an hour later on the simulator's clock
(more than poll_overlap), !3.  The daemon's first poll queues all three
in updated_at order; the stand-in holds the first mail of !1 until
SIGTERM has been sent.  The daemon then stops after that mail, with !2
and !3 still queued.  A restart (`run --once`) must mail the rest of !1,
!2 and !3: every revision once, no Message-ID twice, and a second
`run --once` mails nothing.  (A watermark stored past the queue would
make the restart list only !3, leaving !2 unmailed.)

With PB_TEST_BACKEND=postgresql (and PB_TEST_PGBED, the directory of a
tests/pg/pgbed server) the state is a fresh PostgreSQL database.

Exit status: 0 pass, 1 fail (also outside the simulator).
"""

import email
import sqlite3
import email.policy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

URL = os.environ.get("PB_FORGESIM_URL")
LIST = "list@example.org"

# Keep each mail in OUT/mail-N; hold mail 1 while HOLD exists (bounded).
SENDMAIL = """#!/bin/sh
n=$(($(cat %(out)s/count 2>/dev/null || echo 0) + 1))
echo $n > %(out)s/count
if [ "$n" -eq 1 ]; then
	: > %(out)s/held
	i=0
	while [ -e %(hold)s ] && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
fi
cat > %(out)s/mail-$n.tmp && mv %(out)s/mail-$n.tmp %(out)s/mail-$n
"""

CONFIG = """\
[bridge]
address = bridge@example.org
domain = bridge.example.org
list_address = %(list)s
[forge]
url = %(url)s
token_file = %(dir)s/token
max_retries = 1
retry_max = 2s
[smtp]
url = sendmail
sendmail_path = %(dir)s/sendmail.sh
[state]
%(state)s[spool]
dir = %(dir)s/spool
[log]
level = debug
[outbound]
poll_interval = 1h
poll_overlap = 2m
[inbound]
approval_policy = none
[project "group/project"]
"""


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def sim(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(URL + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read()
    except urllib.error.HTTPError as e:
        raise Fail("%s %s: %d %s" % (method, path, e.code, e.read()[:300]))
    return json.loads(text) if text else None


def create_mr(branch, title):
    commits = [{"message": "%s: part %d\n\nSigned-off-by: Alice Developer "
                "<alice@example.com>\n" % (branch, k),
                "files": {"%s-%d.txt" % (branch, k): "part %d\n" % k}}
               for k in (1, 2)]
    sim("POST", "/_sim/projects/1/commits",
        {"branch": branch, "start": "main", "commits": commits})
    sim("POST", "/_sim/projects/1/merge_requests",
        {"source_branch": branch, "target_branch": "main", "title": title,
         "author": "alice"})


def mails(out):
    got = []
    for name in sorted(os.listdir(out)):
        if re.fullmatch(r"mail-\d+", name):
            with open(os.path.join(out, name), "rb") as f:
                got.append(email.message_from_binary_file(
                    f, policy=email.policy.default))
    return got


def check_mailed_once(msgs):
    """Every MR's v1 complete, each mail once."""
    ids = [m["Message-ID"] for m in msgs]
    check(len(ids) == len(set(ids)), "a Message-ID twice: %s" % ids)
    per_mr = {}
    for m in msgs:
        check(m["X-Patchbridge-Revision"] == "1",
              "not v1: %s" % m["Subject"])
        k = re.search(r"(\d+)/(\d+)\]", m["Subject"])
        check(k, "no k/n in %r" % m["Subject"])
        per_mr.setdefault(m["X-Patchbridge-MR"], []).append(
            (int(k.group(1)), int(k.group(2))))
    check(sorted(per_mr) == ["1", "2", "3"],
          "mailed MRs: %s" % sorted(per_mr))
    for mr, parts in per_mr.items():
        n = parts[0][1]
        check(sorted(parts) == [(k, n) for k in range(n + 1)],
              "!%s: mails %s" % (mr, sorted(parts)))


def state_lines(work):
    """The [state] lines: a SQLite file, or a fresh PostgreSQL database."""
    lines = "path = %s/state/state.db\n" % work
    if os.environ.get("PB_TEST_BACKEND") != "postgresql":
        return lines
    pgbed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "pg", "pgbed")
    p = subprocess.run([pgbed, "createdb", os.environ["PB_TEST_PGBED"],
                        "pb_outbound_stop_%d" % os.getpid()],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "pgbed createdb: %s" % p.stderr)
    path = os.path.join(work, "conninfo")
    with open(path, "w") as f:
        f.write(p.stdout)
    os.chmod(path, 0o600)
    return lines + ("backend = postgresql\nconninfo_file = %s\nhost = %s\n"
                    % (path, HOST))


def run(pb, conf, log, *argv):
    p = subprocess.run([pb, "-c", conf] + list(argv), capture_output=True,
                       text=True, timeout=180)
    log.write("$ patchbridge %s -> %d\n%s%s" % (" ".join(argv),
                                                 p.returncode, p.stdout,
                                                 p.stderr))
    log.flush()
    return p


def scenario(pb, work, log):
    out = os.path.join(work, "out")
    os.makedirs(out)
    os.makedirs(os.path.join(work, "state"))
    hold = os.path.join(work, "hold")
    open(hold, "w").close()
    with open(os.path.join(work, "sendmail.sh"), "w") as f:
        f.write(SENDMAIL % {"out": out, "hold": hold})
    os.chmod(os.path.join(work, "sendmail.sh"), 0o755)
    with open(os.path.join(work, "token"), "w") as f:
        f.write("admin-token\n")
    os.chmod(os.path.join(work, "token"), 0o600)
    conf = os.path.join(work, "patchbridge.conf")
    with open(conf, "w") as f:
        f.write(CONFIG % {"url": URL, "dir": work, "list": LIST,
                          "state": state_lines(work)})

    sim("POST", "/_sim/reset", {})
    create_mr("second", "The second topic")  # !2, next to the seed's !1
    sim("POST", "/_sim/time", {"advance_s": 3600})
    create_mr("third", "The third topic")  # !3, an hour later

    log.write("$ patchbridge run --foreground\n")
    log.flush()
    d = subprocess.Popen([pb, "-c", conf, "run", "--foreground"],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        t = time.monotonic()
        while not os.path.exists(os.path.join(out, "held")):
            check(d.poll() is None, "the daemon exited (%s)" % d.returncode)
            check(time.monotonic() - t < 120, "no mail reached sendmail")
            time.sleep(0.05)
        d.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # the flag is set before the mail is let go
        os.unlink(hold)
        rc = d.wait(timeout=60)
    finally:
        if d.poll() is None:
            d.kill()
            d.wait()
    check(rc == 0, "the daemon exited %d" % rc)
    with open(log.name) as f:
        text = f.read()
    check("stopped (signal)" in text, "no clean stop logged")
    first = mails(out)
    check(len(first) == 1, "%d mails before the restart, want 1 (the "
          "stop came during !1's first)" % len(first))

    p = run(pb, conf, log, "run", "--once", "--foreground")
    check(p.returncode == 0, "run --once exited %d" % p.returncode)
    check_mailed_once(mails(out))
    n = len(mails(out))
    p = run(pb, conf, log, "run", "--once", "--foreground")
    check(p.returncode == 0, "run --once again exited %d" % p.returncode)
    check(len(mails(out)) == n, "a second run --once mailed again")
    print("%d mails, every revision once" % n)
    if os.environ.get("PB_TEST_BACKEND") == "postgresql":
        check_copy(work, mails(out))
        check_hosts(pb, conf, log, mails(out))


HOST = "mx-a.example.org"


def check_hosts(pb, conf, log, msgs):
    """On PostgreSQL: `status` shows each host's part, `why` which host
    handed a mail to its MTA."""
    p = run(pb, conf, log, "status")
    check(p.returncode == 0, "status exited %d" % p.returncode)
    want = ("  %s (this host): 0 journaled, 0 applied, %d mails handed to "
            "its MTA;" % (HOST, len(msgs)))
    check("hosts (this one is %s):\n" % HOST in p.stdout and
          want in p.stdout, "status does not show the host's part: %s"
          % p.stdout)
    mid = msgs[0]["Message-ID"].strip().strip("<>")
    p = run(pb, conf, log, "why", mid)
    check(p.returncode == 0, "why exited %d" % p.returncode)
    check("handed over by %s" % HOST in p.stdout,
          "why does not name the host: %s" % p.stdout)
    p = run(pb, conf, log, "why", "--json", mid)
    check(json.loads(p.stdout)["sent"]["sent_by"] == HOST,
          "why --json: no sent_by: %s" % p.stdout)
    print("status and why name the host")


def check_copy(work, msgs):
    """On PostgreSQL: this host's copy of the thread map (the SQLite file
    at [state] path, for the milter) holds every mail the daemon sent."""
    path = os.path.join(work, "state", "state.db")
    check(os.path.exists(path), "no copy of the thread map at %s" % path)
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        have = {bytes(r[0]).decode() if isinstance(r[0], bytes) else r[0]
                for r in db.execute("SELECT message_id FROM thread_map")}
    finally:
        db.close()
    want = {m["Message-ID"].strip().strip("<>") for m in msgs}
    check(want <= have, "mails missing from the copy: %s" %
          sorted(want - have))
    print("this host's copy of the thread map holds all %d" % len(want))


def run_main(story, doc):
    """`story(pb, work, log)` with the arguments PATCHBRIDGE WORKDIR
    (signatures_sim.py runs its own story here too)."""
    if len(sys.argv) != 3:
        print(doc)
        return 2
    if not URL:
        print("PB_FORGESIM_URL is not set (run through run-with-sim.sh)")
        return 1
    pb, work = sys.argv[1], os.path.abspath(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(work, "log"), "w") as log:
        try:
            story(pb, work, log)
        except Fail as e:
            log.flush()
            with open(log.name) as f:
                sys.stderr.write(f.read()[-6000:])
            print("FAIL: %s" % e)
            return 1
    print("1 passed, 0 failed")
    return 0


def main():
    return run_main(scenario, __doc__)


if __name__ == "__main__":
    sys.exit(main())
