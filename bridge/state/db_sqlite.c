/*
 * db_sqlite - the SQLite driver of db.h (the only SQLite user).
 *
 * A connection is opened in SQLite's multi-thread mode (NOMUTEX) with
 * extended result codes.  A read/write connection keeps its -wal and
 * -shm files after close (persistent WAL), so a read-only reader never
 * needs write access to the directory (store.h).
 */
#include "state/db.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <sqlite3.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* RETURNING (3.35) makes "allocate and insert" one statement. */
#if SQLITE_VERSION_NUMBER < 3035000
#error "patchbridge needs SQLite 3.35 or newer"
#endif
#define DB_SQLITE_MIN 3035000

struct sdb {
	struct db db;
	sqlite3 *h;
	char *path;
	int migrating; /* a DB_TX_MIGRATE transaction is open */
};

struct db_stmt {
	struct sdb *c;
	sqlite3_stmt *s;
	int bind_rc;
};

static struct sdb *sdb(struct db *db)
{
	return (struct sdb *)db;
}

/*
 * SQLite result code -> ours.  Busy and locked are the other connection's
 * lock (retry); a full disk or an I/O error may pass like ENOSPC/EIO do
 * in fileio.h.  A unique key is "exists"; other constraints mean the
 * caller passed something the schema forbids.
 */
static int code_from_sqlite(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
	case SQLITE_FULL:
	case SQLITE_IOERR:
		return PB_ETEMP;
	case SQLITE_CONSTRAINT:
		if (rc == SQLITE_CONSTRAINT_PRIMARYKEY ||
		    rc == SQLITE_CONSTRAINT_UNIQUE)
			return PB_EEXISTS;
		return PB_EINVAL;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return PB_EPERM;
	case SQLITE_CANTOPEN:
		return PB_ENOTFOUND;
	default:
		return PB_ERROR;
	}
}

/* Record the connection's current error; returns our code. */
static int fail(struct sdb *c, int rc)
{
	int code = code_from_sqlite(rc);
	int e = c->h ? sqlite3_system_errno(c->h) : 0;

	if (!code)
		code = PB_ERROR;
	if ((rc & 0xff) == SQLITE_CANTOPEN && e && e != ENOENT)
		code = e == EACCES || e == EPERM ? PB_EPERM : PB_ERROR;
	if (e &&
	    ((rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_IOERR))
		return err_set(code, "%s (%s)", sqlite3_errmsg(c->h),
			       strerror(e));
	return err_set(code, "%s",
		       c->h ? sqlite3_errmsg(c->h) : sqlite3_errstr(rc));
}

static int run(struct sdb *c, const char *sql)
{
	int rc = sqlite3_exec(c->h, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : fail(c, sqlite3_extended_errcode(c->h));
}

static void s_close(struct db *db)
{
	struct sdb *c = sdb(db);

	if (c->h && !sqlite3_get_autocommit(c->h))
		sqlite3_exec(c->h, "ROLLBACK", NULL, NULL, NULL);
	/* The store finalized its statements; v2 copes with any left. */
	sqlite3_close_v2(c->h);
	free(c->path);
	free(c);
}

static int s_prepare(struct db_stmt **out, struct db *db, const char *sql)
{
	struct sdb *c = sdb(db);
	struct db_stmt *s;
	sqlite3_stmt *h = NULL;
	int rc;

	*out = NULL;
	rc = sqlite3_prepare_v3(c->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &h,
				NULL);
	if (rc != SQLITE_OK)
		return fail(c, rc);
	s = xcalloc(1, sizeof(*s));
	s->c = c;
	s->s = h;
	*out = s;
	return 0;
}

static void s_finalize(struct db_stmt *s)
{
	sqlite3_finalize(s->s);
	free(s);
}

static void bound(struct db_stmt *s, int rc)
{
	if (s->bind_rc == SQLITE_OK)
		s->bind_rc = rc;
}

static void s_bind_int(struct db_stmt *s, int i, int64_t v)
{
	bound(s, sqlite3_bind_int64(s->s, i, v));
}

static void s_bind_int_null(struct db_stmt *s, int i)
{
	bound(s, sqlite3_bind_null(s->s, i));
}

static void s_bind_text(struct db_stmt *s, int i, const char *p, size_t len)
{
	if (p)
		bound(s, sqlite3_bind_text64(s->s, i, p, len, SQLITE_STATIC,
					     SQLITE_UTF8));
	else
		bound(s, sqlite3_bind_null(s->s, i));
}

static void s_bind_blob(struct db_stmt *s, int i, const void *p, size_t len)
{
	if (p)
		bound(s, sqlite3_bind_blob64(s->s, i, p, len, SQLITE_STATIC));
	else
		bound(s, sqlite3_bind_null(s->s, i));
}

static int s_step(struct db_stmt *s)
{
	int rc;

	if (s->bind_rc != SQLITE_OK)
		return fail(s->c, s->bind_rc);
	rc = sqlite3_step(s->s);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	return fail(s->c, sqlite3_extended_errcode(s->c->h));
}

static int s_column_null(struct db_stmt *s, int i)
{
	return sqlite3_column_type(s->s, i) == SQLITE_NULL;
}

static int64_t s_column_int(struct db_stmt *s, int i)
{
	return sqlite3_column_int64(s->s, i);
}

static const char *s_column_bytes(struct db_stmt *s, int i, size_t *len)
{
	const char *p;

	*len = 0;
	switch (sqlite3_column_type(s->s, i)) {
	case SQLITE_NULL:
		return NULL;
	case SQLITE_BLOB:
		p = sqlite3_column_blob(s->s, i);
		break;
	default:
		p = (const char *)sqlite3_column_text(s->s, i);
		break;
	}
	*len = (size_t)sqlite3_column_bytes(s->s, i);
	/* An empty blob reads as a NULL pointer: it is not SQL NULL. */
	return p ? p : "";
}

static int64_t s_changes(struct db_stmt *s)
{
	return sqlite3_changes(s->c->h);
}

static void s_reset(struct db_stmt *s)
{
	sqlite3_reset(s->s);
	sqlite3_clear_bindings(s->s);
	s->bind_rc = SQLITE_OK;
}

static int s_exec(struct db *db, const char *script)
{
	return run(sdb(db), script);
}

static int s_begin(struct db *db, enum db_tx kind)
{
	struct sdb *c = sdb(db);
	int rc = run(c, kind == DB_TX_READ ? "BEGIN" : "BEGIN IMMEDIATE");

	c->migrating = !rc && kind == DB_TX_MIGRATE;
	return rc;
}

/* fsync the directory holding path, so a new file's name is durable. */
static int sync_dir_of(const char *path)
{
	char *dir = path_dir(path);
	int rc = dir_fsync(dir);

	free(dir);
	return rc;
}

static int s_commit(struct db *db)
{
	struct sdb *c = sdb(db);
	int migrating = c->migrating, rc;

	c->migrating = 0;
	if (sqlite3_get_autocommit(c->h))
		return err_set(PB_ETEMP, "the transaction was rolled back "
					 "after an earlier error");
	rc = run(c, "COMMIT");
	if (rc && !sqlite3_get_autocommit(c->h))
		sqlite3_exec(c->h, "ROLLBACK", NULL, NULL, NULL);
	/* SQLite syncs the -wal file's directory entry, not the
	 * database's: a schema change may have created the file. */
	if (!rc && migrating)
		rc = sync_dir_of(c->path);
	return rc;
}

static int s_rollback(struct db *db)
{
	struct sdb *c = sdb(db);

	c->migrating = 0;
	if (sqlite3_get_autocommit(c->h))
		return 0; /* rolled back already (I/O error, ...) */
	return run(c, "ROLLBACK");
}

static int s_savepoint(struct db *db)
{
	return run(sdb(db), "SAVEPOINT store_unit");
}

static int s_release(struct db *db, int ok)
{
	struct sdb *c = sdb(db);
	int rc = 0, rc2;

	if (sqlite3_get_autocommit(c->h))
		return err_set(PB_ETEMP, "the transaction was rolled back "
					 "after an earlier error");
	if (ok) {
		rc = run(c, "RELEASE store_unit");
		if (!rc)
			return 0;
	}
	rc2 = run(c, "ROLLBACK TO store_unit");
	if (!rc2)
		rc2 = run(c, "RELEASE store_unit");
	return ok ? rc : rc2;
}

static int s_in_tx(struct db *db)
{
	return !sqlite3_get_autocommit(sdb(db)->h);
}

static int s_retryable(struct db *db)
{
	(void)db;
	return 0; /* one writer at a time: nothing to retry */
}

static const struct db_ops sqlite_ops = {
	.close = s_close,
	.prepare = s_prepare,
	.finalize = s_finalize,
	.bind_int = s_bind_int,
	.bind_int_null = s_bind_int_null,
	.bind_text = s_bind_text,
	.bind_blob = s_bind_blob,
	.step = s_step,
	.column_null = s_column_null,
	.column_int = s_column_int,
	.column_bytes = s_column_bytes,
	.changes = s_changes,
	.reset = s_reset,
	.exec = s_exec,
	.begin = s_begin,
	.commit = s_commit,
	.rollback = s_rollback,
	.savepoint = s_savepoint,
	.release = s_release,
	.in_tx = s_in_tx,
	.retryable = s_retryable,
};

int db_sqlite_open(struct db **out, char **name, const char *path,
		   enum db_mode mode, int busy_ms)
{
	struct sdb *c;
	int one = 1, rc, oflags = SQLITE_OPEN_NOMUTEX;

	*out = NULL;
	*name = xstrdup(path);
	if (sqlite3_libversion_number() < DB_SQLITE_MIN)
		return err_set(PB_ERROR, "SQLite %s is too old (need 3.35)",
			       sqlite3_libversion());
	/* NOMUTEX needs a library built for threads (multi-thread mode). */
	if (!sqlite3_threadsafe())
		return err_set(PB_ERROR, "SQLite was built without threads");
	c = xcalloc(1, sizeof(*c));
	c->db.ops = &sqlite_ops;
	c->db.dialect = DB_SQLITE;
	c->path = xstrdup(path);
	if (mode == DB_READ_ONLY)
		oflags |= SQLITE_OPEN_READONLY;
	else
		oflags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	rc = sqlite3_open_v2(path, &c->h, oflags, NULL);
	if (rc != SQLITE_OK) {
		rc = fail(c, rc);
		goto out;
	}
	sqlite3_extended_result_codes(c->h, 1);
	sqlite3_busy_timeout(c->h, busy_ms);
	/*
	 * Keep -wal and -shm after the last close, so a read-only reader
	 * never needs to create them (which takes write access to the
	 * directory).  Set before the WAL is first opened.
	 */
	if (mode == DB_READ_WRITE) {
		rc = sqlite3_file_control(c->h, "main",
					  SQLITE_FCNTL_PERSIST_WAL, &one);
		if (rc != SQLITE_OK) {
			rc = fail(c, rc);
			err_prefix(rc, "persistent WAL");
			goto out;
		}
	}
	rc = 0;
out:
	if (rc) {
		s_close(&c->db);
		return rc;
	}
	*out = &c->db;
	return 0;
}
