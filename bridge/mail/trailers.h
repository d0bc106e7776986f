/*
 * trailers - the `*-by:` lines of kernel-style review.
 *
 * Two uses:
 *  - a patch mail's own trailers (the commit message's Signed-off-by,
 *    Reviewed-by ... above the first "---"), TRAILERS_OWN;
 *  - the trailers a reviewer gives in a reply.  The caller passes only
 *    the author's own text (quotes already removed, each removed quote
 *    left as a blank line so paragraphs split there).  A paragraph that
 *    holds a Signed-off-by is a pasted commit message and a paragraph
 *    with checkpatch output is pasted tool output: their trailers are
 *    not the author's and are skipped.
 *
 * A trailer is a line of its own (after optional indentation), as git
 * interpret-trailers and b4 read it.  Accepted forms: any case,
 * indented, "Name <email>", "Name<email>", "<email>", a bare email, a
 * name alone, "Name <email" ending the line (Outlook lost the ">": read
 * as exact), a broken address ("<user" or no "@": email NULL), no-break
 * spaces; the address as mailers repeat it ("a@b<mailto:a@b>",
 * "[mailto:a@b]", "&lt;a@b&gt;": one address, or none when they
 * differ); a trailer wrapped before its address ("Reviewed-by: Name" /
 * "<a@b>", trailers_line_continues()).  Misspelt tags within a small edit
 * distance of a known type (Revieved-by, Reviwed-by, Ackedby, "Reviewed
 * by:"), combined tags (Reviewed-and-tested-by: one entry per type),
 * subsystem-qualified ones (Acked-for-MFD-by) and the NAK family by its
 * last word (NAKed-by, Hard-nacked-by) map to the canonical type with
 * TRAILER_F_IRREGULAR set; a negating word (Not-Nacked-by, Un-acked-by)
 * makes no tag.  Inside a sentence a tag is read only in a plain
 * statement that the tag and a well-formed <email> end ("Series is
 * Acked-by: ...", "LGTM, Reviewed-by: ...") and never under negation, a
 * condition or a hold ("You do not have my Acked-by: ...", "... until
 * v3"); such a trailer carries TRAILER_F_IN_SENTENCE and never approves.
 * Not the sender's: trailers under a line introducing an example
 * ("please add a line like:") and placeholder people ("Your Name
 * <you@example.com>", "Random J Developer").
 *
 * Scope is "series" when the caller says so (a reply to a cover letter)
 * or when the line or the one before it says "for the series",
 * "Series:", "for all patches" and the like, or the first line after
 * the trailers of its paragraph does, or a paragraph of that one line
 * right under it ("Acked-by: X <x@y>" / "for the whole series").  Scope
 * words never make a trailer a block trailer: in its paragraph they
 * make it none.
 *
 * Ownership: a trailer_list owns its entries' strings (type points to a
 * static canonical name).  Functions are pure over (pointer, length),
 * never read past len, and are thread-safe.  Errors: PB_ELIMIT when the
 * list would exceed TRAILERS_MAX entries: the extra ones are dropped, but
 * for up to TRAILERS_NAK_MAX of the NAK family, so that a Nacked-by under
 * hundreds of pasted trailers is still read.
 */
#ifndef PB_MAIL_TRAILERS_H
#define PB_MAIL_TRAILERS_H

#include <stddef.h>

#define TRAILERS_MAX 256 /* entries kept per message */
#define TRAILERS_NAK_MAX 16 /* NAKs kept past TRAILERS_MAX */
#define TRAILER_LINE_MAX 1024 /* longer lines are not trailers */

enum trailer_scope {
	TRAILER_SCOPE_PATCH,
	TRAILER_SCOPE_SERIES,
};

#define TRAILER_F_IRREGULAR 0x01 /* the tag was not written canonically */
#define TRAILER_F_NO_EMAIL 0x02 /* no usable email address */
#define TRAILER_F_IN_SENTENCE 0x04 /* the tag sat inside a sentence */
/*
 * The forms the bridge acts on (docs/SECURITY.md, "What the bridge acts
 * on"): a trailer that stands in a trailer block - a paragraph made of
 * trailer lines only, with the start of the text or a blank line before
 * it and a blank line, the signature or the end after it - and whose
 * value is exactly "Name <address>" or the address alone.
 */
#define TRAILER_F_BLOCK 0x08 /* stands in a trailer block */
#define TRAILER_F_LOOSE \
	0x10 /* text after the address (a parenthesis,
			      * a '#' remark), a value that is not one
			      * address, or a direction-changing or
			      * invisible character anywhere on the line */

struct trailer {
	const char *type; /* canonical, e.g. "Reviewed-by" (static) */
	char *name; /* "" when none */
	char *email; /* NULL when none or broken */
	enum trailer_scope scope;
	unsigned flags; /* TRAILER_F_* */
	char *raw; /* the line as written, trimmed */
};

struct trailer_list {
	struct trailer *v;
	size_t nr;
	size_t alloc;
};

void trailer_list_init(struct trailer_list *l);
void trailer_list_release(struct trailer_list *l);

/* Flags for trailers_scan(). */
#define TRAILERS_SERIES 0x01 /* every trailer has series scope */
#define TRAILERS_OWN 0x02 /* a commit message: no paragraph rules */

/*
 * Append the trailers found in text[0..len) to out.  Returns 0, or
 * PB_ELIMIT when entries were dropped at TRAILERS_MAX.
 */
int trailers_scan(struct trailer_list *out, const char *text, size_t len,
		  unsigned flags);

/*
 * Parse one line.  Appends 0, 1 or (for a combined tag) more entries,
 * with patch scope.  Returns how many were added, or PB_ELIMIT.
 */
int trailers_parse_line(struct trailer_list *out, const char *line, size_t len);

/*
 * Does line (an address alone: "<a@b.c>", "a@b.c") complete the trailer
 * on the line before it, one written without an address ("Reviewed-by:
 * A Long Name" wrapped by the mailer)?
 */
int trailers_line_continues(const char *prev, size_t plen, const char *line,
			    size_t len);

/*
 * Does the line introduce an example ("please add a line like:", "in
 * the form:", "e.g.:")?  trailers_scan() skips the trailers under it.
 */
int trailers_example_intro(const char *p, size_t len);

/*
 * The canonical type for a written tag (without the colon), e.g.
 * "reviewd-by" -> "Reviewed-by"; NULL when it is not a known type.
 * *irregular is set when the tag was not written exactly so.
 */
const char *trailer_type_canonical(const char *tag, size_t len, int *irregular);

/* Approvals (Acked, Reviewed, Tested) and NAKs (Nacked). */
int trailer_is_approval(const char *type);
int trailer_is_nak(const char *type);

#endif
