/*
 * store_notice - the notices to senders: what was decided for each
 * list reply (a notice queued, or why none was), and the senders who
 * asked for none.
 *
 * Part of the state store's interface, included by state/store.h:
 * the rules on ownership (the `owned` list and _release()), errors,
 * caps and thread safety are those at the top of store.h.
 */
#ifndef PB_STATE_STORE_NOTICE_H
#define PB_STATE_STORE_NOTICE_H

#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

struct store;

/* An address as the notice tables keep it (lower case). */
#define STORE_NOTICE_ADDR_MAX 320
/* The reasons of one notice, one per line. */
#define STORE_NOTICE_REASONS_MAX 8192

/*
 * One row per list reply that was finished with something the sender
 * should hear about (schema 10), written in the transaction that
 * finishes the reply (inbound.h), so a reply has one decision however
 * often it was tried.  decision is a token: "sent" (the notice
 * notice_id was queued in the outbound queue in the same transaction),
 * or why not: "disabled", "opt_out", "rate_limit", "auto_submitted",
 * "bounce", "list", "ours", "no_address".
 */
struct store_notice {
	const char *message_id; /* the reply's, without <> */
	const char *notice_id; /* the notice's; NULL when none was queued */
	const char *recipient; /* the sender's address, lower case */
	const char *decision;
	const char *reasons; /* what the notice says happened, by line */
	int64_t created;
	struct strlist owned;
};

void store_notice_init(struct store_notice *n);
void store_notice_release(struct store_notice *n);

/* Record the decision for a reply (created is now); PB_EEXISTS, changing
 * nothing, when the reply has one. */
int store_notice_put(struct store *st, const struct store_notice *n);
int store_notice_get(struct store_notice *out, struct store *st,
		     const char *message_id);
/* How many notices were queued for recipient (lower case) since. */
int store_notice_count(int64_t *out, struct store *st, const char *recipient,
		       int64_t since);

/*
 * Queue a rendered notice: its row in the thread map (kind receipt; iid
 * 0 for a series posted to the list that became no merge request,
 * schema 12) and the outbound queue, which delivers it as any mail of
 * the bridge's.  For the caller's transaction.  PB_EEXISTS, adding
 * nothing, when that Message-ID is in the thread map already: one
 * notice, however often it was decided.
 */
struct store_notice_place {
	const char *project;
	int64_t iid; /* 0: no merge request */
	int revision; /* 0: none */
	int patch;
};

int store_notice_queue(struct store *st, const char *notice_id,
		       const struct store_notice_place *at,
		       const char *envelope_from, const char *to,
		       const char *mail, size_t mail_len);

/*
 * The sender's own rules for a notice to `to` (lower case): *decision
 * is "opt_out" when they asked for none, "rate_limit" when `rate` were
 * queued for them in the hour before `now`, else NULL (it may go); why
 * (size bytes) says it in words.
 */
int store_notice_allowed(const char **decision, char *why, size_t size,
			 struct store *st, const char *to, int64_t rate,
			 int64_t now);

/* The sender wants no notices (on) or wants them again (off). */
int store_notice_optout_set(struct store *st, const char *address, int on);
/* *out = 1 when address (lower case) asked for no notices. */
int store_notice_optout_get(int *out, struct store *st, const char *address);

#endif
