/*
 * The quote of a reply read against the diff it quotes: reply_anchor()
 * (mail/reply.h).  The quoted lines are gathered, the lines a mail
 * client wrapped are joined again, the quote is aligned on the diff that
 * was mailed (or read as a diff itself), and each block of the author's
 * text is anchored on the last quoted diff line above it.
 */
#include "mail/reply.h"
#include "mail/reply_int.h"
#include "util/err.h"
#include "util/hashmap.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/*
 * Wrapped quotes.  Outlook, KMail, Thunderbird without format=flowed
 * and others wrap a long quoted line again when the reply is written:
 * Outlook at the last space before its column (72 to 78), others in the
 * middle of a word, and the tail goes on a line of its own under the
 * same "> ".  Such a tail is no diff line and no words of the author's;
 * it belongs to the quoted line above it:
 *
 *   > +		dev_err(foo->dev, "not ready:
 *   > %#x\n", status);
 *
 * A line is taken for the tail of the one above when both are quoted
 * with the same marks, the one above is a diff line (or a diff header,
 * whose paths wrap too), and the first word of the tail would not have
 * fitted on it: the width of the widest quoted line (in bytes or in
 * columns, as clients count either way) is the client's column, as
 * near as the mail tells it.  A tail that itself reads as a diff line
 * ("-EINVAL;" under "return") is joined only when the diff says so:
 * with the patch that was mailed, when the joined line is one of its
 * lines and the line above alone is not; without it, when the quoted
 * hunk holds more lines than its "@@" header counts, the most likely
 * tails taking up the difference exactly.  A trim marker, a diff or
 * git header line is never a tail.
 */

enum frag {
	FRAG_NONE,
	FRAG_SURE, /* no diff line: the tail of the line above */
	FRAG_MAYBE, /* reads as a diff line too */
};

struct qent {
	size_t line; /* the reply line */
	enum frag frag;
	int score; /* how far past the column its first word went */
	int join;
};

static int diff_body(const char *p, size_t n)
{
	if (!n)
		return 1; /* an empty context line */
	if (p[0] != '+' && p[0] != '-' && p[0] != ' ')
		return 0;
	return !(n >= 4 && (!memcmp(p, "+++ ", 4) || !memcmp(p, "--- ", 4)));
}

static int diff_header(const char *p, size_t n)
{
	return (n > 4 && !memcmp(p, "@@ -", 4)) ||
	       (n > 11 && !memcmp(p, "diff --git ", 11)) ||
	       (n > 4 && (!memcmp(p, "--- ", 4) || !memcmp(p, "+++ ", 4)));
}

/* The lines git writes between "diff --git" and "---" (git-diff(1),
 * "Generating patches with -p"). */
static int git_extended_header(const char *p, size_t n)
{
	static const char *const heads[] = {
		"index ",
		"old mode ",
		"new mode ",
		"deleted file mode ",
		"new file mode ",
		"copy from ",
		"copy to ",
		"rename from ",
		"rename to ",
		"similarity index ",
		"dissimilarity index ",
		"Binary files ",
	};
	size_t i, k;

	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		k = strlen(heads[i]);
		if (n > k && !memcmp(p, heads[i], k))
			return 1;
	}
	return 0;
}

/* Could p[0..n) be a line of a diff on its own? */
static int reads_as_diff(const char *p, size_t n)
{
	if (!n)
		return 1;
	if (p[0] == '\\')
		return n >= 13 && !memcmp(p, "\\ No newline ", 13);
	return p[0] == '+' || p[0] == '-' || p[0] == ' ' || p[0] == '\t' ||
	       diff_header(p, n);
}

static size_t first_word(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n && p[i] != ' ' && p[i] != '\t'; i++)
		;
	return i;
}

/*
 * The client's column, as near as the mail tells it: the widest quoted
 * line, in bytes and in columns (a tab to the next multiple of 8, a
 * UTF-8 character one), since clients count either way.
 */
struct width {
	size_t bytes, cols;
};

static size_t columns(const char *p, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++) {
		if (p[i] == '\t')
			c = (c / 8 + 1) * 8;
		else if (((unsigned char)p[i] & 0xc0) != 0x80)
			c++;
	}
	return c;
}

static void width_of(struct width *w, const struct reply *r,
		     const struct qent *e, size_t n)
{
	size_t i, c;

	w->bytes = w->cols = 0;
	for (i = 0; i < n; i++) {
		const struct reply_line *l = &r->lines[e[i].line];

		if (!l->depth)
			continue;
		c = columns(l->p, l->len);
		if (l->len > w->bytes)
			w->bytes = l->len;
		if (c > w->cols)
			w->cols = c;
	}
}

/* How far past the column a word of fw bytes would have gone on the
 * line l; 0 or less when it fitted. */
static long overshoot(const struct reply_line *l, size_t fw,
		      const struct width *w)
{
	long b = (long)(l->len + 1 + fw) - (long)w->bytes;
	long c = (long)(columns(l->p, l->len) + 1 + fw) - (long)w->cols;

	return b > c ? b : c;
}

/* The quote marks of a line: what comes before its content. */
static size_t marks(const struct reply_line *l)
{
	return (size_t)(l->content - l->p);
}

/* The entry whose group entry i (a tail) would join: a group is a line
 * and the tails joined to it right under it. */
static size_t group_start(const struct qent *e, size_t i)
{
	while (i > 0 && e[i].join)
		i--;
	return i;
}

/*
 * A line wrapped into more than TAILS_MAX tails is no line a client
 * wrapped (at 72 columns, some 600 bytes of code): the lines stay
 * apart, which also bounds the work on each tail.
 */
#define TAILS_MAX 8

/* The size entry j's group would have with j joined to the group
 * above it: that group, j, and the tails already joined under j. */
static size_t joined_size(const struct qent *e, size_t n, size_t j)
{
	size_t k = j + 1;

	while (k < n && e[k].join)
		k++;
	return k - group_start(e, j - 1);
}

/* Find the tails of wrapped lines among the quoted entries e[0..n). */
static void find_tails(const struct reply *r, struct qent *e, size_t n,
		       int have_diff, const struct width *w)
{
	size_t i;
	int hunk_depth = -1;
	long over;
	for (i = 0; i < n; i++) {
		const struct reply_line *l = &r->lines[e[i].line], *above,
					*head;
		const char *t;
		size_t tn, m, fw;

		if (l->depth && diff_header(l->content, l->clen) &&
		    l->content[0] == '@')
			hunk_depth = l->depth;
		if (!i || !l->depth || e[i - 1].line + 1 != e[i].line)
			continue;
		above = &r->lines[e[i - 1].line];
		head = &r->lines[e[group_start(e, i - 1)].line];
		m = marks(head);
		if (l->len <= m || memcmp(l->p, head->p, m) ||
		    above->depth != head->depth)
			continue;
		t = l->p + m;
		tn = l->len - m;
		if (!(diff_header(head->content, head->clen) ||
		      (diff_body(head->content, head->clen) && head->clen &&
		       (have_diff || head->depth == hunk_depth))))
			continue;
		fw = first_word(t, tn);
		over = overshoot(above, fw, w);
		if (over <= 0)
			continue;
		if (diff_header(t, tn) || git_extended_header(t, tn) ||
		    rl_is_trim_marker(t, tn) ||
		    joined_size(e, i, i) > TAILS_MAX)
			continue;
		e[i].score = (int)over;
		e[i].frag = reads_as_diff(t, tn) ? FRAG_MAYBE : FRAG_SURE;
		/* under a file's header, a tail that reads as a diff line
		 * is one; under a hunk's, the count tells */
		if (e[i].frag == FRAG_MAYBE &&
		    !diff_body(head->content, head->clen) &&
		    head->content[0] != '@') {
			e[i].frag = FRAG_NONE;
			continue;
		}
		e[i].join = e[i].frag == FRAG_SURE;
	}
}

/* The text of the group of entry h (h and the tails joined right under
 * it, up to entry n) into out. */
static int group_text(struct buf *out, const struct reply *r,
		      const struct qent *e, size_t n, size_t h,
		      const struct width *w)
{
	const struct reply_line *head = &r->lines[e[h].line];
	size_t i, m = marks(head);
	int rc;

	buf_reset(out);
	rc = buf_add(out, head->content, head->clen);
	for (i = h + 1; i < n && e[i].join; i++) {
		const struct reply_line *l = &r->lines[e[i].line];

		/* a line that reached the column was cut in a word */
		if (overshoot(&r->lines[e[i - 1].line], 0, w) <= 0)
			buf_addch(out, ' ');
		rc = buf_add(out, l->p + m, l->len - m);
	}
	return rc;
}

/* Keys as diff.c makes them: the text without blanks. */
static uint32_t key_hash(const char *p, size_t n, int skip_marker)
{
	char *k = xmalloc(n ? n : 1);
	size_t i, o = 0;
	uint32_t h;

	for (i = skip_marker && n ? 1 : 0; i < n; i++) {
		if (i + 1 < n && (unsigned char)p[i] == 0xc2 &&
		    (unsigned char)p[i + 1] == 0xa0) {
			i++;
			continue;
		}
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			k[o++] = p[i];
	}
	h = hash_fnv1a(k, o);
	free(k);
	return h;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* With the mailed diff: a tail that reads as a diff line is joined when
 * the joined line is a line of the diff and the line above alone is
 * not. */
static void tails_by_diff(const struct reply *r, struct qent *e, size_t n,
			  const struct diff *d, const struct width *w)
{
	uint32_t *hs;
	struct buf t = BUF_INIT(REPLY_TEXT_MAX);
	size_t i;
	hs = xmalloc((d->nr_lines ? d->nr_lines : 1) * sizeof(*hs));
	for (i = 0; i < d->nr_lines; i++)
		hs[i] = d->lines[i].hash;
	qsort(hs, d->nr_lines, sizeof(*hs), cmp_u32);
	for (i = 0; i < n; i++) {
		uint32_t h1, h2;
		int alone, joined;

		if (e[i].frag != FRAG_MAYBE || joined_size(e, n, i) > TAILS_MAX)
			continue;
		if (group_text(&t, r, e, i, group_start(e, i - 1), w))
			break;
		h1 = key_hash(t.data, t.len, 1);
		e[i].join = 1;
		if (group_text(&t, r, e, i + 1, group_start(e, i), w))
			break;
		h2 = key_hash(t.data, t.len, 1);
		alone = bsearch(&h1, hs, d->nr_lines, sizeof(*hs), cmp_u32) !=
			NULL;
		joined = bsearch(&h2, hs, d->nr_lines, sizeof(*hs), cmp_u32) !=
			 NULL;
		e[i].join = !alone && joined;
	}
	buf_release(&t);
	free(hs);
}

/*
 * The tails that take up a hunk's extra lines: of the lines that may be
 * tails, the set whose kinds add up to the extra old and new lines
 * exactly, the most likely (the first words furthest past the column)
 * when there are several; none when no set fits.
 */
#define FIT_MAX 12

struct fit {
	size_t at[FIT_MAX];
	size_t nr;
	unsigned pick; /* the best set so far */
	long best; /* its score, or -1 */
};

static void fit(struct fit *f, const struct reply *r, const struct qent *e,
		size_t j, long xo, long xn, unsigned set, long score)
{
	char kind;

	if (!xo && !xn) {
		if (score > f->best) {
			f->best = score;
			f->pick = set;
		}
		return;
	}
	if (j == f->nr)
		return;
	kind = r->lines[e[f->at[j]].line].content[0];
	if ((kind == '+' || xo > 0) && (kind == '-' || xn > 0))
		fit(f, r, e, j + 1, xo - (kind != '+'), xn - (kind != '-'),
		    set | 1u << j, score + e[f->at[j]].score);
	fit(f, r, e, j + 1, xo, xn, set, score);
}

/* Without it: the quoted hunk's count against its "@@" header's. */
static void tails_by_count(const struct reply *r, struct qent *e, size_t n)
{
	size_t i, j, end;

	for (i = 0; i < n; i++) {
		const struct reply_line *l = &r->lines[e[i].line];
		uint64_t start, oc = 1, nc = 1;
		long xo, xn, blank;
		struct fit f;
		struct scan s;

		if (!l->depth)
			continue;
		/* "@@ -a[,b] +c[,d] @@" */
		scan_init(&s, l->content, l->clen);
		if (!scan_lit(&s, "@@ -") || !scan_u64(&s, 10000000, &start))
			continue;
		if (scan_char(&s, ','))
			scan_u64(&s, 10000000, &oc);
		if (!scan_lit(&s, " +") || !scan_u64(&s, 10000000, &start))
			continue;
		if (scan_char(&s, ','))
			scan_u64(&s, 10000000, &nc);
		xo = -(long)oc;
		xn = -(long)nc;
		blank = 0;
		for (end = i + 1; end < n; end++) {
			const struct reply_line *k = &r->lines[e[end].line];

			/* the next header, or the signature of the patch */
			if (k->depth != l->depth ||
			    diff_header(k->content, k->clen) ||
			    (k->clen == 3 && !memcmp(k->content, "-- ", 3)))
				break;
			if (e[end].join || !diff_body(k->content, k->clen))
				continue;
			/* blank lines at the end of a quote are no context */
			blank = k->clen ? 0 : blank + 1;
			if (!k->clen || k->content[0] != '+')
				xo++;
			if (!k->clen || k->content[0] != '-')
				xn++;
		}
		xo -= blank;
		xn -= blank;
		/* a trimmed hunk, or one quoted whole: nothing to take */
		if (xo < 0 || xn < 0 || (!xo && !xn))
			goto next;
		f.nr = 0;
		for (j = i + 1; j < end && f.nr < FIT_MAX; j++)
			if (e[j].frag == FRAG_MAYBE && !e[j].join &&
			    joined_size(e, n, j) <= TAILS_MAX)
				f.at[f.nr++] = j;
		f.best = -1;
		f.pick = 0;
		fit(&f, r, e, 0, xo, xn, 0, 0);
		for (j = 0; f.best >= 0 && j < f.nr; j++)
			if (f.pick & (1u << j))
				e[f.at[j]].join = 1;
next:
		i = end - 1;
	}
}

int reply_anchor(struct reply *r, const struct diff *d, struct diff **pseudo)
{
	struct diff_quote *q = NULL;
	struct qent *e = NULL;
	size_t *idx = NULL, nq = 0, ne = 0, i, b, last_text;
	struct width w;
	struct diff *own = NULL;
	struct buf joined = BUF_INIT(2 * REPLY_TEXT_MAX);
	size_t *off = NULL;
	int *pos = NULL, rc = 0, use_pseudo = !d;

	if (pseudo)
		*pseudo = NULL;
	e = xcalloc(r->nr ? r->nr : 1, sizeof(*e));
	for (i = 0; i < r->nr; i++) {
		const struct reply_line *l = &r->lines[i];

		if (l->kind != RL_QUOTE && l->kind != RL_ORIG)
			continue;
		e[ne++].line = i;
	}
	width_of(&w, r, e, ne);
	find_tails(r, e, ne, !use_pseudo, &w);
	if (use_pseudo)
		tails_by_count(r, e, ne);
	else
		tails_by_diff(r, e, ne, d, &w);

	/* one quoted line per group: a line and its tails joined */
	q = xmalloc((ne ? ne : 1) * sizeof(*q));
	idx = xmalloc((ne ? ne : 1) * sizeof(*idx));
	off = xmalloc((ne ? ne : 1) * sizeof(*off));
	for (i = 0; i < ne; i++) {
		const struct reply_line *l = &r->lines[e[i].line];
		struct buf t = BUF_INIT(REPLY_TEXT_MAX);

		if (e[i].join)
			continue;
		if (i + 1 < ne && e[i + 1].join) {
			rc = group_text(&t, r, e, ne, i, &w);
			off[nq] = joined.len;
			q[nq].p = NULL;
			q[nq].len = t.len;
			if (!rc)
				rc = buf_add(&joined, t.data, t.len);
			buf_release(&t);
			if (rc)
				goto out;
		} else {
			q[nq].p = l->content;
			q[nq].len = l->clen;
		}
		idx[nq++] = i;
	}
	for (i = 0; i < nq; i++)
		if (!q[i].p)
			q[i].p = joined.data + off[i];
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
			const struct reply_line *l = &r->lines[e[idx[i]].line];

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
	for (i = 0; i < nq; i++) {
		size_t k;

		r->lines[e[idx[i]].line].diff = pos[i];
		for (k = idx[i] + 1; k < ne && e[k].join; k++)
			r->lines[e[k].line].diff = pos[i];
	}
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
	buf_release(&joined);
	free(pos);
	free(q);
	free(idx);
	free(off);
	free(e);
	return rc;
}
