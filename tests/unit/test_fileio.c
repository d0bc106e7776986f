#include "cmocka_all.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"

#include <dirent.h>
#include <fcntl.h>
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

/*
 * A command's output (-o) naming a FIFO or a device is written in place:
 * renaming over /dev/null as root once left a regular file there, and
 * every program on the machine reading it got the output.  A FIFO stands
 * for the device here (a test must not risk the real one).
 */
static void test_output_special(void **state)
{
	char sub[600], fifo[700], file[700], link[700];
	struct file_atomic f;
	struct stat st;
	char got[16] = "";
	int rd;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/output", dir);
	assert_int_equal(dir_create(sub, 0700), 0);
	snprintf(fifo, sizeof(fifo), "%s/fifo", sub);
	assert_int_equal(mkfifo(fifo, 0600), 0);

	/* No reader: refused at once, never a hang. */
	assert_int_not_equal(file_write_output(fifo, "x", 1, 0644), 0);
	assert_int_equal(count_entries(sub), 1);

	rd = open(fifo, O_RDONLY | O_NONBLOCK);
	assert_true(rd >= 0);
	assert_int_equal(file_output_open(&f, fifo, 0644), 0);
	assert_int_equal(count_entries(sub), 1); /* no temporary */
	assert_int_equal(file_atomic_write(&f, "through", 7), 0);
	assert_int_equal(file_atomic_commit(&f), 0);
	assert_int_equal(read(rd, got, sizeof(got) - 1), 7);
	assert_string_equal(got, "through");
	close(rd);
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));

	/* A link to it is refused, the link and the FIFO stay. */
	snprintf(link, sizeof(link), "%s/link", sub);
	assert_int_equal(symlink(fifo, link), 0);
	assert_int_equal(file_write_output(link, "x", 1, 0644), PB_EINVAL);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));

	/* A file or nothing: replaced atomically, as before. */
	snprintf(file, sizeof(file), "%s/file", sub);
	assert_int_equal(file_write_output(file, "new", 3, 0644), 0);
	assert_int_equal(lstat(file, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	/* A directory is no output. */
	assert_int_equal(file_write_output(sub, "x", 1, 0644), PB_EINVAL);
}

/* Write text to path as a plain file (the "victim" of an attack). */
static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void assert_holds(const char *path, const char *text)
{
	struct buf b = BUF_INIT(4096);

	assert_int_equal(file_read(&b, path), 0);
	assert_string_equal(b.data, text);
	buf_release(&b);
}

/*
 * Someone who may write the target's directory (the milter's group in
 * dead/, anyone in a shared directory an export goes to) plants symbolic
 * links at the temporary names a writer would use, pointing at a file
 * the writer may write: the daemon's state database.  The old names
 * (".tmp.<base>.<pid>.<seq>", opened without O_EXCL or O_NOFOLLOW) were
 * predictable, and the write went through the link.  Now the names are
 * random and opened O_CREAT|O_EXCL|O_NOFOLLOW: the planted links are
 * never followed, never renamed, never removed.
 */
static void test_planted_links(void **state)
{
	char sub[600], victim[700], path[700], link[900];
	int seq, links = 0;
	struct stat st;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/planted", dir);
	assert_int_equal(dir_create(sub, 0700), 0);
	snprintf(victim, sizeof(victim), "%s/state.db", dir);
	put(victim, "the state database");
	snprintf(path, sizeof(path), "%s/rec.reason", sub);
	for (seq = 0; seq < 256; seq++) {
		snprintf(link, sizeof(link), "%s/.tmp.rec.reason.%ld.%d", sub,
			 (long)getpid(), seq);
		assert_int_equal(symlink(victim, link), 0);
		links++;
	}
	assert_int_equal(file_write_atomic(path, "reason\n", 7, 0640), 0);
	assert_int_equal(file_write_atomic(path, "again\n", 6, 0640), 0);
	assert_holds(victim, "the state database");
	assert_holds(path, "again\n");
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(count_entries(sub), links + 1);

	/* A link at the target's own name is replaced, not followed. */
	snprintf(path, sizeof(path), "%s/out.mbox", sub);
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(file_write_atomic(path, "mbox", 4, 0644), 0);
	assert_holds(victim, "the state database");
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
}

/* The directory written into is not reached through a symbolic link. */
static void test_linked_dir(void **state)
{
	char real[600], alias[600], path[700];
	struct file_atomic f;

	(void)state;
	snprintf(real, sizeof(real), "%s/real", dir);
	snprintf(alias, sizeof(alias), "%s/alias", dir);
	assert_int_equal(dir_create(real, 0700), 0);
	assert_int_equal(symlink(real, alias), 0);
	snprintf(path, sizeof(path), "%s/file", alias);
	assert_int_equal(file_atomic_open(&f, path, 0600), PB_EPERM);
	assert_non_null(strstr(err_msg(), "symbolic link"));
	assert_int_equal(count_entries(real), 0);
}

/*
 * Removing a half-written tree (a failed public-inbox export) removes
 * links planted in it, at a file and at a directory, never what they
 * point at.
 */
static void test_remove_tree_links(void **state)
{
	char victim[600], vdir[600], tree[600], p[700];
	int fd;

	(void)state;
	snprintf(victim, sizeof(victim), "%s/victim.db", dir);
	snprintf(vdir, sizeof(vdir), "%s/victim-dir", dir);
	snprintf(tree, sizeof(tree), "%s/epoch", dir);
	assert_int_equal(
		file_write_atomic(victim, "the state database", 18, 0600), 0);
	assert_int_equal(dir_create(vdir, 0700), 0);
	snprintf(p, sizeof(p), "%s/kept", vdir);
	assert_int_equal(file_write_atomic(p, "kept", 4, 0600), 0);
	snprintf(p, sizeof(p), "%s/objects/pack", tree);
	assert_int_equal(dir_create(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/objects/pack/msgmap.sqlite3", tree);
	assert_int_equal(symlink(victim, p), 0);
	snprintf(p, sizeof(p), "%s/.git", tree);
	assert_int_equal(symlink(vdir, p), 0);
	snprintf(p, sizeof(p), "%s/HEAD", tree);
	assert_int_equal(file_write_atomic(p, "ref", 3, 0600), 0);

	assert_int_equal(dir_open_nofollow(&fd, dir), 0);
	assert_int_equal(dir_remove_tree_at(fd, "epoch"), 0);
	assert_int_equal(dir_remove_tree_at(fd, "epoch"), 0); /* gone: 0 */
	close(fd);
	assert_int_equal(access(tree, F_OK), -1);
	assert_holds(victim, "the state database");
	snprintf(p, sizeof(p), "%s/kept", vdir);
	assert_holds(p, "kept");

	/* The tree itself a link: the link goes, not the directory. */
	snprintf(p, sizeof(p), "%s/epoch-alias", dir);
	assert_int_equal(symlink(vdir, p), 0);
	assert_int_equal(dir_open_nofollow(&fd, dir), 0);
	assert_int_equal(dir_remove_tree_at(fd, "epoch-alias"), 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/kept", vdir);
	assert_holds(p, "kept");
}

/* Two writers of one file never share a temporary name. */
static void test_tmp_names(void **state)
{
	char sub[600], path[700];
	struct file_atomic a, b;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/names", dir);
	assert_int_equal(dir_create(sub, 0700), 0);
	snprintf(path, sizeof(path), "%s/x", sub);
	assert_int_equal(file_atomic_open(&a, path, 0600), 0);
	assert_int_equal(file_atomic_open(&b, path, 0600), 0);
	assert_int_equal(count_entries(sub), 2);
	assert_int_equal(file_atomic_write(&a, "a", 1), 0);
	assert_int_equal(file_atomic_write(&b, "b", 1), 0);
	assert_int_equal(file_atomic_commit(&b), 0);
	assert_int_equal(file_atomic_commit(&a), 0);
	assert_holds(path, "a");
	assert_int_equal(count_entries(sub), 1);
}

/* A child's pipe: the head that fits is kept, the rest is read and
 * dropped, and the return says whether the writer is still there. */
static void test_drain(void **state)
{
	struct buf b = BUF_INIT(4);
	int p[2], over = 0;

	(void)state;
	assert_int_equal(pipe(p), 0);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	assert_int_equal(write(p[1], "ab", 2), 2);
	assert_int_equal(fd_drain(&b, p[0], &over), 1);
	assert_string_equal(b.data, "ab");
	assert_int_equal(over, 0);
	assert_int_equal(write(p[1], "cdefgh", 6), 6);
	assert_int_equal(fd_drain(&b, p[0], &over), 1);
	assert_string_equal(b.data, "abcd");
	assert_int_equal(over, 1);
	assert_int_equal(write(p[1], "ij", 2), 2);
	close(p[1]);
	assert_int_equal(fd_drain(&b, p[0], NULL), 0);
	assert_string_equal(b.data, "abcd");
	close(p[0]);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_then_read),
		cmocka_unit_test(test_read_limits_and_errors),
		cmocka_unit_test(test_atomic_pieces),
		cmocka_unit_test(test_output_special),
		cmocka_unit_test(test_planted_links),
		cmocka_unit_test(test_linked_dir),
		cmocka_unit_test(test_tmp_names),
		cmocka_unit_test(test_remove_tree_links),
		cmocka_unit_test(test_drain),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
