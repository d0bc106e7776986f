/*
 * template - the small text templates of outgoing mail (templates/).
 *
 * A template is plain text with {{name}} placeholders, name being
 * [a-z0-9_]+.  Rendering substitutes values from a table; a placeholder
 * the table does not know is an error (a typo in an operator's template
 * must not mail "{{descripton}}" to a list).  A line that holds nothing
 * but one placeholder is a block: its value is inserted with a final
 * newline, and when the value is empty the whole line disappears, so
 * optional sections ("Changes in v2", notes) leave no blank holes.  Any
 * other "{{" is literal text.  There is no escaping and no logic: the
 * renderer decides what a section says, the template only where it goes.
 *
 * template_wrap() reflows untrusted prose (an MR description) for a
 * 72-column mail body, keeping what looks preformatted.
 *
 * Errors: PB_EINVAL (unknown placeholder, with its line number),
 * PB_ELIMIT from the output buf.  Thread safety: pure functions.
 */
#ifndef PB_OUTBOUND_TEMPLATE_H
#define PB_OUTBOUND_TEMPLATE_H

#include "util/buf.h"

#include <stddef.h>

/* Mail body width (git uses 72 for format-patch and shortlog). */
#define TEMPLATE_WRAP_WIDTH 72

struct template_var {
	const char *key;
	const char *value; /* NULL reads as "" */
};

/* Render tmpl[0..len) into out (appending). */
int template_render(struct buf *out, const char *tmpl, size_t len,
		    const struct template_var *vars, size_t nvars);

/*
 * Append text[0..len) reflowed to width columns (characters, not bytes).
 * Paragraphs of plain lines are joined and wrapped; list items ("- ",
 * "* ", "+ ", "1. ", "1) ") wrap with a hanging indent; fenced code
 * (``` or ~~~), indented lines, headings ("#"), quotes (">") and table
 * rows ("|") are kept as they are.  Words longer than width (URLs) are
 * not broken.  CR LF and lone CR become LF, control characters other
 * than TAB are dropped, invalid UTF-8 becomes U+FFFD, trailing blanks and
 * repeated blank lines go.  The result ends in a newline unless empty.
 */
int template_wrap(struct buf *out, const char *text, size_t len, size_t width);

#endif
