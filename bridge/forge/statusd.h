/*
 * statusd - the daemon's status server.
 *
 * The other HTTP listener of the daemon, beside the webhook receiver, on
 * its own address ([metrics] listen), on the same HTTP module (httpd.h)
 * and with the same defences against slow clients.  It answers GET and
 * HEAD with what a callback puts in a struct statusd_reply (/metrics,
 * /healthz, /readyz: cmd/monitor.c), never reads a request body, and
 * refuses every other method (405).  STATUSD_TIMEOUT_DEFAULT (3 s) for
 * a request head: a handful of slow local clients never keep /healthz
 * from answering.  No TLS, so keep it on loopback or behind a proxy.
 *
 * Errors: statusd_new() returns PB_EINVAL without a handler or address
 * or for a bad address, PB_ETEMP or PB_EPERM when it cannot be bound,
 * PB_ERROR when the server will not start.
 */
#ifndef PB_FORGE_STATUSD_H
#define PB_FORGE_STATUSD_H

#include "util/buf.h"

/* What a GET gets: status (404 unless the callback says otherwise), a
 * static content type and the body (capped at STATUSD_BODY_MAX). */
#define STATUSD_BODY_MAX (8 * 1024 * 1024)
#define STATUSD_CONNECTIONS_DEFAULT 16
#define STATUSD_THREADS_DEFAULT 2
/* Seconds a client has for a whole request head, and idle: a health
 * check's request comes at once, and its probe gives up in seconds. */
#define STATUSD_TIMEOUT_DEFAULT 3

struct statusd_reply {
	unsigned status;
	const char *content_type;
	struct buf body;
};

struct statusd_opts {
	const char *listen; /* "host:port" as for the receiver; required */
	unsigned max_connections; /* 0: STATUSD_CONNECTIONS_DEFAULT */
	unsigned timeout_s; /* 0: STATUSD_TIMEOUT_DEFAULT */
	unsigned threads; /* 0: STATUSD_THREADS_DEFAULT */
	/*
	 * Called from the server's threads (possibly in parallel) with the
	 * request's path (printable, without the query) and whether it is a
	 * HEAD request (the body is then not sent).
	 */
	void (*on_get)(struct statusd_reply *r, const char *path, void *arg);
	void *arg;
};

struct statusd;

int statusd_new(struct statusd **out, const struct statusd_opts *opts);
/* Stop serving; requests in flight finish first.  NULL is allowed. */
void statusd_free(struct statusd *sd);
unsigned statusd_port(const struct statusd *sd);

#endif
