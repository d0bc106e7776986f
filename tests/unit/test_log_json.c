/*
 * [log] format = json: every line is one JSON object that a real parser
 * (json-c, through forge/json.h) reads back, with the same correlation id
 * and the same printable text as the text format - whatever the
 * arguments held: quotes, backslashes, control bytes, broken UTF-8, line
 * separators, a line over the cap.
 */
#include "capture.h"
#include "cmocka_all.h"
#include "forge/json.h"
#include "util/limits.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char captured[8 * PB_LOGLINE_MAX];

#define CAPTURE(call) CAPTURE_STDERR(captured, call)

static int setup(void **state)
{
	(void)state;
	log_open("pbtest", LOG_SINK_STDERR);
	log_set_level(LOG_INFO);
	log_set_format(LOG_FORMAT_JSON);
	log_ctx_clear();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	log_set_format(LOG_FORMAT_TEXT);
	return 0;
}

/* The one line captured, parsed: one object ending in exactly one LF. */
static struct json_doc *parse_line(void)
{
	struct json_doc *doc = NULL;
	size_t n = strlen(captured);

	assert_true(n > 2);
	assert_int_equal(captured[n - 1], '\n');
	assert_null(memchr(captured, '\n', n - 1));
	if (json_parse(&doc, captured, n - 1, 8))
		fail_msg("not JSON: %s", captured);
	return doc;
}

static char *member(struct json_doc *doc, const char *key)
{
	char *v = NULL;

	if (json_get_str_opt(&v, json_doc_root(doc), key))
		fail_msg("%s: %s", key, captured);
	return v;
}

static void check(const char *key, const char *want)
{
	struct json_doc *doc = parse_line();
	char *v = member(doc, key);

	if (!want)
		assert_null(v);
	else
		assert_non_null(v), assert_string_equal(v, want);
	free(v);
	json_doc_free(doc);
}

static void test_fields(void **state)
{
	struct json_doc *doc;
	char *v;
	int64_t pid;

	(void)state;
	CAPTURE(log_warn("spooled as %s", "x.1"));
	doc = parse_line();
	v = member(doc, "level");
	assert_string_equal(v, "warning");
	free(v);
	v = member(doc, "program");
	assert_string_equal(v, "pbtest");
	free(v);
	v = member(doc, "msg");
	assert_string_equal(v, "spooled as x.1");
	free(v);
	v = member(doc, "time");
	assert_int_equal(strlen(v), strlen("2026-12-03T10:00:05.123Z"));
	assert_int_equal(v[10], 'T');
	assert_int_equal(v[23], 'Z');
	free(v);
	assert_int_equal(json_get_int(&pid, json_doc_root(doc), "pid"), 0);
	assert_int_equal(pid, (int64_t)getpid());
	/* no correlation id, no "id" */
	assert_false(json_has(json_doc_root(doc), "id"));
	json_doc_free(doc);

	log_ctx_set("group/project!12 v3");
	CAPTURE(log_info("applied"));
	check("id", "group/project!12 v3");
	log_ctx_clear();
}

/* What the text format makes printable stays so; JSON escapes the rest. */
static void test_hostile(void **state)
{
	(void)state;
	log_ctx_set("evil\"id\\\n{\"x\":1}");
	CAPTURE(log_info("%s", "a \"quoted\" \\back\\ slash"));
	check("msg", "a \"quoted\" \\back\\ slash");
	CAPTURE(log_info("x"));
	check("id", "evil\"id\\?{\"x\":1}");
	log_ctx_clear();
	CAPTURE(log_info("%s|%s|%s", "cr\rlf\nesc\x1b[2J", "tab\tdel\x7f",
			 "}\n{\"level\":\"err\""));
	check("msg", "cr?lf?esc?[2J|tab?del?|}?{\"level\":\"err\"");
	CAPTURE(log_error("%s %s %s", "J\xc3\xb6rg", "ls\xe2\x80\xa8",
			  "bad\xff\xc3"));
	check("msg", "J\xc3\xb6rg ls??? bad??");
}

/* A line at the cap, every byte needing an escape: cut, still one
 * object, the text a prefix of what was said. */
static void test_long_line(void **state)
{
	static char big[2 * PB_LOGLINE_MAX];
	struct json_doc *doc;
	char *v;
	size_t i;

	(void)state;
	memset(big, '"', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_ctx_set("q1");
	CAPTURE(log_info("%s", big));
	doc = parse_line();
	v = member(doc, "msg");
	assert_true(strlen(v) > 100);
	for (i = 0; v[i]; i++)
		assert_int_equal(v[i], '"');
	free(v);
	v = member(doc, "id");
	assert_string_equal(v, "q1");
	free(v);
	json_doc_free(doc);
	/* multi-byte characters are not split by the escaping (the cut
	 * of the formatted line may leave half of one: a '?', as in the
	 * text format) */
	for (i = 0; i + 2 < sizeof(big) - 1; i += 2)
		memcpy(big + i, "\xc3\xb6", 2);
	big[i] = '\0';
	CAPTURE(log_info("%s", big));
	doc = parse_line();
	v = member(doc, "msg");
	i = strlen(v);
	if (i && v[i - 1] == '?')
		i--;
	assert_true(i > 100);
	assert_int_equal(i % 2, 0);
	assert_int_equal(memcmp(v, big, i), 0);
	free(v);
	json_doc_free(doc);
	log_ctx_clear();
}

static void test_format_names(void **state)
{
	(void)state;
	assert_int_equal(log_format_from_name("text"), LOG_FORMAT_TEXT);
	assert_int_equal(log_format_from_name("json"), LOG_FORMAT_JSON);
	assert_int_equal(log_format_from_name("JSON"), -1);
	assert_int_equal(log_format_from_name(""), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_line, setup,
						teardown),
		cmocka_unit_test(test_format_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
