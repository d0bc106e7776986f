/*
 * openthreads - the review threads of earlier versions, carried to the
 * cover letter of the next.
 *
 * A review thread is a discussion on a line of the diff (its first note
 * has a position) with a resolvable note
 * (GitLab: a DiffNote or DiscussionNote by a user, app/models/concerns/
 * resolvable_note.rb); it is resolved when every resolvable note of it is
 * (ResolvableDiscussion#resolved?, app/models/concerns/
 * resolvable_discussion.rb).  A thread whose first note is internal, or
 * whose visibility the forge did not give (forge.h), is never named: it
 * stays on the forge like its notes.
 *
 * openthreads_cover() writes the block of vN+1's cover letter (the
 * template's {{review_threads}}): each thread still open, grouped by the
 * version it was opened on ("Open from v2:"), with its file:line, who
 * opened it, the first line of its first note and its link; then, on one
 * line each, the threads resolved since vN was mailed ("Resolved since
 * v2:") and by whom.  At most OPENTHREADS_LIST_MAX threads are named;
 * the rest are counted, with the MR's link.  Empty when there is nothing
 * to say.  Who opened a thread is its first note's author, or, for a
 * note the bridge's user posted for a list reply, the sender the note's
 * footer names.
 *
 * Untrusted text (names, note bodies, paths) is cleaned to one line each
 * (utf8_clean()) and a note's first line cut at OPENTHREADS_LINE_MAX
 * bytes, on a character boundary.
 *
 * Thread safety: pure functions.  Errors: PB_ELIMIT from the output buf.
 */
#ifndef PB_OUTBOUND_OPENTHREADS_H
#define PB_OUTBOUND_OPENTHREADS_H

#include "forge/forge.h"
#include "util/buf.h"

#include <stdint.h>

/* Threads named in one cover letter, open and resolved together. */
#define OPENTHREADS_LIST_MAX 50
/* Bytes of a note's first line in the list. */
#define OPENTHREADS_LINE_MAX 64

enum openthreads_state {
	OPENTHREADS_NONE, /* not a review thread, or kept on the forge */
	OPENTHREADS_OPEN,
	OPENTHREADS_RESOLVED,
};

/* What d is; for a resolved thread, *resolver (may be NULL) gets the
 * resolvable note resolved last, whose resolved_by says by whom. */
enum openthreads_state openthreads_state(const struct forge_discussion *d,
					 const struct forge_note **resolver);

/*
 * The revision a thread was opened on: the mailed revision of the diff
 * version its first note is on (head_sha on base_sha; either may be
 * NULL).  0 when not known: the thread is listed under prev_revision.
 */
typedef int (*openthreads_rev_fn)(const char *head_sha, const char *base_sha,
				  void *arg);

struct openthreads_opts {
	int revision; /* the revision being mailed, vN+1 */
	int prev_revision; /* the last one mailed, vN */
	/* When vN was mailed (ms since the epoch): a thread resolved at or
	 * after it is "resolved since vN".  0: none is. */
	int64_t prev_ms;
	const char *url; /* the MR's web URL; NULL: no links */
	openthreads_rev_fn rev_of; /* NULL: every thread is vN's */
	void *arg;
	/* The bridge's forge user: its notes name the list's sender in
	 * their footer.  NULL: not known. */
	const char *bot;
};

/* Append the cover letter's block (nothing when empty). */
int openthreads_cover(struct buf *out, const struct forge_discussion_list *dl,
		      const struct openthreads_opts *o);

/* "path:line" of n (the new side's line, else the old side's), or
 * "general" for a note on no line. */
int openthreads_where(struct buf *out, const struct forge_note *n);

#endif
