/*
 * forgemail - what is said on the forge, mailed to the list.
 *
 * For every MR of an enabled project that has a mailed revision,
 * forgemail_poll() reads the MR's discussions and mails, in note order,
 * each note it has not handled yet (cursor "forgemail:notes:P!IID" = the
 * highest note id handled).  Once they were read, it first looks at the
 * MR's newest notes (order_by updated_at, desc) down to [outbound]
 * poll_overlap before the newest updated_at of the last reading (cursor
 * "forgemail:seen:P!IID", the forge's time in ms): a note created or
 * edited since is among them.  When every note above the notes cursor is
 * one that is never mailed by itself (ours, the bot's, a system note
 * other than an approval given or withdrawn), the cursor moves past them
 * and the discussions are not read (the forge's note entity has no
 * discussion id); anything else (a comment, a reply in an old thread, an
 * internal note, an approval given or withdrawn) has the discussions
 * read as before.  An edited note
 * is not mailed again, either way.  What a note becomes:
 *
 *  - a general comment: a reply to the cover letter of the latest mailed
 *    revision (to patch 1 when the series had no cover);
 *  - a diff note: "Re: [PATCH vN k/M] title", In-Reply-To the patch mail
 *    whose diff as mailed holds the note's line (the revision mailed for
 *    the position's head_sha, else the latest), quoting the hunk down to
 *    that line (forgetext.h), then the comment, a suggestion in it as
 *    the change it makes ("Suggested change to PATH lines A-B:", the
 *    lines it replaces as "-" lines, the suggestion as "+" lines;
 *    forgetext_markdown_note());
 *  - a later note of a discussion (an answered general comment is one
 *    too): under the mail of the discussion's newest mirrored note
 *    (thread map: store_mail_by_discussion());
 *  - an approval (the forge's "approved this merge request" system note):
 *    a reply to the cover letter with "[outbound] approval_trailer: Name
 *    <public email>", or "<id-username@HOST>" (GitLab's own no-reply
 *    form, HOST its commit_email_hostname when the token may read it,
 *    else GitLab's default users.noreply.FORGE-HOST) when the user shows
 *    no public email;
 *  - an approval withdrawn ("unapproved this merge request") that the
 *    list holds as a trailer (the approval's mail, or a list trailer the
 *    bridge approved for): "NAME withdrew the approval given on vN (the
 *    forge no longer counts it)." under the approval's mail, else the
 *    cover letter of vN; no trailer in it, so no tool collects one;
 *  - a review thread mailed to the list and resolved on the forge after
 *    its newest mail ([outbound] mail_resolved): "This thread (PATH:LINE)
 *    was resolved by NAME on the forge." under that mail (for a thread
 *    the bridge made of a list reply's inline comment, under that list
 *    mail: store_action_by_discussion()), once per thread
 *    (event "resolved", its first note's id); resolving makes no note, so
 *    while an MR has threads mailed and open (cursor
 *    "forgemail:open:P!IID", their count) every reading of it reads its
 *    discussions, and as GitLab resolves a thread without touching the MR
 *    every poll reads those MRs (cursor "forgemail:threads:P", their
 *    iids; an MR merged or closed leaves it);
 *  - the MR merged: "applied, thanks" with the final commit of each patch
 *    of the latest revision (as mailed when the merged head is the mailed
 *    head; for a squash, the squash commit and each patch as mailed;
 *    after a rebase, each landed commit paired by patch-id through the
 *    git mirror, see forgemail_set_outbound(), else the new tip), and
 *    the merge commit when there is one; closed: a short notice.
 *
 * Kept on the forge: an internal note (GitLab's internal notes, formerly
 * confidential), every note of a thread whose first note is internal, and
 * a note whose visibility the forge does not give (forge.h) are never
 * mailed; each is logged and counted in cursor FORGEMAIL_KEPT_PREFIX P
 * ("COUNT IID:NOTE" of the last one), which `status` shows.
 *
 * Loop guards: system notes other than approvals given or withdrawn,
 * notes of the bridge's
 * user ([forge] bot_username, or else the token's user as the forge says,
 * forge_whoami()) and notes that end with our hidden marker as the
 * inbound side writes it are not mailed (forgetext_skip()); marker text
 * pasted into another user's note, or anywhere but its end, is mailed.
 * Every mail carries X-Patchbridge-Origin: forge (and the other
 * X-Patchbridge-* headers), which the milter never bridges back.  No
 * Auto-Submitted: these are people's words, and some lists drop
 * auto-submitted mail; the X-Patchbridge-* headers and our Message-ID
 * scheme are the loop guard.
 *
 * Exactly once: each mail's Message-ID comes from the forge event
 * (msgid_format_forge()), and the mail is recorded in the thread map
 * (kind forge-comment, with its note and discussion ids) and put in the
 * outbound queue in the same transaction that moves the note cursor; the
 * outbound sender (outbound_deliver_due()) delivers it.  A re-read note
 * finds its id in the thread map and is not mailed again.
 *
 * Both ways: every comment's mail records its discussion, a general
 * comment's (an individual note on GitLab) too, so that a list reply to
 * it becomes a reply in that discussion (inbound.h); an approval's mail
 * records none (a system note's discussion takes no replies).
 *
 * Which MRs: per project, the MRs updated since the watermark (cursor
 * "forgemail:poll:P", milliseconds), with [outbound] poll_overlap.  A
 * comment does not always move updated_at: GitLab touches the MR through
 * ThrottledTouch, at most once a minute ([forge] touch_interval), so a
 * second comment within the minute leaves the MR out of the listing.  So
 * every MR the listing (or a note webhook, forgemail_mr()) brought is
 * read again at each poll until touch_interval + poll_overlap have
 * passed since, and once more after (cursor "forgemail:recent:P",
 * "IID:UNTIL_MS" entries, at most FORGEMAIL_RECENT_MAX; the notes cursor
 * keeps each comment to one mail).  An
 * MR whose mail fails for a reason that may pass (the forge, the store,
 * the git mirror's fetch for the applied mail) does not hold back the
 * others: it waits in cursor "forgemail:pending:P" ("IID:FIRST_MS:
 * NEXT_MS:TRIES" entries) and is retried on its own with a growing delay
 * (30 s doubling up to 5 min) while the watermark moves on.  After an
 * hour of failures the applied mail no longer waits for the mirror: it
 * names the new tip and each patch as mailed.
 *
 * Ownership: forgemail_new() borrows cfg, store and forge.
 * Errors: 0 or a negative code from util/err.h; PB_ETEMP when the forge or
 * the store failed in a way that may pass (the cursors are not moved).
 */
#ifndef PB_OUTBOUND_FORGEMAIL_H
#define PB_OUTBOUND_FORGEMAIL_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct forge;
struct outbound;
struct store;

struct forgemail;

int forgemail_new(struct forgemail **out, const struct config *cfg,
		  struct store *store, struct forge *forge);
void forgemail_free(struct forgemail *fm);

/*
 * Let the applied mail pair rewritten commits through ob's git mirror
 * (outbound_landed()); borrowed, must outlive fm.  Without it a merge
 * that rewrote the commits names only the new tip.
 */
void forgemail_set_outbound(struct forgemail *fm, struct outbound *ob);

/* Cursor of the notes kept on the forge, + project: "COUNT IID:NOTE". */
#define FORGEMAIL_KEPT_PREFIX "forgemail:kept:"
/* Merge requests re-read for comments, per project (see above). */
#define FORGEMAIL_RECENT_MAX 64

/* Poll every enabled project; *queued counts the mails queued. */
int forgemail_poll(struct forgemail *fm, size_t *queued);

/* Mail what is new on one MR (which must have a mailed revision), and
 * read it again for a while (a note webhook: GitLab said it has one). */
int forgemail_mr(struct forgemail *fm, const char *project, int64_t iid,
		 size_t *queued);

/*
 * Pipelines: for each MR whose latest revision was mailed less than
 * FORGEMAIL_CI_WINDOW_S + [project] pipeline_wait_max ago, the MR's
 * pipelines (the forge's first page, newest first) are read; each that
 * finished (success or failed) on the head of a mailed revision of that
 * age is mailed once per result, in reply to that revision's cover
 * letter (cimail.h has the text), with Message-ID
 * pb.f.cipassed.<pipeline>... or pb.f.cifailed.<pipeline>... recorded in
 * the thread map with the mail in one transaction: a pipeline retried
 * after it failed mails its second result, nothing is mailed twice.
 * Only for projects with [project] mail_pipelines.
 */
#define FORGEMAIL_CI_WINDOW_S (24 * 3600)

/* The pipelines of one MR (a Pipeline Hook named it). */
int forgemail_pipelines(struct forgemail *fm, const char *project, int64_t iid,
			size_t *queued);
/* The pipelines of every recent MR of every enabled project. */
int forgemail_poll_pipelines(struct forgemail *fm, size_t *queued);

#endif
