#include "cmocka_all.h"
#include "outbound/template.h"
#include "util/buf.h"
#include "util/err.h"

#include <string.h>

static int render(struct buf *out, const char *t, const struct template_var *v,
		  size_t n)
{
	buf_reset(out);
	return template_render(out, t, strlen(t), v, n);
}

static void test_placeholders(void **state)
{
	struct buf b = BUF_INIT(4096);
	const struct template_var v[] = {
		{ "title", "Fix it" },
		{ "n", "3" },
		{ "empty", "" },
		{ "null", NULL },
	};

	assert_int_equal(render(&b, "[{{title}}] x{{n}}y {{empty}}|{{null}}\n",
				v, 4),
			 0);
	assert_string_equal(b.data, "[Fix it] x3y |\n");
	/* Not placeholders: kept as text. */
	assert_int_equal(render(&b, "{{ title }} {{Title}} {{}} {{x\n", v, 4),
			 0);
	assert_string_equal(b.data, "{{ title }} {{Title}} {{}} {{x\n");
	/* No final newline in, none out. */
	render(&b, "a {{n}}", v, 4);
	assert_string_equal(b.data, "a 3");
	buf_release(&b);
}

static void test_missing_key(void **state)
{
	struct buf b = BUF_INIT(4096);
	const struct template_var v[] = { { "title", "x" } };

	buf_adds(&b, "kept");
	assert_int_equal(template_render(&b, "ok\n{{title}} {{descripton}}\n",
					 28, v, 1),
			 PB_EINVAL);
	assert_non_null(strstr(err_msg(), "line 2"));
	assert_non_null(strstr(err_msg(), "{{descripton}}"));
	/* Nothing half-rendered is left behind. */
	assert_string_equal(b.data, "kept");
	buf_release(&b);
}

static void test_blocks(void **state)
{
	struct buf b = BUF_INIT(4096);
	const struct template_var v[] = {
		{ "a", "block a\n\n" },
		{ "b", "" },
		{ "c", "no newline" },
	};

	render(&b, "top\n{{a}}\n{{b}}\n{{c}}\nend\n", v, 3);
	assert_string_equal(b.data, "top\nblock a\n\nno newline\nend\n");
	buf_release(&b);
}

static void check_width(const char *s, size_t width)
{
	const char *nl;
	size_t cols;

	while (*s) {
		nl = strchr(s, '\n');
		assert_non_null(nl);
		cols = 0;
		for (const char *p = s; p < nl; p++)
			if (((unsigned char)*p & 0xc0) != 0x80)
				cols++;
		assert_true(cols <= width);
		s = nl + 1;
	}
}

static void test_wrap(void **state)
{
	struct buf b = BUF_INIT(1 << 16);
	const char *text =
		"This is a rather long paragraph of an MR description, written "
		"in a web form\r\nwith Windows line ends, that a mail reader "
		"wants to see wrapped at seventy-two columns.\r\n\r\n\r\n"
		"- a list item that is long enough to wrap onto a second line, "
		"with a hanging indent\n"
		"12. a numbered item\n\n"
		"```\n   preformatted    text that is long and must stay exactly "
		"as it is written here\n```\n"
		"    indented code stays too, however long the line happens to "
		"be in the end\n"
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc end\x1b[0m\n"
		"https://example.org/a/very/long/url/that/cannot/be/broken/"
		"anywhere/at/all/really\n";

	assert_int_equal(template_wrap(&b, text, strlen(text), 72), 0);
	assert_string_equal(
		b.data,
		"This is a rather long paragraph of an MR description, "
		"written in a web\n"
		"form with Windows line ends, that a mail reader wants to see "
		"wrapped at\n"
		"seventy-two columns.\n"
		"\n"
		"- a list item that is long enough to wrap onto a second line, "
		"with a\n"
		"  hanging indent\n"
		"12. a numbered item\n"
		"\n"
		"```\n"
		"   preformatted    text that is long and must stay exactly as "
		"it is written here\n"
		"```\n"
		"    indented code stays too, however long the line happens to "
		"be in the end\n"
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc "
		"\xc3\xa4\xc3\xb6\xc3\xbc \xc3\xa4\xc3\xb6\xc3\xbc\n"
		"\xc3\xa4\xc3\xb6\xc3\xbc end[0m\n"
		"https://example.org/a/very/long/url/that/cannot/be/broken/"
		"anywhere/at/all/really\n");
	/* Paragraph lines respect the width (counted in characters). */
	*strstr(b.data, "https:") = '\0';
	check_width(b.data, 72 + 8); /* the preformatted lines */
	check_width(strstr(b.data, "\xc3\xa4"), 72);
	buf_release(&b);
}

static void test_wrap_empty(void **state)
{
	struct buf b = BUF_INIT(1024);

	assert_int_equal(template_wrap(&b, "\r\n \n\t\n", 6, 72), 0);
	assert_string_equal(b.data, "");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_placeholders),
		cmocka_unit_test(test_missing_key),
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_wrap_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
