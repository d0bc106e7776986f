#include "milter/testmode.h"

#include "milter/session.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/scan.h"

#include <stdio.h>
#include <string.h>
#include <sysexits.h>

/* Body chunks as libmilter hands them (MILTER_CHUNK_SIZE is 65535). */
#define TESTMODE_CHUNK 65535

/* Hand one finished header field to the session. */
static void flush_field(struct session *s, struct buf *name, struct buf *value)
{
	char q[64];

	/* Postfix too cuts a field past header_size_limit; say so. */
	if (buf_error(name) || buf_error(value))
		log_warn("test mode: header field %s cut at %zu bytes",
			 printable_copy(q, sizeof(q), name->data, name->len),
			 name->len + value->len);
	if (name->len)
		session_header(s, name->data, value->data);
	buf_reset(name);
	buf_reset(value);
}

/*
 * Feed raw[0..len) as Postfix would: fields until the first empty line
 * (or a line that is no field), then the body.
 */
static void feed(struct session *s, const char *raw, size_t len)
{
	struct buf name = BUF_INIT(PB_HEADER_VALUE_MAX);
	struct buf value = BUF_INIT(PB_HEADER_VALUE_MAX + PB_CONFIG_LINE_MAX);
	struct scan sc;
	const char *line, *body, *colon;
	size_t n, off;

	scan_init(&sc, raw, len);
	body = sc.end;
	if (scan_left(&sc) >= 5 && !memcmp(sc.p, "From ", 5))
		scan_line(&sc, &line, &n); /* an mbox separator */
	for (;;) {
		const char *start = sc.p;

		if (!scan_line(&sc, &line, &n)) {
			body = sc.end;
			break;
		}
		if (!n) {
			body = sc.p;
			break;
		}
		if (line[0] == ' ' || line[0] == '\t') {
			if (name.len && buf_addch(&value, '\n') == 0)
				buf_add(&value, line, n);
			continue;
		}
		colon = memchr(line, ':', n);
		if (!colon) {
			body = start;
			break;
		}
		flush_field(s, &name, &value);
		buf_add(&name, line, (size_t)(colon - line));
		buf_rtrim(&name);
		colon++;
		n -= (size_t)(colon - line);
		while (n && (*colon == ' ' || *colon == '\t')) {
			colon++;
			n--;
		}
		buf_add(&value, colon, n);
	}
	flush_field(s, &name, &value);
	session_eoh(s);
	for (off = (size_t)(body - raw); off < len; off += n) {
		n = len - off < TESTMODE_CHUNK ? len - off : TESTMODE_CHUNK;
		session_body(s, raw + off, n);
	}
	buf_release(&name);
	buf_release(&value);
}

int testmode_run(char **files, int nr, const char *sender, const char *queue_id)
{
	struct buf raw = BUF_INIT(PB_MAIL_MAX_MAX);
	struct session_outcome out;
	struct session *s;
	int i, ex = EX_OK;

	for (i = 0; i < nr; i++) {
		buf_reset(&raw);
		if (file_read(&raw, files[i])) {
			fprintf(stderr, "patchbridge-milter: %s: %s\n",
				files[i], err_msg());
			ex = EX_NOINPUT;
			continue;
		}
		session_new(&s, (unsigned long)i + 1);
		log_ctx_set(session_log_id(s));
		if (session_begin(s, sender ? sender : "<>")) {
			fprintf(stderr, "patchbridge-milter: %s\n", err_msg());
			session_free(s);
			ex = EX_SOFTWARE;
			break;
		}
		session_set_queue_id(s, queue_id);
		log_ctx_set(session_log_id(s));
		feed(s, raw.data, raw.len);
		session_eom(&out, s);
		{
			size_t k, nf;
			const size_t *idx = session_forged(s, &nf);

			/* what glue.c deletes at end of message */
			for (k = 0; out.action == SESSION_ACCEPT && k < nf; k++)
				printf("%s: removes %s #%zu (forged)\n",
				       files[i], AUTHRES_FIELD_NAME, idx[k]);
		}
		if (out.header[0])
			printf("%s: %s: %s\n", files[i], SESSION_HEADER_NAME,
			       out.header);
		else
			printf("%s: %s (%s)\n", files[i], out.verdict,
			       out.reason);
		if (out.action == SESSION_TEMPFAIL && ex == EX_OK)
			ex = EX_TEMPFAIL;
		session_free(s);
		log_ctx_clear();
	}
	fflush(stdout);
	buf_release(&raw);
	return ex;
}
