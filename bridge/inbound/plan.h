/*
 * plan - the forge actions one inbound mail asks for, in a fixed order.
 *
 * plan_build() turns a parsed reply (mail/review.h) into a list of
 * actions, each with a fixed index within the mail.  The index names the
 * action in the forge action journal and in its marker key
 * (inbound/marker.h), so it depends only on the mail and the diff it
 * answers: a retry, after a crash or a forge outage, plans the same list
 * and the journal skips what is done.  Indexes:
 *
 *	0             the comment: the sender's own text, what became of
 *	              each trailer, and the footer (a discussion, or a reply
 *	              in the thread the mail answers); with fold_inline, the
 *	              inline comments too, each after the line it answers
 *	1 + i         inline comment i: a diff note at its line on the MR
 *	              version that was mailed; a reply in the diff thread
 *	              the parent mail started or answered at that very
 *	              position (ctx->threads); a plain discussion quoting
 *	              file:line when it cannot be placed
 *	1000 + t      trailer t honoured: an approval as the mapped user
 *	1500 + t      (at apply time) a note when that approval failed:
 *	              the MR moved on (409), or the forge refused (401);
 *	              or that it was made at the current head, a rebase
 *	              that changed no patch (apply.h)
 *	2000          NAK: the label (and the old values of its scope off)
 *	2001          NAK: an unresolved discussion quoting the reason
 *	2002          NAK: the NAKer's approval withdrawn
 *
 * A NAK is acted on (2000-2002) only in its unambiguous forms, in text
 * the sender wrote (review.h nak_form, the provenance fields of struct
 * plan_ctx); any other mention of NAK is posted as the comment (0), an
 * unresolved discussion, that opens with "Possibly an objection" and
 * says why nothing was done, so that a human decides.
 *
 * Bodies are escaped (inbound/escape.h) and end with the footer naming
 * the sender and whether the sender was verified, in <sub>, markup only
 * the bridge writes (plan_footer()); the hidden marker is
 * added by the forge client (forge_body_with_marker()).  Each fits
 * PLAN_BODY_MAX, below GitLab's note limit: what the sender wrote is cut
 * to fit (whole lines, from the end) after everything else - the NAK,
 * what became of each trailer, the footer - and a note that was cut, or
 * whose mail was cut before (review->truncated), says so: "[...]
 * truncated, the whole mail is at" the archive link (archive_url + "/" +
 * Message-ID + "/") or its Message-ID.  A NAK mail's
 * comment is its NAK discussion (2001), not a comment of its own.
 *
 * The caller supplies what needs the outside world through callbacks:
 * mapping an address to a forge user, the owners.yaml verdict and where a
 * line of the patch is on the MR version.  A callback error other
 * than PB_ENOTFOUND ends the planning with that error.
 *
 * Ownership: a struct plan owns its actions and their strings
 * (plan_release).  Thread safety: as safe as the callbacks.
 */
#ifndef PB_INBOUND_PLAN_H
#define PB_INBOUND_PLAN_H

#include "core/config.h"
#include "forge/forge.h"
#include "inbound/approval.h"
#include "mail/review.h"
#include "util/limits.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

#define PLAN_IDX_COMMENT 0
#define PLAN_IDX_INLINE(i) (1 + (int)(i))
#define PLAN_IDX_APPROVE(t) (1000 + (int)(t))
#define PLAN_IDX_APPROVE_NOTE(t) (1500 + (int)(t))
#define PLAN_IDX_NAK_LABEL 2000
#define PLAN_IDX_NAK_DISCUSSION 2001
#define PLAN_IDX_NAK_UNAPPROVE 2002

/*
 * Bodies are capped below GitLab's own note limit: a note of more than
 * 1,000,000 characters is refused (lib/gitlab/database.rb,
 * MAX_TEXT_SIZE_LIMIT = 1_000_000; app/models/note.rb validates :note,
 * length: { maximum: MAX_TEXT_SIZE_LIMIT }); a byte is never less than a
 * character, and the marker needs the rest.
 */
#define PLAN_BODY_MAX (PB_NOTE_BODY_MAX - 1024)

enum plan_kind {
	PLAN_COMMENT,
	PLAN_DIFF_NOTE,
	PLAN_DIFF_REPLY, /* an inline comment continuing a diff thread */
	PLAN_NOTE, /* an inline comment that cannot be placed */
	PLAN_APPROVE,
	PLAN_NAK_LABEL,
	PLAN_NAK_DISCUSSION,
	PLAN_UNAPPROVE,
};

struct plan_action {
	int index;
	enum plan_kind kind;
	char *body; /* the note's text; NULL for approvals and labels */
	/* DIFF_NOTE, DIFF_REPLY: the position, and the plain discussion
	 * to post when the forge refuses it. */
	char *fallback;
	char *discussion; /* DIFF_REPLY: the thread to reply in */
	char *old_path;
	char *new_path;
	int64_t old_line; /* 0: none */
	int64_t new_line;
	enum forge_line_kind line_kind;
	/* APPROVE, UNAPPROVE: act as this forge user. */
	char *user;
	size_t trailer; /* APPROVE: index in review->trailers */
	char *who; /* APPROVE: "Acked-by: Name <email>", for later notes */
	/* APPROVE: how the sender of the mail was verified, for the
	 * approval's provenance (plan_verified_by()). */
	const char *via;
};

struct plan {
	struct plan_action *v;
	size_t nr;
	size_t alloc;
	/*
	 * What became of each trailer of the review, in its order, in plain
	 * words (not escaped: untrusted, make it printable before showing
	 * it): "an approval as alice", "not an approval: listed in the
	 * comment", or "not honoured as an approval: " and the reason the
	 * comment gives.  Kept in the journal for `patchbridge why`.
	 */
	struct strlist verdicts;
	/*
	 * What became of a NAK, in plain words, or NULL when the mail says
	 * none: "the mail NAKs the patch: the merge request is blocked", or "possibly an
	 * objection, not acted on: " and the reason (docs/SECURITY.md).
	 * Kept in the journal after the trailers' verdicts, at index
	 * trailers.nr, for the notice to the sender.
	 */
	char *nak_verdict;
	/* The verdict of each trailer of the review (nr_verdicts of them),
	 * for the notice to the sender. */
	enum approval_verdict *verdict_of;
	size_t nr_verdicts;
	/* Trailers of an approval type not honoured, by verdict (for the
	 * metrics; counted once the reply is applied). */
	unsigned refused[APPROVAL__COUNT];
};

/*
 * A diff thread the mail's parent (the list reply it answers) started or
 * answered: its id and its position on the MR version this mail answers,
 * in GitLab's terms (forge_position_set_line(): an added line has no
 * old_line, a removed one no new_line).
 */
struct plan_thread {
	const char *discussion_id;
	const char *old_path;
	const char *new_path;
	int64_t old_line; /* 0: none */
	int64_t new_line;
};

struct plan_ctx {
	const char *authserv_id; /* the trusted one; "" or NULL: none */
	const char *message_id; /* the mail's, without <>; may be NULL */
	const char *archive_url; /* [inbound] archive_url; "" or NULL: none */
	int require_auth;
	enum config_approval_policy policy;
	int revision; /* vN the mail answers; 0 unknown */
	int patch; /* 0: the cover letter */
	int total; /* patches in the revision; 0 unknown */
	/* The patch's diff as mailed, to quote a line; may be NULL. */
	const struct diff *parent;
	/*
	 * The mail answers a forge comment mirrored to the list: what it
	 * says under the quoted hunk answers that comment, so its inline
	 * comments go into the comment (0), which continues the comment's
	 * discussion, and make no diff notes (1 + i) of their own.
	 */
	int fold_inline;
	/*
	 * The parent's diff threads (may be NULL): an inline comment placed
	 * at the position of one of them is a reply there (the first that
	 * matches), not a diff note of its own.  Not with fold_inline.
	 */
	const struct plan_thread *threads;
	size_t nr_threads;
	/*
	 * Where inline comment x goes on the MR version's diff: 1 with the
	 * line's kind and numbers there (inbound/position.h), 0 when it
	 * cannot be placed.  NULL: the patch's own numbers.
	 */
	int (*place)(enum forge_line_kind *kind, int64_t *old_line,
		     int64_t *new_line, const struct review_inline *x,
		     void *arg);
	/*
	 * Provenance (docs/SECURITY.md, "What the bridge acts on"): the
	 * bridge acts only on text it can prove is the sender's own.
	 * quoted: one per trailer of the review, set when the trailer is
	 * in a mail this one answers (In-Reply-To, References) that the
	 * bridge has, quoted there or not (inbound/provenance.h): a
	 * quotation.  NULL: not checked (unit tests of other rules).
	 * ancestor_nak: one of those mails has a line that is NAK or NACK
	 * alone, so such a paragraph here may be a quotation.
	 * parent_unknown: the mail this one answers is not one the bridge
	 * has (answered off the list): nothing it quotes can be accounted
	 * for.  thread_conflict: In-Reply-To, References and the subject
	 * do not agree on one MR and revision.  With any of these, no
	 * approval is made and no NAK acted on; the words are posted.
	 */
	const unsigned char *quoted;
	/*
	 * The sender is a review bot (review_bot(), or [inbound] bots):
	 * what says so, e.g. "syzbot"; NULL for a person.  Its words and
	 * inline comments are posted like anyone's; its trailers are
	 * refused with the verdict "bot" and its NAK is not acted on.
	 */
	const char *bot;
	int ancestor_nak;
	int parent_unknown;
	int thread_conflict;
	/* *user (owned by the callee) for email; PB_ENOTFOUND: none. */
	int (*map_user)(const char **user, const char *email, void *arg);
	/* *owner = 1 when email may approve what scope covers. */
	int (*is_owner)(int *owner, const char *email, enum trailer_scope scope,
			void *arg);
	void *arg;
};

void plan_init(struct plan *p);
void plan_release(struct plan *p);

/* Plan r.  On error *out is left empty. */
int plan_build(struct plan *out, const struct review *r,
	       const struct plan_ctx *ctx);

/* The action journal's kind token: "comment", "diff-note" ... */
const char *plan_kind_name(enum plan_kind k);

/*
 * Append the footer: "<sub>— Name <email> via email, on v2 1/3 (DKIM
 * verified)</sub>", the sender's name and address escaped.  The <sub>
 * is raw HTML that relayed text never holds (escape.h), so no sender can
 * write a line that passes for the bridge's footer.  Exposed for the
 * apply step's later notes.
 */
int plan_footer(struct buf *out, const struct review *r,
		const struct plan_ctx *ctx);

/*
 * How the sender of r was verified, in a few words for the provenance of
 * what the mail asked: "DKIM verified", "DMARC verified", "verified by the
 * list, which wrapped the message for DMARC", or "not verified" (counted
 * only where [inbound] approval_policy does not require it).  A static
 * string.
 */
const char *plan_verified_by(const struct review *r);

#endif
