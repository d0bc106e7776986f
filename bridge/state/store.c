/*
 * store - the state database: the connection, the schema and its
 * migrations, transactions.  See store.h.
 *
 * The store is this file, store_query.c (every statement and the query
 * layer, storeq.h) and one file per table or concern (store_mail.c,
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
 * (lazily) with bound parameters; nothing formats SQL.  The schema is
 * the ordered list of migrations of each engine: step i takes a database
 * from version i to i + 1 and ends by recording version i + 1 (SQLite's
 * PRAGMA user_version, PostgreSQL's schema_version table), so a step and
 * its version number cannot drift apart, and version N is the same
 * tables on both.  A shipped step is never edited; changes go into a new
 * step, for both engines.
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

static const char *const sqlite_migrations[] = {
	/* 1: the outbound side - mailed revisions, thread map, cursors. */
	"CREATE TABLE revisions ("
	" project TEXT NOT NULL,"
	" iid INTEGER NOT NULL CHECK (iid > 0),"
	" revision INTEGER NOT NULL CHECK (revision > 0),"
	" head_sha TEXT NOT NULL,"
	" base_sha TEXT,"
	" start_sha TEXT,"
	" version_id INTEGER,"
	" patch_id TEXT,"
	" patches INTEGER NOT NULL CHECK (patches >= 0),"
	" cover_msgid TEXT,"
	" state TEXT NOT NULL CHECK (state IN ('sending', 'sent')),"
	" created INTEGER NOT NULL,"
	" sent INTEGER,"
	" PRIMARY KEY (project, iid, revision),"
	" UNIQUE (project, iid, head_sha));"
	"CREATE TABLE thread_map ("
	" message_id TEXT PRIMARY KEY NOT NULL,"
	" project TEXT NOT NULL,"
	" iid INTEGER NOT NULL CHECK (iid > 0),"
	" revision INTEGER CHECK (revision > 0),"
	" patch INTEGER NOT NULL CHECK (patch >= 0),"
	" total INTEGER NOT NULL CHECK (total >= 0),"
	" kind TEXT NOT NULL CHECK (kind IN"
	"  ('cover', 'patch', 'forge-comment', 'receipt')),"
	" commit_sha TEXT,"
	" base_sha TEXT,"
	" start_sha TEXT,"
	" head_sha TEXT,"
	" version_id INTEGER,"
	" diff TEXT,"
	" discussion_id TEXT,"
	" note_id INTEGER,"
	" state TEXT NOT NULL CHECK (state IN ('pending', 'sent')),"
	" created INTEGER NOT NULL,"
	" sent INTEGER,"
	" FOREIGN KEY (project, iid, revision)"
	"  REFERENCES revisions (project, iid, revision));"
	/* One cover letter and one patch k per revision. */
	"CREATE UNIQUE INDEX thread_map_series"
	" ON thread_map (project, iid, revision, patch)"
	" WHERE kind IN ('cover', 'patch');"
	"CREATE INDEX thread_map_revision"
	" ON thread_map (project, iid, revision);"
	"CREATE INDEX thread_map_discussion"
	" ON thread_map (project, discussion_id)"
	" WHERE discussion_id IS NOT NULL;"
	"CREATE INDEX thread_map_note ON thread_map (project, note_id)"
	" WHERE note_id IS NOT NULL;"
	"CREATE TABLE cursors ("
	" name TEXT PRIMARY KEY NOT NULL,"
	" value TEXT NOT NULL,"
	" updated INTEGER NOT NULL);"
	"PRAGMA user_version = 1;",

	/* 2: the inbound side - spooled mails and forge writes. */
	"CREATE TABLE inbound ("
	" message_id TEXT PRIMARY KEY NOT NULL,"
	" spool_name TEXT NOT NULL,"
	" project TEXT,"
	" iid INTEGER CHECK (iid > 0),"
	" revision INTEGER CHECK (revision > 0),"
	" patch INTEGER CHECK (patch >= 0),"
	" classification TEXT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN ('received', 'applying',"
	"  'applied', 'ignored', 'failed', 'dead')),"
	" attempts INTEGER NOT NULL CHECK (attempts >= 0),"
	" next_attempt INTEGER NOT NULL,"
	" last_error TEXT,"
	" created INTEGER NOT NULL,"
	" updated INTEGER NOT NULL);"
	"CREATE INDEX inbound_due ON inbound (next_attempt, created)"
	" WHERE state IN ('received', 'failed');"
	"CREATE INDEX inbound_state ON inbound (state, created);"
	"CREATE TABLE forge_actions ("
	" message_id TEXT NOT NULL,"
	" action_index INTEGER NOT NULL CHECK (action_index >= 0),"
	" kind TEXT NOT NULL,"
	" marker TEXT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN ('intent', 'done', 'failed')),"
	" note_id INTEGER,"
	" discussion_id TEXT,"
	" attempts INTEGER NOT NULL CHECK (attempts >= 0),"
	" last_error TEXT,"
	" created INTEGER NOT NULL,"
	" updated INTEGER NOT NULL,"
	" PRIMARY KEY (message_id, action_index));"
	"PRAGMA user_version = 2;",

	/* 3: the outbound mail queue - bytes and envelope until accepted. */
	"CREATE TABLE outmail ("
	" message_id TEXT PRIMARY KEY NOT NULL"
	"  REFERENCES thread_map (message_id),"
	" envelope_from TEXT NOT NULL,"
	" recipients TEXT NOT NULL,"
	" message BLOB NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN ('queued', 'deferred',"
	"  'failed')),"
	" attempts INTEGER NOT NULL CHECK (attempts >= 0),"
	" next_attempt INTEGER NOT NULL,"
	" last_error TEXT,"
	" created INTEGER NOT NULL,"
	" updated INTEGER NOT NULL);"
	"PRAGMA user_version = 3;",

	/* 4: the mail archive - every mail of an MR's conversation. */
	"CREATE TABLE archive ("
	" message_id TEXT PRIMARY KEY NOT NULL,"
	" project TEXT NOT NULL,"
	" iid INTEGER NOT NULL CHECK (iid > 0),"
	" origin TEXT NOT NULL CHECK (origin IN ('bridge', 'list')),"
	" message BLOB NOT NULL,"
	" created INTEGER NOT NULL);"
	"CREATE INDEX archive_by_mr ON archive (project, iid, created);"
	"PRAGMA user_version = 4;",

	/* 5: what became of each trailer of an applied mail (for why). */
	"CREATE TABLE trailer_verdicts ("
	" message_id TEXT NOT NULL,"
	" trailer_index INTEGER NOT NULL CHECK (trailer_index >= 0),"
	" verdict TEXT NOT NULL,"
	" PRIMARY KEY (message_id, trailer_index));"
	"PRAGMA user_version = 5;",

	/* 6: several hosts - who spooled, claimed and sent what; claims
	 * with an expiry; the spool record, so any host can apply it. */
	"ALTER TABLE inbound ADD COLUMN spooled_by TEXT;"
	"ALTER TABLE inbound ADD COLUMN claimed_by TEXT;"
	"ALTER TABLE inbound ADD COLUMN lease_until INTEGER NOT NULL"
	" DEFAULT 0;"
	"ALTER TABLE inbound ADD COLUMN record BLOB;"
	"CREATE INDEX inbound_lease ON inbound (lease_until)"
	" WHERE state = 'applying';"
	"ALTER TABLE forge_actions ADD COLUMN host TEXT;"
	"ALTER TABLE outmail ADD COLUMN claimed_by TEXT;"
	"ALTER TABLE outmail ADD COLUMN lease_until INTEGER NOT NULL"
	" DEFAULT 0;"
	"ALTER TABLE thread_map ADD COLUMN sent_by TEXT;"
	"PRAGMA user_version = 6;",

	/* 7: a mail handed to the MTA whose outcome is unknown (the host
	 * died, or the database went away, before the MTA's answer was
	 * recorded); the thread map by creation, as its copy reads it. */
	"ALTER TABLE outmail ADD COLUMN handed INTEGER NOT NULL DEFAULT 0;"
	"CREATE INDEX thread_map_created ON thread_map (created, message_id);"
	"PRAGMA user_version = 7;",

	/* 8: how a mail was known to be taken (NULL, from before: the
	 * MTA's answer): see enum store_sent_how. */
	"ALTER TABLE thread_map ADD COLUMN sent_how TEXT;"
	"PRAGMA user_version = 8;",

	/* 9: a revision is a head on a base, so that an MR retargeted with
	 * its head unchanged is a new revision (GitLab makes a new diff
	 * version: app/models/merge_request.rb, after_update
	 * :reload_diff_if_branch_changed).  SQLite cannot drop a UNIQUE
	 * constraint, so the table is made again and its rows copied; the
	 * step runs with foreign keys off (see open_rw()), as SQLite's
	 * lang_altertable.html prescribes, so that the thread map's rows,
	 * which name revisions, are kept as they are. */
	"CREATE TABLE revisions_new ("
	" project TEXT NOT NULL,"
	" iid INTEGER NOT NULL CHECK (iid > 0),"
	" revision INTEGER NOT NULL CHECK (revision > 0),"
	" head_sha TEXT NOT NULL,"
	" base_sha TEXT,"
	" start_sha TEXT,"
	" version_id INTEGER,"
	" patch_id TEXT,"
	" patches INTEGER NOT NULL CHECK (patches >= 0),"
	" cover_msgid TEXT,"
	" state TEXT NOT NULL CHECK (state IN ('sending', 'sent')),"
	" created INTEGER NOT NULL,"
	" sent INTEGER,"
	" PRIMARY KEY (project, iid, revision));"
	"INSERT INTO revisions_new SELECT project, iid, revision, head_sha,"
	" base_sha, start_sha, version_id, patch_id, patches, cover_msgid,"
	" state, created, sent FROM revisions;"
	"DROP TABLE revisions;"
	"ALTER TABLE revisions_new RENAME TO revisions;"
	"CREATE UNIQUE INDEX revisions_head_base ON revisions"
	" (project, iid, head_sha, COALESCE(base_sha, ''));"
	"PRAGMA user_version = 9;",
};

/*
 * The same schema on PostgreSQL.  Integers are BIGINT (SQLite's INTEGER
 * is 64 bits); text is BYTEA, so every byte SQLite keeps is kept (a
 * hostile Message-ID need not be valid UTF-8) and comparisons and
 * ORDER BY are bytewise, as SQLite's BINARY collation; a BLOB is BYTEA.
 * The tables SQLite orders by its implicit rowid get an identity column
 * of that name.
 */
static const char *const pg_migrations[] = {
	/* 1 */
	"CREATE TABLE schema_version (version BIGINT NOT NULL);"
	"INSERT INTO schema_version VALUES (0);"
	"CREATE TABLE revisions ("
	" project BYTEA NOT NULL,"
	" iid BIGINT NOT NULL CHECK (iid > 0),"
	" revision BIGINT NOT NULL CHECK (revision > 0),"
	" head_sha BYTEA NOT NULL,"
	" base_sha BYTEA,"
	" start_sha BYTEA,"
	" version_id BIGINT,"
	" patch_id BYTEA,"
	" patches BIGINT NOT NULL CHECK (patches >= 0),"
	" cover_msgid BYTEA,"
	" state BYTEA NOT NULL CHECK (state IN ('sending', 'sent')),"
	" created BIGINT NOT NULL,"
	" sent BIGINT,"
	" PRIMARY KEY (project, iid, revision),"
	" UNIQUE (project, iid, head_sha));"
	"CREATE TABLE thread_map ("
	" rowid BIGINT GENERATED ALWAYS AS IDENTITY,"
	" message_id BYTEA PRIMARY KEY NOT NULL,"
	" project BYTEA NOT NULL,"
	" iid BIGINT NOT NULL CHECK (iid > 0),"
	" revision BIGINT CHECK (revision > 0),"
	" patch BIGINT NOT NULL CHECK (patch >= 0),"
	" total BIGINT NOT NULL CHECK (total >= 0),"
	" kind BYTEA NOT NULL CHECK (kind IN"
	"  ('cover', 'patch', 'forge-comment', 'receipt')),"
	" commit_sha BYTEA,"
	" base_sha BYTEA,"
	" start_sha BYTEA,"
	" head_sha BYTEA,"
	" version_id BIGINT,"
	" diff BYTEA,"
	" discussion_id BYTEA,"
	" note_id BIGINT,"
	" state BYTEA NOT NULL CHECK (state IN ('pending', 'sent')),"
	" created BIGINT NOT NULL,"
	" sent BIGINT,"
	" FOREIGN KEY (project, iid, revision)"
	"  REFERENCES revisions (project, iid, revision));"
	"CREATE UNIQUE INDEX thread_map_series"
	" ON thread_map (project, iid, revision, patch)"
	" WHERE kind IN ('cover', 'patch');"
	"CREATE INDEX thread_map_revision"
	" ON thread_map (project, iid, revision);"
	"CREATE INDEX thread_map_discussion"
	" ON thread_map (project, discussion_id)"
	" WHERE discussion_id IS NOT NULL;"
	"CREATE INDEX thread_map_note ON thread_map (project, note_id)"
	" WHERE note_id IS NOT NULL;"
	"CREATE TABLE cursors ("
	" name BYTEA PRIMARY KEY NOT NULL,"
	" value BYTEA NOT NULL,"
	" updated BIGINT NOT NULL);"
	"UPDATE schema_version SET version = 1;",

	/* 2 */
	"CREATE TABLE inbound ("
	" rowid BIGINT GENERATED ALWAYS AS IDENTITY,"
	" message_id BYTEA PRIMARY KEY NOT NULL,"
	" spool_name BYTEA NOT NULL,"
	" project BYTEA,"
	" iid BIGINT CHECK (iid > 0),"
	" revision BIGINT CHECK (revision > 0),"
	" patch BIGINT CHECK (patch >= 0),"
	" classification BYTEA NOT NULL,"
	" state BYTEA NOT NULL CHECK (state IN ('received', 'applying',"
	"  'applied', 'ignored', 'failed', 'dead')),"
	" attempts BIGINT NOT NULL CHECK (attempts >= 0),"
	" next_attempt BIGINT NOT NULL,"
	" last_error BYTEA,"
	" created BIGINT NOT NULL,"
	" updated BIGINT NOT NULL);"
	"CREATE INDEX inbound_due ON inbound (next_attempt, created)"
	" WHERE state IN ('received', 'failed');"
	"CREATE INDEX inbound_state ON inbound (state, created);"
	"CREATE TABLE forge_actions ("
	" message_id BYTEA NOT NULL,"
	" action_index BIGINT NOT NULL CHECK (action_index >= 0),"
	" kind BYTEA NOT NULL,"
	" marker BYTEA NOT NULL,"
	" state BYTEA NOT NULL CHECK (state IN ('intent', 'done', 'failed')),"
	" note_id BIGINT,"
	" discussion_id BYTEA,"
	" attempts BIGINT NOT NULL CHECK (attempts >= 0),"
	" last_error BYTEA,"
	" created BIGINT NOT NULL,"
	" updated BIGINT NOT NULL,"
	" PRIMARY KEY (message_id, action_index));"
	"UPDATE schema_version SET version = 2;",

	/* 3 */
	"CREATE TABLE outmail ("
	" message_id BYTEA PRIMARY KEY NOT NULL"
	"  REFERENCES thread_map (message_id),"
	" envelope_from BYTEA NOT NULL,"
	" recipients BYTEA NOT NULL,"
	" message BYTEA NOT NULL,"
	" state BYTEA NOT NULL CHECK (state IN ('queued', 'deferred',"
	"  'failed')),"
	" attempts BIGINT NOT NULL CHECK (attempts >= 0),"
	" next_attempt BIGINT NOT NULL,"
	" last_error BYTEA,"
	" created BIGINT NOT NULL,"
	" updated BIGINT NOT NULL);"
	"UPDATE schema_version SET version = 3;",

	/* 4 */
	"CREATE TABLE archive ("
	" rowid BIGINT GENERATED ALWAYS AS IDENTITY,"
	" message_id BYTEA PRIMARY KEY NOT NULL,"
	" project BYTEA NOT NULL,"
	" iid BIGINT NOT NULL CHECK (iid > 0),"
	" origin BYTEA NOT NULL CHECK (origin IN ('bridge', 'list')),"
	" message BYTEA NOT NULL,"
	" created BIGINT NOT NULL);"
	"CREATE INDEX archive_by_mr ON archive (project, iid, created);"
	"UPDATE schema_version SET version = 4;",

	/* 5 */
	"CREATE TABLE trailer_verdicts ("
	" message_id BYTEA NOT NULL,"
	" trailer_index BIGINT NOT NULL CHECK (trailer_index >= 0),"
	" verdict BYTEA NOT NULL,"
	" PRIMARY KEY (message_id, trailer_index));"
	"UPDATE schema_version SET version = 5;",

	/* 6 */
	"ALTER TABLE inbound ADD COLUMN spooled_by BYTEA;"
	"ALTER TABLE inbound ADD COLUMN claimed_by BYTEA;"
	"ALTER TABLE inbound ADD COLUMN lease_until BIGINT NOT NULL"
	" DEFAULT 0;"
	"ALTER TABLE inbound ADD COLUMN record BYTEA;"
	"CREATE INDEX inbound_lease ON inbound (lease_until)"
	" WHERE state = 'applying';"
	/* SQLite's inbound_due has the rowid at its end already. */
	"CREATE INDEX inbound_claim ON inbound (next_attempt, created, rowid)"
	" WHERE state IN ('received', 'failed');"
	"ALTER TABLE forge_actions ADD COLUMN host BYTEA;"
	"ALTER TABLE outmail ADD COLUMN claimed_by BYTEA;"
	"ALTER TABLE outmail ADD COLUMN lease_until BIGINT NOT NULL"
	" DEFAULT 0;"
	"ALTER TABLE thread_map ADD COLUMN sent_by BYTEA;"
	"UPDATE schema_version SET version = 6;",

	/* 7 */
	"ALTER TABLE outmail ADD COLUMN handed BIGINT NOT NULL DEFAULT 0;"
	"CREATE INDEX thread_map_created ON thread_map (created, message_id);"
	"UPDATE schema_version SET version = 7;",

	/* 8 */
	"ALTER TABLE thread_map ADD COLUMN sent_how BYTEA;"
	"UPDATE schema_version SET version = 8;",

	/* 9: PostgreSQL drops the constraint by the name it gave it. */
	"ALTER TABLE revisions"
	" DROP CONSTRAINT revisions_project_iid_head_sha_key;"
	"CREATE UNIQUE INDEX revisions_head_base ON revisions"
	" (project, iid, head_sha, COALESCE(base_sha, ''::BYTEA));"
	"UPDATE schema_version SET version = 9;",
};

#define SCHEMA_LATEST ((int)ARRAY_SIZE(sqlite_migrations))
_Static_assert(ARRAY_SIZE(sqlite_migrations) == ARRAY_SIZE(pg_migrations),
	       "both engines have every schema step");

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

static int read_version(struct store *st, int *out)
{
	struct query q;
	int rc;

	*out = 0;
	if (st->backend == STORE_BACKEND_POSTGRESQL) {
		/* No table yet: nothing was ever migrated. */
		rc = q_start(&q, st, S_VERSION_TABLE, "read schema version");
		if (!rc)
			rc = q_step(&q);
		if (rc == 1)
			rc = col_int(&q, 0) ? 1 : 0;
		q_end(&q);
		if (rc <= 0)
			return rc;
	}
	rc = q_start(&q, st, S_USER_VERSION, "read schema version");
	if (!rc)
		rc = q_step(&q);
	if (rc == 1) {
		*out = (int)col_int(&q, 0);
		rc = 0;
	} else if (rc == 0) {
		rc = err_set(PB_ERROR, "state db %s: no schema version",
			     st->name);
	}
	q_end(&q);
	return rc;
}

static int version_too_new(struct store *st, int version)
{
	return err_set(PB_ERROR,
		       "state db %s: schema version %d is newer than this "
		       "patchbridge knows (%d); refusing to use it - run the "
		       "newer patchbridge or restore a matching backup",
		       st->name, version, SCHEMA_LATEST);
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

/* Bring the schema to target (SCHEMA_LATEST) in one transaction. */
static int migrate(struct store *st, int target)
{
	const char *const *steps = st->backend == STORE_BACKEND_POSTGRESQL ?
					   pg_migrations :
					   sqlite_migrations;
	int rc, version, i, from;

	rc = db_begin(st->db, DB_TX_MIGRATE);
	if (rc)
		return db_fail(st, rc, "begin migration");
	rc = read_version(st, &version);
	if (rc)
		goto out;
	if (version > SCHEMA_LATEST) {
		rc = version_too_new(st, version);
		goto out;
	}
	from = version;
	for (i = version; i < target; i++) {
		rc = db_exec(st->db, steps[i]);
		if (rc) {
			db_fail(st, rc, "schema migration");
			err_prefix(rc, "to version %d", i + 1);
			goto out;
		}
		rc = read_version(st, &version);
		if (rc)
			goto out;
		if (version != i + 1)
			BUG("migration step %d sets version %d", i + 1,
			    version);
	}
	rc = db_commit(st->db);
	if (rc) {
		db_fail(st, rc, "commit migration");
		return rc;
	}
	if (from == 0)
		log_notice("state db %s: created (schema version %d)", st->name,
			   target);
	else if (from < target)
		log_notice("state db %s: schema migrated from version %d to %d",
			   st->name, from, target);
	return 0;
out:
	if (db_in_tx(st->db))
		db_rollback(st->db);
	return rc;
}

static int open_rw(struct store *st, int target)
{
	int rc, version;

	/* Refuse a newer schema before changing anything. */
	rc = read_version(st, &version);
	if (rc)
		return rc;
	if (version > SCHEMA_LATEST)
		return version_too_new(st, version);
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
	rc = migrate(st, target);
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

	rc = read_version(st, &version);
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
	if (version > SCHEMA_LATEST)
		return version_too_new(st, version);
	if (version < SCHEMA_LATEST)
		return err_set(PB_ETEMP,
			       "state db %s: schema version %d is older "
			       "than %d; the daemon upgrades it on start",
			       st->name, version, SCHEMA_LATEST);
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
	if (o->schema_version < 0 || o->schema_version > SCHEMA_LATEST)
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
						     SCHEMA_LATEST);
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
		rc = read_version(st, version);
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

int store_schema_version(int *out, struct store *st)
{
	return read_version(st, out);
}

int store_schema_latest(void)
{
	return SCHEMA_LATEST;
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
