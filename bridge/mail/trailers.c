#include "mail/trailers.h"
#include "util/err.h"
#include "util/scan.h"
#include "util/utf8.h"
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

/* Is the lower-case word w[0..n) one of list (NULL-terminated)? */
static int word_listed(const char *w, size_t n, const char *const *list)
{
	for (; *list; list++)
		if (strlen(*list) == n && !memcmp(*list, w, n))
			return 1;
	return 0;
}

/*
 * Words that undo the tag they are written into: "Not-Nacked-by",
 * "Not-Acked-by", "Un-acked-by" say that the person does NOT give it.
 */
static int negating_word(const char *w, size_t n)
{
	static const char *const words[] = {
		"not",	     "non",	"no",	    "un",	  "never",
		"ex",	     "former",	"formerly", "previously", "withdrawn",
		"retracted", "without", "un'",	    NULL,
	};

	return word_listed(w, n, words);
}

/* Does the lower-case word start with a negating prefix ("unacked",
 * "nonacked", "not-acked")?  Such a word is never a typo of a type. */
static int negated_spelling(const char *w, size_t n)
{
	return (n > 2 && !memcmp(w, "un", 2)) ||
	       (n > 3 && !memcmp(w, "non", 3)) ||
	       (n > 3 && !memcmp(w, "not", 3)) ||
	       (n > 3 && !memcmp(w, "no-", 3));
}

/* A last word that is only a typo of a NAK word: not enough to read a
 * prefixed tag as a NAK. */
static int fuzzy_nak_only(const char *w, size_t n)
{
	static const char *const naks[] = {
		"nacked", "naked",  "nak",    "nack",
		"nak'd",  "nak'ed", "nakked", NULL,
	};

	return !word_listed(w, n, naks);
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
	/* "unacked" is one edit from "nacked" but says the opposite */
	if (n < 5 || negated_spelling(w, n))
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
	/*
	 * The NAK family by its last word: "Hard-nacked-by", "Double-Nacked-
	 * by", "Extra-hard-Nacked-by", "Release-Nacked-by".  A negating
	 * word among the others ("Not-Nacked-by") makes it no tag at all.
	 */
	sep = strrchr(w, '-');
	if (sep && sep > w && sep[1]) {
		const char *last = sep + 1;
		size_t ln = n - (size_t)(last - w);

		t = word_type(last, ln, &fuzzy);
		if (t && trailer_is_nak(t) && !fuzzy_nak_only(last, ln)) {
			for (start = 0; start < n;) {
				for (i = start; i < n && w[i] != '-'; i++)
					;
				if (negating_word(w + start, i - start))
					return 0;
				start = i + 1;
			}
			*irregular = 1;
			types[0] = t;
			return 1;
		}
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
		} else if (s[i] == '&' && i + 3 < len &&
			   (!memcmp(s + i, "&lt;", 4) ||
			    !memcmp(s + i, "&gt;", 4))) {
			/* webmail's text of an HTML trailer (QQMail,
			 * Coremail): "Name &lt;a@b.c&gt;" */
			out[o++] = s[i + 1] == 'l' ? '<' : '>';
			i += 4;
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
	int loose; /* not exactly "Name <email>" or the address alone */
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

/* A character an address token runs over ("mailto:", brackets, quotes
 * and separators end it). */
static int addr_char(unsigned char c)
{
	return c > ' ' && !strchr("<>[]()\",;:", c);
}

static int eq_icase(const char *a, size_t an, const char *b, size_t bn)
{
	size_t i;

	if (an != bn)
		return 0;
	for (i = 0; i < an; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return 0;
	return 1;
}

/*
 * The one address in p[0..len).  Mailers write it more than once:
 * HTML-to-text conversion (Outlook, Exchange) makes "a@b.c<mailto:a@b.c>"
 * of a link, Outlook's header style "a@b.c [mailto:a@b.c]".  Every
 * well-formed a@b token there must be the same address (ASCII case
 * ignored); two different ones are ambiguous and give none.  Returns 1
 * with the address set, 0 when there is none or they differ.
 */
static int one_address(const char **e, size_t *en, const char *p, size_t len)
{
	const char *end = p + len, *at, *q, *b, *a;
	int found = 0;

	for (q = p; q < end && (at = memchr(q, '@', (size_t)(end - q)));
	     q = at + 1) {
		b = at;
		while (b > p && addr_char((unsigned char)b[-1]))
			b--;
		a = at + 1;
		while (a < end && addr_char((unsigned char)*a))
			a++;
		/* a full stop ending a sentence is no part of the domain */
		while (a > at + 1 && a[-1] == '.')
			a--;
		if (!valid_email(b, (size_t)(a - b)))
			continue;
		if (found && !eq_icase(*e, *en, b, (size_t)(a - b)))
			return 0;
		if (!found) {
			*e = b;
			*en = (size_t)(a - b);
		}
		found = 1;
	}
	return found;
}

/*
 * The end of the bracketed group opening at lt: the '>' (or ']') that
 * closes it, counting nested ones ("<a@b.c<mailto:a@b.c>>"); NULL when
 * it is never closed.
 */
static const char *group_end(const char *lt, const char *end)
{
	char open = *lt, close = open == '<' ? '>' : ']';
	const char *q;
	int depth = 0;

	for (q = lt; q < end; q++) {
		if (*q == open)
			depth++;
		else if (*q == close && --depth == 0)
			return q;
	}
	return NULL;
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
	at = memchr(p, '@', len);
	/* "a@b.c<mailto:a@b.c>": the address comes before its brackets */
	if (lt && at && at < lt)
		lt = NULL;
	if (!lt && at) {
		const char *lb = memchr(p, '[', len);

		/* "Name [email]", Outlook's "Name [mailto:email]" */
		if (lb && lb < at && memchr(lb, ']', (size_t)(end - lb)))
			lt = lb;
	}
	if (lt) {
		gt = group_end(lt, end);
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
		if (!gt && *lt == '<' && !strict && q + n == end &&
		    valid_email(q, n)) {
			/*
			 * "Name <a@b.c" and the line ends: Outlook lost the
			 * closing '>'.  Nothing follows the address, so it
			 * reads one way only (docs/SECURITY.md, "What the
			 * bridge acts on").
			 */
			v->email = q;
			v->email_len = n;
		} else if (gt && one_address(&v->email, &v->email_len, q, n)) {
			/* anything after the address: a remark, a scope, a
			 * second address - a value that reads two ways */
			const char *t = gt + 1;

			while (t < end && *t == ' ')
				t++;
			if (t < end || *lt != '<')
				v->loose = 1;
		} else {
			v->email = NULL;
			if (strict)
				return 0;
			v->broken = 1;
		}
		if (!v->email && !v->name_len)
			return 0;
		if (!v->email)
			v->loose = 1;
		return 1;
	}
	if (strict)
		return 0;
	/* a bare address somewhere: "user@host", "user@host (Name)",
	 * "user@host<mailto:user@host>", "user@host [mailto:user@host]" */
	if (at) {
		tok = at;
		while (tok > p && tok[-1] != ' ')
			tok--;
		q = at;
		while (q < end && *q != ' ')
			q++;
		n = (size_t)(q - tok);
		if (!one_address(&v->email, &v->email_len, tok, n))
			return 0;
		/* the same address again in brackets: no name */
		while (q < end && *q == ' ')
			q++;
		if (q < end && (*q == '<' || *q == '[')) {
			const char *ge = group_end(q, end), *e2;
			size_t e2n;

			if (ge &&
			    one_address(&e2, &e2n, q + 1,
					(size_t)(ge - q - 1)) &&
			    eq_icase(e2, e2n, v->email, v->email_len))
				q = ge + 1;
		}
		/* the address alone is exact; a name around it is not */
		if (tok > p || q < end)
			v->loose = 1;
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
	v->loose = 1;
	return 1;
}

/*
 * The names and addresses of examples, not of people: "Your Name
 * <you@example.com>", "Foo Bar <foo@bar.com>", "Random J Developer".
 * Instructions quote them ("please add a line like ..."); nobody gives
 * a trailer under such a name.
 */
static int placeholder(const struct value *v)
{
	static const char *const names[] = {
		"your name",
		"your real name",
		"your full name",
		"your name here",
		"my name",
		"name",
		"full name",
		"real name",
		"first last",
		"firstname lastname",
		"first name last name",
		"foo bar",
		"foo",
		"random j developer",
		"random developer",
		"joe developer",
		"joe hacker",
		"a u thor",
		"author name",
		"reviewer name",
		"tester name",
		"your-name",
		"yourname",
		NULL,
	};
	static const char *const locals[] = {
		"you",	      "your",	    "yourname",	  "your.name",
		"your_name",  "your-name",  "youremail",  "your.email",
		"your-email", "your_email", "email",	  "name",
		"user",	      "username",   "foo",	  "me",
		"someone",    "somebody",   "first.last", "firstname.lastname",
		"random",     NULL,
	};
	static const char *const domains[] = {
		"example.com", "example.org", "example.net",
		"email.com",   "domain.com",  "bar.com",
		"foo.com",     "company.com", "developer.example.org",
		"email.addr",  "host.com",    NULL,
	};
	char w[96];
	const char *const *p;
	size_t i, o = 0, at;
	int local = 0;

	/* the name, lower case, blanks collapsed */
	for (i = 0; v->name && i < v->name_len && o + 1 < sizeof(w); i++) {
		char c = (char)lower((unsigned char)v->name[i]);

		if (c == ' ' && (!o || w[o - 1] == ' '))
			continue;
		w[o++] = c == '.' ? ' ' : c;
	}
	while (o && w[o - 1] == ' ')
		o--;
	w[o] = '\0';
	for (p = names; o && *p; p++)
		if (!strcmp(w, *p))
			return 1;
	if (!v->email || v->email_len >= sizeof(w))
		return 0;
	for (i = 0; i < v->email_len; i++)
		w[i] = (char)lower((unsigned char)v->email[i]);
	w[v->email_len] = '\0';
	at = (size_t)(strchr(w, '@') - w);
	for (p = locals; *p; p++)
		if (strlen(*p) == at && !memcmp(w, *p, at))
			local = 1;
	for (p = domains; local && *p; p++)
		if (!strcmp(w + at + 1, *p))
			return 1;
	return 0;
}

static int add(struct trailer_list *out, const char *type,
	       const struct value *v, unsigned flags, const char *raw,
	       size_t raw_len)
{
	struct trailer *t;

	/* A full list still takes a NAK: hundreds of pasted trailers must
	 * not hide the objection written under them. */
	if (out->nr >= TRAILERS_MAX &&
	    (!trailer_is_nak(type) ||
	     out->nr >= TRAILERS_MAX + TRAILERS_NAK_MAX))
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
	if (!parse_value(&v, val, (size_t)(end - val), !colon) ||
	    placeholder(&v))
		return 0;
	if (!colon)
		irregular = 1;
	/* a hidden or direction-changing character anywhere on the line:
	 * what the reader sees may not be what we read */
	if (utf8_has_hidden(raw, raw_len))
		v.loose = 1;
	for (i = 0; i < nr; i++) {
		rc = add(out, types[i], &v,
			 (irregular ? TRAILER_F_IRREGULAR : 0) |
				 (v.loose ? TRAILER_F_LOOSE : 0),
			 raw, raw_len);
		if (rc)
			return rc;
		added++;
	}
	return added;
}

/*
 * Words that put a tag in a sentence in doubt: negation ("You do not have
 * my Acked-by"), holding back ("I am withholding my Acked-by"), a
 * condition or a time to come ("With that fixed, you can have my
 * Acked-by", "Acked-by ... once v3 is out"), a contrast.  A trailer the
 * sender gives is a line of its own; inside a sentence only a plain
 * statement without any of these is read as one.
 */
static int doubting_word(const char *w, size_t n)
{
	static const char *const words[] = {
		"not",	    "no",	   "never",    "nor",	    "without",
		"withhold", "withholding", "withheld", "hold",	    "holding",
		"until",    "till",	   "unless",   "if",	    "once",
		"when",	    "after",	   "before",   "wait",	    "waiting",
		"with",	    "but",	   "however",  "though",    "although",
		"would",    "could",	   "should",   "might",	    "may",
		"cannot",   "yet",	   "later",    "soon",	    "pending",
		"provided", "assuming",	   "except",   "otherwise", "nobody",
		"none",	    "neither",	   "retract",  "withdraw",  "withdrawn",
		"revoke",   "revoked",	   "drop",     "dropped",   "remove",
		"removed",  "like",	   "example",  "e",	    "eg",
		"need",	    "needs",	   NULL,
	};

	if (n > 3 && w[n - 3] == 'n' && w[n - 2] == '\'' && w[n - 1] == 't')
		return 1; /* don't, can't, won't, isn't, haven't */
	return word_listed(w, n, words);
}

/*
 * "Series is Acked-by: Name <email>", "This patch is Acked-by: ...",
 * "Feel free to add my Reviewed-by: ...", "LGTM, Reviewed-by: ...": a
 * known tag inside a sentence.  Read only when
 *  - the tag and a well-formed "Name <email>" end the line (nothing but
 *    a full stop after it: "... until that is fixed" is a condition),
 *  - the words before it in its sentence are a plain statement: "X is",
 *    "X are", "my", or a short clause before a comma ("LGTM,"), with no
 *    word of doubt (doubting_word()).
 * Such a trailer is flagged TRAILER_F_IN_SENTENCE: the approval rules
 * never take it as an approval (git interpret-trailers and b4 read a
 * trailer only on a line of its own); it is shown, not honoured.
 */
static int sentence_tag(struct trailer_list *out, const char *s, size_t n,
			const char *raw, size_t raw_len)
{
	const char *end = s + n, *hit, *w, *val, *stop, *q, *start;
	char low[64], word[32];
	size_t wl, i, words;
	const char *type;
	int fuzzy, rc, ok, clause;
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
		/* the value ends at the closing '>', and so does the line */
		val = hit + 4;
		stop = memchr(val, '>', (size_t)(end - val));
		if (!stop)
			continue;
		for (q = stop + 1; q < end && strchr(" .!", *q); q++)
			;
		if (q < end)
			continue;
		/* the sentence it sits in: from the last full stop before */
		start = w;
		while (start > s && !(strchr(".!?", start[-1]) &&
				      (start == w || start[0] == ' ')))
			start--;
		/* its words: none of doubt; the last one and the clause */
		ok = 0;
		clause = 0;
		words = 0;
		for (q = start; q < w;) {
			while (q < w && !is_alpha((unsigned char)*q) &&
			       *q != '\'') {
				if (strchr(",;:-", *q) && words)
					clause = 1;
				q++;
			}
			if (q >= w)
				break;
			for (wl = 0; q < w && (is_alpha((unsigned char)*q) ||
					       *q == '\'');
			     q++)
				if (wl + 1 < sizeof(word))
					word[wl++] =
						(char)lower((unsigned char)*q);
			word[wl] = '\0';
			if (doubting_word(word, wl))
				goto next;
			words++;
			clause = 0;
		}
		if (words &&
		    (!strcmp(word, "is") || !strcmp(word, "are") ||
		     !strcmp(word, "my")) &&
		    words <= 8)
			ok = 1;
		/* "LGTM, Reviewed-by: ...": the tag opens a short clause */
		if (clause && words <= 4)
			ok = 1;
		if (!ok)
			continue;
		if (!parse_value(&v, val, (size_t)(stop + 1 - val), 1) ||
		    placeholder(&v))
			continue;
		rc = add(out, type, &v,
			 TRAILER_F_IRREGULAR | TRAILER_F_IN_SENTENCE, raw,
			 raw_len);
		return rc ? rc : 1;
next:;
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

/*
 * Scope words after the trailer at line j of the paragraph ending
 * before line end: "Acked-by: X <x@y>" / "for the whole series".  The
 * first line after the paragraph's trailers counts, or a short
 * paragraph of one line right under it.  They say which patches the
 * trailer is for, never whether it is one: in the trailer's own
 * paragraph they make it no trailer block (docs/SECURITY.md).
 */
static int series_after(const char *const *lines, const size_t *lens, size_t nr,
			size_t j, size_t end)
{
	const char *q;
	size_t k, ql;

	for (k = j + 1; k < nr; k++) {
		q = lines[k];
		ql = lens[k];
		mem_trim(&q, &ql);
		if (k < end &&
		    (mem_find(q, ql, "-by:", 4) || mem_find(q, ql, "-By:", 4)))
			continue;
		if (!ql && k == end)
			continue; /* the blank line after the paragraph */
		break;
	}
	if (k >= nr || !ql || ql >= 80 || !says_series(q, ql))
		return 0;
	/* past the paragraph: a paragraph of that one line */
	if (k > end && k + 1 < nr) {
		const char *n1 = lines[k + 1];
		size_t nl = lens[k + 1];

		mem_trim(&n1, &nl);
		if (nl)
			return 0;
	}
	return 1;
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

/*
 * A line that introduces an example rather than the sender's own
 * trailers: "please add a line like:", "in the form:", "e.g.:".  The
 * trailer lines right under it are the example.
 */
int trailers_example_intro(const char *p, size_t len)
{
	/* what introduces an example, not "I like this:" or "Looks good
	 * to me:" */
	static const char *const phrases[] = {
		"e.g",		"for example",	  "for instance",
		"such as",	"something like", "a line like",
		"lines like",	"a tag like",	  "tags like",
		"trailer like", "trailers like",  "in the form",
		"of the form",	"example:",	  NULL,
	};
	const char *const *ph;
	size_t i;

	mem_trim(&p, &len);
	if (!len || len > TRAILER_LINE_MAX)
		return 0;
	/* it introduces what follows: a colon, or "... like (this|so)" */
	if (p[len - 1] != ':' &&
	    !(len >= 4 && mem_eq_icase(p + len - 4, 4, "like")) &&
	    !(len >= 9 && mem_eq_icase(p + len - 9, 9, "like this")) &&
	    !(len >= 7 && mem_eq_icase(p + len - 7, 7, "like so")))
		return 0;
	for (ph = phrases; *ph; ph++) {
		size_t l = strlen(*ph);

		for (i = 0; i + l <= len; i++)
			if (mem_eq_icase(p + i, l, *ph))
				return 1;
	}
	return 0;
}

/* A line that is only an address ("<a@b.c>", "a@b.c",
 * "<a@b.c<mailto:a@b.c>>"): the second half of a wrapped trailer. */
static int address_only(const char *p, size_t len)
{
	struct value v;

	mem_trim(&p, &len);
	if (!len || len > TRAILER_LINE_MAX || !memchr(p, '@', len))
		return 0;
	return parse_value(&v, p, len, 0) && v.email && !v.name_len;
}

/* prev and line joined by one space into buf (bounded); 0 if too long. */
static size_t join_lines(char *buf, size_t cap, const char *prev, size_t plen,
			 const char *line, size_t len)
{
	mem_trim(&prev, &plen);
	mem_trim(&line, &len);
	if (plen + 1 + len >= cap)
		return 0;
	memcpy(buf, prev, plen);
	buf[plen] = ' ';
	memcpy(buf + plen + 1, line, len);
	buf[plen + 1 + len] = '\0';
	return plen + 1 + len;
}

int trailers_line_continues(const char *prev, size_t plen, const char *line,
			    size_t len)
{
	char joined[TRAILER_LINE_MAX + 1];
	struct trailer_list l;
	size_t n;
	int got, ok = 0;

	if (!address_only(line, len) || memchr(prev, '@', plen))
		return 0;
	n = join_lines(joined, sizeof(joined), prev, plen, line, len);
	if (!n)
		return 0;
	trailer_list_init(&l);
	got = trailers_parse_line(&l, joined, n);
	if (got > 0 && l.v[0].email)
		ok = 1;
	trailer_list_release(&l);
	return ok;
}

/*
 * A git trailer that is no review tag but may stand in the same block
 * ("Fixes: 1234abcd (\"title\")", "Link: https://...", "Cc: ..."): the
 * tokens of the kernel's submitting-patches.rst.
 */
static int other_trailer_line(const char *p, size_t len)
{
	static const char *const tokens[] = {
		"fixes",   "link",	"closes",     "cc", "bug",
		"buglink", "change-id", "message-id", NULL,
	};
	const char *const *t;
	size_t n = 0;

	mem_trim(&p, &len);
	while (n < len && (is_alpha((unsigned char)p[n]) || p[n] == '-'))
		n++;
	if (!n || n + 1 >= len || p[n] != ':' || p[n + 1] != ' ')
		return 0;
	for (t = tokens; *t; t++)
		if (strlen(*t) == n && eq_icase(p, n, *t, n))
			return 1;
	return 0;
}

int trailers_scan(struct trailer_list *out, const char *text, size_t len,
		  unsigned flags)
{
	struct scan s;
	const char *line, **lines = NULL;
	size_t n, *lens = NULL, nr = 0, alloc = 0, i, j, before;
	int rc = 0, skip = 0, got, limited = 0;
	size_t para_start = 0, first = out->nr, para_first, prose;

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
		para_first = out->nr;
		prose = 0;
		if (!(flags & TRAILERS_OWN)) {
			for (j = para_start; j < i; j++)
				if (starts_with_sob(lines[j], lens[j]) ||
				    tool_output_line(lines[j], lens[j]))
					skip = 1;
		}
		/*
		 * An example introduced on the line before the paragraph or
		 * inside it ("please add a line like:") is not the sender's.
		 */
		if (!(flags & TRAILERS_OWN) && !skip) {
			size_t k = para_start, seen = 0;

			while (k > 0 && seen++ < 3) {
				const char *q = lines[--k];
				size_t ql = lens[k];

				mem_trim(&q, &ql);
				if (!ql)
					continue;
				if (trailers_example_intro(q, ql))
					skip = 1;
				break;
			}
		}
		for (j = para_start; j < i && !skip; j++) {
			char joined[TRAILER_LINE_MAX + 1];
			size_t jn;

			before = out->nr;
			/* "Reviewed-by: A Long Name" / "<a@b.c>": wrapped */
			if (j + 1 < i &&
			    trailers_line_continues(lines[j], lens[j],
						    lines[j + 1],
						    lens[j + 1]) &&
			    (jn = join_lines(joined, sizeof(joined), lines[j],
					     lens[j], lines[j + 1],
					     lens[j + 1]))) {
				got = trailers_parse_line(out, joined, jn);
				j++;
			} else {
				got = trailers_parse_line(out, lines[j],
							  lens[j]);
			}
			if (got == PB_ELIMIT) {
				limited = 1; /* read on: a NAK still fits */
				continue;
			}
			if (got < 0) {
				rc = got;
				break;
			}
			if (!got && !(flags & TRAILERS_OWN) &&
			    trailers_example_intro(lines[j], lens[j])) {
				prose++;
				break; /* the rest of the paragraph */
			}
			if (!got) {
				if (!other_trailer_line(lines[j], lens[j]))
					prose++;
				continue;
			}
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
				if (!series)
					series = series_after(lines, lens, nr,
							      j, i);
				if (series)
					for (; before < out->nr; before++)
						out->v[before].scope =
							TRAILER_SCOPE_SERIES;
			}
		}
		/* A trailer block: a paragraph of trailer lines only, none
		 * of them inside a sentence. */
		for (j = para_first; j < out->nr && !prose; j++)
			if (out->v[j].flags & TRAILER_F_IN_SENTENCE)
				prose++;
		for (j = para_first; j < out->nr && !prose; j++)
			out->v[j].flags |= TRAILER_F_BLOCK;
		para_start = i + 1;
	}
	if ((flags & TRAILERS_SERIES) && !(flags & TRAILERS_OWN))
		for (i = first; i < out->nr; i++)
			out->v[i].scope = TRAILER_SCOPE_SERIES;
	free(lines);
	free(lens);
	return rc ? rc : limited ? PB_ELIMIT : 0;
}
