/*
 * approval - may this trailer become an approval? (DESIGN.md rule 4)
 *
 * A pure decision over facts the caller gathered, so the table can be
 * tested without a forge.  The checks run in this order and the first
 * that fails is the answer; facts that only a later check reads (the
 * forge user, the owners.yaml verdict) need not be looked up when an
 * earlier one fails:
 *
 *   1. the type is Acked-by, Reviewed-by or Tested-by (others - Reported-
 *      by, Suggested-by, Cc ... - are only mentioned in the comment);
 *   1a. the sender is not a review bot (a bot's Tested-by reports a
 *      run, not a person's judgement: the trailer is posted as words);
 *   2. the same mail does not NAK;
 *   2a. the MIME parser raised no critical warning (MAIL_F_AMBIGUOUS:
 *      other software may read the message differently, so what we
 *      read as a trailer may not be what a human sees);
 *   2b. the trailer is a line of its own (git interpret-trailers and b4
 *      read no other): a tag inside a sentence ("Series is Acked-by:
 *      ...", TRAILER_F_IN_SENTENCE) is shown, never honoured, since a
 *      sentence can say the opposite ("You do not have my Acked-by");
 *   2c. it stands in a trailer block (TRAILER_F_BLOCK): a paragraph of
 *      trailer lines only, so no sentence before or after it can negate
 *      it or make it wait;
 *   2d. its value is exactly "Name <address>" or the address alone, with
 *      no remark after it and no hidden or direction-changing character
 *      on the line (not TRAILER_F_LOOSE);
 *   3. the trailer names the sender: its email equals the From address
 *      (ASCII case ignored), or it has no email and its name is the From
 *      display name (blanks collapsed, case ignored; Outlook's "Last,
 *      First" read as "First Last"): then the From address stands in for
 *      the missing one.  A trailer with no address and another name is
 *      informal and never approves.  Nobody approves on someone else's
 *      behalf;
 *   3a. the mail's In-Reply-To, References and subject agree on one MR
 *      and revision (else the mail may be steered onto another MR than
 *      the one its sender saw it under);
 *   3b. the trailer is the sender's own words: it does not appear in any
 *      mail this one answers (a quotation, however it is formatted),
 *   3c. and the mail it answers is one the bridge has (else what it
 *      quotes cannot be told from what the sender wrote);
 *   4. the sender is authenticated (an aligned DKIM or a DMARC pass from
 *      the trusted authserv-id), unless [inbound] require_auth = no;
 *   5. approval_policy is not "none";
 *   6. the address maps to a forge user (user_map, then the forge);
 *   7. with approval_policy "owners", the address is a maintainer or
 *      reviewer in owners.yaml of a subsystem the patch (for series scope:
 *      the revision) touches.  With "forge", GitLab's own rules decide
 *      when we approve as that user (a 401 then becomes a comment).
 *
 * Thread-safe, no allocation, no errors.
 */
#ifndef PB_INBOUND_APPROVAL_H
#define PB_INBOUND_APPROVAL_H

#include "core/config.h"
#include "mail/mail.h"
#include "mail/trailers.h"

enum approval_verdict {
	APPROVAL_GRANT,
	APPROVAL_NOT_APPROVAL, /* a trailer type that never approves */
	APPROVAL_BOT, /* the sender is a review bot */
	APPROVAL_NAK, /* the mail NAKs as well */
	APPROVAL_AMBIGUOUS, /* the MIME structure reads two ways */
	APPROVAL_IN_SENTENCE, /* the tag sits inside a sentence */
	APPROVAL_NOT_IN_BLOCK, /* not in a paragraph of trailers only */
	APPROVAL_LOOSE, /* a value other than "Name <address>" */
	APPROVAL_NOT_SENDER, /* it names someone else (or nobody) */
	APPROVAL_THREAD_CONFLICT, /* the headers name other MRs/revisions */
	APPROVAL_QUOTED, /* the trailer is in a mail this one answers */
	APPROVAL_UNACCOUNTED, /* the mail answered is unknown */
	APPROVAL_UNVERIFIED, /* sender not authenticated */
	APPROVAL_DISABLED, /* approval_policy = none */
	APPROVAL_UNMAPPED, /* no forge user for the address */
	APPROVAL_NOT_OWNER, /* not an approver in owners.yaml */
	APPROVAL__COUNT
};

struct approval_facts {
	const char *type; /* canonical trailer type */
	int names_sender; /* approval_names_sender() */
	int bot; /* the sender is a review bot (plan_ctx bot) */
	int nak; /* the mail NAKs */
	int ambiguous; /* MAIL_F_AMBIGUOUS */
	int in_sentence; /* TRAILER_F_IN_SENTENCE */
	int in_block; /* TRAILER_F_BLOCK */
	int loose; /* TRAILER_F_LOOSE */
	int thread_conflict; /* the headers disagree on the MR/revision */
	int quoted; /* in a mail this one answers */
	int unaccounted; /* the answered mail is not known */
	int verified; /* review auth.verified */
	int require_auth; /* [inbound] require_auth */
	enum config_approval_policy policy;
	const char *user; /* the mapped forge user, NULL: none */
	int owner; /* owners policy: an approver of the touched paths */
};

enum approval_verdict approval_decide(const struct approval_facts *f);

/* Check 3 above: does t name the sender from? */
int approval_names_sender(const struct trailer *t,
			  const struct mail_addr *from);

/*
 * Do a and b, of the same type, name the same person: the same address
 * (ASCII case ignored), or the same name (as check 3 compares names)?
 * Generous on purpose: it finds quotations (check 3b).
 */
int approval_same_trailer(const struct trailer *a, const struct trailer *b);

/* A short English reason for a refusal ("" for APPROVAL_GRANT). */
const char *approval_verdict_text(enum approval_verdict v);

/* The verdict as one word, a metric label: "grant", "nak", "unverified",
 * ... (core/metrics.c lists the refusals). */
const char *approval_verdict_token(enum approval_verdict v);

#endif
