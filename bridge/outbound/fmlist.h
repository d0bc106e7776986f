/*
 * fmlist - the lists of merge requests forgemail keeps between polls.
 *
 * Two per project, each in a store cursor of space-separated entries of
 * colon-separated numbers (forgemail.h says what they are for):
 *
 *  - pending, "forgemail:pending:P", "IID:FIRST_MS:NEXT_MS:TRIES": the
 *    MRs whose mail failed for a reason that may pass, retried on their
 *    own after FORGEMAIL_RETRY_BASE_MS, doubling up to
 *    FORGEMAIL_RETRY_MAX_MS; at most FORGEMAIL_PENDING_MAX;
 *  - recent, "forgemail:recent:P", "IID:UNTIL_MS": the MRs read again for
 *    comments that did not move updated_at; at most FORGEMAIL_RECENT_MAX.
 *
 * A malformed entry, or one past the maximum, is dropped with a log line
 * when the cursor is loaded, and the next save writes the cursor without
 * it.  Times are the wall clock, in milliseconds.
 *
 * Ownership: the lists are plain structs of the caller, loaded and saved
 * whole; the store is borrowed.
 * Thread safety: none; one list, one thread.
 * Errors: load and save return 0 or the store's code (util/err.h).
 */
#ifndef PB_OUTBOUND_FMLIST_H
#define PB_OUTBOUND_FMLIST_H

#include "outbound/forgemail.h"

#include <stddef.h>
#include <stdint.h>

struct store;

#define FORGEMAIL_PENDING_MAX 16
#define FORGEMAIL_RETRY_BASE_MS (30 * 1000)
#define FORGEMAIL_RETRY_MAX_MS (5 * 60 * 1000)

struct fmlist_pending {
	int64_t iid;
	int64_t first_ms; /* the first failure */
	int64_t next_ms; /* not retried before */
	int64_t tries; /* failures so far */
};

struct fmlist_pendings {
	struct fmlist_pending items[FORGEMAIL_PENDING_MAX];
	size_t nr;
	int changed; /* to be saved */
};

/* Load (an absent cursor is an empty list) and save (when changed). */
int fmlist_pending_load(struct fmlist_pendings *pl, struct store *st,
			const char *project);
int fmlist_pending_save(struct fmlist_pendings *pl, struct store *st,
			const char *project);
/* iid's entry, or NULL. */
struct fmlist_pending *fmlist_pending_find(struct fmlist_pendings *pl,
					   int64_t iid);
/* iid failed for the first time at now: its new entry (tried again
 * after FORGEMAIL_RETRY_BASE_MS), or NULL when the list is full. */
struct fmlist_pending *fmlist_pending_add(struct fmlist_pendings *pl,
					  int64_t iid, int64_t now);
/* One more failure of e's MR at now: when to try it next. */
void fmlist_pending_failed(struct fmlist_pending *e, int64_t now);
/* e went through, or will never: out of the list. */
void fmlist_pending_drop(struct fmlist_pendings *pl, struct fmlist_pending *e);

struct fmlist_recent {
	int64_t iid;
	int64_t until_ms; /* read once more after it */
};

struct fmlist_recents {
	struct fmlist_recent items[FORGEMAIL_RECENT_MAX];
	size_t nr;
	int changed; /* to be saved */
	int64_t seen[FORGEMAIL_RECENT_MAX]; /* read in this poll already */
	size_t nr_seen;
	unsigned dropped; /* entries given up in this poll (logged once) */
};

int fmlist_recent_load(struct fmlist_recents *rl, struct store *st,
		       const char *project);
int fmlist_recent_save(struct fmlist_recents *rl, struct store *st,
		       const char *project);
/* iid changed (or was read) now: read it again until `until`.  A full
 * list gives up the entry that ends first (counted in rl->dropped). */
void fmlist_recent_note(struct fmlist_recents *rl, int64_t iid, int64_t until);
/* Was iid read in this poll (fmlist_recent_note())? */
int fmlist_recent_seen(const struct fmlist_recents *rl, int64_t iid);

#endif
