/*
 * emailattest - what vouches for a series posted to the list, checked
 * before anything of it is pushed (emailmr.h).
 *
 * Each mail of the series (the cover letter and every patch) is checked
 * in turn, the stronger proof first:
 *
 *  - a patatt signature (mail/patatt.h) whose key is in the project's
 *    keyring, a directory in patatt's layout ED25519/DOMAIN/LOCAL/SELECTOR
 *    (`[project] attest_keyring`), made by the series' sender (the
 *    signature's i= is the sender's address): the mail is what its
 *    author signed, byte for byte in what git am reads of it;
 *  - else an aligned DKIM pass, or a DMARC pass, in the trusted
 *    Authentication-Results (the rule approvals follow, review.h): the
 *    sender's domain sent the mail as it is.
 *
 * A patatt signature with a key of the keyring that does not verify is a
 * failure of its own (the mail changed after it was signed, or was
 * signed by another key), whatever DKIM says: `[project]
 * email_require_attestation` refuses the series for it, as for a mail
 * nothing vouches for.  A signature whose key is not in the keyring, or
 * made by someone other than the sender, proves nothing here and leaves
 * the mail to DKIM.
 *
 * emailattest_describe() writes what was verified for the merge request's
 * description, one line when every mail says the same:
 *
 *	Attested by alice@example.org, ed25519, key from the project
 *	keyring (each of the 3 mails).
 *
 * else a line per mail.  emailattest_why() says in one line why a series
 * is refused.  Text from the mails (identities, patatt's details) is
 * cleaned to one line.
 *
 * Ownership: struct emailattest owns its strings (emailattest_release()).
 * Thread safety: a mail of another charset needs mail_init() first.
 * Errors: PB_ELIMIT from the bufs; a mail that cannot be read is a mail
 * nothing vouches for, not an error.
 */
#ifndef PB_OUTBOUND_EMAILATTEST_H
#define PB_OUTBOUND_EMAILATTEST_H

#include "util/buf.h"

#include <stddef.h>

struct review_options;

enum emailattest_kind {
	EMAILATTEST_NONE, /* nothing vouches for the mail */
	EMAILATTEST_DKIM, /* an aligned DKIM pass, or a DMARC pass */
	EMAILATTEST_PATATT, /* the sender's patatt signature, keyring key */
	EMAILATTEST_BAD, /* a patatt signature that does not verify */
};

struct emailattest_mail {
	int patch; /* 0: the cover letter, else k of k/N */
	enum emailattest_kind kind;
	char *identity; /* PATATT: the signature's i=; DKIM: the sender */
	char *how; /* PATATT: "ed25519"; DKIM: "DKIM" or "DMARC" */
	char *detail; /* NONE, BAD: why, in a few words; else NULL */
	/* the trusted Authentication-Results verify its sender, as an
	 * approval's sender must be (whatever kind vouches for it) */
	int verified;
};

struct emailattest {
	struct emailattest_mail *mails;
	size_t nr, alloc;
	int total; /* N of k/N */
};

struct emailattest_opts {
	const char *keyring; /* the project keyring; NULL or "": none */
	const struct review_options *ro; /* the trusted A-R fields */
	const char *sender; /* the series' sender (case ignored) */
};

void emailattest_init(struct emailattest *a);
void emailattest_release(struct emailattest *a);

/* Check one mail raw[0..len) of the series and add its verdict. */
int emailattest_add(struct emailattest *a, const char *raw, size_t len,
		    int patch, const struct emailattest_opts *o);

/* 1 when every mail is attested or DKIM/DMARC-verified. */
int emailattest_ok(const struct emailattest *a);

int emailattest_describe(struct buf *out, const struct emailattest *a);
int emailattest_why(struct buf *out, const struct emailattest *a);

#endif
