/*
 * emailnotice - what the sender of a series posted to the list is told
 * when it does not become a merge request, or not yet (README
 * "Contributing by email"): a private notice (mail/notice.h, rendered
 * by outbound/noticemail.h from templates/series-notice.txt), in reply
 * to the series' cover letter (or first patch), to the sender alone.
 *
 *   refused    the project takes series from verified senders only
 *              and this one is not (emailnotice_screen()), or the
 *              series is over a limit: [project] email_max_patches,
 *              email_max_bytes, email_series_per_hour
 *   failed     the series does not apply: the patch, git's message,
 *              the base tried (emailnotice_failed(), the emailmr_ctx's
 *              failed hook, before the series is marked FAILED)
 *   missing    a patch has not come [project] email_series_wait after
 *              the series' first mail: which (emailnotice_remind());
 *              the series stays open, and a late patch completes it
 *
 * Once per series and kind: the decision is a notices row (store_notice.h)
 * keyed by the kind's prefix and the series' Message-ID, written in the
 * transaction that queues the notice in the thread map (a receipt, of
 * no merge request: iid 0) and the outbound queue, whose Message-ID
 * comes from that key; so a retry, a restart or a second host finds it
 * there and sends nothing more.  The rules of the reply notices apply:
 * [inbound] notify_sender, RFC 3834 (notice_screen(): no answer to an
 * auto-submitted mail, a bounce, a list robot, the bridge's own), the
 * sender's "unsubscribe notices" and [inbound] notice_rate; each
 * decision is recorded, sent or not.  With email_submissions = off
 * nothing is screened and nobody is told.
 *
 * Ownership: everything borrowed.  Threads: one at a time per store.
 * Errors: the store's (PB_ETEMP: try again), and those of the screen
 * below.
 */
#ifndef PB_OUTBOUND_EMAILNOTICE_H
#define PB_OUTBOUND_EMAILNOTICE_H

#include "outbound/emailmr.h"

#include <stddef.h>
#include <stdint.h>

struct config;
struct config_project;
struct review_options;
struct store;

/* The notices rows' keys: a prefix, then the series' Message-ID. */
#define EMAILNOTICE_REFUSED "refused "
#define EMAILNOTICE_FAILED "failed "
#define EMAILNOTICE_MISSING "missing "

/* How a FAILED notice about a series refused as not attested begins
 * (emailmr_failure.not_attested), so `why` tells it from one that does
 * not apply. */
#define EMAILNOTICE_UNATTESTED                                             \
	"The project opens a merge request only for a series whose every " \
	"mail is attested"

struct emailnotice_ctx {
	struct store *st;
	const struct config *cfg;
	const struct config_project *proj;
};

/*
 * Before a mail is collected into its series (emailmr_collect()): a
 * submission (r, the mail raw parsed by review.h) whose series was
 * refused already is refused again, silently; under EMAILMR_VERIFIED a
 * sender the trusted Authentication-Results do not verify is refused
 * (PB_EPERM); a
 * series over a limit is refused (PB_ELIMIT).  Refused: the sender
 * told once, err_msg() says which rule or limit.  0 for any other
 * mail: emailmr_collect() decides.
 */
int emailnotice_screen(const struct emailnotice_ctx *c,
		       enum emailmr_policy policy, const struct review *r,
		       const char *raw, size_t len);

/* emailmr_ctx.failed, arg a struct emailnotice_ctx. */
int emailnotice_failed(void *arg, const struct emailmr_failure *f);

/*
 * The reminders due at now: each series still collecting longer than
 * its project's email_series_wait, whose sender was told nothing yet,
 * is told which of its patches are missing.  *told (may be NULL) how
 * many were decided.
 */
int emailnotice_remind(struct store *st, const struct config *cfg, int64_t now,
		       size_t *told);

/* "3/5, 5/5" (or "the cover letter"): what series_id still lacks,
 * appended to out; PB_ELIMIT as buf. */
struct buf;
int emailnotice_missing(struct buf *out, struct store *st,
			const char *series_id);

#endif
