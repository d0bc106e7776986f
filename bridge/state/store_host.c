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

#define HOST(k, ...) COL_##k(struct store_host, __VA_ARGS__)
/* A row of S_HOSTS. */
static const struct col host_cols[] = {
	HOST(TEXT, host),	HOST(INT, journaled),	HOST(INT, applied),
	HOST(INT, applying),	HOST(INT, sending),	HOST(INT, sent),
	HOST(INT, lease_until), HOST(INT, last_active),
};
static const struct row_type host_row = ROW_TYPE(struct store_host, host_cols);

void store_host_list_release(struct store_host_list *list)
{
	ROW_LIST_RELEASE(&host_row, list);
}

int store_hosts(struct store_host_list *out, struct store *st)
{
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
		row_init(&host_row, &out->items[out->nr]);
		rc = row_read(&host_row, &out->items[out->nr], &q);
		if (rc)
			break;
		out->nr++;
	}
	q_end(&q);
	return rc;
}
