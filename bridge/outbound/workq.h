/*
 * workq - the daemon's one queue of merge requests to look at.
 *
 * Polling (the main thread) and the webhook receiver (libmicrohttpd's
 * threads) both feed it; the main loop takes items off it.  An MR is in
 * the queue at most once (project + iid): a second push while it waits
 * is a no-op, since looking at an MR always looks at its current state.
 * The queue holds at most max items; a push past that is refused with
 * PB_ELIMIT (the webhook then answers 503 and GitLab resends, and the next
 * poll finds the MR anyway).
 *
 * Waking: the queue owns a self-pipe.  Pushing writes a byte to it, and so
 * does workq_wake(), which is async-signal-safe (a signal handler calls it
 * to end the main loop's wait), so the main loop can sleep in poll(2) on
 * workq_fd() until a push, a signal or its own timeout.
 *
 * Threads: push, pop, len and wake may be called from any thread; free
 * only once nobody else uses the queue.  Ownership: items are copied in
 * and out.  Errors: PB_ELIMIT (full), PB_EEXISTS (queued already),
 * PB_ENOTFOUND (empty), PB_EINVAL (bad project or iid), PB_ERROR (no
 * pipe).
 */
#ifndef PB_OUTBOUND_WORKQ_H
#define PB_OUTBOUND_WORKQ_H

#include <stddef.h>
#include <stdint.h>

#define WORKQ_PROJECT_MAX 1024
#define WORKQ_REASON_MAX 31
#define WORKQ_MAX_DEFAULT 10000

struct workq_item {
	char project[WORKQ_PROJECT_MAX + 1];
	int64_t iid;
	int64_t updated_ms; /* the MR's updated_at when known, else 0 */
	char reason[WORKQ_REASON_MAX + 1]; /* "poll", "webhook open" ... */
	/* The project's numeric id when the pusher knew it (a webhook's
	 * project.id), else 0: a webhook names a renamed project by its new
	 * path, which the configuration may not have yet. */
	int64_t project_id;
};

struct workq;

/* max: 0 for WORKQ_MAX_DEFAULT. */
int workq_new(struct workq **out, size_t max);
void workq_free(struct workq *q);

int workq_push(struct workq *q, const char *project, int64_t iid,
	       int64_t updated_ms, const char *reason);
/* The same, with the project's numeric id (> 0) as well. */
int workq_push_id(struct workq *q, const char *project, int64_t project_id,
		  int64_t iid, int64_t updated_ms, const char *reason);
/* Oldest first. */
int workq_pop(struct workq_item *out, struct workq *q);
size_t workq_len(struct workq *q);

/* The read end of the self-pipe: readable after a push or a wake. */
int workq_fd(const struct workq *q);
/* Make workq_fd() readable; async-signal-safe. */
void workq_wake(struct workq *q);
/* Empty the self-pipe (after poll(2) said it is readable). */
void workq_drain(struct workq *q);

#endif
