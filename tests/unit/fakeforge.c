#include "fakeforge.h"

#include "cmocka_all.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct fakeforge *ff_of(struct forge *f)
{
	return (struct fakeforge *)f;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void record(struct fakeforge *ff, enum fake_op op, const char *project,
		   int64_t iid, const char *arg, const char *body,
		   const char *marker)
{
	struct fake_call *c;

	if (ff->nr_calls == FAKE_CALLS_MAX)
		fail_msg("fakeforge: more than %d calls", FAKE_CALLS_MAX);
	c = &ff->calls[ff->nr_calls++];
	c->op = op;
	c->user = dup_or_null(ff->acting);
	c->project = dup_or_null(project);
	c->iid = iid;
	c->arg = dup_or_null(arg);
	c->body = dup_or_null(body);
	c->marker = dup_or_null(marker);
}

/* The next scripted result of op; success when the script is spent. */
static struct fake_result next(struct fakeforge *ff, enum fake_op op)
{
	struct fake_result ok = { FAKE_OK, 0, NULL, FORGE_APPROVE_DONE };

	if (ff->head[op] == ff->nr[op])
		return ok;
	return ff->script[op][ff->head[op]++];
}

/*
 * The error side of a result, as the GitLab client reports it: 0 when
 * the call is to go on (FAKE_OK, and FAKE_LOST before its write).  A
 * success clears the token problem, as forge.h says.
 */
static int answer(struct fakeforge *ff, const struct fake_result *r)
{
	switch (r->how) {
	case FAKE_OK:
	case FAKE_LOST:
		if (r->how == FAKE_OK)
			ff->token = FORGE_TOKEN_OK;
		return 0;
	case FAKE_FAIL:
		return err_set(r->rc, "%s", r->msg ? r->msg : "refused");
	case FAKE_TOKEN:
		ff->token = FORGE_TOKEN_EXPIRED;
		return err_set(PB_ETEMP, "401 Unauthorized: %s",
			       r->msg ? r->msg : "invalid_token");
	case FAKE_5XX:
		return err_set(PB_ETEMP, "%s",
			       r->msg ? r->msg : "502 Bad Gateway");
	}
	return PB_ERROR;
}

/* After the write of a FAKE_LOST result: the response never came. */
static int lost(const struct fake_result *r)
{
	if (r->how != FAKE_LOST)
		return 0;
	return err_set(PB_ETEMP, "outcome unknown: %s",
		       r->msg ? r->msg : "connection reset");
}

static struct fake_note *post(struct fakeforge *ff, const char *discussion,
			      const char *body, const char *marker)
{
	struct fake_note *n;
	char id[48];

	if (ff->nr_notes == FAKE_NOTES_MAX)
		fail_msg("fakeforge: more than %d notes", FAKE_NOTES_MAX);
	n = &ff->notes[ff->nr_notes++];
	n->id = ++ff->next_id;
	if (!discussion) {
		snprintf(id, sizeof(id), "d%040lld", (long long)n->id);
		discussion = id;
	}
	n->discussion = xstrdup(discussion);
	n->body = dup_or_null(body);
	n->marker = dup_or_null(marker);
	return n;
}

static void note_out(struct forge_note *out, const struct fake_note *n)
{
	memset(out, 0, sizeof(*out));
	out->id = n->id;
	out->body = dup_or_null(n->body);
	out->internal = 0;
}

static void fake_free(struct forge *f)
{
	(void)f; /* the struct is the test's: fakeforge_release() */
}

static int fake_act_as(struct forge *f, const char *user)
{
	struct fakeforge *ff = ff_of(f);
	enum forge_token_problem token = ff->token;
	struct fake_result r;
	int rc;

	record(ff, FAKE_ACT_AS, NULL, 0, user, NULL, NULL);
	r = next(ff, FAKE_ACT_AS);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	/* Nothing is sent (GitLab: a header on the later calls), so the
	 * token's problem stands. */
	ff->token = token;
	free(ff->acting);
	ff->acting = dup_or_null(user);
	return 0;
}

static int fake_get_mr(struct forge_mr *out, struct forge *f,
		       const char *project, int64_t iid)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	record(ff, FAKE_GET_MR, project, iid, NULL, NULL, NULL);
	r = next(ff, FAKE_GET_MR);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	out->iid = iid;
	out->state = xstrdup(ff->mr_state ? ff->mr_state : "opened");
	out->discussion_locked = ff->discussion_locked;
	for (i = 0; i < ff->labels.nr; i++)
		strlist_push(&out->labels, ff->labels.items[i]);
	return 0;
}

static int fake_list_versions(struct forge_version_list *out, struct forge *f,
			      const char *project, int64_t iid)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	int rc;

	memset(out, 0, sizeof(*out));
	record(ff, FAKE_LIST_VERSIONS, project, iid, NULL, NULL, NULL);
	r = next(ff, FAKE_LIST_VERSIONS);
	rc = answer(ff, &r);
	if (rc || !ff->version_head)
		return rc;
	out->items = xcalloc(1, sizeof(*out->items));
	out->nr = 1;
	out->items[0].id = 1;
	out->items[0].head_sha = xstrdup(ff->version_head);
	out->items[0].patch_id_sha = dup_or_null(ff->version_patch_id);
	out->items[0].base_sha = dup_or_null(ff->version_base);
	return 0;
}

static int fake_create_note(struct forge_note *out, struct forge *f,
			    const char *project, int64_t iid, const char *body,
			    const char *marker_key)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	int rc;

	memset(out, 0, sizeof(*out));
	record(ff, FAKE_CREATE_NOTE, project, iid, NULL, body, marker_key);
	r = next(ff, FAKE_CREATE_NOTE);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	note_out(out, post(ff, NULL, body, marker_key));
	rc = lost(&r);
	if (rc)
		forge_note_release(out);
	return rc;
}

static int fake_create_discussion(struct forge_discussion *out, struct forge *f,
				  const char *project, int64_t iid,
				  const char *body,
				  const struct forge_position *pos,
				  const char *marker_key)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_note *n;
	struct fake_result r;
	char where[512];
	int rc;

	memset(out, 0, sizeof(*out));
	if (pos)
		snprintf(where, sizeof(where), "%s:%lld",
			 pos->new_path ? pos->new_path : pos->old_path,
			 (long long)(pos->new_line ? pos->new_line :
						     pos->old_line));
	record(ff, FAKE_CREATE_DISCUSSION, project, iid, pos ? where : NULL,
	       body, marker_key);
	r = next(ff, FAKE_CREATE_DISCUSSION);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	n = post(ff, NULL, body, marker_key);
	rc = lost(&r);
	if (rc)
		return rc;
	out->id = xstrdup(n->discussion);
	out->notes = xcalloc(1, sizeof(*out->notes));
	out->nr_notes = 1;
	note_out(&out->notes[0], n);
	return 0;
}

static int fake_reply_discussion(struct forge_note *out, struct forge *f,
				 const char *project, int64_t iid,
				 const char *discussion_id, const char *body,
				 const char *marker_key)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	int rc;

	memset(out, 0, sizeof(*out));
	record(ff, FAKE_REPLY_DISCUSSION, project, iid, discussion_id, body,
	       marker_key);
	r = next(ff, FAKE_REPLY_DISCUSSION);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	note_out(out, post(ff, discussion_id, body, marker_key));
	rc = lost(&r);
	if (rc)
		forge_note_release(out);
	return rc;
}

static int fake_find_note_by_marker(struct forge_note *out,
				    char **out_discussion_id, struct forge *f,
				    const char *project, int64_t iid,
				    const char *discussion_id,
				    const char *marker_key)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	unsigned i;
	int rc;

	memset(out, 0, sizeof(*out));
	if (out_discussion_id)
		*out_discussion_id = NULL;
	record(ff, FAKE_FIND_NOTE_BY_MARKER, project, iid, discussion_id, NULL,
	       marker_key);
	r = next(ff, FAKE_FIND_NOTE_BY_MARKER);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	for (i = 0; i < ff->nr_notes; i++) {
		const struct fake_note *n = &ff->notes[i];

		if (!n->marker || strcmp(n->marker, marker_key))
			continue;
		if (discussion_id && strcmp(n->discussion, discussion_id))
			continue;
		note_out(out, n);
		if (out_discussion_id)
			*out_discussion_id = xstrdup(n->discussion);
		return 0;
	}
	return err_set(PB_ENOTFOUND, "no note with marker %s", marker_key);
}

static int approval(enum forge_approve_result *out, struct fakeforge *ff,
		    enum fake_op op, const char *project, int64_t iid,
		    const char *sha)
{
	struct fake_result r;
	int rc;

	*out = FORGE_APPROVE_DONE;
	record(ff, op, project, iid, sha, NULL, NULL);
	r = next(ff, op);
	rc = answer(ff, &r);
	if (rc) {
		*out = r.approve;
		return rc;
	}
	if (op == FAKE_APPROVE)
		ff->approvals++;
	else if (ff->approvals)
		ff->approvals--;
	*out = r.approve;
	return lost(&r);
}

static int fake_approve(enum forge_approve_result *out, struct forge *f,
			const char *project, int64_t iid, const char *sha)
{
	return approval(out, ff_of(f), FAKE_APPROVE, project, iid, sha);
}

static int fake_unapprove(enum forge_approve_result *out, struct forge *f,
			  const char *project, int64_t iid)
{
	return approval(out, ff_of(f), FAKE_UNAPPROVE, project, iid, NULL);
}

static int fake_update_labels(struct forge *f, const char *project, int64_t iid,
			      const struct strlist *add,
			      const struct strlist *remove)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	char arg[1024] = "";
	size_t i, len = 0;
	long at;
	int rc;

	for (i = 0; add && i < add->nr; i++)
		len += snprintf(arg + len, sizeof(arg) - len, "%s+%s",
				len ? " " : "", add->items[i]);
	for (i = 0; remove && i < remove->nr; i++)
		len += snprintf(arg + len, sizeof(arg) - len, "%s-%s",
				len ? " " : "", remove->items[i]);
	record(ff, FAKE_UPDATE_LABELS, project, iid, arg, NULL, NULL);
	r = next(ff, FAKE_UPDATE_LABELS);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	for (i = 0; remove && i < remove->nr; i++)
		if ((at = strlist_find(&ff->labels, remove->items[i])) >= 0)
			strlist_remove(&ff->labels, (size_t)at);
	for (i = 0; add && i < add->nr; i++)
		if (strlist_find(&ff->labels, add->items[i]) < 0)
			strlist_push(&ff->labels, add->items[i]);
	return lost(&r);
}

/* The scripted MRs, each through fn; the cursor as the client moves it
 * on success. */
static int fake_list_mrs(struct forge *f, const char *project,
			 struct forge_mr_cursor *cursor,
			 const struct forge_mr_query *q, forge_mr_fn fn,
			 void *arg)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	size_t i;
	int rc;

	record(ff, FAKE_LIST_MRS, project, 0, q ? q->state : NULL, NULL, NULL);
	r = next(ff, FAKE_LIST_MRS);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	for (i = 0; i < ff->nr_mrs; i++) {
		const struct forge_mr *mr = &ff->mrs[i];

		if (forge_mr_cursor_has(cursor, mr->iid, mr->updated_ms))
			continue;
		rc = fn(mr, arg);
		if (rc)
			return rc;
		forge_mr_cursor_add(cursor, mr->iid, mr->updated_ms);
		if (mr->updated_ms > cursor->watermark_ms)
			cursor->watermark_ms = mr->updated_ms;
	}
	return 0;
}

static int fake_get_project(struct forge_project *out, struct forge *f,
			    const char *project)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	int rc;

	memset(out, 0, sizeof(*out));
	record(ff, FAKE_GET_PROJECT, project, 0, NULL, NULL, NULL);
	r = next(ff, FAKE_GET_PROJECT);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	out->id = ff->project_id ? ff->project_id : 42;
	out->path_with_namespace =
		xstrdup(ff->project_path ? ff->project_path : project);
	return 0;
}

static void user_copy(struct forge_user *out, const struct forge_user *u)
{
	out->id = u->id;
	out->username = dup_or_null(u->username);
	out->name = dup_or_null(u->name);
	out->public_email = dup_or_null(u->public_email);
}

static void note_copy(struct forge_note *out, const struct forge_note *n)
{
	memset(out, 0, sizeof(*out));
	out->id = n->id;
	out->type = dup_or_null(n->type);
	out->body = dup_or_null(n->body);
	user_copy(&out->author, &n->author);
	out->created_at = dup_or_null(n->created_at);
	out->updated_at = dup_or_null(n->updated_at);
	out->system = n->system;
	out->internal = n->internal;
	out->resolvable = n->resolvable;
	out->resolved = n->resolved;
	user_copy(&out->resolved_by, &n->resolved_by);
	out->resolved_at = dup_or_null(n->resolved_at);
	out->has_position = n->has_position;
	out->position.base_sha = dup_or_null(n->position.base_sha);
	out->position.start_sha = dup_or_null(n->position.start_sha);
	out->position.head_sha = dup_or_null(n->position.head_sha);
	out->position.old_path = dup_or_null(n->position.old_path);
	out->position.new_path = dup_or_null(n->position.new_path);
	out->position.old_line = n->position.old_line;
	out->position.new_line = n->position.new_line;
}

static int fake_list_discussions(struct forge_discussion_list *out,
				 struct forge *f, const char *project,
				 int64_t iid)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	size_t i, j;
	int rc;

	memset(out, 0, sizeof(*out));
	record(ff, FAKE_LIST_DISCUSSIONS, project, iid, NULL, NULL, NULL);
	r = next(ff, FAKE_LIST_DISCUSSIONS);
	rc = answer(ff, &r);
	if (rc || !ff->nr_discussions)
		return rc;
	out->items = xcalloc(ff->nr_discussions, sizeof(*out->items));
	out->nr = ff->nr_discussions;
	for (i = 0; i < ff->nr_discussions; i++) {
		const struct forge_discussion *d = &ff->discussions[i];
		struct forge_discussion *o = &out->items[i];

		o->id = dup_or_null(d->id);
		o->individual_note = d->individual_note;
		o->notes = xcalloc(d->nr_notes ? d->nr_notes : 1,
				   sizeof(*o->notes));
		o->nr_notes = d->nr_notes;
		for (j = 0; j < d->nr_notes; j++)
			note_copy(&o->notes[j], &d->notes[j]);
	}
	return 0;
}

static int fake_list_notes(struct forge_note_list *out, struct forge *f,
			   const char *project, int64_t iid,
			   const struct forge_note_query *q)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	size_t i, j, n = 0, k = 0;
	int rc, desc = q && q->sort && !strcmp(q->sort, "desc");

	memset(out, 0, sizeof(*out));
	record(ff, FAKE_LIST_NOTES, project, iid, q ? q->sort : NULL, NULL,
	       NULL);
	r = next(ff, FAKE_LIST_NOTES);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	for (i = 0; i < ff->nr_discussions; i++)
		n += ff->discussions[i].nr_notes;
	if (!n)
		return 0;
	out->items = xcalloc(n, sizeof(*out->items));
	out->nr = n;
	for (i = 0; i < ff->nr_discussions; i++)
		for (j = 0; j < ff->discussions[i].nr_notes; j++, k++)
			note_copy(&out->items[desc ? n - 1 - k : k],
				  &ff->discussions[i].notes[j]);
	return 0;
}

static int fake_whoami(struct forge_whoami *out, struct forge *f)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	int rc;

	memset(out, 0, sizeof(*out));
	strlist_init(&out->scopes);
	record(ff, FAKE_WHOAMI, NULL, 0, NULL, NULL, NULL);
	r = next(ff, FAKE_WHOAMI);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	out->user.id = 1;
	out->user.username = xstrdup(ff->whoami ? ff->whoami : "patchbridge");
	out->active = 1;
	return 0;
}

/* Record a call of op and give its scripted answer. */
static int scripted(struct fakeforge *ff, enum fake_op op, const char *project,
		    int64_t id)
{
	struct fake_result r;

	record(ff, op, project, id, NULL, NULL, NULL);
	r = next(ff, op);
	return answer(ff, &r);
}

static int fake_list_pipelines(struct forge_pipeline_list *out, struct forge *f,
			       const char *project, int64_t iid)
{
	struct fakeforge *ff = ff_of(f);
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = scripted(ff, FAKE_LIST_PIPELINES, project, iid);
	if (rc || !ff->nr_pipelines)
		return rc;
	out->items = xcalloc(ff->nr_pipelines, sizeof(*out->items));
	for (i = 0; i < ff->nr_pipelines; i++) {
		const struct forge_pipeline *p = &ff->pipelines[i];

		out->items[i].id = p->id;
		out->items[i].sha = dup_or_null(p->sha);
		out->items[i].ref = dup_or_null(p->ref);
		out->items[i].status = dup_or_null(p->status);
		out->items[i].web_url = dup_or_null(p->web_url);
		out->items[i].updated_at = dup_or_null(p->updated_at);
	}
	out->nr = ff->nr_pipelines;
	return 0;
}

static int fake_list_jobs(struct forge_job_list *out, struct forge *f,
			  const char *project, int64_t pipeline_id)
{
	struct fakeforge *ff = ff_of(f);
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = scripted(ff, FAKE_LIST_JOBS, project, pipeline_id);
	if (rc || !ff->nr_jobs)
		return rc;
	out->items = xcalloc(ff->nr_jobs, sizeof(*out->items));
	for (i = 0; i < ff->nr_jobs; i++) {
		const struct forge_job *j = &ff->jobs[i];

		out->items[i].id = j->id;
		out->items[i].name = dup_or_null(j->name);
		out->items[i].stage = dup_or_null(j->stage);
		out->items[i].status = dup_or_null(j->status);
		out->items[i].web_url = dup_or_null(j->web_url);
		out->items[i].allow_failure = j->allow_failure;
	}
	out->nr = ff->nr_jobs;
	return 0;
}

static int fake_job_trace(struct buf *out, struct forge *f, const char *project,
			  int64_t job_id)
{
	struct fakeforge *ff = ff_of(f);
	int rc;

	rc = scripted(ff, FAKE_JOB_TRACE, project, job_id);
	if (rc || !ff->trace)
		return rc;
	if (buf_adds(out, ff->trace)) {
		buf_reset(out);
		buf_clear_error(out);
		return err_set(PB_ELIMIT, "the log is too long");
	}
	return 0;
}

static int fake_commit_signature(struct forge_signature *out, struct forge *f,
				 const char *project, const char *sha)
{
	struct fakeforge *ff = ff_of(f);
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	record(ff, FAKE_COMMIT_SIGNATURE, project, 0, sha, NULL, NULL);
	{
		struct fake_result r = next(ff, FAKE_COMMIT_SIGNATURE);

		rc = answer(ff, &r);
	}
	if (rc)
		return rc;
	for (i = 0; i < ff->nr_signatures; i++) {
		const struct forge_signature *s = &ff->signatures[i];

		if (strcmp(ff->signed_shas[i], sha))
			continue;
		out->type = dup_or_null(s->type);
		out->status = dup_or_null(s->status);
		out->name = dup_or_null(s->name);
		out->email = dup_or_null(s->email);
		out->key = dup_or_null(s->key);
		return 0;
	}
	return err_set(PB_ENOTFOUND, "404 GPG Signature Not Found");
}

static enum forge_sudo_problem fake_sudo_problem(const struct forge *f)
{
	return ((const struct fakeforge *)f)->sudo;
}

static enum forge_token_problem fake_token_problem(const struct forge *f)
{
	return ((const struct fakeforge *)f)->token;
}

static int fake_get_approvals(struct forge_approvals *out, struct forge *f,
			      const char *project, int64_t iid)
{
	struct fakeforge *ff = ff_of(f);
	struct fake_result r;
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	record(ff, FAKE_GET_APPROVALS, project, iid, NULL, NULL, NULL);
	r = next(ff, FAKE_GET_APPROVALS);
	rc = answer(ff, &r);
	if (rc)
		return rc;
	out->approvals_required = -1;
	out->approvals_left = -1;
	out->user_has_approved = -1;
	out->approved = ff->nr_approved_by > 0;
	out->approved_by =
		xcalloc(ff->nr_approved_by + 1, sizeof(*out->approved_by));
	out->nr_approved_by = ff->nr_approved_by;
	for (i = 0; i < ff->nr_approved_by; i++)
		user_copy(&out->approved_by[i], &ff->approved_by[i]);
	return 0;
}

/* GitLab's GET /users?search=EMAIL finding nobody (doc/api/users.md). */
static int fake_find_user(struct forge_user *out, struct forge *f,
			  const char *email)
{
	(void)out;
	if (!ff_of(f)->no_users)
		return err_set(PB_ERROR, "the fake forge cannot look up users");
	return err_set(PB_ENOTFOUND, "no forge user has the address %s", email);
}

static const struct forge_ops fake_ops = {
	.find_user_by_email = fake_find_user,
	.name = "fake",
	.free = fake_free,
	.act_as = fake_act_as,
	.get_mr = fake_get_mr,
	.list_versions = fake_list_versions,
	.create_note = fake_create_note,
	.create_discussion = fake_create_discussion,
	.reply_discussion = fake_reply_discussion,
	.find_note_by_marker = fake_find_note_by_marker,
	.approve = fake_approve,
	.unapprove = fake_unapprove,
	.update_labels = fake_update_labels,
	.list_mrs = fake_list_mrs,
	.get_project = fake_get_project,
	.list_notes = fake_list_notes,
	.list_discussions = fake_list_discussions,
	.whoami = fake_whoami,
	.get_approvals = fake_get_approvals,
	.list_pipelines = fake_list_pipelines,
	.list_jobs = fake_list_jobs,
	.job_trace = fake_job_trace,
	.commit_signature = fake_commit_signature,
	.sudo_problem = fake_sudo_problem,
	.token_problem = fake_token_problem,
};

void fakeforge_init(struct fakeforge *ff)
{
	memset(ff, 0, sizeof(*ff));
	ff->base.ops = &fake_ops;
	strlist_init(&ff->labels);
}

static void call_release(struct fake_call *c)
{
	free(c->user);
	free(c->project);
	free(c->arg);
	free(c->body);
	free(c->marker);
	memset(c, 0, sizeof(*c));
}

void fakeforge_clear_calls(struct fakeforge *ff)
{
	unsigned i;

	for (i = 0; i < ff->nr_calls; i++)
		call_release(&ff->calls[i]);
	ff->nr_calls = 0;
}

void fakeforge_release(struct fakeforge *ff)
{
	unsigned i;

	fakeforge_clear_calls(ff);
	for (i = 0; i < ff->nr_notes; i++) {
		free(ff->notes[i].discussion);
		free(ff->notes[i].body);
		free(ff->notes[i].marker);
	}
	free(ff->acting);
	strlist_release(&ff->labels);
	forge_free(&ff->base); /* the pins; fake_free() frees nothing */
	memset(ff, 0, sizeof(*ff));
}

void fakeforge_script(struct fakeforge *ff, enum fake_op op, enum fake_how how,
		      int rc, const char *msg)
{
	fakeforge_script_approve(ff, op, rc, FORGE_APPROVE_DONE, msg);
	ff->script[op][ff->nr[op] - 1].how = how;
}

void fakeforge_script_approve(struct fakeforge *ff, enum fake_op op, int rc,
			      enum forge_approve_result res, const char *msg)
{
	struct fake_result *r;

	if (ff->nr[op] == FAKE_SCRIPT_MAX)
		fail_msg("fakeforge: more than %d results", FAKE_SCRIPT_MAX);
	r = &ff->script[op][ff->nr[op]++];
	r->how = rc ? FAKE_FAIL : FAKE_OK;
	r->rc = rc;
	r->msg = msg;
	r->approve = res;
}

unsigned fakeforge_count(const struct fakeforge *ff, enum fake_op op)
{
	unsigned i, n = 0;

	for (i = 0; i < ff->nr_calls; i++)
		n += ff->calls[i].op == op;
	return n;
}

const struct fake_call *fakeforge_call(const struct fakeforge *ff,
				       enum fake_op op, unsigned i)
{
	unsigned k;

	for (k = 0; k < ff->nr_calls; k++)
		if (ff->calls[k].op == op && !i--)
			return &ff->calls[k];
	return NULL;
}
