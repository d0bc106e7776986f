/*
 * utf8 - decode and encode UTF-8 on (pointer, length) byte ranges.
 *
 * Mail text is untrusted: it may hold overlong forms, surrogates, stray
 * continuation bytes and NULs.  utf8_decode() accepts only well-formed
 * UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF),
 * so a caller that copies what it accepts and replaces the rest with
 * U+FFFD always produces valid UTF-8.
 *
 * All functions are thread-safe; all but utf8_clean() (which appends to
 * a buf) are pure.
 */
#ifndef PB_UTIL_UTF8_H
#define PB_UTIL_UTF8_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

#define UTF8_REPLACEMENT 0xFFFDu

/*
 * Decode the sequence at p[0..len): the code point goes to *cp and the
 * sequence length (1-4) is returned.  0 when the bytes do not start a
 * well-formed sequence (or len is 0); *cp is then U+FFFD.
 */
size_t utf8_decode(uint32_t *cp, const char *p, size_t len);

/* Encode cp into out (at least 4 bytes); returns the length (1-4). */
size_t utf8_encode(char *out, uint32_t cp);

/* True when p[0..len) is entirely well-formed UTF-8. */
int utf8_valid(const char *p, size_t len);

/*
 * True for a code point that changes the direction of text or is not
 * seen at all: the bidirectional marks, embeddings, overrides and
 * isolates (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), the
 * zero-width and invisible formatting characters (U+00AD, U+180E,
 * U+200B-U+200D, U+2060-U+2064, U+FEFF, U+FFF9-U+FFFB) and the tag
 * characters (U+E0000-U+E007F).  Text holding one may look other than
 * it reads (Unicode Technical Standard #39, CVE-2021-42574).
 */
int utf8_is_hidden(uint32_t cp);

/* True when p[0..len) holds a code point utf8_is_hidden() names. */
int utf8_has_hidden(const char *p, size_t len);

/*
 * True for a C1 control (U+0080-U+009F) or a bidirectional embedding,
 * override or isolate (U+202A-U+202E, U+2066-U+2069): the code points
 * that make a terminal act or a line display in an order other than the
 * one it is read in.  This is the set removed from text we pass on (log
 * lines, mail headers, mailed prose).  It is narrower than
 * utf8_is_hidden() on purpose: that set only decides whether a trailer
 * is refused, while removing a zero-width joiner or a soft hyphen from a
 * name or a comment would change what people wrote, and C1 controls are
 * not text at all.
 */
int utf8_is_display_control(uint32_t cp);

/* utf8_clean() flags */
#define UTF8_CLEAN_LINE 0x1 /* make one line (for a header) */

/*
 * Append s[0..len) made safe to pass on: invalid UTF-8 bytes become
 * U+FFFD, C0 controls, DEL and utf8_is_display_control() are removed.
 * As prose (flags 0): CR and CRLF become LF, LF and TAB stay.  As one
 * line (UTF8_CLEAN_LINE): every run of white space, line breaks and
 * U+2028/U+2029 becomes one space, and leading and trailing space is
 * dropped.  On error (PB_ELIMIT past out->max) out is as it was.
 */
int utf8_clean(struct buf *out, const char *s, size_t len, unsigned flags);

#endif
