#include "mail/digest.h"

#include "util/err.h"

#include <glib.h>

void digest_sha256(unsigned char out[DIGEST_SHA256_SIZE], const void *p,
		   size_t len)
{
	GChecksum *cs = g_checksum_new(G_CHECKSUM_SHA256);
	const unsigned char *s = p;
	gsize n = DIGEST_SHA256_SIZE;

	BUG_ON(!cs);
	/* g_checksum_update() takes a signed length */
	while (len > 0) {
		size_t chunk = len > (size_t)G_MAXSSIZE ? (size_t)G_MAXSSIZE :
							  len;

		g_checksum_update(cs, s, (gssize)chunk);
		s += chunk;
		len -= chunk;
	}
	g_checksum_get_digest(cs, out, &n);
	BUG_ON(n != DIGEST_SHA256_SIZE);
	g_checksum_free(cs);
}

void digest_sha256_hex128(char out[DIGEST_HEX128_SIZE], const void *p,
			  size_t len)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char d[DIGEST_SHA256_SIZE];
	int i;

	digest_sha256(d, p, len);
	for (i = 0; i < 16; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[32] = '\0';
}
