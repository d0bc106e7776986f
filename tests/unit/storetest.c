/*
 * storetest - what the state store's test programs share.  See
 * storetest.h.
 */
#include "cmocka_all.h"
#include "storebed.h"
#include "storetest.h"
#include "util/err.h"

#include <sqlite3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char dir[512];

int storetest_setup(const char *prog)
{
	const char *base = getenv("PB_TEST_TMP");

	snprintf(dir, sizeof(dir), "%s/%s.XXXXXX", base ? base : "/tmp", prog);
	if (!mkdtemp(dir))
		return -1;
	storebed_init(prog, dir);
	return 0;
}

int storetest_teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

const char *db_path(const char *name)
{
	return storebed_fresh(name);
}

struct store *open_rw(const char *path)
{
	struct store *st = NULL;

	if (storebed_open(&st, path, STORE_RW, BUSY_MS))
		fail_msg("open %s: %s", path, err_msg());
	return st;
}

void raw_integrity_ok(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	if (storebed_pg())
		return;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1,
					    &s, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(s, 0), "ok");
	sqlite3_finalize(s);
	sqlite3_close(db);
}

int start_rev(struct store *st, const char *project, int64_t iid,
	      const char *head)
{
	struct store_revision rev = { 0 };
	int n = -1;

	rev.project = project;
	rev.iid = iid;
	rev.head_sha = head;
	rev.base_sha = BASE;
	rev.start_sha = START;
	rev.version_id = 100;
	rev.patch_id = "p1";
	rev.patches = 2;
	rev.cover_msgid = "cover@x";
	if (store_revision_start(&n, st, &rev))
		fail_msg("start revision: %s", err_msg());
	return n;
}

void fill_patch(struct store_mail *m, const char *msgid, int rev, int k,
		int total, const char *diff)
{
	store_mail_init(m);
	m->message_id = msgid;
	m->project = "g/p";
	m->iid = 1;
	m->revision = rev;
	m->patch = k;
	m->total = total;
	m->kind = k ? STORE_MAIL_PATCH : STORE_MAIL_COVER;
	m->commit_sha = k ? SHA3 : NULL;
	m->base_sha = BASE;
	m->start_sha = START;
	m->head_sha = SHA1;
	m->version_id = 100;
	m->diff = diff;
	m->diff_len = diff ? strlen(diff) : 0;
}

void record(struct store *st, const char *msgid, int64_t next)
{
	struct store_inbound in = { 0 };

	in.message_id = msgid;
	in.spool_name = "1700000000.12345.host";
	in.project = "g/p";
	in.iid = 1;
	in.revision = 2;
	in.patch = 1;
	in.classification = "reply";
	in.next_attempt = next;
	if (store_inbound_record(st, &in))
		fail_msg("record %s: %s", msgid, err_msg());
}
