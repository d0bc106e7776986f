/*
 * detect - find merge requests that may have a new revision, by polling.
 *
 * Every enabled [project] is asked for the MRs updated since its
 * watermark (forge_list_mrs(): updated_after = watermark - poll_overlap,
 * pagination, the overlap de-duplicated), open ones only.  Each MR found
 * goes on the work queue (workq.h), where webhook deliveries land too;
 * outbound_mr() then decides whether its current version is new.  Drafts
 * are left out here already when skip_drafts is set (one log line each).
 *
 * The watermark survives restarts in the state store, as the cursor
 * "poll:PROJECT" (ISO 8601).  It moves on only after a listing that
 * worked, and never past an MR the daemon still has to look at: every MR
 * a listing queues is held (detect_hold() keeps the stored watermark
 * before that MR's updated_at) until the daemon looked at it and called
 * detect_release(), and so is an MR to look at again after a failure.
 * A stop or crash with MRs still queued (or waiting for a retry) thus
 * loses none: the next start lists them again, and outbound_mr() finds
 * what it mailed already.  The queue itself is not kept: the forge is
 * the record of what is to be looked at.  The watermark a listing saves
 * is therefore held back behind the MRs it queued; detect_checkpoint()
 * saves it again once they were looked at, so a restart does not list
 * them anew.  For
 * `patchbridge status` the cursors "poll-time:PROJECT" (when the last
 * listing worked) and "poll-error:PROJECT" (why the last one failed, ""
 * after a success) are kept too.  With [webhook] enabled, a listing that
 * worked also looks at the project's webhooks, at most every
 * DETECT_HOOKS_CHECK_S: "webhook-problem:PROJECT" says which ones GitLab
 * disabled after failed deliveries (forge_hooks_problem(); "" when none
 * is), for `status`, and each look that finds one logs it.
 *
 * Each project is addressed by its numeric id once known (forge.h,
 * forge_pin_project()): before each listing, detect_project_pin() pins
 * the id kept as "project-id:PROJECT" (or, the first time, the id the
 * forge gives for the configured path, then kept) and asks the forge for
 * the project's path now.  A project renamed or moved to another group
 * keeps its id, so polling, mailing and applying replies go on; its new
 * path is kept as "project-moved:PROJECT" ("" while the configured path
 * is right) for `status`, and a warning tells the operator.
 *
 * Ownership: detect_new() borrows cfg, store and forge (they must outlive
 * it).  Threads: the thread that owns the store and forge handles.
 * Errors: detect_poll() logs and records each project's failure and goes
 * on with the next; it returns the first failure's code (PB_ETEMP when
 * the forge was unreachable), 0 when every project was listed.
 */
#ifndef PB_OUTBOUND_DETECT_H
#define PB_OUTBOUND_DETECT_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct forge;
struct store;
struct workq;

#define DETECT_CURSOR_PREFIX "poll:"
#define DETECT_TIME_PREFIX "poll-time:"
#define DETECT_ERROR_PREFIX "poll-error:"
#define DETECT_PROJECT_ID_PREFIX "project-id:"
#define DETECT_MOVED_PREFIX "project-moved:"
#define DETECT_HOOKS_PREFIX "webhook-problem:"
#define DETECT_FOLLOW_PREFIX "project-follow:"
/* How often the webhooks are looked at (seconds). */
#define DETECT_HOOKS_CHECK_S 900

struct detect;

int detect_new(struct detect **out, const struct config *cfg, struct store *st,
	       struct forge *f);
void detect_free(struct detect *d);

/* One listing of every enabled project; *queued (may be NULL) counts the
 * MRs put on q. */
int detect_poll(struct detect *d, struct workq *q, size_t *queued);

/*
 * Pin project (a configured path) to its id on f, as above, and find
 * where it is now.  *told (may be NULL) is set once the rename was
 * logged, so that a caller that pins at every poll warns once per
 * process and again only when the path changes.  0, or the forge's
 * error when the project could not be read (a known id stays pinned).
 */
int detect_project_pin(struct store *st, struct forge *f, const char *project,
		       int *told);

/*
 * A section renamed as the operator was told: project's id (kept, or the
 * forge's for the path) is kept under another name that no section has
 * any more, so the state of that name (store_project_rename()) becomes
 * project's, and this host's copy of the thread map follows.  When
 * project has state of its own, the two are not merged: the refusal is
 * logged and kept as "project-follow:PROJECT" ("" otherwise) for
 * `status` and `check-config --forge`.  0, or the error that stopped it
 * (the forge's, the state db's): try again later.
 */
int detect_project_follow(struct store *st, struct forge *f,
			  const struct config *cfg, const char *project);

/* The sentence that tells the operator the state of old was not merged
 * into that of project. */
void detect_follow_text(char *out, size_t size, const char *old,
			const char *project);

/* Pin project to the id kept in st, if any, asking the forge nothing
 * (for commands that apply replies without polling). */
void detect_pin_stored(struct store *st, struct forge *f, const char *project);

/* The sentence that tells the operator project is now at path. */
void detect_moved_text(char *out, size_t size, const char *project,
		       const char *path);

/* Keep project's stored watermark at or before updated_ms (> 0) until
 * detect_release() of the same MR. */
void detect_hold(struct detect *d, const char *project, int64_t iid,
		 int64_t updated_ms);
void detect_release(struct detect *d, const char *project, int64_t iid);

/* Store each listed project's watermark as far as the holds now allow
 * (after the queue was worked off). */
void detect_checkpoint(struct detect *d);

#endif
