#include "cmd/monitor.h"

#include "core/config.h"
#include "core/health.h"
#include "core/metrics.h"
#include "forge/statusd.h"
#include "outbound/submit.h"
#include "state/spool.h"
#include "state/store.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CT_TEXT "text/plain; charset=utf-8"
/* The exposition format's content type (version 0.0.4). */
#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"

struct monitor {
	const struct config *cfg;
	struct statusd *sd;
	pthread_mutex_t lock; /* one probe of the MTA at a time; warned */
	int milter_warned; /* the milter's file was refused, logged */
};

/* --- the checks ------------------------------------------------------ */

static void check_store(struct monitor *m)
{
	struct store *st = NULL;
	int rc;

	rc = store_open(&st, config_str(m->cfg, CFG_STATE_PATH), STORE_RO,
			(int)config_duration_ms(m->cfg,
						CFG_STATE_BUSY_TIMEOUT));
	if (rc)
		health_report(HEALTH_STORE, 0, "%s", err_msg());
	else
		health_report(HEALTH_STORE, 1, "%s opens",
			      config_str(m->cfg, CFG_STATE_PATH));
	store_free(st);
}

/*
 * The spool as the daemon opens it, a file written in tmp/, and (with
 * gauges) the depth of each area and the age of the oldest record that
 * waits (new/, cur/).
 */
static void check_spool(struct monitor *m, int gauges)
{
	static const enum spool_area areas[] = { SPOOL_NEW, SPOOL_CUR,
						 SPOOL_DONE, SPOOL_DEAD };
	const char *dir = config_str(m->cfg, CFG_SPOOL_DIR);
	struct spool *sp = NULL;
	int64_t oldest = 0, t, now = (int64_t)time(NULL);
	size_t i, n;
	int rc;

	rc = spool_open(&sp, dir, SPOOL_READER);
	if (!rc)
		rc = spool_probe(sp);
	if (rc)
		health_report(HEALTH_SPOOL, 0, "%s", err_msg());
	else
		health_report(HEALTH_SPOOL, 1, "%s is writable", dir);
	for (i = 0; gauges && sp && i < sizeof(areas) / sizeof(areas[0]); i++) {
		if (spool_area_stat(&n, &t, sp, areas[i]))
			continue; /* the gauge keeps its last value */
		metrics_set1(MET_SPOOL_RECORDS, (double)n,
			     spool_area_name(areas[i]));
		if (areas[i] != SPOOL_DONE && areas[i] != SPOOL_DEAD && t &&
		    (!oldest || t < oldest))
			oldest = t;
	}
	if (gauges && sp)
		metrics_set0(MET_SPOOL_OLDEST_AGE,
			     oldest && now > oldest ? (double)(now - oldest) :
						      0);
	spool_free(sp);
}

static void check_forge(struct monitor *m)
{
	struct health_state h;

	(void)m;
	health_get(&h, HEALTH_FORGE);
	if (!h.known)
		health_report(HEALTH_FORGE, 0, "no poll has finished yet");
}

/* A submission or a probe younger than MONITOR_SMTP_FRESH_S stands. */
static void check_smtp(struct monitor *m)
{
	struct submit_opts o;
	struct health_state h;
	long ms;

	pthread_mutex_lock(&m->lock);
	health_get(&h, HEALTH_SMTP);
	if (h.known && (int64_t)time(NULL) - h.when < MONITOR_SMTP_FRESH_S)
		goto out;
	submit_opts_from_config(&o, m->cfg);
	ms = o.timeout_ms < MONITOR_SMTP_PROBE_MS ? o.timeout_ms :
						    MONITOR_SMTP_PROBE_MS;
	if (submit_probe(&o, ms))
		health_report(HEALTH_SMTP, 0, "%s", err_msg());
	else
		health_report(HEALTH_SMTP, 1, "%s answers",
			      o.url ? o.url : "sendmail");
out:
	pthread_mutex_unlock(&m->lock);
}

static void load_milter(struct monitor *m);

/* The milter's sight of the list's mail (health_milter_blind()). */
static void check_milter(struct monitor *m)
{
	char why[PB_ERRMSG_MAX];
	int blind;

	load_milter(m);
	blind = health_milter_blind(
		why, sizeof(why), (int64_t)time(NULL),
		(int64_t)metrics_get0(MET_MAILS_LAST_SENT),
		(int64_t)metrics_get0(MET_MILTER_LAST_SEEN));
	metrics_set0(MET_MILTER_SEES_LIST, blind ? 0 : 1);
	health_report(HEALTH_MILTER, !blind, "%s", why);
}

/* Every check; 1 when all pass.  body (may be NULL) gets one line each. */
static int check_all(struct monitor *m, struct buf *body, int gauges)
{
	struct health_state h;
	int ok = 1;
	size_t c;

	check_store(m);
	check_spool(m, gauges);
	check_forge(m);
	check_smtp(m);
	check_milter(m);
	for (c = 0; c < HEALTH__COUNT; c++) {
		health_get(&h, (enum health_check)c);
		ok &= h.ok;
		if (body)
			buf_addf(body, "%s: %s: %s\n",
				 health_check_name((enum health_check)c),
				 h.ok ? "ok" : "not ready", h.reason);
	}
	return ok;
}

/* --- the milter's file ------------------------------------------------ */

/*
 * The milter's user writes it: opened without following a link or
 * blocking on a FIFO, a regular file of bounded size, read strictly
 * (metrics_load_milter()).  Its age gives patchbridge_milter_up.
 */
static void load_milter(struct monitor *m)
{
	struct buf text = BUF_INIT(METRICS_MILTER_FILE_MAX);
	char *path = xasprintf("%s/%s", config_str(m->cfg, CFG_SPOOL_DIR),
			       METRICS_MILTER_FILE);
	int64_t every = config_duration_ms(m->cfg,
					   CFG_METRICS_MILTER_INTERVAL) /
			1000,
		age;
	struct stat st;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		metrics_set0(MET_MILTER_UP, 0);
		goto out;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		rc = err_set(PB_EINVAL, "not a regular file");
	else
		rc = fd_read_all(&text, fd);
	close(fd);
	if (!rc)
		rc = metrics_load_milter(text.data, text.len);
	pthread_mutex_lock(&m->lock);
	if (rc && !m->milter_warned)
		log_warn("metrics: %s refused: %s", path, err_msg());
	m->milter_warned = rc != 0;
	pthread_mutex_unlock(&m->lock);
	if (rc) {
		metrics_set0(MET_MILTER_UP, 0);
		goto out;
	}
	age = (int64_t)time(NULL) - (int64_t)st.st_mtime;
	if (age < 0)
		age = 0;
	metrics_set0(MET_MILTER_STATS_AGE, (double)age);
	metrics_set0(MET_MILTER_UP, age <= 3 * every ? 1 : 0);
out:
	free(path);
	buf_release(&text);
}

/* --- the server ------------------------------------------------------- */

static void on_get(struct statusd_reply *r, const char *path, void *arg)
{
	struct monitor *m = arg;
	int rc;

	if (!strcmp(path, "/healthz")) {
		r->status = 200;
		buf_adds(&r->body, "ok\n");
	} else if (!strcmp(path, "/readyz")) {
		struct buf lines = BUF_INIT(HEALTH__COUNT * PB_ERRMSG_MAX * 2);
		int ok = check_all(m, &lines, 0);

		/* the verdict first, then one line per check */
		r->status = ok ? 200 : 503;
		buf_adds(&r->body, ok ? "ready\n" : "not ready\n");
		buf_addbuf(&r->body, &lines);
		buf_release(&lines);
	} else if (!strcmp(path, "/metrics")) {
		check_all(m, NULL, 1); /* the milter's file with it */
		r->content_type = CT_METRICS;
		rc = metrics_render(&r->body, METRIC_DAEMON | METRIC_MILTER);
		if (rc) {
			log_error("metrics: %s", err_msg());
			buf_truncate(&r->body, 0);
			buf_adds(&r->body, "metrics too large\n");
			r->content_type = CT_TEXT;
			r->status = 500;
			return;
		}
		r->status = 200;
	}
}

int monitor_start(struct monitor **out, const struct config *cfg)
{
	struct statusd_opts o;
	struct monitor *m;
	int rc;

	*out = NULL;
	if (!config_bool(cfg, CFG_METRICS_ENABLED))
		return 0;
	m = xcalloc(1, sizeof(*m));
	m->cfg = cfg;
	pthread_mutex_init(&m->lock, NULL);
	memset(&o, 0, sizeof(o));
	o.listen = config_str(cfg, CFG_METRICS_LISTEN);
	o.on_get = on_get;
	o.arg = m;
	rc = statusd_new(&m->sd, &o);
	if (rc) {
		monitor_free(m);
		return err_prefix(rc, "[metrics]");
	}
	*out = m;
	return 0;
}

void monitor_free(struct monitor *m)
{
	if (!m)
		return;
	statusd_free(m->sd);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

unsigned monitor_port(const struct monitor *m)
{
	return statusd_port(m->sd);
}
