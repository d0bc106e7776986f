/*
 * apply - one mail's planned actions onto the forge, exactly once.
 *
 * Every forge write goes through the action journal (state/store.h,
 * DESIGN.md rule 3):
 *
 *	store_action_begin()  the intent, before the request
 *	the request           with the action's marker key (inbound/marker.h)
 *	store_action_complete() with the note and discussion ids
 *
 * An action journaled DONE is skipped.  One found INTENT (an earlier
 * attempt died or timed out between request and journal) may have landed:
 * for a note the marker is looked for first (forge_find_note_by_marker())
 * and the note recorded when it is there; approvals, unapprovals and label
 * changes are set operations and are simply made again (the forge client
 * reads the approval state first, so an approval that stands is not
 * asked for twice).  The forge client itself looks for the marker after
 * a lost response within one attempt.
 *
 * Actions run in plan order.  Outcomes:
 *  - a diff note whose position GitLab refuses (400 line_code) becomes the
 *    plan's plain discussion quoting file:line under the same action;
 *  - a reply in a diff thread (PLAN_DIFF_REPLY) whose thread is gone
 *    (404) becomes a diff note at its position, as PLAN_DIFF_NOTE; its
 *    marker is looked for in every discussion for that reason;
 *  - an approval that meets a moved MR (409) whose current version has
 *    the patch-id of the acked revision (a rebase that changed no patch,
 *    store_revision.patch_id against the version's patch_id_sha) is made
 *    at the current head, with a note saying so (PLAN_IDX_APPROVE_NOTE);
 *  - an approval that meets a moved MR (409) or a refusal (the user may
 *    not approve, or Sudo knows no such user) is final for that action; a
 *    note saying so (action PLAN_IDX_APPROVE_NOTE) is posted in the
 *    comment's thread;
 *  - an approval for an MR that t->mr shows merged or closed is not asked
 *    for: the note says the MR was merged (at which commit) or closed,
 *    nothing about the reviewer; an unapproval of a merged MR is done
 *    (GitLab keeps a merged MR's approvals); a refusal to approve or a
 *    404 to unapprove is judged by reading the MR again (merged or closed
 *    since, or not read before);
 *  - a token that may not act as the reviewer at all (Sudo refused: not
 *    an administrator's, no sudo scope, Admin Mode without admin_mode) is
 *    an operator's problem: no note on the MR, a log line, the problem
 *    recorded for `status` (STORE_CURSOR_FORGE_PROBLEM), and PB_ETEMP, so
 *    the approval lands once the token can;
 *  - PB_ETEMP (the forge or the store is failing) stops the mail at once
 *    and is returned: the caller retries the whole mail later, and the
 *    journal makes that resume where it stopped;
 *  - any other error fails that action only (journaled FAILED) and is
 *    listed in res->failed; the other actions still run.
 *
 * Ownership: everything is borrowed; struct apply_result owns its list.
 * Threads: one forge handle and one store per thread, as their modules
 * say.  Errors: 0 (every action done or failed for good), PB_ETEMP, or
 * another code when the store fails.
 */
#ifndef PB_INBOUND_APPLY_H
#define PB_INBOUND_APPLY_H

#include "forge/forge.h"
#include "inbound/plan.h"
#include "state/store.h"
#include "util/strlist.h"

#include <stdint.h>

struct apply_target {
	const char *message_id; /* the mail, without <> */
	const char *project;
	int64_t iid;
	int revision; /* vN as mailed, for messages */
	/* The MR version that was mailed; NULL when unknown. */
	const char *base_sha;
	const char *start_sha;
	const char *head_sha;
	/* The thread the mail answers (its comment becomes a reply there),
	 * or NULL for a new discussion. */
	const char *reply_discussion;
	const char *nak_label; /* e.g. "Acks::NACKed" */
	/* The MR as read before the actions, or NULL when it could not be
	 * read: a merged or closed one takes no approval. */
	const struct forge_mr *mr;
};

struct apply_result {
	struct strlist failed; /* "action 1001 (approve): why" */
	/* Approvals this attempt did not record, each the why of its note
	 * ("the merge request was already merged.", ...), for the notice
	 * to the sender; an attempt that found the note done has none. */
	struct strlist approvals_refused;
	/* Inline comments that this attempt posted as plain discussions
	 * (no position, or the forge refused it). */
	unsigned plain;
	unsigned done; /* actions performed now */
	unsigned skipped; /* journaled DONE before, or found by marker */
};

void apply_result_init(struct apply_result *res);
void apply_result_release(struct apply_result *res);

int apply_plan(struct apply_result *res, struct forge *f, struct store *st,
	       const struct plan *p, const struct apply_target *t);

/*
 * The labels to remove when adding label: the MR's labels in label's
 * scope ("Acks::" for "Acks::NACKed") other than label itself, appended
 * to out.  Nothing for a label without a scope.  Pure; for tests.
 */
void apply_scoped_removals(struct strlist *out, const struct strlist *labels,
			   const char *label);

#endif
