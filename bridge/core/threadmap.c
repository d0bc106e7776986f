#include "core/threadmap.h"

#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void threadmap_mail_init(struct threadmap_mail *m)
{
	memset(m, 0, sizeof(*m));
}

void threadmap_mail_release(struct threadmap_mail *m)
{
	free(m->message_id);
	free(m->project);
	free(m->diff);
	threadmap_mail_init(m);
}

void threadmap_revision_init(struct threadmap_revision *r)
{
	memset(r, 0, sizeof(*r));
}

void threadmap_revision_release(struct threadmap_revision *r)
{
	free(r->project);
	threadmap_revision_init(r);
}

void threadmap_revision_list_take(struct threadmap_revision_list *list,
				  struct threadmap_revision *r)
{
	ALLOC_GROW(list->items, list->nr + 1, list->alloc);
	list->items[list->nr++] = *r;
	threadmap_revision_init(r);
}

void threadmap_revision_list_release(struct threadmap_revision_list *list)
{
	size_t i;

	for (i = 0; i < list->nr; i++)
		threadmap_revision_release(&list->items[i]);
	free(list->items);
	memset(list, 0, sizeof(*list));
}
