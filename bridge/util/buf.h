/*
 * buf - the one growable byte buffer, with a mandatory maximum.
 *
 * Modelled on git's strbuf (never NULL, always NUL-terminated, so ->data
 * can be handed to C string functions) and curl's dynbuf (a hard cap set
 * at init, so no input can make it grow without bound).  The contents may
 * hold NUL bytes; ->len is authoritative.
 *
 * Ownership: the buf owns ->data.  buf_release() frees it and leaves an
 * empty, still-usable buf; buf_detach() hands it to the caller.
 * Errors: appending past ->max returns PB_ELIMIT and leaves the buffer
 * unchanged.  Out of memory exits (see xalloc.h).
 * Thread safety: none; a buf belongs to one thread at a time.
 */
#ifndef PB_UTIL_BUF_H
#define PB_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data; /* never NULL, always terminated */
	size_t len; /* bytes used, not counting the terminator */
	size_t alloc; /* bytes allocated; 0 while data is buf_empty */
	size_t max; /* len may never exceed this */
};

extern char buf_empty[];

#define BUF_INIT(max_)                                                 \
	{                                                              \
		.data = buf_empty, .len = 0, .alloc = 0, .max = (max_) \
	}

void buf_init(struct buf *b, size_t max);
void buf_release(struct buf *b);

/* Empty the buffer, keeping its allocation. */
void buf_reset(struct buf *b);

/* Make sure len + extra bytes fit; PB_ELIMIT past max. */
int buf_grow(struct buf *b, size_t extra);

int buf_add(struct buf *b, const void *data, size_t len);
int buf_adds(struct buf *b, const char *s);
int buf_addch(struct buf *b, int c);
int buf_addbuf(struct buf *b, const struct buf *other);
int buf_addf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Copy: like reset + add. */
int buf_set(struct buf *b, const void *data, size_t len);
int buf_sets(struct buf *b, const char *s);

/* Shorten to len bytes (len <= b->len). */
void buf_truncate(struct buf *b, size_t len);

/* Remove trailing spaces, tabs, CRs and LFs. */
void buf_rtrim(struct buf *b);

/* Take the data (malloc'd, terminated); the buf is left empty. */
char *buf_detach(struct buf *b, size_t *len);

/* True when the contents equal the C string s. */
int buf_eqs(const struct buf *b, const char *s);

#endif
