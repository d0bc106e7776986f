/*
 * emailmr - a series posted to the list becomes a merge request.
 *
 * Takes a whole series of the state store (state/store_submission.h),
 * applies its patches as git am would (mail/mailinfo.h, gitrepo_am())
 * onto the commit its mails name in "base-commit:" when the mirror has
 * it, else onto the project's target branch; force-pushes the result to
 * a branch under the configured prefix, whose name is made of safe
 * characters only (the sender's local part and the title, each cut to
 * [a-z0-9-], and a hash of the series' Message-ID: a name from a subject
 * never reaches a reference name as written, nor any shell); opens the
 * merge request (forge_create_mr(): title and description from the
 * cover letter, or the single patch's title and body, and the configured
 * label) as the sender's forge user when map_user names one and every
 * mail is verified under ro (GitLab's Sudo, forge_act_as()), else as
 * the bridge with "From: NAME <ADDRESS> by email" at the top; then writes
 * the thread map so that the mails are revision 1 of that merge
 * request, as if the bridge had mailed them: list replies to them are
 * applied by the inbound side, forge comments are mailed in reply to
 * them.  Last, the series is marked opened.
 *
 * A next version (vN, N > 1) of the same sender's topic is force-pushed
 * to that merge request's branch instead, as its next revision: the
 * version it answers (In-Reply-To), else, as b4 finds earlier
 * revisions, the opened series of the same "change-id:" (the cover
 * letter's; a single patch's own), else of the same title when neither
 * has one, whose merge request is still open.  One not newer than the
 * latest that merge request took updates nothing (PB_EINVAL, marked
 * failed).
 *
 * Exactly once: the commits are made with the time the series became
 * whole as committer date, so applying again makes the same commits; the
 * branch name is the series'; the forge keeps one open merge request per
 * branch (forge_create_mr() finds it after a lost answer or a restart);
 * the thread map's rows are insert-or-ignore; the series is finished
 * once (store_submission_finish()).  A process killed anywhere in
 * between is safe to run again on the same series.
 *
 * Ownership: everything in struct emailmr_ctx is borrowed.  Threads: one
 * at a time per store, forge and repository.  Errors: PB_EINVAL when the
 * series does not apply (it is then marked failed; err_msg() names the
 * patch, git's message and the base tried), PB_ENOTFOUND for an unknown
 * or unfinished series, and those of the store, git and forge calls
 * (PB_ETEMP: try again later); PB_EINVAL too when require_attestation
 * refuses it (told through failed, then marked failed; err_msg() says
 * which mail and why).
 */
#ifndef PB_OUTBOUND_EMAILMR_H
#define PB_OUTBOUND_EMAILMR_H

#include "outbound/gitrepo.h"

#include <stddef.h>
#include <stdint.h>

struct store;
struct forge;
struct review;
struct review_options;

/* Longest branch name made, the prefix included. */
#define EMAILMR_BRANCH_MAX 200

/* A series that does not apply, as its sender is told it. */
struct emailmr_failure {
	const char *series_id;
	const char *sender; /* lower case */
	int version, total;
	int patch; /* k of the patch that failed */
	const char *patch_subject; /* its title, as git am makes it */
	const char *base; /* the commit tried */
	int base_named; /* 1: the mails' base-commit; 0: the target */
	const char *target_branch;
	const char *git_message; /* git's (libgit2's) words */
	/* not 0: no patch failed, but the series is a version no newer
	 * than taken_version, which merge request taken_iid has taken */
	int64_t taken_iid;
	int taken_version;
	/* not NULL: no patch failed, but the project requires attestation
	 * and this says which mail is not attested and why (emailattest.h,
	 * emailattest_why()); nothing was pushed */
	const char *not_attested;
	const char *first; /* the series' first mail (the cover letter,
			    * else patch 1), as received */
	size_t first_len;
};

/* A forge username, at most. */
#define EMAILMR_USER_MAX 255

/* The forge user of email in project into user (size bytes), "" when
 * there is none; an error (logged by the caller): none either. */
typedef int (*emailmr_user_fn)(char *user, size_t size, const char *project,
			       const char *email, void *arg);

struct emailmr_ctx {
	struct store *st;
	struct forge *forge;
	struct gitrepo *repo; /* the project's mirror */
	const char *project; /* "group/name" */
	const char *push_url; /* the project's git URL */
	const char *token; /* offered to the push; NULL: none */
	const char *target_branch; /* the project's target branch */
	const char *target_sha; /* its commit in the mirror */
	const char *branch_prefix; /* "email/" */
	const char *label; /* "from-email"; NULL or "": none */
	const char *committer_name; /* the bridge's name and address */
	const char *committer_email;
	/* Told of a series that does not apply, before it is marked
	 * FAILED (so a failure to tell is tried again with the series);
	 * NULL: nobody.  An error from it is emailmr_open()'s. */
	int (*failed)(void *arg, const struct emailmr_failure *f);
	void *failed_arg;
	/*
	 * The forge user a sender's address maps to (the mapping reviews
	 * use: user_map, owners.yaml, the forge's own search).  NULL:
	 * every merge request is the bridge's.
	 */
	emailmr_user_fn map_user;
	void *map_arg;
	/* The trust rules of approvals: a merge request is opened as the
	 * sender's user only when every mail of the series is verified by
	 * them; and a mail with no patatt attestation is verified by them
	 * (emailattest.h).  NULL: nobody is. */
	const struct review_options *ro;
	/* What vouches for the series (emailattest.h), checked before
	 * anything is pushed and written into the description: the
	 * project keyring (NULL or "": none), and whether a series that is
	 * not attested is refused (PB_EINVAL, marked failed). */
	const char *attest_keyring;
	int require_attestation;
};

/*
 * Collect one list mail into its series (store_submission_add()), when
 * it is a submission (review.h) that the policy lets in: "off" nobody,
 * "verified" a sender the trusted Authentication-Results verify (as for
 * approvals: review_options' trust rules in ro), "anyone" anyone.  The
 * series is the cover letter's (a cover's own Message-ID; a patch's
 * In-Reply-To, which git send-email points at the cover letter or, with
 * none, at the first patch) or, for a patch that answers nothing, its
 * own.  series_id (size bytes) gets the series' Message-ID, *whole
 * whether this mail made it whole.  PB_EPERM, with why in err_msg(),
 * for a mail that is no submission or that the policy refuses; the
 * rest as store_submission_add() (PB_EEXISTS: seen already).
 */
enum emailmr_policy {
	EMAILMR_OFF,
	EMAILMR_VERIFIED,
	EMAILMR_ANYONE,
};

int emailmr_collect(int *whole, char *series_id, size_t size, struct store *st,
		    const char *project, enum emailmr_policy policy,
		    const struct review_options *ro, const char *raw,
		    size_t len);

/* The same, of raw parsed already into r (review_parse() under the
 * trust rules ro would give it); r may be NULL under EMAILMR_OFF. */
int emailmr_collect_parsed(int *whole, char *series_id, size_t size,
			   struct store *st, const char *project,
			   enum emailmr_policy policy, const struct review *r,
			   const char *raw, size_t len);

/*
 * The series a submission r (review.h) is of: its own Message-ID for a
 * cover letter or a patch that answers nothing, else the Message-ID it
 * answers, unless a series of another version is known under that (a
 * vN patch in reply to an earlier version starts a series of its own).
 * Without "<>"; the caller frees it.
 */
char *emailmr_series_key(struct store *st, const struct review *r);

/* Open series_id (WHOLE) as a merge request; *iid gets its number. */
int emailmr_open(int64_t *iid, const struct emailmr_ctx *c,
		 const char *series_id);

/*
 * The branch of a series: prefix, then "LOCAL/TITLE-HASH" with LOCAL the
 * sender's local part and TITLE the title cut to lower-case letters,
 * digits and single dashes (at most 40 bytes each; "x" when nothing is
 * left), HASH eight hex digits of a hash of series_id.  Into out (size
 * bytes); PB_EINVAL when it is no valid reference name or too long.
 */
int emailmr_branch(char *out, size_t size, const char *prefix,
		   const char *sender, const char *title,
		   const char *series_id);

#endif
