/*
 * store - the state database: everything the daemon needs to resume.
 *
 * The one module that knows the storage engine: SQLite (WAL), the
 * embedded default for one host, or PostgreSQL, which several hosts
 * share ([state] backend).  No engine type or SQL text leaves bridge/
 * state (store.c and its table files store_*.c hold the statements,
 * db.h the engine interface, db_sqlite.c and db_pg.c the drivers), and
 * every function means the same on both: the same schema versions,
 * migrations and tests.
 *
 * This header is the connection: opening, the schema, transactions.
 * Each table's rows and functions are in a header of its own
 * (store_mail.h, store_revision.h, store_inbound.h, store_host.h,
 * store_action.h, store_cursor.h, store_outmail.h, store_archive.h,
 * store_submission.h),
 * all included here, so a caller includes this one; what follows holds
 * for all of them.
 *
 * Writers and readers: `patchbridge` opens the database STORE_RW; that
 * runs the schema migrations inside one transaction (on PostgreSQL under
 * an advisory lock, so two hosts starting together migrate once), and
 * refuses a database whose schema is newer than this code knows.  On
 * SQLite `patchbridge` is the single writer and `patchbridge-milter`
 * opens it STORE_RO while the daemon writes: WAL gives any number of
 * concurrent readers plus one writer, and a reader sees only committed
 * transactions.  On PostgreSQL any number of daemons, on any hosts,
 * write at once; a STORE_RO connection's transactions are read only.
 *
 * Several hosts (PostgreSQL): each store has a host name (struct
 * store_opts; the host name by default), recorded with what it journals
 * (store_inbound.spooled_by), claims (claimed_by) and sends
 * (store_mail.sent_by).  Exactly once across hosts rests on the
 * database alone: unique keys (an inbound mail's and a forge action's
 * are their Message-ID, a revision's its head, a mail's its Message-ID)
 * and claims that expire - an inbound mail while it is applied
 * (store_inbound_claim, renewed at each forge write), an outbound mail
 * while it is handed to the MTA (store_outmail_claim).  A claim outlives
 * its host by at most the lease (store_opts.lease); then any other host
 * takes the work over, and the forge action journal with its markers
 * makes re-applying safe.  One SQLite file gives the same on one host.
 *
 * Permissions for a SQLite read-only reader (the milter's user): read
 * access to the database file and to its "-wal" and "-shm" files, and
 * search (x) on the directory.  Write access to the directory is not
 * needed because a STORE_RW connection keeps the -wal and -shm files in
 * place when it closes (SQLite's persistent-WAL mode).  The files get
 * the database file's mode, so the usual setup is: a state directory
 * owned by the daemon's user, group = the milter's group, mode 2750
 * (setgid, so new files take that group), and the daemon running with
 * umask 027 (files 0640).  Read-only -shm access works (SQLite then
 * rebuilds its WAL index privately for each read), it just costs a
 * little more per transaction.  Until the daemon has created and
 * migrated the database, STORE_RO opens fail with PB_ENOTFOUND.
 *
 * Durability: SQLite synchronous=FULL, PostgreSQL's synchronous_commit
 * as the server sets it (on by default), so after store_commit() (or any
 * write function outside a transaction) returns 0 the change survives a
 * crash or power loss.  A crash before that leaves no trace of the
 * transaction.
 *
 * Thread safety: a struct store is one connection, opened with
 * SQLITE_OPEN_NOMUTEX (SQLite's multi-thread mode) or one libpq
 * connection: use it from one thread at a time, i.e. open one struct
 * store per thread.  Separate stores in any threads or processes may
 * share a database.
 *
 * Ownership, one rule for every record: its string fields are borrowed
 * (const) and never freed through the field.  A record passed to a
 * put/start function points at the caller's strings; the store copies
 * what it keeps.  A record filled by a get/find/list function points at
 * strings kept in its own `owned` list, which the matching _release
 * function frees (leaving the record re-initialised).  An out record must
 * be initialised; what it held is released before it is filled.  To
 * change a field of a filled record, point it at a string pushed to
 * `owned` (strlist_push()) or at one that outlives the record.
 *
 * Errors: 0 or a negative code from util/err.h, with err_msg() set:
 *   PB_ENOTFOUND  no such row (or no database yet, for STORE_RO)
 *   PB_EEXISTS    the row exists already (insert-or-ignore semantics), or
 *                 another host holds its claim
 *   PB_EINVAL     a field is missing, too long or malformed
 *   PB_ETEMP      the database is busy or locked, a concurrent
 *                 transaction conflicted, the connection was lost, or
 *                 the disk is full: retry later (a failed transaction is
 *                 rolled back whole)
 *   PB_EPERM      write on a read-only store, file permissions, or the
 *                 database refused the login
 *   PB_ERROR      anything else (corruption, schema too new, ...)
 * Timestamps are Unix seconds (int64_t).
 */
#ifndef PB_STATE_STORE_H
#define PB_STATE_STORE_H

#include "util/limits.h"

#include <stddef.h>
#include <stdint.h>

/* The tables (their rows and functions), one header each. */
#include "state/store_action.h"
#include "state/store_archive.h"
#include "state/store_cursor.h"
#include "state/store_host.h"
#include "state/store_inbound.h"
#include "state/store_mail.h"
#include "state/store_notice.h"
#include "state/store_outmail.h"
#include "state/store_revision.h"
#include "state/store_submission.h"

/* Caps on what the store accepts; longer input is PB_EINVAL. */
#define STORE_MSGID_MAX PB_MSGID_MAX
#define STORE_PROJECT_MAX THREADMAP_PROJECT_MAX /* "group/sub/project" */
#define STORE_SHA_MAX 64 /* hex object id: SHA-1 or SHA-256 */
#define STORE_FORGE_ID_MAX 128 /* GitLab discussion ids are 40 hex */
#define STORE_DIFF_MAX PB_MAIL_MAX_MAX /* a diff as mailed */
#define STORE_CURSOR_NAME_MAX 1280 /* "notes:" + project + "!iid" */
#define STORE_CURSOR_VALUE_MAX 1024
#define STORE_SPOOL_NAME_MAX 255 /* a file name in the spool */
#define STORE_TOKEN_MAX 64 /* kinds and classifications */
#define STORE_MARKER_MAX (PB_MSGID_MAX + 128) /* holds a Message-ID */
/* Longer error and reason texts are cut to this, not refused. */
#define STORE_ERROR_MAX PB_ERRMSG_MAX
/* Trailer verdicts kept per mail (trailers past it are not recorded). */
#define STORE_VERDICTS_MAX 500
/* What a list returns at most when the caller passes limit 0. */
#define STORE_LIST_MAX 10000
/* A busy timeout longer than this is PB_EINVAL. */
#define STORE_BUSY_TIMEOUT_MAX (10 * 60 * 1000)
#define STORE_BUSY_TIMEOUT_DEFAULT 5000 /* milliseconds */
/* A host's name in the shared state: 1 to this many printable ASCII
 * characters, no blanks. */
#define STORE_HOST_MAX 255
/* How long a claim lasts unless renewed (seconds). */
#define STORE_LEASE_DEFAULT (10 * 60)
#define STORE_LEASE_MAX (24 * 60 * 60)
/* A spool record kept with its journal row: header and message. */
#define STORE_SPOOL_RECORD_MAX (PB_MAIL_MAX_MAX + 16 * 1024)

struct store;

enum store_flags {
	STORE_RO = 1 << 0, /* read only; the database must exist */
	STORE_RW = 1 << 1, /* read/write; creates and migrates */
};

enum store_backend {
	STORE_BACKEND_SQLITE,
	STORE_BACKEND_POSTGRESQL,
};

struct store_opts {
	enum store_backend backend;
	/* SQLite: the database file.  PostgreSQL: a libpq connection
	 * string (keywords or a URI; a secret: never logged). */
	const char *target;
	unsigned flags; /* exactly one of STORE_RO, STORE_RW */
	/* How long a statement waits for another connection's lock before
	 * failing with PB_ETEMP (PostgreSQL: lock_timeout). */
	int busy_timeout_ms;
	/* PostgreSQL: the longest wait for the server's answer, connecting
	 * and each statement (a store that ran out of it fails every later
	 * call with PB_ETEMP: close it); 0: wait as libpq does.  For
	 * callers that must never wait long (the milter).  SQLite: unused
	 * (busy_timeout_ms bounds its waits). */
	int reply_timeout_ms;
	/* This host's name, recorded with what it journals, claims and
	 * sends; NULL: gethostname(). */
	const char *host;
	/* How long a claim lasts, in seconds; 0: STORE_LEASE_DEFAULT. */
	int64_t lease;
	/* STORE_RW: migrate up to this schema version only; 0: the latest.
	 * For tests and upgrade tools: an older schema is usable only for
	 * reading its version (store_probe()). */
	int schema_version;
};

int store_open_opts(struct store **out, const struct store_opts *opts);
/* SQLite at path, with this host's name and the default lease. */
int store_open(struct store **out, const char *path, unsigned flags,
	       int busy_timeout_ms);
/* Close; rolls back a transaction left open.  NULL is allowed. */
void store_free(struct store *st);

/* For messages: the file, or "postgresql://HOST:PORT/DB" (no secret). */
const char *store_name(const struct store *st);
const char *store_host(const struct store *st);
/* The lease claims are taken for, in seconds. */
int64_t store_lease(const struct store *st);
enum store_backend store_backend(const struct store *st);
/* "sqlite", "postgresql". */
const char *store_backend_name(enum store_backend backend);
/* Units run again after a serialization failure or a deadlock since the
 * store was opened (PostgreSQL; always 0 on SQLite). */
uint64_t store_retries(const struct store *st);

/*
 * Look at a database without using or changing it: connect read-only and
 * read its schema version (0: no schema yet, or for SQLite no file yet),
 * for `patchbridge check-config`; *name as store_name() (free it; NULL
 * when there is no file).  Errors are those of connecting: PB_ETEMP
 * cannot connect, PB_EPERM permissions or authentication, PB_ERROR
 * anything else (no such PostgreSQL database, not a SQLite file).
 */
int store_probe(int *version, char **name, const struct store_opts *opts);

/* The schema version of the open database, and the newest one we know. */
int store_schema_version(int *out, struct store *st);
int store_schema_latest(void);

/* Full consistency check of the file (slow); PB_ERROR when damaged. */
int store_check(struct store *st);

/*
 * Group writes into one transaction.  On a STORE_RW store the
 * transaction is serializable: SQLite's store_begin() takes the write
 * lock at once (so no later statement can fail to upgrade); on
 * PostgreSQL (SERIALIZABLE) any statement or the commit may instead fail
 * with PB_ETEMP when a concurrent transaction conflicts - the
 * transaction is then rolled back whole and the caller tries it again
 * later, as after SQLite's busy timeout.  On STORE_RO it starts a
 * consistent read snapshot.  Transactions do not nest: a second
 * store_begin() is a bug.  When store_commit() fails, the transaction
 * has been rolled back; after a failed statement, store_commit() rolls
 * back and fails (PostgreSQL cannot go on after an error).  The write
 * functions below may be called inside or outside a transaction;
 * outside, each is atomic on its own, and one that runs several
 * statements is run again by the store after a conflict.
 */
int store_begin(struct store *st);
int store_commit(struct store *st);
int store_rollback(struct store *st);
/*
 * fn(st, arg) as one transaction: store_begin(), then store_commit() when
 * fn returns 0, else store_rollback() and fn's error.  When it conflicted
 * with a concurrent transaction (PostgreSQL's serialization failure or
 * deadlock: two hosts writing the same rows, a normal race) it is run
 * again from the start - logged at debug level, counted in
 * store_retries() - a few times at most; then PB_ETEMP as store_commit().
 * fn must set its outputs afresh on each run.  Not inside a transaction.
 */
typedef int (*store_tx_fn)(struct store *st, void *arg);
int store_transaction(struct store *st, store_tx_fn fn, void *arg);

#endif
