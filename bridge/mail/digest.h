/*
 * digest - SHA-256 (FIPS 180-4) of bytes, from GLib's GChecksum; SHA-1
 * for git's names.
 *
 * The bridge names mail by hashes of what the sender chose: the marker a
 * forge note carries is keyed by the SHA-256 of the Message-ID, and a
 * mail without a Message-ID is named by the SHA-256 of its bytes.  The
 * hash is a cryptographic one because the sender picks the input, and a
 * collision would let one mail stand in for another; it comes from GLib,
 * which GMime links anyway, not from code of our own.  GLib sits behind
 * this module and mail.c only.
 *
 * Pure and thread-safe; no errors.
 */
#ifndef PB_MAIL_DIGEST_H
#define PB_MAIL_DIGEST_H

#include <stddef.h>

#define DIGEST_SHA256_SIZE 32

void digest_sha256(unsigned char out[DIGEST_SHA256_SIZE], const void *p,
		   size_t len);

/* The first 128 bits of it as 32 lower-case hex digits and a NUL. */
#define DIGEST_HEX128_SIZE 33
void digest_sha256_hex128(char out[DIGEST_HEX128_SIZE], const void *p,
			  size_t len);

/*
 * SHA-1 over pieces, for what git names by it: the patch-id of a commit
 * (outbound/gitrepo.c), which must equal git's.  Not for anything a
 * sender could choose to collide.  digest_sha1_final() writes the digest
 * and starts the hash again, empty.  The caller owns the object:
 * digest_sha1_free() it.
 */
#define DIGEST_SHA1_SIZE 20
struct digest_sha1;
struct digest_sha1 *digest_sha1_new(void);
void digest_sha1_update(struct digest_sha1 *d, const void *p, size_t len);
void digest_sha1_final(struct digest_sha1 *d,
		       unsigned char out[DIGEST_SHA1_SIZE]);
void digest_sha1_free(struct digest_sha1 *d);

#endif
