/*
 * fakeforge - a struct forge_ops that records what it is asked and
 * answers from a script, so that the code driving the forge can be unit
 * tested without the simulator.
 *
 * Each call is recorded (op, the acting user, project, iid, the key
 * argument, the body, the marker key) before it is answered.  The answer
 * is the next scripted result for that op, or success when none is left.
 * Writes that succeed (notes, discussions, replies, approvals, labels)
 * change the fake's state: posted notes can then be found by their
 * marker, as the GitLab client finds its own after a lost response.
 *
 * A scripted result can be:
 *  - an error code with the forge's message (and, for approvals, the
 *    forge_approve_result that goes with it: a 409 is PB_EINVAL with
 *    FORGE_APPROVE_SHA_MISMATCH);
 *  - a 401 invalid_token: PB_ETEMP, and forge_token_problem() says why
 *    until a call succeeds (forge.h);
 *  - a 5xx the client gave up retrying: PB_ETEMP, nothing written;
 *  - a lost response: the write is done, and the call fails PB_ETEMP
 *    with "outcome unknown", as the client does when even its marker
 *    search failed.
 *
 * Threads: one test thread.  Errors: the fake fails the test (cmocka)
 * when it runs out of room.
 */
#ifndef PB_TESTS_FAKEFORGE_H
#define PB_TESTS_FAKEFORGE_H

#include "forge/forge.h"

#include <stdint.h>

enum fake_op {
	FAKE_ACT_AS,
	FAKE_GET_MR,
	FAKE_LIST_VERSIONS,
	FAKE_CREATE_NOTE,
	FAKE_CREATE_DISCUSSION,
	FAKE_REPLY_DISCUSSION,
	FAKE_FIND_NOTE_BY_MARKER,
	FAKE_APPROVE,
	FAKE_UNAPPROVE,
	FAKE_UPDATE_LABELS,
	FAKE_LIST_MRS,
	FAKE_GET_PROJECT,
	FAKE_LIST_NOTES,
	FAKE_LIST_DISCUSSIONS,
	FAKE_WHOAMI,
	FAKE_GET_APPROVALS,
	FAKE_LIST_PIPELINES,
	FAKE_LIST_JOBS,
	FAKE_JOB_TRACE,
	FAKE_COMMIT_SIGNATURE,
	FAKE__COUNT,
};

/* Results scripted per op, and calls and notes kept, at most. */
#define FAKE_SCRIPT_MAX 16
#define FAKE_CALLS_MAX 128
#define FAKE_NOTES_MAX 64

enum fake_how {
	FAKE_OK,
	FAKE_FAIL, /* rc with msg, nothing written */
	FAKE_TOKEN, /* 401 invalid_token */
	FAKE_5XX, /* the forge failing, retries spent */
	FAKE_LOST, /* written, and the response lost */
};

struct fake_result {
	enum fake_how how;
	int rc;
	const char *msg;
	enum forge_approve_result approve;
};

struct fake_call {
	enum fake_op op;
	char *user; /* acting as; NULL: the bridge */
	char *project;
	int64_t iid;
	/* act_as: the user; approve: the sha; reply: the discussion;
	 * labels: "+add -remove ..."; create_discussion: "path:line" of a
	 * position, or NULL. */
	char *arg;
	char *body;
	char *marker;
};

struct fake_note {
	int64_t id;
	char *discussion;
	char *body;
	char *marker;
};

struct fakeforge {
	struct forge base; /* first: the handle apply and the rest use */
	struct fake_result script[FAKE__COUNT][FAKE_SCRIPT_MAX];
	unsigned head[FAKE__COUNT], nr[FAKE__COUNT];
	struct fake_call calls[FAKE_CALLS_MAX];
	unsigned nr_calls;
	struct fake_note notes[FAKE_NOTES_MAX];
	unsigned nr_notes;
	int64_t next_id;
	char *acting;
	enum forge_token_problem token;
	/* What forge_sudo_problem() says, as the test sets it. */
	enum forge_sudo_problem sudo;
	/* What get_mr answers: the state and labels the test sets, and the
	 * labels update_labels leaves. */
	const char *mr_state; /* NULL: "opened" */
	int discussion_locked; /* what get_mr says of the discussion */
	/* find_user_by_email answers "no such user" (PB_ENOTFOUND) for
	 * every address; 0: the op is missing, as before. */
	int no_users;
	struct strlist labels;
	/* What list_versions answers (newest only); NULL: no versions.
	 * The base NULL: a version without one, which outbound_mr() takes
	 * for none yet. */
	const char *version_head;
	const char *version_patch_id;
	const char *version_base;
	unsigned approvals; /* approvals that landed */
	/* What list_mrs reports, each once, in this order (borrowed). */
	const struct forge_mr *mrs;
	size_t nr_mrs;
	/* What get_project answers: id 0 is 42; path NULL is the one
	 * asked for. */
	int64_t project_id;
	const char *project_path;
	/* The MR's discussions as list_discussions answers them, copied
	 * (borrowed); list_notes answers their notes, newest first when
	 * asked "desc". */
	const struct forge_discussion *discussions;
	size_t nr_discussions;
	const char *whoami; /* the token's user; NULL: "patchbridge" */
	/* Who get_approvals says approved (borrowed). */
	const struct forge_user *approved_by;
	size_t nr_approved_by;
	/* What list_pipelines answers (newest first), list_jobs answers
	 * (the jobs of every pipeline alike) and job_trace answers (the
	 * same log for every job; NULL: an empty log); borrowed, copied
	 * into each answer. */
	const struct forge_pipeline *pipelines;
	size_t nr_pipelines;
	const struct forge_job *jobs;
	size_t nr_jobs;
	const char *trace;
	/* What commit_signature answers: the signature of signed_shas[i]
	 * is signatures[i] (borrowed, copied); any other commit is not
	 * signed (PB_ENOTFOUND, as GitLab's 404). */
	const char *const *signed_shas;
	const struct forge_signature *signatures;
	size_t nr_signatures;
};

void fakeforge_init(struct fakeforge *ff);
void fakeforge_release(struct fakeforge *ff);

/* Queue the next answer of op. */
void fakeforge_script(struct fakeforge *ff, enum fake_op op, enum fake_how how,
		      int rc, const char *msg);
void fakeforge_script_approve(struct fakeforge *ff, enum fake_op op, int rc,
			      enum forge_approve_result res, const char *msg);

/* Calls of op seen so far, and the i-th of them (NULL past the end). */
unsigned fakeforge_count(const struct fakeforge *ff, enum fake_op op);
const struct fake_call *fakeforge_call(const struct fakeforge *ff,
				       enum fake_op op, unsigned i);
/* Forget the calls (not the notes): the next part of a test. */
void fakeforge_clear_calls(struct fakeforge *ff);

#endif
