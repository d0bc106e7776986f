#include "util/err.h"
#include "util/jsonw.h"
#include "util/utf8.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void jsonw_init(struct jsonw *w, struct buf *out, int indent)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->indent = indent > 0 && indent <= 8 ? indent : 0;
}

static void put(struct jsonw *w, const char *s, size_t len)
{
	int rc;

	if (w->err)
		return;
	rc = buf_add(w->out, s, len);
	if (rc)
		w->err = rc;
}

static void puts_(struct jsonw *w, const char *s)
{
	put(w, s, strlen(s));
}

static void misuse(struct jsonw *w, const char *what)
{
	if (!w->err)
		w->err = err_set(PB_EINVAL, "jsonw: %s", what);
}

static void newline(struct jsonw *w)
{
	int i;

	if (!w->indent)
		return;
	put(w, "\n", 1);
	for (i = 0; i < w->depth * w->indent; i++)
		put(w, " ", 1);
}

/* Called before every value: commas, indentation, and state checks. */
static int before_value(struct jsonw *w)
{
	if (w->err)
		return 0;
	if (w->done) {
		misuse(w, "a second top-level value");
		return 0;
	}
	if (w->depth == 0)
		return 1;
	if (w->kind[w->depth - 1] == '{') {
		if (!w->want_value) {
			misuse(w, "object member without a key");
			return 0;
		}
		w->want_value = 0;
		return 1;
	}
	if (w->count[w->depth - 1]++)
		put(w, ",", 1);
	newline(w);
	return 1;
}

static void after_value(struct jsonw *w)
{
	if (w->depth == 0)
		w->done = 1;
}

static void open_(struct jsonw *w, char kind)
{
	if (!before_value(w))
		return;
	if (w->depth >= JSONW_DEPTH_MAX) {
		misuse(w, "nesting too deep");
		return;
	}
	put(w, kind == '{' ? "{" : "[", 1);
	w->kind[w->depth] = kind;
	w->count[w->depth] = 0;
	w->depth++;
}

static void close_(struct jsonw *w, char kind)
{
	if (w->err)
		return;
	if (w->depth == 0 || w->kind[w->depth - 1] != kind || w->want_value) {
		misuse(w, "unbalanced close");
		return;
	}
	w->depth--;
	if (w->count[w->depth])
		newline(w);
	put(w, kind == '{' ? "}" : "]", 1);
	after_value(w);
}

void jsonw_obj_begin(struct jsonw *w)
{
	open_(w, '{');
}

void jsonw_obj_end(struct jsonw *w)
{
	close_(w, '{');
}

void jsonw_arr_begin(struct jsonw *w)
{
	open_(w, '[');
}

void jsonw_arr_end(struct jsonw *w)
{
	close_(w, '[');
}

void jsonw_key(struct jsonw *w, const char *key)
{
	int rc;

	if (w->err)
		return;
	if (w->depth == 0 || w->kind[w->depth - 1] != '{' || w->want_value) {
		misuse(w, "key outside an object");
		return;
	}
	if (w->count[w->depth - 1]++)
		put(w, ",", 1);
	newline(w);
	rc = jsonw_quote(w->out, key, strlen(key));
	if (rc && !w->err)
		w->err = rc;
	put(w, w->indent ? ": " : ":", w->indent ? 2 : 1);
	w->want_value = 1;
}

int jsonw_quote(struct buf *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, start, n;
	uint32_t cp;
	char esc[8];
	int rc;

	rc = buf_addch(out, '"');
	while (!rc && i < len) {
		/* copy the longest run that needs no escaping at once */
		start = i;
		while (i < len) {
			unsigned char c = (unsigned char)s[i];

			if (c < 0x20 || c == '"' || c == '\\')
				break;
			if (c < 0x80) {
				i++;
				continue;
			}
			n = utf8_decode(&cp, s + i, len - i);
			if (!n)
				break;
			i += n;
		}
		if (i > start)
			rc = buf_add(out, s + start, i - start);
		if (rc || i >= len)
			break;
		{
			unsigned char c = (unsigned char)s[i];

			switch (c) {
			case '"':
				rc = buf_add(out, "\\\"", 2);
				break;
			case '\\':
				rc = buf_add(out, "\\\\", 2);
				break;
			case '\n':
				rc = buf_add(out, "\\n", 2);
				break;
			case '\r':
				rc = buf_add(out, "\\r", 2);
				break;
			case '\t':
				rc = buf_add(out, "\\t", 2);
				break;
			case '\b':
				rc = buf_add(out, "\\b", 2);
				break;
			case '\f':
				rc = buf_add(out, "\\f", 2);
				break;
			default:
				if (c < 0x20) {
					memcpy(esc, "\\u00", 4);
					esc[4] = hex[c >> 4];
					esc[5] = hex[c & 15];
					rc = buf_add(out, esc, 6);
				} else {
					/* not well-formed UTF-8: U+FFFD */
					rc = buf_add(out, "\xef\xbf\xbd", 3);
				}
				break;
			}
			i++;
		}
	}
	if (!rc)
		rc = buf_addch(out, '"');
	return rc;
}

void jsonw_str(struct jsonw *w, const char *s, size_t len)
{
	int rc;

	if (!before_value(w))
		return;
	rc = jsonw_quote(w->out, s, len);
	if (rc && !w->err)
		w->err = rc;
	after_value(w);
}

void jsonw_strz(struct jsonw *w, const char *s)
{
	if (!s)
		jsonw_null(w);
	else
		jsonw_str(w, s, strlen(s));
}

void jsonw_int(struct jsonw *w, int64_t v)
{
	char tmp[32];
	int n;

	if (!before_value(w))
		return;
	n = snprintf(tmp, sizeof(tmp), "%" PRId64, v);
	put(w, tmp, (size_t)n);
	after_value(w);
}

void jsonw_bool(struct jsonw *w, int v)
{
	if (!before_value(w))
		return;
	puts_(w, v ? "true" : "false");
	after_value(w);
}

void jsonw_null(struct jsonw *w)
{
	if (!before_value(w))
		return;
	puts_(w, "null");
	after_value(w);
}

int jsonw_finish(struct jsonw *w)
{
	if (w->err)
		return w->err;
	if (!w->done || w->depth)
		return w->err = err_set(PB_EINVAL, "jsonw: incomplete value");
	if (w->indent)
		put(w, "\n", 1);
	return w->err;
}
