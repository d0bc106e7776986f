#include "cmocka_all.h"
#include "mail/digest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void hex(char *out, const unsigned char *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void check(const void *p, size_t len, const char *want)
{
	unsigned char d[DIGEST_SHA256_SIZE];
	char got[2 * DIGEST_SHA256_SIZE + 1];

	digest_sha256(d, p, len);
	hex(got, d, sizeof(d));
	assert_string_equal(got, want);
}

/* The examples of FIPS 180-2 (appendix B) and NIST's SHA-256 examples. */
static void test_nist_vectors(void **state)
{
	char *million;

	(void)state;
	check("abc", 3,
	      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check("", 0,
	      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
	      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	check("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
	      "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
	      112,
	      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
	million = malloc(1000000);
	assert_non_null(million);
	memset(million, 'a', 1000000);
	check(million, 1000000,
	      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

static void test_hex128(void **state)
{
	char h[DIGEST_HEX128_SIZE];

	(void)state;
	digest_sha256_hex128(h, "abc", 3);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223");
}

/* FIPS 180-2's SHA-1 examples, fed in pieces, and the reset after a
 * digest. */
static void test_sha1_pieces(void **state)
{
	static const char two[] =
		"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	struct digest_sha1 *d = digest_sha1_new();
	unsigned char out[DIGEST_SHA1_SIZE];
	char got[2 * DIGEST_SHA1_SIZE + 1];
	size_t i;

	(void)state;
	digest_sha1_update(d, "a", 1);
	digest_sha1_update(d, "bc", 2);
	digest_sha1_final(d, out);
	hex(got, out, sizeof(out));
	assert_string_equal(got, "a9993e364706816aba3e25717850c26c9cd0d89d");
	for (i = 0; i < sizeof(two) - 1; i += 5)
		digest_sha1_update(
			d, two + i,
			sizeof(two) - 1 - i < 5 ? sizeof(two) - 1 - i : 5);
	digest_sha1_final(d, out);
	hex(got, out, sizeof(out));
	assert_string_equal(got, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	digest_sha1_final(d, out);
	hex(got, out, sizeof(out));
	assert_string_equal(got, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	digest_sha1_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nist_vectors),
		cmocka_unit_test(test_hex128),
		cmocka_unit_test(test_sha1_pieces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
