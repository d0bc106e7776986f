/*
 * am_tool [--push URL TOKEN BRANCH] REPO BASE MAIL...: apply patch mails
 * onto BASE as the bridge does for a series posted to the list
 * (mail/mailinfo.h reads each mail as git mailinfo does, gitrepo_am()
 * applies and commits), and print the last commit's id.  The commits
 * stay in REPO's object store, on no reference; with --push, the
 * reference refs/am-tool/head names the last one and gitrepo_push()
 * force-pushes it to refs/heads/BRANCH at URL with TOKEN.  When a patch
 * does not apply: "patch K: MESSAGE" on standard error (K from 1), exit
 * 1; when the push fails, exit 3.  mailam.sh compares the result with
 * `git am`; mailam_push.sh pushes to the GitLab simulator.
 */
#include "mail/mail.h"
#include "mail/mailinfo.h"
#include "outbound/gitrepo.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct gitrepo *repo = NULL;
	struct gitrepo_am_patch *p;
	static char cname[] = "Patch Bridge", cmail[] = "bridge@example.org";
	struct gitrepo_person committer = { cname, cmail, 0, 0 };
	struct mailinfo *mi;
	char head[GITREPO_HEXSZ + 1];
	const char *url = NULL, *token = NULL, *branch = NULL;
	size_t nr, i, failed = 0;
	int rc = 0;

	if (argc > 4 && !strcmp(argv[1], "--push")) {
		url = argv[2];
		token = argv[3];
		branch = argv[4];
		argv += 4;
		argc -= 4;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: am_tool [--push URL TOKEN BRANCH] "
				"REPO BASE MAIL...\n");
		return 2;
	}
	if (mail_init())
		return 1;
	nr = (size_t)argc - 3;
	p = xcalloc(nr, sizeof(*p));
	mi = xcalloc(nr, sizeof(*mi));
	for (i = 0; i < nr; i++) {
		struct buf raw = BUF_INIT(PB_MAIL_MAX_MAX);

		mailinfo_init(&mi[i]);
		rc = file_read(&raw, argv[3 + i]);
		if (!rc)
			rc = mailinfo_read(&mi[i], raw.data, raw.len);
		buf_release(&raw);
		if (rc) {
			fprintf(stderr, "%s: %s\n", argv[3 + i], err_msg());
			return 1;
		}
		p[i].author.name = mi[i].name;
		p[i].author.email = mi[i].email;
		p[i].author.time = mi[i].time;
		p[i].author.tz_minutes = mi[i].tz_minutes;
		p[i].message = mi[i].message.data;
		p[i].patch = mi[i].patch.data;
		p[i].patch_len = mi[i].patch.len;
	}
	rc = gitrepo_open(&repo, argv[1]);
	if (!rc)
		rc = gitrepo_am(head, &failed, repo, argv[2], p, nr,
				&committer);
	if (rc) {
		fprintf(stderr, "patch %zu: %s\n", failed + 1, err_msg());
	} else if (url) {
		char *remote = xasprintf("refs/heads/%s", branch);

		rc = gitrepo_ref_set(repo, "refs/am-tool/head", head,
				     "am_tool");
		if (!rc)
			rc = gitrepo_push(repo, url, token, "refs/am-tool/head",
					  remote, 1);
		free(remote);
		if (rc) {
			fprintf(stderr, "%s (%s)\n", err_msg(), err_name(rc));
			rc = 3;
		} else {
			printf("%s\n", head);
		}
	} else {
		printf("%s\n", head);
	}
	gitrepo_free(repo);
	for (i = 0; i < nr; i++)
		mailinfo_release(&mi[i]);
	free(mi);
	free(p);
	mail_shutdown();
	return rc == 3 ? 3 : rc ? 1 : 0;
}
