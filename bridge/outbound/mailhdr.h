/*
 * mailhdr - writing the header fields of outgoing mail, without GMime.
 *
 * The outbound renderer builds mail text directly (like git format-patch),
 * so it needs the few header rules that decide whether a reader, git am
 * and b4 see what we meant:
 *
 *  - text that came from the forge or from a commit is made single-line
 *    and inert first (mailhdr_sanitize): CR, LF and TAB become spaces,
 *    other control characters are dropped, invalid UTF-8 becomes U+FFFD;
 *  - unstructured text (Subject) is RFC 2047 Q-encoded where it must be
 *    (non-ASCII, a literal "=?", a word too long to fold), word run by word
 *    run, never splitting a UTF-8 character across encoded-words, with
 *    every line of an encoded header at most 76 columns (RFC 2047 section
 *    2) and plain headers folded at 78 (RFC 5322 section 2.1.1);
 *  - display names are atoms, a quoted-string or encoded-words (RFC 5322
 *    section 3.4, RFC 2047 section 5 (3)): `"Name, Jr." <a@b>`;
 *  - dates are RFC 5322 section 3.3 date-times.
 *
 * Every function appends to a caller's buf and returns 0 or PB_ELIMIT
 * when the buf's cap is hit (PB_EINVAL where noted).  Lines end in LF;
 * the submitter converts to CRLF on the wire.
 * Thread safety: no shared state.
 */
#ifndef PB_OUTBOUND_MAILHDR_H
#define PB_OUTBOUND_MAILHDR_H

#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

/* RFC 5322 section 2.1.1: lines SHOULD be no longer than 78 characters. */
#define MAILHDR_FOLD_WIDTH 78
/* RFC 2047 section 2: a line holding an encoded-word is at most 76. */
#define MAILHDR_ENCODED_WIDTH 76
/* Longest encoded-word in a display name: fits after "Name: " headers. */
#define MAILHDR_PHRASE_WORD 60
/* A plain word longer than this is encoded so that it can be folded. */
#define MAILHDR_WORD_MAX 900

/*
 * Append s[0..len) made safe for a header: CR, LF, TAB, U+2028, U+2029
 * (and runs of them and of spaces) become one space, other C0 controls,
 * DEL, the C1 controls and the bidi controls are removed, invalid UTF-8
 * bytes become U+FFFD, leading and trailing spaces are trimmed: the
 * one-line mode of utf8_clean().
 */
int mailhdr_sanitize(struct buf *out, const char *s, size_t len);

/* True when s[0..len) needs RFC 2047 encoding as unstructured text. */
int mailhdr_needs_encoding(const char *s, size_t len);

/*
 * Append "Name: prefix text\n".  prefix (may be NULL) is trusted ASCII
 * such as "[PATCH v2 3/7]" and stays readable; text is sanitized, then
 * written as plain folded words or RFC 2047 encoded-words as needed.
 */
int mailhdr_add_text(struct buf *out, const char *name, const char *prefix,
		     const char *text);

/*
 * Append "Name: value\n" for a structured value we generated ourselves
 * (Message-ID, References, addresses): value must be printable ASCII
 * (PB_EINVAL otherwise); it is folded at spaces when longer than 78.
 */
int mailhdr_add_raw(struct buf *out, const char *name, const char *value);

/*
 * Append one mailbox, "phrase <addr>" or just "addr" when name is empty.
 * name is sanitized and written as atoms, a quoted-string, or (non-ASCII,
 * "=?") encoded-words; addr must be a printable ASCII addr-spec without
 * spaces, "<" or ">" (PB_EINVAL otherwise).
 */
int mailhdr_format_addr(struct buf *out, const char *name, const char *addr);

/*
 * Append "Name: a, b, c\n" for already formatted mailboxes (each from
 * mailhdr_format_addr), folded between addresses.  Nothing is written
 * for an empty list.
 */
int mailhdr_add_addrs(struct buf *out, const char *name,
		      const struct strlist *mailboxes);

/*
 * Append an RFC 5322 date-time, "Tue, 3 Jan 2023 12:34:56 +0100", for
 * Unix time t shown in the zone tz_minutes east of UTC.  The day is not
 * zero-padded (like git).  PB_EINVAL for a time gmtime() cannot express.
 */
int mailhdr_date(struct buf *out, int64_t t, int tz_minutes);

/*
 * Append the RFC 2047 Q encoding of s[0..len) (which must be valid UTF-8)
 * as one or more encoded-words, starting at column *col and wrapping with
 * "\n " so that no line exceeds MAILHDR_ENCODED_WIDTH; *col is updated.
 * Exposed for tests and for callers that build their own headers.
 */
int mailhdr_encode_words(struct buf *out, const char *s, size_t len,
			 size_t *col);

#endif
