/*
 * store_inbound - the inbound journal: each spooled mail and its way
 * to the forge.  See store_inbound.h.
 */

#include "state/storeq.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const inbound_state_names[] = {
	[STORE_INBOUND_RECEIVED] = "received",
	[STORE_INBOUND_APPLYING] = "applying",
	[STORE_INBOUND_APPLIED] = "applied",
	[STORE_INBOUND_IGNORED] = "ignored",
	[STORE_INBOUND_FAILED] = "failed",
	[STORE_INBOUND_DEAD] = "dead",
};

/* Inbound journal. */

#define IN(k, ...) COL_##k(struct store_inbound, __VA_ARGS__)
/* A row of IN_COLS. */
static const struct col inbound_cols[] = {
	[IC_MSGID] = IN(TEXT, message_id),
	[IC_SPOOL] = IN(TEXT, spool_name),
	[IC_PROJECT] = IN(TEXT, project),
	[IC_IID] = IN(INT, iid),
	[IC_REVISION] = IN(INT, revision),
	[IC_PATCH] = IN(INT, patch),
	[IC_CLASS] = IN(TEXT, classification),
	[IC_STATE] = IN(ENUM, state, inbound_state_names),
	[IC_ATTEMPTS] = IN(INT, attempts),
	[IC_NEXT] = IN(INT, next_attempt),
	[IC_ERROR] = IN(TEXT, last_error),
	[IC_CREATED] = IN(INT, created),
	[IC_UPDATED] = IN(INT, updated),
	[IC_SPOOLED_BY] = IN(TEXT, spooled_by),
	[IC_CLAIMED_BY] = IN(TEXT, claimed_by),
	[IC_LEASE] = IN(INT, lease_until),
};
static const struct row_type inbound_row =
	ROW_TYPE(struct store_inbound, inbound_cols);

/* store_inbound_init(), _release() and _list_release() */
ROW_FUNCTIONS(inbound, inbound_row);

const char *store_inbound_state_name(enum store_inbound_state state)
{
	return name_of(inbound_state_names, ARRAY_SIZE(inbound_state_names),
		       (size_t)state);
}

int store_inbound_state_from_name(enum store_inbound_state *out,
				  const char *name)
{
	char qb[PB_LOG_QUOTE_MAX];
	int v = name_index(inbound_state_names, ARRAY_SIZE(inbound_state_names),
			   name, name ? strlen(name) : 0);

	if (v < 0)
		return err_set(PB_EINVAL, "unknown inbound state '%s'",
			       quote(qb, sizeof(qb), name));
	*out = (enum store_inbound_state)v;
	return 0;
}

static int inbound_one(struct store_inbound *out, struct query *q,
		       const char *missing)
{
	int rc = row_get(&inbound_row, out, q);

	if (rc == 0)
		rc = err_set(PB_ENOTFOUND, "state db: %s", missing);
	return rc < 0 ? rc : 0;
}

int store_inbound_record(struct store *st, const struct store_inbound *in)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int64_t t = now();
	int rc, target = in->project && *in->project;

	if ((rc = check_str("Message-ID", in->message_id, STORE_MSGID_MAX,
			    1)) ||
	    (rc = check_str("spool name", in->spool_name, STORE_SPOOL_NAME_MAX,
			    1)) ||
	    (rc = check_token("classification", in->classification)))
		return rc;
	if (strchr(in->spool_name, '/') || in->spool_name[0] == '.')
		return err_set(PB_EINVAL, "state db: bad spool name '%s'",
			       quote(qb, sizeof(qb), in->spool_name));
	if (target && ((rc = check_mr(in->project, in->iid))))
		return rc;
	if (target && (in->revision < 0 || in->patch < 0))
		return err_set(PB_EINVAL, "state db: bad inbound target");
	if (in->next_attempt < 0)
		return err_set(PB_EINVAL, "state db: bad next attempt time");
	if ((!in->spool_record && in->spool_record_len) ||
	    in->spool_record_len > STORE_SPOOL_RECORD_MAX)
		return err_set(PB_EINVAL,
			       "state db: bad spool record (%zu "
			       "bytes)",
			       in->spool_record_len);

	rc = q_start(&q, st, S_IN_RECORD, "record inbound mail");
	if (rc)
		return rc;
	q_text(&q, 1, in->message_id);
	q_text(&q, 2, in->spool_name);
	q_opt(&q, 3, target ? in->project : NULL);
	q_int_or_null(&q, 4, target ? in->iid : 0);
	q_int_or_null(&q, 5, target ? in->revision : 0);
	if (target)
		q_int(&q, 6, in->patch);
	else
		q_int_or_null(&q, 6, 0);
	q_text(&q, 7, in->classification);
	q_int(&q, 8, in->next_attempt ? in->next_attempt : t);
	q_int(&q, 9, t);
	q_text(&q, 10, st->host);
	q_blob(&q, 11, in->spool_record, in->spool_record_len);
	rc = q_exec(&q);
	if (!rc && q.changes == 0)
		rc = err_set(PB_EEXISTS,
			     "state db: inbound mail <%s> already recorded",
			     quote(qb, sizeof(qb), in->message_id));
	q_end(&q);
	return rc;
}

int store_inbound_claim(struct store_inbound *out, struct store *st,
			int64_t when)
{
	struct query q;
	int64_t t = now();
	int rc;

	rc = q_start(&q, st, S_IN_CLAIM, "claim inbound mail");
	if (rc)
		return rc;
	q_int(&q, 1, when);
	q_int(&q, 2, t);
	q_text(&q, 3, st->host);
	q_int(&q, 4, t + st->lease);
	q_int(&q, 5, t - st->lease);
	rc = q_step(&q);
	if (rc == 1) {
		rc = row_read(&inbound_row, out, &q);
		if (!rc)
			rc = q_exec(&q);
	} else if (rc == 0) {
		rc = err_set(PB_ENOTFOUND, "state db: no inbound mail is due");
	}
	q_end(&q);
	return rc;
}

/*
 * Who holds the claim of an applying row: 0 when it is st's own (or the
 * row has no owner - from before schema 6 - or is not applying),
 * PB_EEXISTS, naming the host, when it is another host's (expired or
 * not: only a claim takes it over).
 */
int inbound_holder(struct store *st, const char *message_id)
{
	int found;

	return claim_holder(&found, st, S_IN_HOLDER, message_id, "inbound mail",
			    0);
}

int store_inbound_renew(struct store *st, const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_IN_RENEW, "renew a claim", message_id);
	if (rc)
		return rc;
	q_text(&q, 2, st->host);
	q_int(&q, 3, now() + st->lease);
	rc = q_exec(&q);
	q_end(&q);
	if (rc || q.changes)
		return rc;
	rc = inbound_holder(st, message_id);
	if (!rc)
		rc = err_set(PB_ENOTFOUND,
			     "state db: inbound mail <%s> is not claimed by "
			     "this host",
			     quote(qb, sizeof(qb), message_id));
	return rc;
}

int store_inbound_spool_record(char **out, size_t *len, struct store *st,
			       const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	*out = NULL;
	*len = 0;
	rc = q_start_msgid(&q, st, S_IN_SPOOL_RECORD, "read a spool record",
			   message_id);
	if (rc)
		return rc;
	rc = q_step(&q);
	if (rc == 1) {
		*out = col_blob(&q, 0, len);
		rc = 0;
	}
	q_end(&q);
	if (!rc && !*out)
		rc = err_set(PB_ENOTFOUND,
			     "state db: no spool record kept for <%s>",
			     quote(qb, sizeof(qb), message_id));
	return rc;
}

/* Why an update of an inbound row changed nothing. */
static int inbound_not_applying(struct store *st, const char *message_id,
				const char *action)
{
	struct store_inbound cur = { 0 };
	char qb[PB_LOG_QUOTE_MAX];
	int rc = store_inbound_get(&cur, st, message_id);

	if (!rc && cur.state == STORE_INBOUND_APPLYING)
		rc = inbound_holder(st, message_id);
	if (!rc)
		rc = err_set(PB_EINVAL,
			     "state db: cannot %s inbound mail <%s>: it is "
			     "%s, not applying",
			     action, quote(qb, sizeof(qb), message_id),
			     inbound_state_names[cur.state]);
	store_inbound_release(&cur);
	return rc;
}

static int inbound_update(struct store *st, const char *message_id,
			  enum store_inbound_state state, int64_t next,
			  const char *text, const char *action)
{
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_IN_FINISH, action);
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_text(&q, 2, inbound_state_names[state]);
	q_int_or_null(&q, 3, next); /* 0: keep */
	q_error(&q, 4, text);
	q_int(&q, 5, now());
	q_text(&q, 6, st->host);
	rc = q_exec(&q);
	q_end(&q);
	if (!rc && q.changes == 0)
		rc = inbound_not_applying(st, message_id, action);
	return rc;
}

int store_inbound_finish(struct store *st, const char *message_id,
			 enum store_inbound_state result, const char *reason)
{
	if (result != STORE_INBOUND_APPLIED &&
	    result != STORE_INBOUND_IGNORED && result != STORE_INBOUND_DEAD)
		return err_set(PB_EINVAL,
			       "state db: an inbound mail cannot finish as %s",
			       store_inbound_state_name(result));
	return inbound_update(st, message_id, result, 0, reason, "finish");
}

int store_inbound_retry(struct store *st, const char *message_id,
			int64_t next_attempt, const char *error)
{
	if (next_attempt <= 0)
		return err_set(PB_EINVAL, "state db: bad retry time");
	return inbound_update(st, message_id, STORE_INBOUND_FAILED,
			      next_attempt, error, "retry");
}

int store_inbound_wait(struct store *st, const char *message_id,
		       int64_t next_attempt, const char *why)
{
	struct query q;
	int rc;

	if (next_attempt <= 0)
		return err_set(PB_EINVAL, "state db: bad retry time");
	rc = q_start_msgid(&q, st, S_IN_WAIT, "wait", message_id);
	if (rc)
		return rc;
	q_int(&q, 2, next_attempt);
	q_error(&q, 3, why);
	q_int(&q, 4, now());
	q_text(&q, 5, st->host);
	rc = q_exec(&q);
	q_end(&q);
	if (!rc && q.changes == 0)
		rc = inbound_not_applying(st, message_id, "wait");
	return rc;
}

int store_inbound_place(struct store *st, const char *message_id,
			const char *project, int64_t iid, int revision,
			int patch)
{
	struct query q;
	int rc;

	if (!project || !project[0] || iid <= 0)
		return err_set(PB_EINVAL,
			       "state db: no merge request to "
			       "place <%s> in",
			       message_id);
	rc = q_start(&q, st, S_IN_PLACE, "place inbound mail");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_text(&q, 2, project);
	q_int(&q, 3, iid);
	q_int_or_null(&q, 4, revision > 0 ? revision : 0);
	q_int(&q, 5, patch >= 0 ? patch : 0);
	rc = q_exec(&q);
	q_end(&q);
	return rc;
}

int store_inbound_recover(int *count, struct store *st)
{
	struct query q;
	int rc;

	*count = 0;
	rc = q_start(&q, st, S_IN_RECOVER, "recover inbound mails");
	if (rc)
		return rc;
	q_int(&q, 1, now());
	q_text(&q, 2, st->host);
	rc = q_exec(&q);
	if (!rc)
		*count = q.changes;
	q_end(&q);
	return rc;
}

int store_inbound_list(struct store_inbound_list *out, struct store *st,
		       enum store_inbound_state state, size_t limit)
{
	struct query q;
	int rc;

	if ((size_t)state >= ARRAY_SIZE(inbound_state_names))
		return err_set(PB_EINVAL, "state db: bad inbound state");
	if (limit == 0 || limit > STORE_LIST_MAX)
		limit = STORE_LIST_MAX;
	rc = q_start(&q, st, S_IN_LIST, "list inbound mails");
	if (rc)
		return rc;
	q_text(&q, 1, inbound_state_names[state]);
	q_int(&q, 2, (int64_t)limit);
	ROW_LIST_READ(rc, &inbound_row, out, &q);
	q_end(&q);
	return rc;
}

int store_inbound_get(struct store_inbound *out, struct store *st,
		      const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX], missing[PB_LOG_QUOTE_MAX + 32];
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_IN_GET, "look up inbound mail",
			   message_id);
	if (rc)
		return rc;
	snprintf(missing, sizeof(missing), "no inbound mail <%s>",
		 quote(qb, sizeof(qb), message_id));
	return inbound_one(out, &q, missing);
}

#define COUNT(k, ...) COL_##k(struct store_inbound_count, __VA_ARGS__)
/* A row of S_IN_COUNT. */
static const struct col count_cols[] = {
	COUNT(TEXT, project),
	COUNT(ENUM, state, inbound_state_names),
	COUNT(INT, count),
};
static const struct row_type count_row =
	ROW_TYPE(struct store_inbound_count, count_cols);

void store_inbound_count_list_release(struct store_inbound_count_list *list)
{
	ROW_LIST_RELEASE(&count_row, list);
}

int store_inbound_count(struct store_inbound_count_list *out, struct store *st)
{
	struct query q;
	size_t seen = 0;
	int rc;

	rc = q_start(&q, st, S_IN_COUNT, "count inbound mails");
	if (rc)
		return rc;
	/* One pair more than allowed tells "too many" from "exactly". */
	q_int(&q, 1, (int64_t)STORE_LIST_MAX + 1);
	while ((rc = q_step(&q)) == 1) {
		if (++seen > STORE_LIST_MAX) {
			rc = err_set(PB_ELIMIT,
				     "state db: inbound mails of more than "
				     "%d (project, state) pairs",
				     STORE_LIST_MAX);
			break;
		}
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		row_init(&count_row, &out->items[out->nr]);
		rc = row_read(&count_row, &out->items[out->nr], &q);
		if (rc)
			break;
		out->nr++;
	}
	q_end(&q);
	return rc;
}
