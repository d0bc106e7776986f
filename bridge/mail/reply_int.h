/*
 * reply_int - what the files of the reply module (mail/reply.h) share,
 * for them alone: one module too long for one file.
 *   reply.c        the lines classified and grouped into blocks;
 *   reply_line.c   what one line is, read alone: quote and trim
 *                  markers, attribution lines, header fields and
 *                  separator lines of a quoted original, signature and
 *                  disclaimer markers, greetings, closings, trailers;
 *   reply_nak.c    the author's NAK, read three ways;
 *   reply_quote.c  the quote against the diff: wrapped lines joined,
 *                  aligned, each block anchored (reply_anchor()).
 * The rules they follow are those of mail/reply.h.  Pure and
 * thread-safe; nothing here allocates.
 */
#ifndef PB_MAIL_REPLY_INT_H
#define PB_MAIL_REPLY_INT_H

#include "mail/reply.h"

#include <stddef.h>
#include <string.h>

/* small text helpers */

static inline int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static inline int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline int is_alnum(int c)
{
	return is_alpha(c) || (c >= '0' && c <= '9') || c >= 0x80;
}

static inline int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* The length of a no-break space (U+00A0, U+202F) at p, or 0. */
static inline size_t nbsp_at(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;

	if (n >= 2 && u[0] == 0xc2 && u[1] == 0xa0)
		return 2;
	if (n >= 3 && u[0] == 0xe2 && u[1] == 0x80 && u[2] == 0xaf)
		return 3;
	return 0;
}

/* The same, for one ending at p + n. */
static inline size_t nbsp_before(const char *p, size_t n)
{
	if (n >= 2 && nbsp_at(p + n - 2, 2) == 2)
		return 2;
	if (n >= 3 && nbsp_at(p + n - 3, 3) == 3)
		return 3;
	return 0;
}

/* Trim blanks (and no-break spaces: French puts one before a colon)
 * from both ends. */
static inline void trim(const char **p, size_t *n)
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

static inline int starts_icase(const char *p, size_t n, const char *lit)
{
	size_t l = strlen(lit), i;

	if (n < l)
		return 0;
	for (i = 0; i < l; i++)
		if (lower((unsigned char)p[i]) != lower((unsigned char)lit[i]))
			return 0;
	return 1;
}

static inline int ends_icase(const char *p, size_t n, const char *lit)
{
	size_t l = strlen(lit);

	return n >= l && starts_icase(p + n - l, l, lit);
}

static inline int contains_icase(const char *p, size_t n, const char *lit)
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

static inline size_t count_words(const char *p, size_t n)
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

/* A line longer than this is no attribution line. */
#define ATTRIB_LINE_MAX 400

enum hdr {
	H_NONE,
	H_FROM,
	H_DATE,
	H_TO,
	H_CC,
	H_SUBJECT,
};

int rl_quote_depth(const char *p, size_t n, size_t *skip);

int rl_is_trim_marker(const char *p, size_t n);

int rl_has_digit(const char *p, size_t n);

int rl_strip_colon(const char **p, size_t *n);

int rl_attribution_verb(const char *p, size_t n, int *bare);

int rl_attribution_end(const char *p, size_t n);

int rl_attribution_strong(const char *p, size_t n);

int rl_ends_colon(const char *p, size_t n);

int rl_attribution_head(const char *p, size_t n);

enum hdr rl_header_field(const char *p, size_t n);

int rl_original_separator(const char *p, size_t n);

int rl_underscore_rule(const char *p, size_t n);

int rl_is_rule(const char *p, size_t n);

int rl_separator_line(const char *p, size_t n);

size_t rl_struct_header_block(const struct reply *r, size_t i, size_t min);

int rl_is_sig_marker(const char *p, size_t n);

int rl_is_mobile_sig(const char *p, size_t n);

int rl_is_disclaimer(const char *p, size_t n);

int rl_diffstat_summary(const char *p, size_t n);

int rl_is_answer_word(const char *p, size_t n);

int rl_name_words(const char *p, size_t n, size_t max, int group);

int rl_phrase_rest(const char *p, size_t n, const char *const *phr,
		   const char **rest, size_t *rest_len, int *punct);

extern const char *const rl_signoff_phrases[];

int rl_is_greeting(const char *p, size_t n);

int rl_is_signoff(const char *p, size_t n);

int rl_is_name_line(const char *p, size_t n);

int rl_is_trailer_intro(const char *p, size_t n);

int rl_is_trailer(const char *p, size_t n);

int rl_is_trailer_at(const struct reply *r, size_t i);

/* Set r->nak, r->nak_alone and r->nak_mention from its own lines
 * (reply_nak.c). */
void reply_read_nak(struct reply *r);

#endif
