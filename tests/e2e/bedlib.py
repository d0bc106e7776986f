"""The test bed of the end-to-end tests (inbound_e2e.py, outbound_e2e.py,
forgemail_e2e.py) and of scripts/demo.py: the GitLab simulator's client,
a private Postfix (tests/postfix/pfbed) as the list server with its
archive, the milters in front of it, patchbridge run on a configuration,
and replies as a mail client writes them.

Everything raises Fail when a step does not go as it must.
"""

import email
import email.policy
import email.utils
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PFBED = os.path.join(HERE, "..", "postfix", "pfbed")
LIST = "patches@lists.example.test"
AUTHSERV = "lists.example.test"
T0 = time.monotonic()
# Every bound on a wait is multiplied by PB_TEST_SLOWDOWN (default 1; 4
# on a machine under heavy load): the waits wait on events (a file, a
# log line, a counter), and the bound only says when to give up
# (HACKING.md, "Timing in tests").
SLOWDOWN = max(1.0, float(os.environ.get("PB_TEST_SLOWDOWN") or 1))


def bound(seconds):
    """seconds, scaled by PB_TEST_SLOWDOWN."""
    return seconds * SLOWDOWN


def wait_for(cond, seconds, what, every=0.1):
    """cond()'s first true value, polled every `every` seconds for at
    most bound(seconds); Fail naming what otherwise."""
    deadline = time.monotonic() + bound(seconds)
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise Fail("%s: not after %.0f s" % (what, bound(seconds)))
        time.sleep(every)


def say(msg):
    print("e2e: [%5.1fs] %s" % (time.monotonic() - T0, msg), flush=True)


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def skip_status():
    """None when the tests can run here; else, having said why, the exit
    status: 77 (skipped) without root or Postfix, 1 outside
    tests/forgesim/run-with-sim.sh."""
    if os.geteuid() != 0:
        print("e2e: SKIP: needs root (private Postfix)")
        return 77
    if not shutil.which("postfix", path="/usr/sbin:/usr/bin") or \
            not os.path.exists("/usr/sbin/sendmail"):
        print("e2e: SKIP: postfix is not installed")
        return 77
    if "PB_FORGESIM_URL" not in os.environ:
        print("e2e: run me under tests/forgesim/run-with-sim.sh")
        return 1
    return None


def skip_milters(bindir, who):
    """skip_status(), then: None when the build directory bindir has
    patchbridge-milter and the DKIM stand-in; else, having said which
    is missing (who: the program's name), 77."""
    rc = skip_status()
    if rc is not None:
        return rc
    for exe in (("milter", "patchbridge-milter"),
                ("tests", "postfix", "test_milter")):
        if not os.access(os.path.join(bindir, *exe), os.X_OK):
            print("%s: SKIP: %s is not built (libmilter)" %
                  (who, "/".join(exe)))
            return 77
    return None


def project_clone(work, env):
    """A clone of the simulator's group/project in work; a function that
    runs git there with env and returns its output."""
    subprocess.run(["git", "clone", "-q", os.environ["PB_FORGESIM_URL"] +
                    "/group/project.git", work], env=env, check=True)

    def git(*args):
        return subprocess.run(["git", "-C", work] + list(args), env=env,
                              check=True, capture_output=True,
                              text=True).stdout
    return git


# --- the simulator -------------------------------------------------------

def sim(method, path, body=None, token="bridge-token", ok=(200, 201, 202),
        timeout=30):
    """A request to the simulator: its control API (/_sim/...) or GitLab's
    (/api/v4/..., as the user of token).  The answer's JSON."""
    url = os.environ["PB_FORGESIM_URL"] + path
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if path.startswith("/api/"):
        req.add_header("PRIVATE-TOKEN", token)
    try:
        with urllib.request.urlopen(req, timeout=bound(timeout)) as r:
            status, text = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read()
    if status not in ok:
        raise Fail("%s %s: %d %s" % (method, path, status, text[:300]))
    return json.loads(text) if text else None


def the_mr(iid=1):
    """MR iid of the simulator's first project, as /_sim/state has it."""
    state = sim("GET", "/_sim/state")
    proj = next(p for p in state["projects"] if p["id"] == 1)
    return next(m for m in proj["merge_requests"] if m["iid"] == iid)


def free_port(addr="127.0.0.1"):
    with socket.socket() as so:
        so.bind((addr, 0))
        return so.getsockname()[1]


def read_maildir(d):
    """The mails of the Maildir d (new/ and cur/, none when it is not
    there), each with its bytes as .raw."""
    mails = []
    for sub in ("new", "cur"):
        path = os.path.join(d, sub) if d else None
        if not path or not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            with open(os.path.join(path, name), "rb") as f:
                raw = f.read()
            m = email.message_from_bytes(raw, policy=email.policy.default)
            m.raw = raw
            mails.append(m)
    return mails


# --- the list server and the bridge ----------------------------------------

class Bed:
    """A work directory (emptied first unless fresh is false) with the
    list server (pfbed instance pf; its variables in env once started)
    on the loopback address addr, patchbridge's configuration cfg and log,
    and the processes started."""

    addr = "127.0.0.1"

    def __init__(self, work, patchbridge, fresh=True):
        self.work = os.path.abspath(work)
        if fresh:
            shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work, exist_ok=True)
        os.chmod(self.work, 0o755)
        self.patchbridge = patchbridge
        self.pf = os.path.join(self.work, "list-server")
        self.cfg = os.path.join(self.work, "patchbridge.conf")
        self.log = os.path.join(self.work, "patchbridge.log")
        self.port = None
        self.env = {}
        self.procs = []
        self.pf_started = False

    def pb_run(self, argv, timeout=300):
        """patchbridge -c cfg ARGV, its stderr appended to the log."""
        with open(self.log, "a", encoding="utf-8") as log:
            log.write("\n$ patchbridge %s\n" % " ".join(argv))
            log.flush()
            return subprocess.run([self.patchbridge, "-c", self.cfg] +
                                  list(argv), stdout=subprocess.PIPE,
                                  stderr=log, text=True,
                                  timeout=bound(timeout))

    def pb(self, *argv, ok=(0,), timeout=300):
        """pb_run, which must exit with a status in ok; its output."""
        out = self.pb_run(argv, timeout)
        if out.returncode not in ok:
            raise Fail("patchbridge %s exited %d (log: %s)" %
                       (" ".join(argv), out.returncode, self.log))
        return out.stdout

    def state_cursor(self, name, value=None):
        """The state's cursor name (None when there is none); with
        value, set it first (a scenario that makes time pass).  This
        bed's SQLite file; a pair's PostgreSQL."""
        import sqlite3
        db = sqlite3.connect(os.path.join(self.work, "state", "state.db"))
        try:
            if value is not None:
                db.execute("UPDATE cursors SET value = ? WHERE name = ?",
                           (value, name))
                db.commit()
            row = db.execute("SELECT value FROM cursors WHERE name = ?",
                             (name,)).fetchone()
            return row[0] if row else None
        finally:
            db.close()

    def local_paths(self, rel):
        """The path rel below each host's directory: a file every host
        keeps its own of (the git mirrors, the spool).  One here."""
        return [os.path.join(self.work, rel)]

    def shared_path(self, rel):
        """A file every host of the list sees alike (an MTA hook's
        control files: "the MTA" of a story is the list's, whichever
        host hands it the mail).  One host: below its directory."""
        return os.path.join(self.work, rel)

    def state_server(self):
        """The directory of the PostgreSQL server (tests/pg/pgbed) that
        holds the bridge's state, when the bed has one; None: each
        story brings its own."""
        return None

    def command_cfg(self):
        """The configuration for a patchbridge command a scenario runs
        itself (not through pb()): this bed's (a pair: host A's)."""
        return self.cfg

    def write(self, name, text, mode=0o644):
        path = os.path.join(self.work, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def spawn(self, argv, logname):
        """Start argv with its output appended to logname; stop() ends it."""
        log = open(os.path.join(self.work, logname), "a", encoding="utf-8")
        p = subprocess.Popen(argv, stdout=log, stderr=log,
                             start_new_session=True)
        log.close()
        self.procs.append(p)
        return p

    def wait_socket(self, path, what):
        wait_for(lambda: os.path.exists(path), 10,
                 "%s did not create %s" % (what, path), every=0.05)

    def sockets(self):
        """The milters' socket directory, as contrib/postfix/README.md
        sets it up: Postfix reaches the sockets through its group."""
        path = os.path.join(self.work, "sockets")
        os.makedirs(path, exist_ok=True)
        shutil.chown(path, group="postfix")
        os.chmod(path, 0o2750)
        return path

    def start_verifier(self, binary, sock):
        """tests/postfix/test_milter at sock, standing in for
        OpenDKIM/OpenDMARC: mail from kernel.example and review.example
        verifies, nothing else does."""
        self.spawn([binary, "-p", "unix:" + sock, "-A", AUTHSERV,
                    "-D", "kernel.example", "-D", "review.example"],
                   "verifier.log")
        self.wait_socket(sock, "the DKIM stand-in")

    def start_milter(self, binary, sock):
        """patchbridge-milter on cfg, whose socket is sock."""
        self.spawn([binary, "-c", self.cfg, "-f"], "milter.log")
        self.wait_socket(sock, "patchbridge-milter")

    def start_postfix(self, *options, mailboxes=()):
        """pfbed start with options, on addr; mail not for the list is
        discarded, but for the addresses of mailboxes: each has a Maildir
        of its own (mailbox()), as a subscriber's mailbox elsewhere."""
        self.pf_started = True
        options = list(options)
        if "--address" not in options:
            options += ["--address", self.addr]
        if mailboxes:
            # virtual(8): the list's domain and each mailbox's domain,
            # an address to its own Maildir first, else the archive
            domains = sorted({a.split("@")[1] for a in mailboxes})
            options += ["--set", "virtual_mailbox_domains = %s %s" % (
                        AUTHSERV, " ".join(domains)),
                        "--set", "virtual_mailbox_maps = inline:{ %s }, "
                        "static:inbox/" % " ".join(
                            "{%s=box-%s/}" % (a, a.split("@")[0])
                            for a in mailboxes)]
        out = subprocess.run([PFBED, "start", self.pf] + options +
                             ["--set", "default_transport = discard:"],
                             capture_output=True, text=True,
                             timeout=bound(60))
        check(out.returncode == 0, "pfbed start: " + out.stderr[-2000:])
        env = subprocess.run([PFBED, "env", self.pf], capture_output=True,
                             text=True, check=True).stdout
        for line in env.splitlines():
            k, _, v = line.partition("=")
            self.env[k] = v.strip("'\"")
        self.port = int(self.env["PORT"])

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=bound(15))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.pf_started:
            subprocess.run([PFBED, "stop", self.pf], capture_output=True,
                           timeout=bound(60))

    def mailbox(self, address):
        """The mails delivered to address's own Maildir (start_postfix()
        mailboxes), as archive() reads the list's."""
        return read_maildir(os.path.join(
            os.path.dirname(self.env.get("ARCHIVE", "")),
            "box-" + address.split("@")[0]))

    def archive(self):
        """The list archive's mails (each with its bytes as .raw), sorted
        by Date and Subject."""
        mails = read_maildir(self.env.get("ARCHIVE"))
        mails.sort(key=lambda m: (m.get("Date", ""), m.get("Subject", "")))
        return mails

    def wait_mail(self, n, timeout=120):
        # pfbed scales the bound by PB_TEST_SLOWDOWN itself
        out = subprocess.run([PFBED, "wait-mail", self.pf, str(n),
                              str(timeout)], capture_output=True, text=True)
        if out.returncode:
            raise Fail("the list archive did not reach %d mails: %s" %
                       (n, out.stderr[-1500:]))

    def settle(self):
        """Wait until Postfix has nothing in flight."""
        def empty():
            out = subprocess.run(["postqueue", "-c", self.env["CONFIG"],
                                  "-j"], capture_output=True, text=True)
            return out.stdout.strip() == ""
        wait_for(empty, 30, "the Postfix queue does not drain")

    def send(self, raw, sender):
        """Submit raw to the list over SMTP, as a subscriber's client."""
        path = self.write("outgoing.eml", raw)
        out = subprocess.run([PFBED, "send", self.pf, path, "--from",
                              sender, "--to", LIST], capture_output=True,
                             text=True, timeout=bound(60))
        if out.returncode:
            raise Fail("SMTP submission failed: %s %s" %
                       (out.stdout, out.stderr[-500:]))

    def log_tail(self, n=6000):
        text = ""
        for name in ("patchbridge.log", "daemon.log", "milter.log"):
            path = os.path.join(self.work, name)
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    text += "--- %s ---\n%s\n" % (name, f.read()[-n:])
        return text


def write_config(bed, msock, owners, outbound="", inbound="",
                 forge_retries=2):
    """bed's configuration for the simulator's group/project as the
    bridge's account (token bridge-token), mailing through the list
    server on bed.addr, port bed.env["PORT"], its milter on msock,
    owners the text of owners.yaml; outbound and inbound: more lines for
    those sections; forge_retries: [forge] max_retries."""
    owners = bed.write("owners.yaml", owners)
    token = bed.write("gitlab-token", "bridge-token\n", 0o600)
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
max_retries = {retries}
retry_max = 2s
[smtp]
url = smtp://{addr}:{port}
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
{outbound}[inbound]
owners_file = {owners}
approval_policy = owners
{inbound}[project "group/project"]
""".format(list=LIST, url=os.environ["PB_FORGESIM_URL"], token=token,
           addr=bed.addr, port=bed.env["PORT"], sock=msock, authserv=AUTHSERV,
           work=bed.work, owners=owners, outbound=outbound,
           inbound=inbound, retries=forge_retries))


def run_scenario(bed, scenario):
    """scenario(bed), then stop what it started; the exit status."""
    try:
        scenario(bed)
    except (Fail, subprocess.TimeoutExpired, StopIteration) as e:
        say("FAIL: %s" % (e or type(e).__name__))
        print(bed.log_tail())
        return 1
    finally:
        bed.stop()
    say("PASS")
    return 0


# --- mail -----------------------------------------------------------------

SEQ = [0]


def reply(parent, frm, body):
    """A plain-text reply to a mail of the archive, as mutt would make it:
    (the mail, its Message-ID)."""
    subject = parent["Subject"]
    if not subject.lower().startswith("re:"):
        subject = "Re: " + subject
    refs = (parent.get("References", "") + " " +
            parent["Message-ID"]).strip()
    SEQ[0] += 1
    mid = "reply.%d.%d.%d@mail.example" % (os.getpid(), SEQ[0],
                                            time.monotonic_ns())
    raw = ("From: {frm}\nTo: {lst}\nSubject: {subj}\n"
           "Date: {date}\nMessage-ID: <{mid}>\n"
           "In-Reply-To: {irt}\nReferences: {refs}\n"
           "MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n"
           "\n{body}").format(
               frm=frm, lst=LIST, subj=subject,
               date=email.utils.formatdate(localtime=False), mid=mid,
               irt=parent["Message-ID"], refs=refs, body=body)
    return raw, mid


def quote(text):
    return "".join("> " + line + "\n" if line else ">\n"
                   for line in text.splitlines())


def patch_body(msg):
    return msg.get_body(preferencelist=("plain",)).get_content()


# --- public-inbox ---------------------------------------------------------

def public_inbox(work, name, inbox, script, *args):
    """Import inbox (written by `patchbridge export --public-inbox`) as
    public-inbox name, with its configuration below work, and run the
    Perl script with args against it; the script's output."""
    env = dict(os.environ, HOME=os.path.join(work, "pihome"),
               PI_CONFIG=os.path.join(work, "pi-config"))
    os.makedirs(env["HOME"], exist_ok=True)
    for argv in (["public-inbox-init", "-V2", name, inbox,
                  "http://archive.example.test/" + name, LIST],
                 ["public-inbox-index", inbox]):
        r = subprocess.run(argv, env=env, capture_output=True, text=True,
                           timeout=bound(120))
        check(r.returncode == 0, "%s: %s" % (argv[0], r.stderr[-800:]))
    r = subprocess.run(["perl", "-MPublicInbox::Config", "-e", script] +
                       list(args), env=env, capture_output=True, text=True,
                       timeout=bound(120))
    check(r.returncode == 0, "querying the inbox: " + r.stderr[-800:])
    return r.stdout


def public_inbox_served(work, **env):
    """A list's public-inbox (v2) below work, made with public-inbox-init
    (no spam check) and served by public-inbox-httpd on a free loopback
    port: (environment for its tools, inbox directory, port, httpd's
    Popen), once the port answers.  env: more environment variables."""
    pienv = dict(os.environ, HOME=os.path.join(work, "pihome"),
                 PI_CONFIG=os.path.join(work, "pi-config"), **env)
    os.makedirs(pienv["HOME"], exist_ok=True)
    inbox = os.path.join(work, "pi", "list")
    port = free_port()
    for argv in (["public-inbox-init", "-V2", "list", inbox,
                  "http://127.0.0.1:%d/list" % port, LIST],
                 ["git", "config", "-f", pienv["PI_CONFIG"],
                  "publicinboxmda.spamcheck", "none"]):
        r = subprocess.run(argv, env=pienv, capture_output=True, text=True,
                           timeout=bound(120))
        check(r.returncode == 0, "%s: %s" % (argv[0], r.stderr[-800:]))
    with open(os.path.join(work, "pi-httpd.log"), "a") as log:
        p = subprocess.Popen(["public-inbox-httpd", "-W0", "-l",
                              "http://127.0.0.1:%d" % port], env=pienv,
                             stdout=log, stderr=log, start_new_session=True)
    def listens():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            check(p.poll() is None, "public-inbox-httpd died")
            return False
    wait_for(listens, 10, "public-inbox-httpd does not listen", every=0.05)
    return pienv, inbox, port, p
