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
 * Errors are sticky, like jsonw's and a stdio stream's: an append that
 * would pass ->max returns PB_ELIMIT, adds nothing, and marks the buf as
 * failed; from then on every append and buf_grow() fails the same way, so
 * the text can never be cut in the middle while later, shorter appends
 * go on.  A writer may therefore append several pieces and check once:
 * the code of its last append, or buf_error().  buf_reset(), buf_set(),
 * buf_release() and buf_detach() start afresh; a caller that has dealt
 * with the failure and keeps what fitted (flagging the text as cut) says
 * so with buf_clear_error().  buf_truncate() keeps the mark: rolling a
 * failed piece back does not make the buffer whole.
 * Out of memory exits (see xalloc.h).
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
	int err; /* 0, or the first failure (PB_ELIMIT, PB_EINVAL): sticky */
};

extern char buf_empty[];

#define BUF_INIT(max_)                                                 \
	{                                                              \
		.data = buf_empty, .len = 0, .alloc = 0, .max = (max_) \
	}

void buf_init(struct buf *b, size_t max);
void buf_release(struct buf *b);

/* Empty the buffer, keeping its allocation; forgets a failure. */
void buf_reset(struct buf *b);

/* Make sure len + extra bytes fit; PB_ELIMIT past max (sticky). */
int buf_grow(struct buf *b, size_t extra);
/*
 * The allocation b would have after buf_grow(b, extra) succeeded:
 * ->alloc when the bytes fit already.  For a caller that accounts for
 * the memory before it grows (the milter's memory budget).
 */
size_t buf_grown_size(const struct buf *b, size_t extra);

int buf_add(struct buf *b, const void *data, size_t len);
int buf_adds(struct buf *b, const char *s);
int buf_addch(struct buf *b, int c);
int buf_addbuf(struct buf *b, const struct buf *other);
int buf_addf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/*
 * 0, or the code of the first failed append since the last fresh start
 * (with the thread's error message set again).  The one check at the end
 * of a writer that ignored the codes of its appends.
 */
int buf_error(const struct buf *b) __attribute__((warn_unused_result));

/* Forget a failure: the caller keeps what fitted and said it was cut. */
void buf_clear_error(struct buf *b);

/* Copy: like reset + add. */
int buf_set(struct buf *b, const void *data, size_t len);
int buf_sets(struct buf *b, const char *s);

/* Shorten to len bytes (len <= b->len); a failure stays marked. */
void buf_truncate(struct buf *b, size_t len);

/* Remove trailing spaces, tabs, CRs and LFs. */
void buf_rtrim(struct buf *b);

/* Take the data (malloc'd, terminated); the buf is left empty. */
char *buf_detach(struct buf *b, size_t *len);

/* True when the contents equal the C string s. */
int buf_eqs(const struct buf *b, const char *s);

#endif
