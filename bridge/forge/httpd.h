/*
 * httpd - the daemon's HTTP listener: libmicrohttpd behind our types.
 *
 * Both HTTP servers of the daemon, the webhook receiver (webhook.c) and
 * the status server (statusd.c), sit on this module, the only user of
 * libmicrohttpd.  It binds the address, runs the server's threads,
 * defends against slow clients and carries requests and answers; what a
 * request means is the caller's.
 *
 * Serving: the server runs in its own threads (a small pool), each an
 * event loop over its share of the connections, so an idle client holds
 * no thread and never delays another.
 *
 * Denial of service (slowloris): a client has timeout_s seconds for a
 * whole request head however it trickles it, and idle between requests;
 * when max_connections are open, a new one shuts down the oldest that is
 * not being answered, so idle and trickling clients, whatever their
 * number, never keep a new one out; header memory is capped (32 KiB a
 * connection).  The caller caps bodies.
 *
 * A request: on_request is called first with HTTPD_HEAD (the head is in:
 * url, method and headers may be read), then with HTTPD_DATA for each
 * piece of the body (all of it consumed), then with HTTPD_END.  It
 * answers with httpd_answer() at any of them, once; after an answer the
 * rest of the body is read and dropped without further calls.  It returns
 * 0, or -1 to close the connection at once without an answer.  on_done,
 * when set, is called once when the request is over (answered and sent,
 * or dropped), with how it ended.  A per-request pointer of the caller's
 * (httpd_req_set_data()) is kept from the first call to on_done.
 *
 * Ownership: httpd_new() copies opts; name must outlive the server (a
 * literal).  A struct httpd_req and what its accessors return are
 * borrowed for the call only.
 *
 * Threads: callbacks run on the server's threads, possibly in parallel
 * for different requests, never after httpd_free() returned.
 *
 * Errors: httpd_new() returns PB_EINVAL for a bad address, PB_ETEMP or
 * PB_EPERM when it cannot be bound, PB_ERROR when libmicrohttpd will not
 * start (the message names the server).
 *
 * No TLS: keep the listeners on loopback or behind a TLS terminator.
 */
#ifndef PB_FORGE_HTTPD_H
#define PB_FORGE_HTTPD_H

#include <stddef.h>

/* The status codes the daemon answers. */
#define HTTPD_OK 200
#define HTTPD_BAD_REQUEST 400
#define HTTPD_UNAUTHORIZED 401
#define HTTPD_NOT_FOUND 404
#define HTTPD_METHOD_NOT_ALLOWED 405
#define HTTPD_CONTENT_TOO_LARGE 413
#define HTTPD_UNSUPPORTED_MEDIA_TYPE 415
#define HTTPD_SERVICE_UNAVAILABLE 503

enum httpd_call {
	HTTPD_HEAD, /* the request head is in */
	HTTPD_DATA, /* a piece of the body */
	HTTPD_END, /* the whole body is in */
};

/* How a request ended, for on_done. */
enum httpd_end {
	HTTPD_END_CLOSED = 0, /* answered, or the peer went away */
	HTTPD_END_TIMEOUT, /* the peer was too slow */
	HTTPD_END_SHUTDOWN, /* the server is stopping */
};

/* httpd_answer() flags */
#define HTTPD_CLOSE 0x1 /* "Connection: close": end it after the answer */
#define HTTPD_NO_STORE 0x2 /* "Cache-Control: no-store" */
#define HTTPD_STATIC 0x4 /* body is a literal: sent without a copy */

struct httpd;
struct httpd_req;

struct httpd_opts {
	const char *listen; /* "host:port" or "[v6]:port"; port 0: any */
	const char *name; /* the server's, in the log and in errors */
	unsigned max_connections; /* > 0 */
	unsigned threads; /* > 0; at most max_connections are used */
	unsigned timeout_s; /* for a request head, and idle; > 0 */
	int (*on_request)(struct httpd_req *req, enum httpd_call call,
			  const char *data, size_t len, void *arg);
	void (*on_done)(struct httpd_req *req, enum httpd_end how, void *arg);
	void *arg;
};

/* Bind, listen and start serving.  On error *out is NULL. */
int httpd_new(struct httpd **out, const struct httpd_opts *opts);

/* Accept no new connections; those open are served on. */
void httpd_quiesce(struct httpd *h);

/* Stop: every connection is closed, the threads joined.  NULL allowed. */
void httpd_free(struct httpd *h);

/* The port actually bound (useful after port 0). */
unsigned httpd_port(const struct httpd *h);

/* The request's path (libmicrohttpd strips the query string), method and
 * a header (NULL when absent); untrusted bytes. */
const char *httpd_url(const struct httpd_req *req);
const char *httpd_method(const struct httpd_req *req);
const char *httpd_header(struct httpd_req *req, const char *name);

/* The peer's numeric address, "?" when unknown. */
void httpd_peer(struct httpd_req *req, char *dst, size_t size);

void httpd_req_set_data(struct httpd_req *req, void *data);
void *httpd_req_data(const struct httpd_req *req);

/*
 * Queue the answer: status, a static content type, the body and, for a
 * 405, the Allow header's value (else NULL).  0, or -1 when it could not
 * be queued (the connection is then closed).
 */
int httpd_answer(struct httpd_req *req, unsigned status, const char *type,
		 const char *body, size_t len, const char *allow,
		 unsigned flags);

#endif
