#include "outbound/qp.h"

#include <string.h>

/* A line at a time, with memchr(), which reads many bytes per step. */
int qp_needed(const char *body, size_t len)
{
	const char *p = body, *end = body + len, *nl;

	if (memchr(body, '\r', len) || memchr(body, '\0', len))
		return 1;
	while (p < end) {
		if ((size_t)(end - p) >= 5 && !memcmp(p, "From ", 5))
			return 1;
		nl = memchr(p, '\n', (size_t)(end - p));
		if ((size_t)((nl ? nl : end) - p) > QP_8BIT_LINE_MAX)
			return 1;
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}

static int qp_literal(unsigned char c)
{
	return (c >= 33 && c <= 126 && c != '=') || c == ' ' || c == '\t';
}

int qp_encode(struct buf *out, const char *in, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t start = out->len, i, col = 0, n;
	char tok[3];
	int rc = 0;

	for (i = 0; i < len && !rc; i++) {
		unsigned char c = (unsigned char)in[i];
		int at_eol = i + 1 == len || in[i + 1] == '\n';

		if (c == '\n') {
			rc = buf_addch(out, '\n');
			col = 0;
			continue;
		}
		/* Literal unless: not printable, '=', blank at the end of a
		 * line (transports strip it), or the F of a "From " line. */
		if (qp_literal(c) && !((c == ' ' || c == '\t') && at_eol) &&
		    !(c == 'F' && col == 0 && len - i >= 5 &&
		      !memcmp(in + i, "From ", 5))) {
			tok[0] = (char)c;
			n = 1;
		} else {
			tok[0] = '=';
			tok[1] = hex[c >> 4];
			tok[2] = hex[c & 15];
			n = 3;
		}
		/* Soft line break "=" so no line passes 76; the last token
		 * of a line may use the column the "=" would need. */
		if (col + n > QP_LINE_MAX - 1 &&
		    !(at_eol && col + n <= QP_LINE_MAX)) {
			rc = buf_adds(out, "=\n");
			col = 0;
			if (rc)
				break;
			/* A new line starting with "From " again. */
			if (n == 1 && c == 'F' && len - i >= 5 &&
			    !memcmp(in + i, "From ", 5)) {
				tok[0] = '=';
				tok[1] = hex[c >> 4];
				tok[2] = hex[c & 15];
				n = 3;
			}
		}
		rc = buf_add(out, tok, n);
		col += n;
	}
	if (rc)
		buf_truncate(out, start);
	return rc;
}

int qp_text_body(struct buf *out, const char *body, size_t len)
{
	int qp = qp_needed(body, len);
	int rc;

	rc = buf_addf(out,
		      "MIME-Version: 1.0\n"
		      "Content-Type: text/plain; charset=UTF-8\n"
		      "Content-Transfer-Encoding: %s\n\n",
		      qp ? "quoted-printable" : "8bit");
	if (!rc)
		rc = qp ? qp_encode(out, body, len) : buf_add(out, body, len);
	return rc;
}
