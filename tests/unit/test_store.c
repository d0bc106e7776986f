/*
 * Tests of the state store: each table's API, and the properties the
 * daemon and the milter rely on - one writer with readers in other
 * processes, and no trace of a transaction a crash interrupted.  The
 * schema and its migrations are test_store_migrate.c's; storetest.h is
 * what the two share.
 *
 * The same tests judge both engines (storebed.h): SQLite files, or
 * PostgreSQL databases with PB_TEST_BACKEND=postgresql (CTest's
 * test_store_pg).  What only one engine has - SQLite's -wal files, its
 * file permissions - is tested on that engine only.
 *
 * The test opens the database directly only to do what the store cannot
 * do itself (an independent integrity check).
 */
#include "cmocka_all.h"
#include "state/store.h"
#include "storebed.h"
#include "storetest.h"
#include "util/buf.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int setup(void **state)
{
	(void)state;
	return storetest_setup("store");
}

static void test_open_errors(void **state)
{
	struct store *st = (struct store *)1;
	const char *path = db_path("errors");
	int fd;

	assert_int_equal(storebed_open(&st, path, STORE_RO | STORE_RW, 0),
			 PB_EINVAL);
	assert_null(st);
	assert_int_equal(storebed_open(&st, path, STORE_RW, -1), PB_EINVAL);
	assert_int_equal(storebed_open(&st, "", STORE_RW, 0), PB_EINVAL);

	if (storebed_pg()) {
		char bad[1300];

		/* A database the daemon has not yet created tables in. */
		assert_int_equal(storebed_open(&st, path, STORE_RO, 0),
				 PB_ENOTFOUND);
		assert_non_null(strstr(err_msg(), "not initialised"));
		assert_null(st);
		/* A database that does not exist is an error to fix. */
		snprintf(bad, sizeof(bad), "%s", storebed_missing());
		assert_int_equal(storebed_open(&st, bad, STORE_RW, 0),
				 PB_ERROR);
		assert_non_null(strstr(err_msg(), "no such database"));
		assert_null(st);
		return;
	}
	/* A reader before the daemon ever ran. */
	assert_int_equal(storebed_open(&st, path, STORE_RO, 0), PB_ENOTFOUND);
	assert_non_null(strstr(err_msg(), "does not exist"));
	assert_null(st);
	/* ... or after it created the file but before it migrated. */
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(storebed_open(&st, path, STORE_RO, 0), PB_ENOTFOUND);
	assert_non_null(strstr(err_msg(), "not initialised"));

	/* Not a database at all. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "garbage garbage garbage garbage!", 32), 32);
	close(fd);
	assert_int_equal(storebed_open(&st, path, STORE_RW, 0), PB_ERROR);
	assert_null(st);
}

/*
 * The daemon's state directory holds what it trusts most (the thread
 * map, the journals, the mail archive): a directory others may write
 * (even a sticky one: an attacker could create the database's -wal file
 * first) or a database that is a link is refused.  The milter, which
 * only reads, is not held to this.
 */
static void test_open_unsafe_dir(void **state)
{
	char sub[700], path[800], victim[800];
	struct store *st = NULL;

	(void)state;
	if (storebed_pg())
		skip(); /* SQLite's files */
	snprintf(sub, sizeof(sub), "%s/shared", dir);
	assert_int_equal(mkdir(sub, 0777), 0);
	assert_int_equal(chmod(sub, 01777), 0);
	snprintf(path, sizeof(path), "%s/state.db", sub);
	assert_int_equal(store_open(&st, path, STORE_RW, 0), PB_EPERM);
	assert_null(st);
	assert_non_null(strstr(err_msg(), "state directory"));
	assert_non_null(strstr(err_msg(), "writable by"));
	assert_non_null(strstr(err_msg(), "2750"));
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(chmod(sub, 0770), 0);
	assert_int_equal(store_open(&st, path, STORE_RW, 0), PB_EPERM);
	assert_int_equal(chmod(sub, 02750), 0);

	/* The database itself as a link. */
	snprintf(victim, sizeof(victim), "%s/victim.db", dir);
	store_free(open_rw(victim));
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(store_open(&st, path, STORE_RW, 0), PB_EPERM);
	assert_non_null(strstr(err_msg(), "symbolic link"));
	assert_int_equal(unlink(path), 0);
	store_free(open_rw(path));
}

static void test_read_only_store(void **state)
{
	const char *path = db_path("ro");
	struct store *rw = open_rw(path), *ro = NULL;
	struct store_mail m, got = STORE_MAIL_INIT;

	assert_int_equal(start_rev(rw, "g/p", 1, SHA1), 1);
	fill_patch(&m, "ro-1@x", 1, 1, 2, "diff");
	assert_int_equal(store_mail_put(rw, &m), 0);

	assert_int_equal(storebed_open(&ro, path, STORE_RO, BUSY_MS), 0);
	assert_int_equal(store_mail_get(&got, ro, "ro-1@x"), 0);
	assert_string_equal(got.diff, "diff");
	fill_patch(&m, "ro-2@x", 1, 2, 2, NULL);
	assert_int_equal(store_mail_put(ro, &m), PB_EPERM);
	assert_int_equal(store_cursor_set(ro, "x", "y"), PB_EPERM);
	/* A read snapshot on the reader. */
	assert_int_equal(store_begin(ro), 0);
	assert_int_equal(store_mail_get(&got, ro, "ro-1@x"), 0);
	assert_int_equal(store_mail_put(rw, &m), 0);
	assert_int_equal(store_mail_get(&got, ro, "ro-2@x"), PB_ENOTFOUND);
	assert_int_equal(store_commit(ro), 0);
	assert_int_equal(store_mail_get(&got, ro, "ro-2@x"), 0);

	store_mail_release(&got);
	store_free(ro);
	store_free(rw);
}

static void test_mail_roundtrip(void **state)
{
	const char *path = db_path("mail");
	struct store *st = open_rw(path);
	struct store_mail m, got = STORE_MAIL_INIT;
	size_t big_len = 3 * 1024 * 1024;
	char *big = malloc(big_len + 1);

	memset(big, 'd', big_len);
	big[big_len] = '\0';
	assert_int_equal(start_rev(st, "g/p", 1, SHA1), 1);

	fill_patch(&m, "pb-v1-1.2-g.p.1.111@bridge", 1, 1, 2, big);
	assert_int_equal(store_mail_put(st, &m), 0);
	assert_int_equal(store_mail_get(&got, st, m.message_id), 0);
	assert_string_equal(got.message_id, m.message_id);
	assert_string_equal(got.project, "g/p");
	assert_int_equal(got.iid, 1);
	assert_int_equal(got.revision, 1);
	assert_int_equal(got.patch, 1);
	assert_int_equal(got.total, 2);
	assert_int_equal(got.kind, STORE_MAIL_PATCH);
	assert_string_equal(got.commit_sha, SHA3);
	assert_string_equal(got.base_sha, BASE);
	assert_string_equal(got.start_sha, START);
	assert_string_equal(got.head_sha, SHA1);
	assert_int_equal(got.version_id, 100);
	assert_int_equal(got.diff_len, big_len);
	assert_memory_equal(got.diff, big, big_len);
	assert_null(got.discussion_id);
	assert_int_equal(got.note_id, 0);
	assert_int_equal(got.state, STORE_MAIL_PENDING);
	assert_true(got.created > 0);
	assert_int_equal(got.sent, 0);

	/* Insert or ignore: the second put changes nothing. */
	fill_patch(&m, "pb-v1-1.2-g.p.1.111@bridge", 1, 1, 2, "other");
	assert_int_equal(store_mail_put(st, &m), PB_EEXISTS);
	assert_int_equal(store_mail_get(&got, st, m.message_id), 0);
	assert_int_equal(got.diff_len, big_len);

	/* Another Message-ID for the same patch slot is refused too. */
	fill_patch(&m, "dup-slot@bridge", 1, 1, 2, NULL);
	assert_int_equal(store_mail_put(st, &m), PB_EEXISTS);
	assert_int_equal(store_mail_get(&got, st, "dup-slot@bridge"),
			 PB_ENOTFOUND);

	assert_int_equal(store_mail_mark_sent(st, "pb-v1-1.2-g.p.1.111@bridge"),
			 0);
	assert_int_equal(store_mail_get(&got, st, "pb-v1-1.2-g.p.1.111@bridge"),
			 0);
	assert_int_equal(got.state, STORE_MAIL_SENT);
	assert_true(got.sent >= got.created);
	assert_int_equal(store_mail_mark_sent(st, "nope@x"), PB_ENOTFOUND);

	assert_int_equal(store_mail_find(&got, st, "g/p", 1, 1, 1), 0);
	assert_string_equal(got.message_id, "pb-v1-1.2-g.p.1.111@bridge");
	assert_int_equal(store_mail_find(&got, st, "g/p", 1, 1, 2),
			 PB_ENOTFOUND);
	assert_int_equal(store_mail_find(&got, st, "g/p", 1, 2, 1),
			 PB_ENOTFOUND);

	store_mail_release(&got);
	free(big);
	store_free(st);
}

static void test_mail_validation(void **state)
{
	const char *path = db_path("valid");
	struct store *st = open_rw(path);
	struct store_mail m, got = STORE_MAIL_INIT;
	char *longid = malloc(STORE_MSGID_MAX + 2);

	assert_int_equal(start_rev(st, "g/p", 1, SHA1), 1);
	memset(longid, 'x', STORE_MSGID_MAX + 1);
	longid[STORE_MSGID_MAX + 1] = '\0';
	fill_patch(&m, longid, 1, 1, 2, NULL);
	assert_int_equal(store_mail_put(st, &m), PB_EINVAL);
	assert_non_null(strstr(err_msg(), "too long"));
	assert_int_equal(store_mail_get(&got, st, longid), PB_EINVAL);
	longid[STORE_MSGID_MAX] = '\0'; /* exactly at the cap is fine */
	fill_patch(&m, longid, 1, 1, 2, NULL);
	assert_int_equal(store_mail_put(st, &m), 0);

	fill_patch(&m, "", 1, 1, 2, NULL);
	assert_int_equal(store_mail_put(st, &m), PB_EINVAL);
	fill_patch(&m, "a@x", 1, 3, 2, NULL); /* k > M */
	assert_int_equal(store_mail_put(st, &m), PB_EINVAL);
	fill_patch(&m, "a@x", 0, 1, 2, NULL); /* a patch needs a revision */
	assert_int_equal(store_mail_put(st, &m), PB_EINVAL);
	fill_patch(&m, "a@x", 1, 1, 2, NULL);
	m.kind = STORE_MAIL_COVER; /* a cover is patch 0 */
	assert_int_equal(store_mail_put(st, &m), PB_EINVAL);
	fill_patch(&m, "a@x", 1, 1, 2, NULL);
	m.commit_sha = "not-hex";
	assert_int_equal(store_mail_put(st, &m), PB_EINVAL);
	fill_patch(&m, "a@x", 1, 1, 2, NULL);
	m.iid = 0;
	assert_int_equal(store_mail_put(st, &m), PB_EINVAL);
	/* The revision must have been started (foreign key). */
	fill_patch(&m, "a@x", 7, 1, 2, NULL);
	assert_int_equal(store_mail_put(st, &m), PB_EINVAL);
	assert_non_null(strcasestr(err_msg(), "foreign key"));
	assert_int_equal(store_mail_get(&got, st, "a@x"), PB_ENOTFOUND);
	assert_int_equal(store_mail_get(&got, st, longid), 0);
	assert_int_equal(strlen(got.message_id), STORE_MSGID_MAX);

	store_mail_release(&got);
	free(longid);
	store_free(st);
}

static void test_mail_lists_and_forge_ids(void **state)
{
	const char *path = db_path("list");
	struct store *st = open_rw(path);
	struct store_mail m, got = STORE_MAIL_INIT;
	struct store_mail_list list = { 0 };
	char id[64];
	int k;

	assert_int_equal(start_rev(st, "g/p", 1, SHA1), 1);
	/* A forge comment first, then the series out of order. */
	store_mail_init(&m);
	m.message_id = "comment-1@x";
	m.project = "g/p";
	m.iid = 1;
	m.revision = 1;
	m.patch = 2;
	m.total = 3;
	m.kind = STORE_MAIL_FORGE_COMMENT;
	m.discussion_id = "d00d";
	m.note_id = 501;
	m.state = STORE_MAIL_SENT;
	assert_int_equal(store_mail_put(st, &m), 0);
	m.message_id = "comment-2@x";
	m.note_id = 502;
	m.state = STORE_MAIL_PENDING;
	assert_int_equal(store_mail_put(st, &m), 0);
	for (k = 3; k >= 0; k--) {
		snprintf(id, sizeof(id), "series-%d@x", k);
		fill_patch(&m, id, 1, k, 3, NULL);
		assert_int_equal(store_mail_put(st, &m), 0);
	}

	assert_int_equal(store_mail_list_revision(&list, st, "g/p", 1, 1), 0);
	assert_int_equal(list.nr, 6);
	for (k = 0; k <= 3; k++) {
		snprintf(id, sizeof(id), "series-%d@x", k);
		assert_string_equal(list.items[k].message_id, id);
	}
	assert_string_equal(list.items[4].message_id, "comment-1@x");
	assert_string_equal(list.items[5].message_id, "comment-2@x");
	assert_int_equal(list.items[4].state, STORE_MAIL_SENT);
	assert_true(list.items[4].sent > 0);
	store_mail_list_release(&list);
	assert_int_equal(store_mail_list_revision(&list, st, "g/p", 1, 2), 0);
	assert_int_equal(list.nr, 0);
	store_mail_list_release(&list);

	assert_int_equal(store_mail_by_discussion(&got, st, "g/p", "d00d"), 0);
	assert_string_equal(got.message_id, "comment-2@x");
	assert_int_equal(store_mail_by_note(&got, st, "g/p", 501), 0);
	assert_string_equal(got.message_id, "comment-1@x");
	assert_string_equal(got.discussion_id, "d00d");
	assert_int_equal(store_mail_by_note(&got, st, "other/p", 501),
			 PB_ENOTFOUND);
	assert_int_equal(store_mail_by_discussion(&got, st, "g/p", "x"),
			 PB_ENOTFOUND);

	/* A comment on an MR that was never mailed has no revision. */
	store_mail_init(&m);
	m.message_id = "loose@x";
	m.project = "g/p";
	m.iid = 9;
	m.kind = STORE_MAIL_FORGE_COMMENT;
	assert_int_equal(store_mail_put(st, &m), 0);
	assert_int_equal(store_mail_get(&got, st, "loose@x"), 0);
	assert_int_equal(got.revision, 0);

	store_mail_release(&got);
	store_free(st);
}

static void test_revision_numbers(void **state)
{
	const char *path = db_path("rev");
	struct store *st = open_rw(path);
	struct store_revision rev = { 0 }, got = { 0 };
	int n = 0;

	assert_int_equal(store_revision_latest(&got, st, "g/p", 1),
			 PB_ENOTFOUND);
	assert_int_equal(start_rev(st, "g/p", 1, SHA1), 1);
	assert_int_equal(start_rev(st, "g/p", 1, SHA2), 2);
	/* Numbers are per MR. */
	assert_int_equal(start_rev(st, "g/p", 2, SHA1), 1);
	assert_int_equal(start_rev(st, "g/q", 1, SHA1), 1);
	assert_int_equal(start_rev(st, "g/p", 1, SHA3), 3);

	/* A head on a base is mailed once: the existing number comes
	 * back. */
	rev.project = "g/p";
	rev.iid = 1;
	rev.head_sha = SHA2;
	rev.base_sha = BASE;
	assert_int_equal(store_revision_start(&n, st, &rev), PB_EEXISTS);
	assert_int_equal(n, 2);
	assert_int_equal(store_revision_latest(&got, st, "g/p", 1), 0);
	assert_int_equal(got.revision, 3);
	assert_int_equal(store_revision_by_base(&got, st, "g/p", 1, SHA2,
						START),
			 PB_ENOTFOUND);

	assert_int_equal(store_revision_by_head(&got, st, "g/p", 1, SHA2), 0);
	assert_int_equal(got.revision, 2);
	assert_string_equal(got.project, "g/p");
	assert_int_equal(got.iid, 1);
	assert_string_equal(got.base_sha, BASE);
	assert_string_equal(got.start_sha, START);
	assert_int_equal(got.version_id, 100);
	assert_string_equal(got.patch_id, "p1");
	assert_int_equal(got.patches, 2);
	assert_string_equal(got.cover_msgid, "cover@x");
	assert_int_equal(got.state, STORE_REVISION_SENDING);
	assert_true(got.created > 0);
	assert_int_equal(got.sent, 0);
	assert_int_equal(store_revision_by_head(&got, st, "g/p", 2, SHA2),
			 PB_ENOTFOUND);

	assert_int_equal(store_revision_mark_sent(st, "g/p", 1, 2), 0);
	assert_int_equal(store_revision_get(&got, st, "g/p", 1, 2), 0);
	assert_int_equal(got.state, STORE_REVISION_SENT);
	assert_true(got.sent > 0);
	assert_int_equal(store_revision_mark_sent(st, "g/p", 1, 9),
			 PB_ENOTFOUND);
	assert_int_equal(store_revision_get(&got, st, "g/p", 1, 9),
			 PB_ENOTFOUND);

	/* The same head on a new base (a retarget) is a new revision;
	 * the head then names the newest, the head and base each. */
	rev.base_sha = START;
	assert_int_equal(store_revision_start(&n, st, &rev), 0);
	assert_int_equal(n, 4);
	assert_int_equal(store_revision_start(&n, st, &rev), PB_EEXISTS);
	assert_int_equal(n, 4);
	assert_int_equal(store_revision_by_head(&got, st, "g/p", 1, SHA2), 0);
	assert_int_equal(got.revision, 4);
	assert_int_equal(store_revision_by_base(&got, st, "g/p", 1, SHA2, BASE),
			 0);
	assert_int_equal(got.revision, 2);
	/* No base known is a base of its own, and kept once too. */
	rev.base_sha = NULL;
	assert_int_equal(store_revision_start(&n, st, &rev), 0);
	assert_int_equal(n, 5);
	assert_int_equal(store_revision_start(&n, st, &rev), PB_EEXISTS);
	assert_int_equal(n, 5);
	assert_int_equal(store_revision_by_base(&got, st, "g/p", 1, SHA2, NULL),
			 0);
	assert_int_equal(got.revision, 5);

	rev.head_sha = "xyz";
	assert_int_equal(store_revision_start(&n, st, &rev), PB_EINVAL);
	rev.head_sha = NULL;
	assert_int_equal(store_revision_start(&n, st, &rev), PB_EINVAL);

	/* The latest revision of each MR started since a time: g/p !1's
	 * v5 and !2's v1; none started in the future. */
	{
		struct store_revision_list rl = { 0 };

		assert_int_equal(store_revision_recent(&rl, st, "g/p", 1, 0),
				 0);
		assert_int_equal(rl.nr, 2);
		assert_int_equal(rl.items[0].iid, 1);
		assert_int_equal(rl.items[0].revision, 5);
		assert_int_equal(rl.items[1].iid, 2);
		assert_int_equal(rl.items[1].revision, 1);
		store_revision_list_release(&rl);
		assert_int_equal(
			store_revision_recent(&rl, st, "g/p",
					      (int64_t)time(NULL) + 3600, 0),
			0);
		assert_int_equal(rl.nr, 0);
		store_revision_list_release(&rl);
	}

	store_revision_release(&got);
	store_free(st);
}

static void test_cursors(void **state)
{
	const char *path = db_path("cursor");
	struct store *st = open_rw(path);
	struct buf b = BUF_INIT(64), tiny = BUF_INIT(4);

	assert_int_equal(store_cursor_get(&b, st, "notes:g/p!12"),
			 PB_ENOTFOUND);
	assert_int_equal(store_cursor_set(st, "notes:g/p!12", "1000"), 0);
	assert_int_equal(store_cursor_set(st, "notes:g/p!12", "1007"), 0);
	assert_int_equal(
		store_cursor_set(st, "poll:g/p", "2024-05-01T10:00:00Z"), 0);
	assert_int_equal(store_cursor_get(&b, st, "notes:g/p!12"), 0);
	assert_string_equal(b.data, "1007");
	assert_int_equal(store_cursor_get(&b, st, "poll:g/p"), 0);
	assert_string_equal(b.data, "2024-05-01T10:00:00Z");
	assert_int_equal(store_cursor_get(&tiny, st, "poll:g/p"), PB_ELIMIT);
	assert_int_equal(store_cursor_set(st, "", "x"), PB_EINVAL);
	buf_release(&b);
	buf_release(&tiny);
	store_free(st);
}

static void test_transactions(void **state)
{
	const char *path = db_path("tx");
	struct store *st = open_rw(path);
	struct buf b = BUF_INIT(64);

	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_cursor_set(st, "a", "1"), 0);
	assert_int_equal(store_cursor_set(st, "b", "2"), 0);
	assert_int_equal(store_rollback(st), 0);
	assert_int_equal(store_cursor_get(&b, st, "a"), PB_ENOTFOUND);

	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_cursor_set(st, "a", "1"), 0);
	/* A failing call inside leaves the transaction usable. */
	assert_int_equal(store_cursor_set(st, NULL, "x"), PB_EINVAL);
	assert_int_equal(start_rev(st, "g/p", 1, SHA1), 1);
	assert_int_equal(start_rev(st, "g/p", 1, SHA2), 2);
	assert_int_equal(store_commit(st), 0);
	assert_int_equal(store_cursor_get(&b, st, "a"), 0);
	assert_string_equal(b.data, "1");

	/* A second writer waits for the first, then fails with ETEMP
	 * (SQLite: the first holds the write lock; PostgreSQL: the row). */
	{
		struct store *other = NULL;
		int tries, rc;

		/* Its open may wait behind another test program creating
		 * the shared PostgreSQL test database: wait for that, up to
		 * a minute, and keep the short timeout for what is tested. */
		for (tries = 0; (rc = storebed_open(&other, path, STORE_RW,
						    50)) == PB_ETEMP &&
				tries < 600;
		     tries++)
			usleep(100 * 1000);
		assert_int_equal(rc, 0);
		assert_int_equal(store_begin(st), 0);
		assert_int_equal(store_cursor_set(st, "c", "0"), 0);
		assert_int_equal(store_cursor_set(other, "c", "3"), PB_ETEMP);
		assert_int_equal(store_commit(st), 0);
		assert_int_equal(store_cursor_set(other, "c", "3"), 0);
		store_free(other);
	}
	/* Closing with a transaction open rolls it back. */
	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_cursor_set(st, "d", "4"), 0);
	store_free(st);
	st = open_rw(path);
	assert_int_equal(store_cursor_get(&b, st, "d"), PB_ENOTFOUND);
	buf_release(&b);
	store_free(st);
}

static void test_inbound_journal(void **state)
{
	const char *path = db_path("inbound");
	struct store *st = open_rw(path);
	struct store_inbound in = { 0 }, got = { 0 };
	struct store_inbound_list list = { 0 };
	enum store_inbound_state s;
	int64_t t0 = time(NULL);
	int n;

	record(st, "late@x", t0 + 3600);
	record(st, "first@x", 0);
	record(st, "second@x", 0);
	/* A second delivery of the same mail is recorded once. */
	in.message_id = "first@x";
	in.spool_name = "other-record";
	in.classification = "reply";
	assert_int_equal(store_inbound_record(st, &in), PB_EEXISTS);

	assert_int_equal(store_inbound_get(&got, st, "first@x"), 0);
	assert_string_equal(got.spool_name, "1700000000.12345.host");
	assert_string_equal(got.project, "g/p");
	assert_int_equal(got.iid, 1);
	assert_int_equal(got.revision, 2);
	assert_int_equal(got.patch, 1);
	assert_string_equal(got.classification, "reply");
	assert_int_equal(got.state, STORE_INBOUND_RECEIVED);
	assert_int_equal(got.attempts, 0);
	assert_null(got.last_error);
	assert_true(got.created >= t0);

	/* Claims come oldest-due first and count the attempt. */
	assert_int_equal(store_inbound_claim(&got, st, t0 + 1), 0);
	assert_string_equal(got.message_id, "first@x");
	assert_int_equal(got.state, STORE_INBOUND_APPLYING);
	assert_int_equal(got.attempts, 1);
	assert_int_equal(store_inbound_claim(&got, st, t0 + 1), 0);
	assert_string_equal(got.message_id, "second@x");
	/* "late@x" is not due yet. */
	assert_int_equal(store_inbound_claim(&got, st, t0 + 1), PB_ENOTFOUND);

	assert_int_equal(store_inbound_finish(st, "first@x",
					      STORE_INBOUND_APPLIED, NULL),
			 0);
	assert_int_equal(store_inbound_get(&got, st, "first@x"), 0);
	assert_int_equal(got.state, STORE_INBOUND_APPLIED);
	/* Finishing twice, or something never claimed, is refused. */
	assert_int_equal(store_inbound_finish(st, "first@x",
					      STORE_INBOUND_APPLIED, NULL),
			 PB_EINVAL);
	assert_non_null(strstr(err_msg(), "applied"));
	assert_int_equal(store_inbound_finish(st, "late@x",
					      STORE_INBOUND_IGNORED, NULL),
			 PB_EINVAL);
	assert_int_equal(store_inbound_finish(st, "nope@x",
					      STORE_INBOUND_IGNORED, NULL),
			 PB_ENOTFOUND);
	assert_int_equal(store_inbound_finish(st, "second@x",
					      STORE_INBOUND_FAILED, NULL),
			 PB_EINVAL);

	/* Retry with backoff: due again only at its time. */
	assert_int_equal(store_inbound_retry(st, "second@x", t0 + 60,
					     "forge: 502 Bad Gateway"),
			 0);
	assert_int_equal(store_inbound_claim(&got, st, t0 + 59), PB_ENOTFOUND);
	assert_int_equal(store_inbound_get(&got, st, "second@x"), 0);
	assert_int_equal(got.state, STORE_INBOUND_FAILED);
	assert_int_equal(got.next_attempt, t0 + 60);
	assert_string_equal(got.last_error, "forge: 502 Bad Gateway");
	assert_int_equal(store_inbound_claim(&got, st, t0 + 60), 0);
	assert_string_equal(got.message_id, "second@x");
	assert_int_equal(got.attempts, 2);
	/* Waiting for the operator is no attempt: the claim is taken back. */
	assert_int_equal(store_inbound_wait(st, "second@x", t0 + 61,
					    "the forge token has expired"),
			 0);
	assert_int_equal(store_inbound_wait(st, "second@x", t0 + 61, "x"),
			 PB_EINVAL);
	assert_int_equal(store_inbound_claim(&got, st, t0 + 60), PB_ENOTFOUND);
	assert_int_equal(store_inbound_get(&got, st, "second@x"), 0);
	assert_int_equal(got.state, STORE_INBOUND_FAILED);
	assert_int_equal(got.attempts, 1);
	assert_string_equal(got.last_error, "the forge token has expired");
	assert_int_equal(store_inbound_claim(&got, st, t0 + 61), 0);
	assert_string_equal(got.message_id, "second@x");
	assert_int_equal(got.attempts, 2);
	assert_int_equal(store_inbound_finish(st, "second@x",
					      STORE_INBOUND_DEAD,
					      "gave up after 2 attempts"),
			 0);

	assert_int_equal(store_inbound_list(&list, st, STORE_INBOUND_DEAD, 0),
			 0);
	assert_int_equal(list.nr, 1);
	assert_string_equal(list.items[0].message_id, "second@x");
	assert_string_equal(list.items[0].last_error,
			    "gave up after 2 attempts");
	store_inbound_list_release(&list);
	assert_int_equal(
		store_inbound_list(&list, st, STORE_INBOUND_RECEIVED, 0), 0);
	assert_int_equal(list.nr, 1);
	store_inbound_list_release(&list);

	/* A crash while applying: recovery puts the row back. */
	assert_int_equal(store_inbound_claim(&got, st, t0 + 7200), 0);
	assert_string_equal(got.message_id, "late@x");
	assert_int_equal(store_inbound_recover(&n, st), 0);
	assert_int_equal(n, 1);
	assert_int_equal(store_inbound_get(&got, st, "late@x"), 0);
	assert_int_equal(got.state, STORE_INBOUND_RECEIVED);
	assert_int_equal(store_inbound_recover(&n, st), 0);
	assert_int_equal(n, 0);

	assert_int_equal(store_inbound_state_from_name(&s, "failed"), 0);
	assert_int_equal(s, STORE_INBOUND_FAILED);
	assert_string_equal(store_inbound_state_name(s), "failed");
	assert_int_equal(store_inbound_state_from_name(&s, "bogus"), PB_EINVAL);

	store_inbound_release(&got);
	store_free(st);
}

static void test_inbound_validation(void **state)
{
	const char *path = db_path("inval");
	struct store *st = open_rw(path);
	struct store_inbound in = { 0 }, got = { 0 };
	char *err = malloc(3 * STORE_ERROR_MAX);

	in.message_id = "x@y";
	in.spool_name = "../etc/passwd";
	in.classification = "reply";
	assert_int_equal(store_inbound_record(st, &in), PB_EINVAL);
	in.spool_name = "rec";
	in.classification = "Reply; DROP TABLE";
	assert_int_equal(store_inbound_record(st, &in), PB_EINVAL);
	in.classification = "other";
	in.project = "g/p";
	in.iid = 0;
	assert_int_equal(store_inbound_record(st, &in), PB_EINVAL);
	/* No target at all is fine. */
	in.project = NULL;
	assert_int_equal(store_inbound_record(st, &in), 0);
	assert_int_equal(store_inbound_get(&got, st, "x@y"), 0);
	assert_null(got.project);
	assert_int_equal(got.iid, 0);

	/* A long error text is cut, not refused. */
	memset(err, 'e', 3 * STORE_ERROR_MAX - 1);
	err[3 * STORE_ERROR_MAX - 1] = '\0';
	assert_int_equal(store_inbound_claim(&got, st, time(NULL)), 0);
	assert_int_equal(store_inbound_retry(st, "x@y", time(NULL) + 5, err),
			 0);
	assert_int_equal(store_inbound_get(&got, st, "x@y"), 0);
	assert_int_equal(strlen(got.last_error), STORE_ERROR_MAX);

	free(err);
	store_inbound_release(&got);
	store_free(st);
}

/* Record a row of project (NULL: none) and take it to state. */
static void inbound_in_state(struct store *st, const char *msgid,
			     const char *project, enum store_inbound_state s)
{
	struct store_inbound in = { 0 }, got = { 0 };

	in.message_id = msgid;
	in.spool_name = "1700000000.12345.host";
	in.project = project;
	in.iid = project ? 1 : 0;
	in.classification = "reply";
	if (store_inbound_record(st, &in))
		fail_msg("record %s: %s", msgid, err_msg());
	if (s == STORE_INBOUND_RECEIVED)
		return;
	/* Every earlier row is finished, so this one is claimed. */
	assert_int_equal(store_inbound_claim(&got, st, time(NULL)), 0);
	assert_string_equal(got.message_id, msgid);
	store_inbound_release(&got);
	if (s == STORE_INBOUND_FAILED)
		assert_int_equal(store_inbound_retry(st, msgid,
						     time(NULL) + 3600, "503"),
				 0);
	else if (s != STORE_INBOUND_APPLYING)
		assert_int_equal(store_inbound_finish(st, msgid, s, NULL), 0);
}

static int64_t count_of(const struct store_inbound_count_list *l,
			const char *project, enum store_inbound_state s)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (l->items[i].state == s &&
		    (project ? l->items[i].project &&
				       !strcmp(l->items[i].project, project) :
			       !l->items[i].project))
			return l->items[i].count;
	return 0;
}

/*
 * Counts per (project, state) are the database's, exact past the
 * STORE_LIST_MAX rows a list returns: 10005 applied mails of one project
 * do not hide the 3 of another.
 */
static void test_inbound_count(void **state)
{
	const char *path = db_path("count");
	struct store *st = open_rw(path), *ro = NULL;
	struct store_inbound_count_list l = { 0 };
	struct store_inbound_list list = { 0 };
	char id[64];
	int i;

	assert_int_equal(store_inbound_count(&l, st), 0);
	assert_int_equal(l.nr, 0);

	/* In transactions of 500: PostgreSQL keeps every version of a row a
	 * transaction changed until it ends, and a claim passes them. */
	assert_int_equal(store_begin(st), 0);
	for (i = 0; i < STORE_LIST_MAX + 5; i++) {
		snprintf(id, sizeof(id), "bulk-%d@x", i);
		inbound_in_state(st, id, "other/proj", STORE_INBOUND_APPLIED);
		if (i % 500 == 499) {
			assert_int_equal(store_commit(st), 0);
			assert_int_equal(store_begin(st), 0);
		}
	}
	assert_int_equal(store_commit(st), 0);
	for (i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "mine-%d@x", i);
		inbound_in_state(st, id, "group/project",
				 STORE_INBOUND_APPLIED);
	}
	inbound_in_state(st, "ignored@x", "group/project",
			 STORE_INBOUND_IGNORED);
	inbound_in_state(st, "dead@x", "group/project", STORE_INBOUND_DEAD);
	inbound_in_state(st, "failed@x", "group/project", STORE_INBOUND_FAILED);
	inbound_in_state(st, "applying@x", "other/proj",
			 STORE_INBOUND_APPLYING);
	inbound_in_state(st, "waiting@x", "group/project",
			 STORE_INBOUND_RECEIVED);
	inbound_in_state(st, "nowhere@x", NULL, STORE_INBOUND_RECEIVED);

	/* The list stops at its cap, oldest first... */
	assert_int_equal(
		store_inbound_list(&list, st, STORE_INBOUND_APPLIED, 0), 0);
	assert_int_equal(list.nr, STORE_LIST_MAX);
	assert_string_equal(list.items[0].message_id, "bulk-0@x");
	store_inbound_list_release(&list);
	/* ...the counts do not, and they hold on a reader's snapshot. */
	assert_int_equal(storebed_open(&ro, path, STORE_RO, BUSY_MS), 0);
	assert_int_equal(store_begin(ro), 0);
	assert_int_equal(store_inbound_count(&l, ro), 0);
	assert_int_equal(store_rollback(ro), 0);
	assert_int_equal(l.nr, 8);
	assert_null(l.items[0].project); /* NULL first */
	assert_int_equal(count_of(&l, NULL, STORE_INBOUND_RECEIVED), 1);
	assert_int_equal(count_of(&l, "other/proj", STORE_INBOUND_APPLIED),
			 STORE_LIST_MAX + 5);
	assert_int_equal(count_of(&l, "other/proj", STORE_INBOUND_APPLYING), 1);
	assert_int_equal(count_of(&l, "group/project", STORE_INBOUND_APPLIED),
			 3);
	assert_int_equal(count_of(&l, "group/project", STORE_INBOUND_IGNORED),
			 1);
	assert_int_equal(count_of(&l, "group/project", STORE_INBOUND_DEAD), 1);
	assert_int_equal(count_of(&l, "group/project", STORE_INBOUND_FAILED),
			 1);
	assert_int_equal(count_of(&l, "group/project", STORE_INBOUND_RECEIVED),
			 1);
	assert_int_equal(count_of(&l, "group/project", STORE_INBOUND_APPLYING),
			 0);
	/* Appended: a second call adds the same pairs again. */
	assert_int_equal(store_inbound_count(&l, st), 0);
	assert_int_equal(l.nr, 16);
	store_inbound_count_list_release(&l);
	assert_int_equal(l.nr, 0);
	assert_null(l.items);

	/* More pairs than the cap: refused, not cut short. */
	assert_int_equal(store_begin(st), 0);
	for (i = 0; i < STORE_LIST_MAX; i++) {
		char project[64];

		snprintf(id, sizeof(id), "spread-%d@x", i);
		snprintf(project, sizeof(project), "g/p%d", i);
		inbound_in_state(st, id, project, STORE_INBOUND_RECEIVED);
	}
	assert_int_equal(store_commit(st), 0);
	assert_int_equal(store_inbound_count(&l, st), PB_ELIMIT);
	assert_non_null(strstr(err_msg(), "pairs"));
	store_inbound_count_list_release(&l);

	store_free(ro);
	store_free(st);
}

/*
 * Two processes claim from the same journal until it is empty; every row
 * is claimed exactly once.
 */
#define CLAIM_ROWS 300

static int claimer_child(const char *path, const char *out, int gate)
{
	struct store *st = NULL;
	struct store_inbound in = { 0 };
	FILE *f = fopen(out, "w");
	char c;
	int rc;

	if (!f || storebed_open(&st, path, STORE_RW, BUSY_MS))
		return 1;
	/* Start together: wait until the parent closes the gate pipe. */
	if (read(gate, &c, 1) != 0)
		return 1;
	for (;;) {
		rc = store_inbound_claim(&in, st, time(NULL));
		if (rc == PB_ETEMP)
			continue;
		if (rc == PB_ENOTFOUND)
			break;
		if (rc) {
			fprintf(stderr, "claimer: %s\n", err_msg());
			return 1;
		}
		fprintf(f, "%s\n", in.message_id);
		usleep(1000); /* the forge request */
		do
			rc = store_inbound_finish(st, in.message_id,
						  STORE_INBOUND_APPLIED, NULL);
		while (rc == PB_ETEMP);
		if (rc) {
			fprintf(stderr, "claimer: %s\n", err_msg());
			return 1;
		}
	}
	store_inbound_release(&in);
	store_free(st);
	return fclose(f) ? 1 : 0;
}

static void test_inbound_claim_exclusive(void **state)
{
	const char *path = db_path("claim");
	static char seen[CLAIM_ROWS];
	char id[64], out[2][700], line[128];
	struct store *st = open_rw(path);
	int i, status, total = 0, gate[2];
	pid_t pid[2];

	assert_int_equal(store_begin(st), 0);
	for (i = 0; i < CLAIM_ROWS; i++) {
		snprintf(id, sizeof(id), "claim-%d@x", i);
		record(st, id, 0);
	}
	assert_int_equal(store_commit(st), 0);
	store_free(st);

	assert_int_equal(pipe(gate), 0);
	for (i = 0; i < 2; i++) {
		snprintf(out[i], sizeof(out[i]), "%s/claimed.%d", dir, i);
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			close(gate[1]);
			_exit(claimer_child(path, out[i], gate[0]));
		}
	}
	close(gate[0]);
	close(gate[1]);
	for (i = 0; i < 2; i++) {
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < 2; i++) {
		FILE *f = fopen(out[i], "r");
		int n = 0;

		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			int k = atoi(line + strlen("claim-"));

			assert_true(k >= 0 && k < CLAIM_ROWS);
			assert_int_equal(seen[k], 0);
			seen[k] = 1;
			n++;
		}
		fclose(f);
		print_message("claimer %d took %d rows\n", i, n);
		total += n;
	}
	assert_int_equal(total, CLAIM_ROWS);
}

/* A list mail of project!iid in the archive. */
static void archive_list_mail(struct store *st, const char *mid,
			      const char *project, int64_t iid)
{
	struct store_archived a;

	memset(&a, 0, sizeof(a));
	a.message_id = mid;
	a.project = project;
	a.iid = iid;
	a.origin = STORE_ARCHIVE_LIST;
	a.message = "Subject: x\n\nbody\n";
	a.message_len = strlen(a.message);
	assert_int_equal(store_archive_put(st, &a), 0);
}

static void test_forge_actions(void **state)
{
	const char *path = db_path("actions");
	struct store *st = open_rw(path);
	struct store_action act = { 0 };
	struct store_action_list list = { 0 };
	const char *mid = "reply-1@list";

	/* New: journaled as intent. */
	assert_int_equal(store_action_begin(&act, st, mid, 0, "comment",
					    "<!-- pb:reply-1@list#0 -->"),
			 0);
	assert_string_equal(act.message_id, mid);
	assert_int_equal(act.index, 0);
	assert_string_equal(act.kind, "comment");
	assert_string_equal(act.marker, "<!-- pb:reply-1@list#0 -->");
	assert_int_equal(act.state, STORE_ACTION_INTENT);
	assert_int_equal(act.attempts, 1);

	/* After a restart the intent is seen: the request may have landed. */
	assert_int_equal(store_action_begin(&act, st, mid, 0, "comment",
					    "<!-- pb:reply-1@list#0 -->"),
			 PB_EEXISTS);
	assert_int_equal(act.state, STORE_ACTION_INTENT);
	assert_int_equal(act.attempts, 2);

	assert_int_equal(store_action_fail(st, mid, 0, "403 Forbidden"), 0);
	assert_int_equal(store_action_list(&list, st, mid), 0);
	assert_int_equal(list.nr, 1);
	assert_int_equal(list.items[0].state, STORE_ACTION_FAILED);
	assert_string_equal(list.items[0].last_error, "403 Forbidden");
	store_action_list_release(&list);

	assert_int_equal(store_action_begin(&act, st, mid, 0, "comment",
					    "<!-- pb:reply-1@list#0 -->"),
			 PB_EEXISTS);
	assert_int_equal(act.state, STORE_ACTION_INTENT);
	assert_int_equal(act.attempts, 3);
	assert_int_equal(store_action_complete(st, mid, 0, 9001, "abc123"), 0);

	/* Done: begin reports it, unchanged, with the forge ids. */
	assert_int_equal(store_action_begin(&act, st, mid, 0, "comment",
					    "<!-- pb:reply-1@list#0 -->"),
			 PB_EEXISTS);
	assert_int_equal(act.state, STORE_ACTION_DONE);
	assert_int_equal(act.attempts, 3);
	assert_int_equal(act.note_id, 9001);
	assert_string_equal(act.discussion_id, "abc123");
	assert_null(act.last_error);
	assert_int_equal(store_action_fail(st, mid, 0, "late"), PB_EEXISTS);

	assert_int_equal(store_action_begin(&act, st, mid, 2, "approve", "m2"),
			 0);
	assert_int_equal(
		store_action_begin(&act, st, mid, 1, "diff-note", "m1"), 0);
	assert_int_equal(store_action_complete(st, mid, 5, 1, NULL),
			 PB_ENOTFOUND);
	assert_int_equal(store_action_fail(st, mid, 5, "x"), PB_ENOTFOUND);
	assert_int_equal(store_action_begin(&act, st, mid, -1, "comment", "m"),
			 PB_EINVAL);
	assert_int_equal(store_action_begin(&act, st, mid, 3, "Comment", "m"),
			 PB_EINVAL);
	assert_int_equal(store_action_begin(&act, st, mid, 3, "comment", ""),
			 PB_EINVAL);

	assert_int_equal(store_action_list(&list, st, mid), 0);
	assert_int_equal(list.nr, 3);
	assert_int_equal(list.items[0].index, 0);
	assert_int_equal(list.items[1].index, 1);
	assert_string_equal(list.items[1].kind, "diff-note");
	assert_int_equal(list.items[2].index, 2);
	store_action_list_release(&list);

	/* The action that made a discussion, among an MR's mails only
	 * (the archive's): none before the mail is archived. */
	assert_int_equal(store_action_by_discussion(&act, st, "g/p", 1,
						    "abc123"),
			 PB_ENOTFOUND);
	archive_list_mail(st, mid, "g/p", 1);
	assert_int_equal(
		store_action_by_discussion(&act, st, "g/p", 1, "abc123"), 0);
	assert_string_equal(act.message_id, mid);
	assert_int_equal(act.index, 0);
	assert_int_equal(store_action_by_discussion(&act, st, "g/p", 2,
						    "abc123"),
			 PB_ENOTFOUND);
	assert_int_equal(store_action_by_discussion(&act, st, "g/p", 1,
						    "other"),
			 PB_ENOTFOUND);

	/* Inside a caller's transaction, rolled back with it. */
	assert_int_equal(store_begin(st), 0);
	assert_int_equal(
		store_action_begin(&act, st, "other@x", 0, "label", "m"), 0);
	assert_int_equal(store_action_begin(&act, st, "other@x", 0, "label",
					    "m"),
			 PB_EEXISTS);
	assert_int_equal(act.attempts, 2);
	assert_int_equal(store_rollback(st), 0);
	assert_int_equal(store_action_list(&list, st, "other@x"), 0);
	assert_int_equal(list.nr, 0);
	store_action_list_release(&list);

	store_action_release(&act);
	store_free(st);
}

/*
 * Version 1 exactly as it shipped.  A shipped migration is never edited,
 * so this copy must keep matching what store_schema.c creates at
 * version 1.
 */
/* What became of each trailer: replaced as a whole, read back in order. */
static void test_trailer_verdicts(void **state)
{
	const char *path = db_path("verdicts");
	struct store *st = open_rw(path);
	struct strlist v = STRLIST_INIT, got = STRLIST_INIT;
	const char *mid = "reply-2@list";

	(void)state;
	assert_int_equal(store_verdicts_get(&got, st, mid), 0);
	assert_int_equal(got.nr, 0);
	strlist_push(&v, "an approval as bob");
	strlist_push(&v, "not honoured as an approval: the sender is not "
			 "verified");
	strlist_push(&v, "");
	assert_int_equal(store_verdicts_set(st, mid, &v), 0);
	assert_int_equal(store_verdicts_get(&got, st, mid), 0);
	assert_int_equal(got.nr, 3);
	assert_string_equal(got.items[0], "an approval as bob");
	assert_string_equal(got.items[2], "-");
	strlist_release(&got);
	/* A retry decides again: the old verdicts go. */
	strlist_release(&v);
	strlist_push(&v, "not an approval: listed in the comment");
	assert_int_equal(store_verdicts_set(st, mid, &v), 0);
	assert_int_equal(store_verdicts_get(&got, st, mid), 0);
	assert_int_equal(got.nr, 1);
	assert_string_equal(got.items[0],
			    "not an approval: listed in the comment");
	strlist_release(&got);
	assert_int_equal(store_verdicts_get(&got, st, "other@list"), 0);
	assert_int_equal(got.nr, 0);
	assert_int_equal(store_verdicts_set(st, "", &v), PB_EINVAL);
	strlist_release(&v);
	store_free(st);
}

/* Add mail id at place patch to the series key of sender (v1, total). */
static int sub_add(int *whole, struct store *st, const char *key,
		   const char *sender, int total, const char *id, int patch)
{
	struct store_submission s;
	struct store_submitted m;

	memset(&s, 0, sizeof(s));
	memset(&m, 0, sizeof(m));
	s.series_id = key;
	s.sender = sender;
	s.project = "g/p";
	s.version = 1;
	s.total = total;
	m.message_id = id;
	m.patch = patch;
	m.message = id; /* any bytes: the store keeps them as they are */
	m.message_len = strlen(id);
	return store_submission_add(whole, st, &s, &m);
}

/*
 * A series posted to the list is collected until whole, in any order,
 * each mail once, from its sender only; whole is said once; it ends
 * opened or failed, once.
 */
static void test_submissions(void **state)
{
	const char *path = db_path("submissions");
	struct store *st = open_rw(path), *st2 = open_rw(path);
	struct store_submission got;
	struct store_submitted gm;
	struct store_submitted_list mails = { 0 };
	struct store_submission_list whole_list = { 0 };
	const char *ann = "ann@example.org";
	int whole = -1;

	(void)state;
	store_submission_init(&got);
	store_submitted_init(&gm);
	/* Out of order: 2/3, the cover, 3/3, then 1/3 makes it whole. */
	assert_int_equal(sub_add(&whole, st, "c@x", ann, 3, "p2@x", 2), 0);
	assert_int_equal(whole, 0);
	assert_int_equal(store_submission_get(&got, st, "c@x"), 0);
	assert_int_equal(got.state, STORE_SUBMISSION_COLLECTING);
	assert_int_equal(sub_add(&whole, st, "c@x", ann, 3, "c@x", 0), 0);
	assert_int_equal(whole, 0);
	assert_int_equal(sub_add(&whole, st2, "c@x", ann, 3, "p3@x", 3), 0);
	assert_int_equal(whole, 0);
	/* The same mail again (the other list host): kept once. */
	assert_int_equal(sub_add(&whole, st2, "c@x", ann, 3, "p2@x", 2),
			 PB_EEXISTS);
	/* Another mail at a place taken, another sender, another length. */
	assert_int_equal(sub_add(&whole, st, "c@x", ann, 3, "p2b@x", 2),
			 PB_EEXISTS);
	assert_int_equal(sub_add(&whole, st, "c@x", "eve@example.org", 3,
				 "p1e@x", 1),
			 PB_EPERM);
	assert_int_equal(sub_add(&whole, st, "c@x", ann, 4, "p1f@x", 1),
			 PB_EINVAL);
	assert_int_equal(sub_add(&whole, st, "c@x", ann, 3, "p9@x", 9),
			 PB_EINVAL);
	assert_int_equal(
		sub_add(&whole, st, "c@x", "Ann@Example.ORG", 3, "p1@x", 1), 0);
	assert_int_equal(whole, 1);
	assert_int_equal(store_submission_get(&got, st, "c@x"), 0);
	assert_int_equal(got.state, STORE_SUBMISSION_WHOLE);
	assert_string_equal(got.sender, ann);
	assert_int_equal(got.total, 3);
	assert_int_equal(store_submission_mails(&mails, st, "c@x"), 0);
	assert_int_equal(mails.nr, 4);
	assert_string_equal(mails.items[0].message_id, "c@x");
	assert_int_equal(mails.items[0].patch, 0);
	assert_string_equal(mails.items[3].message_id, "p3@x");
	assert_int_equal(mails.items[3].message_len, 4);
	assert_memory_equal(mails.items[3].message, "p3@x", 4);
	assert_int_equal(store_submitted_get(&gm, st, "p2@x"), 0);
	assert_string_equal(gm.series_id, "c@x");
	assert_int_equal(gm.patch, 2);
	assert_null(gm.message);
	assert_int_equal(store_submitted_get(&gm, st, "nope@x"), PB_ENOTFOUND);

	/* No cover: keyed by patch 1, which the others answer. */
	assert_int_equal(sub_add(&whole, st, "q1@x", ann, 2, "q2@x", 2), 0);
	assert_int_equal(whole, 0);
	assert_int_equal(sub_add(&whole, st, "q1@x", ann, 2, "q1@x", 1), 0);
	assert_int_equal(whole, 1);
	/* A single patch is whole at once. */
	assert_int_equal(sub_add(&whole, st, "s1@x", ann, 1, "s1@x", 1), 0);
	assert_int_equal(whole, 1);
	/* A series keyed by a cover is not whole without it. */
	assert_int_equal(sub_add(&whole, st, "c2@x", ann, 1, "r1@x", 1), 0);
	assert_int_equal(whole, 0);

	assert_int_equal(store_submission_list_whole(&whole_list, st, 0), 0);
	assert_int_equal(whole_list.nr, 3);

	/* Finished once: opened as an MR; a second finish is refused. */
	assert_int_equal(store_submission_finish(st, "c@x",
						 STORE_SUBMISSION_OPENED, 5),
			 0);
	assert_int_equal(store_submission_finish(st2, "c@x",
						 STORE_SUBMISSION_OPENED, 6),
			 PB_EEXISTS);
	assert_int_equal(store_submission_finish(st, "q1@x",
						 STORE_SUBMISSION_FAILED, 0),
			 0);
	assert_int_equal(store_submission_finish(st, "c2@x",
						 STORE_SUBMISSION_OPENED, 7),
			 PB_EEXISTS);
	assert_int_equal(store_submission_finish(st, "none@x",
						 STORE_SUBMISSION_OPENED, 7),
			 PB_ENOTFOUND);
	assert_int_equal(store_submission_finish(st, "s1@x",
						 STORE_SUBMISSION_WHOLE, 0),
			 PB_EINVAL);
	assert_int_equal(store_submission_get(&got, st, "c@x"), 0);
	assert_int_equal(got.state, STORE_SUBMISSION_OPENED);
	assert_int_equal(got.iid, 5);
	assert_int_equal(store_submission_get(&got, st, "q1@x"), 0);
	assert_int_equal(got.state, STORE_SUBMISSION_FAILED);
	assert_int_equal(got.iid, 0);
	store_submission_list_release(&whole_list);
	assert_int_equal(store_submission_list_whole(&whole_list, st, 0), 0);
	assert_int_equal(whole_list.nr, 1);
	assert_string_equal(whole_list.items[0].series_id, "s1@x");

	/* A sender's opened series, and a series' first mail: where a next
	 * version looks for the one before. */
	store_submission_list_release(&whole_list);
	assert_int_equal(store_submission_list_opened(&whole_list, st, "g/p",
						      ann, 0),
			 0);
	assert_int_equal(whole_list.nr, 1);
	assert_string_equal(whole_list.items[0].series_id, "c@x");
	assert_int_equal(whole_list.items[0].iid, 5);
	store_submission_list_release(&whole_list);
	assert_int_equal(store_submission_list_opened(&whole_list, st, "g/p",
						      "eve@example.org", 0),
			 0);
	assert_int_equal(whole_list.nr, 0);
	assert_int_equal(store_submission_list_opened(&whole_list, st, "g/q",
						      ann, 0),
			 0);
	assert_int_equal(whole_list.nr, 0);
	assert_int_equal(store_submission_first(&gm, st, "c@x"), 0);
	assert_string_equal(gm.message_id, "c@x");
	assert_int_equal(gm.patch, 0);
	assert_int_equal(gm.message_len, 3);
	assert_int_equal(store_submission_first(&gm, st, "q1@x"), 0);
	assert_string_equal(gm.message_id, "q1@x");
	assert_int_equal(gm.patch, 1);
	assert_int_equal(store_submission_first(&gm, st, "none@x"),
			 PB_ENOTFOUND);
	assert_int_equal(store_check(st), 0);

	store_submission_list_release(&whole_list);
	store_submitted_list_release(&mails);
	store_submission_release(&got);
	store_submitted_release(&gm);
	store_free(st2);
	store_free(st);
}

/*
 * One writer, one reader in another process.  The parent writes 1000 thread
 * map rows in transactions of TX_ROWS; the child reads the revision's mails
 * in a loop through a read-only store.  The reader must never fail except
 * with PB_ETEMP, never see a count go down, never see part of a
 * transaction, and must end up seeing every row.
 */
#define CONC_ROWS 1000
#define TX_ROWS 10

static int reader_child(const char *path, int ready_fd)
{
	struct store *st = NULL;
	struct store_mail_list list = { 0 };
	time_t deadline = time(NULL) + 60;
	size_t last = 0, seen_states = 0;
	long temp = 0;
	int rc;

	rc = storebed_open(&st, path, STORE_RO, BUSY_MS);
	if (rc) {
		fprintf(stderr, "reader: open: %s\n", err_msg());
		return 1;
	}
	if (write(ready_fd, "r", 1) != 1)
		return 1;
	close(ready_fd);
	for (;;) {
		rc = store_mail_list_revision(&list, st, "g/p", 1, 1);
		if (rc == PB_ETEMP) {
			temp++;
			store_mail_list_release(&list);
			continue;
		}
		if (rc) {
			fprintf(stderr, "reader: %s\n", err_msg());
			return 1;
		}
		if (list.nr < last || list.nr % TX_ROWS) {
			fprintf(stderr, "reader: saw %zu rows after %zu\n",
				list.nr, last);
			return 1;
		}
		if (list.nr != last)
			seen_states++;
		last = list.nr;
		store_mail_list_release(&list);
		if (last == CONC_ROWS)
			break;
		if (time(NULL) > deadline) {
			fprintf(stderr, "reader: stuck at %zu rows\n", last);
			return 1;
		}
	}
	store_free(st);
	fprintf(stderr, "reader: %zu distinct counts, %ld busy retries\n",
		seen_states, temp);
	return 0;
}

static void test_concurrent_reader_writer(void **state)
{
	const char *path = db_path("conc");
	struct store *st;
	struct store_mail m;
	char id[64];
	int pipefd[2], i, j, status, rc;
	long temp = 0;
	pid_t pid;

	st = open_rw(path);
	assert_int_equal(start_rev(st, "g/p", 1, SHA1), 1);
	store_free(st);

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pipefd[0]);
		_exit(reader_child(path, pipefd[1]));
	}
	close(pipefd[1]);
	{
		char c;

		assert_int_equal(read(pipefd[0], &c, 1), 1);
		close(pipefd[0]);
	}

	st = open_rw(path);
	for (i = 0; i < CONC_ROWS; i += TX_ROWS) {
again:
		rc = store_begin(st);
		for (j = 0; !rc && j < TX_ROWS; j++) {
			snprintf(id, sizeof(id), "conc-%d@x", i + j + 1);
			fill_patch(&m, id, 1, i + j + 1, CONC_ROWS, "diff");
			rc = store_mail_put(st, &m);
		}
		if (!rc)
			rc = store_commit(st);
		else
			store_rollback(st);
		if (rc == PB_ETEMP) {
			temp++;
			goto again;
		}
		if (rc)
			fail_msg("writer: %s", err_msg());
	}
	store_free(st);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	raw_integrity_ok(path);
}

/*
 * Crash safety: a writer killed with SIGKILL inside a large transaction
 * (big enough to spill uncommitted pages into the WAL) leaves no trace of
 * it; what it committed before stays.
 */
static void crash_child(const char *path, int ready_fd)
{
	static char diff[16 * 1024];
	struct store *st = NULL;
	struct store_mail m;
	char id[64];
	int k;

	memset(diff, '+', sizeof(diff) - 1);
	if (storebed_open(&st, path, STORE_RW, BUSY_MS))
		_exit(1);
	/* Committed: patches 1..10. */
	if (store_begin(st))
		_exit(1);
	for (k = 1; k <= 10; k++) {
		snprintf(id, sizeof(id), "crash-%d@x", k);
		fill_patch(&m, id, 1, k, 500, diff);
		if (store_mail_put(st, &m))
			_exit(1);
	}
	if (store_commit(st))
		_exit(1);
	/* Never committed: patches 11..500, about 8 MB. */
	if (store_begin(st))
		_exit(1);
	for (k = 11; k <= 500; k++) {
		snprintf(id, sizeof(id), "crash-%d@x", k);
		fill_patch(&m, id, 1, k, 500, diff);
		if (store_mail_put(st, &m))
			_exit(1);
	}
	if (write(ready_fd, "w", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

static void test_crash_mid_transaction(void **state)
{
	const char *path = db_path("crash");
	struct store *st;
	struct store_mail_list list = { 0 };
	struct store_mail got = STORE_MAIL_INIT;
	int pipefd[2], status;
	char wal[700], c;
	struct stat sb;
	pid_t pid;

	st = open_rw(path);
	assert_int_equal(start_rev(st, "g/p", 1, SHA1), 1);
	store_free(st);

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pipefd[0]);
		crash_child(path, pipefd[1]);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	close(pipefd[0]);
	/* The uncommitted transaction really reached the WAL file. */
	if (!storebed_pg()) {
		snprintf(wal, sizeof(wal), "%s-wal", path);
		assert_int_equal(stat(wal, &sb), 0);
		assert_true(sb.st_size > 1024 * 1024);
	}
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));

	st = open_rw(path);
	assert_int_equal(store_check(st), 0);
	assert_int_equal(store_mail_list_revision(&list, st, "g/p", 1, 1), 0);
	assert_int_equal(list.nr, 10);
	store_mail_list_release(&list);
	assert_int_equal(store_mail_get(&got, st, "crash-10@x"), 0);
	assert_int_equal(store_mail_get(&got, st, "crash-11@x"), PB_ENOTFOUND);
	store_mail_release(&got);
	store_free(st);
	raw_integrity_ok(path);
}

/* Killed at a random moment while committing small transactions. */
static void test_crash_random_point(void **state)
{
	const char *path = db_path("crash2");
	struct store *st;
	struct store_mail_list list = { 0 };
	struct timespec ts = { 0, 150 * 1000 * 1000 };
	int status, k;
	pid_t pid;

	st = open_rw(path);
	assert_int_equal(start_rev(st, "g/p", 1, SHA1), 1);
	store_free(st);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct store_mail m;
		char id[64];

		if (storebed_open(&st, path, STORE_RW, BUSY_MS))
			_exit(1);
		for (k = 1; k <= 100000; k++) {
			if (k % 5 == 1 && store_begin(st))
				_exit(1);
			snprintf(id, sizeof(id), "r-%d@x", k);
			fill_patch(&m, id, 1, k, 100000, "x");
			if (store_mail_put(st, &m))
				_exit(1);
			if (k % 5 == 0 && store_commit(st))
				_exit(1);
		}
		_exit(2);
	}
	nanosleep(&ts, NULL);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));

	st = open_rw(path);
	assert_int_equal(store_check(st), 0);
	assert_int_equal(store_mail_list_revision(&list, st, "g/p", 1, 1), 0);
	print_message("killed after %zu committed rows\n", list.nr);
	assert_int_equal(list.nr % 5, 0);
	for (k = 0; k < (int)list.nr; k++)
		assert_int_equal(list.items[k].patch, k + 1);
	store_mail_list_release(&list);
	store_free(st);
	raw_integrity_ok(path);
}

/*
 * The milter's user may read the files but not write the directory.  Needs
 * root to switch to an unprivileged user; skipped otherwise.
 */
static int reader_as_nobody(const char *path)
{
	struct store *st = NULL;
	struct store_mail m = STORE_MAIL_INIT;
	pid_t pid = fork();
	int status, rc;

	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(77);
		if (access(path, R_OK))
			_exit(77); /* a parent directory is closed to us */
		rc = storebed_open(&st, path, STORE_RO, BUSY_MS);
		if (!rc)
			rc = store_mail_get(&m, st, "perm@x");
		if (rc)
			fprintf(stderr, "nobody: %s\n", err_msg());
		store_mail_release(&m);
		store_free(st);
		_exit(rc ? 100 - rc : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void test_reader_permissions(void **state)
{
	char sub[600], path[700], p[720];
	struct store *st, *daemon;
	struct store_mail m;
	int rc;

	if (storebed_pg())
		skip(); /* SQLite files (test_store_migrate.c: test_migrate_steps) */

	if (geteuid() != 0)
		skip();
	/* mkdtemp() made the test directory 0700. */
	assert_int_equal(chmod(dir, 0711), 0);
	snprintf(sub, sizeof(sub), "%s/perm", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(path, sizeof(path), "%s/state.db", sub);
	st = open_rw(path);
	assert_int_equal(start_rev(st, "g/p", 1, SHA1), 1);
	fill_patch(&m, "perm@x", 1, 1, 2, NULL);
	assert_int_equal(store_mail_put(st, &m), 0);
	store_free(st);
	assert_int_equal(chmod(path, 0644), 0);
	snprintf(p, sizeof(p), "%s-wal", path);
	assert_int_equal(chmod(p, 0644), 0);
	snprintf(p, sizeof(p), "%s-shm", path);
	assert_int_equal(chmod(p, 0644), 0);

	/* Daemon stopped: the kept -wal/-shm are enough. */
	rc = reader_as_nobody(path);
	if (rc == 77)
		skip();
	assert_int_equal(rc, 0);
	/* Daemon running with a transaction in progress. */
	daemon = open_rw(path);
	assert_int_equal(store_begin(daemon), 0);
	assert_int_equal(store_cursor_set(daemon, "x", "y"), 0);
	assert_int_equal(reader_as_nobody(path), 0);
	assert_int_equal(store_commit(daemon), 0);
	assert_int_equal(reader_as_nobody(path), 0);
	store_free(daemon);

	/* Without them, the reader fails cleanly (not a crash). */
	snprintf(p, sizeof(p), "%s-wal", path);
	assert_int_equal(unlink(p), 0);
	snprintf(p, sizeof(p), "%s-shm", path);
	assert_int_equal(unlink(p), 0);
	rc = reader_as_nobody(path);
	assert_true(rc > 0 && rc != 77);
}

/*
 * A renamed [project] section: everything kept under the old name moves
 * to the new one in one go - revisions, thread map (with the revisions
 * its rows refer to), journal, archive, and the cursors whose names hold
 * the path, whichever module named them - and nothing of another
 * project whose path begins the same way.  A name with state of its own
 * is not merged into.
 */
static void test_project_rename(void **state)
{
	const char *path = db_path("rename");
	struct store *st = open_rw(path);
	struct store_mail m, got = STORE_MAIL_INIT;
	struct store_inbound in = { 0 };
	struct store_archived ga;
	struct store_revision rev;
	struct strlist names = STRLIST_INIT;
	struct buf b = BUF_INIT(64);
	static const char *const moved[][2] = {
		{ "poll:g/p", "poll:g/q" },
		{ "project-id:g/p", "project-id:g/q" },
		{ "forgemail:notes:g/p!1", "forgemail:notes:g/q!1" },
		{ "list-approval:g/p!1:alice", "list-approval:g/q!1:alice" },
		{ "approvals:reauth:g/p", "approvals:reauth:g/q" },
	};
	struct store_submission sub;
	size_t i;
	int whole = 0;

	assert_int_equal(start_rev(st, "g/p", 1, SHA1), 1);
	fill_patch(&m, "patch@bridge", 1, 1, 2, "diff");
	assert_int_equal(store_mail_put(st, &m), 0);
	record(st, "reply@x", 0);
	archive_list_mail(st, "reply@x", "g/p", 1);
	for (i = 0; i < sizeof(moved) / sizeof(moved[0]); i++)
		assert_int_equal(store_cursor_set(st, moved[i][0], "7"), 0);
	/* Another project's, whose path the old one begins. */
	assert_int_equal(start_rev(st, "g/pp", 1, SHA2), 1);
	assert_int_equal(store_cursor_set(st, "poll:g/pp", "8"), 0);
	assert_int_equal(store_cursor_set(st, "forgemail:notes:g/pp!1", "8"),
			 0);
	/* The new name's own progress alone gives way. */
	assert_int_equal(store_cursor_set(st, "poll-error:g/q", "old"), 0);
	assert_int_equal(store_cursor_set(st, "poll-error:g/p", ""), 0);

	assert_int_equal(sub_add(&whole, st, "sub@x", "ann@example.org", 1,
				 "sub@x", 1),
			 0);
	assert_int_equal(store_cursor_names(&names, st, "project-id:", "7"), 0);
	assert_int_equal(names.nr, 1);
	assert_string_equal(names.items[0], "project-id:g/p");
	strlist_release(&names);

	assert_int_equal(store_project_rename(st, "g/p", "g/q", "project-id:"),
			 0);
	assert_int_equal(store_mail_get(&got, st, "patch@bridge"), 0);
	assert_string_equal(got.project, "g/q");
	store_revision_init(&rev);
	assert_int_equal(store_revision_get(&rev, st, "g/q", 1, 1), 0);
	assert_string_equal(rev.head_sha, SHA1);
	assert_string_equal(rev.cover_msgid, "cover@x");
	assert_int_equal(store_revision_get(&rev, st, "g/p", 1, 1),
			 PB_ENOTFOUND);
	assert_int_equal(store_revision_get(&rev, st, "g/pp", 1, 1), 0);
	store_revision_release(&rev);
	assert_int_equal(store_inbound_get(&in, st, "reply@x"), 0);
	assert_string_equal(in.project, "g/q");
	store_inbound_release(&in);
	memset(&ga, 0, sizeof(ga));
	assert_int_equal(store_archive_get(&ga, st, "reply@x"), 0);
	assert_string_equal(ga.project, "g/q");
	store_archived_release(&ga);
	store_submission_init(&sub);
	assert_int_equal(store_submission_get(&sub, st, "sub@x"), 0);
	assert_string_equal(sub.project, "g/q");
	store_submission_release(&sub);
	for (i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
		assert_int_equal(store_cursor_get(&b, st, moved[i][0]),
				 PB_ENOTFOUND);
		assert_int_equal(store_cursor_get(&b, st, moved[i][1]), 0);
		assert_string_equal(b.data, "7");
	}
	assert_int_equal(store_cursor_get(&b, st, "poll-error:g/q"), 0);
	assert_string_equal(b.data, "");
	assert_int_equal(store_cursor_get(&b, st, "poll:g/pp"), 0);
	assert_int_equal(store_cursor_get(&b, st, "forgemail:notes:g/pp!1"), 0);
	/* A revision started after the move numbers on from the old ones. */
	assert_int_equal(start_rev(st, "g/q", 1, SHA3), 2);

	/* Both names with state: refused, nothing changed. */
	assert_int_equal(store_project_rename(st, "g/pp", "g/q", "project-id:"),
			 PB_EEXISTS);
	assert_int_equal(store_mail_get(&got, st, "patch@bridge"), 0);
	assert_string_equal(got.project, "g/q");
	assert_int_equal(store_cursor_get(&b, st, "poll:g/pp"), 0);
	assert_string_equal(b.data, "8");
	/* Only the new name's id, kept by a run with both sections. */
	assert_int_equal(store_cursor_set(st, "project-id:g/r", "9"), 0);
	assert_int_equal(store_cursor_set(st, "poll:g/o", "9"), 0);
	assert_int_equal(store_project_rename(st, "g/o", "g/r", "project-id:"),
			 PB_EEXISTS);
	assert_int_equal(store_cursor_get(&b, st, "poll:g/o"), 0);
	/* Nothing kept under the old name: nothing to do. */
	assert_int_equal(
		store_project_rename(st, "g/none", "g/z", "project-id:"), 0);
	raw_integrity_ok(path);
	store_mail_release(&got);
	buf_release(&b);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_open_unsafe_dir),
		cmocka_unit_test(test_read_only_store),
		cmocka_unit_test(test_mail_roundtrip),
		cmocka_unit_test(test_mail_validation),
		cmocka_unit_test(test_mail_lists_and_forge_ids),
		cmocka_unit_test(test_revision_numbers),
		cmocka_unit_test(test_cursors),
		cmocka_unit_test(test_transactions),
		cmocka_unit_test(test_inbound_journal),
		cmocka_unit_test(test_inbound_validation),
		cmocka_unit_test(test_inbound_count),
		cmocka_unit_test(test_inbound_claim_exclusive),
		cmocka_unit_test(test_forge_actions),
		cmocka_unit_test(test_trailer_verdicts),
		cmocka_unit_test(test_submissions),
		cmocka_unit_test(test_concurrent_reader_writer),
		cmocka_unit_test(test_crash_mid_transaction),
		cmocka_unit_test(test_crash_random_point),
		cmocka_unit_test(test_reader_permissions),
		cmocka_unit_test(test_project_rename),
	};
	return cmocka_run_group_tests(tests, setup, storetest_teardown);
}
