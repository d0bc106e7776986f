#include "outbound/fmlist.h"

#include "state/store.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/log.h"
#include "util/scan.h"

#include <stdio.h>
#include <string.h>

/*
 * Cursors of entries of numbers: "N:N:...", separated by spaces, each of
 * `fields` non-negative numbers, the first (an iid) not 0.  Loading hands
 * each entry to take(); one that is malformed, or that take() refuses (a
 * full list), is dropped with a log line and *changed set, so that the
 * next save writes the cursor without it.
 */
#define TUPLE_FIELDS_MAX 4

static void cursor_name(char *out, size_t size, const char *list,
			const char *project)
{
	snprintf(out, size, "forgemail:%s:%s", list, project);
}

static int tuples_load(struct store *st, const char *list, const char *project,
		       int fields, int (*take)(void *arg, const uint64_t *v),
		       void *arg, int *changed)
{
	struct buf val = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	char cname[STORE_CURSOR_NAME_MAX];
	struct scan sc;
	int rc;

	cursor_name(cname, sizeof(cname), list, project);
	rc = store_cursor_get(&val, st, cname);
	if (rc == PB_ENOTFOUND)
		rc = 0;
	if (rc)
		goto out;
	scan_init(&sc, val.data, val.len);
	for (;;) {
		uint64_t v[TUPLE_FIELDS_MAX];
		int i, ok = 1;

		scan_blanks(&sc);
		if (scan_eof(&sc))
			break;
		for (i = 0; i < fields && ok; i++)
			ok = (!i || scan_char(&sc, ':')) &&
			     scan_u64(&sc, INT64_MAX, &v[i]);
		if (ok && (!v[0] || (!scan_eof(&sc) && scan_peek(&sc) != ' ')))
			ok = 0;
		if (!ok || take(arg, v) < 0) {
			log_warn("cursor %s: %s entry dropped", cname,
				 ok ? "an extra" : "a malformed");
			*changed = 1;
			while (!scan_eof(&sc) && scan_peek(&sc) != ' ')
				sc.p++;
		}
	}
out:
	buf_release(&val);
	return rc;
}

/* Write nr entries of `fields` numbers each (v, entry by entry), when
 * *changed; clear it once written. */
static int tuples_save(struct store *st, const char *list, const char *project,
		       int fields, const int64_t *v, size_t nr, int *changed)
{
	struct buf val = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	char cname[STORE_CURSOR_NAME_MAX];
	size_t i;
	int k, rc = 0;

	if (!*changed)
		return 0;
	for (i = 0; i < nr && !rc; i++)
		for (k = 0; k < fields && !rc; k++)
			rc = buf_addf(
				&val, "%s%lld",
				k ? ":" :
				i ? " " :
				    "",
				(long long)v[i * (size_t)fields + (size_t)k]);
	cursor_name(cname, sizeof(cname), list, project);
	if (!rc)
		rc = store_cursor_set(st, cname, val.data);
	if (!rc)
		*changed = 0;
	buf_release(&val);
	return rc;
}

/* --- MRs waiting after a temporary failure -------------------------------- */

/* A malformed pending entry is dropped (logged): its MR is then mailed
 * when the listing reports it again, as before pending entries existed. */
static int pending_take(void *arg, const uint64_t *v)
{
	struct fmlist_pendings *pl = arg;
	struct fmlist_pending *e;

	if (pl->nr == FORGEMAIL_PENDING_MAX)
		return -1;
	e = &pl->items[pl->nr++];
	e->iid = (int64_t)v[0];
	e->first_ms = (int64_t)v[1];
	e->next_ms = (int64_t)v[2];
	e->tries = (int64_t)v[3];
	return 0;
}

int fmlist_pending_load(struct fmlist_pendings *pl, struct store *st,
			const char *project)
{
	memset(pl, 0, sizeof(*pl));
	return tuples_load(st, "pending", project, 4, pending_take, pl,
			   &pl->changed);
}

int fmlist_pending_save(struct fmlist_pendings *pl, struct store *st,
			const char *project)
{
	int64_t v[FORGEMAIL_PENDING_MAX * 4];
	size_t i;

	for (i = 0; i < pl->nr; i++) {
		v[i * 4] = pl->items[i].iid;
		v[i * 4 + 1] = pl->items[i].first_ms;
		v[i * 4 + 2] = pl->items[i].next_ms;
		v[i * 4 + 3] = pl->items[i].tries;
	}
	return tuples_save(st, "pending", project, 4, v, pl->nr, &pl->changed);
}

struct fmlist_pending *fmlist_pending_find(struct fmlist_pendings *pl,
					   int64_t iid)
{
	size_t i;

	for (i = 0; i < pl->nr; i++)
		if (pl->items[i].iid == iid)
			return &pl->items[i];
	return NULL;
}

struct fmlist_pending *fmlist_pending_add(struct fmlist_pendings *pl,
					  int64_t iid, int64_t now)
{
	struct fmlist_pending *e;

	if (pl->nr == FORGEMAIL_PENDING_MAX)
		return NULL;
	e = &pl->items[pl->nr++];
	e->iid = iid;
	e->first_ms = now;
	e->tries = 0;
	fmlist_pending_failed(e, now);
	pl->changed = 1;
	return e;
}

void fmlist_pending_drop(struct fmlist_pendings *pl, struct fmlist_pending *e)
{
	size_t i = (size_t)(e - pl->items);

	memmove(e, e + 1, (pl->nr - i - 1) * sizeof(*e));
	pl->nr--;
	pl->changed = 1;
}

void fmlist_pending_failed(struct fmlist_pending *e, int64_t now)
{
	int64_t d = FORGEMAIL_RETRY_BASE_MS;
	int64_t k;

	if (e->tries < INT64_MAX)
		e->tries++;
	for (k = 1; k < e->tries && d < FORGEMAIL_RETRY_MAX_MS; k++)
		d *= 2;
	e->next_ms =
		now + (d < FORGEMAIL_RETRY_MAX_MS ? d : FORGEMAIL_RETRY_MAX_MS);
}

/* --- MRs read again for comments that did not move updated_at ----------- */

/* A malformed recent entry is dropped: its MR is read again when it next
 * changes. */
static int recent_take(void *arg, const uint64_t *v)
{
	struct fmlist_recents *rl = arg;

	if (rl->nr == FORGEMAIL_RECENT_MAX)
		return -1;
	rl->items[rl->nr].iid = (int64_t)v[0];
	rl->items[rl->nr].until_ms = (int64_t)v[1];
	rl->nr++;
	return 0;
}

int fmlist_recent_load(struct fmlist_recents *rl, struct store *st,
		       const char *project)
{
	memset(rl, 0, sizeof(*rl));
	return tuples_load(st, "recent", project, 2, recent_take, rl,
			   &rl->changed);
}

int fmlist_recent_save(struct fmlist_recents *rl, struct store *st,
		       const char *project)
{
	int64_t v[FORGEMAIL_RECENT_MAX * 2];
	size_t i;

	for (i = 0; i < rl->nr; i++) {
		v[i * 2] = rl->items[i].iid;
		v[i * 2 + 1] = rl->items[i].until_ms;
	}
	return tuples_save(st, "recent", project, 2, v, rl->nr, &rl->changed);
}

void fmlist_recent_note(struct fmlist_recents *rl, int64_t iid, int64_t until)
{
	size_t i, first = 0;

	if (rl->nr_seen < FORGEMAIL_RECENT_MAX)
		rl->seen[rl->nr_seen++] = iid;
	for (i = 0; i < rl->nr; i++) {
		if (rl->items[i].iid == iid) {
			if (until > rl->items[i].until_ms) {
				rl->items[i].until_ms = until;
				rl->changed = 1;
			}
			return;
		}
		if (rl->items[i].until_ms < rl->items[first].until_ms)
			first = i;
	}
	if (rl->nr == FORGEMAIL_RECENT_MAX) {
		rl->dropped++;
		rl->items[first] = rl->items[--rl->nr];
	}
	rl->items[rl->nr].iid = iid;
	rl->items[rl->nr].until_ms = until;
	rl->nr++;
	rl->changed = 1;
}

int fmlist_recent_seen(const struct fmlist_recents *rl, int64_t iid)
{
	size_t i;

	for (i = 0; i < rl->nr_seen; i++)
		if (rl->seen[i] == iid)
			return 1;
	return 0;
}
