/*
 * apply_plan() against the recording fake forge (fakeforge.h) and a real
 * store: which calls a plan makes, what the journal keeps, which metrics
 * move, and the error paths (409, 401 token, 5xx, lost response).  The
 * simulator tier covers the GitLab client under these; here a changed
 * rule fails in seconds.
 */
#include "cmocka_all.h"
#include "core/metrics.h"
#include "fakeforge.h"
#include "metricval.h"
#include "inbound/apply.h"
#include "storebed.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSGID "reply.1@example.org"
#define HEAD "1111111111111111111111111111111111111111"
#define BASE "2222222222222222222222222222222222222222"
#define START "3333333333333333333333333333333333333333"

struct bed {
	struct fakeforge ff;
	struct store *st;
	struct apply_target t;
	struct apply_result res;
	struct forge_mr mr;
	struct plan_action a[8];
	struct plan p;
};

static char dir[512];
static unsigned seq;

static int group_setup(void **state)
{
	(void)state;
	return storebed_tmpdir(dir, sizeof(dir), "apply");
}

static int group_teardown(void **state)
{
	(void)state;
	return storebed_tmpdir_remove(dir);
}

static int setup(void **state)
{
	struct bed *b = calloc(1, sizeof(*b));
	char name[32];

	if (!b)
		return -1;
	snprintf(name, sizeof(name), "apply%u", seq++);
	if (storebed_open(&b->st, storebed_fresh(name), STORE_RW, 5000))
		fail_msg("store: %s", err_msg());
	fakeforge_init(&b->ff);
	apply_result_init(&b->res);
	metrics_reset();
	b->mr.state = (char *)"opened";
	b->t.message_id = MSGID;
	b->t.project = "group/project";
	b->t.iid = 7;
	b->t.revision = 2;
	b->t.base_sha = BASE;
	b->t.start_sha = START;
	b->t.head_sha = HEAD;
	b->t.nak_label = "Acks::NACKed";
	b->t.mr = &b->mr;
	b->p.v = b->a;
	*state = b;
	return 0;
}

static int teardown(void **state)
{
	struct bed *b = *state;

	apply_result_release(&b->res);
	fakeforge_release(&b->ff);
	store_free(b->st);
	free(b);
	return 0;
}

static struct plan_action *add(struct bed *b, int index, enum plan_kind kind,
			       const char *body)
{
	struct plan_action *a = &b->a[b->p.nr++];

	memset(a, 0, sizeof(*a));
	a->index = index;
	a->kind = kind;
	a->body = (char *)body;
	return a;
}

static struct plan_action *add_approve(struct bed *b, const char *user)
{
	struct plan_action *a = add(b, PLAN_IDX_APPROVE(0), PLAN_APPROVE, NULL);

	a->user = (char *)user;
	a->who = (char *)"Acked-by: Alice <alice@example.org>";
	return a;
}

static int run(struct bed *b)
{
	apply_result_release(&b->res);
	apply_result_init(&b->res);
	return apply_plan(&b->res, &b->ff.base, b->st, &b->p, &b->t);
}

/* The journal's state of action index; -1: not journaled. */
static int journal(struct bed *b, int index)
{
	struct store_action_list l = { 0 };
	int state = -1;
	size_t i;

	assert_int_equal(store_action_list(&l, b->st, MSGID), 0);
	for (i = 0; i < l.nr; i++)
		if (l.items[i].index == index)
			state = (int)l.items[i].state;
	store_action_list_release(&l);
	return state;
}

#define MADE "patchbridge_approvals_made_total{project=\"group/project\"}"
#define REFUSED(r) "patchbridge_approvals_refused_total{reason=\"" r "\"}"

static void comment_starts_a_discussion_once(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;

	add(b, PLAN_IDX_COMMENT, PLAN_COMMENT, "Looks fine.\n");
	assert_int_equal(run(b), 0);
	assert_int_equal(b->res.done, 1);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_CREATE_DISCUSSION), 1);
	c = fakeforge_call(&b->ff, FAKE_CREATE_DISCUSSION, 0);
	assert_string_equal(c->project, "group/project");
	assert_int_equal(c->iid, 7);
	assert_string_equal(c->body, "Looks fine.\n");
	assert_non_null(c->marker);
	assert_null(c->arg); /* no position */
	assert_int_equal(journal(b, PLAN_IDX_COMMENT), STORE_ACTION_DONE);

	/* Again (a retried mail): the journal skips it. */
	fakeforge_clear_calls(&b->ff);
	assert_int_equal(run(b), 0);
	assert_int_equal(b->res.done, 0);
	assert_int_equal(b->res.skipped, 1);
	assert_int_equal(b->ff.nr_calls, 1); /* act_as(NULL) at the end */
	assert_int_equal(b->ff.nr_notes, 1);
}

static void comment_replies_in_its_thread(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;

	b->t.reply_discussion = "abcdef";
	add(b, PLAN_IDX_COMMENT, PLAN_COMMENT, "Agreed.\n");
	assert_int_equal(run(b), 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_CREATE_DISCUSSION), 0);
	c = fakeforge_call(&b->ff, FAKE_REPLY_DISCUSSION, 0);
	assert_non_null(c);
	assert_string_equal(c->arg, "abcdef");
	assert_string_equal(c->body, "Agreed.\n");
}

static void comment_gone_thread_starts_one(void **state)
{
	struct bed *b = *state;

	b->t.reply_discussion = "abcdef";
	fakeforge_script(&b->ff, FAKE_REPLY_DISCUSSION, FAKE_FAIL, PB_ENOTFOUND,
			 "404 Not found");
	add(b, PLAN_IDX_COMMENT, PLAN_COMMENT, "Agreed.\n");
	assert_int_equal(run(b), 0);
	assert_int_equal(b->res.done, 1);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_CREATE_DISCUSSION), 1);
	assert_int_equal(b->ff.nr_notes, 1);
}

static void diff_note_at_its_position(void **state)
{
	struct bed *b = *state;
	struct plan_action *a;
	const struct fake_call *c;

	a = add(b, PLAN_IDX_INLINE(0), PLAN_DIFF_NOTE, "A typo here.\n");
	a->fallback = (char *)"On a.c:12: A typo here.\n";
	a->old_path = a->new_path = (char *)"a.c";
	a->new_line = 12;
	a->line_kind = FORGE_LINE_ADDED;
	assert_int_equal(run(b), 0);
	c = fakeforge_call(&b->ff, FAKE_CREATE_DISCUSSION, 0);
	assert_string_equal(c->arg, "a.c:12");
	assert_string_equal(c->body, "A typo here.\n");
	assert_int_equal(fakeforge_count(&b->ff, FAKE_CREATE_DISCUSSION), 1);
}

static void diff_note_refused_position_falls_back(void **state)
{
	struct bed *b = *state;
	struct plan_action *a;
	const struct fake_call *c;

	fakeforge_script(&b->ff, FAKE_CREATE_DISCUSSION, FAKE_FAIL, PB_EINVAL,
			 "400 line_code can't be blank");
	a = add(b, PLAN_IDX_INLINE(0), PLAN_DIFF_NOTE, "A typo here.\n");
	a->fallback = (char *)"On a.c:12: A typo here.\n";
	a->old_path = a->new_path = (char *)"a.c";
	a->new_line = 12;
	a->line_kind = FORGE_LINE_ADDED;
	assert_int_equal(run(b), 0);
	assert_int_equal(b->res.done, 1);
	assert_int_equal(b->res.failed.nr, 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_CREATE_DISCUSSION), 2);
	c = fakeforge_call(&b->ff, FAKE_CREATE_DISCUSSION, 1);
	assert_null(c->arg);
	assert_string_equal(c->body, "On a.c:12: A typo here.\n");
	assert_int_equal(b->ff.nr_notes, 1);
}

static void diff_reply_gone_thread_becomes_diff_note(void **state)
{
	struct bed *b = *state;
	struct plan_action *a;
	const struct fake_call *c;

	fakeforge_script(&b->ff, FAKE_REPLY_DISCUSSION, FAKE_FAIL, PB_ENOTFOUND,
			 "404 Not found");
	a = add(b, PLAN_IDX_INLINE(0), PLAN_DIFF_REPLY, "Still wrong.\n");
	a->discussion = (char *)"feedbeef";
	a->fallback = (char *)"On a.c:12: Still wrong.\n";
	a->old_path = a->new_path = (char *)"a.c";
	a->new_line = 12;
	a->line_kind = FORGE_LINE_ADDED;
	assert_int_equal(run(b), 0);
	c = fakeforge_call(&b->ff, FAKE_REPLY_DISCUSSION, 0);
	assert_string_equal(c->arg, "feedbeef");
	c = fakeforge_call(&b->ff, FAKE_CREATE_DISCUSSION, 0);
	assert_non_null(c);
	assert_string_equal(c->arg, "a.c:12");
	assert_string_equal(c->body, "Still wrong.\n");
	assert_int_equal(b->ff.nr_notes, 1);
	assert_int_equal(b->res.done, 1);
}

static void approval_as_the_reviewer(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;

	add_approve(b, "alice");
	assert_int_equal(run(b), 0);
	assert_int_equal(b->res.done, 1);
	c = fakeforge_call(&b->ff, FAKE_APPROVE, 0);
	assert_non_null(c);
	assert_string_equal(c->user, "alice");
	assert_string_equal(c->arg, HEAD);
	assert_int_equal(b->ff.approvals, 1);
	assert_null(b->ff.acting); /* back to the bridge */
	assert_int_equal(fakeforge_count(&b->ff, FAKE_CREATE_DISCUSSION), 0);
	assert_int_equal(metric(MADE), 1);
	assert_int_equal(journal(b, PLAN_IDX_APPROVE(0)), STORE_ACTION_DONE);
}

/* The approval's provenance kept for the applied mail (forgemail.c):
 * the trailer and how its sender was verified. */
static void approval_provenance_kept(void **state)
{
	struct bed *b = *state;
	struct buf v = BUF_INIT(1024);
	char name[256];

	add_approve(b, "alice")->via = "DKIM verified";
	assert_int_equal(run(b), 0);
	snprintf(name, sizeof(name), "list-approval-via:%s!%lld:alice",
		 b->t.project, (long long)b->t.iid);
	assert_int_equal(store_cursor_get(&v, b->st, name), 0);
	assert_string_equal(v.data, "Acked-by: Alice <alice@example.org> (DKIM "
				    "verified)");
	buf_release(&v);
}

static void approval_of_merged_mr_not_asked(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;

	b->mr.state = (char *)"merged";
	b->mr.merge_commit_sha =
		(char *)"4444444444444444444444444444444444444444";
	add_approve(b, "alice");
	assert_int_equal(run(b), 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_APPROVE), 0);
	c = fakeforge_call(&b->ff, FAKE_CREATE_DISCUSSION, 0);
	assert_non_null(c);
	assert_non_null(strstr(c->body, "already merged (at 444444444444)"));
	assert_non_null(strstr(c->body, "Acked-by: Alice"));
	assert_int_equal(metric(REFUSED("merged")), 1);
	assert_true(metric(MADE) <= 0);
}

static void approval_without_head_not_asked(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;

	b->t.head_sha = NULL;
	add_approve(b, "alice");
	assert_int_equal(run(b), 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_APPROVE), 0);
	c = fakeforge_call(&b->ff, FAKE_CREATE_DISCUSSION, 0);
	assert_non_null(c);
	assert_non_null(strstr(c->body, "head commit is not known"));
	assert_int_equal(metric(REFUSED("head_unknown")), 1);
}

static void approval_409_moved_on(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;

	fakeforge_script_approve(
		&b->ff, FAKE_APPROVE, PB_EINVAL, FORGE_APPROVE_SHA_MISMATCH,
		"409 SHA does not match HEAD of source branch");
	b->ff.version_head = "5555555555555555555555555555555555555555";
	b->ff.version_patch_id = "6666666666666666666666666666666666666666";
	add(b, PLAN_IDX_COMMENT, PLAN_COMMENT, "Acked.\n");
	add_approve(b, "alice");
	assert_int_equal(run(b), 0);
	assert_int_equal(b->res.done, 3); /* comment, approval, its note */
	assert_int_equal(b->res.failed.nr, 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_APPROVE), 1);
	assert_int_equal(b->ff.approvals, 0);
	/* The note goes into the comment's thread. */
	c = fakeforge_call(&b->ff, FAKE_REPLY_DISCUSSION, 0);
	assert_non_null(c);
	assert_string_equal(c->arg, b->ff.notes[0].discussion);
	assert_non_null(strstr(c->body, "no longer the head"));
	/* No revision stored to compare patch-ids with: no rebase. */
	assert_non_null(strstr(c->body, "Please review the current"));
	assert_int_equal(metric(REFUSED("moved_on")), 1);
	assert_true(metric(MADE) <= 0);
}

static void approval_refused_user(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;

	fakeforge_script_approve(&b->ff, FAKE_APPROVE, PB_EPERM,
				 FORGE_APPROVE_REFUSED, "401 Unauthorized");
	add_approve(b, "mallory");
	assert_int_equal(run(b), 0);
	c = fakeforge_call(&b->ff, FAKE_CREATE_DISCUSSION, 0);
	assert_non_null(c);
	assert_non_null(strstr(c->body, "not allowed to approve"));
	assert_int_equal(metric(REFUSED("forge_refused")), 1);
	assert_null(b->ff.acting);
}

static void approval_no_sudo_waits_for_operator(void **state)
{
	struct bed *b = *state;
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);

	b->ff.sudo = FORGE_SUDO_NO_SCOPE;
	fakeforge_script_approve(&b->ff, FAKE_APPROVE, PB_EPERM,
				 FORGE_APPROVE_NO_SUDO,
				 "403 insufficient_scope");
	add_approve(b, "alice");
	assert_int_equal(run(b), PB_ETEMP);
	/* An operator's problem: nothing said on the MR, kept for status. */
	assert_int_equal(b->ff.nr_notes, 0);
	assert_int_equal(b->res.failed.nr, 0);
	assert_int_equal(
		store_cursor_get(&v, b->st, STORE_CURSOR_FORGE_PROBLEM), 0);
	assert_true(v.len > 0);

	/* The token fixed: the approval lands and the problem is gone. */
	b->ff.sudo = FORGE_SUDO_OK;
	assert_int_equal(run(b), 0);
	assert_int_equal(b->ff.approvals, 1);
	buf_reset(&v);
	assert_int_equal(
		store_cursor_get(&v, b->st, STORE_CURSOR_FORGE_PROBLEM), 0);
	assert_int_equal(v.len, 0);
	assert_int_equal(metric(MADE), 1);
	buf_release(&v);
}

static void approval_reauth_required(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;

	fakeforge_script_approve(&b->ff, FAKE_APPROVE, PB_EPERM,
				 FORGE_APPROVE_REAUTH, "401 reauthenticate");
	add_approve(b, "alice");
	assert_int_equal(run(b), 0);
	c = fakeforge_call(&b->ff, FAKE_CREATE_DISCUSSION, 0);
	assert_non_null(c);
	assert_non_null(strstr(c->body, "re-authenticate"));
	assert_int_equal(metric(REFUSED("reauth_required")), 1);
}

static void nak_label_discussion_unapprove(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;
	struct plan_action *a;

	strlist_push(&b->ff.labels, "Acks::Acked");
	strlist_push(&b->ff.labels, "bug");
	b->ff.approvals = 1;
	add(b, PLAN_IDX_NAK_LABEL, PLAN_NAK_LABEL, NULL);
	add(b, PLAN_IDX_NAK_DISCUSSION, PLAN_NAK_DISCUSSION, "NAK: no.\n");
	a = add(b, PLAN_IDX_NAK_UNAPPROVE, PLAN_UNAPPROVE, NULL);
	a->user = (char *)"bob";
	assert_int_equal(run(b), 0);
	assert_int_equal(b->res.done, 3);
	c = fakeforge_call(&b->ff, FAKE_UPDATE_LABELS, 0);
	assert_non_null(c);
	assert_string_equal(c->arg, "+Acks::NACKed -Acks::Acked");
	assert_int_equal(strlist_find(&b->ff.labels, "bug") >= 0, 1);
	c = fakeforge_call(&b->ff, FAKE_CREATE_DISCUSSION, 0);
	assert_string_equal(c->body, "NAK: no.\n");
	c = fakeforge_call(&b->ff, FAKE_UNAPPROVE, 0);
	assert_non_null(c);
	assert_string_equal(c->user, "bob");
	assert_int_equal(b->ff.approvals, 0);

	/* The label standing already: nothing to change. */
	fakeforge_clear_calls(&b->ff);
	b->p.nr = 0;
	b->t.message_id = "reply.2@example.org";
	add(b, PLAN_IDX_NAK_LABEL, PLAN_NAK_LABEL, NULL);
	assert_int_equal(run(b), 0);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_UPDATE_LABELS), 0);
}

static void token_401_waits_then_lands_once(void **state)
{
	struct bed *b = *state;

	fakeforge_script(&b->ff, FAKE_CREATE_DISCUSSION, FAKE_TOKEN, 0,
			 "Token is expired");
	add(b, PLAN_IDX_COMMENT, PLAN_COMMENT, "Hello.\n");
	add_approve(b, "alice");
	assert_int_equal(run(b), PB_ETEMP);
	assert_int_equal(b->res.failed.nr, 0); /* not the request's fault */
	assert_int_equal(fakeforge_count(&b->ff, FAKE_APPROVE), 0);
	assert_int_equal(forge_token_problem(&b->ff.base), FORGE_TOKEN_EXPIRED);
	assert_int_equal(b->ff.nr_notes, 0);

	assert_int_equal(run(b), 0);
	assert_int_equal(b->ff.nr_notes, 1);
	assert_int_equal(b->ff.approvals, 1);
	assert_int_equal(forge_token_problem(&b->ff.base), FORGE_TOKEN_OK);
	assert_int_equal(journal(b, PLAN_IDX_COMMENT), STORE_ACTION_DONE);
}

static void forge_5xx_retried_later(void **state)
{
	struct bed *b = *state;

	fakeforge_script(&b->ff, FAKE_APPROVE, FAKE_5XX, 0,
			 "503 Service Unavailable");
	add(b, PLAN_IDX_COMMENT, PLAN_COMMENT, "Hello.\n");
	add_approve(b, "alice");
	assert_int_equal(run(b), PB_ETEMP);
	assert_int_equal(b->res.failed.nr, 0);
	assert_int_equal(b->ff.nr_notes, 1);
	assert_int_equal(b->ff.approvals, 0);
	assert_null(b->ff.acting);
	assert_int_equal(journal(b, PLAN_IDX_APPROVE(0)), STORE_ACTION_FAILED);

	assert_int_equal(run(b), 0);
	assert_int_equal(b->res.skipped, 1); /* the comment */
	assert_int_equal(b->res.done, 1);
	assert_int_equal(b->ff.approvals, 1);
	assert_int_equal(b->ff.nr_notes, 1);
	assert_int_equal(metric(MADE), 1);
}

static void lost_response_found_by_marker(void **state)
{
	struct bed *b = *state;
	const struct fake_call *c;

	fakeforge_script(&b->ff, FAKE_CREATE_DISCUSSION, FAKE_LOST, 0, NULL);
	add(b, PLAN_IDX_COMMENT, PLAN_COMMENT, "Hello.\n");
	assert_int_equal(run(b), PB_ETEMP);
	assert_int_equal(b->ff.nr_notes, 1); /* it landed */
	assert_int_equal(journal(b, PLAN_IDX_COMMENT), STORE_ACTION_FAILED);

	fakeforge_clear_calls(&b->ff);
	assert_int_equal(run(b), 0);
	assert_int_equal(b->res.skipped, 1);
	assert_int_equal(b->res.done, 0);
	c = fakeforge_call(&b->ff, FAKE_FIND_NOTE_BY_MARKER, 0);
	assert_non_null(c);
	assert_string_equal(c->marker, b->ff.notes[0].marker);
	assert_int_equal(fakeforge_count(&b->ff, FAKE_CREATE_DISCUSSION), 0);
	assert_int_equal(b->ff.nr_notes, 1); /* not posted twice */
	assert_int_equal(journal(b, PLAN_IDX_COMMENT), STORE_ACTION_DONE);
}

static void permanent_failure_fails_one_action(void **state)
{
	struct bed *b = *state;

	fakeforge_script(&b->ff, FAKE_CREATE_DISCUSSION, FAKE_FAIL, PB_EPERM,
			 "403 Forbidden");
	add(b, PLAN_IDX_COMMENT, PLAN_COMMENT, "Hello.\n");
	add_approve(b, "alice");
	assert_int_equal(run(b), 0);
	assert_int_equal(b->res.failed.nr, 1);
	assert_non_null(strstr(b->res.failed.items[0], "403 Forbidden"));
	assert_int_equal(b->ff.approvals, 1);
	assert_int_equal(journal(b, PLAN_IDX_COMMENT), STORE_ACTION_FAILED);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(comment_starts_a_discussion_once),
		T(comment_replies_in_its_thread),
		T(comment_gone_thread_starts_one),
		T(diff_note_at_its_position),
		T(diff_note_refused_position_falls_back),
		T(diff_reply_gone_thread_becomes_diff_note),
		T(approval_as_the_reviewer),
		T(approval_provenance_kept),
		T(approval_of_merged_mr_not_asked),
		T(approval_without_head_not_asked),
		T(approval_409_moved_on),
		T(approval_refused_user),
		T(approval_no_sudo_waits_for_operator),
		T(approval_reauth_required),
		T(nak_label_discussion_unapprove),
		T(token_401_waits_then_lands_once),
		T(forge_5xx_retried_later),
		T(lost_response_found_by_marker),
		T(permanent_failure_fails_one_action),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
