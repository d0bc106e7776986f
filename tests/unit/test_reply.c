#include "cmocka_all.h"
#include "core/diff.h"
#include "core/reply.h"

#include <string.h>

static void test_nak_words(void **state)
{
	static const char *const yes[] = {
		"NACK.",
		"NACK",
		"Nack.",
		"  nak  ",
		"NAK for this",
		"NACK for v4.",
		"Still a NACK",
		"I'll self-NACK this series.",
		"NAK, this breaks the ABI.",
		"I NAK this patch",
		"Strong NAK from me.",
		"This gets a NAK from me.",
		"For now, NAK.",
		"Nacked.",
		"NAK: the lock is taken twice",
		"Sorry, but I have to NAK this.",
		"So no, NACK.",
		"Not pretty, and NAK for the locking.",
		"I'm NAK'ing this one.",
		NULL,
	};
	static const char *const no[] = {
		"snack",
		"ACK",
		"Acked-by: A <a@example.org>",
		"Nacked-by: A <a@example.org>",
		"flags |= I2C_M_IGNORE_NAK;",
		"waiting for an ACK/NAK from the maintainers",
		"If the client NAKs the address we return -ENXIO.",
		"This is not a NAK, just a question.",
		"Why the NAK?",
		"NAK handling is broken in this driver",
		"the device sends a NAK to the host",
		"I don't want to NAK it, but please fix the test.",
		"on NAK we retry",
		"There is no NAK from the target here.",
		"the controller is told to NAK further bytes",
		"Naked eye",
		"",
		NULL,
	};
	const char *const *p;

	for (p = yes; *p; p++) {
		print_message("yes: %s\n", *p);
		assert_true(reply_line_is_nak(*p, strlen(*p)));
	}
	for (p = no; *p; p++) {
		print_message("no: %s\n", *p);
		assert_false(reply_line_is_nak(*p, strlen(*p)));
	}
}

/* The kinds of lines, one letter each: o own, b blank, q quote,
 * a attribution, h header block, g original, t trim, s sig, f footer,
 * d disclaimer. */
static void kinds_are(const char *text, const char *want)
{
	static const char letters[] = "obqahgtsfd";
	struct reply *r;
	char got[256];
	size_t i;

	assert_int_equal(reply_parse(&r, text, strlen(text)), 0);
	for (i = 0; i < r->nr && i + 1 < sizeof(got); i++)
		got[i] = letters[r->lines[i].kind];
	got[i] = '\0';
	print_message("%s\n", text);
	assert_string_equal(got, want);
	reply_free(r);
}

static void test_kinds(void **state)
{
	kinds_are("On Mon, Jan 1, 2024 at 10:00 AM Jane <j@example.org> "
		  "wrote:\n> quoted\n\nown\n",
		  "aqbo");
	/* wrapped attribution (Gmail) */
	kinds_are("On Fri, May 9, 2025 at 3:53 AM Luca <\n"
		  "l@example.org> wrote:\n> q\nown\n",
		  "aaqo");
	/* mutt's "* Name <address> [date]:" */
	kinds_are("* Jane <j@example.org> [2024-01-01 10:00]:\n\n> q\n", "abq");
	/* Gnus, alot, German, Chinese */
	kinds_are("Xin Long <x@example.org> writes:\n\n> q\n", "abq");
	kinds_are("Quoting Dmitry (2022-03-23 03:35:44)\n> q\n", "aq");
	kinds_are("Am 23.11.20 um 12:18 schrieb Lee Jones:\n> q\n", "aq");
	kinds_are("Jane \xe4\xba\x8e"
		  "2026\xe5\xb9\xb4 16:26\xe5\x86\x99\xe9"
		  "\x81\x93\xef\xbc\x9a\n> q\n",
		  "aq");
	/* quote styles */
	kinds_are(">no space\n > leading\n> > nested\n>>tight\n&gt; entity\n",
		  "qqqqq");
	/* trim markers, signature */
	kinds_are("> q\n...snip...\n--- snipped ---\n<snip/>\nsnip\n", "qtttt");
	kinds_are("> q\n...\n[...]\n<snip>\n[skipped the patch]\nown\n-- \n"
		  "sig\n> after sig\n",
		  "qttttossq");
	/* "--" without the space before a short signature */
	kinds_are("own\n--\nJane\n", "oss");
	/* top-posting above an Outlook header block: the rest is the
	 * original even without '>' */
	kinds_are("Looks fine.\n\n-----Original Message-----\n"
		  "From: A <a@example.org>\nSent: Monday\nTo: list\n"
		  "Subject: [PATCH] x\n\nReviewed-by: Q <q@example.org>\n",
		  "obhhhhhbg");
	/* French Outlook header block, bottom-posted under quotes */
	kinds_are("De : A <a@example.org>\nEnvoy\xc3\xa9 : lundi\n"
		  "\xc3\x80 : list\nObjet : [PATCH] x\n\n> quoted\nown\n",
		  "hhhhbqo");
	/* an unquoted original opening the message ends with its patch */
	kinds_are("From: A <a@example.org>\nSent: Monday\nSubject: x\n\n"
		  "Commit text\n---\n a.c | 1 +\n 1 file changed, 1 "
		  "insertion(+)\n\nTested-by: T <t@example.org>\n",
		  "hhhbggggbo");
	/* a mailing list footer and a disclaimer */
	kinds_are("own\n_______________________________________________\n"
		  "Foo mailing list\nfoo@example.org\n",
		  "offf");
	kinds_are("own\n\nThis e-mail is confidential and intended for the "
		  "recipient only.\n",
		  "obd");
}

static void test_blocks_and_own_text(void **state)
{
	static const char text[] = "Hi Jane,\n"
				   "\n"
				   "> +\tint x;\n"
				   "Why int?\n"
				   "\n"
				   "> +\treturn x;\n"
				   "\n"
				   "Thanks,\n"
				   "Petr\n";
	struct reply *r;
	struct buf b = BUF_INIT(4096);

	assert_int_equal(reply_parse(&r, text, strlen(text)), 0);
	assert_int_equal(r->nr_blocks, 3);
	assert_false(r->blocks[0].substance); /* greeting */
	assert_true(r->blocks[1].substance);
	assert_false(r->blocks[2].substance); /* sign-off and name */
	assert_int_equal(reply_own_text(&b, r), 0);
	assert_string_equal(b.data,
			    "Hi Jane,\n\n\nWhy int?\n\n\n\nThanks,\nPetr\n");
	buf_reset(&b);
	assert_int_equal(reply_block_text(&b, r, 1, 1), 0);
	assert_string_equal(b.data, "Why int?");
	buf_release(&b);
	reply_free(r);
}

static const char patch[] = "Subject line\n"
			    "---\n"
			    " a.c | 3 ++-\n"
			    "diff --git a/a.c b/a.c\n"
			    "index 1..2 100644\n"
			    "--- a/a.c\n"
			    "+++ b/a.c\n"
			    "@@ -10,5 +10,6 @@ int f(void)\n"
			    " \tint a;\n"
			    "-\tint b;\n"
			    "+\tlong b;\n"
			    "+\tlong c;\n"
			    " \n"
			    " \treturn a;\n"
			    " }\n"
			    "@@ -40,3 +41,3 @@ int g(void)\n"
			    " {\n"
			    "-\treturn 0;\n"
			    "+\treturn 1;\n"
			    " }\n";

static void test_anchor(void **state)
{
	/* a trimmed, re-indented quote of the second hunk, a wrapped line,
	 * and a comment after the whole patch */
	static const char text[] = "On Mon, A wrote:\n"
				   "> -\tint b;\n"
				   "Old side.\n"
				   "> +    long c;\n"
				   "> [...]\n"
				   ">  }\n"
				   "Context line.\n"
				   "...\n"
				   ">-\treturn 0;\n"
				   ">+\treturn 1;\n"
				   ">  }\n"
				   "After the end.\n";
	struct diff *d;
	struct reply *r;
	const struct diff_line *l;

	assert_int_equal(diff_parse(&d, patch, strlen(patch)), 0);
	assert_int_equal(d->nr_lines, 11);
	assert_int_equal(reply_parse(&r, text, strlen(text)), 0);
	assert_int_equal(reply_anchor(r, d, NULL), 0);
	assert_int_equal(r->nr_blocks, 3);
	l = &d->lines[r->blocks[0].diff];
	assert_int_equal(l->kind, '-');
	assert_int_equal(l->old_no, 11);
	assert_false(r->blocks[0].general);
	/* "}" of the first hunk, reached through the trim */
	l = &d->lines[r->blocks[1].diff];
	assert_int_equal(l->kind, ' ');
	assert_int_equal(l->old_no, 14);
	assert_int_equal(l->new_no, 15);
	/* after the last line of the patch: general */
	assert_true(r->blocks[2].general);
	reply_free(r);
	diff_free(d);
}

static void test_anchor_without_patch(void **state)
{
	static const char text[] = "> @@ -40,3 +41,3 @@ int g(void)\n"
				   ">  {\n"
				   "> -\treturn 0;\n"
				   "Why?\n"
				   "> +\treturn 1;\n";
	struct diff *pseudo;
	struct reply *r;
	const struct diff_line *l;

	assert_int_equal(reply_parse(&r, text, strlen(text)), 0);
	assert_int_equal(reply_anchor(r, NULL, &pseudo), 0);
	assert_non_null(pseudo);
	assert_int_equal(r->nr_blocks, 1);
	l = &pseudo->lines[r->blocks[0].diff];
	assert_int_equal(l->old_no, 41);
	assert_int_equal(l->new_no, 0);
	reply_free(r);
	diff_free(pseudo);
}

static void test_diff_parse(void **state)
{
	static const char two[] = "diff --git a/old.c b/new.c\n"
				  "similarity index 90%\n"
				  "rename from old.c\n"
				  "rename to new.c\n"
				  "--- a/old.c\n"
				  "+++ b/new.c\n"
				  "@@ -1 +1 @@\n"
				  "-a\n"
				  "+b\n"
				  "diff --git a/n.c b/n.c\n"
				  "new file mode 100644\n"
				  "--- /dev/null\n"
				  "+++ b/n.c\n"
				  "@@ -0,0 +1,2 @@\n"
				  "+x\n"
				  "+y\n"
				  "@@ broken @@\n";
	struct diff *d;

	assert_int_equal(diff_parse(&d, two, strlen(two)), 0);
	assert_int_equal(d->nr_files, 2);
	assert_string_equal(d->files[0].old_path, "old.c");
	assert_string_equal(d->files[0].new_path, "new.c");
	assert_null(d->files[1].old_path);
	assert_string_equal(d->files[1].new_path, "n.c");
	assert_int_equal(d->nr_lines, 4);
	assert_int_equal(d->lines[3].new_no, 2);
	assert_int_equal(d->lines[3].file, 1);
	assert_true(d->hunks[1].complete);
	diff_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nak_words),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_blocks_and_own_text),
		cmocka_unit_test(test_anchor),
		cmocka_unit_test(test_anchor_without_patch),
		cmocka_unit_test(test_diff_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
