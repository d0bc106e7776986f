/*
 * inbound_seed - set up and inspect the state database for the inbound
 * tests, as the outbound side would have left it.
 *
 *	inbound_seed mail DB PROJECT IID REV BASE START HEAD
 *	             VERSION_ID[:PATCH_ID] COVER_MSGID
 *	             [PATCH_MSGID COMMIT FILE]...
 *		record revision REV of PROJECT!IID as mailed: the cover
 *		letter and one patch mail per triplet (FILE: the patch
 *		mail as sent, kept as the diff as mailed and in the
 *		mail archive, as the bridge keeps what it sent); PATCH_ID
 *		is the version's patch_id_sha as the outbound side records
 *		it (without it, HEAD stands in, which no version has)
 *	inbound_seed dump DB MSGID...
 *		print the journal row and the actions of each mail:
 *		"row STATE ATTEMPTS LAST_ERROR" then "action INDEX KIND
 *		STATE NOTE_ID DISCUSSION_ID" lines
 *
 * DB is the SQLite file, or with PB_TEST_BACKEND=postgresql the
 * PostgreSQL connection string.
 */
#include "state/store.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The test's state database, on the engine the environment names. */
static int open_db(struct store **st, const char *target)
{
	const char *b = getenv("PB_TEST_BACKEND");
	struct store_opts o;

	memset(&o, 0, sizeof(o));
	o.backend = b && !strcmp(b, "postgresql") ? STORE_BACKEND_POSTGRESQL :
						    STORE_BACKEND_SQLITE;
	o.target = target;
	o.flags = STORE_RW;
	o.busy_timeout_ms = 5000;
	return store_open_opts(st, &o);
}

static int die(const char *what)
{
	fprintf(stderr, "inbound_seed: %s: %s\n", what, err_msg());
	return 1;
}

static int seed(int argc, char **argv)
{
	struct store *st = NULL;
	struct store_revision rev;
	struct store_mail m;
	int revision = 0, i, total, rc;
	const char *pid;

	if (argc < 11 || (argc - 11) % 3)
		return fprintf(stderr, "inbound_seed mail: bad arguments\n"), 2;
	if (open_db(&st, argv[2]))
		return die("open");
	total = (argc - 11) / 3;
	store_revision_init(&rev);
	rev.project = argv[3];
	rev.iid = atoll(argv[4]);
	rev.base_sha = argv[6];
	rev.start_sha = argv[7];
	rev.head_sha = argv[8];
	rev.version_id = atoll(argv[9]);
	pid = strchr(argv[9], ':');
	rev.patch_id = pid ? pid + 1 : argv[8];
	rev.patches = total;
	rev.cover_msgid = argv[10];
	rc = store_revision_start(&revision, st, &rev);
	if (rc && rc != PB_EEXISTS)
		return die("revision");
	if (revision != atoi(argv[5]))
		fprintf(stderr, "inbound_seed: got revision %d\n", revision);
	for (i = 0; i <= total; i++) {
		struct buf diff = BUF_INIT(PB_MAIL_MAX_MAX);

		store_mail_init(&m);
		m.project = argv[3];
		m.iid = rev.iid;
		m.revision = revision;
		m.patch = i;
		m.total = total;
		m.kind = i ? STORE_MAIL_PATCH : STORE_MAIL_COVER;
		m.base_sha = argv[6];
		m.start_sha = argv[7];
		m.head_sha = argv[8];
		m.version_id = rev.version_id;
		m.state = STORE_MAIL_SENT;
		if (!i) {
			m.message_id = argv[10];
		} else {
			m.message_id = argv[11 + 3 * (i - 1)];
			m.commit_sha = argv[12 + 3 * (i - 1)];
			if (file_read(&diff, argv[13 + 3 * (i - 1)]))
				return die(argv[13 + 3 * (i - 1)]);
			m.diff = diff.data;
			m.diff_len = diff.len;
		}
		rc = store_mail_put(st, &m);
		if (rc && rc != PB_EEXISTS)
			return die(m.message_id);
		/* the mail archive holds what the bridge sent, as once the
		 * list has it (replies are read against it) */
		{
			struct store_archived a;
			static const char cover[] =
				"Subject: [PATCH 0/N] the cover letter\n\n"
				"The cover letter.\n";

			store_archived_init(&a);
			a.message_id = m.message_id;
			a.project = m.project;
			a.iid = m.iid;
			a.origin = STORE_ARCHIVE_BRIDGE;
			a.message = i ? diff.data : cover;
			a.message_len = i ? diff.len : sizeof(cover) - 1;
			rc = store_archive_put(st, &a);
			if (rc && rc != PB_EEXISTS)
				return die(m.message_id);
		}
		buf_release(&diff);
	}
	store_revision_mark_sent(st, argv[3], rev.iid, revision);
	store_free(st);
	return 0;
}

static int dump(int argc, char **argv)
{
	struct store *st = NULL;
	int i;

	if (open_db(&st, argv[2]))
		return die("open");
	for (i = 3; i < argc; i++) {
		struct store_inbound in;
		struct store_action_list l;
		size_t k;

		store_inbound_init(&in);
		if (store_inbound_get(&in, st, argv[i]))
			printf("row none\n");
		else
			printf("row %s %d %s\n",
			       store_inbound_state_name(in.state), in.attempts,
			       in.last_error ? in.last_error : "");
		store_inbound_release(&in);
		memset(&l, 0, sizeof(l));
		store_action_list(&l, st, argv[i]);
		for (k = 0; k < l.nr; k++)
			printf("action %d %s %s %lld %s\n", l.items[k].index,
			       l.items[k].kind,
			       l.items[k].state == STORE_ACTION_DONE ?
				       "done" :
			       l.items[k].state == STORE_ACTION_INTENT ?
				       "intent" :
				       "failed",
			       (long long)l.items[k].note_id,
			       l.items[k].discussion_id ?
				       l.items[k].discussion_id :
				       "-");
		store_action_list_release(&l);
	}
	store_free(st);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "mail"))
		return seed(argc, argv);
	if (argc >= 3 && !strcmp(argv[1], "dump"))
		return dump(argc, argv);
	fprintf(stderr, "usage: inbound_seed mail|dump DB ...\n");
	return 2;
}
