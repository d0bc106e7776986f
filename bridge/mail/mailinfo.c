#include "mail/mailinfo.h"

#include "mail/hdrdecode.h"
#include "mail/mail.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void mailinfo_init(struct mailinfo *mi)
{
	memset(mi, 0, sizeof(*mi));
	buf_init(&mi->message, MAILINFO_MESSAGE_MAX);
	buf_init(&mi->patch, PB_MAIL_MAX_MAX);
}

void mailinfo_release(struct mailinfo *mi)
{
	free(mi->name);
	free(mi->email);
	free(mi->subject);
	buf_release(&mi->message);
	buf_release(&mi->patch);
	mailinfo_init(mi);
}

int mailinfo_clean_subject(struct buf *out, const char *subject, size_t len)
{
	const char *p = subject, *end = subject + len, *close;

	/* mailinfo.c cleanup_subject(), keep_subject off */
	while (p < end) {
		if ((*p == 'r' || *p == 'R') && end - p > 3 &&
		    (p[1] == 'e' || p[1] == 'E') && p[2] == ':') {
			p += 3;
		} else if (*p == ' ' || *p == '\t' || *p == ':') {
			p++;
		} else if (*p == '[' &&
			   (close = memchr(p, ']', (size_t)(end - p)))) {
			p = close + 1;
		} else {
			break;
		}
	}
	len = (size_t)(end - p);
	mem_trim(&p, &len);
	buf_reset(out);
	/* then cleanup_space(): each run of blanks one space */
	for (end = p + len; p < end; p++) {
		if (!isspace((unsigned char)*p)) {
			buf_addch(out, *p);
			continue;
		}
		buf_addch(out, ' ');
		while (p + 1 < end && isspace((unsigned char)p[1]))
			p++;
	}
	return buf_error(out);
}

/* git's patchbreak(): where the commit message ends. */
static int patchbreak(const char *line, size_t n, int last)
{
	size_t i;

	if (n >= 6 && !memcmp(line, "diff -", 6))
		return 1;
	if (n >= 7 && !memcmp(line, "Index: ", 7))
		return 1;
	/* git reads the line with its newline: "---" needs one after it */
	if (n < 3 || memcmp(line, "---", 3) || (n == 3 && last))
		return 0;
	if (n > 4 && line[3] == ' ' && !isspace((unsigned char)line[4]))
		return 1;
	for (i = 3; i < n; i++)
		if (!isspace((unsigned char)line[i]))
			return 0;
	return 1;
}

/* An in-body header line git reads (mailinfo.c is_inbody_header()). */
static const char *inbody_field(const char *line, size_t n, const char *name)
{
	size_t k = strlen(name);

	if (n <= k || strncasecmp(line, name, k) || line[k] != ':')
		return NULL;
	return line + k + 1;
}

/* mailinfo.c get_sane_name(): a name git would not trust is the address. */
static char *sane_name(const char *name, const char *email)
{
	size_t n = strlen(name);

	if (!n || n > 60 || strpbrk(name, "@<>"))
		return xstrdup(email);
	return xstrdup(name);
}

struct inbody {
	char *from; /* the raw values of the in-body fields, or NULL */
	char *date;
	char *subject;
};

/* Append the line to out, its trailing blanks removed (stripspace). */
static int add_stripped(struct buf *out, const char *line, size_t n,
			int *blanks)
{
	while (n && isspace((unsigned char)line[n - 1]))
		n--;
	if (!n) {
		if (out->len)
			(*blanks)++;
		return 0;
	}
	if (*blanks)
		buf_addch(out, '\n');
	*blanks = 0;
	buf_add(out, line, n);
	return buf_addch(out, '\n');
}

/*
 * The text from the top: in-body header lines (until a blank line, or
 * the first line that is none), then the body up to the patch break,
 * stripspace'd into body.  *patch is where the patch break is.
 */
static int read_text(struct buf *body, struct inbody *ib, const char **patch,
		     const char *text, size_t len)
{
	struct scan s;
	const char *line, *v;
	size_t n;
	int stage = 1, blanks = 0, rc = 0, last;

	*patch = NULL;
	scan_init(&s, text, len);
	while (scan_line(&s, &line, &n)) {
		last = scan_eof(&s) && (line + n == text + len);
		if (stage) {
			char **slot = NULL;

			if (!n) {
				/* blank lines before or after the fields */
				if (ib->from || ib->date || ib->subject)
					stage = 0;
				continue;
			}
			if ((v = inbody_field(line, n, "From")))
				slot = &ib->from;
			else if ((v = inbody_field(line, n, "Date")))
				slot = &ib->date;
			else if ((v = inbody_field(line, n, "Subject")))
				slot = &ib->subject;
			if (slot) {
				size_t vl = n - (size_t)(v - line);

				mem_trim(&v, &vl);
				free(*slot);
				*slot = xstrndup(v, vl);
				continue;
			}
			stage = 0;
		}
		if (patchbreak(line, n, last)) {
			*patch = line;
			break;
		}
		rc = add_stripped(body, line, n, &blanks);
	}
	return rc ? rc : buf_error(body);
}

static void inbody_release(struct inbody *ib)
{
	free(ib->from);
	free(ib->date);
	free(ib->subject);
}

int mailinfo_read(struct mailinfo *out, const char *raw, size_t len)
{
	struct mail *m = NULL;
	struct inbody ib = { NULL, NULL, NULL };
	struct hdrdecode_mailbox mb;
	struct buf body = BUF_INIT(MAILINFO_MESSAGE_MAX);
	struct buf subj = BUF_INIT(MAILINFO_MESSAGE_MAX);
	const char *text, *brk, *diff, *name, *email, *title;
	size_t tlen;
	int rc;

	hdrdecode_mailbox_init(&mb);
	rc = mail_parse(&m, raw, len, NULL);
	if (rc)
		goto out;
	text = m->text.data;
	tlen = m->text.len;
	rc = read_text(&body, &ib, &brk, text, tlen);
	if (rc)
		goto out;
	/* the patch proper starts at its first "diff --git" line */
	diff = brk;
	if (diff && ((size_t)(text + tlen - diff) < 11 ||
		     memcmp(diff, "diff --git ", 11))) {
		const char *d = mem_find(diff, (size_t)(text + tlen - diff),
					 "\ndiff --git ", 12);

		diff = d ? d + 1 : NULL;
	}
	if (!diff) {
		rc = err_set(PB_EINVAL, "mail has no \"diff --git\" patch");
		goto out;
	}
	rc = buf_set(&out->patch, diff, (size_t)(text + tlen - diff));
	if (rc)
		goto out;

	/* the author: an in-body From, else the header's */
	name = m->from.name;
	email = m->from.email;
	if (ib.from) {
		hdrdecode_mailbox(&mb, ib.from, strlen(ib.from),
				  mail_header_conv, NULL);
		if (mb.email[0]) {
			name = mb.name;
			email = mb.email;
		}
	}
	if (!email || !email[0]) {
		rc = err_set(PB_EINVAL, "mail has no author address");
		goto out;
	}
	free(out->email);
	out->email = xstrdup(email);
	free(out->name);
	out->name = sane_name(name ? name : "", email);
	if (mail_date_parse_zone(&out->time, &out->tz_minutes,
				 ib.date ? ib.date : m->date))
		out->time = 0;

	title = ib.subject ? ib.subject : m->subject;
	rc = mailinfo_clean_subject(&subj, title, strlen(title));
	if (rc)
		goto out;
	free(out->subject);
	out->subject = xstrdup(subj.data);
	/* builtin/am.c: title, blank line, body; then stripspace */
	buf_reset(&out->message);
	if (subj.len) {
		buf_addbuf(&out->message, &subj);
		buf_addch(&out->message, '\n');
		if (body.len)
			buf_addch(&out->message, '\n');
	}
	buf_addbuf(&out->message, &body);
	rc = buf_error(&out->message);
out:
	hdrdecode_mailbox_release(&mb);
	inbody_release(&ib);
	buf_release(&body);
	buf_release(&subj);
	mail_free(m);
	return rc;
}
