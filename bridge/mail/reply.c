#include "mail/reply.h"
#include "mail/trailers.h"
#include "util/err.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* small text helpers */

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_alnum(int c)
{
	return is_alpha(c) || (c >= '0' && c <= '9') || c >= 0x80;
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* The length of a no-break space (U+00A0, U+202F) at p, or 0. */
static size_t nbsp_at(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;

	if (n >= 2 && u[0] == 0xc2 && u[1] == 0xa0)
		return 2;
	if (n >= 3 && u[0] == 0xe2 && u[1] == 0x80 && u[2] == 0xaf)
		return 3;
	return 0;
}

/* The same, for one ending at p + n. */
static size_t nbsp_before(const char *p, size_t n)
{
	if (n >= 2 && nbsp_at(p + n - 2, 2) == 2)
		return 2;
	if (n >= 3 && nbsp_at(p + n - 3, 3) == 3)
		return 3;
	return 0;
}

/* Trim blanks (and no-break spaces: French puts one before a colon)
 * from both ends. */
static void trim(const char **p, size_t *n)
{
	size_t k;

	for (;;) {
		if (*n && (**p == ' ' || **p == '\t')) {
			(*p)++;
			(*n)--;
		} else if ((k = nbsp_at(*p, *n))) {
			*p += k;
			*n -= k;
		} else {
			break;
		}
	}
	for (;;) {
		if (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
			(*n)--;
		else if ((k = nbsp_before(*p, *n)))
			*n -= k;
		else
			break;
	}
}

static int starts_icase(const char *p, size_t n, const char *lit)
{
	size_t l = strlen(lit), i;

	if (n < l)
		return 0;
	for (i = 0; i < l; i++)
		if (lower((unsigned char)p[i]) != lower((unsigned char)lit[i]))
			return 0;
	return 1;
}

static int ends_icase(const char *p, size_t n, const char *lit)
{
	size_t l = strlen(lit);

	return n >= l && starts_icase(p + n - l, l, lit);
}

static int contains_icase(const char *p, size_t n, const char *lit)
{
	size_t l = strlen(lit), i, j;
	int first;

	if (!l)
		return 1;
	first = lower((unsigned char)lit[0]);
	for (i = 0; i + l <= n; i++) {
		if (lower((unsigned char)p[i]) != first)
			continue;
		for (j = 1; j < l && lower((unsigned char)p[i + j]) ==
					     lower((unsigned char)lit[j]);
		     j++)
			;
		if (j == l)
			return 1;
	}
	return 0;
}

static size_t count_words(const char *p, size_t n)
{
	size_t i, w = 0;
	int in = 0;

	for (i = 0; i < n; i++) {
		if (p[i] == ' ' || p[i] == '\t') {
			in = 0;
		} else if (!in) {
			in = 1;
			w++;
		}
	}
	return w;
}

/* ------------------------------------------------------------------ */
/* line predicates */

/* Quote markers: ">", "> >", " > ", ">>", "&gt;". */
static int quote_depth(const char *p, size_t n, size_t *skip)
{
	size_t i = 0, j;
	int depth = 0;

	for (;;) {
		j = i;
		while (j < n && j - i < 4 && (p[j] == ' ' || p[j] == '\t'))
			j++;
		if (j < n && p[j] == '>') {
			depth++;
			i = j + 1;
		} else if (n - j >= 4 && !memcmp(p + j, "&gt;", 4)) {
			depth++;
			i = j + 4;
		} else {
			break;
		}
		if (depth >= 64)
			break;
	}
	if (depth && i < n && p[i] == ' ')
		i++;
	*skip = i;
	return depth;
}

static int is_trim_marker(const char *p, size_t n)
{
	static const char *const words[] = {
		"snip", "skip", "trim",	   "cut", "remov", "delet",
		"elid", "drop", "rest of", "...", NULL,
	};
	const char *const *w;
	size_t i;

	trim(&p, &n);
	if (!n)
		return 0;
	/* only dots, ellipses and brackets: "...", "[...]", "<...>" */
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '.' || c == '[' || c == ']' || c == '<' || c == '>' ||
		    c == ' ' || c == '(' || c == ')')
			continue;
		if (c == 0xe2 && i + 2 < n && (unsigned char)p[i + 1] == 0x80 &&
		    (unsigned char)p[i + 2] == 0xa6) {
			i += 2; /* U+2026 */
			continue;
		}
		break;
	}
	if (i == n &&
	    (mem_find(p, n, "..", 2) || mem_find(p, n, "\xe2\x80\xa6", 3)))
		return 1;
	/* "[snip]", "<snip>", "[skipped the patch]", "[... rest ...]" */
	if (n >= 3 && ((p[0] == '[' && p[n - 1] == ']') ||
		       (p[0] == '<' && p[n - 1] == '>') ||
		       (p[0] == '(' && p[n - 1] == ')'))) {
		const char *q = p + 1;
		size_t m = n - 2;

		trim(&q, &m);
		while (m && (*q == '.' || *q == ' '))
			q++, m--;
		for (w = words; *w; w++)
			if (starts_icase(q, m, *w))
				return 1;
		return 0;
	}
	if (n <= 12 && (mem_find(p, n, "8<", 2) || mem_find(p, n, ">8", 2)))
		return 1; /* scissors */
	/* "snip", "...snip...", "--- snipped ---", "<snip/>" */
	{
		const char *q = p;
		size_t m = n;

		while (m && strchr(".-=~*<>[]()/ ", *q))
			q++, m--;
		while (m && strchr(".-=~*<>[]()/ ", q[m - 1]))
			m--;
		if (m == n)
			return mem_eq_icase(p, n, "snip") ||
			       mem_eq_icase(p, n, "snipped");
		return mem_eq_icase(q, m, "snip") ||
		       mem_eq_icase(q, m, "snipped") ||
		       mem_eq_icase(q, m, "snip snip") ||
		       mem_eq_icase(q, m, "cut") ||
		       mem_eq_icase(q, m, "trimmed") ||
		       mem_eq_icase(q, m, "skipped");
	}
}

/*
 * Attribution lines: "On ... wrote:" and its relatives in other languages
 * and mailers.  Bounded: a line longer than ATTRIB_LINE_MAX is none.
 */
#define ATTRIB_LINE_MAX 400

static int has_digit(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (is_digit((unsigned char)p[i]))
			return 1;
	return 0;
}

/* Strip the colon that ends a line (":" or the full-width "："), and the
 * blanks around it; 0 when there is none. */
static int strip_colon(const char **p, size_t *n)
{
	trim(p, n);
	if (*n && (*p)[*n - 1] == ':')
		(*n)--;
	else if (*n >= 3 && !memcmp(*p + *n - 3, "\xef\xbc\x9a", 3))
		*n -= 3;
	else
		return 0;
	trim(p, n);
	return 1;
}

/*
 * Does a word start at p[i]?  A letter of a two-byte script (Latin,
 * Cyrillic) before it continues the word; CJK, punctuation and spaces
 * do not.
 */
static int word_starts(const char *p, size_t i)
{
	unsigned char c;
	size_t k;

	if (!i)
		return 1;
	c = (unsigned char)p[i - 1];
	if (c < 0x80)
		return !is_alpha(c) && !is_digit(c);
	for (k = i - 1; k > 0 && (c & 0xc0) == 0x80 && i - k < 4; k--)
		c = (unsigned char)p[k - 1];
	return c < 0xc3 || c >= 0xe0;
}

/* The verbs that end an attribution, before its colon. */
static const struct {
	const char *verb;
	int weak; /* also ends a sentence of one's own ("As I said:") */
} attrib_verbs[] = {
	{ "wrote", 0 },
	{ "writes", 1 },
	{ "said", 1 },
	{ "a \xc3\xa9"
	  "crit",
	  0 }, /* a écrit */
	{ "schrieb", 0 },
	{ "escribi\xc3\xb3", 0 }, /* escribió */
	{ "scrisse", 0 },
	{ "ha scritto", 0 },
	{ "escreveu", 0 },
	{ "schreef", 0 },
	{ "geschreven", 0 },
	{ "kirjoitti", 0 },
	{ "skrev", 0 },
	{ "napisa\xc5\x82", 0 }, /* napisał */
	{ "napisa\xc5\x82(a)", 0 },
	{ "napsal", 0 }, /* Czech */
	{ "napsal(a)", 0 },
	{ "\xd0\xbf\xd0\xb8\xd1\x88\xd0\xb5\xd1\x82", 0 }, /* пишет */
	{ "\xd0\xbf\xd0\xb8\xd1\x81\xd0\xb0\xd0\xbb", 0 }, /* писал */
	{ "\xd0\xbd\xd0\xb0\xd0\xbf\xd0\xb8\xd1\x81\xd0\xb0\xd0\xbb",
	  0 }, /* написал */
	{ "\xd0\xbd\xd0\xb0\xd0\xbf\xd0\xb8\xd1\x81\xd0\xb0\xd0\xbb\xd0\xb0",
	  0 }, /* написала */
	{ "\xd0\xbd\xd0\xb0\xd0\xbf\xd0\xb8\xd1\x81\xd0\xb0\xd0\xbb(\xd0\xb0)",
	  0 }, /* написал(а) */
	{ "\xe5\x86\x99\xe9\x81\x93", 0 }, /* 写道 */
	{ "\xe5\xaf\xab\xe9\x81\x93", 0 }, /* 寫道 */
	{ "\xe3\x81\xae\xe3\x83\xa1\xe3\x83\x83\xe3\x82\xbb\xe3\x83\xbc"
	  "\xe3\x82\xb8",
	  0 }, /* のメッセージ */
	{ "\xe6\x9b\xb8\xe3\x81\x8d\xe3\x81\xbe\xe3\x81\x97\xe3\x81\x9f",
	  0 }, /* 書きました */
};

/* Attributions whose verb sits before the name: "Am 3.12.26 um 10:00
 * schrieb Jane <j@example.org>:", "Op ... schreef Jane:". */
static const struct {
	const char *start, *verb;
} attrib_infix[] = {
	{ "Am ", " schrieb " },
	{ "Op ", " schreef " },
};

/*
 * The verb ending p[0..n) (its colon stripped by the caller): its index
 * in attrib_verbs, or -1.  bare: the line is the verb and nothing else.
 */
static int attribution_verb(const char *p, size_t n, int *bare)
{
	size_t i, l;

	for (i = 0; i < sizeof(attrib_verbs) / sizeof(attrib_verbs[0]); i++) {
		const char *v = attrib_verbs[i].verb;

		l = strlen(v);
		if (!ends_icase(p, n, v))
			continue;
		/* "overwrote:" is no attribution; 写道 follows anything */
		if ((unsigned char)v[0] < 0xe0 && !word_starts(p, n - l))
			continue;
		if (bare)
			*bare = n == l;
		return (int)i;
	}
	return -1;
}

/*
 * Gmail's attribution in languages where it has no verb: a date with a
 * year and a time, then the name and "<address>" right before the colon
 * ("вт, 3 дек. 2026 г. в 10:00, Jane <j@example.org>:", "2026年12月3日(火)
 * 10:00 Jane <j@example.org>:").  p[0..n) has its colon stripped.
 */
static int dated_address(const char *p, size_t n)
{
	const char *lt;
	size_t i, run = 0;
	int year = 0, time = 0;

	if (n < 8 || p[n - 1] != '>')
		return 0;
	lt = NULL;
	for (i = n - 1; i > 0 && !lt; i--)
		if (p[i - 1] == '<')
			lt = p + i;
	if (!lt || !memchr(lt, '@', (size_t)(p + n - lt)))
		return 0;
	for (i = 0; p + i < lt; i++) {
		run = is_digit((unsigned char)p[i]) ? run + 1 : 0;
		if (run == 4)
			year = 1;
		if (p[i] == ':' && i > 0 && is_digit((unsigned char)p[i - 1]) &&
		    p + i + 2 < lt && is_digit((unsigned char)p[i + 1]) &&
		    is_digit((unsigned char)p[i + 2]))
			time = 1;
	}
	return year && time;
}

/* "On ... wrote:", "... writes:", "Quoting X (date):" ... */
static int attribution_end(const char *p, size_t n)
{
	const char *q;
	size_t m, i;

	trim(&p, &n);
	if (!n || n > ATTRIB_LINE_MAX)
		return 0;
	q = p;
	m = n;
	if (strip_colon(&q, &m)) {
		if (attribution_verb(q, m, NULL) >= 0 || dated_address(q, m))
			return 1;
		for (i = 0; i < sizeof(attrib_infix) / sizeof(attrib_infix[0]);
		     i++)
			if (starts_icase(p, n, attrib_infix[i].start) &&
			    mem_find(p, n, attrib_infix[i].verb,
				     strlen(attrib_infix[i].verb)))
				return 1;
	}
	if (starts_icase(p, n, "Quoting ") &&
	    (p[n - 1] == ':' || p[n - 1] == ')'))
		return 1;
	return 0;
}

/*
 * An attribution that introduces the original message, so that what
 * follows it without '>' is that original: a date or an address in it
 * and a verb of writing ("As Jane <j@example.org> said:" opens a
 * sentence of one's own).
 */
static int attribution_strong(const char *p, size_t n)
{
	int v;

	trim(&p, &n);
	if (starts_icase(p, n, "On "))
		return 1;
	if (!has_digit(p, n) && !memchr(p, '@', n))
		return 0;
	if (!strip_colon(&p, &n))
		return 0;
	v = attribution_verb(p, n, NULL);
	if (v >= 0)
		return !attrib_verbs[v].weak;
	return starts_icase(p, n, "Am ") || starts_icase(p, n, "Op ") ||
	       dated_address(p, n);
}

static int ends_colon(const char *p, size_t n)
{
	trim(&p, &n);
	return (n && p[n - 1] == ':') ||
	       (n >= 3 && !memcmp(p + n - 3, "\xef\xbc\x9a", 3));
}

/*
 * The first half of an attribution wrapped over two lines: cut after
 * "<" or "(", or opened the way attributions open ("On", "Am", "Le",
 * "在" ...) or cut after a comma, with a date or an address in it.
 */
static int attribution_head(const char *p, size_t n)
{
	static const char *const starts[] = {
		"On ",	    "Am ",	    "Le ",	   "El ",  "Il ",
		"Em ",	    "Op ",	    "Den ",	   "Dne ", "W dniu ",
		"Quoting ", "\xe5\x9c\xa8", /* 在 */ NULL,
	};
	const char *const *s;
	int dated;

	trim(&p, &n);
	if (!n || n > ATTRIB_LINE_MAX)
		return 0;
	if (p[n - 1] == '<' || p[n - 1] == '(')
		return 1;
	dated = has_digit(p, n) || memchr(p, '@', n) || memchr(p, '<', n);
	if (!dated)
		return 0;
	if (p[n - 1] == ',')
		return 1;
	for (s = starts; *s; s++)
		if (starts_icase(p, n, *s))
			return 1;
	return 0;
}

enum hdr {
	H_NONE,
	H_FROM,
	H_DATE,
	H_TO,
	H_CC,
	H_SUBJECT,
};

/* A header line of a quoted original, in the languages seen on lists. */
static enum hdr header_field(const char *p, size_t n)
{
	static const struct {
		const char *name;
		enum hdr h;
	} names[] = {
		{ "From", H_FROM },
		{ "\xe5\x8f\x91\xe4\xbb\xb6\xe4\xba\xba", H_FROM }, /* 发件人 */
		{ "\xe5\xaf\x84\xe4\xbb\xb6\xe8\x80\x85", H_FROM }, /* 寄件者 */
		{ "Von", H_FROM },
		{ "De", H_FROM },
		{ "Da", H_FROM },
		{ "Van", H_FROM },
		{ "Od", H_FROM },
		{ "\xd0\x9e\xd1\x82", H_FROM }, /* От */
		{ "\xe5\xb7\xae\xe5\x87\xba\xe4\xba\xba", H_FROM }, /* 差出人 */
		{ "Sent", H_DATE },
		{ "Date", H_DATE },
		{ "\xe5\x8f\x91\xe9\x80\x81\xe6\x97\xb6\xe9\x97\xb4",
		  H_DATE }, /* 发送时间 */
		{ "\xe6\x97\xa5\xe6\x9c\x9f", H_DATE }, /* 日期 */
		{ "\xe6\x97\xb6\xe9\x97\xb4", H_DATE }, /* 时间 */
		{ "\xe5\x82\xb3\xe9\x80\x81\xe6\x99\x82\xe9\x96\x93",
		  H_DATE }, /* 傳送時間 */
		{ "Gesendet", H_DATE },
		{ "Datum", H_DATE },
		{ "Envoy\xc3\xa9", H_DATE },
		{ "Inviato", H_DATE },
		{ "Enviado", H_DATE },
		{ "Enviada em", H_DATE }, /* Portuguese Outlook */
		{ "Data", H_DATE },
		{ "Verzonden", H_DATE },
		{ "\xd0\x9e\xd1\x82\xd0\xbf\xd1\x80\xd0\xb0\xd0\xb2\xd0\xbb"
		  "\xd0\xb5\xd0\xbd\xd0\xbe",
		  H_DATE }, /* Отправлено */
		{ "\xd0\x94\xd0\xb0\xd1\x82\xd0\xb0", H_DATE }, /* Дата */
		{ "\xe9\x80\x81\xe4\xbf\xa1\xe6\x97\xa5\xe6\x99\x82",
		  H_DATE }, /* 送信日時 */
		{ "To", H_TO },
		{ "\xe6\x94\xb6\xe4\xbb\xb6\xe4\xba\xba", H_TO }, /* 收件人 */
		{ "\xe6\x94\xb6\xe4\xbb\xb6\xe8\x80\x85", H_TO }, /* 收件者 */
		{ "An", H_TO },
		{ "\xc3\x80", H_TO },
		{ "Para", H_TO },
		{ "Aan", H_TO },
		{ "\xd0\x9a\xd0\xbe\xd0\xbc\xd1\x83", H_TO }, /* Кому */
		{ "\xe5\xae\x9b\xe5\x85\x88", H_TO }, /* 宛先 */
		{ "Cc", H_CC },
		{ "\xe6\x8a\x84\xe9\x80\x81", H_CC }, /* 抄送 */
		{ "\xe5\x89\xaf\xe6\x9c\xac", H_CC }, /* 副本 */
		{ "Kopie", H_CC },
		{ "\xd0\x9a\xd0\xbe\xd0\xbf\xd0\xb8\xd1\x8f",
		  H_CC }, /* Копия */
		{ "Subject", H_SUBJECT },
		{ "\xe4\xb8\xbb\xe9\xa2\x98", H_SUBJECT }, /* 主题 */
		{ "\xe4\xb8\xbb\xe6\x97\xa8", H_SUBJECT },
		{ "\xe4\xb8\xbb\xe9\xa1\x8c", H_SUBJECT }, /* 主題 */
		{ "Betreff", H_SUBJECT },
		{ "Objet", H_SUBJECT },
		{ "Oggetto", H_SUBJECT },
		{ "Asunto", H_SUBJECT },
		{ "Onderwerp", H_SUBJECT },
		{ "Assunto", H_SUBJECT },
		{ "\xd0\xa2\xd0\xb5\xd0\xbc\xd0\xb0", H_SUBJECT }, /* Тема */
		{ "\xe4\xbb\xb6\xe5\x90\x8d", H_SUBJECT }, /* 件名 */
	};
	size_t i, l;

	trim(&p, &n);
	/* "*From:* Jane": Outlook's bold names turned into text */
	for (i = 0; i < 2 && n && *p == '*'; i++) {
		p++;
		n--;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		l = strlen(names[i].name);
		if (!starts_icase(p, n, names[i].name))
			continue;
		{
			const char *q = p + l;
			size_t m = n - l, k;

			/* "De : Jane", with a no-break space in French */
			for (;;) {
				if (m && (*q == ' ' || *q == '*'))
					k = 1;
				else
					k = nbsp_at(q, m);
				if (!k)
					break;
				q += k;
				m -= k;
			}
			if ((m && *q == ':') ||
			    (m >= 3 && !memcmp(q, "\xef\xbc\x9a", 3)))
				return names[i].h;
		}
	}
	return H_NONE;
}

/* "-----Original Message-----", "-----邮件原件-----" and the like. */
static int original_separator(const char *p, size_t n)
{
	static const char *const words[] = {
		"original message",
		"original",
		"forwarded message",
		"\xe5\x8e\x9f\xe5\xa7\x8b\xe9\x82\xae\xe4\xbb\xb6", /* 原始邮件 */
		"\xe9\x82\xae\xe4\xbb\xb6\xe5\x8e\x9f\xe4\xbb\xb6", /* 邮件原件 */
		"\xe5\x8e\x9f\xe5\xa7\x8b\xe9\x83\xb5\xe4\xbb\xb6", /* 原始郵件 */
		"urspr\xc3\xbcngliche nachricht",
		"message d'origine",
		"messaggio originale",
		"mensaje original",
		"message d\xe2\x80\x99origine", /* with U+2019 */
		"mensagem original",
		"oorspronkelijk bericht",
		"\xd0\x98\xd1\x81\xd1\x85\xd0\xbe\xd0\xb4\xd0\xbd\xd0\xbe\xd0\xb5 "
		"\xd1\x81\xd0\xbe\xd0\xbe\xd0\xb1\xd1\x89\xd0\xb5\xd0\xbd\xd0\xb8"
		"\xd0\xb5", /* Исходное сообщение */
		"\xe5\x85\x83\xe3\x81\xae\xe3\x83\xa1\xe3\x83\x83\xe3\x82\xbb"
		"\xe3\x83\xbc\xe3\x82\xb8", /* 元のメッセージ */
		NULL,
	};
	const char *const *w;
	const char *q;
	size_t m;

	trim(&p, &n);
	if (n < 8 || p[0] != '-' || p[n - 1] != '-')
		return 0;
	q = p;
	m = n;
	while (m && (*q == '-' || *q == ' ')) {
		q++;
		m--;
	}
	while (m && (q[m - 1] == '-' || q[m - 1] == ' '))
		m--;
	for (w = words; *w; w++)
		if (m == strlen(*w) && starts_icase(q, m, *w))
			return 1;
	return 0;
}

static int underscore_rule(const char *p, size_t n)
{
	size_t i;

	trim(&p, &n);
	if (n < 10)
		return 0;
	for (i = 0; i < n; i++)
		if (p[i] != '_')
			return 0;
	return 1;
}

/* "-----------", "==========": a line drawn across */
static int is_rule(const char *p, size_t n)
{
	size_t i;

	trim(&p, &n);
	if (n < 10)
		return 0;
	for (i = 0; i < n; i++)
		if (!strchr("-_=*~", p[i]) || p[i] != p[0])
			return 0;
	return 1;
}

/*
 * The original by its structure, in any language and script.  Word
 * lists (header_field(), original_separator()) name the forms of the
 * languages seen on lists; what every localised client keeps is the
 * shape: a line drawn across, maybe around a few words, and a block of
 * "Field: value" lines that say who sent what when.
 */
#define SEPARATOR_LINE_MAX 160 /* bytes of a separator line */
#define SEPARATOR_TEXT_MAX 80 /* bytes of its words */
#define FIELD_NAME_MAX 48 /* bytes of a field's name */
#define FIELD_BLOCK_MAX 16 /* lines of a header block */

static int is_trailer(const char *p, size_t n);

static int rule_char(int c)
{
	return c == '-' || c == '_' || c == '=' || c == '*';
}

/*
 * A separator line: a run of at least five of "-", "_", "=" or "*"
 * alone (Outlook's "________________________________"), or runs of at
 * least three around a short text of any words ("-----Původní
 * zpráva-----", "-------- 転送メッセージ --------", and Thunderbird in
 * Polish, "--- Treść przekazanej wiadomości ---").  Alone it proves
 * nothing (a rule under a heading, "------------[ cut here ]---..."
 * above an oops): classify() takes it for an original only with a
 * header block under it, or with the words original_separator() knows.
 */
static int separator_line(const char *p, size_t n)
{
	size_t a = 0, b = 0, i, words;
	int letter = 0;

	trim(&p, &n);
	if (!n || n > SEPARATOR_LINE_MAX || !rule_char((unsigned char)p[0]))
		return 0;
	while (a < n && p[a] == p[0])
		a++;
	if (a == n)
		return a >= 5;
	while (b < n - a && p[n - 1 - b] == p[n - 1] &&
	       rule_char((unsigned char)p[n - 1]))
		b++;
	if (a < 3 || b < 3)
		return 0;
	p += a;
	n -= a + b;
	trim(&p, &n);
	words = count_words(p, n);
	if (!n || n > SEPARATOR_TEXT_MAX || words > 8)
		return 0;
	for (i = 0; i < n; i++)
		if (is_alpha((unsigned char)p[i]) ||
		    (unsigned char)p[i] >= 0x80)
			letter = 1;
	return letter;
}

/* The colon that ends a field's name at p: its length (":" 1, the
 * full-width "：" 3), or 0. */
static size_t colon_at(const char *p, size_t n)
{
	if (n && *p == ':')
		return 1;
	if (n >= 3 && !memcmp(p, "\xef\xbc\x9a", 3))
		return 3;
	return 0;
}

struct field {
	const char *name; /* the field's name, without bold stars */
	size_t nlen;
	const char *val; /* its value, trimmed */
	size_t vlen;
};

/*
 * A "Field: value" line of a header block: a name of one to three words
 * of letters in any script (a byte over 0x7f is a letter: the script is
 * not looked at), maybe bold ("*From:*", "*From*:"), then a colon, maybe
 * full-width ("发件人：") or after a space or a no-break space as French
 * writes it ("Sujet : ").  "https://..." is no field.
 */
static int field_line(const char *p, size_t n, struct field *f)
{
	size_t i = 0, k, cl = 0, words = 0, end = 0;
	int in_word = 0;

	trim(&p, &n);
	while (i < 2 && n && *p == '*') {
		p++;
		n--;
		i++;
	}
	/* "* kernel: 6.8": a list's bullet, not a bold name */
	if (i && n && *p == ' ')
		return 0;
	for (i = 0; i < n && i <= FIELD_NAME_MAX;) {
		unsigned char c = (unsigned char)p[i];

		if ((cl = colon_at(p + i, n - i)))
			break;
		if (c == ' ' || c == '*') {
			in_word = 0;
			i++;
			continue;
		}
		if ((k = nbsp_at(p + i, n - i))) {
			in_word = 0;
			i += k;
			continue;
		}
		if (!is_alpha(c) && c < 0x80 && !(c == '-' && in_word))
			return 0;
		if (!in_word && ++words > 3)
			return 0;
		in_word = 1;
		i++;
		end = i;
	}
	if (!cl || !words)
		return 0;
	f->name = p;
	f->nlen = end;
	p += i + cl;
	n -= i + cl;
	while (n && *p == '*') {
		p++;
		n--;
	}
	trim(&p, &n);
	if (n >= 2 && p[0] == '/' && p[1] == '/')
		return 0;
	f->val = p;
	f->vlen = n;
	return 1;
}

/*
 * A field that is a trailer, not a header: "Xxx-by:", "Reviewed by:",
 * "Fixes:", "Link:", "Closes:", "Cc:" (kernel trailers, git
 * interpret-trailers), or one of git log's ("Author:", "Commit:").  A
 * block of these is the author's own text; a "Cc:" inside a header
 * block does not make it one.
 */
static int trailer_field(const struct field *f, const char *line, size_t len)
{
	static const char *const tags[] = {
		"fixes",      "link",	 "closes",     "cc",	     "bcc",
		"bug",	      "buglink", "change-id",  "message-id", "author",
		"authordate", "commit",	 "commitdate", "merge",	     NULL,
	};
	const char *const *t;

	if (ends_icase(f->name, f->nlen, "-by") ||
	    ends_icase(f->name, f->nlen, " by"))
		return 1;
	for (t = tags; *t; t++)
		if (f->nlen == strlen(*t) && starts_icase(f->name, f->nlen, *t))
			return 1;
	return is_trailer(line, len);
}

/* Does the word around p[i] hold "://" (a link)? */
static int in_link(const char *p, size_t n, size_t i)
{
	static const char stop[] = " \t()<>[]\"'";
	size_t a = i, b = i;

	while (a > 0 && !strchr(stop, p[a - 1]))
		a--;
	while (b < n && !strchr(stop, p[b]))
		b++;
	return mem_find(p + a, b - a, "://", 3) != NULL;
}

/*
 * An address, "a@b.c", in p[0..n); not one inside a link, as in the
 * "config: x86_64-randconfig (https://download.01.org/...-lkp@intel.com
 * /config)" of a kernel test robot's report, which is no header block.
 */
static int has_address(const char *p, size_t n)
{
	size_t i, j;
	int dot;

	for (i = 1; i + 1 < n; i++) {
		if (p[i] != '@' || !is_alnum((unsigned char)p[i - 1]) ||
		    in_link(p, n, i))
			continue;
		dot = 0;
		for (j = i + 1; j < n; j++) {
			unsigned char c = (unsigned char)p[j];

			if (c == '.' && j > i + 1 && j + 1 < n &&
			    is_alnum((unsigned char)p[j + 1]))
				dot = 1;
			else if (!is_alnum(c) && c != '-' && c != '.')
				break;
		}
		if (dot)
			return 1;
	}
	return 0;
}

/*
 * A decimal digit at p: its length in bytes and its value (*v), or 0.
 * The digits clients write dates in: ASCII, Arabic-Indic (U+0660),
 * Extended Arabic-Indic (U+06F0, Persian and Urdu), Devanagari (U+0966)
 * and full-width (U+FF10, Japanese and Chinese).
 */
static size_t digit_at(const char *p, size_t n, int *v)
{
	const unsigned char *u = (const unsigned char *)p;

	if (n >= 1 && u[0] >= '0' && u[0] <= '9') {
		*v = u[0] - '0';
		return 1;
	}
	if (n >= 2 && u[0] == 0xd9 && u[1] >= 0xa0 && u[1] <= 0xa9) {
		*v = u[1] - 0xa0;
		return 2;
	}
	if (n >= 2 && u[0] == 0xdb && u[1] >= 0xb0 && u[1] <= 0xb9) {
		*v = u[1] - 0xb0;
		return 2;
	}
	if (n >= 3 && u[0] == 0xe0 && u[1] == 0xa5 && u[2] >= 0xa6 &&
	    u[2] <= 0xaf) {
		*v = u[2] - 0xa6;
		return 3;
	}
	if (n >= 3 && u[0] == 0xef && u[1] == 0xbc && u[2] >= 0x90 &&
	    u[2] <= 0x99) {
		*v = u[2] - 0x90;
		return 3;
	}
	return 0;
}

/* A run of digits at p: its length in bytes, *count the digits and *val
 * the value of the first four. */
static size_t digits_at(const char *p, size_t n, size_t *count, int *val)
{
	size_t i = 0, k;
	int v;

	*count = 0;
	*val = 0;
	while ((k = digit_at(p + i, n - i, &v))) {
		if (++*count <= 4)
			*val = *val * 10 + v;
		i += k;
	}
	return i;
}

/*
 * A date with its time in p[0..n), as a client writes when a mail was
 * sent, in any language and any script's digits: a year (1900-2999: the
 * Thai calendar's 2569 too) and a time ("10:15", "10：15", or "10.15"
 * after the year as Finnish writes it).  A date alone ("Tested on:
 * 2024-01-05") or a time alone ("Before: 10:30 ms") is none.
 */
static int has_datetime(const char *p, size_t n)
{
	size_t i = 0, k, cl, d, m, d2;
	int year = 0, time = 0, v, v2;

	while (i < n) {
		k = digits_at(p + i, n - i, &d, &v);
		if (!k) {
			i++;
			continue;
		}
		i += k;
		if (d == 4 && v >= 1900 && v <= 2999)
			year = 1;
		if (d > 2 || i >= n)
			continue;
		cl = p[i] == '.' ? 1 : colon_at(p + i, n - i);
		if (!cl)
			continue;
		m = digits_at(p + i + cl, n - i - cl, &d2, &v2);
		if (d2 != 2 || v > 23 || v2 > 59)
			continue;
		/* "7.12.2026" is a date; "10.15" a time after the year */
		if (p[i] != '.') {
			time = 1;
		} else if (year) {
			size_t e = i + cl + m;

			if (e == n || (p[e] != '.' && !colon_at(p + e, n - e)))
				time = 1;
		}
	}
	return year && time;
}

/*
 * A header block found by its structure at line i: at least min
 * "Field: value" lines that are no trailers, where a value holds an
 * address or a date with its time (who sent it, when) and a name is a
 * mailer's label (not all lower case: the kernel test robot's "tree: /
 * commit: / author: / date:" report is no header), maybe with folded
 * lines among them, up to a blank line.  Its end (exclusive), or i.
 */
static size_t struct_header_block(const struct reply *r, size_t i, size_t min)
{
	size_t j, last = i, fields = 0, other = 0;
	int said = 0, named = 0;
	struct field f;

	for (j = i; j < r->nr && j < i + FIELD_BLOCK_MAX; j++) {
		const char *p = r->lines[j].content;
		size_t n = r->lines[j].clen;

		if (r->lines[j].depth != r->lines[i].depth)
			break;
		trim(&p, &n);
		if (!n)
			break;
		if (field_line(p, n, &f)) {
			if (!trailer_field(&f, p, n)) {
				fields++;
				said |= has_address(f.val, f.vlen) ||
					has_datetime(f.val, f.vlen);
				/* a mailer's labels start with a capital
				 * (or in a script without case); a
				 * robot's "author:", "date:" do not */
				named |= (unsigned char)f.name[0] >= 0x80 ||
					 (f.name[0] >= 'A' && f.name[0] <= 'Z');
			}
		} else if (j == i) {
			return i;
		} else if (!has_address(p, n) && !memchr(p, ';', n)) {
			/* a long To: or Cc: folded by the mailer holds
			 * addresses or Outlook's ";"; prose does not */
			other++;
		}
		last = j;
	}
	return fields >= min && said && named && other <= fields ? last + 1 : i;
}

static int is_sig_marker(const char *p, size_t n)
{
	return (n == 3 && !memcmp(p, "-- ", 3)) ||
	       (n == 2 && !memcmp(p, "--", 2));
}

/*
 * The line a phone or a webmail adds under what one writes: "Sent from
 * my iPhone", "Envoyé de mon iPhone", "Von meinem iPhone gesendet",
 * "Get Outlook for Android", "发自我的iPhone", "iPhoneから送信".  Like
 * the "-- " signature it is no comment.  A sentence ("Sent from my
 * phone. NAK.") is not one: only a short run of words, maybe a link in
 * <...> and a full stop at the end.
 */
static int is_mobile_sig(const char *p, size_t n)
{
	/* the device or the app between them: anything short */
	static const struct {
		const char *start, *end;
	} sigs[] = {
		{ "Sent from my ", "" },
		{ "Sent with my ", "" },
		{ "Sent via my ", "" },
		{ "Sent from Mail for ", "" },
		{ "Sent from Outlook", "" },
		{ "Sent from Yahoo Mail", "" },
		{ "Sent from Proton", "" },
		{ "Sent from Samsung", "" },
		{ "Get Outlook for ", "" },
		{ "Envoy\xc3\xa9 de mon ", "" },
		{ "Envoy\xc3\xa9 depuis mon ", "" },
		{ "Envoy\xc3\xa9 \xc3\xa0 partir de ", "" },
		{ "Von meinem ", "gesendet" },
		{ "Gesendet von meinem ", "" },
		{ "Gesendet mit ", "" },
		{ "Enviado desde mi ", "" },
		{ "Enviado do meu ", "" },
		{ "Enviado de meu ", "" },
		{ "Enviado de mi ", "" },
		{ "Inviato da ", "" },
		{ "Inviato dal mio ", "" },
		{ "Verstuurd vanaf mijn ", "" },
		{ "Verzonden vanaf mijn ", "" },
		{ "Verzonden met ", "" },
		{ "Wys\xc5\x82"
		  "ane z ",
		  "" }, /* Wysłane z */
		{ "\xd0\x9e\xd1\x82\xd0\xbf\xd1\x80\xd0\xb0\xd0\xb2\xd0\xbb\xd0\xb5"
		  "\xd0\xbd\xd0\xbe \xd1\x81 ",
		  "" }, /* Отправлено с */
		{ "\xe5\x8f\x91\xe8\x87\xaa", "" }, /* 发自 */
		{ "",
		  "\xe3\x81\x8b\xe3\x82\x89\xe9\x80\x81\xe4\xbf\xa1" }, /* から送信 */
	};
	size_t i, w;

	trim(&p, &n);
	if (n < 6 || n > 120)
		return 0;
	/* a link Outlook adds: "Get Outlook for iOS<https://aka.ms/...>" */
	if (p[n - 1] == '>') {
		const char *lt = memchr(p, '<', n);

		if (!lt || lt == p)
			return 0;
		n = (size_t)(lt - p);
		trim(&p, &n);
	}
	if (n && p[n - 1] == '.')
		n--;
	for (i = 0; i < n; i++)
		if (strchr(".,;:!?<>()[]@", p[i]))
			return 0;
	w = count_words(p, n);
	if (!w || w > 8)
		return 0;
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (n >= strlen(sigs[i].start) + strlen(sigs[i].end) &&
		    starts_icase(p, n, sigs[i].start) &&
		    ends_icase(p, n, sigs[i].end))
			return 1;
	return 0;
}

static int is_disclaimer(const char *p, size_t n)
{
	if (contains_icase(p, n, "confidential") &&
	    (contains_icase(p, n, "intended") ||
	     contains_icase(p, n, "recipient") ||
	     contains_icase(p, n, "privileged") ||
	     contains_icase(p, n, "disclos")))
		return 1;
	if (contains_icase(p, n, "disclaimer:") ||
	    contains_icase(p, n, "this e-mail and any attachment") ||
	    contains_icase(p, n, "this email and any attachment") ||
	    contains_icase(p, n, "this message and any attachment"))
		return 1;
	/* 本邮件 ... 保密 */
	return mem_find(p, n, "\xe6\x9c\xac\xe9\x82\xae\xe4\xbb\xb6", 9) &&
	       mem_find(p, n, "\xe4\xbf\x9d\xe5\xaf\x86", 6);
}

/* A diffstat summary: " 3 files changed, 12 insertions(+)". */
static int diffstat_summary(const char *p, size_t n)
{
	trim(&p, &n);
	if (!n || !is_digit((unsigned char)p[0]))
		return 0;
	return mem_find(p, n, " changed", 8) &&
	       (mem_find(p, n, "file changed", 12) ||
		mem_find(p, n, "files changed", 13));
}

/* ------------------------------------------------------------------ */
/* greetings, sign-offs, names */

/*
 * A greeting or a sign-off is a word of form around what a reviewer
 * says, and is left out of the comment; so each is recognised only as
 * the whole line: the greeting word and whom it greets ("Hi Alice,",
 * "Dear maintainers,"), the closing word and a name ("Thanks, Phil").
 * A line that goes on ("Hi Alice, NAK.", "Thanks, looks wrong",
 * "Cheers to ...", "Regards the second hunk, ...") is the reviewer's
 * words, greeting and all: a wrong guess here costs a few words of
 * form in a comment, the other way it costs the review.
 */

/* Words that answer a question: a one-word comment, not a name. */
static int is_answer_word(const char *p, size_t n)
{
	static const char *const words[] = {
		"yes",	 "no",	    "ok",     "okay", "right", "agreed",
		"sure",	 "correct", "indeed", "nope", "yep",   "yup",
		"ack",	 "nack",    "nak",    "true", "false", "done",
		"fixed", "exactly", "lgtm",   "good", "fine",  "why",
		"ditto", NULL,
	};
	const char *const *w;
	size_t l;

	trim(&p, &n);
	while (n && strchr(".!?,", p[n - 1]))
		n--;
	for (w = words; *w; w++) {
		l = strlen(*w);
		if (n == l && starts_icase(p, n, *w))
			return 1;
	}
	return 0;
}

/* Words that greet a group, in any case: "Hi all", "Dear maintainers". */
static int is_addressee_word(const char *p, size_t n)
{
	static const char *const words[] = {
		"all",	      "everyone",   "everybody",   "folks", "there",
		"guys",	      "team",	    "maintainers", "both",  "again",
		"people",     "developers", "reviewers",   "list",  "friends",
		"colleagues", "sir",	    "madam",	   "y'all", NULL,
	};
	const char *const *w;

	for (w = words; *w; w++)
		if (n == strlen(*w) && starts_icase(p, n, *w))
			return 1;
	return 0;
}

/* Lower-case words inside a name: "Vincent van Gogh", "Rita and Bob". */
static int is_name_joiner(const char *p, size_t n)
{
	static const char *const words[] = {
		"and", "&",  "van", "von", "de", "der", "den",
		"la",  "le", "di",  "da",  "du", "del", NULL,
	};
	const char *const *w;

	for (w = words; *w; w++)
		if (n == strlen(*w) && !memcmp(p, *w, n))
			return 1;
	return 0;
}

/*
 * Is p[0..n) written like a name or whom a greeting greets: one to max
 * words, each capitalised ("Alice", "Sun Shijie"), an initial ("J.",
 * "Mr."), or a word of another script no longer than a name in it (four
 * CJK characters: "你好，这个补丁有问题" is a sentence), joined by "and"
 * or a particle, no answer word ("Thanks, NAK"); with group, the words
 * of a group ("all", "maintainers").  Punctuation may end it, never
 * stand inside it: "Alice, NAK." is a name and then a sentence.
 */
static int name_words(const char *p, size_t n, size_t max, int group)
{
	size_t i, k, wl, words = 0;

	trim(&p, &n);
	while (n && (*p == '-' || *p == '~' || *p == ' ')) {
		p++;
		n--;
	}
	for (;;) {
		trim(&p, &n);
		if (n && strchr(",.!:;", p[n - 1]))
			n--;
		/* a full-width comma or exclamation mark */
		else if (n >= 3 && (!memcmp(p + n - 3, "\xef\xbc\x8c", 3) ||
				    !memcmp(p + n - 3, "\xef\xbc\x81", 3)))
			n -= 3;
		/* Coremail's and QQMail's text/plain keeps the "<br>" */
		else if (ends_icase(p, n, "<br>"))
			n -= 4;
		else if (ends_icase(p, n, "<br/>"))
			n -= 5;
		else
			break;
	}
	if (!n)
		return 0;
	for (i = 0; i < n;) {
		const char *w;
		unsigned char c;

		while (i < n && p[i] == ' ')
			i++;
		w = p + i;
		for (wl = 0; i < n && p[i] != ' '; i++, wl++)
			;
		if (!wl)
			break;
		if (++words > max || is_answer_word(w, wl))
			return 0;
		c = (unsigned char)w[0];
		if (group && is_addressee_word(w, wl))
			continue;
		if (words > 1 && is_name_joiner(w, wl))
			continue;
		if (c >= 0x80) {
			if (wl > 12)
				return 0;
		} else if (!(c >= 'A' && c <= 'Z') || wl > 24) {
			return 0;
		}
		for (k = 0; k < wl; k++) {
			c = (unsigned char)w[k];
			if (c == '.' && k + 1 == wl && wl <= 3)
				continue;
			if (!(is_alpha(c) || c >= 0x80 || c == '-' ||
			      c == '\''))
				return 0;
		}
	}
	return words > 0;
}

/* Blanks and punctuation after a greeting or closing word; *punct says
 * whether there was punctuation. */
static size_t form_gap(const char *p, size_t n, int *punct)
{
	size_t i = 0;

	*punct = 0;
	for (;;) {
		if (i < n && strchr(" ,.!:;-~", p[i])) {
			*punct |= p[i] != ' ';
			i++;
		} else if (n - i >= 3 && (!memcmp(p + i, "\xef\xbc\x8c", 3) ||
					  !memcmp(p + i, "\xef\xbc\x81", 3))) {
			*punct = 1;
			i += 3;
		} else {
			return i;
		}
	}
}

/*
 * Does p[0..n) open with one of the phrases phr, as a whole word?  Then
 * *rest is what follows it past blanks and punctuation, and *punct
 * whether there was punctuation.
 */
static int phrase_rest(const char *p, size_t n, const char *const *phr,
		       const char **rest, size_t *rest_len, int *punct)
{
	const char *const *ph;
	size_t l, best = 0;

	trim(&p, &n);
	for (ph = phr; *ph; ph++) {
		l = strlen(*ph);
		if (l <= best || !starts_icase(p, n, *ph))
			continue;
		if (n > l && is_alnum((unsigned char)p[l]) &&
		    (unsigned char)p[l] < 0x80)
			continue;
		best = l;
	}
	if (!best)
		return 0;
	l = form_gap(p + best, n - best, punct);
	*rest = p + best + l;
	*rest_len = n - best - l;
	return 1;
}

/* Letters only, ASCII or not: a name written in lower case. */
static int lower_word(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!is_alpha((unsigned char)p[i]) &&
		    (unsigned char)p[i] < 0x80)
			return 0;
	return n > 0;
}

static int is_greeting(const char *p, size_t n)
{
	static const char *const phr[] = {
		"hi",
		"hello",
		"hey",
		"dear",
		"hallo",
		"hi all",
		"hello all",
		"good morning",
		"good afternoon",
		"good evening",
		"greetings",
		"hi everyone",
		"\xe4\xbd\xa0\xe5\xa5\xbd",
		"\xe6\x82\xa8\xe5\xa5\xbd",
		NULL,
	};
	const char *rest;
	size_t rn;
	int punct;

	trim(&p, &n);
	if (!n || n > 60 || !phrase_rest(p, n, phr, &rest, &rn, &punct))
		return 0;
	/* "Hi Alice," "Hello all!" "Dear maintainers," "Hi," */
	if (!rn || name_words(rest, rn, 3, 1))
		return 1;
	/* "Hi xiang:", "hi jason,": one name in lower case, then the
	 * greeting's own punctuation (not "Hi, typo.") */
	return count_words(rest, rn) == 1 && rn <= 20 &&
	       strchr(",:!", p[n - 1]) && !is_answer_word(rest, rn) &&
	       lower_word(rest, rn - 1);
}

static const char *const signoff_phrases[] = {
	"thanks",
	"thank you",
	"thx",
	"thanks a lot",
	"thanks again",
	"many thanks",
	"thanks in advance",
	"regards",
	"best regards",
	"kind regards",
	"warm regards",
	"with regards",
	"best wishes",
	"with best wishes",
	"cheers",
	"br",
	"best",
	"ciao",
	"sincerely",
	"yours",
	"tia",
	"greetings",
	"all the best",
	"take care",
	"thanks and regards",
	"gr\xc3\xbc\xc3\x9f"
	"e", /* Grüße */
	"viele gr\xc3\xbc\xc3\x9f"
	"e",
	"beste gr\xc3\xbc\xc3\x9f"
	"e",
	"gru\xc3\x9f",
	"mfg",
	"cordialement",
	"merci",
	"saludos",
	"pozdrawiam",
	"groeten",
	"\xe8\xb0\xa2\xe8\xb0\xa2", /* 谢谢 */
	"\xe6\x84\x9f\xe8\xb0\xa2", /* 感谢 */
	NULL,
};

/*
 * A closing: the word alone ("Thanks,", "Best regards") or, after
 * punctuation, a name ("Thanks, Phil", "Cheers, Jane Doe").  The words
 * after it are the rest of a sentence otherwise.
 */
static int is_signoff(const char *p, size_t n)
{
	const char *rest;
	size_t rn;
	int punct;

	trim(&p, &n);
	if (!n || n > 60 ||
	    !phrase_rest(p, n, signoff_phrases, &rest, &rn, &punct))
		return 0;
	return !rn || (punct && name_words(rest, rn, 3, 0));
}
/* "Petr", "- Marijn", "Honza", "Sun Shijie": a name under a sign-off. */
static int is_name_line(const char *p, size_t n)
{
	size_t i;

	trim(&p, &n);
	while (n && (*p == '-' || *p == '~' || *p == ' ')) {
		p++;
		n--;
	}
	if (!n || n > 40 || count_words(p, n) > 3 || is_answer_word(p, n))
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (!(is_alpha(c) || c >= 0x80 || c == ' ' || c == '.' ||
		      c == '-' || c == '\'' || c == ','))
			return 0;
	}
	return !(n > 2 && p[n - 1] == '.' && p[n - 3] != ' ');
}

/* "For the series:", "Feel free to add:" before a trailer. */
static int is_trailer_intro(const char *p, size_t n)
{
	trim(&p, &n);
	if (!n)
		return 0;
	if ((p[n - 1] == ':' || p[n - 1] == ',') && count_words(p, n) <= 6)
		return 1;
	return 0;
}

static int is_trailer(const char *p, size_t n)
{
	struct trailer_list l;
	int got;

	trailer_list_init(&l);
	got = trailers_parse_line(&l, p, n);
	trailer_list_release(&l);
	return got > 0;
}

/*
 * Is own line i a trailer line, or the second half of one wrapped by the
 * mailer ("Reviewed-by: A Long Name" / "<a@b.c>")?  Trailer lines under
 * a line that introduces an example ("please add a line like:") are
 * prose: trailers_scan() does not take them either.
 */
static int is_trailer_at(const struct reply *r, size_t i)
{
	const struct reply_line *l = &r->lines[i];
	size_t k, blanks = 0;

	if (is_trailer(l->p, l->len)) {
		for (k = i; k > 0 && i - k < 16;) {
			const struct reply_line *pl = &r->lines[--k];

			if (pl->kind == RL_BLANK && blanks++ < 3)
				continue;
			if (pl->kind != RL_OWN)
				break;
			if (trailers_example_intro(pl->p, pl->len))
				return 0;
			if (!is_trailer(pl->p, pl->len))
				break;
		}
		return 1;
	}
	return i > 0 && r->lines[i - 1].kind == RL_OWN &&
	       trailers_line_continues(r->lines[i - 1].p, r->lines[i - 1].len,
				       l->p, l->len);
}

/* ------------------------------------------------------------------ */
/* NAK */

/* Word characters for NAK detection: "IGNORE_NAK" is one word. */
static int nak_word_char(int c)
{
	return is_alnum(c) || c == '_' || c == '\'';
}

static int word_in(const char *w, size_t n, const char *const *list)
{
	for (; *list; list++)
		if (strlen(*list) == n && starts_icase(w, n, *list))
			return 1;
	return 0;
}

struct word {
	const char *p;
	size_t n;
	char before; /* the separator before it ('\0' at the start) */
};

/* Does a word of list occur among w[from, to)? */
static int any_word_in(const struct word *w, size_t from, size_t to,
		       const char *const *list)
{
	size_t j;

	for (j = from; j < to; j++)
		if (word_in(w[j].p, w[j].n, list))
			return 1;
	return 0;
}

/* Does w start with one of the stems ("withdr" for withdraw, withdrew,
 * withdrawing ...)? */
static int word_stem_in(const struct word *w, const char *const *stems)
{
	for (; *stems; stems++)
		if (w->n >= strlen(*stems) && starts_icase(w->p, w->n, *stems))
			return 1;
	return 0;
}

/* The forms of the word NAK. */
enum nak_word_form {
	NAKW_NONE,
	NAKW_BASE, /* NAK, NACK, an emphatic NAAAK */
	NAKW_ING, /* NACKing, nak'ing, nakking */
	NAKW_PAST, /* NACKed, NAKed, nak'd, nakked */
	NAKW_OTHER, /* NAKs, NAK's: the protocol's verb, only a mention */
};

/*
 * Which form of NAK the word w[0..n) is, any case: N, one or more A
 * ("NAAAK" is emphasis, not another word), an optional C, one or more K,
 * then a suffix.  Underscores around it are emphasis ("_NACK_"), inside
 * they make an identifier (I2C_M_IGNORE_NAK), which is no word.  "naked"
 * is the English word unless its NAK is in capitals ("NAKed").
 */
static enum nak_word_form nak_word(const char *w, size_t n)
{
	static const struct {
		const char *suffix;
		enum nak_word_form form;
	} suffixes[] = {
		{ "", NAKW_BASE },   { "ing", NAKW_ING },  { "'ing", NAKW_ING },
		{ "ed", NAKW_PAST }, { "'d", NAKW_PAST },  { "'ed", NAKW_PAST },
		{ "s", NAKW_OTHER }, { "'s", NAKW_OTHER }, { "es", NAKW_OTHER },
	};
	size_t i, k, stem;

	while (n && w[0] == '_') {
		w++;
		n--;
	}
	while (n && w[n - 1] == '_')
		n--;
	if (n < 3 || lower((unsigned char)w[0]) != 'n')
		return NAKW_NONE;
	for (i = 1; i < n && lower((unsigned char)w[i]) == 'a'; i++)
		;
	if (i == 1)
		return NAKW_NONE;
	if (i < n && lower((unsigned char)w[i]) == 'c')
		i++;
	if (i >= n || lower((unsigned char)w[i]) != 'k')
		return NAKW_NONE;
	while (i < n && lower((unsigned char)w[i]) == 'k')
		i++;
	stem = i;
	for (k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
		if (strlen(suffixes[k].suffix) != n - stem ||
		    !starts_icase(w + stem, n - stem, suffixes[k].suffix))
			continue;
		if (stem == 3 && suffixes[k].suffix[0] == 'e' &&
		    memcmp(w, "NAK", 3))
			return NAKW_NONE; /* "naked", "Naked" */
		return suffixes[k].form;
	}
	return NAKW_NONE;
}

/* Does text[0..n) hold the word NAK in any form (a mention)? */
static int has_nak_word(const char *p, size_t n)
{
	size_t i = 0, start;

	while (i < n) {
		while (i < n && !nak_word_char((unsigned char)p[i]))
			i++;
		start = i;
		while (i < n && nak_word_char((unsigned char)p[i]))
			i++;
		if (i > start && nak_word(p + start, i - start) != NAKW_NONE)
			return 1;
	}
	return 0;
}

/* "hh:mm:ss" at p[0..n)? */
static int clock_at(const char *p, size_t n)
{
	return n >= 8 && is_digit((unsigned char)p[0]) &&
	       is_digit((unsigned char)p[1]) && p[2] == ':' &&
	       is_digit((unsigned char)p[3]) && is_digit((unsigned char)p[4]) &&
	       p[5] == ':' && is_digit((unsigned char)p[6]) &&
	       is_digit((unsigned char)p[7]);
}

/*
 * A line of code or of a log, where NAK is the protocol's word (I2C,
 * USB, SPI flash), not a verdict.  Code: a preprocessor line, a comment,
 * a statement or a brace at its end, C's operators.  A log: the
 * kernel's timestamp ("[   12.345678] "), a date and a time at its start
 * (syslog, journalctl, ISO 8601), a driver's device prefix as
 * dev_printk() writes it ("i2c i2c-1: ", "i801_smbus 0000:00:1f.4: ").
 */
static int code_or_log_line(const char *p, size_t n)
{
	static const char *const operators[] = {
		"==", "!=", "->", "&&", "||", "|=", "&=", "/*", "*/", NULL,
	};
	const char *const *op;
	size_t i, t1, t2;
	int digit = 0, sep = 0;

	trim(&p, &n);
	if (!n)
		return 0;
	if ((p[0] == '#' && n > 1 && is_alpha((unsigned char)p[1])) ||
	    starts_icase(p, n, "//") || (p[n - 1] && strchr(";{}", p[n - 1])))
		return 1;
	for (op = operators; *op; op++)
		if (mem_find(p, n, *op, 2))
			return 1;
	/* "[   12.345678] " */
	if (p[0] == '[') {
		for (i = 1; i < n && p[i] == ' '; i++)
			;
		if (i < n && is_digit((unsigned char)p[i])) {
			while (i < n &&
			       (is_digit((unsigned char)p[i]) || p[i] == '.'))
				i++;
			if (i < n && p[i] == ']')
				return 1;
		}
	}
	/* "Dec  6 21:00:01 host kernel: ", "2024-01-02T10:00:00Z " */
	for (i = 0; i < n && i < 24; i++)
		if (clock_at(p + i, n - i) &&
		    (is_digit((unsigned char)p[0]) ||
		     (i > 4 && is_alpha((unsigned char)p[0]) &&
		      is_alpha((unsigned char)p[1]) &&
		      is_alpha((unsigned char)p[2]) && p[3] == ' ')))
			return 1;
	/* "i2c i2c-1: ": a driver's name, then its device's */
	for (t1 = 0; t1 < n && (is_digit((unsigned char)p[t1]) ||
				(p[t1] >= 'a' && p[t1] <= 'z') || p[t1] == '_');
	     t1++)
		;
	if (!t1 || t1 >= n || p[t1] != ' ')
		return 0;
	for (t2 = t1 + 1; t2 < n && p[t2] != ' '; t2++) {
		if (is_digit((unsigned char)p[t2]))
			digit = 1;
		else if (p[t2] && strchr("-.:", p[t2]) && t2 + 1 < n &&
			 p[t2 + 1] != ' ')
			sep = 1;
	}
	return digit && sep && t2 < n && p[t2 - 1] == ':';
}

/*
 * A commit's title as git log and a pasted commit show it: a lower-case
 * subsystem prefix and a colon ("i2c: xiic: NAK the last byte"), the
 * kernel's convention (Documentation/process/submitting-patches.rst).
 * Not the labels people write in lower case ("nit:", "update:").
 */
static int commit_title_line(const char *p, size_t n)
{
	static const char *const labels[] = {
		"nit",	"note", "ps",	"edit", "update", "btw",  "fyi",
		"also", "and",	"imho", "imo",	"re",	  "todo", NULL,
	};
	size_t i;
	int alpha = 0;

	trim(&p, &n);
	for (i = 0; i < n && ((p[i] >= 'a' && p[i] <= 'z') || is_digit(p[i]) ||
			      (p[i] && strchr("_./-", p[i])));
	     i++)
		if (is_alpha((unsigned char)p[i]))
			alpha = 1;
	return alpha && i >= 2 && i + 1 < n && p[i] == ':' && p[i + 1] == ' ' &&
	       !word_in(p, i, labels);
}

/*
 * Is p + off inside a quotation that opens in p[0..off): an odd number
 * of '"' before it, or more opening than closing typographic quotes
 * (U+201C, U+201E, U+00AB opening; U+201D, U+00BB closing)?
 */
static int inside_quotes(const char *p, size_t off)
{
	size_t i, straight = 0;
	long curly = 0;

	for (i = 0; i < off; i++) {
		if (p[i] == '"')
			straight++;
		else if (i + 2 < off && !memcmp(p + i, "\xe2\x80", 2) &&
			 (p[i + 2] == '\x9c' || p[i + 2] == '\x9e'))
			curly++;
		else if (i + 2 < off && !memcmp(p + i, "\xe2\x80\x9d", 3))
			curly--;
		else if (i + 1 < off && !memcmp(p + i, "\xc2\xab", 2))
			curly++;
		else if (i + 1 < off && !memcmp(p + i, "\xc2\xbb", 2))
			curly--;
	}
	return straight % 2 || curly > 0;
}

/*
 * A NAK is the reviewer's verdict: "NACK." on a line, "NAK for this",
 * "Still a NACK", "self-NACK this series", "I NAK this".  The word is
 * also an I2C/USB protocol term ("the device NAKs", "on NAK we retry",
 * "ACK/NAK", I2C_M_IGNORE_NAK), so it counts only where a verdict sits:
 * alone in its clause, opening a clause followed by "for", "from", "on",
 * "this"..., or after "I", "my", "a" (verdict-style) and the like.  And
 * only when it is said, not merely mentioned: never negated ("not a
 * NAK"), asked ("Why the NAK?"), withdrawn ("I withdraw my NAK", "NAK
 * retracted"), hypothetical ("I was going to NAK this", "I would NAK it
 * if ..."), conditional ("If this breaks the ABI, NAK"), someone else's
 * ("you may want to NAK this"), a report of an earlier one ("I NACKed
 * v1"), hedged ("I'm inclined to NAK this", "this will probably get
 * NAKed") or quoted ("he said \"NAK\"", a commit's title in quotes).
 * A negation anywhere before the word in its clause counts ("I don't
 * think this deserves a NAK").  Emphasis is the same word ("NAAAK",
 * "_NACK_", "*NAK*"), and the verb said by the author is one ("I am
 * NACKing this", "I hereby NAK this").  A line of code or of a log is
 * never one (code_or_log_line()).  When unsure it is no NAK: the words
 * reach the forge as a comment, nothing is blocked.
 */
#define NAK_WORDS_MAX 128

/*
 * Read the words of p[0..n) that start at or after from, at most
 * NAK_WORDS_MAX words at a time.  *cut is 0 when every word was read,
 * else the offset of the first word not read; the next window starts at
 * *ctx, a sentence start or, in a sentence longer than a window, a
 * quarter of a window back, so that what comes before still counts.
 */
static int nak_window(const char *p, size_t n, size_t from, size_t *cut,
		      size_t *ctx)
{
	static const char *const negations[] = {
		"not",	    "don't",   "dont",	  "isn't",    "wasn't",
		"won't",    "without", "never",	  "nor",      "doesn't",
		"didn't",   "cannot",  "can't",	  "wouldn't", "shouldn't",
		"couldn't", "aren't",  "haven't", "hasn't",   "hardly",
		"neither",  NULL,
	};
	static const char *const verdict_next[] = {
		"for",	  "from", "on",	     "this", "that",  "it",
		"here",	  "the",  "because", "as",   "since", "until",
		"unless", "but",  "and",     "then", "again", "still",
		"to",	  "now",  "in",	     "with", "till",  NULL,
	};
	static const char *const verdict_prev[] = {
		"i",	  "i'm",      "im",	  "we",		"my",	"our",
		"strong", "strongly", "hard",	  "firm",	"big",	"still",
		"i'll",	  "we'll",    "definite", "definitely", "self", "gets",
		"get",	  "got",      "clear",	  "clearly",	NULL,
	};
	/* these say "NAK" for the one before them: "I will NAK" */
	static const char *const modal_prev[] = {
		"must", "will", "have", "do", NULL,
	};
	static const char *const own[] = {
		"i",	 "i'm",	 "im",	  "we", "we're", "i've",
		"we've", "i'll", "we'll", "my", "our",	 NULL,
	};
	static const char *const others[] = {
		"you",	   "you'd",    "you'll", "he",	    "she",    "they",
		"someone", "somebody", "anyone", "anybody", "people", "others",
		"nobody",  "he'll",    "she'll", "they'll", "they'd", NULL,
	};
	/* a NAK that is not (yet, or any more) said */
	static const char *const hypothetical[] = {
		"would",      "i'd",	     "we'd",	"could",    "might",
		"may",	      "should",	     "almost",	"nearly",   "tempted",
		"considered", "considering", "thought", "wanted",   "was",
		"were",	      "had",	     "if",	"whether",  "perhaps",
		"maybe",      "probably",    "likely",	"possibly", "inclined",
		"leaning",    "expect",	     "suspect", "guess",    "unlikely",
		NULL,
	};
	/* "this got NAKed": someone else's, reported or foretold */
	static const char *const passive[] = {
		"get", "gets", "got", "getting", "gotten", NULL,
	};
	/* between the author and the verb: "I am NACKing this", "I
	 * hereby NAK this" */
	static const char *const own_aux[] = {
		"am",	      "are",  "hereby",	    "herewith", "formally",
		"officially", "also", "now",	    "really",	"explicitly",
		"therefore",  "thus", "hence",	    "just",	"do",
		"must",	      "will", "definitely", NULL,
	};
	static const char *const conclusions[] = {
		"so", "hence", "thus", "therefore", "consequently", NULL,
	};
	static const char *const own_subject[] = {
		"i", "i'm", "im", "we", "we're", "i'll", "we'll", NULL,
	};
	static const char *const retract_stems[] = {
		"withdr",  "retract", "rescind",   "revok", "lift",
		"drop",	   "remov",   "disregard", "ignor", "cancel",
		"scratch", "undo",    NULL,
	};
	static const char *const retracted[] = {
		"withdrawn", "retracted", "rescinded", "revoked",  "lifted",
		"dropped",   "removed",	  "cancelled", "canceled", "void",
		"gone",	     "anymore",	  "obsolete",  NULL,
	};
	static const char *const earlier[] = {
		"earlier",  "previously", "before", "last",
		"previous", "once",	  NULL,
	};
	static const char *const openers[] = {
		"and",	     "so",    "but",	"hence",   "thus",
		"therefore", "sorry", "then",	"also",	   "well",
		"ok",	     "okay",  "anyway", "overall", NULL,
	};
	static const char *const to_nak_next[] = {
		"this", "it", "that", "the", "these", "both", "all", NULL,
	};
	static const char *const a_nak_next[] = {
		"from", "for",	 "on",	"here", "unless", "until", "because",
		"as",	"since", "but", "and",	"again",  "now",   NULL,
	};
	struct word w[NAK_WORDS_MAX];
	size_t nw = 0, i, k, last;

	/* words and the separators before them */
	for (i = 0; i < n && nw < sizeof(w) / sizeof(w[0]);) {
		char before = '\0';

		while (i < n && !nak_word_char((unsigned char)p[i])) {
			if (p[i] != ' ' && p[i] != '\t')
				before = p[i];
			else if (!before)
				before = ' ';
			i++;
		}
		if (i >= n)
			break;
		w[nw].p = p + i;
		w[nw].before = before;
		while (i < n && nak_word_char((unsigned char)p[i]))
			i++;
		w[nw].n = (size_t)(p + i - w[nw].p);
		nw++;
	}
	/* more words than a window: read up to the last sentence start, a
	 * word without its right context could be misread */
	*cut = *ctx = 0;
	last = nw;
	if (nw == NAK_WORDS_MAX && i < n) {
		for (last = nw - 1; last > 0; last--)
			if (w[last].before && strchr(".;!?", w[last].before))
				break;
		if (last) {
			*cut = *ctx = (size_t)(w[last].p - p);
		} else {
			last = nw / 2;
			*cut = (size_t)(w[last].p - p);
			*ctx = (size_t)(w[last - nw / 4].p - p);
		}
	}
	for (k = 0; k < last; k++) {
		const char *after, *end = p + n;
		size_t j, clause, clause_end, sentence, sentence_end;
		int first, verdict = 0, negated = 0, stop;
		enum nak_word_form form = nak_word(w[k].p, w[k].n);
		char next_sep;

		if (w[k].p < p + from || form == NAKW_NONE ||
		    form == NAKW_OTHER)
			continue;
		after = w[k].p + w[k].n;
		/* "ACK/NAK", "NAK/ACK", "Nacked-by:" (a trailer's business) */
		if (w[k].before == '/' || (after < end && *after == '/'))
			continue;
		if (after < end && *after == '-' &&
		    mem_find(after, (size_t)(end - after), "-by", 3) == after)
			continue;
		/* quoted: "he said \"NAK\"", `NAK`, a commit's title in a
		 * Fixes: line */
		if (w[k].before == '"' || w[k].before == '`' ||
		    (after < end && (*after == '"' || *after == '`')) ||
		    inside_quotes(p, (size_t)(w[k].p - p)))
			continue;
		/* the separator after the word, blanks skipped */
		while (after < end && (*after == ' ' || *after == '\t'))
			after++;
		next_sep = after < end ? *after : '\0';
		if (next_sep == '?')
			continue;
		/* the rest of its sentence must not be a question */
		{
			const char *q = after;

			while (q < end && !strchr(".!?", *q))
				q++;
			if (q < end && *q == '?')
				continue;
		}
		/* where its clause and its sentence start and end */
		for (clause = k; clause > 0; clause--)
			if (w[clause].before &&
			    strchr(".,;:!?(", w[clause].before))
				break;
		for (sentence = k; sentence > 0; sentence--)
			if (w[sentence].before &&
			    strchr(".;!?", w[sentence].before))
				break;
		for (clause_end = k + 1; clause_end < nw; clause_end++)
			if (w[clause_end].before &&
			    strchr(".,;:!?()", w[clause_end].before))
				break;
		for (sentence_end = k + 1; sentence_end < nw; sentence_end++)
			if (w[sentence_end].before &&
			    strchr(".;!?", w[sentence_end].before))
				break;
		/* a conclusion opens a clause of its own when the author's
		 * verdict follows it: "This doesn't build so NAK", "... hence
		 * I NAK this", but not "I'm not so sure about a NAK" */
		for (j = clause; j < k; j++)
			if (word_in(w[j].p, w[j].n, conclusions) &&
			    (j + 1 == k ||
			     word_in(w[j + 1].p, w[j + 1].n, own_subject)))
				clause = j;
		/* "so NAK", "and NAK for ...": openers do not count */
		first = 1;
		for (j = clause; j < k; j++)
			if (!word_in(w[j].p, w[j].n, openers))
				first = 0;
		stop = !next_sep || strchr(".,;:!)-", next_sep) || k + 1 == nw;
		/* a negation in its clause before it ("I do not intend to
		 * NAK this", "I don't think this deserves a NAK"), or "no
		 * NAK" */
		if (any_word_in(w, clause, k, negations))
			negated = 1;
		if (k > 0 && w[k - 1].n == 2 &&
		    starts_icase(w[k - 1].p, 2, "no") &&
		    !(w[k].before && strchr(",;:.!?", w[k].before)))
			negated = 1;
		if (negated)
			continue;
		/* conditional: "If this breaks the ABI, NAK.", "NAK if you
		 * keep it" (but "NAK: it breaks the build if X=n" is one) */
		for (j = sentence; j < sentence_end && j < k + 3; j++)
			if (w[j].n == 2 && starts_icase(w[j].p, 2, "if") &&
			    (j < k || j < clause_end))
				negated = 1;
		/* hypothetical or past: "I was going to NAK", "I would NAK" */
		if (any_word_in(w, clause, k, hypothetical))
			negated = 1;
		/* withdrawn: "I withdraw my NAK", "NAK retracted", "my NAK
		 * no longer stands" */
		for (j = k > 4 ? k - 4 : 0; j < k; j++)
			if (j >= clause && word_stem_in(&w[j], retract_stems))
				negated = 1;
		for (j = k + 1; j < clause_end && j < k + 4; j++) {
			if (word_in(w[j].p, w[j].n, retracted))
				negated = 1;
			if (w[j].n == 6 && starts_icase(w[j].p, 6, "longer"))
				negated = 1;
		}
		/* someone else's: "you may want to NAK this" */
		{
			int other = 0;

			for (j = clause; j < k; j++) {
				if (word_in(w[j].p, w[j].n, others))
					other = 1;
				else if (word_in(w[j].p, w[j].n, own))
					other = 0;
			}
			negated |= other;
		}
		if (form == NAKW_PAST && k > clause &&
		    word_in(w[k - 1].p, w[k - 1].n, passive))
			negated = 1;
		/* a report of an earlier one: "I NACKed v1 of this" */
		if (form == NAKW_PAST && k + 1 < clause_end &&
		    (word_in(w[k + 1].p, w[k + 1].n, earlier) ||
		     (w[k + 1].n >= 2 &&
		      lower((unsigned char)w[k + 1].p[0]) == 'v' &&
		      is_digit((unsigned char)w[k + 1].p[1])) ||
		     (k + 2 < clause_end &&
		      word_in(w[k + 2].p, w[k + 2].n, earlier))))
			negated = 1;
		if (negated)
			continue;
		if (first &&
		    (stop || (k + 1 < nw &&
			      (word_in(w[k + 1].p, w[k + 1].n, verdict_next) ||
			       (w[k + 1].n >= 2 &&
				lower((unsigned char)w[k + 1].p[0]) == 'v' &&
				is_digit((unsigned char)w[k + 1].p[1]))))))
			verdict = 1;
		if (k > 0 && word_in(w[k - 1].p, w[k - 1].n, verdict_prev))
			verdict = 1;
		/* "I will NAK this", "we must NAK", not "Greg will NAK" */
		if (k > 1 && word_in(w[k - 1].p, w[k - 1].n, modal_prev) &&
		    word_in(w[k - 2].p, w[k - 2].n, own))
			verdict = 1;
		/* "I have to NAK this", "I'm going to NACK the series" */
		if (k > 0 && k + 1 < nw && w[k - 1].n == 2 &&
		    starts_icase(w[k - 1].p, 2, "to") &&
		    word_in(w[k + 1].p, w[k + 1].n, to_nak_next) &&
		    any_word_in(w, clause, k, own))
			verdict = 1;
		/* the verb with the author as its subject and an object:
		 * "I am NACKing this", "we hereby NAK the series" */
		if (form != NAKW_PAST && k + 1 < nw &&
		    word_in(w[k + 1].p, w[k + 1].n, to_nak_next)) {
			for (j = k; j > clause &&
				    word_in(w[j - 1].p, w[j - 1].n, own_aux);
			     j--)
				;
			if (j > clause &&
			    word_in(w[j - 1].p, w[j - 1].n, own_subject))
				verdict = 1;
		}
		/* "Still a NACK", "gets a NAK from me", but not "sends a NAK
		 * to the host" */
		if (k > 0 && w[k - 1].n == 1 && lower(w[k - 1].p[0]) == 'a' &&
		    (stop || (k + 1 < nw &&
			      word_in(w[k + 1].p, w[k + 1].n, a_nak_next))))
			verdict = 1;
		if (verdict)
			return 1;
	}
	return 0;
}

int reply_line_is_nak(const char *p, size_t n)
{
	size_t start = 0, from = 0, cut, ctx;

	if (code_or_log_line(p, n) || commit_title_line(p, n))
		return 0;
	/* a long line (a flowed paragraph) is read a window at a time */
	for (;;) {
		if (nak_window(p + start, n - start, from - start, &cut, &ctx))
			return 1;
		if (!cut)
			return 0;
		from = start + cut;
		start += ctx;
	}
}

/* ------------------------------------------------------------------ */
/* classification */

static void set_kind(struct reply *r, size_t from, size_t to, enum reply_kind k,
		     int only_unquoted)
{
	size_t i;

	for (i = from; i < to && i < r->nr; i++) {
		if (only_unquoted && r->lines[i].depth)
			continue;
		r->lines[i].kind = k;
	}
}

static size_t next_nonblank(const struct reply *r, size_t i)
{
	while (i < r->nr) {
		const char *p = r->lines[i].p;
		size_t n = r->lines[i].len;

		trim(&p, &n);
		if (n)
			return i;
		i++;
	}
	return r->nr;
}

/* The header block starting at i (a From: line): its end (exclusive),
 * or i when it is not one. */
static size_t header_block(const struct reply *r, size_t i)
{
	size_t j, last = i;
	int others = 0;
	enum hdr h;

	if (header_field(r->lines[i].content, r->lines[i].clen) != H_FROM)
		return i;
	for (j = i + 1; j < r->nr && j < i + 16; j++) {
		const char *p = r->lines[j].content;
		size_t n = r->lines[j].clen;

		if (r->lines[j].depth != r->lines[i].depth)
			break;
		trim(&p, &n);
		if (!n)
			break;
		h = header_field(p, n);
		if (h == H_FROM)
			break;
		if (h != H_NONE)
			others++;
		last = j; /* header or a folded continuation */
	}
	return others ? last + 1 : i;
}

/*
 * The header block at line i: its end (exclusive), or i.  By the words
 * of the languages seen on lists (header_block()), or by its structure
 * (struct_header_block()) where a block may open: under a separator
 * (where = 2: two fields suffice) or at the start of a paragraph (where
 * = 1: three fields, as every mailer writes at least From, Date and
 * Subject, and a tester's "Build: ... / Boot: OK" has two), never in the
 * middle of one (where = 0: the "Author:"/"Date:" of a pasted "git log"
 * stand under "commit ...").
 */
static size_t header_block_at(const struct reply *r, size_t i, int where)
{
	size_t end = header_block(r, i);

	if (end == i && where)
		end = struct_header_block(r, i, where == 2 ? 2 : 3);
	return end;
}

/* Does own line i start a paragraph (the text's first line, or under an
 * empty line or a phone's "Sent from my ..." line)? */
static int paragraph_start(const struct reply *r, size_t i)
{
	return !i || r->lines[i - 1].kind == RL_BLANK ||
	       r->lines[i - 1].kind == RL_SIG;
}

/* Does a "From:" line or a header block follow the separator at i? */
static int separated_block(const struct reply *r, size_t i)
{
	size_t nb = next_nonblank(r, i + 1);

	return nb < r->nr && !r->lines[nb].depth &&
	       (header_field(r->lines[nb].content, r->lines[nb].clen) ==
			H_FROM ||
		header_block_at(r, nb, 2) > nb);
}

/*
 * Did the author write something of substance before line i?  The scan
 * is remembered (st->scan, st->first) so that a message full of
 * attribution lines stays linear; classify() moves lines away from
 * RL_OWN only at or after the line it is on.
 */
struct own_state {
	size_t scan; /* lines [0, scan) were looked at */
	long first; /* the first own line of substance, or -1 */
};

static int own_before(const struct reply *r, struct own_state *st, size_t i)
{
	while (st->first < 0 && st->scan < i) {
		const struct reply_line *l = &r->lines[st->scan];

		if (l->kind == RL_OWN && !is_greeting(l->p, l->len) &&
		    !is_signoff(l->p, l->len) && !is_trim_marker(l->p, l->len))
			st->first = (long)st->scan;
		st->scan++;
	}
	return st->first >= 0 && (size_t)st->first < i;
}

/*
 * The last line of a patch pasted into [from, to), or -1: diffstat
 * summary, hunk lines (by the counts of their "@@" headers), or the
 * "-- " / version pair format-patch ends with.
 */
static long patch_end(const struct reply *r, size_t from, size_t to)
{
	long last = -1;
	int old_left = 0, new_left = 0;
	size_t i;

	for (i = from; i < to; i++) {
		const char *p = r->lines[i].content;
		size_t n = r->lines[i].clen;
		struct scan s;
		uint64_t a, b, c, d;

		if (old_left > 0 || new_left > 0) {
			char k = n ? p[0] : ' ';

			if (k == ' ' || k == '+' || k == '-' || k == '\\') {
				if (k != '+' && k != '\\')
					old_left--;
				if (k != '-' && k != '\\')
					new_left--;
				last = (long)i;
				continue;
			}
			old_left = new_left = 0;
		}
		if (diffstat_summary(p, n)) {
			last = (long)i;
			continue;
		}
		scan_init(&s, p, n);
		if (scan_lit(&s, "@@ -") && scan_u64(&s, 10000000, &a)) {
			b = 1;
			d = 1;
			if (scan_char(&s, ','))
				scan_u64(&s, 10000000, &b);
			if (scan_lit(&s, " +") && scan_u64(&s, 10000000, &c)) {
				if (scan_char(&s, ','))
					scan_u64(&s, 10000000, &d);
				old_left = (int)b;
				new_left = (int)d;
				last = (long)i;
			}
			continue;
		}
		if (is_sig_marker(p, n) && i + 1 < to) {
			const char *v = r->lines[i + 1].content;
			size_t vn = r->lines[i + 1].clen;

			trim(&v, &vn);
			if (vn && is_digit((unsigned char)v[0]) && last >= 0) {
				last = (long)i + 1;
				i++;
			}
		}
	}
	return last;
}

/*
 * An original follows line i without '>' (nb: its first line).  When
 * the author wrote above it, the rest of the message is that original;
 * when it opens the message, it ends with the patch it carries.
 * Returns where classification continues.
 */
static size_t mark_original(struct reply *r, struct own_state *st, size_t brk,
			    size_t nb)
{
	long end;

	if (!own_before(r, st, brk)) {
		end = patch_end(r, nb, r->nr);
		if (end >= 0) {
			set_kind(r, nb, (size_t)end + 1, RL_ORIG, 1);
			return (size_t)end + 1;
		}
	}
	set_kind(r, nb, r->nr, RL_ORIG, 1);
	return r->nr;
}

static int list_footer_at(const struct reply *r, size_t i)
{
	size_t j, k;

	if (underscore_rule(r->lines[i].p, r->lines[i].len)) {
		for (j = i + 1, k = 0; j < r->nr && k < 3; j++) {
			const char *p = r->lines[j].p;
			size_t n = r->lines[j].len;

			trim(&p, &n);
			if (!n)
				continue;
			k++;
			if (contains_icase(p, n, "mailing list") ||
			    contains_icase(p, n, "listinfo") ||
			    contains_icase(p, n, "https://lists.") ||
			    contains_icase(p, n, "http://lists."))
				return 1;
		}
		return 0;
	}
	/* "Intel-wired-lan mailing list" then its address */
	{
		const char *p = r->lines[i].p;
		size_t n = r->lines[i].len;

		trim(&p, &n);
		if (ends_icase(p, n, " mailing list") &&
		    count_words(p, n) <= 5 && i + 1 < r->nr &&
		    (mem_find(r->lines[i + 1].p, r->lines[i + 1].len, "@", 1) ||
		     mem_find(r->lines[i + 1].p, r->lines[i + 1].len, "http",
			      4)))
			return 1;
	}
	return 0;
}

/*
 * The lines of an attribution starting at own line i: 1, 2 when it is
 * wrapped over two lines ("On ..., Jane <" / "j@example.org> wrote:",
 * "Am ... schrieb Jane" / "<j@example.org>:", "Le ... <j@example.org> a"
 * / "écrit :", "03.12.2026 10:00, Jane <j@example.org>" / "пишет:"),
 * or 0.  A line with a trailer or a NAK never opens one.
 */
static size_t attribution_at(const struct reply *r, size_t i)
{
	char joined[2 * ATTRIB_LINE_MAX + 1];
	const char *p, *q, *v;
	size_t n, m, k, vn;
	int bare = 0;

	if (attribution_end(r->lines[i].p, r->lines[i].len))
		return 1;
	if (i + 1 >= r->nr || r->lines[i + 1].kind != RL_OWN)
		return 0;
	p = r->lines[i].p;
	n = r->lines[i].len;
	q = r->lines[i + 1].p;
	m = r->lines[i + 1].len;
	trim(&p, &n);
	trim(&q, &m);
	if (!n || n > ATTRIB_LINE_MAX || !m || m > ATTRIB_LINE_MAX ||
	    count_words(q, m) > 8)
		return 0;
	/* "Le ... <a@b> a" / "écrit :": glue the halves back together */
	memcpy(joined, p, n);
	k = n;
	if (p[n - 1] != '<' && p[n - 1] != '(')
		joined[k++] = ' ';
	memcpy(joined + k, q, m);
	k += m;
	if (!attribution_end(joined, k))
		return 0;
	if (is_trailer(p, n) || reply_line_is_nak(p, n))
		return 0;
	if (attribution_head(p, n))
		return 2;
	/* the second half is no attribution alone ("a@b>:") or only the
	 * verb ("wrote:", "пишет:"): the first needs a date or address */
	v = q;
	vn = m;
	if (attribution_end(q, m)) {
		if (!strip_colon(&v, &vn) ||
		    attribution_verb(v, vn, &bare) < 0 || !bare)
			return 0;
	}
	return has_digit(p, n) || memchr(p, '@', n) ? 2 : 0;
}

/* attribution_strong() for the attribution at lines [i, i + k). */
static int attribution_strong_at(const struct reply *r, size_t i, size_t k)
{
	char joined[2 * ATTRIB_LINE_MAX + 1];
	const char *p = r->lines[i].p, *q;
	size_t n = r->lines[i].len, m;

	trim(&p, &n);
	if (k < 2 || n > ATTRIB_LINE_MAX)
		return attribution_strong(p, n);
	q = r->lines[i + 1].p;
	m = r->lines[i + 1].len;
	trim(&q, &m);
	if (m > ATTRIB_LINE_MAX)
		return 0;
	memcpy(joined, p, n);
	joined[n] = ' ';
	memcpy(joined + n + 1, q, m);
	return attribution_strong(joined, n + 1 + m);
}

/*
 * An address and a colon right above the quote ("* Jane
 * <j@example.org> [date]:"), maybe wrapped after its "<": the lines it
 * takes, or 0.
 */
static size_t address_attribution_at(const struct reply *r, size_t i)
{
	const struct reply_line *l = &r->lines[i], *l2;
	const char *p = l->p;
	size_t n = l->len, nb;

	if (l->len < ATTRIB_LINE_MAX && ends_colon(l->p, l->len) &&
	    (mem_find(l->p, l->len, "@", 1) ||
	     mem_find(l->p, l->len, " <", 2)) &&
	    (nb = next_nonblank(r, i + 1)) < r->nr && r->lines[nb].depth &&
	    !is_trailer(l->p, l->len))
		return 1;
	trim(&p, &n);
	if (!n || n > ATTRIB_LINE_MAX || (p[n - 1] != '<' && p[n - 1] != '(') ||
	    i + 1 >= r->nr || r->lines[i + 1].kind != RL_OWN)
		return 0;
	l2 = &r->lines[i + 1];
	if (l2->len < ATTRIB_LINE_MAX && ends_colon(l2->p, l2->len) &&
	    mem_find(l2->p, l2->len, "@", 1) &&
	    count_words(l2->p, l2->len) <= 2 &&
	    (nb = next_nonblank(r, i + 2)) < r->nr && r->lines[nb].depth &&
	    !is_trailer(p, n))
		return 2;
	return 0;
}

static void classify(struct reply *r)
{
	struct own_state st = { 0, -1 };
	size_t i, j, k, nb, end;

	for (i = 0; i < r->nr; i++) {
		struct reply_line *l = &r->lines[i];
		const char *p = l->p;
		size_t n = l->len;

		trim(&p, &n);
		if (l->depth)
			l->kind = RL_QUOTE;
		else if (!n)
			l->kind = RL_BLANK;
		else
			l->kind = RL_OWN;
	}

	for (i = 0; i < r->nr; i++) {
		struct reply_line *l = &r->lines[i];

		if (l->kind != RL_OWN)
			continue;
		if (is_sig_marker(l->p, l->len)) {
			/* "--" without the space only before a short tail */
			if (l->len == 2) {
				size_t tail = 0;

				for (j = i + 1; j < r->nr && j < i + 64 &&
						!r->lines[j].depth && tail <= 8;
				     j++)
					if (r->lines[j].kind == RL_OWN)
						tail++;
				if (tail > 8)
					continue;
			}
			set_kind(r, i, r->nr, RL_SIG, 1);
			break;
		}
		if (list_footer_at(r, i)) {
			set_kind(r, i, r->nr, RL_FOOTER, 1);
			break;
		}
		if (is_trim_marker(l->p, l->len)) {
			l->kind = RL_TRIM;
			continue;
		}
		/* "Sent from my iPhone": that line alone, as the author may
		 * go on below it */
		if (is_mobile_sig(l->p, l->len)) {
			l->kind = RL_SIG;
			continue;
		}
		/* a separator, maybe with a header block under it: one
		 * whose words are known, or any line drawn across with a
		 * "From:" or a header block under it */
		if (original_separator(l->p, l->len) ||
		    (separator_line(l->p, l->len) && separated_block(r, i))) {
			l->kind = RL_HEADER;
			nb = next_nonblank(r, i + 1);
			if (nb < r->nr && !r->lines[nb].depth &&
			    (end = header_block_at(r, nb, 2)) > nb) {
				set_kind(r, nb, end, RL_HEADER, 0);
				nb = next_nonblank(r, end);
			}
			if (nb < r->nr && !r->lines[nb].depth) {
				i = mark_original(r, &st, i, nb) - 1;
				continue;
			}
			continue;
		}
		end = header_block_at(r, i, paragraph_start(r, i));
		if (end > i) {
			set_kind(r, i, end, RL_HEADER, 0);
			nb = next_nonblank(r, end);
			if (nb < r->nr && !r->lines[nb].depth)
				i = mark_original(r, &st, i, nb) - 1;
			else
				i = end - 1;
			continue;
		}
		k = attribution_at(r, i);
		if (k) {
			set_kind(r, i, i + k, RL_ATTRIB, 0);
			nb = next_nonblank(r, i + k);
			if (nb < r->nr && !r->lines[nb].depth &&
			    attribution_strong_at(r, i, k) &&
			    own_before(r, &st, i))
				i = mark_original(r, &st, i, nb) - 1;
			else
				i += k - 1;
			continue;
		}
		/* "* Jane <j@example.org> [2024-01-01 10:00]:" (mutt's
		 * attribution format), Gmail's in some languages ("3 дек.
		 * 2026 г., Jane <j@example.org>:") and other home-made
		 * ones: an address and a colon right above the quote */
		k = address_attribution_at(r, i);
		if (k) {
			set_kind(r, i, i + k, RL_ATTRIB, 0);
			i += k - 1;
			continue;
		}
	}

	/* disclaimers: a paragraph of own text and what follows it */
	for (i = 0; i < r->nr; i++) {
		size_t a, b;
		struct buf para = BUF_INIT(64 * 1024);

		if (r->lines[i].kind != RL_OWN)
			continue;
		a = i;
		for (b = i; b < r->nr && r->lines[b].kind == RL_OWN; b++) {
			if (buf_add(&para, r->lines[b].p, r->lines[b].len) ||
			    buf_addch(&para, ' '))
				break;
		}
		if (is_disclaimer(para.data, para.len)) {
			/* a company footer above it, opened by a rule */
			for (j = a; j > 0 && a - j < 10; j--) {
				const struct reply_line *pl = &r->lines[j - 1];

				if (pl->kind != RL_OWN && pl->kind != RL_BLANK)
					break;
				if (pl->kind == RL_OWN &&
				    is_rule(pl->p, pl->len)) {
					a = j - 1;
					break;
				}
			}
			for (j = a; j < r->nr; j++)
				if (r->lines[j].kind == RL_OWN ||
				    r->lines[j].kind == RL_BLANK)
					r->lines[j].kind = RL_DISCLAIMER;
			buf_release(&para);
			break;
		}
		buf_release(&para);
		i = b;
	}
}

/* ------------------------------------------------------------------ */
/* blocks */

/* Case-insensitive equality of p[0..n) and q[0..m), runs of blanks
 * equal to one. */
static int same_words(const char *p, size_t n, const char *q, size_t m)
{
	size_t i = 0, j = 0;

	while (i < n && j < m) {
		if ((p[i] == ' ' || p[i] == '\t') &&
		    (q[j] == ' ' || q[j] == '\t')) {
			while (i < n && (p[i] == ' ' || p[i] == '\t'))
				i++;
			while (j < m && (q[j] == ' ' || q[j] == '\t'))
				j++;
			continue;
		}
		if (lower((unsigned char)p[i]) != lower((unsigned char)q[j]))
			return 0;
		i++;
		j++;
	}
	return i == n && j == m;
}

/*
 * Is p[0..n) the name in the sender's address: its letters are the
 * local part's ("Lu Fei" for lufei@), or one of its dotted words
 * ("Jacob" for jacob.e.keller@)?
 */
static int address_name(const char *email, const char *p, size_t n)
{
	const char *at, *q;
	size_t i, o = 0, wl;
	char letters[64];

	if (!email || !(at = strchr(email, '@')) || at == email)
		return 0;
	for (i = 0; i < n && o < sizeof(letters); i++)
		if (p[i] != ' ')
			letters[o++] = (char)lower((unsigned char)p[i]);
	if (o < 2 || o >= sizeof(letters))
		return 0;
	if ((size_t)(at - email) == o) {
		for (i = 0;
		     i < o && lower((unsigned char)email[i]) == letters[i]; i++)
			;
		if (i == o)
			return 1;
	}
	for (q = email; q < at;) {
		for (wl = 0; q + wl < at && !strchr("._-+", q[wl]); wl++)
			;
		if (wl == o) {
			for (i = 0;
			     i < o && lower((unsigned char)q[i]) == letters[i];
			     i++)
				;
			if (i == o)
				return 1;
		}
		q += wl + (q + wl < at);
	}
	return 0;
}

/* The columns of blanks that open p[0..n) (tabs to the next eighth). */
static size_t indent_columns(const char *p, size_t n)
{
	size_t i, col = 0;

	for (i = 0; i < n && (p[i] == ' ' || p[i] == '\t'); i++)
		col = p[i] == '\t' ? (col / 8 + 1) * 8 : col + 1;
	return col;
}

/* One word (after a dash or a tilde) that starts with a capital. */
static int capital_word(const char *p, size_t n)
{
	trim(&p, &n);
	while (n && (*p == '-' || *p == '~' || *p == ' ')) {
		p++;
		n--;
	}
	return n && p[0] >= 'A' && p[0] <= 'Z' && !memchr(p, ' ', n);
}

/*
 * The other forms of a name under one's text: right before the "-- "
 * signature ("Honza" / "-- " / "Jan Kara <jack@suse.cz>"), or pushed to
 * the right ("\t\t\t\t\t\t\t\tHonza") as the last line the author wrote.
 */
static int signature_name_at(const struct reply *r, size_t i)
{
	const struct reply_line *l = &r->lines[i];
	const char *p = l->p;
	size_t n = l->len, k;

	for (k = i + 1; k < r->nr && r->lines[k].kind == RL_BLANK; k++)
		;
	/* one capitalised word: a name, not "Nice cleanup" */
	if (k < r->nr && r->lines[k].kind == RL_SIG &&
	    is_sig_marker(r->lines[k].p, r->lines[k].len) && capital_word(p, n))
		return 1;
	if (indent_columns(p, n) < 16)
		return 0;
	trim(&p, &n);
	if (!n || !(p[0] >= 'A' && p[0] <= 'Z'))
		return 0;
	for (k = i + 1; k < r->nr; k++)
		if (r->lines[k].kind == RL_OWN)
			return 0;
	return 1;
}

/*
 * Is p[0..n) (a short own line, "- Steve", "Hugh", "Jane Doe") the
 * sender's name: the whole From display name, one word of it (the first
 * name, or the last name that some sign with), or "First Last" for
 * Outlook's "Last, First"?  A list's DMARC rewrite ("Jane Doe via ltp")
 * is read without its " via ..." tail.
 */
static int is_sender_name(const struct reply *r, const char *p, size_t n)
{
	const char *name = r->sender, *end, *via, *comma, *q;
	size_t nl, wl;
	int dashed = 0;

	trim(&p, &n);
	while (n && (*p == '-' || *p == '~' || *p == ' ')) {
		dashed |= *p != ' ';
		p++;
		n--;
	}
	while (n && strchr(".,!", p[n - 1]))
		n--;
	if (!n)
		return 0;
	if (address_name(r->sender_email, p, n))
		return 1;
	if (!name || !name[0])
		return 0;
	nl = strlen(name);
	via = mem_find(name, nl, " via ", 5);
	if (via)
		nl = (size_t)(via - name);
	while (nl && strchr(" \"'", name[nl - 1]))
		nl--;
	while (nl && strchr(" \"'", *name)) {
		name++;
		nl--;
	}
	end = name + nl;
	if (same_words(p, n, name, nl))
		return 1;
	/* "Zhang, Hawking" -> "Hawking Zhang" */
	comma = memchr(name, ',', nl);
	if (comma) {
		char swapped[256];
		const char *first = comma + 1;
		size_t fl = (size_t)(end - first), ll = (size_t)(comma - name);

		trim(&first, &fl);
		if (fl + 1 + ll < sizeof(swapped)) {
			memcpy(swapped, first, fl);
			swapped[fl] = ' ';
			memcpy(swapped + fl + 1, name, ll);
			if (same_words(p, n, swapped, fl + 1 + ll))
				return 1;
		}
	}
	/* one word of it, two letters or more */
	for (q = name; q < end;) {
		while (q < end && strchr(" ,()\"'", *q))
			q++;
		for (wl = 0; q + wl < end && !strchr(" ,()\"'", q[wl]); wl++)
			;
		if (wl >= 2 && same_words(p, n, q, wl))
			return 1;
		/* "-- Steve" for Steven, "- Rob" for Robert: signed with a
		 * dash, a short form of a word of the name */
		if (dashed && wl >= 3 && n >= 3 && !memchr(p, ' ', n) &&
		    lower((unsigned char)p[0]) == lower((unsigned char)q[0]) &&
		    lower((unsigned char)p[1]) == lower((unsigned char)q[1]) &&
		    lower((unsigned char)p[2]) == lower((unsigned char)q[2]))
			return 1;
		q += wl;
	}
	return 0;
}

/*
 * A name or a title under a closing: written like a name ("Jane Doe",
 * "Acme Widgets"), the sender's own ("tglx" for tglx@), or one word in
 * lower case, a handle ("steve", "hch"); a sentence has more words.
 */
static int signature_words(const struct reply *r, const char *p, size_t n)
{
	size_t i;

	if (name_words(p, n, 3, 0) || is_sender_name(r, p, n))
		return 1;
	trim(&p, &n);
	while (n && (*p == '-' || *p == '~')) {
		p++;
		n--;
	}
	if (!n || n > 20 || is_answer_word(p, n))
		return 0;
	for (i = 0; i < n; i++)
		if (!is_alpha((unsigned char)p[i]))
			return 0;
	return 1;
}

/* "Thanks, tglx": a closing and the sender's name as they write it. */
static int signoff_sender(const struct reply *r, const char *p, size_t n)
{
	const char *rest;
	size_t rn;
	int punct;

	trim(&p, &n);
	return n && n <= 60 &&
	       phrase_rest(p, n, signoff_phrases, &rest, &rn, &punct) &&
	       punct && rn && is_sender_name(r, rest, rn);
}

/* Is own line i of substance (not a greeting, sign-off, name, trailer,
 * trailer intro)? */
static int line_substance(const struct reply *r, size_t i, size_t first,
			  size_t last)
{
	const struct reply_line *l = &r->lines[i];
	size_t k;

	if (l->kind != RL_OWN)
		return 0;
	if (is_greeting(l->p, l->len) || is_signoff(l->p, l->len) ||
	    signoff_sender(r, l->p, l->len) || is_trailer_at(r, i))
		return 0;
	/*
	 * A signature by its form, never by its length: a name (or a name,
	 * a title, a company) under a closing ("Thanks,"), or the sender's
	 * own name or first name.  "Wrong comparison operator" under a
	 * quote is a comment, and so is "looks racy too" under "Thanks,":
	 * what stands under a closing is a name only when it is written
	 * like one or is the sender's.
	 */
	if (is_name_line(l->p, l->len)) {
		size_t names = 0;

		for (k = i; k > first && names < 3 &&
			    signature_words(r, l->p, l->len);) {
			const struct reply_line *pl = &r->lines[--k];

			if (pl->kind != RL_OWN)
				continue;
			if (is_signoff(pl->p, pl->len) ||
			    signoff_sender(r, pl->p, pl->len))
				return 0;
			if (!is_name_line(pl->p, pl->len) ||
			    !signature_words(r, pl->p, pl->len))
				break;
			names++;
		}
		if (is_sender_name(r, l->p, l->len) || signature_name_at(r, i))
			return 0;
	}
	/* "For the series:" / "Feel free to add:" followed by a trailer */
	if (is_trailer_intro(l->p, l->len)) {
		for (k = i + 1; k <= last; k++)
			if (r->lines[k].kind == RL_OWN)
				break;
		if (k <= last && is_trailer_at(r, k))
			return 0;
	}
	return 1;
}

static void find_blocks(struct reply *r)
{
	size_t i = 0, j, alloc = 0;

	while (i < r->nr) {
		struct reply_block *b;
		size_t last;

		if (r->lines[i].kind != RL_OWN) {
			i++;
			continue;
		}
		last = i;
		for (j = i; j < r->nr; j++) {
			if (r->lines[j].kind == RL_OWN)
				last = j;
			else if (r->lines[j].kind != RL_BLANK)
				break;
		}
		ALLOC_GROW(r->blocks, r->nr_blocks + 1, alloc);
		b = &r->blocks[r->nr_blocks++];
		memset(b, 0, sizeof(*b));
		b->first = i;
		b->last = last;
		b->anchor = -1;
		b->diff = -1;
		b->general = 1;
		for (j = i; j <= last; j++)
			if (line_substance(r, j, i, last))
				b->substance = 1;
		i = j > last ? j : last + 1;
	}
}

/* ------------------------------------------------------------------ */

void reply_free(struct reply *r)
{
	if (!r)
		return;
	buf_release(&r->text);
	free(r->sender);
	free(r->sender_email);
	free(r->lines);
	free(r->blocks);
	free(r);
}

/*
 * "Author Name (3):" and the commit subjects indented under it: the
 * shortlog of a pull request (git request-pull) or a cover letter.  The
 * subjects are titles of commits ("i2c: handle NAK from the target"),
 * not what the sender says.
 */
static int shortlog_head(const char *p, size_t n)
{
	size_t i;

	if (!n || n > 200 || p[0] == ' ' || p[0] == '\t' || n < 5 ||
	    memcmp(p + n - 2, "):", 2))
		return 0;
	for (i = n - 2; i > 0 && is_digit((unsigned char)p[i - 1]); i--)
		;
	return i < n - 2 && i >= 2 && p[i - 1] == '(' && p[i - 2] == ' ';
}

static void mark_shortlog(const struct reply *r, unsigned char *in)
{
	size_t i;
	int on = 0;

	for (i = 0; i < r->nr; i++) {
		const struct reply_line *l = &r->lines[i];

		if (l->kind != RL_OWN && l->kind != RL_BLANK) {
			on = 0;
			continue;
		}
		if (shortlog_head(l->p, l->len)) {
			on = 1;
			in[i] = 1;
			continue;
		}
		if (l->kind == RL_BLANK)
			continue;
		if (on && l->len && (l->p[0] == ' ' || l->p[0] == '\t'))
			in[i] = 1;
		else
			on = 0;
	}
}

/* Is the line the word NAK or NACK alone, "." or "!" allowed ("NACK.",
 * "Nak!", "NAK!!!")?  Not a question, not quoted, not marked up as
 * emphasis ("*NAK*" is read by the reader, as a mention). */
static int nak_alone(const char *p, size_t n)
{
	size_t i = 0;

	trim(&p, &n);
	while (i < n && is_alpha((unsigned char)p[i]))
		i++;
	if (!((i == 3 && starts_icase(p, 3, "nak")) ||
	      (i == 4 && starts_icase(p, 4, "nack"))))
		return 0;
	while (i < n && (p[i] == '.' || p[i] == '!'))
		i++;
	return i == n;
}

/* Does text[0..n) hold word as a word of its own, any case? */
static int has_word_icase(const char *p, size_t n, const char *word)
{
	size_t l = strlen(word), i;

	for (i = 0; i + l <= n; i++)
		if (starts_icase(p + i, n - i, word) &&
		    (i == 0 || !is_alpha((unsigned char)p[i - 1])) &&
		    (i + l == n || !is_alpha((unsigned char)p[i + l])))
			return 1;
	return 0;
}

/*
 * Does the line introduce what the author pastes or proposes: an
 * example ("Something like:", trailers_example_intro()), a log ("dmesg
 * shows:", "the trace:") or code ("How about this instead:")?
 */
static int paste_intro(const char *p, size_t n)
{
	/* the last word before the colon: "the boot log:", "dmesg shows:",
	 * not "Regarding the log level:" */
	static const char *const last[] = {
		"log",	"logs",	 "output",  "trace",	 "splat",    "console",
		"oops", "dmesg", "instead", "shows",	 "prints",   "printed",
		"says", "gives", "reports", "backtrace", "messages", NULL,
	};
	static const char *const tools[] = {
		"dmesg",
		"journalctl",
		NULL,
	};
	const char *const *w;
	size_t e;

	trim(&p, &n);
	if (trailers_example_intro(p, n))
		return 1;
	if (!n || p[n - 1] != ':')
		return 0;
	for (w = tools; *w; w++)
		if (has_word_icase(p, n, *w))
			return 1;
	for (e = n - 1; e > 0 && is_alpha((unsigned char)p[e - 1]); e--)
		;
	return word_in(p + e, n - 1 - e, last);
}

/*
 * Mark the own lines that are pasted or proposed, not said: code and log
 * lines (code_or_log_line()), a commit's title (commit_title_line()),
 * lines indented with a tab or four spaces as code is, the rest of a
 * paragraph after one of them, and the
 * lines under a line that introduces them (paste_intro()) up to the end
 * of their paragraph.  A NAK there is the protocol's word or an example.
 */
static void mark_pasted(const struct reply *r, unsigned char *in)
{
	size_t i;
	int intro = 0, in_paste = 0;

	for (i = 0; i < r->nr; i++) {
		const struct reply_line *l = &r->lines[i];

		if (l->kind == RL_BLANK) {
			/* the paste starts after the blank lines under its
			 * introduction and ends at the next one */
			if (in_paste)
				in_paste = intro = 0;
			continue;
		}
		if (l->kind != RL_OWN) {
			in_paste = intro = 0;
			continue;
		}
		/* the word alone is no code and no log line */
		if (nak_alone(l->p, l->len) && !in_paste) {
			intro = 0;
			continue;
		}
		if (intro || in_paste || code_or_log_line(l->p, l->len) ||
		    commit_title_line(l->p, l->len) ||
		    (l->len && l->p[0] == '\t') ||
		    (l->len >= 4 && !memcmp(l->p, "    ", 4))) {
			in[i] = 1;
			in_paste = 1;
			continue;
		}
		intro = paste_intro(l->p, l->len);
	}
}

/*
 * Does the own line run on into the next one: a sentence the mailer
 * wrapped ("... and for that reason I do not" / "NAK this")?  Yes when it
 * ends with a word that cannot end a sentence, or when it is as long as
 * a wrapped line and the next one starts in lower case.  Not when it
 * ends a sentence or a clause, nor for a line that can stand ("Thanks
 * for the patch" / "NAK for the locking.").
 */
static int runs_on(const char *p, size_t n, const char *next, size_t nn)
{
	static const char *const open_words[] = {
		"not",	  "no",	   "to",     "a",      "an",	 "the",
		"i",	  "we",	   "will",   "would",  "do",	 "does",
		"did",	  "don't", "won't",  "can",    "could",	 "should",
		"may",	  "might", "must",   "and",    "or",	 "but",
		"of",	  "for",   "with",   "that",   "my",	 "our",
		"is",	  "are",   "am",     "be",     "was",	 "have",
		"has",	  "going", "want",   "intend", "as",	 "wouldn't",
		"cannot", "can't", "never",  "i'd",    "i'm",	 "i'll",
		"also",	  "then",  "hereby", "still",  "really", NULL,
	};
	size_t e;

	trim(&p, &n);
	if (!n || strchr(".!?:;,", p[n - 1]) || !p[n - 1])
		return 0;
	for (e = n; e > 0 && nak_word_char((unsigned char)p[e - 1]); e--)
		;
	if (e < n && word_in(p + e, n - e, open_words))
		return 1;
	trim(&next, &nn);
	return n >= 60 && nn && next[0] >= 'a' && next[0] <= 'z';
}

/*
 * Read the author's NAK: nak (reply_line_is_nak() on each own line,
 * read with the lines of its sentence before it), nak_alone (a
 * paragraph that is the word alone, with anything that is not the
 * author's own text before and after it) and nak_mention (the word in
 * any form).  Commit titles of a shortlog and pasted or proposed lines
 * are mentions only.
 */
static void read_nak(struct reply *r)
{
	unsigned char *skip, *word;
	size_t i, start, j;

	/* Most replies never say the word: the rest is read only when
	 * some own line holds it (and a sentence only when one of its
	 * lines does), so a reply without it costs one scan. */
	word = xcalloc(r->nr ? r->nr : 1, 1);
	for (i = 0; i < r->nr; i++)
		if (r->lines[i].kind == RL_OWN &&
		    has_nak_word(r->lines[i].p, r->lines[i].len))
			word[i] = r->nak_mention = 1;
	if (!r->nak_mention) {
		free(word);
		return;
	}
	skip = xcalloc(r->nr ? r->nr : 1, 1);
	mark_shortlog(r, skip);
	mark_pasted(r, skip);
	for (i = 0; i < r->nr; i++) {
		const struct reply_line *l = &r->lines[i];

		if (l->kind != RL_OWN)
			continue;
		if (skip[i])
			continue;
		if (nak_alone(l->p, l->len) &&
		    (i == 0 || r->lines[i - 1].kind != RL_OWN) &&
		    (i + 1 == r->nr || r->lines[i + 1].kind != RL_OWN))
			r->nak_alone = r->nak = 1;
		if (r->nak)
			continue;
		/* the lines of its sentence before it, two at most */
		for (start = i;
		     start > 0 && i - start < 2 &&
		     r->lines[start - 1].kind == RL_OWN && !skip[start - 1] &&
		     runs_on(r->lines[start - 1].p, r->lines[start - 1].len,
			     r->lines[start].p, r->lines[start].len);
		     start--)
			;
		for (j = start; j <= i && !word[j]; j++)
			;
		if (j > i)
			continue;
		/* the lines are contiguous in r->text */
		if (reply_line_is_nak(
			    r->lines[start].p,
			    (size_t)(l->p + l->len - r->lines[start].p)))
			r->nak = 1;
	}
	free(skip);
	free(word);
}

int reply_parse(struct reply **out, const char *text, size_t len,
		const char *sender, const char *sender_email)
{
	struct reply *r;
	struct scan s;
	const char *line;
	size_t n, alloc = 0, skip, i;
	int rc;

	*out = NULL;
	r = xcalloc(1, sizeof(*r));
	r->sender = sender && sender[0] ? xstrdup(sender) : NULL;
	r->sender_email =
		sender_email && sender_email[0] ? xstrdup(sender_email) : NULL;
	buf_init(&r->text, REPLY_TEXT_MAX);
	rc = buf_add(&r->text, text, len);
	if (rc)
		goto fail;
	scan_init(&s, r->text.data, r->text.len);
	while (scan_line(&s, &line, &n)) {
		struct reply_line *l;

		if (r->nr >= REPLY_LINES_MAX) {
			r->truncated = 1; /* the rest is not read */
			break;
		}
		ALLOC_GROW(r->lines, r->nr + 1, alloc);
		l = &r->lines[r->nr++];
		memset(l, 0, sizeof(*l));
		l->p = line;
		l->len = n;
		l->depth = quote_depth(line, n, &skip);
		l->content = line + skip;
		l->clen = n - skip;
		l->diff = -1;
	}
	/*
	 * ">+foo" quoting (no space after '>', as Outlook and iNotes do):
	 * the space after '>' then belongs to the line, e.g. a diff context
	 * line, and must stay.
	 */
	{
		size_t tight = 0, spaced = 0;

		for (i = 0; i < r->nr; i++) {
			const struct reply_line *l = &r->lines[i];
			const char *c = l->p + (l->len - l->clen);

			if (!l->depth || c == l->p)
				continue;
			if (c[-1] == '>' && l->clen && strchr("+-", c[0]))
				tight++;
			else if (c[-1] == ' ' && l->clen > 0 &&
				 strchr("+-", c[0]))
				spaced++;
		}
		if (tight > spaced)
			for (i = 0; i < r->nr; i++) {
				struct reply_line *l = &r->lines[i];
				const char *c = l->p + (l->len - l->clen);

				if (l->depth && c > l->p && c[-1] == ' ') {
					l->content--;
					l->clen++;
				}
			}
	}
	classify(r);
	find_blocks(r);
	read_nak(r);
	*out = r;
	return 0;
fail:
	reply_free(r);
	return rc;
}

int reply_own_text(struct buf *out, const struct reply *r)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < r->nr && !rc; i++) {
		if (r->lines[i].kind == RL_OWN)
			rc = buf_add(out, r->lines[i].p, r->lines[i].len);
		if (!rc)
			rc = buf_addch(out, '\n');
	}
	return rc;
}

int reply_block_text(struct buf *out, const struct reply *r, size_t bi,
		     int drop_trailers)
{
	const struct reply_block *b = &r->blocks[bi];
	size_t first = b->first, last = b->last, i;
	int rc = 0, pending_blank = 0, wrote = 0;

	/* greetings at the start */
	while (first < last &&
	       (r->lines[first].kind != RL_OWN ||
		is_greeting(r->lines[first].p, r->lines[first].len)))
		first++;
	/* sign-offs and names at the end */
	while (last > first) {
		const struct reply_line *l = &r->lines[last];

		if (l->kind != RL_OWN ||
		    (!line_substance(r, last, b->first, b->last) &&
		     !is_trailer_at(r, last)))
			last--;
		else
			break;
	}
	for (i = first; i <= last && !rc; i++) {
		const struct reply_line *l = &r->lines[i];

		if (l->kind != RL_OWN) {
			pending_blank = wrote;
			continue;
		}
		if (drop_trailers && is_trailer_at(r, i))
			continue;
		if (pending_blank)
			rc = buf_addch(out, '\n');
		pending_blank = 0;
		if (!rc)
			rc = buf_add(out, l->p, l->len);
		if (!rc)
			rc = buf_addch(out, '\n');
		wrote = 1;
	}
	buf_rtrim(out);
	return rc;
}

/* ------------------------------------------------------------------ */
/* anchoring */

int reply_anchor(struct reply *r, const struct diff *d, struct diff **pseudo)
{
	struct diff_quote *q = NULL;
	size_t *idx = NULL, nq = 0, i, b, last_text;
	struct diff *own = NULL;
	int *pos = NULL, rc = 0, use_pseudo = !d;

	if (pseudo)
		*pseudo = NULL;
	q = xmalloc((r->nr ? r->nr : 1) * sizeof(*q));
	idx = xmalloc((r->nr ? r->nr : 1) * sizeof(*idx));
	for (i = 0; i < r->nr; i++) {
		const struct reply_line *l = &r->lines[i];

		if (l->kind != RL_QUOTE && l->kind != RL_ORIG)
			continue;
		q[nq].p = l->content;
		q[nq].len = l->clen;
		idx[nq++] = i;
	}
	if (!nq)
		goto out;
	if (use_pseudo) {
		/*
		 * The quote read as a diff, counting from its "@@" headers:
		 * only lines at the depth of the last diff header, so the
		 * comments of earlier reviewers quoted around it are skipped.
		 */
		struct buf t = BUF_INIT(REPLY_TEXT_MAX);
		int depth = -1;

		for (i = 0; i < nq && !rc; i++) {
			const struct reply_line *l = &r->lines[idx[i]];

			if ((l->clen > 4 && !memcmp(l->content, "@@ -", 4)) ||
			    (l->clen > 11 &&
			     !memcmp(l->content, "diff --git ", 11)))
				depth = l->depth;
			if (depth >= 0 && l->depth != depth)
				continue;
			rc = buf_add(&t, q[i].p, q[i].len);
			if (!rc)
				rc = buf_addch(&t, '\n');
		}
		if (!rc)
			rc = diff_parse_flags(&own, t.data, t.len,
					      DIFF_LENIENT);
		buf_release(&t);
		if (rc)
			goto out;
		d = own;
	}
	pos = xmalloc(nq * sizeof(*pos));
	rc = diff_align(pos, d, q, nq);
	if (rc == PB_ELIMIT)
		rc = 0; /* a quote too long to place: every block general */
	if (rc)
		goto out;
	for (i = 0; i < nq; i++)
		r->lines[idx[i]].diff = pos[i];
	last_text = d->nr_lines;
	while (last_text > 0 && !d->lines[last_text - 1].key_len)
		last_text--;
	last_text = last_text ? last_text - 1 : 0;

	for (b = 0; b < r->nr_blocks; b++) {
		struct reply_block *blk = &r->blocks[b];
		long k;

		blk->anchor = -1;
		blk->diff = -1;
		blk->general = 1;
		for (k = (long)blk->first - 1; k >= 0; k--) {
			if (r->lines[k].diff >= 0) {
				blk->anchor = k;
				blk->diff = r->lines[k].diff;
				break;
			}
		}
		if (blk->diff < 0 || !blk->substance)
			continue;
		/* after the last line of a completely quoted patch (blank
		 * context lines at its end do not show in a quote): general */
		if ((size_t)blk->diff >= last_text &&
		    (!use_pseudo ||
		     d->hunks[d->lines[blk->diff].hunk].complete))
			continue;
		blk->general = 0;
	}
out:
	if (pseudo && own)
		*pseudo = own;
	else
		diff_free(own);
	free(pos);
	free(q);
	free(idx);
	return rc;
}
