#include "forge/webhook.h"

#include "forge/httpd.h"
#include "forge/json.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/hashmap.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define WH_PEER_MAX 64
#define WH_DEDUPE_MAX (1024 * 1024)

/*
 * Delivery keys seen recently: a fixed table of entries on a recency list
 * (newest first) and in a hash map sized for all of them.  Only requests
 * that carried the right token reach it, so a plain FNV-1a hash is
 * enough.
 */
#define LRU_NIL UINT32_MAX
/* "i:" (Idempotency-Key) or "e:" (event UUID), the key, NUL */
#define LRU_KEY_MAX (WEBHOOK_KEY_MAX + 3)

struct lru_entry {
	struct hashmap_entry ent;
	char key[LRU_KEY_MAX];
	uint32_t newer, older; /* recency list */
};

struct lru {
	struct lru_entry *e;
	struct hashmap map;
	uint32_t cap, used;
	uint32_t newest, oldest;
};

struct webhook {
	struct httpd *httpd;
	char *path;
	size_t max_request;
	unsigned timeout_s;
	/* The secret, zero-padded, so every compare reads the same bytes. */
	unsigned char secret[WEBHOOK_SECRET_MAX];
	size_t secret_len;
	int (*on_event)(const struct webhook_event *ev, void *arg);
	void *arg;

	/* Everything below is guarded by lock. */
	pthread_mutex_t lock;
	pthread_cond_t drained; /* signalled when inflight drops to 0 */
	int stopping;
	struct lru seen;
	struct webhook_stats stats;
};

/* One request, from its headers to its completion. */
struct wh_req {
	struct buf body;
	char peer[WH_PEER_MAX];
	char event[WEBHOOK_NAME_MAX + 1]; /* X-Gitlab-Event, printable */
	char key[LRU_KEY_MAX]; /* "i:…"/"e:…", "" when none */
	int answered; /* a response was queued */
	/* An authenticated body over the cap: read and thrown away, then
	 * answered 200 (see on_oversized()). */
	int discarding;
	uint64_t discarded;
};

/*
 * Constant-time comparison.
 */

/* a and b are WEBHOOK_SECRET_MAX bytes, zero-padded past their lengths. */
static int ct_equal(const unsigned char *a, size_t alen, const unsigned char *b,
		    size_t blen)
{
	volatile unsigned char d = 0;
	size_t i;

	for (i = 0; i < WEBHOOK_SECRET_MAX; i++)
		d |= a[i] ^ b[i];
	/* The lengths are compared without a branch on the bytes above;
	 * anything past the padded size never matches. */
	return (d == 0) & (alen == blen) & (alen <= WEBHOOK_SECRET_MAX);
}

/* Copy s into a padded buffer; *len is WEBHOOK_SECRET_MAX + 1 (never a
 * match) when s is longer than the buffer. */
static void ct_pad(unsigned char *dst, size_t *len, const char *s)
{
	size_t n = strnlen(s, WEBHOOK_SECRET_MAX + 1);

	memset(dst, 0, WEBHOOK_SECRET_MAX);
	memcpy(dst, s, n > WEBHOOK_SECRET_MAX ? WEBHOOK_SECRET_MAX : n);
	*len = n;
}

int webhook_secret_equal(const char *a, const char *b)
{
	unsigned char pa[WEBHOOK_SECRET_MAX], pb[WEBHOOK_SECRET_MAX];
	size_t alen, blen;
	int eq;

	ct_pad(pa, &alen, a);
	ct_pad(pb, &blen, b);
	eq = ct_equal(pa, alen, pb, blen);
	explicit_bzero(pa, sizeof(pa));
	explicit_bzero(pb, sizeof(pb));
	return eq;
}

/*
 * The de-duplication table.
 */

static void lru_init(struct lru *l, size_t cap)
{
	l->e = xcalloc(cap, sizeof(*l->e));
	/* sized for every entry: it never grows while serving */
	hashmap_init(&l->map, cap);
	l->cap = (uint32_t)cap;
	l->used = 0;
	l->newest = l->oldest = LRU_NIL;
}

static void lru_release(struct lru *l)
{
	free(l->e);
	hashmap_release(&l->map);
	memset(l, 0, sizeof(*l));
}

static void lru_unlink(struct lru *l, uint32_t i)
{
	struct lru_entry *e = &l->e[i];

	if (e->newer != LRU_NIL)
		l->e[e->newer].older = e->older;
	else
		l->newest = e->older;
	if (e->older != LRU_NIL)
		l->e[e->older].newer = e->newer;
	else
		l->oldest = e->newer;
}

static void lru_push_newest(struct lru *l, uint32_t i)
{
	struct lru_entry *e = &l->e[i];

	e->newer = LRU_NIL;
	e->older = l->newest;
	if (l->newest != LRU_NIL)
		l->e[l->newest].newer = i;
	l->newest = i;
	if (l->oldest == LRU_NIL)
		l->oldest = i;
}

static uint32_t lru_find(struct lru *l, const char *key)
{
	struct hashmap_entry *h;

	for (h = hashmap_first(&l->map, hash_fnv1a_str(key)); h;
	     h = hashmap_next(h)) {
		struct lru_entry *e = CONTAINER_OF(h, struct lru_entry, ent);

		if (!strcmp(e->key, key))
			return (uint32_t)(e - l->e);
	}
	return LRU_NIL;
}

static void lru_touch(struct lru *l, uint32_t i)
{
	lru_unlink(l, i);
	lru_push_newest(l, i);
}

static void lru_add(struct lru *l, const char *key)
{
	struct lru_entry *e;
	uint32_t i;

	if (l->used < l->cap) {
		i = l->used++;
	} else {
		/* Evict the oldest: off the recency list and the map. */
		i = l->oldest;
		lru_unlink(l, i);
		hashmap_remove(&l->map, &l->e[i].ent);
	}
	e = &l->e[i];
	snprintf(e->key, sizeof(e->key), "%s", key);
	hashmap_add(&l->map, &e->ent, hash_fnv1a_str(e->key));
	lru_push_newest(l, i);
}

/*
 * Payload parsing.
 */

static const char *const action_names[] = {
	[WEBHOOK_ACTION_OTHER] = "other",
	[WEBHOOK_ACTION_OPEN] = "open",
	[WEBHOOK_ACTION_CLOSE] = "close",
	[WEBHOOK_ACTION_REOPEN] = "reopen",
	[WEBHOOK_ACTION_UPDATE] = "update",
	[WEBHOOK_ACTION_MERGE] = "merge",
	[WEBHOOK_ACTION_APPROVED] = "approved",
	[WEBHOOK_ACTION_UNAPPROVED] = "unapproved",
	[WEBHOOK_ACTION_APPROVAL] = "approval",
	[WEBHOOK_ACTION_UNAPPROVAL] = "unapproval",
	[WEBHOOK_ACTION_CREATE] = "create",
};

#define NR_ACTIONS (sizeof(action_names) / sizeof(action_names[0]))

const char *webhook_action_name(enum webhook_action a)
{
	if ((unsigned)a >= NR_ACTIONS)
		return "other";
	return action_names[a];
}

static enum webhook_action action_from_name(const char *s)
{
	size_t i;

	for (i = 1; i < NR_ACTIONS; i++)
		if (!strcmp(s, action_names[i]))
			return (enum webhook_action)i;
	return WEBHOOK_ACTION_OTHER;
}

static enum webhook_kind kind_from_header(const char *event)
{
	if (!event)
		return WEBHOOK_IGNORED;
	if (!strcmp(event, "Merge Request Hook"))
		return WEBHOOK_MR;
	if (!strcmp(event, "Note Hook"))
		return WEBHOOK_NOTE;
	if (!strcmp(event, "Pipeline Hook"))
		return WEBHOOK_PIPELINE;
	return WEBHOOK_IGNORED;
}

/*
 * Copy the string member key of obj into dst (size bytes).  Absent or
 * null: "" (an error when required).  Too long, holding anything but
 * printable ASCII, or not a string: PB_EINVAL.
 */
static int copy_str(char *dst, size_t size, const struct json_value *obj,
		    const char *key, int required)
{
	const struct json_value *v = json_member(obj, key);
	const char *s;
	size_t len;
	int rc;

	dst[0] = '\0';
	if (!v) {
		if (required)
			return err_set(PB_EINVAL, "field '%s' missing", key);
		return 0;
	}
	rc = json_value_strref(&s, &len, v, key);
	if (rc)
		return rc;
	if (len >= size)
		return err_set(PB_EINVAL, "field '%s': longer than %zu bytes",
			       key, size - 1);
	if (!printable_check(s, len))
		return err_set(PB_EINVAL, "field '%s': not printable ASCII",
			       key);
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

static int is_sha(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return s[n] == '\0' && (n == 40 || n == 64);
}

/* project.path_with_namespace and project.id */
static int parse_project(struct webhook_event *out,
			 const struct json_value *root)
{
	const struct json_value *project;
	int rc;

	rc = json_get_obj(&project, root, "project");
	if (rc)
		return rc;
	rc = copy_str(out->project, sizeof(out->project), project,
		      "path_with_namespace", 1);
	if (!rc && !out->project[0])
		rc = err_set(PB_EINVAL, "field 'path_with_namespace': empty");
	if (!rc)
		rc = json_get_int(&out->project_id, project, "id");
	if (rc)
		return err_prefix(rc, "project");
	return 0;
}

/* The MR's iid (required) and last_commit.id (optional), from mr. */
static int parse_mr_common(struct webhook_event *out,
			   const struct json_value *mr, const char *what)
{
	const struct json_value *lc;
	int rc;

	rc = json_get_int(&out->iid, mr, "iid");
	if (!rc && out->iid < 1)
		rc = err_set(PB_EINVAL, "field 'iid': %lld is not positive",
			     (long long)out->iid);
	if (!rc)
		rc = json_get_obj_opt(&lc, mr, "last_commit");
	if (!rc && lc) {
		rc = copy_str(out->last_commit, sizeof(out->last_commit), lc,
			      "id", 0);
		if (!rc && out->last_commit[0] && !is_sha(out->last_commit))
			rc = err_set(PB_EINVAL, "field 'last_commit.id': "
						"not a commit SHA");
	}
	if (rc)
		return err_prefix(rc, "%s", what);
	return 0;
}

static int parse_mr(struct webhook_event *out, const struct json_value *oa)
{
	const struct json_value *oldrev;
	const char *s;
	size_t len;
	int rc;

	rc = parse_mr_common(out, oa, "object_attributes");
	if (rc)
		return rc;
	rc = copy_str(out->action_name, sizeof(out->action_name), oa, "action",
		      0);
	/* oldrev comes only when code changed (a push): the cue for a new
	 * revision.  It must be a string when it is there. */
	oldrev = json_member(oa, "oldrev");
	if (!rc && oldrev) {
		rc = json_value_strref(&s, &len, oldrev, "oldrev");
		out->code_changed = 1;
	}
	if (rc)
		return err_prefix(rc, "object_attributes");
	out->action = action_from_name(out->action_name);
	return 0;
}

/*
 * 1: a pipeline of a merge request, 0: of a branch or a tag, or an error
 * (doc/user/project/integrations/webhook_events.md "Pipeline events":
 * object_attributes id, sha, status; merge_request with its iid, or
 * null; app/models/ci/pipeline.rb#merge_request_hook_attrs... through
 * lib/gitlab/data_builder/pipeline.rb).
 */
static int parse_pipeline(struct webhook_event *out,
			  const struct json_value *root,
			  const struct json_value *oa)
{
	const struct json_value *mr;
	int rc;

	rc = json_get_int(&out->pipeline_id, oa, "id");
	if (!rc)
		rc = copy_str(out->pipeline_status,
			      sizeof(out->pipeline_status), oa, "status", 1);
	if (!rc)
		rc = copy_str(out->last_commit, sizeof(out->last_commit), oa,
			      "sha", 0);
	if (!rc && out->last_commit[0] && !is_sha(out->last_commit))
		rc = err_set(PB_EINVAL, "field 'sha': not a commit SHA");
	if (rc)
		return err_prefix(rc, "object_attributes");
	rc = json_get_obj_opt(&mr, root, "merge_request");
	if (rc || !mr)
		return rc;
	rc = json_get_int(&out->iid, mr, "iid");
	if (!rc && out->iid < 1)
		rc = err_set(PB_EINVAL, "field 'iid': %lld is not positive",
			     (long long)out->iid);
	if (rc)
		return err_prefix(rc, "merge_request");
	return 1;
}

/* 1: a note on a merge request, 0: on something else, or an error. */
static int parse_note(struct webhook_event *out, const struct json_value *root,
		      const struct json_value *oa)
{
	const struct json_value *mr;
	int rc;

	rc = json_get_int(&out->note_id, oa, "id");
	if (!rc)
		rc = copy_str(out->noteable_type, sizeof(out->noteable_type),
			      oa, "noteable_type", 1);
	if (rc)
		return err_prefix(rc, "object_attributes");
	/* Issues, commits and snippets have notes too; not ours. */
	if (strcmp(out->noteable_type, "MergeRequest"))
		return 0;
	rc = copy_str(out->action_name, sizeof(out->action_name), oa, "action",
		      0);
	if (!rc)
		rc = copy_str(out->discussion_id, sizeof(out->discussion_id),
			      oa, "discussion_id", 0);
	if (!rc)
		rc = copy_str(out->note_type, sizeof(out->note_type), oa,
			      "type", 0);
	if (!rc)
		rc = json_get_bool_opt(&out->system_note, oa, "system");
	if (rc)
		return err_prefix(rc, "object_attributes");
	out->action = action_from_name(out->action_name);
	rc = json_get_obj(&mr, root, "merge_request");
	if (!rc)
		rc = parse_mr_common(out, mr, "merge_request");
	return rc ? rc : 1;
}

int webhook_parse(struct webhook_event *out, const char *event_header,
		  const char *body, size_t len)
{
	enum webhook_kind kind = kind_from_header(event_header);
	const struct json_value *root, *oa;
	struct json_doc *doc = NULL;
	char object_kind[WEBHOOK_NAME_MAX + 1];
	const char *want;
	int rc;

	memset(out, 0, sizeof(*out));
	if (kind == WEBHOOK_IGNORED)
		return 0;
	rc = json_parse(&doc, body, len, PB_JSON_DEPTH_MAX);
	if (rc)
		goto out;
	root = json_doc_root(doc);
	rc = json_expect(root, JSON_OBJECT, "payload");
	if (rc)
		goto out;
	rc = copy_str(object_kind, sizeof(object_kind), root, "object_kind", 1);
	if (rc)
		goto out;
	want = kind == WEBHOOK_MR	? "merge_request" :
	       kind == WEBHOOK_PIPELINE ? "pipeline" :
					  "note";
	if (strcmp(object_kind, want)) {
		rc = err_set(PB_EINVAL,
			     "object_kind \"%s\" does not match \"%s\"",
			     object_kind, event_header);
		goto out;
	}
	rc = parse_project(out, root);
	if (rc)
		goto out;
	rc = json_get_obj(&oa, root, "object_attributes");
	if (rc)
		goto out;
	if (kind == WEBHOOK_MR) {
		rc = parse_mr(out, oa);
	} else if (kind == WEBHOOK_PIPELINE) {
		rc = parse_pipeline(out, root, oa);
		if (rc == 0)
			kind = WEBHOOK_IGNORED;
		if (rc > 0)
			rc = 0;
	} else {
		rc = parse_note(out, root, oa);
		if (rc == 0)
			kind = WEBHOOK_IGNORED;
		if (rc > 0)
			rc = 0;
	}
	if (!rc)
		out->kind = kind;
out:
	json_doc_free(doc);
	if (rc) {
		memset(out, 0, sizeof(*out));
		return err_prefix(rc, "%s payload", event_header);
	}
	return 0;
}

/*
 * The server's side of a delivery (httpd.h carries the HTTP).
 */

/*
 * Queue a short text/plain answer.  close: the connection ends after it
 * (HTTPD_CLOSE: "Connection: close").
 */
static int answer(struct wh_req *r, struct httpd_req *req, unsigned status,
		  const char *text, int close)
{
	r->answered = 1;
	return httpd_answer(req, status, "text/plain; charset=utf-8", text,
			    strlen(text),
			    status == HTTPD_METHOD_NOT_ALLOWED ? "POST" : NULL,
			    HTTPD_STATIC | (close ? HTTPD_CLOSE : 0));
}

static void count(struct webhook *wh, uint64_t *counter)
{
	pthread_mutex_lock(&wh->lock);
	wh->stats.requests++;
	if (counter)
		(*counter)++;
	pthread_mutex_unlock(&wh->lock);
}

/* A refusal before the body is read: log, count, answer, close. */
static int refuse(struct webhook *wh, struct wh_req *r, struct httpd_req *req,
		  unsigned status, const char *text, const char *why)
{
	int prio = status == HTTPD_UNAUTHORIZED ? LOG_WARNING : LOG_NOTICE;

	log_msg(prio, "webhook: %s: %u, %s", r->peer, status, why);
	count(wh, status == HTTPD_UNAUTHORIZED ? &wh->stats.unauthorized :
		  status == HTTPD_SERVICE_UNAVAILABLE ? NULL :
							&wh->stats.rejected);
	return answer(r, req, status, text, 1);
}

/* "application/json", optionally with parameters (charset=utf-8). */
static int is_json_type(const char *v)
{
	const char *semi;
	size_t len;

	if (!v)
		return 0;
	semi = strchr(v, ';');
	len = semi ? (size_t)(semi - v) : strlen(v);
	mem_trim(&v, &len);
	return mem_eq_icase(v, len, "application/json");
}

/* The delivery key into r->key ("i:"/"e:" prefixed); 0 or -1 if bad. */
static int take_key(struct wh_req *r, struct httpd_req *req)
{
	const char *v = httpd_header(req, "Idempotency-Key");
	const char *prefix = "i:";
	size_t len;

	if (!v || !*v) {
		v = httpd_header(req, "X-Gitlab-Event-UUID");
		prefix = "e:";
	}
	if (!v || !*v)
		return 0;
	len = strlen(v);
	if (len > WEBHOOK_KEY_MAX || !printable_check(v, len))
		return -1;
	snprintf(r->key, sizeof(r->key), "%s%s", prefix, v);
	return 0;
}

/* The first call: everything that can be decided from the headers. */
static int on_headers(struct webhook *wh, struct wh_req *r,
		      struct httpd_req *req, const char *url,
		      const char *method)
{
	unsigned char given[WEBHOOK_SECRET_MAX];
	char shown[PB_LOG_QUOTE_MAX], shown2[PB_LOG_QUOTE_MAX];
	const char *token, *cl, *event;
	size_t given_len;
	uint64_t length;
	int stopping, ok;

	pthread_mutex_lock(&wh->lock);
	stopping = wh->stopping;
	pthread_mutex_unlock(&wh->lock);
	if (stopping)
		return refuse(wh, r, req, HTTPD_SERVICE_UNAVAILABLE,
			      "shutting down\n", "shutting down");
	if (strcmp(url, wh->path)) {
		log_debug("webhook: %s: 404 for %s %s", r->peer,
			  printable_copy(shown, sizeof(shown), method,
					 strlen(method)),
			  printable_copy(shown2, sizeof(shown2), url,
					 strlen(url)));
		count(wh, &wh->stats.rejected);
		return answer(r, req, HTTPD_NOT_FOUND, "not found\n", 0);
	}
	if (strcmp(method, "POST")) {
		log_debug("webhook: %s: 405 for %s", r->peer,
			  printable_copy(shown, sizeof(shown), method,
					 strlen(method)));
		count(wh, &wh->stats.rejected);
		return answer(r, req, HTTPD_METHOD_NOT_ALLOWED,
			      "method not allowed\n", 0);
	}

	/*
	 * The token before anything else about the request: a peer without
	 * it learns nothing and gets nothing read.  Both sides are padded to
	 * WEBHOOK_SECRET_MAX, so neither a differing byte nor a differing
	 * length ends the comparison early.
	 */
	token = httpd_header(req, "X-Gitlab-Token");
	ct_pad(given, &given_len, token ? token : "");
	ok = ct_equal(wh->secret, wh->secret_len, given, given_len);
	explicit_bzero(given, sizeof(given));
	if (!token)
		return refuse(wh, r, req, HTTPD_UNAUTHORIZED, "unauthorized\n",
			      "no X-Gitlab-Token");
	if (!ok)
		return refuse(wh, r, req, HTTPD_UNAUTHORIZED, "unauthorized\n",
			      "wrong X-Gitlab-Token");

	cl = httpd_header(req, "Content-Length");
	if (cl) {
		if (!mem_to_u64(cl, strlen(cl), UINT64_MAX, &length))
			return refuse(wh, r, req, HTTPD_BAD_REQUEST,
				      "bad Content-Length\n",
				      "bad Content-Length");
		if (length > WEBHOOK_DISCARD_MAX) {
			char why[96];

			snprintf(why, sizeof(why),
				 "body of %llu bytes, more than GitLab ever "
				 "sends",
				 (unsigned long long)length);
			return refuse(wh, r, req, HTTPD_CONTENT_TOO_LARGE,
				      "payload too large\n", why);
		}
		if (length > wh->max_request) {
			event = httpd_header(req, "X-Gitlab-Event");
			printable_copy(r->event, sizeof(r->event),
				       event ? event : "?",
				       strlen(event ? event : "?"));
			r->discarding = 1;
			return 0;
		}
		if (buf_grow(&r->body, (size_t)length))
			BUG("body cap checked above");
	}
	if (!is_json_type(httpd_header(req, "Content-Type")))
		return refuse(wh, r, req, HTTPD_UNSUPPORTED_MEDIA_TYPE,
			      "expected application/json\n",
			      "Content-Type is not application/json");
	event = httpd_header(req, "X-Gitlab-Event");
	if (!event || !*event)
		return refuse(wh, r, req, HTTPD_BAD_REQUEST,
			      "no X-Gitlab-Event\n", "no X-Gitlab-Event");
	printable_copy(r->event, sizeof(r->event), event, strlen(event));
	if (take_key(r, req))
		return refuse(wh, r, req, HTTPD_BAD_REQUEST,
			      "bad delivery key\n",
			      "Idempotency-Key or X-Gitlab-Event-UUID "
			      "too long or unprintable");
	return 0;
}

/* Log one line for an event; ctx is "project!iid". */
static void log_event(int prio, const struct wh_req *r,
		      const struct webhook_event *ev, unsigned status,
		      const char *outcome)
{
	struct log_ctx_saved saved;

	log_ctx_pushf(&saved, "%s!%lld", ev->project, (long long)ev->iid);
	if (ev->kind == WEBHOOK_MR)
		log_msg(prio,
			"webhook: %s: %s %s%s head %s delivery %s: %u, %s",
			r->peer, r->event,
			ev->action_name[0] ? ev->action_name : "-",
			ev->code_changed ? " (code changed)" : "",
			ev->last_commit[0] ? ev->last_commit : "-",
			r->key[0] ? r->key + 2 : "-", status, outcome);
	else if (ev->kind == WEBHOOK_PIPELINE)
		log_msg(prio,
			"webhook: %s: %s %lld %s head %s delivery %s: %u, %s",
			r->peer, r->event, (long long)ev->pipeline_id,
			ev->pipeline_status,
			ev->last_commit[0] ? ev->last_commit : "-",
			r->key[0] ? r->key + 2 : "-", status, outcome);
	else
		log_msg(prio,
			"webhook: %s: %s %s note %lld%s%s delivery %s: %u, %s",
			r->peer, r->event,
			ev->action_name[0] ? ev->action_name : "-",
			(long long)ev->note_id, ev->note_type[0] ? " " : "",
			ev->note_type, r->key[0] ? r->key + 2 : "-", status,
			outcome);
	log_ctx_pop(&saved);
}

/* The last call: the whole body is here. */
/*
 * A delivery over max_request_size from a peer that knows the secret:
 * GitLab itself, with a big MR (a long description, many changes).  An
 * error would count against the hook: GitLab treats every answer but a
 * 2xx or 3xx as a failure (app/services/web_hook_service.rb
 * response_category) and backs the hook off, then disables it, after a
 * few in a row (app/services/web_hooks/log_execution_service.rb,
 * app/models/concerns/web_hooks/auto_disabling.rb) - and every later
 * delivery, small ones too, would be lost.  So the body is read and
 * thrown away, the answer is 200, and the log says so: polling reads the
 * MR in any case.
 */
static int on_oversized(struct webhook *wh, struct wh_req *r,
			struct httpd_req *req)
{
	log_warn("webhook: %s: %s of %llu bytes over [webhook] "
		 "max_request_size (%zu): answered 200 and not read; the next "
		 "poll picks up what it said",
		 r->peer, r->event, (unsigned long long)r->discarded,
		 wh->max_request);
	count(wh, &wh->stats.oversized);
	return answer(r, req, HTTPD_OK, "too large, ignored\n", 0);
}

static int on_body(struct webhook *wh, struct wh_req *r, struct httpd_req *req)
{
	struct webhook_event ev;
	char why[PB_LOG_QUOTE_MAX];
	uint32_t seen;
	int rc;

	rc = webhook_parse(&ev, r->event, r->body.data, r->body.len);
	if (rc) {
		log_notice("webhook: %s: 400, %s", r->peer,
			   printable_copy(why, sizeof(why), err_msg(),
					  strlen(err_msg())));
		count(wh, &wh->stats.rejected);
		return answer(r, req, HTTPD_BAD_REQUEST, "bad payload\n", 0);
	}
	if (ev.kind == WEBHOOK_IGNORED) {
		/* 2xx: GitLab disables hooks that keep failing. */
		log_debug("webhook: %s: %s%s%s: 200, ignored", r->peer,
			  r->event, ev.noteable_type[0] ? " on " : "",
			  ev.noteable_type);
		count(wh, &wh->stats.ignored);
		return answer(r, req, HTTPD_OK, "ignored\n", 0);
	}
	if (r->key[0])
		snprintf(ev.delivery, sizeof(ev.delivery), "%s", r->key + 2);

	pthread_mutex_lock(&wh->lock);
	wh->stats.requests++;
	seen = r->key[0] ? lru_find(&wh->seen, r->key) : LRU_NIL;
	if (seen != LRU_NIL) {
		lru_touch(&wh->seen, seen);
		wh->stats.duplicates++;
		pthread_mutex_unlock(&wh->lock);
		log_event(LOG_INFO, r, &ev, HTTPD_OK, "duplicate, ignored");
		return answer(r, req, HTTPD_OK, "duplicate\n", 0);
	}
	/* Under the lock: a concurrent retry of the same delivery waits
	 * here and then finds the key.  The callback only enqueues. */
	rc = wh->on_event(&ev, wh->arg);
	if (rc == 0) {
		if (r->key[0])
			lru_add(&wh->seen, r->key);
		wh->stats.queued++;
	} else {
		wh->stats.failed++;
	}
	pthread_mutex_unlock(&wh->lock);

	if (rc) {
		log_event(LOG_WARNING, r, &ev, HTTPD_SERVICE_UNAVAILABLE,
			  "could not queue");
		return answer(r, req, HTTPD_SERVICE_UNAVAILABLE,
			      "try again later\n", 0);
	}
	log_event(LOG_INFO, r, &ev, HTTPD_OK,
		  r->key[0] ? "queued" : "queued (no delivery key)");
	return answer(r, req, HTTPD_OK, "ok\n", 0);
}

static int on_request(struct httpd_req *req, enum httpd_call call,
		      const char *upload, size_t upload_size, void *arg)
{
	struct webhook *wh = arg;
	struct wh_req *r = httpd_req_data(req);

	if (call == HTTPD_HEAD) {
		r = xcalloc(1, sizeof(*r));
		buf_init(&r->body, wh->max_request);
		httpd_peer(req, r->peer, sizeof(r->peer));
		httpd_req_set_data(req, r);
		pthread_mutex_lock(&wh->lock);
		wh->stats.inflight++;
		pthread_mutex_unlock(&wh->lock);
		return on_headers(wh, r, req, httpd_url(req),
				  httpd_method(req));
	}
	if (r->answered)
		return 0;
	if (upload_size && r->discarding) {
		r->discarded += upload_size;
		if (r->discarded > WEBHOOK_DISCARD_MAX) {
			/* More than GitLab ever sends: not GitLab. */
			log_notice("webhook: %s: body over %d bytes, "
				   "connection closed",
				   r->peer, WEBHOOK_DISCARD_MAX);
			count(wh, &wh->stats.rejected);
			r->answered = 1;
			return -1;
		}
		return 0;
	}
	if (upload_size) {
		if (buf_add(&r->body, upload, upload_size)) {
			/* A chunked body past the cap: the rest is thrown
			 * away, as for a Content-Length over it. */
			r->discarding = 1;
			r->discarded = r->body.len + upload_size;
			buf_reset(&r->body);
		}
		return 0;
	}
	if (r->discarding)
		return on_oversized(wh, r, req);
	return on_body(wh, r, req);
}

static void on_done(struct httpd_req *req, enum httpd_end how, void *arg)
{
	struct webhook *wh = arg;
	struct wh_req *r = httpd_req_data(req);

	if (!r)
		return;
	if (!r->answered) {
		/* Timed out, the peer went away, or the server is stopping. */
		log_notice("webhook: %s: request dropped before it was "
			   "complete (%s)",
			   r->peer,
			   how == HTTPD_END_TIMEOUT  ? "timeout" :
			   how == HTTPD_END_SHUTDOWN ? "shutdown" :
						       "connection closed");
		count(wh, NULL);
	}
	buf_release(&r->body);
	free(r);
	httpd_req_set_data(req, NULL);
	pthread_mutex_lock(&wh->lock);
	if (--wh->stats.inflight == 0)
		pthread_cond_broadcast(&wh->drained);
	pthread_mutex_unlock(&wh->lock);
}

/*
 * Setup and teardown.
 */

static int check_opts(const struct webhook_opts *o)
{
	size_t len;

	if (!o->on_event)
		return err_set(PB_EINVAL, "webhook: no event callback");
	if (!o->secret || !*o->secret)
		return err_set(PB_EINVAL, "webhook: the secret is empty");
	len = strlen(o->secret);
	if (len > WEBHOOK_SECRET_MAX)
		return err_set(PB_EINVAL,
			       "webhook: the secret is longer than %d bytes",
			       WEBHOOK_SECRET_MAX);
	/* A header value cannot carry these; a trailing newline from the
	 * secret file is the usual culprit. */
	if (!printable_check(o->secret, len))
		return err_set(PB_EINVAL,
			       "webhook: the secret holds a control, "
			       "non-ASCII or newline byte");
	if (o->path &&
	    (o->path[0] != '/' || !printable_check(o->path, strlen(o->path))))
		return err_set(PB_EINVAL, "webhook: the path must start "
					  "with '/' and be printable");
	if (o->dedupe_entries > WH_DEDUPE_MAX)
		return err_set(PB_EINVAL,
			       "webhook: more than %d de-duplication entries",
			       WH_DEDUPE_MAX);
	if (o->threads && o->max_connections && o->max_connections < o->threads)
		return err_set(PB_EINVAL, "webhook: fewer connections than "
					  "threads");
	return 0;
}

int webhook_new(struct webhook **out, const struct webhook_opts *opts)
{
	struct httpd_opts ho;
	struct webhook *wh;
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	rc = check_opts(opts);
	if (rc)
		return rc;

	wh = xcalloc(1, sizeof(*wh));
	wh->path = xstrdup(opts->path ? opts->path : WEBHOOK_PATH_DEFAULT);
	wh->max_request = opts->max_request_size ? opts->max_request_size :
						   WEBHOOK_MAX_REQUEST_DEFAULT;
	wh->timeout_s = opts->timeout_s ? opts->timeout_s :
					  WEBHOOK_TIMEOUT_DEFAULT;
	ct_pad(wh->secret, &wh->secret_len, opts->secret);
	wh->on_event = opts->on_event;
	wh->arg = opts->arg;
	pthread_mutex_init(&wh->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wh->drained, &ca);
	pthread_condattr_destroy(&ca);
	lru_init(&wh->seen, opts->dedupe_entries ? opts->dedupe_entries :
						   WEBHOOK_DEDUPE_DEFAULT);

	memset(&ho, 0, sizeof(ho));
	ho.listen = opts->listen ? opts->listen : WEBHOOK_LISTEN_DEFAULT;
	ho.name = "webhook";
	ho.max_connections = opts->max_connections ?
				     opts->max_connections :
				     WEBHOOK_CONNECTIONS_DEFAULT;
	ho.threads = opts->threads ? opts->threads : WEBHOOK_THREADS_DEFAULT;
	ho.timeout_s = wh->timeout_s;
	ho.on_request = on_request;
	ho.on_done = on_done;
	ho.arg = wh;
	rc = httpd_new(&wh->httpd, &ho);
	if (rc)
		goto out;
	log_info("webhook: listening on %s (port %u), path %s", ho.listen,
		 httpd_port(wh->httpd), wh->path);
	*out = wh;
	wh = NULL;
out:
	webhook_free(wh);
	return rc;
}

void webhook_free(struct webhook *wh)
{
	struct timespec deadline;

	if (!wh)
		return;
	if (wh->httpd) {
		pthread_mutex_lock(&wh->lock);
		wh->stopping = 1;
		pthread_mutex_unlock(&wh->lock);
		httpd_quiesce(wh->httpd);
		/* Let requests in flight finish, for a while. */
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += (time_t)wh->timeout_s;
		pthread_mutex_lock(&wh->lock);
		while (wh->stats.inflight > 0)
			if (pthread_cond_timedwait(&wh->drained, &wh->lock,
						   &deadline) == ETIMEDOUT)
				break;
		pthread_mutex_unlock(&wh->lock);
		httpd_free(wh->httpd);
	}
	explicit_bzero(wh->secret, sizeof(wh->secret));
	lru_release(&wh->seen);
	pthread_cond_destroy(&wh->drained);
	pthread_mutex_destroy(&wh->lock);
	free(wh->path);
	free(wh);
}

unsigned webhook_port(const struct webhook *wh)
{
	return httpd_port(wh->httpd);
}

void webhook_stats(struct webhook_stats *out, struct webhook *wh)
{
	pthread_mutex_lock(&wh->lock);
	*out = wh->stats;
	pthread_mutex_unlock(&wh->lock);
}
