/*
 * notify - what the sender of a list reply is told, privately, when the
 * bridge did not do all the reply asked (README "Notices to senders").
 *
 * notify_plan_reasons() and notify_apply_reasons() put into a list, in
 * plain words with what the sender can do, each thing the reply asked
 * that was not done: a trailer listed but not honoured as an approval
 * (by its verdict, inbound/approval.h), an approval the forge did not
 * take (the MR merged, closed or moved on), an objection not acted on,
 * an inline comment posted as a general comment.  The journal adds a
 * locked discussion and a dead letter (inbound.c).
 *
 * notify_finish() runs in the transaction that finishes the reply
 * (store_inbound_finish()), so a reply gets one decision however often
 * it was tried and whatever host tried it: with reasons, a notice is
 * recorded (store_notice.h) and, unless [inbound] notify_sender is off,
 * the sender opted out, RFC 3834 forbids an answer (mail/notice.h) or
 * the sender had [inbound] notice_rate notices in the last hour, put in
 * the thread map (kind receipt) and the outbound queue, which delivers
 * it (outbound.h).  Its Message-ID comes from the reply's, so it is one
 * mail even across kill -9.  A sender's "unsubscribe notices" request
 * is recorded in the same transaction.
 *
 * Ownership: everything borrowed.  Errors: the store's.
 */
#ifndef PB_INBOUND_NOTIFY_H
#define PB_INBOUND_NOTIFY_H

#include "core/config.h"
#include "inbound/apply.h"
#include "inbound/plan.h"
#include "mail/notice.h"
#include "mail/review.h"
#include "state/store.h"
#include "util/strlist.h"

#include <stdint.h>

/* Renders a notice as a whole mail (outbound/noticemail.h). */
typedef int (*notify_render_fn)(struct buf *out, const struct notice *n,
				void *arg);

void notify_plan_reasons(struct strlist *out, const struct review *r,
			 const struct plan *p);
/* What apply did not do; message_id's action journal is read for the
 * notes an earlier attempt posted. */
void notify_apply_reasons(struct strlist *out, struct store *st,
			  const char *message_id,
			  const struct apply_result *res);

struct notify_in {
	const struct config *cfg;
	const struct config_project *proj; /* NULL: not placed */
	const char *message_id; /* the reply's, without <> */
	const char *project; /* NULL: not placed */
	int64_t iid;
	int revision;
	int patch;
	const struct review *review; /* NULL: not read */
	const char *raw; /* the reply as spooled */
	size_t raw_len;
	const char *envelope_sender;
	const struct strlist *reasons;
	const char *link; /* the MR's address; may be NULL */
	int request; /* notice_optout_request(): 1 opt out, 0 in, -1 */
	notify_render_fn render; /* NULL: notices are not mailed */
	void *render_arg;
	/* out: the decision recorded ("sent", ...), NULL when none */
	const char *decision;
};

/*
 * In the finishing transaction: record the opt-out request, and the
 * notice's decision and mail.  The rendering happens in here too, and
 * is deterministic but for the Date.
 */
int notify_finish(struct store *st, struct notify_in *in);

#endif
