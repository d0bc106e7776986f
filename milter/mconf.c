#include "milter/mconf.h"

#include "core/preflight.h"
#include "core/secret.h"
#include "milter/diffcache.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mconf {
	atomic_int refs;
	struct mconf_view view;
	struct config *cfg; /* owned; view.cfg points here */
	struct spool *spool; /* owned; view.spool points here */
	struct diffcache *diffs; /* owned; view.diffs calls into it */
	struct classify_diffs hooks; /* view.diffs points here */
	int busy_timeout_ms; /* [state] busy_timeout */
	pthread_mutex_t lock; /* guards the fields below */
	struct store *idle[MCONF_STORES_MAX]; /* pooled connections */
	size_t nr_idle;
	int missing_logged; /* "cannot open it" said once */
	int shared_state; /* [state] backend = postgresql */
	/* The shared database's connection string ([milter] conninfo_file;
	 * empty: the milter reads the copy only). */
	struct buf conninfo;
	int db_timeout_ms; /* [milter] db_timeout */
	struct store *shared_idle[MCONF_STORES_MAX];
	size_t nr_shared_idle;
	int64_t shared_resume; /* monotonic ms: read it again from then */
	int shared_down_logged;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mconf_new(struct mconf **out, struct strlist *errs, const char *path)
{
	struct mconf *c;
	const char *ar;
	int rc;

	*out = NULL;
	c = xcalloc(1, sizeof(*c));
	atomic_init(&c->refs, 1);
	c->conninfo = (struct buf)BUF_INIT(SECRET_MAX + 1);
	pthread_mutex_init(&c->lock, NULL);
	rc = config_load(&c->cfg, errs, path);
	if (rc)
		goto fail;
	/* Never make state as the wrong user (preflight.h): before the
	 * spool makes anything. */
	rc = preflight_root(c->cfg);
	if (rc)
		goto fail;
	rc = spool_open(&c->spool, config_str(c->cfg, CFG_SPOOL_DIR),
			SPOOL_WRITER);
	if (rc == PB_EPERM) {
		/* Which owners and modes, and what the layout wants. */
		struct buf why = BUF_INIT(PB_LOGLINE_MAX);
		char first[PB_ERRMSG_MAX];

		snprintf(first, sizeof(first), "%s", err_msg());
		preflight_explain(&why, config_str(c->cfg, CFG_SPOOL_DIR));
		log_error("%s", first);
		err_set(PB_EPERM, "%s", why.data);
		buf_release(&why);
	}
	if (rc)
		goto fail;
	c->view.cfg = c->cfg;
	c->view.spool = c->spool;
	c->view.max_message = config_size(c->cfg, CFG_MILTER_MAX_MESSAGE_SIZE);
	if (c->view.max_message > PB_MAIL_MAX_MAX)
		c->view.max_message = PB_MAIL_MAX_MAX;
	c->view.memory_limit = config_size(c->cfg, CFG_MILTER_MEMORY_LIMIT);
	rc = spool_set_limits(c->spool,
			      (size_t)config_int(c->cfg, CFG_SPOOL_MAX_RECORDS),
			      c->view.max_message);
	if (rc)
		goto fail;
	c->view.domain = config_str(c->cfg, CFG_BRIDGE_DOMAIN);
	c->view.address = config_str(c->cfg, CFG_BRIDGE_ADDRESS);
	ar = config_str(c->cfg, CFG_MILTER_TRUSTED_AUTHSERV_ID);
	c->view.authserv_id = ar[0] ? ar : NULL;
	c->view.authres_fields =
		(size_t)config_int(c->cfg, CFG_MILTER_TRUSTED_AUTHRES_FIELDS);
	c->view.state_path = config_str(c->cfg, CFG_STATE_PATH);
	c->view.submissions = config_takes_submissions(c->cfg);
	c->busy_timeout_ms =
		(int)config_duration_ms(c->cfg, CFG_STATE_BUSY_TIMEOUT);
	c->diffs = diffcache_new();
	diffcache_hooks(&c->hooks, c->diffs);
	c->view.diffs = &c->hooks;
	c->shared_state = config_enum(c->cfg, CFG_STATE_BACKEND) ==
			  CONFIG_BACKEND_POSTGRESQL;
	c->db_timeout_ms =
		(int)config_duration_ms(c->cfg, CFG_MILTER_DB_TIMEOUT);
	if (c->shared_state &&
	    config_str(c->cfg, CFG_MILTER_CONNINFO_FILE)[0]) {
		rc = secret_read(&c->conninfo,
				 config_str(c->cfg, CFG_MILTER_CONNINFO_FILE),
				 0);
		if (rc) {
			err_prefix(rc, "[milter] conninfo_file");
			goto fail;
		}
	}
	*out = c;
	return 0;
fail:
	mconf_unref(c);
	return rc;
}

struct mconf *mconf_ref(struct mconf *c)
{
	atomic_fetch_add(&c->refs, 1);
	return c;
}

void mconf_unref(struct mconf *c)
{
	size_t i;

	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	for (i = 0; i < c->nr_idle; i++)
		store_free(c->idle[i]);
	for (i = 0; i < c->nr_shared_idle; i++)
		store_free(c->shared_idle[i]);
	secret_wipe(&c->conninfo);
	spool_free(c->spool);
	diffcache_free(c->diffs);
	config_free(c->cfg);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

const struct mconf_view *mconf_view(const struct mconf *c)
{
	return &c->view;
}

/*
 * The shared database, unless it failed within the last
 * MCONF_DB_RESUME_MS: 0 with a store, PB_ENOTFOUND when it is not to be
 * read now, or the failure to open it (which starts that pause).
 */
static int shared_get(struct store **out, struct mconf *c)
{
	struct store_opts o;
	int rc;

	if (!c->conninfo.len)
		return PB_ENOTFOUND;
	pthread_mutex_lock(&c->lock);
	if (mono_ms() < c->shared_resume) {
		pthread_mutex_unlock(&c->lock);
		return PB_ENOTFOUND;
	}
	if (c->nr_shared_idle)
		*out = c->shared_idle[--c->nr_shared_idle];
	pthread_mutex_unlock(&c->lock);
	if (*out)
		return 0;
	memset(&o, 0, sizeof(o));
	o.backend = STORE_BACKEND_POSTGRESQL;
	o.target = c->conninfo.data;
	o.flags = STORE_RO;
	o.busy_timeout_ms = c->db_timeout_ms;
	o.reply_timeout_ms = c->db_timeout_ms;
	rc = store_open_opts(out, &o);
	if (rc)
		mconf_store_put(c, NULL, MCONF_SHARED, 1);
	return rc;
}

int mconf_store_get(struct store **out, enum mconf_map *which, struct mconf *c)
{
	int rc;

	*out = NULL;
	*which = MCONF_SHARED;
	if (c->shared_state && !shared_get(out, c))
		return 0;
	/*
	 * Mail flow never waits for a database server (DESIGN.md rule 1):
	 * on a shared PostgreSQL state the milter reads this host's copy of
	 * the thread map (at [state] path, kept by the daemon) whenever the
	 * database is not configured for it or did not answer in time.
	 */
	*which = MCONF_LOCAL;
	pthread_mutex_lock(&c->lock);
	if (c->nr_idle)
		*out = c->idle[--c->nr_idle];
	pthread_mutex_unlock(&c->lock);
	if (*out)
		return 0;

	rc = store_open(out, c->view.state_path, STORE_RO, c->busy_timeout_ms);
	pthread_mutex_lock(&c->lock);
	if (rc) {
		/* PB_ENOTFOUND: the daemon has not created it yet */
		if (!c->missing_logged)
			log_warn("thread map %s%s: %s (%s); until it opens, "
				 "replies are placed by their Message-IDs "
				 "only",
				 c->shared_state ? "copy " : "",
				 c->view.state_path, err_msg(), err_name(rc));
		c->missing_logged = 1;
	} else {
		c->missing_logged = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void mconf_store_put(struct mconf *c, struct store *st, enum mconf_map which,
		     int broken)
{
	struct store **idle = which == MCONF_SHARED ? c->shared_idle : c->idle;
	size_t *nr = which == MCONF_SHARED ? &c->nr_shared_idle : &c->nr_idle;

	pthread_mutex_lock(&c->lock);
	if (which == MCONF_SHARED && broken) {
		/* Pause the database; its connections are all suspect. */
		if (!c->shared_down_logged)
			log_warn("thread map: PostgreSQL: %s; for %d s the "
				 "milter reads this host's copy %s",
				 err_msg(), MCONF_DB_RESUME_MS / 1000,
				 c->view.state_path);
		c->shared_down_logged = 1;
		c->shared_resume = mono_ms() + MCONF_DB_RESUME_MS;
	} else if (which == MCONF_SHARED && st) {
		if (c->shared_down_logged)
			log_notice("thread map: PostgreSQL answers again");
		c->shared_down_logged = 0;
	}
	if (st && !broken && *nr < MCONF_STORES_MAX) {
		idle[(*nr)++] = st;
		st = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	store_free(st);
}

/* The current generation: the milter's one piece of global state. */
static pthread_mutex_t current_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mconf *current;

struct mconf *mconf_current(void)
{
	struct mconf *c;

	pthread_mutex_lock(&current_lock);
	c = current ? mconf_ref(current) : NULL;
	pthread_mutex_unlock(&current_lock);
	return c;
}

void mconf_install(struct mconf *c)
{
	struct mconf *old;

	pthread_mutex_lock(&current_lock);
	old = current;
	current = c;
	pthread_mutex_unlock(&current_lock);
	mconf_unref(old);
}
