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
 * Reply and forward markers as mail clients write them in each locale:
 * Outlook puts its own translation before the subject ("AW:", "SV:",
 * "R:", "RES:", "ΑΠ:", "答复:"), Thunderbird reads the prefixes of
 * mail.reply_prefixes and writes "Re:" or its locale's, Gmail writes
 * "Re:" and "Fwd:".  ASCII letters match in any case; other scripts are
 * listed in the cases clients write.  A weak word ("R", "I", "Ref") is
 * also a word of a title: it counts only when a patch tag or a strong
 * marker follows it, and so does any marker written without a colon
 * ("Re [PATCH]").
 */
enum { MARK_NONE, MARK_REPLY, MARK_FORWARD };

static const struct marker {
	const char *word;
	int kind;
	int weak;
} markers[] = {
	/* English; Outlook's "RE:" */
	{ "re", MARK_REPLY, 0 },
	/* German Outlook AW, Dutch Outlook Antw, German Antwort */
	{ "aw", MARK_REPLY, 0 },
	{ "antw", MARK_REPLY, 0 },
	{ "antwort", MARK_REPLY, 0 },
	/* Swedish, Danish, Norwegian; Finnish Outlook */
	{ "sv", MARK_REPLY, 0 },
	{ "svar", MARK_REPLY, 0 },
	{ "vs", MARK_REPLY, 0 },
	/* Polish, Croatian, Turkish, Latvian, Portuguese, Italian */
	{ "odp", MARK_REPLY, 0 },
	{ "odg", MARK_REPLY, 0 },
	{ "ynt", MARK_REPLY, 0 },
	{ "atb", MARK_REPLY, 0 },
	{ "res", MARK_REPLY, 0 },
	{ "rif", MARK_REPLY, 0 },
	/* French Réf, Rép; Vietnamese Vá */
	{ "r\xc3\xa9\x66", MARK_REPLY, 0 },
	{ "r\xc3\x89\x66", MARK_REPLY, 0 },
	{ "r\xc3\xa9p", MARK_REPLY, 0 },
	{ "r\xc3\x89p", MARK_REPLY, 0 },
	{ "v\xc3\xa1", MARK_REPLY, 0 },
	{ "v\xc3\x81", MARK_REPLY, 0 },
	/* Greek Outlook ΑΠ, Απ; Greek ΣΧΕΤ */
	{ "\xce\xb1\xcf\x80", MARK_REPLY, 0 },
	{ "\xce\x91\xcf\x80", MARK_REPLY, 0 },
	{ "\xce\x91\xce\xa0", MARK_REPLY, 0 },
	{ "\xcf\x83\xcf\x87\xce\xb5\xcf\x84", MARK_REPLY, 0 },
	{ "\xce\xa3\xcf\x87\xce\xb5\xcf\x84", MARK_REPLY, 0 },
	{ "\xce\xa3\xce\xa7\xce\x95\xce\xa4", MARK_REPLY, 0 },
	/* Russian Отв, Ответ */
	{ "\xd0\xbe\xd1\x82\xd0\xb2", MARK_REPLY, 0 },
	{ "\xd0\x9e\xd1\x82\xd0\xb2", MARK_REPLY, 0 },
	{ "\xd0\x9e\xd0\xa2\xd0\x92", MARK_REPLY, 0 },
	{ "\xd0\xbe\xd1\x82\xd0\xb2\xd0\xb5\xd1\x82", MARK_REPLY, 0 },
	{ "\xd0\x9e\xd1\x82\xd0\xb2\xd0\xb5\xd1\x82", MARK_REPLY, 0 },
	{ "\xd0\x9e\xd0\xa2\xd0\x92\xd0\x95\xd0\xa2", MARK_REPLY, 0 },
	/* Chinese Outlook, Foxmail, Coremail 答复, 回复, 回覆, 答覆;
	 * Japanese 返信 */
	{ "\xe7\xad\x94\xe5\xa4\x8d", MARK_REPLY, 0 },
	{ "\xe5\x9b\x9e\xe5\xa4\x8d", MARK_REPLY, 0 },
	{ "\xe5\x9b\x9e\xe8\xa6\x86", MARK_REPLY, 0 },
	{ "\xe7\xad\x94\xe8\xa6\x86", MARK_REPLY, 0 },
	{ "\xe8\xbf\x94\xe4\xbf\xa1", MARK_REPLY, 0 },
	/* weak: Italian Outlook's "R:" and "R: the R language"; "Ref:" */
	{ "r", MARK_REPLY, 1 },
	{ "ref", MARK_REPLY, 1 },
	/* forwards: Gmail, Thunderbird, Outlook; German, French,
	 * Portuguese, Spanish, Dutch Outlook */
	{ "fwd", MARK_FORWARD, 0 },
	{ "fw", MARK_FORWARD, 0 },
	{ "wg", MARK_FORWARD, 0 },
	{ "tr", MARK_FORWARD, 0 },
	{ "enc", MARK_FORWARD, 0 },
	{ "rv", MARK_FORWARD, 0 },
	{ "doorst", MARK_FORWARD, 0 },
	/* Chinese 转发, 轉寄 */
	{ "\xe8\xbd\xac\xe5\x8f\x91", MARK_FORWARD, 0 },
	{ "\xe8\xbd\x89\xe5\xaf\x84", MARK_FORWARD, 0 },
	/* weak: Italian Outlook's "I:" and "I: have a question" */
	{ "i", MARK_FORWARD, 1 },
	{ NULL, MARK_NONE, 0 },
};

/* The length of a blank at p: space, tab, U+00A0 or U+202F (French
 * Outlook writes "RE :" with a no-break space before the colon). */
static size_t blank_at(const struct scan *s)
{
	size_t n = (size_t)(s->end - s->p);

	if (n && (*s->p == ' ' || *s->p == '\t'))
		return 1;
	if (n >= 2 && !memcmp(s->p, "\xc2\xa0", 2))
		return 2;
	if (n >= 3 && !memcmp(s->p, "\xe2\x80\xaf", 3))
		return 3;
	return 0;
}

static void skip_blanks(struct scan *s)
{
	size_t k;

	while ((k = blank_at(s)))
		s->p += k;
}

static int take_colon(struct scan *s)
{
	return scan_char(s, ':') || scan_lit(s, "\xef\xbc\x9a"); /* ： */
}

/*
 * Consume a marker's tail: an optional "[N]", "^N" or "(N)" count,
 * blanks, then a colon (ASCII or full-width).  *colon says whether the
 * colon was there; without it only the count is taken.  0 when what
 * follows the word is not a marker's tail ("Regression", "Ответить").
 */
static int marker_tail(struct scan *s, int *colon)
{
	struct scan t = *s;
	uint64_t n;
	int c = scan_eof(&t) ? 0 : scan_peek(&t);

	if (scan_char(&t, '[')) {
		if (!scan_u64(&t, SUBJECT_NUM_MAX, &n) || !scan_char(&t, ']'))
			return 0;
	} else if (scan_char(&t, '(')) {
		if (!scan_u64(&t, SUBJECT_NUM_MAX, &n) || !scan_char(&t, ')'))
			return 0;
	} else if (scan_char(&t, '^')) {
		if (!scan_u64(&t, SUBJECT_NUM_MAX, &n))
			return 0;
	} else if (c && c != ':' && !blank_at(&t) &&
		   !(t.end - t.p >= 3 && !memcmp(t.p, "\xef\xbc\x9a", 3))) {
		/* the word goes on: "Regression:", "Svartifact" */
		return 0;
	}
	*s = t;
	skip_blanks(&t);
	*colon = take_colon(&t);
	if (*colon)
		*s = t;
	return 1;
}

/*
 * A marker at the cursor: its kind (cursor moved past it) or MARK_NONE
 * (cursor unchanged); *word_weak when its word is a weak one, *colon
 * when a colon ended it.  The longest word that fits wins ("Antwort"
 * over "Antw").
 */
static int take_marker(struct scan *s, int *word_weak, int *colon)
{
	const struct marker *m, *best = NULL;
	struct scan t, got = *s;
	int c, best_colon = 0;
	size_t best_len = 0;

	for (m = markers; m->word; m++) {
		size_t l = strlen(m->word);

		t = *s;
		if (l <= best_len || !scan_lit_icase(&t, m->word) ||
		    !marker_tail(&t, &c))
			continue;
		best = m;
		best_len = l;
		best_colon = c;
		got = t;
	}
	if (!best)
		return MARK_NONE;
	*s = got;
	*word_weak = best->weak;
	*colon = best_colon;
	return best->kind;
}

/*
 * "[Re]", "[AW:]": a bracket that holds one marker and nothing else; the
 * bracket stands for the colon.  R-help's "[R]" stays weak.
 */
static int bracket_marker(const char *p, const char *close, int *weak)
{
	struct scan t;
	int kind, colon;

	scan_init(&t, p, (size_t)(close - p));
	skip_blanks(&t);
	kind = take_marker(&t, weak, &colon);
	skip_blanks(&t);
	return kind && scan_eof(&t) ? kind : MARK_NONE;
}

struct tag_info {
	int is_tag;
	int version;
	int index, total;
	int rfc, resend;
	int has_patch, has_counter;
	int all_known; /* every word of the bracket is a tag word */
	int branch; /* a "tree:branch" word (a build robot's report) */
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
 * Mercurial patchbomb's counter "N of M", in the forms people type it
 * ("PATCH1 of 3", "1of3", "1 of3"), written as git's "N/M" into out (at
 * least len + 1 bytes): "of" between two numbers, blanks around it or
 * none.  Returns the new length.
 */
static size_t of_to_slash(char *out, const char *p, size_t len)
{
	size_t i = 0, o = 0, k;

	while (i < len) {
		out[o++] = p[i];
		if (!is_digit((unsigned char)p[i++]))
			continue;
		k = i;
		while (k < len && (p[k] == ' ' || p[k] == '\t'))
			k++;
		if (len - k < 2 || !mem_eq_icase(p + k, 2, "of"))
			continue;
		k += 2;
		while (k < len && (p[k] == ' ' || p[k] == '\t'))
			k++;
		if (k < len && is_digit((unsigned char)p[k])) {
			out[o++] = '/';
			i = k;
		}
	}
	out[o] = '\0';
	return o;
}

/* "linux-next:master", "tip:x86/urgent": a robot's tree and branch. */
static int is_branch_word(const char *w, size_t n)
{
	const char *colon = memchr(w, ':', n);

	return colon && colon > w && colon < w + n - 1;
}

/*
 * Read the words of one bracket into ti (which may hold what an earlier
 * bracket of the same tag said).  Besides git's "vN" and "N/M", the
 * counter may be Mercurial patchbomb's "N of M", and words may be
 * separated by commas ("[PATCH,1/2]", "[PATCH, net-next, v6, 2/2]").
 */
static void read_bracket(struct tag_info *ti, const char *p, size_t len)
{
	char *copy = xmalloc(len + 1);
	size_t pos = 0;
	const char *w;
	size_t n;

	len = of_to_slash(copy, p, len);
	p = copy;
	ti->all_known = 1;
	while (next_word(p, len, &pos, &w, &n)) {
		if (is_branch_word(w, n))
			ti->branch = 1;
		if (!tag_word(ti, w, n))
			ti->all_known = 0;
	}
	free(copy);
}

static void classify_tag(struct tag_info *ti, const char *p, size_t len)
{
	memset(ti, 0, sizeof(*ti));
	ti->version = -1;
	read_bracket(ti, p, len);
	/* the kernel test robot's "[linux-next:master 3/5]" counts the
	 * commits of a branch it built: no patch number */
	ti->is_tag = ti->has_patch || (ti->has_counter && !ti->branch);
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

/*
 * Where the title starts after the tag: blanks, colons ("[Patch]: Fix",
 * the colon belongs to the tag), "Re:" and every further bracket
 * ("[media]", "[Set 8]") go, as git mailinfo's cleanup_subject() removes
 * them from the front of the subject (without -k or -b).
 */
static const char *title_start(const char *q, const char *end)
{
	const char *close;

	for (;;) {
		if (q < end && (is_space((unsigned char)*q) || *q == ':'))
			q++;
		else if (end - q >= 3 && !memcmp(q, "\xef\xbc\x9a", 3))
			q += 3;
		else if (end - q > 3 && mem_eq_icase(q, 3, "re:"))
			q += 3;
		else if (q < end && *q == '[' && find_close(q + 1, end, &close))
			q = close + 1;
		else
			return q;
	}
}

/* Brackets after the tag that hold only tag words: "[PATCH] [RFC,1/2]", or
 * a counter among other words. */
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
		if (close == q + 1)
			break;
		if (!more.all_known) {
			/* "[PATCH][for stable 5.10 1/4]": other words, but
			 * the series' counter (patchwork reads it there
			 * too); only that is taken, and no further bracket */
			if (ti->has_counter || !more.has_counter || more.branch)
				break;
			ti->has_counter = 1;
			ti->index = more.index;
			ti->total = more.total;
			extra = SUBJECT_EXTRA_BRACKETS;
		} else {
			*ti = more;
		}
		part = collapse(q + 1, (size_t)(close - q - 1));
		joined = xasprintf("%s %s", prefix, part);
		free(prefix);
		free(part);
		prefix = joined;
		rest = close + 1;
	}
	tag_defaults(ti);
	rest = title_start(rest, end);
	out->has_tag = 1;
	out->prefix = prefix;
	out->version = ti->version;
	out->index = ti->index;
	out->total = ti->total;
	out->rfc = ti->rfc;
	out->resend = ti->resend;
	out->title = collapse(rest, (size_t)(end - rest));
}

/* Apply the marker kinds seen (a bit each) to out. */
static void mark(struct subject *out, unsigned kinds)
{
	if (kinds & (1u << MARK_REPLY))
		out->reply = 1;
	if (kinds & (1u << MARK_FORWARD))
		out->forward = 1;
}

int subject_parse(struct subject *out, const char *text, size_t len)
{
	struct tag_info ti;
	struct scan s;
	const char *close, *p, *end;
	const char *pending = NULL; /* the first weak marker not confirmed */
	unsigned pending_kinds = 0;
	int kind, word_weak, colon, weak;

	subject_init(out);
	if (len > SUBJECT_MAX)
		len = SUBJECT_MAX;
	scan_init(&s, text, len);
	end = s.end;
	for (;;) {
		const char *at;

		skip_space(&s);
		skip_blanks(&s);
		if (scan_eof(&s))
			break;
		at = s.p;
		if (scan_peek(&s) == '[') {
			if (!find_close(s.p + 1, end, &close))
				break;
			classify_tag(&ti, s.p + 1, (size_t)(close - s.p - 1));
			if (ti.is_tag) {
				/* a patch tag confirms the weak markers */
				mark(out, pending_kinds);
				take_tag(out, &ti, s.p + 1,
					 (size_t)(close - s.p - 1), close + 1,
					 end);
				return 0;
			}
			s.p = close + 1;
			kind = bracket_marker(at + 1, close, &weak);
			if (!kind)
				continue; /* a list tag: skip it */
		} else {
			kind = take_marker(&s, &word_weak, &colon);
			if (!kind)
				break;
			weak = word_weak || !colon;
		}
		if (weak) {
			/* an unconfirmed "[R]" is a list tag, skipped */
			if (!pending && *at != '[')
				pending = at;
			pending_kinds |= 1u << kind;
			continue;
		}
		/* a strong marker confirms the weak ones before it */
		mark(out, pending_kinds | 1u << kind);
		pending = NULL;
		pending_kinds = 0;
	}
	/* weak markers nothing confirmed are the title's words */
	if (pending)
		s.p = pending;

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
