/*
 * gitlab_int - what the pieces of the GitLab client share, for
 * bridge/forge/gitlab*.c only (tests/layering.sh keeps it so; the
 * interface is gitlab.h and forge.h).
 *
 *   gitlab.c        the handle and its options, requests (gl_call_do:
 *                   retries, redirects, refusals, error text), URLs,
 *                   request bodies, the idempotent writes, forge_ops
 *   gitlab_read.c   pagination, GitLab's JSON into forge.h's structs,
 *                   the GETs of one object or of every page of a list
 *   gitlab_notes.c  notes and discussions, markers, posting once
 *   gitlab_mr.c     merge requests, versions, approvals, labels, users,
 *                   the project, the token, webhooks
 *
 * Ownership: a struct gl_call is the caller's, made with gl_call_init()
 * and released with gl_call_release(); c->root points into c->doc.  A
 * converter (gl_from_json_fn) fills out, which the caller releases with
 * the forge.h release of its type; after a failure nothing is left to
 * release.  Errors as in util/err.h: the function that fails sets the
 * message.  Threads: as gitlab.h, one handle per thread.
 */
#ifndef PB_FORGE_GITLAB_INT_H
#define PB_FORGE_GITLAB_INT_H

#include "forge/gitlab.h"
#include "forge/http.h"
#include "forge/json.h"
#include "util/buf.h"
#include "util/jsonw.h"
#include "util/strlist.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define GL_WHERE_MAX 160 /* a request's path in messages */

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

/* f must be a GitLab handle (BUG otherwise). */
struct gitlab *gl_of(struct forge *f);
/* The stop flag is set. */
int gl_stopping(const struct gitlab *gl);
/* The wait before another try; PB_ETEMP when stopping. */
int gl_wait(struct gitlab *gl, int64_t ms);
uint32_t gl_random(struct gitlab *gl);

/*
 * Requests (gitlab.c).
 */

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

void gl_call_init(struct gl_call *c, const struct gitlab *gl);
void gl_call_release(struct gl_call *c);
int gl_call_do(struct gitlab *gl, struct gl_call *c, enum http_method m,
	       const char *url0, const struct buf *body, enum gl_kind kind);
/* Log a response we cannot use; PB_EINVAL. */
int gl_bad_data(struct gl_call *c);
/* Parse c's body into c->doc and c->root. */
int gl_call_json(struct gl_call *c);
/* GET url (retried) and parse it; root must be an object. */
int gl_call_get_object(struct gitlab *gl, struct gl_call *c, const char *url);
/* The idempotent writes: w's body (NULL: none) sent, retried freely. */
int gl_write_state(struct gitlab *gl, struct gl_call *c, enum http_method m,
		   const char *url, struct jsonw *w);

/* URLs: PB_ELIMIT (gl_url_fail()) past PB_HTTP_URL_MAX. */
int gl_url_fail(void);
int gl_url_project(struct buf *u, struct gitlab *gl, const char *project);
int gl_url_mr(struct buf *u, struct gitlab *gl, const char *project,
	      int64_t iid, const char *suffix);
int gl_url_discussion(struct buf *u, struct gitlab *gl, const char *project,
		      int64_t iid, const char *id, const char *suffix);
int gl_url_param(struct buf *u, const char *name, const char *value);
int gl_url_param_int(struct buf *u, const char *name, int64_t v);

/* Request bodies: one JSON object; gl_body_finish() says if it fits. */
void gl_body_begin(struct jsonw *w, struct buf *out);
int gl_body_finish(struct jsonw *w);
void gl_member_str(struct jsonw *w, const char *key, const char *s, size_t len);
void gl_member_strz(struct jsonw *w, const char *key, const char *s);
void gl_member_int(struct jsonw *w, const char *key, int64_t v);
void gl_member_bool(struct jsonw *w, const char *key, int v);

/*
 * The read path (gitlab_read.c).
 */

/* One item of a listing; nonzero stops the walk with that result. */
typedef int (*gl_item_fn)(struct gl_call *c, const struct json_value *item,
			  void *arg);

int gl_paginate(struct gitlab *gl, const char *first, int max_pages,
		gl_item_fn fn, void *arg, int *truncated);
int gl_paginate_all(struct gitlab *gl, struct buf *u, gl_item_fn fn, void *arg,
		    const char *what);
int gl_paginate_mr(struct gitlab *gl, const char *project, int64_t iid,
		   const char *suffix, gl_item_fn fn, void *arg,
		   const char *what);
/* Every page of the project's listing at suffix ("/hooks"). */
int gl_paginate_project(struct gitlab *gl, const char *project,
			const char *suffix, gl_item_fn fn, void *arg,
			const char *what);

/* JSON into one of forge.h's structs (out, of the type the name says). */
typedef int (*gl_from_json_fn)(void *out, const struct json_value *v);

int gl_user_from_json(void *out, const struct json_value *v);
int gl_mr_from_json(void *out, const struct json_value *v);
int gl_version_from_json(void *out, const struct json_value *v);
int gl_note_from_json(void *out, const struct json_value *v);
int gl_discussion_from_json(void *out, const struct json_value *v);
int gl_approvals_from_json(void *out, const struct json_value *v);
int gl_project_from_json(void *out, const struct json_value *v);
int gl_hook_from_json(void *out, const struct json_value *v);
int gl_pipeline_from_json(void *out, const struct json_value *v);
int gl_signature_from_json(void *out, const struct json_value *v);
int gl_job_from_json(void *out, const struct json_value *v);
/* The strings of the array obj[key], appended to l. */
int gl_strings_from_json(struct strlist *l, const struct json_value *obj,
			 const char *key);
int gl_convert(struct gl_call *c, const struct json_value *v, const char *what,
	       gl_from_json_fn fn, void *out);

int gl_get_one(struct gitlab *gl, const char *url, gl_from_json_fn fn,
	       void *out);
int gl_get_mr_one(struct gitlab *gl, const char *project, int64_t iid,
		  const char *suffix, gl_from_json_fn fn, void *out);
int gl_get_user_by_id(struct forge_user *out, struct gitlab *gl, int64_t id);
int gl_get_as_self(struct gitlab *gl, struct gl_call *c, const char *path);

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

/* A gl_item_fn: the item converted into w's array. */
int gl_list_item(struct gl_call *c, const struct json_value *item, void *arg);

/* Our own user id (the token's user), asked once (gitlab_notes.c). */
int gl_self_id(int64_t *out, struct gitlab *gl);

/*
 * The operations of forge_ops, gl_NAME() for the member NAME, declared
 * with the type forge.h gives the member (forge_ops is where each one's
 * parameters are written and explained).
 */
#define GL_OP(name) extern __typeof__(*((struct forge_ops *)0)->name) gl_##name

/* gitlab_notes.c */
GL_OP(list_notes);
GL_OP(create_note);
GL_OP(list_discussions);
GL_OP(create_discussion);
GL_OP(reply_discussion);
GL_OP(resolve_discussion);
GL_OP(find_note_by_marker);

/* gitlab_mr.c */
GL_OP(list_mrs);
GL_OP(get_mr);
GL_OP(list_versions);
GL_OP(get_version);
GL_OP(approve);
GL_OP(unapprove);
GL_OP(get_approvals);
GL_OP(update_labels);
GL_OP(create_mr);
GL_OP(find_user_by_email);
GL_OP(get_user);
GL_OP(whoami);
GL_OP(get_project);
GL_OP(commit_email_host);
GL_OP(list_hooks);
GL_OP(list_pipelines);
GL_OP(list_jobs);
GL_OP(job_trace);
GL_OP(commit_signature);

#endif
