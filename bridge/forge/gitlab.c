#include "forge/gitlab.h"

#include "core/metrics.h"
#include "forge/http.h"
#include "forge/json.h"
#include "util/err.h"
#include "util/jsonw.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/sdnotify.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define GL_WHERE_MAX 160 /* a request's path in messages */
#define GL_ERRTEXT_MAX 512 /* GitLab's error text in messages */
#define GL_REDIRECTS_MAX 5
#define GL_USER_CANDIDATES_MAX 20 /* users checked one by one */
#define GL_USERNAME_MAX 255
#define GL_DISCUSSION_ID_MAX 64
/* A JSON-escaped note body: at worst 6 bytes per input byte. */
#define GL_REQUEST_BODY_MAX (6 * (size_t)PB_NOTE_BODY_MAX + 64 * 1024)

struct gitlab {
	struct forge base; /* first, so a struct forge * is a gitlab * */
	struct http_client *http;
	char *api; /* "https://host[/prefix]/api/v4" */
	char *origin; /* "https://host[:port]" */
	char *sudo; /* act as this user; NULL: ourselves */
	int max_retries;
	struct http_backoff backoff;
	size_t body_max;
	int marker_scan_pages;
	int per_page;
	int64_t (*now_ms)(void *arg);
	void (*sleep_ms)(void *arg, int64_t ms); /* NULL: gl_wait() naps */
	uint32_t (*random)(void *arg);
	void *hook_arg;
	const volatile sig_atomic_t *stop;
	int stop_failed; /* a call gave up because of the stop */
	uint64_t rng; /* xorshift state when random is NULL */
	int64_t self_id; /* the token's own user, 0 until asked */
	/* Why the last call's Sudo was refused (FORGE_SUDO_OK: it was not). */
	enum forge_sudo_problem sudo_problem;
	/* Why the forge refused the token (sticky until a call works). */
	enum forge_token_problem token_problem;
	int links_elsewhere_logged; /* the external-URL notice, once */
	struct forge_gitlab_stats stats;
};

static const struct forge_ops gitlab_ops;

static struct gitlab *gl_of(struct forge *f)
{
	BUG_ON(f->ops != &gitlab_ops);
	return (struct gitlab *)f;
}

/*
 * Hooks.
 */

static int64_t real_now_ms(void *arg)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int stopping(const struct gitlab *gl)
{
	return gl->stop && *gl->stop;
}

/* Give up on a call because of the stop; err_msg() keeps the failure. */
static int stop_give_up(struct gitlab *gl)
{
	gl->stop_failed = 1;
	return err_prefix(PB_ETEMP, "stopping, not trying again");
}

/*
 * The wait before another try: naps of at most PB_FORGE_WAIT_SLICE_MS
 * with a look at the stop flag after each (a signal that interrupts a
 * nap only ends it early), or the test hook's whole wait.  0 to try
 * again; PB_ETEMP (stop_give_up) when stopping.
 */
static int gl_wait(struct gitlab *gl, int64_t ms)
{
	int64_t until = monotonic_ms() + ms, left;
	struct timespec ts;

	if (gl->sleep_ms) {
		gl->sleep_ms(gl->hook_arg, ms);
	} else {
		while (!stopping(gl) && (left = until - monotonic_ms()) > 0) {
			if (left > PB_FORGE_WAIT_SLICE_MS)
				left = PB_FORGE_WAIT_SLICE_MS;
			ts.tv_sec = 0;
			ts.tv_nsec = (long)left * 1000000L;
			nanosleep(&ts, NULL);
		}
	}
	return stopping(gl) ? stop_give_up(gl) : 0;
}

static uint32_t gl_random(struct gitlab *gl)
{
	uint64_t x;

	if (gl->random)
		return gl->random(gl->hook_arg);
	x = gl->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	gl->rng = x;
	return (uint32_t)(x >> 32);
}

/*
 * Error text and status codes.
 */

static void add_some(struct buf *out, const char *s, size_t len)
{
	size_t room = out->max > out->len ? out->max - out->len : 0;

	buf_add(out, s, len < room ? len : room);
}

static void flatten_message(struct buf *out, const struct json_value *v,
			    int depth);

static int flatten_member(const char *key, const struct json_value *v,
			  void *arg)
{
	struct buf *out = arg;

	if (out->len)
		add_some(out, "; ", 2);
	add_some(out, key, strlen(key));
	add_some(out, ": ", 2);
	flatten_message(out, v, 1);
	return 0;
}

/* {"field": ["msg", …], "nested": {…}} → "field: msg, msg; nested: …" */
static void flatten_message(struct buf *out, const struct json_value *v,
			    int depth)
{
	const char *s;
	size_t len, i, n;

	switch (json_kind_of(v)) {
	case JSON_STRING:
		json_value_strref(&s, &len, v, "message");
		add_some(out, s, len);
		break;
	case JSON_ARRAY:
		n = json_array_len(v);
		for (i = 0; i < n; i++) {
			if (i)
				add_some(out, ", ", 2);
			flatten_message(out, json_array_at(v, i), depth + 1);
		}
		break;
	case JSON_OBJECT:
		if (depth > 3)
			break;
		if (depth == 0) {
			json_object_foreach(v, flatten_member, out);
		} else {
			struct buf sub = BUF_INIT(GL_ERRTEXT_MAX);

			json_object_foreach(v, flatten_member, &sub);
			add_some(out, sub.data, sub.len);
			buf_release(&sub);
		}
		break;
	default:
		break;
	}
}

void gitlab_error_text(struct buf *out, const char *body, size_t len)
{
	const struct json_value *root, *m, *d;
	struct json_doc *doc = NULL;
	const char *p = body, *t, *e;
	size_t n = len;

	if (json_parse(&doc, body, len, PB_JSON_DEPTH_MAX) == 0) {
		root = json_doc_root(doc);
		/* "message": a string, or an object of field errors. */
		m = json_member(root, "message");
		if (m)
			flatten_message(out, m, 0);
		/* Grape's "error", with OAuth's "error_description". */
		m = json_member(root, "error");
		d = json_member(root, "error_description");
		if (!out->len && json_kind_of(m) == JSON_STRING) {
			flatten_message(out, m, 1);
			if (json_kind_of(d) == JSON_STRING) {
				add_some(out, ": ", 2);
				flatten_message(out, d, 1);
			}
		}
		json_doc_free(doc);
		if (out->len)
			return;
	}
	/* Not GitLab's JSON: a plain 429 text, or a proxy's HTML page, of
	 * which the title says enough. */
	while (n > 0 && strchr(" \t\r\n", *p)) {
		p++;
		n--;
	}
	while (n > 0 && strchr(" \t\r\n", p[n - 1]))
		n--;
	if (n > 0 && *p == '<' && (t = mem_find(p, n, "<title>", 7)) &&
	    (e = mem_find(t, n - (size_t)(t - p), "</title>", 8))) {
		p = t + 7;
		n = (size_t)(e - p);
	}
	add_some(out, p, n);
}

int gitlab_status_code(long status)
{
	switch (status) {
	case 400:
	case 405:
	case 409:
	case 412:
	case 422:
		return PB_EINVAL;
	case 401:
	case 403:
		return PB_EPERM;
	case 404:
		return PB_ENOTFOUND;
	case 408:
	case 429:
		return PB_ETEMP;
	default:
		return status >= 500 && status <= 599 ? PB_ETEMP : PB_ERROR;
	}
}

/*
 * Requests.
 */

/* The path below the API root, without the query: for messages and logs
 * (queries may hold search terms such as email addresses). */
static void where_of(char *dst, size_t size, const struct gitlab *gl,
		     const char *url)
{
	size_t alen = strlen(gl->api);

	if (!strncmp(url, gl->api, alen))
		url += alen;
	printable_copy(dst, size, url, strcspn(url, "?"));
}

/* The path's n-th segment ("projects", "42", ...) as (p, len); 0 when
 * there is none. */
static int segment(const char *path, size_t n, const char **p, size_t *len)
{
	const char *s = path, *end = path + strcspn(path, "?#");

	for (;;) {
		while (s < end && *s == '/')
			s++;
		if (s >= end)
			return 0;
		*p = s;
		*len = strcspn(s, "/?#");
		if (!n--)
			return 1;
		s += *len;
	}
}

static int seg_is(const char *p, size_t len, const char *word)
{
	return len == strlen(word) && !memcmp(p, word, len);
}

/* The first of words (NULL-ended) equal to the segment, else "other". */
static const char *seg_word(const char *p, size_t len, const char *const *words)
{
	for (; *words; words++)
		if (seg_is(p, len, *words))
			return *words;
	return "other";
}

const char *gitlab_endpoint_class(const char *path)
{
	static const char *const top[] = { "version", "user", "users", NULL };
	static const char *const project[] = { "labels", "repository", "hooks",
					       NULL };
	static const char *const mr[] = {
		"versions",  "commits",	       "changes", "diffs",
		"notes",     "discussions",    "approve", "unapprove",
		"approvals", "approval_state", "merge",	  NULL
	};
	const char *p;
	size_t len;

	if (!segment(path, 0, &p, &len))
		return "other";
	if (!seg_is(p, len, "projects"))
		return seg_word(p, len, top);
	if (!segment(path, 1, &p, &len))
		return "other";
	if (!segment(path, 2, &p, &len))
		return "project";
	if (!seg_is(p, len, "merge_requests"))
		return seg_word(p, len, project);
	if (!segment(path, 3, &p, &len))
		return "merge_requests";
	if (!segment(path, 4, &p, &len))
		return "merge_request";
	/* raw_diffs is a diffs listing too */
	if (seg_is(p, len, "raw_diffs"))
		return "diffs";
	return seg_word(p, len, mr);
}

/* One request's count and time, by endpoint class and status; and a
 * sign of life for the watchdog. */
static void count_request(const struct gitlab *gl, enum http_method m,
			  const char *url, long status, int64_t ms)
{
	const char *path = url, *cls;
	size_t alen = strlen(gl->api);
	char code[16];

	if (!strncmp(url, gl->api, alen))
		path = url + alen;
	cls = gitlab_endpoint_class(path);
	if (status >= 100 && status <= 599)
		snprintf(code, sizeof(code), "%ld", status);
	else
		snprintf(code, sizeof(code), "error");
	metrics_inc3(MET_FORGE_REQUESTS, cls, http_method_name(m), code);
	metrics_observe1(MET_FORGE_DURATION, (double)ms / 1000.0, cls);
	/* An exchange came back (whatever it said): the daemon's loop,
	 * whose thread this is, makes progress (util/sdnotify.h). */
	sdnotify_watchdog();
}

enum gl_kind {
	GL_SAFE, /* GET or idempotent write: retry freely */
	GL_ONCE, /* not idempotent: retry only what surely did not arrive */
};

struct gl_call {
	struct http_response resp;
	struct json_doc *doc;
	const struct json_value *root;
	char where[GL_WHERE_MAX];
	enum http_method method;
	int uncertain; /* GL_ONCE failed after the request may have landed */
};

static void call_init(struct gl_call *c, const struct gitlab *gl)
{
	memset(c, 0, sizeof(*c));
	http_response_init(&c->resp, gl->body_max);
}

static void call_release(struct gl_call *c)
{
	http_response_release(&c->resp);
	json_doc_free(c->doc);
	c->doc = NULL;
	c->root = NULL;
}

/* The endpoints that answer an authenticated user's refusal with 401
 * rather than 403: approve (`unauthorized! unless success`,
 * lib/api/merge_request_approvals.rb), unapprove beside it, and merge
 * (`unauthorized! unless merge_request.can_be_merged_by?`,
 * lib/api/merge_requests.rb). */
static int refuses_with_401(const struct gitlab *gl, const char *url)
{
	size_t alen = strlen(gl->api);
	const char *cls;

	if (!strncmp(url, gl->api, alen))
		url += alen;
	cls = gitlab_endpoint_class(url);
	return !strcmp(cls, "approve") || !strcmp(cls, "unapprove") ||
	       !strcmp(cls, "merge");
}

/*
 * The forge refused the token itself.  Either 401 with the OAuth error
 * invalid_token (lib/api/api_guard.rb, oauth2_bearer_token_error_handler:
 * ExpiredError "Token is expired. ...", RevokedError "Token was revoked.
 * ...", ImpersonationDisabled), or the plain "401 Unauthorized" of
 * authenticate! (lib/api/helpers.rb: no user found for the token, as
 * when it was deleted, mistyped or made on another instance).  The plain
 * one is the token's only when the request was made as the token's own
 * user and not to an endpoint that refuses with 401 (refuses_with_401());
 * everywhere else GitLab tells an authenticated user no with 403 or 404.
 * Not the request's fault: whatever it was, it works once the operator
 * installs a working token.
 */
static enum forge_token_problem
token_refusal(const struct gitlab *gl, const struct gl_call *c, const char *url)
{
	enum forge_token_problem p = FORGE_TOKEN_OK;
	const struct json_value *root, *e, *d;
	struct json_doc *doc = NULL;
	const char *t;
	size_t n;

	if (c->resp.status != 401)
		return FORGE_TOKEN_OK;
	if (!gl->sudo && !refuses_with_401(gl, url))
		p = FORGE_TOKEN_UNKNOWN;
	if (json_parse(&doc, c->resp.body.data, c->resp.body.len,
		       PB_JSON_DEPTH_MAX) < 0)
		return p;
	root = json_doc_root(doc);
	e = json_member(root, "error");
	d = json_member(root, "error_description");
	if (json_kind_of(e) == JSON_STRING &&
	    !json_value_strref(&t, &n, e, "error") && n == 13 &&
	    !memcmp(t, "invalid_token", 13)) {
		p = FORGE_TOKEN_INVALID;
		if (json_kind_of(d) == JSON_STRING &&
		    !json_value_strref(&t, &n, d, "error_description")) {
			if (mem_find(t, n, "expired", 7))
				p = FORGE_TOKEN_EXPIRED;
			else if (mem_find(t, n, "revoked", 7))
				p = FORGE_TOKEN_REVOKED;
		}
	}
	json_doc_free(doc);
	return p;
}

/*
 * The forge refused the Sudo itself, not the request (lib/api/helpers.rb
 * sudo!): 403 "Must be admin to use sudo" (not an administrator's token,
 * or Admin Mode on and no admin_mode scope), 403 insufficient_scope for
 * sudo, 404 "User with ID or username '...' Not Found".  These say
 * nothing about the user the bridge acts for: the first two are the
 * operator's to fix.
 */
static enum forge_sudo_problem sudo_refusal(const struct gitlab *gl,
					    const struct gl_call *c)
{
	enum forge_sudo_problem p = FORGE_SUDO_OK;
	const struct json_value *root, *m, *e, *s;
	struct json_doc *doc = NULL;
	const char *t;
	size_t n;

	if (!gl->sudo || (c->resp.status != 403 && c->resp.status != 404) ||
	    json_parse(&doc, c->resp.body.data, c->resp.body.len,
		       PB_JSON_DEPTH_MAX) < 0)
		return FORGE_SUDO_OK;
	root = json_doc_root(doc);
	m = json_member(root, "message");
	e = json_member(root, "error");
	s = json_member(root, "scope");
	if (json_kind_of(m) == JSON_STRING &&
	    !json_value_strref(&t, &n, m, "message")) {
		if (c->resp.status == 403 &&
		    mem_find(t, n, "Must be admin to use sudo", 25))
			p = FORGE_SUDO_NOT_ADMIN;
		else if (c->resp.status == 404 &&
			 mem_find(t, n, "404 User with ID or username", 28))
			p = FORGE_SUDO_NO_USER;
	}
	if (c->resp.status == 403 && json_kind_of(e) == JSON_STRING &&
	    !json_value_strref(&t, &n, e, "error") && n == 18 &&
	    !memcmp(t, "insufficient_scope", 18) &&
	    json_kind_of(s) == JSON_STRING &&
	    !json_value_strref(&t, &n, s, "scope") && mem_find(t, n, "sudo", 4))
		p = FORGE_SUDO_NO_SCOPE;
	json_doc_free(doc);
	return p;
}

/*
 * GitLab's 409 for a lock it could not take: lib/api/api.rb rescues
 * ActiveRecord::StaleObjectError and ExclusiveLeaseHelpers::
 * FailedToObtainLockError with {"message":"409 Conflict: Resource lock"}.
 * Another request held the record: temporary, retried as a 5xx is.  The
 * same status means a stale `sha` to approve, a conflict of state that no
 * retry mends, so the body tells the two apart.
 */
static int is_resource_lock(const struct gl_call *c)
{
	static const char lock[] = "409 Conflict: Resource lock";
	const struct json_value *m;
	struct json_doc *doc = NULL;
	const char *t;
	size_t n;
	int yes = 0;

	if (c->resp.status != 409 ||
	    json_parse(&doc, c->resp.body.data, c->resp.body.len,
		       PB_JSON_DEPTH_MAX) < 0)
		return 0;
	m = json_member(json_doc_root(doc), "message");
	if (json_kind_of(m) == JSON_STRING &&
	    !json_value_strref(&t, &n, m, "message") && n == sizeof(lock) - 1 &&
	    !memcmp(t, lock, n))
		yes = 1;
	json_doc_free(doc);
	return yes;
}

static int status_error(struct gl_call *c)
{
	struct buf t = BUF_INIT(GL_ERRTEXT_MAX);
	char text[GL_ERRTEXT_MAX];
	int code = is_resource_lock(c) ? PB_ETEMP :
					 gitlab_status_code(c->resp.status);

	gitlab_error_text(&t, c->resp.body.data, c->resp.body.len);
	printable_copy(text, sizeof(text), t.data, t.len);
	buf_release(&t);
	/* A write on a project's old path (lib/api/helpers.rb find_project!):
	 * an operator's matter that the project's id settles, never the
	 * request's; what waits is tried again once the id is pinned. */
	if (c->resp.status == 405 &&
	    strstr(text, "not allowed for moved projects"))
		code = PB_ETEMP;
	return err_set(code, "%s %s: HTTP %ld%s%s", http_method_name(c->method),
		       c->where, c->resp.status, text[0] ? ": " : "", text);
}

static int is_redirect(long status)
{
	return status == 301 || status == 302 || status == 303 ||
	       status == 307 || status == 308;
}

/*
 * GitLab answers 301 for a renamed project (16.7+).  Follow only GETs,
 * and only within our origin: the token goes wherever we follow.
 */
static int follow_redirect(struct gitlab *gl, struct gl_call *c, char **url,
			   int *hops)
{
	char loc[GL_WHERE_MAX];
	char *next;

	if (!c->resp.location || !*c->resp.location)
		return err_set(PB_ERROR, "%s %s: HTTP %ld without Location",
			       http_method_name(c->method), c->where,
			       c->resp.status);
	printable_copy(loc, sizeof(loc), c->resp.location,
		       strlen(c->resp.location));
	if (c->method != HTTP_GET)
		return err_set(PB_ERROR,
			       "%s %s: moved to %s; writes are not "
			       "redirected (update the project "
			       "path)",
			       http_method_name(c->method), c->where, loc);
	if (++*hops > GL_REDIRECTS_MAX)
		return err_set(PB_ERROR, "%s %s: too many redirects",
			       http_method_name(c->method), c->where);
	if (c->resp.location[0] == '/')
		next = xasprintf("%s%s", gl->origin, c->resp.location);
	else
		next = xstrdup(c->resp.location);
	if (!http_same_origin(next, gl->api)) {
		free(next);
		return err_set(PB_EPERM,
			       "%s %s: redirected to another origin "
			       "(%s); not following",
			       http_method_name(c->method), c->where, loc);
	}
	log_notice("forge: %s moved to %s; consider updating the "
		   "configuration",
		   c->where, loc);
	free(*url);
	*url = next;
	return 0;
}

/*
 * One request with the retry policy of kind.  0 when a 2xx or 304 came;
 * otherwise the error, with c->resp holding the last response (its status
 * tells a caller which 4xx it was) and c->uncertain set when a GL_ONCE
 * request may have been applied.
 */
static int call_do(struct gitlab *gl, struct gl_call *c, enum http_method m,
		   const char *url0, const struct buf *body, enum gl_kind kind)
{
	struct http_request req;
	char *url = xstrdup(url0);
	unsigned attempt = 0;
	enum forge_token_problem tp;
	int hops = 0, rc;
	int64_t delay, t0;
	long st;

	json_doc_free(c->doc);
	c->doc = NULL;
	c->root = NULL;
	c->method = m;
	c->uncertain = 0;
	gl->sudo_problem = FORGE_SUDO_OK;
	if (!stopping(gl)) {
		gl->stop_failed = 0;
	} else if (gl->stop_failed) {
		/* Stopping, and the forge failed us already: no request. */
		http_response_reset(&c->resp);
		where_of(c->where, sizeof(c->where), gl, url);
		rc = err_set(PB_ETEMP,
			     "%s %s: not sent: stopping after a forge "
			     "failure",
			     http_method_name(m), c->where);
		goto out;
	}
	for (;;) {
		/* Still ours to do? (A claim outlives one try and one wait.) */
		rc = forge_guard(&gl->base);
		if (rc) {
			http_response_reset(&c->resp);
			where_of(c->where, sizeof(c->where), gl, url);
			goto out;
		}
		memset(&req, 0, sizeof(req));
		req.method = m;
		req.url = url;
		req.body = body ? body->data : NULL;
		req.body_len = body ? body->len : 0;
		req.sudo = gl->sudo;
		req.fresh_connection = kind == GL_ONCE;
		where_of(c->where, sizeof(c->where), gl, url);
		gl->stats.requests++;
		t0 = monotonic_ms();
		rc = http_do(&c->resp, gl->http, &req);
		count_request(gl, m, url, rc ? 0 : c->resp.status,
			      monotonic_ms() - t0);
		if (rc && c->resp.stopped)
			gl->stop_failed = 1;
		st = c->resp.status;
		if (rc == 0) {
			if ((st >= 200 && st < 300) || st == 304) {
				gl->token_problem = FORGE_TOKEN_OK;
				goto out;
			}
			if (is_redirect(st)) {
				rc = follow_redirect(gl, c, &url, &hops);
				if (rc < 0)
					goto out;
				continue;
			}
			rc = status_error(c);
			tp = token_refusal(gl, c, url);
			/* Any other 401 (with Sudo, or refusing an approval)
			 * says nothing for the token: GitLab answers an
			 * unknown token so too, before it looks at Sudo. */
			if (tp != FORGE_TOKEN_OK || st != 401)
				gl->token_problem = tp;
			if (tp != FORGE_TOKEN_OK) {
				/* Waits for the operator, not retried here:
				 * the token file must change first. */
				rc = err_prefix(PB_ETEMP, "the forge token %s",
						forge_token_problem_text(
							gl->token_problem));
				goto out;
			}
			gl->sudo_problem = sudo_refusal(gl, c);
			if (gl->sudo_problem != FORGE_SUDO_OK) {
				rc = err_prefix(rc, "acting as %s: %s",
						gl->sudo,
						forge_sudo_problem_text(
							gl->sudo_problem));
				goto out;
			}
			if (st != 429 && (st < 500 || st > 599) &&
			    rc != PB_ETEMP)
				goto out;
			/* A 5xx may come after the write was committed; a
			 * Resource lock may too (a note saved, then a touch
			 * of the MR losing its lock), so it is treated as
			 * one. */
			if (kind == GL_ONCE && st != 429) {
				c->uncertain = 1;
				goto out;
			}
		} else {
			err_prefix(rc, "%s %s", http_method_name(m), c->where);
			if (rc != PB_ETEMP)
				goto out;
			if (kind == GL_ONCE && c->resp.maybe_sent) {
				c->uncertain = 1;
				goto out;
			}
		}

		if (stopping(gl)) {
			rc = stop_give_up(gl);
			goto out;
		}
		if ((int)attempt >= gl->max_retries) {
			err_prefix(rc, "giving up after %u tries", attempt + 1);
			goto out;
		}
		attempt++;
		if (http_retry_delay(
			    &delay, &gl->backoff, attempt,
			    st == 429 || st == 503 ? c->resp.retry_after : NULL,
			    st == 429 ? c->resp.ratelimit_reset : NULL,
			    gl->now_ms(gl->hook_arg), gl_random(gl)) < 0) {
			rc = err_set(PB_ETEMP,
				     "%s %s: rate limited; the forge "
				     "asks to wait %lld s",
				     http_method_name(m), c->where,
				     (long long)(delay / 1000));
			goto out;
		}
		log_warn("forge: %s; retry %u/%d in %lld ms", err_msg(),
			 attempt, gl->max_retries, (long long)delay);
		gl->stats.retries++;
		gl->stats.last_delay_ms = delay;
		rc = gl_wait(gl, delay);
		if (rc)
			goto out;
	}
out:
	free(url);
	return rc;
}

/* Log a response we cannot use and turn the error into PB_EINVAL. */
static int bad_data(struct gl_call *c)
{
	char ex[PB_LOG_QUOTE_MAX];

	printable_copy(ex, sizeof(ex), c->resp.body.data, c->resp.body.len);
	log_warn("forge: %s %s: unusable response (%s); body: \"%s\"",
		 http_method_name(c->method), c->where, err_msg(), ex);
	return err_prefix(PB_EINVAL, "%s %s: unusable response",
			  http_method_name(c->method), c->where);
}

static int call_json(struct gl_call *c)
{
	int rc;

	json_doc_free(c->doc);
	c->doc = NULL;
	c->root = NULL;
	rc = json_parse(&c->doc, c->resp.body.data, c->resp.body.len,
			PB_JSON_DEPTH_MAX);
	if (rc < 0)
		return bad_data(c);
	c->root = json_doc_root(c->doc);
	return 0;
}

/* GET url (retried) and parse it; root must be an object. */
static int call_get_object(struct gitlab *gl, struct gl_call *c,
			   const char *url)
{
	int rc = call_do(gl, c, HTTP_GET, url, NULL, GL_SAFE);

	if (!rc)
		rc = call_json(c);
	if (!rc && json_expect(c->root, JSON_OBJECT, "response") < 0)
		rc = bad_data(c);
	return rc;
}

/*
 * URLs.
 */

static int url_fail(void)
{
	return err_set(PB_ELIMIT, "URL longer than %d bytes", PB_HTTP_URL_MAX);
}

/*
 * A pinned path goes out as its id: after a rename or a move, GitLab
 * redirects GETs on the old path but answers every write on it with 405
 * "Non GET methods are not allowed for moved projects" (lib/api/helpers.rb
 * find_project!, project_moved?), and the id never changes.
 */
static int url_project(struct buf *u, struct gitlab *gl, const char *project)
{
	char id[24];

	if (!project || !*project)
		return err_set(PB_EINVAL, "no project given");
	project = forge_project_ref(&gl->base, project, id, sizeof(id));
	if (buf_adds(u, gl->api) < 0 || buf_adds(u, "/projects/") < 0 ||
	    http_escape(u, project) < 0)
		return url_fail();
	return 0;
}

static int url_mr(struct buf *u, struct gitlab *gl, const char *project,
		  int64_t iid, const char *suffix)
{
	int rc;

	if (iid <= 0)
		return err_set(PB_EINVAL, "bad merge request iid %lld",
			       (long long)iid);
	rc = url_project(u, gl, project);
	if (rc < 0)
		return rc;
	if (buf_addf(u, "/merge_requests/%lld%s", (long long)iid,
		     suffix ? suffix : "") < 0)
		return url_fail();
	return 0;
}

/* Append "?name=value" or "&name=value", value percent-encoded. */
static int url_param(struct buf *u, const char *name, const char *value)
{
	if (buf_addch(u, strchr(u->data, '?') ? '&' : '?') < 0 ||
	    buf_adds(u, name) < 0 || buf_addch(u, '=') < 0 ||
	    http_escape(u, value) < 0)
		return url_fail();
	return 0;
}

static int url_param_int(struct buf *u, const char *name, int64_t v)
{
	char num[32];

	snprintf(num, sizeof(num), "%lld", (long long)v);
	return url_param(u, name, num);
}

static int discussion_id_check(const char *id)
{
	size_t i, n = id ? strlen(id) : 0;

	if (n == 0 || n > GL_DISCUSSION_ID_MAX)
		return err_set(PB_EINVAL, "bad discussion id");
	for (i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		      (id[i] >= 'a' && id[i] <= 'z') ||
		      (id[i] >= 'A' && id[i] <= 'Z')))
			return err_set(PB_EINVAL, "bad discussion id");
	return 0;
}

/* A discussion of a merge request, then suffix ("/notes") if any. */
static int url_discussion(struct buf *u, struct gitlab *gl, const char *project,
			  int64_t iid, const char *id, const char *suffix)
{
	int rc;

	if ((rc = discussion_id_check(id)) < 0 ||
	    (rc = url_mr(u, gl, project, iid, "/discussions/")) < 0)
		return rc;
	if (buf_adds(u, id) < 0 || (suffix && buf_adds(u, suffix) < 0))
		return url_fail();
	return 0;
}

/*
 * Pagination.  GitLab builds its Link header from the configured external
 * URL (lib/gitlab/pagination/offset_header_builder.rb replaces the
 * request's host and port with Gitlab.config.gitlab's), so a bridge that
 * reaches GitLab under another name or port - behind a proxy, on an
 * internal address - gets next-page links to another origin.  As
 * python-gitlab's keep_base_url does, the next page is asked for on the
 * configured URL: the current URL with page=X-Next-Page; a Link without
 * X-Next-Page (keyset pagination) only when it is on our origin, or
 * rewritten onto it from its /api/v4/ on.  Nothing is ever requested
 * from another origin, so the token goes nowhere else.  The listing
 * ends on an empty X-Next-Page or no next link, never on X-Total (absent
 * past 10,000 rows).
 */
typedef int (*gl_item_fn)(struct gl_call *c, const struct json_value *item,
			  void *arg);

/* url with its page parameter set to page (appended when it has none). */
static int url_with_page(struct buf *out, const char *url, const char *page)
{
	const char *q = strchr(url, '?'), *p, *amp;
	size_t n;

	buf_reset(out);
	if (!q)
		return buf_addf(out, "%s?page=%s", url, page) < 0 ? url_fail() :
								    0;
	if (buf_add(out, url, (size_t)(q - url) + 1) < 0)
		return url_fail();
	for (p = q + 1; *p; p = amp ? amp + 1 : p + n) {
		amp = strchr(p, '&');
		n = amp ? (size_t)(amp - p) : strlen(p);
		if (n >= 5 && !strncmp(p, "page=", 5))
			continue;
		if (n && (buf_add(out, p, n) < 0 || buf_addch(out, '&') < 0))
			return url_fail();
		if (!amp)
			break;
	}
	if (buf_addf(out, "page=%s", page) < 0)
		return url_fail();
	return 0;
}

/*
 * The URL of the next page in next, or "" for none.  X-Next-Page first,
 * on the configured URL; else Link rel="next", kept on our origin.
 */
static int next_page_url(struct gitlab *gl, struct gl_call *c, const char *url,
			 struct buf *next)
{
	const char *np = c->resp.next_page, *api;
	size_t i;
	int rc;

	buf_reset(next);
	if (np) {
		if (!*np)
			return 0;
		for (i = 0; np[i]; i++)
			if (np[i] < '0' || np[i] > '9' || i >= 9)
				return err_set(PB_EINVAL,
					       "%s: X-Next-Page is not a "
					       "page number",
					       c->where);
		return url_with_page(next, url, np);
	}
	rc = c->resp.link ? http_link_find(next, c->resp.link, "next") :
			    PB_ENOTFOUND;
	if (rc == PB_ENOTFOUND) {
		buf_reset(next);
		return 0;
	}
	if (rc < 0)
		return rc;
	if (http_same_origin(next->data, gl->api))
		return 0;
	/* keep_base_url: the same path on the configured URL. */
	api = strstr(next->data, "/api/v4/");
	if (!api || !strchr(api, '?'))
		return err_set(PB_EINVAL,
			       "%s: the next-page link leaves the forge's "
			       "origin",
			       c->where);
	{
		char *rest = xstrdup(api + 7);

		buf_reset(next);
		rc = buf_addf(next, "%s%s", gl->api, rest) < 0 ? url_fail() : 0;
		free(rest);
	}
	if (!rc && !gl->links_elsewhere_logged) {
		gl->links_elsewhere_logged = 1;
		log_notice("forge: next-page links name another origin than "
			   "[forge] url (GitLab's external_url differs); "
			   "following them on [forge] url");
	}
	return rc;
}

/*
 * forge_pause(): fn runs as ourselves, and whatever it leaves (its Sudo
 * user, a refused Sudo) is undone before the read goes on.
 */
static void gl_pause(struct forge *f, forge_pause_fn fn, void *arg)
{
	struct gitlab *gl = gl_of(f);
	char *sudo = gl->sudo;
	enum forge_sudo_problem problem = gl->sudo_problem;

	gl->sudo = NULL;
	fn(arg);
	free(gl->sudo);
	gl->sudo = sudo;
	gl->sudo_problem = problem;
}

static int paginate(struct gitlab *gl, const char *first, int max_pages,
		    gl_item_fn fn, void *arg, int *truncated)
{
	struct buf next = BUF_INIT(PB_HTTP_URL_MAX);
	char *url = xstrdup(first);
	struct gl_call c;
	int pages = 0, rc;
	size_t i, n;

	*truncated = 0;
	if (max_pages <= 0 || max_pages > PB_PAGES_MAX)
		max_pages = PB_PAGES_MAX;
	call_init(&c, gl);
	for (;;) {
		rc = call_do(gl, &c, HTTP_GET, url, NULL, GL_SAFE);
		if (!rc)
			rc = call_json(&c);
		if (rc)
			goto out;
		if (json_expect(c.root, JSON_ARRAY, "response") < 0) {
			rc = bad_data(&c);
			goto out;
		}
		n = json_array_len(c.root);
		for (i = 0; i < n; i++) {
			rc = fn(&c, json_array_at(c.root, i), arg);
			if (rc)
				goto out;
		}
		pages++;
		if (n == 0)
			break;
		rc = next_page_url(gl, &c, url, &next);
		if (rc < 0) {
			rc = bad_data(&c);
			goto out;
		}
		if (!next.len)
			break;
		if (pages >= max_pages) {
			*truncated = 1;
			break;
		}
		free(url);
		url = xstrdup(next.data);
		/* Between two pages: what the caller serves meanwhile. */
		forge_pause(&gl->base);
	}
out:
	call_release(&c);
	buf_release(&next);
	free(url);
	return rc;
}

/*
 * JSON to our structs.  Ids and the fields we act on are required; the
 * rest may be missing or null.  A converter zeroes out first and leaves
 * nothing to release when it fails; out is the forge.h struct its name
 * says, so that the read and write paths below take any of them.
 */
typedef int (*gl_from_json_fn)(void *out, const struct json_value *v);

static int user_from_json(void *out, const struct json_value *v)
{
	struct forge_user *u = out;
	int rc;

	memset(u, 0, sizeof(*u));
	if ((rc = json_get_int(&u->id, v, "id")) < 0 ||
	    (rc = json_get_str(&u->username, v, "username")) < 0 ||
	    (rc = json_get_str_opt(&u->name, v, "name")) < 0 ||
	    (rc = json_get_str_opt(&u->state, v, "state")) < 0 ||
	    (rc = json_get_str_opt(&u->email, v, "email")) < 0 ||
	    (rc = json_get_str_opt(&u->public_email, v, "public_email")) < 0) {
		forge_user_release(u);
		return err_prefix(rc, "user");
	}
	return 0;
}

static int strings_from_json(struct strlist *l, const struct json_value *obj,
			     const char *key)
{
	const struct json_value *arr;
	size_t i, n;
	char *s;
	int rc;

	rc = json_get_array_opt(&arr, obj, key);
	if (rc < 0 || !arr)
		return rc;
	n = json_array_len(arr);
	for (i = 0; i < n; i++) {
		rc = json_value_str(&s, json_array_at(arr, i), key);
		if (rc < 0)
			return rc;
		strlist_push_owned(l, s);
	}
	return 0;
}

/* "reviewers": [{user}, ...]; missing or null is none. */
static int reviewers_from_json(struct forge_mr *mr, const struct json_value *v)
{
	const struct json_value *arr, *item;
	size_t i, n;
	int rc;

	rc = json_get_array_opt(&arr, v, "reviewers");
	if (rc < 0 || !arr)
		return rc;
	n = json_array_len(arr);
	if (!n)
		return 0;
	mr->reviewers = xcalloc(n, sizeof(*mr->reviewers));
	for (i = 0; i < n; i++) {
		item = json_array_at(arr, i);
		if ((rc = json_expect(item, JSON_OBJECT, "reviewer")) < 0 ||
		    (rc = user_from_json(&mr->reviewers[i], item)) < 0)
			return rc;
		mr->nr_reviewers++;
	}
	return 0;
}

static int mr_from_json(void *out, const struct json_value *v)
{
	struct forge_mr *mr = out;
	const struct json_value *o;
	int64_t n;
	int has, rc;

	memset(mr, 0, sizeof(*mr));
	if ((rc = json_get_int(&mr->id, v, "id")) < 0 ||
	    (rc = json_get_int(&mr->iid, v, "iid")) < 0 ||
	    (rc = json_get_int(&mr->project_id, v, "project_id")) < 0 ||
	    (rc = json_get_str(&mr->title, v, "title")) < 0 ||
	    (rc = json_get_str_opt(&mr->description, v, "description")) < 0 ||
	    (rc = json_get_str(&mr->state, v, "state")) < 0 ||
	    (rc = json_get_str_opt(&mr->created_at, v, "created_at")) < 0 ||
	    (rc = json_get_str(&mr->updated_at, v, "updated_at")) < 0 ||
	    (rc = json_get_str_opt(&mr->source_branch, v, "source_branch")) <
		    0 ||
	    (rc = json_get_str_opt(&mr->target_branch, v, "target_branch")) <
		    0 ||
	    (rc = json_get_str_opt(&mr->sha, v, "sha")) < 0 ||
	    (rc = json_get_str_opt(&mr->detailed_merge_status, v,
				   "detailed_merge_status")) < 0 ||
	    (rc = json_get_str_opt(&mr->web_url, v, "web_url")) < 0 ||
	    (rc = json_get_bool_opt(&mr->draft, v, "draft")) < 0 ||
	    (rc = json_get_bool_opt(&mr->discussion_locked, v,
				    "discussion_locked")) < 0 ||
	    (rc = strings_from_json(&mr->labels, v, "labels")) < 0 ||
	    (rc = json_get_str_opt(&mr->merge_commit_sha, v,
				   "merge_commit_sha")) < 0 ||
	    (rc = json_get_str_opt(&mr->squash_commit_sha, v,
				   "squash_commit_sha")) < 0)
		goto fail;
	/* squash_on_merge (GitLab 16.x) folds in the project's option. */
	if (json_has(v, "squash_on_merge"))
		rc = json_get_bool_opt(&mr->squash, v, "squash_on_merge");
	else
		rc = json_get_bool_opt(&mr->squash, v, "squash");
	if (rc < 0)
		goto fail;
	if ((rc = json_get_int_opt(&n, &has, v, "source_project_id")) < 0)
		goto fail;
	mr->source_project_id = has ? n : mr->project_id;
	if ((rc = json_get_int_opt(&n, &has, v, "target_project_id")) < 0)
		goto fail;
	mr->target_project_id = has ? n : mr->project_id;
	rc = forge_time_parse(&mr->updated_ms, mr->updated_at);
	if (rc < 0) {
		rc = err_set(PB_EINVAL, "field 'updated_at': bad timestamp");
		goto fail;
	}
	if ((rc = json_get_obj_opt(&o, v, "author")) < 0 ||
	    (o && (rc = user_from_json(&mr->author, o)) < 0))
		goto fail;
	if ((rc = reviewers_from_json(mr, v)) < 0)
		goto fail;
	if ((rc = json_get_obj_opt(&o, v, "diff_refs")) < 0)
		goto fail;
	if (o && ((rc = json_get_str_opt(&mr->base_sha, o, "base_sha")) < 0 ||
		  (rc = json_get_str_opt(&mr->start_sha, o, "start_sha")) < 0 ||
		  (rc = json_get_str_opt(&mr->head_sha, o, "head_sha")) < 0))
		goto fail;
	return 0;
fail:
	forge_mr_release(mr);
	return err_prefix(rc, "merge request");
}

static int commit_from_json(struct forge_commit *c, const struct json_value *v)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if ((rc = json_get_str(&c->id, v, "id")) < 0 ||
	    (rc = json_get_str_opt(&c->short_id, v, "short_id")) < 0 ||
	    (rc = json_get_str_opt(&c->title, v, "title")) < 0 ||
	    (rc = json_get_str_opt(&c->message, v, "message")) < 0 ||
	    (rc = json_get_str_opt(&c->author_name, v, "author_name")) < 0 ||
	    (rc = json_get_str_opt(&c->author_email, v, "author_email")) < 0 ||
	    (rc = json_get_str_opt(&c->authored_date, v, "authored_date")) <
		    0 ||
	    (rc = json_get_str_opt(&c->committer_name, v, "committer_name")) <
		    0 ||
	    (rc = json_get_str_opt(&c->committer_email, v, "committer_email")) <
		    0 ||
	    (rc = json_get_str_opt(&c->committed_date, v, "committed_date")) <
		    0 ||
	    (rc = strings_from_json(&c->parent_ids, v, "parent_ids")) < 0) {
		forge_commit_release(c);
		return err_prefix(rc, "commit");
	}
	return 0;
}

static int diff_from_json(struct forge_diff_file *d, const struct json_value *v)
{
	int rc;

	memset(d, 0, sizeof(*d));
	if ((rc = json_get_str(&d->old_path, v, "old_path")) < 0 ||
	    (rc = json_get_str(&d->new_path, v, "new_path")) < 0 ||
	    (rc = json_get_str_opt(&d->a_mode, v, "a_mode")) < 0 ||
	    (rc = json_get_str_opt(&d->b_mode, v, "b_mode")) < 0 ||
	    (rc = json_get_str_opt(&d->diff, v, "diff")) < 0 ||
	    (rc = json_get_bool_opt(&d->new_file, v, "new_file")) < 0 ||
	    (rc = json_get_bool_opt(&d->renamed_file, v, "renamed_file")) < 0 ||
	    (rc = json_get_bool_opt(&d->deleted_file, v, "deleted_file")) < 0 ||
	    (rc = json_get_bool_opt(&d->generated_file, v, "generated_file")) <
		    0) {
		forge_diff_file_release(d);
		return err_prefix(rc, "diff");
	}
	return 0;
}

static int version_from_json(void *out, const struct json_value *v)
{
	struct forge_version *ver = out;
	const struct json_value *arr;
	size_t i, n;
	int rc;

	memset(ver, 0, sizeof(*ver));
	if ((rc = json_get_int(&ver->id, v, "id")) < 0 ||
	    (rc = json_get_str(&ver->head_sha, v, "head_commit_sha")) < 0 ||
	    (rc = json_get_str_opt(&ver->base_sha, v, "base_commit_sha")) < 0 ||
	    (rc = json_get_str_opt(&ver->start_sha, v, "start_commit_sha")) <
		    0 ||
	    (rc = json_get_str_opt(&ver->created_at, v, "created_at")) < 0 ||
	    (rc = json_get_str_opt(&ver->state, v, "state")) < 0 ||
	    (rc = json_get_str_opt(&ver->real_size, v, "real_size")) < 0 ||
	    (rc = json_get_str_opt(&ver->patch_id_sha, v, "patch_id_sha")) < 0)
		goto fail;

	if ((rc = json_get_array_opt(&arr, v, "commits")) < 0)
		goto fail;
	n = json_array_len(arr);
	if (n) {
		ver->commits = xcalloc(n, sizeof(*ver->commits));
		for (i = 0; i < n; i++) {
			rc = commit_from_json(&ver->commits[i],
					      json_array_at(arr, i));
			if (rc < 0)
				goto fail;
			ver->nr_commits++;
		}
	}
	if ((rc = json_get_array_opt(&arr, v, "diffs")) < 0)
		goto fail;
	n = json_array_len(arr);
	if (n) {
		ver->diffs = xcalloc(n, sizeof(*ver->diffs));
		for (i = 0; i < n; i++) {
			rc = diff_from_json(&ver->diffs[i],
					    json_array_at(arr, i));
			if (rc < 0)
				goto fail;
			ver->nr_diffs++;
		}
	}
	return 0;
fail:
	forge_version_release(ver);
	return err_prefix(rc, "diff version");
}

static int position_from_json(struct forge_position *p,
			      const struct json_value *v)
{
	int has, rc;

	memset(p, 0, sizeof(*p));
	if ((rc = json_get_str_opt(&p->base_sha, v, "base_sha")) < 0 ||
	    (rc = json_get_str_opt(&p->start_sha, v, "start_sha")) < 0 ||
	    (rc = json_get_str_opt(&p->head_sha, v, "head_sha")) < 0 ||
	    (rc = json_get_str_opt(&p->old_path, v, "old_path")) < 0 ||
	    (rc = json_get_str_opt(&p->new_path, v, "new_path")) < 0 ||
	    (rc = json_get_int_opt(&p->old_line, &has, v, "old_line")) < 0 ||
	    (rc = json_get_int_opt(&p->new_line, &has, v, "new_line")) < 0) {
		forge_position_release(p);
		return err_prefix(rc, "position");
	}
	return 0;
}

/*
 * Whether a note is internal: "internal" (GitLab 15.3+), else the older
 * "confidential" (lib/api/entities/note.rb exposes both).  Neither, or a
 * value that is not a boolean, reads as internal: a note whose
 * visibility we cannot read must not leave the forge.
 */
static int note_internal(const struct json_value *v)
{
	static const char *const keys[] = { "internal", "confidential" };
	const struct json_value *m;
	size_t i;
	int b;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!json_has(v, keys[i]))
			continue;
		m = json_member(v, keys[i]);
		if (json_kind_of(m) != JSON_BOOL ||
		    json_get_bool(&b, v, keys[i]) < 0)
			return 1;
		return b;
	}
	return 1;
}

/* A member of kind k, else NULL; never an error (and err_msg() is kept:
 * a note that reads well leaves no message behind). */
static const struct json_value *member_of(const struct json_value *o,
					  const char *key, enum json_kind k)
{
	const struct json_value *m;

	if (!json_has(o, key))
		return NULL;
	m = json_member(o, key);
	return json_kind_of(m) == k ? m : NULL;
}

/* A string member without NUL bytes, copied; NULL otherwise. */
static char *str_of(const struct json_value *o, const char *key)
{
	const struct json_value *m = member_of(o, key, JSON_STRING);
	const char *s;
	size_t len;

	if (!m || json_value_strref(&s, &len, m, key) < 0 ||
	    memchr(s, '\0', len))
		return NULL;
	return xstrndup(s, len);
}

/*
 * A diff note's "suggestions" (lib/api/entities/note.rb, for a
 * MergeRequest DiffNote).  They only shape how the note is mailed, so a
 * list in another form is left out, never the note; an entry that cannot
 * be read stays a hole (from_line 0), so the others keep their order.
 */
static void suggestions_from_json(struct forge_note *n,
				  const struct json_value *v)
{
	const struct json_value *arr = member_of(v, "suggestions", JSON_ARRAY);
	size_t i, nr = arr ? json_array_len(arr) : 0;

	if (nr > FORGE_SUGGESTIONS_MAX)
		nr = FORGE_SUGGESTIONS_MAX;
	if (nr)
		n->suggestions = xcalloc(nr, sizeof(*n->suggestions));
	for (i = 0; i < nr; i++) {
		const struct json_value *o = json_array_at(arr, i);
		const struct json_value *from =
			member_of(o, "from_line", JSON_INT);
		const struct json_value *to = member_of(o, "to_line", JSON_INT);
		const struct json_value *ap =
			member_of(o, "applied", JSON_BOOL);
		struct forge_suggestion *s = &n->suggestions[i];

		n->nr_suggestions++;
		if (!from || !to || json_value_int(&s->from_line, from, "") ||
		    json_value_int(&s->to_line, to, "") || s->from_line < 1 ||
		    s->to_line < s->from_line)
			goto hole;
		s->from_content = str_of(o, "from_content");
		s->to_content = str_of(o, "to_content");
		if (!s->from_content || !s->to_content)
			goto hole;
		s->applied = ap &&
			     json_get_bool(&s->applied, o, "applied") >= 0 &&
			     s->applied;
		continue;
hole:
		free(s->from_content);
		free(s->to_content);
		memset(s, 0, sizeof(*s));
	}
}

static int note_from_json(void *out, const struct json_value *v)
{
	struct forge_note *n = out;
	const struct json_value *o;
	int rc;

	memset(n, 0, sizeof(*n));
	if ((rc = json_get_int(&n->id, v, "id")) < 0 ||
	    (rc = json_get_str_opt(&n->type, v, "type")) < 0 ||
	    (rc = json_get_str(&n->body, v, "body")) < 0 ||
	    (rc = json_get_str_opt(&n->created_at, v, "created_at")) < 0 ||
	    (rc = json_get_str_opt(&n->updated_at, v, "updated_at")) < 0 ||
	    (rc = json_get_bool_opt(&n->system, v, "system")) < 0 ||
	    (rc = json_get_bool_opt(&n->resolvable, v, "resolvable")) < 0 ||
	    (rc = json_get_bool_opt(&n->resolved, v, "resolved")) < 0 ||
	    (rc = json_get_obj(&o, v, "author")) < 0 ||
	    (rc = user_from_json(&n->author, o)) < 0 ||
	    (rc = json_get_obj_opt(&o, v, "position")) < 0)
		goto fail;
	if (o) {
		rc = position_from_json(&n->position, o);
		if (rc < 0)
			goto fail;
		n->has_position = 1;
	}
	suggestions_from_json(n, v);
	n->internal = note_internal(v);
	return 0;
fail:
	forge_note_release(n);
	return err_prefix(rc, "note");
}

static int discussion_from_json(void *out, const struct json_value *v)
{
	struct forge_discussion *d = out;
	const struct json_value *arr;
	size_t i, n;
	int rc;

	memset(d, 0, sizeof(*d));
	if ((rc = json_get_str(&d->id, v, "id")) < 0 ||
	    (rc = json_get_bool_opt(&d->individual_note, v,
				    "individual_note")) < 0 ||
	    (rc = json_get_array(&arr, v, "notes")) < 0)
		goto fail;
	n = json_array_len(arr);
	if (n)
		d->notes = xcalloc(n, sizeof(*d->notes));
	for (i = 0; i < n; i++) {
		rc = note_from_json(&d->notes[i], json_array_at(arr, i));
		if (rc < 0)
			goto fail;
		d->nr_notes++;
	}
	return 0;
fail:
	forge_discussion_release(d);
	return err_prefix(rc, "discussion");
}

static int approvals_from_json(void *out, const struct json_value *v)
{
	struct forge_approvals *a = out;
	const struct json_value *arr, *item, *u;
	size_t i, n;
	int has, rc;

	memset(a, 0, sizeof(*a));
	a->user_has_approved = -1;
	if (json_kind_of(json_member(v, "user_has_approved")) == JSON_BOOL &&
	    (rc = json_get_bool(&a->user_has_approved, v,
				"user_has_approved")) < 0)
		goto fail;
	/* EE's approval state shows the project's "require user
	 * re-authentication to approve" (ee/lib/ee/api/entities/
	 * approval_state.rb); later versions name it for what it became. */
	if ((rc = json_get_bool_opt(&a->reauth_required, v,
				    "require_password_to_approve")) < 0 ||
	    (!a->reauth_required &&
	     (rc = json_get_bool_opt(&a->reauth_required, v,
				     "require_reauthentication_to_approve")) <
		     0))
		goto fail;
	if ((rc = json_get_bool_opt(&a->approved, v, "approved")) < 0 ||
	    (rc = json_get_int_opt(&a->approvals_required, &has, v,
				   "approvals_required")) < 0)
		goto fail;
	if (!has)
		a->approvals_required = -1;
	if ((rc = json_get_int_opt(&a->approvals_left, &has, v,
				   "approvals_left")) < 0)
		goto fail;
	if (!has)
		a->approvals_left = -1;
	/* The EE shape has no "approved": no approvals left means approved. */
	if (!json_has(v, "approved") && a->approvals_left == 0)
		a->approved = 1;
	if ((rc = json_get_array_opt(&arr, v, "approved_by")) < 0)
		goto fail;
	n = json_array_len(arr);
	if (n)
		a->approved_by = xcalloc(n, sizeof(*a->approved_by));
	for (i = 0; i < n; i++) {
		item = json_array_at(arr, i);
		if ((rc = json_get_obj(&u, item, "user")) < 0 ||
		    (rc = user_from_json(&a->approved_by[i], u)) < 0)
			goto fail;
		a->nr_approved_by++;
	}
	return 0;
fail:
	forge_approvals_release(a);
	return err_prefix(rc, "approvals");
}

/* Convert v, an object of c's answer (what names it), into out with
 * fn; what does not fit is logged and PB_EINVAL. */
static int convert(struct gl_call *c, const struct json_value *v,
		   const char *what, gl_from_json_fn fn, void *out)
{
	if (json_expect(v, JSON_OBJECT, what) < 0 || fn(out, v) < 0)
		return bad_data(c);
	return 0;
}

/*
 * The read path: one object, or every page of a list, converted.
 */

/* GET url (retried) and convert its object into out with fn. */
static int get_one(struct gitlab *gl, const char *url, gl_from_json_fn fn,
		   void *out)
{
	struct gl_call c;
	int rc;

	call_init(&c, gl);
	rc = call_get_object(gl, &c, url);
	if (!rc)
		rc = convert(&c, c.root, "response", fn, out);
	call_release(&c);
	return rc;
}

/* get_one() on a merge request's URL (url_mr()). */
static int get_mr_one(struct gitlab *gl, const char *project, int64_t iid,
		      const char *suffix, gl_from_json_fn fn, void *out)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	int rc = url_mr(&u, gl, project, iid, suffix);

	if (!rc)
		rc = get_one(gl, u.data, fn, out);
	buf_release(&u);
	return rc;
}

/* GET /users/:id. */
static int get_user_by_id(struct forge_user *out, struct gitlab *gl, int64_t id)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	int rc;

	if (buf_addf(&u, "%s/users/%lld", gl->api, (long long)id) < 0)
		rc = url_fail();
	else
		rc = get_one(gl, u.data, user_from_json, out);
	buf_release(&u);
	return rc;
}

/*
 * GET api + path as ourselves, never through Sudo (who the token is, the
 * instance's settings); c holds the object.
 */
static int get_as_self(struct gitlab *gl, struct gl_call *c, const char *path)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	char *sudo = gl->sudo;
	int rc;

	gl->sudo = NULL;
	if (buf_adds(&u, gl->api) < 0 || buf_adds(&u, path) < 0)
		rc = url_fail();
	else
		rc = call_get_object(gl, c, u.data);
	gl->sudo = sudo;
	buf_release(&u);
	return rc;
}

/*
 * Every page of the listing at u (per_page appended) through fn.  With
 * what, more than PB_PAGES_MAX pages is PB_ELIMIT ("more than N pages of
 * what"); without, what the pages held is enough.
 */
static int paginate_all(struct gitlab *gl, struct buf *u, gl_item_fn fn,
			void *arg, const char *what)
{
	int truncated, rc;

	if ((rc = url_param_int(u, "per_page", gl->per_page)) < 0)
		return rc;
	rc = paginate(gl, u->data, 0, fn, arg, &truncated);
	if (!rc && truncated && what)
		rc = err_set(PB_ELIMIT, "more than %d pages of %s",
			     PB_PAGES_MAX, what);
	return rc;
}

/* paginate_all() on a merge request's URL (url_mr()). */
static int paginate_mr(struct gitlab *gl, const char *project, int64_t iid,
		       const char *suffix, gl_item_fn fn, void *arg,
		       const char *what)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	int rc = url_mr(&u, gl, project, iid, suffix);

	if (!rc)
		rc = paginate_all(gl, &u, fn, arg, what);
	buf_release(&u);
	return rc;
}

/*
 * A listing read into an array of forge.h structs, converted one by one
 * with fn (what names one in messages).  The caller moves items and nr
 * into its list, also after a failure, and releases the list then.
 */
struct list_walk {
	void *items;
	size_t nr, alloc, size;
	gl_from_json_fn fn;
	const char *what;
};

#define LIST_WALK(list, fn, what)                                \
	{                                                        \
		NULL, 0, 0, sizeof(*(list)->items), (fn), (what) \
	}

static int list_item(struct gl_call *c, const struct json_value *item,
		     void *arg)
{
	struct list_walk *w = arg;
	int rc;

	if (w->nr >= w->alloc) {
		w->alloc = w->alloc ? 2 * w->alloc : 8;
		w->items = xreallocarray(w->items, w->alloc, w->size);
	}
	rc = convert(c, item, w->what, w->fn,
		     (char *)w->items + w->nr * w->size);
	if (!rc)
		w->nr++;
	return rc;
}

/*
 * Request bodies: one JSON object, written with util/jsonw.
 */

static void body_begin(struct jsonw *w, struct buf *out)
{
	jsonw_init(w, out, 0);
	jsonw_obj_begin(w);
}

static int body_finish(struct jsonw *w)
{
	int rc;

	jsonw_obj_end(w);
	rc = jsonw_finish(w);
	if (rc == PB_ELIMIT)
		return err_set(rc, "request body exceeds %zu bytes",
			       w->out->max);
	return rc;
}

static void member_str(struct jsonw *w, const char *key, const char *s,
		       size_t len)
{
	jsonw_key(w, key);
	jsonw_str(w, s, len);
}

static void member_strz(struct jsonw *w, const char *key, const char *s)
{
	jsonw_key(w, key);
	jsonw_strz(w, s);
}

static void member_int(struct jsonw *w, const char *key, int64_t v)
{
	jsonw_key(w, key);
	jsonw_int(w, v);
}

static void member_bool(struct jsonw *w, const char *key, int v)
{
	jsonw_key(w, key);
	jsonw_bool(w, v);
}

/*
 * Operations.
 */

static void gl_free(struct forge *f)
{
	struct gitlab *gl = gl_of(f);

	http_client_free(gl->http);
	free(gl->api);
	free(gl->origin);
	free(gl->sudo);
	free(gl);
}

static int gl_act_as(struct forge *f, const char *user)
{
	struct gitlab *gl = gl_of(f);
	size_t i, n;

	if (user) {
		n = strlen(user);
		if (n == 0 || n > GL_USERNAME_MAX)
			return err_set(PB_EINVAL, "bad user to act as");
		for (i = 0; i < n; i++)
			if (!((user[i] >= '0' && user[i] <= '9') ||
			      (user[i] >= 'a' && user[i] <= 'z') ||
			      (user[i] >= 'A' && user[i] <= 'Z') ||
			      strchr("._-", user[i])))
				return err_set(PB_EINVAL, "bad user to act as");
	}
	free(gl->sudo);
	gl->sudo = user ? xstrdup(user) : NULL;
	return 0;
}

struct mr_walk {
	struct forge_mr_cursor *cursor;
	forge_mr_fn fn;
	void *arg;
	int64_t newest;
};

static int mr_item(struct gl_call *c, const struct json_value *item, void *arg)
{
	struct mr_walk *w = arg;
	struct forge_mr mr;
	int rc;

	if ((rc = convert(c, item, "merge request", mr_from_json, &mr)) < 0)
		return rc;
	if (mr.updated_ms > w->newest)
		w->newest = mr.updated_ms;
	/* The same (iid, updated_at) twice: an overlap or a shifted page. */
	if (forge_mr_cursor_has(w->cursor, mr.iid, mr.updated_ms)) {
		forge_mr_release(&mr);
		return 0;
	}
	rc = w->fn(&mr, w->arg);
	if (rc == 0)
		forge_mr_cursor_add(w->cursor, mr.iid, mr.updated_ms);
	forge_mr_release(&mr);
	return rc;
}

static int gl_list_mrs(struct forge *f, const char *project,
		       struct forge_mr_cursor *cursor,
		       const struct forge_mr_query *q, forge_mr_fn fn,
		       void *arg)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct buf t = BUF_INIT(64);
	struct mr_walk w = { cursor, fn, arg, 0 };
	int64_t overlap = q && q->overlap_ms > 0 ? q->overlap_ms : 0;
	int per_page = q && q->per_page > 0 ? q->per_page : gl->per_page;
	int truncated = 0, rc;

	if ((rc = url_project(&u, gl, project)) < 0)
		goto out;
	if (buf_adds(&u, "/merge_requests") < 0) {
		rc = url_fail();
		goto out;
	}
	/* updated_after is "on or after" (GitLab doc/api/merge_requests.md,
	 * "List project merge requests"): overlap and de-duplicate. */
	if ((rc = url_param(&u, "state", q && q->state ? q->state : "all")) <
		    0 ||
	    (rc = url_param(&u, "order_by", "updated_at")) < 0 ||
	    (rc = url_param(&u, "sort", "asc")) < 0 ||
	    (rc = url_param_int(&u, "per_page", per_page)) < 0)
		goto out;
	if (cursor->watermark_ms > 0) {
		int64_t from = cursor->watermark_ms - overlap;

		if ((rc = forge_time_format(&t, from > 0 ? from : 0)) < 0 ||
		    (rc = url_param(&u, "updated_after", t.data)) < 0)
			goto out;
	}
	rc = paginate(gl, u.data, PB_PAGES_MAX, mr_item, &w, &truncated);
	if (rc)
		goto out;
	if (truncated)
		log_warn("forge: %s: more than %d pages of merge requests; "
			 "the rest comes with the next poll",
			 project, PB_PAGES_MAX);
	if (w.newest > cursor->watermark_ms)
		cursor->watermark_ms = w.newest;
	forge_mr_cursor_prune(cursor, overlap);
out:
	buf_release(&u);
	buf_release(&t);
	return rc;
}

static int gl_get_mr(struct forge_mr *out, struct forge *f, const char *project,
		     int64_t iid)
{
	return get_mr_one(gl_of(f), project, iid, NULL, mr_from_json, out);
}

static int gl_list_versions(struct forge_version_list *out, struct forge *f,
			    const char *project, int64_t iid)
{
	struct list_walk w = LIST_WALK(out, version_from_json, "version");
	int rc = paginate_mr(gl_of(f), project, iid, "/versions", list_item, &w,
			     "versions");

	out->items = w.items;
	out->nr = w.nr;
	if (rc)
		forge_version_list_release(out);
	return rc;
}

static int gl_get_version(struct forge_version *out, struct forge *f,
			  const char *project, int64_t iid, int64_t version_id)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	char suffix[48];
	int rc;

	snprintf(suffix, sizeof(suffix), "/versions/%lld",
		 (long long)version_id);
	if (version_id <= 0) {
		rc = err_set(PB_EINVAL, "bad version id");
		goto out;
	}
	if ((rc = url_mr(&u, gl, project, iid, suffix)) < 0)
		goto out;
	rc = get_one(gl, u.data, version_from_json, out);
	/* GitLab sends every diff of a version at once (lib/api/entities/
	 * merge_request_diff_full.rb: raw_diffs(limits: false)), so a huge
	 * series can outgrow the response cap (http_do()'s PB_ELIMIT): say
	 * which cap. */
	if (rc == PB_ELIMIT)
		rc = err_set(PB_ELIMIT,
			     "diff version %lld of %s!%lld is larger than "
			     "[forge] max_response_size (%zu bytes): GitLab "
			     "sends all of a version's diffs at once; raise "
			     "max_response_size to mail it",
			     (long long)version_id, project, (long long)iid,
			     gl->body_max);
out:
	buf_release(&u);
	return rc;
}

struct note_walk {
	struct list_walk list;
	int64_t stop_before_ms; /* forge_note_query's; 0: none */
	int stopped;
};

static int note_item(struct gl_call *c, const struct json_value *item,
		     void *arg)
{
	struct note_walk *w = arg;
	const struct forge_note *n;
	int64_t ms;
	int rc;

	if ((rc = list_item(c, item, &w->list)) < 0)
		return rc;
	n = (const struct forge_note *)w->list.items + w->list.nr - 1;
	/* A time that does not parse stops nothing: read on. */
	if (w->stop_before_ms && n->updated_at &&
	    !forge_time_parse(&ms, n->updated_at) && ms < w->stop_before_ms) {
		w->stopped = 1;
		return 1; /* stop */
	}
	return 0;
}

static int notes_url(struct buf *u, struct gitlab *gl, const char *project,
		     int64_t iid, const struct forge_note_query *q)
{
	int rc;

	if ((rc = url_mr(u, gl, project, iid, "/notes")) < 0)
		return rc;
	if (q && q->sort && (rc = url_param(u, "sort", q->sort)) < 0)
		return rc;
	if (q && q->order_by &&
	    (rc = url_param(u, "order_by", q->order_by)) < 0)
		return rc;
	return url_param_int(u, "per_page",
			     q && q->per_page > 0 ? q->per_page : gl->per_page);
}

static int gl_list_notes(struct forge_note_list *out, struct forge *f,
			 const char *project, int64_t iid,
			 const struct forge_note_query *q)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct note_walk w = { LIST_WALK(out, note_from_json, "note"), 0, 0 };
	int max_pages = q ? q->max_pages : 0;
	int truncated, rc;

	if (q)
		w.stop_before_ms = q->stop_before_ms;
	if ((rc = notes_url(&u, gl, project, iid, q)) < 0)
		goto out;
	rc = paginate(gl, u.data, max_pages, note_item, &w, &truncated);
	if (rc == 1 && w.stopped)
		rc = 0;
	/* A page limit the caller chose is not an error. */
	if (!rc && truncated && max_pages <= 0)
		rc = err_set(PB_ELIMIT, "more than %d pages of notes",
			     PB_PAGES_MAX);
out:
	out->items = w.list.items;
	out->nr = w.list.nr;
	if (rc)
		forge_note_list_release(out);
	buf_release(&u);
	return rc;
}

static int gl_list_discussions(struct forge_discussion_list *out,
			       struct forge *f, const char *project,
			       int64_t iid)
{
	struct list_walk w = LIST_WALK(out, discussion_from_json, "discussion");
	int rc = paginate_mr(gl_of(f), project, iid, "/discussions", list_item,
			     &w, "discussions");

	out->items = w.items;
	out->nr = w.nr;
	if (rc)
		forge_discussion_list_release(out);
	return rc;
}

/*
 * Markers: finding a note we may already have posted.
 */

/* Our own user id (the token's user), asked once. */
static int self_id(int64_t *out, struct gitlab *gl)
{
	struct gl_call c;
	int rc;

	*out = gl->self_id;
	if (gl->self_id)
		return 0;
	call_init(&c, gl);
	rc = get_as_self(gl, &c, "/user");
	if (!rc && json_get_int(&gl->self_id, c.root, "id") < 0)
		rc = bad_data(&c);
	*out = gl->self_id;
	call_release(&c);
	return rc;
}

struct marker_search {
	struct gitlab *gl;
	const char *key;
	int64_t author_id; /* when not acting via Sudo */
	/* Result: a note of the MR's list, or note idx of a discussion. */
	int found;
	int in_discussion;
	struct forge_note note;
	struct forge_discussion discussion;
	size_t idx;
};

static int marker_search_init(struct marker_search *ms, struct gitlab *gl,
			      const char *key)
{
	int rc;

	memset(ms, 0, sizeof(*ms));
	ms->gl = gl;
	ms->key = key;
	rc = forge_marker_key_check(key);
	if (!rc && !gl->sudo)
		rc = self_id(&ms->author_id, gl);
	return rc;
}

static void marker_search_release(struct marker_search *ms)
{
	forge_note_release(&ms->note);
	forge_discussion_release(&ms->discussion);
	ms->found = 0;
	ms->in_discussion = 0;
}

/* Move the note found into out. */
static void marker_take_note(struct marker_search *ms, struct forge_note *out)
{
	struct forge_note *n =
		ms->in_discussion ? &ms->discussion.notes[ms->idx] : &ms->note;

	*out = *n;
	memset(n, 0, sizeof(*n));
}

/* Ours: carries the marker and was written by the acting user. */
static int note_is_ours(const struct marker_search *ms,
			const struct forge_note *n)
{
	const char *sudo = ms->gl->sudo;
	int64_t id;

	if (!forge_marker_in(n->body, ms->key))
		return 0;
	if (!sudo)
		return n->author.id == ms->author_id;
	if (mem_to_i64(sudo, strlen(sudo), 1, INT64_MAX, &id))
		return n->author.id == id;
	return n->author.username && !strcasecmp(n->author.username, sudo);
}

/* Newest first: the first hit is the one. */
static int marker_note_item(struct gl_call *c, const struct json_value *item,
			    void *arg)
{
	struct marker_search *ms = arg;
	struct forge_note n;
	int rc;

	if ((rc = convert(c, item, "note", note_from_json, &n)) < 0)
		return rc;
	if (!note_is_ours(ms, &n)) {
		forge_note_release(&n);
		return 0;
	}
	ms->note = n;
	ms->found = 1;
	return 1; /* stop */
}

/* Discussions come oldest first: keep the last hit. */
static int marker_discussion_item(struct gl_call *c,
				  const struct json_value *item, void *arg)
{
	struct marker_search *ms = arg;
	struct forge_discussion d;
	size_t i;
	int rc;

	if ((rc = convert(c, item, "discussion", discussion_from_json, &d)) < 0)
		return rc;
	for (i = 0; i < d.nr_notes; i++) {
		if (!note_is_ours(ms, &d.notes[i]))
			continue;
		marker_search_release(ms);
		ms->discussion = d;
		ms->idx = i;
		ms->in_discussion = 1;
		ms->found = 1;
		return 0;
	}
	forge_discussion_release(&d);
	return 0;
}

static int search_mr_notes(struct marker_search *ms, const char *project,
			   int64_t iid)
{
	struct forge_note_query q = { "desc", "created_at", 0, 0, 0 };
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	int truncated, rc;

	q.max_pages = ms->gl->marker_scan_pages;
	if ((rc = notes_url(&u, ms->gl, project, iid, &q)) < 0)
		goto out;
	rc = paginate(ms->gl, u.data, q.max_pages, marker_note_item, ms,
		      &truncated);
	if (rc == 1)
		rc = 0;
out:
	buf_release(&u);
	return rc;
}

static int search_discussions(struct marker_search *ms, const char *project,
			      int64_t iid)
{
	return paginate_mr(ms->gl, project, iid, "/discussions",
			   marker_discussion_item, ms, NULL);
}

static int search_one_discussion(struct marker_search *ms, const char *project,
				 int64_t iid, const char *discussion_id)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct forge_discussion d;
	size_t i;
	int rc;

	if ((rc = url_discussion(&u, ms->gl, project, iid, discussion_id,
				 NULL)) < 0 ||
	    (rc = get_one(ms->gl, u.data, discussion_from_json, &d)) < 0)
		goto out;
	for (i = d.nr_notes; i-- > 0;) {
		if (note_is_ours(ms, &d.notes[i])) {
			ms->discussion = d;
			ms->idx = i;
			ms->in_discussion = 1;
			ms->found = 1;
			goto out;
		}
	}
	forge_discussion_release(&d);
out:
	buf_release(&u);
	return rc;
}

/* Where a note with a marker may be: in one discussion, in any of the
 * MR's discussions, or among its newest notes. */
struct marker_where {
	const char *project;
	int64_t iid;
	const char *discussion_id; /* one discussion; NULL: not one */
	int discussions; /* without discussion_id: all discussions */
};

static int marker_search_run(struct marker_search *ms,
			     const struct marker_where *w)
{
	if (w->discussion_id)
		return search_one_discussion(ms, w->project, w->iid,
					     w->discussion_id);
	if (w->discussions)
		return search_discussions(ms, w->project, w->iid);
	return search_mr_notes(ms, w->project, w->iid);
}

static int gl_find_note_by_marker(struct forge_note *out,
				  char **out_discussion_id, struct forge *f,
				  const char *project, int64_t iid,
				  const char *discussion_id,
				  const char *marker_key)
{
	struct marker_where where = { project, iid, discussion_id,
				      out_discussion_id != NULL };
	struct marker_search ms;
	int rc;

	rc = marker_search_init(&ms, gl_of(f), marker_key);
	if (!rc)
		rc = marker_search_run(&ms, &where);
	if (rc)
		goto out;
	if (!ms.found) {
		rc = err_set(PB_ENOTFOUND, "no note with marker %s",
			     marker_key);
		goto out;
	}
	marker_take_note(&ms, out);
	if (out_discussion_id && ms.discussion.id) {
		*out_discussion_id = ms.discussion.id;
		ms.discussion.id = NULL;
	}
out:
	marker_search_release(&ms);
	return rc;
}

/*
 * Posting exactly once.  A POST that failed in a way that leaves its
 * outcome unknown (timeout or reset after sending, a 5xx) is not sent
 * again blindly: after a pause we look for its marker, and post again only
 * when it is absent: GitLab's REST API takes no idempotency key
 * (docs/DESIGN.md rule 3).
 */
static int post_once(struct gitlab *gl, struct gl_call *c, const char *url,
		     const struct buf *json, const char *key,
		     const struct marker_where *where, struct marker_search *ms)
{
	char first[PB_ERRMSG_MAX];
	unsigned attempt = 0;
	int64_t delay;
	int rc;

	for (;;) {
		rc = call_do(gl, c, HTTP_POST, url, json, GL_ONCE);
		if (rc == 0 || !c->uncertain)
			return rc;
		if (!key)
			return err_prefix(PB_ETEMP, "outcome unknown");
		snprintf(first, sizeof(first), "%s", err_msg());
		if (stopping(gl) || (int)attempt >= gl->max_retries) {
			if (stopping(gl))
				gl->stop_failed = 1;
			return err_set(PB_ETEMP,
				       "outcome unknown, look for "
				       "marker %s before retrying: "
				       "%s%s",
				       key, first,
				       stopping(gl) ? " (stopping)" : "");
		}
		attempt++;
		http_retry_delay(&delay, &gl->backoff, attempt, NULL, NULL, 0,
				 gl_random(gl));
		log_warn("forge: %s; looking for marker %s in %lld ms", first,
			 key, (long long)delay);
		gl->stats.retries++;
		gl->stats.last_delay_ms = delay;
		if (gl_wait(gl, delay))
			return err_set(PB_ETEMP,
				       "outcome unknown, look for "
				       "marker %s before retrying: "
				       "%s (stopping)",
				       key, first);

		gl->stats.marker_scans++;
		marker_search_release(ms);
		rc = marker_search_run(ms, where);
		if (rc == 0 && ms->found) {
			gl->stats.marker_hits++;
			log_notice("forge: %s: found marker %s; not posting "
				   "again",
				   c->where, key);
			return 0;
		}
		if (rc != 0)
			return err_prefix(PB_ETEMP,
					  "outcome unknown (%s); the "
					  "marker search failed",
					  first);
		log_info("forge: %s: marker %s absent; posting again", c->where,
			 key);
	}
}

static int note_body(struct buf *text, const char *body, const char *key)
{
	if (!body || !*body)
		return err_set(PB_EINVAL, "empty note body");
	if (key)
		return forge_body_with_marker(text, body, key);
	if (buf_adds(text, body) < 0)
		return err_set(PB_ELIMIT, "note body exceeds %zu bytes",
			       text->max);
	return 0;
}

/* GitLab answers 202 (and saves nothing) for a body of quick actions. */
static int check_saved(struct gl_call *c)
{
	if (c->resp.status == 202)
		return err_set(PB_EINVAL,
			       "%s: the body held only quick "
			       "actions; no note was saved",
			       c->where);
	return 0;
}

static int position_check(const struct forge_position *p)
{
	if (!p->base_sha || !p->start_sha || !p->head_sha || !*p->base_sha ||
	    !*p->start_sha || !*p->head_sha)
		return err_set(PB_EINVAL, "a diff position needs base, start "
					  "and head SHAs");
	if (!p->old_path || !p->new_path || !*p->old_path || !*p->new_path)
		return err_set(PB_EINVAL, "a diff position needs old_path "
					  "and new_path");
	if (p->old_line < 0 || p->new_line < 0 ||
	    (p->old_line == 0 && p->new_line == 0))
		return err_set(PB_EINVAL, "a diff position needs a line");
	return 0;
}

/* The created note must be a DiffNote that kept its position (doc/api/
 * discussions.md warns that wrong SHAs give a plain note). */
static int check_diff_note(const struct forge_discussion *d)
{
	const struct forge_note *n = d->nr_notes ? &d->notes[0] : NULL;

	if (n && n->type && !strcmp(n->type, "DiffNote") && n->has_position)
		return 0;
	log_warn("forge: discussion %s was created without its diff "
		 "position (type %s)",
		 d->id, n && n->type ? n->type : "null");
	return err_set(PB_EINVAL,
		       "discussion %s was created as %s, not as "
		       "a diff note",
		       d->id, n && n->type ? n->type : "a plain note");
}

/*
 * The write path of every note, posted where the marker search of where
 * would look: to one discussion, as a new discussion, or as a note of
 * the MR.  The body with its marker, the JSON (with a diff position when
 * pos is set), one POST, and after a lost response the marker search
 * (post_once()).  out, a forge_note (a forge_discussion for a new
 * discussion), gets the answer or the note the search found.
 */
static int post_marked(void *out, struct gitlab *gl,
		       const struct marker_where *where, const char *body,
		       const struct forge_position *pos, const char *key)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct buf text = BUF_INIT(PB_NOTE_BODY_MAX);
	struct buf json = BUF_INIT(GL_REQUEST_BODY_MAX);
	int discussion = !where->discussion_id && where->discussions;
	struct marker_search ms;
	struct gl_call c;
	struct jsonw w;
	int rc;

	call_init(&c, gl);
	memset(&ms, 0, sizeof(ms));
	if (where->discussion_id)
		rc = url_discussion(&u, gl, where->project, where->iid,
				    where->discussion_id, "/notes");
	else
		rc = url_mr(&u, gl, where->project, where->iid,
			    discussion ? "/discussions" : "/notes");
	if (rc < 0 || (rc = note_body(&text, body, key)) < 0 ||
	    (pos && (rc = position_check(pos)) < 0))
		goto out;
	if (key && (rc = marker_search_init(&ms, gl, key)) < 0)
		goto out;
	body_begin(&w, &json);
	member_str(&w, "body", text.data, text.len);
	if (pos) {
		/* Lines: added → new only, removed → old only, context →
		 * both (GitLab doc/api/discussions.md, "Create a new thread
		 * in the merge request diff"); forge_position_set_line()
		 * builds them. */
		jsonw_key(&w, "position");
		jsonw_obj_begin(&w);
		member_strz(&w, "position_type", "text");
		member_strz(&w, "base_sha", pos->base_sha);
		member_strz(&w, "start_sha", pos->start_sha);
		member_strz(&w, "head_sha", pos->head_sha);
		member_strz(&w, "old_path", pos->old_path);
		member_strz(&w, "new_path", pos->new_path);
		if (pos->old_line > 0)
			member_int(&w, "old_line", pos->old_line);
		if (pos->new_line > 0)
			member_int(&w, "new_line", pos->new_line);
		jsonw_obj_end(&w);
	}
	if ((rc = body_finish(&w)) < 0 ||
	    (rc = post_once(gl, &c, u.data, &json, key, where, &ms)) < 0)
		goto out;
	if (ms.found && discussion) {
		*(struct forge_discussion *)out = ms.discussion;
		memset(&ms.discussion, 0, sizeof(ms.discussion));
	} else if (ms.found) {
		marker_take_note(&ms, out);
	} else if ((rc = check_saved(&c)) == 0 && (rc = call_json(&c)) == 0) {
		rc = convert(&c, c.root, "response",
			     discussion ? discussion_from_json : note_from_json,
			     out);
	}
out:
	marker_search_release(&ms);
	call_release(&c);
	buf_release(&u);
	buf_release(&text);
	buf_release(&json);
	return rc;
}

static int gl_create_note(struct forge_note *out, struct forge *f,
			  const char *project, int64_t iid, const char *body,
			  const char *marker_key)
{
	struct marker_where where = { project, iid, NULL, 0 };

	return post_marked(out, gl_of(f), &where, body, NULL, marker_key);
}

static int gl_create_discussion(struct forge_discussion *out, struct forge *f,
				const char *project, int64_t iid,
				const char *body,
				const struct forge_position *pos,
				const char *marker_key)
{
	struct marker_where where = { project, iid, NULL, 1 };
	int rc = post_marked(out, gl_of(f), &where, body, pos, marker_key);

	/* Keep out filled: the discussion exists either way. */
	if (!rc && pos)
		rc = check_diff_note(out);
	return rc;
}

static int gl_reply_discussion(struct forge_note *out, struct forge *f,
			       const char *project, int64_t iid,
			       const char *discussion_id, const char *body,
			       const char *marker_key)
{
	struct marker_where where = { project, iid, discussion_id, 0 };

	return post_marked(out, gl_of(f), &where, body, NULL, marker_key);
}

/*
 * A write whose repeat converges (setting a state; an approval, judged
 * by the state afterwards), so retried freely: w's body finished (w
 * NULL: no body), then the request.  c keeps the answer; NULL when the
 * caller needs only the code.
 */
static int write_state(struct gitlab *gl, struct gl_call *c, enum http_method m,
		       const char *url, struct jsonw *w)
{
	struct gl_call own;
	int rc = w ? body_finish(w) : 0;

	if (rc < 0)
		return rc;
	if (c)
		return call_do(gl, c, m, url, w ? w->out : NULL, GL_SAFE);
	call_init(&own, gl);
	rc = call_do(gl, &own, m, url, w ? w->out : NULL, GL_SAFE);
	call_release(&own);
	return rc;
}

static int gl_resolve_discussion(struct forge *f, const char *project,
				 int64_t iid, const char *discussion_id,
				 int resolved)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct buf json = BUF_INIT(64);
	struct jsonw w;
	int rc;

	if ((rc = url_discussion(&u, gl, project, iid, discussion_id, NULL)) ==
	    0) {
		body_begin(&w, &json);
		member_bool(&w, "resolved", resolved);
		/* Setting a state: repeating it converges. */
		rc = write_state(gl, NULL, HTTP_PUT, u.data, &w);
	}
	buf_release(&u);
	buf_release(&json);
	return rc;
}

/*
 * Has the acting user approved?  user_has_approved is relative to the
 * caller (lib/api/entities/merge_request_approvals.rb); approved_by names
 * everyone, for a forge that leaves the former out.  0/1, or an error
 * (with a Sudo refusal classified as by call_do).
 */
static int approved_now(int *out, int *reauth, struct gitlab *gl,
			const char *project, int64_t iid)
{
	struct forge_approvals a;
	int rc;

	*out = 0;
	memset(&a, 0, sizeof(a));
	if ((rc = get_mr_one(gl, project, iid, "/approvals",
			     approvals_from_json, &a)) < 0)
		goto out;
	if (reauth)
		*reauth = a.reauth_required;
	if (a.user_has_approved >= 0) {
		*out = a.user_has_approved;
	} else if (gl->sudo) {
		*out = forge_approvals_by(&a, gl->sudo);
	} else {
		int64_t id;

		rc = self_id(&id, gl);
		if (!rc) {
			char num[32];

			snprintf(num, sizeof(num), "%lld", (long long)id);
			*out = forge_approvals_by(&a, num);
		}
	}
out:
	forge_approvals_release(&a);
	return rc;
}

/* The result for a Sudo refusal, or -1 when the error was not one. */
static int sudo_result(const struct gitlab *gl)
{
	switch (gl->sudo_problem) {
	case FORGE_SUDO_NOT_ADMIN:
	case FORGE_SUDO_NO_SCOPE:
		return FORGE_APPROVE_NO_SUDO;
	case FORGE_SUDO_NO_USER:
		return FORGE_APPROVE_NO_USER;
	case FORGE_SUDO_OK:
		break;
	}
	return -1;
}

/*
 * Approve, judged by the approval state rather than the status code.
 * GitLab has no 304 for a repeat: ApprovalService approves only when
 * can_be_approved_by? (which needs !approved_by?, app/models/concerns/
 * approvable_base.rb) and the endpoint answers `unauthorized! unless
 * success` (lib/api/merge_request_approvals.rb), so a second approval by
 * the same user - a per-patch Acked-by, a retry after a 5xx whose first
 * try landed, a replay - gets the same 401 as a refusal.  The state is
 * read before (an approval that stands is not asked for again) and after
 * a 401 (it stands: ALREADY; it does not: REFUSED).
 */
static int gl_approve(enum forge_approve_result *out, struct forge *f,
		      const char *project, int64_t iid, const char *sha)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct buf json = BUF_INIT(256);
	char why[PB_ERRMSG_MAX];
	struct jsonw w;
	struct gl_call c;
	int rc, r, has = 0, reauth = 0;

	*out = FORGE_APPROVE_DONE;
	call_init(&c, gl);
	if (!sha || !*sha) {
		rc = err_set(PB_EINVAL, "approve needs the head SHA");
		goto out;
	}
	rc = approved_now(&has, &reauth, gl, project, iid);
	if (rc)
		goto sudo;
	if (has) {
		*out = FORGE_APPROVE_ALREADY;
		goto out;
	}
	/* EE's ApprovalService#execute returns first when the project
	 * requires a password and approval_password is not the user's
	 * (ee/app/services/ee/merge_requests/approval_service.rb), a 401
	 * like any refusal: not asked, and not the user's fault. */
	if (reauth)
		goto reauth;
	if ((rc = url_mr(&u, gl, project, iid, "/approve")) < 0)
		goto out;
	body_begin(&w, &json);
	member_strz(&w, "sha", sha);
	/* A retry after a 5xx is safe: the state check below finds an
	 * approval that landed. */
	rc = write_state(gl, &c, HTTP_POST, u.data, &w);
	if (rc == 0)
		goto out;
	/* A Resource lock is a 409 too, and PB_ETEMP (status_error()):
	 * only the other 409, a stale sha (check_sha_param!), means the
	 * MR moved on. */
	if (c.resp.status == 409 && rc != PB_ETEMP) {
		*out = FORGE_APPROVE_SHA_MISMATCH;
		goto out;
	}
	if (c.resp.status == 401 && gl->sudo_problem == FORGE_SUDO_OK &&
	    gl->token_problem == FORGE_TOKEN_OK) {
		snprintf(why, sizeof(why), "%s", err_msg());
		r = approved_now(&has, &reauth, gl, project, iid);
		if (r) {
			rc = err_prefix(r, "after a 401 to approve (%s)", why);
			goto out;
		}
		if (has) {
			log_info("forge: %s: the approval stands already", why);
			*out = FORGE_APPROVE_ALREADY;
			rc = 0;
			goto out;
		}
		if (reauth)
			goto reauth;
		*out = FORGE_APPROVE_REFUSED;
		rc = err_set(PB_EPERM, "%s", why);
		goto out;
	}
sudo:
	if ((r = sudo_result(gl)) >= 0)
		*out = (enum forge_approve_result)r;
	else if (rc == PB_EPERM)
		*out = FORGE_APPROVE_REFUSED;
	goto out;
reauth:
	*out = FORGE_APPROVE_REAUTH;
	rc = err_set(PB_EPERM, "the project requires re-authentication "
			       "(a password) to approve");
out:
	call_release(&c);
	buf_release(&u);
	buf_release(&json);
	return rc;
}

/*
 * Withdraw an approval.  GitLab answers 404 {"message":"404 Not Found"}
 * when there is none to withdraw (RemoveApprovalService returns nil, the
 * endpoint not_found!s), not 304; Sudo's unknown user is a 404 too, told
 * apart by its message, and a missing MR by the state check.
 */
static int gl_unapprove(enum forge_approve_result *out, struct forge *f,
			const char *project, int64_t iid)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	char why[PB_ERRMSG_MAX];
	int rc, r, has = 0;

	*out = FORGE_APPROVE_DONE;
	rc = approved_now(&has, NULL, gl, project, iid);
	if (rc)
		goto sudo;
	if (!has) {
		*out = FORGE_APPROVE_ALREADY;
		goto out;
	}
	if ((rc = url_mr(&u, gl, project, iid, "/unapprove")) < 0)
		goto out;
	rc = write_state(gl, NULL, HTTP_POST, u.data, NULL);
	if (rc != PB_ENOTFOUND || gl->sudo_problem != FORGE_SUDO_OK)
		goto sudo;
	/* Nothing to withdraw (a retry whose first try landed), or the MR
	 * went away: the state says which. */
	snprintf(why, sizeof(why), "%s", err_msg());
	r = approved_now(&has, NULL, gl, project, iid);
	if (r) {
		rc = err_prefix(r, "after a 404 to unapprove (%s)", why);
		goto out;
	}
	if (!has) {
		*out = FORGE_APPROVE_ALREADY;
		rc = 0;
	} else {
		rc = err_set(PB_ERROR, "%s, yet the approval stands", why);
	}
	goto out;
sudo:
	if ((r = sudo_result(gl)) >= 0)
		*out = (enum forge_approve_result)r;
	else if (rc == PB_EPERM)
		*out = FORGE_APPROVE_REFUSED;
out:
	buf_release(&u);
	return rc;
}

static int gl_get_approvals(struct forge_approvals *out, struct forge *f,
			    const char *project, int64_t iid)
{
	return get_mr_one(gl_of(f), project, iid, "/approvals",
			  approvals_from_json, out);
}

/* Grape's CommaSeparatedToArray splits every item at commas, so a label
 * name with a comma would turn into two labels. */
static int labels_check(const struct strlist *l)
{
	size_t i;

	for (i = 0; l && i < l->nr; i++)
		if (!*l->items[i] || strchr(l->items[i], ','))
			return err_set(PB_EINVAL, "label names must be "
						  "non-empty and without "
						  "commas");
	return 0;
}

static void write_labels(struct jsonw *w, const char *key,
			 const struct strlist *l)
{
	size_t i;

	if (!l || !l->nr)
		return;
	jsonw_key(w, key);
	jsonw_arr_begin(w);
	for (i = 0; i < l->nr; i++)
		jsonw_strz(w, l->items[i]);
	jsonw_arr_end(w);
}

static int gl_update_labels(struct forge *f, const char *project, int64_t iid,
			    const struct strlist *add,
			    const struct strlist *remove)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct buf json = BUF_INIT(64 * 1024);
	struct jsonw w;
	int rc;

	if ((rc = labels_check(add)) < 0 || (rc = labels_check(remove)) < 0 ||
	    (rc = url_mr(&u, gl, project, iid, NULL)) < 0)
		goto out;
	/* Arrays, as GitLab's OpenAPI document types them (GitLab takes
	 * comma strings too, validators do not). */
	body_begin(&w, &json);
	write_labels(&w, "add_labels", add);
	write_labels(&w, "remove_labels", remove);
	rc = write_state(gl, NULL, HTTP_PUT, u.data, &w);
out:
	buf_release(&u);
	buf_release(&json);
	return rc;
}

static int email_check(const char *email)
{
	size_t n = email ? strlen(email) : 0;

	if (n == 0 || n > PB_ADDR_MAX || !strchr(email, '@') ||
	    !printable_check(email, n) || strchr(email, ' '))
		return err_set(PB_EINVAL, "bad email address");
	return 0;
}

static int email_eq(const char *a, const char *email)
{
	return a && *a && !strcasecmp(a, email);
}

struct user_walk {
	const char *email;
	struct forge_user found;
	int nr_found;
	/* Users shown without addresses (a non-admin's view): their public
	 * email is read one by one. */
	int64_t candidates[GL_USER_CANDIDATES_MAX];
	int nr_candidates;
	/* Users shown with another primary address (an admin's view): the
	 * search may have matched a secondary one. */
	int64_t secondary[GL_USER_CANDIDATES_MAX];
	int nr_secondary;
};

static int user_item(struct gl_call *c, const struct json_value *item,
		     void *arg)
{
	struct user_walk *w = arg;
	struct forge_user u;
	int rc;

	if ((rc = convert(c, item, "user", user_from_json, &u)) < 0)
		return rc;
	if (email_eq(u.email, w->email) || email_eq(u.public_email, w->email)) {
		if (!w->nr_found++)
			w->found = u;
		else
			forge_user_release(&u);
		return 0;
	}
	/* A non-admin sees no addresses in the list; check one by one. */
	if (!u.email && !u.public_email &&
	    w->nr_candidates < GL_USER_CANDIDATES_MAX)
		w->candidates[w->nr_candidates++] = u.id;
	/* An admin sees the primary address only, though the search also
	 * matches confirmed secondary ones (app/models/user.rb
	 * search_by_email). */
	else if (u.email && w->nr_secondary < GL_USER_CANDIDATES_MAX)
		w->secondary[w->nr_secondary++] = u.id;
	forge_user_release(&u);
	return 0;
}

struct email_walk {
	const char *email;
	int found;
};

/* One of GET /users/:id/emails: {id, email, confirmed_at}. */
static int email_item(struct gl_call *c, const struct json_value *item,
		      void *arg)
{
	struct email_walk *w = arg;
	char *email = NULL, *confirmed = NULL;
	int rc;

	if ((rc = json_expect(item, JSON_OBJECT, "email")) < 0 ||
	    (rc = json_get_str(&email, item, "email")) < 0 ||
	    (rc = json_get_str_opt(&confirmed, item, "confirmed_at")) < 0) {
		free(email);
		return bad_data(c);
	}
	/* An unconfirmed address proves nothing: anyone may add one. */
	if (confirmed && *confirmed && email_eq(email, w->email))
		w->found = 1;
	free(email);
	free(confirmed);
	return 0;
}

/*
 * Is email one of user id's confirmed secondary addresses?  GET
 * /users/:id/emails is for administrators (lib/api/users.rb); a 403 means
 * the token cannot tell, and is no match.
 */
static int secondary_match(int *out, struct gitlab *gl, int64_t id,
			   const char *email)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct email_walk w = { email, 0 };
	int rc;

	*out = 0;
	if (buf_addf(&u, "%s/users/%lld/emails", gl->api, (long long)id) < 0)
		rc = url_fail();
	else
		rc = paginate_all(gl, &u, email_item, &w, NULL);
	if (rc == PB_EPERM) {
		log_info("forge: the token cannot read users' secondary "
			 "emails (not an administrator's)");
		rc = 0;
	}
	*out = w.found;
	buf_release(&u);
	return rc;
}

static int gl_find_user_by_email(struct forge_user *out, struct forge *f,
				 const char *email)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct user_walk w;
	struct forge_user cand;
	int truncated, rc, i;

	memset(&w, 0, sizeof(w));
	w.email = email;
	if ((rc = email_check(email)) < 0)
		goto out;
	/*
	 * search= matches names fuzzily and emails exactly: public ones,
	 * and for an administrator private and confirmed secondary ones
	 * (GitLab doc/api/users.md, "List users"); compare the answers
	 * ourselves.
	 */
	if (buf_adds(&u, gl->api) < 0 || buf_adds(&u, "/users") < 0) {
		rc = url_fail();
		goto out;
	}
	if ((rc = url_param(&u, "search", email)) < 0 ||
	    (rc = url_param_int(&u, "per_page", GL_USER_CANDIDATES_MAX)) < 0)
		goto out;
	rc = paginate(gl, u.data, 1, user_item, &w, &truncated);
	if (rc)
		goto out;
	for (i = 0; !w.nr_found && i < w.nr_secondary; i++) {
		int match;

		if ((rc = secondary_match(&match, gl, w.secondary[i], email)) <
		    0)
			goto out;
		if (!match)
			continue;
		if ((rc = get_user_by_id(&w.found, gl, w.secondary[i])) < 0)
			goto out;
		w.nr_found = 1;
	}
	for (i = 0; !w.nr_found && i < w.nr_candidates; i++) {
		if ((rc = get_user_by_id(&cand, gl, w.candidates[i])) < 0)
			goto out;
		if (email_eq(cand.email, email) ||
		    email_eq(cand.public_email, email)) {
			w.found = cand;
			w.nr_found = 1;
		} else {
			forge_user_release(&cand);
		}
	}
	if (!w.nr_found) {
		rc = err_set(PB_ENOTFOUND, "no forge user with that email");
		goto out;
	}
	if (w.nr_found > 1) {
		rc = err_set(PB_EINVAL, "%d forge users share that email",
			     w.nr_found);
		goto out;
	}
	*out = w.found;
	memset(&w.found, 0, sizeof(w.found));
out:
	forge_user_release(&w.found);
	buf_release(&u);
	return rc;
}

static int gl_get_user(struct forge_user *out, struct forge *f, int64_t id)
{
	if (id <= 0)
		return err_set(PB_EINVAL, "bad user id %lld", (long long)id);
	return get_user_by_id(out, gl_of(f), id);
}

static int project_from_json(void *out, const struct json_value *v)
{
	struct forge_project *p = out;
	int rc;

	if ((rc = json_get_int(&p->id, v, "id")) < 0 ||
	    (rc = json_get_str(&p->path_with_namespace, v,
			       "path_with_namespace")) < 0)
		return rc;
	if (p->id <= 0 || !*p->path_with_namespace)
		return err_set(PB_EINVAL, "a project without id or path");
	return 0;
}

/*
 * GET /projects/:id: an old path answers 301 to the same URL with the id
 * (lib/api/helpers.rb url_with_project_id), which call_do follows for a
 * GET; path_with_namespace is the path now (lib/api/entities/
 * project.rb).
 */
static int gl_get_project(struct forge_project *out, struct forge *f,
			  const char *project)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	int rc;

	if ((rc = url_project(&u, gl, project)) == 0)
		rc = get_one(gl, u.data, project_from_json, out);
	if (rc)
		forge_project_release(out);
	buf_release(&u);
	return rc;
}

/*
 * Who the token is: GET /user (is_admin is shown only when the token acts
 * as an administrator, lib/api/users.rb: UserWithAdmin for
 * can_admin_all_resources?) and GET /personal_access_tokens/self (its
 * scopes; doc/api/personal_access_tokens.md).  Asked as ourselves, never
 * through Sudo.
 */
static int gl_whoami(struct forge_whoami *out, struct forge *f)
{
	struct gitlab *gl = gl_of(f);
	struct gl_call c;
	int rc, b;

	call_init(&c, gl);
	if ((rc = get_as_self(gl, &c, "/user")) < 0 ||
	    (rc = convert(&c, c.root, "response", user_from_json, &out->user)) <
		    0)
		goto out;
	out->admin = 0;
	if (json_kind_of(json_member(c.root, "is_admin")) == JSON_BOOL &&
	    !json_get_bool(&b, c.root, "is_admin"))
		out->admin = b;
	rc = get_as_self(gl, &c, "/personal_access_tokens/self");
	if (rc == PB_ENOTFOUND || rc == PB_EPERM) {
		/* An OAuth token, or a GitLab older than 15.5: not known. */
		log_info("forge: the token's own record cannot be read: %s",
			 err_msg());
		rc = 0;
		goto out;
	}
	if (rc < 0)
		goto out;
	if ((rc = strings_from_json(&out->scopes, c.root, "scopes")) < 0 ||
	    (rc = json_get_str_opt(&out->token_name, c.root, "name")) < 0 ||
	    (rc = json_get_str_opt(&out->expires_at, c.root, "expires_at")) <
		    0 ||
	    (rc = json_get_bool_opt(&b, c.root, "active")) < 0) {
		rc = bad_data(&c);
		goto out;
	}
	out->active = b;
	out->token_known = 1;
out:
	call_release(&c);
	return rc;
}

/*
 * The host of GitLab's private commit emails, "ID-USERNAME@HOST"
 * (lib/gitlab/private_commit_email.rb): the application setting
 * commit_email_hostname, "users.noreply." and the instance's host unless
 * an administrator changed it (app/models/
 * application_setting_implementation.rb).  GET /application/settings is
 * for administrators only (lib/api/settings.rb, doc/api/settings.md).
 * Asked as ourselves, never through Sudo.
 */
static int gl_commit_email_host(char **out, struct forge *f)
{
	struct gitlab *gl = gl_of(f);
	struct gl_call c;
	int rc;

	call_init(&c, gl);
	if ((rc = get_as_self(gl, &c, "/application/settings")) < 0)
		goto out;
	if (json_get_str_opt(out, c.root, "commit_email_hostname") < 0) {
		rc = bad_data(&c);
		goto out;
	}
	if (!*out || !**out || strchr(*out, '@') || strchr(*out, '>') ||
	    strchr(*out, ' ')) {
		free(*out);
		*out = NULL;
		rc = err_set(PB_ENOTFOUND, "no usable commit_email_hostname");
	}
out:
	call_release(&c);
	return rc;
}

static int hook_from_json(void *out, const struct json_value *v)
{
	struct forge_hook *h = out;
	int present;

	memset(h, 0, sizeof(*h));
	if (json_get_int_opt(&h->id, &present, v, "id") < 0 ||
	    json_get_str_opt(&h->url, v, "url") < 0 ||
	    json_get_str_opt(&h->alert_status, v, "alert_status") < 0 ||
	    json_get_str_opt(&h->disabled_until, v, "disabled_until") < 0 ||
	    json_get_bool_opt(&h->merge_requests_events, v,
			      "merge_requests_events") < 0 ||
	    json_get_bool_opt(&h->note_events, v, "note_events") < 0) {
		free(h->url);
		free(h->alert_status);
		free(h->disabled_until);
		memset(h, 0, sizeof(*h));
		return PB_EINVAL;
	}
	return 0;
}

/* GET /projects/:id/hooks (lib/api/project_hooks.rb; Maintainer). */
static int gl_list_hooks(struct forge_hook_list *out, struct forge *f,
			 const char *project)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct list_walk w = LIST_WALK(out, hook_from_json, "hook");
	int rc;

	if ((rc = url_project(&u, gl, project)) < 0)
		goto out;
	if (buf_adds(&u, "/hooks") < 0) {
		rc = url_fail();
		goto out;
	}
	rc = paginate_all(gl, &u, list_item, &w, "webhooks");
out:
	out->items = w.items;
	out->nr = w.nr;
	if (rc)
		forge_hook_list_release(out);
	buf_release(&u);
	return rc;
}

static enum forge_sudo_problem gl_sudo_problem(const struct forge *f)
{
	return ((const struct gitlab *)f)->sudo_problem;
}

static enum forge_token_problem gl_token_problem(const struct forge *f)
{
	return ((const struct gitlab *)f)->token_problem;
}

static const struct forge_ops gitlab_ops = {
	.name = "gitlab",
	.free = gl_free,
	.act_as = gl_act_as,
	.list_mrs = gl_list_mrs,
	.get_mr = gl_get_mr,
	.list_versions = gl_list_versions,
	.get_version = gl_get_version,
	.list_notes = gl_list_notes,
	.create_note = gl_create_note,
	.list_discussions = gl_list_discussions,
	.create_discussion = gl_create_discussion,
	.reply_discussion = gl_reply_discussion,
	.resolve_discussion = gl_resolve_discussion,
	.find_note_by_marker = gl_find_note_by_marker,
	.approve = gl_approve,
	.unapprove = gl_unapprove,
	.get_approvals = gl_get_approvals,
	.update_labels = gl_update_labels,
	.find_user_by_email = gl_find_user_by_email,
	.get_user = gl_get_user,
	.whoami = gl_whoami,
	.get_project = gl_get_project,
	.commit_email_host = gl_commit_email_host,
	.list_hooks = gl_list_hooks,
	.sudo_problem = gl_sudo_problem,
	.token_problem = gl_token_problem,
	.pause = gl_pause,
};

/* "https://host:port/prefix" → "https://host:port" */
static char *origin_of(const char *url)
{
	const char *p = strstr(url, "://");

	if (!p)
		return NULL;
	p += 3;
	return xstrndup(url, (size_t)(p - url) + strcspn(p, "/?#"));
}

int forge_gitlab_new(struct forge **out, const struct forge_gitlab_opts *opts)
{
	struct http_opts ho;
	struct gitlab *gl;
	size_t n;
	int rc;

	*out = NULL;
	if (!opts->base_url || !*opts->base_url)
		return err_set(PB_EINVAL, "no GitLab URL");
	if (!opts->token || !*opts->token)
		return err_set(PB_EINVAL, "no GitLab token");

	gl = xcalloc(1, sizeof(*gl));
	gl->base.ops = &gitlab_ops;
	n = strlen(opts->base_url);
	while (n > 0 && opts->base_url[n - 1] == '/')
		n--;
	if (n >= 7 && !strncmp(opts->base_url + n - 7, "/api/v4", 7))
		gl->api = xstrndup(opts->base_url, n);
	else
		gl->api = xasprintf("%.*s/api/v4", (int)n, opts->base_url);
	gl->origin = origin_of(gl->api);
	if (!gl->origin || !http_same_origin(gl->api, gl->api)) {
		rc = err_set(PB_EINVAL, "GitLab URL must be http(s)://host…");
		goto fail;
	}

	memset(&ho, 0, sizeof(ho));
	ho.token = opts->token;
	ho.ca_file = opts->ca_file;
	ho.connect_timeout_ms = opts->connect_timeout_ms;
	ho.timeout_ms = opts->timeout_ms;
	ho.stop = opts->stop;
	ho.stop_grace_ms = opts->stop_grace_ms;
	rc = http_client_new(&gl->http, &ho);
	if (rc < 0)
		goto fail;

	gl->max_retries = opts->max_retries > 0 ? opts->max_retries : 0;
	gl->backoff.base_ms = opts->retry_base_ms > 0 ? opts->retry_base_ms :
							500;
	gl->backoff.max_ms = opts->retry_max_ms > 0 ? opts->retry_max_ms :
						      60000;
	gl->body_max = opts->body_max > 0 ? opts->body_max :
					    PB_HTTP_BODY_MAX_DEFAULT;
	gl->marker_scan_pages =
		opts->marker_scan_pages > 0 ? opts->marker_scan_pages : 2;
	gl->per_page = opts->per_page > 0 && opts->per_page <= 100 ?
			       opts->per_page :
			       100;
	gl->now_ms = opts->now_ms ? opts->now_ms : real_now_ms;
	gl->sleep_ms = opts->sleep_ms;
	gl->stop = opts->stop;
	gl->random = opts->random;
	gl->hook_arg = opts->hook_arg;
	gl->rng = ((uint64_t)real_now_ms(NULL) * 2654435761u) ^
		  ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
	if (!gl->rng)
		gl->rng = 1;
	*out = &gl->base;
	return 0;
fail:
	gl_free(&gl->base);
	return rc;
}

void forge_gitlab_stats(struct forge_gitlab_stats *out, const struct forge *f)
{
	BUG_ON(f->ops != &gitlab_ops);
	*out = ((const struct gitlab *)f)->stats;
}
