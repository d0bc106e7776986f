#include "cmocka_all.h"
#include "util/scan.h"

#include <string.h>

static void test_lines(void **state)
{
	static const char text[] = "one\r\ntwo\n\nlast";
	struct scan s;
	const char *l;
	size_t n;

	scan_init(&s, text, sizeof(text) - 1);
	assert_true(scan_line(&s, &l, &n));
	assert_int_equal(n, 3);
	assert_memory_equal(l, "one", 3);
	assert_true(scan_line(&s, &l, &n));
	assert_memory_equal(l, "two", 3);
	assert_true(scan_line(&s, &l, &n));
	assert_int_equal(n, 0);
	assert_true(scan_line(&s, &l, &n));
	assert_int_equal(n, 4);
	assert_false(scan_line(&s, &l, &n));
}

static void test_numbers(void **state)
{
	uint64_t v;
	int64_t i;

	assert_true(mem_to_u64("12345", 5, 99999, &v));
	assert_int_equal(v, 12345);
	assert_false(mem_to_u64("100000", 6, 99999, &v));
	assert_false(mem_to_u64("", 0, 10, &v));
	assert_false(mem_to_u64("12a", 3, 1000, &v));
	assert_true(mem_to_u64("18446744073709551615", 20, UINT64_MAX, &v));
	assert_false(mem_to_u64("18446744073709551616", 20, UINT64_MAX, &v));
	assert_true(mem_to_i64("-9223372036854775808", 20, INT64_MIN, INT64_MAX,
			       &i));
	assert_true(i == INT64_MIN);
	assert_false(mem_to_i64("-5", 2, 0, 10, &i));
	assert_true(mem_to_i64("+7", 2, 0, 10, &i));
	assert_int_equal(i, 7);
}

static void test_literals_and_until(void **state)
{
	static const char text[] = "Acked-By: x <y>";
	struct scan s;
	const char *tok;
	size_t n;

	scan_init(&s, text, strlen(text));
	assert_false(scan_lit(&s, "Acked-by"));
	assert_true(scan_lit_icase(&s, "acked-by"));
	assert_true(scan_char(&s, ':'));
	assert_int_equal(scan_blanks(&s), 1);
	assert_true(scan_until(&s, '<', &tok, &n));
	assert_int_equal(n, 2);
	assert_false(scan_until(&s, '#', &tok, &n));
	assert_int_equal(scan_peek(&s), '<');
}

static void test_nul_safety(void **state)
{
	static const char text[] = "a\0b\nc";
	struct scan s;
	const char *l;
	size_t n;

	scan_init(&s, text, 5);
	assert_true(scan_line(&s, &l, &n));
	assert_int_equal(n, 3);
	assert_non_null(mem_find(text, 5, "b\nc", 3));
	assert_null(mem_find(text, 5, "bc", 2));
	assert_true(mem_eq_icase("ABC", 3, "abc"));
	assert_false(mem_eq_icase("AB", 2, "abc"));
	assert_false(mem_eq_icase("ABCD", 4, "abc"));
}

static void test_trim(void **state)
{
	const char *p = " \t x y \t";
	size_t n = strlen(p);

	mem_trim(&p, &n);
	assert_int_equal(n, 3);
	assert_memory_equal(p, "x y", 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_literals_and_until),
		cmocka_unit_test(test_nul_safety),
		cmocka_unit_test(test_trim),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
