/*
 * metrics - the counters and gauges an operator's Prometheus scrapes.
 *
 * Every metric is a row of one static table in metrics.c (name, type,
 * labels, the values a label may take, help text), named in code by enum
 * metric_id, like the configuration's parameters: a misspelt metric is a
 * compile error, and the table drives the exposition, the README's metric
 * table and patchbridge.conf(5) (`patchbridge list-metrics --markdown`,
 * `--man`), which the cli_metrics_documented test keeps in step.
 *
 * The values live in one process-wide registry, like the log sink (the
 * only other global besides the loaded configuration): code anywhere in
 * the daemon or the milter counts an event with one call and nothing has
 * to be threaded through.  The daemon renders the registry in the
 * Prometheus text exposition format (version 0.0.4) on /metrics; the
 * milter, which must not listen on the network, writes the families it
 * owns (METRIC_MILTER) to a file that the daemon reads back
 * (metrics_load_milter()) and serves with its own.
 *
 * Labels are bounded: a label takes one of a fixed list of values (a
 * reason, a verdict, an HTTP method) or a configured project's path,
 * never a merge request, a Message-ID or anything a mail can choose.
 * Each family holds at most its max_series label sets; past that, new
 * label sets are counted under one series whose every label is
 * "_overflow" (so a bug or a hostile peer costs one series, not memory).
 * A label value is cut to METRICS_VALUE_MAX bytes and every byte outside
 * [A-Za-z0-9_.:/@+-] becomes '_', so no value needs escaping; a value
 * that is not in its label's fixed list becomes "_unknown".
 *
 * Families whose labels all come from fixed lists start with every
 * series at 0 (Prometheus' advice: an alert on increase() then sees the
 * first event), and so do project-labelled ones for each project passed
 * to metrics_add_project().
 *
 * Thread safety: every function may be called from any thread (one
 * mutex); the update calls never fail and never allocate more than the
 * series caps allow.  A label count that does not match the table is a
 * bug in the caller: it is logged once per metric and the update dropped
 * (never an abort: the caller may be handling hostile mail).
 * Errors: metrics_render() returns PB_ELIMIT when out's cap is too small;
 * metrics_load_milter() PB_EINVAL (with err_msg() naming the line) for a
 * file that breaks the rules, after loading nothing.
 */
#ifndef PB_CORE_METRICS_H
#define PB_CORE_METRICS_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

#define METRICS_LABELS_MAX 3
#define METRICS_VALUE_MAX 128
/* What /metrics may grow to, and the milter's file. */
#define METRICS_RENDER_MAX (4 * 1024 * 1024)
#define METRICS_MILTER_FILE_MAX (256 * 1024)
/* The milter's file, in the spool directory (both programs reach it). */
#define METRICS_MILTER_FILE "milter.prom"

/*
 * Every metric, in the order of the exposition and of the documentation.
 */
enum metric_id {
	/* the daemon */
	MET_BUILD_INFO,
	MET_START_TIME,
	MET_LOOP_CYCLES,
	MET_READY,
	MET_POLLS,
	MET_POLL_LAST_SUCCESS,
	MET_FORGE_REQUESTS,
	MET_FORGE_DURATION,
	MET_FORGE_TOKEN_FAILING,
	MET_FORGE_TOKEN_EXPIRY,
	MET_REPLIES_RECEIVED,
	MET_REPLIES_APPLIED,
	MET_REPLIES_IGNORED,
	MET_REPLIES_RETRIED,
	MET_REPLIES_DEAD,
	MET_APPROVALS_MADE,
	MET_APPROVALS_REFUSED,
	MET_NAKS,
	MET_NOTICES,
	MET_SERIES_SENT,
	MET_MAILS_SENT,
	MET_MAILS_LAST_SENT,
	MET_SMTP_FAILURES,
	MET_SPOOL_RECORDS,
	MET_SPOOL_OLDEST_AGE,
	MET_MILTER_UP,
	MET_MILTER_STATS_AGE,
	MET_MILTER_SEES_LIST,
	/* the milter, through its file */
	MET_MILTER_START_TIME,
	MET_MILTER_MAILS_SEEN,
	MET_MILTER_LAST_SEEN,
	MET_MILTER_MAILS_CLASSIFIED,
	MET_MILTER_MAILS_SPOOLED,
	MET_MILTER_SPOOLED_BYTES,
	MET_MILTER_MAILS_IGNORED,
	MET_MILTER_TEMPFAILS,
	MET_MILTER_MAILS_IN_FILES,
	MET_MILTER_MEMORY_HELD,

	MET__COUNT
};

enum metric_type {
	METRIC_COUNTER,
	METRIC_GAUGE,
	METRIC_HISTOGRAM,
};

/* Which program keeps a family (render and load select by these). */
enum metric_owner {
	METRIC_DAEMON = 1 << 0,
	METRIC_MILTER = 1 << 1,
};

struct metric_def {
	const char *name;
	enum metric_type type;
	unsigned owner; /* enum metric_owner */
	/* label names, NULL after the last */
	const char *labels[METRICS_LABELS_MAX + 1];
	/* per label: its fixed values (NULL-ended), or NULL for a project */
	const char *const *values[METRICS_LABELS_MAX];
	unsigned max_series;
	/* histograms: the upper bounds of the buckets, ascending */
	const double *buckets;
	size_t nr_buckets;
	const char *help; /* one line, the exposition's HELP */
	/* the README's and the man page's words on the labels */
	const char *doc;
};

const struct metric_def *metrics_def(enum metric_id id);

/* Updates.  The number of labels must be the table's. */
void metrics_add0(enum metric_id id, double v);
void metrics_add1(enum metric_id id, double v, const char *l1);
void metrics_add2(enum metric_id id, double v, const char *l1, const char *l2);
void metrics_add3(enum metric_id id, double v, const char *l1, const char *l2,
		  const char *l3);
void metrics_set0(enum metric_id id, double v);
void metrics_set1(enum metric_id id, double v, const char *l1);
/* Drop a family's series (a gauge that has become unknown). */
void metrics_unset(enum metric_id id);
/* The value of a family without labels (0 before any update). */
double metrics_get0(enum metric_id id);
/* A histogram's observation (seconds, for the duration). */
void metrics_observe1(enum metric_id id, double v, const char *l1);

#define metrics_inc0(id) metrics_add0((id), 1)
#define metrics_inc1(id, a) metrics_add1((id), 1, (a))
#define metrics_inc2(id, a, b) metrics_add2((id), 1, (a), (b))
#define metrics_inc3(id, a, b, c) metrics_add3((id), 1, (a), (b), (c))

/*
 * Start: the build info and start time of program (METRIC_DAEMON or
 * METRIC_MILTER), and every fixed-label series of its families at 0.
 */
void metrics_start(unsigned program, const char *version);

/* Every project-labelled series of project at 0 (once per project). */
void metrics_add_project(const char *project);

/* Drop every series of the families of owner (before a reload). */
void metrics_clear(unsigned owner);

/* Append the families of the owners in mask, in the exposition format. */
int metrics_render(struct buf *out, unsigned mask);

/*
 * Replace the METRIC_MILTER families with the samples of text, a file
 * the milter wrote with metrics_render(METRIC_MILTER).  It is read
 * strictly, since the milter's user may write it: comment lines, and
 * sample lines "NAME{LABEL="VALUE",...} N" of a milter family with its
 * labels in the table's order, N a non-negative integer; anything else
 * refuses the whole file.
 */
int metrics_load_milter(const char *text, size_t len);

/* The documentation: a markdown table, or man(7) paragraphs. */
int metrics_doc_markdown(struct buf *out);
int metrics_doc_man(struct buf *out);

/* Forget everything (tests). */
void metrics_reset(void);

#endif
