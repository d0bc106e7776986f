#!/usr/bin/python3
"""systemd's side of sd_notify(3), for the watchdog tests: a datagram
socket that records every notification a service sends.

As a program (tests/milter/watchdog.sh):

    notify_listen.py SOCKET OUTFILE

binds SOCKET (a path), writes its pid to OUTFILE.pid once bound, and
appends one line "SECONDS MESSAGE" per datagram to OUTFILE (SECONDS on
CLOCK_MONOTONIC, newlines in MESSAGE as "|"), flushed at once, until
SIGTERM.

As a module (tests/inbound/test_monitor_sim.py): Listener(path) does the
same in a thread; .messages() returns [(seconds, message), ...].
"""

import os
import signal
import socket
import sys
import threading
import time


def bind(path):
    if os.path.exists(path):
        os.unlink(path)
    so = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    so.bind(path)
    return so


class Listener:
    """Notifications received on path, in a thread, until close()."""

    def __init__(self, path):
        self.path = path
        self.sock = bind(path)
        self.sock.settimeout(0.1)
        self.lock = threading.Lock()
        self.got = []
        self.done = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.got.append((time.monotonic(), data.decode()))

    def messages(self):
        with self.lock:
            return list(self.got)

    def pings(self, since=0.0):
        return [t for t, m in self.messages()
                if t >= since and "WATCHDOG=1" in m.split("\n")]

    def wait_for(self, what, timeout):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if any(what in m.split("\n") for _, m in self.messages()):
                return True
            time.sleep(0.02)
        return False

    def close(self):
        self.done = True
        self.thread.join(2)
        self.sock.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


def main():
    if len(sys.argv) != 3:
        print("usage: notify_listen.py SOCKET OUTFILE", file=sys.stderr)
        return 2
    so = bind(sys.argv[1])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(sys.argv[2] + ".pid", "w") as f:
        f.write("%d\n" % os.getpid())
    with open(sys.argv[2], "a") as out:
        while True:
            data = so.recv(4096).decode(errors="replace")
            out.write("%.3f %s\n" % (time.monotonic(),
                                      data.replace("\n", "|")))
            out.flush()


if __name__ == "__main__":
    sys.exit(main())
