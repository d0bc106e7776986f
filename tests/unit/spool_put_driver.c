/*
 * spool_put_driver DIR: spool one record into DIR and print its name.
 * A tiny program for spool_fsync_order.sh to trace.
 */
#include "state/spool.h"
#include "util/err.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	const struct spool_meta meta = {
		.queue_id = "4Y3ZQk1XyZz9",
		.message_id = "driver@example.org",
		.kind = "reply",
	};
	char name[SPOOL_NAME_MAX + 1];
	struct spool *sp;

	if (argc != 2) {
		fprintf(stderr, "usage: spool_put_driver DIR\n");
		return 2;
	}
	if (spool_open(&sp, argv[1], SPOOL_WRITER) ||
	    spool_put(name, sizeof(name), sp, &meta, "hello\n", 6)) {
		fprintf(stderr, "spool_put_driver: %s\n", err_msg());
		return 1;
	}
	printf("%s\n", name);
	spool_free(sp);
	return 0;
}
