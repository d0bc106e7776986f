/*
 * cimail: the end of a job's log as it is quoted in a pipeline's result
 * mail - bounded in lines and bytes, and nothing of the terminal's
 * controls left in it.
 */
#include "cmocka_all.h"
#include "outbound/cimail.h"
#include "util/buf.h"

#include <stdio.h>
#include <string.h>

static void tail_of(struct buf *out, const char *log, size_t len)
{
	buf_reset(out);
	assert_int_equal(cimail_log_tail(out, log, len), 0);
}

static void escapes_and_overwrites(void **state)
{
	struct buf out = BUF_INIT(8192);
	static const char log[] =
		"\x1b[31;1mred\x1b[0m plain\n"
		"osc \x1b]0;title\x07kept \x1b]8;;u\x1b\\link\x1b]8;;\x1b\\\n"
		"section_start:1700000000:build\r\x1b[0Kbuilding\n"
		"10%\r50%\r100%\r\n"
		"tab\there \xc2\x9b"
		"31m c1 \xe2\x80\xae"
		"bidi\n"
		"bad \xff byte\x01\x7f\n"
		"\n\n  \n";

	(void)state;
	tail_of(&out, log, sizeof(log) - 1);
	assert_string_equal(out.data, "red plain\n"
				      "osc kept link\n"
				      "building\n"
				      "100%\n"
				      "tab\there 31m c1 bidi\n"
				      "bad \xef\xbf\xbd byte");
	/* An escape cut at the end of the log runs to the end. */
	tail_of(&out, "done\n\x1b[3", 9);
	assert_string_equal(out.data, "done");
	tail_of(&out, "", 0);
	assert_string_equal(out.data, "");
	buf_release(&out);
}

static void bounded(void **state)
{
	struct buf out = BUF_INIT(8192);
	char log[200000], want[64];
	size_t n = 0, i;

	(void)state;
	/* Lines: the last CIMAIL_TAIL_LINES. */
	for (i = 0; i < 100; i++)
		n += (size_t)snprintf(log + n, sizeof(log) - n, "line %zu\n",
				      i);
	tail_of(&out, log, n);
	assert_string_equal(out.data + out.len - 7, "line 99");
	snprintf(want, sizeof(want), "line %d\n", 100 - CIMAIL_TAIL_LINES);
	assert_int_equal(strncmp(out.data, want, strlen(want)), 0);

	/* Bytes: whole lines up to CIMAIL_TAIL_BYTES. */
	n = 0;
	for (i = 0; i < 10; i++) {
		memset(log + n, 'a' + (int)i, 500);
		n += 500;
		log[n++] = '\n';
	}
	tail_of(&out, log, n);
	assert_true(out.len <= CIMAIL_TAIL_BYTES);
	assert_int_equal(out.len, 4 * 501 - 1);
	assert_int_equal(out.data[0], 'g');

	/* One line longer than the bound: its end, from a whole
	 * character; a log longer than the part scanned. */
	n = 0;
	while (n + 2 < sizeof(log) - 1) {
		log[n++] = '\xc3';
		log[n++] = '\xa9';
	}
	tail_of(&out, log, n);
	assert_true(out.len <= CIMAIL_TAIL_BYTES);
	assert_true(out.len >= CIMAIL_TAIL_BYTES - 1);
	assert_int_equal((unsigned char)out.data[0], 0xc3);
	buf_release(&out);
}

static void body_without_failed_job(void **state)
{
	struct buf out = BUF_INIT(8192);
	struct forge_pipeline p;
	struct forge_job_list jobs = { NULL, 0 };

	(void)state;
	memset(&p, 0, sizeof(p));
	p.id = 5;
	p.sha = (char *)"0123456789abcdef0123";
	p.status = (char *)"failed";
	assert_int_equal(cimail_body(&out, &p, 3, &jobs, NULL, NULL), 0);
	assert_string_equal(out.data, "Pipeline #5 for v3 (0123456789ab) "
				      "failed.\n\nNo job is marked as "
				      "failed.\n");
	assert_int_equal(cimail_passed("success"), 1);
	assert_int_equal(cimail_passed("failed"), 0);
	assert_int_equal(cimail_passed("running"), -1);
	assert_int_equal(cimail_passed("canceled"), -1);
	assert_int_equal(cimail_passed(NULL), -1);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(escapes_and_overwrites),
		cmocka_unit_test(bounded),
		cmocka_unit_test(body_without_failed_job),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
