#include "util/buf.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The data of every buffer that has allocated nothing: it always holds
 * '\0' and is never written to, so that buffers of several threads may
 * share it. */
char buf_empty[1];

void buf_init(struct buf *b, size_t max)
{
	b->data = buf_empty;
	b->len = 0;
	b->alloc = 0;
	b->max = max;
	b->err = 0;
}

void buf_release(struct buf *b)
{
	if (b->alloc)
		free(b->data);
	buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->alloc)
		b->data[0] = '\0';
	b->err = 0;
}

static int failed(const struct buf *b)
{
	if (b->err != PB_ELIMIT)
		return err_set(b->err, "text could not be formatted");
	return err_set(b->err, "buffer limit of %zu bytes reached", b->max);
}

int buf_error(const struct buf *b)
{
	return b->err ? failed(b) : 0;
}

void buf_clear_error(struct buf *b)
{
	b->err = 0;
}

size_t buf_grown_size(const struct buf *b, size_t extra)
{
	size_t need = b->len + extra + 1, n;

	if (need <= b->alloc)
		return b->alloc;
	n = b->alloc ? b->alloc : 64;
	while (n < need)
		n = n > ((size_t)-1) / 2 ? need : n * 2;
	return n;
}

int buf_grow(struct buf *b, size_t extra)
{
	size_t n;

	if (b->err)
		return failed(b);
	if (extra > b->max - b->len) {
		b->err = PB_ELIMIT;
		return failed(b);
	}
	if (b->len + extra + 1 <= b->alloc)
		return 0;
	n = buf_grown_size(b, extra);
	if (b->alloc) {
		b->data = xrealloc(b->data, n);
	} else {
		b->data = xmalloc(n);
		b->data[0] = '\0';
	}
	b->alloc = n;
	return 0;
}

int buf_add(struct buf *b, const void *data, size_t len)
{
	int rc;

	if (len == 0)
		return 0;
	rc = buf_grow(b, len);
	if (rc)
		return rc;
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int buf_addch(struct buf *b, int c)
{
	char ch = (char)c;

	return buf_add(b, &ch, 1);
}

int buf_addbuf(struct buf *b, const struct buf *other)
{
	return buf_add(b, other->data, other->len);
}

int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n, rc;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0) {
		b->err = PB_EINVAL;
		return failed(b);
	}
	rc = buf_grow(b, (size_t)n);
	if (rc)
		return rc;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vaddf(b, fmt, ap);
	va_end(ap);
	return rc;
}

int buf_set(struct buf *b, const void *data, size_t len)
{
	buf_reset(b);
	return buf_add(b, data, len);
}

int buf_sets(struct buf *b, const char *s)
{
	return buf_set(b, s, strlen(s));
}

void buf_truncate(struct buf *b, size_t len)
{
	BUG_ON(len > b->len);
	b->len = len;
	if (b->alloc)
		b->data[len] = '\0';
}

void buf_rtrim(struct buf *b)
{
	while (b->len && strchr(" \t\r\n", b->data[b->len - 1]))
		b->len--;
	if (b->alloc)
		b->data[b->len] = '\0';
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p;

	if (len)
		*len = b->len;
	if (!b->alloc) {
		p = xmalloc(1);
		p[0] = '\0';
	} else {
		p = b->data;
	}
	buf_init(b, b->max);
	return p;
}

int buf_eqs(const struct buf *b, const char *s)
{
	size_t n = strlen(s);

	return n == b->len && !memcmp(b->data, s, n);
}
