/*
 * noticemail - a notice to a sender (mail/notice.h) as a mail: the
 * template templates/sender-notice.txt (built in; [inbound]
 * notice_template names a file that replaces it), headers for a private
 * automatic reply (RFC 3834 section 3: Auto-Submitted: auto-replied,
 * In-Reply-To and References of the reply, To the sender alone), the
 * X-Patchbridge-* fields that keep it from coming back.
 *
 * A series' notice (NOTICE_SERIES) is written from
 * templates/series-notice.txt, always the built-in one.
 *
 * Placeholders: name (the sender's name, else the address), bridge
 * ([bridge] name), mr ("group/project!12"; a series' notice:
 * "group/project"), reasons (block: one "- " item a reason, wrapped at
 * 72 columns), reply_id, link (block: the merge request's address, or
 * nothing).
 *
 * Errors: PB_EINVAL (a template with an unknown placeholder, an address
 * that cannot be written), PB_ENOTFOUND or PB_EPERM (the template file),
 * PB_ELIMIT.  Thread safety: pure, but for reading the template file.
 */
#ifndef PB_OUTBOUND_NOTICEMAIL_H
#define PB_OUTBOUND_NOTICEMAIL_H

#include "mail/notice.h"
#include "util/buf.h"

#include <stddef.h>

extern const char noticemail_template[];
extern const size_t noticemail_template_len;
extern const char noticemail_series_template[];
extern const size_t noticemail_series_template_len;

/* The whole mail (header and body) appended to out; arg is the
 * configuration (const struct config *). */
int noticemail_render(struct buf *out, const struct notice *n, void *arg);

#endif
