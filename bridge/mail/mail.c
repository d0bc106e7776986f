#include "mail/mail.h"
#include "mail/mailtext.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/scan.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <errno.h>
#include <gmime/gmime.h>
#include <iconv.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Output of a charset conversion may grow (GB18030 1.5x, cp1252 3x). */
#define MAIL_TEXT_GROWTH 4

static int mail_ready;

void mail_limits_default(struct mail_limits *lim)
{
	lim->max_size = PB_MAIL_MAX_DEFAULT;
	lim->max_headers = PB_HEADER_COUNT_MAX;
	lim->max_header_len = PB_HEADER_VALUE_MAX;
	lim->max_depth = PB_MIME_DEPTH_MAX;
	lim->max_parts = PB_MIME_PARTS_MAX;
	lim->max_text = PB_TEXT_PART_MAX;
}

int mail_init(void)
{
	if (!mail_ready) {
		g_mime_init();
		mail_ready = 1;
	}
	return 0;
}

void mail_shutdown(void)
{
	if (mail_ready) {
		g_mime_shutdown();
		mail_ready = 0;
	}
}

void mail_free(struct mail *m)
{
	size_t i;

	if (!m)
		return;
	free(m->message_id);
	free(m->in_reply_to);
	strlist_release(&m->references);
	free(m->from.name);
	free(m->from.email);
	free(m->subject);
	free(m->date);
	for (i = 0; i < m->nr_headers; i++) {
		free(m->headers[i].name);
		free(m->headers[i].value);
	}
	free(m->headers);
	buf_release(&m->text);
	free(m->text_type);
	free(m->charset);
	free(m);
}

const char *mail_header_get(const struct mail *m, const char *name, size_t nth)
{
	size_t i;

	for (i = 0; i < m->nr_headers; i++)
		if (!strcasecmp(m->headers[i].name, name) && nth-- == 0)
			return m->headers[i].value;
	return NULL;
}

int mail_date_parse(int64_t *out, const char *date)
{
	GDateTime *dt;

	*out = 0;
	if (!date || !*date)
		return PB_EINVAL;
	dt = g_mime_utils_header_decode_date(date);
	if (!dt)
		return PB_EINVAL;
	*out = (int64_t)g_date_time_to_unix(dt);
	g_date_time_unref(dt);
	return 0;
}

/* ------------------------------------------------------------------ */

/*
 * Check the top-level header against the count and length limits before
 * GMime sees it: a header bomb is refused cheaply.
 */
static int check_header(const char *raw, size_t len,
			const struct mail_limits *lim)
{
	struct scan s;
	const char *line;
	size_t n, fields = 0, cur = 0;

	scan_init(&s, raw, len);
	while (scan_line(&s, &line, &n)) {
		if (n == 0)
			break;
		if (line[0] == ' ' || line[0] == '\t') {
			cur += n + 1;
		} else {
			fields++;
			cur = n + 1;
		}
		if (fields > lim->max_headers)
			return err_set(PB_ELIMIT, "more than %zu header fields",
				       lim->max_headers);
		if (cur > lim->max_header_len)
			return err_set(PB_ELIMIT,
				       "a header field longer than %zu bytes",
				       lim->max_header_len);
	}
	return 0;
}

struct warn_state {
	unsigned crit;
	unsigned warnings;
};

static void on_warning(gint64 offset, GMimeParserWarning code,
		       const gchar *item, gpointer data)
{
	struct warn_state *ws = data;

	(void)offset;
	(void)item;
	switch (code) {
	case GMIME_CRIT_INVALID_HEADER_NAME:
	case GMIME_CRIT_CONFLICTING_HEADER:
	case GMIME_CRIT_CONFLICTING_PARAMETER:
	case GMIME_CRIT_MULTIPART_WITHOUT_BOUNDARY:
	case GMIME_CRIT_NESTING_OVERFLOW:
	case GMIME_CRIT_PART_WITHOUT_HEADERS_OR_CONTENT:
		ws->crit++;
		break;
	default:
		ws->warnings++;
		break;
	}
}

/* "value\r\n\tmore" -> "value more"; leading and trailing blanks go. */
static char *unfold(const char *v)
{
	size_t n = strlen(v), i, o = 0;
	char *out = xmalloc(n + 1);

	for (i = 0; i < n; i++) {
		if (v[i] == '\r' || v[i] == '\n')
			continue;
		out[o++] = v[i] == '\t' ? ' ' : v[i];
	}
	out[o] = '\0';
	{
		const char *p = out;
		size_t l = o;

		mem_trim(&p, &l);
		memmove(out, p, l);
		out[l] = '\0';
	}
	return out;
}

static int kept_header(const char *name)
{
	return !strcasecmp(name, "Authentication-Results") ||
	       !strncasecmp(name, "X-Patchbridge", 13) ||
	       !strcasecmp(name, "Auto-Submitted") ||
	       !strcasecmp(name, "List-Id");
}

static char *bracket_id(const char *id)
{
	return id && *id ? xasprintf("<%s>", id) : NULL;
}

static void read_headers(struct mail *m, GMimeMessage *msg,
			 GMimeParserOptions *opts)
{
	GMimeHeaderList *hl = g_mime_object_get_header_list(GMIME_OBJECT(msg));
	int i, count = hl ? g_mime_header_list_get_count(hl) : 0;
	size_t alloc = 0;

	for (i = 0; i < count; i++) {
		GMimeHeader *h = g_mime_header_list_get_header_at(hl, i);
		const char *name = g_mime_header_get_name(h);
		const char *raw = g_mime_header_get_raw_value(h);

		if (!name || !raw)
			continue;
		if (!strcasecmp(name, "In-Reply-To") && !m->in_reply_to) {
			GMimeReferences *r = g_mime_references_parse(opts, raw);

			if (r && g_mime_references_length(r) > 0)
				m->in_reply_to = bracket_id(
					g_mime_references_get_message_id(r, 0));
			if (r)
				g_mime_references_free(r);
		} else if (!strcasecmp(name, "References") &&
			   !m->references.nr) {
			GMimeReferences *r = g_mime_references_parse(opts, raw);
			int k, n = r ? g_mime_references_length(r) : 0;

			for (k = 0; k < n && k < PB_HEADER_COUNT_MAX; k++) {
				const char *id =
					g_mime_references_get_message_id(r, k);

				if (id && *id)
					strlist_push_owned(&m->references,
							   bracket_id(id));
			}
			if (r)
				g_mime_references_free(r);
		} else if (!strcasecmp(name, "Date") && !m->date) {
			m->date = unfold(raw);
		}
		if (kept_header(name)) {
			ALLOC_GROW(m->headers, m->nr_headers + 1, alloc);
			m->headers[m->nr_headers].name = xstrdup(name);
			m->headers[m->nr_headers].value = unfold(raw);
			m->nr_headers++;
		}
	}
}

static void read_from(struct mail *m, GMimeMessage *msg)
{
	InternetAddressList *l = g_mime_message_get_from(msg);
	InternetAddress *ia = NULL;
	int depth = 0;

	while (l && internet_address_list_length(l) > 0 && depth++ < 4) {
		ia = internet_address_list_get_address(l, 0);
		if (!INTERNET_ADDRESS_IS_GROUP(ia))
			break;
		l = internet_address_group_get_members(
			INTERNET_ADDRESS_GROUP(ia));
		ia = NULL;
	}
	if (ia && INTERNET_ADDRESS_IS_MAILBOX(ia)) {
		const char *name = internet_address_get_name(ia);
		const char *addr = internet_address_mailbox_get_addr(
			INTERNET_ADDRESS_MAILBOX(ia));

		m->from.name = unfold(name ? name : "");
		m->from.email = xstrdup(addr ? addr : "");
	} else {
		m->from.name = xstrdup("");
		m->from.email = xstrdup("");
	}
}

/* ------------------------------------------------------------------ */
/* charsets */

static int is_utf8_name(const char *cs)
{
	return !strcasecmp(cs, "utf-8") || !strcasecmp(cs, "utf8") ||
	       !strcasecmp(cs, "unicode-1-1-utf-8");
}

static int is_ascii_name(const char *cs)
{
	return !strcasecmp(cs, "us-ascii") || !strcasecmp(cs, "ascii") ||
	       !strcasecmp(cs, "ansi_x3.4-1968");
}

static int is_latin1_name(const char *cs)
{
	return !strcasecmp(cs, "iso-8859-1") || !strcasecmp(cs, "latin1") ||
	       !strcasecmp(cs, "iso_8859-1") || !strcasecmp(cs, "l1") ||
	       !strcasecmp(cs, "iso8859-1");
}

/* The charset iconv should use: supersets for common mislabels. */
static const char *iconv_name(const char *cs)
{
	if (!strcasecmp(cs, "gb2312") || !strcasecmp(cs, "gbk") ||
	    !strcasecmp(cs, "x-gbk") || !strcasecmp(cs, "cp936") ||
	    !strcasecmp(cs, "euc-cn") || !strcasecmp(cs, "gb_2312-80"))
		return "GB18030";
	if (is_latin1_name(cs) || is_ascii_name(cs))
		return "WINDOWS-1252";
	if (!strcasecmp(cs, "ks_c_5601-1987") || !strcasecmp(cs, "euc-kr"))
		return "CP949";
	if (!strcasecmp(cs, "big5"))
		return "BIG5-HKSCS";
	if (!strcasecmp(cs, "iso-8859-9"))
		return "WINDOWS-1254";
	return g_mime_charset_iconv_name(cs);
}

static int has_8bit(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)p[i] >= 0x80)
			return 1;
	return 0;
}

/*
 * Convert with iconv; undecodable bytes become U+FFFD.  Returns 0, a
 * negative code, or 1 when iconv does not know the charset.  *bad counts
 * the replaced sequences.
 */
static int iconv_convert(struct buf *out, const char *p, size_t len,
			 const char *from, size_t *bad)
{
	iconv_t cd = g_mime_iconv_open("UTF-8", from);
	char chunk[4096];
	char *in = (char *)p;
	size_t inleft = len;
	int rc = 0;

	*bad = 0;
	if (cd == (iconv_t)-1)
		return 1;
	while (!rc) {
		char *o = chunk;
		size_t oleft = sizeof(chunk);
		size_t r;
		int e;

		r = iconv(cd, inleft ? &in : NULL, inleft ? &inleft : NULL, &o,
			  &oleft);
		e = errno;
		rc = buf_add(out, chunk, sizeof(chunk) - oleft);
		if (rc)
			break;
		if (r != (size_t)-1) {
			if (!inleft)
				break; /* flushed the shift state too */
			continue;
		}
		if (e == E2BIG)
			continue;
		/* EILSEQ (bad byte) or EINVAL (cut sequence at the end) */
		(*bad)++;
		rc = buf_add(out, "\xef\xbf\xbd", 3);
		if (!inleft)
			break;
		in++;
		inleft--;
		if (e == EINVAL && !inleft)
			break;
	}
	g_mime_iconv_close(cd);
	return rc;
}

/* Count the bytes that do not decode as UTF-8. */
static size_t utf8_errors(const char *p, size_t len)
{
	size_t i = 0, n, bad = 0;
	uint32_t cp;

	while (i < len) {
		n = utf8_decode(&cp, p + i, len - i);
		if (!n) {
			bad++;
			n = 1;
		}
		i += n;
	}
	return bad;
}

static int to_utf8(struct buf *out, const char *p, size_t len, const char *cs,
		   unsigned *flags)
{
	struct buf tmp = BUF_INIT(out->max);
	size_t bad = 0;
	int rc = 0, utf8 = cs && is_utf8_name(cs);

	if (!has_8bit(p, len))
		return mailtext_clean(out, p, len);
	if (cs && !utf8 && !is_ascii_name(cs)) {
		if (is_latin1_name(cs) && utf8_valid(p, len)) {
			/* labelled Latin-1, written in UTF-8 */
			*flags |= MAIL_F_CHARSET_GUESS;
			rc = mailtext_clean(out, p, len);
			goto out;
		}
		rc = iconv_convert(&tmp, p, len, iconv_name(cs), &bad);
		if (rc < 0)
			goto out;
		if (rc == 0) {
			if (bad && utf8_valid(p, len)) {
				*flags |= MAIL_F_CHARSET_GUESS;
				rc = mailtext_clean(out, p, len);
			} else {
				rc = mailtext_clean(out, tmp.data, tmp.len);
			}
			goto out;
		}
		/* a charset iconv does not know: guess below */
		*flags |= MAIL_F_CHARSET_GUESS;
		buf_reset(&tmp);
	}
	/* UTF-8 when it decodes (a few bad bytes in declared UTF-8 are
	 * repaired), else windows-1252, the usual unlabelled 8-bit text */
	bad = utf8_errors(p, len);
	if (bad == 0 || (utf8 && bad * 50 < len)) {
		if (!utf8)
			*flags |= MAIL_F_CHARSET_GUESS;
		rc = mailtext_clean(out, p, len);
		goto out;
	}
	*flags |= MAIL_F_CHARSET_GUESS;
	rc = iconv_convert(&tmp, p, len, "WINDOWS-1252", &bad);
	if (rc > 0) /* no iconv support at all: repair as UTF-8 */
		rc = mailtext_clean(out, p, len);
	else if (rc == 0)
		rc = mailtext_clean(out, tmp.data, tmp.len);
out:
	buf_release(&tmp);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------------ */
/* choosing the text part */

enum want {
	WANT_PLAIN,
	WANT_HTML,
	WANT_PATCH,
};

struct walk {
	const struct mail_limits *lim;
	int parts;
	unsigned flags;
};

static int is_attachment(GMimeObject *obj)
{
	GMimeContentDisposition *d = g_mime_object_get_content_disposition(obj);

	return d && g_mime_content_disposition_is_attachment(d);
}

static int leaf_matches(GMimeObject *obj, enum want want)
{
	GMimeContentType *ct = g_mime_object_get_content_type(obj);

	if (!ct || is_attachment(obj))
		return 0;
	switch (want) {
	case WANT_PLAIN:
		return g_mime_content_type_is_type(ct, "text", "plain");
	case WANT_HTML:
		return g_mime_content_type_is_type(ct, "text", "html");
	case WANT_PATCH:
		return g_mime_content_type_is_type(ct, "text", "x-patch") ||
		       g_mime_content_type_is_type(ct, "text", "x-diff");
	}
	return 0;
}

static GMimeObject *pick(struct walk *w, GMimeObject *obj, int depth,
			 enum want want)
{
	int i, n;
	GMimeObject *got;

	if (!obj)
		return NULL;
	if (depth > w->lim->max_depth || ++w->parts > w->lim->max_parts) {
		w->flags |= MAIL_F_LIMIT;
		return NULL;
	}
	if (GMIME_IS_MULTIPART_ENCRYPTED(obj)) {
		w->flags |= MAIL_F_ENCRYPTED;
		return NULL;
	}
	if (GMIME_IS_MULTIPART_SIGNED(obj)) {
		/* the signed content is the first part (RFC 1847) */
		GMimeMultipart *mp = GMIME_MULTIPART(obj);

		if (g_mime_multipart_get_count(mp) < 1)
			return NULL;
		got = pick(w, g_mime_multipart_get_part(mp, 0), depth + 1,
			   want);
		if (got)
			w->flags |= MAIL_F_PGP_MIME;
		return got;
	}
	if (GMIME_IS_MULTIPART(obj)) {
		GMimeMultipart *mp = GMIME_MULTIPART(obj);

		n = g_mime_multipart_get_count(mp);
		for (i = 0; i < n; i++) {
			got = pick(w, g_mime_multipart_get_part(mp, i),
				   depth + 1, want);
			if (got || (w->flags & MAIL_F_LIMIT))
				return got;
		}
		return NULL;
	}
	if (GMIME_IS_MESSAGE_PART(obj))
		return NULL; /* a forwarded message is not the reply */
	if (GMIME_IS_PART(obj) && leaf_matches(obj, want))
		return obj;
	return NULL;
}

/* Decode the part's transfer encoding into raw bytes, capped. */
static int part_bytes(struct buf *out, GMimePart *part, size_t max,
		      unsigned *flags)
{
	GMimeDataWrapper *dw = g_mime_part_get_content(part);
	GMimeStream *mem;
	GByteArray *ba;
	size_t n;
	int rc;

	if (!dw)
		return 0;
	mem = g_mime_stream_mem_new();
	if (g_mime_data_wrapper_write_to_stream(dw, mem) < 0) {
		g_object_unref(mem);
		return 0;
	}
	ba = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(mem));
	n = ba ? ba->len : 0;
	if (n > max) {
		n = max;
		*flags |= MAIL_F_TRUNCATED;
	}
	rc = n ? buf_add(out, (const char *)ba->data, n) : 0;
	g_object_unref(mem);
	return rc;
}

/* Run one text transform; on hitting the cap keep what fitted. */
static void transform(struct mail *m, struct buf *tmp,
		      int (*fn)(struct buf *, const char *, size_t))
{
	buf_reset(tmp);
	if (fn(tmp, m->text.data, m->text.len) == PB_ELIMIT)
		m->flags |= MAIL_F_TRUNCATED;
	buf_reset(&m->text);
	buf_addbuf(&m->text, tmp);
}

static int flowed_yes(struct buf *o, const char *p, size_t n)
{
	return mailtext_flowed(o, p, n, 1);
}

static int flowed_no(struct buf *o, const char *p, size_t n)
{
	return mailtext_flowed(o, p, n, 0);
}

static int read_text(struct mail *m, GMimeMessage *msg,
		     const struct mail_limits *lim)
{
	struct walk w = { lim, 0, 0 };
	GMimeObject *top = g_mime_message_get_mime_part(msg);
	GMimeObject *part = NULL;
	struct buf raw = BUF_INIT(lim->max_text);
	struct buf tmp = BUF_INIT(lim->max_text * MAIL_TEXT_GROWTH);
	const char *cs, *fmt, *delsp;
	int html, rc = 0;
	enum want want;

	for (want = WANT_PLAIN; want <= WANT_PATCH && !part; want++) {
		w.parts = 0;
		w.flags &= ~MAIL_F_LIMIT;
		part = pick(&w, top, 1, want);
	}
	m->flags |= w.flags;
	if (!part || !GMIME_IS_PART(part)) {
		m->flags |= MAIL_F_NO_TEXT;
		goto out;
	}
	html = g_mime_content_type_is_type(g_mime_object_get_content_type(part),
					   "text", "html");
	m->text_type = xstrdup(html ? "text/html" : "text/plain");
	cs = g_mime_object_get_content_type_parameter(part, "charset");
	if (cs && *cs)
		m->charset = xstrdup(cs);
	rc = part_bytes(&raw, GMIME_PART(part), lim->max_text, &m->flags);
	if (rc)
		goto out;
	if (to_utf8(&m->text, raw.data, raw.len, m->charset, &m->flags) ==
	    PB_ELIMIT) {
		/* Keep what fitted, flagged as cut. */
		m->flags |= MAIL_F_TRUNCATED;
		buf_clear_error(&m->text);
	}

	if (html) {
		m->flags |= MAIL_F_HTML;
		transform(m, &tmp, mailtext_html);
	} else {
		fmt = g_mime_object_get_content_type_parameter(part, "format");
		delsp = g_mime_object_get_content_type_parameter(part, "delsp");
		if (fmt && !strcasecmp(fmt, "flowed")) {
			m->flags |= MAIL_F_FLOWED;
			transform(m, &tmp,
				  delsp && !strcasecmp(delsp, "yes") ?
					  flowed_yes :
					  flowed_no);
		}
		if (mailtext_has_entities(m->text.data, m->text.len)) {
			m->flags |= MAIL_F_ENTITIES;
			transform(m, &tmp, mailtext_entities);
		}
	}
	buf_reset(&tmp);
	rc = mailtext_pgp_strip(&tmp, m->text.data, m->text.len);
	if (rc != 0) {
		if (rc == PB_ELIMIT)
			m->flags |= MAIL_F_TRUNCATED;
		m->flags |= MAIL_F_PGP_INLINE;
		buf_reset(&m->text);
		buf_addbuf(&m->text, &tmp);
	}
	rc = 0;
	/* a part's last line end belongs to the boundary: put it back */
	if (m->text.len && m->text.data[m->text.len - 1] != '\n' &&
	    buf_addch(&m->text, '\n'))
		m->flags |= MAIL_F_TRUNCATED;
out:
	buf_release(&raw);
	buf_release(&tmp);
	return rc;
}

/* ------------------------------------------------------------------ */

int mail_parse(struct mail **out, const char *raw, size_t len,
	       const struct mail_limits *lim_in)
{
	struct mail_limits lim;
	struct warn_state ws = { 0, 0 };
	GMimeParserOptions *opts = NULL;
	GMimeStream *stream = NULL;
	GMimeParser *parser = NULL;
	GMimeMessage *msg = NULL;
	const char *fallback[] = { "UTF-8", "windows-1252", NULL };
	struct mail *m = NULL;
	const char *s;
	int rc;

	*out = NULL;
	if (lim_in)
		lim = *lim_in;
	else
		mail_limits_default(&lim);
	BUG_ON(!mail_ready);
	if (len > lim.max_size)
		return err_set(PB_ELIMIT, "message of %zu bytes exceeds %zu",
			       len, lim.max_size);
	/* an mbox "From " line is not a header */
	if (len >= 5 && !memcmp(raw, "From ", 5)) {
		const char *nl = memchr(raw, '\n', len);

		len = nl ? len - (size_t)(nl + 1 - raw) : 0;
		raw = nl ? nl + 1 : raw + len;
	}
	rc = check_header(raw, len, &lim);
	if (rc)
		return rc;

	opts = g_mime_parser_options_new();
	g_mime_parser_options_set_warning_callback(opts, on_warning, &ws);
	g_mime_parser_options_set_rfc2047_compliance_mode(
		opts, GMIME_RFC_COMPLIANCE_LOOSE);
	g_mime_parser_options_set_address_compliance_mode(
		opts, GMIME_RFC_COMPLIANCE_LOOSE);
	g_mime_parser_options_set_fallback_charsets(opts, fallback);
	stream = g_mime_stream_mem_new_with_buffer(raw, len);
	parser = g_mime_parser_new_with_stream(stream);
	g_mime_parser_set_format(parser, GMIME_FORMAT_MESSAGE);
	msg = g_mime_parser_construct_message(parser, opts);
	if (!msg) {
		rc = err_set(PB_EINVAL, "not a mail message");
		goto out;
	}

	m = xcalloc(1, sizeof(*m));
	strlist_init(&m->references);
	buf_init(&m->text, lim.max_text * MAIL_TEXT_GROWTH);
	s = g_mime_message_get_message_id(msg);
	m->message_id = bracket_id(s);
	read_headers(m, msg, opts);
	read_from(m, msg);
	s = g_mime_message_get_subject(msg);
	m->subject = unfold(s ? s : "");
	rc = read_text(m, msg, &lim);
	if (rc)
		goto out;
	m->crit = ws.crit;
	m->warnings = ws.warnings;
	if (ws.crit)
		m->flags |= MAIL_F_AMBIGUOUS;
	*out = m;
	m = NULL;
out:
	mail_free(m);
	if (msg)
		g_object_unref(msg);
	if (parser)
		g_object_unref(parser);
	if (stream)
		g_object_unref(stream);
	if (opts)
		g_mime_parser_options_free(opts);
	return rc;
}
