/*
 * Tests of mail/notice.h: the RFC 3834 rules on when the sender of a
 * reply may be answered automatically, the opt-out request, and the
 * notice's Message-ID.
 */

#include "cmocka_all.h"
#include "mail/notice.h"
#include "util/buf.h"

#include <string.h>

#define PERSON "From: Mallory <mallory@corp.example>\n"
#define REST                                                        \
	"To: list@example.org\nSubject: Re: [PATCH] x\n"            \
	"Message-ID: <r1@corp.example>\nContent-Type: text/plain\n" \
	"\nAcked-by: Mallory <mallory@corp.example>\n"

static int wrapped;

static const char *screen(const char *head, const char *env)
{
	static char why[256];
	static struct buf raw = BUF_INIT(1 << 16);
	struct notice_screen_in in;

	buf_reset(&raw);
	buf_adds(&raw, head);
	buf_adds(&raw, REST);
	memset(&in, 0, sizeof(in));
	in.raw = raw.data;
	in.len = raw.len;
	in.envelope_sender = env;
	in.list_address = "list@example.org";
	in.bridge_address = "patchbridge@bridge.example.org";
	in.bridge_domain = "bridge.example.org";
	in.wrapped = wrapped;
	return notice_screen(&in, why, sizeof(why));
}

static void test_person_answered(void **state)
{
	(void)state;
	assert_null(screen(PERSON, "mallory@corp.example"));
	assert_null(screen(PERSON, NULL));
	assert_null(screen("Auto-Submitted: no\n" PERSON, NULL));
	assert_null(screen("Auto-Submitted: No (a person)\n" PERSON, NULL));
	/* relayed by the list: its List-Id, a person's words */
	assert_null(screen("List-Id: <list.example.org>\n"
			   "List-Post: <mailto:list@example.org>\n" PERSON,
			   NULL));
	assert_null(screen("Precedence: first-class\n" PERSON, NULL));
}

static void test_auto_submitted(void **state)
{
	(void)state;
	assert_string_equal(screen("Auto-Submitted: auto-replied\n" PERSON,
				   NULL),
			    "auto_submitted");
	assert_string_equal(screen("auto-submitted:\n auto-generated\n" PERSON,
				   NULL),
			    "auto_submitted");
	assert_string_equal(
		screen("Auto-Submitted: auto-notified; x=y\n" PERSON, NULL),
		"auto_submitted");
}

static void test_bounce(void **state)
{
	(void)state;
	assert_string_equal(screen(PERSON, ""), "bounce");
	assert_string_equal(screen(PERSON, "<>"), "bounce");
	assert_string_equal(screen("Return-Path: <>\n" PERSON, NULL), "bounce");
	assert_string_equal(
		screen("From: Mail Delivery System <MAILER-DAEMON@corp.example>\n",
		       NULL),
		"bounce");
	assert_string_equal(screen("Content-Type: multipart/report; "
				   "report-type=delivery-status\n" PERSON,
				   NULL),
			    "bounce");
}

static void test_list_robot(void **state)
{
	(void)state;
	assert_string_equal(screen("Precedence: bulk\n" PERSON, NULL), "list");
	assert_string_equal(screen("Precedence: list\n" PERSON, NULL), "list");
	assert_string_equal(screen("Precedence: junk\n" PERSON, NULL), "list");
	assert_string_equal(screen("From: <list@example.org>\n", NULL), "list");
	assert_string_equal(screen("From: list-owner@example.org\n", NULL),
			    "list");
	assert_string_equal(screen("From: owner-list@example.org\n", NULL),
			    "list");
	assert_string_equal(screen("From: list-request@Example.org\n", NULL),
			    "list");
	assert_string_equal(screen("From: list-bounces@example.org\n", NULL),
			    "list");
	/* another list's robot, or a person called list elsewhere */
	assert_null(screen("From: list-owner@other.example\n", NULL));
	assert_null(screen("From: listy@example.org\n", NULL));
	/* a post the list wrapped for DMARC: From is the list's, the
	 * author is inside and is answered */
	wrapped = 1;
	assert_null(
		screen("From: Mallory via list <list@example.org>\n", NULL));
	assert_string_equal(screen("Precedence: list\n" PERSON, NULL), "list");
	wrapped = 0;
}

static void test_ours(void **state)
{
	(void)state;
	assert_string_equal(
		screen("X-Patchbridge-Origin: notice\n" PERSON, NULL), "ours");
	assert_string_equal(
		screen("From: patchbridge <patchbridge@bridge.example.org>\n",
		       NULL),
		"ours");
}

static void test_optout_request(void **state)
{
	(void)state;
	assert_int_equal(notice_optout_request("unsubscribe notices"), 1);
	assert_int_equal(notice_optout_request("\n  Unsubscribe Notices \n\n"),
			 1);
	assert_int_equal(notice_optout_request("unsubscribe notices\n\n-- \n"
					       "Mallory\n"),
			 1);
	assert_int_equal(notice_optout_request("subscribe notices\n"), 0);
	/* a sentence that mentions it is no request */
	assert_int_equal(notice_optout_request("Please unsubscribe notices "
					       "for me"),
			 -1);
	assert_int_equal(notice_optout_request("unsubscribe notices\n"
					       "and also this patch is wrong"),
			 -1);
	assert_int_equal(notice_optout_request(""), -1);
	assert_int_equal(notice_optout_request(NULL), -1);
}

static void test_message_id(void **state)
{
	struct buf a = BUF_INIT(512), b = BUF_INIT(512);

	(void)state;
	assert_int_equal(notice_message_id(&a, "r1@corp.example", "b.example"),
			 0);
	assert_int_equal(notice_message_id(&b, "r1@corp.example", "b.example"),
			 0);
	assert_string_equal(a.data, b.data);
	assert_int_equal(strncmp(a.data, "pb.n.", 5), 0);
	assert_non_null(strstr(a.data, "@b.example"));
	buf_reset(&b);
	assert_int_equal(notice_message_id(&b, "r2@corp.example", "b.example"),
			 0);
	assert_string_not_equal(a.data, b.data);
	buf_release(&a);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_person_answered),
		cmocka_unit_test(test_auto_submitted),
		cmocka_unit_test(test_bounce),
		cmocka_unit_test(test_list_robot),
		cmocka_unit_test(test_ours),
		cmocka_unit_test(test_optout_request),
		cmocka_unit_test(test_message_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
