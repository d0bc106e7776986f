"""The /api/v4 routes: GitLab's REST behaviour for the calls patchbridge makes.

Each handler follows GitLab's order of checks, because clients see the first
failure only: route (Grape 404/405), authentication and Sudo (401/403/404),
parameter validation (Grape 400), then the endpoint's own lookups and
permission checks (404 before 403, as GitLab hides what you cannot read).
"""

import urllib.parse

from . import GITLAB_REVISION, GITLAB_VERSION
from . import entities as ent
from . import errors
from .forge import SimError
from .model import DEVELOPER, MAINTAINER, OWNER, REPORTER
from .pagination import paginate
from .params import Params, parse_body, parse_query
from .web import Response, Router

PREFIX = "/api/v4"

_MR = "/projects/:id/merge_requests/:iid"
_NOTES = "/projects/:id/merge_requests/:noteable_id"

# PUT /merge_requests/:iid needs at least one of these (Grape at_least_one_of).
_MR_UPDATE_PARAMS = (
    "add_labels", "allow_collaboration", "allow_maintainer_to_push",
    "assignee_id", "assignee_ids", "description", "discussion_locked",
    "labels", "merge_after", "milestone_id", "remove_labels",
    "remove_source_branch", "reviewer_ids", "squash", "state_event",
    "target_branch", "title")


class Context:
    """Per-request state: who is asking, and the merged parameters."""

    def __init__(self, forge, request):
        self.forge = forge
        self.request = request
        values = parse_query(request.query_string)
        values.update(parse_body(request.header("Content-Type"),
                                 request.body))
        self.values = values
        self.params = Params(values)
        self.token = None
        self.user = None
        self.route_args = {}

    # -- authentication (lib/api/helpers.rb find_current_user!, sudo!) -------

    def authenticate(self, required):
        secret = self.request.header("PRIVATE-TOKEN") or \
            self.values.get("private_token") or \
            self.values.get("access_token")
        auth = self.request.header("Authorization") or ""
        if not secret and auth[:7].lower() == "bearer ":
            secret = auth[7:].strip()
        if secret:
            self.token = self.forge.token(str(secret))
            if self.token is None:
                raise errors.unauthorized()
            # AccessTokenValidationService#validate (app/services/
            # access_token_validation_service.rb): expired, then revoked,
            # then the scopes; lib/gitlab/auth/auth_finders.rb raises
            # ExpiredError/RevokedError, answered in lib/api/api_guard.rb.
            if self.forge.token_expired(self.token):
                raise errors.invalid_token(errors.TOKEN_EXPIRED)
            if self.token.revoked:
                raise errors.invalid_token(errors.TOKEN_REVOKED)
            self.user = self.forge.users[self.token.user_id]
            self._check_scope()
        sudo = self.request.header("Sudo") or self.values.get("sudo")
        if sudo:
            self._sudo(str(sudo))
        if required and self.user is None:
            raise errors.unauthorized()

    def _check_scope(self):
        scopes = set(self.token.scopes)
        if self.request.method in ("GET", "HEAD"):
            if not scopes & {"api", "read_api"}:
                raise errors.insufficient_scope("api read_api")
        elif "api" not in scopes:
            raise errors.insufficient_scope("api")

    @property
    def admin(self):
        """current_user.can_admin_all_resources?: with Admin Mode on,
        only through a token with the admin_mode scope."""
        return self.forge.can_admin_all(self.user, self.token)

    def _sudo(self, ident):
        # lib/api/helpers.rb sudo!: can_admin_all_resources? first (so an
        # administrator's token without admin_mode under Admin Mode gets
        # "Must be admin to use sudo" too), then the sudo scope, then the
        # user.
        if self.user is None:
            raise errors.unauthorized()
        if not self.admin:
            raise errors.forbidden("Must be admin to use sudo")
        if "sudo" not in self.token.scopes:
            raise errors.insufficient_scope("sudo")
        target = self.forge.find_user(ident)
        if target is None:
            raise errors.not_found("User with ID or username '%s'" % ident)
        self.user = target

    # -- lookups --------------------------------------------------------------

    def project(self, ident):
        project = self.forge.find_project(ident, follow_redirects=True)
        if project is None or \
                not self.forge.can_read_project(project, self.user):
            raise errors.not_found("Project")
        # lib/api/helpers.rb find_project!: a path the project no longer
        # has (project_moved?) redirects a GET to the same URL with the
        # numeric id (url_with_project_id) and refuses everything else.
        ident = str(ident)
        if "/" in ident and project.full_path.lower() != ident.lower():
            if self.request.method not in ("GET", "HEAD"):
                raise errors.not_allowed(
                    "Non GET methods are not allowed for moved projects")
            raise errors.moved(self._url_with_project_id(project))
        return project

    def _url_with_project_id(self, project):
        """The request's own URL (Rack::Request#url: its host, path and
        query) with the :id segment replaced by the project's id."""
        segs = self.request.path.split("/")
        # /api/v4/projects/:id/...
        segs[4] = str(project.id)
        url = self.request.base_url + "/".join(segs)
        if self.request.query_string:
            url += "?" + self.request.query_string
        return url

    def mr(self, project, iid):
        return self.forge.mr_by_iid(project, iid)

    def noteable(self, project, iid):
        """find_noteable: not_found!(MergeRequest), the class name."""
        mr = self.forge.find_mr(project, iid)
        if mr is None:
            raise errors.not_found("MergeRequest")
        return mr

    def page(self, items, render):
        """One page of `items` rendered, with GitLab's pagination headers."""
        chunk, headers = paginate(self.request, items, self.params,
                                  self.forge.settings.pagination_totals_limit,
                                  self.forge.external_url(), self.route_args)
        return Response.json(200, [render(x) for x in chunk], headers)


def _iid(params, name):
    value = params.integer(name, required=True)
    params.check()
    return value


class Api:
    def __init__(self, forge):
        self.forge = forge
        self.router = Router()
        r = self.router.add
        # Where GitLab defines each route (gitlab-org/gitlab):
        # lib/api/version.rb
        r("GET", "/version", self.version)
        # lib/api/users.rb (and lib/api/entities/user*.rb, email.rb)
        r("GET", "/user", self.current_user)
        r("GET", "/users", self.list_users)
        r("GET", "/users/:user_id", self.get_user)
        r("GET", "/users/:user_id/emails", self.list_user_emails)
        r("GET", "/users/:user_id/impersonation_tokens", self.list_imp_tokens)
        r("POST", "/users/:user_id/impersonation_tokens",
          self.create_imp_token)
        # lib/api/personal_access_tokens/self_information.rb
        r("GET", "/personal_access_tokens/self", self.token_self)
        # lib/api/settings.rb
        r("GET", "/application/settings", self.app_settings)
        # lib/api/projects.rb, labels.rb, project_hooks.rb, commits.rb
        r("GET", "/projects/:id", self.get_project)
        r("GET", "/projects/:id/labels", self.list_labels)
        r("POST", "/projects/:id/labels", self.create_label)
        r("GET", "/projects/:id/hooks", self.list_hooks)
        r("POST", "/projects/:id/hooks", self.create_hook)
        r("GET", "/projects/:id/repository/commits/:sha", self.get_commit)
        r("GET", "/projects/:id/repository/commits/:sha/signature",
          self.commit_signature)
        # lib/api/merge_requests.rb (entities: lib/api/entities/
        # merge_request*.rb, merge_request_diff*.rb)
        r("GET", "/projects/:id/merge_requests", self.list_mrs)
        r("POST", "/projects/:id/merge_requests", self.create_mr)
        r("GET", _MR, self.get_mr)
        r("PUT", _MR, self.update_mr)
        r("GET", _MR + "/commits", self.mr_commits)
        r("GET", _MR + "/diffs", self.mr_diffs)
        r("GET", _MR + "/raw_diffs", self.mr_raw_diffs)
        r("GET", _MR + "/changes", self.mr_changes)
        r("GET", _MR + "/versions", self.list_versions)
        r("GET", _MR + "/versions/:version_id", self.get_version)
        r("PUT", _MR + "/merge", self.merge)
        r("GET", _MR + "/pipelines", self.mr_pipelines)
        # lib/api/ci/jobs.rb (entities: lib/api/entities/ci/job*.rb)
        r("GET", "/projects/:id/pipelines/:pipeline_id/jobs",
          self.pipeline_jobs)
        r("GET", "/projects/:id/jobs/:job_id/trace", self.job_trace)
        # lib/api/merge_request_approvals.rb (approval_state: EE's
        # ee/lib/ee/api/merge_request_approvals.rb)
        r("POST", _MR + "/approve", self.approve)
        r("POST", _MR + "/unapprove", self.unapprove)
        r("GET", _MR + "/approvals", self.get_approvals)
        r("GET", _MR + "/approval_state", self.get_approval_state)
        # lib/api/notes.rb with lib/api/helpers/notes_helpers.rb
        r("GET", _NOTES + "/notes", self.list_notes)
        r("POST", _NOTES + "/notes", self.create_note)
        r("GET", _NOTES + "/notes/:note_id", self.get_note)
        r("PUT", _NOTES + "/notes/:note_id", self.update_note)
        r("DELETE", _NOTES + "/notes/:note_id", self.delete_note)
        # lib/api/discussions.rb
        r("GET", _NOTES + "/discussions", self.list_discussions)
        r("POST", _NOTES + "/discussions", self.create_discussion)
        r("GET", _NOTES + "/discussions/:discussion_id",
          self.get_discussion)
        r("PUT", _NOTES + "/discussions/:discussion_id",
          self.resolve_discussion)
        r("GET", _NOTES + "/discussions/:discussion_id/notes",
          self.list_discussion_notes)
        r("POST", _NOTES + "/discussions/:discussion_id/notes",
          self.reply)
        r("GET", _NOTES + "/discussions/:discussion_id/notes/:note_id",
          self.get_discussion_note)
        r("PUT", _NOTES + "/discussions/:discussion_id/notes/:note_id",
          self.update_discussion_note)
        r("DELETE", _NOTES + "/discussions/:discussion_id/notes/:note_id",
          self.delete_discussion_note)

    def handle(self, request):
        """Answer one /api/v4 request; returns (Response, log details)."""
        path = request.path[len(PREFIX):] or "/"
        # Grape answers HEAD like GET (the server then omits the body).
        method = "GET" if request.method == "HEAD" else request.method
        ctx = None
        try:
            handler, args = self.router.resolve(method, path)
            with self.forge.lock:
                ctx = Context(self.forge, request)
                ctx.route_args = args
                # Notes and discussions authenticate every call; the rest
                # only writes (authenticate_non_get!) or /user.
                needs_user = method != "GET" or "/notes" in path or \
                    "/discussions" in path or path == "/user"
                ctx.authenticate(needs_user)
                response = handler(ctx, **args)
        except errors.Moved as e:
            # lib/api/api.rb: rescue_from MovedPermanentlyError answers
            # its message as plain text with Location.
            response = Response.text(
                301, "This resource has been moved permanently to %s" %
                e.location, headers={"Location": e.location})
        except errors.ApiError as e:
            response = Response.error(e)
        except SimError as e:
            response = Response.json(e.status, {"message": str(e)})
        return response, _log_details(ctx)

    # -- instance and users --------------------------------------------------

    def version(self, ctx):
        return Response.json(200, {
            "version": GITLAB_VERSION, "revision": GITLAB_REVISION,
            "kas": {"enabled": False, "externalUrl": None, "version": None},
            "enterprise": self.forge.settings.edition == "ee"})

    def current_user(self, ctx):
        # lib/api/users.rb get "user": UserWithAdmin (is_admin ...) only
        # for can_admin_all_resources?, else UserPublic.
        return Response.json(200, ent.current_user(self.forge, ctx.user,
                                                   ctx.admin))

    def token_self(self, ctx):
        """GET /personal_access_tokens/self (lib/api/
        personal_access_tokens/self_information.rb; doc/api/
        personal_access_tokens.md): the token that makes the request."""
        if ctx.token is None:
            raise errors.unauthorized()
        return Response.json(200, ent.token(self.forge, ctx.token))

    def app_settings(self, ctx):
        """GET /application/settings: administrators only (lib/api/
        settings.rb authenticated_as_admin!: 401 without a user, 403
        for anyone else); Entities::ApplicationSetting, of which the
        simulator keeps commit_email_hostname."""
        if ctx.user is None:
            raise errors.unauthorized()
        if not ctx.admin:
            raise errors.forbidden()
        return Response.json(200, {
            "id": 1,
            "commit_email_hostname": self.forge.commit_email_hostname()})

    def list_user_emails(self, ctx, user_id):
        """GET /users/:id/emails: administrators only (lib/api/users.rb
        authenticated_as_admin!), every secondary email with its
        confirmed_at (lib/api/entities/email.rb)."""
        user = self._admin_target(ctx, user_id)
        return ctx.page(list(user.secondary_emails), ent.email)

    def list_users(self, ctx):
        p = ctx.params
        search = p.string("search")
        username = p.string("username")
        public_email = p.string("public_email")
        active = p.boolean("active")
        blocked = p.boolean("blocked")
        p.check()
        admin = ctx.admin
        users = sorted(self.forge.users.values(), key=lambda u: u.id)
        if username is not None:
            users = [u for u in users
                     if u.username.lower() == username.lower()]
        if public_email:
            users = [u for u in users if u.public_email and
                     u.public_email.lower() == public_email.lower()]
        if active:
            users = [u for u in users if u.state == "active"]
        if blocked:
            users = [u for u in users if u.state == "blocked"]
        if search:
            users = _search_users(users, search, admin)
        render = ent.user_admin if admin else ent.user_basic
        return ctx.page(users, lambda u: render(self.forge, u))

    def get_user(self, ctx, user_id):
        uid = _iid(Params({"id": user_id}), "id")
        user = self.forge.users.get(uid)
        if user is None:
            raise errors.not_found("User")
        if ctx.admin:
            return Response.json(200, ent.user_admin(self.forge, user))
        return Response.json(200, ent.user_public(self.forge, user))

    def _admin_target(self, ctx, user_id):
        uid = _iid(Params({"user_id": user_id}), "user_id")
        if ctx.user is None or not ctx.admin:
            raise errors.forbidden()
        user = self.forge.users.get(uid)
        if user is None:
            raise errors.not_found("User")
        return user

    def list_imp_tokens(self, ctx, user_id):
        user = self._admin_target(ctx, user_id)
        tokens = [t for t in self.forge.tokens.values()
                  if t.user_id == user.id and t.impersonation]
        return ctx.page(tokens, lambda t: ent.token(self.forge, t))

    def create_imp_token(self, ctx, user_id):
        p = ctx.params
        name = p.string("name", required=True)
        scopes = p.string_list("scopes")
        if scopes is None:
            p.errors.append("scopes is missing")
        p.check()
        user = self._admin_target(ctx, user_id)
        try:
            token = self.forge.create_token(user, scopes, name=name,
                                            impersonation=True)
        except SimError as e:
            raise errors.message(400, {"scopes": [str(e)]})
        return Response.json(201, ent.token(self.forge, token, True))

    # -- projects, labels, hooks, commits -------------------------------------

    def get_project(self, ctx, id):
        project = ctx.project(id)
        return Response.json(200, ent.project(self.forge, project))

    def list_labels(self, ctx, id):
        project = ctx.project(id)
        labels = sorted(project.labels, key=lambda lb: lb.name.lower())
        return ctx.page(labels,
                        lambda lb: ent.label(self.forge, project, lb))

    def create_label(self, ctx, id):
        p = ctx.params
        name = p.string("name", required=True)
        color = p.string("color", required=True)
        description = p.string("description")
        p.check()
        project = ctx.project(id)
        if self.forge.access_level(project, ctx.user) < REPORTER:
            raise errors.forbidden()
        label = self.forge.create_label(project, name, color, description)
        return Response.json(201, ent.label(self.forge, project, label))

    def list_hooks(self, ctx, id):
        project = ctx.project(id)
        if self.forge.access_level(project, ctx.user) < MAINTAINER:
            raise errors.forbidden()
        return ctx.page(project.hooks, lambda h: ent.hook(self.forge, h))

    def create_hook(self, ctx, id):
        p = ctx.params
        url = p.string("url", required=True)
        token = p.string("token", default="")
        mr_events = p.boolean("merge_requests_events", default=False)
        note_events = p.boolean("note_events", default=False)
        confidential = p.boolean("confidential_note_events", default=False)
        push_events = p.boolean("push_events", default=True)
        p.check()
        project = ctx.project(id)
        if self.forge.access_level(project, ctx.user) < MAINTAINER:
            raise errors.forbidden()
        if not _loopback_url(url):
            raise errors.message(422, "Invalid url given")
        hook = self.forge.add_hook(project, url, token, mr_events,
                                   note_events, push_events, confidential)
        return Response.json(201, ent.hook(self.forge, hook))

    def _commit(self, ctx, id, sha):
        """The project and the commit :sha names (a SHA, a branch or a
        tag), or 404 "Commit Not Found" (lib/api/commits.rb)."""
        project = ctx.project(id)
        repo = self.forge.repo(project)
        resolved = repo.rev_parse(sha) if sha and not sha.startswith("-") \
            else None
        if resolved is None:
            raise errors.not_found("Commit")
        return project, resolved

    def get_commit(self, ctx, id, sha):
        project, resolved = self._commit(ctx, id, sha)
        return Response.json(200, ent.commit_detail(
            self.forge, project, self.forge.repo(project).commit(resolved)))

    def commit_signature(self, ctx, id, sha):
        """lib/api/commits.rb "Get the signature of a commit" (doc/api/
        commits.md "Get signature of a commit"): 404 "Commit Not Found"
        for no such commit, 404 "GPG Signature Not Found" for an unsigned
        one (the words of the documented example), else
        Entities::CommitSignature."""
        project, resolved = self._commit(ctx, id, sha)
        if resolved not in project.signatures:
            raise errors.not_found("GPG Signature")
        return Response.json(200, ent.commit_signature(
            self.forge, project, resolved,
            self.forge.signature_status(project, resolved)))

    # -- merge requests -------------------------------------------------------

    def list_mrs(self, ctx, id):
        p = ctx.params
        state = p.string("state", default="all", values=(
            "opened", "closed", "locked", "merged", "all"))
        order_by = p.string("order_by", default="created_at", values=(
            "created_at", "updated_at", "merged_at", "title",
            "label_priority", "milestone_due", "popularity", "priority"))
        sort = p.string("sort", default="desc", values=("asc", "desc"))
        bounds = {k: p.time(k) for k in ("updated_after", "updated_before",
                                         "created_after", "created_before")}
        iids = p.int_list("iids")
        source_branch = p.string("source_branch")
        target_branch = p.string("target_branch")
        labels = p.string_list("labels")
        author_id = p.integer("author_id")
        author_username = p.string("author_username")
        search = p.string("search")
        view = p.string("view", values=("simple",))
        p.pagination()
        p.check()
        project = ctx.project(id)
        mrs = list(project.mrs.values())
        if state != "all":
            mrs = [m for m in mrs if m.state == state]
        for key, bound in bounds.items():
            if bound is None:
                continue
            field, after = key.split("_")
            if after == "after":
                mrs = [m for m in mrs if getattr(m, field + "_at") >= bound]
            else:
                mrs = [m for m in mrs if getattr(m, field + "_at") <= bound]
        if iids is not None:
            mrs = [m for m in mrs if m.iid in iids]
        if source_branch is not None:
            mrs = [m for m in mrs if m.source_branch == source_branch]
        if target_branch is not None:
            mrs = [m for m in mrs if m.target_branch == target_branch]
        if labels:
            mrs = _filter_labels(self.forge, project, mrs, labels)
        if author_id is not None:
            mrs = [m for m in mrs if m.author_id == author_id]
        if author_username is not None:
            mrs = [m for m in mrs if self.forge.users[m.author_id].username
                   .lower() == author_username.lower()]
        if search:
            needle = search.lower()
            mrs = [m for m in mrs if needle in m.title.lower() or
                   needle in m.description.lower()]
        mrs.sort(key=_mr_sort_key(order_by), reverse=sort == "desc")
        if view == "simple":
            return ctx.page(mrs, lambda m: _mr_simple(self.forge, project, m))
        return ctx.page(mrs, lambda m: ent.mr_basic(self.forge, project, m))

    def create_mr(self, ctx, id):
        p = ctx.params
        source = p.string("source_branch", required=True)
        target = p.string("target_branch", required=True)
        title = p.string("title", required=True)
        description = p.string("description", default="")
        labels = p.string_list("labels", default=[])
        reviewer_ids = p.int_list("reviewer_ids") or []
        assignee_ids = p.int_list("assignee_ids") or []
        p.check()
        project = ctx.project(id)
        if self.forge.access_level(project, ctx.user) < DEVELOPER:
            raise errors.forbidden()
        # The author is current_user, which sudo! made the Sudo user
        # (lib/api/merge_requests.rb POST ... merge_requests:
        # ::MergeRequests::CreateService.new(project:, current_user:)).
        try:
            mr = self.forge.create_mr(
                project, ctx.user, source, target, title, description,
                reviewers=reviewer_ids, assignees=assignee_ids,
                labels=labels)
        except SimError as e:
            raise errors.message(e.status if e.status == 409 else 400,
                                 [str(e)])
        return Response.json(201, ent.mr_full(self.forge, project, mr,
                                              ctx.user))

    def get_mr(self, ctx, id, iid):
        iid = _iid(Params({"merge_request_iid": iid}), "merge_request_iid")
        diverged = ctx.params.boolean("include_diverged_commits_count",
                                      default=False)
        ctx.params.check()
        project = ctx.project(id)
        mr = ctx.mr(project, iid)
        return Response.json(200, ent.mr_full(self.forge, project, mr,
                                              ctx.user, diverged))

    def update_mr(self, ctx, id, iid):
        iid = _iid(Params({"merge_request_iid": iid}), "merge_request_iid")
        p = ctx.params
        title = p.string("title")
        description = p.string("description")
        labels = p.string_list("labels")
        add_labels = p.string_list("add_labels")
        remove_labels = p.string_list("remove_labels")
        state_event = p.string("state_event", values=("close", "reopen"))
        reviewer_ids = p.int_list("reviewer_ids")
        assignee_ids = p.int_list("assignee_ids")
        squash = p.boolean("squash")
        discussion_locked = p.boolean("discussion_locked")
        target_branch = p.string("target_branch")
        if not any(p.has(k) for k in _MR_UPDATE_PARAMS):
            p.errors.append(", ".join(_MR_UPDATE_PARAMS) + " are missing, "
                            "at least one parameter must be provided")
        p.check()
        project = ctx.project(id)
        mr = ctx.mr(project, iid)
        if not self.forge.can_update_mr(project, mr, ctx.user):
            raise errors.forbidden()
        try:
            self.forge.update_mr(project, mr, ctx.user, title=title,
                                 description=description, labels=labels,
                                 add_labels=add_labels,
                                 remove_labels=remove_labels,
                                 reviewer_ids=reviewer_ids,
                                 assignee_ids=assignee_ids)
        except SimError:
            raise errors.message(400, {"reviewers": ["is invalid"]})
        if squash is not None:
            mr.squash = squash
        # UpdateService#execute drops target_branch on a closed or merged
        # MR (closed_or_merged_without_fork?); MergeRequest's
        # validate_branches refuses the source branch as the target
        # (app/models/merge_request.rb), with render_validation_error!.
        if target_branch is not None and mr.state == "opened":
            if target_branch == mr.source_branch:
                raise errors.message(400, {"branch_conflict": [
                    "You can't use same project/branch for source and "
                    "target"]})
            self.forge.retarget(project, mr, ctx.user, target_branch)
        # IssuableBaseService#filter_params drops discussion_locked unless
        # the user may admin_merge_request (Developer and up,
        # app/policies/project_policy.rb).
        if discussion_locked is not None and \
                self.forge.access_level(project, ctx.user) >= DEVELOPER:
            mr.discussion_locked = discussion_locked
        if state_event == "close":
            self.forge.close(project, mr, ctx.user)
        elif state_event == "reopen":
            self.forge.reopen(project, mr, ctx.user)
        return Response.json(200, ent.mr_full(self.forge, project, mr,
                                              ctx.user))

    def _latest(self, ctx, id, iid):
        iid = _iid(Params({"merge_request_iid": iid}), "merge_request_iid")
        project = ctx.project(id)
        mr = ctx.mr(project, iid)
        return project, mr, mr.latest

    def mr_commits(self, ctx, id, iid):
        project, mr, latest = self._latest(ctx, id, iid)
        return ctx.page(latest.commits,
                        lambda c: ent.commit(self.forge, project, c))

    def mr_diffs(self, ctx, id, iid):
        project, mr, latest = self._latest(ctx, id, iid)
        return ctx.page(latest.files, ent.diff_file)

    def mr_raw_diffs(self, ctx, id, iid):
        project, mr, latest = self._latest(ctx, id, iid)
        text = self.forge.repo(project).raw_diff(latest.base_sha,
                                                 latest.head_sha)
        return Response.text(200, text)

    def mr_changes(self, ctx, id, iid):
        project, mr, latest = self._latest(ctx, id, iid)
        out = ent.mr_full(self.forge, project, mr, ctx.user)
        out["changes"] = [ent.diff_file(f) for f in latest.files]
        out["overflow"] = False
        return Response.json(200, out)

    def list_versions(self, ctx, id, iid):
        # doc/api/merge_requests.md, "Get merge request diff versions":
        # the MR's MergeRequestDiffs newest first (id, head_commit_sha,
        # base_commit_sha, start_commit_sha, created_at,
        # merge_request_id, state, real_size, patch_id_sha), one per
        # push that changed the source branch's head
        project, mr, _ = self._latest(ctx, id, iid)
        versions = [] if self.forge.is_preparing(mr) else \
            list(reversed(mr.versions))
        return ctx.page(versions, lambda v: ent.version(self.forge, mr, v))

    def get_version(self, ctx, id, iid, version_id):
        vid = _iid(Params({"version_id": version_id}), "version_id")
        project, mr, _ = self._latest(ctx, id, iid)
        for v in mr.versions:
            if v.id == vid:
                return Response.json(200, ent.version_full(
                    self.forge, project, mr, v))
        raise errors.record_not_found()

    # -- pipelines and jobs ---------------------------------------------------

    def _may_read_builds(self, ctx, project):
        # :read_pipeline and :read_build need Reporter on a private
        # project (app/policies/project_policy.rb); a guest gets 403.
        if self.forge.access_level(project, ctx.user) < REPORTER:
            raise errors.forbidden()

    def mr_pipelines(self, ctx, id, iid):
        """lib/api/merge_requests.rb "Get single merge request pipelines":
        authorize! :read_pipeline, then MergeRequest#all_pipelines newest
        first, paginated, as Ci::PipelineBasic."""
        project, mr, _ = self._latest(ctx, id, iid)
        self._may_read_builds(ctx, project)
        return ctx.page(self.forge.mr_pipelines(project, mr),
                        lambda pl: ent.pipeline_basic(self.forge, project,
                                                      pl))

    def pipeline_jobs(self, ctx, id, pipeline_id):
        """lib/api/ci/jobs.rb "List all jobs by pipeline": 404 "Pipeline
        Not Found" for another project's, jobs in id order (the latest
        try of each: include_retried is false by default)."""
        p = ctx.params
        p.boolean("include_retried", default=False)
        p.check()
        pid = _iid(Params({"pipeline_id": pipeline_id}), "pipeline_id")
        project = ctx.project(id)
        self._may_read_builds(ctx, project)
        pipeline = self.forge.find_pipeline(project, pid)
        if pipeline is None:
            raise errors.not_found("Pipeline")
        return ctx.page(sorted(pipeline.jobs, key=lambda j: j.id),
                        lambda j: ent.job(self.forge, project, pipeline, j))

    def job_trace(self, ctx, id, job_id):
        """lib/api/ci/jobs.rb "Get a trace of a specific job of a
        project": authorize_read_builds!, the log as text/plain (an
        empty body when there is none)."""
        jid = _iid(Params({"job_id": job_id}), "job_id")
        project = ctx.project(id)
        self._may_read_builds(ctx, project)
        pipeline, job = self.forge.find_job(project, jid)
        if job is None:
            raise errors.not_found("Job")
        return Response.text(200, job.trace)

    def merge(self, ctx, id, iid):
        iid = _iid(Params({"merge_request_iid": iid}), "merge_request_iid")
        p = ctx.params
        sha = p.string("sha")
        p.string("merge_commit_message")
        squash_message = p.string("squash_commit_message")
        squash = p.boolean("squash")
        p.boolean("should_remove_source_branch")
        p.boolean("merge_when_pipeline_succeeds")
        p.check()
        project = ctx.project(id)
        mr = ctx.mr(project, iid)
        if not self.forge.can_merge(project, ctx.user):
            raise errors.unauthorized()
        if not self.forge.mergeable(project, mr):
            raise errors.not_allowed()
        _check_sha(sha, mr)
        if squash is not None:
            mr.squash = squash      # the API's squash overrides the MR's
        if not self.forge.merge(project, mr, ctx.user, squash_message):
            raise errors.not_allowed()
        return Response.json(200, ent.mr_full(self.forge, project, mr,
                                              ctx.user))

    # -- approvals ------------------------------------------------------------

    def _approvable(self, ctx, id, iid):
        iid = _iid(Params({"merge_request_iid": iid}), "merge_request_iid")
        project = ctx.project(id)
        mr = ctx.mr(project, iid)
        # find_merge_request_with_access(iid, :approve_merge_request)
        if not self.forge.can_approve(project, ctx.user):
            raise errors.forbidden()
        return project, mr

    def approve(self, ctx, id, iid):
        p = ctx.params
        sha = p.string("sha")
        p.string("approval_password")
        p.boolean("publish_review")
        p.check()
        project, mr = self._approvable(ctx, id, iid)
        _check_sha(sha, mr)
        # EE's ApprovalService#execute first `return if
        # incorrect_approval_password?`: the project requires a password
        # and Gitlab::Auth.find_with_user_password(username,
        # approval_password) fails (ee/app/services/ee/merge_requests/
        # approval_service.rb), answered 401 like any refusal.  The
        # simulator's users have no password, so no approval_password is
        # ever right.
        if self.forge.settings.edition != "ce" and \
                project.settings.require_password_to_approve:
            raise errors.unauthorized()
        # ApprovalService#execute returns nil unless can_be_approved_by?
        # (app/models/concerns/approvable_base.rb: the user may approve
        # and has not yet), and the endpoint answers `unauthorized! unless
        # success` (lib/api/merge_request_approvals.rb): a second approval
        # by the same user is a 401, like a refused one.  There is no 304.
        if not self.forge.approve(project, mr, ctx.user):
            raise errors.unauthorized()
        return Response.json(201, ent.approvals(self.forge, project, mr,
                                                ctx.user))

    def unapprove(self, ctx, id, iid):
        project, mr = self._approvable(ctx, id, iid)
        # RemoveApprovalService returns nil without an approval to remove
        # and the endpoint answers `not_found! unless success`
        # (lib/api/merge_request_approvals.rb): {"message":"404 Not
        # Found"}, not a 304.
        if not self.forge.unapprove(project, mr, ctx.user):
            raise errors.not_found()
        return Response.json(201, ent.approvals(self.forge, project, mr,
                                                ctx.user))

    def get_approvals(self, ctx, id, iid):
        project, mr, _ = self._latest(ctx, id, iid)
        return Response.json(200, ent.approvals(self.forge, project, mr,
                                                ctx.user))

    def get_approval_state(self, ctx, id, iid):
        if self.forge.settings.edition != "ee":
            raise errors.route_not_found()
        project, mr, _ = self._latest(ctx, id, iid)
        return Response.json(200, ent.approval_state(self.forge, project,
                                                     mr))

    # -- notes ----------------------------------------------------------------

    def _may_note(self, ctx, project, mr):
        """authorize!(:create_note) (lib/api/helpers/notes_helpers.rb):
        IssuablePolicy's `rule { locked & ~is_project_member }.prevent
        :create_note` (app/policies/issuable_policy.rb).  Only a member
        may comment on a locked discussion; an administrator who is no
        member may not (a prevent wins over the admin's enable)."""
        if mr.discussion_locked and (ctx.user is None or
                                     ctx.user.id not in project.members):
            raise errors.forbidden()

    def _noteable(self, ctx, id, noteable_id):
        iid = _iid(Params({"noteable_id": noteable_id}), "noteable_id")
        project = ctx.project(id)
        return project, ctx.noteable(project, iid)

    def _readable_notes(self, ctx, project, mr):
        return [n for n in mr.notes()
                if self.forge.can_read_note(project, n, ctx.user)]

    def list_notes(self, ctx, id, noteable_id):
        p = ctx.params
        order_by = p.string("order_by", default="created_at",
                            values=("created_at", "updated_at"))
        sort = p.string("sort", default="desc", values=("asc", "desc"))
        activity = p.string("activity_filter", default="all_notes", values=(
            "all_notes", "only_comments", "only_activity"))
        p.pagination()
        p.check()
        project, mr = self._noteable(ctx, id, noteable_id)
        notes = self._readable_notes(ctx, project, mr)
        if activity == "only_comments":
            notes = [n for n in notes if not n.system]
        elif activity == "only_activity":
            notes = [n for n in notes if n.system]
        notes.sort(key=lambda n: (getattr(n, order_by), n.id),
                   reverse=sort == "desc")
        return ctx.page(notes, lambda n: ent.note(self.forge, project, mr, n))

    def _note(self, ctx, project, mr, note_id, discussion=None):
        nid = _iid(Params({"note_id": note_id}), "note_id")
        found_discussion, note = self.forge.find_note(mr, nid)
        if note is None or (discussion is not None and
                            found_discussion is not discussion):
            raise errors.record_not_found()
        return found_discussion, note

    def get_note(self, ctx, id, noteable_id, note_id):
        project, mr = self._noteable(ctx, id, noteable_id)
        _, note = self._note(ctx, project, mr, note_id)
        if not self.forge.can_read_note(project, note, ctx.user):
            raise errors.not_found("Note")
        return Response.json(200, ent.note(self.forge, project, mr, note))

    def create_note(self, ctx, id, noteable_id):
        p = ctx.params
        body = p.string("body", required=True)
        internal = p.boolean("internal", default=False)
        confidential = p.boolean("confidential", default=False)
        created_at = p.time("created_at")
        head_sha = p.string("merge_request_diff_head_sha")
        p.check()
        project, mr = self._noteable(ctx, id, noteable_id)
        self._may_note(ctx, project, mr)
        discussion, note, changes, messages = self.forge.create_note(
            project, mr, ctx.user, body,
            internal=bool(internal or confidential), diff_head_sha=head_sha)
        if note is None:
            return Response.json(202, ent.note_commands(changes, messages))
        self._backdate(ctx, project, note, created_at)
        return Response.json(201, ent.note(self.forge, project, mr, note))

    def _backdate(self, ctx, project, note, created_at):
        # created_at is honoured for admins and project owners only.
        if created_at is not None and \
                self.forge.access_level(project, ctx.user) >= OWNER:
            note.created_at = note.updated_at = created_at

    def _edit_note(self, ctx, project, mr, note, body):
        if not self.forge.can_admin_note(project, note, ctx.user):
            raise errors.forbidden()
        if body is not None:
            self.forge.update_note(project, mr, note, ctx.user, body)
        return Response.json(200, ent.note(self.forge, project, mr, note))

    def update_note(self, ctx, id, noteable_id, note_id):
        p = ctx.params
        body = p.string("body", allow_blank=False)
        p.boolean("confidential")
        p.check()
        project, mr = self._noteable(ctx, id, noteable_id)
        _, note = self._note(ctx, project, mr, note_id)
        return self._edit_note(ctx, project, mr, note, body)

    def _remove_note(self, ctx, project, mr, discussion, note):
        if not self.forge.can_admin_note(project, note, ctx.user):
            raise errors.forbidden()
        self.forge.delete_note(project, mr, discussion, note)
        return Response.json(204, None)

    def delete_note(self, ctx, id, noteable_id, note_id):
        project, mr = self._noteable(ctx, id, noteable_id)
        discussion, note = self._note(ctx, project, mr, note_id)
        return self._remove_note(ctx, project, mr, discussion, note)

    # -- discussions ----------------------------------------------------------

    def _discussion(self, ctx, mr, discussion_id, resource="Discussion"):
        discussion = self.forge.find_discussion(mr, discussion_id)
        project = self.forge.projects[mr.project_id]
        # An internal thread does not exist for who may not read it.
        if discussion is None or not self.forge.can_read_note(
                project, discussion.notes[0], ctx.user):
            raise errors.not_found(resource)
        return discussion

    def list_discussions(self, ctx, id, noteable_id):
        ctx.params.pagination()
        ctx.params.check()
        project, mr = self._noteable(ctx, id, noteable_id)
        # Only discussions with a note the user may read (lib/api/
        # discussions.rb readable_discussion_notes): an internal thread is
        # not there for a Guest.
        readable = [d for d in mr.discussions if any(
            self.forge.can_read_note(project, n, ctx.user) for n in d.notes)]
        return ctx.page(readable, lambda d: ent.discussion(
            self.forge, project, mr, d, ctx.user))

    def get_discussion(self, ctx, id, noteable_id, discussion_id):
        project, mr = self._noteable(ctx, id, noteable_id)
        discussion = self._discussion(ctx, mr, discussion_id)
        return Response.json(200, ent.discussion(self.forge, project, mr,
                                                 discussion, ctx.user))

    def create_discussion(self, ctx, id, noteable_id):
        p = ctx.params
        body = p.string("body", required=True)
        created_at = p.time("created_at")
        p.string("commit_id")
        position = _position_params(p)
        p.check()
        project, mr = self._noteable(ctx, id, noteable_id)
        self._may_note(ctx, project, mr)
        checked = None
        if position is not None:
            checked = self.forge.check_position(project, mr, position)
        discussion, note, changes, messages = self.forge.create_note(
            project, mr, ctx.user, body,
            discussion_type="DiffNote" if checked else "DiscussionNote",
            position=checked)
        if note is None:
            return Response.json(202, ent.note_commands(changes, messages))
        self._backdate(ctx, project, note, created_at)
        return Response.json(201, ent.discussion(self.forge, project, mr,
                                                 discussion, ctx.user))

    def resolve_discussion(self, ctx, id, noteable_id, discussion_id):
        p = ctx.params
        resolved = p.boolean("resolved", required=True)
        p.check()
        project, mr = self._noteable(ctx, id, noteable_id)
        discussion = self._discussion(ctx, mr, discussion_id)
        resolvable = any(n.resolvable for n in discussion.notes)
        if not resolvable or \
                not self.forge.can_resolve(project, mr, ctx.user):
            raise errors.forbidden()
        self.forge.set_resolved(project, mr, discussion.notes, ctx.user,
                                resolved)
        return Response.json(200, ent.discussion(self.forge, project, mr,
                                                 discussion, ctx.user))

    def list_discussion_notes(self, ctx, id, noteable_id, discussion_id):
        project, mr = self._noteable(ctx, id, noteable_id)
        discussion = self._discussion(ctx, mr, discussion_id, "Notes")
        return Response.json(200, [
            ent.note(self.forge, project, mr, n) for n in discussion.notes
            if self.forge.can_read_note(project, n, ctx.user)])

    def reply(self, ctx, id, noteable_id, discussion_id):
        p = ctx.params
        body = p.string("body", required=True)
        created_at = p.time("created_at")
        p.check()
        project, mr = self._noteable(ctx, id, noteable_id)
        discussion = self._discussion(ctx, mr, discussion_id)
        if discussion.notes[0].system:
            raise errors.bad_request("Discussion can not be replied to.")
        self._may_note(ctx, project, mr)
        _, note, changes, messages = self.forge.create_note(
            project, mr, ctx.user, body, reply_to=discussion)
        if note is None:
            return Response.json(202, ent.note_commands(changes, messages))
        self._backdate(ctx, project, note, created_at)
        return Response.json(201, ent.note(self.forge, project, mr, note))

    def get_discussion_note(self, ctx, id, noteable_id, discussion_id,
                            note_id):
        project, mr = self._noteable(ctx, id, noteable_id)
        discussion = self._discussion(ctx, mr, discussion_id)
        _, note = self._note(ctx, project, mr, note_id, discussion)
        return Response.json(200, ent.note(self.forge, project, mr, note))

    def update_discussion_note(self, ctx, id, noteable_id, discussion_id,
                               note_id):
        p = ctx.params
        body = p.string("body")
        resolved = p.boolean("resolved")
        if p.has("body") == p.has("resolved"):
            p.errors.append("body, resolved are missing, exactly one "
                            "parameter must be provided" if not p.has("body")
                            else "body, resolved are mutually exclusive")
        p.check()
        project, mr = self._noteable(ctx, id, noteable_id)
        discussion = self._discussion(ctx, mr, discussion_id)
        _, note = self._note(ctx, project, mr, note_id, discussion)
        if resolved is None:
            return self._edit_note(ctx, project, mr, note, body)
        if not self.forge.can_resolve(project, mr, ctx.user):
            raise errors.forbidden()
        if not note.resolvable:
            raise errors.bad_request("Note is not resolvable")
        self.forge.set_resolved(project, mr, [note], ctx.user, resolved,
                                one=True)
        return Response.json(200, ent.note(self.forge, project, mr, note))

    def delete_discussion_note(self, ctx, id, noteable_id, discussion_id,
                               note_id):
        project, mr = self._noteable(ctx, id, noteable_id)
        discussion = self._discussion(ctx, mr, discussion_id)
        _, note = self._note(ctx, project, mr, note_id, discussion)
        return self._remove_note(ctx, project, mr, discussion, note)


# -- helpers ------------------------------------------------------------------

def _log_details(ctx):
    if ctx is None:
        return {}
    return {
        "token_user": ctx.forge.users[ctx.token.user_id].username
        if ctx.token else None,
        "user": ctx.user.username if ctx.user else None,
    }


def _check_sha(sha, mr):
    """check_sha_param!: a stale sha is a 409 naming the current head."""
    head = mr.latest.head_sha if mr.latest else None
    if sha and sha != head:
        raise errors.conflict("SHA does not match HEAD of source branch: %s"
                              % head)


def _position_params(p):
    """Grape's declared `position` hash (lib/api/discussions.rb)."""
    pos = p.nested("position")
    if pos is None:
        return None
    out = {
        "base_sha": pos.string("base_sha", required=True),
        "start_sha": pos.string("start_sha", required=True),
        "head_sha": pos.string("head_sha", required=True),
        "position_type": pos.string("position_type", required=True,
                                    values=("text", "image", "file")),
        "new_path": pos.string("new_path"),
        "new_line": pos.integer("new_line"),
        "old_path": pos.string("old_path"),
        "old_line": pos.integer("old_line"),
    }
    for key in ("width", "height", "x", "y"):
        out[key] = pos.integer(key)
    line_range = pos.nested("line_range")
    if line_range is not None:
        out["line_range"] = line_range.values
    return out


def _search_users(users, search, admin):
    """User.search: fuzzy name/username, exact email (public unless admin).

    An administrator's search also matches confirmed secondary emails
    (app/models/user.rb search_by_email: Email ... where confirmed_at is
    not null), while the results show only the primary `email`.
    """
    needle = search.lower()
    found = []
    for u in users:
        emails = {u.public_email.lower()} if u.public_email else set()
        if admin:
            emails.add(u.email.lower())
            emails.update(e["email"].lower() for e in u.secondary_emails
                          if e["confirmed_at"] is not None)
        if needle in u.name.lower() or needle in u.username.lower() or \
                needle in emails:
            found.append(u)
    # Exact name, then username, then email matches come first.
    return sorted(found, key=lambda u: (
        0 if u.name.lower() == needle else
        1 if u.username.lower() == needle else 2, u.name.lower(), u.id))


def _filter_labels(forge, project, mrs, labels):
    if labels == ["None"]:
        return [m for m in mrs if not m.labels]
    if labels == ["Any"]:
        return [m for m in mrs if m.labels]
    wanted = set(labels)
    return [m for m in mrs
            if wanted <= set(forge.label_names(project, m))]


def _mr_sort_key(order_by):
    if order_by == "title":
        return lambda m: (m.title.lower(), m.id)
    if order_by == "updated_at":
        return lambda m: (m.updated_at, m.id)
    if order_by == "merged_at":
        return lambda m: (m.merged_at is not None, m.merged_at or
                          m.created_at, m.id)
    return lambda m: (m.created_at, m.id)


def _mr_simple(forge, project, mr):
    full = ent.mr_basic(forge, project, mr)
    return {k: full[k] for k in ("id", "iid", "project_id", "title",
                                 "description", "state", "created_at",
                                 "updated_at", "web_url")}


def _loopback_url(url):
    """Hooks may only point at this machine (the simulator never leaves it)."""
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return False
    return url.startswith(("http://", "https://")) and \
        host in ("127.0.0.1", "localhost", "::1")
