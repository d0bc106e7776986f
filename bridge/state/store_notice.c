/*
 * store_notice - the notices to senders and the senders' opt-outs.
 * See store_notice.h.
 */

#include "state/storeq.h"

#include <stdio.h>
#include <string.h>

#define NTC(k, ...) COL_##k(struct store_notice, __VA_ARGS__)
/* A row of NOTICE_COLS. */
static const struct col notice_cols[] = {
	[NC_MSGID] = NTC(TEXT, message_id),
	[NC_NOTICE] = NTC(TEXT, notice_id),
	[NC_RECIPIENT] = NTC(TEXT, recipient),
	[NC_DECISION] = NTC(TEXT, decision),
	[NC_REASONS] = NTC(TEXT, reasons),
	[NC_CREATED] = NTC(INT, created),
};
static const struct row_type notice_row =
	ROW_TYPE(struct store_notice, notice_cols);

void store_notice_init(struct store_notice *n)
{
	row_init(&notice_row, n);
}

void store_notice_release(struct store_notice *n)
{
	row_release(&notice_row, n);
}

int store_notice_put(struct store *st, const struct store_notice *n)
{
	struct query q;
	int rc;

	rc = check_str("recipient", n->recipient, STORE_NOTICE_ADDR_MAX, 0);
	if (!rc)
		rc = check_token("notice decision", n->decision);
	if (!rc)
		rc = check_str("notice id", n->notice_id, STORE_MSGID_MAX, 0);
	if (rc)
		return rc;
	rc = q_start_msgid(&q, st, S_NOTICE_PUT, "record a notice",
			   n->message_id);
	if (rc)
		return rc;
	q_opt(&q, 2, n->notice_id);
	q_opt(&q, 3, n->recipient);
	q_text(&q, 4, n->decision);
	q_textn(&q, 5, n->reasons ? n->reasons : "",
		n->reasons ? strnlen(n->reasons, STORE_NOTICE_REASONS_MAX) : 0);
	q_int(&q, 6, now());
	rc = q_exec(&q);
	q_end(&q);
	if (!rc && !q.changes)
		rc = err_set(PB_EEXISTS, "state db: the reply has a notice");
	return rc;
}

int store_notice_get(struct store_notice *out, struct store *st,
		     const char *message_id)
{
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_NOTICE_GET, "look up a notice",
			   message_id);
	if (rc)
		return rc;
	rc = row_get(&notice_row, out, &q);
	if (rc == 0)
		rc = err_set(PB_ENOTFOUND, "state db: no notice decided");
	return rc < 0 ? rc : 0;
}

int store_notice_count(int64_t *out, struct store *st, const char *recipient,
		       int64_t since)
{
	struct query q;
	int rc;

	*out = 0;
	rc = check_str("recipient", recipient, STORE_NOTICE_ADDR_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_NOTICE_COUNT, "count notices");
	if (rc)
		return rc;
	q_text(&q, 1, recipient);
	q_int(&q, 2, since);
	return q_scalar(&q, out);
}

int store_notice_optout_set(struct store *st, const char *address, int on)
{
	struct query q;
	int rc;

	rc = check_str("address", address, STORE_NOTICE_ADDR_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, on ? S_OPTOUT_PUT : S_OPTOUT_DELETE,
		     on ? "record an opt-out" : "drop an opt-out");
	if (rc)
		return rc;
	q_text(&q, 1, address);
	if (on)
		q_int(&q, 2, now());
	rc = q_exec(&q);
	q_end(&q);
	return rc;
}

int store_notice_optout_get(int *out, struct store *st, const char *address)
{
	struct query q;
	int rc;

	*out = 0;
	rc = check_str("address", address, STORE_NOTICE_ADDR_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OPTOUT_GET, "look up an opt-out");
	if (rc)
		return rc;
	q_text(&q, 1, address);
	rc = q_step(&q);
	if (rc >= 0) {
		*out = rc == 1;
		rc = 0;
	}
	q_end(&q);
	return rc;
}

int store_notice_queue(struct store *st, const char *notice_id,
		       const struct store_notice_place *at,
		       const char *envelope_from, const char *to,
		       const char *mail, size_t mail_len)
{
	struct store_mail sm;
	struct store_outmail om;
	int rc;

	store_mail_init(&sm);
	sm.message_id = notice_id;
	sm.project = at->project;
	sm.iid = at->iid;
	sm.revision = at->revision > 0 ? at->revision : 0;
	sm.patch = at->patch > 0 ? at->patch : 0;
	sm.total = sm.patch; /* k of M needs M >= k; not a series mail */
	sm.kind = STORE_MAIL_RECEIPT;
	sm.state = STORE_MAIL_PENDING;
	rc = store_mail_put(st, &sm);
	store_mail_release(&sm);
	if (rc)
		return rc;
	store_outmail_init(&om);
	om.message_id = notice_id;
	om.envelope_from = envelope_from;
	om.recipients = to;
	om.message = mail;
	om.message_len = mail_len;
	rc = store_outmail_put(st, &om);
	store_outmail_release(&om);
	return rc;
}

int store_notice_allowed(const char **decision, char *why, size_t size,
			 struct store *st, const char *to, int64_t rate,
			 int64_t now)
{
	int64_t sent = 0;
	int out = 0, rc;

	*decision = NULL;
	rc = store_notice_optout_get(&out, st, to);
	if (rc)
		return rc;
	if (out) {
		*decision = "opt_out";
		snprintf(why, size, "the sender asked for no notices");
		return 0;
	}
	rc = store_notice_count(&sent, st, to, now - 3600);
	if (rc)
		return rc;
	if (sent >= rate) {
		*decision = "rate_limit";
		snprintf(why, size,
			 "%lld notices to this sender in the last hour "
			 "([inbound] notice_rate %lld)",
			 (long long)sent, (long long)rate);
	}
	return 0;
}
