#include "outbound/emailattest.h"

#include "mail/patatt.h"
#include "mail/review.h"
#include "outbound/mailhdr.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void emailattest_init(struct emailattest *a)
{
	memset(a, 0, sizeof(*a));
}

void emailattest_release(struct emailattest *a)
{
	size_t i;

	for (i = 0; i < a->nr; i++) {
		free(a->mails[i].identity);
		free(a->mails[i].how);
		free(a->mails[i].detail);
	}
	free(a->mails);
	emailattest_init(a);
}

/* "ed25519-sha256" as patatt writes a=, "ed25519" as a key is named. */
static char *algo_name(const char *a)
{
	const char *dash = a ? strchr(a, '-') : NULL;

	if (!a || !*a)
		return xstrdup("ed25519");
	return dash ? xstrndup(a, (size_t)(dash - a)) : xstrdup(a);
}

/*
 * The patatt verdict on one mail: PATATT, BAD, or NONE with why (the
 * mail is then left to DKIM).
 */
static void check_patatt(struct emailattest_mail *m, const char *raw,
			 size_t len, const struct emailattest_opts *o)
{
	struct patatt_verdict v;
	int rc;

	if (!o->keyring || !*o->keyring) {
		m->detail = xstrdup("no project keyring to check a patatt "
				    "signature against");
		return;
	}
	patatt_verdict_init(&v);
	rc = patatt_verify(&v, raw, len, patatt_lookup_dir, (void *)o->keyring);
	if (rc) {
		m->detail = xasprintf("its patatt signature was not read: %s",
				      err_msg());
		goto out;
	}
	switch (v.result) {
	case PATATT_VALID:
		if (!v.identity || !o->sender ||
		    strcasecmp(v.identity, o->sender)) {
			m->detail = xasprintf("signed by %s, not by the sender",
					      v.identity ? v.identity : "?");
			break;
		}
		m->kind = EMAILATTEST_PATATT;
		m->identity = xstrdup(v.identity);
		m->how = algo_name(v.algo);
		break;
	case PATATT_BADSIG:
		m->kind = EMAILATTEST_BAD;
		m->identity = v.identity ? xstrdup(v.identity) : NULL;
		m->detail = xasprintf("the patatt signature of %s does not "
				      "verify%s%s",
				      v.identity ? v.identity : "?",
				      v.detail ? ": " : "",
				      v.detail ? v.detail : "");
		break;
	case PATATT_NOKEY:
		m->detail = xasprintf("signed by %s, whose key is not in the "
				      "project keyring",
				      v.identity ? v.identity : "?");
		break;
	case PATATT_ERROR:
		m->detail = xasprintf("a patatt signature that was not "
				      "checked%s%s",
				      v.detail ? ": " : "",
				      v.detail ? v.detail : "");
		break;
	case PATATT_NOSIG:
		m->detail = xstrdup("no patatt signature");
		break;
	}
out:
	patatt_verdict_release(&v);
}

/* An aligned DKIM pass or a DMARC pass, as approvals are verified: what
 * vouches for a mail no patatt signature does (m->kind NONE), and
 * m->verified for every mail. */
static void check_dkim(struct emailattest_mail *m, const char *raw, size_t len,
		       const struct emailattest_opts *o)
{
	struct review *r = NULL;
	char *why;

	if (review_parse(&r, raw, len, NULL, o->ro))
		return;
	m->verified = r->auth.verified;
	if (m->kind != EMAILATTEST_NONE) {
		/* vouched for by its patatt signature: verified is all */
	} else if (r->auth.verified && r->mail->from.email[0]) {
		m->kind = EMAILATTEST_DKIM;
		m->identity = xstrdup(r->mail->from.email);
		m->how = xstrdup(r->auth.dkim == AR_PASS ? "DKIM" : "DMARC");
		free(m->detail);
		m->detail = NULL;
	} else if (m->detail) {
		why = xasprintf("%s, and no DKIM/DMARC pass", m->detail);
		free(m->detail);
		m->detail = why;
	}
	review_free(r);
}

int emailattest_add(struct emailattest *a, const char *raw, size_t len,
		    int patch, const struct emailattest_opts *o)
{
	struct emailattest_mail *m;

	if (a->nr >= a->alloc) {
		a->alloc = a->alloc ? 2 * a->alloc : 8;
		a->mails = xreallocarray(a->mails, a->alloc, sizeof(*a->mails));
	}
	m = &a->mails[a->nr++];
	memset(m, 0, sizeof(*m));
	m->patch = patch;
	check_patatt(m, raw, len, o);
	check_dkim(m, raw, len, o);
	if (m->kind == EMAILATTEST_NONE && !m->detail)
		m->detail = xstrdup("no patatt signature, and no DKIM/DMARC "
				    "pass");
	return 0;
}

int emailattest_ok(const struct emailattest *a)
{
	size_t i;

	for (i = 0; i < a->nr; i++)
		if (a->mails[i].kind != EMAILATTEST_PATATT &&
		    a->mails[i].kind != EMAILATTEST_DKIM)
			return 0;
	return a->nr > 0;
}

static int add_clean(struct buf *out, const char *s)
{
	return s ? mailhdr_sanitize(out, s, strlen(s)) : 0;
}

/* What vouches for one mail, after "- 1/3: " or alone. */
static int add_verdict(struct buf *out, const struct emailattest_mail *m)
{
	int rc;

	switch (m->kind) {
	case EMAILATTEST_PATATT:
		rc = buf_adds(out, "attested by ");
		if (!rc)
			rc = add_clean(out, m->identity);
		if (!rc)
			rc = buf_adds(out, ", ");
		if (!rc)
			rc = add_clean(out, m->how);
		if (!rc)
			rc = buf_adds(out, ", key from the project keyring");
		return rc;
	case EMAILATTEST_DKIM:
		rc = buf_adds(out, "verified by ");
		if (!rc)
			rc = add_clean(out, m->how);
		if (!rc)
			rc = buf_adds(out, " for ");
		if (!rc)
			rc = add_clean(out, m->identity);
		if (!rc)
			rc = buf_adds(out, " in the trusted "
					   "Authentication-Results");
		return rc;
	case EMAILATTEST_BAD:
	case EMAILATTEST_NONE:
		rc = buf_adds(out, "not verified: ");
		if (!rc)
			rc = add_clean(out, m->detail);
		return rc;
	}
	return 0;
}

/* Do all the mails say the same (kind, identity, how)? */
static int uniform(const struct emailattest *a)
{
	const struct emailattest_mail *f = &a->mails[0];
	size_t i;

	for (i = 1; i < a->nr; i++) {
		const struct emailattest_mail *m = &a->mails[i];

		if (m->kind != f->kind || m->kind == EMAILATTEST_BAD)
			return 0;
		if (m->kind == EMAILATTEST_NONE ?
			    strcmp(m->detail, f->detail) :
			    strcasecmp(m->identity, f->identity) ||
				    strcmp(m->how, f->how))
			return 0;
	}
	return f->kind != EMAILATTEST_BAD;
}

int emailattest_describe(struct buf *out, const struct emailattest *a)
{
	size_t i;
	int rc = 0;

	if (!a->nr)
		return 0;
	if (uniform(a)) {
		struct buf v = BUF_INIT(1024);

		rc = add_verdict(&v, &a->mails[0]);
		if (!rc && v.len)
			v.data[0] = (char)(v.data[0] - 'a' + 'A');
		if (!rc)
			rc = buf_addbuf(out, &v);
		if (!rc && a->nr > 1)
			rc = buf_addf(out, " (each of the %zu mails)", a->nr);
		else if (!rc)
			rc = buf_adds(out, " (the one mail)");
		if (!rc)
			rc = buf_adds(out, ".\n");
		buf_release(&v);
		return rc;
	}
	rc = buf_adds(out, "Checked on receipt:\n");
	for (i = 0; !rc && i < a->nr; i++) {
		rc = buf_addf(out, "- %d/%d: ", a->mails[i].patch, a->total);
		if (!rc)
			rc = add_verdict(out, &a->mails[i]);
		if (!rc)
			rc = buf_addch(out, '\n');
	}
	return rc;
}

int emailattest_why(struct buf *out, const struct emailattest *a)
{
	size_t i;
	int rc;

	if (!a->nr)
		return buf_adds(out, "no mail to check");
	for (i = 0; i < a->nr; i++)
		if (a->mails[i].kind == EMAILATTEST_BAD)
			break;
	if (i == a->nr)
		for (i = 0; i < a->nr; i++)
			if (a->mails[i].kind == EMAILATTEST_NONE)
				break;
	if (i == a->nr)
		return 0;
	rc = buf_addf(out, "%s %d/%d is ",
		      a->mails[i].patch ? "patch" : "cover letter",
		      a->mails[i].patch, a->total);
	if (!rc)
		rc = add_verdict(out, &a->mails[i]);
	return rc;
}
