/*
 * forgetext - the text of a forge comment made into list mail.
 *
 * Pure helpers of forgemail.h, kept apart so that they are unit-tested
 * without a forge, a store or an MTA:
 *
 *  - forgetext_markdown(): GitLab Markdown reduced to the plain text a
 *    list reader expects: HTML comments (our hidden marker among them)
 *    removed, headings as plain lines, "**bold**" as "*bold*", links
 *    "[t](u)" as "t <u>", fenced code as a block indented by four spaces,
 *    backslash escapes resolved, CRLF as LF, no run of blank lines; in a
 *    diff note, a suggestion as the change it makes
 *    (forgetext_markdown_note());
 *  - forgetext_quote_hunk(): the hunk of a diff as mailed that holds a
 *    diff note's line, quoted "> " down to and including that line, the
 *    way a reviewer trims a patch before answering;
 *  - forgetext_skip(): the loop filter: which notes are never mailed.
 *
 * Errors: 0 or PB_ELIMIT (the buf's cap), PB_ENOTFOUND (no such line).
 * Thread safety: no shared state.
 */
#ifndef PB_OUTBOUND_FORGETEXT_H
#define PB_OUTBOUND_FORGETEXT_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

struct diff;
struct forge_note;
struct forge_suggestion;

/* Quote at most this many diff lines before the commented one. */
#define FORGETEXT_QUOTE_LINES 30
/* Suggestion blocks of one note shown as changes; the rest as code. */
#define FORGETEXT_SUGGESTIONS_MAX 64
/* A line number above this is no line of a file a forge shows. */
#define FORGETEXT_LINE_MAX 100000000

/* Append md[0..len) as plain text, ending in exactly one "\n" (nothing
 * for a text that is empty once reduced). */
int forgetext_markdown(struct buf *out, const char *md, size_t len);

/*
 * What a diff note's suggestion blocks are shown against
 * (doc/user/project/merge_requests/reviews/suggestions.md): the note's
 * file and line, the suggestions the forge stored with the note, and the
 * diff as mailed that holds the line.
 */
struct forgetext_suggest {
	const char *path; /* the commented file */
	int64_t new_line; /* its new line; <= 0: the note takes none */
	const struct forge_suggestion *stored; /* in block order; may be NULL */
	size_t nr_stored;
	const struct diff *diff; /* NULL: none */
};

/*
 * forgetext_markdown() for a diff note: each "```suggestion:-X+Y" block
 * (GitLab's reading: lines new_line-X .. new_line+Y, at most 100 either
 * way) becomes "Suggested change to PATH lines A-B:" with the lines it
 * replaces as "-" lines and the block as "+" lines, like a diff.  The
 * replaced lines are those the forge stored with the note, when its
 * suggestion of that order has the block's text; else those of the
 * mailed diff, when it shows every one of them; else the heading says
 * they are not in the mailed diff and the block is shown as code.
 * sg NULL: as forgetext_markdown().
 */
int forgetext_markdown_note(struct buf *out, const char *md, size_t len,
			    const struct forgetext_suggest *sg);

/*
 * Append the quote for a note on path at old_line / new_line (0: absent;
 * GitLab's rule: an added line has new_line only, a removed one old_line
 * only, a context line both).  path matches a file's new or old path, so
 * a note on a renamed file is found under either name.  The quote is
 * "> @@ -a,b +c,d @@" and the hunk's lines up to the commented one; a
 * hunk longer than FORGETEXT_QUOTE_LINES before it is cut at its start,
 * with "> [...]" where lines were left out.  PB_ENOTFOUND when the diff
 * has no such line.
 */
int forgetext_quote_hunk(struct buf *out, const struct diff *d,
			 const char *path, int64_t old_line, int64_t new_line);

/* True when d has a file at path (new or old name). */
int forgetext_has_path(const struct diff *d, const char *path);

enum forgetext_skip {
	FORGETEXT_MAIL, /* a person's comment: mail it */
	FORGETEXT_SKIP_SYSTEM, /* a system note ("changed the title"...) */
	FORGETEXT_SKIP_MARKER, /* ends with our marker - ours */
	FORGETEXT_SKIP_BOT, /* written by the bridge's own forge user */
	FORGETEXT_SKIP_EMPTY, /* nothing left once reduced */
};

/*
 * Decide whether note n is mailed.  bot_username (NULL or "": not known)
 * is the bridge's forge user; its notes are never mailed, marker or not.
 * A marker counts only where and as the inbound side writes it: the end
 * of the note (forge_marker_trailing()), with a key of inbound/marker.h's
 * form, on a note of the bridge's user - or of anyone while that user is
 * not known.  The marker text pasted anywhere else, or onto another
 * user's note, is a person's comment and is mailed: otherwise a forge
 * user could hide a comment from the list's reviewers.
 */
enum forgetext_skip forgetext_skip(const struct forge_note *n,
				   const char *bot_username);
const char *forgetext_skip_name(enum forgetext_skip why);

/* True when a system note's body records an approval. */
int forgetext_is_approval(const char *body);

/* True when a system note's body records an approval withdrawn. */
int forgetext_is_unapproval(const char *body);

#endif
