#!/usr/bin/python3
"""The fault test of two list hosts sharing one state on PostgreSQL
(hostbed.py): under a steady stream of list replies and new revisions,
host A's daemon and milter are killed with SIGKILL at random moments,
KILLS times, and PostgreSQL is restarted once (immediate: as a crash).

usage: fault_e2e.py --bin BUILD_DIR --work DIR [--kills N] [--seed S]

Run under tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL).  The hosts
run `patchbridge run --foreground` with a short lease (LEASE seconds;
a forge write with its retries and an [smtp] submission fit in it, as
check-config demands: hostbed.short_timeouts) and the shortest poll
interval, so that what takes minutes with the defaults
takes seconds here.

  the stream   a sender, as a subscriber's MTA would, mails a reply every
               REPLY_EVERY seconds to host A and B in turn; when a host
               does not accept it (its milter is dead: Postfix answers
               4xx, milter_default_action = tempfail), it tries the other
               MX, and again after a second until one accepts.  A new
               revision of the MR is pushed every REVISION_EVERY seconds.
  the faults   KILLS times, at a random moment (every third one while A
               waits for its MTA's answer to a mail, the milter a moment
               after the daemon), host A's daemon and milter get SIGKILL; A is down for a moment and started
               again, except every third time: then A stays down until
               host B has taken over every reply A had claimed or
               journaled and every mail A was handing to its MTA, and
               that time is measured and must be within the documented
               bound (docs/DESIGN.md, "Which host does what": the lease,
               plus one inbound pass of INBOUND_SCAN seconds, plus
               SLACK).  Once, PostgreSQL is restarted as after a crash.

  the archive  the list's public-inbox: what the list delivers (both
               hosts' list sinks) of the bridge's mails is fed to it with
               public-inbox-mda within a moment, and public-inbox-httpd
               serves it as the hosts' [inbound] archive_url, so a mail
               the MTA took in the instant its daemon was killed or the
               database went away is found there and not sent again
               (docs/SCALING.md; [outbound] archive_wait ARCHIVE_WAIT).

Then, with every host up, the test waits until all is done and checks:
every reply a host accepted is on the forge exactly once (one note with
its text); every mail of the thread map (every revision's cover letter
and patches) is sent, and each Message-ID is in the list archives (both
hosts' together) exactly once; no reply is dead; the spools are empty.

Exit status: 0 pass, 1 fail, 77 skipped.
"""

import argparse
import collections
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import bedlib  # noqa: E402
import hostbed  # noqa: E402
import inbound_e2e  # noqa: E402
from bedlib import Fail, check, say, sim  # noqa: E402

LEASE = 4  # [state] lease, seconds
INBOUND_SCAN = 5  # the daemon's inbound pass (bridge/cmd/cmd_run.c)
SLACK = 3  # the lease's whole seconds, a busy pass, a loaded machine
REPLY_EVERY = 0.4
EOM_DELAY = 300  # ms the DKIM stand-in holds each mail
REVISION_EVERY = 7.0
ARCHIVE_WAIT = 20  # [outbound] archive_wait: well above the feed's lag
# the time that begins a log line written to a file (util/log.h)
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")
ROB = inbound_e2e.ROB


class FaultPair(hostbed.pair_class(inbound_e2e.Bed)):
    lease = "%ds" % LEASE

    def start_verifier(self, binary, sock):
        """As bedlib's, and each mail takes the MTA EOM_DELAY ms at the
        end of its data (a busy MX): a host handing a mail to its MTA
        holds the mail's claim that long, so a kill can find it
        holding one."""
        self.spawn([binary, "-p", "unix:" + sock, "-A", bedlib.AUTHSERV,
                    "-D", "kernel.example", "-D", "review.example",
                    "-d", str(EOM_DELAY)], "verifier.log")
        self.wait_socket(sock, "the DKIM stand-in")

    def write(self, name, text, mode=0o644):
        if name == "patchbridge.conf":
            # Every wait below the lease: a forge write, a submission.
            text = hostbed.short_timeouts(text, LEASE)
            text = text.replace("[outbound]\n", "[outbound]\narchive_wait"
                                " = %ds\n" % ARCHIVE_WAIT, 1)
        return super().write(name, text, mode)


# Add each file named to the inbox "list" (PublicInbox::V2Writable, what
# public-inbox-mda does for one mail).
IMPORT = """
my $ibx = PublicInbox::Config->new->lookup_name("list") or die "no inbox\\n";
my $w = PublicInbox::V2Writable->new($ibx);
for my $f (@ARGV) {
    open(my $fh, "<", $f) or die "$f: $!\\n";
    my $raw = do { local $/; <$fh> };
    $w->add(PublicInbox::Eml->new(\\$raw));
}
$w->done;
"""


class ListArchive:
    """The list's public-inbox (v2): a thread feeds it what the list
    sinks of both hosts received from the bridge, as the list's own
    delivery to it would; public-inbox-httpd serves it on a free
    loopback port."""

    def __init__(self, bed):
        self.bed = bed
        self.env, self.dir, self.port, self.httpd = bedlib.public_inbox_served(
            bed.work, ORIGINAL_RECIPIENT=bedlib.LIST)
        self.url = "http://127.0.0.1:%d/list" % self.port
        self.fed = set()
        self.lag = 0.0  # the longest from the list's delivery to the inbox
        self.spool = os.path.join(bed.work, "pi", "feed")
        os.makedirs(self.spool, exist_ok=True)
        self.errors = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.feed)

    def start(self):
        self.thread.start()

    def feed(self):
        try:
            while not self.stop.wait(0.2):
                self.feed_once()
        except Exception as e:  # noqa: BLE001 - reported by finish()
            self.errors.append("the archive's feed: %r" % e)

    def feed_once(self):
        batch = []
        for h in self.bed.hosts:
            d = h.env.get("ARCHIVE")
            for sub in ("new", "cur"):
                path = os.path.join(d, sub) if d else None
                if not path or not os.path.isdir(path):
                    continue
                for name in sorted(os.listdir(path)):
                    key = (h.name, name.split(":")[0])
                    if key in self.fed:
                        continue
                    try:
                        with open(os.path.join(path, name), "rb") as f:
                            raw = f.read()
                            since = os.fstat(f.fileno()).st_mtime
                    except FileNotFoundError:
                        continue  # moved to cur/: seen there next time
                    self.fed.add(key)
                    head = raw.split(b"\n\n", 1)[0].replace(
                        b"\nMessage-Id:", b"\nMessage-ID:")
                    if b"\nMessage-ID: <pb." in head:
                        batch.append((raw, since))
        if not batch:
            return
        # One process for the batch: an inbox takes each in a moment, a
        # process a second to start (public-inbox-mda per mail lags).
        files = []
        for k, (raw, _) in enumerate(batch):
            files.append(os.path.join(self.spool, "%d.%d" % (len(self.fed),
                                                              k)))
            with open(files[-1], "wb") as f:
                f.write(raw)
        r = subprocess.run(["perl", "-MPublicInbox::Config",
                            "-MPublicInbox::V2Writable",
                            "-MPublicInbox::Eml", "-e", IMPORT] + files,
                           env=self.env, capture_output=True, timeout=120)
        for f in files:
            os.unlink(f)
        if r.returncode:
            raise Fail("importing into the inbox: %s" % r.stderr[-500:])
        t = time.time()
        self.lag = max([self.lag] + [t - since for _, since in batch])

    def finish(self):
        self.stop.set()
        self.thread.join(timeout=120)
        self.httpd.terminate()
        try:
            self.httpd.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.httpd.kill()
            self.httpd.wait()
        check(not self.errors, "%s" % self.errors)


def proc_of(host, name):
    return next(p for p in reversed(host.procs)
                if name in " ".join(p.args))


class Stream:
    """The replies' sender and the revisions' pusher, each a thread."""

    def __init__(self, bed, patches):
        self.bed = bed
        self.parents = [patches[k] for k in sorted(patches)]
        self.stop = threading.Event()
        self.accepted = {}  # token -> (Message-ID, host)
        self.refused = 0
        self.pushed = 0
        self.errors = []
        self.threads = [threading.Thread(target=self.replies),
                        threading.Thread(target=self.revisions)]

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)
        check(not self.errors, "the stream: %s" % self.errors)

    def replies(self):
        n = 0
        try:
            while not self.stop.is_set():
                n += 1
                token = "FAULT-REPLY-%d:" % n
                parent = self.parents[n % len(self.parents)]
                raw, mid = bedlib.reply(parent, ROB, "%s a comment in the "
                                        "stream.\n" % token)
                first = n % 2
                t = time.monotonic()
                while token not in self.accepted:
                    for k in (first, 1 - first):
                        h = self.bed.hosts[k]
                        try:
                            h.send(raw, "rob@review.example")
                            self.accepted[token] = (mid, h.name)
                            break
                        except Fail:
                            self.refused += 1
                    else:
                        if time.monotonic() - t > 60:
                            raise Fail("no host accepted %s in 60 s" % mid)
                        time.sleep(1)
                self.stop.wait(REPLY_EVERY)
        except Exception as e:  # noqa: BLE001 - reported by finish()
            self.errors.append("replies: %r" % e)

    def revisions(self):
        try:
            while not self.stop.wait(REVISION_EVERY):
                self.pushed += 1
                k = self.pushed
                commits = [inbound_e2e.commit(
                    "counter: count by a step", "Let callers choose the "
                    "step (take %d)." % k,
                    {"src/counter.c": "#include \"counter.h\"\n\nint "
                     "count(int n, int step)\n{\n\treturn n + step + %d;"
                     "\n}\n" % k})] + inbound_e2e.SERIES[1:]
                made = sim("POST", "/_sim/projects/1/commits",
                           {"branch": "step-v%d" % (k + 1),
                            "start": "main", "commits": commits})
                sim("POST", "/_sim/projects/1/merge_requests/1/push",
                    {"sha": made["head"]})
        except Exception as e:  # noqa: BLE001 - reported by finish()
            self.errors.append("revisions: %r" % e)


def held_by(bed, host):
    """What host holds or journaled and has not finished: replies
    (claimed by it, or spooled by it and not claimed by another) and
    mails it claimed whose claim has not run out."""
    q = ("SELECT 'reply', encode(message_id, 'escape') FROM inbound "
         "WHERE (state = 'applying' AND claimed_by = convert_to('{h}', "
         "'UTF8')) OR (state IN ('received', 'failed') AND spooled_by = "
         "convert_to('{h}', 'UTF8')) "
         "UNION ALL SELECT 'mail', encode(message_id, 'escape') FROM "
         "outmail WHERE claimed_by = convert_to('{h}', 'UTF8') AND "
         "lease_until > extract(epoch FROM now())::bigint").format(
             h=host.name)
    return {tuple(r) for r in bed.pg.query(q)}


def handing(bed, host):
    """Does host wait for its MTA's answer to a mail it handed over?"""
    return bed.pg.query(
        "SELECT count(*) FROM outmail WHERE claimed_by = convert_to('{h}', "
        "'UTF8') AND handed != 0 AND lease_until > extract(epoch FROM "
        "now())::bigint".format(h=host.name))[0][0] != "0"


def still_held(bed, host, items):
    """Of items, those host still holds (not finished, not taken)."""
    if not items:
        return set()
    return items & held_by(bed, host)


def kill_host(host, gap=0.0):
    """SIGKILL to host's daemon and, gap seconds later, its milter."""
    host.kill9(proc_of(host, "run --foreground"))
    if gap:
        time.sleep(gap)
    host.kill9(proc_of(host, "patchbridge-milter"))


def start_host(bed, host):
    sock = os.path.join(host.sockets(), "patchbridge.sock")
    if os.path.exists(sock):
        os.unlink(sock)  # left by the killed milter
    host.start_milter(bed.exe("milter", "patchbridge-milter"), sock)
    host.daemon()


def cut_short(bed):
    """The mails an MTA accepted in the instant before their sender was
    killed (the daemon logged the acceptance and wrote nothing more
    before its next start), or before the database went away (the daemon
    logged that it could not record it).  SMTP cannot tell whether such
    a mail was taken: the host that takes it over asks the list archive
    first (docs/SCALING.md).  Named in the diagnostics of a mail that
    is not in the archives once."""
    cut = set()
    for h in bed.hosts:
        with open(os.path.join(h.work, "daemon.log"), encoding="utf-8",
                  errors="replace") as f:
            # a line written to a file begins with its time
            # (util/log.h): left out here
            lines = [STAMP.sub("", l) for l in f.read().splitlines()]
            lines = [l for l in lines if l.startswith("patchbridge: ")]
        for i, line in enumerate(lines[:-1]):
            m = re.search(r"submit: message-id=<([^>]+)>.*"
                          r"result=accepted", line)
            if m and lines[i + 1] == "patchbridge: notice: started":
                cut.add(m.group(1))
        # the database went away (its restart) in that instant
        cut.update(re.findall(r"mail <([^>]+)> accepted \(queue id \S+\) "
                              r"but not recorded as sent",
                              "\n".join(lines)))
    return cut


def unseen_copies(bed):
    """The Message-IDs of archived copies that the MTA queued under an id
    no daemon logged: the daemon was killed after it had sent the whole
    mail, before the MTA's 250 reached it (the MTA's end of data - here
    the DKIM stand-in's EOM_DELAY - is that window)."""
    logged = set()
    for h in bed.hosts:
        with open(os.path.join(h.work, "daemon.log"), encoding="utf-8",
                  errors="replace") as f:
            logged.update(re.findall(r"result=accepted queue_id=(\w+)",
                                     f.read()))
    unseen = set()
    for m in bed.archive():
        if m.get("X-Patchbridge-Origin") is None and \
                not (m["Message-ID"] or "").startswith("<pb."):
            continue
        qid = re.search(r"with E?SMTP id (\w+)", str(m.get("Received")))
        if qid and qid.group(1) not in logged:
            unseen.add(m["Message-ID"].strip().strip("<>"))
    return unseen


def converge(bed, stream, timeout=120):
    """Wait until every accepted reply is applied and every mail sent;
    the forge's MR then."""
    timeout = bedlib.bound(timeout)
    t = time.monotonic()
    while True:
        open_in = bed.pg.query("SELECT count(*) FROM inbound WHERE state "
                               "NOT IN (convert_to('applied', 'UTF8'), "
                               "convert_to('ignored', 'UTF8'), "
                               "convert_to('dead', 'UTF8'))")[0][0]
        queued = bed.pg.query("SELECT count(*) FROM outmail")[0][0]
        pending = bed.pg.query("SELECT count(*) FROM thread_map WHERE "
                               "state = convert_to('pending', 'UTF8')")[0][0]
        spooled = sum(len(os.listdir(os.path.join(h.work, "spool", a)))
                      for h in bed.hosts for a in ("new", "cur")
                      if os.path.isdir(os.path.join(h.work, "spool", a)))
        mr = inbound_e2e.the_mr()
        found = sum(1 for tok in stream.accepted
                    if inbound_e2e.notes_with(mr, tok))
        if found == len(stream.accepted) and open_in == "0" and \
                queued == "0" and pending == "0" and spooled == 0:
            return mr
        if time.monotonic() - t > timeout:
            raise Fail("after %d s: %d of %d replies on the forge, %s "
                       "journal rows open, %s mails queued, %s pending, "
                       "%d spool records" % (timeout, found,
                                             len(stream.accepted), open_in,
                                             queued, pending, spooled))
        time.sleep(1)


def scenario(bed, kills, rng):
    arch = ListArchive(bed)
    try:
        run(bed, kills, rng, arch)
    finally:
        arch.finish()


def run(bed, kills, rng, arch):
    arch.start()  # feeds each list sink from its start
    patches, _ = inbound_e2e.start(bed, "retry_base = 1s\nretry_max = 2s\n"
                                   "max_attempts = 1000\narchive_url = %s\n"
                                   % arch.url, forge_retries=1)
    a, b = bed.hosts
    # GitLab's note creation takes a moment (here 300 ms after the
    # write): a host holds its claim that long, so a kill can find it
    # holding one.
    sim("POST", "/_sim/faults", {"kind": "latency", "ms": 300,
                                 "method": "POST",
                                 "path": "/(discussions|notes)$"})
    for h in bed.hosts:
        h.daemon()
    stream = Stream(bed, patches)
    stream.start()
    say("the stream runs: a reply every %.1f s to A and B in turn, a "
        "revision every %.0f s; lease %d s" % (REPLY_EVERY, REVISION_EVERY,
                                              LEASE))
    bound = LEASE + INBOUND_SCAN + SLACK
    takeovers = []
    pg_restart_at = kills // 2
    for i in range(kills):
        stream.stop.wait(rng.uniform(1.0, 4.0))
        check(b.daemon_proc.poll() is None, "host B's daemon exited")
        long_down = i % 3 == 2
        if long_down:
            # A moment when A holds work, within a few seconds: A's
            # daemon is stopped (SIGSTOP) when it seems to, so that what
            # it holds cannot finish between the look and the kill; it
            # goes on (SIGCONT) if the look found nothing after all.
            daemon = proc_of(a, "run --foreground")
            t = time.monotonic()
            while time.monotonic() - t < 8:
                if held_by(bed, a):
                    os.killpg(daemon.pid, signal.SIGSTOP)
                    if held_by(bed, a):
                        break
                    os.killpg(daemon.pid, signal.SIGCONT)
                time.sleep(0.05)
        gap = 0.0
        if i % 3 == 1:
            # A moment when A's daemon waits for its MTA's answer to a
            # mail; the milter dies after the MTA is done with it, so
            # the MTA takes the mail as the daemon dies, and the list
            # archive decides.
            t = time.monotonic()
            while not handing(bed, a) and time.monotonic() - t < 6:
                time.sleep(0.02)
            gap = EOM_DELAY / 1000.0 + 0.5
        held = held_by(bed, a)
        t_kill = time.monotonic()
        kill_host(a, gap)
        say("kill %d: SIGKILL to A's daemon and milter; A held %d "
            "replies, %d mails" % (i + 1, sum(1 for k, _ in held if
                                              k == "reply"),
                                   sum(1 for k, _ in held if k == "mail")))
        if long_down:
            while True:
                left = still_held(bed, a, held)
                if not left:
                    break
                check(time.monotonic() - t_kill < bound + 10,
                      "B has not taken over %s %.0f s after the kill" %
                      (sorted(left), time.monotonic() - t_kill))
                time.sleep(0.1)
            took = time.monotonic() - t_kill
            if held:
                takeovers.append(took)
            say("kill %d: A stays down; B took over its %d items in %.1f s "
                "(bound %d s)" % (i + 1, len(held), took, bound))
        else:
            time.sleep(rng.uniform(0.2, 2.0))
        start_host(bed, a)
        if i == pg_restart_at:
            say("PostgreSQL: restart immediate (as after a crash)")
            t = time.monotonic()
            bed.pg.restart("immediate")
            say("PostgreSQL back after %.1f s" % (time.monotonic() - t))
    stream.finish()
    say("the stream stopped: %d replies accepted (%d refusals met), %d "
        "revisions pushed" % (len(stream.accepted), stream.refused,
                              stream.pushed))

    mr = converge(bed, stream)
    say("all done: every reply applied, every mail sent")
    time.sleep(INBOUND_SCAN + 1)  # one more pass of each daemon
    mr = inbound_e2e.the_mr()
    twice = [tok for tok in stream.accepted
             if len(inbound_e2e.notes_with(mr, tok)) != 1]
    check(not twice, "replies not on the forge exactly once: %s" %
          [(tok, len(inbound_e2e.notes_with(mr, tok))) for tok in twice])
    dead = bed.pg.query("SELECT count(*) FROM inbound WHERE state = "
                        "convert_to('dead', 'UTF8')")[0][0]
    check(dead == "0", "%s replies dead" % dead)

    sent = bed.pg.query("SELECT encode(message_id, 'escape'), "
                        "convert_from(kind, 'UTF8'), revision FROM "
                        "thread_map")
    archived = collections.Counter(
        m["Message-ID"].strip().strip("<>") for m in bed.archive()
        if m["Message-ID"])
    revisions = sorted({int(r[2]) for r in sent if r[2]})
    say("the list archive got each mail at most %.1f s after the list "
        "(archive_wait %d s)" % (arch.lag, ARCHIVE_WAIT))
    cut = cut_short(bed) | unseen_copies(bed)
    wrong = [(mid, kind, rev, archived[mid],
              "taken by the MTA as its daemon died" if mid in cut else "")
             for mid, kind, rev in sent if archived[mid] != 1]
    check(not wrong, "mails of the thread map not in the archives once: "
          "%s%s" % (wrong[:20], "" if arch.lag < ARCHIVE_WAIT else
                    " (the test's archive lagged %.1f s behind the list, "
                    "more than archive_wait)" % arch.lag))
    logs = "".join(open(os.path.join(h.work, "daemon.log"), encoding="utf-8",
                        errors="replace").read() for h in bed.hosts)
    say("mails whose 250 was not recorded: %d found in the list archive "
        "and not sent again, %d recorded when the database was back, %d "
        "sent again after archive_wait (the MTA had not taken them)" %
        (logs.count("found in the list archive: recorded"),
         logs.count("the MTA's acceptance is recorded now"),
         len(re.findall(r"is not in the list archive \d+s after", logs))))
    check(len(revisions) >= 2, "only revisions %s were mailed" % revisions)
    heads = bed.pg.query("SELECT encode(head_sha, 'escape') FROM revisions "
                         "ORDER BY revision DESC LIMIT 1")
    head = sim("GET", "/api/v4/projects/1/merge_requests/1")["sha"]
    check(heads and heads[0][0] == head,
          "the last pushed head is not mailed: %s" % heads)
    say("revisions mailed: %s; %d mails, each Message-ID once in the "
        "archives" % (revisions, len(sent)))
    check(takeovers, "no takeover was measured (A held nothing when "
          "killed)")
    say("takeover by B: %s s (bound %d s: lease %d + pass %d + %d)" %
        (", ".join("%.1f" % t for t in takeovers), bound, LEASE,
         INBOUND_SCAN, SLACK))
    check(max(takeovers) <= bound, "a takeover took %.1f s, over %d s" %
          (max(takeovers), bound))
    for h in bed.hosts:
        h.daemon_proc.send_signal(signal.SIGTERM)
        check(h.daemon_proc.wait(timeout=30) == 0, "host %s's daemon did "
              "not stop cleanly" % h.name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the build directory")
    ap.add_argument("--work", required=True)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    args.patchbridge = os.path.join(os.path.abspath(args.bin), "bridge",
                                    "patchbridge")
    rc = hostbed.skip_status()
    if rc is not None:
        return rc
    for exe in (("milter", "patchbridge-milter"),
                ("tests", "postfix", "test_milter")):
        if not os.access(os.path.join(args.bin, *exe), os.X_OK):
            print("e2e: SKIP: %s is not built (libmilter)" % "/".join(exe))
            return 77
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    say("random seed %d (--seed %d repeats this run's moments)" %
        (seed, seed))
    rng = random.Random(seed)
    bed = FaultPair(args, "faults")
    try:
        bed.pair_init()
    except Fail as e:
        say("FAIL: %s" % e)
        bed.stop()
        return 1
    return bedlib.run_scenario(bed, lambda b: scenario(b, args.kills, rng))


if __name__ == "__main__":
    sys.exit(main())
