/*
 * store_schema - the state store's schema: the ordered list of
 * migrations of each engine, the version a database is at, and the
 * migration of a database to the newest version, in one transaction.
 *
 * Step i takes a database from version i to i + 1 and ends by recording
 * version i + 1 (SQLite's PRAGMA user_version, PostgreSQL's
 * schema_version table), so a step and its version number cannot drift
 * apart, and version N is the same tables on both.  A shipped step is
 * never edited; changes go into a new step, for both engines.
 */
#include "state/storeq.h"
#include "util/err.h"
#include "util/log.h"

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
	 * step runs with foreign keys off (see open_rw() in store.c), as SQLite's
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

	/* 10: what a sender was told about each reply (or why nothing),
	 * and the senders who want no notices (store_notice.h). */
	"CREATE TABLE notices ("
	" message_id TEXT PRIMARY KEY,"
	" notice_id TEXT,"
	" recipient TEXT,"
	" decision TEXT NOT NULL,"
	" reasons TEXT NOT NULL,"
	" created INTEGER NOT NULL);"
	"CREATE INDEX notices_by_recipient ON notices (recipient, created);"
	"CREATE TABLE notice_optouts ("
	" address TEXT PRIMARY KEY,"
	" created INTEGER NOT NULL);"
	"PRAGMA user_version = 10;",

	/* 11: series posted to the list, collected until whole
	 * (store_submission.h). */
	"CREATE TABLE submissions ("
	" series_id TEXT PRIMARY KEY NOT NULL,"
	" sender TEXT NOT NULL,"
	" project TEXT NOT NULL,"
	" version INTEGER NOT NULL CHECK (version > 0),"
	" total INTEGER NOT NULL CHECK (total > 0),"
	" state TEXT NOT NULL CHECK (state IN ('collecting', 'whole',"
	"  'opened', 'failed')),"
	" iid INTEGER CHECK (iid > 0),"
	" created INTEGER NOT NULL,"
	" updated INTEGER NOT NULL);"
	"CREATE INDEX submissions_whole ON submissions (updated, series_id)"
	" WHERE state = 'whole';"
	"CREATE TABLE submission_mails ("
	" message_id TEXT PRIMARY KEY NOT NULL,"
	" series_id TEXT NOT NULL REFERENCES submissions (series_id),"
	" patch INTEGER NOT NULL CHECK (patch >= 0),"
	" message BLOB NOT NULL,"
	" created INTEGER NOT NULL,"
	" UNIQUE (series_id, patch));"
	"PRAGMA user_version = 11;",

	/* 12: a receipt may belong to no merge request (iid 0): the
	 * notice to the sender of a series posted to the list that
	 * became none (outbound/emailnotice.h).  Loosening a CHECK leaves
	 * every row and the file format as they are, so the table is not
	 * rebuilt (a rebuild would have to drop the parent of outmail's
	 * foreign key): the constraint's text is edited in place, the
	 * way SQLite's ALTER TABLE documentation gives for removing a
	 * CHECK ("Making Other Kinds Of Table Schema Changes"), and
	 * writable_schema=RESET reloads it.  Another connection keeps the
	 * stricter check until it reopens; only the daemon writes iid 0. */
	"PRAGMA writable_schema = ON;"
	"UPDATE sqlite_schema SET sql = replace(sql,"
	" 'iid INTEGER NOT NULL CHECK (iid > 0),',"
	" 'iid INTEGER NOT NULL CHECK (iid >= 0),')"
	" WHERE type = 'table' AND name = 'thread_map';"
	"PRAGMA writable_schema = RESET;"
	/* the series a sender posted in the last hour (a limit) */
	"CREATE INDEX submissions_sender ON submissions (sender, created);"
	"PRAGMA user_version = 12;",
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

	/* 10 */
	"CREATE TABLE notices ("
	" message_id BYTEA PRIMARY KEY,"
	" notice_id BYTEA,"
	" recipient BYTEA,"
	" decision BYTEA NOT NULL,"
	" reasons BYTEA NOT NULL,"
	" created BIGINT NOT NULL);"
	"CREATE INDEX notices_by_recipient ON notices (recipient, created);"
	"CREATE TABLE notice_optouts ("
	" address BYTEA PRIMARY KEY,"
	" created BIGINT NOT NULL);"
	"UPDATE schema_version SET version = 10;",

	/* 11 */
	"CREATE TABLE submissions ("
	" series_id BYTEA PRIMARY KEY NOT NULL,"
	" sender BYTEA NOT NULL,"
	" project BYTEA NOT NULL,"
	" version BIGINT NOT NULL CHECK (version > 0),"
	" total BIGINT NOT NULL CHECK (total > 0),"
	" state BYTEA NOT NULL CHECK (state IN ('collecting', 'whole',"
	"  'opened', 'failed')),"
	" iid BIGINT CHECK (iid > 0),"
	" created BIGINT NOT NULL,"
	" updated BIGINT NOT NULL);"
	"CREATE INDEX submissions_whole ON submissions (updated, series_id)"
	" WHERE state = 'whole';"
	"CREATE TABLE submission_mails ("
	" message_id BYTEA PRIMARY KEY NOT NULL,"
	" series_id BYTEA NOT NULL REFERENCES submissions (series_id),"
	" patch BIGINT NOT NULL CHECK (patch >= 0),"
	" message BYTEA NOT NULL,"
	" created BIGINT NOT NULL,"
	" UNIQUE (series_id, patch));"
	"UPDATE schema_version SET version = 11;",

	/* 12: PostgreSQL names a column's CHECK TABLE_COLUMN_check. */
	"ALTER TABLE thread_map DROP CONSTRAINT thread_map_iid_check;"
	"ALTER TABLE thread_map ADD CONSTRAINT thread_map_iid_check"
	" CHECK (iid >= 0);"
	"CREATE INDEX submissions_sender ON submissions (sender, created);"
	"UPDATE schema_version SET version = 12;",
};

#define SCHEMA_LATEST ((int)ARRAY_SIZE(sqlite_migrations))
_Static_assert(ARRAY_SIZE(sqlite_migrations) == ARRAY_SIZE(pg_migrations),
	       "both engines have every schema step");

int schema_read_version(struct store *st, int *out)
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

int schema_too_new(struct store *st, int version)
{
	return err_set(PB_ERROR,
		       "state db %s: schema version %d is newer than this "
		       "patchbridge knows (%d); refusing to use it - run the "
		       "newer patchbridge or restore a matching backup",
		       st->name, version, SCHEMA_LATEST);
}

/* Bring the schema to target (SCHEMA_LATEST) in one transaction. */
int schema_migrate(struct store *st, int target)
{
	const char *const *steps = st->backend == STORE_BACKEND_POSTGRESQL ?
					   pg_migrations :
					   sqlite_migrations;
	int rc, version, i, from;

	rc = db_begin(st->db, DB_TX_MIGRATE);
	if (rc)
		return db_fail(st, rc, "begin migration");
	rc = schema_read_version(st, &version);
	if (rc)
		goto out;
	if (version > SCHEMA_LATEST) {
		rc = schema_too_new(st, version);
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
		rc = schema_read_version(st, &version);
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

int store_schema_version(int *out, struct store *st)
{
	return schema_read_version(st, out);
}

int store_schema_latest(void)
{
	return SCHEMA_LATEST;
}
