/*
 * gitlab_notes - notes and discussions of a merge request: listing them,
 * finding one by its marker, and posting exactly once (gitlab_int.h).
 */
#include "forge/gitlab_int.h"

#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A JSON-escaped note body: at worst 6 bytes per input byte. */
#define GL_REQUEST_BODY_MAX (6 * (size_t)PB_NOTE_BODY_MAX + 64 * 1024)

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

	if ((rc = gl_list_item(c, item, &w->list)) < 0)
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

	if ((rc = gl_url_mr(u, gl, project, iid, "/notes")) < 0)
		return rc;
	if (q && q->sort && (rc = gl_url_param(u, "sort", q->sort)) < 0)
		return rc;
	if (q && q->order_by &&
	    (rc = gl_url_param(u, "order_by", q->order_by)) < 0)
		return rc;
	return gl_url_param_int(u, "per_page",
				q && q->per_page > 0 ? q->per_page :
						       gl->per_page);
}

int gl_list_notes(struct forge_note_list *out, struct forge *f,
		  const char *project, int64_t iid,
		  const struct forge_note_query *q)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct note_walk w = { LIST_WALK(out, gl_note_from_json, "note"), 0,
			       0 };
	int max_pages = q ? q->max_pages : 0;
	int truncated, rc;

	if (q)
		w.stop_before_ms = q->stop_before_ms;
	if ((rc = notes_url(&u, gl, project, iid, q)) < 0)
		goto out;
	rc = gl_paginate(gl, u.data, max_pages, note_item, &w, &truncated);
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

int gl_list_discussions(struct forge_discussion_list *out, struct forge *f,
			const char *project, int64_t iid)
{
	struct list_walk w =
		LIST_WALK(out, gl_discussion_from_json, "discussion");
	int rc = gl_paginate_mr(gl_of(f), project, iid, "/discussions",
				gl_list_item, &w, "discussions");

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
int gl_self_id(int64_t *out, struct gitlab *gl)
{
	struct gl_call c;
	int rc;

	*out = gl->self_id;
	if (gl->self_id)
		return 0;
	gl_call_init(&c, gl);
	rc = gl_get_as_self(gl, &c, "/user");
	if (!rc && json_get_int(&gl->self_id, c.root, "id") < 0)
		rc = gl_bad_data(&c);
	*out = gl->self_id;
	gl_call_release(&c);
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
		rc = gl_self_id(&ms->author_id, gl);
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

	if ((rc = gl_convert(c, item, "note", gl_note_from_json, &n)) < 0)
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

	if ((rc = gl_convert(c, item, "discussion", gl_discussion_from_json,
			     &d)) < 0)
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
	rc = gl_paginate(ms->gl, u.data, q.max_pages, marker_note_item, ms,
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
	return gl_paginate_mr(ms->gl, project, iid, "/discussions",
			      marker_discussion_item, ms, NULL);
}

static int search_one_discussion(struct marker_search *ms, const char *project,
				 int64_t iid, const char *discussion_id)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct forge_discussion d;
	size_t i;
	int rc;

	if ((rc = gl_url_discussion(&u, ms->gl, project, iid, discussion_id,
				    NULL)) < 0 ||
	    (rc = gl_get_one(ms->gl, u.data, gl_discussion_from_json, &d)) < 0)
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

int gl_find_note_by_marker(struct forge_note *out, char **out_discussion_id,
			   struct forge *f, const char *project, int64_t iid,
			   const char *discussion_id, const char *marker_key)
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
		rc = gl_call_do(gl, c, HTTP_POST, url, json, GL_ONCE);
		if (rc == 0 || !c->uncertain)
			return rc;
		if (!key)
			return err_prefix(PB_ETEMP, "outcome unknown");
		snprintf(first, sizeof(first), "%s", err_msg());
		if (gl_stopping(gl) || (int)attempt >= gl->max_retries) {
			if (gl_stopping(gl))
				gl->stop_failed = 1;
			return err_set(PB_ETEMP,
				       "outcome unknown, look for "
				       "marker %s before retrying: "
				       "%s%s",
				       key, first,
				       gl_stopping(gl) ? " (stopping)" : "");
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

	gl_call_init(&c, gl);
	memset(&ms, 0, sizeof(ms));
	if (where->discussion_id)
		rc = gl_url_discussion(&u, gl, where->project, where->iid,
				       where->discussion_id, "/notes");
	else
		rc = gl_url_mr(&u, gl, where->project, where->iid,
			       discussion ? "/discussions" : "/notes");
	if (rc < 0 || (rc = note_body(&text, body, key)) < 0 ||
	    (pos && (rc = position_check(pos)) < 0))
		goto out;
	if (key && (rc = marker_search_init(&ms, gl, key)) < 0)
		goto out;
	gl_body_begin(&w, &json);
	gl_member_str(&w, "body", text.data, text.len);
	if (pos) {
		/* Lines: added → new only, removed → old only, context →
		 * both (GitLab doc/api/discussions.md, "Create a new thread
		 * in the merge request diff"); forge_position_set_line()
		 * builds them. */
		jsonw_key(&w, "position");
		jsonw_obj_begin(&w);
		gl_member_strz(&w, "position_type", "text");
		gl_member_strz(&w, "base_sha", pos->base_sha);
		gl_member_strz(&w, "start_sha", pos->start_sha);
		gl_member_strz(&w, "head_sha", pos->head_sha);
		gl_member_strz(&w, "old_path", pos->old_path);
		gl_member_strz(&w, "new_path", pos->new_path);
		if (pos->old_line > 0)
			gl_member_int(&w, "old_line", pos->old_line);
		if (pos->new_line > 0)
			gl_member_int(&w, "new_line", pos->new_line);
		jsonw_obj_end(&w);
	}
	if ((rc = gl_body_finish(&w)) < 0 ||
	    (rc = post_once(gl, &c, u.data, &json, key, where, &ms)) < 0)
		goto out;
	if (ms.found && discussion) {
		*(struct forge_discussion *)out = ms.discussion;
		memset(&ms.discussion, 0, sizeof(ms.discussion));
	} else if (ms.found) {
		marker_take_note(&ms, out);
	} else if ((rc = check_saved(&c)) == 0 &&
		   (rc = gl_call_json(&c)) == 0) {
		rc = gl_convert(&c, c.root, "response",
				discussion ? gl_discussion_from_json :
					     gl_note_from_json,
				out);
	}
out:
	marker_search_release(&ms);
	gl_call_release(&c);
	buf_release(&u);
	buf_release(&text);
	buf_release(&json);
	return rc;
}

int gl_create_note(struct forge_note *out, struct forge *f, const char *project,
		   int64_t iid, const char *body, const char *marker_key)
{
	struct marker_where where = { project, iid, NULL, 0 };

	return post_marked(out, gl_of(f), &where, body, NULL, marker_key);
}

int gl_create_discussion(struct forge_discussion *out, struct forge *f,
			 const char *project, int64_t iid, const char *body,
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

int gl_reply_discussion(struct forge_note *out, struct forge *f,
			const char *project, int64_t iid,
			const char *discussion_id, const char *body,
			const char *marker_key)
{
	struct marker_where where = { project, iid, discussion_id, 0 };

	return post_marked(out, gl_of(f), &where, body, NULL, marker_key);
}

int gl_resolve_discussion(struct forge *f, const char *project, int64_t iid,
			  const char *discussion_id, int resolved)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct buf json = BUF_INIT(64);
	struct jsonw w;
	int rc;

	if ((rc = gl_url_discussion(&u, gl, project, iid, discussion_id,
				    NULL)) == 0) {
		gl_body_begin(&w, &json);
		gl_member_bool(&w, "resolved", resolved);
		/* Setting a state: repeating it converges. */
		rc = gl_write_state(gl, NULL, HTTP_PUT, u.data, &w);
	}
	buf_release(&u);
	buf_release(&json);
	return rc;
}
