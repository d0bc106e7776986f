/*
 * provenance - is a reply's text the sender's own, and which merge
 * request does it answer?  (docs/SECURITY.md, "What the bridge acts on")
 *
 * The bridge sees every mail of a bridged conversation: the mails it
 * sent and the list mails its milter spooled are in the mail archive
 * (state/store.h, schema 4).  So it need not guess which part of a reply
 * is quoted: a trailer that already stands in a mail the reply answers
 * (In-Reply-To, References) is a quotation, however the sender's client
 * formatted it (an Outlook top-post in any language, a forward, a paste
 * with no separator at all), and is never acted on.
 *
 * provenance_check() reads, for one reply:
 *
 *   quoted[i]        trailer i of the review (an approval or a NAK) is
 *                    in one of the answered mails the bridge has: on a
 *                    line of it, quoted or not, the same type and person
 *                    (approval_same_trailer()), or the person's address
 *                    and the tag's word on one line or two lines in a
 *                    row (so a form the trailer parser would not take,
 *                    re-wrapped by a client, still counts);
 *   ancestor_nak     one of them has a line that is NAK or NACK alone;
 *   parent_unknown   the mail it answers (In-Reply-To, else the last
 *                    References entry) is not in the archive - answered
 *                    off the list, or no threading at all - or the
 *                    References are longer than PROVENANCE_IDS_MAX;
 *   thread_conflict  the answered mails the bridge placed name more than
 *                    one MR, or a revision newer than the parent's, or
 *                    the subject's [PATCH vN] is not the parent's
 *                    revision: the headers were steered, and the reply is
 *                    posted where its parent is (parent) with nothing
 *                    acted on;
 *   parent           where the parent is (parent_placed), from the
 *                    thread map or the inbound journal.
 *
 * The caller supplies the look-ups (the store in the daemon, a table in
 * the tests).  Ownership: a struct provenance owns quoted.  Pure but for
 * the callbacks; bounded: PROVENANCE_IDS_MAX ids, each mail as the
 * archive holds it (the milter's size limit).
 * Errors: a callback's error other than PB_ENOTFOUND.
 */
#ifndef PB_INBOUND_PROVENANCE_H
#define PB_INBOUND_PROVENANCE_H

#include "mail/mail.h"
#include "mail/review.h"
#include "util/buf.h"
#include "util/limits.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

#define PROVENANCE_IDS_MAX 64
#define PROVENANCE_ID_MAX PB_MSGID_MAX
#define PROVENANCE_PROJECT_MAX 255

struct provenance_place {
	char project[PROVENANCE_PROJECT_MAX + 1];
	int64_t iid;
	int revision; /* 0: unknown */
	int patch;
};

struct provenance_ops {
	/* Where the bridge placed the mail id ("local@domain", no <>):
	 * 0, or PB_ENOTFOUND when it placed no such mail. */
	int (*place)(struct provenance_place *out, const char *id, void *arg);
	/* The archived bytes of mail id into raw; PB_ENOTFOUND: none.
	 * NULL: only the places are read (quoted[], ancestor_nak and
	 * parent_unknown are left 0). */
	int (*archived)(struct buf *raw, const char *id, void *arg);
	void *arg;
};

struct provenance {
	unsigned char *quoted; /* one per trailer of the review */
	size_t nr;
	int ancestor_nak;
	int parent_unknown;
	int thread_conflict;
	int parent_placed;
	struct provenance_place parent;
	size_t ancestors; /* answered mails read from the archive */
};

void provenance_init(struct provenance *p);
void provenance_release(struct provenance *p);

int provenance_check(struct provenance *out, const struct review *r,
		     const struct provenance_ops *ops);

/* "<id>" -> "id" into out[size]; 0 when it is empty or does not fit. */
int provenance_strip_id(char *out, size_t size, const char *id);

/* The ids m answers, without <>, pushed to out: In-Reply-To, then the
 * References newest first, each once. */
void provenance_answered(struct strlist *out, const struct mail *m);

/* Does some line of text[0..len), quote markers removed, name t (as
 * quoted[] above)?  Exposed for the tests. */
int provenance_text_names(const char *text, size_t len,
			  const struct trailer *t);

/* Is some line of text[0..len), quote markers removed, NAK or NACK
 * alone (punctuation allowed)? */
int provenance_text_naks(const char *text, size_t len);

#endif
