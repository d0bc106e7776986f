#!/usr/bin/env python3
"""A series signed with the real patatt and posted to the list becomes a
merge request recorded as attested, through the daemon; the same series
with one byte changed is refused (GitLab simulator).

Run through tests/forgesim/run-with-sim.sh as SCRIPT PATCHBRIDGE SEED
(PB_FORGESIM_URL), like test_email_submit_sim.py, whose helpers it uses.
A key is made in the test with `patatt genkey` (Debian's python3-patatt,
run through its console entry point patatt.command()); the project
keyring holds its public half in patatt's layout
(ed25519/DOMAIN/LOCAL/SELECTOR), `[project] attest_keyring` names it and
`email_require_attestation = yes`.  A two-patch series from git
format-patch --cover-letter --thread, signed with `patatt sign`, is
spooled as the milter spools it (`patchbridge replay`) and taken by
`patchbridge run --once`: one merge request, whose description records
"Attested by ann@example.org, ed25519, key from the project keyring".
The same mails with one byte of patch 2 changed, taken by a second
bridge (its own state and spool): no merge request, no branch pushed,
the sender told why in a notice to them alone, and `patchbridge why` on
the mail that completed the series says it was refused and why.
"""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

import test_email_submit_sim as base
from test_email_submit_sim import URL, PROJECT, DAEMON_OK, api, fail, run

PATATT = ["/usr/bin/python3", "-c",
          "import sys, patatt; sys.exit(patatt.command())"]


def patatt(work, home, *args):
    """patatt in the repository whose configuration names the key."""
    p = subprocess.run(PATATT + list(args), cwd=work,
                       env=dict(os.environ, GIT_CONFIG_GLOBAL=base.GITCONFIG,
                                GIT_CONFIG_NOSYSTEM="1", **home),
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        fail("patatt %s: %s%s" % (args[0], p.stdout, p.stderr))


def bridge(tmp, name, keyring):
    """A bridge of its own under tmp/name; its configuration's path."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    conf = os.path.join(d, "patchbridge.conf")
    with open(conf, "w") as f:
        f.write(base.CONFIG % {"url": URL, "dir": d} +
                "attest_keyring = %s\nemail_require_attestation = yes\n"
                % keyring)
    with open(os.path.join(d, "token"), "w") as f:
        f.write("bot-token\n")
    os.chmod(os.path.join(d, "token"), 0o600)
    return conf


def message_id(path):
    with open(path) as f:
        return [l.split(":", 1)[1].strip() for l in f.read().splitlines()
                if l.lower().startswith("message-id:")][0].strip("<>")


def story(pb, tmp):
    home = {"HOME": tmp, "XDG_DATA_HOME": os.path.join(tmp, "data"),
            "XDG_CONFIG_HOME": os.path.join(tmp, "config")}
    work = os.path.join(tmp, "work")
    run(["git", "clone", "-q", URL + "/" + PROJECT + ".git", work])
    for k, v in (("user.name", "Ann Author"),
                 ("user.email", "ann@example.org"),
                 ("patatt.signingkey", "ed25519:sel1"),
                 ("patatt.selector", "sel1")):
        run(["git", "-C", work, "config", k, v])
    base_sha = run(["git", "-C", work, "rev-parse", "HEAD"]).strip()
    for n in (1, 2):
        with open(os.path.join(work, "attested-%d.txt" % n), "w") as f:
            f.write("attested change %d\n" % n)
        run(["git", "-C", work, "add", "-A"])
        run(["git", "-C", work, "commit", "-q", "-m",
             "attested: change %d" % n])
    patatt(work, home, "genkey", "-n", "sel1")
    keyring = os.path.join(tmp, "keyring")
    shutil.copytree(os.path.join(tmp, "data", "patatt", "public",
                                 "ed25519"),
                    os.path.join(keyring, "ed25519"))
    mails = os.path.join(tmp, "v1")
    run(["git", "-C", work, "format-patch", "-q", "--cover-letter",
         "--thread", "--base=" + base_sha, "-o", mails,
         base_sha + "..HEAD"])
    files = [os.path.join(mails, n) for n in sorted(os.listdir(mails))]
    with open(files[0]) as f:
        text = f.read()
    with open(files[0], "w") as f:
        f.write(text.replace("*** SUBJECT HERE ***", "attested: two changes")
                .replace("*** BLURB HERE ***", "Signed with patatt."))
    patatt(work, home, "sign", *files)

    # The signed series: opened, and recorded as attested.
    conf = bridge(tmp, "one", keyring)
    run([pb, "-c", conf, "replay"] + files)
    before = {m["iid"] for m in api("projects/1/merge_requests")}
    run([pb, "-c", conf, "run", "--once", "--foreground"], ok=DAEMON_OK)
    mrs = [m for m in api("projects/1/merge_requests")
           if m["iid"] not in before]
    if len(mrs) != 1:
        fail("%d new merge requests from the attested series" % len(mrs))
    want = ("From: Ann Author <ann@example.org> by email\n"
            "Attested by ann@example.org, ed25519, key from the project "
            "keyring (each of the 3 mails).\n")
    if not mrs[0]["description"].startswith(want):
        fail("description %r" % mrs[0]["description"])
    print("!%d: %s" % (mrs[0]["iid"], want.splitlines()[1]))
    branches = run(["git", "ls-remote", URL + "/" + PROJECT + ".git",
                    "refs/heads/email/*"])

    # One byte changed in transit, to a second bridge: refused.
    tampered = os.path.join(tmp, "tampered")
    shutil.copytree(mails, tampered)
    t = [os.path.join(tampered, n) for n in sorted(os.listdir(tampered))]
    with open(t[2], "rb") as f:
        raw = f.read()
    at = raw.index(b"+attested change 2")
    with open(t[2], "wb") as f:
        f.write(raw[:at + 1] + b"A" + raw[at + 2:])
    conf2 = bridge(tmp, "two", keyring)
    run([pb, "-c", conf2, "replay"] + t)
    before = {m["iid"] for m in api("projects/1/merge_requests")}
    run([pb, "-c", conf2, "run", "--once", "--foreground"], ok=DAEMON_OK)
    if [m for m in api("projects/1/merge_requests")
            if m["iid"] not in before]:
        fail("the changed series was opened")
    if run(["git", "ls-remote", URL + "/" + PROJECT + ".git",
            "refs/heads/email/*"]) != branches:
        fail("the changed series was pushed")
    out = run([pb, "-c", conf2, "why", message_id(t[2])])
    if "not opened: a mail is not attested, as [project] " \
            "email_require_attestation wants" not in out or \
            "patch 2/2 is not verified: the patatt signature of " \
            "ann@example.org does not verify" not in out:
        fail("why does not say the series was refused: %r" % out)
    # The sender is told, alone, in reply to the series' first mail.
    db = sqlite3.connect(os.path.join(tmp, "two", "state.db"))
    queued = [(bytes(r[0]).decode() if isinstance(r[0], bytes) else r[0],
               bytes(r[1]).decode("utf-8", "replace"))
              for r in db.execute("SELECT recipients, message FROM outmail")]
    db.close()
    told = [m for rcpt, m in queued
            if "X-Patchbridge-Origin: notice" in m and
            rcpt.strip() == "ann@example.org"]
    if len(told) != 1 or \
            "In-Reply-To: <%s>" % message_id(t[0]) not in told[0] or \
            "list@example.org" in told[0].split("\n\n", 1)[0]:
        fail("the sender was not told, alone: %r" % queued)
    print("one byte changed: refused, the sender told, as `why` says")
    return 0


def main():
    if not URL or len(sys.argv) < 2:
        print("run through run-with-sim.sh with the path of patchbridge")
        return 2
    if subprocess.run(PATATT + ["--help"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        print("test_attest_submit_sim: SKIP: patatt is not installed "
              "(python3-patatt)")
        return 77
    tmp = tempfile.mkdtemp(prefix="pb-attest.")
    base.GITCONFIG = os.path.join(tmp, "gitconfig")
    with open(base.GITCONFIG, "w"):
        pass
    try:
        return story(sys.argv[1], tmp)
    finally:
        if os.environ.get("PB_TEST_KEEP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
