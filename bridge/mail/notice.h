/*
 * notice - the private mail that tells the sender of a list reply what
 * the bridge did not do (README "Notices to senders"), or the sender of
 * a series posted to the list why it became no merge request (README
 * "Contributing by email"), and the rules of
 * RFC 3834 ("Recommendations for Automatic Responses to Electronic
 * Mail") on when such a mail must not be sent.
 *
 * notice_screen() reads the raw header of the reply and says whether an
 * automatic answer is allowed:
 *
 *   auto_submitted  Auto-Submitted with any value but "no" (RFC 3834
 *                   section 2: no automatic response to an automatic
 *                   message, whatever kind it is)
 *   bounce          a null envelope sender or Return-Path (section 2:
 *                   never answer to the null address), From MAILER-DAEMON,
 *                   or a delivery report (Content-Type multipart/report,
 *                   RFC 6522)
 *   list            a list robot's own mail: Precedence bulk, list or
 *                   junk (section 2 and 3.1.8's long practice), or From
 *                   the list's posting address or one of its robots
 *                   (LIST-owner, owner-LIST, LIST-request, LIST-bounces).
 *                   A List-Id alone does not count: a person's reply
 *                   relayed by the list server carries the list's
 *                   List-Id, and that person is who is answered
 *   ours            the bridge's own mail (an X-Patchbridge-* field, a
 *                   Message-ID in the bridge's domain, From the bridge)
 *
 * notice_message_id() derives the notice's Message-ID from the reply's,
 * so a retry, a second host or a restart renders the same id and the
 * thread map refuses a second copy.
 *
 * struct notice is what a notice says; outbound/noticemail.h renders it.
 * Ownership: a struct notice owns its reasons; the other strings are
 * borrowed.  Thread safety: pure functions.  Errors: PB_ELIMIT from buf.
 */
#ifndef PB_MAIL_NOTICE_H
#define PB_MAIL_NOTICE_H

#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>

struct notice_screen_in {
	const char *raw; /* the reply as received (its header is read) */
	size_t len;
	const char *envelope_sender; /* MAIL FROM; "" the null sender;
				      * NULL unknown */
	const char *list_address; /* [bridge] list_address; may be "" */
	const char *bridge_address; /* [bridge] address */
	const char *bridge_domain; /* [bridge] domain */
	/* The list wrapped the post for DMARC (mail.h wrapper): its From
	 * is the list's, its author the sender; From is not read. */
	int wrapped;
};

/* NULL when an automatic answer is allowed, else the rule's token (see
 * above); why (size bytes) gets the rule in words. */
const char *notice_screen(const struct notice_screen_in *in, char *why,
			  size_t size);

/* Append the notice's id for the reply's id (without <>):
 * pb.n.<32 hex of SHA-256(reply id)>@domain. */
int notice_message_id(struct buf *out, const char *reply_id,
		      const char *domain);

/*
 * Does the sender's own text ask for no notices ("unsubscribe notices")
 * or for them again ("subscribe notices")?  1 and 0 for those, -1 for
 * neither.  The text must be nothing else: the words alone (case and
 * blanks around them ignored) on the first line the sender wrote, before
 * any quotation or signature, so that a sentence that mentions them is
 * not taken for the request.
 */
int notice_optout_request(const char *text);

enum notice_kind {
	NOTICE_REPLY, /* a list reply: what the bridge did not do */
	NOTICE_SERIES, /* a series posted to the list: why it is no merge
			* request (yet) */
};

struct notice {
	enum notice_kind kind;
	const char *to_name; /* the sender's display name; may be "" */
	const char *to_email; /* the sender's address */
	const char *reply_id; /* the reply's Message-ID, without <> */
	const char *notice_id; /* notice_message_id(), without <> */
	const struct strlist *references; /* the reply's, "<id>" each */
	const char *subject; /* the reply's, decoded; may be "" */
	const char *mr; /* "group/project!12"; a series: "group/project" */
	const char *link; /* the merge request's web address; may be "" */
	const char *date; /* RFC 5322 date of the notice */
	/* What happened and what the sender can do: paragraphs of plain
	 * words, one per reason. */
	struct strlist reasons;
};

void notice_init(struct notice *n);
void notice_release(struct notice *n);

#endif
