/*
 * storeq - the inside of the state store, shared by its files
 * (store.c and store_*.c) and by nothing outside bridge/state/: the
 * connection (struct store), the statements by id (their text is in
 * store_query.c), the query layer that binds and reads them, the column
 * positions of each table's rows, the checks of what callers pass in,
 * and the generic row binding (struct row_type).
 *
 * Ownership and errors as in store.h: a col_own*() string belongs to the
 * record's owned list; failures are a negative code with err_msg() set,
 * prefixed with the database's name by db_fail().  Not thread safe: a
 * store is used from one thread at a time.
 */
#ifndef PB_STATE_STOREQ_H
#define PB_STATE_STOREQ_H

#include "state/db.h"
#include "state/store.h"
#include "util/err.h"
#include "util/printable.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* A unit that meets a serialization failure runs again, this often. */
#define STORE_TRIES 12
/* "No limit" for statements with a LIMIT parameter. */
#define NO_LIMIT INT64_MAX

/* Positions in MAIL_READ_COLS (store_query.c), a thread-map row. */
enum {
	MC_MSGID,
	MC_PROJECT,
	MC_IID,
	MC_REVISION,
	MC_PATCH,
	MC_TOTAL,
	MC_KIND,
	MC_COMMIT,
	MC_BASE,
	MC_START,
	MC_HEAD,
	MC_VERSION,
	MC_DIFF,
	MC_DISCUSSION,
	MC_NOTE,
	MC_STATE,
	MC_CREATED,
	MC_SENT,
	MC_SENT_BY,
	MC_SENT_HOW, /* MAIL_READ_COLS only */
};

/* Positions in REV_COLS, a revision row. */
enum {
	RC_PROJECT,
	RC_IID,
	RC_REVISION,
	RC_HEAD,
	RC_BASE,
	RC_START,
	RC_VERSION,
	RC_PATCH_ID,
	RC_PATCHES,
	RC_COVER,
	RC_STATE,
	RC_CREATED,
	RC_SENT,
};

/* Positions in IN_COLS, an inbound journal row. */
enum {
	IC_MSGID,
	IC_SPOOL,
	IC_PROJECT,
	IC_IID,
	IC_REVISION,
	IC_PATCH,
	IC_CLASS,
	IC_STATE,
	IC_ATTEMPTS,
	IC_NEXT,
	IC_ERROR,
	IC_CREATED,
	IC_UPDATED,
	IC_SPOOLED_BY,
	IC_CLAIMED_BY,
	IC_LEASE,
};

/* Positions in OUT_SELECT, the queue joined with the thread map. */
enum {
	OC_MSGID,
	OC_PROJECT,
	OC_IID,
	OC_REVISION,
	OC_PATCH,
	OC_FROM,
	OC_RCPTS,
	OC_MESSAGE,
	OC_STATE,
	OC_ATTEMPTS,
	OC_NEXT,
	OC_ERROR,
	OC_CREATED,
	OC_UPDATED,
	OC_CLAIMED_BY,
	OC_LEASE,
	OC_HANDED,
};

/* Positions in NOTICE_COLS, a notice row. */
enum {
	NC_MSGID,
	NC_NOTICE,
	NC_RECIPIENT,
	NC_DECISION,
	NC_REASONS,
	NC_CREATED,
};

/* Positions in ACT_COLS, a forge action row. */
enum {
	AC_MSGID,
	AC_INDEX,
	AC_KIND,
	AC_MARKER,
	AC_STATE,
	AC_NOTE,
	AC_DISCUSSION,
	AC_ATTEMPTS,
	AC_ERROR,
	AC_CREATED,
	AC_UPDATED,
	AC_HOST,
};

/* Positions in SUB_COLS, a submitted series' row. */
enum {
	SUC_SERIES,
	SUC_SENDER,
	SUC_PROJECT,
	SUC_VERSION,
	SUC_TOTAL,
	SUC_STATE,
	SUC_IID,
	SUC_CREATED,
	SUC_UPDATED,
};

/* Every statement; its text is stmt_sql[id] in store_query.c. */
enum stmt_id {
	S_VERSION_TABLE,
	S_USER_VERSION,
	S_MAIL_PUT,
	S_MAIL_MARK_SENT,
	S_MAIL_GET,
	S_MAIL_FIND,
	S_MAIL_LIST_REVISION,
	S_MAIL_BY_DISCUSSION,
	S_MAIL_BY_NOTE,
	S_MAIL_LAST_SENT,
	S_MAIL_SINCE,
	S_HOSTS,
	S_MIRROR_MAIL,
	S_MIRROR_MAIL_STATE,
	S_MIRROR_REV,
	S_MIRROR_REV_STATE,
	S_REV_START,
	S_REV_MARK_SENT,
	S_REV_GET,
	S_REV_LATEST,
	S_REV_BY_HEAD,
	S_REV_BY_BASE,
	S_IN_RECORD,
	S_IN_CLAIM,
	S_IN_FINISH,
	S_IN_WAIT,
	S_IN_PLACE,
	S_IN_RENEW,
	S_IN_HOLDER,
	S_IN_RECOVER,
	S_IN_LIST,
	S_IN_GET,
	S_IN_COUNT,
	S_IN_SPOOL_RECORD,
	S_ACT_INSERT,
	S_ACT_AGAIN,
	S_ACT_GET,
	S_ACT_COMPLETE,
	S_ACT_FAIL,
	S_ACT_LIST,
	S_ACT_BY_DISCUSSION,
	S_CURSOR_GET,
	S_CURSOR_SET,
	S_RENAME_HAS,
	S_RENAME_REV_COPY,
	S_RENAME_MAIL,
	S_RENAME_REV_DROP,
	S_RENAME_INBOUND,
	S_RENAME_ARCHIVE,
	S_RENAME_SUBMISSIONS,
	S_RENAME_CURSORS,
	S_RENAME_CURSOR_DROP,
	S_RENAME_CURSOR,
	S_CURSOR_BY_VALUE,
	S_REV_LIST,
	S_REV_LIST_ALL,
	S_REV_RECENT,
	S_OUT_PUT,
	S_OUT_EXISTS,
	S_OUT_GET,
	S_OUT_LIST,
	S_OUT_CLAIM,
	S_OUT_HOLDER,
	S_OUT_HAND,
	S_OUT_WAIT,
	S_OUT_DEFER,
	S_OUT_FAIL,
	S_OUT_REQUEUE,
	S_OUT_DELETE,
	S_OUT_LEFT,
	S_OUT_REV_SENT,
	S_ARCH_FROM_OUT,
	S_ARCH_PUT,
	S_ARCH_GET,
	S_ARCH_LIST,
	S_ARCH_MISSING,
	S_ARCH_PRUNE,
	S_VERDICT_CLEAR,
	S_VERDICT_PUT,
	S_VERDICT_LIST,
	S_SUB_PUT,
	S_SUB_GET,
	S_SUB_WHOLE,
	S_SUB_LIST_WHOLE,
	S_SUB_FINISH,
	S_SUB_LIST_OPENED,
	S_SUBM_PUT,
	S_SUBM_GET,
	S_SUBM_LIST,
	S_SUB_BYTES,
	S_SUB_COUNT_SENDER,
	S_SUB_LIST_DUE,
	S_SUBM_FIRST,
	S_NOTICE_PUT,
	S_NOTICE_GET,
	S_NOTICE_COUNT,
	S_OPTOUT_PUT,
	S_OPTOUT_DELETE,
	S_OPTOUT_GET,
	S_NR
};

struct store {
	struct db *db;
	char *name; /* the file, or postgresql://HOST:PORT/DB */
	unsigned flags;
	enum store_backend backend;
	int in_tx; /* a store_begin() transaction is open */
	char *host;
	int64_t lease; /* seconds */
	uint64_t retries;
	struct db_stmt *stmts[S_NR];
};

static inline int64_t now(void)
{
	return (int64_t)time(NULL);
}

/* Untrusted text (Message-IDs come from the internet) for a message. */
static inline const char *quote(char *dst, size_t size, const char *s)
{
	return printable_copy(dst, size, s, s ? strlen(s) : 0);
}

/* The name of an enum value from its table; "unknown" outside it. */
static inline const char *name_of(const char *const *names, size_t nr, size_t v)
{
	return v < nr && names[v] ? names[v] : "unknown";
}

/*
 * Queries.  A query borrows a cached prepared statement; q_end() resets
 * it for the next user.  Binding failures are reported by the first
 * q_step(), so callers bind without checking each call.  q_exec() keeps
 * the number of rows the statement changed in q->changes.
 */
struct query {
	struct store *st;
	struct db_stmt *stmt;
	const char *what;
	int64_t changes;
};

const char *stmt_text(const struct store *st, enum stmt_id id);
int q_start(struct query *q, struct store *st, enum stmt_id id,
	    const char *what);
/* q_start() for a statement whose ?1 is a Message-ID: checked (as
 * check_str()) before the statement starts, then bound. */
int q_start_msgid(struct query *q, struct store *st, enum stmt_id id,
		  const char *what, const char *message_id);
/* The same for an MR: ?1 its project and ?2 its iid (as check_mr()). */
int q_start_mr(struct query *q, struct store *st, enum stmt_id id,
	       const char *what, const char *project, int64_t iid);
/* Bind parameter i (from 1). */
void q_text(struct query *q, int i, const char *s);
void q_opt(struct query *q, int i, const char *s);
void q_textn(struct query *q, int i, const char *s, size_t len);
void q_blob(struct query *q, int i, const void *p, size_t len);
void q_error(struct query *q, int i, const char *s);
void q_int(struct query *q, int i, int64_t v);
void q_int_or_null(struct query *q, int i, int64_t v);
int q_step(struct query *q);
int q_exec(struct query *q);
void q_end(struct query *q);
/* Step a started query once, read column 0 of its row into out (left as
 * it is when there is none) and end it: a count, a MAX(). */
int q_scalar(struct query *q, int64_t *out);
/* Read column i (from 0) of the current row. */
char *col_str(struct query *q, int i);
char *col_blob(struct query *q, int i, size_t *len);
const char *col_own(struct strlist *owned, struct query *q, int i);
const char *col_own_blob(struct strlist *owned, struct query *q, int i,
			 size_t *len);
int64_t col_int(struct query *q, int i);
int col_enum(struct query *q, int i, const char *const *names, size_t nr);

/*
 * The row binding, written once for every table: a row type is a record
 * struct of store_*.h - its size, where its `owned` list is - and the
 * columns its SELECTs return, in order, each a field of the record
 * described by one struct col (a small table read by row_read(), in
 * place of a hand-written reader per table).  Descriptors are indexed by
 * the table's column enum, so a gap is a bug that row_read() catches.
 */
enum col_kind {
	COL_NONE, /* a gap in a descriptor table: a bug */
	COL_K_TEXT, /* const char *, kept in owned; NULL for SQL NULL */
	COL_K_BLOB, /* const char * (NUL-terminated) and its size_t length */
	COL_K_INT, /* int64_t or int, by the field's size; SQL NULL is 0 */
	COL_K_ENUM, /* an enum from its names[]; an unknown name is PB_ERROR */
	COL_K_ENUM_NULL, /* the same, with SQL NULL read as value 0 */
};

struct col {
	enum col_kind kind;
	size_t off; /* the field */
	size_t size; /* its size */
	size_t len_off; /* COL_K_BLOB: the size_t field of its length */
	const char *const *names; /* COL_K_ENUM*: value -> name */
	size_t nr;
};

#define COL_FIELD_(type, f) offsetof(type, f), sizeof(((type *)0)->f)
#define COL_TEXT(type, f)                                   \
	{                                                   \
		COL_K_TEXT, COL_FIELD_(type, f), 0, NULL, 0 \
	}
#define COL_INT(type, f)                                   \
	{                                                  \
		COL_K_INT, COL_FIELD_(type, f), 0, NULL, 0 \
	}
#define COL_BLOB(type, f, len)                                                \
	{                                                                     \
		COL_K_BLOB, COL_FIELD_(type, f), offsetof(type, len), NULL, 0 \
	}
#define COL_ENUM(type, f, names)                                             \
	{                                                                    \
		COL_K_ENUM, COL_FIELD_(type, f), 0, names, ARRAY_SIZE(names) \
	}
#define COL_ENUM_NULL(type, f, names)                           \
	{                                                       \
		COL_K_ENUM_NULL, COL_FIELD_(type, f), 0, names, \
			ARRAY_SIZE(names)                       \
	}

struct row_type {
	const char *name; /* for BUG() */
	size_t size; /* sizeof the record */
	size_t owned; /* offsetof its struct strlist owned */
	const struct col *cols;
	size_t nr;
};

#define ROW_TYPE(type, cols)                                      \
	{                                                         \
#type, sizeof(type), offsetof(type, owned), cols, \
			ARRAY_SIZE(cols)                          \
	}

/* The record emptied; _release() also frees what its owned list holds. */
void row_init(const struct row_type *t, void *row);
void row_release(const struct row_type *t, void *row);
/*
 * The current row of q into row, an initialised record: the enums are
 * read first, so a row with an unknown value (PB_ERROR) leaves the record
 * as it was; then what it held is released and every column copied in.
 */
int row_read(const struct row_type *t, void *row, struct query *q);
/* Step q and read its row into row, then end q: 1, 0 when q had no row,
 * or an error. */
int row_get(const struct row_type *t, void *row, struct query *q);
/* Each record of an array released, then the array freed. */
void row_array_release(const struct row_type *t, void *items, size_t nr);

/* The rows left in q appended to list (a store_*_list: items, nr,
 * alloc, of t's records); rc is 0 when they are all read, or the error
 * of the step or row that failed.  q stays open for q_end(). */
#define ROW_LIST_READ(rc, t, list, q)                                          \
	do {                                                                   \
		BUG_ON(sizeof(*(list)->items) != (t)->size);                   \
		while (((rc) = q_step(q)) == 1) {                              \
			ALLOC_GROW((list)->items, (list)->nr + 1,              \
				   (list)->alloc);                             \
			row_init((t), &(list)->items[(list)->nr]);             \
			(rc) = row_read((t), &(list)->items[(list)->nr], (q)); \
			if (rc)                                                \
				break;                                         \
			(list)->nr++;                                          \
		}                                                              \
	} while (0)

/* The body of every *_list_release(): each record, then the array. */
#define ROW_LIST_RELEASE(t, list)                                  \
	do {                                                       \
		row_array_release((t), (list)->items, (list)->nr); \
		(list)->items = NULL;                              \
		(list)->nr = (list)->alloc = 0;                    \
	} while (0)

/*
 * The public store_X_init(), store_X_release() and store_X_list_release()
 * of a record type (store.h) over its row type, at file scope; the
 * trailing declaration takes the semicolon.
 */
#define ROW_FUNCTIONS(x, row)                                        \
	void store_##x##_init(struct store_##x *r)                   \
	{                                                            \
		row_init(&(row), r);                                 \
	}                                                            \
	void store_##x##_release(struct store_##x *r)                \
	{                                                            \
		row_release(&(row), r);                              \
	}                                                            \
	void store_##x##_list_release(struct store_##x##_list *list) \
	{                                                            \
		ROW_LIST_RELEASE(&(row), list);                      \
	}                                                            \
	void store_##x##_init(struct store_##x *r)

/* Name -> enum through a table; -1 when unknown. */
int name_index(const char *const *names, size_t nr, const char *s, size_t len);
/* Prefix the driver's message with the database and what was done. */
int db_fail(struct store *st, int rc, const char *what);
/* Checks of what a caller passes in: PB_EINVAL with a message. */
int check_str(const char *what, const char *s, size_t max, int required);
int check_sha(const char *what, const char *s, int required);
int check_token(const char *what, const char *s);
int check_mr(const char *project, int64_t iid);
int claim_holder(int *found, struct store *st, enum stmt_id stmt,
		 const char *message_id, const char *what, int live);

/* 0 when an applying inbound row's claim is st's own or nobody's;
 * PB_EEXISTS naming the host when another host holds it (store_inbound.c,
 * and the forge action journal's fence). */
int inbound_holder(struct store *st, const char *message_id);

/* A thread-map row marked sent, known so in this way (store_mail.c; the
 * queue marks its mails sent with it). */
int mail_mark_sent(struct store *st, const char *message_id,
		   enum store_sent_how how);

/* The schema (store_schema.c): the version the database is at (0: none
 * yet), the error for one newer than this code knows, and the steps to
 * target in one transaction. */
int schema_read_version(struct store *st, int *out);
int schema_too_new(struct store *st, int version);
int schema_migrate(struct store *st, int target);

typedef store_tx_fn unit_fn;
int unit_run(struct store *st, unit_fn fn, void *arg);

/* A limit as a caller passes it (0: STORE_LIST_MAX) for a LIMIT. */
static inline int64_t list_limit(size_t limit)
{
	return limit && limit < STORE_LIST_MAX ? (int64_t)limit :
						 STORE_LIST_MAX;
}

/* A revision copied as it is into another store (store_mail.c's
 * store_threadmap_mirror()). */
int revision_mirror(struct store *dst, const struct store_revision *r);

#endif
