#include "cmocka_all.h"
#include "golden.h"
#include "mail/subject.h"
#include "util/scan.h"

#include <stdlib.h>
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
	  "PATCH 00/40", 1, 0, 40, 1, "Rid W=1 warnings" },
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
	/* numbering outside git's exact form, one rule each */
	{ "[PATCH 0 of 2] x", "PATCH 0 of 2", 1, 0, 2, 0, "x" },
	{ "[PATCH 1 of 2 V2] x", "PATCH 1 of 2 V2", 2, 1, 2, 0, "x" },
	{ "[PATCH1/8] x", "PATCH1/8", 1, 1, 8, 0, "x" },
	{ "[v2PATCH1/4] x", "v2PATCH1/4", 2, 1, 4, 0, "x" },
	{ "[PATCH-v3 2/2] x", "PATCH-v3 2/2", 3, 2, 2, 0, "x" },
	{ "[PATCH,1/2] x", "PATCH,1/2", 1, 1, 2, 0, "x" },
	{ "[PATCH] [RFC,1/2] x", "PATCH RFC,1/2", 1, 1, 2, 0, "x" },
	{ "[RFC] [1/2] x", "RFC 1/2", 1, 1, 2, 0, "x" },
	{ "[PATCH] [RFC] [v2] [1/2] x", "PATCH RFC v2 1/2", 2, 1, 2, 0, "x" },
	{ "[Patch]: Fix x", "Patch", 1, 1, 1, 0, "Fix x" },
	{ "Re: [PATCH 2/2]: x", "PATCH 2/2", 1, 2, 2, 1, "x" },
	/* not tag words: a second bracket is not the tag's, and leaves the
	 * title as git mailinfo strips it */
	{ "[PATCH] [media] x", "PATCH", 1, 1, 1, 0, "x" },
	{ "[PATCH] [media] [v4l] Re: x [y]", "PATCH", 1, 1, 1, 0, "x [y]" },
	/* "N of M" glued to the keyword or to its numbers */
	{ "[PATCH1 of 3] x", "PATCH1 of 3", 1, 1, 3, 0, "x" },
	{ "[PATCH 1of3] x", "PATCH 1of3", 1, 1, 3, 0, "x" },
	{ "[PATCH 2 of3] x", "PATCH 2 of3", 1, 2, 3, 0, "x" },
	{ "[PATCH2of3 v2] x", "PATCH2of3 v2", 2, 2, 3, 0, "x" },
	{ "[PATCH 0 OF 4] x", "PATCH 0 OF 4", 1, 0, 4, 0, "x" },
	{ "[PATCH offline 1/2] x", "PATCH offline 1/2", 1, 1, 2, 0, "x" },
	/* "Re" without a colon before a tag (patchwork's "re[:\s]") */
	{ "Re [PATCH 1/2] x", "PATCH 1/2", 1, 1, 2, 1, "x" },
	{ "RE [PATCH v3] x", "PATCH v3", 3, 1, 1, 1, "x" },
	{ "Re x [PATCH] y", "PATCH", 1, 1, 1, 0, "y" },
	/* a build robot's tree and branch: its counter is no patch's */
	{ "[linux-next:master 3/5] drivers/a.c:7:5: warning: x", "", -1, -1, -1,
	  0, "drivers/a.c:7:5: warning: x" },
	{ "Re: [tip:x86/urgent 1/2] x", "", -1, -1, -1, 1, "x" },
	{ "[PATCH net-next:main 1/2] x", "PATCH net-next:main 1/2", 1, 1, 2, 0,
	  "x" },
	/* a single patch's cover letter */
	{ "[PATCH 0/1] x", "PATCH 0/1", 1, 0, 1, 0, "x" },
	{ "[PATCH v4l2-next 5.10 1/2] x", "PATCH v4l2-next 5.10 1/2", 1, 1, 2,
	  0, "x" },
	{ "[PATCHES] x", "PATCHES", 1, 1, 1, 0, "x" },
	{ "[PATCHSET v2 0/4] x", "PATCHSET v2 0/4", 2, 0, 4, 0, "x" },
	{ "[GIT PULL] x", "", -1, -1, -1, 0, "x" },
	{ "[PATCH 1 of] x", "PATCH 1 of", 1, 1, 1, 0, "x" },
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

/* Undo the \\n and \\t of tests/data/parse/subjects.txt. */
static char *unescape(const char *p, size_t n)
{
	char *out = malloc(n + 1);
	size_t i, o = 0;

	assert_non_null(out);
	for (i = 0; i < n; i++) {
		if (p[i] == '\\' && i + 1 < n &&
		    (p[i + 1] == 'n' || p[i + 1] == 't')) {
			out[o++] = p[++i] == 'n' ? '\n' : '\t';
			continue;
		}
		out[o++] = p[i];
	}
	out[o] = '\0';
	return out;
}

/* Real subjects (tests/data/parse/subjects.txt names each mail). */
static void test_real(void **state)
{
	struct buf data = BUF_INIT(1 << 20);
	struct scan sc;
	const char *line;
	size_t n, nr = 0;

	(void)state;
	golden_read(&data, golden_path("parse", "subjects.txt"));
	scan_init(&sc, data.data, data.len);
	while (scan_line(&sc, &line, &n)) {
		char *f[7];
		const char *p = line, *end = line + n, *bar;
		struct subject s;
		int k;

		if (!n || line[0] == '#')
			continue;
		for (k = 0; k < 7; k++) {
			bar = k < 6 ? mem_find(p, (size_t)(end - p), " | ", 3) :
				      end;
			assert_non_null(bar);
			f[k] = unescape(p, (size_t)(bar - p));
			p = bar + 3;
		}
		print_message("%s (%s)\n", f[0], f[6]);
		subject_parse(&s, f[0], strlen(f[0]));
		assert_string_equal(s.prefix, f[1]);
		assert_int_equal(s.version, atoi(f[2]));
		assert_int_equal(s.index, atoi(f[3]));
		assert_int_equal(s.total, atoi(f[4]));
		assert_string_equal(s.title, f[5]);
		subject_release(&s);
		for (k = 0; k < 7; k++)
			free(f[k]);
		nr++;
	}
	assert_true(nr >= 20);
	buf_release(&data);
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

/*
 * Reply and forward markers as mail clients of every locale write them
 * (Outlook's localised "RE:", "AW:", "SV:", "R:", Thunderbird's
 * mail.reply_prefixes, Gmail), with their brackets, counts and blanks;
 * and what must stay a title: "R: the R language", R-help's "[R]",
 * "VS Code:", a marker after the patch tag.
 */
struct marker_want {
	const char *subject;
	int reply, forward, has_tag;
	const char *title;
};

static const struct marker_want markers[] = {
	{ "R: [PATCH v2 1/3] x", 1, 0, 1, "x" },
	{ "RE : [PATCH] x", 1, 0, 1, "x" },
	{ "RE\xc2\xa0: [PATCH] x", 1, 0, 1, "x" },
	{ "Aw: [PATCH] x", 1, 0, 1, "x" },
	{ "AW: [PATCH] x", 1, 0, 1, "x" },
	{ "Sv: [PATCH] x", 1, 0, 1, "x" },
	{ "SV: [PATCH] x", 1, 0, 1, "x" },
	{ "VS: [PATCH] x", 1, 0, 1, "x" },
	{ "Vs: [PATCH] x", 1, 0, 1, "x" },
	{ "Odp: [PATCH] x", 1, 0, 1, "x" },
	{ "Ynt: [PATCH] x", 1, 0, 1, "x" },
	{ "Antw: [PATCH] x", 1, 0, 1, "x" },
	{ "Antwort: [PATCH] x", 1, 0, 1, "x" },
	{ "Rif: [PATCH] x", 1, 0, 1, "x" },
	{ "R\xc3\xa9"
	  "f: [PATCH] x",
	  1, 0, 1, "x" },
	{ "R\xc3\x89"
	  "F : [PATCH] x",
	  1, 0, 1, "x" },
	{ "Ref: [PATCH] x", 1, 0, 1, "x" },
	{ "Res: [PATCH] x", 1, 0, 1, "x" },
	{ "RES: [PATCH] x", 1, 0, 1, "x" },
	{ "R\xc3\xa9p: [PATCH] x", 1, 0, 1, "x" },
	{ "\xce\x91\xce\xa0: [PATCH] x", 1, 0, 1, "x" },
	{ "\xce\x91\xcf\x80: [PATCH] x", 1, 0, 1, "x" },
	{ "\xce\xa3\xce\xa7\xce\x95\xce\xa4: [PATCH] x", 1, 0, 1, "x" },
	{ "\xd0\x9e\xd1\x82\xd0\xb2: [PATCH] x", 1, 0, 1, "x" },
	{ "\xd0\x9e\xd1\x82\xd0\xb2\xd0\xb5\xd1\x82: [PATCH] x", 1, 0, 1, "x" },
	{ "\xe5\x9b\x9e\xe5\xa4\x8d: [PATCH] x", 1, 0, 1, "x" },
	{ "\xe5\x9b\x9e\xe8\xa6\x86\xef\xbc\x9a[PATCH] x", 1, 0, 1, "x" },
	{ "\xe7\xad\x94\xe5\xa4\x8d: [PATCH] x", 1, 0, 1, "x" },
	{ "\xe7\xad\x94\xe8\xa6\x86: [PATCH] x", 1, 0, 1, "x" },
	{ "\xe8\xbf\x94\xe4\xbf\xa1: [PATCH] x", 1, 0, 1, "x" },
	{ "V\xc3\xa1: [PATCH] x", 1, 0, 1, "x" },
	{ "Odg: [PATCH] x", 1, 0, 1, "x" },
	{ "Atb: [PATCH] x", 1, 0, 1, "x" },
	{ "Svar: [PATCH] x", 1, 0, 1, "x" },
	{ "re: [PATCH] x", 1, 0, 1, "x" },
	{ "[Re] [PATCH] x", 1, 0, 1, "x" },
	{ "[RE:] [PATCH] x", 1, 0, 1, "x" },
	{ "Re[2]: [PATCH] x", 1, 0, 1, "x" },
	{ "Re^2: [PATCH] x", 1, 0, 1, "x" },
	{ "Re: AW: RE: [PATCH] x", 1, 0, 1, "x" },
	{ "Re [PATCH] x", 1, 0, 1, "x" },
	{ "AW AW: [PATCH] x", 1, 0, 1, "x" },
	{ "R: Re: build failure", 1, 0, 0, "build failure" },
	{ "[LTP] R: [PATCH] x", 1, 0, 1, "x" },
	{ "Antwort: build failure", 1, 0, 0, "build failure" },
	{ "\xd0\x9e\xd1\x82\xd0\xb2\xd0\xb5\xd1\x82: build failure", 1, 0, 0,
	  "build failure" },
	{ "\xe8\xbf\x94\xe4\xbf\xa1\xef\xbc\x9a"
	  "build failure",
	  1, 0, 0, "build failure" },
	{ "Re: R: build failure", 1, 0, 0, "R: build failure" },
	{ "Fwd: [PATCH] x", 0, 1, 1, "x" },
	{ "Tr: [PATCH] x", 0, 1, 1, "x" },
	{ "TR: [PATCH] x", 0, 1, 1, "x" },
	{ "WG: [PATCH] x", 0, 1, 1, "x" },
	{ "Enc: [PATCH] x", 0, 1, 1, "x" },
	{ "RV: [PATCH] x", 0, 1, 1, "x" },
	{ "I: [PATCH] x", 0, 1, 1, "x" },
	{ "Fwd [PATCH] x", 0, 1, 1, "x" },
	{ "R: the R language", 0, 0, 0, "R: the R language" },
	{ "R: R: x", 0, 0, 0, "R: R: x" },
	{ "[R] lm() question", 0, 0, 0, "lm() question" },
	{ "Re the plan", 0, 0, 0, "Re the plan" },
	{ "VS Code: settings", 0, 0, 0, "VS Code: settings" },
	{ "I: have a question", 0, 0, 0, "I: have a question" },
	{ "Reference: x", 0, 0, 0, "Reference: x" },
	{ "Response: x", 0, 0, 0, "Response: x" },
	{ "Research: x", 0, 0, 0, "Research: x" },
	{ "Antworten: x", 0, 0, 0, "Antworten: x" },
	{ "\xd0\x9e\xd1\x82\xd0\xb2\xd0\xb5\xd1\x82\xd0\xb8\xd1\x82\xd1\x8c: x",
	  0, 0, 0,
	  "\xd0\x9e\xd1\x82\xd0\xb2\xd0\xb5\xd1\x82\xd0\xb8\xd1\x82\xd1\x8c: x" },
	{ "[PATCH v2 1/3] x", 0, 0, 1, "x" },
	{ "[PATCH v2 1/3] Re: x", 0, 0, 1, "x" },
	{ "[PATCH] R: fix the R bindings", 0, 0, 1, "R: fix the R bindings" },
};

static void test_locale_markers(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(markers) / sizeof(markers[0]); i++) {
		const struct marker_want *w = &markers[i];
		struct subject s;

		subject_parse(&s, w->subject, strlen(w->subject));
		print_message("%s\n", w->subject);
		assert_int_equal(s.reply, w->reply);
		assert_int_equal(s.forward, w->forward);
		assert_int_equal(s.has_tag, w->has_tag);
		assert_string_equal(s.title, w->title);
		subject_release(&s);
	}
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
		cmocka_unit_test(test_real),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_not_terminated),
		cmocka_unit_test(test_locale_markers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
