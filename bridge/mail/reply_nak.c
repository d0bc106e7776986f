#include "mail/reply_int.h"
#include "mail/trailers.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

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
void reply_read_nak(struct reply *r)
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
