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

int forgetext_markdown(struct buf *out, const char *md, size_t len)
{
	struct buf text = BUF_INIT(out->max);
	size_t start = out->len, pos = 0;
	int rc, fence = 0, blank = 0;

	rc = strip_comments(&text, md, len);
	while (!rc && pos < text.len) {
		const char *line = text.data + pos, *nl;
		size_t n, i, h;

		nl = memchr(line, '\n', text.len - pos);
		n = nl ? (size_t)(nl - line) : text.len - pos;
		pos += n + (nl ? 1 : 0);
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
			n--;
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
