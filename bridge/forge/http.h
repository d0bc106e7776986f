/*
 * http - a small HTTP client for the forge API.
 *
 * The only libcurl user.  One http_client wraps one curl easy handle, so
 * consecutive requests reuse the connection.  Every request has a total
 * and a connect timeout, verifies TLS (optionally against a given CA
 * file), speaks only http and https, never follows redirects (the caller
 * sees 3xx and Location and decides), and reads the body into a buf whose
 * max aborts the transfer as soon as it is exceeded.  Only the response
 * headers the forge client needs are kept.
 *
 * Secrets: the token is held by the client, sent as PRIVATE-TOKEN, never
 * logged, never put in an error message, and wiped on free.  Verbose
 * tracing is never enabled.
 *
 * Ownership: http_client_new() copies every string it is given.  A
 * response owns its body and header copies until http_response_release().
 *
 * Errors (return of http_do): 0 whenever an HTTP response arrived, of any
 * status.  PB_ETEMP for transport failures (DNS, refused, reset, timeout,
 * TLS), with resp->maybe_sent telling whether the request may have reached
 * the server (a timeout after sending a POST means "maybe committed").
 * PB_ELIMIT when the body or headers exceed their caps.  PB_EINVAL for a
 * bad URL or header value.
 *
 * Stopping: with opts->stop, a request still running stop_grace_ms after
 * it saw the flag set is abandoned (PB_ETEMP, resp->stopped and
 * maybe_sent as for any failure), so a daemon asked to stop is not held
 * for [forge] timeout by a forge that hangs, while a forge that answers
 * finishes what was started.
 *
 * Threads: curl_global_init() runs once (pthread_once).  A client belongs
 * to one thread at a time; different clients may run in parallel.
 */
#ifndef PB_FORGE_HTTP_H
#define PB_FORGE_HTTP_H

#include "util/buf.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct http_client;

struct http_opts {
	const char *token; /* PRIVATE-TOKEN; NULL: none */
	const char *ca_file; /* NULL: the system's CA store */
	const char *user_agent; /* NULL: "patchbridge/VERSION" */
	long connect_timeout_ms; /* 0: 10 s */
	long timeout_ms; /* total per request; 0: 60 s */
	const volatile sig_atomic_t *stop; /* a signal handler's flag */
	long stop_grace_ms; /* a request's time once stop is seen; 0: 5 s */
};

int http_client_new(struct http_client **out, const struct http_opts *opts);
void http_client_free(struct http_client *c);

enum http_method {
	HTTP_GET,
	HTTP_POST,
	HTTP_PUT,
	HTTP_DELETE,
};

const char *http_method_name(enum http_method m);

struct http_request {
	enum http_method method;
	const char *url;
	const char *body; /* JSON; NULL: no body */
	size_t body_len;
	const char *sudo; /* Sudo header value; NULL: none */
	/*
	 * Open a new connection for this request.  libcurl silently resends a
	 * request that got no answer on a reused connection; for a write
	 * that is not idempotent that resend could apply it twice.
	 */
	int fresh_connection;
};

struct http_response {
	long status; /* 0 when no response arrived */
	struct buf body; /* capped by the max given at init */
	int maybe_sent; /* transport error after the request left */
	int too_large; /* the body or headers hit their cap */
	int stopped; /* abandoned: the stop flag was set (http_opts) */
	/* Selected headers, NULL when absent (values trimmed). */
	char *content_type;
	char *link;
	char *next_page; /* X-Next-Page */
	char *total; /* X-Total */
	char *retry_after;
	char *ratelimit_reset;
	char *ratelimit_remaining;
	char *location;
	size_t header_bytes; /* counted against PB_HTTP_HEADER_MAX */
};

void http_response_init(struct http_response *r, size_t body_max);
/* Free the headers and empty the body, keeping its max; reusable. */
void http_response_reset(struct http_response *r);
void http_response_release(struct http_response *r);

/* Perform req; out must have been initialised (it is reset first). */
int http_do(struct http_response *out, struct http_client *c,
	    const struct http_request *req);

/*
 * Pure helpers (no I/O; unit-tested).
 */

/* Append s percent-encoded: all but RFC 3986 section 2.3 unreserved. */
int http_escape(struct buf *out, const char *s);

/*
 * Find the URI of the link with relation rel in a Link header (RFC 8288):
 * `<https://…&page=2>; rel="next", <…>; rel="last"`.  Appends it to out.
 * PB_ENOTFOUND when there is none; PB_EINVAL when the header is garbled.
 */
int http_link_find(struct buf *out, const char *link, const char *rel);

/* True when URLs a and b share scheme, host and port (RFC 6454). */
int http_same_origin(const char *a, const char *b);

/* Retry-After as delay-seconds (RFC 9110 section 10.2.3); PB_EINVAL if
 * it is an HTTP-date or garbage (callers then fall back). */
int http_parse_retry_after(int64_t *out_s, const char *v);

/* A non-negative decimal number (RateLimit-Reset epoch seconds, …). */
int http_parse_uint(int64_t *out, const char *v);

struct http_backoff {
	int64_t base_ms; /* first exponential delay */
	int64_t max_ms; /* no single wait is longer */
};

/*
 * Delay before retry number attempt (1 for the first retry): Retry-After
 * (seconds) if present, else RateLimit-Reset (a Unix epoch time, not a
 * delta) minus now, else base * 2^(attempt-1) capped at max, with "equal
 * jitter" (half fixed, half drawn from jitter).  PB_ELIMIT, with *out_ms
 * set to the wait asked for, when the server asks for more than max_ms:
 * the caller should give up for now rather than block.
 */
int http_retry_delay(int64_t *out_ms, const struct http_backoff *p,
		     unsigned attempt, const char *retry_after,
		     const char *ratelimit_reset, int64_t now_ms,
		     uint32_t jitter);

#endif
