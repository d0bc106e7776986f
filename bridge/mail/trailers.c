#include "mail/trailers.h"
#include "util/err.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Known types: the word before "-by", lower case, and its canonical form. */
static const struct {
	const char *word;
	const char *canon;
} known[] = {
	{ "acked", "Acked-by" },
	{ "reviewed", "Reviewed-by" },
	{ "tested", "Tested-by" },
	{ "nacked", "Nacked-by" },
	{ "reported", "Reported-by" },
	{ "suggested", "Suggested-by" },
	{ "signed-off", "Signed-off-by" },
	{ "co-developed", "Co-developed-by" },
	{ "requested", "Requested-by" },
	{ "debugged", "Debugged-by" },
	{ "bisected", "Bisected-by" },
	{ "helped", "Helped-by" },
	{ "originally", "Originally-by" },
	{ "analyzed", "Analyzed-by" },
	{ "analysed", "Analyzed-by" },
};
#define NR_KNOWN (sizeof(known) / sizeof(known[0]))

/* Variants that are spelt differently on purpose, not typos. */
static const struct {
	const char *word;
	const char *canon;
} aliases[] = {
	{ "ack", "Acked-by" },	       { "nack", "Nacked-by" },
	{ "nak", "Nacked-by" },	       { "naked", "Nacked-by" },
	{ "nak'd", "Nacked-by" },      { "signed-of", "Signed-off-by" },
	{ "signed", "Signed-off-by" },
};
#define NR_ALIASES (sizeof(aliases) / sizeof(aliases[0]))

void trailer_list_init(struct trailer_list *l)
{
	l->v = NULL;
	l->nr = 0;
	l->alloc = 0;
}

void trailer_list_release(struct trailer_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++) {
		free(l->v[i].name);
		free(l->v[i].email);
		free(l->v[i].raw);
	}
	free(l->v);
	trailer_list_init(l);
}

int trailer_is_approval(const char *type)
{
	return type &&
	       (!strcmp(type, "Acked-by") || !strcmp(type, "Reviewed-by") ||
		!strcmp(type, "Tested-by"));
}

int trailer_is_nak(const char *type)
{
	return type && !strcmp(type, "Nacked-by");
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_blank(int c)
{
	return c == ' ' || c == '\t';
}

/* Optimal string alignment distance, small strings only. */
static size_t edit_distance(const char *a, size_t n, const char *b, size_t m)
{
	size_t d[24][24], i, j, best;

	if (n >= 24 || m >= 24)
		return 99;
	for (i = 0; i <= n; i++)
		d[i][0] = i;
	for (j = 0; j <= m; j++)
		d[0][j] = j;
	for (i = 1; i <= n; i++) {
		for (j = 1; j <= m; j++) {
			size_t cost = a[i - 1] != b[j - 1];

			best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < best)
				best = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[n][m];
}

/* Map one lower-case word (e.g. "reviwed") to a canonical type. */
static const char *word_type(const char *w, size_t n, int *fuzzy)
{
	size_t i, d, best = 99, limit;
	const char *canon = NULL;
	int tie = 0;

	*fuzzy = 0;
	for (i = 0; i < NR_KNOWN; i++)
		if (strlen(known[i].word) == n && !memcmp(known[i].word, w, n))
			return known[i].canon;
	for (i = 0; i < NR_ALIASES; i++) {
		if (strlen(aliases[i].word) == n &&
		    !memcmp(aliases[i].word, w, n)) {
			*fuzzy = 1;
			return aliases[i].canon;
		}
	}
	if (n < 5)
		return NULL;
	limit = n >= 8 ? 2 : 1;
	for (i = 0; i < NR_KNOWN; i++) {
		d = edit_distance(w, n, known[i].word, strlen(known[i].word));
		if (d < best) {
			best = d;
			canon = known[i].canon;
			tie = 0;
		} else if (d == best && canon != known[i].canon) {
			tie = 1;
		}
	}
	if (best > limit || tie)
		return NULL;
	*fuzzy = 1;
	return canon;
}

/*
 * Split a written tag into canonical types.  tag is lower-cased, without
 * the final "by".  Returns how many types were stored in types[].
 */
static size_t tag_types(const char *tag, size_t n, const char **types,
			size_t max, int *irregular)
{
	char w[64];
	size_t i, start, nr = 0, len;
	const char *t, *sep;
	int fuzzy;

	if (n == 0 || n >= sizeof(w))
		return 0;
	memcpy(w, tag, n);
	w[n] = '\0';

	/* "acked-for-mfd" -> "acked": a subsystem-qualified tag */
	sep = strstr(w, "-for-");
	if (sep && sep > w) {
		n = (size_t)(sep - w);
		w[n] = '\0';
		*irregular = 1;
	}
	t = word_type(w, n, &fuzzy);
	if (t) {
		*irregular |= fuzzy;
		types[0] = t;
		return 1;
	}
	/* "reviewed-and-tested", "reported-and-tested" */
	start = 0;
	for (i = 0; i <= n && nr < max; i++) {
		if (i < n &&
		    !(w[i] == '-' && i + 5 <= n && !memcmp(w + i, "-and-", 5)))
			continue;
		len = i - start;
		t = word_type(w + start, len, &fuzzy);
		if (!t)
			return 0;
		types[nr++] = t;
		start = i + 5;
		i += 4;
	}
	if (nr < 2)
		return 0;
	*irregular = 1;
	return nr;
}

const char *trailer_type_canonical(const char *tag, size_t len, int *irregular)
{
	char w[64];
	const char *types[4];
	size_t i, n;

	*irregular = 0;
	if (len < 3 || len >= sizeof(w))
		return NULL;
	for (i = 0; i < len; i++)
		w[i] = (char)lower((unsigned char)tag[i]);
	if (len > 3 && !memcmp(w + len - 3, "-by", 3)) {
		n = len - 3;
	} else if (len > 3 && !memcmp(w + len - 3, " by", 3)) {
		n = len - 3;
		*irregular = 1;
	} else if (len > 2 && !memcmp(w + len - 2, "by", 2)) {
		n = len - 2;
		*irregular = 1;
	} else {
		return NULL;
	}
	if (tag_types(w, n, types, 4, irregular) != 1)
		return NULL;
	if (strlen(types[0]) != len || memcmp(types[0], tag, len))
		*irregular = 1;
	return types[0];
}

/* ------------------------------------------------------------------ */

/* The line with no-break and other odd spaces made plain. */
static size_t normalise(char *out, size_t cap, const char *p, size_t len)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, o = 0;

	while (i < len && o + 1 < cap) {
		if (s[i] == 0xc2 && i + 1 < len && s[i + 1] == 0xa0) {
			out[o++] = ' '; /* U+00A0 */
			i += 2;
		} else if (s[i] == 0xe2 && i + 2 < len && s[i + 1] == 0x80 &&
			   (s[i + 2] == 0x8b || s[i + 2] == 0x8c ||
			    s[i + 2] == 0x8d)) {
			i += 3; /* zero-width space / (non-)joiner */
		} else if (s[i] == 0xe2 && i + 2 < len && s[i + 1] == 0x80 &&
			   (s[i + 2] == 0x90 || s[i + 2] == 0x91)) {
			out[o++] = '-'; /* U+2010, U+2011 hyphens */
			i += 3;
		} else if (s[i] == 0xef && i + 2 < len && s[i + 1] == 0xbc &&
			   s[i + 2] == 0x9a) {
			out[o++] = ':'; /* full-width colon */
			i += 3;
		} else if (s[i] == 0xe3 && i + 2 < len && s[i + 1] == 0x80 &&
			   s[i + 2] == 0x80) {
			out[o++] = ' '; /* ideographic space */
			i += 3;
		} else if (s[i] == '\t' || s[i] == '\0' || s[i] == '\r') {
			out[o++] = ' ';
			i++;
		} else {
			out[o++] = (char)s[i++];
		}
	}
	out[o] = '\0';
	return o;
}

static int valid_email(const char *p, size_t len)
{
	const char *at = memchr(p, '@', len);
	size_t i;

	if (!at || at == p || at == p + len - 1)
		return 0;
	if (memchr(at + 1, '@', (size_t)(p + len - at - 1)))
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c <= ' ' || c == '<' || c == '>' || c == '(' || c == ')' ||
		    c == ',' || c == ';' || c == '"' || c == '[' || c == ']')
			return 0;
	}
	/* the domain needs a dot that is neither first nor last */
	{
		const char *d = at + 1;
		size_t dl = (size_t)(p + len - d);
		const char *dot = memchr(d, '.', dl);

		if (!dot || dot == d || d[dl - 1] == '.')
			return 0;
	}
	return 1;
}

/* Strip blanks, quotes and stray punctuation around a name. */
static void clean_name(const char **p, size_t *len)
{
	int changed = 1;

	while (changed) {
		changed = 0;
		mem_trim(p, len);
		while (*len && strchr("\"',;", (*p)[*len - 1])) {
			(*len)--;
			changed = 1;
		}
		while (*len && strchr("\"'", **p)) {
			(*p)++;
			(*len)--;
			changed = 1;
		}
	}
}

struct value {
	const char *name;
	size_t name_len;
	const char *email; /* NULL when none or broken */
	size_t email_len;
	int broken; /* an address was attempted but is unusable */
};

/* Does a name-only value look like a person (or an URL), not prose? */
static int plausible_name(const char *p, size_t len)
{
	size_t i, words = 0;
	int in_word = 0;

	if (!len || len > 80)
		return 0;
	if (len > 7 && (!memcmp(p, "http://", 7) || !memcmp(p, "https://", 8)))
		return 1;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == ' ') {
			in_word = 0;
			continue;
		}
		if (!in_word)
			words++;
		in_word = 1;
		if (c == '?' || c == '!' || c == ':' || c == '/' || c == '=' ||
		    c == '{' || c == '}' || c == '*')
			return 0;
	}
	if (words > 5)
		return 0;
	/* prose ends with a full stop after several words */
	if (words > 2 && p[len - 1] == '.')
		return 0;
	/* a lower-case first word is prose ("tags", "is missing") */
	if (p[0] >= 'a' && p[0] <= 'z')
		return 0;
	return 1;
}

/*
 * Parse "Name <email>" and its broken relatives.  strict: inside a
 * sentence, only a well-formed <email> is accepted.
 */
static int parse_value(struct value *v, const char *p, size_t len, int strict)
{
	const char *lt, *gt, *at, *q, *end, *tok;
	size_t n;

	memset(v, 0, sizeof(*v));
	mem_trim(&p, &len);
	if (!len)
		return 0;
	end = p + len;
	lt = memchr(p, '<', len);
	if (!lt) {
		const char *lb = memchr(p, '[', len);

		/* "Name [email]" */
		if (lb && memchr(lb, ']', (size_t)(end - lb)) &&
		    memchr(lb, '@', (size_t)(end - lb)))
			lt = lb;
	}
	if (lt) {
		char close = *lt == '<' ? '>' : ']';

		gt = memchr(lt, close, (size_t)(end - lt));
		q = lt + 1;
		if (gt) {
			n = (size_t)(gt - q);
		} else {
			/* "<aaron.f.brown": the address was cut off */
			for (n = 0; q + n < end && q[n] != ' '; n++)
				;
		}
		v->name = p;
		v->name_len = (size_t)(lt - p);
		clean_name(&v->name, &v->name_len);
		mem_trim(&q, &n);
		if (n > 7 && mem_eq_icase(q, 7, "mailto:")) {
			q += 7;
			n -= 7;
		}
		if (gt && valid_email(q, n)) {
			v->email = q;
			v->email_len = n;
		} else {
			if (strict)
				return 0;
			v->broken = 1;
		}
		if (!v->email && !v->name_len)
			return 0;
		return 1;
	}
	if (strict)
		return 0;
	/* a bare address somewhere: "user@host", "user@host (Name)" */
	at = memchr(p, '@', len);
	if (at) {
		tok = at;
		while (tok > p && tok[-1] != ' ')
			tok--;
		q = at;
		while (q < end && *q != ' ')
			q++;
		n = (size_t)(q - tok);
		{
			const char *e = tok;
			size_t en = n;

			while (en && strchr("(),;", e[en - 1]))
				en--;
			while (en && strchr("(", *e)) {
				e++;
				en--;
			}
			if (en > 7 && mem_eq_icase(e, 7, "mailto:")) {
				e += 7;
				en -= 7;
			}
			if (!valid_email(e, en))
				return 0;
			v->email = e;
			v->email_len = en;
		}
		/* the name is what is left, in parentheses or before */
		if (tok > p) {
			v->name = p;
			v->name_len = (size_t)(tok - p);
		} else if (q < end) {
			v->name = q;
			v->name_len = (size_t)(end - q);
		}
		if (v->name) {
			while (v->name_len && strchr(" ()", *v->name)) {
				v->name++;
				v->name_len--;
			}
			while (v->name_len &&
			       strchr(" ()", v->name[v->name_len - 1]))
				v->name_len--;
			clean_name(&v->name, &v->name_len);
		}
		return 1;
	}
	/* a name alone: "Reviewed-by: Joel" */
	q = p;
	n = len;
	/* drop a trailing note in parentheses */
	{
		const char *paren = memchr(q, '(', n);

		if (paren && paren > q)
			n = (size_t)(paren - q);
	}
	clean_name(&q, &n);
	if (!plausible_name(q, n))
		return 0;
	v->name = q;
	v->name_len = n;
	v->broken = 1;
	return 1;
}

static int add(struct trailer_list *out, const char *type,
	       const struct value *v, unsigned flags, const char *raw,
	       size_t raw_len)
{
	struct trailer *t;

	if (out->nr >= TRAILERS_MAX)
		return err_set(PB_ELIMIT, "more than %d trailers",
			       TRAILERS_MAX);
	ALLOC_GROW(out->v, out->nr + 1, out->alloc);
	t = &out->v[out->nr++];
	t->type = type;
	t->name = xstrndup(v->name ? v->name : "", v->name ? v->name_len : 0);
	t->email = v->email ? xstrndup(v->email, v->email_len) : NULL;
	t->scope = TRAILER_SCOPE_PATCH;
	t->flags = flags | (v->email ? 0 : TRAILER_F_NO_EMAIL);
	mem_trim(&raw, &raw_len);
	t->raw = xstrndup(raw, raw_len);
	return 0;
}

/* A tag at the start of the normalised line s[0..n). */
static int line_start_tag(struct trailer_list *out, const char *s, size_t n,
			  const char *raw, size_t raw_len)
{
	const char *types[4];
	const char *tag, *p = s, *end = s + n, *val;
	char low[64];
	size_t tl, nr, i, k;
	int irregular = 0, rc, added = 0, colon;
	struct value v;

	while (p < end && is_blank(*p))
		p++;
	tag = p;
	while (p < end && (is_alpha(*p) || *p == '-' || *p == '\''))
		p++;
	/* "Reviewed by:": one space inside the tag */
	if (p + 3 < end && *p == ' ' && lower(p[1]) == 'b' &&
	    lower(p[2]) == 'y' && (p[3] == ':' || p[3] == ' '))
		p += 3;
	tl = (size_t)(p - tag);
	if (tl < 4 || tl >= sizeof(low))
		return 0;
	for (i = 0; i < tl; i++)
		low[i] = (char)lower((unsigned char)tag[i]);
	while (p < end && is_blank(*p))
		p++;
	colon = p < end && *p == ':';
	if (colon)
		p++;
	val = p;

	if (tl > 3 && (!memcmp(low + tl - 3, "-by", 3) ||
		       !memcmp(low + tl - 3, " by", 3))) {
		k = tl - 3;
		if (low[tl - 3] == ' ')
			irregular = 1;
	} else if (tl > 2 && !memcmp(low + tl - 2, "by", 2)) {
		k = tl - 2; /* "Ackedby" */
		irregular = 1;
	} else {
		return 0;
	}
	nr = tag_types(low, k, types, 4, &irregular);
	if (!nr)
		return 0;
	if (nr == 1 && (strlen(types[0]) != tl || memcmp(types[0], tag, tl)))
		irregular = 1;
	/* without a colon only "Tag Name <email>" is taken */
	if (!parse_value(&v, val, (size_t)(end - val), !colon))
		return 0;
	if (!colon)
		irregular = 1;
	for (i = 0; i < nr; i++) {
		rc = add(out, types[i], &v, irregular ? TRAILER_F_IRREGULAR : 0,
			 raw, raw_len);
		if (rc)
			return rc;
		added++;
	}
	return added;
}

/* The word before position w in s, lower-cased into out. */
static size_t word_before(char *out, size_t cap, const char *s, const char *w)
{
	const char *e = w, *b;
	size_t n, i;

	while (e > s && e[-1] == ' ')
		e--;
	b = e;
	while (b > s && is_alpha(b[-1]))
		b--;
	n = (size_t)(e - b);
	if (!n || n >= cap)
		return 0;
	for (i = 0; i < n; i++)
		out[i] = (char)lower((unsigned char)b[i]);
	out[n] = '\0';
	return n;
}

/*
 * "Series is Acked-by: Name <email>", "have my Reviewed-by: ...",
 * "LGTM, Reviewed-by: ...": a known tag inside a sentence, after a word
 * that makes it the author's own or opening a clause ("Please add
 * Acked-by: X <x@y>" asks for someone else's).
 */
static int sentence_tag(struct trailer_list *out, const char *s, size_t n,
			const char *raw, size_t raw_len)
{
	static const char *const owners[] = {
		"is", "are", "be", "my", "it", "also", NULL,
	};
	const char *const *o;
	const char *end = s + n, *hit, *w, *val, *stop;
	char low[64], prev[16];
	size_t wl, i;
	const char *type;
	int fuzzy, rc, ok;
	struct value v;

	for (hit = s; hit + 4 <= end; hit++) {
		if (hit[0] != '-' || lower((unsigned char)hit[1]) != 'b' ||
		    lower((unsigned char)hit[2]) != 'y' || hit[3] != ':')
			continue;
		w = hit;
		while (w > s && (is_alpha(w[-1]) || w[-1] == '-'))
			w--;
		wl = (size_t)(hit - w);
		if (!wl || wl >= sizeof(low) || w == s)
			continue;
		for (i = 0; i < wl; i++)
			low[i] = (char)lower((unsigned char)w[i]);
		type = word_type(low, wl, &fuzzy);
		if (!type || fuzzy)
			continue;
		ok = 0;
		if (word_before(prev, sizeof(prev), s, w))
			for (o = owners; *o; o++)
				if (!strcmp(prev, *o))
					ok = 1;
		/* "LGTM, Reviewed-by: ...": the tag opens a clause */
		{
			const char *q = w;

			while (q > s && q[-1] == ' ')
				q--;
			if (q > s && strchr(",;.:!-)", q[-1]))
				ok = 1;
		}
		if (!ok)
			continue;
		val = hit + 4;
		/* the value ends at the closing '>' */
		stop = memchr(val, '>', (size_t)(end - val));
		if (!stop)
			continue;
		if (!parse_value(&v, val, (size_t)(stop + 1 - val), 1))
			continue;
		rc = add(out, type, &v,
			 TRAILER_F_IRREGULAR | TRAILER_F_IN_SENTENCE, raw,
			 raw_len);
		return rc ? rc : 1;
	}
	return 0;
}

int trailers_parse_line(struct trailer_list *out, const char *line, size_t len)
{
	char norm[TRAILER_LINE_MAX + 1];
	size_t n;
	int rc;

	if (len > TRAILER_LINE_MAX)
		return 0;
	n = normalise(norm, sizeof(norm), line, len);
	rc = line_start_tag(out, norm, n, line, len);
	if (rc)
		return rc;
	return sentence_tag(out, norm, n, line, len);
}

/* ------------------------------------------------------------------ */

/*
 * "For the series:", "Series:", "for the whole patchset", "for all
 * patches", "to both patches": the author gives the trailer to the
 * whole series.  "for patches 1-3" and "the rest of the series looks
 * fine" do not.
 */
static int says_series(const char *p, size_t len)
{
	char w[16][16];
	size_t nw = 0, i, j, n;

	mem_trim(&p, &len);
	for (i = 0; i < len && nw < 16;) {
		while (i < len && !is_alpha((unsigned char)p[i]))
			i++;
		for (n = 0; i < len && is_alpha((unsigned char)p[i]); i++)
			if (n + 1 < sizeof(w[0]))
				w[nw][n++] = (char)lower((unsigned char)p[i]);
		if (n) {
			w[nw][n] = '\0';
			nw++;
		}
	}
	if (nw && !strcmp(w[0], "series"))
		return 1; /* "Series:", "Series is Acked-by: ..." */
	for (i = 0; i < nw; i++) {
		int whole = !strcmp(w[i], "series") ||
			    !strcmp(w[i], "patchset") || !strcmp(w[i], "set");
		int patches = !strcmp(w[i], "patches");
		int linked = 0, all = 0;

		if (!whole && !patches)
			continue;
		if (i > 0 && !strcmp(w[i - 1], "whole"))
			return 1;
		for (j = i > 4 ? i - 4 : 0; j < i; j++) {
			if (!strcmp(w[j], "for") || !strcmp(w[j], "to") ||
			    !strcmp(w[j], "on"))
				linked = 1;
			if (!strcmp(w[j], "all") || !strcmp(w[j], "both") ||
			    !strcmp(w[j], "whole") || !strcmp(w[j], "entire"))
				all = 1;
			if (!strcmp(w[j], "of") && !all)
				linked = 0; /* "the rest of the series" */
		}
		if (linked && (whole || all))
			return 1;
	}
	return 0;
}

/* checkpatch (or similar) output pasted into a reply */
static int tool_output_line(const char *p, size_t len)
{
	size_t i;

	mem_trim(&p, &len);
	if (len >= 3 && p[0] == '#') {
		for (i = 1; i < len && p[i] >= '0' && p[i] <= '9'; i++)
			;
		if (i > 1 && i < len && p[i] == ':')
			return 1;
	}
	if (len > 3 && p[0] == '-' && p[1] == ':' && p[2] >= '0' && p[2] <= '9')
		return 1;
	if ((len > 6 && !memcmp(p, "ERROR:", 6)) ||
	    (len > 8 && !memcmp(p, "WARNING:", 8)) ||
	    (len > 6 && !memcmp(p, "CHECK:", 6)))
		return 1;
	if (len > 7 && !memcmp(p, "total: ", 7) &&
	    mem_find(p, len, " errors, ", 9))
		return 1;
	return 0;
}

static int starts_with_sob(const char *p, size_t len)
{
	mem_trim(&p, &len);
	return len > 14 && mem_eq_icase(p, 14, "signed-off-by:");
}

int trailers_scan(struct trailer_list *out, const char *text, size_t len,
		  unsigned flags)
{
	struct scan s;
	const char *line, **lines = NULL;
	size_t n, *lens = NULL, nr = 0, alloc = 0, i, j, before;
	int rc = 0, skip = 0, got;
	size_t para_start = 0, first = out->nr;

	scan_init(&s, text, len);
	while (scan_line(&s, &line, &n)) {
		if (nr == alloc) {
			alloc = alloc ? alloc * 2 : 64;
			lines = xreallocarray(lines, alloc, sizeof(*lines));
			lens = xreallocarray(lens, alloc, sizeof(*lens));
		}
		lines[nr] = line;
		lens[nr] = n;
		nr++;
	}

	for (i = 0; i <= nr && !rc; i++) {
		const char *p = i < nr ? lines[i] : "";
		size_t l = i < nr ? lens[i] : 0;

		mem_trim(&p, &l);
		if (l && i < nr)
			continue;
		/* lines[para_start .. i) is a paragraph */
		skip = 0;
		if (!(flags & TRAILERS_OWN)) {
			for (j = para_start; j < i; j++)
				if (starts_with_sob(lines[j], lens[j]) ||
				    tool_output_line(lines[j], lens[j]))
					skip = 1;
		}
		for (j = para_start; j < i && !skip; j++) {
			before = out->nr;
			got = trailers_parse_line(out, lines[j], lens[j]);
			if (got < 0) {
				rc = got;
				break;
			}
			if (!got)
				continue;
			if (flags & TRAILERS_OWN)
				continue;
			/* scope: this line or the last non-blank before */
			{
				int series = (flags & TRAILERS_SERIES) ||
					     says_series(lines[j], lens[j]);
				size_t k = j;

				while (!series && k > 0 && j - k < 16) {
					const char *q = lines[k - 1];
					size_t ql = lens[k - 1];

					k--;
					mem_trim(&q, &ql);
					/* blank lines and the trailers of the
					 * same block sit between phrase and tag */
					if (!ql || mem_find(q, ql, "-by:", 4) ||
					    mem_find(q, ql, "-By:", 4))
						continue;
					series = says_series(q, ql) && ql < 80;
					break;
				}
				if (series)
					for (; before < out->nr; before++)
						out->v[before].scope =
							TRAILER_SCOPE_SERIES;
			}
		}
		para_start = i + 1;
	}
	if ((flags & TRAILERS_SERIES) && !(flags & TRAILERS_OWN))
		for (i = first; i < out->nr; i++)
			out->v[i].scope = TRAILER_SCOPE_SERIES;
	free(lines);
	free(lens);
	return rc;
}
