/*
 * qp - quoted-printable bodies for mail that 8bit cannot carry.
 *
 * Patches are sent 8bit, as git format-patch makes them, unless the body
 * holds something that does not survive transport or mbox storage as it
 * is (what git send-email's --transfer-encoding=auto looks at, and one
 * more):
 *  - a line longer than 998 octets (RFC 5322 section 2.1.1; MTAs such as
 *    Postfix split such lines);
 *  - a CR (git am strips a CR before LF from 8bit mail, so CRLF file
 *    content would not survive; an encoded =0D does);
 *  - a NUL;
 *  - a line starting with "From " (an mbox reader splits there; git am
 *    does not undo >From quoting by default, so we avoid needing it).
 * Such a body is encoded per RFC 2045 section 6.7 with LF hard breaks.
 * Thread safety: pure functions.  Errors: PB_ELIMIT from the buf.
 */
#ifndef PB_OUTBOUND_QP_H
#define PB_OUTBOUND_QP_H

#include "util/buf.h"

#include <stddef.h>

#define QP_LINE_MAX 76 /* RFC 2045 section 6.7 (5) */
#define QP_8BIT_LINE_MAX 998 /* RFC 5322 section 2.1.1 */

/* True when body[0..len) must not be sent as 8bit (see above). */
int qp_needed(const char *body, size_t len);

/* Append the quoted-printable form of in[0..len). */
int qp_encode(struct buf *out, const char *in, size_t len);

/*
 * Append the MIME fields of a UTF-8 plain-text body, the blank line and
 * the body: 8bit, or quoted-printable when qp_needed() says so.
 */
int qp_text_body(struct buf *out, const char *body, size_t len);

#endif
