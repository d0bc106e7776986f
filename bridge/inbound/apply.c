#include "inbound/apply.h"

#include "core/metrics.h"
#include "inbound/marker.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void apply_result_init(struct apply_result *res)
{
	memset(res, 0, sizeof(*res));
	strlist_init(&res->failed);
	strlist_init(&res->approvals_refused);
}

void apply_result_release(struct apply_result *res)
{
	strlist_release(&res->failed);
	strlist_release(&res->approvals_refused);
	apply_result_init(res);
}

/* The state of one apply_plan() call. */
struct run {
	struct apply_result *res;
	struct forge *f;
	struct store *st;
	const struct apply_target *t;
	char *comment_discussion; /* the thread of action 0, once known */
	int64_t renewed_ms; /* monotonic time of the claim's last renewal */
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Before each try of a forge request: keep this host's claim on the mail
 * (store_action_begin() renews it before each action; a retried action
 * waits and tries again under the same claim).  Renewed once a quarter
 * of the lease has gone, so the claim always has three quarters of a
 * lease ahead of a try: check-config requires lease > 4/3 x ([forge]
 * timeout + retry_max).  Another host took the mail over: stop, nothing
 * sent (PB_ETEMP, as store_action_begin()).
 */
static int keep_claim(void *arg)
{
	struct run *r = arg;
	int64_t now = mono_ms(), lease_ms = store_lease(r->st) * 1000;
	int rc;

	if (now - r->renewed_ms < lease_ms / 4)
		return 0;
	rc = store_inbound_renew(r->st, r->t->message_id);
	if (rc == PB_ENOTFOUND) /* not under a claim (replay): nothing */
		rc = 0;
	else if (rc == PB_EEXISTS)
		return err_prefix(PB_ETEMP, "the claim on the mail is lost");
	if (!rc)
		r->renewed_ms = now;
	return rc;
}

void apply_scoped_removals(struct strlist *out, const struct strlist *labels,
			   const char *label)
{
	const char *sep = NULL, *p;
	size_t scope, i;

	for (p = strstr(label, "::"); p; p = strstr(p + 1, "::"))
		sep = p;
	if (!sep)
		return;
	scope = (size_t)(sep - label) + 2;
	strlist_for_each (labels, i) {
		const char *l = labels->items[i];

		if (!strncmp(l, label, scope) && strcmp(l, label) &&
		    !strstr(l + scope, "::"))
			strlist_push(out, l);
	}
}

/* Record a permanent failure of one action and carry on. */
static int failed(struct run *r, const struct plan_action *a, const char *kind,
		  int rc, const char *msg)
{
	if (rc == PB_ETEMP)
		return rc;
	log_warn("action %d (%s) failed: %s", a ? a->index : -1, kind, msg);
	strlist_pushf(&r->res->failed, "action %d (%s): %s", a ? a->index : -1,
		      kind, msg);
	return 0;
}

/*
 * Journal the intent of action index.  0: perform it.  1: it is done
 * already (*act holds its ids).  2: an earlier attempt may have landed.
 */
static int begin(struct store_action *act, struct run *r, int index,
		 const char *kind, const char *key)
{
	int rc;

	rc = store_action_begin(act, r->st, r->t->message_id, index, kind, key);
	if (!rc || rc == PB_EEXISTS)
		r->renewed_ms = mono_ms(); /* the claim with it */
	if (!rc)
		return 0;
	if (rc != PB_EEXISTS)
		return rc;
	return act->state == STORE_ACTION_DONE ? 1 : 2;
}

/* Journal a failed attempt, keeping the forge's message for the caller. */
static void journal_fail(struct run *r, int index, char *msg, size_t size)
{
	snprintf(msg, size, "%s", err_msg());
	if (store_action_fail(r->st, r->t->message_id, index, msg))
		log_warn("action %d: journaling the failure: %s", index,
			 err_msg());
	err_set(PB_ERROR, "%s", msg); /* what the caller reports */
}

static void set_discussion(char **dst, const char *id)
{
	free(*dst);
	*dst = id ? xstrdup(id) : NULL;
}

/*
 * A note: a reply in discussion `in`, or a new discussion (with pos, a
 * diff note; when the forge refuses the position, fallback instead).
 * *disc_out (may be NULL) gets the thread's id.
 */
static int note(struct run *r, int index, const char *kind, const char *body,
		const struct forge_position *pos, const char *fallback,
		const char *in, char **disc_out)
{
	const struct apply_target *t = r->t;
	char key[INBOUND_MARKER_KEY_SIZE], msg[PB_ERRMSG_MAX];
	struct store_action act;
	struct forge_discussion d;
	struct forge_note n;
	char *did = NULL;
	int rc, state;

	inbound_marker_key(key, t->message_id, index);
	store_action_init(&act);
	memset(&d, 0, sizeof(d));
	memset(&n, 0, sizeof(n));
	rc = state = begin(&act, r, index, kind, key);
	if (rc < 0)
		goto out;
	if (state == 1) {
		r->res->skipped++;
		set_discussion(&did,
			       act.discussion_id ? act.discussion_id : in);
		rc = 0;
		goto out;
	}
	if (state == 2) {
		/* Look in every discussion, not only the one replied to: a
		 * reply whose thread was gone started a discussion of its
		 * own (below). */
		rc = forge_find_note_by_marker(&n, &did, r->f, t->project,
					       t->iid, NULL, key);
		if (!rc) {
			log_info("action %d: found note %lld by its marker",
				 index, (long long)n.id);
			if (!did && in)
				did = xstrdup(in);
			rc = store_action_complete(r->st, t->message_id, index,
						   n.id, did);
			r->res->skipped++;
			goto out;
		}
		if (rc != PB_ENOTFOUND) {
			journal_fail(r, index, msg, sizeof(msg));
			rc = rc == PB_ETEMP ? rc : PB_ERROR;
			goto out;
		}
	}
	if (in) {
		rc = forge_reply_discussion(&n, r->f, t->project, t->iid, in,
					    body, key);
		if (!rc)
			did = xstrdup(in);
		if (rc == PB_ENOTFOUND) {
			/* the thread is gone: start a new one */
			log_notice("action %d: %s; starting a new discussion",
				   index, err_msg());
			in = NULL;
		}
	}
	if (!in) {
		rc = forge_create_discussion(&d, r->f, t->project, t->iid, body,
					     pos, key);
		if (rc == PB_EINVAL && pos && !d.id) {
			log_notice("action %d: the forge refused the position "
				   "(%s); posting it as a plain discussion",
				   index, err_msg());
			forge_discussion_release(&d);
			rc = forge_create_discussion(&d, r->f, t->project,
						     t->iid, fallback, NULL,
						     key);
			if (!rc)
				r->res->plain++;
		} else if (rc == PB_EINVAL && d.id) {
			/* created, though not as a diff note: keep it */
			log_warn("action %d: %s", index, err_msg());
			rc = 0;
		}
		if (!rc) {
			did = xstrdup(d.id);
			if (d.nr_notes)
				n.id = d.notes[0].id;
		}
	}
	if (rc) {
		int code = rc;

		journal_fail(r, index, msg, sizeof(msg));
		rc = code;
		goto out;
	}
	rc = store_action_complete(r->st, t->message_id, index, n.id, did);
	if (!rc)
		r->res->done++;
out:
	if (!rc && disc_out)
		set_discussion(disc_out, did);
	free(did);
	forge_note_release(&n);
	forge_discussion_release(&d);
	store_action_release(&act);
	return rc;
}

/* Run one note action, counting a permanent failure and going on. */
static int note_action(struct run *r, const struct plan_action *a,
		       const struct forge_position *pos, const char *in,
		       char **disc_out)
{
	int rc = note(r, a->index, plan_kind_name(a->kind), a->body, pos,
		      a->fallback, in, disc_out);

	if (rc == PB_ETEMP || !rc)
		return rc;
	return failed(r, a, plan_kind_name(a->kind), rc, err_msg());
}

/* An idempotent write: begin, do, complete.  fn returns the result. */
typedef int (*idem_fn)(struct run *r, const struct plan_action *a, void *arg);

static int idempotent(struct run *r, const struct plan_action *a, idem_fn fn,
		      void *arg)
{
	char key[INBOUND_MARKER_KEY_SIZE], msg[PB_ERRMSG_MAX];
	const char *kind = plan_kind_name(a->kind);
	struct store_action act;
	int rc, state;

	inbound_marker_key(key, r->t->message_id, a->index);
	store_action_init(&act);
	rc = state = begin(&act, r, a->index, kind, key);
	store_action_release(&act);
	if (rc < 0)
		return rc;
	if (state == 1) {
		r->res->skipped++;
		return 0;
	}
	rc = fn(r, a, arg);
	if (rc) {
		int code = rc;

		journal_fail(r, a->index, msg, sizeof(msg));
		if (code == PB_ETEMP)
			return code;
		return failed(r, a, kind, code, msg);
	}
	rc = store_action_complete(r->st, r->t->message_id, a->index, 0, NULL);
	if (!rc)
		r->res->done++;
	return rc;
}

static int act_as(struct run *r, const char *user)
{
	int rc = forge_act_as(r->f, user);

	if (rc)
		err_prefix(rc, "acting as %s", user ? user : "the bridge");
	return rc;
}

/* "The approval asked for by this mail (Acked-by: ...)", the start of
 * the bridge's notes about an approval. */
static int approval_intro(struct buf *b, const struct plan_action *a)
{
	int rc = buf_adds(b, "The approval asked for by this mail (");

	if (!rc)
		rc = buf_adds(b, a->who ? a->who : "a trailer");
	return rc;
}

/* The bridge's own note about an approval that did not land. */
static int approval_note(struct run *r, const struct plan_action *a,
			 const char *why)
{
	struct buf b = BUF_INIT(PLAN_BODY_MAX);
	int rc;

	strlist_pushf(&r->res->approvals_refused, "%s", why);
	rc = approval_intro(&b, a);
	if (!rc)
		rc = buf_addf(&b, ") was not recorded: %s\n", why);
	if (!rc)
		rc = note(r, PLAN_IDX_APPROVE_NOTE(a->trailer), "approve-note",
			  b.data, NULL, NULL, r->comment_discussion, NULL);
	buf_release(&b);
	return rc;
}

/*
 * The forge token cannot act as the reviewer at all (Sudo refused: not
 * an administrator's token, no sudo scope, Admin Mode without admin_mode).
 * That says nothing about the reviewer and only an operator can fix it:
 * no note on the merge request; the log, the store (for `status`) and a
 * temporary failure, so the mail's approvals land once the token can.
 */
static int operator_problem(struct run *r, const char *user, const char *why)
{
	char v[STORE_CURSOR_VALUE_MAX];

	log_error("approval as %s waits: %s", user, why);
	snprintf(v, sizeof(v), "%lld %s", (long long)time(NULL),
		 forge_sudo_problem_text(forge_sudo_problem(r->f)));
	if (store_cursor_set(r->st, STORE_CURSOR_FORGE_PROBLEM, v))
		log_warn("recording the forge problem: %s", err_msg());
	return err_set(PB_ETEMP, "%s (an operator's problem; retried)", why);
}

/* Acting as a reviewer worked: no operator problem stands. */
static void operator_problem_gone(struct run *r)
{
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);

	if (!store_cursor_get(&v, r->st, STORE_CURSOR_FORGE_PROBLEM) && v.len &&
	    store_cursor_set(r->st, STORE_CURSOR_FORGE_PROBLEM, ""))
		log_warn("clearing the forge problem: %s", err_msg());
	buf_release(&v);
}

/*
 * The project requires approvers to re-authenticate (their password) to
 * approve: EE's ApprovalService refuses any approval without it
 * (ee/app/services/ee/merge_requests/approval_service.rb), and a mail
 * cannot carry one.  A project setting, so the operator is told through
 * `status` (set, with when it was seen) until an approval goes through
 * again (cleared).
 */
static void reauth_mark(struct run *r, int on)
{
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	char *name = xasprintf("%s%s", STORE_CURSOR_APPROVAL_REAUTH_PREFIX,
			       r->t->project);
	char when[32];
	time_t now = time(NULL);
	struct tm tm;
	int rc = 0;

	if (on) {
		gmtime_r(&now, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		rc = buf_addf(&v,
			      "approvals by mail cannot work: the project "
			      "requires re-authentication (a password) to "
			      "approve (seen %s); turn that approval setting "
			      "off on the forge, or set approval_policy = none "
			      "to have acks only listed",
			      when);
		if (!rc)
			rc = store_cursor_set(r->st, name, v.data);
	} else if (!store_cursor_get(&v, r->st, name) && v.len) {
		rc = store_cursor_set(r->st, name, "");
	}
	if (rc)
		log_warn("recording the approval setting: %s", err_msg());
	free(name);
	buf_release(&v);
}

static int mark_list_approval(struct run *r, const struct plan_action *a)
{
	char *name = xasprintf(STORE_CURSOR_LIST_APPROVAL, r->t->project,
			       (long long)r->t->iid, a->user);
	char *via = NULL;
	int rc = store_cursor_set(r->st, name, r->t->head_sha);

	free(name);
	if (!rc) {
		name = xasprintf(STORE_CURSOR_LIST_APPROVAL_VIA, r->t->project,
				 (long long)r->t->iid, a->user);
		via = xasprintf("%.*s (%s)", STORE_CURSOR_VALUE_MAX / 2,
				a->who ? a->who : "an approval",
				a->via ? a->via : "not verified");
		rc = store_cursor_set(r->st, name, via);
		free(name);
		free(via);
	}
	return rc;
}

/*
 * The MR moved on from the head the reviewer saw: is its current head a
 * rebase that left the patches as they were?  GitLab keeps approvals
 * across a push that leaves the MR diff's patch_id_sha unchanged
 * (ee/app/services/ee/merge_requests/reset_approvals_service.rb, feature
 * reset_approvals_patch_id), and the bridge follows the same rule for an
 * ack that comes late: the patch-id recorded when the acked revision was
 * mailed (store_revision: the version's patch_id_sha, as revision
 * detection uses it) against the current version's.  1 with head set to
 * the current head when they are equal; 0 when they differ (head set) or
 * one is not known (head ""); PB_ETEMP when the forge or store fails for
 * now.
 */
static int rebase_of_acked(char *head, size_t size, struct run *r)
{
	const struct apply_target *t = r->t;
	struct forge_version_list vl = { 0 };
	struct store_revision rev;
	const struct forge_version *v;
	int rc;

	head[0] = '\0';
	store_revision_init(&rev);
	rc = forge_list_versions(&vl, r->f, t->project, t->iid);
	if (!rc)
		rc = store_revision_get(&rev, r->st, t->project, t->iid,
					t->revision);
	if (rc) {
		log_notice("approval: cannot compare with v%d: %s", t->revision,
			   err_msg());
		rc = rc == PB_ETEMP ? rc : 0;
		goto out;
	}
	v = vl.nr ? &vl.items[0] : NULL;
	if (!v || !v->head_sha || !v->patch_id_sha || !rev.patch_id)
		goto out; /* GitLab may not have computed it yet */
	snprintf(head, size, "%s", v->head_sha);
	rc = !strcmp(v->patch_id_sha, rev.patch_id);
out:
	store_revision_release(&rev);
	forge_version_list_release(&vl);
	return rc;
}

/* Approve as user at sha; why gets the forge's message on failure. */
static int approve_at(enum forge_approve_result *res, char *why, size_t size,
		      struct run *r, const char *user, const char *sha)
{
	const struct apply_target *t = r->t;
	int rc, rc2;

	rc = act_as(r, user);
	if (!rc) {
		rc = forge_approve(res, r->f, t->project, t->iid, sha);
		snprintf(why, size, "%s", err_msg());
		rc2 = act_as(r, NULL);
		if (!rc && rc2)
			return rc2;
	} else {
		snprintf(why, size, "%s", err_msg());
	}
	return rc;
}

/* The approval landed at the current head, not at the acked one. */
static int rebased_note(struct run *r, const struct plan_action *a,
			const char *head)
{
	struct buf b = BUF_INIT(PLAN_BODY_MAX);
	int rc;

	rc = approval_intro(&b, a);
	if (!rc)
		rc = buf_addf(&b,
			      ") was given for v%d (head %.12s). It is "
			      "approved at the current head %.12s: the "
			      "patches you reviewed are unchanged by the "
			      "rebase.\n",
			      r->t->revision, r->t->head_sha, head);
	if (!rc)
		rc = note(r, PLAN_IDX_APPROVE_NOTE(a->trailer), "approve-note",
			  b.data, NULL, NULL, r->comment_discussion, NULL);
	buf_release(&b);
	return rc;
}

/*
 * A merged or closed MR takes no approval, and that is no word about the
 * reviewer: ApprovalService#execute and RemoveApprovalService#execute
 * both `return if merge_request.merged?` (app/services/merge_requests/),
 * which the endpoints answer with 401 and 404, the answers of a refused
 * user and of nothing to withdraw.  So the state is read from the MR
 * before asking (t->mr), not guessed from the answer.  A closed MR is not
 * approved either: it is not under review.  Writes why into dst and
 * returns the metric's reason, or NULL for an open MR (or none read).
 */
static const char *mr_shut(char *dst, size_t size, const struct forge_mr *mr)
{
	const char *sha;

	if (!mr || !mr->state)
		return NULL;
	if (!strcmp(mr->state, "merged")) {
		/* a fast-forward makes no merge commit: the head landed */
		sha = mr->merge_commit_sha  ? mr->merge_commit_sha :
		      mr->squash_commit_sha ? mr->squash_commit_sha :
					      mr->sha;
		if (sha)
			snprintf(dst, size,
				 "the merge request was already merged (at "
				 "%.12s).",
				 sha);
		else
			snprintf(dst, size,
				 "the merge request was already merged.");
		return "merged";
	}
	if (!strcmp(mr->state, "closed")) {
		snprintf(dst, size, "the merge request was closed.");
		return "closed";
	}
	return NULL;
}

/*
 * The MR read again after a refusal: merged or closed since t->mr was
 * read, or t->mr could not be read.  The reason as mr_shut(), or NULL
 * (also when it cannot be read: the refusal stands as it came).
 */
static const char *shut_now(char *dst, size_t size, struct run *r)
{
	const char *reason = NULL;
	struct forge_mr mr;

	memset(&mr, 0, sizeof(mr));
	if (!forge_get_mr(&mr, r->f, r->t->project, r->t->iid))
		reason = mr_shut(dst, size, &mr);
	forge_mr_release(&mr);
	return reason;
}

static int do_approve(struct run *r, const struct plan_action *a, void *arg)
{
	const struct apply_target *t = r->t;
	enum forge_approve_result res = FORGE_APPROVE_DONE;
	char why[PB_ERRMSG_MAX + 256], head[64] = "";
	const char *reason;
	int rc, same = 0;

	(void)arg;
	if ((reason = mr_shut(why, sizeof(why), t->mr))) {
		log_notice("approval as %s not asked for: %s", a->user, why);
		metrics_inc1(MET_APPROVALS_REFUSED, reason);
		return approval_note(r, a, why);
	}
	if (!t->head_sha) {
		metrics_inc1(MET_APPROVALS_REFUSED, "head_unknown");
		return approval_note(r, a,
				     "the revision's head commit is "
				     "not known to the bridge");
	}
	/* Before the approval: the forge's "approved" note must never be
	 * mailed back to the list, which has the trailer already. */
	rc = mark_list_approval(r, a);
	if (rc)
		snprintf(why, sizeof(why), "%s", err_msg());
	else
		rc = approve_at(&res, why, sizeof(why), r, a->user,
				t->head_sha);
	if (rc == PB_EINVAL && res == FORGE_APPROVE_SHA_MISMATCH) {
		same = rebase_of_acked(head, sizeof(head), r);
		if (same < 0)
			return same;
		if (same)
			rc = approve_at(&res, why, sizeof(why), r, a->user,
					head);
	}
	if (!rc) {
		log_info("approved as %s at %.12s%s%s", a->user,
			 same ? head : t->head_sha,
			 same ? " (a rebase of the acked revision)" : "",
			 res == FORGE_APPROVE_ALREADY ? " (it stood already)" :
							"");
		operator_problem_gone(r);
		reauth_mark(r, 0);
		metrics_inc1(MET_APPROVALS_MADE, t->project);
		return same ? rebased_note(r, a, head) : 0;
	}
	if (rc == PB_ETEMP)
		return rc;
	if (res == FORGE_APPROVE_NO_SUDO)
		return operator_problem(r, a->user, why);
	if (res == FORGE_APPROVE_REAUTH) {
		/* The project's setting, not the reviewer's rights. */
		log_notice("approval as %s: %s; approvals by mail cannot work "
			   "on %s",
			   a->user, why, t->project);
		metrics_inc1(MET_APPROVALS_REFUSED, "reauth_required");
		reauth_mark(r, 1);
		return approval_note(r, a,
				     "this project requires approvers to "
				     "re-authenticate (enter their password) "
				     "to approve, and a mail cannot carry a "
				     "password: the project's setting stops "
				     "approvals by email. Please approve on "
				     "the forge.");
	}
	if (rc == PB_EINVAL && res == FORGE_APPROVE_SHA_MISMATCH) {
		if (head[0] && !same)
			snprintf(why, sizeof(why),
				 "it was given for v%d (head %.12s), which is "
				 "no longer the head of this merge request, "
				 "and the patches changed since v%d (the "
				 "current head %.12s is not a rebase that "
				 "left them as they were). Please review the "
				 "current revision.",
				 t->revision, t->head_sha, t->revision, head);
		else
			snprintf(why, sizeof(why),
				 "it was given for v%d (head %.12s), which is "
				 "no longer the head of this merge request. "
				 "Please review the current revision.",
				 t->revision, t->head_sha);
		log_notice("approval as %s: the MR moved on from %.12s",
			   a->user, t->head_sha);
		metrics_inc1(MET_APPROVALS_REFUSED, "moved_on");
	} else if (res == FORGE_APPROVE_REFUSED &&
		   (reason = shut_now(why, sizeof(why), r))) {
		/* merged or closed after it was read: the same 401 */
		log_notice("approval as %s refused: %s", a->user, why);
		metrics_inc1(MET_APPROVALS_REFUSED, reason);
	} else if (rc == PB_EPERM || rc == PB_ENOTFOUND) {
		char forge_msg[sizeof(why)];

		snprintf(forge_msg, sizeof(forge_msg), "%s", why);
		snprintf(why, sizeof(why),
			 "GitLab did not accept it from user %s (%s).", a->user,
			 rc == PB_EPERM ? "not allowed to approve" :
			 res == FORGE_APPROVE_NO_USER ?
					  "GitLab has no user of that name" :
					  "the merge request was not found");
		log_notice("approval as %s refused: %s", a->user, forge_msg);
		metrics_inc1(MET_APPROVALS_REFUSED, "forge_refused");
	} else {
		err_set(rc, "%s", why);
		return rc;
	}
	return approval_note(r, a, why);
}

static int do_unapprove(struct run *r, const struct plan_action *a, void *arg)
{
	enum forge_approve_result res = FORGE_APPROVE_DONE;
	char msg[PB_ERRMSG_MAX];
	const char *reason;
	int rc, rc2;

	(void)arg;
	if (mr_shut(msg, sizeof(msg), r->t->mr) &&
	    !strcmp(r->t->mr->state, "merged")) {
		/* Its approvals stay (a closed MR's can be withdrawn):
		 * nothing to do, nothing failed. */
		log_info("approval of %s not withdrawn: %s", a->user, msg);
		return 0;
	}
	rc = act_as(r, a->user);
	if (rc)
		return rc;
	rc = forge_unapprove(&res, r->f, r->t->project, r->t->iid);
	snprintf(msg, sizeof(msg), "%s", err_msg());
	rc2 = act_as(r, NULL);
	if (rc && res == FORGE_APPROVE_NO_SUDO)
		return operator_problem(r, a->user, msg);
	if (rc == PB_EPERM || rc == PB_ENOTFOUND) {
		/* nothing of theirs to withdraw: not allowed to approve, or
		 * no such user */
		log_info("unapprove as %s: %s", a->user, msg);
		rc = 0;
	}
	if (rc && rc != PB_ETEMP && (reason = shut_now(msg, sizeof(msg), r)) &&
	    !strcmp(reason, "merged")) {
		/* merged after it was read: its 404, the approval stays */
		log_info("approval of %s not withdrawn: %s", a->user, msg);
		rc = 0;
	}
	if (!rc && !rc2)
		log_info("approval of %s %s", a->user,
			 res == FORGE_APPROVE_ALREADY ? "was not there" :
							"withdrawn");
	if (rc)
		err_set(rc, "%s", msg);
	return rc ? rc : rc2;
}

static int do_label(struct run *r, const struct plan_action *a, void *arg)
{
	const struct apply_target *t = r->t;
	struct strlist add = STRLIST_INIT, rm = STRLIST_INIT;
	struct forge_mr mr;
	int rc;

	(void)a;
	(void)arg;
	memset(&mr, 0, sizeof(mr));
	if (!t->nak_label || !t->nak_label[0])
		return 0; /* no label configured */
	rc = forge_get_mr(&mr, r->f, t->project, t->iid);
	if (rc)
		goto out;
	/* Free/CE keeps both scoped labels: remove the old value. */
	apply_scoped_removals(&rm, &mr.labels, t->nak_label);
	if (strlist_find(&mr.labels, t->nak_label) < 0)
		strlist_push(&add, t->nak_label);
	if (add.nr || rm.nr)
		rc = forge_update_labels(r->f, t->project, t->iid, &add, &rm);
out:
	forge_mr_release(&mr);
	strlist_release(&add);
	strlist_release(&rm);
	return rc;
}

int apply_plan(struct apply_result *res, struct forge *f, struct store *st,
	       const struct plan *p, const struct apply_target *t)
{
	struct run r;
	size_t i;
	int rc = 0;

	forge_guard_fn old_guard;
	void *old_arg;

	memset(&r, 0, sizeof(r));
	r.res = res;
	r.f = f;
	r.st = st;
	r.t = t;
	r.renewed_ms = mono_ms();
	forge_set_guard(f, keep_claim, &r, &old_guard, &old_arg);
	for (i = 0; i < p->nr && !rc; i++) {
		const struct plan_action *a = &p->v[i];
		struct forge_position pos;
		const char *in;

		switch (a->kind) {
		case PLAN_COMMENT:
			rc = note_action(&r, a, NULL, t->reply_discussion,
					 &r.comment_discussion);
			break;
		case PLAN_NOTE:
		case PLAN_NAK_DISCUSSION:
			rc = note_action(&r, a, NULL, NULL, NULL);
			break;
		case PLAN_DIFF_NOTE:
		case PLAN_DIFF_REPLY:
			in = a->kind == PLAN_DIFF_REPLY ? a->discussion : NULL;
			memset(&pos, 0, sizeof(pos));
			pos.base_sha = (char *)t->base_sha;
			pos.start_sha = (char *)t->start_sha;
			pos.head_sha = (char *)t->head_sha;
			pos.old_path = a->old_path;
			pos.new_path = a->new_path;
			if (!t->base_sha || !t->start_sha || !t->head_sha ||
			    forge_position_set_line(&pos, a->line_kind,
						    a->old_line, a->new_line)) {
				struct plan_action plain = *a;

				plain.body = a->fallback;
				rc = note_action(&r, &plain, NULL, in, NULL);
				if (!rc && !in)
					res->plain++;
			} else {
				rc = note_action(&r, a, &pos, in, NULL);
			}
			break;
		case PLAN_APPROVE:
			rc = idempotent(&r, a, do_approve, NULL);
			break;
		case PLAN_UNAPPROVE:
			rc = idempotent(&r, a, do_unapprove, NULL);
			break;
		case PLAN_NAK_LABEL:
			rc = idempotent(&r, a, do_label, NULL);
			break;
		}
	}
	/* Whoever we acted as, the handle goes back to the bridge. */
	forge_set_guard(f, old_guard, old_arg, NULL, NULL);
	if (forge_act_as(f, NULL) && !rc)
		rc = PB_ERROR;
	free(r.comment_discussion);
	return rc;
}
