/*
 * gitlab_mr - merge requests and their versions, approvals and labels;
 * users, the project, the token and the webhooks (gitlab_int.h).
 */
#include "forge/gitlab_int.h"

#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GL_USER_CANDIDATES_MAX 20 /* users checked one by one */

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

	if ((rc = gl_convert(c, item, "merge request", gl_mr_from_json, &mr)) <
	    0)
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

int gl_list_mrs(struct forge *f, const char *project,
		struct forge_mr_cursor *cursor, const struct forge_mr_query *q,
		forge_mr_fn fn, void *arg)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct buf t = BUF_INIT(64);
	struct mr_walk w = { cursor, fn, arg, 0 };
	int64_t overlap = q && q->overlap_ms > 0 ? q->overlap_ms : 0;
	int per_page = q && q->per_page > 0 ? q->per_page : gl->per_page;
	int truncated = 0, rc;

	if ((rc = gl_url_project(&u, gl, project)) < 0)
		goto out;
	if (buf_adds(&u, "/merge_requests") < 0) {
		rc = gl_url_fail();
		goto out;
	}
	/* updated_after is "on or after" (GitLab doc/api/merge_requests.md,
	 * "List project merge requests"): overlap and de-duplicate. */
	if ((rc = gl_url_param(&u, "state", q && q->state ? q->state : "all")) <
		    0 ||
	    (rc = gl_url_param(&u, "order_by", "updated_at")) < 0 ||
	    (rc = gl_url_param(&u, "sort", "asc")) < 0 ||
	    (rc = gl_url_param_int(&u, "per_page", per_page)) < 0)
		goto out;
	if (cursor->watermark_ms > 0) {
		int64_t from = cursor->watermark_ms - overlap;

		if ((rc = forge_time_format(&t, from > 0 ? from : 0)) < 0 ||
		    (rc = gl_url_param(&u, "updated_after", t.data)) < 0)
			goto out;
	}
	rc = gl_paginate(gl, u.data, PB_PAGES_MAX, mr_item, &w, &truncated);
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

int gl_get_mr(struct forge_mr *out, struct forge *f, const char *project,
	      int64_t iid)
{
	return gl_get_mr_one(gl_of(f), project, iid, NULL, gl_mr_from_json,
			     out);
}

int gl_list_versions(struct forge_version_list *out, struct forge *f,
		     const char *project, int64_t iid)
{
	struct list_walk w = LIST_WALK(out, gl_version_from_json, "version");
	int rc = gl_paginate_mr(gl_of(f), project, iid, "/versions",
				gl_list_item, &w, "versions");

	out->items = w.items;
	out->nr = w.nr;
	if (rc)
		forge_version_list_release(out);
	return rc;
}

int gl_get_version(struct forge_version *out, struct forge *f,
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
	if ((rc = gl_url_mr(&u, gl, project, iid, suffix)) < 0)
		goto out;
	rc = gl_get_one(gl, u.data, gl_version_from_json, out);
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

/*
 * Has the acting user approved?  user_has_approved is relative to the
 * caller (lib/api/entities/merge_request_approvals.rb); approved_by names
 * everyone, for a forge that leaves the former out.  0/1, or an error
 * (with a Sudo refusal classified as by gl_call_do).
 */
static int approved_now(int *out, int *reauth, struct gitlab *gl,
			const char *project, int64_t iid)
{
	struct forge_approvals a;
	int rc;

	*out = 0;
	memset(&a, 0, sizeof(a));
	if ((rc = gl_get_mr_one(gl, project, iid, "/approvals",
				gl_approvals_from_json, &a)) < 0)
		goto out;
	if (reauth)
		*reauth = a.reauth_required;
	if (a.user_has_approved >= 0) {
		*out = a.user_has_approved;
	} else if (gl->sudo) {
		*out = forge_approvals_by(&a, gl->sudo);
	} else {
		int64_t id;

		rc = gl_self_id(&id, gl);
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
int gl_approve(enum forge_approve_result *out, struct forge *f,
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
	gl_call_init(&c, gl);
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
	if ((rc = gl_url_mr(&u, gl, project, iid, "/approve")) < 0)
		goto out;
	gl_body_begin(&w, &json);
	gl_member_strz(&w, "sha", sha);
	/* A retry after a 5xx is safe: the state check below finds an
	 * approval that landed. */
	rc = gl_write_state(gl, &c, HTTP_POST, u.data, &w);
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
	gl_call_release(&c);
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
int gl_unapprove(enum forge_approve_result *out, struct forge *f,
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
	if ((rc = gl_url_mr(&u, gl, project, iid, "/unapprove")) < 0)
		goto out;
	rc = gl_write_state(gl, NULL, HTTP_POST, u.data, NULL);
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

int gl_get_approvals(struct forge_approvals *out, struct forge *f,
		     const char *project, int64_t iid)
{
	return gl_get_mr_one(gl_of(f), project, iid, "/approvals",
			     gl_approvals_from_json, out);
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

int gl_update_labels(struct forge *f, const char *project, int64_t iid,
		     const struct strlist *add, const struct strlist *remove)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct buf json = BUF_INIT(64 * 1024);
	struct jsonw w;
	int rc;

	if ((rc = labels_check(add)) < 0 || (rc = labels_check(remove)) < 0 ||
	    (rc = gl_url_mr(&u, gl, project, iid, NULL)) < 0)
		goto out;
	/* Arrays, as GitLab's OpenAPI document types them (GitLab takes
	 * comma strings too, validators do not). */
	gl_body_begin(&w, &json);
	write_labels(&w, "add_labels", add);
	write_labels(&w, "remove_labels", remove);
	rc = gl_write_state(gl, NULL, HTTP_PUT, u.data, &w);
out:
	buf_release(&u);
	buf_release(&json);
	return rc;
}

/* The first item of a listing, converted into the struct forge_mr. */
static int first_mr_item(struct gl_call *c, const struct json_value *item,
			 void *arg)
{
	int rc = gl_convert(c, item, "merge request", gl_mr_from_json, arg);

	return rc < 0 ? rc : 1;
}

/* The open merge request from source into target, or PB_ENOTFOUND. */
static int find_open_mr(struct forge_mr *out, struct gitlab *gl,
			const char *project, const struct forge_mr_new *n)
{
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	int truncated = 0, rc;

	if ((rc = gl_url_project(&u, gl, project)) < 0)
		goto out;
	if (buf_adds(&u, "/merge_requests") < 0) {
		rc = gl_url_fail();
		goto out;
	}
	if ((rc = gl_url_param(&u, "state", "opened")) < 0 ||
	    (rc = gl_url_param(&u, "source_branch", n->source_branch)) < 0 ||
	    (rc = gl_url_param(&u, "target_branch", n->target_branch)) < 0)
		goto out;
	rc = gl_paginate(gl, u.data, 1, first_mr_item, out, &truncated);
	if (rc == 1)
		rc = 0;
	else if (rc == 0)
		rc = err_set(PB_ENOTFOUND,
			     "no open merge request from %s into %s",
			     n->source_branch, n->target_branch);
out:
	buf_release(&u);
	return rc;
}

/*
 * POST /projects/:id/merge_requests (doc/api/merge_requests.md, "Create
 * MR"; lib/api/merge_requests.rb).  GitLab refuses a second open merge
 * request from the same source into the same target with 409 "Another
 * open merge request already exists for this source branch"
 * (app/models/merge_request.rb, validate_branches), so the POST is
 * retried freely, and a 409 - the answer to a retry whose first try
 * landed, or to a call made again after a restart - is followed by a
 * look for the merge request that is open.
 */
int gl_create_mr(struct forge_mr *out, struct forge *f, const char *project,
		 const struct forge_mr_new *n)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct buf json = BUF_INIT(2 * PB_NOTE_BODY_MAX);
	struct jsonw w;
	struct gl_call c;
	int rc;

	gl_call_init(&c, gl);
	if ((rc = labels_check(n->labels)) < 0 ||
	    (rc = gl_url_project(&u, gl, project)) < 0)
		goto out;
	if (buf_adds(&u, "/merge_requests") < 0) {
		rc = gl_url_fail();
		goto out;
	}
	gl_body_begin(&w, &json);
	gl_member_strz(&w, "source_branch", n->source_branch);
	gl_member_strz(&w, "target_branch", n->target_branch);
	gl_member_strz(&w, "title", n->title);
	if (n->description)
		gl_member_strz(&w, "description", n->description);
	write_labels(&w, "labels", n->labels);
	if ((rc = gl_body_finish(&w)) < 0)
		goto out;
	rc = gl_call_do(gl, &c, HTTP_POST, u.data, &json, GL_SAFE);
	if (rc < 0 && c.resp.status == 409) {
		rc = find_open_mr(out, gl, project, n);
		goto out;
	}
	if (rc < 0)
		goto out;
	rc = gl_call_json(&c);
	if (!rc)
		rc = gl_convert(&c, c.root, "merge request", gl_mr_from_json,
				out);
out:
	gl_call_release(&c);
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

	if ((rc = gl_convert(c, item, "user", gl_user_from_json, &u)) < 0)
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
		return gl_bad_data(c);
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
		rc = gl_url_fail();
	else
		rc = gl_paginate_all(gl, &u, email_item, &w, NULL);
	if (rc == PB_EPERM) {
		log_info("forge: the token cannot read users' secondary "
			 "emails (not an administrator's)");
		rc = 0;
	}
	*out = w.found;
	buf_release(&u);
	return rc;
}

int gl_find_user_by_email(struct forge_user *out, struct forge *f,
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
		rc = gl_url_fail();
		goto out;
	}
	if ((rc = gl_url_param(&u, "search", email)) < 0 ||
	    (rc = gl_url_param_int(&u, "per_page", GL_USER_CANDIDATES_MAX)) < 0)
		goto out;
	rc = gl_paginate(gl, u.data, 1, user_item, &w, &truncated);
	if (rc)
		goto out;
	for (i = 0; !w.nr_found && i < w.nr_secondary; i++) {
		int match;

		if ((rc = secondary_match(&match, gl, w.secondary[i], email)) <
		    0)
			goto out;
		if (!match)
			continue;
		if ((rc = gl_get_user_by_id(&w.found, gl, w.secondary[i])) < 0)
			goto out;
		w.nr_found = 1;
	}
	for (i = 0; !w.nr_found && i < w.nr_candidates; i++) {
		if ((rc = gl_get_user_by_id(&cand, gl, w.candidates[i])) < 0)
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

int gl_get_user(struct forge_user *out, struct forge *f, int64_t id)
{
	if (id <= 0)
		return err_set(PB_EINVAL, "bad user id %lld", (long long)id);
	return gl_get_user_by_id(out, gl_of(f), id);
}

/*
 * GET /projects/:id: an old path answers 301 to the same URL with the id
 * (lib/api/helpers.rb url_with_project_id), which gl_call_do follows for a
 * GET; path_with_namespace is the path now (lib/api/entities/
 * project.rb).
 */
int gl_get_project(struct forge_project *out, struct forge *f,
		   const char *project)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	int rc;

	if ((rc = gl_url_project(&u, gl, project)) == 0)
		rc = gl_get_one(gl, u.data, gl_project_from_json, out);
	if (rc)
		forge_project_release(out);
	buf_release(&u);
	return rc;
}

/*
 * GET /projects/:id/repository/commits/:sha/signature (doc/api/
 * commits.md "Get signature of a commit", lib/api/commits.rb): the
 * signature GitLab found on the commit and its verification_status; an
 * unsigned commit answers 404 "GPG Signature Not Found", which is
 * PB_ENOTFOUND here like any 404.  Only a full hexadecimal id is asked:
 * :sha also takes a branch or tag name, which is not what is meant.
 */
int gl_commit_signature(struct forge_signature *out, struct forge *f,
			const char *project, const char *sha)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	size_t n = sha ? strspn(sha, "0123456789abcdef") : 0;
	int rc;

	if (!sha || n < 7 || sha[n])
		return err_set(PB_EINVAL, "not a commit id");
	if ((rc = gl_url_project(&u, gl, project)) == 0 &&
	    buf_addf(&u, "/repository/commits/%s/signature", sha) < 0)
		rc = gl_url_fail();
	if (!rc)
		rc = gl_get_one(gl, u.data, gl_signature_from_json, out);
	if (rc)
		forge_signature_release(out);
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
int gl_whoami(struct forge_whoami *out, struct forge *f)
{
	struct gitlab *gl = gl_of(f);
	struct gl_call c;
	int rc, b;

	gl_call_init(&c, gl);
	if ((rc = gl_get_as_self(gl, &c, "/user")) < 0 ||
	    (rc = gl_convert(&c, c.root, "response", gl_user_from_json,
			     &out->user)) < 0)
		goto out;
	out->admin = 0;
	if (json_kind_of(json_member(c.root, "is_admin")) == JSON_BOOL &&
	    !json_get_bool(&b, c.root, "is_admin"))
		out->admin = b;
	rc = gl_get_as_self(gl, &c, "/personal_access_tokens/self");
	if (rc == PB_ENOTFOUND || rc == PB_EPERM) {
		/* An OAuth token, or a GitLab older than 15.5: not known. */
		log_info("forge: the token's own record cannot be read: %s",
			 err_msg());
		rc = 0;
		goto out;
	}
	if (rc < 0)
		goto out;
	if ((rc = gl_strings_from_json(&out->scopes, c.root, "scopes")) < 0 ||
	    (rc = json_get_str_opt(&out->token_name, c.root, "name")) < 0 ||
	    (rc = json_get_str_opt(&out->expires_at, c.root, "expires_at")) <
		    0 ||
	    (rc = json_get_bool_opt(&b, c.root, "active")) < 0) {
		rc = gl_bad_data(&c);
		goto out;
	}
	out->active = b;
	out->token_known = 1;
out:
	gl_call_release(&c);
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
int gl_commit_email_host(char **out, struct forge *f)
{
	struct gitlab *gl = gl_of(f);
	struct gl_call c;
	int rc;

	gl_call_init(&c, gl);
	if ((rc = gl_get_as_self(gl, &c, "/application/settings")) < 0)
		goto out;
	if (json_get_str_opt(out, c.root, "commit_email_hostname") < 0) {
		rc = gl_bad_data(&c);
		goto out;
	}
	if (!*out || !**out || strchr(*out, '@') || strchr(*out, '>') ||
	    strchr(*out, ' ')) {
		free(*out);
		*out = NULL;
		rc = err_set(PB_ENOTFOUND, "no usable commit_email_hostname");
	}
out:
	gl_call_release(&c);
	return rc;
}

/* GET /projects/:id/hooks (lib/api/project_hooks.rb; Maintainer). */
int gl_list_hooks(struct forge_hook_list *out, struct forge *f,
		  const char *project)
{
	struct list_walk w = LIST_WALK(out, gl_hook_from_json, "hook");
	int rc = gl_paginate_project(gl_of(f), project, "/hooks", gl_list_item,
				     &w, "webhooks");

	out->items = w.items;
	out->nr = w.nr;
	if (rc)
		forge_hook_list_release(out);
	return rc;
}

/*
 * GET /projects/:id/merge_requests/:iid/pipelines (doc/api/
 * merge_requests.md "List merge request pipelines", lib/api/
 * merge_requests.rb): newest first, paginated.  Only the first page is
 * read: the pipelines of the revisions the bridge is waiting on are the
 * newest.
 */
int gl_list_pipelines(struct forge_pipeline_list *out, struct forge *f,
		      const char *project, int64_t iid)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct list_walk w = LIST_WALK(out, gl_pipeline_from_json, "pipeline");
	int truncated = 0, rc;

	if ((rc = gl_url_mr(&u, gl, project, iid, "/pipelines")) < 0)
		goto out;
	rc = gl_paginate(gl, u.data, 1, gl_list_item, &w, &truncated);
out:
	out->items = w.items;
	out->nr = w.nr;
	if (rc)
		forge_pipeline_list_release(out);
	buf_release(&u);
	return rc;
}

/* GET /projects/:id/pipelines/:pipeline_id/jobs (doc/api/jobs.md "List
 * pipeline jobs", lib/api/ci/jobs.rb); retried jobs are left out unless
 * include_retried is given, so each job is its latest try. */
int gl_list_jobs(struct forge_job_list *out, struct forge *f,
		 const char *project, int64_t pipeline_id)
{
	struct list_walk w = LIST_WALK(out, gl_job_from_json, "job");
	char suffix[48];
	int rc;

	snprintf(suffix, sizeof(suffix), "/pipelines/%lld/jobs",
		 (long long)pipeline_id);
	rc = gl_paginate_project(gl_of(f), project, suffix, gl_list_item, &w,
				 "jobs");
	out->items = w.items;
	out->nr = w.nr;
	if (rc)
		forge_job_list_release(out);
	return rc;
}

/* GET /projects/:id/jobs/:job_id/trace (doc/api/jobs.md "Get a log
 * file", lib/api/ci/jobs.rb): the log as plain text, 200 with an empty
 * body when there is none yet. */
int gl_job_trace(struct buf *out, struct forge *f, const char *project,
		 int64_t job_id)
{
	struct gitlab *gl = gl_of(f);
	struct buf u = BUF_INIT(PB_HTTP_URL_MAX);
	struct gl_call c;
	int rc;

	gl_call_init(&c, gl);
	if ((rc = gl_url_project(&u, gl, project)) < 0)
		goto out;
	if (buf_addf(&u, "/jobs/%lld/trace", (long long)job_id) < 0) {
		rc = gl_url_fail();
		goto out;
	}
	rc = gl_call_do(gl, &c, HTTP_GET, u.data, NULL, GL_SAFE);
	if (rc)
		goto out;
	rc = buf_add(out, c.resp.body.data, c.resp.body.len);
	if (rc) {
		buf_reset(out);
		buf_clear_error(out);
		rc = err_set(PB_ELIMIT, "the log of job %lld is too long",
			     (long long)job_id);
	}
out:
	gl_call_release(&c);
	buf_release(&u);
	return rc;
}
