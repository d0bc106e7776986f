#include "milter/mconf.h"

#include "core/preflight.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mconf {
	atomic_int refs;
	struct mconf_view view;
	struct config *cfg; /* owned; view.cfg points here */
	struct spool *spool; /* owned; view.spool points here */
	int busy_timeout_ms; /* [state] busy_timeout */
	pthread_mutex_t lock; /* guards the fields below */
	struct store *idle[MCONF_STORES_MAX]; /* pooled connections */
	size_t nr_idle;
	int missing_logged; /* "cannot open it" said once */
	int shared_state; /* [state] backend = postgresql */
};

int mconf_new(struct mconf **out, struct strlist *errs, const char *path)
{
	struct mconf *c;
	const char *ar;
	int rc;

	*out = NULL;
	c = xcalloc(1, sizeof(*c));
	atomic_init(&c->refs, 1);
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
	c->busy_timeout_ms =
		(int)config_duration_ms(c->cfg, CFG_STATE_BUSY_TIMEOUT);
	c->shared_state = config_enum(c->cfg, CFG_STATE_BACKEND) ==
			  CONFIG_BACKEND_POSTGRESQL;
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
	spool_free(c->spool);
	config_free(c->cfg);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

const struct mconf_view *mconf_view(const struct mconf *c)
{
	return &c->view;
}

int mconf_store_get(struct store **out, struct mconf *c)
{
	int rc;

	*out = NULL;
	/*
	 * Mail flow never waits for a database server (DESIGN.md rule 1):
	 * on a shared PostgreSQL state the milter does not connect, and
	 * places replies by their Message-IDs (the bridge's own scheme) and
	 * leaves the rest to the daemon, which reads the thread map.
	 */
	if (c->shared_state) {
		pthread_mutex_lock(&c->lock);
		if (!c->missing_logged)
			log_notice("thread map: [state] backend is postgresql; "
				   "the milter places replies by their "
				   "Message-IDs only and leaves the rest to "
				   "the daemon");
		c->missing_logged = 1;
		pthread_mutex_unlock(&c->lock);
		return err_set(PB_ENOTFOUND, "the thread map is in a shared "
					     "database the milter does not "
					     "connect to");
	}
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
			log_warn("thread map %s: %s (%s); until it opens, "
				 "replies are placed by their Message-IDs "
				 "only",
				 c->view.state_path, err_msg(), err_name(rc));
		c->missing_logged = 1;
	} else {
		c->missing_logged = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void mconf_store_put(struct mconf *c, struct store *st, int broken)
{
	if (!st)
		return;
	pthread_mutex_lock(&c->lock);
	if (!broken && c->nr_idle < MCONF_STORES_MAX) {
		c->idle[c->nr_idle++] = st;
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
