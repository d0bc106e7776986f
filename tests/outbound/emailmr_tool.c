/*
 * emailmr_tool STATE URL TOKEN PROJECT MIRROR TARGET POLICY MAIL...:
 * what the daemon does with list mail that may be a series posted to the
 * list, one step at a time: each MAIL is collected into its series in
 * the state database STATE (SQLite; made when missing) under POLICY
 * ("off", "verified", "anyone"; no Authentication-Results field is
 * trusted, so "verified" refuses everyone), printing "FILE: collected
 * SERIES", "FILE: whole SERIES" or "FILE: refused: WHY"; then every
 * whole series is opened as a merge request of PROJECT at the forge URL
 * with TOKEN (the bare mirror MIRROR fetched from URL/PROJECT.git, the
 * target branch TARGET), printing "SERIES: !IID" or "SERIES: failed:
 * WHY".  mailmr_sim.py drives it against the GitLab simulator.
 * PB_ATTEST_KEYRING names the project keyring (emailattest.h) and
 * PB_ATTEST_REQUIRE=yes refuses a series that is not attested
 * ([project] attest_keyring, email_require_attestation);
 * attest_mr_sim.py drives that.
 */
#include "forge/forge.h"
#include "forge/gitlab.h"
#include "mail/mail.h"
#include "mail/review.h"
#include "outbound/emailmr.h"
#include "outbound/gitrepo.h"
#include "state/store.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int open_series(struct store *st, struct forge *f, struct gitrepo *repo,
		       char **argv)
{
	struct store_submission_list whole = { NULL, 0, 0 };
	struct emailmr_ctx c;
	char sha[GITREPO_HEXSZ + 1], *url, *ref;
	size_t i;
	int rc, bad = 0;

	ref = xasprintf("refs/patchbridge/target/%s", argv[6]);
	rc = gitrepo_resolve(sha, repo, ref);
	free(ref);
	if (rc) {
		fprintf(stderr, "target: %s\n", err_msg());
		return 1;
	}
	url = xasprintf("%s/%s.git", argv[2], argv[4]);
	memset(&c, 0, sizeof(c));
	c.st = st;
	c.forge = f;
	c.repo = repo;
	c.project = argv[4];
	c.push_url = url;
	c.token = argv[3];
	c.target_branch = argv[6];
	c.target_sha = sha;
	c.branch_prefix = "email/";
	c.label = "from-email";
	c.committer_name = "Patch Bridge";
	c.committer_email = "bridge@example.org";
	c.attest_keyring = getenv("PB_ATTEST_KEYRING");
	c.require_attestation = getenv("PB_ATTEST_REQUIRE") &&
				!strcmp(getenv("PB_ATTEST_REQUIRE"), "yes");
	rc = store_submission_list_whole(&whole, st, 0);
	for (i = 0; !rc && i < whole.nr; i++) {
		int64_t iid = 0;

		if (emailmr_open(&iid, &c, whole.items[i].series_id)) {
			printf("%s: failed: %s\n", whole.items[i].series_id,
			       err_msg());
			bad = 1;
		} else {
			printf("%s: !%lld\n", whole.items[i].series_id,
			       (long long)iid);
		}
	}
	store_submission_list_release(&whole);
	free(url);
	return rc || bad;
}

int main(int argc, char **argv)
{
	struct store *st = NULL;
	struct forge *f = NULL;
	struct gitrepo *repo = NULL;
	struct forge_gitlab_opts fo;
	struct review_options ro;
	struct strlist specs = STRLIST_INIT;
	enum emailmr_policy policy;
	char series[PB_MSGID_MAX + 1];
	char *url, *spec;
	int i, rc = 0, whole = 0;

	if (argc < 8) {
		fprintf(stderr, "usage: emailmr_tool STATE URL TOKEN PROJECT "
				"MIRROR TARGET POLICY MAIL...\n");
		return 2;
	}
	policy = !strcmp(argv[7], "off")      ? EMAILMR_OFF :
		 !strcmp(argv[7], "verified") ? EMAILMR_VERIFIED :
						EMAILMR_ANYONE;
	if (mail_init() || store_open(&st, argv[1], STORE_RW, 5000)) {
		fprintf(stderr, "state: %s\n", err_msg());
		return 1;
	}
	memset(&ro, 0, sizeof(ro));
	for (i = 8; i < argc; i++) {
		struct buf raw = BUF_INIT(PB_MAIL_MAX_MAX);

		rc = file_read(&raw, argv[i]);
		if (!rc)
			rc = emailmr_collect(&whole, series, sizeof(series), st,
					     argv[4], policy, &ro, raw.data,
					     raw.len);
		if (rc)
			printf("%s: refused: %s\n", argv[i], err_msg());
		else
			printf("%s: %s %s\n", argv[i],
			       whole ? "whole" : "collected", series);
		buf_release(&raw);
	}

	memset(&fo, 0, sizeof(fo));
	fo.base_url = argv[2];
	fo.token = argv[3];
	fo.max_retries = 3;
	fo.retry_base_ms = 100;
	if (forge_gitlab_new(&f, &fo) ||
	    gitrepo_mirror_open(&repo, argv[5], 1)) {
		fprintf(stderr, "open: %s\n", err_msg());
		return 1;
	}
	url = xasprintf("%s/%s.git", argv[2], argv[4]);
	spec = xasprintf("+refs/heads/%s:refs/patchbridge/target/%s", argv[6],
			 argv[6]);
	strlist_push(&specs, spec);
	rc = gitrepo_fetch(repo, url, argv[3], &specs);
	if (rc) {
		fprintf(stderr, "fetch: %s\n", err_msg());
		rc = 1;
	} else {
		rc = open_series(st, f, repo, argv);
	}
	free(spec);
	free(url);
	strlist_release(&specs);
	gitrepo_free(repo);
	forge_free(f);
	store_free(st);
	mail_shutdown();
	return rc;
}
