/*
 * forge - what patchbridge needs from a code forge, independent of which.
 *
 * A struct forge is a handle with a table of operations (struct
 * forge_ops); gitlab.h constructs the GitLab one, and another forge can be
 * added behind the same table.  Callers use the forge_* wrappers below,
 * which also report an operation a forge does not offer.
 *
 * Data: plain C structs.  Every string in them is owned by the struct
 * (malloc'd, NUL-terminated, NULL when the forge sent nothing or null) and
 * freed by its _release function, which leaves the struct zeroed.  Times
 * are kept as the forge sent them (ISO 8601) and, where they matter for
 * ordering, also as milliseconds since the epoch.  Lists come as
 * {items, nr} structs with their own _release.
 *
 * Projects are named by numeric id ("42") or full path ("group/project");
 * the implementation encodes them.  A path pinned to its id
 * (forge_pin_project()) is sent as the id: a project keeps its id when it
 * is renamed or moved to another group, while its old path only redirects
 * reads (GitLab answers every write on it with 405, lib/api/helpers.rb
 * find_project!).  MRs are named by their iid.
 *
 * Acting for a user: forge_act_as() makes every following call run as
 * that user (GitLab: the Sudo header, which needs an administrator's token
 * with the sudo scope, and admin_mode where Admin Mode is on) until it is
 * called again with NULL.  When the forge refuses to let the token act as
 * anyone, calls fail with PB_EPERM and forge_sudo_problem() says why: an
 * operator's problem, not the user's.
 *
 * A token the forge no longer takes (expired, revoked, or one it does not
 * know at all) is the operator's problem too, never the request's: every
 * call then fails with PB_ETEMP, and forge_token_problem() says why until
 * a call succeeds again.
 *
 * Idempotence: writes that are not idempotent (notes, discussions,
 * replies) take a marker key; the body then carries a hidden marker, and
 * after a lost response the implementation looks for the marker before
 * posting again, so each action lands at most once (DESIGN.md rule 3).
 *
 * Errors: 0 or a negative PB_* code with err_msg() set; the forge's own
 * error text (e.g. GitLab's "message") is quoted in it.  PB_ENOTFOUND (no
 * such project/MR/user, or no access), PB_EPERM (refused), PB_EINVAL (the
 * forge rejected our input, or sent malformed data), PB_ETEMP (the forge
 * is unreachable or failing; retry later), PB_ELIMIT (a response over a
 * cap, or a wait longer than allowed).  On error, out parameters are left
 * released (empty), except where noted.
 *
 * Threads: a handle belongs to one thread at a time.
 */
#ifndef PB_FORGE_FORGE_H
#define PB_FORGE_FORGE_H

#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

struct forge_user {
	int64_t id;
	char *username;
	char *name;
	char *state;
	char *email; /* only when the token may see it (admin) */
	char *public_email; /* when the forge shows it */
};

struct forge_mr {
	int64_t id; /* global id */
	int64_t iid; /* per-project number */
	int64_t project_id;
	int64_t source_project_id;
	int64_t target_project_id;
	char *title;
	char *description;
	char *state; /* opened, closed, locked, merged */
	char *created_at;
	char *updated_at;
	int64_t updated_ms;
	char *source_branch;
	char *target_branch;
	char *sha; /* head of the latest version; may be NULL */
	char *detailed_merge_status;
	char *web_url;
	int draft;
	struct strlist labels;
	struct forge_user author;
	/* Assigned reviewers, as the MR shows them (no emails). */
	struct forge_user *reviewers;
	size_t nr_reviewers;
	/* Details only (NULL in listings, and while the MR is preparing). */
	char *base_sha;
	char *start_sha;
	char *head_sha;
	/*
	 * How a merged MR landed (NULL / 0 before).  merge_commit_sha: the
	 * merge commit; NULL for a fast-forward merge, which makes none.
	 * squash_commit_sha: the one commit a squash made of the series.
	 * squash: squash_on_merge (the project's squash option applied),
	 * else the MR's own squash flag.
	 */
	char *merge_commit_sha;
	char *squash_commit_sha;
	int squash;
	/* Only project members may comment (app/policies/
	 * issuable_policy.rb); null reads as 0. */
	int discussion_locked;
};

/* A diff version (GitLab's merge request diff), the bridge's revision. */
struct forge_commit {
	char *id;
	char *short_id;
	char *title;
	char *message;
	char *author_name;
	char *author_email;
	char *authored_date;
	char *committer_name;
	char *committer_email;
	char *committed_date;
	struct strlist parent_ids;
};

struct forge_diff_file {
	char *old_path;
	char *new_path;
	char *a_mode;
	char *b_mode;
	char *diff; /* hunks, without the "diff --git" header */
	int new_file;
	int renamed_file;
	int deleted_file;
	int generated_file;
};

struct forge_version {
	int64_t id;
	char *head_sha;
	char *base_sha;
	char *start_sha;
	char *created_at;
	char *state; /* collected, overflow, without_files, … */
	char *real_size; /* a string ("1000+") */
	char *patch_id_sha; /* may be NULL while the forge computes it */
	/* forge_get_version() only. */
	struct forge_commit *commits;
	size_t nr_commits;
	struct forge_diff_file *diffs;
	size_t nr_diffs;
};

/*
 * A project webhook (GitLab: GET /projects/:id/hooks, lib/api/entities/
 * project_hook.rb).  alert_status is "executable", "temporarily_disabled"
 * (disabled_until set) or "disabled" (app/models/concerns/web_hooks/
 * auto_disabling.rb); NULL when the forge does not say.
 */
struct forge_hook {
	int64_t id;
	char *url;
	char *alert_status;
	char *disabled_until;
	int merge_requests_events;
	int note_events;
};

struct forge_hook_list {
	struct forge_hook *items;
	size_t nr;
};

/*
 * A pipeline of an MR (GitLab: GET /projects/:id/merge_requests/:iid/
 * pipelines, doc/api/merge_requests.md "List merge request pipelines",
 * lib/api/entities/ci/pipeline_basic.rb).  status is one of GitLab's
 * (app/models/concerns/ci/has_status.rb): created, waiting_for_resource,
 * preparing, pending, running, success, failed, canceled, skipped,
 * manual, scheduled.
 */
struct forge_pipeline {
	int64_t id;
	char *sha;
	char *ref;
	char *status;
	char *web_url; /* may be NULL */
	char *updated_at; /* may be NULL */
};

struct forge_pipeline_list {
	struct forge_pipeline *items; /* newest first, as the forge gives */
	size_t nr;
};

/*
 * A job of a pipeline (GET /projects/:id/pipelines/:pipeline_id/jobs,
 * doc/api/jobs.md "List pipeline jobs", lib/api/entities/ci/job_basic.rb).
 * status as the pipeline's; allow_failure: a failure that does not fail
 * the pipeline.
 */
struct forge_job {
	int64_t id;
	char *name;
	char *stage;
	char *status;
	char *web_url; /* the job's page, which shows its log; may be NULL */
	int allow_failure;
};

struct forge_job_list {
	struct forge_job *items;
	size_t nr;
};

/*
 * A commit's signature as the forge verified it (GitLab: GET
 * /projects/:id/repository/commits/:sha/signature, doc/api/commits.md
 * "Get signature of a commit"; lib/api/entities/commit_signature.rb and
 * the gpg_commit_signature.rb, ssh_signature.rb and x509_signature.rb it
 * merges in).  Whose key it is: for PGP the key's user name and email,
 * for SSH the key's title (the key belongs to a forge user; a verified
 * SSH signature means the committer's email is one of that user's), for
 * X.509 the certificate's email and subject.
 */
struct forge_signature {
	char *type; /* "PGP", "SSH", "X509" */
	char *status; /* "verified", "unverified", "other_user", ... */
	char *name; /* PGP: gpg_key_user_name; NULL otherwise */
	char *email; /* PGP: gpg_key_user_email; X509: the certificate's */
	char *key; /* PGP: primary key id; SSH: key title; X509: subject */
};

struct forge_version_list {
	struct forge_version *items; /* newest first */
	size_t nr;
};

/*
 * A position in a diff, in file-line terms.  Lines are 1-based; 0 means
 * absent.  GitLab's rule: an added line has new_line only, a removed line
 * old_line only, a context line both (forge_position_set_line()).
 *
 * When the forge returns one, it owns the strings.  A caller building one
 * for forge_create_discussion() may point them at its own strings (the
 * call does not modify or free them) and must not release it.
 */
struct forge_position {
	char *base_sha;
	char *start_sha;
	char *head_sha;
	char *old_path;
	char *new_path;
	int64_t old_line;
	int64_t new_line;
};

enum forge_line_kind {
	FORGE_LINE_ADDED,
	FORGE_LINE_REMOVED,
	FORGE_LINE_CONTEXT,
};

/* Set old_line/new_line per the rule above; PB_EINVAL if a number needed
 * for kind is missing (<= 0). */
int forge_position_set_line(struct forge_position *p, enum forge_line_kind k,
			    int64_t old_line, int64_t new_line);

/*
 * A change suggested in a diff note, as the forge stored it when the note
 * was made (GitLab: lib/api/entities/suggestion.rb; the lines and their
 * text from app/models/concerns/suggestible.rb): the new file's lines
 * from_line..to_line, which read from_content, are to read to_content.
 */
struct forge_suggestion {
	int64_t from_line;
	int64_t to_line;
	char *from_content;
	char *to_content;
	int applied;
};

/* Suggestions read of one note; a note holds few (GitLab makes one per
 * suggestion block). */
#define FORGE_SUGGESTIONS_MAX 64

struct forge_note {
	int64_t id;
	char *type; /* NULL (plain), "DiscussionNote", "DiffNote" */
	char *body;
	struct forge_user author;
	char *created_at;
	char *updated_at;
	int system;
	/*
	 * Visible only to members (GitLab's internal notes, formerly
	 * "confidential").  1 too when the forge did not say (an older
	 * forge, a null or mistyped field): a note whose visibility is not
	 * known is treated as internal.
	 */
	int internal;
	int resolvable;
	int resolved;
	/* Who resolved it and when (GitLab's resolved_by, resolved_at on
	 * a resolvable note, doc/api/discussions.md); id 0 and NULL while
	 * it is open, or when the forge did not say. */
	struct forge_user resolved_by;
	char *resolved_at;
	int has_position;
	struct forge_position position;
	/* A diff note's suggestions, in the order of the note's suggestion
	 * blocks; none when the forge gave none it could read. */
	struct forge_suggestion *suggestions;
	size_t nr_suggestions;
};

struct forge_note_list {
	struct forge_note *items;
	size_t nr;
};

struct forge_discussion {
	char *id; /* 40 hex characters on GitLab */
	int individual_note;
	struct forge_note *notes;
	size_t nr_notes;
};

struct forge_discussion_list {
	struct forge_discussion *items;
	size_t nr;
};

struct forge_approvals {
	int approved; /* the MR counts as approved */
	/* The (acting) user approved: 1, 0, or -1 when the forge did not
	 * say (then look for the user in approved_by). */
	int user_has_approved;
	int64_t approvals_required; /* -1 when the forge does not say */
	int64_t approvals_left; /* -1 when the forge does not say */
	/* The project wants approvers to re-authenticate (a password) to
	 * approve, which no caller of the API can do for them. */
	int reauth_required;
	struct forge_user *approved_by;
	size_t nr_approved_by;
};

/* Outcome of approve/unapprove. */
enum forge_approve_result {
	FORGE_APPROVE_DONE, /* state changed now */
	FORGE_APPROVE_ALREADY, /* it was already so */
	FORGE_APPROVE_SHA_MISMATCH, /* only with PB_EINVAL: MR moved on */
	FORGE_APPROVE_REFUSED, /* only with PB_EPERM: the user may not */
	/* only with PB_EPERM: the token may not act as the user at all
	 * (forge_sudo_problem() says why); nothing about the user */
	FORGE_APPROVE_NO_SUDO,
	FORGE_APPROVE_NO_USER, /* only with PB_ENOTFOUND: no such user */
	/* only with PB_EPERM: the project requires re-authentication to
	 * approve; nothing about the user */
	FORGE_APPROVE_REAUTH,
};

/* Why the forge refused to let the token act as another user. */
enum forge_sudo_problem {
	FORGE_SUDO_OK = 0,
	FORGE_SUDO_NOT_ADMIN, /* not an administrator's token (or Admin Mode
			       * is on and it lacks the admin_mode scope) */
	FORGE_SUDO_NO_SCOPE, /* an administrator's token without sudo */
	FORGE_SUDO_NO_USER, /* no user of that name or id */
};

/* Why the forge refuses the token itself (GitLab: 401 invalid_token,
 * lib/api/api_guard.rb; or the plain 401 of authenticate!,
 * lib/api/helpers.rb, to a request made as the token's own user). */
enum forge_token_problem {
	FORGE_TOKEN_OK = 0,
	FORGE_TOKEN_EXPIRED, /* "Token is expired. ..." */
	FORGE_TOKEN_REVOKED, /* "Token was revoked. ..." */
	FORGE_TOKEN_INVALID, /* another invalid_token (impersonation off) */
	FORGE_TOKEN_UNKNOWN, /* "401 Unauthorized": no such token */
};

/*
 * What the token is and may do (GitLab: GET /user and GET
 * /personal_access_tokens/self), for check-config.  -1: not known.
 */
struct forge_whoami {
	struct forge_user user;
	int admin; /* acts as an administrator (is_admin shown) */
	int token_known; /* the token's own record could be read */
	struct strlist scopes; /* "api", "sudo", "admin_mode", ... */
	int active;
	char *expires_at; /* NULL: never */
	char *token_name;
};

/* A project as the forge has it now (GitLab: GET /projects/:id). */
struct forge_project {
	int64_t id;
	char *path_with_namespace;
};

/* A configured project path and the id it stands for (forge_pin_project()). */
struct forge_pin {
	char *path;
	int64_t id;
};

/*
 * MR listing state the caller keeps between polls: the watermark (the
 * largest updated_at seen) and the (iid, updated_at) pairs already
 * reported inside the overlap window, so an overlapping re-read reports
 * nothing twice.
 */
struct forge_mr_seen {
	int64_t iid;
	int64_t updated_ms;
};

struct forge_mr_cursor {
	int64_t watermark_ms; /* 0: from the beginning */
	struct forge_mr_seen *seen;
	size_t nr, alloc;
};

void forge_mr_cursor_init(struct forge_mr_cursor *c);
void forge_mr_cursor_release(struct forge_mr_cursor *c);
/* Record a pair (when loading saved state, or after reporting). */
void forge_mr_cursor_add(struct forge_mr_cursor *c, int64_t iid,
			 int64_t updated_ms);
int forge_mr_cursor_has(const struct forge_mr_cursor *c, int64_t iid,
			int64_t updated_ms);
/* Forget pairs older than watermark - overlap. */
void forge_mr_cursor_prune(struct forge_mr_cursor *c, int64_t overlap_ms);

struct forge_mr_query {
	const char *state; /* NULL: all */
	int64_t overlap_ms; /* re-read this far before the watermark */
	int per_page; /* 0: 100 */
};

/* A merge request to open (forge_create_mr()). */
struct forge_mr_new {
	const char *source_branch;
	const char *target_branch;
	const char *title;
	const char *description; /* NULL: none */
	const struct strlist *labels; /* NULL: none */
};

/* Called once per new (iid, updated_at); non-zero stops the listing and is
 * returned.  mr is borrowed for the call. */
typedef int (*forge_mr_fn)(const struct forge_mr *mr, void *arg);

struct forge_note_query {
	const char *sort; /* "asc" / "desc"; NULL: forge default */
	const char *order_by; /* "created_at" / "updated_at"; NULL: default */
	int per_page; /* 0: 100 */
	int max_pages; /* 0: PB_PAGES_MAX */
	/* With sort "desc" and order_by "updated_at": stop at the first
	 * note updated before this (ms since the epoch; it is the last one
	 * in the list), the rest being older still.  0: read them all. */
	int64_t stop_before_ms;
};

struct forge;

/* What the caller does between the pages of a long read (see
 * forge_set_pause()). */
typedef void (*forge_pause_fn)(void *arg);
/* What the caller checks before each try of a request (see
 * forge_set_guard()): 0 to send it, else an error that ends the call. */
typedef int (*forge_guard_fn)(void *arg);

struct forge_ops {
	const char *name;
	void (*free)(struct forge *f);
	int (*act_as)(struct forge *f, const char *user);
	int (*list_mrs)(struct forge *f, const char *project,
			struct forge_mr_cursor *cursor,
			const struct forge_mr_query *q, forge_mr_fn fn,
			void *arg);
	int (*get_mr)(struct forge_mr *out, struct forge *f,
		      const char *project, int64_t iid);
	int (*list_versions)(struct forge_version_list *out, struct forge *f,
			     const char *project, int64_t iid);
	int (*get_version)(struct forge_version *out, struct forge *f,
			   const char *project, int64_t iid,
			   int64_t version_id);
	int (*list_notes)(struct forge_note_list *out, struct forge *f,
			  const char *project, int64_t iid,
			  const struct forge_note_query *q);
	int (*create_note)(struct forge_note *out, struct forge *f,
			   const char *project, int64_t iid, const char *body,
			   const char *marker_key);
	int (*list_discussions)(struct forge_discussion_list *out,
				struct forge *f, const char *project,
				int64_t iid);
	int (*create_discussion)(struct forge_discussion *out, struct forge *f,
				 const char *project, int64_t iid,
				 const char *body,
				 const struct forge_position *pos,
				 const char *marker_key);
	int (*reply_discussion)(struct forge_note *out, struct forge *f,
				const char *project, int64_t iid,
				const char *discussion_id, const char *body,
				const char *marker_key);
	int (*resolve_discussion)(struct forge *f, const char *project,
				  int64_t iid, const char *discussion_id,
				  int resolved);
	int (*find_note_by_marker)(struct forge_note *out,
				   char **out_discussion_id, struct forge *f,
				   const char *project, int64_t iid,
				   const char *discussion_id,
				   const char *marker_key);
	int (*approve)(enum forge_approve_result *out, struct forge *f,
		       const char *project, int64_t iid, const char *sha);
	int (*unapprove)(enum forge_approve_result *out, struct forge *f,
			 const char *project, int64_t iid);
	int (*get_approvals)(struct forge_approvals *out, struct forge *f,
			     const char *project, int64_t iid);
	int (*update_labels)(struct forge *f, const char *project, int64_t iid,
			     const struct strlist *add,
			     const struct strlist *remove);
	int (*create_mr)(struct forge_mr *out, struct forge *f,
			 const char *project, const struct forge_mr_new *mr);
	int (*find_user_by_email)(struct forge_user *out, struct forge *f,
				  const char *email);
	int (*get_user)(struct forge_user *out, struct forge *f, int64_t id);
	int (*whoami)(struct forge_whoami *out, struct forge *f);
	int (*get_project)(struct forge_project *out, struct forge *f,
			   const char *project);
	int (*commit_email_host)(char **out, struct forge *f);
	int (*list_hooks)(struct forge_hook_list *out, struct forge *f,
			  const char *project);
	int (*list_pipelines)(struct forge_pipeline_list *out, struct forge *f,
			      const char *project, int64_t iid);
	int (*list_jobs)(struct forge_job_list *out, struct forge *f,
			 const char *project, int64_t pipeline_id);
	int (*job_trace)(struct buf *out, struct forge *f, const char *project,
			 int64_t job_id);
	int (*commit_signature)(struct forge_signature *out, struct forge *f,
				const char *project, const char *sha);
	enum forge_sudo_problem (*sudo_problem)(const struct forge *f);
	enum forge_token_problem (*token_problem)(const struct forge *f);
	/* Run fn(arg) with the handle's per-call state set aside
	 * (forge_pause()); NULL: fn is called as it is. */
	void (*pause)(struct forge *f, forge_pause_fn fn, void *arg);
};

struct forge {
	const struct forge_ops *ops;
	/* forge_set_pause(); the implementation zeroes them. */
	forge_pause_fn pause;
	void *pause_arg;
	int in_pause;
	/* forge_set_guard(); the implementation zeroes them. */
	forge_guard_fn guard;
	void *guard_arg;
	/* forge_pin_project(); the implementation zeroes them, forge_free()
	 * frees them. */
	struct forge_pin *pins;
	size_t nr_pins, alloc_pins;
};

/* Free the handle (NULL allowed). */
void forge_free(struct forge *f);

/*
 * Have fn(arg) called between the pages of every listing (after a page
 * that has a next one) and at each forge_pause(), so that other work can
 * be served while a long read goes on; NULL: none.  fn runs on the
 * calling thread, as ourselves (the Sudo user is set aside and put back
 * after), and may use this handle: a listing it starts does not pause
 * again inside it.  The read goes on whatever fn does; fn reports its
 * own errors (the thread-local message is put back after it).
 */
void forge_set_pause(struct forge *f, forge_pause_fn fn, void *arg);
/* Run the pause now, if one is set and this is not inside it. */
void forge_pause(struct forge *f);

/*
 * Have fn(arg) called before each try of every request (the first, each
 * retry, each page, each marker search); NULL: none.  A nonzero return ends the call with that error (fn sets the
 * message), nothing sent.  The inbound side keeps its claim on a reply
 * alive with it, so that a lease need only outlast one try and one wait
 * (docs/SCALING.md).  *old_fn and *old_arg (may be NULL) get what was
 * set, to be put back.
 */
void forge_set_guard(struct forge *f, forge_guard_fn fn, void *arg,
		     forge_guard_fn *old_fn, void **old_arg);
/* 0, or the guard's error: what the forge client calls before a try. */
int forge_guard(struct forge *f);

/* Run the following calls as user (a username or numeric id); NULL: as
 * ourselves.  PB_EINVAL for a name that cannot be a user. */
int forge_act_as(struct forge *f, const char *user);

/*
 * MRs of project updated since cursor->watermark_ms - q->overlap_ms, in
 * updated_at order, each new (iid, updated_at) reported once through fn.
 * Follows the forge's next-page links up to PB_PAGES_MAX pages (beyond
 * that, the rest comes in the next poll).  On success the watermark moves
 * to the newest updated_at seen and old pairs are pruned; on failure the
 * watermark stays and the pairs already reported are kept.
 */
int forge_list_mrs(struct forge *f, const char *project,
		   struct forge_mr_cursor *cursor,
		   const struct forge_mr_query *q, forge_mr_fn fn, void *arg);

int forge_get_mr(struct forge_mr *out, struct forge *f, const char *project,
		 int64_t iid);

/* Diff versions, newest first (without commits and diffs). */
int forge_list_versions(struct forge_version_list *out, struct forge *f,
			const char *project, int64_t iid);
/* One version with its commits and diffs. */
int forge_get_version(struct forge_version *out, struct forge *f,
		      const char *project, int64_t iid, int64_t version_id);

/* The MR's pipelines, newest first (the first page: GitLab's 20). */
int forge_list_pipelines(struct forge_pipeline_list *out, struct forge *f,
			 const char *project, int64_t iid);
/* The jobs of a pipeline (the latest try of each, GitLab's default). */
int forge_list_jobs(struct forge_job_list *out, struct forge *f,
		    const char *project, int64_t pipeline_id);
/*
 * A job's log as the forge keeps it (plain text, with the runner's ANSI
 * escapes), appended to out, whose cap is the caller's: PB_ELIMIT when
 * the log does not fit (out is then emptied).
 */
int forge_job_trace(struct buf *out, struct forge *f, const char *project,
		    int64_t job_id);

/* The signature the forge found on a commit and its verdict on it;
 * PB_ENOTFOUND for a commit that is not signed (or not there). */
int forge_commit_signature(struct forge_signature *out, struct forge *f,
			   const char *project, const char *sha);

/* The MR's notes, system notes included, in q's order (NULL: the
 * forge's).  No discussion ids: the forge's note entity has none. */
int forge_list_notes(struct forge_note_list *out, struct forge *f,
		     const char *project, int64_t iid,
		     const struct forge_note_query *q);

/*
 * Post a plain comment.  marker_key (see forge_marker_format(); NULL: no
 * marker and no recovery) makes the post safe to repeat: when the outcome
 * of the POST is unknown, the note is looked for before posting again.
 * A note that was already there comes back as if just created.
 *
 * The same holds for forge_create_discussion() and
 * forge_reply_discussion().  When even the search fails, they return
 * PB_ETEMP with "outcome unknown" in the message: then, and after a crash
 * between journaling an action and recording its result, the caller must
 * call forge_find_note_by_marker() before posting again.
 *
 * The body is posted as given: neutralising quick actions ("/approve" at
 * the start of a line) in relayed text is the caller's job.  GitLab
 * answers a body of only quick actions with 202 and saves nothing; that
 * gives PB_EINVAL here.
 */
int forge_create_note(struct forge_note *out, struct forge *f,
		      const char *project, int64_t iid, const char *body,
		      const char *marker_key);

int forge_list_discussions(struct forge_discussion_list *out, struct forge *f,
			   const char *project, int64_t iid);

/*
 * Start a thread; with pos, a diff note at that position.  The forge's
 * answer is checked: a note that came back without its position (not a
 * DiffNote) gives PB_EINVAL, and then, unlike other errors, out holds the
 * discussion that was created so the caller can record it.
 */
int forge_create_discussion(struct forge_discussion *out, struct forge *f,
			    const char *project, int64_t iid, const char *body,
			    const struct forge_position *pos,
			    const char *marker_key);

int forge_reply_discussion(struct forge_note *out, struct forge *f,
			   const char *project, int64_t iid,
			   const char *discussion_id, const char *body,
			   const char *marker_key);

int forge_resolve_discussion(struct forge *f, const char *project, int64_t iid,
			     const char *discussion_id, int resolved);

/*
 * Find a note we posted with marker_key: among the MR's newest notes, or
 * in one discussion when discussion_id is given.  Only notes by the
 * acting user count.  *out_discussion_id (may be NULL) gets the thread's
 * id when known.  PB_ENOTFOUND when absent.
 */
int forge_find_note_by_marker(struct forge_note *out, char **out_discussion_id,
			      struct forge *f, const char *project, int64_t iid,
			      const char *discussion_id,
			      const char *marker_key);

/*
 * Approve the MR at head sha (required: it ties the approval to the
 * revision the reviewer saw).  The forge's approval state is read before
 * and, when the forge refuses, after the request, rather than trusting
 * the status code (GitLab answers a second approval by the same user,
 * e.g. a retry whose first try landed, with the same 401 as a refusal).
 * 0 with *out DONE, or ALREADY when the (acting) user's approval stands;
 * PB_EINVAL with SHA_MISMATCH when the MR's head moved; PB_EPERM with
 * REFUSED when the user may not approve, or NO_SUDO when the token may
 * not act as the user; PB_ENOTFOUND with NO_USER when there is no such
 * user (else the MR is not there).
 */
int forge_approve(enum forge_approve_result *out, struct forge *f,
		  const char *project, int64_t iid, const char *sha);
/* 0 with DONE, or ALREADY when there was no approval to withdraw; the
 * errors as for forge_approve(). */
int forge_unapprove(enum forge_approve_result *out, struct forge *f,
		    const char *project, int64_t iid);
int forge_get_approvals(struct forge_approvals *out, struct forge *f,
			const char *project, int64_t iid);

/*
 * Open a merge request from source_branch (which must be on the forge)
 * into target_branch.  The forge keeps one open merge request per source
 * and target branch, so this is exactly once by itself: when one is open
 * already (made by an earlier call whose answer was lost, or before a
 * restart) out gets that one and the call returns 0.  PB_EINVAL for a
 * branch that does not exist or a missing field.
 */
int forge_create_mr(struct forge_mr *out, struct forge *f, const char *project,
		    const struct forge_mr_new *mr);

/* Add and remove labels without touching the others (either may be NULL
 * or empty, not both). */
int forge_update_labels(struct forge *f, const char *project, int64_t iid,
			const struct strlist *add,
			const struct strlist *remove);

/* The user whose email or public email is exactly email (ASCII case
 * ignored).  PB_ENOTFOUND when no visible address matches. */
int forge_find_user_by_email(struct forge_user *out, struct forge *f,
			     const char *email);

/* One user by numeric id, with what the token may see of it (the public
 * email, for anyone; the private one for an admin).  PB_ENOTFOUND when
 * there is no such user. */
int forge_get_user(struct forge_user *out, struct forge *f, int64_t id);

/*
 * The project as the forge has it now: its id and its path, which differ
 * from the name asked for after a rename or a move to another group (a
 * path is followed to the project that had it; a pinned path is asked by
 * its id).  PB_ENOTFOUND: no such project, or no access.
 */
int forge_get_project(struct forge_project *out, struct forge *f,
		      const char *project);
void forge_project_release(struct forge_project *p);

/*
 * From now on, address the project named path by id (ASCII case ignored,
 * as GitLab matches paths).  Pinning again replaces the id.
 */
void forge_pin_project(struct forge *f, const char *path, int64_t id);
/* The path pinned to id, or NULL (owned by f, valid until it is freed). */
const char *forge_pinned_path(const struct forge *f, int64_t id);
/*
 * What to put in a URL for project: the pinned id as decimal text in buf
 * (size at least 24), or project itself.
 */
const char *forge_project_ref(const struct forge *f, const char *project,
			      char *buf, size_t size);

/* Who the token is and what it may do (as itself, whoever it acts as). */
int forge_whoami(struct forge_whoami *out, struct forge *f);
void forge_whoami_release(struct forge_whoami *w);

/*
 * The host part of the no-reply address the forge gives a user who keeps
 * the email private ("ID-USERNAME@HOST"), as the forge is configured;
 * *out is the caller's to free.  PB_EPERM when the token may not read it
 * (GitLab: administrators only), PB_ENOTFOUND when the forge has none.
 */
int forge_commit_email_host(char **out, struct forge *f);

/* The project's webhooks (GitLab: Maintainer only; PB_EPERM else). */
int forge_list_hooks(struct forge_hook_list *out, struct forge *f,
		     const char *project);
void forge_hook_list_release(struct forge_hook_list *l);

/*
 * The webhooks of project that would bring the bridge merge request or
 * note events and that the forge disabled after failed deliveries, as
 * one line an operator acts on, appended to out (left empty when there
 * is none).  0, or forge_list_hooks()'s error.
 */
int forge_hooks_problem(struct buf *out, struct forge *f, const char *project);

/* Why the last call acting as another user was refused as such
 * (FORGE_SUDO_OK: it was not). */
enum forge_sudo_problem forge_sudo_problem(const struct forge *f);
/* One sentence an operator acts on; "" for FORGE_SUDO_OK. */
const char *forge_sudo_problem_text(enum forge_sudo_problem p);

/* Why the forge refused the token on the last call that reached it
 * (FORGE_TOKEN_OK: it took it); sticky until a call succeeds. */
enum forge_token_problem forge_token_problem(const struct forge *f);
/* A few words for logs and /readyz ("has expired"); "" when OK. */
const char *forge_token_problem_text(enum forge_token_problem p);

/* Release functions: free what the struct owns, leave it zeroed. */
void forge_user_release(struct forge_user *u);
void forge_mr_release(struct forge_mr *mr);
void forge_commit_release(struct forge_commit *c);
void forge_diff_file_release(struct forge_diff_file *d);
void forge_version_release(struct forge_version *v);
void forge_version_list_release(struct forge_version_list *l);
void forge_pipeline_release(struct forge_pipeline *p);
void forge_pipeline_list_release(struct forge_pipeline_list *l);
void forge_job_release(struct forge_job *j);
void forge_signature_release(struct forge_signature *s);
void forge_job_list_release(struct forge_job_list *l);
void forge_position_release(struct forge_position *p);
void forge_note_release(struct forge_note *n);
void forge_note_list_release(struct forge_note_list *l);
void forge_discussion_release(struct forge_discussion *d);
void forge_discussion_list_release(struct forge_discussion_list *l);
void forge_approvals_release(struct forge_approvals *a);
/* The acting user (username or id, as given to forge_act_as(); NULL:
 * the token's own user whose username is self) has approved, by a. */
int forge_approvals_by(const struct forge_approvals *a, const char *user);

/*
 * Markers.  A key is 1..PB_MARKER_KEY_MAX bytes of [A-Za-z0-9._:-]
 * (e.g. "<hash of the source Message-ID>.<action index>"), so it cannot
 * close the HTML comment.  The marker is "<!-- patchbridge:KEY -->",
 * which GitLab's Markdown does not render.
 */
#define PB_MARKER_KEY_MAX 128

int forge_marker_key_check(const char *key);
int forge_marker_format(struct buf *out, const char *key);
/* body, a blank line, then the marker. */
int forge_body_with_marker(struct buf *out, const char *body, const char *key);
/*
 * The marker that ends text where and as forge_body_with_marker() writes
 * it: "<!-- patchbridge:KEY -->" with a valid key, after a blank line (or
 * alone), and after it nothing but line ends and blanks.  1 with its key
 * copied into key, else 0 and key "".  A marker anywhere else (pasted
 * at the start, in a code block, in a quote) is text, not a marker.
 */
int forge_marker_trailing(char key[PB_MARKER_KEY_MAX + 1], const char *text);
/* True when text ends with the marker for key (forge_marker_trailing()). */
int forge_marker_in(const char *text, const char *key);

/*
 * ISO 8601 timestamps as the forge sends them ("2016-07-26T14:44:48.926Z",
 * "…+03:00") to milliseconds since the epoch, and back (UTC, "Z").
 */
int forge_time_parse(int64_t *out_ms, const char *s);
int forge_time_format(struct buf *out, int64_t ms);

/* From this many days before a token expires the operator is warned. */
#define FORGE_TOKEN_WARN_DAYS 14
/*
 * Whole days from now (Unix time, UTC) to a token's expires_at
 * ("YYYY-MM-DD", GitLab's date): 1 the day before, 0 on the day (when
 * GitLab already refuses it), negative after.  PB_EINVAL for no date.
 */
int forge_token_days_left(int64_t *out, const char *expires_at, int64_t now);

#endif
