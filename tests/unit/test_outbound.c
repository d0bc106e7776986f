/*
 * outbound_mr() against the recording fake forge (fakeforge.h) and a
 * store on SQLite: what it decides before any git fetch or mail - a
 * head mailed before is not mailed again, a pure rebase (same patch-id
 * on a new base) is not mailed with mail_rebases = no, a merged MR is
 * left alone - and that nothing is queued for the MTA then.  Mailing a
 * new revision needs a mirror and an MTA: the simulator tier covers it.
 */
#include "cmocka_all.h"
#include "core/config.h"
#include "fakeforge.h"
#include "outbound/outbound.h"
#include "storebed.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/strlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROJECT "group/project"
#define HEAD "1111111111111111111111111111111111111111"
#define BASE "2222222222222222222222222222222222222222"
#define PATCH_ID "3333333333333333333333333333333333333333"
#define NEW_HEAD "4444444444444444444444444444444444444444"
#define NEW_BASE "5555555555555555555555555555555555555555"
#define COVER "v1-0.1-7@bridge.example.org"

struct bed {
	struct fakeforge ff;
	struct store *st;
	struct config *cfg;
	struct outbound *ob;
	struct outbound_report rep;
};

static char dir[512];
static unsigned seq;

static int group_setup(void **state)
{
	(void)state;
	return storebed_tmpdir(dir, sizeof(dir), "outbound");
}

static int group_teardown(void **state)
{
	(void)state;
	return storebed_tmpdir_remove(dir);
}

/* Revision 1 of MR 7 mailed: HEAD on BASE, its cover letter. */
static void mailed(struct bed *b)
{
	struct store_revision rev;
	struct store_mail m;
	int n = 0;

	store_revision_init(&rev);
	rev.project = PROJECT;
	rev.iid = 7;
	rev.head_sha = HEAD;
	rev.base_sha = rev.start_sha = BASE;
	rev.patch_id = PATCH_ID;
	rev.version_id = 1;
	rev.patches = 1;
	rev.cover_msgid = COVER;
	assert_int_equal(store_revision_start(&n, b->st, &rev), 0);
	assert_int_equal(n, 1);
	store_mail_init(&m);
	m.message_id = COVER;
	m.project = PROJECT;
	m.iid = 7;
	m.revision = 1;
	m.total = 1;
	m.kind = STORE_MAIL_COVER;
	m.head_sha = HEAD;
	m.base_sha = m.start_sha = BASE;
	m.state = STORE_MAIL_SENT;
	assert_int_equal(store_mail_put(b->st, &m), 0);
	assert_int_equal(store_revision_mark_sent(b->st, PROJECT, 7, 1), 0);
}

static int setup(void **state)
{
	struct bed *b = calloc(1, sizeof(*b));
	struct strlist errs = STRLIST_INIT;
	struct buf conf = BUF_INIT(1 << 16);
	struct outbound_opts o = { 0 };
	char name[32];

	if (!b)
		return -1;
	snprintf(name, sizeof(name), "outbound%u", seq++);
	if (storebed_open(&b->st, storebed_fresh(name), STORE_RW, 5000))
		fail_msg("store: %s", err_msg());
	assert_int_equal(buf_addf(&conf,
				  "[bridge]\n"
				  "address = patchbridge@bridge.example.org\n"
				  "domain = bridge.example.org\n"
				  "list_address = list@example.org\n"
				  "[forge]\n"
				  "url = https://gitlab.example.org\n"
				  "token_file = %s/token\n"
				  "[inbound]\n"
				  "owners_file = /etc/patchbridge/owners.yaml\n"
				  "[state]\n"
				  "path = %s/%s.state\n"
				  "[project \"" PROJECT "\"]\n"
				  "mail_rebases = no\n",
				  dir, dir, name),
			 0);
	if (config_load_mem(&b->cfg, &errs, "t.conf", conf.data, conf.len))
		fail_msg("config: %s", errs.nr ? errs.items[0] : err_msg());
	strlist_release(&errs);
	buf_release(&conf);
	fakeforge_init(&b->ff);
	o.cfg = b->cfg;
	o.store = b->st;
	o.forge = &b->ff.base;
	if (outbound_new(&b->ob, &o))
		fail_msg("outbound_new: %s", err_msg());
	mailed(b);
	*state = b;
	return 0;
}

static int teardown(void **state)
{
	struct bed *b = *state;

	outbound_free(b->ob);
	fakeforge_release(&b->ff);
	config_free(b->cfg);
	store_free(b->st);
	free(b);
	return 0;
}

static int run(struct bed *b)
{
	memset(&b->rep, 0, sizeof(b->rep));
	return outbound_mr(&b->rep, b->ob, PROJECT, 7, 0);
}

/* Mails queued for the MTA, of MR 7. */
static size_t queued(struct bed *b)
{
	struct store_outmail_list l = { 0 };
	size_t n;

	assert_int_equal(store_outmail_list(&l, b->st, PROJECT, 7, 0), 0);
	n = l.nr;
	store_outmail_list_release(&l);
	return n;
}

/* The revision last recorded for MR 7. */
static int latest(struct bed *b)
{
	struct store_revision r;
	int n;

	store_revision_init(&r);
	assert_int_equal(store_revision_latest(&r, b->st, PROJECT, 7), 0);
	n = r.revision;
	store_revision_release(&r);
	return n;
}

static void mailed_head_is_not_mailed_again(void **state)
{
	struct bed *b = *state;

	b->ff.version_head = HEAD;
	b->ff.version_base = BASE;
	b->ff.version_patch_id = PATCH_ID;
	assert_int_equal(run(b), 0);
	assert_int_equal(b->rep.outcome, OUTBOUND_ALREADY);
	assert_int_equal(b->rep.revision, 1);
	assert_int_equal(b->rep.sent, 0);
	assert_int_equal(queued(b), 0);
	assert_int_equal(latest(b), 1);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_LIST_VERSIONS), 1);
}

static void pure_rebase_is_not_mailed(void **state)
{
	struct bed *b = *state;

	b->ff.version_head = NEW_HEAD;
	b->ff.version_base = NEW_BASE;
	b->ff.version_patch_id = PATCH_ID;
	assert_int_equal(run(b), 0);
	assert_int_equal(b->rep.outcome, OUTBOUND_NOTHING);
	assert_int_equal(b->rep.revision, 1);
	assert_non_null(strstr(b->rep.reason, "pure rebase of v1"));
	assert_non_null(strstr(b->rep.reason, "mail_rebases = no"));
	assert_int_equal(queued(b), 0);
	assert_int_equal(latest(b), 1);

	/* Asked again: the same answer, still nothing recorded. */
	assert_int_equal(run(b), 0);
	assert_int_equal(b->rep.outcome, OUTBOUND_NOTHING);
	assert_int_equal(latest(b), 1);
}

static void merged_mr_is_left_alone(void **state)
{
	struct bed *b = *state;

	b->ff.mr_state = "merged";
	b->ff.version_head = NEW_HEAD;
	b->ff.version_base = NEW_BASE;
	b->ff.version_patch_id = "6666666666666666666666666666666666666666";
	assert_int_equal(run(b), 0);
	assert_int_equal(b->rep.outcome, OUTBOUND_NOTHING);
	assert_non_null(strstr(b->rep.reason, "merged"));
	assert_int_equal(fakeforge_count(&b->ff, FAKE_LIST_VERSIONS), 0);
	assert_int_equal(queued(b), 0);
}

static void version_without_base_is_none_yet(void **state)
{
	struct bed *b = *state;

	b->ff.version_head = NEW_HEAD;
	assert_int_equal(run(b), 0);
	assert_int_equal(b->rep.outcome, OUTBOUND_NOTHING);
	assert_non_null(strstr(b->rep.reason, "no diff version yet"));
	assert_int_equal(queued(b), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(mailed_head_is_not_mailed_again),
		T(pure_rebase_is_not_mailed),
		T(merged_mr_is_left_alone),
		T(version_without_base_is_none_yet),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
