/* The forge-independent helpers of forge.c and gitlab.c's pure parts. */
#include "cmocka_all.h"
#include "forge/forge.h"
#include "forge/gitlab.h"
#include "util/err.h"

#include <string.h>

static void test_marker_format(void **state)
{
	struct buf b = BUF_INIT(256);

	assert_int_equal(forge_marker_format(&b, "3f2a9c.1"), 0);
	assert_string_equal(b.data, "<!-- patchbridge:3f2a9c.1 -->");
	buf_reset(&b);
	assert_int_equal(forge_body_with_marker(&b, "LGTM", "k:2"), 0);
	assert_string_equal(b.data, "LGTM\n\n<!-- patchbridge:k:2 -->");
	assert_true(forge_marker_in(b.data, "k:2"));
	assert_false(forge_marker_in(b.data, "k:20"));
	assert_false(forge_marker_in(b.data, "k"));
	assert_false(forge_marker_in(NULL, "k:2"));
	/* Only where the bridge writes it: at the end, after a blank line. */
	assert_false(
		forge_marker_in("<!-- patchbridge:k:2 -->\n\nLGTM", "k:2"));
	assert_false(forge_marker_in("A <!-- patchbridge:k:2 --> B", "k:2"));
	assert_false(
		forge_marker_in("A\n\n<!-- patchbridge:k:2 -->\nB", "k:2"));
	assert_false(forge_marker_in("A <!-- patchbridge:k:2 -->", "k:2"));
	assert_true(forge_marker_in("A\n\n<!-- patchbridge:k:2 -->\n", "k:2"));
	assert_true(forge_marker_in("\n\n<!-- patchbridge:k:2 -->", "k:2"));
	buf_release(&b);
}

static void test_marker_key_rules(void **state)
{
	char long_key[PB_MARKER_KEY_MAX + 2];
	struct buf b = BUF_INIT(16);

	assert_int_equal(forge_marker_key_check("abc-DEF_0.9:x"), 0);
	/* Nothing that could end the comment or the line. */
	assert_int_equal(forge_marker_key_check("a-->b"), PB_EINVAL);
	assert_int_equal(forge_marker_key_check("a--b"), PB_EINVAL);
	assert_int_equal(forge_marker_key_check("a b"), PB_EINVAL);
	assert_int_equal(forge_marker_key_check("a\nb"), PB_EINVAL);
	assert_int_equal(forge_marker_key_check("<x>"), PB_EINVAL);
	assert_int_equal(forge_marker_key_check(""), PB_EINVAL);
	assert_int_equal(forge_marker_key_check(NULL), PB_EINVAL);
	memset(long_key, 'a', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	assert_int_equal(forge_marker_key_check(long_key), PB_EINVAL);
	long_key[PB_MARKER_KEY_MAX] = '\0';
	assert_int_equal(forge_marker_key_check(long_key), 0);
	/* A body that does not fit leaves the buffer as it was. */
	assert_int_equal(forge_body_with_marker(&b, "hello", "key"), PB_ELIMIT);
	assert_string_equal(b.data, "");
	buf_release(&b);
}

static void test_time(void **state)
{
	struct buf b = BUF_INIT(64);
	int64_t ms;

	assert_int_equal(forge_time_parse(&ms, "1970-01-01T00:00:00Z"), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(forge_time_parse(&ms, "2016-07-26T14:44:48.926Z"), 0);
	assert_int_equal(ms, 1469544288926LL);
	/* An offset: the same instant. */
	assert_int_equal(forge_time_parse(&ms, "2016-07-26T17:44:48.926+03:00"),
			 0);
	assert_int_equal(ms, 1469544288926LL);
	assert_int_equal(forge_time_parse(&ms, "2016-07-26T12:44:48.9-0200"),
			 0);
	assert_int_equal(ms, 1469544288900LL);
	/* Webhook style. */
	assert_int_equal(forge_time_parse(&ms, "2015-05-17 18:21:36 UTC"), 0);
	assert_int_equal(ms, 1431886896000LL);
	/* Leap day, digits past milliseconds. */
	assert_int_equal(forge_time_parse(&ms, "2024-02-29T23:59:59.9999Z"), 0);
	assert_int_equal(ms, 1709251199999LL);

	assert_int_equal(forge_time_parse(&ms, "2016-07-26"), PB_EINVAL);
	assert_int_equal(forge_time_parse(&ms, "2016-13-01T00:00:00Z"),
			 PB_EINVAL);
	assert_int_equal(forge_time_parse(&ms, "2016-07-26T14:44:48"),
			 PB_EINVAL);
	assert_int_equal(forge_time_parse(&ms, "2016-07-26T14:44:48.Z"),
			 PB_EINVAL);
	assert_int_equal(forge_time_parse(&ms, "2016-07-26T14:44:48Zjunk"),
			 PB_EINVAL);
	assert_int_equal(forge_time_parse(&ms, NULL), PB_EINVAL);

	assert_int_equal(forge_time_format(&b, 1469544288926LL), 0);
	assert_string_equal(b.data, "2016-07-26T14:44:48.926Z");
	buf_release(&b);
}

static void test_cursor(void **state)
{
	struct forge_mr_cursor c;

	forge_mr_cursor_init(&c);
	forge_mr_cursor_add(&c, 1, 1000);
	forge_mr_cursor_add(&c, 1, 1000);
	forge_mr_cursor_add(&c, 1, 2000);
	forge_mr_cursor_add(&c, 2, 5000);
	assert_int_equal(c.nr, 3);
	assert_true(forge_mr_cursor_has(&c, 1, 1000));
	assert_false(forge_mr_cursor_has(&c, 2, 1000));
	c.watermark_ms = 5000;
	forge_mr_cursor_prune(&c, 3000);
	assert_int_equal(c.nr, 2);
	assert_false(forge_mr_cursor_has(&c, 1, 1000));
	assert_true(forge_mr_cursor_has(&c, 1, 2000));
	forge_mr_cursor_release(&c);
	assert_int_equal(c.nr, 0);
}

static void test_position_lines(void **state)
{
	struct forge_position p;

	memset(&p, 0, sizeof(p));
	assert_int_equal(forge_position_set_line(&p, FORGE_LINE_ADDED, 3, 4),
			 0);
	assert_int_equal(p.old_line, 0);
	assert_int_equal(p.new_line, 4);
	assert_int_equal(forge_position_set_line(&p, FORGE_LINE_REMOVED, 3, 4),
			 0);
	assert_int_equal(p.old_line, 3);
	assert_int_equal(p.new_line, 0);
	assert_int_equal(forge_position_set_line(&p, FORGE_LINE_CONTEXT, 3, 5),
			 0);
	assert_int_equal(p.old_line, 3);
	assert_int_equal(p.new_line, 5);
	assert_int_equal(forge_position_set_line(&p, FORGE_LINE_CONTEXT, 0, 5),
			 PB_EINVAL);
	assert_int_equal(forge_position_set_line(&p, FORGE_LINE_ADDED, 3, 0),
			 PB_EINVAL);
	assert_int_equal(forge_position_set_line(&p, FORGE_LINE_REMOVED, 0, 4),
			 PB_EINVAL);
}

static void expect_error_text(const char *body, const char *want)
{
	struct buf b = BUF_INIT(512);

	gitlab_error_text(&b, body, strlen(body));
	assert_string_equal(b.data, want);
	buf_release(&b);
}

static void test_error_text(void **state)
{
	expect_error_text("{\"message\":\"404 Project Not Found\"}",
			  "404 Project Not Found");
	expect_error_text("{\"message\": {\"bio\": [\"is too long\", "
			  "\"is odd\"], \"name\": [\"is blank\"]}}",
			  "bio: is too long, is odd; name: is blank");
	expect_error_text("{\"message\":{\"error\":\"Spam detected.\"}}",
			  "error: Spam detected.");
	expect_error_text("{\"error\":\"position[position_type] does not "
			  "have a valid value\"}",
			  "position[position_type] does not have a valid "
			  "value");
	expect_error_text("{\"error\":\"insufficient_scope\","
			  "\"error_description\":\"The request requires "
			  "higher privileges.\",\"scope\":\"sudo\"}",
			  "insufficient_scope: The request requires higher "
			  "privileges.");
	expect_error_text("Retry later\n", "Retry later");
	expect_error_text("\n  <html><body>502</body></html>\n",
			  "<html><body>502</body></html>");
	expect_error_text("<!DOCTYPE html>\n<html>\n<head><title>502 Bad "
			  "Gateway</title></head>\n<body>…</body></html>\n",
			  "502 Bad Gateway");
	expect_error_text("", "");
	/* Nothing usable: the body itself. */
	expect_error_text("{\"message\": 42}", "{\"message\": 42}");
	/* Long text is cut at the buffer's max, never overflows. */
	{
		struct buf b = BUF_INIT(10);

		const char *body = "{\"message\":\"0123456789abcdef\"}";

		gitlab_error_text(&b, body, strlen(body));
		assert_string_equal(b.data, "0123456789");
		buf_release(&b);
	}
}

static void test_status_codes(void **state)
{
	assert_int_equal(gitlab_status_code(400), PB_EINVAL);
	assert_int_equal(gitlab_status_code(401), PB_EPERM);
	assert_int_equal(gitlab_status_code(403), PB_EPERM);
	assert_int_equal(gitlab_status_code(404), PB_ENOTFOUND);
	assert_int_equal(gitlab_status_code(409), PB_EINVAL);
	assert_int_equal(gitlab_status_code(422), PB_EINVAL);
	assert_int_equal(gitlab_status_code(429), PB_ETEMP);
	assert_int_equal(gitlab_status_code(500), PB_ETEMP);
	assert_int_equal(gitlab_status_code(503), PB_ETEMP);
	assert_int_equal(gitlab_status_code(418), PB_ERROR);
}

static void test_constructor_checks(void **state)
{
	struct forge_gitlab_opts o;
	struct forge *f = (struct forge *)1;

	memset(&o, 0, sizeof(o));
	o.token = "t";
	assert_int_equal(forge_gitlab_new(&f, &o), PB_EINVAL);
	assert_null(f);
	o.base_url = "gitlab.example.com";
	assert_int_equal(forge_gitlab_new(&f, &o), PB_EINVAL);
	o.base_url = "https://gitlab.example.com/";
	o.token = "bad\r\ntoken";
	assert_int_equal(forge_gitlab_new(&f, &o), PB_EINVAL);
	o.token = "good";
	assert_int_equal(forge_gitlab_new(&f, &o), 0);
	assert_int_equal(forge_act_as(f, "alice"), 0);
	assert_int_equal(forge_act_as(f, "42"), 0);
	assert_int_equal(forge_act_as(f, "a b"), PB_EINVAL);
	assert_int_equal(forge_act_as(f, "x\r\nEvil: 1"), PB_EINVAL);
	assert_int_equal(forge_act_as(f, NULL), 0);
	forge_free(f);
	forge_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_marker_format),
		cmocka_unit_test(test_marker_key_rules),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_cursor),
		cmocka_unit_test(test_position_lines),
		cmocka_unit_test(test_error_text),
		cmocka_unit_test(test_status_codes),
		cmocka_unit_test(test_constructor_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
