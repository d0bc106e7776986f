/*
 * monitor - the daemon's status server: /metrics, /healthz, /readyz.
 *
 * With [metrics] enabled, `patchbridge run` serves on [metrics] listen
 * (loopback by default; forge/statusd.h, on forge/httpd.h, so
 * libmicrohttpd stays behind one module):
 *
 *   /metrics  the Prometheus text exposition format (0.0.4): the
 *             registry of core/metrics.h, the milter's families read
 *             back from the file it writes in the spool directory, and
 *             the gauges taken at the scrape (the spool's areas, the age
 *             of its oldest waiting record, the milter file's age);
 *   /healthz  200 "ok" while the process serves;
 *   /readyz   200 when every check passes, else 503, one line per check
 *             with its reason:
 *               store  the state database opens (read-only, a
 *                      connection of its own);
 *               spool  the spool opens as the daemon opens it and a file
 *                      can be written in tmp/ (spool_probe());
 *               forge  the last poll listed every project with the token
 *                      accepted (reported by the main loop);
 *               smtp   the MTA accepted or answered the last submission,
 *                      or, when that is older than MONITOR_SMTP_FRESH_S,
 *                      a probe (submit_probe()) gets its greeting and a
 *                      250 to NOOP.
 *             /metrics runs the same checks (patchbridge_ready{check}).
 *
 * The checks are done in the server's threads, never by the main loop,
 * so a daemon stuck in a forge call still answers, with the spool
 * filling up in its gauges (the watchdog, util/sdnotify.h, is what
 * restarts it).
 *
 * Ownership: cfg is borrowed and must outlive the monitor; a reload stops
 * the old monitor (its requests finish) and starts one on the new
 * configuration.  Threads: monitor_start() and monitor_free() from the
 * main thread.  Errors: as statusd_new() (an address in use: PB_ETEMP or
 * PB_EPERM).
 */
#ifndef PB_CMD_MONITOR_H
#define PB_CMD_MONITOR_H

/* A probe of the MTA at most this often; a submission counts as one. */
#define MONITOR_SMTP_FRESH_S 60
/* The longest a probe of the MTA may take. */
#define MONITOR_SMTP_PROBE_MS 5000

struct config;
struct monitor;

/* 0 and *out NULL when [metrics] enabled is off. */
int monitor_start(struct monitor **out, const struct config *cfg);
/* NULL is allowed. */
void monitor_free(struct monitor *m);
/* The port bound (for [metrics] listen with port 0). */
unsigned monitor_port(const struct monitor *m);

#endif
