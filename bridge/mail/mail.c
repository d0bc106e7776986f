#include "mail/mail.h"
#include "mail/hdrdecode.h"
#include "mail/mailtext.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/printable.h"
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
	strlist_release(&m->notes);
	free(m->from.name);
	free(m->from.email);
	free(m->wrapper.name);
	free(m->wrapper.email);
	free(m->inner_message_id);
	free(m->subject);
	free(m->date);
	for (i = 0; i < m->nr_headers; i++) {
		free(m->headers[i].name);
		free(m->headers[i].value);
	}
	free(m->headers);
	for (i = 0; i < m->nr_inner_headers; i++) {
		free(m->inner_headers[i].name);
		free(m->inner_headers[i].value);
	}
	free(m->inner_headers);
	buf_release(&m->text);
	free(m->text_type);
	free(m->charset);
	buf_release(&m->patch);
	free(m->patch_type);
	free(m->patch_name);
	free(m);
}

static const char *header_get(const struct mail_header *h, size_t nr,
			      const char *name, size_t nth)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (!strcasecmp(h[i].name, name) && nth-- == 0)
			return h[i].value;
	return NULL;
}

const char *mail_header_get(const struct mail *m, const char *name, size_t nth)
{
	return header_get(m->headers, m->nr_headers, name, nth);
}

const char *mail_inner_header_get(const struct mail *m, const char *name,
				  size_t nth)
{
	return header_get(m->inner_headers, m->nr_inner_headers, name, nth);
}

int mail_date_parse_zone(int64_t *out, int *tz_minutes, const char *date)
{
	GDateTime *dt;

	*out = 0;
	*tz_minutes = 0;
	if (!date || !*date)
		return PB_EINVAL;
	dt = g_mime_utils_header_decode_date(date);
	if (!dt)
		return PB_EINVAL;
	*out = (int64_t)g_date_time_to_unix(dt);
	/* microseconds east of UTC */
	*tz_minutes =
		(int)(g_date_time_get_utc_offset(dt) / G_TIME_SPAN_MINUTE);
	g_date_time_unref(dt);
	return 0;
}

int mail_date_parse(int64_t *out, const char *date)
{
	int tz;

	return mail_date_parse_zone(out, &tz, date);
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

/*
 * The top-level header: what GMime is given, and what is read here.
 *
 * A list mail's header is mostly Received, DKIM-Signature, ARC-* and X-*
 * fields, and GMime builds an object for every field it is given and
 * decodes many of them at once: the addresses of To and Cc (a kernel
 * list's Cc names dozens), Subject, Date, Message-ID.  The model reads
 * none of that from GMime.  So when the header is only well-formed
 * fields up to its empty line (header_plain()), GMime is given only the
 * MIME fields (Content-*), which it needs to read the body, and the
 * fields named below are read here (struct top), from the same bytes
 * GMime would have kept as their raw values.  What GMime would have
 * warned of for them is warned of here, in its words and order, each at
 * its field's offset (top_warn(); only GMime's own warnings of 8-bit
 * text in a Content-* field now come after these): a field of RFC 5322
 * section 3.6 that appears twice (critical when the two differ, so that
 * MAIL_F_AMBIGUOUS is set as before), 8-bit text, and the warnings of
 * GMime's own reading of From, Sender, Reply-To, Subject, Date and
 * Message-ID.  Only the address lists To, Cc and Bcc are no longer
 * parsed: nothing reads them but the repeat check and the raw search of
 * Cc in wrapped(), so a malformed Cc is no longer noted.
 *
 * Any other header - a line that is not a field, a header that never
 * ends - keeps the earlier way: the fields not named here are left out
 * up to the first line that is not a well-formed field (nor its
 * continuation), and GMime reads the rest, so nothing it would read as
 * body or flag as invalid is ever removed.
 *
 * Either way GMime reads a copy with fields left out; struct top keeps
 * where, so that the offsets of GMime's warnings count in the mail as
 * given (top_offset()).
 */
#define FIELD(s)                 \
	{                        \
		s, sizeof(s) - 1 \
	}

struct field_name {
	const char *name;
	size_t len;
};

static int name_in(const char *name, size_t len, const struct field_name *v,
		   size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (v[i].len == len && !strncasecmp(name, v[i].name, len))
			return 1;
	return 0;
}

/* The fields struct mail keeps (mail.h). */
static int kept_header_n(const char *name, size_t len)
{
	static const struct field_name kept[] = {
		FIELD("Authentication-Results"),
		FIELD("Auto-Submitted"),
		FIELD("List-Id"),
	};

	return (len >= 13 && !strncasecmp(name, "X-Patchbridge", 13)) ||
	       name_in(name, len, kept, sizeof(kept) / sizeof(kept[0]));
}

static int is_mime_field(const char *name, size_t len)
{
	return len >= 8 && !strncasecmp(name, "Content-", 8);
}

/* The fields RFC 5322 section 3.6 allows once (GMime's list). */
static int once_only(const char *name, size_t len)
{
	static const struct field_name once[] = {
		FIELD("Bcc"),	     FIELD("Cc"),	   FIELD("Date"),
		FIELD("From"),	     FIELD("In-Reply-To"), FIELD("Message-ID"),
		FIELD("References"), FIELD("Reply-To"),	   FIELD("Sender"),
		FIELD("Subject"),    FIELD("To"),
	};

	return name_in(name, len, once, sizeof(once) / sizeof(once[0]));
}

/* The fields read: the MIME ones, the once-only ones, the model's
 * others, the kept ones. */
static int top_reads(const char *name, size_t len)
{
	static const struct field_name more[] = {
		FIELD("List-Post"),
		FIELD("MIME-Version"),
	};

	return is_mime_field(name, len) || once_only(name, len) ||
	       name_in(name, len, more, sizeof(more) / sizeof(more[0])) ||
	       kept_header_n(name, len);
}

/* The length of the field name that starts line[0..n), 0 if none. */
static size_t field_name(const char *line, size_t n)
{
	size_t i;

	for (i = 0; i < n && line[i] != ':'; i++)
		if ((unsigned char)line[i] <= ' ' ||
		    (unsigned char)line[i] >= 127)
			return 0;
	return i < n ? i : 0;
}

static int is_blank_line(const char *p, size_t n)
{
	return n == 1 || (n == 2 && p[0] == '\r');
}

/* Is raw[0..len) well-formed fields up to an empty line? */
static int header_plain(const char *raw, size_t len)
{
	const char *p = raw, *end = raw + len, *nl;
	size_t n;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return 0;
		n = (size_t)(nl + 1 - p);
		if (is_blank_line(p, n))
			return 1;
		if (*p == ' ' || *p == '\t') {
			if (p == raw)
				return 0;
		} else if (!field_name(p, n)) {
			return 0;
		}
		p += n;
	}
	return 0;
}

/* A field read here: its name and raw value as GMime would keep them. */
struct top_field {
	char *name;
	char *raw; /* after the colon, to the end of the field's last line */
	int64_t at; /* where the field starts in the mail */
};

/* Bytes left out of the copy GMime reads, from fed on. */
struct top_gap {
	size_t fed; /* where in the copy */
	size_t gone; /* how many were left out there and before */
};

struct top {
	int read; /* 1: the fields below were read here, not by GMime */
	struct top_field *v;
	size_t nr, alloc;
	struct top_gap *gaps;
	size_t nr_gaps, gaps_alloc;
	size_t base; /* bytes before the header: an mbox From line */
};

static void top_release(struct top *t)
{
	size_t i;

	for (i = 0; i < t->nr; i++) {
		free(t->v[i].name);
		free(t->v[i].raw);
	}
	free(t->v);
	free(t->gaps);
}

static void top_gap(struct top *t, size_t fed, size_t n)
{
	size_t before = t->nr_gaps ? t->gaps[t->nr_gaps - 1].gone : 0;

	if (t->nr_gaps && t->gaps[t->nr_gaps - 1].fed == fed) {
		t->gaps[t->nr_gaps - 1].gone += n;
		return;
	}
	ALLOC_GROW(t->gaps, t->nr_gaps + 1, t->gaps_alloc);
	t->gaps[t->nr_gaps].fed = fed;
	t->gaps[t->nr_gaps].gone = before + n;
	t->nr_gaps++;
}

/* An offset in GMime's copy, counted in the mail as given. */
static int64_t top_offset(const struct top *t, int64_t off)
{
	size_t i, gone = 0;

	for (i = 0; i < t->nr_gaps && (int64_t)t->gaps[i].fed <= off; i++)
		gone = t->gaps[i].gone;
	return off + (int64_t)(gone + t->base);
}

/*
 * Copy raw[0..len) to out for GMime: without the fields it need not see,
 * and, when t->read, without those read here into t.
 */
static void header_filter(struct buf *out, struct top *t, const char *raw,
			  size_t len)
{
	const char *p = raw, *end = raw + len, *nl, *value = NULL;
	size_t n, name;
	int keep = 1;

	t->read = header_plain(raw, len);
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		n = nl ? (size_t)(nl + 1 - p) : (size_t)(end - p);
		if (*p == ' ' || *p == '\t') {
			/* a continuation goes with its field */
		} else if (is_blank_line(p, n) || !(name = field_name(p, n))) {
			break; /* the body, or not a field: GMime's */
		} else {
			int reads = top_reads(p, name);

			if (value) {
				t->v[t->nr - 1].raw =
					xstrndup(value, (size_t)(p - value));
				value = NULL;
			}
			keep = t->read ? is_mime_field(p, name) : reads;
			if (t->read && !keep && reads) {
				ALLOC_GROW(t->v, t->nr + 1, t->alloc);
				t->v[t->nr].name = xstrndup(p, name);
				t->v[t->nr].raw = NULL;
				t->v[t->nr].at = (int64_t)(p - raw + t->base);
				t->nr++;
				value = p + name + 1;
			}
		}
		if (keep) {
			if (buf_add(out, p, n))
				BUG("header_filter: the buffer holds the "
				    "message");
		} else {
			top_gap(t, out->len, n);
		}
		p += n;
	}
	if (value)
		t->v[t->nr - 1].raw = xstrndup(value, (size_t)(p - value));
	if (buf_add(out, p, (size_t)(end - p)))
		BUG("header_filter: the buffer holds the message");
}

/* ------------------------------------------------------------------ */
/*
 * The pre-scan: how much of a message GMime may see.
 *
 * GMime builds the whole MIME tree before anything can look at it: an
 * object for every boundary line, a header for every header line, so a
 * few megabytes of "--b\n\n" became millions of parts and gigabytes.  So
 * before GMime runs, one pass over the lines counts what it would build
 * and the message is cut at the start of the line where that passes the
 * limits; GMime then parses only the part before the cut.
 *
 * The count must never be lower than what GMime builds, or the cut would
 * not bound it.  GMime (gmime-parser.c) starts a part at a line that
 * begins with "--" and a boundary of any multipart it is in, and reads a
 * header block after each such line and at the start of a message/rfc822
 * (or a part of a multipart/digest without Content-Type), up to an empty
 * line; a boundary comes from the Content-Type of a header block.  The
 * pre-scan is coarser in every step, so it counts at least as much:
 *
 *  - every boundary ever declared stays in force (GMime pops them), and
 *    any line starting with "--" and one of them counts as a part, in a
 *    header block too, with whatever follows;
 *  - the boundaries come from every Content-Type field of every header
 *    block (GMime takes the last), read with GMime's own parser;
 *  - after every header block whose Content-Type names message/rfc822,
 *    /rfc2822, /global or /news (or that has none, once a
 *    multipart/digest was seen) another header block is read, encoded or
 *    not.
 *
 * Units counted: header blocks and boundary lines (max_parts); header
 * fields in part headers (max_headers in one block, PB_MIME_FIELDS_MAX
 * in all); boundary bytes (PB_MIME_BOUNDARIES_MAX); a field longer than
 * max_header_len.  Nesting is bounded by the units: each level needs one.
 */
struct prescan {
	const struct mail_limits *lim;
	GMimeParserOptions *opts;
	struct strlist bounds; /* "--" + boundary, never popped */
	size_t bound_bytes;
	size_t units, fields, block_fields;
	int digest; /* a multipart/digest was declared */
	int top; /* in the message's own header (check_header() counts) */
	int in_header;
	struct buf ctype; /* Content-Type values of this block, by NUL */
	int in_ctype; /* the current field is a Content-Type */
	size_t field_len;
};

static int is_boundary_line(const struct prescan *ps, const char *line,
			    size_t n)
{
	size_t i, bl;

	if (n < 2 || line[0] != '-' || line[1] != '-')
		return 0;
	for (i = 0; i < ps->bounds.nr; i++) {
		bl = strlen(ps->bounds.items[i]);
		if (n >= bl && !memcmp(line, ps->bounds.items[i], bl))
			return 1;
	}
	return 0;
}

static int is_message_type(GMimeContentType *ct)
{
	return g_mime_content_type_is_type(ct, "message", "rfc822") ||
	       g_mime_content_type_is_type(ct, "message", "rfc2822") ||
	       g_mime_content_type_is_type(ct, "message", "global") ||
	       g_mime_content_type_is_type(ct, "message", "news");
}

/*
 * The end of a header block: take its boundaries; 1 when a message's
 * header block follows, 0 when content does, -1 when the boundaries
 * pass their limit.
 */
static int prescan_block_end(struct prescan *ps)
{
	const char *v = ps->ctype.data, *end = v + ps->ctype.len;
	int nested = 0, any = 0;

	for (; v < end; v += strlen(v) + 1) {
		GMimeContentType *ct = g_mime_content_type_parse(ps->opts, v);
		const char *b;

		any = 1;
		if (!ct)
			continue;
		if (g_mime_content_type_is_type(ct, "multipart", "digest"))
			ps->digest = 1;
		if (is_message_type(ct))
			nested = 1;
		b = g_mime_content_type_is_type(ct, "multipart", "*") ?
			    g_mime_content_type_get_parameter(ct, "boundary") :
			    NULL;
		/* an empty one too: GMime then splits at every "--" line */
		if (b) {
			ps->bound_bytes += strlen(b) + 2;
			if (ps->bound_bytes > PB_MIME_BOUNDARIES_MAX) {
				g_object_unref(ct);
				return -1;
			}
			strlist_push_owned(&ps->bounds, xasprintf("--%s", b));
		}
		g_object_unref(ct);
	}
	buf_reset(&ps->ctype);
	return nested || (!any && ps->digest);
}

/* A new header block starts: a unit; 0, or -1 past max_parts. */
static int prescan_block(struct prescan *ps)
{
	ps->in_header = 1;
	ps->in_ctype = 0;
	ps->block_fields = 0;
	buf_reset(&ps->ctype);
	return ++ps->units > (size_t)ps->lim->max_parts ? -1 : 0;
}

/* One line of a header block; -1 when it passes a limit. */
static int prescan_header_line(struct prescan *ps, const char *line, size_t n)
{
	const char *colon;
	size_t nlen;

	if (line[0] == ' ' || line[0] == '\t') {
		ps->field_len += n + 1;
		if (!ps->top && ps->field_len > ps->lim->max_header_len)
			return -1;
		if (ps->in_ctype && (buf_addch(&ps->ctype, '\n') ||
				     buf_add(&ps->ctype, line, n)))
			return -1;
		return 0;
	}
	if (ps->in_ctype && buf_addch(&ps->ctype, '\0'))
		return -1;
	ps->in_ctype = 0;
	ps->field_len = n + 1;
	if (!ps->top && (++ps->block_fields > ps->lim->max_headers ||
			 ++ps->fields > PB_MIME_FIELDS_MAX ||
			 ps->field_len > ps->lim->max_header_len))
		return -1;
	colon = memchr(line, ':', n);
	if (!colon)
		return 0;
	nlen = (size_t)(colon - line);
	while (nlen && (line[nlen - 1] == ' ' || line[nlen - 1] == '\t'))
		nlen--;
	if (mem_eq_icase(line, nlen, "Content-Type")) {
		ps->in_ctype = 1;
		colon++;
		if (buf_add(&ps->ctype, colon, n - (size_t)(colon - line)))
			return -1;
	}
	return 0;
}

/* How many bytes of raw[0..len) GMime may parse (len: all of it). */
static size_t prescan(const char *raw, size_t len,
		      const struct mail_limits *lim, GMimeParserOptions *opts)
{
	struct prescan ps;
	struct scan s;
	const char *line, *start;
	size_t n, cut = len;
	int rc = 0;

	memset(&ps, 0, sizeof(ps));
	ps.lim = lim;
	ps.opts = opts;
	strlist_init(&ps.bounds);
	buf_init(&ps.ctype, lim->max_header_len * 4);
	scan_init(&s, raw, len);
	prescan_block(&ps); /* the message's own header */
	ps.top = 1;
	while (!rc) {
		start = s.p;
		if (!scan_line(&s, &line, &n))
			break;
		if (is_boundary_line(&ps, line, n)) {
			rc = prescan_block(&ps);
		} else if (!ps.in_header) {
			continue;
		} else if (n) {
			rc = prescan_header_line(&ps, line, n);
		} else if (ps.in_ctype && buf_addch(&ps.ctype, '\0')) {
			rc = -1;
		} else {
			ps.in_header = 0;
			ps.top = 0;
			rc = prescan_block_end(&ps);
			if (rc > 0)
				rc = prescan_block(&ps);
		}
		if (rc < 0)
			cut = (size_t)(start - raw);
	}
	strlist_release(&ps.bounds);
	buf_release(&ps.ctype);
	return cut;
}

struct warn_state {
	unsigned crit;
	unsigned warnings;
	struct strlist notes; /* each warning as text, MAIL_NOTES_MAX */
	const struct top *top; /* GMime's offsets to the mail's */
	int64_t at; /* the field read here now, for GMime's offset -1 */
};

/* What GMime found, in words (gmime-parser-options.h). */
static const char *warning_text(GMimeParserWarning code)
{
	switch (code) {
	case GMIME_WARN_DUPLICATED_HEADER:
		return "a header field that may appear once appears again";
	case GMIME_WARN_DUPLICATED_PARAMETER:
		return "a header parameter repeated";
	case GMIME_WARN_UNENCODED_8BIT_HEADER:
		return "unencoded 8-bit text in a header field";
	case GMIME_WARN_INVALID_CONTENT_TYPE:
		return "an invalid Content-Type (read as "
		       "application/octet-stream)";
	case GMIME_WARN_INVALID_RFC2047_HEADER_VALUE:
		return "an invalid RFC 2047 encoded word";
	case GMIME_WARN_MALFORMED_MULTIPART:
		return "a multipart without parts";
	case GMIME_WARN_TRUNCATED_MESSAGE:
		return "the message is cut short";
	case GMIME_WARN_MALFORMED_MESSAGE:
		return "a malformed message";
	case GMIME_CRIT_INVALID_HEADER_NAME:
		return "an invalid header field name (parts of the message "
		       "may be skipped)";
	case GMIME_CRIT_CONFLICTING_HEADER:
		return "conflicting header fields";
	case GMIME_CRIT_CONFLICTING_PARAMETER:
		return "conflicting header parameters";
	case GMIME_CRIT_MULTIPART_WITHOUT_BOUNDARY:
		return "a multipart without a boundary";
	case GMIME_WARN_INVALID_PARAMETER:
		return "an invalid header parameter";
	case GMIME_WARN_INVALID_ADDRESS_LIST:
		return "an invalid address list";
	case GMIME_CRIT_NESTING_OVERFLOW:
		return "MIME parts nested too deep";
	case GMIME_WARN_PART_WITHOUT_CONTENT:
		return "a MIME part whose headers a boundary ends";
	case GMIME_CRIT_PART_WITHOUT_HEADERS_OR_CONTENT:
		return "a MIME part without headers or content";
	}
	return "an unknown parser warning";
}

static int is_crit(GMimeParserWarning code)
{
	switch (code) {
	case GMIME_CRIT_INVALID_HEADER_NAME:
	case GMIME_CRIT_CONFLICTING_HEADER:
	case GMIME_CRIT_CONFLICTING_PARAMETER:
	case GMIME_CRIT_MULTIPART_WITHOUT_BOUNDARY:
	case GMIME_CRIT_NESTING_OVERFLOW:
	case GMIME_CRIT_PART_WITHOUT_HEADERS_OR_CONTENT:
		return 1;
	default:
		return 0;
	}
}

static void warn(struct warn_state *ws, int64_t offset, GMimeParserWarning code,
		 const char *item)
{
	char what[PB_LOG_QUOTE_MAX];

	if (is_crit(code))
		ws->crit++;
	else
		ws->warnings++;
	if (ws->notes.nr >= MAIL_NOTES_MAX)
		return;
	/* item comes from the mail: printable, and short */
	if (item && *item)
		printable_copy(what, 64, item, strlen(item));
	strlist_pushf(&ws->notes, "%s%s%s%s%s (at byte %lld)",
		      is_crit(code) ? "critical: " : "", warning_text(code),
		      item && *item ? ": \"" : "", item && *item ? what : "",
		      item && *item ? "\"" : "", (long long)offset);
}

/* GMime's warning callback: offsets in its copy, or -1 (top_warn()). */
static void on_warning(gint64 offset, GMimeParserWarning code,
		       const gchar *item, gpointer data)
{
	struct warn_state *ws = data;

	warn(ws, offset < 0 ? ws->at : top_offset(ws->top, offset), code, item);
}

/*
 * What GMime warns of for the fields read here (struct top), had it been
 * given them: 8-bit text as it parses each field; then, field by field
 * as it adds them to the message, a repeat of a once-only field (against
 * the first: critical when the raw values differ) and what its reading
 * of the field finds (gmime-parser.c, gmime-message.c).
 */
static void top_warn(struct warn_state *ws, const struct top *t,
		     GMimeParserOptions *opts)
{
	size_t i, j;

	for (i = 0; i < t->nr; i++)
		if (!g_utf8_validate(t->v[i].raw, -1, NULL))
			warn(ws, t->v[i].at, GMIME_WARN_UNENCODED_8BIT_HEADER,
			     t->v[i].name);
	for (i = 0; i < t->nr; i++) {
		const struct top_field *f = &t->v[i];
		int once = once_only(f->name, strlen(f->name));

		for (j = 0; once && j < i; j++) {
			if (g_ascii_strcasecmp(t->v[j].name, f->name))
				continue;
			warn(ws, f->at,
			     strcmp(t->v[j].raw, f->raw) ?
				     GMIME_CRIT_CONFLICTING_HEADER :
				     GMIME_WARN_DUPLICATED_HEADER,
			     f->name);
			break;
		}
		ws->at = f->at;
		if (!g_ascii_strcasecmp(f->name, "From") ||
		    !g_ascii_strcasecmp(f->name, "Sender") ||
		    !g_ascii_strcasecmp(f->name, "Reply-To")) {
			InternetAddressList *l =
				internet_address_list_parse(opts, f->raw);

			if (l)
				g_object_unref(l);
		} else if ((!g_ascii_strcasecmp(f->name, "Subject") ||
			    !g_ascii_strcasecmp(f->name, "Date") ||
			    !g_ascii_strcasecmp(f->name, "Message-ID")) &&
			   strstr(f->raw, "=?")) {
			/* only an encoded word can be warned of */
			char *u = g_mime_utils_header_unfold(f->raw);

			g_free(g_mime_utils_header_decode_text(opts, u));
			g_free(u);
		}
		ws->at = -1;
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
	return kept_header_n(name, strlen(name));
}

static char *bracket_id(const char *id)
{
	return id && *id ? xasprintf("<%s>", id) : NULL;
}

static void keep_header(struct mail_header **v, size_t *nr, size_t *alloc,
			const char *name, const char *raw)
{
	ALLOC_GROW(*v, *nr + 1, *alloc);
	(*v)[*nr].name = xstrdup(name);
	(*v)[*nr].value = unfold(raw);
	(*nr)++;
}

/* The raw values (owned by GMime) of the fields decoded here. */
struct fields {
	const char *from;
	const char *subject;
	const char *reply_to;
	const char *cc;
	int list; /* List-Id or List-Post: the list delivered it */
};

/* One message's header as it is read (read_field()). */
struct reading {
	struct mail *m;
	struct fields *f;
	GMimeParserOptions *opts;
	int inner;
	int refs; /* a References field was read */
	int msgids; /* Message-ID fields seen */
};

/*
 * Read one field of a message's header: threading fields and Date into
 * m when m has none yet (the outer message first), kept fields (for the
 * inner message of a wrap: its Authentication-Results apart, in
 * inner_headers), and the raw fields decoded later.
 */
static void read_field(struct reading *r, const char *name, const char *raw)
{
	struct mail *m = r->m;
	struct fields *f = r->f;

	if (!name || !raw)
		return;
	if (!strcasecmp(name, "Message-ID") && !r->msgids++) {
		/*
		 * The first field counts, as the milter reads it
		 * (classify.c) and so the journal keys the mail:
		 * GMime's own message id is the last one.
		 */
		char *id = g_mime_utils_decode_message_id(raw);

		if (r->inner)
			m->inner_message_id = bracket_id(id);
		else
			m->message_id = bracket_id(id);
		g_free(id);
	} else if (!strcasecmp(name, "In-Reply-To") && !m->in_reply_to) {
		GMimeReferences *refs = g_mime_references_parse(r->opts, raw);

		if (refs && g_mime_references_length(refs) > 0)
			m->in_reply_to = bracket_id(
				g_mime_references_get_message_id(refs, 0));
		if (refs)
			g_mime_references_free(refs);
	} else if (!strcasecmp(name, "References") && !r->refs &&
		   !m->references.nr) {
		GMimeReferences *refs = g_mime_references_parse(r->opts, raw);
		int k, n = refs ? g_mime_references_length(refs) : 0;

		for (k = 0; k < n && k < PB_HEADER_COUNT_MAX; k++) {
			const char *id =
				g_mime_references_get_message_id(refs, k);

			if (id && *id)
				strlist_push_owned(&m->references,
						   bracket_id(id));
		}
		r->refs = 1;
		if (refs)
			g_mime_references_free(refs);
	} else if (!strcasecmp(name, "Date") && !m->date) {
		m->date = unfold(raw);
	} else if (!strcasecmp(name, "From") && !f->from) {
		f->from = raw;
	} else if (!strcasecmp(name, "Subject") && !f->subject) {
		f->subject = raw;
	} else if (!strcasecmp(name, "Reply-To") && !f->reply_to) {
		f->reply_to = raw;
	} else if (!strcasecmp(name, "Cc") && !f->cc) {
		f->cc = raw;
	} else if (!strcasecmp(name, "List-Id") ||
		   !strcasecmp(name, "List-Post")) {
		f->list = 1;
	}
	if (!kept_header(name))
		return;
	if (r->inner && !strcasecmp(name, "Authentication-Results"))
		keep_header(&m->inner_headers, &m->nr_inner_headers,
			    &m->inner_alloc, name, raw);
	else if (!r->inner || strcasecmp(name, "List-Id"))
		keep_header(&m->headers, &m->nr_headers, &m->headers_alloc,
			    name, raw);
}

static void read_begin(struct reading *r, struct mail *m, struct fields *f,
		       GMimeParserOptions *opts, int inner)
{
	memset(f, 0, sizeof(*f));
	r->m = m;
	r->f = f;
	r->opts = opts;
	r->inner = inner;
	r->refs = r->msgids = 0;
}

static void read_end(struct reading *r)
{
	if (r->msgids > 1 && !r->inner)
		strlist_pushf(&r->m->notes,
			      "%d Message-ID fields: the first counts, as the "
			      "milter reads it",
			      r->msgids);
}

/* A message's fields as GMime read them (an inner message, or struct top
 * did not read the header). */
static void read_headers(struct mail *m, struct fields *f, GMimeMessage *msg,
			 GMimeParserOptions *opts, int inner)
{
	GMimeHeaderList *hl = g_mime_object_get_header_list(GMIME_OBJECT(msg));
	int i, count = hl ? g_mime_header_list_get_count(hl) : 0;
	struct reading r;

	read_begin(&r, m, f, opts, inner);
	for (i = 0; i < count; i++) {
		GMimeHeader *h = g_mime_header_list_get_header_at(hl, i);

		read_field(&r, g_mime_header_get_name(h),
			   g_mime_header_get_raw_value(h));
	}
	read_end(&r);
}

/* The top-level fields read here (struct top). */
static void read_top(struct mail *m, struct fields *f, const struct top *t,
		     GMimeParserOptions *opts)
{
	struct reading r;
	size_t i;

	read_begin(&r, m, f, opts, 0);
	for (i = 0; i < t->nr; i++)
		read_field(&r, t->v[i].name, t->v[i].raw);
	read_end(&r);
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

/*
 * Charsets that write non-ASCII text in 7-bit bytes with shift sequences
 * (RFC 1468 ISO-2022-JP, RFC 1557 ISO-2022-KR, RFC 1842 HZ, RFC 2152
 * UTF-7): their text has no 8-bit byte and must still be converted.
 */
static int is_7bit_shifted(const char *cs)
{
	return !strncasecmp(cs, "iso-2022-", 9) ||
	       !strncasecmp(cs, "csiso2022", 9) || !strcasecmp(cs, "utf-7") ||
	       !strcasecmp(cs, "unicode-1-1-utf-7") ||
	       !strncasecmp(cs, "hz-gb-2312", 10) || !strcasecmp(cs, "hz");
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

	if (!has_8bit(p, len) && !(cs && is_7bit_shifted(cs)))
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
/* header fields */

int mail_header_conv(struct buf *out, const char *p, size_t len,
		     const char *charset, void *arg)
{
	unsigned flags = 0;

	(void)arg;
	return to_utf8(out, p, len, charset, &flags);
}

int mail_charset_to_utf8(struct buf *out, const char *p, size_t len,
			 const char *charset)
{
	return mail_header_conv(out, p, len, charset, NULL);
}

/* Subject: RFC 2047 decoded (hdrdecode.h), unfolded, trimmed. */
static char *decode_text(const char *raw)
{
	return hdrdecode_text_dup(raw ? raw : "", raw ? strlen(raw) : 0,
				  mail_header_conv, NULL);
}

static void decode_mailbox(struct mail_addr *out, const char *raw)
{
	struct hdrdecode_mailbox mb;

	hdrdecode_mailbox(&mb, raw ? raw : "", raw ? strlen(raw) : 0,
			  mail_header_conv, NULL);
	out->name = mb.name;
	out->email = mb.email;
}

static const char *find_icase(const char *hay, size_t hn, const char *needle,
			      size_t nn)
{
	size_t i;

	for (i = 0; nn && i + nn <= hn; i++)
		if (!strncasecmp(hay + i, needle, nn))
			return hay + i;
	return NULL;
}

/* Does the address list value hold the addr-spec email? */
static int list_has(const char *value, const char *email)
{
	size_t n = strlen(email), vn;
	const char *p, *hit;

	if (!value || !n)
		return 0;
	vn = strlen(value);
	for (p = value;
	     (hit = find_icase(p, vn - (size_t)(p - value), email, n));
	     p = hit + 1) {
		int before = hit == value ? ' ' : (unsigned char)hit[-1];
		int after = (unsigned char)hit[n];

		if (!hdrdecode_atext(before) && before != '.' &&
		    !hdrdecode_atext(after) && after != '.')
			return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* choosing the text part */

struct walk {
	const struct mail_limits *lim;
	int parts;
	unsigned flags;
};

static int is_type(GMimeObject *obj, const char *type, const char *subtype)
{
	GMimeContentType *ct = g_mime_object_get_content_type(obj);

	return ct && g_mime_content_type_is_type(ct, type, subtype);
}

/* A file name: Content-Disposition filename=, or Content-Type name=. */
static const char *file_name(GMimeObject *obj)
{
	const char *fn = NULL;

	if (GMIME_IS_PART(obj))
		fn = g_mime_part_get_filename(GMIME_PART(obj));
	return fn && *fn ? fn : NULL;
}

/*
 * An attachment: Content-Disposition: attachment, or any part with a
 * file name, even "inline" (RFC 2183 2.3: a file name says the part is
 * a file the sender attached, not the text they wrote).
 */
static int is_attachment(GMimeObject *obj)
{
	GMimeContentDisposition *d = g_mime_object_get_content_disposition(obj);

	return (d && g_mime_content_disposition_is_attachment(d)) ||
	       file_name(obj) != NULL;
}

static int visit(struct walk *w, int depth)
{
	if (depth > w->lim->max_depth || ++w->parts > w->lim->max_parts) {
		w->flags |= MAIL_F_LIMIT;
		return 0;
	}
	return 1;
}

/* multipart/related: the root, named by start= or else the first part. */
static GMimeObject *related_root(GMimeMultipart *mp)
{
	const char *start = g_mime_object_get_content_type_parameter(
		GMIME_OBJECT(mp), "start");
	int i, n = g_mime_multipart_get_count(mp);

	if (start && *start) {
		size_t sl = strlen(start);

		if (start[0] == '<' && sl > 2) {
			start++;
			sl -= 2;
		}
		for (i = 0; i < n; i++) {
			GMimeObject *o = g_mime_multipart_get_part(mp, i);
			const char *cid = g_mime_object_get_content_id(o);

			if (cid && strlen(cid) == sl && !memcmp(cid, start, sl))
				return o;
		}
	}
	return n > 0 ? g_mime_multipart_get_part(mp, 0) : NULL;
}

/*
 * The parts of the body, in the order the sender wrote them.  Bounded by
 * the walk: no more entries than parts visited (lim->max_parts).
 */
struct body {
	GMimeObject **v;
	size_t nr, alloc;
};

static void body_add(struct body *b, GMimeObject *obj)
{
	ALLOC_GROW(b->v, b->nr + 1, b->alloc);
	b->v[b->nr++] = obj;
}

static void body_addall(struct body *b, const struct body *from)
{
	size_t i;

	for (i = 0; i < from->nr; i++)
		body_add(b, from->v[i]);
}

static void body_release(struct body *b)
{
	free(b->v);
	memset(b, 0, sizeof(*b));
}

static int body_has(const struct body *b, GMimeObject *obj)
{
	size_t i;

	for (i = 0; i < b->nr; i++)
		if (b->v[i] == obj)
			return 1;
	return 0;
}

static int is_patch_type(GMimeObject *obj)
{
	return is_type(obj, "text", "x-patch") ||
	       is_type(obj, "text", "x-diff");
}

/*
 * Is the part's decoded text only blanks (spaces, tabs, line ends,
 * no-break spaces in UTF-8 or Latin-1)?  A mailer whose HTML editor
 * left its plain text empty sends such a text/plain beside the HTML
 * that holds the words.
 */
static int part_blank(GMimeObject *obj)
{
	GMimeDataWrapper *dw;
	GMimeStream *mem;
	GByteArray *ba;
	size_t i, n;
	int blank = 1;

	if (!GMIME_IS_PART(obj) ||
	    !(dw = g_mime_part_get_content(GMIME_PART(obj))))
		return 1;
	mem = g_mime_stream_mem_new();
	if (g_mime_data_wrapper_write_to_stream(dw, mem) < 0) {
		g_object_unref(mem);
		return 0;
	}
	ba = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(mem));
	n = ba ? ba->len : 0;
	for (i = 0; i < n && blank; i++) {
		unsigned char c = ba->data[i];

		if (c == 0xc2 && i + 1 < n && ba->data[i + 1] == 0xa0)
			i++;
		else if (!strchr(" \t\r\n\f\v", c) && c != 0xa0)
			blank = 0;
	}
	g_object_unref(mem);
	return blank;
}

static int body_blank(const struct body *b)
{
	size_t i;

	for (i = 0; i < b->nr; i++)
		if (!part_blank(b->v[i]))
			return 0;
	return 1;
}

static void body_of(struct walk *w, struct body *out, GMimeObject *obj,
		    int depth);

/*
 * multipart/alternative: one alternative, the text/plain one we read
 * best, else the last, the richest (RFC 2046 5.1.4); a text/plain of
 * blanks beside a richer one that says something loses to it.
 */
static void alternative_of(struct walk *w, struct body *out, GMimeMultipart *mp,
			   int depth)
{
	struct body plain = { 0 }, rich = { 0 }, got = { 0 };
	int i, n = g_mime_multipart_get_count(mp);

	for (i = 0; i < n && !(w->flags & MAIL_F_LIMIT); i++) {
		GMimeObject *c = g_mime_multipart_get_part(mp, i);

		if (GMIME_IS_MESSAGE_PART(c) ||
		    (GMIME_IS_PART(c) && is_attachment(c)))
			continue;
		got.nr = 0;
		body_of(w, &got, c, depth + 1);
		if (!got.nr)
			continue;
		if (is_type(got.v[0], "text", "plain")) {
			if (!plain.nr)
				body_addall(&plain, &got);
		} else {
			rich.nr = 0;
			body_addall(&rich, &got);
		}
	}
	if (plain.nr && (!rich.nr || !body_blank(&plain) || body_blank(&rich)))
		body_addall(out, &plain);
	else
		body_addall(out, &rich);
	body_release(&plain);
	body_release(&rich);
	body_release(&got);
}

/*
 * The body the sender wrote (see mail.h): every text part a reader is
 * shown, in order.  A part with a file name is an attachment and never
 * the body; a message part is forwarded, not written; images and other
 * types are skipped.  multipart/mixed and multipart/related give each
 * of their parts in turn (Apple Mail and Thunderbird put a picture
 * between two text parts; the words after it are the reply too),
 * multipart/related its root first and no part the root refers to by
 * its Content-ID; multipart/alternative one of them.
 */
static void body_of(struct walk *w, struct body *out, GMimeObject *obj,
		    int depth)
{
	GMimeMultipart *mp;
	GMimeObject *root = NULL;
	size_t before = out->nr;
	int i, n;

	if (!obj || !visit(w, depth))
		return;
	if (GMIME_IS_MULTIPART_ENCRYPTED(obj)) {
		w->flags |= MAIL_F_ENCRYPTED;
		return;
	}
	if (GMIME_IS_MULTIPART_SIGNED(obj)) {
		/* the signed content is the first part (RFC 1847) */
		mp = GMIME_MULTIPART(obj);
		if (g_mime_multipart_get_count(mp) < 1)
			return;
		body_of(w, out, g_mime_multipart_get_part(mp, 0), depth + 1);
		if (out->nr > before)
			w->flags |= MAIL_F_PGP_MIME;
		return;
	}
	if (GMIME_IS_MULTIPART(obj)) {
		mp = GMIME_MULTIPART(obj);
		n = g_mime_multipart_get_count(mp);
		if (is_type(obj, "multipart", "alternative")) {
			alternative_of(w, out, mp, depth);
			return;
		}
		if (is_type(obj, "multipart", "related")) {
			root = related_root(mp);
			if (root && !GMIME_IS_MESSAGE_PART(root) &&
			    !(GMIME_IS_PART(root) && is_attachment(root)))
				body_of(w, out, root, depth + 1);
		}
		for (i = 0; i < n && !(w->flags & MAIL_F_LIMIT); i++) {
			GMimeObject *c = g_mime_multipart_get_part(mp, i);

			if (c == root || GMIME_IS_MESSAGE_PART(c) ||
			    (GMIME_IS_PART(c) && is_attachment(c)))
				continue;
			/* a related part with a Content-ID is a resource the
			 * root refers to (RFC 2387): no reader sees it as text */
			if (root && g_mime_object_get_content_id(c))
				continue;
			body_of(w, out, c, depth + 1);
		}
		return;
	}
	if (GMIME_IS_MESSAGE_PART(obj) || !GMIME_IS_PART(obj) ||
	    is_attachment(obj))
		return;
	if (is_type(obj, "text", "plain") || is_type(obj, "text", "html") ||
	    is_patch_type(obj))
		body_add(out, obj);
}

/*
 * A patch part without a file name is the body only when the sender
 * wrote no other text: beside a reply's words it is the mail's patch
 * (find_patch()), as git am reads every text part.  Then the first one
 * is the body, as before any other part was read.
 */
static void body_keep_text(struct body *b)
{
	size_t i, o = 0;

	for (i = 0; i < b->nr; i++)
		if (!is_patch_type(b->v[i]))
			b->v[o++] = b->v[i];
	if (o)
		b->nr = o;
	else if (b->nr)
		b->nr = 1;
}

static int ends_with_icase(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && !strcasecmp(s + n - k, suffix);
}

/*
 * A part that may carry a patch, as git am (every text part) and
 * patchwork (text/x-patch, text/x-diff, text/plain) look for one:
 * a patch or diff type, a .patch or .diff file name whatever the type
 * (Outlook and webmail send application/octet-stream), or an attached
 * text/plain file.
 */
static int patch_candidate(GMimeObject *obj)
{
	const char *fn = file_name(obj);

	if (is_type(obj, "text", "x-patch") || is_type(obj, "text", "x-diff") ||
	    is_type(obj, "text", "patch") || is_type(obj, "text", "diff") ||
	    is_type(obj, "application", "x-patch") ||
	    is_type(obj, "application", "x-diff"))
		return 1;
	if (fn &&
	    (ends_with_icase(fn, ".patch") || ends_with_icase(fn, ".diff")))
		return 1;
	return fn && is_type(obj, "text", "plain");
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
	/* over the cap: its beginning and its end, where trailers stand */
	rc = n ? mailtext_elide(out, (const char *)ba->data, n, max, SIZE_MAX) :
		 0;
	if (rc == 1) {
		*flags |= MAIL_F_TRUNCATED;
		rc = 0;
	}
	g_object_unref(mem);
	return rc;
}

/* Run one text transform on text; on hitting the cap keep what fitted. */
static void transform(struct mail *m, struct buf *text, struct buf *tmp,
		      int (*fn)(struct buf *, const char *, size_t))
{
	buf_reset(tmp);
	if (fn(tmp, text->data, text->len) == PB_ELIMIT)
		m->flags |= MAIL_F_TRUNCATED;
	buf_reset(text);
	buf_addbuf(text, tmp);
}

static int flowed_yes(struct buf *o, const char *p, size_t n)
{
	return mailtext_flowed(o, p, n, 1);
}

static int flowed_no(struct buf *o, const char *p, size_t n)
{
	return mailtext_flowed(o, p, n, 0);
}

/* Does the text carry a unified diff (git am's and patchwork's test)? */
static int looks_like_diff(const char *p, size_t len)
{
	return (len >= 11 && !memcmp(p, "diff --git ", 11)) ||
	       mem_find(p, len, "\ndiff --git ", 12) ||
	       (((len >= 4 && !memcmp(p, "--- ", 4)) ||
		 mem_find(p, len, "\n--- ", 5)) &&
		mem_find(p, len, "\n+++ ", 5) && mem_find(p, len, "\n@@ -", 5));
}

/* The patch part's type (lower case) and decoded file name. */
static void patch_part_names(struct mail *m, GMimeObject *obj)
{
	GMimeContentType *ct = g_mime_object_get_content_type(obj);
	const char *fn = file_name(obj);
	char *mt = ct ? g_mime_content_type_get_mime_type(ct) : NULL;
	char *q;

	m->patch_type = xstrdup(mt ? mt : "application/octet-stream");
	g_free(mt);
	for (q = m->patch_type; *q; q++)
		if (*q >= 'A' && *q <= 'Z')
			*q = (char)(*q - 'A' + 'a');
	if (fn)
		m->patch_name = decode_text(fn);
}

/*
 * The first patch attachment (patch_candidate()) in MIME order whose
 * text is a diff: m->patch, with its type and file name.  The body's
 * parts and forwarded messages are not looked at.
 */
static void find_patch(struct mail *m, struct walk *w, GMimeObject *obj,
		       const struct body *body, int depth)
{
	struct buf raw;
	const char *cs;
	int i, n;

	if (!obj || m->patch_type || !visit(w, depth))
		return;
	if (GMIME_IS_MULTIPART_ENCRYPTED(obj) || GMIME_IS_MESSAGE_PART(obj))
		return;
	if (GMIME_IS_MULTIPART(obj)) {
		GMimeMultipart *mp = GMIME_MULTIPART(obj);

		n = g_mime_multipart_get_count(mp);
		for (i = 0; i < n && !m->patch_type; i++)
			find_patch(m, w, g_mime_multipart_get_part(mp, i), body,
				   depth + 1);
		return;
	}
	if (body_has(body, obj) || !GMIME_IS_PART(obj) || !patch_candidate(obj))
		return;
	buf_init(&raw, w->lim->max_text);
	if (part_bytes(&raw, GMIME_PART(obj), w->lim->max_text, &w->flags) ||
	    !looks_like_diff(raw.data, raw.len)) {
		buf_release(&raw);
		return;
	}
	cs = g_mime_object_get_content_type_parameter(obj, "charset");
	if (to_utf8(&m->patch, raw.data, raw.len, cs && *cs ? cs : NULL,
		    &w->flags) == PB_ELIMIT)
		w->flags |= MAIL_F_TRUNCATED;
	buf_release(&raw);
	patch_part_names(m, obj);
}

/*
 * One part of the body as text in out (empty on entry): decoded,
 * converted to UTF-8, HTML made text or format=flowed joined, inline
 * PGP armor removed, ending with a line end.
 */
static int part_text(struct mail *m, struct buf *out, GMimeObject *part,
		     struct buf *raw, struct buf *tmp,
		     const struct mail_limits *lim)
{
	const char *cs, *fmt, *delsp;
	int html, rc;

	html = is_type(part, "text", "html");
	cs = g_mime_object_get_content_type_parameter(part, "charset");
	buf_reset(raw);
	rc = part_bytes(raw, GMIME_PART(part), lim->max_text, &m->flags);
	if (rc)
		return rc;
	if (to_utf8(out, raw->data, raw->len, cs && *cs ? cs : NULL,
		    &m->flags) == PB_ELIMIT) {
		/* Keep what fitted, flagged as cut. */
		m->flags |= MAIL_F_TRUNCATED;
		buf_clear_error(out);
	}

	if (html) {
		m->flags |= MAIL_F_HTML;
		transform(m, out, tmp, mailtext_html);
	} else {
		fmt = g_mime_object_get_content_type_parameter(part, "format");
		delsp = g_mime_object_get_content_type_parameter(part, "delsp");
		if (fmt && !strcasecmp(fmt, "flowed")) {
			m->flags |= MAIL_F_FLOWED;
			transform(m, out, tmp,
				  delsp && !strcasecmp(delsp, "yes") ?
					  flowed_yes :
					  flowed_no);
		}
		if (mailtext_has_entities(out->data, out->len)) {
			m->flags |= MAIL_F_ENTITIES;
			transform(m, out, tmp, mailtext_entities);
		}
	}
	buf_reset(tmp);
	rc = mailtext_pgp_strip(tmp, out->data, out->len);
	if (rc != 0) {
		if (rc == PB_ELIMIT)
			m->flags |= MAIL_F_TRUNCATED;
		m->flags |= MAIL_F_PGP_INLINE;
		buf_reset(out);
		buf_addbuf(out, tmp);
	}
	/* a part's last line end belongs to the boundary: put it back */
	if (out->len && out->data[out->len - 1] != '\n' && buf_addch(out, '\n'))
		m->flags |= MAIL_F_TRUNCATED;
	return 0;
}

static int blank_text(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strchr(" \t\n", p[i]))
			return 0;
	return 1;
}

/*
 * The reply text: the body's parts (body_of()) one after the other, a
 * blank line between two, a part of nothing but blanks left out when
 * there are others.  The text type and charset are the first part's.
 */
static int read_text(struct mail *m, GMimeObject *top,
		     const struct mail_limits *lim)
{
	struct walk w = { lim, 0, 0 };
	struct body body = { 0 };
	struct buf raw = BUF_INIT(lim->max_text);
	struct buf one = BUF_INIT(lim->max_text * MAIL_TEXT_GROWTH);
	struct buf tmp = BUF_INIT(lim->max_text * MAIL_TEXT_GROWTH);
	const char *cs;
	size_t i;
	int rc = 0;

	body_of(&w, &body, top, 1);
	body_keep_text(&body);
	m->flags |= w.flags;
	w.parts = 0;
	w.flags = 0;
	find_patch(m, &w, top, &body, 1);
	m->flags |= w.flags & (MAIL_F_TRUNCATED | MAIL_F_LIMIT);
	if (!body.nr) {
		m->flags |= MAIL_F_NO_TEXT;
		goto out;
	}
	m->text_type = xstrdup(is_type(body.v[0], "text", "html") ?
				       "text/html" :
				       "text/plain");
	cs = g_mime_object_get_content_type_parameter(body.v[0], "charset");
	if (cs && *cs)
		m->charset = xstrdup(cs);
	for (i = 0; i < body.nr; i++) {
		buf_reset(&one);
		rc = part_text(m, &one, body.v[i], &raw, &tmp, lim);
		if (rc)
			goto out;
		if (body.nr > 1 && blank_text(one.data, one.len))
			continue;
		if (m->text.len && buf_addch(&m->text, '\n'))
			break;
		if (buf_addbuf(&m->text, &one))
			break;
	}
	if (buf_error(&m->text)) {
		/* what fitted, whole parts, flagged as cut */
		m->flags |= MAIL_F_TRUNCATED;
		buf_clear_error(&m->text);
	}
out:
	body_release(&body);
	buf_release(&raw);
	buf_release(&one);
	buf_release(&tmp);
	return rc;
}

/* ------------------------------------------------------------------ */

/*
 * A message a mailing list wrapped for DMARC (Mailman's "wrap_message",
 * mailman/handlers/dmarc.py): the whole body is a message/rfc822 part,
 * or a text/plain note and then one; the outer header is the list's
 * (List-Id or List-Post) and names the inner message's sender in its
 * Reply-To or Cc, where Mailman puts the original From.  A person who
 * forwards a message as an attachment writes no such header.  Returns
 * the inner message (owned by msg) and its sender, or NULL.
 */
static const char *raw_field(GMimeMessage *msg, const char *name)
{
	GMimeHeaderList *hl = g_mime_object_get_header_list(GMIME_OBJECT(msg));
	GMimeHeader *h = hl ? g_mime_header_list_get_header(hl, name) : NULL;

	return h ? g_mime_header_get_raw_value(h) : NULL;
}

static GMimeMessage *wrapped(GMimeObject *top, const struct fields *outer,
			     struct mail_addr *sender)
{
	GMimeObject *part = NULL;
	GMimeMessage *inner;
	struct mail_addr a = { NULL, NULL };
	struct mail_addr o = { NULL, NULL };
	int ok;

	if (!top || !outer->list)
		return NULL;
	if (GMIME_IS_MESSAGE_PART(top)) {
		part = top;
	} else if (is_type(top, "multipart", "mixed") &&
		   g_mime_multipart_get_count(GMIME_MULTIPART(top)) == 2) {
		GMimeObject *note =
			g_mime_multipart_get_part(GMIME_MULTIPART(top), 0);
		GMimeObject *msgp =
			g_mime_multipart_get_part(GMIME_MULTIPART(top), 1);

		if (GMIME_IS_PART(note) && is_type(note, "text", "plain") &&
		    !file_name(note) && GMIME_IS_MESSAGE_PART(msgp))
			part = msgp;
	}
	if (!part)
		return NULL;
	inner = g_mime_message_part_get_message(GMIME_MESSAGE_PART(part));
	if (!inner)
		return NULL;
	decode_mailbox(&a, raw_field(inner, "From"));
	decode_mailbox(&o, outer->from);
	ok = a.email[0] && strcasecmp(a.email, o.email) &&
	     (list_has(outer->reply_to, a.email) ||
	      list_has(outer->cc, a.email));
	free(o.name);
	free(o.email);
	if (!ok) {
		free(a.name);
		free(a.email);
		return NULL;
	}
	*sender = a;
	return inner;
}

int mail_parse(struct mail **out, const char *raw, size_t len,
	       const struct mail_limits *lim_in)
{
	struct mail_limits lim;
	struct top hdr = { 0 };
	struct warn_state ws = { 0, 0, STRLIST_INIT, &hdr, -1 };
	GMimeParserOptions *opts = NULL, *scan_opts;
	GMimeStream *stream = NULL;
	GMimeParser *parser = NULL;
	GMimeMessage *msg = NULL;
	const char *fallback[] = { "UTF-8", "windows-1252", NULL };
	struct mail *m = NULL;
	struct buf fed = BUF_INIT(0);
	struct fields outer, fields;
	struct mail_addr wrap_from = { NULL, NULL };
	GMimeMessage *inner;
	GMimeObject *top, *body = NULL;
	size_t i;
	unsigned flags = 0;
	size_t cut;
	int rc;

	*out = NULL;
	if (lim_in)
		lim = *lim_in;
	else
		mail_limits_default(&lim);
	BUG_ON(!mail_ready);
	if (len > lim.max_size) {
		/* keep what fits, up to a line end */
		const char *nl = memrchr(raw, '\n', lim.max_size);

		len = nl ? (size_t)(nl + 1 - raw) : lim.max_size;
		flags |= MAIL_F_TRUNCATED;
	}
	/* an mbox "From " line is not a header */
	if (len >= 5 && !memcmp(raw, "From ", 5)) {
		const char *nl = memchr(raw, '\n', len);

		hdr.base = nl ? (size_t)(nl + 1 - raw) : len;
		len -= hdr.base;
		raw += hdr.base;
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
	/* the pre-scan's reading warns nothing: GMime's own will */
	scan_opts = g_mime_parser_options_clone(opts);
	g_mime_parser_options_set_warning_callback(scan_opts, NULL, NULL);
	cut = prescan(raw, len, &lim, scan_opts);
	g_mime_parser_options_free(scan_opts);
	if (cut < len) {
		flags |= MAIL_F_LIMIT;
		len = cut;
	}
	/* the filtered copy is never longer than the message */
	buf_init(&fed, len);
	header_filter(&fed, &hdr, raw, len);
	if (hdr.read)
		top_warn(&ws, &hdr, opts);
	stream = g_mime_stream_mem_new_with_buffer(fed.data, fed.len);
	parser = g_mime_parser_new_with_stream(stream);
	g_mime_parser_set_format(parser, GMIME_FORMAT_MESSAGE);
	if (hdr.read) {
		/* GMime has only the MIME fields: no message object to build */
		body = g_mime_parser_construct_part(parser, opts);
		top = body;
	} else {
		msg = g_mime_parser_construct_message(parser, opts);
		top = msg ? g_mime_message_get_mime_part(msg) : NULL;
	}
	if (!msg && !body) {
		rc = err_set(PB_EINVAL, "not a mail message");
		goto out;
	}

	m = xcalloc(1, sizeof(*m));
	m->flags = flags;
	strlist_init(&m->references);
	strlist_init(&m->notes);
	buf_init(&m->text, lim.max_text * MAIL_TEXT_GROWTH);
	buf_init(&m->patch, lim.max_text * MAIL_TEXT_GROWTH);
	if (hdr.read)
		read_top(m, &outer, &hdr, opts);
	else
		read_headers(m, &outer, msg, opts, 0);
	inner = wrapped(top, &outer, &wrap_from);
	if (inner) {
		/* the list's DMARC wrap: the inner message is the reply */
		m->flags |= MAIL_F_WRAPPED;
		decode_mailbox(&m->wrapper, outer.from);
		read_headers(m, &fields, inner, opts, 1);
		m->from = wrap_from;
		m->subject = decode_text(fields.subject ? fields.subject :
							  outer.subject);
		top = g_mime_message_get_mime_part(inner);
	} else {
		decode_mailbox(&m->from, outer.from);
		m->subject = decode_text(outer.subject);
		m->wrapper.name = xstrdup("");
		m->wrapper.email = xstrdup("");
	}
	rc = read_text(m, top, &lim);
	if (rc)
		goto out;
	m->crit = ws.crit;
	m->warnings = ws.warnings;
	for (i = 0; i < ws.notes.nr && m->notes.nr < MAIL_NOTES_MAX; i++)
		strlist_push(&m->notes, ws.notes.items[i]);
	if (ws.crit)
		m->flags |= MAIL_F_AMBIGUOUS;
	*out = m;
	m = NULL;
out:
	mail_free(m);
	strlist_release(&ws.notes);
	if (msg)
		g_object_unref(msg);
	if (body)
		g_object_unref(body);
	if (parser)
		g_object_unref(parser);
	if (stream)
		g_object_unref(stream);
	if (opts)
		g_mime_parser_options_free(opts);
	buf_release(&fed);
	top_release(&hdr);
	return rc;
}
