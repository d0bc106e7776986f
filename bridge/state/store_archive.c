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

#define ARCH(k, ...) COL_##k(struct store_archived, __VA_ARGS__)
/* A row of S_ARCH_GET and S_ARCH_LIST: message_id, project, iid,
 * origin, message, created. */
static const struct col archived_cols[] = {
	ARCH(TEXT, message_id),
	ARCH(TEXT, project),
	ARCH(INT, iid),
	ARCH(ENUM, origin, archive_origin_names),
	ARCH(BLOB, message, message_len),
	ARCH(INT, created),
};
static const struct row_type archived_row =
	ROW_TYPE(struct store_archived, archived_cols);

/* store_archived_init(), _release() and _list_release() */
ROW_FUNCTIONS(archived, archived_row);

const char *store_archive_origin_name(enum store_archive_origin origin)
{
	return name_of(archive_origin_names, ARRAY_SIZE(archive_origin_names),
		       (size_t)origin);
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

	rc = q_start_msgid(&q, st, S_ARCH_GET, "get archived mail", message_id);
	if (rc)
		return rc;
	rc = q_step(&q);
	if (rc == 1)
		rc = row_read(&archived_row, out, &q);
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

	rc = q_start_mr(&q, st, S_ARCH_LIST, "list archived mails", project,
			iid);
	if (rc)
		return rc;
	q_int(&q, 3, limit ? (int64_t)limit : NO_LIMIT);
	ROW_LIST_READ(rc, &archived_row, out, &q);
	q_end(&q);
	return rc;
}

int store_archive_missing(int64_t *count, struct store *st, const char *project,
			  int64_t iid)
{
	struct query q;
	int rc;

	*count = 0;
	rc = q_start_mr(&q, st, S_ARCH_MISSING, "count unarchived mails",
			project, iid);
	if (rc)
		return rc;
	return q_scalar(&q, count);
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
