/*
 * The metrics registry: the exposition (counters, gauges, a histogram's
 * cumulative buckets), series at 0 from the start, bounded labels (the
 * cleaning of values, "_unknown" for a value off a fixed list,
 * "_overflow" past a family's cap), a wrong label count dropped, and
 * the strict reader of the milter's file, which refuses anything but
 * what metrics_render(METRIC_MILTER) writes.  That the output parses
 * with Prometheus' own parsers is checked where a daemon serves it
 * (tests/inbound/test_monitor_sim.py, tests/e2e).
 */
#include "cmocka_all.h"
#include "core/health.h"
#include "core/metrics.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdio.h>
#include <string.h>

static struct buf out = BUF_INIT(METRICS_RENDER_MAX);

static int setup(void **state)
{
	(void)state;
	metrics_reset();
	buf_reset(&out);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	buf_release(&out);
	metrics_reset();
	return 0;
}

static const char *render(unsigned mask)
{
	buf_reset(&out);
	assert_int_equal(metrics_render(&out, mask), 0);
	return out.data;
}

static int load(const char *text)
{
	return metrics_load_milter(text, strlen(text));
}

static void has(const char *text, const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("no line \"%s\" in:\n%s", line, text);
}

static void has_not(const char *text, const char *s)
{
	if (strstr(text, s))
		fail_msg("\"%s\" in:\n%s", s, text);
}

static void test_start_and_counters(void **state)
{
	const char *t;

	(void)state;
	metrics_start(METRIC_DAEMON, "1.2.3");
	metrics_add_project("group/project");
	metrics_inc1(MET_REPLIES_APPLIED, "group/project");
	metrics_add1(MET_REPLIES_APPLIED, 2, "group/project");
	metrics_inc1(MET_REPLIES_DEAD, "gave_up");
	metrics_inc0(MET_LOOP_CYCLES);
	t = render(METRIC_DAEMON);
	has(t, "# HELP patchbridge_replies_applied_total List replies applied "
	       "to the forge");
	has(t, "# TYPE patchbridge_replies_applied_total counter");
	has(t, "patchbridge_replies_applied_total{project=\"group/project\"} "
	       "3");
	has(t, "patchbridge_build_info{version=\"1.2.3\"} 1");
	has(t, "patchbridge_loop_cycles_total 1");
	/* every fixed value at 0 from the start, so increase() sees the
	 * first event */
	has(t, "patchbridge_replies_dead_total{reason=\"gave_up\"} 1");
	has(t, "patchbridge_replies_dead_total{reason=\"corrupt\"} 0");
	has(t, "patchbridge_approvals_refused_total{reason=\"unverified\"} "
	       "0");
	has(t, "patchbridge_polls_total{project=\"group/project\","
	       "result=\"auth\"} 0");
	has(t, "patchbridge_naks_total{project=\"group/project\"} 0");
	/* the daemon renders no milter family by itself */
	has_not(t, "patchbridge_milter_mails_seen_total");
	t = render(METRIC_MILTER);
	has(t, "patchbridge_milter_mails_seen_total 0");
	has_not(t, "patchbridge_replies");
}

static void test_histogram(void **state)
{
	const char *t;

	(void)state;
	metrics_observe1(MET_FORGE_DURATION, 0.02, "notes");
	metrics_observe1(MET_FORGE_DURATION, 0.3, "notes");
	metrics_observe1(MET_FORGE_DURATION, 100, "notes");
	t = render(METRIC_DAEMON);
	has(t, "# TYPE patchbridge_forge_request_duration_seconds histogram");
	has(t, "patchbridge_forge_request_duration_seconds_bucket{endpoint="
	       "\"notes\",le=\"0.01\"} 0");
	has(t, "patchbridge_forge_request_duration_seconds_bucket{endpoint="
	       "\"notes\",le=\"0.025\"} 1");
	has(t, "patchbridge_forge_request_duration_seconds_bucket{endpoint="
	       "\"notes\",le=\"0.5\"} 2");
	has(t, "patchbridge_forge_request_duration_seconds_bucket{endpoint="
	       "\"notes\",le=\"60\"} 2");
	has(t, "patchbridge_forge_request_duration_seconds_bucket{endpoint="
	       "\"notes\",le=\"+Inf\"} 3");
	has(t, "patchbridge_forge_request_duration_seconds_count{endpoint="
	       "\"notes\"} 3");
	assert_non_null(strstr(t, "patchbridge_forge_request_duration_seconds_"
				  "sum{endpoint=\"notes\"} 100.3"));
}

static void test_bounded_labels(void **state)
{
	char name[64];
	const char *t;
	int i;

	(void)state;
	/* a value off the fixed list */
	metrics_inc1(MET_REPLIES_IGNORED, "something new");
	/* bytes that would need escaping, or end the line */
	metrics_inc1(MET_REPLIES_APPLIED, "g/p\"} 1\n# evil\\");
	metrics_inc1(MET_REPLIES_APPLIED, "");
	t = render(METRIC_DAEMON);
	has(t, "patchbridge_replies_ignored_total{reason=\"_unknown\"} 1");
	has(t, "patchbridge_replies_applied_total{project=\"g/p___1___evil_"
	       "\"} 1");
	has(t, "patchbridge_replies_applied_total{project=\"_\"} 1");
	has_not(t, "# evil");
	/* past the family's cap (256): one more series, "_overflow" */
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "group/p%d", i);
		metrics_inc1(MET_SERIES_SENT, name);
	}
	t = render(METRIC_DAEMON);
	has(t, "patchbridge_series_sent_total{project=\"group/p255\"} 1");
	has_not(t, "project=\"group/p256\"");
	has(t, "patchbridge_series_sent_total{project=\"_overflow\"} 44");
}

static void test_wrong_arity_dropped(void **state)
{
	const char *t;

	(void)state;
	metrics_inc0(MET_REPLIES_APPLIED); /* needs a project */
	metrics_inc2(MET_LOOP_CYCLES, "a", "b"); /* takes none */
	metrics_inc1(MET_FORGE_DURATION, "notes"); /* histograms observe */
	t = render(METRIC_DAEMON);
	has_not(t, "patchbridge_replies_applied_total 1");
	has(t, "patchbridge_loop_cycles_total 0");
	has_not(t, "_count{endpoint=\"notes\"} 1");
}

/* What the milter writes, the daemon reads back as it was. */
static void test_milter_round_trip(void **state)
{
	char file[8192];
	const char *t;

	(void)state;
	metrics_start(METRIC_MILTER, "1.2.3");
	metrics_inc0(MET_MILTER_MAILS_SEEN);
	metrics_add0(MET_MILTER_MAILS_SEEN, 4);
	metrics_inc1(MET_MILTER_MAILS_CLASSIFIED, "reply");
	/* session.c's kind of a series posted to the list */
	metrics_inc1(MET_MILTER_MAILS_CLASSIFIED, "submission");
	metrics_inc1(MET_MILTER_MAILS_IGNORED, "not-bridged");
	metrics_add0(MET_MILTER_SPOOLED_BYTES, 12345);
	snprintf(file, sizeof(file), "%s", render(METRIC_MILTER));
	metrics_reset();
	assert_int_equal(metrics_load_milter(file, strlen(file)), 0);
	t = render(METRIC_MILTER);
	assert_string_equal(t, file);
	has(t, "patchbridge_milter_mails_seen_total 5");
	has(t, "patchbridge_milter_mails_classified_total{kind=\"reply\"} 1");
	has(t, "patchbridge_milter_mails_classified_total{kind="
	       "\"submission\"} 1");
	has(t, "patchbridge_milter_mails_ignored_total{reason="
	       "\"not-bridged\"} 1");
	has(t, "patchbridge_milter_spooled_bytes_total 12345");
	/* a new file replaces the families; the daemon's stay */
	metrics_inc0(MET_LOOP_CYCLES);
	assert_int_equal(load("patchbridge_milter_tempfails_total 7\n"), 0);
	t = render(METRIC_DAEMON | METRIC_MILTER);
	has(t, "patchbridge_milter_tempfails_total 7");
	has(t, "patchbridge_milter_mails_seen_total 0");
	has(t, "patchbridge_loop_cycles_total 1");
}

/* The milter's user writes the file: anything off the grammar refuses
 * the whole file, and what was loaded before stays. */
static void test_milter_file_strict(void **state)
{
	static const char *const bad[] = {
		/* not a milter family: the daemon's own are not for it */
		"patchbridge_replies_applied_total{project=\"x\"} 1\n",
		"patchbridge_milter_nosuch_total 1\n",
		/* labels: missing, misnamed, out of order, escaped, empty */
		"patchbridge_milter_mails_ignored_total 1\n",
		"patchbridge_milter_mails_ignored_total{kind=\"x\"} 1\n",
		"patchbridge_milter_mails_ignored_total{reason=\"a\\\"b\"} 1\n",
		"patchbridge_milter_mails_ignored_total{reason=\"\"} 1\n",
		"patchbridge_milter_mails_ignored_total{reason=\"x\",} 1\n",
		/* values: negative, fractional, exponent, NaN, huge,
		 * trailing bytes, a timestamp */
		"patchbridge_milter_tempfails_total -1\n",
		"patchbridge_milter_tempfails_total 1.5\n",
		"patchbridge_milter_tempfails_total 1e9\n",
		"patchbridge_milter_tempfails_total NaN\n",
		"patchbridge_milter_tempfails_total 99999999999999999999999\n",
		"patchbridge_milter_tempfails_total 1 1733220000\n",
		"patchbridge_milter_tempfails_total  1\n",
		"patchbridge_milter_tempfails_total\t1\n",
		"patchbridge_milter_tempfails_total\n",
		"\x01\n",
	};
	char big[METRICS_MILTER_FILE_MAX + 2];
	size_t i;

	(void)state;
	assert_int_equal(load("patchbridge_milter_tempfails_total 3\n"), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (load(bad[i]) != PB_EINVAL)
			fail_msg("accepted: %s", bad[i]);
		has(render(METRIC_MILTER),
		    "patchbridge_milter_tempfails_total 3");
	}
	/* a good line after a bad one: still the whole file refused */
	assert_int_equal(load("x 1\npatchbridge_milter_tempfails_total 9\n"),
			 PB_EINVAL);
	memset(big, '#', sizeof(big));
	assert_int_equal(metrics_load_milter(big, sizeof(big)), PB_EINVAL);
	/* comments, blank lines and CRLF are fine */
	assert_int_equal(load("# HELP x y\r\n\r\n"
			      "patchbridge_milter_tempfails_total 4\r\n"),
			 0);
	has(render(METRIC_MILTER), "patchbridge_milter_tempfails_total 4");
}

/* The milter's sight of the list's mail (health.h): each side of the
 * rule, and the line the operator reads. */
static void test_milter_blind(void **state)
{
	const int64_t sent = 1796000000; /* 2026-11-30T00:53:20Z */
	char why[PB_ERRMSG_MAX];
	struct buf text = BUF_INIT(METRICS_MILTER_FILE_MAX);

	(void)state;
	/* nothing sent: cannot tell */
	assert_int_equal(health_milter_blind(why, sizeof(why), sent, 0, 0), 0);
	assert_string_equal(why, "no mail of the bridge's reached the MTA yet "
				 "to tell by (the milter last saw one never)");
	/* sent, seen a minute before (it sees it before the MTA answers) */
	assert_int_equal(health_milter_blind(why, sizeof(why), sent + 3600,
					     sent, sent - 60),
			 0);
	/* not seen, but under 5 minutes: wait */
	assert_int_equal(health_milter_blind(why, sizeof(why), sent + 299, sent,
					     sent - 61),
			 0);
	/* not seen for 5 minutes: blind */
	assert_int_equal(health_milter_blind(why, sizeof(why), sent + 300, sent,
					     sent - 61),
			 1);
	assert_int_equal(
		health_milter_blind(why, sizeof(why), sent + 600, sent, 0), 1);
	assert_string_equal(
		why,
		"the milter is not seeing the list's mail: the bridge's last "
		"mail reached the MTA at 2026-11-30T00:53:20Z, 10 min ago, and "
		"the milter has seen none since (its last: never); is it "
		"running (systemctl status patchbridge-milter), and does "
		"Postfix call it for every mail (postconf smtpd_milters "
		"non_smtpd_milters; patchbridge check-config)?");
	/* the milter's file, as it writes it */
	metrics_set0(MET_MILTER_LAST_SEEN, (double)sent);
	assert_int_equal(metrics_render(&text, METRIC_MILTER), 0);
	assert_int_equal(health_milter_last_seen(text.data, text.len), sent);
	assert_int_equal(health_milter_last_seen("x 1\n", 4), 0);
	buf_release(&text);
}

static void test_docs(void **state)
{
	struct buf doc = BUF_INIT(1024 * 1024);
	size_t i;

	(void)state;
	assert_int_equal(metrics_doc_markdown(&doc), 0);
	for (i = 0; i < MET__COUNT; i++) {
		char cell[160];

		snprintf(cell, sizeof(cell), "| `%s` |",
			 metrics_def((enum metric_id)i)->name);
		assert_non_null(strstr(doc.data, cell));
	}
	buf_reset(&doc);
	assert_int_equal(metrics_doc_man(&doc), 0);
	assert_non_null(strstr(doc.data, ".TP\n\\&\\fBpatchbridge_ready\\fR"));
	buf_release(&doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_start_and_counters, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_histogram, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bounded_labels, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wrong_arity_dropped, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_milter_round_trip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_milter_file_strict, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_milter_blind, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_docs, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
