/*
 * db - the SQL engine under the state store, internal to bridge/state.
 *
 * The store (store.c and store_*.c) holds the logic and every
 * statement; it runs them through this small interface (prepare, bind,
 * step, column, transactions), which two drivers implement:
 *
 *	db_sqlite.c   SQLite, the embedded default (the only SQLite user)
 *	db_pg.c       PostgreSQL through libpq (the only libpq user)
 *
 * Statements are written once, in SQLite's syntax with numbered
 * parameters ("?1", "?2"), in the subset both engines read the same way
 * (ON CONFLICT, RETURNING, row values, NULLS FIRST); the PostgreSQL
 * driver turns "?N" into "$N".  Where the engines must differ (the
 * schema's types, the schema version's home, row claims with FOR UPDATE
 * SKIP LOCKED) store_query.c keeps a PostgreSQL variant beside the
 * statement.
 *
 * Values: integers are 64 bits; text and blobs are bytes with a length
 * (PostgreSQL keeps both as BYTEA, so any byte but NUL is kept as SQLite
 * keeps it, and compares and sorts bytewise as SQLite's BINARY does).
 * A parameter keeps one type over the statement's life: binding a text
 * where an integer was bound before is a bug.
 *
 * Transactions, by what the store needs of them (db_begin()):
 *
 *	DB_TX_READ     a consistent snapshot of committed data
 *	               SQLite: BEGIN (deferred, read)
 *	               PostgreSQL: REPEATABLE READ, READ ONLY
 *	DB_TX_WRITE    writes that behave as if run one after another
 *	               SQLite: BEGIN IMMEDIATE (the single writer lock)
 *	               PostgreSQL: SERIALIZABLE; a conflict fails a statement
 *	               or the commit with PB_ETEMP and db_retryable() true
 *	DB_TX_MIGRATE  schema changes, one migrator at a time
 *	               SQLite: BEGIN IMMEDIATE
 *	               PostgreSQL: READ COMMITTED holding an advisory lock
 *
 * Statements outside a transaction are atomic on their own (SQLite
 * autocommit; PostgreSQL autocommit at READ COMMITTED, where an UPDATE
 * re-checks its WHERE on the row it waited for, and FOR UPDATE SKIP
 * LOCKED claims rows without waiting).  Savepoints nest a unit inside a
 * transaction.
 *
 * On PostgreSQL a failed statement spoils the transaction it ran in:
 * every later statement fails until the rollback.  The store therefore
 * never goes on after a database error inside a transaction (inserts
 * that may meet an existing row use ON CONFLICT DO NOTHING and count the
 * changed rows instead).
 *
 * Errors: 0 or a negative code from util/err.h with err_msg() set to the
 * engine's message (the store adds what it was doing):
 *   PB_ETEMP      busy, locked, a serialization failure or deadlock, the
 *                 connection lost (the next call reconnects), disk full
 *   PB_EEXISTS    a unique key
 *   PB_EINVAL     another constraint
 *   PB_EPERM      permissions, authentication, a read-only connection
 *   PB_ENOTFOUND  SQLite: no such file
 *   PB_ERROR      anything else (PostgreSQL: no such database)
 *
 * Ownership: a struct db owns its statements; db_close() finalizes them.
 * Bound text and blobs are borrowed until the statement's first
 * db_step(); column values are valid until the next db_step() or
 * db_reset() of that statement.  Thread safety: one connection, one
 * thread at a time.
 */
#ifndef PB_STATE_DB_H
#define PB_STATE_DB_H

#include <stddef.h>
#include <stdint.h>

enum db_dialect {
	DB_SQLITE,
	DB_POSTGRESQL,
};

enum db_tx {
	DB_TX_READ,
	DB_TX_WRITE,
	DB_TX_MIGRATE,
};

/* How a connection is opened. */
enum db_mode {
	DB_READ_ONLY,
	DB_READ_WRITE, /* SQLite: creates the file */
};

struct db;
struct db_stmt;

/* The driver's functions; see the db_*() wrappers below. */
struct db_ops {
	void (*close)(struct db *db);
	int (*prepare)(struct db_stmt **out, struct db *db, const char *sql);
	void (*finalize)(struct db_stmt *s);
	void (*bind_int)(struct db_stmt *s, int i, int64_t v);
	void (*bind_int_null)(struct db_stmt *s, int i);
	void (*bind_text)(struct db_stmt *s, int i, const char *p, size_t len);
	void (*bind_blob)(struct db_stmt *s, int i, const void *p, size_t len);
	int (*step)(struct db_stmt *s);
	int (*column_null)(struct db_stmt *s, int i);
	int64_t (*column_int)(struct db_stmt *s, int i);
	const char *(*column_bytes)(struct db_stmt *s, int i, size_t *len);
	int64_t (*changes)(struct db_stmt *s);
	void (*reset)(struct db_stmt *s);
	int (*exec)(struct db *db, const char *script);
	int (*begin)(struct db *db, enum db_tx kind);
	int (*commit)(struct db *db);
	int (*rollback)(struct db *db);
	int (*savepoint)(struct db *db);
	int (*release)(struct db *db, int ok);
	int (*in_tx)(struct db *db);
	int (*retryable)(struct db *db);
};

/* Every driver's connection starts with this. */
struct db {
	const struct db_ops *ops;
	enum db_dialect dialect;
};

/*
 * Open.  SQLite: target is the file; busy_ms how long a statement waits
 * for another connection's lock.  PostgreSQL: target is a libpq
 * connection string (a secret: never logged); busy_ms becomes the
 * lock_timeout, and a READ_ONLY connection defaults its transactions to
 * read only; reply_ms > 0 bounds every wait for the server, connecting
 * included (a call out of time fails with PB_ETEMP and the connection
 * is given up), 0 leaves libpq's blocking waits.  *name gets a printable
 * name for messages that carries no secret (the path, or
 * "postgresql://HOST:PORT/DB"); free it.
 */
int db_sqlite_open(struct db **out, char **name, const char *path,
		   enum db_mode mode, int busy_ms);
int db_pg_open(struct db **out, char **name, const char *conninfo,
	       enum db_mode mode, int busy_ms, int reply_ms);

static inline void db_close(struct db *db)
{
	if (db)
		db->ops->close(db);
}

/* Prepare sql (kept by the caller until db_finalize()). */
static inline int db_prepare(struct db_stmt **out, struct db *db,
			     const char *sql)
{
	return db->ops->prepare(out, db, sql);
}

static inline void db_finalize(struct db *db, struct db_stmt *s)
{
	if (s)
		db->ops->finalize(s);
}

/*
 * Bind parameter i (from 1).  Failures (none but out of memory, which
 * exits) are reported by the next db_step().  A NULL text or blob binds
 * SQL NULL.
 */
static inline void db_bind_int(struct db *db, struct db_stmt *s, int i,
			       int64_t v)
{
	db->ops->bind_int(s, i, v);
}

static inline void db_bind_int_null(struct db *db, struct db_stmt *s, int i)
{
	db->ops->bind_int_null(s, i);
}

static inline void db_bind_text(struct db *db, struct db_stmt *s, int i,
				const char *p, size_t len)
{
	db->ops->bind_text(s, i, p, len);
}

static inline void db_bind_blob(struct db *db, struct db_stmt *s, int i,
				const void *p, size_t len)
{
	db->ops->bind_blob(s, i, p, len);
}

/* 1: a row is there; 0: done; or a negative code. */
static inline int db_step(struct db *db, struct db_stmt *s)
{
	return db->ops->step(s);
}

/* Columns of the current row, from 0.  An SQL NULL reads as 0 / NULL. */
static inline int db_column_null(struct db *db, struct db_stmt *s, int i)
{
	return db->ops->column_null(s, i);
}

static inline int64_t db_column_int(struct db *db, struct db_stmt *s, int i)
{
	return db->ops->column_int(s, i);
}

/* The bytes of a text or blob column (not NUL-terminated); NULL for SQL
 * NULL, with *len 0. */
static inline const char *db_column_bytes(struct db *db, struct db_stmt *s,
					  int i, size_t *len)
{
	return db->ops->column_bytes(s, i, len);
}

/* Rows the statement inserted, updated or deleted, once it is done. */
static inline int64_t db_changes(struct db *db, struct db_stmt *s)
{
	return db->ops->changes(s);
}

/* Ready the statement for its next run; bindings are cleared. */
static inline void db_reset(struct db *db, struct db_stmt *s)
{
	db->ops->reset(s);
}

/* Run a script of statements without parameters (schema steps). */
static inline int db_exec(struct db *db, const char *script)
{
	return db->ops->exec(db, script);
}

static inline int db_begin(struct db *db, enum db_tx kind)
{
	return db->ops->begin(db, kind);
}

/* On failure the transaction is rolled back. */
static inline int db_commit(struct db *db)
{
	return db->ops->commit(db);
}

static inline int db_rollback(struct db *db)
{
	return db->ops->rollback(db);
}

/* A savepoint inside the open transaction; release(ok) keeps (ok) or
 * undoes what was done since. */
static inline int db_savepoint(struct db *db)
{
	return db->ops->savepoint(db);
}

static inline int db_release(struct db *db, int ok)
{
	return db->ops->release(db, ok);
}

/* A transaction is open (it may have failed: then only a rollback or a
 * commit, which rolls back, is of use). */
static inline int db_in_tx(struct db *db)
{
	return db->ops->in_tx(db);
}

/* The last failure was a serialization failure or a deadlock: running
 * the whole transaction again may succeed. */
static inline int db_retryable(struct db *db)
{
	return db->ops->retryable(db);
}

#endif
