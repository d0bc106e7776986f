"""Webhook payloads and their asynchronous delivery.

Payload shapes follow doc/user/project/integrations/webhook_events.md (see
tests/data/gitlab/examples/webhooks/) and lib/gitlab/hook_data/*.  The mixed
timestamp formats are deliberate: GitLab really sends ISO times in some
fields and "2015-05-17 18:21:36 UTC" in others.

Payloads are built synchronously, under the forge lock, so they describe
the state right after the change; one worker thread then POSTs them in
order with a short timeout and records every attempt for inspection.
Redelivery reuses the Idempotency-Key, as GitLab's "Resend request" does.
"""

import collections
import http.client
import json
import queue
import threading
import time
import urllib.parse
import uuid

from . import GITLAB_VERSION
from . import entities as ent
from .clock import iso, iso_seconds, utc_words

_STATE_ID = {"opened": 1, "closed": 2, "merged": 3, "locked": 4}
_MAX_DELIVERIES = 1000


def _hook_user(forge, user):
    return {
        "id": user.id, "name": user.name, "username": user.username,
        "avatar_url": ent.avatar_url(forge, user),
        "email": user.public_email or "[REDACTED]",
    }


def _short_user(forge, user):
    return {"id": user.id, "name": user.name, "username": user.username,
            "avatar_url": ent.avatar_url(forge, user)}


def _hook_project(forge, project):
    web = "%s/%s" % (forge.external_url(), project.full_path)
    return {
        "id": project.id, "name": project.path,
        "description": project.description, "web_url": web,
        "avatar_url": None,
        "git_ssh_url": "git@127.0.0.1:%s.git" % project.full_path,
        "git_http_url": web + ".git", "namespace": project.namespace,
        "visibility_level": {"private": 0, "internal": 10,
                             "public": 20}[project.visibility],
        "path_with_namespace": project.full_path,
        "default_branch": project.default_branch, "ci_config_path": "",
        "homepage": web, "url": web + ".git",
        "ssh_url": "git@127.0.0.1:%s.git" % project.full_path,
        "http_url": web + ".git",
    }


def _repository(forge, project):
    web = "%s/%s" % (forge.external_url(), project.full_path)
    return {"name": project.path, "url": web + ".git",
            "description": project.description, "homepage": web}


def _last_commit(forge, project, mr):
    if not mr.latest or not mr.latest.commits:
        return None
    c = mr.latest.commits[0]
    return {
        "id": c["id"], "message": c["message"],
        "title": c["message"].split("\n", 1)[0],
        "timestamp": c["committed_date"],
        "url": "%s/%s/-/commit/%s" % (forge.external_url(), project.full_path,
                                      c["id"]),
        "author": {"name": c["author_name"], "email": c["author_email"]},
    }


def _labels(forge, project, label_ids):
    return [ent.hook_label(forge, project, forge.label_by_id(project, i))
            for i in label_ids]


def _mr_attributes(forge, project, mr, timestamp):
    """MergeRequest#hook_attrs; `timestamp` formats created/updated_at."""
    web = "%s/%s" % (forge.external_url(), project.full_path)
    return {
        "id": mr.id, "iid": mr.iid, "target_branch": mr.target_branch,
        "source_branch": mr.source_branch, "source_project_id": project.id,
        "author_id": mr.author_id, "assignee_ids": list(mr.assignee_ids),
        "assignee_id": mr.assignee_ids[0] if mr.assignee_ids else None,
        "reviewer_ids": list(mr.reviewer_ids), "title": mr.title,
        "created_at": timestamp(mr.created_at),
        "updated_at": timestamp(mr.updated_at),
        "last_edited_at": timestamp(mr.last_edited_at),
        "last_edited_by_id": mr.last_edited_by, "milestone_id": None,
        "state_id": _STATE_ID[mr.state], "state": mr.state,
        "blocking_discussions_resolved":
            not forge.unresolved_discussions(mr),
        "work_in_progress": mr.draft, "draft": mr.draft,
        "first_contribution": False,
        "merge_status": "cannot_be_merged" if mr.has_conflicts
        else "can_be_merged",
        "target_project_id": project.id, "description": mr.description,
        "prepared_at": None if forge.is_preparing(mr)
        else timestamp(mr.prepared_at),
        "total_time_spent": 0, "time_change": 0,
        "human_total_time_spent": None, "human_time_change": None,
        "human_time_estimate": None,
        "url": "%s/-/merge_requests/%d" % (web, mr.iid),
        "source": _hook_project(forge, project),
        "target": _hook_project(forge, project),
        "last_commit": _last_commit(forge, project, mr),
        "labels": _labels(forge, project, mr.labels),
        "detailed_merge_status": forge.detailed_merge_status(project, mr),
    }


def merge_request_payload(forge, project, mr, actor, action, changes,
                          oldrev=None):
    attrs = _mr_attributes(forge, project, mr, iso_seconds)
    attrs["action"] = action
    if oldrev is not None:
        # Only when code changed: the receiver's cue to fetch versions.
        attrs["oldrev"] = oldrev
    rendered = {}
    for field, change in changes.items():
        if field == "labels":
            change = {"previous": _labels(forge, project, change["previous"]),
                      "current": _labels(forge, project, change["current"])}
        rendered[field] = change
    if changes:
        rendered["updated_at"] = {"previous": None,
                                  "current": utc_words(mr.updated_at)}
    users = forge.users
    return {
        "object_kind": "merge_request", "event_type": "merge_request",
        "user": _hook_user(forge, actor),
        "project": _hook_project(forge, project),
        "object_attributes": attrs,
        "labels": _labels(forge, project, mr.labels),
        "changes": rendered,
        "repository": _repository(forge, project),
        "assignees": [_short_user(forge, users[i]) for i in mr.assignee_ids],
        "reviewers": [_short_user(forge, users[i]) for i in mr.reviewer_ids],
    }


def note_payload(forge, project, mr, actor, note, action):
    web = "%s/%s" % (forge.external_url(), project.full_path)
    mr_attrs = _mr_attributes(forge, project, mr, utc_words)
    for key in ("action", "source", "target"):
        mr_attrs.pop(key, None)
    mr_attrs.update({
        "position": 0, "source": _hook_project(forge, project),
        "target": _hook_project(forge, project),
        "assignee": _short_user(forge, forge.users[mr.assignee_ids[0]])
        if mr.assignee_ids else None,
    })
    return {
        "object_kind": "note", "event_type": "note",
        "user": _hook_user(forge, actor), "project_id": project.id,
        "project": _hook_project(forge, project),
        "repository": _repository(forge, project),
        "object_attributes": {
            "id": note.id, "note": note.body,
            "noteable_type": "MergeRequest", "author_id": note.author_id,
            "created_at": utc_words(note.created_at),
            "updated_at": utc_words(note.updated_at),
            "project_id": project.id, "attachment": None,
            "line_code": note.line_code, "commit_id": note.commit_id or "",
            "noteable_id": mr.id, "system": note.system, "st_diff": None,
            "action": action, "discussion_id": note.discussion_id,
            "type": note.type, "position": note.position,
            "original_position": note.position, "change_position": None,
            "resolved_at": iso(note.resolved_at),
            "resolved_by_id": note.resolved_by,
            "confidential": note.internal, "internal": note.internal,
            "url": "%s/-/merge_requests/%d#note_%d" % (web, mr.iid,
                                                       note.id),
        },
        "merge_request": mr_attrs,
    }


def pipeline_payload(forge, project, mr, pipeline):
    """Gitlab::DataBuilder::Pipeline (lib/gitlab/data_builder/pipeline.rb),
    doc/user/project/integrations/webhook_events.md "Pipeline events":
    the pipeline, its merge request (null for a pipeline of no MR) and
    its jobs as "builds"."""
    web = "%s/%s" % (forge.external_url(), project.full_path)
    finished = pipeline.finished_at
    return {
        "object_kind": "pipeline",
        "object_attributes": {
            "id": pipeline.id, "iid": pipeline.iid, "name": None,
            "ref": pipeline.ref, "tag": False, "sha": pipeline.sha,
            "before_sha": "0" * 40, "source": pipeline.source,
            "status": pipeline.status,
            "detailed_status": pipeline.status,
            "stages": sorted({j.stage for j in pipeline.jobs}),
            "created_at": utc_words(pipeline.created_at),
            "finished_at": utc_words(finished),
            "duration": int((finished - pipeline.started_at)
                            .total_seconds()) if finished else None,
            "queued_duration": 0, "variables": [],
            "url": "%s/-/pipelines/%d" % (web, pipeline.id),
        },
        "merge_request": {
            "id": mr.id, "iid": mr.iid, "title": mr.title,
            "source_branch": mr.source_branch,
            "source_project_id": project.id,
            "target_branch": mr.target_branch,
            "target_project_id": project.id, "state": mr.state,
            "merge_status": "can_be_merged",
            "detailed_merge_status": forge.detailed_merge_status(project,
                                                                 mr),
            "url": "%s/-/merge_requests/%d" % (web, mr.iid),
        } if mr is not None else None,
        "user": None,
        "project": _hook_project(forge, project),
        "commit": {"id": pipeline.sha},
        "source_pipeline": None,
        "builds": [{
            "id": j.id, "stage": j.stage, "name": j.name,
            "status": j.status, "created_at": utc_words(j.created_at),
            "started_at": utc_words(j.started_at),
            "finished_at": utc_words(j.finished_at),
            "allow_failure": j.allow_failure,
            "failure_reason": "script_failure"
            if j.status == "failed" else None,
        } for j in pipeline.jobs],
    }


class Dispatcher:
    """Builds hook payloads on forge events and delivers them in order."""

    def __init__(self, forge):
        self.forge = forge
        self.queue = queue.Queue()
        self.deliveries = collections.OrderedDict()
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)
        self.pending = 0
        self.next_id = 0
        self.thread = threading.Thread(target=self._run, name="webhooks",
                                       daemon=True)
        self.thread.start()

    def reset(self):
        with self.lock:
            self.deliveries.clear()

    def on_event(self, kind, project, mr, actor, **details):
        """Forge.on_event: called under the forge lock."""
        wanted = {"merge_request": "merge_requests_events",
                  "pipeline": "pipeline_events"}.get(kind, "note_events")
        # An internal note goes to the hooks with confidential_note_events
        # only, as "Confidential Note Hook" (app/services/notes/
        # post_process_service.rb: hooks_scope :confidential_note_hooks;
        # WebHookService.hook_to_event titleizes the scope).
        confidential = kind == "note" and details["note"].internal
        if confidential:
            wanted = "confidential_note_events"
        # A hook GitLab disabled gets nothing (WebHooks::AutoDisabling
        # executable scope, app/models/concerns/web_hooks/
        # auto_disabling.rb).
        hooks = [h for h in project.hooks if getattr(h, wanted) and
                 h.executable(self.forge.now())]
        if not hooks:
            return
        if kind == "merge_request":
            payload = merge_request_payload(self.forge, project, mr, actor,
                                            **details)
            event = "Merge Request Hook"
        elif kind == "pipeline":
            payload = pipeline_payload(self.forge, project, mr,
                                       details["pipeline"])
            event = "Pipeline Hook"
        else:
            if details["note"].system:
                return
            payload = note_payload(self.forge, project, mr, actor,
                                   details["note"], details["action"])
            event = "Confidential Note Hook" if confidential else "Note Hook"
        body = json.dumps(payload).encode("utf-8")
        event_uuid = str(uuid.uuid4())
        for hook in hooks:
            self._enqueue({
                "hook_id": hook.id, "url": hook.url, "token": hook.token,
                "event": event, "event_uuid": event_uuid,
                "webhook_uuid": hook.uuid,
                "idempotency_key": str(uuid.uuid4()), "body": body,
            })

    def redeliver(self, delivery_id):
        with self.lock:
            old = self.deliveries.get(delivery_id)
        if old is None:
            return None
        return self._enqueue({k: old[k] for k in (
            "hook_id", "url", "token", "event", "event_uuid",
            "webhook_uuid", "idempotency_key", "body")})

    def _enqueue(self, job):
        with self.lock:
            self.next_id += 1
            job.update({"id": self.next_id, "status": "pending",
                        "response_status": None, "error": None,
                        "duration_ms": None,
                        "queued_at": iso(self.forge.now())})
            self.deliveries[job["id"]] = job
            while len(self.deliveries) > _MAX_DELIVERIES:
                self.deliveries.popitem(last=False)
            self.pending += 1
        self.queue.put(job)
        return job["id"]

    def wait_idle(self, timeout):
        """Block until every queued delivery has been attempted."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while self.pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.idle.wait(left)
        return True

    def snapshot(self):
        with self.lock:
            out = []
            for job in self.deliveries.values():
                item = {k: v for k, v in job.items() if k != "body"}
                item["payload"] = json.loads(job["body"])
                out.append(item)
            return out

    def _run(self):
        while True:
            job = self.queue.get()
            if job is None:
                return
            self._deliver(job)
            with self.lock:
                self.pending -= 1
                self.idle.notify_all()

    def stop(self):
        self.queue.put(None)

    def _deliver(self, job):
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitLab/" + GITLAB_VERSION,
            "X-Gitlab-Event": job["event"],
            "X-Gitlab-Event-UUID": job["event_uuid"],
            "X-Gitlab-Webhook-UUID": job["webhook_uuid"],
            "X-Gitlab-Instance": self.forge.external_url(),
            "Idempotency-Key": job["idempotency_key"],
        }
        if job["token"]:
            headers["X-Gitlab-Token"] = job["token"]
        # http.client, not urllib: header names go out exactly as GitLab
        # spells them, and no http_proxy from the environment applies.
        url = urllib.parse.urlsplit(job["url"])
        conn_class = http.client.HTTPSConnection if url.scheme == "https" \
            else http.client.HTTPConnection
        target = url.path or "/"
        if url.query:
            target += "?" + url.query
        started = time.monotonic()
        status, error = None, None
        conn = conn_class(url.hostname, url.port,
                          timeout=self.forge.settings.hook_timeout_s)
        try:
            conn.request("POST", target, body=job["body"], headers=headers)
            response = conn.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException) as e:
            error = "%s: %s" % (type(e).__name__, e)
        finally:
            conn.close()
        with self.lock:
            job["response_status"] = status
            job["error"] = error
            job["duration_ms"] = int((time.monotonic() - started) * 1000)
            job["status"] = "delivered" if status and status < 300 \
                else "failed"
        # Every answer but a 2xx or 3xx is a failure (app/services/
        # web_hook_service.rb response_category): backoff!, else enable!
        # (app/services/web_hooks/log_execution_service.rb).
        with self.forge.lock:
            hook = self.forge.find_hook(job["hook_id"])
            if hook is not None:
                if status and status < 400:
                    hook.enable()
                else:
                    hook.backoff(self.forge.now())
