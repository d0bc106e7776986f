#include "cmocka_all.h"
#include "core/msgid.h"
#include "forge/forge.h"
#include "inbound/marker.h"
#include "mail/diff.h"
#include "outbound/forgetext.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

static void md_is(const char *in, const char *want)
{
	struct buf b = BUF_INIT(1 << 20);

	assert_int_equal(forgetext_markdown(&b, in, strlen(in)), 0);
	assert_string_equal(b.data, want);
	buf_release(&b);
}

static void test_markdown_inline(void **state)
{
	(void)state;
	md_is("Looks **good** to me, _mostly_.",
	      "Looks *good* to me, _mostly_.\n");
	md_is("See [the docs](https://example.org/d) and "
	      "![logo](https://example.org/l.png).",
	      "See the docs <https://example.org/d> and "
	      "logo <https://example.org/l.png>.\n");
	md_is("[https://x.example](https://x.example)",
	      "<https://x.example>\n");
	md_is("a \\*literal\\* star, `**code**` kept, [not a link]",
	      "a *literal* star, `**code**` kept, [not a link]\n");
}

static void test_markdown_blocks(void **state)
{
	(void)state;
	md_is("## Summary ##\r\n\r\n\r\n\r\nText\r\n", "Summary\n\nText\n");
	md_is("Try:\n\n```c\nint x;\n\nreturn x;\n```\nok",
	      "Try:\n\n    int x;\n\n    return x;\nok\n");
	md_is("\n\n  \n", "");
	md_is("#hashtag stays", "#hashtag stays\n");
}

static void test_markdown_comments(void **state)
{
	(void)state;
	md_is("Thanks!\n\n<!-- patchbridge:abc.0 -->\n", "Thanks!\n");
	md_is("a<!-- x\ny -->b", "ab\n");
	md_is("unclosed <!-- comment\nruns to the end", "unclosed\n");
}

static const char PATCH[] = "Subject: [PATCH 1/2] x\n"
			    "---\n"
			    " src/a/x.c | 3 ++-\n"
			    "\n"
			    "diff --git a/src/a/x.c b/src/a/x.c\n"
			    "index 1111111..2222222 100644\n"
			    "--- a/src/a/x.c\n"
			    "+++ b/src/a/x.c\n"
			    "@@ -1,4 +1,5 @@\n"
			    " int x(void)\n"
			    " {\n"
			    "-\treturn 1;\n"
			    "+\tint v = 2;\n"
			    "+\treturn v;\n"
			    " }\n"
			    "diff --git a/old/name.c b/new/name.c\n"
			    "similarity index 90%\n"
			    "rename from old/name.c\n"
			    "rename to new/name.c\n"
			    "--- a/old/name.c\n"
			    "+++ b/new/name.c\n"
			    "@@ -10,3 +10,3 @@\n"
			    " a\n"
			    "-b\n"
			    "+B\n"
			    " c\n";

static void quote_is(const char *path, int64_t o, int64_t n, const char *want)
{
	struct diff *d = NULL;
	struct buf b = BUF_INIT(1 << 20);

	assert_int_equal(diff_parse(&d, PATCH, strlen(PATCH)), 0);
	assert_int_equal(forgetext_quote_hunk(&b, d, path, o, n), 0);
	assert_string_equal(b.data, want);
	buf_release(&b);
	diff_free(d);
}

static void test_quote_added_removed_context(void **state)
{
	(void)state;
	/* An added line: new side only. */
	quote_is("src/a/x.c", 0, 4,
		 "> @@ -1,4 +1,5 @@\n>  int x(void)\n>  {\n"
		 "> -\treturn 1;\n> +\tint v = 2;\n> +\treturn v;\n");
	/* A removed line: old side only. */
	quote_is("src/a/x.c", 3, 0,
		 "> @@ -1,4 +1,5 @@\n>  int x(void)\n>  {\n> -\treturn 1;\n");
	/* A context line: both sides. */
	quote_is("src/a/x.c", 2, 2,
		 "> @@ -1,4 +1,5 @@\n>  int x(void)\n>  {\n");
}

static void test_quote_rename(void **state)
{
	(void)state;
	quote_is("new/name.c", 0, 11,
		 "> @@ -10,3 +10,3 @@\n>  a\n> -b\n> +B\n");
	quote_is("old/name.c", 11, 0, "> @@ -10,3 +10,3 @@\n>  a\n> -b\n");
}

static void test_quote_not_found(void **state)
{
	struct diff *d = NULL;
	struct buf b = BUF_INIT(1 << 20);

	(void)state;
	assert_int_equal(diff_parse(&d, PATCH, strlen(PATCH)), 0);
	assert_int_equal(forgetext_quote_hunk(&b, d, "src/a/x.c", 0, 99),
			 PB_ENOTFOUND);
	assert_int_equal(forgetext_quote_hunk(&b, d, "nope.c", 0, 1),
			 PB_ENOTFOUND);
	assert_int_equal(forgetext_quote_hunk(&b, d, "src/a/x.c", 0, 0),
			 PB_ENOTFOUND);
	assert_int_equal(b.len, 0);
	assert_true(forgetext_has_path(d, "old/name.c"));
	assert_false(forgetext_has_path(d, "README"));
	{
		/* The paths it touches: both names of the rename, once. */
		struct strlist paths = STRLIST_INIT;

		strlist_push(&paths, "src/a/x.c");
		diff_paths(&paths, d);
		assert_true(strlist_find(&paths, "old/name.c") >= 0);
		assert_true(strlist_find(&paths, "new/name.c") >= 0);
		assert_int_equal(strlist_find(&paths, "src/a/x.c"), 0);
		diff_paths(&paths, d);
		assert_int_equal(paths.nr, 3);
		strlist_release(&paths);
	}
	buf_release(&b);
	diff_free(d);
}

/* A diff note's suggestion blocks, against PATCH's src/a/x.c (new side:
 * 1 "int x(void)", 2 "{", 3 "\tint v = 2;", 4 "\treturn v;", 5 "}"). */
static void sugg_is(const char *md, int64_t line,
		    const struct forge_suggestion *st, size_t nr, int with_diff,
		    const char *want)
{
	struct forgetext_suggest sg;
	struct diff *d = NULL;
	struct buf b = BUF_INIT(1 << 20);

	assert_int_equal(diff_parse(&d, PATCH, strlen(PATCH)), 0);
	memset(&sg, 0, sizeof(sg));
	sg.path = "src/a/x.c";
	sg.new_line = line;
	sg.stored = st;
	sg.nr_stored = nr;
	sg.diff = with_diff ? d : NULL;
	assert_int_equal(forgetext_markdown_note(&b, md, strlen(md), &sg), 0);
	assert_string_equal(b.data, want);
	buf_release(&b);
	diff_free(d);
}

static void test_suggestion(void **state)
{
	static const char two[] = "Better:\n\n```suggestion:-1+0\n"
				  "\tint v = 3;\n\treturn v;\n```\n\nThanks";
	static const char shown[] = "Better:\n\n"
				    "Suggested change to src/a/x.c lines 3-4:\n"
				    "-\tint v = 2;\n-\treturn v;\n"
				    "+\tint v = 3;\n+\treturn v;\n\nThanks\n";
	struct forge_suggestion st = { 3, 4,
				       (char *)"\tint v = 2;\n"
					       "\treturn v;\n",
				       (char *)"\tint v = 3;\n\treturn v;\n",
				       0 };
	struct forge_suggestion other = st;

	(void)state;
	/* As the forge stored it, with or without the mailed diff. */
	sugg_is(two, 4, &st, 1, 0, shown);
	/* The forge gave none: the mailed diff has the lines. */
	sugg_is(two, 4, NULL, 0, 1, shown);
	/* The forge's suggestion of that order is another text: the
	 * diff's lines, not its. */
	other.from_content = (char *)"something else\n";
	other.to_content = (char *)"not this block\n";
	sugg_is(two, 4, &other, 1, 1, shown);
	/* Neither has them: said so, the block as it is. */
	sugg_is(two, 4, &other, 1, 0,
		"Better:\n\nSuggested change to src/a/x.c lines 3-4 (the lines "
		"it replaces are not in the mailed diff):\n"
		"    \tint v = 3;\n    \treturn v;\n\nThanks\n");
	sugg_is("```suggestion:+3\nx\n```", 4, NULL, 0, 1,
		"Suggested change to src/a/x.c lines 4-7 (the lines it "
		"replaces are not in the mailed diff):\n    x\n");
	/* An empty block removes the line; no range is one line; a range
	 * GitLab does not read is none. */
	sugg_is("```suggestion\n```\n", 3, NULL, 0, 1,
		"Suggested change to src/a/x.c line 3:\n-\tint v = 2;\n");
	sugg_is("~~~suggestion:up\n}\n~~~", 5, NULL, 0, 1,
		"Suggested change to src/a/x.c line 5:\n-}\n+}\n");
	/* Never above line 1; a longer fence holds a shorter one. */
	sugg_is("````suggestion:-9\n```\n````\n", 1, NULL, 0, 1,
		"Suggested change to src/a/x.c line 1:\n-int x(void)\n+```\n");
	/* Not a diff note, a removed line, another language: code. */
	sugg_is("```suggestion\nx\n```", 0, NULL, 0, 1, "    x\n");
	sugg_is("```suggestions\nx\n```", 4, NULL, 0, 1, "    x\n");
	/* A line no file has: code. */
	sugg_is("```suggestion:+100\nx\n```", INT64_MAX - 10, NULL, 0, 1,
		"    x\n");
	/* Applied on the forge already. */
	st.applied = 1;
	sugg_is(two, 4, &st, 1, 0,
		"Better:\n\nSuggested change to src/a/x.c lines 3-4 (applied "
		"on the forge):\n-\tint v = 2;\n-\treturn v;\n"
		"+\tint v = 3;\n+\treturn v;\n\nThanks\n");
}

/* Many blocks: the first FORGETEXT_SUGGESTIONS_MAX as changes, the
 * rest as code, each looked up once. */
static void test_suggestion_bounded(void **state)
{
	struct forgetext_suggest sg;
	struct diff *d = NULL;
	struct buf md = BUF_INIT(1 << 20), b = BUF_INIT(1 << 22);
	size_t i, changes = 0;
	const char *p;

	(void)state;
	for (i = 0; i < FORGETEXT_SUGGESTIONS_MAX + 5; i++)
		assert_int_equal(buf_adds(&md, "```suggestion:-1+1\nx\n```\n"),
				 0);
	assert_int_equal(diff_parse(&d, PATCH, strlen(PATCH)), 0);
	memset(&sg, 0, sizeof(sg));
	sg.path = "src/a/x.c";
	sg.new_line = 2;
	sg.diff = d;
	assert_int_equal(forgetext_markdown_note(&b, md.data, md.len, &sg), 0);
	for (p = b.data; (p = strstr(p, "Suggested change")); p++)
		changes++;
	assert_int_equal(changes, FORGETEXT_SUGGESTIONS_MAX);
	assert_non_null(strstr(b.data, "\n    x\n"));
	buf_release(&md);
	buf_release(&b);
	diff_free(d);
}

static void test_quote_long_hunk_is_cut(void **state)
{
	struct buf text = BUF_INIT(1 << 20), b = BUF_INIT(1 << 20);
	struct diff *d = NULL;
	int i;

	(void)state;
	buf_adds(&text, "diff --git a/f b/f\n--- a/f\n+++ b/f\n"
			"@@ -0,0 +1,100 @@\n");
	for (i = 1; i <= 100; i++)
		buf_addf(&text, "+line %d\n", i);
	assert_int_equal(diff_parse(&d, text.data, text.len), 0);
	assert_int_equal(forgetext_quote_hunk(&b, d, "f", 0, 80), 0);
	assert_non_null(strstr(b.data, "> [...]\n> +line 51\n"));
	assert_null(strstr(b.data, "line 50\n"));
	assert_non_null(strstr(b.data, "> +line 80\n"));
	assert_null(strstr(b.data, "line 81"));
	buf_release(&b);
	buf_release(&text);
	diff_free(d);
}

static void test_msgid_forge(void **state)
{
	struct buf a = BUF_INIT(1024), b = BUF_INIT(1024);
	struct msgid_parsed p;

	(void)state;
	assert_int_equal(msgid_format_forge(&a, "note", "group/sub/project", 12,
					    345, "bridge.example.org"),
			 0);
	assert_string_equal(a.data, "pb.f.note.345.group.sub.project.12@"
				    "bridge.example.org");
	/* Deterministic: the same note gives the same id. */
	assert_int_equal(msgid_format_forge(&b, "note", "group/sub/project", 12,
					    345, "bridge.example.org"),
			 0);
	assert_string_equal(a.data, b.data);
	/* Never taken for a series mail. */
	assert_int_equal(msgid_parse(&p, a.data, a.len), PB_EINVAL);
	buf_reset(&b);
	assert_int_equal(msgid_format_forge(&b, "note", "group/sub/project", 12,
					    346, "bridge.example.org"),
			 0);
	assert_string_not_equal(a.data, b.data);
	buf_reset(&b);
	assert_int_equal(msgid_format_forge(&b, "Note", "g/p", 1, 1, "x.org"),
			 PB_EINVAL);
	assert_int_equal(msgid_format_forge(&b, "note", "g/p", 0, 1, "x.org"),
			 PB_EINVAL);
	assert_int_equal(msgid_format_forge(&b, "note", "g/p", 1, 1, "bad dom"),
			 PB_EINVAL);
	assert_int_equal(b.len, 0);
	buf_release(&a);
	buf_release(&b);
}

/* A marker as the inbound side writes it (inbound/marker.h). */
#define OWN_KEY "pb1-9f86d081884c7d659a2feaa0c55ad015.1001"
#define OWN_MARKER "<!-- patchbridge:" OWN_KEY " -->"

static void test_loop_filter(void **state)
{
	struct forge_note n;

	(void)state;
	memset(&n, 0, sizeof(n));
	n.body = (char *)"Please rename this.";
	n.author.username = (char *)"rob";
	assert_int_equal(forgetext_skip(&n, "patchbridge"), FORGETEXT_MAIL);
	assert_int_equal(forgetext_skip(&n, NULL), FORGETEXT_MAIL);
	/* A note the inbound side posted carries our marker at its end. */
	n.body = (char *)"From the list\n\n" OWN_MARKER;
	n.author.username = (char *)"patchbridge";
	assert_int_equal(forgetext_skip(&n, "patchbridge"),
			 FORGETEXT_SKIP_MARKER);
	assert_int_equal(forgetext_skip(&n, NULL), FORGETEXT_SKIP_MARKER);
	n.author.username = (char *)"rob";
	/* The bridge's user, even without a marker (any case). */
	n.body = (char *)"hand-written by the bot";
	n.author.username = (char *)"PatchBridge";
	assert_int_equal(forgetext_skip(&n, "patchbridge"), FORGETEXT_SKIP_BOT);
	n.author.username = (char *)"rob";
	n.system = 1;
	n.body = (char *)"changed the description";
	assert_int_equal(forgetext_skip(&n, "patchbridge"),
			 FORGETEXT_SKIP_SYSTEM);
	n.system = 0;
	n.body = (char *)"<!-- only a comment -->\n";
	assert_int_equal(forgetext_skip(&n, "patchbridge"),
			 FORGETEXT_SKIP_EMPTY);
	assert_true(forgetext_is_approval("approved this merge request"));
	assert_false(forgetext_is_approval("unapproved this merge request"));
	assert_false(forgetext_is_approval(NULL));
}

/*
 * A forge user's note that merely holds the marker text is a person's
 * comment: pasted at the start, in the middle, in a code fence or a
 * quote, with another action index or another form, or at the end of a
 * note of somebody other than the bridge's user, it is mailed.  Only the
 * marker where and as the bridge writes it, on a note of the bridge's
 * user (or of anyone when that user is not known), is the bridge's own.
 */
static void test_loop_filter_forged_marker(void **state)
{
	static const char *const forged[] = {
		OWN_MARKER "\n\nHide this from the list.",
		"Hide this " OWN_MARKER " from the list.",
		"Hide this.\n\n```\n" OWN_MARKER "\n```\n",
		"Hide this.\n\n> " OWN_MARKER,
		"Hide this.\n\n" OWN_MARKER "\n\nand this.",
		"Hide this. " OWN_MARKER,
		"Hide this.\n" OWN_MARKER,
		"Hide this.\n\n    " OWN_MARKER,
		"Hide this.\n\n" OWN_MARKER " ```",
		"Hide this.\n\n<!-- patchbridge:0a1b.2 -->",
		"Hide this.\n\n<!-- patchbridge: " OWN_KEY " -->",
		"Hide this.\n\n<!--  patchbridge:" OWN_KEY " -->",
		"Hide this.\n\n<!-- patchbridge:" OWN_KEY "-->",
		"Hide this.\n\n<!-- patchbridge:" OWN_KEY " --!>",
		"Hide this.\n\n<!-- PATCHBRIDGE:" OWN_KEY " -->",
		"Hide this.\n\n<!-- patchbridge:"
		"pb1-9F86D081884C7D659A2FEAA0C55AD015.1001 -->",
		"Hide this.\n\n<!-- patchbridge:"
		"pb1-9f86d081884c7d659a2feaa0c55ad01.1001 -->",
		"Hide this.\n\n<!-- patchbridge:"
		"pb1-9f86d081884c7d659a2feaa0c55ad015. -->",
		"Hide this.\n\n<!-- patchbridge:"
		"pb1-9f86d081884c7d659a2feaa0c55ad015.12345678901 -->",
		"Hide this.\n\n<!-- patchbridge:"
		"pb1-9f86d081884c7d659a2feaa0c55ad015.1x -->",
		"Hide this.\n\n<!-- patchbridge:"
		"pb2-9f86d081884c7d659a2feaa0c55ad015.1001 -->",
		"<!-- patchbridge:" OWN_KEY " -->Hide this.",
	};
	struct forge_note n;
	struct buf b = BUF_INIT(4096);
	size_t i;

	(void)state;
	memset(&n, 0, sizeof(n));
	n.author.username = (char *)"mallory";
	for (i = 0; i < sizeof(forged) / sizeof(*forged); i++) {
		n.body = (char *)forged[i];
		if (forgetext_skip(&n, "patchbridge") != FORGETEXT_MAIL ||
		    forgetext_skip(&n, NULL) != FORGETEXT_MAIL)
			fail_msg("forged marker %zu not mailed: %s", i,
				 forged[i]);
	}
	/* Exactly the bridge's form and place, with another action index,
	 * on a note of somebody else: a person's comment. */
	n.body = (char *)"Hide this.\n\n<!-- patchbridge:"
			 "pb1-9f86d081884c7d659a2feaa0c55ad015.7 -->";
	assert_int_equal(forgetext_skip(&n, "patchbridge"), FORGETEXT_MAIL);
	n.body = (char *)"Hide this.\n\n" OWN_MARKER;
	assert_int_equal(forgetext_skip(&n, "patchbridge"), FORGETEXT_MAIL);
	/* The bridge's own notes, as forge_body_with_marker() writes them
	 * (an empty body too), and as GitLab may keep them (a line end
	 * after the marker). */
	n.author.username = (char *)"patchbridge";
	assert_int_equal(forge_body_with_marker(&b, "From the list", OWN_KEY),
			 0);
	n.body = b.data;
	assert_int_equal(forgetext_skip(&n, "patchbridge"),
			 FORGETEXT_SKIP_MARKER);
	assert_int_equal(forgetext_skip(&n, NULL), FORGETEXT_SKIP_MARKER);
	buf_reset(&b);
	assert_int_equal(forge_body_with_marker(&b, "", OWN_KEY), 0);
	n.body = b.data;
	assert_int_equal(forgetext_skip(&n, NULL), FORGETEXT_SKIP_MARKER);
	n.body = (char *)"Quoted from the list\n\n" OWN_MARKER "\n";
	assert_int_equal(forgetext_skip(&n, NULL), FORGETEXT_SKIP_MARKER);
	/* The bridge's user is never mailed, whatever the marker says. */
	n.body = (char *)OWN_MARKER " first";
	assert_int_equal(forgetext_skip(&n, "patchbridge"), FORGETEXT_SKIP_BOT);
	buf_release(&b);
}

/* Every key the inbound side makes is one the loop filter knows: the
 * two sides agree on the form (inbound/marker.h). */
static void test_loop_filter_inbound_keys(void **state)
{
	static const char *const ids[] = { "r1@corp.example", "x@y",
					   "nomsgid.0123abcd", "" };
	static const int indexes[] = { 0,    1,	   999,	 1001,
				       1500, 2001, 2002, 2147483647 };
	char key[INBOUND_MARKER_KEY_SIZE];
	struct buf b = BUF_INIT(4096);
	struct forge_note n;
	size_t i, j;

	(void)state;
	memset(&n, 0, sizeof(n));
	n.author.username = (char *)"patchbridge";
	for (i = 0; i < sizeof(ids) / sizeof(*ids); i++)
		for (j = 0; j < sizeof(indexes) / sizeof(*indexes); j++) {
			inbound_marker_key(key, ids[i], indexes[j]);
			buf_reset(&b);
			assert_int_equal(forge_body_with_marker(
						 &b, "From the list", key),
					 0);
			n.body = b.data;
			assert_int_equal(forgetext_skip(&n, NULL),
					 FORGETEXT_SKIP_MARKER);
			assert_int_equal(forgetext_skip(&n, "patchbridge"),
					 FORGETEXT_SKIP_MARKER);
		}
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_markdown_inline),
		cmocka_unit_test(test_markdown_blocks),
		cmocka_unit_test(test_markdown_comments),
		cmocka_unit_test(test_quote_added_removed_context),
		cmocka_unit_test(test_quote_rename),
		cmocka_unit_test(test_quote_not_found),
		cmocka_unit_test(test_quote_long_hunk_is_cut),
		cmocka_unit_test(test_suggestion),
		cmocka_unit_test(test_suggestion_bounded),
		cmocka_unit_test(test_msgid_forge),
		cmocka_unit_test(test_loop_filter),
		cmocka_unit_test(test_loop_filter_forged_marker),
		cmocka_unit_test(test_loop_filter_inbound_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
