#include "cmocka_all.h"
#include "forge/json.h"
#include "util/err.h"
#include "util/limits.h"

#include <stdlib.h>
#include <string.h>

static struct json_doc *parse_ok(const char *text)
{
	struct json_doc *doc = NULL;

	assert_int_equal(
		json_parse(&doc, text, strlen(text), PB_JSON_DEPTH_MAX), 0);
	assert_non_null(doc);
	return doc;
}

static int parse_rc(const char *text, size_t len, int depth)
{
	struct json_doc *doc = (struct json_doc *)1;
	int rc = json_parse(&doc, text, len, depth);

	if (rc == 0)
		json_doc_free(doc);
	else
		assert_null(doc);
	return rc;
}

static void test_typed_getters(void **state)
{
	struct json_doc *doc = parse_ok(
		"{\"iid\": 12, \"title\": \"T\\u00e9st\", \"draft\": false,"
		" \"sha\": null, \"labels\": [\"a\", \"b\"],"
		" \"author\": {\"id\": 1}, \"n\": 1.5}");
	const struct json_value *root = json_doc_root(doc), *v;
	int64_t i;
	int b, present;
	char *s;

	assert_int_equal(json_get_int(&i, root, "iid"), 0);
	assert_int_equal(i, 12);
	assert_int_equal(json_get_str(&s, root, "title"), 0);
	assert_string_equal(s, "T\xc3\xa9st");
	free(s);
	assert_int_equal(json_get_bool(&b, root, "draft"), 0);
	assert_int_equal(b, 0);
	assert_int_equal(json_get_obj(&v, root, "author"), 0);
	assert_int_equal(json_get_int(&i, v, "id"), 0);
	assert_int_equal(i, 1);
	assert_int_equal(json_get_array(&v, root, "labels"), 0);
	assert_int_equal(json_array_len(v), 2);
	assert_int_equal(json_value_str(&s, json_array_at(v, 1), "label"), 0);
	assert_string_equal(s, "b");
	free(s);
	assert_null(json_array_at(v, 2));

	/* Wrong types name the field. */
	assert_int_equal(json_get_int(&i, root, "title"), PB_EINVAL);
	assert_non_null(strstr(err_msg(), "'title'"));
	assert_non_null(strstr(err_msg(), "expected integer, got string"));
	assert_int_equal(json_get_int(&i, root, "n"), PB_EINVAL);
	assert_int_equal(json_get_str(&s, root, "iid"), PB_EINVAL);
	assert_null(s);
	assert_int_equal(json_get_bool(&b, root, "sha"), PB_EINVAL);
	assert_non_null(strstr(err_msg(), "got null"));
	assert_int_equal(json_get_str(&s, root, "missing"), PB_EINVAL);
	assert_non_null(strstr(err_msg(), "'missing' missing"));
	assert_int_equal(json_get_obj(&v, root, "labels"), PB_EINVAL);
	assert_null(v);

	/* Nullable variants: missing and null are absent, wrong type fails. */
	assert_int_equal(json_get_str_opt(&s, root, "sha"), 0);
	assert_null(s);
	assert_int_equal(json_get_str_opt(&s, root, "nope"), 0);
	assert_null(s);
	assert_int_equal(json_get_str_opt(&s, root, "iid"), PB_EINVAL);
	assert_int_equal(json_get_int_opt(&i, &present, root, "sha"), 0);
	assert_int_equal(present, 0);
	assert_int_equal(json_get_int_opt(&i, &present, root, "iid"), 0);
	assert_int_equal(present, 1);
	assert_int_equal(i, 12);
	assert_int_equal(json_get_bool_opt(&b, root, "sha"), 0);
	assert_int_equal(b, 0);
	assert_int_equal(json_get_obj_opt(&v, root, "sha"), 0);
	assert_null(v);
	assert_int_equal(json_get_array_opt(&v, root, "author"), PB_EINVAL);

	/* Getters on a non-object fail cleanly. */
	assert_int_equal(json_get_array(&v, root, "labels"), 0);
	assert_int_equal(json_get_int(&i, v, "x"), PB_EINVAL);
	assert_int_equal(json_has(root, "sha"), 1);
	assert_int_equal(json_has(root, "zzz"), 0);
	assert_null(json_member(root, "sha"));
	assert_int_equal(json_kind_of(json_member(root, "iid")), JSON_INT);
	json_doc_free(doc);
}

static void test_string_with_nul_rejected(void **state)
{
	struct json_doc *doc = parse_ok("{\"s\": \"a\\u0000b\"}");
	char *s;

	assert_int_equal(json_get_str(&s, json_doc_root(doc), "s"), PB_EINVAL);
	assert_null(s);
	json_doc_free(doc);
}

static void test_malformed(void **state)
{
	static const char *bad[] = {
		"",
		"   ",
		"{",
		"{\"a\": }",
		"{\"a\": 1,}",
		"[1, 2",
		"{\"a\": 1} trailing",
		"{\"a\": 1}{}",
		"<html>502 Bad Gateway</html>",
		"{\"a\": \"\xff\xfe\"}",
		"{\"a\": 01}",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse_rc(bad[i], strlen(bad[i]), PB_JSON_DEPTH_MAX);

		if (rc != PB_EINVAL)
			fail_msg("accepted: %s", bad[i]);
	}
	/* An embedded NUL byte. */
	assert_int_equal(parse_rc("{\"a\":1}\0", 8, PB_JSON_DEPTH_MAX),
			 PB_EINVAL);
	/* Trailing whitespace is fine. */
	assert_int_equal(parse_rc("{\"a\":1}\r\n ", 10, PB_JSON_DEPTH_MAX), 0);
	/* Top-level arrays and scalars are JSON too. */
	assert_int_equal(parse_rc("[]", 2, PB_JSON_DEPTH_MAX), 0);
	assert_int_equal(parse_rc("null", 4, PB_JSON_DEPTH_MAX), 0);
}

static void test_depth_cap(void **state)
{
	char text[512];
	int depth;

	for (depth = 1; depth <= 200; depth *= 2) {
		int i, n = 0, rc;

		for (i = 0; i < depth; i++)
			text[n++] = '[';
		for (i = 0; i < depth; i++)
			text[n++] = ']';
		rc = parse_rc(text, (size_t)n, PB_JSON_DEPTH_MAX);
		if (depth <= 32)
			assert_int_equal(rc, 0);
		else if (depth > PB_JSON_DEPTH_MAX)
			assert_int_equal(rc, PB_EINVAL);
	}
	/* A tighter cap (json-c counts the innermost value as a level). */
	assert_int_equal(parse_rc("[[[1]]]", 7, 3), PB_EINVAL);
	assert_int_equal(parse_rc("[[[1]]]", 7, 4), 0);
}

static int count_members(const char *key, const struct json_value *v, void *arg)
{
	int *n = arg;

	(*n)++;
	return strcmp(key, "b") == 0 ? 7 : 0;
}

static void test_foreach_stops(void **state)
{
	struct json_doc *doc = parse_ok("{\"a\": 1, \"b\": [2], \"c\": null}");
	int n = 0;

	assert_int_equal(
		json_object_foreach(json_doc_root(doc), count_members, &n), 7);
	assert_int_equal(n, 2);
	json_doc_free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_typed_getters),
		cmocka_unit_test(test_string_with_nul_rejected),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_depth_cap),
		cmocka_unit_test(test_foreach_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
