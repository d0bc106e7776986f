/*
 * store_archive - the mail archive: every mail of an MR's
 * conversation.  See store_archive.h.
 */

#include "state/storeq.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const archive_origin_names[] = {
	[STORE_ARCHIVE_BRIDGE] = "bridge",
	[STORE_ARCHIVE_LIST] = "list",
};

/* Mail archive. */

void store_archived_init(struct store_archived *a)
{
	memset(a, 0, sizeof(*a));
}

void store_archived_release(struct store_archived *a)
{
	strlist_release(&a->owned);
	store_archived_init(a);
}

const char *store_archive_origin_name(enum store_archive_origin origin)
{
	return name_of(archive_origin_names, ARRAY_SIZE(archive_origin_names),
		       (size_t)origin);
}

void store_archived_list_release(struct store_archived_list *list)
{
	LIST_RELEASE(list, store_archived_release);
}

/* Columns: message_id, project, iid, origin, message, created. */
static int archived_from_row(struct store_archived *a, struct query *q)
{
	int origin;

	origin = col_enum(q, 3, archive_origin_names,
			  ARRAY_SIZE(archive_origin_names));
	if (origin < 0)
		return origin;
	store_archived_release(a);
	a->message_id = col_own(&a->owned, q, 0);
	a->project = col_own(&a->owned, q, 1);
	a->iid = col_int(q, 2);
	a->origin = (enum store_archive_origin)origin;
	a->message = col_own_blob(&a->owned, q, 4, &a->message_len);
	a->created = col_int(q, 5);
	return 0;
}

int store_archive_put(struct store *st, const struct store_archived *a)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	if ((rc = check_str("Message-ID", a->message_id, STORE_MSGID_MAX, 1)) ||
	    (rc = check_mr(a->project, a->iid)))
		return rc;
	if ((size_t)a->origin >= ARRAY_SIZE(archive_origin_names))
		return err_set(PB_EINVAL, "state db: bad archive origin %d",
			       (int)a->origin);
	if (!a->message || !a->message_len || a->message_len > STORE_DIFF_MAX)
		return err_set(PB_EINVAL, "state db: bad message (%zu bytes)",
			       a->message_len);
	rc = q_start(&q, st, S_ARCH_PUT, "archive mail");
	if (rc)
		return rc;
	q_text(&q, 1, a->message_id);
	q_text(&q, 2, a->project);
	q_int(&q, 3, a->iid);
	q_text(&q, 4, archive_origin_names[a->origin]);
	q_blob(&q, 5, a->message, a->message_len);
	q_int(&q, 6, a->created > 0 ? a->created : now());
	rc = q_exec(&q);
	if (!rc && q.changes == 0)
		rc = err_set(PB_EEXISTS,
			     "state db: mail <%s> is archived "
			     "already",
			     quote(qb, sizeof(qb), a->message_id));
	q_end(&q);
	return rc;
}

int store_archive_get(struct store_archived *out, struct store *st,
		      const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_ARCH_GET, "get archived mail");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	rc = q_step(&q);
	if (rc == 1)
		rc = archived_from_row(out, &q);
	else if (rc == 0)
		rc = err_set(PB_ENOTFOUND,
			     "state db: mail <%s> is not archived",
			     quote(qb, sizeof(qb), message_id));
	q_end(&q);
	return rc;
}

int store_archive_list(struct store_archived_list *out, struct store *st,
		       const char *project, int64_t iid, size_t limit)
{
	struct query q;
	int rc;

	rc = check_mr(project, iid);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_ARCH_LIST, "list archived mails");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_int(&q, 3, limit ? (int64_t)limit : NO_LIMIT);
	while ((rc = q_step(&q)) == 1) {
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		store_archived_init(&out->items[out->nr]);
		rc = archived_from_row(&out->items[out->nr], &q);
		if (rc)
			break;
		out->nr++;
	}
	q_end(&q);
	return rc;
}

int store_archive_missing(int64_t *count, struct store *st, const char *project,
			  int64_t iid)
{
	struct query q;
	int rc;

	*count = 0;
	rc = check_mr(project, iid);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_ARCH_MISSING, "count unarchived mails");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	rc = q_step(&q);
	if (rc == 1) {
		*count = col_int(&q, 0);
		rc = 0;
	}
	q_end(&q);
	return rc;
}

int store_archive_prune(int64_t *removed, struct store *st, int64_t before)
{
	struct query q;
	int rc;

	*removed = 0;
	rc = q_start(&q, st, S_ARCH_PRUNE, "prune the mail archive");
	if (rc)
		return rc;
	q_int(&q, 1, before);
	rc = q_exec(&q);
	if (!rc)
		*removed = q.changes;
	q_end(&q);
	return rc;
}
