/*
 * store - the state database.  See store.h.
 *
 * The store's logic and every statement are here, over the small engine
 * interface of db.h with its two drivers (db_sqlite.c, db_pg.c).  One
 * file rather than two implementations of store.h because the SQL is
 * nearly all the same: what differs is the schema's types, where the
 * schema version lives and how a row is claimed, and each of those is a
 * PostgreSQL variant next to the statement it replaces, so a change to
 * the store is made once and the same tests judge both engines.
 *
 * Every statement is a constant string in stmt_sql[] below (PostgreSQL
 * variants in stmt_sql_pg[]), prepared once per connection (lazily) with
 * bound parameters; nothing here formats SQL.  The schema is the ordered
 * list of migrations of each engine: step i takes a database from
 * version i to i + 1 and ends by recording version i + 1 (SQLite's
 * PRAGMA user_version, PostgreSQL's schema_version table), so a step and
 * its version number cannot drift apart, and version N is the same
 * tables on both.  A shipped step is never edited; changes go into a
 * new step, for both engines.
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

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* After a clean close the WAL is truncated to nothing; while open it is
 * cut back to this size after each checkpoint. */
#define STORE_WAL_LIMIT "67108864"
/* A unit that meets a serialization failure runs again, this often. */
#define STORE_TRIES 12
/* "No limit" for statements with a LIMIT parameter. */
#define NO_LIMIT INT64_MAX

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

/* Column lists shared by the SELECTs and the row readers below. */
#define MAIL_COLS                                                       \
	"message_id, project, iid, revision, patch, total, kind,"       \
	" commit_sha, base_sha, start_sha, head_sha, version_id, diff," \
	" discussion_id, note_id, state, created, sent, sent_by"
/* What a mail row reads: its columns and how it was known sent. */
#define MAIL_READ_COLS MAIL_COLS ", sent_how"
enum {
	MC_MSGID,
	MC_PROJECT,
	MC_IID,
	MC_REVISION,
	MC_PATCH,
	MC_TOTAL,
	MC_KIND,
	MC_COMMIT,
	MC_BASE,
	MC_START,
	MC_HEAD,
	MC_VERSION,
	MC_DIFF,
	MC_DISCUSSION,
	MC_NOTE,
	MC_STATE,
	MC_CREATED,
	MC_SENT,
	MC_SENT_BY,
	MC_SENT_HOW, /* MAIL_READ_COLS only */
};

#define REV_COLS                                                 \
	"project, iid, revision, head_sha, base_sha, start_sha," \
	" version_id, patch_id, patches, cover_msgid, state, created, sent"
enum {
	RC_PROJECT,
	RC_IID,
	RC_REVISION,
	RC_HEAD,
	RC_BASE,
	RC_START,
	RC_VERSION,
	RC_PATCH_ID,
	RC_PATCHES,
	RC_COVER,
	RC_STATE,
	RC_CREATED,
	RC_SENT,
};

#define IN_COLS                                                       \
	"message_id, spool_name, project, iid, revision, patch,"      \
	" classification, state, attempts, next_attempt, last_error," \
	" created, updated, spooled_by, claimed_by, lease_until"
enum {
	IC_MSGID,
	IC_SPOOL,
	IC_PROJECT,
	IC_IID,
	IC_REVISION,
	IC_PATCH,
	IC_CLASS,
	IC_STATE,
	IC_ATTEMPTS,
	IC_NEXT,
	IC_ERROR,
	IC_CREATED,
	IC_UPDATED,
	IC_SPOOLED_BY,
	IC_CLAIMED_BY,
	IC_LEASE,
};

/* The queue joined with the thread map. */
#define OUT_SELECT_COLS(message)                                      \
	"SELECT o.message_id, t.project, t.iid, t.revision, t.patch," \
	" o.envelope_from, o.recipients, " message ", o.state,"       \
	" o.attempts, o.next_attempt, o.last_error, o.created,"       \
	" o.updated, o.claimed_by, o.lease_until, o.handed"           \
	" FROM outmail o"                                             \
	" JOIN thread_map t ON t.message_id = o.message_id"
#define OUT_SELECT OUT_SELECT_COLS("o.message")
#define OUT_SELECT_NO_MESSAGE OUT_SELECT_COLS("NULL")
enum {
	OC_MSGID,
	OC_PROJECT,
	OC_IID,
	OC_REVISION,
	OC_PATCH,
	OC_FROM,
	OC_RCPTS,
	OC_MESSAGE,
	OC_STATE,
	OC_ATTEMPTS,
	OC_NEXT,
	OC_ERROR,
	OC_CREATED,
	OC_UPDATED,
	OC_CLAIMED_BY,
	OC_LEASE,
	OC_HANDED,
};

#define ACT_COLS                                                  \
	"message_id, action_index, kind, marker, state, note_id," \
	" discussion_id, attempts, last_error, created, updated, host"
enum {
	AC_MSGID,
	AC_INDEX,
	AC_KIND,
	AC_MARKER,
	AC_STATE,
	AC_NOTE,
	AC_DISCUSSION,
	AC_ATTEMPTS,
	AC_ERROR,
	AC_CREATED,
	AC_UPDATED,
	AC_HOST,
};

enum stmt_id {
	S_VERSION_TABLE,
	S_USER_VERSION,
	S_MAIL_PUT,
	S_MAIL_MARK_SENT,
	S_MAIL_GET,
	S_MAIL_FIND,
	S_MAIL_LIST_REVISION,
	S_MAIL_BY_DISCUSSION,
	S_MAIL_BY_NOTE,
	S_MAIL_LAST_SENT,
	S_MAIL_SINCE,
	S_HOSTS,
	S_MIRROR_MAIL,
	S_MIRROR_MAIL_STATE,
	S_MIRROR_REV,
	S_MIRROR_REV_STATE,
	S_REV_START,
	S_REV_MARK_SENT,
	S_REV_GET,
	S_REV_LATEST,
	S_REV_BY_HEAD,
	S_REV_BY_BASE,
	S_IN_RECORD,
	S_IN_CLAIM,
	S_IN_FINISH,
	S_IN_WAIT,
	S_IN_PLACE,
	S_IN_RENEW,
	S_IN_HOLDER,
	S_IN_RECOVER,
	S_IN_LIST,
	S_IN_GET,
	S_IN_COUNT,
	S_IN_SPOOL_RECORD,
	S_ACT_INSERT,
	S_ACT_AGAIN,
	S_ACT_GET,
	S_ACT_COMPLETE,
	S_ACT_FAIL,
	S_ACT_LIST,
	S_CURSOR_GET,
	S_CURSOR_SET,
	S_RENAME_HAS,
	S_RENAME_REV_COPY,
	S_RENAME_MAIL,
	S_RENAME_REV_DROP,
	S_RENAME_INBOUND,
	S_RENAME_ARCHIVE,
	S_RENAME_CURSORS,
	S_RENAME_CURSOR_DROP,
	S_RENAME_CURSOR,
	S_CURSOR_BY_VALUE,
	S_REV_LIST,
	S_REV_LIST_ALL,
	S_OUT_PUT,
	S_OUT_EXISTS,
	S_OUT_GET,
	S_OUT_LIST,
	S_OUT_CLAIM,
	S_OUT_HOLDER,
	S_OUT_HAND,
	S_OUT_WAIT,
	S_OUT_DEFER,
	S_OUT_FAIL,
	S_OUT_REQUEUE,
	S_OUT_DELETE,
	S_OUT_LEFT,
	S_OUT_REV_SENT,
	S_ARCH_FROM_OUT,
	S_ARCH_PUT,
	S_ARCH_GET,
	S_ARCH_LIST,
	S_ARCH_MISSING,
	S_ARCH_PRUNE,
	S_VERDICT_CLEAR,
	S_VERDICT_PUT,
	S_VERDICT_LIST,
	S_NR
};

/*
 * Claim the next due inbound row (?3 is this host, ?2 the time now):
 * received or failed and due (?1) - a row another host journaled only
 * once it has been due for a lease (?5: its daemon is down or stuck) -
 * or applying under a claim that expired: the host that claimed it died
 * or hangs, and the forge action journal makes applying it again safe.
 * One statement, so the pick and the update are one write; on
 * PostgreSQL the pick skips rows another claimer has locked, and the
 * outer WHERE is checked again on the row it locked.
 */
#define IN_DUE                                                     \
	"((state IN ('received', 'failed') AND next_attempt <= ?1" \
	" AND (spooled_by IS NULL OR spooled_by = ?3"              \
	" OR next_attempt <= ?5))"                                 \
	" OR (state = 'applying' AND lease_until <= ?2))"
#define IN_CLAIM_SET                                               \
	"UPDATE inbound SET state = 'applying',"                   \
	" attempts = attempts + 1, updated = ?2, claimed_by = ?3," \
	" lease_until = ?4"
#define IN_CLAIM_ORDER " ORDER BY next_attempt, created, rowid LIMIT 1"
/*
 * PostgreSQL: each kind of due row from its own index, in claim order, so
 * a claim reads a few index entries (and marks those of finished rows
 * dead as it passes) instead of collecting every candidate; a row another
 * claimer holds is skipped, not waited for.
 */
#define IN_CLAIM_PG                                                                   \
	"WITH fresh AS (SELECT message_id, next_attempt, created, rowid"              \
	" FROM inbound WHERE state IN ('received', 'failed')"                         \
	" AND next_attempt <= ?1 AND (spooled_by IS NULL"                             \
	" OR spooled_by = ?3 OR next_attempt <= ?5)" IN_CLAIM_ORDER                   \
	" FOR UPDATE SKIP LOCKED),"                                                   \
	" expired AS (SELECT message_id, next_attempt, created, rowid"                \
	" FROM inbound WHERE state = 'applying' AND lease_until <= ?2" IN_CLAIM_ORDER \
	" FOR UPDATE SKIP LOCKED) " IN_CLAIM_SET                                      \
	" WHERE message_id = (SELECT message_id FROM"                                 \
	" (SELECT * FROM fresh UNION ALL SELECT * FROM expired) due" IN_CLAIM_ORDER   \
	") AND " IN_DUE " RETURNING " IN_COLS

static const char *const stmt_sql[S_NR] = {
	[S_USER_VERSION] = "PRAGMA user_version",

	[S_MAIL_PUT] = "INSERT INTO thread_map (" MAIL_COLS ")"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
		       " ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
		       " ON CONFLICT (message_id) DO NOTHING",
	/* (the right-hand sides see the row as it was) */
	[S_MAIL_MARK_SENT] = "UPDATE thread_map SET state = 'sent',"
			     " sent = COALESCE(sent, ?2),"
			     " sent_by = COALESCE(sent_by, ?3),"
			     " sent_how = CASE WHEN sent IS NULL THEN ?4"
			     " ELSE sent_how END"
			     " WHERE message_id = ?1",
	[S_MAIL_GET] = "SELECT " MAIL_READ_COLS " FROM thread_map"
		       " WHERE message_id = ?1",
	[S_MAIL_FIND] = "SELECT " MAIL_READ_COLS " FROM thread_map"
			" WHERE project = ?1 AND iid = ?2 AND revision = ?3"
			" AND patch = ?4 AND kind IN ('cover', 'patch')",
	[S_MAIL_LIST_REVISION] =
		"SELECT " MAIL_READ_COLS " FROM thread_map"
		" WHERE project = ?1 AND iid = ?2 AND revision = ?3"
		" ORDER BY kind NOT IN ('cover', 'patch'), patch, created,"
		" rowid",
	[S_MAIL_BY_DISCUSSION] = "SELECT " MAIL_READ_COLS " FROM thread_map"
				 " WHERE project = ?1 AND discussion_id = ?2"
				 " ORDER BY created DESC, rowid DESC LIMIT 1",
	/* Each host's part (store_hosts): what it journaled, applied,
	 * holds and sent, and when it last did any of it. */
	[S_HOSTS] = "SELECT host, CAST(SUM(journaled) AS BIGINT),"
		    " CAST(SUM(applied) AS BIGINT),"
		    " CAST(SUM(applying) AS BIGINT),"
		    " CAST(SUM(sending) AS BIGINT), CAST(SUM(sent) AS BIGINT),"
		    " CAST(MAX(lease) AS BIGINT), CAST(MAX(at) AS BIGINT)"
		    " FROM (SELECT spooled_by AS host, 1 AS journaled,"
		    "  0 AS applied, 0 AS applying, 0 AS sending, 0 AS sent,"
		    "  0 AS lease, created AS at FROM inbound"
		    "  WHERE spooled_by IS NOT NULL"
		    " UNION ALL SELECT claimed_by, 0,"
		    "  CASE WHEN state = 'applied' THEN 1 ELSE 0 END,"
		    "  CASE WHEN state = 'applying' THEN 1 ELSE 0 END, 0, 0,"
		    "  CASE WHEN state = 'applying' THEN lease_until ELSE 0"
		    "  END, updated FROM inbound WHERE claimed_by IS NOT NULL"
		    " UNION ALL SELECT claimed_by, 0, 0, 0,"
		    "  CASE WHEN lease_until > 0 THEN 1 ELSE 0 END, 0,"
		    "  lease_until, updated FROM outmail"
		    "  WHERE claimed_by IS NOT NULL"
		    " UNION ALL SELECT sent_by, 0, 0, 0, 0, 1, 0, sent"
		    "  FROM thread_map WHERE sent_by IS NOT NULL) h"
		    " GROUP BY host ORDER BY host LIMIT ?1",
	/* When the MTA last took a mail of the bridge's (health.h). */
	[S_MAIL_LAST_SENT] = "SELECT COALESCE(MAX(sent), 0) FROM thread_map"
			     " WHERE state = 'sent'",
	/* The thread map from a time on, in pages (store_threadmap_mirror). */
	[S_MAIL_SINCE] = "SELECT " MAIL_READ_COLS " FROM thread_map"
			 " WHERE (created, message_id) > (?1, ?2)"
			 " ORDER BY created, message_id LIMIT ?3",
	[S_MIRROR_MAIL] = "INSERT INTO thread_map (" MAIL_COLS ")"
			  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
			  " ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
			  " ON CONFLICT DO NOTHING",
	[S_MIRROR_MAIL_STATE] = "UPDATE thread_map SET state = ?2,"
				" sent = ?3, sent_by = ?4"
				" WHERE message_id = ?1",
	[S_MIRROR_REV] = "INSERT INTO revisions (" REV_COLS ")"
			 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
			 " ?11, ?12, ?13)"
			 " ON CONFLICT DO NOTHING",
	[S_MIRROR_REV_STATE] = "UPDATE revisions SET patches = ?4,"
			       " cover_msgid = ?5, state = ?6, sent = ?7"
			       " WHERE project = ?1 AND iid = ?2"
			       " AND revision = ?3",
	[S_MAIL_BY_NOTE] = "SELECT " MAIL_READ_COLS " FROM thread_map"
			   " WHERE project = ?1 AND note_id = ?2"
			   " ORDER BY created, rowid LIMIT 1",

	/* Nothing when the head (or, racing, the number) is taken. */
	[S_REV_START] =
		"INSERT INTO revisions (project, iid, revision, head_sha,"
		" base_sha, start_sha, version_id, patch_id, patches,"
		" cover_msgid, state, created)"
		" SELECT ?1, ?2, COALESCE(MAX(revision), 0) + 1, ?3, ?4, ?5,"
		" ?6, ?7, ?8, ?9, 'sending', ?10"
		" FROM revisions WHERE project = ?1 AND iid = ?2"
		" ON CONFLICT DO NOTHING RETURNING revision",
	[S_REV_MARK_SENT] = "UPDATE revisions SET state = 'sent',"
			    " sent = COALESCE(sent, ?4)"
			    " WHERE project = ?1 AND iid = ?2"
			    " AND revision = ?3",
	[S_REV_GET] = "SELECT " REV_COLS " FROM revisions"
		      " WHERE project = ?1 AND iid = ?2 AND revision = ?3",
	[S_REV_LATEST] = "SELECT " REV_COLS " FROM revisions"
			 " WHERE project = ?1 AND iid = ?2"
			 " ORDER BY revision DESC LIMIT 1",
	/* A head may be on several bases (retargets): the newest. */
	[S_REV_BY_HEAD] = "SELECT " REV_COLS " FROM revisions"
			  " WHERE project = ?1 AND iid = ?2 AND head_sha = ?3"
			  " ORDER BY revision DESC LIMIT 1",
	[S_REV_BY_BASE] = "SELECT " REV_COLS " FROM revisions"
			  " WHERE project = ?1 AND iid = ?2 AND head_sha = ?3"
			  " AND (base_sha = ?4 OR (base_sha IS NULL"
			  " AND ?4 IS NULL))"
			  " ORDER BY revision DESC LIMIT 1",

	[S_IN_RECORD] = "INSERT INTO inbound (" IN_COLS ", record)"
			" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'received', 0,"
			" ?8, NULL, ?9, ?9, ?10, NULL, 0, ?11)"
			" ON CONFLICT (message_id) DO NOTHING",
	[S_IN_CLAIM] = IN_CLAIM_SET
	" WHERE message_id = (SELECT message_id FROM inbound"
	"  WHERE " IN_DUE IN_CLAIM_ORDER ") AND " IN_DUE " RETURNING " IN_COLS,
	/* Only the claimer (or, from before claims had owners, anyone)
	 * finishes; a finished mail's spool record is not kept. */
	[S_IN_FINISH] = "UPDATE inbound SET state = ?2,"
			" next_attempt = COALESCE(?3, next_attempt),"
			" last_error = ?4, updated = ?5, lease_until = 0,"
			" record = CASE WHEN ?2 = 'failed' THEN record END"
			" WHERE message_id = ?1 AND state = 'applying'"
			" AND (claimed_by IS NULL OR claimed_by = ?6)",
	/* A retry that is not an attempt: the claim's count taken back. */
	[S_IN_WAIT] = "UPDATE inbound SET state = 'failed',"
		      " attempts = CASE WHEN attempts > 0 THEN attempts - 1"
		      " ELSE 0 END,"
		      " next_attempt = ?2, last_error = ?3, updated = ?4,"
		      " lease_until = 0"
		      " WHERE message_id = ?1 AND state = 'applying'"
		      " AND (claimed_by IS NULL OR claimed_by = ?5)",
	/* Where a claimed mail was applied, when that is not where the
	 * milter placed it (inbound.c, the headers disagree). */
	[S_IN_PLACE] = "UPDATE inbound SET project = ?2, iid = ?3,"
		       " revision = ?4, patch = ?5"
		       " WHERE message_id = ?1 AND state = 'applying'",
	[S_IN_RENEW] = "UPDATE inbound SET lease_until = ?3"
		       " WHERE message_id = ?1 AND state = 'applying'"
		       " AND claimed_by = ?2",
	[S_IN_HOLDER] = "SELECT claimed_by, lease_until FROM inbound"
			" WHERE message_id = ?1 AND state = 'applying'",
	[S_IN_RECOVER] = "UPDATE inbound SET state = 'received', updated = ?1,"
			 " lease_until = 0"
			 " WHERE state = 'applying'"
			 " AND (claimed_by IS NULL OR claimed_by = ?2)",
	[S_IN_LIST] = "SELECT " IN_COLS " FROM inbound WHERE state = ?1"
		      " ORDER BY created, rowid LIMIT ?2",
	[S_IN_GET] = "SELECT " IN_COLS " FROM inbound WHERE message_id = ?1",
	/* One pass over the table, whatever its size. */
	[S_IN_COUNT] = "SELECT project, state, COUNT(*) FROM inbound"
		       " GROUP BY project, state"
		       " ORDER BY project NULLS FIRST, state LIMIT ?1",
	[S_IN_SPOOL_RECORD] = "SELECT record FROM inbound"
			      " WHERE message_id = ?1",

	[S_ACT_INSERT] = "INSERT INTO forge_actions (" ACT_COLS ")"
			 " VALUES (?1, ?2, ?3, ?4, 'intent', NULL, NULL, 1,"
			 " NULL, ?5, ?5, ?6)"
			 " ON CONFLICT (message_id, action_index) DO NOTHING",
	[S_ACT_AGAIN] = "UPDATE forge_actions SET state = 'intent',"
			" attempts = attempts + 1, updated = ?3, host = ?4"
			" WHERE message_id = ?1 AND action_index = ?2"
			" AND state != 'done'",
	[S_ACT_GET] = "SELECT " ACT_COLS " FROM forge_actions"
		      " WHERE message_id = ?1 AND action_index = ?2",
	[S_ACT_COMPLETE] = "UPDATE forge_actions SET state = 'done',"
			   " note_id = ?3, discussion_id = ?4,"
			   " last_error = NULL, updated = ?5"
			   " WHERE message_id = ?1 AND action_index = ?2",
	[S_ACT_FAIL] = "UPDATE forge_actions SET state = 'failed',"
		       " last_error = ?3, updated = ?4"
		       " WHERE message_id = ?1 AND action_index = ?2"
		       " AND state != 'done'",
	[S_ACT_LIST] = "SELECT " ACT_COLS " FROM forge_actions"
		       " WHERE message_id = ?1 ORDER BY action_index",
	[S_VERDICT_CLEAR] =
		"DELETE FROM trailer_verdicts WHERE message_id = ?1",
	[S_VERDICT_PUT] = "INSERT INTO trailer_verdicts"
			  " (message_id, trailer_index, verdict)"
			  " VALUES (?1, ?2, ?3)",
	[S_VERDICT_LIST] = "SELECT verdict FROM trailer_verdicts"
			   " WHERE message_id = ?1 ORDER BY trailer_index",

	[S_CURSOR_GET] = "SELECT value FROM cursors WHERE name = ?1",
	[S_CURSOR_SET] = "INSERT INTO cursors (name, value, updated)"
			 " VALUES (?1, ?2, ?3) ON CONFLICT (name)"
			 " DO UPDATE SET value = excluded.value,"
			 " updated = excluded.updated",
	/* A project's state under another name (store_project_rename()):
	 * the revisions are copied first and dropped last, as the thread
	 * map's rows refer to them. */
	[S_RENAME_HAS] =
		"SELECT (SELECT COUNT(*) FROM revisions"
		" WHERE project = ?1)"
		" + (SELECT COUNT(*) FROM thread_map WHERE project = ?1)"
		" + (SELECT COUNT(*) FROM inbound WHERE project = ?1)"
		" + (SELECT COUNT(*) FROM archive WHERE project = ?1)"
		" + (SELECT COUNT(*) FROM cursors WHERE name = ?2)",
	[S_RENAME_REV_COPY] = "INSERT INTO revisions (" REV_COLS ")"
			      " SELECT ?2, iid, revision, head_sha, base_sha,"
			      " start_sha, version_id, patch_id, patches,"
			      " cover_msgid, state, created, sent"
			      " FROM revisions WHERE project = ?1",
	[S_RENAME_MAIL] = "UPDATE thread_map SET project = ?2"
			  " WHERE project = ?1",
	[S_RENAME_REV_DROP] = "DELETE FROM revisions WHERE project = ?1",
	[S_RENAME_INBOUND] = "UPDATE inbound SET project = ?2"
			     " WHERE project = ?1",
	[S_RENAME_ARCHIVE] = "UPDATE archive SET project = ?2"
			     " WHERE project = ?1",
	[S_RENAME_CURSORS] = "SELECT name FROM cursors ORDER BY name",
	[S_RENAME_CURSOR_DROP] = "DELETE FROM cursors WHERE name = ?1",
	[S_RENAME_CURSOR] = "UPDATE cursors SET name = ?2 WHERE name = ?1",
	[S_CURSOR_BY_VALUE] = "SELECT name FROM cursors WHERE value = ?1"
			      " ORDER BY name",

	[S_REV_LIST] = "SELECT " REV_COLS " FROM revisions WHERE project = ?1"
		       " ORDER BY iid, revision LIMIT ?2",
	[S_REV_LIST_ALL] = "SELECT " REV_COLS " FROM revisions"
			   " ORDER BY project, iid, revision LIMIT ?1",

	/* Only for a thread-map row that exists (and is ours to send). */
	[S_OUT_PUT] = "INSERT INTO outmail (message_id, envelope_from,"
		      " recipients, message, state, attempts, next_attempt,"
		      " last_error, created, updated)"
		      " SELECT ?1, ?2, ?3, ?4, 'queued', 0, 0, NULL, ?5, ?5"
		      " FROM thread_map WHERE message_id = ?1"
		      " ON CONFLICT (message_id) DO NOTHING",
	[S_OUT_EXISTS] = "SELECT (SELECT COUNT(*) FROM outmail"
			 " WHERE message_id = ?1),"
			 " (SELECT COUNT(*) FROM thread_map"
			 " WHERE message_id = ?1)",
	[S_OUT_GET] = OUT_SELECT " WHERE o.message_id = ?1",
	[S_OUT_LIST] = OUT_SELECT_NO_MESSAGE
	" WHERE (?1 IS NULL OR t.project = ?1)"
	" AND (?2 = 0 OR t.iid = ?2)"
	" ORDER BY t.project, t.iid, t.revision, t.patch,"
	" o.created LIMIT ?3",
	/* Free (never claimed, released, or the claim expired) or ours. */
	[S_OUT_CLAIM] = "UPDATE outmail SET claimed_by = ?2,"
			" lease_until = ?3"
			" WHERE message_id = ?1"
			" AND (lease_until <= ?4 OR claimed_by = ?2)",
	[S_OUT_HOLDER] = "SELECT claimed_by, lease_until FROM outmail"
			 " WHERE message_id = ?1",
	/* Only under this host's claim. */
	[S_OUT_HAND] = "UPDATE outmail SET handed = ?2, updated = ?2"
		       " WHERE message_id = ?1 AND claimed_by = ?3"
		       " AND lease_until != 0",
	/* Wait, defer and fail release the claim, unless another host
	 * holds a claim that has not expired; defer and fail know the
	 * MTA's answer, wait does not. */
	[S_OUT_WAIT] = "UPDATE outmail SET state = 'deferred',"
		       " attempts = attempts + ?6, next_attempt = ?2,"
		       " last_error = ?3, updated = ?4, lease_until = 0"
		       " WHERE message_id = ?1 AND handed != 0"
		       " AND (lease_until <= ?4"
		       " OR claimed_by IS NULL OR claimed_by = ?5)",
	[S_OUT_DEFER] = "UPDATE outmail SET state = 'deferred',"
			" attempts = attempts + 1, next_attempt = ?2,"
			" last_error = ?3, updated = ?4, lease_until = 0,"
			" handed = 0"
			" WHERE message_id = ?1 AND (lease_until <= ?4"
			" OR claimed_by IS NULL OR claimed_by = ?5)",
	[S_OUT_FAIL] = "UPDATE outmail SET state = 'failed',"
		       " attempts = attempts + 1, last_error = ?2,"
		       " updated = ?3, lease_until = 0, handed = 0"
		       " WHERE message_id = ?1 AND (lease_until <= ?3"
		       " OR claimed_by IS NULL OR claimed_by = ?4)",
	[S_OUT_REQUEUE] = "UPDATE outmail SET state = 'queued',"
			  " next_attempt = 0, updated = ?3"
			  " WHERE state = 'failed' AND message_id IN"
			  " (SELECT message_id FROM thread_map"
			  "  WHERE project = ?1 AND iid = ?2)",
	[S_OUT_DELETE] = "DELETE FROM outmail WHERE message_id = ?1",
	/* Mails of the same revision still queued. */
	[S_OUT_LEFT] = "SELECT COUNT(*) FROM outmail o"
		       " JOIN thread_map t ON t.message_id = o.message_id"
		       " WHERE (t.project, t.iid, t.revision) ="
		       " (SELECT project, iid, revision FROM thread_map"
		       "  WHERE message_id = ?1)",
	[S_OUT_REV_SENT] = "UPDATE revisions SET state = 'sent', sent = ?2"
			   " WHERE state = 'sending'"
			   " AND (project, iid, revision) ="
			   " (SELECT project, iid, revision FROM thread_map"
			   "  WHERE message_id = ?1)",

	[S_ARCH_FROM_OUT] = "INSERT INTO archive (message_id,"
			    " project, iid, origin, message, created)"
			    " SELECT o.message_id, t.project, t.iid, 'bridge',"
			    " o.message, ?2 FROM outmail o"
			    " JOIN thread_map t ON t.message_id = o.message_id"
			    " WHERE o.message_id = ?1"
			    " ON CONFLICT (message_id) DO NOTHING",
	[S_ARCH_PUT] = "INSERT INTO archive (message_id, project,"
		       " iid, origin, message, created)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
		       " ON CONFLICT (message_id) DO NOTHING",
	[S_ARCH_GET] = "SELECT message_id, project, iid, origin, message,"
		       " created FROM archive WHERE message_id = ?1",
	[S_ARCH_LIST] = "SELECT message_id, project, iid, origin, NULL,"
			" created FROM archive WHERE project = ?1 AND iid = ?2"
			" ORDER BY created, rowid LIMIT ?3",
	[S_ARCH_MISSING] = "SELECT (SELECT COUNT(*) FROM thread_map t"
			   " WHERE t.project = ?1 AND t.iid = ?2"
			   " AND t.state = 'sent' AND NOT EXISTS"
			   " (SELECT 1 FROM archive a"
			   "  WHERE a.message_id = t.message_id))"
			   " + (SELECT COUNT(*) FROM inbound i"
			   " WHERE i.project = ?1 AND i.iid = ?2 AND NOT EXISTS"
			   " (SELECT 1 FROM archive a"
			   "  WHERE a.message_id = i.message_id))",
	[S_ARCH_PRUNE] = "DELETE FROM archive WHERE created < ?1",
};

/* Where PostgreSQL needs other words. */
static const char *const stmt_sql_pg[S_NR] = {
	[S_VERSION_TABLE] = "SELECT COUNT(*) FROM pg_catalog.pg_tables"
			    " WHERE schemaname = current_schema()"
			    " AND tablename = 'schema_version'",
	[S_USER_VERSION] = "SELECT COALESCE(MAX(version), 0)"
			   " FROM schema_version",
	[S_IN_CLAIM] = IN_CLAIM_PG,
};

struct store {
	struct db *db;
	char *name; /* the file, or postgresql://HOST:PORT/DB */
	unsigned flags;
	enum store_backend backend;
	int in_tx; /* a store_begin() transaction is open */
	char *host;
	int64_t lease; /* seconds */
	uint64_t retries;
	struct db_stmt *stmts[S_NR];
};

static const char *const mail_kind_names[] = {
	[STORE_MAIL_COVER] = "cover",
	[STORE_MAIL_PATCH] = "patch",
	[STORE_MAIL_FORGE_COMMENT] = "forge-comment",
	[STORE_MAIL_RECEIPT] = "receipt",
};

static const char *const mail_state_names[] = {
	[STORE_MAIL_PENDING] = "pending",
	[STORE_MAIL_SENT] = "sent",
};

static const char *const sent_how_names[] = {
	[STORE_SENT_MTA] = "mta",
	[STORE_SENT_ARCHIVE] = "archive",
	[STORE_SENT_LATE] = "late",
};

static const char *const revision_state_names[] = {
	[STORE_REVISION_SENDING] = "sending",
	[STORE_REVISION_SENT] = "sent",
};

static const char *const inbound_state_names[] = {
	[STORE_INBOUND_RECEIVED] = "received",
	[STORE_INBOUND_APPLYING] = "applying",
	[STORE_INBOUND_APPLIED] = "applied",
	[STORE_INBOUND_IGNORED] = "ignored",
	[STORE_INBOUND_FAILED] = "failed",
	[STORE_INBOUND_DEAD] = "dead",
};

static const char *const outmail_state_names[] = {
	[STORE_OUTMAIL_QUEUED] = "queued",
	[STORE_OUTMAIL_DEFERRED] = "deferred",
	[STORE_OUTMAIL_FAILED] = "failed",
};

static const char *const archive_origin_names[] = {
	[STORE_ARCHIVE_BRIDGE] = "bridge",
	[STORE_ARCHIVE_LIST] = "list",
};

static const char *const action_state_names[] = {
	[STORE_ACTION_INTENT] = "intent",
	[STORE_ACTION_DONE] = "done",
	[STORE_ACTION_FAILED] = "failed",
};

static int64_t now(void)
{
	return (int64_t)time(NULL);
}

/* Untrusted text (Message-IDs come from the internet) for a message. */
static const char *quote(char *dst, size_t size, const char *s)
{
	return printable_copy(dst, size, s, s ? strlen(s) : 0);
}

/* The name of an enum value from its table; "unknown" outside it. */
static const char *name_of(const char *const *names, size_t nr, size_t v)
{
	return v < nr && names[v] ? names[v] : "unknown";
}

/* The body of every *_list_release(): each item, then the array. */
#define LIST_RELEASE(list, release_item)                  \
	do {                                              \
		size_t i_;                                \
                                                          \
		for (i_ = 0; i_ < (list)->nr; i_++)       \
			release_item(&(list)->items[i_]); \
		free((list)->items);                      \
		(list)->items = NULL;                     \
		(list)->nr = (list)->alloc = 0;           \
	} while (0)

/* Name -> enum through a table; -1 when unknown. */
static int name_index(const char *const *names, size_t nr, const char *s,
		      size_t len)
{
	size_t i;

	if (!s)
		return -1;
	for (i = 0; i < nr; i++)
		if (names[i] && strlen(names[i]) == len &&
		    !memcmp(names[i], s, len))
			return (int)i;
	return -1;
}

/* Prefix the driver's message with the database and what was done. */
static int db_fail(struct store *st, int rc, const char *what)
{
	return err_prefix(rc, "state db %s: %s", st->name, what);
}

static int check_str(const char *what, const char *s, size_t max, int required)
{
	if (!s || !*s) {
		if (required)
			return err_set(PB_EINVAL, "state db: %s is missing",
				       what);
		return 0;
	}
	if (strnlen(s, max + 1) > max)
		return err_set(PB_EINVAL,
			       "state db: %s is too long (over %zu bytes)",
			       what, max);
	return 0;
}

/* An object id: hex, at most STORE_SHA_MAX digits. */
static int check_sha(const char *what, const char *s, int required)
{
	const char *p;
	int rc = check_str(what, s, STORE_SHA_MAX, required);

	if (rc || !s)
		return rc;
	for (p = s; *p; p++)
		if (!strchr("0123456789abcdefABCDEF", *p))
			return err_set(PB_EINVAL,
				       "state db: %s is not a hex object id",
				       what);
	return 0;
}

/* A short lowercase name: kinds and classifications. */
static int check_token(const char *what, const char *s)
{
	const char *p;
	int rc = check_str(what, s, STORE_TOKEN_MAX, 1);

	if (rc)
		return rc;
	for (p = s; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789-_", *p))
			return err_set(PB_EINVAL,
				       "state db: %s is not a lowercase token",
				       what);
	return 0;
}

static int check_mr(const char *project, int64_t iid)
{
	int rc = check_str("project", project, STORE_PROJECT_MAX, 1);

	if (rc)
		return rc;
	if (iid <= 0)
		return err_set(PB_EINVAL, "state db: bad MR iid %lld",
			       (long long)iid);
	return 0;
}

/*
 * Queries.  A query borrows a cached prepared statement; q_end() resets
 * it for the next user.  Binding failures are reported by the first
 * q_step(), so callers bind without checking each call.  q_exec() keeps
 * the number of rows the statement changed in q->changes.
 */
struct query {
	struct store *st;
	struct db_stmt *stmt;
	const char *what;
	int64_t changes;
};

static const char *stmt_text(const struct store *st, enum stmt_id id)
{
	const char *sql = st->backend == STORE_BACKEND_POSTGRESQL &&
					  stmt_sql_pg[id] ?
				  stmt_sql_pg[id] :
				  stmt_sql[id];

	if (!sql)
		BUG("statement %d has no text for this engine", (int)id);
	return sql;
}

static int q_start(struct query *q, struct store *st, enum stmt_id id,
		   const char *what)
{
	int rc;

	q->st = st;
	q->stmt = NULL;
	q->what = what;
	q->changes = 0;
	if (!st->stmts[id]) {
		rc = db_prepare(&st->stmts[id], st->db, stmt_text(st, id));
		if (rc) {
			st->stmts[id] = NULL;
			return db_fail(st, rc, what);
		}
	}
	q->stmt = st->stmts[id];
	return 0;
}

/* NULL binds SQL NULL. */
static void q_text(struct query *q, int i, const char *s)
{
	db_bind_text(q->st->db, q->stmt, i, s, s ? strlen(s) : 0);
}

/* An optional text: NULL and "" bind SQL NULL. */
static void q_opt(struct query *q, int i, const char *s)
{
	q_text(q, i, s && *s ? s : NULL);
}

/* A text that may be empty; NULL binds SQL NULL. */
static void q_textn(struct query *q, int i, const char *s, size_t len)
{
	db_bind_text(q->st->db, q->stmt, i, s, len);
}

static void q_blob(struct query *q, int i, const void *p, size_t len)
{
	db_bind_blob(q->st->db, q->stmt, i, p, len);
}

/*
 * An error or reason text: cut to STORE_ERROR_MAX bytes (at a UTF-8
 * character boundary) rather than refused; NULL and "" bind NULL.
 */
static void q_error(struct query *q, int i, const char *s)
{
	size_t n;

	if (!s || !*s) {
		q_text(q, i, NULL);
		return;
	}
	n = strnlen(s, STORE_ERROR_MAX + 1);
	if (n > STORE_ERROR_MAX) {
		n = STORE_ERROR_MAX;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	q_textn(q, i, s, n);
}

static void q_int(struct query *q, int i, int64_t v)
{
	db_bind_int(q->st->db, q->stmt, i, v);
}

/* 0 stands for "none": bind SQL NULL. */
static void q_int_or_null(struct query *q, int i, int64_t v)
{
	if (v)
		q_int(q, i, v);
	else
		db_bind_int_null(q->st->db, q->stmt, i);
}

/* 1 for a row, 0 when done, or a negative error code. */
static int q_step(struct query *q)
{
	int rc = db_step(q->st->db, q->stmt);

	if (rc == 0)
		q->changes = db_changes(q->st->db, q->stmt);
	if (rc < 0)
		return db_fail(q->st, rc, q->what);
	return rc;
}

/* Run to completion; for statements that return no rows we need. */
static int q_exec(struct query *q)
{
	int rc;

	while ((rc = q_step(q)) == 1)
		;
	return rc;
}

static void q_end(struct query *q)
{
	if (!q->stmt)
		return;
	db_reset(q->st->db, q->stmt);
	q->stmt = NULL;
}

static char *col_str(struct query *q, int i)
{
	size_t len;
	const char *p = db_column_bytes(q->st->db, q->stmt, i, &len);

	return p ? xstrndup(p, len) : NULL;
}

/* A column's bytes, copied and NUL-terminated; NULL for SQL NULL. */
static char *col_blob(struct query *q, int i, size_t *len)
{
	const char *p = db_column_bytes(q->st->db, q->stmt, i, len);
	char *copy;

	if (!p)
		return NULL;
	copy = xmalloc(*len + 1);
	if (*len)
		memcpy(copy, p, *len);
	copy[*len] = '\0';
	return copy;
}

/*
 * A column's text (or bytes) as a string the record owns: kept in
 * owned, released with the record.  NULL for SQL NULL.
 */
static const char *col_own(struct strlist *owned, struct query *q, int i)
{
	char *t = col_str(q, i);

	if (t)
		strlist_push_owned(owned, t);
	return t;
}

static const char *col_own_blob(struct strlist *owned, struct query *q, int i,
				size_t *len)
{
	char *t = col_blob(q, i, len);

	if (t)
		strlist_push_owned(owned, t);
	return t;
}

static int64_t col_int(struct query *q, int i)
{
	return db_column_int(q->st->db, q->stmt, i);
}

static int col_enum(struct query *q, int i, const char *const *names, size_t nr)
{
	char qb[PB_LOG_QUOTE_MAX];
	size_t len;
	const char *p = db_column_bytes(q->st->db, q->stmt, i, &len);
	int v = name_index(names, nr, p, len);

	if (v < 0)
		return err_set(PB_ERROR, "state db %s: %s: unknown value '%s'",
			       q->st->name, q->what,
			       printable_copy(qb, sizeof(qb), p ? p : "", len));
	return v;
}

/*
 * An atomic unit of several statements: fn(st, arg) inside a savepoint
 * when the caller has a transaction open, else in a transaction of its
 * own (store_transaction(): run again, from the start, after a
 * serialization failure or a deadlock, STORE_TRIES times at most, with a
 * short random pause that doubles).
 */
typedef store_tx_fn unit_fn;

static void pause_before_retry(int tries)
{
	struct timespec ts;
	long ms = 1L << (tries < 7 ? tries : 7); /* 2 .. 128 ms */

	ms = 1 + rand() % ms;
	ts.tv_sec = 0;
	ts.tv_nsec = ms * 1000000L;
	nanosleep(&ts, NULL);
}

static int unit_run(struct store *st, unit_fn fn, void *arg)
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

/* Thread map. */

void store_mail_init(struct store_mail *m)
{
	memset(m, 0, sizeof(*m));
}

void store_mail_release(struct store_mail *m)
{
	strlist_release(&m->owned);
	store_mail_init(m);
}

const char *store_mail_kind_name(enum store_mail_kind kind)
{
	return name_of(mail_kind_names, ARRAY_SIZE(mail_kind_names),
		       (size_t)kind);
}

void store_mail_list_release(struct store_mail_list *list)
{
	LIST_RELEASE(list, store_mail_release);
}

static int mail_check(const struct store_mail *m)
{
	int rc, series;

	if ((rc = check_str("Message-ID", m->message_id, STORE_MSGID_MAX, 1)) ||
	    (rc = check_mr(m->project, m->iid)) ||
	    (rc = check_sha("commit", m->commit_sha, 0)) ||
	    (rc = check_sha("base sha", m->base_sha, 0)) ||
	    (rc = check_sha("start sha", m->start_sha, 0)) ||
	    (rc = check_sha("head sha", m->head_sha, 0)) ||
	    (rc = check_str("discussion id", m->discussion_id,
			    STORE_FORGE_ID_MAX, 0)))
		return rc;
	if ((size_t)m->kind >= ARRAY_SIZE(mail_kind_names) ||
	    (size_t)m->state >= ARRAY_SIZE(mail_state_names))
		return err_set(PB_EINVAL, "state db: bad mail kind or state");
	if (m->revision < 0 || m->patch < 0 || m->total < 0 ||
	    m->patch > m->total || m->version_id < 0 || m->note_id < 0)
		return err_set(PB_EINVAL,
			       "state db: bad mail numbers (v%d %d/%d)",
			       m->revision, m->patch, m->total);
	series = m->kind == STORE_MAIL_COVER || m->kind == STORE_MAIL_PATCH;
	if (series && (m->revision == 0 ||
		       (m->kind == STORE_MAIL_COVER) != (m->patch == 0)))
		return err_set(PB_EINVAL,
			       "state db: a %s mail cannot be v%d %d/%d",
			       mail_kind_names[m->kind], m->revision, m->patch,
			       m->total);
	if ((!m->diff && m->diff_len) || m->diff_len > STORE_DIFF_MAX)
		return err_set(PB_EINVAL, "state db: bad diff (%zu bytes)",
			       m->diff_len);
	return 0;
}

/* The columns of a thread-map row but its times and sender host. */
static void bind_mail(struct query *q, const struct store_mail *m)
{
	q_text(q, 1 + MC_MSGID, m->message_id);
	q_text(q, 1 + MC_PROJECT, m->project);
	q_int(q, 1 + MC_IID, m->iid);
	q_int_or_null(q, 1 + MC_REVISION, m->revision);
	q_int(q, 1 + MC_PATCH, m->patch);
	q_int(q, 1 + MC_TOTAL, m->total);
	q_text(q, 1 + MC_KIND, mail_kind_names[m->kind]);
	q_opt(q, 1 + MC_COMMIT, m->commit_sha);
	q_opt(q, 1 + MC_BASE, m->base_sha);
	q_opt(q, 1 + MC_START, m->start_sha);
	q_opt(q, 1 + MC_HEAD, m->head_sha);
	q_int_or_null(q, 1 + MC_VERSION, m->version_id);
	q_textn(q, 1 + MC_DIFF, m->diff, m->diff_len);
	q_opt(q, 1 + MC_DISCUSSION, m->discussion_id);
	q_int_or_null(q, 1 + MC_NOTE, m->note_id);
	q_text(q, 1 + MC_STATE, mail_state_names[m->state]);
}

int store_mail_put(struct store *st, const struct store_mail *m)
{
	struct query q;
	int64_t t = now();
	int rc;

	rc = mail_check(m);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_MAIL_PUT, "record mail");
	if (rc)
		return rc;
	bind_mail(&q, m);
	q_int(&q, 1 + MC_CREATED, t);
	if (m->state == STORE_MAIL_SENT) {
		q_int(&q, 1 + MC_SENT, m->sent ? m->sent : t);
		q_text(&q, 1 + MC_SENT_BY, st->host);
	} else {
		q_int_or_null(&q, 1 + MC_SENT, 0);
		q_text(&q, 1 + MC_SENT_BY, NULL);
	}
	rc = q_exec(&q);
	if (!rc && q.changes == 0) {
		char qb[PB_LOG_QUOTE_MAX];

		rc = err_set(PB_EEXISTS, "state db: mail <%s> already recorded",
			     quote(qb, sizeof(qb), m->message_id));
	}
	q_end(&q);
	return rc;
}

const char *store_sent_how_name(enum store_sent_how how)
{
	return name_of(sent_how_names, ARRAY_SIZE(sent_how_names), (size_t)how);
}

static int mark_sent(struct store *st, const char *message_id,
		     enum store_sent_how how)
{
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	if ((size_t)how >= ARRAY_SIZE(sent_how_names))
		return err_set(PB_EINVAL,
			       "state db: no such way of knowing "
			       "a mail was sent: %d",
			       (int)how);
	rc = q_start(&q, st, S_MAIL_MARK_SENT, "mark mail sent");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, now());
	q_text(&q, 3, st->host);
	/* the usual case stays NULL, as every row from before schema 8 */
	q_opt(&q, 4, how == STORE_SENT_MTA ? NULL : sent_how_names[how]);
	rc = q_exec(&q);
	if (!rc && q.changes == 0) {
		char qb[PB_LOG_QUOTE_MAX];

		rc = err_set(PB_ENOTFOUND, "state db: no mail <%s>",
			     quote(qb, sizeof(qb), message_id));
	}
	q_end(&q);
	return rc;
}

int store_mail_mark_sent(struct store *st, const char *message_id)
{
	return mark_sent(st, message_id, STORE_SENT_MTA);
}

int store_mail_last_sent(int64_t *out, struct store *st)
{
	struct query q;
	int rc;

	*out = 0;
	rc = q_start(&q, st, S_MAIL_LAST_SENT, "find the last mail sent");
	if (rc)
		return rc;
	rc = q_step(&q);
	if (rc == 1) {
		*out = col_int(&q, 0);
		rc = 0;
	}
	q_end(&q);
	return rc;
}

static int mail_from_row(struct store_mail *m, struct query *q)
{
	int kind, state, how = STORE_SENT_MTA;

	kind = col_enum(q, MC_KIND, mail_kind_names,
			ARRAY_SIZE(mail_kind_names));
	if (kind < 0)
		return kind;
	state = col_enum(q, MC_STATE, mail_state_names,
			 ARRAY_SIZE(mail_state_names));
	if (state < 0)
		return state;
	/* NULL: the MTA's answer, as every row from before schema 8 */
	if (!db_column_null(q->st->db, q->stmt, MC_SENT_HOW)) {
		how = col_enum(q, MC_SENT_HOW, sent_how_names,
			       ARRAY_SIZE(sent_how_names));
		if (how < 0)
			return how;
	}
	store_mail_release(m);
	m->message_id = col_own(&m->owned, q, MC_MSGID);
	m->project = col_own(&m->owned, q, MC_PROJECT);
	m->iid = col_int(q, MC_IID);
	m->revision = (int)col_int(q, MC_REVISION);
	m->patch = (int)col_int(q, MC_PATCH);
	m->total = (int)col_int(q, MC_TOTAL);
	m->kind = (enum store_mail_kind)kind;
	m->commit_sha = col_own(&m->owned, q, MC_COMMIT);
	m->base_sha = col_own(&m->owned, q, MC_BASE);
	m->start_sha = col_own(&m->owned, q, MC_START);
	m->head_sha = col_own(&m->owned, q, MC_HEAD);
	m->version_id = col_int(q, MC_VERSION);
	m->diff = col_own_blob(&m->owned, q, MC_DIFF, &m->diff_len);
	m->discussion_id = col_own(&m->owned, q, MC_DISCUSSION);
	m->note_id = col_int(q, MC_NOTE);
	m->state = (enum store_mail_state)state;
	m->created = col_int(q, MC_CREATED);
	m->sent = col_int(q, MC_SENT);
	m->sent_by = col_own(&m->owned, q, MC_SENT_BY);
	m->sent_how = (enum store_sent_how)how;
	return 0;
}

/* Fetch at most one mail row of a started query into out. */
static int mail_one(struct store_mail *out, struct query *q,
		    const char *missing)
{
	int rc = q_step(q);

	if (rc == 1)
		rc = mail_from_row(out, q);
	else if (rc == 0)
		rc = err_set(PB_ENOTFOUND, "state db: %s", missing);
	q_end(q);
	return rc;
}

int store_mail_get(struct store_mail *out, struct store *st,
		   const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX], missing[PB_LOG_QUOTE_MAX + 32];
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_MAIL_GET, "look up mail");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	snprintf(missing, sizeof(missing), "no mail <%s>",
		 quote(qb, sizeof(qb), message_id));
	return mail_one(out, &q, missing);
}

int store_mail_find(struct store_mail *out, struct store *st,
		    const char *project, int64_t iid, int revision, int patch)
{
	char missing[PB_LOG_QUOTE_MAX + 64], qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = check_mr(project, iid);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_MAIL_FIND, "find mail");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_int(&q, 3, revision);
	q_int(&q, 4, patch);
	snprintf(missing, sizeof(missing), "no mail %s!%lld v%d %d",
		 quote(qb, sizeof(qb), project), (long long)iid, revision,
		 patch);
	return mail_one(out, &q, missing);
}

int store_mail_list_revision(struct store_mail_list *out, struct store *st,
			     const char *project, int64_t iid, int revision)
{
	struct query q;
	int rc;

	rc = check_mr(project, iid);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_MAIL_LIST_REVISION, "list mails");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_int(&q, 3, revision);
	while ((rc = q_step(&q)) == 1) {
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		store_mail_init(&out->items[out->nr]);
		rc = mail_from_row(&out->items[out->nr], &q);
		if (rc)
			break;
		out->nr++;
	}
	q_end(&q);
	return rc;
}

/* ---- the thread map's copy on another store ---------------------------- */

/* One page of the thread map after (created, message_id), in order. */
static int mail_page(struct store_mail_list *out, struct store *st,
		     int64_t created, const char *after, int64_t limit)
{
	struct query q;
	int rc;

	rc = q_start(&q, st, S_MAIL_SINCE, "list the thread map");
	if (rc)
		return rc;
	q_int(&q, 1, created);
	q_text(&q, 2, after);
	q_int(&q, 3, limit);
	while ((rc = q_step(&q)) == 1) {
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		store_mail_init(&out->items[out->nr]);
		rc = mail_from_row(&out->items[out->nr], &q);
		if (rc)
			break;
		out->nr++;
	}
	q_end(&q);
	return rc;
}

/* The row as it is, then its changing columns (state, sent, sent by). */
static int mirror_revision(struct store *dst, const struct store_revision *r)
{
	struct query q;
	int rc;

	rc = q_start(&q, dst, S_MIRROR_REV, "copy a revision");
	if (rc)
		return rc;
	q_text(&q, 1 + RC_PROJECT, r->project);
	q_int(&q, 1 + RC_IID, r->iid);
	q_int(&q, 1 + RC_REVISION, r->revision);
	q_text(&q, 1 + RC_HEAD, r->head_sha);
	q_opt(&q, 1 + RC_BASE, r->base_sha);
	q_opt(&q, 1 + RC_START, r->start_sha);
	q_int_or_null(&q, 1 + RC_VERSION, r->version_id);
	q_opt(&q, 1 + RC_PATCH_ID, r->patch_id);
	q_int(&q, 1 + RC_PATCHES, r->patches);
	q_opt(&q, 1 + RC_COVER, r->cover_msgid);
	q_text(&q, 1 + RC_STATE, revision_state_names[r->state]);
	q_int(&q, 1 + RC_CREATED, r->created);
	q_int_or_null(&q, 1 + RC_SENT, r->sent);
	rc = q_exec(&q);
	q_end(&q);
	if (rc)
		return rc;
	rc = q_start(&q, dst, S_MIRROR_REV_STATE, "copy a revision's state");
	if (rc)
		return rc;
	q_text(&q, 1, r->project);
	q_int(&q, 2, r->iid);
	q_int(&q, 3, r->revision);
	q_int(&q, 4, r->patches);
	q_opt(&q, 5, r->cover_msgid);
	q_text(&q, 6, revision_state_names[r->state]);
	q_int_or_null(&q, 7, r->sent);
	rc = q_exec(&q);
	q_end(&q);
	return rc;
}

static int mirror_mail(struct store *dst, const struct store_mail *m)
{
	struct query q;
	int rc;

	rc = q_start(&q, dst, S_MIRROR_MAIL, "copy a mail");
	if (rc)
		return rc;
	bind_mail(&q, m);
	q_int(&q, 1 + MC_CREATED, m->created);
	q_int_or_null(&q, 1 + MC_SENT, m->sent);
	q_opt(&q, 1 + MC_SENT_BY, m->sent_by);
	rc = q_exec(&q);
	q_end(&q);
	if (rc)
		return rc;
	rc = q_start(&q, dst, S_MIRROR_MAIL_STATE, "copy a mail's state");
	if (rc)
		return rc;
	q_text(&q, 1, m->message_id);
	q_text(&q, 2, mail_state_names[m->state]);
	q_int_or_null(&q, 3, m->sent);
	q_opt(&q, 4, m->sent_by);
	rc = q_exec(&q);
	q_end(&q);
	return rc;
}

/* One page into dst, in one transaction, with the revisions it names. */
static int mirror_page(struct store *dst, struct store *src,
		       const struct store_mail_list *page)
{
	struct store_revision rev;
	size_t i;
	int rc;

	store_revision_init(&rev);
	rc = store_begin(dst);
	if (rc)
		return rc;
	for (i = 0; !rc && i < page->nr; i++) {
		const struct store_mail *m = &page->items[i];

		if (m->revision > 0 &&
		    (!rev.project || strcmp(rev.project, m->project) ||
		     rev.iid != m->iid || rev.revision != m->revision)) {
			rc = store_revision_get(&rev, src, m->project, m->iid,
						m->revision);
			if (!rc)
				rc = mirror_revision(dst, &rev);
		}
		if (!rc)
			rc = mirror_mail(dst, m);
	}
	store_revision_release(&rev);
	if (rc) {
		store_rollback(dst);
		return rc;
	}
	return store_commit(dst);
}

int store_threadmap_mirror(struct store *dst, struct store *src, int64_t *since,
			   size_t *copied)
{
	struct store_mail_list page = { 0 };
	int64_t created = *since > 0 ? *since : 0, newest = *since;
	char *after = xstrdup("");
	size_t n = 0;
	int rc;

	if (dst->flags != STORE_RW)
		BUG("store_threadmap_mirror into a read-only store");
	for (;;) {
		store_mail_list_release(&page);
		rc = mail_page(&page, src, created, after, STORE_MIRROR_PAGE);
		if (rc || !page.nr)
			break;
		rc = mirror_page(dst, src, &page);
		if (rc)
			break;
		n += page.nr;
		created = page.items[page.nr - 1].created;
		free(after);
		after = xstrdup(page.items[page.nr - 1].message_id);
		if (created > newest)
			newest = created;
		if (page.nr < STORE_MIRROR_PAGE)
			break;
	}
	store_mail_list_release(&page);
	free(after);
	if (copied)
		*copied = n;
	if (!rc)
		*since = newest;
	return rc;
}

int store_mail_by_discussion(struct store_mail *out, struct store *st,
			     const char *project, const char *discussion_id)
{
	char missing[PB_LOG_QUOTE_MAX + 64], qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	if ((rc = check_str("project", project, STORE_PROJECT_MAX, 1)) ||
	    (rc = check_str("discussion id", discussion_id, STORE_FORGE_ID_MAX,
			    1)))
		return rc;
	rc = q_start(&q, st, S_MAIL_BY_DISCUSSION, "find discussion mail");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_text(&q, 2, discussion_id);
	snprintf(missing, sizeof(missing), "no mail for discussion %s",
		 quote(qb, sizeof(qb), discussion_id));
	return mail_one(out, &q, missing);
}

int store_mail_by_note(struct store_mail *out, struct store *st,
		       const char *project, int64_t note_id)
{
	char missing[64];
	struct query q;
	int rc;

	rc = check_str("project", project, STORE_PROJECT_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_MAIL_BY_NOTE, "find note mail");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, note_id);
	snprintf(missing, sizeof(missing), "no mail for note %lld",
		 (long long)note_id);
	return mail_one(out, &q, missing);
}

/* Mailed revisions. */

void store_revision_init(struct store_revision *rev)
{
	memset(rev, 0, sizeof(*rev));
}

void store_revision_release(struct store_revision *rev)
{
	strlist_release(&rev->owned);
	store_revision_init(rev);
}

static int revision_from_row(struct store_revision *rev, struct query *q)
{
	int state;

	state = col_enum(q, RC_STATE, revision_state_names,
			 ARRAY_SIZE(revision_state_names));
	if (state < 0)
		return state;
	store_revision_release(rev);
	rev->project = col_own(&rev->owned, q, RC_PROJECT);
	rev->iid = col_int(q, RC_IID);
	rev->revision = (int)col_int(q, RC_REVISION);
	rev->head_sha = col_own(&rev->owned, q, RC_HEAD);
	rev->base_sha = col_own(&rev->owned, q, RC_BASE);
	rev->start_sha = col_own(&rev->owned, q, RC_START);
	rev->version_id = col_int(q, RC_VERSION);
	rev->patch_id = col_own(&rev->owned, q, RC_PATCH_ID);
	rev->patches = (int)col_int(q, RC_PATCHES);
	rev->cover_msgid = col_own(&rev->owned, q, RC_COVER);
	rev->state = (enum store_revision_state)state;
	rev->created = col_int(q, RC_CREATED);
	rev->sent = col_int(q, RC_SENT);
	return 0;
}

static int revision_one(struct store_revision *out, struct query *q,
			const char *project, int64_t iid)
{
	char qb[PB_LOG_QUOTE_MAX];
	int rc = q_step(q);

	if (rc == 1)
		rc = revision_from_row(out, q);
	else if (rc == 0)
		rc = err_set(PB_ENOTFOUND,
			     "state db: %s: no such revision of %s!%lld",
			     q->what, quote(qb, sizeof(qb), project),
			     (long long)iid);
	q_end(q);
	return rc;
}

struct rev_start {
	const struct store_revision *rev;
	int revision;
	int taken; /* the head was started before */
};

/* The unit of store_revision_start(): allocate and insert, or find the
 * head started before. */
static int rev_start_unit(struct store *st, void *arg)
{
	struct rev_start *r = arg;
	const struct store_revision *rev = r->rev;
	struct store_revision old = { 0 };
	struct query q;
	int rc;

	r->revision = 0;
	r->taken = 0;
	rc = q_start(&q, st, S_REV_START, "start revision");
	if (rc)
		return rc;
	q_text(&q, 1, rev->project);
	q_int(&q, 2, rev->iid);
	q_text(&q, 3, rev->head_sha);
	q_opt(&q, 4, rev->base_sha);
	q_opt(&q, 5, rev->start_sha);
	q_int_or_null(&q, 6, rev->version_id);
	q_opt(&q, 7, rev->patch_id);
	q_int(&q, 8, rev->patches);
	q_opt(&q, 9, rev->cover_msgid);
	q_int(&q, 10, now());
	rc = q_step(&q);
	if (rc == 1) {
		r->revision = (int)col_int(&q, 0);
		rc = q_exec(&q);
	}
	q_end(&q);
	if (rc < 0 || r->revision)
		return rc;
	/* Nothing inserted: the head on this base (or, between two
	 * writers, the number - which a unit never sees) was taken. */
	rc = store_revision_by_base(&old, st, rev->project, rev->iid,
				    rev->head_sha, rev->base_sha);
	if (rc == PB_ENOTFOUND)
		return err_set(PB_ETEMP,
			       "state db %s: revision number taken meanwhile",
			       st->name);
	if (rc)
		return rc;
	r->revision = old.revision;
	r->taken = 1;
	store_revision_release(&old);
	return 0;
}

int store_revision_start(int *revision, struct store *st,
			 const struct store_revision *rev)
{
	struct rev_start r;
	int rc;

	*revision = 0;
	if ((rc = check_mr(rev->project, rev->iid)) ||
	    (rc = check_sha("head sha", rev->head_sha, 1)) ||
	    (rc = check_sha("base sha", rev->base_sha, 0)) ||
	    (rc = check_sha("start sha", rev->start_sha, 0)) ||
	    (rc = check_str("patch id", rev->patch_id, STORE_SHA_MAX, 0)) ||
	    (rc = check_str("cover Message-ID", rev->cover_msgid,
			    STORE_MSGID_MAX, 0)))
		return rc;
	if (rev->patches < 0 || rev->version_id < 0)
		return err_set(PB_EINVAL, "state db: bad revision numbers");

	memset(&r, 0, sizeof(r));
	r.rev = rev;
	/* "Highest plus one" must not race: a unit. */
	rc = unit_run(st, rev_start_unit, &r);
	if (rc)
		return rc;
	*revision = r.revision;
	if (r.taken)
		return err_set(PB_EEXISTS,
			       "state db: head %s on base %s was already "
			       "mailed as v%d",
			       rev->head_sha,
			       rev->base_sha ? rev->base_sha : "(none)",
			       *revision);
	return 0;
}

int store_revision_mark_sent(struct store *st, const char *project, int64_t iid,
			     int revision)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = check_mr(project, iid);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_REV_MARK_SENT, "mark revision sent");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_int(&q, 3, revision);
	q_int(&q, 4, now());
	rc = q_exec(&q);
	if (!rc && q.changes == 0)
		rc = err_set(PB_ENOTFOUND, "state db: no revision %s!%lld v%d",
			     quote(qb, sizeof(qb), project), (long long)iid,
			     revision);
	q_end(&q);
	return rc;
}

int store_revision_get(struct store_revision *out, struct store *st,
		       const char *project, int64_t iid, int revision)
{
	struct query q;
	int rc;

	rc = check_mr(project, iid);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_REV_GET, "get revision");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_int(&q, 3, revision);
	return revision_one(out, &q, project, iid);
}

int store_revision_latest(struct store_revision *out, struct store *st,
			  const char *project, int64_t iid)
{
	struct query q;
	int rc;

	rc = check_mr(project, iid);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_REV_LATEST, "latest revision");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	return revision_one(out, &q, project, iid);
}

int store_revision_by_head(struct store_revision *out, struct store *st,
			   const char *project, int64_t iid,
			   const char *head_sha)
{
	struct query q;
	int rc;

	if ((rc = check_mr(project, iid)) ||
	    (rc = check_sha("head sha", head_sha, 1)))
		return rc;
	rc = q_start(&q, st, S_REV_BY_HEAD, "revision by head");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_text(&q, 3, head_sha);
	return revision_one(out, &q, project, iid);
}

int store_revision_by_base(struct store_revision *out, struct store *st,
			   const char *project, int64_t iid,
			   const char *head_sha, const char *base_sha)
{
	struct query q;
	int rc;

	if ((rc = check_mr(project, iid)) ||
	    (rc = check_sha("head sha", head_sha, 1)) ||
	    (rc = check_sha("base sha", base_sha, 0)))
		return rc;
	rc = q_start(&q, st, S_REV_BY_BASE, "revision by head and base");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_text(&q, 3, head_sha);
	q_opt(&q, 4, base_sha);
	return revision_one(out, &q, project, iid);
}

/* Inbound journal. */

void store_inbound_init(struct store_inbound *in)
{
	memset(in, 0, sizeof(*in));
}

void store_inbound_release(struct store_inbound *in)
{
	strlist_release(&in->owned);
	store_inbound_init(in);
}

const char *store_inbound_state_name(enum store_inbound_state state)
{
	return name_of(inbound_state_names, ARRAY_SIZE(inbound_state_names),
		       (size_t)state);
}

int store_inbound_state_from_name(enum store_inbound_state *out,
				  const char *name)
{
	char qb[PB_LOG_QUOTE_MAX];
	int v = name_index(inbound_state_names, ARRAY_SIZE(inbound_state_names),
			   name, name ? strlen(name) : 0);

	if (v < 0)
		return err_set(PB_EINVAL, "unknown inbound state '%s'",
			       quote(qb, sizeof(qb), name));
	*out = (enum store_inbound_state)v;
	return 0;
}

void store_inbound_list_release(struct store_inbound_list *list)
{
	LIST_RELEASE(list, store_inbound_release);
}

static int inbound_from_row(struct store_inbound *in, struct query *q)
{
	int state;

	state = col_enum(q, IC_STATE, inbound_state_names,
			 ARRAY_SIZE(inbound_state_names));
	if (state < 0)
		return state;
	store_inbound_release(in);
	in->message_id = col_own(&in->owned, q, IC_MSGID);
	in->spool_name = col_own(&in->owned, q, IC_SPOOL);
	in->project = col_own(&in->owned, q, IC_PROJECT);
	in->iid = col_int(q, IC_IID);
	in->revision = (int)col_int(q, IC_REVISION);
	in->patch = (int)col_int(q, IC_PATCH);
	in->classification = col_own(&in->owned, q, IC_CLASS);
	in->state = (enum store_inbound_state)state;
	in->attempts = (int)col_int(q, IC_ATTEMPTS);
	in->next_attempt = col_int(q, IC_NEXT);
	in->last_error = col_own(&in->owned, q, IC_ERROR);
	in->created = col_int(q, IC_CREATED);
	in->updated = col_int(q, IC_UPDATED);
	in->spooled_by = col_own(&in->owned, q, IC_SPOOLED_BY);
	in->claimed_by = col_own(&in->owned, q, IC_CLAIMED_BY);
	in->lease_until = col_int(q, IC_LEASE);
	return 0;
}

static int inbound_one(struct store_inbound *out, struct query *q,
		       const char *missing)
{
	int rc = q_step(q);

	if (rc == 1)
		rc = inbound_from_row(out, q);
	else if (rc == 0)
		rc = err_set(PB_ENOTFOUND, "state db: %s", missing);
	q_end(q);
	return rc;
}

int store_inbound_record(struct store *st, const struct store_inbound *in)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int64_t t = now();
	int rc, target = in->project && *in->project;

	if ((rc = check_str("Message-ID", in->message_id, STORE_MSGID_MAX,
			    1)) ||
	    (rc = check_str("spool name", in->spool_name, STORE_SPOOL_NAME_MAX,
			    1)) ||
	    (rc = check_token("classification", in->classification)))
		return rc;
	if (strchr(in->spool_name, '/') || in->spool_name[0] == '.')
		return err_set(PB_EINVAL, "state db: bad spool name '%s'",
			       quote(qb, sizeof(qb), in->spool_name));
	if (target && ((rc = check_mr(in->project, in->iid))))
		return rc;
	if (target && (in->revision < 0 || in->patch < 0))
		return err_set(PB_EINVAL, "state db: bad inbound target");
	if (in->next_attempt < 0)
		return err_set(PB_EINVAL, "state db: bad next attempt time");
	if ((!in->spool_record && in->spool_record_len) ||
	    in->spool_record_len > STORE_SPOOL_RECORD_MAX)
		return err_set(PB_EINVAL,
			       "state db: bad spool record (%zu "
			       "bytes)",
			       in->spool_record_len);

	rc = q_start(&q, st, S_IN_RECORD, "record inbound mail");
	if (rc)
		return rc;
	q_text(&q, 1, in->message_id);
	q_text(&q, 2, in->spool_name);
	q_opt(&q, 3, target ? in->project : NULL);
	q_int_or_null(&q, 4, target ? in->iid : 0);
	q_int_or_null(&q, 5, target ? in->revision : 0);
	if (target)
		q_int(&q, 6, in->patch);
	else
		q_int_or_null(&q, 6, 0);
	q_text(&q, 7, in->classification);
	q_int(&q, 8, in->next_attempt ? in->next_attempt : t);
	q_int(&q, 9, t);
	q_text(&q, 10, st->host);
	q_blob(&q, 11, in->spool_record, in->spool_record_len);
	rc = q_exec(&q);
	if (!rc && q.changes == 0)
		rc = err_set(PB_EEXISTS,
			     "state db: inbound mail <%s> already recorded",
			     quote(qb, sizeof(qb), in->message_id));
	q_end(&q);
	return rc;
}

int store_inbound_claim(struct store_inbound *out, struct store *st,
			int64_t when)
{
	struct query q;
	int64_t t = now();
	int rc;

	rc = q_start(&q, st, S_IN_CLAIM, "claim inbound mail");
	if (rc)
		return rc;
	q_int(&q, 1, when);
	q_int(&q, 2, t);
	q_text(&q, 3, st->host);
	q_int(&q, 4, t + st->lease);
	q_int(&q, 5, t - st->lease);
	rc = q_step(&q);
	if (rc == 1) {
		rc = inbound_from_row(out, &q);
		if (!rc)
			rc = q_exec(&q);
	} else if (rc == 0) {
		rc = err_set(PB_ENOTFOUND, "state db: no inbound mail is due");
	}
	q_end(&q);
	return rc;
}

/*
 * Who holds the claim of a row (stmt selects claimed_by and lease_until
 * by Message-ID): 0 when nobody else does - no claim, this host's, or
 * (live) one that expired; PB_EEXISTS naming the host when another host
 * does; *found 0 when there is no such row.  what names the row.
 */
static int claim_holder(int *found, struct store *st, enum stmt_id stmt,
			const char *message_id, const char *what, int live)
{
	char qb[PB_LOG_QUOTE_MAX], hb[PB_LOG_QUOTE_MAX];
	struct query q;
	char *holder = NULL;
	int64_t until = 0;
	int rc;

	*found = 0;
	rc = q_start(&q, st, stmt, "look up a claim");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	rc = q_step(&q);
	if (rc == 1) {
		*found = 1;
		holder = col_str(&q, 0);
		until = col_int(&q, 1);
		rc = 0;
	}
	q_end(&q);
	if (!rc && holder && strcmp(holder, st->host) &&
	    (!live || until > now()))
		rc = err_set(PB_EEXISTS,
			     "state db: %s <%s> is claimed by host %s (until "
			     "%lld)",
			     what, quote(qb, sizeof(qb), message_id),
			     quote(hb, sizeof(hb), holder), (long long)until);
	free(holder);
	return rc;
}

/*
 * Who holds the claim of an applying row: 0 when it is st's own (or the
 * row has no owner - from before schema 6 - or is not applying),
 * PB_EEXISTS, naming the host, when it is another host's (expired or
 * not: only a claim takes it over).
 */
static int inbound_holder(struct store *st, const char *message_id)
{
	int found;

	return claim_holder(&found, st, S_IN_HOLDER, message_id, "inbound mail",
			    0);
}

int store_inbound_renew(struct store *st, const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_IN_RENEW, "renew a claim");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_text(&q, 2, st->host);
	q_int(&q, 3, now() + st->lease);
	rc = q_exec(&q);
	q_end(&q);
	if (rc || q.changes)
		return rc;
	rc = inbound_holder(st, message_id);
	if (!rc)
		rc = err_set(PB_ENOTFOUND,
			     "state db: inbound mail <%s> is not claimed by "
			     "this host",
			     quote(qb, sizeof(qb), message_id));
	return rc;
}

int store_inbound_spool_record(char **out, size_t *len, struct store *st,
			       const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	*out = NULL;
	*len = 0;
	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_IN_SPOOL_RECORD, "read a spool record");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	rc = q_step(&q);
	if (rc == 1) {
		*out = col_blob(&q, 0, len);
		rc = 0;
	}
	q_end(&q);
	if (!rc && !*out)
		rc = err_set(PB_ENOTFOUND,
			     "state db: no spool record kept for <%s>",
			     quote(qb, sizeof(qb), message_id));
	return rc;
}

/* Why an update of an inbound row changed nothing. */
static int inbound_not_applying(struct store *st, const char *message_id,
				const char *action)
{
	struct store_inbound cur = { 0 };
	char qb[PB_LOG_QUOTE_MAX];
	int rc = store_inbound_get(&cur, st, message_id);

	if (!rc && cur.state == STORE_INBOUND_APPLYING)
		rc = inbound_holder(st, message_id);
	if (!rc)
		rc = err_set(PB_EINVAL,
			     "state db: cannot %s inbound mail <%s>: it is "
			     "%s, not applying",
			     action, quote(qb, sizeof(qb), message_id),
			     inbound_state_names[cur.state]);
	store_inbound_release(&cur);
	return rc;
}

static int inbound_update(struct store *st, const char *message_id,
			  enum store_inbound_state state, int64_t next,
			  const char *text, const char *action)
{
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_IN_FINISH, action);
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_text(&q, 2, inbound_state_names[state]);
	q_int_or_null(&q, 3, next); /* 0: keep */
	q_error(&q, 4, text);
	q_int(&q, 5, now());
	q_text(&q, 6, st->host);
	rc = q_exec(&q);
	q_end(&q);
	if (!rc && q.changes == 0)
		rc = inbound_not_applying(st, message_id, action);
	return rc;
}

int store_inbound_finish(struct store *st, const char *message_id,
			 enum store_inbound_state result, const char *reason)
{
	if (result != STORE_INBOUND_APPLIED &&
	    result != STORE_INBOUND_IGNORED && result != STORE_INBOUND_DEAD)
		return err_set(PB_EINVAL,
			       "state db: an inbound mail cannot finish as %s",
			       store_inbound_state_name(result));
	return inbound_update(st, message_id, result, 0, reason, "finish");
}

int store_inbound_retry(struct store *st, const char *message_id,
			int64_t next_attempt, const char *error)
{
	if (next_attempt <= 0)
		return err_set(PB_EINVAL, "state db: bad retry time");
	return inbound_update(st, message_id, STORE_INBOUND_FAILED,
			      next_attempt, error, "retry");
}

int store_inbound_wait(struct store *st, const char *message_id,
		       int64_t next_attempt, const char *why)
{
	struct query q;
	int rc;

	if (next_attempt <= 0)
		return err_set(PB_EINVAL, "state db: bad retry time");
	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_IN_WAIT, "wait");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, next_attempt);
	q_error(&q, 3, why);
	q_int(&q, 4, now());
	q_text(&q, 5, st->host);
	rc = q_exec(&q);
	q_end(&q);
	if (!rc && q.changes == 0)
		rc = inbound_not_applying(st, message_id, "wait");
	return rc;
}

int store_inbound_place(struct store *st, const char *message_id,
			const char *project, int64_t iid, int revision,
			int patch)
{
	struct query q;
	int rc;

	if (!project || !project[0] || iid <= 0)
		return err_set(PB_EINVAL,
			       "state db: no merge request to "
			       "place <%s> in",
			       message_id);
	rc = q_start(&q, st, S_IN_PLACE, "place inbound mail");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_text(&q, 2, project);
	q_int(&q, 3, iid);
	q_int_or_null(&q, 4, revision > 0 ? revision : 0);
	q_int(&q, 5, patch >= 0 ? patch : 0);
	rc = q_exec(&q);
	q_end(&q);
	return rc;
}

int store_inbound_recover(int *count, struct store *st)
{
	struct query q;
	int rc;

	*count = 0;
	rc = q_start(&q, st, S_IN_RECOVER, "recover inbound mails");
	if (rc)
		return rc;
	q_int(&q, 1, now());
	q_text(&q, 2, st->host);
	rc = q_exec(&q);
	if (!rc)
		*count = q.changes;
	q_end(&q);
	return rc;
}

int store_inbound_list(struct store_inbound_list *out, struct store *st,
		       enum store_inbound_state state, size_t limit)
{
	struct query q;
	int rc;

	if ((size_t)state >= ARRAY_SIZE(inbound_state_names))
		return err_set(PB_EINVAL, "state db: bad inbound state");
	if (limit == 0 || limit > STORE_LIST_MAX)
		limit = STORE_LIST_MAX;
	rc = q_start(&q, st, S_IN_LIST, "list inbound mails");
	if (rc)
		return rc;
	q_text(&q, 1, inbound_state_names[state]);
	q_int(&q, 2, (int64_t)limit);
	while ((rc = q_step(&q)) == 1) {
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		store_inbound_init(&out->items[out->nr]);
		rc = inbound_from_row(&out->items[out->nr], &q);
		if (rc)
			break;
		out->nr++;
	}
	q_end(&q);
	return rc;
}

int store_inbound_get(struct store_inbound *out, struct store *st,
		      const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX], missing[PB_LOG_QUOTE_MAX + 32];
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_IN_GET, "look up inbound mail");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	snprintf(missing, sizeof(missing), "no inbound mail <%s>",
		 quote(qb, sizeof(qb), message_id));
	return inbound_one(out, &q, missing);
}

static void inbound_count_release(struct store_inbound_count *c)
{
	strlist_release(&c->owned);
}

void store_inbound_count_list_release(struct store_inbound_count_list *list)
{
	LIST_RELEASE(list, inbound_count_release);
}

int store_inbound_count(struct store_inbound_count_list *out, struct store *st)
{
	struct store_inbound_count *c;
	struct query q;
	size_t seen = 0;
	int rc, state;

	rc = q_start(&q, st, S_IN_COUNT, "count inbound mails");
	if (rc)
		return rc;
	/* One pair more than allowed tells "too many" from "exactly". */
	q_int(&q, 1, (int64_t)STORE_LIST_MAX + 1);
	while ((rc = q_step(&q)) == 1) {
		if (++seen > STORE_LIST_MAX) {
			rc = err_set(PB_ELIMIT,
				     "state db: inbound mails of more than "
				     "%d (project, state) pairs",
				     STORE_LIST_MAX);
			break;
		}
		state = col_enum(&q, 1, inbound_state_names,
				 ARRAY_SIZE(inbound_state_names));
		if (state < 0) {
			rc = state;
			break;
		}
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		c = &out->items[out->nr++];
		memset(c, 0, sizeof(*c));
		c->project = col_own(&c->owned, &q, 0);
		c->state = (enum store_inbound_state)state;
		c->count = col_int(&q, 2);
	}
	q_end(&q);
	return rc;
}

static void host_release(struct store_host *h)
{
	strlist_release(&h->owned);
}

void store_host_list_release(struct store_host_list *list)
{
	LIST_RELEASE(list, host_release);
}

int store_hosts(struct store_host_list *out, struct store *st)
{
	struct store_host *h;
	struct query q;
	size_t seen = 0;
	int rc;

	rc = q_start(&q, st, S_HOSTS, "list the hosts");
	if (rc)
		return rc;
	q_int(&q, 1, (int64_t)STORE_LIST_MAX + 1);
	while ((rc = q_step(&q)) == 1) {
		if (++seen > STORE_LIST_MAX) {
			rc = err_set(PB_ELIMIT, "state db: more than %d hosts",
				     STORE_LIST_MAX);
			break;
		}
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		h = &out->items[out->nr++];
		memset(h, 0, sizeof(*h));
		h->host = col_own(&h->owned, &q, 0);
		h->journaled = col_int(&q, 1);
		h->applied = col_int(&q, 2);
		h->applying = col_int(&q, 3);
		h->sending = col_int(&q, 4);
		h->sent = col_int(&q, 5);
		h->lease_until = col_int(&q, 6);
		h->last_active = col_int(&q, 7);
	}
	q_end(&q);
	return rc;
}

/* Forge action journal. */

void store_action_init(struct store_action *act)
{
	memset(act, 0, sizeof(*act));
}

void store_action_release(struct store_action *act)
{
	strlist_release(&act->owned);
	store_action_init(act);
}

void store_action_list_release(struct store_action_list *list)
{
	LIST_RELEASE(list, store_action_release);
}

static int action_from_row(struct store_action *act, struct query *q)
{
	int state;

	state = col_enum(q, AC_STATE, action_state_names,
			 ARRAY_SIZE(action_state_names));
	if (state < 0)
		return state;
	store_action_release(act);
	act->message_id = col_own(&act->owned, q, AC_MSGID);
	act->index = (int)col_int(q, AC_INDEX);
	act->kind = col_own(&act->owned, q, AC_KIND);
	act->marker = col_own(&act->owned, q, AC_MARKER);
	act->state = (enum store_action_state)state;
	act->note_id = col_int(q, AC_NOTE);
	act->discussion_id = col_own(&act->owned, q, AC_DISCUSSION);
	act->attempts = (int)col_int(q, AC_ATTEMPTS);
	act->last_error = col_own(&act->owned, q, AC_ERROR);
	act->created = col_int(q, AC_CREATED);
	act->updated = col_int(q, AC_UPDATED);
	act->host = col_own(&act->owned, q, AC_HOST);
	return 0;
}

static int check_action_key(const char *message_id, int index)
{
	int rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);

	if (rc)
		return rc;
	if (index < 0)
		return err_set(PB_EINVAL, "state db: bad action index %d",
			       index);
	return 0;
}

static int action_get(struct store_action *out, struct store *st,
		      const char *message_id, int index)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = q_start(&q, st, S_ACT_GET, "look up forge action");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, index);
	rc = q_step(&q);
	if (rc == 1)
		rc = action_from_row(out, &q);
	else if (rc == 0)
		rc = err_set(PB_ENOTFOUND, "state db: no action %d of <%s>",
			     index, quote(qb, sizeof(qb), message_id));
	q_end(&q);
	return rc;
}

/* Run an insert/update keyed by (message_id, index); *changed rows. */
static int action_write(int *changed, struct query *q)
{
	int rc = q_exec(q);

	*changed = rc ? 0 : (int)q->changes;
	q_end(q);
	return rc;
}

struct act_begin {
	struct store_action *out;
	const char *message_id;
	int index;
	const char *kind;
	const char *marker;
	int fresh;
};

/*
 * The mail's claim, when it is applying: renewed when it is this
 * host's, so the claim lasts while the host keeps working; a claim that
 * moved to another host (this one was too slow, and the other took it
 * over) stops this host before it writes to the forge.  PB_ETEMP then:
 * the caller must stop applying the mail (store_inbound_finish() and
 * _retry() then say who holds it).
 */
static int act_fence(struct store *st, const char *message_id)
{
	struct query q;
	int rc;

	rc = q_start(&q, st, S_IN_RENEW, "renew a claim");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_text(&q, 2, st->host);
	q_int(&q, 3, now() + st->lease);
	rc = q_exec(&q);
	q_end(&q);
	if (rc || q.changes)
		return rc;
	rc = inbound_holder(st, message_id);
	if (rc == PB_EEXISTS) {
		char msg[PB_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", err_msg());
		return err_set(PB_ETEMP, "%s; this host stops", msg);
	}
	return rc;
}

static int act_begin_unit(struct store *st, void *arg)
{
	struct act_begin *a = arg;
	struct query q;
	int64_t t = now();
	int rc, changed = 0;

	a->fresh = 0;
	rc = act_fence(st, a->message_id);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_ACT_INSERT, "journal forge action");
	if (rc)
		return rc;
	q_text(&q, 1, a->message_id);
	q_int(&q, 2, a->index);
	q_text(&q, 3, a->kind);
	q_text(&q, 4, a->marker);
	q_int(&q, 5, t);
	q_text(&q, 6, st->host);
	rc = action_write(&a->fresh, &q);
	if (rc)
		return rc;
	if (!a->fresh) {
		/* Seen before: count the attempt unless it is done. */
		rc = q_start(&q, st, S_ACT_AGAIN, "journal forge action");
		if (rc)
			return rc;
		q_text(&q, 1, a->message_id);
		q_int(&q, 2, a->index);
		q_int(&q, 3, t);
		q_text(&q, 4, st->host);
		rc = action_write(&changed, &q);
		if (rc)
			return rc;
	}
	return action_get(a->out, st, a->message_id, a->index);
}

int store_action_begin(struct store_action *out, struct store *st,
		       const char *message_id, int index, const char *kind,
		       const char *marker)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct act_begin a;
	int rc;

	if ((rc = check_action_key(message_id, index)) ||
	    (rc = check_token("action kind", kind)) ||
	    (rc = check_str("marker", marker, STORE_MARKER_MAX, 1)))
		return rc;
	a.out = out;
	a.message_id = message_id;
	a.index = index;
	a.kind = kind;
	a.marker = marker;
	a.fresh = 0;
	rc = unit_run(st, act_begin_unit, &a);
	if (!rc && !a.fresh)
		rc = err_set(PB_EEXISTS,
			     "state db: action %d of <%s> was begun before "
			     "(%s, attempt %d)",
			     index, quote(qb, sizeof(qb), message_id),
			     action_state_names[out->state], out->attempts);
	return rc;
}

int store_action_complete(struct store *st, const char *message_id, int index,
			  int64_t note_id, const char *discussion_id)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc, changed = 0;

	if ((rc = check_action_key(message_id, index)) ||
	    (rc = check_str("discussion id", discussion_id, STORE_FORGE_ID_MAX,
			    0)))
		return rc;
	if (note_id < 0)
		return err_set(PB_EINVAL, "state db: bad note id");
	rc = q_start(&q, st, S_ACT_COMPLETE, "complete forge action");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, index);
	q_int_or_null(&q, 3, note_id);
	q_opt(&q, 4, discussion_id);
	q_int(&q, 5, now());
	rc = action_write(&changed, &q);
	if (!rc && !changed)
		rc = err_set(PB_ENOTFOUND, "state db: no action %d of <%s>",
			     index, quote(qb, sizeof(qb), message_id));
	return rc;
}

int store_action_fail(struct store *st, const char *message_id, int index,
		      const char *error)
{
	struct store_action cur = { 0 };
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc, changed = 0;

	rc = check_action_key(message_id, index);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_ACT_FAIL, "fail forge action");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, index);
	q_error(&q, 3, error);
	q_int(&q, 4, now());
	rc = action_write(&changed, &q);
	if (rc || changed)
		return rc;
	/* Missing, or done already. */
	rc = action_get(&cur, st, message_id, index);
	if (!rc)
		rc = err_set(PB_EEXISTS,
			     "state db: action %d of <%s> is done already",
			     index, quote(qb, sizeof(qb), message_id));
	store_action_release(&cur);
	return rc;
}

int store_action_list(struct store_action_list *out, struct store *st,
		      const char *message_id)
{
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_ACT_LIST, "list forge actions");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	while ((rc = q_step(&q)) == 1) {
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		store_action_init(&out->items[out->nr]);
		rc = action_from_row(&out->items[out->nr], &q);
		if (rc)
			break;
		out->nr++;
	}
	q_end(&q);
	return rc;
}

/* Trailer verdicts. */

struct verdicts_set {
	const char *message_id;
	const struct strlist *verdicts;
};

static int verdicts_set_unit(struct store *st, void *arg)
{
	struct verdicts_set *v = arg;
	struct query q;
	size_t i;
	int rc;

	rc = q_start(&q, st, S_VERDICT_CLEAR, "clear trailer verdicts");
	if (!rc) {
		q_text(&q, 1, v->message_id);
		rc = q_exec(&q);
		q_end(&q);
	}
	for (i = 0; !rc && i < v->verdicts->nr && i < STORE_VERDICTS_MAX; i++) {
		rc = q_start(&q, st, S_VERDICT_PUT, "record a trailer verdict");
		if (rc)
			break;
		q_text(&q, 1, v->message_id);
		q_int(&q, 2, (int64_t)i);
		q_error(&q, 3,
			v->verdicts->items[i][0] ? v->verdicts->items[i] : "-");
		rc = q_exec(&q);
		q_end(&q);
	}
	return rc;
}

int store_verdicts_set(struct store *st, const char *message_id,
		       const struct strlist *verdicts)
{
	struct verdicts_set v;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	v.message_id = message_id;
	v.verdicts = verdicts;
	return unit_run(st, verdicts_set_unit, &v);
}

int store_verdicts_get(struct strlist *out, struct store *st,
		       const char *message_id)
{
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_VERDICT_LIST, "list trailer verdicts");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	while ((rc = q_step(&q)) == 1 && out->nr < STORE_VERDICTS_MAX)
		strlist_push_owned(out, col_str(&q, 0));
	q_end(&q);
	return rc > 0 ? 0 : rc;
}

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
	rc = q_step(&q);
	if (rc == 1) {
		*n = col_int(&q, 0);
		rc = 0;
	}
	q_end(&q);
	return rc;
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

/* Revision listing. */

void store_revision_list_release(struct store_revision_list *list)
{
	LIST_RELEASE(list, store_revision_release);
}

static int64_t list_limit(size_t limit)
{
	return limit && limit < STORE_LIST_MAX ? (int64_t)limit :
						 STORE_LIST_MAX;
}

int store_revision_list(struct store_revision_list *out, struct store *st,
			const char *project, size_t limit)
{
	struct query q;
	int rc;

	if (project) {
		rc = check_str("project", project, STORE_PROJECT_MAX, 1);
		if (rc)
			return rc;
		rc = q_start(&q, st, S_REV_LIST, "list revisions");
		if (rc)
			return rc;
		q_text(&q, 1, project);
		q_int(&q, 2, list_limit(limit));
	} else {
		rc = q_start(&q, st, S_REV_LIST_ALL, "list revisions");
		if (rc)
			return rc;
		q_int(&q, 1, list_limit(limit));
	}
	while ((rc = q_step(&q)) == 1) {
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		store_revision_init(&out->items[out->nr]);
		rc = revision_from_row(&out->items[out->nr], &q);
		if (rc)
			break;
		out->nr++;
	}
	q_end(&q);
	return rc;
}

/* Outbound mail queue. */

void store_outmail_init(struct store_outmail *m)
{
	memset(m, 0, sizeof(*m));
}

void store_outmail_release(struct store_outmail *m)
{
	strlist_release(&m->owned);
	store_outmail_init(m);
}

const char *store_outmail_state_name(enum store_outmail_state state)
{
	return name_of(outmail_state_names, ARRAY_SIZE(outmail_state_names),
		       (size_t)state);
}

void store_outmail_list_release(struct store_outmail_list *list)
{
	LIST_RELEASE(list, store_outmail_release);
}

static int outmail_from_row(struct store_outmail *m, struct query *q)
{
	int state;

	state = col_enum(q, OC_STATE, outmail_state_names,
			 ARRAY_SIZE(outmail_state_names));
	if (state < 0)
		return state;
	store_outmail_release(m);
	m->message_id = col_own(&m->owned, q, OC_MSGID);
	m->project = col_own(&m->owned, q, OC_PROJECT);
	m->iid = col_int(q, OC_IID);
	m->revision = (int)col_int(q, OC_REVISION);
	m->patch = (int)col_int(q, OC_PATCH);
	m->envelope_from = col_own(&m->owned, q, OC_FROM);
	m->recipients = col_own(&m->owned, q, OC_RCPTS);
	m->message = col_own_blob(&m->owned, q, OC_MESSAGE, &m->message_len);
	m->state = (enum store_outmail_state)state;
	m->attempts = (int)col_int(q, OC_ATTEMPTS);
	m->next_attempt = col_int(q, OC_NEXT);
	m->last_error = col_own(&m->owned, q, OC_ERROR);
	m->created = col_int(q, OC_CREATED);
	m->updated = col_int(q, OC_UPDATED);
	m->claimed_by = col_own(&m->owned, q, OC_CLAIMED_BY);
	m->lease_until = col_int(q, OC_LEASE);
	m->handed = col_int(q, OC_HANDED);
	return 0;
}

static int outmail_missing(const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX];

	return err_set(PB_ENOTFOUND, "state db: mail <%s> is not queued",
		       quote(qb, sizeof(qb), message_id));
}

int store_outmail_put(struct store *st, const struct store_outmail *m)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc, queued = 0, mapped = 0;

	if ((rc = check_str("Message-ID", m->message_id, STORE_MSGID_MAX, 1)) ||
	    (rc = check_str("envelope sender", m->envelope_from,
			    STORE_MSGID_MAX, 1)) ||
	    (rc = check_str("recipients", m->recipients, STORE_DIFF_MAX, 1)))
		return rc;
	if (!m->message || !m->message_len || m->message_len > STORE_DIFF_MAX)
		return err_set(PB_EINVAL, "state db: bad message (%zu bytes)",
			       m->message_len);
	rc = q_start(&q, st, S_OUT_PUT, "queue mail");
	if (rc)
		return rc;
	q_text(&q, 1, m->message_id);
	q_text(&q, 2, m->envelope_from);
	q_text(&q, 3, m->recipients);
	q_blob(&q, 4, m->message, m->message_len);
	q_int(&q, 5, now());
	rc = q_exec(&q);
	if (!rc && q.changes == 1) {
		q_end(&q);
		return 0;
	}
	q_end(&q);
	if (rc)
		return rc;
	/* Nothing inserted: queued already, or no thread-map row. */
	rc = q_start(&q, st, S_OUT_EXISTS, "queue mail");
	if (rc)
		return rc;
	q_text(&q, 1, m->message_id);
	rc = q_step(&q);
	if (rc == 1) {
		queued = (int)col_int(&q, 0);
		mapped = (int)col_int(&q, 1);
		rc = 0;
	}
	q_end(&q);
	if (rc)
		return rc;
	if (queued)
		return err_set(PB_EEXISTS,
			       "state db: mail <%s> is queued "
			       "already",
			       quote(qb, sizeof(qb), m->message_id));
	if (!mapped)
		return err_set(PB_ENOTFOUND,
			       "state db: mail <%s> is not in the thread map",
			       quote(qb, sizeof(qb), m->message_id));
	return err_set(PB_ERROR, "state db: mail <%s> was not queued",
		       quote(qb, sizeof(qb), m->message_id));
}

int store_outmail_get(struct store_outmail *out, struct store *st,
		      const char *message_id)
{
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OUT_GET, "get queued mail");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	rc = q_step(&q);
	if (rc == 1)
		rc = outmail_from_row(out, &q);
	else if (rc == 0)
		rc = outmail_missing(message_id);
	q_end(&q);
	return rc;
}

int store_outmail_list(struct store_outmail_list *out, struct store *st,
		       const char *project, int64_t iid, size_t limit)
{
	struct query q;
	int rc;

	if (project) {
		rc = check_str("project", project, STORE_PROJECT_MAX, 1);
		if (rc)
			return rc;
	}
	if (iid < 0 || (iid && !project))
		return err_set(PB_EINVAL, "state db: bad MR iid %lld",
			       (long long)iid);
	rc = q_start(&q, st, S_OUT_LIST, "list queued mails");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_int(&q, 3, list_limit(limit));
	while ((rc = q_step(&q)) == 1) {
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		store_outmail_init(&out->items[out->nr]);
		rc = outmail_from_row(&out->items[out->nr], &q);
		if (rc)
			break;
		out->nr++;
	}
	q_end(&q);
	return rc;
}

/* Run an update keyed by Message-ID; PB_ENOTFOUND when nothing changed. */
static int outmail_update(struct query *q, const char *message_id)
{
	int rc = q_exec(q);

	if (!rc && q->changes == 0)
		rc = outmail_missing(message_id);
	q_end(q);
	return rc;
}

/*
 * Who holds an outbound mail's claim: 0 when nobody (never claimed,
 * released, or expired) or this host, PB_EEXISTS naming the host
 * otherwise, PB_ENOTFOUND when the mail is not queued.
 */
static int outmail_holder(struct store *st, const char *message_id)
{
	int found, rc;

	rc = claim_holder(&found, st, S_OUT_HOLDER, message_id, "mail", 1);
	if (!rc && !found)
		rc = outmail_missing(message_id);
	return rc;
}
int store_outmail_claim(struct store *st, const char *message_id)
{
	struct query q;
	int64_t t = now();
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OUT_CLAIM, "claim mail");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_text(&q, 2, st->host);
	q_int(&q, 3, t + st->lease);
	q_int(&q, 4, t);
	rc = q_exec(&q);
	q_end(&q);
	if (rc || q.changes)
		return rc;
	rc = outmail_holder(st, message_id);
	if (!rc) /* released between the two statements: try again later */
		rc = err_set(PB_ETEMP, "state db: mail <%s> changed hands",
			     message_id);
	return rc;
}

/* Run a defer or fail; PB_ENOTFOUND / PB_EEXISTS when nothing changed. */
static int outmail_release(struct query *q, const char *message_id)
{
	int rc = q_exec(q);

	q_end(q);
	if (!rc && q->changes == 0) {
		rc = outmail_holder(q->st, message_id);
		if (!rc)
			rc = outmail_missing(message_id);
	}
	return rc;
}

int store_outmail_hand(struct store *st, const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OUT_HAND, "record a mail handed to the MTA");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, now());
	q_text(&q, 3, st->host);
	rc = q_exec(&q);
	q_end(&q);
	if (rc || q.changes)
		return rc;
	rc = outmail_holder(st, message_id);
	if (!rc) /* released or never claimed by this host */
		rc = err_set(PB_EEXISTS,
			     "state db: mail <%s> is not claimed by this host",
			     quote(qb, sizeof(qb), message_id));
	return rc;
}

int store_outmail_wait(struct store *st, const char *message_id,
		       int64_t next_attempt, const char *error, int counted)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OUT_WAIT, "hold mail");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, next_attempt);
	q_error(&q, 3, error);
	q_int(&q, 4, now());
	q_text(&q, 5, st->host);
	q_int(&q, 6, counted ? 1 : 0);
	rc = q_exec(&q);
	q_end(&q);
	if (rc || q.changes)
		return rc;
	rc = outmail_holder(st, message_id);
	if (!rc)
		rc = err_set(PB_EINVAL,
			     "state db: mail <%s> was not handed to the MTA",
			     quote(qb, sizeof(qb), message_id));
	return rc;
}

int store_outmail_defer(struct store *st, const char *message_id,
			int64_t next_attempt, const char *error)
{
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OUT_DEFER, "defer mail");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, next_attempt);
	q_error(&q, 3, error);
	q_int(&q, 4, now());
	q_text(&q, 5, st->host);
	return outmail_release(&q, message_id);
}

int store_outmail_fail(struct store *st, const char *message_id,
		       const char *error)
{
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OUT_FAIL, "fail mail");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_error(&q, 2, error);
	q_int(&q, 3, now());
	q_text(&q, 4, st->host);
	return outmail_release(&q, message_id);
}

int store_outmail_requeue(int *count, struct store *st, const char *project,
			  int64_t iid)
{
	struct query q;
	int rc;

	*count = 0;
	rc = check_mr(project, iid);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OUT_REQUEUE, "requeue failed mails");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, iid);
	q_int(&q, 3, now());
	rc = q_exec(&q);
	if (!rc)
		*count = (int)q.changes;
	q_end(&q);
	return rc;
}

struct out_sent {
	const char *message_id;
	enum store_sent_how how;
	int revision_done;
};

static int out_sent_unit(struct store *st, void *arg)
{
	struct out_sent *o = arg;
	struct query q;
	int rc, left = -1;

	o->revision_done = 0;
	rc = mark_sent(st, o->message_id, o->how);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_ARCH_FROM_OUT, "archive mail");
	if (rc)
		return rc;
	q_text(&q, 1, o->message_id);
	q_int(&q, 2, now());
	rc = q_exec(&q);
	q_end(&q);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OUT_DELETE, "dequeue mail");
	if (rc)
		return rc;
	q_text(&q, 1, o->message_id);
	rc = outmail_update(&q, o->message_id);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_OUT_LEFT, "dequeue mail");
	if (rc)
		return rc;
	q_text(&q, 1, o->message_id);
	rc = q_step(&q);
	if (rc == 1) {
		left = (int)col_int(&q, 0);
		rc = 0;
	}
	q_end(&q);
	if (rc || left != 0)
		return rc;
	rc = q_start(&q, st, S_OUT_REV_SENT, "mark revision sent");
	if (rc)
		return rc;
	q_text(&q, 1, o->message_id);
	q_int(&q, 2, now());
	rc = q_exec(&q);
	if (!rc)
		o->revision_done = q.changes > 0;
	q_end(&q);
	return rc;
}

int store_outmail_sent(int *revision_done, struct store *st,
		       const char *message_id, enum store_sent_how how)
{
	struct out_sent o;
	int rc;

	*revision_done = 0;
	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	o.message_id = message_id;
	o.how = how;
	o.revision_done = 0;
	rc = unit_run(st, out_sent_unit, &o);
	if (!rc)
		*revision_done = o.revision_done;
	return rc;
}

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

/* The thread map interface (core/threadmap.h) over the store. */

static void tm_mail_copy(struct threadmap_mail *out, const struct store_mail *m)
{
	threadmap_mail_release(out);
	out->message_id = xstrdup(m->message_id ? m->message_id : "");
	out->project = xstrdup(m->project ? m->project : "");
	out->iid = m->iid;
	out->revision = m->revision;
	out->patch = m->patch;
	out->total = m->total;
	if (m->diff && m->diff_len) {
		out->diff = xmalloc(m->diff_len + 1);
		memcpy(out->diff, m->diff, m->diff_len);
		out->diff[m->diff_len] = '\0';
		out->diff_len = m->diff_len;
	}
}

static int tm_mail_get(void *arg, struct threadmap_mail *out,
		       const char *message_id)
{
	struct store_mail m;
	int rc;

	store_mail_init(&m);
	rc = store_mail_get(&m, arg, message_id);
	if (!rc)
		tm_mail_copy(out, &m);
	store_mail_release(&m);
	return rc;
}

static int tm_mail_find(void *arg, struct threadmap_mail *out,
			const char *project, int64_t iid, int revision,
			int patch)
{
	struct store_mail m;
	int rc;

	store_mail_init(&m);
	rc = store_mail_find(&m, arg, project, iid, revision, patch);
	if (!rc)
		tm_mail_copy(out, &m);
	store_mail_release(&m);
	return rc;
}

static void tm_revision_copy(struct threadmap_revision *out,
			     const struct store_revision *r)
{
	threadmap_revision_release(out);
	out->project = xstrdup(r->project ? r->project : "");
	out->iid = r->iid;
	out->revision = r->revision;
	out->patches = r->patches;
}

static int tm_revision_latest(void *arg, struct threadmap_revision *out,
			      const char *project, int64_t iid)
{
	struct store_revision r;
	int rc;

	store_revision_init(&r);
	rc = store_revision_latest(&r, arg, project, iid);
	if (!rc)
		tm_revision_copy(out, &r);
	store_revision_release(&r);
	return rc;
}

static int tm_revision_list(void *arg, struct threadmap_revision_list *out)
{
	struct store_revision_list list = { 0 };
	struct threadmap_revision r;
	size_t i;
	int rc;

	rc = store_revision_list(&list, arg, NULL, 0);
	threadmap_revision_init(&r);
	for (i = 0; !rc && i < list.nr; i++) {
		tm_revision_copy(&r, &list.items[i]);
		threadmap_revision_list_take(out, &r);
	}
	store_revision_list_release(&list);
	return rc;
}

void store_threadmap(struct threadmap *out, struct store *st)
{
	out->mail_get = tm_mail_get;
	out->mail_find = tm_mail_find;
	out->revision_latest = tm_revision_latest;
	out->revision_list = tm_revision_list;
	out->arg = st;
}
