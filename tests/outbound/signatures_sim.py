#!/usr/bin/python3
"""The cover letter says whether the forge verified each commit's
signature, and whose key made it (GitLab's commit signature API, as the
simulator answers it).

usage: signatures_sim.py PATCHBRIDGE WORKDIR

Run through tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL).  Mail goes
to daemon_stop_sim.py's sendmail stand-in, which keeps each message in a
file.

An MR of five commits, all committed by Alice: the first signed with
Alice's OpenPGP key (verified), the second not signed, the third signed
with Bob's SSH key (other_user: Bob's key on Alice's commit), the fourth
with an X.509 certificate of Alice's, the fifth with an SSH key no user
of the forge has (unknown_key, and no key in GitLab's answer).  `run --once` mails the series; its
cover letter carries the block, a line per patch.  An MR with no signed
commit gets no block, and `[outbound] cover_signatures = no` leaves it
out too.  Every request is checked against GitLab's OpenAPI document
(pb_forgesim_checked).

Exit status: 0 pass, 1 fail.
"""

import email
import email.policy
import json
import os
import re
import sys
import urllib.error
import urllib.request

import daemon_stop_sim as base
from daemon_stop_sim import URL, check, sim

ALICE = {"name": "Alice Developer", "email": "alice@example.com"}


def create_mr(branch, title, signatures):
    commits = []
    for k, sig in enumerate(signatures, 1):
        c = {"message": "%s: part %d\n\nSigned-off-by: Alice Developer "
             "<alice@example.com>\n" % (branch, k),
             "files": {"%s-%d.txt" % (branch, k): "part %d\n" % k},
             "author": ALICE}
        if sig:
            c["signature"] = sig
        commits.append(c)
    shas = sim("POST", "/_sim/projects/1/commits",
               {"branch": branch, "start": "main", "commits": commits})
    mr = sim("POST", "/_sim/projects/1/merge_requests",
             {"source_branch": branch, "target_branch": "main",
              "title": title, "author": "alice"})
    return mr["iid"], shas["shas"]


def covers(out):
    got = {}
    for name in sorted(os.listdir(out)):
        if not re.fullmatch(r"mail-\d+", name):
            continue
        with open(os.path.join(out, name), "rb") as f:
            m = email.message_from_binary_file(f, policy=email.policy.default)
        if re.search(r" 0/\d+\]", m["Subject"]):
            got[int(m["X-Patchbridge-MR"])] = m.get_content()
    return got


def run(pb, conf, log, *argv):
    p = base.run(pb, conf, log, *argv)
    check(p.returncode == 0, "patchbridge %s exited %d" % (" ".join(argv),
                                                          p.returncode))
    return p


def setup(work, name, project=""):
    """A bridge of its own (daemon_stop_sim.py's configuration, with
    project lines), its mail kept in OUT."""
    d = os.path.join(work, name)
    out = os.path.join(d, "out")
    os.makedirs(out)
    os.makedirs(os.path.join(d, "state"))
    with open(os.path.join(d, "sendmail.sh"), "w") as f:
        f.write(base.SENDMAIL % {"out": out,
                                 "hold": os.path.join(d, "no-hold")})
    os.chmod(os.path.join(d, "sendmail.sh"), 0o755)
    with open(os.path.join(d, "token"), "w") as f:
        f.write("admin-token\n")
    os.chmod(os.path.join(d, "token"), 0o600)
    conf = os.path.join(d, "patchbridge.conf")
    with open(conf, "w") as f:
        f.write(base.CONFIG % {"url": URL, "dir": d, "list": base.LIST,
                               "state": "path = %s/state/state.db\n" % d}
                + project)
    return conf, out


def scenario(pb, work, log):
    sim("POST", "/_sim/reset", {})
    signed, shas = create_mr("signed", "Signed work", [
        {"type": "PGP", "user": "alice"},
        None,
        {"type": "SSH", "user": "bob", "title": "bob's laptop"},
        {"type": "X509", "user": "alice"},
        {"type": "SSH"},
    ])
    plain, _ = create_mr("plain", "Unsigned work", [None, None])
    # What the API says of them, as the bridge reads it.
    check(sim_status(shas[1]) == 404, "an unsigned commit answered")

    conf, out = setup(work, "on")
    run(pb, conf, log, "run", "--once", "--foreground")
    got = covers(out)
    check(signed in got and plain in got,
          "cover letters mailed: %s" % sorted(got))
    keyid = sim_signature(shas[0])["gpg_key_primary_keyid"]
    want = ("Commit signatures, as the forge verified them:\n"
            "- 1/5 %.12s: PGP, verified: Alice Developer "
            "<alice@example.com> (key %s)\n"
            "- 2/5 %.12s: not signed\n"
            "- 3/5 %.12s: SSH, other_user: key \"bob's laptop\" of the "
            "committer Alice Developer <alice@example.com>\n"
            "- 4/5 %.12s: X.509, verified: certificate of "
            "alice@example.com (CN=alice@example.com,OU=Example,"
            "O=World)\n"
            "- 5/5 %.12s: SSH, unknown_key: a key no forge user has, the "
            "committer Alice Developer <alice@example.com>\n\n"
            % (shas[0], keyid, shas[1], shas[2], shas[3], shas[4]))
    check(want in got[signed],
          "the signed MR's cover lacks the block:\n%s\nwant:\n%s"
          % (got[signed], want))
    print(want, end="")
    check("Commit signatures" not in got[plain],
          "a cover with no signed commit has the block:\n%s" % got[plain])

    conf, out = setup(work, "off", "cover_signatures = no\n")
    run(pb, conf, log, "run", "--once", "--foreground")
    got = covers(out)
    check(signed in got, "cover letters mailed: %s" % sorted(got))
    check("Commit signatures" not in got[signed],
          "cover_signatures = no, and the block is there")
    print("no block without a signed commit, nor with cover_signatures = no")


def sim_signature(sha):
    req = urllib.request.Request(
        URL + "/api/v4/projects/1/repository/commits/%s/signature" % sha,
        headers={"PRIVATE-TOKEN": "user-token"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def sim_status(sha):
    try:
        sim_signature(sha)
    except urllib.error.HTTPError as e:
        return e.code
    return 200


if __name__ == "__main__":
    sys.exit(base.run_main(scenario, __doc__))
