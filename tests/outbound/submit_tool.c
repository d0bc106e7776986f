/*
 * submit_tool - drive outbound/submit.c from a shell script.
 *
 *   submit_tool (--smtp URL [--starttls] [--ca-file F]
 *                [--user U --password-file F] | --sendmail "PATH ARGS")
 *               [--timeout MS] [--count N] --from X --to Y [--to Z]...
 *               FILE.eml
 *
 * Submits FILE.eml (N times through one submit object, default once) and
 * prints the last result as shell assignments for eval:
 *
 *   STATUS=accepted|tempfail|rejected|unknown RC=<return code>
 *   CODE=<reply code or exit status> QUEUE_ID=<id> REFUSED=<count>
 *   ELAPSED_MS=<wall time> REPLY='<reply or stderr>'
 *
 * Exit: 0 accepted, 4 tempfail, 5 rejected, 6 unknown, 2 usage or setup.
 * The log line of each submission goes to stderr.
 */
#include "outbound/submit.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/strlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(void)
{
	fprintf(stderr,
		"usage: submit_tool (--smtp URL [--starttls] [--ca-file F] "
		"[--user U --password-file F] | --sendmail \"PATH ARGS\")\n"
		"                   [--timeout MS] [--count N] --from X "
		"--to Y [--to Z]... FILE.eml\n");
	exit(2);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Single-quote s for sh. */
static void print_quoted(const char *name, const char *s)
{
	printf("%s='", name);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	puts("'");
}

int main(int argc, char **argv)
{
	struct submit_opts opts = { 0 };
	struct strlist rcpts = STRLIST_INIT;
	struct buf msg = BUF_INIT(PB_MAIL_MAX_MAX);
	struct buf pw = BUF_INIT(4096);
	struct submit_result res;
	struct submit *s = NULL;
	const char *from = NULL, *file = NULL, *pwfile = NULL;
	long t0, count = 1, n;
	int i, rc = 0, ex = 2;

	log_open("submit_tool", LOG_SINK_STDERR);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--starttls")) {
			opts.starttls = 1;
			continue;
		}
		if (a[0] != '-') {
			if (file)
				usage();
			file = a;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--smtp"))
			opts.url = v;
		else if (!strcmp(a, "--sendmail"))
			opts.sendmail_path = v;
		else if (!strcmp(a, "--ca-file"))
			opts.ca_file = v;
		else if (!strcmp(a, "--user"))
			opts.username = v;
		else if (!strcmp(a, "--password-file"))
			pwfile = v;
		else if (!strcmp(a, "--timeout"))
			opts.timeout_ms = strtol(v, NULL, 10);
		else if (!strcmp(a, "--count"))
			count = strtol(v, NULL, 10);
		else if (!strcmp(a, "--from"))
			from = v;
		else if (!strcmp(a, "--to"))
			strlist_push(&rcpts, v);
		else
			usage();
	}
	if (!file || !from || !rcpts.nr || count < 1)
		usage();
	if (!opts.url)
		opts.url = "sendmail";
	submit_result_init(&res);
	if (pwfile) {
		rc = file_read(&pw, pwfile);
		buf_rtrim(&pw);
		opts.password = pw.data;
	}
	if (!rc)
		rc = file_read(&msg, file);
	if (!rc)
		rc = submit_new(&s, &opts);
	if (rc) {
		fprintf(stderr, "submit_tool: %s\n", err_msg());
		goto out;
	}

	t0 = now_ms();
	for (n = 0; n < count; n++) {
		rc = submit_send(&res, s, from, &rcpts, msg.data, msg.len);
		if (rc)
			break;
	}
	printf("STATUS=%s\nRC=%d\nCODE=%d\nQUEUE_ID=%s\nREFUSED=%zu\n"
	       "ELAPSED_MS=%ld\n",
	       submit_status_name(res.status), rc, res.code, res.queue_id,
	       res.refused.nr, now_ms() - t0);
	print_quoted("REPLY", res.reply);
	if (rc)
		fprintf(stderr, "submit_tool: %s\n", err_msg());

	switch (res.status) {
	case SUBMIT_ACCEPTED:
		ex = 0;
		break;
	case SUBMIT_TEMPFAIL:
		ex = 4;
		break;
	case SUBMIT_REJECTED:
		ex = 5;
		break;
	default:
		ex = 6;
		break;
	}
out:
	submit_result_release(&res);
	submit_free(s);
	strlist_release(&rcpts);
	buf_release(&msg);
	buf_release(&pw);
	return ex;
}
