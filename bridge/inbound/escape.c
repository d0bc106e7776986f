#include "inbound/escape.h"

#include "util/err.h"
#include "util/scan.h"

#include <string.h>
#include <strings.h>

/* Characters Markdown gives a meaning inside a line; each is escaped
 * ("$" opens math in GitLab's Markdown). */
#define INLINE_SPECIALS "\\`*_[]|~{}$"

/*
 * The characters that begin a GitLab reference (doc/user/markdown.md,
 * "GitLab-specific references"; lib/banzai/filter/references/): # issue,
 * ! merge request, $ snippet, % milestone, & epic, ~ label, ^ alert,
 * * iteration, [ the extended forms ([work_item:1], [vulnerability:1])
 * and [TOC].  "@" is the user's, handled apart.
 */
#define REF_PREFIXES "#!$%&~^*["

static int is_word(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/*
 * The text with CRLF and lone CR made LF and other control characters
 * (NUL, ESC, DEL ...) dropped, so nothing below meets them.
 */
static int clean(struct buf *out, const char *p, size_t len)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < len && !rc; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '\r') {
			if (i + 1 < len && p[i + 1] == '\n')
				continue;
			c = '\n';
		}
		if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
			continue;
		rc = buf_addch(out, c);
	}
	return rc;
}

static int is_blank_char(int c)
{
	return c == ' ' || c == '\t';
}

/* A character of a GitLab project path (lib/gitlab/path_regex.rb). */
static int is_path_char(int c)
{
	return is_word(c) || c == '.' || c == '-';
}

/* The schemes both of GitLab's Markdown engines make links of (GFM's
 * extended autolinks: "www.", http, https, ftp). */
static size_t url_scheme(const char *p, size_t len)
{
	static const char *const schemes[] = { "https://", "http://",
					       "ftp://" };
	size_t k, n;

	if (len >= 4 && !strncasecmp(p, "www.", 4))
		return 4;
	for (k = 0; k < sizeof(schemes) / sizeof(*schemes); k++) {
		n = strlen(schemes[k]);
		if (len >= n && !strncasecmp(p, schemes[k], n))
			return n;
	}
	return 0;
}

/*
 * The end of the URL that starts at p[i], i when none does.  A URL is a
 * link before GitLab's reference filters run, which skip links, and a
 * word joiner inside it would break it ("?a=1&b=2", "%20", "#anchor").
 * It starts a word and ends at a blank, "<", ">" or a double quote
 * (lib/banzai/filter/autolink_filter.rb); a tail that looks like an
 * entity ("&12;") is left out of the link by GFM's autolink rules, so
 * it is text here too.
 */
static size_t url_end(const char *p, size_t len, size_t i)
{
	size_t e, k;

	if (i > 0 && (is_word((unsigned char)p[i - 1]) || p[i - 1] == '.' ||
		      p[i - 1] == '-' || p[i - 1] == '+'))
		return i;
	e = url_scheme(p + i, len - i);
	if (!e)
		return i;
	for (e += i; e < len && !is_blank_char(p[e]) && p[e] != '<' &&
		     p[e] != '>' && p[e] != '"';
	     e++)
		;
	if (e > i && p[e - 1] == ';') {
		for (k = e - 1; k > i && is_word((unsigned char)p[k - 1]); k--)
			;
		if (k > i && k < e - 1 && p[k - 1] == '&')
			e = k - 1;
	}
	return e;
}

/* p[0..i) ends with "namespace/project", which ">" would make a project
 * reference (Project.markdown_reference_pattern, app/models/project.rb). */
static int ends_in_project_path(const char *p, size_t i)
{
	size_t k = i;

	while (k > 0 && is_path_char((unsigned char)p[k - 1]))
		k--;
	if (k == i || k == 0 || p[k - 1] != '/')
		return 0;
	return k >= 2 && is_path_char((unsigned char)p[k - 2]);
}

/*
 * One line of prose (or an inline string): blanks at its start dropped,
 * the block openers at its start and the inline specials escaped, and
 * no GitLab reference left: a word joiner after each prefix character
 * that something follows, and before a ">" that ends a path.
 */
static int prose_line(struct buf *out, const char *p, size_t len)
{
	size_t i = 0, j, e, url = 0; /* url: the end of the last URL */
	int rc = 0;

	while (i < len && is_blank_char(p[i]))
		i++;
	if (i < len && strchr("/#+-=", p[i]))
		rc = buf_addch(out, '\\');
	/* "1." and "1)" would start an ordered list. */
	for (j = i; j < len && is_digit((unsigned char)p[j]); j++)
		;
	for (; i < len && !rc; i++) {
		unsigned char c = (unsigned char)p[i];
		int in_url, joiner;

		if (i >= url && (e = url_end(p, len, i)) > i)
			url = e;
		in_url = i < url;
		/* "#1", "!2", "~bug", "%\"v1\"", "group/project!2"... */
		joiner = !in_url && c && strchr(REF_PREFIXES, c) &&
			 i + 1 < len && !is_blank_char(p[i + 1]);
		if (i == j && j > 0 && (c == '.' || c == ')') &&
		    is_digit((unsigned char)p[i - 1]))
			rc = buf_addch(out, '\\');
		if (rc)
			break;
		switch (c) {
		case '&':
			rc = buf_adds(out, "&amp;");
			if (!rc && joiner)
				rc = buf_adds(out, ESCAPE_WJ);
			continue;
		case '<':
			rc = buf_adds(out, "&lt;");
			continue;
		case '>':
			/* "group/project>" is a project reference; after a
			 * URL, ">" closes it */
			if (i != url && ends_in_project_path(p, i))
				rc = buf_adds(out, ESCAPE_WJ);
			if (!rc)
				rc = buf_adds(out, "&gt;");
			continue;
		case '@':
			rc = buf_addch(out, '@');
			if (!rc &&
			    (i == 0 || !is_word((unsigned char)p[i - 1])))
				rc = buf_adds(out, ESCAPE_WJ);
			continue;
		case '\t':
			rc = buf_addch(out, ' ');
			continue;
		default:
			break;
		}
		if (strchr(INLINE_SPECIALS, c))
			rc = buf_addch(out, '\\');
		if (!rc)
			rc = buf_addch(out, c);
		if (!rc && joiner)
			rc = buf_adds(out, ESCAPE_WJ);
	}
	return rc;
}

int escape_inline(struct buf *out, const char *text, size_t len)
{
	struct buf tmp = BUF_INIT(out->max);
	size_t i, start = out->len;
	int rc;

	rc = clean(&tmp, text, len);
	for (i = 0; i < tmp.len && !rc; i++)
		if (tmp.data[i] == '\n')
			tmp.data[i] = ' ';
	if (!rc)
		rc = prose_line(out, tmp.data, tmp.len);
	if (rc)
		buf_truncate(out, start);
	buf_release(&tmp);
	return rc;
}

/* The longest run of backticks in p[0..len). */
static size_t longest_backticks(const char *p, size_t len)
{
	size_t i, run = 0, best = 0;

	for (i = 0; i < len; i++) {
		run = p[i] == '`' ? run + 1 : 0;
		if (run > best)
			best = run;
	}
	return best;
}

/* One line inside a fence: verbatim but for "/" lines and "<!--". */
static int code_line(struct buf *out, const char *p, size_t len)
{
	size_t i = 0;
	int rc = 0;

	while (i < len && (p[i] == ' ' || p[i] == '\t'))
		i++;
	rc = buf_add(out, p, i);
	if (!rc && i < len && p[i] == '/')
		rc = buf_adds(out, ESCAPE_ZWSP);
	for (; i < len && !rc; i++) {
		rc = buf_addch(out, p[i]);
		if (!rc && p[i] == '<' && len - i >= 4 &&
		    !memcmp(p + i + 1, "!--", 3))
			rc = buf_adds(out, ESCAPE_ZWSP);
	}
	return rc;
}

/* The fenced block around an already cleaned text. */
static int fence(struct buf *out, const char *p, size_t len, const char *lang)
{
	size_t n = longest_backticks(p, len) + 1, i;
	struct scan s;
	const char *line;
	size_t ll;
	int rc = 0;

	if (n < 3)
		n = 3;
	for (i = 0; i < n && !rc; i++)
		rc = buf_addch(out, '`');
	if (!rc && lang)
		rc = buf_adds(out, lang);
	if (!rc)
		rc = buf_addch(out, '\n');
	scan_init(&s, p, len);
	while (!rc && scan_line(&s, &line, &ll)) {
		rc = code_line(out, line, ll);
		if (!rc)
			rc = buf_addch(out, '\n');
	}
	for (i = 0; i < n && !rc; i++)
		rc = buf_addch(out, '`');
	if (!rc)
		rc = buf_addch(out, '\n');
	return rc;
}

int escape_code_block(struct buf *out, const char *text, size_t len,
		      const char *lang)
{
	struct buf tmp = BUF_INIT(out->max);
	size_t start = out->len;
	int rc;

	rc = clean(&tmp, text, len);
	while (!rc && tmp.len && tmp.data[tmp.len - 1] == '\n')
		buf_truncate(&tmp, tmp.len - 1);
	if (!rc)
		rc = fence(out, tmp.data, tmp.len, lang);
	if (rc)
		buf_truncate(out, start);
	buf_release(&tmp);
	return rc;
}

static int is_blank(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != ' ' && p[i] != '\t')
			return 0;
	return 1;
}

static int starts(const char *p, size_t len, const char *lit)
{
	size_t n = strlen(lit);

	return len >= n && !memcmp(p, lit, n);
}

/* Preformatted in mail: indented by a tab or four spaces, or diff text. */
static int is_code_line(const char *p, size_t len)
{
	return starts(p, len, "\t") || starts(p, len, "    ") ||
	       starts(p, len, "diff --git ") || starts(p, len, "@@ ") ||
	       starts(p, len, "--- a/") || starts(p, len, "+++ b/");
}

struct para {
	size_t start, end; /* byte range in the cleaned text, end at a LF */
	int code;
};

/* The next paragraph at or after *pos; false at the end. */
static int next_para(struct para *pa, const struct buf *t, size_t *pos)
{
	const char *line;
	size_t ll, at;
	struct scan s;
	int found = 0;

	scan_init(&s, t->data + *pos, t->len - *pos);
	pa->code = 0;
	for (;;) {
		at = (size_t)(s.p - t->data);
		if (!scan_line(&s, &line, &ll))
			break;
		if (is_blank(line, ll)) {
			if (found)
				break;
			continue;
		}
		if (!found)
			pa->start = at;
		found = 1;
		pa->end = (size_t)(line - t->data) + ll;
		if (is_code_line(line, ll))
			pa->code = 1;
	}
	*pos = at;
	return found;
}

static int prose(struct buf *out, const char *p, size_t len)
{
	const char *line;
	size_t ll;
	struct scan s;
	int rc = 0, first = 1;

	scan_init(&s, p, len);
	while (!rc && scan_line(&s, &line, &ll)) {
		/* trailing blanks would make a hard break of their own */
		while (ll && (line[ll - 1] == ' ' || line[ll - 1] == '\t'))
			ll--;
		if (!first)
			rc = buf_adds(out, "\\\n");
		first = 0;
		if (!rc)
			rc = prose_line(out, line, ll);
	}
	if (!rc)
		rc = buf_addch(out, '\n');
	return rc;
}

int escape_markdown(struct buf *out, const char *text, size_t len)
{
	struct buf t = BUF_INIT(out->max);
	struct para pa, next;
	size_t pos = 0, start = out->len;
	int rc, have, any = 0;

	rc = clean(&t, text, len);
	if (rc)
		goto out;
	have = next_para(&pa, &t, &pos);
	while (have && !rc) {
		/* Adjacent code paragraphs share one fence, blank lines kept. */
		have = next_para(&next, &t, &pos);
		while (pa.code && have && next.code) {
			pa.end = next.end;
			have = next_para(&next, &t, &pos);
		}
		if (any)
			rc = buf_addch(out, '\n');
		any = 1;
		if (!rc && pa.code)
			rc = fence(out, t.data + pa.start, pa.end - pa.start,
				   NULL);
		else if (!rc)
			rc = prose(out, t.data + pa.start, pa.end - pa.start);
		pa = next;
	}
out:
	if (rc)
		buf_truncate(out, start);
	buf_release(&t);
	return rc;
}
