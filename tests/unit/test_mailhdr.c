#include "cmocka_all.h"
#include "outbound/mailhdr.h"
#include "outbound/qp.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/strlist.h"
#include "util/utf8.h"

#include <stdio.h>
#include <string.h>

static int hexv(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c - 'A' + 10;
}

/*
 * A small RFC 2047 decoder for the checks: unfold, then decode each
 * "=?UTF-8?q?...?=" word (dropping whitespace between adjacent ones).
 * Fails the test on anything malformed.
 */
static void decode_header_value(struct buf *out, const char *v)
{
	struct buf un = BUF_INIT(1 << 20);
	const char *p;
	int last_encoded = 0;
	size_t pending_ws = 0;

	for (p = v; *p; p++)
		if (*p != '\n')
			buf_addch(&un, *p);
	p = un.data;
	while (*p) {
		if (*p == ' ') {
			pending_ws++;
			p++;
			continue;
		}
		if (!strncmp(p, "=?UTF-8?q?", 10)) {
			const char *end = strstr(p + 10, "?=");
			const char *q;
			struct buf word = BUF_INIT(1024);

			assert_non_null(end);
			/* RFC 2047 section 2: at most 75 characters. */
			assert_true(end + 2 - p <= 75);
			if (!last_encoded)
				while (pending_ws--)
					buf_addch(out, ' ');
			for (q = p + 10; q < end; q++) {
				if (*q == '_') {
					buf_addch(&word, ' ');
				} else if (*q == '=') {
					buf_addch(&word,
						  hexv(q[1]) * 16 + hexv(q[2]));
					q += 2;
				} else {
					/* Literal: only the phrase-safe set. */
					assert_non_null(strchr(
						"abcdefghijklmnopqrstuvwxyz"
						"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
						"0123456789!*+-/",
						*q));
					buf_addch(&word, *q);
				}
			}
			/* Each word holds whole characters. */
			assert_true(utf8_valid(word.data, word.len));
			buf_addbuf(out, &word);
			buf_release(&word);
			p = end + 2;
			last_encoded = 1;
			pending_ws = 0;
			continue;
		}
		while (pending_ws) {
			buf_addch(out, ' ');
			pending_ws--;
		}
		while (*p && *p != ' ')
			buf_addch(out, *p++);
		last_encoded = 0;
	}
	buf_release(&un);
}

/* Split "Name: value\n" and check its lines' widths. */
static const char *header_value(const struct buf *h, const char *name,
				size_t max_width)
{
	const char *line = h->data, *nl;
	size_t nlen = strlen(name);

	assert_int_equal(strncmp(h->data, name, nlen), 0);
	assert_int_equal(h->data[nlen], ':');
	assert_int_equal(h->data[h->len - 1], '\n');
	while (*line) {
		nl = strchr(line, '\n');
		assert_non_null(nl);
		assert_true((size_t)(nl - line) <= max_width);
		if (line != h->data)
			assert_true(*line == ' ' || *line == '\t');
		line = nl + 1;
	}
	return h->data + nlen + 1 + (h->data[nlen + 1] == ' ');
}

static void check_subject(const char *title, const char *want)
{
	struct buf h = BUF_INIT(1 << 20), d = BUF_INIT(1 << 20);
	const char *v;
	size_t i;

	assert_int_equal(
		mailhdr_add_text(&h, "Subject", "[PATCH v2 3/7]", title), 0);
	for (i = 0; i < h.len; i++)
		assert_true((unsigned char)h.data[i] < 0x80);
	v = header_value(&h, "Subject",
			 strstr(h.data, "=?") ? MAILHDR_ENCODED_WIDTH :
						MAILHDR_FOLD_WIDTH);
	buf_add(&d, v, strlen(v) - 1);
	buf_release(&h);
	h = (struct buf)BUF_INIT(1 << 20);
	decode_header_value(&h, d.data);
	assert_string_equal(h.data, want);
	buf_release(&h);
	buf_release(&d);
}

static void test_sanitize(void **state)
{
	struct buf b = BUF_INIT(1024);

	assert_int_equal(mailhdr_sanitize(&b, "  a\r\nBcc: evil@x\t b  ", 21),
			 0);
	assert_string_equal(b.data, "a Bcc: evil@x b");
	buf_reset(&b);
	mailhdr_sanitize(&b, "x\x01y\x1b[31mz\x7f", 10);
	assert_string_equal(b.data, "xy[31mz");
	buf_reset(&b);
	/* Invalid UTF-8 becomes U+FFFD; C1 and bidi controls go. */
	mailhdr_sanitize(&b,
			 "a\xff"
			 "b\xc2\x85"
			 "c\xe2\x80\xae"
			 "d",
			 10);
	assert_string_equal(b.data, "a\xef\xbf\xbd"
				    "bcd");
	buf_reset(&b);
	/* U+2028 LINE SEPARATOR is a line break too. */
	mailhdr_sanitize(&b,
			 "a\xe2\x80\xa8"
			 "b",
			 5);
	assert_string_equal(b.data, "a b");
	buf_release(&b);
}

static void test_subject_plain(void **state)
{
	struct buf h = BUF_INIT(4096);

	mailhdr_add_text(&h, "Subject", "[PATCH]", "fix: a small thing");
	assert_string_equal(h.data, "Subject: [PATCH] fix: a small thing\n");
	buf_reset(&h);
	/* Forge text with CR/LF cannot add a header. */
	mailhdr_add_text(&h, "Subject", NULL, "title\r\nBcc: x@y");
	assert_string_equal(h.data, "Subject: title Bcc: x@y\n");
	buf_release(&h);
}

static void test_subject_encoded(void **state)
{
	struct buf h = BUF_INIT(4096);

	mailhdr_add_text(&h, "Subject", "[PATCH]", "M\xc3\xbcller: fix");
	assert_string_equal(
		h.data, "Subject: [PATCH] =?UTF-8?q?M=C3=BCller=3A?= fix\n");
	buf_release(&h);
	check_subject("M\xc3\xbcller: fix",
		      "[PATCH v2 3/7] M\xc3\xbcller: fix");
	/* A literal encoded-word is encoded so it stays literal. */
	check_subject("use =?UTF-8?q?x?= as is",
		      "[PATCH v2 3/7] use =?UTF-8?q?x?= as is");
	check_subject("a=?b", "[PATCH v2 3/7] a=?b");
	/* Control characters are gone, not encoded. */
	check_subject("a\rb\nc\x01"
		      "d",
		      "[PATCH v2 3/7] a b cd");
}

static void test_subject_long(void **state)
{
	char title[2000];
	char want[2100];
	size_t i;

	/* Plain ASCII: folded at spaces, lines <= 78. */
	title[0] = '\0';
	for (i = 0; i < 40; i++)
		strcat(title, "word ");
	strcat(title, "end");
	snprintf(want, sizeof(want), "[PATCH v2 3/7] %s", title);
	check_subject(title, want);

	/* Non-ASCII everywhere: many encoded-words, lines <= 76, no
	 * character split. */
	title[0] = '\0';
	for (i = 0; i < 60; i++)
		strcat(title, i % 3 ? "\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80 " :
				      "plain ");
	strcat(title, "\xe6\xbc\xa2\xe5\xad\x97");
	snprintf(want, sizeof(want), "[PATCH v2 3/7] %s", title);
	check_subject(title, want);

	/* One endless word is encoded so that it can be folded. */
	memset(title, 'x', 1500);
	title[1500] = '\0';
	snprintf(want, sizeof(want), "[PATCH v2 3/7] %s", title);
	check_subject(title, want);
}

static void test_address(void **state)
{
	struct buf b = BUF_INIT(4096), h = BUF_INIT(4096);
	struct strlist sl = STRLIST_INIT;

	mailhdr_format_addr(&b, "Jane Doe", "jane@example.org");
	assert_string_equal(b.data, "Jane Doe <jane@example.org>");
	buf_reset(&b);
	mailhdr_format_addr(&b, "Doe, Jane \"JD\" Jr.", "jd@example.org");
	assert_string_equal(b.data,
			    "\"Doe, Jane \\\"JD\\\" Jr.\" <jd@example.org>");
	buf_reset(&b);
	mailhdr_format_addr(&b,
			    "Zo\xc3\xab \xc3\x87"
			    "elik",
			    "z@example.org");
	assert_string_equal(b.data,
			    "=?UTF-8?q?Zo=C3=AB_=C3=87elik?= <z@example.org>");
	buf_reset(&b);
	mailhdr_format_addr(&b, "", "bare@example.org");
	assert_string_equal(b.data, "bare@example.org");
	buf_reset(&b);
	mailhdr_format_addr(&b, "Evil\r\nBcc: x@y", "e@example.org");
	assert_string_equal(b.data, "\"Evil Bcc: x@y\" <e@example.org>");
	assert_int_equal(mailhdr_format_addr(&b, "x", "no at sign"), PB_EINVAL);
	assert_int_equal(mailhdr_format_addr(&b, "x", "a@b>c"), PB_EINVAL);
	assert_int_equal(mailhdr_format_addr(&b, "x", "a@b\r\nc"), PB_EINVAL);

	strlist_push(&sl, "One Person <one@example.org>");
	strlist_push(&sl, "=?UTF-8?q?Zo=C3=AB_=C3=87elik_with_a_rather_long_"
			  "name?= <z@example.org>");
	strlist_push(&sl, "three@example.org");
	mailhdr_add_addrs(&h, "Cc", &sl);
	header_value(&h, "Cc", MAILHDR_ENCODED_WIDTH);
	assert_non_null(strstr(h.data, ",\n "));
	buf_release(&b);
	buf_release(&h);
	strlist_release(&sl);
}

static void test_raw_fold(void **state)
{
	struct buf h = BUF_INIT(4096);
	const char *refs = "<aaaaaaaaaaaaaaaaaaaaaaaaaaaa@example.org> "
			   "<bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb@example.org> "
			   "<cccccccccccccc@example.org>";

	assert_int_equal(mailhdr_add_raw(&h, "References", refs), 0);
	header_value(&h, "References", MAILHDR_FOLD_WIDTH);
	assert_non_null(strstr(h.data, ">\n <bbb"));
	assert_int_equal(mailhdr_add_raw(&h, "X", "caf\xc3\xa9"), PB_EINVAL);
	assert_int_equal(mailhdr_add_raw(&h, "X", "a\nb"), PB_EINVAL);
	buf_release(&h);
}

static void test_date(void **state)
{
	struct buf b = BUF_INIT(64);

	mailhdr_date(&b, 0, 0);
	assert_string_equal(b.data, "Thu, 1 Jan 1970 00:00:00 +0000");
	buf_reset(&b);
	mailhdr_date(&b, 1700000000, 330);
	assert_string_equal(b.data, "Wed, 15 Nov 2023 03:43:20 +0530");
	buf_reset(&b);
	mailhdr_date(&b, 1700000000, -420);
	assert_string_equal(b.data, "Tue, 14 Nov 2023 15:13:20 -0700");
	assert_int_equal(mailhdr_date(&b, 0, 6000), PB_EINVAL);
	buf_release(&b);
}

static void test_qp(void **state)
{
	struct buf b = BUF_INIT(1 << 16);
	char longline[1200];

	assert_false(qp_needed("plain\ntext \xc3\xa4\n", 14));
	assert_true(qp_needed("crlf\r\n", 6));
	assert_true(qp_needed("x\nFrom here\n", 12));
	assert_false(qp_needed("x\n>From here\n", 13));
	memset(longline, 'a', sizeof(longline));
	assert_true(qp_needed(longline, sizeof(longline)));
	assert_false(qp_needed(longline, 998));
	/* The limit is per line, the newline not counted. */
	longline[998] = '\n';
	assert_false(qp_needed(longline, 1200 - 1));
	longline[998] = 'a';
	longline[999] = '\n';
	assert_true(qp_needed(longline, 1200 - 1));
	assert_true(qp_needed("From x", 6));
	assert_false(qp_needed("x\nFrom", 6));
	assert_true(qp_needed("a\0b\n", 4));
	assert_false(qp_needed("", 0));

	qp_encode(&b, "a=b \nFrom x\r\n\xc3\xa4\t\n",
		  strlen("a=b \nFrom x\r\n\xc3\xa4\t\n"));
	assert_string_equal(b.data, "a=3Db=20\n=46rom x=0D\n=C3=A4=09\n");
	buf_reset(&b);
	qp_encode(&b, longline, 200);
	/* Soft breaks keep every line within 76. */
	assert_int_equal(strlen(b.data), 200 + 2 * 2);
	assert_int_equal(strchr(b.data, '\n') - b.data, 76);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_subject_plain),
		cmocka_unit_test(test_subject_encoded),
		cmocka_unit_test(test_subject_long),
		cmocka_unit_test(test_address),
		cmocka_unit_test(test_raw_fold),
		cmocka_unit_test(test_date),
		cmocka_unit_test(test_qp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
