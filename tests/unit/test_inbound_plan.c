/*
 * inbound: the approval decision table, action planning (order, fixed
 * indexes, bodies), marker keys and the user map.
 */
#include "cmocka_all.h"
#include "inbound/apply.h"
#include "inbound/approval.h"
#include "inbound/escape.h"
#include "inbound/inbound.h"
#include "inbound/marker.h"
#include "inbound/plan.h"
#include "inbound/position.h"
#include "inbound/usermap.h"
#include "mail/diff.h"
#include "mail/mail.h"
#include "mail/review.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/strlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * The decision table: every combination of the facts.
 */
static void test_decision_table(void **state)
{
	static const enum config_approval_policy policies[] = {
		CONFIG_APPROVAL_OWNERS, CONFIG_APPROVAL_FORGE,
		CONFIG_APPROVAL_NONE
	};
	unsigned combo, grants = 0;

	(void)state;
	/* bits: verified, mapped, sender, require_auth, owner, nak,
	 * ambiguous, in a trailer block, loose, thread conflict, quoted,
	 * unaccounted; and the policy on top */
	for (combo = 0; combo < 3 * 4096; combo++) {
		int verified = combo & 1, mapped = combo >> 1 & 1;
		int sender = combo >> 2 & 1, auth = combo >> 3 & 1;
		int owner = combo >> 4 & 1, nak = combo >> 5 & 1;
		int ambiguous = combo >> 6 & 1, block = combo >> 7 & 1;
		int loose = combo >> 8 & 1, conflict = combo >> 9 & 1;
		int quoted = combo >> 10 & 1, unaccounted = combo >> 11 & 1;
		enum config_approval_policy pol = policies[combo / 4096];
		enum approval_verdict want, got;
		struct approval_facts f;

		memset(&f, 0, sizeof(f));
		f.type = "Acked-by";
		f.names_sender = sender;
		f.nak = nak;
		f.ambiguous = ambiguous;
		f.in_block = block;
		f.loose = loose;
		f.thread_conflict = conflict;
		f.quoted = quoted;
		f.unaccounted = unaccounted;
		f.verified = verified;
		f.require_auth = auth;
		f.policy = pol;
		f.user = mapped ? "bob" : NULL;
		f.owner = owner;
		if (nak)
			want = APPROVAL_NAK;
		else if (ambiguous)
			want = APPROVAL_AMBIGUOUS;
		else if (!block)
			want = APPROVAL_NOT_IN_BLOCK;
		else if (loose)
			want = APPROVAL_LOOSE;
		else if (!sender)
			want = APPROVAL_NOT_SENDER;
		else if (conflict)
			want = APPROVAL_THREAD_CONFLICT;
		else if (quoted)
			want = APPROVAL_QUOTED;
		else if (unaccounted)
			want = APPROVAL_UNACCOUNTED;
		else if (auth && !verified)
			want = APPROVAL_UNVERIFIED;
		else if (pol == CONFIG_APPROVAL_NONE)
			want = APPROVAL_DISABLED;
		else if (!mapped)
			want = APPROVAL_UNMAPPED;
		else if (pol == CONFIG_APPROVAL_OWNERS && !owner)
			want = APPROVAL_NOT_OWNER;
		else
			want = APPROVAL_GRANT;
		got = approval_decide(&f);
		if (got != want)
			fail_msg("combination %u: got %d, want %d", combo, got,
				 want);
		grants += got == APPROVAL_GRANT;
		/* Unverified with require_auth never approves, and nothing
		 * but an exact trailer block of the sender's own does. */
		if ((auth && !verified) || !block || loose || conflict ||
		    quoted || unaccounted)
			assert_int_not_equal(got, APPROVAL_GRANT);
	}
	/* sender, no NAK, mapped, verified or not required (3 ways), and
	 * an owner for "owners" (1) or anyone for "forge" (2) */
	assert_int_equal(grants, 9);
}

static void test_types_and_sender(void **state)
{
	struct approval_facts f;
	struct trailer t;
	struct mail_addr from = { (char *)"Bob Maintainer",
				  (char *)"bob@corp.example" };

	(void)state;
	memset(&f, 0, sizeof(f));
	f.names_sender = f.verified = f.require_auth = f.owner = 1;
	f.in_block = 1;
	f.policy = CONFIG_APPROVAL_OWNERS;
	f.user = "bob";
	f.type = "Reviewed-by";
	assert_int_equal(approval_decide(&f), APPROVAL_GRANT);
	f.type = "Tested-by";
	assert_int_equal(approval_decide(&f), APPROVAL_GRANT);
	f.type = "Reported-by";
	assert_int_equal(approval_decide(&f), APPROVAL_NOT_APPROVAL);
	f.type = "Suggested-by";
	assert_int_equal(approval_decide(&f), APPROVAL_NOT_APPROVAL);
	f.type = "Nacked-by";
	assert_int_equal(approval_decide(&f), APPROVAL_NOT_APPROVAL);

	memset(&t, 0, sizeof(t));
	t.type = "Acked-by";
	t.name = (char *)"Bob";
	t.email = (char *)"BOB@corp.example";
	assert_true(approval_names_sender(&t, &from));
	t.email = (char *)"carol@corp.example";
	assert_false(approval_names_sender(&t, &from));
	/* A name alone counts only when it is the sender's name. */
	t.email = NULL;
	assert_false(approval_names_sender(&t, &from));
	t.name = (char *)"bob maintainer";
	assert_true(approval_names_sender(&t, &from));
	t.name = (char *)"Bob  Maintainer";
	assert_true(approval_names_sender(&t, &from));
	t.name = (char *)"Bob";
	assert_false(approval_names_sender(&t, &from));
	/* Outlook's "Last, First" */
	from.name = (char *)"Maintainer, Bob";
	t.name = (char *)"Bob Maintainer";
	assert_true(approval_names_sender(&t, &from));

	/* a tag inside a sentence never approves */
	f.type = "Acked-by";
	f.in_sentence = 1;
	assert_int_equal(approval_decide(&f), APPROVAL_IN_SENTENCE);
	assert_non_null(strstr(approval_verdict_text(APPROVAL_IN_SENTENCE),
			       "line of its own"));
}

/*
 * Planning.
 */

static const char patch_mail[] =
	"From: Alice <alice@example.com>\n"
	"Subject: [PATCH v1 1/2] hello: greet more loudly\n"
	"Message-ID: <p1@bridge.example>\n"
	"\n"
	"Signed-off-by: Alice <alice@example.com>\n"
	"---\n"
	"diff --git a/src/hello.c b/src/hello.c\n"
	"index 1111111..2222222 100644\n"
	"--- a/src/hello.c\n"
	"+++ b/src/hello.c\n"
	"@@ -1,6 +1,6 @@\n"
	" #include <stdio.h>\n"
	" int main(void)\n"
	" {\n"
	"-\tprintf(\"hello\\n\");\n"
	"+\tprintf(\"HELLO\\n\");\n"
	" \treturn 0;\n"
	" }\n";

#define REPLY_HEAD                                               \
	"From: Bob <bob@corp.example>\n"                         \
	"Subject: Re: [PATCH v1 1/2] hello: greet more loudly\n" \
	"Message-ID: <r1@corp.example>\n"                        \
	"In-Reply-To: <p1@bridge.example>\n"                     \
	"References: <c0@bridge.example> <p1@bridge.example>\n"

/* the verifier's field on top, as it inserts it */
static const char reply_mail[] =
	"Authentication-Results: lists.example.test; dkim=pass "
	"header.d=corp.example header.i=@corp.example\n" REPLY_HEAD "\n"
	"General comment first.\n"
	"/approve\n"
	"\n"
	"> -\tprintf(\"hello\\n\");\n"
	"> +\tprintf(\"HELLO\\n\");\n"
	"\n"
	"Why shout?\n"
	"\n"
	">  \treturn 0;\n"
	"\n"
	"Fine.\n"
	"\n"
	"Acked-by: Bob <bob@corp.example>\n"
	"Reviewed-by: Carol <carol@x.example>\n"
	"Reported-by: Dan <dan@x.example>\n";

static const char nak_mail[] = REPLY_HEAD "\n"
					  "> +\tprintf(\"HELLO\\n\");\n"
					  "\n"
					  "NAK.\n"
					  "\n"
					  "Why, shouting is rude.\n";

/* The same objection in a sentence: a mention, not acted on. */
static const char nak_prose_mail[] = REPLY_HEAD "\n"
						"> +\tprintf(\"HELLO\\n\");\n"
						"\n"
						"NAK, shouting is rude.\n";

struct fake {
	int lookups;
	int owner;
	int placeable;
	int fail;
};

static int fake_map(const char **user, const char *email, void *arg)
{
	struct fake *f = arg;

	f->lookups++;
	if (f->fail)
		return err_set(PB_ETEMP, "forge down");
	if (!strcmp(email, "bob@corp.example")) {
		*user = "bob";
		return 0;
	}
	return PB_ENOTFOUND;
}

static int fake_owner(int *owner, const char *email, enum trailer_scope s,
		      void *arg)
{
	struct fake *f = arg;

	(void)email;
	(void)s;
	*owner = f->owner;
	return 0;
}

static int fake_place(enum forge_line_kind *kind, int64_t *old_line,
		      int64_t *new_line, const struct review_inline *x,
		      void *arg)
{
	struct fake *f = arg;

	*old_line = x->old_line;
	*new_line = x->new_line;
	*kind = !x->old_line ? FORGE_LINE_ADDED :
		!x->new_line ? FORGE_LINE_REMOVED :
			       FORGE_LINE_CONTEXT;
	return f->placeable;
}

struct fixture {
	struct diff *parent;
	struct review *r;
	struct plan plan;
	struct plan_ctx ctx;
	struct fake fake;
};

static void setup_ctx(struct fixture *fx)
{
	memset(&fx->ctx, 0, sizeof(fx->ctx));
	fx->ctx.authserv_id = "lists.example.test";
	fx->ctx.require_auth = 1;
	fx->ctx.policy = CONFIG_APPROVAL_OWNERS;
	fx->ctx.revision = 1;
	fx->ctx.patch = 1;
	fx->ctx.total = 2;
	fx->ctx.parent = fx->parent;
	fx->ctx.place = fake_place;
	fx->ctx.map_user = fake_map;
	fx->ctx.is_owner = fake_owner;
	fx->ctx.arg = &fx->fake;
	fx->fake.owner = 1;
	fx->fake.placeable = 1;
}

static void parse(struct fixture *fx, const char *mail)
{
	struct review_options ro = {
		.trusted_authserv_id = "lists.example.test", .trusted_fields = 2
	};

	memset(fx, 0, sizeof(*fx));
	assert_int_equal(review_patch_diff(&fx->parent, patch_mail,
					   strlen(patch_mail)),
			 0);
	assert_int_equal(
		review_parse(&fx->r, mail, strlen(mail), fx->parent, &ro), 0);
	setup_ctx(fx);
}

static void done(struct fixture *fx)
{
	plan_release(&fx->plan);
	review_free(fx->r);
	diff_free(fx->parent);
}

static void test_plan_order(void **state)
{
	struct fixture fx;
	const struct plan_action *a;

	(void)state;
	parse(&fx, reply_mail);
	assert_true(fx.r->auth.verified);
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	assert_int_equal(fx.plan.nr, 4);
	a = fx.plan.v;
	assert_int_equal(a[0].index, PLAN_IDX_COMMENT);
	assert_int_equal(a[0].kind, PLAN_COMMENT);
	assert_int_equal(a[1].index, 1);
	assert_int_equal(a[1].kind, PLAN_DIFF_NOTE);
	assert_int_equal(a[1].line_kind, FORGE_LINE_ADDED);
	assert_int_equal(a[1].new_line, 4);
	assert_int_equal(a[1].old_line, 0);
	assert_string_equal(a[1].new_path, "src/hello.c");
	assert_int_equal(a[2].index, 2);
	assert_int_equal(a[2].line_kind, FORGE_LINE_CONTEXT);
	assert_int_equal(a[2].old_line, 5);
	assert_int_equal(a[2].new_line, 5);
	assert_int_equal(a[3].index, PLAN_IDX_APPROVE(0));
	assert_int_equal(a[3].kind, PLAN_APPROVE);
	assert_string_equal(a[3].user, "bob");
	assert_string_equal(plan_kind_name(a[3].kind), "approve");

	/* The comment: text escaped, each trailer's fate, the footer. */
	assert_non_null(strstr(a[0].body, "General comment first."));
	assert_non_null(strstr(a[0].body, "\\/approve"));
	assert_non_null(strstr(a[0].body, "approval by GitLab user bob"));
	assert_non_null(strstr(a[0].body, "Reviewed-by: Carol &lt;"));
	assert_non_null(strstr(a[0].body, "it names Carol"));
	assert_non_null(strstr(a[0].body, "Reported-by: Dan"));
	assert_non_null(strstr(a[0].body,
			       "Bob &lt;bob@corp.example&gt; via email, on "
			       "v1 1/2 (DKIM verified)"));
	/* The fallback quotes the line. */
	assert_non_null(strstr(a[1].fallback, "On src/hello.c line 4:"));
	assert_non_null(strstr(a[1].fallback,
			       "```diff\n+\tprintf(\"HELLO\\n\");\n```"));
	assert_non_null(strstr(a[1].body, "Why shout?"));

	/* Re-planning gives the same list. */
	{
		struct plan again;

		assert_int_equal(plan_build(&again, fx.r, &fx.ctx), 0);
		assert_int_equal(again.nr, fx.plan.nr);
		for (size_t i = 0; i < again.nr; i++) {
			assert_int_equal(again.v[i].index, fx.plan.v[i].index);
			assert_string_equal(
				again.v[i].body ? again.v[i].body : "",
				fx.plan.v[i].body ? fx.plan.v[i].body : "");
		}
		plan_release(&again);
	}
	done(&fx);
}

/*
 * A post the list wrapped for DMARC (Mailman's wrap_message): the
 * inner sender's Acked-by is honoured only when the configuration
 * trusts the list's own verification of the original, the outer
 * message is verified and comes from the list's address.
 */
/* The verifier's field on top, where it puts it (authres.h). */
#define WRAP_OUTER(from, outer_ar)                                           \
	outer_ar "From: Bob via Dev <" from ">\n"                            \
		 "Reply-To: Bob <bob@corp.example>\n"                        \
		 "To: dev@lists.example.test\n"                              \
		 "List-Id: <dev.lists.example.test>\n"                       \
		 "Subject: Re: [PATCH v1 1/2] hello: greet more loudly\n"    \
		 "Message-ID: <wrap1@lists.example.test>\n"                  \
		 "In-Reply-To: <p1@bridge.example>\n"                        \
		 "References: <c0@bridge.example> <p1@bridge.example>\n"     \
		 "MIME-Version: 1.0\n"                                       \
		 "Content-Type: message/rfc822\n"                            \
		 "Content-Disposition: inline\n"                             \
		 "\n"                                                        \
		 "Authentication-Results: mx.lists.example.test; dkim=pass " \
		 "header.d=corp.example\n"                                   \
		 "From: Bob <bob@corp.example>\n"                            \
		 "Subject: Re: [PATCH v1 1/2] hello: greet more loudly\n"    \
		 "Message-ID: <r9@corp.example>\n"                           \
		 "In-Reply-To: <p1@bridge.example>\n"                        \
		 "\n"                                                        \
		 "Looks right.\n"                                            \
		 "\n"                                                        \
		 "Acked-by: Bob <bob@corp.example>\n"

#define LIST_AR                                                  \
	"Authentication-Results: lists.example.test; dkim=pass " \
	"header.d=lists.example.test\n"

static int approves(const struct plan *p)
{
	size_t i;

	for (i = 0; i < p->nr; i++)
		if (p->v[i].kind == PLAN_APPROVE)
			return 1;
	return 0;
}

static void plan_wrap(struct fixture *fx, const char *mail, const char *list_id)
{
	struct review_options ro = {
		.trusted_authserv_id = "lists.example.test",
		.list_authserv_id = list_id,
		.list_address = "dev@lists.example.test",
	};

	memset(fx, 0, sizeof(*fx));
	assert_int_equal(review_patch_diff(&fx->parent, patch_mail,
					   strlen(patch_mail)),
			 0);
	assert_int_equal(
		review_parse(&fx->r, mail, strlen(mail), fx->parent, &ro), 0);
	setup_ctx(fx);
	assert_true(fx->r->mail->flags & MAIL_F_WRAPPED);
	assert_string_equal(fx->r->mail->from.email, "bob@corp.example");
	assert_int_equal(fx->r->trailers.nr, 1);
	assert_int_equal(plan_build(&fx->plan, fx->r, &fx->ctx), 0);
}

static void test_plan_dmarc_wrap(void **state)
{
	static const char good[] =
		WRAP_OUTER("dev@lists.example.test", LIST_AR);
	static const char other_list[] = WRAP_OUTER(
		"dev@evil.example",
		"Authentication-Results: "
		"lists.example.test; dkim=pass header.d=evil.example\n");
	static const char outer_unverified[] =
		WRAP_OUTER("dev@lists.example.test", "");
	struct fixture fx;

	(void)state;
	/* not trusted (the default): the inner sender is unverified */
	plan_wrap(&fx, good, NULL);
	assert_false(fx.r->auth.verified);
	assert_false(approves(&fx.plan));
	assert_non_null(strstr(fx.plan.v[0].body,
			       "its verification of the sender is not "
			       "trusted"));
	done(&fx);

	/* trusted: the list's verifier passed the inner From's domain */
	plan_wrap(&fx, good, "mx.lists.example.test");
	assert_true(fx.r->auth.verified);
	assert_true(fx.r->wrap_trusted);
	assert_true(approves(&fx.plan));
	assert_non_null(strstr(fx.plan.v[0].body, "verified by the list"));
	done(&fx);

	/* trusted, but the wrap is not the list's: anyone can wrap */
	plan_wrap(&fx, other_list, "mx.lists.example.test");
	assert_false(fx.r->auth.verified);
	assert_false(approves(&fx.plan));
	done(&fx);

	/* trusted, but nothing says the list sent it */
	plan_wrap(&fx, outer_unverified, "mx.lists.example.test");
	assert_false(fx.r->auth.verified);
	assert_false(approves(&fx.plan));
	done(&fx);

	/* trusted, but another verifier's field in the inner message */
	plan_wrap(&fx, good, "other.example");
	assert_false(fx.r->auth.verified);
	assert_false(approves(&fx.plan));
	done(&fx);
}

static void test_plan_refusals(void **state)
{
	struct fixture fx;

	(void)state;
	/* Not an owner: no approval, the comment says why. */
	parse(&fx, reply_mail);
	fx.fake.owner = 0;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	assert_int_equal(fx.plan.nr, 3);
	assert_non_null(strstr(fx.plan.v[0].body, "is not a maintainer or "
						  "reviewer in owners.yaml"));
	plan_release(&fx.plan);

	/* Policy none: nobody approves; no user lookup either. */
	fx.ctx.policy = CONFIG_APPROVAL_NONE;
	fx.fake.lookups = 0;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	assert_int_equal(fx.plan.nr, 3);
	assert_int_equal(fx.fake.lookups, 0);
	assert_non_null(strstr(fx.plan.v[0].body, "disabled"));
	plan_release(&fx.plan);

	/* Policy forge: mapped is enough, GitLab decides. */
	fx.ctx.policy = CONFIG_APPROVAL_FORGE;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	assert_int_equal(fx.plan.nr, 4);
	plan_release(&fx.plan);

	/* A forge outage during the lookup ends the planning. */
	fx.fake.fail = 1;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), PB_ETEMP);
	assert_int_equal(fx.plan.nr, 0);
	fx.fake.fail = 0;

	/* A position that cannot be placed: a plain note quoting it. */
	fx.ctx.policy = CONFIG_APPROVAL_OWNERS;
	fx.fake.placeable = 0;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	assert_int_equal(fx.plan.v[1].kind, PLAN_NOTE);
	assert_int_equal(fx.plan.v[1].index, 1);
	assert_non_null(strstr(fx.plan.v[1].body, "On src/hello.c line 4"));
	done(&fx);

	/* The same text without a DKIM pass. */
	{
		const char *p = strstr(reply_mail, "\n\n");
		char *mail = malloc(strlen(reply_mail) + 1);
		size_t head = strlen(REPLY_HEAD);

		memcpy(mail, REPLY_HEAD, head);
		strcpy(mail + head, p + 1);
		parse(&fx, mail);
		assert_false(fx.r->auth.verified);
		assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
		assert_int_equal(fx.plan.nr, 3);
		assert_non_null(strstr(fx.plan.v[0].body,
				       "the sender is not verified (no DKIM "
				       "or DMARC pass from "
				       "lists.example.test)"));
		assert_non_null(strstr(fx.plan.v[0].body,
				       "(not verified: no DKIM/DMARC pass "
				       "from lists.example.test)"));
		/* unless require_auth = no */
		plan_release(&fx.plan);
		fx.ctx.require_auth = 0;
		assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
		assert_int_equal(fx.plan.nr, 4);
		done(&fx);
		free(mail);
	}

	/* The pass forged by the sender, below the From: ignored, and the
	 * comment says so. */
	{
		static const char forged[] =
			"Authentication-Results: (x) lists.example.test; "
			"dkim=pass header.d=corp.example\n";
		const char *p = strstr(reply_mail, "\n\n");
		char *mail = malloc(strlen(reply_mail) + sizeof(forged));
		size_t head = strlen(REPLY_HEAD);

		memcpy(mail, REPLY_HEAD, head);
		strcpy(mail + head, forged);
		strcat(mail, p + 1);
		parse(&fx, mail);
		assert_false(fx.r->auth.verified);
		assert_int_equal(fx.r->auth.forged, 1);
		assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
		assert_int_equal(fx.plan.nr, 3);
		assert_non_null(strstr(fx.plan.v[0].body,
				       "the sender is not verified (no DKIM "
				       "or DMARC pass from lists.example.test; "
				       "1 Authentication-Results field "
				       "claiming lists.example.test was not "
				       "added by its verifier and was "
				       "ignored)"));
		done(&fx);
		free(mail);
	}
}

/*
 * A reply larger than a forge note: the trailers' verdicts, the footer
 * and a notice saying where the whole mail is always fit, the text is
 * cut at a line end to fit GitLab's limit, and an inline comment larger
 * than a note is cut the same way.  Nothing fails, nothing is lost
 * without saying so.
 */
static void test_plan_large(void **state)
{
	struct buf mail = BUF_INIT(8 << 20);
	const struct plan_action *a;
	struct fixture fx;
	size_t i;

	(void)state;
	/* reply_mail's header, then 3 MB of general comment */
	buf_add(&mail, reply_mail,
		(size_t)(strstr(reply_mail, "\n\n") - reply_mail) + 2);
	for (i = 0; i < 60000; i++)
		buf_addf(&mail,
			 "Line %zu of a long comment, with *stars* "
			 "& <tags>\n",
			 i);
	buf_adds(&mail, "\nAcked-by: Bob <bob@corp.example>\n");
	parse(&fx, mail.data);
	assert_true(fx.r->truncated); /* over REVIEW_COMMENT_MAX */
	assert_int_equal(fx.r->trailers.nr, 1);
	fx.ctx.message_id = "big/1@corp.example";
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	a = &fx.plan.v[0];
	assert_int_equal(a->kind, PLAN_COMMENT);
	assert_true(strlen(a->body) <= PLAN_BODY_MAX);
	assert_true(strlen(a->body) > PLAN_BODY_MAX - 64 * 1024);
	assert_non_null(strstr(a->body, "Line 0 of a long comment"));
	assert_null(strstr(a->body, "Line 59999 "));
	assert_non_null(strstr(a->body, "\\[...\\] truncated, the whole mail "
					"is on the list as Message-ID "
					"&lt;big/1@corp.example&gt;"));
	assert_non_null(strstr(a->body, "* Acked-by: Bob"));
	assert_non_null(strstr(a->body, "approval by GitLab user bob"));
	assert_non_null(strstr(a->body, "(DKIM verified)"));
	/* the approval itself, with how its sender was verified */
	assert_int_equal(fx.plan.v[fx.plan.nr - 1].kind, PLAN_APPROVE);
	assert_string_equal(fx.plan.v[fx.plan.nr - 1].via, "DKIM verified");
	plan_release(&fx.plan);

	/* with an archive: a link */
	fx.ctx.archive_url = "https://lore.example.org/list";
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	assert_non_null(strstr(fx.plan.v[0].body,
			       "truncated, the whole mail is at "
			       "https://lore.example.org/list/"
			       "big%2F1@corp.example/"));
	done(&fx);

	/* an inline comment larger than a note */
	buf_reset(&mail);
	buf_adds(&mail, reply_mail);
	buf_truncate(&mail,
		     (size_t)(strstr(mail.data, "Why shout?\n") - mail.data));
	for (i = 0; i < 40000; i++)
		buf_addf(&mail, "Why shout, line %zu? <&>\n", i);
	buf_adds(&mail, "\n>  \treturn 0;\n\nFine.\n");
	parse(&fx, mail.data);
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	for (i = 0; i < fx.plan.nr; i++) {
		a = &fx.plan.v[i];
		if (a->body)
			assert_true(strlen(a->body) <= PLAN_BODY_MAX);
		if (a->fallback)
			assert_true(strlen(a->fallback) <= PLAN_BODY_MAX);
	}
	a = &fx.plan.v[1];
	assert_int_equal(a->kind, PLAN_DIFF_NOTE);
	assert_non_null(strstr(a->body, "Why shout, line 0?"));
	assert_non_null(strstr(a->body, "truncated, the whole mail is on "
					"the list"));
	assert_non_null(strstr(a->fallback, "truncated, the whole mail is"));
	done(&fx);
	buf_release(&mail);
}

/*
 * A review bot (syzbot, the kernel test robot, Auto-Submitted mail, an
 * address of [inbound] bots): its words are posted, its Tested-by is no
 * approval and its NAK blocks nothing; the verdict "bot" says why.
 */
static void test_plan_bot(void **state)
{
	struct fixture fx;
	size_t i;

	(void)state;
	parse(&fx, reply_mail);
	fx.ctx.bot = "syzbot";
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	assert_false(approves(&fx.plan));
	assert_int_equal(fx.plan.refused[APPROVAL_BOT],
			 2); /* Acked, Reviewed */
	assert_non_null(strstr(fx.plan.v[0].body,
			       "the sender is a review bot (syzbot), whose "
			       "trailers are read as words"));
	/* the inline comment is posted like anyone's */
	assert_true(fx.plan.nr >= 2);
	assert_non_null(strstr(fx.plan.verdicts.items[0], "review bot"));
	assert_string_equal(approval_verdict_token(APPROVAL_BOT), "bot");
	done(&fx);

	/* its NAK, however plain, is not acted on */
	parse(&fx, nak_mail);
	fx.ctx.bot = "named in the configured bots";
	fx.ctx.require_auth = 0;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	for (i = 0; i < fx.plan.nr; i++) {
		assert_int_not_equal(fx.plan.v[i].kind, PLAN_NAK_LABEL);
		assert_int_not_equal(fx.plan.v[i].kind, PLAN_UNAPPROVE);
	}
	assert_non_null(strstr(fx.plan.nak_verdict, "review bot"));
	done(&fx);
}

static void test_plan_nak(void **state)
{
	struct fixture fx;
	const struct plan_action *a;

	(void)state;
	/* Unverified NAK: label and discussion, but nobody's approval is
	 * withdrawn on an unverified word. */
	parse(&fx, nak_mail);
	assert_true(fx.r->nak);
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	a = fx.plan.v;
	/* the NAK sits under a quoted line: also a diff note there */
	assert_int_equal(fx.plan.nr, 3);
	assert_int_equal(a[0].index, PLAN_IDX_INLINE(0));
	assert_int_equal(a[1].index, PLAN_IDX_NAK_LABEL);
	assert_int_equal(a[2].index, PLAN_IDX_NAK_DISCUSSION);
	assert_non_null(strstr(a[2].body, "NAK"));
	assert_non_null(strstr(a[2].body, "On src/hello.c line 4"));
	assert_non_null(strstr(a[2].body, "shouting is rude"));
	plan_release(&fx.plan);
	/* Trusted: the NAKer's approval goes too. */
	fx.ctx.require_auth = 0;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	assert_int_equal(fx.plan.nr, 4);
	assert_int_equal(fx.plan.v[3].index, PLAN_IDX_NAK_UNAPPROVE);
	assert_string_equal(fx.plan.v[3].user, "bob");
	assert_non_null(strstr(fx.plan.nak_verdict, "blocked"));
	done(&fx);

	/* In a sentence: the words, flagged; no label, nobody's approval
	 * withdrawn, and the reason kept for the sender. */
	parse(&fx, nak_prose_mail);
	assert_int_equal(fx.r->nak_form, REVIEW_NAK_MENTION);
	fx.ctx.require_auth = 0;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	for (size_t i = 0; i < fx.plan.nr; i++) {
		assert_int_not_equal(fx.plan.v[i].kind, PLAN_NAK_LABEL);
		assert_int_not_equal(fx.plan.v[i].kind, PLAN_UNAPPROVE);
	}
	a = fx.plan.v;
	assert_int_equal(a[0].kind, PLAN_COMMENT);
	assert_non_null(strstr(a[0].body, "Possibly an objection"));
	assert_non_null(strstr(fx.plan.nak_verdict, "possibly an objection"));
	plan_release(&fx.plan);
	/* explicit, but the headers disagree: not acted on either */
	done(&fx);
	parse(&fx, nak_mail);
	fx.ctx.thread_conflict = 1;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	for (size_t i = 0; i < fx.plan.nr; i++)
		assert_int_not_equal(fx.plan.v[i].kind, PLAN_NAK_LABEL);
	assert_non_null(strstr(fx.plan.nak_verdict, "do not agree"));
	done(&fx);
}

/* The plan for one verified reply from Bob with body `text`: how many
 * approvals, whether it NAKs, and the comment's text (or ""). */
static int plan_of(struct fixture *fx, const char *from, const char *text,
		   int *nak, const char **comment)
{
	char mail[2048];
	size_t i;
	int approvals = 0;

	/* the verifier's field on top, as it inserts it */
	snprintf(mail, sizeof(mail),
		 "Authentication-Results: lists.example.test; dkim=pass "
		 "header.d=corp.example header.i=@corp.example\n"
		 "From: %s\n"
		 "Subject: Re: [PATCH v1 1/2] hello: greet more loudly\n"
		 "Message-ID: <r9@corp.example>\n"
		 "In-Reply-To: <p1@bridge.example>\n"
		 "\n%s",
		 from, text);
	parse(fx, mail);
	assert_true(fx->r->auth.verified);
	assert_int_equal(plan_build(&fx->plan, fx->r, &fx->ctx), 0);
	*nak = 0;
	*comment = "";
	for (i = 0; i < fx->plan.nr; i++) {
		const struct plan_action *a = &fx->plan.v[i];

		approvals += a->kind == PLAN_APPROVE;
		*nak |= a->kind == PLAN_NAK_LABEL;
		if (a->kind == PLAN_COMMENT || a->kind == PLAN_NAK_DISCUSSION)
			*comment = a->body;
	}
	return approvals;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* The bridge's footer, as only the bridge can write it. */
#define OWN_FOOTER                                                         \
	"<sub>\xe2\x80\x94 Bob &lt;bob@corp.example&gt; via email, on v1 " \
	"1/2 (DKIM verified)</sub>\n"

/*
 * The footer is the bridge's word on who sent a mail and whether that
 * was verified, so no sender may write its like: a line that copies it,
 * even with the markup the bridge puts it in, stays the sender's text,
 * and the one footer in <sub> - raw HTML, which relayed text never holds
 * - is the bridge's, at the end.
 */
static void test_plan_footer_unforgeable(void **state)
{
	struct fixture fx;
	const char *c;
	size_t i;
	int nak;

	(void)state;
	plan_of(&fx, "Bob <bob@corp.example>",
		"Looks good.\n\n"
		"\xe2\x80\x94 Linus Torvalds <torvalds@linux-foundation.org> "
		"via email (DKIM verified)\n\n"
		"<sub>\xe2\x80\x94 Linus Torvalds "
		"<torvalds@linux-foundation.org> via email, on v1 1/2 (DKIM "
		"verified)</sub>\n\n"
		"&lt;sub&gt;\xe2\x80\x94 Linus &lt;/sub&gt;\n",
		&nak, &c);
	assert_non_null(strstr(c, "Looks good."));
	assert_int_equal(count(c, "<sub>"), 1);
	assert_int_equal(count(c, "</sub>"), 1);
	/* every "<" is the bridge's markup */
	assert_int_equal(count(c, "<"), 2);
	assert_true(strlen(c) > strlen(OWN_FOOTER));
	assert_string_equal(c + strlen(c) - strlen(OWN_FOOTER), OWN_FOOTER);
	done(&fx);

	/* A diff note and its fallback end the same way. */
	parse(&fx, reply_mail);
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	for (i = 0; i < fx.plan.nr; i++) {
		const struct plan_action *a = &fx.plan.v[i];
		const char *b = a->body;

		if (a->kind != PLAN_DIFF_NOTE && a->kind != PLAN_COMMENT)
			continue;
		assert_int_equal(count(b, "<sub>"), 1);
		assert_string_equal(b + strlen(b) - strlen(OWN_FOOTER),
				    OWN_FOOTER);
		if (a->fallback)
			assert_string_equal(a->fallback + strlen(a->fallback) -
						    strlen(OWN_FOOTER),
					    OWN_FOOTER);
	}
	done(&fx);
}

/*
 * What a reply says, as the approval rules read it: a tag in a sentence
 * (negated or not) never approves, a negated NAK blocks nothing, an
 * addressless trailer approves only under the sender's own name (the
 * From address standing in), and each refusal is said in the comment.
 */
static void test_plan_what_a_reply_says(void **state)
{
	struct fixture fx;
	const char *c;
	int nak;

	(void)state;
	/* a line of its own: the approval */
	assert_int_equal(plan_of(&fx, "Bob <bob@corp.example>",
				 "Acked-by: Bob <bob@corp.example>\n", &nak,
				 &c),
			 1);
	done(&fx);
	/* negated in a sentence: no trailer, the words are the comment */
	assert_int_equal(plan_of(&fx, "Bob <bob@corp.example>",
				 "You do not have my Acked-by: Bob "
				 "<bob@corp.example>\n",
				 &nak, &c),
			 0);
	assert_int_equal(fx.r->trailers.nr, 0);
	assert_non_null(strstr(c, "You do not have my Acked-by"));
	done(&fx);
	assert_int_equal(plan_of(&fx, "Bob <bob@corp.example>",
				 "I am withholding my Acked-by: Bob "
				 "<bob@corp.example> until that is fixed\n",
				 &nak, &c),
			 0);
	assert_non_null(strstr(c, "withholding"));
	done(&fx);
	/* a plain statement in a sentence: shown, not honoured */
	assert_int_equal(plan_of(&fx, "Bob <bob@corp.example>",
				 "Series is Acked-by: Bob <bob@corp.example>\n",
				 &nak, &c),
			 0);
	assert_int_equal(fx.r->trailers.nr, 1);
	assert_non_null(strstr(c, "inside a sentence"));
	done(&fx);
	/* no address, even the sender's own name (Outlook's "Last,
	 * First" too): listed, never an approval - only "Name <address>"
	 * or the address alone is acted on */
	assert_int_equal(plan_of(&fx, "Bob <bob@corp.example>",
				 "Reviewed by : Bob\n", &nak, &c),
			 0);
	assert_non_null(strstr(c, "not written exactly as"));
	done(&fx);
	assert_int_equal(plan_of(&fx, "\"Maintainer, Bob\" <bob@corp.example>",
				 "Reviewed-by: Bob Maintainer\n", &nak, &c),
			 0);
	done(&fx);
	/* no address, another name: informal, never an approval */
	assert_int_equal(plan_of(&fx, "Bob <bob@corp.example>",
				 "Reviewed by : Carol\n", &nak, &c),
			 0);
	assert_non_null(strstr(c, "not written exactly as"));
	done(&fx);
	/* Outlook's address form approves as the address it repeats */
	assert_int_equal(plan_of(&fx, "Bob <bob@corp.example>",
				 "Reviewed-by: Bob <bob@corp.example"
				 "<mailto:bob@corp.example>>\n",
				 &nak, &c),
			 1);
	done(&fx);
	/* a withdrawn NAK blocks nothing; a prefixed Nacked-by does */
	assert_int_equal(plan_of(&fx, "Bob <bob@corp.example>",
				 "I withdraw my NAK, v2 fixed it.\n", &nak, &c),
			 0);
	assert_false(nak);
	assert_non_null(strstr(c, "I withdraw my NAK"));
	done(&fx);
	assert_int_equal(plan_of(&fx, "Bob <bob@corp.example>",
				 "Hard-nacked-by: Bob <bob@corp.example>\n",
				 &nak, &c),
			 0);
	assert_true(nak);
	done(&fx);
	assert_int_equal(plan_of(&fx, "Bob <bob@corp.example>",
				 "Not-Nacked-by: Bob <bob@corp.example>\n",
				 &nak, &c),
			 0);
	assert_false(nak);
	done(&fx);
}

/* A reply to a forge comment's mail: one reply in that discussion. */
static void test_plan_fold_inline(void **state)
{
	struct fixture fx;
	const struct plan_action *a;
	const char *why, *fine;

	(void)state;
	parse(&fx, reply_mail);
	fx.ctx.fold_inline = 1;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	a = fx.plan.v;
	assert_int_equal(fx.plan.nr, 2);
	assert_int_equal(a[0].index, PLAN_IDX_COMMENT);
	assert_int_equal(a[0].kind, PLAN_COMMENT);
	assert_int_equal(a[1].index, PLAN_IDX_APPROVE(0));
	/* The comment, then each inline comment under its line. */
	assert_non_null(strstr(a[0].body, "General comment first."));
	why = strstr(a[0].body, "Why shout?");
	fine = strstr(a[0].body, "Fine.");
	assert_non_null(why);
	assert_non_null(fine);
	assert_true(why < fine);
	assert_non_null(strstr(a[0].body, "On src/hello.c line 4:\n\n"
					  "```diff\n+\tprintf(\"HELLO\\n\");"));
	assert_true(strstr(a[0].body, "General comment first.") < why);
	assert_non_null(strstr(a[0].body, "via email, on v1 1/2"));
	plan_release(&fx.plan);

	/* Only inline text: still the one reply. */
	done(&fx);
	parse(&fx, REPLY_HEAD "\n> +\tprintf(\"HELLO\\n\");\n\nToo loud.\n");
	fx.ctx.fold_inline = 1;
	assert_int_equal(fx.r->nr_inline, 1);
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	assert_int_equal(fx.plan.nr, 1);
	assert_int_equal(fx.plan.v[0].index, PLAN_IDX_COMMENT);
	assert_non_null(strstr(fx.plan.v[0].body, "On src/hello.c line 4:"));
	assert_non_null(strstr(fx.plan.v[0].body, "Too loud."));
	done(&fx);

	/* A NAK under the quote: its discussion says it, no diff note. */
	parse(&fx, nak_mail);
	fx.ctx.fold_inline = 1;
	fx.ctx.require_auth = 0;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	a = fx.plan.v;
	assert_int_equal(fx.plan.nr, 3);
	assert_int_equal(a[0].index, PLAN_IDX_NAK_LABEL);
	assert_int_equal(a[1].index, PLAN_IDX_NAK_DISCUSSION);
	assert_non_null(strstr(a[1].body, "shouting is rude"));
	assert_int_equal(a[2].index, PLAN_IDX_NAK_UNAPPROVE);
	done(&fx);
}

/*
 * A reply to a list reply: an inline comment at the position of a diff
 * note the parent made is a reply in that note's thread.
 */
static void test_plan_thread_reply(void **state)
{
	static const struct plan_thread threads[] = {
		/* not a match: the other file, the other side of line 4 */
		{ "d0", "src/other.c", "src/other.c", 0, 4 },
		{ "d1", "src/hello.c", "src/hello.c", 4, 0 },
		{ "d2", "src/hello.c", "src/hello.c", 0, 4 },
		{ "d3", "src/hello.c", "src/hello.c", 0, 4 },
	};
	struct fixture fx;
	struct plan plain;
	const struct plan_action *a;
	size_t i;

	(void)state;
	parse(&fx, reply_mail);
	assert_int_equal(plan_build(&plain, fx.r, &fx.ctx), 0);
	fx.ctx.threads = threads;
	fx.ctx.nr_threads = sizeof(threads) / sizeof(threads[0]);
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	a = fx.plan.v;
	assert_int_equal(fx.plan.nr, plain.nr);
	/* "Why shout?" under the added line 4: a reply in d2 */
	assert_int_equal(a[1].index, PLAN_IDX_INLINE(0));
	assert_int_equal(a[1].kind, PLAN_DIFF_REPLY);
	assert_string_equal(plan_kind_name(a[1].kind), "diff-reply");
	assert_string_equal(a[1].discussion, "d2");
	assert_int_equal(a[1].line_kind, FORGE_LINE_ADDED);
	assert_int_equal(a[1].new_line, 4);
	assert_string_equal(a[1].new_path, "src/hello.c");
	/* "Fine." under context line 5: no thread there, a diff note */
	assert_int_equal(a[2].kind, PLAN_DIFF_NOTE);
	assert_null(a[2].discussion);
	/* Same indexes, texts, escaping and footers as new diff notes. */
	for (i = 0; i < plain.nr; i++) {
		assert_int_equal(a[i].index, plain.v[i].index);
		assert_string_equal(a[i].body ? a[i].body : "",
				    plain.v[i].body ? plain.v[i].body : "");
		assert_string_equal(a[i].fallback ? a[i].fallback : "",
				    plain.v[i].fallback ? plain.v[i].fallback :
							  "");
	}
	assert_non_null(strstr(a[1].body, "Why shout?"));
	assert_non_null(strstr(a[1].body, "via email, on v1 1/2"));
	plan_release(&fx.plan);

	/* A context line matches both its numbers only. */
	{
		static const struct plan_thread ctx5[] = {
			{ "n5", "src/hello.c", "src/hello.c", 0, 5 },
			{ "o5", "src/hello.c", "src/hello.c", 5, 0 },
			{ "c5", "src/hello.c", "src/hello.c", 5, 5 },
		};

		fx.ctx.threads = ctx5;
		fx.ctx.nr_threads = 3;
		assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
		assert_int_equal(fx.plan.v[1].kind, PLAN_DIFF_NOTE);
		assert_int_equal(fx.plan.v[2].kind, PLAN_DIFF_REPLY);
		assert_string_equal(fx.plan.v[2].discussion, "c5");
		plan_release(&fx.plan);
		fx.ctx.nr_threads = 2;
		assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
		assert_int_equal(fx.plan.v[2].kind, PLAN_DIFF_NOTE);
		plan_release(&fx.plan);
	}

	/* Unplaceable comments stay plain discussions. */
	fx.ctx.threads = threads;
	fx.ctx.nr_threads = sizeof(threads) / sizeof(threads[0]);
	fx.fake.placeable = 0;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	assert_int_equal(fx.plan.v[1].kind, PLAN_NOTE);
	assert_null(fx.plan.v[1].discussion);
	plan_release(&fx.plan);

	/* A reply to a forge comment's mail folds them in all the same. */
	fx.fake.placeable = 1;
	fx.ctx.fold_inline = 1;
	assert_int_equal(plan_build(&fx.plan, fx.r, &fx.ctx), 0);
	assert_int_equal(fx.plan.nr, 2);
	assert_int_equal(fx.plan.v[0].kind, PLAN_COMMENT);
	assert_int_equal(fx.plan.v[1].kind, PLAN_APPROVE);
	plan_release(&plain);
	done(&fx);
}

static void test_marker_key(void **state)
{
	char k1[INBOUND_MARKER_KEY_SIZE], k2[INBOUND_MARKER_KEY_SIZE];

	(void)state;
	inbound_marker_key(k1, "r1@corp.example", 1001);
	/* The key notes already on the forge carry: it must never change. */
	assert_string_equal(k1, "pb1-cb06f795f8ef2376b1be543a0b658c32.1001");
	inbound_marker_key(k2, "r1@corp.example", 1001);
	assert_string_equal(k1, k2);
	assert_int_equal(forge_marker_key_check(k1), 0);
	assert_int_equal(strlen(k1), 4 + 32 + 1 + 4);
	assert_true(!strncmp(k1, "pb1-", 4));
	inbound_marker_key(k2, "r2@corp.example", 1001);
	assert_string_not_equal(k1, k2);
	{
		char *id = inbound_message_id(" <x@y> ", "raw", 3);

		assert_string_equal(id, "x@y");
		free(id);
		id = inbound_message_id("", "raw", 3);
		assert_true(!strncmp(id, "nomsgid.", 8));
		free(id);
	}
}

static void test_usermap(void **state)
{
	static const char text[] = "# who is who\n"
				   "alice@example.org  alice\n"
				   "\n"
				   "Bob@Corp.Example\tbob # maintainer\n";
	struct usermap *m = NULL;

	(void)state;
	assert_int_equal(usermap_load_mem(&m, text, strlen(text), "map"), 0);
	assert_string_equal(usermap_lookup(m, "ALICE@example.org"), "alice");
	assert_string_equal(usermap_lookup(m, "bob@corp.example"), "bob");
	assert_null(usermap_lookup(m, "carol@x"));
	assert_null(usermap_lookup(NULL, "carol@x"));
	usermap_free(m);
	assert_int_equal(usermap_load_mem(&m, "a@b\n", 4, "map"), PB_EINVAL);
	assert_int_equal(usermap_load_mem(&m, "a@b x y\n", 8, "map"),
			 PB_EINVAL);
	assert_int_equal(usermap_load_mem(&m, "a@b b@d\n", 8, "map"),
			 PB_EINVAL);
	assert_int_equal(usermap_load_mem(&m, "a@b x\nA@B y\n", 12, "map"),
			 PB_EINVAL);
	assert_string_equal(err_msg(),
			    "map:2: address mapped twice, to different users");

	/* Whoever may write the file decides as whom approvals are made. */
	{
		const char *base = getenv("PB_TEST_TMP");
		char dir[600], path[700], cmd[800];

		snprintf(dir, sizeof(dir), "%s/usermap.XXXXXX",
			 base ? base : "/tmp");
		assert_non_null(mkdtemp(dir));
		snprintf(path, sizeof(path), "%s/user-map", dir);
		assert_int_equal(
			file_write_atomic(path, text, strlen(text), 0666), 0);
		assert_int_equal(chmod(path, 0666), 0);
		assert_int_equal(usermap_load(&m, path), PB_EINVAL);
		assert_non_null(strstr(err_msg(), "user-map is writable by"));
		assert_int_equal(chmod(path, 0640), 0);
		assert_int_equal(usermap_load(&m, path), 0);
		assert_string_equal(usermap_lookup(m, "bob@corp.example"),
				    "bob");
		usermap_free(m);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
}

static void test_scoped_removals(void **state)
{
	struct strlist labels = STRLIST_INIT, rm = STRLIST_INIT;

	(void)state;
	strlist_push(&labels, "Acks::ACKed");
	strlist_push(&labels, "Acks::NACKed");
	strlist_push(&labels, "Acks::needs::more");
	strlist_push(&labels, "bug");
	strlist_push(&labels, "Other::ACKed");
	apply_scoped_removals(&rm, &labels, "Acks::NACKed");
	assert_int_equal(rm.nr, 1);
	assert_string_equal(rm.items[0], "Acks::ACKed");
	strlist_release(&rm);
	apply_scoped_removals(&rm, &labels, "nacked");
	assert_int_equal(rm.nr, 0);
	strlist_release(&labels);
}

/*
 * Lines of one patch on the series' diff: three patches to one file.
 *   base: l1 .. l10
 *   1: a1 a2 added after l2        2: l5 -> L5
 *   3: a1 removed, b1 added after l8
 *   head: l1 l2 a2 l3 l4 L5 l6 l7 l8 b1 l9 l10
 */
static const char *const series[] = {
	"diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n"
	"@@ -1,3 +1,5 @@\n l1\n l2\n+a1\n+a2\n l3\n",
	"diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n"
	"@@ -6,3 +6,3 @@\n l4\n-l5\n+L5\n l6\n",
	"diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n"
	"@@ -2,3 +2,2 @@\n l2\n-a1\n a2\n"
	"@@ -10,2 +9,3 @@\n l8\n+b1\n l9\n",
};

static void expect_place(struct diff *const *d, size_t nr, size_t k, int o,
			 int n, int ok, enum forge_line_kind kind, int64_t wo,
			 int64_t wn)
{
	enum forge_line_kind got = FORGE_LINE_CONTEXT;
	int64_t go = -1, gn = -1;
	int rc = position_map(&got, &go, &gn, (const struct diff *const *)d, nr,
			      k, "f.c", "f.c", o, n);

	if (rc != ok || (ok && (got != kind || go != wo || gn != wn)))
		fail_msg("patch %zu line %d/%d: got %d kind %d %lld/%lld, "
			 "want %d kind %d %lld/%lld",
			 k + 1, o, n, rc, got, (long long)go, (long long)gn, ok,
			 kind, (long long)wo, (long long)wn);
}

static void test_position(void **state)
{
	struct diff *d[3], *renamed = NULL;
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++)
		assert_int_equal(
			diff_parse(&d[i], series[i], strlen(series[i])), 0);
	/* patch 2: removed l5, added L5, context l4 */
	expect_place(d, 3, 1, 7, 0, 1, FORGE_LINE_REMOVED, 5, 0);
	expect_place(d, 3, 1, 0, 7, 1, FORGE_LINE_ADDED, 0, 6);
	expect_place(d, 3, 1, 6, 6, 1, FORGE_LINE_CONTEXT, 4, 5);
	/* patch 1: a1 is gone by the head, a2 is an added line there */
	expect_place(d, 3, 0, 0, 3, 0, FORGE_LINE_ADDED, 0, 0);
	expect_place(d, 3, 0, 0, 4, 1, FORGE_LINE_ADDED, 0, 3);
	/* patch 3: a1 was never in the base; context l8; context a2 is
	 * an added line of the series */
	expect_place(d, 3, 2, 3, 0, 0, FORGE_LINE_REMOVED, 0, 0);
	expect_place(d, 3, 2, 10, 9, 1, FORGE_LINE_CONTEXT, 8, 9);
	expect_place(d, 3, 2, 4, 3, 1, FORGE_LINE_ADDED, 0, 3);
	/* alone, a patch keeps its own numbers */
	expect_place(&d[1], 1, 0, 6, 6, 1, FORGE_LINE_CONTEXT, 6, 6);
	/* an unknown patch, or a rename elsewhere: nothing is sure */
	{
		struct diff *gap[3] = { d[0], NULL, d[2] };
		static const char mv[] =
			"diff --git a/f.c b/g.c\nsimilarity index 90%\n"
			"rename from f.c\nrename to g.c\n--- a/f.c\n+++ b/g.c\n"
			"@@ -1,1 +1,1 @@\n-l1\n+L1\n";
		struct diff *mvd[2];

		expect_place(gap, 3, 2, 10, 9, 0, FORGE_LINE_CONTEXT, 0, 0);
		assert_int_equal(diff_parse(&renamed, mv, strlen(mv)), 0);
		mvd[0] = d[1];
		mvd[1] = renamed;
		expect_place(mvd, 2, 0, 6, 6, 0, FORGE_LINE_CONTEXT, 0, 0);
	}
	diff_free(renamed);
	for (i = 0; i < 3; i++)
		diff_free(d[i]);
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
		cmocka_unit_test(test_decision_table),
		cmocka_unit_test(test_types_and_sender),
		cmocka_unit_test(test_plan_order),
		cmocka_unit_test(test_plan_refusals),
		cmocka_unit_test(test_plan_dmarc_wrap),
		cmocka_unit_test(test_plan_large),
		cmocka_unit_test(test_plan_nak),
		cmocka_unit_test(test_plan_bot),
		cmocka_unit_test(test_plan_what_a_reply_says),
		cmocka_unit_test(test_plan_footer_unforgeable),
		cmocka_unit_test(test_plan_fold_inline),
		cmocka_unit_test(test_plan_thread_reply),
		cmocka_unit_test(test_marker_key),
		cmocka_unit_test(test_usermap),
		cmocka_unit_test(test_scoped_removals),
		cmocka_unit_test(test_position),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
