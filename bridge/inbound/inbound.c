#include "inbound/inbound.h"

#include "core/metrics.h"
#include "core/owners.h"
#include "core/preflight.h"
#include "inbound/approval.h"
#include "inbound/apply.h"
#include "inbound/marker.h"
#include "inbound/plan.h"
#include "inbound/provenance.h"
#include "inbound/position.h"
#include "inbound/usermap.h"
#include "mail/digest.h"
#include "mail/review.h"
#include "state/spool.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOCK_NAME ".inbound.lock"
/* Patches of one revision we look at ([outbound] max_series allows
 * at most this many). */
#define PATCHES_MAX 1000

/* A file loaded once per inbound object, by path. */
struct loaded {
	char *path;
	void *obj;
};

/* The files named by one parameter: owners_file or user_map. */
enum loaded_kind { LOADED_OWNERS, LOADED_USERMAP };

struct loaded_set {
	enum loaded_kind kind;
	struct loaded *v;
	size_t nr, alloc;
};

struct inbound {
	const struct config *cfg;
	struct store *st;
	struct forge *forge;
	struct spool *sp;
	int lock_fd;
	int retry_now;
	const volatile sig_atomic_t *stop;
	int (*submission)(void *arg, char *project, size_t size,
			  const char *raw, size_t len);
	void *submission_arg;
	notify_render_fn render_notice;
	void *render_arg;
	struct inbound_stats stats;
	struct loaded_set owners; /* struct owners */
	struct loaded_set maps; /* struct usermap */
	int64_t next_prune; /* when done/ is pruned next */
	int backfilled; /* the archive holds the spool's older mails */
};

void inbound_message_id_span(const char **start, size_t *len, const char *id)
{
	const char *p = id ? id : "";
	size_t n;

	while (*p == ' ' || *p == '\t' || *p == '<')
		p++;
	n = strlen(p);
	while (n && strchr(" \t>", p[n - 1]))
		n--;
	*start = p;
	*len = n;
}

char *inbound_message_id(const char *id, const char *raw, size_t len)
{
	char h[DIGEST_HEX128_SIZE];
	const char *p;
	size_t n;

	inbound_message_id_span(&p, &n, id);
	if (n)
		return xstrndup(p, n);
	digest_sha256_hex128(h, raw, len);
	return xasprintf("nomsgid.%s@patchbridge.invalid", h);
}

/* A stop was asked for: claim nothing more. */
static int stopping(const struct inbound *ib)
{
	return ib->stop && *ib->stop;
}

static int take_lock(struct inbound *ib, const char *dir)
{
	char *path = xasprintf("%s/%s", dir, LOCK_NAME);
	struct preflight_owner o;
	struct stat st;
	int rc = 0;

	/* The spool's top is writable by the milter's group: never follow
	 * a link planted at the name, never lock a file someone else made
	 * (and could hold locked).  A fix names the daemon's user, never
	 * root (core/preflight.h). */
	preflight_owner(&o, ib->cfg, dir, 1);
	ib->lock_fd = open(path,
			   O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
			   0660);
	if (ib->lock_fd < 0 && errno == EACCES) {
		rc = err_set(PB_EPERM,
			     "%s: %s: the spool's lock is not the "
			     "daemon's user's (left by a run as root?): "
			     "chown %s:%s %s",
			     path, strerror(EACCES), o.user, o.group, path);
		goto out;
	}
	if (ib->lock_fd < 0) {
		rc = err_set_errno(PB_ERROR, "inbound: %s%s", path,
				   errno == ELOOP ? " is a symbolic link" : "");
		goto out;
	}
	if (fstat(ib->lock_fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid()) {
		rc = err_set(PB_EPERM,
			     "inbound: %s is not a file of this user (uid "
			     "%lu): chown %s:%s %s, or remove it",
			     path, (unsigned long)geteuid(), o.user, o.group,
			     path);
		close(ib->lock_fd);
		ib->lock_fd = -1;
		goto out;
	}
	if (flock(ib->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			rc = err_set(PB_ETEMP,
				     "inbound: another process applies "
				     "inbound mail (%s is locked)",
				     path);
		else
			rc = err_set_errno(PB_ERROR, "inbound: flock %s", path);
		close(ib->lock_fd);
		ib->lock_fd = -1;
	}
out:
	free(path);
	return rc;
}

static int load_file(void **out, enum loaded_kind kind, const char *path)
{
	struct owners *o = NULL;
	struct usermap *m = NULL;
	int rc;

	if (kind == LOADED_OWNERS)
		rc = owners_load(&o, path);
	else
		rc = usermap_load(&m, path);
	*out = kind == LOADED_OWNERS ? (void *)o : (void *)m;
	return rc;
}

static void loaded_release(struct loaded_set *set)
{
	size_t i;

	for (i = 0; i < set->nr; i++) {
		free(set->v[i].path);
		if (set->kind == LOADED_OWNERS)
			owners_free(set->v[i].obj);
		else
			usermap_free(set->v[i].obj);
	}
	free(set->v);
	set->v = NULL;
	set->nr = set->alloc = 0;
}

int inbound_new(struct inbound **out, const struct inbound_opts *opts)
{
	const char *dir = config_str(opts->cfg, CFG_SPOOL_DIR);
	struct inbound *ib;
	size_t requeued = 0, removed = 0;
	int rc, rows = 0;

	*out = NULL;
	ib = xcalloc(1, sizeof(*ib));
	ib->cfg = opts->cfg;
	ib->st = opts->store;
	ib->forge = opts->forge;
	ib->retry_now = opts->retry_now;
	ib->stop = opts->stop;
	ib->submission = opts->submission;
	ib->submission_arg = opts->submission_arg;
	ib->render_notice = opts->render_notice;
	ib->render_arg = opts->render_arg;
	ib->lock_fd = -1;
	ib->owners.kind = LOADED_OWNERS;
	ib->maps.kind = LOADED_USERMAP;
	rc = spool_open(&ib->sp, dir, SPOOL_READER);
	if (rc)
		goto out;
	rc = take_lock(ib, dir);
	if (rc)
		goto out;
	/* Holding the lock, no other applier is mid-way: what is claimed
	 * was left by one that died. */
	rc = spool_recover(&requeued, &removed, ib->sp, SPOOL_TMP_STALE_DEFAULT,
			   (int64_t)time(NULL));
	if (!rc)
		rc = store_inbound_recover(&rows, ib->st);
	if (rc)
		goto out;
	if (requeued || rows)
		log_notice("inbound: recovered %zu spool record(s) and %d "
			   "journal row(s) left by an earlier run",
			   requeued, rows);
out:
	if (rc) {
		inbound_free(ib);
		return rc;
	}
	*out = ib;
	return 0;
}

void inbound_free(struct inbound *ib)
{
	if (!ib)
		return;
	loaded_release(&ib->owners);
	loaded_release(&ib->maps);
	spool_free(ib->sp);
	if (ib->lock_fd >= 0)
		close(ib->lock_fd); /* releases the flock */
	free(ib);
}

void inbound_get_stats(struct inbound_stats *out, const struct inbound *ib)
{
	*out = ib->stats;
}

/*
 * Ingest.
 */

/* The row's spool record is in this host's spool (not another's). */
static int spooled_here(const struct inbound *ib,
			const struct store_inbound *row)
{
	return !row->spooled_by || !strcmp(row->spooled_by, store_host(ib->st));
}

static int spool_final(struct inbound *ib, const char *name,
		       const struct store_inbound *row)
{
	if (row->state == STORE_INBOUND_DEAD)
		return spool_dead(ib->sp, name,
				  row->last_error ? row->last_error : "dead");
	return spool_done(ib->sp, name);
}

struct record_tx {
	const struct store_inbound *in;
	const struct spool_record *rec;
};

static int record_tx(struct store *st, void *arg)
{
	const struct record_tx *r = arg;
	const struct store_inbound *in = r->in;
	struct store_archived a;
	int rc;

	rc = store_inbound_record(st, in);
	if (!rc && in->project && in->iid > 0 && r->rec->message.len) {
		store_archived_init(&a);
		a.message_id = in->message_id;
		a.project = in->project;
		a.iid = in->iid;
		a.origin = STORE_ARCHIVE_LIST;
		a.message = r->rec->message.data;
		a.message_len = r->rec->message.len;
		rc = store_archive_put(st, &a);
		if (rc == PB_EEXISTS) /* the bridge's own mail, sent back */
			rc = 0;
		else if (rc == PB_EINVAL) {
			log_warn("inbound: <%s> not archived: %s",
				 in->message_id, err_msg());
			rc = 0;
		}
	}
	return rc;
}

/*
 * Journal a spooled mail and, when it is about an MR, archive it as
 * received (for `patchbridge export`), in one transaction.  Two hosts
 * that received the same mail (a sender's MTA retried on the other MX)
 * journal it at the same moment: on PostgreSQL one of them meets a
 * serialization failure, runs the transaction again and finds the mail
 * journaled (PB_EEXISTS: a copy) - a normal race, not a warning.
 */
static int record(struct inbound *ib, const struct store_inbound *in,
		  const struct spool_record *rec)
{
	struct record_tx r = { in, rec };

	return store_transaction(ib->st, record_tx, &r);
}

static int ingest_one(struct inbound *ib, const char *name, int64_t now)
{
	struct spool_record rec;
	struct store_inbound in, row;
	struct log_ctx_saved saved;
	struct buf raw = BUF_INIT(STORE_SPOOL_RECORD_MAX);
	char *id = NULL;
	int rc;

	spool_record_init(&rec);
	store_inbound_init(&in);
	store_inbound_init(&row);
	/* The record's name (it holds the Postfix queue id) until its
	 * Message-ID is known, which apply_row() then uses too. */
	log_ctx_push(&saved, name);
	rc = spool_read(&rec, ib->sp, name);
	if (rc == PB_EINVAL) {
		/* spool_read() moved it to dead/ with the reason */
		log_warn("inbound: spool record %s: %s", name, err_msg());
		ib->stats.corrupt++;
		metrics_inc1(MET_REPLIES_DEAD, "corrupt");
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	id = inbound_message_id(rec.message_id, rec.message.data,
				rec.message.len);
	log_ctx_set(id);
	in.message_id = id;
	in.spool_name = name;
	in.project = rec.project[0] ? rec.project : NULL;
	in.iid = rec.iid;
	in.revision = rec.revision;
	in.patch = rec.patch;
	in.classification = rec.kind[0] ? rec.kind : "reply";
	/* The record goes with the row, so any host can apply the mail. */
	if (!spool_format(&raw, &rec)) {
		in.spool_record = raw.data;
		in.spool_record_len = raw.len;
	} else {
		log_warn("inbound: %s: %s; only this host can apply it", name,
			 err_msg());
	}
	/* Due in the pass that journals it, however long journaling the
	 * whole spool takes: that pass applies with this clock. */
	in.next_attempt = now > 0 ? now : 0;
	rc = record(ib, &in, &rec);
	if (!rc) {
		ib->stats.ingested++;
		metrics_inc1(MET_REPLIES_RECEIVED, "journaled");
		log_info("inbound: <%s> journaled from %s", id, name);
		goto out;
	}
	if (rc != PB_EEXISTS)
		goto out;
	rc = store_inbound_get(&row, ib->st, id);
	if (rc)
		goto out;
	if (strcmp(row.spool_name, name) || !spooled_here(ib, &row)) {
		/* Another copy of a mail we have (from this host's spool or
		 * another's): applied once. */
		log_notice("inbound: %s is a copy of <%s> (%s%s%s); not "
			   "applied again",
			   name, id, row.spool_name,
			   spooled_here(ib, &row) ? "" : " on ",
			   spooled_here(ib, &row) ? "" : row.spooled_by);
		ib->stats.duplicates++;
		metrics_inc1(MET_REPLIES_RECEIVED, "duplicate");
		rc = spool_done(ib->sp, name);
		goto out;
	}
	/* Our own record, back from a recovery: keep it claimed while its
	 * row is open, file it when the row is finished. */
	if (row.state == STORE_INBOUND_APPLIED ||
	    row.state == STORE_INBOUND_IGNORED ||
	    row.state == STORE_INBOUND_DEAD)
		rc = spool_final(ib, name, &row);
out:
	if (rc && rc != PB_ETEMP && rc != PB_ENOTFOUND)
		log_error("inbound: spool record %s: %s", name, err_msg());
	log_ctx_pop(&saved);
	free(id);
	buf_release(&raw);
	store_inbound_release(&row);
	spool_record_release(&rec);
	return rc;
}

/* Names and Message-IDs of the records in cur/ (spool_each_header()). */
struct cur_records {
	struct strlist names;
	struct strlist ids;
};

static int note_cur(const char *name, const struct spool_record *hdr, int err,
		    void *arg)
{
	struct cur_records *c = arg;

	if (!err && hdr && hdr->message_id) {
		strlist_push(&c->names, name);
		strlist_push(&c->ids, hdr->message_id);
	}
	return 0;
}

/*
 * On a shared state, the records in this host's cur/ whose journal rows
 * another host finished: it took the mail over (store.h) and cannot
 * reach this spool, so this host files them at its next pass.  (A row
 * this host finishes has its record filed there and then.)
 */
static int file_taken_over(struct inbound *ib)
{
	struct cur_records c = { STRLIST_INIT, STRLIST_INIT };
	struct store_inbound row;
	size_t i;
	int rc;

	if (store_backend(ib->st) != STORE_BACKEND_POSTGRESQL)
		return 0;
	store_inbound_init(&row);
	rc = spool_each_header(ib->sp, SPOOL_CUR, note_cur, &c);
	for (i = 0; !rc && i < c.names.nr && !stopping(ib); i++) {
		rc = store_inbound_get(&row, ib->st, c.ids.items[i]);
		if (rc == PB_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc || !spooled_here(ib, &row) ||
		    strcmp(row.spool_name, c.names.items[i]) ||
		    (row.state != STORE_INBOUND_APPLIED &&
		     row.state != STORE_INBOUND_IGNORED &&
		     row.state != STORE_INBOUND_DEAD))
			continue;
		rc = spool_final(ib, c.names.items[i], &row);
		if (!rc)
			log_info("inbound: <%s> was %s by %s; %s filed",
				 row.message_id,
				 store_inbound_state_name(row.state),
				 row.claimed_by ? row.claimed_by :
						  "another host",
				 c.names.items[i]);
		else if (rc == PB_ENOTFOUND) /* moved meanwhile */
			rc = 0;
	}
	store_inbound_release(&row);
	strlist_release(&c.names);
	strlist_release(&c.ids);
	return rc;
}

int inbound_ingest_spool(struct inbound *ib, int64_t now)
{
	char name[SPOOL_NAME_MAX + 1];
	int rc;

	for (;;) {
		if (stopping(ib))
			return 0;
		rc = spool_claim_next(name, sizeof(name), ib->sp);
		if (rc == PB_ENOTFOUND)
			return file_taken_over(ib);
		if (rc)
			return rc;
		rc = ingest_one(ib, name, now);
		if (rc == PB_ETEMP) {
			char cause[PB_ERRMSG_MAX];

			/* the store is busy: give it back for later (the
			 * cause is kept: a failed release sets its own) */
			snprintf(cause, sizeof(cause), "%s", err_msg());
			if (spool_release(ib->sp, name))
				log_warn("inbound: %s", err_msg());
			return err_set(PB_ETEMP, "journaling %s: %s", name,
				       cause);
		}
		if (rc && rc != PB_ENOTFOUND)
			return rc;
	}
}

/*
 * Lookups.
 */

int inbound_locate(struct inbound_target *out, int *is_ours, struct store *st,
		   const struct mail *m)
{
	char id[STORE_MSGID_MAX + 1];
	struct strlist ids = STRLIST_INIT;
	struct store_mail row;
	struct store_inbound in;
	size_t i;
	int rc = PB_ENOTFOUND, r2;

	memset(out, 0, sizeof(*out));
	*is_ours = 0;
	store_mail_init(&row);
	store_inbound_init(&in);
	if (provenance_strip_id(id, sizeof(id), m->message_id) &&
	    !store_mail_get(&row, st, id)) {
		*is_ours = 1;
		goto out;
	}
	provenance_answered(&ids, m);
	/* The thread map first: it is the authority. */
	for (i = 0; i < ids.nr && rc == PB_ENOTFOUND; i++) {
		r2 = store_mail_get(&row, st, ids.items[i]);
		if (r2 && r2 != PB_ENOTFOUND) {
			rc = r2;
			break;
		}
		/* iid 0: the notice about a series that became no merge
		 * request (schema 12) places nothing */
		if (r2 || !row.project || row.iid < 1)
			continue;
		snprintf(out->project, sizeof(out->project), "%s", row.project);
		out->iid = row.iid;
		out->revision = row.revision;
		out->patch = row.patch;
		rc = 0;
	}
	/* A reply to a reply we bridged: where that one went. */
	for (i = 0; i < ids.nr && rc == PB_ENOTFOUND; i++) {
		r2 = store_inbound_get(&in, st, ids.items[i]);
		if (r2 && r2 != PB_ENOTFOUND) {
			rc = r2;
			break;
		}
		if (r2 || !in.project)
			continue;
		snprintf(out->project, sizeof(out->project), "%s", in.project);
		out->iid = in.iid;
		out->revision = in.revision;
		out->patch = in.patch;
		rc = 0;
	}
	if (rc == PB_ENOTFOUND)
		err_set(rc, "not a reply to a bridged series");
out:
	strlist_release(&ids);
	store_mail_release(&row);
	store_inbound_release(&in);
	return rc;
}

/*
 * The object loaded from path (NULL for an empty path), loaded at its
 * first use.  A file that does not load is a temporary failure: the mail
 * waits until it is fixed.
 */
static int loaded_get(void **out, struct loaded_set *set, const char *path)
{
	void *obj = NULL;
	size_t i;
	int rc;

	*out = NULL;
	if (!path[0])
		return 0;
	for (i = 0; i < set->nr; i++)
		if (!strcmp(set->v[i].path, path)) {
			*out = set->v[i].obj;
			return 0;
		}
	rc = load_file(&obj, set->kind, path);
	if (rc) {
		log_error("inbound: %s", err_msg());
		return err_prefix(PB_ETEMP, "%s does not load",
				  set->kind == LOADED_OWNERS ? "owners_file" :
							       "user_map");
	}
	ALLOC_GROW(set->v, set->nr + 1, set->alloc);
	set->v[set->nr].path = xstrdup(path);
	set->v[set->nr].obj = obj;
	set->nr++;
	*out = obj;
	return 0;
}

/*
 * Apply one journal row.
 */

/* What one mail's planning callbacks need. */
struct mailctx {
	struct inbound *ib;
	struct owners *owners;
	struct usermap *map;
	struct strlist patch_paths; /* files the target patch touches */
	struct strlist series_paths; /* ... the whole revision */
	/* The revision's patches as mailed, [k] the one answered; NULL
	 * where a diff is missing. */
	struct diff **patches;
	size_t nr_patches;
	size_t k;
	int have_version; /* base/start/head known */
	struct strlist users; /* email, username pairs looked up */
};

static int cb_map_user(const char **user, const char *email, void *arg)
{
	struct mailctx *mc = arg;
	struct forge_user u;
	size_t i;
	int rc;

	*user = NULL;
	for (i = 0; i + 1 < mc->users.nr; i += 2)
		if (!strcasecmp(mc->users.items[i], email)) {
			*user = mc->users.items[i + 1][0] ?
					mc->users.items[i + 1] :
					NULL;
			return *user ? 0 : PB_ENOTFOUND;
		}
	*user = usermap_lookup(mc->map, email);
	if (*user)
		return 0;
	/* owners.yaml may name the login too (its gluser field) */
	if (!owners_gluser(user, mc->owners, email))
		return 0;
	*user = NULL;
	memset(&u, 0, sizeof(u));
	rc = forge_find_user_by_email(&u, mc->ib->forge, email);
	if (!rc && u.username && (!u.state || !strcmp(u.state, "active"))) {
		strlist_push(&mc->users, email);
		*user = strlist_push(&mc->users, u.username);
	} else if (!rc || rc == PB_ENOTFOUND) {
		strlist_push(&mc->users, email);
		strlist_push(&mc->users, "");
		rc = PB_ENOTFOUND;
	}
	forge_user_release(&u);
	return rc;
}

int inbound_map_user(char *user, size_t size, struct inbound *ib,
		     const char *project, const char *email)
{
	const struct config_project *proj;
	struct mailctx mc;
	const char *found = NULL;
	void *obj = NULL;
	int rc;

	if (size)
		user[0] = '\0';
	rc = config_project_get(&proj, ib->cfg, project);
	if (rc)
		return rc;
	memset(&mc, 0, sizeof(mc));
	mc.ib = ib;
	strlist_init(&mc.users);
	rc = loaded_get(&obj, &ib->owners,
			config_project_str(proj, CFG_INBOUND_OWNERS_FILE));
	mc.owners = obj;
	if (!rc)
		rc = loaded_get(&obj, &ib->maps,
				config_project_str(proj, CFG_INBOUND_USER_MAP));
	mc.map = obj;
	if (!rc)
		rc = cb_map_user(&found, email, &mc);
	if (rc == PB_ENOTFOUND)
		rc = 0;
	if (!rc && found)
		snprintf(user, size, "%s", found);
	strlist_release(&mc.users);
	return rc;
}

static int cb_is_owner(int *owner, const char *email, enum trailer_scope scope,
		       void *arg)
{
	struct mailctx *mc = arg;
	const struct strlist *paths = scope == TRAILER_SCOPE_SERIES ||
						      !mc->patch_paths.nr ?
					      &mc->series_paths :
					      &mc->patch_paths;
	int rc;

	*owner = 0;
	if (!mc->owners || !paths->nr)
		return 0;
	rc = owners_is_approver(NULL, mc->owners,
				(const char *const *)paths->items, paths->nr,
				email);
	*owner = rc == 1;
	return 0;
}

static int cb_place(enum forge_line_kind *kind, int64_t *old_line,
		    int64_t *new_line, const struct review_inline *x, void *arg)
{
	struct mailctx *mc = arg;

	if (!mc->have_version || mc->k >= mc->nr_patches)
		return 0;
	return position_map(kind, old_line, new_line,
			    (const struct diff *const *)mc->patches,
			    mc->nr_patches, mc->k, x->old_path, x->path,
			    x->old_line, x->new_line);
}

static void add_paths(struct strlist *out, const struct diff *d)
{
	size_t i;

	for (i = 0; i < d->nr_files; i++) {
		if (d->files[i].new_path &&
		    strlist_find(out, d->files[i].new_path) < 0)
			strlist_push(out, d->files[i].new_path);
		if (d->files[i].old_path &&
		    strlist_find(out, d->files[i].old_path) < 0)
			strlist_push(out, d->files[i].old_path);
	}
}

/* The diff of a thread map row: a whole mail, or the diff alone. */
static int row_diff(struct diff **out, const struct store_mail *m)
{
	const char *p = m->diff;
	size_t i;

	*out = NULL;
	if (!p || !m->diff_len)
		return 0;
	/* A mail starts with a header field (or an mbox From line). */
	for (i = 0; i < m->diff_len && i < 80; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == ':' && i > 0)
			return review_patch_diff(out, p, m->diff_len);
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-'))
			break;
	}
	if (m->diff_len > 5 && !memcmp(p, "From ", 5))
		return review_patch_diff(out, p, m->diff_len);
	return diff_parse(out, p, m->diff_len);
}

struct job {
	struct store_inbound *row;
	const struct config_project *proj;
	struct spool_record rec;
	struct store_revision rev;
	struct store_mail patch_row;
	struct diff *parent; /* borrowed from mc.patches */
	struct review *review;
	struct mailctx mc;
	char *reply_discussion;
	int reply_to_forge; /* the parent is a forge comment's mail */
	/* The parent's forge actions (a list reply we applied), the
	 * parent as parsed again, and the diff threads those actions
	 * started or answered on this mail's version: strings borrowed
	 * from parent_acts and parent_review. */
	struct store_action_list parent_acts;
	struct review *parent_review;
	struct plan_thread *threads;
	size_t nr_threads;
	int total;
	/* the outcome */
	enum store_inbound_state state;
	char reason[PB_ERRMSG_MAX];
	const char *token; /* the reason as a metric label */
	/* applied: trailers not honoured as approvals, by verdict; a NAK */
	unsigned refused[APPROVAL__COUNT];
	int nak;
	/* the notice to the sender (inbound/notify.h): what was not done,
	 * the MR's address, an opt-out request (-1: none) */
	struct strlist reasons;
	char *link;
	int request;
	const char *notice; /* the decision recorded (static), or NULL */
};

static void job_init(struct job *j, struct store_inbound *row)
{
	memset(j, 0, sizeof(*j));
	j->row = row;
	spool_record_init(&j->rec);
	store_revision_init(&j->rev);
	store_mail_init(&j->patch_row);
	strlist_init(&j->mc.patch_paths);
	strlist_init(&j->mc.series_paths);
	strlist_init(&j->mc.users);
	strlist_init(&j->reasons);
	j->request = -1;
}

static void job_release(struct job *j)
{
	size_t i;

	spool_record_release(&j->rec);
	store_revision_release(&j->rev);
	store_mail_release(&j->patch_row);
	for (i = 0; i < j->mc.nr_patches; i++)
		diff_free(j->mc.patches[i]);
	free(j->mc.patches);
	review_free(j->review);
	strlist_release(&j->mc.patch_paths);
	strlist_release(&j->mc.series_paths);
	strlist_release(&j->mc.users);
	free(j->reply_discussion);
	store_action_list_release(&j->parent_acts);
	review_free(j->parent_review);
	free(j->threads);
	strlist_release(&j->reasons);
	free(j->link);
}

static int finish(struct job *j, enum store_inbound_state state,
		  const char *token, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Record the final outcome (the record is filed by the caller); token is
 * the reason's word for the metrics (core/metrics.c: replies ignored or
 * dead, by reason).
 */
static int finish(struct job *j, enum store_inbound_state state,
		  const char *token, const char *fmt, ...)
{
	va_list ap;

	j->state = state;
	j->token = token;
	va_start(ap, fmt);
	vsnprintf(j->reason, sizeof(j->reason), fmt, ap);
	va_end(ap);
	return 0;
}

/*
 * The raw mail: the copy the journal keeps (whichever host spooled it),
 * else this host's spool record - in cur/ normally, elsewhere after an
 * interrupted run.
 */
static int load_record(struct inbound *ib, struct job *j)
{
	static const enum spool_area areas[] = { SPOOL_CUR, SPOOL_NEW,
						 SPOOL_DONE, SPOOL_DEAD };
	char *kept = NULL;
	size_t i, len = 0;
	int rc;

	rc = store_inbound_spool_record(&kept, &len, ib->st,
					j->row->message_id);
	if (!rc) {
		rc = spool_parse(&j->rec, kept, len);
		free(kept);
		return rc;
	}
	if (rc != PB_ENOTFOUND)
		return rc;
	if (!spooled_here(ib, j->row))
		return err_set(PB_ETEMP,
			       "spooled on host %s, which has the record",
			       j->row->spooled_by);
	for (i = 0; i < sizeof(areas) / sizeof(areas[0]); i++) {
		rc = spool_load(&j->rec, ib->sp, areas[i], j->row->spool_name);
		if (rc != PB_ENOTFOUND)
			break;
	}
	return rc;
}

/* The revision's patches: the target's diff, and every file's path. */
static int load_revision(struct inbound *ib, struct job *j)
{
	struct store_inbound *row = j->row;
	struct store_mail_list list;
	struct mailctx *mc = &j->mc;
	size_t i;
	int rc;

	memset(&list, 0, sizeof(list));
	rc = store_mail_list_revision(&list, ib->st, row->project, row->iid,
				      row->revision);
	if (rc == PB_ENOTFOUND)
		rc = 0;
	for (i = 0; i < list.nr && !rc; i++) {
		const struct store_mail *m = &list.items[i];
		struct diff *d = NULL;

		if (m->kind != STORE_MAIL_PATCH || m->patch < 1 ||
		    m->patch > PATCHES_MAX)
			continue;
		if (m->total > j->total)
			j->total = m->total;
		if (row_diff(&d, m)) {
			log_warn("inbound: the diff of <%s> does not parse: %s",
				 m->message_id, err_msg());
			continue;
		}
		if (!d)
			continue;
		add_paths(&mc->series_paths, d);
		if (m->patch == row->patch)
			add_paths(&mc->patch_paths, d);
		if ((size_t)m->patch > mc->nr_patches) {
			size_t n = (size_t)m->patch;

			mc->patches = xreallocarray(mc->patches, n,
						    sizeof(*mc->patches));
			memset(mc->patches + mc->nr_patches, 0,
			       (n - mc->nr_patches) * sizeof(*mc->patches));
			mc->nr_patches = n;
		}
		diff_free(mc->patches[m->patch - 1]);
		mc->patches[m->patch - 1] = d;
	}
	if (row->patch >= 1 && (size_t)row->patch <= mc->nr_patches) {
		mc->k = (size_t)row->patch - 1;
		j->parent = mc->patches[mc->k];
	} else {
		mc->k = (size_t)-1;
	}
	store_mail_list_release(&list);
	if (rc)
		return rc;
	rc = store_mail_find(&j->patch_row, ib->st, row->project, row->iid,
			     row->revision, row->patch);
	if (rc && rc != PB_ENOTFOUND)
		return rc;
	if (!rc && j->patch_row.total > j->total)
		j->total = j->patch_row.total;
	rc = store_revision_get(&j->rev, ib->st, row->project, row->iid,
				row->revision);
	if (rc && rc != PB_ENOTFOUND)
		return rc;
	if (!rc && j->rev.patches > j->total)
		j->total = j->rev.patches;
	return 0;
}

/* The version SHAs: the patch mail's own, else the revision's. */
static void version_shas(const struct job *j, const char **base,
			 const char **start, const char **head)
{
	const struct store_mail *m = &j->patch_row;

	if (m->base_sha && m->start_sha && m->head_sha) {
		*base = m->base_sha, *start = m->start_sha;
		*head = m->head_sha;
	} else if (j->rev.base_sha && j->rev.start_sha && j->rev.head_sha) {
		*base = j->rev.base_sha, *start = j->rev.start_sha;
		*head = j->rev.head_sha;
	} else {
		*base = *start = *head = NULL;
	}
}

/* The mail's parent: In-Reply-To, else the last References entry. */
static int parent_id(char *out, size_t size, const struct mail *m)
{
	if (provenance_strip_id(out, size, m->in_reply_to))
		return 1;
	return m->references.nr &&
	       provenance_strip_id(out, size,
				   m->references.items[m->references.nr - 1]);
}

/* The thread the mail answers: a mirrored forge comment, or the comment
 * another bridged mail started (whose actions are kept for
 * parent_threads()). */
static int find_thread(struct inbound *ib, struct job *j)
{
	const struct mail *m = j->review->mail;
	char id[STORE_MSGID_MAX + 1];
	struct store_mail row;
	struct store_action_list *acts = &j->parent_acts;
	size_t i;
	int rc;

	if (!parent_id(id, sizeof(id), m))
		return 0;
	store_mail_init(&row);
	rc = store_mail_get(&row, ib->st, id);
	if (!rc && row.discussion_id && row.project &&
	    !strcmp(row.project, j->row->project) && row.iid == j->row->iid) {
		j->reply_discussion = xstrdup(row.discussion_id);
		j->reply_to_forge = row.kind == STORE_MAIL_FORGE_COMMENT;
	}
	store_mail_release(&row);
	if (rc && rc != PB_ENOTFOUND)
		return rc;
	if (j->reply_discussion)
		return 0;
	rc = store_action_list(acts, ib->st, id);
	for (i = 0; !rc && i < acts->nr; i++) {
		const struct store_action *a = &acts->items[i];

		if (a->state == STORE_ACTION_DONE && a->discussion_id &&
		    (a->index == PLAN_IDX_COMMENT ||
		     a->index == PLAN_IDX_NAK_DISCUSSION)) {
			j->reply_discussion = xstrdup(a->discussion_id);
			break;
		}
	}
	return rc == PB_ENOTFOUND ? 0 : rc;
}

/* A diff note, or a reply in a diff thread, the parent put on the forge. */
static int is_diff_action(const struct store_action *a)
{
	return a->state == STORE_ACTION_DONE && a->note_id > 0 &&
	       a->discussion_id && a->kind && a->index >= PLAN_IDX_INLINE(0) &&
	       a->index < PLAN_IDX_APPROVE(0) &&
	       (!strcmp(a->kind, plan_kind_name(PLAN_DIFF_NOTE)) ||
		!strcmp(a->kind, plan_kind_name(PLAN_DIFF_REPLY)));
}

/*
 * The parent mail as the bridge read it, parsed against the patch it
 * answers, when it answered this mail's MR version: NULL with 0 when
 * it did not, or it is no longer archived ([state] archive_keep).
 */
static int parent_review(struct review **out, size_t *k, struct inbound *ib,
			 struct job *j, const char *id,
			 const struct review_options *ro)
{
	struct store_inbound pin;
	struct store_archived a;
	int rc;

	*out = NULL;
	store_inbound_init(&pin);
	store_archived_init(&a);
	rc = store_inbound_get(&pin, ib->st, id);
	if (rc == PB_ENOTFOUND) {
		rc = 0;
		goto out;
	}
	if (rc || !pin.project || strcmp(pin.project, j->row->project) ||
	    pin.iid != j->row->iid || pin.revision != j->row->revision ||
	    pin.patch < 1 || (size_t)pin.patch > j->mc.nr_patches ||
	    !j->mc.patches[pin.patch - 1])
		goto out;
	*k = (size_t)pin.patch - 1;
	rc = store_archive_get(&a, ib->st, id);
	if (rc == PB_ENOTFOUND) {
		log_notice("inbound: <%s>, the mail answered, is no longer "
			   "archived; its inline comments' threads are not "
			   "known, new diff notes instead",
			   id);
		rc = 0;
		goto out;
	}
	if (rc || !a.message)
		goto out;
	rc = review_parse(out, a.message, a.message_len, j->mc.patches[*k], ro);
	if (rc && rc != PB_ETEMP) {
		log_warn("inbound: <%s>, the mail answered, does not parse "
			 "again (%s); new diff notes instead",
			 id, err_msg());
		review_free(*out);
		*out = NULL;
		rc = 0;
	}
out:
	store_archived_release(&a);
	store_inbound_release(&pin);
	return rc;
}

/*
 * The diff threads the parent mail started or answered, at the places the
 * bridge gave them on the MR version this mail answers: an inline comment
 * at one of them goes on in that thread (DESIGN.md, "Inline comments").
 * The journal says which of the parent's inline comments made which diff
 * note (its action index); the parent mail, parsed again, where each one
 * was.  Not the forge's positions: GitLab moves a thread to the newest
 * version on a push (app/services/discussions/
 * update_diff_position_service.rb) and shows only where it is now
 * (lib/api/entities/note.rb), so a thread made on the version this mail
 * answers may name another by then.
 */
static int parent_threads(struct inbound *ib, struct job *j,
			  const struct review_options *ro)
{
	const struct store_action_list *acts = &j->parent_acts;
	char id[STORE_MSGID_MAX + 1];
	size_t i, n = 0, k = 0, saved_k;
	int rc;

	for (i = 0; i < acts->nr; i++)
		n += is_diff_action(&acts->items[i]);
	if (!n || j->reply_to_forge || !j->review->nr_inline ||
	    !j->mc.have_version || !parent_id(id, sizeof(id), j->review->mail))
		return 0;
	rc = parent_review(&j->parent_review, &k, ib, j, id, ro);
	if (rc || !j->parent_review)
		return rc;
	j->threads = xcalloc(n, sizeof(*j->threads));
	saved_k = j->mc.k;
	j->mc.k = k;
	for (i = 0; i < acts->nr; i++) {
		const struct store_action *a = &acts->items[i];
		const struct review_inline *x;
		enum forge_line_kind kind = FORGE_LINE_CONTEXT;
		int64_t old_line = 0, new_line = 0;
		struct forge_position pos;
		struct plan_thread *th;
		size_t at;

		if (!is_diff_action(a))
			continue;
		at = (size_t)(a->index - PLAN_IDX_INLINE(0));
		if (at >= j->parent_review->nr_inline)
			continue;
		x = &j->parent_review->inl[at];
		memset(&pos, 0, sizeof(pos));
		if (!x->path[0] || !(x->old_line || x->new_line) ||
		    cb_place(&kind, &old_line, &new_line, x, &j->mc) != 1 ||
		    forge_position_set_line(&pos, kind, old_line, new_line))
			continue;
		th = &j->threads[j->nr_threads++];
		th->discussion_id = a->discussion_id;
		th->old_path = x->old_path ? x->old_path : x->path;
		th->new_path = x->path;
		th->old_line = pos.old_line;
		th->new_line = pos.new_line;
	}
	j->mc.k = saved_k;
	log_debug("inbound: %zu of the parent's %zu diff note(s) placed on "
		  "this version",
		  j->nr_threads, n);
	return 0;
}

static int has_bridge_header(const struct mail *m)
{
	size_t i;

	for (i = 0; i < m->nr_headers; i++)
		if (!strncasecmp(m->headers[i].name, "X-Patchbridge", 13))
			return 1;
	return 0;
}

/* The bridge's own mail (loop guard, DESIGN.md rule 6)? */
static int is_ours(struct inbound *ib, const struct store_inbound *row)
{
	struct store_mail m;
	int found;

	store_mail_init(&m);
	found = !store_mail_get(&m, ib->st, row->message_id);
	store_mail_release(&m);
	return found;
}

/* Keep what the plan refused and whether it NAKs, for count_applied(). */
static void count_plan(struct job *j, const struct plan *p)
{
	size_t i;

	memcpy(j->refused, p->refused, sizeof(j->refused));
	j->nak = 0;
	for (i = 0; i < p->nr; i++)
		j->nak |= p->v[i].kind == PLAN_NAK_LABEL;
}

/* The metrics of a reply applied: once, when its row is finished. */
static void count_applied(const struct job *j, const char *project)
{
	size_t v;

	metrics_inc1(MET_REPLIES_APPLIED, project);
	for (v = 0; v < APPROVAL__COUNT; v++)
		if (j->refused[v])
			metrics_add1(MET_APPROVALS_REFUSED, j->refused[v],
				     approval_verdict_token(
					     (enum approval_verdict)v));
	if (j->nak)
		metrics_inc1(MET_NAKS, project);
}

/*
 * The MR as it is now, read once before its actions.  A locked discussion
 * (discussion_locked) takes comments from project members only
 * (app/policies/issuable_policy.rb: `rule { locked & ~is_project_member
 * }.prevent :create_note`, answered 403): the maintainers closed the
 * conversation, so the bridge, member or not, posts nothing there.  The
 * mail is finished as ignored with the reason, never dead, so that `why`
 * says it and its sender can be told; it is not posted after an unlock
 * either, when the conversation has moved on.  A merged or closed MR is
 * handed to apply.c in t->mr.  An MR that cannot be read for good (gone,
 * no access) leaves t->mr NULL: the actions meet the forge's answer.
 */
static int read_mr(struct inbound *ib, struct job *j, struct forge_mr *mr,
		   struct apply_target *t)
{
	const struct store_inbound *row = j->row;
	int rc;

	rc = forge_get_mr(mr, ib->forge, row->project, row->iid);
	if (rc == PB_ETEMP)
		return rc;
	if (rc) {
		log_notice("inbound: %s!%lld not read (%s); applying as it "
			   "comes",
			   row->project, (long long)row->iid, err_msg());
		return 0;
	}
	t->mr = mr;
	if (!mr->discussion_locked)
		return 0;
	log_notice("inbound: %s!%lld: the discussion is locked; the reply "
		   "is not posted",
		   row->project, (long long)row->iid);
	return finish(j, STORE_INBOUND_IGNORED, "discussion_locked",
		      "not posted: the merge request's discussion is locked "
		      "(only project members may comment)");
}

/*
 * Actions were refused: was the discussion locked after read_mr() read
 * the MR (or when it could not)?  Then a bridge that is no member met
 * IssuablePolicy's 403, which is the lock, not a dead letter.
 */
static int locked_now(struct inbound *ib, const struct store_inbound *row)
{
	struct forge_mr mr;
	int locked = 0;

	memset(&mr, 0, sizeof(mr));
	if (!forge_get_mr(&mr, ib->forge, row->project, row->iid))
		locked = mr.discussion_locked;
	forge_mr_release(&mr);
	return locked;
}

/*
 * Work out and apply one mail.  Returns 0 with j->state set, PB_ETEMP to
 * retry the mail, or another error from the store.
 */
/* provenance_ops: where the bridge placed a mail - the thread map (its
 * own mails), else the inbound journal (list mails it spooled). */
static int prov_place(struct provenance_place *out, const char *id, void *arg)
{
	struct inbound *ib = arg;
	struct store_mail row;
	struct store_inbound in;
	int rc;

	store_mail_init(&row);
	rc = store_mail_get(&row, ib->st, id);
	if (!rc && row.project) {
		snprintf(out->project, sizeof(out->project), "%s", row.project);
		out->iid = row.iid;
		out->revision = row.revision;
		out->patch = row.patch;
	}
	store_mail_release(&row);
	if (rc != PB_ENOTFOUND)
		return rc;
	store_inbound_init(&in);
	rc = store_inbound_get(&in, ib->st, id);
	if (!rc && in.project) {
		snprintf(out->project, sizeof(out->project), "%s", in.project);
		out->iid = in.iid;
		out->revision = in.revision;
		out->patch = in.patch;
	} else if (!rc) {
		rc = PB_ENOTFOUND;
	}
	store_inbound_release(&in);
	return rc;
}

/* provenance_ops: the archived bytes of a mail of the conversation. */
static int prov_archived(struct buf *raw, const char *id, void *arg)
{
	struct inbound *ib = arg;
	struct store_archived a;
	int rc;

	store_archived_init(&a);
	rc = store_archive_get(&a, ib->st, id);
	if (!rc)
		rc = buf_add(raw, a.message, a.message_len);
	/* larger than read here (the milter keeps less): its beginning */
	if (rc == PB_ELIMIT) {
		buf_clear_error(raw);
		rc = 0;
	}
	store_archived_release(&a);
	return rc;
}

/*
 * Is the review's sender a review bot: one review_bot() knows, or an
 * address of list ([inbound] bots: separated by commas or blanks, ASCII
 * case ignored)?  What says so, or NULL.
 */
static const char *bot_of(const struct review *r, const char *list)
{
	const char *from = r->mail->from.email;
	const char *p = list ? list : "";
	size_t n, flen = from ? strlen(from) : 0;

	if (r->bot)
		return r->bot;
	while (flen && *p) {
		p += strspn(p, ", \t");
		n = strcspn(p, ", \t");
		if (n == flen && !strncasecmp(p, from, n))
			return "named in the configured bots";
		p += n;
	}
	return NULL;
}

/*
 * The headers name more than one MR or revision (provenance.h): the
 * mail is applied where its parent is, and nothing in it is acted on
 * (plan_ctx thread_conflict).  *conflict is set.
 */
static int place_by_parent(struct inbound *ib, struct job *j, int *conflict)
{
	struct store_inbound *row = j->row;
	struct provenance_ops ops = { prov_place, NULL, ib };
	const struct config_project *other;
	struct provenance pv;
	struct review *r = NULL;
	int rc;

	*conflict = 0;
	rc = review_parse(&r, j->rec.message.data, j->rec.message.len, NULL,
			  NULL);
	if (rc) {
		/* the real parse says what is wrong with it */
		review_free(r);
		return rc == PB_ETEMP ? rc : 0;
	}
	rc = provenance_check(&pv, r, &ops);
	review_free(r);
	if (rc)
		return rc;
	if (pv.parent_placed && strcmp(pv.parent.project, row->project) &&
	    pv.parent.iid == row->iid && pv.parent.revision == row->revision &&
	    pv.parent.patch == row->patch &&
	    config_project_get(&other, ib->cfg, row->project)) {
		/* Placed under a name no section has any more: the state
		 * followed a renamed section (detect_project_follow()) after
		 * the mail was spooled.  The same mail, not another MR. */
		row->project = strlist_push(&row->owned, pv.parent.project);
		rc = store_inbound_place(ib->st, row->message_id, row->project,
					 row->iid, row->revision, row->patch);
		if (rc) {
			provenance_release(&pv);
			return rc;
		}
	}
	if (pv.parent_placed && (pv.parent.iid != row->iid ||
				 strcmp(pv.parent.project, row->project)))
		pv.thread_conflict = 1;
	*conflict = pv.thread_conflict;
	if (pv.thread_conflict && pv.parent_placed &&
	    (pv.parent.iid != row->iid ||
	     strcmp(pv.parent.project, row->project) ||
	     pv.parent.revision != row->revision ||
	     pv.parent.patch != row->patch)) {
		log_notice("inbound: the headers name more than one merge "
			   "request or revision; applied where the mail it "
			   "answers is, %s!%lld v%d, with no approval or NAK",
			   pv.parent.project, (long long)pv.parent.iid,
			   pv.parent.revision);
		row->project = strlist_push(&row->owned, pv.parent.project);
		row->iid = pv.parent.iid;
		row->revision = pv.parent.revision;
		row->patch = pv.parent.patch;
		rc = store_inbound_place(ib->st, row->message_id, row->project,
					 row->iid, row->revision, row->patch);
	}
	provenance_release(&pv);
	return rc;
}

/* A series posted to the list: the daemon's to collect (inbound.h). */
static int submission(struct inbound *ib, struct job *j)
{
	char project[CONFIG_PROJECT_MAX + 1];
	int rc;

	/* `replay --apply-now` holds no git: left to the daemon */
	if (!ib->submission)
		return err_set(PB_ETEMP, "a series posted to the list is the "
					 "daemon's to take");
	project[0] = '\0';
	rc = ib->submission(ib->submission_arg, project, sizeof(project),
			    j->rec.message.data, j->rec.message.len);
	if (!rc) {
		j->row->project = strlist_push(&j->row->owned, project);
		return finish(j, STORE_INBOUND_APPLIED, "applied",
			      "collected into its series");
	}
	if (rc == PB_EPERM || rc == PB_EEXISTS)
		return finish(j, STORE_INBOUND_IGNORED, "not_submission", "%s",
			      err_msg());
	if (rc == PB_ELIMIT) /* over a limit of [project] email_* */
		return finish(j, STORE_INBOUND_IGNORED, "submission_limit",
			      "%s", err_msg());
	if (rc == PB_ETEMP)
		return rc;
	return finish(j, STORE_INBOUND_DEAD, "planning",
		      "the series could not be taken: %s", err_msg());
}

static int work(struct inbound *ib, struct job *j)
{
	const struct config *cfg = ib->cfg;
	struct store_inbound *row = j->row;
	struct review_options ro;
	struct apply_target t;
	struct apply_result res;
	struct plan_ctx ctx;
	struct plan plan;
	struct store_revision latest;
	struct provenance pv;
	struct provenance_ops pops = { prov_place, prov_archived, ib };
	struct forge_mr mr;
	void *obj = NULL;
	int rc, ours = 0, enabled, conflict = 0;

	memset(&mr, 0, sizeof(mr));
	plan_init(&plan);
	provenance_init(&pv);
	apply_result_init(&res);
	store_revision_init(&latest);
	memset(&ro, 0, sizeof(ro));
	ro.trusted_authserv_id =
		config_str(cfg, CFG_MILTER_TRUSTED_AUTHSERV_ID);
	if (!ro.trusted_authserv_id[0])
		ro.trusted_authserv_id = NULL;
	ro.trusted_fields =
		(size_t)config_int(cfg, CFG_MILTER_TRUSTED_AUTHRES_FIELDS);

	rc = load_record(ib, j);
	if (rc == PB_ENOTFOUND || rc == PB_EINVAL) {
		rc = finish(j, STORE_INBOUND_DEAD, "unreadable",
			    "spool record %s: %s", row->spool_name, err_msg());
		goto out;
	}
	if (rc)
		goto out;
	if (row->classification && !strcmp(row->classification, "submission")) {
		rc = submission(ib, j);
		goto out;
	}

	if (!row->project) {
		/* The milter could not place it; the thread map may now. */
		struct inbound_target tg;
		struct review *r = NULL;

		rc = review_parse(&r, j->rec.message.data, j->rec.message.len,
				  NULL, &ro);
		if (!rc)
			rc = inbound_locate(&tg, &ours, ib->st, r->mail);
		review_free(r);
		if (rc == PB_ENOTFOUND || rc == PB_EINVAL || rc == PB_ELIMIT ||
		    ours) {
			rc = finish(j, STORE_INBOUND_IGNORED,
				    ours ? "own_mail" : "not_placed", "%s",
				    ours ? "the bridge's own mail" : err_msg());
			goto out;
		}
		if (rc)
			goto out;
		row->project = strlist_push(&row->owned, tg.project);
		row->iid = tg.iid;
		row->revision = tg.revision;
		row->patch = tg.patch;
	}
	rc = place_by_parent(ib, j, &conflict);
	if (rc)
		goto out;
	if (config_project_get(&j->proj, cfg, row->project)) {
		rc = finish(j, STORE_INBOUND_IGNORED, "not_bridged",
			    "project %s is not bridged", row->project);
		goto out;
	}
	enabled = config_project_bool(j->proj, CFG_PROJECT_ENABLED);
	if (!enabled) {
		rc = finish(j, STORE_INBOUND_IGNORED, "disabled",
			    "project %s is disabled", row->project);
		goto out;
	}
	if (row->revision <= 0) {
		rc = store_revision_latest(&latest, ib->st, row->project,
					   row->iid);
		if (rc && rc != PB_ENOTFOUND)
			goto out;
		row->revision = rc ? 0 : latest.revision;
	}
	rc = load_revision(ib, j);
	if (rc)
		goto out;

	/* a post the list wrapped for DMARC: whose verification counts */
	ro.list_authserv_id =
		config_project_str(j->proj, CFG_INBOUND_LIST_AUTHSERV_ID);
	ro.list_address = config_project_str(j->proj, CFG_BRIDGE_LIST_ADDRESS);
	rc = review_parse(&j->review, j->rec.message.data, j->rec.message.len,
			  j->parent, &ro);
	if (rc == PB_ETEMP)
		goto out;
	if (rc) {
		rc = finish(j, STORE_INBOUND_DEAD, "unparsable",
			    "the mail does not parse: %s", err_msg());
		goto out;
	}
	if (j->review->kind != REVIEW_REPLY) {
		rc = finish(j, STORE_INBOUND_IGNORED, "not_a_reply",
			    "not a reply (%s)",
			    review_kind_name(j->review->kind));
		goto out;
	}
	if (has_bridge_header(j->review->mail) || is_ours(ib, row)) {
		rc = finish(j, STORE_INBOUND_IGNORED, "own_mail",
			    "the bridge's own mail");
		goto out;
	}
	/* "unsubscribe notices": a request to the bridge, not a review */
	j->request = notice_optout_request(j->review->comment);
	if (j->request >= 0) {
		rc = finish(j, STORE_INBOUND_IGNORED, "notice_request",
			    "the sender asked %s notices",
			    j->request ? "for no more" : "again for");
		goto out;
	}
	rc = find_thread(ib, j);
	if (!rc)
		rc = loaded_get(&obj, &ib->owners,
				config_project_str(j->proj,
						   CFG_INBOUND_OWNERS_FILE));
	if (!rc) {
		j->mc.owners = obj;
		rc = loaded_get(&obj, &ib->maps,
				config_project_str(j->proj,
						   CFG_INBOUND_USER_MAP));
		j->mc.map = obj;
	}
	if (rc)
		goto out;

	memset(&t, 0, sizeof(t));
	t.message_id = row->message_id;
	t.project = row->project;
	t.iid = row->iid;
	t.revision = row->revision;
	version_shas(j, &t.base_sha, &t.start_sha, &t.head_sha);
	t.reply_discussion = j->reply_discussion;
	t.nak_label = config_project_str(j->proj, CFG_INBOUND_NAK_LABEL);
	j->mc.ib = ib;
	j->mc.have_version = t.base_sha != NULL;
	rc = parent_threads(ib, j, &ro);
	if (rc)
		goto out;

	/* the milter kept only the beginning of a mail over its size */
	if (j->rec.received > (int64_t)j->rec.message.len)
		j->review->truncated = 1;
	memset(&ctx, 0, sizeof(ctx));
	ctx.authserv_id = ro.trusted_authserv_id;
	ctx.message_id = row->message_id;
	ctx.archive_url = config_project_str(j->proj, CFG_INBOUND_ARCHIVE_URL);
	ctx.require_auth =
		config_project_bool(j->proj, CFG_INBOUND_REQUIRE_AUTH);
	ctx.policy = config_project_enum(j->proj, CFG_INBOUND_APPROVAL_POLICY);
	ctx.revision = row->revision;
	ctx.patch = row->patch;
	ctx.total = j->total;
	ctx.parent = j->parent;
	ctx.fold_inline = j->reply_to_forge;
	ctx.threads = j->threads;
	ctx.nr_threads = j->nr_threads;
	/* only text the sender wrote is acted on (provenance.h) */
	rc = provenance_check(&pv, j->review, &pops);
	if (rc)
		goto out;
	ctx.quoted = pv.quoted;
	ctx.bot = bot_of(j->review,
			 config_project_str(j->proj, CFG_INBOUND_BOTS));
	ctx.ancestor_nak = pv.ancestor_nak;
	ctx.parent_unknown = pv.parent_unknown;
	ctx.thread_conflict = conflict || pv.thread_conflict;
	ctx.place = cb_place;
	ctx.map_user = cb_map_user;
	ctx.is_owner = cb_is_owner;
	ctx.arg = &j->mc;
	rc = plan_build(&plan, j->review, &ctx);
	if (rc == PB_ETEMP)
		goto out;
	if (rc) {
		rc = finish(j, STORE_INBOUND_DEAD, "planning", "planning: %s",
			    err_msg());
		goto out;
	}
	if (!plan.nr) {
		rc = finish(j, STORE_INBOUND_IGNORED, "nothing_to_apply",
			    "nothing to apply");
		goto out;
	}
	rc = read_mr(ib, j, &mr, &t);
	if (!rc && mr.web_url) {
		free(j->link);
		j->link = xstrdup(mr.web_url);
	}
	if (rc || j->token) /* an error, or finished: locked */
		goto out;
	/* What became of each trailer, for `patchbridge why`: worth a
	 * line in the log when it cannot be kept, not a retry. */
	if (plan.verdicts.nr &&
	    store_verdicts_set(ib->st, row->message_id, &plan.verdicts))
		log_warn("inbound: trailer verdicts not kept: %s", err_msg());
	rc = apply_plan(&res, ib->forge, ib->st, &plan, &t);
	if (rc)
		goto out;
	log_info("inbound: %s!%lld v%d patch %d: %u action(s) done, %u "
		 "found done, %zu failed",
		 row->project, (long long)row->iid, row->revision, row->patch,
		 res.done, res.skipped, res.failed.nr);
	if (res.failed.nr && locked_now(ib, row))
		rc = finish(j, STORE_INBOUND_IGNORED, "discussion_locked",
			    "not posted: the merge request's discussion is "
			    "locked (only project members may comment); "
			    "%zu action(s) refused: %s",
			    res.failed.nr, res.failed.items[0]);
	else if (res.failed.nr)
		rc = finish(j, STORE_INBOUND_DEAD, "forge_refused",
			    "%zu action(s) failed: %s", res.failed.nr,
			    res.failed.items[0]);
	else {
		count_plan(j, &plan);
		rc = finish(j, STORE_INBOUND_APPLIED, "applied", "%u action(s)",
			    res.done + res.skipped);
	}
	if (!rc && j->state == STORE_INBOUND_APPLIED) {
		notify_plan_reasons(&j->reasons, j->review, &plan);
		notify_apply_reasons(&j->reasons, ib->st, row->message_id,
				     &res);
	}
out:
	forge_mr_release(&mr);
	provenance_release(&pv);
	store_revision_release(&latest);
	plan_release(&plan);
	apply_result_release(&res);
	return rc;
}

static int64_t backoff(const struct inbound *ib, int attempts)
{
	int64_t base = config_duration_ms(ib->cfg, CFG_INBOUND_RETRY_BASE);
	int64_t max = config_duration_ms(ib->cfg, CFG_INBOUND_RETRY_MAX);
	int64_t d = base;
	int i;

	for (i = 1; i < attempts && d < max; i++)
		d *= 2;
	if (d > max)
		d = max;
	return (d + 999) / 1000;
}

/* File the record of a finished row; a missing one is left to ingest
 * (another host's is filed by that host's ingest). */
static void file_record(struct inbound *ib, const struct store_inbound *row,
			enum store_inbound_state state, const char *reason)
{
	int rc;

	if (!spooled_here(ib, row))
		return;
	if (state == STORE_INBOUND_DEAD)
		rc = spool_dead(ib->sp, row->spool_name, reason);
	else
		rc = spool_done(ib->sp, row->spool_name);
	if (rc && rc != PB_ENOTFOUND)
		log_warn("inbound: filing %s: %s", row->spool_name, err_msg());
}

/* What the sender is told of a reply finished unapplied. */
static void final_reasons(struct inbound *ib, struct job *j)
{
	const struct store_inbound *row = j->row;

	if (j->token && !strcmp(j->token, "discussion_locked")) {
		strlist_release(&j->reasons);
		strlist_push(&j->reasons,
			     "The merge request's discussion is locked, so "
			     "your reply was not posted on the forge. Ask a "
			     "maintainer to unlock it, or comment on the "
			     "forge if you are a project member.");
	} else if (j->state == STORE_INBOUND_DEAD) {
		char shown[PB_ERRMSG_MAX];

		strlist_release(&j->reasons);
		printable_copy(shown, sizeof(shown), j->reason,
			       strlen(j->reason));
		strlist_pushf(&j->reasons,
			      "Your reply could not be carried to the forge "
			      "and was set aside for the bridge's operator "
			      "(%s). Nothing of it was posted; the operator "
			      "may apply it again once the cause is fixed.",
			      shown);
	}
	if (!j->link && row->project && row->iid > 0)
		j->link = xasprintf("%s/%s/-/merge_requests/%lld",
				    config_str(ib->cfg, CFG_FORGE_URL),
				    row->project, (long long)row->iid);
}

struct finish_tx {
	struct store_inbound *row;
	struct job *j;
	struct notify_in *n;
};

/* The row's final state and the notice to its sender, at once. */
static int finish_tx(struct store *st, void *arg)
{
	struct finish_tx *f = arg;
	int rc;

	rc = store_inbound_finish(st, f->row->message_id, f->j->state,
				  f->j->reason);
	if (!rc)
		rc = notify_finish(st, f->n);
	return rc;
}

static int finish_row(struct inbound *ib, struct job *j)
{
	struct store_inbound *row = j->row;
	struct notify_in n;
	struct finish_tx f = { row, j, &n };
	int rc;

	final_reasons(ib, j);
	memset(&n, 0, sizeof(n));
	n.cfg = ib->cfg;
	n.proj = j->proj;
	n.message_id = row->message_id;
	n.project = row->project;
	n.iid = row->iid;
	n.revision = row->revision;
	n.patch = row->patch;
	n.review = j->review && j->review->mail ? j->review : NULL;
	n.raw = j->rec.message.data;
	n.raw_len = j->rec.message.len;
	/* The MTA's envelope sender; a replayed file without Return-Path
	 * has none (its "" says unknown, not the null sender). */
	n.envelope_sender =
		j->rec.queue_id && j->rec.queue_id[0] ? j->rec.sender : NULL;
	n.reasons = &j->reasons;
	n.link = j->link;
	n.request = j->request;
	n.render = ib->render_notice;
	n.render_arg = ib->render_arg;
	rc = store_transaction(ib->st, finish_tx, &f);
	j->notice = rc ? NULL : n.decision;
	return rc;
}

static int apply_row(struct inbound *ib, struct store_inbound *row,
		     int64_t sched_now)
{
	int64_t max = config_int(ib->cfg, CFG_INBOUND_MAX_ATTEMPTS);
	char why[PB_ERRMSG_MAX];
	struct log_ctx_saved saved;
	struct job j;
	int rc;

	log_ctx_push(&saved, row->message_id);
	job_init(&j, row);
	rc = work(ib, &j);
	/* Whatever failed (the forge, the store), the mail is tried again:
	 * what is permanent was finished inside work(). */
	if (rc) {
		snprintf(why, sizeof(why), "%s", err_msg());
		if (stopping(ib)) {
			/* The forge client gave up at once instead of
			 * waiting (gitlab.h): not a fair try, so no dead
			 * letter, and the next start tries it first.  An
			 * action whose POST may have landed is in the
			 * journal as failed: that try looks for its marker
			 * before posting. */
			log_notice("inbound: attempt %d cut short by the stop, "
				   "tried again at the next start: %s",
				   row->attempts, why);
			rc = store_inbound_retry(ib->st, row->message_id,
						 sched_now, why);
			if (!rc)
				ib->stats.retried++;
			goto out;
		}
		if (forge_token_problem(ib->forge) != FORGE_TOKEN_OK) {
			/* The forge refuses the token itself (expired or
			 * revoked, lib/api/api_guard.rb; unknown, lib/api/
			 * helpers.rb): the operator's to fix, no fault of
			 * the mail.  It waits, uncounted,
			 * and is tried again every retry_base, which is
			 * when the daemon looks for a new token. */
			int64_t next = sched_now + backoff(ib, 1);

			log_notice("inbound: waits for a working forge token "
				   "(not counted as an attempt): %s",
				   why);
			rc = store_inbound_wait(ib->st, row->message_id, next,
						why);
			if (!rc)
				ib->stats.retried++;
			goto out;
		}
		if (row->attempts >= max) {
			finish(&j, STORE_INBOUND_DEAD, "gave_up",
			       "gave up after %d attempts: %s", row->attempts,
			       why);
		} else {
			int64_t next = sched_now + backoff(ib, row->attempts);

			log_notice("inbound: attempt %d failed, retrying in "
				   "%lld s: %s",
				   row->attempts, (long long)(next - sched_now),
				   why);
			rc = store_inbound_retry(ib->st, row->message_id, next,
						 why);
			if (!rc) {
				ib->stats.retried++;
				metrics_inc1(MET_REPLIES_RETRIED, row->project);
			}
			goto out;
		}
	}
	rc = finish_row(ib, &j);
	if (rc)
		goto out;
	if (j.notice)
		metrics_inc1(MET_NOTICES, j.notice);
	switch (j.state) {
	case STORE_INBOUND_APPLIED:
		ib->stats.applied++;
		count_applied(&j, row->project);
		log_info("inbound: applied (%s)", j.reason);
		break;
	case STORE_INBOUND_IGNORED:
		ib->stats.ignored++;
		metrics_inc1(MET_REPLIES_IGNORED, j.token);
		log_info("inbound: ignored: %s", j.reason);
		break;
	default:
		ib->stats.dead++;
		metrics_inc1(MET_REPLIES_DEAD, j.token);
		log_error("inbound: dead letter: %s", j.reason);
		break;
	}
	file_record(ib, row, j.state, j.reason);
out:
	if (rc == PB_EEXISTS) {
		/* This host was too slow: its claim expired and another
		 * host took the mail over (store.h).  Leave it to that
		 * host; the forge action journal keeps the actions once. */
		log_notice("inbound: taken over: %s", err_msg());
		ib->stats.taken_over++;
		rc = 0;
	}
	job_release(&j);
	log_ctx_pop(&saved);
	return rc;
}

int inbound_apply_due(struct inbound *ib, int64_t now)
{
	int64_t claim_now = now;
	struct store_inbound row;
	int rc;

	/* Rows failing again in this pass are scheduled after claim_now,
	 * so a pass never claims a row twice. */
	if (ib->retry_now)
		claim_now = now +
			    config_duration_ms(ib->cfg, CFG_INBOUND_RETRY_MAX) /
				    1000;
	store_inbound_init(&row);
	for (;;) {
		if (stopping(ib)) {
			rc = 0;
			break;
		}
		rc = store_inbound_claim(&row, ib->st, claim_now);
		if (rc == PB_ENOTFOUND) {
			rc = 0;
			break;
		}
		if (rc)
			break;
		rc = apply_row(ib, &row, claim_now);
		if (rc)
			break;
		/* Every other mail would meet the same refused token. */
		if (forge_token_problem(ib->forge) != FORGE_TOKEN_OK)
			break;
	}
	store_inbound_release(&row);
	return rc;
}

/*
 * The archive (schema 4) is filled as mail is journaled; records
 * journaled before it existed are archived from the spool once, before
 * done/ is first pruned, so that an upgrade loses no list mail: every
 * record of cur/, done/ and dead/ about an MR.  A cursor remembers that
 * it was done.
 */
#define BACKFILL_CURSOR "archive:spool-backfilled"

struct backfill {
	struct inbound *ib;
	enum spool_area area;
	size_t archived;
};

static int backfill_one(const char *name, const struct spool_record *hdr,
			int err, void *arg)
{
	struct backfill *b = arg;
	struct spool_record rec;
	struct store_archived a;
	char *id;
	int rc;

	/* A corrupt record has nothing to archive; one that cannot be read
	 * now stops the pass, so done/ is not pruned before it is kept. */
	if (!hdr)
		return err == PB_EINVAL ? 0 : err;
	if (!hdr->project[0] || hdr->iid <= 0)
		return 0;
	spool_record_init(&rec);
	rc = spool_load(&rec, b->ib->sp, b->area, name);
	if (rc) {
		spool_record_release(&rec);
		return rc == PB_ENOTFOUND || rc == PB_EINVAL ? 0 : rc;
	}
	id = inbound_message_id(rec.message_id, rec.message.data,
				rec.message.len);
	store_archived_init(&a);
	a.message_id = id;
	a.project = rec.project;
	a.iid = rec.iid;
	a.origin = STORE_ARCHIVE_LIST;
	a.message = rec.message.data;
	a.message_len = rec.message.len;
	a.created = rec.time;
	rc = rec.message.len ? store_archive_put(b->ib->st, &a) : PB_EINVAL;
	if (!rc)
		b->archived++;
	else if (rc == PB_EEXISTS || rc == PB_EINVAL)
		rc = 0;
	free(id);
	spool_record_release(&rec);
	return rc;
}

static int backfill_archive(struct inbound *ib)
{
	static const enum spool_area areas[] = { SPOOL_CUR, SPOOL_DONE,
						 SPOOL_DEAD };
	struct buf cur = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	struct backfill b;
	size_t i;
	int rc;

	rc = store_cursor_get(&cur, ib->st, BACKFILL_CURSOR);
	buf_release(&cur);
	if (rc != PB_ENOTFOUND)
		return rc;
	memset(&b, 0, sizeof(b));
	b.ib = ib;
	for (i = 0, rc = 0; !rc && i < sizeof(areas) / sizeof(areas[0]); i++) {
		b.area = areas[i];
		rc = spool_each_header(ib->sp, areas[i], backfill_one, &b);
	}
	if (!rc)
		rc = store_cursor_set(ib->st, BACKFILL_CURSOR, "1");
	if (rc)
		log_warn("inbound: archiving the spool's older mail: %s; "
			 "done/ is not pruned until it works",
			 err_msg());
	else if (b.archived)
		log_notice("inbound: archived %zu list mail%s from the spool "
			   "that predate the archive",
			   b.archived, b.archived == 1 ? "" : "s");
	return rc;
}

/* [state] archive_keep: drop archived mail older than that (0: keep). */
static void prune_archive(struct inbound *ib, int64_t now)
{
	int64_t keep =
		config_duration_ms(ib->cfg, CFG_STATE_ARCHIVE_KEEP) / 1000;
	int64_t removed = 0;

	if (!keep)
		return;
	if (store_archive_prune(&removed, ib->st, now - keep))
		log_warn("inbound: pruning the mail archive: %s", err_msg());
	else if (removed)
		log_info("inbound: removed %lld archived mail%s older than "
			 "%lld s",
			 (long long)removed, removed == 1 ? "" : "s",
			 (long long)keep);
}

/* Records older than the [spool] parameter id from area (0: keep). */
static void prune_area(struct inbound *ib, enum spool_area area,
		       enum config_id id, const char *what, int64_t now)
{
	int64_t keep = config_duration_ms(ib->cfg, id) / 1000;
	size_t removed = 0;

	if (!keep)
		return;
	if (spool_prune(&removed, ib->sp, area, keep, now))
		log_warn("inbound: pruning the spool's %s/: %s",
			 spool_area_name(area), err_msg());
	else if (removed)
		log_info("inbound: removed %zu %s record%s older than %lld s "
			 "from the spool's %s/",
			 removed, what, removed == 1 ? "" : "s",
			 (long long)keep, spool_area_name(area));
}

/*
 * Remove applied records older than [spool] keep_done from done/, and
 * records that could not be applied older than [spool] keep_dead from
 * dead/, at most once an hour: the journal and the mail archive keep
 * what they said.  Archived mail older than [state] archive_keep goes at
 * the same time.
 */
static void prune(struct inbound *ib, int64_t now)
{
	if (!ib->backfilled) {
		if (now < ib->next_prune)
			return;
		if (backfill_archive(ib)) {
			ib->next_prune = now + 3600; /* try again then */
			return;
		}
		ib->backfilled = 1;
	}
	if (now < ib->next_prune)
		return;
	ib->next_prune = now + 3600;
	prune_archive(ib, now);
	prune_area(ib, SPOOL_DONE, CFG_SPOOL_KEEP_DONE, "applied", now);
	prune_area(ib, SPOOL_DEAD, CFG_SPOOL_KEEP_DEAD, "dead", now);
}

int inbound_run_once(struct inbound *ib, int64_t now)
{
	int rc = inbound_ingest_spool(ib, now);

	if (!rc)
		rc = inbound_apply_due(ib, now);
	if (!rc)
		prune(ib, now);
	return rc;
}

int inbound_next_due(int64_t *out, struct inbound *ib)
{
	struct store_inbound_list l;
	size_t i;
	int rc;

	*out = 0;
	memset(&l, 0, sizeof(l));
	rc = store_inbound_list(&l, ib->st, STORE_INBOUND_FAILED, 0);
	for (i = 0; !rc && i < l.nr; i++)
		if (!*out || l.items[i].next_attempt < *out)
			*out = l.items[i].next_attempt;
	store_inbound_list_release(&l);
	return rc == PB_ENOTFOUND ? 0 : rc;
}
