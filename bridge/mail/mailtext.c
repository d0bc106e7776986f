#include "mail/mailtext.h"
#include "util/err.h"
#include "util/scan.h"
#include "util/utf8.h"

#include <stdint.h>
#include <string.h>

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

int mailtext_clean(struct buf *out, const char *p, size_t len)
{
	size_t i = 0, n, start;
	uint32_t cp;
	int rc = 0;

	while (i < len && !rc) {
		start = i;
		while (i < len) {
			unsigned char c = (unsigned char)p[i];

			if (c == '\r' || c == '\0')
				break;
			if (c < 0x80) {
				i++;
				continue;
			}
			n = utf8_decode(&cp, p + i, len - i);
			if (!n)
				break;
			i += n;
		}
		if (i > start)
			rc = buf_add(out, p + start, i - start);
		if (rc || i >= len)
			break;
		if (p[i] == '\r') {
			/* CRLF and a lone CR both end a line */
			rc = buf_addch(out, '\n');
			i += (i + 1 < len && p[i + 1] == '\n') ? 2 : 1;
		} else {
			rc = buf_add(out, "\xef\xbf\xbd", 3);
			i++;
		}
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* format=flowed, RFC 3676 section 4 */

int mailtext_flowed(struct buf *out, const char *p, size_t len, int delsp)
{
	struct scan s;
	const char *line;
	size_t n, depth, i;
	int rc = 0, open = 0;
	size_t open_depth = 0;

	scan_init(&s, p, len);
	while (!rc && scan_line(&s, &line, &n)) {
		int flowed;

		for (depth = 0; depth < n && line[depth] == '>'; depth++)
			;
		line += depth;
		n -= depth;
		/* space-stuffing (4.4) */
		if (n && line[0] == ' ') {
			line++;
			n--;
		}
		/* a depth change ends a paragraph even after a soft break */
		if (open && depth != open_depth) {
			rc = buf_addch(out, '\n');
			open = 0;
		}
		flowed = n && line[n - 1] == ' ' &&
			 !(n == 3 && !memcmp(line, "-- ", 3));
		if (!open) {
			for (i = 0; i < depth && !rc; i++)
				rc = buf_addch(out, '>');
			if (depth && !rc)
				rc = buf_addch(out, ' ');
		}
		if (flowed && delsp)
			n--;
		if (!rc)
			rc = buf_add(out, line, n);
		if (!rc && !flowed)
			rc = buf_addch(out, '\n');
		open = flowed;
		open_depth = depth;
	}
	if (!rc && open)
		rc = buf_addch(out, '\n');
	return rc;
}

/* ------------------------------------------------------------------ */
/* HTML entities */

static const struct {
	const char *name;
	uint32_t cp;
} entities[] = {
	{ "amp", '&' },	     { "lt", '<' },	  { "gt", '>' },
	{ "quot", '"' },     { "apos", '\'' },	  { "nbsp", ' ' },
	{ "ensp", ' ' },     { "emsp", ' ' },	  { "thinsp", ' ' },
	{ "copy", 0xa9 },    { "reg", 0xae },	  { "trade", 0x2122 },
	{ "ndash", 0x2013 }, { "mdash", 0x2014 }, { "hellip", 0x2026 },
	{ "lsquo", 0x2018 }, { "rsquo", 0x2019 }, { "ldquo", 0x201c },
	{ "rdquo", 0x201d }, { "laquo", 0xab },	  { "raquo", 0xbb },
	{ "bull", 0x2022 },  { "middot", 0xb7 },  { "deg", 0xb0 },
	{ "times", 0xd7 },   { "euro", 0x20ac },  { "pound", 0xa3 },
	{ "sect", 0xa7 },    { "para", 0xb6 },	  { "shy", 0xad },
	{ "auml", 0xe4 },    { "ouml", 0xf6 },	  { "uuml", 0xfc },
	{ "Auml", 0xc4 },    { "Ouml", 0xd6 },	  { "Uuml", 0xdc },
	{ "szlig", 0xdf },   { "eacute", 0xe9 },  { "egrave", 0xe8 },
	{ "Eacute", 0xc9 },  { "aacute", 0xe1 },  { "agrave", 0xe0 },
	{ "oacute", 0xf3 },  { "iacute", 0xed },  { "uacute", 0xfa },
	{ "ccedil", 0xe7 },  { "ntilde", 0xf1 },  { "aring", 0xe5 },
	{ "oslash", 0xf8 },  { "aelig", 0xe6 },	  { "rarr", 0x2192 },
	{ "larr", 0x2190 },  { "zwnj", 0x200c },  { "zwj", 0x200d },
};

/*
 * Decode the entity at p (which starts with '&'); returns the bytes
 * consumed (0 when it is not an entity) and the code point in *cp.
 */
static size_t entity(const char *p, size_t len, uint32_t *cp)
{
	size_t i, n;
	uint32_t v = 0;

	if (len < 3 || p[0] != '&')
		return 0;
	if (p[1] == '#') {
		int hex = len > 2 && lower((unsigned char)p[2]) == 'x';

		for (i = hex ? 3 : 2; i < len && i < 12; i++) {
			int c = lower((unsigned char)p[i]);

			if (c >= '0' && c <= '9')
				v = v * (hex ? 16 : 10) + (uint32_t)(c - '0');
			else if (hex && c >= 'a' && c <= 'f')
				v = v * 16 + (uint32_t)(c - 'a' + 10);
			else
				break;
		}
		if (i == (hex ? 3u : 2u) || i >= len || p[i] != ';')
			return 0;
		if (v == 0 || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
			v = 0xfffd;
		/* &#160; is a no-break space: plain space like &nbsp; */
		*cp = v == 0xa0 ? ' ' : v;
		return i + 1;
	}
	for (i = 0; i < sizeof(entities) / sizeof(entities[0]); i++) {
		n = strlen(entities[i].name);
		if (len > n + 1 && !memcmp(p + 1, entities[i].name, n) &&
		    p[n + 1] == ';') {
			*cp = entities[i].cp;
			return n + 2;
		}
	}
	return 0;
}

static int add_cp(struct buf *out, uint32_t cp)
{
	char tmp[4];

	return buf_add(out, tmp, utf8_encode(tmp, cp));
}

int mailtext_entities(struct buf *out, const char *p, size_t len)
{
	size_t i = 0, n, start;
	uint32_t cp;
	int rc = 0;

	while (i < len && !rc) {
		const char *amp = memchr(p + i, '&', len - i);

		start = i;
		i = amp ? (size_t)(amp - p) : len;
		rc = buf_add(out, p + start, i - start);
		if (rc || i >= len)
			break;
		n = entity(p + i, len - i, &cp);
		if (n) {
			rc = add_cp(out, cp);
			i += n;
		} else {
			rc = buf_addch(out, '&');
			i++;
		}
	}
	return rc;
}

int mailtext_has_entities(const char *p, size_t len)
{
	return mem_find(p, len, "&nbsp;", 6) != NULL ||
	       mem_find(p, len, "\n&gt;", 5) != NULL ||
	       (len >= 4 && !memcmp(p, "&gt;", 4));
}

/* ------------------------------------------------------------------ */
/* HTML to text */

struct html {
	struct buf *out;
	int rc;
	int depth; /* <blockquote> nesting */
	int pre; /* inside <pre> */
	int at_bol; /* nothing written on the current line yet */
	int space; /* a collapsed space is pending */
	int blank; /* the last line written was empty */
	int lines; /* lines written (so leading breaks are dropped) */
};

static void h_put(struct html *h, const char *p, size_t n)
{
	int i;

	if (h->rc || !n)
		return;
	if (h->at_bol) {
		for (i = 0; i < h->depth && i < MAILTEXT_QUOTE_MAX && !h->rc;
		     i++)
			h->rc = buf_addch(h->out, '>');
		if (h->depth && !h->rc)
			h->rc = buf_addch(h->out, ' ');
		h->at_bol = 0;
		h->space = 0;
	} else if (h->space) {
		h->rc = buf_addch(h->out, ' ');
		h->space = 0;
	}
	if (!h->rc)
		h->rc = buf_add(h->out, p, n);
	h->blank = 0;
}

/* End the current line; blank lines only when force is set (<br>). */
static void h_break(struct html *h, int force)
{
	int i;

	if (h->rc)
		return;
	if (!h->at_bol) {
		h->rc = buf_addch(h->out, '\n');
		h->at_bol = 1;
		h->lines++;
		h->space = 0;
		return;
	}
	if (force && h->lines) {
		/* an empty line, still quoted when inside a blockquote */
		for (i = 0; i < h->depth && i < MAILTEXT_QUOTE_MAX && !h->rc;
		     i++)
			h->rc = buf_addch(h->out, '>');
		if (!h->rc)
			h->rc = buf_addch(h->out, '\n');
		h->lines++;
		h->blank = 1;
	}
	h->space = 0;
}

static int tag_is(const char *name, size_t n, const char *lit)
{
	return mem_eq_icase(name, n, lit);
}

/* Skip to the end of an element whose content is not text. */
static size_t skip_element(const char *p, size_t len, size_t i,
			   const char *close)
{
	size_t cl = strlen(close), j;

	for (j = i; j + cl <= len; j++) {
		size_t k;

		for (k = 0; k < cl; k++)
			if (lower((unsigned char)p[j + k]) != close[k])
				break;
		if (k == cl) {
			const char *gt = memchr(p + j, '>', len - j);

			return gt ? (size_t)(gt - p) + 1 : len;
		}
	}
	return len;
}

static void h_text(struct html *h, const char *p, size_t n)
{
	size_t i = 0, start, k;
	uint32_t cp;
	char tmp[4];

	while (i < n && !h->rc) {
		unsigned char c = (unsigned char)p[i];

		if (h->pre && c == '\n') {
			h_break(h, 1);
			i++;
			continue;
		}
		if (!h->pre && is_space(c)) {
			if (!h->at_bol)
				h->space = 1;
			i++;
			continue;
		}
		if (c == '&') {
			k = entity(p + i, n - i, &cp);
			if (k) {
				if (cp == ' ' && !h->pre) {
					/* &nbsp; keeps indentation only
					 * where it shows: inside a line */
					if (h->at_bol || h->space)
						h_put(h, " ", 1);
					else
						h->space = 1;
				} else {
					h_put(h, tmp, utf8_encode(tmp, cp));
				}
				i += k;
				continue;
			}
		}
		start = i;
		while (i < n && p[i] != '&' && p[i] != '\n' &&
		       (h->pre || !is_space((unsigned char)p[i])))
			i++;
		if (i == start)
			i++;
		h_put(h, p + start, i - start);
	}
}

int mailtext_html(struct buf *out, const char *p, size_t len)
{
	struct html h;
	size_t i = 0, start, n, j;

	memset(&h, 0, sizeof(h));
	h.out = out;
	h.at_bol = 1;
	while (i < len && !h.rc) {
		const char *lt = memchr(p + i, '<', len - i);

		start = i;
		i = lt ? (size_t)(lt - p) : len;
		h_text(&h, p + start, i - start);
		if (i >= len)
			break;
		/* a comment */
		if (len - i >= 4 && !memcmp(p + i, "<!--", 4)) {
			const char *e =
				mem_find(p + i + 4, len - i - 4, "-->", 3);

			i = e ? (size_t)(e - p) + 3 : len;
			continue;
		}
		/* the tag name */
		j = i + 1;
		{
			int closing = j < len && p[j] == '/';
			const char *name;
			const char *gt;

			if (closing)
				j++;
			name = p + j;
			while (j < len && ((p[j] >= 'a' && p[j] <= 'z') ||
					   (p[j] >= 'A' && p[j] <= 'Z') ||
					   (p[j] >= '0' && p[j] <= '9')))
				j++;
			n = (size_t)(p + j - name);
			if (!n && !(j < len && (p[j] == '!' || p[j] == '?'))) {
				/* a lone '<' in text */
				h_put(&h, "<", 1);
				i++;
				continue;
			}
			gt = memchr(p + j, '>', len - j);
			i = gt ? (size_t)(gt - p) + 1 : len;
			if (!closing && (tag_is(name, n, "style") ||
					 tag_is(name, n, "script") ||
					 tag_is(name, n, "head") ||
					 tag_is(name, n, "title"))) {
				char close[16] = "</";

				memcpy(close + 2, name, n < 8 ? n : 8);
				for (j = 2; j < 2 + (n < 8 ? n : 8); j++)
					close[j] = (char)lower(
						(unsigned char)close[j]);
				close[j] = '\0';
				i = skip_element(p, len, i, close);
				continue;
			}
			if (tag_is(name, n, "br")) {
				if (h.at_bol)
					h_break(&h, 1);
				else
					h_break(&h, 0);
			} else if (tag_is(name, n, "blockquote")) {
				h_break(&h, 0);
				if (closing) {
					if (h.depth > 0)
						h.depth--;
				} else {
					h.depth++;
				}
			} else if (tag_is(name, n, "pre")) {
				h_break(&h, 0);
				h.pre = !closing;
			} else if (tag_is(name, n, "p") ||
				   tag_is(name, n, "div") ||
				   tag_is(name, n, "li") ||
				   tag_is(name, n, "tr") ||
				   tag_is(name, n, "table") ||
				   tag_is(name, n, "ul") ||
				   tag_is(name, n, "ol") ||
				   tag_is(name, n, "hr") ||
				   tag_is(name, n, "h1") ||
				   tag_is(name, n, "h2") ||
				   tag_is(name, n, "h3") ||
				   tag_is(name, n, "h4") ||
				   tag_is(name, n, "body")) {
				h_break(&h, 0);
			} else if (tag_is(name, n, "td") ||
				   tag_is(name, n, "th")) {
				if (!h.at_bol)
					h.space = 1;
			}
		}
	}
	if (!h.rc && !h.at_bol)
		h.rc = buf_addch(out, '\n');
	return h.rc;
}

/* ------------------------------------------------------------------ */
/* inline PGP, RFC 4880 section 7 */

int mailtext_pgp_strip(struct buf *out, const char *p, size_t len)
{
	static const char begin[] = "-----BEGIN PGP SIGNED MESSAGE-----";
	static const char sig[] = "-----BEGIN PGP SIGNATURE-----";
	static const char end_[] = "-----END PGP SIGNATURE-----";
	struct scan s;
	const char *line;
	size_t n;
	int rc = 0, state = 0, found = 0;

	/* only when the armor opens the text (after blank lines) */
	scan_init(&s, p, len);
	while (!found && scan_line(&s, &line, &n)) {
		mem_trim(&line, &n);
		if (!n)
			continue;
		if (n != sizeof(begin) - 1 || memcmp(line, begin, n))
			return 0;
		found = 1;
	}
	if (!found)
		return 0;
	/* armor headers ("Hash: SHA256") up to the blank line */
	while (scan_line(&s, &line, &n)) {
		if (!n)
			break;
	}
	while (!rc && scan_line(&s, &line, &n)) {
		if (state == 0) {
			if (n >= sizeof(sig) - 1 &&
			    !memcmp(line, sig, sizeof(sig) - 1)) {
				state = 1;
				continue;
			}
			/* dash-escaped text: "- -- " was "-- " */
			if (n >= 2 && line[0] == '-' && line[1] == ' ') {
				line += 2;
				n -= 2;
			}
			rc = buf_add(out, line, n);
			if (!rc)
				rc = buf_addch(out, '\n');
		} else if (state == 1) {
			if (n >= sizeof(end_) - 1 &&
			    !memcmp(line, end_, sizeof(end_) - 1))
				state = 2;
		} else {
			/* text after the signature block is kept */
			rc = buf_add(out, line, n);
			if (!rc)
				rc = buf_addch(out, '\n');
		}
	}
	return rc ? rc : 1;
}

/* at moved back to the start of its line (or to after the line's end
 * with forward set), so no line is cut. */
static size_t line_edge(const char *p, size_t len, size_t at, int forward)
{
	const char *nl;

	if (at == 0 || at >= len || p[at - 1] == '\n')
		return at;
	if (!forward) {
		while (at > 0 && p[at - 1] != '\n')
			at--;
		return at;
	}
	nl = memchr(p + at, '\n', len - at);
	return nl ? (size_t)(nl + 1 - p) : len;
}

int mailtext_elide(struct buf *out, const char *p, size_t len, size_t max_bytes,
		   size_t max_lines)
{
	size_t lines = 0, head, tail, i, n, tail_bytes, tail_lines;
	int rc;

	for (i = 0; i < len; i++)
		lines += p[i] == '\n';
	if (len && p[len - 1] != '\n')
		lines++;
	if (len <= max_bytes && lines <= max_lines)
		return buf_add(out, p, len);
	tail_bytes = max_bytes / 8;
	tail_lines = max_lines / 8;
	/* the head: the rest of the budgets, up to a line end */
	head = max_bytes - tail_bytes;
	head = head > sizeof(MAILTEXT_ELIDED) ? head - sizeof(MAILTEXT_ELIDED) :
						0;
	for (i = 0, n = 0; i < head && i < len; i++)
		if (p[i] == '\n' && ++n + 1 >= max_lines - tail_lines) {
			head = i + 1;
			break;
		}
	/* a first line longer than the budget is cut, not dropped */
	if (line_edge(p, len, head < len ? head : len, 0))
		head = line_edge(p, len, head < len ? head : len, 0);
	/* the tail: its budgets' worth of the end, from a line start */
	tail = len > tail_bytes ? len - tail_bytes : 0;
	for (i = len, n = 0; i > tail; i--)
		if (p[i - 1] == '\n' && i < len && ++n >= tail_lines) {
			tail = i;
			break;
		}
	tail = line_edge(p, len, tail > head ? tail : head, 1);
	rc = buf_add(out, p, head);
	if (!rc)
		rc = buf_adds(out, MAILTEXT_ELIDED "\n");
	if (!rc)
		rc = buf_add(out, p + tail, len - tail);
	return rc ? rc : 1;
}
