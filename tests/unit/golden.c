#include "cmocka_all.h"
#include "golden.h"
#include "util/fileio.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *src_dir(void)
{
	const char *d = getenv("PB_SRC_DIR");

	return d && *d ? d : ".";
}

const char *golden_path(const char *dir, const char *name)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/tests/data/%s/%s", src_dir(), dir,
		 name);
	return path;
}

void golden_list(struct strlist *out, const char *dir, const char *suffix)
{
	char path[4096];
	struct dirent *de;
	size_t sl = strlen(suffix);
	DIR *d;

	snprintf(path, sizeof(path), "%s/tests/data/%s", src_dir(), dir);
	d = opendir(path);
	if (!d)
		fail_msg("cannot open %s", path);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n > sl && !strcmp(de->d_name + n - sl, suffix))
			strlist_push(out, de->d_name);
	}
	closedir(d);
	/* A test without its data fails: it must not pass on nothing. */
	if (!out->nr)
		fail_msg("no *%s files in %s", suffix, path);
	strlist_sort(out);
}

void golden_read(struct buf *out, const char *path)
{
	if (file_read(out, path))
		fail_msg("cannot read %s", path);
}

int golden_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

int golden_check(const char *path, const struct buf *got)
{
	struct buf want = BUF_INIT(64 << 20);
	const char *upd = getenv("PB_GOLDEN_UPDATE");
	int ok;

	if (upd && !strcmp(upd, "1")) {
		if (file_write_atomic(path, got->data, got->len, 0644))
			fail_msg("cannot write %s", path);
		return 1;
	}
	golden_read(&want, path);
	ok = want.len == got->len && !memcmp(want.data, got->data, got->len);
	if (!ok)
		print_error("%s differs.\n--- expected\n%s\n--- got\n%s\n",
			    path, want.data, got->data);
	buf_release(&want);
	return ok;
}
