"""The /_sim/ control API: how tests set up, steer and inspect the simulator.

Not GitLab.  JSON in and out, no authentication, never subject to faults
or rate limits.  README.md documents every endpoint; errors are
{"error": "..."} with 400 (bad request), 404 (unknown thing) or 409.
"""

import datetime

from . import GITLAB_VERSION
from . import entities as ent
from . import errors
from . import seed as seedmod
from .clock import iso, parse_iso8601
from .faults import FaultError
from .forge import SimError
from .gitrepo import GitError
from .web import Response, Router

PREFIX = "/_sim"


class Control:
    def __init__(self, forge, dispatcher, faults, rate_limits, server):
        """server provides pause_listening(seconds) and the request log."""
        self.forge = forge
        self.dispatcher = dispatcher
        self.faults = faults
        self.rate_limits = rate_limits
        self.server = server
        self.startup_seed = None
        self.router = Router()
        r = self.router.add
        r("GET", "/health", self.health)
        r("GET", "/state", self.state)
        r("POST", "/reset", self.reset)
        r("POST", "/seed", self.seed)
        r("GET", "/settings", self.get_settings)
        r("PUT", "/settings", self.put_settings)
        r("POST", "/users", self.create_user)
        r("POST", "/users/:user/emails", self.add_email)
        r("POST", "/tokens", self.create_token)
        r("PUT", "/tokens/:token", self.steer_token)
        r("POST", "/projects", self.create_project)
        r("PUT", "/projects/:id/settings", self.project_settings)
        r("POST", "/projects/:id/move", self.move_project)
        r("POST", "/projects/:id/members", self.add_member)
        r("POST", "/projects/:id/commits", self.create_commits)
        r("POST", "/projects/:id/refresh", self.refresh)
        r("PUT", "/projects/:id/branches/:branch", self.move_branch)
        r("POST", "/projects/:id/merge_requests", self.create_mr)
        r("POST", "/projects/:id/merge_requests/:iid/push", self.push)
        r("POST", "/projects/:id/merge_requests/:iid/clone", self.clone_mr)
        r("POST", "/projects/:id/merge_requests/:iid/rebase", self.rebase)
        r("POST", "/projects/:id/merge_requests/:iid/pipelines",
          self.create_pipeline)
        r("POST", "/projects/:id/pipelines/:pipeline_id/finish",
          self.finish_pipeline)
        r("POST", "/notes/commit", self.commit_notes)
        r("POST", "/rate_limit", self.rate_limit)
        r("GET", "/faults", self.list_faults)
        r("POST", "/faults", self.add_fault)
        r("DELETE", "/faults", self.clear_faults)
        r("POST", "/faults/refuse", self.refuse)
        r("GET", "/time", self.get_time)
        r("POST", "/time", self.move_time)
        r("POST", "/webhooks", self.add_webhook)
        r("POST", "/webhooks/:hook_id/failures", self.hook_failures)
        r("POST", "/webhooks/:hook_id/enable", self.hook_enable)
        r("GET", "/webhooks/deliveries", self.deliveries)
        r("POST", "/webhooks/deliveries/:delivery_id/redeliver",
          self.redeliver)
        r("POST", "/webhooks/wait", self.wait_webhooks)
        r("GET", "/requests", self.requests)
        r("GET", "/openapi", self.openapi)
        r("DELETE", "/requests", self.clear_requests)

    def handle(self, request):
        path = request.path[len(PREFIX):] or "/"
        try:
            handler, args = self.router.resolve(request.method, path)
            body = request.json() if request.method in ("POST", "PUT") \
                else {}
            with self.forge.lock:
                return handler(body, **args)
        except errors.ApiError as e:
            # A GitLab rule refused it (e.g. a label that already exists).
            return Response.error(e)
        except (SimError, FaultError, GitError, KeyError, TypeError,
                ValueError) as e:
            status = getattr(e, "status", 400)
            message = str(e) if not isinstance(e, KeyError) \
                else "missing or unknown field %s" % e
            return Response.json(status, {"error": message})

    # -- lifecycle ------------------------------------------------------------

    def health(self, body):
        return Response.json(200, {"ok": True, "url": self.forge.base_url,
                                   "gitlab_version": GITLAB_VERSION})

    def reset(self, body):
        """Wipe all state; then apply the start-up seed unless told otherwise.

        {"seed": "startup" (default) | "none" | {seed document}}
        """
        choice = body.get("seed", "startup")
        self.forge.reset()
        self.faults.clear()
        self.rate_limits.clear()
        self.dispatcher.reset()
        self.server.clear_request_log()
        made = {}
        if choice == "startup" and self.startup_seed is not None:
            made = seedmod.apply(self.forge, self.startup_seed)
        elif isinstance(choice, dict):
            made = seedmod.apply(self.forge, choice)
        elif choice not in ("none", "startup"):
            raise SimError('seed must be "startup", "none" or a document')
        return Response.json(200, {"reset": True, "seeded": made})

    def seed(self, body):
        return Response.json(201, seedmod.apply(self.forge, body))

    def get_settings(self, body):
        return Response.json(200, dict(self.forge.settings.values))

    def put_settings(self, body):
        self.forge.settings.update(body)
        return Response.json(200, dict(self.forge.settings.values))

    # -- users, tokens, projects ----------------------------------------------

    def create_user(self, body):
        user = self.forge.create_user(
            body["username"], body.get("name"), body.get("email"),
            body.get("public_email", ""), body.get("admin", False),
            body.get("state", "active"), body.get("bot", False))
        for extra in body.get("secondary_emails", ()):
            self.forge.add_email(user, extra["email"],
                                 extra.get("confirmed", True))
        return Response.json(201, _user_state(user))

    def add_email(self, body, user):
        """{"email", "confirmed"?: true}: a secondary email of user."""
        record = self.forge.add_email(self.forge.user(user), body["email"],
                                      body.get("confirmed", True))
        return Response.json(201, ent.email(record))

    def create_token(self, body):
        token = self.forge.create_token(
            self.forge.user(body["user"]), body.get("scopes", ["api"]),
            body.get("token"), body.get("name"))
        if body.get("expires_at"):
            self.forge.set_token(token, _date(body["expires_at"]))
        return Response.json(201, _token_state(self.forge, token))

    def steer_token(self, body, token):
        """{"expires_at"?: "YYYY-MM-DD" | null, "expire"?: true (expires
        today), "revoked"?: bool} -> the token's state."""
        record = self.forge.token(token)
        if record is None:
            raise SimError("no token %r" % token, 404)
        expires_at = False
        if body.get("expire"):
            expires_at = self.forge.now().date()
        elif "expires_at" in body:
            expires_at = _date(body["expires_at"]) \
                if body["expires_at"] else None
        self.forge.set_token(record, expires_at, body.get("revoked"))
        return Response.json(200, _token_state(self.forge, record))

    def create_project(self, body):
        project = self.forge.create_project(
            body["path"], body.get("default_branch", "main"),
            body.get("files"), body.get("empty", False),
            body.get("visibility", "private"), body.get("members"),
            body.get("description", ""), body.get("settings"),
            body.get("author"))
        return Response.json(201, self._project(project))

    def _project(self, project):
        out = ent.project(self.forge, project)
        out["repo_path"] = project.repo_dir
        out["members"] = {self.forge.users[uid].username: level
                          for uid, level in project.members.items()}
        out["settings"] = vars(project.settings)
        return out

    def project_settings(self, body, id):
        project = self.forge.project(id)
        self.forge.update_project_settings(project, body)
        return Response.json(200, vars(project.settings))

    def move_project(self, body, id):
        """{"path": "group/name"}: rename the project or transfer it to
        another group (Projects::UpdateService on a path change,
        Projects::TransferService), as in the UI."""
        project = self.forge.project(id)
        old = self.forge.move_project(project, body["path"])
        out = self._project(project)
        out["previous_path"] = old
        return Response.json(200, out)

    def add_member(self, body, id):
        project = self.forge.project(id)
        self.forge.add_member(project, self.forge.user(body["user"]),
                              body.get("role", "developer"))
        return Response.json(201, self._project(project))

    def create_commits(self, body, id):
        """{"branch", "start"?, "commits": [...]} or one commit inline.
        A commit's "signature" ({"type", "user", "status"?, "title"?})
        says what GitLab would find on it (Forge.sign_commit)."""
        project = self.forge.project(id)
        commits = body.get("commits")
        if commits is None:
            commits = [{k: body[k] for k in ("message", "files", "author",
                                             "signature")
                        if k in body}]
        shas = self.forge.create_commits(project, body["branch"], commits,
                                         start=body.get("start"))
        return Response.json(201, {"branch": body["branch"], "shas": shas,
                                   "head": shas[-1] if shas else None})

    def refresh(self, body, id):
        project = self.forge.project(id)
        actor = self.forge.find_user(body.get("user"))
        created = self.forge.scan_branches(project, actor)
        return Response.json(200, {"updated": [
            {"iid": mr.iid, "version": ent.version(self.forge, mr, v)}
            for mr, v in created]})

    def move_branch(self, body, id, branch):
        """{"sha": SHA} or {"ref": REV}: a push that moves (or makes)
        `branch`.  Open MRs that target it and whose diff has a pushed
        commit get a new version of the same head (Forge.target_pushed);
        MRs whose source branch it is are left to /refresh or /push."""
        project = self.forge.project(id)
        repo = self.forge.repo(project)
        rev = body.get("sha") or body.get("ref")
        new = repo.rev_parse(rev) if rev else None
        if new is None:
            raise SimError("%r is not a commit in the repository" % rev)
        ref = "refs/heads/" + branch
        old = repo.rev_parse(ref)
        repo.update_ref(ref, new)
        made = self.forge.target_pushed(project, branch, old, new)
        return Response.json(200, {"branch": branch, "head": new,
                                   "updated": [
                                       {"iid": mr.iid,
                                        "version": ent.version(
                                            self.forge, mr, v)}
                                       for mr, v in made]})

    # -- merge requests -------------------------------------------------------

    def create_mr(self, body, id):
        project = self.forge.project(id)
        author = self.forge.user(body["author"])
        mr = self.forge.create_mr(
            project, author, body["source_branch"],
            body.get("target_branch"), body.get("title"),
            body.get("description", ""), body.get("draft", False),
            body.get("reviewers", ()), body.get("assignees", ()),
            body.get("labels", ()))
        mr.squash = bool(body.get("squash", False))
        return Response.json(201, ent.mr_full(self.forge, project, mr,
                                              author))

    def clone_mr(self, body, id, iid):
        """{"count": N}: N closed copies of the MR (same version data, no
        git work), for long lists.  Answers {"iids": [...]}."""
        project = self.forge.project(id)
        mr = self.forge.find_mr(project, int(iid))
        if mr is None:
            raise SimError("no merge request !%s" % iid, 404)
        count = int(body.get("count", 1))
        if not 0 < count <= 10000:
            raise SimError("count must be in 1..10000")
        made = self.forge.clone_mrs(project, mr, count)
        return Response.json(201, {"iids": [m.iid for m in made]})

    def rebase(self, body, id, iid):
        """The MR's Rebase button: its commits re-applied on the target's
        tip, a new diff version.  "user" names who rebased (default: the
        author).  Answers {"rebased": bool, "version"}."""
        project = self.forge.project(id)
        mr = self.forge.find_mr(project, int(iid))
        if mr is None:
            raise SimError("no merge request !%s" % iid, 404)
        actor = self.forge.user(body.get("user", mr.author_id))
        version = self.forge.rebase(project, mr, actor)
        return Response.json(200, {
            "rebased": version is not None,
            "version": ent.version(self.forge, mr, version or mr.latest)})

    def push(self, body, id, iid):
        """Move the MR's source branch and record a new diff version.

        {"sha": SHA} (already in the repo, e.g. pushed over HTTP),
        {"ref": "refs/heads/x" or branch name}, or {"commits": [...]}
        to have the simulator write commits on top of the source branch
        (or of "start").  "user" names the pusher (default: the author).
        """
        project = self.forge.project(id)
        mr = self.forge.find_mr(project, int(iid))
        if mr is None:
            raise SimError("no merge request !%s" % iid, 404)
        repo = self.forge.repo(project)
        actor = self.forge.user(body.get("user", mr.author_id))
        branch_ref = "refs/heads/" + mr.source_branch
        if "commits" in body:
            if body.get("start"):
                start = repo.rev_parse(body["start"])
                if start is None:
                    raise SimError("start %r does not exist" % body["start"])
                repo.update_ref(branch_ref, start)
            self.forge.create_commits(project, mr.source_branch,
                                      body["commits"])
            head = repo.rev_parse(branch_ref)
        else:
            rev = body.get("sha") or body.get("ref")
            if not rev:
                raise SimError("give sha, ref or commits")
            head = repo.rev_parse(rev)
            if head is None:
                raise SimError("%r is not a commit in the repository" % rev)
            repo.update_ref(branch_ref, head)
        version = self.forge.push_head(project, mr, head, actor)
        return Response.json(201 if version else 200, {
            "created": version is not None,
            "version": ent.version(self.forge, mr, version or mr.latest)})

    # -- faults, rate limits, time --------------------------------------------

    def create_pipeline(self, body, id, iid):
        """A pipeline for the MR's head, or for {"sha": SHA}, with {"jobs":
        [{"name", "stage", "allow_failure"}]} running (default: one job
        "test"); "source" "push" (a branch pipeline, the default) or
        "merge_request_event".  Answers the pipeline as the API shows it,
        with its jobs' ids by name."""
        project = self.forge.project(id)
        mr = self.forge.find_mr(project, int(iid))
        if mr is None:
            raise SimError("no merge request !%s" % iid, 404)
        source = body.get("source", "push")
        if source not in ("push", "merge_request_event"):
            raise SimError("source must be push or merge_request_event")
        pipeline = self.forge.create_pipeline(
            project, mr, body.get("sha"), body.get("jobs", ()), source)
        out = ent.pipeline_basic(self.forge, project, pipeline)
        out["jobs"] = {j.name: j.id for j in pipeline.jobs}
        return Response.json(201, out)

    def finish_pipeline(self, body, id, pipeline_id):
        """{"results": {NAME: "success"|"failed"|"canceled"|"skipped"},
        "default": STATUS (for the jobs not named; "success"), "traces":
        {NAME: LOG}}: every job finished, the pipeline's status follows
        (again for a pipeline finished before: a retry)."""
        project = self.forge.project(id)
        pipeline = self.forge.find_pipeline(project, int(pipeline_id))
        if pipeline is None:
            raise SimError("no pipeline %s" % pipeline_id, 404)
        self.forge.finish_pipeline(project, pipeline,
                                   body.get("results", {}),
                                   body.get("traces"),
                                   body.get("default", "success"))
        return Response.json(200, ent.pipeline_basic(self.forge, project,
                                                     pipeline))

    def commit_notes(self, body):
        """Commit the notes held by the hold_notes setting."""
        return Response.json(200, {"committed":
                                   self.forge.commit_held_notes()})

    def rate_limit(self, body):
        return Response.json(200, self.rate_limits.configure(body))

    def list_faults(self, body):
        return Response.json(200, self.faults.describe())

    def add_fault(self, body):
        return Response.json(201, self.faults.add(body))

    def clear_faults(self, body):
        self.faults.clear()
        return Response.json(200, [])

    def refuse(self, body):
        """Stop listening for `seconds`: connects fail with ECONNREFUSED."""
        seconds = float(body["seconds"])
        if not 0 < seconds <= 300:
            raise SimError("seconds must be in (0, 300]")
        self.server.pause_listening(seconds)
        return Response.json(200, {"refusing_for_s": seconds})

    def get_time(self, body):
        return Response.json(200, {"now": iso(self.forge.now())})

    def move_time(self, body):
        """{"advance_s": N} or {"set": ISO 8601}; forward only."""
        if "advance_s" in body:
            seconds = float(body["advance_s"])
            if seconds < 0:
                raise SimError("the clock only moves forward")
            self.forge.clock.advance(seconds)
        elif "set" in body:
            when = parse_iso8601(body["set"])
            if when is None:
                raise SimError("set must be an ISO 8601 time")
            self.forge.clock.set(when)
        else:
            raise SimError("give advance_s or set")
        self.forge.expire_head_refs()
        return Response.json(200, {"now": iso(self.forge.now())})

    # -- webhooks -------------------------------------------------------------

    def add_webhook(self, body):
        project = self.forge.project(body.get("project", 1))
        hook = self.forge.add_hook(
            project, body["url"], body.get("token", ""),
            body.get("merge_requests_events", True),
            body.get("note_events", True), body.get("push_events", False),
            body.get("confidential_note_events", False),
            body.get("pipeline_events", False))
        out = ent.hook(self.forge, hook)
        out["uuid"] = hook.uuid
        return Response.json(201, out)

    def hook_failures(self, body, hook_id):
        """{"count": N}: N failed deliveries, as the dispatcher records
        one (Hook.backoff at the simulated time).  Answers the hook."""
        hook = self.forge.find_hook(int(hook_id))
        if hook is None:
            raise SimError("no hook %s" % hook_id, 404)
        for _ in range(int(body.get("count", 1))):
            hook.backoff(self.forge.now())
        return Response.json(200, ent.hook(self.forge, hook))

    def hook_enable(self, body, hook_id):
        """The "Enable" of Settings > Webhooks (or a delivery that
        worked): the failures forgotten."""
        hook = self.forge.find_hook(int(hook_id))
        if hook is None:
            raise SimError("no hook %s" % hook_id, 404)
        hook.enable()
        return Response.json(200, ent.hook(self.forge, hook))

    def deliveries(self, body):
        return Response.json(200, self.dispatcher.snapshot())

    def redeliver(self, body, delivery_id):
        new_id = self.dispatcher.redeliver(int(delivery_id))
        if new_id is None:
            raise SimError("no delivery %s" % delivery_id, 404)
        return Response.json(201, {"id": new_id})

    def wait_webhooks(self, body):
        # Waiting must not hold the forge lock: the dispatcher's deliveries
        # may trigger receivers that call back into the API.
        self.forge.lock.release()
        try:
            idle = self.dispatcher.wait_idle(float(body.get("timeout_s", 10)))
        finally:
            self.forge.lock.acquire()
        return Response.json(200 if idle else 504, {"idle": idle})

    def requests(self, body):
        return Response.json(200, self.server.request_log())

    def openapi(self, body):
        """The OpenAPI conformance counts (404 when not checking)."""
        checker = getattr(self.server, "conformance", None)
        if checker is None:
            raise SimError("not checking against the OpenAPI document "
                           "(start with --openapi-report)", 404)
        return Response.json(200, checker.snapshot())

    def clear_requests(self, body):
        self.server.clear_request_log()
        return Response.json(200, [])

    # -- inspection -----------------------------------------------------------

    def state(self, body):
        forge = self.forge
        return Response.json(200, {
            "now": iso(forge.now()),
            "settings": dict(forge.settings.values),
            "users": [_user_state(u) for u in forge.users.values()],
            "tokens": [_token_state(forge, t)
                       for t in forge.tokens.values()],
            "projects": [self._project_state(p)
                         for p in forge.projects.values()],
            "faults": self.faults.describe(),
            "rate_limits": self.rate_limits.describe(),
        })

    def _project_state(self, project):
        forge = self.forge
        out = self._project(project)
        out["labels"] = [{"id": lb.id, "name": lb.name, "color": lb.color}
                         for lb in project.labels]
        out["hooks"] = [ent.hook(forge, h) for h in project.hooks]
        out["branches"] = forge.repo(project).branches()
        out["merge_requests"] = [self._mr_state(project, mr)
                                 for mr in project.mrs.values()]
        return out

    def _mr_state(self, project, mr):
        forge = self.forge
        return {
            "id": mr.id, "iid": mr.iid, "title": mr.title,
            "state": mr.state, "draft": mr.draft,
            "author": forge.users[mr.author_id].username,
            "source_branch": mr.source_branch,
            "target_branch": mr.target_branch,
            "labels": forge.label_names(project, mr),
            "created_at": iso(mr.created_at),
            "updated_at": iso(mr.updated_at),
            "detailed_merge_status": forge.detailed_merge_status(project,
                                                                 mr),
            "merge_commit_sha": mr.merge_commit_sha,
            "squash_commit_sha": mr.squash_commit_sha,
            "approvals": [{"user": forge.users[a.user_id].username,
                           "at": iso(a.created_at)} for a in mr.approvals],
            "versions": [dict(ent.version(forge, mr, v),
                              files=[f.new_path for f in v.files],
                              commits=[c["id"] for c in v.commits])
                         for v in mr.versions],
            "discussions": [{
                "id": d.id, "individual_note": d.individual_note,
                "notes": [{
                    "id": n.id, "type": n.type, "body": n.body,
                    "author": forge.users[n.author_id].username,
                    "system": n.system, "internal": n.internal,
                    "held": n.held,
                    "created_at": iso(n.created_at),
                    "position": n.position, "line_code": n.line_code,
                    "version_id": n.version_id,
                    "resolved": n.resolved,
                } for n in d.notes]} for d in mr.discussions],
        }


def _user_state(user):
    return {"id": user.id, "username": user.username, "name": user.name,
            "email": user.email, "public_email": user.public_email,
            "admin": user.admin, "state": user.state,
            "secondary_emails": [ent.email(e)
                                 for e in user.secondary_emails]}


def _date(text):
    try:
        return datetime.date.fromisoformat(str(text)[:10])
    except ValueError:
        raise SimError("expires_at must be a date (YYYY-MM-DD)")


def _token_state(forge, t):
    return {"token": t.token, "user_id": t.user_id,
            "user": forge.users[t.user_id].username, "scopes": t.scopes,
            "impersonation": t.impersonation,
            "expires_at": t.expires_at.isoformat() if t.expires_at else None,
            "revoked": t.revoked, "expired": forge.token_expired(t)}
