/*
 * review - what one list mail says about a patch series.
 *
 * The inbound side's understanding of a message, built from the parts:
 * mail (MIME, charsets), subject (the [PATCH vN k/M] tag), reply (own
 * text versus quotes, blocks and their anchors), diff (where a quote
 * lands on the patch that was mailed), trailers, and authres.  The same
 * struct feeds `patchbridge parse` (review_to_json(), the stable schema
 * of DESIGN.md) and the milter's spool record.
 *
 * kind: a subject with a reply marker, or a mail threaded under another
 * without a patch tag, is a reply; an untagged-reply patch tag with
 * index 0 is a cover letter, any other a patch.  A mail without a diff
 * that is no reply is a cover letter too when its subject has no 0/N
 * but numbered patches of the thread answer it (review_options), or its
 * text has a cover letter's shape (git format-patch's shortlog and
 * diffstat, not a pull request).
 * For a reply: trailers come from the author's own text only (scope
 * "series" for a reply to a cover letter or when the author says so);
 * nak is a Nacked-by trailer or a NAK the reader reads in own text, and
 * nak_form whether it may be acted on: explicit for a NAK trailer in a
 * trailer block or a paragraph that is the word NAK alone (reply.h
 * nak_alone), a mention for any other NAK or word NAK; inline holds
 * the blocks anchored on the quoted diff, resolved against `parent` (the
 * diff that was mailed) or, without it, against the quote's own "@@"
 * headers; comment is the rest of the author's text.
 * For a patch: own_trailers are the commit message's trailers.
 * submission: the mail is a patch or cover letter of a new series posted
 * to the list (what a contributor sends with git send-email), which the
 * bridge may turn into a merge request: a cover letter, or a patch whose
 * diff is in its own text, under a PATCH/RFC tag, with no reply or
 * forward marker; never a pull request ("[GIT PULL]", git request-pull's
 * text), a review bot's mail, or one the bridge sent itself (the
 * classifier's loop guard, classify_early(), with review_options'
 * own_domain and own_address).  submission_why says why not.
 *
 * Ownership: the struct review owns everything in it (review_free()).
 * The parent diff is borrowed.  Threads: see mail.h (mail_init() first).
 * Errors: those of mail_parse(); PB_ELIMIT from the bounded parts.
 */
#ifndef PB_MAIL_REVIEW_H
#define PB_MAIL_REVIEW_H

#include "mail/authres.h"
#include "mail/diff.h"
#include "mail/mail.h"
#include "mail/reply.h"
#include "mail/subject.h"
#include "mail/trailers.h"
#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>

#define REVIEW_INLINE_MAX 256
#define REVIEW_COMMENT_MAX (1024 * 1024)
/* The JSON of a review: its texts at most twice over, and the rest. */
#define REVIEW_JSON_MAX (2 * REPLY_TEXT_MAX + 4 * 1024 * 1024)

enum review_kind {
	REVIEW_COVER,
	REVIEW_PATCH,
	REVIEW_REPLY,
	REVIEW_OTHER,
};

struct review_inline {
	char *path; /* the file's path after "b/" ("" when unknown) */
	char *old_path; /* before the change, or NULL for a new file */
	int old_line; /* 0: the line has no old side (JSON null) */
	int new_line; /* 0: no new side */
	char *body; /* the comment, trailers and sign-offs removed */
};

struct review_options {
	const char *trusted_authserv_id; /* NULL: trust no A-R field */
	/* [milter] trusted_authres_fields; 0: AUTHRES_TOP_DEFAULT */
	size_t trusted_fields;
	/* A list's DMARC wrap (mail.h MAIL_F_WRAPPED) verifies its inner
	 * sender only with both: the authserv-id of the list's own
	 * verifier, whose fields in the inner message are trusted, and the
	 * list's posting address, the outer From that must be verified. */
	const char *list_authserv_id; /* NULL: a wrap is never verified */
	const char *list_address;
	/* Other mails of the thread, as their headers place them: a
	 * numbered patch (k/N, k >= 1) that answers this mail (its
	 * In-Reply-To, or the first of its References, is this mail's
	 * Message-ID) makes this mail the series' cover letter. */
	const struct review_thread_mail *thread;
	size_t nr_thread;
	/* [bridge] domain and address, for the loop guard's view of the
	 * bridge's own mail (classify.h); NULL: unknown, only the
	 * X-Patchbridge fields and Auto-Submitted tell it. */
	const char *own_domain;
	const char *own_address;
};

struct review_thread_mail {
	const char *in_reply_to; /* "<id>" or NULL */
	const char *root; /* the first References entry, or NULL */
	int index, total; /* the subject's counter; -1 without one */
	int reply; /* the subject is a reply's ("Re: [PATCH] ...") */
};

enum review_nak_form {
	REVIEW_NAK_NONE, /* the word is not in the author's text */
	REVIEW_NAK_MENTION, /* mentioned: possibly an objection */
	REVIEW_NAK_EXPLICIT, /* said in a form that cannot be misread */
};

/* Where a mail's own diff is (JSON diff_source). */
enum review_diff {
	REVIEW_DIFF_NONE,
	REVIEW_DIFF_BODY, /* the text the sender wrote */
	REVIEW_DIFF_ATTACHMENT, /* a patch attachment (mail.h patch) */
};

struct review {
	struct mail *mail;
	struct subject subject;
	enum review_kind kind;
	struct trailer_list trailers; /* given by this mail's author */
	struct trailer_list own_trailers; /* a patch's commit trailers */
	/*
	 * nak: the mail objects, as the reader reads it (JSON "nak").
	 * nak_form says whether that reading may be acted on
	 * (docs/SECURITY.md): REVIEW_NAK_EXPLICIT only for a Nacked-by
	 * family trailer in a trailer block (TRAILER_F_BLOCK, not
	 * TRAILER_F_LOOSE) or a paragraph of own text that is the word
	 * NAK or NACK alone (punctuation allowed); REVIEW_NAK_MENTION for
	 * any other mention of the word in own text, meant or not: posted
	 * as words, flagged "possibly an objection", never acted on.
	 */
	int nak;
	enum review_nak_form nak_form;
	struct review_inline *inl;
	size_t nr_inline;
	char *comment; /* "" when there is none */
	enum review_diff diff;
	struct authres_summary auth;
	int wrap_trusted; /* a wrap's inner sender was judged by the list's
			   * verifier (auth is then the inner sender's) */
	/* something of the mail was left out to fit a limit: the mail cut
	 * (MAIL_F_TRUNCATED, MAIL_F_LIMIT), the middle of a text too long
	 * to read, a comment over REVIEW_COMMENT_MAX; set also by a reader
	 * that knows the mail was cut before it got here (a spool record's
	 * Received-Size) */
	int truncated;
	/*
	 * A review bot wrote the mail (review_bot()): what says so, a
	 * static string; NULL for a person.  Its words are read like
	 * anyone's; the inbound side makes no approval or NAK of them.
	 */
	const char *bot;
	/* A new series' patch or cover letter (see above), and when it is
	 * not, why: a static token ("reply", "pull-request", "no-patch-tag",
	 * "diff-not-inline", "bot", the loop guard's reason ...); NULL for a
	 * submission. */
	int submission;
	const char *submission_why;
};

/*
 * Parse raw[0..len).  parent: the diff of the patch the mail replies to,
 * or NULL.  opts may be NULL.
 */
int review_parse(struct review **out, const char *raw, size_t len,
		 const struct diff *parent, const struct review_options *opts);
void review_free(struct review *r);

/*
 * Is m from a review bot?  Auto-Submitted with any value but "no"
 * (RFC 3834 section 5), or the From address of a well-known one: the
 * kernel test robot (lkp@intel.com), syzbot
 * (syzbot[+hash]@syzkaller.appspotmail.com), patchwork-bot
 * (patchwork-bot+LIST@kernel.org) and kernel.org's CI bots such as the
 * BPF CI's (bot+bpf-ci@kernel.org).  Returns what says so (a static
 * string) or NULL.  The operator's own list is [inbound] bots.
 */
const char *review_bot(const struct mail *m);

/* The diff carried by a patch mail raw[0..len): its text part, or else
 * its patch attachment. */
int review_patch_diff(struct diff **out, const char *raw, size_t len);

/*
 * Where the mail raw[0..len) places itself in a thread, for
 * review_options.thread: its In-Reply-To, first References entry and
 * subject counter.  The strings are pushed to ids, which owns them.
 * Errors: those of mail_parse().
 */
int review_thread_mail_read(struct review_thread_mail *out, struct strlist *ids,
			    const char *raw, size_t len);

/* Append the `patchbridge parse` JSON object (indented, one line end). */
int review_to_json(struct buf *out, const struct review *r);

/*
 * The same object as one line of JSON Lines (compact, ending in LF), for
 * `patchbridge parse FILE...` and `--mbox`: "file" first and, for the
 * index-th mail of an mbox (from 1; 0: a file of its own), "index", then
 * the members above.  review_error_line() is the line of a mail that
 * could not be read or parsed: "file", "index", and "error" with the
 * message.  Both append to out.
 */
int review_to_json_line(struct buf *out, const struct review *r,
			const char *file, size_t index);
int review_error_line(struct buf *out, const char *file, size_t index,
		      const char *error);

const char *review_kind_name(enum review_kind k);

#endif
