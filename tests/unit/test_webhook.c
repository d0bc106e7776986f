/*
 * forge/webhook: the receiver on 127.0.0.1, port 0, spoken to over raw
 * sockets (exact bytes, partial requests, idle clients), and the payload
 * parser on its own.  GitLab's documented example payloads come from
 * tests/data/gitlab/examples/webhooks ($PB_SRC_DIR); a test that cannot
 * read one fails.
 */
#include "cmocka_all.h"
#include "rawhttp.h"
#include "forge/statusd.h"
#include "forge/webhook.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SECRET "s3cret-token"
#define PATH "/hooks/gitlab"
#define BODY_MAX (16 * 1024)
#define EVENTS_MAX 64

/*
 * What the callback saw.
 */
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct webhook_event events[EVENTS_MAX];
static int nr_events;
static int fail_next; /* the callback refuses once */

static int on_event(const struct webhook_event *ev, void *arg)
{
	int rc = 0;

	pthread_mutex_lock(&ev_lock);
	if (fail_next) {
		fail_next = 0;
		rc = PB_ETEMP;
	} else if (nr_events < EVENTS_MAX) {
		events[nr_events++] = *ev;
	}
	pthread_mutex_unlock(&ev_lock);
	return rc;
}

static int event_count(void)
{
	int n;

	pthread_mutex_lock(&ev_lock);
	n = nr_events;
	pthread_mutex_unlock(&ev_lock);
	return n;
}

static void events_reset(void)
{
	pthread_mutex_lock(&ev_lock);
	nr_events = 0;
	fail_next = 0;
	pthread_mutex_unlock(&ev_lock);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Example payloads.
 */

static char *example(const char *name)
{
	const char *src = getenv("PB_SRC_DIR");
	struct buf b = BUF_INIT(1024 * 1024);
	char *path;
	int rc;

	path = xasprintf("%s/tests/data/gitlab/examples/webhooks/%s",
			 src ? src : ".", name);
	rc = file_read(&b, path);
	if (rc)
		fail_msg("%s: %s (the test data is missing)", path, err_msg());
	free(path);
	return buf_detach(&b, NULL);
}

/* s with the first occurrence of from replaced by to (which must exist). */
static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);

	assert_non_null(at);
	return xasprintf("%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
}

static char *mr_example(void)
{
	return example("merge_request_hook.json");
}

static char *note_example(void)
{
	return example("note_hook_merge_request.json");
}

struct hdrs {
	const char *method; /* NULL: POST */
	const char *path; /* NULL: PATH */
	const char *token; /* NULL: none */
	const char *event; /* NULL: none */
	const char *key; /* Idempotency-Key; NULL: none */
	const char *uuid; /* X-Gitlab-Event-UUID; NULL: none */
	const char *ctype; /* NULL: application/json */
	long content_length; /* -1: strlen(body); -2: chunked */
};

static void build(struct buf *req, const struct hdrs *h, const char *body)
{
	long cl = h->content_length == -1 ? (long)strlen(body) :
					    h->content_length;

	buf_reset(req);
	buf_addf(req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n",
		 h->method ? h->method : "POST", h->path ? h->path : PATH);
	buf_adds(req, "User-Agent: GitLab/17.4.0\r\nConnection: close\r\n");
	if (h->token)
		buf_addf(req, "X-Gitlab-Token: %s\r\n", h->token);
	if (h->event)
		buf_addf(req, "X-Gitlab-Event: %s\r\n", h->event);
	if (h->key)
		buf_addf(req, "Idempotency-Key: %s\r\n", h->key);
	if (h->uuid)
		buf_addf(req, "X-Gitlab-Event-UUID: %s\r\n", h->uuid);
	buf_addf(req, "Content-Type: %s\r\n",
		 h->ctype ? h->ctype : "application/json");
	if (cl == -2)
		buf_adds(req, "Transfer-Encoding: chunked\r\n");
	else
		buf_addf(req, "Content-Length: %ld\r\n", cl);
	buf_adds(req, "\r\n");
}

/* One whole request; the status (0 when dropped). */
static int post(unsigned port, const struct hdrs *h, const char *body,
		struct raw_reply *out)
{
	struct buf req = BUF_INIT(4 * 1024 * 1024);
	struct raw_reply scratch;
	int fd;

	if (!out)
		out = &scratch;
	build(&req, h, body);
	if (h->content_length != -2)
		buf_adds(&req, body);
	fd = raw_dial(port);
	raw_send(fd, req.data, req.len);
	raw_read(out, fd);
	close(fd);
	buf_release(&req);
	return out->status;
}

static struct hdrs mr_hdrs(const char *key)
{
	struct hdrs h = { .token = SECRET,
			  .event = "Merge Request Hook",
			  .key = key,
			  .content_length = -1 };
	return h;
}

static struct hdrs note_hdrs(const char *key)
{
	struct hdrs h = { .token = SECRET,
			  .event = "Note Hook",
			  .key = key,
			  .content_length = -1 };
	return h;
}

/*
 * Fixture: a receiver per test.
 */

static struct webhook_opts default_opts(void)
{
	struct webhook_opts o = {
		.listen = "127.0.0.1:0",
		.secret = SECRET,
		.path = PATH,
		.max_request_size = BODY_MAX,
		.timeout_s = 2,
		.on_event = on_event,
	};
	return o;
}

static int setup(void **state)
{
	struct webhook_opts o = default_opts();
	struct webhook *wh;

	events_reset();
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

static unsigned port_of(void **state)
{
	return webhook_port(*state);
}

/*
 * Authentication.
 */

static void test_wrong_token(void **state)
{
	char *body = mr_example();
	struct hdrs h = mr_hdrs("k-wrong");
	struct webhook_stats st;
	struct raw_reply r;

	h.token = "s3cret-tokeX";
	assert_int_equal(post(port_of(state), &h, body, &r), 401);
	assert_true(r.closed);
	/* Not even a hint of the secret in the answer. */
	assert_null(strstr(r.text, SECRET));
	assert_int_equal(event_count(), 0);
	webhook_stats(&st, *state);
	assert_int_equal(st.unauthorized, 1);
	assert_int_equal(st.queued, 0);
	free(body);
}

static void test_token_length(void **state)
{
	static const char *const tokens[] = {
		SECRET "X", /* the secret plus one byte */
		"s3cret-toke", /* a prefix of it */
		"s",	       "", SECRET SECRET,
	};
	char *body = mr_example();
	struct hdrs h = mr_hdrs("k-len");
	size_t i;

	for (i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
		h.token = tokens[i];
		assert_int_equal(post(port_of(state), &h, body, NULL), 401);
	}
	assert_int_equal(event_count(), 0);
	free(body);
}

static void test_missing_token(void **state)
{
	char *body = mr_example();
	struct hdrs h = mr_hdrs("k-missing");

	h.token = NULL;
	assert_int_equal(post(port_of(state), &h, body, NULL), 401);
	assert_int_equal(event_count(), 0);
	free(body);
}

static void test_secret_equal(void **state)
{
	char longer[WEBHOOK_SECRET_MAX + 10];

	assert_true(webhook_secret_equal("abc", "abc"));
	assert_false(webhook_secret_equal("abc", "abd"));
	assert_false(webhook_secret_equal("abc", "abcd"));
	assert_false(webhook_secret_equal("abcd", "abc"));
	assert_false(webhook_secret_equal("", "a"));
	assert_true(webhook_secret_equal("", ""));
	/* Past the cap nothing matches, not even itself. */
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_false(webhook_secret_equal(longer, longer));
}

/*
 * Events.
 */

static void test_mr_event(void **state)
{
	char *body = mr_example();
	struct hdrs h = mr_hdrs("0f0e6a6e-1d1c-4b4f-9a34-5d0a1f2c3b4a");
	struct raw_reply r;
	struct webhook_event *ev;

	assert_int_equal(post(port_of(state), &h, body, &r), 200);
	assert_int_equal(event_count(), 1);
	ev = &events[0];
	assert_int_equal(ev->kind, WEBHOOK_MR);
	assert_string_equal(ev->project, "gitlabhq/gitlab-test");
	assert_int_equal(ev->project_id, 1);
	assert_int_equal(ev->iid, 1);
	assert_int_equal(ev->action, WEBHOOK_ACTION_OPEN);
	assert_string_equal(ev->action_name, "open");
	assert_false(ev->code_changed);
	assert_string_equal(ev->last_commit,
			    "da1560886d4f094c3e6c9ef40349f7d38b5d27d7");
	assert_string_equal(ev->delivery,
			    "0f0e6a6e-1d1c-4b4f-9a34-5d0a1f2c3b4a");
	assert_int_equal(ev->note_id, 0);
	assert_string_equal(ev->discussion_id, "");
	free(body);
}

static void test_mr_push(void **state)
{
	char *ex = mr_example();
	char *body = replace(ex, "\"action\": \"open\"",
			     "\"action\": \"update\", \"oldrev\": "
			     "\"8a5ca7e3c8b5d2fd4d36a1d5bd3d7e1c7aa5d8e3\"");
	struct hdrs h = mr_hdrs("k-push");

	assert_int_equal(post(port_of(state), &h, body, NULL), 200);
	assert_int_equal(event_count(), 1);
	assert_int_equal(events[0].action, WEBHOOK_ACTION_UPDATE);
	assert_true(events[0].code_changed);
	free(body);
	free(ex);
}

static void test_note_event(void **state)
{
	char *ex = note_example();
	char *body = replace(ex, "\"action\": \"create\",",
			     "\"action\": \"create\", \"discussion_id\": "
			     "\"6a9c1750b37d513a43987b574953fceb50b03ce7\", "
			     "\"type\": \"DiffNote\",");
	struct hdrs h = note_hdrs("k-note");
	struct webhook_event *ev;

	assert_int_equal(post(port_of(state), &h, body, NULL), 200);
	assert_int_equal(event_count(), 1);
	ev = &events[0];
	assert_int_equal(ev->kind, WEBHOOK_NOTE);
	assert_string_equal(ev->project, "gitlab-org/gitlab-test");
	assert_int_equal(ev->project_id, 5);
	assert_int_equal(ev->iid, 1);
	assert_int_equal(ev->note_id, 1244);
	assert_int_equal(ev->action, WEBHOOK_ACTION_CREATE);
	assert_string_equal(ev->noteable_type, "MergeRequest");
	assert_string_equal(ev->note_type, "DiffNote");
	assert_string_equal(ev->discussion_id,
			    "6a9c1750b37d513a43987b574953fceb50b03ce7");
	assert_string_equal(ev->last_commit,
			    "562e173be03b8ff2efb05345d12df18815438a4b");
	assert_false(ev->system_note);
	assert_false(ev->code_changed);
	/* The documented example itself: a plain note. */
	h.key = "k-note-plain";
	assert_int_equal(post(port_of(state), &h, ex, NULL), 200);
	assert_int_equal(event_count(), 2);
	assert_string_equal(events[1].note_type, "");
	assert_string_equal(events[1].discussion_id, "");
	free(body);
	free(ex);
}

static void test_note_not_on_mr(void **state)
{
	char *ex = note_example();
	char *body = replace(ex, "\"noteable_type\": \"MergeRequest\"",
			     "\"noteable_type\": \"Issue\"");
	struct hdrs h = note_hdrs("k-issue");
	struct webhook_stats st;
	struct raw_reply r;

	assert_int_equal(post(port_of(state), &h, body, &r), 200);
	assert_non_null(strstr(r.text, "ignored"));
	assert_int_equal(event_count(), 0);
	webhook_stats(&st, *state);
	assert_int_equal(st.ignored, 1);
	free(body);
	free(ex);
}

static void test_unknown_event(void **state)
{
	struct hdrs h = mr_hdrs("k-push-hook");
	struct raw_reply r;

	h.event = "Push Hook";
	assert_int_equal(post(port_of(state), &h, "{\"object_kind\":\"push\"}",
			      &r),
			 200);
	assert_non_null(strstr(r.text, "ignored"));
	h.event = "Job Hook";
	assert_int_equal(post(port_of(state), &h, "{}", NULL), 200);
	assert_int_equal(event_count(), 0);
}

/*
 * Refusals.
 */

/* Send a chunked body of about total bytes of blanks, then its end. */
static void send_chunked(int fd, size_t total)
{
	char chunk[1024], size_line[16];
	size_t sent;

	memset(chunk, ' ', sizeof(chunk));
	snprintf(size_line, sizeof(size_line), "%zx\r\n", sizeof(chunk));
	for (sent = 0; sent < total; sent += sizeof(chunk))
		if (send(fd, size_line, strlen(size_line), MSG_NOSIGNAL) < 0 ||
		    send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL) < 0 ||
		    send(fd, "\r\n", 2, MSG_NOSIGNAL) < 0)
			return;
	send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL);
}

/*
 * A delivery over the cap from a peer with the secret is GitLab's, for a
 * big MR: GitLab counts every answer but 2xx/3xx against the hook and
 * disables it after a few, so it is read, thrown away and answered 200.
 */
static void test_oversize(void **state)
{
	struct hdrs h = mr_hdrs("k-big");
	struct buf req = BUF_INIT(2 * BODY_MAX);
	struct webhook_stats st;
	struct raw_reply r;
	char chunk[1024];
	size_t sent;
	int fd;

	/* Content-Length over the cap: read to the end, 200, not handed on. */
	h.content_length = BODY_MAX + 1;
	build(&req, &h, NULL);
	memset(chunk, ' ', sizeof(chunk));
	for (sent = 0; sent < BODY_MAX + 1; sent += sizeof(chunk))
		buf_add(&req, chunk,
			BODY_MAX + 1 - sent < sizeof(chunk) ?
				BODY_MAX + 1 - sent :
				sizeof(chunk));
	fd = raw_dial(port_of(state));
	raw_send(fd, req.data, req.len);
	raw_read(&r, fd);
	close(fd);
	assert_int_equal(r.status, 200);

	/* A chunked body that outgrows the cap: the same. */
	h.content_length = -2;
	build(&req, &h, NULL);
	fd = raw_dial(port_of(state));
	raw_send(fd, req.data, req.len);
	send_chunked(fd, BODY_MAX + sizeof(chunk));
	raw_read(&r, fd);
	close(fd);
	assert_int_equal(r.status, 200);

	/* More than GitLab ever sends: 413 at once, the rest unread. */
	h.content_length = WEBHOOK_DISCARD_MAX + 1;
	build(&req, &h, NULL);
	buf_add(&req, chunk, sizeof(chunk));
	fd = raw_dial(port_of(state));
	raw_send(fd, req.data, req.len);
	raw_read(&r, fd);
	close(fd);
	assert_int_equal(r.status, 413);
	assert_true(r.closed);

	assert_int_equal(event_count(), 0);
	webhook_stats(&st, *state);
	assert_int_equal(st.oversized, 2);
	assert_int_equal(st.rejected, 1);
	buf_release(&req);
}

static void test_malformed(void **state)
{
	static const char *const bodies[] = {
		"{\"object_kind\": \"merge_request\",", /* cut short */
		"{\"object_kind\": \"merge_request\"} x", /* trailing junk */
		"[1, 2]", /* not an object */
		"{\"object_kind\": \"note\"}", /* kind vs. header */
		"{\"object_kind\": \"merge_request\"}", /* no project */
		"{\"object_kind\": \"merge_request\", \"project\": "
		"{\"id\": 1, \"path_with_namespace\": \"g/p\"}, "
		"\"object_attributes\": {\"iid\": \"1\"}}", /* mistyped */
		"",
	};
	struct hdrs h = mr_hdrs("k-bad");
	size_t i;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		assert_int_equal(post(port_of(state), &h, bodies[i], NULL),
				 400);
	assert_int_equal(event_count(), 0);
}

static void test_content_type(void **state)
{
	char *body = mr_example();
	struct hdrs h = mr_hdrs("k-ctype");

	h.ctype = "text/plain";
	assert_int_equal(post(port_of(state), &h, body, NULL), 415);
	h.ctype = "Application/JSON; charset=utf-8";
	assert_int_equal(post(port_of(state), &h, body, NULL), 200);
	assert_int_equal(event_count(), 1);
	free(body);
}

static void test_method_and_path(void **state)
{
	struct hdrs h = mr_hdrs("k-get");
	struct raw_reply r;

	h.method = "GET";
	h.content_length = 0;
	assert_int_equal(post(port_of(state), &h, "", &r), 405);
	assert_non_null(strstr(r.text, "Allow: POST"));
	h.method = "PUT";
	assert_int_equal(post(port_of(state), &h, "{}", NULL), 405);
	h.method = "POST";
	h.path = "/hooks/gitlab/x";
	assert_int_equal(post(port_of(state), &h, "{}", NULL), 404);
	h.path = "/";
	assert_int_equal(post(port_of(state), &h, "{}", NULL), 404);
	assert_int_equal(event_count(), 0);
}

/*
 * De-duplication.
 */

static void test_redelivery(void **state)
{
	char *body = mr_example();
	struct hdrs h = mr_hdrs("11111111-2222-3333-4444-555555555555");
	struct webhook_stats st;
	struct raw_reply r;

	assert_int_equal(post(port_of(state), &h, body, NULL), 200);
	assert_int_equal(post(port_of(state), &h, body, &r), 200);
	assert_non_null(strstr(r.text, "duplicate"));
	assert_int_equal(event_count(), 1);

	/* No Idempotency-Key (before GitLab 17.4): the event UUID. */
	h.key = NULL;
	h.uuid = "uuid-1";
	assert_int_equal(post(port_of(state), &h, body, NULL), 200);
	assert_int_equal(post(port_of(state), &h, body, NULL), 200);
	assert_int_equal(event_count(), 2);

	/* Neither: nothing to recognise a repeat by, so both are queued. */
	h.uuid = NULL;
	assert_int_equal(post(port_of(state), &h, body, NULL), 200);
	assert_int_equal(post(port_of(state), &h, body, NULL), 200);
	assert_int_equal(event_count(), 4);

	webhook_stats(&st, *state);
	assert_int_equal(st.queued, 4);
	assert_int_equal(st.duplicates, 2);
	free(body);
}

static void test_callback_failure(void **state)
{
	char *body = mr_example();
	struct hdrs h = mr_hdrs("k-fail");
	struct webhook_stats st;

	pthread_mutex_lock(&ev_lock);
	fail_next = 1;
	pthread_mutex_unlock(&ev_lock);
	assert_int_equal(post(port_of(state), &h, body, NULL), 503);
	assert_int_equal(event_count(), 0);
	/* Not remembered: the resend goes through. */
	assert_int_equal(post(port_of(state), &h, body, NULL), 200);
	assert_int_equal(event_count(), 1);
	webhook_stats(&st, *state);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.queued, 1);
	free(body);
}

static void test_lru_bound(void **state)
{
	struct webhook_opts o = default_opts();
	struct webhook *wh;
	char *body = mr_example();
	struct hdrs h = mr_hdrs(NULL);
	static const char *const keys[] = { "k1", "k2", "k3" };
	size_t i;

	events_reset();
	o.dedupe_entries = 2;
	assert_int_equal(webhook_new(&wh, &o), 0);
	for (i = 0; i < 3; i++) {
		h.key = keys[i];
		assert_int_equal(post(webhook_port(wh), &h, body, NULL), 200);
	}
	assert_int_equal(event_count(), 3);
	/* k3 and k2 are remembered ... */
	h.key = "k3";
	assert_int_equal(post(webhook_port(wh), &h, body, NULL), 200);
	h.key = "k2";
	assert_int_equal(post(webhook_port(wh), &h, body, NULL), 200);
	assert_int_equal(event_count(), 3);
	/* ... k1 was evicted, so it counts as new (and evicts k3). */
	h.key = "k1";
	assert_int_equal(post(webhook_port(wh), &h, body, NULL), 200);
	assert_int_equal(event_count(), 4);
	h.key = "k3";
	assert_int_equal(post(webhook_port(wh), &h, body, NULL), 200);
	assert_int_equal(event_count(), 5);
	webhook_free(wh);
	free(body);
}

/*
 * Slow clients and stopping.
 */

static void test_slow_client(void **state)
{
	char *body = mr_example();
	struct hdrs h = mr_hdrs("k-slow");
	struct buf req = BUF_INIT(64 * 1024);
	struct webhook_stats st;
	struct raw_reply r;
	int idle_head, idle_body;

	/* One client stops inside its headers, another inside its body. */
	idle_head = raw_dial(port_of(state));
	raw_send(idle_head, "POST " PATH " HTTP/1.1\r\nHost: x\r\n",
		 strlen("POST " PATH " HTTP/1.1\r\nHost: x\r\n"));
	build(&req, &h, body);
	buf_add(&req, body, 100);
	idle_body = raw_dial(port_of(state));
	raw_send(idle_body, req.data, req.len);

	/*
	 * Others are served meanwhile.  How fast is for the benchmarks to
	 * say, not a test: a loaded machine must not fail it.
	 */
	h.key = "k-fast";
	assert_int_equal(post(port_of(state), &h, body, NULL), 200);
	assert_int_equal(event_count(), 1);
	assert_string_equal(events[0].delivery, "k-fast");

	/* The idle ones are cut off by the timeout. */
	raw_read(&r, idle_head);
	assert_true(r.closed);
	assert_int_equal(r.status, 0);
	raw_read(&r, idle_body);
	assert_true(r.closed);
	assert_int_equal(r.status, 0);
	close(idle_head);
	close(idle_body);
	assert_int_equal(event_count(), 1);
	webhook_stats(&st, *state);
	assert_int_equal(st.inflight, 0);
	buf_release(&req);
	free(body);
}

/*
 * Slowloris: a local user holds the listeners' connections with clients
 * that send nothing, or one byte a second, and keeps them.  Neither the
 * health check nor a GitLab delivery may be held off by them.
 */

#define LORIS_IDLE 64
#define LORIS_TRICKLE 16
#define LORIS_WAIT_MS 30000

struct trickle {
	int fds[LORIS_TRICKLE];
	int stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

/* A request line and the start of a header field, then one byte of its
 * value a second on every connection: the headers never end. */
static void *trickle_thread(void *arg)
{
	static const char start[] = "GET /healthz HTTP/1.1\r\nX-Pad: ";
	struct trickle *t = arg;
	struct timespec until;
	int i, first = 1;

	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		for (i = 0; i < LORIS_TRICKLE; i++)
			(void)!send(t->fds[i], first ? start : "a",
				    first ? sizeof(start) - 1 : 1,
				    MSG_NOSIGNAL);
		first = 0;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&t->cond, &t->lock, &until);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/*
 * Open the idle and trickling connections to port, then do(port) must
 * succeed before LORIS_WAIT_MS, retried as long as it does not; the
 * attack's connections are closed by the server by then.
 */
static void loris(unsigned port, int (*ok)(unsigned port))
{
	struct trickle t = { .stop = 0 };
	int idle[LORIS_IDLE], i, served = 0;
	pthread_t th;
	int64_t deadline;

	for (i = 0; i < LORIS_IDLE; i++)
		idle[i] = raw_dial(port);
	for (i = 0; i < LORIS_TRICKLE; i++)
		t.fds[i] = raw_dial(port);
	pthread_mutex_init(&t.lock, NULL);
	pthread_cond_init(&t.cond, NULL);
	assert_int_equal(pthread_create(&th, NULL, trickle_thread, &t), 0);
	deadline = raw_now_ms() + LORIS_WAIT_MS;
	while (!served && raw_now_ms() < deadline)
		served = ok(port);
	assert_true(served);
	/* The attack's connections go: none is kept open by the server. */
	for (i = 0; i < LORIS_IDLE; i++) {
		assert_true(raw_closed_by(idle[i], deadline + LORIS_WAIT_MS));
		close(idle[i]);
	}
	for (i = 0; i < LORIS_TRICKLE; i++)
		assert_true(raw_closed_by(t.fds[i], deadline + LORIS_WAIT_MS));
	pthread_mutex_lock(&t.lock);
	t.stop = 1;
	pthread_cond_signal(&t.cond);
	pthread_mutex_unlock(&t.lock);
	pthread_join(th, NULL);
	for (i = 0; i < LORIS_TRICKLE; i++)
		close(t.fds[i]);
	pthread_cond_destroy(&t.cond);
	pthread_mutex_destroy(&t.lock);
}

static void on_healthz(struct statusd_reply *r, const char *path, void *arg)
{
	(void)arg;
	if (strcmp(path, "/healthz"))
		return;
	r->status = 200;
	buf_adds(&r->body, "ok\n");
}

static int healthz_ok(unsigned port)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n"
				  "Connection: close\r\n\r\n";
	struct raw_reply r;
	int fd = raw_dial(port);

	raw_send(fd, req, sizeof(req) - 1);
	raw_read(&r, fd);
	close(fd);
	return r.status == 200;
}

static void test_statusd_slowloris(void **state)
{
	struct statusd_opts o = { .listen = "127.0.0.1:0",
				  .on_get = on_healthz };
	struct statusd *sd;

	(void)state;
	assert_int_equal(statusd_new(&sd, &o), 0);
	loris(statusd_port(sd), healthz_ok);
	assert_true(healthz_ok(statusd_port(sd)));
	statusd_free(sd);
}

static int delivery_ok(unsigned port)
{
	static int n;
	char key[32], *body = mr_example();
	struct hdrs h;
	int status;

	snprintf(key, sizeof(key), "k-loris-%d", n++);
	h = mr_hdrs(key);
	status = post(port, &h, body, NULL);
	free(body);
	return status == 200;
}

static void test_webhook_slowloris(void **state)
{
	struct webhook_opts o = default_opts();
	struct webhook *wh;

	(void)state;
	events_reset();
	assert_int_equal(webhook_new(&wh, &o), 0);
	loris(webhook_port(wh), delivery_ok);
	assert_true(event_count() >= 1);
	webhook_free(wh);
}

static void *free_thread(void *arg)
{
	webhook_free(arg);
	return NULL;
}

static void test_stop_drains(void **state)
{
	struct webhook_opts o = default_opts();
	struct webhook *wh;
	char *body = mr_example();
	struct hdrs h = mr_hdrs("k-drain");
	struct buf req = BUF_INIT(64 * 1024);
	struct webhook_stats st;
	struct raw_reply r;
	pthread_t t;
	size_t head;
	int fd, i;

	events_reset();
	assert_int_equal(webhook_new(&wh, &o), 0);
	build(&req, &h, body);
	head = req.len;
	buf_adds(&req, body);
	fd = raw_dial(webhook_port(wh));
	raw_send(fd, req.data, head + 10);
	/* Wait until the server holds the request. */
	for (i = 0; i < 200; i++) {
		webhook_stats(&st, wh);
		if (st.inflight == 1)
			break;
		sleep_ms(5);
	}
	assert_int_equal(st.inflight, 1);
	assert_int_equal(pthread_create(&t, NULL, free_thread, wh), 0);
	sleep_ms(200);
	/* The request in flight still completes. */
	raw_send(fd, req.data + head + 10, req.len - head - 10);
	raw_read(&r, fd);
	close(fd);
	assert_int_equal(r.status, 200);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(event_count(), 1);
	buf_release(&req);
	free(body);
}

/*
 * Setup errors and the parser on its own.
 */

static void test_bad_opts(void **state)
{
	struct webhook_opts o = default_opts();
	struct webhook *wh, *wh2;
	char *addr;

	o.secret = "";
	assert_int_equal(webhook_new(&wh, &o), PB_EINVAL);
	assert_null(wh);
	o.secret = SECRET "\n";
	assert_int_equal(webhook_new(&wh, &o), PB_EINVAL);
	assert_non_null(strstr(err_msg(), "newline"));
	o.secret = SECRET;
	o.listen = "127.0.0.1";
	assert_int_equal(webhook_new(&wh, &o), PB_EINVAL);
	o.listen = "127.0.0.1:65536";
	assert_int_equal(webhook_new(&wh, &o), PB_EINVAL);
	o.listen = "[::1:80";
	assert_int_equal(webhook_new(&wh, &o), PB_EINVAL);
	o.listen = "127.0.0.1:0";
	o.path = "hooks";
	assert_int_equal(webhook_new(&wh, &o), PB_EINVAL);
	o.path = NULL;
	o.on_event = NULL;
	assert_int_equal(webhook_new(&wh, &o), PB_EINVAL);
	o.on_event = on_event;

	/* A port in use is a clear error. */
	assert_int_equal(webhook_new(&wh, &o), 0);
	addr = xasprintf("127.0.0.1:%u", webhook_port(wh));
	o.listen = addr;
	assert_true(webhook_new(&wh2, &o) < 0);
	assert_null(wh2);
	assert_non_null(strstr(err_msg(), "cannot listen"));
	webhook_free(wh);
	webhook_free(NULL);
	free(addr);
}

static void test_parse(void **state)
{
	struct webhook_event ev;
	char *mr = mr_example(), *note = note_example(), *bad;

	/* Events we do not handle are not even parsed. */
	assert_int_equal(webhook_parse(&ev, "Push Hook", "garbage", 7), 0);
	assert_int_equal(ev.kind, WEBHOOK_IGNORED);
	assert_int_equal(webhook_parse(&ev, NULL, "", 0), 0);
	assert_int_equal(ev.kind, WEBHOOK_IGNORED);

	assert_int_equal(
		webhook_parse(&ev, "Merge Request Hook", mr, strlen(mr)), 0);
	assert_int_equal(ev.kind, WEBHOOK_MR);
	assert_string_equal(ev.delivery, "");
	/* A note payload under the MR header. */
	assert_int_equal(webhook_parse(&ev, "Merge Request Hook", note,
				       strlen(note)),
			 PB_EINVAL);
	assert_int_equal(ev.kind, WEBHOOK_IGNORED);
	assert_non_null(strstr(err_msg(), "object_kind"));

	/* A head that is not a SHA. */
	bad = replace(mr, "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
		      "da1560886d4f094c3e6c9ef40349f7d38b5d27dZ");
	assert_int_equal(webhook_parse(&ev, "Merge Request Hook", bad,
				       strlen(bad)),
			 PB_EINVAL);
	assert_non_null(strstr(err_msg(), "last_commit"));
	free(bad);
	/* oldrev must be a string. */
	bad = replace(mr, "\"action\": \"open\"",
		      "\"action\": \"update\", \"oldrev\": 5");
	assert_int_equal(webhook_parse(&ev, "Merge Request Hook", bad,
				       strlen(bad)),
			 PB_EINVAL);
	free(bad);
	/* A path with a control character. */
	bad = replace(mr, "\"gitlabhq/gitlab-test\"",
		      "\"gitlabhq/\\u001b[2J\"");
	assert_int_equal(webhook_parse(&ev, "Merge Request Hook", bad,
				       strlen(bad)),
			 PB_EINVAL);
	free(bad);
	/* An action we do not know is kept by name. */
	bad = replace(mr, "\"action\": \"open\"", "\"action\": \"frobnicate\"");
	assert_int_equal(
		webhook_parse(&ev, "Merge Request Hook", bad, strlen(bad)), 0);
	assert_int_equal(ev.action, WEBHOOK_ACTION_OTHER);
	assert_string_equal(ev.action_name, "frobnicate");
	assert_string_equal(webhook_action_name(ev.action), "other");
	assert_string_equal(webhook_action_name(WEBHOOK_ACTION_MERGE), "merge");
	free(bad);
	/* A system note is passed on, marked. */
	bad = replace(note, "\"system\": false", "\"system\": true");
	assert_int_equal(webhook_parse(&ev, "Note Hook", bad, strlen(bad)), 0);
	assert_true(ev.system_note);
	free(bad);
	free(mr);
	free(note);
}

/*
 * A Pipeline Hook (doc/user/project/integrations/webhook_events.md
 * "Pipeline events", built by lib/gitlab/data_builder/pipeline.rb): the
 * pipeline's id, sha and status, and merge_request for a pipeline of an
 * MR, null for a branch's or a tag's.
 */
static const char pipeline_hook[] =
	"{\"object_kind\": \"pipeline\","
	" \"object_attributes\": {\"id\": 31, \"iid\": 3,"
	" \"ref\": \"refs/merge-requests/1/head\", \"tag\": false,"
	" \"sha\": \"bcbb5ec396a2c0f828686f14fac9b80b780504f2\","
	" \"status\": \"failed\", \"stages\": [\"build\", \"test\"],"
	" \"source\": \"merge_request_event\"},"
	" \"merge_request\": {\"id\": 1, \"iid\": 1,"
	" \"title\": \"Test\", \"state\": \"opened\"},"
	" \"project\": {\"id\": 1, \"name\": \"Gitlab Test\","
	" \"path_with_namespace\": \"gitlabhq/gitlab-test\"},"
	" \"builds\": []}";

static void test_parse_pipeline(void **state)
{
	struct webhook_event ev;
	char *bad;

	(void)state;
	assert_int_equal(webhook_parse(&ev, "Pipeline Hook", pipeline_hook,
				       strlen(pipeline_hook)),
			 0);
	assert_int_equal(ev.kind, WEBHOOK_PIPELINE);
	assert_int_equal(ev.iid, 1);
	assert_int_equal(ev.pipeline_id, 31);
	assert_string_equal(ev.pipeline_status, "failed");
	assert_string_equal(ev.last_commit,
			    "bcbb5ec396a2c0f828686f14fac9b80b780504f2");
	assert_string_equal(ev.project, "gitlabhq/gitlab-test");
	/* A branch pipeline: not an MR's, ignored (polling reads the MR's
	 * pipelines, branch ones among them). */
	bad = replace(pipeline_hook,
		      "{\"id\": 1, \"iid\": 1, \"title\": \"Test\", "
		      "\"state\": \"opened\"}",
		      "null");
	assert_int_equal(webhook_parse(&ev, "Pipeline Hook", bad, strlen(bad)),
			 0);
	assert_int_equal(ev.kind, WEBHOOK_IGNORED);
	free(bad);
	/* Under another header, or without a status: refused. */
	assert_int_equal(webhook_parse(&ev, "Note Hook", pipeline_hook,
				       strlen(pipeline_hook)),
			 PB_EINVAL);
	bad = replace(pipeline_hook, "\"status\": \"failed\", ", "");
	assert_int_equal(webhook_parse(&ev, "Pipeline Hook", bad, strlen(bad)),
			 PB_EINVAL);
	free(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_wrong_token, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_token_length, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_missing_token, setup,
						teardown),
		cmocka_unit_test(test_secret_equal),
		cmocka_unit_test_setup_teardown(test_mr_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mr_push, setup, teardown),
		cmocka_unit_test_setup_teardown(test_note_event, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_note_not_on_mr, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unknown_event, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_oversize, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_content_type, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_method_and_path, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_redelivery, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_callback_failure, setup,
						teardown),
		cmocka_unit_test(test_lru_bound),
		cmocka_unit_test_setup_teardown(test_slow_client, setup,
						teardown),
		cmocka_unit_test(test_statusd_slowloris),
		cmocka_unit_test(test_webhook_slowloris),
		cmocka_unit_test(test_stop_drains),
		cmocka_unit_test(test_bad_opts),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_pipeline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
