/*
 * Tests of the outbound mail queue in the state store (schema 3) and the
 * revision listing: put with its thread-map row, the queue's state
 * machine, the atomic "sent" that finishes a revision, requeue, and that
 * a transaction that never commits leaves neither row (crash before the
 * commit); and the mail archive (schema 4): a sent mail is archived with
 * its bytes, a list mail is put once, an MR's mails are listed in order
 * and the bridge's mails from before the archive are counted.
 */
#include "cmocka_all.h"
#include "state/store.h"
#include "storebed.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUSY_MS 5000
#define HEAD "1111111111111111111111111111111111111111"
#define HEAD2 "2222222222222222222222222222222222222222"
#define BASE "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static char dir[512];

static int setup(void **state)
{
	const char *base = getenv("PB_TEST_TMP");

	(void)state;
	snprintf(dir, sizeof(dir), "%s/outmail.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	storebed_init("outmail", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A fresh database (storebed.h: SQLite or PostgreSQL). */
static struct store *open_db(const char *name)
{
	struct store *st = NULL;
	const char *target = storebed_fresh(name);

	if (storebed_open(&st, target, STORE_RW, BUSY_MS))
		fail_msg("open %s: %s", name, err_msg());
	return st;
}

static int start(struct store *st, int64_t iid, const char *head, int patches)
{
	struct store_revision rev;
	int n = 0;

	store_revision_init(&rev);
	rev.project = "g/p";
	rev.iid = iid;
	rev.head_sha = head;
	rev.base_sha = BASE;
	rev.patches = patches;
	rev.cover_msgid = "c@x";
	if (store_revision_start(&n, st, &rev))
		fail_msg("start: %s", err_msg());
	return n;
}

/* The thread-map row and the queue entry of mail k of revision rev. */
static void queue_mail(struct store *st, int64_t iid, int rev, int k, int total,
		       const char *msgid)
{
	struct store_mail m;
	struct store_outmail o;
	char text[128];

	store_mail_init(&m);
	m.message_id = msgid;
	m.project = "g/p";
	m.iid = iid;
	m.revision = rev;
	m.patch = k;
	m.total = total;
	m.kind = k ? STORE_MAIL_PATCH : STORE_MAIL_COVER;
	assert_int_equal(store_mail_put(st, &m), 0);
	snprintf(text, sizeof(text), "Message-ID: <%s>\n\nbody %d\n", msgid, k);
	store_outmail_init(&o);
	o.message_id = msgid;
	o.envelope_from = "bridge@x.example";
	o.recipients = "list@x.example\ncc@y.example\n";
	o.message = text;
	o.message_len = strlen(text);
	assert_int_equal(store_outmail_put(st, &o), 0);
}

static void test_put_get_list(void **state)
{
	struct store *st = open_db("put");
	struct store_outmail o, got;
	struct store_outmail_list l = { 0 };
	const char bin[] = "a\0b\n";
	int rev;

	(void)state;
	rev = start(st, 1, HEAD, 2);
	assert_int_equal(rev, 1);
	queue_mail(st, 1, rev, 2, 2, "m2@x");
	queue_mail(st, 1, rev, 0, 2, "m0@x");
	queue_mail(st, 1, rev, 1, 2, "m1@x");

	/* Again: exists; without a thread-map row: not found. */
	store_outmail_init(&o);
	o.message_id = "m1@x";
	o.envelope_from = "b@x";
	o.recipients = "r@x\n";
	o.message = bin;
	o.message_len = sizeof(bin) - 1;
	assert_int_equal(store_outmail_put(st, &o), PB_EEXISTS);
	o.message_id = "nowhere@x";
	assert_int_equal(store_outmail_put(st, &o), PB_ENOTFOUND);
	o.message_len = 0;
	assert_int_equal(store_outmail_put(st, &o), PB_EINVAL);

	store_outmail_init(&got);
	assert_int_equal(store_outmail_get(&got, st, "m1@x"), 0);
	assert_string_equal(got.project, "g/p");
	assert_int_equal(got.iid, 1);
	assert_int_equal(got.revision, 1);
	assert_int_equal(got.patch, 1);
	assert_int_equal(got.state, STORE_OUTMAIL_QUEUED);
	assert_int_equal(got.attempts, 0);
	assert_string_equal(got.recipients, "list@x.example\ncc@y.example\n");
	assert_string_equal(got.message, "Message-ID: <m1@x>\n\nbody 1\n");
	assert_int_equal(got.message_len, strlen(got.message));
	store_outmail_release(&got);
	assert_int_equal(store_outmail_get(&got, st, "none@x"), PB_ENOTFOUND);

	/* Listed in patch order, without the bytes. */
	assert_int_equal(store_outmail_list(&l, st, "g/p", 1, 0), 0);
	assert_int_equal(l.nr, 3);
	assert_string_equal(l.items[0].message_id, "m0@x");
	assert_string_equal(l.items[1].message_id, "m1@x");
	assert_string_equal(l.items[2].message_id, "m2@x");
	assert_null(l.items[0].message);
	store_outmail_list_release(&l);
	assert_int_equal(store_outmail_list(&l, st, "other/p", 0, 0), 0);
	assert_int_equal(l.nr, 0);
	assert_int_equal(store_outmail_list(&l, st, NULL, 0, 0), 0);
	assert_int_equal(l.nr, 3);
	store_outmail_list_release(&l);
	assert_int_equal(store_outmail_list(&l, st, NULL, 5, 0), PB_EINVAL);
	store_free(st);
}

static void test_sent_finishes_revision(void **state)
{
	struct store *st = open_db("sent");
	struct store_revision r;
	struct store_mail m;
	int rev, done = -1;

	(void)state;
	rev = start(st, 1, HEAD, 1);
	queue_mail(st, 1, rev, 0, 1, "c@x");
	queue_mail(st, 1, rev, 1, 1, "p@x");

	store_mail_init(&m);
	assert_int_equal(store_mail_get(&m, st, "c@x"), 0);
	assert_int_equal(m.state, STORE_MAIL_PENDING);
	assert_int_equal(m.sent_how, STORE_SENT_MTA);
	assert_int_equal(store_outmail_sent(&done, st, "c@x", STORE_SENT_MTA),
			 0);
	assert_int_equal(done, 0);
	assert_int_equal(store_mail_get(&m, st, "c@x"), 0);
	assert_int_equal(m.state, STORE_MAIL_SENT);
	assert_int_equal(m.sent_how, STORE_SENT_MTA);
	assert_int_equal(store_mail_get(&m, st, "none@x"), PB_ENOTFOUND);
	store_revision_init(&r);
	assert_int_equal(store_revision_get(&r, st, "g/p", 1, rev), 0);
	assert_int_equal(r.state, STORE_REVISION_SENDING);
	store_revision_release(&r);

	/* A second "sent" of the same mail: it is not queued any more. */
	assert_int_equal(store_outmail_sent(&done, st, "c@x",
					    STORE_SENT_ARCHIVE),
			 PB_ENOTFOUND);
	assert_int_equal(store_mail_get(&m, st, "c@x"), 0);
	assert_int_equal(m.sent_how, STORE_SENT_MTA);

	/* Recorded once the database was back. */
	assert_int_equal(store_outmail_sent(&done, st, "p@x", STORE_SENT_LATE),
			 0);
	assert_int_equal(done, 1);
	assert_int_equal(store_mail_get(&m, st, "p@x"), 0);
	assert_int_equal(m.sent_how, STORE_SENT_LATE);
	store_mail_release(&m);
	assert_int_equal(store_revision_get(&r, st, "g/p", 1, rev), 0);
	assert_int_equal(r.state, STORE_REVISION_SENT);
	assert_true(r.sent > 0);
	store_revision_release(&r);
	store_free(st);
}

static void test_defer_fail_requeue(void **state)
{
	struct store *st = open_db("defer");
	struct store_outmail got;
	struct store_revision r;
	int rev, n = -1, done = -1;

	(void)state;
	rev = start(st, 3, HEAD, 2);
	queue_mail(st, 3, rev, 1, 2, "a@x");
	queue_mail(st, 3, rev, 2, 2, "b@x");

	assert_int_equal(store_outmail_defer(st, "a@x", 12345, "451 later"), 0);
	assert_int_equal(store_outmail_defer(st, "a@x", 23456, "451 again"), 0);
	store_outmail_init(&got);
	assert_int_equal(store_outmail_get(&got, st, "a@x"), 0);
	assert_int_equal(got.state, STORE_OUTMAIL_DEFERRED);
	assert_int_equal(got.attempts, 2);
	assert_int_equal(got.next_attempt, 23456);
	assert_string_equal(got.last_error, "451 again");
	store_outmail_release(&got);

	assert_int_equal(store_outmail_fail(st, "b@x", "550 no"), 0);
	assert_int_equal(store_outmail_get(&got, st, "b@x"), 0);
	assert_int_equal(got.state, STORE_OUTMAIL_FAILED);
	assert_int_equal(got.attempts, 1);
	assert_string_equal(store_outmail_state_name(got.state), "failed");
	store_outmail_release(&got);
	assert_int_equal(store_outmail_defer(st, "zz@x", 1, "x"), PB_ENOTFOUND);

	/* The revision is not sent while a failed mail is left. */
	assert_int_equal(store_outmail_sent(&done, st, "a@x", STORE_SENT_MTA),
			 0);
	assert_int_equal(done, 0);
	assert_int_equal(store_outmail_requeue(&n, st, "g/p", 3), 0);
	assert_int_equal(n, 1);
	assert_int_equal(store_outmail_get(&got, st, "b@x"), 0);
	assert_int_equal(got.state, STORE_OUTMAIL_QUEUED);
	store_outmail_release(&got);
	assert_int_equal(store_outmail_sent(&done, st, "b@x", STORE_SENT_MTA),
			 0);
	assert_int_equal(done, 1);
	store_revision_init(&r);
	assert_int_equal(store_revision_get(&r, st, "g/p", 3, rev), 0);
	assert_int_equal(r.state, STORE_REVISION_SENT);
	store_revision_release(&r);
	store_free(st);
}

/* Handed to the MTA, outcome unknown (schema 7): kept until the MTA's
 * answer says the mail was not taken, or it is sent. */
static void test_handed(void **state)
{
	struct store *st = open_db("handed");
	struct store_outmail got;
	struct store_mail m;
	int done = 0;

	(void)state;
	start(st, 1, HEAD, 1);
	queue_mail(st, 1, 1, 0, 1, "h0@x");
	queue_mail(st, 1, 1, 1, 1, "h1@x");
	store_outmail_init(&got);

	/* Only under this host's claim. */
	assert_int_equal(store_outmail_hand(st, "h0@x"), PB_EEXISTS);
	assert_int_equal(store_outmail_hand(st, "none@x"), PB_ENOTFOUND);
	assert_int_equal(store_outmail_wait(st, "h0@x", 0, "x", 0), PB_EINVAL);
	assert_int_equal(store_outmail_claim(st, "h0@x"), 0);
	assert_int_equal(store_outmail_get(&got, st, "h0@x"), 0);
	assert_int_equal(got.handed, 0);
	assert_int_equal(store_outmail_hand(st, "h0@x"), 0);
	assert_int_equal(store_outmail_get(&got, st, "h0@x"), 0);
	assert_true(got.handed > 0);

	/* Waiting keeps it handed, releases the claim, counts as told. */
	assert_int_equal(store_outmail_wait(st, "h0@x", 4242, "unknown", 0), 0);
	assert_int_equal(store_outmail_get(&got, st, "h0@x"), 0);
	assert_true(got.handed > 0);
	assert_int_equal(got.state, STORE_OUTMAIL_DEFERRED);
	assert_int_equal(got.next_attempt, 4242);
	assert_int_equal(got.attempts, 0);
	assert_int_equal(got.lease_until, 0);
	assert_string_equal(got.last_error, "unknown");
	assert_int_equal(store_outmail_hand(st, "h0@x"), PB_EEXISTS);
	assert_int_equal(store_outmail_claim(st, "h0@x"), 0);
	assert_int_equal(store_outmail_wait(st, "h0@x", 1, "lost", 1), 0);
	assert_int_equal(store_outmail_get(&got, st, "h0@x"), 0);
	assert_int_equal(got.attempts, 1);

	/* An answer that says "not taken" clears it. */
	assert_int_equal(store_outmail_claim(st, "h0@x"), 0);
	assert_int_equal(store_outmail_defer(st, "h0@x", 1, "451"), 0);
	assert_int_equal(store_outmail_get(&got, st, "h0@x"), 0);
	assert_int_equal(got.handed, 0);
	assert_int_equal(store_outmail_claim(st, "h0@x"), 0);
	assert_int_equal(store_outmail_hand(st, "h0@x"), 0);
	assert_int_equal(store_outmail_fail(st, "h0@x", "550"), 0);
	assert_int_equal(store_outmail_get(&got, st, "h0@x"), 0);
	assert_int_equal(got.handed, 0);
	assert_int_equal(got.state, STORE_OUTMAIL_FAILED);

	/* Sent (accepted, or found in the list archive): gone. */
	assert_int_equal(store_outmail_claim(st, "h1@x"), 0);
	assert_int_equal(store_outmail_hand(st, "h1@x"), 0);
	assert_int_equal(
		store_outmail_sent(&done, st, "h1@x", STORE_SENT_ARCHIVE), 0);
	assert_int_equal(store_outmail_get(&got, st, "h1@x"), PB_ENOTFOUND);
	assert_int_equal(store_outmail_hand(st, "h1@x"), PB_ENOTFOUND);
	/* ... and how it was known is kept for why. */
	store_mail_init(&m);
	assert_int_equal(store_mail_get(&m, st, "h1@x"), 0);
	assert_int_equal(m.sent_how, STORE_SENT_ARCHIVE);
	assert_string_equal(store_sent_how_name(m.sent_how), "archive");
	store_mail_release(&m);

	store_outmail_release(&got);
	store_free(st);
}

/* A crash before the commit: neither the revision nor its mails. */
static void test_uncommitted_leaves_nothing(void **state)
{
	struct store *st = open_db("crash");
	struct store_outmail_list l = { 0 };
	struct store_revision r;

	(void)state;
	assert_int_equal(store_begin(st), 0);
	start(st, 1, HEAD, 1);
	queue_mail(st, 1, 1, 0, 1, "c@x");
	assert_int_equal(store_rollback(st), 0);
	assert_int_equal(store_outmail_list(&l, st, NULL, 0, 0), 0);
	assert_int_equal(l.nr, 0);
	store_revision_init(&r);
	assert_int_equal(store_revision_latest(&r, st, "g/p", 1), PB_ENOTFOUND);
	/* The number is allocated afresh. */
	assert_int_equal(start(st, 1, HEAD2, 1), 1);
	store_free(st);
}

static void test_revision_list(void **state)
{
	struct store *st = open_db("list");
	struct store_revision_list l = { 0 };

	(void)state;
	start(st, 2, HEAD, 1);
	start(st, 1, HEAD, 1);
	start(st, 1, HEAD2, 1);
	assert_int_equal(store_revision_list(&l, st, "g/p", 0), 0);
	assert_int_equal(l.nr, 3);
	assert_int_equal(l.items[0].iid, 1);
	assert_int_equal(l.items[0].revision, 1);
	assert_int_equal(l.items[1].revision, 2);
	assert_int_equal(l.items[2].iid, 2);
	store_revision_list_release(&l);
	assert_int_equal(store_revision_list(&l, st, NULL, 2), 0);
	assert_int_equal(l.nr, 2);
	store_revision_list_release(&l);
	assert_int_equal(store_revision_list(&l, st, "x/y", 0), 0);
	assert_int_equal(l.nr, 0);
	store_free(st);
}

static void test_archive(void **state)
{
	struct store *st = open_db("archive");
	struct store_archived a, got;
	struct store_archived_list l = { 0 };
	struct store_mail m;
	int64_t missing = -1;
	int rev, done;

	(void)state;
	rev = start(st, 1, HEAD, 1);
	queue_mail(st, 1, rev, 0, 1, "c@x");
	queue_mail(st, 1, rev, 1, 1, "p@x");
	/* Queued, not sent: not archived yet. */
	store_archived_init(&got);
	assert_int_equal(store_archive_get(&got, st, "c@x"), PB_ENOTFOUND);
	assert_int_equal(store_outmail_sent(&done, st, "c@x", STORE_SENT_MTA),
			 0);
	assert_int_equal(store_archive_get(&got, st, "c@x"), 0);
	assert_string_equal(got.project, "g/p");
	assert_int_equal(got.iid, 1);
	assert_int_equal(got.origin, STORE_ARCHIVE_BRIDGE);
	assert_int_equal(got.message_len, strlen(got.message));
	assert_string_equal(got.message, "Message-ID: <c@x>\n\nbody 0\n");
	store_archived_release(&got);

	/* A list reply, with a NUL byte: kept byte for byte, once. */
	store_archived_init(&a);
	a.message_id = "r@list";
	a.project = "g/p";
	a.iid = 1;
	a.origin = STORE_ARCHIVE_LIST;
	a.message = "Subject: Re\n\nx\0y\n";
	a.message_len = 17;
	assert_int_equal(store_archive_put(st, &a), 0);
	assert_int_equal(store_archive_put(st, &a), PB_EEXISTS);
	assert_int_equal(store_archive_get(&got, st, "r@list"), 0);
	assert_int_equal(got.message_len, 17);
	assert_memory_equal(got.message, a.message, 17);
	assert_int_equal(got.origin, STORE_ARCHIVE_LIST);
	store_archived_release(&got);
	a.message_len = 0;
	assert_int_equal(store_archive_put(st, &a), PB_EINVAL);
	a.message_len = 17;
	a.iid = 0;
	assert_int_equal(store_archive_put(st, &a), PB_EINVAL);

	/* A mail marked sent without the queue (as before schema 4). */
	store_mail_init(&m);
	m.message_id = "old@x";
	m.project = "g/p";
	m.iid = 1;
	m.kind = STORE_MAIL_FORGE_COMMENT;
	m.state = STORE_MAIL_SENT;
	assert_int_equal(store_mail_put(st, &m), 0);
	assert_int_equal(store_archive_missing(&missing, st, "g/p", 1), 0);
	assert_int_equal(missing, 1);

	assert_int_equal(store_outmail_sent(&done, st, "p@x", STORE_SENT_MTA),
			 0);
	assert_int_equal(store_archive_list(&l, st, "g/p", 1, 0), 0);
	assert_int_equal(l.nr, 3);
	assert_string_equal(l.items[0].message_id, "c@x");
	assert_string_equal(l.items[1].message_id, "r@list");
	assert_string_equal(l.items[2].message_id, "p@x");
	assert_null(l.items[0].message);
	store_archived_list_release(&l);
	assert_int_equal(store_archive_list(&l, st, "g/p", 2, 0), 0);
	assert_int_equal(l.nr, 0);
	assert_int_equal(store_archive_list(&l, st, "g/p", 0, 0), PB_EINVAL);

	/* [state] archive_keep: everything archived before a time goes. */
	assert_int_equal(store_archive_prune(&missing, st, 1), 0);
	assert_int_equal(missing, 0);
	assert_int_equal(store_archive_prune(&missing, st, INT64_MAX), 0);
	assert_int_equal(missing, 3);
	assert_int_equal(store_archive_get(&got, st, "r@list"), PB_ENOTFOUND);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_list),
		cmocka_unit_test(test_sent_finishes_revision),
		cmocka_unit_test(test_defer_fail_requeue),
		cmocka_unit_test(test_handed),
		cmocka_unit_test(test_uncommitted_leaves_nothing),
		cmocka_unit_test(test_revision_list),
		cmocka_unit_test(test_archive),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
