#include "outbound/mailhdr.h"

#include "util/err.h"
#include "util/limits.h"
#include "util/utf8.h"

#include <string.h>
#include <time.h>

static const char q_open[] = "=?UTF-8?q?";
#define Q_OPEN_LEN (sizeof(q_open) - 1)
/* Room for the opener, the widest character (4 bytes as =XX) and "?=". */
#define Q_MIN_WORD (Q_OPEN_LEN + 12 + 2)

int mailhdr_sanitize(struct buf *out, const char *s, size_t len)
{
	return utf8_clean(out, s, len, UTF8_CLEAN_LINE);
}

static int word_needs_encoding(const char *w, size_t len)
{
	size_t i;

	if (len > MAILHDR_WORD_MAX)
		return 1;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)w[i];

		if (c >= 0x80 || c < 0x20 || c == 0x7f)
			return 1;
		/* RFC 2047 section 6.1 would decode it: make it inert. */
		if (c == '=' && i + 1 < len && w[i + 1] == '?')
			return 1;
	}
	return 0;
}

int mailhdr_needs_encoding(const char *s, size_t len)
{
	size_t i = 0, j;

	while (i < len) {
		for (j = i; j < len && s[j] != ' '; j++)
			;
		if (word_needs_encoding(s + i, j - i))
			return 1;
		i = j + 1;
	}
	return 0;
}

/* RFC 2047 section 5 (3): the characters a "Q" encoded-word may carry
 * literally in any position, including a phrase. */
static int q_literal(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '!' || c == '*' || c == '+' ||
	       c == '-' || c == '/';
}

/* Encoded width of the character at s (n bytes, 0 if ill-formed). */
static size_t q_char_width(const char *s, size_t n)
{
	if (n == 0)
		return 9; /* U+FFFD */
	if (n == 1 && (*s == ' ' || q_literal((unsigned char)*s)))
		return 1;
	return 3 * n;
}

/* Encoded width of the word starting at s (up to a space or len). */
static size_t q_word_width(const char *s, size_t len)
{
	size_t i = 0, n, w = 0;
	uint32_t cp;

	while (i < len && s[i] != ' ') {
		n = utf8_decode(&cp, s + i, len - i);
		w += q_char_width(s + i, n);
		i += n ? n : 1;
	}
	return w;
}

/*
 * The encoder behind both header forms.  Encoded-words never exceed
 * width columns counted from *col; when the next character would not fit,
 * the word is closed, brk is written and counting restarts at wrap_col.
 * Breaks go at spaces where a whole word fits on the next line, else
 * between two characters (never inside one: RFC 2047 section 5 (3)).
 * Invalid UTF-8 is encoded as U+FFFD so every word decodes cleanly.
 */
static int encode_q(struct buf *out, const char *s, size_t len, size_t *col,
		    size_t width, const char *brk, size_t wrap_col)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i = 0, n, k, enc, used = 0, next;
	uint32_t cp;
	char tmp[12];
	int rc, brk_now;

	if (*col + Q_MIN_WORD > width) {
		rc = buf_adds(out, brk);
		if (rc)
			return rc;
		*col = wrap_col;
	}
	rc = buf_adds(out, q_open);
	if (rc)
		return rc;
	*col += Q_OPEN_LEN;
	while (i < len) {
		const char *ch = s + i;
		unsigned char c = (unsigned char)*ch;

		n = utf8_decode(&cp, ch, len - i);
		brk_now = 0;
		if (n == 1 && c == ' ' && used) {
			/* Would the next word still fit on this line? */
			next = q_word_width(ch + 1, len - i - 1);
			if (*col + 1 + next + 2 > width &&
			    wrap_col + Q_OPEN_LEN + 1 + next + 2 <= width)
				brk_now = 1;
		}
		if (n == 0) {
			ch = "\xef\xbf\xbd";
			n = 3;
			i++;
		} else {
			i += n;
		}
		if (n == 1 && c == ' ') {
			tmp[0] = '_';
			enc = 1;
		} else if (n == 1 && q_literal(c)) {
			tmp[0] = (char)c;
			enc = 1;
		} else {
			for (k = 0, enc = 0; k < n; k++) {
				unsigned char b = (unsigned char)ch[k];

				tmp[enc++] = '=';
				tmp[enc++] = hex[b >> 4];
				tmp[enc++] = hex[b & 15];
			}
		}
		if (used && (brk_now || *col + enc + 2 > width)) {
			rc = buf_adds(out, "?=");
			if (!rc)
				rc = buf_adds(out, brk);
			if (!rc)
				rc = buf_adds(out, q_open);
			if (rc)
				return rc;
			*col = wrap_col + Q_OPEN_LEN;
			used = 0;
		}
		rc = buf_add(out, tmp, enc);
		if (rc)
			return rc;
		*col += enc;
		used += enc;
	}
	rc = buf_adds(out, "?=");
	*col += 2;
	return rc;
}

int mailhdr_encode_words(struct buf *out, const char *s, size_t len,
			 size_t *col)
{
	return encode_q(out, s, len, col, MAILHDR_ENCODED_WIDTH, "\n ", 1);
}

/*
 * Append one token after a separating space.  The space becomes a fold
 * ("\n ", RFC 5322 section 3.2.2: folding inserts CRLF before existing
 * whitespace) when the token would pass width and folding is allowed.
 */
static int add_folded(struct buf *out, size_t *col, const char *tok, size_t len,
		      size_t width, int can_fold)
{
	int rc;

	if (can_fold && *col + 1 + len > width) {
		rc = buf_adds(out, "\n ");
		*col = 1;
	} else {
		rc = buf_addch(out, ' ');
		*col += 1;
	}
	if (!rc)
		rc = buf_add(out, tok, len);
	*col += len;
	return rc;
}

int mailhdr_add_text(struct buf *out, const char *name, const char *prefix,
		     const char *text)
{
	struct buf clean = BUF_INIT(PB_HEADER_VALUE_MAX);
	size_t start = out->len, col, i, j, k, e, width;
	int rc, can_fold = 0;

	rc = mailhdr_sanitize(&clean, text, strlen(text));
	if (rc)
		goto out;
	width = mailhdr_needs_encoding(clean.data, clean.len) ?
			MAILHDR_ENCODED_WIDTH :
			MAILHDR_FOLD_WIDTH;
	rc = buf_addf(out, "%s:", name);
	if (rc)
		goto out;
	col = out->len - start;
	if (prefix && *prefix) {
		rc = add_folded(out, &col, prefix, strlen(prefix), width, 0);
		can_fold = 1;
	}
	for (i = 0; !rc && i < clean.len; i = j + 1, can_fold = 1) {
		for (j = i; j < clean.len && clean.data[j] != ' '; j++)
			;
		if (!word_needs_encoding(clean.data + i, j - i)) {
			rc = add_folded(out, &col, clean.data + i, j - i, width,
					can_fold);
			continue;
		}
		/* A run of words that need encoding becomes one sequence of
		 * encoded-words holding the spaces between them: whitespace
		 * between adjacent encoded-words is not displayed (RFC 2047
		 * section 6.2), whitespace next to plain words is. */
		for (k = j; k < clean.len; k = e) {
			for (e = k + 1; e < clean.len && clean.data[e] != ' ';
			     e++)
				;
			if (!word_needs_encoding(clean.data + k + 1, e - k - 1))
				break;
			j = e;
		}
		if (can_fold && col + 1 + Q_MIN_WORD > width) {
			rc = buf_adds(out, "\n ");
			col = 1;
		} else {
			rc = buf_addch(out, ' ');
			col++;
		}
		if (!rc)
			rc = mailhdr_encode_words(out, clean.data + i, j - i,
						  &col);
	}
	if (!rc)
		rc = buf_addch(out, '\n');
out:
	if (rc)
		buf_truncate(out, start);
	buf_release(&clean);
	return rc;
}

static int raw_value_ok(const char *v)
{
	for (; *v; v++)
		if ((unsigned char)*v < 0x20 || (unsigned char)*v >= 0x7f)
			return 0;
	return 1;
}

int mailhdr_add_raw(struct buf *out, const char *name, const char *value)
{
	size_t start = out->len, col, i, j, len = strlen(value), width;
	int rc;

	if (!raw_value_ok(value) || !raw_value_ok(name))
		return err_set(PB_EINVAL, "header %s: not printable ASCII",
			       name);
	width = strstr(value, "=?") ? MAILHDR_ENCODED_WIDTH :
				      MAILHDR_FOLD_WIDTH;
	rc = buf_addf(out, "%s:", name);
	col = out->len - start;
	for (i = 0; !rc && i <= len; i = j + 1) {
		for (j = i; j < len && value[j] != ' '; j++)
			;
		rc = add_folded(out, &col, value + i, j - i, width, i > 0);
	}
	if (!rc)
		rc = buf_addch(out, '\n');
	if (rc)
		buf_truncate(out, start);
	return rc;
}

static int addr_ok(const char *addr)
{
	const char *p;

	if (!*addr || !strchr(addr, '@') || strlen(addr) > PB_ADDR_MAX)
		return 0;
	for (p = addr; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c <= 0x20 || c >= 0x7f || strchr("<>()[],;:\\\"", c))
			return 0;
	}
	return 1;
}

/* RFC 5322 section 3.2.3: atext is everything printable but specials. */
static int is_atext(unsigned char c)
{
	return c > 0x20 && c < 0x7f && !strchr("()<>[]:;@\\,.\"", c);
}

int mailhdr_format_addr(struct buf *out, const char *name, const char *addr)
{
	struct buf clean = BUF_INIT(PB_HEADER_VALUE_MAX);
	size_t start = out->len, i, col = 0;
	int rc = 0, plain = 1;

	if (!addr_ok(addr)) {
		rc = err_set(PB_EINVAL, "not a usable mail address");
		goto out;
	}
	if (name)
		rc = mailhdr_sanitize(&clean, name, strlen(name));
	if (rc)
		goto out;
	if (clean.len == 0) {
		rc = buf_adds(out, addr);
		goto out;
	}
	if (mailhdr_needs_encoding(clean.data, clean.len)) {
		/* Encoded-words may not sit inside a quoted-string (RFC 2047
		 * section 5 (3)), so the whole phrase is encoded.  The words
		 * are short enough to follow any header name on one line
		 * and are separated by spaces where mailhdr_add_raw() and
		 * mailhdr_add_addrs() fold. */
		rc = encode_q(out, clean.data, clean.len, &col,
			      MAILHDR_PHRASE_WORD, " ", 0);
	} else {
		for (i = 0; i < clean.len; i++)
			if (clean.data[i] != ' ' &&
			    !is_atext((unsigned char)clean.data[i]))
				plain = 0;
		if (plain) {
			rc = buf_addbuf(out, &clean);
		} else {
			rc = buf_addch(out, '"');
			for (i = 0; !rc && i < clean.len; i++) {
				char c = clean.data[i];

				if (c == '"' || c == '\\')
					rc = buf_addch(out, '\\');
				if (!rc)
					rc = buf_addch(out, c);
			}
			if (!rc)
				rc = buf_addch(out, '"');
		}
	}
	if (!rc)
		rc = buf_addf(out, " <%s>", addr);
out:
	if (rc)
		buf_truncate(out, start);
	buf_release(&clean);
	return rc;
}

int mailhdr_add_addrs(struct buf *out, const char *name,
		      const struct strlist *mailboxes)
{
	struct buf line = BUF_INIT(PB_HEADER_VALUE_MAX);
	size_t i;
	int rc = 0;

	if (!mailboxes || mailboxes->nr == 0)
		return 0;
	strlist_for_each (mailboxes, i) {
		if (i)
			rc = buf_adds(&line, ", ");
		if (!rc)
			rc = buf_adds(&line, mailboxes->items[i]);
		if (rc)
			goto out;
	}
	rc = mailhdr_add_raw(out, name, line.data);
out:
	buf_release(&line);
	return rc;
}

int mailhdr_date(struct buf *out, int64_t t, int tz_minutes)
{
	static const char *const days[] = { "Sun", "Mon", "Tue", "Wed",
					    "Thu", "Fri", "Sat" };
	static const char *const months[] = { "Jan", "Feb", "Mar", "Apr",
					      "May", "Jun", "Jul", "Aug",
					      "Sep", "Oct", "Nov", "Dec" };
	struct tm tm;
	time_t local;
	int off = tz_minutes < 0 ? -tz_minutes : tz_minutes;

	/* RFC 5322 section 3.3: zone is +hhmm, hh at most 99. */
	if (off >= 100 * 60 || t < -((int64_t)1 << 40) ||
	    t > ((int64_t)1 << 40))
		return err_set(PB_EINVAL, "date out of range");
	local = (time_t)(t + (int64_t)tz_minutes * 60);
	if (!gmtime_r(&local, &tm) || tm.tm_year + 1900 < 1900 ||
	    tm.tm_year + 1900 > 9999)
		return err_set(PB_EINVAL, "date out of range");
	return buf_addf(out, "%s, %d %s %d %02d:%02d:%02d %c%02d%02d",
			days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
			tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec,
			tz_minutes < 0 ? '-' : '+', off / 60, off % 60);
}
