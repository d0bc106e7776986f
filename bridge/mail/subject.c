#include "mail/subject.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SUBJECT_NUM_MAX 99999

void subject_init(struct subject *s)
{
	memset(s, 0, sizeof(*s));
	s->version = s->index = s->total = -1;
}

void subject_release(struct subject *s)
{
	free(s->prefix);
	free(s->title);
	subject_init(s);
}

static int is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static void skip_space(struct scan *s)
{
	while (!scan_eof(s) && is_space(scan_peek(s)))
		s->p++;
}

/*
 * Reply and forward markers in the languages seen on lists.  Each is
 * matched case-insensitively and must be followed by an optional "[N]"
 * or "^N" count and a colon (ASCII or full-width).
 */
static const char *const reply_words[] = {
	"re",
	"aw",
	"sv",
	"vs",
	"antw",
	"odp",
	"ynt",
	"res",
	"rif",
	"\xe7\xad\x94\xe5\xa4\x8d", /* 答复 */
	"\xe5\x9b\x9e\xe5\xa4\x8d", /* 回复 */
	"\xe5\x9b\x9e\xe8\xa6\x86", /* 回覆 */
	"\xe7\xad\x94\xe8\xa6\x86", /* 答覆 */
	NULL,
};
static const char *const forward_words[] = {
	"fwd",
	"fw",
	"wg",
	"tr",
	"enc",
	"\xe8\xbd\xac\xe5\x8f\x91", /* 转发 */
	"\xe8\xbd\x89\xe5\xaf\x84", /* 轉寄 */
	NULL,
};

/* Consume a marker's tail: optional [N] or ^N, blanks, then a colon. */
static int marker_tail(struct scan *s)
{
	struct scan t = *s;
	uint64_t n;

	if (scan_char(&t, '[')) {
		if (!scan_u64(&t, SUBJECT_NUM_MAX, &n) || !scan_char(&t, ']'))
			return 0;
	} else if (scan_char(&t, '^')) {
		if (!scan_u64(&t, SUBJECT_NUM_MAX, &n))
			return 0;
	}
	scan_blanks(&t);
	if (!scan_char(&t, ':') && !scan_lit(&t, "\xef\xbc\x9a")) /* ： */
		return 0;
	*s = t;
	return 1;
}

/* 1 reply marker, 2 forward marker, 0 none (cursor unchanged). */
static int take_marker(struct scan *s)
{
	const char *const *w;
	struct scan t;
	int kind;

	for (kind = 1; kind <= 2; kind++) {
		for (w = kind == 1 ? reply_words : forward_words; *w; w++) {
			t = *s;
			if (!scan_lit_icase(&t, *w))
				continue;
			/* "Re:" yes, "Regression:" no */
			if (is_alpha(scan_peek(&t)))
				continue;
			if (marker_tail(&t)) {
				*s = t;
				return kind;
			}
		}
	}
	return 0;
}

struct tag_info {
	int is_tag;
	int version;
	int index, total;
	int rfc, resend;
};

static int word_is(const char *w, size_t n, const char *lit)
{
	return mem_eq_icase(w, n, lit);
}

/* "v3", "V3": the version number, or -1. */
static int version_word(const char *w, size_t n)
{
	uint64_t v;

	if (n < 2 || (w[0] != 'v' && w[0] != 'V'))
		return -1;
	/* "v3.1" counts as 3: take the leading digits */
	{
		size_t k = 1;

		while (k < n && is_digit((unsigned char)w[k]))
			k++;
		if (k == 1 || (k < n && w[k] != '.'))
			return -1;
		if (!mem_to_u64(w + 1, k - 1, SUBJECT_NUM_MAX, &v))
			return -1;
	}
	return (int)v;
}

static int counter_word(const char *w, size_t n, int *index, int *total)
{
	const char *slash = memchr(w, '/', n);
	uint64_t a, b;

	if (!slash)
		return 0;
	if (!mem_to_u64(w, (size_t)(slash - w), SUBJECT_NUM_MAX, &a) ||
	    !mem_to_u64(slash + 1, n - (size_t)(slash - w) - 1, SUBJECT_NUM_MAX,
			&b))
		return 0;
	*index = (int)a;
	*total = (int)b;
	return 1;
}

static void classify_tag(struct tag_info *ti, const char *p, size_t len)
{
	struct scan s;
	const char *w;
	size_t n;
	int has_patch = 0, has_counter = 0, v;

	memset(ti, 0, sizeof(*ti));
	ti->version = -1;
	scan_init(&s, p, len);
	for (;;) {
		skip_space(&s);
		if (scan_eof(&s))
			break;
		w = s.p;
		while (!scan_eof(&s) && !is_space(scan_peek(&s)))
			s.p++;
		n = (size_t)(s.p - w);
		if (word_is(w, n, "PATCH") || word_is(w, n, "RFC")) {
			has_patch = 1;
			if (word_is(w, n, "RFC"))
				ti->rfc = 1;
		} else if (n > 5 && mem_eq_icase(w, 5, "PATCH") &&
			   (v = version_word(w + 5 + (w[5] == '-'),
					     n - 5 - (w[5] == '-'))) >= 0) {
			has_patch = 1; /* PATCHv2, PATCH-v2 */
			ti->version = v;
		} else if (n > 3 && mem_eq_icase(w, 3, "RFC") &&
			   (v = version_word(w + 3, n - 3)) >= 0) {
			has_patch = 1;
			ti->rfc = 1;
			ti->version = v;
		} else if (word_is(w, n, "RESEND")) {
			ti->resend = 1;
		} else if ((v = version_word(w, n)) >= 0) {
			if (ti->version < 0)
				ti->version = v;
		} else if (!has_counter &&
			   counter_word(w, n, &ti->index, &ti->total)) {
			has_counter = 1;
		}
	}
	ti->is_tag = has_patch || has_counter;
	if (!has_counter) {
		ti->index = 1;
		ti->total = 1;
	}
	if (ti->version < 0)
		ti->version = 1;
}

/* Copy p[0..len) with runs of whitespace collapsed to one space. */
static char *collapse(const char *p, size_t len)
{
	char *out = xmalloc(len + 1);
	size_t i, o = 0;
	int sp = 0;

	mem_trim(&p, &len);
	for (i = 0; i < len; i++) {
		if (is_space((unsigned char)p[i])) {
			sp = 1;
			continue;
		}
		if (sp && o)
			out[o++] = ' ';
		sp = 0;
		out[o++] = p[i];
	}
	out[o] = '\0';
	return out;
}

static int find_close(const char *p, const char *end, const char **close)
{
	const char *q = memchr(p, ']', (size_t)(end - p));

	if (!q)
		return 0;
	*close = q;
	return 1;
}

static void take_tag(struct subject *out, const struct tag_info *ti,
		     const char *inner, size_t inner_len, const char *rest,
		     const char *end)
{
	out->has_tag = 1;
	out->prefix = collapse(inner, inner_len);
	out->version = ti->version;
	out->index = ti->index;
	out->total = ti->total;
	out->rfc = ti->rfc;
	out->resend = ti->resend;
	out->title = collapse(rest, (size_t)(end - rest));
}

int subject_parse(struct subject *out, const char *text, size_t len)
{
	struct tag_info ti;
	struct scan s;
	const char *close, *p, *end;
	int kind;

	subject_init(out);
	if (len > SUBJECT_MAX)
		len = SUBJECT_MAX;
	scan_init(&s, text, len);
	end = s.end;
	for (;;) {
		skip_space(&s);
		if (scan_eof(&s))
			break;
		if (scan_peek(&s) == '[') {
			if (!find_close(s.p + 1, end, &close))
				break;
			classify_tag(&ti, s.p + 1, (size_t)(close - s.p - 1));
			if (ti.is_tag) {
				take_tag(out, &ti, s.p + 1,
					 (size_t)(close - s.p - 1), close + 1,
					 end);
				return 0;
			}
			s.p = close + 1; /* a list tag: skip it */
			continue;
		}
		kind = take_marker(&s);
		if (!kind)
			break;
		if (kind == 1)
			out->reply = 1;
		else
			out->forward = 1;
	}

	/* No tag up front: a "[PATCH ...]" later in a mangled subject. */
	for (p = s.p; p < end; p++) {
		if (*p != '[' || !find_close(p + 1, end, &close))
			continue;
		classify_tag(&ti, p + 1, (size_t)(close - p - 1));
		if (ti.is_tag &&
		    (mem_find(p, (size_t)(close - p), "PATCH", 5) ||
		     mem_find(p, (size_t)(close - p), "RFC", 3))) {
			take_tag(out, &ti, p + 1, (size_t)(close - p - 1),
				 close + 1, end);
			return 0;
		}
	}
	out->prefix = xstrdup("");
	out->title = collapse(s.p, (size_t)(end - s.p));
	return 0;
}
