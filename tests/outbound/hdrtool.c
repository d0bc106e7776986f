/*
 * hdrtool - feed mailhdr from a script: each input line is a hex-encoded
 * byte string; for each, print the Subject header mailhdr_add_text()
 * makes (with a "[PATCH v2 3/7]" prefix), then a From header with the
 * string as display name, then a line ".".  headers_decode.py decodes the
 * result with Python's email package.
 */
#include "outbound/mailhdr.h"
#include "util/buf.h"

#include <stdio.h>
#include <string.h>

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int main(void)
{
	static char line[1 << 16];
	struct buf in = BUF_INIT(1 << 15), out = BUF_INIT(1 << 20);
	struct buf addr = BUF_INIT(1 << 16);

	while (fgets(line, sizeof(line), stdin)) {
		size_t i, len = strcspn(line, "\n");

		buf_reset(&in);
		for (i = 0; i + 1 < len; i += 2)
			buf_addch(&in,
				  hexval(line[i]) * 16 + hexval(line[i + 1]));
		buf_reset(&out);
		buf_reset(&addr);
		if (mailhdr_add_text(&out, "Subject", "[PATCH v2 3/7]",
				     in.data) ||
		    mailhdr_format_addr(&addr, in.data, "a@example.org") ||
		    mailhdr_add_raw(&out, "From", addr.data)) {
			fprintf(stderr, "hdrtool: failed on %s\n", line);
			return 1;
		}
		fwrite(out.data, 1, out.len, stdout);
		fputs(".\n", stdout);
	}
	buf_release(&in);
	buf_release(&out);
	buf_release(&addr);
	return 0;
}
