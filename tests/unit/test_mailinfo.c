/*
 * mailinfo: a patch mail read as git mailinfo and git am read it.  The
 * comparison with git am itself, on whole series, is
 * tests/outbound/mailam.sh (outbound_mail_am); these are the rules one
 * at a time.
 */
#include "cmocka_all.h"
#include "mail/mail.h"
#include "mail/mailinfo.h"
#include "util/err.h"

#include <string.h>

/* mailinfo.c cleanup_subject() and cleanup_space(). */
static void test_clean_subject(void **state)
{
	static const char *const cases[][2] = {
		{ "[PATCH v2 1/5] foo: bar", "foo: bar" },
		{ "Re: [PATCH] x", "x" },
		{ "RE: re:[list] [RFC PATCH 0/2]  a \t b  ", "a b" },
		{ ":: [x]: y", "y" },
		{ "Revert \"foo\"", "Revert \"foo\"" },
		{ "Re", "Re" },
		{ "[unclosed bracket", "[unclosed bracket" },
		{ "foo [PATCH] kept inside", "foo [PATCH] kept inside" },
		{ "", "" },
	};
	struct buf out = BUF_INIT(4096);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("%s\n", cases[i][0]);
		assert_int_equal(mailinfo_clean_subject(&out, cases[i][0],
							strlen(cases[i][0])),
				 0);
		assert_string_equal(out.data, cases[i][1]);
	}
	buf_release(&out);
}

#define DIFF                              \
	"diff --git a/t.txt b/t.txt\n"    \
	"index 1111111..2222222 100644\n" \
	"--- a/t.txt\n"                   \
	"+++ b/t.txt\n"                   \
	"@@ -1 +1 @@\n"                   \
	"-a\n"                            \
	"+b\n"

/* In-body From, Date and Subject; the body to the "---" line,
 * stripspace'd; the patch from its "diff --git" line. */
static void test_read(void **state)
{
	static const char mail[] =
		"From: Sam Sender <sam@example.org>\n"
		"Date: Wed, 6 Dec 2023 10:00:00 +0100\n"
		"Subject: [PATCH 1/2] sender's title\n"
		"Message-ID: <m1@example.org>\n"
		"\n"
		"\n"
		"From: =?UTF-8?q?Zo=C3=AB?= <zoe@example.org>\n"
		"Date: Tue, 14 Nov 2023 16:13:20 -0700\n"
		"Subject: [PATCH] the real   title\n"
		"\n"
		"\n"
		"First paragraph.  \n"
		"\n"
		"\n"
		"\n"
		"Signed-off-by: Zoe <zoe@example.org>\n"
		"\n"
		"---\n"
		" t.txt | 2 +-\n"
		"\n" DIFF "-- \n"
		"2.43.0\n";
	struct mailinfo mi;

	(void)state;
	mailinfo_init(&mi);
	assert_int_equal(mailinfo_read(&mi, mail, strlen(mail)), 0);
	assert_string_equal(mi.name, "Zoë");
	assert_string_equal(mi.email, "zoe@example.org");
	assert_int_equal(mi.time, 1700003600);
	assert_int_equal(mi.tz_minutes, -7 * 60);
	assert_string_equal(mi.subject, "the real title");
	assert_string_equal(mi.message.data,
			    "the real title\n"
			    "\n"
			    "First paragraph.\n"
			    "\n"
			    "Signed-off-by: Zoe <zoe@example.org>\n");
	assert_true(mi.patch.len > strlen(DIFF));
	assert_memory_equal(mi.patch.data, DIFF, strlen(DIFF));
	mailinfo_release(&mi);
}

/* A title-only commit; a name git would not trust is the address; a
 * mail with no patch is refused. */
static void test_edges(void **state)
{
	static const char title_only[] =
		"From: <bo@example.org>\n"
		"Date: Tue, 14 Nov 2023 22:13:20 +0000\n"
		"Subject: [PATCH] only a title\n"
		"\n"
		"---\n" DIFF;
	static const char no_patch[] = "From: Ann <ann@example.org>\n"
				       "Subject: [PATCH] words\n"
				       "\n"
				       "Nothing to apply.\n";
	struct mailinfo mi;

	(void)state;
	mailinfo_init(&mi);
	assert_int_equal(mailinfo_read(&mi, title_only, strlen(title_only)), 0);
	assert_string_equal(mi.name, "bo@example.org");
	assert_string_equal(mi.message.data, "only a title\n");
	assert_int_equal(mi.tz_minutes, 0);
	assert_int_equal(mailinfo_read(&mi, no_patch, strlen(no_patch)),
			 PB_EINVAL);
	mailinfo_release(&mi);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_subject),
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_edges),
	};
	int rc;

	if (mail_init())
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	mail_shutdown();
	return rc;
}
