/*
 * notice - when a sender may be told, and what a notice is.  See
 * notice.h.
 */

#include "mail/notice.h"

#include "mail/digest.h"
#include "util/err.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Header fields read at most, and their unfolded size. */
#define SCREEN_FIELDS_MAX 500
#define SCREEN_FIELD_MAX 4096

void notice_init(struct notice *n)
{
	memset(n, 0, sizeof(*n));
	strlist_init(&n->reasons);
}

void notice_release(struct notice *n)
{
	strlist_release(&n->reasons);
}

/* Its first word, as far as a blank, ';' or '(' (a comment). */
static size_t first_word(const char **start, const char *v)
{
	while (*v == ' ' || *v == '\t')
		v++;
	*start = v;
	return strcspn(v, " \t;(\r\n");
}

static int word_is(const char *v, const char *word)
{
	const char *w;
	size_t n = first_word(&w, v);

	return n == strlen(word) && !strncasecmp(w, word, n);
}

/* The addr-spec of a field such as From or Return-Path: what is in <>,
 * else the field trimmed.  Copied into dst. */
static void addr_of(char *dst, size_t size, const char *v)
{
	const char *lt = strrchr(v, '<'), *gt;
	size_t n;

	if (lt && (gt = strchr(lt, '>'))) {
		v = lt + 1;
		n = (size_t)(gt - v);
	} else {
		while (*v == ' ' || *v == '\t')
			v++;
		n = strcspn(v, " \t\r\n");
	}
	if (n >= size)
		n = size - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* The local part of addr is robot (case ignored)? */
static int local_is(const char *addr, const char *robot)
{
	size_t n = strcspn(addr, "@");

	return n == strlen(robot) && !strncasecmp(addr, robot, n);
}

/* addr is the list's posting address or one of its robots'. */
static int list_robot(const char *addr, const char *list)
{
	static const char *const suffixes[] = { "-owner", "-request",
						"-bounces" };
	const char *at = strchr(addr, '@'), *lat;
	size_t i, n, ln;

	if (!list || !list[0] || !at || !(lat = strchr(list, '@')))
		return 0;
	if (!strcasecmp(addr, list))
		return 1;
	if (strcasecmp(at, lat))
		return 0;
	n = (size_t)(at - addr);
	ln = (size_t)(lat - list);
	if (n == ln + 6 && !strncasecmp(addr, "owner-", 6) &&
	    !strncasecmp(addr + 6, list, ln))
		return 1;
	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t sn = strlen(suffixes[i]);

		if (n == ln + sn && !strncasecmp(addr, list, ln) &&
		    !strncasecmp(addr + ln, suffixes[i], sn))
			return 1;
	}
	return 0;
}

struct screen {
	const struct notice_screen_in *in;
	const char *token;
	char *why;
	size_t size;
};

static void hit(struct screen *s, const char *token, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void hit(struct screen *s, const char *token, const char *fmt, ...)
{
	va_list ap;

	if (s->token)
		return;
	s->token = token;
	va_start(ap, fmt);
	vsnprintf(s->why, s->size, fmt, ap);
	va_end(ap);
}

static void screen_field(struct screen *s, const char *name, size_t nlen,
			 const char *v)
{
	const struct notice_screen_in *in = s->in;
	char addr[320];
	const char *w;
	size_t n;

	v += strspn(v, " \t");
#define IS(f) (nlen == strlen(f) && !strncasecmp(name, f, nlen))
	if (IS("Auto-Submitted") && !word_is(v, "no")) {
		hit(s, "auto_submitted",
		    "the reply says Auto-Submitted: %.64s (RFC 3834)", v);
	} else if (IS("Return-Path")) {
		addr_of(addr, sizeof(addr), v);
		if (!addr[0])
			hit(s, "bounce", "%s",
			    "the reply has a null Return-Path (RFC 3834)");
	} else if (IS("From") && !in->wrapped) {
		addr_of(addr, sizeof(addr), v);
		if (local_is(addr, "mailer-daemon"))
			hit(s, "bounce", "%s",
			    "the reply is from MAILER-DAEMON: a bounce");
		else if (list_robot(addr, in->list_address))
			hit(s, "list",
			    "the reply is from the list or its robot (%.64s)",
			    addr);
		else if (in->bridge_address &&
			 !strcasecmp(addr, in->bridge_address))
			hit(s, "ours", "%s", "the reply is the bridge's own");
	} else if (IS("Content-Type")) {
		n = first_word(&w, v);
		if (n >= 16 && !strncasecmp(w, "multipart/report", 16))
			hit(s, "bounce", "%s",
			    "the reply is a delivery report "
			    "(multipart/report)");
	} else if (IS("Precedence")) {
		if (word_is(v, "bulk") || word_is(v, "list") ||
		    word_is(v, "junk"))
			hit(s, "list",
			    "the reply says Precedence: %.32s (a list's or "
			    "bulk mail)",
			    v);
	} else if (nlen >= 13 && !strncasecmp(name, "X-Patchbridge", 13)) {
		hit(s, "ours", "%s",
		    "the reply carries the bridge's X-Patchbridge fields");
	} else if (IS("Message-ID") && in->bridge_domain &&
		   in->bridge_domain[0]) {
		const char *at = strrchr(v, '@');
		size_t dl = strlen(in->bridge_domain);

		if (at && !strncasecmp(at + 1, in->bridge_domain, dl) &&
		    (at[1 + dl] == '>' || !at[1 + dl] ||
		     isspace((unsigned char)at[1 + dl])))
			hit(s, "ours", "%s",
			    "the reply's Message-ID is in the bridge's domain");
	}
#undef IS
}

const char *notice_screen(const struct notice_screen_in *in, char *why,
			  size_t size)
{
	struct screen s = { in, NULL, why, size };
	const char *p = in->raw, *end = in->raw + in->len;
	char field[SCREEN_FIELD_MAX];
	size_t fields = 0;

	if (size)
		why[0] = '\0';
	if (in->envelope_sender &&
	    (!in->envelope_sender[0] || !strcmp(in->envelope_sender, "<>")))
		hit(&s, "bounce", "%s",
		    "the reply came from the null envelope sender (a bounce, "
		    "RFC 3834)");
	/* Each field unfolded into field[], cut at its size. */
	while (p < end && fields < SCREEN_FIELDS_MAX) {
		const char *colon, *nl;
		size_t n = 0;

		if (*p == '\n' || (*p == '\r' && p + 1 < end && p[1] == '\n'))
			break; /* the end of the header */
		do {
			nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl)
				nl = end;
			while (p < nl && n + 1 < sizeof(field)) {
				if (*p != '\r')
					field[n++] = *p;
				p++;
			}
			p = nl < end ? nl + 1 : end;
		} while (p < end && (*p == ' ' || *p == '\t'));
		field[n] = '\0';
		fields++;
		colon = memchr(field, ':', n);
		if (!colon || colon == field)
			continue;
		screen_field(&s, field, (size_t)(colon - field), colon + 1);
	}
	return s.token;
}

int notice_message_id(struct buf *out, const char *reply_id, const char *domain)
{
	char h[DIGEST_HEX128_SIZE];

	digest_sha256_hex128(h, reply_id, strlen(reply_id));
	return buf_addf(out, "pb.n.%s@%s", h, domain);
}

int notice_optout_request(const char *text)
{
	const char *p = text ? text : "", *e;
	size_t n;

	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	e = p + strcspn(p, "\n");
	n = (size_t)(e - p);
	while (n && isspace((unsigned char)p[n - 1]))
		n--;
	/* the rest must be empty, or a signature */
	e += strspn(e, " \t\r\n");
	if (*e && strncmp(e, "-- ", 3))
		return -1;
	if (n == 19 && !strncasecmp(p, "unsubscribe notices", 19))
		return 1;
	if (n == 17 && !strncasecmp(p, "subscribe notices", 17))
		return 0;
	return -1;
}
