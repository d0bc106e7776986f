/*
 * forgemail_mr() against the recording fake forge (fakeforge.h) and a
 * real store: a forge comment becomes one mail in the outbound queue and
 * the thread map, once; the bridge's own notes and internal notes stay on
 * the forge; a failing forge moves no cursor.
 */
#include "cmocka_all.h"
#include "core/config.h"
#include "fakeforge.h"
#include "outbound/forgemail.h"
#include "storebed.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROJECT "group/project"
#define HEAD "1111111111111111111111111111111111111111"
#define BASE "2222222222222222222222222222222222222222"
#define COVER "cover.1@example.org"
#define CONF                                           \
	"[bridge]\n"                                   \
	"address = bridge@example.org\n"               \
	"domain = example.org\n"                       \
	"list_address = list@example.org\n"            \
	"[forge]\n"                                    \
	"url = https://gitlab.example.org\n"           \
	"token_file = /etc/patchbridge/token\n"        \
	"[inbound]\n"                                  \
	"owners_file = /etc/patchbridge/owners.yaml\n" \
	"[project \"" PROJECT "\"]\n"

struct bed {
	struct fakeforge ff;
	struct store *st;
	struct config *cfg;
	struct forgemail *fm;
	struct forge_note notes[4];
	struct forge_discussion disc[4];
};

static char dir[512];
static unsigned seq;

static int group_setup(void **state)
{
	(void)state;
	return storebed_tmpdir(dir, sizeof(dir), "forgemail");
}

static int group_teardown(void **state)
{
	(void)state;
	return storebed_tmpdir_remove(dir);
}

/* v1 of MR 7 mailed: its revision and cover letter. */
static void mailed(struct bed *b)
{
	struct store_revision rev;
	struct store_mail m;
	int n = 0;

	store_revision_init(&rev);
	rev.project = PROJECT;
	rev.iid = 7;
	rev.head_sha = HEAD;
	rev.base_sha = BASE;
	rev.start_sha = BASE;
	rev.patches = 1;
	rev.cover_msgid = COVER;
	assert_int_equal(store_revision_start(&n, b->st, &rev), 0);
	assert_int_equal(n, 1);
	store_mail_init(&m);
	m.message_id = COVER;
	m.project = PROJECT;
	m.iid = 7;
	m.revision = 1;
	m.patch = 0;
	m.total = 1;
	m.kind = STORE_MAIL_COVER;
	m.head_sha = HEAD;
	m.base_sha = BASE;
	assert_int_equal(store_mail_put(b->st, &m), 0);
	assert_int_equal(store_revision_mark_sent(b->st, PROJECT, 7, 1), 0);
}

static int setup(void **state)
{
	struct bed *b = calloc(1, sizeof(*b));
	struct strlist errs = STRLIST_INIT;
	char name[32];

	if (!b)
		return -1;
	snprintf(name, sizeof(name), "forgemail%u", seq++);
	if (storebed_open(&b->st, storebed_fresh(name), STORE_RW, 5000))
		fail_msg("store: %s", err_msg());
	if (config_load_mem(&b->cfg, &errs, "t.conf", CONF, strlen(CONF)))
		fail_msg("config: %s", errs.nr ? errs.items[0] : err_msg());
	strlist_release(&errs);
	fakeforge_init(&b->ff);
	b->ff.discussions = b->disc;
	assert_int_equal(forgemail_new(&b->fm, b->cfg, b->st, &b->ff.base), 0);
	mailed(b);
	*state = b;
	return 0;
}

static int teardown(void **state)
{
	struct bed *b = *state;

	forgemail_free(b->fm);
	config_free(b->cfg);
	fakeforge_release(&b->ff);
	store_free(b->st);
	free(b);
	return 0;
}

/* A discussion of one note by user, which the forge shows public. */
static struct forge_note *said(struct bed *b, int64_t id, const char *user,
			       const char *body)
{
	size_t i = b->ff.nr_discussions++;
	struct forge_note *n = &b->notes[i];
	struct forge_discussion *d = &b->disc[i];
	static char ids[4][48];

	snprintf(ids[i], sizeof(ids[i]), "%040lld", (long long)id);
	memset(n, 0, sizeof(*n));
	n->id = id;
	n->body = (char *)body;
	n->author.id = 100 + id;
	n->author.username = (char *)user;
	n->author.name = (char *)user;
	n->created_at = (char *)"2026-12-01T10:00:00.000Z";
	n->updated_at = (char *)"2026-12-01T10:00:00.000Z";
	memset(d, 0, sizeof(*d));
	d->id = ids[i];
	d->individual_note = 1;
	d->notes = n;
	d->nr_notes = 1;
	return n;
}

static void comment_mailed_once(void **state)
{
	struct bed *b = *state;
	struct store_mail m;
	size_t queued = 0;

	said(b, 501, "alice", "Please split this patch.");
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1);
	store_mail_init(&m);
	assert_int_equal(store_mail_by_note(&m, b->st, PROJECT, 501), 0);
	assert_int_equal(m.kind, STORE_MAIL_FORGE_COMMENT);
	assert_string_equal(m.discussion_id, b->disc[0].id);
	store_mail_release(&m);

	/* Read again: the note is not mailed twice.  (*queued adds.) */
	queued = 0;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0);
}

static void own_and_internal_notes_kept(void **state)
{
	struct bed *b = *state;
	struct store_mail m;
	size_t queued = 0;

	said(b, 601, "patchbridge", "Mirrored from the list.");
	said(b, 602, "carol", "Members only.")->internal = 1;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0);
	store_mail_init(&m);
	assert_int_equal(store_mail_by_note(&m, b->st, PROJECT, 601),
			 PB_ENOTFOUND);
	assert_int_equal(store_mail_by_note(&m, b->st, PROJECT, 602),
			 PB_ENOTFOUND);
	store_mail_release(&m);
}

static void forge_5xx_mails_nothing_yet(void **state)
{
	struct bed *b = *state;
	size_t queued = 0;

	said(b, 701, "alice", "A question.");
	fakeforge_script(&b->ff, FAKE_LIST_DISCUSSIONS, FAKE_5XX, 0,
			 "502 Bad Gateway");
	assert_true(err_is_temporary(forgemail_mr(b->fm, PROJECT, 7, &queued)));
	assert_int_equal(queued, 0);

	/* The forge back: the note is mailed then, once. */
	queued = 0;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1);
	queued = 0;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(comment_mailed_once),
		T(own_and_internal_notes_kept),
		T(forge_5xx_mails_nothing_yet),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
