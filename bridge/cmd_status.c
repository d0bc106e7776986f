/*
 * `patchbridge status`: what the daemon has done and what waits, read
 * from the state database (opened read-only, so it works next to a
 * running daemon and needs no forge token).
 */
#include "cmd_daemon.h"
#include "env.h"

#include "core/config.h"
#include "core/store.h"
#include "outbound/detect.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/printable.h"

#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

const char cmd_status_synopsis[] = "";
const char cmd_status_summary[] = "show polls, mailed revisions and mail "
				  "waiting or failed";
const char cmd_status_help[] =
	"For every configured project: when it was last polled (and why the\n"
	"last poll failed, if it did), the merge requests and revisions\n"
	"mailed, and every mail still queued - deferred with its attempts,\n"
	"next retry and the MTA's last answer, or failed for good with the\n"
	"reason (`patchbridge send --retry PROJECT!IID` queues those again).\n"
	"Mail of projects no longer configured is listed too.  Then the\n"
	"inbound replies: how many were applied or ignored, and each one\n"
	"waiting, retrying after a forge failure (next attempt, last error)\n"
	"or dead (the reason; its spool record is in the spool's dead/).\n"
	"Reads the state database only; safe next to a running daemon.\n";

static void when(char *out, size_t size, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!t || !gmtime_r(&tt, &tm) ||
	    !strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, size, "-");
}

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

/*
 * Inbound replies from the journal: how many were applied or ignored,
 * and each one waiting for a retry or dead, with its reason.
 */
static int show_inbound(struct store *st)
{
	static const enum store_inbound_state listed[] = {
		STORE_INBOUND_RECEIVED, STORE_INBOUND_APPLYING,
		STORE_INBOUND_FAILED, STORE_INBOUND_DEAD
	};
	struct store_inbound_list l;
	char id[PB_LOG_QUOTE_MAX], why[PB_LOG_QUOTE_MAX * 2], at[32];
	size_t applied = 0, ignored = 0, i, k;
	int rc;

	memset(&l, 0, sizeof(l));
	rc = store_inbound_list(&l, st, STORE_INBOUND_APPLIED, 0);
	applied = l.nr;
	store_inbound_list_release(&l);
	if (!rc)
		rc = store_inbound_list(&l, st, STORE_INBOUND_IGNORED, 0);
	ignored = l.nr;
	store_inbound_list_release(&l);
	if (rc)
		return rc;
	printf("inbound replies: %zu applied, %zu ignored\n", applied, ignored);
	for (k = 0; k < sizeof(listed) / sizeof(listed[0]); k++) {
		rc = store_inbound_list(&l, st, listed[k], 0);
		for (i = 0; !rc && i < l.nr; i++) {
			const struct store_inbound *in = &l.items[i];

			when(at, sizeof(at), in->next_attempt);
			printf("  <%s> %s",
			       printable_copy(id, sizeof(id), in->message_id,
					      strlen(in->message_id)),
			       store_inbound_state_name(in->state));
			if (in->project)
				printf(" %s!%lld v%d patch %d", in->project,
				       (long long)in->iid, in->revision,
				       in->patch);
			printf(", %d attempt(s)", in->attempts);
			if (in->state == STORE_INBOUND_FAILED)
				printf(", next %s", at);
			if (in->last_error)
				printf(": %s",
				       printable_copy(why, sizeof(why),
						      in->last_error,
						      strlen(in->last_error)));
			printf("\n");
		}
		store_inbound_list_release(&l);
		if (rc)
			return rc;
	}
	return 0;
}

/* The MRs and revisions of project, one line per MR (its latest). */
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
		when(t, sizeof(t),
		     r->state == STORE_REVISION_SENT ? r->sent : r->created);
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
			when(t, sizeof(t), m->next_attempt);
			printf(", next %s", t);
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
	struct config *cfg = NULL;
	struct store *st = NULL;
	size_t i, failed = 0;
	int rc;

	if (argc > 1) {
		fprintf(stderr, "patchbridge status: unknown argument: %s\n",
			argv[1]);
		return EX_USAGE;
	}
	rc = env_load_config(&cfg, config_path, 0);
	if (rc)
		return rc;
	rc = store_open(&st, config_str(cfg, CFG_STATE_PATH), STORE_RO,
			(int)config_duration_ms(cfg, CFG_STATE_BUSY_TIMEOUT));
	if (rc == PB_ENOTFOUND) {
		printf("no state database yet (%s): the daemon has not "
		       "run\n",
		       config_str(cfg, CFG_STATE_PATH));
		rc = EX_OK;
		goto out;
	}
	if (rc) {
		fprintf(stderr, "patchbridge status: %s\n", err_msg());
		rc = env_exit_code(rc);
		goto out;
	}
	for (i = 0; i < config_project_count(cfg); i++) {
		const struct config_project *p = config_project_at(cfg, i);
		const char *name = config_project_name(p);

		printf("%s%s\n", name,
		       config_project_bool(p, CFG_PROJECT_ENABLED) ?
			       "" :
			       " (disabled)");
		show_cursor(st, DETECT_TIME_PREFIX, name, "last poll");
		show_cursor(st, DETECT_CURSOR_PREFIX, name, "watermark");
		show_cursor(st, DETECT_ERROR_PREFIX, name, "last poll failed");
		if ((rc = show_revisions(st, name)) ||
		    (rc = show_queue(st, name, cfg, &failed)))
			break;
	}
	if (!rc)
		rc = show_queue(st, NULL, cfg, &failed);
	/* The inbound side: spooled replies and what became of them. */
	if (!rc)
		rc = show_inbound(st);
	if (rc) {
		fprintf(stderr, "patchbridge status: %s\n", err_msg());
		rc = env_exit_code(rc);
		goto out;
	}
	rc = EX_OK;
out:
	store_free(st);
	config_free(cfg);
	return rc;
}
