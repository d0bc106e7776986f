"""Plain records of the simulated GitLab instance.

Records hold state only; the rules live in forge.py and the JSON shapes in
entities.py.  Ids come from per-kind counters that start at different
offsets, so a client that sends a note id where an MR iid belongs, or an
MR id where the iid belongs, gets a 404 instead of a lucky match.
"""

import dataclasses
import datetime
import re
import typing

GUEST, REPORTER, DEVELOPER, MAINTAINER, OWNER = 10, 20, 30, 40, 50
ROLES = {"guest": GUEST, "reporter": REPORTER, "developer": DEVELOPER,
         "maintainer": MAINTAINER, "owner": OWNER}

# GitLab derives "draft" from the title (app/models/concerns/issuable.rb).
_DRAFT = re.compile(r"^\s*(\[draft\]|\(draft\)|draft:|draft\s-\s|draft$)",
                    re.IGNORECASE)


def is_draft_title(title):
    return bool(_DRAFT.match(title or ""))


ID_BASES = {"user": 0, "project": 0, "mr": 100, "version": 500,
            "note": 1000, "label": 10, "hook": 0, "token": 0,
            "delivery": 0, "email": 0, "suggestion": 0, "pipeline": 2000,
            "job": 3000}


@dataclasses.dataclass
class User:
    id: int
    username: str
    name: str
    email: str                 # private, primary
    public_email: str
    admin: bool
    state: str
    created_at: typing.Any
    bot: bool = False
    # Secondary emails (app/models/email.rb): [{"id", "email",
    # "confirmed_at"}]; the primary one is `email`.
    secondary_emails: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Token:
    id: int
    token: str
    user_id: int
    scopes: list
    name: str
    impersonation: bool
    created_at: typing.Any
    revoked: bool = False
    # A date (datetime.date) or None: PersonalAccessToken#expires_at is a
    # date column, and the token is expired from that day on (UTC).
    expires_at: typing.Any = None


@dataclasses.dataclass
class ProjectSettings:
    approvals_required: int = 0
    reset_approvals_on_push: bool = False
    merge_requests_author_approval: bool = False
    # EE "Require user re-authentication (password) to approve"
    require_password_to_approve: bool = False
    scoped_labels_exclusive: bool = False
    only_allow_merge_if_all_discussions_are_resolved: bool = False
    # Project settings "Merge method" and "Squash commits when merging".
    merge_method: str = "merge"            # merge | rebase_merge | ff
    squash_option: str = "default_off"     # never | always | default_*

    CHOICES = {"merge_method": ("merge", "rebase_merge", "ff"),
               "squash_option": ("never", "always", "default_on",
                                 "default_off")}

    def update(self, values):
        for key, value in values.items():
            if not hasattr(self, key) or key == "CHOICES":
                raise KeyError(key)
            if key in self.CHOICES and value not in self.CHOICES[key]:
                raise ValueError("%s must be one of %s" %
                                 (key, ", ".join(self.CHOICES[key])))
            setattr(self, key, type(getattr(self, key))(value))


@dataclasses.dataclass
class Label:
    id: int
    name: str
    color: str
    description: typing.Optional[str]
    created_at: typing.Any


@dataclasses.dataclass
class Hook:
    id: int
    project_id: int
    url: str
    token: str
    uuid: str
    merge_requests_events: bool
    note_events: bool
    push_events: bool
    created_at: typing.Any
    # Internal notes go to these hooks only, as "Confidential Note Hook"
    # (app/services/notes/post_process_service.rb execute_note_hooks).
    confidential_note_events: bool = False
    # "Pipeline Hook" deliveries (doc/user/project/integrations/
    # webhook_events.md "Pipeline events").
    pipeline_events: bool = False
    # Auto-disabling (app/models/concerns/web_hooks/auto_disabling.rb,
    # doc/user/project/integrations/webhooks.md "Auto-disabled
    # webhooks"): failures in a row, and until when the hook rests.
    recent_failures: int = 0
    disabled_until: typing.Any = None

    # TEMPORARILY_DISABLED_FAILURE_THRESHOLD and
    # PERMANENTLY_DISABLED_FAILURE_THRESHOLD; the backoff starts at a
    # minute and doubles up to a day.
    TEMP_THRESHOLD = 3
    PERM_THRESHOLD = 39

    def temporarily_disabled(self, now):
        return self.disabled_until is not None and \
            self.disabled_until >= now and \
            self.TEMP_THRESHOLD < self.recent_failures <= self.PERM_THRESHOLD

    def permanently_disabled(self):
        return self.recent_failures > self.PERM_THRESHOLD

    def executable(self, now):
        return not self.temporarily_disabled(now) and \
            not self.permanently_disabled()

    def alert_status(self, now):
        if self.temporarily_disabled(now):
            return "temporarily_disabled"
        if self.permanently_disabled():
            return "disabled"
        return "executable"

    def backoff(self, now):
        """A failed delivery (any answer but 2xx/3xx, or none)."""
        if not self.executable(now):
            return
        self.recent_failures = min(self.recent_failures + 1,
                                   self.PERM_THRESHOLD + 1)
        if self.recent_failures > self.TEMP_THRESHOLD:
            count = self.recent_failures - self.TEMP_THRESHOLD
            seconds = min(max(60 * 2.0 ** count, 60), 86400)
            self.disabled_until = now + datetime.timedelta(seconds=seconds)

    def enable(self):
        """A delivery that worked, or "Enable" in Settings > Webhooks."""
        self.recent_failures = 0
        self.disabled_until = None


@dataclasses.dataclass
class Project:
    id: int
    path: str                  # "name"
    namespace: str             # "group"
    description: str
    default_branch: str
    visibility: str            # private | internal | public
    repo_dir: str
    created_at: typing.Any
    members: dict = dataclasses.field(default_factory=dict)   # uid -> level
    labels: list = dataclasses.field(default_factory=list)
    hooks: list = dataclasses.field(default_factory=list)
    mrs: dict = dataclasses.field(default_factory=dict)       # iid -> MR
    next_iid: int = 1
    settings: ProjectSettings = dataclasses.field(
        default_factory=ProjectSettings)
    last_activity_at: typing.Any = None
    pipelines: list = dataclasses.field(default_factory=list)  # oldest 1st
    # The signature on a commit, by SHA: {"type": "PGP" | "SSH" | "X509",
    # "user": the id of the user whose key made it (None: a key no user
    # uploaded), "status": a verdict given by the test, else computed
    # (Forge.signature_status)}.  GitLab reads it from the commit's
    # gpgsig header and keeps its verdict (app/models/commit_signatures/).
    signatures: dict = dataclasses.field(default_factory=dict)

    @property
    def full_path(self):
        return "%s/%s" % (self.namespace, self.path)


@dataclasses.dataclass
class Version:
    """One MR diff version (GitLab's MergeRequestDiff)."""
    id: int
    mr_id: int
    head_sha: str
    base_sha: str
    start_sha: str
    created_at: typing.Any
    patch_id_sha: typing.Optional[str]
    files: list                # [DiffFile]
    commits: list              # [git commit dicts], newest first


@dataclasses.dataclass
class Approval:
    user_id: int
    created_at: typing.Any


@dataclasses.dataclass
class Note:
    id: int
    discussion_id: str
    type: typing.Optional[str]     # None, "DiscussionNote", "DiffNote"
    body: str
    author_id: int
    created_at: typing.Any
    updated_at: typing.Any
    system: bool = False
    internal: bool = False
    position: typing.Optional[dict] = None
    line_code: typing.Optional[str] = None
    version_id: typing.Optional[int] = None     # diff version of position
    commit_id: typing.Optional[str] = None
    resolved_by: typing.Optional[int] = None
    resolved_at: typing.Any = None
    commands_changes: dict = dataclasses.field(default_factory=dict)
    held: bool = False     # saved, not committed: nobody sees it yet
    # Suggestions::CreateService's rows (gitlabsim/suggestions.py), each
    # with its "id".
    suggestions: list = dataclasses.field(default_factory=list)

    @property
    def resolvable(self):
        # Plain individual comments and system notes are not resolvable.
        return not self.system and self.type in ("DiscussionNote",
                                                  "DiffNote")

    @property
    def resolved(self):
        return self.resolved_at is not None


@dataclasses.dataclass
class Discussion:
    id: str                    # 40 hex
    individual_note: bool
    notes: list                # [Note], oldest first


@dataclasses.dataclass
class MergeRequest:
    id: int
    iid: int
    project_id: int
    title: str
    description: str
    source_branch: str
    target_branch: str
    author_id: int
    created_at: typing.Any
    updated_at: typing.Any
    state: str = "opened"          # opened | closed | merged | locked
    labels: list = dataclasses.field(default_factory=list)    # label ids
    reviewer_ids: list = dataclasses.field(default_factory=list)
    assignee_ids: list = dataclasses.field(default_factory=list)
    versions: list = dataclasses.field(default_factory=list)  # oldest first
    approvals: list = dataclasses.field(default_factory=list)
    discussions: list = dataclasses.field(default_factory=list)
    merged_by: typing.Optional[int] = None
    merged_at: typing.Any = None
    merge_commit_sha: typing.Optional[str] = None
    squash: bool = False               # the MR's "Squash commits" box
    squash_commit_sha: typing.Optional[str] = None
    closed_by: typing.Optional[int] = None
    closed_at: typing.Any = None
    has_conflicts: bool = False
    # null until someone locks or unlocks it (lib/api/entities/
    # issuable_entity.rb exposes the column as it is)
    discussion_locked: typing.Optional[bool] = None
    prepared_at: typing.Any = None     # in the future while "preparing"
    last_edited_at: typing.Any = None
    last_edited_by: typing.Optional[int] = None

    @property
    def draft(self):
        return is_draft_title(self.title)

    @property
    def latest(self):
        return self.versions[-1] if self.versions else None

    def notes(self):
        for d in self.discussions:
            yield from d.notes


@dataclasses.dataclass
class Job:
    """One CI job (Ci::Build, app/models/ci/build.rb)."""
    id: int
    name: str
    stage: str
    status: str                # created, pending, running, success, ...
    allow_failure: bool
    created_at: typing.Any
    started_at: typing.Any = None
    finished_at: typing.Any = None
    trace: str = ""            # the log, as the runner sent it


@dataclasses.dataclass
class Pipeline:
    """One CI pipeline (Ci::Pipeline, app/models/ci/pipeline.rb) of a
    merge request: its head's, as GitLab lists in MergeRequest#
    all_pipelines (branch pipelines of the MR's commits and merge
    request pipelines alike)."""
    id: int
    iid: int
    project_id: int
    mr_iid: int
    sha: str
    ref: str
    source: str                # "push" or "merge_request_event"
    status: str
    created_at: typing.Any
    updated_at: typing.Any
    jobs: list = dataclasses.field(default_factory=list)   # [Job]
    started_at: typing.Any = None
    finished_at: typing.Any = None
