/*
 * patatt - patch attestation as patatt makes it and b4 checks it: an
 * ed25519 signature over a mail's From, Subject and Message-ID and the
 * text git am reads of it, in the mail's own header fields
 *
 *   X-Developer-Signature: v=1; a=ed25519-sha256; t=T; l=L; i=ID;
 *    h=from:subject:message-id; bh=BODYHASH; b=SIGNATURE
 *   X-Developer-Key: i=ID; a=ed25519; pk=PUBLICKEY
 *
 * with the public key found by its reader in a keyring, a directory or
 * a git repository laid out as ed25519/DOMAIN/LOCAL/SELECTOR (patatt's
 * README, "Public key management"; make_pkey_path() in patatt's
 * __init__.py).
 *
 * The canonical form follows patatt 0.6 (__init__.py:
 * PatattMessage.git_canonicalize(), DevsigHeader.set_headers(),
 * set_body(), sign() and validate()), which reads the mail through
 * `git mailinfo --encoding=utf-8 --no-scissors`; this module reads it
 * as git's mailinfo.c does, without running git:
 *
 *   body     the text git mailinfo writes as message and patch: the
 *            transfer encoding (quoted-printable, base64) undone, the
 *            leading blank lines and the in-body "From:", "Subject:",
 *            "Date:" lines dropped (with the blank line that ends
 *            them); then blank lines at the end removed and each line
 *            ended in CRLF, its trailing CRs and LFs dropped (not its
 *            blanks).  bh= is the base64 SHA-256 of that, l= its length.
 *   headers  DKIM "relaxed" (RFC 6376 3.4.2) over the last field of each
 *            name in h=, From and Subject replaced first by what git
 *            mailinfo reads: "NAME <EMAIL>" (an in-body From: wins) and
 *            the subject with its "[PATCH ...]" prefix removed.
 *   digest   SHA-256 of the relaxed fields, each ending in CRLF, and of
 *            "x-developer-signature:" and the signature's own value up
 *            to "b=" (no CRLF).  b= is the base64 of the ed25519
 *            signature of that digest followed by the digest itself
 *            (libsodium's signed-message form, which PyNaCl's sign()
 *            returns and patatt writes as it is).
 *
 * The bytes are hashed as git mailinfo leaves them: Debian 12's git
 * (2.39) given --encoding=utf-8 converts no charset, so neither does
 * this module; a value holding "?q?" goes through Python's
 * email.header decoding first, as patatt's does.  Multipart mails are
 * refused (PB_EINVAL), never signed or checked on a guess.  The
 * signature itself comes from OpenSSL's EVP interface (Ed25519, RFC
 * 8032), SHA-256 from digest.h.
 *
 * Ownership: struct patatt_key is the caller's (patatt_key_free() wipes
 * it); results are appended to the caller's bufs; struct patatt_verdict
 * owns its strings (patatt_verdict_release()).
 * Thread safety: pure, and one key may sign from several threads.
 * Errors: PB_EINVAL for a mail or a key that cannot be read, PB_ELIMIT
 * past PATATT_MAIL_MAX, PB_ERROR when the crypto library fails.
 * patatt_verify() returns 0 for any verdict about the mail: the verdict
 * is in its result.
 */
#ifndef PB_MAIL_PATATT_H
#define PB_MAIL_PATATT_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

#define PATATT_KEY_SIZE 32 /* an ed25519 seed and a public key */
/* base64 of 32 bytes, and a NUL */
#define PATATT_KEY_B64_SIZE 45
/* The largest mail canonicalised. */
#define PATATT_MAIL_MAX (100 * 1024 * 1024)
/* The selector the bridge signs with when none is configured: patatt's
 * own when s= is absent. */
#define PATATT_SELECTOR_DEFAULT "default"

struct patatt_key;

/*
 * The private key from its text: the base64 of the 32-byte seed, what
 * `patatt genkey` writes (surrounding blanks and a trailing newline
 * allowed).  The caller wipes text.
 */
int patatt_key_new(struct patatt_key **out, const char *text, size_t len);
/* A new random key. */
int patatt_key_generate(struct patatt_key **out);
/* Wipe and free; NULL allowed. */
void patatt_key_free(struct patatt_key *key);
/* The private key as patatt keeps it (base64 seed, no newline). */
int patatt_key_private_b64(struct buf *out, const struct patatt_key *key);
/* The public key as a keyring holds it (base64, no newline). */
void patatt_key_public_b64(char out[PATATT_KEY_B64_SIZE],
			   const struct patatt_key *key);

/*
 * The keyring path of identity's key under selector (NULL: "default"):
 * "ed25519/DOMAIN/LOCAL/SELECTOR", lower-cased and each part
 * percent-encoded as Python's urllib.parse.quote_plus() does, so a
 * hostile identity never leaves its directory.  PB_EINVAL for an
 * identity without "@".
 */
int patatt_keyring_path(struct buf *out, const char *identity,
			const char *selector);

/*
 * Sign the mail msg[0..len) (header fields, a blank line, the body; LF
 * or CRLF line ends, no mbox "From " line) for identity under selector
 * (NULL: none written, which readers take as "default") at time t
 * (Unix seconds): append to out the two header fields to add at the
 * end of its header, X-Developer-Signature and X-Developer-Key, folded
 * at 78 columns as patatt folds them and ended as the mail's own
 * lines are.  A mail that already carries one keeps it: the new
 * signature is over the same fields.
 */
int patatt_sign(struct buf *out, const char *msg, size_t len,
		const struct patatt_key *key, const char *identity,
		const char *selector, int64_t t);

/*
 * The same, the whole mail out: msg with the two fields inserted
 * before the blank line that ends its header.
 */
int patatt_sign_mail(struct buf *out, const char *msg, size_t len,
		     const struct patatt_key *key, const char *identity,
		     const char *selector, int64_t t);

enum patatt_result {
	PATATT_VALID = 0, /* a signature verified with a known key */
	PATATT_NOSIG, /* no X-Developer-Signature field */
	PATATT_NOKEY, /* signed, but no key known for its i= and s= */
	PATATT_BADSIG, /* the key is known and the signature fails */
	PATATT_ERROR, /* a signature that cannot be read, or another
			 algorithm (openpgp, openssh: not checked here) */
};

/*
 * Find the public key of identity under selector ("default" when the
 * signature names none): 0 with pub filled, PB_ENOTFOUND when there is
 * none, another code for a failure (it becomes PATATT_ERROR).  src
 * (may be left NULL) names where the key came from, for the verdict.
 */
typedef int (*patatt_lookup_fn)(unsigned char pub[PATATT_KEY_SIZE], char **src,
				const char *identity, const char *selector,
				void *arg);

struct patatt_verdict {
	enum patatt_result result;
	char *identity; /* i= of the signature the verdict is about */
	char *selector; /* s=, or "default" */
	char *algo; /* a= as written ("ed25519-sha256") */
	char *key_src; /* where the key came from (lookup's src), or NULL */
	char *detail; /* one line for a person: why it failed */
	int64_t time; /* t=, 0 when absent */
	unsigned nsigs; /* X-Developer-Signature fields in the mail */
};

void patatt_verdict_init(struct patatt_verdict *v);
void patatt_verdict_release(struct patatt_verdict *v);
/* "valid", "nosig", "nokey", "badsig", "error" */
const char *patatt_result_name(enum patatt_result r);

/*
 * Check the attestations of the mail msg[0..len) with the keys lookup
 * gives.  Each signature is checked as patatt validate checks it (the
 * whole body: l= is not honoured, as patatt's default); the verdict is
 * the first valid one, else the worst failure (BADSIG, then ERROR,
 * then NOKEY) - a mail carrying a valid signature and a forged one
 * passes for the valid one's identity only.  Returns 0 with the
 * verdict in out (initialised), or an error for a mail that cannot be
 * read at all.
 */
int patatt_verify(struct patatt_verdict *out, const char *msg, size_t len,
		  patatt_lookup_fn lookup, void *arg);

/*
 * A lookup over a keyring directory laid out as patatt's (arg: the
 * directory, a const char *): DIR/ed25519/DOMAIN/LOCAL/SELECTOR holding
 * the base64 public key (a symbolic link such as patatt genkey makes
 * for "default" is followed by the system).
 */
int patatt_lookup_dir(unsigned char pub[PATATT_KEY_SIZE], char **src,
		      const char *identity, const char *selector, void *arg);

/* A public key from its base64 text (32 bytes). */
int patatt_pubkey_parse(unsigned char pub[PATATT_KEY_SIZE], const char *text,
			size_t len);

/*
 * The canonical parts, for tests and for saying why a check failed:
 * the body as hashed (CRLF lines) and the relaxed header fields as
 * hashed (h= given, e.g. "from:subject:message-id").
 */
int patatt_canon_body(struct buf *out, const char *msg, size_t len);
int patatt_canon_headers(struct buf *out, const char *msg, size_t len,
			 const char *h);

#endif
