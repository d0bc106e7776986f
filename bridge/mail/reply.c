#include "mail/reply.h"
#include "mail/reply_int.h"
#include "mail/trailers.h"
#include "util/err.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

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

	if (rl_header_field(r->lines[i].content, r->lines[i].clen) != H_FROM)
		return i;
	for (j = i + 1; j < r->nr && j < i + 16; j++) {
		const char *p = r->lines[j].content;
		size_t n = r->lines[j].clen;

		if (r->lines[j].depth != r->lines[i].depth)
			break;
		trim(&p, &n);
		if (!n)
			break;
		h = rl_header_field(p, n);
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
 * (rl_struct_header_block()) where a block may open: under a separator
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
		end = rl_struct_header_block(r, i, where == 2 ? 2 : 3);
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
	       (rl_header_field(r->lines[nb].content, r->lines[nb].clen) ==
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

		if (l->kind == RL_OWN && !rl_is_greeting(l->p, l->len) &&
		    !rl_is_signoff(l->p, l->len) &&
		    !rl_is_trim_marker(l->p, l->len))
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
		if (rl_diffstat_summary(p, n)) {
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
		if (rl_is_sig_marker(p, n) && i + 1 < to) {
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

	if (rl_underscore_rule(r->lines[i].p, r->lines[i].len)) {
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

	if (rl_attribution_end(r->lines[i].p, r->lines[i].len))
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
	if (!rl_attribution_end(joined, k))
		return 0;
	if (rl_is_trailer(p, n) || reply_line_is_nak(p, n))
		return 0;
	if (rl_attribution_head(p, n))
		return 2;
	/* the second half is no attribution alone ("a@b>:") or only the
	 * verb ("wrote:", "пишет:"): the first needs a date or address */
	v = q;
	vn = m;
	if (rl_attribution_end(q, m)) {
		if (!rl_strip_colon(&v, &vn) ||
		    rl_attribution_verb(v, vn, &bare) < 0 || !bare)
			return 0;
	}
	return rl_has_digit(p, n) || memchr(p, '@', n) ? 2 : 0;
}

/* rl_attribution_strong() for the attribution at lines [i, i + k). */
static int attribution_strong_at(const struct reply *r, size_t i, size_t k)
{
	char joined[2 * ATTRIB_LINE_MAX + 1];
	const char *p = r->lines[i].p, *q;
	size_t n = r->lines[i].len, m;

	trim(&p, &n);
	if (k < 2 || n > ATTRIB_LINE_MAX)
		return rl_attribution_strong(p, n);
	q = r->lines[i + 1].p;
	m = r->lines[i + 1].len;
	trim(&q, &m);
	if (m > ATTRIB_LINE_MAX)
		return 0;
	memcpy(joined, p, n);
	joined[n] = ' ';
	memcpy(joined + n + 1, q, m);
	return rl_attribution_strong(joined, n + 1 + m);
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

	if (l->len < ATTRIB_LINE_MAX && rl_ends_colon(l->p, l->len) &&
	    (mem_find(l->p, l->len, "@", 1) ||
	     mem_find(l->p, l->len, " <", 2)) &&
	    (nb = next_nonblank(r, i + 1)) < r->nr && r->lines[nb].depth &&
	    !rl_is_trailer(l->p, l->len))
		return 1;
	trim(&p, &n);
	if (!n || n > ATTRIB_LINE_MAX || (p[n - 1] != '<' && p[n - 1] != '(') ||
	    i + 1 >= r->nr || r->lines[i + 1].kind != RL_OWN)
		return 0;
	l2 = &r->lines[i + 1];
	if (l2->len < ATTRIB_LINE_MAX && rl_ends_colon(l2->p, l2->len) &&
	    mem_find(l2->p, l2->len, "@", 1) &&
	    count_words(l2->p, l2->len) <= 2 &&
	    (nb = next_nonblank(r, i + 2)) < r->nr && r->lines[nb].depth &&
	    !rl_is_trailer(p, n))
		return 2;
	return 0;
}

/*
 * A line "--" without the space (line i) is a signature separator only
 * when what follows it looks like a signature: a few short lines of
 * the author's, no trailer among them, maybe an original quoted under
 * them, but no quoted diff and no text of the author's between quotes.
 * Review robots and some people write it between a summary and the
 * review itself, which then quotes the diff and comments under it
 * (RFC 3676, 4.3, makes only "-- " the separator).
 */
#define BARE_SIG_LINES 8 /* own lines of a signature under "--" */
#define BARE_SIG_WIDTH 80 /* bytes of one of them */

static int bare_dashes_sig(const struct reply *r, size_t i)
{
	size_t j, tail = 0;
	int quote = 0;

	for (j = i + 1; j < r->nr; j++) {
		const struct reply_line *l = &r->lines[j];

		if (l->depth) {
			/* a quoted diff: the review goes on below */
			if ((l->clen > 4 && !memcmp(l->content, "@@ -", 4)) ||
			    (l->clen > 11 &&
			     !memcmp(l->content, "diff --git ", 11)))
				return 0;
			quote = 1;
			continue;
		}
		if (!l->len || l->kind == RL_BLANK)
			continue;
		if (list_footer_at(r, j))
			break;
		/* own text between quotes: comments, not a signature
		 * above a top-posted original */
		if (quote)
			return 0;
		if (++tail > BARE_SIG_LINES || l->len > BARE_SIG_WIDTH ||
		    rl_is_trailer(l->p, l->len))
			return 0;
	}
	return 1;
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
		if (rl_is_sig_marker(l->p, l->len)) {
			/* "--" without the space only before what looks
			 * like a signature */
			if (l->len == 2 && !bare_dashes_sig(r, i)) {
				l->kind = RL_TRIM; /* a rule, no words */
				continue;
			}
			set_kind(r, i, r->nr, RL_SIG, 1);
			break;
		}
		if (list_footer_at(r, i)) {
			set_kind(r, i, r->nr, RL_FOOTER, 1);
			break;
		}
		if (rl_is_trim_marker(l->p, l->len)) {
			l->kind = RL_TRIM;
			continue;
		}
		/* "Sent from my iPhone": that line alone, as the author may
		 * go on below it */
		if (rl_is_mobile_sig(l->p, l->len)) {
			l->kind = RL_SIG;
			continue;
		}
		/* a separator, maybe with a header block under it: one
		 * whose words are known, or any line drawn across with a
		 * "From:" or a header block under it */
		if (rl_original_separator(l->p, l->len) ||
		    (rl_separator_line(l->p, l->len) &&
		     separated_block(r, i))) {
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
		if (rl_is_disclaimer(para.data, para.len)) {
			/* a company footer above it, opened by a rule */
			for (j = a; j > 0 && a - j < 10; j--) {
				const struct reply_line *pl = &r->lines[j - 1];

				if (pl->kind != RL_OWN && pl->kind != RL_BLANK)
					break;
				if (pl->kind == RL_OWN &&
				    rl_is_rule(pl->p, pl->len)) {
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
	    rl_is_sig_marker(r->lines[k].p, r->lines[k].len) &&
	    capital_word(p, n))
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

	if (rl_name_words(p, n, 3, 0) || is_sender_name(r, p, n))
		return 1;
	trim(&p, &n);
	while (n && (*p == '-' || *p == '~')) {
		p++;
		n--;
	}
	if (!n || n > 20 || rl_is_answer_word(p, n))
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
	       rl_phrase_rest(p, n, rl_signoff_phrases, &rest, &rn, &punct) &&
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
	if (rl_is_greeting(l->p, l->len) || rl_is_signoff(l->p, l->len) ||
	    signoff_sender(r, l->p, l->len) || rl_is_trailer_at(r, i))
		return 0;
	/*
	 * A signature by its form, never by its length: a name (or a name,
	 * a title, a company) under a closing ("Thanks,"), or the sender's
	 * own name or first name.  "Wrong comparison operator" under a
	 * quote is a comment, and so is "looks racy too" under "Thanks,":
	 * what stands under a closing is a name only when it is written
	 * like one or is the sender's.
	 */
	if (rl_is_name_line(l->p, l->len)) {
		size_t names = 0;

		for (k = i; k > first && names < 3 &&
			    signature_words(r, l->p, l->len);) {
			const struct reply_line *pl = &r->lines[--k];

			if (pl->kind != RL_OWN)
				continue;
			if (rl_is_signoff(pl->p, pl->len) ||
			    signoff_sender(r, pl->p, pl->len))
				return 0;
			if (!rl_is_name_line(pl->p, pl->len) ||
			    !signature_words(r, pl->p, pl->len))
				break;
			names++;
		}
		if (is_sender_name(r, l->p, l->len) || signature_name_at(r, i))
			return 0;
	}
	/* "For the series:" / "Feel free to add:" followed by a trailer */
	if (rl_is_trailer_intro(l->p, l->len)) {
		for (k = i + 1; k <= last; k++)
			if (r->lines[k].kind == RL_OWN)
				break;
		if (k <= last && rl_is_trailer_at(r, k))
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
		l->depth = rl_quote_depth(line, n, &skip);
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
	reply_read_nak(r);
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
		rl_is_greeting(r->lines[first].p, r->lines[first].len)))
		first++;
	/* sign-offs and names at the end */
	while (last > first) {
		const struct reply_line *l = &r->lines[last];

		if (l->kind != RL_OWN ||
		    (!line_substance(r, last, b->first, b->last) &&
		     !rl_is_trailer_at(r, last)))
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
		if (drop_trailers && rl_is_trailer_at(r, i))
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
