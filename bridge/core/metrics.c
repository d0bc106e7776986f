#include "core/metrics.h"

#include "core/config.h"
#include "core/configdoc.h"
#include "util/err.h"
#include "util/log.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * The table.  Names follow Prometheus' conventions: the program's prefix,
 * base units (seconds, bytes), "_total" on counters, "_timestamp_seconds"
 * on Unix times.
 */

/* clang-format off */
static const char *const v_check[] = {
	"store", "spool", "forge", "smtp", "milter", NULL };
static const char *const v_poll[] = {
	"ok", "auth", "not_found", "unreachable", "error", NULL };
/* gitlab.c's endpoint classes (gitlab_endpoint_class()). */
static const char *const v_endpoint[] = {
	"version", "user", "users", "project", "labels", "repository",
	"hooks", "merge_requests", "merge_request", "versions", "commits",
	"changes", "diffs", "notes", "discussions", "approve", "unapprove",
	"approvals", "approval_state", "merge", "other", NULL };
static const char *const v_method[] = {
	"GET", "POST", "PUT", "DELETE", NULL };
static const char *const v_received[] = {
	"journaled", "duplicate", NULL };
/* inbound.c's tokens for finish(). */
static const char *const v_ignored[] = {
	"not_placed", "own_mail", "not_bridged", "disabled", "not_a_reply",
	"nothing_to_apply", "discussion_locked", "notice_request",
	"not_submission", "submission_limit", NULL };
static const char *const v_notice[] = {
	"sent", "disabled", "opt_out", "rate_limit", "auto_submitted",
	"bounce", "list", "ours", "no_address", "unrenderable", NULL };
static const char *const v_dead[] = {
	"corrupt", "unreadable", "unparsable", "planning", "forge_refused",
	"gave_up", NULL };
/* approval_verdict_token() but grant and not_approval; apply.c's. */
static const char *const v_refused[] = {
	"bot", "nak", "ambiguous", "in_sentence", "not_in_block", "loose",
	"not_sender", "thread_conflict", "quoted", "unaccounted", "unverified",
	"disabled", "unmapped", "not_owner", "head_unknown", "moved_on",
	"forge_refused", "merged", "closed", "reauth_required", NULL };
static const char *const v_smtp[] = {
	"tempfail", "rejected", "unknown", NULL };
static const char *const v_area[] = {
	"new", "cur", "done", "dead", NULL };
static const char *const v_kind[] = {
	"cover", "patch", "reply", "other", "own", "unrelated", "submission",
	NULL };
/* classify.c's reason tokens, and session.c's own. */
static const char *const v_milter_ignored[] = {
	"unthreaded", "not-bridged", "own-message-id", "x-patchbridge-header",
	"auto-submitted", "from-bridge", "oversize", "header-limits", NULL };

/* A forge request takes milliseconds to the [forge] timeout (1 min). */
static const double b_duration[] = {
	0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 };

#define D METRIC_DAEMON
#define M METRIC_MILTER
#define NB(a) (sizeof(a) / sizeof((a)[0]))

static const struct metric_def defs[MET__COUNT] = {
	[MET_BUILD_INFO] = {
		"patchbridge_build_info", METRIC_GAUGE, D,
		{ "version" }, { NULL }, 1, NULL, 0,
		"Always 1; the version of the running daemon",
		"`version`: the release" },
	[MET_START_TIME] = {
		"patchbridge_start_time_seconds", METRIC_GAUGE, D,
		{ NULL }, { NULL }, 1, NULL, 0,
		"When the daemon started (Unix time)", "" },
	[MET_LOOP_CYCLES] = {
		"patchbridge_loop_cycles_total", METRIC_COUNTER, D,
		{ NULL }, { NULL }, 1, NULL, 0,
		"Rounds of the daemon's main loop (poll, mail, apply) "
		"completed", "" },
	[MET_READY] = {
		"patchbridge_ready", METRIC_GAUGE, D,
		{ "check" }, { v_check }, 8, NULL, 0,
		"1 when the check of /readyz passes, else 0",
		"`check`: `store`, `spool`, `forge`, `smtp`, `milter`" },
	[MET_POLLS] = {
		"patchbridge_polls_total", METRIC_COUNTER, D,
		{ "project", "result" }, { NULL, v_poll }, 1024, NULL, 0,
		"Listings of a project's merge requests, by result",
		"`project`; `result`: `ok`, `auth` (401/403: the token), "
		"`not_found`, `unreachable`, `error`" },
	[MET_POLL_LAST_SUCCESS] = {
		"patchbridge_poll_last_success_timestamp_seconds",
		METRIC_GAUGE, D,
		{ "project" }, { NULL }, 256, NULL, 0,
		"When a listing of the project last worked (Unix time)",
		"`project`" },
	[MET_FORGE_REQUESTS] = {
		"patchbridge_forge_requests_total", METRIC_COUNTER, D,
		{ "endpoint", "method", "code" },
		{ v_endpoint, v_method, NULL }, 512, NULL, 0,
		"HTTP requests to the forge's API, by endpoint class and "
		"status",
		"`endpoint`: the API path's class (`merge_request`, "
		"`notes`, `discussions`, `approve`, ... `other`); "
		"`method`; `code`: the HTTP status, `error` when no "
		"answer came" },
	[MET_FORGE_DURATION] = {
		"patchbridge_forge_request_duration_seconds",
		METRIC_HISTOGRAM, D,
		{ "endpoint" }, { v_endpoint }, 32, b_duration,
		NB(b_duration),
		"Time of one HTTP request to the forge's API (retries "
		"count apart)",
		"`endpoint` as above; buckets 0.01 s to 60 s" },
	[MET_FORGE_TOKEN_FAILING] = {
		"patchbridge_forge_token_failing", METRIC_GAUGE, D,
		{ NULL }, { NULL }, 1, NULL, 0,
		"1 while the forge refuses the token itself (expired, "
		"revoked or unknown to it: replies wait until a new one is "
		"in [forge] token_file), else 0",
		"" },
	[MET_FORGE_TOKEN_EXPIRY] = {
		"patchbridge_forge_token_expiry_timestamp_seconds",
		METRIC_GAUGE, D,
		{ NULL }, { NULL }, 1, NULL, 0,
		"When the forge token expires (Unix time: the start of its "
		"expires_at day, UTC); absent when it has no expiry date or "
		"it cannot be read",
		"" },
	[MET_REPLIES_RECEIVED] = {
		"patchbridge_replies_received_total", METRIC_COUNTER, D,
		{ "result" }, { v_received }, 4, NULL, 0,
		"Spool records the daemon took in: journaled, or a copy of "
		"a mail it has",
		"`result`: `journaled`, `duplicate`" },
	[MET_REPLIES_APPLIED] = {
		"patchbridge_replies_applied_total", METRIC_COUNTER, D,
		{ "project" }, { NULL }, 256, NULL, 0,
		"List replies applied to the forge", "`project`" },
	[MET_REPLIES_IGNORED] = {
		"patchbridge_replies_ignored_total", METRIC_COUNTER, D,
		{ "reason" }, { v_ignored }, 16, NULL, 0,
		"Spooled mails the daemon found nothing to do with",
		"`reason`: `not_placed`, `own_mail`, `not_bridged`, "
		"`disabled`, `not_a_reply`, `nothing_to_apply`, "
		"`discussion_locked` (the MR's discussion is locked), "
		"`notice_request` (a sender's \"unsubscribe notices\"), "
		"`not_submission` (a new patch's mail that is no series "
		"the project takes, or whose sender is not verified), "
		"`submission_limit` (a series over a limit of "
		"`email_max_patches`, `email_max_bytes`, "
		"`email_series_per_hour`)" },
	[MET_REPLIES_RETRIED] = {
		"patchbridge_replies_retried_total", METRIC_COUNTER, D,
		{ "project" }, { NULL }, 256, NULL, 0,
		"Attempts to apply a reply that failed for now and wait "
		"for a retry", "`project`" },
	[MET_REPLIES_DEAD] = {
		"patchbridge_replies_dead_total", METRIC_COUNTER, D,
		{ "reason" }, { v_dead }, 16, NULL, 0,
		"Replies given up on (dead letters in the spool's dead/)",
		"`reason`: `corrupt` (the record), `unreadable`, "
		"`unparsable` (the mail), `planning`, `forge_refused` (an "
		"action refused for good), `gave_up` ([inbound] "
		"max_attempts)" },
	[MET_APPROVALS_MADE] = {
		"patchbridge_approvals_made_total", METRIC_COUNTER, D,
		{ "project" }, { NULL }, 256, NULL, 0,
		"Approvals made on the forge for a mailed trailer",
		"`project`" },
	[MET_APPROVALS_REFUSED] = {
		"patchbridge_approvals_refused_total", METRIC_COUNTER, D,
		{ "reason" }, { v_refused }, 32, NULL, 0,
		"Acked-by, Reviewed-by or Tested-by trailers not honoured "
		"as approvals",
		"`reason`: `bot`, `nak`, `ambiguous`, `in_sentence`, "
		"`not_in_block`, `loose`, `not_sender`, `thread_conflict`, "
		"`quoted`, `unaccounted`, `unverified`, `disabled`, "
		"`unmapped`, "
		"`not_owner` (the rules of README's \"Applying replies\"), "
		"`head_unknown`, `moved_on` (409), `forge_refused` "
		"(401/403/404), `merged`, `closed` (the MR was), "
		"`reauth_required` (the project's setting)" },
	[MET_NAKS] = {
		"patchbridge_naks_total", METRIC_COUNTER, D,
		{ "project" }, { NULL }, 256, NULL, 0,
		"NAKs applied to the forge (label, discussion)",
		"`project`" },
	[MET_NOTICES] = {
		"patchbridge_notices_total", METRIC_COUNTER, D,
		{ "decision" }, { v_notice }, 16, NULL, 0,
		"Replies whose sender was to be told what was not done, and "
		"series posted to the list whose sender was to be told why "
		"they are no merge request (yet): the notice queued, or why "
		"not",
		"`decision`: `sent` (queued for the sender), `disabled`, "
		"`opt_out`, `rate_limit`, `auto_submitted`, `bounce`, `list`, "
		"`ours`, `no_address`, `unrenderable` (README \"Notices to "
		"senders\")" },
	[MET_SERIES_SENT] = {
		"patchbridge_series_sent_total", METRIC_COUNTER, D,
		{ "project" }, { NULL }, 256, NULL, 0,
		"Revisions whose every mail the MTA accepted", "`project`" },
	[MET_MAILS_SENT] = {
		"patchbridge_mails_sent_total", METRIC_COUNTER, D,
		{ "project" }, { NULL }, 256, NULL, 0,
		"Mails the MTA accepted (patches, cover letters, forge "
		"comments)", "`project`" },
	[MET_MAILS_LAST_SENT] = {
		"patchbridge_mails_last_sent_timestamp_seconds", METRIC_GAUGE,
		D, { NULL }, { NULL }, 1, NULL, 0,
		"When the MTA last accepted a mail of the bridge's (Unix "
		"time; 0: none since the daemon started, nor in the store)",
		"" },
	[MET_SMTP_FAILURES] = {
		"patchbridge_smtp_failures_total", METRIC_COUNTER, D,
		{ "result" }, { v_smtp }, 4, NULL, 0,
		"Submissions the MTA did not accept",
		"`result`: `tempfail` (retried), `rejected` (failed for "
		"good), `unknown` (no verdict after the data)" },
	[MET_SPOOL_RECORDS] = {
		"patchbridge_spool_records", METRIC_GAUGE, D,
		{ "area" }, { v_area }, 4, NULL, 0,
		"Records in the spool's areas at the scrape",
		"`area`: `new` (waiting), `cur` (claimed, or waiting for a "
		"retry), `done`, `dead`" },
	[MET_SPOOL_OLDEST_AGE] = {
		"patchbridge_spool_oldest_record_age_seconds", METRIC_GAUGE,
		D, { NULL }, { NULL }, 1, NULL, 0,
		"Age of the oldest record in new/ and cur/ (0 when none "
		"waits)", "" },
	[MET_MILTER_UP] = {
		"patchbridge_milter_up", METRIC_GAUGE, D,
		{ NULL }, { NULL }, 1, NULL, 0,
		"1 when the milter's statistics file is fresh (written "
		"within three [metrics] milter_interval), else 0",
		"" },
	[MET_MILTER_STATS_AGE] = {
		"patchbridge_milter_stats_age_seconds", METRIC_GAUGE, D,
		{ NULL }, { NULL }, 1, NULL, 0,
		"Age of the milter's statistics file (absent: never "
		"written)", "" },
	[MET_MILTER_SEES_LIST] = {
		"patchbridge_milter_sees_list_mail", METRIC_GAUGE, D,
		{ NULL }, { NULL }, 1, NULL, 0,
		"0 when the milter is not seeing the list's mail: the bridge's "
		"last mail reached the MTA 5 minutes ago or more, and the "
		"milter has seen no mail since a minute before it; else 1",
		"" },
	[MET_MILTER_START_TIME] = {
		"patchbridge_milter_start_time_seconds", METRIC_GAUGE, M,
		{ NULL }, { NULL }, 1, NULL, 0,
		"When the milter started (Unix time)", "" },
	[MET_MILTER_MAILS_SEEN] = {
		"patchbridge_milter_mails_seen_total", METRIC_COUNTER, M,
		{ NULL }, { NULL }, 1, NULL, 0,
		"Mails the milter saw to their end (spooled + tempfails + "
		"ignored)", "" },
	[MET_MILTER_LAST_SEEN] = {
		"patchbridge_milter_last_seen_timestamp_seconds", METRIC_GAUGE,
		M, { NULL }, { NULL }, 1, NULL, 0,
		"When the milter last saw a mail to its end (Unix time; 0: "
		"none since it started)", "" },
	[MET_MILTER_MAILS_CLASSIFIED] = {
		"patchbridge_milter_mails_classified_total", METRIC_COUNTER,
		M, { "kind" }, { v_kind }, 8, NULL, 0,
		"Mails the milter classified, by what it took them for",
		"`kind`: `cover`, `patch`, `reply`, `other` (about a "
		"bridged merge request), `own` (the bridge's own mail), "
		"`unrelated`, `submission` (a mail of a series posted to "
		"the list)" },
	[MET_MILTER_MAILS_SPOOLED] = {
		"patchbridge_milter_mails_spooled_total", METRIC_COUNTER, M,
		{ NULL }, { NULL }, 1, NULL, 0,
		"Mails spooled for the daemon", "" },
	[MET_MILTER_SPOOLED_BYTES] = {
		"patchbridge_milter_spooled_bytes_total", METRIC_COUNTER, M,
		{ NULL }, { NULL }, 1, NULL, 0,
		"Bytes of the mails spooled", "" },
	[MET_MILTER_MAILS_IGNORED] = {
		"patchbridge_milter_mails_ignored_total", METRIC_COUNTER, M,
		{ "reason" }, { v_milter_ignored }, 16, NULL, 0,
		"Mails passed on without spooling",
		"`reason`: `unthreaded`, `not-bridged` (not about a "
		"bridged series), `own-message-id`, "
		"`x-patchbridge-header`, `auto-submitted`, `from-bridge` "
		"(the bridge's own), `oversize`, `header-limits`" },
	[MET_MILTER_TEMPFAILS] = {
		"patchbridge_milter_tempfails_total", METRIC_COUNTER, M,
		{ NULL }, { NULL }, 1, NULL, 0,
		"Mails answered tempfail because they could not be spooled",
		"" },
	[MET_MILTER_MAILS_IN_FILES] = {
		"patchbridge_milter_mails_in_files_total", METRIC_COUNTER, M,
		{ NULL }, { NULL }, 1, NULL, 0,
		"Mails the milter went on receiving in a file because its "
		"messages held [milter] memory_limit",
		"" },
	[MET_MILTER_MEMORY_HELD] = {
		"patchbridge_milter_memory_held_bytes", METRIC_GAUGE, M,
		{ NULL }, { NULL }, 1, NULL, 0,
		"Bytes the milter's messages held in memory when it wrote "
		"its statistics (at most [milter] memory_limit)",
		"" },
};

#undef D
#undef M
/* clang-format on */

/*
 * The registry.
 */

struct series {
	char value[METRICS_LABELS_MAX][METRICS_VALUE_MAX + 1];
	double v; /* counter, gauge; histogram: the sum */
	uint64_t count; /* histogram */
	uint64_t *bucket; /* histogram: per bucket, not cumulative */
};

struct family {
	struct series *s;
	size_t nr, alloc;
	int warned; /* a caller's label count was logged */
};

static struct {
	pthread_mutex_t lock;
	struct family f[MET__COUNT];
} reg = { PTHREAD_MUTEX_INITIALIZER, { { NULL, 0, 0, 0 } } };

const struct metric_def *metrics_def(enum metric_id id)
{
	if ((unsigned)id >= MET__COUNT)
		BUG("metric %d", (int)id);
	return &defs[id];
}

static size_t nr_labels(const struct metric_def *d)
{
	size_t n = 0;

	while (n < METRICS_LABELS_MAX && d->labels[n])
		n++;
	return n;
}

static int value_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr("_.:/@+-", c));
}

/* s as a label value: cut, every other byte '_'. */
static void clean_value(char *dst, const char *s)
{
	size_t i;

	for (i = 0; s && s[i] && i < METRICS_VALUE_MAX; i++)
		dst[i] = value_char((unsigned char)s[i]) ? s[i] : '_';
	if (!i)
		dst[i++] = '_'; /* never empty: the file's reader wants one */
	dst[i] = '\0';
}

static struct series *series_new(struct family *f, const struct metric_def *d)
{
	struct series *s;

	ALLOC_GROW(f->s, f->nr + 1, f->alloc);
	s = &f->s[f->nr++];
	memset(s, 0, sizeof(*s));
	if (d->type == METRIC_HISTOGRAM)
		s->bucket = xcalloc(d->nr_buckets, sizeof(*s->bucket));
	return s;
}

/* The series of the cleaned values vals; made when missing.  Lock held. */
static struct series *series_get(const struct metric_def *d, struct family *f,
				 char vals[][METRICS_VALUE_MAX + 1], size_t n)
{
	size_t i, j;
	struct series *s;

	for (i = 0; i < f->nr; i++) {
		for (j = 0; j < n && !strcmp(f->s[i].value[j], vals[j]); j++)
			;
		if (j == n)
			return &f->s[i];
	}
	if (f->nr >= d->max_series) {
		for (j = 0; j < n; j++)
			snprintf(vals[j], METRICS_VALUE_MAX + 1, "_overflow");
		for (i = 0; i < f->nr; i++) {
			for (j = 0; j < n && !strcmp(f->s[i].value[j], vals[j]);
			     j++)
				;
			if (j == n)
				return &f->s[i];
		}
	}
	s = series_new(f, d);
	for (j = 0; j < n; j++)
		memcpy(s->value[j], vals[j], sizeof(s->value[j]));
	return s;
}

enum op { OP_ADD, OP_SET, OP_OBSERVE };

static int in_list(const char *const *list, const char *v)
{
	for (; *list; list++)
		if (!strcmp(*list, v))
			return 1;
	return 0;
}

static void update(enum metric_id id, enum op op, double v,
		   const char *const *labels, size_t n)
{
	const struct metric_def *d = metrics_def(id);
	struct family *f = &reg.f[id];
	char vals[METRICS_LABELS_MAX][METRICS_VALUE_MAX + 1];
	struct series *s;
	size_t i;
	int bad;

	for (i = 0; i < n && i < METRICS_LABELS_MAX; i++) {
		clean_value(vals[i], labels[i]);
		if (d->values[i] && !in_list(d->values[i], vals[i]))
			snprintf(vals[i], sizeof(vals[i]), "_unknown");
	}
	pthread_mutex_lock(&reg.lock);
	bad = n != nr_labels(d) ||
	      (op == OP_OBSERVE) != (d->type == METRIC_HISTOGRAM);
	if (bad) {
		if (!f->warned)
			log_error("metrics: %s updated with %zu labels: a bug, "
				  "the update is dropped",
				  d->name, n);
		f->warned = 1;
		pthread_mutex_unlock(&reg.lock);
		return;
	}
	s = series_get(d, f, vals, n);
	switch (op) {
	case OP_ADD:
		s->v += v;
		break;
	case OP_SET:
		s->v = v;
		break;
	case OP_OBSERVE:
		s->v += v;
		s->count++;
		for (i = 0; i < d->nr_buckets && v > d->buckets[i]; i++)
			;
		if (i < d->nr_buckets)
			s->bucket[i]++;
		break;
	}
	pthread_mutex_unlock(&reg.lock);
}

void metrics_add0(enum metric_id id, double v)
{
	update(id, OP_ADD, v, NULL, 0);
}

void metrics_add1(enum metric_id id, double v, const char *l1)
{
	const char *l[] = { l1 };

	update(id, OP_ADD, v, l, 1);
}

void metrics_add2(enum metric_id id, double v, const char *l1, const char *l2)
{
	const char *l[] = { l1, l2 };

	update(id, OP_ADD, v, l, 2);
}

void metrics_add3(enum metric_id id, double v, const char *l1, const char *l2,
		  const char *l3)
{
	const char *l[] = { l1, l2, l3 };

	update(id, OP_ADD, v, l, 3);
}

void metrics_set0(enum metric_id id, double v)
{
	update(id, OP_SET, v, NULL, 0);
}

double metrics_get0(enum metric_id id)
{
	const struct metric_def *d = metrics_def(id);
	struct family *f = &reg.f[id];
	double v = 0;

	if (nr_labels(d) || d->type == METRIC_HISTOGRAM)
		BUG("metrics_get0(%s)", d->name);
	pthread_mutex_lock(&reg.lock);
	if (f->nr)
		v = f->s[0].v;
	pthread_mutex_unlock(&reg.lock);
	return v;
}

void metrics_set1(enum metric_id id, double v, const char *l1)
{
	const char *l[] = { l1 };

	update(id, OP_SET, v, l, 1);
}

void metrics_observe1(enum metric_id id, double v, const char *l1)
{
	const char *l[] = { l1 };

	update(id, OP_OBSERVE, v, l, 1);
}

/*
 * Series at 0 for every combination of the fixed values, with project
 * for a label without fixed values (none when project is NULL and some
 * label needs it).  Only families of owner mask.  Lock held.
 */
static void precreate(unsigned mask, const char *project)
{
	size_t id, n, j, k, has_project;
	size_t idx[METRICS_LABELS_MAX];
	char vals[METRICS_LABELS_MAX][METRICS_VALUE_MAX + 1];

	for (id = 0; id < MET__COUNT; id++) {
		const struct metric_def *d = &defs[id];

		if (!(d->owner & mask) || d->type == METRIC_HISTOGRAM)
			continue;
		n = nr_labels(d);
		has_project = 0;
		for (j = 0; j < n; j++)
			if (!d->values[j]) {
				if (strcmp(d->labels[j], "project"))
					break;
				has_project = 1;
			}
		if (j < n || has_project != !!project)
			continue;
		if (d->type == METRIC_GAUGE && n)
			continue; /* a gauge's value is set, not counted */
		/* Absent until known: 0 would read as "expired". */
		if (id == MET_FORGE_TOKEN_EXPIRY)
			continue;
		memset(idx, 0, sizeof(idx));
		for (;;) {
			for (j = 0; j < n; j++)
				clean_value(vals[j],
					    d->values[j] ?
						    d->values[j][idx[j]] :
						    project);
			series_get(d, &reg.f[id], vals, n);
			/* the next combination, like an odometer */
			for (k = 0; k < n; k++) {
				if (d->values[k] && d->values[k][++idx[k]])
					break;
				idx[k] = 0;
			}
			if (k == n)
				break;
		}
	}
}

void metrics_start(unsigned program, const char *version)
{
	double now = (double)time(NULL);

	pthread_mutex_lock(&reg.lock);
	precreate(program, NULL);
	pthread_mutex_unlock(&reg.lock);
	if (program & METRIC_DAEMON) {
		metrics_set1(MET_BUILD_INFO, 1, version);
		metrics_set0(MET_START_TIME, now);
	}
	if (program & METRIC_MILTER)
		metrics_set0(MET_MILTER_START_TIME, now);
}

void metrics_add_project(const char *project)
{
	pthread_mutex_lock(&reg.lock);
	precreate(METRIC_DAEMON, project);
	pthread_mutex_unlock(&reg.lock);
}

static void family_clear(struct family *f)
{
	size_t i;

	for (i = 0; i < f->nr; i++)
		free(f->s[i].bucket);
	free(f->s);
	f->s = NULL;
	f->nr = f->alloc = 0;
}

void metrics_unset(enum metric_id id)
{
	pthread_mutex_lock(&reg.lock);
	family_clear(&reg.f[id]);
	pthread_mutex_unlock(&reg.lock);
}

void metrics_clear(unsigned owner)
{
	size_t id;

	pthread_mutex_lock(&reg.lock);
	for (id = 0; id < MET__COUNT; id++)
		if (defs[id].owner & owner)
			family_clear(&reg.f[id]);
	pthread_mutex_unlock(&reg.lock);
}

void metrics_reset(void)
{
	size_t id;

	metrics_clear(METRIC_DAEMON | METRIC_MILTER);
	pthread_mutex_lock(&reg.lock);
	for (id = 0; id < MET__COUNT; id++)
		reg.f[id].warned = 0;
	pthread_mutex_unlock(&reg.lock);
}

/*
 * The exposition (text format 0.0.4).
 */

static const char *type_name(enum metric_type t)
{
	return t == METRIC_COUNTER ? "counter" :
	       t == METRIC_GAUGE   ? "gauge" :
				     "histogram";
}

/* "1", "0.25", "1733220000.5"; no exponent for what we count. */
static void add_number(struct buf *out, double v)
{
	char t[40];

	if (v == (double)(int64_t)v && v > -9e15 && v < 9e15) {
		buf_addf(out, "%lld", (long long)v);
		return;
	}
	/* the shortest of these that reads back the same */
	snprintf(t, sizeof(t), "%.15g", v);
	if (strtod(t, NULL) != v)
		snprintf(t, sizeof(t), "%.17g", v);
	buf_adds(out, t);
}

/* {a="x",b="y"} plus an extra le="..." for buckets; nothing when empty. */
static void add_labels(struct buf *out, const struct metric_def *d,
		       const struct series *s, const char *le)
{
	size_t j, n = nr_labels(d);

	if (!n && !le)
		return;
	buf_addch(out, '{');
	for (j = 0; j < n; j++)
		buf_addf(out, "%s%s=\"%s\"", j ? "," : "", d->labels[j],
			 s->value[j]);
	if (le)
		buf_addf(out, "%sle=\"%s\"", n ? "," : "", le);
	buf_addch(out, '}');
}

static void render_family(struct buf *out, const struct metric_def *d,
			  const struct family *f)
{
	size_t i, b;
	char le[32];
	uint64_t cum;

	buf_addf(out, "# HELP %s %s\n# TYPE %s %s\n", d->name, d->help, d->name,
		 type_name(d->type));
	/* An unlabelled family always has its one series. */
	if (!f->nr && !nr_labels(d) && d->type == METRIC_COUNTER) {
		buf_addf(out, "%s 0\n", d->name);
		return;
	}
	for (i = 0; i < f->nr; i++) {
		const struct series *s = &f->s[i];

		if (d->type != METRIC_HISTOGRAM) {
			buf_adds(out, d->name);
			add_labels(out, d, s, NULL);
			buf_addch(out, ' ');
			add_number(out, s->v);
			buf_addch(out, '\n');
			continue;
		}
		cum = 0;
		for (b = 0; b <= d->nr_buckets; b++) {
			if (b < d->nr_buckets) {
				cum += s->bucket[b];
				snprintf(le, sizeof(le), "%g", d->buckets[b]);
			} else {
				snprintf(le, sizeof(le), "+Inf");
			}
			buf_addf(out, "%s_bucket", d->name);
			add_labels(out, d, s, le);
			buf_addf(out, " %llu\n",
				 (unsigned long long)(b < d->nr_buckets ?
							      cum :
							      s->count));
		}
		buf_addf(out, "%s_sum", d->name);
		add_labels(out, d, s, NULL);
		buf_addch(out, ' ');
		add_number(out, s->v);
		buf_addf(out, "\n%s_count", d->name);
		add_labels(out, d, s, NULL);
		buf_addf(out, " %llu\n", (unsigned long long)s->count);
	}
}

int metrics_render(struct buf *out, unsigned mask)
{
	size_t id;

	pthread_mutex_lock(&reg.lock);
	for (id = 0; id < MET__COUNT; id++)
		if (defs[id].owner & mask)
			render_family(out, &defs[id], &reg.f[id]);
	pthread_mutex_unlock(&reg.lock);
	/* A full buffer shows as a failed last append. */
	if (buf_addch(out, '\0'))
		return err_set(PB_ELIMIT, "metrics: more than %zu bytes",
			       out->max);
	buf_truncate(out, out->len - 1);
	return 0;
}

/*
 * The milter's file.
 */

struct sample {
	enum metric_id id;
	char vals[METRICS_LABELS_MAX][METRICS_VALUE_MAX + 1];
	size_t n;
	uint64_t v;
};

static int name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == ':';
}

static int value_cursor_char(int c)
{
	return value_char(c);
}

/* One sample line into *out; PB_EINVAL with a message when it is bad.
 * (scan_*() return true when they took what they were asked for.) */
static int parse_sample(struct sample *out, const char *line, size_t len)
{
	struct scan sc;
	const char *tok;
	size_t tlen, id, n, j;
	const struct metric_def *d = NULL;

	scan_init(&sc, line, len);
	if (!scan_span(&sc, name_char, &tok, &tlen))
		return err_set(PB_EINVAL, "no metric name");
	for (id = 0; id < MET__COUNT; id++)
		if (defs[id].owner == METRIC_MILTER &&
		    strlen(defs[id].name) == tlen &&
		    !memcmp(defs[id].name, tok, tlen)) {
			d = &defs[id];
			break;
		}
	if (!d)
		return err_set(PB_EINVAL, "not a metric of the milter");
	out->id = (enum metric_id)id;
	n = nr_labels(d);
	out->n = n;
	if (n) {
		if (!scan_char(&sc, '{'))
			return err_set(PB_EINVAL, "%s: labels missing",
				       d->name);
		for (j = 0; j < n; j++) {
			if ((j && !scan_char(&sc, ',')) ||
			    !scan_lit(&sc, d->labels[j]) ||
			    !scan_lit(&sc, "=\""))
				return err_set(PB_EINVAL,
					       "%s: label %s expected", d->name,
					       d->labels[j]);
			if (!scan_span(&sc, value_cursor_char, &tok, &tlen) ||
			    tlen > METRICS_VALUE_MAX || !scan_char(&sc, '"'))
				return err_set(PB_EINVAL, "%s: bad value of %s",
					       d->name, d->labels[j]);
			memcpy(out->vals[j], tok, tlen);
			out->vals[j][tlen] = '\0';
		}
		if (!scan_char(&sc, '}'))
			return err_set(PB_EINVAL, "%s: '}' expected", d->name);
	}
	if (!scan_char(&sc, ' ') || !scan_u64(&sc, UINT64_MAX / 2, &out->v) ||
	    !scan_eof(&sc))
		return err_set(PB_EINVAL, "%s: bad value", d->name);
	return 0;
}

int metrics_load_milter(const char *text, size_t len)
{
	struct scan sc;
	const char *line;
	size_t llen, nr = 0, alloc = 0, i, lineno = 0;
	struct sample *v = NULL;
	int rc = 0;

	if (len > METRICS_MILTER_FILE_MAX)
		return err_set(PB_EINVAL, "over %d bytes",
			       METRICS_MILTER_FILE_MAX);
	scan_init(&sc, text, len);
	while (scan_line(&sc, &line, &llen)) {
		lineno++;
		if (!llen || line[0] == '#')
			continue;
		ALLOC_GROW(v, nr + 1, alloc);
		if (parse_sample(&v[nr], line, llen)) {
			rc = err_prefix(PB_EINVAL, "line %zu", lineno);
			goto out;
		}
		nr++;
	}
	metrics_clear(METRIC_MILTER);
	pthread_mutex_lock(&reg.lock);
	for (i = 0; i < nr; i++) {
		const struct metric_def *d = &defs[v[i].id];

		series_get(d, &reg.f[v[i].id], v[i].vals, v[i].n)->v =
			(double)v[i].v;
	}
	pthread_mutex_unlock(&reg.lock);
out:
	free(v);
	return rc;
}

/*
 * Documentation.
 */

static const char *owner_name(unsigned owner)
{
	return owner == METRIC_MILTER ? "milter" : "daemon";
}

int metrics_doc_markdown(struct buf *out)
{
	size_t id;

	buf_adds(out, "| metric | type | from | labels | description |\n"
		      "| --- | --- | --- | --- | --- |\n");
	for (id = 0; id < MET__COUNT; id++) {
		const struct metric_def *d = &defs[id];

		buf_addf(out, "| `%s` | %s | %s | %s | %s |\n", d->name,
			 type_name(d->type), owner_name(d->owner),
			 d->doc[0] ? d->doc : "-", d->help);
	}
	if (buf_addch(out, '\0'))
		return err_set(PB_ELIMIT, "documentation too long");
	buf_truncate(out, out->len - 1);
	return 0;
}

int metrics_doc_man(struct buf *out)
{
	size_t id;

	for (id = 0; id < MET__COUNT; id++) {
		const struct metric_def *d = &defs[id];

		buf_adds(out, ".TP\n\\&\\fB");
		configdoc_man_text(out, d->name);
		buf_addf(out, "\\fR (%s, %s", type_name(d->type),
			 owner_name(d->owner));
		if (d->doc[0]) {
			buf_adds(out, "; ");
			configdoc_man_text(out, d->doc);
		}
		buf_adds(out, ")\n\\&");
		configdoc_man_text(out, d->help);
		buf_addch(out, '\n');
	}
	if (buf_addch(out, '\0'))
		return err_set(PB_ELIMIT, "documentation too long");
	buf_truncate(out, out->len - 1);
	return 0;
}
