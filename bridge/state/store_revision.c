/*
 * store_revision - the mailed revisions of each merge request.
 * See store_revision.h.
 */

#include "state/storeq.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const revision_state_names[] = {
	[STORE_REVISION_SENDING] = "sending",
	[STORE_REVISION_SENT] = "sent",
};

/* Mailed revisions. */

#define REV(k, ...) COL_##k(struct store_revision, __VA_ARGS__)
/* A row of REV_COLS. */
static const struct col revision_cols[] = {
	[RC_PROJECT] = REV(TEXT, project),
	[RC_IID] = REV(INT, iid),
	[RC_REVISION] = REV(INT, revision),
	[RC_HEAD] = REV(TEXT, head_sha),
	[RC_BASE] = REV(TEXT, base_sha),
	[RC_START] = REV(TEXT, start_sha),
	[RC_VERSION] = REV(INT, version_id),
	[RC_PATCH_ID] = REV(TEXT, patch_id),
	[RC_PATCHES] = REV(INT, patches),
	[RC_COVER] = REV(TEXT, cover_msgid),
	[RC_STATE] = REV(ENUM, state, revision_state_names),
	[RC_CREATED] = REV(INT, created),
	[RC_SENT] = REV(INT, sent),
};
static const struct row_type revision_row =
	ROW_TYPE(struct store_revision, revision_cols);

/* store_revision_init(), _release() and _list_release() */
ROW_FUNCTIONS(revision, revision_row);

static int revision_one(struct store_revision *out, struct query *q,
			const char *project, int64_t iid)
{
	char qb[PB_LOG_QUOTE_MAX];
	int rc = row_get(&revision_row, out, q);

	if (rc == 0)
		rc = err_set(PB_ENOTFOUND,
			     "state db: %s: no such revision of %s!%lld",
			     q->what, quote(qb, sizeof(qb), project),
			     (long long)iid);
	return rc < 0 ? rc : 0;
}

struct rev_start {
	const struct store_revision *rev;
	int revision;
	int taken; /* the head was started before */
};

/* The unit of store_revision_start(): allocate and insert, or find the
 * head started before. */
static int rev_start_unit(struct store *st, void *arg)
{
	struct rev_start *r = arg;
	const struct store_revision *rev = r->rev;
	struct store_revision old = { 0 };
	struct query q;
	int rc;

	r->revision = 0;
	r->taken = 0;
	rc = q_start(&q, st, S_REV_START, "start revision");
	if (rc)
		return rc;
	q_text(&q, 1, rev->project);
	q_int(&q, 2, rev->iid);
	q_text(&q, 3, rev->head_sha);
	q_opt(&q, 4, rev->base_sha);
	q_opt(&q, 5, rev->start_sha);
	q_int_or_null(&q, 6, rev->version_id);
	q_opt(&q, 7, rev->patch_id);
	q_int(&q, 8, rev->patches);
	q_opt(&q, 9, rev->cover_msgid);
	q_int(&q, 10, now());
	rc = q_step(&q);
	if (rc == 1) {
		r->revision = (int)col_int(&q, 0);
		rc = q_exec(&q);
	}
	q_end(&q);
	if (rc < 0 || r->revision)
		return rc;
	/* Nothing inserted: the head on this base (or, between two
	 * writers, the number - which a unit never sees) was taken. */
	rc = store_revision_by_base(&old, st, rev->project, rev->iid,
				    rev->head_sha, rev->base_sha);
	if (rc == PB_ENOTFOUND)
		return err_set(PB_ETEMP,
			       "state db %s: revision number taken meanwhile",
			       st->name);
	if (rc)
		return rc;
	r->revision = old.revision;
	r->taken = 1;
	store_revision_release(&old);
	return 0;
}

int store_revision_start(int *revision, struct store *st,
			 const struct store_revision *rev)
{
	struct rev_start r;
	int rc;

	*revision = 0;
	if ((rc = check_mr(rev->project, rev->iid)) ||
	    (rc = check_sha("head sha", rev->head_sha, 1)) ||
	    (rc = check_sha("base sha", rev->base_sha, 0)) ||
	    (rc = check_sha("start sha", rev->start_sha, 0)) ||
	    (rc = check_str("patch id", rev->patch_id, STORE_SHA_MAX, 0)) ||
	    (rc = check_str("cover Message-ID", rev->cover_msgid,
			    STORE_MSGID_MAX, 0)))
		return rc;
	if (rev->patches < 0 || rev->version_id < 0)
		return err_set(PB_EINVAL, "state db: bad revision numbers");

	memset(&r, 0, sizeof(r));
	r.rev = rev;
	/* "Highest plus one" must not race: a unit. */
	rc = unit_run(st, rev_start_unit, &r);
	if (rc)
		return rc;
	*revision = r.revision;
	if (r.taken)
		return err_set(PB_EEXISTS,
			       "state db: head %s on base %s was already "
			       "mailed as v%d",
			       rev->head_sha,
			       rev->base_sha ? rev->base_sha : "(none)",
			       *revision);
	return 0;
}

int store_revision_mark_sent(struct store *st, const char *project, int64_t iid,
			     int revision)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = q_start_mr(&q, st, S_REV_MARK_SENT, "mark revision sent", project,
			iid);
	if (rc)
		return rc;
	q_int(&q, 3, revision);
	q_int(&q, 4, now());
	rc = q_exec(&q);
	if (!rc && q.changes == 0)
		rc = err_set(PB_ENOTFOUND, "state db: no revision %s!%lld v%d",
			     quote(qb, sizeof(qb), project), (long long)iid,
			     revision);
	q_end(&q);
	return rc;
}

int store_revision_get(struct store_revision *out, struct store *st,
		       const char *project, int64_t iid, int revision)
{
	struct query q;
	int rc;

	rc = q_start_mr(&q, st, S_REV_GET, "get revision", project, iid);
	if (rc)
		return rc;
	q_int(&q, 3, revision);
	return revision_one(out, &q, project, iid);
}

int store_revision_latest(struct store_revision *out, struct store *st,
			  const char *project, int64_t iid)
{
	struct query q;
	int rc;

	rc = q_start_mr(&q, st, S_REV_LATEST, "latest revision", project, iid);
	if (rc)
		return rc;
	return revision_one(out, &q, project, iid);
}

int store_revision_by_head(struct store_revision *out, struct store *st,
			   const char *project, int64_t iid,
			   const char *head_sha)
{
	struct query q;
	int rc;

	if ((rc = check_mr(project, iid)) ||
	    (rc = check_sha("head sha", head_sha, 1)))
		return rc;
	rc = q_start(&q, st, S_REV_BY_HEAD, "revision by head");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_text(&q, 3, head_sha);
	return revision_one(out, &q, project, iid);
}

int store_revision_by_base(struct store_revision *out, struct store *st,
			   const char *project, int64_t iid,
			   const char *head_sha, const char *base_sha)
{
	struct query q;
	int rc;

	if ((rc = check_mr(project, iid)) ||
	    (rc = check_sha("head sha", head_sha, 1)) ||
	    (rc = check_sha("base sha", base_sha, 0)))
		return rc;
	rc = q_start(&q, st, S_REV_BY_BASE, "revision by head and base");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_text(&q, 3, head_sha);
	q_opt(&q, 4, base_sha);
	return revision_one(out, &q, project, iid);
}

/* The row as it is, then its changing columns (state, sent, sent by). */
int revision_mirror(struct store *dst, const struct store_revision *r)
{
	struct query q;
	int rc;

	rc = q_start(&q, dst, S_MIRROR_REV, "copy a revision");
	if (rc)
		return rc;
	q_text(&q, 1 + RC_PROJECT, r->project);
	q_int(&q, 1 + RC_IID, r->iid);
	q_int(&q, 1 + RC_REVISION, r->revision);
	q_text(&q, 1 + RC_HEAD, r->head_sha);
	q_opt(&q, 1 + RC_BASE, r->base_sha);
	q_opt(&q, 1 + RC_START, r->start_sha);
	q_int_or_null(&q, 1 + RC_VERSION, r->version_id);
	q_opt(&q, 1 + RC_PATCH_ID, r->patch_id);
	q_int(&q, 1 + RC_PATCHES, r->patches);
	q_opt(&q, 1 + RC_COVER, r->cover_msgid);
	q_text(&q, 1 + RC_STATE, revision_state_names[r->state]);
	q_int(&q, 1 + RC_CREATED, r->created);
	q_int_or_null(&q, 1 + RC_SENT, r->sent);
	rc = q_exec(&q);
	q_end(&q);
	if (rc)
		return rc;
	rc = q_start(&q, dst, S_MIRROR_REV_STATE, "copy a revision's state");
	if (rc)
		return rc;
	q_text(&q, 1, r->project);
	q_int(&q, 2, r->iid);
	q_int(&q, 3, r->revision);
	q_int(&q, 4, r->patches);
	q_opt(&q, 5, r->cover_msgid);
	q_text(&q, 6, revision_state_names[r->state]);
	q_int_or_null(&q, 7, r->sent);
	rc = q_exec(&q);
	q_end(&q);
	return rc;
}

/* Revision listing. */

int store_revision_list(struct store_revision_list *out, struct store *st,
			const char *project, size_t limit)
{
	struct query q;
	int rc;

	if (project) {
		rc = check_str("project", project, STORE_PROJECT_MAX, 1);
		if (rc)
			return rc;
		rc = q_start(&q, st, S_REV_LIST, "list revisions");
		if (rc)
			return rc;
		q_text(&q, 1, project);
		q_int(&q, 2, list_limit(limit));
	} else {
		rc = q_start(&q, st, S_REV_LIST_ALL, "list revisions");
		if (rc)
			return rc;
		q_int(&q, 1, list_limit(limit));
	}
	ROW_LIST_READ(rc, &revision_row, out, &q);
	q_end(&q);
	return rc;
}

int store_revision_recent(struct store_revision_list *out, struct store *st,
			  const char *project, int64_t since, size_t limit)
{
	struct query q;
	int rc = check_str("project", project, STORE_PROJECT_MAX, 1);

	if (rc)
		return rc;
	rc = q_start(&q, st, S_REV_RECENT, "list recent revisions");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, since);
	q_int(&q, 3, list_limit(limit));
	ROW_LIST_READ(rc, &revision_row, out, &q);
	q_end(&q);
	return rc;
}
