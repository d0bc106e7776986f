"""JSON shapes of GitLab's REST entities (lib/api/entities/*.rb).

Field names, JSON types and null-handling follow the documented examples in
tests/data/gitlab/examples/; the test suite checks every example key is present
here with the same type.  Values GitLab computes from CI, milestones or time
tracking, which the simulator does not model, are the neutral ones GitLab
shows for a project without them (null, 0, false).
"""

from .clock import iso
from .model import DEVELOPER


def _web(forge, path):
    return "%s/%s" % (forge.external_url(), path)


def avatar_url(forge, user):
    return _web(forge, "uploads/-/system/user/avatar/%d/avatar.png" % user.id)


# -- users --------------------------------------------------------------------

def user_basic(forge, user):
    """Entities::UserBasic: what author, reviewers, approved_by[].user show."""
    if user is None:
        return None
    return {
        "id": user.id, "username": user.username, "name": user.name,
        "state": user.state, "locked": False,
        "avatar_url": avatar_url(forge, user),
        "web_url": _web(forge, user.username),
    }


def user_public(forge, user):
    """Entities::User: GET /users/:id for a non-admin (public email only)."""
    out = user_basic(forge, user)
    out.update({
        "created_at": iso(user.created_at), "bio": "", "location": None,
        "public_email": user.public_email or None, "linkedin": "",
        "twitter": "", "discord": "", "website_url": "",
        "organization": "", "job_title": "", "pronouns": None,
        "bot": user.bot, "work_information": None, "local_time": None,
    })
    return out


def user_admin(forge, user):
    """Entities::UserWithAdmin: /users as an administrator (adds email)."""
    out = user_public(forge, user)
    out.update({
        "email": user.email, "is_admin": user.admin, "skype": "",
        "last_sign_in_at": None, "confirmed_at": iso(user.created_at),
        "theme_id": 1, "last_activity_on": user.created_at.strftime(
            "%Y-%m-%d"),
        "color_scheme_id": 1, "projects_limit": 100,
        "current_sign_in_at": None, "note": "",
        "identities": [], "can_create_group": True,
        "can_create_project": True, "two_factor_enabled": False,
        "external": False, "private_profile": False,
        "current_sign_in_ip": None, "last_sign_in_ip": None,
        "namespace_id": user.id, "created_by": None,
        "email_reset_offered_at": None, "commit_email": user.email,
    })
    return out


def current_user(forge, user, admin=None):
    """GET /user: UserPublic for yourself (your own email included);
    UserWithAdmin (is_admin ...) when acting as an administrator."""
    out = user_admin(forge, user)
    if not (user.admin if admin is None else admin):
        for key in ("is_admin", "note", "namespace_id", "created_by",
                    "email_reset_offered_at", "current_sign_in_ip",
                    "last_sign_in_ip", "skype"):
            out.pop(key, None)
    return out


# -- projects and labels ------------------------------------------------------

def project(forge, project_):
    path = project_.full_path
    return {
        "id": project_.id, "description": project_.description,
        "name": project_.path, "name_with_namespace": "%s / %s" % (
            project_.namespace, project_.path),
        "path": project_.path, "path_with_namespace": path,
        "created_at": iso(project_.created_at),
        "default_branch": project_.default_branch, "tag_list": [],
        "topics": [], "ssh_url_to_repo": "git@127.0.0.1:%s.git" % path,
        "http_url_to_repo": _web(forge, path + ".git"),
        "web_url": _web(forge, path), "readme_url": None,
        "forks_count": 0, "avatar_url": None, "star_count": 0,
        "last_activity_at": iso(project_.last_activity_at),
        "visibility": project_.visibility,
        "namespace": {"id": project_.id, "name": project_.namespace,
                      "path": project_.namespace, "kind": "group",
                      "full_path": project_.namespace, "parent_id": None,
                      "avatar_url": None,
                      "web_url": _web(forge, "groups/" + project_.namespace)},
        "empty_repo": not forge.repo(project_).branches(),
        "archived": False, "merge_requests_enabled": True,
        "issues_enabled": True, "open_issues_count": 0,
        "merge_method": project_.settings.merge_method,
        "squash_option": project_.settings.squash_option,
        "only_allow_merge_if_all_discussions_are_resolved":
            project_.settings.only_allow_merge_if_all_discussions_are_resolved,
        "merge_requests_author_approval":
            project_.settings.merge_requests_author_approval,
        "reset_approvals_on_push": project_.settings.reset_approvals_on_push,
    }


def label(forge, project_, label_):
    open_mrs = sum(1 for mr in project_.mrs.values()
                   if mr.state == "opened" and label_.id in mr.labels)
    return {
        "id": label_.id, "name": label_.name, "color": label_.color,
        "text_color": "#FFFFFF", "description": label_.description,
        "description_html": label_.description or "",
        "open_issues_count": 0, "closed_issues_count": 0,
        "open_merge_requests_count": open_mrs, "subscribed": False,
        "priority": None, "is_project_label": True, "archived": False,
    }


def hook_label(forge, project_, label_):
    """Labels as webhook payloads show them (full records, ISO times)."""
    return {
        "id": label_.id, "title": label_.name, "color": label_.color,
        "project_id": project_.id, "created_at": iso(label_.created_at),
        "updated_at": iso(label_.created_at), "template": False,
        "description": label_.description, "type": "ProjectLabel",
        "group_id": None,
    }


def hook(forge, hook_):
    return {
        "id": hook_.id, "url": hook_.url, "project_id": hook_.project_id,
        "created_at": iso(hook_.created_at), "push_events": hook_.push_events,
        "merge_requests_events": hook_.merge_requests_events,
        "note_events": hook_.note_events, "issues_events": False,
        "pipeline_events": hook_.pipeline_events,
        "tag_push_events": False, "enable_ssl_verification": True,
        "alert_status": hook_.alert_status(forge.now()),
        "disabled_until": iso(hook_.disabled_until),
    }


def email(record):
    """Entities::Email (lib/api/entities/email.rb)."""
    return {"id": record["id"], "email": record["email"],
            "confirmed_at": iso(record["confirmed_at"])}


def token(forge, token_, with_secret=False):
    out = {
        "id": token_.id, "name": token_.name, "revoked": token_.revoked,
        "created_at": iso(token_.created_at), "description": None,
        "scopes": token_.scopes, "user_id": token_.user_id,
        "last_used_at": None,
        "active": not token_.revoked and not forge.token_expired(token_),
        "expires_at": token_.expires_at.isoformat()
        if token_.expires_at else None, "impersonation": token_.impersonation,
    }
    if with_secret:
        out["token"] = token_.token
    return out


# -- merge requests -----------------------------------------------------------

def _mr_web_url(forge, project_, mr):
    return _web(forge, "%s/-/merge_requests/%d" % (project_.full_path,
                                                   mr.iid))


def mr_basic(forge, project_, mr):
    """Entities::MergeRequestBasic: list items (no diff_refs)."""
    users = forge.users
    draft = mr.draft
    status = forge.detailed_merge_status(project_, mr)
    unresolved = forge.unresolved_discussions(mr)
    return {
        "id": mr.id, "iid": mr.iid, "project_id": project_.id,
        "title": mr.title, "description": mr.description,
        "state": mr.state, "imported": False, "imported_from": "none",
        "created_at": iso(mr.created_at), "updated_at": iso(mr.updated_at),
        "merged_by": user_basic(forge, users.get(mr.merged_by)),
        "merge_user": user_basic(forge, users.get(mr.merged_by)),
        "merged_at": iso(mr.merged_at), "merge_after": None,
        "prepared_at": None if forge.is_preparing(mr)
        else iso(mr.prepared_at),
        "closed_by": user_basic(forge, users.get(mr.closed_by)),
        "closed_at": iso(mr.closed_at),
        "target_branch": mr.target_branch,
        "source_branch": mr.source_branch,
        "user_notes_count": sum(1 for n in mr.notes() if not n.system),
        "upvotes": 0, "downvotes": 0,
        "author": user_basic(forge, users[mr.author_id]),
        "assignees": [user_basic(forge, users[i]) for i in mr.assignee_ids],
        "assignee": user_basic(forge, users[mr.assignee_ids[0]])
        if mr.assignee_ids else None,
        "reviewers": [user_basic(forge, users[i]) for i in mr.reviewer_ids],
        "source_project_id": project_.id, "target_project_id": project_.id,
        "labels": forge.label_names(project_, mr),
        "draft": draft, "work_in_progress": draft, "milestone": None,
        "merge_when_pipeline_succeeds": False,
        "merge_status": "cannot_be_merged" if mr.has_conflicts
        else ("unchecked" if status == "preparing" else "can_be_merged"),
        "detailed_merge_status": status,
        "sha": mr.latest.head_sha if mr.latest else None,
        "merge_commit_sha": mr.merge_commit_sha,
        "squash_commit_sha": mr.squash_commit_sha,
        "discussion_locked": mr.discussion_locked,
        "should_remove_source_branch": None,
        "force_remove_source_branch": False,
        "allow_collaboration": False, "allow_maintainer_to_push": False,
        "reference": "!%d" % mr.iid,
        "references": {"short": "!%d" % mr.iid, "relative": "!%d" % mr.iid,
                       "full": "%s!%d" % (project_.full_path, mr.iid)},
        "web_url": _mr_web_url(forge, project_, mr),
        "time_stats": {"time_estimate": 0, "total_time_spent": 0,
                       "human_time_estimate": None,
                       "human_total_time_spent": None},
        "squash": mr.squash,
        "squash_on_merge": forge.squash_on_merge(project_, mr),
        "task_completion_status": {"count": 0, "completed_count": 0},
        "has_conflicts": mr.has_conflicts,
        "blocking_discussions_resolved": not (
            project_.settings.only_allow_merge_if_all_discussions_are_resolved
            and unresolved),
        "approvals_before_merge": project_.settings.approvals_required
        if forge.settings.edition == "ee" else None,
    }


def mr_full(forge, project_, mr, viewer, diverged=False):
    """Entities::MergeRequest: single MR (diff_refs = latest version)."""
    out = mr_basic(forge, project_, mr)
    preparing = forge.is_preparing(mr)
    latest = None if preparing else mr.latest
    out.update({
        "subscribed": viewer is not None and viewer.id in (
            mr.author_id, *mr.reviewer_ids, *mr.assignee_ids),
        "changes_count": None if latest is None else (
            str(len(latest.files)) if len(latest.files) <= 1000
            else "1000+"),
        "latest_build_started_at": None, "latest_build_finished_at": None,
        "first_deployed_to_production_at": None, "pipeline": None,
        "head_pipeline": None,
        "diff_refs": None if latest is None else {
            "base_sha": latest.base_sha, "head_sha": latest.head_sha,
            "start_sha": latest.start_sha},
        "merge_error": None, "first_contribution": False,
        "user": {"can_merge": forge.can_merge(project_, viewer)},
    })
    if diverged:
        repo = forge.repo(project_)
        target = repo.rev_parse("refs/heads/" + mr.target_branch)
        out["diverged_commits_count"] = len(repo.commits(
            mr.latest.head_sha, target)) if mr.latest else 0
    return out


def version(forge, mr, v):
    return {
        "id": v.id, "head_commit_sha": v.head_sha,
        "base_commit_sha": v.base_sha, "start_commit_sha": v.start_sha,
        "created_at": iso(v.created_at), "merge_request_id": mr.id,
        "state": "collected" if v.files else "empty",
        "real_size": str(len(v.files)), "patch_id_sha": v.patch_id_sha,
    }


def version_full(forge, project_, mr, v):
    out = version(forge, mr, v)
    out["commits"] = [commit(forge, project_, c) for c in v.commits]
    out["diffs"] = [diff_file(f) for f in v.files]
    return out


def _git_date(value):
    """git's strict ISO (2016-07-26T17:44:29+03:00) with GitLab's .000."""
    if value.endswith("Z"):
        return value[:-1] + ".000Z"
    return value[:-6] + ".000" + value[-6:]


def commit(forge, project_, c):
    last_trailers, every_trailer = c["trailers"]
    return {
        "id": c["id"], "short_id": c["id"][:8],
        "created_at": _git_date(c["committed_date"]),
        "parent_ids": c["parent_ids"],
        "title": c["message"].split("\n", 1)[0], "message": c["message"],
        "author_name": c["author_name"], "author_email": c["author_email"],
        "authored_date": _git_date(c["authored_date"]),
        "committer_name": c["committer_name"],
        "committer_email": c["committer_email"],
        "committed_date": _git_date(c["committed_date"]),
        "trailers": last_trailers, "extended_trailers": every_trailer,
        "web_url": _web(forge, "%s/-/commit/%s" % (project_.full_path,
                                                   c["id"])),
    }


def commit_detail(forge, project_, c):
    out = commit(forge, project_, c)
    out.update({"stats": None, "status": None, "last_pipeline": None,
                "project_id": project_.id})
    return out


def commit_signature(forge, project_, sha, status):
    """Entities::CommitSignature (lib/api/entities/commit_signature.rb):
    signature_type, the signature's own entity merged in (merge: true),
    commit_source.  PGP: gpg_commit_signature.rb; SSH: ssh_signature.rb
    with Entities::SSHKey; X509: x509_signature.rb with
    Entities::X509Certificate.  The shapes of doc/api/commits.md "Get
    signature of a commit"."""
    sig = project_.signatures[sha]
    user = forge.users.get(sig["user"]) if sig["user"] else None
    key_id = 1000 + (user.id if user else 0)
    out = {"signature_type": sig["type"], "verification_status": status}
    if sig["type"] == "PGP":
        out.update({
            "gpg_key_id": key_id if user else None,
            "gpg_key_primary_keyid": "%016X" % (0x8254AAB3FBD54AC9 ^ key_id),
            "gpg_key_user_name": user.name if user else None,
            "gpg_key_user_email": user.email if user else None,
            "gpg_key_subkey_id": None,
        })
    elif sig["type"] == "SSH":
        out["key"] = None if user is None else {
            "id": key_id, "title": sig["title"],
            "created_at": iso(user.created_at), "expires_at": None,
            "key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%s %s" % (
                ("%040d" % key_id), user.username),
            "usage_type": "auth_and_signing",
        }
    else:
        email = user.email if user else "unknown@example.org"
        out["x509_certificate"] = {
            "id": key_id, "subject": "CN=%s,OU=Example,O=World" % email,
            "subject_key_identifier": ":".join(["BC"] * 20),
            "email": email, "serial_number": 278969561018901340 + key_id,
            "certificate_status": "good",
            "x509_issuer": {
                "id": 1, "subject": "CN=PKI,OU=Example,O=World",
                "subject_key_identifier": ":".join(["AB"] * 20),
                "crl_url": "http://example.com/pki.crl",
            },
        }
    out["commit_source"] = "gitaly"
    return out


def diff_file(f):
    return {
        "old_path": f.old_path, "new_path": f.new_path,
        "a_mode": f.a_mode, "b_mode": f.b_mode, "diff": f.diff,
        "collapsed": False, "too_large": False,
        "new_file": f.new_file, "renamed_file": f.renamed_file,
        "deleted_file": f.deleted_file, "generated_file": False,
    }


# -- notes, discussions, approvals --------------------------------------------

def note(forge, project_, mr, n):
    users = forge.users
    out = {
        "id": n.id, "type": n.type, "body": n.body, "attachment": None,
        "author": user_basic(forge, users[n.author_id]),
        "created_at": iso(n.created_at), "updated_at": iso(n.updated_at),
        "system": n.system, "noteable_id": mr.id,
        "noteable_type": "MergeRequest", "project_id": project_.id,
    }
    if n.type == "DiffNote":
        out["commit_id"] = n.commit_id
        out["position"] = n.position
    out["resolvable"] = n.resolvable
    if n.resolvable:
        out["resolved"] = n.resolved
        out["resolved_by"] = user_basic(forge, users.get(n.resolved_by))
        out["resolved_at"] = iso(n.resolved_at)
    if n.type == "DiffNote":
        # lib/api/entities/suggestion.rb; appliable? is false once
        # applied, on an MR no longer open, or for no change
        # (app/models/suggestion.rb, inapplicable_reason).
        out["suggestions"] = [{
            "id": s["id"], "from_line": s["from_line"],
            "to_line": s["to_line"],
            "appliable": not s["applied"] and mr.state == "opened" and
            s["from_content"] != s["to_content"],
            "applied": s["applied"], "from_content": s["from_content"],
            "to_content": s["to_content"]} for s in n.suggestions]
    out.update({
        "confidential": n.internal, "internal": n.internal,
        "imported": False, "imported_from": "none",
        "noteable_iid": mr.iid, "commands_changes": n.commands_changes,
    })
    return out


def discussion(forge, project_, mr, d, viewer):
    return {
        "id": d.id, "individual_note": d.individual_note,
        "notes": [note(forge, project_, mr, n) for n in d.notes
                  if forge.can_read_note(project_, n, viewer)],
    }


def note_commands(changes, messages):
    """Entities::NoteCommands: the 202 body of a commands-only note."""
    return {"commands_changes": changes, "summary": messages}


def approvals(forge, project_, mr, viewer):
    """MergeRequestApprovals (CE) or the EE ApprovalState superset."""
    users = forge.users
    approved_by = [{"user": user_basic(forge, users[a.user_id]),
                    "approved_at": iso(a.created_at)} for a in mr.approvals]
    left = forge.approvals_left(project_, mr)
    ce = {
        "user_has_approved": viewer is not None and
        forge.approved_by(mr, viewer),
        "user_can_approve": forge.eligible_to_approve(project_, mr, viewer),
        # CE: approved once anyone approved; EE: once no approval is left.
        "approved": bool(mr.approvals),
        "approved_by": approved_by,
    }
    if forge.settings.edition == "ce":
        return ce
    ce["approved"] = left == 0
    out = {
        "id": mr.id, "iid": mr.iid, "project_id": project_.id,
        "title": mr.title, "description": mr.description,
        "state": mr.state, "created_at": iso(mr.created_at),
        "updated_at": iso(mr.updated_at),
        "merge_status": "cannot_be_merged" if mr.has_conflicts
        else "can_be_merged",
        "approvals_required": project_.settings.approvals_required,
        "approvals_left": left,
        # ee/lib/ee/api/entities/approval_state.rb: the project's setting
        "require_password_to_approve":
            project_.settings.require_password_to_approve,
        "suggested_approvers": [], "approvers": [], "approver_groups": [],
        "approval_rules_left": [], "has_approval_rules": False,
        "merge_request_approvers_available": True,
        "multiple_approval_rules_available": True,
        "invalid_approvers_rules": [],
    }
    out.update(ce)
    return out


def approval_state(forge, project_, mr):
    """GET .../approval_state (Premium): one any_approver rule."""
    users = forge.users
    eligible = sorted((uid for uid, level in project_.members.items()
                       if level >= DEVELOPER), key=int)
    required = project_.settings.approvals_required
    return {
        "approval_rules_overwritten": False,
        "rules": [{
            "id": project_.id, "name": "All Members",
            "rule_type": "any_approver",
            "eligible_approvers": [user_basic(forge, users[u])
                                   for u in eligible],
            "approvals_required": required, "users": [], "groups": [],
            "contains_hidden_groups": False,
            "approved_by": [user_basic(forge, users[a.user_id])
                            for a in mr.approvals],
            "source_rule": None,
            "approved": len(mr.approvals) >= required,
            "overridden": False, "code_owner": False, "report_type": None,
            "section": None,
        }],
    }


def pipeline_basic(forge, project, pipeline):
    """Entities::Ci::PipelineBasic (lib/api/entities/ci/pipeline_basic.rb);
    doc/api/merge_requests.md "List merge request pipelines"."""
    return {
        "id": pipeline.id, "iid": pipeline.iid,
        "project_id": pipeline.project_id, "sha": pipeline.sha,
        "ref": pipeline.ref, "status": pipeline.status,
        "source": pipeline.source,
        "created_at": iso(pipeline.created_at),
        "updated_at": iso(pipeline.updated_at),
        "web_url": "%s/%s/-/pipelines/%d" % (
            forge.external_url(), project.full_path, pipeline.id),
    }


def job(forge, project, pipeline, job_):
    """Entities::Ci::Job (lib/api/entities/ci/job.rb over job_basic.rb);
    doc/api/jobs.md "List pipeline jobs".  No runner, artifacts or
    user: the simulator has none."""
    duration = None
    if job_.started_at and job_.finished_at:
        duration = (job_.finished_at - job_.started_at).total_seconds()
    return {
        "id": job_.id, "status": job_.status, "stage": job_.stage,
        "name": job_.name, "ref": pipeline.ref, "tag": False,
        "coverage": None, "allow_failure": job_.allow_failure,
        "created_at": iso(job_.created_at),
        "started_at": iso(job_.started_at),
        "finished_at": iso(job_.finished_at), "erased_at": None,
        "duration": duration, "queued_duration": 0.0, "user": None,
        "pipeline": {"id": pipeline.id, "project_id": pipeline.project_id,
                     "ref": pipeline.ref, "sha": pipeline.sha,
                     "status": pipeline.status},
        "failure_reason": "script_failure"
        if job_.status == "failed" else None,
        "web_url": "%s/%s/-/jobs/%d" % (forge.external_url(),
                                        project.full_path, job_.id),
        "artifacts": [], "runner": None, "artifacts_expire_at": None,
        "archived": False, "tag_list": [],
    }
