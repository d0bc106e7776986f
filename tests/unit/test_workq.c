/*
 * Tests of the daemon's small parts: the work queue (order, de-duplication,
 * the cap, waking from another thread and from a signal handler), the
 * delivery backoff, "group/project!IID" parsing and the mirror's paths.
 */
#include "cmocka_all.h"
#include "outbound/mirror.h"
#include "outbound/outbound.h"
#include "outbound/workq.h"
#include "util/err.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void test_order_and_dedupe(void **state)
{
	struct workq *q = NULL;
	struct workq_item it;

	(void)state;
	assert_int_equal(workq_new(&q, 3), 0);
	assert_int_equal(workq_push(q, "g/p", 1, 10, "poll"), 0);
	assert_int_equal(workq_push(q, "g/p", 2, 0, "webhook open"), 0);
	/* The same MR again: once, with the later updated_at. */
	assert_int_equal(workq_push(q, "g/p", 1, 20, "webhook push"),
			 PB_EEXISTS);
	assert_int_equal(workq_push(q, "g/q", 1, 0, "poll"), 0);
	assert_int_equal(workq_len(q), 3);
	assert_int_equal(workq_push(q, "g/r", 1, 0, "poll"), PB_ELIMIT);
	assert_int_equal(workq_push(q, "", 1, 0, "poll"), PB_EINVAL);
	assert_int_equal(workq_push(q, "g/p", 0, 0, "poll"), PB_EINVAL);

	assert_int_equal(workq_pop(&it, q), 0);
	assert_string_equal(it.project, "g/p");
	assert_int_equal(it.iid, 1);
	assert_int_equal(it.updated_ms, 20);
	assert_string_equal(it.reason, "poll");
	/* Room again, and ring order kept across the wrap. */
	assert_int_equal(workq_push(q, "g/r", 1, 0, "poll"), 0);
	assert_int_equal(workq_pop(&it, q), 0);
	assert_int_equal(it.iid, 2);
	assert_int_equal(workq_pop(&it, q), 0);
	assert_string_equal(it.project, "g/q");
	assert_int_equal(workq_pop(&it, q), 0);
	assert_string_equal(it.project, "g/r");
	assert_int_equal(workq_pop(&it, q), PB_ENOTFOUND);
	workq_free(q);
}

static void *pusher(void *arg)
{
	usleep(50 * 1000);
	workq_push(arg, "g/p", 7, 0, "thread");
	return NULL;
}

static int readable(struct workq *q, int ms)
{
	struct pollfd p = { workq_fd(q), POLLIN, 0 };

	return poll(&p, 1, ms) == 1;
}

static struct workq *signal_q;

static void on_usr1(int sig)
{
	(void)sig;
	workq_wake(signal_q);
}

static void test_wake(void **state)
{
	struct workq *q = NULL;
	struct workq_item it;
	pthread_t t;

	(void)state;
	assert_int_equal(workq_new(&q, 0), 0);
	assert_false(readable(q, 0));
	/* A push from another thread wakes a poll(2) here. */
	assert_int_equal(pthread_create(&t, NULL, pusher, q), 0);
	assert_true(readable(q, 5000));
	pthread_join(t, NULL);
	workq_drain(q);
	assert_false(readable(q, 0));
	assert_int_equal(workq_pop(&it, q), 0);
	assert_int_equal(it.iid, 7);
	/* And so does a signal handler. */
	signal_q = q;
	signal(SIGUSR1, on_usr1);
	raise(SIGUSR1);
	assert_true(readable(q, 1000));
	signal(SIGUSR1, SIG_DFL);
	workq_drain(q);
	workq_free(q);
}

static void test_backoff(void **state)
{
	(void)state;
	assert_int_equal(outbound_backoff(1), OUTBOUND_RETRY_BASE);
	assert_int_equal(outbound_backoff(2), 2 * OUTBOUND_RETRY_BASE);
	assert_int_equal(outbound_backoff(3), 4 * OUTBOUND_RETRY_BASE);
	assert_int_equal(outbound_backoff(7), OUTBOUND_RETRY_MAX);
	assert_int_equal(outbound_backoff(1000), OUTBOUND_RETRY_MAX);
}

static void test_parse_mr(void **state)
{
	char p[64];
	int64_t iid = 0;

	(void)state;
	assert_int_equal(outbound_parse_mr(p, sizeof(p), &iid, "g/s/p!12"), 0);
	assert_string_equal(p, "g/s/p");
	assert_int_equal(iid, 12);
	assert_int_equal(outbound_parse_mr(p, sizeof(p), &iid, "g/p"),
			 PB_EINVAL);
	assert_int_equal(outbound_parse_mr(p, sizeof(p), &iid, "!3"),
			 PB_EINVAL);
	assert_int_equal(outbound_parse_mr(p, sizeof(p), &iid, "g/p!0"),
			 PB_EINVAL);
	assert_int_equal(outbound_parse_mr(p, sizeof(p), &iid, "g/p!1x"),
			 PB_EINVAL);
	assert_int_equal(outbound_parse_mr(p, 4, &iid, "group/p!1"), PB_EINVAL);
}

static void test_mirror_dir(void **state)
{
	char d[64];

	(void)state;
	assert_int_equal(mirror_dir(d, sizeof(d), "/m", "g/sub/p"), 0);
	assert_string_equal(d, "/m/g/sub/p.git");
	assert_int_equal(mirror_dir(d, sizeof(d), "/m", "../etc"), PB_EINVAL);
	assert_int_equal(mirror_dir(d, sizeof(d), "/m", "g//p"), PB_EINVAL);
	assert_int_equal(mirror_dir(d, sizeof(d), "/m", "g/.git/p"), PB_EINVAL);
	assert_int_equal(mirror_dir(d, sizeof(d), "/m", "/abs"), PB_EINVAL);
	assert_int_equal(mirror_dir(d, 8, "/m", "group/project"), PB_ELIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_dedupe),
		cmocka_unit_test(test_wake),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_parse_mr),
		cmocka_unit_test(test_mirror_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
