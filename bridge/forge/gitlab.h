/*
 * gitlab - the GitLab REST v4 implementation of struct forge.
 *
 * Speaks JSON over http.c, reads responses through json.c, and applies
 * GitLab's rules (the GitLab source or doc page is named where each is
 * applied): pagination by X-Next-Page on the configured URL, never to
 * another origin and never by totals; PRIVATE-TOKEN and Sudo, with Sudo's
 * own refusals told apart (forge_sudo_problem()); error bodies whose
 * "message" is a string or an object (or "error"); diff-note positions;
 * approvals judged by the approval state, not the status code (a second
 * approval is a 401 like a refusal); internal notes, and notes whose
 * visibility is not given, marked internal; idempotence by hidden markers.
 *
 * Retries: GETs and idempotent writes (approve, unapprove,
 * labels, resolve) are retried on connection failures, 5xx and 429; notes,
 * discussions and replies are retried only when the request surely did
 * not arrive (refused connection, 429), and otherwise only after the
 * marker search came back empty.  Waits honour Retry-After, then
 * RateLimit-Reset (epoch), else exponential backoff with jitter; a wait
 * longer than retry_max_ms ends the call with PB_ETEMP.
 *
 * Stopping (opts->stop, the daemon's signal flag): once it is set a
 * request may still finish (within stop_grace_ms, http.h), but nothing is
 * tried again: a wait before another try ends at once, a POST of unknown
 * outcome is left for the caller's next attempt to find by its marker,
 * and once a call gave up so, every later call fails at once without a
 * request - all PB_ETEMP.  A forge that fails or hangs then holds a
 * stopping daemon for seconds, not max_retries * timeout.
 *
 * Ownership: forge_gitlab_new() copies every string in opts; the token
 * copy is wiped on forge_free().  The token is never logged.
 * Threads: one handle per thread.
 */
#ifndef PB_FORGE_GITLAB_H
#define PB_FORGE_GITLAB_H

#include "forge/forge.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct forge_gitlab_opts {
	/* "https://gitlab.example.com" (a path prefix is kept; "/api/v4"
	 * is added unless the URL already ends with it). */
	const char *base_url;
	const char *token; /* the token itself (callers read the file) */
	const char *ca_file;
	long connect_timeout_ms; /* 0: 10 s */
	long timeout_ms; /* per request; 0: 60 s */
	int max_retries; /* retries after the first try; <0: 0 */
	int64_t retry_base_ms; /* 0: 500 ms */
	int64_t retry_max_ms; /* longest single wait; 0: 60 s */
	size_t body_max; /* response cap; 0: PB_HTTP_BODY_MAX_DEFAULT */
	int marker_scan_pages; /* newest note pages searched; 0: 2 */
	int per_page; /* page size for listings; 0: 100 */
	const volatile sig_atomic_t *stop; /* NULL: never stops */
	long stop_grace_ms; /* 0: PB_HTTP_STOP_GRACE_MS */

	/* Test hooks (NULL: the real clock, nanosleep, a seeded PRNG). */
	int64_t (*now_ms)(void *arg); /* epoch milliseconds */
	/* every retry wait, whole (the stop flag is looked at after it) */
	void (*sleep_ms)(void *arg, int64_t ms);
	uint32_t (*random)(void *arg); /* jitter source */
	void *hook_arg;
};

int forge_gitlab_new(struct forge **out, const struct forge_gitlab_opts *opts);

/* Counters for tests and status output. */
struct forge_gitlab_stats {
	unsigned long requests; /* HTTP requests made */
	unsigned long retries; /* waits before another try */
	unsigned long marker_scans; /* searches after an unknown outcome */
	unsigned long marker_hits; /* … that found the note */
	int64_t last_delay_ms; /* the last wait */
};

/* f must come from forge_gitlab_new(). */
void forge_gitlab_stats(struct forge_gitlab_stats *out, const struct forge *f);

/*
 * Pure helpers, exposed for tests.
 */

/* Turn a GitLab error body into one line: "message" (string, or object
 * flattened "field: msg, msg; …"), else "error" (+ "error_description"),
 * else the body's printable start. */
void gitlab_error_text(struct buf *out, const char *body, size_t len);

/*
 * The class of an API path below /api/v4 (the query, if any, ignored),
 * for metrics: "merge_request", "notes", "discussions", "approve", ...
 * (one of the fixed words of the label endpoint, core/metrics.c), never
 * anything taken from the path itself; "other" for what is not known.
 */
const char *gitlab_endpoint_class(const char *path);

/* Map an HTTP status to our code (404 → PB_ENOTFOUND, 401/403 → PB_EPERM,
 * 400/409/422 → PB_EINVAL, 429/5xx → PB_ETEMP, others PB_ERROR). */
int gitlab_status_code(long status);

#endif
