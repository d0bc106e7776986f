/*
 * `patchbridge status`: what the daemon has done and what waits, read
 * from the state database (opened read-only, so it works next to a
 * running daemon and needs no forge token).
 */
#include "cmd/cmd_daemon.h"
#include "cmd/env.h"

#include "core/config.h"
#include "core/health.h"
#include "core/metrics.h"
#include "core/preflight.h"
#include "inbound/inbound.h"
#include "outbound/detect.h"
#include "outbound/forgemail.h"
#include "state/spool.h"
#include "state/store.h"
#include "state/storeconf.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

/* Dead letters without a journal row listed at most; the rest counted. */
#define STATUS_DEAD_SHOWN 20
/* Open inbound replies listed at most per section; the rest counted. */
#define STATUS_ROWS_SHOWN 20

static void show_cursor(struct store *st, const char *prefix,
			const char *project, const char *label)
{
	char name[STORE_CURSOR_NAME_MAX + 1];
	char p[PB_LOG_QUOTE_MAX * 4];
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);

	snprintf(name, sizeof(name), "%s%s", prefix, project);
	if (!store_cursor_get(&v, st, name) && v.len)
		printf("  %s: %s\n", label,
		       printable_copy(p, sizeof(p), v.data, v.len));
	else if (!strcmp(prefix, DETECT_TIME_PREFIX))
		printf("  %s: never\n", label);
	buf_release(&v);
}

/* A project renamed or moved since it was configured (detect.h). */
static void show_moved(struct store *st, const char *project)
{
	char name[STORE_CURSOR_NAME_MAX + 1];
	char text[5 * STORE_CURSOR_VALUE_MAX], p[STORE_CURSOR_VALUE_MAX];
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);

	snprintf(name, sizeof(name), "%s%s", DETECT_MOVED_PREFIX, project);
	if (!store_cursor_get(&v, st, name) && v.len) {
		detect_moved_text(text, sizeof(text), project,
				  printable_copy(p, sizeof(p), v.data, v.len));
		printf("  needs the operator: %s (until then the bridge "
		       "reaches it by its id)\n",
		       text);
	}
	buf_release(&v);
}

/* Forge comments kept on the forge (internal): "COUNT IID:NOTE". */
static void show_kept(struct store *st, const char *project)
{
	char name[STORE_CURSOR_NAME_MAX + 1];
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	uint64_t count, iid, note;
	struct scan sc;

	snprintf(name, sizeof(name), "%s%s", FORGEMAIL_KEPT_PREFIX, project);
	if (store_cursor_get(&v, st, name) || !v.len)
		goto out;
	scan_init(&sc, v.data, v.len);
	if (scan_u64(&sc, INT64_MAX, &count) && scan_char(&sc, ' ') &&
	    scan_u64(&sc, INT64_MAX, &iid) && scan_char(&sc, ':') &&
	    scan_u64(&sc, INT64_MAX, &note))
		printf("  forge comments kept on the forge as internal: %llu "
		       "(the last: !%llu note %llu)\n",
		       (unsigned long long)count, (unsigned long long)iid,
		       (unsigned long long)note);
out:
	buf_release(&v);
}

/* A forge problem only an operator can fix ("EPOCH TEXT"). */
static void show_forge_problem(struct store *st)
{
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	char t[64], text[STORE_CURSOR_VALUE_MAX];
	uint64_t at = 0;
	size_t n;

	if (!store_cursor_get(&v, st, STORE_CURSOR_FORGE_TOKEN) && v.len) {
		n = strcspn(v.data, " ");
		if (!mem_to_u64(v.data, n, INT64_MAX, &at))
			at = 0;
		env_time(t, sizeof(t), (int64_t)at);
		printf("forge: needs the operator (since %s): %s\n", t,
		       printable_copy(text, sizeof(text),
				      v.data + n + (v.data[n] ? 1 : 0),
				      strlen(v.data + n + (v.data[n] ? 1 : 0))));
	}
	buf_reset(&v);
	if (!store_cursor_get(&v, st, STORE_CURSOR_FORGE_PROBLEM) && v.len) {
		n = strcspn(v.data, " ");
		if (!mem_to_u64(v.data, n, INT64_MAX, &at))
			at = 0;
		env_time(t, sizeof(t), (int64_t)at);
		printf("forge: needs the operator (since %s): %s; approvals by "
		       "mail wait for it (patchbridge check-config --forge "
		       "tells what the token may do)\n",
		       t,
		       printable_copy(text, sizeof(text),
				      v.data + n + (v.data[n] ? 1 : 0),
				      strlen(v.data + n + (v.data[n] ? 1 : 0))));
	}
	buf_release(&v);
}

/*
 * Inbound replies from the journal: exact counts per (project, state),
 * and the rows of the states that still need something (oldest first, up
 * to the store's list cap each), to list some of them one per line.
 */
struct inbound_rows {
	struct store_inbound_count_list counts;
	struct store_inbound_list l[STORE_INBOUND_DEAD + 1]; /* open only */
};

/* The states listed one row per line: those that still need something. */
static const enum store_inbound_state open_states[] = { STORE_INBOUND_RECEIVED,
							STORE_INBOUND_APPLYING,
							STORE_INBOUND_FAILED,
							STORE_INBOUND_DEAD };

#define NR(a) (sizeof(a) / sizeof((a)[0]))

static int rows_load(struct inbound_rows *r, struct store *st)
{
	size_t k;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = store_inbound_count(&r->counts, st);
	for (k = 0; !rc && k < NR(open_states); k++)
		rc = store_inbound_list(&r->l[open_states[k]], st,
					open_states[k], 0);
	return rc;
}

static void rows_release(struct inbound_rows *r)
{
	size_t k;

	store_inbound_count_list_release(&r->counts);
	for (k = 0; k < NR(r->l); k++)
		store_inbound_list_release(&r->l[k]);
}

/*
 * Is a row of row_project (NULL: none) in project's section, or, for
 * project NULL, in the section of no configured project?
 */
static int in_section(const char *row_project, const char *project,
		      const struct config *cfg)
{
	const struct config_project *p;

	if (project)
		return row_project && !strcmp(row_project, project);
	return !row_project || config_project_get(&p, cfg, row_project);
}

/* The rows in state of a section (project NULL: no configured one). */
static int64_t rows_count(const struct inbound_rows *r,
			  enum store_inbound_state state, const char *project,
			  const struct config *cfg)
{
	const struct store_inbound_count_list *c = &r->counts;
	int64_t n = 0;
	size_t i;

	for (i = 0; i < c->nr; i++)
		if (c->items[i].state == state &&
		    in_section(c->items[i].project, project, cfg))
			n += c->items[i].count;
	return n;
}

/* Every row in state, of all projects. */
static int64_t rows_total(const struct inbound_rows *r,
			  enum store_inbound_state state)
{
	int64_t n = 0;
	size_t i;

	for (i = 0; i < r->counts.nr; i++)
		if (r->counts.items[i].state == state)
			n += r->counts.items[i].count;
	return n;
}

static void show_row(const struct store_inbound *in, const char *indent)
{
	char id[PB_LOG_QUOTE_MAX], why[PB_LOG_QUOTE_MAX * 2], at[32];
	char p[PB_LOG_QUOTE_MAX];

	env_time(at, sizeof(at), in->next_attempt);
	printf("%s<%s> %s", indent,
	       printable_copy(id, sizeof(id), in->message_id,
			      strlen(in->message_id)),
	       store_inbound_state_name(in->state));
	if (in->project)
		printf(" %s!%lld v%d patch %d",
		       printable_copy(p, sizeof(p), in->project,
				      strlen(in->project)),
		       (long long)in->iid, in->revision, in->patch);
	printf(", %d attempt(s)", in->attempts);
	if (in->state == STORE_INBOUND_FAILED)
		printf(", next %s", at);
	if (in->last_error)
		printf(": %s", printable_copy(why, sizeof(why), in->last_error,
					      strlen(in->last_error)));
	printf("\n");
}

/*
 * The rows still open (waiting, retrying, dead) of project, or of none:
 * the first STATUS_ROWS_SHOWN, then how many more the journal holds.
 */
static void show_open_rows(const struct inbound_rows *r, const char *project,
			   const struct config *cfg, const char *indent)
{
	int64_t open = 0, shown = 0;
	size_t i, k;

	for (k = 0; k < NR(open_states); k++) {
		const struct store_inbound_list *l = &r->l[open_states[k]];

		open += rows_count(r, open_states[k], project, cfg);
		for (i = 0; i < l->nr && shown < STATUS_ROWS_SHOWN; i++)
			if (in_section(l->items[i].project, project, cfg)) {
				show_row(&l->items[i], indent);
				shown++;
			}
	}
	if (open > shown)
		printf("%s... and %lld more\n", indent,
		       (long long)(open - shown));
}

/* One project's inbound replies: the counts, then each open one. */
static void show_project_inbound(const struct inbound_rows *r,
				 const char *project, const struct config *cfg)
{
	printf("  inbound: %lld applied, %lld ignored, %lld waiting, %lld "
	       "retrying, %lld dead\n",
	       (long long)rows_count(r, STORE_INBOUND_APPLIED, project, cfg),
	       (long long)rows_count(r, STORE_INBOUND_IGNORED, project, cfg),
	       (long long)(rows_count(r, STORE_INBOUND_RECEIVED, project, cfg) +
			   rows_count(r, STORE_INBOUND_APPLYING, project, cfg)),
	       (long long)rows_count(r, STORE_INBOUND_FAILED, project, cfg),
	       (long long)rows_count(r, STORE_INBOUND_DEAD, project, cfg));
	show_open_rows(r, project, cfg, "    ");
}

/*
 * Inbound totals, then each open reply no configured project claims (the
 * milter could not place it, or its project has gone from the file).
 */
static void show_inbound(const struct inbound_rows *r, const struct config *cfg)
{
	printf("inbound replies: %lld applied, %lld ignored\n",
	       (long long)rows_total(r, STORE_INBOUND_APPLIED),
	       (long long)rows_total(r, STORE_INBOUND_IGNORED));
	show_open_rows(r, NULL, cfg, "  ");
}

/*
 * The spool: what waits in new/ and cur/ per project (by the project in
 * each record's header), and the dead letters that have no journal row:
 * records the daemon could not read, whose reason only the spool holds.
 */
struct depth {
	const struct config *cfg;
	struct store *st;
	struct spool *sp;
	enum spool_area area; /* being walked */
	size_t (*per)[2]; /* per configured project: new/, cur/ */
	size_t other[2]; /* no project, or one not configured */
	/* Records whose header does not parse / cannot be read, and the
	 * first one's error. */
	size_t corrupt[2], unreadable[2];
	char corrupt_err[2][PB_ERRMSG_MAX], unreadable_err[2][PB_ERRMSG_MAX];
	size_t dead_unread, dead_shown;
};

static int depth_one(const char *name, const struct spool_record *hdr, int err,
		     void *arg)
{
	struct depth *d = arg;
	int a = d->area == SPOOL_CUR;
	size_t i;

	(void)name;
	if (!hdr) {
		size_t *n = err == PB_EINVAL ? &d->corrupt[a] :
					       &d->unreadable[a];
		char *e = err == PB_EINVAL ? d->corrupt_err[a] :
					     d->unreadable_err[a];

		if (!(*n)++)
			printable_copy(e, PB_ERRMSG_MAX, err_msg(),
				       strlen(err_msg()));
		return 0;
	}
	for (i = 0; hdr->project[0] && i < config_project_count(d->cfg); i++) {
		const char *p =
			config_project_name(config_project_at(d->cfg, i));

		if (!strcmp(p, hdr->project)) {
			d->per[i][a]++;
			return 0;
		}
	}
	d->other[a]++;
	return 0;
}

/* A dead letter without a journal row: show it with its reason. */
static int dead_one(const char *name, const struct spool_record *hdr, int err,
		    void *arg)
{
	struct depth *d = arg;
	struct buf reason = BUF_INIT(PB_ERRMSG_MAX * 2);
	struct store_inbound row;
	char id[PB_LOG_QUOTE_MAX], why[PB_ERRMSG_MAX];
	const char *r, *end;
	char *key = NULL;
	int rc;

	(void)err; /* its reason file says more than why it cannot be read */
	if (hdr && hdr->message_id[0]) {
		key = inbound_message_id(hdr->message_id, NULL, 0);
		store_inbound_init(&row);
		rc = store_inbound_get(&row, d->st, key);
		store_inbound_release(&row);
		free(key);
		if (!rc)
			return 0; /* told with its row */
		if (rc != PB_ENOTFOUND)
			return rc;
	}
	d->dead_unread++;
	if (d->dead_shown >= STATUS_DEAD_SHOWN)
		return 0;
	if (!d->dead_shown++)
		printf("  dead letters the daemon could not read:\n");
	if (spool_dead_reason(&reason, d->sp, name)) {
		buf_reset(&reason);
		buf_addf(&reason, "Reason: (no reason file: %s)\n", err_msg());
	}
	/* The file is "Dead-Time: ...\nReason: ...\n". */
	r = strstr(reason.data, "Reason: ");
	r = r ? r + 8 : reason.data;
	end = strchr(r, '\n');
	printf("    dead/%s", name);
	if (hdr && hdr->message_id[0])
		printf(" <%s>", printable_copy(id, sizeof(id), hdr->message_id,
					       strlen(hdr->message_id)));
	printf(": %s\n", printable_copy(why, sizeof(why), r,
					end ? (size_t)(end - r) : strlen(r)));
	buf_release(&reason);
	return 0;
}

static int show_spool_totals(struct depth *d, const char *dir)
{
	static const enum spool_area areas[] = { SPOOL_NEW, SPOOL_CUR,
						 SPOOL_DONE, SPOOL_DEAD };
	size_t n[NR(areas)], k;
	int rc = 0;

	for (k = 0; !rc && k < NR(areas); k++)
		rc = spool_count(&n[k], d->sp, areas[k]);
	if (rc)
		return rc;
	printf("spool %s: %zu in new/, %zu in cur/, %zu in done/, %zu dead\n",
	       dir, n[0], n[1], n[2], n[3]);
	for (k = 0; k < 2; k++) {
		if (d->unreadable[k])
			printf("  %zu record%s in %s/ could not be read: %s\n",
			       d->unreadable[k],
			       d->unreadable[k] == 1 ? "" : "s",
			       spool_area_name(areas[k]), d->unreadable_err[k]);
		if (d->corrupt[k])
			printf("  %zu record%s in %s/ %s corrupt: %s\n",
			       d->corrupt[k], d->corrupt[k] == 1 ? "" : "s",
			       spool_area_name(areas[k]),
			       d->corrupt[k] == 1 ? "is" : "are",
			       d->corrupt_err[k]);
	}
	if (d->other[0] + d->other[1])
		printf("  %zu waiting for no configured project (%zu in new/, "
		       "%zu in cur/)\n",
		       d->other[0] + d->other[1], d->other[0], d->other[1]);
	if (!n[3])
		return 0;
	rc = spool_each_header(d->sp, SPOOL_DEAD, dead_one, d);
	if (rc)
		return rc;
	if (d->dead_unread > d->dead_shown)
		printf("    ... and %zu more\n",
		       d->dead_unread - d->dead_shown);
	return 0;
}

/* The MRs and revisions of project, one line per MR (its latest). */
/*
 * Every host's part, on a shared state (or when the state has seen more
 * than one host): what it journaled from its spool, applied, holds now
 * and handed to its MTA.  The spool above is this host's own.
 */
static const char *pr_host(char *out, size_t size, const char *host)
{
	return printable_copy(out, size, host, strlen(host));
}

/*
 * What stops the daemon among the files it opens (a lock or a record
 * left by a run as root ...), in check-config's words: a spool that
 * only shows "1 waiting" would hide it.
 */
static void show_daemon_files(const struct config *cfg)
{
	struct preflight pf;
	size_t i;

	preflight_init(&pf);
	preflight_start(&pf, cfg, PREFLIGHT_START_FILES);
	strlist_for_each (&pf.problems, i)
		printf("stops the daemon: %s\n", pf.problems.items[i]);
	preflight_release(&pf);
}

/*
 * Whether the milter sees the list's mail, by the rule of /readyz
 * (health_milter_blind()): the store's last mail sent, the milter's file
 * in the spool (opened as the daemon's status server opens it).
 */
static int show_milter(struct store *st, const struct config *cfg)
{
	const char *dir = config_str(cfg, CFG_SPOOL_DIR);
	struct buf text = BUF_INIT(METRICS_MILTER_FILE_MAX);
	char why[PB_ERRMSG_MAX];
	char *path = xasprintf("%s/%s", dir, METRICS_MILTER_FILE);
	int64_t sent = 0, seen = 0;
	struct stat sb;
	int fd, rc;

	/* The milter writes its file only with [metrics] enabled. */
	if (!config_bool(cfg, CFG_METRICS_ENABLED)) {
		printf("milter: not checked: with [metrics] enabled = no the "
		       "milter writes no counters to tell by\n");
		rc = 0;
		goto out;
	}
	rc = store_mail_last_sent(&sent, st);
	if (rc)
		goto out;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		if (!fstat(fd, &sb) && S_ISREG(sb.st_mode) &&
		    !fd_read_all(&text, fd))
			seen = health_milter_last_seen(text.data, text.len);
		close(fd);
	}
	health_milter_blind(why, sizeof(why), (int64_t)time(NULL), sent, seen);
	printf("milter: %s\n", why);
out:
	free(path);
	buf_release(&text);
	return rc;
}

static int show_hosts(struct store *st)
{
	struct store_host_list l = { 0 };
	char h[PB_LOG_QUOTE_MAX], t[32];
	size_t i;
	int rc;

	rc = store_hosts(&l, st);
	if (rc || (store_backend(st) != STORE_BACKEND_POSTGRESQL && l.nr < 2))
		goto out;
	printf("hosts (this one is %s):\n",
	       pr_host(h, sizeof(h), store_host(st)));
	if (!l.nr)
		printf("  none has journaled, applied or sent anything yet\n");
	for (i = 0; i < l.nr; i++) {
		const struct store_host *x = &l.items[i];

		printf("  %s%s: %lld journaled, %lld applied",
		       pr_host(h, sizeof(h), x->host),
		       strcmp(x->host, store_host(st)) ? "" : " (this host)",
		       (long long)x->journaled, (long long)x->applied);
		if (x->applying)
			printf(", %lld applying", (long long)x->applying);
		printf(", %lld mail%s handed to its MTA", (long long)x->sent,
		       x->sent == 1 ? "" : "s");
		if (x->sending)
			printf(", %lld being sent", (long long)x->sending);
		if (x->lease_until) {
			env_time(t, sizeof(t), x->lease_until);
			printf("; claims held to %s", t);
		}
		env_time(t, sizeof(t), x->last_active);
		printf("; last active %s\n", t);
	}
out:
	store_host_list_release(&l);
	return rc;
}

static int show_revisions(struct store *st, const char *project)
{
	struct store_revision_list l = { 0 };
	size_t i, mrs = 0;
	char t[32];
	int rc;

	rc = store_revision_list(&l, st, project, 0);
	if (rc)
		return rc;
	for (i = 0; i < l.nr; i++)
		if (i + 1 == l.nr || l.items[i + 1].iid != l.items[i].iid)
			mrs++;
	printf("  mailed: %zu merge request%s, %zu revision%s\n", mrs,
	       mrs == 1 ? "" : "s", l.nr, l.nr == 1 ? "" : "s");
	for (i = 0; i < l.nr; i++) {
		const struct store_revision *r = &l.items[i];

		if (i + 1 < l.nr && l.items[i + 1].iid == r->iid)
			continue;
		env_time(t, sizeof(t),
			 r->state == STORE_REVISION_SENT ? r->sent :
							   r->created);
		printf("    !%lld v%d %s %s, %d patch%s, head %.12s\n",
		       (long long)r->iid, r->revision,
		       r->state == STORE_REVISION_SENT ? "sent" :
							 "sending since",
		       t, r->patches, r->patches == 1 ? "" : "es",
		       r->head_sha ? r->head_sha : "?");
	}
	store_revision_list_release(&l);
	return 0;
}

/* Queued mails (of project, or of every project when NULL). */
static int show_queue(struct store *st, const char *project,
		      const struct config *cfg, size_t *failed)
{
	struct store_outmail_list l = { 0 };
	const struct config_project *p;
	char t[32], e[PB_ERRMSG_MAX];
	size_t i, shown = 0;
	int rc;

	rc = store_outmail_list(&l, st, project, 0, 0);
	if (rc)
		return rc;
	for (i = 0; i < l.nr; i++) {
		const struct store_outmail *m = &l.items[i];

		/* Without a project: only those no section covers. */
		if (!project && !config_project_get(&p, cfg, m->project))
			continue;
		if (!shown++)
			printf("%s", project ? "  queue:\n" :
					       "not configured any more:\n");
		printf("    %s!%lld v%d mail %d: %s", project ? "" : m->project,
		       (long long)m->iid, m->revision, m->patch,
		       store_outmail_state_name(m->state));
		if (m->attempts)
			printf(", %d attempt%s", m->attempts,
			       m->attempts == 1 ? "" : "s");
		if (m->state == STORE_OUTMAIL_DEFERRED) {
			env_time(t, sizeof(t), m->next_attempt);
			printf(", next %s", t);
		}
		if (m->handed) {
			env_time(t, sizeof(t), m->handed);
			printf(", handed to the MTA at %s, outcome unknown", t);
		}
		if (m->state == STORE_OUTMAIL_FAILED)
			(*failed)++;
		if (m->last_error)
			printf(": %s",
			       printable_copy(e, sizeof(e), m->last_error,
					      strlen(m->last_error)));
		printf("\n      <%s>\n", m->message_id);
	}
	if (project && !shown)
		printf("  queue: empty\n");
	store_outmail_list_release(&l);
	return 0;
}

int cmd_status(const char *config_path, int argc, char **argv)
{
	struct inbound_rows rows;
	struct config *cfg = NULL;
	struct store *st = NULL;
	struct depth d;
	size_t i, failed = 0;
	char spool_err[PB_ERRMSG_MAX];
	const char *dir;
	int rc, spool_rc = 0, snapshot = 0;

	memset(&rows, 0, sizeof(rows));
	memset(&d, 0, sizeof(d));
	if (argc > 1) {
		fprintf(stderr, "patchbridge status: unknown argument: %s\n",
			argv[1]);
		return EX_USAGE;
	}
	rc = env_load_config(&cfg, config_path, 0);
	if (rc)
		return rc;
	rc = storeconf_open(&st, cfg, STORE_RO);
	if (rc == PB_ENOTFOUND) {
		char where[STORECONF_WHERE_MAX];

		printf("no state database yet (%s): the daemon has not "
		       "run\n",
		       storeconf_where(where, sizeof(where), cfg));
		rc = EX_OK;
		goto out;
	}
	/* One snapshot for every count and list below, as `why` and
	 * `export` read: the daemon may be writing meanwhile. */
	if (!rc && !(rc = store_begin(st)))
		snapshot = 1;
	if (rc) {
		fprintf(stderr, "patchbridge status: %s\n", err_msg());
		env_perm_hint(rc, "patchbridge status",
			      config_str(cfg, CFG_STATE_PATH));
		rc = env_exit_code(rc);
		goto out;
	}
	d.cfg = cfg;
	d.st = st;
	d.per = xcalloc(config_project_count(cfg) + 1, sizeof(*d.per));
	/* The spool is looked at, never changed; when it cannot be read the
	 * rest is still worth showing. */
	dir = config_str(cfg, CFG_SPOOL_DIR);
	spool_rc = spool_open(&d.sp, dir, SPOOL_INSPECT);
	for (d.area = SPOOL_NEW; !spool_rc && d.area <= SPOOL_CUR; d.area++)
		spool_rc = spool_each_header(d.sp, d.area, depth_one, &d);
	if (spool_rc)
		snprintf(spool_err, sizeof(spool_err), "%s%s", err_msg(),
			 spool_rc == PB_ENOTFOUND ?
				 " (the milter and the daemon create it)" :
				 "");
	rc = rows_load(&rows, st);
	if (!rc)
		show_forge_problem(st);
	for (i = 0; !rc && i < config_project_count(cfg); i++) {
		const struct config_project *p = config_project_at(cfg, i);
		const char *name = config_project_name(p);

		printf("%s%s\n", name,
		       config_project_bool(p, CFG_PROJECT_ENABLED) ?
			       "" :
			       " (disabled)");
		show_moved(st, name);
		show_cursor(st, DETECT_TIME_PREFIX, name, "last poll");
		show_cursor(st, DETECT_CURSOR_PREFIX, name, "watermark");
		show_cursor(st, DETECT_ERROR_PREFIX, name, "last poll failed");
		show_cursor(st, DETECT_HOOKS_PREFIX, name, "webhook");
		show_cursor(st, DETECT_FOLLOW_PREFIX, name,
			    "needs the operator");
		show_cursor(st, STORE_CURSOR_APPROVAL_REAUTH_PREFIX, name,
			    "problem");
		if ((rc = show_revisions(st, name)) ||
		    (rc = show_queue(st, name, cfg, &failed)))
			break;
		if (!spool_rc)
			printf("  spool: %zu waiting (%zu in new/, %zu in "
			       "cur/)\n",
			       d.per[i][0] + d.per[i][1], d.per[i][0],
			       d.per[i][1]);
		show_project_inbound(&rows, name, cfg);
		show_kept(st, name);
	}
	if (!rc)
		rc = show_queue(st, NULL, cfg, &failed);
	/* The spool as a whole, and its dead letters without a reply row. */
	if (!rc && spool_rc) {
		printf("spool %s: cannot be read: %s\n", dir, spool_err);
		env_perm_hint(spool_rc, "patchbridge status", dir);
	} else if (!rc)
		rc = show_spool_totals(&d, dir);
	if (!rc)
		show_daemon_files(cfg);
	/* The inbound side: totals, and replies no project claims. */
	if (!rc)
		show_inbound(&rows, cfg);
	if (!rc)
		rc = show_milter(st, cfg);
	if (!rc)
		rc = show_hosts(st);
	if (rc) {
		fprintf(stderr, "patchbridge status: %s\n", err_msg());
		rc = env_exit_code(rc);
		goto out;
	}
	rc = EX_OK;
out:
	if (snapshot)
		store_rollback(st); /* nothing was written */
	rows_release(&rows);
	spool_free(d.sp);
	free(d.per);
	store_free(st);
	config_free(cfg);
	return rc;
}
