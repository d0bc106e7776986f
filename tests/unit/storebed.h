/*
 * storebed - the database a state-store test runs on, so that one test
 * file judges both engines.
 *
 * SQLite (the default): a file NAME.db in the test's directory.
 * PostgreSQL (PB_TEST_BACKEND=postgresql): a fresh database on the
 * server tests/pg/pgbed started in $PB_TEST_PGBED (CTest's pgbed
 * fixture sets both); each name is a schema of its own in the database
 * pb_tests (the connection string's search_path), dropped and created
 * again, prefixed with the program's name so that test programs running
 * in parallel do not meet.
 *
 * The raw functions reach under the store, for what the store must
 * refuse or cannot do itself (a schema version from the future).
 * Failures fail the test (cmocka's fail_msg()).
 */
#ifndef PB_TESTS_STOREBED_H
#define PB_TESTS_STOREBED_H

#include "state/store.h"

#include <stdint.h>

/* prog: a short name ("store"); dir: where SQLite files go. */
void storebed_init(const char *prog, const char *dir);
/*
 * A group's temporary directory: dir[size] made under $PB_TEST_TMP (else
 * /tmp) as PROG.XXXXXX, and storebed_init(prog, dir).  0 or -1.
 * storebed_tmpdir_remove() removes it again, following no link.
 */
int storebed_tmpdir(char *dir, size_t size, const char *prog);
int storebed_tmpdir_remove(const char *dir);
int storebed_pg(void);
enum store_backend storebed_backend(void);

/* A fresh, empty database called name: its target (the file, or the
 * connection string); valid until 8 more calls. */
const char *storebed_fresh(const char *name);

/* A database that does not exist and is not created. */
const char *storebed_missing(void);

/* store_open_opts() on target with this backend; host NULL: the host
 * name; lease 0: the default. */
int storebed_open(struct store **out, const char *target, unsigned flags,
		  int busy_ms);
int storebed_open_host(struct store **out, const char *target, unsigned flags,
		       const char *host, int64_t lease);

/* Run sql on the database itself (the SQLite or the PostgreSQL text). */
void storebed_exec(const char *target, const char *sqlite_sql,
		   const char *pg_sql);
/* Write the schema version under the store's feet. */
void storebed_set_version(const char *target, int version);

#endif
