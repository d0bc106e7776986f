/*
 * commitsig - the commits' own signatures, as the forge verified them,
 * for the cover letter.
 *
 * A reader of the list sees the chain of trust: the author signed the
 * commit (OpenPGP, SSH or X.509), the forge verified the signature
 * against the keys its users uploaded (GitLab's commit signature API,
 * forge_commit_signature()), and the bridge mailed it.  commitsig_cover()
 * writes the cover letter's {{signatures}} block from what the forge
 * said of each commit:
 *
 *	Commit signatures, as the forge verified them:
 *	- 1/3 0123456789ab: PGP, verified: John Doe <john@example.com>
 *	  (key 8254AAB3FBD54AC9)
 *	- 2/3 89abcdef0123: not signed
 *	- 3/3 fedcba987654: SSH, verified: key "laptop" of the committer
 *	  Ann Author <ann@example.org>
 *
 * (each entry on one line; here wrapped).  The forge's verdict is quoted
 * as it gives it ("verified", "unverified", "other_user",
 * "unverified_key", ...): only "verified" means that the key is one of
 * the forge user's and the committer's email is one of theirs.  Names,
 * emails and key titles come from the forge's users and are cleaned to
 * one line.  Empty when no commit is signed: the block then says nothing
 * a reader would miss.
 *
 * Thread safety: commitsig_cover() is pure; commitsig_load() uses the
 * forge handle it is given.  Errors: PB_ELIMIT from the output buf.
 */
#ifndef PB_OUTBOUND_COMMITSIG_H
#define PB_OUTBOUND_COMMITSIG_H

#include "forge/forge.h"
#include "outbound/gitrepo.h"
#include "util/buf.h"

#include <stddef.h>

enum commitsig_state {
	COMMITSIG_UNSIGNED, /* the forge found no signature (404) */
	COMMITSIG_SIGNED, /* sig holds the forge's verdict */
};

struct commitsig {
	const char *sha; /* the commit id */
	const char *committer_name;
	const char *committer_email;
	enum commitsig_state state;
	struct forge_signature sig; /* COMMITSIG_SIGNED */
};

int commitsig_cover(struct buf *out, const struct commitsig *c, size_t n);

/*
 * Ask the forge about each commit of r (one call per commit) and set
 * *out to the block, or leave it NULL when there is none.  A forge that
 * fails for now gives PB_ETEMP (the revision waits, as for its review
 * threads); any other failure - a forge without the call, an answer that
 * does not parse - is logged and gives no block.
 */
int commitsig_load(char **out, struct forge *f, const char *project,
		   const struct gitrepo_range *r);

#endif
