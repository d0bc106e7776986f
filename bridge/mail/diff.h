/*
 * diff - the unified diff of a patch mail, and where a quote of it lands.
 *
 * diff_parse() reads the diff of a `git format-patch` mail (or any text
 * holding unified diffs: "diff --git", "---"/"+++" headers, "@@" hunks)
 * into files and numbered lines: each line knows its kind (' ', '+',
 * '-'), its file, and its real line numbers on the old and new side.
 * Lines outside hunks (the commit message, the diffstat) are not kept.
 *
 * diff_align() places the lines of a reviewer's quote on that diff.
 * Reviewers trim quotes ("...", "[...]"), mail clients wrap long lines,
 * expand tabs, drop the space after ">", and replies quote replies, so a
 * line-by-line count from a quoted "@@" header is not enough (DESIGN.md,
 * "Inline comments").  Instead every quoted line is compared, whitespace
 * ignored, with the diff's lines, and an order-preserving assignment of
 * the best total score is chosen (runs of adjacent lines score extra, so
 * a repeated line such as "}" or "return 0;" lands where its neighbours
 * do).  Wrapped lines match as a prefix and their continuation follows
 * them; a line two lines were merged into matches its first part.
 *
 * Ownership: a struct diff owns a copy of the text it was parsed from.
 * It is counted: diff_parse() returns one reference, diff_ref() adds one
 * and diff_free() drops one, freeing it with the last; a parsed diff is
 * never changed, so threads may share it (the milter keeps parsed
 * parents between mails: mail/classify.h).
 * Everything is pure, bounded (DIFF_LINES_MAX lines, DIFF_QUOTE_MAX
 * quoted lines) and thread-safe.
 * Bounds: past DIFF_LINES_MAX the rest of a diff is dropped (->truncated);
 * past DIFF_QUOTE_MAX quoted lines nothing is aligned.
 */
#ifndef PB_MAIL_DIFF_H
#define PB_MAIL_DIFF_H

#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

#define DIFF_LINES_MAX 200000
#define DIFF_QUOTE_MAX 20000
#define DIFF_TEXT_MAX (16 * 1024 * 1024)

struct diff_file {
	char *old_path; /* without "a/"; NULL for a new file */
	char *new_path; /* without "b/"; NULL for a deleted file */
};

struct diff_hunk {
	size_t file;
	size_t first; /* index of its first line in diff->lines */
	size_t nr; /* lines in it */
	int old_start, old_count, new_start, new_count;
	int complete; /* all lines the header announced are there */
};

struct diff_line {
	char kind; /* ' ', '+', '-' */
	size_t file; /* index into diff->files */
	size_t hunk; /* index into diff->hunks */
	int old_no; /* 0: no old side (or unknown, DIFF_LENIENT) */
	int new_no; /* 0: no new side (or unknown) */
	const char *text; /* after the marker, into diff->text */
	size_t len;
	const char *key; /* the text without whitespace, into diff->keys */
	size_t key_len;
	uint32_t hash; /* FNV-1a of the key (util/hashmap.h) */
};

struct diff {
	struct buf text;
	struct buf keys;
	struct diff_file *files;
	size_t nr_files;
	struct diff_hunk *hunks;
	size_t nr_hunks;
	struct diff_line *lines;
	size_t nr_lines;
	int truncated; /* DIFF_LINES_MAX reached: the rest is missing */
	_Atomic int refs; /* references: diff_free() drops one */
};

/* Parse text[0..len); 0, or PB_ELIMIT for text over DIFF_TEXT_MAX. */
int diff_parse(struct diff **out, const char *text, size_t len);

/*
 * DIFF_LENIENT reads a reviewer's trimmed quote of a diff: inside a hunk
 * whose lines are not all there, lines that are not diff lines (trim
 * markers, comments) are skipped instead of ending the hunk.  The lines
 * after such a gap have no known numbers (old_no and new_no 0).
 */
#define DIFF_LENIENT 0x01
int diff_parse_flags(struct diff **out, const char *text, size_t len,
		     unsigned flags);
/* Drop a reference (NULL allowed); the last one frees. */
void diff_free(struct diff *d);
/* Another reference to d; returns d. */
struct diff *diff_ref(struct diff *d);
/* Add to out the paths d's files touch, both sides of a rename, each
 * once (with what out holds already). */
void diff_paths(struct strlist *out, const struct diff *d);
/* The bytes a parsed diff holds, about (for a cache's bound). */
size_t diff_size(const struct diff *d);

/* The path a line is on: the new path, or the old one when deleted. */
const char *diff_line_path(const struct diff *d, const struct diff_line *l);

/*
 * Align quoted lines q[i] (quote markers already removed) on d: out[i]
 * gets the index of the matched diff line or -1.  Returns 0 or PB_ELIMIT
 * (when nq exceeds DIFF_QUOTE_MAX nothing is matched).
 */
struct diff_quote {
	const char *p;
	size_t len;
};
int diff_align(int *out, const struct diff *d, const struct diff_quote *q,
	       size_t nq);

#endif
