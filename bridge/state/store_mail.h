/*
 * store_mail - the thread map: every mail the bridge made, its copy
 * on another store, and core/threadmap.h over it.
 *
 * Part of the state store's interface, included by state/store.h:
 * the rules on ownership (the `owned` list and _release()), errors,
 * caps and thread safety are those at the top of store.h.
 */
#ifndef PB_STATE_STORE_MAIL_H
#define PB_STATE_STORE_MAIL_H

#include "core/threadmap.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

struct store;

/*
 * Thread map: every mail the bridge sent, keyed by Message-ID (without
 * the angle brackets).
 */
enum store_mail_kind {
	STORE_MAIL_COVER, /* [PATCH vN 0/M] */
	STORE_MAIL_PATCH, /* [PATCH vN k/M] */
	STORE_MAIL_FORGE_COMMENT, /* a forge note mirrored to the list */
	STORE_MAIL_RECEIPT, /* the bridge's reply about an inbound mail */
};

enum store_mail_state {
	STORE_MAIL_PENDING, /* recorded, not yet accepted by the MTA */
	STORE_MAIL_SENT,
};

/*
 * How the host that recorded a mail sent knew that its MTA had taken it
 * (schema 8; rows from before read as STORE_SENT_MTA).
 */
enum store_sent_how {
	STORE_SENT_MTA, /* the MTA's answer, recorded at once */
	STORE_SENT_ARCHIVE, /* handed, outcome unknown; found in the list
			     * archive, so not sent again */
	STORE_SENT_LATE, /* the MTA's answer, recorded once the database
			  * was back (kept in memory meanwhile) */
};
const char *store_sent_how_name(enum store_sent_how how);

struct store_mail {
	const char *message_id;
	const char *project; /* "group/project" */
	int64_t iid; /* MR iid, > 0; 0 for a receipt of no MR (schema 12) */
	/* Revision as mailed (1 = v1), or 0 for none; a non-zero revision
	 * must have been started with store_revision_start(). */
	int revision;
	int patch; /* k: 0 = cover letter */
	int total; /* M */
	enum store_mail_kind kind;
	const char *commit_sha; /* the patch's commit; NULL for others */
	/* The GitLab diff version the mail belongs to; NULL/0 if unknown. */
	const char *base_sha;
	const char *start_sha;
	const char *head_sha;
	int64_t version_id;
	/* The diff as mailed (for inline-comment resolution); may be NULL. */
	const char *diff;
	size_t diff_len;
	/* For forge-comment mails: the note and discussion mirrored. */
	const char *discussion_id;
	int64_t note_id; /* 0 = none */
	enum store_mail_state state;
	int64_t created;
	int64_t sent; /* 0 while pending */
	/* The host that recorded it sent (read only; NULL before). */
	const char *sent_by;
	/* How that host knew the MTA had it (read only; STORE_SENT_MTA
	 * before). */
	enum store_sent_how sent_how;
	struct strlist owned; /* strings the store filled in (see above) */
};

#define STORE_MAIL_INIT \
	{               \
		0       \
	}

void store_mail_init(struct store_mail *m);
void store_mail_release(struct store_mail *m);
const char *store_mail_kind_name(enum store_mail_kind kind);

struct store_mail_list {
	struct store_mail *items;
	size_t nr;
	size_t alloc;
};

void store_mail_list_release(struct store_mail_list *list);

/*
 * Copy the thread map (its mails and the revisions they belong to) from
 * src into dst, a store opened STORE_RW: every mail created at or after
 * *since (0: all), in pages of STORE_MIRROR_PAGE, each page one
 * transaction of dst; rows dst has are brought up to date (state, sent,
 * sent by).  Then *since is the newest creation time copied; *copied
 * (may be NULL) how many rows were.  For a host's local copy of a shared
 * thread map, which the milter reads when the database does not answer
 * in time: call it again with *since moved back by how long a writer's
 * transaction may stay open (the lease), so rows committed late are
 * copied too.  A failure leaves the pages already copied.
 */
#define STORE_MIRROR_PAGE 500
int store_threadmap_mirror(struct store *dst, struct store *src, int64_t *since,
			   size_t *copied);

/*
 * Record a mail (insert or ignore): PB_EEXISTS, leaving the stored row
 * unchanged, when the Message-ID is already there; so re-running a series
 * never duplicates.  m->created is ignored (now is used); m->sent is used
 * only for state SENT (0 = now).
 */
int store_mail_put(struct store *st, const struct store_mail *m);
/* pending -> sent, at now, by this host.  PB_ENOTFOUND for an unknown
 * Message-ID. */
int store_mail_mark_sent(struct store *st, const char *message_id);
/* When the MTA last accepted a mail of the bridge's (Unix time; 0: none
 * yet): what tells whether the milter sees the list's mail (health.h). */
int store_mail_last_sent(int64_t *out, struct store *st);
int store_mail_get(struct store_mail *out, struct store *st,
		   const char *message_id);
/* The cover letter (patch 0) or patch k of a mailed revision. */
int store_mail_find(struct store_mail *out, struct store *st,
		    const char *project, int64_t iid, int revision, int patch);
/* Every mail of a revision (appended to out): cover, patches 1..M, then
 * other mails threaded under them, each group in sending order. */
int store_mail_list_revision(struct store_mail_list *out, struct store *st,
			     const char *project, int64_t iid, int revision);
/* The newest mail mirroring a forge discussion / the mail of a note. */
int store_mail_by_discussion(struct store_mail *out, struct store *st,
			     const char *project, const char *discussion_id);
int store_mail_by_note(struct store_mail *out, struct store *st,
		       const char *project, int64_t note_id);

/*
 * The thread map as classification reads it (core/threadmap.h), over this
 * store: *out is filled with functions that call store_mail_get(),
 * store_mail_find(), store_revision_latest() and store_revision_list()
 * and copy the rows.  st is borrowed and must outlive *out.
 */
void store_threadmap(struct threadmap *out, struct store *st);

#endif
