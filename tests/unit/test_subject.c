#include "cmocka_all.h"
#include "mail/subject.h"

#include <string.h>

struct want {
	const char *subject;
	const char *prefix;
	int version, index, total, reply;
	const char *title;
};

static const struct want cases[] = {
	{ "[PATCH v3 2/7] net: fix it", "PATCH v3 2/7", 3, 2, 7, 0,
	  "net: fix it" },
	{ "[PATCHv2 nf-next 4/6] netfilter: move", "PATCHv2 nf-next 4/6", 2, 4,
	  6, 0, "netfilter: move" },
	{ "Re: [RESEND PATCH net 1/2] iavf: Fix", "RESEND PATCH net 1/2", 1, 1,
	  2, 1, "iavf: Fix" },
	{ "[Freedreno] [PATCH 0/3] drm/msm/dp: simplify", "PATCH 0/3", 1, 0, 3,
	  0, "drm/msm/dp: simplify" },
	{ "Re: [LTP] [PATCH v2 0/4] Add tst_fd iterator API", "PATCH v2 0/4", 2,
	  0, 4, 1, "Add tst_fd iterator API" },
	{ "RE: [PATCH v2] erofs: fix", "PATCH v2", 2, 1, 1, 1, "erofs: fix" },
	{ "Re:Re: [PATCH] erofs: wake", "PATCH", 1, 1, 1, 1, "erofs: wake" },
	{ "AW: Fwd: [PATCH 07/12] igc: x", "PATCH 07/12", 1, 7, 12, 1,
	  "igc: x" },
	{ "\xe7\xad\x94\xe5\xa4\x8d: [External Mail][PATCH] erofs: fix",
	  "PATCH", 1, 1, 1, 1, "erofs: fix" },
	{ "Re: [LTP]  \xe5\x9b\x9e\xe5\xa4\x8d: [PATCH v2] cleanup: x",
	  "PATCH v2", 2, 1, 1, 1, "cleanup: x" },
	{ "Re: [3/3] ASoC: hdmi-codec: drop include", "3/3", 1, 3, 3, 1,
	  "ASoC: hdmi-codec: drop include" },
	{ "Re: [Freedreno] [PATCH 00/40] [Set 8] Rid W=1 warnings",
	  "PATCH 00/40", 1, 0, 40, 1, "[Set 8] Rid W=1 warnings" },
	{ "[nf-next PATCH v3 3/3] netfilter: lock", "nf-next PATCH v3 3/3", 3,
	  3, 3, 0, "netfilter: lock" },
	{ "[RFC PATCH v12 1/1] x", "RFC PATCH v12 1/1", 12, 1, 1, 0, "x" },
	{ "Re[2]: [PATCH   net-next    v2] iavf: set MAC", "PATCH net-next v2",
	  2, 1, 1, 1, "iavf: set MAC" },
	{ "[PATCH 1/2 V4] usb: fix", "PATCH 1/2 V4", 4, 1, 2, 0, "usb: fix" },
	{ "Regression: [PATCH] foo", "PATCH", 1, 1, 1, 0, "foo" },
	{ "Re: build failure on arm64", "", -1, -1, -1, 1,
	  "build failure on arm64" },
	{ "", "", -1, -1, -1, 0, "" },
	{ "[unclosed bracket", "", -1, -1, -1, 0, "[unclosed bracket" },
	{ "[PATCH 99999999999/3] big", "PATCH 99999999999/3", 1, 1, 1, 0,
	  "big" },
};

static void test_table(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct want *w = &cases[i];
		struct subject s;

		subject_parse(&s, w->subject, strlen(w->subject));
		print_message("%s\n", w->subject);
		assert_string_equal(s.prefix, w->prefix);
		assert_int_equal(s.version, w->version);
		assert_int_equal(s.index, w->index);
		assert_int_equal(s.total, w->total);
		assert_int_equal(s.reply, w->reply);
		assert_string_equal(s.title, w->title);
		subject_release(&s);
	}
}

static void test_flags(void **state)
{
	struct subject s;
	const char *t = "Fwd: [RFC RESEND PATCH 2/3] mm: x";

	subject_parse(&s, t, strlen(t));
	assert_true(s.forward);
	assert_false(s.reply);
	assert_true(s.rfc);
	assert_true(s.resend);
	assert_true(s.has_tag);
	subject_release(&s);
}

static void test_not_terminated(void **state)
{
	/* only len bytes are read: "[PATCH 1/2" with the rest cut off */
	const char buf[] = "[PATCH 1/2] title that goes on";
	struct subject s;

	subject_parse(&s, buf, 10);
	assert_string_equal(s.prefix, "");
	subject_release(&s);
	subject_parse(&s, buf, 11);
	assert_string_equal(s.prefix, "PATCH 1/2");
	assert_string_equal(s.title, "");
	subject_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_not_terminated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
