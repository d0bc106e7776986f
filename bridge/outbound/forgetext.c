#include "outbound/forgetext.h"

#include "forge/forge.h"
#include "mail/diff.h"
#include "util/err.h"

#include <string.h>
#include <strings.h>

/* --- Markdown -------------------------------------------------------- */

/* Copy md without CRs before LF and without HTML comments (an unclosed
 * one runs to the end, as in a browser). */
static int strip_comments(struct buf *out, const char *md, size_t len)
{
	size_t i = 0;
	int rc = 0;

	while (i < len && !rc) {
		if (len - i >= 4 && !memcmp(md + i, "<!--", 4)) {
			const char *end = NULL;
			size_t j;

			for (j = i + 4; j + 3 <= len; j++)
				if (!memcmp(md + j, "-->", 3)) {
					end = md + j + 3;
					break;
				}
			if (!end)
				break;
			i = (size_t)(end - md);
			continue;
		}
		if (md[i] == '\r' && i + 1 < len && md[i + 1] == '\n') {
			i++;
			continue;
		}
		rc = buf_addch(out, md[i] == '\r' ? '\n' : md[i]);
		i++;
	}
	return rc;
}

static int is_punct(char c)
{
	return c && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) != NULL;
}

/* A link or image at s[i] == '[': "[text](url)". */
static int inline_link(struct buf *out, const char *s, size_t len, size_t *i)
{
	size_t t0 = *i + 1, t1, u0, u1;
	int rc;

	for (t1 = t0; t1 < len && s[t1] != ']'; t1++)
		;
	if (t1 + 1 >= len || s[t1 + 1] != '(')
		return 1;
	u0 = t1 + 2;
	for (u1 = u0; u1 < len && s[u1] != ')' && s[u1] != ' '; u1++)
		;
	if (u1 >= len || s[u1] != ')')
		return 1;
	if (t1 - t0 == u1 - u0 && !memcmp(s + t0, s + u0, u1 - u0))
		rc = buf_addf(out, "<%.*s>", (int)(u1 - u0), s + u0);
	else if (t1 == t0)
		rc = buf_addf(out, "<%.*s>", (int)(u1 - u0), s + u0);
	else
		rc = buf_addf(out, "%.*s <%.*s>", (int)(t1 - t0), s + t0,
			      (int)(u1 - u0), s + u0);
	*i = u1 + 1;
	return rc;
}

/* One line of running text: escapes, code spans, strong, links. */
static int inline_text(struct buf *out, const char *s, size_t len)
{
	size_t i = 0, j;
	int rc = 0;

	while (i < len && !rc) {
		char c = s[i];

		if (c == '\\' && i + 1 < len && is_punct(s[i + 1])) {
			rc = buf_addch(out, s[i + 1]);
			i += 2;
		} else if (c == '`') {
			/* A code span is copied as is, backticks included. */
			for (j = i + 1; j < len && s[j] != '`'; j++)
				;
			j = j < len ? j + 1 : len;
			rc = buf_add(out, s + i, j - i);
			i = j;
		} else if ((c == '*' || c == '_') && i + 1 < len &&
			   s[i + 1] == c) {
			rc = buf_addch(out, c == '*' ? '*' : '_');
			i += 2;
		} else if (c == '!' && i + 1 < len && s[i + 1] == '[') {
			size_t k = i + 1;

			rc = inline_link(out, s, len, &k);
			if (rc == 1) {
				rc = buf_addch(out, '!');
				k = i + 1;
			}
			i = k;
		} else if (c == '[') {
			size_t k = i;

			rc = inline_link(out, s, len, &k);
			if (rc == 1) {
				rc = buf_addch(out, '[');
				k = i + 1;
			}
			i = k;
		} else {
			rc = buf_addch(out, c);
			i++;
		}
	}
	return rc;
}

static size_t indent_of(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && i < 3 && s[i] == ' ')
		i++;
	return i;
}

static int is_fence(const char *s, size_t len)
{
	size_t i = indent_of(s, len);

	return len - i >= 3 &&
	       (!memcmp(s + i, "```", 3) || !memcmp(s + i, "~~~", 3));
}

static int is_blank(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return 0;
	return 1;
}

/* --- suggestions -------------------------------------------------------- */

/*
 * GitLab's reading of a suggestion block (lib/gitlab/diff/
 * suggestions_parser.rb, app/models/concerns/suggestible.rb): a fenced
 * block of the language "suggestion", "-X+Y" after a colon (anything
 * else there: no range), at most 100 lines either way, never above
 * line 1.
 */
#define SUGGEST_CONTEXT_MAX 100

struct sugg_block {
	char fch; /* the fence's character */
	size_t flen; /* and its length */
	size_t indent; /* the opening fence's, taken off each line */
	int64_t from, to; /* the lines it replaces */
	struct buf text; /* its lines, each ending in "\n" */
};

static int64_t range_num(const char *s, size_t n, size_t *i)
{
	int64_t v = 0;
	size_t d = 0;

	while (*i < n && s[*i] >= '0' && s[*i] <= '9') {
		if (v < 1000000)
			v = v * 10 + (s[*i] - '0');
		(*i)++;
		d++;
	}
	return d ? v : -1;
}

/* Does line open a suggestion block?  Then fill b's fence and range. */
static int suggestion_open(struct sugg_block *b, const char *line, size_t n,
			   int64_t new_line)
{
	size_t i = indent_of(line, n), f, w;
	int64_t above = 0, below = 0, v;

	b->indent = i;
	b->fch = line[i];
	for (f = i; f < n && line[f] == b->fch; f++)
		;
	b->flen = f - i;
	while (f < n && (line[f] == ' ' || line[f] == '\t'))
		f++;
	for (w = f; w < n && line[w] != ' ' && line[w] != '\t'; w++)
		;
	if (w - f < 10 || memcmp(line + f, "suggestion", 10) ||
	    (w - f > 10 && line[f + 10] != ':'))
		return 0;
	if (w - f > 11) {
		size_t k = f + 11;

		/* SUGGESTION_CONTEXT: ^(-N)?(+N)?$, else no range at all */
		if (k < w && line[k] == '-') {
			k++;
			above = range_num(line, w, &k);
		}
		if (above >= 0 && k < w && line[k] == '+') {
			k++;
			below = range_num(line, w, &k);
		}
		if (above < 0 || below < 0 || k != w)
			above = below = 0;
	}
	v = new_line -
	    (above < SUGGEST_CONTEXT_MAX ? above : SUGGEST_CONTEXT_MAX);
	b->from = v > 1 ? v : 1;
	b->to = new_line +
		(below < SUGGEST_CONTEXT_MAX ? below : SUGGEST_CONTEXT_MAX);
	return 1;
}

/* Does line close block b (CommonMark: the same character, at least as
 * many, nothing else)? */
static int suggestion_close(const struct sugg_block *b, const char *line,
			    size_t n)
{
	size_t i = indent_of(line, n), f;

	for (f = i; f < n && line[f] == b->fch; f++)
		;
	return f - i >= b->flen && f == n;
}

static int is_trailing(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* The lines of a and b are the same, but for trailing blanks and CRs. */
static int same_lines(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t i = 0, j = 0;

	for (;;) {
		size_t ea = i, eb = j, ta, tb;

		while (ea < alen && a[ea] != '\n')
			ea++;
		while (eb < blen && b[eb] != '\n')
			eb++;
		for (ta = ea; ta > i && is_trailing(a[ta - 1]); ta--)
			;
		for (tb = eb; tb > j && is_trailing(b[tb - 1]); tb--)
			;
		if (ta - i != tb - j || memcmp(a + i, b + j, ta - i))
			return 0;
		i = ea + 1;
		j = eb + 1;
		if (i >= alen || j >= blen)
			return i >= alen && j >= blen;
	}
}

/* Append each line of s[0..len) as a diff's mark ('-', '+') would have
 * it, or with mark 0 indented as code. */
static int add_lines(struct buf *out, char mark, const char *s, size_t len)
{
	size_t i = 0;
	int rc = 0;

	while (!rc && i < len) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - s) : len, t = e;

		if (t > i && s[t - 1] == '\r')
			t--;
		if (mark)
			rc = buf_addf(out, "%c%.*s\n", mark, (int)(t - i),
				      s + i);
		else if (t > i)
			rc = buf_addf(out, "    %.*s\n", (int)(t - i), s + i);
		else
			rc = buf_addch(out, '\n');
		i = e + 1;
	}
	return rc;
}

static int file_is(const struct diff *d, size_t f, const char *path);

/* The new side's lines from..to of path, each ending in "\n", when the
 * diff shows every one of them (as context or added).  One pass: a
 * file's lines come in the order of their numbers. */
static int lines_from_diff(struct buf *out, const struct diff *d,
			   const char *path, int64_t from, int64_t to)
{
	int64_t want = from;
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < d->nr_lines && want <= to; i++) {
		const struct diff_line *l = &d->lines[i];

		if (l->kind == '-' || l->new_no != want ||
		    !file_is(d, l->file, path))
			continue;
		rc = buf_addf(out, "%.*s\n", (int)l->len, l->text);
		want++;
	}
	if (!rc && want <= to)
		rc = PB_ENOTFOUND;
	return rc;
}

/*
 * "Suggested change to PATH lines A-B:", the replaced lines as "-" and
 * the suggestion as "+": the replaced lines as the forge stored them
 * with the note (the k-th of its suggestions, when its text is this
 * block's), else as the mailed diff shows them; neither, and the block
 * is shown as it is, saying so.
 */
static int suggestion_render(struct buf *out, const struct sugg_block *b,
			     const struct forgetext_suggest *sg, size_t k)
{
	const struct forge_suggestion *st = k < sg->nr_stored ? &sg->stored[k] :
								NULL;
	struct buf old = BUF_INIT(out->max);
	int64_t from = b->from, to = b->to;
	const char *to_text = b->text.data;
	int rc = 0, found = 0, applied = 0;

	if (st && st->from_line > 0 && st->to_line <= FORGETEXT_LINE_MAX &&
	    st->from_content && st->to_content && *st->from_content &&
	    same_lines(st->to_content, strlen(st->to_content), b->text.data,
		       b->text.len)) {
		size_t nl = 0, i, l = strlen(st->from_content);

		for (i = 0; i < l; i++)
			nl += st->from_content[i] == '\n';
		if (l && st->from_content[l - 1] != '\n')
			nl++;
		from = st->from_line;
		to = from + (int64_t)nl - 1;
		rc = buf_adds(&old, st->from_content);
		found = !rc;
		applied = st->applied;
	}
	if (!found && !rc && sg->diff) {
		rc = lines_from_diff(&old, sg->diff, sg->path, from, to);
		found = !rc;
		if (rc == PB_ENOTFOUND) {
			buf_reset(&old);
			rc = 0;
		}
	}
	if (rc)
		goto out;
	if (from == to)
		rc = buf_addf(out, "Suggested change to %s line %lld", sg->path,
			      (long long)from);
	else
		rc = buf_addf(out, "Suggested change to %s lines %lld-%lld",
			      sg->path, (long long)from, (long long)to);
	if (!rc && !found)
		rc = buf_adds(out, " (the lines it replaces are not in the "
				   "mailed diff):\n");
	else if (!rc)
		rc = buf_adds(out,
			      applied ? " (applied on the forge):\n" : ":\n");
	if (!rc && found)
		rc = add_lines(out, '-', old.data, old.len);
	if (!rc)
		rc = add_lines(out, found ? '+' : 0, to_text, b->text.len);
out:
	buf_release(&old);
	return rc;
}

int forgetext_markdown(struct buf *out, const char *md, size_t len)
{
	return forgetext_markdown_note(out, md, len, NULL);
}

int forgetext_markdown_note(struct buf *out, const char *md, size_t len,
			    const struct forgetext_suggest *sg)
{
	struct buf text = BUF_INIT(out->max);
	struct sugg_block sb;
	size_t start = out->len, pos = 0, nr_sugg = 0;
	int rc, fence = 0, blank = 0, in_sugg = 0;

	memset(&sb, 0, sizeof(sb));
	buf_init(&sb.text, out->max);
	rc = strip_comments(&text, md, len);
	while (!rc && pos < text.len) {
		const char *line = text.data + pos, *nl;
		size_t n, i, h;

		nl = memchr(line, '\n', text.len - pos);
		n = nl ? (size_t)(nl - line) : text.len - pos;
		pos += n + (nl ? 1 : 0);
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
			n--;
		if (in_sugg) {
			if (suggestion_close(&sb, line, n)) {
				in_sugg = 0;
				rc = suggestion_render(out, &sb, sg, nr_sugg++);
				continue;
			}
			for (i = 0; i < sb.indent && i < n && line[i] == ' ';
			     i++)
				;
			rc = buf_addf(&sb.text, "%.*s\n", (int)(n - i),
				      line + i);
			continue;
		}
		/* Bounded: each block looks through the diff once. */
		if (!fence && sg && sg->new_line > 0 &&
		    sg->new_line <= FORGETEXT_LINE_MAX && sg->path &&
		    nr_sugg < FORGETEXT_SUGGESTIONS_MAX && is_fence(line, n) &&
		    suggestion_open(&sb, line, n, sg->new_line)) {
			if (blank)
				rc = buf_addch(out, '\n');
			blank = 0;
			buf_reset(&sb.text);
			in_sugg = 1;
			continue;
		}
		if (is_fence(line, n)) {
			fence = !fence;
			continue;
		}
		if (!fence && is_blank(line, n)) {
			blank = out->len > start;
			continue;
		}
		if (blank)
			rc = buf_addch(out, '\n');
		blank = 0;
		if (rc)
			break;
		if (fence) {
			rc = n ? buf_addf(out, "    %.*s\n", (int)n, line) :
				 buf_addch(out, '\n');
			continue;
		}
		i = indent_of(line, n);
		for (h = 0; i + h < n && h < 7 && line[i + h] == '#'; h++)
			;
		if (h >= 1 && h <= 6 && (i + h == n || line[i + h] == ' ')) {
			/* "## Title ##" -> "Title" */
			i += h;
			while (i < n && line[i] == ' ')
				i++;
			while (n > i && line[n - 1] == '#')
				n--;
			while (n > i && line[n - 1] == ' ')
				n--;
		}
		rc = inline_text(out, line + i, n - i);
		if (!rc)
			rc = buf_addch(out, '\n');
	}
	/* A block left open runs to the end of the note, as in GitLab. */
	if (!rc && in_sugg)
		rc = suggestion_render(out, &sb, sg, nr_sugg);
	buf_release(&sb.text);
	buf_release(&text);
	if (rc)
		buf_truncate(out, start);
	return rc;
}

/* --- hunk quotes ------------------------------------------------------ */

static int file_is(const struct diff *d, size_t f, const char *path)
{
	const struct diff_file *df = &d->files[f];

	return (df->new_path && !strcmp(df->new_path, path)) ||
	       (df->old_path && !strcmp(df->old_path, path));
}

int forgetext_has_path(const struct diff *d, const char *path)
{
	size_t f;

	for (f = 0; path && f < d->nr_files; f++)
		if (file_is(d, f, path))
			return 1;
	return 0;
}

int forgetext_quote_hunk(struct buf *out, const struct diff *d,
			 const char *path, int64_t old_line, int64_t new_line)
{
	const struct diff_line *l = NULL;
	const struct diff_hunk *h;
	size_t i, first, start = out->len;
	int rc;

	if (!path || (old_line <= 0 && new_line <= 0))
		return err_set(PB_ENOTFOUND, "no line in the position");
	for (i = 0; i < d->nr_lines && !l; i++) {
		const struct diff_line *c = &d->lines[i];

		if (!file_is(d, c->file, path))
			continue;
		if (new_line > 0 ? c->kind != '-' && c->new_no == new_line :
				   c->kind != '+' && c->old_no == old_line)
			l = c;
	}
	if (!l)
		return err_set(PB_ENOTFOUND, "%s: line %lld not in the diff",
			       path,
			       (long long)(new_line > 0 ? new_line : old_line));
	i = (size_t)(l - d->lines);
	h = &d->hunks[l->hunk];
	first = h->first;
	rc = buf_addf(out, "> @@ -%d,%d +%d,%d @@\n", h->old_start,
		      h->old_count, h->new_start, h->new_count);
	if (!rc && i - first >= FORGETEXT_QUOTE_LINES) {
		first = i + 1 - FORGETEXT_QUOTE_LINES;
		rc = buf_adds(out, "> [...]\n");
	}
	for (; !rc && first <= i; first++) {
		const struct diff_line *c = &d->lines[first];

		rc = buf_addf(out, "> %c%.*s\n", c->kind, (int)c->len, c->text);
	}
	if (rc)
		buf_truncate(out, start);
	return rc;
}

/* --- the loop filter -------------------------------------------------- */

/*
 * The key of an inbound action's marker, exactly as inbound/marker.h
 * makes it: "pb1-", 32 lower-case hex digits, ".", the action index in
 * 1..10 digits.  Anything else was not written by the inbound side.
 */
static int inbound_key(const char *key)
{
	size_t i, d;

	if (strncmp(key, "pb1-", 4))
		return 0;
	for (i = 4; i < 36; i++)
		if (!((key[i] >= '0' && key[i] <= '9') ||
		      (key[i] >= 'a' && key[i] <= 'f')))
			return 0;
	if (key[i++] != '.')
		return 0;
	for (d = 0; key[i] >= '0' && key[i] <= '9'; i++)
		d++;
	return key[i] == '\0' && d >= 1 && d <= 10;
}

/* The note ends with an inbound action's marker, where and as the forge
 * client writes it (forge_marker_trailing()). */
static int bridge_marker(const char *body)
{
	char key[PB_MARKER_KEY_MAX + 1];

	return forge_marker_trailing(key, body) && inbound_key(key);
}

enum forgetext_skip forgetext_skip(const struct forge_note *n,
				   const char *bot_username)
{
	struct buf text = BUF_INIT(1024 * 1024);
	const char *body = n->body ? n->body : "";
	enum forgetext_skip why = FORGETEXT_MAIL;
	int bot_known = bot_username && *bot_username;
	int by_bot = bot_known && n->author.username &&
		     !strcasecmp(n->author.username, bot_username);

	if (n->system)
		return FORGETEXT_SKIP_SYSTEM;
	/* The inbound side posts as the bridge's user (never through Sudo,
	 * inbound/apply.c): a marker on anybody else's note was pasted. */
	if ((by_bot || !bot_known) && bridge_marker(body))
		return FORGETEXT_SKIP_MARKER;
	if (by_bot)
		return FORGETEXT_SKIP_BOT;
	/* A body over the cap is still somebody's comment: mail it. */
	if (!forgetext_markdown(&text, body, strlen(body)) && !text.len)
		why = FORGETEXT_SKIP_EMPTY;
	buf_release(&text);
	return why;
}

const char *forgetext_skip_name(enum forgetext_skip why)
{
	switch (why) {
	case FORGETEXT_MAIL:
		return "mailed";
	case FORGETEXT_SKIP_SYSTEM:
		return "system note";
	case FORGETEXT_SKIP_MARKER:
		return "written by the bridge (marker)";
	case FORGETEXT_SKIP_BOT:
		return "written by the bridge's user";
	case FORGETEXT_SKIP_EMPTY:
		return "empty";
	}
	return "?";
}

int forgetext_is_approval(const char *body)
{
	return body && !strncmp(body, "approved this merge request", 27);
}

/* SystemNotes::MergeRequestsService#unapprove_mr
 * (app/services/system_notes/merge_requests_service.rb). */
int forgetext_is_unapproval(const char *body)
{
	return body && !strncmp(body, "unapproved this merge request", 29);
}
