#include "cmocka_all.h"
#include "mail/trailers.h"
#include "util/buf.h"
#include "util/err.h"

#include <string.h>

struct want {
	const char *line;
	const char *type; /* NULL: not a trailer */
	const char *name;
	const char *email;
	int irregular;
};

static const struct want lines[] = {
	{ "Acked-by: Jane Doe <jane@example.org>", "Acked-by", "Jane Doe",
	  "jane@example.org", 0 },
	{ "  Reviewed-by: Jane Doe <jane@example.org>", "Reviewed-by",
	  "Jane Doe", "jane@example.org", 0 },
	{ "reviewed-BY: Jane Doe <jane@example.org>", "Reviewed-by", "Jane Doe",
	  "jane@example.org", 1 },
	{ "Tested-By: Jane <jane@example.org>", "Tested-by", "Jane",
	  "jane@example.org", 1 },
	{ "NACKed-by: Jane <jane@example.org>", "Nacked-by", "Jane",
	  "jane@example.org", 1 },
	{ "Nacked-by: Jane <jane@example.org>", "Nacked-by", "Jane",
	  "jane@example.org", 0 },
	{ "Revieved-by: Jane <jane@example.org>", "Reviewed-by", "Jane",
	  "jane@example.org", 1 },
	{ "Reviwed-by: Jane <jane@example.org>", "Reviewed-by", "Jane",
	  "jane@example.org", 1 },
	{ "Ackedby: Jane <jane@example.org>", "Acked-by", "Jane",
	  "jane@example.org", 1 },
	{ "Reviewed by: Jane <jane@example.org>", "Reviewed-by", "Jane",
	  "jane@example.org", 1 },
	{ "Acked-for-MFD-by: Lee Jones <lee@example.org>", "Acked-by",
	  "Lee Jones", "lee@example.org", 1 },
	{ "Reviewed-by: Jane Doe<jane@example.org>", "Reviewed-by", "Jane Doe",
	  "jane@example.org", 0 },
	{ "Reviewed-by: <jane@example.org>", "Reviewed-by", "",
	  "jane@example.org", 0 },
	{ "Reviewed-by: jane@example.org", "Reviewed-by", "",
	  "jane@example.org", 0 },
	{ "Reviewed-by: Joel", "Reviewed-by", "Joel", NULL, 0 },
	{ "Tested-by: Aaron Brown <aaron.f.brown", "Tested-by", "Aaron Brown",
	  NULL, 0 },
	{ "Reviewed-by: Andrea <andrea.cervesato.suse.com>", "Reviewed-by",
	  "Andrea", NULL, 0 },
	{ "Tested-by: Jane [jane@example.org]", "Tested-by", "Jane",
	  "jane@example.org", 0 },
	{ "Tested-by: Gurucharan <g@example.org> (A Contingent worker)",
	  "Tested-by", "Gurucharan", "g@example.org", 0 },
	{ "Reported-by: https://honggfuzz.dev/", "Reported-by",
	  "https://honggfuzz.dev/", NULL, 0 },
	{ "Reviewed-by:\xc2\xa0"
	  "Abhinav\xc2\xa0Kumar <a@example.org>",
	  "Reviewed-by", "Abhinav Kumar", "a@example.org", 0 },
	{ "Series is Acked-by: Christian K\xc3\xb6nig <c@example.org>",
	  "Acked-by", "Christian K\xc3\xb6nig", "c@example.org", 1 },
	{ "\"Jane Doe\" <jane@example.org>", NULL, NULL, NULL, 0 },
	{ "Feel free to add my Acked-by: Jo <jo@example.org>", "Acked-by", "Jo",
	  "jo@example.org", 1 },
	{ "LGTM, Reviewed-by: Jo <jo@example.org>", "Reviewed-by", "Jo",
	  "jo@example.org", 1 },
	{ "I'll add Acked-by: tag in v2", NULL, NULL, NULL, 0 },
	{ "Please add Acked-by: Jo <jo@example.org> to it", NULL, NULL, NULL,
	  0 },
	{ "Reviewed-by: tags are collected by b4", NULL, NULL, NULL, 0 },
	{ "Fixes: 123456789abc (\"foo\")", NULL, NULL, NULL, 0 },
	{ "Cc: Jane <jane@example.org>", NULL, NULL, NULL, 0 },
	{ "Link: https://lore.kernel.org/r/x", NULL, NULL, NULL, 0 },
	{ "Reviewed-by:", NULL, NULL, NULL, 0 },
	{ "Passed-by: Jane <jane@example.org>", NULL, NULL, NULL, 0 },
};

static void test_lines(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		const struct want *w = &lines[i];
		struct trailer_list l;
		int got;

		trailer_list_init(&l);
		got = trailers_parse_line(&l, w->line, strlen(w->line));
		print_message("%s\n", w->line);
		if (!w->type) {
			assert_int_equal(got, 0);
			assert_int_equal(l.nr, 0);
		} else {
			assert_int_equal(got, 1);
			assert_string_equal(l.v[0].type, w->type);
			assert_string_equal(l.v[0].name, w->name);
			if (w->email)
				assert_string_equal(l.v[0].email, w->email);
			else
				assert_null(l.v[0].email);
			assert_int_equal(!!(l.v[0].flags & TRAILER_F_IRREGULAR),
					 w->irregular);
		}
		trailer_list_release(&l);
	}
}

static void test_combined(void **state)
{
	const char *t = "Reviewed-and-tested-by: Z <z@example.org>";
	struct trailer_list l;

	trailer_list_init(&l);
	assert_int_equal(trailers_parse_line(&l, t, strlen(t)), 2);
	assert_string_equal(l.v[0].type, "Reviewed-by");
	assert_string_equal(l.v[1].type, "Tested-by");
	assert_true(l.v[1].flags & TRAILER_F_IRREGULAR);
	trailer_list_release(&l);
}

static void test_scan_scope_and_paragraphs(void **state)
{
	static const char text[] =
		"Looks good.\n"
		"\n"
		"For the series:\n"
		"Reviewed-by: A <a@example.org>\n"
		"Acked-by: B <b@example.org>\n"
		"\n"
		"Reported-by: C <c@example.org>\n"
		"Fixes: 0123456789ab (\"x\")\n"
		"Signed-off-by: D <d@example.org>\n"
		"\n"
		"-:12: ERROR:BAD_SIGN_OFF: Unrecognized email address\n"
		"#12:\n"
		"Reviewed-by: E\n"
		"\n"
		"Tested-by: F <f@example.org>\n"
		"\n"
		"For patches 1-3:\n"
		"Acked-by: G <g@example.org>\n"
		"\n"
		"To both patches:\n"
		"Acked-by: H <h@example.org>\n";
	struct trailer_list l;

	trailer_list_init(&l);
	assert_int_equal(trailers_scan(&l, text, sizeof(text) - 1, 0), 0);
	assert_int_equal(l.nr, 5);
	assert_int_equal(l.v[3].scope, TRAILER_SCOPE_PATCH);
	assert_int_equal(l.v[4].scope, TRAILER_SCOPE_SERIES);
	assert_string_equal(l.v[0].email, "a@example.org");
	assert_int_equal(l.v[0].scope, TRAILER_SCOPE_SERIES);
	assert_int_equal(l.v[1].scope, TRAILER_SCOPE_SERIES);
	assert_string_equal(l.v[2].type, "Tested-by");
	assert_int_equal(l.v[2].scope, TRAILER_SCOPE_PATCH);
	trailer_list_release(&l);

	/* a commit message keeps every trailer */
	trailer_list_init(&l);
	assert_int_equal(
		trailers_scan(&l, text, sizeof(text) - 1, TRAILERS_OWN), 0);
	assert_int_equal(l.nr, 8);
	trailer_list_release(&l);

	/* a reply to a cover letter: series scope throughout */
	trailer_list_init(&l);
	trailers_scan(&l, "Tested-by: F <f@example.org>\n", 29,
		      TRAILERS_SERIES);
	assert_int_equal(l.nr, 1);
	assert_int_equal(l.v[0].scope, TRAILER_SCOPE_SERIES);
	trailer_list_release(&l);
}

/*
 * Every entry of the type tables in trailers.c (the known types and the
 * aliases), each with near misses: a letter dropped, two letters
 * swapped, the last letter lost, and for words of eight letters or more
 * two letters dropped.  A new word in a table moves where near misses
 * land (a tie resolves to no type at all), so adding one must show here
 * as a changed line.
 */
static const struct {
	const char *tag;
	const char *type; /* NULL: not a trailer type */
	int irregular;
} spellings[] = {
	/* "acked" */
	{ "Acked-by", "Acked-by", 0 },
	{ "Aked-by", NULL, 0 },
	{ "Akced-by", "Acked-by", 1 },
	{ "Acke-by", NULL, 0 },
	/* "reviewed" */
	{ "Reviewed-by", "Reviewed-by", 0 },
	{ "Rviewed-by", "Reviewed-by", 1 },
	{ "Rveiewed-by", "Reviewed-by", 1 },
	{ "Reviewe-by", "Reviewed-by", 1 },
	{ "Riewed-by", NULL, 0 },
	/* "tested" */
	{ "Tested-by", "Tested-by", 0 },
	{ "Tsted-by", "Tested-by", 1 },
	{ "Tseted-by", "Tested-by", 1 },
	{ "Teste-by", "Tested-by", 1 },
	/* "nacked" */
	{ "Nacked-by", "Nacked-by", 0 },
	{ "Ncked-by", NULL, 0 },
	{ "Ncaked-by", "Nacked-by", 1 },
	{ "Nacke-by", "Nacked-by", 1 },
	/* "reported" */
	{ "Reported-by", "Reported-by", 0 },
	{ "Rported-by", "Reported-by", 1 },
	{ "Rpeorted-by", "Reported-by", 1 },
	{ "Reporte-by", "Reported-by", 1 },
	{ "Rorted-by", NULL, 0 },
	/* "suggested" */
	{ "Suggested-by", "Suggested-by", 0 },
	{ "Sggested-by", "Suggested-by", 1 },
	{ "Sgugested-by", "Suggested-by", 1 },
	{ "Suggeste-by", "Suggested-by", 1 },
	{ "Sgested-by", NULL, 0 },
	/* "signed-off" */
	{ "Signed-off-by", "Signed-off-by", 0 },
	{ "Sgned-off-by", "Signed-off-by", 1 },
	{ "Sgined-off-by", "Signed-off-by", 1 },
	{ "Signed-of-by", "Signed-off-by", 1 },
	{ "Sned-off-by", "Signed-off-by", 1 },
	/* "co-developed" */
	{ "Co-developed-by", "Co-developed-by", 0 },
	{ "C-developed-by", "Co-developed-by", 1 },
	{ "C-odeveloped-by", "Co-developed-by", 1 },
	{ "Co-develope-by", "Co-developed-by", 1 },
	{ "Cdeveloped-by", "Co-developed-by", 1 },
	/* "requested" */
	{ "Requested-by", "Requested-by", 0 },
	{ "Rquested-by", "Requested-by", 1 },
	{ "Rqeuested-by", "Requested-by", 1 },
	{ "Requeste-by", "Requested-by", 1 },
	{ "Ruested-by", NULL, 0 },
	/* "debugged" */
	{ "Debugged-by", "Debugged-by", 0 },
	{ "Dbugged-by", "Debugged-by", 1 },
	{ "Dbeugged-by", "Debugged-by", 1 },
	{ "Debugge-by", "Debugged-by", 1 },
	{ "Dugged-by", NULL, 0 },
	/* "bisected" */
	{ "Bisected-by", "Bisected-by", 0 },
	{ "Bsected-by", "Bisected-by", 1 },
	{ "Bsiected-by", "Bisected-by", 1 },
	{ "Bisecte-by", "Bisected-by", 1 },
	{ "Bected-by", NULL, 0 },
	/* "helped" */
	{ "Helped-by", "Helped-by", 0 },
	{ "Hlped-by", "Helped-by", 1 },
	{ "Hleped-by", "Helped-by", 1 },
	{ "Helpe-by", "Helped-by", 1 },
	/* "originally" */
	{ "Originally-by", "Originally-by", 0 },
	{ "Oiginally-by", "Originally-by", 1 },
	{ "Oirginally-by", "Originally-by", 1 },
	{ "Originall-by", "Originally-by", 1 },
	{ "Oginally-by", "Originally-by", 1 },
	/* "analyzed" */
	{ "Analyzed-by", "Analyzed-by", 0 },
	{ "Aalyzed-by", "Analyzed-by", 1 },
	{ "Aanlyzed-by", "Analyzed-by", 1 },
	{ "Analyze-by", "Analyzed-by", 1 },
	{ "Alyzed-by", NULL, 0 },
	/* "analysed" */
	{ "Analysed-by", "Analyzed-by", 1 },
	{ "Aalysed-by", "Analyzed-by", 1 },
	{ "Aanlysed-by", "Analyzed-by", 1 },
	{ "Analyse-by", "Analyzed-by", 1 },
	{ "Alysed-by", NULL, 0 },
	/* "ack" */
	{ "Ack-by", "Acked-by", 1 },
	/* "nack" */
	{ "Nack-by", "Nacked-by", 1 },
	/* "nak" */
	{ "Nak-by", "Nacked-by", 1 },
	/* "naked" */
	{ "Naked-by", "Nacked-by", 1 },
	/* "nak'd" */
	{ "Nak'd-by", "Nacked-by", 1 },
	/* "signed-of" */
	{ "Signed-of-by", "Signed-off-by", 1 },
	/* "signed" */
	{ "Signed-by", "Signed-off-by", 1 },
	/* near no type, or as near to two (a tie) */
	{ "Hacked-by", NULL, 0 },
	{ "Packed-by", NULL, 0 },
	{ "Rested-by", "Tested-by", 1 },
	{ "Reviewer-by", "Reviewed-by", 1 },
	{ "Testing-by", NULL, 0 },
	{ "Unacked-by", NULL, 0 },
	{ "Reposted-by", "Reported-by", 1 },
	{ "Required-by", NULL, 0 },
	{ "Helper-by", "Helped-by", 1 },
	{ "Bisect-by", NULL, 0 },
};

static void test_type_table(void **state)
{
	const char *type;
	size_t i;
	int irr;

	(void)state;
	for (i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++) {
		type = trailer_type_canonical(spellings[i].tag,
					      strlen(spellings[i].tag), &irr);
		if (!spellings[i].type) {
			if (type)
				fail_msg("%s: %s", spellings[i].tag, type);
			continue;
		}
		if (!type)
			fail_msg("%s: no type", spellings[i].tag);
		assert_string_equal(type, spellings[i].type);
		assert_int_equal(irr, spellings[i].irregular);
	}
}

static void test_canonical(void **state)
{
	int irr;

	assert_string_equal(trailer_type_canonical("Acked-by", 8, &irr),
			    "Acked-by");
	assert_false(irr);
	assert_string_equal(trailer_type_canonical("signed-of-by", 12, &irr),
			    "Signed-off-by");
	assert_true(irr);
	assert_null(trailer_type_canonical("Cc", 2, &irr));
	assert_null(trailer_type_canonical("Frobbed-by", 10, &irr));
	assert_true(trailer_is_approval("Reviewed-by"));
	assert_false(trailer_is_approval("Reported-by"));
	assert_true(trailer_is_nak("Nacked-by"));
}

static void test_embedded_nul(void **state)
{
	/* NUL bytes inside the line must not end or confuse the parse */
	static const char line[] = "Acked-by: A\0B <a@exa\0mple.org>";
	struct trailer_list l;

	trailer_list_init(&l);
	trailers_parse_line(&l, line, sizeof(line) - 1);
	if (l.nr)
		assert_null(l.v[0].email);
	trailer_list_release(&l);
}

/* How many trailers text[] gives as a reply's own text. */
static size_t scan_count(const char *text, struct trailer_list *l)
{
	trailer_list_init(l);
	assert_int_equal(trailers_scan(l, text, strlen(text), 0), 0);
	return l->nr;
}

/*
 * A trailer is a line of its own, as git interpret-trailers and b4 read
 * it.  A tag inside a sentence that negates it, holds it back, makes it
 * wait for a condition or quotes it as an example is no trailer.
 */
static void test_negated_sentences(void **state)
{
	static const char *const no[] = {
		"I am withholding my Acked-by: Rita Reviewer "
		"<rita@example.org> until that is fixed",
		"You do not have my Acked-by: Rita Reviewer <rita@example.org>",
		"This is not ready, Acked-by: Rita Reviewer <rita@example.org> "
		"will have to wait",
		"I won't give my Reviewed-by: Rita Reviewer <rita@example.org>",
		"Without a test I cannot add my Tested-by: Rita Reviewer "
		"<rita@example.org>",
		"With that fixed, you can have my Acked-by: Rita Reviewer "
		"<rita@example.org>",
		"If you split the patch, my Reviewed-by: Rita Reviewer "
		"<rita@example.org>",
		"Once v3 is out, Acked-by: Rita Reviewer <rita@example.org>",
		"I'd rather hold my Acked-by: Rita Reviewer <rita@example.org> "
		"for now",
		"Nobody should read this as my Acked-by: Rita Reviewer "
		"<rita@example.org>",
		"Before I give my Acked-by: Rita Reviewer <rita@example.org>",
		"Withdrawn: Acked-by: Rita Reviewer <rita@example.org>",
		"My Acked-by: Rita Reviewer <rita@example.org> is withdrawn.",
		"No Reviewed-by: Rita Reviewer <rita@example.org> from me yet.",
		"Please add a line like Reviewed-by: Foo Bar <foo@bar.com>",
		"please add a line like `Reviewed-by: Jim Smith "
		"<jim@corp.example>`",
		NULL,
	};
	/* plain statements are read, flagged as inside a sentence */
	static const char *const yes[] = {
		"Series is Acked-by: Rita Reviewer <rita@example.org>",
		"This patch is Acked-by: Rita Reviewer <rita@example.org>",
		"LGTM, Reviewed-by: Rita Reviewer <rita@example.org>",
		"Feel free to add my Acked-by: Rita Reviewer "
		"<rita@example.org>.",
		NULL,
	};
	const char *const *p;
	struct trailer_list l;

	for (p = no; *p; p++) {
		print_message("no: %s\n", *p);
		trailer_list_init(&l);
		assert_int_equal(trailers_parse_line(&l, *p, strlen(*p)), 0);
		trailer_list_release(&l);
		assert_int_equal(scan_count(*p, &l), 0);
		trailer_list_release(&l);
	}
	for (p = yes; *p; p++) {
		print_message("yes: %s\n", *p);
		trailer_list_init(&l);
		assert_int_equal(trailers_parse_line(&l, *p, strlen(*p)), 1);
		assert_string_equal(l.v[0].email, "rita@example.org");
		assert_true(l.v[0].flags & TRAILER_F_IN_SENTENCE);
		trailer_list_release(&l);
	}
	/* the same tag on a line of its own is a trailer */
	p = yes;
	trailer_list_init(&l);
	assert_int_equal(trailers_parse_line(&l,
					     "Acked-by: Rita Reviewer "
					     "<rita@example.org>",
					     42),
			 1);
	assert_false(l.v[0].flags & TRAILER_F_IN_SENTENCE);
	trailer_list_release(&l);
}

/*
 * The NAK family by its suffix (lore: "Hard-nacked-by", "Double-Nacked-
 * by", "Extra-hard-Nacked-by", "Release-Nacked-by"), never a tag that
 * says the opposite ("Not-Nacked-by", "Not-Acked-by", "Un-acked-by").
 */
static void test_nak_family(void **state)
{
	static const char *const naks[] = {
		"NAKed-by: Al Viro <viro@zeniv.example>",
		"NACKed-by: Al Viro <viro@zeniv.example>",
		"Naked-by: Douglas Anderson <dianders@chromium.example>",
		"Strongly-Nacked-by: Al Viro <viro@zeniv.example>",
		"Hard-nacked-by: Steven Rostedt <rostedt@goodmis.example>",
		"Double-Nacked-by: Christoph Hellwig <hch@lst.example>",
		"Extra-hard-Nacked-by: Christoph Hellwig <hch@lst.example>",
		"Release-Nacked-by: Ian Jackson <iwj@xenproject.example>",
		"Self-NAKed-by: Ian Jackson <iwj@xenproject.example>",
		NULL,
	};
	static const char *const none[] = {
		"Not-Nacked-by: Hugh Dickins <hughd@google.example>",
		"Not-nacked-by: Hugh Dickins <hughd@google.example>",
		"Not-Acked-By: Christoph Hellwig <hch@lst.example>",
		"Not-Reviewed-by: Jeff Layton <jlayton@kernel.example>",
		"Un-acked-by: Jeff Layton <jlayton@kernel.example>",
		"Unacked-by: Jeff Layton <jlayton@kernel.example>",
		"Non-nacked-by: Jeff Layton <jlayton@kernel.example>",
		"Formerly-Nacked-by: Jeff Layton <jlayton@kernel.example>",
		NULL,
	};
	const char *const *p;
	struct trailer_list l;

	for (p = naks; *p; p++) {
		print_message("nak: %s\n", *p);
		trailer_list_init(&l);
		assert_int_equal(trailers_parse_line(&l, *p, strlen(*p)), 1);
		assert_string_equal(l.v[0].type, "Nacked-by");
		assert_true(trailer_is_nak(l.v[0].type));
		trailer_list_release(&l);
	}
	for (p = none; *p; p++) {
		print_message("none: %s\n", *p);
		trailer_list_init(&l);
		assert_int_equal(trailers_parse_line(&l, *p, strlen(*p)), 0);
		trailer_list_release(&l);
	}
}

/*
 * Addresses in the forms mail clients make: Outlook's HTML-to-text
 * "a@b<mailto:a@b>" (real: amd-gfx, intel-wired-lan), its "[mailto:]",
 * entities left by webmail, two different addresses (none is taken), an
 * informal tag without any.
 */
static void test_address_forms(void **state)
{
	static const struct want forms[] = {
		{ "Reviewed-by: Hawking Zhang <Hawking.Zhang@amd.example"
		  "<mailto:Hawking.Zhang@amd.example>>",
		  "Reviewed-by", "Hawking Zhang", "Hawking.Zhang@amd.example",
		  0 },
		{ "Tested-by: Saritha Sanigani <sarithax.sanigani@intel.example"
		  "<mailto:sarithax.sanigani@intel.example>> (A Contingent "
		  "Worker at Intel)",
		  "Tested-by", "Saritha Sanigani",
		  "sarithax.sanigani@intel.example", 0 },
		{ "Reviewed-by: Jane Doe <jane@example.org "
		  "<mailto:JANE@example.org>>",
		  "Reviewed-by", "Jane Doe", "jane@example.org", 0 },
		{ "Reviewed-by: Jane Doe [mailto:jane@example.org]",
		  "Reviewed-by", "Jane Doe", "jane@example.org", 0 },
		{ "Reviewed-by: Jane Doe <mailto:jane@example.org>",
		  "Reviewed-by", "Jane Doe", "jane@example.org", 0 },
		{ "Reviewed-by: jane@example.org<mailto:jane@example.org>",
		  "Reviewed-by", "", "jane@example.org", 0 },
		{ "Acked-by: Jane Doe &lt;jane@example.org&gt;", "Acked-by",
		  "Jane Doe", "jane@example.org", 0 },
		/* two different addresses: which one is meant? none */
		{ "Reviewed-by: Jane Doe <jane@example.org"
		  "<mailto:mallory@evil.example>>",
		  "Reviewed-by", "Jane Doe", NULL, 0 },
		/* informal, no address at all */
		{ "Reviewed by : Jane Doe", "Reviewed-by", "Jane Doe", NULL,
		  1 },
		{ "Reviewed by: Jane Doe", "Reviewed-by", "Jane Doe", NULL, 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		const struct want *w = &forms[i];
		struct trailer_list l;

		print_message("%s\n", w->line);
		trailer_list_init(&l);
		assert_int_equal(
			trailers_parse_line(&l, w->line, strlen(w->line)), 1);
		assert_string_equal(l.v[0].type, w->type);
		assert_string_equal(l.v[0].name, w->name);
		if (w->email) {
			assert_string_equal(l.v[0].email, w->email);
		} else {
			assert_null(l.v[0].email);
			assert_true(l.v[0].flags & TRAILER_F_NO_EMAIL);
		}
		trailer_list_release(&l);
	}
}

/* A trailer the mailer wrapped before its address (Thunderbird without
 * format=flowed, Gmail's 78 columns): the next line completes it. */
static void test_wrapped(void **state)
{
	struct trailer_list l;

	assert_int_equal(scan_count("Reviewed-by: AngeloGioacchino Del Regno\n"
				    "<angelogioacchino.delregno@collabora."
				    "example>\n",
				    &l),
			 1);
	assert_string_equal(l.v[0].name, "AngeloGioacchino Del Regno");
	assert_string_equal(l.v[0].email,
			    "angelogioacchino.delregno@collabora.example");
	trailer_list_release(&l);

	assert_int_equal(scan_count("Tested-by: Jane Doe\n"
				    "  jane@example.org<mailto:jane@example."
				    "org>\n"
				    "Acked-by: Jim Smith <jim@example.org>\n",
				    &l),
			 2);
	assert_string_equal(l.v[0].email, "jane@example.org");
	assert_string_equal(l.v[1].email, "jim@example.org");
	trailer_list_release(&l);

	/* a trailer that has its address takes no second one */
	assert_int_equal(scan_count("Acked-by: Jim Smith <jim@example.org>\n"
				    "<jane@example.org>\n",
				    &l),
			 1);
	assert_string_equal(l.v[0].email, "jim@example.org");
	trailer_list_release(&l);
	assert_true(trailers_line_continues("Reviewed-by: Jane Doe", 21,
					    "<jane@example.org>", 18));
	assert_false(trailers_line_continues("Thanks, Jane", 12,
					     "<jane@example.org>", 18));
}

/*
 * Example trailers are not trailers given by the sender: under a line
 * that introduces an example, or with the name and address of one.  The
 * test robot's "kindly add following tag" and "Feel free to add:" give
 * real ones.
 */
static void test_examples(void **state)
{
	static const char *const none[] = {
		"Please add a line like:\n\n  Reviewed-by: Jim Smith "
		"<jim@corp.example>\n",
		"Reviewers add it in the form:\nReviewed-by: Jim Smith "
		"<jim@corp.example>\nAcked-by: Jim Smith <jim@corp.example>\n",
		"Something like this:\n\nAcked-by: Jim Smith <jim@corp.example>\n",
		"Acked-by: Your Name <you@example.com>\n",
		"Tested-by: Random J Developer <random@developer.example.org>\n",
		"Reviewed-by: Foo Bar <foo@bar.com>\n",
		"Reviewed-by: YOUR NAME <your@email.addr>\n",
		NULL,
	};
	const char *const *p;
	struct trailer_list l;

	for (p = none; *p; p++) {
		print_message("none: %s\n", *p);
		assert_int_equal(scan_count(*p, &l), 0);
		trailer_list_release(&l);
	}
	assert_int_equal(
		scan_count("If you fix the issue, kindly add following "
			   "tag as appropriate\n"
			   "Reported-by: kernel test robot "
			   "<lkp@intel.example>\n",
			   &l),
		1);
	trailer_list_release(&l);
	assert_int_equal(
		scan_count("Feel free to add:\n"
			   "Reviewed-by: Jim Smith <jim@corp.example>\n",
			   &l),
		1);
	trailer_list_release(&l);
	assert_int_equal(
		scan_count("For example, the cast is not needed.\n\n"
			   "Reviewed-by: Jim Smith <jim@corp.example>\n",
			   &l),
		1);
	trailer_list_release(&l);
}

/*
 * The forms the bridge acts on (docs/SECURITY.md): a trailer block, a
 * value that is one address.  A trailer with a sentence on the line
 * before or after it - a negation or a condition over several lines -
 * text after its address, or a hidden or direction-changing character
 * is listed, never TRAILER_F_BLOCK without TRAILER_F_LOOSE.
 */
struct form {
	const char *text;
	int block, loose;
};

static const struct form forms[] = {
	/* acted on */
	{ "Acked-by: Jane Doe <jane@example.org>\n", 1, 0 },
	{ "Looks good.\n\nAcked-by: Jane Doe <jane@example.org>\n", 1, 0 },
	{ "Acked-by: Jane Doe <jane@example.org>\n"
	  "Fixes: 0123456789ab (\"foo: bar\")\n\nThanks\n",
	  1, 0 },
	{ "Reviewed-by: jane@example.org\n", 1, 0 },
	{ "Reviewed-by: Jane Doe <jane@example.org"
	  "<mailto:jane@example.org>>\n",
	  1, 0 },
	/* a sentence in the same paragraph: a negation or condition may
	 * stand on the line before or after */
	{ "I really cannot give you\nAcked-by: Jane Doe <jane@example.org>\n"
	  "as things stand.\n",
	  0, 0 },
	{ "Acked-by: Jane Doe <jane@example.org>\n"
	  "but only once the locking is fixed.\n",
	  0, 0 },
	{ "If you drop patch 3:\nAcked-by: Jane Doe <jane@example.org>\n", 0,
	  0 },
	{ "Looks good.\nAcked-by: Jane Doe <jane@example.org>\n", 0, 0 },
	{ "Not yet\nReviewed-by: Jane Doe <jane@example.org>\n", 0, 0 },
	/* text after the address */
	{ "Acked-by: Jane Doe <jane@example.org> (for the DT part)\n", 1, 1 },
	{ "Acked-by: Jane Doe <jane@example.org> # for arm64 only\n", 1, 1 },
	{ "Acked-by: Jane Doe <jane@example.org> <joe@example.org>\n", 1, 1 },
	{ "Acked-by: jane@example.org (Jane Doe)\n", 1, 1 },
	{ "Acked-by: Jane Doe [jane@example.org]\n", 1, 1 },
	/* no address */
	{ "Acked-by: Jane Doe\n", 1, 1 },
	/* hidden and direction-changing characters anywhere on the line */
	{ "Acked-by: Jane Doe <jane@example.org>\xe2\x80\xae\n", 1, 1 },
	{ "Acked-by: \xe2\x81\xa7Jane Doe <jane@example.org>\xe2\x81\xa9\n", 1,
	  1 },
	{ "Acked-by: Jane\xe2\x80\x8b Doe <jane@example.org>\n", 1, 1 },
	{ "Acked-by: Jane Doe <jane@exa\xc2\xadmple.org>\n", 1, 1 },
};

static void test_forms_acted_on(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct trailer_list l;
		const struct form *f = &forms[i];
		int block, loose;

		trailer_list_init(&l);
		assert_int_equal(trailers_scan(&l, f->text, strlen(f->text), 0),
				 0);
		if (l.nr < 1)
			fail_msg("form %zu: no trailer in %s", i, f->text);
		block = !!(l.v[0].flags & TRAILER_F_BLOCK);
		loose = !!(l.v[0].flags & TRAILER_F_LOOSE);
		if (block != f->block || loose != f->loose)
			fail_msg("form %zu: block %d loose %d, want %d %d: %s",
				 i, block, loose, f->block, f->loose, f->text);
		trailer_list_release(&l);
	}
}

/*
 * Hundreds of pasted trailers fill the list, but the NAK after them is
 * still read: the limit drops approvals and the like, never a NAK.
 */
static void test_limit_keeps_nak(void **state)
{
	struct buf text;
	struct trailer_list l;
	size_t i;

	(void)state;
	buf_init(&text, 64 * 1024);
	for (i = 0; i < 300; i++)
		assert_int_equal(
			buf_addf(&text,
				 "Reviewed-by: R%zu <r%zu@example.org>\n", i,
				 i),
			0);
	assert_int_equal(buf_addf(&text, "\nNacked-by: N <n@example.org>\n"),
			 0);
	trailer_list_init(&l);
	assert_int_equal(trailers_scan(&l, text.data, text.len, 0), PB_ELIMIT);
	assert_true(l.nr > 0);
	assert_string_equal(l.v[l.nr - 1].type, "Nacked-by");
	assert_string_equal(l.v[l.nr - 1].email, "n@example.org");
	trailer_list_release(&l);
	buf_release(&text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_combined),
		cmocka_unit_test(test_scan_scope_and_paragraphs),
		cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_type_table),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_negated_sentences),
		cmocka_unit_test(test_nak_family),
		cmocka_unit_test(test_address_forms),
		cmocka_unit_test(test_wrapped),
		cmocka_unit_test(test_examples),
		cmocka_unit_test(test_forms_acted_on),
		cmocka_unit_test(test_limit_keeps_nak),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
