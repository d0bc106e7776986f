/*
 * state_schema - make a state database of a given schema version, for the
 * tests of `patchbridge check-config`:
 *
 *	state_schema sqlite PATH VERSION
 *	state_schema postgresql CONNINFO VERSION
 *	state_schema latest
 *
 * migrates a new (or older) database up to VERSION (0: the latest) and
 * no further; "latest" prints the newest version this code knows.
 */
#include "state/store.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct store_opts o;
	struct store *st = NULL;

	if (argc == 2 && !strcmp(argv[1], "latest")) {
		printf("%d\n", store_schema_latest());
		return 0;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: state_schema sqlite|postgresql TARGET "
				"VERSION\n");
		return 2;
	}
	memset(&o, 0, sizeof(o));
	o.backend = !strcmp(argv[1], "postgresql") ? STORE_BACKEND_POSTGRESQL :
						     STORE_BACKEND_SQLITE;
	o.target = argv[2];
	o.flags = STORE_RW;
	o.busy_timeout_ms = 5000;
	o.schema_version = atoi(argv[3]);
	if (store_open_opts(&st, &o)) {
		fprintf(stderr, "state_schema: %s\n", err_msg());
		return 1;
	}
	store_free(st);
	return 0;
}
