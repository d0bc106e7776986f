/*
 * forge/httpd: the HTTP server module under the webhook receiver and the
 * status server, on its own.  A server on 127.0.0.1 port 0 with a small
 * router of the test's (GET /hello, POST /echo, a request refused, one
 * answered before its body), spoken to over raw sockets (rawhttp.h): the
 * request's calls and their order, the answers and their headers, the
 * limits libmicrohttpd is given (the header memory), the slow-client
 * guard (a whole head within timeout_s however it trickles; the oldest
 * idle connection gives way when max_connections are open), quiescing
 * and stopping.  Every wait is for an event, with a generous bound.
 */
#include "cmocka_all.h"
#include "forge/httpd.h"
#include "rawhttp.h"
#include "util/buf.h"
#include "util/err.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* How long any wait for an event may take before the test fails. */
#define WAIT_MS 30000

/*
 * What the server's callbacks saw, under one lock; a condition variable
 * wakes the test at each call.
 */
struct seen {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned heads, datas, ends, late; /* late: a call after the answer */
	unsigned done[3]; /* by enum httpd_end */
	size_t body; /* bytes of body handed to HTTPD_DATA */
	char url[256], method[16], xtest[64];
};

static struct seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER,
			    .cond = PTHREAD_COND_INITIALIZER };

static void seen_reset(void)
{
	pthread_mutex_lock(&seen.lock);
	seen.heads = seen.datas = seen.ends = seen.late = 0;
	memset(seen.done, 0, sizeof(seen.done));
	seen.body = 0;
	seen.url[0] = seen.method[0] = seen.xtest[0] = '\0';
	pthread_mutex_unlock(&seen.lock);
}

/* *counter (read under the lock) reaches n before WAIT_MS; 1 if so. */
static int wait_for(const unsigned *counter, unsigned n)
{
	struct timespec until;
	int ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&seen.lock);
	while (*counter < n)
		if (pthread_cond_timedwait(&seen.cond, &seen.lock, &until))
			break;
	ok = *counter >= n;
	pthread_mutex_unlock(&seen.lock);
	return ok;
}

static unsigned count_of(const unsigned *counter)
{
	unsigned n;

	pthread_mutex_lock(&seen.lock);
	n = *counter;
	pthread_mutex_unlock(&seen.lock);
	return n;
}

/* Per request: bytes of body seen, and whether it was answered. */
struct exchange {
	size_t body;
	int answered;
};

static int answer(struct httpd_req *req, struct exchange *x, unsigned status,
		  const char *body, const char *allow)
{
	x->answered = 1;
	return httpd_answer(req, status, "text/plain", body, strlen(body),
			    allow, HTTPD_NO_STORE);
}

/*
 * The router: GET /hello answers at the head ("hello X-Test"); POST /echo
 * at the end, with the body's length; /refuse closes the connection
 * without an answer; POST /early answers 413 at the head, before its
 * body; POST /slow never answers (a request in flight); any other path
 * is 404, another method 405 with Allow.
 */
static int on_request(struct httpd_req *req, enum httpd_call call,
		      const char *data, size_t len, void *arg)
{
	struct exchange *x = httpd_req_data(req);
	const char *url = httpd_url(req), *method = httpd_method(req);
	char text[64];

	(void)data;
	(void)arg;
	pthread_mutex_lock(&seen.lock);
	if (call == HTTPD_HEAD) {
		const char *xt = httpd_header(req, "X-Test");

		seen.heads++;
		snprintf(seen.url, sizeof(seen.url), "%s", url);
		snprintf(seen.method, sizeof(seen.method), "%s", method);
		snprintf(seen.xtest, sizeof(seen.xtest), "%s", xt ? xt : "");
	} else if (x && x->answered) {
		seen.late++;
	} else if (call == HTTPD_DATA) {
		seen.datas++;
		seen.body += len;
	} else {
		seen.ends++;
	}
	pthread_cond_broadcast(&seen.cond);
	pthread_mutex_unlock(&seen.lock);

	if (call == HTTPD_HEAD) {
		x = calloc(1, sizeof(*x));
		assert_non_null(x);
		httpd_req_set_data(req, x);
		if (!strcmp(url, "/refuse"))
			return -1;
		if (!strcmp(url, "/hello")) {
			if (strcmp(method, "GET"))
				return answer(req, x, HTTPD_METHOD_NOT_ALLOWED,
					      "GET only\n", "GET");
			snprintf(text, sizeof(text), "hello %s\n",
				 httpd_header(req, "X-Test") ?
					 httpd_header(req, "X-Test") :
					 "-");
			return answer(req, x, HTTPD_OK, text, NULL);
		}
		if (!strcmp(url, "/early"))
			return answer(req, x, HTTPD_CONTENT_TOO_LARGE,
				      "too large\n", NULL);
		if (strcmp(url, "/echo") && strcmp(url, "/slow"))
			return answer(req, x, HTTPD_NOT_FOUND, "no\n", NULL);
		if (strcmp(method, "POST"))
			return answer(req, x, HTTPD_METHOD_NOT_ALLOWED,
				      "POST only\n", "POST");
		return 0;
	}
	if (call == HTTPD_DATA) {
		x->body += len;
		return 0;
	}
	if (strcmp(url, "/echo"))
		return 0; /* /slow: never answered */
	snprintf(text, sizeof(text), "%zu\n", x->body);
	return answer(req, x, HTTPD_OK, text, NULL);
}

static void on_done(struct httpd_req *req, enum httpd_end how, void *arg)
{
	(void)arg;
	free(httpd_req_data(req));
	httpd_req_set_data(req, NULL);
	pthread_mutex_lock(&seen.lock);
	seen.done[how]++;
	pthread_cond_broadcast(&seen.cond);
	pthread_mutex_unlock(&seen.lock);
}

static struct httpd_opts opts(unsigned max_connections, unsigned timeout_s)
{
	struct httpd_opts o = {
		.listen = "127.0.0.1:0",
		.name = "test server",
		.max_connections = max_connections,
		.threads = 2,
		.timeout_s = timeout_s,
		.on_request = on_request,
		.on_done = on_done,
	};
	return o;
}

static struct httpd *start(unsigned max_connections, unsigned timeout_s)
{
	struct httpd_opts o = opts(max_connections, timeout_s);
	struct httpd *h;

	seen_reset();
	if (httpd_new(&h, &o))
		fail_msg("httpd_new: %s", err_msg());
	assert_non_null(h);
	assert_true(httpd_port(h) > 0);
	return h;
}

/* One whole request (Connection: close); its reply. */
static void exchange(struct raw_reply *r, unsigned port, const char *head,
		     const char *body, size_t len)
{
	struct buf req = BUF_INIT(1024 * 1024);
	int fd;

	buf_adds(&req, head);
	if (len)
		buf_addf(&req, "Content-Length: %zu\r\n", len);
	buf_adds(&req, "Connection: close\r\n\r\n");
	if (len)
		buf_add(&req, body, len);
	assert_int_equal(buf_error(&req), 0);
	fd = raw_dial(port);
	raw_send(fd, req.data, req.len);
	raw_read(r, fd);
	close(fd);
	buf_release(&req);
}

static const char *body_of(const struct raw_reply *r)
{
	const char *b = strstr(r->text, "\r\n\r\n");

	return b ? b + 4 : "";
}

/* The reply has header line `line` (case as the server writes it). */
static int has_header(const struct raw_reply *r, const char *line)
{
	const char *end = strstr(r->text, "\r\n\r\n");
	const char *at = strstr(r->text, line);

	return at && end && at < end;
}

/*
 * Serving and routes.
 */

static void test_serve(void **state)
{
	struct httpd *h = start(8, 10);
	struct raw_reply r;

	(void)state;
	exchange(&r, httpd_port(h),
		 "GET /hello HTTP/1.1\r\nHost: x\r\nX-Test: abc\r\n", NULL, 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(body_of(&r), "hello abc\n");
	assert_true(has_header(&r, "Content-Type: text/plain\r\n"));
	assert_true(has_header(&r, "Cache-Control: no-store\r\n"));
	assert_true(wait_for(&seen.done[HTTPD_END_CLOSED], 1));
	pthread_mutex_lock(&seen.lock);
	assert_int_equal(seen.heads, 1);
	assert_string_equal(seen.url, "/hello");
	assert_string_equal(seen.method, "GET");
	assert_string_equal(seen.xtest, "abc");
	/* Answered at the head: no call for the (empty) rest. */
	assert_int_equal(seen.late, 0);
	pthread_mutex_unlock(&seen.lock);
	httpd_free(h);
	assert_int_equal(count_of(&seen.done[HTTPD_END_CLOSED]), 1);
}

static void test_routes(void **state)
{
	struct httpd *h = start(8, 10);
	unsigned port = httpd_port(h);
	struct raw_reply r;

	(void)state;
	exchange(&r, port, "GET /nothing HTTP/1.1\r\nHost: x\r\n", NULL, 0);
	assert_int_equal(r.status, 404);
	assert_string_equal(body_of(&r), "no\n");
	assert_false(has_header(&r, "Allow:"));

	exchange(&r, port, "POST /hello HTTP/1.1\r\nHost: x\r\n", "x", 1);
	assert_int_equal(r.status, 405);
	assert_true(has_header(&r, "Allow: GET\r\n"));

	exchange(&r, port, "GET /echo HTTP/1.1\r\nHost: x\r\n", NULL, 0);
	assert_int_equal(r.status, 405);
	assert_true(has_header(&r, "Allow: POST\r\n"));

	/* Refused at the head: closed, no answer at all. */
	exchange(&r, port, "GET /refuse HTTP/1.1\r\nHost: x\r\n", NULL, 0);
	assert_int_equal(r.status, 0);
	assert_true(r.closed);

	assert_true(wait_for(&seen.done[HTTPD_END_CLOSED], 4));
	httpd_free(h);
}

/* The calls a request made, as seen once it was over. */
struct counts {
	unsigned heads, datas, ends, late;
	size_t body;
};

/* POST len bytes to path on a server of its own; the reply and calls. */
static void post_big(struct raw_reply *r, struct counts *c, const char *path,
		     size_t len)
{
	struct httpd *h = start(8, 10);
	char *body = malloc(len), head[64];

	assert_non_null(body);
	memset(body, 'b', len);
	snprintf(head, sizeof(head), "POST %s HTTP/1.1\r\nHost: x\r\n", path);
	exchange(r, httpd_port(h), head, body, len);
	assert_true(wait_for(&seen.done[HTTPD_END_CLOSED], 1));
	pthread_mutex_lock(&seen.lock);
	c->heads = seen.heads;
	c->datas = seen.datas;
	c->ends = seen.ends;
	c->late = seen.late;
	c->body = seen.body;
	pthread_mutex_unlock(&seen.lock);
	httpd_free(h);
	free(body);
}

/* A body comes in pieces, all handed on, then HTTPD_END once. */
static void test_body(void **state)
{
	size_t len = 300 * 1024;
	struct raw_reply r;
	struct counts c;
	char expect[32];

	(void)state;
	post_big(&r, &c, "/echo", len);
	assert_int_equal(r.status, 200);
	snprintf(expect, sizeof(expect), "%zu\n", len);
	assert_string_equal(body_of(&r), expect);
	assert_int_equal(c.heads, 1);
	assert_true(c.datas >= 1);
	assert_int_equal(c.body, len);
	assert_int_equal(c.ends, 1);
	assert_int_equal(c.late, 0);
}

/* Answered at the head: the body is read and dropped, no further call. */
static void test_answer_early(void **state)
{
	struct raw_reply r;
	struct counts c;

	(void)state;
	post_big(&r, &c, "/early", 200 * 1024);
	assert_int_equal(r.status, 413);
	assert_int_equal(c.heads, 1);
	assert_int_equal(c.datas, 0);
	assert_int_equal(c.ends, 0);
	assert_int_equal(c.late, 0);
}

/*
 * Limits: a request head larger than the connection's memory (32 KiB)
 * never reaches the caller; libmicrohttpd answers it with an error
 * status (or drops it), and the server goes on.
 */
static void test_head_limit(void **state)
{
	struct httpd *h = start(8, 10);
	struct buf head = BUF_INIT(128 * 1024);
	struct raw_reply r;
	char pad[1001];
	size_t i;

	(void)state;
	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	buf_adds(&head, "GET /hello HTTP/1.1\r\nHost: x\r\n");
	for (i = 0; i < 64; i++)
		buf_addf(&head, "X-Pad-%zu: %s\r\n", i, pad);
	assert_int_equal(buf_error(&head), 0);
	exchange(&r, httpd_port(h), head.data, NULL, 0);
	assert_true(r.status == 0 || r.status >= 400);
	assert_true(r.status != 200);
	assert_int_equal(count_of(&seen.heads), 0);

	exchange(&r, httpd_port(h), "GET /hello HTTP/1.1\r\nHost: x\r\n", NULL,
		 0);
	assert_int_equal(r.status, 200);
	httpd_free(h);
	buf_release(&head);
}

/*
 * The slow-client guard.
 */

/*
 * A head trickled a byte at a time, faster than the timeout (which
 * libmicrohttpd alone restarts at every byte): the guard still closes
 * the connection, and serves others meanwhile.  The pace is the poll()
 * that also waits for the close.
 */
static void test_trickle(void **state)
{
	static const char start_line[] = "GET /hello HTTP/1.1\r\nX-Pad: ";
	struct httpd *h = start(8, 1);
	int64_t deadline = raw_now_ms() + WAIT_MS;
	struct pollfd p;
	struct raw_reply r;
	char scratch[64];
	int fd, closed = 0;

	(void)state;
	fd = raw_dial(httpd_port(h));
	raw_send(fd, start_line, sizeof(start_line) - 1);
	p.fd = fd;
	p.events = POLLIN;
	while (!closed && raw_now_ms() < deadline) {
		ssize_t n;

		if (poll(&p, 1, 100) > 0) {
			n = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
			closed = n == 0 ||
				 (n < 0 && errno != EAGAIN && errno != EINTR);
			continue;
		}
		if (send(fd, "a", 1, MSG_NOSIGNAL) != 1)
			closed = 1;
	}
	assert_true(closed);
	close(fd);
	/* The trickler never became a request. */
	assert_int_equal(count_of(&seen.heads), 0);
	exchange(&r, httpd_port(h), "GET /hello HTTP/1.1\r\nHost: x\r\n", NULL,
		 0);
	assert_int_equal(r.status, 200);
	httpd_free(h);
}

/*
 * max_connections idle connections open: a new client is served, and
 * the oldest idle one is shut down to make room (the timeout is far
 * longer than the wait, so the cut is the limit's).
 */
#define LIMIT 4

static void test_connection_limit(void **state)
{
	struct httpd_opts o = opts(LIMIT, 600);
	struct httpd *h;
	int64_t deadline = raw_now_ms() + WAIT_MS;
	int idle[LIMIT], i, cut = 0;
	struct raw_reply r;

	(void)state;
	/* One thread: it takes the connections in the order they came, so
	 * the idle ones are counted before the new one.  (With several, one
	 * thread may serve the new client whole before another counts the
	 * last idle connection: nothing is over the limit then.) */
	o.threads = 1;
	seen_reset();
	assert_int_equal(httpd_new(&h, &o), 0);
	for (i = 0; i < LIMIT; i++)
		idle[i] = raw_dial(httpd_port(h));
	exchange(&r, httpd_port(h), "GET /hello HTTP/1.1\r\nHost: x\r\n", NULL,
		 0);
	assert_int_equal(r.status, 200);
	/* The oldest idle one goes: wait for the first of them to close. */
	while (!cut && raw_now_ms() < deadline)
		for (i = 0; i < LIMIT && !cut; i++)
			cut = raw_closed_by(idle[i], raw_now_ms() + 50);
	assert_true(cut);
	for (i = 0; i < LIMIT; i++)
		close(idle[i]);
	httpd_free(h);
}

/*
 * Stopping.
 */

/*
 * httpd_free() with an idle connection and a request in flight (its head
 * in, its body not): it returns, both connections are closed, and the
 * request ends with HTTPD_END_SHUTDOWN.
 */
static void test_stop(void **state)
{
	static const char head[] = "POST /slow HTTP/1.1\r\nHost: x\r\n"
				   "Content-Length: 100\r\n\r\n0123456789";
	struct httpd *h = start(8, 600);
	int64_t deadline;
	int idle, busy;

	(void)state;
	idle = raw_dial(httpd_port(h));
	busy = raw_dial(httpd_port(h));
	raw_send(busy, head, sizeof(head) - 1);
	assert_true(wait_for(&seen.datas, 1));
	httpd_free(h);
	deadline = raw_now_ms() + WAIT_MS;
	assert_true(raw_closed_by(idle, deadline));
	assert_true(raw_closed_by(busy, deadline));
	assert_int_equal(count_of(&seen.done[HTTPD_END_SHUTDOWN]), 1);
	assert_int_equal(count_of(&seen.ends), 0);
	close(idle);
	close(busy);
}

/*
 * Quiesced (no new connection taken): a keep-alive connection open
 * before is still served.  (An answer given at the head closes the
 * connection - libmicrohttpd's choice for a request not read to its end -
 * so the kept-alive requests here are answered at their end.)
 */
static void test_quiesce(void **state)
{
	static const char req[] = "POST /echo HTTP/1.1\r\nHost: x\r\n"
				  "Content-Length: 3\r\n\r\nabc";
	static const char last[] = "POST /echo HTTP/1.1\r\nHost: x\r\n"
				   "Content-Length: 5\r\n"
				   "Connection: close\r\n\r\nabcde";
	struct httpd *h = start(8, 600);
	struct raw_reply r;
	const char *first;
	int fd;

	(void)state;
	fd = raw_dial(httpd_port(h));
	raw_send(fd, req, sizeof(req) - 1);
	assert_true(wait_for(&seen.done[HTTPD_END_CLOSED], 1));
	httpd_quiesce(h);
	httpd_quiesce(h); /* twice is harmless */
	raw_send(fd, last, sizeof(last) - 1);
	raw_read(&r, fd);
	close(fd);
	/* Both answers came on the one connection. */
	assert_int_equal(r.status, 200);
	first = strstr(r.text, "\r\n\r\n3\n");
	assert_non_null(first);
	assert_non_null(strstr(first, "HTTP/1.1 200"));
	assert_non_null(strstr(first, "\r\n\r\n5\n"));
	assert_int_equal(count_of(&seen.heads), 2);
	httpd_free(h);
}

/*
 * Setup errors.
 */

static void test_bad_listen(void **state)
{
	static const char *const bad[] = { "127.0.0.1",	  "127.0.0.1:65536",
					   "127.0.0.1:x", ":80",
					   "[::1:80",	  "127.0.0.1:" };
	struct httpd_opts o = opts(8, 10);
	struct httpd *h, *h2;
	char addr[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.listen = bad[i];
		h = (struct httpd *)&o;
		assert_int_equal(httpd_new(&h, &o), PB_EINVAL);
		assert_null(h);
	}
	/* A port taken: an error, nothing started. */
	h = start(8, 10);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", httpd_port(h));
	o.listen = addr;
	h2 = (struct httpd *)&o;
	assert_true(httpd_new(&h2, &o) < 0);
	assert_null(h2);
	assert_non_null(strstr(err_msg(), addr));
	httpd_free(h);
	httpd_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_body),
		cmocka_unit_test(test_answer_early),
		cmocka_unit_test(test_head_limit),
		cmocka_unit_test(test_trickle),
		cmocka_unit_test(test_connection_limit),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_quiesce),
		cmocka_unit_test(test_bad_listen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
