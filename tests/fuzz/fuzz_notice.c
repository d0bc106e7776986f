/*
 * libFuzzer target for mail/notice.c: the RFC 3834 screen of a reply's
 * raw header (notice_screen()) and the opt-out request of its text
 * (notice_optout_request()), on any bytes.
 *
 * Invariants: no crash, hang, over-read (the input is not
 * NUL-terminated) or leak; the screen answers NULL or one of its
 * tokens, and its words are NUL-terminated within their buffer; the
 * request is -1, 0 or 1.
 *
 *   fuzz_notice -dict=tests/fuzz/dict/notice.dict -max_total_time=60 \
 *       corpus/ tests/data/corpus/replies
 */
#include "mail/notice.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const tokens[] = { "auto_submitted", "bounce",
					      "list", "ours" };
	struct notice_screen_in in;
	char why[128], *text;
	const char *t;
	size_t i;
	int r;

	memset(&in, 0, sizeof(in));
	in.raw = (const char *)data;
	in.len = size;
	in.envelope_sender = size & 1 ? NULL : "dev@example.org";
	in.list_address = "list@example.org";
	in.bridge_address = "bridge@example.org";
	in.bridge_domain = "bridge.example.org";
	in.wrapped = (size & 2) != 0;
	memset(why, 'x', sizeof(why));
	t = notice_screen(&in, why, sizeof(why));
	if (t) {
		for (i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++)
			if (!strcmp(t, tokens[i]))
				break;
		if (i == sizeof(tokens) / sizeof(tokens[0]) ||
		    !memchr(why, '\0', sizeof(why)))
			abort();
	}
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	r = notice_optout_request(text);
	if (r < -1 || r > 1)
		abort();
	free(text);
	return 0;
}
