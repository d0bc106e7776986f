"""Seed documents: users, tokens, projects, branches and MRs in one JSON.

The same format feeds --seed FILE at start-up, POST /_sim/seed and
POST /_sim/reset {"seed": ...}.  seed-default.json beside forgesim.py is
the default; README.md lists its fixed names and tokens.

{
  "settings": {...},                       # POST /_sim/settings keys
  "users":  [{"username", "name", "email", "public_email", "admin"}],
  "tokens": [{"token", "user", "scopes": ["api", "sudo"]}],
  "projects": [{
      "path": "group/project", "default_branch": "main",
      "visibility": "private", "members": {"alice": "developer"},
      "settings": {...},                   # project settings
      "files": {"README.md": "..."},       # initial commit (or "empty": true)
      "branches": [{"name": "feature", "from": "main",
                    "commits": [{"message", "files", "author"}]}],
      "merge_requests": [{"source_branch", "target_branch", "title",
                          "description", "author", "draft", "labels",
                          "reviewers", "assignees"}]
  }]
}
"""

import json
import os

from .forge import SimError

DEFAULT_SEED = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "seed-default.json")


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def apply(forge, doc):
    """Create everything in `doc`; returns a summary of what was made."""
    if not isinstance(doc, dict):
        raise SimError("a seed document is a JSON object")
    made = {"users": [], "tokens": [], "projects": [], "merge_requests": []}
    with forge.lock:
        if "settings" in doc:
            forge.settings.update(doc["settings"])
        for spec in doc.get("users", []):
            user = forge.create_user(
                spec["username"], spec.get("name"), spec.get("email"),
                spec.get("public_email", ""), spec.get("admin", False),
                spec.get("state", "active"), spec.get("bot", False))
            made["users"].append(user.username)
        for spec in doc.get("tokens", []):
            token = forge.create_token(forge.user(spec["user"]),
                                       spec.get("scopes", ["api"]),
                                       spec.get("token"), spec.get("name"))
            made["tokens"].append(token.token)
        for spec in doc.get("projects", []):
            _project(forge, spec, made)
    return made


def _project(forge, spec, made):
    project = forge.create_project(
        spec["path"], spec.get("default_branch", "main"), spec.get("files"),
        spec.get("empty", False), spec.get("visibility", "private"),
        spec.get("members"), spec.get("description", ""),
        spec.get("settings"))
    made["projects"].append(project.full_path)
    for branch in spec.get("branches", []):
        forge.create_commits(project, branch["name"], branch.get("commits",
                                                                 []),
                             start=branch.get("from",
                                              project.default_branch))
    for mr_spec in spec.get("merge_requests", []):
        author = forge.user(mr_spec["author"])
        mr = forge.create_mr(
            project, author, mr_spec["source_branch"],
            mr_spec.get("target_branch"), mr_spec.get("title"),
            mr_spec.get("description", ""), mr_spec.get("draft", False),
            mr_spec.get("reviewers", ()), mr_spec.get("assignees", ()),
            mr_spec.get("labels", ()))
        made["merge_requests"].append("%s!%d" % (project.full_path, mr.iid))
