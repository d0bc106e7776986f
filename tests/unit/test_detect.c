/*
 * detect_poll() and detect_project_pin() against the recording fake forge
 * (fakeforge.h) and a real store: what a listing queues, the cursors it
 * keeps for `status`, the polls metric by result, and a renamed project.
 */
#include "cmocka_all.h"
#include "core/config.h"
#include "core/metrics.h"
#include "fakeforge.h"
#include "metricval.h"
#include "outbound/detect.h"
#include "outbound/workq.h"
#include "storebed.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROJECT "group/project"
#define CONF                                    \
	"[bridge]\n"                            \
	"address = bridge@example.org\n"        \
	"domain = example.org\n"                \
	"list_address = list@example.org\n"     \
	"[forge]\n"                             \
	"url = https://gitlab.example.org\n"    \
	"token_file = /etc/patchbridge/token\n" \
	"[inbound]\n"                           \
	"owners_file = /etc/patchbridge/owners.yaml\n"

struct bed {
	struct fakeforge ff;
	struct store *st;
	struct config *cfg;
	struct detect *d;
	struct workq *q;
	struct forge_mr mrs[3];
};

static char dir[512];
static unsigned seq;

static int group_setup(void **state)
{
	(void)state;
	return storebed_tmpdir(dir, sizeof(dir), "detect");
}

static int group_teardown(void **state)
{
	(void)state;
	return storebed_tmpdir_remove(dir);
}

static void start(struct bed *b, const char *project_text)
{
	struct strlist errs = STRLIST_INIT;
	struct buf text = BUF_INIT(1 << 16);

	buf_adds(&text, CONF);
	buf_adds(&text, project_text);
	if (config_load_mem(&b->cfg, &errs, "t.conf", text.data, text.len))
		fail_msg("config: %s", errs.nr ? errs.items[0] : err_msg());
	strlist_release(&errs);
	buf_release(&text);
	assert_int_equal(detect_new(&b->d, b->cfg, b->st, &b->ff.base), 0);
}

static int setup(void **state)
{
	struct bed *b = calloc(1, sizeof(*b));
	char name[32];
	size_t i;

	if (!b)
		return -1;
	snprintf(name, sizeof(name), "detect%u", seq++);
	if (storebed_open(&b->st, storebed_fresh(name), STORE_RW, 5000))
		fail_msg("store: %s", err_msg());
	fakeforge_init(&b->ff);
	assert_int_equal(workq_new(&b->q, 64), 0);
	metrics_reset();
	for (i = 0; i < 3; i++) {
		b->mrs[i].iid = (int64_t)i + 1;
		b->mrs[i].updated_ms = 1700000000000 + (int64_t)i * 1000;
		b->mrs[i].state = (char *)"opened";
	}
	b->mrs[1].draft = 1;
	b->ff.mrs = b->mrs;
	b->ff.nr_mrs = 3;
	*state = b;
	return 0;
}

static int teardown(void **state)
{
	struct bed *b = *state;

	detect_free(b->d);
	config_free(b->cfg);
	workq_free(b->q);
	fakeforge_release(&b->ff);
	store_free(b->st);
	free(b);
	return 0;
}

static void cursor(struct buf *out, struct bed *b, const char *prefix)
{
	char name[256];

	snprintf(name, sizeof(name), "%s%s", prefix, PROJECT);
	buf_reset(out);
	if (store_cursor_get(out, b->st, name))
		buf_reset(out);
}

#define POLLS(r) \
	"patchbridge_polls_total{project=\"" PROJECT "\",result=\"" r "\"}"

static void poll_queues_open_mrs_but_drafts(void **state)
{
	struct bed *b = *state;
	struct buf v = BUF_INIT(4096);
	struct workq_item it;
	const struct fake_call *c;
	size_t queued = 0;

	start(b, "[project \"" PROJECT "\"]\n");
	assert_int_equal(detect_poll(b->d, b->q, &queued), 0);
	assert_int_equal(queued, 2);
	assert_int_equal(workq_len(b->q), 2);
	assert_int_equal(workq_pop(&it, b->q), 0);
	assert_string_equal(it.project, PROJECT);
	assert_int_equal(it.iid, 1);
	assert_string_equal(it.reason, "poll");
	assert_int_equal(workq_pop(&it, b->q), 0);
	assert_int_equal(it.iid, 3);
	c = fakeforge_call(&b->ff, FAKE_LIST_MRS, 0);
	assert_non_null(c);
	assert_string_equal(c->arg, "opened");
	assert_int_equal(metric(POLLS("ok")), 1);

	/* The id is kept; the listing's time and no error for status. */
	cursor(&v, b, DETECT_PROJECT_ID_PREFIX);
	assert_string_equal(v.data, "42");
	cursor(&v, b, DETECT_TIME_PREFIX);
	assert_true(v.len > 0);
	cursor(&v, b, DETECT_ERROR_PREFIX);
	assert_int_equal(v.len, 0);

	/* Listed again: the same MRs are not queued twice. */
	assert_int_equal(detect_poll(b->d, b->q, &queued), 0);
	assert_int_equal(queued, 0);
	assert_int_equal(metric(POLLS("ok")), 2);
	buf_release(&v);
}

static void poll_queues_drafts_when_asked(void **state)
{
	struct bed *b = *state;
	size_t queued = 0;

	start(b, "[project \"" PROJECT "\"]\nskip_drafts = no\n");
	assert_int_equal(detect_poll(b->d, b->q, &queued), 0);
	assert_int_equal(queued, 3);
}

static void poll_disabled_project_not_listed(void **state)
{
	struct bed *b = *state;
	size_t queued = 0;

	start(b, "[project \"" PROJECT "\"]\nenabled = no\n");
	assert_int_equal(detect_poll(b->d, b->q, &queued), 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_LIST_MRS), 0);
}

static void poll_5xx_kept_for_status(void **state)
{
	struct bed *b = *state;
	struct buf v = BUF_INIT(4096);
	size_t queued = 0;

	start(b, "[project \"" PROJECT "\"]\n");
	fakeforge_script(&b->ff, FAKE_LIST_MRS, FAKE_5XX, 0, "502 Bad Gateway");
	assert_int_equal(detect_poll(b->d, b->q, &queued), PB_ETEMP);
	assert_int_equal(queued, 0);
	cursor(&v, b, DETECT_ERROR_PREFIX);
	assert_non_null(strstr(v.data, "502 Bad Gateway"));
	assert_int_equal(metric(POLLS("unreachable")), 1);
	assert_true(metric(POLLS("ok")) <= 0);

	/* The next poll works and clears the error. */
	assert_int_equal(detect_poll(b->d, b->q, &queued), 0);
	assert_int_equal(queued, 2);
	cursor(&v, b, DETECT_ERROR_PREFIX);
	assert_int_equal(v.len, 0);
	buf_release(&v);
}

static void poll_401_token_counts_as_auth(void **state)
{
	struct bed *b = *state;

	start(b, "[project \"" PROJECT "\"]\n");
	fakeforge_script(&b->ff, FAKE_LIST_MRS, FAKE_TOKEN, 0,
			 "Token is expired");
	assert_int_equal(detect_poll(b->d, b->q, NULL), PB_ETEMP);
	assert_int_equal(metric(POLLS("auth")), 1);
	assert_true(metric(POLLS("unreachable")) <= 0);
}

static void pin_renamed_project(void **state)
{
	struct bed *b = *state;
	struct buf v = BUF_INIT(4096);
	int told = 0;

	b->ff.project_id = 7;
	assert_int_equal(detect_project_pin(b->st, &b->ff.base, PROJECT, &told),
			 0);
	cursor(&v, b, DETECT_PROJECT_ID_PREFIX);
	assert_string_equal(v.data, "7");
	cursor(&v, b, DETECT_MOVED_PREFIX);
	assert_int_equal(v.len, 0);
	assert_int_equal(told, 0);

	b->ff.project_path = "newgroup/project";
	assert_int_equal(detect_project_pin(b->st, &b->ff.base, PROJECT, &told),
			 0);
	cursor(&v, b, DETECT_MOVED_PREFIX);
	assert_string_equal(v.data, "newgroup/project");
	assert_int_equal(told, 1);

	b->ff.project_path = NULL;
	assert_int_equal(detect_project_pin(b->st, &b->ff.base, PROJECT, &told),
			 0);
	cursor(&v, b, DETECT_MOVED_PREFIX);
	assert_int_equal(v.len, 0);

	fakeforge_script(&b->ff, FAKE_GET_PROJECT, FAKE_FAIL, PB_ENOTFOUND,
			 "404 Project Not Found");
	assert_int_equal(detect_project_pin(b->st, &b->ff.base, PROJECT, &told),
			 PB_ENOTFOUND);
	buf_release(&v);
}

/* The test helper metric() reads a family without labels from its
 * sample line, not from its # HELP or # TYPE line. */
static void metric_reads_a_family_without_labels(void **state)
{
	(void)state;
	metrics_add0(MET_LOOP_CYCLES, 3);
	assert_int_equal(metric("patchbridge_loop_cycles_total"), 3);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(poll_queues_open_mrs_but_drafts),
		T(poll_queues_drafts_when_asked),
		T(poll_disabled_project_not_listed),
		T(poll_5xx_kept_for_status),
		T(poll_401_token_counts_as_auth),
		T(pin_renamed_project),
		T(metric_reads_a_family_without_labels),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
