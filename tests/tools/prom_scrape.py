#!/usr/bin/python3
"""The daemon's /metrics as an operator's Prometheus reads it, for the
demo (scripts/demo.py) and tests/inbound/test_monitor_sim.py.

    get(port, path)   (status, body) of GET http://127.0.0.1:PORT/PATH;
                      (0, "") when nothing answers
    parse(text)       a scrape as {(name, ((label, value), ...)): value},
                      once it passed `promtool check metrics` (Debian's
                      prometheus package) and python3-prometheus-client's
                      parser; AssertionError otherwise
    total(scrape, name, **labels)
                      the sum of name's samples whose labels include
                      labels
    missing()         what is not installed, as "TOOL (apt-get install
                      PACKAGE)", or None
"""

import shutil
import subprocess
import urllib.error
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # missing() says so
    text_string_to_metric_families = None


def missing():
    if not shutil.which("promtool"):
        return "promtool (apt-get install prometheus)"
    if text_string_to_metric_families is None:
        return ("prometheus_client (apt-get install "
                "python3-prometheus-client)")
    return None


def get(port, path, timeout=10):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path),
                                    timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def parse(text):
    p = subprocess.run(["promtool", "check", "metrics"], input=text,
                       capture_output=True, text=True, timeout=30)
    if p.returncode != 0 or p.stdout.strip() or p.stderr.strip():
        raise AssertionError("promtool check metrics: %d %s%s" %
                             (p.returncode, p.stdout, p.stderr))
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def total(scrape, name, **labels):
    return sum(v for (n, ls), v in scrape.items() if n == name and
               all(dict(ls).get(k) == w for k, w in labels.items()))
