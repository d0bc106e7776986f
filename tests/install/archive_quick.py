#!/usr/bin/python3
"""The quick tier from a `git archive` of the tree, with its file modes.

usage: archive_quick.py SOURCE_DIR BUILD_DIR WORKDIR

`git archive` writes files 0664 and directories 0775 (its tar.umask is
0002), and tar run as root keeps them: a release tarball extracted as
root has every file group-writable, where a clone has 0644.  No test may
depend on the modes of the checkout (a configuration file the programs
must refuse when group-writable is the case in point).  This extracts
HEAD's tree with those modes (made so whoever runs it), then runs every
test of the quick tier with the extraction in place of the source
directory, against this build's programs: each test's command line,
environment and working directory as CTest has them
(`ctest --show-only=json-v1`), SOURCE_DIR replaced by the extraction.

Committed files only: what is not committed is not in an archive.
Exit 0 pass, 1 fail, 77 skipped (no git, or not a git work tree).
"""
import json
import os
import shutil
import subprocess
import sys

NAME = "archive-quick"
# Not this test, nor the ones that need the whole tree's history.
SKIP = {"install_archive_quick"}


def say(msg):
    print(f"{NAME}: {msg}", flush=True)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    src, build, work = (os.path.abspath(a) for a in sys.argv[1:])
    if not shutil.which("git"):
        say("SKIP: git is not installed")
        return 77
    if subprocess.run(["git", "-C", src, "rev-parse", "HEAD"],
                      capture_output=True).returncode:
        say(f"SKIP: {src} is not a git work tree")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    tree = os.path.join(work, "src")
    os.makedirs(tree)
    git = subprocess.Popen(["git", "-C", src, "archive", "--format=tar",
                            "HEAD"], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-p", "-C", tree, "-f", "-"],
                   stdin=git.stdout, check=True)
    git.stdout.close()
    if git.wait():
        say("FAIL: git archive failed")
        return 1
    # The modes of an extraction as root, whoever runs this: what the
    # archive says (0664 and 0775 with git's default tar.umask), with
    # the group's write bit.
    for dirpath, dirnames, filenames in os.walk(tree):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | 0o020)
    os.chmod(tree, 0o775)
    example = os.path.join(tree, "contrib", "patchbridge.conf.example")
    say(f"extracted HEAD to {tree} "
        f"(patchbridge.conf.example {os.stat(example).st_mode & 0o777:o})")

    out = subprocess.run(["ctest", "--show-only=json-v1", "-L", "quick"],
                         cwd=build, capture_output=True, text=True,
                         check=True).stdout
    tests = json.loads(out)["tests"]

    def moved(s):
        """s with the source directory replaced, the build directory
        (which may lie inside it) left as it is."""
        if not isinstance(s, str):
            return s
        keep = "\0build\0"
        return s.replace(build, keep).replace(src, tree).replace(keep, build)

    failed = []
    ran = 0
    for t in tests:
        if t["name"] in SKIP or "command" not in t:
            continue
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        env = dict(os.environ)
        for kv in props.get("ENVIRONMENT", []):
            k, _, v = kv.partition("=")
            env[k] = moved(v)
        cwd = moved(props.get("WORKING_DIRECTORY", build))
        cmd = [moved(a) for a in t["command"]]
        timeout = float(props.get("TIMEOUT", 300)) * 2
        try:
            r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True,
                               text=True, errors="replace",
                               timeout=timeout)
            rc = r.returncode
            log = (r.stdout + r.stderr)[-3000:]
        except subprocess.TimeoutExpired:
            rc, log = "timeout", ""
        ran += 1
        skip_rc = props.get("SKIP_RETURN_CODE")
        if rc == 0 or (skip_rc is not None and str(rc) == str(skip_rc)):
            continue
        # a test that names failure as success (WILL_FAIL) passes failing
        if props.get("WILL_FAIL") and rc not in (0, "timeout"):
            continue
        failed.append(t["name"])
        say(f"FAIL: {t['name']} exit {rc} from the archive:\n{log}")
    say(f"{ran} quick tests run from the archive, {len(failed)} failed"
        + (": " + " ".join(failed) if failed else ""))
    if failed:
        say(f"kept for inspection: {work}")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    say("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
