/*
 * export_seed DB N SIZE: a state database whose mail archive holds one
 * MR's conversation (group/project!1) of N mails of about SIZE bytes
 * each, for export_bench.sh: a cover letter, then patches and replies
 * threaded under it, archived newest first so that the export must sort
 * them by their Date headers.
 */
#include "state/store.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct store *st = NULL;
	struct buf msg = BUF_INIT(64 * 1024 * 1024);
	long n, size, i;
	int rc;

	if (argc != 4 || (n = atol(argv[2])) < 1 ||
	    (size = atol(argv[3])) < 1) {
		fprintf(stderr, "usage: export_seed DB N SIZE\n");
		return 64;
	}
	rc = store_open(&st, argv[1], STORE_RW, 5000);
	if (!rc)
		rc = store_begin(st);
	for (i = n - 1; !rc && i >= 0; i--) {
		struct store_archived a;
		char id[64];

		buf_reset(&msg);
		snprintf(id, sizeof(id), "bench.%ld@example.org", i);
		buf_addf(&msg,
			 "From: Reviewer %ld <r%ld@example.org>\n"
			 "To: list@example.org\n"
			 "Subject: %s[PATCH %ld/%ld] bench: change %ld\n"
			 "Date: Thu, 3 Dec 2026 %02ld:%02ld:%02ld +0000\n"
			 "Message-ID: <%s>\n",
			 i % 50, i % 50, i % 3 == 2 ? "Re: " : "", i, n - 1, i,
			 (i / 3600) % 24, (i / 60) % 60, i % 60, id);
		if (i)
			buf_addf(&msg, "In-Reply-To: <bench.0@example.org>\n"
				       "References: <bench.0@example.org>\n");
		buf_adds(&msg, "MIME-Version: 1.0\n"
			       "Content-Type: text/plain; charset=utf-8\n\n");
		while ((long)msg.len < size && !buf_adds(&msg, "> +\tcount = "
							       "count + step; "
							       "/* a line of a "
							       "patch */\n"))
			;
		store_archived_init(&a);
		a.message_id = id;
		a.project = "group/project";
		a.iid = 1;
		a.origin = i % 3 == 2 ? STORE_ARCHIVE_LIST :
					STORE_ARCHIVE_BRIDGE;
		a.message = msg.data;
		a.message_len = msg.len;
		rc = store_archive_put(st, &a);
	}
	if (!rc)
		rc = store_commit(st);
	if (rc)
		fprintf(stderr, "export_seed: %s\n", err_msg());
	store_free(st);
	buf_release(&msg);
	return rc ? 1 : 0;
}
