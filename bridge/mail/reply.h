/*
 * reply - split a reply into the author's own text and what it quotes.
 *
 * reply_parse() classifies every line of a reply's text (UTF-8, LF):
 *   quoted: ">", "> >", " > ", ">" without a space, "&gt;" left by webmail;
 *   attribution lines, also wrapped over two lines: "On ... wrote:",
 *     "... writes:" (Gnus), "Quoting X (date):" (alot), "Am ... schrieb
 *     X:", "Le ... a écrit :", "El ... escribió:", "Il giorno ... ha
 *     scritto:", "Em ... escreveu:", "Op ... schreef X:", "... пишет:",
 *     "... 于 ... 写道：", "在 ... 写道：", "... のメッセージ:"; an
 *     address with a colon right above a quote (mutt) or after a date
 *     and a time (Gmail in Russian or Japanese);
 *   header blocks of a quoted original, found by their structure in
 *     any language and script: a separator line (a run of at least
 *     five "-", "_", "=" or "*" alone, or runs of at least three around
 *     a few words of any language: "-----Původní zpráva-----",
 *     "-------- 転送メッセージ --------", "--- Treść przekazanej
 *     wiadomości ---") with a header block or a "From:" line under it;
 *     a header block: "Field: value" lines, two under a separator and
 *     three opening a paragraph (never in the middle of one: not under
 *     a pasted "commit ..."), a name of one to three words in any
 *     script, maybe bold "*Field:*" (a "* " bullet is none), the colon
 *     maybe full-width "：" or after a space as in French "Sujet :";
 *     fields that are trailers (Xxx-by, Fixes, Link, Closes, Cc ...) or
 *     git log's (Author, Commit) do not count; a value must hold an
 *     address (not inside a link) or a date with its time (a year and
 *     "10:15", in any script's digits), and a name must not be all
 *     lower case (a robot's "tree: / author: / date:" report); its
 *     folded To:/Cc: lines go with it;
 *     and still by the words of the languages seen on lists where the
 *     structure says too little: a separator whose words are known
 *     ("-----Original Message-----" and its translations, QQMail's
 *     "------------------ Original ------------------") stands alone, a
 *     block of known names ("From: / Sent: / To: / Subject:",
 *     Von/Gesendet/An/Betreff, "发件人: / 发送时间:" ...) needs no
 *     address or date;
 *   an original pasted without ">" below such a block or attribution
 *     with a date or an address (Outlook, Thunderbird's inline forward,
 *     Gmail, Apple Mail, Coremail, QQMail, Yahoo): when the author
 *     wrote above it (top-posting) all the rest is the original; when
 *     the block opens the message, the original ends with the patch it
 *     carries;
 *   trim markers ("...", "[...]", "<snip>", "[skipped the patch]");
 *   the signature ("-- " and below; "--" without the space only above
 *   a few short lines, never above a quoted diff or text between
 *   quotes, where it is a rule between a summary and a review), a
 *   phone's "Sent from my iPhone" line (that line alone), mailing list
 *   footers and legal disclaimers.
 * A signature is known by its form, never by its length: a name (with a
 * title or company under it) below a closing such as "Thanks,", or a
 * line that is the sender's name or first name; a short comment such as
 * "Wrong comparison operator" is the author's text.  A greeting is the
 * greeting word and whom it greets ("Hi Alice,"), a closing the closing
 * word and a name ("Thanks, Phil"), each the whole line: "Hi Alice,
 * NAK.", "Thanks, looks wrong" and "Regards the second hunk, ..." are
 * the author's words, and so is a sentence under a closing.
 * What is left is the author's own text, grouped into blocks: a block is
 * a run of own lines (blank lines do not end it) up to the next line
 * that is not the author's.
 *
 * The author's NAK is read three ways (review.c makes nak_form of them,
 * docs/SECURITY.md "A NAK is said, not mentioned"): nak, the reader's
 * best reading of whether the author objects, each own line read with
 * the lines of its sentence before it when the mailer wrapped it;
 * nak_alone, a paragraph of own text that is the word NAK or NACK alone
 * ("." and "!" allowed; anything that is not own text, a quote or a
 * signature, breaks a paragraph as a blank line does); and nak_mention,
 * the word in any form anywhere in own text.  Commit titles (of a
 * shortlog, or "subsystem: title" pasted), code and log lines, lines
 * indented as code is (a tab, four spaces), the rest of their
 * paragraph, and what a line such as "Something like:" or "dmesg
 * shows:" introduces are mentions only, and so is a NAK inside a
 * quotation ("Fixes: ... (\"i2c: NAK the last byte\")").
 *
 * reply_anchor() places the quoted lines on the diff that was mailed and
 * anchors each block to the last quoted diff line before it (DESIGN.md,
 * "Inline comments").  A quoted diff line the reply's mail client
 * wrapped again (its tail on a line of its own under the same "> ") is
 * joined first, so the tail is neither a line of the diff nor the
 * author's (reply_quote.c says how a tail is known).  A block with no
 * quoted diff line before it, or after the last line of a completely
 * quoted patch, is general.
 *
 * The module is four files over mail/reply_int.h, a header for them
 * alone (it says which file does what).
 *
 * Ownership: a struct reply owns a copy of the text; lines point into
 * it.  Pure, bounded and thread-safe: lines past REPLY_LINES_MAX are
 * not read (->truncated), a quote too long to align leaves every block
 * general.
 * Errors: PB_ELIMIT for text over REPLY_TEXT_MAX.
 */
#ifndef PB_MAIL_REPLY_H
#define PB_MAIL_REPLY_H

#include "mail/diff.h"
#include "util/buf.h"
#include "util/limits.h"

#include <stddef.h>

#define REPLY_TEXT_MAX PB_TEXT_PART_MAX
#define REPLY_LINES_MAX 400000

enum reply_kind {
	RL_OWN, /* the author's own text */
	RL_BLANK, /* an empty line outside quotes */
	RL_QUOTE, /* quoted with '>' */
	RL_ATTRIB, /* "On ... wrote:" and its relatives */
	RL_HEADER, /* header lines of a quoted original (From:/Sent:) */
	RL_ORIG, /* an original pasted without '>' */
	RL_TRIM, /* a trim marker */
	RL_SIG, /* the signature */
	RL_FOOTER, /* a mailing list footer */
	RL_DISCLAIMER, /* a legal disclaimer */
};

struct reply_line {
	const char *p; /* the line as written (into reply->text) */
	size_t len;
	const char *content; /* without the quote markers */
	size_t clen;
	int depth; /* quote depth, 0 outside quotes */
	enum reply_kind kind;
	int diff; /* the diff line it was aligned on, or -1 */
};

struct reply_block {
	size_t first, last; /* lines, inclusive; first and last are own */
	long anchor; /* the anchoring quoted line, or -1 */
	int diff; /* its diff line, or -1 */
	int substance; /* more than greetings, sign-offs, trailers */
	int general; /* part of the general comment */
};

struct reply {
	struct buf text;
	struct reply_line *lines;
	size_t nr;
	struct reply_block *blocks;
	size_t nr_blocks;
	int nak; /* the author's own text says NAK, as the reader reads it */
	int nak_alone; /* a paragraph of own text is the word NAK alone */
	int nak_mention; /* the word NAK (any form) is in own text */
	int truncated; /* longer than REPLY_LINES_MAX: the rest unread */
	char *sender; /* the From display name, or NULL (owned) */
	char *sender_email; /* the From address, or NULL (owned) */
};

/*
 * Parse text[0..len).  sender, sender_email: the From display name and
 * address (each may be NULL or ""), so that a line holding the sender's
 * name or first name is read as a signature wherever it stands.
 */
int reply_parse(struct reply **out, const char *text, size_t len,
		const char *sender, const char *sender_email);
void reply_free(struct reply *r);

/*
 * Anchor the blocks on d, the diff that was mailed.  With d NULL, the
 * quote itself is read as a diff (best effort: counts from the quoted
 * "@@" headers, wrong after trimmed hunks).  *pseudo (may be NULL)
 * receives that diff, owned by the caller, so positions can be read.
 */
int reply_anchor(struct reply *r, const struct diff *d, struct diff **pseudo);

/* The author's own text; every other line becomes an empty line. */
int reply_own_text(struct buf *out, const struct reply *r);

/*
 * A block's text for posting: greetings at its start, sign-offs and the
 * name under them at its end removed; trailer lines too when
 * drop_trailers is set.
 */
int reply_block_text(struct buf *out, const struct reply *r, size_t block,
		     int drop_trailers);

/* True when a line (or a sentence) of own text says NAK/NACK, also
 * emphatic ("NAAAK", "_NACK_") or as the author's verb ("I am NACKing
 * this"); not "snack", not "not a NAK", not "I don't think this deserves
 * a NAK", not "why the NAK?", not "I withdraw my NAK", not "I was going
 * to NAK this", not "this will probably get NAKed", not "you may want to
 * NAK this", not a quoted "NAK", not a line of code or of a log
 * ("#define NAK 0x15", "[   12.345678] i2c i2c-1: NAK from 0x50").  The
 * subjects of a shortlog ("Name (2):" and the commit titles indented
 * under it) are never read for one. */
int reply_line_is_nak(const char *p, size_t len);

#endif
