/*
 * store_submission - series posted to the list, collected until whole.
 * See store_submission.h.
 */

#include "state/storeq.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const submission_state_names[] = {
	[STORE_SUBMISSION_COLLECTING] = "collecting",
	[STORE_SUBMISSION_WHOLE] = "whole",
	[STORE_SUBMISSION_OPENED] = "opened",
	[STORE_SUBMISSION_FAILED] = "failed",
};

#define SUB(k, ...) COL_##k(struct store_submission, __VA_ARGS__)
/* A row of SUB_COLS (store_query.c). */
static const struct col submission_cols[] = {
	[SUC_SERIES] = SUB(TEXT, series_id),
	[SUC_SENDER] = SUB(TEXT, sender),
	[SUC_PROJECT] = SUB(TEXT, project),
	[SUC_VERSION] = SUB(INT, version),
	[SUC_TOTAL] = SUB(INT, total),
	[SUC_STATE] = SUB(ENUM, state, submission_state_names),
	[SUC_IID] = SUB(INT, iid),
	[SUC_CREATED] = SUB(INT, created),
	[SUC_UPDATED] = SUB(INT, updated),
};
static const struct row_type submission_row =
	ROW_TYPE(struct store_submission, submission_cols);

#define SUBM(k, ...) COL_##k(struct store_submitted, __VA_ARGS__)
/* A row of SUBM_COLS: message_id, series_id, patch, message, created. */
static const struct col submitted_cols[] = {
	SUBM(TEXT, message_id), SUBM(TEXT, series_id),
	SUBM(INT, patch),	SUBM(BLOB, message, message_len),
	SUBM(INT, created),
};
static const struct row_type submitted_row =
	ROW_TYPE(struct store_submitted, submitted_cols);

/* store_submission_init(), _release(), _list_release(), and the same
 * for store_submitted */
ROW_FUNCTIONS(submission, submission_row);
ROW_FUNCTIONS(submitted, submitted_row);

const char *store_submission_state_name(enum store_submission_state state)
{
	return name_of(submission_state_names,
		       ARRAY_SIZE(submission_state_names), (size_t)state);
}

struct sub_add {
	const struct store_submission *s;
	const struct store_submitted *m;
	int whole;
};

/* The series as stored must be the one the mail names. */
static int same_series(const struct store_submission *have,
		       const struct store_submission *want)
{
	char qb[PB_LOG_QUOTE_MAX];

	quote(qb, sizeof(qb), want->series_id);
	if (strcasecmp(have->sender, want->sender))
		return err_set(PB_EPERM,
			       "state db: series <%s> belongs to another "
			       "sender",
			       qb);
	if (strcmp(have->project, want->project) ||
	    have->version != want->version || have->total != want->total)
		return err_set(PB_EINVAL,
			       "state db: series <%s> is v%d of %d patches "
			       "in %s, not v%d of %d",
			       qb, have->version, have->total, have->project,
			       want->version, want->total);
	return 0;
}

static int sub_add_unit(struct store *st, void *arg)
{
	struct sub_add *a = arg;
	struct store_submission have;
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int64_t t = now();
	int rc;

	a->whole = 0;
	rc = q_start(&q, st, S_SUB_PUT, "add a submitted series");
	if (rc)
		return rc;
	q_text(&q, 1, a->s->series_id);
	q_text(&q, 2, a->s->sender);
	q_text(&q, 3, a->s->project);
	q_int(&q, 4, a->s->version);
	q_int(&q, 5, a->s->total);
	q_int(&q, 6, t);
	rc = q_exec(&q);
	q_end(&q);
	if (rc)
		return rc;
	store_submission_init(&have);
	rc = store_submission_get(&have, st, a->s->series_id);
	if (!rc)
		rc = same_series(&have, a->s);
	store_submission_release(&have);
	if (rc)
		return rc;

	rc = q_start(&q, st, S_SUBM_PUT, "add a submitted mail");
	if (rc)
		return rc;
	q_text(&q, 1, a->m->message_id);
	q_text(&q, 2, a->s->series_id);
	q_int(&q, 3, a->m->patch);
	q_blob(&q, 4, a->m->message, a->m->message_len);
	q_int(&q, 5, t);
	rc = q_exec(&q);
	if (!rc && q.changes == 0)
		rc = err_set(PB_EEXISTS,
			     "state db: mail <%s> (patch %d) of the series "
			     "is there already",
			     quote(qb, sizeof(qb), a->m->message_id),
			     a->m->patch);
	q_end(&q);
	if (rc)
		return rc;

	rc = q_start(&q, st, S_SUB_WHOLE, "see whether a series is whole");
	if (rc)
		return rc;
	q_text(&q, 1, a->s->series_id);
	q_int(&q, 2, t);
	rc = q_exec(&q);
	if (!rc)
		a->whole = q.changes == 1;
	q_end(&q);
	return rc;
}

int store_submission_add(int *whole, struct store *st,
			 const struct store_submission *s,
			 const struct store_submitted *m)
{
	struct sub_add a;
	int rc;

	*whole = 0;
	if ((rc = check_str("series Message-ID", s->series_id, STORE_MSGID_MAX,
			    1)) ||
	    (rc = check_str("sender", s->sender, PB_ADDR_MAX, 1)) ||
	    (rc = check_mr(s->project, 1)) ||
	    (rc = check_str("Message-ID", m->message_id, STORE_MSGID_MAX, 1)))
		return rc;
	if (s->version < 1 || s->total < 1 ||
	    s->total > STORE_SUBMISSION_PATCHES_MAX || m->patch < 0 ||
	    m->patch > s->total)
		return err_set(PB_EINVAL,
			       "state db: bad place in a series: v%d %d/%d",
			       s->version, m->patch, s->total);
	if (!m->message || !m->message_len || m->message_len > STORE_DIFF_MAX)
		return err_set(PB_EINVAL, "state db: bad message (%zu bytes)",
			       m->message_len);
	a.s = s;
	a.m = m;
	a.whole = 0;
	rc = unit_run(st, sub_add_unit, &a);
	if (!rc)
		*whole = a.whole;
	return rc;
}

int store_submission_get(struct store_submission *out, struct store *st,
			 const char *series_id)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_SUB_GET, "get a submitted series",
			   series_id);
	if (rc)
		return rc;
	rc = row_get(&submission_row, out, &q);
	if (rc == 0)
		rc = err_set(PB_ENOTFOUND, "state db: no series <%s>",
			     quote(qb, sizeof(qb), series_id));
	return rc < 0 ? rc : 0;
}

/* The row of submission_mails statement id finds for key. */
static int submitted_get(struct store_submitted *out, struct store *st,
			 enum stmt_id id, const char *what, const char *key,
			 const char *missing)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, id, what, key);
	if (rc)
		return rc;
	rc = row_get(&submitted_row, out, &q);
	if (rc == 0)
		rc = err_set(PB_ENOTFOUND, "state db: %s <%s> %s",
			     id == S_SUBM_FIRST ? "series" : "mail",
			     quote(qb, sizeof(qb), key), missing);
	return rc < 0 ? rc : 0;
}

int store_submitted_get(struct store_submitted *out, struct store *st,
			const char *message_id)
{
	return submitted_get(out, st, S_SUBM_GET, "get a submitted mail",
			     message_id, "is of no submitted series");
}

int store_submission_mails(struct store_submitted_list *out, struct store *st,
			   const char *series_id)
{
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_SUBM_LIST, "list a series' mails",
			   series_id);
	if (rc)
		return rc;
	ROW_LIST_READ(rc, &submitted_row, out, &q);
	q_end(&q);
	return rc;
}

int store_submission_first(struct store_submitted *out, struct store *st,
			   const char *series_id)
{
	return submitted_get(out, st, S_SUBM_FIRST, "get a series' first mail",
			     series_id, "has no mail");
}

int store_submission_list_opened(struct store_submission_list *out,
				 struct store *st, const char *project,
				 const char *sender, size_t limit)
{
	struct query q;
	int rc;

	if ((rc = check_mr(project, 1)) ||
	    (rc = check_str("sender", sender, PB_ADDR_MAX, 1)))
		return rc;
	rc = q_start(&q, st, S_SUB_LIST_OPENED,
		     "list a sender's opened series");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_text(&q, 2, sender);
	q_int(&q, 3, list_limit(limit));
	ROW_LIST_READ(rc, &submission_row, out, &q);
	q_end(&q);
	return rc;
}

int store_submission_list_whole(struct store_submission_list *out,
				struct store *st, size_t limit)
{
	struct query q;
	int rc;

	rc = q_start(&q, st, S_SUB_LIST_WHOLE, "list whole series");
	if (rc)
		return rc;
	q_int(&q, 1, list_limit(limit));
	ROW_LIST_READ(rc, &submission_row, out, &q);
	q_end(&q);
	return rc;
}

int store_submission_bytes(int64_t *out, struct store *st,
			   const char *series_id)
{
	struct query q;
	int rc;

	*out = 0;
	rc = q_start_msgid(&q, st, S_SUB_BYTES, "weigh a series", series_id);
	if (rc)
		return rc;
	return q_scalar(&q, out);
}

int store_submission_count_sender(int64_t *out, struct store *st,
				  const char *sender, int64_t since)
{
	struct query q;
	int rc;

	*out = 0;
	rc = check_str("sender", sender, PB_ADDR_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_SUB_COUNT_SENDER, "count a sender's series");
	if (rc)
		return rc;
	q_text(&q, 1, sender);
	q_int(&q, 2, since);
	return q_scalar(&q, out);
}

int store_submission_list_due(struct store_submission_list *out,
			      struct store *st, const char *project,
			      int64_t before, const char *remind_prefix,
			      const char *refuse_prefix, size_t limit)
{
	struct query q;
	int rc;

	rc = check_str("project", project, STORE_PROJECT_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_SUB_LIST_DUE, "list series waiting long");
	if (rc)
		return rc;
	q_int(&q, 1, before);
	q_text(&q, 2, remind_prefix);
	q_text(&q, 3, refuse_prefix);
	q_int(&q, 4, list_limit(limit));
	q_text(&q, 5, project);
	ROW_LIST_READ(rc, &submission_row, out, &q);
	q_end(&q);
	return rc;
}

int store_submission_finish(struct store *st, const char *series_id,
			    enum store_submission_state state, int64_t iid)
{
	struct store_submission have;
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int64_t changes;
	int rc;

	if ((state != STORE_SUBMISSION_OPENED || iid < 1) &&
	    (state != STORE_SUBMISSION_FAILED || iid != 0))
		return err_set(PB_EINVAL,
			       "state db: a series ends opened as an MR or "
			       "failed");
	rc = q_start_msgid(&q, st, S_SUB_FINISH, "finish a submitted series",
			   series_id);
	if (rc)
		return rc;
	q_text(&q, 2, submission_state_names[state]);
	q_int_or_null(&q, 3, iid);
	q_int(&q, 4, now());
	rc = q_exec(&q);
	changes = q.changes;
	q_end(&q);
	if (!rc && changes == 0) {
		store_submission_init(&have);
		rc = store_submission_get(&have, st, series_id);
		if (!rc)
			rc = err_set(PB_EEXISTS,
				     "state db: series <%s> is %s, not whole",
				     quote(qb, sizeof(qb), series_id),
				     store_submission_state_name(have.state));
		store_submission_release(&have);
	}
	return rc;
}
