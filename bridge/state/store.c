/*
 * store - the state database on SQLite.  See store.h.
 *
 * Every statement is a constant string in stmt_sql[] below, prepared once
 * per connection (lazily) with bound parameters; nothing here formats SQL.
 * The schema is the ordered list migrations[]: step i takes a database
 * from version i to i + 1 and ends by setting PRAGMA user_version, so a
 * step and its version number cannot drift apart.  A shipped step is
 * never edited; changes go into a new step.
 */
#include "state/store.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/perm.h"
#include "util/printable.h"
#include "util/xalloc.h"

#include <sqlite3.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* RETURNING (3.35) makes "allocate and insert" one statement. */
#if SQLITE_VERSION_NUMBER < 3035000
#error "patchbridge needs SQLite 3.35 or newer"
#endif
#define STORE_SQLITE_MIN 3035000

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* After a clean close the WAL is truncated to nothing; while open it is
 * cut back to this size after each checkpoint. */
#define STORE_WAL_LIMIT "67108864"

static const char *const migrations[] = {
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
};

#define SCHEMA_LATEST ((int)ARRAY_SIZE(migrations))

/* Column lists shared by the SELECTs and the row readers below. */
#define MAIL_COLS                                                       \
	"message_id, project, iid, revision, patch, total, kind,"       \
	" commit_sha, base_sha, start_sha, head_sha, version_id, diff," \
	" discussion_id, note_id, state, created, sent"
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
	" created, updated"
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
};

/* The queue joined with the thread map; ?9 selects the message. */
#define OUT_SELECT                                                    \
	"SELECT o.message_id, t.project, t.iid, t.revision, t.patch," \
	" o.envelope_from, o.recipients, o.message, o.state,"         \
	" o.attempts, o.next_attempt, o.last_error, o.created,"       \
	" o.updated FROM outmail o JOIN thread_map t USING (message_id)"
#define OUT_SELECT_NO_MESSAGE                                         \
	"SELECT o.message_id, t.project, t.iid, t.revision, t.patch," \
	" o.envelope_from, o.recipients, NULL, o.state,"              \
	" o.attempts, o.next_attempt, o.last_error, o.created,"       \
	" o.updated FROM outmail o JOIN thread_map t USING (message_id)"
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
};

#define ACT_COLS                                                  \
	"message_id, action_index, kind, marker, state, note_id," \
	" discussion_id, attempts, last_error, created, updated"
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
};

enum stmt_id {
	S_BEGIN,
	S_BEGIN_IMMEDIATE,
	S_COMMIT,
	S_ROLLBACK,
	S_SAVEPOINT,
	S_RELEASE,
	S_ROLLBACK_TO,
	S_USER_VERSION,
	S_MAIL_PUT,
	S_MAIL_MARK_SENT,
	S_MAIL_GET,
	S_MAIL_FIND,
	S_MAIL_LIST_REVISION,
	S_MAIL_BY_DISCUSSION,
	S_MAIL_BY_NOTE,
	S_REV_START,
	S_REV_MARK_SENT,
	S_REV_GET,
	S_REV_LATEST,
	S_REV_BY_HEAD,
	S_IN_RECORD,
	S_IN_CLAIM,
	S_IN_FINISH,
	S_IN_RECOVER,
	S_IN_LIST,
	S_IN_GET,
	S_IN_COUNT,
	S_ACT_INSERT,
	S_ACT_AGAIN,
	S_ACT_GET,
	S_ACT_COMPLETE,
	S_ACT_FAIL,
	S_ACT_LIST,
	S_CURSOR_GET,
	S_CURSOR_SET,
	S_REV_LIST,
	S_REV_LIST_ALL,
	S_OUT_PUT,
	S_OUT_EXISTS,
	S_OUT_GET,
	S_OUT_LIST,
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

static const char *const stmt_sql[S_NR] = {
	[S_BEGIN] = "BEGIN",
	[S_BEGIN_IMMEDIATE] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
	[S_SAVEPOINT] = "SAVEPOINT store_unit",
	[S_RELEASE] = "RELEASE store_unit",
	[S_ROLLBACK_TO] = "ROLLBACK TO store_unit",
	[S_USER_VERSION] = "PRAGMA user_version",

	[S_MAIL_PUT] = "INSERT INTO thread_map (" MAIL_COLS ")"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
		       " ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"
		       " ON CONFLICT (message_id) DO NOTHING",
	[S_MAIL_MARK_SENT] = "UPDATE thread_map SET state = 'sent',"
			     " sent = COALESCE(sent, ?2)"
			     " WHERE message_id = ?1",
	[S_MAIL_GET] = "SELECT " MAIL_COLS " FROM thread_map"
		       " WHERE message_id = ?1",
	[S_MAIL_FIND] = "SELECT " MAIL_COLS " FROM thread_map"
			" WHERE project = ?1 AND iid = ?2 AND revision = ?3"
			" AND patch = ?4 AND kind IN ('cover', 'patch')",
	[S_MAIL_LIST_REVISION] =
		"SELECT " MAIL_COLS " FROM thread_map"
		" WHERE project = ?1 AND iid = ?2 AND revision = ?3"
		" ORDER BY kind NOT IN ('cover', 'patch'), patch, created,"
		" rowid",
	[S_MAIL_BY_DISCUSSION] = "SELECT " MAIL_COLS " FROM thread_map"
				 " WHERE project = ?1 AND discussion_id = ?2"
				 " ORDER BY created DESC, rowid DESC LIMIT 1",
	[S_MAIL_BY_NOTE] = "SELECT " MAIL_COLS " FROM thread_map"
			   " WHERE project = ?1 AND note_id = ?2"
			   " ORDER BY created, rowid LIMIT 1",

	[S_REV_START] =
		"INSERT INTO revisions (project, iid, revision, head_sha,"
		" base_sha, start_sha, version_id, patch_id, patches,"
		" cover_msgid, state, created)"
		" SELECT ?1, ?2, COALESCE(MAX(revision), 0) + 1, ?3, ?4, ?5,"
		" ?6, ?7, ?8, ?9, 'sending', ?10"
		" FROM revisions WHERE project = ?1 AND iid = ?2"
		" RETURNING revision",
	[S_REV_MARK_SENT] = "UPDATE revisions SET state = 'sent',"
			    " sent = COALESCE(sent, ?4)"
			    " WHERE project = ?1 AND iid = ?2"
			    " AND revision = ?3",
	[S_REV_GET] = "SELECT " REV_COLS " FROM revisions"
		      " WHERE project = ?1 AND iid = ?2 AND revision = ?3",
	[S_REV_LATEST] = "SELECT " REV_COLS " FROM revisions"
			 " WHERE project = ?1 AND iid = ?2"
			 " ORDER BY revision DESC LIMIT 1",
	[S_REV_BY_HEAD] = "SELECT " REV_COLS " FROM revisions"
			  " WHERE project = ?1 AND iid = ?2 AND head_sha = ?3",

	[S_IN_RECORD] = "INSERT INTO inbound (" IN_COLS ")"
			" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'received', 0,"
			" ?8, NULL, ?9, ?9)"
			" ON CONFLICT (message_id) DO NOTHING",
	/* One statement, so the pick and the update are one write. */
	[S_IN_CLAIM] = "UPDATE inbound SET state = 'applying',"
		       " attempts = attempts + 1, updated = ?1"
		       " WHERE message_id = (SELECT message_id FROM inbound"
		       "  WHERE state IN ('received', 'failed')"
		       "  AND next_attempt <= ?1"
		       "  ORDER BY next_attempt, created, rowid LIMIT 1)"
		       " AND state IN ('received', 'failed')"
		       " RETURNING " IN_COLS,
	[S_IN_FINISH] = "UPDATE inbound SET state = ?2,"
			" next_attempt = COALESCE(?3, next_attempt),"
			" last_error = ?4, updated = ?5"
			" WHERE message_id = ?1 AND state = 'applying'",
	[S_IN_RECOVER] = "UPDATE inbound SET state = 'received', updated = ?1"
			 " WHERE state = 'applying'",
	[S_IN_LIST] = "SELECT " IN_COLS " FROM inbound WHERE state = ?1"
		      " ORDER BY created, rowid LIMIT ?2",
	[S_IN_GET] = "SELECT " IN_COLS " FROM inbound WHERE message_id = ?1",
	/* One pass over the table, whatever its size. */
	[S_IN_COUNT] = "SELECT project, state, COUNT(*) FROM inbound"
		       " GROUP BY project, state ORDER BY project, state"
		       " LIMIT ?1",

	[S_ACT_INSERT] = "INSERT INTO forge_actions (" ACT_COLS ")"
			 " VALUES (?1, ?2, ?3, ?4, 'intent', NULL, NULL, 1,"
			 " NULL, ?5, ?5)"
			 " ON CONFLICT (message_id, action_index) DO NOTHING",
	[S_ACT_AGAIN] = "UPDATE forge_actions SET state = 'intent',"
			" attempts = attempts + 1, updated = ?3"
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
	[S_OUT_EXISTS] = "SELECT EXISTS (SELECT 1 FROM outmail"
			 " WHERE message_id = ?1),"
			 " EXISTS (SELECT 1 FROM thread_map"
			 " WHERE message_id = ?1)",
	[S_OUT_GET] = OUT_SELECT " WHERE o.message_id = ?1",
	[S_OUT_LIST] = OUT_SELECT_NO_MESSAGE
	" WHERE (?1 IS NULL OR t.project = ?1)"
	" AND (?2 = 0 OR t.iid = ?2)"
	" ORDER BY t.project, t.iid, t.revision, t.patch,"
	" o.created LIMIT ?3",
	[S_OUT_DEFER] = "UPDATE outmail SET state = 'deferred',"
			" attempts = attempts + 1, next_attempt = ?2,"
			" last_error = ?3, updated = ?4"
			" WHERE message_id = ?1",
	[S_OUT_FAIL] = "UPDATE outmail SET state = 'failed',"
		       " attempts = attempts + 1, last_error = ?2,"
		       " updated = ?3 WHERE message_id = ?1",
	[S_OUT_REQUEUE] = "UPDATE outmail SET state = 'queued',"
			  " next_attempt = 0, updated = ?3"
			  " WHERE state = 'failed' AND message_id IN"
			  " (SELECT message_id FROM thread_map"
			  "  WHERE project = ?1 AND iid = ?2)",
	[S_OUT_DELETE] = "DELETE FROM outmail WHERE message_id = ?1",
	/* Mails of the same revision still queued. */
	[S_OUT_LEFT] = "SELECT COUNT(*) FROM outmail o"
		       " JOIN thread_map t USING (message_id)"
		       " WHERE (t.project, t.iid, t.revision) ="
		       " (SELECT project, iid, revision FROM thread_map"
		       "  WHERE message_id = ?1)",
	[S_OUT_REV_SENT] = "UPDATE revisions SET state = 'sent', sent = ?2"
			   " WHERE state = 'sending'"
			   " AND (project, iid, revision) ="
			   " (SELECT project, iid, revision FROM thread_map"
			   "  WHERE message_id = ?1)",

	[S_ARCH_FROM_OUT] = "INSERT OR IGNORE INTO archive (message_id,"
			    " project, iid, origin, message, created)"
			    " SELECT o.message_id, t.project, t.iid, 'bridge',"
			    " o.message, ?2 FROM outmail o"
			    " JOIN thread_map t USING (message_id)"
			    " WHERE o.message_id = ?1",
	[S_ARCH_PUT] = "INSERT OR IGNORE INTO archive (message_id, project,"
		       " iid, origin, message, created)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
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

struct store {
	sqlite3 *db;
	char *path;
	unsigned flags;
	int in_tx; /* a store_begin() transaction is open */
	sqlite3_stmt *stmts[S_NR];
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

/* Name <-> enum through a table; -1 when unknown. */
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

static int name_index(const char *const *names, size_t nr, const char *s)
{
	size_t i;

	if (!s)
		return -1;
	for (i = 0; i < nr; i++)
		if (names[i] && !strcmp(names[i], s))
			return (int)i;
	return -1;
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
static int db_err(struct store *st, int rc, const char *what)
{
	int code = code_from_sqlite(rc);
	int e = st->db ? sqlite3_system_errno(st->db) : 0;

	if (!code)
		code = PB_ERROR;
	if ((rc & 0xff) == SQLITE_CANTOPEN && e && e != ENOENT)
		code = e == EACCES || e == EPERM ? PB_EPERM : PB_ERROR;
	if (e &&
	    ((rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_IOERR))
		return err_set(code, "state db %s: %s: %s (%s)", st->path, what,
			       sqlite3_errmsg(st->db), strerror(e));
	return err_set(code, "state db %s: %s: %s", st->path, what,
		       st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
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
 * it for the next user.  Binding failures are kept and reported by the
 * first q_step(), so callers bind without checking each call.
 */
struct query {
	struct store *st;
	sqlite3_stmt *stmt;
	const char *what;
	int bind_rc;
};

static int q_start(struct query *q, struct store *st, enum stmt_id id,
		   const char *what)
{
	int rc;

	q->st = st;
	q->stmt = NULL;
	q->what = what;
	q->bind_rc = SQLITE_OK;
	if (!st->stmts[id]) {
		rc = sqlite3_prepare_v3(st->db, stmt_sql[id], -1,
					SQLITE_PREPARE_PERSISTENT,
					&st->stmts[id], NULL);
		if (rc != SQLITE_OK) {
			st->stmts[id] = NULL;
			return db_err(st, rc, what);
		}
	}
	q->stmt = st->stmts[id];
	return 0;
}

static void q_bound(struct query *q, int rc)
{
	if (q->bind_rc == SQLITE_OK)
		q->bind_rc = rc;
}

/* NULL binds SQL NULL. */
static void q_text(struct query *q, int i, const char *s)
{
	if (s)
		q_bound(q, sqlite3_bind_text(q->stmt, i, s, -1, SQLITE_STATIC));
	else
		q_bound(q, sqlite3_bind_null(q->stmt, i));
}

/* An optional text: NULL and "" bind SQL NULL. */
static void q_opt(struct query *q, int i, const char *s)
{
	q_text(q, i, s && *s ? s : NULL);
}

/* A text that may be empty; NULL binds SQL NULL. */
static void q_textn(struct query *q, int i, const char *s, size_t len)
{
	if (s)
		q_bound(q, sqlite3_bind_text64(q->stmt, i, s, len,
					       SQLITE_STATIC, SQLITE_UTF8));
	else
		q_bound(q, sqlite3_bind_null(q->stmt, i));
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
	q_bound(q, sqlite3_bind_int64(q->stmt, i, v));
}

/* 0 stands for "none": bind SQL NULL. */
static void q_int_or_null(struct query *q, int i, int64_t v)
{
	if (v)
		q_int(q, i, v);
	else
		q_bound(q, sqlite3_bind_null(q->stmt, i));
}

/* 1 for a row, 0 when done, or a negative error code. */
static int q_step(struct query *q)
{
	int rc;

	if (q->bind_rc != SQLITE_OK)
		return db_err(q->st, q->bind_rc, q->what);
	rc = sqlite3_step(q->stmt);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	return db_err(q->st, rc, q->what);
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
	sqlite3_reset(q->stmt);
	sqlite3_clear_bindings(q->stmt);
	q->stmt = NULL;
}

/* Run a statement without parameters. */
static int run(struct store *st, enum stmt_id id, const char *what)
{
	struct query q;
	int rc = q_start(&q, st, id, what);

	if (!rc)
		rc = q_exec(&q);
	q_end(&q);
	return rc;
}

static char *col_str(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	if (!t)
		return NULL;
	return xstrndup((const char *)t, (size_t)sqlite3_column_bytes(s, i));
}

/* A BLOB column's bytes, copied and NUL-terminated; NULL for SQL NULL. */
static char *col_blob(sqlite3_stmt *s, int i, size_t *len)
{
	const void *data = sqlite3_column_blob(s, i);
	char *copy;

	*len = 0;
	if (!data && sqlite3_column_type(s, i) != SQLITE_BLOB)
		return NULL;
	*len = (size_t)sqlite3_column_bytes(s, i);
	copy = xmalloc(*len + 1);
	if (*len)
		memcpy(copy, data, *len);
	copy[*len] = '\0';
	return copy;
}

/*
 * A column's text (or bytes) as a string the record owns: kept in
 * owned, released with the record.  NULL for SQL NULL.
 */
static const char *col_own(struct strlist *owned, sqlite3_stmt *s, int i)
{
	char *t = col_str(s, i);

	if (t)
		strlist_push_owned(owned, t);
	return t;
}

static const char *col_own_blob(struct strlist *owned, sqlite3_stmt *s, int i,
				size_t *len)
{
	char *t = col_blob(s, i, len);

	if (t)
		strlist_push_owned(owned, t);
	return t;
}

static int64_t col_int(sqlite3_stmt *s, int i)
{
	return sqlite3_column_int64(s, i);
}

static int col_enum(struct query *q, int i, const char *const *names, size_t nr)
{
	int v = name_index(names, nr,
			   (const char *)sqlite3_column_text(q->stmt, i));

	if (v < 0)
		return err_set(PB_ERROR, "state db %s: %s: unknown value '%s'",
			       q->st->path, q->what,
			       (const char *)sqlite3_column_text(q->stmt, i));
	return v;
}

/*
 * An atomic unit of several statements: its own write transaction, or a
 * savepoint when the caller has a transaction open.  unit_end() commits
 * (ok) or rolls back, and returns rc or the commit's failure.
 */
static int unit_begin(struct store *st, int *nested)
{
	*nested = !sqlite3_get_autocommit(st->db);
	return run(st, *nested ? S_SAVEPOINT : S_BEGIN_IMMEDIATE, "begin");
}

static int unit_end(struct store *st, int nested, int ok, int rc)
{
	int rc2;

	if (sqlite3_get_autocommit(st->db))
		return rc; /* SQLite rolled it back already (I/O error...) */
	if (ok) {
		rc2 = run(st, nested ? S_RELEASE : S_COMMIT, "commit");
		if (!rc2)
			return rc;
		rc = rc2;
	}
	if (nested) {
		run(st, S_ROLLBACK_TO, "roll back");
		run(st, S_RELEASE, "roll back");
	} else if (!sqlite3_get_autocommit(st->db)) {
		run(st, S_ROLLBACK, "roll back");
	}
	return rc;
}

static int read_version(struct store *st, int *out)
{
	struct query q;
	int rc = q_start(&q, st, S_USER_VERSION, "read schema version");

	if (!rc)
		rc = q_step(&q);
	if (rc == 1) {
		*out = sqlite3_column_int(q.stmt, 0);
		rc = 0;
	} else if (rc == 0) {
		rc = err_set(PB_ERROR, "state db %s: no schema version",
			     st->path);
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
		       st->path, version, SCHEMA_LATEST);
}

/* A pragma that answers with one text row (journal_mode ...). */
static int pragma(struct store *st, const char *sql, const char *expect)
{
	sqlite3_stmt *s = NULL;
	const char *got;
	int rc;

	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK) {
		rc = db_err(st, rc, sql);
		goto out;
	}
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		rc = db_err(st, rc, sql);
		goto out;
	}
	got = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : "";
	if (expect && (!got || strcmp(got, expect))) {
		rc = err_set(PB_ERROR, "state db %s: %s gave '%s', not '%s'",
			     st->path, sql, got ? got : "", expect);
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

/* fsync the directory holding path, so a new file's name is durable. */
static int sync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int rc;

	if (!slash)
		dir = xstrdup(".");
	else if (slash == path)
		dir = xstrdup("/");
	else
		dir = xstrndup(path, (size_t)(slash - path));
	rc = dir_fsync(dir);
	free(dir);
	return rc;
}

/* Bring the schema to SCHEMA_LATEST in one transaction. */
static int migrate(struct store *st)
{
	int rc, version, i, from;

	rc = run(st, S_BEGIN_IMMEDIATE, "begin migration");
	if (rc)
		return rc;
	rc = read_version(st, &version);
	if (rc)
		goto out;
	if (version > SCHEMA_LATEST) {
		rc = version_too_new(st, version);
		goto out;
	}
	from = version;
	for (i = version; i < SCHEMA_LATEST; i++) {
		if (sqlite3_exec(st->db, migrations[i], NULL, NULL, NULL) !=
		    SQLITE_OK) {
			rc = db_err(st, sqlite3_extended_errcode(st->db),
				    "schema migration");
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
	rc = run(st, S_COMMIT, "commit migration");
	/* SQLite syncs the -wal file's directory entry, not the database's. */
	if (!rc && from == 0)
		rc = sync_dir_of(st->path);
	if (!rc && from == 0)
		log_notice("state db %s: created (schema version %d)", st->path,
			   SCHEMA_LATEST);
	else if (!rc && from != SCHEMA_LATEST)
		log_notice("state db %s: schema migrated from version %d to %d",
			   st->path, from, SCHEMA_LATEST);
out:
	if (rc && !sqlite3_get_autocommit(st->db))
		run(st, S_ROLLBACK, "roll back migration");
	return rc;
}

static int open_rw(struct store *st)
{
	int one = 1, rc, version;

	/*
	 * Keep -wal and -shm after the last close, so a read-only reader
	 * never needs to create them (which takes write access to the
	 * directory).  Set before the WAL is first opened.
	 */
	rc = sqlite3_file_control(st->db, "main", SQLITE_FCNTL_PERSIST_WAL,
				  &one);
	if (rc != SQLITE_OK)
		return db_err(st, rc, "persistent WAL");
	/* Refuse a newer schema before changing anything in the file. */
	rc = read_version(st, &version);
	if (rc)
		return rc;
	if (version > SCHEMA_LATEST)
		return version_too_new(st, version);
	rc = pragma(st, "PRAGMA journal_mode = WAL", "wal");
	if (!rc)
		rc = pragma(st, "PRAGMA synchronous = FULL", NULL);
	if (!rc)
		rc = pragma(st, "PRAGMA foreign_keys = ON", NULL);
	if (!rc)
		rc = pragma(st, "PRAGMA journal_size_limit = " STORE_WAL_LIMIT,
			    STORE_WAL_LIMIT);
	if (!rc)
		rc = migrate(st);
	return rc;
}

static int open_ro(struct store *st)
{
	int rc, version;

	rc = read_version(st, &version);
	if (rc) {
		char msg[PB_ERRMSG_MAX];

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
			       st->path);
	if (version > SCHEMA_LATEST)
		return version_too_new(st, version);
	if (version < SCHEMA_LATEST)
		return err_set(PB_ETEMP,
			       "state db %s: schema version %d is older "
			       "than %d; the daemon upgrades it on start",
			       st->path, version, SCHEMA_LATEST);
	return pragma(st, "PRAGMA foreign_keys = ON", NULL);
}

/*
 * The writer's files (the database, its -wal and -shm, the locks and
 * the git mirrors beside it) are created in the database's directory: a
 * directory only the daemon's user may write, so nobody can plant a file
 * or a link there first; and the database is not a link.
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

int store_open(struct store **out, const char *path, unsigned flags,
	       int busy_timeout_ms)
{
	struct store *st = NULL;
	struct stat sb;
	int rc, oflags;

	*out = NULL;
	if (flags != STORE_RO && flags != STORE_RW)
		return err_set(
			PB_EINVAL,
			"store_open: flags must be STORE_RO or STORE_RW");
	if (!path || !*path)
		return err_set(PB_EINVAL, "state db: no path");
	if (busy_timeout_ms < 0 || busy_timeout_ms > STORE_BUSY_TIMEOUT_MAX)
		return err_set(PB_EINVAL, "state db: bad busy timeout %d ms",
			       busy_timeout_ms);
	if (sqlite3_libversion_number() < STORE_SQLITE_MIN)
		return err_set(PB_ERROR, "SQLite %s is too old (need 3.35)",
			       sqlite3_libversion());
	/* NOMUTEX needs a library built for threads (multi-thread mode). */
	if (!sqlite3_threadsafe())
		return err_set(PB_ERROR, "SQLite was built without threads");
	if (flags == STORE_RW) {
		rc = check_state_dir(path);
		if (rc)
			return rc;
	}
	if (flags == STORE_RO && stat(path, &sb) != 0) {
		if (errno == ENOENT)
			return err_set(PB_ENOTFOUND,
				       "state db %s does not exist yet (the "
				       "daemon creates it on start)",
				       path);
		return err_set_errno(errno == EACCES ? PB_EPERM : PB_ERROR,
				     "state db %s", path);
	}

	st = xcalloc(1, sizeof(*st));
	st->path = xstrdup(path);
	st->flags = flags;
	oflags = SQLITE_OPEN_NOMUTEX;
	if (flags == STORE_RO)
		oflags |= SQLITE_OPEN_READONLY;
	else
		oflags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	rc = sqlite3_open_v2(path, &st->db, oflags, NULL);
	if (rc != SQLITE_OK) {
		rc = db_err(st, rc, "open");
		goto out;
	}
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, busy_timeout_ms);
	rc = flags == STORE_RW ? open_rw(st) : open_ro(st);
out:
	if (rc) {
		store_free(st);
		return rc;
	}
	*out = st;
	return 0;
}

void store_free(struct store *st)
{
	size_t i;
	int rc;

	if (!st)
		return;
	if (st->db && !sqlite3_get_autocommit(st->db)) {
		log_warn("state db %s: closing with a transaction open; "
			 "rolling it back",
			 st->path);
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	}
	for (i = 0; i < S_NR; i++)
		sqlite3_finalize(st->stmts[i]);
	rc = sqlite3_close(st->db);
	if (rc != SQLITE_OK)
		log_error("state db %s: close: %s", st->path,
			  sqlite3_errstr(rc));
	free(st->path);
	free(st);
}

int store_schema_version(int *out, struct store *st)
{
	return read_version(st, out);
}

int store_schema_latest(void)
{
	return SCHEMA_LATEST;
}

int store_check(struct store *st)
{
	sqlite3_stmt *s = NULL;
	const char *row;
	int rc;

	rc = sqlite3_prepare_v2(st->db, "PRAGMA integrity_check", -1, &s, NULL);
	if (rc != SQLITE_OK) {
		rc = db_err(st, rc, "integrity check");
		goto out;
	}
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		rc = db_err(st, rc, "integrity check");
		goto out;
	}
	row = (const char *)sqlite3_column_text(s, 0);
	if (!row || strcmp(row, "ok")) {
		rc = err_set(PB_ERROR, "state db %s: integrity check: %s",
			     st->path, row ? row : "(no answer)");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

int store_begin(struct store *st)
{
	int rc;

	if (st->in_tx || !sqlite3_get_autocommit(st->db))
		BUG("store_begin: a transaction is already open");
	rc = run(st, st->flags == STORE_RW ? S_BEGIN_IMMEDIATE : S_BEGIN,
		 "begin");
	if (!rc)
		st->in_tx = 1;
	return rc;
}

int store_commit(struct store *st)
{
	int rc;

	if (!st->in_tx)
		BUG("store_commit without store_begin");
	st->in_tx = 0;
	if (sqlite3_get_autocommit(st->db))
		return err_set(PB_ETEMP,
			       "state db %s: the transaction was rolled back "
			       "after an earlier error",
			       st->path);
	rc = run(st, S_COMMIT, "commit");
	if (rc && !sqlite3_get_autocommit(st->db))
		run(st, S_ROLLBACK, "roll back");
	return rc;
}

int store_rollback(struct store *st)
{
	if (!st->in_tx)
		BUG("store_rollback without store_begin");
	st->in_tx = 0;
	if (sqlite3_get_autocommit(st->db))
		return 0;
	return run(st, S_ROLLBACK, "roll back");
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
	q_text(&q, 1 + MC_MSGID, m->message_id);
	q_text(&q, 1 + MC_PROJECT, m->project);
	q_int(&q, 1 + MC_IID, m->iid);
	q_int_or_null(&q, 1 + MC_REVISION, m->revision);
	q_int(&q, 1 + MC_PATCH, m->patch);
	q_int(&q, 1 + MC_TOTAL, m->total);
	q_text(&q, 1 + MC_KIND, mail_kind_names[m->kind]);
	q_opt(&q, 1 + MC_COMMIT, m->commit_sha);
	q_opt(&q, 1 + MC_BASE, m->base_sha);
	q_opt(&q, 1 + MC_START, m->start_sha);
	q_opt(&q, 1 + MC_HEAD, m->head_sha);
	q_int_or_null(&q, 1 + MC_VERSION, m->version_id);
	q_textn(&q, 1 + MC_DIFF, m->diff, m->diff_len);
	q_opt(&q, 1 + MC_DISCUSSION, m->discussion_id);
	q_int_or_null(&q, 1 + MC_NOTE, m->note_id);
	q_text(&q, 1 + MC_STATE, mail_state_names[m->state]);
	q_int(&q, 1 + MC_CREATED, t);
	if (m->state == STORE_MAIL_SENT)
		q_int(&q, 1 + MC_SENT, m->sent ? m->sent : t);
	else
		q_int_or_null(&q, 1 + MC_SENT, 0);
	rc = q_exec(&q);
	if (!rc && sqlite3_changes(st->db) == 0) {
		char qb[PB_LOG_QUOTE_MAX];

		rc = err_set(PB_EEXISTS, "state db: mail <%s> already recorded",
			     quote(qb, sizeof(qb), m->message_id));
	}
	q_end(&q);
	return rc;
}

int store_mail_mark_sent(struct store *st, const char *message_id)
{
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_MAIL_MARK_SENT, "mark mail sent");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, now());
	rc = q_exec(&q);
	if (!rc && sqlite3_changes(st->db) == 0) {
		char qb[PB_LOG_QUOTE_MAX];

		rc = err_set(PB_ENOTFOUND, "state db: no mail <%s>",
			     quote(qb, sizeof(qb), message_id));
	}
	q_end(&q);
	return rc;
}

static int mail_from_row(struct store_mail *m, struct query *q)
{
	sqlite3_stmt *s = q->stmt;
	int kind, state;

	kind = col_enum(q, MC_KIND, mail_kind_names,
			ARRAY_SIZE(mail_kind_names));
	if (kind < 0)
		return kind;
	state = col_enum(q, MC_STATE, mail_state_names,
			 ARRAY_SIZE(mail_state_names));
	if (state < 0)
		return state;
	store_mail_release(m);
	m->message_id = col_own(&m->owned, s, MC_MSGID);
	m->project = col_own(&m->owned, s, MC_PROJECT);
	m->iid = col_int(s, MC_IID);
	m->revision = (int)col_int(s, MC_REVISION);
	m->patch = (int)col_int(s, MC_PATCH);
	m->total = (int)col_int(s, MC_TOTAL);
	m->kind = (enum store_mail_kind)kind;
	m->commit_sha = col_own(&m->owned, s, MC_COMMIT);
	m->base_sha = col_own(&m->owned, s, MC_BASE);
	m->start_sha = col_own(&m->owned, s, MC_START);
	m->head_sha = col_own(&m->owned, s, MC_HEAD);
	m->version_id = col_int(s, MC_VERSION);
	m->diff = col_own(&m->owned, s, MC_DIFF);
	m->diff_len = m->diff ? (size_t)sqlite3_column_bytes(s, MC_DIFF) : 0;
	m->discussion_id = col_own(&m->owned, s, MC_DISCUSSION);
	m->note_id = col_int(s, MC_NOTE);
	m->state = (enum store_mail_state)state;
	m->created = col_int(s, MC_CREATED);
	m->sent = col_int(s, MC_SENT);
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
	sqlite3_stmt *s = q->stmt;
	int state;

	state = col_enum(q, RC_STATE, revision_state_names,
			 ARRAY_SIZE(revision_state_names));
	if (state < 0)
		return state;
	store_revision_release(rev);
	rev->project = col_own(&rev->owned, s, RC_PROJECT);
	rev->iid = col_int(s, RC_IID);
	rev->revision = (int)col_int(s, RC_REVISION);
	rev->head_sha = col_own(&rev->owned, s, RC_HEAD);
	rev->base_sha = col_own(&rev->owned, s, RC_BASE);
	rev->start_sha = col_own(&rev->owned, s, RC_START);
	rev->version_id = col_int(s, RC_VERSION);
	rev->patch_id = col_own(&rev->owned, s, RC_PATCH_ID);
	rev->patches = (int)col_int(s, RC_PATCHES);
	rev->cover_msgid = col_own(&rev->owned, s, RC_COVER);
	rev->state = (enum store_revision_state)state;
	rev->created = col_int(s, RC_CREATED);
	rev->sent = col_int(s, RC_SENT);
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

int store_revision_start(int *revision, struct store *st,
			 const struct store_revision *rev)
{
	struct store_revision old = { 0 };
	struct query q;
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
	if (rc == 1)
		*revision = sqlite3_column_int(q.stmt, 0);
	if (rc == 1)
		rc = q_exec(&q);
	else if (rc == 0)
		rc = err_set(PB_ERROR, "state db %s: no revision number",
			     st->path);
	q_end(&q);
	if (rc != PB_EEXISTS)
		return rc;

	/* The only unique key that can clash is the head SHA. */
	rc = store_revision_by_head(&old, st, rev->project, rev->iid,
				    rev->head_sha);
	if (rc)
		return rc;
	*revision = old.revision;
	store_revision_release(&old);
	return err_set(PB_EEXISTS,
		       "state db: head %s was already mailed as v%d",
		       rev->head_sha, *revision);
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
	if (!rc && sqlite3_changes(st->db) == 0)
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
			   name);

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
	sqlite3_stmt *s = q->stmt;
	int state;

	state = col_enum(q, IC_STATE, inbound_state_names,
			 ARRAY_SIZE(inbound_state_names));
	if (state < 0)
		return state;
	store_inbound_release(in);
	in->message_id = col_own(&in->owned, s, IC_MSGID);
	in->spool_name = col_own(&in->owned, s, IC_SPOOL);
	in->project = col_own(&in->owned, s, IC_PROJECT);
	in->iid = col_int(s, IC_IID);
	in->revision = (int)col_int(s, IC_REVISION);
	in->patch = (int)col_int(s, IC_PATCH);
	in->classification = col_own(&in->owned, s, IC_CLASS);
	in->state = (enum store_inbound_state)state;
	in->attempts = (int)col_int(s, IC_ATTEMPTS);
	in->next_attempt = col_int(s, IC_NEXT);
	in->last_error = col_own(&in->owned, s, IC_ERROR);
	in->created = col_int(s, IC_CREATED);
	in->updated = col_int(s, IC_UPDATED);
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
	rc = q_exec(&q);
	if (!rc && sqlite3_changes(st->db) == 0)
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
	int rc;

	rc = q_start(&q, st, S_IN_CLAIM, "claim inbound mail");
	if (rc)
		return rc;
	q_int(&q, 1, when);
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

/* Why an update of an inbound row changed nothing. */
static int inbound_not_applying(struct store *st, const char *message_id,
				const char *action)
{
	struct store_inbound cur = { 0 };
	char qb[PB_LOG_QUOTE_MAX];
	int rc = store_inbound_get(&cur, st, message_id);

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
	rc = q_exec(&q);
	q_end(&q);
	if (!rc && sqlite3_changes(st->db) == 0)
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

int store_inbound_recover(int *count, struct store *st)
{
	struct query q;
	int rc;

	*count = 0;
	rc = q_start(&q, st, S_IN_RECOVER, "recover inbound mails");
	if (rc)
		return rc;
	q_int(&q, 1, now());
	rc = q_exec(&q);
	if (!rc)
		*count = sqlite3_changes(st->db);
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
		c->project = col_own(&c->owned, q.stmt, 0);
		c->state = (enum store_inbound_state)state;
		c->count = col_int(q.stmt, 2);
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
	sqlite3_stmt *s = q->stmt;
	int state;

	state = col_enum(q, AC_STATE, action_state_names,
			 ARRAY_SIZE(action_state_names));
	if (state < 0)
		return state;
	store_action_release(act);
	act->message_id = col_own(&act->owned, s, AC_MSGID);
	act->index = (int)col_int(s, AC_INDEX);
	act->kind = col_own(&act->owned, s, AC_KIND);
	act->marker = col_own(&act->owned, s, AC_MARKER);
	act->state = (enum store_action_state)state;
	act->note_id = col_int(s, AC_NOTE);
	act->discussion_id = col_own(&act->owned, s, AC_DISCUSSION);
	act->attempts = (int)col_int(s, AC_ATTEMPTS);
	act->last_error = col_own(&act->owned, s, AC_ERROR);
	act->created = col_int(s, AC_CREATED);
	act->updated = col_int(s, AC_UPDATED);
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

	*changed = rc ? 0 : sqlite3_changes(q->st->db);
	q_end(q);
	return rc;
}

int store_action_begin(struct store_action *out, struct store *st,
		       const char *message_id, int index, const char *kind,
		       const char *marker)
{
	char qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int64_t t = now();
	int rc, nested, fresh = 0, changed = 0;

	if ((rc = check_action_key(message_id, index)) ||
	    (rc = check_token("action kind", kind)) ||
	    (rc = check_str("marker", marker, STORE_MARKER_MAX, 1)))
		return rc;
	rc = unit_begin(st, &nested);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_ACT_INSERT, "journal forge action");
	if (rc)
		goto out;
	q_text(&q, 1, message_id);
	q_int(&q, 2, index);
	q_text(&q, 3, kind);
	q_text(&q, 4, marker);
	q_int(&q, 5, t);
	rc = action_write(&fresh, &q);
	if (rc)
		goto out;
	if (!fresh) {
		/* Seen before: count the attempt unless it is done. */
		rc = q_start(&q, st, S_ACT_AGAIN, "journal forge action");
		if (rc)
			goto out;
		q_text(&q, 1, message_id);
		q_int(&q, 2, index);
		q_int(&q, 3, t);
		rc = action_write(&changed, &q);
		if (rc)
			goto out;
	}
	rc = action_get(out, st, message_id, index);
out:
	rc = unit_end(st, nested, !rc, rc);
	if (!rc && !fresh)
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

int store_verdicts_set(struct store *st, const char *message_id,
		       const struct strlist *verdicts)
{
	struct query q;
	size_t i;
	int nested, rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = unit_begin(st, &nested);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_VERDICT_CLEAR, "clear trailer verdicts");
	if (!rc) {
		q_text(&q, 1, message_id);
		rc = q_exec(&q);
		q_end(&q);
	}
	for (i = 0; !rc && i < verdicts->nr && i < STORE_VERDICTS_MAX; i++) {
		rc = q_start(&q, st, S_VERDICT_PUT, "record a trailer verdict");
		if (rc)
			break;
		q_text(&q, 1, message_id);
		q_int(&q, 2, (int64_t)i);
		q_error(&q, 3,
			verdicts->items[i][0] ? verdicts->items[i] : "-");
		rc = q_exec(&q);
		q_end(&q);
	}
	return unit_end(st, nested, !rc, rc);
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
		strlist_push_owned(out, col_str(q.stmt, 0));
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
	if (rc == 1)
		rc = buf_set(out, sqlite3_column_text(q.stmt, 0),
			     (size_t)sqlite3_column_bytes(q.stmt, 0));
	else if (rc == 0)
		rc = err_set(PB_ENOTFOUND, "state db: no cursor %s",
			     quote(qb, sizeof(qb), name));
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
	sqlite3_stmt *s = q->stmt;
	int state;

	state = col_enum(q, OC_STATE, outmail_state_names,
			 ARRAY_SIZE(outmail_state_names));
	if (state < 0)
		return state;
	store_outmail_release(m);
	m->message_id = col_own(&m->owned, s, OC_MSGID);
	m->project = col_own(&m->owned, s, OC_PROJECT);
	m->iid = col_int(s, OC_IID);
	m->revision = (int)col_int(s, OC_REVISION);
	m->patch = (int)col_int(s, OC_PATCH);
	m->envelope_from = col_own(&m->owned, s, OC_FROM);
	m->recipients = col_own(&m->owned, s, OC_RCPTS);
	m->message = col_own_blob(&m->owned, s, OC_MESSAGE, &m->message_len);
	m->state = (enum store_outmail_state)state;
	m->attempts = (int)col_int(s, OC_ATTEMPTS);
	m->next_attempt = col_int(s, OC_NEXT);
	m->last_error = col_own(&m->owned, s, OC_ERROR);
	m->created = col_int(s, OC_CREATED);
	m->updated = col_int(s, OC_UPDATED);
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
	q_bound(&q, sqlite3_bind_blob64(q.stmt, 4, m->message, m->message_len,
					SQLITE_STATIC));
	q_int(&q, 5, now());
	rc = q_exec(&q);
	if (!rc && sqlite3_changes(st->db) == 1) {
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
		queued = sqlite3_column_int(q.stmt, 0);
		mapped = sqlite3_column_int(q.stmt, 1);
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

	if (!rc && sqlite3_changes(q->st->db) == 0)
		rc = outmail_missing(message_id);
	q_end(q);
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
	return outmail_update(&q, message_id);
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
	return outmail_update(&q, message_id);
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
		*count = sqlite3_changes(st->db);
	q_end(&q);
	return rc;
}

int store_outmail_sent(int *revision_done, struct store *st,
		       const char *message_id)
{
	struct query q;
	int rc, nested, left = -1;

	*revision_done = 0;
	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	rc = unit_begin(st, &nested);
	if (rc)
		return rc;
	rc = store_mail_mark_sent(st, message_id);
	if (rc)
		goto out;
	rc = q_start(&q, st, S_ARCH_FROM_OUT, "archive mail");
	if (rc)
		goto out;
	q_text(&q, 1, message_id);
	q_int(&q, 2, now());
	rc = q_exec(&q);
	q_end(&q);
	if (rc)
		goto out;
	rc = q_start(&q, st, S_OUT_DELETE, "dequeue mail");
	if (rc)
		goto out;
	q_text(&q, 1, message_id);
	rc = outmail_update(&q, message_id);
	if (rc)
		goto out;
	rc = q_start(&q, st, S_OUT_LEFT, "dequeue mail");
	if (rc)
		goto out;
	q_text(&q, 1, message_id);
	rc = q_step(&q);
	if (rc == 1) {
		left = sqlite3_column_int(q.stmt, 0);
		rc = 0;
	}
	q_end(&q);
	if (rc || left != 0)
		goto out;
	rc = q_start(&q, st, S_OUT_REV_SENT, "mark revision sent");
	if (rc)
		goto out;
	q_text(&q, 1, message_id);
	q_int(&q, 2, now());
	rc = q_exec(&q);
	if (!rc)
		*revision_done = sqlite3_changes(st->db) > 0;
	q_end(&q);
out:
	rc = unit_end(st, nested, !rc, rc);
	if (rc)
		*revision_done = 0;
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
	sqlite3_stmt *s = q->stmt;
	int origin;

	origin = col_enum(q, 3, archive_origin_names,
			  ARRAY_SIZE(archive_origin_names));
	if (origin < 0)
		return origin;
	store_archived_release(a);
	a->message_id = col_own(&a->owned, s, 0);
	a->project = col_own(&a->owned, s, 1);
	a->iid = col_int(s, 2);
	a->origin = (enum store_archive_origin)origin;
	a->message = col_own_blob(&a->owned, s, 4, &a->message_len);
	a->created = col_int(s, 5);
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
	q_bound(&q, sqlite3_bind_blob64(q.stmt, 5, a->message, a->message_len,
					SQLITE_STATIC));
	q_int(&q, 6, a->created > 0 ? a->created : now());
	rc = q_exec(&q);
	if (!rc && sqlite3_changes(st->db) == 0)
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
	q_int(&q, 3, limit ? (int64_t)limit : -1); /* -1: no limit */
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
		*count = col_int(q.stmt, 0);
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
		*removed = sqlite3_changes(st->db);
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
