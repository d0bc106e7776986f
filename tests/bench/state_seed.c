/*
 * state_seed DB PROJECT N: a state database holding N merge requests of
 * PROJECT (iids 1000 .. 1000+N-1, clear of the simulator's), each as the
 * daemon leaves one it mailed and that got a reply: one revision of 3
 * patches, marked sent; its cover letter and patch mails in the thread
 * map with the diff as mailed (about 1.5 KiB each); the mails archived;
 * and one list reply journaled as applied.  For memory_bench.sh: what a
 * daemon with N MRs in its state costs.
 */
#include "state/store.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATCHES 3

static int seed_mr(struct store *st, struct buf *b, const char *project,
		   int64_t iid)
{
	struct store_revision rev;
	struct store_mail m;
	struct store_archived a;
	struct store_inbound in;
	char head[41], id[128], reply[128];
	int n = 0, k, rc, i;

	snprintf(head, sizeof(head), "%040llx", (unsigned long long)iid);
	memset(&rev, 0, sizeof(rev));
	rev.project = project;
	rev.iid = iid;
	rev.head_sha = head;
	rev.base_sha = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	rev.start_sha = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
	rev.version_id = iid;
	rev.patch_id = head;
	rev.patches = PATCHES;
	rev.cover_msgid = "";
	rc = store_revision_start(&n, st, &rev);
	if (rc)
		return rc;
	for (k = 0; k <= PATCHES; k++) {
		snprintf(id, sizeof(id),
			 "pb.v1.%d-%d.seed.%lld.%.12s@seed.example", k, PATCHES,
			 (long long)iid, head);
		buf_reset(b);
		buf_addf(b,
			 "From: Dev <dev@seed.example>\n"
			 "Subject: [PATCH %d/%d] seed: change %lld\n"
			 "Message-ID: <%s>\n\n",
			 k, PATCHES, (long long)iid, id);
		if (k) {
			buf_addf(b,
				 "diff --git a/f%d.c b/f%d.c\n"
				 "--- a/f%d.c\n+++ b/f%d.c\n"
				 "@@ -1,20 +1,20 @@\n",
				 k, k, k, k);
			for (i = 0; i < 20; i++)
				buf_addf(b,
					 "%cint line_%02d = %d; /* seed */\n",
					 i % 4 == 1 ? '-' :
					 i % 4 == 2 ? '+' :
						      ' ',
					 i, i);
		}
		store_mail_init(&m);
		m.message_id = id;
		m.project = project;
		m.iid = iid;
		m.revision = n;
		m.patch = k;
		m.total = PATCHES;
		m.kind = k ? STORE_MAIL_PATCH : STORE_MAIL_COVER;
		m.commit_sha = k ? head : NULL;
		m.diff = k ? b->data : NULL;
		m.diff_len = k ? b->len : 0;
		m.state = STORE_MAIL_SENT;
		rc = store_mail_put(st, &m);
		if (rc)
			return rc;
		store_archived_init(&a);
		a.message_id = id;
		a.project = project;
		a.iid = iid;
		a.origin = STORE_ARCHIVE_BRIDGE;
		a.message = b->data;
		a.message_len = b->len;
		rc = store_archive_put(st, &a);
		if (rc)
			return rc;
	}
	rc = store_revision_mark_sent(st, project, iid, n);
	if (rc)
		return rc;
	/* one list reply to patch 1, applied */
	snprintf(reply, sizeof(reply), "reply.%lld@seed.example",
		 (long long)iid);
	store_inbound_init(&in);
	in.message_id = reply;
	in.spool_name = "seed";
	in.project = project;
	in.iid = iid;
	in.revision = n;
	in.patch = 1;
	in.classification = "reply";
	rc = store_inbound_record(st, &in);
	if (rc)
		return rc;
	/* claimed and applied, as the daemon does (the oldest due first:
	 * this one, recorded just now) */
	store_inbound_init(&in);
	rc = store_inbound_claim(&in, st, INT64_MAX / 2);
	if (!rc)
		rc = store_inbound_finish(st, reply, STORE_INBOUND_APPLIED,
					  NULL);
	store_inbound_release(&in);
	return rc;
}

int main(int argc, char **argv)
{
	struct store *st = NULL;
	struct buf b = BUF_INIT(64 * 1024);
	long n, i;
	int rc;

	if (argc != 4 || (n = atol(argv[3])) < 1) {
		fprintf(stderr, "usage: state_seed DB PROJECT N\n");
		return 64;
	}
	rc = store_open(&st, argv[1], STORE_RW, 5000);
	for (i = 0; !rc && i < n; i += 500) {
		long j;

		rc = store_begin(st);
		for (j = i; !rc && j < n && j < i + 500; j++)
			rc = seed_mr(st, &b, argv[2], 1000 + j);
		if (!rc)
			rc = store_commit(st);
	}
	if (rc)
		fprintf(stderr, "state_seed: %s\n", err_msg());
	store_free(st);
	buf_release(&b);
	return rc ? 1 : 0;
}
