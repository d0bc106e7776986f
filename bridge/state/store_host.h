/*
 * store_host - what each host of a shared store did.
 *
 * Part of the state store's interface, included by state/store.h:
 * the rules on ownership (the `owned` list and _release()), errors,
 * caps and thread safety are those at the top of store.h.
 */
#ifndef PB_STATE_STORE_HOST_H
#define PB_STATE_STORE_HOST_H

#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

struct store;

/*
 * Every host's part in the state, as the rows record it ([state] host;
 * one host on SQLite): the mails it journaled (spooled there), applied
 * (its claim finished them) and is applying now, the mails it holds a
 * claim on to hand to its MTA and those it handed over, its claims' last
 * expiry, and the last time it did any of this.  By host name, appended
 * to out; more than STORE_LIST_MAX hosts is PB_ELIMIT.
 */
struct store_host {
	const char *host;
	int64_t journaled, applied, applying;
	int64_t sending, sent;
	int64_t lease_until; /* the latest claim's expiry; 0: none held */
	int64_t last_active;
	struct strlist owned;
};

struct store_host_list {
	struct store_host *items;
	size_t nr;
	size_t alloc;
};

void store_host_list_release(struct store_host_list *list);
int store_hosts(struct store_host_list *out, struct store *st);

#endif
