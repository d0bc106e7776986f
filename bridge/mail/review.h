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
 * index 0 is a cover letter, any other a patch.
 * For a reply: trailers come from the author's own text only (scope
 * "series" for a reply to a cover letter or when the author says so);
 * nak is a Nacked-by trailer or an explicit NAK in own text; inline holds
 * the blocks anchored on the quoted diff, resolved against `parent` (the
 * diff that was mailed) or, without it, against the quote's own "@@"
 * headers; comment is the rest of the author's text.
 * For a patch: own_trailers are the commit message's trailers.
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
#include "mail/subject.h"
#include "mail/trailers.h"
#include "util/buf.h"

#include <stddef.h>

#define REVIEW_INLINE_MAX 256
#define REVIEW_COMMENT_MAX (1024 * 1024)
#define REVIEW_JSON_MAX (8 * 1024 * 1024)

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
};

struct review {
	struct mail *mail;
	struct subject subject;
	enum review_kind kind;
	struct trailer_list trailers; /* given by this mail's author */
	struct trailer_list own_trailers; /* a patch's commit trailers */
	int nak;
	struct review_inline *inl;
	size_t nr_inline;
	char *comment; /* "" when there is none */
	struct authres_summary auth;
};

/*
 * Parse raw[0..len).  parent: the diff of the patch the mail replies to,
 * or NULL.  opts may be NULL.
 */
int review_parse(struct review **out, const char *raw, size_t len,
		 const struct diff *parent, const struct review_options *opts);
void review_free(struct review *r);

/* The diff carried by a patch mail raw[0..len) (its text part). */
int review_patch_diff(struct diff **out, const char *raw, size_t len);

/* Append the `patchbridge parse` JSON object (indented, one line end). */
int review_to_json(struct buf *out, const struct review *r);

const char *review_kind_name(enum review_kind k);

#endif
