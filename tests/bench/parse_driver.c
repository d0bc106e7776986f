/*
 * parse_driver - the parser's in-process throughput, for parse_bench.sh.
 *
 *	parse_driver PASSES FILE...
 *
 * Reads every FILE into memory once, then makes PASSES passes over all of
 * them, each mail through review_parse() and review_to_json() - the work
 * of `patchbridge parse` without the process start, the file read and the
 * write to stdout - and prints one line per pass:
 *
 *	pass=K files=N bytes=B seconds=S
 *
 * No parent diff is given (as `patchbridge parse` without --patch).
 * Exit 0; 1 with a message when a file cannot be read or a mail fails to
 * parse (the benchmark then reports the failure, not a figure).
 */
#define _POSIX_C_SOURCE 200809L

#include "mail/mail.h"
#include "mail/review.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One mail through the parser and the JSON writer; 0 or an error code. */
static int parse_one(const struct buf *raw, struct buf *json)
{
	struct review *r = NULL;
	int rc;

	rc = review_parse(&r, raw->data, raw->len, NULL, NULL);
	if (rc)
		goto out;
	buf_reset(json);
	rc = review_to_json(json, r);
out:
	review_free(r);
	return rc;
}

int main(int argc, char **argv)
{
	struct buf *mails = NULL;
	struct buf json = BUF_INIT(REVIEW_JSON_MAX);
	int nr = argc - 2, passes, i, k, ret = 1;
	size_t bytes = 0;

	if (argc < 3 || (passes = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: parse_driver PASSES FILE...\n");
		return 2;
	}
	mail_init();
	mails = calloc((size_t)nr, sizeof(*mails));
	if (!mails) {
		fprintf(stderr, "parse_driver: out of memory\n");
		goto out;
	}
	for (i = 0; i < nr; i++) {
		buf_init(&mails[i], PB_MAIL_MAX_DEFAULT);
		if (file_read(&mails[i], argv[i + 2])) {
			fprintf(stderr, "parse_driver: %s: %s\n", argv[i + 2],
				err_msg());
			nr = i + 1;
			goto out;
		}
		bytes += mails[i].len;
	}
	for (k = 1; k <= passes; k++) {
		double t0 = now();

		for (i = 0; i < nr; i++) {
			if (parse_one(&mails[i], &json)) {
				fprintf(stderr, "parse_driver: %s: %s\n",
					argv[i + 2], err_msg());
				goto out;
			}
		}
		printf("pass=%d files=%d bytes=%zu seconds=%.6f\n", k, nr,
		       bytes, now() - t0);
		fflush(stdout);
	}
	ret = 0;
out:
	for (i = 0; mails && i < nr; i++)
		buf_release(&mails[i]);
	free(mails);
	buf_release(&json);
	mail_shutdown();
	return ret;
}
