/*
 * store_submission - series posted to the list, collected until whole:
 * the mails a contributor sent with git send-email, before the bridge
 * turns them into a merge request.
 *
 * Part of the state store's interface, included by state/store.h:
 * the rules on ownership (the `owned` list and _release()), errors,
 * caps and thread safety are those at the top of store.h.
 */
#ifndef PB_STATE_STORE_SUBMISSION_H
#define PB_STATE_STORE_SUBMISSION_H

#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

struct store;

/* Patches of one series at most (the k of "k/N"). */
#define STORE_SUBMISSION_PATCHES_MAX 1000

/*
 * Submissions (schema 11).  A series is keyed by the Message-ID of its
 * cover letter, or of its first patch when it has none (what the other
 * patches answer: git send-email threads every patch under the first
 * mail it sends), and belongs to its sender: a mail that names the
 * series but comes from another address is refused, so nobody adds a
 * patch to someone else's series.  Its mails are keyed by their own
 * Message-ID and by their place in it (0: the cover letter, k of "k/N"),
 * so a mail that reaches the store twice (two list hosts, a daemon
 * restarted before it removed its spool record) is kept once.
 *
 * A series is COLLECTING until it is whole: patches 1 to N, and the
 * cover letter when it has one (its key is not patch 1's Message-ID).
 * The mail that makes it whole moves it to WHOLE, in the transaction
 * that adds the mail, once: of two hosts adding its last two mails at
 * once exactly one is told so.  Then the daemon applies it and opens the
 * merge request (OPENED, with the MR's iid) or gives up (FAILED).  What
 * its sender was told of it (refused, a patch missing, not applied) is
 * in the notices table (store_notice.h, outbound/emailnotice.h).
 */
enum store_submission_state {
	STORE_SUBMISSION_COLLECTING,
	STORE_SUBMISSION_WHOLE,
	STORE_SUBMISSION_OPENED,
	STORE_SUBMISSION_FAILED,
};

struct store_submission {
	const char *series_id; /* the cover's or first patch's Message-ID */
	const char *sender; /* the address it comes from, lower case */
	const char *project;
	int version; /* vN of its subjects */
	int total; /* N */
	enum store_submission_state state;
	int64_t iid; /* OPENED: the merge request; else 0 */
	int64_t created, updated;
	struct strlist owned; /* strings the store filled in (see above) */
};

void store_submission_init(struct store_submission *s);
void store_submission_release(struct store_submission *s);
const char *store_submission_state_name(enum store_submission_state state);

struct store_submission_list {
	struct store_submission *items;
	size_t nr;
	size_t alloc;
};

void store_submission_list_release(struct store_submission_list *list);

struct store_submitted {
	const char *message_id;
	const char *series_id;
	int patch; /* 0: the cover letter; k of "k/N" */
	/* The mail as received; store_submission_mails() fills it. */
	const char *message;
	size_t message_len;
	int64_t created;
	struct strlist owned;
};

void store_submitted_init(struct store_submitted *m);
void store_submitted_release(struct store_submitted *m);

struct store_submitted_list {
	struct store_submitted *items;
	size_t nr;
	size_t alloc;
};

void store_submitted_list_release(struct store_submitted_list *list);

/*
 * Add the mail m to the series s names (series_id, sender, project,
 * version, total; the rest is ignored), making the series when it is
 * the first of its mails to come.  *whole is 1 when this mail made the
 * series whole (it is then WHOLE), else 0.  PB_EEXISTS, changing
 * nothing, when the mail or another mail at its place is there already;
 * PB_EPERM when the series belongs to another sender; PB_EINVAL when it
 * is of another project, version or length (m->patch over the total
 * included), or a field is missing or too long.
 */
int store_submission_add(int *whole, struct store *st,
			 const struct store_submission *s,
			 const struct store_submitted *m);
int store_submission_get(struct store_submission *out, struct store *st,
			 const char *series_id);
/* The mail with this Message-ID, without its message. */
int store_submitted_get(struct store_submitted *out, struct store *st,
			const char *message_id);
/* The series' mails with their messages, in order (the cover first). */
int store_submission_mails(struct store_submitted_list *out, struct store *st,
			   const char *series_id);
/* The first mail of a series (its cover letter, else its lowest patch),
 * with its message; PB_ENOTFOUND when it has none. */
int store_submission_first(struct store_submitted *out, struct store *st,
			   const char *series_id);
/*
 * The series of sender (lower case) in project that were opened as a
 * merge request, the last finished first, at most limit (0:
 * STORE_LIST_MAX); appended to out.  Where a next version not sent in
 * reply to the one before looks for it.
 */
int store_submission_list_opened(struct store_submission_list *out,
				 struct store *st, const char *project,
				 const char *sender, size_t limit);
/* Whole series, oldest first, at most limit (0: STORE_LIST_MAX);
 * appended to out. */
int store_submission_list_whole(struct store_submission_list *out,
				struct store *st, size_t limit);
/* *out = the bytes of the series' mails stored so far (0: none). */
int store_submission_bytes(int64_t *out, struct store *st,
			   const char *series_id);
/* *out = the series of sender (lower case) made since (Unix time). */
int store_submission_count_sender(int64_t *out, struct store *st,
				  const char *sender, int64_t since);
/*
 * Series of project still collecting that were made at or before
 * `before`, and
 * whose sender was told nothing yet (no notices row keyed
 * remind_prefix + series_id nor refuse_prefix + series_id,
 * store_notice.h), oldest first, at most limit (0: STORE_LIST_MAX);
 * appended to out.  The series a reminder of its missing patches is
 * due for (outbound/emailnotice.h).
 */
int store_submission_list_due(struct store_submission_list *out,
			      struct store *st, const char *project,
			      int64_t before, const char *remind_prefix,
			      const char *refuse_prefix, size_t limit);
/*
 * A whole series opened as the merge request iid (state OPENED) or
 * given up (FAILED, iid 0).  PB_ENOTFOUND when there is no such series;
 * PB_EEXISTS when it is not WHOLE (finished already: by another host,
 * or before a restart).
 */
int store_submission_finish(struct store *st, const char *series_id,
			    enum store_submission_state state, int64_t iid);

#endif
