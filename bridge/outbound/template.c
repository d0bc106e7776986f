#include "outbound/template.h"

#include "util/err.h"
#include "util/limits.h"
#include "util/scan.h"
#include "util/utf8.h"

#include <string.h>

/* Characters in s[0..len), an ill-formed byte counting as one: the
 * column count used for wrapping. */
static size_t utf8_columns(const char *s, size_t len)
{
	size_t i = 0, n, cols = 0;
	uint32_t cp;

	while (i < len) {
		n = utf8_decode(&cp, s + i, len - i);
		i += n ? n : 1;
		cols++;
	}
	return cols;
}

static int is_name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* If p[0..len) starts with "{{name}}", set *name and *nlen and return the
 * length of the whole placeholder; 0 otherwise. */
static size_t placeholder_at(const char *p, size_t len, const char **name,
			     size_t *nlen)
{
	size_t i = 2;

	if (len < 5 || p[0] != '{' || p[1] != '{')
		return 0;
	while (i < len && is_name_char((unsigned char)p[i]))
		i++;
	if (i == 2 || i + 2 > len || p[i] != '}' || p[i + 1] != '}')
		return 0;
	*name = p + 2;
	*nlen = i - 2;
	return i + 2;
}

static int lookup(const char **value, const struct template_var *vars,
		  size_t nvars, const char *name, size_t nlen, size_t lineno)
{
	size_t i;

	for (i = 0; i < nvars; i++) {
		if (strlen(vars[i].key) == nlen &&
		    !memcmp(vars[i].key, name, nlen)) {
			*value = vars[i].value ? vars[i].value : "";
			return 0;
		}
	}
	return err_set(PB_EINVAL,
		       "template line %zu: unknown placeholder {{%.*s}}",
		       lineno, (int)(nlen > 64 ? 64 : nlen), name);
}

int template_render(struct buf *out, const char *tmpl, size_t len,
		    const struct template_var *vars, size_t nvars)
{
	size_t start = out->len, lineno = 0, i, plen, nlen, vlen;
	const char *line, *name, *value;
	size_t llen;
	struct scan s;
	int rc = 0, has_nl;

	scan_init(&s, tmpl, len);
	while (!rc && !scan_eof(&s)) {
		const char *before = s.p;

		scan_line(&s, &line, &llen);
		has_nl = s.p > before && s.p[-1] == '\n';
		lineno++;
		plen = placeholder_at(line, llen, &name, &nlen);
		if (plen && plen == llen) {
			/* A block line. */
			rc = lookup(&value, vars, nvars, name, nlen, lineno);
			if (rc || !*value)
				continue;
			vlen = strlen(value);
			rc = buf_add(out, value, vlen);
			if (!rc && has_nl && value[vlen - 1] != '\n')
				rc = buf_addch(out, '\n');
			continue;
		}
		for (i = 0; !rc && i < llen;) {
			plen = placeholder_at(line + i, llen - i, &name, &nlen);
			if (!plen) {
				rc = buf_addch(out, line[i]);
				i++;
				continue;
			}
			rc = lookup(&value, vars, nvars, name, nlen, lineno);
			if (!rc)
				rc = buf_adds(out, value);
			i += plen;
		}
		if (!rc && has_nl)
			rc = buf_addch(out, '\n');
	}
	if (rc)
		buf_truncate(out, start);
	return rc;
}

struct para {
	struct buf *out;
	size_t width;
	size_t col; /* columns on the current output line */
	size_t indent; /* hanging indent of continuation lines */
	int open; /* a paragraph line is being filled */
};

static int para_flush(struct para *pa)
{
	int rc = 0;

	if (pa->open)
		rc = buf_addch(pa->out, '\n');
	pa->open = 0;
	pa->col = 0;
	pa->indent = 0;
	return rc;
}

static int para_word(struct para *pa, const char *w, size_t len)
{
	size_t cols = utf8_columns(w, len), i;
	int rc = 0;

	if (pa->open && pa->col + 1 + cols > pa->width &&
	    pa->col > pa->indent) {
		rc = buf_addch(pa->out, '\n');
		for (i = 0; !rc && i < pa->indent; i++)
			rc = buf_addch(pa->out, ' ');
		pa->col = pa->indent;
	} else if (pa->open && pa->col > pa->indent) {
		rc = buf_addch(pa->out, ' ');
		pa->col++;
	}
	if (!rc)
		rc = buf_add(pa->out, w, len);
	pa->col += cols;
	pa->open = 1;
	return rc;
}

static int para_words(struct para *pa, const char *p, size_t len)
{
	size_t i = 0, j;
	int rc = 0;

	while (!rc && i < len) {
		while (i < len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		for (j = i; j < len && p[j] != ' ' && p[j] != '\t'; j++)
			;
		if (j > i)
			rc = para_word(pa, p + i, j - i);
		i = j;
	}
	return rc;
}

/* Length of a list marker ("- ", "12. ") at the start of line, or 0. */
static size_t list_marker(const char *p, size_t len)
{
	size_t i = 0;

	if (len >= 2 && (p[0] == '-' || p[0] == '*' || p[0] == '+') &&
	    p[1] == ' ')
		return 2;
	while (i < len && i < 4 && p[i] >= '0' && p[i] <= '9')
		i++;
	if (i > 0 && i + 1 < len && (p[i] == '.' || p[i] == ')') &&
	    p[i + 1] == ' ')
		return i + 2;
	return 0;
}

static int is_fence(const char *p, size_t len)
{
	return len >= 3 && (!memcmp(p, "```", 3) || !memcmp(p, "~~~", 3));
}

int template_wrap(struct buf *out, const char *text, size_t len, size_t width)
{
	struct buf clean = BUF_INIT(PB_TEXT_PART_MAX);
	struct para pa = { out, width, 0, 0, 0 };
	size_t start = out->len, llen, m, i;
	const char *line;
	struct scan s;
	int rc, fence = 0, blank = 0;

	/* untrusted prose: LF line ends, no controls but TAB, valid UTF-8 */
	rc = utf8_clean(&clean, text, len, 0);
	scan_init(&s, clean.data, clean.len);
	while (!rc && scan_line(&s, &line, &llen)) {
		while (llen &&
		       (line[llen - 1] == ' ' || line[llen - 1] == '\t'))
			llen--;
		if (fence || is_fence(line, llen)) {
			if (is_fence(line, llen))
				fence = !fence;
			rc = para_flush(&pa);
			if (!rc && blank && out->len > start)
				rc = buf_addch(out, '\n');
			blank = 0;
			if (!rc)
				rc = buf_add(out, line, llen);
			if (!rc)
				rc = buf_addch(out, '\n');
			continue;
		}
		if (llen == 0) {
			rc = para_flush(&pa);
			blank = 1;
			continue;
		}
		if (blank && out->len > start) {
			rc = para_flush(&pa);
			if (!rc)
				rc = buf_addch(out, '\n');
		}
		blank = 0;
		if (rc)
			break;
		if (line[0] == ' ' || line[0] == '\t' || line[0] == '#' ||
		    line[0] == '>' || line[0] == '|') {
			rc = para_flush(&pa);
			if (!rc)
				rc = buf_add(out, line, llen);
			if (!rc)
				rc = buf_addch(out, '\n');
			continue;
		}
		m = list_marker(line, llen);
		if (m) {
			rc = para_flush(&pa);
			if (!rc)
				rc = buf_add(out, line, m - 1);
			pa.col = m - 1;
			pa.indent = m;
			pa.open = 1;
			/* The first word goes right after the marker. */
			for (i = m; i < llen && line[i] == ' '; i++)
				;
			if (!rc && i < llen) {
				size_t j = i;

				while (j < llen && line[j] != ' ' &&
				       line[j] != '\t')
					j++;
				rc = buf_addch(out, ' ');
				if (!rc)
					rc = buf_add(out, line + i, j - i);
				pa.col = m + utf8_columns(line + i, j - i);
				i = j;
			}
			if (!rc)
				rc = para_words(&pa, line + i, llen - i);
			continue;
		}
		rc = para_words(&pa, line, llen);
	}
	if (!rc)
		rc = para_flush(&pa);
	if (rc)
		buf_truncate(out, start);
	buf_release(&clean);
	return rc;
}
