/*
 * inbound - list replies from the spool onto the forge (the daemon's part
 * of the inbound direction).
 *
 * Two steps, both restartable at any point (DESIGN.md rules 2 and 3):
 *
 * Ingest (inbound_ingest_spool): claim each spool record (new/ -> cur/)
 * and record it in the inbound journal under its Message-ID.  The record
 * stays in cur/ while its journal row is open: it is the raw mail that
 * the apply step parses again (with the code of the day), so nothing is
 * copied and nothing can be lost between the steps.  A second copy of a
 * recorded mail (Postfix retrying after a tempfail, a replay) goes to
 * done/ at once: a mail is applied once.  A record that does not parse
 * goes to dead/ with the reason (spool_read() does that).  A crash
 * anywhere leaves either a record in new/ or cur/ (spool_recover() puts it
 * back in new/ and ingest finds its row again) or a journal row.
 *
 * A record of Kind submission (a series posted to the list) is handed to
 * inbound_opts.submission instead of being applied as a reply.
 * Apply (inbound_apply_due): claim each due journal row, read the record,
 * find the target patch in the thread map, parse the mail against the
 * diff that was mailed, plan (inbound/plan.h) and apply (inbound/apply.h)
 * its actions.  Then the row is finished and its record moved:
 *
 *	applied  -> done/   every action done (or found done)
 *	ignored  -> done/   not about a bridged MR, not a reply, our own mail
 *	failed              PB_ETEMP: retried after a backoff that doubles
 *	                    from [inbound] retry_base up to retry_max
 *	dead     -> dead/   [inbound] max_attempts used up, a permanent
 *	                    error, or an action the forge refused for good;
 *	                    the reason is in the row (patchbridge status) and
 *	                    in dead/NAME.reason
 *
 * The comment of a reply to a mirrored forge comment, or to a reply the
 * bridge applied, continues that thread.  A reply to a forge comment's
 * mail answers that comment, whatever of its quoted hunk it comments
 * under: its inline comments are folded into the reply in the discussion
 * (plan.h fold_inline), not posted as new diff notes.  Forge users:
 * [inbound] user_map first, then the gluser of the address in
 * owners.yaml, then the forge's own search by address (an admin token
 * sees private addresses).
 *
 * Only one process of a host applies at a time: inbound_new() takes an
 * exclusive lock (flock) on DIR/.inbound.lock of the spool and fails with
 * PB_ETEMP while another holds it (the daemon, or a replay --apply-now).
 * Holding it, nobody else on this host can be mid-action, so
 * inbound_new() also recovers what a killed applier of this host left:
 * its journal rows APPLYING -> RECEIVED (store_inbound_recover) and
 * spool records cur/ -> new/ (spool_recover); the action journal and the
 * forge markers make the re-run exactly once.
 *
 * Several hosts on one PostgreSQL state: each host journals what its own
 * milter spooled, with the spool record, and applies it; a mail spooled
 * on two hosts is journaled once (the other copy is filed as a
 * duplicate).  Because the journal keeps the record, another host takes
 * a mail over when it has waited a lease ([state] lease) unclaimed, or
 * its claim expired: the host that spooled it is down or stuck.  A claim
 * is renewed at each forge write; a host that finds its claim taken over
 * (it hung longer than the lease) stops and leaves the mail
 * (stats.taken_over).  Only the host that spooled a record files it in
 * its spool's done/ or dead/: at once when it applied the mail itself,
 * else when its next start's recovery meets the finished row.
 *
 * Configuration: [milter] trusted_authserv_id; [inbound] approval_policy,
 * owners_file, user_map, nak_label, require_auth (per project),
 * retry_base, retry_max, max_attempts; [spool] dir.  owners.yaml and the
 * user map are loaded once per inbound object, when first needed.
 *
 * Ownership: cfg, store and forge are borrowed and must outlive the
 * object; the spool handle and the lock are its own.  mail_init() must
 * have been called.  Threads: one thread at a time.
 * Errors: 0 or a negative code with err_msg() set; PB_ETEMP for "try the
 * whole step again later" (the store is busy, another applier runs).
 */
#ifndef PB_INBOUND_INBOUND_H
#define PB_INBOUND_INBOUND_H

#include "core/config.h"
#include "forge/forge.h"
#include "inbound/notify.h"
#include "mail/mail.h"
#include "state/store.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct inbound;

struct inbound_opts {
	const struct config *cfg;
	struct store *store; /* STORE_RW */
	struct forge *forge;
	/* Claim failed rows before their backoff ends (operators: "the
	 * forge is back, retry now"). */
	int retry_now;
	/* The flag a signal handler sets to stop (may be NULL): no record
	 * or row is claimed once it is set; the row being applied is
	 * finished first - unless the forge fails it meanwhile (the client
	 * then gives up at once, gitlab.h): such a row is not counted
	 * against max_attempts' dead letter and is due again at once. */
	const volatile sig_atomic_t *stop;
	/*
	 * A mail the milter spooled as a series posted to the list (Kind
	 * submission), handed over whole: raw[0..len) as received.  The
	 * inbound side holds no git; the caller (the daemon) collects the
	 * mail into its series and opens the merge request once it is
	 * whole.  It returns 0 when done, with the project in project
	 * (size bytes); PB_EPERM when the mail is no submission or not
	 * let in (why in err_msg(): ignored); PB_ELIMIT for a series over
	 * a limit (ignored, as submission_limit); PB_EEXISTS for a mail of
	 * its series seen already (ignored); PB_ETEMP to try again later;
	 * another error makes it a dead letter.  NULL (`replay
	 * --apply-now`): such a mail waits for the daemon (a retry).
	 */
	int (*submission)(void *arg, char *project, size_t size,
			  const char *raw, size_t len);
	void *submission_arg;
	/* How a notice to a sender becomes a mail (inbound/notify.h;
	 * the daemon passes outbound/noticemail.h's); NULL: notices are
	 * recorded, never mailed. */
	notify_render_fn render_notice;
	void *render_arg;
};

struct inbound_stats {
	unsigned long ingested; /* records journaled */
	unsigned long duplicates; /* copies of journaled mails */
	unsigned long corrupt; /* records sent to dead/ unread */
	unsigned long applied;
	unsigned long ignored;
	unsigned long retried; /* rows rescheduled (PB_ETEMP) */
	unsigned long dead;
	unsigned long taken_over; /* left to another host that took the
				     claim over */
};

int inbound_new(struct inbound **out, const struct inbound_opts *opts);
/* NULL allowed.  Releases the lock. */
void inbound_free(struct inbound *ib);

/* Journal every record waiting in the spool. */
int inbound_ingest_spool(struct inbound *ib, int64_t now);
/* Apply every journal row due at now. */
int inbound_apply_due(struct inbound *ib, int64_t now);
/*
 * The daemon's entry point: ingest, then apply what is due; returns when
 * nothing is due any more.  A forge outage is not an error here (the rows
 * wait for their retry); store failures are.
 */
int inbound_run_once(struct inbound *ib, int64_t now);

/* When the next failed row is due (0 when none waits). */
int inbound_next_due(int64_t *out, struct inbound *ib);

void inbound_get_stats(struct inbound_stats *out, const struct inbound *ib);

/*
 * Where a mail belongs: the thread map row it answers (In-Reply-To, then
 * References newest first) or, for a reply to a reply, the journal row of
 * the mail it answers.  *is_ours is set when the mail itself is one the
 * bridge sent (its Message-ID is in the thread map).  PB_ENOTFOUND when
 * it belongs nowhere.  Ids in the mail carry <>; the store's do not.
 */
/*
 * The forge user email maps to in project, as for a reply's trailers
 * ([inbound] user_map, then owners.yaml's gluser, then the forge's
 * search by address), into user (size bytes); "" when none.  The
 * daemon opens a series posted to the list as that user.
 */
int inbound_map_user(char *user, size_t size, struct inbound *ib,
		     const char *project, const char *email);

struct inbound_target {
	char project[STORE_PROJECT_MAX + 1];
	int64_t iid;
	int revision;
	int patch;
};

int inbound_locate(struct inbound_target *out, int *is_ours, struct store *st,
		   const struct mail *m);

/*
 * The Message-ID id ("<x@y>" or "x@y") as the store keys mails: without
 * <> and surrounding blanks, malloc'd.  A mail without one gets
 * "nomsgid.<hash of raw[0..len)>@patchbridge.invalid", so a copy spooled
 * twice still gets the same key.
 */
char *inbound_message_id(const char *id, const char *raw, size_t len);
/*
 * The part of id that inbound_message_id() keys a mail by: without
 * surrounding blanks, leading '<'s and trailing '>'s, any other bytes
 * kept; *len 0 when nothing is left (NULL counts as "").  *start points
 * into id.
 */
void inbound_message_id_span(const char **start, size_t *len, const char *id);

#endif
