/*
 * outbound - mail each new revision of a merge request to the list.
 *
 * The daemon side of forge -> list, used by `patchbridge send`, `run` and
 * (read-only) `status`.  For one MR, outbound_mr():
 *
 *  1. delivers what is still queued for the MR (a revision a crash or a
 *     temporary MTA failure left half sent) - and stops there while a
 *     deferred mail of it is not due, so revisions reach the list in
 *     order;
 *  2. asks the forge for the MR and its diff versions: a closed or merged
 *     MR, a draft (skip_drafts), an MR without a version yet, a head that
 *     was mailed before (store_revision_by_head) and a pure rebase of the
 *     last mailed revision (same patch_id, mail_rebases = no) are left
 *     alone;
 *  3. fetches the MR head, the target branch and the previous revision
 *     into the project's bare mirror (mirror.h), loads the range
 *     base_commit_sha..head_commit_sha of the diff version, and renders
 *     the series (series.h): Message-IDs from the revision number, the
 *     previous revisions' first mails (from the store) for threading, the
 *     previous range for "Changes in vN", Cc per mail;
 *  4. in ONE transaction allocates the revision number
 *     (store_revision_start), records every mail in the thread map
 *     (pending, with the diff as mailed and the version's SHAs) and puts
 *     its exact bytes and envelope in the outbound queue
 *     (store_outmail_put); a crash before the commit leaves nothing, a
 *     crash after it leaves a revision the next start completes;
 *  5. hands the mails to the MTA in order (submit.h), each marked sent
 *     the moment it is accepted (store_outmail_sent).
 *
 * Crash resume and retries: what is queued is never rendered again, so a
 * resumed mail is byte-identical to the first attempt (its Date too: the
 * series is dated when the revision is first rendered, and that date is
 * stored in the queued bytes).  A mail accepted by the MTA is never sent
 * again.  A temporary failure (4xx, connection, sendmail EX_TEMPFAIL, or
 * no verdict after the data was handed over) defers the mail with
 * exponential backoff, OUTBOUND_RETRY_BASE doubling up to
 * OUTBOUND_RETRY_MAX, recorded in the store, and holds back the rest of
 * its revision; after OUTBOUND_RETRY_LIFETIME it fails for good.  A
 * permanent failure (5xx, refused by sendmail) is recorded as failed,
 * logged, shown by `status`, and the rest of the series goes on; the
 * revision then stays "sending" until an operator retries it
 * (outbound_mr() with OUTBOUND_RETRY_FAILED, `send --retry`).
 *
 * Cc (each source switchable per project): the owners (owners.yaml, the
 * project's [inbound] owners_file) of the paths each patch touches, the
 * union of them on the cover letter; the MR author's and reviewers'
 * public emails (users without one are skipped; private addresses are
 * never used, even when the token could see them).  No address twice, and
 * never the list address.  A malformed owners.yaml is logged with its
 * line and column, and the series is mailed without owners Cc.
 *
 * Mutual exclusion: outbound_mr() and outbound_deliver_due() hold an
 * exclusive lock (flock(2) on "<state path>.lock") while they work, so a
 * `send` next to a running daemon waits its turn instead of delivering a
 * mail twice.  A crash releases the lock.
 *
 * The mirror root is "mirrors" in the directory of [state] path.
 *
 * Logging: every line carries "group/project!IID vN" (log_ctx_set()).
 *
 * Ownership: outbound_new() borrows cfg, store, forge and submit (they
 * must outlive the outbound object) and copies the token.
 * Threads: one outbound object belongs to one thread (it uses the store
 * connection and the forge handle it was given).
 * Errors: 0 or a negative code from util/err.h with err_msg() set:
 * PB_ETEMP when the forge, the git fetch or the store failed in a way
 * that may pass (try again later), PB_ENOTFOUND for an unknown project or
 * MR, PB_EINVAL / PB_ELIMIT / PB_ERROR for what retrying cannot fix.  A
 * mail the MTA deferred or refused is not an error of outbound_mr(): the
 * report says so.
 */
#ifndef PB_OUTBOUND_OUTBOUND_H
#define PB_OUTBOUND_OUTBOUND_H

#include "outbound/emailmr.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct config_project;
struct forge;
struct store;
struct submit;
struct workq;

/* Delivery retries: 1 min, 2, 4 ... at most an hour apart, for 5 days. */
#define OUTBOUND_RETRY_BASE 60
#define OUTBOUND_RETRY_MAX 3600
#define OUTBOUND_RETRY_LIFETIME (5 * 24 * 3600)
#define OUTBOUND_REASON_MAX 512

struct outbound_opts {
	const struct config *cfg;
	struct store *store; /* opened STORE_RW */
	struct forge *forge;
	struct submit *submit;
	const char *token; /* for git fetches; NULL: anonymous */
	/* Set (by a signal handler) to stop after the mail being sent. */
	const volatile sig_atomic_t *stop;
};

struct outbound;

int outbound_new(struct outbound **out, const struct outbound_opts *opts);
void outbound_free(struct outbound *ob);

enum outbound_outcome {
	OUTBOUND_NOTHING, /* nothing to mail; reason says why */
	OUTBOUND_ALREADY, /* the current version was mailed as revision */
	OUTBOUND_MAILED, /* revision: every mail accepted now */
	OUTBOUND_PENDING, /* revision: some mails deferred or failed */
	/* Not mailed yet on purpose (a new head waiting for its pipeline,
	 * [project] wait_for_pipeline): reason says why, next_attempt when
	 * to look again. */
	OUTBOUND_WAITING,
};

struct outbound_report {
	enum outbound_outcome outcome;
	int revision; /* the revision concerned, 0 for none */
	int mails; /* mails in that revision */
	int sent; /* mails the MTA accepted during this call */
	int deferred; /* mails waiting for a retry */
	int failed; /* mails refused for good */
	int64_t next_attempt; /* earliest retry of a deferred mail */
	char reason[OUTBOUND_REASON_MAX]; /* NOTHING, PENDING: why */
};

enum outbound_flags {
	/* Mail a draft too; retry deferred mails now (an operator asked). */
	OUTBOUND_FORCE = 1 << 0,
	/* Put the MR's failed mails back in the queue first. */
	OUTBOUND_RETRY_FAILED = 1 << 1,
};

/* Look at project!iid and mail its current revision if that is new. */
int outbound_mr(struct outbound_report *rep, struct outbound *ob,
		const char *project, int64_t iid, unsigned flags);

/*
 * Deliver every queued mail that is due, MR by MR, in order: crash
 * resume at start-up and retries.  *next_due gets the earliest time a
 * deferred mail becomes due (0: none waits).  *sent (may be NULL) counts
 * the mails accepted.
 */
int outbound_deliver_due(struct outbound *ob, int64_t *next_due, int *sent);

/* What outbound_landed() found for one mailed commit. */
enum outbound_landed_state {
	OUTBOUND_LANDED_NONE, /* no landed commit has its patch-id */
	OUTBOUND_LANDED_PAIRED, /* sha: the landed commit that has it */
	/* its patch-id could not be computed, so it was compared with
	 * nothing: the mailed SHA unknown, the commit not in the mirror, a
	 * root or a merge commit */
	OUTBOUND_LANDED_UNKNOWN,
};

struct outbound_landed {
	enum outbound_landed_state state;
	char sha[41]; /* OUTBOUND_LANDED_PAIRED only; else "" */
};

/*
 * Where the mailed commits mailed[0..n) of project!iid landed when a
 * merge rewrote them (GitLab's rebase before a fast-forward or
 * semi-linear merge, or a rebase that was not mailed): the mirror fetches
 * the target branch and landed_head, loads landed_base..landed_head (at
 * most the project's [outbound] max_series commits) and pairs each mailed
 * commit with a landed one of the same `git patch-id --stable`, in order,
 * each landed commit used once.  landed[k] says which, or that none
 * matches (the patch changed while it was rebased), or that mailed[k]
 * (NULL: not known) could not be compared.  Holds the outbound lock
 * while it fetches.  PB_ELIMIT when the landed range is longer than the
 * cap; PB_ETEMP when the fetch failed.
 */
int outbound_landed(struct outbound_landed *landed, struct outbound *ob,
		    const char *project, int64_t iid, const char *target_branch,
		    const char *const *mailed, size_t n,
		    const char *landed_base, const char *landed_head);

/*
 * A mail the milter spooled as a series posted to the list (the inbound
 * side's inbound_opts.submission): the project is the one enabled
 * project whose [project] email_submissions is not off, or, when several
 * are, the one whose subject_prefix opens the mail's tag ("PATCH net"
 * in "[PATCH net 1/3]"); emailmr_collect() takes the mail into its
 * series under that project's policy; when the mail made the series
 * whole, the mirror fetches [project] email_target_branch and
 * emailmr_open() opens the merge request (branch under
 * email_branch_prefix, label from-email).  Before it is collected, a
 * mail is screened (emailnotice_screen(): verified senders, the
 * limits), and a series that does not apply is told to its sender
 * (emailnotice_failed()).  Holds the outbound lock while it uses the
 * mirror.  project (size bytes) gets the project.  Errors
 * as inbound_opts.submission says: PB_EPERM for a mail that is no
 * submission, not let in, or of no project that can be told; PB_ELIMIT
 * for a series over a limit.  A series that does not apply ends there,
 * its sender told: 0 for the mail that completed it.
 */
int outbound_submission(struct outbound *ob, char *project, size_t size,
			const char *raw, size_t len);

/* The reminders of missing patches due now (emailnotice_remind()). */
int outbound_submission_remind(struct outbound *ob, size_t *told);

/* Who outbound_submission() opens a merge request as: the sender's
 * forge user fn names (emailmr.h emailmr_ctx.map_user), for a verified
 * sender; NULL (the default): the bridge. */
void outbound_set_user_map(struct outbound *ob, emailmr_user_fn fn, void *arg);

/* The delay before retry number attempts (>= 1), in seconds. */
int64_t outbound_backoff(int attempts);

/* "group/project!12" -> project and iid; PB_EINVAL when malformed. */
int outbound_parse_mr(char *project, size_t size, int64_t *iid,
		      const char *spec);

#endif
