#include "outbound/workq.h"

#include "util/err.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct workq {
	pthread_mutex_t lock;
	struct workq_item *items; /* a ring of alloc slots */
	size_t head, nr, alloc, max;
	int pipe[2]; /* [0] read, [1] write; both non-blocking */
};

int workq_new(struct workq **out, size_t max)
{
	struct workq *q;
	int i;

	*out = NULL;
	q = xcalloc(1, sizeof(*q));
	q->max = max ? max : WORKQ_MAX_DEFAULT;
	if (pipe(q->pipe) < 0) {
		free(q);
		return err_set_errno(PB_ERROR, "work queue: pipe");
	}
	for (i = 0; i < 2; i++) {
		int fl = fcntl(q->pipe[i], F_GETFL);

		fcntl(q->pipe[i], F_SETFL, fl | O_NONBLOCK);
		fcntl(q->pipe[i], F_SETFD, FD_CLOEXEC);
	}
	pthread_mutex_init(&q->lock, NULL);
	*out = q;
	return 0;
}

void workq_free(struct workq *q)
{
	if (!q)
		return;
	close(q->pipe[0]);
	close(q->pipe[1]);
	pthread_mutex_destroy(&q->lock);
	free(q->items);
	free(q);
}

void workq_wake(struct workq *q)
{
	int saved = errno;
	char c = 1;
	ssize_t n;

	/* EAGAIN: the pipe is full, so the reader wakes anyway. */
	do {
		n = write(q->pipe[1], &c, 1);
	} while (n < 0 && errno == EINTR);
	errno = saved;
}

void workq_drain(struct workq *q)
{
	char b[256];
	ssize_t n;

	do {
		n = read(q->pipe[0], b, sizeof(b));
	} while (n > 0 || (n < 0 && errno == EINTR));
}

int workq_fd(const struct workq *q)
{
	return q->pipe[0];
}

static struct workq_item *slot(struct workq *q, size_t i)
{
	return &q->items[(q->head + i) % q->alloc];
}

/* Make room for one more, keeping the ring's order. */
static void grow(struct workq *q)
{
	struct workq_item *n;
	size_t alloc = q->alloc ? q->alloc * 2 : 16, i;

	if (alloc > q->max)
		alloc = q->max;
	n = xcalloc(alloc, sizeof(*n));
	for (i = 0; i < q->nr; i++)
		n[i] = *slot(q, i);
	free(q->items);
	q->items = n;
	q->alloc = alloc;
	q->head = 0;
}

int workq_push(struct workq *q, const char *project, int64_t iid,
	       int64_t updated_ms, const char *reason)
{
	return workq_push_id(q, project, 0, iid, updated_ms, reason);
}

int workq_push_id(struct workq *q, const char *project, int64_t project_id,
		  int64_t iid, int64_t updated_ms, const char *reason)
{
	struct workq_item *it;
	size_t i, len = project ? strlen(project) : 0;
	int rc = 0;

	if (!len || len > WORKQ_PROJECT_MAX || iid <= 0)
		return err_set(PB_EINVAL, "work queue: bad merge request");
	pthread_mutex_lock(&q->lock);
	for (i = 0; i < q->nr; i++) {
		it = slot(q, i);
		if (it->iid == iid && !strcmp(it->project, project)) {
			if (updated_ms > it->updated_ms)
				it->updated_ms = updated_ms;
			if (project_id > 0)
				it->project_id = project_id;
			rc = PB_EEXISTS;
			goto out;
		}
	}
	if (q->nr == q->max) {
		rc = PB_ELIMIT;
		goto out;
	}
	if (q->nr == q->alloc)
		grow(q);
	it = slot(q, q->nr);
	memset(it, 0, sizeof(*it));
	memcpy(it->project, project, len + 1);
	it->iid = iid;
	it->updated_ms = updated_ms;
	it->project_id = project_id > 0 ? project_id : 0;
	if (reason)
		snprintf(it->reason, sizeof(it->reason), "%s", reason);
	q->nr++;
out:
	pthread_mutex_unlock(&q->lock);
	if (rc == PB_EEXISTS)
		return err_set(rc, "work queue: %s!%lld is queued already",
			       project, (long long)iid);
	if (rc == PB_ELIMIT)
		return err_set(rc, "work queue: full (%zu merge requests)",
			       q->max);
	workq_wake(q);
	return 0;
}

int workq_pop(struct workq_item *out, struct workq *q)
{
	int rc = 0;

	pthread_mutex_lock(&q->lock);
	if (!q->nr) {
		rc = PB_ENOTFOUND;
	} else {
		*out = *slot(q, 0);
		q->head = (q->head + 1) % q->alloc;
		q->nr--;
	}
	pthread_mutex_unlock(&q->lock);
	if (rc)
		return err_set(rc, "work queue: empty");
	return 0;
}

size_t workq_len(struct workq *q)
{
	size_t n;

	pthread_mutex_lock(&q->lock);
	n = q->nr;
	pthread_mutex_unlock(&q->lock);
	return n;
}
