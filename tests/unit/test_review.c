/*
 * The whole inbound parse, data-driven: tests/data/parse/NAME.eml is
 * parsed (against the patch named in NAME.parent, when there is one) and
 * the `patchbridge parse` JSON compared with NAME.json.
 */
#include "cmocka_all.h"
#include "core/diff.h"
#include "core/mail.h"
#include "core/review.h"
#include "golden.h"

#include <stdio.h>
#include <string.h>

static void run_one(const char *name, int *bad)
{
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
	assert_int_equal(review_parse(&r, raw.data, raw.len, d, NULL), 0);
	assert_int_equal(review_to_json(&json, r), 0);
	snprintf(path, sizeof(path), "%.*s.json", (int)n, name);
	if (!golden_check(golden_path("parse", path), &json))
		(*bad)++;
	review_free(r);
	diff_free(d);
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
	static const char raw[] =
		"From: Ivan <ivan@example.net>\n"
		"Subject: Re: [PATCH 1/2] x\n"
		"Authentication-Results: mx.example.net; dkim=pass "
		"header.d=example.net\n"
		"Authentication-Results: evil.example; dmarc=pass\n"
		"\n"
		"Acked-by: Ivan <ivan@example.net>\n";
	struct review_options opts = { "mx.example.net" };
	struct review *r;

	assert_int_equal(review_parse(&r, raw, sizeof(raw) - 1, NULL, &opts),
			 0);
	assert_true(r->auth.verified);
	assert_int_equal(r->auth.dkim, AR_PASS);
	assert_int_equal(r->auth.dmarc, AR_NONE);
	assert_int_equal(r->kind, REVIEW_REPLY);
	assert_int_equal(r->trailers.nr, 1);
	review_free(r);

	opts.trusted_authserv_id = "other.example";
	assert_int_equal(review_parse(&r, raw, sizeof(raw) - 1, NULL, &opts),
			 0);
	assert_false(r->auth.verified);
	review_free(r);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_trusted_auth),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
