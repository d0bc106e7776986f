#include "mail/hdrdecode.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/scan.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Longest charset name of an encoded word ("ISO-2022-JP-2", "x-mac-..."). */
#define CHARSET_MAX 64
/* Tokens of one address field looked at. */
#define TOKENS_MAX 1024

static int is_wsp(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Copy p[0..len) without CR and LF: RFC 5322 2.2.3 unfolding. */
static char *unfold_copy(const char *p, size_t len, size_t *outlen)
{
	char *u;
	size_t i, o = 0;

	if (len > HDRDECODE_FIELD_MAX)
		len = HDRDECODE_FIELD_MAX;
	u = xmalloc(len + 1);
	for (i = 0; i < len; i++)
		if (p[i] != '\r' && p[i] != '\n')
			u[o++] = p[i];
	u[o] = '\0';
	*outlen = o;
	return u;
}

/* ------------------------------------------------------------------ */
/* encoded words */

struct ew {
	const char *end; /* one past the closing "?=" */
	char charset[CHARSET_MAX + 1];
	int b64;
	const char *text;
	size_t text_len;
};

/* An encoded word at p?  "=?charset[*lang]?B|Q?text?=" */
static int ew_parse(struct ew *w, const char *p, const char *end)
{
	const char *q, *cs, *t;
	size_t n;
	char *star;

	if (end - p < 8 || p[0] != '=' || p[1] != '?')
		return 0;
	cs = q = p + 2;
	while (q < end && *q != '?' && !is_wsp((unsigned char)*q) &&
	       q - cs <= CHARSET_MAX)
		q++;
	n = (size_t)(q - cs);
	if (q >= end || *q != '?' || n == 0 || n > CHARSET_MAX)
		return 0;
	memcpy(w->charset, cs, n);
	w->charset[n] = '\0';
	star = strchr(w->charset, '*'); /* RFC 2231 section 5 language */
	if (star)
		*star = '\0';
	if (!w->charset[0])
		return 0;
	q++;
	if (end - q < 4)
		return 0;
	if (*q == 'B' || *q == 'b')
		w->b64 = 1;
	else if (*q == 'Q' || *q == 'q')
		w->b64 = 0;
	else
		return 0;
	if (q[1] != '?')
		return 0;
	t = q += 2;
	/* the text ends at the first "?="; another word's "=?" inside it
	 * means this one was never closed ("=?=" is padding, then the end) */
	while (q + 1 < end && !(q[0] == '?' && q[1] == '=')) {
		if ((q[0] == '=' && q[1] == '?' && q + 2 < end &&
		     q[2] != '=') ||
		    q - t > HDRDECODE_WORD_MAX)
			return 0;
		q++;
	}
	if (q + 1 >= end)
		return 0;
	w->text = t;
	w->text_len = (size_t)(q - t);
	w->end = q + 2;
	return 1;
}

static int b64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decode one word's text into bytes.  Base64 is decoded word by word:
 * padding ends a group (and chunks padded inside one word, as some
 * encoders write them, are each decoded); 1 when the word is not
 * base64 at all, PB_ELIMIT at the cap.
 */
static int ew_bytes(struct buf *out, const struct ew *w)
{
	const char *p = w->text;
	size_t i, n = w->text_len;
	uint32_t acc = 0;
	int bits = 0, v, rc = 0;

	for (i = 0; i < n && !rc; i++) {
		int c = (unsigned char)p[i];

		if (w->b64) {
			if (c == '=') {
				acc = 0;
				bits = 0;
				continue;
			}
			if (is_wsp(c))
				continue;
			v = b64_value(c);
			if (v < 0)
				return 1;
			acc = (acc << 6) | (uint32_t)v;
			bits += 6;
			if (bits >= 8) {
				bits -= 8;
				rc = buf_addch(out,
					       (int)((acc >> bits) & 0xff));
			}
			acc &= 0xffff; /* only the low bits are ever read */
		} else if (c == '_') {
			rc = buf_addch(out, ' ');
		} else if (c == '=' && i + 2 < n &&
			   hex_value((unsigned char)p[i + 1]) >= 0 &&
			   hex_value((unsigned char)p[i + 2]) >= 0) {
			rc = buf_addch(
				out,
				hex_value((unsigned char)p[i + 1]) * 16 +
					hex_value((unsigned char)p[i + 2]));
			i += 2;
		} else {
			rc = buf_addch(out, c);
		}
	}
	return rc;
}

/* Append raw text, 8-bit bytes through the converter as unlabelled. */
static int add_literal(struct buf *out, const char *p, size_t len,
		       hdrdecode_conv_fn conv, void *arg)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)p[i] >= 0x80)
			return conv(out, p, len, NULL, arg);
	return buf_add(out, p, len);
}

static int all_wsp(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!is_wsp((unsigned char)p[i]))
			return 0;
	return 1;
}

/* Control characters become spaces: the value is one line. */
static void one_line(struct buf *out, size_t from)
{
	size_t i;

	for (i = from; i < out->len; i++) {
		unsigned char c = (unsigned char)out->data[i];

		if (c < 0x20 || c == 0x7f)
			out->data[i] = ' ';
	}
}

static int decode_unfolded(struct buf *out, const char *p, size_t len,
			   hdrdecode_conv_fn conv, void *arg)
{
	const char *q = p, *end = p + len, *k;
	struct buf pend = BUF_INIT(HDRDECODE_FIELD_MAX);
	char pend_cs[CHARSET_MAX + 1] = "";
	int have_pend = 0, rc = 0, r;
	struct ew w;

	while (q < end && !rc) {
		const char *ew_at = NULL;

		for (k = q; k + 1 < end; k++) {
			if (k[0] == '=' && k[1] == '?' &&
			    ew_parse(&w, k, end)) {
				ew_at = k;
				break;
			}
		}
		if (!ew_at)
			ew_at = end;
		if (ew_at > q) {
			/* RFC 2047 6.2: whitespace between two encoded
			 * words is not displayed */
			if (!(have_pend && ew_at < end &&
			      all_wsp(q, (size_t)(ew_at - q)))) {
				if (have_pend) {
					rc = conv(out, pend.data, pend.len,
						  pend_cs, arg);
					buf_reset(&pend);
					have_pend = 0;
				}
				if (!rc)
					rc = add_literal(out, q,
							 (size_t)(ew_at - q),
							 conv, arg);
			}
		}
		if (rc || ew_at == end)
			break;
		if (have_pend && strcasecmp(pend_cs, w.charset)) {
			rc = conv(out, pend.data, pend.len, pend_cs, arg);
			buf_reset(&pend);
			have_pend = 0;
			if (rc)
				break;
		}
		{
			size_t mark = pend.len;

			r = ew_bytes(&pend, &w);
			if (r == 1) {
				/* not decodable: the word as written */
				buf_truncate(&pend, mark);
				if (have_pend) {
					rc = conv(out, pend.data, pend.len,
						  pend_cs, arg);
					buf_reset(&pend);
					have_pend = 0;
				}
				if (!rc)
					rc = add_literal(
						out, ew_at,
						(size_t)(w.end - ew_at), conv,
						arg);
			} else if (r) {
				rc = r;
			} else {
				have_pend = 1;
				memcpy(pend_cs, w.charset, sizeof(pend_cs));
			}
		}
		q = w.end;
	}
	if (!rc && have_pend)
		rc = conv(out, pend.data, pend.len, pend_cs, arg);
	buf_release(&pend);
	return rc;
}

int hdrdecode_text(struct buf *out, const char *p, size_t len,
		   hdrdecode_conv_fn conv, void *arg)
{
	size_t from = out->len, n;
	char *u = unfold_copy(p, len, &n);
	int rc;

	BUG_ON(!conv);
	rc = decode_unfolded(out, u, n, conv, arg);
	one_line(out, from);
	free(u);
	return rc;
}

char *hdrdecode_text_dup(const char *p, size_t len, hdrdecode_conv_fn conv,
			 void *arg)
{
	struct buf b = BUF_INIT(HDRDECODE_FIELD_MAX * 4);
	const char *q;
	char *out;
	size_t n;

	hdrdecode_text(&b, p, len, conv, arg);
	q = b.data;
	n = b.len;
	mem_trim(&q, &n);
	out = xstrndup(q, n);
	buf_release(&b);
	return out;
}

/* ------------------------------------------------------------------ */
/* addr-spec */

int hdrdecode_atext(int c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c >= 0x80)
		return 1;
	return c && strchr("!#$%&'*+-/=?^_`{|}~", c) != NULL;
}

static int is_label_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c >= 0x80;
}

int hdrdecode_addr_ok(const char *p, size_t len)
{
	size_t i = 0, at;
	int label = 0;

	if (len < 3 || len > PB_ADDR_MAX || !utf8_valid(p, len))
		return 0;
	if (p[0] == '"') {
		/* quoted local part */
		for (i = 1; i < len && p[i] != '"'; i++) {
			if (p[i] == '\\')
				i++;
			else if ((unsigned char)p[i] < 0x20)
				return 0;
		}
		if (i >= len || i + 1 >= len || p[i + 1] != '@' || i == 1)
			return 0;
		at = i + 1;
	} else {
		for (i = 0; i < len && p[i] != '@'; i++)
			if (!hdrdecode_atext((unsigned char)p[i]) &&
			    p[i] != '.')
				return 0;
		if (i == 0 || i >= len)
			return 0;
		at = i;
	}
	/* an encoded word is in no part of an addr-spec (RFC 2047 5 (3)):
	 * not in the local part, quoted or not, nor in a domain literal */
	if (mem_find(p, len, "=?", 2) || mem_find(p, len, "?=", 2))
		return 0;
	i = at + 1;
	if (i >= len)
		return 0;
	if (p[i] == '[') {
		for (i++; i < len && p[i] != ']'; i++)
			if ((unsigned char)p[i] <= ' ' || p[i] == '[' ||
			    p[i] == '\\')
				return 0;
		return i == len - 1 && len - at > 3;
	}
	for (; i < len; i++) {
		if (p[i] == '.') {
			if (!label)
				return 0;
			label = 0;
		} else if (is_label_char((unsigned char)p[i])) {
			label = 1;
		} else {
			return 0;
		}
	}
	return label;
}

/* ------------------------------------------------------------------ */
/* the mailbox */

enum tok_kind {
	T_WORD, /* atoms, dots, "@", domain literals, encoded words */
	T_QSTR, /* a quoted string: p/len is its content, escapes kept */
	T_COMMENT, /* a comment: p/len is its content, escapes kept */
	T_LT,
	T_GT,
	T_COMMA,
	T_COLON,
	T_SEMI,
};

struct tok {
	enum tok_kind kind;
	const char *p;
	size_t len;
	int ws; /* whitespace (or a comment) came before it */
};

struct lexer {
	struct tok *v;
	size_t nr, alloc;
	unsigned flags;
};

static void push(struct lexer *lx, enum tok_kind kind, const char *p,
		 size_t len, int ws)
{
	if (lx->nr == TOKENS_MAX)
		return;
	ALLOC_GROW(lx->v, lx->nr + 1, lx->alloc);
	lx->v[lx->nr].kind = kind;
	lx->v[lx->nr].p = p;
	lx->v[lx->nr].len = len;
	lx->v[lx->nr].ws = ws;
	lx->nr++;
}

/* The end of a comment starting at p ('('), or NULL when never closed. */
static const char *comment_end(const char *p, const char *end)
{
	int depth = 0;

	for (; p < end; p++) {
		if (*p == '\\' && p + 1 < end) {
			p++;
		} else if (*p == '(') {
			depth++;
		} else if (*p == ')') {
			if (--depth == 0)
				return p;
		}
	}
	return NULL;
}

static int word_char(int c)
{
	return !is_wsp(c) && c != '(' && c != ')' && c != '"' && c != '<' &&
	       c != '>' && c != ',' && c != ':' && c != ';';
}

static void lex(struct lexer *lx, const char *p, const char *end)
{
	int ws = 0, unclosed_quote = 0;

	while (p < end && lx->nr < TOKENS_MAX) {
		int c = (unsigned char)*p;
		const char *s = p, *e;

		if (is_wsp(c)) {
			ws = 1;
			p++;
			continue;
		}
		switch (c) {
		case '(':
			/* after one unclosed comment, later parentheses are
			 * text: the field's do not balance, and looking for
			 * each one's end again would be quadratic */
			e = lx->flags & HDRDECODE_F_UNCLOSED ?
				    NULL :
				    comment_end(p, end);
			if (!e) {
				/* never closed: the "(" is no comment */
				lx->flags |= HDRDECODE_F_UNCLOSED;
				ws = 1;
				p++;
				continue;
			}
			push(lx, T_COMMENT, p + 1, (size_t)(e - p - 1), ws);
			p = e + 1;
			ws = 1;
			continue;
		case ')':
			p++; /* a stray closing parenthesis */
			ws = 1;
			continue;
		case '"':
			/* after an unclosed quote no later one closes:
			 * skip them without looking again (quadratic) */
			if (unclosed_quote) {
				ws = 1;
				p++;
				continue;
			}
			for (p++; p < end && *p != '"'; p++)
				if (*p == '\\' && p + 1 < end)
					p++;
			if (p >= end) {
				/* never closed: the '"' is no quote, what
				 * follows is read as words, as git mailinfo's
				 * unquote_quoted_pair() drops it and takes
				 * the address around the "@" after it
				 * ("\"Name <a@b.c>" gives a@b.c) */
				lx->flags |= HDRDECODE_F_UNCLOSED;
				unclosed_quote = 1;
				ws = 1;
				p = s + 1;
				continue;
			}
			push(lx, T_QSTR, s + 1, (size_t)(p - s - 1), ws);
			p++;
			break;
		case '<':
		case '>':
		case ',':
		case ':':
		case ';':
			push(lx,
			     c == '<' ? T_LT :
			     c == '>' ? T_GT :
			     c == ',' ? T_COMMA :
			     c == ':' ? T_COLON :
					T_SEMI,
			     p, 1, ws);
			p++;
			break;
		default:
			while (p < end && word_char((unsigned char)*p)) {
				if (*p == '[') {
					/* a domain literal may hold ':' */
					while (p < end && *p != ']' &&
					       !is_wsp((unsigned char)*p))
						p++;
					if (p < end && *p == ']')
						p++;
					continue;
				}
				p++;
			}
			push(lx, T_WORD, s, (size_t)(p - s), ws);
			break;
		}
		ws = 0;
	}
}

/* Append a quoted string's or a comment's content, escapes undone. */
static void add_unescaped(struct buf *b, const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] == '\\' && i + 1 < len)
			i++;
		if (buf_addch(b, (unsigned char)p[i]))
			return;
	}
}

struct found {
	struct buf addr; /* the address as written, tokens joined */
	size_t name_to; /* phrase tokens are [seg, name_to) ... */
	size_t skip; /* ... except this one (the bare address), or -1 */
	char *glued; /* the encoded-word prefix glued to a bare address */
	int ok;
};

/*
 * Join the tokens of an angle-addr [from, to) into one address;
 * whitespace is allowed only around "." and "@" (RFC 5322 4.4 CFWS in
 * obsolete forms), never between two atoms: "foo bar@baz" is no address.
 */
static int join_addr(struct buf *out, const struct tok *v, size_t from,
		     size_t to)
{
	size_t i;

	for (i = from; i < to; i++) {
		if (v[i].kind == T_COMMENT)
			continue;
		if (v[i].kind != T_WORD && v[i].kind != T_QSTR)
			return 0;
		if (i > from && v[i].ws && out->len) {
			char last = out->data[out->len - 1];

			if (last != '.' && last != '@' && v[i].p[0] != '.' &&
			    v[i].p[0] != '@')
				return 0;
		}
		if (v[i].kind == T_QSTR) {
			if (buf_addch(out, '"') ||
			    buf_add(out, v[i].p, v[i].len) ||
			    buf_addch(out, '"'))
				return 0;
		} else if (buf_add(out, v[i].p, v[i].len)) {
			return 0;
		}
	}
	return out->len > 0;
}

/* An address ends without the dot some clients leave ("a@b.c."). */
static void strip_dot(struct buf *a)
{
	if (a->len > 1 && a->data[a->len - 1] == '.')
		buf_truncate(a, a->len - 1);
}

/* Does the token start an address: "<", or a word with an "@"? */
static int has_addr(const struct tok *t)
{
	return t->kind == T_LT ||
	       (t->kind == T_WORD && memchr(t->p, '@', t->len) != NULL);
}

/* Read one segment (one mailbox) [s, e) of the token list. */
static void read_segment(struct found *f, struct lexer *lx, size_t s, size_t e)
{
	const struct tok *v = lx->v;
	size_t i, lt = e, gt, k;

	f->name_to = e;
	f->skip = (size_t)-1;
	for (i = s; i < e; i++)
		if (v[i].kind == T_LT) {
			lt = i;
			break;
		}
	if (lt < e) {
		/* name-addr: the phrase, then <[route:]addr-spec> */
		for (gt = lt + 1; gt < e && v[gt].kind != T_GT; gt++)
			;
		if (gt == e)
			lx->flags |= HDRDECODE_F_UNCLOSED;
		k = lt + 1;
		for (i = lt + 1; i < gt; i++)
			if (v[i].kind == T_COLON)
				k = i + 1;
		f->name_to = lt;
		/* an obsolete route ("@a,@b:", RFC 5322 4.4) is all that
		 * may come before a colon */
		for (i = lt + 1; k > lt + 1 && i + 1 < k; i++)
			if (v[i].kind != T_COMMA &&
			    !(v[i].kind == T_WORD && v[i].p[0] == '@'))
				return;
		if (join_addr(&f->addr, v, k, gt)) {
			strip_dot(&f->addr);
			f->ok = hdrdecode_addr_ok(f->addr.data, f->addr.len);
		}
		return;
	}
	/* an addr-spec alone ("a@b.c (Name)"), or after a phrase without
	 * angle brackets: the last word with an "@" */
	for (i = e; i-- > s;) {
		const char *at;
		size_t off = 0;

		if (v[i].kind != T_WORD ||
		    !(at = memchr(v[i].p, '@', v[i].len)))
			continue;
		lx->flags |= HDRDECODE_F_BARE;
		f->skip = i;
		if (at == v[i].p && i > s && v[i - 1].kind == T_QSTR &&
		    !v[i].ws) {
			/* "quoted local"@domain */
			f->skip = i - 1;
			buf_addch(&f->addr, '"');
			buf_add(&f->addr, v[i - 1].p, v[i - 1].len);
			buf_addch(&f->addr, '"');
		} else {
			/* an encoded word glued to the local part */
			const char *q = v[i].p, *glue = NULL;

			for (; q + 1 < at; q++)
				if (q[0] == '?' && q[1] == '=')
					glue = q + 2;
			if (glue && mem_find(v[i].p, (size_t)(glue - v[i].p),
					     "=?", 2)) {
				off = (size_t)(glue - v[i].p);
				f->glued = xstrndup(v[i].p, off);
				lx->flags |= HDRDECODE_F_GLUED;
			}
		}
		buf_add(&f->addr, v[i].p + off, v[i].len - off);
		strip_dot(&f->addr);
		f->ok = hdrdecode_addr_ok(f->addr.data, f->addr.len);
		return;
	}
}

/* The display name's raw text; 1 when it is a comment's. */
static int segment_name(struct buf *raw, const struct lexer *lx,
			const struct found *f, size_t s, size_t e)
{
	const struct tok *v = lx->v;
	size_t i, words = 0;

	for (i = s; i < f->name_to; i++)
		if (i != f->skip && v[i].kind == T_WORD)
			words++;
	for (i = s; i < f->name_to; i++) {
		if (i == f->skip ||
		    (f->skip != (size_t)-1 && i == f->skip + 1 &&
		     v[f->skip].kind == T_QSTR))
			continue;
		if (v[i].kind != T_WORD && v[i].kind != T_QSTR)
			continue;
		if (raw->len && v[i].ws)
			buf_addch(raw, ' ');
		if (v[i].kind == T_WORD) {
			buf_add(raw, v[i].p, v[i].len);
		} else if (words) {
			/* a nickname among words keeps its quotes:
			 * Josef "Jeff" Sipek */
			buf_addch(raw, '"');
			add_unescaped(raw, v[i].p, v[i].len);
			buf_addch(raw, '"');
		} else {
			add_unescaped(raw, v[i].p, v[i].len);
		}
	}
	if (f->glued) {
		if (raw->len)
			buf_addch(raw, ' ');
		buf_adds(raw, f->glued);
	}
	if (raw->len)
		return 0;
	/* no phrase: the first comment that says something is the name */
	for (i = s; i < e; i++) {
		if (v[i].kind != T_COMMENT || all_wsp(v[i].p, v[i].len))
			continue;
		add_unescaped(raw, v[i].p, v[i].len);
		if (raw->len)
			return 1;
	}
	return 0;
}

void hdrdecode_mailbox_init(struct hdrdecode_mailbox *mb)
{
	memset(mb, 0, sizeof(*mb));
}

void hdrdecode_mailbox_release(struct hdrdecode_mailbox *mb)
{
	free(mb->name);
	free(mb->email);
	hdrdecode_mailbox_init(mb);
}

int hdrdecode_mailbox(struct hdrdecode_mailbox *out, const char *p, size_t len,
		      hdrdecode_conv_fn conv, void *arg)
{
	struct lexer lx = { NULL, 0, 0, 0 };
	struct buf raw = BUF_INIT(HDRDECODE_FIELD_MAX);
	struct found f;
	size_t n, i, s, e, first = 0;
	char *u = unfold_copy(p, len, &n);

	hdrdecode_mailbox_init(out);
	memset(&f, 0, sizeof(f));
	f.skip = (size_t)-1;
	buf_init(&f.addr, PB_ADDR_MAX * 4);
	lex(&lx, u, u + n);

	/* a group ("name: a@b, c@d;"): its members are the list */
	for (i = 0; i < lx.nr && !has_addr(&lx.v[i]); i++) {
		if (lx.v[i].kind == T_COLON) {
			first = i + 1;
			break;
		}
	}
	/* the first mailbox of the list; an unquoted comma in a name
	 * ("Last, First <a@b.c>") joins what has no address to the next */
	for (s = first; s < lx.nr; s = e + 1) {
		int any = 0, angle = 0;

		/* a comma inside <> is an obsolete route's, no separator */
		for (e = s; e < lx.nr; e++) {
			if (lx.v[e].kind == T_LT)
				angle = 1;
			else if (lx.v[e].kind == T_GT)
				angle = 0;
			else if (!angle && (lx.v[e].kind == T_COMMA ||
					    lx.v[e].kind == T_SEMI))
				break;
			any |= has_addr(&lx.v[e]);
		}
		if (!any && e < lx.nr && lx.v[e].kind == T_COMMA) {
			struct found none;

			memset(&none, 0, sizeof(none));
			none.name_to = e;
			none.skip = (size_t)-1;
			segment_name(&raw, &lx, &none, s, s);
			if (raw.len)
				buf_adds(&raw, ",");
			continue;
		}
		read_segment(&f, &lx, s, e);
		if (segment_name(&raw, &lx, &f, s, e))
			lx.flags |= HDRDECODE_F_COMMENT_NAME;
		break;
	}
	out->name = hdrdecode_text_dup(raw.data, raw.len, conv, arg);
	if (f.ok) {
		out->email = xstrndup(f.addr.data, f.addr.len);
	} else {
		out->email = xstrdup("");
		lx.flags |= HDRDECODE_F_NO_ADDR;
	}
	out->flags = lx.flags;
	free(f.glued);
	buf_release(&f.addr);
	buf_release(&raw);
	free(lx.v);
	free(u);
	return 0;
}
