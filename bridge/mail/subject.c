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
	int has_patch, has_counter;
	int all_known; /* every word of the bracket is a tag word */
};

static int is_sep(int c)
{
	return is_space(c) || c == ',' || c == ';';
}

/* Digits at *pos (at most SUBJECT_NUM_MAX): the number, or -1. */
static int number_at(const char *w, size_t n, size_t *pos)
{
	size_t k = *pos;
	uint64_t v;

	while (k < n && is_digit((unsigned char)w[k]))
		k++;
	if (k == *pos || !mem_to_u64(w + *pos, k - *pos, SUBJECT_NUM_MAX, &v))
		return -1;
	*pos = k;
	return (int)v;
}

/* A tag keyword at w[pos] not followed by a letter; its length or 0. */
static size_t keyword_at(const char *w, size_t n, size_t pos, const char *kw)
{
	size_t k = strlen(kw);

	size_t e = pos + k;

	if (n - pos < k || !mem_eq_icase(w + pos, k, kw))
		return 0;
	/* "PATCHES" is not "PATCH"; "PATCHv2" is */
	if (e < n && is_alpha((unsigned char)w[e]) &&
	    !((w[e] == 'v' || w[e] == 'V') && e + 1 < n &&
	      is_digit((unsigned char)w[e + 1])))
		return 0;
	return k;
}

/*
 * One word of a tag, read piece by piece so that the glued forms mail
 * tools and people write are read too: "PATCHv2", "PATCH-v2", "RFCv3",
 * "PATCH1/8", "v2PATCH1/4".  Returns 0 when a piece is not a tag piece
 * ("net-next", "v4l2", "5.10"): the word is then a subsystem or branch
 * name and counts for nothing.
 */
static int tag_word(struct tag_info *ti, const char *w, size_t n)
{
	struct tag_info t = *ti;
	size_t pos = 0, k;
	int v, pieces = 0;

	while (pos < n) {
		int c = (unsigned char)w[pos];

		if (c == '-' && pieces) {
			pos++;
			continue;
		}
		if ((k = keyword_at(w, n, pos, "PATCHSET")) ||
		    (k = keyword_at(w, n, pos, "PATCHES")) ||
		    (k = keyword_at(w, n, pos, "PATCH"))) {
			t.has_patch = 1;
		} else if ((k = keyword_at(w, n, pos, "RFC"))) {
			t.has_patch = 1;
			t.rfc = 1;
		} else if ((k = keyword_at(w, n, pos, "RESEND"))) {
			t.resend = 1;
		} else if ((c == 'v' || c == 'V') && pos + 1 < n &&
			   is_digit((unsigned char)w[pos + 1])) {
			/* vN, "v3.1" counting as 3 */
			k = pos + 1;
			v = number_at(w, n, &k);
			if (v < 0)
				return 0;
			if (k < n && w[k] == '.') {
				k++;
				while (k < n && is_digit((unsigned char)w[k]))
					k++;
			}
			if (k < n && w[k] != '-' &&
			    !is_alpha((unsigned char)w[k]))
				return 0;
			/* "v4l2": a letter other than a keyword's */
			if (k < n && is_alpha((unsigned char)w[k]) &&
			    !keyword_at(w, n, k, "PATCH") &&
			    !keyword_at(w, n, k, "RFC"))
				return 0;
			if (t.version < 0)
				t.version = v;
			k -= pos;
		} else if (is_digit(c)) {
			int a, b;

			k = pos;
			a = number_at(w, n, &k);
			if (a < 0 || k >= n || w[k] != '/')
				return 0;
			k++;
			b = number_at(w, n, &k);
			if (b < 0 || k < n)
				return 0;
			if (!t.has_counter) {
				t.has_counter = 1;
				t.index = a;
				t.total = b;
			}
			k -= pos;
		} else {
			return 0;
		}
		pos += k;
		pieces++;
	}
	*ti = t;
	return pieces > 0;
}

static int all_digits(const char *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!is_digit((unsigned char)w[i]))
			return 0;
	return n > 0;
}

/* The next word of p[0..len) from *pos, split at blanks and commas. */
static int next_word(const char *p, size_t len, size_t *pos, const char **w,
		     size_t *n)
{
	size_t i = *pos;

	while (i < len && is_sep((unsigned char)p[i]))
		i++;
	if (i >= len)
		return 0;
	*w = p + i;
	while (i < len && !is_sep((unsigned char)p[i]))
		i++;
	*n = (size_t)(p + i - *w);
	*pos = i;
	return 1;
}

/*
 * Read the words of one bracket into ti (which may hold what an earlier
 * bracket of the same tag said).  Besides git's "vN" and "N/M", the
 * counter may be Mercurial patchbomb's "N of M", and words may be
 * separated by commas ("[PATCH,1/2]", "[PATCH, net-next, v6, 2/2]").
 */
static void read_bracket(struct tag_info *ti, const char *p, size_t len)
{
	size_t pos = 0, save;
	const char *w, *w2, *w3;
	size_t n, n2, n3;

	ti->all_known = 1;
	while (next_word(p, len, &pos, &w, &n)) {
		save = pos;
		if (all_digits(w, n) && next_word(p, len, &pos, &w2, &n2) &&
		    mem_eq_icase(w2, n2, "of") &&
		    next_word(p, len, &pos, &w3, &n3) && all_digits(w3, n3)) {
			int a, b;
			size_t k = 0, k2 = 0;

			a = number_at(w, n, &k);
			b = number_at(w3, n3, &k2);
			if (a >= 0 && b >= 0 && !ti->has_counter) {
				ti->has_counter = 1;
				ti->index = a;
				ti->total = b;
			}
			if (a < 0 || b < 0)
				ti->all_known = 0;
			continue;
		}
		pos = save;
		if (!tag_word(ti, w, n))
			ti->all_known = 0;
	}
}

static void classify_tag(struct tag_info *ti, const char *p, size_t len)
{
	memset(ti, 0, sizeof(*ti));
	ti->version = -1;
	read_bracket(ti, p, len);
	ti->is_tag = ti->has_patch || ti->has_counter;
}

/* What a tag without a counter or a version number means: 1/1, v1. */
static void tag_defaults(struct tag_info *ti)
{
	if (!ti->has_counter) {
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

/* Brackets after the tag that hold only tag words: "[PATCH] [RFC,1/2]". */
#define SUBJECT_EXTRA_BRACKETS 3

static void take_tag(struct subject *out, struct tag_info *ti,
		     const char *inner, size_t inner_len, const char *rest,
		     const char *end)
{
	char *prefix = collapse(inner, inner_len);
	int extra;

	for (extra = 0; extra < SUBJECT_EXTRA_BRACKETS; extra++) {
		const char *q = rest, *close;
		struct tag_info more = *ti;
		char *part, *joined;

		while (q < end && is_space((unsigned char)*q))
			q++;
		if (q >= end || *q != '[' || !find_close(q + 1, end, &close))
			break;
		read_bracket(&more, q + 1, (size_t)(close - q - 1));
		if (!more.all_known || close == q + 1)
			break;
		*ti = more;
		part = collapse(q + 1, (size_t)(close - q - 1));
		joined = xasprintf("%s %s", prefix, part);
		free(prefix);
		free(part);
		prefix = joined;
		rest = close + 1;
	}
	tag_defaults(ti);
	/* "[Patch]: Fix ...": the colon belongs to the tag, not the title */
	{
		const char *q = rest;

		while (q < end && is_space((unsigned char)*q))
			q++;
		if (q < end && *q == ':')
			rest = q + 1;
		else if (end - q >= 3 && !memcmp(q, "\xef\xbc\x9a", 3))
			rest = q + 3;
	}
	out->has_tag = 1;
	out->prefix = prefix;
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
