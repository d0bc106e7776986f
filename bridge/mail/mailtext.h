/*
 * mailtext - pure transforms that turn a decoded text part into the text
 * a person wrote.
 *
 * mail.c (the GMime front) decodes transfer encodings and charsets; what
 * is left are conventions inside the text itself:
 *   - format=flowed (RFC 3676): soft line breaks joined, DelSp honoured,
 *     space-stuffing removed, quote depth kept;
 *   - HTML (an HTML-only reply): tags dropped, entities decoded, line
 *     structure kept from <br>, <p>, <div>, <li>, <tr>, <pre>, and
 *     <blockquote> content quoted with "> ";
 *   - HTML entities left in text/plain by some webmail (QQMail, Coremail:
 *     "&nbsp;", "&gt;");
 *   - inline PGP (RFC 4880 section 7): the armor header, Hash: lines,
 *     dash-escaping and the signature block removed.
 *
 * All functions read (pointer, length), never past it, append UTF-8 to a
 * capped struct buf, and are thread-safe.  Errors: PB_ELIMIT when the
 * output reached its buf's cap (the output then holds what fitted).
 */
#ifndef PB_MAIL_MAILTEXT_H
#define PB_MAIL_MAILTEXT_H

#include "util/buf.h"

#include <stddef.h>

/* Quote depth kept by the HTML converter; deeper nesting is flattened. */
#define MAILTEXT_QUOTE_MAX 16

int mailtext_flowed(struct buf *out, const char *p, size_t len, int delsp);
int mailtext_html(struct buf *out, const char *p, size_t len);
int mailtext_entities(struct buf *out, const char *p, size_t len);

/*
 * Remove inline PGP armor.  Returns 1 when the text was clearsigned (out
 * then holds the signed text), 0 when it was not (out untouched), or
 * PB_ELIMIT.
 */
int mailtext_pgp_strip(struct buf *out, const char *p, size_t len);

/*
 * Normalise line ends to LF and make the text well-formed UTF-8: NUL and
 * invalid sequences become U+FFFD.
 */
int mailtext_clean(struct buf *out, const char *p, size_t len);

/* True when text/plain shows HTML entities a webmail forgot to decode. */
int mailtext_has_entities(const char *p, size_t len);

/* The line that stands for what mailtext_elide() left out: a trim
 * marker, which the reply parser reads as such (reply.h). */
#define MAILTEXT_ELIDED "[...]"

/*
 * Append p[0..len), or, when it is longer than max_bytes or has more than
 * max_lines lines, its beginning and its end, cut at line ends, with the
 * line MAILTEXT_ELIDED between them: the end gets an eighth of each
 * budget, as that is where sign-offs and trailers stand.  Returns 1 when
 * something was left out, 0 when all of it is there, or PB_ELIMIT from
 * out.
 */
int mailtext_elide(struct buf *out, const char *p, size_t len, size_t max_bytes,
		   size_t max_lines);

#endif
