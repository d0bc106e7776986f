"""The simulated GitLab instance: state plus GitLab's domain rules.

No HTTP here.  api.py and control.py call into Forge while holding
Forge.lock (one big lock: the simulator favours obviously-correct ordering
over throughput).  Raised errors.ApiError values carry GitLab's exact
status and body; SimError is for control-API misuse by a test.

Side effects that GitLab performs asynchronously (webhooks) are reported
through Forge.on_event(kind, payload-builder args); webhooks.py listens.
"""

import datetime
import os
import re
import secrets
import shutil
import threading
import urllib.parse
import uuid

from . import diff as diffmod
from . import errors
from . import quickactions
from . import suggestions
from .clock import Clock
from .gitrepo import ZERO_SHA, GitError, Repo
from .model import (DEVELOPER, ID_BASES, MAINTAINER, OWNER, REPORTER,
                    ROLES, Approval, Discussion, Hook, Job, Label,
                    MergeRequest, Note, Pipeline, Project, Token, User,
                    Version,
                    is_draft_title)

MAX_NOTE_LENGTH = 1_000_000

# Label::DEFAULT_COLOR, used for labels created implicitly by add_labels.
DEFAULT_LABEL_COLOR = "#6699cc"

# Head refs of closed/merged MRs are deleted this long after closing
# (GitLab 13.4+); observable by moving the simulated clock.
HEAD_REF_EXPIRY_S = 14 * 24 * 3600


class SimError(Exception):
    """A test used the control API wrongly (answered 400/404/409)."""

    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


class SimSettings:
    """Instance-wide switches a test can flip through POST /_sim/settings."""

    DEFAULTS = {
        # "ee" answers approvals with the EE shape (a superset of CE's) and
        # serves approval_state; "ce" uses the CE entity and has no
        # approval_state route.
        "edition": "ee",
        "system_notes": True,
        # GitLab stops counting above 10,000 rows; lower it in tests.
        "pagination_totals_limit": 10000,
        # A new MR stays "preparing" (no diff_refs yet) this long, on the
        # simulated clock.
        "prepare_delay_ms": 0,
        "hook_timeout_s": 3.0,
        # ThrottledTouch::TOUCH_INTERVAL (app/models/concerns/
        # throttled_touch.rb): a note touches its MR only when updated_at
        # is older than this; shorten it in tests, or move the clock.
        "touch_interval_s": 60.0,
        # Admin Mode (doc/administration/settings/sign_in_restrictions.md
        # "Admin Mode"): an administrator's token acts as one only with
        # the admin_mode scope.
        "admin_mode": False,
        # Gitlab.config.gitlab.url, the external URL: web_url, the Link
        # headers' host and port, X-Gitlab-Instance.  "": the URL the
        # simulator listens on.
        "external_url": "",
        # The application setting commit_email_hostname, the host of
        # private commit emails (lib/gitlab/private_commit_email.rb).
        # "": GitLab's default, "users.noreply." and the external URL's
        # host (app/models/application_setting_implementation.rb
        # default_commit_email_hostname).
        "commit_email_hostname": "",
        # Notes made while set are saved but not committed: each takes
        # its id from the sequence at INSERT, and nobody sees it until
        # POST /_sim/notes/commit.  On GitLab's PostgreSQL (READ
        # COMMITTED) a note whose transaction is slow, a diff note with
        # its position, becomes visible after notes with higher ids.
        "hold_notes": False,
    }

    def __init__(self):
        self.values = dict(self.DEFAULTS)

    def __getattr__(self, name):
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name)

    def update(self, values):
        for key, value in values.items():
            if key not in self.DEFAULTS:
                raise SimError("unknown setting %r" % key)
            if key == "edition" and value not in ("ce", "ee"):
                raise SimError("edition must be 'ce' or 'ee'")
            if key == "external_url" and value and \
                    not re.fullmatch(r"https?://[^/?#]+(/[^?#]*)?", value):
                raise SimError("external_url must be http(s)://host[:port]")
            self.values[key] = type(self.DEFAULTS[key])(value)
            if key == "external_url":
                self.values[key] = self.values[key].rstrip("/")


def scope_of(label_name):
    """Scoped label scope: everything before the last '::', or None."""
    if "::" not in label_name:
        return None
    return label_name.rsplit("::", 1)[0]


class Forge:
    def __init__(self, state_dir):
        self.lock = threading.RLock()
        self.clock = Clock()
        self.state_dir = os.path.abspath(state_dir)
        self.repo_root = os.path.join(self.state_dir, "repos")
        self.base_url = "http://127.0.0.1"
        self.settings = SimSettings()
        self.on_event = lambda kind, **details: None
        self.reset()

    # -- lifecycle ---------------------------------------------------------

    def reset(self):
        with self.lock:
            self.users = {}
            self.tokens = {}
            self.projects = {}
            # RedirectRoute: an old full path (lower case) -> project id.
            self.redirect_routes = {}
            self.counters = dict(ID_BASES)
            self.settings = SimSettings()
            self.held_notes = []   # (project, mr, author, note)
            self.clock.reset()
            if os.path.isdir(self.repo_root):
                shutil.rmtree(self.repo_root)
            os.makedirs(self.repo_root, exist_ok=True)

    def next_id(self, kind):
        self.counters[kind] += 1
        return self.counters[kind]

    def now(self):
        return self.clock.now()

    def find_hook(self, hook_id):
        for project in self.projects.values():
            for hook in project.hooks:
                if hook.id == hook_id:
                    return hook
        return None

    def commit_email_hostname(self):
        return self.settings.commit_email_hostname or \
            "users.noreply." + urllib.parse.urlsplit(
                self.external_url()).hostname

    def external_url(self):
        """Gitlab.config.gitlab.url: what GitLab puts in web_url and the
        Link header (settings external_url, else where we listen)."""
        return self.settings.external_url or self.base_url

    # -- users and tokens --------------------------------------------------

    def create_user(self, username, name=None, email=None, public_email="",
                    admin=False, state="active", bot=False):
        if not username or not re.fullmatch(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*",
                                            username):
            raise SimError("invalid username %r" % username)
        if self.find_user(username):
            raise SimError("username %r is taken" % username, 409)
        user = User(id=self.next_id("user"), username=username,
                    name=name or username,
                    email=email or "%s@example.com" % username.lower(),
                    public_email=public_email or "", admin=bool(admin),
                    state=state, created_at=self.now(), bot=bool(bot))
        self.users[user.id] = user
        return user

    def add_email(self, user, email, confirmed=True):
        """A secondary email (POST /users/:id/emails; confirmed_at stays
        null until the user follows the confirmation mail, app/models/
        email.rb)."""
        if not email or "@" not in email:
            raise SimError("invalid email %r" % email)
        wanted = email.lower()
        for other in self.users.values():
            if other.email.lower() == wanted or any(
                    e["email"].lower() == wanted
                    for e in other.secondary_emails):
                raise SimError("email %r is taken" % email, 409)
        record = {"id": self.next_id("email"), "email": email,
                  "confirmed_at": self.now() if confirmed else None}
        user.secondary_emails.append(record)
        return record

    def find_user(self, ident):
        """By id (int or digits) or by username, case-insensitively."""
        if ident is None:
            return None
        if isinstance(ident, int) or (isinstance(ident, str) and
                                      ident.isdigit()):
            return self.users.get(int(ident))
        wanted = str(ident).lower()
        for user in self.users.values():
            if user.username.lower() == wanted:
                return user
        return None

    def user(self, ident):
        found = self.find_user(ident)
        if found is None:
            raise SimError("no user %r" % (ident,), 404)
        return found

    def create_token(self, user, scopes=("api",), token=None, name=None,
                     impersonation=False):
        token = token or "glpat-" + secrets.token_hex(10)
        if token in self.tokens:
            raise SimError("token %r exists" % token, 409)
        unknown = set(scopes) - {"api", "read_api", "sudo", "read_user",
                                 "read_repository", "write_repository",
                                 "admin_mode"}
        if unknown:
            raise SimError("unknown scopes %s" % sorted(unknown))
        record = Token(id=self.next_id("token"), token=token,
                       user_id=user.id, scopes=list(scopes),
                       name=name or "token-%d" % self.counters["token"],
                       impersonation=impersonation, created_at=self.now())
        self.tokens[token] = record
        return record

    def token(self, secret):
        """The token record, revoked and expired ones included: the API
        answers those with their own 401 (api.py, authenticate)."""
        return self.tokens.get(secret)

    def token_expired(self, record):
        """Expirable#expired? (app/models/concerns/expirable.rb):
        expires_at <= now, expires_at a date, so from that day on."""
        return record.expires_at is not None and \
            record.expires_at <= self.now().date()

    def set_token(self, record, expires_at=False, revoked=None):
        """Steer a token: expires_at a date or None (False: unchanged)."""
        with self.lock:
            if expires_at is not False:
                record.expires_at = expires_at
            if revoked is not None:
                record.revoked = bool(revoked)

    # -- projects ------------------------------------------------------------

    def create_project(self, path, default_branch="main", files=None,
                       empty=False, visibility="private", members=None,
                       description="", settings=None, author=None):
        parts = (path or "").split("/")
        if len(parts) < 2 or not all(re.fullmatch(r"[A-Za-z0-9_.-]+", p)
                                     for p in parts):
            raise SimError("project path must look like group/name")
        if self.find_project(path):
            raise SimError("project %r exists" % path, 409)
        if visibility not in ("private", "internal", "public"):
            raise SimError("visibility must be private, internal or public")
        pid = self.next_id("project")
        # A new project on a moved project's old path takes it over
        # (Route#delete_conflicting_redirects, app/models/route.rb); its
        # repository is its own, while the moved one's stays where it was
        # made (hashed storage keys it by id, not path).
        self.redirect_routes.pop(path.lower(), None)
        repo_dir = os.path.join(self.repo_root, path + ".git")
        if any(p.repo_dir == repo_dir for p in self.projects.values()):
            repo_dir = os.path.join(self.repo_root, "%s@%d.git" % (path, pid))
        project = Project(
            id=pid, path=parts[-1], namespace="/".join(parts[:-1]),
            description=description or "", default_branch=default_branch,
            visibility=visibility, repo_dir=repo_dir,
            created_at=self.now())
        project.last_activity_at = project.created_at
        if settings:
            self.update_project_settings(project, settings)
        self.projects[pid] = project
        for who, role in (members or {}).items():
            self.add_member(project, self.user(who), role)
        Repo(project.repo_dir).init(default_branch)
        if not empty:
            self.create_commits(project, default_branch, [{
                "message": "Initial commit\n",
                "files": files or {"README.md": "# %s\n" % project.path},
                "author": author}])
        return project

    def update_project_settings(self, project, values):
        try:
            project.settings.update(values)
        except KeyError as e:
            raise SimError("unknown project setting %s" % e)
        except ValueError as e:
            raise SimError(str(e))

    def add_member(self, project, user, role):
        level = ROLES.get(role, role) if isinstance(role, str) else role
        if level not in ROLES.values():
            raise SimError("unknown role %r" % (role,))
        project.members[user.id] = level

    def find_project(self, ident, follow_redirects=False):
        """By numeric id or full path (case-insensitive, as GitLab).

        follow_redirects: a path no project has now may be one a project
        had before a rename or transfer (Routable.find_by_full_path with
        follow_redirects: true, app/models/concerns/routable.rb, reading
        app/models/redirect_route.rb); the API's find_project does so.
        """
        if ident is None:
            return None
        if isinstance(ident, int) or str(ident).isdigit():
            return self.projects.get(int(ident))
        wanted = str(ident).lower()
        for project in self.projects.values():
            if project.full_path.lower() == wanted:
                return project
        if follow_redirects and wanted in self.redirect_routes:
            return self.projects.get(self.redirect_routes[wanted])
        return None

    def move_project(self, project, new_path):
        """Rename a project or transfer it to another group.

        The old full path becomes a RedirectRoute (Routable's
        route.create_redirect_for_old_path, app/models/route.rb); a route
        taking a path drops a redirect on it (Route#
        delete_conflicting_redirects).  The repository keeps its place on
        disk (hashed storage) and the project its id.
        """
        parts = (new_path or "").split("/")
        if len(parts) < 2 or not all(re.fullmatch(r"[A-Za-z0-9_.-]+", p)
                                     for p in parts):
            raise SimError("project path must look like group/name")
        other = self.find_project(new_path)
        if other is not None and other is not project:
            raise SimError("project %r exists" % new_path, 409)
        old = project.full_path
        project.namespace = "/".join(parts[:-1])
        project.path = parts[-1]
        if old.lower() != new_path.lower():
            self.redirect_routes[old.lower()] = project.id
        self.redirect_routes.pop(new_path.lower(), None)
        return old

    def project(self, ident):
        found = self.find_project(ident)
        if found is None:
            raise SimError("no project %r" % (ident,), 404)
        return found

    def repo(self, project):
        return Repo(project.repo_dir)

    def project_for_repo_path(self, relpath):
        """The project a git URL <relpath>.git names: its path now, or one
        it had before a move (git over HTTP follows a RedirectRoute and
        tells the client "Project ... was moved",
        lib/gitlab/checks/container_moved.rb)."""
        return self.find_project(relpath, follow_redirects=True)

    def repo_relpath(self, relpath):
        """Where on disk (below repo_root, without .git) the repository a
        git URL names lives: it stays where it was made when the project
        moves, as with hashed storage."""
        with self.lock:
            project = self.project_for_repo_path(relpath)
            if project is None:
                return relpath
            return os.path.relpath(project.repo_dir, self.repo_root)[:-4]

    # -- permissions (app/policies, simplified to roles) ---------------------

    def can_admin_all(self, user, token):
        """User#can_admin_all_resources? for an API request: an admin, and
        with Admin Mode on, only through a token with the admin_mode scope
        (lib/gitlab/auth/current_user_mode.rb; gitlab-org/gitlab!107925)."""
        if user is None or not user.admin:
            return False
        if not self.settings.admin_mode:
            return True
        return token is not None and "admin_mode" in token.scopes

    def access_level(self, project, user):
        if user is None:
            return 0
        if user.admin:
            return OWNER
        return project.members.get(user.id, 0)

    def can_read_project(self, project, user):
        if user is not None and (user.admin or user.id in project.members):
            return True
        return project.visibility == "public" or \
            (project.visibility == "internal" and user is not None)

    def can_update_mr(self, project, mr, user):
        return self.access_level(project, user) >= DEVELOPER or \
            mr.author_id == user.id

    def can_approve(self, project, user):
        """approve_merge_request: who may use the approve endpoints at all."""
        return self.access_level(project, user) >= DEVELOPER

    def can_merge(self, project, user):
        return self.access_level(project, user) >= DEVELOPER

    def can_resolve(self, project, mr, user):
        return self.access_level(project, user) >= DEVELOPER or \
            mr.author_id == user.id

    def can_admin_note(self, project, note, user):
        return note.author_id == user.id or \
            self.access_level(project, user) >= MAINTAINER

    def can_read_note(self, project, note, user):
        """Internal notes: Reporter and up (app/policies/note_policy.rb
        :read_internal_note)."""
        if note.held:
            return False
        return not note.internal or \
            self.access_level(project, user) >= REPORTER

    def can_mark_internal(self, project, user):
        """:mark_note_as_internal (app/policies/issuable_policy.rb):
        Reporter and up."""
        return self.access_level(project, user) >= REPORTER

    # -- labels ---------------------------------------------------------------

    def find_label(self, project, name):
        # Exact, case-sensitive title match, as reported against CE: a
        # differently-cased name creates a second label.
        for label in project.labels:
            if label.name == name:
                return label
        return None

    def create_label(self, project, name, color=None, description=None):
        if not name or not name.strip():
            raise errors.message(400, {"title": ["can't be blank"]})
        if self.find_label(project, name):
            raise errors.conflict("Label already exists")
        label = Label(id=self.next_id("label"), name=name,
                      color=color or DEFAULT_LABEL_COLOR,
                      description=description, created_at=self.now())
        project.labels.append(label)
        return label

    def label_by_id(self, project, label_id):
        for label in project.labels:
            if label.id == label_id:
                return label
        return None

    def label_names(self, project, mr):
        return sorted(self.label_by_id(project, i).name for i in mr.labels)

    # -- commits --------------------------------------------------------------

    def create_commits(self, project, branch, commits, start=None):
        """Write commits on `branch` (created from `start` if missing).

        Returns the new SHAs, oldest first.  Each commit is {"message",
        "files", "author"}; see Repo.write_commit for `files`.
        """
        repo = self.repo(project)
        existing = repo.rev_parse("refs/heads/" + branch)
        parent = existing
        if parent is None and start:
            parent = repo.rev_parse(start) or \
                repo.rev_parse("refs/heads/" + start)
            if parent is None:
                raise SimError("start %r does not exist" % start)
        shas = []
        for spec in commits:
            message = spec.get("message") or "Update files\n"
            if not message.endswith("\n"):
                message += "\n"
            parent = repo.write_commit(parent, spec.get("files") or {},
                                       message, spec.get("author") or {},
                                       self.now())
            if spec.get("signature"):
                self.sign_commit(project, parent, spec["signature"])
            shas.append(parent)
        if shas:
            repo.update_ref("refs/heads/" + branch, parent,
                            existing or ZERO_SHA)
        return shas

    def sign_commit(self, project, sha, sig):
        """Record that commit `sha` carries a signature: {"type": "PGP",
        "SSH" or "X509" (default PGP), "user": whose key made it (None:
        a key no user of the forge has), "status": the verdict, when the
        test gives one}.  The simulator does not sign: GitLab reads the
        signature from the commit and keeps what it found
        (app/models/commit_signatures/*.rb)."""
        kind = sig.get("type", "PGP")
        if kind not in ("PGP", "SSH", "X509"):
            raise SimError("signature type must be PGP, SSH or X509")
        user = self.user(sig["user"]) if sig.get("user") is not None \
            else None
        project.signatures[sha] = {
            "type": kind, "user": user.id if user else None,
            "status": sig.get("status"), "title": sig.get("title", "Key")}

    def signature_status(self, project, sha):
        """The verdict on a commit's signature when the test gave none,
        as lib/gitlab/ssh/signature.rb calculate_verification_status
        (and lib/gitlab/gpg/commit.rb alike): unknown_key when no user
        has the key; other_user unless the committer's email is one of
        the key's user's; verified.  An X.509 signature is verified when
        the certificate's email is the committer's
        (lib/gitlab/x509/signature.rb), else unverified."""
        sig = project.signatures[sha]
        if sig["status"]:
            return sig["status"]
        committer = self.repo(project).commit(sha)["committer_email"]
        user = self.users.get(sig["user"]) if sig["user"] else None
        if sig["type"] == "X509":
            return "verified" if user and \
                committer.lower() in self.verified_emails(user) \
                else "unverified"
        if user is None:
            return "unknown_key"
        if committer.lower() not in self.verified_emails(user):
            return "other_user"
        return "verified"

    @staticmethod
    def verified_emails(user):
        """User#verified_emails: the primary and the confirmed secondary
        ones (app/models/user.rb)."""
        out = {user.email.lower()}
        out.update(e["email"].lower() for e in user.secondary_emails
                   if e["confirmed_at"] is not None)
        return out

    # -- merge requests ------------------------------------------------------

    def find_mr(self, project, iid):
        return project.mrs.get(iid)

    def mr_by_iid(self, project, iid):
        mr = project.mrs.get(iid)
        if mr is None:
            raise errors.record_not_found()
        return mr

    def create_mr(self, project, author, source_branch, target_branch=None,
                  title=None, description="", draft=False, reviewers=(),
                  assignees=(), labels=()):
        repo = self.repo(project)
        target_branch = target_branch or project.default_branch
        for branch in (source_branch, target_branch):
            if repo.rev_parse("refs/heads/" + branch) is None:
                raise SimError("branch %r does not exist" % branch)
        for other in project.mrs.values():
            if other.state == "opened" and \
                    other.source_branch == source_branch and \
                    other.target_branch == target_branch:
                raise SimError("Another open merge request already exists "
                               "for this source branch: !%d" % other.iid,
                               409)
        title = title or source_branch
        if draft and not is_draft_title(title):
            title = "Draft: " + title
        now = self.now()
        mr = MergeRequest(
            id=self.next_id("mr"), iid=project.next_iid,
            project_id=project.id, title=title,
            description=description or "", source_branch=source_branch,
            target_branch=target_branch, author_id=author.id,
            created_at=now, updated_at=now,
            reviewer_ids=[self.user(r).id for r in reviewers],
            assignee_ids=[self.user(a).id for a in assignees])
        # The first version first: an MR whose branches share no history
        # must not be left half-registered.
        self._new_version(project, mr,
                          repo.rev_parse("refs/heads/" + source_branch))
        # Preparation ends on the simulated clock, so a test can either
        # wait for it or move the clock past it.
        mr.prepared_at = mr.created_at + datetime.timedelta(
            milliseconds=self.settings.prepare_delay_ms)
        project.next_iid += 1
        project.mrs[mr.iid] = mr
        for name in labels:
            label = self.find_label(project, name) or \
                self.create_label(project, name)
            mr.labels.append(label.id)
        self.on_event("merge_request", project=project, mr=mr, actor=author,
                      action="open", changes={})
        return mr

    def clone_mrs(self, project, template, count):
        """count closed copies of MR template, sharing its diff version's
        data, for tests that need long lists (a control-API shortcut: no
        git work, no head refs, no hooks).  Returns the new MRs."""
        made = []
        for _ in range(count):
            now = self.now()
            mr = MergeRequest(
                id=self.next_id("mr"), iid=project.next_iid,
                project_id=project.id, title="%s (%d)" % (
                    template.title, project.next_iid),
                description=template.description,
                source_branch=template.source_branch,
                target_branch=template.target_branch,
                author_id=template.author_id, created_at=now,
                updated_at=now, state="closed", closed_at=now,
                closed_by=template.author_id)
            v = template.latest
            mr.versions.append(Version(
                id=self.next_id("version"), mr_id=mr.id,
                head_sha=v.head_sha, base_sha=v.base_sha,
                start_sha=v.start_sha, created_at=now,
                patch_id_sha=v.patch_id_sha, files=v.files,
                commits=v.commits))
            mr.prepared_at = now
            project.next_iid += 1
            project.mrs[mr.iid] = mr
            made.append(mr)
        return made

    def is_preparing(self, mr):
        return self.now() < mr.prepared_at

    def _new_version(self, project, mr, head):
        """Record a diff version for `head` (GitLab's MergeRequestDiff)."""
        repo = self.repo(project)
        start = repo.rev_parse("refs/heads/" + mr.target_branch)
        base = repo.merge_base(start, head)
        if base is None:
            raise SimError("source and target branches share no history")
        version = Version(
            id=self.next_id("version"), mr_id=mr.id, head_sha=head,
            base_sha=base, start_sha=start, created_at=self.now(),
            patch_id_sha=repo.patch_id(base, head),
            files=repo.diff_files(base, head),
            commits=repo.commits(base, head))
        mr.versions.append(version)
        repo.update_ref("refs/merge-requests/%d/head" % mr.iid, head)
        repo.update_ref("refs/keep-around/" + head, head)
        merged_tree = repo.merge_tree(start, head)
        mr.has_conflicts = merged_tree is None
        if merged_tree is None:
            repo.delete_ref("refs/merge-requests/%d/merge" % mr.iid)
        else:
            merge = repo.commit_tree(
                merged_tree, [start, head],
                "Merge branch '%s' into '%s'\n" % (mr.source_branch,
                                                    mr.target_branch),
                {"name": "GitLab", "email": "noreply@example.com"},
                version.created_at)
            repo.update_ref("refs/merge-requests/%d/merge" % mr.iid, merge)
        return version

    def push_head(self, project, mr, head, actor):
        """The MR's source branch now points at `head`: new diff version.

        Returns the new Version, or None when head is already the latest.
        """
        old = mr.latest.head_sha if mr.latest else None
        if head == old:
            return None
        if mr.state != "opened":
            raise SimError("merge request !%d is %s" % (mr.iid, mr.state),
                           409)
        previous = mr.latest
        version = self._new_version(project, mr, head)
        self._trace_positions(mr, version)
        if project.settings.reset_approvals_on_push:
            mr.approvals = []
        new_commits = [c for c in version.commits
                       if previous is None or
                       c["id"] not in {p["id"] for p in previous.commits}]
        self._system_note(project, mr, actor, self._push_note_text(
            project, mr, new_commits, previous, version))
        self._touch(project, mr)
        self.on_event("merge_request", project=project, mr=mr, actor=actor,
                      action="update", changes={}, oldrev=old)
        return version

    def reload_diff(self, project, mr):
        """A new diff version of the same head: GitLab's
        MergeRequests::ReloadDiffsService (app/services/merge_requests/
        reload_diffs_service.rb) makes a new MergeRequestDiff against the
        target branch as it is now and moves the diff threads to it.
        Returns the new Version, or None when a branch is gone (the
        model's reload_diff_if_branch_changed needs both heads)."""
        repo = self.repo(project)
        head = repo.rev_parse("refs/heads/" + mr.source_branch)
        if head is None or mr.latest is None or \
                repo.rev_parse("refs/heads/" + mr.target_branch) is None:
            return None
        version = self._new_version(project, mr, mr.latest.head_sha)
        self._trace_positions(mr, version)
        return version

    def retarget(self, project, mr, user, target_branch):
        """PUT target_branch.  MergeRequest's after_update
        :reload_diff_if_branch_changed (app/models/merge_request.rb)
        reloads the diff when the target branch changed and both branch
        heads exist: a new version with the same head and the new
        target's merge base.  UpdateService#handle_target_branch_change
        (app/services/merge_requests/update_service.rb) adds the system
        note (SystemNotes::MergeRequestsService#change_branch) and, where
        approvals reset on push, drops them
        (ee/app/services/ee/merge_requests/update_service.rb,
        delete_approvals_on_target_branch_change).  Returns the hook's
        changes ({} when the branch is the same)."""
        old = mr.target_branch
        if target_branch == old:
            return {}
        mr.target_branch = target_branch
        self.reload_diff(project, mr)
        self._system_note(project, mr, user,
                          "changed target branch from `%s` to `%s`" %
                          (old, target_branch))
        if project.settings.reset_approvals_on_push:
            mr.approvals = []
        self._touch(project, mr)
        changes = {"target_branch": {"previous": old,
                                     "current": target_branch}}
        self.on_event("merge_request", project=project, mr=mr, actor=user,
                      action="update", changes=changes)
        return changes

    def target_pushed(self, project, branch, old, new):
        """A push moved `branch` from old to new.  MergeRequests::
        RefreshService#reload_merge_requests (app/services/merge_requests/
        refresh_service.rb) reloads the diff of each open MR that targets
        it and whose diff has one of the pushed commits (the target took
        some of the MR's commits): the same head on a new base.  Other
        MRs targeting the branch keep their version.  Returns the MRs
        given a version."""
        repo = self.repo(project)
        pushed = {c["id"] for c in repo.commits(old, new)} if new else set()
        made = []
        for mr in sorted(project.mrs.values(), key=lambda m: m.iid):
            if mr.state != "opened" or mr.target_branch != branch or \
                    mr.latest is None:
                continue
            if not pushed & {c["id"] for c in mr.latest.commits}:
                continue
            version = self.reload_diff(project, mr)
            if version is not None:
                self._touch(project, mr)
                made.append((mr, version))
        return made

    @staticmethod
    def _traced(mr, position, version_id, new):
        """A text position moved to version new, or None.

        GitLab's Gitlab::Diff::PositionTracer follows the line through
        the diffs between the two versions; here only its plainest case
        is modelled, the one every push meets: the file's diff is the
        same in both versions, so the position keeps its paths and line
        numbers and takes the new version's SHAs.  A file whose diff
        changed leaves the position where it was (GitLab then marks the
        thread outdated and adds a system note, which is not modelled).
        """
        old = next((v for v in mr.versions if v.id == version_id), None)
        if old is None or old is new or position is None or \
                position.get("position_type") != "text":
            return None

        def file_of(v):
            for f in v.files:
                if f.new_path == position.get("new_path") and \
                        f.old_path == position.get("old_path"):
                    return f
            return None
        a, b = file_of(old), file_of(new)
        if a is None or b is None or a.diff != b.diff:
            return None
        moved = dict(position)
        moved.update({"base_sha": new.base_sha, "start_sha": new.start_sha,
                      "head_sha": new.head_sha})
        return moved

    def _trace_positions(self, mr, version):
        """Discussions::UpdateDiffPositionService, run for every diff
        thread on a push (app/services/discussions/
        update_diff_position_service.rb): each note of a thread whose
        line is unchanged takes the new position, saved without touching
        updated_at (note.save(touch: false)).  The API shows only the
        moved position (lib/api/entities/note.rb exposes `position`, not
        `original_position`)."""
        for d in mr.discussions:
            first = d.notes[0] if d.notes else None
            if first is None or first.type != "DiffNote":
                continue
            moved = self._traced(mr, first.position, first.version_id,
                                 version)
            if moved is None:
                continue
            for n in d.notes:
                if n.type == "DiffNote":
                    n.position = dict(moved)
                    n.version_id = version.id

    def _push_note_text(self, project, mr, commits, previous, version):
        items = "".join("<li>%s - %s</li>" % (c["id"][:8],
                                              c["message"].split("\n")[0])
                        for c in commits)
        count = len(commits)
        text = "added %d commit%s\n\n<ul>%s</ul>" % (
            count, "" if count == 1 else "s", items)
        if previous is not None:
            text += ("\n\n[Compare with previous version](/%s/-/merge_requests"
                     "/%d/diffs?diff_id=%d&start_sha=%s)" % (
                         project.full_path, mr.iid, version.id,
                         previous.head_sha))
        return text

    def scan_branches(self, project, actor):
        """After a git push: open MRs whose source branch moved get a version.

        actor None attributes the push to each MR's author (anonymous HTTP
        pushes carry no user).
        """
        created = []
        tips = self.repo(project).branches()
        for mr in sorted(project.mrs.values(), key=lambda m: m.iid):
            tip = tips.get(mr.source_branch)
            if mr.state == "opened" and tip and \
                    (mr.latest is None or tip != mr.latest.head_sha):
                pusher = actor or self.users[mr.author_id]
                created.append((mr, self.push_head(project, mr, tip, pusher)))
        return created

    def _touch(self, project, mr):
        """The MR itself was saved (title, labels, state, a push):
        updated_at moves."""
        mr.updated_at = self.now()
        project.last_activity_at = mr.updated_at

    def _touch_noteable(self, project, mr):
        """A note was saved on the MR (a comment, an edit, a note
        resolved by itself, the system note of an approval): Note's after_save
        :touch_noteable (app/models/note.rb) touches the MR, which
        includes ThrottledTouch (app/models/merge_request.rb,
        app/models/concerns/throttled_touch.rb): updated_at moves only
        when it is older than TOUCH_INTERVAL, a minute.  A second comment
        within the minute leaves updated_at where it was."""
        now = self.now()
        project.last_activity_at = now
        interval = datetime.timedelta(
            seconds=self.settings.touch_interval_s)
        if now - mr.updated_at > interval:
            mr.updated_at = now

    def _deleted_note(self, project, mr):
        """Notes::DestroyService destroys the note (app/services/notes/
        destroy_service.rb); no save, so no touch of the MR."""
        project.last_activity_at = self.now()

    # -- merge request state --------------------------------------------------

    def approvals_left(self, project, mr):
        return max(0, project.settings.approvals_required - len(mr.approvals))

    def unresolved_discussions(self, mr):
        return [d for d in mr.discussions
                if any(n.resolvable and not n.resolved for n in d.notes)]

    def detailed_merge_status(self, project, mr):
        if mr.state != "opened":
            return "not_open"
        if self.is_preparing(mr):
            return "preparing"
        if mr.draft:
            return "draft_status"
        if mr.has_conflicts:
            return "conflict"
        if self.needs_rebase(project, mr):
            return "need_rebase"
        if self.approvals_left(project, mr) > 0:
            return "not_approved"
        if project.settings.only_allow_merge_if_all_discussions_are_resolved \
                and self.unresolved_discussions(mr):
            return "discussions_not_resolved"
        return "mergeable"

    def approved_by(self, mr, user):
        return any(a.user_id == user.id for a in mr.approvals)

    def eligible_to_approve(self, project, mr, user):
        """MergeRequest#can_be_approved_by? (ApprovalService's gate), and
        ApprovalService#execute's `return if merge_request.merged?`
        (app/services/merge_requests/approval_service.rb): a merged MR
        answers 401 to anyone."""
        if user is None or mr.state != "opened" or \
                not self.can_approve(project, user):
            return False
        if mr.author_id == user.id and \
                not project.settings.merge_requests_author_approval:
            return False
        return not self.approved_by(mr, user)

    def approve(self, project, mr, user):
        """Record an approval; False when the user is not eligible."""
        if not self.eligible_to_approve(project, mr, user):
            return False
        mr.approvals.append(Approval(user_id=user.id, created_at=self.now()))
        self._system_note(project, mr, user, "approved this merge request")
        self._touch_noteable(project, mr)
        action = "approved" if self.approvals_left(project, mr) == 0 \
            else "approval"
        self.on_event("merge_request", project=project, mr=mr, actor=user,
                      action=action, changes={})
        return True

    def unapprove(self, project, mr, user):
        # RemoveApprovalService#execute: `return unless approved_by?` and
        # `return if merge_request.merged?` (app/services/merge_requests/
        # remove_approval_service.rb): an approval on a merged MR stays,
        # and the endpoint answers 404.
        if not self.approved_by(mr, user) or mr.state == "merged":
            return False
        was_approved = self.approvals_left(project, mr) == 0
        mr.approvals = [a for a in mr.approvals if a.user_id != user.id]
        # MergeRequests::RemoveApprovalService: SystemNoteService
        # .unapprove_mr (app/services/system_notes/merge_requests_service.rb)
        self._system_note(project, mr, user, "unapproved this merge request")
        self._touch_noteable(project, mr)
        action = "unapproved" if was_approved and \
            self.approvals_left(project, mr) > 0 else "unapproval"
        self.on_event("merge_request", project=project, mr=mr, actor=user,
                      action=action, changes={})
        return True

    def close(self, project, mr, user):
        if mr.state != "opened":
            return False
        mr.state = "closed"
        mr.closed_by, mr.closed_at = user.id, self.now()
        self._system_note(project, mr, user, "closed")
        self._touch(project, mr)
        self.on_event("merge_request", project=project, mr=mr, actor=user,
                      action="close",
                      changes={"state_id": {"previous": 1, "current": 2}})
        return True

    def reopen(self, project, mr, user):
        if mr.state != "closed":
            return False
        mr.state = "opened"
        mr.closed_by = mr.closed_at = None
        self._system_note(project, mr, user, "reopened")
        self._touch(project, mr)
        self.on_event("merge_request", project=project, mr=mr, actor=user,
                      action="reopen",
                      changes={"state_id": {"previous": 2, "current": 1}})
        return True

    def mergeable(self, project, mr):
        return self.detailed_merge_status(project, mr) == "mergeable"

    def squash_on_merge(self, project, mr):
        """MergeRequest#squash_on_merge?: the project's squash_option
        decides unless it leaves the choice to the MR."""
        option = project.settings.squash_option
        if option in ("always", "never"):
            return option == "always"
        return mr.squash

    def needs_rebase(self, project, mr):
        """MergeRequest#should_be_rebased?: fast-forward and semi-linear
        merges need the target's tip in the source branch."""
        if project.settings.merge_method == "merge" or mr.latest is None:
            return False
        repo = self.repo(project)
        target = repo.rev_parse("refs/heads/" + mr.target_branch)
        return not repo.is_ancestor(target, mr.latest.head_sha)

    def rebase(self, project, mr, user):
        """PUT .../rebase: the source branch's commits re-applied on the
        target's tip (authors kept, committed now), pushed as a new diff
        version.  Returns the version, None when already up to date;
        raises SimError when a commit does not apply."""
        repo = self.repo(project)
        if mr.state != "opened":
            raise SimError("merge request !%d is %s" % (mr.iid, mr.state),
                           409)
        target = repo.rev_parse("refs/heads/" + mr.target_branch)
        head = mr.latest.head_sha
        if repo.is_ancestor(target, head):
            return None
        onto = target
        for c in reversed(repo.commits(mr.latest.base_sha, head)):
            if len(c["parent_ids"]) != 1:
                continue        # GitLab's rebase drops merge commits too
            onto = repo.cherry_pick(c["id"], onto, self.now())
            if onto is None:
                raise SimError("Rebase failed: %s does not apply" %
                               c["id"][:8], 409)
        repo.update_ref("refs/heads/" + mr.source_branch, onto, head)
        return self.push_head(project, mr, onto, user)

    def merge(self, project, mr, user, squash_message=None):
        """Merge by the project's merge method, squashing when asked
        (MergeRequests::MergeService):

        merge         a merge commit of the target and the head (or of
                      the squash commit): merge_commit_sha is that commit
        rebase_merge  the same, allowed only once the head contains the
                      target's tip (semi-linear history)
        ff            the target fast-forwards to the head (or to the
                      squash commit): no merge commit, merge_commit_sha
                      stays null, as on GitLab

        A squash commit has the head's tree and, as parent, the diff base
        (Gitaly UserSquash) or for the linear methods the target's tip;
        squash_commit_sha names it.
        """
        repo = self.repo(project)
        target_ref = "refs/heads/" + mr.target_branch
        target = repo.rev_parse(target_ref)
        head = mr.latest.head_sha
        method = project.settings.merge_method
        if method != "merge" and not repo.is_ancestor(target, head):
            return False
        tree = repo.merge_tree(target, head)
        if tree is None:
            mr.has_conflicts = True
            return False
        now = self.now()
        who = {"name": user.name, "email": user.email}
        squash = None
        if self.squash_on_merge(project, mr):
            message = squash_message or mr.title + "\n"
            if not message.endswith("\n"):
                message += "\n"
            # On the diff base for a merge commit; on the target's tip
            # (already in the head) for the linear methods.
            parent = mr.latest.base_sha if method == "merge" else target
            squash = repo.commit_tree(
                repo.text("rev-parse", head + "^{tree}").strip(),
                [parent], message, who, now)
            head = squash
        commit = None
        if method == "ff":
            repo.update_ref(target_ref, head, target)
        else:
            message = "Merge branch '%s' into '%s'\n\n%s\n\nSee merge " \
                      "request %s!%d\n" % (mr.source_branch,
                                            mr.target_branch, mr.title,
                                            project.full_path, mr.iid)
            commit = repo.commit_tree(tree, [target, head], message, who,
                                      now)
            repo.update_ref(target_ref, commit, target)
        mr.state = "merged"
        mr.merged_by, mr.merged_at, mr.merge_commit_sha = user.id, now, commit
        mr.squash_commit_sha = squash
        self._system_note(project, mr, user, "merged")
        self._touch(project, mr)
        self.on_event("merge_request", project=project, mr=mr, actor=user,
                      action="merge",
                      changes={"state_id": {"previous": 1, "current": 3}})
        return True

    def update_mr(self, project, mr, user, title=None, description=None,
                  labels=None, add_labels=None, remove_labels=None,
                  reviewer_ids=None, assignee_ids=None):
        """Apply PUT attributes; one "update" hook if anything changed."""
        changes = {}
        if title is not None and title != mr.title:
            if not title.strip():
                raise errors.message(400, {"title": ["can't be blank"]})
            changes["title"] = {"previous": mr.title, "current": title}
            was_draft = is_draft_title(mr.title)
            mr.title = title
            if was_draft != is_draft_title(title):
                changes["draft"] = {"previous": was_draft,
                                    "current": not was_draft}
            self._system_note(project, mr, user, "changed title from **%s** "
                              "to **%s**" % (changes["title"]["previous"],
                                             title))
        if description is not None and description != mr.description:
            changes["description"] = {"previous": mr.description,
                                      "current": description}
            mr.description = description
            self._system_note(project, mr, user, "changed the description")
        if reviewer_ids is not None:
            mr.reviewer_ids = [self.user(i).id for i in reviewer_ids]
        if assignee_ids is not None:
            mr.assignee_ids = [self.user(i).id for i in assignee_ids]
        before = list(mr.labels)
        self.change_labels(project, mr, labels, add_labels, remove_labels)
        if mr.labels != before:
            changes["labels"] = {"previous": before, "current": mr.labels}
        if changes or reviewer_ids is not None or assignee_ids is not None:
            if "title" in changes or "description" in changes:
                mr.last_edited_at, mr.last_edited_by = self.now(), user.id
            self._touch(project, mr)
            self.on_event("merge_request", project=project, mr=mr,
                          actor=user, action="update", changes=changes)
        return changes

    def change_labels(self, project, mr, labels=None, add=None, remove=None):
        """labels replaces the set; add/remove edit it; unknown are created.

        Scoped labels ("scope::value") only displace each other when the
        project enables exclusivity (GitLab Premium); on Free the "::" is
        just part of the name and both labels stay.
        """
        current = list(mr.labels)
        if labels is not None:
            current = []
            for name in labels:
                label = self.find_label(project, name) or \
                    self.create_label(project, name)
                current = self._with_label(project, current, label)
        for name in add or ():
            label = self.find_label(project, name) or \
                self.create_label(project, name)
            current = self._with_label(project, current, label)
        for name in remove or ():
            label = self.find_label(project, name)
            if label is not None and label.id in current:
                current.remove(label.id)
        mr.labels = current

    def _with_label(self, project, current, label):
        if label.id in current:
            return current
        scope = scope_of(label.name)
        if scope and project.settings.scoped_labels_exclusive:
            current = [i for i in current
                       if scope_of(self.label_by_id(project, i).name) != scope]
        return current + [label.id]

    def expire_head_refs(self):
        """Delete head refs of MRs closed or merged more than 14 days ago."""
        now = self.now()
        for project in self.projects.values():
            for mr in project.mrs.values():
                ended = mr.merged_at or mr.closed_at
                if ended and (now - ended).total_seconds() > \
                        HEAD_REF_EXPIRY_S:
                    self.repo(project).delete_ref(
                        "refs/merge-requests/%d/head" % mr.iid)

    # -- notes and discussions ------------------------------------------------

    def find_discussion(self, mr, discussion_id):
        for d in mr.discussions:
            if d.id == discussion_id:
                return d
        return None

    def find_note(self, mr, note_id):
        for d in mr.discussions:
            for n in d.notes:
                if n.id == note_id:
                    return d, n
        return None, None

    def _new_note(self, mr, author, body, type_=None, system=False,
                  internal=False, discussion=None):
        now = self.now()
        note = Note(id=self.next_id("note"), discussion_id="", type=type_,
                    body=body, author_id=author.id, created_at=now,
                    updated_at=now, system=system, internal=internal,
                    held=self.settings.hold_notes)
        if discussion is None:
            discussion = Discussion(id=secrets.token_hex(20),
                                    individual_note=type_ is None,
                                    notes=[])
            mr.discussions.append(discussion)
        note.discussion_id = discussion.id
        discussion.notes.append(note)
        return discussion, note

    def _system_note(self, project, mr, actor, text):
        if self.settings.system_notes:
            self._new_note(mr, actor, text, system=True)

    def _validate_body(self, body):
        if len(body) > MAX_NOTE_LENGTH:
            raise errors.note_invalid([("note", [
                "is too long (maximum is %d characters)" % MAX_NOTE_LENGTH])])
        if not body.strip():
            raise errors.note_invalid([("note", ["can't be blank"])])

    def run_quick_actions(self, project, mr, user, body, diff_head_sha=None):
        """Execute a note's quick actions.

        Returns (remaining text, commands found?, commands_changes,
        summary messages, error messages).
        """
        commands, remaining = quickactions.extract(body)
        changes, messages, failures = {}, [], []
        for name, arg in commands:
            outcome = self._quick_action(project, mr, user, name, arg,
                                         changes, diff_head_sha)
            if outcome is None:
                failures.append("Could not apply %s command." % name)
            elif outcome:
                messages.append(outcome)
        return remaining, bool(commands), changes, messages, failures

    def _quick_action(self, project, mr, user, name, arg, changes,
                      diff_head_sha):
        """One command: a summary message, "" for a no-op, None if refused."""
        if name == "approve":
            if not self.eligible_to_approve(project, mr, user):
                return None
            self.approve(project, mr, user)
            return "Approved the current merge request."
        if name == "unapprove":
            if not self.unapprove(project, mr, user):
                return None
            return "Unapproved the current merge request."
        if name in ("label", "unlabel"):
            if not self.can_update_mr(project, mr, user):
                return None
            return self._quick_label(project, mr, user, name, arg, changes)
        if name == "close":
            if not self.can_update_mr(project, mr, user) or \
                    not self.close(project, mr, user):
                return None
            changes["state_event"] = "close"
            return "Closed this merge request."
        if name == "reopen":
            if not self.can_update_mr(project, mr, user) or \
                    not self.reopen(project, mr, user):
                return None
            changes["state_event"] = "reopen"
            return "Reopened this merge request."
        if name == "merge":
            # Over the API, /merge needs merge_request_diff_head_sha to
            # name the current head (a compare-and-set, like PUT .../merge).
            if diff_head_sha != mr.latest.head_sha or \
                    not self.can_merge(project, user) or \
                    not self.mergeable(project, mr) or \
                    not self.merge(project, mr, user):
                return None
            changes["merge"] = mr.latest.head_sha
            return "Merged this merge request."
        return None

    def _quick_label(self, project, mr, user, name, arg, changes):
        # Quick actions only find labels that exist (LabelsFinder); unlike
        # the add_labels API parameter they never create one.
        labels = [lb for lb in (self.find_label(project, n)
                                for n in quickactions.label_names(arg)) if lb]
        refs = " ".join(quickactions.label_reference(lb.name) for lb in labels)
        noun = "label" if len(labels) == 1 else "labels"
        if name == "label":
            if not labels:
                return ""
            self.update_mr(project, mr, user,
                           add_labels=[lb.name for lb in labels])
            changes.setdefault("add_label_ids", []).extend(
                lb.id for lb in labels)
            return "Added %s %s." % (refs, noun)
        if not arg:
            changes["label_ids"] = []
            self.update_mr(project, mr, user, labels=[])
            return "Removed all labels."
        if not labels:
            return ""
        self.update_mr(project, mr, user,
                       remove_labels=[lb.name for lb in labels])
        changes.setdefault("remove_label_ids", []).extend(
            lb.id for lb in labels)
        return "Removed %s %s." % (refs, noun)

    def create_note(self, project, mr, user, body, internal=False,
                    discussion_type=None, position=None, reply_to=None,
                    diff_head_sha=None):
        """Notes::CreateService: quick actions first, then the note.

        discussion_type None makes an individual note (POST .../notes),
        "DiscussionNote"/"DiffNote" a new thread; reply_to a Discussion to
        append to.  Returns (discussion or None, note or None, changes,
        messages); raises ApiError for GitLab's 400s.  Note None means the
        body held only commands (GitLab answers 202 and saves nothing).
        """
        self._validate_body(body)
        remaining, had_commands, changes, messages, failures = \
            self.run_quick_actions(project, mr, user, body, diff_head_sha)
        if had_commands and not remaining:
            if failures:
                raise errors.bad_request(", ".join(failures))
            return None, None, changes, messages
        text = remaining if had_commands else body
        # Notes::BuildService#new_note: a reply is internal when its
        # thread is (whatever was asked); a new note only when asked by
        # someone who may mark notes internal (Reporter and up,
        # :mark_note_as_internal); anyone else's comes out public.
        if reply_to is not None:
            internal = reply_to.notes[0].internal
        elif internal and not self.can_mark_internal(project, user):
            internal = False
        if reply_to is not None:
            discussion = reply_to
            # Replying to an individual note turns it into a thread.
            if discussion.individual_note:
                discussion.individual_note = False
                for n in discussion.notes:
                    n.type = "DiscussionNote"
            first = discussion.notes[0]
            # A reply in a diff thread is a DiffNote at the thread's
            # position (Discussion#reply_attributes copies type and
            # position from the first note).
            diff = first.type == "DiffNote" and first.position is not None
            _, note = self._new_note(mr, user, text,
                                     "DiffNote" if diff else
                                     "DiscussionNote",
                                     internal=internal,
                                     discussion=discussion)
            if diff:
                position = (dict(first.position), first.line_code,
                            first.version_id)
        else:
            discussion, note = self._new_note(mr, user, text,
                                              discussion_type,
                                              internal=internal)
        if position is not None:
            note.position, note.line_code, note.version_id = position
            note.commit_id = note.position["head_sha"]
            # DiffPositionableNote#update_position (app/models/concerns/
            # diff_positionable_note.rb): a note made on an older version
            # is traced to the MR's newest one when it is created, and
            # keeps that position.
            moved = self._traced(mr, note.position, note.version_id,
                                 mr.latest)
            if moved is not None:
                note.position = moved
                note.version_id = mr.latest.id
            self._suggestions(project, note)
        note.commands_changes = changes
        self._touch_noteable(project, mr)
        if note.held:
            # Hooks run after the commit (Notes::CreateService's side
            # effects follow note.save).
            self.held_notes.append((project, mr, user, note))
        else:
            self.on_event("note", project=project, mr=mr, actor=user,
                          note=note, action="create")
        return discussion, note, changes, messages

    def commit_held_notes(self):
        """The held notes' transactions commit: they become visible with
        the ids and created_at they were given at INSERT."""
        held, self.held_notes = self.held_notes, []
        for project, mr, user, note in held:
            note.held = False
            self.on_event("note", project=project, mr=mr, actor=user,
                          note=note, action="create")
        return [note.id for _, _, _, note in held]

    def _suggestions(self, project, note):
        """Suggestions::CreateService after the note is saved, for a
        DiffNote on a line that is not a removed one (gitlabsim/
        suggestions.py names GitLab's files)."""
        pos = note.position
        if pos.get("position_type") != "text" or not pos.get("new_line"):
            return
        data = self.repo(project).git(
            "cat-file", "blob", "%s:%s" % (pos["head_sha"], pos["new_path"]),
            ok=(0, 128))
        lines = data.decode("utf-8", "replace").splitlines(keepends=True)
        for s in suggestions.parse(note.body, pos["new_line"], lines):
            s["id"] = self.next_id("suggestion")
            note.suggestions.append(s)

    def check_position(self, project, mr, pos):
        """Validate a diff position the way DiffNote#set_line_code does.

        pos holds the coerced position fields.  The diff is the one of the
        MR version with these three SHAs; failing that, like GitLab
        (Gitlab::Diff::DiffRefs#compare_in), a comparison computed from
        the SHAs themselves, as long as they are commits of the project.
        That is GitLab's trap (gitlab-org/gitlab#296829): such a note is
        accepted but belongs to no version, so /_sim/state reports its
        version_id as null for tests to catch.

        Returns (position hash as GitLab echoes it, line_code, version id
        or None); raises the "invalid line code" 400 when the SHAs are not
        commits, the path is not in the diff, or the line numbers do not
        name a line the way GitLab's parser numbers it.
        """
        invalid = errors.note_invalid([("line_code", [
            "can't be blank", "must be a valid line code"])])
        repo = self.repo(project)
        version = next((v for v in mr.versions
                        if v.base_sha == pos["base_sha"] and
                        v.start_sha == pos["start_sha"] and
                        v.head_sha == pos["head_sha"]), None)
        if version is not None:
            base, files = version.base_sha, version.files
        else:
            shas = [pos[k] for k in ("base_sha", "start_sha", "head_sha")]
            if not all(re.fullmatch(r"[0-9a-f]{40}", s) and
                       repo.has_commit(s) for s in shas):
                raise invalid
            base = repo.merge_base(pos["base_sha"], pos["head_sha"]) or \
                pos["base_sha"]
            files = repo.diff_files(base, pos["head_sha"])
        diff_file = None
        for f in files:
            if pos.get("new_path") and f.new_path == pos["new_path"]:
                diff_file = f
                break
            if pos.get("old_path") and f.old_path == pos["old_path"]:
                diff_file = f
        if diff_file is None:
            raise invalid
        echoed = {
            "base_sha": pos["base_sha"], "start_sha": pos["start_sha"],
            "head_sha": pos["head_sha"], "old_path": pos.get("old_path"),
            "new_path": pos.get("new_path"),
            "position_type": pos["position_type"],
        }
        version_id = version.id if version else None
        if pos["position_type"] != "text":
            # File and image positions anchor to the file, not a line.
            for key in ("width", "height", "x", "y"):
                if pos.get(key) is not None:
                    echoed[key] = pos[key]
            return echoed, None, version_id
        code = diffmod.find_line(
            diff_file, pos.get("old_line"), pos.get("new_line"),
            lambda: repo.blob_line_count(base, diff_file.old_path))
        if code is None:
            raise invalid
        echoed.update({"old_line": pos.get("old_line"),
                       "new_line": pos.get("new_line"),
                       "line_range": pos.get("line_range"),
                       "ignore_whitespace_change": False})
        return echoed, code, version_id

    def update_note(self, project, mr, note, user, body):
        self._validate_body(body)
        note.body = body
        note.updated_at = self.now()
        self._touch_noteable(project, mr)
        self.on_event("note", project=project, mr=mr, actor=user, note=note,
                      action="update")

    def delete_note(self, project, mr, discussion, note):
        discussion.notes.remove(note)
        if not discussion.notes:
            mr.discussions.remove(discussion)
        self._deleted_note(project, mr)

    def set_resolved(self, project, mr, notes, user, resolved, one=False):
        """Resolve (or unresolve) notes as GitLab does
        (app/models/concerns/resolvable_note.rb).  A whole thread
        (PUT .../discussions/:id, Discussions::ResolveService and
        ResolvableDiscussion#resolve!) goes through the class method
        resolve!, an update_all of resolved_at and resolved_by_id: no
        callback runs, so neither the notes' updated_at nor the MR's
        moves.  One note (PUT .../discussions/:id/notes/:note_id with
        resolved, Notes::ResolveService) goes through the instance
        method, a save!: its updated_at moves and after_save
        :touch_noteable touches the MR."""
        now = self.now()
        for note in notes:
            if not note.resolvable:
                continue
            if resolved and not note.resolved:
                note.resolved_by, note.resolved_at = user.id, now
            elif not resolved:
                note.resolved_by = note.resolved_at = None
            if one:
                note.updated_at = now
        if one:
            self._touch_noteable(project, mr)

    # -- pipelines ------------------------------------------------------------

    # A pipeline's status from its jobs' (Ci::HasStatus.composite_status,
    # lib/gitlab/ci/status/composite.rb): running while a job is not
    # finished; failed when a job failed that may not; else success
    # (a job allowed to fail counts as a success with warnings).
    FINISHED = ("success", "failed", "canceled", "skipped")

    def _pipeline_status(self, jobs):
        if not jobs:
            return "created"
        if any(j.status not in self.FINISHED for j in jobs):
            return "running"
        if any(j.status == "failed" and not j.allow_failure for j in jobs):
            return "failed"
        if all(j.status == "canceled" for j in jobs):
            return "canceled"
        return "success"

    def create_pipeline(self, project, mr, sha=None, jobs=(), source="push"):
        """A pipeline for the MR's head (or sha), its jobs running; a
        Pipeline Hook goes out (Ci::Pipeline state machine,
        app/models/ci/pipeline.rb: after_transition ... execute_hooks)."""
        sha = sha or (mr.latest.head_sha if mr.latest else None)
        if not sha:
            raise SimError("the merge request has no head")
        now = self.now()
        pipeline = Pipeline(
            id=self.next_id("pipeline"), iid=len(project.pipelines) + 1,
            project_id=project.id, mr_iid=mr.iid, sha=sha,
            ref="refs/merge-requests/%d/head" % mr.iid
            if source == "merge_request_event" else mr.source_branch,
            source=source, status="running", created_at=now,
            updated_at=now, started_at=now)
        for spec in jobs or ({"name": "test", "stage": "test"},):
            pipeline.jobs.append(Job(
                id=self.next_id("job"), name=spec["name"],
                stage=spec.get("stage", "test"), status="running",
                allow_failure=bool(spec.get("allow_failure", False)),
                created_at=now, started_at=now))
        project.pipelines.append(pipeline)
        self.on_event("pipeline", project=project, mr=mr, actor=None,
                      pipeline=pipeline)
        return pipeline

    def find_pipeline(self, project, pipeline_id):
        for pipeline in project.pipelines:
            if pipeline.id == pipeline_id:
                return pipeline
        return None

    def find_job(self, project, job_id):
        for pipeline in project.pipelines:
            for job in pipeline.jobs:
                if job.id == job_id:
                    return pipeline, job
        return None, None

    def finish_pipeline(self, project, pipeline, results, traces=None,
                        default="success"):
        """Each job to results[name] (else default), with its log from
        traces[name]; the pipeline's status follows, and a Pipeline Hook
        goes out.  A finished pipeline may be finished again (a retry:
        Ci::Pipeline#retry_failed, the same pipeline id)."""
        now = self.now()
        for job in pipeline.jobs:
            job.status = results.get(job.name, default)
            if job.status not in self.FINISHED:
                raise SimError("job status %r is not a finished one" %
                               job.status)
            job.trace = (traces or {}).get(job.name, job.trace)
            job.finished_at = now
        pipeline.status = self._pipeline_status(pipeline.jobs)
        pipeline.updated_at = pipeline.finished_at = now
        mr = self.find_mr(project, pipeline.mr_iid)
        self.on_event("pipeline", project=project, mr=mr, actor=None,
                      pipeline=pipeline)
        return pipeline

    def mr_pipelines(self, project, mr):
        """MergeRequest#all_pipelines, newest first: the pipelines of the
        MR's commits (app/models/merge_request.rb all_pipelines)."""
        return [p for p in reversed(project.pipelines)
                if p.mr_iid == mr.iid]

    # -- hooks ----------------------------------------------------------------

    def add_hook(self, project, url, token="", merge_requests_events=True,
                 note_events=True, push_events=False,
                 confidential_note_events=False, pipeline_events=False):
        hook = Hook(id=self.next_id("hook"), project_id=project.id, url=url,
                    token=token or "", uuid=str(uuid.uuid4()),
                    merge_requests_events=bool(merge_requests_events),
                    note_events=bool(note_events),
                    push_events=bool(push_events), created_at=self.now(),
                    confidential_note_events=bool(confidential_note_events),
                    pipeline_events=bool(pipeline_events))
        project.hooks.append(hook)
        return hook

    # -- git over HTTP --------------------------------------------------------

    def after_receive_pack(self, repo_relpath):
        """Called after a push over HTTP: refresh MRs of that repository."""
        with self.lock:
            project = self.project_for_repo_path(repo_relpath)
            if project is None:
                return
            try:
                self.scan_branches(project, None)
            except (GitError, SimError):
                # A push of unrelated history must not break the server; the
                # test will notice that no version appeared.
                pass

