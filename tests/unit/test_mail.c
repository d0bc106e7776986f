/*
 * Mail decoding: tests/data/parse/mail/NAME.eml is parsed and the model
 * (selected fields, flags, text) compared with NAME.txt.
 */
#include "cmocka_all.h"
#include "golden.h"
#include "mail/mail.h"
#include "mail/mailtext.h"
#include "util/err.h"
#include "util/limits.h"

#include <stdio.h>
#include <string.h>

static void dump(struct buf *out, const struct mail *m)
{
	static const struct {
		unsigned f;
		const char *name;
	} flags[] = {
		{ MAIL_F_AMBIGUOUS, "ambiguous" },
		{ MAIL_F_TRUNCATED, "truncated" },
		{ MAIL_F_HTML, "html" },
		{ MAIL_F_FLOWED, "flowed" },
		{ MAIL_F_PGP_MIME, "pgp-mime" },
		{ MAIL_F_PGP_INLINE, "pgp-inline" },
		{ MAIL_F_CHARSET_GUESS, "charset-guess" },
		{ MAIL_F_NO_TEXT, "no-text" },
		{ MAIL_F_LIMIT, "limit" },
		{ MAIL_F_ENTITIES, "entities" },
		{ MAIL_F_ENCRYPTED, "encrypted" },
	};
	size_t i;

	buf_addf(out, "from: %s <%s>\n", m->from.name, m->from.email);
	buf_addf(out, "subject: %s\n", m->subject);
	buf_addf(out, "message-id: %s\n",
		 m->message_id ? m->message_id : "(none)");
	buf_addf(out, "in-reply-to: %s\n",
		 m->in_reply_to ? m->in_reply_to : "(none)");
	buf_adds(out, "references:");
	for (i = 0; i < m->references.nr; i++)
		buf_addf(out, " %s", m->references.items[i]);
	buf_addf(out, "\ntext-type: %s\ncharset: %s\nflags:",
		 m->text_type ? m->text_type : "(none)",
		 m->charset ? m->charset : "(none)");
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (m->flags & flags[i].f)
			buf_addf(out, " %s", flags[i].name);
	buf_adds(out, "\n--\n");
	buf_addbuf(out, &m->text);
}

static void test_golden(void **state)
{
	struct strlist names = STRLIST_INIT;
	size_t i;
	int bad = 0;

	golden_list(&names, "parse/mail", ".eml");
	assert_true(names.nr > 0);
	for (i = 0; i < names.nr; i++) {
		struct buf raw = BUF_INIT(1 << 24), got = BUF_INIT(1 << 24);
		char want[1024];
		struct mail *m;
		size_t n = strlen(names.items[i]);

		golden_read(&raw, golden_path("parse/mail", names.items[i]));
		assert_int_equal(mail_parse(&m, raw.data, raw.len, NULL), 0);
		dump(&got, m);
		snprintf(want, sizeof(want), "%.*s.txt", (int)(n - 4),
			 names.items[i]);
		if (!golden_check(golden_path("parse/mail", want), &got))
			bad++;
		mail_free(m);
		buf_release(&raw);
		buf_release(&got);
	}
	strlist_release(&names);
	assert_int_equal(bad, 0);
}

static void test_limits(void **state)
{
	struct mail_limits lim;
	struct buf raw = BUF_INIT(1 << 24);
	struct mail *m = NULL;
	int i;

	mail_limits_default(&lim);
	/* too many header fields */
	for (i = 0; i < 600; i++)
		buf_addf(&raw, "X-H%d: v\n", i);
	buf_adds(&raw, "\nbody\n");
	assert_int_equal(mail_parse(&m, raw.data, raw.len, &lim), PB_ELIMIT);
	assert_null(m);
	/* one endless header field */
	buf_reset(&raw);
	buf_adds(&raw, "Subject: x");
	for (i = 0; i < 70000; i++)
		buf_adds(&raw, "\n y");
	buf_adds(&raw, "\n\nbody\n");
	assert_int_equal(mail_parse(&m, raw.data, raw.len, &lim), PB_ELIMIT);
	/* the whole message: what fits is kept, up to a line end */
	buf_reset(&raw);
	buf_adds(&raw, "Subject: big\n\n");
	for (i = 0; i < 100; i++)
		buf_addf(&raw, "line %d\n", i);
	lim.max_size = 100;
	assert_int_equal(mail_parse(&m, raw.data, raw.len, &lim), 0);
	assert_true(m->flags & MAIL_F_TRUNCATED);
	assert_non_null(strstr(m->text.data, "line 0\n"));
	assert_null(strstr(m->text.data, "line 99"));
	assert_int_equal(m->text.data[m->text.len - 1], '\n');
	mail_free(m);
	/* decoded text per part: its beginning and its end, at line ends */
	mail_limits_default(&lim);
	lim.max_text = 64;
	buf_reset(&raw);
	buf_adds(&raw, "Subject: t\n\n");
	for (i = 0; i < 20; i++)
		buf_addf(&raw, "line %02d\n", i);
	assert_int_equal(mail_parse(&m, raw.data, raw.len, &lim), 0);
	assert_true(m->flags & MAIL_F_TRUNCATED);
	assert_true(m->text.len <= 64);
	assert_memory_equal(m->text.data, "line 00\nline 01\n", 16);
	assert_non_null(strstr(m->text.data, "\n[...]\n"));
	assert_non_null(strstr(m->text.data, "\nline 19\n"));
	assert_null(strstr(m->text.data, "line 10"));
	mail_free(m);
	/* one line longer than the cap: its beginning */
	lim.max_text = 10;
	buf_reset(&raw);
	buf_adds(&raw, "Subject: t\n\n0123456789abcdef\n");
	assert_int_equal(mail_parse(&m, raw.data, raw.len, &lim), 0);
	assert_true(m->flags & MAIL_F_TRUNCATED);
	assert_memory_equal(m->text.data, "012[...]\n", 9);
	mail_free(m);
	buf_release(&raw);
}

/* A message of n empty parts after a text part, boundary declared by
 * ctype (a Content-Type value). */
static void bomb(struct buf *raw, const char *ctype, const char *sep, int n)
{
	int i;

	buf_reset(raw);
	buf_addf(raw,
		 "Subject: bomb\nMIME-Version: 1.0\nContent-Type: %s\n\n"
		 "--%s\nContent-Type: text/plain\n\nmy reply\n",
		 ctype, sep);
	for (i = 0; i < n; i++)
		buf_addf(raw, "--%s\n\n", sep);
	buf_addf(raw, "--%s--\n", sep);
}

/*
 * MIME part bombs are cut before GMime builds them (mail.c's pre-scan):
 * the text before the cut is read, the mail says MAIL_F_LIMIT.  The
 * boundary is found as GMime reads it (quoted, RFC 2231 continuations),
 * lines after the boundary count too, and so do chains of message/rfc822
 * headers and header blocks with many fields.
 */
static void test_part_bombs(void **state)
{
	static const struct {
		const char *ctype, *sep;
	} kinds[] = {
		{ "multipart/mixed; boundary=b", "b" },
		{ "multipart/mixed; boundary=\"b b\"", "b b" },
		{ "multipart/mixed; boundary*0=\"ab\"; boundary*1=\"cd\"",
		  "abcd" },
		{ "multipart/mixed;\n boundary=\"x\"", "x" },
		{ "multipart/mixed; boundary=\"\"", "" },
	};
	struct buf raw = BUF_INIT(1 << 24);
	struct mail *m = NULL;
	size_t k;
	int i;

	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		bomb(&raw, kinds[k].ctype, kinds[k].sep, 200000);
		assert_int_equal(mail_parse(&m, raw.data, raw.len, NULL), 0);
		if (!(m->flags & MAIL_F_LIMIT))
			fail_msg("%s: not cut", kinds[k].ctype);
		assert_string_equal(m->text.data, "my reply\n");
		mail_free(m);
		/* a few parts are no bomb */
		bomb(&raw, kinds[k].ctype, kinds[k].sep, 3);
		assert_int_equal(mail_parse(&m, raw.data, raw.len, NULL), 0);
		assert_false(m->flags & MAIL_F_LIMIT);
		mail_free(m);
	}
	/* boundary lines with something after them */
	buf_reset(&raw);
	buf_adds(&raw, "Content-Type: multipart/mixed; boundary=b\n\n"
		       "--b\n\nmine\n");
	for (i = 0; i < 100000; i++)
		buf_adds(&raw, "--b \t\n");
	assert_int_equal(mail_parse(&m, raw.data, raw.len, NULL), 0);
	assert_true(m->flags & MAIL_F_LIMIT);
	mail_free(m);
	/* nested messages without a boundary line */
	buf_reset(&raw);
	buf_adds(&raw, "Subject: nest\n");
	for (i = 0; i < 100000; i++)
		buf_adds(&raw, "Content-Type: message/rfc822\n\n");
	buf_adds(&raw, "\nend\n");
	assert_int_equal(mail_parse(&m, raw.data, raw.len, NULL), 0);
	assert_true(m->flags & MAIL_F_LIMIT);
	mail_free(m);
	/* part headers: many fields in one part, or in all of them */
	buf_reset(&raw);
	buf_adds(&raw, "Content-Type: multipart/mixed; boundary=b\n\n"
		       "--b\nContent-Type: text/plain\n\nmine\n--b\n");
	for (i = 0; i < 100000; i++)
		buf_addf(&raw, "X-F%d: v\n", i);
	buf_adds(&raw, "\nx\n--b--\n");
	assert_int_equal(mail_parse(&m, raw.data, raw.len, NULL), 0);
	assert_true(m->flags & MAIL_F_LIMIT);
	assert_string_equal(m->text.data, "mine\n");
	mail_free(m);
	buf_reset(&raw);
	buf_adds(&raw, "Content-Type: multipart/mixed; boundary=b\n\n");
	for (i = 0; i < PB_MIME_PARTS_MAX / 2; i++) {
		int f;

		buf_adds(&raw, "--b\n");
		for (f = 0; f < 100; f++)
			buf_addf(&raw, "X-F%d: v\n", f);
		buf_adds(&raw, "\nx\n");
	}
	buf_adds(&raw, "--b--\n");
	assert_int_equal(mail_parse(&m, raw.data, raw.len, NULL), 0);
	assert_true(m->flags & MAIL_F_LIMIT);
	mail_free(m);
	buf_release(&raw);
}

static void test_garbage(void **state)
{
	static const char junk[] = "\0\0\xff\xfe not a mail\n\n\n";
	struct mail *m = NULL;
	int rc;

	rc = mail_parse(&m, junk, sizeof(junk) - 1, NULL);
	if (rc == 0) {
		/* GMime reads anything as a message: it must be sane */
		assert_non_null(m->subject);
		assert_non_null(m->from.email);
		mail_free(m);
	}
	rc = mail_parse(&m, "", 0, NULL);
	if (rc == 0)
		mail_free(m);
}

static void text_is_n(int (*fn)(struct buf *, const char *, size_t),
		      const char *in, size_t len, const char *want)
{
	struct buf b = BUF_INIT(1 << 20);

	fn(&b, in, len);
	assert_string_equal(b.data, want);
	buf_release(&b);
}

static void text_is(int (*fn)(struct buf *, const char *, size_t),
		    const char *in, const char *want)
{
	struct buf b = BUF_INIT(1 << 20);

	fn(&b, in, strlen(in));
	assert_string_equal(b.data, want);
	buf_release(&b);
}

static int flowed_delsp(struct buf *b, const char *p, size_t n)
{
	return mailtext_flowed(b, p, n, 1);
}

static void test_mailtext(void **state)
{
	text_is(mailtext_html, "a<br>b<p>c</p>d", "a\nb\nc\nd\n");
	text_is(mailtext_html, "<blockquote>q<br>r</blockquote>own",
		"> q\n> r\nown\n");
	text_is(mailtext_html, "x &lt;y&gt; &#65;&#x42; &bogus; <",
		"x <y> AB &bogus; <\n");
	text_is(mailtext_html, "<pre>  a\n  b</pre>", "  a\n  b\n");
	text_is(mailtext_entities, "&gt; a&nbsp;b &amp;amp;", "> a b &amp;");
	text_is_n(mailtext_clean, "a\r\nb\rc\0d", 8,
		  "a\nb\nc\xef\xbf\xbd"
		  "d");
	text_is(flowed_delsp, "a \nb\n-- \nsig\n", "ab\n-- \nsig\n");
	assert_true(mailtext_has_entities("x&nbsp;y", 8));
	assert_false(mailtext_has_entities("R&D", 3));
}

static int setup(void **state)
{
	return mail_init();
}

static int teardown(void **state)
{
	mail_shutdown();
	return 0;
}

static void test_date_parse(void **state)
{
	int64_t t = -1;

	(void)state;
	assert_int_equal(mail_date_parse(&t, "Thu, 3 Dec 2026 12:00:00 +0100"),
			 0);
	assert_int_equal(t, 1796295600);
	/* obsolete zone names and missing weekday, as mailers write them */
	assert_int_equal(mail_date_parse(&t, "3 Dec 2026 11:00:00 GMT"), 0);
	assert_int_equal(t, 1796295600);
	assert_int_equal(mail_date_parse(&t, "yesterday"), PB_EINVAL);
	assert_int_equal(t, 0);
	assert_int_equal(mail_date_parse(&t, ""), PB_EINVAL);
	assert_int_equal(mail_date_parse(&t, NULL), PB_EINVAL);
}

/*
 * Fields the model does not read are not given to GMime (mail.c,
 * header_filter()), which must change nothing it reads: conflicting
 * single fields are still ambiguous, kept fields are kept, and nothing
 * after the header or after a line that is not a field is dropped.
 */
static void test_header_filter(void **state)
{
	static const char conflicting_to[] = "From: a@example.org\n"
					     "Received: from x by y\n"
					     "To: one@example.org\n"
					     "To: two@example.org\n"
					     "Subject: t\n\nbody\n";
	static const char conflicting_sender[] = "From: a@example.org\n"
						 "Sender: one@example.org\n"
						 "X-Mailer: m\n"
						 "Sender: two@example.org\n"
						 "Subject: t\n\nbody\n";
	static const char kept[] =
		"Received: from x\n"
		"\tby y\n"
		"Authentication-Results: lists.example.test; dkim=pass\n"
		"X-Patchbridge-Origin: forge\n"
		"DKIM-Signature: v=1; a=rsa-sha256;\n"
		" b=abc\n"
		"List-Id: <l.example.org>\n"
		"From: \"A\" <a@example.org>\n"
		"Subject: t\n"
		"\n"
		"Received: a body line, not a field\n"
		"X-Body: kept\n";
	static const char invalid[] = "From: a@example.org\n"
				      "Subject: t\n"
				      "not a field\n"
				      "X-After: it\n"
				      "\n"
				      "body\n";
	struct mail *m = NULL;

	(void)state;
	assert_int_equal(mail_parse(&m, conflicting_to,
				    sizeof(conflicting_to) - 1, NULL),
			 0);
	assert_true(m->flags & MAIL_F_AMBIGUOUS);
	mail_free(m);
	assert_int_equal(mail_parse(&m, conflicting_sender,
				    sizeof(conflicting_sender) - 1, NULL),
			 0);
	assert_true(m->flags & MAIL_F_AMBIGUOUS);
	mail_free(m);

	assert_int_equal(mail_parse(&m, kept, sizeof(kept) - 1, NULL), 0);
	assert_false(m->flags & MAIL_F_AMBIGUOUS);
	assert_string_equal(m->from.email, "a@example.org");
	assert_string_equal(m->subject, "t");
	assert_string_equal(mail_header_get(m, "Authentication-Results", 0),
			    "lists.example.test; dkim=pass");
	assert_string_equal(mail_header_get(m, "X-Patchbridge-Origin", 0),
			    "forge");
	assert_string_equal(mail_header_get(m, "List-Id", 0),
			    "<l.example.org>");
	assert_string_equal(m->text.data, "Received: a body line, not a "
					  "field\nX-Body: kept\n");
	mail_free(m);

	/* whatever GMime makes of it, it makes the same as unfiltered */
	assert_int_equal(mail_parse(&m, invalid, sizeof(invalid) - 1, NULL), 0);
	assert_true(m->flags & MAIL_F_AMBIGUOUS);
	assert_non_null(strstr(m->text.data, "body"));
	mail_free(m);
}

/*
 * Is there a note "what (at byte N)", N where field starts in mail (the
 * first match at or after from)?  i: that note's index, or -1 for any.
 */
static int note_at(const struct mail *m, long i, const char *what,
		   const char *mail, const char *from, const char *field)
{
	char want[160];
	size_t k;

	snprintf(want, sizeof(want), "%s (at byte %td)", what,
		 strstr(from, field) - mail);
	for (k = 0; k < m->notes.nr; k++)
		if ((i < 0 || (size_t)i == k) &&
		    !strcmp(m->notes.items[k], want))
			return 1;
	return 0;
}

/*
 * A header of well-formed fields is read here, not by GMime (mail.c,
 * struct top): GMime's warnings for those fields are given all the same,
 * in its words, at the field's offset in the mail as given - a repeat
 * (critical when the two differ), 8-bit text, a From GMime cannot read,
 * a bad encoded word in Subject - and so are the offsets of GMime's own
 * warnings past fields left out.  Only the lists To, Cc and Bcc are not
 * parsed.
 */
static void test_header_read(void **state)
{
	static const char twice[] = "Received: from x by y\n"
				    "From: a@example.org\n"
				    "Subject: t\n"
				    "From: a@example.org\n"
				    "Subject: u\n"
				    "\nbody\n";
	static const char odd[] =
		"From mbox-line Mon Jan  1 00:00:00 2024\n"
		"Received: from x by y\n"
		"From: bob (smith <bob@example.com>\n"
		"Cc: broken <<<>>> list,,, @@\n"
		"X-Mailer: \xff\n"
		"Reply-To: \xc3\x28 <r@example.org>\n"
		"Subject: =?utf-8?q?a=?= b\n"
		"Content-Type: text/plain; charset=\"utf-8\"; charset=latin1\n"
		"\nbody\n";
	static const char unplain[] = "From: a@example.org\n"
				      "DKIM-Signature: v=1\n"
				      "not a field\n"
				      "From: b@example.org\n"
				      "\nbody\n";
	struct mail *m = NULL;

	(void)state;
	assert_int_equal(mail_parse(&m, twice, sizeof(twice) - 1, NULL), 0);
	assert_true(m->flags & MAIL_F_AMBIGUOUS);
	assert_int_equal(m->crit, 1); /* Subject; From is the same twice */
	assert_true(note_at(m, -1,
			    "critical: conflicting header fields: \"Subject\"",
			    twice, twice, "Subject: u"));
	assert_true(note_at(m, -1,
			    "a header field that may appear once appears "
			    "again: \"From\"",
			    twice, twice + 30, "From:"));
	mail_free(m);

	assert_int_equal(mail_parse(&m, odd, sizeof(odd) - 1, NULL), 0);
	assert_true(m->flags & MAIL_F_AMBIGUOUS); /* the two charsets */
	assert_int_equal(m->notes.nr, 4);
	assert_true(note_at(m, 0,
			    "unencoded 8-bit text in a header field: "
			    "\"Reply-To\"",
			    odd, odd, "Reply-To"));
	assert_true(note_at(m, 1,
			    "an invalid address list: \"bob (smith "
			    "<bob@example.com>?\"",
			    odd, odd, "From: bob"));
	assert_true(note_at(m, 2,
			    "an invalid address list: \"?( <r@example.org>?\"",
			    odd, odd, "Reply-To"));
	/* GMime's own warning, counted in the mail, mbox line and all */
	assert_true(note_at(m, 3,
			    "critical: conflicting header parameters: "
			    "\"charset\"",
			    odd, odd, "Content-Type"));
	mail_free(m);

	/* not all fields: GMime reads them, as before */
	assert_int_equal(mail_parse(&m, unplain, sizeof(unplain) - 1, NULL), 0);
	assert_true(m->flags & MAIL_F_AMBIGUOUS);
	assert_true(note_at(m, -1,
			    "critical: conflicting header fields: \"From\"",
			    unplain, unplain + 5, "From:"));
	mail_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_part_bombs),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_mailtext),
		cmocka_unit_test(test_date_parse),
		cmocka_unit_test(test_header_filter),
		cmocka_unit_test(test_header_read),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
