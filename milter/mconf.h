/*
 * mconf - the milter's loaded configuration and what it opened.
 *
 * One struct mconf is one generation of the configuration: the parsed
 * file (config.h), the spool writer it names, and a small pool of
 * read-only store connections to the thread map.  It is refcounted, like
 * OpenDKIM's per-connection config: a message takes a reference at MAIL
 * FROM and drops it when the message ends, so a SIGHUP reload swaps in a
 * new generation without disturbing messages in flight; the old one is
 * freed when its last message lets go.
 *
 * The current generation is the one piece of mutable global state of the
 * milter (docs/STYLE.md allows the loaded config): mconf_current() and
 * mconf_install() read and swap it under a mutex.
 *
 * The store: SQLite connections may not be shared between threads at the
 * same time (store.h), and Debian's libmilter runs one session on several
 * threads in turn, so a message borrows a connection from the pool for
 * the duration of its end-of-message work and gives it back.  A
 * generation also keeps the parsed diffs of the patches replies answer
 * (diffcache.h), so a reload starts that cache afresh.  A missing
 * database (the daemon has not created it yet) is PB_ENOTFOUND; failures
 * to open are logged once per generation until an open succeeds again.
 *
 * A shared state (backend postgresql): the thread map is read from
 * PostgreSQL when [milter] conninfo_file names a connection string, each
 * connection and statement bounded by [milter] db_timeout (1 s by
 * default, far inside Postfix's milter_command_timeout of 30 s and
 * milter_content_timeout of 300 s).  When the database fails or does not
 * answer in time, the milter reads this host's copy of the thread map
 * (a SQLite file at [state] path that the daemon keeps up to date) for
 * MCONF_DB_RESUME_MS before it tries the database again, so a database
 * that is down costs one message at most db_timeout per pause, and the
 * others nothing.  Without conninfo_file it reads the copy only.
 *
 * Ownership: mconf_new() returns a generation with one reference, owned
 * by the caller; mconf_install() takes that reference over.
 * Thread safety: everything here may be called from any thread.
 * Errors: mconf_new() returns the codes of config_load() (messages in
 * errs), PB_EPERM when preflight_root() refuses to run as root, and
 * the codes of spool_open() (PB_EPERM, PB_ETEMP ... with err_msg(); for
 * PB_EPERM the spool's message is logged and err_msg() says which
 * owners and modes the directories have and the layout wants).
 */
#ifndef PB_MILTER_MCONF_H
#define PB_MILTER_MCONF_H

#include "core/config.h"
#include "mail/classify.h"
#include "state/spool.h"
#include "state/store.h"
#include "util/strlist.h"

#include <stddef.h>

/* Idle store connections kept per generation. */
#define MCONF_STORES_MAX 16

struct mconf;

/* What a session reads from a generation (valid while it holds a ref). */
struct mconf_view {
	const struct config *cfg;
	struct spool *spool; /* the writer; spool_put() is thread-safe */
	size_t max_message; /* [milter] max_message_size, bytes */
	size_t memory_limit; /* [milter] memory_limit, bytes */
	const char *domain; /* [bridge] domain */
	const char *address; /* [bridge] address */
	const char *authserv_id; /* [milter] trusted_authserv_id or NULL */
	size_t authres_fields; /* [milter] trusted_authres_fields */
	const char *state_path; /* [state] path */
	int submissions; /* config_takes_submissions() */
	/* the parents' parsed diffs, kept for the generation's life
	 * (diffcache.h); thread-safe */
	const struct classify_diffs *diffs;
};

/*
 * Load the configuration at path and open the spool it names as a
 * writer, with its limits set.  errs (may be NULL) collects config
 * problems, one per line.
 */
int mconf_new(struct mconf **out, struct strlist *errs, const char *path);

struct mconf *mconf_ref(struct mconf *c);
/* Drop a reference; the last one frees.  NULL is allowed. */
void mconf_unref(struct mconf *c);

const struct mconf_view *mconf_view(const struct mconf *c);

/* How long the milter reads the local copy after the database failed. */
#define MCONF_DB_RESUME_MS 30000

/* Where a borrowed thread map is. */
enum mconf_map {
	MCONF_LOCAL, /* the SQLite state, or this host's copy of it */
	MCONF_SHARED, /* the shared PostgreSQL state */
};

/*
 * Borrow a read-only connection to the thread map (see above; *which
 * says which one): 0, PB_ENOTFOUND when there is no database yet, or
 * another code of store_open().
 */
int mconf_store_get(struct store **out, enum mconf_map *which, struct mconf *c);
/* Give it back; broken = a call on it failed, so close it instead (and,
 * for the shared database, read the local copy for a while). */
void mconf_store_put(struct mconf *c, struct store *st, enum mconf_map which,
		     int broken);

/* A new reference to the current generation, or NULL before the first. */
struct mconf *mconf_current(void);
/* Make c current (taking over the caller's reference); the previous
 * generation loses the reference the holder had. */
void mconf_install(struct mconf *c);

#endif
