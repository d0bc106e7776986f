/*
 * The GitLab forge client against the simulator (tests/forgesim).
 *
 * Run through run-with-sim.sh, which exports PB_FORGESIM_URL.  Each test
 * starts from POST /_sim/reset (the default seed: group/project, MR !1 by
 * alice, tokens admin-token, user-token, bob-token, …), steers faults and
 * rate limits through /_sim/, and checks the simulator's state and request
 * log afterwards.  Waits go through a recording sleep hook, so no test
 * asserts on wall-clock time; only the connection-refused test really
 * sleeps (the listener must come back).
 */
#include "cmocka_all.h"
#include "simhttp.h"
#include "forge/forge.h"
#include "forge/gitlab.h"
#include "forge/http.h"
#include "forge/json.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROJECT "group/project"
#define SIM_BODY_MAX (8 * 1024 * 1024)

static const char *sim_url;
static struct http_client *sim_http;

/*
 * The control API, through our own http module.
 */

/* method path [json body]; returns the HTTP status, *out the parsed body. */
static long sim_call(struct json_doc **out, enum http_method m,
		     const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static long sim_call(struct json_doc **out, enum http_method m,
		     const char *path, const char *fmt, ...)
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
	if (http_do(&resp, sim_http, &req) != 0)
		fail_msg("control call %s failed: %s", path, err_msg());
	status = resp.status;
	if (status >= 400)
		fail_msg("control call %s: %ld %s", path, status,
			 resp.body.data);
	if (out && json_parse(out, resp.body.data, resp.body.len, 64) != 0)
		fail_msg("control call %s: bad JSON: %s", path, err_msg());
	http_response_release(&resp);
	buf_release(&body);
	free(url);
	return status;
}

/* After a refusal: wait (up to 10 s) until the listener is back. */
static void sim_wait_up(void)
{
	struct http_response resp;
	struct http_request req;
	char *url = xasprintf("%s/_sim/health", sim_url);
	int i;

	memset(&req, 0, sizeof(req));
	req.method = HTTP_GET;
	req.url = url;
	http_response_init(&resp, 4096);
	for (i = 0; i < 100; i++) {
		struct timespec ts = { 0, 100 * 1000000L };

		if (http_do(&resp, sim_http, &req) == 0 && resp.status == 200)
			break;
		nanosleep(&ts, NULL);
	}
	assert_true(i < 100);
	http_response_release(&resp);
	free(url);
}

static void sim_post(const char *path, const char *json)
{
	sim_call(NULL, HTTP_POST, path, "%s", json);
}

static void sim_fault(const char *json)
{
	sim_post("/_sim/faults", json);
}

static void sim_clear_requests(void)
{
	sim_call(NULL, HTTP_DELETE, "/_sim/requests", NULL);
}

/* Requests in the log with this method whose path ends with suffix (and,
 * when status > 0, that got this status). */
static int sim_count_requests(const char *method, const char *suffix,
			      long status)
{
	const struct json_value *root, *e;
	struct json_doc *doc;
	size_t i, n, sl = strlen(suffix);
	int64_t st;
	int has, count = 0;
	char *m, *p;

	sim_call(&doc, HTTP_GET, "/_sim/requests", NULL);
	root = json_doc_root(doc);
	n = json_array_len(root);
	for (i = 0; i < n; i++) {
		e = json_array_at(root, i);
		assert_int_equal(json_get_str(&m, e, "method"), 0);
		assert_int_equal(json_get_str(&p, e, "path"), 0);
		assert_int_equal(json_get_int_opt(&st, &has, e, "status"), 0);
		if (!strcmp(m, method) && strlen(p) >= sl &&
		    !strcmp(p + strlen(p) - sl, suffix) &&
		    (status <= 0 || (has && st == status)))
			count++;
		free(m);
		free(p);
	}
	json_doc_free(doc);
	return count;
}

/* Notes of MR iid (of the seeded project) whose body contains needle. */
static int sim_count_notes(int64_t iid, const char *needle)
{
	const struct json_value *root, *projects, *mrs, *mr, *ds, *d, *ns, *nt;
	struct json_doc *doc;
	size_t i, j, k;
	int64_t v;
	int count = 0;
	char *body;

	sim_call(&doc, HTTP_GET, "/_sim/state", NULL);
	root = json_doc_root(doc);
	assert_int_equal(json_get_array(&projects, root, "projects"), 0);
	assert_int_equal(json_get_array(&mrs, json_array_at(projects, 0),
					"merge_requests"),
			 0);
	for (i = 0; i < json_array_len(mrs); i++) {
		mr = json_array_at(mrs, i);
		assert_int_equal(json_get_int(&v, mr, "iid"), 0);
		if (v != iid)
			continue;
		assert_int_equal(json_get_array(&ds, mr, "discussions"), 0);
		for (j = 0; j < json_array_len(ds); j++) {
			d = json_array_at(ds, j);
			assert_int_equal(json_get_array(&ns, d, "notes"), 0);
			for (k = 0; k < json_array_len(ns); k++) {
				nt = json_array_at(ns, k);
				assert_int_equal(
					json_get_str(&body, nt, "body"), 0);
				if (strstr(body, needle))
					count++;
				free(body);
			}
		}
	}
	json_doc_free(doc);
	return count;
}

/* The seeded MR's labels, comma-joined, from /_sim/state. */
static char *sim_labels(void)
{
	const struct json_value *projects, *mrs, *labels;
	struct json_doc *doc;
	struct buf out = BUF_INIT(4096);
	size_t i;
	char *s;

	sim_call(&doc, HTTP_GET, "/_sim/state", NULL);
	assert_int_equal(
		json_get_array(&projects, json_doc_root(doc), "projects"), 0);
	assert_int_equal(json_get_array(&mrs, json_array_at(projects, 0),
					"merge_requests"),
			 0);
	assert_int_equal(
		json_get_array(&labels, json_array_at(mrs, 0), "labels"), 0);
	for (i = 0; i < json_array_len(labels); i++) {
		assert_int_equal(json_value_str(&s, json_array_at(labels, i),
						"label"),
				 0);
		buf_addf(&out, "%s%s", i ? "," : "", s);
		free(s);
	}
	json_doc_free(doc);
	return buf_detach(&out, NULL);
}

/* A new branch with one commit and an MR from it; returns nothing. */
static void sim_new_mr(int n)
{
	char path[64];

	snprintf(path, sizeof(path), "/_sim/projects/1/commits");
	sim_call(NULL, HTTP_POST, path,
		 "{\"branch\":\"topic-%d\",\"start\":\"main\",\"commits\":"
		 "[{\"message\":\"topic %d\",\"files\":{\"topic-%d.txt\":"
		 "\"%d\\n\"}}]}",
		 n, n, n, n);
	sim_call(NULL, HTTP_POST, "/_sim/projects/1/merge_requests",
		 "{\"source_branch\":\"topic-%d\",\"author\":\"alice\","
		 "\"title\":\"Topic %d\"}",
		 n, n);
}

/*
 * The client under test, with recording hooks.
 */

struct hooks {
	int64_t delays[64];
	int nr;
	int real_sleep; /* really wait (only where the sim needs it) */
	const char *on_sleep; /* a control call to make at the first wait */
	const char *on_sleep_body;
};

/* The daemon's stop flag, as a signal handler would set it. */
static volatile sig_atomic_t stop_flag;
static int stop_at_sleep; /* set stop_flag at the next wait */

static void hook_sleep(void *arg, int64_t ms)
{
	struct hooks *h = arg;

	if (stop_at_sleep)
		stop_flag = 1;

	if (h->nr < 64)
		h->delays[h->nr] = ms;
	h->nr++;
	if (h->on_sleep) {
		sim_post(h->on_sleep, h->on_sleep_body);
		h->on_sleep = NULL;
	}
	if (h->real_sleep) {
		struct timespec ts = { (time_t)(ms / 1000),
				       (long)(ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
}

static uint32_t hook_random(void *arg)
{
	return 0; /* no jitter: delays are exactly base * 2^(n-1) / 2 */
}

struct client_opts {
	const char *token;
	int max_retries;
	long timeout_ms;
	size_t body_max;
	int per_page;
};

static struct forge *client(const struct client_opts *co, struct hooks *h)
{
	struct forge_gitlab_opts o;
	struct forge *f = NULL;

	memset(&o, 0, sizeof(o));
	o.base_url = sim_url;
	o.token = co->token ? co->token : "admin-token";
	o.max_retries = co->max_retries;
	o.retry_base_ms = 100;
	o.retry_max_ms = 5000;
	o.connect_timeout_ms = 2000;
	o.timeout_ms = co->timeout_ms ? co->timeout_ms : 10000;
	o.body_max = co->body_max;
	o.per_page = co->per_page;
	o.sleep_ms = hook_sleep;
	o.random = hook_random;
	o.hook_arg = h;
	if (forge_gitlab_new(&f, &o) != 0)
		fail_msg("forge_gitlab_new: %s", err_msg());
	return f;
}

static struct forge *simple_client(const char *token, struct hooks *h)
{
	struct client_opts co = { token, 3, 0, 0, 0 };

	memset(h, 0, sizeof(*h));
	return client(&co, h);
}

static int reset(void **state)
{
	sim_post("/_sim/reset", "{}");
	return 0;
}

/*
 * Tests.
 */

struct mr_seen {
	int64_t iids[64];
	int nr;
};

static int collect_mr(const struct forge_mr *mr, void *arg)
{
	struct mr_seen *s = arg;

	assert_non_null(mr->title);
	assert_true(mr->updated_ms > 0);
	if (s->nr < 64)
		s->iids[s->nr] = mr->iid;
	s->nr++;
	return 0;
}

static void test_list_mrs_paginates_and_dedups(void **state)
{
	struct forge_mr_query q = { NULL, 60000, 2 };
	struct forge_mr_cursor cur;
	struct mr_seen seen = { { 0 }, 0 };
	struct forge_note note;
	struct forge *f;
	struct hooks h;
	int64_t wm;
	int i;

	for (i = 2; i <= 5; i++)
		sim_new_mr(i);
	f = simple_client("user-token", &h);
	forge_mr_cursor_init(&cur);

	sim_clear_requests();
	assert_int_equal(
		forge_list_mrs(f, PROJECT, &cur, &q, collect_mr, &seen), 0);
	/* Five MRs, two per page: three pages, by Link rel="next". */
	assert_int_equal(seen.nr, 5);
	for (i = 0; i < 5; i++)
		assert_int_equal(seen.iids[i], i + 1); /* updated_at order */
	assert_int_equal(sim_count_requests("GET", "/merge_requests", 200), 3);
	assert_true(cur.watermark_ms > 0);
	wm = cur.watermark_ms;

	/* The overlap re-reads them all; nothing is reported twice. */
	seen.nr = 0;
	assert_int_equal(
		forge_list_mrs(f, PROJECT, &cur, &q, collect_mr, &seen), 0);
	assert_int_equal(seen.nr, 0);
	assert_int_equal(cur.watermark_ms, wm);

	/* A comment bumps MR !3 (past ThrottledTouch's minute since its
	 * creation): only it comes again. */
	sim_post("/_sim/time", "{\"advance_s\":61}");
	assert_int_equal(forge_create_note(&note, f, PROJECT, 3, "bump", NULL),
			 0);
	forge_note_release(&note);
	assert_int_equal(
		forge_list_mrs(f, PROJECT, &cur, &q, collect_mr, &seen), 0);
	assert_int_equal(seen.nr, 1);
	assert_int_equal(seen.iids[0], 3);
	assert_true(cur.watermark_ms > wm);

	forge_mr_cursor_release(&cur);
	forge_free(f);
}

static void test_notes_paginate(void **state)
{
	struct forge_note_query q = { "asc", "created_at", 2, 0, 0 };
	struct forge_note_list list;
	struct forge_note note;
	struct forge *f;
	struct hooks h;
	char body[32];
	size_t i, user = 0;

	f = simple_client("user-token", &h);
	for (i = 0; i < 5; i++) {
		snprintf(body, sizeof(body), "note %zu", i);
		assert_int_equal(
			forge_create_note(&note, f, PROJECT, 1, body, NULL), 0);
		assert_null(note.type);
		assert_string_equal(note.author.username, "alice");
		forge_note_release(&note);
	}
	sim_clear_requests();
	assert_int_equal(forge_list_notes(&list, f, PROJECT, 1, &q), 0);
	assert_true(sim_count_requests("GET", "/merge_requests/1/notes", 200) >=
		    3);
	for (i = 0; i < list.nr; i++) {
		if (list.items[i].system)
			continue;
		snprintf(body, sizeof(body), "note %zu", user++);
		assert_string_equal(list.items[i].body, body);
	}
	assert_int_equal(user, 5);
	forge_note_list_release(&list);

	/* A page limit the caller sets is honoured. */
	q.max_pages = 1;
	assert_int_equal(forge_list_notes(&list, f, PROJECT, 1, &q), 0);
	assert_int_equal(list.nr, 2);
	forge_note_list_release(&list);

	/* Newest first, down to the first note updated before a time: the
	 * reading stops there (its page is the last one asked for). */
	q.sort = "desc";
	q.order_by = "updated_at";
	q.max_pages = 0;
	assert_int_equal(forge_list_notes(&list, f, PROJECT, 1, &q), 0);
	assert_true(list.nr >= 5);
	assert_int_equal(forge_time_parse(&q.stop_before_ms,
					  list.items[2].updated_at),
			 0);
	forge_note_list_release(&list);
	sim_clear_requests();
	assert_int_equal(forge_list_notes(&list, f, PROJECT, 1, &q), 0);
	assert_int_equal(list.nr, 4); /* 4, 3, 2 (the time), 1 (before) */
	assert_string_equal(list.items[0].body, "note 4");
	assert_string_equal(list.items[3].body, "note 1");
	assert_int_equal(
		sim_count_requests("GET", "/merge_requests/1/notes", 200), 2);
	forge_note_list_release(&list);
	forge_free(f);
}

/*
 * The other origin: a listening socket on 127.0.0.1 that nobody should
 * ever connect to.  A connection completes in the kernel without
 * accept(), so one made shows up in the accept queue afterwards.
 */
static int trap_listen(unsigned *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static int trap_connections(int fd)
{
	int n = 0, c;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while ((c = accept(fd, NULL, NULL)) >= 0) {
		close(c);
		n++;
	}
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	return n;
}

/*
 * GitLab builds Link from its external_url: a bridge that reaches it on
 * another name or port (behind a proxy) gets next-page links to another
 * origin.  A 250-MR list and a 3-page note list are read whole on the
 * configured URL, and nothing goes to the other origin.
 */
static void test_external_url_elsewhere(void **state)
{
	struct forge_note_query nq = { "asc", "created_at", 20, 0, 0 };
	struct forge_mr_query q = { NULL, 0, 0 };
	struct forge_mr_cursor cur;
	struct mr_seen seen = { { 0 }, 0 };
	struct forge_note_list notes;
	struct forge_note note;
	struct forge *f;
	struct hooks h;
	unsigned port;
	char body[32];
	size_t i, user = 0;
	int trap;

	trap = trap_listen(&port);
	sim_call(NULL, HTTP_PUT, "/_sim/settings",
		 "{\"external_url\":\"http://127.0.0.1:%u\"}", port);
	sim_post("/_sim/projects/1/merge_requests/1/clone", "{\"count\":249}");
	f = simple_client("user-token", &h);
	for (i = 0; i < 45; i++) {
		snprintf(body, sizeof(body), "note %zu", i);
		assert_int_equal(
			forge_create_note(&note, f, PROJECT, 1, body, NULL), 0);
		forge_note_release(&note);
	}

	sim_clear_requests();
	forge_mr_cursor_init(&cur);
	assert_int_equal(
		forge_list_mrs(f, PROJECT, &cur, &q, collect_mr, &seen), 0);
	assert_int_equal(seen.nr, 250);
	assert_int_equal(sim_count_requests("GET", "/merge_requests", 200), 3);
	forge_mr_cursor_release(&cur);

	assert_int_equal(forge_list_notes(&notes, f, PROJECT, 1, &nq), 0);
	assert_int_equal(
		sim_count_requests("GET", "/merge_requests/1/notes", 200), 3);
	for (i = 0; i < notes.nr; i++) {
		if (notes.items[i].system)
			continue;
		snprintf(body, sizeof(body), "note %zu", user++);
		assert_string_equal(notes.items[i].body, body);
	}
	assert_int_equal(user, 45);
	forge_note_list_release(&notes);

	/* Not one connection to the other origin: the token stayed. */
	assert_int_equal(trap_connections(trap), 0);
	close(trap);
	forge_free(f);
}

/* A note's visibility: internal, the older confidential, or - when the
 * forge does not say - internal (fail closed). */
static void test_note_visibility(void **state)
{
	struct forge_note_list notes;
	struct forge *f;
	struct hooks h;

	sim_fault("{\"kind\":\"error\",\"status\":200,\"method\":\"GET\","
		  "\"path\":\"/merge_requests/1/notes$\","
		  "\"content_type\":\"application/json\",\"body\":"
		  "\"[{\\\"id\\\":1,\\\"body\\\":\\\"a\\\",\\\"author\\\":"
		  "{\\\"id\\\":2,\\\"username\\\":\\\"alice\\\"},"
		  "\\\"internal\\\":false,\\\"confidential\\\":false},"
		  "{\\\"id\\\":2,\\\"body\\\":\\\"b\\\",\\\"author\\\":"
		  "{\\\"id\\\":2,\\\"username\\\":\\\"alice\\\"},"
		  "\\\"confidential\\\":true},"
		  "{\\\"id\\\":3,\\\"body\\\":\\\"c\\\",\\\"author\\\":"
		  "{\\\"id\\\":2,\\\"username\\\":\\\"alice\\\"}},"
		  "{\\\"id\\\":4,\\\"body\\\":\\\"d\\\",\\\"author\\\":"
		  "{\\\"id\\\":2,\\\"username\\\":\\\"alice\\\"},"
		  "\\\"internal\\\":null,\\\"confidential\\\":false},"
		  "{\\\"id\\\":5,\\\"body\\\":\\\"e\\\",\\\"author\\\":"
		  "{\\\"id\\\":2,\\\"username\\\":\\\"alice\\\"},"
		  "\\\"internal\\\":true}]\"}");
	f = simple_client("user-token", &h);
	assert_int_equal(forge_list_notes(&notes, f, PROJECT, 1, NULL), 0);
	assert_int_equal(notes.nr, 5);
	assert_int_equal(notes.items[0].internal, 0);
	assert_int_equal(notes.items[1].internal, 1);
	assert_int_equal(notes.items[2].internal, 1); /* not said */
	assert_int_equal(notes.items[3].internal, 1); /* null */
	assert_int_equal(notes.items[4].internal, 1);
	forge_note_list_release(&notes);
	forge_free(f);
}

/* GitLab sends a version's diffs all at once (limits: false): one past
 * the response cap fails with a message naming the cap. */
static void test_huge_version(void **state)
{
	struct client_opts co = { "user-token", 0, 0, 64 * 1024, 0 };
	struct forge_version_list vl;
	struct forge_version v;
	struct forge *f;
	struct hooks h;
	struct buf big = BUF_INIT(1024 * 1024);
	int i;

	for (i = 0; i < 4000; i++)
		buf_addf(&big, "line %d of a generated table\\n", i);
	sim_call(NULL, HTTP_POST, "/_sim/projects/1/merge_requests/1/push",
		 "{\"commits\":[{\"message\":\"big\",\"files\":"
		 "{\"big.txt\":\"%s\"}}]}",
		 big.data);
	buf_release(&big);
	memset(&h, 0, sizeof(h));
	f = client(&co, &h);
	assert_int_equal(forge_list_versions(&vl, f, PROJECT, 1), 0);
	assert_int_equal(forge_get_version(&v, f, PROJECT, 1, vl.items[0].id),
			 PB_ELIMIT);
	assert_non_null(strstr(err_msg(), "max_response_size"));
	assert_non_null(strstr(err_msg(), "65536"));
	forge_version_list_release(&vl);
	forge_free(f);
}

static void test_get_mr_and_versions(void **state)
{
	struct forge_version_list vl;
	struct forge_version v;
	struct forge_mr mr;
	struct forge *f;
	struct hooks h;

	f = simple_client("user-token", &h);
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	assert_int_equal(mr.iid, 1);
	assert_int_equal(mr.id, 101);
	assert_string_equal(mr.title, "Greet more loudly");
	assert_string_equal(mr.author.username, "alice");
	assert_non_null(mr.head_sha);
	assert_string_equal(mr.head_sha, mr.sha);

	/* Push a second revision: versions come newest first. */
	sim_post("/_sim/projects/1/merge_requests/1/push",
		 "{\"commits\":[{\"message\":\"v2\",\"files\":"
		 "{\"v2.txt\":\"two\\n\"}}]}");
	assert_int_equal(forge_list_versions(&vl, f, PROJECT, 1), 0);
	assert_int_equal(vl.nr, 2);
	assert_true(vl.items[0].id > vl.items[1].id);
	assert_string_equal(vl.items[1].head_sha, mr.head_sha);
	assert_int_equal(vl.items[0].nr_commits, 0);

	assert_int_equal(forge_get_version(&v, f, PROJECT, 1, vl.items[1].id),
			 0);
	assert_int_equal(v.nr_commits, 2);
	assert_true(v.nr_diffs >= 3);
	assert_non_null(v.diffs[0].diff);
	assert_non_null(v.patch_id_sha);
	forge_version_release(&v);

	/* Unknown things are PB_ENOTFOUND. */
	assert_int_equal(forge_get_version(&v, f, PROJECT, 1, 99999),
			 PB_ENOTFOUND);
	forge_version_list_release(&vl);
	forge_mr_release(&mr);
	assert_int_equal(forge_get_mr(&mr, f, "group/nope", 1), PB_ENOTFOUND);
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 77), PB_ENOTFOUND);
	forge_free(f);
}

/* An MR's pipelines, a pipeline's jobs and a job's log, and their errors
 * (lib/api/merge_requests.rb, lib/api/ci/jobs.rb, as the simulator has
 * them). */
static void test_pipelines_jobs_trace(void **state)
{
	struct client_opts small = { "guest-token", 0, 0, 0, 0 };
	struct forge_pipeline_list pl;
	struct forge_job_list jl;
	struct buf log = BUF_INIT(4096);
	struct buf tiny = BUF_INIT(8);
	struct json_doc *doc;
	struct forge *f, *guest;
	struct hooks h, h2;
	char path[128];
	int64_t id;

	(void)state;
	f = simple_client("user-token", &h);
	assert_int_equal(forge_list_pipelines(&pl, f, PROJECT, 1), 0);
	assert_int_equal(pl.nr, 0);
	forge_pipeline_list_release(&pl);
	sim_call(&doc, HTTP_POST, "/_sim/projects/1/merge_requests/1/pipelines",
		 "{\"jobs\":[{\"name\":\"build\",\"stage\":\"build\"},"
		 "{\"name\":\"unit\",\"stage\":\"test\"}]}");
	assert_int_equal(json_get_int(&id, json_doc_root(doc), "id"), 0);
	json_doc_free(doc);
	snprintf(path, sizeof(path), "/_sim/projects/1/pipelines/%lld/finish",
		 (long long)id);
	sim_call(NULL, HTTP_POST, path,
		 "{\"results\":{\"unit\":\"failed\"},"
		 "\"traces\":{\"unit\":\"\\u001b[31mFAIL\\u001b[0m\\n\"}}");

	assert_int_equal(forge_list_pipelines(&pl, f, PROJECT, 1), 0);
	assert_int_equal(pl.nr, 1);
	assert_int_equal(pl.items[0].id, id);
	assert_string_equal(pl.items[0].status, "failed");
	assert_int_equal(strlen(pl.items[0].sha), 40);
	assert_non_null(pl.items[0].web_url);
	forge_pipeline_list_release(&pl);

	assert_int_equal(forge_list_jobs(&jl, f, PROJECT, id), 0);
	assert_int_equal(jl.nr, 2);
	assert_string_equal(jl.items[0].name, "build");
	assert_string_equal(jl.items[0].status, "success");
	assert_string_equal(jl.items[1].name, "unit");
	assert_string_equal(jl.items[1].stage, "test");
	assert_string_equal(jl.items[1].status, "failed");
	assert_false(jl.items[1].allow_failure);
	assert_non_null(strstr(jl.items[1].web_url, "/-/jobs/"));

	assert_int_equal(forge_job_trace(&log, f, PROJECT, jl.items[1].id), 0);
	assert_string_equal(log.data, "\x1b[31mFAIL\x1b[0m\n");
	/* A log longer than the caller's buffer. */
	assert_int_equal(forge_job_trace(&tiny, f, PROJECT, jl.items[1].id),
			 PB_ELIMIT);
	assert_int_equal(tiny.len, 0);
	forge_job_list_release(&jl);

	/* Unknown pipeline and job: PB_ENOTFOUND; a guest: PB_EPERM. */
	assert_int_equal(forge_list_jobs(&jl, f, PROJECT, 999999),
			 PB_ENOTFOUND);
	assert_int_equal(forge_job_trace(&log, f, PROJECT, 999999),
			 PB_ENOTFOUND);
	memset(&h2, 0, sizeof(h2));
	guest = client(&small, &h2);
	assert_int_equal(forge_list_pipelines(&pl, guest, PROJECT, 1),
			 PB_EPERM);
	forge_free(guest);
	buf_release(&log);
	buf_release(&tiny);
	forge_free(f);
}

static void test_retry_on_5xx(void **state)
{
	struct client_opts co = { "user-token", 3, 0, 0, 0 };
	struct forge_gitlab_stats st;
	struct forge_mr mr;
	struct forge *f;
	struct hooks h = { { 0 }, 0, 0, NULL, NULL };

	f = client(&co, &h);
	sim_fault("{\"kind\":\"error\",\"status\":503,\"count\":2,"
		  "\"method\":\"GET\",\"path\":\"/merge_requests/1$\"}");
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	forge_mr_release(&mr);
	assert_int_equal(sim_count_requests("GET", "/merge_requests/1", 0), 3);
	assert_int_equal(sim_count_requests("GET", "/merge_requests/1", 503),
			 2);
	/* Exponential: 100 ms base, no jitter drawn → 50, 100. */
	assert_int_equal(h.nr, 2);
	assert_int_equal(h.delays[0], 50);
	assert_int_equal(h.delays[1], 100);
	forge_gitlab_stats(&st, f);
	assert_int_equal(st.retries, 2);

	/* Bounded: more failures than retries → PB_ETEMP, GitLab's text. */
	h.nr = 0;
	sim_fault("{\"kind\":\"error\",\"status\":500,\"count\":10,"
		  "\"method\":\"GET\",\"path\":\"/merge_requests/1$\"}");
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ETEMP);
	assert_non_null(strstr(err_msg(), "500 Internal Server Error"));
	assert_non_null(strstr(err_msg(), "giving up after 4 tries"));
	assert_int_equal(sim_count_requests("GET", "/merge_requests/1", 500),
			 4);
	assert_int_equal(h.nr, 3);
	assert_int_equal(h.delays[2], 200);
	forge_free(f);
}

static void test_429_retry_after(void **state)
{
	struct client_opts co = { "user-token", 2, 0, 0, 0 };
	struct forge_mr mr;
	struct forge *f;
	struct hooks h;
	int i;

	memset(&h, 0, sizeof(h));
	f = client(&co, &h);
	/* Every request refused: waits are Retry-After, then we give up. */
	sim_post("/_sim/rate_limit", "{\"limit\":0,\"period_s\":1}");
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ETEMP);
	assert_non_null(strstr(err_msg(), "429"));
	assert_non_null(strstr(err_msg(), "Retry later"));
	assert_int_equal(sim_count_requests("GET", "/merge_requests/1", 429),
			 3);
	assert_int_equal(h.nr, 2);
	for (i = 0; i < h.nr; i++)
		assert_int_equal(h.delays[i], 1000); /* Retry-After: 1 */

	/* The limit lifts during the wait: the retry gets through. */
	h.nr = 0;
	h.on_sleep = "/_sim/rate_limit";
	h.on_sleep_body = "{\"enabled\":false}";
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	forge_mr_release(&mr);
	assert_int_equal(h.nr, 1);
	assert_int_equal(h.delays[0], 1000);
	assert_int_equal(sim_count_requests("GET", "/merge_requests/1", 429),
			 1);
	assert_int_equal(sim_count_requests("GET", "/merge_requests/1", 200),
			 1);
	forge_free(f);
}

static void test_429_on_note_is_retried_once(void **state)
{
	struct client_opts co = { "user-token", 3, 0, 0, 0 };
	struct forge_note note;
	struct forge *f;
	struct hooks h;

	memset(&h, 0, sizeof(h));
	f = client(&co, &h);
	/* The notes limit: a JSON 429 without headers → exponential wait;
	 * a 429 was not applied, so posting again is safe. */
	sim_post("/_sim/rate_limit",
		 "{\"name\":\"notes_create\",\"limit\":0,\"period_s\":60}");
	h.on_sleep = "/_sim/rate_limit";
	h.on_sleep_body = "{\"name\":\"notes_create\",\"enabled\":false}";
	sim_clear_requests();
	assert_int_equal(
		forge_create_note(&note, f, PROJECT, 1, "hello", "rl.1"), 0);
	assert_int_equal(h.nr, 1);
	assert_int_equal(h.delays[0], 50);
	assert_int_equal(sim_count_requests("POST", "/notes", 429), 1);
	assert_int_equal(sim_count_requests("POST", "/notes", 201), 1);
	assert_int_equal(sim_count_notes(1, "patchbridge:rl.1"), 1);
	forge_note_release(&note);
	forge_free(f);
}

/* A POST whose answer is lost: the note is found by its marker. */
static void lost_note_case(const char *fault, int committed)
{
	struct client_opts co = { "user-token", 3, 0, 0, 0 };
	struct forge_gitlab_stats st;
	struct forge_note note;
	struct forge *f;
	struct hooks h;

	memset(&h, 0, sizeof(h));
	f = client(&co, &h);
	sim_fault(fault);
	sim_clear_requests();
	assert_int_equal(forge_create_note(&note, f, PROJECT, 1,
					   "Looks good to me.", "3f9a.1"),
			 0);
	assert_non_null(strstr(note.body, "Looks good to me."));
	assert_non_null(strstr(note.body, "<!-- patchbridge:3f9a.1 -->"));
	assert_true(note.id > 0);
	forge_note_release(&note);

	/* Exactly one note, however the answer was lost. */
	assert_int_equal(sim_count_notes(1, "patchbridge:3f9a.1"), 1);
	forge_gitlab_stats(&st, f);
	assert_int_equal(st.marker_scans, 1);
	assert_int_equal(st.marker_hits, committed ? 1 : 0);
	assert_int_equal(sim_count_requests("POST", "/merge_requests/1/notes",
					    0),
			 committed ? 1 : 2);
	forge_free(f);
}

static void test_lost_response_commit_and_drop(void **state)
{
	lost_note_case("{\"kind\":\"drop_after_commit\",\"method\":\"POST\","
		       "\"path\":\"/notes$\"}",
		       1);
}

static void test_lost_response_commit_then_502(void **state)
{
	lost_note_case("{\"kind\":\"error_after_commit\",\"status\":502,"
		       "\"method\":\"POST\",\"path\":\"/notes$\"}",
		       1);
}

static void test_lost_request_is_posted_again(void **state)
{
	/* Dropped before it ran, and a 503 that ran nothing: the marker is
	 * absent, so the client posts again, once. */
	lost_note_case("{\"kind\":\"drop\",\"method\":\"POST\","
		       "\"path\":\"/notes$\"}",
		       0);
}

static void test_503_before_commit_posts_again(void **state)
{
	lost_note_case("{\"kind\":\"error\",\"status\":503,\"method\":"
		       "\"POST\",\"path\":\"/notes$\"}",
		       0);
}

static void test_timeout_after_commit_finds_note(void **state)
{
	/* The server commits, then answers too late for our timeout. */
	struct client_opts co = { "user-token", 2, 700, 0, 0 };
	struct forge_gitlab_stats st;
	struct forge_note note;
	struct forge *f;
	struct hooks h;

	memset(&h, 0, sizeof(h));
	f = client(&co, &h);
	sim_fault("{\"kind\":\"latency\",\"ms\":2000,\"count\":1,"
		  "\"method\":\"POST\",\"path\":\"/notes$\"}");
	assert_int_equal(
		forge_create_note(&note, f, PROJECT, 1, "slow", "slow.7"), 0);
	forge_note_release(&note);
	forge_gitlab_stats(&st, f);
	assert_int_equal(st.marker_hits, 1);
	assert_int_equal(sim_count_notes(1, "patchbridge:slow.7"), 1);
	forge_free(f);
}

static void test_timeout_and_refused(void **state)
{
	struct client_opts co = { "user-token", 0, 500, 0, 0 };
	struct forge_mr mr;
	struct forge *f;
	struct hooks h;

	memset(&h, 0, sizeof(h));
	f = client(&co, &h);
	sim_fault("{\"kind\":\"latency\",\"ms\":1500,\"count\":1,"
		  "\"method\":\"GET\",\"path\":\"/merge_requests/1$\"}");
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ETEMP);
	assert_non_null(strstr(err_msg(), "timed out"));

	/* Connection refused: PB_ETEMP, clearly worded. */
	sim_post("/_sim/faults/refuse", "{\"seconds\":1}");
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ETEMP);
	assert_non_null(strstr(err_msg(), "cannot connect"));
	forge_free(f);
	sim_wait_up();

	/* With retries the client rides it out (really waiting here). */
	co.max_retries = 6;
	memset(&h, 0, sizeof(h));
	h.real_sleep = 1;
	f = client(&co, &h);
	sim_post("/_sim/faults/refuse", "{\"seconds\":1}");
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	assert_true(h.nr >= 1);
	forge_mr_release(&mr);
	forge_free(f);
}

static void test_malformed_and_oversized(void **state)
{
	struct client_opts co = { "user-token", 2, 0, 64 * 1024, 0 };
	struct forge_mr mr;
	struct forge *f;
	struct hooks h;
	char *big, *fault;

	memset(&h, 0, sizeof(h));
	f = client(&co, &h);
	/* Broken JSON with a 200: PB_EINVAL, not retried, no crash. */
	sim_fault("{\"kind\":\"error\",\"status\":200,\"method\":\"GET\","
		  "\"path\":\"/merge_requests/1$\",\"content_type\":"
		  "\"application/json\",\"body\":\"{\\\"id\\\": 101,,\"}");
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_EINVAL);
	assert_non_null(strstr(err_msg(), "unusable response"));
	assert_int_equal(h.nr, 0);

	/* Well-formed, wrong types: the field is named. */
	sim_fault("{\"kind\":\"error\",\"status\":200,\"method\":\"GET\","
		  "\"path\":\"/merge_requests/1$\",\"content_type\":"
		  "\"application/json\",\"body\":\"{\\\"id\\\":\\\"101\\\","
		  "\\\"iid\\\":1}\"}");
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_EINVAL);
	assert_non_null(strstr(err_msg(), "'id'"));

	/* A list where an object belongs. */
	sim_fault("{\"kind\":\"error\",\"status\":200,\"method\":\"GET\","
		  "\"path\":\"/merge_requests/1$\",\"body\":\"[1,2]\"}");
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_EINVAL);

	/* Over the body cap: the transfer is cut, PB_ELIMIT. */
	big = xmalloc(100 * 1024 + 1);
	memset(big, 'x', 100 * 1024);
	big[100 * 1024] = '\0';
	fault = xasprintf("{\"kind\":\"error\",\"status\":200,\"method\":"
			  "\"GET\",\"path\":\"/merge_requests/1$\","
			  "\"body\":\"%s\"}",
			  big);
	sim_fault(fault);
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ELIMIT);
	assert_non_null(strstr(err_msg(), "exceeds"));
	free(fault);
	free(big);

	/* The client is still fine afterwards. */
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	forge_mr_release(&mr);
	forge_free(f);
}

static void position_of(struct forge_position *p, const struct forge_mr *mr,
			const char *path)
{
	memset(p, 0, sizeof(*p));
	p->base_sha = mr->base_sha;
	p->start_sha = mr->start_sha;
	p->head_sha = mr->head_sha;
	p->old_path = (char *)path;
	p->new_path = (char *)path;
}

static void test_diff_notes(void **state)
{
	struct forge_discussion d;
	struct forge_position pos;
	struct forge_version v;
	struct forge_mr mr;
	struct forge *f;
	struct hooks h;
	size_t i;

	f = simple_client("bob-token", &h);
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	/* The lines below are those of the seeded src/hello.c change. */
	assert_int_equal(forge_get_version(&v, f, PROJECT, 1, 501), 0);
	for (i = 0; i < v.nr_diffs; i++)
		if (!strcmp(v.diffs[i].new_path, "src/hello.c"))
			break;
	assert_true(i < v.nr_diffs);
	assert_non_null(strstr(v.diffs[i].diff, "+\tfflush(stdout);"));
	assert_non_null(strstr(v.diffs[i].diff, "-\tprintf(\"hello, %s\\n\""));
	forge_version_release(&v);

	position_of(&pos, &mr, "src/hello.c");
	/* Added line (new 7: fflush): new_line only. */
	assert_int_equal(forge_position_set_line(&pos, FORGE_LINE_ADDED, 0, 7),
			 0);
	assert_int_equal(forge_create_discussion(&d, f, PROJECT, 1,
						 "Why flush here?", &pos,
						 "dn.1"),
			 0);
	assert_string_equal(d.notes[0].type, "DiffNote");
	assert_int_equal(d.notes[0].position.new_line, 7);
	assert_int_equal(d.notes[0].position.old_line, 0);
	assert_int_equal(strlen(d.id), 40);
	forge_discussion_release(&d);

	/* Removed line (old 6: the lower-case printf): old_line only. */
	assert_int_equal(
		forge_position_set_line(&pos, FORGE_LINE_REMOVED, 6, 0), 0);
	assert_int_equal(forge_create_discussion(&d, f, PROJECT, 1,
						 "Capital H?", &pos, "dn.2"),
			 0);
	assert_string_equal(d.notes[0].type, "DiffNote");
	assert_int_equal(d.notes[0].position.old_line, 6);
	forge_discussion_release(&d);

	/* Context line (old 5 / new 5: "{"): both. */
	assert_int_equal(
		forge_position_set_line(&pos, FORGE_LINE_CONTEXT, 5, 5), 0);
	assert_int_equal(forge_create_discussion(&d, f, PROJECT, 1, "Brace.",
						 &pos, "dn.3"),
			 0);
	assert_string_equal(d.notes[0].type, "DiffNote");
	forge_discussion_release(&d);

	/* An added line given both numbers: GitLab's line_code 400. */
	pos.old_line = 7;
	pos.new_line = 7;
	assert_int_equal(forge_create_discussion(&d, f, PROJECT, 1, "Bad.",
						 &pos, "dn.4"),
			 PB_EINVAL);
	assert_non_null(strstr(err_msg(), "HTTP 400"));
	assert_non_null(strstr(err_msg(), "line_code"));
	assert_null(d.id);
	assert_int_equal(sim_count_notes(1, "patchbridge:dn.4"), 0);

	/* A line not in the diff at all. */
	assert_int_equal(
		forge_position_set_line(&pos, FORGE_LINE_ADDED, 0, 500), 0);
	assert_int_equal(forge_create_discussion(&d, f, PROJECT, 1, "Bad.",
						 &pos, "dn.5"),
			 PB_EINVAL);
	assert_non_null(strstr(err_msg(), "line_code"));

	/* Refused before sending: no line at all. */
	pos.old_line = pos.new_line = 0;
	assert_int_equal(forge_create_discussion(&d, f, PROJECT, 1, "Bad.",
						 &pos, "dn.6"),
			 PB_EINVAL);
	forge_mr_release(&mr);
	forge_free(f);
}

static void test_discussions_reply_resolve(void **state)
{
	struct client_opts co = { "bob-token", 3, 0, 0, 0 };
	struct forge_discussion_list dl;
	struct forge_discussion d;
	struct forge_note note;
	struct forge *f;
	struct hooks h;
	char *did = NULL;

	memset(&h, 0, sizeof(h));
	f = client(&co, &h);
	assert_int_equal(forge_create_discussion(&d, f, PROJECT, 1, "A thread.",
						 NULL, "th.1"),
			 0);
	assert_int_equal(d.individual_note, 0);

	/* A reply whose answer is lost: found in the thread, not doubled. */
	sim_fault("{\"kind\":\"drop_after_commit\",\"method\":\"POST\","
		  "\"path\":\"/discussions/[0-9a-f]+/notes$\"}");
	assert_int_equal(forge_reply_discussion(&note, f, PROJECT, 1, d.id,
						"A reply.", "th.2"),
			 0);
	assert_non_null(strstr(note.body, "A reply."));
	forge_note_release(&note);
	assert_int_equal(sim_count_notes(1, "patchbridge:th.2"), 1);

	/* Resolve and unresolve (idempotent PUTs). */
	assert_int_equal(forge_resolve_discussion(f, PROJECT, 1, d.id, 1), 0);
	assert_int_equal(forge_resolve_discussion(f, PROJECT, 1, d.id, 1), 0);
	assert_int_equal(forge_list_discussions(&dl, f, PROJECT, 1), 0);
	assert_true(dl.nr >= 1);
	assert_int_equal(dl.items[dl.nr - 1].nr_notes, 2);
	assert_int_equal(dl.items[dl.nr - 1].notes[0].resolved, 1);
	forge_discussion_list_release(&dl);
	assert_int_equal(forge_resolve_discussion(f, PROJECT, 1, d.id, 0), 0);

	/* Find by marker: in the thread, across the MR's threads, in the
	 * MR's notes. */
	assert_int_equal(forge_find_note_by_marker(&note, NULL, f, PROJECT, 1,
						   d.id, "th.2"),
			 0);
	forge_note_release(&note);
	assert_int_equal(forge_find_note_by_marker(&note, &did, f, PROJECT, 1,
						   NULL, "th.1"),
			 0);
	assert_string_equal(did, d.id);
	free(did);
	forge_note_release(&note);
	assert_int_equal(forge_find_note_by_marker(&note, NULL, f, PROJECT, 1,
						   NULL, "th.1"),
			 0);
	forge_note_release(&note);
	assert_int_equal(forge_find_note_by_marker(&note, NULL, f, PROJECT, 1,
						   NULL, "th.9"),
			 PB_ENOTFOUND);

	/* A lost answer on a new thread: found among the discussions. */
	sim_fault("{\"kind\":\"error_after_commit\",\"status\":502,"
		  "\"method\":\"POST\",\"path\":\"/discussions$\"}");
	forge_discussion_release(&d);
	assert_int_equal(forge_create_discussion(&d, f, PROJECT, 1,
						 "Another thread.", NULL,
						 "th.3"),
			 0);
	assert_non_null(d.id);
	assert_non_null(strstr(d.notes[0].body, "Another thread."));
	assert_int_equal(sim_count_notes(1, "patchbridge:th.3"), 1);
	forge_discussion_release(&d);
	forge_free(f);
}

static void test_marker_matches_author(void **state)
{
	struct forge_note note;
	struct forge *alice, *admin;
	struct hooks h1, h2;

	alice = simple_client("user-token", &h1);
	admin = simple_client("admin-token", &h2);
	assert_int_equal(
		forge_create_note(&note, alice, PROJECT, 1, "mine", "au.1"), 0);
	forge_note_release(&note);
	/* As alice (Sudo) the note is ours; as bob, or as root, it is not. */
	assert_int_equal(forge_act_as(admin, "alice"), 0);
	assert_int_equal(forge_find_note_by_marker(&note, NULL, admin, PROJECT,
						   1, NULL, "au.1"),
			 0);
	assert_string_equal(note.author.username, "alice");
	forge_note_release(&note);
	assert_int_equal(forge_act_as(admin, "bob"), 0);
	assert_int_equal(forge_find_note_by_marker(&note, NULL, admin, PROJECT,
						   1, NULL, "au.1"),
			 PB_ENOTFOUND);
	assert_int_equal(forge_act_as(admin, NULL), 0);
	assert_int_equal(forge_find_note_by_marker(&note, NULL, admin, PROJECT,
						   1, NULL, "au.1"),
			 PB_ENOTFOUND);

	/* A note posted through Sudo is written by that user. */
	assert_int_equal(forge_act_as(admin, "bob"), 0);
	assert_int_equal(forge_create_note(&note, admin, PROJECT, 1, "as bob",
					   "au.2"),
			 0);
	assert_string_equal(note.author.username, "bob");
	forge_note_release(&note);
	forge_free(alice);
	forge_free(admin);
}

static void test_approvals(void **state)
{
	enum forge_approve_result res;
	struct forge_approvals ap;
	struct forge_mr mr;
	struct forge *bob, *alice;
	struct hooks h1, h2;

	bob = simple_client("bob-token", &h1);
	alice = simple_client("user-token", &h2);
	assert_int_equal(forge_get_mr(&mr, bob, PROJECT, 1), 0);

	/* A stale head: 409, its own result. */
	assert_int_equal(
		forge_approve(&res, bob, PROJECT, 1,
			      "0000000000000000000000000000000000000000"),
		PB_EINVAL);
	assert_int_equal(res, FORGE_APPROVE_SHA_MISMATCH);
	assert_non_null(strstr(err_msg(), "SHA does not match"));

	assert_int_equal(forge_approve(&res, bob, PROJECT, 1, mr.sha), 0);
	assert_int_equal(res, FORGE_APPROVE_DONE);
	/* Again: the state says it stands; no second POST (GitLab would
	 * answer it 401, like a refusal). */
	sim_clear_requests();
	assert_int_equal(forge_approve(&res, bob, PROJECT, 1, mr.sha), 0);
	assert_int_equal(res, FORGE_APPROVE_ALREADY);
	assert_int_equal(sim_count_requests("POST", "/approve", 0), 0);

	assert_int_equal(forge_get_approvals(&ap, bob, PROJECT, 1), 0);
	assert_int_equal(ap.nr_approved_by, 1);
	assert_string_equal(ap.approved_by[0].username, "bob");
	forge_approvals_release(&ap);

	/* The author may not approve: 401, and no approval of hers stands:
	 * refused. */
	assert_int_equal(forge_approve(&res, alice, PROJECT, 1, mr.sha),
			 PB_EPERM);
	assert_int_equal(res, FORGE_APPROVE_REFUSED);

	assert_int_equal(forge_unapprove(&res, bob, PROJECT, 1), 0);
	assert_int_equal(res, FORGE_APPROVE_DONE);
	assert_int_equal(forge_unapprove(&res, bob, PROJECT, 1), 0);
	assert_int_equal(res, FORGE_APPROVE_ALREADY);

	/* Approve needs the SHA. */
	assert_int_equal(forge_approve(&res, bob, PROJECT, 1, NULL), PB_EINVAL);
	forge_mr_release(&mr);
	forge_free(bob);
	forge_free(alice);
}

/*
 * The approval lands, the answer is lost to a 502, the retry gets
 * GitLab's 401 for a second approval: the state check says it stands.
 * The same for an unapprove whose retry gets the 404 of "nothing to
 * withdraw".
 */
static void test_approve_retry_after_5xx(void **state)
{
	enum forge_approve_result res;
	struct forge_approvals ap;
	struct client_opts co = { "bob-token", 3, 0, 0, 0 };
	struct forge_mr mr;
	struct forge *bob;
	struct hooks h;

	memset(&h, 0, sizeof(h));
	bob = client(&co, &h);
	assert_int_equal(forge_get_mr(&mr, bob, PROJECT, 1), 0);
	sim_fault("{\"kind\":\"error_after_commit\",\"status\":502,"
		  "\"path\":\"/approve$\"}");
	sim_clear_requests();
	assert_int_equal(forge_approve(&res, bob, PROJECT, 1, mr.sha), 0);
	assert_int_equal(res, FORGE_APPROVE_ALREADY);
	assert_int_equal(sim_count_requests("POST", "/approve", 502), 1);
	assert_int_equal(sim_count_requests("POST", "/approve", 401), 1);
	assert_int_equal(forge_get_approvals(&ap, bob, PROJECT, 1), 0);
	assert_int_equal(ap.nr_approved_by, 1);
	forge_approvals_release(&ap);

	sim_fault("{\"kind\":\"error_after_commit\",\"status\":502,"
		  "\"path\":\"/unapprove$\"}");
	assert_int_equal(forge_unapprove(&res, bob, PROJECT, 1), 0);
	assert_int_equal(res, FORGE_APPROVE_ALREADY);
	assert_int_equal(sim_count_requests("POST", "/unapprove", 404), 1);
	assert_int_equal(forge_get_approvals(&ap, bob, PROJECT, 1), 0);
	assert_int_equal(ap.nr_approved_by, 0);
	forge_approvals_release(&ap);
	forge_mr_release(&mr);
	forge_free(bob);
}

/*
 * An expired or revoked token (lib/api/api_guard.rb: 401 invalid_token)
 * is the operator's problem: PB_ETEMP without a retry, whatever the call
 * (a read, a note, an approval), and forge_token_problem() says why
 * until a call works again.  A token GitLab does not know at all:
 * test_token_unknown.
 */
static void test_token_expired_or_revoked(void **state)
{
	enum forge_approve_result res = FORGE_APPROVE_DONE;
	char sha[64];
	struct forge_whoami w;
	struct forge_note note;
	struct forge_mr mr;
	struct forge *f;
	struct hooks h;

	sim_post("/_sim/tokens", "{\"user\":\"root\",\"token\":\"year\","
				 "\"scopes\":[\"api\",\"sudo\"],"
				 "\"expires_at\":\"2999-12-31\"}");
	f = simple_client("year", &h);
	memset(&w, 0, sizeof(w));
	assert_int_equal(forge_whoami(&w, f), 0);
	assert_string_equal(w.expires_at, "2999-12-31");
	forge_whoami_release(&w);
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	assert_int_equal(forge_token_problem(f), FORGE_TOKEN_OK);
	snprintf(sha, sizeof(sha), "%s", mr.sha);
	forge_mr_release(&mr);

	sim_call(NULL, HTTP_PUT, "/_sim/tokens/year", "{\"expire\":true}");
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ETEMP);
	assert_non_null(strstr(err_msg(), "the forge token has expired"));
	assert_int_equal(forge_token_problem(f), FORGE_TOKEN_EXPIRED);
	assert_int_equal(h.nr, 0); /* no retry: nothing changes by waiting */
	assert_int_equal(forge_create_note(&note, f, PROJECT, 1, "hi", NULL),
			 PB_ETEMP);
	assert_int_equal(forge_act_as(f, "bob"), 0);
	assert_int_equal(forge_approve(&res, f, PROJECT, 1, sha), PB_ETEMP);
	assert_int_not_equal(res, FORGE_APPROVE_REFUSED);
	assert_int_equal(forge_token_problem(f), FORGE_TOKEN_EXPIRED);
	assert_int_equal(forge_act_as(f, NULL), 0);

	sim_call(NULL, HTTP_PUT, "/_sim/tokens/year",
		 "{\"expires_at\":null,\"revoked\":true}");
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ETEMP);
	assert_int_equal(forge_token_problem(f), FORGE_TOKEN_REVOKED);
	sim_call(NULL, HTTP_PUT, "/_sim/tokens/year", "{\"revoked\":false}");
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	assert_int_equal(forge_token_problem(f), FORGE_TOKEN_OK);
	forge_mr_release(&mr);
	forge_free(f);
}

/*
 * A token GitLab does not know at all (deleted, mistyped, from another
 * instance) gets the plain 401 of authenticate! (lib/api/helpers.rb,
 * unauthorized!).  Asked as the token's own user of anything but an
 * approval it is the operator's problem, as an expired one is: PB_ETEMP
 * without a retry, FORGE_TOKEN_UNKNOWN until a call works.  The 401
 * that refuses an approval (lib/api/merge_request_approvals.rb) is a
 * refusal still, and so is a 401 with Sudo; neither clears what an
 * earlier call found.
 */
static void test_token_unknown(void **state)
{
	enum forge_approve_result res = FORGE_APPROVE_DONE;
	struct forge_note note;
	struct forge *f, *alice;
	struct forge_mr mr;
	struct hooks h, ha;
	char sha[64];

	alice = simple_client("user-token", &ha);
	assert_int_equal(forge_get_mr(&mr, alice, PROJECT, 1), 0);
	snprintf(sha, sizeof(sha), "%s", mr.sha);
	forge_mr_release(&mr);

	f = simple_client("gone", &h);
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ETEMP);
	assert_non_null(strstr(err_msg(), "the forge token was not accepted: "
					  "GitLab does not know it"));
	assert_int_equal(forge_token_problem(f), FORGE_TOKEN_UNKNOWN);
	assert_int_equal(h.nr, 0); /* no retry: nothing changes by waiting */
	assert_int_equal(sim_count_requests("GET", "/merge_requests/1", 401),
			 1);
	assert_int_equal(forge_create_note(&note, f, PROJECT, 1, "hi", NULL),
			 PB_ETEMP);
	assert_int_equal(forge_token_problem(f), FORGE_TOKEN_UNKNOWN);
	assert_non_null(strstr(forge_token_problem_text(FORGE_TOKEN_UNKNOWN),
			       "deleted, mistyped, or from another instance"));

	/* With Sudo the 401 is what it was, and the token stays unknown. */
	assert_int_equal(forge_act_as(f, "bob"), 0);
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_EPERM);
	assert_int_equal(forge_token_problem(f), FORGE_TOKEN_UNKNOWN);
	assert_int_equal(forge_act_as(f, NULL), 0);

	/* The operator makes the token: it works, with no new client. */
	sim_post("/_sim/tokens", "{\"user\":\"root\",\"token\":\"gone\","
				 "\"scopes\":[\"api\",\"sudo\"]}");
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	assert_int_equal(forge_token_problem(f), FORGE_TOKEN_OK);
	forge_mr_release(&mr);
	forge_free(f);

	/* The author's approval: GitLab's 401 on approve, made as the
	 * token's own user, is a refusal, not a token problem. */
	assert_int_equal(forge_approve(&res, alice, PROJECT, 1, sha), PB_EPERM);
	assert_int_equal(res, FORGE_APPROVE_REFUSED);
	assert_int_equal(sim_count_requests("POST", "/approve", 401), 1);
	assert_int_equal(forge_token_problem(alice), FORGE_TOKEN_OK);
	forge_free(alice);
}

static void test_sudo(void **state)
{
	enum forge_approve_result res;
	struct forge_approvals ap;
	struct forge_mr mr;
	struct forge *f;
	struct hooks h;

	/* A regular token cannot Sudo: 403 → PB_EPERM, the operator's
	 * problem, nothing about bob. */
	f = simple_client("user-token", &h);
	assert_int_equal(forge_act_as(f, "bob"), 0);
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_EPERM);
	assert_non_null(strstr(err_msg(), "Must be admin to use sudo"));
	assert_int_equal(forge_sudo_problem(f), FORGE_SUDO_NOT_ADMIN);
	assert_int_equal(
		forge_approve(&res, f, PROJECT, 1,
			      "0123456789012345678901234567890123456789"),
		PB_EPERM);
	assert_int_equal(res, FORGE_APPROVE_NO_SUDO);
	assert_non_null(strstr(err_msg(), "administrator's token"));
	forge_free(f);

	/* An admin token without the sudo scope. */
	f = simple_client("admin-nosudo-token", &h);
	assert_int_equal(forge_act_as(f, "bob"), 0);
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_EPERM);
	assert_non_null(strstr(err_msg(), "insufficient_scope"));
	assert_int_equal(forge_sudo_problem(f), FORGE_SUDO_NO_SCOPE);
	assert_int_equal(forge_unapprove(&res, f, PROJECT, 1), PB_EPERM);
	assert_int_equal(res, FORGE_APPROVE_NO_SUDO);
	forge_free(f);

	/* Admin Mode: an administrator's token needs admin_mode too. */
	sim_call(NULL, HTTP_PUT, "/_sim/settings", "{\"admin_mode\":true}");
	f = simple_client("admin-token", &h);
	assert_int_equal(forge_act_as(f, "bob"), 0);
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_EPERM);
	assert_int_equal(forge_sudo_problem(f), FORGE_SUDO_NOT_ADMIN);
	forge_free(f);
	sim_call(NULL, HTTP_PUT, "/_sim/settings", "{\"admin_mode\":false}");

	/* Admin with sudo approves as bob; an unknown user is not found. */
	f = simple_client("admin-token", &h);
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	assert_int_equal(forge_act_as(f, "bob"), 0);
	assert_int_equal(forge_approve(&res, f, PROJECT, 1, mr.sha), 0);
	assert_int_equal(forge_get_approvals(&ap, f, PROJECT, 1), 0);
	assert_int_equal(ap.nr_approved_by, 1);
	assert_string_equal(ap.approved_by[0].username, "bob");
	forge_approvals_release(&ap);
	assert_int_equal(forge_act_as(f, "nobody"), 0);
	assert_int_equal(forge_approve(&res, f, PROJECT, 1, mr.sha),
			 PB_ENOTFOUND);
	assert_int_equal(res, FORGE_APPROVE_NO_USER);
	/* Sudo's unknown user is not unapprove's "nothing to withdraw". */
	assert_int_equal(forge_unapprove(&res, f, PROJECT, 1), PB_ENOTFOUND);
	assert_int_equal(res, FORGE_APPROVE_NO_USER);
	forge_mr_release(&mr);
	forge_free(f);
}

/*
 * forge_set_pause(): the caller's work runs between the pages of a
 * listing, as ourselves and with the handle in use (a post, a listing
 * of its own that does not pause again), and the listing goes on as it
 * was: every thread once, the Sudo user and the error message as before.
 */
struct pause_probe {
	struct forge *f;
	int calls, depth, max_depth;
	size_t inner_nr;
};

static void pause_probe(void *arg)
{
	struct pause_probe *p = arg;
	struct forge_discussion_list dl;
	struct forge_note note;

	p->calls++;
	p->depth++;
	if (p->depth > p->max_depth)
		p->max_depth = p->depth;
	/* As ourselves, whoever the listing runs as. */
	assert_int_equal(forge_create_note(&note, p->f, PROJECT, 1,
					   "posted between two pages", NULL),
			 0);
	assert_string_equal(note.author.username, "root");
	forge_note_release(&note);
	/* A listing of its own, which does not pause inside the pause. */
	memset(&dl, 0, sizeof(dl));
	assert_int_equal(forge_list_discussions(&dl, p->f, PROJECT, 1), 0);
	p->inner_nr = dl.nr;
	forge_discussion_list_release(&dl);
	/* What it leaves behind is undone. */
	assert_int_equal(forge_act_as(p->f, "alice"), 0);
	err_set(PB_ERROR, "left by the pause");
	p->depth--;
}

static void test_pause_between_pages(void **state)
{
	struct client_opts co = { "admin-token", 3, 0, 0, 2 };
	struct forge_discussion_list dl;
	struct forge_note note;
	struct pause_probe p;
	struct forge *f;
	struct hooks h;
	char body[32];
	size_t i, j, mine = 0;

	memset(&h, 0, sizeof(h));
	f = client(&co, &h);
	for (i = 0; i < 5; i++) {
		snprintf(body, sizeof(body), "thread %zu", i);
		assert_int_equal(
			forge_create_note(&note, f, PROJECT, 1, body, NULL), 0);
		forge_note_release(&note);
	}
	memset(&p, 0, sizeof(p));
	p.f = f;
	forge_set_pause(f, pause_probe, &p);
	assert_int_equal(forge_act_as(f, "bob"), 0);
	err_set(PB_ERROR, "before the listing");
	memset(&dl, 0, sizeof(dl));
	assert_int_equal(forge_list_discussions(&dl, f, PROJECT, 1), 0);
	/* 2 per page: a pause after every page that has a next one. */
	assert_true(p.calls >= 2);
	assert_int_equal(p.max_depth, 1);
	assert_true(p.inner_nr >= 5);
	assert_string_equal(err_msg(), "before the listing");
	for (i = 0; i < dl.nr; i++) {
		for (j = 0; j < i; j++)
			assert_string_not_equal(dl.items[i].id, dl.items[j].id);
		if (dl.items[i].nr_notes && dl.items[i].notes[0].body &&
		    !strncmp(dl.items[i].notes[0].body, "thread ", 7))
			mine++;
	}
	assert_int_equal(mine, 5);
	forge_discussion_list_release(&dl);
	/* Still bob after the pauses (alice, left by one, is undone). */
	forge_set_pause(f, NULL, NULL);
	assert_int_equal(forge_create_note(&note, f, PROJECT, 1, "after", NULL),
			 0);
	assert_string_equal(note.author.username, "bob");
	forge_note_release(&note);

	/* forge_pause() runs it now; without one set, nothing runs. */
	p.calls = 0;
	forge_pause(f);
	assert_int_equal(p.calls, 0);
	forge_set_pause(f, pause_probe, &p);
	forge_pause(f);
	assert_int_equal(p.calls, 1);
	forge_free(f);
}

/* A guard that lets `allow` tries go, then says the work is not ours. */
struct guard_probe {
	int calls;
	int allow;
};

static int guard_probe(void *arg)
{
	struct guard_probe *g = arg;

	if (++g->calls > g->allow)
		return err_set(PB_ETEMP, "the claim on the mail is lost");
	return 0;
}

/* The guard is asked before each try, retries included, and a "no"
 * ends the call with nothing more sent. */
static void test_guard_before_each_try(void **state)
{
	struct client_opts co = { "user-token", 3, 0, 0, 0 };
	struct hooks h = { { 0 }, 0, 0, NULL, NULL };
	struct guard_probe g = { 0, 100 };
	forge_guard_fn old_fn = NULL;
	void *old_arg = NULL;
	struct forge_mr mr;
	struct forge *f;

	(void)state;
	f = client(&co, &h);
	forge_set_guard(f, guard_probe, &g, &old_fn, &old_arg);
	assert_null(old_fn);
	sim_fault("{\"kind\":\"error\",\"status\":503,\"count\":2,"
		  "\"method\":\"GET\",\"path\":\"/merge_requests/1$\"}");
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	forge_mr_release(&mr);
	assert_int_equal(g.calls, 3); /* two 503s and the answer */

	/* Lost after the first try: no second request. */
	g.calls = 0;
	g.allow = 1;
	h.nr = 0;
	sim_fault("{\"kind\":\"error\",\"status\":503,\"count\":2,"
		  "\"method\":\"GET\",\"path\":\"/merge_requests/1$\"}");
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ETEMP);
	assert_non_null(strstr(err_msg(), "the claim on the mail is lost"));
	assert_int_equal(sim_count_requests("GET", "/merge_requests/1", 0), 1);
	assert_int_equal(g.calls, 2);

	/* Lost before anything: a note is not posted. */
	g.calls = 0;
	g.allow = 0;
	sim_clear_requests();
	{
		struct forge_note note;

		memset(&note, 0, sizeof(note));
		assert_int_equal(forge_create_note(&note, f, PROJECT, 1,
						   "never", NULL),
				 PB_ETEMP);
		forge_note_release(&note);
	}
	assert_int_equal(sim_count_requests("POST", "/notes", 0), 0);

	/* Put back: none. */
	forge_set_guard(f, old_fn, old_arg, NULL, NULL);
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	forge_mr_release(&mr);
	forge_free(f);
}

static void test_whoami(void **state)
{
	struct forge_whoami w;
	struct forge *f;
	struct hooks h;

	f = simple_client("admin-token", &h);
	assert_int_equal(forge_act_as(f, "bob"), 0); /* not through Sudo */
	assert_int_equal(forge_whoami(&w, f), 0);
	assert_string_equal(w.user.username, "root");
	assert_int_equal(w.admin, 1);
	assert_int_equal(w.token_known, 1);
	assert_true(strlist_find(&w.scopes, "sudo") >= 0);
	assert_int_equal(w.active, 1);
	forge_whoami_release(&w);
	forge_free(f);

	f = simple_client("bob-token", &h);
	assert_int_equal(forge_whoami(&w, f), 0);
	assert_string_equal(w.user.username, "bob");
	assert_int_equal(w.admin, 0);
	assert_true(strlist_find(&w.scopes, "sudo") < 0);
	forge_whoami_release(&w);
	forge_free(f);
}

/*
 * A renamed project: GitLab refuses writes on the old path with 405 (lib/
 * api/helpers.rb find_project!), which waits rather than fails; the old
 * path is followed to the project, and once pinned the same calls go by
 * the id.
 */
static void test_moved_project(void **state)
{
	struct forge_project p;
	struct forge_note note;
	struct forge *f;
	struct hooks h;

	f = simple_client("admin-token", &h);
	sim_post("/_sim/projects/1/move", "{\"path\":\"elsewhere/renamed\"}");
	sim_clear_requests();
	assert_int_equal(forge_create_note(&note, f, PROJECT, 1, "By path.",
					   NULL),
			 PB_ETEMP);
	assert_non_null(strstr(err_msg(), "not allowed for moved projects"));
	assert_int_equal(forge_get_project(&p, f, PROJECT), 0);
	assert_int_equal(p.id, 1);
	assert_string_equal(p.path_with_namespace, "elsewhere/renamed");
	forge_project_release(&p);
	assert_int_equal(
		sim_count_requests("GET", "/projects/group%2Fproject", 301), 1);

	forge_pin_project(f, "GROUP/Project", 1); /* paths ignore case */
	assert_string_equal(forge_pinned_path(f, 1), "GROUP/Project");
	assert_null(forge_pinned_path(f, 2));
	assert_int_equal(
		forge_create_note(&note, f, PROJECT, 1, "By id.", NULL), 0);
	forge_note_release(&note);
	assert_int_equal(
		sim_count_requests("POST", "/projects/1/merge_requests/1/notes",
				   201),
		1);
	assert_int_equal(forge_get_project(&p, f, PROJECT), 0);
	assert_string_equal(p.path_with_namespace, "elsewhere/renamed");
	forge_project_release(&p);
	assert_int_equal(sim_count_notes(1, "By id."), 1);
	forge_free(f);
}

static void test_labels(void **state)
{
	struct strlist add = STRLIST_INIT, remove = STRLIST_INIT;
	struct forge *f;
	struct hooks h;
	char *labels;

	f = simple_client("bob-token", &h);
	/* GitLab splits label names at commas, even inside arrays. */
	strlist_push(&add, "needs, review");
	assert_int_equal(forge_update_labels(f, PROJECT, 1, &add, NULL),
			 PB_EINVAL);
	strlist_release(&add);

	strlist_push(&add, "Acks::ACKed");
	strlist_push(&add, "needs review");
	assert_int_equal(forge_update_labels(f, PROJECT, 1, &add, NULL), 0);
	labels = sim_labels();
	assert_string_equal(labels, "Acks::ACKed,needs review");
	free(labels);

	strlist_release(&add);
	strlist_push(&add, "Acks::NACKed");
	strlist_push(&remove, "Acks::ACKed");
	assert_int_equal(forge_update_labels(f, PROJECT, 1, &add, &remove), 0);
	/* Idempotent: the same change again converges. */
	assert_int_equal(forge_update_labels(f, PROJECT, 1, &add, &remove), 0);
	labels = sim_labels();
	assert_string_equal(labels, "Acks::NACKed,needs review"); /* sorted */
	free(labels);

	strlist_release(&add);
	assert_int_equal(forge_update_labels(f, PROJECT, 1, &add, NULL),
			 PB_EINVAL);
	strlist_release(&remove);
	forge_free(f);
}
/*
 * Opening a merge request: its fields as given, the label; exactly once,
 * as the forge keeps one open MR per source branch: a call made again
 * (after a restart) and a POST whose answer was lost both end with the
 * MR made first.  A branch the forge lacks is refused.
 */
static void test_create_mr(void **state)
{
	struct strlist labels = STRLIST_INIT;
	struct forge_mr_new n;
	struct forge_mr mr, again;
	struct forge *f;
	struct hooks h;

	f = simple_client("user-token", &h);
	sim_call(NULL, HTTP_POST, "/_sim/projects/1/commits",
		 "{\"branch\":\"email/ann/louder\",\"start\":\"main\","
		 "\"commits\":[{\"message\":\"louder\",\"files\":"
		 "{\"louder.txt\":\"LOUD\\n\"}}]}");
	strlist_push(&labels, "from-email");
	memset(&n, 0, sizeof(n));
	n.source_branch = "email/ann/louder";
	n.target_branch = "main";
	n.title = "hello: greet more loudly";
	n.description = "From: Ann <ann@example.org> by email\n\nLouder.";
	n.labels = &labels;
	assert_int_equal(forge_create_mr(&mr, f, PROJECT, &n), 0);
	assert_true(mr.iid > 1);
	assert_string_equal(mr.title, n.title);
	assert_string_equal(mr.description, n.description);
	assert_string_equal(mr.source_branch, "email/ann/louder");
	assert_string_equal(mr.target_branch, "main");
	assert_int_equal(mr.labels.nr, 1);
	assert_string_equal(mr.labels.items[0], "from-email");

	/* Again: the same MR, no second one. */
	assert_int_equal(forge_create_mr(&again, f, PROJECT, &n), 0);
	assert_int_equal(again.iid, mr.iid);
	forge_mr_release(&again);

	/* The answer lost after the MR was made: found, not made twice. */
	sim_call(NULL, HTTP_POST, "/_sim/projects/1/commits",
		 "{\"branch\":\"email/ann/quiet\",\"start\":\"main\","
		 "\"commits\":[{\"message\":\"quiet\",\"files\":"
		 "{\"quiet.txt\":\"quiet\\n\"}}]}");
	n.source_branch = "email/ann/quiet";
	sim_fault("{\"kind\":\"drop_after_commit\",\"method\":\"POST\","
		  "\"path\":\"/merge_requests$\"}");
	sim_clear_requests();
	assert_int_equal(forge_create_mr(&again, f, PROJECT, &n), 0);
	assert_int_equal(again.iid, mr.iid + 1);
	assert_string_equal(again.source_branch, "email/ann/quiet");
	/* the first try landed (its answer dropped), the retry met it */
	assert_int_equal(sim_count_requests("POST", "/merge_requests", 0), 2);
	assert_int_equal(sim_count_requests("POST", "/merge_requests", 409), 1);
	forge_mr_release(&again);

	/* No such branch; no title. */
	n.source_branch = "email/ann/none";
	assert_int_equal(forge_create_mr(&again, f, PROJECT, &n), PB_EINVAL);
	n.source_branch = "email/ann/louder";
	n.title = "";
	assert_int_equal(forge_create_mr(&again, f, PROJECT, &n), PB_EINVAL);
	forge_mr_release(&mr);
	strlist_release(&labels);
	forge_free(f);
}

static void test_user_lookup(void **state)
{
	struct forge_user u;
	struct forge *admin, *user;
	struct hooks h1, h2;

	admin = simple_client("admin-token", &h1);
	user = simple_client("user-token", &h2);

	/* An admin sees private addresses. */
	assert_int_equal(
		forge_find_user_by_email(&u, admin, "BOB@corp.example"), 0);
	assert_string_equal(u.username, "bob");
	assert_int_equal(u.id, 3);
	forge_user_release(&u);

	/* A regular token: only public addresses. */
	assert_int_equal(forge_find_user_by_email(&u, user, "bob@corp.example"),
			 PB_ENOTFOUND);
	assert_int_equal(
		forge_find_user_by_email(&u, user, "Alice@Example.com"), 0);
	assert_string_equal(u.username, "alice");
	assert_int_equal(u.id, 2);
	forge_user_release(&u);

	/* An admin's search matches confirmed secondary addresses too, and
	 * shows only the primary one: the bridge reads /users/:id/emails.
	 * An unconfirmed address never matches. */
	sim_post("/_sim/users/bob/emails",
		 "{\"email\":\"bob@home.example\",\"confirmed\":true}");
	sim_post("/_sim/users/bob/emails",
		 "{\"email\":\"bob@old.example\",\"confirmed\":false}");
	assert_int_equal(
		forge_find_user_by_email(&u, admin, "Bob@Home.example"), 0);
	assert_string_equal(u.username, "bob");
	forge_user_release(&u);
	assert_int_equal(forge_find_user_by_email(&u, admin, "bob@old.example"),
			 PB_ENOTFOUND);
	assert_int_equal(forge_find_user_by_email(&u, user, "bob@home.example"),
			 PB_ENOTFOUND);

	/* Partial addresses never match. */
	assert_int_equal(forge_find_user_by_email(&u, admin, "example.com"),
			 PB_EINVAL);
	assert_int_equal(forge_find_user_by_email(&u, admin, "ice@example.com"),
			 PB_ENOTFOUND);
	forge_free(admin);
	forge_free(user);
}

static void test_quick_actions_only(void **state)
{
	struct forge_note note;
	struct forge *f;
	struct hooks h;

	/* GitLab answers 202 and saves nothing: that is an error here. */
	f = simple_client("bob-token", &h);
	assert_int_equal(forge_create_note(&note, f, PROJECT, 1, "/unlabel",
					   NULL),
			 PB_EINVAL);
	assert_non_null(strstr(err_msg(), "quick actions"));
	forge_free(f);
}

/* A client that watches stop_flag (the test hooks as client() sets). */
static struct forge *stop_client(struct hooks *h, int max_retries,
				 long grace_ms)
{
	struct forge_gitlab_opts o;
	struct forge *f = NULL;

	memset(h, 0, sizeof(*h));
	memset(&o, 0, sizeof(o));
	o.base_url = sim_url;
	o.token = "user-token";
	o.max_retries = max_retries;
	o.retry_base_ms = 100;
	o.retry_max_ms = 5000;
	o.connect_timeout_ms = 2000;
	o.timeout_ms = 30000;
	o.stop = &stop_flag;
	o.stop_grace_ms = grace_ms;
	o.sleep_ms = hook_sleep;
	o.random = hook_random;
	o.hook_arg = h;
	if (forge_gitlab_new(&f, &o) != 0)
		fail_msg("forge_gitlab_new: %s", err_msg());
	return f;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_stop_ends_retries(void **state)
{
	struct forge_mr mr;
	struct forge *f;
	struct hooks h;

	stop_flag = 0;
	stop_at_sleep = 0;
	f = stop_client(&h, 5, 0);
	/* Asked to stop, a forge that answers still answers. */
	stop_flag = 1;
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	forge_mr_release(&mr);

	/* The forge fails and the stop comes during the first wait: no
	 * second try, PB_ETEMP with the forge's reason. */
	stop_flag = 0;
	stop_at_sleep = 1;
	sim_fault("{\"kind\":\"error\",\"status\":503,\"count\":10,"
		  "\"method\":\"GET\",\"path\":\"/merge_requests/1$\"}");
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ETEMP);
	assert_non_null(strstr(err_msg(), "stopping"));
	assert_non_null(strstr(err_msg(), "503"));
	assert_int_equal(h.nr, 1);
	assert_int_equal(sim_count_requests("GET", "/merge_requests/1", 0), 1);

	/* Given up once while stopping: later calls send nothing. */
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ETEMP);
	assert_non_null(strstr(err_msg(), "not sent"));
	assert_int_equal(sim_count_requests("GET", "/merge_requests/1", 0), 0);

	/* Not stopping any more: calls go out again. */
	stop_flag = 0;
	stop_at_sleep = 0;
	sim_call(NULL, HTTP_DELETE, "/_sim/faults", NULL);
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), 0);
	forge_mr_release(&mr);

	/* A stop already set when the failure comes: no wait at all. */
	sim_fault("{\"kind\":\"error\",\"status\":503,\"count\":1,"
		  "\"method\":\"GET\",\"path\":\"/merge_requests/1$\"}");
	stop_flag = 1;
	h.nr = 0;
	sim_clear_requests();
	assert_int_equal(forge_get_mr(&mr, f, PROJECT, 1), PB_ETEMP);
	assert_int_equal(h.nr, 0);
	assert_int_equal(sim_count_requests("GET", "/merge_requests/1", 0), 1);
	stop_flag = 0;
	forge_free(f);
}

static void test_stop_abandons_hanging_post(void **state)
{
	struct forge_gitlab_stats st;
	struct forge_note note;
	struct forge *f;
	struct hooks h;
	double t;

	stop_flag = 0;
	stop_at_sleep = 0;
	f = stop_client(&h, 3, 300);
	/* The forge commits the note, then does not answer for 20 s. */
	sim_fault("{\"kind\":\"latency\",\"ms\":20000,\"count\":1,"
		  "\"method\":\"POST\",\"path\":\"/notes$\"}");
	stop_flag = 1;
	t = now_s();
	assert_int_equal(forge_create_note(&note, f, PROJECT, 1, "hanging",
					   "hang.1"),
			 PB_ETEMP);
	/* Abandoned after the grace (libcurl looks about once a second),
	 * not after the 30 s timeout: a generous bound, not a benchmark. */
	assert_true(now_s() - t < 10);
	assert_non_null(strstr(err_msg(), "abandoned after sending"));
	assert_non_null(strstr(err_msg(), "look for marker hang.1"));
	forge_gitlab_stats(&st, f);
	assert_int_equal(st.marker_scans, 0);
	assert_int_equal(h.nr, 0);

	/* The next attempt (after a restart) finds it by its marker. */
	stop_flag = 0;
	assert_int_equal(sim_count_notes(1, "patchbridge:hang.1"), 1);
	assert_int_equal(forge_find_note_by_marker(&note, NULL, f, PROJECT, 1,
						   NULL, "hang.1"),
			 0);
	assert_non_null(strstr(note.body, "hanging"));
	forge_note_release(&note);
	forge_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_list_mrs_paginates_and_dedups,
				       reset),
		cmocka_unit_test_setup(test_notes_paginate, reset),
		cmocka_unit_test_setup(test_external_url_elsewhere, reset),
		cmocka_unit_test_setup(test_note_visibility, reset),
		cmocka_unit_test_setup(test_huge_version, reset),
		cmocka_unit_test_setup(test_get_mr_and_versions, reset),
		cmocka_unit_test_setup(test_pipelines_jobs_trace, reset),
		cmocka_unit_test_setup(test_retry_on_5xx, reset),
		cmocka_unit_test_setup(test_429_retry_after, reset),
		cmocka_unit_test_setup(test_429_on_note_is_retried_once, reset),
		cmocka_unit_test_setup(test_lost_response_commit_and_drop,
				       reset),
		cmocka_unit_test_setup(test_lost_response_commit_then_502,
				       reset),
		cmocka_unit_test_setup(test_lost_request_is_posted_again,
				       reset),
		cmocka_unit_test_setup(test_503_before_commit_posts_again,
				       reset),
		cmocka_unit_test_setup(test_timeout_after_commit_finds_note,
				       reset),
		cmocka_unit_test_setup(test_timeout_and_refused, reset),
		cmocka_unit_test_setup(test_malformed_and_oversized, reset),
		cmocka_unit_test_setup(test_diff_notes, reset),
		cmocka_unit_test_setup(test_discussions_reply_resolve, reset),
		cmocka_unit_test_setup(test_marker_matches_author, reset),
		cmocka_unit_test_setup(test_approvals, reset),
		cmocka_unit_test_setup(test_approve_retry_after_5xx, reset),
		cmocka_unit_test_setup(test_sudo, reset),
		cmocka_unit_test_setup(test_create_mr, reset),
		cmocka_unit_test_setup(test_pause_between_pages, reset),
		cmocka_unit_test_setup(test_guard_before_each_try, reset),
		cmocka_unit_test_setup(test_whoami, reset),
		cmocka_unit_test_setup(test_moved_project, reset),
		cmocka_unit_test_setup(test_labels, reset),
		cmocka_unit_test_setup(test_token_expired_or_revoked, reset),
		cmocka_unit_test_setup(test_token_unknown, reset),
		cmocka_unit_test_setup(test_user_lookup, reset),
		cmocka_unit_test_setup(test_quick_actions_only, reset),
		cmocka_unit_test_setup(test_stop_ends_retries, reset),
		cmocka_unit_test_setup(test_stop_abandons_hanging_post, reset),
	};

	return simhttp_main("tests", tests, sizeof(tests) / sizeof(tests[0]),
			    &sim_url, &sim_http);
}
