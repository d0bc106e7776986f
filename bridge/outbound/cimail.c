#include "outbound/cimail.h"

#include "util/err.h"
#include "util/utf8.h"

#include <string.h>

/*
 * How much of a log's end is read for its last lines: escape sequences
 * and overwritten progress lines can make the text shown a small part of
 * the bytes, so more than CIMAIL_TAIL_BYTES, but bounded.
 */
#define CIMAIL_SCAN_BYTES (64 * 1024)

int cimail_passed(const char *status)
{
	if (!status)
		return -1;
	if (!strcmp(status, "success"))
		return 1;
	if (!strcmp(status, "failed"))
		return 0;
	return -1;
}

/*
 * The length of the escape sequence at p[0..len) (p[0] is ESC), after
 * ECMA-48: CSI "ESC [" parameters, intermediates and a final byte; OSC,
 * DCS, SOS, PM and APC strings up to BEL or ST ("ESC \"); else ESC and
 * one byte.  An unfinished sequence runs to the end.
 */
static size_t escape_len(const char *p, size_t len)
{
	size_t i;

	if (len < 2)
		return len;
	if (p[1] == '[') {
		for (i = 2; i < len; i++)
			if ((unsigned char)p[i] >= 0x40 &&
			    (unsigned char)p[i] <= 0x7e)
				return i + 1;
		return len;
	}
	if (strchr("]PX^_", p[1])) {
		for (i = 2; i < len; i++) {
			if (p[i] == '\a')
				return i + 1;
			if (p[i] == 0x1b && i + 1 < len && p[i + 1] == '\\')
				return i + 2;
		}
		return len;
	}
	return 2;
}

/* One line of the log (without its "\n"), as a terminal shows it, made
 * safe and appended to out. */
static int clean_line(struct buf *out, struct buf *tmp, const char *p,
		      size_t len)
{
	size_t i, n;

	/* A "\r" at the end is a CRLF's; before text, what follows it is
	 * written over what came before (progress bars, GitLab's section
	 * markers "section_start:TIME:NAME\r\e[0K"). */
	while (len && p[len - 1] == '\r')
		len--;
	for (i = len; i > 0; i--)
		if (p[i - 1] == '\r') {
			p += i;
			len -= i;
			break;
		}
	buf_reset(tmp);
	for (i = 0; i < len; i += n) {
		if (p[i] == 0x1b) {
			n = escape_len(p + i, len - i);
			continue;
		}
		for (n = 1; i + n < len && p[i + n] != 0x1b; n++)
			;
		if (buf_add(tmp, p + i, n))
			return buf_error(tmp);
	}
	return utf8_clean(out, tmp->data, tmp->len, 0);
}

int cimail_log_tail(struct buf *out, const char *log, size_t len)
{
	struct buf text = BUF_INIT(4 * CIMAIL_SCAN_BYTES);
	struct buf tmp = BUF_INIT(CIMAIL_SCAN_BYTES + 1);
	const char *p = log, *end = log + len, *nl, *start;
	size_t lines = 0;
	int rc = 0;

	if (len > CIMAIL_SCAN_BYTES) {
		/* From the first whole line of the scanned end, or the
		 * first whole character of a line longer than it. */
		p = end - CIMAIL_SCAN_BYTES;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl)
			p = nl + 1;
		while (p < end && ((unsigned char)*p & 0xc0) == 0x80)
			p++;
	}
	while (p < end && !rc) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (text.len)
			rc = buf_addch(&text, '\n');
		if (!rc)
			rc = clean_line(&text, &tmp, p, (size_t)(nl - p));
		p = nl + 1;
	}
	if (rc)
		goto out;
	/* Blank lines at the end show nothing. */
	while (text.len && (text.data[text.len - 1] == '\n' ||
			    text.data[text.len - 1] == ' ' ||
			    text.data[text.len - 1] == '\t'))
		buf_truncate(&text, text.len - 1);
	/* Back from the end: at most so many lines and bytes. */
	start = text.data + text.len;
	while (start > text.data && lines < CIMAIL_TAIL_LINES) {
		const char *q = start - 1;

		while (q > text.data && q[-1] != '\n')
			q--;
		if ((size_t)(text.data + text.len - q) > CIMAIL_TAIL_BYTES)
			break;
		start = q;
		lines++;
	}
	if (!lines && text.len) {
		/* One line longer than the bound: its end, from a character's
		 * first byte. */
		start = text.data + text.len - CIMAIL_TAIL_BYTES;
		while (start < text.data + text.len &&
		       ((unsigned char)*start & 0xc0) == 0x80)
			start++;
	}
	/* The line break the kept lines start after is not theirs. */
	rc = buf_add(out, start, (size_t)(text.data + text.len - start));
out:
	buf_release(&text);
	buf_release(&tmp);
	return rc;
}

const struct forge_job *cimail_first_failed(const struct forge_job_list *jobs)
{
	const struct forge_job *allowed = NULL;
	size_t i;

	if (!jobs)
		return NULL;
	for (i = 0; i < jobs->nr; i++) {
		const struct forge_job *j = &jobs->items[i];

		if (!j->status || strcmp(j->status, "failed"))
			continue;
		if (!j->allow_failure)
			return j;
		if (!allowed)
			allowed = j;
	}
	return allowed;
}

/* A forge string as one line of the mail (names and links come from
 * whoever wrote the CI configuration). */
static int add_line_text(struct buf *out, const char *s, const char *none)
{
	if (!s || !*s)
		return buf_adds(out, none);
	return utf8_clean(out, s, strlen(s), UTF8_CLEAN_LINE);
}

static int add_job(struct buf *out, const struct forge_job *j)
{
	int rc = buf_adds(out, "  ");

	if (!rc)
		rc = add_line_text(out, j->name, "(unnamed)");
	if (!rc)
		rc = buf_adds(out, " (stage ");
	if (!rc)
		rc = add_line_text(out, j->stage, "unknown");
	if (!rc && j->allow_failure)
		rc = buf_adds(out, ", allowed to fail");
	if (!rc)
		rc = buf_adds(out, ")");
	if (!rc && j->web_url && *j->web_url) {
		rc = buf_adds(out, ": ");
		if (!rc)
			rc = add_line_text(out, j->web_url, "");
	}
	if (!rc)
		rc = buf_addch(out, '\n');
	return rc;
}

int cimail_body(struct buf *out, const struct forge_pipeline *p, int rev,
		const struct forge_job_list *jobs, const char *tail,
		const char *tail_note)
{
	const struct forge_job *first = cimail_first_failed(jobs);
	int passed = cimail_passed(p->status) == 1;
	size_t i, named = 0, failed = 0;
	const char *l, *nl;
	int rc;

	rc = buf_addf(out, "Pipeline #%lld for v%d (%.12s) %s.\n",
		      (long long)p->id, rev, p->sha ? p->sha : "?",
		      passed ? "passed" : "failed");
	if (!rc && p->web_url && *p->web_url) {
		rc = add_line_text(out, p->web_url, "");
		if (!rc)
			rc = buf_addch(out, '\n');
	}
	if (rc || passed)
		return rc;
	for (i = 0; jobs && i < jobs->nr; i++)
		if (jobs->items[i].status &&
		    !strcmp(jobs->items[i].status, "failed"))
			failed++;
	if (!failed)
		return buf_adds(out, "\nNo job is marked as failed.\n");
	rc = buf_adds(out, "\nFailed jobs:\n");
	for (i = 0; !rc && i < jobs->nr; i++) {
		const struct forge_job *j = &jobs->items[i];

		if (!j->status || strcmp(j->status, "failed"))
			continue;
		if (named == CIMAIL_JOBS_MAX) {
			rc = buf_addf(out, "  and %zu more\n", failed - named);
			break;
		}
		rc = add_job(out, j);
		named++;
	}
	if (rc || !first)
		return rc;
	if (tail && *tail) {
		rc = buf_adds(out, "\nThe last lines of the log of ");
		if (!rc)
			rc = add_line_text(out, first->name, "the job");
		if (!rc)
			rc = buf_adds(out, ":\n\n");
		for (l = tail; !rc && *l; l = *nl ? nl + 1 : nl) {
			nl = strchr(l, '\n');
			if (!nl)
				nl = l + strlen(l);
			rc = buf_adds(out, "  | ");
			if (!rc)
				rc = buf_add(out, l, (size_t)(nl - l));
			if (!rc)
				rc = buf_addch(out, '\n');
		}
	} else if (tail_note) {
		rc = buf_addf(out, "\n%s\n", tail_note);
	}
	return rc;
}
