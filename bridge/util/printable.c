#include "util/printable.h"

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
