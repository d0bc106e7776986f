#include "util/utf8.h"

size_t utf8_decode(uint32_t *cp, const char *p, size_t len)
{
	const unsigned char *s = (const unsigned char *)p;
	uint32_t c, min;
	size_t n, i;

	*cp = UTF8_REPLACEMENT;
	if (len == 0)
		return 0;
	c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		c &= 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		c &= 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

size_t utf8_encode(char *out, uint32_t cp)
{
	unsigned char *o = (unsigned char *)out;

	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = UTF8_REPLACEMENT;
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | (cp >> 18));
	o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

int utf8_valid(const char *p, size_t len)
{
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		n = utf8_decode(&cp, p + i, len - i);
		if (!n)
			return 0;
		i += n;
	}
	return 1;
}

int utf8_is_hidden(uint32_t cp)
{
	return cp == 0x00ad || cp == 0x061c || cp == 0x180e ||
	       (cp >= 0x200b && cp <= 0x200f) ||
	       (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2060 && cp <= 0x2064) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff ||
	       (cp >= 0xfff9 && cp <= 0xfffb) ||
	       (cp >= 0xe0000 && cp <= 0xe007f);
}

int utf8_has_hidden(const char *p, size_t len)
{
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		if (!((unsigned char)p[i] & 0x80)) { /* none is ASCII */
			i++;
			continue;
		}
		n = utf8_decode(&cp, p + i, len - i);
		if (n && utf8_is_hidden(cp))
			return 1;
		i += n ? n : 1;
	}
	return 0;
}

int utf8_is_display_control(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

static int is_line_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	       c == '\f';
}

int utf8_clean(struct buf *out, const char *s, size_t len, unsigned flags)
{
	int line = !!(flags & UTF8_CLEAN_LINE), space = 0, rc = 0;
	size_t i = 0, start = out->len, n;
	uint32_t cp;

	while (i < len && !rc) {
		unsigned char c = (unsigned char)s[i];

		if (line && is_line_space(c)) {
			space = out->len > start;
			i++;
			continue;
		}
		if (!line && c == '\r') {
			rc = buf_addch(out, '\n');
			i += (i + 1 < len && s[i + 1] == '\n') ? 2 : 1;
			continue;
		}
		if (!line && (c == '\n' || c == '\t')) {
			rc = buf_addch(out, (char)c);
			i++;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			i++;
			continue;
		}
		n = utf8_decode(&cp, s + i, len - i);
		if (line && n > 1 && (cp == 0x2028 || cp == 0x2029)) {
			/* LINE / PARAGRAPH SEPARATOR: a line break too. */
			space = out->len > start;
			i += n;
			continue;
		}
		if (n > 1 && utf8_is_display_control(cp)) {
			i += n;
			continue;
		}
		if (space) {
			rc = buf_addch(out, ' ');
			space = 0;
			if (rc)
				break;
		}
		if (n == 0) {
			rc = buf_adds(out, "\xef\xbf\xbd"); /* U+FFFD */
			i++;
		} else {
			rc = buf_add(out, s + i, n);
			i += n;
		}
	}
	if (rc)
		buf_truncate(out, start);
	return rc;
}
