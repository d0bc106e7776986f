#include "util/err.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void strlist_init(struct strlist *sl)
{
	sl->items = NULL;
	sl->nr = 0;
	sl->alloc = 0;
}

void strlist_release(struct strlist *sl)
{
	size_t i;

	for (i = 0; i < sl->nr; i++)
		free(sl->items[i]);
	free(sl->items);
	strlist_init(sl);
}

void strlist_push_owned(struct strlist *sl, char *s)
{
	ALLOC_GROW(sl->items, sl->nr + 1, sl->alloc);
	sl->items[sl->nr++] = s;
}

char *strlist_pushn(struct strlist *sl, const char *s, size_t len)
{
	char *p = xmalloc(len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	strlist_push_owned(sl, p);
	return p;
}

char *strlist_push(struct strlist *sl, const char *s)
{
	return strlist_pushn(sl, s, strlen(s));
}

char *strlist_pushf(struct strlist *sl, const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	p = xvasprintf(fmt, ap);
	va_end(ap);
	strlist_push_owned(sl, p);
	return p;
}

long strlist_find(const struct strlist *sl, const char *s)
{
	size_t i;

	for (i = 0; i < sl->nr; i++)
		if (!strcmp(sl->items[i], s))
			return (long)i;
	return -1;
}

long strlist_find_icase(const struct strlist *sl, const char *s)
{
	size_t i;

	for (i = 0; i < sl->nr; i++)
		if (!strcasecmp(sl->items[i], s))
			return (long)i;
	return -1;
}

int strlist_push_unique_icase(struct strlist *sl, const char *s)
{
	if (strlist_find_icase(sl, s) >= 0)
		return 0;
	strlist_push(sl, s);
	return 1;
}

void strlist_remove(struct strlist *sl, size_t i)
{
	BUG_ON(i >= sl->nr);
	free(sl->items[i]);
	memmove(sl->items + i, sl->items + i + 1,
		(sl->nr - i - 1) * sizeof(*sl->items));
	sl->nr--;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void strlist_sort(struct strlist *sl)
{
	if (sl->nr > 1)
		qsort(sl->items, sl->nr, sizeof(*sl->items), cmp_str);
}
