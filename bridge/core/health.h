/*
 * health - what /readyz says: the facts the daemon's parts report.
 *
 * The daemon is ready when five checks pass: the state store opens, the
 * spool is writable, the forge answered the last poll with the token
 * accepted, the MTA is reachable, and the milter sees the list's mail
 * (health_milter_blind() below).  The main loop reports what it
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

#include <stddef.h>
#include <stdint.h>

enum health_check {
	HEALTH_STORE,
	HEALTH_SPOOL,
	HEALTH_FORGE,
	HEALTH_SMTP,
	HEALTH_MILTER,
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

/* "store", "spool", "forge", "smtp", "milter". */
const char *health_check_name(enum health_check c);

/*
 * Is the milter not seeing the list's mail?  The rule (README,
 * "Monitoring"; DESIGN.md, "What the checks promise"): the bridge's own
 * mails go
 * to the list through the same Postfix as the replies, so each is a mail
 * the milter must see.  It is blind when the bridge's last mail reached
 * the MTA (sent: the MTA's 250, Unix time) HEALTH_MILTER_BLIND_S or more
 * before now, and the milter has seen no mail to its end (last_seen, from
 * its statistics file; 0: never, or no file) since HEALTH_MILTER_SLACK_S
 * before sent (it sees a mail before the MTA answers for it).  The
 * milter writes its file every [metrics] milter_interval, which must be
 * well under HEALTH_MILTER_BLIND_S.  Without a mail of the bridge's
 * (sent 0) it cannot tell, and is not blind.
 *
 * Returns 1 when blind, 0 when not; out gets one line either way, the
 * same for /readyz and `patchbridge status`.
 */
#define HEALTH_MILTER_BLIND_S 300
#define HEALTH_MILTER_SLACK_S 60
int health_milter_blind(char *out, size_t size, int64_t now, int64_t sent,
			int64_t last_seen);

/*
 * The milter's patchbridge_milter_last_seen_timestamp_seconds from the
 * text of its statistics file (metrics.h); 0 when it is not there.
 */
int64_t health_milter_last_seen(const char *text, size_t len);

/* Forget every report (tests, and a reload: a new configuration may
 * name another forge or MTA). */
void health_reset(void);

#endif
