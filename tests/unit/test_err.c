#include "cmocka_all.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static void test_set_and_prefix(void **state)
{
	assert_int_equal(err_set(PB_EINVAL, "bad %s", "value"), PB_EINVAL);
	assert_string_equal(err_msg(), "bad value");
	assert_int_equal(err_prefix(PB_EINVAL, "file.conf:%d", 3), PB_EINVAL);
	assert_string_equal(err_msg(), "file.conf:3: bad value");
	errno = ENOENT;
	err_set_errno(PB_ENOTFOUND, "open %s", "x");
	assert_string_equal(err_msg(), "open x: No such file or directory");
	err_clear();
	assert_string_equal(err_msg(), "");
	assert_string_equal(err_name(PB_ETEMP), "temporary failure");
	assert_true(err_is_temporary(PB_ETEMP));
	assert_false(err_is_temporary(PB_EINVAL));
}

/*
 * A message formatted from the current message (err_set(..., err_msg()))
 * keeps the cause it quotes.  Writing into the buffer being read used to
 * print the start of the new text, or what an earlier mail left there,
 * instead of the cause.
 */
static void test_self_format(void **state)
{
	(void)state;
	/* What the thread's previous mail left in the buffer. */
	err_set(PB_EINVAL, "corrupt record: <other-mail@example.org> has a "
			   "header that does not parse, and more text after");
	err_set(PB_ETEMP, "disk full");
	assert_int_equal(err_set(PB_ETEMP, "inbound: journaling %s: %s",
				 "rec.1", err_msg()),
			 PB_ETEMP);
	assert_string_equal(err_msg(), "inbound: journaling rec.1: disk full");

	/* The cause first, then the message itself, several times. */
	err_set(PB_ETEMP, "disk full");
	err_set(PB_ETEMP, "%s; %s; %s", err_msg(), err_msg(), err_msg());
	assert_string_equal(err_msg(), "disk full; disk full; disk full");

	errno = ENOSPC;
	err_set(PB_ETEMP, "the cause");
	err_set_errno(PB_ETEMP, "write %s", err_msg());
	assert_string_equal(err_msg(),
			    "write the cause: No space left on device");

	err_set(PB_ETEMP, "the cause");
	err_prefix(PB_ETEMP, "again: %s", err_msg());
	assert_string_equal(err_msg(), "again: the cause: the cause");
}

static void *other_thread(void *arg)
{
	err_set(PB_ERROR, "from thread");
	return NULL;
}

static void test_thread_local(void **state)
{
	pthread_t t;

	err_set(PB_ERROR, "main");
	assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
	pthread_join(t, NULL);
	assert_string_equal(err_msg(), "main");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_and_prefix),
		cmocka_unit_test(test_thread_local),
		cmocka_unit_test(test_self_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
