/*
 * storeconf - open the state store that the configuration's [state]
 * section names: the SQLite file at `path`, or the PostgreSQL database
 * whose libpq connection string is in `conninfo_file` (read as a secret:
 * core/secret.h refuses a file the group or others may read), with this
 * host's name (`host`, else the host name), the claims' `lease` and the
 * `busy_timeout`.
 *
 * Ownership: *out is the caller's (store_free()); the connection string
 * is wiped once the connection is made.  Errors: those of store_open()
 * and of secret_read(), with err_msg() naming the parameter.
 */
#ifndef PB_STATE_STORECONF_H
#define PB_STATE_STORECONF_H

#include "state/store.h"

#include <stddef.h>

struct config;

int storeconf_open(struct store **out, const struct config *cfg,
		   unsigned flags);

/* store_probe() of the database the configuration names. */
int storeconf_probe(int *version, char **name, const struct config *cfg);

/* The backend the configuration names. */
enum store_backend storeconf_backend(const struct config *cfg);

/*
 * Where the state is, for messages before (or without) a connection:
 * the SQLite file, or "postgresql (conninfo_file FILE)".  out is at
 * least STORECONF_WHERE_MAX bytes.
 */
#define STORECONF_WHERE_MAX (4096 + 64)
const char *storeconf_where(char *out, size_t size, const struct config *cfg);

#endif
