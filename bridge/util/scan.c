#include "util/scan.h"

#include <string.h>

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

int scan_char(struct scan *s, int c)
{
	if (scan_peek(s) != c)
		return 0;
	s->p++;
	return 1;
}

int scan_lit(struct scan *s, const char *lit)
{
	size_t n = strlen(lit);

	if (scan_left(s) < n || memcmp(s->p, lit, n))
		return 0;
	s->p += n;
	return 1;
}

int scan_lit_icase(struct scan *s, const char *lit)
{
	size_t n = strlen(lit);

	if (scan_left(s) < n || !mem_eq_icase(s->p, n, lit))
		return 0;
	s->p += n;
	return 1;
}

size_t scan_blanks(struct scan *s)
{
	const char *start = s->p;

	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t'))
		s->p++;
	return (size_t)(s->p - start);
}

int scan_line(struct scan *s, const char **line, size_t *len)
{
	const char *nl;

	if (scan_eof(s))
		return 0;
	nl = memchr(s->p, '\n', scan_left(s));
	*line = s->p;
	if (nl) {
		*len = (size_t)(nl - s->p);
		s->p = nl + 1;
	} else {
		*len = scan_left(s);
		s->p = s->end;
	}
	if (*len && (*line)[*len - 1] == '\r')
		(*len)--;
	return 1;
}

int scan_until(struct scan *s, int c, const char **tok, size_t *len)
{
	const char *q = memchr(s->p, c, scan_left(s));

	if (!q)
		return 0;
	*tok = s->p;
	*len = (size_t)(q - s->p);
	s->p = q;
	return 1;
}

int scan_span(struct scan *s, int (*accept)(int c), const char **tok,
	      size_t *len)
{
	const char *q = s->p;

	while (q < s->end && accept((unsigned char)*q))
		q++;
	if (q == s->p)
		return 0;
	*tok = s->p;
	*len = (size_t)(q - s->p);
	s->p = q;
	return 1;
}

int scan_u64(struct scan *s, uint64_t max, uint64_t *out)
{
	const char *q = s->p;
	uint64_t v = 0;

	while (q < s->end && *q >= '0' && *q <= '9') {
		uint64_t d = (uint64_t)(*q - '0');

		if (v > (max - d) / 10)
			return 0;
		v = v * 10 + d;
		q++;
	}
	if (q == s->p)
		return 0;
	s->p = q;
	*out = v;
	return 1;
}

int mem_to_u64(const char *p, size_t len, uint64_t max, uint64_t *out)
{
	struct scan s;

	scan_init(&s, p, len);
	return scan_u64(&s, max, out) && scan_eof(&s);
}

int mem_to_i64(const char *p, size_t len, int64_t min, int64_t max,
	       int64_t *out)
{
	struct scan s;
	uint64_t v;
	int neg;

	scan_init(&s, p, len);
	neg = scan_char(&s, '-');
	if (!neg)
		scan_char(&s, '+');
	if (!scan_u64(&s, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX,
		      &v) ||
	    !scan_eof(&s))
		return 0;
	if (neg) {
		int64_t r = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN :
							   -(int64_t)v;
		if (r < min)
			return 0;
		*out = r;
	} else {
		if ((int64_t)v > max)
			return 0;
		*out = (int64_t)v;
	}
	return 1;
}

int mem_eq_icase(const char *a, size_t alen, const char *b)
{
	size_t i;

	for (i = 0; i < alen; i++) {
		if (!b[i] ||
		    lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return 0;
	}
	return b[alen] == '\0';
}

const char *mem_find(const char *hay, size_t haylen, const char *needle,
		     size_t nlen)
{
	size_t i;

	if (nlen == 0)
		return hay;
	if (nlen > haylen)
		return NULL;
	for (i = 0; i + nlen <= haylen; i++) {
		const char *q =
			memchr(hay + i, needle[0], haylen - nlen - i + 1);

		if (!q)
			return NULL;
		i = (size_t)(q - hay);
		if (!memcmp(q, needle, nlen))
			return q;
	}
	return NULL;
}

void mem_trim(const char **p, size_t *len)
{
	while (*len && (**p == ' ' || **p == '\t')) {
		(*p)++;
		(*len)--;
	}
	while (*len && ((*p)[*len - 1] == ' ' || (*p)[*len - 1] == '\t'))
		(*len)--;
}
