#include "cmocka_all.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/utf8.h"

#include <string.h>

/* The set removed from text we pass on: C1 and the bidi controls, and
 * nothing that is only invisible (that set refuses trailers). */
static void test_display_control(void **state)
{
	(void)state;
	assert_true(utf8_is_display_control(0x80));
	assert_true(utf8_is_display_control(0x9f));
	assert_true(utf8_is_display_control(0x202e));
	assert_true(utf8_is_display_control(0x2066));
	assert_true(utf8_is_display_control(0x2069));
	assert_false(utf8_is_display_control(0x7f));
	assert_false(utf8_is_display_control(0xa0));
	assert_false(utf8_is_display_control(0x200b));
	assert_false(utf8_is_display_control(0x2028));
	assert_true(utf8_is_hidden(0x200b));
	assert_false(utf8_is_hidden(0x85));
}

static void test_clean_line(void **state)
{
	struct buf b = BUF_INIT(64);

	(void)state;
	assert_int_equal(utf8_clean(&b,
				    " a\r\n\tb\xe2\x80\xa8"
				    "c\x01"
				    "\xe2\x80\xae"
				    "d\xff ",
				    17, UTF8_CLEAN_LINE),
			 0);
	assert_string_equal(b.data, "a b cd\xef\xbf\xbd");
	buf_release(&b);
}

static void test_clean_prose(void **state)
{
	struct buf b = BUF_INIT(64);

	(void)state;
	assert_int_equal(utf8_clean(&b,
				    "a\r\nb\rc\td\xc2\x85"
				    "e\xe2\x80\xa8\x0b",
				    15, 0),
			 0);
	assert_string_equal(b.data, "a\nb\nc\tde\xe2\x80\xa8");
	buf_release(&b);
}

/* Past the cap nothing is kept, not even the part that fitted. */
static void test_clean_limit(void **state)
{
	struct buf b = BUF_INIT(4);

	(void)state;
	assert_int_equal(buf_adds(&b, "x"), 0);
	assert_int_equal(utf8_clean(&b, "abcdef", 6, 0), PB_ELIMIT);
	buf_clear_error(&b);
	assert_string_equal(b.data, "x");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_display_control),
		cmocka_unit_test(test_clean_line),
		cmocka_unit_test(test_clean_prose),
		cmocka_unit_test(test_clean_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
