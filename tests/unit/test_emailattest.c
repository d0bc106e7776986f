/*
 * emailattest: what vouches for each mail of a series posted to the list.
 * A patatt signature of the sender with a key of the project keyring
 * (made here with patatt.h, as `patatt sign` makes it; the real patatt's
 * is CTest client_email_mr_attested); else an aligned DKIM pass in the
 * trusted Authentication-Results; a signature that fails is bad whatever
 * DKIM says; one of someone else, or with no key in the keyring, proves
 * nothing.  The description's line, or a line per mail when they differ;
 * the refusal's one line.
 */
#include "cmocka_all.h"
#include "mail/mail.h"
#include "mail/patatt.h"
#include "mail/review.h"
#include "outbound/emailattest.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AR                                                   \
	"Authentication-Results: mx.example.net; dkim=pass " \
	"header.d=example.org\n"

static const char patch[] = "From: Ann Author <ann@example.org>\n"
			    "Subject: [PATCH 1/1] topic: a change\n"
			    "Message-ID: <p1@example.org>\n"
			    "\n"
			    "Why.\n"
			    "---\n"
			    " a.txt | 1 +\n"
			    "diff --git a/a.txt b/a.txt\n"
			    "--- a/a.txt\n"
			    "+++ b/a.txt\n"
			    "@@ -0,0 +1 @@\n"
			    "+a\n";

static char dir[512];

static int group_setup(void **state)
{
	const char *tmp = getenv("TMPDIR");

	(void)state;
	if (mail_init())
		return -1;
	snprintf(dir, sizeof(dir), "%s/pb-emailattest.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

/* The keyring's one file and its directories, deepest first. */
static const char *const made[] = {
	"ring/ed25519/example.org/ann/default",
	"ring/ed25519/example.org/ann",
	"ring/ed25519/example.org",
	"ring/ed25519",
	"ring",
	"",
};

static int group_teardown(void **state)
{
	size_t i;
	char path[700];

	(void)state;
	mail_shutdown();
	for (i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, made[i]);
		if (i == 0)
			unlink(path);
		else
			rmdir(path);
	}
	return 0;
}

/* The keyring DIR/ring with k's public key for ann@example.org. */
static char *keyring(const struct patatt_key *k)
{
	char pk[PATATT_KEY_B64_SIZE];
	char *ring = xasprintf("%s/ring", dir), *path;

	patatt_key_public_b64(pk, k);
	path = xasprintf("%s/ed25519", ring);
	mkdir(ring, 0700);
	mkdir(path, 0700);
	free(path);
	path = xasprintf("%s/ed25519/example.org", ring);
	mkdir(path, 0700);
	free(path);
	path = xasprintf("%s/ed25519/example.org/ann", ring);
	mkdir(path, 0700);
	free(path);
	path = xasprintf("%s/ed25519/example.org/ann/default", ring);
	assert_int_equal(file_write_atomic(path, pk, strlen(pk), 0644), 0);
	free(path);
	return ring;
}

/* msg signed by ann@example.org with k, as `patatt sign` signs. */
static void sign(struct buf *out, const char *msg, size_t len,
		 const struct patatt_key *k, const char *selector)
{
	buf_reset(out);
	assert_int_equal(patatt_sign_mail(out, msg, len, k, "ann@example.org",
					  selector, 1700000000),
			 0);
}

/* A fresh verdict of the one-patch series raw: *a is initialised. */
static void check_one(struct emailattest *a, const struct buf *raw,
		      const struct emailattest_opts *o)
{
	emailattest_init(a);
	a->total = 1;
	assert_int_equal(emailattest_add(a, raw->data, raw->len, 1, o), 0);
}

static void test_patatt_dkim_and_bad(void **state)
{
	struct review_options ro = { .trusted_authserv_id = "mx.example.net",
				     .trusted_fields = 2 };
	struct emailattest_opts o = { NULL, &ro, "ann@example.org" };
	struct patatt_key *k = NULL, *other = NULL;
	struct buf signed_ = BUF_INIT(1 << 20), bad = BUF_INIT(1 << 20);
	struct buf dkim = BUF_INIT(1 << 20), out = BUF_INIT(4096);
	struct emailattest a;
	char *ring, *p;

	(void)state;
	assert_int_equal(patatt_key_generate(&k), 0);
	assert_int_equal(patatt_key_generate(&other), 0);
	ring = keyring(k);
	o.keyring = ring;
	sign(&signed_, patch, strlen(patch), k, NULL);

	/* Signed by the sender, key in the keyring: attested. */
	check_one(&a, &signed_, &o);
	assert_int_equal(a.mails[0].kind, EMAILATTEST_PATATT);
	assert_true(emailattest_ok(&a));
	assert_int_equal(emailattest_describe(&out, &a), 0);
	assert_string_equal(out.data,
			    "Attested by ann@example.org, ed25519, key from "
			    "the project keyring (the one mail).\n");
	emailattest_release(&a);

	/* One byte changed: bad, even with a DKIM pass on top. */
	buf_adds(&bad, AR);
	buf_addbuf(&bad, &signed_);
	p = strstr(bad.data, "\n+a\n");
	p[2] = 'b';
	emailattest_init(&a);
	a.total = 1;
	assert_int_equal(emailattest_add(&a, bad.data, bad.len, 1, &o), 0);
	assert_int_equal(a.mails[0].kind, EMAILATTEST_BAD);
	assert_false(emailattest_ok(&a));
	buf_reset(&out);
	assert_int_equal(emailattest_why(&out, &a), 0);
	assert_string_equal(out.data,
			    "patch 1/1 is not verified: the patatt signature "
			    "of ann@example.org does not verify: body content "
			    "validation failed");
	emailattest_release(&a);

	/* No signature, an aligned DKIM pass: verified by DKIM; the cover
	 * letter alone unverified: a line per mail. */
	buf_adds(&dkim, AR);
	buf_adds(&dkim, patch);
	emailattest_init(&a);
	a.total = 1;
	assert_int_equal(emailattest_add(&a, patch, strlen(patch), 0, &o), 0);
	assert_int_equal(emailattest_add(&a, dkim.data, dkim.len, 1, &o), 0);
	assert_int_equal(a.mails[1].kind, EMAILATTEST_DKIM);
	assert_false(emailattest_ok(&a));
	buf_reset(&out);
	assert_int_equal(emailattest_describe(&out, &a), 0);
	assert_string_equal(out.data,
			    "Checked on receipt:\n"
			    "- 0/1: not verified: no patatt signature, and no "
			    "DKIM/DMARC pass\n"
			    "- 1/1: verified by DKIM for ann@example.org in "
			    "the trusted Authentication-Results\n");
	buf_reset(&out);
	assert_int_equal(emailattest_why(&out, &a), 0);
	assert_string_equal(out.data, "cover letter 0/1 is not verified: no "
				      "patatt signature, and no DKIM/DMARC "
				      "pass");
	emailattest_release(&a);

	/* Signed by a key the keyring does not have, or for another
	 * identity: proves nothing, the mail is left to DKIM. */
	sign(&signed_, dkim.data, dkim.len, other, "laptop");
	check_one(&a, &signed_, &o);
	assert_int_equal(a.mails[0].kind, EMAILATTEST_DKIM);
	emailattest_release(&a);
	o.sender = "bob@example.org";
	sign(&signed_, patch, strlen(patch), k, NULL);
	check_one(&a, &signed_, &o);
	assert_int_equal(a.mails[0].kind, EMAILATTEST_NONE);
	assert_non_null(strstr(a.mails[0].detail,
			       "signed by ann@example.org, not by the sender"));
	emailattest_release(&a);

	patatt_key_free(k);
	patatt_key_free(other);
	free(ring);
	buf_release(&signed_);
	buf_release(&bad);
	buf_release(&dkim);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patatt_dkim_and_bad),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
