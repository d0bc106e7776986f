/*
 * milter_seed - put thread-map rows into a state database for the milter's
 * end-to-end tests, through the store's own API (as the daemon would).
 *
 *	milter_seed DB revision PROJECT IID HEAD_SHA TOTAL
 *		start revision (prints its number) of PROJECT!IID
 *	milter_seed DB mail MSGID PROJECT IID REV PATCH TOTAL [DIFF_FILE]
 *		record a sent mail: the cover letter (PATCH 0) or patch
 *		PATCH, with the diff as mailed read from DIFF_FILE
 *	milter_seed DB copy-to FILE
 *		copy DB's thread map into the SQLite state FILE, as the
 *		daemon keeps a host's copy of a shared one
 *
 * DB is a SQLite file, or "postgresql:FILE" with FILE holding a libpq
 * connection string.
 *
 * Exit 0 on success, 1 with a message on stderr otherwise.
 */
#include "core/secret.h"
#include "state/store.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASE_SHA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define START_SHA "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define COMMIT_SHA "cccccccccccccccccccccccccccccccccccccccc"

static int die(const char *what)
{
	fprintf(stderr, "milter_seed: %s: %s\n", what, err_msg());
	return 1;
}

int main(int argc, char **argv)
{
	struct store *st = NULL;
	struct buf diff = BUF_INIT(PB_MAIL_MAX_MAX);
	struct buf conninfo = BUF_INIT(SECRET_MAX + 1);
	struct store_opts o;
	int rc = 1;

	if (argc < 3) {
		fprintf(stderr, "usage: milter_seed DB revision|mail|copy-to "
				"...\n");
		return 2;
	}
	memset(&o, 0, sizeof(o));
	o.flags = STORE_RW;
	o.busy_timeout_ms = 5000;
	o.target = argv[1];
	if (!strncmp(argv[1], "postgresql:", 11)) {
		if (secret_read(&conninfo, argv[1] + 11, 0))
			return die(argv[1]);
		o.backend = STORE_BACKEND_POSTGRESQL;
		o.target = conninfo.data;
	}
	rc = store_open_opts(&st, &o);
	secret_wipe(&conninfo);
	if (rc)
		return die(argv[1]);
	rc = 1;
	if (!strcmp(argv[2], "copy-to") && argc == 4) {
		struct store *dst = NULL;
		int64_t since = 0;
		size_t n = 0;

		if (store_open(&dst, argv[3], STORE_RW, 5000)) {
			rc = die(argv[3]);
			goto out;
		}
		rc = store_threadmap_mirror(dst, st, &since, &n);
		store_free(dst);
		if (rc) {
			rc = die("copy");
			goto out;
		}
		printf("%zu\n", n);
	} else if (!strcmp(argv[2], "revision") && argc == 7) {
		struct store_revision rev;
		int n = 0;

		memset(&rev, 0, sizeof(rev));
		rev.project = argv[3];
		rev.iid = atoll(argv[4]);
		rev.head_sha = argv[5];
		rev.base_sha = BASE_SHA;
		rev.start_sha = START_SHA;
		rev.version_id = 1;
		rev.patch_id = argv[5];
		rev.patches = atoi(argv[6]);
		rev.cover_msgid = "";
		rc = store_revision_start(&n, st, &rev);
		if (rc && rc != PB_EEXISTS) {
			rc = die("revision");
			goto out;
		}
		printf("%d\n", n);
		rc = 0;
	} else if (!strcmp(argv[2], "mail") && (argc == 9 || argc == 10)) {
		struct store_mail m;
		int patch = atoi(argv[7]);

		store_mail_init(&m);
		if (argc == 10 && file_read(&diff, argv[9])) {
			rc = die(argv[9]);
			goto out;
		}
		m.message_id = argv[3];
		m.project = argv[4];
		m.iid = atoll(argv[5]);
		m.revision = atoi(argv[6]);
		m.patch = patch;
		m.total = atoi(argv[8]);
		m.kind = patch ? STORE_MAIL_PATCH : STORE_MAIL_COVER;
		m.commit_sha = patch ? COMMIT_SHA : NULL;
		m.base_sha = BASE_SHA;
		m.start_sha = START_SHA;
		m.diff = diff.len ? diff.data : NULL;
		m.diff_len = diff.len;
		m.state = STORE_MAIL_SENT;
		rc = store_mail_put(st, &m);
		if (rc && rc != PB_EEXISTS) {
			rc = die("mail");
			goto out;
		}
		rc = 0;
	} else {
		fprintf(stderr, "milter_seed: bad arguments\n");
		rc = 2;
	}
out:
	buf_release(&diff);
	store_free(st);
	return rc;
}
