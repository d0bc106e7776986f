/*
 * store_cursor - named cursors, and a project's state moved to
 * another name.  See store_cursor.h.
 */

#include "state/storeq.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Cursors. */

int store_cursor_get(struct buf *out, struct store *st, const char *name)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = check_str("cursor name", name, STORE_CURSOR_NAME_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_CURSOR_GET, "get cursor");
	if (rc)
		return rc;
	q_text(&q, 1, name);
	rc = q_step(&q);
	if (rc == 1) {
		size_t len;
		const char *v = db_column_bytes(st->db, q.stmt, 0, &len);

		rc = buf_set(out, v ? v : "", len);
	} else if (rc == 0) {
		rc = err_set(PB_ENOTFOUND, "state db: no cursor %s",
			     quote(qb, sizeof(qb), name));
	}
	q_end(&q);
	return rc;
}

int store_cursor_set(struct store *st, const char *name, const char *value)
{
	struct query q;
	int rc;

	if ((rc = check_str("cursor name", name, STORE_CURSOR_NAME_MAX, 1)) ||
	    (rc = check_str("cursor value", value, STORE_CURSOR_VALUE_MAX, 0)))
		return rc;
	rc = q_start(&q, st, S_CURSOR_SET, "set cursor");
	if (rc)
		return rc;
	q_text(&q, 1, name);
	q_text(&q, 2, value ? value : "");
	q_int(&q, 3, now());
	rc = q_exec(&q);
	q_end(&q);
	return rc;
}

/*
 * Where a cursor's name holds a project's path: a prefix of lower-case
 * words ending in ':' ("poll:", "forgemail:notes:"), the path, then the
 * end or '!' and an MR's number ("forgemail:notes:P!12",
 * "list-approval:P!12:user").  Every cursor so named follows the project,
 * whatever module wrote it.  Returns the offset of the path, or 0.
 */
static size_t cursor_project_at(const char *name, const char *project)
{
	size_t i, n = strlen(project);

	for (i = 1; name[i - 1] == ':' || name[i - 1] == '-' ||
		    (name[i - 1] >= 'a' && name[i - 1] <= 'z');
	     i++)
		if (name[i - 1] == ':' && !strncmp(name + i, project, n) &&
		    (!name[i + n] || name[i + n] == '!'))
			return i;
	return 0;
}

static int rename_exec(struct store *st, int id, const char *what,
		       const char *a, const char *b)
{
	struct query q;
	int rc;

	rc = q_start(&q, st, id, what);
	if (rc)
		return rc;
	q_text(&q, 1, a);
	if (b)
		q_text(&q, 2, b);
	rc = q_exec(&q);
	q_end(&q);
	return rc;
}

static int rename_cursors(struct store *st, const char *from, const char *to)
{
	struct strlist names = STRLIST_INIT;
	struct query q;
	size_t i, at;
	int rc;

	rc = q_start(&q, st, S_RENAME_CURSORS, "list the cursors");
	if (rc)
		return rc;
	while ((rc = q_step(&q)) == 1) {
		char *name = col_str(&q, 0);

		if (name && cursor_project_at(name, from))
			strlist_push_owned(&names, name);
		else
			free(name);
	}
	q_end(&q);
	for (i = 0; !rc && i < names.nr; i++) {
		const char *name = names.items[i];
		char *moved;

		at = cursor_project_at(name, from);
		moved = xasprintf("%.*s%s%s", (int)at, name, to,
				  name + at + strlen(from));
		/* What the new name kept alone (its last poll's error, a
		 * watermark with nothing mailed) gives way to the state. */
		rc = rename_exec(st, S_RENAME_CURSOR_DROP, "drop a cursor",
				 moved, NULL);
		if (!rc)
			rc = rename_exec(st, S_RENAME_CURSOR, "rename a cursor",
					 name, moved);
		free(moved);
	}
	strlist_release(&names);
	return rc;
}

static int project_has_state(int64_t *n, struct store *st, const char *project,
			     const char *id_cursor)
{
	struct query q;
	int rc;

	*n = 0;
	rc = q_start(&q, st, S_RENAME_HAS, "look for a project's state");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_text(&q, 2, id_cursor);
	return q_scalar(&q, n);
}

struct rename_args {
	const char *from, *to, *id_prefix;
};

static int rename_tx(struct store *st, void *arg)
{
	const struct rename_args *a = arg;
	char *id_cursor = xasprintf("%s%s", a->id_prefix, a->to);
	int64_t n;
	int rc;

	rc = project_has_state(&n, st, a->to, id_cursor);
	free(id_cursor);
	if (!rc && n)
		return err_set(PB_EEXISTS,
			       "the state db keeps state under both %s and "
			       "%s; it is not merged",
			       a->from, a->to);
	if (!rc)
		rc = rename_exec(st, S_RENAME_REV_COPY, "copy the revisions",
				 a->from, a->to);
	if (!rc)
		rc = rename_exec(st, S_RENAME_MAIL, "move the thread map",
				 a->from, a->to);
	if (!rc)
		rc = rename_exec(st, S_RENAME_REV_DROP, "drop the revisions",
				 a->from, NULL);
	if (!rc)
		rc = rename_exec(st, S_RENAME_INBOUND, "move the journal",
				 a->from, a->to);
	if (!rc)
		rc = rename_exec(st, S_RENAME_ARCHIVE, "move the archive",
				 a->from, a->to);
	if (!rc)
		rc = rename_exec(st, S_RENAME_SUBMISSIONS,
				 "move the submitted series", a->from, a->to);
	if (!rc)
		rc = rename_cursors(st, a->from, a->to);
	return rc;
}

int store_project_rename(struct store *st, const char *from, const char *to,
			 const char *id_prefix)
{
	struct rename_args a = { from, to, id_prefix };
	int rc;

	if ((rc = check_str("project", from, STORE_PROJECT_MAX, 1)) ||
	    (rc = check_str("project", to, STORE_PROJECT_MAX, 1)))
		return rc;
	if (!strcmp(from, to))
		return 0;
	return store_transaction(st, rename_tx, &a);
}

int store_cursor_names(struct strlist *out, struct store *st,
		       const char *prefix, const char *value)
{
	struct query q;
	int rc;

	rc = check_str("cursor value", value, STORE_CURSOR_VALUE_MAX, 0);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_CURSOR_BY_VALUE, "find cursors by value");
	if (rc)
		return rc;
	q_text(&q, 1, value ? value : "");
	while ((rc = q_step(&q)) == 1) {
		char *name = col_str(&q, 0);

		if (name && !strncmp(name, prefix, strlen(prefix)))
			strlist_push_owned(out, name);
		else
			free(name);
	}
	q_end(&q);
	return rc;
}
