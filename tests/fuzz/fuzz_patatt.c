/*
 * libFuzzer target for mail/patatt.c: any bytes as a mail, checked for
 * patch attestations (patatt_verify(), with a key for every identity
 * and with none), canonicalised (patatt_canon_body(),
 * patatt_canon_headers()), and signed (patatt_sign_mail()).
 *
 * Invariants: no crash, hang, over-read (the input is not
 * NUL-terminated) or leak; a mail without an X-Developer-Signature
 * field is NOSIG; whatever is signed verifies with its key as VALID -
 * the canonical form read back from our own output is the one signed.
 *
 *   fuzz_patatt -dict=tests/fuzz/dict/patatt.dict -max_total_time=60 \
 *       corpus/ tests/data/patatt
 */
#include "mail/patatt.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct patatt_key *key;
static unsigned char pub[PATATT_KEY_SIZE];

static int lookup(unsigned char out[PATATT_KEY_SIZE], char **src,
		  const char *identity, const char *selector, void *arg)
{
	(void)identity;
	(void)selector;
	if (!arg)
		return PB_ENOTFOUND;
	memcpy(out, pub, PATATT_KEY_SIZE);
	*src = xstrdup("fuzz");
	return 0;
}

/* Whether msg holds "developer-" in any case, as a field name of
 * patatt's ("X-Developer-Signature", "x-developer-key") may be. */
static int has_developer(const char *msg, size_t size)
{
	static const char word[] = "developer-";
	size_t i, k;

	for (i = 0; i + sizeof(word) - 1 <= size; i++) {
		for (k = 0; k < sizeof(word) - 1; k++)
			if (tolower((unsigned char)msg[i + k]) != word[k])
				break;
		if (k == sizeof(word) - 1)
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *msg = (const char *)data;
	struct patatt_verdict v;
	struct buf b = BUF_INIT(PATATT_MAIL_MAX);
	int have_sig;

	if (!key) {
		char pk[PATATT_KEY_B64_SIZE];

		if (patatt_key_new(
			    &key,
			    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
			    44) ||
		    (patatt_key_public_b64(pk, key), 0) ||
		    patatt_pubkey_parse(pub, pk, strlen(pk)))
			abort();
	}
	have_sig = has_developer(msg, size);
	if (!patatt_verify(&v, msg, size, lookup, &b)) {
		if (!have_sig && v.result != PATATT_NOSIG)
			abort();
		patatt_verdict_release(&v);
	}
	if (!patatt_verify(&v, msg, size, lookup, NULL))
		patatt_verdict_release(&v);
	patatt_canon_body(&b, msg, size);
	buf_reset(&b);
	patatt_canon_headers(&b, msg, size, "from:subject:message-id:to");
	buf_reset(&b);
	if (!patatt_sign_mail(&b, msg, size, key, "fuzz@example.org", NULL,
			      1700000000)) {
		/* what we signed verifies (unless the input carried a
		 * field of its own that fails, which wins as the worse) */
		if (patatt_verify(&v, b.data, b.len, lookup, &b))
			abort();
		if (v.result != PATATT_VALID && !have_sig)
			abort();
		patatt_verdict_release(&v);
	}
	buf_release(&b);
	return 0;
}
