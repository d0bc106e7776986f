#include "cmocka_all.h"
#include "util/printable.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replaces_controls),
		cmocka_unit_test(test_truncates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
