#include "cmocka_all.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/jsonw.h"
#include "util/utf8.h"

#include <string.h>

static void test_compact_document(void **state)
{
	struct buf b = BUF_INIT(4096);
	struct jsonw w;

	jsonw_init(&w, &b, 0);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "a");
	jsonw_int(&w, -12);
	jsonw_key(&w, "b");
	jsonw_arr_begin(&w);
	jsonw_bool(&w, 1);
	jsonw_null(&w);
	jsonw_strz(&w, "x");
	jsonw_strz(&w, NULL);
	jsonw_arr_end(&w);
	jsonw_key(&w, "empty");
	jsonw_obj_begin(&w);
	jsonw_obj_end(&w);
	jsonw_obj_end(&w);
	assert_int_equal(jsonw_finish(&w), 0);
	assert_string_equal(b.data, "{\"a\":-12,\"b\":[true,null,\"x\",null],"
				    "\"empty\":{}}");
	buf_release(&b);
}

static void test_indented(void **state)
{
	struct buf b = BUF_INIT(4096);
	struct jsonw w;

	jsonw_init(&w, &b, 2);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "k");
	jsonw_arr_begin(&w);
	jsonw_int(&w, 1);
	jsonw_int(&w, 2);
	jsonw_arr_end(&w);
	jsonw_key(&w, "e");
	jsonw_arr_begin(&w);
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	assert_int_equal(jsonw_finish(&w), 0);
	assert_string_equal(b.data, "{\n  \"k\": [\n    1,\n    2\n  ],\n"
				    "  \"e\": []\n}\n");
	buf_release(&b);
}

static void quote_is(const char *in, size_t len, const char *want)
{
	struct buf b = BUF_INIT(4096);

	assert_int_equal(jsonw_quote(&b, in, len), 0);
	assert_string_equal(b.data, want);
	buf_release(&b);
}

static void test_escaping(void **state)
{
	quote_is("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
	quote_is("\n\r\t\b\f", 5, "\"\\n\\r\\t\\b\\f\"");
	quote_is("\x01\x1f", 2, "\"\\u0001\\u001f\"");
	/* NUL inside the data is escaped, not a terminator */
	quote_is("a\0b", 3, "\"a\\u0000b\"");
	/* valid UTF-8 passes through */
	quote_is("K\xc3\xb6nig \xe6\x9d\x8e", 10,
		 "\"K\xc3\xb6nig \xe6\x9d\x8e\"");
	/* latin-1 byte, truncated sequence, overlong, surrogate: U+FFFD */
	quote_is("\xe4x", 2, "\"\xef\xbf\xbdx\"");
	quote_is("\xe6\x9d", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");
	quote_is("\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");
	quote_is("\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	quote_is("\x7f", 1, "\"\x7f\"");
}

static void test_misuse_is_sticky(void **state)
{
	struct buf b = BUF_INIT(4096);
	struct jsonw w;

	jsonw_init(&w, &b, 0);
	jsonw_obj_begin(&w);
	jsonw_int(&w, 1); /* value without key */
	jsonw_obj_end(&w);
	assert_int_equal(jsonw_finish(&w), PB_EINVAL);
	buf_release(&b);

	jsonw_init(&w, &b, 0);
	jsonw_arr_begin(&w);
	assert_int_equal(jsonw_finish(&w), PB_EINVAL);
	buf_release(&b);

	jsonw_init(&w, &b, 0);
	jsonw_int(&w, 1);
	jsonw_int(&w, 2);
	assert_int_equal(jsonw_finish(&w), PB_EINVAL);
	buf_release(&b);
}

static void test_limit(void **state)
{
	struct buf b = BUF_INIT(16);
	struct jsonw w;

	jsonw_init(&w, &b, 0);
	jsonw_arr_begin(&w);
	jsonw_strz(&w, "a long string that does not fit");
	jsonw_arr_end(&w);
	assert_int_equal(jsonw_finish(&w), PB_ELIMIT);
	assert_true(b.len <= 16);
	buf_release(&b);
}

static void test_utf8(void **state)
{
	uint32_t cp;
	char out[4];

	assert_int_equal(utf8_decode(&cp, "\xc2\xa0", 2), 2);
	assert_int_equal(cp, 0xa0);
	assert_int_equal(utf8_decode(&cp, "\xf0\x9f\x98\x80", 4), 4);
	assert_int_equal(cp, 0x1f600);
	assert_int_equal(utf8_decode(&cp, "\xf4\x90\x80\x80", 4), 0);
	assert_int_equal(utf8_decode(&cp, "\xe0\x80\x80", 3), 0);
	assert_int_equal(utf8_decode(&cp, "", 0), 0);
	assert_int_equal(utf8_encode(out, 0xe9), 2);
	assert_memory_equal(out, "\xc3\xa9", 2);
	assert_int_equal(utf8_encode(out, 0xd800), 3);
	assert_memory_equal(out, "\xef\xbf\xbd", 3);
	assert_true(utf8_valid("abc\xe2\x82\xac", 6));
	assert_false(utf8_valid("abc\xe2\x82", 5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compact_document),
		cmocka_unit_test(test_indented),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_misuse_is_sticky),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
