#include "cmocka_all.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

static void test_empty_is_terminated(void **state)
{
	struct buf b = BUF_INIT(16);

	assert_non_null(b.data);
	assert_string_equal(b.data, "");
	assert_int_equal(b.len, 0);
	buf_release(&b);
	assert_string_equal(b.data, "");
}

static void test_add_and_format(void **state)
{
	struct buf b;

	buf_init(&b, 1024);
	assert_int_equal(buf_adds(&b, "abc"), 0);
	assert_int_equal(buf_addch(&b, '-'), 0);
	assert_int_equal(buf_addf(&b, "%d/%s", 42, "x"), 0);
	assert_string_equal(b.data, "abc-42/x");
	assert_int_equal(b.len, 8);
	assert_true(buf_eqs(&b, "abc-42/x"));
	buf_truncate(&b, 3);
	assert_string_equal(b.data, "abc");
	buf_release(&b);
}

static void test_cap_is_enforced(void **state)
{
	struct buf b = BUF_INIT(8);

	assert_int_equal(buf_adds(&b, "12345678"), 0);
	assert_int_equal(buf_addch(&b, 'x'), PB_ELIMIT);
	/* A failed append leaves the buffer as it was. */
	assert_string_equal(b.data, "12345678");
	assert_int_equal(buf_addf(&b, "%s", "y"), PB_ELIMIT);
	assert_int_equal(b.len, 8);
	buf_release(&b);
}

static void test_embedded_nul(void **state)
{
	struct buf b = BUF_INIT(64);

	assert_int_equal(buf_add(&b, "a\0b", 3), 0);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.data, "a\0b", 4);
	buf_release(&b);
}

static void test_growth_many(void **state)
{
	struct buf b = BUF_INIT(1 << 20);
	int i;

	for (i = 0; i < 10000; i++)
		assert_int_equal(buf_addf(&b, "%04d", i % 10000), 0);
	assert_int_equal(b.len, 40000);
	assert_memory_equal(b.data + 39996, "9999", 4);
	buf_release(&b);
}

static void test_detach_and_rtrim(void **state)
{
	struct buf b = BUF_INIT(64);
	size_t len;
	char *p;

	buf_sets(&b, "line \r\n\t");
	buf_rtrim(&b);
	assert_string_equal(b.data, "line");
	p = buf_detach(&b, &len);
	assert_string_equal(p, "line");
	assert_int_equal(len, 4);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.data, "");
	free(p);
	p = buf_detach(&b, NULL);
	assert_string_equal(p, "");
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_is_terminated),
		cmocka_unit_test(test_add_and_format),
		cmocka_unit_test(test_cap_is_enforced),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_growth_many),
		cmocka_unit_test(test_detach_and_rtrim),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
