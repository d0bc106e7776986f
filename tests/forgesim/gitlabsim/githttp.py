"""git smart HTTP, served by git's own git-http-backend (CGI).

URLs are GitLab's: http://HOST/<group>/<project>.git/info/refs etc.  Both
upload-pack (clone, fetch) and receive-pack (push) are enabled and need no
credentials.  After a push the forge re-reads the branches, so pushing a
merge request's source branch creates a new diff version exactly as on
GitLab.
"""

import os
import re
import subprocess

from .web import Response

HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"

_GIT_PATH = re.compile(
    r"^/(?P<repo>[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)+)"
    r"\.git"
    r"(?P<rest>/(?:info/refs|git-upload-pack|git-receive-pack|HEAD|"
    r"objects/.*))$")


def match(path):
    return _GIT_PATH.match(path)


def serve(forge, request, m):
    relpath = forge.repo_relpath(m.group("repo"))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_PROJECT_ROOT": forge.repo_root,
        "GIT_HTTP_EXPORT_ALL": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "HOME": "/nonexistent",
        "REQUEST_METHOD": request.method,
        "PATH_INFO": "/%s.git%s" % (relpath, m.group("rest")),
        "QUERY_STRING": request.query_string,
        "CONTENT_TYPE": request.header("Content-Type", ""),
        "CONTENT_LENGTH": str(len(request.body)),
        "REMOTE_ADDR": request.client,
        "REMOTE_USER": "forgesim",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "GATEWAY_INTERFACE": "CGI/1.1",
    }
    for header, var in (("Git-Protocol", "GIT_PROTOCOL"),
                        ("Content-Encoding", "HTTP_CONTENT_ENCODING")):
        value = request.header(header)
        if value:
            env[var] = value
    proc = subprocess.run([HTTP_BACKEND], input=request.body, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          check=False)
    response = _parse_cgi(proc.stdout)
    if request.method == "POST" and m.group("rest") == "/git-receive-pack":
        forge.after_receive_pack(m.group("repo"))
    return response


def _parse_cgi(output):
    head, _, body = output.partition(b"\r\n\r\n")
    if not _:
        head, _, body = output.partition(b"\n\n")
    status, headers = 200, {}
    for line in head.decode("latin-1").splitlines():
        if ":" not in line:
            continue
        key, value = line.split(":", 1)
        if key.lower() == "status":
            status = int(value.strip().split()[0])
        else:
            headers[key.strip()] = value.strip()
    return Response(status, body, headers)
