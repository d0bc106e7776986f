#include "inbound/provenance.h"

#include "inbound/approval.h"
#include "mail/mail.h"
#include "mail/trailers.h"
#include "util/err.h"
#include "util/scan.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest archived mail read (the milter keeps less). */
#define PROVENANCE_MAIL_MAX (64 * 1024 * 1024)

void provenance_init(struct provenance *p)
{
	memset(p, 0, sizeof(*p));
}

void provenance_release(struct provenance *p)
{
	free(p->quoted);
	provenance_init(p);
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* The line without the quote markers a client puts before it: ">",
 * "> >", "|", "&gt;" and blanks between them. */
static void unquote(const char **p, size_t *len)
{
	for (;;) {
		while (*len && (**p == ' ' || **p == '\t'))
			(*p)++, (*len)--;
		if (*len && (**p == '>' || **p == '|')) {
			(*p)++, (*len)--;
		} else if (*len >= 4 && !memcmp(*p, "&gt;", 4)) {
			*p += 4;
			*len -= 4;
		} else {
			return;
		}
	}
}

/* The word every spelling of the tag holds: "acked", "nack" ... */
static const char *stem(const char *type)
{
	if (!strcmp(type, "Acked-by"))
		return "acked";
	if (!strcmp(type, "Reviewed-by"))
		return "reviewed";
	if (!strcmp(type, "Tested-by"))
		return "tested";
	if (trailer_is_nak(type))
		return "nak";
	return NULL;
}

/* Where needle is in hay[0..hn) (ASCII case ignored), or NULL. */
static const char *find_icase(const char *hay, size_t hn, const char *needle)
{
	size_t nn = strlen(needle), i, j;

	for (i = 0; nn && i + nn <= hn; i++) {
		for (j = 0; j < nn; j++)
			if (lower((unsigned char)hay[i + j]) !=
			    lower((unsigned char)needle[j]))
				break;
		if (j == nn)
			return hay + i;
	}
	return NULL;
}

/* Is the tag's word there as a tag: "acked-by", "Reviewed by", "NACKed
 * by" - the stem, a few letters, maybe a '-' or a blank, then "by"? */
static int has_tag(const char *p, size_t len, const char *w)
{
	size_t wl = strlen(w), i, j, k;

	for (i = 0; i + wl <= len; i++) {
		for (k = 0; k < wl; k++)
			if (lower((unsigned char)p[i + k]) != w[k])
				break;
		if (k < wl)
			continue;
		j = i + wl;
		for (k = 0;
		     k < 4 && j < len && lower((unsigned char)p[j]) >= 'a' &&
		     lower((unsigned char)p[j]) <= 'z';
		     k++)
			j++;
		if (j < len && (p[j] == '-' || p[j] == ' ' || p[j] == '_'))
			j++;
		if (j + 2 <= len && lower((unsigned char)p[j]) == 'b' &&
		    lower((unsigned char)p[j + 1]) == 'y')
			return 1;
	}
	return 0;
}

/*
 * Does p[0..len) hold t's person and, elsewhere on the line, its tag?
 * ("Cc: Rob Reviewer <rob@review.example>" names Rob, but "review"
 * there is his name and address, not a Reviewed-by.)
 */
static int names_loosely(const char *p, size_t len, const struct trailer *t)
{
	const char *w = stem(t->type);
	const char *who = t->email && t->email[0] ? t->email : t->name;
	char *line;
	const char *at;
	size_t wl;
	int hit;

	if (!w || !who || (wl = strlen(who)) < 3)
		return 0;
	if (!find_icase(p, len, who))
		return 0;
	/* the line with every occurrence of the person blanked (a line of
	 * any length: a client may re-wrap a long one) */
	line = xmalloc(len + 1);
	memcpy(line, p, len);
	line[len] = '\0';
	while ((at = find_icase(line, len, who)))
		memset(line + (at - line), ' ', wl);
	if (t->name && strlen(t->name) >= 3)
		while ((at = find_icase(line, len, t->name)))
			memset(line + (at - line), ' ', strlen(t->name));
	hit = has_tag(line, len, w) ||
	      (!strcmp(w, "nak") && has_tag(line, len, "nack"));
	free(line);
	return hit;
}

/* Every tag ends in "by": a line without it names nobody's trailer
 * (and most lines of a patch are passed over at that cost). */
static int has_by(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++)
		if ((p[i] == 'b' || p[i] == 'B') &&
		    (p[i + 1] == 'y' || p[i + 1] == 'Y'))
			return 1;
	return 0;
}

int provenance_text_names(const char *text, size_t len, const struct trailer *t)
{
	struct scan s;
	struct trailer_list l;
	const char *line, *prev = NULL;
	size_t n, pn = 0, i;
	char pair[2 * TRAILER_LINE_MAX + 2];
	int hit = 0, by, prev_by = 0;

	scan_init(&s, text, len);
	trailer_list_init(&l);
	while (!hit && scan_line(&s, &line, &n)) {
		unquote(&line, &n);
		by = has_by(line, n);
		if (!by && !prev_by) {
			prev = line;
			pn = n;
			continue;
		}
		if (by && trailers_parse_line(&l, line, n) > 0)
			for (i = 0; i < l.nr && !hit; i++)
				hit = approval_same_trailer(t, &l.v[i]);
		trailer_list_release(&l);
		trailer_list_init(&l);
		if (!hit && by)
			hit = names_loosely(line, n, t);
		/* a trailer a client wrapped over two lines */
		if (!hit && prev && pn + 1 + n < sizeof(pair)) {
			memcpy(pair, prev, pn);
			pair[pn] = ' ';
			memcpy(pair + pn + 1, line, n);
			hit = names_loosely(pair, pn + 1 + n, t);
			if (!hit &&
			    trailers_parse_line(&l, pair, pn + 1 + n) > 0)
				for (i = 0; i < l.nr && !hit; i++)
					hit = approval_same_trailer(t, &l.v[i]);
			trailer_list_release(&l);
			trailer_list_init(&l);
		}
		prev = line;
		pn = n;
		prev_by = by;
	}
	trailer_list_release(&l);
	return hit;
}

int provenance_text_naks(const char *text, size_t len)
{
	struct scan s;
	const char *line;
	size_t n;

	scan_init(&s, text, len);
	while (scan_line(&s, &line, &n)) {
		unquote(&line, &n);
		mem_trim(&line, &n);
		while (n && strchr(".!,;:*_-~", line[n - 1]))
			n--;
		while (n && strchr("*_~", *line))
			line++, n--;
		if ((n == 3 && lower(line[0]) == 'n' && lower(line[1]) == 'a' &&
		     lower(line[2]) == 'k') ||
		    (n == 4 && lower(line[0]) == 'n' && lower(line[1]) == 'a' &&
		     lower(line[2]) == 'c' && lower(line[3]) == 'k'))
			return 1;
	}
	return 0;
}

int provenance_strip_id(char *out, size_t size, const char *id)
{
	size_t n;

	if (!id)
		return 0;
	if (*id == '<')
		id++;
	n = strlen(id);
	if (n && id[n - 1] == '>')
		n--;
	if (!n || n >= size)
		return 0;
	memcpy(out, id, n);
	out[n] = '\0';
	return 1;
}

void provenance_answered(struct strlist *out, const struct mail *m)
{
	char id[PROVENANCE_ID_MAX + 1];
	size_t i;

	if (provenance_strip_id(id, sizeof(id), m->in_reply_to))
		strlist_push(out, id);
	for (i = m->references.nr; i-- > 0;)
		if (provenance_strip_id(id, sizeof(id),
					m->references.items[i]) &&
		    strlist_find(out, id) < 0)
			strlist_push(out, id);
}

/* Read one answered mail: mark the trailers it holds. */
static int read_ancestor(struct provenance *out, const struct review *r,
			 const char *raw, size_t len)
{
	struct mail *m = NULL;
	size_t i;
	int rc;

	rc = mail_parse(&m, raw, len, NULL);
	if (rc)
		return rc == PB_ETEMP ? rc : 0; /* unreadable: nothing */
	out->ancestors++;
	for (i = 0; i < r->trailers.nr; i++) {
		const struct trailer *t = &r->trailers.v[i];

		if (out->quoted[i] || !stem(t->type))
			continue;
		/* the text as decoded, its patch attachment, and the
		 * bytes as sent (an encoding the reader's client undid) */
		out->quoted[i] =
			provenance_text_names(m->text.data, m->text.len, t) ||
			provenance_text_names(m->patch.data, m->patch.len, t) ||
			provenance_text_names(raw, len, t);
	}
	if (!out->ancestor_nak)
		out->ancestor_nak =
			provenance_text_naks(m->text.data, m->text.len) ||
			provenance_text_naks(m->patch.data, m->patch.len);
	mail_free(m);
	return 0;
}

static int same_mr(const struct provenance_place *a,
		   const struct provenance_place *b)
{
	return a->iid == b->iid && !strcmp(a->project, b->project);
}

int provenance_check(struct provenance *out, const struct review *r,
		     const struct provenance_ops *ops)
{
	const struct mail *m = r->mail;
	struct strlist ids = STRLIST_INIT;
	struct buf raw = BUF_INIT(PROVENANCE_MAIL_MAX);
	struct provenance_place pl, first;
	size_t i;
	int rc = 0, have_first = 0, parent_archived = 0;

	memset(&first, 0, sizeof(first));
	provenance_init(out);
	out->nr = r->trailers.nr;
	out->quoted = xcalloc(out->nr + 1, 1);
	/* The mails answered: In-Reply-To (the parent), then References
	 * newest first; without In-Reply-To the last entry is the parent. */
	provenance_answered(&ids, m);
	if (!ids.nr || ids.nr > PROVENANCE_IDS_MAX)
		out->parent_unknown = 1;
	for (i = 0; i < ids.nr && i < PROVENANCE_IDS_MAX; i++) {
		memset(&pl, 0, sizeof(pl));
		rc = ops->place(&pl, ids.items[i], ops->arg);
		if (rc && rc != PB_ENOTFOUND)
			goto out;
		if (!rc && pl.project[0] && pl.iid > 0) {
			if (i == 0) {
				out->parent = pl;
				out->parent_placed = 1;
			}
			if (!have_first) {
				first = pl;
				have_first = 1;
			} else if (!same_mr(&first, &pl)) {
				out->thread_conflict = 1;
			}
			/* an older revision may be answered through a
			 * re-roll's threading, never a newer one */
			if (out->parent_placed && i > 0 &&
			    out->parent.revision > 0 &&
			    pl.revision > out->parent.revision)
				out->thread_conflict = 1;
		}
		if (!ops->archived)
			continue;
		buf_reset(&raw);
		rc = ops->archived(&raw, ids.items[i], ops->arg);
		if (rc == PB_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc)
			goto out;
		if (i == 0)
			parent_archived = 1;
		rc = read_ancestor(out, r, raw.data, raw.len);
		if (rc)
			goto out;
	}
	if (!parent_archived && ops->archived)
		out->parent_unknown = 1;
	/* the subject's revision is the parent's */
	if (out->parent_placed && out->parent.revision > 0 &&
	    r->subject.has_tag && r->subject.version > 0 &&
	    r->subject.version != out->parent.revision)
		out->thread_conflict = 1;
out:
	buf_release(&raw);
	strlist_release(&ids);
	if (rc)
		provenance_release(out);
	return rc;
}
