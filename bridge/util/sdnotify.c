#include "util/sdnotify.h"

#include "util/err.h"
#include "util/scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Set once by sdnotify_init() before threads start. */
static int notify_fd = -1;
static struct sockaddr_un notify_addr;
static socklen_t notify_len;
static int64_t watchdog_usec;
/* The main thread's last ping (CLOCK_MONOTONIC, microseconds). */
static int64_t last_ping;

static int64_t mono_usec(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void read_watchdog(void)
{
	const char *usec = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	uint64_t v, p;

	watchdog_usec = 0;
	if (!usec || !mem_to_u64(usec, strlen(usec), INT64_MAX, &v) || !v)
		return;
	/* Meant for another process (our parent, before a fork). */
	if (pid && (!mem_to_u64(pid, strlen(pid), INT64_MAX, &p) ||
		    p != (uint64_t)getpid()))
		return;
	watchdog_usec = (int64_t)v;
}

int sdnotify_init(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t len;
	int rc = 0;

	sdnotify_reset();
	if (!path || !*path)
		goto out;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') ||
	    len >= sizeof(notify_addr.sun_path)) {
		rc = err_set(PB_EINVAL,
			     "NOTIFY_SOCKET=%.100s: not a unix socket path "
			     "or @name",
			     path);
		goto out;
	}
	memset(&notify_addr, 0, sizeof(notify_addr));
	notify_addr.sun_family = AF_UNIX;
	memcpy(notify_addr.sun_path, path, len);
	if (path[0] == '@')
		notify_addr.sun_path[0] = '\0'; /* the abstract namespace */
	notify_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len +
				 (path[0] == '/'));
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (notify_fd < 0) {
		rc = err_set_errno(PB_ERROR, "NOTIFY_SOCKET: socket");
		goto out;
	}
	read_watchdog();
out:
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	return rc;
}

int sdnotify_enabled(void)
{
	return notify_fd >= 0;
}

void sdnotify_send(const char *state)
{
	if (notify_fd < 0)
		return;
	/* Best effort: systemd may be gone or busy; never block on it. */
	(void)sendto(notify_fd, state, strlen(state),
		     MSG_NOSIGNAL | MSG_DONTWAIT,
		     (const struct sockaddr *)&notify_addr, notify_len);
}

int64_t sdnotify_watchdog_usec(void)
{
	return notify_fd >= 0 ? watchdog_usec : 0;
}

void sdnotify_watchdog(void)
{
	int64_t now;

	if (notify_fd < 0 || !watchdog_usec)
		return;
	now = mono_usec();
	if (last_ping && now - last_ping < watchdog_usec / 4)
		return;
	last_ping = now;
	sdnotify_send("WATCHDOG=1");
}

void sdnotify_reset(void)
{
	if (notify_fd >= 0)
		close(notify_fd);
	notify_fd = -1;
	notify_len = 0;
	watchdog_usec = 0;
	last_ping = 0;
}
