/*
 * noticemail - a notice to a sender as a mail.  See noticemail.h.
 */

#include "outbound/noticemail.h"

#include "core/config.h"
#include "core/version.h"
#include "outbound/mailhdr.h"
#include "outbound/qp.h"
#include "outbound/template.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"

#include <string.h>
#include <strings.h>

/* A notice is short; a template file larger than this is a mistake. */
#define NOTICE_TEMPLATE_MAX (64 * 1024)
#define NOTICE_BODY_MAX (256 * 1024)

/* Each reason a "- " item, wrapped. */
static int reasons_block(struct buf *out, const struct notice *n)
{
	struct buf item = BUF_INIT(NOTICE_BODY_MAX);
	size_t i;
	int rc = 0;

	strlist_for_each (&n->reasons, i) {
		buf_reset(&item);
		rc = buf_addf(&item, "- %s", n->reasons.items[i]);
		if (!rc)
			rc = template_wrap(out, item.data, item.len,
					   TEMPLATE_WRAP_WIDTH);
		if (!rc)
			rc = buf_addch(out, '\n');
		if (rc)
			break;
	}
	buf_release(&item);
	return rc;
}

static int body(struct buf *out, const struct notice *n,
		const struct config *cfg)
{
	const char *path = config_str(cfg, CFG_INBOUND_NOTICE_TEMPLATE);
	struct buf tmpl = BUF_INIT(NOTICE_TEMPLATE_MAX);
	struct buf reasons = BUF_INIT(NOTICE_BODY_MAX);
	struct buf link = BUF_INIT(PB_HTTP_URL_MAX + 16);
	const char *t = noticemail_template;
	size_t tlen = noticemail_template_len;
	int rc = 0;

	if (n->kind == NOTICE_SERIES) {
		t = noticemail_series_template;
		tlen = noticemail_series_template_len;
	} else if (path[0]) {
		rc = file_read(&tmpl, path);
		if (rc) {
			err_prefix(rc, "[inbound] notice_template");
			goto out;
		}
		t = tmpl.data;
		tlen = tmpl.len;
	}
	rc = reasons_block(&reasons, n);
	if (!rc && n->link && n->link[0])
		rc = buf_addf(&link, "On the forge: %s", n->link);
	if (!rc) {
		const struct template_var vars[] = {
			{ "name", n->to_name && n->to_name[0] ? n->to_name :
								n->to_email },
			{ "bridge", config_str(cfg, CFG_BRIDGE_NAME) },
			{ "mr", n->mr },
			{ "reasons", reasons.data },
			{ "reply_id", n->reply_id },
			{ "link", link.data },
		};

		rc = template_render(out, t, tlen, vars,
				     sizeof(vars) / sizeof(vars[0]));
	}
out:
	buf_release(&tmpl);
	buf_release(&reasons);
	buf_release(&link);
	return rc;
}

/* "Re: " and the reply's subject, unless it has one. */
static int subject(struct buf *hdr, const struct notice *n)
{
	const char *s = n->subject ? n->subject : "";

	while (*s == ' ' || *s == '\t')
		s++;
	if (!s[0])
		return mailhdr_add_text(hdr, "Subject", NULL,
					"Re: your reply on the list");
	if (!strncasecmp(s, "re:", 3))
		return mailhdr_add_text(hdr, "Subject", NULL, s);
	return mailhdr_add_text(hdr, "Subject", "Re:", s);
}

int noticemail_render(struct buf *out, const struct notice *n, void *arg)
{
	const struct config *cfg = arg;
	struct buf hdr = BUF_INIT(PB_HEADER_VALUE_MAX * 4);
	struct buf mb = BUF_INIT(PB_HEADER_VALUE_MAX);
	struct buf text = BUF_INIT(NOTICE_BODY_MAX);
	size_t i;
	int rc;

	rc = mailhdr_format_addr(&mb, config_str(cfg, CFG_BRIDGE_NAME),
				 config_str(cfg, CFG_BRIDGE_ADDRESS));
	if (!rc)
		rc = mailhdr_add_raw(&hdr, "From", mb.data);
	if (!rc) {
		buf_reset(&mb);
		rc = mailhdr_format_addr(&mb, n->to_name ? n->to_name : "",
					 n->to_email);
	}
	if (!rc)
		rc = mailhdr_add_raw(&hdr, "To", mb.data);
	if (!rc)
		rc = subject(&hdr, n);
	if (!rc)
		rc = buf_addf(&hdr,
			      "Date: %s\nMessage-ID: <%s>\n"
			      "In-Reply-To: <%s>\n",
			      n->date, n->notice_id, n->reply_id);
	if (!rc) {
		/* RFC 5322 3.6.4: the parent's References and the parent */
		buf_reset(&mb);
		for (i = 0; n->references && i < n->references->nr; i++)
			buf_addf(&mb, "%s ", n->references->items[i]);
		rc = buf_addf(&mb, "<%s>", n->reply_id);
		if (!rc)
			rc = mailhdr_add_raw(&hdr, "References", mb.data);
	}
	/* RFC 3834 section 5: an automatic answer says so, and no
	 * responder answers it. */
	if (!rc)
		rc = buf_addf(&hdr,
			      "Auto-Submitted: auto-replied\n"
			      "X-Mailer: patchbridge %s\n"
			      "X-Patchbridge-Origin: notice\n",
			      pb_version());
	if (!rc)
		rc = body(&text, n, cfg);
	if (rc)
		goto out;
	rc = buf_addbuf(out, &hdr);
	if (!rc)
		rc = qp_text_body(out, text.data, text.len);
out:
	buf_release(&hdr);
	buf_release(&mb);
	buf_release(&text);
	return rc;
}
