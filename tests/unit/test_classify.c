/*
 * Tests of the milter's classification (mail/classify.c): the thread
 * map read from a real store (rows put by a STORE_RW connection, read
 * through STORE_RO as the milter does), the Message-ID scheme fallback,
 * the subject fallback for broken threading (one candidate moves the
 * mail, two keep it where threading put it), every loop guard, and mail
 * that is not about a series at all.
 */
#include "cmocka_all.h"
#include "core/msgid.h"
#include "mail/classify.h"
#include "mail/mail.h"
#include "milter/diffcache.h"
#include "state/store.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DOMAIN "bridge.example.org"
#define ADDRESS "patchbridge@bridge.example.org"
#define SHA1 "1111111111111111111111111111111111111111"
#define SHA2 "2222222222222222222222222222222222222222"

/* Patch 2 of the series: the diff as mailed. */
static const char diff2[] =
	"diff --git a/lib/list.c b/lib/list.c\n"
	"index 1111111..2222222 100644\n"
	"--- a/lib/list.c\n"
	"+++ b/lib/list.c\n"
	"@@ -10,7 +10,8 @@ int list_add(struct list *l, void *item)\n"
	" {\n"
	"-\tif (l->nr == l->alloc)\n"
	"-\t\treturn -1;\n"
	"+\tif (l->nr == l->alloc && list_grow(l) < 0)\n"
	"+\t\treturn -ENOMEM;\n"
	"+\tl->generation++;\n"
	" \tl->items[l->nr++] = item;\n"
	" \treturn 0;\n"
	" }\n";

/* Patch 1: something else entirely. */
static const char diff1[] = "diff --git a/README b/README\n"
			    "--- a/README\n"
			    "+++ b/README\n"
			    "@@ -1,3 +1,3 @@\n"
			    " The list library.\n"
			    "-Version one.\n"
			    "+Version two, with growth.\n"
			    " See list.h.\n";

/* A reply to patch 2 quoting its hunk. */
static const char reply_body2[] =
	"On Mon, Dev Eloper wrote:\n"
	"> @@ -10,7 +10,8 @@ int list_add(struct list *l, void *item)\n"
	">  {\n"
	"> -\tif (l->nr == l->alloc)\n"
	"> -\t\treturn -1;\n"
	"> +\tif (l->nr == l->alloc && list_grow(l) < 0)\n"
	"> +\t\treturn -ENOMEM;\n"
	"\n"
	"Why not keep -1 here?\n"
	"\n"
	"> +\tl->generation++;\n"
	"\n"
	"Acked-by: Rev Iewer <rev@example.org>\n";

static char dir[512];
static char db[600];

/* Patch 1 of the other MR. */
static const char diff1b[] = "diff --git a/NEWS b/NEWS\n"
			     "--- a/NEWS\n"
			     "+++ b/NEWS\n"
			     "@@ -1,2 +1,3 @@\n"
			     " News.\n"
			     "+Lists grow now.\n"
			     "+Nothing else changed.\n"
			     " End.\n";

static void put_series(struct store *st, const char *project, int64_t iid,
		       const char *head, const char *prefix, const char *d1,
		       const char *d2)
{
	struct store_revision rev;
	struct store_mail m;
	char id[128];
	int n, k;

	memset(&rev, 0, sizeof(rev));
	rev.project = project;
	rev.iid = iid;
	rev.head_sha = head;
	rev.base_sha = SHA2;
	rev.start_sha = SHA2;
	rev.patch_id = head;
	rev.patches = 3;
	rev.cover_msgid = "";
	assert_int_equal(store_revision_start(&n, st, &rev), 0);
	assert_int_equal(n, 1);
	for (k = 0; k <= 3; k++) {
		store_mail_init(&m);
		snprintf(id, sizeof(id), "%s-%d@lists.example.org", prefix, k);
		m.message_id = id;
		m.project = project;
		m.iid = iid;
		m.revision = 1;
		m.patch = k;
		m.total = 3;
		m.kind = k ? STORE_MAIL_PATCH : STORE_MAIL_COVER;
		m.commit_sha = k ? head : NULL;
		m.diff = k == 1 ? d1 : k == 2 ? d2 : NULL;
		m.diff_len = m.diff ? strlen(m.diff) : 0;
		m.state = STORE_MAIL_SENT;
		assert_int_equal(store_mail_put(st, &m), 0);
	}
}

/* g/t!7 v1: one patch, kept in the thread map as the whole mail. */
static void put_single(struct store *st)
{
	static const char mail[] =
		"From: Dev Eloper <dev@example.org>\n"
		"Subject: [PATCH] news: say that lists grow\n"
		"Message-ID: <t7-1@lists.example.org>\n"
		"\n"
		"Tell the users.\n"
		"---\n"
		" NEWS | 2 ++\n"
		"\n"
		"diff --git a/NEWS b/NEWS\n"
		"--- a/NEWS\n"
		"+++ b/NEWS\n"
		"@@ -1,2 +1,3 @@\n"
		" News.\n"
		"+Lists grow now.\n"
		"+Nothing else changed.\n"
		" End.\n";
	struct store_revision rev;
	struct store_mail m;
	int n;

	memset(&rev, 0, sizeof(rev));
	rev.project = "g/t";
	rev.iid = 7;
	rev.head_sha = SHA1;
	rev.base_sha = SHA2;
	rev.start_sha = SHA2;
	rev.patch_id = SHA1;
	rev.patches = 1;
	rev.cover_msgid = "";
	assert_int_equal(store_revision_start(&n, st, &rev), 0);
	store_mail_init(&m);
	m.message_id = "t7-1@lists.example.org";
	m.project = "g/t";
	m.iid = 7;
	m.revision = 1;
	m.patch = 1;
	m.total = 1;
	m.kind = STORE_MAIL_PATCH;
	m.commit_sha = SHA1;
	m.diff = mail;
	m.diff_len = strlen(mail);
	m.state = STORE_MAIL_SENT;
	assert_int_equal(store_mail_put(st, &m), 0);
}

static int setup(void **state)
{
	const char *base = getenv("PB_TEST_TMP");
	struct store *st = NULL;

	(void)state;
	mail_init();
	snprintf(dir, sizeof(dir), "%s/classify.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(db, sizeof(db), "%s/state.db", dir);
	if (store_open(&st, db, STORE_RW, 5000))
		return -1;
	/* g/p!12: the series the replies answer; g/p!13 has the same
	 * patch 2 (a fork of the MR) for the ambiguous case, and another
	 * patch 1 */
	put_series(st, "g/p", 12, SHA1, "s12", diff1, diff2);
	put_series(st, "g/p", 13, SHA2, "s13", diff1b, diff2);
	put_single(st);
	store_free(st);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	mail_shutdown();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct store *open_ro(void)
{
	struct store *st = NULL;

	if (store_open(&st, db, STORE_RO, 5000))
		fail_msg("open %s: %s", db, err_msg());
	return st;
}

static const struct classify_opts opts = { DOMAIN, ADDRESS, NULL, 0 };

/* Headers "Name: value\n" (no folding) into in, then the body. */
static void build(struct classify_input *in, struct buf *raw,
		  const char *headers, const char *body)
{
	const char *p = headers;

	classify_input_init(in);
	buf_init(raw, 1 << 20);
	while (*p) {
		const char *nl = strchr(p, '\n');
		const char *colon = strchr(p, ':');
		char name[128], value[2048];

		assert_non_null(nl);
		assert_true(colon && colon < nl);
		snprintf(name, sizeof(name), "%.*s", (int)(colon - p), p);
		colon++;
		while (*colon == ' ')
			colon++;
		snprintf(value, sizeof(value), "%.*s", (int)(nl - colon),
			 colon);
		classify_header(in, name, value);
		p = nl + 1;
	}
	buf_adds(raw, headers);
	buf_adds(raw, "\n");
	buf_adds(raw, body ? body : "");
}

/* Classify headers+body against the store (or none when st is NULL). */
/* run() with the options o. */
static void run_with(struct classify_result *res, const char *headers,
		     const char *body, struct store *st,
		     const struct classify_opts *o)
{
	struct classify_input in;
	struct buf raw;

	struct threadmap tm;

	build(&in, &raw, headers, body);
	if (st)
		store_threadmap(&tm, st);
	classify_result_init(res);
	assert_int_equal(classify_eom(res, &in, raw.data, raw.len,
				      st ? &tm : NULL, o),
			 0);
	classify_input_release(&in);
	buf_release(&raw);
}

static void run(struct classify_result *res, const char *headers,
		const char *body, struct store *st)
{
	run_with(res, headers, body, st, &opts);
}

/*
 * When some project takes series posted to the list, a new patch's mail
 * (unthreaded, or threaded under a mail the map does not know) is a
 * SUBMIT, to be spooled; without, it passes as before.  So is a next
 * version's mail threaded under a bridged one; a v1 patch there is not.
 * A reply that nothing places, and the bridge's own patch, are never
 * one.
 */
static void test_submission(void **state)
{
	static const char *const news[] = {
		"From: Ann <ann@example.org>\n"
		"Subject: [PATCH 0/2] louder\n"
		"Message-ID: <c@example.org>\n",
		"From: Ann <ann@example.org>\n"
		"Subject: [PATCH v2 1/2] h: louder\n"
		"Message-ID: <p1@example.org>\n"
		"In-Reply-To: <c@example.org>\n"
		"References: <c@example.org>\n",
	};
	static const char v2_cover[] =
		"From: Ann <ann@example.org>\n"
		"Subject: [PATCH v2 0/3] list: grow on demand\n"
		"Message-ID: <v2c@example.org>\n"
		"In-Reply-To: <s12-0@lists.example.org>\n"
		"References: <s12-0@lists.example.org>\n";
	struct classify_opts sub = opts;
	struct classify_result res;
	struct classify_input in;
	struct store *st = open_ro();
	struct threadmap tm;
	struct buf raw;
	size_t i;

	(void)state;
	sub.submissions = 1;
	store_threadmap(&tm, st);
	for (i = 0; i < sizeof(news) / sizeof(news[0]); i++) {
		build(&in, &raw, news[i], "diff --git a/h b/h\n");
		classify_result_init(&res);
		classify_headers(&res, &in, &tm, &sub);
		assert_int_equal(res.verdict, CLASSIFY_CANDIDATE);
		assert_string_equal(res.reason, "submission");
		assert_int_equal(classify_eom(&res, &in, raw.data, raw.len, &tm,
					      &sub),
				 0);
		assert_int_equal(res.verdict, CLASSIFY_SUBMIT);
		assert_string_equal(res.reason, "submission");
		/* no project takes any: as before */
		classify_headers(&res, &in, &tm, &opts);
		assert_int_equal(res.verdict, CLASSIFY_PASS);
		assert_int_equal(classify_eom(&res, &in, raw.data, raw.len, &tm,
					      &opts),
				 0);
		assert_int_equal(res.verdict, CLASSIFY_PASS);
		classify_result_release(&res);
		classify_input_release(&in);
		buf_release(&raw);
	}

	/* a next version in reply to the last one's cover (git send-email
	 * --in-reply-to): a series of its own when submissions are on; a
	 * v1 patch in a bridged thread stays where the thread puts it */
	run_with(&res, v2_cover, "Changes since v1.\n", st, &sub);
	assert_int_equal(res.verdict, CLASSIFY_SUBMIT);
	assert_string_equal(res.reason, "submission");
	assert_string_equal(res.project, "");
	assert_int_equal(res.iid, 0);
	classify_result_release(&res);
	run(&res, v2_cover, "Changes since v1.\n", st);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	assert_int_equal(res.iid, 12);
	classify_result_release(&res);
	run_with(&res,
		 "From: Ann <ann@example.org>\n"
		 "Subject: [PATCH 1/1] list: a fix on top\n"
		 "Message-ID: <fix@example.org>\n"
		 "In-Reply-To: <s12-2@lists.example.org>\n",
		 "diff --git a/h b/h\n", st, &sub);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	assert_int_equal(res.iid, 12);
	classify_result_release(&res);

	/* a reply nothing places; the bridge's own patch */
	build(&in, &raw,
	      "From: Rita <rita@example.org>\n"
	      "Subject: Re: [PATCH 1/2] h: louder\n"
	      "Message-ID: <r@example.org>\n"
	      "In-Reply-To: <p1@example.org>\n",
	      "Nice.\n");
	classify_result_init(&res);
	assert_int_equal(classify_eom(&res, &in, raw.data, raw.len, &tm, &sub),
			 0);
	assert_int_equal(res.verdict, CLASSIFY_PASS);
	classify_input_release(&in);
	buf_release(&raw);
	build(&in, &raw,
	      "From: Bridge <" ADDRESS ">\n"
	      "Subject: [PATCH 1/2] h: louder\n"
	      "Message-ID: <own@example.org>\n",
	      "diff --git a/h b/h\n");
	assert_int_equal(classify_eom(&res, &in, raw.data, raw.len, &tm, &sub),
			 0);
	assert_int_equal(res.verdict, CLASSIFY_LOOP);
	classify_result_release(&res);
	classify_input_release(&in);
	buf_release(&raw);
	store_free(st);
}

static void test_thread_map_in_reply_to(void **state)
{
	struct store *st = open_ro();
	struct classify_result res;

	(void)state;
	run(&res,
	    "From: Rev Iewer <rev@example.org>\n"
	    "Subject: Re: [PATCH 2/3] list: grow on demand\n"
	    "Message-ID: <r1@example.org>\n"
	    "In-Reply-To: <s12-2@lists.example.org>\n"
	    "References: <s12-0@lists.example.org> "
	    "<s12-2@lists.example.org>\n",
	    reply_body2, st);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	assert_int_equal(res.via, CLASSIFY_VIA_THREAD_MAP);
	assert_string_equal(res.project, "g/p");
	assert_int_equal(res.iid, 12);
	assert_int_equal(res.revision, 1);
	assert_int_equal(res.patch, 2);
	assert_int_equal(res.total, 3);
	assert_string_equal(res.matched_id, "s12-2@lists.example.org");
	/* the diff as mailed comes along for inline positions */
	assert_non_null(res.parent);
	assert_true(res.parent->nr_lines > 0);
	assert_int_equal(res.map_failed, 0);
	classify_result_release(&res);
	store_free(st);
}

static void test_thread_map_references_newest_first(void **state)
{
	struct store *st = open_ro();
	struct classify_result res;

	(void)state;
	/* In-Reply-To names a person's reply the map does not know; the
	 * newest known reference (patch 1) wins over the cover */
	run(&res,
	    "Subject: Re: [PATCH 1/3] README\n"
	    "In-Reply-To: <someone@example.org>\n"
	    "References: <s12-0@lists.example.org> "
	    "<s12-1@lists.example.org> <someone@example.org>\n",
	    "Thanks.\n", st);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	assert_int_equal(res.via, CLASSIFY_VIA_THREAD_MAP);
	assert_int_equal(res.patch, 1);
	classify_result_release(&res);
	store_free(st);
}

static void our_id(struct buf *out, const char *project, unsigned rev,
		   unsigned k, unsigned m, const char *domain)
{
	struct msgid_parts parts = { project, 5, rev, k, m, SHA1, domain };

	buf_init(out, 1024);
	assert_int_equal(msgid_format(out, &parts), 0);
}

static void test_msgid_fallback(void **state)
{
	struct store *st = open_ro();
	struct classify_result res;
	struct buf id, hdr = BUF_INIT(4096);

	(void)state;
	our_id(&id, "g/q", 2, 1, 4, DOMAIN);
	buf_addf(&hdr, "Subject: Re: [PATCH v2 1/4] q\nIn-Reply-To: <%s>\n",
		 id.data);

	/* no store at all */
	run(&res, hdr.data, "ok\n", NULL);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	assert_int_equal(res.via, CLASSIFY_VIA_MSGID);
	assert_string_equal(res.project, "g/q");
	assert_int_equal(res.iid, 5);
	assert_int_equal(res.revision, 2);
	assert_int_equal(res.patch, 1);
	assert_int_equal(res.total, 4);
	assert_null(res.parent);
	classify_result_release(&res);

	/* a store without the row */
	run(&res, hdr.data, "ok\n", st);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	assert_int_equal(res.via, CLASSIFY_VIA_MSGID);
	classify_result_release(&res);

	/* the same scheme on another domain is not ours */
	buf_release(&id);
	our_id(&id, "g/q", 2, 1, 4, "other.example.org");
	buf_reset(&hdr);
	buf_addf(&hdr, "In-Reply-To: <%s>\n", id.data);
	run(&res, hdr.data, "ok\n", st);
	assert_int_equal(res.verdict, CLASSIFY_PASS);
	assert_string_equal(res.reason, "not-bridged");
	classify_result_release(&res);

	buf_release(&id);
	buf_release(&hdr);
	store_free(st);
}

static void test_subject_fallback_one_candidate(void **state)
{
	struct store *st = open_ro();
	struct classify_result res;

	(void)state;
	/* broken threading: only the cover letter is known, the subject
	 * says patch 2, and the quoted hunk is patch 2's */
	run(&res,
	    "Subject: Re: [PATCH 2/3] list: grow on demand\n"
	    "In-Reply-To: <lost@example.org>\n"
	    "References: <s12-0@lists.example.org>\n",
	    reply_body2, st);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	assert_int_equal(res.via, CLASSIFY_VIA_SUBJECT);
	assert_string_equal(res.project, "g/p");
	assert_int_equal(res.iid, 12);
	assert_int_equal(res.patch, 2);
	assert_string_equal(res.matched_id, "s12-2@lists.example.org");
	assert_non_null(res.parent);
	classify_result_release(&res);
	store_free(st);
}

static void test_subject_fallback_unthreaded(void **state)
{
	struct store *st = open_ro();
	struct classify_input in;
	struct classify_result res;
	struct buf raw;

	(void)state;
	/* no threading headers at all (a web client): worth a look */
	build(&in, &raw, "Subject: Re: [PATCH 1/3] README\n", "x\n");
	classify_result_init(&res);
	classify_early(&res, &in, &opts);
	assert_int_equal(res.verdict, CLASSIFY_CANDIDATE);
	classify_input_release(&in);
	buf_release(&raw);

	/* patch 1 of the open v1 of 3 patches: only !12's holds the quote */
	run(&res, "Subject: Re: [PATCH 1/3] README\n",
	    "> -Version one.\n> +Version two, with growth.\n\nWhy?\n", st);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	assert_int_equal(res.via, CLASSIFY_VIA_SUBJECT);
	assert_int_equal(res.iid, 12);
	assert_int_equal(res.patch, 1);
	assert_string_equal(res.matched_id, "s12-1@lists.example.org");
	assert_non_null(res.parent);
	classify_result_release(&res);

	/* patch 2: both MRs hold the quote - ambiguous, not bridged */
	run(&res, "Subject: Re: [PATCH 2/3] list: grow on demand\n",
	    reply_body2, st);
	assert_int_equal(res.verdict, CLASSIFY_PASS);
	assert_string_equal(res.reason, "not-bridged");
	classify_result_release(&res);

	/* no open revision is v2 */
	run(&res, "Subject: Re: [PATCH v2 1/3] README\n",
	    "> -Version one.\n> +Version two, with growth.\n", st);
	assert_int_equal(res.verdict, CLASSIFY_PASS);
	classify_result_release(&res);

	/* a patch kept as a whole mail: its title must match too */
	run(&res, "Subject: Re: [PATCH] news: say that lists grow\n",
	    "> +Lists grow now.\n> +Nothing else changed.\n\nOK\n", st);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	assert_int_equal(res.via, CLASSIFY_VIA_SUBJECT);
	assert_string_equal(res.project, "g/t");
	assert_int_equal(res.patch, 1);
	classify_result_release(&res);
	run(&res, "Subject: Re: [PATCH] news: something else\n",
	    "> +Lists grow now.\n> +Nothing else changed.\n\nOK\n", st);
	assert_int_equal(res.verdict, CLASSIFY_PASS);
	classify_result_release(&res);

	/* without a store nothing can be looked for */
	run(&res, "Subject: Re: [PATCH 1/3] README\n",
	    "> -Version one.\n> +Version two, with growth.\n", NULL);
	assert_int_equal(res.verdict, CLASSIFY_PASS);
	classify_result_release(&res);
	store_free(st);
}

static void test_subject_fallback_conservative(void **state)
{
	struct store *st = open_ro();
	struct classify_result res;

	(void)state;
	/* two MRs' covers in References, both with this patch 2: two
	 * candidates, so the mail stays where threading put it (the
	 * newest reference: the cover of !13) */
	run(&res,
	    "Subject: Re: [PATCH 2/3] list: grow on demand\n"
	    "References: <s12-0@lists.example.org> "
	    "<s13-0@lists.example.org>\n",
	    reply_body2, st);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	assert_int_equal(res.via, CLASSIFY_VIA_THREAD_MAP);
	assert_int_equal(res.iid, 13);
	assert_int_equal(res.patch, 0);
	classify_result_release(&res);

	/* the quote is not patch 2's: no move */
	run(&res,
	    "Subject: Re: [PATCH 2/3] list: grow on demand\n"
	    "References: <s12-0@lists.example.org>\n",
	    "> -Version one.\n> +Version two, with growth.\n\nNice.\n", st);
	assert_int_equal(res.via, CLASSIFY_VIA_THREAD_MAP);
	assert_int_equal(res.patch, 0);
	classify_result_release(&res);

	/* a revision that is not the open one (v2 was never mailed) */
	run(&res,
	    "Subject: Re: [PATCH v2 2/3] list: grow on demand\n"
	    "References: <s12-0@lists.example.org>\n",
	    reply_body2, st);
	assert_int_equal(res.via, CLASSIFY_VIA_THREAD_MAP);
	assert_int_equal(res.patch, 0);
	classify_result_release(&res);

	/* one quoted line is not a fingerprint */
	run(&res,
	    "Subject: Re: [PATCH 2/3] list: grow on demand\n"
	    "References: <s12-0@lists.example.org>\n",
	    "> +\tl->generation++;\n\nWhy?\n", st);
	assert_int_equal(res.patch, 0);
	classify_result_release(&res);
	store_free(st);
}

/* Each marker of the bridge's own mail makes it a loop, early and at EOM. */
static void expect_loop(const char *headers, const char *sender,
			const char *reason)
{
	struct classify_input in;
	struct classify_result res;
	struct buf raw;

	build(&in, &raw, headers, "body\n");
	if (sender)
		classify_sender(&in, sender);
	classify_result_init(&res);
	classify_early(&res, &in, &opts);
	assert_int_equal(res.verdict, CLASSIFY_LOOP);
	assert_string_equal(res.reason, reason);
	classify_eom(&res, &in, raw.data, raw.len, NULL, &opts);
	assert_int_equal(res.verdict, CLASSIFY_LOOP);
	classify_result_release(&res);
	classify_input_release(&in);
	buf_release(&raw);
}

static void test_loop_guards(void **state)
{
	struct buf id, hdr = BUF_INIT(4096);
	const char *threaded = "In-Reply-To: <s12-2@lists.example.org>\n";

	(void)state;
	/* our scheme in the mail's own Message-ID (a forge comment the
	 * bridge mailed, threaded under the patch) */
	our_id(&id, "g/p", 1, 2, 3, DOMAIN);
	buf_addf(&hdr, "Message-ID: <%s>\n%s", id.data, threaded);
	expect_loop(hdr.data, NULL, "own-message-id");
	/* upper-case domain is the same domain */
	buf_release(&id);
	our_id(&id, "g/p", 1, 2, 3, "BRIDGE.Example.ORG");
	buf_reset(&hdr);
	buf_addf(&hdr, "Message-ID: <%s>\n%s", id.data, threaded);
	expect_loop(hdr.data, NULL, "own-message-id");

	buf_reset(&hdr);
	buf_addf(&hdr, "X-Patchbridge-Series: g/p!12 v1\n%s", threaded);
	expect_loop(hdr.data, NULL, "x-patchbridge-header");
	buf_reset(&hdr);
	buf_addf(&hdr, "x-patchbridge: reply g/p!12 v1 2/3; queued\n%s",
		 threaded);
	expect_loop(hdr.data, NULL, "x-patchbridge-header");

	buf_reset(&hdr);
	buf_addf(&hdr, "Auto-Submitted: auto-replied\n%s", threaded);
	expect_loop(hdr.data, NULL, "auto-submitted");
	buf_reset(&hdr);
	buf_addf(&hdr, "Auto-Submitted: Auto-Replied (vacation)\n%s", threaded);
	expect_loop(hdr.data, NULL, "auto-submitted");

	buf_reset(&hdr);
	buf_addf(&hdr,
		 "From: \"The Bridge\" <PatchBridge@Bridge.Example.org>\n%s",
		 threaded);
	expect_loop(hdr.data, NULL, "from-bridge");
	expect_loop(threaded, "<patchbridge@bridge.example.org>",
		    "from-bridge");
	/* the From forms mail.c reads: the address first, a name glued */
	buf_reset(&hdr);
	buf_addf(&hdr, "From: patchbridge@bridge.example.org (The Bridge)\n%s",
		 threaded);
	expect_loop(hdr.data, NULL, "from-bridge");
	buf_reset(&hdr);
	buf_addf(&hdr,
		 "From: =?utf-8?q?Bridge?=patchbridge@bridge.example.org\n%s",
		 threaded);
	expect_loop(hdr.data, NULL, "from-bridge");

	buf_release(&id);
	buf_release(&hdr);
}

static void test_not_loops(void **state)
{
	struct store *st = open_ro();
	struct classify_result res;

	(void)state;
	/* look-alikes of the markers are ordinary mail */
	run(&res,
	    "X-Patchbridgeish: yes\n"
	    "Auto-Submitted: no\n"
	    "From: Someone <patchbridge@elsewhere.example.org>\n"
	    "Message-ID: <pb.v1.2-3.g.p.12.111111111111@other.example.org>\n"
	    "In-Reply-To: <s12-2@lists.example.org>\n",
	    "Looks good.\n", st);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	classify_result_release(&res);
	/* a bot's report (RFC 3834 auto-generated) is read for its words;
	 * the inbound side makes no approval of it (review_bot()) */
	run(&res,
	    "Auto-Submitted: auto-generated\n"
	    "From: CI <ci@example.org>\n"
	    "In-Reply-To: <s12-2@lists.example.org>\n",
	    "Build failed.\n", st);
	assert_int_equal(res.verdict, CLASSIFY_BRIDGE);
	classify_result_release(&res);
	store_free(st);
}

static void test_irrelevant(void **state)
{
	struct store *st = open_ro();
	struct classify_input in;
	struct classify_result res;
	struct buf raw;

	(void)state;
	/* no threading headers: decided from the headers alone */
	build(&in, &raw,
	      "From: a@example.org\nSubject: [ANNOUNCE] release 1.0\n",
	      "Hello.\n");
	classify_result_init(&res);
	classify_early(&res, &in, &opts);
	assert_int_equal(res.verdict, CLASSIFY_PASS);
	assert_string_equal(res.reason, "unthreaded");
	classify_result_release(&res);
	classify_input_release(&in);
	buf_release(&raw);

	/* a "Re: [PATCH]" subject with no quote of any patch */
	run(&res, "Subject: Re: [PATCH 2/3] list: grow on demand\n",
	    "Thanks, applied.\n", st);
	assert_int_equal(res.verdict, CLASSIFY_PASS);
	classify_result_release(&res);

	/* threaded, but under mail the bridge never sent */
	run(&res,
	    "In-Reply-To: <x@example.org>\n"
	    "References: <w@example.org> <x@example.org>\n",
	    "Me too.\n", st);
	assert_int_equal(res.verdict, CLASSIFY_PASS);
	assert_string_equal(res.reason, "not-bridged");
	classify_result_release(&res);
	store_free(st);
}

/* classify_headers() against the store: what the milter asks at the end
 * of the header. */
static enum classify_verdict at_eoh(struct classify_result *res,
				    const char *headers,
				    const struct threadmap *tm)
{
	struct classify_input in;
	struct buf raw;

	build(&in, &raw, headers, "");
	classify_result_init(res);
	classify_headers(res, &in, tm, &opts);
	classify_input_release(&in);
	buf_release(&raw);
	return res->verdict;
}

/* A map provider that counts its lookups and may fail them. */
struct counting_map {
	struct threadmap inner;
	int calls;
	int fail; /* answer PB_ETEMP */
};

static int counting_get(void *arg, struct threadmap_mail *out, const char *id)
{
	struct counting_map *cm = arg;

	cm->calls++;
	if (cm->fail)
		return err_set(PB_ETEMP, "the map is busy");
	return cm->inner.mail_get(cm->inner.arg, out, id);
}

static int counting_list(void *arg, struct threadmap_revision_list *out)
{
	struct counting_map *cm = arg;

	cm->calls++;
	if (cm->fail)
		return err_set(PB_ETEMP, "the map is busy");
	return cm->inner.revision_list(cm->inner.arg, out);
}

static void test_headers_before_body(void **state)
{
	static const char *const pass[] = {
		/* threaded under mail the bridge never sent */
		"In-Reply-To: <x@example.org>\n"
		"References: <w@example.org> <x@example.org>\n",
		"References: <w@example.org>\n",
		/* another domain's ids that look like ours */
		"Subject: Re: lunch\n"
		"In-Reply-To: <pb.v1.1-3.g.p.12.0123456789ab@elsewhere.org>\n",
		/* a patch reply that no open revision could take: no MR at
		 * v7, none of 9 patches, a counter the fallback refuses */
		"Subject: Re: [PATCH v7 2/3] list: grow on demand\n"
		"In-Reply-To: <x@example.org>\n",
		"Subject: Re: [PATCH 2/9] list: grow on demand\n",
		"Subject: Re: [PATCH 4/3] list: grow on demand\n"
		"In-Reply-To: <x@example.org>\n",
		NULL,
	};
	static const char *const candidate[] = {
		/* in the map */
		"In-Reply-To: <s12-2@lists.example.org>\n",
		"In-Reply-To: <x@example.org>\n"
		"References: <s12-0@lists.example.org> <x@example.org>\n",
		/* the subject fallback may place it at the end */
		"Subject: Re: [PATCH 2/3] list: grow on demand\n"
		"In-Reply-To: <x@example.org>\n",
		"Subject: =?UTF-8?Q?Re:_[PATCH_2/3]_list?=\n"
		"In-Reply-To: <x@example.org>\n",
		NULL,
	};
	struct store *st = open_ro();
	struct counting_map cm;
	struct threadmap tm;
	struct classify_result res;
	struct buf id, hdr = BUF_INIT(4096);
	size_t i;

	(void)state;
	store_threadmap(&cm.inner, st);
	cm.calls = 0;
	cm.fail = 0;
	memset(&tm, 0, sizeof(tm));
	tm.mail_get = counting_get;
	tm.revision_list = counting_list;
	tm.arg = &cm;
	for (i = 0; pass[i]; i++) {
		assert_int_equal(at_eoh(&res, pass[i], &tm), CLASSIFY_PASS);
		assert_string_equal(res.reason, "not-bridged");
		classify_result_release(&res);
		/* the end of message would not bridge it either */
		run(&res, pass[i], "> -old\n> +new\nMe too.\n", st);
		assert_int_equal(res.verdict, CLASSIFY_PASS);
		classify_result_release(&res);
	}
	for (i = 0; candidate[i]; i++) {
		assert_int_equal(at_eoh(&res, candidate[i], &tm),
				 CLASSIFY_CANDIDATE);
		classify_result_release(&res);
	}
	/* unthreaded and the loop guard: as classify_early() */
	assert_int_equal(at_eoh(&res, "Subject: [ANNOUNCE] 1.0\n", &tm),
			 CLASSIFY_PASS);
	assert_string_equal(res.reason, "unthreaded");
	classify_result_release(&res);
	assert_int_equal(at_eoh(&res,
				"Auto-Submitted: auto-replied\n"
				"In-Reply-To: <s12-2@lists.example.org>\n",
				&tm),
			 CLASSIFY_LOOP);
	classify_result_release(&res);

	/* our scheme decides without asking the map */
	our_id(&id, "g/q", 2, 1, 4, DOMAIN);
	buf_addf(&hdr, "In-Reply-To: <%s>\n", id.data);
	cm.calls = 0;
	assert_int_equal(at_eoh(&res, hdr.data, &tm), CLASSIFY_CANDIDATE);
	assert_int_equal(cm.calls, 0);
	classify_result_release(&res);

	/* the map down, or failing: the end of message decides */
	assert_int_equal(at_eoh(&res, pass[0], NULL), CLASSIFY_CANDIDATE);
	classify_result_release(&res);
	cm.fail = 1;
	assert_int_equal(at_eoh(&res, pass[0], &tm), CLASSIFY_CANDIDATE);
	assert_int_equal(res.map_failed, 1);
	classify_result_release(&res);
	/* the open revisions cannot be listed */
	assert_int_equal(at_eoh(&res, "Subject: Re: [PATCH 2/9] x\n", &tm),
			 CLASSIFY_CANDIDATE);
	assert_int_equal(res.map_failed, 1);
	classify_result_release(&res);

	buf_release(&id);
	buf_release(&hdr);
	store_free(st);
}

static void test_header_parsing(void **state)
{
	struct classify_input in;
	size_t i;

	(void)state;
	classify_input_init(&in);
	classify_header(&in, "In-Reply-To",
			"Your message of Monday <a@x> (and <b@x>)");
	classify_header(&in, "References", "<r1@x>\n\t<r2@x> junk <>");
	classify_header(&in, "From", "Name <Mixed@Case.Example>");
	classify_header(&in, "Message-ID", "  <own@x>  ");
	assert_string_equal(in.in_reply_to, "a@x");
	assert_int_equal(in.references.nr, 2);
	assert_string_equal(in.references.items[1], "r2@x");
	assert_string_equal(in.from, "mixed@case.example");
	assert_string_equal(in.message_id, "own@x");
	/* references are capped, keeping the newest */
	for (i = 0; i < CLASSIFY_REFS_MAX + 10; i++) {
		char v[64];

		snprintf(v, sizeof(v), "<n%zu@x>", i);
		classify_header(&in, "References", v);
	}
	assert_int_equal(in.references.nr, CLASSIFY_REFS_MAX);
	assert_string_equal(in.references.items[CLASSIFY_REFS_MAX - 1],
			    "n73@x");
	classify_input_release(&in);
}

/*
 * Two Message-ID fields: the milter (header by header) and the parser
 * (patchbridge parse, the daemon) take the same one, the first, so the
 * id the journal keys is the one `parse` shows; the parser says so.
 */
static void test_duplicate_message_id_one_rule(void **state)
{
	static const char raw[] = "From: Bob <bob@corp.example>\n"
				  "Subject: Re: [PATCH 1/2] x\n"
				  "Message-ID: <first@corp.example>\n"
				  "Message-ID: <second@corp.example>\n"
				  "In-Reply-To: <p@bridge.example.org>\n"
				  "\n"
				  "Looks good.\n";
	struct classify_input in;
	struct mail *m = NULL;
	size_t i;
	int found = 0;

	(void)state;
	classify_input_init(&in);
	classify_header(&in, "Message-ID", "<first@corp.example>");
	classify_header(&in, "Message-ID", "<second@corp.example>");
	assert_string_equal(in.message_id, "first@corp.example");
	classify_input_release(&in);

	assert_int_equal(mail_parse(&m, raw, sizeof(raw) - 1, NULL), 0);
	assert_string_equal(m->message_id, "<first@corp.example>");
	for (i = 0; i < m->notes.nr; i++)
		found |= !strcmp(m->notes.items[i],
				 "2 Message-ID fields: the first counts, as "
				 "the milter reads it");
	assert_true(found);
	/* GMime calls two different ids conflicting: no approvals */
	assert_true(m->flags & MAIL_F_AMBIGUOUS);
	mail_free(m);
}

/* classify_eom() through a cache: one parse per row, the same diff after. */
static void test_parent_diff_cache(void **state)
{
	struct diffcache *dc = diffcache_new();
	struct classify_diffs hooks;
	struct classify_opts copts = opts;
	struct classify_input in;
	struct classify_result res[2];
	struct threadmap tm;
	struct store *st = open_ro();
	struct buf raw;
	size_t entries, bytes;
	int i;

	(void)state;
	diffcache_hooks(&hooks, dc);
	copts.diffs = &hooks;
	store_threadmap(&tm, st);
	for (i = 0; i < 2; i++) {
		build(&in, &raw,
		      "From: Rev Iewer <rev@example.org>\n"
		      "Subject: Re: [PATCH 2/3] list: grow on demand\n"
		      "Message-ID: <r1@example.org>\n"
		      "In-Reply-To: <s12-2@lists.example.org>\n",
		      reply_body2);
		classify_result_init(&res[i]);
		assert_int_equal(classify_eom(&res[i], &in, raw.data, raw.len,
					      &tm, &copts),
				 0);
		classify_input_release(&in);
		buf_release(&raw);
		assert_int_equal(res[i].verdict, CLASSIFY_BRIDGE);
		assert_non_null(res[i].parent);
		diffcache_stats(dc, &entries, &bytes);
		assert_int_equal(entries, 1);
		assert_true(bytes > 0);
	}
	/* the second mail got the diff the first one parsed */
	assert_ptr_equal(res[0].parent, res[1].parent);
	assert_true(res[1].parent->nr_lines > 0);
	/* each holds a reference of its own, the cache one more */
	classify_result_release(&res[0]);
	diffcache_free(dc);
	assert_true(res[1].parent->nr_lines > 0);
	classify_result_release(&res[1]);
	store_free(st);
}

/* Keyed by id, checked by the text: other text is a miss; bounded. */
static void test_diffcache_bounds(void **state)
{
	static const char text1[] = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
	static const char text2[] = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+c\n";
	struct diffcache *dc = diffcache_new();
	struct diff *d, *got;
	size_t entries, bytes;
	char id[64];
	int i;

	(void)state;
	assert_int_equal(diff_parse(&d, text1, strlen(text1)), 0);
	diffcache_put(dc, "p1@x", text1, strlen(text1), d);
	got = diffcache_get(dc, "p1@x", text1, strlen(text1));
	assert_ptr_equal(got, d);
	diff_free(got);
	/* the row written again with other text: never the old diff */
	assert_null(diffcache_get(dc, "p1@x", text2, strlen(text2)));
	assert_null(diffcache_get(dc, "p1@x", text1, strlen(text1) - 1));
	assert_null(diffcache_get(dc, "p2@x", text1, strlen(text1)));
	/* more rows than it keeps: the oldest go, the newest stay */
	for (i = 0; i < DIFFCACHE_ENTRIES_MAX + 10; i++) {
		snprintf(id, sizeof(id), "n%d@x", i);
		diffcache_put(dc, id, text1, strlen(text1), d);
	}
	diffcache_stats(dc, &entries, &bytes);
	assert_int_equal(entries, DIFFCACHE_ENTRIES_MAX);
	assert_null(diffcache_get(dc, "p1@x", text1, strlen(text1)));
	assert_null(diffcache_get(dc, "n0@x", text1, strlen(text1)));
	got = diffcache_get(dc, id, text1, strlen(text1));
	assert_ptr_equal(got, d);
	diff_free(got);
	diffcache_free(dc);
	/* the caller's own reference outlives the cache */
	assert_true(d->nr_lines > 0);
	diff_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_map_in_reply_to),
		cmocka_unit_test(test_submission),
		cmocka_unit_test(test_thread_map_references_newest_first),
		cmocka_unit_test(test_msgid_fallback),
		cmocka_unit_test(test_subject_fallback_one_candidate),
		cmocka_unit_test(test_subject_fallback_unthreaded),
		cmocka_unit_test(test_subject_fallback_conservative),
		cmocka_unit_test(test_loop_guards),
		cmocka_unit_test(test_not_loops),
		cmocka_unit_test(test_irrelevant),
		cmocka_unit_test(test_headers_before_body),
		cmocka_unit_test(test_header_parsing),
		cmocka_unit_test(test_duplicate_message_id_one_rule),
		cmocka_unit_test(test_parent_diff_cache),
		cmocka_unit_test(test_diffcache_bounds),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
