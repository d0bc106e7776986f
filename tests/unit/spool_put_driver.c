/*
 * spool_put_driver DIR [THREADS]: spool one record into DIR from each of
 * THREADS threads at once (default 1).  Each thread writes the name of
 * its record to standard output, in one write(2), as soon as spool_put()
 * returned - the moment the milter would answer Postfix.  A tiny program
 * for spool_fsync_order.sh to trace.
 */
#include "state/spool.h"
#include "util/err.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS_MAX 64

static struct spool *sp;
static pthread_barrier_t start;

static void *put_one(void *arg)
{
	const struct spool_meta meta = {
		.queue_id = "4Y3ZQk1XyZz9",
		.message_id = "driver@example.org",
		.kind = "reply",
	};
	char name[SPOOL_NAME_MAX + 2];
	size_t len;

	(void)arg;
	pthread_barrier_wait(&start);
	if (spool_put(name, sizeof(name) - 1, sp, &meta, "hello\n", 6)) {
		fprintf(stderr, "spool_put_driver: %s\n", err_msg());
		return (void *)1;
	}
	len = strlen(name);
	name[len++] = '\n';
	if (write(STDOUT_FILENO, name, len) != (ssize_t)len)
		return (void *)1;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS_MAX];
	int i, n = argc > 2 ? atoi(argv[2]) : 1, rc = 0;
	void *ret;

	if (argc < 2 || argc > 3 || n < 1 || n > THREADS_MAX) {
		fprintf(stderr, "usage: spool_put_driver DIR [THREADS]\n");
		return 2;
	}
	if (spool_open(&sp, argv[1], SPOOL_WRITER)) {
		fprintf(stderr, "spool_put_driver: %s\n", err_msg());
		return 1;
	}
	pthread_barrier_init(&start, NULL, (unsigned)n);
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, put_one, NULL))
			return 1;
	for (i = 0; i < n; i++) {
		pthread_join(t[i], &ret);
		if (ret)
			rc = 1;
	}
	pthread_barrier_destroy(&start);
	spool_free(sp);
	return rc;
}
