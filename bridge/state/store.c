/*
 * store - the state database: opening the connection, transactions.
 * See store.h.
 *
 * The store is this file, store_schema.c (the schema and its
 * migrations), store_query.c (every statement and the query layer,
 * storeq.h) and one file per table or concern (store_mail.c,
 * store_revision.c, store_inbound.c, store_host.c, store_action.c,
 * store_cursor.c, store_outmail.c, store_archive.c), over the small
 * engine interface of db.h with its two drivers (db_sqlite.c, db_pg.c).
 * One store rather than two implementations of store.h because the SQL
 * is nearly all the same: what differs is the schema's types, where the
 * schema version lives and how a row is claimed, and each of those is a
 * PostgreSQL variant next to the statement it replaces, so a change to
 * the store is made once and the same tests judge both engines.
 *
 * Every statement is a constant string in stmt_sql[] of store_query.c
 * (PostgreSQL variants in stmt_sql_pg[]), prepared once per connection
 * (lazily) with bound parameters; nothing formats SQL.  The schema and
 * its migrations are store_schema.c.
 *
 * Transactions (db.h): the caller's store_begin() is a DB_TX_WRITE (or
 * DB_TX_READ on a read-only store).  Functions made of several
 * statements, and the revision number's "highest plus one", run as a
 * unit: a savepoint inside the caller's transaction, else a DB_TX_WRITE
 * of their own that is run again, up to STORE_TRIES times, when
 * PostgreSQL reports a serialization failure or a deadlock.  Row claims
 * are single statements: an UPDATE of the row a sub-select picked, with
 * FOR UPDATE SKIP LOCKED on PostgreSQL, where autocommit statements run
 * at READ COMMITTED; SQLite's single writer gives the same on one host.
 */
#include "state/store.h"
#include "state/storeq.h"
#include "state/db.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/perm.h"
#include "util/printable.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* After a clean close the WAL is truncated to nothing; while open it is
 * cut back to this size after each checkpoint. */
#define STORE_WAL_LIMIT "67108864"

/*
 * An atomic unit of several statements: fn(st, arg) inside a savepoint
 * when the caller has a transaction open, else in a transaction of its
 * own (store_transaction(): run again, from the start, after a
 * serialization failure or a deadlock, STORE_TRIES times at most, with a
 * short random pause that doubles).
 */

static void pause_before_retry(int tries)
{
	struct timespec ts;
	long ms = 1L << (tries < 7 ? tries : 7); /* 2 .. 128 ms */

	ms = 1 + rand() % ms;
	ts.tv_sec = 0;
	ts.tv_nsec = ms * 1000000L;
	nanosleep(&ts, NULL);
}

int unit_run(struct store *st, unit_fn fn, void *arg)
{
	int rc, rc2;

	if (st->in_tx) {
		rc = db_savepoint(st->db);
		if (rc)
			return db_fail(st, rc, "begin");
		rc = fn(st, arg);
		rc2 = db_release(st->db, !rc);
		if (rc2 && !rc)
			return db_fail(st, rc2, "commit");
		return rc;
	}
	return store_transaction(st, fn, arg);
}

int store_transaction(struct store *st, store_tx_fn fn, void *arg)
{
	int rc, tries, retryable;

	for (tries = 1;; tries++) {
		rc = store_begin(st);
		if (rc)
			return rc;
		rc = fn(st, arg);
		retryable = db_retryable(st->db);
		if (!rc) {
			rc = store_commit(st);
			retryable = db_retryable(st->db);
		} else if (db_in_tx(st->db)) {
			/* (a rollback keeps what made the failure
			 * retryable) */
			store_rollback(st);
		} else {
			st->in_tx = 0;
		}
		if (!rc || !retryable || tries >= STORE_TRIES)
			return rc;
		st->retries++;
		log_debug("state db %s: a transaction met another; running it "
			  "again (try %d)",
			  st->name, tries + 1);
		pause_before_retry(tries);
	}
}

/* A one-row statement without parameters whose answer is expect (text),
 * or anything when expect is NULL: SQLite's pragmas. */
static int pragma(struct store *st, const char *sql, const char *expect)
{
	struct db_stmt *s = NULL;
	const char *got;
	size_t len = 0;
	int rc;

	rc = db_prepare(&s, st->db, sql);
	if (!rc)
		rc = db_step(st->db, s);
	if (rc < 0) {
		rc = db_fail(st, rc, sql);
		goto out;
	}
	got = rc == 1 ? db_column_bytes(st->db, s, 0, &len) : "";
	if (!got)
		got = "";
	if (expect && (strlen(expect) != len || memcmp(got, expect, len))) {
		rc = err_set(PB_ERROR, "state db %s: %s gave '%.*s', not '%s'",
			     st->name, sql, (int)len, got, expect);
		goto out;
	}
	rc = 0;
out:
	if (s)
		db_finalize(st->db, s);
	return rc;
}

static int open_rw(struct store *st, int target)
{
	int rc, version;

	/* Refuse a newer schema before changing anything. */
	rc = schema_read_version(st, &version);
	if (rc)
		return rc;
	if (version > store_schema_latest())
		return schema_too_new(st, version);
	if (st->backend == STORE_BACKEND_SQLITE) {
		rc = pragma(st, "PRAGMA journal_mode = WAL", "wal");
		if (!rc)
			rc = pragma(st, "PRAGMA synchronous = FULL", NULL);
		if (!rc)
			rc = pragma(
				st,
				"PRAGMA journal_size_limit = " STORE_WAL_LIMIT,
				STORE_WAL_LIMIT);
		if (rc)
			return rc;
	}
	rc = schema_migrate(st, target);
	/* Foreign keys on only after the schema steps: a step that makes
	 * a table again (9) drops the old one while rows name it, and
	 * SQLite cannot turn them off inside the step's transaction
	 * (sqlite.org/lang_altertable.html, "other kinds of changes"). */
	if (!rc && st->backend == STORE_BACKEND_SQLITE)
		rc = pragma(st, "PRAGMA foreign_keys = ON", NULL);
	return rc;
}

static int open_ro(struct store *st)
{
	int rc, version;

	rc = schema_read_version(st, &version);
	if (rc) {
		char msg[PB_ERRMSG_MAX];

		if (st->backend != STORE_BACKEND_SQLITE)
			return rc;
		snprintf(msg, sizeof(msg), "%s", err_msg());
		return err_set(rc,
			       "%s (a read-only reader needs read access to "
			       "the database and its -wal and -shm files, "
			       "which the daemon keeps once it has run)",
			       msg);
	}
	if (version == 0)
		return err_set(PB_ENOTFOUND,
			       "state db %s is not initialised yet (the "
			       "daemon creates it on start)",
			       st->name);
	if (version > store_schema_latest())
		return schema_too_new(st, version);
	if (version < store_schema_latest())
		return err_set(PB_ETEMP,
			       "state db %s: schema version %d is older "
			       "than %d; the daemon upgrades it on start",
			       st->name, version, store_schema_latest());
	if (st->backend == STORE_BACKEND_SQLITE)
		return pragma(st, "PRAGMA foreign_keys = ON", NULL);
	return 0;
}

static int check_host(const char *host)
{
	const char *p;

	if (!host || !*host || strlen(host) > STORE_HOST_MAX)
		return err_set(PB_EINVAL,
			       "state db: bad host name (1 to %d "
			       "printable characters)",
			       STORE_HOST_MAX);
	for (p = host; *p; p++)
		if (*p <= ' ' || *p > '~')
			return err_set(PB_EINVAL,
				       "state db: the host name has a blank "
				       "or a character that is not printable "
				       "ASCII");
	return 0;
}

/* This host's name: gethostname(), "localhost" when that fails. */
static char *default_host(void)
{
	char h[STORE_HOST_MAX + 1];

	if (gethostname(h, sizeof(h)) != 0 || !h[0] || check_host(h)) {
		err_clear();
		return xstrdup("localhost");
	}
	h[STORE_HOST_MAX] = '\0';
	return xstrdup(h);
}

/*
 * SQLite: the writer's files (the database, its -wal and -shm, the locks
 * and the git mirrors beside it) are created in the database's
 * directory: a directory only the daemon's user may write, so nobody can
 * plant a file or a link there first; and the database is not a link.
 */
static int check_state_dir(const char *path)
{
	char *dir = path_dir(path);
	struct stat sb;
	int rc;

	rc = perm_check_own_dir(dir, "state directory", "2750");
	free(dir);
	if (rc)
		return rc;
	if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
		return err_set(PB_EPERM,
			       "state db %s is a symbolic link; name the real "
			       "file in [state] path",
			       path);
	return 0;
}

/* Connect (and nothing more): the checks of store_open_opts(). */
static int open_conn(struct store **out, const struct store_opts *o)
{
	struct store *st = NULL;
	struct stat sb;
	char *name = NULL;
	int rc;

	*out = NULL;
	if (o->flags != STORE_RO && o->flags != STORE_RW)
		return err_set(
			PB_EINVAL,
			"store_open: flags must be STORE_RO or STORE_RW");
	if (!o->target || !*o->target)
		return err_set(PB_EINVAL, "state db: no %s",
			       o->backend == STORE_BACKEND_SQLITE ?
				       "path" :
				       "connection string");
	if (o->busy_timeout_ms < 0 ||
	    o->busy_timeout_ms > STORE_BUSY_TIMEOUT_MAX)
		return err_set(PB_EINVAL, "state db: bad busy timeout %d ms",
			       o->busy_timeout_ms);
	if (o->lease < 0 || o->lease > STORE_LEASE_MAX)
		return err_set(PB_EINVAL, "state db: bad lease %lld s",
			       (long long)o->lease);
	if (o->host && (rc = check_host(o->host)))
		return rc;
	if (o->schema_version < 0 || o->schema_version > store_schema_latest())
		return err_set(PB_EINVAL, "state db: no schema version %d",
			       o->schema_version);
	if (o->backend == STORE_BACKEND_SQLITE && o->flags == STORE_RW) {
		rc = check_state_dir(o->target);
		if (rc)
			return rc;
	}
	if (o->backend == STORE_BACKEND_SQLITE && o->flags == STORE_RO &&
	    stat(o->target, &sb) != 0) {
		if (errno == ENOENT)
			return err_set(PB_ENOTFOUND,
				       "state db %s does not exist yet (the "
				       "daemon creates it on start)",
				       o->target);
		return err_set_errno(errno == EACCES ? PB_EPERM : PB_ERROR,
				     "state db %s", o->target);
	}

	st = xcalloc(1, sizeof(*st));
	st->flags = o->flags;
	st->backend = o->backend;
	st->host = o->host ? xstrdup(o->host) : default_host();
	st->lease = o->lease ? o->lease : STORE_LEASE_DEFAULT;
	switch (o->backend) {
	case STORE_BACKEND_SQLITE:
		rc = db_sqlite_open(&st->db, &name, o->target,
				    o->flags == STORE_RO ? DB_READ_ONLY :
							   DB_READ_WRITE,
				    o->busy_timeout_ms);
		break;
	case STORE_BACKEND_POSTGRESQL:
		rc = db_pg_open(&st->db, &name, o->target,
				o->flags == STORE_RO ? DB_READ_ONLY :
						       DB_READ_WRITE,
				o->busy_timeout_ms, o->reply_timeout_ms);
		break;
	default:
		rc = err_set(PB_EINVAL, "state db: unknown backend %d",
			     (int)o->backend);
		break;
	}
	st->name = name ? name : xstrdup("?");
	if (rc) {
		err_prefix(rc, "state db %s: open", st->name);
		store_free(st);
		return rc;
	}
	*out = st;
	return 0;
}

int store_open_opts(struct store **out, const struct store_opts *o)
{
	struct store *st = NULL;
	int rc;

	*out = NULL;
	rc = open_conn(&st, o);
	if (rc)
		return rc;
	if (o->flags == STORE_RW)
		rc = open_rw(st, o->schema_version ? o->schema_version :
						     store_schema_latest());
	else
		rc = open_ro(st);
	if (rc) {
		store_free(st);
		return rc;
	}
	*out = st;
	return 0;
}

int store_probe(int *version, char **name, const struct store_opts *opts)
{
	struct store_opts o = *opts;
	struct store *st = NULL;
	int rc;

	*version = 0;
	*name = NULL;
	o.flags = STORE_RO;
	rc = open_conn(&st, &o);
	if (rc == PB_ENOTFOUND && o.backend == STORE_BACKEND_SQLITE)
		return 0; /* no file yet */
	if (!rc) {
		rc = schema_read_version(st, version);
		*name = xstrdup(st->name);
	}
	store_free(st);
	return rc;
}

int store_open(struct store **out, const char *path, unsigned flags,
	       int busy_timeout_ms)
{
	struct store_opts o;

	memset(&o, 0, sizeof(o));
	o.backend = STORE_BACKEND_SQLITE;
	o.target = path;
	o.flags = flags;
	o.busy_timeout_ms = busy_timeout_ms;
	return store_open_opts(out, &o);
}

void store_free(struct store *st)
{
	size_t i;

	if (!st)
		return;
	if (st->db && db_in_tx(st->db)) {
		log_warn("state db %s: closing with a transaction open; "
			 "rolling it back",
			 st->name);
		db_rollback(st->db);
	}
	for (i = 0; i < S_NR; i++)
		if (st->stmts[i])
			db_finalize(st->db, st->stmts[i]);
	db_close(st->db);
	free(st->name);
	free(st->host);
	free(st);
}

const char *store_name(const struct store *st)
{
	return st->name;
}

const char *store_host(const struct store *st)
{
	return st->host;
}

enum store_backend store_backend(const struct store *st)
{
	return st->backend;
}

int64_t store_lease(const struct store *st)
{
	return st->lease;
}

uint64_t store_retries(const struct store *st)
{
	return st->retries;
}

const char *store_backend_name(enum store_backend backend)
{
	return backend == STORE_BACKEND_POSTGRESQL ? "postgresql" : "sqlite";
}

/*
 * SQLite checks the whole file.  PostgreSQL checks its pages as it reads
 * them (with data checksums, initdb -k), so every table is read whole.
 */
static const char pg_check[] =
	"SELECT COUNT(*) FROM revisions; SELECT COUNT(*) FROM thread_map;"
	"SELECT COUNT(*) FROM cursors; SELECT COUNT(*) FROM inbound;"
	"SELECT COUNT(*) FROM forge_actions; SELECT COUNT(*) FROM outmail;"
	"SELECT COUNT(*) FROM archive; SELECT COUNT(*) FROM trailer_verdicts;";

int store_check(struct store *st)
{
	int rc;

	if (st->backend == STORE_BACKEND_POSTGRESQL) {
		rc = db_exec(st->db, pg_check);
		return rc ? db_fail(st, rc, "integrity check") : 0;
	}
	rc = pragma(st, "PRAGMA integrity_check", "ok");
	if (rc)
		err_prefix(rc, "integrity check");
	return rc;
}

int store_begin(struct store *st)
{
	int rc;

	if (st->in_tx || db_in_tx(st->db))
		BUG("store_begin: a transaction is already open");
	rc = db_begin(st->db, st->flags == STORE_RW ? DB_TX_WRITE : DB_TX_READ);
	if (rc)
		return db_fail(st, rc, "begin");
	st->in_tx = 1;
	return 0;
}

int store_commit(struct store *st)
{
	int rc;

	if (!st->in_tx)
		BUG("store_commit without store_begin");
	st->in_tx = 0;
	rc = db_commit(st->db);
	return rc ? db_fail(st, rc, "commit") : 0;
}

int store_rollback(struct store *st)
{
	int rc;

	if (!st->in_tx)
		BUG("store_rollback without store_begin");
	st->in_tx = 0;
	rc = db_rollback(st->db);
	return rc ? db_fail(st, rc, "roll back") : 0;
}
