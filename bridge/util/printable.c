#include "util/printable.h"
#include "util/utf8.h"

#include <stdint.h>

static int is_printable(unsigned char c)
{
	return c >= 0x20 && c < 0x7f;
}

char *printable_copy(char *dst, size_t size, const char *src, size_t len)
{
	size_t i, n;

	if (size == 0)
		return dst;
	if (!src)
		len = 0;
	n = len < size - 1 ? len : size - 1;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[i] = is_printable(c) ? (char)c : '?';
	}
	dst[n] = '\0';
	if (len > n && size >= 4) {
		dst[size - 4] = '.';
		dst[size - 3] = '.';
		dst[size - 2] = '.';
	}
	return dst;
}

int printable_check(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!is_printable((unsigned char)s[i]))
			return 0;
	return 1;
}

/* Code points that end or reorder a line although they are not C0: in a
 * log line the separators are replaced too, since a viewer breaks there. */
static int is_line_control(uint32_t cp)
{
	return utf8_is_display_control(cp) || cp == 0x2028 || cp == 0x2029;
}

size_t printable_line(char *s, size_t len)
{
	size_t i = 0, n, k, replaced = 0;
	uint32_t cp;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x80) {
			if (!is_printable(c)) {
				s[i] = '?';
				replaced++;
			}
			i++;
			continue;
		}
		n = utf8_decode(&cp, s + i, len - i);
		if (n == 0) { /* not well-formed: this byte only */
			s[i++] = '?';
			replaced++;
			continue;
		}
		if (is_line_control(cp)) {
			for (k = 0; k < n; k++)
				s[i + k] = '?';
			replaced += n;
		}
		i += n;
	}
	return replaced;
}
