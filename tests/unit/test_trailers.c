#include "cmocka_all.h"
#include "mail/trailers.h"

#include <string.h>

struct want {
	const char *line;
	const char *type; /* NULL: not a trailer */
	const char *name;
	const char *email;
	int irregular;
};

static const struct want lines[] = {
	{ "Acked-by: Jane Doe <jane@example.org>", "Acked-by", "Jane Doe",
	  "jane@example.org", 0 },
	{ "  Reviewed-by: Jane Doe <jane@example.org>", "Reviewed-by",
	  "Jane Doe", "jane@example.org", 0 },
	{ "reviewed-BY: Jane Doe <jane@example.org>", "Reviewed-by", "Jane Doe",
	  "jane@example.org", 1 },
	{ "Tested-By: Jane <jane@example.org>", "Tested-by", "Jane",
	  "jane@example.org", 1 },
	{ "NACKed-by: Jane <jane@example.org>", "Nacked-by", "Jane",
	  "jane@example.org", 1 },
	{ "Nacked-by: Jane <jane@example.org>", "Nacked-by", "Jane",
	  "jane@example.org", 0 },
	{ "Revieved-by: Jane <jane@example.org>", "Reviewed-by", "Jane",
	  "jane@example.org", 1 },
	{ "Reviwed-by: Jane <jane@example.org>", "Reviewed-by", "Jane",
	  "jane@example.org", 1 },
	{ "Ackedby: Jane <jane@example.org>", "Acked-by", "Jane",
	  "jane@example.org", 1 },
	{ "Reviewed by: Jane <jane@example.org>", "Reviewed-by", "Jane",
	  "jane@example.org", 1 },
	{ "Acked-for-MFD-by: Lee Jones <lee@example.org>", "Acked-by",
	  "Lee Jones", "lee@example.org", 1 },
	{ "Reviewed-by: Jane Doe<jane@example.org>", "Reviewed-by", "Jane Doe",
	  "jane@example.org", 0 },
	{ "Reviewed-by: <jane@example.org>", "Reviewed-by", "",
	  "jane@example.org", 0 },
	{ "Reviewed-by: jane@example.org", "Reviewed-by", "",
	  "jane@example.org", 0 },
	{ "Reviewed-by: Joel", "Reviewed-by", "Joel", NULL, 0 },
	{ "Tested-by: Aaron Brown <aaron.f.brown", "Tested-by", "Aaron Brown",
	  NULL, 0 },
	{ "Reviewed-by: Andrea <andrea.cervesato.suse.com>", "Reviewed-by",
	  "Andrea", NULL, 0 },
	{ "Tested-by: Jane [jane@example.org]", "Tested-by", "Jane",
	  "jane@example.org", 0 },
	{ "Tested-by: Gurucharan <g@example.org> (A Contingent worker)",
	  "Tested-by", "Gurucharan", "g@example.org", 0 },
	{ "Reported-by: https://honggfuzz.dev/", "Reported-by",
	  "https://honggfuzz.dev/", NULL, 0 },
	{ "Reviewed-by:\xc2\xa0"
	  "Abhinav\xc2\xa0Kumar <a@example.org>",
	  "Reviewed-by", "Abhinav Kumar", "a@example.org", 0 },
	{ "Series is Acked-by: Christian K\xc3\xb6nig <c@example.org>",
	  "Acked-by", "Christian K\xc3\xb6nig", "c@example.org", 1 },
	{ "\"Jane Doe\" <jane@example.org>", NULL, NULL, NULL, 0 },
	{ "Feel free to add my Acked-by: Jo <jo@example.org>", "Acked-by", "Jo",
	  "jo@example.org", 1 },
	{ "LGTM, Reviewed-by: Jo <jo@example.org>", "Reviewed-by", "Jo",
	  "jo@example.org", 1 },
	{ "I'll add Acked-by: tag in v2", NULL, NULL, NULL, 0 },
	{ "Please add Acked-by: Jo <jo@example.org> to it", NULL, NULL, NULL,
	  0 },
	{ "Reviewed-by: tags are collected by b4", NULL, NULL, NULL, 0 },
	{ "Fixes: 123456789abc (\"foo\")", NULL, NULL, NULL, 0 },
	{ "Cc: Jane <jane@example.org>", NULL, NULL, NULL, 0 },
	{ "Link: https://lore.kernel.org/r/x", NULL, NULL, NULL, 0 },
	{ "Reviewed-by:", NULL, NULL, NULL, 0 },
	{ "Passed-by: Jane <jane@example.org>", NULL, NULL, NULL, 0 },
};

static void test_lines(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		const struct want *w = &lines[i];
		struct trailer_list l;
		int got;

		trailer_list_init(&l);
		got = trailers_parse_line(&l, w->line, strlen(w->line));
		print_message("%s\n", w->line);
		if (!w->type) {
			assert_int_equal(got, 0);
			assert_int_equal(l.nr, 0);
		} else {
			assert_int_equal(got, 1);
			assert_string_equal(l.v[0].type, w->type);
			assert_string_equal(l.v[0].name, w->name);
			if (w->email)
				assert_string_equal(l.v[0].email, w->email);
			else
				assert_null(l.v[0].email);
			assert_int_equal(!!(l.v[0].flags & TRAILER_F_IRREGULAR),
					 w->irregular);
		}
		trailer_list_release(&l);
	}
}

static void test_combined(void **state)
{
	const char *t = "Reviewed-and-tested-by: Z <z@example.org>";
	struct trailer_list l;

	trailer_list_init(&l);
	assert_int_equal(trailers_parse_line(&l, t, strlen(t)), 2);
	assert_string_equal(l.v[0].type, "Reviewed-by");
	assert_string_equal(l.v[1].type, "Tested-by");
	assert_true(l.v[1].flags & TRAILER_F_IRREGULAR);
	trailer_list_release(&l);
}

static void test_scan_scope_and_paragraphs(void **state)
{
	static const char text[] =
		"Looks good.\n"
		"\n"
		"For the series:\n"
		"Reviewed-by: A <a@example.org>\n"
		"Acked-by: B <b@example.org>\n"
		"\n"
		"Reported-by: C <c@example.org>\n"
		"Fixes: 0123456789ab (\"x\")\n"
		"Signed-off-by: D <d@example.org>\n"
		"\n"
		"-:12: ERROR:BAD_SIGN_OFF: Unrecognized email address\n"
		"#12:\n"
		"Reviewed-by: E\n"
		"\n"
		"Tested-by: F <f@example.org>\n"
		"\n"
		"For patches 1-3:\n"
		"Acked-by: G <g@example.org>\n"
		"\n"
		"To both patches:\n"
		"Acked-by: H <h@example.org>\n";
	struct trailer_list l;

	trailer_list_init(&l);
	assert_int_equal(trailers_scan(&l, text, sizeof(text) - 1, 0), 0);
	assert_int_equal(l.nr, 5);
	assert_int_equal(l.v[3].scope, TRAILER_SCOPE_PATCH);
	assert_int_equal(l.v[4].scope, TRAILER_SCOPE_SERIES);
	assert_string_equal(l.v[0].email, "a@example.org");
	assert_int_equal(l.v[0].scope, TRAILER_SCOPE_SERIES);
	assert_int_equal(l.v[1].scope, TRAILER_SCOPE_SERIES);
	assert_string_equal(l.v[2].type, "Tested-by");
	assert_int_equal(l.v[2].scope, TRAILER_SCOPE_PATCH);
	trailer_list_release(&l);

	/* a commit message keeps every trailer */
	trailer_list_init(&l);
	assert_int_equal(
		trailers_scan(&l, text, sizeof(text) - 1, TRAILERS_OWN), 0);
	assert_int_equal(l.nr, 8);
	trailer_list_release(&l);

	/* a reply to a cover letter: series scope throughout */
	trailer_list_init(&l);
	trailers_scan(&l, "Tested-by: F <f@example.org>\n", 29,
		      TRAILERS_SERIES);
	assert_int_equal(l.nr, 1);
	assert_int_equal(l.v[0].scope, TRAILER_SCOPE_SERIES);
	trailer_list_release(&l);
}

static void test_canonical(void **state)
{
	int irr;

	assert_string_equal(trailer_type_canonical("Acked-by", 8, &irr),
			    "Acked-by");
	assert_false(irr);
	assert_string_equal(trailer_type_canonical("signed-of-by", 12, &irr),
			    "Signed-off-by");
	assert_true(irr);
	assert_null(trailer_type_canonical("Cc", 2, &irr));
	assert_null(trailer_type_canonical("Frobbed-by", 10, &irr));
	assert_true(trailer_is_approval("Reviewed-by"));
	assert_false(trailer_is_approval("Reported-by"));
	assert_true(trailer_is_nak("Nacked-by"));
}

static void test_embedded_nul(void **state)
{
	/* NUL bytes inside the line must not end or confuse the parse */
	static const char line[] = "Acked-by: A\0B <a@exa\0mple.org>";
	struct trailer_list l;

	trailer_list_init(&l);
	trailers_parse_line(&l, line, sizeof(line) - 1);
	if (l.nr)
		assert_null(l.v[0].email);
	trailer_list_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_combined),
		cmocka_unit_test(test_scan_scope_and_paragraphs),
		cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_embedded_nul),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
