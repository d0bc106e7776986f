#include "forge/forge.h"

#include "util/err.h"
#include "util/limits.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define NOT_SUPPORTED(f, op) \
	err_set(PB_ERROR, "the %s forge cannot %s", (f)->ops->name, op)

void forge_free(struct forge *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nr_pins; i++)
		free(f->pins[i].path);
	free(f->pins);
	f->pins = NULL;
	f->nr_pins = f->alloc_pins = 0;
	f->ops->free(f);
}

static struct forge_pin *pin_of(const struct forge *f, const char *path)
{
	size_t i;

	for (i = 0; i < f->nr_pins; i++)
		if (!strcasecmp(f->pins[i].path, path))
			return &f->pins[i];
	return NULL;
}

void forge_pin_project(struct forge *f, const char *path, int64_t id)
{
	struct forge_pin *p = pin_of(f, path);

	BUG_ON(id <= 0);
	if (!p) {
		ALLOC_GROW(f->pins, f->nr_pins + 1, f->alloc_pins);
		p = &f->pins[f->nr_pins++];
		p->path = xstrdup(path);
	}
	p->id = id;
}

const char *forge_pinned_path(const struct forge *f, int64_t id)
{
	size_t i;

	for (i = 0; id > 0 && i < f->nr_pins; i++)
		if (f->pins[i].id == id)
			return f->pins[i].path;
	return NULL;
}

const char *forge_project_ref(const struct forge *f, const char *project,
			      char *buf, size_t size)
{
	const struct forge_pin *p;

	if (!project || !(p = pin_of(f, project)))
		return project;
	snprintf(buf, size, "%lld", (long long)p->id);
	return buf;
}

int forge_get_project(struct forge_project *out, struct forge *f,
		      const char *project)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->get_project)
		return NOT_SUPPORTED(f, "look up projects");
	return f->ops->get_project(out, f, project);
}

void forge_project_release(struct forge_project *p)
{
	free(p->path_with_namespace);
	memset(p, 0, sizeof(*p));
}

void forge_set_pause(struct forge *f, forge_pause_fn fn, void *arg)
{
	f->pause = fn;
	f->pause_arg = arg;
}

void forge_set_guard(struct forge *f, forge_guard_fn fn, void *arg,
		     forge_guard_fn *old_fn, void **old_arg)
{
	if (old_fn)
		*old_fn = f->guard;
	if (old_arg)
		*old_arg = f->guard_arg;
	f->guard = fn;
	f->guard_arg = arg;
}

int forge_guard(struct forge *f)
{
	if (!f->guard)
		return 0;
	return f->guard(f->guard_arg);
}

void forge_pause(struct forge *f)
{
	char *msg;

	if (!f->pause || f->in_pause)
		return;
	msg = xstrdup(err_msg());
	f->in_pause = 1;
	if (f->ops->pause)
		f->ops->pause(f, f->pause, f->pause_arg);
	else
		f->pause(f->pause_arg);
	f->in_pause = 0;
	if (*msg)
		err_set(PB_ERROR, "%s", msg);
	else
		err_clear();
	free(msg);
}

int forge_act_as(struct forge *f, const char *user)
{
	if (!f->ops->act_as)
		return user ? NOT_SUPPORTED(f, "act for a user") : 0;
	return f->ops->act_as(f, user);
}

int forge_list_mrs(struct forge *f, const char *project,
		   struct forge_mr_cursor *cursor,
		   const struct forge_mr_query *q, forge_mr_fn fn, void *arg)
{
	if (!f->ops->list_mrs)
		return NOT_SUPPORTED(f, "list merge requests");
	return f->ops->list_mrs(f, project, cursor, q, fn, arg);
}

int forge_get_mr(struct forge_mr *out, struct forge *f, const char *project,
		 int64_t iid)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->get_mr)
		return NOT_SUPPORTED(f, "read a merge request");
	return f->ops->get_mr(out, f, project, iid);
}

int forge_list_versions(struct forge_version_list *out, struct forge *f,
			const char *project, int64_t iid)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->list_versions)
		return NOT_SUPPORTED(f, "list diff versions");
	return f->ops->list_versions(out, f, project, iid);
}

int forge_list_pipelines(struct forge_pipeline_list *out, struct forge *f,
			 const char *project, int64_t iid)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->list_pipelines)
		return NOT_SUPPORTED(f, "list pipelines");
	return f->ops->list_pipelines(out, f, project, iid);
}

int forge_list_jobs(struct forge_job_list *out, struct forge *f,
		    const char *project, int64_t pipeline_id)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->list_jobs)
		return NOT_SUPPORTED(f, "list a pipeline's jobs");
	return f->ops->list_jobs(out, f, project, pipeline_id);
}

int forge_job_trace(struct buf *out, struct forge *f, const char *project,
		    int64_t job_id)
{
	if (!f->ops->job_trace)
		return NOT_SUPPORTED(f, "give a job's log");
	return f->ops->job_trace(out, f, project, job_id);
}

int forge_commit_signature(struct forge_signature *out, struct forge *f,
			   const char *project, const char *sha)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->commit_signature)
		return NOT_SUPPORTED(f, "verify commit signatures");
	return f->ops->commit_signature(out, f, project, sha);
}

void forge_signature_release(struct forge_signature *s)
{
	free(s->type);
	free(s->status);
	free(s->name);
	free(s->email);
	free(s->key);
	memset(s, 0, sizeof(*s));
}

int forge_get_version(struct forge_version *out, struct forge *f,
		      const char *project, int64_t iid, int64_t version_id)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->get_version)
		return NOT_SUPPORTED(f, "read a diff version");
	return f->ops->get_version(out, f, project, iid, version_id);
}

int forge_list_notes(struct forge_note_list *out, struct forge *f,
		     const char *project, int64_t iid,
		     const struct forge_note_query *q)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->list_notes)
		return NOT_SUPPORTED(f, "list notes");
	return f->ops->list_notes(out, f, project, iid, q);
}

int forge_create_note(struct forge_note *out, struct forge *f,
		      const char *project, int64_t iid, const char *body,
		      const char *marker_key)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->create_note)
		return NOT_SUPPORTED(f, "post notes");
	return f->ops->create_note(out, f, project, iid, body, marker_key);
}

int forge_list_discussions(struct forge_discussion_list *out, struct forge *f,
			   const char *project, int64_t iid)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->list_discussions)
		return NOT_SUPPORTED(f, "list discussions");
	return f->ops->list_discussions(out, f, project, iid);
}

int forge_create_discussion(struct forge_discussion *out, struct forge *f,
			    const char *project, int64_t iid, const char *body,
			    const struct forge_position *pos,
			    const char *marker_key)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->create_discussion)
		return NOT_SUPPORTED(f, "start discussions");
	return f->ops->create_discussion(out, f, project, iid, body, pos,
					 marker_key);
}

int forge_reply_discussion(struct forge_note *out, struct forge *f,
			   const char *project, int64_t iid,
			   const char *discussion_id, const char *body,
			   const char *marker_key)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->reply_discussion)
		return NOT_SUPPORTED(f, "reply to discussions");
	return f->ops->reply_discussion(out, f, project, iid, discussion_id,
					body, marker_key);
}

int forge_resolve_discussion(struct forge *f, const char *project, int64_t iid,
			     const char *discussion_id, int resolved)
{
	if (!f->ops->resolve_discussion)
		return NOT_SUPPORTED(f, "resolve discussions");
	return f->ops->resolve_discussion(f, project, iid, discussion_id,
					  resolved);
}

int forge_find_note_by_marker(struct forge_note *out, char **out_discussion_id,
			      struct forge *f, const char *project, int64_t iid,
			      const char *discussion_id, const char *marker_key)
{
	memset(out, 0, sizeof(*out));
	if (out_discussion_id)
		*out_discussion_id = NULL;
	if (!f->ops->find_note_by_marker)
		return NOT_SUPPORTED(f, "search notes");
	return f->ops->find_note_by_marker(out, out_discussion_id, f, project,
					   iid, discussion_id, marker_key);
}

int forge_approve(enum forge_approve_result *out, struct forge *f,
		  const char *project, int64_t iid, const char *sha)
{
	*out = FORGE_APPROVE_DONE;
	if (!f->ops->approve)
		return NOT_SUPPORTED(f, "approve");
	return f->ops->approve(out, f, project, iid, sha);
}

int forge_unapprove(enum forge_approve_result *out, struct forge *f,
		    const char *project, int64_t iid)
{
	*out = FORGE_APPROVE_DONE;
	if (!f->ops->unapprove)
		return NOT_SUPPORTED(f, "withdraw approvals");
	return f->ops->unapprove(out, f, project, iid);
}

int forge_get_approvals(struct forge_approvals *out, struct forge *f,
			const char *project, int64_t iid)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->get_approvals)
		return NOT_SUPPORTED(f, "read approvals");
	return f->ops->get_approvals(out, f, project, iid);
}

int forge_create_mr(struct forge_mr *out, struct forge *f, const char *project,
		    const struct forge_mr_new *mr)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->create_mr)
		return NOT_SUPPORTED(f, "open merge requests");
	if (!mr->source_branch || !*mr->source_branch || !mr->target_branch ||
	    !*mr->target_branch || !mr->title || !*mr->title)
		return err_set(PB_EINVAL, "a merge request needs its branches "
					  "and a title");
	return f->ops->create_mr(out, f, project, mr);
}

int forge_update_labels(struct forge *f, const char *project, int64_t iid,
			const struct strlist *add, const struct strlist *remove)
{
	if (!f->ops->update_labels)
		return NOT_SUPPORTED(f, "change labels");
	if ((!add || !add->nr) && (!remove || !remove->nr))
		return err_set(PB_EINVAL, "no labels to add or remove");
	return f->ops->update_labels(f, project, iid, add, remove);
}

int forge_find_user_by_email(struct forge_user *out, struct forge *f,
			     const char *email)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->find_user_by_email)
		return NOT_SUPPORTED(f, "look up users");
	return f->ops->find_user_by_email(out, f, email);
}

int forge_get_user(struct forge_user *out, struct forge *f, int64_t id)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->get_user)
		return NOT_SUPPORTED(f, "look up users");
	return f->ops->get_user(out, f, id);
}

int forge_whoami(struct forge_whoami *out, struct forge *f)
{
	memset(out, 0, sizeof(*out));
	out->admin = out->active = -1;
	if (!f->ops->whoami)
		return NOT_SUPPORTED(f, "say who the token is");
	return f->ops->whoami(out, f);
}

int forge_commit_email_host(char **out, struct forge *f)
{
	*out = NULL;
	if (!f->ops->commit_email_host)
		return NOT_SUPPORTED(f, "give its no-reply host");
	return f->ops->commit_email_host(out, f);
}

int forge_list_hooks(struct forge_hook_list *out, struct forge *f,
		     const char *project)
{
	memset(out, 0, sizeof(*out));
	if (!f->ops->list_hooks)
		return NOT_SUPPORTED(f, "list webhooks");
	return f->ops->list_hooks(out, f, project);
}

void forge_hook_list_release(struct forge_hook_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++) {
		free(l->items[i].url);
		free(l->items[i].alert_status);
		free(l->items[i].disabled_until);
	}
	free(l->items);
	memset(l, 0, sizeof(*l));
}

/*
 * GitLab disables a project hook that keeps failing: for a while after
 * the 4th failure in a row (disabled_until, doubling from a minute to a
 * day), for good after the 40th, until someone re-enables it in Settings
 * > Webhooks (app/models/concerns/web_hooks/auto_disabling.rb,
 * doc/user/project/integrations/webhooks.md "Auto-disabled webhooks").
 * Nothing reaches the bridge meanwhile; polling still does.  The URL is
 * shown without its query, which may hold a secret.
 */
int forge_hooks_problem(struct buf *out, struct forge *f, const char *project)
{
	struct forge_hook_list l;
	char url[PB_LOG_QUOTE_MAX], until[64];
	size_t i;
	int rc, temp;

	rc = forge_list_hooks(&l, f, project);
	for (i = 0; !rc && i < l.nr; i++) {
		const struct forge_hook *h = &l.items[i];

		if (!h->alert_status ||
		    (!h->merge_requests_events && !h->note_events))
			continue;
		temp = !strcmp(h->alert_status, "temporarily_disabled");
		if (!temp && strcmp(h->alert_status, "disabled"))
			continue;
		printable_copy(url, sizeof(url), h->url ? h->url : "",
			       h->url ? strcspn(h->url, "?#") : 0);
		printable_copy(until, sizeof(until),
			       h->disabled_until ? h->disabled_until : "",
			       h->disabled_until ? strlen(h->disabled_until) :
						   0);
		rc = buf_addf(out,
			      "%sGitLab disabled the webhook %s (id %lld) "
			      "after %s failures in a row%s%s%s: re-enable it "
			      "in Settings > Webhooks; until then the bridge "
			      "falls back to polling",
			      out->len ? "; " : "", url, (long long)h->id,
			      temp ? "4 or more" : "40", temp ? " (until " : "",
			      temp ? until : "",
			      temp ? ", then it tries again)" : "");
		if (rc) {
			/* no room for more: the hooks named so far stand */
			buf_clear_error(out);
			rc = 0;
			break;
		}
	}
	forge_hook_list_release(&l);
	return rc;
}

void forge_whoami_release(struct forge_whoami *w)
{
	forge_user_release(&w->user);
	strlist_release(&w->scopes);
	free(w->expires_at);
	free(w->token_name);
	memset(w, 0, sizeof(*w));
}

enum forge_sudo_problem forge_sudo_problem(const struct forge *f)
{
	return f->ops->sudo_problem ? f->ops->sudo_problem(f) : FORGE_SUDO_OK;
}

enum forge_token_problem forge_token_problem(const struct forge *f)
{
	return f->ops->token_problem ? f->ops->token_problem(f) :
				       FORGE_TOKEN_OK;
}

const char *forge_token_problem_text(enum forge_token_problem p)
{
	switch (p) {
	case FORGE_TOKEN_EXPIRED:
		return "has expired";
	case FORGE_TOKEN_REVOKED:
		return "was revoked";
	case FORGE_TOKEN_INVALID:
		return "is refused as invalid";
	case FORGE_TOKEN_UNKNOWN:
		return "was not accepted: GitLab does not know it (deleted, "
		       "mistyped, or from another instance)";
	case FORGE_TOKEN_OK:
		break;
	}
	return "";
}

const char *forge_sudo_problem_text(enum forge_sudo_problem p)
{
	switch (p) {
	case FORGE_SUDO_NOT_ADMIN:
		return "the forge token cannot act as other users: GitLab "
		       "answered \"Must be admin to use sudo\"; approvals by "
		       "mail need an administrator's token with the sudo "
		       "scope (and the admin_mode scope where Admin Mode is "
		       "on), which gitlab.com does not give";
	case FORGE_SUDO_NO_SCOPE:
		return "the forge token cannot act as other users: it is an "
		       "administrator's but lacks the sudo scope; make a "
		       "token with the api and sudo scopes";
	case FORGE_SUDO_NO_USER:
		return "no forge user of that name or id";
	case FORGE_SUDO_OK:
		break;
	}
	return "";
}

int forge_approvals_by(const struct forge_approvals *a, const char *user)
{
	int64_t id;
	size_t i;

	if (!user)
		return 0;
	for (i = 0; i < a->nr_approved_by; i++) {
		const struct forge_user *u = &a->approved_by[i];

		if (mem_to_i64(user, strlen(user), 1, INT64_MAX, &id) &&
		    u->id == id)
			return 1;
		if (u->username && !strcasecmp(u->username, user))
			return 1;
	}
	return 0;
}

int forge_position_set_line(struct forge_position *p, enum forge_line_kind k,
			    int64_t old_line, int64_t new_line)
{
	switch (k) {
	case FORGE_LINE_ADDED:
		if (new_line <= 0)
			return err_set(PB_EINVAL, "an added line needs its "
						  "new line number");
		p->old_line = 0;
		p->new_line = new_line;
		return 0;
	case FORGE_LINE_REMOVED:
		if (old_line <= 0)
			return err_set(PB_EINVAL, "a removed line needs its "
						  "old line number");
		p->old_line = old_line;
		p->new_line = 0;
		return 0;
	case FORGE_LINE_CONTEXT:
		if (old_line <= 0 || new_line <= 0)
			return err_set(PB_EINVAL, "a context line needs both "
						  "line numbers");
		p->old_line = old_line;
		p->new_line = new_line;
		return 0;
	}
	BUG("bad line kind %d", (int)k);
}

/*
 * Release functions.
 */

void forge_user_release(struct forge_user *u)
{
	free(u->username);
	free(u->name);
	free(u->state);
	free(u->email);
	free(u->public_email);
	memset(u, 0, sizeof(*u));
}

void forge_mr_release(struct forge_mr *mr)
{
	size_t i;

	free(mr->title);
	free(mr->description);
	free(mr->state);
	free(mr->created_at);
	free(mr->updated_at);
	free(mr->source_branch);
	free(mr->target_branch);
	free(mr->sha);
	free(mr->detailed_merge_status);
	free(mr->web_url);
	strlist_release(&mr->labels);
	forge_user_release(&mr->author);
	for (i = 0; i < mr->nr_reviewers; i++)
		forge_user_release(&mr->reviewers[i]);
	free(mr->reviewers);
	free(mr->base_sha);
	free(mr->start_sha);
	free(mr->head_sha);
	free(mr->merge_commit_sha);
	free(mr->squash_commit_sha);
	memset(mr, 0, sizeof(*mr));
}

void forge_commit_release(struct forge_commit *c)
{
	free(c->id);
	free(c->short_id);
	free(c->title);
	free(c->message);
	free(c->author_name);
	free(c->author_email);
	free(c->authored_date);
	free(c->committer_name);
	free(c->committer_email);
	free(c->committed_date);
	strlist_release(&c->parent_ids);
	memset(c, 0, sizeof(*c));
}

void forge_diff_file_release(struct forge_diff_file *d)
{
	free(d->old_path);
	free(d->new_path);
	free(d->a_mode);
	free(d->b_mode);
	free(d->diff);
	memset(d, 0, sizeof(*d));
}

void forge_version_release(struct forge_version *v)
{
	size_t i;

	free(v->head_sha);
	free(v->base_sha);
	free(v->start_sha);
	free(v->created_at);
	free(v->state);
	free(v->real_size);
	free(v->patch_id_sha);
	for (i = 0; i < v->nr_commits; i++)
		forge_commit_release(&v->commits[i]);
	free(v->commits);
	for (i = 0; i < v->nr_diffs; i++)
		forge_diff_file_release(&v->diffs[i]);
	free(v->diffs);
	memset(v, 0, sizeof(*v));
}

void forge_pipeline_release(struct forge_pipeline *p)
{
	free(p->sha);
	free(p->ref);
	free(p->status);
	free(p->web_url);
	free(p->updated_at);
	memset(p, 0, sizeof(*p));
}

void forge_pipeline_list_release(struct forge_pipeline_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		forge_pipeline_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

void forge_job_release(struct forge_job *j)
{
	free(j->name);
	free(j->stage);
	free(j->status);
	free(j->web_url);
	memset(j, 0, sizeof(*j));
}

void forge_job_list_release(struct forge_job_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		forge_job_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

void forge_version_list_release(struct forge_version_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		forge_version_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

void forge_position_release(struct forge_position *p)
{
	free(p->base_sha);
	free(p->start_sha);
	free(p->head_sha);
	free(p->old_path);
	free(p->new_path);
	memset(p, 0, sizeof(*p));
}

void forge_note_release(struct forge_note *n)
{
	size_t i;

	for (i = 0; i < n->nr_suggestions; i++) {
		free(n->suggestions[i].from_content);
		free(n->suggestions[i].to_content);
	}
	free(n->suggestions);
	free(n->type);
	free(n->body);
	forge_user_release(&n->author);
	forge_user_release(&n->resolved_by);
	free(n->resolved_at);
	free(n->created_at);
	free(n->updated_at);
	forge_position_release(&n->position);
	memset(n, 0, sizeof(*n));
}

void forge_note_list_release(struct forge_note_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		forge_note_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

void forge_discussion_release(struct forge_discussion *d)
{
	size_t i;

	free(d->id);
	for (i = 0; i < d->nr_notes; i++)
		forge_note_release(&d->notes[i]);
	free(d->notes);
	memset(d, 0, sizeof(*d));
}

void forge_discussion_list_release(struct forge_discussion_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		forge_discussion_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

void forge_approvals_release(struct forge_approvals *a)
{
	size_t i;

	for (i = 0; i < a->nr_approved_by; i++)
		forge_user_release(&a->approved_by[i]);
	free(a->approved_by);
	memset(a, 0, sizeof(*a));
}

/*
 * MR cursor.
 */

void forge_mr_cursor_init(struct forge_mr_cursor *c)
{
	memset(c, 0, sizeof(*c));
}

void forge_mr_cursor_release(struct forge_mr_cursor *c)
{
	free(c->seen);
	memset(c, 0, sizeof(*c));
}

int forge_mr_cursor_has(const struct forge_mr_cursor *c, int64_t iid,
			int64_t updated_ms)
{
	size_t i;

	for (i = 0; i < c->nr; i++)
		if (c->seen[i].iid == iid &&
		    c->seen[i].updated_ms == updated_ms)
			return 1;
	return 0;
}

void forge_mr_cursor_add(struct forge_mr_cursor *c, int64_t iid,
			 int64_t updated_ms)
{
	if (forge_mr_cursor_has(c, iid, updated_ms))
		return;
	ALLOC_GROW(c->seen, c->nr + 1, c->alloc);
	c->seen[c->nr].iid = iid;
	c->seen[c->nr].updated_ms = updated_ms;
	c->nr++;
}

void forge_mr_cursor_prune(struct forge_mr_cursor *c, int64_t overlap_ms)
{
	int64_t keep_from = c->watermark_ms - overlap_ms;
	size_t i, j = 0;

	for (i = 0; i < c->nr; i++)
		if (c->seen[i].updated_ms >= keep_from)
			c->seen[j++] = c->seen[i];
	c->nr = j;
}

/*
 * Markers.
 */

static int is_key_char(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' ||
	       c == '-';
}

int forge_marker_key_check(const char *key)
{
	size_t len, i;

	if (!key)
		return err_set(PB_EINVAL, "no marker key");
	len = strlen(key);
	if (len == 0 || len > PB_MARKER_KEY_MAX)
		return err_set(PB_EINVAL, "marker key must have 1..%d bytes",
			       PB_MARKER_KEY_MAX);
	for (i = 0; i < len; i++)
		if (!is_key_char((unsigned char)key[i]))
			return err_set(PB_EINVAL, "bad byte in marker key");
	/* "--" inside an HTML comment is not allowed (HTML 13.2.5.x). */
	if (strstr(key, "--"))
		return err_set(PB_EINVAL, "marker key holds \"--\"");
	return 0;
}

int forge_marker_format(struct buf *out, const char *key)
{
	int rc = forge_marker_key_check(key);

	if (rc < 0)
		return rc;
	if (buf_addf(out, "<!-- patchbridge:%s -->", key) < 0)
		return err_set(PB_ELIMIT, "no room for the marker");
	return 0;
}

int forge_body_with_marker(struct buf *out, const char *body, const char *key)
{
	size_t start = out->len;
	int rc = forge_marker_key_check(key);

	if (rc < 0)
		return rc;
	if (buf_adds(out, body) < 0 || buf_adds(out, "\n\n") < 0 ||
	    forge_marker_format(out, key) < 0) {
		buf_truncate(out, start);
		return err_set(PB_ELIMIT, "note body exceeds %zu bytes",
			       out->max);
	}
	return 0;
}

/*
 * Only where and as forge_body_with_marker() writes it: the last thing in
 * the note, after a blank line (or alone, for an empty body), in exactly
 * the form forge_marker_format() gives.  The marker text is plain text
 * anyone can paste into a comment - at its start, in a code block, in a
 * quote - and a note that merely holds it is somebody's comment, not the
 * bridge's.  Line ends and blanks after it are allowed: an editor adds a
 * line end when a person edits the bridge's note.
 */
int forge_marker_trailing(char key[PB_MARKER_KEY_MAX + 1], const char *text)
{
	static const char open[] = "<!-- patchbridge:", close[] = " -->";
	size_t end, k, i, start;

	key[0] = '\0';
	if (!text)
		return 0;
	end = strlen(text);
	while (end && (text[end - 1] == '\n' || text[end - 1] == '\r' ||
		       text[end - 1] == ' ' || text[end - 1] == '\t'))
		end--;
	if (end < sizeof(close) - 1 ||
	    memcmp(text + end - (sizeof(close) - 1), close, sizeof(close) - 1))
		return 0;
	end -= sizeof(close) - 1;
	/* the last opening: a key holds no blank, so no earlier one can
	 * begin this marker */
	for (k = end;; k--) {
		if (k < sizeof(open) - 1 || end - k > PB_MARKER_KEY_MAX)
			return 0;
		if (!memcmp(text + k - (sizeof(open) - 1), open,
			    sizeof(open) - 1))
			break;
	}
	/* the key as forge_marker_key_check() has it, without its message */
	if (k == end || memmem(text + k, end - k, "--", 2))
		return 0;
	for (i = k; i < end; i++)
		if (!is_key_char((unsigned char)text[i]))
			return 0;
	/* a blank line before it, or nothing: "body\n\nmarker" */
	start = k - (sizeof(open) - 1);
	if (start != 0 &&
	    (start < 2 || text[start - 1] != '\n' || text[start - 2] != '\n'))
		return 0;
	memcpy(key, text + k, end - k);
	key[end - k] = '\0';
	return 1;
}

int forge_marker_in(const char *text, const char *key)
{
	char found[PB_MARKER_KEY_MAX + 1];

	return key && forge_marker_trailing(found, text) && !strcmp(found, key);
}

/*
 * Time.  Days from the civil date (proleptic Gregorian), after Howard
 * Hinnant's "chrono-Compatible Low-Level Date Algorithms".
 */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int scan_num(struct scan *s, size_t digits, uint64_t max, uint64_t *out)
{
	if (scan_left(s) < digits)
		return 0;
	if (!mem_to_u64(s->p, digits, max, out))
		return 0;
	s->p += digits;
	return 1;
}

int forge_time_parse(int64_t *out_ms, const char *str)
{
	uint64_t y, mo, d, h, mi, sec, oh = 0, om = 0, frac = 0;
	int64_t ms, sign = 0;
	size_t nfrac = 0;
	struct scan s;

	*out_ms = 0;
	if (!str)
		return err_set(PB_EINVAL, "no timestamp");
	scan_init(&s, str, strlen(str));
	if (!scan_num(&s, 4, 9999, &y) || !scan_char(&s, '-') ||
	    !scan_num(&s, 2, 12, &mo) || !scan_char(&s, '-') ||
	    !scan_num(&s, 2, 31, &d) ||
	    !(scan_char(&s, 'T') || scan_char(&s, 't') || scan_char(&s, ' ')) ||
	    !scan_num(&s, 2, 23, &h) || !scan_char(&s, ':') ||
	    !scan_num(&s, 2, 59, &mi) || !scan_char(&s, ':') ||
	    !scan_num(&s, 2, 60, &sec) || mo == 0 || d == 0)
		goto bad;
	if (scan_char(&s, '.')) {
		while (scan_peek(&s) >= '0' && scan_peek(&s) <= '9') {
			if (nfrac < 3)
				frac = frac * 10 + (uint64_t)(*s.p - '0');
			nfrac++;
			s.p++;
		}
		if (nfrac == 0)
			goto bad;
		for (; nfrac < 3; nfrac++)
			frac *= 10;
	}
	scan_blanks(&s);
	if (scan_char(&s, 'Z') || scan_char(&s, 'z') || scan_lit(&s, "UTC")) {
		sign = 0;
	} else if (scan_char(&s, '+')) {
		sign = 1;
	} else if (scan_char(&s, '-')) {
		sign = -1;
	} else {
		goto bad;
	}
	if (sign) {
		if (!scan_num(&s, 2, 23, &oh))
			goto bad;
		scan_char(&s, ':');
		if (!scan_num(&s, 2, 59, &om))
			goto bad;
	}
	if (!scan_eof(&s))
		goto bad;

	ms = days_from_civil((int64_t)y, (unsigned)mo, (unsigned)d) * 86400;
	ms += (int64_t)(h * 3600 + mi * 60 + sec);
	ms -= sign * (int64_t)(oh * 3600 + om * 60);
	*out_ms = ms * 1000 + (int64_t)frac;
	return 0;
bad:
	return err_set(PB_EINVAL, "bad timestamp");
}

int forge_token_days_left(int64_t *out, const char *expires_at, int64_t now)
{
	uint64_t y, mo, d;
	struct scan s;

	*out = 0;
	if (!expires_at)
		return err_set(PB_EINVAL, "no expiry date");
	scan_init(&s, expires_at, strlen(expires_at));
	if (!scan_num(&s, 4, 9999, &y) || !scan_char(&s, '-') ||
	    !scan_num(&s, 2, 12, &mo) || !scan_char(&s, '-') ||
	    !scan_num(&s, 2, 31, &d) || mo == 0 || d == 0 || !scan_eof(&s))
		return err_set(PB_EINVAL, "bad expiry date");
	/* Expirable#expired? (app/models/concerns/expirable.rb) compares
	 * the date with now: expired from the start of that day. */
	*out = days_from_civil((int64_t)y, (unsigned)mo, (unsigned)d) -
	       (now >= 0 ? now : now - 86399) / 86400;
	return 0;
}

int forge_time_format(struct buf *out, int64_t ms)
{
	time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	struct tm tm;
	int frac = (int)(ms - (int64_t)t * 1000);

	if (!gmtime_r(&t, &tm))
		return err_set(PB_EINVAL, "time out of range");
	if (buf_addf(out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, frac) < 0)
		return err_set(PB_ELIMIT, "no room for a timestamp");
	return 0;
}
