#include "cmocka_all.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[512];

static int setup(void **state)
{
	const char *base = getenv("PB_TEST_TMP");

	snprintf(dir, sizeof(dir), "%s/fileio.XXXXXX", base ? base : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int count_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	while ((e = readdir(d)))
		if (e->d_name[0] != '.' || strncmp(e->d_name, ".tmp.", 5) == 0)
			n++;
	closedir(d);
	return n;
}

static void test_write_then_read(void **state)
{
	char path[600];
	struct buf b = BUF_INIT(1024);
	struct stat st;

	snprintf(path, sizeof(path), "%s/sub/dir/file", dir);
	{
		char sub[600];
		snprintf(sub, sizeof(sub), "%s/sub/dir", dir);
		assert_int_equal(dir_create(sub, 0700), 0);
		assert_int_equal(dir_create(sub, 0700), 0);
	}
	assert_int_equal(file_write_atomic(path, "hello\0x", 7, 0600), 0);
	assert_int_equal(file_read(&b, path), 0);
	assert_int_equal(b.len, 7);
	assert_memory_equal(b.data, "hello\0x", 7);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* Replacing leaves exactly one file and no temporary. */
	assert_int_equal(file_write_atomic(path, "new", 3, 0600), 0);
	buf_reset(&b);
	assert_int_equal(file_read(&b, path), 0);
	assert_string_equal(b.data, "new");
	{
		char sub[600];
		snprintf(sub, sizeof(sub), "%s/sub/dir", dir);
		assert_int_equal(count_entries(sub), 1);
	}
	buf_release(&b);
}

static void test_read_limits_and_errors(void **state)
{
	char path[600];
	struct buf small = BUF_INIT(4);

	snprintf(path, sizeof(path), "%s/big", dir);
	assert_int_equal(file_write_atomic(path, "0123456789", 10, 0644), 0);
	assert_int_equal(file_read(&small, path), PB_ELIMIT);
	buf_release(&small);
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(file_read(&small, path), PB_ENOTFOUND);
	assert_non_null(strstr(err_msg(), "missing"));
	snprintf(path, sizeof(path), "%s/nodir/x", dir);
	assert_int_equal(file_write_atomic(path, "x", 1, 0600), PB_ENOTFOUND);
}

/* Piece by piece: nothing at path until commit; abort leaves nothing. */
static void test_atomic_pieces(void **state)
{
	char sub[600], path[700];
	struct file_atomic f;
	struct buf b = BUF_INIT(64);

	(void)state;
	snprintf(sub, sizeof(sub), "%s/pieces", dir);
	assert_int_equal(dir_create(sub, 0700), 0);
	snprintf(path, sizeof(path), "%s/out", sub);
	assert_int_equal(file_atomic_open(&f, path, 0644), 0);
	assert_int_equal(file_atomic_write(&f, "one ", 4), 0);
	assert_int_equal(file_atomic_write(&f, "two", 3), 0);
	assert_int_equal(file_read(&b, path), PB_ENOTFOUND);
	assert_int_equal(count_entries(sub), 1); /* the temporary */
	assert_int_equal(file_atomic_commit(&f), 0);
	assert_int_equal(file_read(&b, path), 0);
	assert_string_equal(b.data, "one two");
	assert_int_equal(count_entries(sub), 1);

	assert_int_equal(file_atomic_open(&f, path, 0644), 0);
	assert_int_equal(file_atomic_write(&f, "half", 4), 0);
	file_atomic_abort(&f);
	buf_reset(&b);
	assert_int_equal(file_read(&b, path), 0);
	assert_string_equal(b.data, "one two");
	assert_int_equal(count_entries(sub), 1);

	snprintf(path, sizeof(path), "%s/nodir/out", sub);
	assert_int_equal(file_atomic_open(&f, path, 0644), PB_ENOTFOUND);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_then_read),
		cmocka_unit_test(test_read_limits_and_errors),
		cmocka_unit_test(test_atomic_pieces),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
