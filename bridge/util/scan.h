/*
 * scan - bounded cursors over untrusted bytes.
 *
 * Parsers of mail, headers, config and HTTP walk a (pointer, end) pair and
 * never read past end, never rely on a terminating NUL (mail contains
 * NULs), and never use sscanf/strtok/atoi.  Every function either
 * advances the cursor and returns true, or leaves it where it was and
 * returns false.
 */
#ifndef PB_UTIL_SCAN_H
#define PB_UTIL_SCAN_H

#include <stddef.h>
#include <stdint.h>

struct scan {
	const char *p; /* next byte */
	const char *end; /* one past the last byte */
};

static inline void scan_init(struct scan *s, const char *p, size_t len)
{
	s->p = p;
	s->end = p + len;
}

static inline size_t scan_left(const struct scan *s)
{
	return (size_t)(s->end - s->p);
}

static inline int scan_eof(const struct scan *s)
{
	return s->p >= s->end;
}

/* The next byte as unsigned char, or -1 at the end. */
static inline int scan_peek(const struct scan *s)
{
	return s->p < s->end ? (unsigned char)*s->p : -1;
}

/* Consume c if it is next. */
int scan_char(struct scan *s, int c);

/* Consume the literal lit if it is next (exact / ASCII case-insensitive). */
int scan_lit(struct scan *s, const char *lit);
int scan_lit_icase(struct scan *s, const char *lit);

/* Skip spaces and tabs; returns how many. */
size_t scan_blanks(struct scan *s);

/*
 * Take the next line: *line and *len get its bytes without the LF (and without
 * a CR before it).  False at the end.  A last line without LF counts.
 */
int scan_line(struct scan *s, const char **line, size_t *len);

/* Take bytes up to (not including) c; false if c never comes. */
int scan_until(struct scan *s, int c, const char **tok, size_t *len);

/* Take a run of bytes for which accept() is true (at least one). */
int scan_span(struct scan *s, int (*accept)(int c), const char **tok,
	      size_t *len);

/* Decimal digits to an unsigned value <= max (overflow-checked). */
int scan_u64(struct scan *s, uint64_t max, uint64_t *out);

/* Whole-string helpers on (ptr, len). */
int mem_to_u64(const char *p, size_t len, uint64_t max, uint64_t *out);
int mem_to_i64(const char *p, size_t len, int64_t min, int64_t max,
	       int64_t *out);
int mem_eq_icase(const char *a, size_t alen, const char *b);
/* Position of needle in haystack, or NULL; works across NULs. */
const char *mem_find(const char *hay, size_t haylen, const char *needle,
		     size_t nlen);
/* Strip leading/trailing spaces and tabs from (*p, *len). */
void mem_trim(const char **p, size_t *len);

#endif
