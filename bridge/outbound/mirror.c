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

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIRROR_REF_MAX 1024

struct mirror {
	struct gitrepo *repo;
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
	if (opts->ca_file && *opts->ca_file && gitrepo_set_ca_file(opts->ca_file))
		log_warn("mirror: cannot use ca_file: %s", err_msg());
	m = xcalloc(1, sizeof(*m));
	m->path = xstrdup(dir);
	m->url = xstrdup(opts->url);
	m->token = opts->token && *opts->token ? xstrdup(opts->token) : NULL;
	printable_copy(p, sizeof(p), dir, strlen(dir));
	if (stat(dir, &stb) == 0) {
		rc = gitrepo_mirror_open(&m->repo, dir, 0);
		if (rc) {
			err_prefix(rc, "mirror");
			goto out;
		}
	} else {
		rc = parent_create(dir);
		if (rc)
			goto out;
		rc = gitrepo_mirror_open(&m->repo, dir, 1);
		if (rc) {
			err_prefix(rc, "mirror");
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
	gitrepo_free(m->repo);
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
	size_t i;
	int rc;

	strlist_for_each (dsts, i)
		unlock_stale(m, dsts->items[i]);
	unlock_stale(m, "packed-refs");
	rc = gitrepo_fetch(m->repo, m->url, m->token, specs);
	if (rc)
		err_prefix(rc, "mirror");
	return rc;
}

int mirror_has(struct mirror *m, const char *sha)
{
	return gitrepo_has_commit(m->repo, sha);
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

		if (!gitrepo_ref_name_valid(ref)) {
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
	char name[MIRROR_REF_MAX];
	int rc;

	if (iid <= 0 || revision <= 0 || !sha || !hex_ok(sha))
		return err_set(PB_EINVAL, "mirror: bad pin");
	snprintf(name, sizeof(name), "refs/patchbridge/mr/%lld/v%d",
		 (long long)iid, revision);
	unlock_stale(m, name);
	rc = gitrepo_ref_set(m->repo, name, sha, "patchbridge: mailed");
	if (rc)
		err_prefix(rc, "mirror: pin");
	return rc;
}
