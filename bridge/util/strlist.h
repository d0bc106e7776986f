/*
 * strlist - a growable list of owned C strings.
 *
 * Ownership: the list owns every item (copied on push); strlist_release()
 * frees them all.  Order is insertion order.
 */
#ifndef PB_UTIL_STRLIST_H
#define PB_UTIL_STRLIST_H

#include <stddef.h>

struct strlist {
	char **items;
	size_t nr;
	size_t alloc;
};

#define STRLIST_INIT       \
	{                  \
		NULL, 0, 0 \
	}

void strlist_init(struct strlist *sl);
void strlist_release(struct strlist *sl);

/* Append a copy of s; returns the stored copy. */
char *strlist_push(struct strlist *sl, const char *s);
char *strlist_pushn(struct strlist *sl, const char *s, size_t len);
char *strlist_pushf(struct strlist *sl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Append s, taking ownership of it (it must come from xmalloc). */
void strlist_push_owned(struct strlist *sl, char *s);

/* Index of s, or -1; the _icase form ignores ASCII case. */
long strlist_find(const struct strlist *sl, const char *s);
long strlist_find_icase(const struct strlist *sl, const char *s);

/* Append unless an item equal ignoring ASCII case exists; 1 if added. */
int strlist_push_unique_icase(struct strlist *sl, const char *s);

/* Remove item i, keeping order. */
void strlist_remove(struct strlist *sl, size_t i);

void strlist_sort(struct strlist *sl);

#define strlist_for_each(sl, i) for ((i) = 0; (i) < (sl)->nr; (i)++)

#endif
