#include "forge/gitlab_int.h"

#include "core/metrics.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/sdnotify.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GL_ERRTEXT_MAX 512 /* GitLab's error text in messages */
#define GL_REDIRECTS_MAX 5
#define GL_USERNAME_MAX 255
#define GL_DISCUSSION_ID_MAX 64

static const struct forge_ops gitlab_ops;

struct gitlab *gl_of(struct forge *f)
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

int gl_stopping(const struct gitlab *gl)
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
int gl_wait(struct gitlab *gl, int64_t ms)
{
	int64_t until = monotonic_ms() + ms, left;
	struct timespec ts;

	if (gl->sleep_ms) {
		gl->sleep_ms(gl->hook_arg, ms);
	} else {
		while (!gl_stopping(gl) &&
		       (left = until - monotonic_ms()) > 0) {
			if (left > PB_FORGE_WAIT_SLICE_MS)
				left = PB_FORGE_WAIT_SLICE_MS;
			ts.tv_sec = 0;
			ts.tv_nsec = (long)left * 1000000L;
			nanosleep(&ts, NULL);
		}
	}
	return gl_stopping(gl) ? stop_give_up(gl) : 0;
}

uint32_t gl_random(struct gitlab *gl)
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

void gl_call_init(struct gl_call *c, const struct gitlab *gl)
{
	memset(c, 0, sizeof(*c));
	http_response_init(&c->resp, gl->body_max);
}

void gl_call_release(struct gl_call *c)
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
int gl_call_do(struct gitlab *gl, struct gl_call *c, enum http_method m,
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
	if (!gl_stopping(gl)) {
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

		if (gl_stopping(gl)) {
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
int gl_bad_data(struct gl_call *c)
{
	char ex[PB_LOG_QUOTE_MAX];

	printable_copy(ex, sizeof(ex), c->resp.body.data, c->resp.body.len);
	log_warn("forge: %s %s: unusable response (%s); body: \"%s\"",
		 http_method_name(c->method), c->where, err_msg(), ex);
	return err_prefix(PB_EINVAL, "%s %s: unusable response",
			  http_method_name(c->method), c->where);
}

int gl_call_json(struct gl_call *c)
{
	int rc;

	json_doc_free(c->doc);
	c->doc = NULL;
	c->root = NULL;
	rc = json_parse(&c->doc, c->resp.body.data, c->resp.body.len,
			PB_JSON_DEPTH_MAX);
	if (rc < 0)
		return gl_bad_data(c);
	c->root = json_doc_root(c->doc);
	return 0;
}

/* GET url (retried) and parse it; root must be an object. */
int gl_call_get_object(struct gitlab *gl, struct gl_call *c, const char *url)
{
	int rc = gl_call_do(gl, c, HTTP_GET, url, NULL, GL_SAFE);

	if (!rc)
		rc = gl_call_json(c);
	if (!rc && json_expect(c->root, JSON_OBJECT, "response") < 0)
		rc = gl_bad_data(c);
	return rc;
}

/*
 * URLs.
 */

int gl_url_fail(void)
{
	return err_set(PB_ELIMIT, "URL longer than %d bytes", PB_HTTP_URL_MAX);
}

/*
 * A pinned path goes out as its id: after a rename or a move, GitLab
 * redirects GETs on the old path but answers every write on it with 405
 * "Non GET methods are not allowed for moved projects" (lib/api/helpers.rb
 * find_project!, project_moved?), and the id never changes.
 */
int gl_url_project(struct buf *u, struct gitlab *gl, const char *project)
{
	char id[24];

	if (!project || !*project)
		return err_set(PB_EINVAL, "no project given");
	project = forge_project_ref(&gl->base, project, id, sizeof(id));
	if (buf_adds(u, gl->api) < 0 || buf_adds(u, "/projects/") < 0 ||
	    http_escape(u, project) < 0)
		return gl_url_fail();
	return 0;
}

int gl_url_mr(struct buf *u, struct gitlab *gl, const char *project,
	      int64_t iid, const char *suffix)
{
	int rc;

	if (iid <= 0)
		return err_set(PB_EINVAL, "bad merge request iid %lld",
			       (long long)iid);
	rc = gl_url_project(u, gl, project);
	if (rc < 0)
		return rc;
	if (buf_addf(u, "/merge_requests/%lld%s", (long long)iid,
		     suffix ? suffix : "") < 0)
		return gl_url_fail();
	return 0;
}

/* Append "?name=value" or "&name=value", value percent-encoded. */
int gl_url_param(struct buf *u, const char *name, const char *value)
{
	if (buf_addch(u, strchr(u->data, '?') ? '&' : '?') < 0 ||
	    buf_adds(u, name) < 0 || buf_addch(u, '=') < 0 ||
	    http_escape(u, value) < 0)
		return gl_url_fail();
	return 0;
}

int gl_url_param_int(struct buf *u, const char *name, int64_t v)
{
	char num[32];

	snprintf(num, sizeof(num), "%lld", (long long)v);
	return gl_url_param(u, name, num);
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
int gl_url_discussion(struct buf *u, struct gitlab *gl, const char *project,
		      int64_t iid, const char *id, const char *suffix)
{
	int rc;

	if ((rc = discussion_id_check(id)) < 0 ||
	    (rc = gl_url_mr(u, gl, project, iid, "/discussions/")) < 0)
		return rc;
	if (buf_adds(u, id) < 0 || (suffix && buf_adds(u, suffix) < 0))
		return gl_url_fail();
	return 0;
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

/*
 * Request bodies: one JSON object, written with util/jsonw.
 */

void gl_body_begin(struct jsonw *w, struct buf *out)
{
	jsonw_init(w, out, 0);
	jsonw_obj_begin(w);
}

int gl_body_finish(struct jsonw *w)
{
	int rc;

	jsonw_obj_end(w);
	rc = jsonw_finish(w);
	if (rc == PB_ELIMIT)
		return err_set(rc, "request body exceeds %zu bytes",
			       w->out->max);
	return rc;
}

void gl_member_str(struct jsonw *w, const char *key, const char *s, size_t len)
{
	jsonw_key(w, key);
	jsonw_str(w, s, len);
}

void gl_member_strz(struct jsonw *w, const char *key, const char *s)
{
	jsonw_key(w, key);
	jsonw_strz(w, s);
}

void gl_member_int(struct jsonw *w, const char *key, int64_t v)
{
	jsonw_key(w, key);
	jsonw_int(w, v);
}

void gl_member_bool(struct jsonw *w, const char *key, int v)
{
	jsonw_key(w, key);
	jsonw_bool(w, v);
}

/*
 * A write whose repeat converges (setting a state; an approval, judged
 * by the state afterwards), so retried freely: w's body finished (w
 * NULL: no body), then the request.  c keeps the answer; NULL when the
 * caller needs only the code.
 */
int gl_write_state(struct gitlab *gl, struct gl_call *c, enum http_method m,
		   const char *url, struct jsonw *w)
{
	struct gl_call own;
	int rc = w ? gl_body_finish(w) : 0;

	if (rc < 0)
		return rc;
	if (c)
		return gl_call_do(gl, c, m, url, w ? w->out : NULL, GL_SAFE);
	gl_call_init(&own, gl);
	rc = gl_call_do(gl, &own, m, url, w ? w->out : NULL, GL_SAFE);
	gl_call_release(&own);
	return rc;
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
	.create_mr = gl_create_mr,
	.find_user_by_email = gl_find_user_by_email,
	.get_user = gl_get_user,
	.whoami = gl_whoami,
	.get_project = gl_get_project,
	.commit_email_host = gl_commit_email_host,
	.list_hooks = gl_list_hooks,
	.list_pipelines = gl_list_pipelines,
	.list_jobs = gl_list_jobs,
	.job_trace = gl_job_trace,
	.commit_signature = gl_commit_signature,
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
