#include "milter/diffcache.h"

#include "util/hashmap.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	struct hashmap_entry ent; /* keyed by hash_fnv1a_str(id) */
	struct entry *prev, *next; /* recency: head is the newest */
	char *id;
	char *text; /* a copy of the row's text, len bytes */
	size_t len;
	struct diff *d;
	size_t size; /* diff_size(d) */
};

struct diffcache {
	pthread_mutex_t lock; /* guards everything below */
	struct hashmap map;
	struct entry *head, *tail;
	size_t bytes;
};

struct diffcache *diffcache_new(void)
{
	struct diffcache *c = xcalloc(1, sizeof(*c));

	pthread_mutex_init(&c->lock, NULL);
	hashmap_init(&c->map, DIFFCACHE_ENTRIES_MAX);
	return c;
}

static void unlink_entry(struct diffcache *c, struct entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void push_front(struct diffcache *c, struct entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

/* Remove e from everything and free it (its diff may live on). */
static void drop(struct diffcache *c, struct entry *e)
{
	unlink_entry(c, e);
	hashmap_remove(&c->map, &e->ent);
	c->bytes -= e->size;
	diff_free(e->d);
	free(e->text);
	free(e->id);
	free(e);
}

void diffcache_free(struct diffcache *c)
{
	if (!c)
		return;
	while (c->head)
		drop(c, c->head);
	hashmap_release(&c->map);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static struct entry *find(struct diffcache *c, const char *id)
{
	struct hashmap_entry *he;

	for (he = hashmap_first(&c->map, hash_fnv1a_str(id)); he;
	     he = hashmap_next(he)) {
		struct entry *e = CONTAINER_OF(he, struct entry, ent);

		if (!strcmp(e->id, id))
			return e;
	}
	return NULL;
}

struct diff *diffcache_get(struct diffcache *c, const char *id,
			   const char *text, size_t len)
{
	struct diff *d = NULL;
	struct entry *e;

	if (!id || !text)
		return NULL;
	pthread_mutex_lock(&c->lock);
	e = find(c, id);
	if (e && e->len == len && !memcmp(e->text, text, len)) {
		unlink_entry(c, e);
		push_front(c, e);
		d = diff_ref(e->d);
	}
	pthread_mutex_unlock(&c->lock);
	return d;
}

void diffcache_put(struct diffcache *c, const char *id, const char *text,
		   size_t len, struct diff *d)
{
	struct entry *e, *old;

	if (!id || !text || !d)
		return;
	if (diff_size(d) + len > DIFFCACHE_BYTES_MAX / 4)
		return;
	e = xcalloc(1, sizeof(*e));
	e->id = xstrdup(id);
	e->text = xmalloc(len + 1);
	memcpy(e->text, text, len);
	e->len = len;
	e->size = diff_size(d) + len + sizeof(*e) + strlen(id) + 1;
	e->d = diff_ref(d);
	pthread_mutex_lock(&c->lock);
	/* the newest text of a row wins; a racing put of the same one too */
	old = find(c, id);
	if (old)
		drop(c, old);
	hashmap_add(&c->map, &e->ent, hash_fnv1a_str(id));
	push_front(c, e);
	c->bytes += e->size;
	while (c->tail && (c->map.nr > DIFFCACHE_ENTRIES_MAX ||
			   c->bytes > DIFFCACHE_BYTES_MAX))
		drop(c, c->tail);
	pthread_mutex_unlock(&c->lock);
}

void diffcache_stats(struct diffcache *c, size_t *entries, size_t *bytes)
{
	pthread_mutex_lock(&c->lock);
	*entries = c->map.nr;
	*bytes = c->bytes;
	pthread_mutex_unlock(&c->lock);
}

static struct diff *hook_get(void *arg, const char *id, const char *text,
			     size_t len)
{
	return diffcache_get(arg, id, text, len);
}

static void hook_put(void *arg, const char *id, const char *text, size_t len,
		     struct diff *d)
{
	diffcache_put(arg, id, text, len, d);
}

void diffcache_hooks(struct classify_diffs *out, struct diffcache *c)
{
	out->get = hook_get;
	out->put = hook_put;
	out->arg = c;
}
