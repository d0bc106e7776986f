/*
 * store_inbound - the inbound journal: each mail the milter spooled
 * and its way to the forge.
 *
 * Part of the state store's interface, included by state/store.h:
 * the rules on ownership (the `owned` list and _release()), errors,
 * caps and thread safety are those at the top of store.h.
 */
#ifndef PB_STATE_STORE_INBOUND_H
#define PB_STATE_STORE_INBOUND_H

#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

struct store;

/*
 * Inbound journal: one row per mail the milter spooled, keyed by its
 * Message-ID, so a copy delivered twice - to one host or to two - is
 * recorded and applied once.
 *
 *   received --claim--> applying --finish--> applied | ignored | dead
 *                          |   ^
 *                    retry |   | claim, once next_attempt is due
 *                          v   |
 *                         failed
 */
enum store_inbound_state {
	STORE_INBOUND_RECEIVED,
	STORE_INBOUND_APPLYING,
	STORE_INBOUND_APPLIED,
	STORE_INBOUND_IGNORED,
	STORE_INBOUND_FAILED, /* will be retried at next_attempt */
	STORE_INBOUND_DEAD, /* given up; needs an operator */
};

struct store_inbound {
	const char *message_id;
	const char *spool_name; /* the spool record's file name */
	/* The MR the mail is about; project NULL when none. */
	const char *project;
	int64_t iid;
	int revision; /* 0 = unknown */
	int patch; /* 0 = the cover letter */
	const char *classification; /* a token: "reply", "cover" ... */
	enum store_inbound_state state;
	int attempts; /* times claimed */
	int64_t next_attempt; /* due time; 0 on record means now */
	const char *last_error; /* why it failed, was ignored or died */
	int64_t created;
	int64_t updated;
	/* Hosts (read only): which journaled it (its milter spooled it),
	 * which claimed it last (and, finished, applied it). */
	const char *spooled_by;
	const char *claimed_by;
	int64_t lease_until; /* the claim's expiry while applying; else 0 */
	/* The spool record as the milter wrote it, kept while the mail is
	 * open so that any host can apply it (store_inbound_record() only;
	 * NULL: not kept). */
	const void *spool_record;
	size_t spool_record_len;
	struct strlist owned; /* strings the store filled in (see above) */
};

void store_inbound_init(struct store_inbound *in);
void store_inbound_release(struct store_inbound *in);
const char *store_inbound_state_name(enum store_inbound_state state);
/* "failed" -> STORE_INBOUND_FAILED (for the CLI); PB_EINVAL if unknown. */
int store_inbound_state_from_name(enum store_inbound_state *out,
				  const char *name);

struct store_inbound_list {
	struct store_inbound *items;
	size_t nr;
	size_t alloc;
};

void store_inbound_list_release(struct store_inbound_list *list);

/*
 * Record a spooled mail as RECEIVED by this host (in->state, attempts,
 * last_error, hosts and times are ignored), with its spool record when
 * given.  PB_EEXISTS, changing nothing, when the Message-ID is already
 * recorded (by any host).
 */
int store_inbound_record(struct store *st, const struct store_inbound *in);
/*
 * Claim the next due row, oldest due first: RECEIVED or FAILED with
 * next_attempt <= due - this host's own (it journaled them), or another
 * host's once due for a lease (that host's daemon is down or stuck) -
 * or APPLYING under another claim that has expired (its host died or
 * hangs).  Atomically set it APPLYING, claimed by this host until now +
 * the lease, count the attempt and return it.  Two claimers, on one host
 * or on several, never get the same row.  PB_ENOTFOUND when nothing is
 * due.  Times are this host's clock: the hosts' clocks must agree (NTP)
 * to well within a lease.
 */
int store_inbound_claim(struct store_inbound *out, struct store *st,
			int64_t due);
/*
 * Extend this host's claim to now + the lease (store_action_begin() does
 * it before each forge write).  PB_EEXISTS naming the host when another
 * host took the row over; PB_ENOTFOUND when it is not applying.
 */
int store_inbound_renew(struct store *st, const char *message_id);
/* APPLYING -> result (APPLIED, IGNORED or DEAD), with an optional
 * reason; the spool record kept with the row is dropped.  PB_EINVAL if
 * the row is not APPLYING; PB_EEXISTS, naming the host, when another
 * host's claim replaced this host's (it took the mail over: leave it). */
int store_inbound_finish(struct store *st, const char *message_id,
			 enum store_inbound_state result, const char *reason);
/*
 * A claimed (APPLYING) mail is about project!iid revision (0: unknown),
 * patch: where it is applied when that is not where it was journaled.
 */
int store_inbound_place(struct store *st, const char *message_id,
			const char *project, int64_t iid, int revision,
			int patch);
/* APPLYING -> FAILED, to be claimed again at next_attempt; errors as
 * store_inbound_finish(). */
int store_inbound_retry(struct store *st, const char *message_id,
			int64_t next_attempt, const char *error);
/*
 * APPLYING -> FAILED like store_inbound_retry(), but the claim is not
 * counted as an attempt: the mail was not at fault and waits for the
 * operator (the forge refuses the token itself), so no wait however long
 * brings it nearer to [inbound] max_attempts.
 */
int store_inbound_wait(struct store *st, const char *message_id,
		       int64_t next_attempt, const char *why);
/*
 * After a crash: every APPLYING row this host claimed (or that has no
 * owner, from before schema 6) back to RECEIVED (*count of them).  For
 * the daemon's start, before its claimer runs (one applier per host:
 * the spool's lock); other hosts' claims are taken over when they
 * expire (store_inbound_claim()).  The forge action journal makes
 * re-applying safe.
 */
int store_inbound_recover(int *count, struct store *st);
/* The spool record kept with a journal row (a copy, NUL-terminated, in
 * *out; free it).  PB_ENOTFOUND when none is kept: no such row, a row
 * from before schema 6, or a finished mail. */
int store_inbound_spool_record(char **out, size_t *len, struct store *st,
			       const char *message_id);
/* Rows in a state, oldest first, at most limit (0: STORE_LIST_MAX). */
int store_inbound_list(struct store_inbound_list *out, struct store *st,
		       enum store_inbound_state state, size_t limit);
int store_inbound_get(struct store_inbound *out, struct store *st,
		      const char *message_id);

/*
 * How many journal rows each (project, state) pair has, counted by the
 * database (exact however large the journal is): one item per pair that
 * has rows, ordered by project (NULL first), appended to out.  The pairs
 * are few (at most six per project the bridge ever served); more than
 * STORE_LIST_MAX of them is PB_ELIMIT rather than a short answer.
 */
struct store_inbound_count {
	const char *project; /* NULL: the mail is placed on no MR */
	enum store_inbound_state state;
	int64_t count; /* > 0 */
	struct strlist owned; /* strings the store filled in (see above) */
};

struct store_inbound_count_list {
	struct store_inbound_count *items;
	size_t nr;
	size_t alloc;
};

void store_inbound_count_list_release(struct store_inbound_count_list *list);
int store_inbound_count(struct store_inbound_count_list *out, struct store *st);

#endif
