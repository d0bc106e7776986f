/*
 * store_action - the forge action journal and the trailer verdicts
 * of each applied mail.  See store_action.h.
 */

#include "state/storeq.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const action_state_names[] = {
	[STORE_ACTION_INTENT] = "intent",
	[STORE_ACTION_DONE] = "done",
	[STORE_ACTION_FAILED] = "failed",
};

/* Forge action journal. */

#define ACT(k, ...) COL_##k(struct store_action, __VA_ARGS__)
/* A row of ACT_COLS. */
static const struct col action_cols[] = {
	[AC_MSGID] = ACT(TEXT, message_id),
	[AC_INDEX] = ACT(INT, index),
	[AC_KIND] = ACT(TEXT, kind),
	[AC_MARKER] = ACT(TEXT, marker),
	[AC_STATE] = ACT(ENUM, state, action_state_names),
	[AC_NOTE] = ACT(INT, note_id),
	[AC_DISCUSSION] = ACT(TEXT, discussion_id),
	[AC_ATTEMPTS] = ACT(INT, attempts),
	[AC_ERROR] = ACT(TEXT, last_error),
	[AC_CREATED] = ACT(INT, created),
	[AC_UPDATED] = ACT(INT, updated),
	[AC_HOST] = ACT(TEXT, host),
};
static const struct row_type action_row =
	ROW_TYPE(struct store_action, action_cols);

/* store_action_init(), _release() and _list_release() */
ROW_FUNCTIONS(action, action_row);

static int check_action_key(const char *message_id, int index)
{
	int rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);

	if (rc)
		return rc;
	if (index < 0)
		return err_set(PB_EINVAL, "state db: bad action index %d",
			       index);
	return 0;
}

static int action_get(struct store_action *out, struct store *st,
		      const char *message_id, int index)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = q_start(&q, st, S_ACT_GET, "look up forge action");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, index);
	rc = q_step(&q);
	if (rc == 1)
		rc = row_read(&action_row, out, &q);
	else if (rc == 0)
		rc = err_set(PB_ENOTFOUND, "state db: no action %d of <%s>",
			     index, quote(qb, sizeof(qb), message_id));
	q_end(&q);
	return rc;
}

/* Run an insert/update keyed by (message_id, index); *changed rows. */
static int action_write(int *changed, struct query *q)
{
	int rc = q_exec(q);

	*changed = rc ? 0 : (int)q->changes;
	q_end(q);
	return rc;
}

struct act_begin {
	struct store_action *out;
	const char *message_id;
	int index;
	const char *kind;
	const char *marker;
	int fresh;
};

/*
 * The mail's claim, when it is applying: renewed when it is this
 * host's, so the claim lasts while the host keeps working; a claim that
 * moved to another host (this one was too slow, and the other took it
 * over) stops this host before it writes to the forge.  PB_ETEMP then:
 * the caller must stop applying the mail (store_inbound_finish() and
 * _retry() then say who holds it).
 */
static int act_fence(struct store *st, const char *message_id)
{
	struct query q;
	int rc;

	rc = q_start(&q, st, S_IN_RENEW, "renew a claim");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_text(&q, 2, st->host);
	q_int(&q, 3, now() + st->lease);
	rc = q_exec(&q);
	q_end(&q);
	if (rc || q.changes)
		return rc;
	rc = inbound_holder(st, message_id);
	if (rc == PB_EEXISTS) {
		char msg[PB_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", err_msg());
		return err_set(PB_ETEMP, "%s; this host stops", msg);
	}
	return rc;
}

static int act_begin_unit(struct store *st, void *arg)
{
	struct act_begin *a = arg;
	struct query q;
	int64_t t = now();
	int rc, changed = 0;

	a->fresh = 0;
	rc = act_fence(st, a->message_id);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_ACT_INSERT, "journal forge action");
	if (rc)
		return rc;
	q_text(&q, 1, a->message_id);
	q_int(&q, 2, a->index);
	q_text(&q, 3, a->kind);
	q_text(&q, 4, a->marker);
	q_int(&q, 5, t);
	q_text(&q, 6, st->host);
	rc = action_write(&a->fresh, &q);
	if (rc)
		return rc;
	if (!a->fresh) {
		/* Seen before: count the attempt unless it is done. */
		rc = q_start(&q, st, S_ACT_AGAIN, "journal forge action");
		if (rc)
			return rc;
		q_text(&q, 1, a->message_id);
		q_int(&q, 2, a->index);
		q_int(&q, 3, t);
		q_text(&q, 4, st->host);
		rc = action_write(&changed, &q);
		if (rc)
			return rc;
	}
	return action_get(a->out, st, a->message_id, a->index);
}

int store_action_begin(struct store_action *out, struct store *st,
		       const char *message_id, int index, const char *kind,
		       const char *marker)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct act_begin a;
	int rc;

	if ((rc = check_action_key(message_id, index)) ||
	    (rc = check_token("action kind", kind)) ||
	    (rc = check_str("marker", marker, STORE_MARKER_MAX, 1)))
		return rc;
	a.out = out;
	a.message_id = message_id;
	a.index = index;
	a.kind = kind;
	a.marker = marker;
	a.fresh = 0;
	rc = unit_run(st, act_begin_unit, &a);
	if (!rc && !a.fresh)
		rc = err_set(PB_EEXISTS,
			     "state db: action %d of <%s> was begun before "
			     "(%s, attempt %d)",
			     index, quote(qb, sizeof(qb), message_id),
			     action_state_names[out->state], out->attempts);
	return rc;
}

int store_action_complete(struct store *st, const char *message_id, int index,
			  int64_t note_id, const char *discussion_id)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc, changed = 0;

	if ((rc = check_action_key(message_id, index)) ||
	    (rc = check_str("discussion id", discussion_id, STORE_FORGE_ID_MAX,
			    0)))
		return rc;
	if (note_id < 0)
		return err_set(PB_EINVAL, "state db: bad note id");
	rc = q_start(&q, st, S_ACT_COMPLETE, "complete forge action");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, index);
	q_int_or_null(&q, 3, note_id);
	q_opt(&q, 4, discussion_id);
	q_int(&q, 5, now());
	rc = action_write(&changed, &q);
	if (!rc && !changed)
		rc = err_set(PB_ENOTFOUND, "state db: no action %d of <%s>",
			     index, quote(qb, sizeof(qb), message_id));
	return rc;
}

int store_action_fail(struct store *st, const char *message_id, int index,
		      const char *error)
{
	struct store_action cur = { 0 };
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc, changed = 0;

	rc = check_action_key(message_id, index);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_ACT_FAIL, "fail forge action");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, index);
	q_error(&q, 3, error);
	q_int(&q, 4, now());
	rc = action_write(&changed, &q);
	if (rc || changed)
		return rc;
	/* Missing, or done already. */
	rc = action_get(&cur, st, message_id, index);
	if (!rc)
		rc = err_set(PB_EEXISTS,
			     "state db: action %d of <%s> is done already",
			     index, quote(qb, sizeof(qb), message_id));
	store_action_release(&cur);
	return rc;
}

int store_action_list(struct store_action_list *out, struct store *st,
		      const char *message_id)
{
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_ACT_LIST, "list forge actions",
			   message_id);
	if (rc)
		return rc;
	ROW_LIST_READ(rc, &action_row, out, &q);
	q_end(&q);
	return rc;
}

int store_action_by_discussion(struct store_action *out, struct store *st,
			       const char *project, int64_t iid,
			       const char *discussion_id)
{
	struct query q;
	int rc;

	rc = q_start_mr(&q, st, S_ACT_BY_DISCUSSION,
			"look up a discussion's action", project, iid);
	if (rc)
		return rc;
	q_text(&q, 3, discussion_id);
	rc = q_step(&q);
	if (rc == 1)
		rc = row_read(&action_row, out, &q);
	else if (rc == 0)
		rc = err_set(PB_ENOTFOUND, "state db: no action made the "
					   "discussion");
	q_end(&q);
	return rc;
}

/* Trailer verdicts. */

struct verdicts_set {
	const char *message_id;
	const struct strlist *verdicts;
};

static int verdicts_set_unit(struct store *st, void *arg)
{
	struct verdicts_set *v = arg;
	struct query q;
	size_t i;
	int rc;

	rc = q_start(&q, st, S_VERDICT_CLEAR, "clear trailer verdicts");
	if (!rc) {
		q_text(&q, 1, v->message_id);
		rc = q_exec(&q);
		q_end(&q);
	}
	for (i = 0; !rc && i < v->verdicts->nr && i < STORE_VERDICTS_MAX; i++) {
		rc = q_start(&q, st, S_VERDICT_PUT, "record a trailer verdict");
		if (rc)
			break;
		q_text(&q, 1, v->message_id);
		q_int(&q, 2, (int64_t)i);
		q_error(&q, 3,
			v->verdicts->items[i][0] ? v->verdicts->items[i] : "-");
		rc = q_exec(&q);
		q_end(&q);
	}
	return rc;
}

int store_verdicts_set(struct store *st, const char *message_id,
		       const struct strlist *verdicts)
{
	struct verdicts_set v;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	v.message_id = message_id;
	v.verdicts = verdicts;
	return unit_run(st, verdicts_set_unit, &v);
}

int store_verdicts_get(struct strlist *out, struct store *st,
		       const char *message_id)
{
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_VERDICT_LIST, "list trailer verdicts",
			   message_id);
	if (rc)
		return rc;
	while ((rc = q_step(&q)) == 1 && out->nr < STORE_VERDICTS_MAX)
		strlist_push_owned(out, col_str(&q, 0));
	q_end(&q);
	return rc > 0 ? 0 : rc;
}
