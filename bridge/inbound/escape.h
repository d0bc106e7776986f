/*
 * escape - mail text made inert for a GitLab note (DESIGN.md rule 7).
 *
 * A reviewer's words are relayed into a Markdown note that GitLab both
 * renders and scans for quick actions.  Nothing a mail says may act on the
 * forge or change the page around it, yet a reader must still see the
 * text as written.  The rules, each chosen so the rendered note reads like
 * the mail:
 *
 *  - Quick actions (notes/gitlab-api.md 1.5).  GitLab runs a line that
 *    starts with "/" plus a command name.  Every line whose first
 *    non-blank character is "/" is neutralised, in prose and in code
 *    alike, whatever the word after it: prose gets a Markdown backslash
 *    escape ("\/approve" renders as "/approve"), code blocks a zero-width
 *    space (U+200B) before the "/", since an escape would show there.
 *    Either way the line no longer starts with "/".
 *  - Markup.  In prose "&", "<" and ">" become entities, so no HTML tag,
 *    comment or autolink survives (and no text can forge the hidden
 *    "<!-- patchbridge:KEY -->" marker, which is how the bridge recognises
 *    its own notes, nor the bridge's own markup, such as the <sub> of its
 *    footer); Markdown's inline punctuation (\ ` * _ [ ] | ~ { } and "$",
 *    which opens math) is backslash-escaped, and so are the characters
 *    that open a block at the start of a line (# + - = and "1." / "1)"
 *    list numbers), so no heading, list, rule, table, link, image or
 *    emphasis appears that the mail did not contain as plain text.  Line
 *    breaks are kept as hard breaks: mail is written line by line
 *    (sign-offs, short lists).
 *  - Code.  A paragraph with an indented line (a tab, or four spaces), or
 *    one that looks like a diff, is preformatted text in mail: it goes
 *    into a fenced code block, verbatim.  The fence is one backtick longer
 *    than the longest backtick run inside, so no text can close it; a
 *    "<!--" inside gets a zero-width space after "<" (the marker rule
 *    again).  GitLab makes no reference in code.
 *  - Mentions.  An "@" at the start of a word gets a word joiner (U+2060)
 *    after it.  The text still shows "@all", but GitLab's reference
 *    filter no longer sees a user or group, so relayed mail cannot ping
 *    a whole project (@all) or summon people on the sender's behalf.
 *    Mail addresses ("alice@example.org") are not at a word start and
 *    stay as they are.
 *  - References.  GitLab turns "#1", "!2", "group/project!2",
 *    "project#3", "%\"milestone\"", "~label", "$4", "&5", "^alert#6",
 *    "*iteration:7", "[work_item:8]", "[TOC]" and "group/project>" into
 *    links, and an issue, merge request or epic named so gets a
 *    "mentioned in" system note and its people a notification, as if the
 *    sender had acted on the forge (doc/user/markdown.md, "GitLab-specific
 *    references").  Each prefix character (# ! $ % & ~ ^ * [) that
 *    something follows gets a word joiner after it, and a ">" after
 *    "namespace/project" one before it.  Every reference pattern needs
 *    the name right after its prefix (reference_pattern in
 *    app/models/issue.rb, merge_request.rb, label.rb ...; the filters of
 *    lib/banzai/filter/references/ match the rendered text), so none
 *    matches, and the text reads as written.  A backslash escape is not
 *    enough: GitLab keeps one only before its eight reference characters
 *    ($ % # & @ ! ~ ^) and merges every other escaped character back into
 *    the text before the reference filters run
 *    (lib/banzai/filter/escaped_char_filter.rb), so "\[work_item:8\]"
 *    and "\[TOC\]" would still act, and whether even those hold depends
 *    on the Markdown engine and the release.  Nothing is put inside a URL
 *    ("scheme://..." or "www..."): it is a link before the reference
 *    filters run, and a joiner would break it.  Commit SHAs stay as they
 *    are.
 *  - Control characters other than tab and line ends are dropped; CRLF
 *    becomes LF.
 *
 * Everything is pure and thread-safe.  Output is appended to a buf; the
 * only error is PB_ELIMIT when it would pass the buf's cap.
 */
#ifndef PB_INBOUND_ESCAPE_H
#define PB_INBOUND_ESCAPE_H

#include "util/buf.h"

#include <stddef.h>

/* Zero-width space and word joiner, in UTF-8. */
#define ESCAPE_ZWSP "\xe2\x80\x8b"
#define ESCAPE_WJ "\xe2\x81\xa0"

/* Append text[0..len), a mail's prose (paragraphs, maybe code), as inert
 * Markdown blocks.  Nothing is appended for blank text. */
int escape_markdown(struct buf *out, const char *text, size_t len);

/* Append text[0..len) as inert inline Markdown (names, addresses, paths):
 * line ends become spaces, nothing can open a block. */
int escape_inline(struct buf *out, const char *text, size_t len);

/* Append text[0..len) verbatim inside a fenced code block, with info
 * string lang (NULL: none), ending in a line end. */
int escape_code_block(struct buf *out, const char *text, size_t len,
		      const char *lang);

#endif
