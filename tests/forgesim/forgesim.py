#!/usr/bin/python3
"""forgesim: a GitLab REST v4 simulator for patchbridge's tests.

  /usr/bin/python3 tests/forgesim/forgesim.py --port 0 --state-dir DIR \\
      [--port-file FILE] [--seed FILE.json | --no-seed] [--verbose]

Listens on 127.0.0.1 only.  When it accepts connections it prints the base
URL (http://127.0.0.1:PORT) on stdout and, with --port-file, writes the
same URL to FILE atomically.  SIGTERM or SIGINT stops it cleanly (exit 0).
See README.md for the API subset and the /_sim/ control API.
"""

import argparse
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gitlabsim import seed  # noqa: E402
from gitlabsim.forge import Forge, SimError  # noqa: E402
from gitlabsim.gitrepo import GitError  # noqa: E402
from gitlabsim.server import SimServer  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0,
                        help="TCP port on 127.0.0.1 (0: pick a free one)")
    parser.add_argument("--state-dir", required=True,
                        help="directory for the bare repositories")
    parser.add_argument("--port-file",
                        help="write the base URL here once listening")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--seed", help="seed document (default: "
                       "seed-default.json next to this script)")
    group.add_argument("--no-seed", action="store_true",
                       help="start empty")
    parser.add_argument("--verbose", action="store_true",
                        help="log every request to stderr")
    parser.add_argument("--openapi-report", metavar="FILE",
                        help="check every API request and response against "
                        "GitLab's OpenAPI document and keep the counts in "
                        "FILE (default: $PB_OPENAPI_REPORT_DIR/"
                        "forgesim-PID.json when that is set)")
    args = parser.parse_args(argv)

    os.makedirs(args.state_dir, exist_ok=True)
    forge = Forge(args.state_dir)
    report = args.openapi_report
    if not report and os.environ.get("PB_OPENAPI_REPORT_DIR"):
        report = os.path.join(os.environ["PB_OPENAPI_REPORT_DIR"],
                              "forgesim-%d.json" % os.getpid())
    checker = None
    if report:
        # A check that was asked for and cannot run fails the start.
        try:
            from gitlabsim.conformance import Checker
            checker = Checker(report=report)
        except (OSError, ValueError) as e:
            sys.stderr.write("forgesim: cannot check against the OpenAPI "
                             "document: %s\n" % e)
            return 2
    server = SimServer(forge, port=args.port, verbose=args.verbose,
                       conformance=checker)
    if not args.no_seed:
        try:
            doc = seed.load(args.seed or seed.DEFAULT_SEED)
            seed.apply(forge, doc)
        except (OSError, ValueError, KeyError, SimError, GitError) as e:
            sys.stderr.write("forgesim: cannot apply seed: %s\n" % e)
            return 2
        server.control.startup_seed = doc

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    server.start()
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(server.url + "\n")
        os.replace(tmp, args.port_file)
    print(server.url, flush=True)

    while not stop.wait(3600):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
