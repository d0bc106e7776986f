/*
 * series - one MR revision as the mails of a patch series.
 *
 * Turns a loaded range (gitrepo.h) and the MR's metadata into the mails
 * git format-patch --cover-letter and git send-email would make:
 *
 *  - a cover letter "[PATCH vN 0/M] <MR title>" from a template (see
 *    templates/cover-letter.txt for the placeholders): the description
 *    wrapped at 72, the MR, from v2 on "Changes in vN" with a range-diff
 *    against the previous revision, a note on left-out merges, shortlog,
 *    diffstat, base-commit, Link;
 *  - one mail per commit "[PATCH vN k/M] <title>"; v1 says no "v1", k is
 *    zero-padded to the width of M (as git does); a single patch gets no
 *    cover letter unless asked, and reads "[PATCH vN] <title>";
 *  - the body of a patch is the commit message, "---", diffstat, summary
 *    and diff, then a "-- " signature, byte for byte what git
 *    format-patch writes after its headers, so `git am` rebuilds the
 *    commit; when the mail's From is not the commit author, an in-body
 *    "From:" line carries the author (as git send-email does), and an
 *    in-body "Date:" the author date whenever the mail's Date differs;
 *  - a series longer than max_series becomes the cover letter alone, with
 *    fetch instructions for refs/merge-requests/IID/head.
 *
 * Determinism (DESIGN.md rule 5): nothing depends on the clock, the
 * environment or the order of hash tables.  The Date of mail k is the
 * revision's date (opts->date: the daemon stores when it first saw the
 * revision; `format` uses the head commit's committer date) plus k
 * seconds, so mail clients sort the series in order (git send-email
 * spaces its mails by a second for the same reason); Message-IDs come
 * from msgid.h.  Rendering the same revision twice gives identical bytes.
 *
 * Untrusted text (MR title, description, names, commit titles) reaches
 * headers only through mailhdr.h (control characters removed, RFC 2047
 * encoded) and the cover letter body only cleaned (template_wrap).
 * Bodies that 8bit cannot carry are quoted-printable (qp.h).
 *
 * Ownership: a series owns its mails; it keeps no pointer into the range
 * or the options.  Thread safety: none shared.
 * Errors: PB_EINVAL for bad options (a missing project, a bad address or
 * domain, an unknown template placeholder), PB_ELIMIT from the caps.
 */
#ifndef PB_OUTBOUND_SERIES_H
#define PB_OUTBOUND_SERIES_H

#include "mail/patatt.h"
#include "outbound/gitrepo.h"
#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

/* One mail as rendered (quoted-printable can triple a patch). */
#define SERIES_MAIL_MAX (3 * (size_t)GITREPO_PATCH_MAX + 1024 * 1024)

/* The cover letter template built into the program, from
 * templates/cover-letter.txt (generated at build time). */
extern const char series_cover_template[];
extern const size_t series_cover_template_len;

enum series_threading {
	SERIES_THREAD_SHALLOW, /* vN's first mail replies to v1's (default) */
	SERIES_THREAD_DEEP, /* ... to v(N-1)'s */
	SERIES_THREAD_NONE, /* each revision starts its own thread */
};

enum series_from {
	SERIES_FROM_BRIDGE, /* "Author via Bridge" <bridge address> */
	SERIES_FROM_AUTHOR, /* the author's own address, where allowed */
};

struct series_opts {
	/* The merge request.  project and iid are required. */
	const char *project; /* "group/project" */
	uint64_t iid;
	unsigned revision; /* 1.. */
	const char *title; /* MR title (NULL: placeholder) */
	const char *description; /* MR description (markdown) */
	const char *url; /* MR web URL */
	const char *author_name; /* MR author (NULL: head commit's) */
	const char *author_username;
	const char *author_email; /* only for SERIES_FROM_AUTHOR */
	const char *source_branch;
	const char *target_branch;
	const char *fetch_url; /* repository to fetch the MR ref from
					(NULL: derived from url) */

	/* Who sends, and to whom. */
	const char *bridge_name; /* "patchbridge" */
	const char *bridge_address; /* required */
	const char *msgid_domain; /* required */
	enum series_from from_mode;
	const char *subject_prefix; /* NULL: "PATCH" */
	const struct strlist *to; /* "addr" or "Name <addr>" each */
	const struct strlist *cc; /* duplicates (of To too) dropped */

	/* Threading. */
	enum series_threading threading;
	/* First mails (cover letter, or the patch of a single-patch
	 * series) of the revisions mailed before, oldest first, ids
	 * without "<>". */
	const struct strlist *prev_roots;
	/* When set, the first mail replies to this id instead
	 * (format --in-reply-to); without "<>". */
	const char *in_reply_to;

	/* Policy. */
	int cover_single; /* a cover letter even for one patch */
	size_t max_series; /* 0: PB_SERIES_MAX_DEFAULT */
	int64_t date; /* the revision's date (see above) */
	int date_tz; /* minutes east of UTC */

	/* Content. */
	const char *cover_template; /* NULL: the built-in one */
	size_t cover_template_len;
	const struct gitrepo_range *prev_range; /* for "Changes in vN" */
	unsigned prev_revision; /* its number (0: revision - 1) */
	/* The cover letter's {{review_threads}} block as written
	 * (openthreads.h), ending in a blank line; NULL: none. */
	const char *review_threads;
	/* Its {{reviewers}} block (reviewers.h); NULL: none. */
	const char *reviewers;
	/* Its {{signatures}} block (commitsig.h); NULL: none. */
	const char *signatures;
	/* A paragraph for the cover letter's notes (NULL: none), e.g. why
	 * it is mailed before its pipeline passed; plain text, LF ends. */
	const char *note;
};

struct series_mail {
	unsigned index; /* 0 = cover letter, 1..total */
	char sha[GITREPO_HEXSZ + 1]; /* commit (cover: head) */
	char *msgid; /* without "<>" */
	char *subject; /* as meant, before encoding */
	struct buf text; /* headers, blank line, body; LF ends */
	int64_t date; /* its Date, Unix seconds */
};

struct series {
	struct series_mail *mails;
	size_t nr;
	unsigned total; /* M: patches in the revision */
	int cover_only; /* longer than max_series */
	char *root_msgid; /* the first mail's id */
};

int series_build(struct series **out, const struct gitrepo_range *range,
		 const struct series_opts *opts);
void series_free(struct series *s);

/*
 * series_build() for a writer that needs one mail at a time (patchbridge
 * format): each mail is handed to sink->each(arg, mail) as soon as it is
 * made, in order, and its text released after, so that the series' mails
 * are never all in memory.  sink->before(arg, i), when set, is called
 * before the mail of range->commits[i] is made: the caller may render
 * that commit's patch only then (gitrepo_range_patch(), on the range it
 * holds without const) and release it in each().  A non-zero return of
 * either stops the build and is returned.  The series left in *out holds
 * every mail's index, sha, Message-ID and subject, with an empty text.
 */
struct series_sink {
	int (*before)(void *arg, size_t commit);
	int (*each)(void *arg, const struct series_mail *mail);
	void *arg;
};
int series_build_each(struct series **out, const struct gitrepo_range *range,
		      const struct series_opts *opts,
		      const struct series_sink *sink);

/*
 * Append one mail in mbox form: the "From <sha> Mon Sep 17 00:00:00 2001"
 * line git format-patch writes, the mail, and a blank line.  Bodies never
 * hold a line starting with "From " (those are quoted-printable), so no
 * >From quoting is needed: git am, b4 and mail readers agree on the split.
 */
int series_mbox_append(struct buf *out, const struct series_mail *mail);

/*
 * The attestation of the mails (mail/patatt.h): each patch and cover
 * letter signed as patatt signs, for identity, over the mail as the
 * list receives it - so it is the last change made to a mail, after
 * its Cc.  The signature's t= is the mail's Date: the same revision
 * signs to the same bytes (rule 5), and b4, which holds t= against
 * the Date, finds them agree.
 */
struct series_attest {
	const struct patatt_key *key;
	const char *identity; /* [bridge] address */
	const char *selector; /* NULL: none written (patatt's "default") */
};

/* Append text[0..len), signed, to out. */
int series_attest_text(struct buf *out, const char *text, size_t len,
		       int64_t date, const struct series_attest *a);

/* The opts defaults: threading shallow, bridge mode, max 100. */
void series_opts_init(struct series_opts *opts);

#endif
