/*
 * mirror - the daemon's bare git mirror of one forge project.
 *
 * One bare repository per project, under the mirror root (the directory
 * "mirrors" beside the state database, see outbound.h), at
 * ROOT/<group>/<name>.git.  For an MR it fetches over HTTP(S), through
 * gitrepo.h (the only libgit2 user):
 *
 *	+refs/merge-requests/IID/head:refs/patchbridge/mr/IID/head
 *	+refs/heads/TARGET:refs/patchbridge/target/TARGET
 *
 * and then makes sure every commit the caller needs (the diff version's
 * head and base, the previous revision's) is present, fetching a missing
 * one by its id ("+SHA:refs/patchbridge/sha/SHA"): GitLab keeps every
 * head it ever had in refs/keep-around/ and serves objects by id, so an
 * MR that was force-pushed since the forge listed its version can still
 * be mailed.  mirror_pin() records each mailed revision's head under
 * refs/patchbridge/mr/IID/vN, so later range-diffs never lose it.
 *
 * Authentication: when a token is given, HTTP basic auth with user
 * "oauth2" and the token as password (what GitLab accepts for personal,
 * project and group access tokens), offered once per fetch and only when
 * the server asks (401).  Over plain http:// that puts the token on the
 * wire like every API call would; use https for a real forge.  The token
 * is never logged.
 *
 * The mirror is written only under the daemon's outbound lock (outbound.c
 * holds it), so stale "*.lock" files of the refs we update can only be
 * left by a crashed run and are removed before a fetch.
 *
 * gitrepo_open() opens the same directory for reading ranges.
 * Ownership: mirror_open() copies the options; the token copy is wiped
 * on mirror_free().  Threads: a mirror
 * belongs to one thread.  Errors: PB_EINVAL for a bad project path, iid
 * or branch name, PB_ETEMP for a failed fetch (network, server), PB_ERROR
 * for local git failures, PB_ENOTFOUND when a needed commit is on neither
 * side; libgit2's message is kept in err_msg().
 */
#ifndef PB_OUTBOUND_MIRROR_H
#define PB_OUTBOUND_MIRROR_H

#include <stddef.h>
#include <stdint.h>

struct mirror_opts {
	const char *root; /* directory holding every project's mirror */
	const char *project; /* "group/name": ROOT/group/name.git */
	const char *url; /* the project's git URL (.../group/name.git) */
	const char *token; /* NULL or "": anonymous */
	const char *ca_file; /* NULL: the system's CA store */
};

struct mirror;

/* Open the mirror, creating the bare repository when it is missing. */
int mirror_open(struct mirror **out, const struct mirror_opts *opts);
/* NULL is allowed. */
void mirror_free(struct mirror *m);

/* The repository's directory, for gitrepo_open(). */
const char *mirror_path(const struct mirror *m);

/*
 * Fetch MR iid's head ref and target_branch (NULL: none), then make sure
 * each of need[0..n) (full hex ids; NULL entries skipped) is present,
 * fetching a missing one by id.
 */
int mirror_fetch_mr(struct mirror *m, int64_t iid, const char *target_branch,
		    const char *const *need, size_t n);

/* 1 when the commit sha is in the mirror, 0 when not. */
int mirror_has(struct mirror *m, const char *sha);

/* Point refs/patchbridge/mr/IID/vREVISION at sha (which must exist). */
int mirror_pin(struct mirror *m, int64_t iid, int revision, const char *sha);

/* The mirror's directory for project under root, in out (size bytes);
 * PB_EINVAL for a project path with an empty, "." or ".." component, and
 * PB_ELIMIT when it does not fit. */
int mirror_dir(char *out, size_t size, const char *root, const char *project);

#endif
