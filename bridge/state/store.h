/*
 * store - the state database: everything the daemon needs to resume.
 *
 * The one module that knows the storage engine: SQLite (WAL), the
 * embedded default for one host, or PostgreSQL, which several hosts
 * share ([state] backend).  No engine type or SQL text leaves bridge/
 * state (store.c holds the statements, db.h the engine interface,
 * db_sqlite.c and db_pg.c the drivers), and every function below means
 * the same on both: the same schema versions, migrations and tests.
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

#include "core/threadmap.h"
#include "util/buf.h"
#include "util/limits.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

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

/*
 * Thread map: every mail the bridge sent, keyed by Message-ID (without
 * the angle brackets).
 */
enum store_mail_kind {
	STORE_MAIL_COVER, /* [PATCH vN 0/M] */
	STORE_MAIL_PATCH, /* [PATCH vN k/M] */
	STORE_MAIL_FORGE_COMMENT, /* a forge note mirrored to the list */
	STORE_MAIL_RECEIPT, /* the bridge's reply about an inbound mail */
};

enum store_mail_state {
	STORE_MAIL_PENDING, /* recorded, not yet accepted by the MTA */
	STORE_MAIL_SENT,
};

/*
 * How the host that recorded a mail sent knew that its MTA had taken it
 * (schema 8; rows from before read as STORE_SENT_MTA).
 */
enum store_sent_how {
	STORE_SENT_MTA, /* the MTA's answer, recorded at once */
	STORE_SENT_ARCHIVE, /* handed, outcome unknown; found in the list
			     * archive, so not sent again */
	STORE_SENT_LATE, /* the MTA's answer, recorded once the database
			  * was back (kept in memory meanwhile) */
};
const char *store_sent_how_name(enum store_sent_how how);

struct store_mail {
	const char *message_id;
	const char *project; /* "group/project" */
	int64_t iid; /* MR iid, > 0 */
	/* Revision as mailed (1 = v1), or 0 for none; a non-zero revision
	 * must have been started with store_revision_start(). */
	int revision;
	int patch; /* k: 0 = cover letter */
	int total; /* M */
	enum store_mail_kind kind;
	const char *commit_sha; /* the patch's commit; NULL for others */
	/* The GitLab diff version the mail belongs to; NULL/0 if unknown. */
	const char *base_sha;
	const char *start_sha;
	const char *head_sha;
	int64_t version_id;
	/* The diff as mailed (for inline-comment resolution); may be NULL. */
	const char *diff;
	size_t diff_len;
	/* For forge-comment mails: the note and discussion mirrored. */
	const char *discussion_id;
	int64_t note_id; /* 0 = none */
	enum store_mail_state state;
	int64_t created;
	int64_t sent; /* 0 while pending */
	/* The host that recorded it sent (read only; NULL before). */
	const char *sent_by;
	/* How that host knew the MTA had it (read only; STORE_SENT_MTA
	 * before). */
	enum store_sent_how sent_how;
	struct strlist owned; /* strings the store filled in (see above) */
};

#define STORE_MAIL_INIT \
	{               \
		0       \
	}

void store_mail_init(struct store_mail *m);
void store_mail_release(struct store_mail *m);
const char *store_mail_kind_name(enum store_mail_kind kind);

struct store_mail_list {
	struct store_mail *items;
	size_t nr;
	size_t alloc;
};

void store_mail_list_release(struct store_mail_list *list);

/*
 * Copy the thread map (its mails and the revisions they belong to) from
 * src into dst, a store opened STORE_RW: every mail created at or after
 * *since (0: all), in pages of STORE_MIRROR_PAGE, each page one
 * transaction of dst; rows dst has are brought up to date (state, sent,
 * sent by).  Then *since is the newest creation time copied; *copied
 * (may be NULL) how many rows were.  For a host's local copy of a shared
 * thread map, which the milter reads when the database does not answer
 * in time: call it again with *since moved back by how long a writer's
 * transaction may stay open (the lease), so rows committed late are
 * copied too.  A failure leaves the pages already copied.
 */
#define STORE_MIRROR_PAGE 500
int store_threadmap_mirror(struct store *dst, struct store *src, int64_t *since,
			   size_t *copied);

/*
 * Record a mail (insert or ignore): PB_EEXISTS, leaving the stored row
 * unchanged, when the Message-ID is already there; so re-running a series
 * never duplicates.  m->created is ignored (now is used); m->sent is used
 * only for state SENT (0 = now).
 */
int store_mail_put(struct store *st, const struct store_mail *m);
/* pending -> sent, at now, by this host.  PB_ENOTFOUND for an unknown
 * Message-ID. */
int store_mail_mark_sent(struct store *st, const char *message_id);
/* When the MTA last accepted a mail of the bridge's (Unix time; 0: none
 * yet): what tells whether the milter sees the list's mail (health.h). */
int store_mail_last_sent(int64_t *out, struct store *st);
int store_mail_get(struct store_mail *out, struct store *st,
		   const char *message_id);
/* The cover letter (patch 0) or patch k of a mailed revision. */
int store_mail_find(struct store_mail *out, struct store *st,
		    const char *project, int64_t iid, int revision, int patch);
/* Every mail of a revision (appended to out): cover, patches 1..M, then
 * other mails threaded under them, each group in sending order. */
int store_mail_list_revision(struct store_mail_list *out, struct store *st,
			     const char *project, int64_t iid, int revision);
/* The newest mail mirroring a forge discussion / the mail of a note. */
int store_mail_by_discussion(struct store_mail *out, struct store *st,
			     const char *project, const char *discussion_id);
int store_mail_by_note(struct store_mail *out, struct store *st,
		       const char *project, int64_t note_id);

/*
 * Mailed revisions: one row per MR version the bridge mailed.
 */
enum store_revision_state {
	STORE_REVISION_SENDING, /* started; some mails may be pending */
	STORE_REVISION_SENT,
};

struct store_revision {
	const char *project;
	int64_t iid;
	int revision; /* 1 = v1 */
	const char *head_sha;
	const char *base_sha;
	const char *start_sha;
	int64_t version_id; /* GitLab diff version id; 0 = unknown */
	const char *patch_id; /* identifies the patches' content (rebases) */
	int patches; /* number of patch mails (M) */
	const char *cover_msgid;
	enum store_revision_state state;
	int64_t created;
	int64_t sent; /* 0 while sending */
	struct strlist owned; /* strings the store filled in (see above) */
};

void store_revision_init(struct store_revision *rev);
void store_revision_release(struct store_revision *rev);

/*
 * Start mailing a revision: allocate the MR's next revision number
 * atomically and record rev (its ->revision, ->state and times are
 * ignored) as SENDING.  *revision gets the number.  A head SHA on a base
 * is mailed once per MR: when rev->head_sha on rev->base_sha was already
 * started, nothing changes, *revision gets the existing number and the
 * result is PB_EEXISTS.  The same head on a new base (a retarget) is a
 * new revision.
 */
int store_revision_start(int *revision, struct store *st,
			 const struct store_revision *rev);
int store_revision_mark_sent(struct store *st, const char *project, int64_t iid,
			     int revision);
int store_revision_get(struct store_revision *out, struct store *st,
		       const char *project, int64_t iid, int revision);
/* The highest-numbered revision of an MR; PB_ENOTFOUND for none. */
int store_revision_latest(struct store_revision *out, struct store *st,
			  const char *project, int64_t iid);
/* The newest revision mailed with this head (on any base). */
int store_revision_by_head(struct store_revision *out, struct store *st,
			   const char *project, int64_t iid,
			   const char *head_sha);
/* The newest revision of this head on this base (NULL: none known). */
int store_revision_by_base(struct store_revision *out, struct store *st,
			   const char *project, int64_t iid,
			   const char *head_sha, const char *base_sha);

/*
 * Inbound journal: one row per mail the milter spooled, keyed by its
 * Message-ID, so a copy delivered twice - to one host or to two - is
 * recorded and applied once.
 *
 *   received --claim--> applying --finish--> applied | ignored | dead
 *                          |   ^
 *                    retry |   | claim, once next_attempt is due
 *                          v   |
 *                         failed
 */
enum store_inbound_state {
	STORE_INBOUND_RECEIVED,
	STORE_INBOUND_APPLYING,
	STORE_INBOUND_APPLIED,
	STORE_INBOUND_IGNORED,
	STORE_INBOUND_FAILED, /* will be retried at next_attempt */
	STORE_INBOUND_DEAD, /* given up; needs an operator */
};

struct store_inbound {
	const char *message_id;
	const char *spool_name; /* the spool record's file name */
	/* The MR the mail is about; project NULL when none. */
	const char *project;
	int64_t iid;
	int revision; /* 0 = unknown */
	int patch; /* 0 = the cover letter */
	const char *classification; /* a token: "reply", "cover" ... */
	enum store_inbound_state state;
	int attempts; /* times claimed */
	int64_t next_attempt; /* due time; 0 on record means now */
	const char *last_error; /* why it failed, was ignored or died */
	int64_t created;
	int64_t updated;
	/* Hosts (read only): which journaled it (its milter spooled it),
	 * which claimed it last (and, finished, applied it). */
	const char *spooled_by;
	const char *claimed_by;
	int64_t lease_until; /* the claim's expiry while applying; else 0 */
	/* The spool record as the milter wrote it, kept while the mail is
	 * open so that any host can apply it (store_inbound_record() only;
	 * NULL: not kept). */
	const void *spool_record;
	size_t spool_record_len;
	struct strlist owned; /* strings the store filled in (see above) */
};

void store_inbound_init(struct store_inbound *in);
void store_inbound_release(struct store_inbound *in);
const char *store_inbound_state_name(enum store_inbound_state state);
/* "failed" -> STORE_INBOUND_FAILED (for the CLI); PB_EINVAL if unknown. */
int store_inbound_state_from_name(enum store_inbound_state *out,
				  const char *name);

struct store_inbound_list {
	struct store_inbound *items;
	size_t nr;
	size_t alloc;
};

void store_inbound_list_release(struct store_inbound_list *list);

/*
 * Record a spooled mail as RECEIVED by this host (in->state, attempts,
 * last_error, hosts and times are ignored), with its spool record when
 * given.  PB_EEXISTS, changing nothing, when the Message-ID is already
 * recorded (by any host).
 */
int store_inbound_record(struct store *st, const struct store_inbound *in);
/*
 * Claim the next due row, oldest due first: RECEIVED or FAILED with
 * next_attempt <= due - this host's own (it journaled them), or another
 * host's once due for a lease (that host's daemon is down or stuck) -
 * or APPLYING under another claim that has expired (its host died or
 * hangs).  Atomically set it APPLYING, claimed by this host until now +
 * the lease, count the attempt and return it.  Two claimers, on one host
 * or on several, never get the same row.  PB_ENOTFOUND when nothing is
 * due.  Times are this host's clock: the hosts' clocks must agree (NTP)
 * to well within a lease.
 */
int store_inbound_claim(struct store_inbound *out, struct store *st,
			int64_t due);
/*
 * Extend this host's claim to now + the lease (store_action_begin() does
 * it before each forge write).  PB_EEXISTS naming the host when another
 * host took the row over; PB_ENOTFOUND when it is not applying.
 */
int store_inbound_renew(struct store *st, const char *message_id);
/* APPLYING -> result (APPLIED, IGNORED or DEAD), with an optional
 * reason; the spool record kept with the row is dropped.  PB_EINVAL if
 * the row is not APPLYING; PB_EEXISTS, naming the host, when another
 * host's claim replaced this host's (it took the mail over: leave it). */
int store_inbound_finish(struct store *st, const char *message_id,
			 enum store_inbound_state result, const char *reason);
/*
 * A claimed (APPLYING) mail is about project!iid revision (0: unknown),
 * patch: where it is applied when that is not where it was journaled.
 */
int store_inbound_place(struct store *st, const char *message_id,
			const char *project, int64_t iid, int revision,
			int patch);
/* APPLYING -> FAILED, to be claimed again at next_attempt; errors as
 * store_inbound_finish(). */
int store_inbound_retry(struct store *st, const char *message_id,
			int64_t next_attempt, const char *error);
/*
 * APPLYING -> FAILED like store_inbound_retry(), but the claim is not
 * counted as an attempt: the mail was not at fault and waits for the
 * operator (the forge refuses the token itself), so no wait however long
 * brings it nearer to [inbound] max_attempts.
 */
int store_inbound_wait(struct store *st, const char *message_id,
		       int64_t next_attempt, const char *why);
/*
 * After a crash: every APPLYING row this host claimed (or that has no
 * owner, from before schema 6) back to RECEIVED (*count of them).  For
 * the daemon's start, before its claimer runs (one applier per host:
 * the spool's lock); other hosts' claims are taken over when they
 * expire (store_inbound_claim()).  The forge action journal makes
 * re-applying safe.
 */
int store_inbound_recover(int *count, struct store *st);
/* The spool record kept with a journal row (a copy, NUL-terminated, in
 * *out; free it).  PB_ENOTFOUND when none is kept: no such row, a row
 * from before schema 6, or a finished mail. */
int store_inbound_spool_record(char **out, size_t *len, struct store *st,
			       const char *message_id);
/* Rows in a state, oldest first, at most limit (0: STORE_LIST_MAX). */
int store_inbound_list(struct store_inbound_list *out, struct store *st,
		       enum store_inbound_state state, size_t limit);
int store_inbound_get(struct store_inbound *out, struct store *st,
		      const char *message_id);

/*
 * How many journal rows each (project, state) pair has, counted by the
 * database (exact however large the journal is): one item per pair that
 * has rows, ordered by project (NULL first), appended to out.  The pairs
 * are few (at most six per project the bridge ever served); more than
 * STORE_LIST_MAX of them is PB_ELIMIT rather than a short answer.
 */
struct store_inbound_count {
	const char *project; /* NULL: the mail is placed on no MR */
	enum store_inbound_state state;
	int64_t count; /* > 0 */
	struct strlist owned; /* strings the store filled in (see above) */
};

struct store_inbound_count_list {
	struct store_inbound_count *items;
	size_t nr;
	size_t alloc;
};

void store_inbound_count_list_release(struct store_inbound_count_list *list);
int store_inbound_count(struct store_inbound_count_list *out, struct store *st);

/*
 * Every host's part in the state, as the rows record it ([state] host;
 * one host on SQLite): the mails it journaled (spooled there), applied
 * (its claim finished them) and is applying now, the mails it holds a
 * claim on to hand to its MTA and those it handed over, its claims' last
 * expiry, and the last time it did any of this.  By host name, appended
 * to out; more than STORE_LIST_MAX hosts is PB_ELIMIT.
 */
struct store_host {
	const char *host;
	int64_t journaled, applied, applying;
	int64_t sending, sent;
	int64_t lease_until; /* the latest claim's expiry; 0: none held */
	int64_t last_active;
	struct strlist owned;
};

struct store_host_list {
	struct store_host *items;
	size_t nr;
	size_t alloc;
};

void store_host_list_release(struct store_host_list *list);
int store_hosts(struct store_host_list *out, struct store *st);

/*
 * Forge action journal: exactly-once forge writes.  Each action of an
 * inbound mail (source Message-ID, action index) is journaled as INTENT
 * before its HTTP request and DONE, with the forge's ids, after it.
 */
enum store_action_state {
	STORE_ACTION_INTENT, /* the request may or may not have landed */
	STORE_ACTION_DONE,
	STORE_ACTION_FAILED, /* the forge refused; may be begun again */
};

struct store_action {
	const char *message_id;
	int index; /* action index within the mail, from 0 */
	const char *kind; /* a token: "comment", "diff-note", "approve" ... */
	const char *marker; /* the hidden marker the note carries */
	enum store_action_state state;
	int64_t note_id; /* 0 = none */
	const char *discussion_id;
	int attempts; /* times begun */
	const char *last_error;
	int64_t created;
	int64_t updated;
	const char *host; /* the host that began it last */
	struct strlist owned; /* strings the store filled in (see above) */
};

void store_action_init(struct store_action *act);
void store_action_release(struct store_action *act);

struct store_action_list {
	struct store_action *items;
	size_t nr;
	size_t alloc;
};

void store_action_list_release(struct store_action_list *list);

/*
 * Journal the intent to perform an action, before the request.  A new
 * action is recorded INTENT and 0 returned: perform it.  An action seen
 * before returns PB_EEXISTS with the stored row (kind and marker as first
 * recorded) in out:
 *   DONE     - it is on the forge already; out has its ids.  Skip it.
 *   INTENT   - an earlier attempt (INTENT or FAILED) may have landed; the
 *              row is INTENT again with the attempt counted.  Look for the
 *              marker on the forge first, then complete or perform it.
 * When the mail's journal row is APPLYING, this host's claim on it is
 * renewed in the same transaction; PB_ETEMP, journaling nothing, when
 * another host has taken the mail over: stop applying it.
 */
int store_action_begin(struct store_action *out, struct store *st,
		       const char *message_id, int index, const char *kind,
		       const char *marker);
/* -> DONE with the forge's ids (note_id 0 / discussion_id NULL: none). */
int store_action_complete(struct store *st, const char *message_id, int index,
			  int64_t note_id, const char *discussion_id);
/* INTENT -> FAILED.  PB_EEXISTS if the action is DONE already. */
int store_action_fail(struct store *st, const char *message_id, int index,
		      const char *error);
/* The actions of one mail, by index (appended to out). */
int store_action_list(struct store_action_list *out, struct store *st,
		      const char *message_id);

/*
 * What became of each trailer of an inbound mail, as the apply step
 * decided it (inbound/plan.h, plan's verdicts): one text per trailer in
 * the mail's order ("an approval as alice", "not an approval", or the
 * reason it was not honoured), for `patchbridge why`.  Set replaces the
 * mail's earlier verdicts (a retry decides again), at most
 * STORE_VERDICTS_MAX, each cut to STORE_ERROR_MAX; an empty text is
 * stored as "-".  Get appends them to out, nothing for a mail applied
 * before they were kept (schema 5).
 */
int store_verdicts_set(struct store *st, const char *message_id,
		       const struct strlist *verdicts);
int store_verdicts_get(struct strlist *out, struct store *st,
		       const char *message_id);

/*
 * Cursors: named watermarks, e.g. "poll:group/project" -> an ISO 8601
 * time, "notes:group/project!12" -> the last note id.  get replaces the
 * contents of out (PB_ELIMIT past out->max).
 */
int store_cursor_get(struct buf *out, struct store *st, const char *name);
int store_cursor_set(struct store *st, const char *name, const char *value);

/*
 * The cursor naming an approval the bridge makes on the forge for a list
 * trailer (project, iid, forge username): set by the inbound side before
 * it approves, read by the forge-to-list side, which must not mail that
 * approval back to the list that already holds the trailer.
 */
#define STORE_CURSOR_LIST_APPROVAL "list-approval:%s!%lld:%s"

/*
 * A problem with the forge only an operator can fix (the token cannot act
 * as the reviewers, ...): "EPOCH-SECONDS TEXT", set by the inbound side
 * when it meets one, emptied when an approval as a reviewer goes through
 * again; `patchbridge status` shows it.
 */
#define STORE_CURSOR_FORGE_PROBLEM "forge:operator-problem"
/*
 * The forge refuses the token itself: "EPOCH TEXT", TEXT what the
 * operator must do; set by the daemon while it lasts, emptied when the
 * token works again; `patchbridge status` shows it.
 */
#define STORE_CURSOR_FORGE_TOKEN "forge:token-problem"

/*
 * Prefix of a project's cursor saying approvals by mail cannot work there
 * (the project requires re-authentication to approve): the text for
 * `patchbridge status`, set by the inbound side when an approval meets
 * the setting, emptied when one goes through in the project.
 */
#define STORE_CURSOR_APPROVAL_REAUTH_PREFIX "approvals:reauth:"

/*
 * Move everything kept under project name from to name to, in one
 * transaction: the revisions, the thread map, the inbound journal, the
 * archive and every cursor whose name holds the path (a trailer's
 * verdict, a forge action and a queued mail are kept by Message-ID and
 * follow their mail).  PB_EEXISTS, changing nothing, when to has state
 * of its own (a row, or its cursor id_prefix + to): two histories are
 * not merged.
 */
int store_project_rename(struct store *st, const char *from, const char *to,
			 const char *id_prefix);
/* The names of the cursors that begin with prefix and hold value,
 * appended to out. */
int store_cursor_names(struct strlist *out, struct store *st,
		       const char *prefix, const char *value);

/*
 * Revisions of a project (all of them when project is NULL), by project,
 * MR and revision, at most limit (0: STORE_LIST_MAX); appended to out.
 */
struct store_revision_list {
	struct store_revision *items;
	size_t nr;
	size_t alloc;
};

void store_revision_list_release(struct store_revision_list *list);
int store_revision_list(struct store_revision_list *out, struct store *st,
			const char *project, size_t limit);

/*
 * The thread map as classification reads it (core/threadmap.h), over this
 * store: *out is filled with functions that call store_mail_get(),
 * store_mail_find(), store_revision_latest() and store_revision_list()
 * and copy the rows.  st is borrowed and must outlive *out.
 */
void store_threadmap(struct threadmap *out, struct store *st);

/*
 * Outbound mail queue (schema 3): the exact bytes of a series mail and
 * its envelope, kept from before the first delivery attempt until the MTA
 * accepts it (the Postfix queue-file discipline).  A mail is put here in
 * the same transaction as its thread-map row (store_mail_put(), state
 * pending), so after a crash the daemon resends the stored bytes and
 * never has to render a mail again: a resumed mail is byte-identical.
 *
 *   queued --temporary failure--> deferred --due again--> (attempt)
 *      |                              |
 *      +--------rejected--------------+--> failed (needs an operator)
 *      +--accepted: row deleted, thread map sent, revision sent when it
 *                   was the revision's last queued mail
 *
 * Handed, outcome unknown (schema 7): right before a host gives a mail
 * to its MTA it records the time (store_outmail_hand(), under its
 * claim), and an answer from the MTA that says the mail was not taken
 * (defer, fail) clears it again; accepted, the row goes.  A row still
 * handed therefore is a mail the MTA may have taken: its host died or
 * lost the database before it recorded the 250, or the connection was
 * lost after the end of data.  Whoever sends it next asks the list
 * archive first (outbound/outbound.h); store_outmail_wait() holds it
 * meanwhile, keeping it handed.
 */
enum store_outmail_state {
	STORE_OUTMAIL_QUEUED, /* not tried yet */
	STORE_OUTMAIL_DEFERRED, /* failed temporarily; due at next_attempt */
	STORE_OUTMAIL_FAILED, /* refused for good; kept for status */
};

struct store_outmail {
	const char *message_id; /* the thread-map row it belongs to */
	/* From the thread map (filled by get/list, ignored by put). */
	const char *project;
	int64_t iid;
	int revision;
	int patch;
	const char *envelope_from;
	const char *recipients; /* envelope recipients, one per line */
	/* The message; get fills it, list leaves it NULL. */
	const char *message;
	size_t message_len;
	enum store_outmail_state state;
	int attempts; /* delivery attempts that failed */
	int64_t next_attempt; /* due time (deferred); 0 = now */
	const char *last_error; /* why the last attempt failed */
	int64_t created;
	int64_t updated;
	/* The host that claimed it last, and until when (0: released). */
	const char *claimed_by;
	int64_t lease_until;
	/* When it was last handed to the MTA with the outcome not known
	 * yet (store_outmail_hand()); 0: not handed, or the MTA's answer
	 * said it was not taken. */
	int64_t handed;
	struct strlist owned; /* strings the store filled in (see above) */
};

void store_outmail_init(struct store_outmail *m);
void store_outmail_release(struct store_outmail *m);
const char *store_outmail_state_name(enum store_outmail_state state);

struct store_outmail_list {
	struct store_outmail *items;
	size_t nr;
	size_t alloc;
};

void store_outmail_list_release(struct store_outmail_list *list);

/*
 * Queue a mail (m->state, attempts, times and the thread-map fields are
 * ignored): the thread map must hold m->message_id already, PB_ENOTFOUND
 * otherwise.  PB_EEXISTS, changing nothing, when it is queued already.
 */
int store_outmail_put(struct store *st, const struct store_outmail *m);
/* One queued mail, with its message. */
int store_outmail_get(struct store_outmail *out, struct store *st,
		      const char *message_id);
/*
 * Queued mails without their messages, by project, MR, revision and
 * patch: of one MR (iid > 0), of a project (iid 0), or all (project
 * NULL); at most limit (0: STORE_LIST_MAX).  Appended to out.
 */
int store_outmail_list(struct store_outmail_list *out, struct store *st,
		       const char *project, int64_t iid, size_t limit);
/*
 * Claim a queued mail before handing it to the MTA, until now + the
 * lease: 0 when it was free (never claimed, released, or the claim
 * expired) or this host's already; PB_EEXISTS, naming the host, when
 * another host holds it; PB_ENOTFOUND when it is not queued (sent
 * meanwhile).  Sent, defer and fail release the claim.  Of two hosts
 * that would hand the same mail to their MTAs, one does.
 */
int store_outmail_claim(struct store *st, const char *message_id);
/*
 * About to hand the mail to the MTA (before the end of DATA): record the
 * time in handed, durably.  Only under this host's claim: PB_EEXISTS when
 * another host holds it or this host does not (released meanwhile),
 * PB_ENOTFOUND when it is not queued.
 */
int store_outmail_hand(struct store *st, const char *message_id);
/*
 * A handed mail whose outcome is still unknown waits (for the list
 * archive, or after a connection lost at the end of data): due at
 * next_attempt, the error kept, an attempt counted when counted, the
 * claim released, handed KEPT.  PB_EINVAL when the mail is not handed;
 * other errors as store_outmail_defer().
 */
int store_outmail_wait(struct store *st, const char *message_id,
		       int64_t next_attempt, const char *error, int counted);
/* A temporary failure (the MTA did not take the mail): count it, keep
 * the error, due at next_attempt, no longer handed; the claim is
 * released.  PB_EEXISTS when another host holds a claim
 * that has not expired (it took the mail over: leave it). */
int store_outmail_defer(struct store *st, const char *message_id,
			int64_t next_attempt, const char *error);
/* A permanent failure: count it, keep the error, never retried alone,
 * no longer handed; errors as store_outmail_defer(). */
int store_outmail_fail(struct store *st, const char *message_id,
		       const char *error);
/* Every failed mail of an MR back to queued (an operator's retry);
 * *count gets how many. */
int store_outmail_requeue(int *count, struct store *st, const char *project,
			  int64_t iid);
/*
 * The MTA accepted the mail (or a handed mail was found in the list
 * archive: how says which): in one transaction, mark its thread-map row
 * sent (by this host, and how), drop it from the queue and, when no mail
 * of its revision is left in the queue, mark the revision sent
 * (*revision_done = 1, else 0).
 * PB_ENOTFOUND when it is not queued.
 */
int store_outmail_sent(int *revision_done, struct store *st,
		       const char *message_id, enum store_sent_how how);

/*
 * Mail archive (schema 4): the exact bytes of every mail of an MR's
 * conversation, for `patchbridge export`.  Each mail the bridge sends is
 * copied here by store_outmail_sent(), in the transaction that records it
 * sent (origin BRIDGE: series, forge comments, receipts); each list mail
 * the milter spooled about an MR is put here by the daemon when it
 * journals the mail (origin LIST), as it was received.  Keyed by
 * Message-ID: the first copy stays.  Mails sent before schema 4 are not
 * archived; the daemon archives the list mails of that time from the
 * spool once; store_archive_missing() counts what is still missing.
 */
enum store_archive_origin {
	STORE_ARCHIVE_BRIDGE, /* sent by the bridge */
	STORE_ARCHIVE_LIST, /* received from the list */
};

struct store_archived {
	const char *message_id;
	const char *project;
	int64_t iid;
	enum store_archive_origin origin;
	/* The message; get fills it, list leaves it NULL. */
	const char *message;
	size_t message_len;
	int64_t created; /* when archived; put: 0 = now */
	struct strlist owned; /* strings the store filled in (see above) */
};

void store_archived_init(struct store_archived *a);
void store_archived_release(struct store_archived *a);
const char *store_archive_origin_name(enum store_archive_origin origin);

struct store_archived_list {
	struct store_archived *items;
	size_t nr;
	size_t alloc;
};

void store_archived_list_release(struct store_archived_list *list);

/* Archive a mail; PB_EEXISTS, changing nothing, when it is there. */
int store_archive_put(struct store *st, const struct store_archived *a);
int store_archive_get(struct store_archived *out, struct store *st,
		      const char *message_id);
/* The archived mails of an MR without their messages, in archiving
 * order, at most limit (0: all of them - an export must not cut the
 * conversation); appended to out. */
int store_archive_list(struct store_archived_list *out, struct store *st,
		       const char *project, int64_t iid, size_t limit);
/* Remove the mails archived before the time before ([state]
 * archive_keep); *removed gets how many. */
int store_archive_prune(int64_t *removed, struct store *st, int64_t before);
/* How many mails of the MR the bridge sent or journaled from the list
 * that are not archived (from before schema 4). */
int store_archive_missing(int64_t *count, struct store *st, const char *project,
			  int64_t iid);

#endif
