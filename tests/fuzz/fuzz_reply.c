/*
 * libFuzzer target for mail/reply.c and mail/diff.c: any bytes as a
 * reply's text, anchored on a patch.  An input holding a line "@@@@"
 * is split there: the bytes before it are the patch (its diff parsed
 * with diff_parse()), the rest the reply; otherwise a fixed patch is
 * used, and the quote is also read as its own diff (no parent).
 *
 * Invariants: no crash, hang, over-read or leak; every block starts and
 * ends on own lines inside the reply; an anchor is a line before its
 * block and points into the diff it was aligned on.
 *
 *   fuzz_reply -max_total_time=60 corpus/ SEEDS/
 */
#include "mail/diff.h"
#include "mail/reply.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fixed_patch[] = "diff --git a/a.c b/a.c\n"
				  "--- a/a.c\n"
				  "+++ b/a.c\n"
				  "@@ -10,6 +10,7 @@ int f(void)\n"
				  " \tint a;\n"
				  "-\tint b;\n"
				  "+\tlong b;\n"
				  "+\tlong c;\n"
				  " \n"
				  " \treturn a;\n"
				  " }\n";

static void check(const struct reply *r, const struct diff *d)
{
	struct buf b = BUF_INIT(1 << 24);
	size_t i;

	for (i = 0; i < r->nr_blocks; i++) {
		const struct reply_block *k = &r->blocks[i];

		if (k->first > k->last || k->last >= r->nr ||
		    r->lines[k->first].kind != RL_OWN ||
		    r->lines[k->last].kind != RL_OWN)
			abort();
		if (k->anchor >= (long)k->first)
			abort();
		if (k->diff >= 0 && (!d || (size_t)k->diff >= d->nr_lines))
			abort();
		buf_reset(&b);
		reply_block_text(&b, r, i, i & 1);
	}
	buf_reset(&b);
	reply_own_text(&b, r);
	buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *sep = NULL;
	struct diff *d = NULL, *pseudo = NULL;
	struct reply *r = NULL;
	size_t i;

	for (i = 0; i + 6 <= size; i++)
		if (!memcmp(p + i, "\n@@@@\n", 6)) {
			sep = p + i;
			break;
		}
	if (sep) {
		if (diff_parse(&d, p, (size_t)(sep - p)))
			return 0;
		p = sep + 6;
		size -= (size_t)(sep - (const char *)data) + 6;
	} else if (diff_parse(&d, fixed_patch, sizeof(fixed_patch) - 1)) {
		abort();
	}
	/* with the sender's name, so the signature rules run too */
	if (reply_parse(&r, p, size, "Jane Q. Doe, Jr",
			"jane.q.doe@example.org") == 0) {
		if (reply_anchor(r, d, NULL) == 0)
			check(r, d);
		reply_free(r);
	}
	if (!sep && reply_parse(&r, p, size, NULL, NULL) == 0) {
		if (reply_anchor(r, NULL, &pseudo) == 0)
			check(r, pseudo);
		diff_free(pseudo);
		reply_free(r);
	}
	diff_free(d);
	return 0;
}
