#include "mail/authres.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int is_wsp(int c)
{
	/* folding leaves CR and LF in a value; they are FWS too */
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/*
 * Skip CFWS (RFC 5322 section 3.2.2): blanks, line ends and comments,
 * which nest and hold quoted-pairs.  PB_EINVAL for a comment that never
 * ends or nests deeper than AUTHRES_COMMENT_DEPTH.
 */
static int skip_cfws(struct scan *s)
{
	int depth;

	for (;;) {
		while (!scan_eof(s) && is_wsp(scan_peek(s)))
			s->p++;
		if (scan_peek(s) != '(')
			return 0;
		depth = 0;
		do {
			int c = scan_peek(s);

			if (c < 0)
				return err_set(PB_EINVAL,
					       "Authentication-Results: a "
					       "comment does not end");
			s->p++;
			if (c == '\\') {
				if (!scan_eof(s))
					s->p++;
			} else if (c == '(') {
				if (++depth > AUTHRES_COMMENT_DEPTH)
					return err_set(PB_EINVAL,
						       "Authentication-Results:"
						       " comments nested more "
						       "than %d deep",
						       AUTHRES_COMMENT_DEPTH);
			} else if (c == ')') {
				depth--;
			}
		} while (depth > 0);
	}
}

/* RFC 2045 token characters (tspecials and CTLs excluded); 8-bit bytes
 * are taken as RFC 6532 allows UTF-8 there. */
static int token_char(int c)
{
	return c > ' ' && c != 127 && !strchr("()<>@,;:\\\"/[]?=", c);
}

/* A Keyword (method, result, ptype, property): a token without '.'. */
static int keyword_char(int c)
{
	return token_char(c) && c != '.';
}

/* A quoted-string after its opening quote, quoted-pairs undone. */
static int take_quoted(struct scan *s, char *out, size_t cap)
{
	size_t n = 0;
	int c;

	for (;;) {
		c = scan_peek(s);
		if (c < 0)
			return err_set(PB_EINVAL, "Authentication-Results: a "
						  "quoted string does not end");
		s->p++;
		if (c == '"')
			break;
		if (c == '\\') {
			c = scan_peek(s);
			if (c < 0)
				continue;
			s->p++;
		}
		if (n + 1 < cap)
			out[n++] = (char)c;
	}
	out[n] = '\0';
	return 0;
}

/*
 * After CFWS: a quoted-string, or a run of accept() characters.  Returns
 * 1 when something was taken, 0 when nothing was there, PB_EINVAL.
 */
static int take(struct scan *s, char *out, size_t cap, int (*accept)(int))
{
	size_t n = 0;
	int rc;

	rc = skip_cfws(s);
	if (rc)
		return rc;
	if (scan_peek(s) == '"') {
		s->p++;
		rc = take_quoted(s, out, cap);
		return rc ? rc : 1;
	}
	while (!scan_eof(s) && accept(scan_peek(s))) {
		if (n + 1 < cap)
			out[n++] = *s->p;
		s->p++;
	}
	out[n] = '\0';
	return n > 0;
}

/* A pvalue (RFC 8601 section 2.2): a value, or [local-part "@"] domain. */
static int pvalue_char(int c)
{
	return c > ' ' && c != 127 && c != ';' && c != '(' && c != '"';
}

static void lower_copy(char *dst, size_t cap, const char *src)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < cap; i++)
		dst[i] = (char)lower((unsigned char)src[i]);
	dst[i] = '\0';
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

/* After CFWS: 1 at a ';' or the end of the value, 0 before more. */
static int at_end(struct scan *s)
{
	int rc = skip_cfws(s);

	if (rc)
		return rc;
	return scan_eof(s) || scan_peek(s) == ';';
}

/* Skip to the next ';' (or the end), over comments and quoted strings. */
static int skip_resinfo(struct scan *s)
{
	char junk[AUTHRES_TOKEN_MAX];
	int rc;

	while (!(rc = at_end(s))) {
		if (!scan_char(s, '"'))
			s->p++;
		else if ((rc = take_quoted(s, junk, sizeof(junk))))
			break;
	}
	return rc < 0 ? rc : 0;
}

/*
 * One "ptype.property=pvalue" (or "reason=value") of a resinfo; what is
 * not one is read past a byte at a time.
 */
static int read_prop(struct scan *s, struct authres_method *m)
{
	char ptype[AUTHRES_TOKEN_MAX], prop[AUTHRES_TOKEN_MAX];
	char val[AUTHRES_TOKEN_MAX];
	int rc;

	rc = take(s, ptype, sizeof(ptype), keyword_char);
	if (rc == 0)
		s->p++; /* a stray byte */
	if (rc <= 0)
		return rc;
	if ((rc = skip_cfws(s)))
		return rc;
	if (!strcasecmp(ptype, "reason") && scan_char(s, '='))
		return take(s, val, sizeof(val), token_char) < 0 ? PB_EINVAL :
								   0;
	if (!scan_char(s, '.'))
		return 0; /* not a propspec: read on */
	rc = take(s, prop, sizeof(prop), keyword_char);
	if (rc > 0)
		rc = skip_cfws(s);
	if (rc || !scan_char(s, '='))
		return rc < 0 ? rc : 0;
	rc = take(s, val, sizeof(val), pvalue_char);
	if (rc <= 0)
		return rc;
	/* the first of each counts; a verifier writes each once */
	if (!strcasecmp(ptype, "header") && !strcasecmp(prop, "d") &&
	    !m->header_d[0])
		memcpy(m->header_d, val, sizeof(val));
	else if (!strcasecmp(ptype, "header") && !strcasecmp(prop, "from") &&
		 !m->header_from[0])
		memcpy(m->header_from, val, sizeof(val));
	return 0;
}

/* The properties of one resinfo, up to the next ';'. */
static int read_props(struct scan *s, struct authres_method *m)
{
	int rc;

	while (!(rc = at_end(s)))
		if ((rc = read_prop(s, m)))
			return rc;
	return rc < 0 ? rc : 0;
}

/* "method[/version] = result props" after a ';', into out. */
static int read_resinfo(struct scan *s, struct authres *out)
{
	char tok[AUTHRES_TOKEN_MAX];
	struct authres_method *m;
	int rc;

	rc = take(s, tok, sizeof(tok), keyword_char);
	if (rc <= 0 || out->nr >= AUTHRES_METHODS_MAX)
		return rc < 0 ? rc : 0;
	m = &out->methods[out->nr];
	memset(m, 0, sizeof(*m));
	lower_copy(m->method, sizeof(m->method), tok);
	rc = skip_cfws(s);
	if (!rc && scan_char(s, '/')) { /* method-version */
		rc = take(s, tok, sizeof(tok), keyword_char);
		if (rc >= 0)
			rc = skip_cfws(s);
	}
	if (rc || !scan_char(s, '='))
		return rc;
	rc = take(s, tok, sizeof(tok), keyword_char);
	if (rc <= 0)
		return rc;
	m->result = result_of(tok);
	out->nr++;
	return read_props(s, m);
}

int authres_parse(struct authres *out, const char *value, size_t len)
{
	struct scan s;
	int rc;

	memset(out, 0, sizeof(*out));
	scan_init(&s, value, len);
	/* authserv-id = value: a token or a quoted-string */
	rc = take(&s, out->authserv_id, sizeof(out->authserv_id), token_char);
	if (rc < 0)
		return rc;
	if (rc == 0 || !out->authserv_id[0])
		return err_set(PB_EINVAL,
			       "Authentication-Results: no authserv-id");
	/* "id/job-id": OpenDKIM's and OpenDMARC's AuthservIDWithJobID */
	if (scan_char(&s, '/')) {
		rc = take(&s, out->job_id, sizeof(out->job_id), token_char);
		if (rc < 0)
			return rc;
	}
	/* an optional authres-version, then resinfo after each ';' */
	rc = skip_resinfo(&s);
	while (!rc && scan_char(&s, ';')) {
		rc = read_resinfo(&s, out);
		/* "none", junk, or what did not fit: on to the next ';' */
		if (!rc)
			rc = skip_resinfo(&s);
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* The trusted id's letters in a value, and the same as a regexp */

/* Does id match value at p (each letter perhaps after a backslash)? */
static int mentions_at(const char *p, const char *end, const char *id)
{
	for (; *id; id++) {
		if (p < end && *p == '\\' && p + 1 < end &&
		    lower((unsigned char)p[1]) == lower((unsigned char)*id))
			p += 2;
		else if (p < end &&
			 lower((unsigned char)*p) == lower((unsigned char)*id))
			p++;
		else
			return 0;
	}
	return 1;
}

int authres_mentions(const char *value, size_t len, const char *id)
{
	const char *p, *end = value + len;

	if (!id || !*id)
		return 0;
	for (p = value; p < end; p++)
		if (mentions_at(p, end, id))
			return 1;
	return 0;
}

int authres_header_checks(struct buf *out, const char *id)
{
	const char *p;
	int rc;

	if (!id || !*id)
		return err_set(PB_EINVAL, "no trusted authserv-id");
	/* POSIX extended syntax, as Postfix's regexp: tables compile it
	 * (case-insensitive by default); '.' matches the line ends of a
	 * folded field too. */
	rc = buf_adds(out, "/^" AUTHRES_FIELD_NAME "[[:space:]]*:.*");
	for (p = id; *p && !rc; p++) {
		int c = (unsigned char)*p;

		rc = buf_adds(out, "\\\\?");
		if (!rc && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
			    c >= 0x80))
			rc = buf_addch(out, c);
		else if (!rc)
			rc = buf_addf(out, "\\%c", c);
	}
	if (!rc)
		rc = buf_adds(out, "/ IGNORE\n");
	return rc;
}

/* ------------------------------------------------------------------ */
/* The judge */

void authres_judge_init(struct authres_judge *j, const char *id, size_t top_max)
{
	memset(j, 0, sizeof(*j));
	j->id = id && *id ? id : NULL;
	if (top_max < 1)
		top_max = 1;
	if (top_max > AUTHRES_TOP_MAX)
		top_max = AUTHRES_TOP_MAX;
	j->top_max = top_max;
	j->top_open = j->id != NULL;
}

void authres_judge_release(struct authres_judge *j)
{
	size_t i;

	for (i = 0; i < j->nr_trusted; i++)
		free(j->trusted[i]);
	free(j->forged);
	authres_judge_init(j, NULL, 1);
}

static int is_ar_name(const char *name, size_t nlen)
{
	while (nlen && (name[nlen - 1] == ' ' || name[nlen - 1] == '\t'))
		nlen--;
	return mem_eq_icase(name, nlen, AUTHRES_FIELD_NAME);
}

/* Does the value claim id, read per RFC 8601? */
static int claims(const char *value, size_t vlen, const char *id)
{
	struct authres ar;

	return !authres_parse(&ar, value, vlen) &&
	       !strcasecmp(ar.authserv_id, id);
}

enum authres_field authres_judge_field(struct authres_judge *j,
				       const char *name, size_t nlen,
				       const char *value, size_t vlen)
{
	int ar = is_ar_name(name, nlen);

	j->fields++;
	if (!ar) {
		j->top_open = 0;
		return AUTHRES_OTHER;
	}
	j->ar++;
	if (!j->id)
		return AUTHRES_FOREIGN;
	if (j->top_open && j->nr_trusted < j->top_max &&
	    claims(value, vlen, j->id)) {
		j->trusted[j->nr_trusted++] = xstrndup(value, vlen);
		return AUTHRES_TRUSTED;
	}
	j->top_open = 0;
	if (!authres_mentions(value, vlen, j->id)) {
		j->nr_foreign++;
		return AUTHRES_FOREIGN;
	}
	/* the milter gets no more than PB_HEADER_COUNT_MAX fields */
	if (j->nr_forged < PB_HEADER_COUNT_MAX) {
		ALLOC_GROW(j->forged, j->nr_forged + 1, j->alloc_forged);
		j->forged[j->nr_forged] = j->ar;
	}
	j->nr_forged++;
	return AUTHRES_FORGED;
}

void authres_judge_header(struct authres_judge *j, const char *raw, size_t len)
{
	struct buf value = BUF_INIT(PB_HEADER_VALUE_MAX);
	const char *line, *colon, *name = NULL;
	size_t n, nlen = 0, fields = 0;
	struct scan s;
	int cut = 0;

	scan_init(&s, raw, len);
	if (scan_left(&s) >= 5 && !memcmp(s.p, "From ", 5))
		scan_line(&s, &line, &n);
	while (fields <= PB_HEADER_COUNT_MAX && scan_line(&s, &line, &n)) {
		if (n && (line[0] == ' ' || line[0] == '\t')) {
			/* folded: the line end stays, as Postfix passes it */
			if (name && !cut)
				cut = buf_addch(&value, '\n') ||
				      buf_add(&value, line, n);
			continue;
		}
		if (name)
			authres_judge_field(j, name, nlen, value.data,
					    value.len);
		name = NULL;
		buf_reset(&value);
		cut = 0;
		colon = n ? memchr(line, ':', n) : NULL;
		if (!colon)
			break; /* the empty line, or a line that is no field */
		name = line;
		nlen = (size_t)(colon - line);
		fields++;
		colon++;
		n -= (size_t)(colon - line);
		while (n && (*colon == ' ' || *colon == '\t')) {
			colon++;
			n--;
		}
		cut = buf_add(&value, colon, n);
	}
	if (name)
		authres_judge_field(j, name, nlen, value.data, value.len);
	buf_release(&value);
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

static void count(struct authres_summary *out, const struct authres *ar,
		  const char *from)
{
	size_t k;

	for (k = 0; k < ar->nr; k++) {
		const struct authres_method *m = &ar->methods[k];
		enum authres_result r = m->result;

		if (!strcmp(m->method, "dkim")) {
			if (r == AR_PASS && !aligned(m->header_d, from)) {
				r = AR_NEUTRAL; /* a third party's */
				out->why |= AUTHRES_WHY_DKIM_UNALIGNED;
			}
			if (rank(r) > rank(out->dkim))
				out->dkim = r;
			if (r == AR_PASS)
				out->verified = 1;
		} else if (!strcmp(m->method, "dmarc")) {
			if (r == AR_PASS && !m->header_from[0]) {
				r = AR_NEUTRAL;
				out->why |= AUTHRES_WHY_DMARC_NO_FROM;
			} else if (r == AR_PASS &&
				   strcasecmp(m->header_from, from)) {
				r = AR_NEUTRAL;
				out->why |= AUTHRES_WHY_DMARC_OTHER_FROM;
			}
			if (rank(r) > rank(out->dmarc))
				out->dmarc = r;
			if (r == AR_PASS)
				out->verified = 1;
		}
	}
}

void authres_judge_summary(struct authres_summary *out,
			   const struct authres_judge *j,
			   const char *from_domain)
{
	struct authres *ar;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->dkim = AR_NONE;
	out->dmarc = AR_NONE;
	out->trusted = j->nr_trusted;
	out->forged = j->nr_forged;
	if (!from_domain || !*from_domain || !j->nr_trusted)
		return;
	ar = xmalloc(sizeof(*ar));
	for (i = 0; i < j->nr_trusted; i++)
		if (!authres_parse(ar, j->trusted[i], strlen(j->trusted[i])))
			count(out, ar, from_domain);
	free(ar);
}

int authres_summary_why(struct buf *out, const struct authres_summary *s,
			const char *id)
{
	size_t before = out->len;
	int rc = 0;

#define SEP() (out->len > before ? buf_adds(out, "; ") : 0)
	if (s->forged && id) {
		rc = SEP();
		if (!rc)
			rc = buf_addf(out,
				      "%zu Authentication-Results field%s "
				      "claiming %s %s not added by its "
				      "verifier and %s ignored",
				      s->forged, s->forged == 1 ? "" : "s", id,
				      s->forged == 1 ? "was" : "were",
				      s->forged == 1 ? "was" : "were");
	}
	if (!rc && (s->why & AUTHRES_WHY_DMARC_NO_FROM)) {
		rc = SEP();
		if (!rc)
			rc = buf_adds(out, "a DMARC pass without header.from "
					   "does not count");
	}
	if (!rc && (s->why & AUTHRES_WHY_DMARC_OTHER_FROM)) {
		rc = SEP();
		if (!rc)
			rc = buf_adds(out, "a DMARC pass for another From "
					   "domain does not count");
	}
	if (!rc && (s->why & AUTHRES_WHY_DKIM_UNALIGNED)) {
		rc = SEP();
		if (!rc)
			rc = buf_adds(out, "a DKIM signature of another "
					   "domain than the From address's "
					   "does not count");
	}
#undef SEP
	return rc;
}
