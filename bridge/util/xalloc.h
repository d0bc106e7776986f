/*
 * xalloc - allocation that cannot fail.
 *
 * Running out of memory is not an error we can recover from in a mail
 * filter: these wrappers log and exit(EX_OSERR) instead of returning NULL,
 * so callers never check.  Sizes are checked for overflow.
 */
#ifndef PB_UTIL_XALLOC_H
#define PB_UTIL_XALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
/* xreallocarray: realloc for nmemb * size with overflow check. */
void *xreallocarray(void *ptr, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Allocate a formatted string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same with a va_list, for wrappers that take a format of their own;
 * ap is left for the caller to va_end(). */
char *xvasprintf(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));

/* Grow *cap for at least need elements (doubling). */
#define ALLOC_GROW(ptr, need, cap)                                  \
	do {                                                        \
		if ((need) > (cap)) {                               \
			size_t alloc_grow_n_ = (cap) ? (cap)*2 : 8; \
			if (alloc_grow_n_ < (need))                 \
				alloc_grow_n_ = (need);             \
			(ptr) = xreallocarray((ptr), alloc_grow_n_, \
					      sizeof(*(ptr)));      \
			(cap) = alloc_grow_n_;                      \
		}                                                   \
	} while (0)

#endif
