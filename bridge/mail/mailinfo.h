/*
 * mailinfo - what `git am` makes of a patch mail: the author, the date,
 * the commit message and the patch, read as git's mailinfo reads them
 * (git's mailinfo.c and builtin/am.c, git-mailinfo(1) without options):
 *
 *   author   the From field's name and address; an in-body "From:" line
 *            at the top of the text (git send-email puts one there for
 *            another author's patch) takes its place.  A name that is
 *            empty, longer than 60 bytes or holds "@", "<" or ">" is
 *            replaced by the address (mailinfo.c get_sane_name()).
 *   date     the Date field, or an in-body "Date:" line; its time and
 *            its zone are both kept, as git keeps them for the author.
 *   message  the subject cleaned as mailinfo.c cleanup_subject() does
 *            (leading "Re:", blanks, colons and every leading [...]
 *            group removed, then cleanup_space(): runs of blanks made
 *            one space) - or an in-body "Subject:" line's - a blank
 *            line, and the text from after the in-body header lines up
 *            to the patch break (a "---" line, "--- file", "diff -",
 *            "Index: "), then cleaned as git stripspace does: trailing
 *            blanks of each line and blank lines at both ends removed,
 *            runs of blank lines made one, ending in one newline.
 *   patch    the text from its first "diff --git " line to the end (the
 *            diffstat above it is git's summary, not part of the patch).
 *
 * The text is the mail model's (mail.h): transfer encoding undone,
 * converted to UTF-8, line ends LF (git am also drops the CR of CRLF
 * by default).  The caller decides which mails are patches to apply
 * (review.h `submission`).
 *
 * Ownership: struct mailinfo owns its strings (mailinfo_release()).
 * Pure and thread-safe after mail_init().
 * Errors: those of mail_parse(); PB_EINVAL for a mail with no "diff
 * --git" patch in its text or whose author has no address; PB_ELIMIT
 * past MAILINFO_MESSAGE_MAX.
 */
#ifndef PB_MAIL_MAILINFO_H
#define PB_MAIL_MAILINFO_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

/* A commit message read from a mail, at most. */
#define MAILINFO_MESSAGE_MAX (1024 * 1024)

struct mailinfo {
	char *name; /* the author's name (UTF-8), sane as git makes it */
	char *email; /* the author's address */
	int64_t time; /* the author date, Unix seconds */
	int tz_minutes; /* its zone, east of UTC */
	char *subject; /* cleaned: the commit's title */
	struct buf message; /* title, blank line, body; ends in "\n" */
	struct buf patch; /* from the first "diff --git " line on */
};

void mailinfo_init(struct mailinfo *mi);
void mailinfo_release(struct mailinfo *mi);

/* Read the patch mail raw[0..len) into out (initialised). */
int mailinfo_read(struct mailinfo *out, const char *raw, size_t len);

/* The subject as mailinfo.c cleanup_subject() leaves it, into out. */
int mailinfo_clean_subject(struct buf *out, const char *subject, size_t len);

#endif
