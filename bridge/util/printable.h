/*
 * printable - make untrusted text safe to log.
 *
 * Like Postfix's printable(): every byte that is not printable ASCII
 * (including NUL, CR, LF, ESC and all 8-bit bytes) becomes '?', so a
 * hostile header can neither forge log lines nor hide in them.  Long text
 * is cut and ends in "...".  printable_line() is the rule the log facility
 * applies to whole lines: it keeps well-formed UTF-8 text too.
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

/*
 * Make s[0..len) safe, in place, as (part of) one log line: every byte
 * that is not printable ASCII or part of well-formed UTF-8 text becomes
 * '?', and so does each byte of a C1 control (U+0080-U+009F), of a line
 * or paragraph separator (U+2028, U+2029) and of a bidirectional
 * embedding, override or isolate (U+202A-U+202E, U+2066-U+2069), which
 * would end a line or reorder it in a log viewer.  The length does not
 * change.  Returns how many bytes were replaced.  This is what log_msg()
 * does to each line, so it covers every argument of every caller.
 */
size_t printable_line(char *s, size_t len);

/* True when every byte of s[0..len) is printable ASCII. */
int printable_check(const char *s, size_t len);

#endif
