#include "mail/reply_int.h"
#include "mail/trailers.h"
#include "util/scan.h"

#include <string.h>

/* ------------------------------------------------------------------ */
/* line predicates */

/* Quote markers: ">", "> >", " > ", ">>", "&gt;". */
int rl_quote_depth(const char *p, size_t n, size_t *skip)
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

int rl_is_trim_marker(const char *p, size_t n)
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

int rl_has_digit(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (is_digit((unsigned char)p[i]))
			return 1;
	return 0;
}

/* Strip the colon that ends a line (":" or the full-width "："), and the
 * blanks around it; 0 when there is none. */
int rl_strip_colon(const char **p, size_t *n)
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
int rl_attribution_verb(const char *p, size_t n, int *bare)
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
int rl_attribution_end(const char *p, size_t n)
{
	const char *q;
	size_t m, i;

	trim(&p, &n);
	if (!n || n > ATTRIB_LINE_MAX)
		return 0;
	q = p;
	m = n;
	if (rl_strip_colon(&q, &m)) {
		if (rl_attribution_verb(q, m, NULL) >= 0 || dated_address(q, m))
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
int rl_attribution_strong(const char *p, size_t n)
{
	int v;

	trim(&p, &n);
	if (starts_icase(p, n, "On "))
		return 1;
	if (!rl_has_digit(p, n) && !memchr(p, '@', n))
		return 0;
	if (!rl_strip_colon(&p, &n))
		return 0;
	v = rl_attribution_verb(p, n, NULL);
	if (v >= 0)
		return !attrib_verbs[v].weak;
	return starts_icase(p, n, "Am ") || starts_icase(p, n, "Op ") ||
	       dated_address(p, n);
}

int rl_ends_colon(const char *p, size_t n)
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
int rl_attribution_head(const char *p, size_t n)
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
	dated = rl_has_digit(p, n) || memchr(p, '@', n) || memchr(p, '<', n);
	if (!dated)
		return 0;
	if (p[n - 1] == ',')
		return 1;
	for (s = starts; *s; s++)
		if (starts_icase(p, n, *s))
			return 1;
	return 0;
}

/* A header line of a quoted original, in the languages seen on lists. */
enum hdr rl_header_field(const char *p, size_t n)
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
int rl_original_separator(const char *p, size_t n)
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

int rl_underscore_rule(const char *p, size_t n)
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
int rl_is_rule(const char *p, size_t n)
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
 * lists (rl_header_field(), rl_original_separator()) name the forms of the
 * languages seen on lists; what every localised client keeps is the
 * shape: a line drawn across, maybe around a few words, and a block of
 * "Field: value" lines that say who sent what when.
 */
#define SEPARATOR_LINE_MAX 160 /* bytes of a separator line */
#define SEPARATOR_TEXT_MAX 80 /* bytes of its words */
#define FIELD_NAME_MAX 48 /* bytes of a field's name */
#define FIELD_BLOCK_MAX 16 /* lines of a header block */

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
 * header block under it, or with the words rl_original_separator() knows.
 */
int rl_separator_line(const char *p, size_t n)
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
	return rl_is_trailer(line, len);
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
size_t rl_struct_header_block(const struct reply *r, size_t i, size_t min)
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

int rl_is_sig_marker(const char *p, size_t n)
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
int rl_is_mobile_sig(const char *p, size_t n)
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

int rl_is_disclaimer(const char *p, size_t n)
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
int rl_diffstat_summary(const char *p, size_t n)
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
int rl_is_answer_word(const char *p, size_t n)
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
int rl_name_words(const char *p, size_t n, size_t max, int group)
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
		if (++words > max || rl_is_answer_word(w, wl))
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
int rl_phrase_rest(const char *p, size_t n, const char *const *phr,
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

int rl_is_greeting(const char *p, size_t n)
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
	if (!n || n > 60 || !rl_phrase_rest(p, n, phr, &rest, &rn, &punct))
		return 0;
	/* "Hi Alice," "Hello all!" "Dear maintainers," "Hi," */
	if (!rn || rl_name_words(rest, rn, 3, 1))
		return 1;
	/* "Hi xiang:", "hi jason,": one name in lower case, then the
	 * greeting's own punctuation (not "Hi, typo.") */
	return count_words(rest, rn) == 1 && rn <= 20 &&
	       strchr(",:!", p[n - 1]) && !rl_is_answer_word(rest, rn) &&
	       lower_word(rest, rn - 1);
}

const char *const rl_signoff_phrases[] = {
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
int rl_is_signoff(const char *p, size_t n)
{
	const char *rest;
	size_t rn;
	int punct;

	trim(&p, &n);
	if (!n || n > 60 ||
	    !rl_phrase_rest(p, n, rl_signoff_phrases, &rest, &rn, &punct))
		return 0;
	return !rn || (punct && rl_name_words(rest, rn, 3, 0));
}
/* "Petr", "- Marijn", "Honza", "Sun Shijie": a name under a sign-off. */
int rl_is_name_line(const char *p, size_t n)
{
	size_t i;

	trim(&p, &n);
	while (n && (*p == '-' || *p == '~' || *p == ' ')) {
		p++;
		n--;
	}
	if (!n || n > 40 || count_words(p, n) > 3 || rl_is_answer_word(p, n))
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
int rl_is_trailer_intro(const char *p, size_t n)
{
	trim(&p, &n);
	if (!n)
		return 0;
	if ((p[n - 1] == ':' || p[n - 1] == ',') && count_words(p, n) <= 6)
		return 1;
	return 0;
}

int rl_is_trailer(const char *p, size_t n)
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
int rl_is_trailer_at(const struct reply *r, size_t i)
{
	const struct reply_line *l = &r->lines[i];
	size_t k, blanks = 0;

	if (rl_is_trailer(l->p, l->len)) {
		for (k = i; k > 0 && i - k < 16;) {
			const struct reply_line *pl = &r->lines[--k];

			if (pl->kind == RL_BLANK && blanks++ < 3)
				continue;
			if (pl->kind != RL_OWN)
				break;
			if (trailers_example_intro(pl->p, pl->len))
				return 0;
			if (!rl_is_trailer(pl->p, pl->len))
				break;
		}
		return 1;
	}
	return i > 0 && r->lines[i - 1].kind == RL_OWN &&
	       trailers_line_continues(r->lines[i - 1].p, r->lines[i - 1].len,
				       l->p, l->len);
}
