#include "mail/patatt.h"

#include "core/secret.h"
#include "mail/digest.h"
#include "mail/hdrdecode.h"
#include "mail/mailinfo.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/xalloc.h"

#include <openssl/evp.h>

#include <ctype.h>
#include <errno.h>
#include <iconv.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SIG_HDR "X-Developer-Signature"
#define KEY_HDR "X-Developer-Key"
#define ED25519_SIG_SIZE 64
/* patatt folds its fields with email.header.make_header(maxlinelen=78) */
#define FOLD_COLUMNS 78
/* A signature field's value, at most: ours are under 400 bytes. */
#define SIG_VALUE_MAX (16 * 1024)
#define FIELDS_MAX PB_HEADER_COUNT_MAX

struct patatt_key {
	EVP_PKEY *pkey;
	EVP_MD_CTX *sign_ctx; /* initialised for pkey; copied to sign */
	unsigned char seed[PATATT_KEY_SIZE];
	unsigned char pub[PATATT_KEY_SIZE];
};

/* ---- base64, through OpenSSL's encoder ---- */

static int b64_encode(struct buf *out, const unsigned char *p, size_t n)
{
	size_t need = 4 * ((n + 2) / 3);
	int rc = buf_grow(out, need + 1);

	if (rc)
		return rc;
	EVP_EncodeBlock((unsigned char *)out->data + out->len, p, (int)n);
	out->len += need;
	out->data[out->len] = '\0';
	return 0;
}

/*
 * Decode base64 text, blanks and line ends skipped (Python's
 * base64.b64decode() drops what is not of the alphabet, which is what
 * PyNaCl's Base64Encoder and patatt read keys and signatures with).
 */
static int b64_decode(struct buf *out, const char *p, size_t n)
{
	EVP_ENCODE_CTX *ctx = EVP_ENCODE_CTX_new();
	unsigned char chunk[4 * 256];
	unsigned char dec[3 * 256 + 3];
	size_t i = 0, k;
	int outl, rc = 0;

	if (!ctx)
		return err_set(PB_ERROR, "base64: out of memory");
	EVP_DecodeInit(ctx);
	while (i < n && !rc) {
		for (k = 0; i < n && k < sizeof(chunk); i++) {
			unsigned char c = (unsigned char)p[i];

			if (isalnum(c) || c == '+' || c == '/' || c == '=')
				chunk[k++] = c;
		}
		if (EVP_DecodeUpdate(ctx, dec, &outl, chunk, (int)k) < 0)
			rc = err_set(PB_EINVAL, "base64 that does not decode");
		else
			rc = buf_add(out, dec, (size_t)outl);
	}
	if (!rc) {
		if (EVP_DecodeFinal(ctx, dec, &outl) < 0)
			rc = err_set(PB_EINVAL, "base64 that does not decode");
		else
			rc = buf_add(out, dec, (size_t)outl);
	}
	EVP_ENCODE_CTX_free(ctx);
	return rc;
}

/*
 * SHA-256 from OpenSSL: its assembly (SHA extensions, AVX2) hashes the
 * megabytes of a long series several times faster than GLib's portable
 * code behind digest.h, which this module would otherwise use.
 */
static void sha256(unsigned char out[DIGEST_SHA256_SIZE], const void *p,
		   size_t n)
{
	unsigned int len = DIGEST_SHA256_SIZE;

	if (EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) != 1)
		BUG("EVP_Digest(SHA-256) failed");
}

/* ---- keys ---- */

static int key_from_seed(struct patatt_key **out, const unsigned char *seed)
{
	struct patatt_key *k = xcalloc(1, sizeof(*k));
	size_t publen = PATATT_KEY_SIZE;

	*out = NULL;
	k->pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed,
					       PATATT_KEY_SIZE);
	k->sign_ctx = EVP_MD_CTX_new();
	if (!k->pkey || !k->sign_ctx ||
	    EVP_DigestSignInit(k->sign_ctx, NULL, NULL, NULL, k->pkey) != 1 ||
	    EVP_PKEY_get_raw_public_key(k->pkey, k->pub, &publen) != 1 ||
	    publen != PATATT_KEY_SIZE) {
		patatt_key_free(k);
		return err_set(PB_ERROR, "ed25519: the key was not accepted");
	}
	memcpy(k->seed, seed, PATATT_KEY_SIZE);
	*out = k;
	return 0;
}

int patatt_key_new(struct patatt_key **out, const char *text, size_t len)
{
	struct buf raw = BUF_INIT(4 * PATATT_KEY_SIZE);
	int rc;

	*out = NULL;
	while (len && isspace((unsigned char)*text))
		text++, len--;
	while (len && isspace((unsigned char)text[len - 1]))
		len--;
	/* the rule check-config applies (core/secret.h), then the bytes */
	rc = secret_key32_b64(text, len);
	if (!rc && (b64_decode(&raw, text, len) || raw.len != PATATT_KEY_SIZE))
		rc = secret_key32_b64("", 0);
	if (!rc)
		rc = key_from_seed(out, (const unsigned char *)raw.data);
	OPENSSL_cleanse(raw.data, raw.alloc);
	buf_release(&raw);
	return rc;
}

int patatt_key_generate(struct patatt_key **out)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
	EVP_PKEY *pkey = NULL;
	unsigned char seed[PATATT_KEY_SIZE];
	size_t n = sizeof(seed);
	int rc = 0;

	*out = NULL;
	if (!ctx || EVP_PKEY_keygen_init(ctx) != 1 ||
	    EVP_PKEY_keygen(ctx, &pkey) != 1 ||
	    EVP_PKEY_get_raw_private_key(pkey, seed, &n) != 1 ||
	    n != sizeof(seed))
		rc = err_set(PB_ERROR, "ed25519: no key generated");
	if (!rc)
		rc = key_from_seed(out, seed);
	OPENSSL_cleanse(seed, sizeof(seed));
	EVP_PKEY_free(pkey);
	EVP_PKEY_CTX_free(ctx);
	return rc;
}

void patatt_key_free(struct patatt_key *key)
{
	if (!key)
		return;
	EVP_MD_CTX_free(key->sign_ctx);
	EVP_PKEY_free(key->pkey);
	OPENSSL_cleanse(key, sizeof(*key));
	free(key);
}

int patatt_key_private_b64(struct buf *out, const struct patatt_key *key)
{
	return b64_encode(out, key->seed, PATATT_KEY_SIZE);
}

void patatt_key_public_b64(char out[PATATT_KEY_B64_SIZE],
			   const struct patatt_key *key)
{
	EVP_EncodeBlock((unsigned char *)out, key->pub, PATATT_KEY_SIZE);
}

int patatt_pubkey_parse(unsigned char pub[PATATT_KEY_SIZE], const char *text,
			size_t len)
{
	struct buf raw = BUF_INIT(4 * PATATT_KEY_SIZE);
	int rc = b64_decode(&raw, text, len);

	if (rc || raw.len != PATATT_KEY_SIZE)
		rc = err_set(PB_EINVAL, "not an ed25519 public key (the "
					"base64 of 32 bytes)");
	if (!rc)
		memcpy(pub, raw.data, PATATT_KEY_SIZE);
	buf_release(&raw);
	return rc;
}

/* Python's urllib.parse.quote_plus(), of the lower-cased text. */
static int quote_plus(struct buf *out, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)tolower((unsigned char)s[i]);

		if (isalnum(c) || c == '_' || c == '.' || c == '-' ||
		    c == '~') {
			buf_addch(out, c);
		} else if (c == ' ') {
			buf_addch(out, '+');
		} else {
			buf_addch(out, '%');
			buf_addch(out, hex[c >> 4]);
			buf_addch(out, hex[c & 15]);
		}
	}
	return buf_error(out);
}

/* A component of a keyring path: quote_plus() of s, never empty, "."
 * or "..": the signature's i= and s= name a file under the keyring and
 * must not climb out of it. */
static int path_part(struct buf *out, const char *s, size_t n)
{
	size_t at = out->len;
	int rc = quote_plus(out, s, n);

	if (rc)
		return rc;
	if (out->len == at || (out->len - at <= 2 &&
			       !strncmp(out->data + at, "..", out->len - at)))
		return err_set(PB_EINVAL,
			       "an identity or selector that names no file "
			       "under the keyring");
	return 0;
}

int patatt_keyring_path(struct buf *out, const char *identity,
			const char *selector)
{
	const char *at = strchr(identity, '@');
	int rc;

	if (!at)
		return err_set(PB_EINVAL,
			       "identity must include both local and domain "
			       "parts");
	if (!selector || !*selector)
		selector = PATATT_SELECTOR_DEFAULT;
	buf_adds(out, "ed25519/");
	/* patatt splits at the first "@" */
	rc = path_part(out, at + 1, strlen(at + 1));
	if (!rc)
		rc = buf_addch(out, '/');
	if (!rc)
		rc = path_part(out, identity, (size_t)(at - identity));
	if (!rc)
		rc = buf_addch(out, '/');
	if (!rc)
		rc = path_part(out, selector, strlen(selector));
	return rc ? rc : buf_error(out);
}

/* ---- the mail as patatt splits it ---- */

struct field {
	const char *p; /* the raw field, its folds and line end included */
	size_t n;
	size_t namelen; /* up to the first ":"; 0 when there is none */
};

struct msg {
	struct field *f;
	size_t nf;
	const char *lf; /* the blank line ending the header, as written */
	size_t lflen;
	const char *body;
	size_t bodylen;
};

static void msg_release(struct msg *m)
{
	free(m->f);
	memset(m, 0, sizeof(*m));
}

static int blank_line(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isspace((unsigned char)p[i]))
			return 0;
	return 1;
}

/* patatt's PatattMessage.load_from_bytes() */
static int msg_parse(struct msg *m, const char *p, size_t len)
{
	const char *end = p + len;
	size_t alloc = 0;

	memset(m, 0, sizeof(*m));
	if (len > PATATT_MAIL_MAX)
		return err_set(PB_ELIMIT, "mail larger than %d bytes",
			       PATATT_MAIL_MAX);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl + 1 - p) : (size_t)(end - p);

		if (blank_line(p, n)) {
			m->lf = p;
			m->lflen = n;
			m->body = p + n;
			m->bodylen = (size_t)(end - m->body);
			break;
		}
		if (*p == ' ' || *p == '\t') {
			if (!m->nf)
				goto bad;
			m->f[m->nf - 1].n += n;
		} else {
			const char *colon = memchr(p, ':', n);
			struct field *f;

			if (m->nf == FIELDS_MAX)
				return err_set(PB_ELIMIT,
					       "more than %d header fields",
					       FIELDS_MAX);
			if (m->nf == alloc) {
				alloc = alloc ? 2 * alloc : 32;
				m->f = xreallocarray(m->f, alloc,
						     sizeof(*m->f));
			}
			f = &m->f[m->nf++];
			f->p = p;
			f->n = n;
			f->namelen = colon ? (size_t)(colon - p) : 0;
		}
		p += n;
	}
	if (!m->nf || !m->bodylen)
		goto bad;
	return 0;
bad:
	msg_release(m);
	return err_set(PB_EINVAL, "not a valid RFC 2822 message");
}

/* The field's name matches name (patatt: left.strip().lower()). */
static int field_is(const struct field *f, const char *name)
{
	const char *p = f->p;
	size_t n = f->namelen, k = strlen(name);

	if (!f->namelen)
		return 0;
	while (n && isspace((unsigned char)*p)) {
		p++;
		n--;
	}
	while (n && isspace((unsigned char)p[n - 1]))
		n--;
	return n == k && !strncasecmp(p, name, k);
}

/* The value of the last field called name, or NULL. */
static const struct field *field_last(const struct msg *m, const char *name)
{
	size_t i;

	for (i = m->nf; i--;)
		if (field_is(&m->f[i], name))
			return &m->f[i];
	return NULL;
}

static void field_value(const struct field *f, const char **v, size_t *n)
{
	*v = f->p + f->namelen + 1;
	*n = f->n - f->namelen - 1;
}

/* ---- what git mailinfo reads of the mail ---- */

struct info {
	struct buf lf; /* the body with LF line ends, when it had CRLF */
	struct buf dec; /* the body decoded, when it was QP or base64 */
	const char *text; /* the message and the patch: into the body, */
	size_t textlen; /* lf or dec */
	struct buf name; /* Author: */
	struct buf email; /* Email: */
	struct buf subject; /* Subject: */
	char *ib_from; /* in-body fields, their values undecoded */
	char *ib_subject;
};

static void info_init(struct info *in)
{
	memset(in, 0, sizeof(*in));
	buf_init(&in->lf, PATATT_MAIL_MAX);
	buf_init(&in->dec, PATATT_MAIL_MAX);
	buf_init(&in->name, PB_HEADER_VALUE_MAX);
	buf_init(&in->email, PB_HEADER_VALUE_MAX);
	buf_init(&in->subject, PB_HEADER_VALUE_MAX);
}

static void info_release(struct info *in)
{
	buf_release(&in->lf);
	buf_release(&in->dec);
	buf_release(&in->name);
	buf_release(&in->email);
	buf_release(&in->subject);
	free(in->ib_from);
	free(in->ib_subject);
}

/* The text with each CRLF made LF (patatt's payload.replace()). */
static int crlf_to_lf(struct buf *out, const char *p, size_t n)
{
	const char *end = p + n, *cr;

	while ((cr = memchr(p, '\r', (size_t)(end - p)))) {
		size_t k = (size_t)(cr - p);

		if (cr + 1 < end && cr[1] == '\n') {
			buf_add(out, p, k);
		} else {
			buf_add(out, p, k + 1);
		}
		p = cr + 1;
	}
	return buf_add(out, p, (size_t)(end - p));
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* mailinfo.c decode_q_segment(), of a whole body with LF line ends */
static int qp_decode(struct buf *out, const char *p, size_t n)
{
	const char *end = p + n, *eq;

	while ((eq = memchr(p, '=', (size_t)(end - p)))) {
		buf_add(out, p, (size_t)(eq - p));
		p = eq + 1;
		if (p == end || *p == '\n') {
			/* a soft line break: "=" and its LF go */
			p += p < end;
		} else if (end - p >= 2 && hexval((unsigned char)p[0]) >= 0 &&
			   hexval((unsigned char)p[1]) >= 0) {
			buf_addch(out, hexval((unsigned char)p[0]) << 4 |
					       hexval((unsigned char)p[1]));
			p += 2;
		} else {
			/* garbage: the "=" stays */
			buf_addch(out, '=');
		}
	}
	return buf_add(out, p, (size_t)(end - p));
}

/* mailinfo.c skip_header(): "Name:" at the start, any case. */
static const char *inbody_value(const char *line, size_t n, const char *name)
{
	size_t k = strlen(name);

	if (n <= k || strncasecmp(line, name, k) || line[k] != ':')
		return NULL;
	return line + k + 1;
}

/* flush_inbody_header_accum(): the first of each name counts. */
static void inbody_flush(struct info *in, struct buf *accum, int which)
{
	char **dst = which == 1 ? &in->ib_from :
		     which == 2 ? &in->ib_subject :
				  NULL;

	if (accum->len && dst && !*dst)
		*dst = xstrndup(accum->data, accum->len);
	buf_reset(accum);
}

/*
 * mailinfo.c handle_commit_msg() and check_inbody_header(), scissors
 * off: blank lines at the top go, then in-body From/Subject/Date lines
 * (each name once, continued by indented lines) and the blank line
 * that ends them; everything after is the message and the patch, kept
 * as it is.  Returns where that starts in p[0..n).
 */
static size_t read_text(struct info *in, const char *p, size_t n)
{
	const char *start = p, *end = p + n;
	int seen_from = 0, seen_subject = 0, seen_date = 0;
	struct buf accum = BUF_INIT(PB_HEADER_VALUE_MAX);
	int which = 0; /* what accum holds: 1 From, 2 Subject, 3 Date */

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl + 1 - p) : (size_t)(end - p);
		const char *line = p, *v = NULL;

		if (len == 1 && *line == '\n') {
			p += len;
			if (accum.len)
				break;
			continue;
		}
		if (accum.len && (*line == ' ' || *line == '\t')) {
			if (accum.data[accum.len - 1] == '\n')
				buf_truncate(&accum, accum.len - 1);
			buf_add(&accum, line, len);
			p += len;
			continue;
		}
		inbody_flush(in, &accum, which);
		if (!seen_from && (v = inbody_value(line, len, "From")))
			which = 1, seen_from = 1;
		else if (!seen_subject &&
			 (v = inbody_value(line, len, "Subject")))
			which = 2, seen_subject = 1;
		else if (!seen_date && (v = inbody_value(line, len, "Date")))
			which = 3, seen_date = 1;
		if (!v)
			break;
		buf_add(&accum, v, len - (size_t)(v - line));
		p += len;
	}
	inbody_flush(in, &accum, which);
	buf_release(&accum);
	return (size_t)(p - start);
}

/* git's cleanup_space(): each run of blanks made one space. */
static void cleanup_space(struct buf *b)
{
	size_t i, j = 0;

	for (i = 0; i < b->len; i++) {
		unsigned char c = (unsigned char)b->data[i];

		if (isspace(c)) {
			if (j && b->data[j - 1] == ' ' && i &&
			    isspace((unsigned char)b->data[i - 1]))
				continue;
			c = ' ';
		}
		b->data[j++] = (char)c;
	}
	buf_truncate(b, j);
}

static void trim(struct buf *b)
{
	size_t i = 0;

	while (i < b->len && isspace((unsigned char)b->data[i]))
		i++;
	memmove(b->data, b->data + i, b->len - i);
	buf_truncate(b, b->len - i);
	buf_rtrim(b);
}

/*
 * The charset "converter" for header text: none.  git mailinfo given
 * --encoding=utf-8 (as patatt calls it) leaves the bytes of an encoded
 * word and of the body in the charset they came in (git 2.39's
 * builtin/mailinfo.c sets no metainfo_charset for an explicit
 * encoding), and patatt hashes what git wrote.
 */
static int hdr_conv(struct buf *out, const char *p, size_t len,
		    const char *charset, void *arg)
{
	(void)charset;
	(void)arg;
	return buf_add(out, p, len);
}

/*
 * mailinfo.c handle_from(), of the decoded value: the address is the
 * word around the first "@" (its "<" and ">" dropped), the name what
 * is left, trimmed and out of a (comment); get_sane_name() then takes
 * the address for a name that is empty, long or holds "@<>".
 */
static int handle_from(struct info *in, const char *v, size_t n)
{
	struct buf f = BUF_INIT(PB_HEADER_VALUE_MAX);
	size_t i, at, s, el;
	int rc;

	hdrdecode_text(&f, v, n, hdr_conv, NULL);
	cleanup_space(&f);
	/* unquote_quoted_pair(): quotes and backslashes of quoted text */
	{
		size_t j = 0;
		int q = 0, esc = 0, depth = 0;

		for (i = 0; i < f.len; i++) {
			char c = f.data[i];

			if (esc) {
				esc = 0;
			} else if (q) {
				if (c == '\\') {
					esc = 1;
					continue;
				}
				if (c == '"') {
					q = 0;
					continue;
				}
			} else if (depth) {
				if (c == '\\') {
					esc = 1;
					continue;
				}
				if (c == '(')
					depth++;
				else if (c == ')')
					depth--;
			} else if (c == '"') {
				q = 1;
				continue;
			} else if (c == '(') {
				depth = 1;
			}
			f.data[j++] = c;
		}
		buf_truncate(&f, j);
	}
	for (at = 0; at < f.len && f.data[at] != '@'; at++)
		;
	if (at == f.len) {
		/* parse_bogus_from(): the whole value is the name */
		trim(&f);
		buf_addbuf(&in->name, &f);
		rc = buf_error(&in->name);
		buf_release(&f);
		return rc;
	}
	s = at;
	while (s > 0) {
		char c = f.data[s - 1];

		if (isspace((unsigned char)c))
			break;
		if (c == '<') {
			f.data[s - 1] = ' ';
			break;
		}
		s--;
	}
	el = strcspn(f.data + s, " \n\t\r\v\f>");
	buf_reset(&in->email);
	buf_add(&in->email, f.data + s, el);
	if (s + el < f.len)
		el++;
	memmove(f.data + s, f.data + s + el, f.len - s - el);
	buf_truncate(&f, f.len - el);
	cleanup_space(&f);
	trim(&f);
	if (f.len >= 2 && f.data[0] == '(' && f.data[f.len - 1] == ')') {
		memmove(f.data, f.data + 1, f.len - 2);
		buf_truncate(&f, f.len - 2);
	}
	buf_reset(&in->name);
	if (!f.len || f.len > 60 || strpbrk(f.data, "@<>"))
		buf_addbuf(&in->name, &in->email);
	else
		buf_addbuf(&in->name, &f);
	rc = buf_error(&in->name) ? buf_error(&in->name) :
				    buf_error(&in->email);
	buf_release(&f);
	return rc;
}

static int info_read(struct info *in, const struct msg *m)
{
	const struct field *cte = field_last(m, "content-transfer-encoding");
	const struct field *ct = field_last(m, "content-type");
	const struct field *from, *subj;
	const char *text, *v;
	size_t textlen, n, i;
	int rc = 0;

	if (ct) {
		field_value(ct, &v, &n);
		struct buf low = BUF_INIT(PB_HEADER_VALUE_MAX);

		for (i = 0; i < n; i++)
			buf_addch(&low, tolower((unsigned char)v[i]));
		if (strstr(low.data, "multipart/"))
			rc = err_set(PB_EINVAL, "a multipart mail is not "
						"attested here");
		buf_release(&low);
		if (rc)
			return rc;
	}
	/* patatt hands git mailinfo the mail with its CRLFs made LFs */
	text = m->body;
	textlen = m->bodylen;
	if (memchr(text, '\r', textlen)) {
		rc = crlf_to_lf(&in->lf, text, textlen);
		text = in->lf.data;
		textlen = in->lf.len;
	}
	if (!rc && cte) {
		struct buf low = BUF_INIT(PB_HEADER_VALUE_MAX);

		field_value(cte, &v, &n);
		for (i = 0; i < n; i++)
			buf_addch(&low, tolower((unsigned char)v[i]));
		/* mailinfo.c handle_content_transfer_encoding() */
		if (strstr(low.data, "base64")) {
			rc = b64_decode(&in->dec, text, textlen);
			text = in->dec.data;
			textlen = in->dec.len;
		} else if (strstr(low.data, "quoted-printable")) {
			rc = qp_decode(&in->dec, text, textlen);
			text = in->dec.data;
			textlen = in->dec.len;
		}
		buf_release(&low);
	}
	if (rc)
		return rc == PB_ELIMIT ? err_set(rc,
						 "mail text larger than "
						 "%d bytes",
						 PATATT_MAIL_MAX) :
					 rc;
	i = read_text(in, text, textlen);
	in->text = text + i;
	in->textlen = textlen - i;

	from = field_last(m, "from");
	if (in->ib_from)
		rc = handle_from(in, in->ib_from, strlen(in->ib_from));
	else if (from) {
		field_value(from, &v, &n);
		rc = handle_from(in, v, n);
	}
	subj = field_last(m, "subject");
	if (!rc && (in->ib_subject || subj)) {
		struct buf s = BUF_INIT(PB_HEADER_VALUE_MAX);

		if (in->ib_subject) {
			v = in->ib_subject;
			n = strlen(v);
		} else {
			field_value(subj, &v, &n);
		}
		hdrdecode_text(&s, v, n, hdr_conv, NULL);
		rc = mailinfo_clean_subject(&in->subject, s.data, s.len);
		trim(&in->subject);
		buf_release(&s);
	}
	return rc;
}

/*
 * patatt's git_canonicalize(), the body: CRLF lines, no blank tail.
 * Written a chunk at a time to emit(arg, bytes, n), so that hashing a
 * long patch needs no copy of it.
 */
#define CANON_CHUNK (64 * 1024)

typedef int (*canon_emit_fn)(void *arg, const char *p, size_t n);

static int canon_body_walk(const char *text, size_t len, canon_emit_fn emit,
			   void *arg)
{
	const char *p = text, *end = text + len, *nl;
	char *chunk = xmalloc(CANON_CHUNK), *w = chunk;
	int rc = 0;

	while (end > p && (end[-1] == '\r' || end[-1] == '\n'))
		end--;
	for (;;) {
		const char *e;

		nl = memchr(p, '\n', (size_t)(end - p));
		e = nl ? nl : end;
		while (e > p && e[-1] == '\r')
			e--;
		while (!rc && (size_t)(e - p) + 2 >
				      CANON_CHUNK - (size_t)(w - chunk)) {
			/* the line does not fit: fill the chunk and pass it */
			size_t k = CANON_CHUNK - (size_t)(w - chunk);

			if (k > (size_t)(e - p))
				k = (size_t)(e - p);
			memcpy(w, p, k);
			p += k;
			rc = emit(arg, chunk, (size_t)(w - chunk) + k);
			w = chunk;
		}
		if (rc)
			break;
		memcpy(w, p, (size_t)(e - p));
		w += e - p;
		*w++ = '\r';
		*w++ = '\n';
		if (!nl)
			break;
		p = nl + 1;
	}
	if (!rc && w > chunk)
		rc = emit(arg, chunk, (size_t)(w - chunk));
	free(chunk);
	return rc;
}

static int emit_buf(void *arg, const char *p, size_t n)
{
	return buf_add(arg, p, n);
}

struct body_hash {
	EVP_MD_CTX *ctx;
	size_t len;
};

static int emit_hash(void *arg, const char *p, size_t n)
{
	struct body_hash *h = arg;

	h->len += n;
	return EVP_DigestUpdate(h->ctx, p, n) == 1 ?
		       0 :
		       err_set(PB_ERROR, "SHA-256: update failed");
}

/* bh= and l=: the SHA-256 of the canonical body and its length. */
static int body_hash(unsigned char bh[DIGEST_SHA256_SIZE], size_t *len,
		     const char *text, size_t textlen)
{
	struct body_hash h = { EVP_MD_CTX_new(), 0 };
	unsigned int n = DIGEST_SHA256_SIZE;
	int rc;

	if (!h.ctx || EVP_DigestInit_ex(h.ctx, EVP_sha256(), NULL) != 1)
		rc = err_set(PB_ERROR, "SHA-256: no context");
	else
		rc = canon_body_walk(text, textlen, emit_hash, &h);
	if (!rc && EVP_DigestFinal_ex(h.ctx, bh, &n) != 1)
		rc = err_set(PB_ERROR, "SHA-256: final failed");
	EVP_MD_CTX_free(h.ctx);
	*len = h.len;
	return rc;
}

/* ---- Python's email.header, for a value holding "?q?" ---- */

/* email.header.ecre: =?charset?[qQbB]?text?= (non-greedy) */
static int ecre(const char *p, const char *end, const char **cs, size_t *csn,
		char *enc, const char **t, size_t *tn, const char **next)
{
	const char *q, *s;

	if (end - p < 2 || p[0] != '=' || p[1] != '?')
		return 0;
	q = memchr(p + 2, '?', (size_t)(end - p - 2));
	if (!q || end - q < 3 || !strchr("qQbB", q[1]) || q[2] != '?')
		return 0;
	for (s = q + 3; s + 1 < end; s++)
		if (s[0] == '?' && s[1] == '=')
			break;
	if (s + 1 >= end)
		return 0;
	*cs = p + 2;
	*csn = (size_t)(q - p - 2);
	*enc = (char)tolower((unsigned char)q[1]);
	*t = q + 3;
	*tn = (size_t)(s - q - 3);
	*next = s + 2;
	return 1;
}

struct pyword {
	struct buf text;
	char cs[64]; /* "" for unencoded text */
	int enc; /* whether it was an encoded word */
};

static int py_isspace_all(const struct buf *b)
{
	size_t i;

	if (!b->len)
		return 0;
	for (i = 0; i < b->len; i++)
		if (!isspace((unsigned char)b->data[i]))
			return 0;
	return 1;
}

static int nonctext(char c)
{
	return isspace((unsigned char)c) || c == '(' || c == ')' || c == '\\';
}

/*
 * The bytes of an encoded word in charset as UTF-8, as Python's codecs
 * would give them: through the C library's iconv (no GMime here, which
 * would need mail_init() in every program that signs).  Non-zero, with
 * out as it was, when iconv does not know the charset or the bytes do
 * not convert; the caller keeps them as they are.
 */
static int to_utf8(struct buf *out, const char *p, size_t n, const char *cs)
{
	iconv_t cd = iconv_open("UTF-8", cs);
	size_t start = out->len;
	char *in = (char *)p;
	int rc = 0;

	if (cd == (iconv_t)-1)
		return -1;
	while (n && !rc) {
		char tmp[256], *o = tmp;
		size_t left = sizeof(tmp);

		if (iconv(cd, &in, &n, &o, &left) == (size_t)-1 &&
		    errno != E2BIG)
			rc = -1;
		buf_add(out, tmp, sizeof(tmp) - left);
	}
	iconv_close(cd);
	if (rc || buf_error(out)) {
		buf_truncate(out, start);
		buf_clear_error(out);
		return -1;
	}
	return 0;
}

/*
 * Header.__str__() for one chunk: a space between an encoded chunk and
 * text that does not start or end with one.  *state: 0 at the start,
 * then 1 + whether the last chunk was encoded, + 2 when it ended in a
 * blank or a parenthesis.
 */
static void py_str_chunk(struct buf *out, const struct buf *chunk, int enc,
			 const char *cs, int *state)
{
	int ascii = !enc || !*cs || !strcmp(cs, "us-ascii");
	struct buf u = BUF_INIT(PB_HEADER_VALUE_MAX);

	if (ascii)
		buf_addbuf(&u, chunk);
	else if (!strcmp(cs, "utf-8") || !strcmp(cs, "utf8") ||
		 to_utf8(&u, chunk->data, chunk->len, cs))
		buf_addbuf(&u, chunk);
	if (*state) {
		int lastenc = (*state - 1) & 1, lastspace = (*state - 1) & 2;
		int hasspace = u.len && nonctext(u.data[0]);

		if (lastenc) {
			if (ascii && !hasspace)
				buf_addch(out, ' ');
		} else if (!ascii && !lastspace) {
			buf_addch(out, ' ');
		}
	}
	*state = 1 + (!ascii) + (u.len && nonctext(u.data[u.len - 1]) ? 2 : 0);
	buf_addbuf(out, &u);
	buf_release(&u);
}

/*
 * str(email.header.make_header(email.header.decode_header(s))) of the
 * value as patatt's _dkim_canonicalize_header() takes it: bytes that
 * are not ASCII dropped first (its decode('ascii', errors='ignore')).
 */
static int py_decode_header(struct buf *out, const char *v, size_t n)
{
	struct buf a = BUF_INIT(PB_HEADER_VALUE_MAX);
	struct pyword *w = NULL;
	size_t nw = 0, i, k;
	const char *p, *end, *cs, *t, *next;
	size_t csn, tn;
	char enc;
	int found = 0, rc = 0;

	for (i = 0; i < n; i++)
		if (!((unsigned char)v[i] & 0x80))
			buf_addch(&a, v[i]);
	for (p = a.data, end = a.data + a.len; p < end; p++)
		if (ecre(p, end, &cs, &csn, &enc, &t, &tn, &next))
			found = 1;
	if (!found) {
		rc = buf_addbuf(out, &a);
		buf_release(&a);
		return rc;
	}
	w = xcalloc(a.len + 1, sizeof(*w) * 2);
	/* for line in header.splitlines(): ecre.split(line) */
	p = a.data;
	end = a.data + a.len;
	while (p < end) {
		const char *le = p, *ls;
		int first = 1;

		while (le < end && *le != '\n' && *le != '\r' && *le != '\v' &&
		       *le != '\f' && !(*le >= 0x1c && *le <= 0x1e))
			le++;
		ls = p;
		while (ls <= le) {
			const char *q = ls, *un = ls;

			while (q < le &&
			       !ecre(q, le, &cs, &csn, &enc, &t, &tn, &next))
				q++;
			if (first) {
				while (un < q && isspace((unsigned char)*un))
					un++;
				first = 0;
			}
			if (q > un) {
				buf_init(&w[nw].text, PB_HEADER_VALUE_MAX);
				buf_add(&w[nw].text, un, (size_t)(q - un));
				nw++;
			}
			if (q >= le)
				break;
			buf_init(&w[nw].text, PB_HEADER_VALUE_MAX);
			w[nw].enc = 1;
			for (k = 0; k < csn && k + 1 < sizeof(w[nw].cs); k++)
				w[nw].cs[k] =
					(char)tolower((unsigned char)cs[k]);
			if (enc == 'q') {
				/* quoprimime.header_decode() */
				for (k = 0; k < tn; k++) {
					char c = t[k];

					if (c == '_') {
						c = ' ';
					} else if (c == '=' && k + 2 < tn &&
						   isxdigit((unsigned char)
								    t[k + 1]) &&
						   isxdigit((unsigned char)
								    t[k + 2])) {
						char h[3] = { t[k + 1],
							      t[k + 2], 0 };

						c = (char)strtol(h, NULL, 16);
						k += 2;
					}
					buf_addch(&w[nw].text, c);
				}
			} else if (b64_decode(&w[nw].text, t, tn)) {
				err_clear();
			}
			nw++;
			ls = next;
		}
		p = le;
		if (p < end && *p == '\r' && p + 1 < end && p[1] == '\n')
			p++;
		p++;
	}
	/* whitespace-only text between two encoded words goes */
	for (i = 2; i < nw; i++) {
		if (w[i].enc && w[i - 2].enc && !w[i - 1].enc &&
		    py_isspace_all(&w[i - 1].text)) {
			buf_release(&w[i - 1].text);
			memmove(&w[i - 1], &w[i], (nw - i) * sizeof(*w));
			nw--;
			i--;
		}
	}
	/* collapse runs of one charset (unencoded ones joined by a space),
	 * then str(): a space where text meets an encoded word without one */
	{
		int lastspace = 0, lastenc = 0, any = 0;
		const char *lastcs = "";
		struct buf chunk = BUF_INIT(PB_HEADER_VALUE_MAX);

		for (i = 0; i <= nw; i++) {
			if (i < nw && any && w[i].enc == lastenc &&
			    !strcmp(w[i].cs, lastcs)) {
				if (!w[i].enc)
					buf_addch(&chunk, ' ');
				buf_addbuf(&chunk, &w[i].text);
				continue;
			}
			if (any)
				py_str_chunk(out, &chunk, lastenc, lastcs,
					     &lastspace);
			if (i == nw)
				break;
			buf_reset(&chunk);
			buf_addbuf(&chunk, &w[i].text);
			lastcs = w[i].cs;
			lastenc = w[i].enc;
			any = 1;
		}
		buf_release(&chunk);
	}
	for (i = 0; i < nw; i++)
		buf_release(&w[i].text);
	free(w);
	buf_release(&a);
	return buf_error(out);
}

/* DKIM relaxed (patatt's _dkim_canonicalize_header()): value, CRLF */
static int relaxed(struct buf *out, const char *v, size_t n)
{
	struct buf dec = BUF_INIT(PB_HEADER_VALUE_MAX);
	size_t i, start = out->len;
	int sp = 0, rc;

	if (memmem(v, n, "?q?", 3)) {
		py_decode_header(&dec, v, n);
		v = dec.data;
		n = dec.len;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c == '\r' || c == '\n')
			continue;
		if (isspace(c)) {
			sp = 1;
			continue;
		}
		if (sp && out->len > start)
			buf_addch(out, ' ');
		sp = 0;
		buf_addch(out, c);
	}
	rc = buf_add(out, "\r\n", 2);
	buf_release(&dec);
	return rc;
}

/* ---- the canonical form ---- */

struct canon {
	struct msg m;
	struct info in;
	unsigned char bh[DIGEST_SHA256_SIZE]; /* the body's hash */
	size_t bodylen; /* and its length, canonical */
};

static void canon_release(struct canon *c)
{
	msg_release(&c->m);
	info_release(&c->in);
}

static int canon_read(struct canon *c, const char *msg, size_t len)
{
	int rc;

	memset(c, 0, sizeof(*c));
	info_init(&c->in);
	rc = msg_parse(&c->m, msg, len);
	if (!rc)
		rc = info_read(&c->in, &c->m);
	if (!rc)
		rc = body_hash(c->bh, &c->bodylen, c->in.text, c->in.textlen);
	if (rc == PB_ELIMIT)
		err_set(rc, "mail text larger than %d bytes", PATATT_MAIL_MAX);
	return rc;
}

/*
 * The relaxed field name:value CRLF of the last field called name, From
 * and Subject as git mailinfo reads them (git_canonicalize()); nothing
 * for a name the mail lacks (RFC 6376 5.4: the null input).
 */
static int canon_field(struct buf *out, const struct canon *c, const char *name,
		       size_t namelen)
{
	char lname[64];
	const struct field *f;
	const char *v;
	size_t n, i;
	struct buf sub = BUF_INIT(PB_HEADER_VALUE_MAX);
	int rc;

	if (namelen >= sizeof(lname))
		return 0;
	for (i = 0; i < namelen; i++)
		lname[i] = (char)tolower((unsigned char)name[i]);
	lname[namelen] = '\0';
	f = field_last(&c->m, lname);
	if (!f)
		return 0;
	field_value(f, &v, &n);
	if (!strcmp(lname, "from")) {
		buf_addch(&sub, ' ');
		buf_addbuf(&sub, &c->in.name);
		buf_adds(&sub, " <");
		buf_addbuf(&sub, &c->in.email);
		buf_addch(&sub, '>');
		v = sub.data;
		n = sub.len;
	} else if (!strcmp(lname, "subject")) {
		buf_addch(&sub, ' ');
		buf_addbuf(&sub, &c->in.subject);
		v = sub.data;
		n = sub.len;
	}
	buf_adds(out, lname);
	buf_addch(out, ':');
	rc = relaxed(out, v, n);
	buf_release(&sub);
	return rc;
}

static int canon_fields(struct buf *out, const struct canon *c, const char *h)
{
	const char *p = h;

	while (*p) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		const char *s = p;

		while (n && isspace((unsigned char)*s))
			s++, n--;
		while (n && isspace((unsigned char)s[n - 1]))
			n--;
		canon_field(out, c, s, n);
		if (!e)
			break;
		p = e + 1;
	}
	return buf_error(out);
}

int patatt_canon_body(struct buf *out, const char *msg, size_t len)
{
	struct canon c;
	int rc = canon_read(&c, msg, len);

	if (!rc)
		rc = canon_body_walk(c.in.text, c.in.textlen, emit_buf, out);
	canon_release(&c);
	return rc;
}

int patatt_canon_headers(struct buf *out, const char *msg, size_t len,
			 const char *h)
{
	struct canon c;
	int rc = canon_read(&c, msg, len);

	if (!rc)
		rc = canon_fields(out, &c, h);
	canon_release(&c);
	return rc;
}

/* ---- signing ---- */

/*
 * name: value folded as email.header.make_header(maxlinelen=78) folds
 * patatt's fields: at the blanks, a line as long as fits.
 */
static int fold(struct buf *out, const char *name, const char *value,
		const char *lf, size_t lflen)
{
	size_t col = strlen(name) + 1;
	const char *p = value;

	buf_adds(out, name);
	buf_addch(out, ':');
	while (*p) {
		const char *e = strchr(p, ' ');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		if (n) {
			if (col > strlen(name) + 1 &&
			    col + 1 + n > FOLD_COLUMNS) {
				buf_add(out, lf, lflen);
				col = 0;
			}
			buf_addch(out, ' ');
			buf_add(out, p, n);
			col += 1 + n;
		}
		if (!e)
			break;
		p = e + 1;
	}
	return buf_add(out, lf, lflen);
}

static int ed25519_sign(unsigned char sig[ED25519_SIG_SIZE],
			const struct patatt_key *key, const unsigned char *m,
			size_t n)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t siglen = ED25519_SIG_SIZE;
	int ok;

	/* a copy of the key's context set up once: OpenSSL 3 looks the
	 * algorithm up again, under a lock, at each EVP_DigestSignInit() */
	ok = ctx && EVP_MD_CTX_copy_ex(ctx, key->sign_ctx) == 1 &&
	     EVP_DigestSign(ctx, sig, &siglen, m, n) == 1 &&
	     siglen == ED25519_SIG_SIZE;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : err_set(PB_ERROR, "ed25519: signing failed");
}

static int ed25519_verify(const unsigned char pub[PATATT_KEY_SIZE],
			  const unsigned char *sig, const unsigned char *m,
			  size_t n)
{
	EVP_PKEY *pk = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub,
						   PATATT_KEY_SIZE);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int rc;

	if (!pk || !ctx)
		rc = err_set(PB_ERROR, "ed25519: the key was not accepted");
	else if (EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pk) != 1)
		rc = err_set(PB_ERROR, "ed25519: cannot verify");
	else if (EVP_DigestVerify(ctx, sig, ED25519_SIG_SIZE, m, n) != 1)
		rc = err_set(PB_EINVAL, "failed to validate signature");
	else
		rc = 0;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(pk);
	return rc;
}

/* The line end the mail's header ends with: patatt's self.lf. */
static void line_end(const struct msg *m, const char **lf, size_t *n)
{
	if (m->lflen >= 2 && m->lf[m->lflen - 2] == '\r') {
		*lf = "\r\n";
		*n = 2;
	} else {
		*lf = "\n";
		*n = 1;
	}
}

static int sign_fields(struct buf *out, const struct canon *c,
		       const struct patatt_key *key, const char *identity,
		       const char *selector, int64_t t)
{
	struct buf hashed = BUF_INIT(PATATT_MAIL_MAX);
	struct buf val = BUF_INIT(SIG_VALUE_MAX);
	struct buf b = BUF_INIT(SIG_VALUE_MAX);
	unsigned char signed_msg[ED25519_SIG_SIZE + DIGEST_SHA256_SIZE];
	char pk[PATATT_KEY_B64_SIZE];
	const char *h, *lf;
	size_t lflen, i;
	int rc;

	if (!field_last(&c->m, "from") || !field_last(&c->m, "subject"))
		return err_set(PB_EINVAL, "a mail without From or Subject "
					  "cannot be attested");
	/* set_headers(mode='sign'): the required ones and Message-ID */
	h = field_last(&c->m, "message-id") ? "from:subject:message-id" :
					      "from:subject";
	buf_addf(&val, "v=1; a=ed25519-sha256; t=%lld; l=%zu; i=%s; ",
		 (long long)t, c->bodylen, identity);
	if (selector)
		buf_addf(&val, "s=%s; ", selector);
	buf_addf(&val, "h=%s; bh=", h);
	b64_encode(&val, c->bh, sizeof(c->bh));
	buf_adds(&val, "; b=");
	rc = buf_error(&val);
	if (rc)
		goto out;
	canon_fields(&hashed, c, h);
	buf_adds(&hashed, "x-developer-signature:");
	rc = buf_addbuf(&hashed, &val);
	if (rc)
		goto out;
	sha256(signed_msg + ED25519_SIG_SIZE, hashed.data, hashed.len);
	rc = ed25519_sign(signed_msg, key, signed_msg + ED25519_SIG_SIZE,
			  DIGEST_SHA256_SIZE);
	if (rc)
		goto out;
	rc = b64_encode(&b, signed_msg, sizeof(signed_msg));
	if (rc)
		goto out;
	/* DevsigHeader.splitter(): 73 bytes, then 75s, blank-separated */
	for (i = 0; i < b.len;) {
		size_t n = i ? 75 : 73;

		if (n > b.len - i)
			n = b.len - i;
		if (i)
			buf_addch(&val, ' ');
		buf_add(&val, b.data + i, n);
		i += n;
	}
	line_end(&c->m, &lf, &lflen);
	fold(out, SIG_HDR, val.data, lf, lflen);
	buf_reset(&val);
	patatt_key_public_b64(pk, key);
	buf_addf(&val, "i=%s; a=ed25519; pk=%s", identity, pk);
	rc = fold(out, KEY_HDR, val.data, lf, lflen);
out:
	buf_release(&hashed);
	buf_release(&val);
	buf_release(&b);
	return rc;
}

static int identity_ok(const char *identity, const char *selector)
{
	const char *p;

	if (!identity || !strchr(identity, '@'))
		return err_set(PB_EINVAL, "the identity must be an address");
	for (p = identity; *p; p++)
		if (*p <= ' ' || *p == ';' || (unsigned char)*p >= 0x7f)
			return err_set(PB_EINVAL,
				       "the identity must be one word of "
				       "ASCII without \";\"");
	for (p = selector ? selector : ""; *p; p++)
		if (*p <= ' ' || *p == ';' || *p == '/' ||
		    (unsigned char)*p >= 0x7f)
			return err_set(PB_EINVAL,
				       "the selector must be one word of "
				       "ASCII without \";\" or \"/\"");
	return 0;
}

int patatt_sign(struct buf *out, const char *msg, size_t len,
		const struct patatt_key *key, const char *identity,
		const char *selector, int64_t t)
{
	struct canon c;
	int rc = identity_ok(identity, selector);

	if (rc)
		return rc;
	rc = canon_read(&c, msg, len);
	if (!rc)
		rc = sign_fields(out, &c, key, identity, selector, t);
	canon_release(&c);
	return rc;
}

int patatt_sign_mail(struct buf *out, const char *msg, size_t len,
		     const struct patatt_key *key, const char *identity,
		     const char *selector, int64_t t)
{
	struct canon c;
	size_t head;
	int rc = identity_ok(identity, selector);

	if (rc)
		return rc;
	rc = canon_read(&c, msg, len);
	if (rc)
		goto out;
	head = (size_t)(c.m.lf - msg);
	buf_add(out, msg, head);
	rc = sign_fields(out, &c, key, identity, selector, t);
	if (!rc)
		rc = buf_add(out, msg + head, len - head);
out:
	canon_release(&c);
	return rc;
}

/* ---- verifying ---- */

void patatt_verdict_init(struct patatt_verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->result = PATATT_NOSIG;
}

void patatt_verdict_release(struct patatt_verdict *v)
{
	free(v->identity);
	free(v->selector);
	free(v->algo);
	free(v->key_src);
	free(v->detail);
	patatt_verdict_init(v);
}

const char *patatt_result_name(enum patatt_result r)
{
	switch (r) {
	case PATATT_VALID:
		return "valid";
	case PATATT_NOSIG:
		return "nosig";
	case PATATT_NOKEY:
		return "nokey";
	case PATATT_BADSIG:
		return "badsig";
	case PATATT_ERROR:
		return "error";
	}
	return "error";
}

/* One signature field's tags (DevsigHeader.from_bytes()). */
struct sigtags {
	struct buf canon; /* the relaxed value, CRLF-ended */
	struct buf flat; /* the same without any blank */
	char *tag[9]; /* v a t l i s h bh b */
};

static const char *const tagnames[] = { "v", "a", "t",	"l", "i",
					"s", "h", "bh", "b" };

static void sigtags_release(struct sigtags *s)
{
	size_t i;

	buf_release(&s->canon);
	buf_release(&s->flat);
	for (i = 0; i < 9; i++)
		free(s->tag[i]);
}

static const char *tag(const struct sigtags *s, const char *name)
{
	size_t i;

	for (i = 0; i < 9; i++)
		if (!strcmp(tagnames[i], name))
			return s->tag[i];
	return NULL;
}

static int sigtags_read(struct sigtags *s, const char *v, size_t n)
{
	const char *p;
	size_t i;

	memset(s, 0, sizeof(*s));
	buf_init(&s->canon, SIG_VALUE_MAX);
	buf_init(&s->flat, SIG_VALUE_MAX);
	if (relaxed(&s->canon, v, n))
		return err_set(PB_EINVAL, "signature field too long");
	for (i = 0; i < s->canon.len; i++)
		if (!isspace((unsigned char)s->canon.data[i]))
			buf_addch(&s->flat, s->canon.data[i]);
	for (p = s->flat.data; *p;) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		const char *eq = memchr(p, '=', len);

		if (eq) {
			for (i = 0; i < 9; i++) {
				if (strlen(tagnames[i]) == (size_t)(eq - p) &&
				    !strncmp(p, tagnames[i],
					     (size_t)(eq - p))) {
					free(s->tag[i]);
					s->tag[i] = xstrndup(
						eq + 1,
						len - (size_t)(eq + 1 - p));
				}
			}
		}
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

/* The verdict about one signature; 0 unless the mail is unreadable. */
static int check_one(struct patatt_verdict *v, const struct canon *c,
		     const struct field *f, patatt_lookup_fn lookup, void *arg)
{
	struct sigtags s;
	struct buf hashed = BUF_INIT(PATATT_MAIL_MAX);
	struct buf b = BUF_INIT(SIG_VALUE_MAX);
	struct buf bhb = BUF_INIT(SIG_VALUE_MAX);
	unsigned char pub[PATATT_KEY_SIZE];
	unsigned char dg[DIGEST_SHA256_SIZE];
	const char *val, *a, *h, *last;
	char *src = NULL;
	size_t n;
	int rc;

	field_value(f, &val, &n);
	patatt_verdict_init(v);
	v->result = PATATT_ERROR;
	if (sigtags_read(&s, val, n)) {
		v->detail = xstrdup(err_msg());
		goto out;
	}
	a = tag(&s, "a");
	v->algo = xstrdup(a ? a : "");
	if (tag(&s, "i")) {
		v->identity = xstrdup(tag(&s, "i"));
	} else {
		/* get_sigs(): i= defaults to the From address */
		const struct field *from = field_last(&c->m, "from");
		struct hdrdecode_mailbox mb;
		const char *fv;
		size_t fn;

		hdrdecode_mailbox_init(&mb);
		if (from) {
			field_value(from, &fv, &fn);
			hdrdecode_mailbox(&mb, fv, fn, hdr_conv, NULL);
		}
		v->identity = xstrdup(mb.email ? mb.email : "");
		hdrdecode_mailbox_release(&mb);
	}
	v->selector =
		xstrdup(tag(&s, "s") ? tag(&s, "s") : PATATT_SELECTOR_DEFAULT);
	if (tag(&s, "t")) {
		char *end;
		long long t = strtoll(tag(&s, "t"), &end, 10);

		v->time = *end ? 0 : t;
	}
	if (!a || strncmp(a, "ed25519", 7)) {
		v->detail = xasprintf("%s/%s: algorithm %s is not checked "
				      "here",
				      v->identity, v->selector, a ? a : "none");
		goto out;
	}
	rc = lookup(pub, &src, v->identity, v->selector, arg);
	v->key_src = src;
	if (rc == PB_ENOTFOUND) {
		v->result = PATATT_NOKEY;
		v->detail = xasprintf("%s/%s: no matching ed25519 key found",
				      v->identity, v->selector);
		goto out;
	}
	if (rc) {
		v->detail = xasprintf("%s/%s: the key: %s", v->identity,
				      v->selector, err_msg());
		goto out;
	}
	v->result = PATATT_BADSIG;
	/* set_headers(mode='validate'): From and Subject must be signed */
	h = tag(&s, "h");
	{
		char *hl = xasprintf(":%s:", h ? h : "");
		char *q;

		for (q = hl; *q; q++)
			*q = (char)tolower((unsigned char)*q);
		if (!strstr(hl, ":from:") || !strstr(hl, ":subject:")) {
			v->detail = xstrdup("From and Subject are not signed");
			free(hl);
			goto out;
		}
		free(hl);
	}
	b64_encode(&bhb, c->bh, sizeof(c->bh));
	if (!tag(&s, "bh") || strcmp(tag(&s, "bh"), bhb.data)) {
		v->detail = xstrdup("body content validation failed");
		goto out;
	}
	if (!tag(&s, "b") || !*tag(&s, "b")) {
		v->result = PATATT_ERROR;
		v->detail = xstrdup("missing \"b=\" value");
		goto out;
	}
	/* validate(): the value up to its last "b=", then b= itself */
	last = NULL;
	for (val = s.canon.data; (val = strstr(val, "b=")); val++)
		last = val;
	canon_fields(&hashed, c, h);
	buf_adds(&hashed, "x-developer-signature:");
	buf_add(&hashed, s.canon.data, (size_t)(last - s.canon.data) + 2);
	if (buf_error(&hashed)) {
		v->detail = xstrdup("header too long");
		goto out;
	}
	sha256(dg, hashed.data, hashed.len);
	if (b64_decode(&b, last + 2, strlen(last + 2)) ||
	    b.len < ED25519_SIG_SIZE) {
		v->detail = xstrdup("failed to validate signature");
		goto out;
	}
	if (ed25519_verify(pub, (const unsigned char *)b.data,
			   (const unsigned char *)b.data + ED25519_SIG_SIZE,
			   b.len - ED25519_SIG_SIZE)) {
		v->detail = xstrdup("failed to validate signature");
		goto out;
	}
	if (!tag(&s, "t")) {
		v->detail = xstrdup("t= field is required for ed25519 sigs");
		goto out;
	}
	if (b.len != ED25519_SIG_SIZE + sizeof(dg) ||
	    memcmp(b.data + ED25519_SIG_SIZE, dg, sizeof(dg))) {
		v->detail = xstrdup("header validation failed");
		goto out;
	}
	v->result = PATATT_VALID;
out:
	sigtags_release(&s);
	buf_release(&hashed);
	buf_release(&b);
	buf_release(&bhb);
	return 0;
}

/* Which of two failures a caller hears of: the worst. */
static int worse(enum patatt_result a, enum patatt_result b)
{
	static const int rank[] = { [PATATT_VALID] = 0,
				    [PATATT_NOSIG] = 1,
				    [PATATT_NOKEY] = 2,
				    [PATATT_ERROR] = 3,
				    [PATATT_BADSIG] = 4 };

	return rank[a] > rank[b];
}

int patatt_verify(struct patatt_verdict *out, const char *msg, size_t len,
		  patatt_lookup_fn lookup, void *arg)
{
	struct canon c;
	size_t i;
	unsigned nsigs = 0;
	int rc;

	patatt_verdict_init(out);
	rc = canon_read(&c, msg, len);
	if (rc) {
		canon_release(&c);
		return rc;
	}
	for (i = 0; i < c.m.nf; i++) {
		struct patatt_verdict v;

		if (!field_is(&c.m.f[i], "x-developer-signature"))
			continue;
		nsigs++;
		check_one(&v, &c, &c.m.f[i], lookup, arg);
		if (out->result == PATATT_VALID ||
		    (nsigs > 1 && v.result != PATATT_VALID &&
		     !worse(v.result, out->result))) {
			patatt_verdict_release(&v);
			continue;
		}
		patatt_verdict_release(out);
		*out = v;
	}
	out->nsigs = nsigs;
	if (!nsigs)
		out->detail = xstrdup("no signatures found");
	canon_release(&c);
	return 0;
}

int patatt_lookup_dir(unsigned char pub[PATATT_KEY_SIZE], char **src,
		      const char *identity, const char *selector, void *arg)
{
	const char *dir = arg;
	struct buf rel = BUF_INIT(PB_HEADER_VALUE_MAX);
	struct buf text = BUF_INIT(4096);
	char *path = NULL;
	int rc;

	rc = patatt_keyring_path(&rel, identity, selector);
	if (rc)
		goto out;
	path = xasprintf("%s/%s", dir, rel.data);
	rc = file_read(&text, path);
	if (rc == PB_ENOTFOUND) {
		err_set(rc, "no key %s", path);
		goto out;
	}
	if (!rc)
		rc = patatt_pubkey_parse(pub, text.data, text.len);
	if (!rc && src)
		*src = xstrdup(path);
out:
	free(path);
	buf_release(&rel);
	buf_release(&text);
	return rc;
}
