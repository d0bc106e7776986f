#include "cmocka_all.h"
#include "util/printable.h"

#include <string.h>

static void test_replaces_controls(void **state)
{
	char out[64];

	printable_copy(out, sizeof(out), "a\r\nb\0c\x1b[31m\xc3\xa9", 13);
	assert_string_equal(out, "a??b?c?[31m??");
	assert_true(printable_check("plain text", 10));
	assert_false(printable_check("new\nline", 8));
}

static void test_truncates(void **state)
{
	char out[8];

	printable_copy(out, sizeof(out), "0123456789", 10);
	assert_string_equal(out, "0123...");
	printable_copy(out, sizeof(out), "0123456", 7);
	assert_string_equal(out, "0123456");
	printable_copy(out, sizeof(out), NULL, 5);
	assert_string_equal(out, "");
}

static void test_line(void **state)
{
	char s[] =
		"ok J\xc3\xb6rg \n\r\x1b\x7f \xc2\x9b \xe2\x80\xa9 "
		"\xe2\x81\xa6 \xed\xa0\x80 \xc0\xaf \xf0\x9f\x98\x80 \xe2\x82";

	(void)state;
	/* C0, DEL, CSI (C1), U+2029, U+2066, a surrogate, an overlong "/",
	 * a cut sequence; an emoji stays. */
	assert_int_equal(printable_line(s, strlen(s)),
			 4 + 2 + 3 + 3 + 3 + 2 + 2);
	assert_string_equal(s, "ok J\xc3\xb6rg ???? ?? ??? ??? ??? ?? "
			       "\xf0\x9f\x98\x80 ??");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replaces_controls),
		cmocka_unit_test(test_truncates),
		cmocka_unit_test(test_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
