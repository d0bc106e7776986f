/*
 * printable - make untrusted text safe to log.
 *
 * Like Postfix's printable(): every byte that is not printable ASCII
 * (including NUL, CR, LF, ESC and all 8-bit bytes) becomes '?', so a
 * hostile header can neither forge log lines nor hide in them.  Long text
 * is cut and ends in "...".
 */
#ifndef PB_UTIL_PRINTABLE_H
#define PB_UTIL_PRINTABLE_H

#include <stddef.h>

/*
 * Copy len bytes of src (which may contain NULs) into dst of size bytes
 * (size >= 4), replacing unprintable bytes.  dst is always terminated.
 * Returns dst, so the call can sit in a log argument list.
 */
char *printable_copy(char *dst, size_t size, const char *src, size_t len);

/* True when every byte of s[0..len) is printable ASCII. */
int printable_check(const char *s, size_t len);

#endif
