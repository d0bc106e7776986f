/*
 * Tests of the state store's schema: a new database at the newest
 * version, reopened without running a step twice; a newer version
 * refused; the migrations from old versions with the rows of their time,
 * each reaching exactly the schema a new database gets; a reader that
 * meets a database not yet migrated.  test_store.c tests the tables and
 * the store's guarantees; storetest.h is what the two share.
 *
 * The same tests judge both engines (storebed.h): SQLite files, or
 * PostgreSQL databases with PB_TEST_BACKEND=postgresql (CTest's
 * test_store_migrate_pg).  A migration from a hand-written old file
 * (schema_v1) is SQLite's alone; test_migrate_steps and
 * test_migrate_retarget make the old schema on either engine with
 * store_opts.schema_version.
 */
#include "cmocka_all.h"
#include "state/store.h"
#include "storebed.h"
#include "storetest.h"
#include "util/buf.h"
#include "util/err.h"

#include <sqlite3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static int setup(void **state)
{
	(void)state;
	return storetest_setup("store_migrate");
}

/* Run one statement on the file with SQLite itself. */
static void raw_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_close(db);
}

static int file_exists(const char *path, const char *suffix)
{
	char p[700];
	struct stat sb;

	snprintf(p, sizeof(p), "%s%s", path, suffix);
	return stat(p, &sb) == 0;
}

static void test_open_migrate_reopen(void **state)
{
	const char *path = db_path("open");
	struct store *st;
	int v = -1;

	st = open_rw(path);
	assert_int_equal(store_schema_version(&v, st), 0);
	assert_int_equal(v, store_schema_latest());
	assert_true(store_schema_latest() >= 1);
	assert_int_equal(store_check(st), 0);
	store_free(st);
	/* WAL files stay after close, for read-only readers. */
	if (!storebed_pg()) {
		assert_true(file_exists(path, "-wal"));
		assert_true(file_exists(path, "-shm"));
	}

	/* Re-opening runs no step twice and keeps the data. */
	st = open_rw(path);
	assert_int_equal(store_cursor_set(st, "poll:g/p", "2024-01-01"), 0);
	store_free(st);
	st = open_rw(path);
	assert_int_equal(store_schema_version(&v, st), 0);
	assert_int_equal(v, store_schema_latest());
	{
		struct buf b = BUF_INIT(64);

		assert_int_equal(store_cursor_get(&b, st, "poll:g/p"), 0);
		assert_string_equal(b.data, "2024-01-01");
		buf_release(&b);
	}
	store_free(st);
	raw_integrity_ok(path);
}

static void test_refuse_newer_schema(void **state)
{
	const char *path = db_path("newer");
	struct store *st = NULL;

	store_free(open_rw(path));
	storebed_set_version(path, 999);

	assert_int_equal(storebed_open(&st, path, STORE_RW, BUSY_MS), PB_ERROR);
	assert_null(st);
	assert_non_null(strstr(err_msg(), "newer"));
	assert_non_null(strstr(err_msg(), "999"));
	assert_int_equal(storebed_open(&st, path, STORE_RO, BUSY_MS), PB_ERROR);
	assert_non_null(strstr(err_msg(), "newer"));

	/* Nothing was changed by the refused opens. */
	storebed_set_version(path, 1000);
	assert_int_equal(storebed_open(&st, path, STORE_RW, BUSY_MS), PB_ERROR);
	assert_non_null(strstr(err_msg(), "1000"));
}

static const char schema_v1[] =
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
	"PRAGMA user_version = 1;";

/* The schema as text, for comparing two databases. */
static char *schema_dump(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	struct buf b = BUF_INIT(1024 * 1024);

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT type, name, sql FROM "
					    "sqlite_schema ORDER BY name",
					    -1, &s, NULL),
			 SQLITE_OK);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const unsigned char *sql = sqlite3_column_text(s, 2);

		assert_int_equal(buf_addf(&b, "%s %s %s\n",
					  sqlite3_column_text(s, 0),
					  sqlite3_column_text(s, 1),
					  sql ? (const char *)sql : ""),
				 0);
	}
	sqlite3_finalize(s);
	sqlite3_close(db);
	return buf_detach(&b, NULL);
}

/* Rows of schema 2, in SQL both engines read alike. */
#define MIGRATE_ROWS                                                         \
	"INSERT INTO revisions (project, iid, revision, head_sha, patches,"  \
	" cover_msgid, state, created, sent) VALUES ('g/p', 1, 1,"           \
	" '" SHA1 "', 1, 'old-cover@x', 'sent', 10, 11);"                    \
	"INSERT INTO thread_map (message_id, project, iid, revision, patch," \
	" total, kind, commit_sha, head_sha, diff, state, created, sent)"    \
	" VALUES ('old-1@x', 'g/p', 1, 1, 1, 1, 'patch', '" SHA3 "',"        \
	" '" SHA1 "', 'diff', 'sent', 10, 11);"                              \
	"INSERT INTO inbound (message_id, spool_name, project, iid,"         \
	" revision, patch, classification, state, attempts, next_attempt,"   \
	" created, updated) VALUES ('old-in@x', '1.q.2.3', 'g/p', 1, 1, 1,"  \
	" 'reply', 'applying', 1, 0, 10, 10);"

/* A new database of either engine at an old schema version, open RW. */
static struct store *open_at(const char *path, int version)
{
	struct store_opts o;
	struct store *st = NULL;

	memset(&o, 0, sizeof(o));
	o.backend = storebed_backend();
	o.target = path;
	o.flags = STORE_RW;
	o.busy_timeout_ms = BUSY_MS;
	o.schema_version = version;
	assert_int_equal(store_open_opts(&st, &o), 0);
	return st;
}

/*
 * Both engines: the notices to senders (schema 10), from a database at
 * schema 9 with a reply in it: one decision per reply, the queued ones
 * counted per recipient since a time, and the opt-outs.
 */
static void test_notices(void **state)
{
	const char *path = db_path("notices");
	struct store *st;
	struct store_notice n, got;
	int64_t count = -1;
	int v = 0, out = -1;

	(void)state;
	store_free(open_at(path, 9));
	storebed_exec(path, MIGRATE_ROWS, MIGRATE_ROWS);
	st = open_rw(path);
	assert_int_equal(store_schema_version(&v, st), 0);
	assert_int_equal(v, store_schema_latest());

	store_notice_init(&n);
	store_notice_init(&got);
	assert_int_equal(store_notice_get(&got, st, "old-in@x"), PB_ENOTFOUND);
	n.message_id = "old-in@x";
	n.notice_id = "pb.n.1@bridge.example";
	n.recipient = "mallory@corp.example";
	n.decision = "sent";
	n.reasons = "Your ack was not counted.\nAnd more.\n";
	assert_int_equal(store_notice_put(st, &n), 0);
	/* one decision per reply */
	n.decision = "rate_limit";
	assert_int_equal(store_notice_put(st, &n), PB_EEXISTS);
	assert_int_equal(store_notice_get(&got, st, "old-in@x"), 0);
	assert_string_equal(got.decision, "sent");
	assert_string_equal(got.notice_id, "pb.n.1@bridge.example");
	assert_string_equal(got.reasons, n.reasons);
	/* a notice not sent counts not */
	n.message_id = "other@x";
	n.notice_id = NULL;
	assert_int_equal(store_notice_put(st, &n), 0);
	assert_int_equal(store_notice_get(&got, st, "other@x"), 0);
	assert_null(got.notice_id);
	assert_int_equal(store_notice_count(&count, st, "mallory@corp.example",
					    time(NULL) - 3600),
			 0);
	assert_int_equal(count, 1);
	assert_int_equal(store_notice_count(&count, st, "mallory@corp.example",
					    time(NULL) + 10),
			 0);
	assert_int_equal(count, 0);
	n.decision = "Not A Token";
	n.message_id = "third@x";
	assert_int_equal(store_notice_put(st, &n), PB_EINVAL);

	assert_int_equal(store_notice_optout_get(&out, st, "m@x"), 0);
	assert_int_equal(out, 0);
	assert_int_equal(store_notice_optout_set(st, "m@x", 1), 0);
	assert_int_equal(store_notice_optout_set(st, "m@x", 1), 0);
	assert_int_equal(store_notice_optout_get(&out, st, "m@x"), 0);
	assert_int_equal(out, 1);
	assert_int_equal(store_notice_optout_set(st, "m@x", 0), 0);
	assert_int_equal(store_notice_optout_get(&out, st, "m@x"), 0);
	assert_int_equal(out, 0);
	assert_int_equal(store_check(st), 0);
	store_notice_release(&n);
	store_notice_release(&got);
	store_free(st);
}

static void test_migrate_from_v1(void **state)
{
	const char *path = db_path("v1");
	char fresh[700];
	char *want, *have;
	struct store *st;
	struct store_mail got = STORE_MAIL_INIT;
	struct store_revision rev = { 0 };
	int v = 0;

	if (storebed_pg())
		skip(); /* SQLite files: see test_migrate_steps */

	raw_exec(path, schema_v1);
	raw_exec(path,
		 "INSERT INTO revisions VALUES ('g/p', 1, 1, '" SHA1 "', NULL,"
		 " NULL, NULL, NULL, 1, 'old-cover@x', 'sent', 10, 11);"
		 "INSERT INTO thread_map VALUES ('old-1@x', 'g/p', 1, 1, 1, 1,"
		 " 'patch', '" SHA3 "', NULL, NULL, '" SHA1 "', NULL, 'diff',"
		 " NULL, NULL, 'sent', 10, 11);");

	st = open_rw(path);
	assert_int_equal(store_schema_version(&v, st), 0);
	assert_int_equal(v, store_schema_latest());
	assert_true(v >= 2);
	/* The old rows are still there ... */
	assert_int_equal(store_mail_get(&got, st, "old-1@x"), 0);
	assert_string_equal(got.diff, "diff");
	assert_int_equal(got.state, STORE_MAIL_SENT);
	assert_int_equal(store_revision_latest(&rev, st, "g/p", 1), 0);
	assert_int_equal(rev.revision, 1);
	assert_int_equal(start_rev(st, "g/p", 1, SHA2), 2);
	/* ... and the new tables work. */
	record(st, "new@x", 0);
	assert_int_equal(store_check(st), 0);
	store_free(st);

	/* Migrating reaches exactly the schema a new database gets. */
	snprintf(fresh, sizeof(fresh), "%s/fresh.db", dir);
	store_free(open_rw(fresh));
	want = schema_dump(fresh);
	have = schema_dump(path);
	assert_string_equal(have, want);
	free(want);
	free(have);

	store_mail_release(&got);
	store_revision_release(&rev);
}

/*
 * Both engines: a database at an old schema (2), with rows of that time,
 * is refused by a reader, reported by store_probe(), and migrated by the
 * next writer, its rows intact and the new columns at their defaults (a
 * claim from before hosts were recorded belongs to no host).
 */
static void test_migrate_steps(void **state)
{
	const char *path = db_path("steps");
	struct store_opts o;
	struct store *st = NULL;
	struct store_mail got = STORE_MAIL_INIT;
	struct store_inbound in = { 0 };
	char *name = NULL;
	int v = 0, n = -1;

	memset(&o, 0, sizeof(o));
	o.backend = storebed_backend();
	o.target = path;
	o.flags = STORE_RW;
	o.busy_timeout_ms = BUSY_MS;
	o.schema_version = 2;
	assert_int_equal(store_open_opts(&st, &o), 0);
	assert_int_equal(store_schema_version(&v, st), 0);
	assert_int_equal(v, 2);
	store_free(st);
	storebed_exec(path, MIGRATE_ROWS, MIGRATE_ROWS);

	assert_int_equal(storebed_open(&st, path, STORE_RO, BUSY_MS), PB_ETEMP);
	assert_non_null(strstr(err_msg(), "older"));
	assert_int_equal(store_probe(&v, &name, &o), 0);
	assert_int_equal(v, 2);
	assert_non_null(name);
	free(name);

	assert_int_equal(storebed_open_host(&st, path, STORE_RW, "b", 0), 0);
	assert_int_equal(store_schema_version(&v, st), 0);
	assert_int_equal(v, store_schema_latest());
	assert_int_equal(store_mail_get(&got, st, "old-1@x"), 0);
	assert_string_equal(got.diff, "diff");
	assert_int_equal(got.state, STORE_MAIL_SENT);
	assert_null(got.sent_by);
	assert_int_equal(start_rev(st, "g/p", 1, SHA2), 2);
	/* The old claim has no owner: any host's start recovers it. */
	assert_int_equal(store_inbound_get(&in, st, "old-in@x"), 0);
	assert_int_equal(in.state, STORE_INBOUND_APPLYING);
	assert_null(in.claimed_by);
	assert_int_equal(store_inbound_recover(&n, st), 0);
	assert_int_equal(n, 1);
	assert_int_equal(store_inbound_claim(&in, st, time(NULL)), 0);
	assert_string_equal(in.message_id, "old-in@x");
	assert_string_equal(in.claimed_by, "b");
	assert_null(in.spooled_by);
	assert_int_equal(store_check(st), 0);
	store_free(st);

	/* A probe of a database with no schema, and of the current one. */
	o.target = db_path("steps0");
	assert_int_equal(store_probe(&v, &name, &o), 0);
	assert_int_equal(v, 0);
	free(name);
	o.target = path;
	assert_int_equal(store_probe(&v, &name, &o), 0);
	assert_int_equal(v, store_schema_latest());
	free(name);
	store_mail_release(&got);
	store_inbound_release(&in);
}

/*
 * Both engines: a database at schema 8, where a head was mailed once per
 * MR, keeps its revisions and the mails that name them when the step to
 * 9 makes a revision a head on a base; then the same head on a new base
 * (a retarget) takes the next number, and the mails' references to the
 * revisions still hold.
 */
#define RETARGET_ROWS                                                        \
	"INSERT INTO revisions (project, iid, revision, head_sha, base_sha," \
	" version_id, patch_id, patches, cover_msgid, state, created, sent)" \
	" VALUES ('g/p', 1, 1, '" SHA1 "', '" BASE "', 7, 'p1', 2,"          \
	" 'old-cover@x', 'sent', 10, 11);"                                   \
	"INSERT INTO thread_map (message_id, project, iid, revision, patch," \
	" total, kind, commit_sha, head_sha, diff, state, created, sent)"    \
	" VALUES ('old-1@x', 'g/p', 1, 1, 1, 2, 'patch', '" SHA3 "',"        \
	" '" SHA1 "', 'diff', 'sent', 10, 11);"
static void test_migrate_retarget(void **state)
{
	const char *path = db_path("retarget");
	struct store *st;
	struct store_revision rev = { 0 }, got = { 0 };
	struct store_mail m = STORE_MAIL_INIT;
	int v = 0, n = 0;

	(void)state;
	st = open_at(path, 8);
	assert_int_equal(store_schema_version(&v, st), 0);
	assert_int_equal(v, 8);
	store_free(st);
	storebed_exec(path, RETARGET_ROWS, RETARGET_ROWS);

	st = open_rw(path);
	assert_int_equal(store_schema_version(&v, st), 0);
	assert_int_equal(v, store_schema_latest());
	assert_int_equal(store_revision_by_head(&got, st, "g/p", 1, SHA1), 0);
	assert_int_equal(got.revision, 1);
	assert_string_equal(got.base_sha, BASE);
	assert_int_equal(got.version_id, 7);
	assert_string_equal(got.patch_id, "p1");
	assert_string_equal(got.cover_msgid, "old-cover@x");
	assert_int_equal(got.state, STORE_REVISION_SENT);
	assert_int_equal(got.sent, 11);
	assert_int_equal(store_mail_get(&m, st, "old-1@x"), 0);
	assert_int_equal(m.revision, 1);

	rev.project = "g/p";
	rev.iid = 1;
	rev.head_sha = SHA1;
	rev.base_sha = BASE;
	assert_int_equal(store_revision_start(&n, st, &rev), PB_EEXISTS);
	assert_int_equal(n, 1);
	rev.base_sha = START;
	assert_int_equal(store_revision_start(&n, st, &rev), 0);
	assert_int_equal(n, 2);
	assert_int_equal(store_revision_by_head(&got, st, "g/p", 1, SHA1), 0);
	assert_int_equal(got.revision, 2);
	/* A mail of a revision that does not exist is still refused. */
	store_mail_release(&m);
	fill_patch(&m, "new-1@x", 3, 1, 1, "diff");
	assert_int_not_equal(store_mail_put(st, &m), 0);
	fill_patch(&m, "new-1@x", 2, 1, 1, "diff");
	assert_int_equal(store_mail_put(st, &m), 0);
	assert_int_equal(store_check(st), 0);
	store_free(st);
	store_revision_release(&got);
	store_mail_release(&m);
}

/* A database at schema version, made by a writer that stops there. */
static void make_at_version(const char *path, int version)
{
	struct store_opts o;
	struct store *st = NULL;
	int v = 0;

	memset(&o, 0, sizeof(o));
	o.backend = storebed_backend();
	o.target = path;
	o.flags = STORE_RW;
	o.busy_timeout_ms = BUSY_MS;
	o.schema_version = version;
	assert_int_equal(store_open_opts(&st, &o), 0);
	assert_int_equal(store_schema_version(&v, st), 0);
	assert_int_equal(v, version);
	store_free(st);
}

/* Patch 1 of a series "s@x" of total from ann@example.org: added, and
 * *whole says whether it made the series whole. */
static void add_patch1(int *whole, struct store *st, int total,
		       const char *message)
{
	struct store_submission s;
	struct store_submitted sm;

	memset(&s, 0, sizeof(s));
	s.series_id = "s@x";
	s.sender = "ann@example.org";
	s.project = "g/p";
	s.version = 1;
	s.total = total;
	memset(&sm, 0, sizeof(sm));
	sm.message_id = "s@x";
	sm.patch = 1;
	sm.message = message;
	sm.message_len = strlen(message);
	assert_int_equal(store_submission_add(whole, st, &s, &sm), 0);
}

/*
 * Both engines: a database at schema 10, with revisions and mails, takes
 * the step to 11 (the submissions) with its rows intact, and collects a
 * series then.
 */
static void test_migrate_submissions(void **state)
{
	const char *path = db_path("submigrate");
	struct store *st = NULL;
	struct store_revision got = { 0 };
	struct store_mail m = STORE_MAIL_INIT;
	int v = 0, whole = 0;

	(void)state;
	make_at_version(path, 10);
	storebed_exec(path, RETARGET_ROWS, RETARGET_ROWS);

	st = open_rw(path);
	assert_int_equal(store_schema_version(&v, st), 0);
	assert_int_equal(v, store_schema_latest());
	assert_int_equal(store_revision_by_head(&got, st, "g/p", 1, SHA1), 0);
	assert_int_equal(got.revision, 1);
	assert_string_equal(got.cover_msgid, "old-cover@x");
	assert_int_equal(store_mail_get(&m, st, "old-1@x"), 0);
	assert_int_equal(m.revision, 1);
	add_patch1(&whole, st, 1, "Subject: [PATCH] s\n\nx\n");
	assert_int_equal(whole, 1);
	assert_int_equal(store_check(st), 0);
	store_free(st);
	store_revision_release(&got);
	store_mail_release(&m);
}

/*
 * Both engines: a database at schema 11 with a mailed revision takes the
 * step to 12: a receipt of no merge request (iid 0: the notice to the
 * sender of a series that became none) goes into the thread map and the
 * outbound queue, once; any other mail still needs its merge request.
 * And the queries the series' limits and reminders read.
 */
static void test_migrate_series_notices(void **state)
{
	const char *path = db_path("ntcmigrate");
	struct store *st = NULL;
	struct store_notice_place at = { "g/p", 0, 0, 0 };
	struct store_mail m = STORE_MAIL_INIT;
	static const char patch1[] = "Subject: [PATCH 1/2] s\n\nx\n";
	struct store_submission_list due = { 0 };
	struct store_notice row;
	int64_t n = -1;
	int v = 0, whole = 0;

	(void)state;
	make_at_version(path, 11);
	storebed_exec(path, RETARGET_ROWS, RETARGET_ROWS);
	st = open_rw(path);
	assert_int_equal(store_schema_version(&v, st), 0);
	assert_int_equal(v, store_schema_latest());
	assert_int_equal(store_notice_queue(st, "n1@x", &at, "b@x", "ann@x",
					    "Subject: n\n\nx\n", 13),
			 0);
	assert_int_equal(store_notice_queue(st, "n1@x", &at, "b@x", "ann@x",
					    "Subject: n\n\nx\n", 13),
			 PB_EEXISTS);
	assert_int_equal(store_mail_get(&m, st, "n1@x"), 0);
	assert_int_equal(m.iid, 0);
	assert_int_equal(m.kind, STORE_MAIL_RECEIPT);
	store_mail_release(&m);
	m.message_id = "p0@x";
	m.project = "g/p";
	m.iid = 0;
	m.kind = STORE_MAIL_FORGE_COMMENT;
	m.state = STORE_MAIL_PENDING;
	assert_int_equal(store_mail_put(st, &m), PB_EINVAL);

	/* a series of two patches, one come, old enough for a reminder */
	add_patch1(&whole, st, 2, patch1);
	assert_int_equal(whole, 0);
	assert_int_equal(store_submission_bytes(&n, st, "s@x"), 0);
	assert_int_equal(n, (int64_t)strlen(patch1));
	assert_int_equal(store_submission_bytes(&n, st, "none@x"), 0);
	assert_int_equal(n, 0);
	assert_int_equal(
		store_submission_count_sender(&n, st, "ann@example.org", 0), 0);
	assert_int_equal(n, 1);
	assert_int_equal(store_submission_count_sender(
				 &n, st, "ann@example.org", INT64_MAX / 2),
			 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_submission_list_due(&due, st, "g/p",
						   INT64_MAX / 2, "missing ",
						   "refused ", 0),
			 0);
	assert_int_equal(due.nr, 1);
	assert_string_equal(due.items[0].series_id, "s@x");
	store_submission_list_release(&due);
	assert_int_equal(store_submission_list_due(&due, st, "g/p", 0,
						   "missing ", "refused ", 0),
			 0);
	assert_int_equal(due.nr, 0); /* not old enough */
	assert_int_equal(store_submission_list_due(&due, st, "g/q",
						   INT64_MAX / 2, "missing ",
						   "refused ", 0),
			 0);
	assert_int_equal(due.nr, 0); /* another project's */
	/* told: listed no more */
	store_notice_init(&row);
	row.message_id = "missing s@x";
	row.decision = "sent";
	row.notice_id = "n1@x";
	row.recipient = "ann@example.org";
	row.reasons = "waits for 2/2";
	assert_int_equal(store_notice_put(st, &row), 0);
	assert_int_equal(store_submission_list_due(&due, st, "g/p",
						   INT64_MAX / 2, "missing ",
						   "refused ", 0),
			 0);
	assert_int_equal(due.nr, 0);
	store_submission_list_release(&due);
	assert_int_equal(store_check(st), 0);
	store_free(st);
}

/* A reader that opens a version-1 file before the daemon migrated it. */
static void test_reader_before_migration(void **state)
{
	const char *path = db_path("v1ro");
	struct store *st = NULL;

	if (storebed_pg())
		skip(); /* SQLite files: see test_migrate_steps */

	raw_exec(path, schema_v1);
	raw_exec(path, "PRAGMA journal_mode = WAL");
	assert_int_equal(storebed_open(&st, path, STORE_RO, BUSY_MS), PB_ETEMP);
	assert_non_null(strstr(err_msg(), "older"));
	assert_null(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_migrate_reopen),
		cmocka_unit_test(test_refuse_newer_schema),
		cmocka_unit_test(test_migrate_from_v1),
		cmocka_unit_test(test_migrate_steps),
		cmocka_unit_test(test_notices),
		cmocka_unit_test(test_migrate_retarget),
		cmocka_unit_test(test_migrate_submissions),
		cmocka_unit_test(test_migrate_series_notices),
		cmocka_unit_test(test_reader_before_migration),
	};
	return cmocka_run_group_tests(tests, setup, storetest_teardown);
}
