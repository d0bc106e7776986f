/*
 * `patchbridge run`: the daemon.
 *
 * One thread does the work: it polls the forge every poll_interval
 * (detect.h), takes merge requests off the work queue (workq.h) and mails
 * their new revisions (outbound.h), and delivers queued mails whose retry
 * is due.  The webhook receiver, when enabled, runs in libmicrohttpd's
 * threads and only puts MRs on the queue, which wakes the main thread: a
 * push or an opened MR on the work queue, a comment (Note Hook) on the
 * comments queue, whose MRs' comments are mailed at once, a finished
 * pipeline (Pipeline Hook) on the pipelines queue, whose results are
 * mailed with the comments (and, when it passed, on the work queue too:
 * a revision held for it, wait_for_pipeline, is mailed).  At each poll
 * the pipelines of the MRs mailed lately are read as well.  A record the
 * milter renames into the spool's new/ wakes it too ([spool] watch:
 * inotify), for the inbound step alone; the spool is also looked at
 * every INBOUND_SCAN_S seconds.  A record that arrives while the forge
 * comments are read (forgemail.h: every discussion of each MR changed
 * lately, many pages on a long conversation) is taken between two pages
 * or two MRs of that reading (forge_set_pause()), not after it.
 *
 * Signals: SIGTERM and SIGINT stop the daemon after the mail being handed
 * to the MTA or the list reply being applied to the forge (what is left
 * stays queued, or spooled, for the next start); SIGHUP
 * reloads the configuration - a file that does not load, or an env that
 * cannot be built from it (an unreadable token, a port in use), is
 * refused with a log line and the old configuration stays in force.  The
 * handlers only set a flag and wake the main loop (the queue's self-pipe).
 * The flags are the only globals besides the config and the log sink:
 * signal handlers can reach nothing else.
 *
 * An MR whose handling failed temporarily (forge or git unreachable) is
 * tried again with backoff; the poll watermark is held before it
 * meanwhile, so a restart looks at it again.  So is the watermark held
 * before every MR a poll queued until it was looked at (detect.h): a stop
 * leaves the rest of the queue behind, and the next start lists it again.
 *
 * A forge that fails or hangs while the daemon stops does not hold it for
 * its retries and timeouts: the forge client gives up within seconds
 * (gitlab.h), and the reply being applied is applied at the next start
 * (its actions journaled, none twice).
 *
 * SIGUSR1 polls the forge and looks at the spool at once (after the
 * round in progress), as `postqueue -f` flushes Postfix's queue.
 *
 * Monitoring: with [metrics] enabled the status server (monitor.h)
 * serves /metrics, /healthz and /readyz from its own threads; the loop
 * only counts (core/metrics.h) and reports each poll's outcome
 * (core/health.h).  Under systemd (Type=notify, util/sdnotify.h) the
 * loop sends READY=1 once it runs, RELOADING=1/READY=1 around a reload,
 * STOPPING=1, and with WatchdogSec= a WATCHDOG=1 whenever it made
 * progress: a round finished, a wait woke up, a forge request or a
 * submission came back (gitlab.c, outbound.c).  A loop stuck in a call
 * that does not return sends none, and systemd restarts the daemon.
 */
#include "cmd/cmd_daemon.h"
#include "cmd/env.h"

#include "cmd/monitor.h"
#include "core/config.h"
#include "core/health.h"
#include "core/metrics.h"
#include "core/preflight.h"
#include "core/secret.h"
#include "core/version.h"
#include "forge/forge.h"
#include "forge/webhook.h"
#include "inbound/inbound.h"
#include "mail/mail.h"
#include "outbound/detect.h"
#include "outbound/cimail.h"
#include "outbound/forgemail.h"
#include "outbound/noticemail.h"
#include "outbound/outbound.h"
#include "outbound/workq.h"
#include "state/store.h"
#include "state/storeconf.h"
#include "util/dirwatch.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/sdnotify.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_flag, reload_flag, poll_flag;
static struct workq *signal_queue; /* the handlers' way to wake the loop */

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_flag = 1;
	else if (sig == SIGUSR1)
		poll_flag = 1;
	else
		stop_flag = 1;
	if (signal_queue)
		workq_wake(signal_queue);
}

/* An MR to look at again after a temporary failure. */
struct retry {
	char *project;
	int64_t iid;
	int64_t updated_ms;
	int attempts;
	int64_t due;
};

struct daemon {
	const char *config_path;
	int once;
	struct env env;
	struct detect *detect;
	struct webhook *wh;
	struct monitor *mon; /* the status server; NULL when off */
	struct workq *q;
	/* MRs a Note Hook named: their comments are mailed in the next
	 * cycle (the webhook's threads push, the main thread pops). */
	struct workq *notes_q;
	/* MRs a Pipeline Hook named: their pipelines are read in the next
	 * reading of the forge comments. */
	struct workq *ci_q;
	struct retry *retries;
	size_t nr_retries, alloc_retries;
	int64_t next_poll;
	int64_t next_due; /* earliest deferred mail */
	/* Inbound: spooled list replies onto the forge. */
	struct inbound *ib; /* NULL until it could be set up */
	int64_t next_inbound; /* next spool scan or journal retry */
	int inbound_waiting; /* replies wait for a retry */
	struct dirwatch *spool_watch; /* the spool's new/, or NULL */
	int spool_arrived; /* the watch fired since the last inbound step */
	int64_t served_ms; /* spent on the spool inside forge_comments() */
	/* A shared state: this host's copy of the thread map, for the
	 * milter (NULL until it could be opened). */
	struct store *copy;
	int64_t copy_since; /* the newest mail copied */
	int64_t next_copy, next_recopy;
	/* The forge token: refused (forge_token_problem()) as last told,
	 * and when its expiry date is read next. */
	enum forge_token_problem token_problem;
	int64_t next_token_check;
};

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static void apply_log_level(const struct config *cfg)
{
	int level = log_level_from_name(config_str(cfg, CFG_LOG_LEVEL));
	int format = log_format_from_name(config_str(cfg, CFG_LOG_FORMAT));

	if (level >= 0)
		log_set_level(level);
	if (format >= 0)
		log_set_format((enum log_format)format);
}

/* The per-project series at 0 for every project of cfg; the facts of
 * /readyz from scratch (another forge, another MTA). */
static void metrics_for(const struct config *cfg)
{
	size_t i;

	for (i = 0; i < config_project_count(cfg); i++)
		metrics_add_project(
			config_project_name(config_project_at(cfg, i)));
	health_reset();
}

/* --- the forge token ----------------------------------------------------- */

/* The token's expiry date is read at the start and then daily. */
#define TOKEN_CHECK_S (24 * 3600)

/*
 * What the operator is told while the forge refuses the token (GitLab:
 * 401 invalid_token, lib/api/api_guard.rb, or the plain 401 of a token
 * it does not know, lib/api/helpers.rb): /readyz, `status` (the
 * store's cursor), the gauge and the log; and, once it works again, that
 * it does.  Called after each step that used the forge.
 */
static void token_watch(struct daemon *d)
{
	enum forge_token_problem p = forge_token_problem(d->env.forge);
	char v[STORE_CURSOR_VALUE_MAX];
	struct health_state h;
	int changed = p != d->token_problem;

	if (p == FORGE_TOKEN_OK && !changed)
		return;
	d->token_problem = p;
	if (p == FORGE_TOKEN_OK) {
		log_notice("forge: the token works again; the replies that "
			   "waited are applied");
		/* Only this one's report is taken back: another failure
		 * the poll met stands until the next poll. */
		health_get(&h, HEALTH_FORGE);
		if (!h.known || !strncmp(h.reason, "the forge token ", 16))
			health_report(HEALTH_FORGE, 1,
				      "the forge token works again");
		metrics_set0(MET_FORGE_TOKEN_FAILING, 0);
		v[0] = '\0';
	} else {
		snprintf(v, sizeof(v),
			 "%lld the forge token %s: install a new one in %s "
			 "(replies wait and are applied once it works)",
			 (long long)now_s(), forge_token_problem_text(p),
			 config_str(d->env.cfg, CFG_FORGE_TOKEN_FILE));
		/* The poll's report says which request failed: this one
		 * says what to do, so it goes last. */
		health_report(HEALTH_FORGE, 0, "%s", strchr(v, ' ') + 1);
		metrics_set0(MET_FORGE_TOKEN_FAILING, 1);
		if (changed)
			log_error("forge: %s", strchr(v, ' ') + 1);
	}
	if (changed &&
	    store_cursor_set(d->env.store, STORE_CURSOR_FORGE_TOKEN, v))
		log_warn("recording the forge token's state: %s", err_msg());
}

static void reload(struct daemon *d);

/*
 * While the forge refuses the token, a new one in [forge] token_file is
 * taken up without a SIGHUP (the operator may not know to send one): the
 * file is read again before each retry, and a different token reloads
 * the configuration as SIGHUP does.
 */
static void token_reread(struct daemon *d)
{
	struct buf t = BUF_INIT(SECRET_MAX + 1);
	const char *path = config_str(d->env.cfg, CFG_FORGE_TOKEN_FILE);

	if (d->token_problem == FORGE_TOKEN_OK)
		return;
	if (secret_read(&t, path, 0)) {
		log_debug("forge: %s cannot be read: %s", path, err_msg());
	} else if (t.len && strcmp(t.data, d->env.token.data)) {
		log_notice("forge: a new token in %s: reloading", path);
		reload(d);
	}
	secret_wipe(&t);
}

/*
 * The token's expiry date (GET /personal_access_tokens/self,
 * doc/api/personal_access_tokens.md): the date as a gauge, and a
 * warning each day from FORGE_TOKEN_WARN_DAYS before.  Since GitLab 16.0
 * every new token expires within a year; one without a date (an older
 * GitLab, an OAuth token) is fine.
 */
static void token_expiry(struct daemon *d)
{
	struct forge_whoami w;
	int64_t days;

	d->next_token_check = now_s() + TOKEN_CHECK_S;
	memset(&w, 0, sizeof(w));
	if (forge_whoami(&w, d->env.forge)) {
		log_info("forge: the token's expiry date cannot be read: %s",
			 err_msg());
		d->next_token_check = now_s() + 3600;
		goto out;
	}
	if (!w.token_known || !w.expires_at ||
	    forge_token_days_left(&days, w.expires_at, now_s())) {
		metrics_unset(MET_FORGE_TOKEN_EXPIRY);
		log_info("forge: the token has no expiry date%s",
			 w.token_known ? "" : " that can be read");
		goto out;
	}
	/* Seconds, Prometheus' base unit; the alert rule counts the days. */
	metrics_set0(MET_FORGE_TOKEN_EXPIRY,
		     (double)((now_s() / 86400 + days) * 86400));
	if (days <= FORGE_TOKEN_WARN_DAYS)
		log_warn("forge: the token expires on %s (%lld day%s left): "
			 "make a new one and put it in %s; replies wait while "
			 "none works",
			 w.expires_at, (long long)days, days == 1 ? "" : "s",
			 config_str(d->env.cfg, CFG_FORGE_TOKEN_FILE));
	else
		log_info("forge: the token expires on %s (%lld days left)",
			 w.expires_at, (long long)days);
out:
	forge_whoami_release(&w);
}

/* --- the webhook ----------------------------------------------------- */

/* ev's MR onto queue to (once), waking the main loop's queue q. */
static int push_wake(struct workq *to, struct workq *q,
		     const struct webhook_event *ev, const char *reason)
{
	int rc = workq_push_id(to, ev->project, ev->project_id, ev->iid, 0,
			       reason);

	if (rc == PB_EEXISTS)
		rc = 0;
	if (!rc)
		workq_wake(q);
	return rc;
}

/* Called from the receiver's threads: enqueue only. */
static int on_event(const struct webhook_event *ev, void *arg)
{
	struct daemon *d = arg;
	struct workq *q = d->q;
	char reason[WORKQ_REASON_MAX + 1];
	int rc;

	/* A comment: GitLab says this MR has a new note, which the listing
	 * may not show (ThrottledTouch leaves updated_at as it was for a
	 * minute).  Internal notes come as "Confidential Note Hook", which
	 * the receiver ignores. */
	if (ev->kind == WEBHOOK_NOTE)
		return push_wake(d->notes_q, q, ev, "webhook note");
	/* A pipeline of an MR changed: its result is mailed when it is a
	 * finished one (forgemail.h). */
	if (ev->kind == WEBHOOK_PIPELINE) {
		if (cimail_passed(ev->pipeline_status) < 0)
			return 0;
		rc = push_wake(d->ci_q, q, ev, "webhook pipeline");
		/* A revision held for its pipeline ([project]
		 * wait_for_pipeline) is mailed now. */
		if (!rc && cimail_passed(ev->pipeline_status) == 1)
			rc = push_wake(q, q, ev, "webhook pipeline");
		return rc;
	}
	if (ev->kind != WEBHOOK_MR)
		return 0;
	if (!ev->code_changed && ev->action != WEBHOOK_ACTION_OPEN &&
	    ev->action != WEBHOOK_ACTION_REOPEN)
		return 0;
	snprintf(reason, sizeof(reason), "webhook %s",
		 ev->code_changed ? "push" : webhook_action_name(ev->action));
	rc = workq_push_id(q, ev->project, ev->project_id, ev->iid, 0, reason);
	return rc == PB_EEXISTS ? 0 : rc;
}

/*
 * A webhook names the project by its path now; after a rename or a move
 * that is not the configured one, but project.id is the id the project
 * was pinned to (detect_project_pin()), so the event is the configured
 * project's.  Rewrites it->project to the configured path then.
 */
static void configured_item(struct daemon *d, struct workq_item *it)
{
	const struct config_project *proj;
	const char *path;

	if (it->project_id <= 0 ||
	    !config_project_get(&proj, d->env.cfg, it->project) ||
	    !(path = forge_pinned_path(d->env.forge, it->project_id)) ||
	    strlen(path) >= sizeof(it->project))
		return;
	log_debug("%s: project %s (id %lld) is the configured %s", it->reason,
		  it->project, (long long)it->project_id, path);
	snprintf(it->project, sizeof(it->project), "%s", path);
}

/* check-config reads the webhook secret with the same cap (preflight.c). */
_Static_assert(WEBHOOK_SECRET_MAX == SECRET_WEBHOOK_MAX,
	       "the webhook secret's cap differs between run and check-config");

static int webhook_start(struct webhook **out, const struct config *cfg,
			 struct daemon *d)
{
	struct buf secret = BUF_INIT(WEBHOOK_SECRET_MAX + 1);
	struct webhook_opts o;
	int rc;

	*out = NULL;
	if (!config_bool(cfg, CFG_WEBHOOK_ENABLED))
		return 0;
	rc = secret_read(&secret, config_str(cfg, CFG_WEBHOOK_SECRET_FILE),
			 WEBHOOK_SECRET_MAX);
	if (rc)
		return err_prefix(rc, "[webhook] secret_file");
	memset(&o, 0, sizeof(o));
	o.listen = config_str(cfg, CFG_WEBHOOK_LISTEN);
	o.secret = secret.data;
	o.max_request_size = config_size(cfg, CFG_WEBHOOK_MAX_REQUEST_SIZE);
	o.on_event = on_event;
	o.arg = d;
	rc = webhook_new(out, &o);
	secret_wipe(&secret);
	if (rc)
		return err_prefix(rc, "[webhook]");
	return 0;
}

/* --- retries ------------------------------------------------------------ */

static struct retry *retry_find(struct daemon *d, const char *project,
				int64_t iid)
{
	size_t i;

	for (i = 0; i < d->nr_retries; i++)
		if (d->retries[i].iid == iid &&
		    !strcmp(d->retries[i].project, project))
			return &d->retries[i];
	return NULL;
}

static void retry_later(struct daemon *d, const struct workq_item *it,
			int64_t due)
{
	struct retry *r = retry_find(d, it->project, it->iid);

	if (!r) {
		ALLOC_GROW(d->retries, d->nr_retries + 1, d->alloc_retries);
		r = &d->retries[d->nr_retries++];
		memset(r, 0, sizeof(*r));
		r->project = xstrdup(it->project);
		r->iid = it->iid;
	}
	if (it->updated_ms > r->updated_ms)
		r->updated_ms = it->updated_ms;
	r->attempts++;
	r->due = due ? due : now_s() + outbound_backoff(r->attempts);
	if (d->detect)
		detect_hold(d->detect, r->project, r->iid, r->updated_ms);
}

static void retry_done(struct daemon *d, const char *project, int64_t iid)
{
	struct retry *r = retry_find(d, project, iid);

	if (d->detect)
		detect_release(d->detect, project, iid);
	if (!r)
		return;
	free(r->project);
	*r = d->retries[--d->nr_retries];
}

/* Due retries back on the queue (they keep their entry until done). */
static void retries_due(struct daemon *d, int64_t t)
{
	size_t i;

	for (i = 0; i < d->nr_retries; i++) {
		struct retry *r = &d->retries[i];

		if (r->due <= t)
			workq_push(d->q, r->project, r->iid, r->updated_ms,
				   "retry");
	}
}

static void retries_free(struct daemon *d)
{
	size_t i;

	for (i = 0; i < d->nr_retries; i++)
		free(d->retries[i].project);
	free(d->retries);
	d->retries = NULL;
	d->nr_retries = d->alloc_retries = 0;
}

/* --- inbound ------------------------------------------------------------ */

/*
 * The spool: the milter renames each record into new/, which the daemon
 * watches ([spool] watch, inotify: util/dirwatch.h), so a reply is
 * journaled and applied as it comes.  The spool is also looked at every
 * INBOUND_SCAN_S seconds whatever happens - the fallback, should the
 * watch be off, fail or miss something - and sooner when a reply's retry
 * is due.  An arrival runs the inbound step alone (inbound_cycle(d, 0)):
 * the forge polls and comment mails keep their own pace.
 */
#define INBOUND_SCAN_S 5

static void inbound_stop(struct daemon *d)
{
	inbound_free(d->ib);
	d->ib = NULL;
	dirwatch_free(d->spool_watch);
	d->spool_watch = NULL;
}

/* Watch new/ of the configured spool, unless [spool] watch = no. */
static void watch_spool(struct daemon *d)
{
	char *dir;
	int rc;

	if (d->spool_watch)
		return;
	if (!config_bool(d->env.cfg, CFG_SPOOL_WATCH)) {
		log_info("inbound: [spool] watch = no: looking at the spool "
			 "every %d s",
			 INBOUND_SCAN_S);
		return;
	}
	dir = xasprintf("%s/new", config_str(d->env.cfg, CFG_SPOOL_DIR));
	rc = dirwatch_open(&d->spool_watch, dir);
	if (rc)
		log_warn("inbound: cannot watch %s: %s; looking at it every "
			 "%d s",
			 dir, err_msg(), INBOUND_SCAN_S);
	else
		log_info("inbound: watching %s", dir);
	free(dir);
}

/* Who a series posted to the list is opened as: the forge user of its
 * sender, mapped as reviews map theirs (emailmr.h). */
static int submitter_user(char *user, size_t size, const char *project,
			  const char *email, void *arg)
{
	struct daemon *d = arg;

	if (!d->ib) {
		if (size)
			user[0] = '\0';
		return 0;
	}
	return inbound_map_user(user, size, d->ib, project, email);
}

/* A series posted to the list, from the inbound side (inbound.h). */
static int take_submission(void *arg, char *project, size_t size,
			   const char *raw, size_t len)
{
	struct daemon *d = arg;

	outbound_set_user_map(d->env.ob, submitter_user, d);
	return outbound_submission(d->env.ob, project, size, raw, len);
}

/*
 * Journal what the milter spooled and apply the replies that are due.
 * rescan: this is the periodic look, which sets when the next one is.
 */
static void inbound_cycle(struct daemon *d, int rescan)
{
	struct inbound_opts o;
	int64_t t = now_s(), due = 0;

	if (rescan || !d->next_inbound)
		d->next_inbound = t + INBOUND_SCAN_S;
	d->spool_arrived = 0;
	if (!d->ib) {
		memset(&o, 0, sizeof(o));
		o.cfg = d->env.cfg;
		o.store = d->env.store;
		o.forge = d->env.forge;
		o.stop = &stop_flag;
		o.submission = take_submission;
		o.submission_arg = d;
		o.render_notice = noticemail_render;
		o.render_arg = (void *)d->env.cfg;
		/* PB_ETEMP: a `replay --apply-now` applies meanwhile */
		if (inbound_new(&d->ib, &o)) {
			log_warn("inbound: %s", err_msg());
			return;
		}
		/* after inbound_new(), which makes the spool's directories */
		watch_spool(d);
	}
	if (inbound_run_once(d->ib, t))
		log_warn("inbound: %s", err_msg());
	if (!inbound_next_due(&due, d->ib) && due) {
		d->inbound_waiting = 1;
		if (due < d->next_inbound)
			d->next_inbound = due;
	} else {
		d->inbound_waiting = 0;
	}
}

/* --- this host's copy of the thread map ----------------------------------- */

/*
 * On a shared state the milter reads this host's copy of the thread map
 * when PostgreSQL does not answer in time (milter/mconf.h): a SQLite
 * file at [state] path, brought up to date every THREADMAP_COPY_S
 * seconds.  Each round copies the mails created since the newest one
 * copied (that second included); every THREADMAP_RECOPY_S it goes back
 * THREADMAP_COPY_SLACK_S further, so that a row another host committed
 * late, or stamped with a clock a little behind, is copied too, and a
 * row's later change of state (pending to sent) reaches the copy.
 */
#define THREADMAP_COPY_S 5
#define THREADMAP_RECOPY_S 60
#define THREADMAP_COPY_SLACK_S 120

static void threadmap_copy(struct daemon *d)
{
	const struct config *cfg = d->env.cfg;
	int64_t since, t = now_s();
	size_t copied = 0;
	int rc;

	if (storeconf_backend(cfg) != STORE_BACKEND_POSTGRESQL ||
	    t < d->next_copy)
		return;
	d->next_copy = t + THREADMAP_COPY_S;
	if (!d->copy) {
		rc = store_open(
			&d->copy, config_str(cfg, CFG_STATE_PATH), STORE_RW,
			(int)config_duration_ms(cfg, CFG_STATE_BUSY_TIMEOUT));
		if (rc) {
			log_warn("thread map copy: %s", err_msg());
			return;
		}
		d->copy_since = 0;
	}
	since = d->copy_since;
	if (t >= d->next_recopy) {
		d->next_recopy = t + THREADMAP_RECOPY_S;
		since = since > THREADMAP_COPY_SLACK_S ?
				since - THREADMAP_COPY_SLACK_S :
				0;
	}
	rc = store_threadmap_mirror(d->copy, d->env.store, &since, &copied);
	if (rc) {
		log_warn("thread map copy %s: %s", store_name(d->copy),
			 err_msg());
		return;
	}
	if (since > d->copy_since)
		d->copy_since = since;
	log_debug("thread map copy %s: %zu row(s) brought up to date",
		  store_name(d->copy), copied);
}

static void threadmap_copy_close(struct daemon *d)
{
	store_free(d->copy);
	d->copy = NULL;
	d->copy_since = 0;
	d->next_copy = 0;
	d->next_recopy = 0;
}

/* --- work ------------------------------------------------------------------ */

static void process(struct daemon *d, const struct workq_item *it)
{
	const struct config_project *proj;
	struct outbound_report rep;
	struct log_ctx_saved saved;
	int rc;

	log_ctx_pushf(&saved, "%s!%lld", it->project, (long long)it->iid);
	if (config_project_get(&proj, d->env.cfg, it->project) ||
	    !config_project_bool(proj, CFG_PROJECT_ENABLED)) {
		log_info("%s: not a bridged project; ignored", it->reason);
		retry_done(d, it->project, it->iid); /* nothing to look at */
		goto out;
	}
	rc = outbound_mr(&rep, d->env.ob, it->project, it->iid, 0);
	if (rc) {
		if (err_is_temporary(rc) && !stop_flag) {
			retry_later(d, it, 0);
			log_warn("%s: %s; trying again later", it->reason,
				 err_msg());
		} else if (!stop_flag) {
			retry_done(d, it->project, it->iid);
			log_error("%s: %s", it->reason, err_msg());
		}
		goto out;
	}
	switch (rep.outcome) {
	case OUTBOUND_NOTHING:
		log_info("%s: nothing to mail: %s", it->reason, rep.reason);
		break;
	case OUTBOUND_ALREADY:
		log_debug("%s: already mailed as v%d", it->reason,
			  rep.revision);
		break;
	case OUTBOUND_MAILED:
		log_notice("%s: mailed v%d (%d mails)", it->reason,
			   rep.revision, rep.mails);
		break;
	case OUTBOUND_PENDING:
		log_warn("%s: %s", it->reason, rep.reason);
		break;
	case OUTBOUND_WAITING:
		log_info("%s: not mailed yet: %s", it->reason, rep.reason);
		break;
	}
	/* Held back by an earlier revision's deferred mail: look again
	 * once that is due. */
	if ((rep.outcome == OUTBOUND_PENDING && !rep.revision) ||
	    rep.outcome == OUTBOUND_WAITING)
		retry_later(d, it,
			    rep.next_attempt ? rep.next_attempt : now_s() + 60);
	else
		retry_done(d, it->project, it->iid);
out:
	sdnotify_watchdog();
	log_ctx_pop(&saved);
}

static void deliver_due(struct daemon *d)
{
	int sent = 0;

	if (outbound_deliver_due(d->env.ob, &d->next_due, &sent))
		log_warn("delivery: %s", err_msg());
	else if (sent)
		log_info("delivery: %d queued mail(s) sent", sent);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * While the forge comments are read (every discussion of every MR
 * changed lately: many pages on a long conversation), a reply that
 * arrives in the spool is applied between two pages, or two MRs, of
 * that reading (forge_set_pause()), not after it.
 */
static void serve_spool(void *arg)
{
	struct daemon *d = arg;
	int64_t t0;

	if (stop_flag || reload_flag || !d->spool_watch)
		return;
	if (!d->spool_arrived && !dirwatch_drain(d->spool_watch))
		return;
	log_debug("inbound: a record arrived in the spool (during the "
		  "forge comments)");
	t0 = mono_ms();
	inbound_cycle(d, 0);
	d->served_ms += mono_ms() - t0;
}

/* A reading of the forge comments this long is logged (info). */
#define FORGE_COMMENTS_SLOW_MS 1000

/* Forge comments, approvals, merges: mailed as replies (forgemail.h);
 * queued here, delivered by deliver_due() with the series mails. */
static void forge_comments(struct daemon *d, int polled)
{
	struct forgemail *fm = NULL;
	struct workq_item it;
	size_t queued = 0;
	int64_t t0 = mono_ms(), ms;

	d->served_ms = 0;
	if (forgemail_new(&fm, d->env.cfg, d->env.store, d->env.forge))
		return;
	forgemail_set_outbound(fm, d->env.ob);
	forge_set_pause(d->env.forge, serve_spool, d);
	/* The MRs a Note Hook named first: their comments right away. */
	while (!stop_flag && !workq_pop(&it, d->notes_q)) {
		const struct config_project *proj;

		configured_item(d, &it);
		if (config_project_get(&proj, d->env.cfg, it.project) ||
		    !config_project_bool(proj, CFG_PROJECT_ENABLED) ||
		    !config_project_bool(proj, CFG_OUTBOUND_FORGE_COMMENTS))
			continue;
		if (forgemail_mr(fm, it.project, it.iid, &queued))
			log_warn("forge comments of %s!%lld (%s): %s; the next "
				 "poll reads them",
				 it.project, (long long)it.iid, it.reason,
				 err_msg());
	}
	while (!stop_flag && !workq_pop(&it, d->ci_q)) {
		configured_item(d, &it);
		if (forgemail_pipelines(fm, it.project, it.iid, &queued))
			log_warn("pipelines of %s!%lld (%s): %s; the next "
				 "poll reads them",
				 it.project, (long long)it.iid, it.reason,
				 err_msg());
	}
	if (forgemail_poll(fm, &queued))
		log_warn("forge comments: %s", err_msg());
	/* Pipelines at the poll's pace: each recent MR costs a request. */
	if (polled && forgemail_poll_pipelines(fm, &queued))
		log_warn("pipelines: %s", err_msg());
	if (queued)
		log_info("forge comments: %zu mail(s) queued", queued);
	forge_set_pause(d->env.forge, NULL, NULL);
	/* The replies applied meanwhile are not the reading's time. */
	ms = mono_ms() - t0 - d->served_ms;
	if (ms >= FORGE_COMMENTS_SLOW_MS)
		log_info("forge comments: read in %lld ms (and %lld ms on "
			 "spooled replies meanwhile)",
			 (long long)ms, (long long)d->served_ms);
	else
		log_debug("forge comments: read in %lld ms (and %lld ms on "
			  "spooled replies meanwhile)",
			  (long long)ms, (long long)d->served_ms);
	forgemail_free(fm);
}

/* Series posted to the list still waiting for a patch after [project]
 * email_series_wait: their senders told which, once (emailnotice.h);
 * the notices go out with the next delivery. */
static void remind_series(struct daemon *d)
{
	size_t told = 0;

	if (outbound_submission_remind(d->env.ob, &told))
		log_warn("series reminders: %s", err_msg());
	else if (told)
		log_info("series reminders: %zu decided", told);
}

static void cycle(struct daemon *d)
{
	struct workq_item it;
	size_t queued = 0;
	int64_t t = now_s();
	int polled = 0;

	token_reread(d);
	if (t >= d->next_token_check)
		token_expiry(d);
	if (t >= d->next_poll) {
		polled = 1;
		if (detect_poll(d->detect, d->q, &queued))
			health_report(HEALTH_FORGE, 0,
				      "the last poll failed: %s", err_msg());
		else
			health_report(HEALTH_FORGE, 1,
				      "the last poll listed every project");
		token_watch(d);
		d->next_poll =
			t + config_duration_ms(d->env.cfg,
					       CFG_OUTBOUND_POLL_INTERVAL) /
				    1000;
		if (queued)
			log_debug("poll: %zu merge request(s) queued", queued);
	}
	retries_due(d, t);
	while (!stop_flag && !reload_flag && !workq_pop(&it, d->q)) {
		configured_item(d, &it);
		process(d, &it);
	}
	/* What a stop leaves queued is held in detect: listed again at the
	 * next start.  Worked off, the stored watermark may move on. */
	if (!stop_flag && !reload_flag)
		detect_checkpoint(d->detect);
	if (!stop_flag && !reload_flag)
		forge_comments(d, polled);
	if (!stop_flag)
		deliver_due(d);
	if (!stop_flag && !reload_flag &&
	    (now_s() >= d->next_inbound || d->spool_arrived)) {
		inbound_cycle(d, now_s() >= d->next_inbound);
		token_watch(d);
	}
	if (!stop_flag && !reload_flag)
		remind_series(d);
	if (!stop_flag && !reload_flag)
		threadmap_copy(d);
	metrics_inc0(MET_LOOP_CYCLES);
	sdnotify_watchdog();
}

/*
 * Sleep until the next poll, retry or delivery is due, or a wake-up.
 * Returns 1 when only the spool's watch woke it (a record arrived), 0
 * for anything else: a timer, the queue, a signal.
 */
static int wait_for_work(struct daemon *d)
{
	struct pollfd pfd[2];
	int64_t t = now_s(), until = d->next_poll;
	size_t i;
	nfds_t n = 1;
	int ms, rc;

	if (d->next_due && d->next_due < until)
		until = d->next_due;
	if (d->next_inbound < until)
		until = d->next_inbound;
	for (i = 0; i < d->nr_retries; i++)
		if (d->retries[i].due < until)
			until = d->retries[i].due;
	if (workq_len(d->q) || workq_len(d->notes_q) || workq_len(d->ci_q) ||
	    stop_flag || reload_flag || poll_flag)
		return 0;
	ms = until <= t ?
		     0 :
		     (until - t > 3600 ? 3600000 : (int)(until - t) * 1000);
	/* Waiting is no hang: wake up to tell the watchdog so. */
	if (sdnotify_watchdog_usec() &&
	    ms > sdnotify_watchdog_usec() / 1000 / 4)
		ms = (int)(sdnotify_watchdog_usec() / 1000 / 4);
	pfd[0].fd = workq_fd(d->q);
	pfd[0].events = POLLIN;
	pfd[0].revents = 0;
	if (d->spool_watch) {
		pfd[1].fd = dirwatch_fd(d->spool_watch);
		pfd[1].events = POLLIN;
		pfd[1].revents = 0;
		n = 2;
	}
	rc = poll(pfd, n, ms);
	sdnotify_watchdog();
	if (rc <= 0)
		return 0;
	if (pfd[0].revents) {
		workq_drain(d->q);
		return 0;
	}
	if (n == 2 && pfd[1].revents && dirwatch_drain(d->spool_watch)) {
		d->spool_arrived = 1;
		return now_s() < until; /* a timer due as well: a full cycle */
	}
	return 0;
}

/* --- configuration ---------------------------------------------------- */

static void reload(struct daemon *d)
{
	struct config *cfg = NULL;
	struct env ne;
	struct webhook *wh = NULL;
	struct monitor *mon = NULL;
	struct detect *det = NULL;
	int rc;

	log_notice("SIGHUP: reloading %s", d->config_path);
	sdnotify_send("RELOADING=1");
	if (env_load_config(&cfg, d->config_path, 1)) {
		log_error("reload refused: %s does not load; keeping the "
			  "configuration in force",
			  d->config_path);
		sdnotify_send("READY=1");
		return;
	}
	rc = env_open(&ne, cfg, &stop_flag);
	if (rc) {
		log_error("reload refused: %s; keeping the configuration in "
			  "force",
			  err_msg());
		sdnotify_send("READY=1");
		return;
	}
	/* The new receiver may want the old one's port: stop that first. */
	webhook_free(d->wh);
	d->wh = NULL;
	if (!d->once && webhook_start(&wh, ne.cfg, d)) {
		log_error("reload refused: %s; keeping the configuration in "
			  "force",
			  err_msg());
		env_close(&ne);
		if (!d->once && webhook_start(&d->wh, d->env.cfg, d))
			log_error("webhook: cannot restart: %s", err_msg());
		sdnotify_send("READY=1");
		return;
	}
	/* The same for the status server, which borrows the old config. */
	monitor_free(d->mon);
	d->mon = NULL;
	if (!d->once && monitor_start(&mon, ne.cfg)) {
		log_error("reload refused: %s; keeping the configuration in "
			  "force",
			  err_msg());
		webhook_free(wh);
		env_close(&ne);
		if (webhook_start(&d->wh, d->env.cfg, d))
			log_error("webhook: cannot restart: %s", err_msg());
		if (monitor_start(&d->mon, d->env.cfg))
			log_error("[metrics]: cannot restart: %s", err_msg());
		sdnotify_send("READY=1");
		return;
	}
	detect_new(&det, ne.cfg, ne.store, ne.forge);
	detect_free(d->detect);
	inbound_stop(d); /* it borrows the old env; the next cycle rebuilds */
	threadmap_copy_close(d); /* [state] may have changed */
	d->next_inbound = 0;
	env_close(&d->env);
	d->env = ne;
	d->wh = wh;
	d->mon = mon;
	d->detect = det;
	/* The holds went with the old detect, so the retries go too: the
	 * new one lists their MRs again from the held watermark. */
	retries_free(d);
	apply_log_level(d->env.cfg);
	metrics_for(d->env.cfg);
	d->next_poll = 0;
	/* A new token: its own expiry date.  Whether it works is told
	 * after the next call that reaches the forge (token_watch()). */
	d->next_token_check = 0;
	log_notice("configuration reloaded");
	sdnotify_send("READY=1");
}

/* --- the process -------------------------------------------------------- */

static int take_run_lock(int *fd, const struct config *cfg)
{
	char *path = xasprintf("%s.run.lock", config_str(cfg, CFG_STATE_PATH));
	int rc = 0;

	*fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
		   0600);
	if (*fd < 0) {
		rc = err_set_errno(PB_EPERM, "open %s", path);
	} else if (flock(*fd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ?
			     err_set(PB_ETEMP,
				     "another patchbridge run uses %s",
				     config_str(cfg, CFG_STATE_PATH)) :
			     err_set_errno(PB_ERROR, "lock %s", path);
		close(*fd);
		*fd = -1;
	}
	free(path);
	return rc;
}

/* preflight_start(): its warnings logged, its problems stop the start. */
static int start_check(const struct config *cfg, int once)
{
	struct preflight pf;
	size_t i;
	int rc;

	preflight_init(&pf);
	preflight_start(&pf, cfg,
			once ? PREFLIGHT_START_ONCE : PREFLIGHT_START_RUN);
	strlist_for_each (&pf.warnings, i)
		log_warn("%s", pf.warnings.items[i]);
	strlist_for_each (&pf.problems, i)
		fprintf(stderr, "patchbridge run: %s\n", pf.problems.items[i]);
	/* The codes the start gave for each before this check. */
	rc = !pf.problems.nr	  ? EX_OK :
	     pf.code == PB_ETEMP  ? EX_UNAVAILABLE :
	     pf.code == PB_EINVAL ? EX_CONFIG :
				    env_exit_code(pf.code);
	preflight_release(&pf);
	return rc;
}

static int detach(void)
{
	pid_t pid = fork();
	int fd;

	if (pid < 0)
		return err_set_errno(PB_ERROR, "fork");
	if (pid > 0)
		_exit(EX_OK);
	if (setsid() < 0)
		return err_set_errno(PB_ERROR, "setsid");
	if (chdir("/") < 0)
		return err_set_errno(PB_ERROR, "chdir /");
	fd = open("/dev/null", O_RDWR);
	if (fd < 0)
		return err_set_errno(PB_ERROR, "open /dev/null");
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
	log_close();
	log_open("patchbridge", LOG_SINK_SYSLOG);
	return 0;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

int cmd_run(const char *config_path, int argc, char **argv)
{
	struct daemon d;
	struct config *cfg = NULL;
	int i, rc, foreground = 0, lock_fd = -1, sent = 0, arrived = 0;

	memset(&d, 0, sizeof(d));
	d.config_path = config_path;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--once")) {
			d.once = 1;
		} else if (!strcmp(argv[i], "--foreground")) {
			foreground = 1;
		} else {
			fprintf(stderr,
				"patchbridge run: unknown argument: %s\n"
				"usage: patchbridge run %s\n",
				argv[i], cmd_run_synopsis);
			return EX_USAGE;
		}
	}
	rc = env_load_config(&cfg, config_path, 0);
	if (rc)
		return rc;
	apply_log_level(cfg);
	metrics_start(METRIC_DAEMON, pb_version());
	metrics_for(cfg);
	/*
	 * What check-config checks first (core/preflight.h), before this
	 * process makes anything: a file it would make as the wrong user,
	 * a token it will refuse, a port in use, each with its fix.
	 */
	rc = start_check(cfg, d.once);
	if (rc) {
		config_free(cfg);
		return rc;
	}
	if (take_run_lock(&lock_fd, cfg)) {
		fprintf(stderr, "patchbridge run: %s\n", err_msg());
		config_free(cfg);
		return EX_TEMPFAIL;
	}
	if (workq_new(&d.q, 0) || workq_new(&d.notes_q, 0) ||
	    workq_new(&d.ci_q, 0)) {
		fprintf(stderr, "patchbridge run: %s\n", err_msg());
		rc = EX_OSERR;
		goto out_cfg;
	}
	signal_queue = d.q;
	install_signals();
	rc = env_open(&d.env, cfg, &stop_flag);
	cfg = NULL;
	if (rc) {
		fprintf(stderr, "patchbridge run: %s\n", err_msg());
		rc = rc == PB_EINVAL ? EX_CONFIG : env_exit_code(rc);
		goto out_cfg;
	}
	/* The last mail the MTA took, for the milter's check (health.h). */
	{
		int64_t last = 0;

		if (!store_mail_last_sent(&last, d.env.store))
			metrics_set0(MET_MAILS_LAST_SENT, (double)last);
	}
	/*
	 * The receiver runs threads, and fork() keeps only the caller's:
	 * when detaching, try it here (so a port in use is reported on the
	 * terminal), stop it, and start it for good in the child.
	 */
	if (!d.once) {
		rc = webhook_start(&d.wh, d.env.cfg, &d);
		if (!rc)
			rc = monitor_start(&d.mon, d.env.cfg);
		if (rc) {
			fprintf(stderr, "patchbridge run: %s\n", err_msg());
			rc = rc == PB_EINVAL ? EX_CONFIG : EX_UNAVAILABLE;
			goto out;
		}
		if (!foreground) {
			webhook_free(d.wh);
			d.wh = NULL;
			monitor_free(d.mon);
			d.mon = NULL;
			if (detach()) {
				fprintf(stderr, "patchbridge run: %s\n",
					err_msg());
				rc = EX_OSERR;
				goto out;
			}
			if (webhook_start(&d.wh, d.env.cfg, &d) ||
			    monitor_start(&d.mon, d.env.cfg)) {
				log_error("%s", err_msg());
				rc = EX_UNAVAILABLE;
				goto out;
			}
		}
	}
	/* After the fork: the notifications come from this process. */
	if (sdnotify_init())
		log_warn("systemd notification: %s", err_msg());
	detect_new(&d.detect, d.env.cfg, d.env.store, d.env.forge);
	/* The inbound side parses mail (GMime). */
	if (mail_init()) {
		log_error("%s", err_msg());
		rc = EX_SOFTWARE;
		goto out;
	}
	log_notice("started%s", d.once ? " (one cycle)" : "");
	if (!d.once)
		sdnotify_send("READY=1");

	/* A crash or the MTA left mails queued: they go out first. */
	if (outbound_deliver_due(d.env.ob, &d.next_due, &sent))
		log_warn("resume: %s", err_msg());
	else if (sent)
		log_notice("resume: %d queued mail(s) sent", sent);

	for (;;) {
		if (stop_flag)
			break;
		if (reload_flag) {
			reload_flag = 0;
			reload(&d);
		}
		if (poll_flag) {
			poll_flag = 0;
			d.next_poll = 0;
			d.next_inbound = 0;
			arrived = 0; /* a whole cycle */
			log_info(
				"SIGUSR1: polling and looking at the spool now");
		}
		if (arrived) {
			log_debug("inbound: a record arrived in the spool");
			inbound_cycle(&d, 0);
		} else {
			cycle(&d);
		}
		if (d.once || stop_flag)
			break;
		arrived = wait_for_work(&d);
	}
	rc = EX_OK;
	if (d.once && (d.nr_retries || d.next_due || d.inbound_waiting))
		rc = EX_TEMPFAIL;
	log_notice("stopped%s", stop_flag ? " (signal)" : "");
out:
	sdnotify_send("STOPPING=1");
	monitor_free(d.mon);
	webhook_free(d.wh);
	detect_free(d.detect);
	inbound_stop(&d);
	threadmap_copy_close(&d);
	mail_shutdown();
	env_close(&d.env);
	retries_free(&d);
out_cfg:
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGUSR1, SIG_DFL);
	signal_queue = NULL;
	workq_free(d.q);
	workq_free(d.notes_q);
	workq_free(d.ci_q);
	config_free(cfg);
	if (lock_fd >= 0)
		close(lock_fd);
	return rc;
}
