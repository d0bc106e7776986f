/* mail/mbox.c: splitting an mbox (mboxrd) into messages, streaming. */
#include "cmocka_all.h"
#include "mail/mbox.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[512];

static int setup(void **state)
{
	const char *base = getenv("PB_TEST_TMP");
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/mbox.XXXXXX", base ? base : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return unlink(path);
}

static void write_file(const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Read every message of the file, expecting exactly want[] (NULL-ended). */
static void expect_messages(const char *const *want, size_t cap)
{
	struct mbox *mb = NULL;
	struct buf msg = BUF_INIT(cap);
	size_t i;
	int oversize;

	assert_int_equal(mbox_open(&mb, path), 0);
	for (i = 0; want[i]; i++) {
		assert_int_equal(mbox_next(mb, &msg, &oversize), 0);
		assert_int_equal(oversize, 0);
		assert_int_equal(mbox_index(mb), i + 1);
		assert_string_equal(msg.data, want[i]);
	}
	assert_int_equal(mbox_next(mb, &msg, &oversize), PB_ENOTFOUND);
	assert_int_equal(mbox_next(mb, &msg, &oversize), PB_ENOTFOUND);
	mbox_free(mb);
	buf_release(&msg);
}

static void test_mboxrd(void **state)
{
	/* as `patchbridge export` and public-inbox write it */
	static const char mbox[] = "From mboxrd@z Thu Jan  1 00:00:00 1970\n"
				   "Subject: one\n"
				   "\n"
				   "body\n"
				   ">From the start, quoted once\n"
				   ">>From a quote, quoted twice\n"
				   "> From is not quoted\n"
				   "\n"
				   "From mboxrd@z Thu Jan  1 00:00:00 1970\n"
				   "Subject: two\n"
				   "\n"
				   "\n"
				   "two empty lines above and one here\n"
				   "\n"
				   "\n";
	static const char *const want[] = {
		"Subject: one\n\nbody\nFrom the start, quoted once\n"
		">From a quote, quoted twice\n> From is not quoted\n",
		"Subject: two\n\n\ntwo empty lines above and one here\n\n",
		NULL,
	};

	(void)state;
	write_file(mbox, sizeof(mbox) - 1);
	expect_messages(want, 4096);
}

static void test_git_format_patch(void **state)
{
	/* no blank line before a body "From " line: not a separator */
	static const char mbox[] = "From 1234abcd Mon Sep 17 00:00:00 2001\r\n"
				   "Subject: [PATCH 1/2] a\r\n"
				   "\r\n"
				   "From: the author, in the body\r\n"
				   "---\r\n"
				   "\r\n"
				   "From 5678ef01 Mon Sep 17 00:00:00 2001\r\n"
				   "Subject: [PATCH 2/2] b\r\n"
				   "\r\n"
				   "last line without an end";
	static const char *const want[] = {
		"Subject: [PATCH 1/2] a\r\n\r\nFrom: the author, in the "
		"body\r\n---\r\n",
		"Subject: [PATCH 2/2] b\r\n\r\nlast line without an end",
		NULL,
	};

	(void)state;
	write_file(mbox, sizeof(mbox) - 1);
	expect_messages(want, 4096);
}

static void test_not_an_mbox(void **state)
{
	struct mbox *mb = NULL;
	struct buf msg = BUF_INIT(4096);
	int oversize;

	(void)state;
	write_file("Subject: a mail\n\nFrom me\n", 25);
	assert_int_equal(mbox_open(&mb, path), 0);
	assert_int_equal(mbox_next(mb, &msg, &oversize), PB_EINVAL);
	assert_non_null(strstr(err_msg(), "not an mbox"));
	mbox_free(mb);
	write_file("", 0);
	assert_int_equal(mbox_open(&mb, path), 0);
	assert_int_equal(mbox_next(mb, &msg, &oversize), PB_EINVAL);
	mbox_free(mb);
	/* "From " alone is no From_ line */
	write_file("From \n", 6);
	assert_int_equal(mbox_open(&mb, path), 0);
	assert_int_equal(mbox_next(mb, &msg, &oversize), PB_EINVAL);
	mbox_free(mb);
	buf_release(&msg);
	assert_int_equal(mbox_open(&mb, "/nonexistent/mbox"), PB_ENOTFOUND);
}

/* Lines longer than a block, a long From_ line, a message over the cap. */
static void test_long_lines_and_oversize(void **state)
{
	size_t n = 3 * MBOX_BLOCK + 17, len = 0, i;
	char *data = xmalloc(4 * n + 1000);
	struct mbox *mb = NULL;
	struct buf msg = BUF_INIT(2 * MBOX_BLOCK);
	int oversize;

	(void)state;
	/* a From_ line longer than a block */
	memcpy(data, "From x", 6);
	len = 6;
	memset(data + len, 'y', n);
	len += n;
	data[len++] = '\n';
	/* message 1: one line longer than the block, under the cap */
	memcpy(data + len, "A: 1\n\n", 6);
	len += 6;
	memset(data + len, 'a', MBOX_BLOCK + 5);
	len += MBOX_BLOCK + 5;
	data[len++] = '\n';
	data[len++] = '\n';
	/* message 2: over the cap */
	memcpy(data + len, "From y\nB: 2\n\n", 13);
	len += 13;
	memset(data + len, 'b', n);
	len += n;
	data[len++] = '\n';
	data[len++] = '\n';
	/* message 3: small */
	memcpy(data + len, "From z\nC: 3\n\nc\n", 15);
	len += 15;
	write_file(data, len);

	assert_int_equal(mbox_open(&mb, path), 0);
	assert_int_equal(mbox_next(mb, &msg, &oversize), 0);
	assert_int_equal(oversize, 0);
	assert_int_equal(msg.len, 6 + MBOX_BLOCK + 5 + 1);
	assert_memory_equal(msg.data, "A: 1\n\n", 6);
	for (i = 6; i < msg.len - 1; i++)
		if (msg.data[i] != 'a')
			fail_msg("byte %zu is %d", i, msg.data[i]);
	assert_int_equal(mbox_next(mb, &msg, &oversize), 0);
	assert_int_equal(oversize, 1);
	assert_int_equal(mbox_index(mb), 2);
	assert_int_equal(msg.len, msg.max);
	assert_memory_equal(msg.data, "B: 2\n\n", 6);
	assert_int_equal(mbox_next(mb, &msg, &oversize), 0);
	assert_int_equal(oversize, 0);
	assert_int_equal(mbox_index(mb), 3);
	assert_string_equal(msg.data, "C: 3\n\nc\n");
	assert_int_equal(mbox_next(mb, &msg, &oversize), PB_ENOTFOUND);
	mbox_free(mb);
	buf_release(&msg);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mboxrd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_git_format_patch, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_not_an_mbox, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_long_lines_and_oversize,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
