/*
 * store_outmail - the outbound mail queue.  See store_outmail.h.
 */

#include "state/storeq.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const outmail_state_names[] = {
	[STORE_OUTMAIL_QUEUED] = "queued",
	[STORE_OUTMAIL_DEFERRED] = "deferred",
	[STORE_OUTMAIL_FAILED] = "failed",
};

/* Outbound mail queue. */

#define OUT(k, ...) COL_##k(struct store_outmail, __VA_ARGS__)
/* A row of OUT_SELECT. */
static const struct col outmail_cols[] = {
	[OC_MSGID] = OUT(TEXT, message_id),
	[OC_PROJECT] = OUT(TEXT, project),
	[OC_IID] = OUT(INT, iid),
	[OC_REVISION] = OUT(INT, revision),
	[OC_PATCH] = OUT(INT, patch),
	[OC_FROM] = OUT(TEXT, envelope_from),
	[OC_RCPTS] = OUT(TEXT, recipients),
	[OC_MESSAGE] = OUT(BLOB, message, message_len),
	[OC_STATE] = OUT(ENUM, state, outmail_state_names),
	[OC_ATTEMPTS] = OUT(INT, attempts),
	[OC_NEXT] = OUT(INT, next_attempt),
	[OC_ERROR] = OUT(TEXT, last_error),
	[OC_CREATED] = OUT(INT, created),
	[OC_UPDATED] = OUT(INT, updated),
	[OC_CLAIMED_BY] = OUT(TEXT, claimed_by),
	[OC_LEASE] = OUT(INT, lease_until),
	[OC_HANDED] = OUT(INT, handed),
};
static const struct row_type outmail_row =
	ROW_TYPE(struct store_outmail, outmail_cols);

/* store_outmail_init(), _release() and _list_release() */
ROW_FUNCTIONS(outmail, outmail_row);

const char *store_outmail_state_name(enum store_outmail_state state)
{
	return name_of(outmail_state_names, ARRAY_SIZE(outmail_state_names),
		       (size_t)state);
}

static int outmail_missing(const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX];

	return err_set(PB_ENOTFOUND, "state db: mail <%s> is not queued",
		       quote(qb, sizeof(qb), message_id));
}

int store_outmail_put(struct store *st, const struct store_outmail *m)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc, queued = 0, mapped = 0;

	if ((rc = check_str("Message-ID", m->message_id, STORE_MSGID_MAX, 1)) ||
	    (rc = check_str("envelope sender", m->envelope_from,
			    STORE_MSGID_MAX, 1)) ||
	    (rc = check_str("recipients", m->recipients, STORE_DIFF_MAX, 1)))
		return rc;
	if (!m->message || !m->message_len || m->message_len > STORE_DIFF_MAX)
		return err_set(PB_EINVAL, "state db: bad message (%zu bytes)",
			       m->message_len);
	rc = q_start(&q, st, S_OUT_PUT, "queue mail");
	if (rc)
		return rc;
	q_text(&q, 1, m->message_id);
	q_text(&q, 2, m->envelope_from);
	q_text(&q, 3, m->recipients);
	q_blob(&q, 4, m->message, m->message_len);
	q_int(&q, 5, now());
	rc = q_exec(&q);
	if (!rc && q.changes == 1) {
		q_end(&q);
		return 0;
	}
	q_end(&q);
	if (rc)
		return rc;
	/* Nothing inserted: queued already, or no thread-map row. */
	rc = q_start(&q, st, S_OUT_EXISTS, "queue mail");
	if (rc)
		return rc;
	q_text(&q, 1, m->message_id);
	rc = q_step(&q);
	if (rc == 1) {
		queued = (int)col_int(&q, 0);
		mapped = (int)col_int(&q, 1);
		rc = 0;
	}
	q_end(&q);
	if (rc)
		return rc;
	if (queued)
		return err_set(PB_EEXISTS,
			       "state db: mail <%s> is queued "
			       "already",
			       quote(qb, sizeof(qb), m->message_id));
	if (!mapped)
		return err_set(PB_ENOTFOUND,
			       "state db: mail <%s> is not in the thread map",
			       quote(qb, sizeof(qb), m->message_id));
	return err_set(PB_ERROR, "state db: mail <%s> was not queued",
		       quote(qb, sizeof(qb), m->message_id));
}

int store_outmail_get(struct store_outmail *out, struct store *st,
		      const char *message_id)
{
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_OUT_GET, "get queued mail", message_id);
	if (rc)
		return rc;
	rc = q_step(&q);
	if (rc == 1)
		rc = row_read(&outmail_row, out, &q);
	else if (rc == 0)
		rc = outmail_missing(message_id);
	q_end(&q);
	return rc;
}

int store_outmail_list(struct store_outmail_list *out, struct store *st,
		       const char *project, int64_t iid, size_t limit)
{
	struct query q;
	int rc;

	if (project) {
		rc = check_str("project", project, STORE_PROJECT_MAX, 1);
		if (rc)
			return rc;
	}
	if (iid < 0 || (iid && !project))
		return err_set(PB_EINVAL, "state db: bad MR iid %lld",
			       (long long)iid);
	rc = q_start(&q, st, S_OUT_LIST, "list queued mails");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_int(&q, 3, list_limit(limit));
	ROW_LIST_READ(rc, &outmail_row, out, &q);
	q_end(&q);
	return rc;
}

/* Run an update keyed by Message-ID; PB_ENOTFOUND when nothing changed. */
static int outmail_update(struct query *q, const char *message_id)
{
	int rc = q_exec(q);

	if (!rc && q->changes == 0)
		rc = outmail_missing(message_id);
	q_end(q);
	return rc;
}

/*
 * Who holds an outbound mail's claim: 0 when nobody (never claimed,
 * released, or expired) or this host, PB_EEXISTS naming the host
 * otherwise, PB_ENOTFOUND when the mail is not queued.
 */
static int outmail_holder(struct store *st, const char *message_id)
{
	int found, rc;

	rc = claim_holder(&found, st, S_OUT_HOLDER, message_id, "mail", 1);
	if (!rc && !found)
		rc = outmail_missing(message_id);
	return rc;
}
int store_outmail_claim(struct store *st, const char *message_id)
{
	struct query q;
	int64_t t = now();
	int rc;

	rc = q_start_msgid(&q, st, S_OUT_CLAIM, "claim mail", message_id);
	if (rc)
		return rc;
	q_text(&q, 2, st->host);
	q_int(&q, 3, t + st->lease);
	q_int(&q, 4, t);
	rc = q_exec(&q);
	q_end(&q);
	if (rc || q.changes)
		return rc;
	rc = outmail_holder(st, message_id);
	if (!rc) /* released between the two statements: try again later */
		rc = err_set(PB_ETEMP, "state db: mail <%s> changed hands",
			     message_id);
	return rc;
}

/* Run a defer or fail; PB_ENOTFOUND / PB_EEXISTS when nothing changed. */
static int outmail_release(struct query *q, const char *message_id)
{
	int rc = q_exec(q);

	q_end(q);
	if (!rc && q->changes == 0) {
		rc = outmail_holder(q->st, message_id);
		if (!rc)
			rc = outmail_missing(message_id);
	}
	return rc;
}

int store_outmail_hand(struct store *st, const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_OUT_HAND,
			   "record a mail handed to the MTA", message_id);
	if (rc)
		return rc;
	q_int(&q, 2, now());
	q_text(&q, 3, st->host);
	rc = q_exec(&q);
	q_end(&q);
	if (rc || q.changes)
		return rc;
	rc = outmail_holder(st, message_id);
	if (!rc) /* released or never claimed by this host */
		rc = err_set(PB_EEXISTS,
			     "state db: mail <%s> is not claimed by this host",
			     quote(qb, sizeof(qb), message_id));
	return rc;
}

int store_outmail_wait(struct store *st, const char *message_id,
		       int64_t next_attempt, const char *error, int counted)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_OUT_WAIT, "hold mail", message_id);
	if (rc)
		return rc;
	q_int(&q, 2, next_attempt);
	q_error(&q, 3, error);
	q_int(&q, 4, now());
	q_text(&q, 5, st->host);
	q_int(&q, 6, counted ? 1 : 0);
	rc = q_exec(&q);
	q_end(&q);
	if (rc || q.changes)
		return rc;
	rc = outmail_holder(st, message_id);
	if (!rc)
		rc = err_set(PB_EINVAL,
			     "state db: mail <%s> was not handed to the MTA",
			     quote(qb, sizeof(qb), message_id));
	return rc;
}

int store_outmail_defer(struct store *st, const char *message_id,
			int64_t next_attempt, const char *error)
{
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_OUT_DEFER, "defer mail", message_id);
	if (rc)
		return rc;
	q_int(&q, 2, next_attempt);
	q_error(&q, 3, error);
	q_int(&q, 4, now());
	q_text(&q, 5, st->host);
	return outmail_release(&q, message_id);
}

int store_outmail_fail(struct store *st, const char *message_id,
		       const char *error)
{
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_OUT_FAIL, "fail mail", message_id);
	if (rc)
		return rc;
	q_error(&q, 2, error);
	q_int(&q, 3, now());
	q_text(&q, 4, st->host);
	return outmail_release(&q, message_id);
}

int store_outmail_requeue(int *count, struct store *st, const char *project,
			  int64_t iid)
{
	struct query q;
	int rc;

	*count = 0;
	rc = q_start_mr(&q, st, S_OUT_REQUEUE, "requeue failed mails", project,
			iid);
	if (rc)
		return rc;
	q_int(&q, 3, now());
	rc = q_exec(&q);
	if (!rc)
		*count = (int)q.changes;
	q_end(&q);
	return rc;
}

struct out_sent {
	const char *message_id;
	enum store_sent_how how;
	int revision_done;
};

static int out_sent_unit(struct store *st, void *arg)
{
	struct out_sent *o = arg;
	struct query q;
	int64_t left = -1;
	int rc;

	o->revision_done = 0;
	rc = mail_mark_sent(st, o->message_id, o->how);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_ARCH_FROM_OUT, "archive mail");
	if (rc)
		return rc;
	q_text(&q, 1, o->message_id);
	q_int(&q, 2, now());
	rc = q_exec(&q);
	q_end(&q);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OUT_DELETE, "dequeue mail");
	if (rc)
		return rc;
	q_text(&q, 1, o->message_id);
	rc = outmail_update(&q, o->message_id);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OUT_LEFT, "dequeue mail");
	if (rc)
		return rc;
	q_text(&q, 1, o->message_id);
	rc = q_scalar(&q, &left);
	if (rc || left != 0)
		return rc;
	rc = q_start(&q, st, S_OUT_REV_SENT, "mark revision sent");
	if (rc)
		return rc;
	q_text(&q, 1, o->message_id);
	q_int(&q, 2, now());
	rc = q_exec(&q);
	if (!rc)
		o->revision_done = q.changes > 0;
	q_end(&q);
	return rc;
}

int store_outmail_sent(int *revision_done, struct store *st,
		       const char *message_id, enum store_sent_how how)
{
	struct out_sent o;
	int rc;

	*revision_done = 0;
	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	o.message_id = message_id;
	o.how = how;
	o.revision_done = 0;
	rc = unit_run(st, out_sent_unit, &o);
	if (!rc)
		*revision_done = o.revision_done;
	return rc;
}
