/*
 * store_host - what each host of a shared store did.  See
 * store_host.h.
 */

#include "state/storeq.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void host_release(struct store_host *h)
{
	strlist_release(&h->owned);
}

void store_host_list_release(struct store_host_list *list)
{
	LIST_RELEASE(list, host_release);
}

int store_hosts(struct store_host_list *out, struct store *st)
{
	struct store_host *h;
	struct query q;
	size_t seen = 0;
	int rc;

	rc = q_start(&q, st, S_HOSTS, "list the hosts");
	if (rc)
		return rc;
	q_int(&q, 1, (int64_t)STORE_LIST_MAX + 1);
	while ((rc = q_step(&q)) == 1) {
		if (++seen > STORE_LIST_MAX) {
			rc = err_set(PB_ELIMIT, "state db: more than %d hosts",
				     STORE_LIST_MAX);
			break;
		}
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		h = &out->items[out->nr++];
		memset(h, 0, sizeof(*h));
		h->host = col_own(&h->owned, &q, 0);
		h->journaled = col_int(&q, 1);
		h->applied = col_int(&q, 2);
		h->applying = col_int(&q, 3);
		h->sending = col_int(&q, 4);
		h->sent = col_int(&q, 5);
		h->lease_until = col_int(&q, 6);
		h->last_active = col_int(&q, 7);
	}
	q_end(&q);
	return rc;
}
