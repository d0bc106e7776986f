/*
 * hdrdecode - header fields as a person reads them: RFC 2047 encoded
 * words, and the one mailbox of a From field.
 *
 * GMime 3.2 cuts runs of encoded words short (a padded base64 word
 * followed by another word of the same charset loses the second), and
 * its address parser gives garbled addresses for the forms of old and
 * broken clients; the header fields the inbound side acts on (Subject,
 * From) are decoded here instead.
 *
 * Encoded words (RFC 2047), read leniently:
 *   - whitespace between two adjacent encoded words is dropped (6.2);
 *   - each word is decoded on its own (B: base64, padded or not; Q:
 *     "_" and "=XX"), and the bytes of adjacent words in the same
 *     charset are joined before the charset conversion, so a character
 *     split over two words comes out whole;
 *   - bytes that are not valid in the charset become U+FFFD (kept
 *     visible, never dropped); a word that does not decode (bad base64)
 *     is kept as written;
 *   - a word glued to text ("Re:=?utf-8?q?...?="), inside a quoted
 *     string or a comment, and an RFC 2231 language suffix
 *     ("=?utf-8*en?q?...?=") are decoded too;
 *   - 8-bit text outside encoded words is UTF-8 when it decodes (RFC
 *     6532), else read as windows-1252 by the converter.
 * Control characters (CR, LF, TAB, NUL, the rest of C0, DEL) in the
 * result become spaces: a decoded value is one line.
 *
 * The charset conversion is the caller's, and never NULL: the system's
 * converter, iconv through GMime's names (mail.c's mail_header_conv(),
 * which reads ISO-2022-JP, GB2312/GBK, KOI8-R, windows-125x and
 * ISO-8859-x alike): conv(out, bytes, len, charset, arg) appends UTF-8
 * to out, charset NULL meaning unlabelled 8-bit text; it must replace
 * what does not convert with U+FFFD.
 *
 * The mailbox (RFC 5322 3.4 with the obsolete forms of 4.4): the first
 * mailbox of the field (group syntax and a list read through), its
 * display name decoded as above, and its addr-spec.  Forms of old and
 * broken clients are read for what they mean:
 *   "a@b.c (A U Thor)"            name from the comment
 *   "bob (smith <bob@example.com>" an unclosed comment is no comment
 *   "\"Bob Smith <bob@example.com>" nor an unclosed quote (the address
 *                                  git mailinfo takes)
 *   "Name a@b.c", "\"Name\"a@b.c"   an address without angle brackets
 *   "=?utf-8?b?...?=a@b.c"         an encoded word glued to the local
 *                                  part is the name, not the address
 *   "Last, First <a@b.c>"          an unquoted comma in the name
 *   "Name <a@b.c" , "<@route:a@b.c>", "a@b.c."
 * The address is kept only when it is a well-formed addr-spec (dot-atom
 * or quoted local part, one "@", a domain of labels or a literal, at most
 * PB_ADDR_MAX bytes, no encoded word in it); otherwise it is reported
 * missing ("") - never a garbled string used as an address.
 *
 * Ownership: hdrdecode_text() appends to the caller's buf; struct
 * hdrdecode_mailbox owns its strings (hdrdecode_mailbox_release()).
 * Pure and thread-safe; reads (pointer, length) only, never past it.
 * Errors: PB_ELIMIT when out reached its cap (out holds what fitted).
 */
#ifndef PB_MAIL_HDRDECODE_H
#define PB_MAIL_HDRDECODE_H

#include "util/buf.h"

#include <stddef.h>

/* Longest encoded text of one encoded word looked at (RFC 2047 allows
 * 75 bytes for the whole word; real mail exceeds it, never by this). */
#define HDRDECODE_WORD_MAX 4096
/* Header bytes looked at for one field value. */
#define HDRDECODE_FIELD_MAX (64 * 1024)

typedef int (*hdrdecode_conv_fn)(struct buf *out, const char *p, size_t len,
				 const char *charset, void *arg);

/* Unstructured text (Subject): append the decoded p[0..len) to out. */
int hdrdecode_text(struct buf *out, const char *p, size_t len,
		   hdrdecode_conv_fn conv, void *arg);

/* The same, trimmed, as a new string (the caller frees it). */
char *hdrdecode_text_dup(const char *p, size_t len, hdrdecode_conv_fn conv,
			 void *arg);

#define HDRDECODE_F_NO_ADDR 0x01 /* no usable addr-spec: email is "" */
#define HDRDECODE_F_BARE 0x02 /* an address without angle brackets */
#define HDRDECODE_F_COMMENT_NAME 0x04 /* the name came from a comment */
#define HDRDECODE_F_UNCLOSED 0x08 /* an unclosed comment, quote or <> */
#define HDRDECODE_F_GLUED 0x10 /* an encoded word glued to the address */

struct hdrdecode_mailbox {
	char *name; /* display name, UTF-8, one line; "" when none */
	char *email; /* addr-spec as written; "" when missing or unusable */
	unsigned flags; /* HDRDECODE_F_* */
};

void hdrdecode_mailbox_init(struct hdrdecode_mailbox *mb);
void hdrdecode_mailbox_release(struct hdrdecode_mailbox *mb);

/* The first mailbox of an address field value p[0..len).  Returns 0. */
int hdrdecode_mailbox(struct hdrdecode_mailbox *out, const char *p, size_t len,
		      hdrdecode_conv_fn conv, void *arg);

/* An RFC 5322 atext byte (8-bit bytes count: RFC 6532). */
int hdrdecode_atext(int c);

/* Is p[0..len) a well-formed addr-spec in the sense above? */
int hdrdecode_addr_ok(const char *p, size_t len);

#endif
