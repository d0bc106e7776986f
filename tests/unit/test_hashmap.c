#include "cmocka_all.h"
#include "util/hashmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The published FNV-1a test values (draft-eastlake-fnv, section 8). */
static void test_fnv1a_vectors(void **state)
{
	(void)state;
	assert_int_equal(hash_fnv1a("", 0), 0x811c9dc5u);
	assert_int_equal(hash_fnv1a("a", 1), 0xe40c292cu);
	assert_int_equal(hash_fnv1a_str("foobar"), 0xbf9cf968u);
	assert_true(hash_fnv1a64("", 0) == 0xcbf29ce484222325ULL);
	assert_true(hash_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cULL);
	assert_true(hash_fnv1a64("foobar", 6) == 0x85944171f73967e8ULL);
}

struct item {
	struct hashmap_entry ent;
	int key;
	int order;
};

/* A poor hash, so that chains hold several hashes and several keys. */
static uint32_t poor(int key)
{
	return (uint32_t)(key % 7);
}

static struct item *find(const struct hashmap *m, int key)
{
	struct hashmap_entry *e;

	for (e = hashmap_first(m, poor(key)); e; e = hashmap_next(e)) {
		struct item *it = CONTAINER_OF(e, struct item, ent);

		if (it->key == key)
			return it;
	}
	return NULL;
}

static void test_add_find_remove_grow(void **state)
{
	struct hashmap m = HASHMAP_INIT;
	struct item *items = calloc(1000, sizeof(*items));
	struct hashmap_iter iter;
	struct hashmap_entry *e;
	size_t seen = 0;
	int i;

	(void)state;
	assert_null(hashmap_first(&m, 1));
	for (i = 0; i < 1000; i++) {
		items[i].key = i;
		hashmap_add(&m, &items[i].ent, poor(i));
	}
	assert_int_equal(m.nr, 1000);
	assert_true(m.size >= 1000);
	for (i = 0; i < 1000; i++)
		assert_ptr_equal(find(&m, i), &items[i]);
	assert_null(find(&m, 1000));
	for (i = 0; i < 1000; i += 2)
		hashmap_remove(&m, &items[i].ent);
	assert_int_equal(m.nr, 500);
	for (i = 0; i < 1000; i++)
		assert_ptr_equal(find(&m, i), i % 2 ? &items[i] : NULL);
	hashmap_iter_init(&iter, &m);
	while ((e = hashmap_iter_next(&iter))) {
		assert_int_equal(CONTAINER_OF(e, struct item, ent)->key % 2, 1);
		seen++;
	}
	assert_int_equal(seen, 500);
	hashmap_release(&m);
	assert_null(hashmap_first(&m, 1));
	free(items);
}

/* Entries of one hash: newest first, and growing keeps that order. */
static void test_same_hash_order(void **state)
{
	struct hashmap m;
	struct item items[100];
	struct hashmap_entry *e;
	int i, expect;

	(void)state;
	hashmap_init(&m, 1);
	assert_int_equal(m.size, 16);
	for (i = 0; i < 100; i++) {
		items[i].key = i;
		items[i].order = i;
		/* half of them share one hash */
		hashmap_add(&m, &items[i].ent,
			    i % 2 ? 42u : 1000u + (uint32_t)i);
	}
	assert_true(m.size > 16);
	expect = 99;
	for (e = hashmap_first(&m, 42); e; e = hashmap_next(e)) {
		assert_int_equal(CONTAINER_OF(e, struct item, ent)->order,
				 expect);
		expect -= 2;
	}
	assert_int_equal(expect, -1);
	hashmap_release(&m);
}

/* Sized for its entries, a map does not grow (no allocation later). */
static void test_sized_does_not_grow(void **state)
{
	struct hashmap m;
	struct item items[64];
	size_t size;
	int i;

	(void)state;
	hashmap_init(&m, 64);
	size = m.size;
	for (i = 0; i < 64; i++)
		hashmap_add(&m, &items[i].ent, (uint32_t)i * 2654435761u);
	assert_int_equal(m.size, size);
	hashmap_release(&m);
}

static void test_strmap(void **state)
{
	struct strmap m = STRMAP_INIT;
	char key[32];
	int a, b, i;

	(void)state;
	assert_null(strmap_get(&m, "x"));
	strmap_put(&m, "x", &a);
	strmap_put(&m, "", &b);
	assert_ptr_equal(strmap_get(&m, "x"), &a);
	assert_ptr_equal(strmap_get(&m, ""), &b);
	strmap_put(&m, "x", &b);
	assert_ptr_equal(strmap_get(&m, "x"), &b);
	assert_int_equal(m.map.nr, 2);
	for (i = 0; i < 500; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		strmap_put(&m, key, &a);
	}
	for (i = 0; i < 500; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		assert_ptr_equal(strmap_get(&m, key), &a);
	}
	/* The key is a copy. */
	strcpy(key, "y");
	strmap_put(&m, key, &a);
	key[0] = 'z';
	assert_ptr_equal(strmap_get(&m, "y"), &a);
	assert_null(strmap_get(&m, "z"));
	strmap_release(&m);
	assert_null(strmap_get(&m, "x"));
	strmap_put(&m, "again", &a);
	assert_ptr_equal(strmap_get(&m, "again"), &a);
	strmap_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv1a_vectors),
		cmocka_unit_test(test_add_find_remove_grow),
		cmocka_unit_test(test_same_hash_order),
		cmocka_unit_test(test_sized_does_not_grow),
		cmocka_unit_test(test_strmap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
