"""Bare git repositories behind the simulated projects.

This is the only module that runs git.  Every call goes through Repo.git(),
which runs git with a clean environment (no user config, no hooks) so that
the developer's ~/.gitconfig cannot change what the simulator computes.
"""

import os
import subprocess

from .diff import DiffFile

ZERO_SHA = "0" * 40

# Field and record separators for `git log --format`; they cannot occur in
# the header fields and are vanishingly unlikely in commit messages.
_FS = "\x1f"
_RS = "\x1e"


class GitError(Exception):
    pass


def _clean_env(extra=None):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "LC_ALL": "C",
        "TZ": "UTC",
    }
    if extra:
        env.update(extra)
    return env


class Repo:
    def __init__(self, path):
        self.path = path

    # -- plumbing ---------------------------------------------------------

    def git(self, *args, input=None, env=None, ok=(0,)):
        """Run git in the repository; return stdout as bytes."""
        proc = subprocess.run(
            ["git", "--git-dir", self.path] + list(args),
            input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=_clean_env(env), check=False)
        if proc.returncode not in ok:
            raise GitError("git %s: %s" % (" ".join(args[:3]),
                           proc.stderr.decode("utf-8", "replace").strip()))
        return proc.stdout

    def text(self, *args, **kw):
        return self.git(*args, **kw).decode("utf-8", "replace")

    def init(self, default_branch):
        os.makedirs(self.path, exist_ok=True)
        subprocess.run(["git", "init", "-q", "--bare",
                        "--initial-branch", default_branch, self.path],
                       check=True, env=_clean_env(),
                       stdout=subprocess.DEVNULL)
        # receivepack: tests push over HTTP without authenticating.
        # Keep-around refs hold old MR heads alive but, as on GitLab, are
        # not advertised; allowAnySHA1InWant still lets clients fetch
        # those heads by SHA, as Gitaly does.
        for key, value in (("http.receivepack", "true"),
                           ("uploadpack.hideRefs", "refs/keep-around"),
                           ("uploadpack.allowAnySHA1InWant", "true"),
                           ("receive.denyNonFastForwards", "false"),
                           ("core.quotePath", "false")):
            self.git("config", key, value)

    def rev_parse(self, rev):
        """The commit SHA `rev` names, or None."""
        out = self.git("rev-parse", "--verify", "--quiet", rev + "^{commit}",
                       ok=(0, 1))
        sha = out.decode().strip()
        return sha or None

    def has_commit(self, sha):
        return self.rev_parse(sha) is not None

    def update_ref(self, ref, new, old=None):
        args = ["update-ref", ref, new]
        if old is not None:
            args.append(old)
        self.git(*args)

    def delete_ref(self, ref):
        self.git("update-ref", "-d", ref, ok=(0, 1))

    def branches(self):
        """{branch name: sha} for every refs/heads/*."""
        out = self.text("for-each-ref", "--format=%(refname:short) "
                        "%(objectname)", "refs/heads/")
        return dict(line.split(" ", 1) for line in out.splitlines() if line)

    def is_ancestor(self, a, b):
        """Is commit a an ancestor of b (or b itself)?"""
        proc = subprocess.run(["git", "--git-dir", self.path, "merge-base",
                               "--is-ancestor", a, b],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=_clean_env())
        return proc.returncode == 0

    def cherry_pick(self, commit, onto, when):
        """commit's change re-applied on onto, author kept, committed at
        `when` (what GitLab's rebase does); None when it does not apply.
        No ref is moved."""
        index = os.path.join(self.path, "sim-index.%d" % os.getpid())
        env = {"GIT_INDEX_FILE": index}
        try:
            self.git("read-tree", onto, env=env)
            patch = self.git("diff", "--binary", "--full-index",
                             commit + "^", commit)
            if patch:
                proc = subprocess.run(
                    ["git", "--git-dir", self.path, "apply", "--cached"],
                    input=patch, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, env=_clean_env(env))
                if proc.returncode:
                    return None
            tree = self.text("write-tree", env=env).strip()
        finally:
            if os.path.exists(index):
                os.unlink(index)
        info = self.commit(commit)
        stamp = "%d +0000" % int(when.timestamp())
        return self.text("commit-tree", tree, "-p", onto,
                         input=info["message"].encode(), env={
                             "GIT_AUTHOR_NAME": info["author_name"],
                             "GIT_AUTHOR_EMAIL": info["author_email"],
                             "GIT_AUTHOR_DATE": info["authored_date"],
                             "GIT_COMMITTER_NAME": info["committer_name"],
                             "GIT_COMMITTER_EMAIL": info["committer_email"],
                             "GIT_COMMITTER_DATE": stamp}).strip()

    def merge_base(self, a, b):
        out = self.text("merge-base", a, b, ok=(0, 1)).strip()
        return out or None

    # -- writing commits without a work tree ------------------------------

    def write_commit(self, parent, files, message, author, when):
        """Create one commit on top of `parent` (or a root commit).

        files maps path -> content (str or bytes) to add or replace, or
        None to delete; a value may also be {"content": ..., "mode":
        "100755"}.  author is {"name", "email"}; `when` an aware datetime.
        Returns the new commit's SHA.  No ref is moved.
        """
        index = os.path.join(self.path, "sim-index.%d" % os.getpid())
        env = {"GIT_INDEX_FILE": index}
        try:
            if parent:
                self.git("read-tree", parent, env=env)
            else:
                self.git("read-tree", "--empty", env=env)
            # --index-info works without a work tree; mode 0 removes a path.
            entries = []
            for path, spec in sorted(files.items()):
                if spec is None:
                    entries.append("0 %s\t%s" % (ZERO_SHA, path))
                    continue
                mode = "100644"
                if isinstance(spec, dict):
                    mode = spec.get("mode", mode)
                    spec = spec.get("content", "")
                data = spec.encode() if isinstance(spec, str) else spec
                blob = self.text("hash-object", "-w", "--stdin",
                                 input=data).strip()
                entries.append("%s %s\t%s" % (mode, blob, path))
            if entries:
                self.git("update-index", "--index-info",
                         input=("\n".join(entries) + "\n").encode(),
                         env=env)
            tree = self.text("write-tree", env=env).strip()
        finally:
            if os.path.exists(index):
                os.unlink(index)
        stamp = "%d +0000" % int(when.timestamp())
        name = author.get("name") or "Sim Author"
        email = author.get("email") or "author@example.com"
        args = ["commit-tree", tree]
        if parent:
            args += ["-p", parent]
        return self.text(*args, input=message.encode(), env={
            "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": stamp,
        }).strip()

    def merge_tree(self, ours, theirs):
        """Tree of merging theirs into ours, or None on conflicts."""
        proc = subprocess.run(
            ["git", "--git-dir", self.path, "merge-tree", "--write-tree",
             "--no-messages", ours, theirs],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_clean_env())
        if proc.returncode == 1:
            return None
        if proc.returncode != 0:
            raise GitError("merge-tree: " + proc.stderr.decode().strip())
        return proc.stdout.decode().split("\n", 1)[0].strip()

    def commit_tree(self, tree, parents, message, who, when):
        stamp = "%d +0000" % int(when.timestamp())
        args = ["commit-tree", tree]
        for p in parents:
            args += ["-p", p]
        return self.text(*args, input=message.encode(), env={
            "GIT_AUTHOR_NAME": who["name"], "GIT_AUTHOR_EMAIL": who["email"],
            "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_NAME": who["name"],
            "GIT_COMMITTER_EMAIL": who["email"],
            "GIT_COMMITTER_DATE": stamp}).strip()

    # -- reading ----------------------------------------------------------

    def commits(self, base, head):
        """Commits in base..head, newest first, as dicts of git fields."""
        rng = head if base is None else "%s..%s" % (base, head)
        return self.log(rng)

    def log(self, *revs):
        fmt = _FS.join(["%H", "%P", "%an", "%ae", "%aI", "%cn", "%ce", "%cI",
                        "%(trailers:unfold,only)", "%B"]) + _RS
        out = self.text("log", "--format=" + fmt, *revs)
        result = []
        for rec in out.split(_RS):
            rec = rec.lstrip("\n")
            if not rec:
                continue
            (sha, parents, an, ae, ad, cn, ce, cd, trailers,
             body) = rec.split(_FS)
            result.append({
                "id": sha, "parent_ids": parents.split(),
                "author_name": an, "author_email": ae, "authored_date": ad,
                "committer_name": cn, "committer_email": ce,
                "committed_date": cd, "message": body,
                "trailers": _parse_trailers(trailers),
            })
        return result

    def commit(self, sha):
        found = self.log("-1", sha)
        return found[0] if found else None

    def diff_files(self, base, head):
        """The diff base..head as a list of DiffFile, renames detected."""
        raw = self.git("diff", "--raw", "-z", "-M", "--full-index",
                       "--no-abbrev", base, head).split(b"\0")
        entries = []
        i = 0
        while i < len(raw) and raw[i]:
            meta = raw[i].decode().lstrip(":").split()
            status = meta[4]
            if status[0] in "RC":
                old_path, new_path = raw[i + 1], raw[i + 2]
                i += 3
            else:
                old_path = new_path = raw[i + 1]
                i += 2
            entries.append((meta[0], meta[1], status,
                            old_path.decode("utf-8", "surrogateescape"),
                            new_path.decode("utf-8", "surrogateescape")))
        patch = self.text("diff", "-M", "--full-index", "--no-color",
                          "--no-ext-diff", base, head)
        chunks = _split_patch(patch)
        if len(chunks) != len(entries):
            raise GitError("diff --raw and -p disagree on the file count")
        files = []
        for (a_mode, b_mode, status, old_path, new_path), chunk in \
                zip(entries, chunks):
            # GitLab's `diff` is the hunks only, without the git headers.
            start = chunk.find("\n@@ ")
            header = chunk if start < 0 else chunk[:start]
            binary = "\nBinary files " in "\n" + header
            hunks = "" if start < 0 or binary else chunk[start + 1:]
            files.append(DiffFile(
                old_path=old_path, new_path=new_path,
                a_mode=str(int(a_mode)) if int(a_mode) == 0 else a_mode,
                b_mode=str(int(b_mode)) if int(b_mode) == 0 else b_mode,
                new_file=status == "A", deleted_file=status == "D",
                renamed_file=status[0] == "R", binary=binary, diff=hunks))
        return files

    def raw_diff(self, base, head):
        return self.text("diff", "-M", "--full-index", "--no-color",
                         "--no-ext-diff", base, head)

    def patch_id(self, base, head):
        """`git patch-id --stable` of base..head (equal for pure rebases)."""
        patch = self.git("diff", "-M", "--full-index", "--no-color", base,
                         head)
        if not patch:
            return None
        out = self.text("patch-id", "--stable", input=patch).split()
        return out[0] if out else None

    def blob_line_count(self, rev, path):
        data = self.git("cat-file", "blob", "%s:%s" % (rev, path), ok=(0, 128))
        if not data:
            return 0
        return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _split_patch(patch):
    """Split `git diff -p` output into one chunk per `diff --git` header."""
    chunks = []
    current = None
    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git "):
            if current is not None:
                chunks.append("".join(current))
            current = []
            continue
        if current is not None:
            current.append(line)
    if current is not None:
        chunks.append("".join(current))
    return chunks


def _parse_trailers(text):
    """git's trailer lines -> ({key: last value}, {key: [values]})."""
    last, every = {}, {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        key, value = line.split(":", 1)
        key, value = key.strip(), value.strip()
        last[key] = value
        every.setdefault(key, []).append(value)
    return last, every
