#include "outbound/patchahead.h"

#include "util/err.h"
#include "util/limits.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum {
	SLOT_FREE, /* no thread has taken it */
	SLOT_BUSY, /* being rendered */
	SLOT_DONE, /* rendered: commits[i].patch is the caller's to get */
	SLOT_FAILED, /* see fail_* */
};

struct worker {
	struct patchahead *pa;
	struct gitrepo *repo; /* this thread's own */
	pthread_t tid;
};

struct patchahead {
	struct gitrepo_range *range;
	struct gitrepo *repo; /* the caller's */
	unsigned char *state; /* SLOT_*, one per commit */
	struct worker *workers;
	size_t nr_workers; /* threads started */
	size_t jobs; /* the caller included */
	size_t next_claim; /* patches before it are taken */
	size_t next_get; /* patches before it were got */
	size_t inflight; /* bytes of patches rendered and not put */
	size_t wait_for; /* the patch the caller waits for; SIZE_MAX none */
	size_t idle; /* threads waiting for room */
	int stop; /* a patch failed, or patchahead_free() */
	/* The first failed patch: its index (SIZE_MAX none), code and
	 * message, handed to the caller when it gets there. */
	size_t fail_at;
	int fail_rc;
	char fail_msg[PB_ERRMSG_MAX];
	pthread_mutex_t lock;
	pthread_cond_t room; /* a patch was put back, or stop */
	pthread_cond_t ready; /* patch wait_for is rendered or failed */
};

/* May another patch be taken now (lock held)? */
static int can_claim(const struct patchahead *pa)
{
	size_t ahead = pa->next_claim - pa->next_get;

	if (pa->stop || pa->next_claim >= pa->range->nr)
		return 0;
	if (ahead < pa->jobs + 1)
		return 1;
	return ahead < PATCHAHEAD_MAX && pa->inflight < PATCHAHEAD_BYTES_MAX;
}

/*
 * Render patch i with repo, unlocked, and record the outcome (called and
 * returning with the lock held).
 */
static void render(struct patchahead *pa, struct gitrepo *repo, size_t i)
{
	int rc;

	pthread_mutex_unlock(&pa->lock);
	rc = gitrepo_range_patch(repo, pa->range, i);
	pthread_mutex_lock(&pa->lock);
	if (rc) {
		pa->state[i] = SLOT_FAILED;
		if (i < pa->fail_at) {
			pa->fail_at = i;
			pa->fail_rc = rc;
			snprintf(pa->fail_msg, sizeof(pa->fail_msg), "%s",
				 err_msg());
		}
		/* As the serial code: nothing after the first failure. */
		pa->stop = 1;
		pthread_cond_broadcast(&pa->room);
	} else {
		pa->state[i] = SLOT_DONE;
		pa->inflight += pa->range->commits[i].patch.len;
	}
	if (i == pa->wait_for)
		pthread_cond_signal(&pa->ready);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct patchahead *pa = w->pa;
	size_t i;

	pthread_mutex_lock(&pa->lock);
	for (;;) {
		while (!can_claim(pa) && !pa->stop &&
		       pa->next_claim < pa->range->nr) {
			pa->idle++;
			pthread_cond_wait(&pa->room, &pa->lock);
			pa->idle--;
		}
		if (!can_claim(pa))
			break;
		i = pa->next_claim++;
		pa->state[i] = SLOT_BUSY;
		/* One put back may have made room for more than one. */
		if (pa->idle && can_claim(pa))
			pthread_cond_signal(&pa->room);
		render(pa, w->repo, i);
	}
	pthread_mutex_unlock(&pa->lock);
	return NULL;
}

int patchahead_start(struct patchahead **out, struct gitrepo *repo,
		     const char *path, struct gitrepo_range *range,
		     unsigned jobs)
{
	struct patchahead *pa;
	size_t i, want;
	long cpus;
	int rc = 0;

	*out = NULL;
	BUG_ON(!range->have_patches && range->nr);
	if (!jobs) {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		jobs = cpus < 1 ? 1 : (unsigned)cpus;
		if (jobs > PATCHAHEAD_JOBS_DEFAULT)
			jobs = PATCHAHEAD_JOBS_DEFAULT;
	}
	if (jobs > PATCHAHEAD_JOBS_MAX)
		jobs = PATCHAHEAD_JOBS_MAX;
	if (!gitrepo_threads())
		jobs = 1;
	pa = xcalloc(1, sizeof(*pa));
	pa->range = range;
	pa->repo = repo;
	pa->state = xcalloc(range->nr ? range->nr : 1, sizeof(*pa->state));
	pa->wait_for = SIZE_MAX;
	pa->fail_at = SIZE_MAX;
	pthread_mutex_init(&pa->lock, NULL);
	pthread_cond_init(&pa->room, NULL);
	pthread_cond_init(&pa->ready, NULL);
	/* No thread for fewer patches than threads to render them. */
	want = jobs - 1;
	if (want > range->nr / 2)
		want = range->nr / 2;
	pa->workers = xcalloc(want ? want : 1, sizeof(*pa->workers));
	/* Every repository opened before any thread starts: opening one
	 * sets libgit2's process-wide options. */
	for (i = 0; i < want && !rc; i++) {
		pa->workers[i].pa = pa;
		rc = gitrepo_open(&pa->workers[i].repo, path);
	}
	if (rc) {
		pa->nr_workers = 0; /* no thread to stop */
		for (i = 0; i < want; i++)
			gitrepo_free(pa->workers[i].repo);
		patchahead_free(pa);
		return rc;
	}
	/* The threads start on the lock: they take nothing (nor use
	 * libgit2) before the count of jobs is known. */
	pthread_mutex_lock(&pa->lock);
	for (i = 0; i < want; i++) {
		if (pthread_create(&pa->workers[i].tid, NULL, worker_main,
				   &pa->workers[i]))
			break; /* fewer threads; the caller renders the rest */
	}
	pa->nr_workers = i;
	for (; i < want; i++) {
		gitrepo_free(pa->workers[i].repo);
		pa->workers[i].repo = NULL;
	}
	pa->jobs = pa->nr_workers + 1;
	pthread_mutex_unlock(&pa->lock);
	*out = pa;
	return 0;
}

int patchahead_get(struct patchahead *pa, size_t i)
{
	char msg[PB_ERRMSG_MAX];
	int rc = 0;

	BUG_ON(i >= pa->range->nr || i < pa->next_get);
	pthread_mutex_lock(&pa->lock);
	pa->next_get = i;
	if (pa->idle && can_claim(pa))
		pthread_cond_signal(&pa->room);
	for (;;) {
		if (pa->state[i] == SLOT_DONE)
			break;
		if (pa->state[i] == SLOT_FAILED ||
		    (pa->state[i] == SLOT_FREE && pa->stop)) {
			/* The first failure (the caller stops there; asked
			 * again past it, it hears of it again). */
			BUG_ON(pa->fail_at == SIZE_MAX);
			rc = pa->fail_rc;
			snprintf(msg, sizeof(msg), "%s", pa->fail_msg);
			break;
		}
		if (can_claim(pa)) {
			size_t j = pa->next_claim++;

			pa->state[j] = SLOT_BUSY;
			render(pa, pa->repo, j);
			continue;
		}
		pa->wait_for = i;
		pthread_cond_wait(&pa->ready, &pa->lock);
		pa->wait_for = SIZE_MAX;
	}
	pa->next_get = i + 1;
	pthread_mutex_unlock(&pa->lock);
	if (rc)
		return err_set(rc, "%s", msg);
	return 0;
}

void patchahead_put(struct patchahead *pa, size_t i)
{
	size_t len;

	BUG_ON(i >= pa->range->nr || pa->state[i] != SLOT_DONE);
	len = pa->range->commits[i].patch.len;
	gitrepo_range_patch_release(pa->range, i);
	pthread_mutex_lock(&pa->lock);
	pa->state[i] = SLOT_FREE;
	pa->inflight -= len;
	if (pa->idle && can_claim(pa))
		pthread_cond_signal(&pa->room);
	pthread_mutex_unlock(&pa->lock);
}

void patchahead_free(struct patchahead *pa)
{
	size_t i;

	if (!pa)
		return;
	pthread_mutex_lock(&pa->lock);
	pa->stop = 1;
	pthread_cond_broadcast(&pa->room);
	pthread_mutex_unlock(&pa->lock);
	for (i = 0; i < pa->nr_workers; i++) {
		pthread_join(pa->workers[i].tid, NULL);
		gitrepo_free(pa->workers[i].repo);
	}
	pthread_cond_destroy(&pa->ready);
	pthread_cond_destroy(&pa->room);
	pthread_mutex_destroy(&pa->lock);
	free(pa->workers);
	free(pa->state);
	free(pa);
}
