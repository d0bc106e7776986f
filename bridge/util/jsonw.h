/*
 * jsonw - a small JSON writer into a struct buf.
 *
 * The core layer must not depend on json-c (confined to bridge/forge), yet
 * `patchbridge parse` and the spool print JSON.  This writer is enough for
 * that: objects, arrays, strings, integers, booleans and null, optionally
 * indented.  Strings are escaped per RFC 8259 section 7 (quote, backslash
 * and every control character); bytes that are not well-formed UTF-8
 * become U+FFFD, so the output is always valid UTF-8 whatever the input.
 *
 * Errors are sticky, like a stdio stream: after the first failure (the
 * buffer's cap reached, or a misuse such as a value where a key is due)
 * every call is a no-op and jsonw_finish() returns the code.
 * Ownership: the writer borrows the buf; nothing is allocated besides it.
 * Thread safety: none; one writer per thread.
 */
#ifndef PB_UTIL_JSONW_H
#define PB_UTIL_JSONW_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

#define JSONW_DEPTH_MAX 32

struct jsonw {
	struct buf *out;
	int err; /* first error, sticky */
	int indent; /* spaces per level; 0 writes one line */
	int depth; /* open containers */
	char kind[JSONW_DEPTH_MAX]; /* '{' or '[' per open container */
	int count[JSONW_DEPTH_MAX]; /* members written per container */
	int want_value; /* a key was written, its value is due */
	int done; /* the top-level value is complete */
};

/* Start writing into out (appending); indent 0 for compact output. */
void jsonw_init(struct jsonw *w, struct buf *out, int indent);

void jsonw_obj_begin(struct jsonw *w);
void jsonw_obj_end(struct jsonw *w);
void jsonw_arr_begin(struct jsonw *w);
void jsonw_arr_end(struct jsonw *w);

/* The key of the next member of the current object (a C string). */
void jsonw_key(struct jsonw *w, const char *key);

/* A string of len bytes (may hold NULs or invalid UTF-8). */
void jsonw_str(struct jsonw *w, const char *s, size_t len);
/* A C string, or null when s is NULL. */
void jsonw_strz(struct jsonw *w, const char *s);
void jsonw_int(struct jsonw *w, int64_t v);
void jsonw_bool(struct jsonw *w, int v);
void jsonw_null(struct jsonw *w);

/*
 * Check that exactly one complete value was written and add a final
 * newline when indenting.  Returns 0 or the first error (PB_ELIMIT when
 * the buffer's cap was hit, PB_EINVAL for a misuse).
 */
int jsonw_finish(struct jsonw *w);

/* Append s[0..len) to out as a quoted, escaped JSON string. */
int jsonw_quote(struct buf *out, const char *s, size_t len);

#endif
