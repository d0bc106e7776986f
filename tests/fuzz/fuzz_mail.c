/*
 * libFuzzer target for the MIME front and the whole inbound parse: any
 * bytes as a mail, through mail/mail.c (GMime, charsets, flowed, HTML,
 * PGP) and mail/review.c (reply extraction, trailers, the JSON), and
 * the same bytes read as a patch mail's diff.
 *
 * Invariants: no crash, hang, over-read or leak; the reply text is
 * well-formed UTF-8 without NUL and within its cap; the JSON is
 * well-formed UTF-8.  GMime itself is not instrumented (Debian's
 * library), so coverage feedback comes from our code.
 *
 *   fuzz_mail -max_len=65536 -timeout=10 -max_total_time=60 \
 *       corpus/ tests/data/corpus/replies tests/data/parse/mail
 */
#include "mail/diff.h"
#include "mail/mail.h"
#include "mail/review.h"
#include "util/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	const char *p = (const char *)data;
	struct buf json = BUF_INIT(REVIEW_JSON_MAX);
	struct review *r;
	struct diff *d = NULL;

	if (!ready) {
		mail_init();
		ready = 1;
	}
	if (review_parse(&r, p, size, NULL, NULL) == 0) {
		const struct buf *t = &r->mail->text;

		if (!utf8_valid(t->data, t->len) || memchr(t->data, 0, t->len))
			abort();
		if (review_to_json(&json, r) == 0 &&
		    !utf8_valid(json.data, json.len))
			abort();
		review_free(r);
	}
	/* the same bytes as the patch a reply answers */
	if (review_patch_diff(&d, p, size) == 0) {
		if (review_parse(&r, p, size, d, NULL) == 0)
			review_free(r);
		diff_free(d);
	}
	buf_release(&json);
	return 0;
}
