#include "cmocka_all.h"
#include "storebed.h"
#include "util/err.h"
#include "util/fileio.h"

#include <libpq-fe.h>
#include <sqlite3.h>

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING 8

static char prog_name[32] = "t";
static char sqlite_dir[512] = "/tmp";
static char base[1024]; /* the server's connection string, sans dbname */
static char ring[RING][1200];
static unsigned ring_next;

int storebed_pg(void)
{
	const char *b = getenv("PB_TEST_BACKEND");

	return b && !strcmp(b, "postgresql");
}

enum store_backend storebed_backend(void)
{
	return storebed_pg() ? STORE_BACKEND_POSTGRESQL : STORE_BACKEND_SQLITE;
}

static void load_base(void)
{
	const char *bed = getenv("PB_TEST_PGBED");
	char path[600], *p;
	FILE *f;

	if (base[0])
		return;
	if (!bed || !*bed)
		fail_msg("PB_TEST_BACKEND=postgresql needs PB_TEST_PGBED "
			 "(tests/pg/pgbed start DIR)");
	snprintf(path, sizeof(path), "%s/conninfo", bed);
	f = fopen(path, "r");
	if (!f || !fgets(base, sizeof(base), f))
		fail_msg("%s: no connection string (is the test bed "
			 "started?)",
			 path);
	fclose(f);
	base[strcspn(base, "\n")] = '\0';
	p = strstr(base, " dbname=");
	if (p)
		*p = '\0';
}

void storebed_init(const char *prog, const char *dir)
{
	snprintf(prog_name, sizeof(prog_name), "%s", prog);
	snprintf(sqlite_dir, sizeof(sqlite_dir), "%s", dir);
	if (storebed_pg())
		load_base();
}

/*
 * Run sql; a failure whose SQLSTATE is one of ok_states (space-separated)
 * is no failure.
 */
static void pg_run_ok(const char *conninfo, const char *sql,
		      const char *ok_states)
{
	PGconn *c = PQconnectdb(conninfo);
	PGresult *r;
	const char *state;
	char msg[600];
	int ok;

	if (PQstatus(c) != CONNECTION_OK) {
		snprintf(msg, sizeof(msg), "%s", PQerrorMessage(c));
		PQfinish(c);
		fail_msg("connect: %s", msg);
	}
	PQclear(PQexec(c, "SET client_min_messages = warning"));
	r = PQexec(c, sql);
	state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	ok = PQresultStatus(r) == PGRES_COMMAND_OK ||
	     PQresultStatus(r) == PGRES_TUPLES_OK ||
	     (ok_states && state && strlen(state) == 5 &&
	      strstr(ok_states, state));
	snprintf(msg, sizeof(msg), "%s", PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
	if (!ok)
		fail_msg("%s: %s", sql, msg);
}

static void pg_run(const char *conninfo, const char *sql)
{
	pg_run_ok(conninfo, sql, NULL);
}

/*
 * On PostgreSQL a fresh "database" is a fresh schema of one database,
 * pb_tests, named by the connection string's search_path: the store's
 * tables go into the first schema of the path.  Creating a schema is
 * instant, a database is not.
 */
const char *storebed_fresh(const char *name)
{
	static int have_db;
	char *out = ring[ring_next++ % RING], sch[128], sql[400];
	size_t i;

	if (!storebed_pg()) {
		snprintf(out, sizeof(ring[0]), "%s/%s.db", sqlite_dir, name);
		return out;
	}
	load_base();
	if (!have_db) {
		/*
		 * Another test program may make it meanwhile: 42P04 if it
		 * had committed, 23505 (pg_database's unique index) if both
		 * were creating it at once.
		 */
		snprintf(out, sizeof(ring[0]), "%s dbname=postgres", base);
		pg_run_ok(out, "CREATE DATABASE pb_tests", "42P04 23505");
		have_db = 1;
	}
	snprintf(sch, sizeof(sch), "%s_%s", prog_name, name);
	for (i = 0; sch[i]; i++)
		sch[i] = isalnum((unsigned char)sch[i]) ?
				 (char)tolower((unsigned char)sch[i]) :
				 '_';
	snprintf(out, sizeof(ring[0]), "%s dbname=pb_tests", base);
	snprintf(sql, sizeof(sql),
		 "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", sch,
		 sch);
	pg_run(out, sql);
	snprintf(out, sizeof(ring[0]),
		 "%s dbname=pb_tests options='-c search_path=%s'", base, sch);
	return out;
}

const char *storebed_missing(void)
{
	char *out = ring[ring_next++ % RING];

	if (!storebed_pg()) {
		snprintf(out, sizeof(ring[0]), "%s/missing/none.db",
			 sqlite_dir);
		return out;
	}
	load_base();
	snprintf(out, sizeof(ring[0]), "%s dbname=pb_no_such_database", base);
	return out;
}

int storebed_open_host(struct store **out, const char *target, unsigned flags,
		       const char *host, int64_t lease)
{
	struct store_opts o;

	memset(&o, 0, sizeof(o));
	o.backend = storebed_backend();
	o.target = target;
	o.flags = flags;
	o.busy_timeout_ms = 5000;
	o.host = host;
	o.lease = lease;
	return store_open_opts(out, &o);
}

int storebed_open(struct store **out, const char *target, unsigned flags,
		  int busy_ms)
{
	struct store_opts o;

	memset(&o, 0, sizeof(o));
	o.backend = storebed_backend();
	o.target = target;
	o.flags = flags;
	o.busy_timeout_ms = busy_ms;
	return store_open_opts(out, &o);
}

void storebed_exec(const char *target, const char *sqlite_sql,
		   const char *pg_sql)
{
	sqlite3 *db = NULL;

	if (storebed_pg()) {
		pg_run(target, pg_sql);
		return;
	}
	if (sqlite3_open(target, &db) != SQLITE_OK)
		fail_msg("%s: %s", target, sqlite3_errmsg(db));
	if (sqlite3_exec(db, sqlite_sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sqlite_sql, sqlite3_errmsg(db));
	sqlite3_close(db);
}

void storebed_set_version(const char *target, int version)
{
	char a[64], b[80];

	snprintf(a, sizeof(a), "PRAGMA user_version = %d", version);
	snprintf(b, sizeof(b), "UPDATE schema_version SET version = %d",
		 version);
	storebed_exec(target, a, b);
}

int storebed_tmpdir(char *dir, size_t size, const char *prog)
{
	const char *tmp = getenv("PB_TEST_TMP");

	if ((size_t)snprintf(dir, size, "%s/%s.XXXXXX", tmp ? tmp : "/tmp",
			     prog) >= size ||
	    !mkdtemp(dir))
		return -1;
	storebed_init(prog, dir);
	return 0;
}

int storebed_tmpdir_remove(const char *dir)
{
	return dir_remove_tree_at(AT_FDCWD, dir) ? -1 : 0;
}
