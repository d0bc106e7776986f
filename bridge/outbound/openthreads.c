#include "outbound/openthreads.h"

#include "outbound/forgetext.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A note that can be resolved: GitLab's resolvable? is a DiffNote or a
 * DiscussionNote that is not a system note (resolvable_note.rb). */
static int resolvable(const struct forge_note *n)
{
	return n->resolvable && !n->system;
}

static int64_t resolved_ms(const struct forge_note *n)
{
	int64_t ms;

	if (n->resolved_at && !forge_time_parse(&ms, n->resolved_at))
		return ms;
	return 0;
}

enum openthreads_state openthreads_state(const struct forge_discussion *d,
					 const struct forge_note **resolver)
{
	const struct forge_note *last = NULL;
	size_t i, nr = 0;

	if (resolver)
		*resolver = NULL;
	/* An internal thread stays on the forge (forgemail.h); a thread on
	 * no line of the diff is a general comment (the bridge starts one
	 * for each list reply, so that answers continue it). */
	if (!d->nr_notes || d->notes[0].internal || !d->notes[0].has_position)
		return OPENTHREADS_NONE;
	for (i = 0; i < d->nr_notes; i++) {
		const struct forge_note *n = &d->notes[i];

		if (!resolvable(n))
			continue;
		nr++;
		if (!n->resolved)
			return OPENTHREADS_OPEN;
		if (!last || resolved_ms(n) >= resolved_ms(last))
			last = n;
	}
	if (!nr)
		return OPENTHREADS_NONE;
	if (resolver)
		*resolver = last;
	return OPENTHREADS_RESOLVED;
}

int openthreads_where(struct buf *out, const struct forge_note *n)
{
	const struct forge_position *p = &n->position;
	const char *path = p->new_path ? p->new_path : p->old_path;
	int64_t line = p->new_line > 0 ? p->new_line : p->old_line;
	int rc;

	if (!n->has_position || !path)
		return buf_adds(out, "general");
	rc = utf8_clean(out, path, strlen(path), UTF8_CLEAN_LINE);
	if (!rc && line > 0)
		rc = buf_addf(out, ":%lld", (long long)line);
	return rc;
}

static const char *who(const struct forge_user *u)
{
	if (u->name && *u->name)
		return u->name;
	return u->username && *u->username ? u->username : "someone";
}

#define FOOTER "<sub>\xe2\x80\x94 " /* plan_footer(): "<sub>— " */

/*
 * Who wrote n: its author, or for a note the bridge's user posted for a
 * list reply, the sender its footer names (inbound/plan.c, plan_footer():
 * "<sub>— Name &lt;email&gt; via email...", which text relayed from the
 * list cannot forge, escape.c writing its every "<" as "&lt;").
 */
static int author(struct buf *out, const struct forge_note *n, const char *bot)
{
	const char *name = who(&n->author), *p = NULL, *q, *e;
	struct buf t = BUF_INIT(1024);
	int rc;

	if (bot && *bot && n->author.username &&
	    !strcmp(n->author.username, bot) && n->body)
		for (q = n->body; (q = strstr(q, FOOTER)); q++)
			p = q + strlen(FOOTER);
	if (!p)
		return utf8_clean(out, name, strlen(name), UTF8_CLEAN_LINE);
	e = p + strcspn(p, "\n");
	if ((q = strstr(p, " via email")) && q < e)
		e = q;
	if (!strncmp(p, "&lt;", 4) && (q = strstr(p, "&gt;")) && q < e) {
		p += 4; /* no name: the address */
		e = q;
	} else if ((q = strstr(p, " &lt;")) && q < e) {
		e = q;
	}
	rc = forgetext_markdown(&t, p, (size_t)(e - p));
	if (!rc && !t.len)
		rc = buf_adds(&t, name);
	if (!rc)
		rc = utf8_clean(out, t.data, t.len, UTF8_CLEAN_LINE);
	buf_release(&t);
	return rc;
}

/* The first line of text that is not blank, cut at max bytes on a
 * character boundary ("..." then); of the note as plain text
 * (forgetext_markdown(): escapes resolved, our marker gone). */
static int first_line(struct buf *out, const char *md, size_t max)
{
	struct buf plain = BUF_INIT(PB_TEXT_PART_MAX);
	const char *p, *e;
	size_t len, cut;
	int rc;

	if (forgetext_markdown(&plain, md ? md : "", md ? strlen(md) : 0))
		buf_clear_error(&plain); /* what fitted: its first line */
	p = plain.data;

	for (;;) {
		p += strspn(p, " \t\r\n");
		e = p + strcspn(p, "\r\n");
		if (e > p || !*e)
			break;
		p = e;
	}
	len = (size_t)(e - p);
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	cut = len;
	if (cut > max) {
		cut = max;
		/* back to the start of a character */
		while (cut && ((unsigned char)p[cut] & 0xC0) == 0x80)
			cut--;
	}
	rc = utf8_clean(out, p, cut, UTF8_CLEAN_LINE);
	if (!rc && cut < len)
		rc = buf_adds(out, "...");
	buf_release(&plain);
	return rc;
}

struct item {
	const struct forge_discussion *d;
	const struct forge_note *resolver; /* NULL: open */
	int revision;
};

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (!x->resolver != !y->resolver)
		return x->resolver ? 1 : -1; /* the open ones first */
	if (x->revision != y->revision)
		return x->revision < y->revision ? -1 : 1;
	return x->d->notes[0].id < y->d->notes[0].id ?
		       -1 :
		       x->d->notes[0].id > y->d->notes[0].id;
}

/* "- PATH:LINE (NAME)", the start of a thread's line. */
static int item_head(struct buf *out, const struct item *it,
		     const struct openthreads_opts *o)
{
	const struct forge_note *n = &it->d->notes[0];
	int rc = buf_adds(out, "- ");

	if (!rc)
		rc = openthreads_where(out, n);
	if (!rc)
		rc = buf_adds(out, " (");
	if (!rc)
		rc = author(out, n, o->bot);
	if (!rc)
		rc = buf_addch(out, ')');
	return rc;
}

static int open_item(struct buf *out, const struct item *it,
		     const struct openthreads_opts *o)
{
	const struct forge_note *n = &it->d->notes[0];
	const char *url = o->url;
	int rc = item_head(out, it, o);

	if (!rc)
		rc = buf_adds(out, ": ");
	if (!rc)
		rc = first_line(out, n->body, OPENTHREADS_LINE_MAX);
	if (!rc)
		rc = buf_addch(out, '\n');
	if (!rc && url)
		rc = buf_addf(out, "  %s#note_%lld\n", url, (long long)n->id);
	return rc;
}

static int resolved_item(struct buf *out, const struct item *it,
			 const struct openthreads_opts *o)
{
	const char *by = who(&it->resolver->resolved_by);
	int rc = item_head(out, it, o);

	if (!rc)
		rc = buf_adds(out, ", resolved by ");
	if (!rc)
		rc = utf8_clean(out, by, strlen(by), UTF8_CLEAN_LINE);
	if (!rc)
		rc = buf_addch(out, '\n');
	return rc;
}

int openthreads_cover(struct buf *out, const struct forge_discussion_list *dl,
		      const struct openthreads_opts *o)
{
	struct item *items = xcalloc(dl->nr + 1, sizeof(*items));
	size_t i, nr = 0, shown, rest;
	int rc = 0, group = -1, resolved_group = 0;

	for (i = 0; i < dl->nr; i++) {
		const struct forge_discussion *d = &dl->items[i];
		const struct forge_note *r = NULL;
		enum openthreads_state s = openthreads_state(d, &r);
		const struct forge_position *p = &d->notes[0].position;
		int rev = 0;

		if (s == OPENTHREADS_NONE)
			continue;
		/* Resolved before vN was mailed: vN's readers knew it. */
		if (s == OPENTHREADS_RESOLVED &&
		    (!o->prev_ms || !r || resolved_ms(r) < o->prev_ms))
			continue;
		if (o->rev_of && d->notes[0].has_position)
			rev = o->rev_of(p->head_sha, p->base_sha, o->arg);
		if (rev <= 0 || rev >= o->revision)
			rev = o->prev_revision;
		items[nr].d = d;
		items[nr].resolver = s == OPENTHREADS_RESOLVED ? r : NULL;
		items[nr].revision = rev;
		nr++;
	}
	if (nr)
		qsort(items, nr, sizeof(*items), cmp_item);
	shown = nr < OPENTHREADS_LIST_MAX ? nr : OPENTHREADS_LIST_MAX;
	for (i = 0; i < shown && !rc; i++) {
		const struct item *it = &items[i];

		if (!it->resolver && it->revision != group) {
			rc = buf_addf(out, "%sOpen from v%d:\n", i ? "\n" : "",
				      it->revision);
			group = it->revision;
		} else if (it->resolver && !resolved_group) {
			rc = buf_addf(out, "%sResolved since v%d:\n",
				      i ? "\n" : "", o->prev_revision);
			resolved_group = 1;
		}
		if (!rc)
			rc = it->resolver ? resolved_item(out, it, o) :
					    open_item(out, it, o);
	}
	rest = nr - shown;
	if (!rc && rest)
		rc = buf_addf(out, "\nand %zu more thread%s on the forge%s%s\n",
			      rest, rest == 1 ? "" : "s", o->url ? ": " : "",
			      o->url ? o->url : "");
	if (!rc && nr)
		rc = buf_addch(out, '\n');
	free(items);
	return rc;
}
