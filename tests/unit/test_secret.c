/*
 * Tests of core/secret.c: one line, the trailing newline dropped, files
 * the group or others may read refused, junk refused, nothing of the
 * secret in the messages.
 */
#include "cmocka_all.h"
#include "core/secret.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char path[600];

static void write_file(const char *text, size_t len, mode_t mode)
{
	const char *base = getenv("PB_TEST_TMP");
	FILE *f;

	snprintf(path, sizeof(path), "%s/secret.%d", base ? base : "/tmp",
		 (int)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static int read_it(struct buf *b)
{
	int rc = secret_read(b, path, 32);

	unlink(path);
	return rc;
}

static void test_read(void **state)
{
	struct buf b = BUF_INIT(SECRET_MAX + 1);

	(void)state;
	write_file("glpat-abc\n", 10, 0600);
	assert_int_equal(read_it(&b), 0);
	assert_string_equal(b.data, "glpat-abc");
	write_file("glpat-abc\r\n", 11, 0400);
	assert_int_equal(read_it(&b), 0);
	assert_string_equal(b.data, "glpat-abc");
	write_file("no-newline", 10, 0600);
	assert_int_equal(read_it(&b), 0);
	assert_string_equal(b.data, "no-newline");
	secret_wipe(&b);
	assert_int_equal(b.len, 0);
}

static void test_refused(void **state)
{
	struct buf b = BUF_INIT(SECRET_MAX + 1);

	(void)state;
	write_file("glpat-abc\n", 10, 0640);
	assert_int_equal(read_it(&b), PB_EPERM);
	assert_non_null(strstr(err_msg(), "chmod 0600"));
	assert_null(strstr(err_msg(), "glpat"));
	write_file("glpat-abc\n", 10, 0604);
	assert_int_equal(read_it(&b), PB_EPERM);
	write_file("\n", 1, 0600);
	assert_int_equal(read_it(&b), PB_EINVAL);
	write_file("two\nlines\n", 10, 0600);
	assert_int_equal(read_it(&b), PB_EINVAL);
	assert_null(strstr(err_msg(), "lines"));
	write_file("0123456789012345678901234567890123456789\n", 41, 0600);
	assert_int_equal(read_it(&b), PB_EINVAL);
	write_file("tab\there\n", 9, 0600);
	assert_int_equal(read_it(&b), PB_EINVAL);
	assert_int_equal(secret_read(&b, "/nonexistent/secret", 0),
			 PB_ENOTFOUND);
	secret_wipe(&b);
}

/* The attestation key's text: the base64 of 32 bytes and nothing else. */
static void test_key32(void **state)
{
	static const char key[] =
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

	(void)state;
	assert_int_equal(secret_key32_b64(key, 44), 0);
	assert_int_equal(secret_key32_b64(key, 43), PB_EINVAL);
	assert_int_equal(secret_key32_b64("", 0), PB_EINVAL);
	assert_int_equal(
		secret_key32_b64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh==",
				 44),
		PB_EINVAL);
	assert_int_equal(
		secret_key32_b64("AAECAwQFBgcICQoLDA0ODxAREhMUFRY XGBkaGxwdHh=",
				 44),
		PB_EINVAL);
	assert_string_equal(err_msg(), "not an ed25519 private key (the base64 "
				       "of 32 bytes, as patatt genkey writes)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_key32),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
