/* The pure helpers of forge/http.c: no network. */
#include "cmocka_all.h"
#include "forge/http.h"
#include "util/err.h"
#include "util/limits.h"

#include <string.h>

static void expect_escape(const char *in, const char *want)
{
	struct buf b = BUF_INIT(256);

	assert_int_equal(http_escape(&b, in), 0);
	assert_string_equal(b.data, want);
	buf_release(&b);
}

static void test_escape(void **state)
{
	expect_escape("group/project", "group%2Fproject");
	expect_escape("a-b_c.d~e", "a-b_c.d~e");
	expect_escape("2024-01-01T00:00:00+02:00",
		      "2024-01-01T00%3A00%3A00%2B02%3A00");
	expect_escape("a b&c=d?e#f%", "a%20b%26c%3Dd%3Fe%23f%25");
	expect_escape("caf\xc3\xa9", "caf%C3%A9");
	expect_escape("", "");
}

static void test_escape_cap(void **state)
{
	struct buf b = BUF_INIT(8);

	assert_int_equal(buf_adds(&b, "x"), 0);
	assert_int_equal(http_escape(&b, "////"), PB_ELIMIT);
	/* Nothing half-written. */
	assert_string_equal(b.data, "x");
	buf_release(&b);
}

static int link_rc(struct buf *b, const char *link, const char *rel)
{
	buf_reset(b);
	return http_link_find(b, link, rel);
}

static void test_link(void **state)
{
	const char *gl =
		"<https://gitlab.example.com/api/v4/projects/8/issues/8/"
		"notes?page=1&per_page=3>; rel=\"prev\", "
		"<https://gitlab.example.com/api/v4/projects/8/issues/8/"
		"notes?page=3&per_page=3>; rel=\"next\", "
		"<https://gitlab.example.com/api/v4/projects/8/issues/8/"
		"notes?page=1&per_page=3>; rel=\"first\", "
		"<https://gitlab.example.com/api/v4/projects/8/issues/8/"
		"notes?page=3&per_page=3>; rel=\"last\"";
	struct buf b = BUF_INIT(PB_HTTP_URL_MAX);

	assert_int_equal(link_rc(&b, gl, "next"), 0);
	assert_string_equal(b.data, "https://gitlab.example.com/api/v4/"
				    "projects/8/issues/8/notes?page=3&"
				    "per_page=3");
	assert_int_equal(link_rc(&b, gl, "prev"), 0);
	assert_non_null(strstr(b.data, "page=1&"));

	/* Last page: no next. */
	assert_int_equal(link_rc(&b,
				 "<https://h/x?page=1>; rel=\"first\", "
				 "<https://h/x?page=1>; rel=\"last\"",
				 "next"),
			 PB_ENOTFOUND);
	assert_int_equal(link_rc(&b, "", "next"), PB_ENOTFOUND);

	/* Unquoted, odd spacing, case, several relation types, other
	 * parameters and a comma inside the URI. */
	assert_int_equal(link_rc(&b, "<https://h/a,b?x=1>;rel=NEXT", "next"),
			 0);
	assert_string_equal(b.data, "https://h/a,b?x=1");
	assert_int_equal(link_rc(&b,
				 " ,<https://h/1> ; title=\"a;b,c\" ; "
				 "rel=\"prev next\" ,",
				 "next"),
			 0);
	assert_string_equal(b.data, "https://h/1");
	assert_int_equal(link_rc(&b, "<https://h/1>; rel=\"nextish\"", "next"),
			 PB_ENOTFOUND);

	/* Garbage. */
	assert_int_equal(link_rc(&b, "https://h/1; rel=next", "next"),
			 PB_EINVAL);
	assert_int_equal(link_rc(&b, "<https://h/1; rel=next", "next"),
			 PB_EINVAL);
	assert_int_equal(link_rc(&b, "<https://h/1>; rel=\"next", "next"),
			 PB_EINVAL);
	assert_int_equal(link_rc(&b, "<https://h/1> junk", "next"), PB_EINVAL);
	buf_release(&b);
}

static void test_same_origin(void **state)
{
	assert_true(http_same_origin("https://gitlab.example.com/api/v4",
				     "https://GitLab.example.com/x?y#z"));
	assert_true(http_same_origin("https://h:443/a", "https://h/b"));
	assert_true(http_same_origin("http://127.0.0.1:8080/a",
				     "http://127.0.0.1:8080"));
	assert_true(http_same_origin("http://[::1]:80/a", "http://[::1]/b"));
	assert_false(http_same_origin("https://h/a", "http://h/a"));
	assert_false(http_same_origin("https://h/a", "https://h:8443/a"));
	assert_false(http_same_origin("https://h/a", "https://h.evil/a"));
	assert_false(http_same_origin("https://h/a", "https://h@evil/a"));
	assert_false(http_same_origin("https://h/a", "/relative"));
	assert_false(http_same_origin("ftp://h/a", "ftp://h/a"));
	assert_false(http_same_origin("https://h:99999/", "https://h:99999/"));
	/* Judged by curl_url(), the parser that connects: what a hand
	 * parser might read as host h is another host to libcurl. */
	assert_false(http_same_origin("http://h/a", "http://h:80@evil/a"));
	assert_false(http_same_origin("http://h/a", "http://evil#@h/a"));
	assert_false(http_same_origin("http://h/a", "http://evil?@h/a"));
	assert_true(http_same_origin("HTTPS://H/a", "https://h:443/b"));
	assert_true(http_same_origin("http://gitlab.internal:8080/api/v4",
				     "http://gitlab.internal:8080/api/v4/"
				     "projects?page=2"));
	assert_false(http_same_origin("http://gitlab.internal:8080/api/v4",
				      "https://gitlab.example.org/api/v4/"
				      "projects?page=2"));
}

static void test_parse_numbers(void **state)
{
	int64_t v;

	assert_int_equal(http_parse_retry_after(&v, "120"), 0);
	assert_int_equal(v, 120);
	assert_int_equal(http_parse_retry_after(&v, " 0 "), 0);
	assert_int_equal(v, 0);
	assert_int_equal(http_parse_retry_after(&v, "Fri, 31 Dec 1999 "
						    "23:59:59 GMT"),
			 PB_EINVAL);
	assert_int_equal(http_parse_retry_after(&v, "-1"), PB_EINVAL);
	assert_int_equal(http_parse_retry_after(&v, ""), PB_EINVAL);
	assert_int_equal(http_parse_retry_after(&v, "99999999999999999999"),
			 PB_EINVAL);
	assert_int_equal(http_parse_uint(&v, "1700000000"), 0);
	assert_int_equal(v, 1700000000);
}

static void test_retry_delay(void **state)
{
	const struct http_backoff p = { 100, 10000 };
	const int64_t now = 1700000000500; /* ms */
	int64_t d;

	/* Retry-After wins, exactly, no jitter. */
	assert_int_equal(
		http_retry_delay(&d, &p, 1, "3", "1700000009", now, 12345), 0);
	assert_int_equal(d, 3000);
	/* Then RateLimit-Reset, an epoch second (not a delta). */
	assert_int_equal(
		http_retry_delay(&d, &p, 1, NULL, "1700000002", now, 12345), 0);
	assert_int_equal(d, 1500);
	/* An unparsable Retry-After falls through to RateLimit-Reset. */
	assert_int_equal(http_retry_delay(&d, &p, 1, "Wed, 21 Oct 2015",
					  "1700000002", now, 0),
			 0);
	assert_int_equal(d, 1500);
	/* A reset in the past falls back to exponential backoff. */
	assert_int_equal(
		http_retry_delay(&d, &p, 1, NULL, "1600000000", now, 0), 0);
	assert_int_equal(d, 50);

	/* Exponential: base * 2^(n-1), half fixed, half jitter. */
	assert_int_equal(http_retry_delay(&d, &p, 1, NULL, NULL, now, 0), 0);
	assert_int_equal(d, 50);
	assert_int_equal(http_retry_delay(&d, &p, 1, NULL, NULL, now, 50), 0);
	assert_int_equal(d, 100);
	assert_int_equal(http_retry_delay(&d, &p, 3, NULL, NULL, now, 0), 0);
	assert_int_equal(d, 200);
	assert_int_equal(http_retry_delay(&d, &p, 3, NULL, NULL, now, 200), 0);
	assert_int_equal(d, 400);
	assert_int_equal(http_retry_delay(&d, &p, 3, NULL, NULL, now, 201), 0);
	assert_int_equal(d, 200);
	/* Capped, however many attempts. */
	assert_int_equal(http_retry_delay(&d, &p, 60, NULL, NULL, now, 5000),
			 0);
	assert_int_equal(d, 10000);
	assert_int_equal(http_retry_delay(&d, &p, 1000, NULL, NULL, now, 0), 0);
	assert_int_equal(d, 5000);
	/* Attempt 0 is treated as the first. */
	assert_int_equal(http_retry_delay(&d, &p, 0, NULL, NULL, now, 0), 0);
	assert_int_equal(d, 50);

	/* The server asks for longer than the cap: give up, say how long. */
	assert_int_equal(http_retry_delay(&d, &p, 1, "3600", NULL, now, 0),
			 PB_ELIMIT);
	assert_int_equal(d, 3600000);
	assert_int_equal(http_retry_delay(&d, &p, 1, NULL, "1700003600", now,
					  0),
			 PB_ELIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_escape_cap),
		cmocka_unit_test(test_link),
		cmocka_unit_test(test_same_origin),
		cmocka_unit_test(test_parse_numbers),
		cmocka_unit_test(test_retry_delay),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
