/*
 * store_cursor - named cursors, and a project's state moved to
 * another name.
 *
 * Part of the state store's interface, included by state/store.h:
 * the rules on ownership (the `owned` list and _release()), errors,
 * caps and thread safety are those at the top of store.h.
 */
#ifndef PB_STATE_STORE_CURSOR_H
#define PB_STATE_STORE_CURSOR_H

#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

struct store;

/*
 * Cursors: named watermarks, e.g. "poll:group/project" -> an ISO 8601
 * time, "notes:group/project!12" -> the last note id.  get replaces the
 * contents of out (PB_ELIMIT past out->max).
 */
int store_cursor_get(struct buf *out, struct store *st, const char *name);
int store_cursor_set(struct store *st, const char *name, const char *value);

/*
 * The cursor naming an approval the bridge makes on the forge for a list
 * trailer (project, iid, forge username): set by the inbound side before
 * it approves, read by the forge-to-list side, which must not mail that
 * approval back to the list that already holds the trailer.
 */
#define STORE_CURSOR_LIST_APPROVAL "list-approval:%s!%lld:%s"
/*
 * Beside it, the provenance of that approval, for the applied mail:
 * the trailer as the list has it and how its sender was verified
 * ("Acked-by: Name <email> (DKIM verified)").
 */
#define STORE_CURSOR_LIST_APPROVAL_VIA "list-approval-via:%s!%lld:%s"

/*
 * A problem with the forge only an operator can fix (the token cannot act
 * as the reviewers, ...): "EPOCH-SECONDS TEXT", set by the inbound side
 * when it meets one, emptied when an approval as a reviewer goes through
 * again; `patchbridge status` shows it.
 */
#define STORE_CURSOR_FORGE_PROBLEM "forge:operator-problem"
/*
 * The forge refuses the token itself: "EPOCH TEXT", TEXT what the
 * operator must do; set by the daemon while it lasts, emptied when the
 * token works again; `patchbridge status` shows it.
 */
#define STORE_CURSOR_FORGE_TOKEN "forge:token-problem"

/*
 * Prefix of a project's cursor saying approvals by mail cannot work there
 * (the project requires re-authentication to approve): the text for
 * `patchbridge status`, set by the inbound side when an approval meets
 * the setting, emptied when one goes through in the project.
 */
#define STORE_CURSOR_APPROVAL_REAUTH_PREFIX "approvals:reauth:"

/*
 * Move everything kept under project name from to name to, in one
 * transaction: the revisions, the thread map, the inbound journal, the
 * archive and every cursor whose name holds the path (a trailer's
 * verdict, a forge action and a queued mail are kept by Message-ID and
 * follow their mail).  PB_EEXISTS, changing nothing, when to has state
 * of its own (a row, or its cursor id_prefix + to): two histories are
 * not merged.
 */
int store_project_rename(struct store *st, const char *from, const char *to,
			 const char *id_prefix);
/* The names of the cursors that begin with prefix and hold value,
 * appended to out. */
int store_cursor_names(struct strlist *out, struct store *st,
		       const char *prefix, const char *value);

#endif
