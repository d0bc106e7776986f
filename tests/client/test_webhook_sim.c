/*
 * The webhook receiver against the GitLab simulator's real deliveries.
 *
 * Run through run-with-sim.sh (PB_FORGESIM_URL).  Each test resets the
 * simulator, starts a receiver on 127.0.0.1 port 0, points a project hook
 * at it (POST /_sim/webhooks), makes something happen on the forge (a push
 * to MR !1, a note through the REST API), waits for the simulator's
 * delivery thread to go idle, and compares what the callback saw with the
 * simulator's own record of each delivery.
 */
#include "cmocka_all.h"
#include "simhttp.h"
#include "forge/http.h"
#include "forge/json.h"
#include "forge/webhook.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECRET "hook-secret-0123456789"
#define SIM_BODY_MAX (8 * 1024 * 1024)
#define EVENTS_MAX 16

static const char *sim_url;
static struct http_client *sim_http; /* the control API: no token */
static struct http_client *api_http; /* the REST API as alice */

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct webhook_event events[EVENTS_MAX];
static int nr_events;

/* The daemon's callback would copy the event onto its work queue. */
static int on_event(const struct webhook_event *ev, void *arg)
{
	pthread_mutex_lock(&ev_lock);
	if (nr_events < EVENTS_MAX)
		events[nr_events++] = *ev;
	pthread_mutex_unlock(&ev_lock);
	return 0;
}

static int event_count(void)
{
	int n;

	pthread_mutex_lock(&ev_lock);
	n = nr_events;
	pthread_mutex_unlock(&ev_lock);
	return n;
}

/* A copy of event i, taken under the lock. */
static struct webhook_event event_at(int i)
{
	struct webhook_event ev;

	pthread_mutex_lock(&ev_lock);
	ev = events[i];
	pthread_mutex_unlock(&ev_lock);
	return ev;
}

/*
 * HTTP to the simulator, through our own client.
 */

static long call(struct json_doc **out, struct http_client *c,
		 enum http_method m, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static long call(struct json_doc **out, struct http_client *c,
		 enum http_method m, const char *path, const char *fmt, ...)
{
	struct http_response resp;
	struct http_request req;
	struct buf body = BUF_INIT(1024 * 1024);
	char *url = xasprintf("%s%s", sim_url, path);
	long status;
	va_list ap;

	if (out)
		*out = NULL;
	memset(&req, 0, sizeof(req));
	req.method = m;
	req.url = url;
	if (fmt) {
		va_start(ap, fmt);
		assert_int_equal(buf_vaddf(&body, fmt, ap), 0);
		va_end(ap);
		req.body = body.data;
		req.body_len = body.len;
	}
	http_response_init(&resp, SIM_BODY_MAX);
	if (http_do(&resp, c, &req) != 0)
		fail_msg("%s failed: %s", path, err_msg());
	status = resp.status;
	if (status >= 400)
		fail_msg("%s: %ld %s", path, status, resp.body.data);
	if (out && json_parse(out, resp.body.data, resp.body.len, 64) != 0)
		fail_msg("%s: bad JSON: %s", path, err_msg());
	http_response_release(&resp);
	buf_release(&body);
	free(url);
	return status;
}

static void sim_wait_deliveries(void)
{
	struct json_doc *doc;
	int idle;

	call(&doc, sim_http, HTTP_POST, "/_sim/webhooks/wait",
	     "{\"timeout_s\":10}");
	assert_int_equal(json_get_bool(&idle, json_doc_root(doc), "idle"), 0);
	assert_true(idle);
	json_doc_free(doc);
}

/* Point a hook of group/project at the receiver, with this token. */
static void sim_add_hook(unsigned port, const char *token)
{
	call(NULL, sim_http, HTTP_POST, "/_sim/webhooks",
	     "{\"url\":\"http://127.0.0.1:%u/hooks/gitlab\",\"token\":\"%s\"}",
	     port, token);
}

/* Push a new commit to MR !1; returns the new head (malloc'd). */
static char *sim_push(const char *file)
{
	const struct json_value *v;
	struct json_doc *doc;
	char *head;
	int created;

	call(&doc, sim_http, HTTP_POST,
	     "/_sim/projects/1/merge_requests/1/push",
	     "{\"commits\":[{\"message\":\"add %s\",\"files\":"
	     "{\"%s\":\"new\\n\"}}]}",
	     file, file);
	assert_int_equal(json_get_bool(&created, json_doc_root(doc), "created"),
			 0);
	assert_true(created);
	assert_int_equal(json_get_obj(&v, json_doc_root(doc), "version"), 0);
	assert_int_equal(json_get_str(&head, v, "head_commit_sha"), 0);
	json_doc_free(doc);
	return head;
}

struct delivery {
	int64_t id;
	char *event;
	char *key; /* idempotency_key */
	int64_t response_status; /* 0 when none */
};

static void delivery_release(struct delivery *d)
{
	free(d->event);
	free(d->key);
	memset(d, 0, sizeof(*d));
}

/* The simulator's record of delivery i (0 = oldest); the count. */
static size_t sim_delivery(struct delivery *out, size_t i)
{
	const struct json_value *root, *d;
	struct json_doc *doc;
	size_t n;
	int has;

	memset(out, 0, sizeof(*out));
	call(&doc, sim_http, HTTP_GET, "/_sim/webhooks/deliveries", NULL);
	root = json_doc_root(doc);
	n = json_array_len(root);
	if (i < n) {
		d = json_array_at(root, i);
		assert_int_equal(json_get_int(&out->id, d, "id"), 0);
		assert_int_equal(json_get_str(&out->event, d, "event"), 0);
		assert_int_equal(json_get_str(&out->key, d, "idempotency_key"),
				 0);
		assert_int_equal(json_get_int_opt(&out->response_status, &has,
						  d, "response_status"),
				 0);
	}
	json_doc_free(doc);
	return n;
}

/*
 * Fixture: a fresh simulator and a fresh receiver.
 */

static int setup(void **state)
{
	struct webhook_opts o = {
		.listen = "127.0.0.1:0",
		.secret = SECRET,
		.timeout_s = 5,
		.on_event = on_event,
	};
	struct webhook *wh;

	pthread_mutex_lock(&ev_lock);
	nr_events = 0;
	pthread_mutex_unlock(&ev_lock);
	call(NULL, sim_http, HTTP_POST, "/_sim/reset", "{}");
	if (webhook_new(&wh, &o) != 0) {
		fprintf(stderr, "webhook_new: %s\n", err_msg());
		return -1;
	}
	*state = wh;
	return 0;
}

static int teardown(void **state)
{
	webhook_free(*state);
	return 0;
}

static void test_push_then_note(void **state)
{
	struct webhook *wh = *state;
	struct webhook_stats st;
	struct webhook_event ev;
	struct delivery d;
	struct json_doc *doc;
	int64_t note_id;
	char *head, *discussion, *path, *mr_key;

	sim_add_hook(webhook_port(wh), SECRET);

	/* A push: an MR event that says code changed, with the new head. */
	head = sim_push("src/webhook-v2.c");
	sim_wait_deliveries();
	assert_int_equal(event_count(), 1);
	ev = event_at(0);
	assert_int_equal(ev.kind, WEBHOOK_MR);
	assert_string_equal(ev.project, "group/project");
	assert_int_equal(ev.project_id, 1);
	assert_int_equal(ev.iid, 1);
	assert_int_equal(ev.action, WEBHOOK_ACTION_UPDATE);
	assert_true(ev.code_changed);
	assert_string_equal(ev.last_commit, head);
	assert_int_equal(sim_delivery(&d, 0), 1);
	assert_string_equal(d.event, "Merge Request Hook");
	assert_int_equal(d.response_status, 200);
	assert_string_equal(ev.delivery, d.key);
	mr_key = xstrdup(ev.delivery);

	/* A comment on the forge: a note event naming note and thread. */
	call(&doc, api_http, HTTP_POST,
	     "/api/v4/projects/1/merge_requests/1/discussions",
	     "{\"body\":\"Why louder?\"}");
	assert_int_equal(json_get_str(&discussion, json_doc_root(doc), "id"),
			 0);
	assert_int_equal(
		json_get_int(
			&note_id,
			json_array_at(json_member(json_doc_root(doc), "notes"),
				      0),
			"id"),
		0);
	json_doc_free(doc);
	sim_wait_deliveries();
	assert_int_equal(event_count(), 2);
	ev = event_at(1);
	assert_int_equal(ev.kind, WEBHOOK_NOTE);
	assert_string_equal(ev.project, "group/project");
	assert_int_equal(ev.iid, 1);
	assert_int_equal(ev.note_id, note_id);
	assert_string_equal(ev.discussion_id, discussion);
	assert_string_equal(ev.noteable_type, "MergeRequest");
	assert_int_equal(ev.action, WEBHOOK_ACTION_CREATE);
	assert_false(ev.code_changed);
	assert_false(ev.system_note);
	assert_string_equal(ev.last_commit, head);

	/* "Resend request" on the push: acknowledged, not queued again. */
	path = xasprintf("/_sim/webhooks/deliveries/%lld/redeliver",
			 (long long)d.id);
	call(NULL, sim_http, HTTP_POST, path, "{}");
	sim_wait_deliveries();
	delivery_release(&d);
	assert_int_equal(sim_delivery(&d, 2), 3);
	assert_int_equal(d.response_status, 200);
	assert_string_equal(d.key, mr_key);
	assert_int_equal(event_count(), 2);
	webhook_stats(&st, wh);
	assert_int_equal(st.queued, 2);
	assert_int_equal(st.duplicates, 1);
	assert_int_equal(st.unauthorized, 0);

	delivery_release(&d);
	free(path);
	free(mr_key);
	free(discussion);
	free(head);
}

static void test_wrong_token(void **state)
{
	struct webhook *wh = *state;
	struct webhook_stats st;
	struct delivery d;
	char *head;

	sim_add_hook(webhook_port(wh), "not-" SECRET);
	head = sim_push("src/unauthorised.c");
	sim_wait_deliveries();
	assert_int_equal(sim_delivery(&d, 0), 1);
	assert_string_equal(d.event, "Merge Request Hook");
	assert_int_equal(d.response_status, 401);
	assert_int_equal(event_count(), 0);
	webhook_stats(&st, wh);
	assert_int_equal(st.unauthorized, 1);
	assert_int_equal(st.queued, 0);
	delivery_release(&d);
	free(head);
}

static void test_no_token(void **state)
{
	struct webhook *wh = *state;
	struct delivery d;

	/* A hook without a secret sends no X-Gitlab-Token at all. */
	sim_add_hook(webhook_port(wh), "");
	call(NULL, api_http, HTTP_POST,
	     "/api/v4/projects/1/merge_requests/1/notes",
	     "{\"body\":\"hello\"}");
	sim_wait_deliveries();
	assert_int_equal(sim_delivery(&d, 0), 1);
	assert_string_equal(d.event, "Note Hook");
	assert_int_equal(d.response_status, 401);
	assert_int_equal(event_count(), 0);
	delivery_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_push_then_note, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wrong_token, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_token, setup, teardown),
	};
	struct http_opts ho;
	int rc;

	if (simhttp_open(&sim_url, &sim_http))
		return 1;
	memset(&ho, 0, sizeof(ho));
	ho.timeout_ms = 30000;
	ho.token = "user-token";
	if (http_client_new(&api_http, &ho) != 0) {
		fprintf(stderr, "http_client_new: %s\n", err_msg());
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	http_client_free(api_http);
	http_client_free(sim_http);
	return rc;
}
