/*
 * outbound_mr() against the recording fake forge (fakeforge.h) and a
 * store on SQLite: what it decides before any git fetch or mail - a
 * head mailed before is not mailed again, a pure rebase (same patch-id
 * on a new base) is not mailed with mail_rebases = no, a merged MR is
 * left alone - and that nothing is queued for the MTA then.  Rendering
 * a new revision needs a mirror: the simulator tier covers it.  What
 * happens after (a revision queued for the MTA, as outbound_mr() leaves
 * it in the store) is here too, with a sendmail script standing in for
 * the MTA and a list archive of the test's (forge/httpd.h): the revision
 * reaches the list exactly once however often it is looked at again - a
 * second poll, a restart on the same store, a temporary failure, a
 * response lost after the mail was handed over.
 */
#include "cmocka_all.h"
#include "core/config.h"
#include "core/metrics.h"
#include "fakeforge.h"
#include "forge/httpd.h"
#include "metricval.h"
#include "mail/mail.h"
#include "outbound/emailnotice.h"
#include "outbound/outbound.h"
#include "outbound/submit.h"
#include "util/fileio.h"
#include "storebed.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/strlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
	/* The MTA tests: the store's target (reopened on a restart), the
	 * sendmail script and what it was given, the list archive. */
	char *target;
	struct submit *submit;
	struct httpd *archive;
	char mta[600];
};

static char dir[512];
static unsigned seq;

static int group_setup(void **state)
{
	(void)state;
	/* GMime, once: the series posted to the list are parsed */
	if (mail_init())
		return -1;
	return storebed_tmpdir(dir, sizeof(dir), "outbound");
}

static int group_teardown(void **state)
{
	(void)state;
	mail_shutdown();
	return storebed_tmpdir_remove(dir);
}

/* Revision n of MR 7 started: head on base, one patch. */
static void start_revision(struct bed *b, int n, const char *head,
			   const char *base, const char *patch_id,
			   const char *cover)
{
	struct store_revision rev;
	int got = 0;

	store_revision_init(&rev);
	rev.project = PROJECT;
	rev.iid = 7;
	rev.head_sha = head;
	rev.base_sha = rev.start_sha = base;
	rev.patch_id = patch_id;
	rev.version_id = n;
	rev.patches = 1;
	rev.cover_msgid = cover;
	assert_int_equal(store_revision_start(&got, b->st, &rev), 0);
	assert_int_equal(got, n);
}

/* Mail patch (0: the cover letter) of revision n in the thread map. */
static void put_mail(struct bed *b, const char *id, int n, int patch,
		     const char *head, const char *base,
		     enum store_mail_state state)
{
	struct store_mail m;

	store_mail_init(&m);
	m.message_id = id;
	m.project = PROJECT;
	m.iid = 7;
	m.revision = n;
	m.patch = patch;
	m.total = 1;
	m.kind = patch ? STORE_MAIL_PATCH : STORE_MAIL_COVER;
	m.commit_sha = patch ? head : NULL;
	m.head_sha = head;
	m.base_sha = m.start_sha = base;
	m.state = state;
	assert_int_equal(store_mail_put(b->st, &m), 0);
}

/* Revision 1 of MR 7 mailed: HEAD on BASE, its cover letter. */
static void mailed(struct bed *b)
{
	start_revision(b, 1, HEAD, BASE, PATCH_ID, COVER);
	put_mail(b, COVER, 1, 0, HEAD, BASE, STORE_MAIL_SENT);
	assert_int_equal(store_revision_mark_sent(b->st, PROJECT, 7, 1), 0);
}

/* The outbound object on b's config, store and fake forge (and MTA). */
static void outbound_open(struct bed *b)
{
	struct outbound_opts o = { 0 };

	o.cfg = b->cfg;
	o.store = b->st;
	o.forge = &b->ff.base;
	o.submit = b->submit;
	if (outbound_new(&b->ob, &o))
		fail_msg("outbound_new: %s", err_msg());
}

/* A bed on a fresh store; inbound: more [inbound] lines; project: more
 * lines of the project's section. */
static struct bed *bed_new_with(const char *inbound, const char *project)
{
	struct bed *b = calloc(1, sizeof(*b));
	struct strlist errs = STRLIST_INIT;
	struct buf conf = BUF_INIT(1 << 16);
	char name[32];

	assert_non_null(b);
	snprintf(name, sizeof(name), "outbound%u", seq++);
	b->target = strdup(storebed_fresh(name));
	assert_non_null(b->target);
	if (storebed_open(&b->st, b->target, STORE_RW, 5000))
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
				  "%s"
				  "[state]\n"
				  "path = %s/%s.state\n"
				  "[project \"" PROJECT "\"]\n"
				  "mail_rebases = no\n"
				  "%s",
				  dir, inbound, dir, name, project),
			 0);
	if (config_load_mem(&b->cfg, &errs, "t.conf", conf.data, conf.len))
		fail_msg("config: %s", errs.nr ? errs.items[0] : err_msg());
	strlist_release(&errs);
	buf_release(&conf);
	fakeforge_init(&b->ff);
	return b;
}

static struct bed *bed_new(const char *inbound)
{
	return bed_new_with(inbound, "");
}

static int setup(void **state)
{
	struct bed *b = bed_new("");

	outbound_open(b);
	mailed(b);
	*state = b;
	return 0;
}

static int teardown(void **state)
{
	struct bed *b = *state;

	outbound_free(b->ob);
	submit_free(b->submit);
	httpd_free(b->archive);
	fakeforge_release(&b->ff);
	config_free(b->cfg);
	store_free(b->st);
	free(b->target);
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

/*
 * [project] wait_for_pipeline: a new head waits for its pipeline to
 * pass, and for at most pipeline_wait_max (the time it was first seen is
 * in the store: moved back here rather than waited for).
 */
static int setup_ci(void **state)
{
	struct bed *b = bed_new_with("", "wait_for_pipeline = yes\n"
					 "pipeline_wait_max = 10m\n");

	outbound_open(b);
	mailed(b);
	b->ff.version_head = NEW_HEAD;
	b->ff.version_base = NEW_BASE;
	b->ff.version_patch_id = "6666666666666666666666666666666666666666";
	*state = b;
	return 0;
}

static void held_for_its_pipeline(struct bed *b, const char *status)
{
	assert_int_equal(run(b), 0);
	assert_int_equal(b->rep.outcome, OUTBOUND_WAITING);
	assert_int_equal(b->rep.revision, 0);
	assert_non_null(strstr(b->rep.reason, "waiting for the pipeline of "
					      "444444444444"));
	assert_non_null(strstr(b->rep.reason, status));
	assert_true(b->rep.next_attempt > 0);
	assert_int_equal(queued(b), 0);
	assert_int_equal(latest(b), 1);
}

static void waits_for_pipeline(void **state)
{
	struct bed *b = *state;
	struct forge_pipeline pl[2];

	/* No pipeline yet; one on another head; running; failed. */
	held_for_its_pipeline(b, "none yet");
	memset(pl, 0, sizeof(pl));
	pl[0].id = 51;
	pl[0].sha = (char *)HEAD;
	pl[0].status = (char *)"success";
	b->ff.pipelines = pl;
	b->ff.nr_pipelines = 1;
	held_for_its_pipeline(b, "none yet");
	pl[1] = pl[0];
	pl[0].id = 52;
	pl[0].sha = (char *)NEW_HEAD;
	pl[0].status = (char *)"running";
	b->ff.nr_pipelines = 2;
	held_for_its_pipeline(b, "running");
	pl[0].status = (char *)"failed";
	held_for_its_pipeline(b, "failed");
	/* Passed: on to rendering (which needs a mirror this bed has not:
	 * an error past the wait, not a wait). */
	pl[0].status = (char *)"success";
	run(b);
	assert_null(strstr(b->rep.reason, "waiting for the pipeline"));
}

static void mailed_after_the_longest_wait(void **state)
{
	struct bed *b = *state;
	char name[STORE_CURSOR_NAME_MAX], when[32];

	held_for_its_pipeline(b, "none yet");
	/* Ten minutes and a second since it was first seen. */
	snprintf(name, sizeof(name), "ciwait:%s!7:%s", PROJECT, NEW_HEAD);
	snprintf(when, sizeof(when), "%lld", (long long)time(NULL) - 601);
	assert_int_equal(store_cursor_set(b->st, name, when), 0);
	run(b);
	assert_null(strstr(b->rep.reason, "waiting for the pipeline"));
	assert_int_equal(fakeforge_count(&b->ff, FAKE_LIST_PIPELINES), 2);
}

/*
 * A revision on its way to the list: revision 2 (NEW_HEAD on NEW_BASE)
 * queued for the MTA - its cover letter and its patch - as outbound_mr()
 * leaves it in one transaction before it hands the mails over, the fake
 * forge reporting that head.  The MTA is a sendmail script that appends
 * what it is given to MTA/sent, or, as MTA/mode says, fails for now
 * ("temp": EX_TEMPFAIL, nothing kept) or takes the mail and dies before
 * it answers ("lost": the outcome unknown).  The list archive answers
 * for the mails in MTA/sent (listarchive.h: GET BASE/ID/raw).
 */
#define V2_COVER "v2-0.1-7@bridge.example.org"
#define V2_PATCH "v2-1.1-7@bridge.example.org"
#define V2_PATCH_ID "7777777777777777777777777777777777777777"

static const char sendmail_script[] =
	"#!/bin/sh\n"
	"d=$(dirname \"$0\")\n"
	"mode=$(cat \"$d/mode\")\n"
	"if [ \"$mode\" = temp ]; then\n"
	"\tcat >/dev/null; echo 'try again later' >&2; exit 75\n"
	"fi\n"
	"cat >>\"$d/sent\"\n"
	"if [ \"$mode\" = lost ]; then kill -KILL $$; fi\n"
	"exit 0\n";

static void mta_file(char *out, size_t size, struct bed *b, const char *name)
{
	snprintf(out, size, "%s/%s", b->mta, name);
}

static void mta_mode(struct bed *b, const char *mode)
{
	char path[700];

	mta_file(path, sizeof(path), b, "mode");
	assert_int_equal(file_write_atomic(path, mode, strlen(mode), 0600), 0);
}

/* How many times the MTA was given the mail <id>. */
static int mta_count(struct bed *b, const char *id)
{
	struct buf text = BUF_INIT(1 << 20);
	char path[700], needle[128];
	const char *p;
	int n = 0;

	mta_file(path, sizeof(path), b, "sent");
	if (file_read(&text, path)) {
		buf_release(&text);
		return 0;
	}
	snprintf(needle, sizeof(needle), "Message-ID: <%s>\n", id);
	for (p = text.data; (p = strstr(p, needle)); p++)
		n++;
	buf_release(&text);
	return n;
}

/* The bed whose MTA the list archive answers for (one test at a time). */
static struct bed *archive_bed;

/* The list archive: BASE/ID/raw is 200 when the MTA was given <ID>. */
static int on_archive(struct httpd_req *req, enum httpd_call call,
		      const char *data, size_t len, void *arg)
{
	const char *url = httpd_url(req), *end, *id;
	char mid[128], body[256];

	(void)data;
	(void)len;
	(void)arg;
	if (call != HTTPD_HEAD)
		return 0;
	end = url + strlen(url);
	mid[0] = '\0';
	if (end - url > 4 && !strcmp(end - 4, "/raw")) {
		end -= 4;
		for (id = end; id > url && id[-1] != '/'; id--)
			;
		snprintf(mid, sizeof(mid), "%.*s", (int)(end - id), id);
	}
	/* The ids here need no escaping (core/msgid.h). */
	if (!mid[0] || !mta_count(archive_bed, mid))
		return httpd_answer(req, HTTPD_NOT_FOUND, "text/plain", "", 0,
				    NULL, HTTPD_STATIC | HTTPD_CLOSE);
	snprintf(body, sizeof(body),
		 "From mboxrd@z Thu Jan  1 00:00:00 1970\n"
		 "Message-ID: <%s>\n\nas mailed\n",
		 mid);
	return httpd_answer(req, HTTPD_OK, "text/plain", body, strlen(body),
			    NULL, HTTPD_CLOSE);
}

static void queue_mail(struct bed *b, const char *id, int patch)
{
	struct store_outmail om;
	char text[512];

	put_mail(b, id, 2, patch, NEW_HEAD, NEW_BASE, STORE_MAIL_PENDING);
	snprintf(text, sizeof(text),
		 "From: patchbridge@bridge.example.org\n"
		 "To: list@example.org\n"
		 "Message-ID: <%s>\n"
		 "Subject: [PATCH v2 %d/1] change\n\n"
		 "the mail as rendered\n",
		 id, patch);
	store_outmail_init(&om);
	om.message_id = id;
	om.envelope_from = "patchbridge@bridge.example.org";
	om.recipients = "list@example.org\n";
	om.message = text;
	om.message_len = strlen(text);
	assert_int_equal(store_outmail_put(b->st, &om), 0);
}

static void queue_revision2(struct bed *b)
{
	start_revision(b, 2, NEW_HEAD, NEW_BASE, V2_PATCH_ID, V2_COVER);
	queue_mail(b, V2_COVER, 0);
	queue_mail(b, V2_PATCH, 1);
	b->ff.version_head = NEW_HEAD;
	b->ff.version_base = NEW_BASE;
	b->ff.version_patch_id = V2_PATCH_ID;
}

/* A bed with the sendmail script, the archive and revision 2 queued. */
static int setup_mta(void **state)
{
	struct httpd_opts ho = { .listen = "127.0.0.1:0",
				 .name = "list archive",
				 .max_connections = 8,
				 .threads = 2,
				 .timeout_s = 30,
				 .on_request = on_archive };
	struct submit_opts so = { .url = "sendmail" };
	struct bed *b;
	char inbound[128], path[700];
	struct httpd *archive;

	/* The archive first: its port goes in the configuration. */
	if (httpd_new(&archive, &ho))
		fail_msg("archive: %s", err_msg());
	snprintf(inbound, sizeof(inbound),
		 "archive_url = http://127.0.0.1:%u/list\n",
		 httpd_port(archive));
	b = bed_new(inbound);
	b->archive = archive;
	archive_bed = b;
	snprintf(b->mta, sizeof(b->mta), "%s/mta%u", dir, seq);
	assert_int_equal(mkdir(b->mta, 0700), 0);
	mta_mode(b, "ok");
	mta_file(path, sizeof(path), b, "sendmail");
	assert_int_equal(file_write_atomic(path, sendmail_script,
					   strlen(sendmail_script), 0700),
			 0);
	so.sendmail_path = path;
	if (submit_new(&b->submit, &so))
		fail_msg("submit_new: %s", err_msg());
	metrics_reset();
	outbound_open(b);
	mailed(b);
	queue_revision2(b);
	*state = b;
	return 0;
}

#define MAILS_SENT "patchbridge_mails_sent_total{project=\"" PROJECT "\"}"
#define SERIES_SENT "patchbridge_series_sent_total{project=\"" PROJECT "\"}"
#define SMTP_FAILED(r) "patchbridge_smtp_failures_total{result=\"" r "\"}"

/* The daemon stops and starts again on the same store. */
static void restart(struct bed *b)
{
	outbound_free(b->ob);
	store_free(b->st);
	if (storebed_open(&b->st, b->target, STORE_RW, 5000))
		fail_msg("store: %s", err_msg());
	outbound_open(b);
}

static int run_flags(struct bed *b, unsigned flags)
{
	memset(&b->rep, 0, sizeof(b->rep));
	return outbound_mr(&b->rep, b->ob, PROJECT, 7, flags);
}

/*
 * Each mail of revision 2 given to the MTA once and counted once (the
 * registry outlives a restart here); revision 2 recorded sent, nothing
 * left in the queue.
 */
static void each_mailed_once(struct bed *b)
{
	struct store_revision r;

	assert_int_equal(mta_count(b, V2_COVER), 1);
	assert_int_equal(mta_count(b, V2_PATCH), 1);
	assert_int_equal(metric(MAILS_SENT), 2);
	assert_int_equal(metric(SERIES_SENT), 1);
	store_revision_init(&r);
	assert_int_equal(store_revision_latest(&r, b->st, PROJECT, 7), 0);
	assert_int_equal(r.revision, 2);
	assert_int_equal(r.state, STORE_REVISION_SENT);
	store_revision_release(&r);
	assert_int_equal(queued(b), 0);
}

/* Looked at again and again - polls, a restart, the resume at start-up:
 * the MTA is given each mail of revision 2 once. */
static void looked_at_again(struct bed *b)
{
	int sent = -1;
	int64_t next = -1;

	assert_int_equal(run(b), 0);
	assert_int_equal(b->rep.outcome, OUTBOUND_ALREADY);
	assert_int_equal(b->rep.revision, 2);
	assert_int_equal(b->rep.sent, 0);
	restart(b);
	assert_int_equal(outbound_deliver_due(b->ob, &next, &sent), 0);
	assert_int_equal(sent, 0);
	assert_int_equal(next, 0);
	assert_int_equal(run_flags(b, OUTBOUND_FORCE), 0);
	assert_int_equal(b->rep.outcome, OUTBOUND_ALREADY);
	assert_int_equal(b->rep.sent, 0);
	each_mailed_once(b);
}

static void new_revision_mailed_once(void **state)
{
	struct bed *b = *state;

	assert_int_equal(run(b), 0);
	assert_int_equal(b->rep.revision, 2);
	assert_int_equal(b->rep.sent, 2);
	assert_int_equal(b->rep.deferred, 0);
	each_mailed_once(b);
	assert_true(metric(SMTP_FAILED("tempfail")) <= 0);
	looked_at_again(b);
}

/*
 * The first attempt fails as the MTA's mode says: nothing recorded sent,
 * the cover letter deferred and the patch it holds back.
 */
static void first_attempt_deferred(struct bed *b, const char *mode)
{
	mta_mode(b, mode);
	assert_int_equal(run(b), 0);
	assert_int_equal(b->rep.outcome, OUTBOUND_PENDING);
	assert_int_equal(b->rep.sent, 0);
	assert_int_equal(b->rep.deferred, 2);
	assert_int_equal(mta_count(b, V2_PATCH), 0);
	assert_true(metric(MAILS_SENT) <= 0);
	mta_mode(b, "ok");
}

/* The MTA failed for now: nothing was taken, so it all goes again, once. */
static void tempfail_mailed_once(void **state)
{
	struct bed *b = *state;

	first_attempt_deferred(b, "temp");
	assert_int_equal(mta_count(b, V2_COVER), 0);
	assert_int_equal(metric(SMTP_FAILED("tempfail")), 1);
	/* Not due yet: a poll leaves it waiting. */
	assert_int_equal(run(b), 0);
	assert_int_equal(b->rep.outcome, OUTBOUND_PENDING);
	assert_int_equal(mta_count(b, V2_COVER), 0);
	/* Retried (now, as an operator's send would). */
	assert_int_equal(run_flags(b, OUTBOUND_FORCE), 0);
	assert_int_equal(b->rep.sent, 2);
	looked_at_again(b);
}

/*
 * The MTA took the cover letter and the answer was lost (sendmail died
 * after reading it all; the same as a host that died before it recorded
 * the 250).  After a restart the list archive is asked: the cover letter
 * is there, so it is recorded sent and not given to the MTA again; the
 * patch it held back goes out once.
 */
static void lost_response_mailed_once(void **state)
{
	struct bed *b = *state;

	first_attempt_deferred(b, "lost");
	assert_int_equal(mta_count(b, V2_COVER), 1);
	assert_int_equal(metric(SMTP_FAILED("unknown")), 1);
	restart(b);
	assert_int_equal(run_flags(b, OUTBOUND_FORCE), 0);
	/* Both recorded sent now; the MTA was given the patch only. */
	assert_int_equal(b->rep.sent, 2);
	assert_int_equal(mta_count(b, V2_COVER), 1);
	assert_int_equal(mta_count(b, V2_PATCH), 1);
	looked_at_again(b);
}

/* ---- a series posted to the list that becomes no merge request ---- */

/* Mail k of a two-patch series by Ann (0: the cover letter). */
static char *series_mail(int k, const char *extra)
{
	struct buf b = BUF_INIT(1 << 16);

	buf_addf(&b,
		 "From: Ann Author <ann@example.org>\n"
		 "To: list@example.org\n"
		 "Date: Mon, 7 Dec 2026 03:00:0%d +0000\n"
		 "Message-ID: <%s@example.org>\n"
		 "%s",
		 k, k ? (k == 1 ? "p1" : "p2") : "c0", extra);
	if (!k) {
		buf_adds(&b, "Subject: [PATCH 0/2] topic: two files\n\n"
			     "Two files.\n\n"
			     "Ann Author (2):\n  topic: one\n  topic: two\n");
	} else {
		buf_addf(&b,
			 "Subject: [PATCH %d/2] topic: file %d\n"
			 "In-Reply-To: <c0@example.org>\n"
			 "References: <c0@example.org>\n\n"
			 "File %d.\n\n"
			 "Signed-off-by: Ann Author <ann@example.org>\n"
			 "---\n"
			 " f%d.txt | 1 +\n"
			 " 1 file changed, 1 insertion(+)\n\n"
			 "diff --git a/f%d.txt b/f%d.txt\n"
			 "new file mode 100644\n"
			 "index 0000000..d00491f\n"
			 "--- /dev/null\n"
			 "+++ b/f%d.txt\n"
			 "@@ -0,0 +1 @@\n"
			 "+%d\n"
			 "-- \n2.39.2\n",
			 k, k, k, k, k, k, k, k);
	}
	assert_int_equal(buf_error(&b), 0);
	return b.data;
}

static int submit_mail(struct bed *b, int k, const char *extra)
{
	char project[128];
	char *m = series_mail(k, extra);
	int rc = outbound_submission(b->ob, project, sizeof(project), m,
				     strlen(m));

	free(m);
	return rc;
}

/* The notices queued (outmail rows), each checked to go to Ann alone. */
static size_t notices_to_ann(struct bed *b)
{
	struct store_outmail_list l = { 0 };
	struct store_outmail m;
	size_t i, n;

	assert_int_equal(store_outmail_list(&l, b->st, NULL, 0, 0), 0);
	for (i = 0; i < l.nr; i++) {
		store_outmail_init(&m);
		assert_int_equal(
			store_outmail_get(&m, b->st, l.items[i].message_id), 0);
		assert_string_equal(m.recipients, "ann@example.org");
		assert_non_null(strstr(m.message, "In-Reply-To: "
						  "<c0@example.org>"));
		assert_non_null(strstr(m.message, "Auto-Submitted: "
						  "auto-replied"));
		assert_null(strstr(m.message, "list@example.org"));
		store_outmail_release(&m);
	}
	n = l.nr;
	store_outmail_list_release(&l);
	return n;
}

static struct bed *series_bed(const char *project_lines)
{
	struct bed *b = bed_new_with("", project_lines);

	outbound_open(b);
	metrics_reset();
	return b;
}

static void series_bed_free(struct bed *b)
{
	teardown((void **)&b);
}

#define NOTICES(d) "patchbridge_notices_total{decision=\"" d "\"}"

/* A patch that never comes: one reminder after the wait, which names it;
 * none before; none again. */
static void missing_patch_reminded_once(void **state)
{
	struct bed *b = series_bed("email_submissions = anyone\n"
				   "email_series_wait = 10m\n");
	struct buf missing = BUF_INIT(256);
	size_t told = 9;

	(void)state;
	assert_int_equal(submit_mail(b, 0, ""), 0);
	assert_int_equal(submit_mail(b, 1, ""), 0);
	assert_int_equal(emailnotice_remind(b->st, b->cfg, time(NULL), &told),
			 0);
	assert_int_equal(told, 0); /* not yet */
	assert_int_equal(
		emailnotice_remind(b->st, b->cfg, time(NULL) + 601, &told), 0);
	assert_int_equal(told, 1);
	assert_int_equal(
		emailnotice_remind(b->st, b->cfg, time(NULL) + 7200, &told), 0);
	assert_int_equal(told, 0); /* once */
	assert_int_equal(notices_to_ann(b), 1);
	assert_int_equal(metric(NOTICES("sent")), 1);
	assert_int_equal(emailnotice_missing(&missing, b->st, "c0@example.org"),
			 0);
	assert_string_equal(missing.data, "2/2");
	buf_release(&missing);
	series_bed_free(b);
}

/* Over a limit: refused with one notice for the whole series; the
 * journal's code PB_ELIMIT, then the series' other mails refused
 * silently. */
static void over_a_limit_told_once(void **state)
{
	struct bed *b = series_bed("email_submissions = anyone\n"
				   "email_max_patches = 1\n");

	(void)state;
	assert_int_equal(submit_mail(b, 0, ""), PB_ELIMIT);
	assert_non_null(strstr(err_msg(), "email_max_patches"));
	assert_int_equal(submit_mail(b, 1, ""), PB_EPERM);
	assert_int_equal(submit_mail(b, 2, ""), PB_EPERM);
	assert_int_equal(notices_to_ann(b), 1);
	assert_int_equal(metric(NOTICES("sent")), 1);
	series_bed_free(b);
}

/* An unverified sender under "verified": one notice for the series;
 * an auto-submitted one: none (RFC 3834); under "off": nothing. */
static void unverified_told_once_automatic_never(void **state)
{
	struct bed *b = series_bed("email_submissions = verified\n");

	(void)state;
	assert_int_equal(submit_mail(b, 0, ""), PB_EPERM);
	assert_non_null(strstr(err_msg(), "DKIM/DMARC"));
	assert_int_equal(submit_mail(b, 1, ""), PB_EPERM);
	assert_int_equal(notices_to_ann(b), 1);
	series_bed_free(b);

	b = series_bed("email_submissions = verified\n");
	assert_int_equal(submit_mail(b, 0, "Precedence: bulk\n"), PB_EPERM);
	assert_int_equal(notices_to_ann(b), 0);
	assert_int_equal(metric(NOTICES("list")), 1);
	series_bed_free(b);

	b = series_bed("email_submissions = off\n");
	assert_int_not_equal(submit_mail(b, 0, ""), 0);
	assert_int_equal(notices_to_ann(b), 0);
	assert_true(metric(NOTICES("sent")) <= 0);
	series_bed_free(b);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define T_CI(f) cmocka_unit_test_setup_teardown(f, setup_ci, teardown)
#define T_MTA(f) cmocka_unit_test_setup_teardown(f, setup_mta, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(mailed_head_is_not_mailed_again),
		T(pure_rebase_is_not_mailed),
		T(merged_mr_is_left_alone),
		T(version_without_base_is_none_yet),
		T_CI(waits_for_pipeline),
		T_CI(mailed_after_the_longest_wait),
		T_MTA(new_revision_mailed_once),
		T_MTA(tempfail_mailed_once),
		T_MTA(lost_response_mailed_once),
		cmocka_unit_test(missing_patch_reminded_once),
		cmocka_unit_test(over_a_limit_told_once),
		cmocka_unit_test(unverified_told_once_automatic_never),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
