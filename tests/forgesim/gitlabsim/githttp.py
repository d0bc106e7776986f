"""git smart HTTP, served by git's own git-http-backend (CGI).

URLs are GitLab's: http://HOST/<group>/<project>.git/info/refs etc.  Both
upload-pack (clone, fetch) and receive-pack (push) are enabled.  A fetch
needs no credentials (the simulator's projects are public); a push needs
them, as on GitLab: HTTP Basic with any non-blank user name and a token
as the password (doc/user/profile/personal_access_tokens.md, "Git over
HTTPS"), of a user with at least the Developer role.  After a push the
forge re-reads the branches, so pushing a merge request's source branch
creates a new diff version exactly as on GitLab.
"""

import base64
import binascii
import os
import re
import subprocess

from .model import DEVELOPER
from .web import Response

HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"

_GIT_PATH = re.compile(
    r"^/(?P<repo>[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)+)"
    r"\.git"
    r"(?P<rest>/(?:info/refs|git-upload-pack|git-receive-pack|HEAD|"
    r"objects/.*))$")


def match(path):
    return _GIT_PATH.match(path)


def _is_push(request, m):
    rest = m.group("rest")
    return rest == "/git-receive-pack" or (
        rest == "/info/refs" and
        "service=git-receive-pack" in request.query_string.split("&"))


def _push_refusal(forge, request, repo):
    """None when the request may push, else the answer GitLab gives.

    app/controllers/repositories/git_http_client_controller.rb
    (authenticate_user): without usable credentials a 401 with the Basic
    challenge of realm "GitLab", the text git shows as "remote: HTTP
    Basic: Access denied"; lib/gitlab/auth.rb (find_for_git_client,
    personal_access_token_check): the password is a token with the
    write_repository or api scope, not expired or revoked; app/
    controllers/repositories/git_http_controller.rb (access_check, through
    lib/gitlab/git_access.rb): pushing needs the Developer role."""
    denied = Response.text(401, "HTTP Basic: Access denied\n",
                           headers={"WWW-Authenticate":
                                    'Basic realm="GitLab"'})
    auth = request.header("Authorization") or ""
    if auth[:6].lower() != "basic ":
        return denied
    try:
        pair = base64.b64decode(auth[6:].strip(), validate=True)
        user, sep, secret = pair.decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return denied
    if not sep or not user or not secret:
        return denied
    with forge.lock:
        token = forge.token(secret)
        if token is None or token.revoked or forge.token_expired(token):
            return denied
        if not set(token.scopes) & {"api", "write_repository"}:
            return Response.text(403, "HTTP Basic: Access denied\n")
        project = forge.project_for_repo_path(repo)
        pusher = forge.users.get(token.user_id)
        if project is None or \
                forge.access_level(project, pusher) < DEVELOPER:
            return Response.text(
                403, "You are not allowed to push code to this project.\n")
    return None


def serve(forge, request, m):
    if _is_push(request, m):
        refusal = _push_refusal(forge, request, m.group("repo"))
        if refusal is not None:
            return refusal
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
