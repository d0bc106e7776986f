#include "util/hashmap.h"

#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define FNV32_OFFSET 2166136261u
#define FNV32_PRIME 16777619u
#define FNV64_OFFSET 0xcbf29ce484222325ULL
#define FNV64_PRIME 0x100000001b3ULL

#define HASHMAP_MIN 16

/* One FNV-1a loop for both widths: the arithmetic is done in 64 bits
 * and kept to the width by mask (modulo 2^32 for the 32-bit hash). */
static uint64_t fnv1a(const void *p, size_t len, uint64_t h, uint64_t prime,
		      uint64_t mask)
{
	const unsigned char *s = p;
	size_t i;

	for (i = 0; i < len; i++)
		h = ((h ^ s[i]) * prime) & mask;
	return h;
}

uint32_t hash_fnv1a(const void *p, size_t len)
{
	return (uint32_t)fnv1a(p, len, FNV32_OFFSET, FNV32_PRIME, 0xffffffffu);
}

uint32_t hash_fnv1a_str(const char *s)
{
	return hash_fnv1a(s, strlen(s));
}

uint64_t hash_fnv1a64(const void *p, size_t len)
{
	return fnv1a(p, len, FNV64_OFFSET, FNV64_PRIME, UINT64_MAX);
}

/* The smallest power of two, at least HASHMAP_MIN, with 2 * expect
 * buckets or more. */
static size_t size_for(size_t expect)
{
	size_t n = HASHMAP_MIN;

	while (n / 2 < expect && n < ((size_t)-1 >> 2))
		n <<= 1;
	return n;
}

void hashmap_init(struct hashmap *m, size_t expect)
{
	m->size = size_for(expect);
	m->buckets = xcalloc(m->size, sizeof(*m->buckets));
	m->nr = 0;
}

void hashmap_release(struct hashmap *m)
{
	free(m->buckets);
	m->buckets = NULL;
	m->size = 0;
	m->nr = 0;
}

static struct hashmap_entry **bucket(const struct hashmap *m, uint32_t hash)
{
	return &m->buckets[hash & (m->size - 1)];
}

/* Double the buckets; entries of one hash keep their order. */
static void grow(struct hashmap *m)
{
	struct hashmap old = *m;
	size_t i;

	hashmap_init(m, old.size);
	m->nr = old.nr;
	for (i = 0; i < old.size; i++) {
		struct hashmap_entry *e = old.buckets[i], *rev = NULL, *next;

		/* Reverse the chain, then push each to the front of its
		 * new bucket: the order comes out as it was. */
		for (; e; e = next) {
			next = e->next;
			e->next = rev;
			rev = e;
		}
		for (e = rev; e; e = next) {
			struct hashmap_entry **b = bucket(m, e->hash);

			next = e->next;
			e->next = *b;
			*b = e;
		}
	}
	free(old.buckets);
}

void hashmap_add(struct hashmap *m, struct hashmap_entry *e, uint32_t hash)
{
	struct hashmap_entry **b;

	if (!m->size)
		hashmap_init(m, 0);
	else if (m->nr >= m->size)
		grow(m);
	b = bucket(m, hash);
	e->hash = hash;
	e->next = *b;
	*b = e;
	m->nr++;
}

void hashmap_remove(struct hashmap *m, struct hashmap_entry *e)
{
	struct hashmap_entry **p = bucket(m, e->hash);

	while (*p != e)
		p = &(*p)->next;
	*p = e->next;
	e->next = NULL;
	m->nr--;
}

static struct hashmap_entry *same_hash(struct hashmap_entry *e, uint32_t hash)
{
	while (e && e->hash != hash)
		e = e->next;
	return e;
}

struct hashmap_entry *hashmap_first(const struct hashmap *m, uint32_t hash)
{
	if (!m->size)
		return NULL;
	return same_hash(*bucket(m, hash), hash);
}

struct hashmap_entry *hashmap_next(const struct hashmap_entry *e)
{
	return same_hash(e->next, e->hash);
}

void hashmap_iter_init(struct hashmap_iter *it, const struct hashmap *m)
{
	it->m = m;
	it->bucket = 0;
	it->e = NULL;
}

struct hashmap_entry *hashmap_iter_next(struct hashmap_iter *it)
{
	if (it->e)
		it->e = it->e->next;
	while (!it->e && it->bucket < it->m->size)
		it->e = it->m->buckets[it->bucket++];
	return it->e;
}

/* ---- strmap ---- */

struct strmap_entry {
	struct hashmap_entry ent;
	void *val;
	char key[]; /* the copy */
};

static struct strmap_entry *strmap_find(const struct strmap *m, const char *key)
{
	struct hashmap_entry *e;

	for (e = hashmap_first(&m->map, hash_fnv1a_str(key)); e;
	     e = hashmap_next(e)) {
		struct strmap_entry *se =
			CONTAINER_OF(e, struct strmap_entry, ent);

		if (!strcmp(se->key, key))
			return se;
	}
	return NULL;
}

void *strmap_get(const struct strmap *m, const char *key)
{
	struct strmap_entry *se = strmap_find(m, key);

	return se ? se->val : NULL;
}

void strmap_put(struct strmap *m, const char *key, void *val)
{
	struct strmap_entry *se = strmap_find(m, key);
	size_t len;

	if (se) {
		se->val = val;
		return;
	}
	len = strlen(key);
	se = xmalloc(sizeof(*se) + len + 1);
	memcpy(se->key, key, len + 1);
	se->val = val;
	hashmap_add(&m->map, &se->ent, hash_fnv1a(key, len));
}

void strmap_release(struct strmap *m)
{
	struct hashmap_iter it;
	struct hashmap_entry *e, *next = NULL;

	/* Freeing under the walker: take the successor first. */
	hashmap_iter_init(&it, &m->map);
	for (e = hashmap_iter_next(&it); e; e = next) {
		next = hashmap_iter_next(&it);
		free(CONTAINER_OF(e, struct strmap_entry, ent));
	}
	hashmap_release(&m->map);
}
