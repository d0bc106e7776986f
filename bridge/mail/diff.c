#include "mail/diff.h"
#include "util/err.h"
#include "util/hashmap.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* keys: the text with all whitespace removed, and its FNV-1a hash */

static int is_ws(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' ||
	       c == '\v';
}

/* A no-break space (U+00A0): mail clients put it for leading blanks. */
static int is_nbsp(const char *p, size_t left)
{
	return left >= 2 && (unsigned char)p[0] == 0xc2 &&
	       (unsigned char)p[1] == 0xa0;
}

/* Copy p[0..len) without whitespace into out (len bytes). */
static size_t make_key(char *out, const char *p, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		if (is_nbsp(p + i, len - i)) {
			i++;
			continue;
		}
		if (!is_ws((unsigned char)p[i]))
			out[o++] = p[i];
	}
	return o;
}

/* ------------------------------------------------------------------ */
/* parsing */

struct builder {
	struct diff *d;
	size_t alloc_files, alloc_hunks, alloc_lines;
	size_t *key_off; /* per line: offset into diff->keys */
	long file; /* current file or -1 */
	long hunk; /* open hunk or -1 */
	int old_left, new_left, old_no, new_no;
	int lenient; /* DIFF_LENIENT: a trimmed quote */
	int uncertain; /* lines were skipped: numbers are unknown */
	int named; /* the file's "---"/"+++" pair was read */
};

static char *path_dup(const char *p, size_t n, char side)
{
	mem_trim(&p, &n);
	/* "a/path" / "b/path"; /dev/null means no file on that side */
	if (n == 9 && !memcmp(p, "/dev/null", 9))
		return NULL;
	if (n >= 2 && n < 4096 && p[0] == '"' && p[n - 1] == '"') {
		p++;
		n -= 2;
	}
	if (n > 2 && p[0] == side && p[1] == '/') {
		p += 2;
		n -= 2;
	}
	/* "+++ b/file\t2024-01-01 ...": drop a timestamp after a tab */
	{
		const char *tab = memchr(p, '\t', n);

		if (tab)
			n = (size_t)(tab - p);
	}
	return n ? xstrndup(p, n) : NULL;
}

static void new_file(struct builder *b)
{
	struct diff *d = b->d;

	ALLOC_GROW(d->files, d->nr_files + 1, b->alloc_files);
	d->files[d->nr_files].old_path = NULL;
	d->files[d->nr_files].new_path = NULL;
	b->file = (long)d->nr_files++;
	b->hunk = -1;
	b->named = 0;
}

static int file_has_hunks(const struct builder *b)
{
	const struct diff *d = b->d;

	return d->nr_hunks > 0 &&
	       d->hunks[d->nr_hunks - 1].file == (size_t)b->file;
}

static void set_path(char **slot, char *p)
{
	if (!p)
		return;
	free(*slot);
	*slot = p;
}

/* "diff --git a/x b/y": paths split at the first " b/". */
static void git_header(struct builder *b, const char *p, size_t n)
{
	const char *sp;
	struct diff_file *f;

	new_file(b);
	f = &b->d->files[b->file];
	sp = mem_find(p, n, " b/", 3);
	if (!sp)
		return;
	f->old_path = path_dup(p, (size_t)(sp - p), 'a');
	f->new_path = path_dup(sp + 1, n - (size_t)(sp + 1 - p), 'b');
}

/* "@@ -12,7 +12,8 @@ ..." */
static int hunk_header(const char *p, size_t n, int *os, int *oc, int *ns,
		       int *nc)
{
	struct scan s;
	uint64_t v;

	scan_init(&s, p, n);
	if (!scan_lit(&s, "@@ -") || !scan_u64(&s, 10000000, &v))
		return 0;
	*os = (int)v;
	*oc = 1;
	if (scan_char(&s, ',')) {
		if (!scan_u64(&s, 10000000, &v))
			return 0;
		*oc = (int)v;
	}
	if (!scan_lit(&s, " +") || !scan_u64(&s, 10000000, &v))
		return 0;
	*ns = (int)v;
	*nc = 1;
	if (scan_char(&s, ',')) {
		if (!scan_u64(&s, 10000000, &v))
			return 0;
		*nc = (int)v;
	}
	return scan_lit(&s, " @@");
}

static void close_hunk(struct builder *b)
{
	struct diff_hunk *h;

	if (b->hunk < 0)
		return;
	h = &b->d->hunks[b->hunk];
	h->nr = b->d->nr_lines - h->first;
	h->complete = b->old_left <= 0 && b->new_left <= 0;
	b->hunk = -1;
}

static int add_line(struct builder *b, char kind, const char *text, size_t len)
{
	struct diff *d = b->d;
	struct diff_line *l;
	size_t off = d->keys.len, cap = b->alloc_lines;
	char *k;
	int rc;

	if (d->nr_lines >= DIFF_LINES_MAX) {
		d->truncated = 1;
		return PB_ELIMIT;
	}
	rc = buf_grow(&d->keys, len);
	if (rc) {
		d->truncated = 1;
		return rc;
	}
	k = d->keys.data + off;
	d->keys.len += make_key(k, text, len);
	d->keys.data[d->keys.len] = '\0';

	ALLOC_GROW(d->lines, d->nr_lines + 1, b->alloc_lines);
	if (b->alloc_lines != cap || !b->key_off)
		b->key_off = xreallocarray(b->key_off, b->alloc_lines,
					   sizeof(*b->key_off));
	l = &d->lines[d->nr_lines];
	memset(l, 0, sizeof(*l));
	l->kind = kind;
	l->file = (size_t)b->file;
	l->hunk = (size_t)b->hunk;
	l->text = text;
	l->len = len;
	b->key_off[d->nr_lines] = off;
	l->key_len = d->keys.len - off;
	if (kind != '+')
		l->old_no = b->old_no++;
	if (kind != '-')
		l->new_no = b->new_no++;
	if (b->uncertain)
		l->old_no = l->new_no = 0;
	d->nr_lines++;
	return 0;
}

/* One line inside a hunk; 0 when it does not belong there. */
static int hunk_line(struct builder *b, const char *p, size_t n, int *rc)
{
	char c = n ? p[0] : ' ';

	*rc = 0;
	if (is_nbsp(p, n)) {
		/* the context line's space became a no-break space */
		c = ' ';
		p++;
		n--;
	}
	if (c == '\\')
		return 1; /* "\ No newline at end of file" */
	if (c == ' ' && b->old_left > 0 && b->new_left > 0) {
		b->old_left--;
		b->new_left--;
	} else if (c == '+' && b->new_left > 0) {
		b->new_left--;
	} else if (c == '-' && b->old_left > 0) {
		b->old_left--;
	} else if (b->lenient && (b->old_left > 0 || b->new_left > 0) &&
		   c != ' ' && c != '+' && c != '-') {
		/* a trim marker or a comment inside a hunk: skip it; how
		 * many lines it stands for is unknown from here on */
		b->uncertain = 1;
		return 1;
	} else {
		return 0;
	}
	*rc = add_line(b, c, n ? p + 1 : p, n ? n - 1 : 0);
	if (b->old_left <= 0 && b->new_left <= 0)
		close_hunk(b);
	return 1;
}

/* A line that starts a file or a hunk. */
static int is_header(const char *line, size_t n)
{
	return (n > 11 && !memcmp(line, "diff --git ", 11)) ||
	       (n > 4 && !memcmp(line, "@@ -", 4));
}

/*
 * In a quote, "--- a/x" / "+++ b/x" / "@@ -..." starts the next file
 * even when the hunk before it seems to want more lines: a client that
 * merged two quoted lines (Outlook) leaves the hunk one short, and the
 * file's header would be read as its last lines.  No three lines of a
 * hunk read so: "@@" cannot open a hunk line.
 */
static int is_file_header(const char *line, size_t n, const struct scan *s)
{
	struct scan peek = *s;
	const char *next;
	size_t nn;

	if (n < 4 || memcmp(line, "--- ", 4))
		return 0;
	if (!scan_line(&peek, &next, &nn) || nn < 4 || memcmp(next, "+++ ", 4))
		return 0;
	return scan_line(&peek, &next, &nn) && nn > 4 &&
	       !memcmp(next, "@@ -", 4);
}

int diff_parse(struct diff **out, const char *text, size_t len)
{
	return diff_parse_flags(out, text, len, 0);
}

int diff_parse_flags(struct diff **out, const char *text, size_t len,
		     unsigned flags)
{
	struct builder b;
	struct diff *d;
	struct scan s;
	const char *line, *next;
	size_t n, nn, i;
	int rc = 0, os, oc, ns, nc;

	*out = NULL;
	d = xcalloc(1, sizeof(*d));
	atomic_init(&d->refs, 1);
	buf_init(&d->text, DIFF_TEXT_MAX);
	buf_init(&d->keys, DIFF_TEXT_MAX);
	memset(&b, 0, sizeof(b));
	b.d = d;
	b.file = -1;
	b.hunk = -1;
	b.lenient = !!(flags & DIFF_LENIENT);
	rc = buf_add(&d->text, text, len);
	if (rc)
		goto out;

	scan_init(&s, d->text.data, d->text.len);
	while (!rc && !d->truncated && scan_line(&s, &line, &n)) {
		if (b.hunk >= 0) {
			if (!(b.lenient && (is_header(line, n) ||
					    is_file_header(line, n, &s))) &&
			    hunk_line(&b, line, n, &rc))
				continue;
			close_hunk(&b);
		}
		if (n > 11 && !memcmp(line, "diff --git ", 11)) {
			git_header(&b, line + 11, n - 11);
		} else if (n > 4 && !memcmp(line, "--- ", 4)) {
			struct scan peek = s;

			if (!scan_line(&peek, &next, &nn) || nn < 4 ||
			    memcmp(next, "+++ ", 4))
				continue;
			/* a plain "diff -u" header, or the one after
			 * "diff --git" (whose file has no hunk yet) */
			if (b.file < 0 || file_has_hunks(&b))
				new_file(&b);
			/* "/dev/null" says the file is new (or deleted) */
			free(d->files[b.file].old_path);
			d->files[b.file].old_path =
				path_dup(line + 4, n - 4, 'a');
			free(d->files[b.file].new_path);
			d->files[b.file].new_path =
				path_dup(next + 4, nn - 4, 'b');
			b.named = 1;
			s = peek;
		} else if (b.lenient && n > 4 && !memcmp(line, "+++ ", 4) &&
			   b.file >= 0 && !b.named && !file_has_hunks(&b)) {
			/* a quote whose client re-flowed the header
			 * ("b/x index 1234..5678" / "100644 --- a/x" /
			 * "+++ b/x", Claws Mail): the "+++" line alone
			 * names the file.  Not after the pair: Outlook
			 * wraps a long "+++ b/x" into a second "+++" */
			set_path(&d->files[b.file].new_path,
				 path_dup(line + 4, n - 4, 'b'));
		} else if (n > 12 && !memcmp(line, "rename from ", 12) &&
			   b.file >= 0) {
			set_path(&d->files[b.file].old_path,
				 xstrndup(line + 12, n - 12));
		} else if (n > 10 && !memcmp(line, "rename to ", 10) &&
			   b.file >= 0) {
			set_path(&d->files[b.file].new_path,
				 xstrndup(line + 10, n - 10));
		} else if (hunk_header(line, n, &os, &oc, &ns, &nc)) {
			if (b.file < 0)
				new_file(&b);
			ALLOC_GROW(d->hunks, d->nr_hunks + 1, b.alloc_hunks);
			memset(&d->hunks[d->nr_hunks], 0, sizeof(d->hunks[0]));
			d->hunks[d->nr_hunks].file = (size_t)b.file;
			d->hunks[d->nr_hunks].first = d->nr_lines;
			d->hunks[d->nr_hunks].old_start = os;
			d->hunks[d->nr_hunks].old_count = oc;
			d->hunks[d->nr_hunks].new_start = ns;
			d->hunks[d->nr_hunks].new_count = nc;
			b.hunk = (long)d->nr_hunks++;
			b.uncertain = 0;
			b.old_left = oc;
			b.new_left = nc;
			/* "-0,0" counts from line 1 of an empty side */
			b.old_no = os ? os : 1;
			b.new_no = ns ? ns : 1;
			if (oc == 0 && nc == 0)
				close_hunk(&b);
		}
	}
	close_hunk(&b);
	rc = 0; /* past DIFF_LINES_MAX: keep what was parsed */
	/* the keys buffer is stable now: point the lines at it */
	for (i = 0; i < d->nr_lines; i++) {
		d->lines[i].key = d->keys.data + b.key_off[i];
		d->lines[i].hash =
			hash_fnv1a(d->lines[i].key, d->lines[i].key_len);
	}
	*out = d;
	d = NULL;
out:
	free(b.key_off);
	diff_free(d);
	return rc;
}

struct diff *diff_ref(struct diff *d)
{
	atomic_fetch_add(&d->refs, 1);
	return d;
}

size_t diff_size(const struct diff *d)
{
	return sizeof(*d) + d->text.alloc + d->keys.alloc +
	       d->nr_files * sizeof(*d->files) +
	       d->nr_hunks * sizeof(*d->hunks) +
	       d->nr_lines * sizeof(*d->lines);
}

void diff_free(struct diff *d)
{
	size_t i;

	if (!d || atomic_fetch_sub(&d->refs, 1) > 1)
		return;
	for (i = 0; i < d->nr_files; i++) {
		free(d->files[i].old_path);
		free(d->files[i].new_path);
	}
	free(d->files);
	free(d->hunks);
	free(d->lines);
	buf_release(&d->text);
	buf_release(&d->keys);
	free(d);
}

const char *diff_line_path(const struct diff *d, const struct diff_line *l)
{
	const struct diff_file *f = &d->files[l->file];

	if (f->new_path)
		return f->new_path;
	return f->old_path ? f->old_path : "";
}

/* ------------------------------------------------------------------ */
/* aligning a quote on the diff */

/* A key shared by more diff lines than this ("}", "return 0;") only
 * matches next to a neighbour's match. */
#define ALIGN_COMMON 24
/* Wrapped lines: the quoted head must be this long to match a prefix. */
#define ALIGN_HEAD_MIN 12
#define ALIGN_ADJ_BONUS 0.5f
#define ALIGN_WEAK 0.5f
/* How far past a trim marker a common line is looked for. */
#define ALIGN_WINDOW 50

enum how {
	HOW_EXACT,
	HOW_HEAD, /* the quote holds the start of a wrapped line */
	HOW_MERGED, /* the quote merged this line with the next one */
};

struct cand {
	size_t row; /* quoted line */
	int p; /* diff line */
	float w; /* match weight */
	enum how how;
	size_t used; /* key bytes of the diff line the quote covered */
	float score; /* best total of an alignment ending here */
	long prev; /* predecessor candidate (flat index), -1 */
};

struct row {
	struct cand *v;
	size_t nr, alloc;
	size_t first; /* flat index of v[0] */
	size_t row; /* its own index */
	int common; /* too frequent to match on its own */
};

struct qkey {
	char kind; /* '+', '-' or 0: an explicit diff marker */
	const char *mk; /* key after the marker */
	size_t mk_len;
	const char *wk; /* key of the whole line */
	size_t wk_len;
	int skip; /* headers, blank lines: never matched */
};

/* One line in an index. */
struct ix_entry {
	struct hashmap_entry ent;
	long line;
};

struct index {
	struct hashmap map;
	struct ix_entry *v; /* one per line */
};

static long ix_line(const struct hashmap_entry *e)
{
	return CONTAINER_OF(e, struct ix_entry, ent)->line;
}

/* Index the diff's lines by the hash of their key's first plen bytes
 * (plen 0: the whole key).  Lines of one hash come back in order. */
static void index_build(struct index *ix, const struct diff *d, size_t plen)
{
	size_t i;

	hashmap_init(&ix->map, d->nr_lines);
	ix->v = xcalloc(d->nr_lines ? d->nr_lines : 1, sizeof(*ix->v));
	/* newest first: add the last line first */
	for (i = d->nr_lines; i-- > 0;) {
		const struct diff_line *l = &d->lines[i];

		if (plen && l->key_len <= plen)
			continue;
		ix->v[i].line = (long)i;
		hashmap_add(&ix->map, &ix->v[i].ent,
			    plen ? hash_fnv1a(l->key, plen) : l->hash);
	}
}

static void index_free(struct index *ix)
{
	hashmap_release(&ix->map);
	free(ix->v);
}

static float key_weight(size_t klen)
{
	if (klen >= 8)
		return 1.0f;
	if (klen >= 3)
		return 0.6f;
	return 0.2f;
}

static void cand_add(struct row *r, int p, float w, enum how how, size_t used)
{
	size_t row = r->row;
	struct cand *x;
	size_t i;

	for (i = 0; i < r->nr; i++) {
		if (r->v[i].p == p) {
			if (w > r->v[i].w) {
				r->v[i].w = w;
				r->v[i].how = how;
				r->v[i].used = used;
			}
			return;
		}
	}
	ALLOC_GROW(r->v, r->nr + 1, r->alloc);
	x = &r->v[r->nr++];
	memset(x, 0, sizeof(*x));
	x->row = row;
	x->p = p;
	x->w = w;
	x->how = how;
	x->used = used;
	x->prev = -1;
}

static void quote_key(struct qkey *q, char *buf, const char *p, size_t len)
{
	const char *s = p;
	size_t n = len;

	memset(q, 0, sizeof(*q));
	while (n && is_ws((unsigned char)*s)) {
		s++;
		n--;
	}
	if (!n || (n >= 2 && !memcmp(s, "@@", 2)) ||
	    (n >= 10 && !memcmp(s, "diff --git", 10)) ||
	    (n >= 4 && (!memcmp(s, "--- ", 4) || !memcmp(s, "+++ ", 4))) ||
	    (n >= 6 && !memcmp(s, "index ", 6))) {
		q->skip = 1;
		return;
	}
	q->wk = buf;
	q->wk_len = make_key(buf, s, n);
	if (!q->wk_len) {
		q->skip = 1;
		return;
	}
	if (*s == '+' || *s == '-') {
		q->kind = *s;
		q->mk = buf + len;
		q->mk_len = make_key(buf + len, s + 1, n - 1);
	}
}

/* Does diff line p equal the quote (as a marked line or as context)? */
static int line_matches(const struct diff *d, int p, const struct qkey *q,
			float *w)
{
	const struct diff_line *l = &d->lines[p];

	if (q->kind && l->kind == q->kind && l->key_len == q->mk_len &&
	    !memcmp(l->key, q->mk, q->mk_len)) {
		*w = key_weight(q->mk_len);
		return 1;
	}
	if (l->kind == ' ' && l->key_len == q->wk_len &&
	    !memcmp(l->key, q->wk, q->wk_len)) {
		*w = key_weight(q->wk_len) * (q->kind ? 0.8f : 1.0f);
		return 1;
	}
	return 0;
}

/*
 * Lines whose key is k (kind: the marker to match, 0 for context).
 * Returns how many matched; stores up to max of them.
 */
static size_t lookup(const struct diff *d, const struct index *ix,
		     const char *k, size_t kl, char kind, long *out, size_t max)
{
	uint32_t h = hash_fnv1a(k, kl);
	const struct hashmap_entry *e;
	size_t n = 0;
	long i;

	for (e = hashmap_first(&ix->map, h); e; e = hashmap_next(e)) {
		const struct diff_line *l;

		i = ix_line(e);
		l = &d->lines[i];
		if (l->key_len != kl || memcmp(l->key, k, kl) ||
		    l->kind != (kind ? kind : ' '))
			continue;
		if (n < max)
			out[n] = i;
		if (++n > max)
			break; /* too common to matter how common */
	}
	return n;
}

/* Lines whose key starts with k and is longer (a wrapped line's head). */
static void lookup_head(struct row *r, const struct diff *d,
			const struct index *px, const char *k, size_t kl,
			char kind)
{
	const struct hashmap_entry *e;
	size_t found = 0, visited = 0;
	long i;

	if (kl < ALIGN_HEAD_MIN)
		return;
	/* lines sharing a long head are many in generated code: bound it */
	for (e = hashmap_first(&px->map, hash_fnv1a(k, ALIGN_HEAD_MIN));
	     e && found <= ALIGN_COMMON && visited++ < 16 * ALIGN_COMMON;
	     e = hashmap_next(e)) {
		const struct diff_line *l;

		i = ix_line(e);
		l = &d->lines[i];
		if (l->key_len <= kl || memcmp(l->key, k, kl) ||
		    l->kind != (kind ? kind : ' '))
			continue;
		cand_add(r, (int)i, kind ? 0.7f : 0.6f, HOW_HEAD, kl);
		found++;
	}
}

static void candidates(struct row *r, const struct diff *d,
		       const struct index *ix, const struct index *px,
		       const struct qkey *q)
{
	long hits[ALIGN_COMMON + 1];
	size_t n, j, L;

	if (q->skip)
		return;
	if (q->kind) {
		n = lookup(d, ix, q->mk, q->mk_len, q->kind, hits,
			   ALIGN_COMMON + 1);
		if (n > ALIGN_COMMON || q->mk_len < 2)
			r->common = 1;
		else
			for (j = 0; j < n; j++)
				cand_add(r, (int)hits[j], key_weight(q->mk_len),
					 HOW_EXACT, q->mk_len);
		/* two lines merged into one: "+ end-of-comment >  static int" */
		for (L = 2; L < q->mk_len; L++) {
			if (q->mk[L] != '>')
				continue;
			n = lookup(d, ix, q->mk, L, q->kind, hits,
				   ALIGN_COMMON + 1);
			for (j = 0; j < n && n <= ALIGN_COMMON; j++)
				cand_add(r, (int)hits[j], 0.8f, HOW_MERGED, L);
		}
		lookup_head(r, d, px, q->mk, q->mk_len, q->kind);
	}
	n = lookup(d, ix, q->wk, q->wk_len, 0, hits, ALIGN_COMMON + 1);
	if (n > ALIGN_COMMON || q->wk_len < 2)
		r->common = 1;
	else
		for (j = 0; j < n; j++)
			cand_add(r, (int)hits[j],
				 key_weight(q->wk_len) *
					 (q->kind ? 0.8f : 1.0f),
				 HOW_EXACT, q->wk_len);
	lookup_head(r, d, px, q->wk, q->wk_len, 0);
}

/*
 * Common lines: candidates next to a neighbour row's candidates, delta
 * lines away, or anywhere within `window` lines after them (before them
 * for a negative window) when a trim marker may sit between.
 */
static void near_neighbour(struct row *r, const struct row *nb, int delta,
			   int window, const struct diff *d,
			   const struct qkey *q)
{
	size_t j, before = r->nr;
	float w;
	int k;

	for (j = 0; j < nb->nr && r->nr - before <= ALIGN_COMMON; j++) {
		int p = nb->v[j].p + delta;

		if (!window) {
			if (p >= 0 && p < (int)d->nr_lines &&
			    line_matches(d, p, q, &w))
				cand_add(r, p, w, HOW_EXACT,
					 d->lines[p].key_len);
			continue;
		}
		for (k = 1; k <= abs(window); k++) {
			p = nb->v[j].p + (window > 0 ? k : -k);
			if (p < 0 || p >= (int)d->nr_lines)
				break;
			if (line_matches(d, p, q, &w)) {
				cand_add(r, p, w, HOW_EXACT,
					 d->lines[p].key_len);
				break; /* the nearest one */
			}
		}
	}
}

struct fenwick {
	float *score;
	long *id;
	size_t n;
};

static void fw_update(struct fenwick *f, int p, float score, long id)
{
	size_t x;

	for (x = (size_t)p + 1; x <= f->n; x += x & (~x + 1)) {
		if (f->id[x] < 0 || score > f->score[x]) {
			f->score[x] = score;
			f->id[x] = id;
		}
	}
}

/* The best candidate at a position in [0, p], or -1. */
static long fw_query(const struct fenwick *f, int p, float *score)
{
	long best = -1;
	size_t x;

	if (p < 0)
		return -1;
	for (x = (size_t)p + 1; x > 0; x -= x & (~x + 1)) {
		if (f->id[x] >= 0 && (best < 0 || f->score[x] > *score)) {
			*score = f->score[x];
			best = f->id[x];
		}
	}
	return best;
}

int diff_align(int *out, const struct diff *d, const struct diff_quote *q,
	       size_t nq)
{
	struct index ix, px;
	struct fenwick fw;
	struct row *rows;
	struct qkey *qk;
	struct cand **flat;
	char *keybuf;
	size_t *used, i, j, total = 0, nflat = 0;
	long best = -1;
	int r, rr;

	for (i = 0; i < nq; i++)
		out[i] = -1;
	if (!d || !d->nr_lines || !nq)
		return 0;
	if (nq > DIFF_QUOTE_MAX)
		return err_set(PB_ELIMIT, "more than %d quoted lines",
			       DIFF_QUOTE_MAX);

	for (i = 0; i < nq; i++)
		total += 2 * q[i].len + 2;
	keybuf = xmalloc(total);
	qk = xcalloc(nq, sizeof(*qk));
	for (i = 0, total = 0; i < nq; i++) {
		quote_key(&qk[i], keybuf + total, q[i].p, q[i].len);
		total += 2 * q[i].len + 2;
	}
	index_build(&ix, d, 0);
	index_build(&px, d, ALIGN_HEAD_MIN);
	rows = xcalloc(nq, sizeof(*rows));
	for (i = 0; i < nq; i++) {
		rows[i].row = i;
		candidates(&rows[i], d, &ix, &px, &qk[i]);
	}
	/* common lines take positions next to their neighbours' (across
	 * one unmatched line, such as a blank one) */
	for (i = 1; i < nq; i++) {
		if (!rows[i].common || qk[i].skip)
			continue;
		near_neighbour(&rows[i], &rows[i - 1], 1, 0, d, &qk[i]);
		if (i >= 2 && !rows[i - 1].nr)
			near_neighbour(&rows[i], &rows[i - 2], 0, ALIGN_WINDOW,
				       d, &qk[i]);
	}
	for (i = nq - 1; i-- > 0;) {
		if (!rows[i].common || qk[i].skip)
			continue;
		near_neighbour(&rows[i], &rows[i + 1], -1, 0, d, &qk[i]);
		if (i + 2 < nq && !rows[i + 1].nr)
			near_neighbour(&rows[i], &rows[i + 2], 0, -ALIGN_WINDOW,
				       d, &qk[i]);
	}

	/* flat numbering for the predecessor links */
	for (i = 0; i < nq; i++) {
		rows[i].first = nflat;
		nflat += rows[i].nr;
	}
	flat = xmalloc((nflat ? nflat : 1) * sizeof(*flat));
	for (i = 0; i < nq; i++)
		for (j = 0; j < rows[i].nr; j++)
			flat[rows[i].first + j] = &rows[i].v[j];

	/*
	 * The best order-preserving assignment: a candidate scores its
	 * weight plus the best of (any earlier row at an earlier line) or
	 * (one of the two previous rows one or two lines before it, with a
	 * bonus: quoted runs stay runs).
	 */
	fw.n = d->nr_lines;
	fw.score = xcalloc(fw.n + 1, sizeof(*fw.score));
	fw.id = xmalloc((fw.n + 1) * sizeof(*fw.id));
	for (i = 0; i <= fw.n; i++)
		fw.id[i] = -1;
	for (r = 0; r < (int)nq; r++) {
		for (j = 0; j < rows[r].nr; j++) {
			struct cand *x = &rows[r].v[j];
			float base = 0, s = 0;
			long prev = -1, f;
			size_t k;

			f = fw_query(&fw, x->p - 1, &s);
			if (f >= 0 && s > base) {
				base = s;
				prev = f;
			}
			for (rr = r - 1; rr >= 0 && rr >= r - 2; rr--) {
				for (k = 0; k < rows[rr].nr; k++) {
					struct cand *y = &rows[rr].v[k];

					if (y->p >= x->p || y->p < x->p - 2)
						continue;
					if (y->score + ALIGN_ADJ_BONUS > base) {
						base = y->score +
						       ALIGN_ADJ_BONUS;
						prev = (long)(rows[rr].first +
							      k);
					}
				}
			}
			x->score = x->w + base;
			x->prev = prev;
			if (best < 0 || x->score > flat[best]->score)
				best = (long)(rows[r].first + j);
		}
		for (j = 0; j < rows[r].nr; j++)
			fw_update(&fw, rows[r].v[j].p, rows[r].v[j].score,
				  (long)(rows[r].first + j));
	}

	/* walk back the best chain */
	used = xcalloc(nq, sizeof(*used));
	{
		long at = best;
		enum how *how = xcalloc(nq, sizeof(*how));
		float *w = xcalloc(nq, sizeof(*w));

		while (at >= 0) {
			size_t row = flat[at]->row;

			out[row] = flat[at]->p;
			how[row] = flat[at]->how;
			used[row] = flat[at]->used;
			w[row] = flat[at]->w;
			at = flat[at]->prev;
		}
		/* weak matches must sit near another match */
		for (i = 0; i < nq; i++) {
			int keep = 0;

			if (out[i] < 0 || w[i] >= ALIGN_WEAK)
				continue;
			for (j = i > 3 ? i - 3 : 0; j <= i + 3 && j < nq; j++)
				if (j != i && out[j] >= 0 &&
				    w[j] >= ALIGN_WEAK &&
				    abs(out[j] - out[i]) <= ALIGN_WINDOW)
					keep = 1;
			if (!keep)
				out[i] = -1;
		}
		/* the continuation of a wrapped line joins its head */
		for (i = 1; i < nq; i++) {
			const struct diff_line *l;

			if (out[i] >= 0 || out[i - 1] < 0 || qk[i].skip ||
			    (how[i - 1] != HOW_HEAD))
				continue;
			l = &d->lines[out[i - 1]];
			if (used[i - 1] + qk[i].wk_len > l->key_len ||
			    memcmp(l->key + used[i - 1], qk[i].wk,
				   qk[i].wk_len))
				continue;
			out[i] = out[i - 1];
			used[i] = used[i - 1] + qk[i].wk_len;
			how[i] = used[i] < l->key_len ? HOW_HEAD : HOW_EXACT;
		}
		free(how);
		free(w);
	}

	free(used);
	free(fw.score);
	free(fw.id);
	free(flat);
	for (i = 0; i < nq; i++)
		free(rows[i].v);
	free(rows);
	index_free(&ix);
	index_free(&px);
	free(qk);
	free(keybuf);
	return 0;
}

void diff_paths(struct strlist *out, const struct diff *d)
{
	size_t i;

	for (i = 0; i < d->nr_files; i++) {
		const struct diff_file *f = &d->files[i];

		if (f->old_path && strlist_find(out, f->old_path) < 0)
			strlist_push(out, f->old_path);
		if (f->new_path && strlist_find(out, f->new_path) < 0)
			strlist_push(out, f->new_path);
	}
}
