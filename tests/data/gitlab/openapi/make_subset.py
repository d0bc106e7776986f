#!/usr/bin/python3
"""Cut the operations patchbridge and its GitLab simulator use out of
GitLab's OpenAPI document (doc/api/openapi/openapi_v3.yaml), with every
schema they reference, unchanged otherwise, and write it as JSON (the
same OpenAPI document; the simulator reads it with the standard library).

    make_subset.py FULL.yaml bridge-v4.json

The list below is the contract: an operation the bridge starts to call,
or the simulator starts to serve, is added here and the subset cut again.
"""

import json
import re
import sys

import yaml  # Debian python3-yaml: only to read GitLab's YAML

# (method, path) of every operation kept; "*" keeps every method.
OPERATIONS = [
    ("get", "/api/v4/version"),
    ("get", "/api/v4/application/settings"),
    ("get", "/api/v4/user"),
    ("get", "/api/v4/users"),
    ("get", "/api/v4/users/{id}"),
    ("get", "/api/v4/users/{id}/emails"),
    ("*", "/api/v4/users/{user_id}/impersonation_tokens"),
    ("get", "/api/v4/projects/{id}"),
    ("*", "/api/v4/projects/{id}/labels"),
    ("*", "/api/v4/projects/{id}/hooks"),
    ("get", "/api/v4/projects/{id}/repository/commits/{sha}"),
    ("get", "/api/v4/projects/{id}/repository/commits/{sha}/signature"),
    ("*", "/api/v4/projects/{id}/merge_requests"),
    ("*", "/api/v4/projects/{id}/merge_requests/{merge_request_iid}"),
] + [("*", "/api/v4/projects/{id}/merge_requests/{merge_request_iid}/" + s)
     for s in ("commits", "diffs", "raw_diffs", "changes", "versions",
               "versions/{version_id}", "merge", "approve", "unapprove",
               "approvals", "approval_state", "pipelines")] + [
    ("get", "/api/v4/projects/{id}/pipelines/{pipeline_id}/jobs"),
    ("get", "/api/v4/projects/{id}/jobs/{job_id}/trace"),
] + [
    ("*", "/api/v4/projects/{id}/merge_requests/{noteable_id}/" + s)
    for s in ("notes", "notes/{note_id}", "discussions",
              "discussions/{discussion_id}", "discussions/{discussion_id}/notes",
              "discussions/{discussion_id}/notes/{note_id}")]

METHODS = ("get", "put", "post", "delete", "patch", "head")


def main(src, out):
    with open(src) as f:
        doc = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    paths = {}
    for method, path in OPERATIONS:
        item = doc["paths"].get(path)
        if item is None:
            sys.exit("%s: no path %s" % (src, path))
        kept = paths.setdefault(path, {k: v for k, v in item.items()
                                       if k not in METHODS})
        for m in METHODS:
            if m in item and method in ("*", m):
                kept[m] = item[m]
    schemas = doc["components"]["schemas"]
    need = set()

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "$ref" and isinstance(v, str) and \
                        v.startswith("#/components/schemas/"):
                    name = v.rsplit("/", 1)[1]
                    if name not in need:
                        need.add(name)
                        walk(schemas[name])
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(paths)
    tags = {t for item in paths.values() for m, op in item.items()
            if m in METHODS for t in op.get("tags", [])}
    sub = {
        "openapi": doc["openapi"],
        "info": dict(doc["info"], title=doc["info"]["title"] +
                     " (the operations patchbridge uses)"),
        "servers": doc.get("servers"),
        "security": doc.get("security"),
        "tags": [t for t in doc.get("tags", []) if t["name"] in tags],
        "paths": paths,
        "components": {
            "schemas": {n: schemas[n] for n in sorted(need)},
            "securitySchemes": doc["components"].get("securitySchemes", {}),
        },
    }
    with open(out, "w") as f:
        json.dump(sub, f, indent=1, ensure_ascii=False)
        f.write("\n")
    ops = sum(1 for item in paths.values() for m in item if m in METHODS)
    print("%d paths, %d operations, %d schemas" % (len(paths), ops,
                                                    len(need)))


if __name__ == "__main__":
    if len(sys.argv) != 3 or not re.search(r"\.json$", sys.argv[2]):
        sys.exit("usage: make_subset.py FULL.yaml OUT.json")
    main(sys.argv[1], sys.argv[2])
