"""Two list hosts sharing one bridge state on PostgreSQL, for the
multi-host tests (multihost_e2e.py, fault_e2e.py) and the benchmark
(tests/bench/hosts_bench.py).

Each host is what a real MX host of the list runs: its own private
Postfix (tests/postfix/pfbed --address: on its own loopback address,
127.0.0.2 for host A and 127.0.0.3 for host B, with its own queue and list
archive), its own DKIM/DMARC stand-in and patchbridge-milter with its own
spool (reading the thread map from the shared PostgreSQL, else from this
host's copy), and its own `patchbridge run` with its own configuration
([state] host names it), which submits its mail to its own host's
Postfix at that host's address.  The senders reach each host at its
address, from it.  One PostgreSQL server (tests/pg/pgbed), started by
the test on 127.0.0.1, holds the state of both; the daemons reach it
over TCP with a password, as hosts on a network would.  The GitLab
simulator is the forge.  (Neither libpq nor the forge client has a
setting for the source address, so those two connections leave from
127.0.0.1 on both hosts.)

On Linux every address of 127.0.0.0/8 is local without configuration
(the kernel's route "local 127.0.0.0/8 dev lo"); where a host's address
cannot be bound the bed fails at once, saying so.

Pair makes two hosts look like the one host of the single-host test bed
(tests/e2e/bedlib.py), so that the end-to-end scenarios of
tests/e2e/inbound_e2e.py and outbound_e2e.py run unchanged on it: what a
scenario writes, starts or asks is done on both hosts (paths, address
and port made each host's own), `patchbridge run --once` runs on both,
the subscribers' replies go to the hosts in turn, and the list archive
is what both hosts delivered.
"""

import os
import re
import shutil
import socket
import signal
import subprocess
import tempfile
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import bedlib  # noqa: E402
from bedlib import Fail, check, say  # noqa: E402

PGBED = os.path.join(HERE, "..", "pg", "pgbed")
DATABASE = "patchbridge"


def skip_status():
    """bedlib.skip_status(), and 77 without PostgreSQL's server."""
    rc = bedlib.skip_status()
    if rc is not None:
        return rc
    if subprocess.run([PGBED, "conninfo", "/nonexistent"],
                      capture_output=True).returncode == 77:
        print("e2e: SKIP: no PostgreSQL server (the Debian package "
              "postgresql: scripts/install-deps.sh)")
        return 77
    return None


# --- PostgreSQL ---------------------------------------------------------------

class Postgres:
    """A private PostgreSQL server (tests/pg/pgbed) in work/pg, with the
    database the hosts share.  PGBED_TEMPLATE, when set, saves initdb."""

    def __init__(self, work):
        self.dir = os.path.join(work, "pg")
        os.makedirs(self.dir, exist_ok=True)
        self.started = False
        self.conninfo = None  # over TCP, with the password
        self.local = None  # over the unix socket, for psql

    def pgbed(self, *argv, timeout=120):
        out = subprocess.run([PGBED] + list(argv), capture_output=True,
                             text=True, timeout=timeout)
        check(out.returncode == 0, "pgbed %s: %s" % (argv[0],
                                                     out.stderr[-1500:]))
        return out.stdout.strip()

    def start(self):
        self.started = True
        self.pgbed("start", self.dir)
        self.local = self.pgbed("createdb", self.dir, DATABASE)
        self.conninfo = self.pgbed("conninfo-tcp", self.dir, DATABASE)
        say("PostgreSQL on loopback: %s" %
            self.conninfo.split(" password=")[0])

    def restart(self, mode="immediate"):
        """Stop (immediate: as a crash) and start on the same port."""
        self.pgbed("restart", self.dir, mode)

    def query(self, sql):
        """Rows of sql, each a list of text fields (bytea as text)."""
        out = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t",
                              "-v", "ON_ERROR_STOP=1", self.local, "-c",
                              sql], capture_output=True, text=True,
                             timeout=60, env=dict(os.environ,
                                                  PGCONNECT_TIMEOUT="5"))
        check(out.returncode == 0, "psql: %s" % out.stderr[-800:])
        return [line.split("\t") for line in out.stdout.splitlines()
                if line]

    def stop(self):
        if self.started:
            subprocess.run([PGBED, "stop", self.dir], capture_output=True,
                           timeout=120)
            self.started = False


def text(col):
    """A bytea column as psql prints it (\\x...), as text."""
    if col.startswith("\\x"):
        return bytes.fromhex(col[2:]).decode("utf-8", "replace")
    return col


# --- a host -------------------------------------------------------------------

def bindable(addr):
    """A free port of addr, held: (port, the bound socket), closed just
    before Postfix binds it, so that another test's free port (bind to
    port 0) cannot be this one meanwhile; a Fail saying why when addr
    cannot be bound."""
    try:
        so = socket.socket()
        so.bind((addr, 0))
        return so.getsockname()[1], so
    except OSError as e:
        raise Fail("cannot bind to %s (%s): the hosts of the bed need their "
                   "own loopback addresses (on Linux all of 127.0.0.0/8 is "
                   "on lo; elsewhere add %s to the loopback interface)" %
                   (addr, e.strerror or e, addr)) from e


class Host(bedlib.Bed):
    """One list host: bedlib.Bed in work/NAME on its own loopback address
    (ADDRESSES) with its own Postfix port (chosen now), milters, spool and
    daemon.  name is its [state] host."""

    def __init__(self, work, name, patchbridge):
        super().__init__(os.path.join(work, name.split(".")[0]),
                         patchbridge)
        self.name = name
        self.short = name.split(".")[0]
        self.addr = ADDRESSES[name]
        self.port_hint, self.port_held = bindable(self.addr)
        self.daemon_proc = None
        self.sockdir = None

    def sockets(self):
        """The milters' sockets, as bedlib's, but in a short directory
        under /tmp: a unix socket's path has 107 bytes at most."""
        if not self.sockdir:
            self.sockdir = tempfile.mkdtemp(prefix="pbmh.", dir="/tmp")
            shutil.chown(self.sockdir, group="postfix")
            os.chmod(self.sockdir, 0o2750)
        return self.sockdir

    def stop(self):
        super().stop()
        if self.sockdir:
            shutil.rmtree(self.sockdir, ignore_errors=True)

    def log_text_all(self):
        """This host's log: its commands' and its daemon's."""
        text = ""
        for path in (self.log, os.path.join(self.work, "daemon.log")):
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    text += f.read()
        return text

    def daemon(self, extra=()):
        """`patchbridge run --foreground` on this host's configuration."""
        self.daemon_proc = self.spawn([self.patchbridge, "-c", self.cfg,
                                       "run", "--foreground"] +
                                      list(extra), "daemon.log")
        return self.daemon_proc

    def kill9(self, proc):
        """SIGKILL proc (and what it started: its process group)."""
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def state_lines(host, pg, lease):
    """The [state] lines of host on the shared PostgreSQL state."""
    conninfo = host.write("conninfo", pg.conninfo + "\n", 0o600)
    return ("backend = postgresql\nconninfo_file = %s\nhost = %s\n"
            "lease = %s\n" % (conninfo, host.name, lease))


def milter_lines(host):
    """The [milter] lines of host: its milter reads the thread map from
    the shared PostgreSQL (within db_timeout), else from this host's
    copy, which the daemon keeps."""
    return "conninfo_file = %s\n" % os.path.join(host.work, "conninfo")


def with_state(conf, lines, milter=""):
    """conf (a patchbridge.conf's text) with lines at the top of its
    [state] section, and milter at the top of its [milter] section
    (one is added when there is none)."""
    check("\n[state]\n" in conf, "the configuration has no [state]")
    conf = conf.replace("\n[state]\n", "\n[state]\n" + lines, 1)
    if milter and "\n[milter]\n" in conf:
        conf = conf.replace("\n[milter]\n", "\n[milter]\n" + milter, 1)
    elif milter:
        conf = conf.replace("\n[state]\n", "\n[milter]\n" + milter +
                            "[state]\n", 1)
    return conf


# --- two hosts as one ------------------------------------------------------------

class Group:
    """Processes started alike on every host, seen as one."""

    def __init__(self, procs):
        self.procs = procs
        self.pid = procs[0].pid

    def poll(self):
        for p in self.procs:
            rc = p.poll()
            if rc is not None:
                return rc
        return None

    def send_signal(self, sig):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(sig)

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout=None):
        rcs = [p.wait(timeout=timeout) for p in self.procs]
        return next((rc for rc in rcs if rc), 0)


# The directory below the bed that both hosts share (shared_path()).
SHARED = "shared"

# `patchbridge` commands every host runs; the others run on the first.
ON_EVERY_HOST = ("run", "check-config")

HOSTS = ("mx1.lists.example.test", "mx2.lists.example.test")
# Each host's own loopback address: its MTA listens there, its senders and
# its daemon's SMTP submission reach it there.
ADDRESSES = {HOSTS[0]: "127.0.0.2", HOSTS[1]: "127.0.0.3"}


class PairMixin:
    """Put before a scenario's Bed class (bedlib.Bed or a subclass): the
    bed becomes two hosts, A and B (self.hosts), on one PostgreSQL.

    The scenario's own paths (below self.work), address (self.addr,
    127.0.0.1) and port (self.env's PORT, self.port) are placeholders:
    each host gets them as its own (localize()).  self.lease: the hosts'
    [state] lease: three quarters of it longer than a forge request's try
    and the wait before the next with the scenarios' [forge] settings,
    as check-config wants (timeout 1m + retry_max 2s: above 1m23s)."""

    lease = "9m"

    def pair_init(self):
        self.pg = Postgres(self.work)
        self.hosts = [Host(self.work, n, self.patchbridge) for n in HOSTS]
        self.port = bedlib.free_port()  # a placeholder, never listened on
        self.env["PORT"] = str(self.port)
        self.turn = 0
        self.pg.start()

    def localize(self, host, s):
        if not isinstance(s, str):
            return s
        if s == self.env["PORT"]:
            return str(host.port_hint)
        s = s.replace(os.path.join(self.work, "sockets") + "/",
                      host.sockets() + "/")
        # every path below the bed but the shared ones (shared_path())
        s = re.sub(re.escape(self.work + "/") + "(?!%s/)" % SHARED,
                   lambda m: host.work + "/", s)
        return s.replace("%s:%s" % (self.addr, self.env["PORT"]),
                         "%s:%d" % (host.addr, host.port_hint))

    # files, sockets, processes: on every host

    def write(self, name, text, mode=0o644):
        for h in self.hosts:
            # the directories the scenario made next to its files
            for d in os.listdir(self.work):
                if os.path.isdir(os.path.join(self.work, d)) and \
                        d not in ("pg", SHARED) and \
                        not any(d == x.short for x in self.hosts):
                    os.makedirs(os.path.join(h.work, d), exist_ok=True)
            t = self.localize(h, text)
            for o in self.hosts:
                # (a host's file naming another's Postfix or files: a
                # placeholder localize() did not know)
                check(o is h or (o.work + "/" not in t and
                                 not (o.env.get("RUNDIR") and
                                      o.env["RUNDIR"] in t)),
                      "%s for host %s names host %s's paths" %
                      (name, h.name, o.name))
            if name == "patchbridge.conf":
                t = with_state(t, state_lines(h, self.pg, self.lease),
                               milter_lines(h))
                if h is not self.hosts[0]:
                    # GitLab posts a project's hook to one URL: host A
                    # receives it where the scenario said; the others
                    # listen on their own address, and nothing calls
                    # them (they poll)
                    t = re.sub(r"(?m)^(listen = )127\.0\.0\.1:",
                               r"\g<1>%s:" % h.addr, t)
            h.write(name, t, mode)
        return super().write(name, text, mode)

    def sockets(self):
        for h in self.hosts:
            h.sockets()
        return super().sockets()

    def shared_path(self, rel):
        """rel in the directory both hosts share, which localize()
        leaves as it is."""
        os.makedirs(os.path.join(self.work, SHARED), exist_ok=True)
        return os.path.join(self.work, SHARED, rel)

    def state_server(self):
        return self.pg.dir

    def spawn(self, argv, logname):
        return Group([h.spawn([self.localize(h, a) for a in argv], logname)
                      for h in self.hosts])

    def wait_socket(self, path, what):
        for h in self.hosts:
            h.wait_socket(self.localize(h, path), what)

    def daemon(self):
        return self.spawn([self.patchbridge, "-c", self.cfg, "run",
                           "--foreground"], "daemon.log")

    def start_postfix(self, *options, mailboxes=()):
        opts = list(options)
        if "--port" not in opts:
            opts = ["--port", self.env["PORT"]] + opts
        for h in self.hosts:
            if h.port_held:
                h.port_held.close()
                h.port_held = None
            h.start_postfix(*[self.localize(h, o) for o in opts],
                            mailboxes=mailboxes)
            say("host %s: postfix on %s port %d, archive %s" %
                (h.name, h.addr, h.port, h.env["ARCHIVE"]))
        # Host A's paths as placeholders that localize() makes each
        # host's own: a story's MTA hook hands its mail to `sendmail -C
        # $CONFIG` of the host it runs on.
        self.env.update({k: self.placeholder(v)
                         for k, v in self.hosts[0].env.items()
                         if k not in ("PORT", "ADDRESS")})

    def placeholder(self, path):
        """A path of host A's Postfix as the same path below the bed:
        below A's directory, or in pfbed's runtime directory (RUNDIR,
        under /tmp when the bed's path is too long for Postfix's
        sockets), whose names pfbed links from the instance's DIR."""
        a = self.hosts[0]
        if path.startswith(a.work + "/"):
            return self.work + path[len(a.work):]
        rundir, d = a.env.get("RUNDIR"), a.env.get("DIR", "")
        if rundir and d.startswith(a.work + "/") and \
                (path == rundir or path.startswith(rundir + "/")):
            return self.work + d[len(a.work):] + path[len(rundir):]
        return path

    def stop(self):
        # (libmilter takes seconds to stop: the hosts stop together)
        threads = [threading.Thread(target=h.stop) for h in self.hosts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.pg.stop()

    # patchbridge: `run` and check-config on every host, the rest on A

    def pb_run(self, argv, timeout=300):
        argv = list(argv)
        if argv and argv[0] in ON_EVERY_HOST:
            outs = [h.pb_run([self.localize(h, a) for a in argv], timeout)
                    for h in self.hosts]
            for h, o in zip(self.hosts, outs):
                say("host %s: patchbridge %s -> %d" %
                    (h.short, " ".join(argv), o.returncode))
            if argv[:2] == ["run", "--once"] and \
                    any(o.returncode == 0 for o in outs):
                # A host whose pass left work waiting (75) may have
                # waited for a claim of a host that ran after it and
                # finished (0) - the claim of a host restarted after a
                # crash, its own again: it runs once more, as its
                # daemon's next pass would.
                for i, h in enumerate(self.hosts):
                    if outs[i].returncode == 75:
                        outs[i] = h.pb_run([self.localize(h, a)
                                            for a in argv], timeout)
                        say("host %s: patchbridge %s again -> %d" %
                            (h.short, " ".join(argv), outs[i].returncode))
            worst = next((o for o in outs if o.returncode), outs[0])
            worst.stdout = "".join(o.stdout for o in outs)
            return worst
        h = self.hosts[0]
        return h.pb_run([self.localize_input(h, a) for a in argv], timeout)

    def command_cfg(self):
        return self.hosts[0].cfg

    def local_paths(self, rel):
        return [os.path.join(h.work, rel) for h in self.hosts]

    def state_cursor(self, name, value=None):
        def text(v):  # a bytea literal of v's UTF-8
            return "'\\x%s'::bytea" % v.encode().hex()
        if value is not None:
            self.pg.query("UPDATE cursors SET value = %s WHERE name = %s"
                          % (text(value), text(name)))
        # ("v:" so that an empty value is a line psql prints)
        rows = self.pg.query("SELECT 'v:' || convert_from(value, 'UTF8') "
                             "FROM cursors WHERE name = %s" % text(name))
        return rows[0][0][2:] if rows else None

    def localize_input(self, host, a):
        """An argument of a command run on one host: localized, except a
        path below the bed that the host does not have - a file the
        command is to write (export's mbox and inbox), which the
        scenario then reads where it named it."""
        local = self.localize(host, a)
        if isinstance(a, str) and a.startswith(self.work + "/") and \
                local != a and not os.path.exists(local):
            return a
        return local

    def log_text(self):
        """Every host's log: its commands' and its daemon's (a
        single-host bed's daemon writes to the one log too)."""
        return "".join(h.log_text_all() for h in self.hosts)

    def log_tail(self, n=6000):
        return "".join("=== host %s ===\n%s" % (h.name, h.log_tail(n))
                       for h in self.hosts)

    # the list: replies to the hosts in turn; the archive of both

    def send(self, raw, sender):
        h = self.hosts[self.turn % len(self.hosts)]
        self.turn += 1
        h.send(raw, sender)

    def mailbox(self, address):
        """address's mails, whichever host's MTA delivered them."""
        return [m for h in self.hosts for m in h.mailbox(address)]

    def archive(self):
        mails = []
        for h in self.hosts:
            for m in h.archive():
                m.host = h.name
                mails.append(m)
        mails.sort(key=lambda m: (m.get("Date", ""), m.get("Subject", "")))
        return mails

    def wait_mail(self, n, timeout=120):
        def enough():
            return sum(count_mail(h) for h in self.hosts) >= n
        bedlib.wait_for(enough, timeout, "the list archives do not hold "
                        "%d mails" % n, every=0.2)

    def settle(self):
        for h in self.hosts:
            h.settle()


def count_mail(host):
    n = 0
    for sub in ("new", "cur"):
        d = os.path.join(host.env.get("ARCHIVE", "/nonexistent"), sub)
        if os.path.isdir(d):
            n += len(os.listdir(d))
    return n


def short_timeouts(conf, lease):
    """conf (patchbridge.conf's text as bedlib.write_config() writes it)
    made fit for a lease of lease seconds, with the shortest poll
    interval.  check-config wants three quarters of the lease longer
    than a forge request's try and the wait before the next (timeout +
    retry_max), and the lease than [smtp] timeout: no forge
    retries (a failed write is tried again at the reply's next attempt),
    a forge timeout below half the lease, an [smtp] timeout a second
    below it."""
    forge = max(1, (lease - 1) // 2)
    check(2 * forge < lease and lease >= 2, "no timeouts fit a lease of "
          "%d s" % lease)
    conf = conf.replace("[forge]\n", "[forge]\ntimeout = %ds\n"
                        "connect_timeout = %ds\n" % (forge, forge), 1)
    conf = re.sub(r"(\[forge\]\n(?:.*\n)*?)max_retries = \d+",
                  r"\g<1>max_retries = 0", conf, count=1)
    conf = re.sub(r"(\[smtp\]\n(?:.*\n)*?)timeout = 20s",
                  r"\g<1>timeout = %ds" % (lease - 1), conf, count=1)
    return conf.replace("poll_interval = 1h", "poll_interval = 5s")


def pair_class(base):
    """base (a scenario's Bed class) made a Pair."""
    return type("Pair" + base.__name__, (PairMixin, base), {})
