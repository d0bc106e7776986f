/*
 * inbound_ingest_spool() and inbound_apply_due() end to end against the
 * recording fake forge (fakeforge.h), a store on SQLite and a real spool:
 * which replies approve (a verified ack in its own trailer block) and
 * which do not (quoted from the parent, a thread that names two MRs),
 * how a NAK labels, and how a row waits when the forge fails (5xx:
 * counted; an expired token: not counted; neither dead-lettered).  The
 * simulator tier runs the same stories through the GitLab client; here a
 * changed rule fails in seconds.
 */
#include "cmocka_all.h"
#include "core/config.h"
#include "core/metrics.h"
#include "fakeforge.h"
#include "metricval.h"
#include "inbound/inbound.h"
#include "mail/mail.h"
#include "outbound/noticemail.h"
#include "state/spool.h"
#include "storebed.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/strlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PROJECT "group/project"
#define HEAD "1111111111111111111111111111111111111111"
#define BASE "2222222222222222222222222222222222222222"
#define COVER7 "v1-0.1-7@bridge.example.org"
#define PATCH7 "v1-1.1-7@bridge.example.org"
#define COVER8 "v1-0.1-8@bridge.example.org"
#define PATCH8 "v1-1.1-8@bridge.example.org"
#define AUTHSERV "lists.example.test"
#define DKIM_PASS \
	AUTHSERV "; dkim=pass header.d=corp.example header.i=@corp.example"
#define BOB "Bob Maintainer <bob@corp.example>"
#define ACK "Acked-by: " BOB "\n"
#define NOW 1800000000

/* The patch as mailed: the diff replies are read against. */
#define PATCH_MAIL                                    \
	"From: Alice Developer <alice@example.com>\n" \
	"Subject: [PATCH v1 1/1] hello: flush\n"      \
	"Message-ID: <" PATCH7 ">\n"                  \
	"\n"                                          \
	"Flush before leaving.\n"                     \
	"---\n"                                       \
	" src/hello.c | 1 +\n"                        \
	" 1 file changed, 1 insertion(+)\n"           \
	"\n"                                          \
	"diff --git a/src/hello.c b/src/hello.c\n"    \
	"index 1234567..89abcde 100644\n"             \
	"--- a/src/hello.c\n"                         \
	"+++ b/src/hello.c\n"                         \
	"@@ -1,3 +1,4 @@\n"                           \
	" #include <stdio.h>\n"                       \
	" int main(void)\n"                           \
	" {\n"                                        \
	"+\tfflush(stdout);\n"                        \
	"-- \n"                                       \
	"2.43.0\n"

#define OWNERS                              \
	"users:\n"                          \
	"  - &bob\n"                        \
	"    name: Bob Maintainer\n"        \
	"    email: bob@corp.example\n"     \
	"    gluser: bob\n"                 \
	"  - &mallory\n"                    \
	"    name: Mallory\n"               \
	"    email: mallory@corp.example\n" \
	"    gluser: mallory\n"             \
	"subsystems:\n"                     \
	"  - subsystem: Greeting\n"         \
	"    labels:\n"                     \
	"      name: greet\n"               \
	"    status: Supported\n"           \
	"    maintainers:\n"                \
	"      - *bob\n"                    \
	"    paths:\n"                      \
	"      includes:\n"                 \
	"        - src/\n"

struct bed {
	struct fakeforge ff;
	struct store *st;
	struct config *cfg;
	struct spool *sp; /* the milter's side */
	struct inbound *ib;
	char dir[600];
	unsigned n; /* mails spooled */
	const char *envelope; /* MAIL FROM of the next replies; NULL: x@ */
};

static char top[512];
static unsigned seq;

static int group_setup(void **state)
{
	const char *base = getenv("PB_TEST_TMP");

	(void)state;
	if (mail_init())
		return -1;
	snprintf(top, sizeof(top), "%s/inbound.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(top))
		return -1;
	storebed_init("inbound", top);
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[1100];

	(void)state;
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s'; rm -rf '%s'", top,
		 top);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Revision 1 of MR iid mailed as the outbound side leaves it: the thread
 * map (cover letter, one patch with its diff) and the mail archive. */
static void mailed(struct bed *b, int64_t iid, const char *cover,
		   const char *patch)
{
	struct store_revision rev;
	struct store_mail m;
	struct store_archived a;
	int n = 0, i;

	store_revision_init(&rev);
	rev.project = PROJECT;
	rev.iid = iid;
	rev.base_sha = rev.start_sha = BASE;
	rev.head_sha = rev.patch_id = HEAD;
	rev.version_id = 100 + iid;
	rev.patches = 1;
	rev.cover_msgid = cover;
	assert_int_equal(store_revision_start(&n, b->st, &rev), 0);
	assert_int_equal(n, 1);
	for (i = 0; i <= 1; i++) {
		store_mail_init(&m);
		m.project = PROJECT;
		m.iid = iid;
		m.revision = 1;
		m.patch = i;
		m.total = 1;
		m.kind = i ? STORE_MAIL_PATCH : STORE_MAIL_COVER;
		m.base_sha = m.start_sha = BASE;
		m.head_sha = HEAD;
		m.version_id = rev.version_id;
		m.state = STORE_MAIL_SENT;
		m.message_id = i ? patch : cover;
		if (i) {
			m.commit_sha = HEAD;
			m.diff = PATCH_MAIL;
			m.diff_len = strlen(PATCH_MAIL);
		}
		assert_int_equal(store_mail_put(b->st, &m), 0);
		store_archived_init(&a);
		a.message_id = m.message_id;
		a.project = PROJECT;
		a.iid = iid;
		a.origin = STORE_ARCHIVE_BRIDGE;
		a.message = i ? PATCH_MAIL :
				"Subject: [PATCH 0/1] cover\n\nC.\n";
		a.message_len = strlen(a.message);
		assert_int_equal(store_archive_put(b->st, &a), 0);
	}
	assert_int_equal(store_revision_mark_sent(b->st, PROJECT, iid, 1), 0);
}

static int setup(void **state)
{
	struct bed *b = calloc(1, sizeof(*b));
	struct strlist errs = STRLIST_INIT;
	struct buf conf = BUF_INIT(1 << 16);
	char path[700], name[32];

	if (!b)
		return -1;
	snprintf(name, sizeof(name), "inbound%u", seq);
	snprintf(b->dir, sizeof(b->dir), "%s/t%u", top, seq++);
	assert_int_equal(mkdir(b->dir, 0700), 0);
	if (storebed_open(&b->st, storebed_fresh(name), STORE_RW, 5000))
		fail_msg("store: %s", err_msg());
	snprintf(path, sizeof(path), "%s/owners.yaml", b->dir);
	write_file(path, OWNERS);
	assert_int_equal(buf_addf(&conf,
				  "[bridge]\n"
				  "address = patchbridge@bridge.example.org\n"
				  "domain = bridge.example.org\n"
				  "list_address = list@example.org\n"
				  "[forge]\n"
				  "url = https://gitlab.example.org\n"
				  "token_file = %s/token\n"
				  "[milter]\n"
				  "trusted_authserv_id = " AUTHSERV "\n"
				  "[spool]\n"
				  "dir = %s/spool\n"
				  "[inbound]\n"
				  "approval_policy = owners\n"
				  "owners_file = %s\n"
				  "retry_base = 1s\n"
				  "retry_max = 2s\n"
				  "max_attempts = 3\n"
				  "bots = lint@corp.example, ci@corp.example\n"
				  "[project \"" PROJECT "\"]\n",
				  b->dir, b->dir, path),
			 0);
	if (config_load_mem(&b->cfg, &errs, "t.conf", conf.data, conf.len))
		fail_msg("config: %s", errs.nr ? errs.items[0] : err_msg());
	strlist_release(&errs);
	buf_release(&conf);
	snprintf(path, sizeof(path), "%s/spool", b->dir);
	if (spool_open(&b->sp, path, SPOOL_WRITER | SPOOL_READER))
		fail_msg("spool: %s", err_msg());
	fakeforge_init(&b->ff);
	b->ff.version_head = HEAD;
	b->ff.version_patch_id = HEAD;
	mailed(b, 7, COVER7, PATCH7);
	metrics_reset();
	*state = b;
	return 0;
}

static int teardown(void **state)
{
	struct bed *b = *state;

	inbound_free(b->ib);
	spool_free(b->sp);
	fakeforge_release(&b->ff);
	config_free(b->cfg);
	store_free(b->st);
	free(b);
	return 0;
}

/*
 * Spool a reply from sender as the milter would; parent NULL: the patch
 * of MR 7; refs: more References after the patch's.  Its Message-ID
 * (without <>) goes to mid.
 */
static void spool_reply(struct bed *b, char *mid, size_t size,
			const char *sender, const char *ar, const char *parent,
			const char *refs, const char *body)
{
	struct buf m = BUF_INIT(1 << 16);
	struct spool_meta meta = { 0 };
	char name[SPOOL_NAME_MAX + 1];

	snprintf(mid, size, "reply-%u@corp.example", ++b->n);
	if (ar)
		assert_int_equal(
			buf_addf(&m, "Authentication-Results: %s\n", ar), 0);
	assert_int_equal(
		buf_addf(&m,
			 "From: %s\n"
			 "To: list@example.org\n"
			 "Subject: Re: [PATCH v1 1/1] hello: flush\n"
			 "Date: Thu, 03 Dec 2026 10:00:00 +0000\n"
			 "Message-ID: <%s>\n"
			 "In-Reply-To: <%s>\n"
			 "References: <" COVER7 "> <" PATCH7 ">%s%s%s%s%s%s\n"
			 "MIME-Version: 1.0\n"
			 "Content-Type: text/plain; charset=utf-8\n"
			 "\n%s",
			 sender, mid, parent ? parent : PATCH7,
			 refs ? " <" : "", refs ? refs : "", refs ? ">" : "",
			 parent ? " <" : "", parent ? parent : "",
			 parent ? ">" : "", body),
		0);
	meta.queue_id = "4Y3ZQk1XyZz9";
	meta.message_id = mid;
	meta.sender = b->envelope ? b->envelope : "x@corp.example";
	meta.kind = "reply";
	meta.project = PROJECT;
	meta.iid = 7;
	meta.revision = 1;
	meta.patch = 1;
	assert_int_equal(
		spool_put(name, sizeof(name), b->sp, &meta, m.data, m.len), 0);
	buf_release(&m);
}

/* Ingest what is spooled and apply what is due at now. */
static void run(struct bed *b, int64_t now)
{
	struct inbound_opts o = { 0 };

	if (!b->ib) {
		o.cfg = b->cfg;
		o.store = b->st;
		o.forge = &b->ff.base;
		o.render_notice = noticemail_render;
		o.render_arg = b->cfg;
		if (inbound_new(&b->ib, &o))
			fail_msg("inbound_new: %s", err_msg());
	}
	assert_int_equal(inbound_ingest_spool(b->ib, now), 0);
	if (inbound_apply_due(b->ib, now))
		fail_msg("apply: %s", err_msg());
}

/* The journal row of mid: its state, and its attempts in *attempts. */
static enum store_inbound_state row(struct bed *b, const char *mid,
				    int *attempts)
{
	struct store_inbound in;
	enum store_inbound_state s;

	store_inbound_init(&in);
	assert_int_equal(store_inbound_get(&in, b->st, mid), 0);
	s = in.state;
	if (attempts)
		*attempts = in.attempts;
	store_inbound_release(&in);
	return s;
}

/* Whether the journal holds action index of mid, done. */
static int action_done(struct bed *b, const char *mid, int index)
{
	struct store_action_list l = { 0 };
	int done = 0;
	size_t i;

	assert_int_equal(store_action_list(&l, b->st, mid), 0);
	for (i = 0; i < l.nr; i++)
		if (l.items[i].index == index)
			done = l.items[i].state == STORE_ACTION_DONE;
	store_action_list_release(&l);
	return done;
}

/* The body of the first note posted with a marker of mid's, or NULL. */
static const char *note_of(struct bed *b, const char *mid)
{
	unsigned i;

	(void)mid;
	for (i = 0; i < b->ff.nr_calls; i++)
		if (b->ff.calls[i].op == FAKE_CREATE_DISCUSSION ||
		    b->ff.calls[i].op == FAKE_REPLY_DISCUSSION ||
		    b->ff.calls[i].op == FAKE_CREATE_NOTE)
			return b->ff.calls[i].body;
	return NULL;
}

#define ON "{project=\"" PROJECT "\"}"
#define RECEIVED "patchbridge_replies_received_total{result=\"journaled\"}"
#define APPLIED "patchbridge_replies_applied_total" ON
#define RETRIED "patchbridge_replies_retried_total" ON
#define NAKS "patchbridge_naks_total" ON
#define MADE "patchbridge_approvals_made_total" ON
#define REFUSED(r) "patchbridge_approvals_refused_total{reason=\"" r "\"}"
#define NOTICES(d) "patchbridge_notices_total{decision=\"" d "\"}"

static size_t dead(struct bed *b)
{
	size_t n = 99;

	assert_int_equal(spool_count(&n, b->sp, SPOOL_DEAD), 0);
	return n;
}

static void verified_ack_approves(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;
	struct inbound_stats s;
	char mid[64];

	spool_reply(b, mid, sizeof(mid), BOB, DKIM_PASS, NULL, NULL,
		    "Looks right.\n\n" ACK);
	run(b, NOW);
	assert_int_equal(row(b, mid, NULL), STORE_INBOUND_APPLIED);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_APPROVE), 1);
	c = fakeforge_call(&b->ff, FAKE_APPROVE, 0);
	assert_string_equal(c->user, "bob");
	assert_string_equal(c->project, PROJECT);
	assert_int_equal(c->iid, 7);
	assert_string_equal(c->arg, HEAD);
	assert_int_equal(b->ff.approvals, 1);
	assert_true(action_done(b, mid, 1000));
	assert_non_null(strstr(note_of(b, mid), "approval by GitLab user bob"));
	inbound_get_stats(&s, b->ib);
	assert_int_equal(s.ingested, 1);
	assert_int_equal(s.applied, 1);
	assert_int_equal(dead(b), 0);
	assert_int_equal(metric(RECEIVED), 1);
	assert_int_equal(metric(APPLIED), 1);
	assert_int_equal(metric(MADE), 1);

	/* Run again: an applied row is never due, nothing more asked. */
	fakeforge_clear_calls(&b->ff);
	run(b, NOW + 1);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_APPROVE), 0);
}

static void ack_from_parent_is_a_quotation(void **state)
{
	struct bed *b = *state;
	char bait[64], mid[64];

	spool_reply(b, bait, sizeof(bait), "Mallory <mallory@evil.example>",
		    NULL, NULL, NULL,
		    "Bob, can you check this? Here is what I need from "
		    "you:\n\n" ACK);
	run(b, NOW);
	assert_int_equal(b->ff.approvals, 0);
	fakeforge_clear_calls(&b->ff);
	spool_reply(b, mid, sizeof(mid), BOB, DKIM_PASS, bait, NULL,
		    "Will do.\n\n" ACK);
	run(b, NOW + 1);
	assert_int_equal(row(b, mid, NULL), STORE_INBOUND_APPLIED);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_APPROVE), 0);
	assert_int_equal(b->ff.approvals, 0);
	assert_non_null(note_of(b, mid));
	assert_non_null(
		strstr(note_of(b, mid), "is in a mail this one answers"));
	assert_int_equal(dead(b), 0);
	assert_int_equal(metric(REFUSED("quoted")), 1);
	assert_int_equal(metric(APPLIED), 2);
	assert_true(metric(MADE) <= 0);
}

static void two_mrs_in_headers_stays_with_parent(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;
	char x[64], mid[64];
	unsigned i;

	mailed(b, 8, COVER8, PATCH8);
	spool_reply(b, x, sizeof(x), "Mallory <mallory@evil.example>", NULL,
		    NULL, PATCH8, "What do you think, Bob?\n");
	run(b, NOW);
	fakeforge_clear_calls(&b->ff);
	spool_reply(b, mid, sizeof(mid), BOB, DKIM_PASS, x, PATCH8,
		    "Fine by me.\n\n" ACK);
	run(b, NOW + 1);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_APPROVE), 0);
	assert_int_equal(b->ff.approvals, 0);
	for (i = 0; i < b->ff.nr_calls; i++) {
		c = &b->ff.calls[i];
		if (c->project)
			assert_int_equal(c->iid, 7);
	}
	assert_non_null(
		strstr(note_of(b, mid), "do not agree on one merge request"));
	assert_int_equal(metric(REFUSED("thread_conflict")), 1);
	assert_int_equal(row(b, mid, NULL), STORE_INBOUND_APPLIED);
}

static void nak_labels(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;
	char mid[64];

	strlist_push(&b->ff.labels, "Acks::ACKed");
	strlist_push(&b->ff.labels, "keep");
	spool_reply(b, mid, sizeof(mid), BOB, DKIM_PASS, NULL, NULL,
		    "NAK.\n\nThis breaks the build on 32-bit.\n");
	run(b, NOW);
	assert_int_equal(row(b, mid, NULL), STORE_INBOUND_APPLIED);
	c = fakeforge_call(&b->ff, FAKE_UPDATE_LABELS, 0);
	assert_non_null(c);
	assert_string_equal(c->arg, "+Acks::NACKed -Acks::ACKed");
	assert_true(strlist_find(&b->ff.labels, "keep") >= 0);
	assert_true(action_done(b, mid, 2000));
	assert_true(action_done(b, mid, 2001));
	assert_int_equal(metric(NAKS), 1);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_APPROVE), 0);
}

/*
 * A review bot's trailers are words: one of [inbound] bots, and Bob's
 * own address when the mail says Auto-Submitted (RFC 3834).  The
 * comment is posted with the reason, nothing is approved, the refusal
 * is counted under "bot", and the bot's NAK labels nothing.
 */
static void bot_trailers_are_words(void **state)
{
	struct bed *b = *state;
	const char *note;
	char mid[64];

	spool_reply(b, mid, sizeof(mid), "CI <ci@corp.example>", DKIM_PASS,
		    NULL, NULL,
		    "Build passed on 12 configurations.\n\n"
		    "Tested-by: CI <ci@corp.example>\n");
	run(b, NOW);
	assert_int_equal(row(b, mid, NULL), STORE_INBOUND_APPLIED);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_APPROVE), 0);
	note = note_of(b, mid);
	assert_non_null(note);
	assert_non_null(strstr(note, "Build passed on 12 configurations."));
	assert_non_null(strstr(note, "review bot (named in the configured "
				     "bots)"));
	assert_int_equal(metric(REFUSED("bot")), 1);

	/* Auto-Submitted makes a bot of anyone, and its NAK counts not */
	fakeforge_clear_calls(&b->ff);
	spool_reply(b, mid, sizeof(mid), BOB,
		    DKIM_PASS "\nAuto-Submitted: auto-generated", NULL, NULL,
		    "NAK.\n\n" ACK);
	run(b, NOW);
	assert_int_equal(row(b, mid, NULL), STORE_INBOUND_APPLIED);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_APPROVE), 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_UPDATE_LABELS), 0);
	assert_int_equal(metric(REFUSED("bot")), 2);
	assert_int_equal(metric(NAKS), -1);
}

static void forge_5xx_waits_for_retry(void **state)
{
	struct bed *b = *state;
	struct inbound_stats s;
	int attempts = 0;
	char mid[64];

	fakeforge_script(&b->ff, FAKE_CREATE_DISCUSSION, FAKE_5XX, 0,
			 "503 Service Unavailable");
	spool_reply(b, mid, sizeof(mid), BOB, DKIM_PASS, NULL, NULL,
		    "Looks right.\n\n" ACK);
	run(b, NOW);
	assert_int_equal(row(b, mid, &attempts), STORE_INBOUND_FAILED);
	assert_int_equal(attempts, 1);
	inbound_get_stats(&s, b->ib);
	assert_int_equal(s.retried, 1);
	assert_int_equal(s.dead, 0);
	assert_int_equal(dead(b), 0);
	assert_int_equal(metric(RETRIED), 1);
	assert_true(metric(APPLIED) <= 0);

	/* Not due before its backoff; then it lands. */
	fakeforge_clear_calls(&b->ff);
	run(b, NOW);
	assert_int_equal(b->ff.nr_calls, 0);
	run(b, NOW + 10);
	assert_int_equal(row(b, mid, NULL), STORE_INBOUND_APPLIED);
	assert_int_equal(b->ff.approvals, 1);
	assert_int_equal(b->ff.nr_notes, 1);
	assert_int_equal(metric(APPLIED), 1);
	assert_int_equal(metric(RETRIED), 1);
}

static void expired_token_waits_uncounted(void **state)
{
	struct bed *b = *state;
	struct inbound_stats s;
	int attempts = 99, k;
	char mid[64];

	for (k = 0; k < 5; k++)
		fakeforge_script(&b->ff, FAKE_CREATE_DISCUSSION, FAKE_TOKEN, 0,
				 "Token is expired");
	spool_reply(b, mid, sizeof(mid), BOB, DKIM_PASS, NULL, NULL,
		    "Looks right.\n\n" ACK);
	/* More tries than max_attempts: an operator's problem is never
	 * the mail's dead letter. */
	for (k = 0; k < 5; k++)
		run(b, NOW + 10 * k);
	assert_int_equal(row(b, mid, &attempts), STORE_INBOUND_FAILED);
	assert_int_equal(attempts, 0);
	inbound_get_stats(&s, b->ib);
	assert_int_equal(s.dead, 0);
	assert_int_equal(dead(b), 0);
	assert_int_equal(b->ff.approvals, 0);
	assert_int_equal(forge_token_problem(&b->ff.base), FORGE_TOKEN_EXPIRED);

	/* A new token: it lands. */
	run(b, NOW + 100);
	assert_int_equal(row(b, mid, NULL), STORE_INBOUND_APPLIED);
	assert_int_equal(b->ff.approvals, 1);
	assert_int_equal(forge_token_problem(&b->ff.base), FORGE_TOKEN_OK);
}

/* The notice decided for reply mid: its decision; *mail (may be NULL)
 * gets the queued mail, "" when none was queued. */
static char *notice(struct bed *b, const char *mid, struct buf *mail)
{
	struct store_notice n;
	struct store_outmail om;
	char *decision;

	store_notice_init(&n);
	if (store_notice_get(&n, b->st, mid)) {
		store_notice_release(&n);
		return NULL;
	}
	decision = strdup(n.decision);
	if (mail && n.notice_id) {
		store_outmail_init(&om);
		assert_int_equal(store_outmail_get(&om, b->st, n.notice_id), 0);
		assert_int_equal(buf_add(mail, om.message, om.message_len), 0);
		store_outmail_release(&om);
	}
	store_notice_release(&n);
	return decision;
}

#define MALLORY "Mallory <mallory@corp.example>"

/* One reply from Mallory; its notice's decision and mail. */
static char *mallory(struct bed *b, const char *ar, const char *body,
		     struct buf *mail)
{
	char mid[64];

	spool_reply(b, mid, sizeof(mid), MALLORY, ar, NULL, NULL, body);
	run(b, NOW);
	return notice(b, mid, mail);
}

/*
 * Each thing a reply asked that was not done reaches its sender, once,
 * privately: one mail per reply with every reason and what to do.
 */
static void notices_say_why(void **state)
{
	static const struct {
		const char *ar, *body, *says;
	} cases[] = {
		/* unverified */
		{ NULL, "Fine.\n\nAcked-by: " MALLORY "\n",
		  "the address your DKIM signs" },
		/* verified, but no owner of the files */
		{ DKIM_PASS, "Fine.\n\nAcked-by: " MALLORY "\n",
		  "owners.yaml" },
		/* names someone else */
		{ NULL, "Fine.\n\n" ACK, "Only the sender approves" },
		/* a NAK not acted on */
		{ NULL, "I would NAK this as it stands, I think.\n",
		  "did not act on" },
	};
	struct bed *b = *state;
	struct buf mail = BUF_INIT(1 << 20);
	size_t i;
	char *d;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *flat, *p;

		buf_reset(&mail);
		d = mallory(b, cases[i].ar, cases[i].body, &mail);
		/* the body is wrapped: read it as one line */
		flat = strdup(mail.data);
		for (p = flat; *p; p++)
			if (*p == '\n')
				*p = ' ';
		for (p = flat; *p; p++)
			while (p[0] == ' ' && p[1] == ' ')
				memmove(p, p + 1, strlen(p));
		p = strstr(flat, cases[i].says);
		free(flat);
		if (!d || strcmp(d, "sent") || !p)
			fail_msg("case %zu: %s: %s", i, d ? d : "(none)",
				 strstr(mail.data, "- Your") ?
					 strstr(mail.data, "- Your") :
					 mail.data);
		free(d);
		assert_non_null(strstr(mail.data, "\nTo: Mallory "
						  "<mallory@corp.example>\n"));
		assert_null(strstr(mail.data, "list@example.org"));
		assert_null(strstr(mail.data, "\nCc:"));
		assert_non_null(strstr(mail.data, "\nAuto-Submitted: "
						  "auto-replied\n"));
		assert_non_null(strstr(mail.data, "\nIn-Reply-To: <reply-"));
		assert_non_null(strstr(mail.data, "/-/merge_requests/7"));
	}
	/* a plain comment that was posted: nothing to tell */
	d = mallory(b, NULL, "Looks fine to me.\n", NULL);
	assert_null(d);
	buf_release(&mail);
}

/* RFC 3834: no notice to an automatic mail, a bounce, a list robot. */
static void notices_rfc3834(void **state)
{
	struct bed *b = *state;
	const char *ack = "Fine.\n\nAcked-by: " MALLORY "\n";
	char *d;

	d = mallory(b, DKIM_PASS "\nAuto-Submitted: auto-replied", ack, NULL);
	assert_string_equal(d, "auto_submitted");
	free(d);
	d = mallory(b, DKIM_PASS "\nPrecedence: bulk", ack, NULL);
	assert_string_equal(d, "list");
	free(d);
	d = mallory(b, DKIM_PASS "\nContent-Type: multipart/report", ack, NULL);
	assert_string_equal(d, "bounce");
	free(d);
	b->envelope = "";
	d = mallory(b, NULL, ack, NULL);
	assert_string_equal(d, "bounce");
	free(d);
	b->envelope = NULL;
	/* a person's reply relayed with the list's List-Id is answered */
	d = mallory(b, DKIM_PASS "\nList-Id: <list.example.org>", ack, NULL);
	assert_string_equal(d, "sent");
	free(d);
	assert_int_equal(metric(NOTICES("auto_submitted")), 1);
	assert_int_equal(metric(NOTICES("bounce")), 2);
	assert_int_equal(metric(NOTICES("list")), 1);
	assert_int_equal(metric(NOTICES("sent")), 1);
}

/* [inbound] notice_rate (5) an hour, then none; an opt-out. */
static void notices_rate_and_opt_out(void **state)
{
	struct bed *b = *state;
	const char *ack = "Fine.\n\nAcked-by: " MALLORY "\n";
	char *d;
	int k;

	for (k = 0; k < 5; k++) {
		d = mallory(b, NULL, ack, NULL);
		assert_string_equal(d, "sent");
		free(d);
	}
	d = mallory(b, NULL, ack, NULL);
	assert_string_equal(d, "rate_limit");
	free(d);

	/* "unsubscribe notices" is not posted, and is obeyed */
	fakeforge_clear_calls(&b->ff);
	d = mallory(b, NULL, "unsubscribe notices\n", NULL);
	assert_null(d);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_CREATE_DISCUSSION), 0);
	assert_int_equal(
		store_notice_optout_get(&k, b->st, "mallory@corp.example"), 0);
	assert_int_equal(k, 1);
	d = mallory(b, NULL, ack, NULL);
	assert_string_equal(d, "opt_out");
	free(d);
	d = mallory(b, NULL, "Subscribe notices\n", NULL);
	assert_null(d);
	assert_int_equal(
		store_notice_optout_get(&k, b->st, "mallory@corp.example"), 0);
	assert_int_equal(k, 0);
}

/* The mail as one line of single blanks (its body is wrapped). */
static void flatten(struct buf *mail)
{
	char *p = mail->data, *q = mail->data;

	for (; *p; p++) {
		char c = *p == '\n' ? ' ' : *p;

		if (c == ' ' && q > mail->data && q[-1] == ' ')
			continue;
		*q++ = c;
	}
	*q = '\0';
	mail->len = (size_t)(q - mail->data);
}

/* A reply from sender; its notice must be queued and say text. */
static void says(struct bed *b, const char *sender, const char *ar,
		 const char *body, const char *text)
{
	struct buf mail = BUF_INIT(1 << 20);
	char mid[64], *d;

	spool_reply(b, mid, sizeof(mid), sender, ar, NULL, NULL, body);
	run(b, NOW);
	d = notice(b, mid, &mail);
	if (!d || strcmp(d, "sent"))
		fail_msg("no notice for \"%s\": %s", body, d ? d : "none");
	free(d);
	flatten(&mail);
	if (!strstr(mail.data, text))
		fail_msg("want \"%s\" in %s", text, mail.data);
	buf_release(&mail);
}

/*
 * One notice per reason the README lists, each saying what to do: the
 * verdicts a trailer gets (not an owner, in a sentence, loose, a bot,
 * no forge user, quoted), an approval the forge did not take (the
 * revision changed, the MR merged or closed), a locked discussion, a
 * dead letter.  (An inline comment
 * posted as a general one: client_inbound, against the simulator.)
 */
static void notices_each_reason(void **state)
{
	struct bed *b = *state;
	const char *own = "Fine.\n\nAcked-by: " MALLORY "\n";

	/* not an owner of the files (Mallory is a user of owners.yaml) */
	says(b, MALLORY, DKIM_PASS, own, "owners.yaml names for these files");
	/* in a sentence; loose */
	says(b, MALLORY, NULL, "Series is Acked-by: " MALLORY "\n",
	     "inside a sentence");
	says(b, MALLORY, NULL, "Fine.\n\nReviewed by : Mallory\n",
	     "line of its own");
	/* a trailer in a paragraph that is not trailers alone (another
	 * sender: Mallory's notices are rate-limited) */
	says(b, "Dave <dave@corp.example>", NULL,
	     "Fine.\nAcked-by: Dave <dave@corp.example>\n"
	     "But see my other mail.\n",
	     "in a paragraph of trailers");
	/* a NAK mentioned, not given: posted as words, not acted on */
	says(b, "Dave <dave@corp.example>", NULL,
	     "I would NAK this if the deadline were not so close.\n",
	     "mentions a NAK that the bridge did not act on");
	/* a review bot's trailer */
	says(b, "CI <ci@corp.example>", DKIM_PASS,
	     "Passed.\n\nTested-by: CI <ci@corp.example>\n", "review bot");
	/* no forge user for the address */
	b->ff.no_users = 1;
	says(b, "Carol <carol@corp.example>", DKIM_PASS,
	     "Fine.\n\nAcked-by: Carol <carol@corp.example>\n",
	     "link your address to your forge account");
	b->ff.no_users = 0;
	/* the MR merged, then closed: Bob's approval is not asked for */
	b->ff.mr_state = "merged";
	says(b, BOB, DKIM_PASS, "Good.\n\n" ACK, "already merged");
	b->ff.mr_state = "closed";
	says(b, BOB, DKIM_PASS, "Good.\n\n" ACK, "was closed");
	b->ff.mr_state = NULL;
	/* the revision changed: the forge refuses the approval (409) and
	 * the MR's head is no rebase of the acked one */
	fakeforge_script_approve(
		&b->ff, FAKE_APPROVE, PB_EINVAL, FORGE_APPROVE_SHA_MISMATCH,
		"409 SHA does not match HEAD of source branch");
	b->ff.version_head = "5555555555555555555555555555555555555555";
	b->ff.version_patch_id = "6666666666666666666666666666666666666666";
	says(b, BOB, DKIM_PASS, "Good.\n\n" ACK, "no longer the head");
	b->ff.version_head = HEAD;
	b->ff.version_patch_id = HEAD;
	/* quoted: Bob's ack is in the mail he answers */
	{
		char bait[64], mid[64], *d;
		struct buf mail = BUF_INIT(1 << 20);

		spool_reply(b, bait, sizeof(bait), "Carol <carol@corp.example>",
			    NULL, NULL, NULL, "Bob, please send:\n\n" ACK);
		spool_reply(b, mid, sizeof(mid), BOB, DKIM_PASS, bait, NULL,
			    "Will do.\n\n" ACK);
		run(b, NOW);
		d = notice(b, mid, &mail);
		assert_non_null(d);
		assert_string_equal(d, "sent");
		free(d);
		flatten(&mail);
		assert_non_null(strstr(mail.data, "read as a quotation"));
		buf_release(&mail);
	}
	/* the discussion locked: not posted, and the sender is told */
	b->ff.discussion_locked = 1;
	says(b, MALLORY, NULL, "Fine by me.\n", "discussion is locked");
	b->ff.discussion_locked = 0;
	/* a dead letter: the forge refuses the comment for good */
	fakeforge_script(&b->ff, FAKE_CREATE_DISCUSSION, FAKE_FAIL, PB_EPERM,
			 "403 Forbidden");
	says(b, MALLORY, NULL, "Fine by me.\n",
	     "set aside for the bridge's operator");
}

/* A reply to the bridge's notice about a series that became no merge
 * request (a receipt of MR 0) is placed nowhere: no forge call is made
 * for MR 0. */
static void reply_to_series_notice_not_placed(void **state)
{
	static const char raw[] =
		"From: Alice <alice@corp.example>\n"
		"Subject: Re: your series\n"
		"Message-ID: <answer@corp.example>\n"
		"In-Reply-To: <pb.n.series@bridge.example.org>\n"
		"References: <cover@corp.example> "
		"<pb.n.series@bridge.example.org>\n"
		"\nThanks, a v2 comes.\n";
	struct bed *b = *state;
	struct inbound_target t;
	struct store_mail m;
	struct mail *mail = NULL;
	int ours = -1;

	store_mail_init(&m);
	m.project = PROJECT;
	m.iid = 0;
	m.revision = 0;
	m.kind = STORE_MAIL_RECEIPT;
	m.state = STORE_MAIL_SENT;
	m.message_id = "pb.n.series@bridge.example.org";
	if (store_mail_put(b->st, &m))
		fail_msg("store_mail_put: %s", err_msg());
	assert_int_equal(mail_parse(&mail, raw, sizeof(raw) - 1, NULL), 0);
	assert_int_equal(inbound_locate(&t, &ours, b->st, mail), PB_ENOTFOUND);
	assert_int_equal(ours, 0);
	mail_free(mail);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(verified_ack_approves),
		T(ack_from_parent_is_a_quotation),
		T(two_mrs_in_headers_stays_with_parent),
		T(nak_labels),
		T(bot_trailers_are_words),
		T(forge_5xx_waits_for_retry),
		T(expired_token_waits_uncounted),
		T(notices_say_why),
		T(notices_rfc3834),
		T(notices_rate_and_opt_out),
		T(notices_each_reason),
		T(reply_to_series_notice_not_placed),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
