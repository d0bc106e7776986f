/*
 * libFuzzer target for the header fields the inbound side decodes
 * itself: mail/hdrdecode.c (RFC 2047 encoded words, the From mailbox)
 * and mail/subject.c (the patch tag of the decoded Subject), on any
 * bytes, with the real charset conversion (mail.c's) and without it.
 *
 * Invariants: no crash, hang, over-read (the input is not
 * NUL-terminated) or leak; a decoded value is well-formed UTF-8 on one
 * line (no control character); an address is empty or well-formed by
 * hdrdecode_addr_ok() and holds no encoded word; a subject always has a
 * prefix and a title, and a tag non-negative numbers.
 *
 *   fuzz_header -dict=tests/fuzz/dict/header.dict -max_total_time=60 \
 *       corpus/ tests/fuzz/header-seeds
 */
#include "mail/hdrdecode.h"
#include "mail/mail.h"
#include "mail/subject.h"
#include "util/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int conv(struct buf *out, const char *p, size_t len, const char *charset,
		void *arg)
{
	(void)arg;
	return mail_charset_to_utf8(out, p, len, charset);
}

static void one_line(const char *p, size_t len)
{
	size_t i;

	if (!utf8_valid(p, len))
		abort();
	for (i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			abort();
}

static void check_subject(const struct buf *b)
{
	struct subject s;

	subject_parse(&s, b->data, b->len);
	if (!s.prefix || !s.title)
		abort();
	if (s.has_tag && (s.version < 0 || s.index < 0 || s.total < 0))
		abort();
	one_line(s.title, strlen(s.title));
	subject_release(&s);
}

static void check_mailbox(const char *p, size_t len, hdrdecode_conv_fn fn)
{
	struct hdrdecode_mailbox mb;
	size_t n;

	hdrdecode_mailbox(&mb, p, len, fn, NULL);
	if (!mb.name || !mb.email)
		abort();
	one_line(mb.name, strlen(mb.name));
	n = strlen(mb.email);
	if (n && (!hdrdecode_addr_ok(mb.email, n) || strstr(mb.email, "=?")))
		abort();
	if (!n != !!(mb.flags & HDRDECODE_F_NO_ADDR))
		abort();
	hdrdecode_mailbox_release(&mb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	char *p = malloc(size ? size : 1);
	struct buf b = BUF_INIT(HDRDECODE_FIELD_MAX * 4);

	if (!p)
		return 0;
	if (!ready) {
		mail_init();
		ready = 1;
	}
	memcpy(p, data, size);

	hdrdecode_text(&b, p, size, conv, NULL);
	one_line(b.data, b.len);
	check_subject(&b);

	check_mailbox(p, size, conv);
	(void)hdrdecode_addr_ok(p, size);

	buf_release(&b);
	free(p);
	return 0;
}
