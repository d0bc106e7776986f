#include "outbound/mirror.h"

#include "outbound/gitrepo.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <git2.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIRROR_REF_MAX 1024

struct mirror {
	git_repository *repo;
	char *path;
	char *url;
	char *token; /* NULL: anonymous */
};

int mirror_dir(char *out, size_t size, const char *root, const char *project)
{
	const char *p = project, *slash;
	size_t n;
	int len;

	if (!*p)
		return err_set(PB_EINVAL, "mirror: empty project path");
	/* Every component a plain name: the path stays under root. */
	for (;;) {
		slash = strchr(p, '/');
		n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.') || p[0] == '.')
			return err_set(PB_EINVAL,
				       "mirror: unusable project path");
		if (!slash)
			break;
		p = slash + 1;
	}
	len = snprintf(out, size, "%s/%s.git", root, project);
	if (len < 0 || (size_t)len >= size)
		return err_set(PB_ELIMIT, "mirror: path too long");
	return 0;
}

/* The directory part of path (path without its last component). */
static int parent_create(const char *path)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	int rc = 0;

	if (slash && slash != dir) {
		*slash = '\0';
		rc = dir_create(dir, 0750);
	}
	free(dir);
	return rc;
}

int mirror_open(struct mirror **out, const struct mirror_opts *opts)
{
	char dir[PATH_MAX], p[PB_LOG_QUOTE_MAX];
	struct mirror *m;
	struct stat stb;
	int rc;

	*out = NULL;
	if (!opts->root || !opts->project || !opts->url)
		return err_set(PB_EINVAL, "mirror: root, project and url "
					  "are required");
	rc = mirror_dir(dir, sizeof(dir), opts->root, opts->project);
	if (rc)
		return rc;
	git_libgit2_init();
	if (opts->ca_file && *opts->ca_file &&
	    git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, opts->ca_file,
			     NULL) < 0)
		log_warn("mirror: cannot use ca_file: %s",
			 git_error_last() ? git_error_last()->message : "?");
	m = xcalloc(1, sizeof(*m));
	m->path = xstrdup(dir);
	m->url = xstrdup(opts->url);
	m->token = opts->token && *opts->token ? xstrdup(opts->token) : NULL;
	printable_copy(p, sizeof(p), dir, strlen(dir));
	if (stat(dir, &stb) == 0) {
		rc = git_repository_open_bare(&m->repo, dir);
		if (rc < 0) {
			rc = gitrepo_fail(rc, 0, "mirror: open");
			err_prefix(rc, "%s", p);
			goto out;
		}
	} else {
		rc = parent_create(dir);
		if (rc)
			goto out;
		rc = git_repository_init(&m->repo, dir, 1);
		if (rc < 0) {
			rc = gitrepo_fail(rc, 0, "mirror: create");
			err_prefix(rc, "%s", p);
			goto out;
		}
		log_info("mirror: created %s", p);
	}
	rc = 0;
out:
	if (rc) {
		mirror_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void mirror_free(struct mirror *m)
{
	if (!m)
		return;
	git_repository_free(m->repo);
	git_libgit2_shutdown();
	free(m->path);
	free(m->url);
	if (m->token) {
		volatile char *t = m->token;

		while (*t)
			*t++ = '\0';
		free(m->token);
	}
	free(m);
}

const char *mirror_path(const struct mirror *m)
{
	return m->path;
}

struct cred_state {
	const struct mirror *m;
	int tries;
};

static int cred_cb(git_credential **out, const char *url, const char *user,
		   unsigned int allowed, void *payload)
{
	struct cred_state *cs = payload;

	(void)url;
	(void)user;
	/* Offer the token once; a second call means it was refused. */
	if (!cs->m->token || cs->tries++ ||
	    !(allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT))
		return GIT_EAUTH;
	return git_credential_userpass_plaintext_new(out, "oauth2",
						     cs->m->token);
}

static int valid_ref(const char *name)
{
	int valid = 0;

	if (git_reference_name_is_valid(&valid, name) < 0)
		return 0;
	return valid;
}

/* A crashed fetch may leave "<ref>.lock" behind; we hold the lock. */
static void unlock_stale(const struct mirror *m, const char *ref)
{
	char path[PATH_MAX];
	int len = snprintf(path, sizeof(path), "%s/%s.lock", m->path, ref);

	if (len > 0 && (size_t)len < sizeof(path) && unlink(path) == 0)
		log_warn("mirror: removed stale lock %s.lock", ref);
}

static int fetch(struct mirror *m, const struct strlist *specs,
		 const struct strlist *dsts)
{
	git_fetch_options fo;
	git_remote_create_options ro;
	git_remote *remote = NULL;
	git_strarray arr;
	struct cred_state cs = { m, 0 };
	size_t i;
	int rc;

	strlist_for_each (dsts, i)
		unlock_stale(m, dsts->items[i]);
	unlock_stale(m, "packed-refs");
	/* The _INIT macro leaves fields out (-Wmissing-field-initializers). */
	rc = git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
	if (rc < 0) {
		rc = gitrepo_fail(rc, 0, "mirror: fetch options");
		goto out;
	}
	/*
	 * An anonymous remote that ignores url.*.insteadOf: the forge's URL
	 * is the one configured, whatever a gitconfig on the host says.
	 * (Skipping that lookup also avoids a leak in libgit2 1.5's pcre2
	 * matching of config names.)
	 */
	rc = git_remote_create_options_init(&ro,
					    GIT_REMOTE_CREATE_OPTIONS_VERSION);
	if (rc >= 0) {
		ro.repository = m->repo;
		ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF;
		rc = git_remote_create_with_opts(&remote, m->url, &ro);
	}
	if (rc < 0) {
		rc = gitrepo_fail(rc, 0, "mirror: remote");
		goto out;
	}
	fo.callbacks.credentials = cred_cb;
	fo.callbacks.payload = &cs;
	fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	fo.prune = GIT_FETCH_NO_PRUNE;
	fo.update_fetchhead = 0;
	arr.strings = specs->items;
	arr.count = specs->nr;
	rc = git_remote_fetch(remote, &arr, &fo, "patchbridge: fetch");
	if (rc < 0)
		rc = gitrepo_fail(rc, 1, "mirror: fetch");
out:
	git_remote_free(remote);
	return rc;
}

int mirror_has(struct mirror *m, const char *sha)
{
	git_commit *c = NULL;
	git_oid oid;

	if (!sha || git_oid_fromstr(&oid, sha) < 0)
		return 0;
	if (git_commit_lookup(&c, m->repo, &oid) < 0)
		return 0;
	git_commit_free(c);
	return 1;
}

static int hex_ok(const char *s)
{
	size_t n = strlen(s);

	if (n != GITREPO_HEXSZ)
		return 0;
	return strspn(s, "0123456789abcdef") == n;
}

int mirror_fetch_mr(struct mirror *m, int64_t iid, const char *target_branch,
		    const char *const *need, size_t n)
{
	struct strlist specs = STRLIST_INIT, dsts = STRLIST_INIT;
	char p[PB_LOG_QUOTE_MAX];
	size_t i;
	int rc;

	if (iid <= 0)
		return err_set(PB_EINVAL, "mirror: bad MR iid");
	strlist_pushf(&specs,
		      "+refs/merge-requests/%lld/head:"
		      "refs/patchbridge/mr/%lld/head",
		      (long long)iid, (long long)iid);
	strlist_pushf(&dsts, "refs/patchbridge/mr/%lld/head", (long long)iid);
	if (target_branch && *target_branch) {
		char *ref = xasprintf("refs/heads/%s", target_branch);

		if (!valid_ref(ref)) {
			free(ref);
			rc = err_set(PB_EINVAL,
				     "mirror: bad target branch name %s",
				     printable_copy(p, sizeof(p), target_branch,
						    strlen(target_branch)));
			goto out;
		}
		free(ref);
		strlist_pushf(&specs,
			      "+refs/heads/%s:"
			      "refs/patchbridge/target/%s",
			      target_branch, target_branch);
		strlist_pushf(&dsts, "refs/patchbridge/target/%s",
			      target_branch);
	}
	rc = fetch(m, &specs, &dsts);
	if (rc)
		goto out;

	/* What the refs did not bring: old heads, by id. */
	strlist_release(&specs);
	strlist_release(&dsts);
	for (i = 0; i < n; i++) {
		if (!need[i] || mirror_has(m, need[i]))
			continue;
		if (!hex_ok(need[i])) {
			rc = err_set(PB_EINVAL, "mirror: bad commit id %s",
				     printable_copy(p, sizeof(p), need[i],
						    strlen(need[i])));
			goto out;
		}
		if (strlist_find(&specs, need[i]) >= 0)
			continue;
		strlist_pushf(&specs, "+%s:refs/patchbridge/sha/%s", need[i],
			      need[i]);
		strlist_pushf(&dsts, "refs/patchbridge/sha/%s", need[i]);
	}
	if (specs.nr) {
		log_info("mirror: fetching %zu commit(s) by id", specs.nr);
		rc = fetch(m, &specs, &dsts);
		if (rc)
			goto out;
	}
	for (i = 0; i < n; i++) {
		if (need[i] && !mirror_has(m, need[i])) {
			rc = err_set(PB_ENOTFOUND,
				     "mirror: commit %s is not on the forge "
				     "any more",
				     printable_copy(p, sizeof(p), need[i],
						    strlen(need[i])));
			goto out;
		}
	}
out:
	strlist_release(&specs);
	strlist_release(&dsts);
	return rc;
}

int mirror_pin(struct mirror *m, int64_t iid, int revision, const char *sha)
{
	git_reference *ref = NULL;
	char name[MIRROR_REF_MAX];
	git_oid oid;
	int rc;

	if (iid <= 0 || revision <= 0 || !sha || git_oid_fromstr(&oid, sha) < 0)
		return err_set(PB_EINVAL, "mirror: bad pin");
	snprintf(name, sizeof(name), "refs/patchbridge/mr/%lld/v%d",
		 (long long)iid, revision);
	unlock_stale(m, name);
	rc = git_reference_create(&ref, m->repo, name, &oid, 1,
				  "patchbridge: mailed");
	if (rc < 0)
		return gitrepo_fail(rc, 0, "mirror: pin");
	git_reference_free(ref);
	return 0;
}
