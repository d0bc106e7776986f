/*
 * mail - the inbound mail model, and the only module that uses GMime.
 *
 * mail_parse() turns one raw RFC 5322 message into a struct mail that
 * holds no GMime type: the threading headers, the sender, the decoded
 * subject, a few headers the bridge acts on, and the reply text.
 *
 * The reply text is every text part a person reads, in order, a blank
 * line between two: multipart/mixed and multipart/related give each
 * inline text part without a file name (related its root first, and
 * none with a Content-ID: a resource of the root, never shown), so
 * the words after a picture are read too; multipart/alternative one
 * alternative, its text/plain part unless that is only blanks beside
 * an HTML one, which is then converted; multipart/signed the signed
 * part; attachments (a part with a file name) and images never.  In
 * each part: transfer encodings (QP, base64) undone; the declared
 * charset converted to UTF-8 (GB2312/GBK read as GB18030, Latin-1 as
 * windows-1252; a missing, unknown or wrong charset tried as UTF-8,
 * then windows-1252); format=flowed joined (RFC 3676); inline PGP
 * armor removed.  A text/x-patch part without a file name is the text
 * only when there is no other; beside one it is the mail's patch.  Line ends are LF; the text is always
 * well-formed UTF-8 without NUL bytes.
 *
 * Limits (struct mail_limits, defaults from util/limits.h) are checked
 * before and around GMime: message size, header count and header length
 * (PB_ELIMIT: the message is not parsed), MIME depth and part count (the
 * walk stops there, MAIL_F_LIMIT), decoded text per part (cut,
 * MAIL_F_TRUNCATED).  A GMIME_CRIT_* parser warning means other software
 * may read the message differently: MAIL_F_AMBIGUOUS is set so approvals
 * from it can be refused.
 *
 * Ownership: the caller owns the struct mail (mail_free()); every string
 * in it is owned by it.  Threads: mail_init() once in main() before any
 * thread starts (it calls g_mime_init()); afterwards mail_parse() may run
 * in several threads, each on its own message.
 * Errors: PB_ELIMIT (a hard limit), PB_EINVAL (not a message at all).
 */
#ifndef PB_MAIL_MAIL_H
#define PB_MAIL_MAIL_H

#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

#define MAIL_F_AMBIGUOUS 0x0001 /* GMime raised a GMIME_CRIT_* warning */
#define MAIL_F_TRUNCATED 0x0002 /* the text was cut at max_text */
#define MAIL_F_HTML 0x0004 /* the text was converted from HTML */
#define MAIL_F_FLOWED 0x0008 /* format=flowed was joined */
#define MAIL_F_PGP_MIME 0x0010 /* read through multipart/signed */
#define MAIL_F_PGP_INLINE 0x0020 /* inline PGP armor removed */
#define MAIL_F_CHARSET_GUESS 0x0040 /* charset missing, unknown or wrong */
#define MAIL_F_NO_TEXT 0x0080 /* no text part found */
#define MAIL_F_LIMIT 0x0100 /* MIME depth or part count reached */
#define MAIL_F_ENTITIES 0x0200 /* HTML entities in text/plain decoded */
#define MAIL_F_ENCRYPTED 0x0400 /* multipart/encrypted: no text */
#define MAIL_F_WRAPPED 0x0800 /* a list's DMARC wrap: read the inner mail */

/* Parser warnings kept as text in struct mail's notes. */
#define MAIL_NOTES_MAX 20

struct mail_limits {
	size_t max_size; /* whole message, bytes */
	size_t max_headers; /* header fields of the top-level header */
	size_t max_header_len; /* one field, folded lines included */
	int max_depth; /* MIME nesting walked */
	int max_parts; /* MIME parts visited */
	size_t max_text; /* decoded text kept per part */
};

struct mail_addr {
	char *name; /* display name, RFC 2047 decoded; "" when none */
	char *email; /* addr-spec; "" when none */
};

struct mail_header {
	char *name; /* as written */
	char *value; /* unfolded, not decoded; printable() before logging */
};

struct mail {
	char *message_id; /* "<id>", or NULL */
	char *in_reply_to; /* first "<id>" of In-Reply-To, or NULL */
	struct strlist references; /* "<id>" each, oldest first */
	struct mail_addr from;
	char *subject; /* decoded, unfolded; "" when absent */
	char *date; /* as written, or NULL */
	struct mail_header *headers; /* kept: Authentication-Results,
				      * X-Patchbridge-*, Auto-Submitted,
				      * List-Id, in message order */
	size_t nr_headers, headers_alloc;
	struct mail_header *inner_headers; /* a wrap's inner message's
					    * Authentication-Results */
	size_t nr_inner_headers, inner_alloc;
	struct mail_addr wrapper; /* a wrap's outer From (the list), else
				   * "" and "" */
	char *inner_message_id; /* a wrap's inner Message-ID, or NULL */
	struct buf text; /* the reply text, see above */
	char *text_type; /* "text/plain", "text/html" or NULL */
	char *charset; /* as declared, or NULL */
	struct buf patch; /* a patch attachment's diff (UTF-8), or empty */
	char *patch_type; /* its Content-Type, or NULL when none */
	char *patch_name; /* its file name, decoded, or NULL */
	unsigned flags; /* MAIL_F_* */
	unsigned crit; /* GMIME_CRIT_* warnings seen */
	unsigned warnings; /* other parser warnings seen */
	/*
	 * The first MAIL_NOTES_MAX of them in words, critical ones marked
	 * "critical: " (what made MAIL_F_AMBIGUOUS), then our own: "2
	 * Message-ID fields: the first counts".  Printable ASCII.
	 */
	struct strlist notes;
};

void mail_limits_default(struct mail_limits *lim);

/* Call once from main() before threads start; 0 or PB_ERROR. */
int mail_init(void);
void mail_shutdown(void);

/* Parse raw[0..len); lim NULL means the defaults. */
int mail_parse(struct mail **out, const char *raw, size_t len,
	       const struct mail_limits *lim);
void mail_free(struct mail *m);

/*
 * An RFC 5322 date-time (as in struct mail's date; obsolete forms and
 * common mistakes accepted, as GMime reads them) as Unix seconds.
 * PB_EINVAL, *out = 0, when it cannot be read.  Sets no err_msg().
 */
int mail_date_parse(int64_t *out, const char *date);
/* The same, with the date's zone in minutes east of UTC in *tz_minutes
 * (0 when it cannot be read). */
int mail_date_parse_zone(int64_t *out, int *tz_minutes, const char *date);

/* The nth (0-based) kept header called name (ASCII case-insensitive). */
const char *mail_header_get(const struct mail *m, const char *name, size_t nth);
/* The same among a wrap's inner message's kept fields. */
const char *mail_inner_header_get(const struct mail *m, const char *name,
				  size_t nth);

/*
 * Append p[0..len) in charset (NULL: unlabelled) as well-formed UTF-8,
 * the way the text part is converted (supersets for common mislabels,
 * UTF-8 then windows-1252 when unknown).  0 or PB_ELIMIT.
 */
int mail_charset_to_utf8(struct buf *out, const char *p, size_t len,
			 const char *charset);

/* The same as a converter for hdrdecode (hdrdecode_conv_fn; arg unused). */
int mail_header_conv(struct buf *out, const char *p, size_t len,
		     const char *charset, void *arg);

#endif
