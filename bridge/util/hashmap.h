/*
 * hashmap - the one hash table, and the FNV-1a hash it is keyed with.
 *
 * A chained table of entries the caller embeds in its own structs (as
 * git's hashmap.h and the Linux hlist do): the map allocates only its
 * bucket array, never an entry, so a fixed pool of entries (the webhook's
 * recent deliveries) or an array built once (the lines of a diff) can be
 * indexed without an allocation per entry.  The caller hashes the key and
 * compares keys itself while it walks the entries of one hash:
 *
 *	for (e = hashmap_first(&m, h); e; e = hashmap_next(e))
 *		if (keys_equal(CONTAINER_OF(e, struct thing, ent), key))
 *			...
 *
 * Entries of one hash come back newest first.  The table doubles when it
 * holds more entries than buckets; hashmap_init() with the expected count
 * sizes it so that it never has to.
 *
 * struct strmap on top is the common case: C-string keys (copied) to
 * borrowed pointers.
 *
 * FNV-1a (Fowler/Noll/Vo, draft-eastlake-fnv) is fast and spreads short
 * text keys well; it is not keyed, so a table fed by an attacker can be
 * made slow: each user bounds what it indexes (see the callers).
 *
 * Ownership: the map never owns an entry; hashmap_release() frees only
 * the buckets.  A strmap owns its key copies, not its values.
 * Thread safety: none; a map belongs to one thread at a time.
 * Errors: none; out of memory exits (xalloc.h).
 */
#ifndef PB_UTIL_HASHMAP_H
#define PB_UTIL_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a over p[0..len): 32-bit (tables) and 64-bit (names). */
uint32_t hash_fnv1a(const void *p, size_t len);
uint32_t hash_fnv1a_str(const char *s);
uint64_t hash_fnv1a64(const void *p, size_t len);

/* The struct that holds member ptr (a pointer to it). */
#define CONTAINER_OF(ptr, type, member) \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

struct hashmap_entry {
	struct hashmap_entry *next; /* in its bucket */
	uint32_t hash;
};

struct hashmap {
	struct hashmap_entry **buckets;
	size_t size; /* buckets: 0 or a power of two */
	size_t nr; /* entries */
};

#define HASHMAP_INIT       \
	{                  \
		NULL, 0, 0 \
	}

/* An empty map sized for about expect entries without growing. */
void hashmap_init(struct hashmap *m, size_t expect);
/* Frees the buckets (not the entries); the map is empty and usable. */
void hashmap_release(struct hashmap *m);

void hashmap_add(struct hashmap *m, struct hashmap_entry *e, uint32_t hash);
/* Unlink e, which must be in m. */
void hashmap_remove(struct hashmap *m, struct hashmap_entry *e);

/* The newest entry of hash, or NULL; then the next older one of it. */
struct hashmap_entry *hashmap_first(const struct hashmap *m, uint32_t hash);
struct hashmap_entry *hashmap_next(const struct hashmap_entry *e);

/* Every entry once, in no particular order; no adding or removing
 * while walking. */
struct hashmap_iter {
	const struct hashmap *m;
	size_t bucket;
	struct hashmap_entry *e;
};

void hashmap_iter_init(struct hashmap_iter *it, const struct hashmap *m);
struct hashmap_entry *hashmap_iter_next(struct hashmap_iter *it);

/* ---- C-string keys (copied) to borrowed values ---- */

struct strmap {
	struct hashmap map;
};

#define STRMAP_INIT          \
	{                    \
		HASHMAP_INIT \
	}

/* The value of key, or NULL when absent. */
void *strmap_get(const struct strmap *m, const char *key);
/* Insert, or replace the value of an existing key. */
void strmap_put(struct strmap *m, const char *key, void *val);
/* Frees the keys (not the values); the map is empty and usable. */
void strmap_release(struct strmap *m);

#endif
