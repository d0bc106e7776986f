/*
 * sd_notify(3)'s protocol as util/sdnotify.h speaks it, received on a
 * datagram socket of the test's own as systemd would: a path and an
 * abstract "@name", the variables removed from the environment, the
 * watchdog interval (and WATCHDOG_PID for another process), pings rate
 * limited to a quarter interval, and nothing at all without
 * $NOTIFY_SOCKET.
 */
#include "cmocka_all.h"
#include "util/err.h"
#include "util/sdnotify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int sock = -1;
static char path[108];

/* A datagram socket at name ("@x": abstract); sets $NOTIFY_SOCKET. */
static void listen_at(const char *name)
{
	struct sockaddr_un a;
	socklen_t len;
	struct timeval tv = { 0, 200000 };

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", name);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
			  strlen(name) + (name[0] == '/'));
	if (name[0] == '@')
		a.sun_path[0] = '\0';
	sock = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(sock >= 0);
	unlink(name);
	if (bind(sock, (struct sockaddr *)&a, len))
		fail_msg("bind %s: %s", name, strerror(errno));
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setenv("NOTIFY_SOCKET", name, 1);
}

/* The next datagram, or "" after 200 ms without one. */
static const char *next(void)
{
	static char msg[256];
	ssize_t n = recv(sock, msg, sizeof(msg) - 1, 0);

	msg[n > 0 ? n : 0] = '\0';
	return msg;
}

static int setup(void **state)
{
	const char *tmp = getenv("PB_TEST_TMP");

	(void)state;
	snprintf(path, sizeof(path), "%s/notify.%ld", tmp ? tmp : "/tmp",
		 (long)getpid());
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sdnotify_reset();
	if (sock >= 0)
		close(sock);
	sock = -1;
	unlink(path);
	return 0;
}

static void test_none(void **state)
{
	(void)state;
	assert_int_equal(sdnotify_init(), 0);
	assert_false(sdnotify_enabled());
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	sdnotify_send("READY=1"); /* no-ops */
	sdnotify_watchdog();
}

static void test_path(void **state)
{
	(void)state;
	listen_at(path);
	setenv("WATCHDOG_USEC", "2000000", 1);
	assert_int_equal(sdnotify_init(), 0);
	assert_true(sdnotify_enabled());
	assert_int_equal(sdnotify_watchdog_usec(), 2000000);
	/* gone from the environment: sendmail does not inherit them */
	assert_null(getenv("NOTIFY_SOCKET"));
	assert_null(getenv("WATCHDOG_USEC"));
	sdnotify_send("READY=1");
	assert_string_equal(next(), "READY=1");
	sdnotify_send("STATUS=polling\nRELOADING=1");
	assert_string_equal(next(), "STATUS=polling\nRELOADING=1");
	/* the first ping goes out, the next ones within 0.5 s do not */
	sdnotify_watchdog();
	assert_string_equal(next(), "WATCHDOG=1");
	sdnotify_watchdog();
	sdnotify_watchdog();
	assert_string_equal(next(), "");
}

static void test_abstract(void **state)
{
	char name[64];

	(void)state;
	snprintf(name, sizeof(name), "@pb-sdnotify-test.%ld", (long)getpid());
	listen_at(name);
	assert_int_equal(sdnotify_init(), 0);
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	sdnotify_send("STOPPING=1");
	assert_string_equal(next(), "STOPPING=1");
	/* no watchdog asked for: no pings */
	sdnotify_watchdog();
	assert_string_equal(next(), "");
}

static void test_rate(void **state)
{
	struct timespec nap = { 0, 30 * 1000000 };
	int i, pings = 0;

	(void)state;
	listen_at(path);
	setenv("WATCHDOG_USEC", "100000", 1); /* a ping per 25 ms at most */
	assert_int_equal(sdnotify_init(), 0);
	for (i = 0; i < 5; i++) {
		sdnotify_watchdog();
		sdnotify_watchdog();
		nanosleep(&nap, NULL);
	}
	while (!strcmp(next(), "WATCHDOG=1"))
		pings++;
	assert_int_equal(pings, 5);
}

static void test_other_pid(void **state)
{
	char pid[32];

	(void)state;
	listen_at(path);
	setenv("WATCHDOG_USEC", "1000000", 1);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1);
	assert_int_equal(sdnotify_init(), 0);
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	assert_null(getenv("WATCHDOG_PID"));
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	setenv("NOTIFY_SOCKET", path, 1);
	setenv("WATCHDOG_USEC", "1000000", 1);
	setenv("WATCHDOG_PID", pid, 1);
	assert_int_equal(sdnotify_init(), 0);
	assert_int_equal(sdnotify_watchdog_usec(), 1000000);
}

static void test_bad_address(void **state)
{
	(void)state;
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	assert_int_equal(sdnotify_init(), PB_EINVAL);
	assert_false(sdnotify_enabled());
	assert_null(getenv("NOTIFY_SOCKET"));
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	assert_int_equal(sdnotify_init(), PB_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abstract, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_pid, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_address, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
