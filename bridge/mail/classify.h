/*
 * classify - is this list mail a reply to a bridged series, and to what?
 *
 * Pure but for the read-only thread map, so both sides use it: the milter
 * at end of message, and `patchbridge replay`, which feeds mail through
 * the pipeline as the milter would.
 *
 * The milter asks twice.  At the end of the header, classify_headers():
 * classify_early() below, then whether any id of the threading headers
 * is in the thread map (so mail that is no reply to a bridged series is
 * let go before its body comes).  classify_early() looks only at the
 * headers the session collected (classify_header()) and answers the cheap
 * questions without touching the thread map or the body:
 *
 *   loop guard (DESIGN.md rule 6): mail the bridge itself sent is never
 *   bridged back - its own Message-ID follows our scheme with our domain,
 *   it carries an X-Patchbridge or X-Patchbridge-* field, it says
 *   "Auto-Submitted: auto-replied" (RFC 3834 section 5: an automatic
 *   answer to a mail, such as an out-of-office notice), or its From or
 *   envelope sender is the bridge's address.  Other Auto-Submitted
 *   values (auto-generated: a CI run's report) pass: a review bot's
 *   mail is read for its words (review_bot());
 *   unthreaded: no In-Reply-To, no References and no "Re: [PATCH ...
 *   k/M]" subject - nothing can tie it to a series - unless, when some
 *   project takes series posted to the list (opts->submissions), the
 *   subject is "[PATCH ...]" without a reply marker: maybe a new series.
 *
 * classify_eom() then places a candidate, in this order:
 *
 *   1. the thread map (read-only, core/threadmap.h): In-Reply-To, then References
 *      from the newest to the oldest; the first Message-ID the bridge
 *      mailed decides.  The map is the authority.
 *   2. our Message-ID scheme (msgid_parse(), our domain only), in the
 *      same order, when the map is unavailable or has no row: the id
 *      itself names project, MR, revision and patch.
 *   3. the subject, for broken threading, when 1 and 2 placed nothing or
 *      placed the mail on a cover letter (patch 0) while the subject
 *      reads "Re: [PATCH vN k/M] title": a candidate is patch k of an MR
 *      whose latest (open) revision is N with M patches - among the MRs
 *      the threading headers name, or else among all open ones - whose
 *      diff as mailed holds the reply's quoted +/- lines (at least
 *      CLASSIFY_MATCH_MIN of them, CLASSIFY_MATCH_PERCENT of those
 *      quoted), and whose title is the subject's when the thread map
 *      keeps the patch as a whole mail (the daemon keeps only the diff,
 *      so usually the quote decides).  Only exactly one candidate places
 *      the mail; with none or several it is not moved (or not bridged).
 *
 * The parent diff: the thread map's "diff as mailed" for the target, parsed
 * with review_patch_diff() when it was kept as a whole mail, else with
 * diff_parse(); NULL when there is none (review_parse() then reads the
 * quote's own "@@" headers).
 *
 * Ownership: struct classify_input owns copies of the header values it
 * keeps; struct classify_result owns its parent diff.  Both are embedded
 * structs (init / release).  The thread map is borrowed.
 * Thread safety: pure except for the thread map, which the caller uses
 * as its provider allows (the store: one thread at a time).
 * Errors: classify_eom() returns 0 with a verdict; thread-map failures
 * are not errors here - they are logged and the next step is tried - and
 * set result->map_failed so the caller can drop its connection.
 */
#ifndef PB_MAIL_CLASSIFY_H
#define PB_MAIL_CLASSIFY_H

#include "core/threadmap.h"
#include "mail/diff.h"
#include "util/limits.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

/* References kept per mail, and thread-map lookups made for one mail. */
#define CLASSIFY_REFS_MAX 64
#define CLASSIFY_LOOKUPS_MAX 32
/* Quoted diff lines compared by the subject fallback. */
#define CLASSIFY_QUOTED_MAX 2000
/* The subject fallback needs at least this many quoted +/- lines found,
 * and at least CLASSIFY_MATCH_PERCENT of those quoted. */
#define CLASSIFY_MATCH_MIN 2
#define CLASSIFY_MATCH_PERCENT 60

/* What the loop guard and the threading steps need from the headers. */
struct classify_input {
	char *message_id; /* this mail's id, without <>; NULL if none */
	char *in_reply_to; /* first id of In-Reply-To, without <> */
	struct strlist references; /* ids without <>, oldest first */
	char *from; /* addr-spec of From, lower case; NULL if none */
	char *sender; /* envelope sender, lower case; NULL if none */
	int patch_reply; /* Subject "Re: [PATCH ... k/M]", or encoded */
	/* That subject's vN and M, when it is not RFC 2047 encoded (what
	 * the subject fallback needs an open revision of); 0: unknown. */
	int subj_version;
	int subj_total;
	/* Subject "[PATCH ...]" with no reply or forward marker (or
	 * encoded): maybe a patch of a new series (review.h submission) */
	int patch_new;
	/* That subject's vN when it is patch_new and not encoded; 0
	 * otherwise: a "[PATCH v2 ...]" is a next version however it is
	 * threaded (git send-email --in-reply-to=<v1 cover>) */
	int new_version;
	int pb_header; /* an X-Patchbridge or X-Patchbridge-* field */
	int auto_replied; /* Auto-Submitted: auto-replied */
};

void classify_input_init(struct classify_input *in);
void classify_input_release(struct classify_input *in);

/* Note one header field (value unfolded or not, without the name). */
void classify_header(struct classify_input *in, const char *name,
		     const char *value);
/* Note the envelope sender ("<a@b>" or "a@b"; "<>" is the null sender). */
void classify_sender(struct classify_input *in, const char *sender);

/*
 * Parsed diffs of thread-map rows kept between mails (the milter keeps
 * them per configuration generation): the rows of one series are
 * answered again and again, and a row's text never changes, so its
 * parse need not be redone.  get() returns a new reference to the diff
 * parsed from text[0..len) of the row id, or NULL; put() keeps one of
 * its own.  Both are called from any thread.
 */
struct classify_diffs {
	struct diff *(*get)(void *arg, const char *id, const char *text,
			    size_t len);
	void (*put)(void *arg, const char *id, const char *text, size_t len,
		    struct diff *d);
	void *arg;
};

struct classify_opts {
	const char *domain; /* [bridge] domain: right side of our ids */
	const char *address; /* [bridge] address, or NULL */
	const struct classify_diffs *diffs; /* or NULL: parse each time */
	/* Some project takes series posted to the list ([project]
	 * email_submissions): a new series' mail is a SUBMIT, not a PASS. */
	int submissions;
};

enum classify_verdict {
	CLASSIFY_CANDIDATE, /* early only: needs classify_eom() */
	CLASSIFY_PASS, /* not about a bridged series */
	CLASSIFY_LOOP, /* the bridge's own mail */
	CLASSIFY_BRIDGE, /* a reply to a bridged series: spool it */
	CLASSIFY_SUBMIT, /* maybe a new series' mail: spool it */
};

enum classify_via {
	CLASSIFY_VIA_NONE,
	CLASSIFY_VIA_THREAD_MAP,
	CLASSIFY_VIA_MSGID,
	CLASSIFY_VIA_SUBJECT,
};

struct classify_result {
	enum classify_verdict verdict;
	/* Why, as a short token for logs and the test mode:
	 * "own-message-id", "x-patchbridge-header", "auto-submitted",
	 * "from-bridge", "unthreaded", "not-bridged", "thread-map",
	 * "msgid-scheme", "subject", "submission". */
	const char *reason;
	enum classify_via via;
	char project[THREADMAP_PROJECT_MAX + 1]; /* target MR's project */
	int64_t iid;
	int revision; /* 0 = unknown */
	int patch; /* 0 = the cover letter */
	int total; /* M; 0 = unknown */
	char matched_id[PB_MSGID_MAX + 1]; /* the id that placed it */
	struct diff *parent; /* the target's diff as mailed, or NULL */
	int map_failed; /* a thread-map call failed (not: row not found) */
};

void classify_result_init(struct classify_result *res);
void classify_result_release(struct classify_result *res);

const char *classify_via_name(enum classify_via via);

/* Headers only; sets res->verdict to LOOP, PASS or CANDIDATE. */
void classify_early(struct classify_result *res,
		    const struct classify_input *in,
		    const struct classify_opts *opts);

/*
 * Headers and the thread map, before the body: PASS ("not-bridged") when
 * classify_eom() could only pass the mail too - no id of In-Reply-To or
 * References follows our scheme or is in the map, and the subject
 * fallback cannot place it either: the subject is no "Re: [PATCH ...
 * k/M]", or no open MR's latest revision is that vN with M patches (or
 * more than the fallback looks at are); an encoded subject is read only
 * at the end of message.  Otherwise what classify_early() says.  The map is
 * asked only when the scheme placed nothing; its PB_ENOTFOUND is "no
 * such row" (a map provider with no database yet answers that too, and
 * classify_eom() would then pass the mail as well).  tm NULL (the map
 * is down) or a failing lookup (map_failed) leaves a CANDIDATE.  The
 * milter asks this at the end of the header, to let every other mail go
 * without reading its body.
 */
void classify_headers(struct classify_result *res,
		      const struct classify_input *in,
		      const struct threadmap *tm,
		      const struct classify_opts *opts);

/*
 * Place the mail: raw[0..len) is the whole message (read only by the
 * subject fallback), tm the thread map or NULL when it is unavailable.
 * res gets the verdict (PASS, LOOP, BRIDGE or SUBMIT) and, for BRIDGE,
 * the target and parent diff.  SUBMIT ("submission"): nothing placed
 * the mail, opts->submissions is set and its subject is a new patch's;
 * the daemon decides on the whole mail (review.h submission) whether it
 * is one and which series it belongs to.  Returns 0.
 */
int classify_eom(struct classify_result *res, const struct classify_input *in,
		 const char *raw, size_t len, const struct threadmap *tm,
		 const struct classify_opts *opts);

#endif
