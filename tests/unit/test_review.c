/*
 * The whole inbound parse, data-driven: tests/data/parse/NAME.eml is
 * parsed (against the patch named in NAME.parent, when there is one) and
 * the `patchbridge parse` JSON compared with NAME.json.
 */
#include "cmocka_all.h"
#include "golden.h"
#include "util/scan.h"
#include "mail/diff.h"
#include "mail/mail.h"
#include "mail/review.h"

#include <stdio.h>
#include <string.h>

struct thread {
	struct review_thread_mail v[16];
	size_t nr;
};

/* NAME.thread: other mails of the thread, one file name a line. */
static void read_thread(struct thread *t, struct strlist *ids, const char *list)
{
	struct buf names = BUF_INIT(4096), raw = BUF_INIT(1 << 24);
	char file[1024];
	struct scan sc;
	const char *line;
	size_t n;

	golden_read(&names, golden_path("parse", list));
	scan_init(&sc, names.data, names.len);
	while (scan_line(&sc, &line, &n) && t->nr < 16) {
		if (!n)
			continue;
		snprintf(file, sizeof(file), "%.*s", (int)n, line);
		buf_reset(&raw);
		golden_read(&raw, golden_path("parse", file));
		assert_int_equal(review_thread_mail_read(&t->v[t->nr], ids,
							 raw.data, raw.len),
				 0);
		t->nr++;
	}
	buf_release(&names);
	buf_release(&raw);
}

static void run_one(const char *name, int *bad)
{
	struct thread thread = { .nr = 0 };
	struct strlist ids = STRLIST_INIT;
	struct review_options ro;
	struct buf raw = BUF_INIT(1 << 24), praw = BUF_INIT(1 << 24);
	struct buf parent = BUF_INIT(4096), json = BUF_INIT(1 << 24);
	struct diff *d = NULL;
	struct review *r;
	char path[1024];
	size_t n = strlen(name) - 4;

	golden_read(&raw, golden_path("parse", name));
	snprintf(path, sizeof(path), "%.*s.parent", (int)n, name);
	if (golden_exists(golden_path("parse", path))) {
		golden_read(&parent, golden_path("parse", path));
		buf_rtrim(&parent);
		golden_read(&praw, golden_path("parse", parent.data));
		assert_int_equal(review_patch_diff(&d, praw.data, praw.len), 0);
	}
	snprintf(path, sizeof(path), "%.*s.thread", (int)n, name);
	if (golden_exists(golden_path("parse", path)))
		read_thread(&thread, &ids, path);
	memset(&ro, 0, sizeof(ro));
	ro.thread = thread.v;
	ro.nr_thread = thread.nr;
	assert_int_equal(review_parse(&r, raw.data, raw.len, d, &ro), 0);
	assert_int_equal(review_to_json(&json, r), 0);
	snprintf(path, sizeof(path), "%.*s.json", (int)n, name);
	if (!golden_check(golden_path("parse", path), &json))
		(*bad)++;
	review_free(r);
	diff_free(d);
	strlist_release(&ids);
	buf_release(&raw);
	buf_release(&praw);
	buf_release(&parent);
	buf_release(&json);
}

static void test_golden(void **state)
{
	struct strlist names = STRLIST_INIT;
	size_t i;
	int bad = 0;

	golden_list(&names, "parse", ".eml");
	assert_true(names.nr > 0);
	for (i = 0; i < names.nr; i++)
		run_one(names.items[i], &bad);
	strlist_release(&names);
	assert_int_equal(bad, 0);
}

static void test_trusted_auth(void **state)
{
	/* the verifier's field on top, a client's below */
	static const char raw[] =
		"Authentication-Results: mx.example.net; dkim=pass "
		"header.d=example.net\n"
		"From: Ivan <ivan@example.net>\n"
		"Subject: Re: [PATCH 1/2] x\n"
		"Authentication-Results: evil.example; dmarc=pass\n"
		"\n"
		"Acked-by: Ivan <ivan@example.net>\n";
	/* the same field below the From: the client wrote it */
	static const char below[] =
		"From: Ivan <ivan@example.net>\n"
		"Subject: Re: [PATCH 1/2] x\n"
		"Authentication-Results: mx.example.net; dkim=pass "
		"header.d=example.net\n"
		"\n"
		"Acked-by: Ivan <ivan@example.net>\n";
	struct review_options opts = { .trusted_authserv_id = "mx.example.net",
				       .trusted_fields = 2 };
	struct review *r;

	assert_int_equal(review_parse(&r, raw, sizeof(raw) - 1, NULL, &opts),
			 0);
	assert_true(r->auth.verified);
	assert_int_equal(r->auth.dkim, AR_PASS);
	assert_int_equal(r->auth.dmarc, AR_NONE);
	assert_int_equal(r->kind, REVIEW_REPLY);
	assert_int_equal(r->trailers.nr, 1);
	review_free(r);

	assert_int_equal(
		review_parse(&r, below, sizeof(below) - 1, NULL, &opts), 0);
	assert_false(r->auth.verified);
	assert_int_equal(r->auth.forged, 1);
	review_free(r);

	opts.trusted_authserv_id = "other.example";
	assert_int_equal(review_parse(&r, raw, sizeof(raw) - 1, NULL, &opts),
			 0);
	assert_false(r->auth.verified);
	review_free(r);
}

/*
 * A reviewer's Acked-by above a quoted original, in the forms mailers
 * write them: the original, with an approval, a Nacked-by and a NAK of
 * someone else and the patch's own trailers, never counts, whether it
 * is quoted with '>' or pasted below an attribution or an Outlook
 * header block; and a phone's signature makes no comment of its own.
 */
static const struct {
	const char *opener;
	int quoted; /* the original quoted with '>' */
} openers[] = {
	{ "On Tue, Dec 3, 2026 at 10:00 AM Pat <\npat@example.org> wrote:\n",
	  1 },
	{ "On Tue, Dec 3, 2026 at 10:00 AM Pat <\npat@example.org> wrote:\n",
	  0 },
	{ "Am Di., 3. Dez. 2026 um 10:00 Uhr schrieb Pat <pat@example.org>:\n",
	  1 },
	{ "Am Di., 3. Dez. 2026 um 10:00 Uhr schrieb Pat <\n"
	  "pat@example.org>:\n",
	  0 },
	{ "Le mar. 3 d\xc3\xa9"
	  "c. 2026 \xc3\xa0 10:00, Pat <pat@example.org> a \xc3\xa9"
	  "crit :\n",
	  0 },
	{ "Le mar. 3 d\xc3\xa9"
	  "c. 2026 \xc3\xa0 10:00, Pat <pat@example.org> a\n\xc3\xa9"
	  "crit\xc2\xa0:\n",
	  1 },
	{ "El mar, 3 dic 2026 a las 10:00, Pat (<pat@example.org>) "
	  "escribi\xc3\xb3:\n",
	  0 },
	{ "Il giorno mar 3 dic 2026 alle ore 10:00 Pat <pat@example.org>\n"
	  "ha scritto:\n",
	  0 },
	{ "Em ter., 3 de dez. de 2026 \xc3\xa0s 10:00, Pat <pat@example.org> "
	  "escreveu:\n",
	  0 },
	{ "Op di 3 dec. 2026 om 10:00 schreef Pat <\npat@example.org>:\n", 0 },
	{ "03.12.2026 10:00, Pat <pat@example.org>\n"
	  "\xd0\xbf\xd0\xb8\xd1\x88\xd0\xb5\xd1\x82:\n",
	  0 },
	{ "\xd0\xb2\xd1\x82, 3 \xd0\xb4\xd0\xb5\xd0\xba. 2026 \xd0\xb3. \xd0\xb2 "
	  "10:00, Pat <\npat@example.org>:\n",
	  1 },
	{ "\xd0\xb2\xd1\x82, 3 \xd0\xb4\xd0\xb5\xd0\xba. 2026 \xd0\xb3. \xd0\xb2 "
	  "10:00, Pat <pat@example.org>:\n",
	  0 },
	{ "\xe5\x9c\xa8 2026\xe5\xb9\xb4"
	  "12\xe6\x9c\x88"
	  "3\xe6\x97\xa5 10:00\xef\xbc\x8cPat <pat@example.org> "
	  "\xe5\x86\x99\xe9\x81\x93\xef\xbc\x9a\n",
	  0 },
	{ "2026\xe5\xb9\xb4"
	  "12\xe6\x9c\x88"
	  "3\xe6\x97\xa5(\xe7\x81\xab) 10:00 Pat <\npat@example.org> "
	  "\xe3\x81\xae\xe3\x83\xa1\xe3\x83\x83\xe3\x82\xbb\xe3\x83\xbc"
	  "\xe3\x82\xb8:\n",
	  0 },
	{ "-----Original Message-----\nFrom: Pat <pat@example.org>\n"
	  "Sent: Tuesday, December 3, 2026 10:00 AM\nTo: list@example.org\n"
	  "Subject: [PATCH v2 1/2] foo: fix the bar\n",
	  0 },
	{ "-----Urspr\xc3\xbcngliche Nachricht-----\n"
	  "Von: Pat <pat@example.org>\nGesendet: Dienstag, 3. Dezember 2026\n"
	  "An: list@example.org\nBetreff: [PATCH v2 1/2] foo: fix the bar\n",
	  0 },
	{ "-----Message d'origine-----\nDe\xc2\xa0: Pat <pat@example.org>\n"
	  "Envoy\xc3\xa9\xc2\xa0: mardi 3 d\xc3\xa9"
	  "cembre 2026\n\xc3\x80\xc2\xa0: list@example.org\n"
	  "Objet\xc2\xa0: [PATCH v2 1/2] foo: fix the bar\n",
	  0 },
	{ "-----Mensaje original-----\nDe: Pat <pat@example.org>\n"
	  "Enviado: martes, 3 de diciembre de 2026\nPara: list@example.org\n"
	  "Asunto: [PATCH v2 1/2] foo: fix the bar\n",
	  0 },
	{ "________________________________\nFrom: Pat <pat@example.org>\n"
	  "Sent: Tuesday, December 3, 2026 10:00 AM\nTo: list@example.org\n"
	  "Subject: [PATCH v2 1/2] foo: fix the bar\n",
	  0 },
	{ "________________________________\nVon: Pat <pat@example.org>\n"
	  "Gesendet: Dienstag, 3. Dezember 2026\nAn: list@example.org\n"
	  "Betreff: [PATCH v2 1/2] foo: fix the bar\n",
	  0 },
	{ "________________________________\nDe : Pat <pat@example.org>\n"
	  "Envoy\xc3\xa9 : mardi 3 d\xc3\xa9"
	  "cembre 2026\n\xc3\x80 : list@example.org\n"
	  "Objet : [PATCH v2 1/2] foo: fix the bar\n",
	  0 },
	{ "________________________________\nDe: Pat <pat@example.org>\n"
	  "Enviado: martes, 3 de diciembre de 2026\nPara: list@example.org\n"
	  "Asunto: [PATCH v2 1/2] foo: fix the bar\n",
	  0 },
	{ "________________________________\n*From:* Pat <pat@example.org>\n"
	  "*Sent:* Tuesday, December 3, 2026 10:00 AM\n"
	  "*To:* list@example.org\n"
	  "*Subject:* [PATCH v2 1/2] foo: fix the bar\n",
	  0 },
};

static const char *const mobile_sigs[] = {
	NULL,
	"Sent from my iPhone",
	"Envoy\xc3\xa9 de mon iPhone",
	"Von meinem iPhone gesendet",
	"Get Outlook for Android",
};

static const char original[] =
	"Looks wrong to me.\n"
	"\n"
	"NAK.\n"
	"\n"
	"Nacked-by: Quinn <q@example.org>\n"
	"Acked-by: Otto <o@example.org>\n"
	"\n"
	"-----Original Message-----\n"
	"From: Pat <pat@example.org>\n"
	"Subject: [PATCH v2 1/2] foo: fix the bar\n"
	"\n"
	"Fix the bar.\n"
	"\n"
	"Signed-off-by: Pat <pat@example.org>\n"
	"Acked-by: Alice <alice@example.org>\n"
	"---\n"
	" foo.c | 2 +-\n"
	" 1 file changed, 1 insertion(+), 1 deletion(-)\n"
	"\n"
	"diff --git a/foo.c b/foo.c\n"
	"--- a/foo.c\n"
	"+++ b/foo.c\n"
	"@@ -10,3 +10,3 @@ int f(void)\n"
	" {\n"
	"-\treturn 0;\n"
	"+\treturn 1;\n"
	" }\n"
	"--\n"
	"2.45.0\n";

static void quoted_once(const char *own, size_t opener, const char *sig,
			const char *want_comment)
{
	struct buf raw = BUF_INIT(1 << 16);
	struct review *r;
	const char *p, *nl;

	assert_int_equal(buf_adds(&raw,
				  "From: Rev <rev@example.org>\n"
				  "Subject: Re: [PATCH v2 1/2] foo: fix "
				  "the bar\n"
				  "In-Reply-To: <p@example.org>\n"
				  "Content-Type: text/plain; charset=utf-8\n"
				  "\n"),
			 0);
	assert_int_equal(buf_addf(&raw, "%sAcked-by: Rev <rev@example.org>\n\n",
				  own),
			 0);
	if (sig)
		assert_int_equal(buf_addf(&raw, "%s\n\n", sig), 0);
	assert_int_equal(buf_adds(&raw, openers[opener].opener), 0);
	if (!openers[opener].quoted)
		assert_int_equal(buf_addf(&raw, "\n%s", original), 0);
	for (p = original; openers[opener].quoted && *p; p = nl + 1) {
		nl = strchr(p, '\n');
		assert_int_equal(buf_addf(&raw, ">%s%.*s\n", nl > p ? " " : "",
					  (int)(nl - p), p),
				 0);
	}
	print_message("%s\n", raw.data);
	assert_int_equal(review_parse(&r, raw.data, raw.len, NULL, NULL), 0);
	assert_int_equal(r->kind, REVIEW_REPLY);
	assert_int_equal(r->trailers.nr, 1);
	assert_string_equal(r->trailers.v[0].type, "Acked-by");
	assert_string_equal(r->trailers.v[0].email, "rev@example.org");
	assert_false(r->nak);
	assert_string_equal(r->comment, want_comment);
	review_free(r);
	buf_release(&raw);
}

static void test_quoted_never_counts(void **state)
{
	size_t i, j;

	for (i = 0; i < sizeof(openers) / sizeof(openers[0]); i++)
		for (j = 0; j < sizeof(mobile_sigs) / sizeof(mobile_sigs[0]);
		     j++) {
			quoted_once("", i, mobile_sigs[j], "");
			quoted_once("The lock is taken twice.\n\n", i,
				    mobile_sigs[j],
				    "The lock is taken twice.\n\n"
				    "Acked-by: Rev <rev@example.org>");
		}
}

static int setup(void **state)
{
	return mail_init();
}

static int teardown(void **state)
{
	mail_shutdown();
	return 0;
}

/*
 * An attachment is never the reply (the attack: a text/plain file with
 * an Acked-by, the sender's own words in HTML).  In each form a file
 * can take - an inline disposition with a file name, a Content-Type
 * name= alone, an attachment disposition, an RFC 2231 file name, the
 * file before the body, the body an HTML alternative - the Acked-by
 * gives no trailer and the HTML words are the comment.
 */
#define ATTACK_HEAD                                              \
	"From: Maintainer <maint@example.org>\n"                 \
	"Subject: Re: [PATCH v2 1/2] net: fix the frobnicator\n" \
	"Message-ID: <a1@example.org>\n"                         \
	"In-Reply-To: <p1@example.org>\n"                        \
	"MIME-Version: 1.0\n"                                    \
	"Content-Type: multipart/mixed; boundary=\"b\"\n"        \
	"\n"
#define ATTACK_HTML                                \
	"--b\n"                                    \
	"Content-Type: text/html; charset=utf-8\n" \
	"\n"                                       \
	"<p>I do not agree with this change.</p>\n"
#define ATTACK_FILE(headers)                                   \
	"--b\n"                                                \
	"Content-Type: text/plain; charset=utf-8" headers "\n" \
	"\n"                                                   \
	"Acked-by: Maintainer <maint@example.org>\n"

static void test_attachment_is_not_the_reply(void **state)
{
	static const char *const mails[] = {
		ATTACK_HEAD ATTACK_HTML ATTACK_FILE(
			"\nContent-Disposition: inline; filename=\"n.txt\"") "--b--\n",
		ATTACK_HEAD ATTACK_HTML ATTACK_FILE(
			"; name=\"n.txt\"") "--b--\n",
		ATTACK_HEAD ATTACK_HTML ATTACK_FILE(
			"\nContent-Disposition: attachment") "--b--\n",
		ATTACK_HEAD ATTACK_HTML ATTACK_FILE(
			"\nContent-Disposition: inline; "
			"filename*=utf-8''n%C3%B6tes.txt") "--b--\n",
		ATTACK_HEAD ATTACK_FILE(
			"\nContent-Disposition: inline; filename=\"n.txt\"")
			ATTACK_HTML "--b--\n",
		ATTACK_HEAD
		"--b\n"
		"Content-Type: multipart/alternative; boundary=\"a\"\n"
		"\n"
		"--a\n"
		"Content-Type: text/plain; name=\"n.txt\"\n"
		"\n"
		"Acked-by: Maintainer <maint@example.org>\n"
		"--a\n"
		"Content-Type: text/html\n"
		"\n"
		"<p>I do not agree with this change.</p>\n"
		"--a--\n"
		"--b--\n",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(mails) / sizeof(mails[0]); i++) {
		struct review *r;

		print_message("form %zu\n", i);
		assert_int_equal(review_parse(&r, mails[i], strlen(mails[i]),
					      NULL, NULL),
				 0);
		assert_int_equal(r->kind, REVIEW_REPLY);
		assert_int_equal(r->trailers.nr, 0);
		assert_false(r->nak);
		assert_non_null(
			strstr(r->comment, "I do not agree with this change."));
		assert_null(strstr(r->comment, "Acked-by"));
		review_free(r);
	}
}

/* A patch mail with the given header lines (From, Subject, Message-ID
 * and whatever else) and a diff in its text. */
#define SUB_PATCH(headers)                               \
	headers "To: dev@lists.example.org\n"            \
		"Date: Tue, 3 Dec 2026 10:00:00 +0000\n" \
		"\n"                                     \
		"Louder.\n"                              \
		"\n"                                     \
		"Signed-off-by: Ann <ann@example.org>\n" \
		"---\n"                                  \
		"diff --git a/h.c b/h.c\n"               \
		"--- a/h.c\n"                            \
		"+++ b/h.c\n"                            \
		"@@ -1 +1 @@\n"                          \
		"-hello\n"                               \
		"+HELLO\n"

/* What is a submission (a new series' patch or cover), and why not. */
static void test_submission(void **state)
{
	static const struct {
		const char *mail;
		const char *why; /* NULL: a submission */
	} cases[] = {
		{ SUB_PATCH("From: Ann <ann@example.org>\n"
			    "Subject: [PATCH 1/2] h: louder\n"
			    "Message-ID: <s1@example.org>\n"
			    "In-Reply-To: <s0@example.org>\n"),
		  NULL },
		{ SUB_PATCH("From: Ann <ann@example.org>\n"
			    "Subject: [RFC PATCH] h: louder\n"
			    "Message-ID: <s2@example.org>\n"),
		  NULL },
		{ SUB_PATCH("From: Ann <ann@example.org>\n"
			    "Subject: Re: [PATCH 1/2] h: louder\n"
			    "Message-ID: <s3@example.org>\n"),
		  "reply" },
		{ SUB_PATCH("From: Ann <ann@example.org>\n"
			    "Subject: Fwd: [PATCH 1/2] h: louder\n"
			    "Message-ID: <s4@example.org>\n"),
		  "forward" },
		{ SUB_PATCH("From: Ann <ann@example.org>\n"
			    "Subject: [GIT PULL] h: louder\n"
			    "Message-ID: <s5@example.org>\n"),
		  "pull-request" },
		{ SUB_PATCH("From: Ann <ann@example.org>\n"
			    "Subject: [PULL 1/2] h: louder\n"
			    "Message-ID: <s6@example.org>\n"),
		  "pull-request" },
		{ SUB_PATCH("From: Ann <ann@example.org>\n"
			    "Subject: h: louder\n"
			    "Message-ID: <s7@example.org>\n"),
		  "no-patch-tag" },
		{ SUB_PATCH("From: Ann <ann@example.org>\n"
			    "Subject: [PATCH 1/2] h: louder\n"
			    "Auto-Submitted: auto-generated\n"
			    "Message-ID: <s8@example.org>\n"),
		  "bot" },
		{ SUB_PATCH("From: Ann <ann@example.org>\n"
			    "Subject: [PATCH 1/2] h: louder\n"
			    "X-Patchbridge-MR: 7\n"
			    "Message-ID: <s9@example.org>\n"),
		  "x-patchbridge-header" },
		{ SUB_PATCH("From: Ann <ann@example.org>\n"
			    "Subject: [PATCH v3 1/2] h: louder\n"
			    "Message-ID: <pb.v3.1-2.group.project.12."
			    "0123456789ab@bridge.example.org>\n"),
		  "own-message-id" },
		{ SUB_PATCH("From: Bridge <Bridge@Example.org>\n"
			    "Subject: [PATCH 1/2] h: louder\n"
			    "Message-ID: <s10@example.org>\n"),
		  "from-bridge" },
		{ "From: Ann <ann@example.org>\n"
		  "Subject: [PATCH 0/2] h: a louder greeting\n"
		  "Message-ID: <s11@example.org>\n"
		  "\n"
		  "Two patches.\n",
		  NULL },
	};
	struct review_options ro;
	size_t i;

	(void)state;
	memset(&ro, 0, sizeof(ro));
	ro.own_domain = "bridge.example.org";
	ro.own_address = "bridge@example.org";
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct review *r;

		print_message("case %zu\n", i);
		assert_int_equal(review_parse(&r, cases[i].mail,
					      strlen(cases[i].mail), NULL, &ro),
				 0);
		if (cases[i].why) {
			assert_false(r->submission);
			assert_string_equal(r->submission_why, cases[i].why);
		} else {
			assert_true(r->submission);
			assert_null(r->submission_why);
		}
		review_free(r);
	}
}

/* An argument names the tests to run (cmocka's filter): `test_review
 * test_golden` is the parse_golden test. */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_trusted_auth),
		cmocka_unit_test(test_quoted_never_counts),
		cmocka_unit_test(test_attachment_is_not_the_reply),
		cmocka_unit_test(test_submission),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, setup, teardown);
}
