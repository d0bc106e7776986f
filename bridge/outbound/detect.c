#include "outbound/detect.h"

#include "core/config.h"
#include "core/metrics.h"
#include "forge/forge.h"
#include "outbound/workq.h"
#include "state/store.h"
#include "state/storeconf.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct hold {
	char *project;
	int64_t iid;
	int64_t updated_ms;
};

struct watch {
	const struct config_project *proj;
	struct forge_mr_cursor cursor;
	int loaded; /* the stored watermark was read */
	int listed; /* listed since the last checkpoint */
	int told; /* a rename was logged (detect_project_pin()) */
	int followed; /* the state of an old name was looked for */
	time_t hooks_checked; /* when the webhooks were last looked at */
};

struct detect {
	const struct config *cfg;
	struct store *store;
	struct forge *forge;
	struct watch *watches; /* one per configured project */
	size_t nr;
	struct hold *holds;
	size_t nr_holds, alloc_holds;
};

int detect_new(struct detect **out, const struct config *cfg, struct store *st,
	       struct forge *f)
{
	struct detect *d = xcalloc(1, sizeof(*d));
	size_t i;

	d->cfg = cfg;
	d->store = st;
	d->forge = f;
	d->nr = config_project_count(cfg);
	d->watches = xcalloc(d->nr ? d->nr : 1, sizeof(*d->watches));
	for (i = 0; i < d->nr; i++) {
		d->watches[i].proj = config_project_at(cfg, i);
		forge_mr_cursor_init(&d->watches[i].cursor);
	}
	*out = d;
	return 0;
}

void detect_free(struct detect *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->nr; i++)
		forge_mr_cursor_release(&d->watches[i].cursor);
	for (i = 0; i < d->nr_holds; i++)
		free(d->holds[i].project);
	free(d->holds);
	free(d->watches);
	free(d);
}

void detect_hold(struct detect *d, const char *project, int64_t iid,
		 int64_t updated_ms)
{
	size_t i;

	if (updated_ms <= 0)
		return;
	for (i = 0; i < d->nr_holds; i++) {
		struct hold *h = &d->holds[i];

		if (h->iid == iid && !strcmp(h->project, project)) {
			if (updated_ms < h->updated_ms)
				h->updated_ms = updated_ms;
			return;
		}
	}
	ALLOC_GROW(d->holds, d->nr_holds + 1, d->alloc_holds);
	d->holds[d->nr_holds].project = xstrdup(project);
	d->holds[d->nr_holds].iid = iid;
	d->holds[d->nr_holds].updated_ms = updated_ms;
	d->nr_holds++;
}

void detect_release(struct detect *d, const char *project, int64_t iid)
{
	size_t i;

	for (i = 0; i < d->nr_holds; i++) {
		struct hold *h = &d->holds[i];

		if (h->iid == iid && !strcmp(h->project, project)) {
			free(h->project);
			d->holds[i] = d->holds[--d->nr_holds];
			return;
		}
	}
}

static void cursor_name(char *out, size_t size, const char *prefix,
			const char *project)
{
	snprintf(out, size, "%s%s", prefix, project);
}

/* Read the stored watermark once. */
static void load_watermark(struct detect *d, struct watch *w)
{
	const char *project = config_project_name(w->proj);
	char name[STORE_CURSOR_NAME_MAX + 1];
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	int64_t ms;
	int rc;

	if (w->loaded)
		return;
	cursor_name(name, sizeof(name), DETECT_CURSOR_PREFIX, project);
	rc = store_cursor_get(&v, d->store, name);
	if (!rc && v.len && !forge_time_parse(&ms, v.data))
		w->cursor.watermark_ms = ms;
	else if (rc && rc != PB_ENOTFOUND)
		log_warn("poll: cannot read the watermark: %s", err_msg());
	w->loaded = !rc || rc == PB_ENOTFOUND;
	buf_release(&v);
}

static void set_cursor(struct detect *d, const char *prefix,
		       const char *project, const char *value)
{
	char name[STORE_CURSOR_NAME_MAX + 1];
	char cut[STORE_CURSOR_VALUE_MAX + 1];

	cursor_name(name, sizeof(name), prefix, project);
	snprintf(cut, sizeof(cut), "%s", value);
	if (store_cursor_set(d->store, name, cut))
		log_warn("poll: cannot record %s: %s", name, err_msg());
}

void detect_moved_text(char *out, size_t size, const char *project,
		       const char *path)
{
	snprintf(out, size,
		 "project %s was renamed to %s: change [project \"%s\"] to "
		 "[project \"%s\"] in the configuration",
		 project, path, project, path);
}

static int read_cursor(struct buf *v, struct store *st, const char *prefix,
		       const char *project)
{
	char name[STORE_CURSOR_NAME_MAX + 1];

	cursor_name(name, sizeof(name), prefix, project);
	return store_cursor_get(v, st, name);
}

static void write_cursor(struct store *st, const char *prefix,
			 const char *project, const char *value)
{
	char name[STORE_CURSOR_NAME_MAX + 1];

	cursor_name(name, sizeof(name), prefix, project);
	if (store_cursor_set(st, name, value))
		log_warn("poll: cannot record %s: %s", name, err_msg());
}

static uint64_t stored_id(struct store *st, const char *project)
{
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	uint64_t id = 0;

	if (read_cursor(&v, st, DETECT_PROJECT_ID_PREFIX, project) || !v.len ||
	    !mem_to_u64(v.data, v.len, INT64_MAX, &id))
		id = 0;
	buf_release(&v);
	return id;
}

void detect_pin_stored(struct store *st, struct forge *f, const char *project)
{
	uint64_t id = stored_id(st, project);

	if (id)
		forge_pin_project(f, project, (int64_t)id);
}

void detect_follow_text(char *out, size_t size, const char *old,
			const char *project)
{
	snprintf(out, size,
		 "the state db keeps state under both %s and [project \"%s\"], "
		 "the same project: it is not merged; %s goes on without the "
		 "threads, replies and revisions of %s",
		 old, project, project, old);
}

/*
 * This host's copy of the thread map, which the milter reads when the
 * database is PostgreSQL, is renamed as the database was: its rows are
 * copied by creation time, and a moved row is not new.
 */
static void follow_copy(const struct config *cfg, const char *old,
			const char *project)
{
	struct store *copy = NULL;

	if (storeconf_backend(cfg) != STORE_BACKEND_POSTGRESQL)
		return;
	if (store_open(&copy, config_str(cfg, CFG_STATE_PATH), STORE_RW,
		       (int)config_duration_ms(cfg, CFG_STATE_BUSY_TIMEOUT)) ||
	    store_project_rename(copy, old, project, DETECT_PROJECT_ID_PREFIX))
		log_warn("thread map copy: %s", err_msg());
	store_free(copy);
}

int detect_project_follow(struct store *st, struct forge *f,
			  const struct config *cfg, const char *project)
{
	const struct config_project *other;
	struct strlist names = STRLIST_INIT;
	char text[4 * STORE_CURSOR_VALUE_MAX];
	struct forge_project p;
	char t[24];
	uint64_t id = stored_id(st, project);
	size_t i, n = strlen(DETECT_PROJECT_ID_PREFIX);
	int rc = 0;

	if (!id) {
		rc = forge_get_project(&p, f, project);
		if (!rc)
			id = (uint64_t)p.id;
		forge_project_release(&p);
		if (rc) {
			err_prefix(rc, "project %s", project);
			return rc;
		}
	}
	snprintf(t, sizeof(t), "%llu", (unsigned long long)id);
	rc = store_cursor_names(&names, st, DETECT_PROJECT_ID_PREFIX, t);
	if (rc)
		goto out;
	write_cursor(st, DETECT_FOLLOW_PREFIX, project, "");
	for (i = 0; i < names.nr; i++) {
		const char *old = names.items[i] + n;

		/* Another section of the same project keeps its own. */
		if (!strcmp(old, project) ||
		    !config_project_get(&other, cfg, old))
			continue;
		rc = store_project_rename(st, old, project,
					  DETECT_PROJECT_ID_PREFIX);
		if (rc == PB_EEXISTS) {
			detect_follow_text(text, sizeof(text), old, project);
			write_cursor(st, DETECT_FOLLOW_PREFIX, project, text);
			log_error("%s", text);
			rc = 0;
			continue;
		}
		if (rc)
			break;
		log_notice("the state of %s now belongs to [project \"%s\"]",
			   old, project);
		follow_copy(cfg, old, project);
	}
out:
	strlist_release(&names);
	return rc;
}

int detect_project_pin(struct store *st, struct forge *f, const char *project,
		       int *told)
{
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	char text[4 * STORE_CURSOR_VALUE_MAX];
	char pv[STORE_CURSOR_VALUE_MAX];
	struct forge_project p;
	uint64_t id = stored_id(st, project);
	int rc, changed;

	if (id)
		forge_pin_project(f, project, (int64_t)id);
	rc = forge_get_project(&p, f, project);
	if (rc) {
		err_prefix(rc, "project %s", project);
		goto out;
	}
	if (!id) {
		/* The first time: the path names the project (an old path
		 * is followed to it); from now on its id does. */
		char t[24];

		snprintf(t, sizeof(t), "%lld", (long long)p.id);
		write_cursor(st, DETECT_PROJECT_ID_PREFIX, project, t);
		forge_pin_project(f, project, p.id);
		log_info("project %s has id %lld", project, (long long)p.id);
	}
	buf_reset(&v);
	if (read_cursor(&v, st, DETECT_MOVED_PREFIX, project))
		buf_reset(&v);
	printable_copy(pv, sizeof(pv), p.path_with_namespace,
		       strlen(p.path_with_namespace));
	if (!strcasecmp(p.path_with_namespace, project)) {
		if (v.len) {
			write_cursor(st, DETECT_MOVED_PREFIX, project, "");
			log_notice("project %s: the configured path is the "
				   "project's path again",
				   project);
		}
		goto out;
	}
	changed = strcmp(v.data, pv) != 0;
	if (changed)
		write_cursor(st, DETECT_MOVED_PREFIX, project, pv);
	if (changed || !told || !*told) {
		detect_moved_text(text, sizeof(text), project, pv);
		log_warn("%s; until then it is reached by its id (%lld)", text,
			 (long long)p.id);
		if (told)
			*told = 1;
	}
out:
	forge_project_release(&p);
	buf_release(&v);
	return rc;
}

/* The watermark as far as it may go: before every MR still held. */
static void save_watermark(struct detect *d, struct watch *w)
{
	const char *project = config_project_name(w->proj);
	struct buf t = BUF_INIT(64);
	int64_t mark = w->cursor.watermark_ms;
	size_t i;

	for (i = 0; i < d->nr_holds; i++)
		if (!strcmp(d->holds[i].project, project) &&
		    d->holds[i].updated_ms <= mark)
			mark = d->holds[i].updated_ms - 1;
	if (mark > 0 && !forge_time_format(&t, mark))
		set_cursor(d, DETECT_CURSOR_PREFIX, project, t.data);
	buf_release(&t);
}

static void save(struct detect *d, struct watch *w)
{
	const char *project = config_project_name(w->proj);
	struct buf t = BUF_INIT(64);

	save_watermark(d, w);
	if (!forge_time_format(&t, (int64_t)time(NULL) * 1000))
		set_cursor(d, DETECT_TIME_PREFIX, project, t.data);
	set_cursor(d, DETECT_ERROR_PREFIX, project, "");
	buf_release(&t);
}

/*
 * GitLab stops delivering to a webhook that kept failing, and says so
 * only in the hook's alert_status (forge_hooks_problem()): polling goes
 * on, so nothing is lost, but every change now waits for the next poll.
 * A token that may not read the hooks (not a Maintainer's) leaves it
 * unknown.
 */
static void check_hooks(struct detect *d, struct watch *w)
{
	const char *project = config_project_name(w->proj);
	struct buf b = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	time_t now = time(NULL);
	int rc;

	if (!config_bool(d->cfg, CFG_WEBHOOK_ENABLED) ||
	    (w->hooks_checked && now - w->hooks_checked < DETECT_HOOKS_CHECK_S))
		return;
	w->hooks_checked = now;
	rc = forge_hooks_problem(&b, d->forge, project);
	if (rc) {
		log_info("poll: the webhooks cannot be read: %s", err_msg());
	} else {
		if (b.len)
			log_warn("%s", b.data);
		set_cursor(d, DETECT_HOOKS_PREFIX, project, b.data);
	}
	buf_release(&b);
}

struct poll_walk {
	struct detect *d;
	struct watch *w;
	struct workq *q;
	size_t queued;
};

static int mr_found(const struct forge_mr *mr, void *arg)
{
	struct poll_walk *pw = arg;
	const char *project = config_project_name(pw->w->proj);
	int rc;

	if (mr->draft &&
	    config_project_bool(pw->w->proj, CFG_OUTBOUND_SKIP_DRAFTS)) {
		log_info("poll: !%lld is a draft: skipped (skip_drafts)",
			 (long long)mr->iid);
		return 0;
	}
	rc = workq_push(pw->q, project, mr->iid, mr->updated_ms, "poll");
	if (rc == PB_ELIMIT) {
		log_warn("poll: %s; the rest comes with the next poll",
			 err_msg());
		return rc;
	}
	/* Queued (now or before): held until looked at, so the watermark
	 * this listing saves stays before it (detect.h). */
	if (!rc || rc == PB_EEXISTS)
		detect_hold(pw->d, project, mr->iid, mr->updated_ms);
	if (!rc)
		pw->queued++;
	return 0;
}

int detect_poll(struct detect *d, struct workq *q, size_t *queued)
{
	struct forge_mr_query fq;
	struct log_ctx_saved saved;
	size_t i;
	int rc, auth, first = 0;

	if (queued)
		*queued = 0;
	log_ctx_push(&saved, NULL);
	memset(&fq, 0, sizeof(fq));
	fq.state = "opened";
	fq.overlap_ms = config_duration_ms(d->cfg, CFG_OUTBOUND_POLL_OVERLAP);
	for (i = 0; i < d->nr; i++) {
		struct watch *w = &d->watches[i];
		const char *project = config_project_name(w->proj);
		struct poll_walk pw = { d, w, q, 0 };

		if (!config_project_bool(w->proj, CFG_PROJECT_ENABLED))
			continue;
		log_ctx_set(project);
		/* Before anything is kept under this name: the state of the
		 * name it had, once per start and reload. */
		if (!w->followed) {
			if (detect_project_follow(d->store, d->forge, d->cfg,
						  project))
				log_warn("%s", err_msg());
			else
				w->followed = 1;
		}
		/* By id from now on; a project the forge cannot show is
		 * still listed by its path, so that the listing says why. */
		if (detect_project_pin(d->store, d->forge, project, &w->told))
			log_info("%s", err_msg());
		load_watermark(d, w);
		rc = forge_list_mrs(d->forge, project, &w->cursor, &fq,
				    mr_found, &pw);
		if (rc) {
			log_warn("poll failed: %s", err_msg());
			set_cursor(d, DETECT_ERROR_PREFIX, project, err_msg());
			/* An expired or revoked token waits for the
			 * operator (PB_ETEMP) but is the token's fault. */
			auth = rc == PB_EPERM ||
			       forge_token_problem(d->forge) != FORGE_TOKEN_OK;
			metrics_inc2(MET_POLLS, project,
				     auth		? "auth" :
				     rc == PB_ENOTFOUND ? "not_found" :
				     rc == PB_ETEMP	? "unreachable" :
							  "error");
			if (!first)
				first = rc;
		} else {
			metrics_inc2(MET_POLLS, project, "ok");
			metrics_set1(MET_POLL_LAST_SUCCESS, (double)time(NULL),
				     project);
			save(d, w);
			w->listed = 1;
			check_hooks(d, w);
			log_debug("poll: %zu merge request(s) to look at",
				  pw.queued);
		}
		if (queued)
			*queued += pw.queued;
	}
	log_ctx_pop(&saved);
	return first;
}

void detect_checkpoint(struct detect *d)
{
	size_t i;

	for (i = 0; i < d->nr; i++) {
		struct watch *w = &d->watches[i];

		/* Only what a listing of this detect moved. */
		if (w->listed)
			save_watermark(d, w);
		w->listed = 0;
	}
}
