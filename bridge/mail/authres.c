#include "mail/authres.h"
#include "util/err.h"
#include "util/scan.h"

#include <string.h>
#include <strings.h>

#define COMMENT_DEPTH_MAX 8

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* Skip whitespace and (nested) comments, RFC 5322 CFWS. */
static void skip_cfws(struct scan *s)
{
	int depth;

	for (;;) {
		while (!scan_eof(s) && strchr(" \t\r\n", scan_peek(s)))
			s->p++;
		if (scan_peek(s) != '(')
			return;
		depth = 0;
		while (!scan_eof(s)) {
			int c = scan_peek(s);

			s->p++;
			if (c == '\\' && !scan_eof(s)) {
				s->p++;
			} else if (c == '(') {
				if (++depth > COMMENT_DEPTH_MAX)
					depth = COMMENT_DEPTH_MAX;
			} else if (c == ')') {
				if (--depth == 0)
					break;
			}
		}
	}
}

static int token_char(int c)
{
	return c > ' ' && c < 127 && !strchr("()<>,;:\\\"/[]?={}.", c);
}

/* A token, a quoted string, or (pvalue) anything up to blank or ';'. */
static int take(struct scan *s, char *out, size_t cap, int pvalue)
{
	size_t n = 0;

	skip_cfws(s);
	if (scan_peek(s) == '"') {
		s->p++;
		while (!scan_eof(s) && scan_peek(s) != '"') {
			if (scan_peek(s) == '\\')
				s->p++;
			if (scan_eof(s))
				break;
			if (n + 1 < cap)
				out[n++] = *s->p;
			s->p++;
		}
		scan_char(s, '"');
		out[n] = '\0';
		return 1;
	}
	while (!scan_eof(s)) {
		int c = scan_peek(s);

		if (pvalue ? (c <= ' ' || c == ';' || c == '(' || c >= 127) :
			     !token_char(c))
			break;
		if (n + 1 < cap)
			out[n++] = (char)c;
		s->p++;
	}
	out[n] = '\0';
	return n > 0;
}

static enum authres_result result_of(const char *r)
{
	static const struct {
		const char *name;
		enum authres_result r;
	} names[] = {
		{ "none", AR_NONE },	       { "pass", AR_PASS },
		{ "fail", AR_FAIL },	       { "hardfail", AR_FAIL },
		{ "softfail", AR_SOFTFAIL },   { "neutral", AR_NEUTRAL },
		{ "temperror", AR_TEMPERROR }, { "permerror", AR_PERMERROR },
		{ "policy", AR_POLICY },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(r, names[i].name))
			return names[i].r;
	return AR_OTHER;
}

const char *authres_result_name(enum authres_result r)
{
	switch (r) {
	case AR_NONE:
		return "none";
	case AR_PASS:
		return "pass";
	case AR_FAIL:
		return "fail";
	case AR_SOFTFAIL:
		return "softfail";
	case AR_NEUTRAL:
		return "neutral";
	case AR_TEMPERROR:
		return "temperror";
	case AR_PERMERROR:
		return "permerror";
	case AR_POLICY:
		return "policy";
	case AR_OTHER:
		break;
	}
	return "other";
}

int authres_parse(struct authres *out, const char *value, size_t len)
{
	char tok[AUTHRES_TOKEN_MAX], prop[AUTHRES_TOKEN_MAX];
	char pval[AUTHRES_TOKEN_MAX];
	struct scan s;
	struct authres_method *m;

	memset(out, 0, sizeof(*out));
	scan_init(&s, value, len);
	/* authserv-id: a value; real ones are domain names */
	skip_cfws(&s);
	{
		size_t n = 0;

		if (scan_peek(&s) == '"') {
			take(&s, out->authserv_id, sizeof(out->authserv_id), 0);
		} else {
			while (!scan_eof(&s) && scan_peek(&s) > ' ' &&
			       scan_peek(&s) != ';' && scan_peek(&s) != '(') {
				if (n + 1 < sizeof(out->authserv_id))
					out->authserv_id[n++] =
						(char)lower(scan_peek(&s));
				s.p++;
			}
			out->authserv_id[n] = '\0';
		}
	}
	if (!out->authserv_id[0])
		return err_set(PB_EINVAL,
			       "Authentication-Results: no authserv-id");
	/* an optional version, then resinfo after each ';' */
	skip_cfws(&s);
	while (!scan_eof(&s) && scan_peek(&s) != ';')
		s.p++;
	while (scan_char(&s, ';')) {
		if (!take(&s, tok, sizeof(tok), 0)) {
			/* an empty resinfo or junk: on to the next ';' */
			while (!scan_eof(&s) && scan_peek(&s) != ';')
				s.p++;
			continue;
		}
		skip_cfws(&s);
		if (scan_char(&s, '/')) { /* method version */
			take(&s, prop, sizeof(prop), 0);
			skip_cfws(&s);
		}
		if (!scan_char(&s, '=')) {
			/* "none" or junk: skip to the next ';' */
			while (!scan_eof(&s) && scan_peek(&s) != ';')
				s.p++;
			continue;
		}
		if (out->nr >= AUTHRES_METHODS_MAX)
			break;
		m = &out->methods[out->nr];
		memset(m, 0, sizeof(*m));
		{
			size_t i;

			for (i = 0; tok[i] && i + 1 < sizeof(m->method); i++)
				m->method[i] =
					(char)lower((unsigned char)tok[i]);
			m->method[i] = '\0';
		}
		if (!take(&s, tok, sizeof(tok), 0))
			continue;
		m->result = result_of(tok);
		out->nr++;
		/* reason and properties up to the next ';' */
		for (;;) {
			skip_cfws(&s);
			if (scan_eof(&s) || scan_peek(&s) == ';')
				break;
			if (!take(&s, tok, sizeof(tok), 0)) {
				s.p++; /* junk byte */
				continue;
			}
			skip_cfws(&s);
			if (!strcasecmp(tok, "reason") && scan_char(&s, '=')) {
				take(&s, pval, sizeof(pval), 1);
				continue;
			}
			if (!scan_char(&s, '.'))
				continue;
			if (!take(&s, prop, sizeof(prop), 0))
				continue;
			skip_cfws(&s);
			if (!scan_char(&s, '='))
				continue;
			if (!take(&s, pval, sizeof(pval), 1))
				continue;
			if (!strcasecmp(tok, "header") &&
			    !strcasecmp(prop, "d"))
				memcpy(m->header_d, pval, sizeof(pval));
			else if (!strcasecmp(tok, "header") &&
				 !strcasecmp(prop, "from"))
				memcpy(m->header_from, pval, sizeof(pval));
		}
	}
	return 0;
}

/* d is from or a parent domain of it (relaxed alignment). */
static int aligned(const char *d, const char *from)
{
	size_t dl = strlen(d), fl = strlen(from);

	if (!dl || !fl || !strchr(d, '.'))
		return 0;
	if (dl == fl)
		return !strcasecmp(d, from);
	return dl < fl && from[fl - dl - 1] == '.' &&
	       !strcasecmp(from + fl - dl, d);
}

/* Order results by how much they say: pass > fail > the rest > none. */
static int rank(enum authres_result r)
{
	switch (r) {
	case AR_PASS:
		return 4;
	case AR_FAIL:
	case AR_PERMERROR:
		return 3;
	case AR_NONE:
		return 0;
	default:
		return 2;
	}
}

void authres_evaluate(struct authres_summary *out, const char *const *values,
		      const size_t *lens, size_t nr, const char *trusted_id,
		      const char *from_domain)
{
	struct authres ar;
	size_t i, k;

	memset(out, 0, sizeof(*out));
	out->dkim = AR_NONE;
	out->dmarc = AR_NONE;
	if (!trusted_id || !*trusted_id || !from_domain)
		return;
	for (i = 0; i < nr; i++) {
		if (authres_parse(&ar, values[i], lens[i]))
			continue;
		if (strcasecmp(ar.authserv_id, trusted_id))
			continue;
		for (k = 0; k < ar.nr; k++) {
			const struct authres_method *m = &ar.methods[k];

			if (!strcmp(m->method, "dkim")) {
				int al = aligned(m->header_d, from_domain);
				enum authres_result r = m->result;

				if (r == AR_PASS && !al)
					r = AR_NEUTRAL; /* a third party */
				if (rank(r) > rank(out->dkim))
					out->dkim = r;
				if (r == AR_PASS)
					out->verified = 1;
			} else if (!strcmp(m->method, "dmarc")) {
				int ok = !m->header_from[0] ||
					 !strcasecmp(m->header_from,
						     from_domain);

				if (rank(m->result) > rank(out->dmarc))
					out->dmarc = m->result;
				if (m->result == AR_PASS && ok)
					out->verified = 1;
			}
		}
	}
}
