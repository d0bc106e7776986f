/*
 * spool_check - what a reader finds in a spool after the milter stopped,
 * read through the spool's own reader (spool.h), as the daemon would.
 *
 *	spool_check DIR
 *
 * Every entry of DIR/new must be a record that parses completely
 * (spool_load(): the header block in order, exactly Size bytes of
 * message); its queue id goes to stdout, one per line, for comparison
 * with what Postfix delivered.  DIR/tmp must be empty: a milter that
 * stopped cleanly finished every write it began.  A summary goes to
 * stderr.
 *
 * Exit 0 when both hold, 1 otherwise (each problem on stderr), 2 on bad
 * usage.
 */
#include "state/spool.h"
#include "util/err.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

/* Entries of dir other than "." and "..": calls fn on each name. */
static int each_entry(const char *dir, int (*fn)(const char *, void *),
		      void *arg)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int bad = 0;

	if (!d) {
		perror(dir);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		bad += fn(de->d_name, arg);
	}
	closedir(d);
	return bad;
}

struct check {
	struct spool *sp;
	const char *dir;
	size_t records;
};

static int check_new(const char *name, void *arg)
{
	struct check *c = arg;
	struct spool_record rec;
	int bad = 0;

	spool_record_init(&rec);
	if (!spool_name_valid(name)) {
		fprintf(stderr, "spool_check: %s/new/%s: not a record name\n",
			c->dir, name);
		bad = 1;
	} else if (spool_load(&rec, c->sp, SPOOL_NEW, name)) {
		fprintf(stderr, "spool_check: %s/new/%s: %s\n", c->dir, name,
			err_msg());
		bad = 1;
	} else {
		printf("%s\n", rec.queue_id);
		c->records++;
	}
	spool_record_release(&rec);
	return bad;
}

static int check_tmp(const char *name, void *arg)
{
	struct check *c = arg;

	fprintf(stderr, "spool_check: %s/tmp/%s: left behind\n", c->dir, name);
	return 1;
}

int main(int argc, char **argv)
{
	struct check c = { NULL, NULL, 0 };
	char path[4096];
	int bad_new, bad_tmp;

	if (argc != 2) {
		fprintf(stderr, "usage: spool_check DIR\n");
		return 2;
	}
	c.dir = argv[1];
	if (spool_open(&c.sp, c.dir, SPOOL_READER)) {
		fprintf(stderr, "spool_check: %s\n", err_msg());
		return 1;
	}
	snprintf(path, sizeof(path), "%s/new", c.dir);
	bad_new = each_entry(path, check_new, &c);
	snprintf(path, sizeof(path), "%s/tmp", c.dir);
	bad_tmp = each_entry(path, check_tmp, &c);
	spool_free(c.sp);
	fprintf(stderr,
		"spool_check: %zu complete records in new/, %d bad, %d left "
		"in tmp/\n",
		c.records, bad_new, bad_tmp);
	return bad_new || bad_tmp ? 1 : 0;
}
