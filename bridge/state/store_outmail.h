/*
 * store_outmail - the outbound mail queue.
 *
 * Part of the state store's interface, included by state/store.h:
 * the rules on ownership (the `owned` list and _release()), errors,
 * caps and thread safety are those at the top of store.h.
 */
#ifndef PB_STATE_STORE_OUTMAIL_H
#define PB_STATE_STORE_OUTMAIL_H

#include "state/store_mail.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

struct store;

/*
 * Outbound mail queue (schema 3): the exact bytes of a series mail and
 * its envelope, kept from before the first delivery attempt until the MTA
 * accepts it (the Postfix queue-file discipline).  A mail is put here in
 * the same transaction as its thread-map row (store_mail_put(), state
 * pending), so after a crash the daemon resends the stored bytes and
 * never has to render a mail again: a resumed mail is byte-identical.
 *
 *   queued --temporary failure--> deferred --due again--> (attempt)
 *      |                              |
 *      +--------rejected--------------+--> failed (needs an operator)
 *      +--accepted: row deleted, thread map sent, revision sent when it
 *                   was the revision's last queued mail
 *
 * Handed, outcome unknown (schema 7): right before a host gives a mail
 * to its MTA it records the time (store_outmail_hand(), under its
 * claim), and an answer from the MTA that says the mail was not taken
 * (defer, fail) clears it again; accepted, the row goes.  A row still
 * handed therefore is a mail the MTA may have taken: its host died or
 * lost the database before it recorded the 250, or the connection was
 * lost after the end of data.  Whoever sends it next asks the list
 * archive first (outbound/outbound.h); store_outmail_wait() holds it
 * meanwhile, keeping it handed.
 */
enum store_outmail_state {
	STORE_OUTMAIL_QUEUED, /* not tried yet */
	STORE_OUTMAIL_DEFERRED, /* failed temporarily; due at next_attempt */
	STORE_OUTMAIL_FAILED, /* refused for good; kept for status */
};

struct store_outmail {
	const char *message_id; /* the thread-map row it belongs to */
	/* From the thread map (filled by get/list, ignored by put). */
	const char *project;
	int64_t iid;
	int revision;
	int patch;
	const char *envelope_from;
	const char *recipients; /* envelope recipients, one per line */
	/* The message; get fills it, list leaves it NULL. */
	const char *message;
	size_t message_len;
	enum store_outmail_state state;
	int attempts; /* delivery attempts that failed */
	int64_t next_attempt; /* due time (deferred); 0 = now */
	const char *last_error; /* why the last attempt failed */
	int64_t created;
	int64_t updated;
	/* The host that claimed it last, and until when (0: released). */
	const char *claimed_by;
	int64_t lease_until;
	/* When it was last handed to the MTA with the outcome not known
	 * yet (store_outmail_hand()); 0: not handed, or the MTA's answer
	 * said it was not taken. */
	int64_t handed;
	struct strlist owned; /* strings the store filled in (see above) */
};

void store_outmail_init(struct store_outmail *m);
void store_outmail_release(struct store_outmail *m);
const char *store_outmail_state_name(enum store_outmail_state state);

struct store_outmail_list {
	struct store_outmail *items;
	size_t nr;
	size_t alloc;
};

void store_outmail_list_release(struct store_outmail_list *list);

/*
 * Queue a mail (m->state, attempts, times and the thread-map fields are
 * ignored): the thread map must hold m->message_id already, PB_ENOTFOUND
 * otherwise.  PB_EEXISTS, changing nothing, when it is queued already.
 */
int store_outmail_put(struct store *st, const struct store_outmail *m);
/* One queued mail, with its message. */
int store_outmail_get(struct store_outmail *out, struct store *st,
		      const char *message_id);
/*
 * Queued mails without their messages, by project, MR, revision and
 * patch: of one MR (iid > 0), of a project (iid 0), or all (project
 * NULL); at most limit (0: STORE_LIST_MAX).  Appended to out.
 */
int store_outmail_list(struct store_outmail_list *out, struct store *st,
		       const char *project, int64_t iid, size_t limit);
/*
 * Claim a queued mail before handing it to the MTA, until now + the
 * lease: 0 when it was free (never claimed, released, or the claim
 * expired) or this host's already; PB_EEXISTS, naming the host, when
 * another host holds it; PB_ENOTFOUND when it is not queued (sent
 * meanwhile).  Sent, defer and fail release the claim.  Of two hosts
 * that would hand the same mail to their MTAs, one does.
 */
int store_outmail_claim(struct store *st, const char *message_id);
/*
 * About to hand the mail to the MTA (before the end of DATA): record the
 * time in handed, durably.  Only under this host's claim: PB_EEXISTS when
 * another host holds it or this host does not (released meanwhile),
 * PB_ENOTFOUND when it is not queued.
 */
int store_outmail_hand(struct store *st, const char *message_id);
/*
 * A handed mail whose outcome is still unknown waits (for the list
 * archive, or after a connection lost at the end of data): due at
 * next_attempt, the error kept, an attempt counted when counted, the
 * claim released, handed KEPT.  PB_EINVAL when the mail is not handed;
 * other errors as store_outmail_defer().
 */
int store_outmail_wait(struct store *st, const char *message_id,
		       int64_t next_attempt, const char *error, int counted);
/* A temporary failure (the MTA did not take the mail): count it, keep
 * the error, due at next_attempt, no longer handed; the claim is
 * released.  PB_EEXISTS when another host holds a claim
 * that has not expired (it took the mail over: leave it). */
int store_outmail_defer(struct store *st, const char *message_id,
			int64_t next_attempt, const char *error);
/* A permanent failure: count it, keep the error, never retried alone,
 * no longer handed; errors as store_outmail_defer(). */
int store_outmail_fail(struct store *st, const char *message_id,
		       const char *error);
/* Every failed mail of an MR back to queued (an operator's retry);
 * *count gets how many. */
int store_outmail_requeue(int *count, struct store *st, const char *project,
			  int64_t iid);
/*
 * The MTA accepted the mail (or a handed mail was found in the list
 * archive: how says which): in one transaction, mark its thread-map row
 * sent (by this host, and how), drop it from the queue and, when no mail
 * of its revision is left in the queue, mark the revision sent
 * (*revision_done = 1, else 0).
 * PB_ENOTFOUND when it is not queued.
 */
int store_outmail_sent(int *revision_done, struct store *st,
		       const char *message_id, enum store_sent_how how);

#endif
