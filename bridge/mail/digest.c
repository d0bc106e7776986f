#include "mail/digest.h"

#include "util/err.h"
#include "util/xalloc.h"

#include <glib.h>
#include <stdlib.h>

/* g_checksum_update() takes a signed length. */
static void checksum_update(GChecksum *cs, const void *p, size_t len)
{
	const unsigned char *s = p;

	while (len > 0) {
		size_t chunk = len > (size_t)G_MAXSSIZE ? (size_t)G_MAXSSIZE :
							  len;

		g_checksum_update(cs, s, (gssize)chunk);
		s += chunk;
		len -= chunk;
	}
}

void digest_sha256(unsigned char out[DIGEST_SHA256_SIZE], const void *p,
		   size_t len)
{
	GChecksum *cs = g_checksum_new(G_CHECKSUM_SHA256);
	gsize n = DIGEST_SHA256_SIZE;

	BUG_ON(!cs);
	checksum_update(cs, p, len);
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

struct digest_sha1 {
	GChecksum *cs;
};

struct digest_sha1 *digest_sha1_new(void)
{
	struct digest_sha1 *d = xmalloc(sizeof(*d));

	d->cs = g_checksum_new(G_CHECKSUM_SHA1);
	BUG_ON(!d->cs);
	return d;
}

void digest_sha1_update(struct digest_sha1 *d, const void *p, size_t len)
{
	checksum_update(d->cs, p, len);
}

void digest_sha1_final(struct digest_sha1 *d,
		       unsigned char out[DIGEST_SHA1_SIZE])
{
	gsize n = DIGEST_SHA1_SIZE;

	g_checksum_get_digest(d->cs, out, &n);
	BUG_ON(n != DIGEST_SHA1_SIZE);
	g_checksum_reset(d->cs);
}

void digest_sha1_free(struct digest_sha1 *d)
{
	if (!d)
		return;
	g_checksum_free(d->cs);
	free(d);
}
