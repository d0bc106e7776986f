/*
 * Several hosts on one state: the store's primitives for exactly once
 * across hosts, judged on both engines (storebed.h; CTest's test_hosts
 * on SQLite, test_hosts_pg on PostgreSQL).  Each host is a store handle
 * with a host name of its own; where it matters the hosts are separate
 * processes, started together.
 *
 *  - the same reply spooled on two hosts is journaled once, applied once
 *    and each of its forge actions performed once;
 *  - a host applies what it journaled; another takes a reply over when
 *    the claim expired (the host died) or when it waited a lease
 *    unclaimed, and the first host, back, finds the claim gone;
 *  - an outbound mail is handed to the MTA by one host at a time, and
 *    taken over when its claim expires;
 *  - conflicting writers: the loser gets PB_ETEMP and nothing half
 *    done, and the store's own units run again after a conflict, as
 *    does a caller's store_transaction();
 *  - a host's copy of the shared thread map, for its milter.
 */
#include "cmocka_all.h"
#include "core/threadmap.h"
#include "state/store.h"
#include "storebed.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUSY_MS 5000
#define BASE "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define LEASE 2 /* seconds: the take-over tests wait a little more */

static char dir[512];

static int setup(void **state)
{
	const char *base = getenv("PB_TEST_TMP");

	(void)state;
	snprintf(dir, sizeof(dir), "%s/hosts.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	storebed_init("hosts", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct store *host(const char *target, const char *name, int64_t lease)
{
	struct store *st = NULL;

	if (storebed_open_host(&st, target, STORE_RW, name, lease))
		fail_msg("open as %s: %s", name, err_msg());
	return st;
}

/* Journal msgid as spooled by st's host; 0 or PB_EEXISTS. */
static int spool(struct store *st, const char *msgid, int64_t next)
{
	struct store_inbound in;

	store_inbound_init(&in);
	in.message_id = msgid;
	in.spool_name = "1700000000000000.q.1.1";
	in.project = "g/p";
	in.iid = 1;
	in.revision = 1;
	in.patch = 1;
	in.classification = "reply";
	in.next_attempt = next;
	in.spool_record = "PB-Spool: 1\n";
	in.spool_record_len = strlen("PB-Spool: 1\n");
	return store_inbound_record(st, &in);
}

static void sleep_s(int s)
{
	struct timespec ts = { s, 100 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

/* Wait for a forked child; it must exit 0. */
static void reap(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * One host's daemon, in a child: journal every reply (both hosts got
 * every one), then apply what it may claim - three forge actions per
 * reply, each "performed" by a line in out - until nothing is left.
 */
#define REPLIES 40
#define ACTIONS 3

static int host_child(const char *target, const char *name, const char *out,
		      int gate)
{
	struct store *st = NULL;
	struct store_inbound row;
	struct store_action act;
	char id[64], marker[96], c;
	FILE *f = fopen(out, "w");
	int i, k, rc, dup = 0;

	store_inbound_init(&row);
	store_action_init(&act);
	if (!f || storebed_open_host(&st, target, STORE_RW, name, 60))
		return 1;
	if (read(gate, &c, 1) != 0)
		return 1;
	for (i = 0; i < REPLIES; i++) {
		snprintf(id, sizeof(id), "reply-%d@x", i);
		do
			rc = spool(st, id, 0);
		while (rc == PB_ETEMP);
		if (rc == PB_EEXISTS)
			dup++;
		else if (rc)
			goto fail;
	}
	for (;;) {
		rc = store_inbound_claim(&row, st, time(NULL));
		if (rc == PB_ETEMP)
			continue;
		if (rc == PB_ENOTFOUND)
			break;
		if (rc)
			goto fail;
		for (k = 0; k < ACTIONS; k++) {
			snprintf(marker, sizeof(marker), "%s#%d",
				 row.message_id, k);
			do
				rc = store_action_begin(&act, st,
							row.message_id, k,
							"comment", marker);
			while (rc == PB_ETEMP);
			if (rc == PB_EEXISTS && act.state == STORE_ACTION_DONE)
				continue;
			if (rc && rc != PB_EEXISTS)
				goto fail;
			fprintf(f, "%s %d %s\n", row.message_id, k, name);
			do
				rc = store_action_complete(st, row.message_id,
							   k, 1000 + k, NULL);
			while (rc == PB_ETEMP);
			if (rc)
				goto fail;
		}
		do
			rc = store_inbound_finish(st, row.message_id,
						  STORE_INBOUND_APPLIED, NULL);
		while (rc == PB_ETEMP);
		if (rc)
			goto fail;
	}
	fprintf(stderr, "%s: %d of %d replies were copies; %llu retries\n",
		name, dup, REPLIES, (unsigned long long)store_retries(st));
	store_inbound_release(&row);
	store_action_release(&act);
	store_free(st);
	return fclose(f) ? 1 : 0;
fail:
	fprintf(stderr, "%s: %s\n", name, err_msg());
	return 1;
}

static void test_same_reply_two_hosts(void **state)
{
	const char *target = storebed_fresh("same");
	static int done[REPLIES][ACTIONS];
	char out[2][700], line[200], id[64];
	const char *names[2] = { "mx1", "mx2" };
	struct store *st = host(target, "check", 60);
	struct store_inbound in;
	int i, k, gate[2], lines = 0;
	pid_t pid[2];

	store_free(st);
	assert_int_equal(pipe(gate), 0);
	for (i = 0; i < 2; i++) {
		snprintf(out[i], sizeof(out[i]), "%s/forge.%d", dir, i);
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			close(gate[1]);
			_exit(host_child(target, names[i], out[i], gate[0]));
		}
	}
	close(gate[0]);
	close(gate[1]); /* go */
	for (i = 0; i < 2; i++)
		reap(pid[i]);

	/* Every forge action was performed exactly once. */
	memset(done, 0, sizeof(done));
	for (i = 0; i < 2; i++) {
		FILE *f = fopen(out[i], "r");

		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			int r = atoi(line + strlen("reply-"));
			const char *sp = strchr(line, ' ');

			assert_non_null(sp);
			k = atoi(sp + 1);
			assert_true(r >= 0 && r < REPLIES);
			assert_true(k >= 0 && k < ACTIONS);
			assert_int_equal(done[r][k], 0);
			done[r][k] = 1;
			lines++;
		}
		fclose(f);
	}
	assert_int_equal(lines, REPLIES * ACTIONS);
	/* Each reply applied once, by the host that journaled it. */
	st = host(target, "check", 60);
	store_inbound_init(&in);
	for (i = 0; i < REPLIES; i++) {
		snprintf(id, sizeof(id), "reply-%d@x", i);
		assert_int_equal(store_inbound_get(&in, st, id), 0);
		assert_int_equal(in.state, STORE_INBOUND_APPLIED);
		assert_int_equal(in.attempts, 1);
		assert_string_equal(in.claimed_by, in.spooled_by);
	}
	store_inbound_release(&in);
	/* What `status` shows of each host: its part adds up. */
	{
		struct store_host_list hl = { 0 };
		int64_t journaled = 0, applied = 0;

		assert_int_equal(store_hosts(&hl, st), 0);
		assert_true(hl.nr >= 1 && hl.nr <= 2);
		for (i = 0; i < (int)hl.nr; i++) {
			assert_true(!strcmp(hl.items[i].host, "mx1") ||
				    !strcmp(hl.items[i].host, "mx2"));
			assert_int_equal(hl.items[i].journaled,
					 hl.items[i].applied);
			assert_int_equal(hl.items[i].applying, 0);
			assert_true(hl.items[i].last_active > 0);
			journaled += hl.items[i].journaled;
			applied += hl.items[i].applied;
		}
		assert_int_equal(journaled, REPLIES);
		assert_int_equal(applied, REPLIES);
		store_host_list_release(&hl);
	}
	store_free(st);
}

/*
 * mx1 claims a reply, begins its first forge action and dies.  mx2 may
 * not take it while the claim lasts, then does; mx1, started again,
 * recovers nothing of mx2's and cannot write or finish the reply.  A
 * reply mx1 journaled but never claimed is mx2's once it waited a
 * lease.
 */
static void test_takeover_after_lease(void **state)
{
	const char *target = storebed_fresh("takeover");
	struct store *a = host(target, "mx1", LEASE);
	struct store *b = host(target, "mx2", LEASE);
	struct store_inbound row, got;
	struct store_action act;
	char *kept = NULL;
	size_t len = 0;
	int n = -1;

	store_inbound_init(&row);
	store_inbound_init(&got);
	store_action_init(&act);
	assert_int_equal(spool(a, "t1@x", 0), 0);
	assert_int_equal(spool(b, "t1@x", 0), PB_EEXISTS);
	/* mx1's own reply: not mx2's to take while it is fresh. */
	assert_int_equal(store_inbound_claim(&row, b, time(NULL)),
			 PB_ENOTFOUND);
	assert_int_equal(store_inbound_claim(&row, a, time(NULL)), 0);
	assert_string_equal(row.message_id, "t1@x");
	assert_string_equal(row.claimed_by, "mx1");
	assert_string_equal(row.spooled_by, "mx1");
	assert_true(row.lease_until >= time(NULL) + LEASE - 1);
	assert_int_equal(
		store_action_begin(&act, a, "t1@x", 0, "comment", "m0"), 0);
	assert_string_equal(act.host, "mx1");
	store_free(a); /* mx1 dies mid-action */

	assert_int_equal(store_inbound_claim(&row, b, time(NULL)),
			 PB_ENOTFOUND);
	sleep_s(LEASE + 1);
	assert_int_equal(store_inbound_claim(&row, b, time(NULL)), 0);
	assert_string_equal(row.message_id, "t1@x");
	assert_string_equal(row.claimed_by, "mx2");
	assert_int_equal(row.attempts, 2);
	/* The record travelled with the row: mx2 can apply it. */
	assert_int_equal(store_inbound_spool_record(&kept, &len, b, "t1@x"), 0);
	assert_int_equal(len, strlen("PB-Spool: 1\n"));
	assert_string_equal(kept, "PB-Spool: 1\n");
	free(kept);
	/* The action mx1 began may have landed: look for its marker. */
	assert_int_equal(store_action_begin(&act, b, "t1@x", 0, "comment",
					    "m0"),
			 PB_EEXISTS);
	assert_int_equal(act.state, STORE_ACTION_INTENT);
	assert_string_equal(act.host, "mx2");

	/* mx1 comes back: its start leaves mx2's claim alone ... */
	a = host(target, "mx1", LEASE);
	assert_int_equal(store_inbound_recover(&n, a), 0);
	assert_int_equal(n, 0);
	/* ... and a late write of the old attempt is refused. */
	assert_int_equal(store_action_begin(&act, a, "t1@x", 1, "comment",
					    "m1"),
			 PB_ETEMP);
	assert_non_null(strstr(err_msg(), "mx2"));
	assert_int_equal(store_inbound_finish(a, "t1@x", STORE_INBOUND_APPLIED,
					      NULL),
			 PB_EEXISTS);
	assert_int_equal(store_inbound_retry(a, "t1@x", time(NULL) + 60, "x"),
			 PB_EEXISTS);
	assert_int_equal(store_inbound_renew(a, "t1@x"), PB_EEXISTS);
	assert_int_equal(store_inbound_renew(b, "t1@x"), 0);

	assert_int_equal(store_action_complete(b, "t1@x", 0, 7, NULL), 0);
	assert_int_equal(store_inbound_finish(b, "t1@x", STORE_INBOUND_APPLIED,
					      NULL),
			 0);
	assert_int_equal(store_inbound_get(&got, a, "t1@x"), 0);
	assert_int_equal(got.state, STORE_INBOUND_APPLIED);
	assert_string_equal(got.spooled_by, "mx1");
	assert_string_equal(got.claimed_by, "mx2");
	assert_int_equal(got.lease_until, 0);
	/* A finished mail's record is not kept. */
	assert_int_equal(store_inbound_spool_record(&kept, &len, b, "t1@x"),
			 PB_ENOTFOUND);

	/* Journaled by mx1, never claimed, due for more than a lease. */
	assert_int_equal(spool(a, "t2@x", time(NULL) - LEASE - 5), 0);
	assert_int_equal(store_inbound_claim(&row, b, time(NULL)), 0);
	assert_string_equal(row.message_id, "t2@x");
	assert_int_equal(store_inbound_retry(b, "t2@x", time(NULL) + 3600,
					     "forge down"),
			 0);
	/* A retried mail keeps its record for the next attempt. */
	assert_int_equal(store_inbound_spool_record(&kept, &len, a, "t2@x"), 0);
	free(kept);

	store_inbound_release(&row);
	store_inbound_release(&got);
	store_action_release(&act);
	store_free(a);
	store_free(b);
}

static void queue_one(struct store *st, const char *msgid, int k)
{
	struct store_mail m;
	struct store_outmail o;

	store_mail_init(&m);
	m.message_id = msgid;
	m.project = "g/p";
	m.iid = 1;
	m.revision = 1;
	m.patch = k;
	m.total = 2;
	m.kind = k ? STORE_MAIL_PATCH : STORE_MAIL_COVER;
	assert_int_equal(store_mail_put(st, &m), 0);
	store_outmail_init(&o);
	o.message_id = msgid;
	o.envelope_from = "bridge@x.example";
	o.recipients = "list@x.example\n";
	o.message = "Subject: x\n\nbody\n";
	o.message_len = strlen(o.message);
	assert_int_equal(store_outmail_put(st, &o), 0);
}

static void test_outmail_claims(void **state)
{
	const char *target = storebed_fresh("outmail");
	struct store *a = host(target, "mx1", LEASE);
	struct store *b = host(target, "mx2", LEASE);
	struct store_revision rev;
	struct store_mail got = STORE_MAIL_INIT;
	struct store_outmail o;
	int n = 0, done = 0;

	store_revision_init(&rev);
	rev.project = "g/p";
	rev.iid = 1;
	rev.head_sha = BASE;
	rev.patches = 1;
	assert_int_equal(store_revision_start(&n, a, &rev), 0);
	queue_one(a, "c@x", 0);
	queue_one(a, "p1@x", 1);

	/* One host at a time hands a mail to its MTA. */
	assert_int_equal(store_outmail_claim(a, "c@x"), 0);
	assert_int_equal(store_outmail_claim(b, "c@x"), PB_EEXISTS);
	assert_non_null(strstr(err_msg(), "mx1"));
	assert_int_equal(store_outmail_claim(a, "c@x"), 0); /* its own */
	store_outmail_init(&o);
	assert_int_equal(store_outmail_get(&o, b, "c@x"), 0);
	assert_string_equal(o.claimed_by, "mx1");
	assert_true(o.lease_until > 0);
	/* A deferral releases it ... */
	assert_int_equal(store_outmail_defer(a, "c@x", time(NULL), "451 busy"),
			 0);
	assert_int_equal(store_outmail_claim(b, "c@x"), 0);
	/* ... and the host that holds it decides. */
	assert_int_equal(store_outmail_defer(a, "c@x", time(NULL), "x"),
			 PB_EEXISTS);
	assert_int_equal(store_outmail_fail(a, "c@x", "x"), PB_EEXISTS);
	assert_int_equal(store_outmail_sent(&done, b, "c@x", STORE_SENT_MTA),
			 0);
	assert_int_equal(done, 0);
	assert_int_equal(store_mail_get(&got, a, "c@x"), 0);
	assert_string_equal(got.sent_by, "mx2");
	assert_int_equal(store_outmail_claim(a, "c@x"), PB_ENOTFOUND);

	/* mx1 claims the patch, hands it to its MTA and dies: mx2 takes
	 * it after the lease and sees that the outcome is unknown. */
	assert_int_equal(store_outmail_claim(a, "p1@x"), 0);
	assert_int_equal(store_outmail_hand(a, "p1@x"), 0);
	store_free(a);
	assert_int_equal(store_outmail_claim(b, "p1@x"), PB_EEXISTS);
	assert_int_equal(store_outmail_hand(b, "p1@x"), PB_EEXISTS);
	sleep_s(LEASE + 1);
	assert_int_equal(store_outmail_claim(b, "p1@x"), 0);
	assert_int_equal(store_outmail_get(&o, b, "p1@x"), 0);
	assert_true(o.handed > 0);
	assert_string_equal(o.claimed_by, "mx2");
	assert_int_equal(store_outmail_sent(&done, b, "p1@x", STORE_SENT_MTA),
			 0);
	assert_int_equal(done, 1);

	store_outmail_release(&o);
	store_mail_release(&got);
	store_free(b);
}

static int start_rev(struct store *st, const char *head, int *n)
{
	struct store_revision rev;

	store_revision_init(&rev);
	rev.project = "g/p";
	rev.iid = 7;
	rev.head_sha = head;
	rev.patches = 1;
	return store_revision_start(n, st, &rev);
}

/*
 * Two writers in conflicting transactions: one gets PB_ETEMP (SQLite: the
 * other holds the write lock; PostgreSQL: a serialization failure), and
 * neither half of a failed transaction stays.
 */
static void test_conflicting_transactions(void **state)
{
	const char *target = storebed_fresh("conflict");
	struct store *a = NULL, *b = NULL;
	struct store_revision latest;
	int n = 0, ra, rb;

	assert_int_equal(storebed_open_host(&a, target, STORE_RW, "mx1", 0), 0);
	{
		struct store_opts o;

		memset(&o, 0, sizeof(o));
		o.backend = storebed_backend();
		o.target = target;
		o.flags = STORE_RW;
		o.busy_timeout_ms = 50;
		o.host = "mx2";
		assert_int_equal(store_open_opts(&b, &o), 0);
	}
	store_revision_init(&latest);
	assert_int_equal(start_rev(a, "1111", &n), 0);
	assert_int_equal(n, 1);

	/* a reads, b writes what a read, a writes after it. */
	assert_int_equal(store_begin(a), 0);
	assert_int_equal(store_revision_latest(&latest, a, "g/p", 7), 0);
	assert_int_equal(latest.revision, 1);
	assert_int_equal(store_cursor_set(a, "seen", "v1"), 0);
	rb = start_rev(b, "2222", &n);
	if (rb)
		print_message("b: %s\n", err_msg());
	ra = start_rev(a, "3333", &n);
	if (!ra)
		ra = store_commit(a);
	else
		store_rollback(a);
	print_message("a: %s, b: %s\n", err_name(ra), err_name(rb));
	assert_true((ra == 0) != (rb == 0));
	assert_true(ra == PB_ETEMP || rb == PB_ETEMP);
	/* The loser's transaction left nothing: numbers 1, 2, no gap. */
	assert_int_equal(store_revision_latest(&latest, a, "g/p", 7), 0);
	assert_int_equal(latest.revision, 2);
	{
		struct buf v = BUF_INIT(64);

		assert_int_equal(store_cursor_get(&v, b, "seen"),
				 ra ? PB_ENOTFOUND : 0);
		buf_release(&v);
	}
	store_revision_release(&latest);
	store_free(a);
	store_free(b);
}

/*
 * The same reply journaled by two hosts at the same moment, the second in
 * a store_transaction(): between its first read and its write, the other
 * host journals the reply.  On PostgreSQL the write meets a serialization
 * failure, and the transaction runs again (counted in store_retries())
 * and finds the reply journaled: PB_EEXISTS, as when the other host was
 * first by a second - no PB_ETEMP for a normal race.  SQLite has one
 * writer: the other host waits for the lock (here, 50 ms and PB_ETEMP)
 * and this host journals the reply.
 */
struct race {
	struct store *other;
	int runs;
	int other_rc;
};

static int race_tx(struct store *st, void *arg)
{
	struct race *r = arg;
	struct store_inbound row;
	int rc;

	r->runs++;
	store_inbound_init(&row);
	rc = store_inbound_get(&row, st, "race@x");
	store_inbound_release(&row);
	if (rc && rc != PB_ENOTFOUND)
		return rc;
	if (r->runs == 1)
		r->other_rc = spool(r->other, "race@x", 0);
	return spool(st, "race@x", 0);
}

static void test_transaction_race(void **state)
{
	const char *target = storebed_fresh("race");
	struct store *a = NULL, *b = NULL;
	struct race r = { NULL, 0, 0 };
	struct store_opts o;
	uint64_t before;
	int rc;

	(void)state;
	assert_int_equal(storebed_open_host(&a, target, STORE_RW, "mx1", 0), 0);
	memset(&o, 0, sizeof(o));
	o.backend = storebed_backend();
	o.target = target;
	o.flags = STORE_RW;
	o.busy_timeout_ms = 50;
	o.host = "mx2";
	assert_int_equal(store_open_opts(&b, &o), 0);
	r.other = b;
	before = store_retries(a);
	rc = store_transaction(a, race_tx, &r);
	print_message("runs %d, this host: %s, the other: %s\n", r.runs,
		      err_name(rc), err_name(r.other_rc));
	if (storebed_backend() == STORE_BACKEND_POSTGRESQL) {
		assert_int_equal(r.other_rc, 0);
		assert_int_equal(rc, PB_EEXISTS);
		assert_int_equal(r.runs, 2);
		assert_int_equal(store_retries(a), before + 1);
	} else {
		assert_int_equal(r.other_rc, PB_ETEMP);
		assert_int_equal(rc, 0);
		assert_int_equal(r.runs, 1);
	}
	/* Journaled once, either way; no transaction left open. */
	assert_int_equal(spool(b, "race@x", 0), PB_EEXISTS);
	assert_int_equal(store_begin(a), 0);
	assert_int_equal(store_commit(a), 0);
	store_free(a);
	store_free(b);
}

/*
 * Two hosts start revisions of one MR at once, outside transactions: the
 * store runs its unit again after a conflict, so every start succeeds
 * and the numbers are 1..2N without a gap or a double.
 */
#define STARTS 30

static int starter_child(const char *target, const char *name, int gate)
{
	struct store *st = NULL;
	char head[64], c;
	int i, n, rc;

	if (storebed_open_host(&st, target, STORE_RW, name, 0))
		return 1;
	if (read(gate, &c, 1) != 0)
		return 1;
	for (i = 0; i < STARTS; i++) {
		snprintf(head, sizeof(head), "%s%04d",
			 name[2] == '1' ? "a" : "b", i);
		rc = start_rev(st, head, &n);
		if (rc) {
			fprintf(stderr, "%s: %s\n", name, err_msg());
			return 1;
		}
	}
	fprintf(stderr, "%s: %llu units run again\n", name,
		(unsigned long long)store_retries(st));
	store_free(st);
	return 0;
}

static void test_units_retried(void **state)
{
	const char *target = storebed_fresh("retry");
	struct store *st = host(target, "check", 0);
	struct store_revision_list list = { 0 };
	const char *names[2] = { "mx1", "mx2" };
	int i, gate[2];
	pid_t pid[2];

	store_free(st);
	assert_int_equal(pipe(gate), 0);
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			close(gate[1]);
			_exit(starter_child(target, names[i], gate[0]));
		}
	}
	close(gate[0]);
	close(gate[1]);
	for (i = 0; i < 2; i++)
		reap(pid[i]);
	st = host(target, "check", 0);
	assert_int_equal(store_revision_list(&list, st, "g/p", 0), 0);
	assert_int_equal(list.nr, 2 * STARTS);
	for (i = 0; i < (int)list.nr; i++)
		assert_int_equal(list.items[i].revision, i + 1);
	store_revision_list_release(&list);
	store_free(st);
}

/* Start revision rev of g/p!iid and record its patch 1 (sent or not). */
static void mail_one(struct store *st, int64_t iid, const char *head,
		     const char *msgid, int sent)
{
	struct store_revision rev;
	struct store_mail m;
	int n = 0;

	memset(&rev, 0, sizeof(rev));
	rev.project = "g/p";
	rev.iid = iid;
	rev.head_sha = head;
	rev.base_sha = BASE;
	rev.patch_id = head;
	rev.patches = 1;
	rev.cover_msgid = "";
	if (store_revision_start(&n, st, &rev))
		fail_msg("revision: %s", err_msg());
	store_mail_init(&m);
	m.message_id = msgid;
	m.project = "g/p";
	m.iid = iid;
	m.revision = n;
	m.patch = 1;
	m.total = 1;
	m.kind = STORE_MAIL_PATCH;
	m.commit_sha = head;
	m.diff = "diff --git a/x b/x\n";
	m.diff_len = strlen(m.diff);
	m.state = sent ? STORE_MAIL_SENT : STORE_MAIL_PENDING;
	if (store_mail_put(st, &m))
		fail_msg("mail: %s", err_msg());
}

/*
 * A host's copy of the thread map (a SQLite file, for its milter): the
 * shared map's mails and their revisions, whole; a second round copies
 * what is new and brings a row's state up to date; read through the
 * thread map interface as the milter reads it.
 */
static void test_threadmap_copy(void **state)
{
	const char *target = storebed_fresh("copy");
	char path[600];
	struct store *st = host(target, "mx1", 0), *copy = NULL;
	struct store_mail m;
	struct threadmap tm;
	struct threadmap_mail row;
	struct threadmap_revision rev;
	int64_t since = 0;
	size_t n = 0;
	int i;

	(void)state;
	snprintf(path, sizeof(path), "%s/copy.db", dir);
	/* more than a page, most with one creation time */
	assert_int_equal(store_begin(st), 0);
	for (i = 1; i <= STORE_MIRROR_PAGE + 20; i++) {
		char head[41], id[64];

		snprintf(head, sizeof(head), "%040d", i);
		snprintf(id, sizeof(id), "pb.%d@x", i);
		mail_one(st, i, head, id, 1);
	}
	assert_int_equal(store_commit(st), 0);
	assert_int_equal(store_open(&copy, path, STORE_RW, BUSY_MS), 0);
	assert_int_equal(store_threadmap_mirror(copy, st, &since, &n), 0);
	assert_int_equal(n, STORE_MIRROR_PAGE + 20);
	assert_true(since > 0);

	/* a new mail, pending; then it is sent: the next rounds see both */
	mail_one(st, 10000, "f000000000000000000000000000000000000000",
		 "pb.new@x", 0);
	assert_int_equal(store_threadmap_mirror(copy, st, &since, &n), 0);
	assert_true(n >= 1);
	store_mail_init(&m);
	assert_int_equal(store_mail_get(&m, copy, "pb.new@x"), 0);
	assert_int_equal(m.state, STORE_MAIL_PENDING);
	assert_int_equal(store_mail_mark_sent(st, "pb.new@x"), 0);
	since -= 60;
	assert_int_equal(store_threadmap_mirror(copy, st, &since, &n), 0);
	assert_int_equal(store_mail_get(&m, copy, "pb.new@x"), 0);
	assert_int_equal(m.state, STORE_MAIL_SENT);
	assert_string_equal(m.sent_by, "mx1");
	store_mail_release(&m);
	store_free(copy);

	/* the milter's read: read-only, through core/threadmap.h */
	assert_int_equal(store_open(&copy, path, STORE_RO, BUSY_MS), 0);
	store_threadmap(&tm, copy);
	threadmap_mail_init(&row);
	assert_int_equal(tm.mail_get(tm.arg, &row, "pb.3@x"), 0);
	assert_string_equal(row.project, "g/p");
	assert_int_equal(row.iid, 3);
	assert_int_equal(row.revision, 1);
	assert_int_equal(row.patch, 1);
	assert_int_equal(row.diff_len, strlen("diff --git a/x b/x\n"));
	assert_int_equal(tm.mail_find(tm.arg, &row, "g/p", 10000, 1, 1), 0);
	assert_string_equal(row.message_id, "pb.new@x");
	threadmap_mail_release(&row);
	threadmap_revision_init(&rev);
	assert_int_equal(tm.revision_latest(tm.arg, &rev, "g/p", 10000), 0);
	assert_int_equal(rev.revision, 1);
	threadmap_revision_release(&rev);
	store_free(copy);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_reply_two_hosts),
		cmocka_unit_test(test_takeover_after_lease),
		cmocka_unit_test(test_outmail_claims),
		cmocka_unit_test(test_conflicting_transactions),
		cmocka_unit_test(test_units_retried),
		cmocka_unit_test(test_transaction_race),
		cmocka_unit_test(test_threadmap_copy),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
