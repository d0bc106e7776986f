/*
 * store_action - the forge action journal (exactly-once forge
 * writes) and the trailer verdicts of each applied mail.
 *
 * Part of the state store's interface, included by state/store.h:
 * the rules on ownership (the `owned` list and _release()), errors,
 * caps and thread safety are those at the top of store.h.
 */
#ifndef PB_STATE_STORE_ACTION_H
#define PB_STATE_STORE_ACTION_H

#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

struct store;

/*
 * Forge action journal: exactly-once forge writes.  Each action of an
 * inbound mail (source Message-ID, action index) is journaled as INTENT
 * before its HTTP request and DONE, with the forge's ids, after it.
 */
enum store_action_state {
	STORE_ACTION_INTENT, /* the request may or may not have landed */
	STORE_ACTION_DONE,
	STORE_ACTION_FAILED, /* the forge refused; may be begun again */
};

struct store_action {
	const char *message_id;
	int index; /* action index within the mail, from 0 */
	const char *kind; /* a token: "comment", "diff-note", "approve" ... */
	const char *marker; /* the hidden marker the note carries */
	enum store_action_state state;
	int64_t note_id; /* 0 = none */
	const char *discussion_id;
	int attempts; /* times begun */
	const char *last_error;
	int64_t created;
	int64_t updated;
	const char *host; /* the host that began it last */
	struct strlist owned; /* strings the store filled in (see above) */
};

void store_action_init(struct store_action *act);
void store_action_release(struct store_action *act);

struct store_action_list {
	struct store_action *items;
	size_t nr;
	size_t alloc;
};

void store_action_list_release(struct store_action_list *list);

/*
 * Journal the intent to perform an action, before the request.  A new
 * action is recorded INTENT and 0 returned: perform it.  An action seen
 * before returns PB_EEXISTS with the stored row (kind and marker as first
 * recorded) in out:
 *   DONE     - it is on the forge already; out has its ids.  Skip it.
 *   INTENT   - an earlier attempt (INTENT or FAILED) may have landed; the
 *              row is INTENT again with the attempt counted.  Look for the
 *              marker on the forge first, then complete or perform it.
 * When the mail's journal row is APPLYING, this host's claim on it is
 * renewed in the same transaction; PB_ETEMP, journaling nothing, when
 * another host has taken the mail over: stop applying it.
 */
int store_action_begin(struct store_action *out, struct store *st,
		       const char *message_id, int index, const char *kind,
		       const char *marker);
/* -> DONE with the forge's ids (note_id 0 / discussion_id NULL: none). */
int store_action_complete(struct store *st, const char *message_id, int index,
			  int64_t note_id, const char *discussion_id);
/* INTENT -> FAILED.  PB_EEXISTS if the action is DONE already. */
int store_action_fail(struct store *st, const char *message_id, int index,
		      const char *error);
/* The first action done for a list mail of the MR that made or
 * answered this discussion; PB_ENOTFOUND for none. */
int store_action_by_discussion(struct store_action *out, struct store *st,
			       const char *project, int64_t iid,
			       const char *discussion_id);
/* The actions of one mail, by index (appended to out). */
int store_action_list(struct store_action_list *out, struct store *st,
		      const char *message_id);

/*
 * What became of each trailer of an inbound mail, as the apply step
 * decided it (inbound/plan.h, plan's verdicts): one text per trailer in
 * the mail's order ("an approval as alice", "not an approval", or the
 * reason it was not honoured), for `patchbridge why`.  Set replaces the
 * mail's earlier verdicts (a retry decides again), at most
 * STORE_VERDICTS_MAX, each cut to STORE_ERROR_MAX; an empty text is
 * stored as "-".  Get appends them to out, nothing for a mail applied
 * before they were kept (schema 5).
 */
int store_verdicts_set(struct store *st, const char *message_id,
		       const struct strlist *verdicts);
int store_verdicts_get(struct strlist *out, struct store *st,
		       const char *message_id);

#endif
