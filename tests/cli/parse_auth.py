#!/usr/bin/python3
"""`patchbridge -c CONF parse` judges Authentication-Results as the milter
does, with the same code: usage: parse_auth.py PATCHBRIDGE MILTER

For every forged form of tests/data/authres/forged.txt, below the two
fields a verifier pair (OpenDKIM, OpenDMARC) adds on top:
  - parse with the configuration: auth.verified false, 2 trusted fields,
    1 forged;
  - patchbridge-milter --test on the same file: it would remove that
    field (#3) and the reply it spools is unverified;
  - parse of that spool record: the same verdict.
Controls: the verifier's own pass verifies with the configuration and
not without one; a pass from a verifier placed below another field does
not.
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tools"))
import authres_forms  # noqa: E402

ID = "lists.example.test"
VERIFIER = ("Authentication-Results: %s; dmarc=none (p=none dis=none) "
            "header.from=corp.example\n"
            "Authentication-Results: %s; dkim=none\n" % (ID, ID))
PASS = ("Authentication-Results: %s; dmarc=pass (p=none dis=none) "
        "header.from=corp.example\n"
        "Authentication-Results: %s; dkim=pass header.d=corp.example\n"
        % (ID, ID))
HEAD = """\
From: Ned Maintainer <ned@corp.example>
To: patches@lists.example.test
Subject: Re: [PATCH v3 2/7] list: grow the array on demand
Message-ID: <forged-%d@corp.example>
In-Reply-To: <pb.v3.2-7.group.project.12.0123456789ab@bridge.example.org>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

Looks good.

Acked-by: Ned Maintainer <ned@corp.example>
"""

FAILED = []


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    FAILED.append(msg)


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if p.returncode:
        fail("%s: exit %d: %s" % (" ".join(argv), p.returncode,
                                  p.stderr[-500:]))
    return p.stdout


def auth(pb, conf, path):
    argv = [pb] + (["-c", conf] if conf else []) + ["parse", path]
    out = run(argv)
    return json.loads(out)["auth"] if out else {}


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    pb, milter = sys.argv[1], sys.argv[2]
    os.environ.pop("PATCHBRIDGE_CONFIG", None)
    tmp = tempfile.mkdtemp(prefix="parse_auth.",
                           dir=os.environ.get("PB_TEST_TMP"))
    conf = os.path.join(tmp, "pb.conf")
    with open(conf, "w") as f:
        f.write("[bridge]\naddress = bridge@example.org\n"
                "domain = bridge.example.org\n"
                "[forge]\nurl = https://gitlab.example.org\n"
                "token_file = %s/token\n"
                "[milter]\ntrusted_authserv_id = %s\n"
                "[state]\npath = %s/state.db\n"
                "[spool]\ndir = %s/spool\n" % (tmp, ID, tmp, tmp))
    # The milter run as root (as tests are) never makes its spool: the
    # spool is made for it, as an installation does.
    os.mkdir(os.path.join(tmp, "spool"), 0o770)

    forms = authres_forms.forms()
    if len(forms) < 10:
        fail("only %d forms in %s" % (len(forms), authres_forms.PATH))
    for n, what, value in forms:
        path = os.path.join(tmp, "form%d.eml" % n)
        with open(path, "w") as f:
            f.write(VERIFIER + "Authentication-Results: " + value + "\n" +
                    HEAD % n)
        a = auth(pb, conf, path)
        if a.get("verified") is not False or a.get("forged_fields") != 1 \
                or a.get("trusted_fields") != 2:
            fail("form %d (%s): parse says %s" % (n, what, a))
        out = run([milter, "-c", conf, "--test", path])
        want = "%s: removes Authentication-Results #3 (forged)" % path
        if want not in out.splitlines() or "auth=unverified" not in out:
            fail("form %d (%s): the milter says %r" % (n, what, out))
        rec = [os.path.join(tmp, "spool", "new", x)
               for x in os.listdir(os.path.join(tmp, "spool", "new"))]
        if len(rec) != 1:
            fail("form %d: %d spool records" % (n, len(rec)))
            continue
        a = auth(pb, conf, rec[0])
        if a.get("verified") is not False or a.get("forged_fields") != 1:
            fail("form %d (%s): parse of the record says %s" % (n, what, a))
        os.unlink(rec[0])

    path = os.path.join(tmp, "pass.eml")
    with open(path, "w") as f:
        f.write(PASS + HEAD % 0)
    a = auth(pb, conf, path)
    if a.get("verified") is not True or a.get("dkim") != "pass" or \
            a.get("dmarc") != "pass":
        fail("the verifier's pass: %s" % a)
    a = auth(pb, None, path)
    if a.get("verified") is not False:
        fail("without a configuration: %s" % a)
    below = os.path.join(tmp, "below.eml")
    with open(below, "w") as f:
        f.write("Received: from x by y; Tue, 3 Dec 2024 10:00:00 +0000\n" +
                PASS + HEAD % 0)
    a = auth(pb, conf, below)
    if a.get("verified") is not False or a.get("forged_fields") != 2:
        fail("a pass below another field: %s" % a)

    if FAILED:
        print("kept %s" % tmp, file=sys.stderr)
        return 1
    subprocess.run(["rm", "-rf", tmp])
    print("PASS: %d forms forged for parse and the milter alike" % len(forms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
