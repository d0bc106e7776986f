/*
 * store_revision - the mailed revisions of each merge request.
 *
 * Part of the state store's interface, included by state/store.h:
 * the rules on ownership (the `owned` list and _release()), errors,
 * caps and thread safety are those at the top of store.h.
 */
#ifndef PB_STATE_STORE_REVISION_H
#define PB_STATE_STORE_REVISION_H

#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

struct store;

/*
 * Mailed revisions: one row per MR version the bridge mailed.
 */
enum store_revision_state {
	STORE_REVISION_SENDING, /* started; some mails may be pending */
	STORE_REVISION_SENT,
};

struct store_revision {
	const char *project;
	int64_t iid;
	int revision; /* 1 = v1 */
	const char *head_sha;
	const char *base_sha;
	const char *start_sha;
	int64_t version_id; /* GitLab diff version id; 0 = unknown */
	const char *patch_id; /* identifies the patches' content (rebases) */
	int patches; /* number of patch mails (M) */
	const char *cover_msgid;
	enum store_revision_state state;
	int64_t created;
	int64_t sent; /* 0 while sending */
	struct strlist owned; /* strings the store filled in (see above) */
};

void store_revision_init(struct store_revision *rev);
void store_revision_release(struct store_revision *rev);

/*
 * Start mailing a revision: allocate the MR's next revision number
 * atomically and record rev (its ->revision, ->state and times are
 * ignored) as SENDING.  *revision gets the number.  A head SHA on a base
 * is mailed once per MR: when rev->head_sha on rev->base_sha was already
 * started, nothing changes, *revision gets the existing number and the
 * result is PB_EEXISTS.  The same head on a new base (a retarget) is a
 * new revision.
 */
int store_revision_start(int *revision, struct store *st,
			 const struct store_revision *rev);
int store_revision_mark_sent(struct store *st, const char *project, int64_t iid,
			     int revision);
int store_revision_get(struct store_revision *out, struct store *st,
		       const char *project, int64_t iid, int revision);
/* The highest-numbered revision of an MR; PB_ENOTFOUND for none. */
int store_revision_latest(struct store_revision *out, struct store *st,
			  const char *project, int64_t iid);
/* The newest revision mailed with this head (on any base). */
int store_revision_by_head(struct store_revision *out, struct store *st,
			   const char *project, int64_t iid,
			   const char *head_sha);
/* The newest revision of this head on this base (NULL: none known). */
int store_revision_by_base(struct store_revision *out, struct store *st,
			   const char *project, int64_t iid,
			   const char *head_sha, const char *base_sha);

/*
 * Revisions of a project (all of them when project is NULL), by project,
 * MR and revision, at most limit (0: STORE_LIST_MAX); appended to out.
 */
struct store_revision_list {
	struct store_revision *items;
	size_t nr;
	size_t alloc;
};

void store_revision_list_release(struct store_revision_list *list);
int store_revision_list(struct store_revision_list *out, struct store *st,
			const char *project, size_t limit);
/*
 * The latest revision of each MR of project whose latest revision was
 * started at or after since (Unix time), by MR, at most limit (0:
 * STORE_LIST_MAX); appended to out.
 */
int store_revision_recent(struct store_revision_list *out, struct store *st,
			  const char *project, int64_t since, size_t limit);

#endif
