/*
 * hdrdecode: RFC 2047 encoded words (section 6.2 runs, charsets, broken
 * words) and the From mailbox in the forms old and broken clients write.
 * Real header values name the mail they come from (Message-ID); the
 * others isolate one rule each.
 */
#include "cmocka_all.h"
#include "mail/hdrdecode.h"
#include "mail/mail.h"

#include <string.h>

static int conv(struct buf *out, const char *p, size_t len, const char *charset,
		void *arg)
{
	(void)arg;
	return mail_charset_to_utf8(out, p, len, charset);
}

static const struct {
	const char *in, *out;
} texts[] = {
	/* the run of the issue: a padded word, then another in utf-8 */
	{ "=?utf-8?b?QUI=?= =?utf-8?b?REVG?=", "ABDEF" },
	/* Mutt, stable@vger.kernel.org
	 * <2023082825-release-opal-fdc4@gregkh>: the closing quote is a
	 * word of its own after a padded one */
	{ "Re: 5.10.192 fails to build =?utf-8?B?KGVy?=\n"
	  " =?utf-8?B?cm9yOiDigJhSVDcxMV9KRDJfMTAwSw==?= =?utf-8?B?4oCZ?= "
	  "undeclared\n here (not in a function))",
	  "Re: 5.10.192 fails to build (error: \xe2\x80\x98RT711_JD2_100K"
	  "\xe2\x80\x99 undeclared here (not in a function))" },
	/* Gnus, git@vger.kernel.org (Cc of <87bmf4w4l7.fsf@evledraar>'s
	 * thread): a name split over words */
	{ "=?utf-8?B?Tmd1eQ==?= =?utf-8?B?4buFbiBUaMOhaSBOZ+G7jWM=?= Duy",
	  "Nguy\xe1\xbb\x85n Th\xc3\xa1i Ng\xe1\xbb\x8d"
	  "c Duy" },
	/* a character split over two words (joined before converting) */
	{ "=?UTF-8?B?ww==?= =?UTF-8?B?qQ==?=", "\xc3\xa9" },
	{ "=?utf-8?q?=E5=BC?= =?utf-8?q?=A0?=", "\xe5\xbc\xa0" },
	/* Cyrillic and CJK in one charset, split at a word boundary */
	{ "=?koi8-r?b?8NLJ18XU?= =?koi8-r?b?INfTxc0=?=",
	  "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xd0\xb2\xd1\x81"
	  "\xd0\xb5\xd0\xbc" },
	{ "=?gb2312?b?1tDOxA==?= =?gb2312?b?suLK1A==?=",
	  "\xe4\xb8\xad\xe6\x96\x87\xe6\xb5\x8b\xe8\xaf\x95" },
	/* different charsets: each converted on its own */
	{ "=?ISO-8859-1?Q?caf=E9?= =?UTF-8?Q?=C3=A9?=", "caf\xc3\xa9\xc3\xa9" },
	/* whitespace between a word and text is kept */
	{ "a =?utf-8?q?b?= c", "a b c" },
	{ "=?utf-8?q?a?=  b", "a  b" },
	/* glued to text, and an RFC 2231 language */
	{ "Re:=?utf-8?q?x_y?=", "Re:x y" },
	{ "=?utf-8*en?q?lang?=", "lang" },
	/* padded chunks inside one word */
	{ "=?utf-8?b?QUI=REVG?=", "ABDEF" },
	/* not base64: the word as written */
	{ "=?utf-8?b?!!!?= x", "=?utf-8?b?!!!?= x" },
	/* never closed */
	{ "=?utf-8?q?unterminated", "=?utf-8?q?unterminated" },
	{ "=?utf-8?q?a =?utf-8?q?b?=", "=?utf-8?q?a b" },
	/* invalid bytes stay visible: a word labelled UTF-8 that is
	 * Latin-1 is read as such, as the text part is */
	{ "=?utf-8?q?M=FCller?=", "M\xc3\xbcller" },
	/* an encoded line break is no line break */
	{ "=?utf-8?q?a=0D=0ASubject:_x?=", "a Subject: x" },
	/* raw 8-bit: UTF-8 (RFC 6532), else windows-1252 */
	{ "J\xc3\xb6rg", "J\xc3\xb6rg" },
	{ "J\xf6rg", "J\xc3\xb6rg" },
	/* an unknown charset is guessed like unlabelled text */
	{ "=?x-unknown?q?J=C3=B6rg?=", "J\xc3\xb6rg" },
	/* charsets other than UTF-8 and Latin-1, through the system's
	 * converter: ISO-2022-JP (7-bit, shifted by escapes: Japanese
	 * Thunderbird, Becky!), GBK, KOI8-R, windows-1251 and -1250
	 * (Outlook), ISO-8859-2, -15 and -7 */
	{ "=?ISO-2022-JP?B?GyRCRnxLXDhsJE4lRiU5JUgbKEI=?=",
	  "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86"
	  "\xe3\x82\xb9\xe3\x83\x88" },
	{ "=?iso-2022-jp?Q?=1B$B%Q%C%A=1B(B?=",
	  "\xe3\x83\x91\xe3\x83\x83\xe3\x83\x81" },
	{ "=?GBK?B?srm2obLiytQ=?=",
	  "\xe8\xa1\xa5\xe4\xb8\x81\xe6\xb5\x8b\xe8\xaf\x95" },
	{ "=?KOI8-R?Q?=F0=D2=C9=D7=C5=D4?=",
	  "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82" },
	{ "=?windows-1251?B?yPHv8ODi6+Xt6OU=?=",
	  "\xd0\x98\xd1\x81\xd0\xbf\xd1\x80\xd0\xb0\xd0\xb2\xd0\xbb\xd0\xb5"
	  "\xd0\xbd\xd0\xb8\xd0\xb5" },
	{ "=?windows-1250?Q?Za=BF=F3=B3=E6?=",
	  "Za\xc5\xbc\xc3\xb3\xc5\x82\xc4\x87" },
	{ "=?ISO-8859-2?Q?=A3ukasz_Wr=F3bel?=", "\xc5\x81ukasz Wr\xc3\xb3"
						"bel" },
	{ "=?ISO-8859-15?Q?=A4_5?=", "\xe2\x82\xac 5" },
	{ "=?iso-8859-7?B?yuHr5+zd8eE=?=",
	  "\xce\x9a\xce\xb1\xce\xbb\xce\xb7\xce\xbc\xce\xad\xcf\x81\xce\xb1" },
	{ "=?windows-1252?Q?=84quoted=93?=", "\xe2\x80\x9equoted\xe2\x80\x9c" },
	/* Gmail, git@vger.kernel.org
	 * <CAECJ0BmcxeS1q8bw4hN9jDja2g8GGzNyN_v7jC3ehOW70x6CRA@mail.gmail.com>:
	 * ASCII and kanji in one ISO-2022-JP word */
	{ "=?ISO-2022-JP?B?S2VudGEgTXVyYXRhICgbJEJCPEVEGyhCIBskQjgtQkAbKEIp?=",
	  "Kenta Murata (\xe6\x9d\x91\xe7\x94\xb0 \xe8\xb3\xa2\xe5\xa4\xaa)" },
	/* ISO-2022-JP split between two words: the escapes carry over */
	{ "=?ISO-2022-JP?B?GyRCRnxLXBsoQg==?= =?ISO-2022-JP?B?GyRCOGwbKEI=?=",
	  "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e" },
	/* a cut multibyte sequence: U+FFFD, never dropped */
	{ "=?shift_jis?q?a=82?=", "a\xef\xbf\xbd" },
	{ "", "" },
};

static void test_text(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct buf b = BUF_INIT(1 << 16);

		assert_int_equal(hdrdecode_text(&b, texts[i].in,
						strlen(texts[i].in), conv,
						NULL),
				 0);
		print_message("%s\n", texts[i].in);
		assert_string_equal(b.data, texts[i].out);
		buf_release(&b);
	}
}

static const struct {
	const char *in, *name, *email;
} boxes[] = {
	/* mu4e, git@vger.kernel.org <87bmf4w4l7.fsf@evledraar.gmail.com>:
	 * the address first, the name in a comment */
	{ "avarab@gmail.com (=?utf-8?B?w4Z2YXIgQXJuZmrDtnLDsA==?= "
	  "Bjarmason)",
	  "\xc3\x86var Arnfj\xc3\xb6r\xc3\xb0 Bjarmason", "avarab@gmail.com" },
	{ "a@b.c (A U Thor)", "A U Thor", "a@b.c" },
	/* an unclosed comment is no comment */
	{ "bob (smith <bob@example.com>", "bob smith", "bob@example.com" },
	/* nor is an unclosed quote: the address git mailinfo takes */
	{ "\"Bob Smith <bob@example.com>", "Bob Smith", "bob@example.com" },
	{ "\"Bob Smith bob@example.com", "Bob Smith", "bob@example.com" },
	{ "Bob \"Smith <bob@example.com>", "Bob Smith", "bob@example.com" },
	{ "\"bob@example.com", "", "bob@example.com" },
	{ "=?utf-8?q?J=C3=B6rg?= \"<joerg@example.com>", "J\xc3\xb6rg",
	  "joerg@example.com" },
	{ "\"Bob\" \"Smith <bob@example.com>", "\"Bob\" Smith",
	  "bob@example.com" },
	{ "zs@example.com (=?utf-8?b?5byg5LiJ?=", "\xe5\xbc\xa0\xe4\xb8\x89",
	  "zs@example.com" },
	/* encoded words glued to the local part, or to the bracket */
	{ "=?utf-8?b?5byg5LiJ?=zhangsan@example.com",
	  "\xe5\xbc\xa0\xe4\xb8\x89", "zhangsan@example.com" },
	{ "=?utf-8?q?J=C3=B6rg?=<joerg@example.com>", "J\xc3\xb6rg",
	  "joerg@example.com" },
	/* an encoded word as the local part: no address, not a garbled one */
	{ "Foo =?utf-8?q?B=C3=A4r?=@example.com", "Foo B\xc3\xa4r", "" },
	/* no angle brackets */
	{ "Zhang San zhangsan@example.com", "Zhang San",
	  "zhangsan@example.com" },
	{ "\"=?utf-8?b?5byg5LiJ?=\"zs@example.com", "\xe5\xbc\xa0\xe4\xb8\x89",
	  "zs@example.com" },
	/* the section 6.2 run in a name */
	{ "=?UTF-8?B?QUI=?= =?UTF-8?B?REVG?= <x@y.z>", "ABDEF", "x@y.z" },
	/* Freedreno (corpus): no blank before the bracket */
	{ "Kuogee Hsieh<quic_khsieh@quicinc.com>", "Kuogee Hsieh",
	  "quic_khsieh@quicinc.com" },
	/* Mercurial's patchbomb, linux-kernel
	 * <patchbomb.1161060146@thor.fsl.cs.sunysb.edu>: a nickname */
	{ "Josef \"Jeff\" Sipek <jsipek@cs.sunysb.edu>", "Josef \"Jeff\" Sipek",
	  "jsipek@cs.sunysb.edu" },
	/* Thunderbird, alsa-devel
	 * <aa54a70c-e7fc-4ca2-9a4d-425675ed0be3@leemhuis.info>: a
	 * parenthesis inside a quoted name, folded */
	{ "\"Linux regression tracking (Thorsten Leemhuis)\"\n"
	  " <regressions@leemhuis.info>",
	  "Linux regression tracking (Thorsten Leemhuis)",
	  "regressions@leemhuis.info" },
	/* an unquoted comma in the name (Outlook's "Last, First") */
	{ "Last, First <lf@x.org>", "Last, First", "lf@x.org" },
	{ "\"Foo, Bar\" <foo@bar.com>", "Foo, Bar", "foo@bar.com" },
	/* unclosed bracket, obsolete route, trailing dot, quoted local */
	{ "Foo Bar <foo@bar.com", "Foo Bar", "foo@bar.com" },
	{ "Foo <@route,@r2:foo@bar.com>", "Foo", "foo@bar.com" },
	{ "Bob <bob@example.com.>", "Bob", "bob@example.com" },
	{ "Foo <\"foo bar\"@baz.com>", "Foo", "\"foo bar\"@baz.com" },
	{ "bob (smith) <bob@example.com>", "bob", "bob@example.com" },
	{ "<foo@bar.com> (Foo)", "Foo", "foo@bar.com" },
	/* a list and a group: the first mailbox */
	{ "Bob <bob@example.com>, Alice <a@x.y>", "Bob", "bob@example.com" },
	{ "group: a@b.c, d@e.f;", "", "a@b.c" },
	/* no usable address: reported missing */
	{ "undisclosed-recipients:;", "", "" },
	{ "foo", "foo", "" },
	{ "Foo <foo>", "Foo", "" },
	{ "Foo <foo bar@baz.com>", "Foo", "" },
	{ "a@b@c.d", "", "" },
	{ "Foo <foo@-bar..com>", "Foo", "" },
	{ "Foo <a@b.c\r\nBcc: x@y.z>", "Foo", "" },
	{ "", "", "" },
};

static void test_mailbox(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(boxes) / sizeof(boxes[0]); i++) {
		struct hdrdecode_mailbox mb;

		hdrdecode_mailbox(&mb, boxes[i].in, strlen(boxes[i].in), conv,
				  NULL);
		print_message("%s\n", boxes[i].in);
		assert_string_equal(mb.name, boxes[i].name);
		assert_string_equal(mb.email, boxes[i].email);
		assert_int_equal(!mb.email[0],
				 !!(mb.flags & HDRDECODE_F_NO_ADDR));
		hdrdecode_mailbox_release(&mb);
	}
}

static void test_addr_ok(void **state)
{
	(void)state;
	assert_true(hdrdecode_addr_ok("a@b.c", 5));
	assert_true(hdrdecode_addr_ok("x@[IPv6:::1]", 12));
	assert_true(hdrdecode_addr_ok("j\xc3\xb6rg@b\xc3\xa4r.de", 13));
	assert_false(hdrdecode_addr_ok("=?utf-8?q?x?=@b.c", 17));
	/* nor in a domain literal or a quoted local part (fuzz_header) */
	assert_false(hdrdecode_addr_ok("a@[x=?UTF-8?B?.co]", 18));
	assert_false(hdrdecode_addr_ok("\"=?a?q?b?=\"@b.c", 16));
	assert_false(hdrdecode_addr_ok("a@b", 2)); /* length honoured */
	assert_false(hdrdecode_addr_ok("a b@c.d", 7));
	assert_false(hdrdecode_addr_ok("@c.d", 4));
	assert_false(hdrdecode_addr_ok("a@", 2));
	assert_false(hdrdecode_addr_ok("a@b.", 4));
	assert_false(hdrdecode_addr_ok("a@b\xff.c", 6));
}

/* Bounded: a huge run of words and a huge comment nest stay cheap. */
static void test_bounds(void **state)
{
	struct buf in = BUF_INIT(1 << 20), out = BUF_INIT(1 << 20);
	struct hdrdecode_mailbox mb;
	size_t i;

	(void)state;
	for (i = 0; i < 20000; i++)
		buf_adds(&in, "=?utf-8?b?QUI=?= ");
	assert_int_equal(hdrdecode_text(&out, in.data, in.len, conv, NULL), 0);
	assert_true(out.len > 0 && out.len <= HDRDECODE_FIELD_MAX);
	buf_reset(&in);
	for (i = 0; i < 100000; i++)
		buf_addch(&in, '(');
	hdrdecode_mailbox(&mb, in.data, in.len, conv, NULL);
	assert_string_equal(mb.email, "");
	hdrdecode_mailbox_release(&mb);
	buf_release(&in);
	buf_release(&out);
}

static int setup(void **state)
{
	(void)state;
	return mail_init();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_mailbox),
		cmocka_unit_test(test_addr_ok),
		cmocka_unit_test(test_bounds),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
