#!/usr/bin/env python3
"""A series signed with the real patatt and posted to the list becomes a
merge request recorded as attested; the same series with one byte
changed is refused when the project requires attestation (GitLab
simulator).

Run through tests/forgesim/run-with-sim.sh (PB_FORGESIM_URL), with the
path of emailmr_tool.  A key is made in the test with `patatt genkey`
(Debian's python3-patatt, run as /usr/bin/python3 -c 'import patatt;
patatt.command()', its console entry point), its public half put in a
project keyring in patatt's layout (ed25519/DOMAIN/LOCAL/SELECTOR); a
two-patch series made with git format-patch --cover-letter --thread is
signed with `patatt sign` and checked with `patatt validate`.  Then:

* collected and opened with the keyring and email_require_attestation:
  one merge request whose description records "Attested by
  ann@example.org, ed25519, key from the project keyring (each of the
  3 mails)";
* the same mails with one byte of a patch changed (patatt validate
  fails on it too), in a fresh state: refused, naming the patch and the
  signature that does not verify, and no branch pushed;
* the series unsigned, in a fresh state: refused too, since nothing
  vouches for its mails (no trusted Authentication-Results here).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

URL = os.environ.get("PB_FORGESIM_URL")
TOOL = sys.argv[1] if len(sys.argv) > 1 else None
PROJECT = "group/project"
PATATT = ["/usr/bin/python3", "-c",
          "import sys, patatt; sys.exit(patatt.command())"]


def fail(msg):
    print("attest_mr_sim: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def clean_env(extra=None):
    e = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    for key in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        e.pop(key, None)
    e.update(extra or {})
    return e


def git(*args, cwd=None, env=None):
    return subprocess.run(["git"] + list(args), cwd=cwd, env=clean_env(env),
                          check=True, stdout=subprocess.PIPE).stdout.decode()


def api(path):
    req = urllib.request.Request(URL + "/api/v4" + path,
                                 headers={"PRIVATE-TOKEN": "user-token"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def tool(tmp, name, env, *mails):
    state = os.path.join(tmp, name + ".db")
    mirror = os.path.join(tmp, name + ".git")
    p = subprocess.run([TOOL, state, URL, "bot-token", PROJECT, mirror,
                        "main", "anyone"] + list(mails),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=False, env=clean_env(env))
    out = p.stdout.decode()
    sys.stdout.write(out)
    sys.stderr.write(p.stderr.decode())
    return p.returncode, out


def patatt(home, *args, cwd=None):
    return subprocess.run(PATATT + list(args), cwd=cwd, env=clean_env(home),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          check=False)


def branches(work):
    return git("ls-remote", URL + "/" + PROJECT + ".git",
               "refs/heads/email/*", cwd=work).split()[1::2]


def main():
    if not URL or not TOOL:
        print("run through run-with-sim.sh with the path of emailmr_tool")
        return 2
    if subprocess.run(PATATT + ["--help"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        print("attest_mr_sim: SKIP: patatt is not installed "
              "(python3-patatt)")
        return 77
    tmp = tempfile.mkdtemp(prefix="attestmr.",
                           dir=os.environ.get("PB_TEST_TMP"))
    home = {"HOME": tmp, "XDG_DATA_HOME": os.path.join(tmp, "data"),
            "XDG_CONFIG_HOME": os.path.join(tmp, "config"),
            "GIT_CONFIG_GLOBAL": os.devnull}
    work = os.path.join(tmp, "work")
    git("clone", "-q", URL + "/" + PROJECT + ".git", work)
    for k, v in (("user.name", "Ann Author"), ("user.email",
                                                "ann@example.org"),
                 ("patatt.signingkey", "ed25519:sel1"),
                 ("patatt.selector", "sel1")):
        git("config", k, v, cwd=work)
    base = git("rev-parse", "HEAD", cwd=work).strip()
    for n in (1, 2):
        with open(os.path.join(work, "signed-%d.txt" % n), "w") as f:
            f.write("signed change %d\n" % n)
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", "signed: change %d" % n, "-m",
            "Signed-off-by: Ann Author <ann@example.org>", cwd=work)

    # The key, made by patatt, and the project keyring with its public
    # half where patatt's layout puts it.
    p = patatt(home, "genkey", "-n", "sel1", cwd=work)
    if p.returncode != 0:
        fail("patatt genkey: %s" % p.stdout.decode())
    keyring = os.path.join(tmp, "keyring")
    shutil.copytree(os.path.join(tmp, "data", "patatt", "public",
                                 "ed25519"),
                    os.path.join(keyring, "ed25519"))
    if not os.path.isfile(os.path.join(keyring, "ed25519", "example.org",
                                       "ann", "sel1")):
        fail("patatt genkey made no ed25519/example.org/ann/sel1")

    mails = os.path.join(tmp, "v1")
    git("format-patch", "-q", "--cover-letter", "--thread", "--base=" + base,
        "-o", mails, base + "..HEAD", cwd=work)
    paths = [os.path.join(mails, n) for n in sorted(os.listdir(mails))]
    with open(paths[0]) as f:
        text = f.read()
    with open(paths[0], "w") as f:
        f.write(text.replace("*** SUBJECT HERE ***", "signed: two changes")
                .replace("*** BLURB HERE ***", "Two changes, attested."))
    unsigned = os.path.join(tmp, "unsigned")
    shutil.copytree(mails, unsigned)
    p = patatt(home, "sign", *paths, cwd=work)
    if p.returncode != 0:
        fail("patatt sign: %s" % p.stdout.decode())
    p = patatt(home, "validate", *paths, cwd=work)
    if p.returncode != 0 or p.stdout.decode().count("PASS") != 3:
        fail("patatt validate of the signed series: %s" % p.stdout.decode())

    # Attested: opened, and the description says by whom and how.
    env = {"PB_ATTEST_KEYRING": keyring, "PB_ATTEST_REQUIRE": "yes"}
    rc, out = tool(tmp, "signed", env, *paths)
    if rc != 0 or "!" not in out.splitlines()[-1]:
        fail("the attested series was not opened: %r" % out)
    iid = int(out.splitlines()[-1].rsplit("!", 1)[1])
    desc = api("/projects/1/merge_requests/%d" % iid)["description"]
    want = ("From: Ann Author <ann@example.org> by email\n"
            "Attested by ann@example.org, ed25519, key from the project "
            "keyring (each of the 3 mails).\n")
    if not desc.startswith(want):
        fail("description %r, want it to start %r" % (desc, want))
    print("!%d: %s" % (iid, want.splitlines()[1]))
    pushed = branches(work)

    # One byte changed in transit: patatt itself fails it, and so does
    # the bridge, which pushes nothing.
    tampered = os.path.join(tmp, "tampered")
    shutil.copytree(mails, tampered)
    t = [os.path.join(tampered, n) for n in sorted(os.listdir(tampered))]
    with open(t[2], "rb") as f:
        raw = f.read()
    at = raw.index(b"+signed change 2")
    raw = raw[:at + 1] + b"S" + raw[at + 2:]
    with open(t[2], "wb") as f:
        f.write(raw)
    p = patatt(home, "validate", *t, cwd=work)
    if p.returncode == 0 or "BADSIG" not in p.stdout.decode():
        fail("patatt validate passed the changed byte: %s"
             % p.stdout.decode())
    rc, out = tool(tmp, "tampered", env, *t)
    last = out.splitlines()[-1]
    if rc == 0 or "refused (email_require_attestation)" not in last or \
            "patch 2/2 is not verified: the patatt signature of " \
            "ann@example.org does not verify" not in last:
        fail("the changed series was not refused as it should: %r" % out)
    if branches(work) != pushed:
        fail("a refused series was pushed: %r" % branches(work))
    print("one byte changed: %s" % last.split(": ", 1)[1])

    # Unsigned, and nothing else vouches for it: refused too.
    u = [os.path.join(unsigned, n) for n in sorted(os.listdir(unsigned))]
    rc, out = tool(tmp, "unsigned", env, *u)
    last = out.splitlines()[-1]
    if rc == 0 or "cover letter 0/2 is not verified: no patatt " \
            "signature, and no DKIM/DMARC pass" not in last:
        fail("the unsigned series was not refused as it should: %r" % out)
    if branches(work) != pushed:
        fail("a refused series was pushed: %r" % branches(work))
    print("unsigned: refused")
    shutil.rmtree(tmp, ignore_errors=True)
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
