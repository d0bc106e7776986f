/*
 * gitlab_read - the read path of the GitLab client: pagination, the
 * conversion of GitLab's JSON into forge.h's structs, and the GETs of
 * one object or of every page of a list (gitlab_int.h).
 */
#include "forge/gitlab_int.h"

#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

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

/* url with its page parameter set to page (appended when it has none). */
static int url_with_page(struct buf *out, const char *url, const char *page)
{
	const char *q = strchr(url, '?'), *p, *amp;
	size_t n;

	buf_reset(out);
	if (!q)
		return buf_addf(out, "%s?page=%s", url, page) < 0 ?
			       gl_url_fail() :
			       0;
	if (buf_add(out, url, (size_t)(q - url) + 1) < 0)
		return gl_url_fail();
	for (p = q + 1; *p; p = amp ? amp + 1 : p + n) {
		amp = strchr(p, '&');
		n = amp ? (size_t)(amp - p) : strlen(p);
		if (n >= 5 && !strncmp(p, "page=", 5))
			continue;
		if (n && (buf_add(out, p, n) < 0 || buf_addch(out, '&') < 0))
			return gl_url_fail();
		if (!amp)
			break;
	}
	if (buf_addf(out, "page=%s", page) < 0)
		return gl_url_fail();
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
		rc = buf_addf(next, "%s%s", gl->api, rest) < 0 ? gl_url_fail() :
								 0;
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

int gl_paginate(struct gitlab *gl, const char *first, int max_pages,
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
	gl_call_init(&c, gl);
	for (;;) {
		rc = gl_call_do(gl, &c, HTTP_GET, url, NULL, GL_SAFE);
		if (!rc)
			rc = gl_call_json(&c);
		if (rc)
			goto out;
		if (json_expect(c.root, JSON_ARRAY, "response") < 0) {
			rc = gl_bad_data(&c);
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
			rc = gl_bad_data(&c);
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
	gl_call_release(&c);
	buf_release(&next);
	free(url);
	return rc;
}

/*
 * JSON to our structs.  Ids and the fields we act on are required; the
 * rest may be missing or null.  A converter zeroes out first and leaves
 * nothing to release when it fails; out is the forge.h struct its name
 * says (void *, so that the read and write paths take any of them:
 * gl_from_json_fn).
 */

int gl_user_from_json(void *out, const struct json_value *v)
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

int gl_strings_from_json(struct strlist *l, const struct json_value *obj,
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
		    (rc = gl_user_from_json(&mr->reviewers[i], item)) < 0)
			return rc;
		mr->nr_reviewers++;
	}
	return 0;
}

int gl_mr_from_json(void *out, const struct json_value *v)
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
	    (rc = gl_strings_from_json(&mr->labels, v, "labels")) < 0 ||
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
	    (o && (rc = gl_user_from_json(&mr->author, o)) < 0))
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
	    (rc = gl_strings_from_json(&c->parent_ids, v, "parent_ids")) < 0) {
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

int gl_version_from_json(void *out, const struct json_value *v)
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

int gl_note_from_json(void *out, const struct json_value *v)
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
	    (rc = gl_user_from_json(&n->author, o)) < 0 ||
	    (rc = json_get_str_opt(&n->resolved_at, v, "resolved_at")) < 0 ||
	    (rc = json_get_obj_opt(&o, v, "resolved_by")) < 0 ||
	    (o && (rc = gl_user_from_json(&n->resolved_by, o)) < 0) ||
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

int gl_discussion_from_json(void *out, const struct json_value *v)
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
		rc = gl_note_from_json(&d->notes[i], json_array_at(arr, i));
		if (rc < 0)
			goto fail;
		d->nr_notes++;
	}
	return 0;
fail:
	forge_discussion_release(d);
	return err_prefix(rc, "discussion");
}

int gl_approvals_from_json(void *out, const struct json_value *v)
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
		    (rc = gl_user_from_json(&a->approved_by[i], u)) < 0)
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
int gl_convert(struct gl_call *c, const struct json_value *v, const char *what,
	       gl_from_json_fn fn, void *out)
{
	if (json_expect(v, JSON_OBJECT, what) < 0 || fn(out, v) < 0)
		return gl_bad_data(c);
	return 0;
}

/*
 * The read path: one object, or every page of a list, converted.
 */

/* GET url (retried) and convert its object into out with fn. */
int gl_get_one(struct gitlab *gl, const char *url, gl_from_json_fn fn,
	       void *out)
{
	struct gl_call c;
	int rc;

	gl_call_init(&c, gl);
	rc = gl_call_get_object(gl, &c, url);
	if (!rc)
		rc = gl_convert(&c, c.root, "response", fn, out);
	gl_call_release(&c);
	return rc;
}

/* gl_get_one() on a merge request's URL (gl_url_mr()). */
int gl_get_mr_one(struct gitlab *gl, const char *project, int64_t iid,
		  const char *suffix, gl_from_json_fn fn, void *out)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	int rc = gl_url_mr(&u, gl, project, iid, suffix);

	if (!rc)
		rc = gl_get_one(gl, u.data, fn, out);
	buf_release(&u);
	return rc;
}

/* GET /users/:id. */
int gl_get_user_by_id(struct forge_user *out, struct gitlab *gl, int64_t id)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	int rc;

	if (buf_addf(&u, "%s/users/%lld", gl->api, (long long)id) < 0)
		rc = gl_url_fail();
	else
		rc = gl_get_one(gl, u.data, gl_user_from_json, out);
	buf_release(&u);
	return rc;
}

/*
 * GET api + path as ourselves, never through Sudo (who the token is, the
 * instance's settings); c holds the object.
 */
int gl_get_as_self(struct gitlab *gl, struct gl_call *c, const char *path)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	char *sudo = gl->sudo;
	int rc;

	gl->sudo = NULL;
	if (buf_adds(&u, gl->api) < 0 || buf_adds(&u, path) < 0)
		rc = gl_url_fail();
	else
		rc = gl_call_get_object(gl, c, u.data);
	gl->sudo = sudo;
	buf_release(&u);
	return rc;
}

/*
 * Every page of the listing at u (per_page appended) through fn.  With
 * what, more than PB_PAGES_MAX pages is PB_ELIMIT ("more than N pages of
 * what"); without, what the pages held is enough.
 */
int gl_paginate_all(struct gitlab *gl, struct buf *u, gl_item_fn fn, void *arg,
		    const char *what)
{
	int truncated, rc;

	if ((rc = gl_url_param_int(u, "per_page", gl->per_page)) < 0)
		return rc;
	rc = gl_paginate(gl, u->data, 0, fn, arg, &truncated);
	if (!rc && truncated && what)
		rc = err_set(PB_ELIMIT, "more than %d pages of %s",
			     PB_PAGES_MAX, what);
	return rc;
}

/* gl_paginate_all() on a merge request's URL (gl_url_mr()). */
int gl_paginate_mr(struct gitlab *gl, const char *project, int64_t iid,
		   const char *suffix, gl_item_fn fn, void *arg,
		   const char *what)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	int rc = gl_url_mr(&u, gl, project, iid, suffix);

	if (!rc)
		rc = gl_paginate_all(gl, &u, fn, arg, what);
	buf_release(&u);
	return rc;
}

int gl_paginate_project(struct gitlab *gl, const char *project,
			const char *suffix, gl_item_fn fn, void *arg,
			const char *what)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	int rc = gl_url_project(&u, gl, project);

	if (!rc && buf_adds(&u, suffix) < 0)
		rc = gl_url_fail();
	if (!rc)
		rc = gl_paginate_all(gl, &u, fn, arg, what);
	buf_release(&u);
	return rc;
}

int gl_list_item(struct gl_call *c, const struct json_value *item, void *arg)
{
	struct list_walk *w = arg;
	int rc;

	if (w->nr >= w->alloc) {
		w->alloc = w->alloc ? 2 * w->alloc : 8;
		w->items = xreallocarray(w->items, w->alloc, w->size);
	}
	rc = gl_convert(c, item, w->what, w->fn,
			(char *)w->items + w->nr * w->size);
	if (!rc)
		w->nr++;
	return rc;
}

int gl_project_from_json(void *out, const struct json_value *v)
{
	struct forge_project *p = out;
	int rc;

	memset(p, 0, sizeof(*p));
	if ((rc = json_get_int(&p->id, v, "id")) < 0 ||
	    (rc = json_get_str(&p->path_with_namespace, v,
			       "path_with_namespace")) < 0)
		goto fail;
	if (p->id > 0 && *p->path_with_namespace)
		return 0;
	rc = err_set(PB_EINVAL, "a project without id or path");
fail:
	forge_project_release(p);
	return rc;
}

int gl_hook_from_json(void *out, const struct json_value *v)
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

/* lib/api/entities/ci/pipeline_basic.rb */
int gl_pipeline_from_json(void *out, const struct json_value *v)
{
	struct forge_pipeline *p = out;

	memset(p, 0, sizeof(*p));
	if (json_get_int(&p->id, v, "id") < 0 ||
	    json_get_str(&p->sha, v, "sha") < 0 ||
	    json_get_str(&p->status, v, "status") < 0 ||
	    json_get_str_opt(&p->ref, v, "ref") < 0 ||
	    json_get_str_opt(&p->web_url, v, "web_url") < 0 ||
	    json_get_str_opt(&p->updated_at, v, "updated_at") < 0) {
		forge_pipeline_release(p);
		return PB_EINVAL;
	}
	return 0;
}

/*
 * lib/api/entities/commit_signature.rb: signature_type, then the fields
 * of the signature's own entity merged in (merge: true):
 * gpg_commit_signature.rb (verification_status, gpg_key_primary_keyid,
 * gpg_key_user_name, gpg_key_user_email), ssh_signature.rb
 * (verification_status, key: SSHKey with its title), x509_signature.rb
 * (verification_status, x509_certificate: subject, email).
 */
int gl_signature_from_json(void *out, const struct json_value *v)
{
	struct forge_signature *s = out;
	const struct json_value *o = NULL;

	memset(s, 0, sizeof(*s));
	if (json_get_str(&s->type, v, "signature_type") < 0 ||
	    json_get_str_opt(&s->status, v, "verification_status") < 0)
		goto fail;
	if (!strcmp(s->type, "PGP")) {
		if (json_get_str_opt(&s->name, v, "gpg_key_user_name") < 0 ||
		    json_get_str_opt(&s->email, v, "gpg_key_user_email") < 0 ||
		    json_get_str_opt(&s->key, v, "gpg_key_primary_keyid") < 0)
			goto fail;
	} else if (!strcmp(s->type, "SSH")) {
		if (json_get_obj_opt(&o, v, "key") < 0 ||
		    (o && json_get_str_opt(&s->key, o, "title") < 0))
			goto fail;
	} else if (!strcmp(s->type, "X509")) {
		if (json_get_obj_opt(&o, v, "x509_certificate") < 0 ||
		    (o && (json_get_str_opt(&s->email, o, "email") < 0 ||
			   json_get_str_opt(&s->key, o, "subject") < 0)))
			goto fail;
	}
	return 0;
fail:
	forge_signature_release(s);
	return PB_EINVAL;
}

/* lib/api/entities/ci/job_basic.rb */
int gl_job_from_json(void *out, const struct json_value *v)
{
	struct forge_job *j = out;

	memset(j, 0, sizeof(*j));
	if (json_get_int(&j->id, v, "id") < 0 ||
	    json_get_str(&j->status, v, "status") < 0 ||
	    json_get_str_opt(&j->name, v, "name") < 0 ||
	    json_get_str_opt(&j->stage, v, "stage") < 0 ||
	    json_get_str_opt(&j->web_url, v, "web_url") < 0 ||
	    json_get_bool_opt(&j->allow_failure, v, "allow_failure") < 0) {
		forge_job_release(j);
		return PB_EINVAL;
	}
	return 0;
}
