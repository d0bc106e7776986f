/*
 * sdnotify - tell systemd how the service is doing (sd_notify(3)).
 *
 * Under a unit with Type=notify systemd passes $NOTIFY_SOCKET, an
 * AF_UNIX datagram socket ("/path", or "@name" in the abstract
 * namespace), and with WatchdogSec= also $WATCHDOG_USEC (and
 * $WATCHDOG_PID, the process meant).  A notification is one datagram of
 * newline-separated assignments: "READY=1", "RELOADING=1", "STOPPING=1",
 * "STATUS=...", "WATCHDOG=1".  That protocol is stable and documented
 * (sd_notify(3), "Notes"), and this is all of it that patchbridge uses,
 * so it is written here rather than linking libsystemd into the milter
 * that parses hostile mail.  (vsock: addresses of systemd 254+ are not
 * supported: Debian 12 has 252.)
 *
 * The watchdog: sdnotify_watchdog() sends "WATCHDOG=1", at most once a
 * quarter of the interval.  It must be called only where the main loop
 * has made progress (a round finished, a reply applied, a wait woke up)
 * - never from a thread that pings regardless - so a process stuck in a
 * call stops pinging and systemd kills and restarts it after
 * WatchdogSec.  WatchdogSec must therefore be longer than the longest
 * single step of the loop (one forge request: [forge] timeout).
 *
 * sdnotify_init() reads the variables once and removes them from the
 * environment, so a program the process runs (sendmail) does not speak
 * for it.  Without $NOTIFY_SOCKET every call is a no-op.
 *
 * Thread safety: sdnotify_init() once, before threads; sdnotify_send()
 * from any thread; sdnotify_watchdog() from the main thread only.
 * Errors: sdnotify_init() returns PB_EINVAL for a socket address it
 * cannot use (logged by the caller; the program runs on unsupervised);
 * sending is best effort.
 */
#ifndef PB_UTIL_SDNOTIFY_H
#define PB_UTIL_SDNOTIFY_H

#include <stdint.h>

int sdnotify_init(void);

/* True when $NOTIFY_SOCKET was set and usable. */
int sdnotify_enabled(void);

/* Send state ("READY=1", "STATUS=polling", ...). */
void sdnotify_send(const char *state);

/* The watchdog interval in microseconds; 0 when there is none. */
int64_t sdnotify_watchdog_usec(void);

/* "WATCHDOG=1", unless one went out less than a quarter interval ago. */
void sdnotify_watchdog(void);

/* Close the socket and forget everything (tests). */
void sdnotify_reset(void);

#endif
