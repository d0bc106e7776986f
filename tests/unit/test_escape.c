/*
 * inbound/escape: mail text made inert for GitLab notes.
 *
 * Besides exact outputs, every case is checked against the rules GitLab
 * applies to a note body: no line may start with "/" (after blanks, to be
 * safe), no "<" may survive outside a code block, and no "@" at a word
 * start may be followed directly by a name.
 */
#include "cmocka_all.h"
#include "inbound/escape.h"
#include "util/err.h"

#include <stdio.h>
#include <string.h>

#define MAX (1024 * 1024)

static char *md(const char *in)
{
	static struct buf b = BUF_INIT(MAX);

	buf_reset(&b);
	assert_int_equal(escape_markdown(&b, in, strlen(in)), 0);
	return b.data;
}

static char *inl(const char *in)
{
	static struct buf b = BUF_INIT(MAX);

	buf_reset(&b);
	assert_int_equal(escape_inline(&b, in, strlen(in)), 0);
	return b.data;
}

/* No line of out may look like a quick action to GitLab, even indented. */
static void assert_no_command(const char *out)
{
	const char *p = out;

	while (*p) {
		const char *q = p;

		while (*q == ' ' || *q == '\t')
			q++;
		if (*q == '/')
			fail_msg("a line starts with '/': %s", p);
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
}

static void test_quick_actions(void **state)
{
	char *out;

	(void)state;
	out = md("/approve\n/merge\n  /label ~foo\n/unknown word\n");
	assert_no_command(out);
	assert_string_equal(out, "\\/approve\\\n\\/merge\\\n\\/label "
				 "\\~" ESCAPE_WJ "foo\\\n\\/unknown word\n");
	out = md("Looks good.\n\n/approve\n\nThanks");
	assert_no_command(out);
	assert_non_null(strstr(out, "\\/approve"));
	/* In code: a zero-width space, which does not show. */
	out = md("Try:\n\n\tfoo();\n\t/approve\n    /merge\n");
	assert_no_command(out);
	assert_non_null(strstr(out, "\t" ESCAPE_ZWSP "/approve\n"));
	assert_non_null(strstr(out, "    " ESCAPE_ZWSP "/merge\n"));
	/* CR line ends do not hide a command either. */
	out = md("ok\r/approve\r\n/merge");
	assert_no_command(out);
	/* A slash elsewhere on a line is left alone. */
	assert_string_equal(md("and/or a/b"), "and/or a/b\n");
}

static void test_html(void **state)
{
	char *out;

	(void)state;
	out = md("<script>alert(1)</script> & <b>bold</b>");
	assert_null(strchr(out, '<'));
	assert_string_equal(out, "&lt;script&gt;alert(1)&lt;/script&gt; "
				 "&amp; &lt;b&gt;bold&lt;/b&gt;\n");
	out = md("<!-- patchbridge:pb1-00.0 -->");
	assert_null(strstr(out, "<!--"));
	/* In code the text stays, but can never form a marker. */
	out = md("\t<!-- patchbridge:pb1-00.0 -->\n");
	assert_null(strstr(out, "<!--"));
	assert_non_null(strstr(out, "<" ESCAPE_ZWSP "!--"));
	out = inl("Mallory <evil@x> <img src=x onerror=alert(1)>");
	assert_null(strchr(out, '<'));
}

static void test_markdown(void **state)
{
	(void)state;
	assert_string_equal(md("# not a heading"), "\\# not a heading\n");
	assert_string_equal(md("1. one\n2) two"), "1\\. one\\\n2\\) two\n");
	assert_string_equal(md("text\n---\n==="), "text\\\n\\---\\\n\\===\n");
	assert_string_equal(md("- item\n+ item"), "\\- item\\\n\\+ item\n");
	assert_string_equal(md("*em* _em_ [l](http://x) ![i](y) a|b ~~s~~"),
			    "\\*" ESCAPE_WJ "em\\* \\_em\\_ \\[" ESCAPE_WJ
			    "l\\](http://x) !" ESCAPE_WJ "\\[" ESCAPE_WJ
			    "i\\](y) a\\|b \\~" ESCAPE_WJ "\\~" ESCAPE_WJ
			    "s\\~" ESCAPE_WJ "\\~\n");
	assert_string_equal(md("{+ins+} back\\slash"),
			    "\\{+ins+\\} back\\\\slash\n");
	/* Paragraphs stay paragraphs; blanks at line ends go. */
	assert_string_equal(md("a  \nb\n\n\n\nc\n"), "a\\\nb\n\nc\n");
	assert_string_equal(md(""), "");
	assert_string_equal(md("\n \n\t\n"), "");
	/* Control characters are dropped. */
	assert_string_equal(md("a\x1b[31mred\x7f\x01"),
			    "a\\[" ESCAPE_WJ "31mred\n");
}

static void test_fences(void **state)
{
	char *out;

	(void)state;
	/* Backticks in prose cannot open code. */
	out = md("```\n/approve\n```");
	assert_no_command(out);
	assert_null(strstr(out, "```"));
	/* A code block is fenced one backtick longer than its longest run. */
	out = md("Use this:\n\n    ```\n    x\n    ````\n\nbye");
	assert_non_null(strstr(out, "\n`````\n    ```\n    x\n    ````\n"
				    "`````\n"));
	/* Adjacent indented paragraphs share one fence. */
	out = md("\tint a;\n\n\tint b;\n");
	assert_string_equal(out, "```\n\tint a;\n\n\tint b;\n```\n");
	/* A pasted diff is code too. */
	out = md("diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\n");
	assert_true(!strncmp(out, "```\n", 4));
	/* escape_code_block. */
	{
		struct buf b = BUF_INIT(MAX);

		assert_int_equal(
			escape_code_block(&b, "+\tx = 1;\n", 9, "diff"), 0);
		assert_string_equal(b.data, "```diff\n+\tx = 1;\n```\n");
		buf_release(&b);
	}
}

static void test_mentions(void **state)
{
	char *out;

	(void)state;
	out = md("@all please look, cc @bob-x and (@carol)");
	assert_string_equal(out,
			    "@" ESCAPE_WJ "all please look, cc "
			    "@" ESCAPE_WJ "bob-x and (@" ESCAPE_WJ "carol)\n");
	/* Addresses are not mentions. */
	assert_string_equal(md("mail alice@example.org"),
			    "mail alice@example.org\n");
	assert_string_equal(inl("@all"), "@" ESCAPE_WJ "all");
}

/*
 * The text GitLab's reference filters would see in the note as rendered
 * (lib/banzai/filter/references/): backslash escapes and the entities
 * escape.c writes resolved, fenced code left out (no reference is made
 * in code).  Every reference begins with its prefix character followed
 * directly by what it names ("#1", "!2", "~bug", "%\"v1\"", "$3", "&4",
 * "^alert#5", "*iteration:6", "[work_item:7]", "@all"; "group/project>"
 * ends with one), so none may be.
 */
static int is_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

static int is_path_char(char c)
{
	return is_word_char(c) || c == '.' || c == '-';
}

/* text[..at) ends with "namespace/project" */
static int ends_in_path(const char *text, const char *at)
{
	const char *k = at;

	while (k > text && is_path_char(k[-1]))
		k--;
	return k < at && k - text >= 2 && k[-1] == '/' && is_path_char(k[-2]);
}

static void assert_no_reference(const char *out)
{
	char text[4096];
	size_t n = 0;
	const char *p = out;
	int fenced = 0;

	while (*p && n + 1 < sizeof(text)) {
		if ((p == out || p[-1] == '\n') && !strncmp(p, "```", 3)) {
			fenced = !fenced;
			p = strchr(p, '\n');
			if (!p)
				break;
			p++;
			continue;
		}
		if (fenced) {
			p++;
			continue;
		}
		if (*p == '\\' && p[1] &&
		    strchr("\\`*_[]|~{}/#+-=.)!$%&^\n", p[1]))
			p++;
		else if (!strncmp(p, "&amp;", 5))
			p += 4;
		else if (!strncmp(p, "&lt;", 4)) {
			text[n++] = '<';
			p += 4;
			continue;
		} else if (!strncmp(p, "&gt;", 4)) {
			text[n++] = '>';
			p += 4;
			continue;
		}
		text[n++] = *p++;
	}
	text[n] = '\0';
	for (p = text; *p; p++) {
		if (strchr("#!$%&~^*[@", *p) && p[1] && p[1] != ' ' &&
		    p[1] != '\n' && p[1] != '\t' &&
		    strncmp(p + 1, ESCAPE_WJ, 3) &&
		    !(*p == '@' && p > text && is_word_char(p[-1])))
			fail_msg("a reference at \"%.20s\" in %s", p, out);
		if (*p == '>' && ends_in_path(text, p))
			fail_msg("a project reference at \"%.20s\" in %s",
				 p > text + 8 ? p - 8 : text, out);
	}
}

/*
 * GitLab's references in relayed text: each would render as a link and,
 * for issues, merge requests, epics and users, make a cross-reference
 * system note or a notification on the sender's behalf.  A word joiner
 * (U+2060) after the prefix character leaves the text as written and no
 * reference: it holds on every GitLab, where a backslash escape holds
 * only for some characters on some versions.
 */
static void test_references(void **state)
{
	static const char *const refs[] = {
		"See !2 and #1 please.",
		"group/project!2 and project#3 and group/sub/p&4",
		"%\"v1.0 release\" and %v2 and %12",
		"~bug ~\"needs review\" ~\"scope::x\" ~42 group/p~bug",
		"$12 and group/project$3",
		"@user @all (@group/team)",
		"[[_TOC_]]",
		"[TOC]",
		"[toc]",
		"&5 and group&\"epic\"",
		"^alert#1 and *iteration:3 and *iteration:\"Sprint 4\"",
		"[work_item:4] [vulnerability:5] [wiki_page:Home]",
		"group/project> and sub/group/project&gt;",
		"a line\n#12 starts with one\n!3 too",
	};
	size_t i;
	char *out;

	(void)state;
	for (i = 0; i < sizeof(refs) / sizeof(*refs); i++) {
		out = md(refs[i]);
		assert_no_reference(out);
		out = inl(refs[i]);
		assert_no_reference(out);
	}
	assert_string_equal(md("See !2 and #1, ~bug."),
			    "See !" ESCAPE_WJ "2 and #" ESCAPE_WJ "1, "
			    "\\~" ESCAPE_WJ "bug.\n");
	assert_string_equal(md("group/project>"),
			    "group/project" ESCAPE_WJ "&gt;\n");
	/* What is no reference stays as it was: commit SHAs, a prefix
	 * before a blank, mail addresses, arrows after a blank. */
	assert_string_equal(md("Fixes: 1234abcd5678 (\"x\")"),
			    "Fixes: 1234abcd5678 (\"x\")\n");
	assert_string_equal(md("# not a heading, 100 % sure, a ~ b, x > y"),
			    "\\# not a heading, 100 % sure, a \\~ b, "
			    "x &gt; y\n");
	assert_string_equal(md("mail alice@example.org"),
			    "mail alice@example.org\n");
	/* Links keep working: nothing is put inside a URL. */
	assert_string_equal(
		md("https://lore.kernel.org/r/?q=a%20b&x=1#t ok"),
		"https://lore.kernel.org/r/?q=a%20b&amp;x=1#t ok\n");
	assert_string_equal(md("(see <https://x.example/a#b>)"),
			    "(see &lt;https://x.example/a#b&gt;)\n");
	assert_string_equal(md("WWW.x.example/a#b"), "WWW.x.example/a#b\n");
	/* Only what GitLab links is a URL: an unknown scheme, a URL inside
	 * a word, or an entity-like tail GFM leaves out of the link are
	 * text. */
	out = md("foo://x/!2 ahttp://x/#3 http://x/a&12;");
	assert_no_reference(out);
	assert_string_equal(out, "foo://x/!" ESCAPE_WJ "2 ahttp://x/#" ESCAPE_WJ
				 "3 http://x/a&amp;" ESCAPE_WJ "12;\n");
	/* In code nothing is a reference: code stays verbatim. */
	assert_string_equal(md("\tif (!x && #y) ~z;\n"),
			    "```\n\tif (!x && #y) ~z;\n```\n");
}

/*
 * Random text from the characters that make references, markup and
 * quick actions (no URL can form): whatever the mix, no reference, no
 * tag and no command survives.
 */
static void test_references_random(void **state)
{
	static const char alphabet[] = "#!$%&~^*[]@<>/\\ \n\tab1_-.:\"'()`";
	unsigned long seed = 2463534242UL;
	char in[48];
	size_t round, i, n;
	const char *out, *q;

	(void)state;
	for (round = 0; round < 20000; round++) {
		seed ^= seed << 13;
		seed ^= seed >> 17;
		seed ^= seed << 5;
		seed &= 0xffffffffUL;
		n = seed % (sizeof(in) - 1);
		for (i = 0; i < n; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			seed &= 0xffffffffUL;
			in[i] = alphabet[seed % (sizeof(alphabet) - 1)];
		}
		in[n] = '\0';
		out = md(in);
		assert_no_reference(out);
		assert_no_command(out);
		/* a "<" only inside a fenced code block */
		if (strchr(out, '<') && !strstr(out, "```"))
			fail_msg("a tag from %s: %s", in, out);
		out = inl(in);
		assert_no_reference(out);
		for (q = out; *q; q++)
			if (*q == '<')
				fail_msg("a tag from %s: %s", in, out);
	}
}

static void test_inline(void **state)
{
	(void)state;
	assert_string_equal(inl("two\nlines"), "two lines");
	assert_string_equal(inl("/approve"), "\\/approve");
	assert_string_equal(inl("# x"), "\\# x");
	assert_string_equal(inl("src/my_file.c"), "src/my\\_file.c");
}

static void test_limit(void **state)
{
	struct buf b = BUF_INIT(8);

	(void)state;
	assert_int_equal(escape_markdown(&b, "<<<<<<<<<<", 10), PB_ELIMIT);
	assert_int_equal(b.len, 0);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quick_actions),
		cmocka_unit_test(test_html),
		cmocka_unit_test(test_markdown),
		cmocka_unit_test(test_fences),
		cmocka_unit_test(test_mentions),
		cmocka_unit_test(test_references),
		cmocka_unit_test(test_references_random),
		cmocka_unit_test(test_inline),
		cmocka_unit_test(test_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
