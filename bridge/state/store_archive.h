/*
 * store_archive - the mail archive: every mail of an MR's
 * conversation, for `patchbridge export`.
 *
 * Part of the state store's interface, included by state/store.h:
 * the rules on ownership (the `owned` list and _release()), errors,
 * caps and thread safety are those at the top of store.h.
 */
#ifndef PB_STATE_STORE_ARCHIVE_H
#define PB_STATE_STORE_ARCHIVE_H

#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

struct store;

/*
 * Mail archive (schema 4): the exact bytes of every mail of an MR's
 * conversation, for `patchbridge export`.  Each mail the bridge sends is
 * copied here by store_outmail_sent(), in the transaction that records it
 * sent (origin BRIDGE: series, forge comments, receipts); each list mail
 * the milter spooled about an MR is put here by the daemon when it
 * journals the mail (origin LIST), as it was received.  Keyed by
 * Message-ID: the first copy stays.  Mails sent before schema 4 are not
 * archived; the daemon archives the list mails of that time from the
 * spool once; store_archive_missing() counts what is still missing.
 */
enum store_archive_origin {
	STORE_ARCHIVE_BRIDGE, /* sent by the bridge */
	STORE_ARCHIVE_LIST, /* received from the list */
};

struct store_archived {
	const char *message_id;
	const char *project;
	int64_t iid;
	enum store_archive_origin origin;
	/* The message; get fills it, list leaves it NULL. */
	const char *message;
	size_t message_len;
	int64_t created; /* when archived; put: 0 = now */
	struct strlist owned; /* strings the store filled in (see above) */
};

void store_archived_init(struct store_archived *a);
void store_archived_release(struct store_archived *a);
const char *store_archive_origin_name(enum store_archive_origin origin);

struct store_archived_list {
	struct store_archived *items;
	size_t nr;
	size_t alloc;
};

void store_archived_list_release(struct store_archived_list *list);

/* Archive a mail; PB_EEXISTS, changing nothing, when it is there. */
int store_archive_put(struct store *st, const struct store_archived *a);
int store_archive_get(struct store_archived *out, struct store *st,
		      const char *message_id);
/* The archived mails of an MR without their messages, in archiving
 * order, at most limit (0: all of them - an export must not cut the
 * conversation); appended to out. */
int store_archive_list(struct store_archived_list *out, struct store *st,
		       const char *project, int64_t iid, size_t limit);
/* Remove the mails archived before the time before ([state]
 * archive_keep); *removed gets how many. */
int store_archive_prune(int64_t *removed, struct store *st, int64_t before);
/* How many mails of the MR the bridge sent or journaled from the list
 * that are not archived (from before schema 4). */
int store_archive_missing(int64_t *count, struct store *st, const char *project,
			  int64_t iid);

#endif
