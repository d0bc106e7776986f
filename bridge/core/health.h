/*
 * health - what /readyz says: the facts the daemon's parts report.
 *
 * The daemon is ready when four checks pass: the state store opens, the
 * spool is writable, the forge answered the last poll with the token
 * accepted, and the MTA is reachable.  The main loop reports what it
 * learns as it works (a poll's outcome, a submission's); the status
 * server adds what it checks itself when asked (health_report() from its
 * thread), and reads the whole with health_get().  Each report also
 * sets the gauge patchbridge_ready{check} (metrics.h).
 *
 * One process-wide table, like the metrics registry; a check never
 * reported is "unknown" (not ready).
 * Thread safety: every function may be called from any thread.
 */
#ifndef PB_CORE_HEALTH_H
#define PB_CORE_HEALTH_H

#include "util/limits.h"

#include <stdint.h>

enum health_check {
	HEALTH_STORE,
	HEALTH_SPOOL,
	HEALTH_FORGE,
	HEALTH_SMTP,
	HEALTH__COUNT
};

struct health_state {
	int known; /* reported at least once */
	int ok;
	int64_t when; /* Unix time of the report */
	char reason[PB_ERRMSG_MAX]; /* one line, printable */
};

/* Record a check's outcome now; the reason says why (or what is fine). */
void health_report(enum health_check c, int ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void health_get(struct health_state *out, enum health_check c);

/* "store", "spool", "forge", "smtp". */
const char *health_check_name(enum health_check c);

/* Forget every report (tests, and a reload: a new configuration may
 * name another forge or MTA). */
void health_reset(void);

#endif
