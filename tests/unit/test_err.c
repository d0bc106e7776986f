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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
