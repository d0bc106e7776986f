/* util/dirwatch.c: woken when a name arrives in a directory. */
#include "cmocka_all.h"
#include "util/dirwatch.h"
#include "util/err.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[512];

static int setup(void **state)
{
	const char *base = getenv("PB_TEST_TMP");

	(void)state;
	snprintf(dir, sizeof(dir), "%s/dirwatch.XXXXXX", base ? base : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Does the watch's descriptor become readable within ms? */
static int readable(struct dirwatch *w, int ms)
{
	struct pollfd p = { dirwatch_fd(w), POLLIN, 0 };

	return poll(&p, 1, ms) == 1;
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	close(fd);
}

static void test_arrivals(void **state)
{
	char sub[600], a[700], b[700], outside[700];
	struct dirwatch *w = NULL;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/new", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(dirwatch_open(&w, sub), 0);
	assert_int_equal(dirwatch_drain(w), 0);
	assert_false(readable(w, 0));

	/* a record renamed in, as the milter does */
	snprintf(outside, sizeof(outside), "%s/record", dir);
	snprintf(a, sizeof(a), "%s/record", sub);
	touch(outside);
	assert_int_equal(rename(outside, a), 0);
	assert_true(readable(w, 5000));
	assert_int_equal(dirwatch_drain(w), 1);
	assert_int_equal(dirwatch_drain(w), 0);

	/* one created in place, and many at once: one drain takes all */
	snprintf(b, sizeof(b), "%s/other", sub);
	touch(b);
	for (int i = 0; i < 300; i++) {
		snprintf(b, sizeof(b), "%s/many.%d", sub, i);
		touch(b);
	}
	assert_true(readable(w, 5000));
	assert_int_equal(dirwatch_drain(w), 1);
	assert_false(readable(w, 0));

	/* leaving the directory is no arrival */
	assert_int_equal(unlink(a), 0);
	assert_false(readable(w, 100));
	dirwatch_free(w);
	dirwatch_free(NULL);
}

static void test_errors(void **state)
{
	char path[600];
	struct dirwatch *w = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(dirwatch_open(&w, path), PB_ENOTFOUND);
	assert_null(w);
	/* a file is no directory */
	snprintf(path, sizeof(path), "%s/file", dir);
	touch(path);
	assert_int_equal(dirwatch_open(&w, path), PB_ENOTFOUND);
	assert_null(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_arrivals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
