/*
 * attest_driver MBOX [ROUNDS]: the cost of attesting each mail of an
 * mbox as the bridge does (mail/patatt.h, patatt_sign(): the canonical
 * form, SHA-256, one ed25519 signature), in one process, ROUNDS times
 * (default 5).  The mbox is split at git format-patch's "From <sha> Mon
 * Sep 17 00:00:00 2001" lines, as `patchbridge format` writes it.
 *
 * Prints the mails, their bytes, the CPU time per mail and the rate of
 * the median round, and the same for a mail of three lines (what a
 * signature costs whatever the mail: the ed25519 part).
 */
#include "mail/patatt.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEP_TAIL " Mon Sep 17 00:00:00 2001\n"

struct span {
	const char *p;
	size_t n;
};

/* CPU time of this process: a loaded machine slows the wall clock, not
 * this (the format benchmark gives the wall-clock figures). */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Seconds for one signature of each mail, the median of rounds. */
static double time_rounds(const struct span *m, size_t n, int rounds,
			  const struct patatt_key *key)
{
	struct buf out = BUF_INIT(PATATT_MAIL_MAX);
	double *t = calloc((size_t)rounds, sizeof(*t)), med;
	int r;
	size_t i;

	for (r = 0; r < rounds; r++) {
		double t0 = now();

		for (i = 0; i < n; i++) {
			buf_reset(&out);
			if (patatt_sign(&out, m[i].p, m[i].n, key,
					"bench@example.org", NULL,
					1700000000)) {
				fprintf(stderr, "attest_driver: mail %zu: %s\n",
					i + 1, err_msg());
				exit(1);
			}
		}
		t[r] = now() - t0;
	}
	qsort(t, (size_t)rounds, sizeof(*t), cmp_double);
	med = t[rounds / 2];
	free(t);
	buf_release(&out);
	return med;
}

int main(int argc, char **argv)
{
	static const char tiny[] = "From: a@example.org\nSubject: x\n\nx\n";
	struct buf mbox = BUF_INIT(1024L * 1024 * 1024);
	struct span *m = NULL, one = { tiny, sizeof(tiny) - 1 };
	struct patatt_key *key;
	size_t n = 0, alloc = 0, bytes = 0;
	const char *p, *end;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	double t;

	if (argc < 2 || rounds < 1) {
		fprintf(stderr, "usage: attest_driver MBOX [ROUNDS]\n");
		return 2;
	}
	if (file_read(&mbox, argv[1]) || patatt_key_generate(&key)) {
		fprintf(stderr, "attest_driver: %s\n", err_msg());
		return 1;
	}
	for (p = mbox.data, end = p + mbox.len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;

		if (!strncmp(p, "From ", 5) && nl &&
		    (size_t)(nl + 1 - p) == 5 + 40 + strlen(SEP_TAIL) &&
		    !memcmp(nl + 1 - strlen(SEP_TAIL), SEP_TAIL,
			    strlen(SEP_TAIL))) {
			if (n == alloc) {
				alloc = alloc ? 2 * alloc : 1024;
				m = realloc(m, alloc * sizeof(*m));
			}
			m[n].p = next;
			m[n].n = 0;
			if (n)
				m[n - 1].n = (size_t)(p - m[n - 1].p);
			n++;
		}
		p = next;
	}
	if (!n) {
		fprintf(stderr, "attest_driver: no mails in %s\n", argv[1]);
		return 1;
	}
	m[n - 1].n = (size_t)(end - m[n - 1].p);
	for (size_t i = 0; i < n; i++)
		bytes += m[i].n;

	t = time_rounds(m, n, rounds, key);
	printf("mails %zu, bytes %zu, rounds %d\n", n, bytes, rounds);
	printf("per mail: %.1f us CPU (median round %.3f s, %.1f MB/s)\n",
	       t / (double)n * 1e6, t, (double)bytes / t / 1e6);
	t = time_rounds(&one, 1, 2001, key);
	printf("a mail of three lines: %.1f us CPU\n", t * 1e6);
	patatt_key_free(key);
	free(m);
	buf_release(&mbox);
	return 0;
}
