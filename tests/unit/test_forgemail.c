/*
 * forgemail_mr() against the recording fake forge (fakeforge.h) and a
 * real store: a forge comment becomes one mail in the outbound queue and
 * the thread map, once; the bridge's own notes and internal notes stay on
 * the forge; a failing forge moves no cursor; a review thread resolved on
 * the forge after its mail is a reply in it, once; the required reviews
 * all given, and taken back, are a reply to the cover letter, once per
 * change.  A finished pipeline's result (forgemail_pipelines()) is one
 * mail under the cover letter, once, across a restart too.
 */
#include "cmocka_all.h"
#include "core/config.h"
#include "core/msgid.h"
#include "fakeforge.h"
#include "outbound/forgemail.h"
#include "storebed.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* A review thread by bob on drivers/x.c:42 of v1. */
static struct forge_note *thread(struct bed *b, int64_t id, const char *body)
{
	struct forge_note *n = said(b, id, "bob", body);

	b->disc[b->ff.nr_discussions - 1].individual_note = 0;
	n->type = (char *)"DiffNote";
	n->author.name = (char *)"Bob Reviewer";
	n->resolvable = 1;
	n->has_position = 1;
	n->position.head_sha = (char *)HEAD;
	n->position.base_sha = (char *)BASE;
	n->position.start_sha = (char *)BASE;
	n->position.new_path = (char *)"drivers/x.c";
	n->position.new_line = 42;
	return n;
}

static void resolve(struct forge_note *n, const char *at)
{
	n->resolved = 1;
	n->resolved_by.id = 5;
	n->resolved_by.username = (char *)"alice";
	n->resolved_by.name = (char *)"Alice Developer";
	n->resolved_at = (char *)at;
}

/* The queued mail of forge event ev for note id, or NULL. */
static char *queued_text(struct bed *b, const char *ev, int64_t id)
{
	struct buf mid = BUF_INIT(PB_MSGID_MAX);
	struct store_outmail om;
	char *text = NULL;

	assert_int_equal(msgid_format_forge(&mid, ev, PROJECT, 7, (uint64_t)id,
					    "example.org"),
			 0);
	store_outmail_init(&om);
	if (!store_outmail_get(&om, b->st, mid.data))
		text = strndup(om.message, om.message_len);
	store_outmail_release(&om);
	buf_release(&mid);
	return text;
}

static void resolved_thread_mailed_once(void **state)
{
	struct bed *b = *state;
	struct forge_note *n = thread(b, 801, "Why not a lock here?");
	size_t queued = 0;
	char *text, *note;

	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1);
	note = queued_text(b, "note", 801);
	assert_non_null(note);

	/* Resolved on the forge: no new note, yet read and mailed. */
	resolve(n, "2099-01-01T00:00:00.000Z");
	queued = 0;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1);
	text = queued_text(b, "resolved", 801);
	assert_non_null(text);
	assert_non_null(strstr(text, "This thread (drivers/x.c:42) was "
				     "resolved by Alice Developer on the "
				     "forge."));
	assert_non_null(strstr(text, "From: Alice Developer via"));
	/* In the thread: a reply to the comment's mail. */
	assert_non_null(strstr(text, "In-Reply-To: <pb.f.note.801."));
	free(text);
	free(note);

	queued = 0;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0);
}

static void resolved_before_its_mail_not_mailed(void **state)
{
	struct bed *b = *state;
	size_t queued = 0;
	char *text;

	resolve(thread(b, 811, "Typo."), "2020-01-01T00:00:00.000Z");
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1); /* the comment only */
	text = queued_text(b, "resolved", 811);
	assert_null(text);
}

static void resolved_off_or_internal_not_mailed(void **state)
{
	struct bed *b = *state;
	struct forge_note *n = thread(b, 821, "Members only.");
	size_t queued = 0;

	n->internal = 1;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0);
	resolve(n, "2099-01-01T00:00:00.000Z");
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0);
	assert_null(queued_text(b, "resolved", 821));
}

static const char REVIEW_OWNERS[] = "users:\n"
				    "  - &mary\n"
				    "    name: Mary Maintainer\n"
				    "    email: mary@kernel.example\n"
				    "    gluser: mary\n"
				    "subsystems:\n"
				    "  - subsystem: Networking\n"
				    "    labels:\n"
				    "      name: net\n"
				    "    requiredApproval: true\n"
				    "    maintainers:\n"
				    "      - *mary\n"
				    "    paths:\n"
				    "      includes:\n"
				    "        - src/\n";

static void reviews_in_and_taken_back(void **state)
{
	struct bed *b = *state;
	struct forge_user mary;
	struct strlist errs = STRLIST_INIT;
	struct store_mail pm;
	struct config *cfg;
	struct forgemail *fm;
	char path[600], conf[2048];
	size_t queued = 0;
	char *text;
	FILE *f;

	snprintf(path, sizeof(path), "%s/owners-reviews.yaml", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(REVIEW_OWNERS, f);
	fclose(f);
	snprintf(conf, sizeof(conf),
		 "[bridge]\naddress = bridge@example.org\n"
		 "domain = example.org\nlist_address = list@example.org\n"
		 "[forge]\nurl = https://gitlab.example.org\n"
		 "token_file = /etc/patchbridge/token\n"
		 "[inbound]\nowners_file = %s\nnak_label = nak\n"
		 "[project \"" PROJECT "\"]\n",
		 path);
	if (config_load_mem(&cfg, &errs, "t.conf", conf, strlen(conf)))
		fail_msg("config: %s", errs.nr ? errs.items[0] : err_msg());
	strlist_release(&errs);
	assert_int_equal(forgemail_new(&fm, cfg, b->st, &b->ff.base), 0);
	/* v1's patch touches src/x.c, which net owns. */
	store_mail_init(&pm);
	pm.message_id = "patch.1@example.org";
	pm.project = PROJECT;
	pm.iid = 7;
	pm.revision = 1;
	pm.patch = 1;
	pm.total = 1;
	pm.kind = STORE_MAIL_PATCH;
	pm.commit_sha = HEAD;
	pm.diff = "diff --git a/src/x.c b/src/x.c\n--- a/src/x.c\n"
		  "+++ b/src/x.c\n@@ -1 +1 @@\n-a\n+b\n";
	pm.diff_len = strlen(pm.diff);
	assert_int_equal(store_mail_put(b->st, &pm), 0);

	/* Nobody approved: nothing to say. */
	assert_int_equal(forgemail_mr(fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0);

	memset(&mary, 0, sizeof(mary));
	mary.id = 9;
	mary.username = (char *)"mary";
	mary.name = (char *)"Mary M.";
	b->ff.approved_by = &mary;
	b->ff.nr_approved_by = 1;
	assert_int_equal(forgemail_mr(fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1);
	text = queued_text(b, "reviews", 1);
	assert_non_null(text);
	assert_non_null(strstr(text, "All required reviews are in: net "
				     "(Mary Maintainer).\n"));
	assert_non_null(strstr(text, "In-Reply-To: <" COVER ">"));
	free(text);
	queued = 0;
	assert_int_equal(forgemail_mr(fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0);

	/* A NAK takes it back, once. */
	strlist_push(&b->ff.labels, "nak");
	assert_int_equal(forgemail_mr(fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1);
	text = queued_text(b, "reviews", 2);
	assert_non_null(text);
	assert_non_null(strstr(text, "The required reviews are no longer all "
				     "in: a NAK blocks the merge request.\n"));
	free(text);
	queued = 0;
	assert_int_equal(forgemail_mr(fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0);

	/* The NAK gone, all in again; the approval withdrawn, out again. */
	strlist_release(&b->ff.labels);
	assert_int_equal(forgemail_mr(fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1);
	b->ff.nr_approved_by = 0;
	assert_int_equal(forgemail_mr(fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 2);
	text = queued_text(b, "reviews", 4);
	assert_non_null(text);
	assert_non_null(strstr(text, "The required reviews are no longer all "
				     "in: waiting for net.\n"));
	free(text);
	forgemail_free(fm);
	config_free(cfg);
	unlink(path);
}

/* --- pipelines ------------------------------------------------------------ */

static const struct forge_job ci_jobs[] = {
	{ 801, (char *)"build", (char *)"build", (char *)"success",
	  (char *)"https://gitlab.example.org/group/project/-/jobs/801", 0 },
	{ 802, (char *)"unit-tests", (char *)"test", (char *)"failed",
	  (char *)"https://gitlab.example.org/group/project/-/jobs/802", 0 },
	{ 803, (char *)"lint", (char *)"test", (char *)"failed",
	  (char *)"https://gitlab.example.org/group/project/-/jobs/803", 1 },
};

/* A runner's log: colours, a progress line written over, GitLab's
 * section markers, a bidirectional override; 30 lines of output. */
static char ci_log[4096];

static void ci_log_make(void)
{
	size_t n = 0;
	int i;

	n += (size_t)snprintf(ci_log + n, sizeof(ci_log) - n,
			      "\x1b[0KRunning with gitlab-runner 17.0\n"
			      "section_start:1700000000:step_script\r"
			      "\x1b[0K\x1b[0K\x1b[36;1mExecuting step\x1b[0;m\n"
			      "Downloading 10%%\rDownloading 100%%\n");
	for (i = 0; i < 30; i++)
		n += (size_t)snprintf(ci_log + n, sizeof(ci_log) - n,
				      "\x1b[31mline %d\x1b[0m\xe2\x80\xae\n",
				      i);
	snprintf(ci_log + n, sizeof(ci_log) - n,
		 "\x1b]8;;http://evil.example/\x07"
		 "FAIL: test_parse\x1b]8;;\x07"
		 "\r\n\n");
}

static void ci_mid(struct buf *mid, const char *event, uint64_t id)
{
	buf_reset(mid);
	assert_int_equal(msgid_format_forge(mid, event, PROJECT, 7, id,
					    "example.org"),
			 0);
}

static void ci_pipeline(struct forge_pipeline *p, int64_t id, const char *sha,
			const char *status)
{
	memset(p, 0, sizeof(*p));
	p->id = id;
	p->sha = (char *)sha;
	p->ref = (char *)"refs/merge-requests/7/head";
	p->status = (char *)status;
	p->web_url = (char *)"https://gitlab.example.org/group/project/-/"
			     "pipelines/0";
	p->updated_at = (char *)"2026-12-01T11:00:00.000Z";
}

static void pipeline_failed_then_passed(void **state)
{
	struct bed *b = *state;
	struct forge_pipeline pl[2];
	struct buf mid = BUF_INIT(PB_MSGID_MAX);
	struct store_outmail om;
	struct store_mail m;
	const char *t;
	size_t queued = 0;
	int i;

	ci_log_make();
	ci_pipeline(&pl[0], 12, HEAD, "success");
	ci_pipeline(&pl[1], 11, HEAD, "failed");
	b->ff.pipelines = pl;
	b->ff.nr_pipelines = 2;
	b->ff.jobs = ci_jobs;
	b->ff.nr_jobs = 3;
	b->ff.trace = ci_log;
	assert_int_equal(forgemail_pipelines(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 2);
	/* The log of the job that failed the pipeline, not lint's. */
	assert_int_equal(fakeforge_count(&b->ff, FAKE_LIST_JOBS), 1);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_JOB_TRACE), 1);
	assert_int_equal(fakeforge_call(&b->ff, FAKE_JOB_TRACE, 0)->iid, 802);

	ci_mid(&mid, "cifailed", 11);
	store_mail_init(&m);
	assert_int_equal(store_mail_get(&m, b->st, mid.data), 0);
	assert_int_equal(m.revision, 1);
	assert_int_equal(m.patch, 0);
	store_mail_release(&m);
	store_outmail_init(&om);
	assert_int_equal(store_outmail_get(&om, b->st, mid.data), 0);
	t = om.message;
	assert_non_null(strstr(t, "\nIn-Reply-To: <" COVER ">\n"));
	assert_int_equal(strncmp(t, "From: CI via ", 13), 0);
	if (getenv("PB_TEST_SHOW"))
		fputs(t, stderr);
	assert_non_null(strstr(t, "\n\nPipeline #11 for v1 (111111111111) "
				  "failed.\nhttps://gitlab.example.org/"));
	assert_non_null(strstr(
		t, "\nFailed jobs:\n"
		   "  unit-tests (stage test): https://gitlab.example.org/"
		   "group/project/-/jobs/802\n"
		   "  lint (stage test, allowed to fail): https://"
		   "gitlab.example.org/group/project/-/jobs/803\n"
		   "\nThe last lines of the log of unit-tests:\n\n"));
	assert_null(strstr(t, "build (stage"));
	/* The last 20 lines, cleaned: no escape, no override, no link. */
	assert_null(strstr(t, "  | line 10\n"));
	for (i = 11; i < 30; i++) {
		char want[32];

		snprintf(want, sizeof(want), "  | line %d\n", i);
		assert_non_null(strstr(t, want));
	}
	assert_non_null(strstr(t, "  | line 29\n  | FAIL: test_parse\n"));
	assert_null(strchr(t, '\x1b'));
	assert_null(strstr(t, "\xe2\x80\xae"));
	assert_null(strstr(t, "evil.example"));
	store_outmail_release(&om);

	ci_mid(&mid, "cipassed", 12);
	store_outmail_init(&om);
	assert_int_equal(store_outmail_get(&om, b->st, mid.data), 0);
	assert_non_null(strstr(om.message,
			       "\n\nPipeline #12 for v1 (111111111111) "
			       "passed.\n"));
	assert_null(strstr(om.message, "Failed jobs"));
	store_outmail_release(&om);

	/* Read again, and after a restart: nothing mailed, nothing more
	 * asked of the forge than its pipelines. */
	fakeforge_clear_calls(&b->ff);
	queued = 0;
	assert_int_equal(forgemail_pipelines(b->fm, PROJECT, 7, &queued), 0);
	forgemail_free(b->fm);
	assert_int_equal(forgemail_new(&b->fm, b->cfg, b->st, &b->ff.base), 0);
	assert_int_equal(forgemail_pipelines(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_LIST_PIPELINES), 2);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_GET_MR), 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_LIST_JOBS), 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_JOB_TRACE), 0);
	buf_release(&mid);
}

static void pipeline_mailed_when_finished(void **state)
{
	struct bed *b = *state;
	struct forge_pipeline pl[2];
	size_t queued = 0;

	/* Running, and one on a head the list never saw: nothing. */
	ci_pipeline(&pl[0], 21, HEAD, "running");
	ci_pipeline(&pl[1], 20, BASE, "success");
	b->ff.pipelines = pl;
	b->ff.nr_pipelines = 2;
	assert_int_equal(forgemail_pipelines(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0);
	/* Finished: mailed once. */
	pl[0].status = (char *)"success";
	assert_int_equal(forgemail_pipelines(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1);
	/* Retried and failed: a second result, mailed too. */
	pl[0].status = (char *)"failed";
	assert_int_equal(forgemail_pipelines(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 2);
	/* A pipeline canceled or skipped has no result to mail. */
	pl[0].id = 22;
	pl[0].status = (char *)"canceled";
	assert_int_equal(forgemail_pipelines(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 2);
}

static void pipeline_log_unreadable(void **state)
{
	struct bed *b = *state;
	struct forge_pipeline pl[1];
	struct buf mid = BUF_INIT(PB_MSGID_MAX);
	struct store_outmail om;
	size_t queued = 0;

	ci_pipeline(&pl[0], 31, HEAD, "failed");
	b->ff.pipelines = pl;
	b->ff.nr_pipelines = 1;
	b->ff.jobs = ci_jobs;
	b->ff.nr_jobs = 3;
	b->ff.trace = "x";
	/* The forge failing: nothing mailed, tried again at the next
	 * reading. */
	fakeforge_script(&b->ff, FAKE_JOB_TRACE, FAKE_5XX, 0,
			 "502 Bad Gateway");
	assert_true(err_is_temporary(
		forgemail_pipelines(b->fm, PROJECT, 7, &queued)));
	assert_int_equal(queued, 0);
	/* A log the forge does not give: the mail goes without it. */
	fakeforge_script(&b->ff, FAKE_JOB_TRACE, FAKE_FAIL, PB_ENOTFOUND,
			 "404 Not found");
	assert_int_equal(forgemail_pipelines(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1);
	ci_mid(&mid, "cifailed", 31);
	store_outmail_init(&om);
	assert_int_equal(store_outmail_get(&om, b->st, mid.data), 0);
	assert_non_null(strstr(om.message, "\n(The job's log could not be "
					   "read; see its page.)\n"));
	store_outmail_release(&om);
	buf_release(&mid);
}

static void pipelines_off(void **state)
{
	struct bed *b = *state;
	static const char conf[] = CONF "mail_pipelines = no\n";
	struct strlist errs = STRLIST_INIT;
	struct forge_pipeline pl[1];
	struct config *cfg;
	struct forgemail *fm;
	size_t queued = 0;

	assert_int_equal(
		config_load_mem(&cfg, &errs, "t.conf", conf, strlen(conf)), 0);
	strlist_release(&errs);
	assert_int_equal(forgemail_new(&fm, cfg, b->st, &b->ff.base), 0);
	ci_pipeline(&pl[0], 41, HEAD, "success");
	b->ff.pipelines = pl;
	b->ff.nr_pipelines = 1;
	assert_int_equal(forgemail_pipelines(fm, PROJECT, 7, &queued), 0);
	assert_int_equal(forgemail_poll_pipelines(fm, &queued), 0);
	assert_int_equal(queued, 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_LIST_PIPELINES), 0);
	forgemail_free(fm);
	config_free(cfg);
	/* On (the default), the poll finds it. */
	assert_int_equal(forgemail_poll_pipelines(b->fm, &queued), 0);
	assert_int_equal(queued, 1);
}

/* --- provenance of approvals ---------------------------------------------- */

/*
 * An approval given on the forge is mailed saying so; the applied mail
 * names each approval the merged MR has and where it came from: Alice's
 * from her trailer on the list, as apply.c recorded it (its provenance
 * beside the list-approval cursor), Bob's from the forge.
 */
static void approvals_provenance(void **state)
{
	struct bed *b = *state;
	struct forge_user by[2];
	struct forge_note *n;
	size_t queued = 0;
	char *text;

	n = said(b, 901, "bob", "approved this merge request");
	n->system = 1;
	n->author.name = (char *)"Bob Maintainer";
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1);
	text = queued_text(b, "ack", 901);
	assert_non_null(text);
	assert_non_null(strstr(text, "Bob Maintainer approved this merge "
				     "request on the forge.\nGiven there by "
				     "the user signed in to it, not by email"));
	free(text);

	assert_int_equal(
		store_cursor_set(b->st, "list-approval-via:" PROJECT "!7:alice",
				 "Acked-by: Alice Developer <alice@example.com> "
				 "(DKIM verified)"),
		0);
	/* Carol's approval from the list, withdrawn on the forge: its
	 * provenance goes with it. */
	assert_int_equal(
		store_cursor_set(b->st, "list-approval-via:" PROJECT "!7:carol",
				 "Acked-by: Carol <carol@example.com> "
				 "(DKIM verified)"),
		0);
	n = said(b, 902, "carol", "unapproved this merge request");
	n->system = 1;
	queued = 0;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	{
		struct buf v = BUF_INIT(1024);

		assert_int_equal(store_cursor_get(&v, b->st,
						  "list-approval-via:" PROJECT
						  "!7:carol"),
				 0);
		assert_int_equal(v.len, 0);
		buf_release(&v);
	}

	memset(by, 0, sizeof(by));
	by[0].id = 5;
	by[0].username = (char *)"alice";
	by[0].name = (char *)"Alice Developer";
	by[1].id = 6;
	by[1].username = (char *)"bob";
	by[1].name = (char *)"Bob\nMaintainer";
	b->ff.approved_by = by;
	b->ff.nr_approved_by = 2;
	b->ff.mr_state = "merged";
	queued = 0;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 1);
	text = queued_text(b, "merged", 0);
	assert_non_null(text);
	assert_non_null(strstr(text, "This series was applied to"));
	assert_non_null(strstr(text, "\nApprovals:\n"
				     "- Alice Developer: by email, Acked-by: "
				     "Alice Developer <alice@example.com> "
				     "(DKIM verified)\n"
				     "- Bob Maintainer: on the forge\n"));
	free(text);
}

/* An approval the list gave, withdrawn on the forge and given again
 * there: the second is the forge's, and is mailed. */
static void approval_again_on_forge_mailed(void **state)
{
	struct bed *b = *state;
	struct forge_note *n;
	size_t queued = 0;
	char *text;

	assert_int_equal(
		store_cursor_set(b->st, "list-approval:" PROJECT "!7:carol",
				 "0123456789abcdef0123456789abcdef01234567"),
		0);
	n = said(b, 903, "carol", "approved this merge request");
	n->system = 1;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	assert_int_equal(queued, 0); /* the list's: the list saw the ack */
	n = said(b, 904, "carol", "unapproved this merge request");
	n->system = 1;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	n = said(b, 905, "carol", "approved this merge request");
	n->system = 1;
	n->author.name = (char *)"Carol";
	queued = 0;
	assert_int_equal(forgemail_mr(b->fm, PROJECT, 7, &queued), 0);
	text = queued_text(b, "ack", 905);
	assert_non_null(text);
	assert_non_null(strstr(text, "approved this merge request on the "
				     "forge"));
	free(text);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(comment_mailed_once),
		T(own_and_internal_notes_kept),
		T(forge_5xx_mails_nothing_yet),
		T(resolved_thread_mailed_once),
		T(resolved_before_its_mail_not_mailed),
		T(resolved_off_or_internal_not_mailed),
		T(reviews_in_and_taken_back),
		T(pipeline_failed_then_passed),
		T(pipeline_mailed_when_finished),
		T(pipeline_log_unreadable),
		T(pipelines_off),
		T(approvals_provenance),
		T(approval_again_on_forge_mailed),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
