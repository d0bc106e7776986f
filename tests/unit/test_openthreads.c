/*
 * openthreads_cover(): the review threads of earlier versions as vN+1's
 * cover letter lists them - the open ones grouped by the version they
 * were opened on, with file:line, who, the first line and the link; the
 * ones resolved since vN briefly; internal threads, comments on no line
 * and threads resolved before vN left out; the sender of a list reply
 * the bridge posted named; the list bounded.
 */
#include "cmocka_all.h"
#include "outbound/openthreads.h"
#include "util/buf.h"

#include <stdio.h>
#include <string.h>

#define V1 "1111111111111111111111111111111111111111"
#define V2 "2222222222222222222222222222222222222222"
#define URL "https://gitlab.example.org/group/project/-/merge_requests/7"
/* vN (v2) was mailed at 2026-12-02T00:00:00Z. */
#define PREV_MS 1796169600000LL

struct fx {
	struct forge_note notes[64];
	struct forge_discussion disc[64];
	struct forge_discussion_list dl;
};

static int rev_of(const char *head, const char *base, void *arg)
{
	(void)base;
	(void)arg;
	if (head && !strcmp(head, V1))
		return 1;
	if (head && !strcmp(head, V2))
		return 2;
	return 0;
}

static struct forge_note *add(struct fx *f, int64_t id, const char *who,
			      const char *head, const char *path, int64_t line,
			      const char *body)
{
	size_t i = f->dl.nr++;
	struct forge_note *n = &f->notes[i];
	struct forge_discussion *d = &f->disc[i];

	memset(n, 0, sizeof(*n));
	memset(d, 0, sizeof(*d));
	n->id = id;
	n->author.name = (char *)who;
	n->body = (char *)body;
	n->resolvable = 1;
	if (path) {
		n->type = (char *)"DiffNote";
		n->has_position = 1;
		n->position.head_sha = (char *)head;
		n->position.new_path = (char *)path;
		n->position.new_line = line;
	} else {
		n->type = (char *)"DiscussionNote";
	}
	d->id = (char *)"d";
	d->notes = n;
	d->nr_notes = 1;
	f->dl.items = f->disc;
	return n;
}

static void resolve(struct forge_note *n, const char *by, const char *at)
{
	n->resolved = 1;
	n->resolved_by.name = (char *)by;
	n->resolved_at = (char *)at;
}

static void opts(struct openthreads_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->revision = 3;
	o->prev_revision = 2;
	o->prev_ms = PREV_MS;
	o->url = URL;
	o->rev_of = rev_of;
	o->bot = "patchbridge";
}

static void cover_lists(void **state)
{
	struct fx f;
	struct openthreads_opts o;
	struct buf out = BUF_INIT(65536);
	struct forge_note *n;

	(void)state;
	memset(&f, 0, sizeof(f));
	add(&f, 30, "Bob Reviewer", V2, "net/core.c", 88,
	    "\n  Needs a lock.\nSecond line.");
	add(&f, 10, "Bob Reviewer", V1, "net/core.c", 42,
	    "Why not a spinlock here?");
	add(&f, 20, "Carol", V1, "docs/net.rst", 7,
	    "This sentence runs on and on and on, far longer than a line in "
	    "a list should.");
	resolve(add(&f, 40, "Dave", V1, "net/core.c", 12, "Typo."),
		"Alice Developer", "2026-12-03T10:00:00Z");
	/* Resolved before v2 was mailed: v2's readers knew. */
	resolve(add(&f, 50, "Dave", V1, "net/core.c", 13, "Old."), "Alice",
		"2026-12-01T10:00:00Z");
	/* Internal, a plain comment, a system note: never named. */
	add(&f, 60, "Erin", V1, "net/core.c", 1, "Members only.")->internal = 1;
	n = add(&f, 70, "Erin", NULL, NULL, 0, "LGTM");
	n->resolvable = 0;
	f.disc[f.dl.nr - 1].individual_note = 1;
	add(&f, 80, "Erin", NULL, NULL, 0, "approved this merge request")
		->system = 1;
	/* A general thread, on no line: a comment, not listed. */
	add(&f, 90, "Frank", NULL, NULL, 0, "Please add a test.");
	/* The bridge's note for a list reply: its footer names the sender,
	 * its text is Markdown. */
	n = add(&f, 95, "patchbridge bot", V2, "net/core.c", 99,
		"Is n \\< 0 possible?\n\n<sub>\xe2\x80\x94 Rob Reviewer "
		"&lt;rob@review.example&gt; via email, on v2 patch 1/1 (DKIM "
		"verified)</sub>\n<!-- patchbridge:1 -->");
	n->author.username = (char *)"patchbridge";

	opts(&o);
	assert_int_equal(openthreads_cover(&out, &f.dl, &o), 0);
	assert_string_equal(
		out.data,
		"Open from v1:\n"
		"- net/core.c:42 (Bob Reviewer): Why not a spinlock here?\n"
		"  " URL "#note_10\n"
		"- docs/net.rst:7 (Carol): This sentence runs on and on and on, "
		"far longer than a line in a...\n"
		"  " URL "#note_20\n"
		"\n"
		"Open from v2:\n"
		"- net/core.c:88 (Bob Reviewer): Needs a lock.\n"
		"  " URL "#note_30\n"
		"- net/core.c:99 (Rob Reviewer): Is n < 0 possible?\n"
		"  " URL "#note_95\n"
		"\n"
		"Resolved since v2:\n"
		"- net/core.c:12 (Dave), resolved by Alice Developer\n"
		"\n");
	buf_release(&out);
}

static void nothing_to_say(void **state)
{
	struct fx f;
	struct openthreads_opts o;
	struct buf out = BUF_INIT(4096);

	(void)state;
	memset(&f, 0, sizeof(f));
	opts(&o);
	assert_int_equal(openthreads_cover(&out, &f.dl, &o), 0);
	assert_int_equal(out.len, 0);
	resolve(add(&f, 5, "Dave", V1, "a.c", 1, "x"), "Alice",
		"2026-11-01T00:00:00Z");
	assert_int_equal(openthreads_cover(&out, &f.dl, &o), 0);
	assert_int_equal(out.len, 0);
}

static void bounded_and_cleaned(void **state)
{
	static struct fx f;
	struct openthreads_opts o;
	struct buf out = BUF_INIT(65536);
	const char *p;
	size_t k, items = 0;

	(void)state;
	memset(&f, 0, sizeof(f));
	for (k = 0; k < OPENTHREADS_LIST_MAX + 3; k++)
		add(&f, (int64_t)k + 1, "Bob\x1b[31m\nEvil", V1, "a.c",
		    (int64_t)k + 1, "x\xe2\x80\xae");
	opts(&o);
	assert_int_equal(openthreads_cover(&out, &f.dl, &o), 0);
	for (p = out.data; (p = strstr(p, "\n- ")); p++)
		items++;
	assert_int_equal(items, OPENTHREADS_LIST_MAX);
	assert_non_null(strstr(out.data,
			       "\nand 3 more threads on the forge: " URL "\n"));
	assert_null(strchr(out.data, '\x1b'));
	assert_null(strstr(out.data, "\xe2\x80\xae"));
	assert_non_null(strstr(out.data, "(Bob[31m Evil): x\n"));
	buf_release(&out);
}

/* A cut falls on a character boundary. */
static void cut_on_character(void **state)
{
	struct fx f;
	struct openthreads_opts o;
	struct buf out = BUF_INIT(4096);
	char body[200];

	(void)state;
	memset(&f, 0, sizeof(f));
	memset(body, 'a', OPENTHREADS_LINE_MAX - 1);
	strcpy(body + OPENTHREADS_LINE_MAX - 1, "\xc3\xa9\xc3\xa9");
	add(&f, 1, "Bob", V1, "a.c", 1, body);
	opts(&o);
	assert_int_equal(openthreads_cover(&out, &f.dl, &o), 0);
	assert_non_null(strstr(out.data, "a...\n"));
	assert_null(strstr(out.data, "\xef\xbf\xbd")); /* no U+FFFD */
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cover_lists),
		cmocka_unit_test(nothing_to_say),
		cmocka_unit_test(bounded_and_cleaned),
		cmocka_unit_test(cut_on_character),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
