/*
 * db_pg - the PostgreSQL driver of db.h, over libpq (the only libpq
 * user).
 *
 * Statements are prepared on the server once per session, lazily at their
 * first run, under a name of their own ("pb_N"); parameters travel in
 * binary (integers as int8, text and blobs as bytea) and so do results,
 * so no value is ever escaped or parsed as text.  A parameter's type is
 * fixed by the first run's bindings.
 *
 * Sessions: every connection sets lock_timeout (the busy timeout),
 * READ COMMITTED as the default isolation (the store picks a stronger one
 * per transaction through db_begin()) and, read-only, default
 * read-only transactions.  Before a statement or a transaction starts,
 * a connection the server closed (a restart, an administrator's
 * pg_terminate_backend) is noticed and opened again; a connection lost
 * in the middle of a statement or a transaction fails it with PB_ETEMP,
 * because whether the server committed it cannot be known, and the next
 * call reconnects.
 *
 * Connecting: the connection string is libpq's (keywords or a URI).
 * Where it does not say, connect_timeout is 10 seconds and
 * application_name "patchbridge"; everything else - host, port, TLS
 * (sslmode, sslrootcert, sslcert, sslkey, ...), target_session_attrs -
 * is passed to libpq as it is.  libpq reports no SQLSTATE for a failed
 * connection: an authentication failure and a missing database are told
 * apart from other failures by the server's (English) message.
 *
 * A bounded wait (reply_ms > 0, the milter's): connecting and every
 * statement run on libpq's non-blocking calls under poll(), so a server
 * that is down, unreachable or hung (stopped, swapping, an overloaded
 * network) costs at most reply_ms per call.  A call that runs out of
 * time fails with PB_ETEMP and leaves the connection unusable: every
 * later call fails at once until the store is closed (the caller opens
 * a new one).  Without it, libpq's blocking calls wait as long as the
 * server and the connection string let them.
 */
#include "state/db.h"
#include "util/err.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <libpq-fe.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Type OIDs (pg_type.dat; fixed since PostgreSQL 7). */
#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23

/* The advisory lock one migrator holds ("patchbrd" in ASCII). */
#define MIGRATE_LOCK "8097873064744100452"
#define PARAMS_MAX 64

struct pdb {
	struct db db;
	PGconn *conn;
	enum db_mode mode;
	int busy_ms;
	int reply_ms; /* > 0: the longest wait for the server, per call */
	int timed_out; /* a call ran out of reply_ms: the session is lost */
	unsigned generation; /* bumped by each (re)connection */
	unsigned next_id; /* statement names */
	int in_tx; /* BEGIN sent, no end yet */
	int tx_failed; /* a statement failed inside it */
	int sp_failed; /* tx_failed when the savepoint was taken */
	int retryable; /* the last failure may pass on a rerun */
};

struct param {
	Oid type; /* 0: not bound yet */
	const char *value;
	int length;
	int isnull;
	unsigned char i8[8];
};

struct db_stmt {
	struct pdb *c;
	char *sql; /* with $N placeholders */
	char name[24];
	unsigned prepared; /* the generation it was prepared in; 0 none */
	int nparams;
	Oid types[PARAMS_MAX]; /* as prepared */
	struct param p[PARAMS_MAX];
	PGresult *res;
	int row, nrows;
	int64_t changes;
};

static struct pdb *pdb(struct db *db)
{
	return (struct pdb *)db;
}

/* The first line of a libpq or server message, without "ERROR:  ". */
static void one_line(char *out, size_t size, const char *msg)
{
	size_t n;

	if (!msg)
		msg = "";
	n = strcspn(msg, "\n");
	while (n && (msg[n - 1] == ' ' || msg[n - 1] == '\r'))
		n--;
	snprintf(out, size, "%.*s", (int)n, msg);
}

/*
 * SQLSTATE -> ours (PostgreSQL's errcodes.txt).  Serialization failures
 * and deadlocks may pass when the transaction runs again; so may lock
 * and statement timeouts, resource shortages and a server going away.
 */
static int code_from_sqlstate(const char *state, int *retryable)
{
	*retryable = 0;
	if (!state || strlen(state) != 5)
		return PB_ERROR;
	if (!strcmp(state, "40001") || !strcmp(state, "40P01")) {
		*retryable = 1;
		return PB_ETEMP;
	}
	if (!strcmp(state, "23505"))
		return PB_EEXISTS;
	if (!strncmp(state, "23", 2))
		return PB_EINVAL;
	if (!strncmp(state, "08", 2) || !strncmp(state, "53", 2) ||
	    !strncmp(state, "57", 2) || !strcmp(state, "55P03") ||
	    !strncmp(state, "40", 2))
		return PB_ETEMP;
	if (!strcmp(state, "42501") || !strcmp(state, "25006") ||
	    !strncmp(state, "28", 2))
		return PB_EPERM;
	return PB_ERROR;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Wait until the connection's socket is ready for events or the deadline
 * passes: 1 ready, 0 out of time, -1 no socket.
 */
static int wait_socket(PGconn *conn, short events, int64_t deadline)
{
	struct pollfd pfd;
	int64_t left;
	int n;

	for (;;) {
		pfd.fd = PQsocket(conn);
		if (pfd.fd < 0)
			return -1;
		pfd.events = events;
		left = deadline - now_ms();
		if (left <= 0)
			return 0;
		n = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

/*
 * Drive a non-blocking connection attempt (PQconnectStartParams() or
 * PQresetStart()) to its end within c->reply_ms: 0 when connected, 1
 * when out of time (the connection is left broken), -1 on failure.
 */
static int connect_bounded(struct pdb *c,
			   PostgresPollingStatusType (*step)(PGconn *))
{
	int64_t deadline = now_ms() + c->reply_ms;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	int ready;

	if (PQstatus(c->conn) == CONNECTION_BAD)
		return -1;
	for (;;) {
		if (st == PGRES_POLLING_OK)
			return 0;
		if (st == PGRES_POLLING_FAILED)
			return -1;
		ready = wait_socket(
			c->conn, st == PGRES_POLLING_READING ? POLLIN : POLLOUT,
			deadline);
		if (ready == 0)
			return 1;
		if (ready < 0)
			return -1;
		st = step(c->conn);
	}
}

/*
 * The answer to what was just sent (PQsend*()), within c->reply_ms: the
 * last result as PQexec() would return it, or NULL (c->timed_out set
 * when the time ran out).
 */
static PGresult *result_bounded(struct pdb *c, int sent)
{
	int64_t deadline = now_ms() + c->reply_ms;
	PGresult *last = NULL, *r;
	int ready;

	if (!sent)
		return NULL;
	for (;;) {
		while (PQisBusy(c->conn)) {
			ready = wait_socket(c->conn, POLLIN, deadline);
			if (ready == 0) {
				c->timed_out = 1;
				PQclear(last);
				return NULL;
			}
			if (ready < 0 || !PQconsumeInput(c->conn)) {
				PQclear(last);
				return NULL;
			}
		}
		r = PQgetResult(c->conn);
		if (!r)
			return last;
		/* keep the first failure, as PQexec() does */
		if (last && PQresultStatus(last) == PGRES_FATAL_ERROR) {
			PQclear(r);
			continue;
		}
		PQclear(last);
		last = r;
	}
}

static PGresult *run_exec(struct pdb *c, const char *sql)
{
	if (!c->reply_ms)
		return PQexec(c->conn, sql);
	return result_bounded(c, PQsendQuery(c->conn, sql));
}

static PGresult *run_prepare(struct pdb *c, const char *name, const char *sql,
			     int n, const Oid *types)
{
	if (!c->reply_ms)
		return PQprepare(c->conn, name, sql, n, types);
	return result_bounded(c, PQsendPrepare(c->conn, name, sql, n, types));
}

static PGresult *run_prepared(struct pdb *c, const char *name, int n,
			      const char *const *values, const int *lengths,
			      const int *formats)
{
	if (!c->reply_ms)
		return PQexecPrepared(c->conn, name, n, values, lengths,
				      formats, 1);
	return result_bounded(c, PQsendQueryPrepared(c->conn, name, n, values,
						     lengths, formats, 1));
}

/* The failure in res (NULL: the connection's) as our code. */
static int fail_res(struct pdb *c, PGresult *res)
{
	char line[PB_ERRMSG_MAX];
	const char *state = NULL;
	int code;

	if (!res && c->timed_out) {
		c->retryable = 0;
		if (c->in_tx)
			c->tx_failed = 1;
		return err_set(PB_ETEMP,
			       "no answer from the server within %d ms",
			       c->reply_ms);
	}
	if (res && PQresultStatus(res) == PGRES_FATAL_ERROR)
		state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	if (state) {
		code = code_from_sqlstate(state, &c->retryable);
		one_line(line, sizeof(line),
			 PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
	} else {
		/* No answer: the connection is gone or broken. */
		c->retryable = 0;
		code = PB_ETEMP;
		one_line(line, sizeof(line), PQerrorMessage(c->conn));
		if (!line[0])
			snprintf(line, sizeof(line),
				 "no answer from the server");
	}
	if (c->in_tx)
		c->tx_failed = 1;
	if (state)
		return err_set(code, "%s (SQLSTATE %s)", line, state);
	return err_set(code, "%s", line);
}

/* Run a command without parameters or rows. */
static int command(struct pdb *c, const char *sql)
{
	PGresult *res = run_exec(c, sql);
	int rc = 0;

	if (!res || (PQresultStatus(res) != PGRES_COMMAND_OK &&
		     PQresultStatus(res) != PGRES_TUPLES_OK))
		rc = fail_res(c, res);
	PQclear(res);
	return rc;
}

/* Server notices (a skipped CREATE ... IF NOT EXISTS) are not ours to
 * print on stderr. */
static void on_notice(void *arg, const char *msg)
{
	char line[PB_ERRMSG_MAX];

	(void)arg;
	one_line(line, sizeof(line), msg);
	log_debug("postgresql: %s", line);
}

/* The settings of every session. */
static int session_setup(struct pdb *c)
{
	char sql[128];
	int rc;

	PQsetNoticeProcessor(c->conn, on_notice, NULL);
	/* 0 would mean "wait for ever" to PostgreSQL, "never wait" to
	 * SQLite's busy timeout. */
	snprintf(sql, sizeof(sql), "SET lock_timeout = %d",
		 c->busy_ms > 0 ? c->busy_ms : 1);
	rc = command(c, sql);
	if (!rc)
		rc = command(c, "SET default_transaction_isolation = "
				"'read committed'");
	if (!rc && c->mode == DB_READ_ONLY)
		rc = command(c, "SET default_transaction_read_only = on");
	c->generation++;
	if (!c->generation)
		c->generation++;
	return rc;
}

/*
 * A failed connection: our code and message.  Authentication and a
 * missing database are recognised by the server's words.
 */
static int connect_failed(struct pdb *c)
{
	char line[PB_ERRMSG_MAX];
	const char *msg = PQerrorMessage(c->conn);

	/* libpq prefixes "connection to server at ... failed: " */
	one_line(line, sizeof(line), msg);
	if (PQconnectionNeedsPassword(c->conn) ||
	    strstr(msg, "authentication failed") ||
	    strstr(msg, "no pg_hba.conf entry") ||
	    strstr(msg, "no password supplied") ||
	    (strstr(msg, "role \"") && strstr(msg, "does not exist")))
		return err_set(PB_EPERM, "authentication failed: %s", line);
	/* Not "not found": that is a database the daemon has yet to
	 * create tables in, not one the administrator has to create. */
	if (strstr(msg, "database \"") && strstr(msg, "does not exist"))
		return err_set(PB_ERROR, "no such database: %s", line);
	return err_set(PB_ETEMP, "cannot connect: %s", line);
}

/*
 * Before a statement or a transaction outside one: notice a connection
 * the server closed meanwhile, and connect again.
 */
static int ensure_connected(struct pdb *c)
{
	int rc;

	if (c->timed_out)
		return err_set(PB_ETEMP,
			       "the server gave no answer within %d "
			       "ms before: connection given up",
			       c->reply_ms);
	if (c->in_tx)
		return 0;
	if (PQstatus(c->conn) == CONNECTION_OK) {
		/* Reads what the server sent while we were idle: a
		 * terminated session's error and end of file. */
		if (PQconsumeInput(c->conn) &&
		    PQstatus(c->conn) == CONNECTION_OK)
			return 0;
	}
	if (!c->reply_ms) {
		PQreset(c->conn);
	} else if (!PQresetStart(c->conn)) {
		return connect_failed(c);
	} else {
		rc = connect_bounded(c, PQresetPoll);
		if (rc > 0) {
			c->timed_out = 1;
			return err_set(PB_ETEMP,
				       "cannot connect: no answer "
				       "within %d ms",
				       c->reply_ms);
		}
	}
	if (PQstatus(c->conn) != CONNECTION_OK)
		return connect_failed(c);
	log_notice("postgresql: connected again to %s:%s", PQhost(c->conn),
		   PQport(c->conn));
	return session_setup(c);
}

static void p_close(struct db *db)
{
	struct pdb *c = pdb(db);

	PQfinish(c->conn);
	free(c);
}

/* "?N" -> "$N" outside quotes; *nparams gets the highest N. */
static int convert(char **out, int *nparams, const char *sql)
{
	size_t n = strlen(sql), i;
	char *d = xmalloc(n + 1), q = 0;
	size_t k = 0;
	int max = 0;

	for (i = 0; i < n; i++) {
		char ch = sql[i];

		if (q) {
			if (ch == q)
				q = 0;
		} else if (ch == '\'' || ch == '"') {
			q = ch;
		} else if (ch == '?') {
			int v = 0;

			if (sql[i + 1] < '1' || sql[i + 1] > '9')
				BUG("statement with a bare '?': %s", sql);
			ch = '$';
			d[k++] = ch;
			while (sql[i + 1] >= '0' && sql[i + 1] <= '9') {
				v = v * 10 + (sql[i + 1] - '0');
				d[k++] = sql[++i];
			}
			if (v > PARAMS_MAX)
				BUG("statement with parameter ?%d", v);
			if (v > max)
				max = v;
			continue;
		}
		d[k++] = ch;
	}
	d[k] = '\0';
	*out = d;
	*nparams = max;
	return 0;
}

static int p_prepare(struct db_stmt **out, struct db *db, const char *sql)
{
	struct pdb *c = pdb(db);
	struct db_stmt *s = xcalloc(1, sizeof(*s));

	s->c = c;
	convert(&s->sql, &s->nparams, sql);
	snprintf(s->name, sizeof(s->name), "pb_%u", ++c->next_id);
	s->row = -1;
	*out = s;
	return 0;
}

static void p_reset(struct db_stmt *s)
{
	PQclear(s->res);
	s->res = NULL;
	s->row = -1;
	s->nrows = 0;
	s->changes = 0;
	memset(s->p, 0, sizeof(s->p));
}

/* The server's copy goes with the session: names are never reused. */
static void p_finalize(struct db_stmt *s)
{
	p_reset(s);
	free(s->sql);
	free(s);
}

static struct param *param(struct db_stmt *s, int i, Oid type)
{
	struct param *p;

	if (i < 1 || i > s->nparams)
		BUG("parameter %d of a statement with %d", i, s->nparams);
	p = &s->p[i - 1];
	if (s->prepared && s->types[i - 1] != type)
		BUG("parameter %d of %s changes its type", i, s->name);
	memset(p, 0, sizeof(*p));
	p->type = type;
	return p;
}

static void p_bind_int(struct db_stmt *s, int i, int64_t v)
{
	struct param *p = param(s, i, OID_INT8);
	uint64_t u = (uint64_t)v;
	int k;

	for (k = 7; k >= 0; k--, u >>= 8)
		p->i8[k] = (unsigned char)(u & 0xff);
	p->value = (const char *)p->i8;
	p->length = 8;
}

static void p_bind_int_null(struct db_stmt *s, int i)
{
	param(s, i, OID_INT8)->isnull = 1;
}

static void p_bind_bytes(struct db_stmt *s, int i, const void *v, size_t len)
{
	struct param *p = param(s, i, OID_BYTEA);

	if (!v) {
		p->isnull = 1;
		return;
	}
	if (len > (size_t)INT32_MAX)
		BUG("a %zu-byte parameter", len);
	p->value = len ? v : "";
	p->length = (int)len;
}

static void p_bind_text(struct db_stmt *s, int i, const char *v, size_t len)
{
	p_bind_bytes(s, i, v, len);
}

static void p_bind_blob(struct db_stmt *s, int i, const void *v, size_t len)
{
	p_bind_bytes(s, i, v, len);
}

static int prepare_now(struct db_stmt *s)
{
	PGresult *res;
	int i, rc = 0;

	for (i = 0; i < s->nparams; i++) {
		if (!s->p[i].type)
			BUG("parameter %d of %s is not bound", i + 1, s->name);
		s->types[i] = s->p[i].type;
	}
	res = run_prepare(s->c, s->name, s->sql, s->nparams, s->types);
	if (!res || PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = fail_res(s->c, res);
	else
		s->prepared = s->c->generation;
	PQclear(res);
	return rc;
}

static int p_step(struct db_stmt *s)
{
	const char *values[PARAMS_MAX];
	int lengths[PARAMS_MAX], formats[PARAMS_MAX];
	ExecStatusType st;
	int i, rc;

	if (s->res) {
		if (s->row + 1 < s->nrows) {
			s->row++;
			return 1;
		}
		s->row = s->nrows;
		return 0;
	}
	s->c->retryable = 0;
	rc = ensure_connected(s->c);
	if (rc)
		return rc;
	if (s->prepared != s->c->generation) {
		rc = prepare_now(s);
		if (rc)
			return rc;
	}
	for (i = 0; i < s->nparams; i++) {
		if (s->p[i].type != s->types[i])
			BUG("parameter %d of %s is not bound", i + 1, s->name);
		values[i] = s->p[i].isnull ? NULL : s->p[i].value;
		lengths[i] = s->p[i].length;
		formats[i] = 1;
	}
	s->res = run_prepared(s->c, s->name, s->nparams, values, lengths,
			      formats);
	st = s->res ? PQresultStatus(s->res) : PGRES_FATAL_ERROR;
	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
		rc = fail_res(s->c, s->res);
		PQclear(s->res);
		s->res = NULL;
		return rc;
	}
	s->nrows = PQntuples(s->res);
	s->changes = strtoll(PQcmdTuples(s->res), NULL, 10);
	s->row = 0;
	return s->nrows > 0 ? 1 : 0;
}

static int have_value(struct db_stmt *s, int i)
{
	return s->res && s->row >= 0 && s->row < s->nrows && i >= 0 &&
	       i < PQnfields(s->res) && !PQgetisnull(s->res, s->row, i);
}

static int p_column_null(struct db_stmt *s, int i)
{
	return !have_value(s, i);
}

static int64_t be(const unsigned char *p, int n)
{
	uint64_t v = 0;
	int k;

	for (k = 0; k < n; k++)
		v = v << 8 | p[k];
	/* sign-extend the narrower types */
	if (n < 8 && (p[0] & 0x80))
		v |= ~(uint64_t)0 << (8 * n);
	return (int64_t)v;
}

static int64_t p_column_int(struct db_stmt *s, int i)
{
	const unsigned char *v;
	int len;

	if (!have_value(s, i))
		return 0;
	v = (const unsigned char *)PQgetvalue(s->res, s->row, i);
	len = PQgetlength(s->res, s->row, i);
	switch (PQftype(s->res, i)) {
	case OID_INT8:
	case OID_INT4:
	case OID_INT2:
		if (len == 8 || len == 4 || len == 2)
			return be(v, len);
		break;
	case OID_BOOL:
		if (len == 1)
			return v[0] != 0;
		break;
	default:
		break;
	}
	log_error("postgresql: column %d of %s is not an integer (type %u)", i,
		  s->name, (unsigned)PQftype(s->res, i));
	return 0;
}

static const char *p_column_bytes(struct db_stmt *s, int i, size_t *len)
{
	*len = 0;
	if (!have_value(s, i))
		return NULL;
	*len = (size_t)PQgetlength(s->res, s->row, i);
	return PQgetvalue(s->res, s->row, i);
}

static int64_t p_changes(struct db_stmt *s)
{
	return s->changes;
}

static int p_exec(struct db *db, const char *script)
{
	struct pdb *c = pdb(db);
	int rc;

	c->retryable = 0;
	rc = ensure_connected(c);
	return rc ? rc : command(c, script);
}

static int p_begin(struct db *db, enum db_tx kind)
{
	static const char *const sql[] = {
		[DB_TX_READ] = "BEGIN ISOLATION LEVEL REPEATABLE READ, "
			       "READ ONLY",
		[DB_TX_WRITE] = "BEGIN ISOLATION LEVEL SERIALIZABLE",
		[DB_TX_MIGRATE] = "BEGIN ISOLATION LEVEL READ COMMITTED",
	};
	struct pdb *c = pdb(db);
	int rc;

	if (c->in_tx)
		BUG("db_begin inside a transaction");
	c->retryable = 0;
	rc = ensure_connected(c);
	if (!rc)
		rc = command(c, sql[kind]);
	if (rc)
		return rc;
	c->in_tx = 1;
	c->tx_failed = 0;
	/* One migrator at a time, over every host; held until the end. */
	if (kind == DB_TX_MIGRATE)
		rc = command(c,
			     "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK ")");
	return rc;
}

static void end_tx(struct pdb *c)
{
	c->in_tx = 0;
	c->tx_failed = 0;
}

static int p_rollback(struct db *db)
{
	struct pdb *c = pdb(db);
	int rc = 0;

	if (!c->in_tx)
		return 0;
	if (PQstatus(c->conn) == CONNECTION_OK)
		rc = command(c, "ROLLBACK");
	end_tx(c);
	/* A connection lost meanwhile took the transaction with it. */
	return PQstatus(c->conn) == CONNECTION_OK ? rc : 0;
}

static int p_commit(struct db *db)
{
	struct pdb *c = pdb(db);
	int retryable = c->retryable, rc;

	if (c->tx_failed) {
		p_rollback(db);
		c->retryable = retryable;
		return err_set(PB_ETEMP, "the transaction was rolled back "
					 "after an earlier error");
	}
	rc = command(c, "COMMIT");
	/* A failed COMMIT ends the transaction: rolled back. */
	end_tx(c);
	return rc;
}

static int p_savepoint(struct db *db)
{
	struct pdb *c = pdb(db);
	int rc;

	c->sp_failed = c->tx_failed;
	rc = command(c, "SAVEPOINT store_unit");
	return rc;
}

static int p_release(struct db *db, int ok)
{
	struct pdb *c = pdb(db);
	int retryable = c->retryable, rc;

	if (ok && !c->tx_failed) {
		rc = command(c, "RELEASE SAVEPOINT store_unit");
		if (!rc)
			return 0;
	}
	if (c->sp_failed)
		return err_set(PB_ETEMP, "the transaction was rolled back "
					 "after an earlier error");
	rc = command(c, "ROLLBACK TO SAVEPOINT store_unit");
	if (!rc)
		rc = command(c, "RELEASE SAVEPOINT store_unit");
	if (!rc)
		c->tx_failed = 0; /* the transaction is usable again */
	c->retryable = retryable;
	return ok ? err_set(PB_ETEMP, "the unit was rolled back") : rc;
}

static int p_in_tx(struct db *db)
{
	return pdb(db)->in_tx;
}

static int p_retryable(struct db *db)
{
	return pdb(db)->retryable;
}

static const struct db_ops pg_ops = {
	.close = p_close,
	.prepare = p_prepare,
	.finalize = p_finalize,
	.bind_int = p_bind_int,
	.bind_int_null = p_bind_int_null,
	.bind_text = p_bind_text,
	.bind_blob = p_bind_blob,
	.step = p_step,
	.column_null = p_column_null,
	.column_int = p_column_int,
	.column_bytes = p_column_bytes,
	.changes = p_changes,
	.reset = p_reset,
	.exec = p_exec,
	.begin = p_begin,
	.commit = p_commit,
	.rollback = p_rollback,
	.savepoint = p_savepoint,
	.release = p_release,
	.in_tx = p_in_tx,
	.retryable = p_retryable,
};

/* "postgresql://HOST:PORT/DB" from what libpq resolved: no secret. */
static char *conn_name(PGconn *conn)
{
	const char *host = PQhost(conn), *port = PQport(conn);
	const char *db = PQdb(conn);
	int sock;

	if (!host || !*host)
		host = "localhost";
	if (!port)
		port = "";
	sock = *host == '/';
	return xasprintf("postgresql://%s%s%s%s%s/%s", sock ? "[" : "", host,
			 sock ? "]" : "", *port ? ":" : "", port, db ? db : "");
}

int db_pg_open(struct db **out, char **name, const char *conninfo,
	       enum db_mode mode, int busy_ms, int reply_ms)
{
	/* Ours first: what the connection string says overrides them. */
	const char *const keys[] = { "connect_timeout", "application_name",
				     "dbname", NULL };
	const char *const vals[] = { "10", "patchbridge", conninfo, NULL };
	struct pdb *c;
	int rc;

	*out = NULL;
	*name = NULL;
	c = xcalloc(1, sizeof(*c));
	c->db.ops = &pg_ops;
	c->db.dialect = DB_POSTGRESQL;
	c->mode = mode;
	c->busy_ms = busy_ms;
	c->reply_ms = reply_ms > 0 ? reply_ms : 0;
	if (c->reply_ms)
		c->conn = PQconnectStartParams(keys, vals, 1);
	else
		c->conn = PQconnectdbParams(keys, vals, 1);
	if (!c->conn) {
		free(c);
		*name = xstrdup("postgresql");
		return err_set(PB_ERROR, "libpq: out of memory");
	}
	rc = c->reply_ms ? connect_bounded(c, PQconnectPoll) : 0;
	*name = conn_name(c->conn);
	if (rc > 0)
		rc = err_set(PB_ETEMP, "cannot connect: no answer within %d ms",
			     c->reply_ms);
	else if (PQstatus(c->conn) != CONNECTION_OK)
		rc = connect_failed(c);
	else
		rc = session_setup(c);
	if (rc) {
		p_close(&c->db);
		return rc;
	}
	*out = &c->db;
	return 0;
}
