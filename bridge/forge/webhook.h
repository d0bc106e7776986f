/*
 * webhook - the GitLab webhook receiver.
 *
 * A small HTTP server (on httpd.h, the daemon's HTTP module) that accepts
 * GitLab's Merge Request Hook and Note Hook deliveries on one path, checks
 * the shared secret, reads the JSON body strictly and hands a small plain
 * struct webhook_event to a callback.  It complements polling: both feed
 * the daemon's one work queue, and polling still catches anything a lost
 * or refused delivery would have carried.
 *
 * Protocol (doc/user/project/integrations/webhooks.md):
 *   - only POST to the configured path: other paths 404, other methods 405;
 *   - X-Gitlab-Token must equal the secret, compared in constant time (it
 *     is a shared secret echoed as-is, not an HMAC); wrong or missing: 401
 *     and nothing else happens (the body is not read);
 *   - a body over max_request_size (Content-Length or chunked) is read
 *     and thrown away and answered 200 with a log line: GitLab counts
 *     every answer but 2xx/3xx against the hook and disables it after a
 *     few (app/services/web_hook_service.rb response_category), so a 413
 *     for one big MR would cost every later delivery; polling reads the
 *     MR anyway.  Beyond WEBHOOK_DISCARD_MAX, more than GitLab ever sends,
 *     it is 413 up front (Content-Length) or a closed connection;
 *   - Content-Type must be application/json (415);
 *   - X-Gitlab-Event other than "Merge Request Hook", "Note Hook" or
 *     "Pipeline Hook" ("Confidential Note Hook" too: internal notes stay
 *     on the forge), notes on anything but a merge request and pipelines
 *     without one (merge_request null: a branch pipeline, which polling
 *     finds through the MR's pipelines): 200 and ignored, because
 *     GitLab disables a hook after repeated 4xx/5xx answers;
 *   - malformed JSON, or a payload missing what we need: 400;
 *   - deliveries are de-duplicated by Idempotency-Key (GitLab 17.4+; the
 *     same across retries and "Resend request"), falling back to
 *     X-Gitlab-Event-UUID, in a bounded LRU: a repeat gets 200 and is not
 *     handed on again;
 *   - the callback's failure answers 503, and the key is not remembered,
 *     so a resend is tried again.
 * One log line per delivery, untrusted values through printable(); the
 * token is never logged.
 *
 * The callback must only enqueue.  GitLab times a delivery out after a few
 * seconds and counts timeouts towards disabling the hook, so the answer
 * has to be fast: copy the event (a plain struct with no pointers, so
 * `*copy = *ev` does) onto a queue and return 0.  Return a negative code
 * when the event could not be queued.
 *
 * No TLS: keep the listener on loopback (the default) or put it behind a
 * TLS terminator (nginx, stunnel, haproxy) that forwards to loopback.  The
 * token travels in the clear otherwise.
 *
 * Denial of service (slowloris): httpd.h's connection guard, with
 * timeout_s seconds for a whole request head and max_connections; the
 * body is capped here.  Only a peer that knows the secret gets its body
 * read or reaches the de-duplication table.
 *
 * Ownership: webhook_new() copies everything in opts (the secret into
 * memory that is wiped on free).  An event passed to the callback is
 * borrowed for the call only.
 *
 * Threads: the server runs in its own threads (a small pool); on_event is
 * called from them, never concurrently with itself (calls are serialised
 * by the de-duplication lock) and never after webhook_free() returned.
 * It must not call webhook_free() or webhook_stats().  webhook_port() and
 * webhook_stats() may be called from any thread.
 *
 * Errors: webhook_new() returns PB_EINVAL for bad options (with err_msg()
 * naming which), PB_ETEMP or PB_EPERM when the address cannot be bound,
 * PB_ERROR when libmicrohttpd will not start.  webhook_parse() returns
 * PB_EINVAL with a message naming the field.
 *
 */
#ifndef PB_FORGE_WEBHOOK_H
#define PB_FORGE_WEBHOOK_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

#define WEBHOOK_LISTEN_DEFAULT "127.0.0.1:8787"
#define WEBHOOK_PATH_DEFAULT "/hooks/gitlab"
#define WEBHOOK_MAX_REQUEST_DEFAULT (1024 * 1024)
#define WEBHOOK_CONNECTIONS_DEFAULT 64
#define WEBHOOK_TIMEOUT_DEFAULT 10 /* seconds idle per connection */
#define WEBHOOK_THREADS_DEFAULT 2
#define WEBHOOK_DEDUPE_DEFAULT 4096 /* delivery keys remembered */
/* GitLab sends no body larger (WebHookService::REQUEST_BODY_SIZE_LIMIT,
 * app/services/web_hook_service.rb): what is thrown away unread. */
#define WEBHOOK_DISCARD_MAX (25 * 1024 * 1024)

/* Field caps; longer values make the payload invalid (400). */
#define WEBHOOK_SECRET_MAX 1024
#define WEBHOOK_KEY_MAX 128 /* Idempotency-Key, X-Gitlab-Event-UUID */
#define WEBHOOK_PROJECT_MAX 1024 /* path_with_namespace */
#define WEBHOOK_NAME_MAX 64 /* action, note type, noteable type */
#define WEBHOOK_SHA_MAX 64 /* SHA-1 (40) or SHA-256 (64) hex */
#define WEBHOOK_DISCUSSION_MAX 64 /* GitLab's are 40 hex digits */

enum webhook_kind {
	WEBHOOK_IGNORED = 0, /* well-formed but not for us */
	WEBHOOK_MR, /* Merge Request Hook */
	WEBHOOK_NOTE, /* Note Hook on a merge request */
	WEBHOOK_PIPELINE, /* Pipeline Hook of a merge request's pipeline */
};

/* object_attributes.action; WEBHOOK_ACTION_OTHER for anything else
 * (action_name holds it, "" when the payload had none). */
enum webhook_action {
	WEBHOOK_ACTION_OTHER = 0,
	/* Merge Request Hook */
	WEBHOOK_ACTION_OPEN,
	WEBHOOK_ACTION_CLOSE,
	WEBHOOK_ACTION_REOPEN,
	WEBHOOK_ACTION_UPDATE, /* also a note edited (GitLab 16.11+) */
	WEBHOOK_ACTION_MERGE,
	WEBHOOK_ACTION_APPROVED, /* all required approvals reached */
	WEBHOOK_ACTION_UNAPPROVED, /* ... and lost again */
	WEBHOOK_ACTION_APPROVAL, /* one user's approval */
	WEBHOOK_ACTION_UNAPPROVAL, /* one user's approval withdrawn */
	/* Note Hook */
	WEBHOOK_ACTION_CREATE,
};

/*
 * One delivery, as far as the bridge cares.  Plain data, no pointers:
 * strings are NUL-terminated printable ASCII, "" when absent; numbers 0
 * when absent.
 */
struct webhook_event {
	enum webhook_kind kind;
	/* Idempotency-Key, else X-Gitlab-Event-UUID, else "". */
	char delivery[WEBHOOK_KEY_MAX + 1];
	/* project.path_with_namespace and project.id */
	char project[WEBHOOK_PROJECT_MAX + 1];
	int64_t project_id;
	/* The merge request's iid (object_attributes / merge_request). */
	int64_t iid;
	enum webhook_action action;
	char action_name[WEBHOOK_NAME_MAX + 1];
	/*
	 * MR hooks: object_attributes.oldrev was present, i.e. code changed
	 * (a push, or an applied suggestion): fetch the versions and mail a
	 * new revision.  Always 0 for notes.
	 */
	int code_changed;
	/* last_commit.id of the MR (the head), "" when it has none. */
	char last_commit[WEBHOOK_SHA_MAX + 1];
	/* Note hooks only. */
	int64_t note_id;
	char discussion_id[WEBHOOK_DISCUSSION_MAX + 1];
	char note_type[WEBHOOK_NAME_MAX + 1]; /* DiffNote, DiscussionNote, "" */
	char noteable_type[WEBHOOK_NAME_MAX + 1]; /* MergeRequest */
	int system_note; /* object_attributes.system */
	/* Pipeline hooks only: object_attributes.id and .status (the sha
	 * is in last_commit). */
	int64_t pipeline_id;
	char pipeline_status[WEBHOOK_NAME_MAX + 1];
};

struct webhook_opts {
	/* "host:port" or "[v6]:port"; port 0 picks a free one (see
	 * webhook_port()).  NULL: WEBHOOK_LISTEN_DEFAULT (loopback). */
	const char *listen;
	/* The hook's secret token (read by the caller from secret_file, with
	 * its trailing newline removed): 1..WEBHOOK_SECRET_MAX bytes of
	 * printable ASCII.  Required. */
	const char *secret;
	const char *path; /* NULL: WEBHOOK_PATH_DEFAULT */
	size_t max_request_size; /* body cap; 0: the default */
	unsigned max_connections; /* 0: the default */
	/* seconds per connection for a whole request head, and idle; 0:
	 * the default */
	unsigned timeout_s;
	unsigned threads; /* server threads; 0: the default */
	size_t dedupe_entries; /* 0: the default */
	/* Called once per new delivery; 0 when queued. */
	int (*on_event)(const struct webhook_event *ev, void *arg);
	void *arg;
};

struct webhook;

/* Bind, listen and start serving.  On error *out is NULL. */
int webhook_new(struct webhook **out, const struct webhook_opts *opts);

/*
 * Stop: no new connections are served, requests in flight get up to
 * timeout_s seconds to finish (their callbacks run), then every
 * connection is closed and the threads are joined.  NULL is allowed.
 */
void webhook_free(struct webhook *wh);

/* The port actually bound (useful after port 0). */
unsigned webhook_port(const struct webhook *wh);

struct webhook_stats {
	uint64_t requests; /* requests answered or dropped */
	uint64_t queued; /* events handed to on_event successfully */
	uint64_t duplicates; /* deliveries seen before, not handed on */
	uint64_t ignored; /* uninteresting events answered 200 */
	uint64_t unauthorized; /* 401s */
	uint64_t rejected; /* other 4xx, and bodies over 25 MiB */
	uint64_t oversized; /* bodies over the cap, answered 200 unread */
	uint64_t failed; /* on_event failed: 503 */
	unsigned inflight; /* requests being received right now */
};

void webhook_stats(struct webhook_stats *out, struct webhook *wh);

/*
 * The payload parser on its own (no I/O; unit tests and fuzzing).
 * event_header is the X-Gitlab-Event value.  Fills *out (delivery left
 * "") and returns 0; out->kind is WEBHOOK_IGNORED for an event we do not
 * handle (the body is then not even parsed) and for a note on something
 * other than a merge request.  PB_EINVAL for malformed JSON, an
 * object_kind that does not match the header, or a missing, mistyped,
 * over-long or unprintable field we need.
 */
int webhook_parse(struct webhook_event *out, const char *event_header,
		  const char *body, size_t len);

/* "open", "merge", … for an action; "other" for WEBHOOK_ACTION_OTHER. */
const char *webhook_action_name(enum webhook_action a);

/* True when a and b (C strings) are equal, in time that depends only on
 * WEBHOOK_SECRET_MAX, not on where or whether they differ, nor on their
 * lengths as long as both are at most WEBHOOK_SECRET_MAX bytes. */
int webhook_secret_equal(const char *a, const char *b);

#endif
