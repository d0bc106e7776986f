/*
 * inbound/provenance: a trailer already in a mail the reply answers is a
 * quotation, however it came back; a reply to a mail the bridge never
 * saw accounts for nothing; headers that name two MRs are a conflict.
 * The look-ups are a table here, the store in the daemon.
 */
#include "cmocka_all.h"
#include "inbound/approval.h"
#include "inbound/plan.h"
#include "inbound/provenance.h"
#include "mail/mail.h"
#include "mail/review.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct known {
	const char *id;
	const char *project; /* NULL: not placed */
	int64_t iid;
	int revision, patch;
	const char *raw; /* NULL: not archived */
};

static const char patch1[] = "From: Alice <alice@example.com>\n"
			     "Subject: [PATCH v2 1/2] hello: greet\n"
			     "Message-ID: <p1.v2@bridge.example>\n"
			     "\n"
			     "Greet more loudly.\n"
			     "\n"
			     "Signed-off-by: Alice <alice@example.com>\n"
			     "Reviewed-by: Rita Reviewer <rita@corp.example>\n"
			     "---\n"
			     " src/hello.c | 2 +-\n";

/* The attacker's bait: the maintainer's ack in a reply of his own. */
static const char bait[] = "From: Mallory <mallory@evil.example>\n"
			   "Subject: Re: [PATCH v2 1/2] hello: greet\n"
			   "Message-ID: <x1@evil.example>\n"
			   "In-Reply-To: <p1.v2@bridge.example>\n"
			   "\n"
			   "Bob, could you answer this one?\n"
			   "\n"
			   "Acked-by: Bob Maintainer <bob@corp.example>\n";

/* The same bait, base64 (what the maintainer's client shows decoded). */
static const char bait64[] =
	"From: Mallory <mallory@evil.example>\n"
	"Subject: Re: [PATCH v2 1/2] hello: greet\n"
	"Message-ID: <x2@evil.example>\n"
	"MIME-Version: 1.0\n"
	"Content-Type: text/plain; charset=utf-8\n"
	"Content-Transfer-Encoding: base64\n"
	"\n"
	/* "Please ack.\n\nAcked-by: Bob Maintainer <bob@corp.example>\n" */
	"UGxlYXNlIGFjay4KCkFja2VkLWJ5OiBCb2IgTWFpbnRhaW5lciA8Ym9iQGNvcnAu\n"
	"ZXhhbXBsZS5jb20+Cg==\n";

/* Wrapped by the attacker's client before the address. */
static const char baitwrap[] = "From: Mallory <mallory@evil.example>\n"
			       "Subject: Re: [PATCH v2 1/2] hello: greet\n"
			       "Message-ID: <x3@evil.example>\n"
			       "\n"
			       "> Acked-by: Bob Maintainer\n"
			       "> <bob@corp.example>\n";

static const struct known table[] = {
	{ "c.v2@bridge.example", "group/project", 1, 2, 0,
	  "Subject: [PATCH v2 0/2] greet\n\nThe cover.\n" },
	{ "p1.v2@bridge.example", "group/project", 1, 2, 1, patch1 },
	{ "c.v1@bridge.example", "group/project", 1, 1, 0,
	  "Subject: [PATCH 0/2] greet\n\nThe cover.\n" },
	{ "x1@evil.example", "group/project", 1, 2, 1, bait },
	{ "x2@evil.example", "group/project", 1, 2, 1, bait64 },
	{ "x3@evil.example", "group/project", 1, 2, 1, baitwrap },
	{ "other@bridge.example", "group/other", 7, 1, 1,
	  "Subject: [PATCH 1/1] other\n\nAnother MR.\n" },
	{ "v3@bridge.example", "group/project", 1, 3, 1,
	  "Subject: [PATCH v3 1/2] greet\n\nv3.\n" },
};

static const struct known *find(const char *id)
{
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i].id, id))
			return &table[i];
	return NULL;
}

static int t_place(struct provenance_place *out, const char *id, void *arg)
{
	const struct known *k = find(id);

	(void)arg;
	if (!k || !k->project)
		return PB_ENOTFOUND;
	snprintf(out->project, sizeof(out->project), "%s", k->project);
	out->iid = k->iid;
	out->revision = k->revision;
	out->patch = k->patch;
	return 0;
}

static int t_archived(struct buf *raw, const char *id, void *arg)
{
	const struct known *k = find(id);

	(void)arg;
	if (!k || !k->raw)
		return PB_ENOTFOUND;
	return buf_adds(raw, k->raw);
}

static const struct provenance_ops ops = { t_place, t_archived, NULL };

/* Bob's verified reply: subject, In-Reply-To, References, body. */
static void check(struct provenance *pv, struct review **r, const char *subject,
		  const char *irt, const char *refs, const char *body)
{
	char mail[4096];

	snprintf(mail, sizeof(mail),
		 "From: Bob Maintainer <bob@corp.example>\n"
		 "Subject: %s\n"
		 "Message-ID: <r1@corp.example>\n"
		 "%s%s%s"
		 "%s%s%s"
		 "\n%s",
		 subject, irt ? "In-Reply-To: <" : "", irt ? irt : "",
		 irt ? ">\n" : "", refs ? "References: " : "", refs ? refs : "",
		 refs ? "\n" : "", body);
	assert_int_equal(review_parse(r, mail, strlen(mail), NULL, NULL), 0);
	assert_int_equal(provenance_check(pv, *r, &ops), 0);
}

#define RE "Re: [PATCH v2 1/2] hello: greet"
#define ACK "Acked-by: Bob Maintainer <bob@corp.example>\n"

/* The bait pasted back with no quote, separator or header block: a
 * format no rule recognises; the parent holds it, so it is a quote. */
static void test_bait_pasted_without_separator(void **state)
{
	static const char *const baits[] = { "x1@evil.example",
					     "x2@evil.example",
					     "x3@evil.example" };
	struct provenance pv;
	struct review *r = NULL;
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		char refs[256];

		snprintf(refs, sizeof(refs),
			 "<c.v2@bridge.example> <p1.v2@bridge.example> <%s>",
			 baits[i]);
		check(&pv, &r, RE, baits[i], refs, "Sure, I will.\n\n" ACK);
		assert_int_equal(r->trailers.nr, 1);
		assert_true(r->trailers.v[0].flags & TRAILER_F_BLOCK);
		if (!pv.quoted[0])
			fail_msg("bait %s not found in the parent", baits[i]);
		assert_false(pv.parent_unknown);
		assert_false(pv.thread_conflict);
		assert_int_equal(pv.ancestors, 3);
		provenance_release(&pv);
		review_free(r);
	}
	/* the same words in answer to the bridge's patch are his own */
	check(&pv, &r, RE, "p1.v2@bridge.example",
	      "<c.v2@bridge.example> <p1.v2@bridge.example>",
	      "Sure, I will.\n\n" ACK);
	assert_false(pv.quoted[0]);
	assert_false(pv.parent_unknown);
	provenance_release(&pv);
	review_free(r);
}

/*
 * The honest case the rule touches: v2 carries Rita's Reviewed-by from
 * v1, and Rita gives it again.  It is in the patch, so it is read as a
 * quotation: not acted on (docs/SECURITY.md says why and what to do).
 */
static void test_collected_trailer_given_again(void **state)
{
	struct provenance pv;
	struct review *r = NULL;
	char mail[1024];

	(void)state;
	snprintf(mail, sizeof(mail),
		 "From: Rita Reviewer <rita@corp.example>\n"
		 "Subject: " RE "\n"
		 "In-Reply-To: <p1.v2@bridge.example>\n"
		 "\nStill good.\n\n"
		 "Reviewed-by: Rita Reviewer <rita@corp.example>\n");
	assert_int_equal(review_parse(&r, mail, strlen(mail), NULL, NULL), 0);
	assert_int_equal(provenance_check(&pv, r, &ops), 0);
	assert_true(pv.quoted[0]);
	provenance_release(&pv);
	review_free(r);
}

static void test_parent_unknown(void **state)
{
	struct provenance pv;
	struct review *r = NULL;

	(void)state;
	/* answered off the list */
	check(&pv, &r, RE, "private@corp.example",
	      "<c.v2@bridge.example> <private@corp.example>", ACK);
	assert_true(pv.parent_unknown);
	provenance_release(&pv);
	review_free(r);
	/* no threading at all */
	check(&pv, &r, RE, NULL, NULL, ACK);
	assert_true(pv.parent_unknown);
	provenance_release(&pv);
	review_free(r);
	/* the last References entry is the parent without In-Reply-To */
	check(&pv, &r, RE, NULL, "<c.v2@bridge.example> <p1.v2@bridge.example>",
	      ACK);
	assert_false(pv.parent_unknown);
	assert_true(pv.parent_placed);
	assert_int_equal(pv.parent.patch, 1);
	provenance_release(&pv);
	review_free(r);
}

static void test_thread_conflict(void **state)
{
	struct provenance pv;
	struct review *r = NULL;

	(void)state;
	/* References ending with another MR's patch */
	check(&pv, &r, RE, "p1.v2@bridge.example",
	      "<c.v2@bridge.example> <other@bridge.example> "
	      "<p1.v2@bridge.example>",
	      ACK);
	assert_true(pv.thread_conflict);
	assert_true(pv.parent_placed);
	assert_string_equal(pv.parent.project, "group/project");
	provenance_release(&pv);
	review_free(r);
	/* a newer revision than the parent's among the References */
	check(&pv, &r, RE, "p1.v2@bridge.example",
	      "<v3@bridge.example> <p1.v2@bridge.example>", ACK);
	assert_true(pv.thread_conflict);
	provenance_release(&pv);
	review_free(r);
	/* the subject names another revision */
	check(&pv, &r, "Re: [PATCH v3 1/2] hello: greet",
	      "p1.v2@bridge.example", "<p1.v2@bridge.example>", ACK);
	assert_true(pv.thread_conflict);
	provenance_release(&pv);
	review_free(r);
	/* an older revision's cover through a re-roll's threading: fine */
	check(&pv, &r, RE, "p1.v2@bridge.example",
	      "<c.v1@bridge.example> <c.v2@bridge.example> "
	      "<p1.v2@bridge.example>",
	      ACK);
	assert_false(pv.thread_conflict);
	provenance_release(&pv);
	review_free(r);
}

/* Over PROVENANCE_IDS_MAX References: not all can be read, so the
 * reply accounts for nothing. */
static void test_too_many_references(void **state)
{
	struct provenance pv;
	struct review *r = NULL;
	char refs[PROVENANCE_IDS_MAX * 24 + 64];
	size_t i, n = 0;

	(void)state;
	for (i = 0; i <= PROVENANCE_IDS_MAX; i++)
		n += (size_t)snprintf(refs + n, sizeof(refs) - n,
				      "<r%zu@example.com> ", i);
	snprintf(refs + n, sizeof(refs) - n, "<p1.v2@bridge.example>");
	check(&pv, &r, RE, "p1.v2@bridge.example", refs, ACK);
	assert_true(pv.parent_unknown);
	provenance_release(&pv);
	review_free(r);
}

static void test_text_rules(void **state)
{
	struct trailer t;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.type = "Acked-by";
	t.name = (char *)"Bob Maintainer";
	t.email = (char *)"bob@corp.example";
	/* on a line of prose, in another case, quoted */
	assert_true(provenance_text_names(
		"> > please add Acked-by: BOB@corp.example thanks", 48, &t));
	assert_true(
		provenance_text_names("Acked by: Bob Maintainer\n", 25, &t));
	assert_false(provenance_text_names("Cc: Bob <bob@corp.example>\n"
					   "Reviewed-by: Al <al@x.org>\n",
					   54, &t));
	/* the tag's word in the address itself is no tag */
	t.type = "Reviewed-by";
	t.name = (char *)"Rob Reviewer";
	t.email = (char *)"rob@review.example";
	assert_false(provenance_text_names(
		"Cc: Rob Reviewer <rob@review.example>\n", 38, &t));
	assert_true(provenance_text_names(
		"Reviewed by Rob <rob@review.example>\n", 37, &t));
	assert_true(provenance_text_naks("> NACK.\n", 8));
	assert_true(provenance_text_naks("*NAK*\n", 6));
	assert_false(provenance_text_naks("NAK from the device\n", 20));
}

/* The plan acts on none of it, and says why. */
static void test_plan_refuses(void **state)
{
	static const unsigned char yes[1] = { 1 };
	struct review *r = NULL;
	struct plan p;
	struct plan_ctx ctx;
	static const char mail[] = "From: Bob Maintainer <bob@corp.example>\n"
				   "Subject: " RE "\n"
				   "In-Reply-To: <x1@evil.example>\n"
				   "\nOK.\n\n" ACK;

	(void)state;
	assert_int_equal(review_parse(&r, mail, strlen(mail), NULL, NULL), 0);
	memset(&ctx, 0, sizeof(ctx));
	ctx.policy = CONFIG_APPROVAL_FORGE;
	ctx.quoted = yes;
	assert_int_equal(plan_build(&p, r, &ctx), 0);
	assert_int_equal(p.nr, 1);
	assert_int_equal(p.v[0].kind, PLAN_COMMENT);
	assert_non_null(strstr(p.v[0].body, "in a mail this one answers"));
	assert_non_null(strstr(p.verdicts.items[0], "quotation"));
	plan_release(&p);
	ctx.quoted = NULL;
	ctx.parent_unknown = 1;
	assert_int_equal(plan_build(&p, r, &ctx), 0);
	assert_non_null(strstr(p.v[0].body, "never reached the list"));
	plan_release(&p);
	ctx.parent_unknown = 0;
	ctx.thread_conflict = 1;
	assert_int_equal(plan_build(&p, r, &ctx), 0);
	assert_non_null(strstr(p.v[0].body, "do not agree"));
	plan_release(&p);
	review_free(r);
}

static int setup(void **state)
{
	(void)state;
	return mail_init();
}

static int teardown(void **state)
{
	(void)state;
	mail_shutdown();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bait_pasted_without_separator),
		cmocka_unit_test(test_collected_trailer_given_again),
		cmocka_unit_test(test_parent_unknown),
		cmocka_unit_test(test_thread_conflict),
		cmocka_unit_test(test_too_many_references),
		cmocka_unit_test(test_text_rules),
		cmocka_unit_test(test_plan_refuses),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
