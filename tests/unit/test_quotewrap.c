/*
 * A property of the reply parser: a reviewer's comment under a quoted
 * diff line lands on that line's file and number, also when the mail
 * client re-wrapped the quote, with and without the patch that was
 * mailed.
 *
 * Real patch mails (tests/data/corpus) are quoted with "> " (or "> > ",
 * a reply to a reply), the quote
 * wrapped at 72, 76 or 78 columns the way the clients do it (Outlook
 * breaks at the last space before the column, others in the middle of a
 * word, Thunderbird and KMail count a tab as up to 8 columns; the tail
 * goes on a line of its own under the same marks), and a
 * few comments are put under random diff lines.  Each comment must map
 * to the file and line the test itself counted from the patch's "@@"
 * headers.  Seeded: PB_SEED picks the first seed, PB_ITERATIONS how
 * many mails; a failure prints the seed that makes it again.
 */
#include "cmocka_all.h"
#include "golden.h"
#include "mail/diff.h"
#include "mail/reply.h"
#include "util/buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const patches[] = {
	"corpus/threads/18-iwl-ice-arfs-nak/001-patch.eml",
	"corpus/threads/14-ltp-tst-fd-v3/011-patch-3of4.eml",
	"corpus/threads/08-nf-ipv6-jumbo-v2/005-patch-4of6.eml",
	"corpus/threads/10-erofs-meta-buf-v2/002-patch-1of5.eml",
	"corpus/threads/12-fd-dp-get-modes-v2/003-patch-2of4.eml",
	"corpus/threads/06-iwl-iavf-channels-v5/002-patch-1of2.eml",
};

#define NPATCHES (sizeof(patches) / sizeof(patches[0]))
#define MAX_LINES 4096
#define MAX_COMMENTS 6

enum wrap { WRAP_SPACE, WRAP_WORD, WRAP_TABS, WRAP_NONE };
static const char *const wrap_name[] = { "last-space", "mid-word",
					 "last-space, tabs of 8", "none" };

struct pline {
	const char *p;
	size_t n;
	char kind; /* '+', '-', ' ' inside a hunk, 0 outside */
	int old_no, new_no;
	char path[256];
};

struct patch {
	struct buf body;
	struct pline *l;
	size_t nr;
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static size_t rnd_below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

static unsigned long env_num(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);
	unsigned long x = 0;

	if (!v || !*v)
		return dflt;
	for (; *v >= '0' && *v <= '9'; v++)
		x = x * 10 + (unsigned long)(*v - '0');
	return x ? x : dflt;
}

/* The body of a 7bit/8bit patch mail, CRs dropped, counted as git
 * apply would count it. */
static void patch_load(struct patch *pt, const char *name)
{
	struct buf raw = BUF_INIT(16 * 1024 * 1024);
	const char *b, *p, *end;
	char path[256] = "";
	int o = 0, n = 0, oleft = 0, nleft = 0;
	size_t i;

	golden_read(&raw, golden_path("", name));
	b = strstr(raw.data, "\n\n");
	if (!b)
		b = strstr(raw.data, "\r\n\r\n");
	assert_non_null(b);
	buf_init(&pt->body, 16 * 1024 * 1024);
	for (p = b + (b[1] == '\n' ? 2 : 4); *p; p++)
		if (*p != '\r')
			assert_int_equal(buf_addch(&pt->body, *p), 0);
	buf_release(&raw);
	pt->l = calloc(MAX_LINES, sizeof(*pt->l));
	assert_non_null(pt->l);
	pt->nr = 0;
	for (p = pt->body.data; *p && pt->nr < MAX_LINES; p = end + !!*end) {
		struct pline *l = &pt->l[pt->nr++];

		end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		l->p = p;
		l->n = (size_t)(end - p);
		if (l->n > 11 && !strncmp(p, "diff --git ", 11)) {
			const char *bp = strstr(p, " b/");

			if (bp && bp < end) {
				size_t k = (size_t)(end - bp - 3);

				if (k >= sizeof(path))
					k = sizeof(path) - 1;
				memcpy(path, bp + 3, k);
				path[k] = 0;
			}
			oleft = nleft = 0;
			continue;
		}
		if (l->n > 4 && !strncmp(p, "@@ -", 4)) {
			char *q;
			long a, c = 1, d = 1, e;

			a = strtol(p + 4, &q, 10);
			if (*q == ',')
				c = strtol(q + 1, &q, 10);
			e = strtol(q + 2, &q, 10);
			if (*q == ',')
				d = strtol(q + 1, &q, 10);
			o = (int)a;
			n = (int)e;
			oleft = (int)c;
			nleft = (int)d;
			continue;
		}
		if (oleft <= 0 && nleft <= 0)
			continue;
		l->kind = l->n ? p[0] : ' ';
		memcpy(l->path, path, sizeof(path));
		if (l->kind == ' ') {
			l->old_no = o++;
			l->new_no = n++;
			oleft--;
			nleft--;
		} else if (l->kind == '+') {
			l->new_no = n++;
			nleft--;
		} else if (l->kind == '-') {
			l->old_no = o++;
			oleft--;
		} else {
			l->kind = 0; /* "\ No newline at end of file" */
		}
	}
	/* the last line with words of the patch: a comment under it is
	 * general (DESIGN.md, "Inline comments") */
	for (i = pt->nr; i-- > 0;) {
		if (pt->l[i].kind && pt->l[i].n > 1) {
			pt->l[i].kind = 0;
			break;
		}
	}
}

static void patch_release(struct patch *pt)
{
	buf_release(&pt->body);
	free(pt->l);
}

/* A line a comment may go under: a hunk line with words. */
static int commentable(const struct pline *l)
{
	size_t i;

	if (!l->kind)
		return 0;
	for (i = 1; i < l->n; i++)
		if (l->p[i] != ' ' && l->p[i] != '\t')
			return 1;
	return 0;
}

/* The quote marks: "> ", or "> > " in a reply to a reply. */
static const char *marks = "> ";

/* The columns p[0..n) takes after the marks, a tab to the next
 * multiple of 8 (as Thunderbird and KMail count). */
static size_t cols_of(const char *p, size_t n)
{
	size_t i, c = strlen(marks);

	for (i = 0; i < n; i++)
		c = p[i] == '\t' ? (c / 8 + 1) * 8 : c + 1;
	return c;
}

/* Append the marks and the line, wrapped at col the way mode does it. */
static void quote_wrapped(struct buf *out, const char *p, size_t n,
			  enum wrap mode, size_t col)
{
	const size_t pre = strlen(marks);

	for (;;) {
		size_t cut = n, skip = 0;

		if (mode == WRAP_TABS && cols_of(p, n) > col) {
			size_t k;

			/* the most that fits, then back to its last space */
			for (cut = 0; cut < n && cols_of(p, cut + 1) <= col;
			     cut++)
				;
			for (k = cut; k > 0 && p[k] != ' '; k--)
				;
			if (k > 0) {
				cut = k;
				skip = 1;
			}
		} else if ((mode == WRAP_SPACE || mode == WRAP_WORD) &&
			   pre + n > col) {
			cut = col - pre;
			if (mode == WRAP_SPACE) {
				size_t k;

				for (k = cut; k > 0 && p[k] != ' '; k--)
					;
				if (k > 0) {
					cut = k;
					skip = 1;
				}
			}
		}
		/* an empty line's marks without their last space */
		assert_int_equal(buf_add(out, marks,
					 n || marks[pre - 1] != ' ' ? pre :
								      pre - 1),
				 0);
		assert_int_equal(buf_add(out, p, cut), 0);
		assert_int_equal(buf_addch(out, '\n'), 0);
		if (cut + skip >= n)
			return;
		p += cut + skip;
		n -= cut + skip;
	}
}

struct comment {
	size_t line; /* patch line it is under */
	char text[96];
};

static const char *const sayings[] = {
	"Why is this needed here?",
	"This leaks the reference on the error path.",
	"Please keep the order of the declarations.",
	"Can this be NULL at this point?",
	"Same question as above, the lock is not held.",
};

static int same_line(const struct diff *d, int at, const struct pline *want)
{
	const struct diff_line *l = &d->lines[at];
	const char *path = diff_line_path(d, l);

	if (strcmp(path, want->path))
		return 0;
	if (want->kind == '+')
		return l->new_no == want->new_no;
	if (want->kind == '-')
		return l->old_no == want->old_no;
	return l->old_no == want->old_no && l->new_no == want->new_no;
}

/* Check where the comments of text land; returns the failures. */
static int check(const char *text, size_t len, const struct patch *pt,
		 const struct comment *c, size_t nc, int with_parent,
		 uint64_t seed, const char *what)
{
	struct reply *r = NULL;
	struct diff *d = NULL, *pseudo = NULL;
	const struct diff *on;
	size_t b, k;
	int bad = 0, found[MAX_COMMENTS] = { 0 };

	assert_int_equal(reply_parse(&r, text, len, "Rex Reviewer",
				     "rex@example.net"),
			 0);
	if (with_parent)
		assert_int_equal(diff_parse(&d, pt->body.data, pt->body.len),
				 0);
	assert_int_equal(reply_anchor(r, d, with_parent ? NULL : &pseudo), 0);
	on = with_parent ? d : pseudo;
	for (b = 0; b < r->nr_blocks; b++) {
		const struct reply_block *blk = &r->blocks[b];
		const char *t = r->lines[blk->first].p;

		if (!blk->substance)
			continue;
		for (k = 0; k < nc; k++)
			if (!strncmp(t, c[k].text, strlen(c[k].text)))
				break;
		if (k == nc) {
			fprintf(stderr,
				"seed %llu (%s, %s): not a comment: \"%.60s\"\n",
				(unsigned long long)seed, what,
				with_parent ? "parent" : "no parent", t);
			bad++;
			continue;
		}
		found[k] = 1;
		if (blk->general || blk->diff < 0 || !on ||
		    !same_line(on, blk->diff, &pt->l[c[k].line])) {
			const struct diff_line *g =
				on && blk->diff >= 0 ? &on->lines[blk->diff] :
						       NULL;

			fprintf(stderr,
				"seed %llu (%s, %s): \"%s\" under \"%.*s\" "
				"(%s %d/%d) went to %s %d/%d%s\n",
				(unsigned long long)seed, what,
				with_parent ? "parent" : "no parent", c[k].text,
				(int)pt->l[c[k].line].n, pt->l[c[k].line].p,
				pt->l[c[k].line].path, pt->l[c[k].line].old_no,
				pt->l[c[k].line].new_no,
				g ? diff_line_path(on, g) : "nothing",
				g ? g->old_no : 0, g ? g->new_no : 0,
				blk->general ? " (general)" : "");
			bad++;
		}
	}
	for (k = 0; k < nc; k++) {
		if (!found[k]) {
			fprintf(stderr, "seed %llu (%s): \"%s\" was lost\n",
				(unsigned long long)seed, what, c[k].text);
			bad++;
		}
	}
	diff_free(d);
	diff_free(pseudo);
	reply_free(r);
	return bad;
}

static void test_wrapped_quote_property(void **state)
{
	static const size_t cols[] = { 72, 76, 78 };
	struct patch pt[NPATCHES];
	unsigned long first = env_num("PB_SEED", 1);
	unsigned long iters = env_num("PB_ITERATIONS", 600);
	unsigned long it, failed = 0;
	struct buf text = BUF_INIT(4 * 1024 * 1024);
	size_t i;

	(void)state;
	for (i = 0; i < NPATCHES; i++)
		patch_load(&pt[i], patches[i]);
	for (it = 0; it < iters; it++) {
		uint64_t seed = first + it;
		const struct patch *p;
		enum wrap mode;
		size_t col, nc = 0, cand[MAX_LINES], ncand = 0, k;
		struct comment c[MAX_COMMENTS];
		char what[160];
		int bad;

		rng_state = seed * 0x9e3779b97f4a7c15ULL + 1;
		p = &pt[rnd_below(NPATCHES)];
		mode = (enum wrap)rnd_below(4);
		marks = (const char *[]){ "> ", "> ", "> > ",
					  ">" }[rnd_below(4)];
		col = cols[rnd_below(3)];
		for (i = 0; i < p->nr; i++)
			if (commentable(&p->l[i]))
				cand[ncand++] = i;
		assert_true(ncand > 0);
		for (k = 1 + rnd_below(MAX_COMMENTS); k > 0; k--) {
			size_t at = cand[rnd_below(ncand)], j;

			for (j = 0; j < nc && c[j].line != at; j++)
				;
			if (j < nc)
				continue;
			c[nc].line = at;
			snprintf(c[nc].text, sizeof(c[nc].text), "%s (%zu)",
				 sayings[rnd_below(5)], nc + 1);
			nc++;
		}
		buf_reset(&text);
		assert_int_equal(buf_adds(&text, "On Mon, Jan 01, 2024 at "
						 "10:00:00AM +0000, Ada "
						 "Author wrote:\n"),
				 0);
		for (i = 0; i < p->nr; i++) {
			quote_wrapped(&text, p->l[i].p, p->l[i].n, mode, col);
			for (k = 0; k < nc; k++) {
				if (c[k].line != i)
					continue;
				assert_int_equal(buf_addch(&text, '\n'), 0);
				assert_int_equal(buf_adds(&text, c[k].text), 0);
				assert_int_equal(buf_adds(&text, "\n\n"), 0);
			}
		}
		snprintf(what, sizeof(what), "%s, %s at %zu", patches[p - pt],
			 wrap_name[mode], col);
		bad = check(text.data, text.len, p, c, nc, 1, seed, what) +
		      check(text.data, text.len, p, c, nc, 0, seed, what);
		if (bad) {
			failed++;
			if (failed <= 3)
				fprintf(stderr, "--- seed %llu:\n%s---\n",
					(unsigned long long)seed, text.data);
		}
	}
	fprintf(stderr,
		"%lu of %lu mails misplaced a comment (seeds %lu-%lu)\n",
		failed, iters, first, first + iters - 1);
	buf_release(&text);
	for (i = 0; i < NPATCHES; i++)
		patch_release(&pt[i]);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrapped_quote_property),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
