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
	assert_int_equal(buf_error(&b), 0);
	assert_int_equal(buf_addch(&b, 'x'), PB_ELIMIT);
	/* A failed append adds nothing. */
	assert_string_equal(b.data, "12345678");
	assert_int_equal(buf_addf(&b, "%s", "y"), PB_ELIMIT);
	assert_int_equal(b.len, 8);
	assert_int_equal(buf_error(&b), PB_ELIMIT);
	assert_non_null(strstr(err_msg(), "limit of 8 bytes"));
	buf_release(&b);
	assert_int_equal(buf_error(&b), 0);
}

/* After the first failure nothing more is added, even what would fit:
 * the text is never cut in the middle. */
static void test_failure_is_sticky(void **state)
{
	struct buf b = BUF_INIT(8);

	assert_int_equal(buf_adds(&b, "abc"), 0);
	assert_int_equal(buf_adds(&b, "too long"), PB_ELIMIT);
	assert_int_equal(buf_adds(&b, "de"), PB_ELIMIT);
	assert_int_equal(buf_addch(&b, 'f'), PB_ELIMIT);
	assert_int_equal(buf_add(&b, "g", 1), PB_ELIMIT);
	assert_int_equal(buf_grow(&b, 1), PB_ELIMIT);
	assert_string_equal(b.data, "abc");
	/* Rolling back keeps the mark ... */
	buf_truncate(&b, 1);
	assert_int_equal(buf_addch(&b, 'x'), PB_ELIMIT);
	assert_string_equal(b.data, "a");
	/* ... the caller that keeps what fitted clears it ... */
	buf_clear_error(&b);
	assert_int_equal(buf_error(&b), 0);
	assert_int_equal(buf_addch(&b, 'x'), 0);
	assert_string_equal(b.data, "ax");
	/* ... and a fresh start forgets it. */
	assert_int_equal(buf_adds(&b, "123456789"), PB_ELIMIT);
	buf_reset(&b);
	assert_int_equal(buf_adds(&b, "12"), 0);
	assert_int_equal(buf_adds(&b, "123456789"), PB_ELIMIT);
	assert_int_equal(buf_sets(&b, "new"), 0);
	assert_string_equal(b.data, "new");
	assert_int_equal(buf_adds(&b, "123456789"), PB_ELIMIT);
	free(buf_detach(&b, NULL));
	assert_int_equal(buf_adds(&b, "ok"), 0);
	assert_int_equal(buf_error(&b), 0);
	buf_release(&b);
}

/* The one check at the end: pieces appended without looking. */
static void write_pieces(struct buf *b, int n)
{
	int i;

	for (i = 0; i < n; i++)
		(void)buf_addf(b, "piece %d;", i);
}

static void test_one_check_at_the_end(void **state)
{
	struct buf b = BUF_INIT(30);

	write_pieces(&b, 3);
	assert_int_equal(buf_error(&b), 0);
	assert_string_equal(b.data, "piece 0;piece 1;piece 2;");
	buf_reset(&b);
	write_pieces(&b, 10);
	assert_int_equal(buf_error(&b), PB_ELIMIT);
	assert_string_equal(b.data, "piece 0;piece 1;piece 2;");
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

/* buf_grown_size() is what buf_grow() then allocates. */
static void test_grown_size(void **state)
{
	struct buf b = BUF_INIT(1 << 20);
	size_t want;
	int i;

	(void)state;
	assert_int_equal(buf_grown_size(&b, 0), 64);
	for (i = 1; i < 20; i++) {
		size_t extra = (size_t)i * 977;

		want = buf_grown_size(&b, extra);
		assert_true(want >= b.len + extra + 1);
		assert_int_equal(buf_grow(&b, extra), 0);
		assert_int_equal(b.alloc, want);
		assert_int_equal(buf_grown_size(&b, 0), b.alloc);
		b.len += extra;
		b.data[b.len] = '\0';
	}
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
		cmocka_unit_test(test_failure_is_sticky),
		cmocka_unit_test(test_one_check_at_the_end),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_growth_many),
		cmocka_unit_test(test_grown_size),
		cmocka_unit_test(test_detach_and_rtrim),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
