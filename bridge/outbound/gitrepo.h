/*
 * gitrepo - what the outbound side needs from git, and the only libgit2
 * user.
 *
 * Opens a repository (a bare mirror or a work tree), fetches into the
 * daemon's mirror and pushes from it, applies patch mails as git am does,
 * resolves revisions,
 * and loads a range base..head the way `git format-patch base..head`
 * sees it: the commits reachable from head and not from base, oldest
 * first in topological order (date order where topology leaves a
 * choice, which is git's own order for ordinary histories), merge commits
 * and commits that change nothing left out and counted.  For every commit
 * it renders the text git format-patch puts after the headers: diffstat
 * (72 columns, git's scaling and "{a => b}" names), the summary lines
 * ("create mode", "rename", "mode change") and the patch, so that `git am`
 * reproduces the commit.  It also renders the cover letter's shortlog and
 * diffstat, and compares two ranges (a range-diff) for re-rolls.
 *
 * libgit2's own git_email_create_*() are not used: they write raw
 * non-ASCII From/Subject headers and a libgit2 signature, and
 * git_email_create_from_commit() numbers every patch 1/1.  We take the
 * diff from libgit2 and write everything else ourselves.
 *
 * Ownership: a gitrepo owns its libgit2 handles; a gitrepo_range and a
 * gitrepo_rangediff own all their strings and buffers and outlive the
 * gitrepo they came from.  libgit2 types never appear in this header.
 * Thread safety: a gitrepo belongs to one thread; libgit2 is initialised
 * once per process by gitrepo_open() (reference counted), set up
 * to read no configuration outside the repository (no ~/.gitconfig, no
 * /etc/gitconfig), so the daemon does not depend on $HOME.
 * Errors: PB_ENOTFOUND for a missing repository or revision, PB_EINVAL for
 * a revision that is not a commit, PB_ELIMIT for a range or patch past
 * its cap, PB_ERROR for other libgit2 failures (message from libgit2).
 */
#ifndef PB_OUTBOUND_GITREPO_H
#define PB_OUTBOUND_GITREPO_H

#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

#define GITREPO_HEXSZ 40
/* Commits walked in one range: bounds memory whatever the MR holds. */
#define GITREPO_WALK_MAX 20000
/* One commit's rendered patch, and a range's whole diffstat. */
#define GITREPO_PATCH_MAX (100 * 1024 * 1024)
#define GITREPO_STAT_MAX (16 * 1024 * 1024)
/* git format-patch: diffstat and shortlog width (MAIL_DEFAULT_WRAP). */
#define GITREPO_STAT_WIDTH 72
/* Abbreviated blob ids on "index" lines: fixed, so that re-renders of a
 * revision do not change as the repository grows (git scales its own). */
#define GITREPO_ABBREV 7
/* Lines of interdiff shown per modified patch in a range-diff. */
#define GITREPO_INTERDIFF_LINES 40

struct gitrepo;

struct gitrepo_person {
	char *name;
	char *email;
	int64_t time; /* Unix seconds */
	int tz_minutes; /* offset east of UTC */
};

struct gitrepo_commit {
	char sha[GITREPO_HEXSZ + 1];
	struct gitrepo_person author;
	struct gitrepo_person committer;
	/* The first paragraph joined with spaces, as git format-patch
	 * makes the Subject (pretty.c format_subject). */
	char *subject;
	/* The rest of the message as git format-patch prints it: leading
	 * blank lines dropped, trailing blanks of each line and the end
	 * trimmed, ending in "\n" unless empty. */
	char *body;
	/* From "---" on: diffstat, summary, "\n", the patch.  Empty when
	 * the range was loaded without patches. */
	struct buf patch;
	char patch_id[GITREPO_HEXSZ + 1]; /* `git patch-id --stable` */
	size_t files, insertions, deletions;
};

struct gitrepo_range {
	char base[GITREPO_HEXSZ + 1]; /* base as resolved */
	char head[GITREPO_HEXSZ + 1];
	char merge_base[GITREPO_HEXSZ + 1]; /* "" when none */
	struct gitrepo_person head_committer; /* of head itself */
	struct gitrepo_commit *commits; /* oldest first */
	size_t nr;
	size_t merges_skipped;
	size_t empty_skipped;
	int have_patches; /* commits[].patch are filled */
	struct buf diffstat; /* merge base to head, with summary */
};

int gitrepo_open(struct gitrepo **out, const char *path);
void gitrepo_free(struct gitrepo *repo);
/*
 * 1 when libgit2 was built thread safe (GIT_FEATURE_THREADS): then two
 * gitrepos, each on its own thread, may be used at the same time.
 */
int gitrepo_threads(void);

/*
 * The primitives of the daemon's bare mirror (outbound/mirror.h decides
 * what to fetch and which refs to keep).  gitrepo_mirror_open() opens
 * the bare repository at path, or with create set makes it.
 * gitrepo_fetch() fetches the refspecs from url over an anonymous remote
 * (no tags, no pruning, url.*.insteadOf ignored), offering token once as
 * HTTP basic auth "oauth2:TOKEN" when the server asks; its failures are
 * PB_ETEMP.  gitrepo_has_commit() is 1 when the commit (full hex id) is
 * in the repository.  gitrepo_ref_set() points the reference at a commit,
 * overwriting it.  gitrepo_ref_name_valid() is git's check of a full
 * reference name.  gitrepo_set_ca_file() sets the CA certificates of
 * every later HTTPS fetch in the process.
 */
int gitrepo_mirror_open(struct gitrepo **out, const char *path, int create);
int gitrepo_fetch(struct gitrepo *repo, const char *url, const char *token,
		  const struct strlist *specs);
/*
 * Push local_ref to remote_ref at url (force: "+", a force-push), with
 * the token offered once as HTTP basic auth "oauth2:TOKEN" when the
 * server asks (GitLab takes any user name with the token as password).
 * PB_EPERM when the server refuses the credentials, PB_ETEMP for other
 * transport failures, PB_ERROR when it refuses the update (a protected
 * branch, a hook), PB_EINVAL for a bad reference name.
 */
int gitrepo_push(struct gitrepo *repo, const char *url, const char *token,
		 const char *local_ref, const char *remote_ref, int force);
int gitrepo_has_commit(struct gitrepo *repo, const char *sha);
int gitrepo_ref_set(struct gitrepo *repo, const char *name, const char *sha,
		    const char *log_message);
int gitrepo_ref_name_valid(const char *name);
int gitrepo_set_ca_file(const char *ca_file);

/* Resolve rev (any git revision syntax) to a commit's full hex id. */
int gitrepo_resolve(char out[GITREPO_HEXSZ + 1], struct gitrepo *repo,
		    const char *rev);

/*
 * Load base..head.  When the range holds more than patch_limit commits
 * (0: no limit), patches are not rendered (have_patches = 0): the caller
 * mails only a cover letter and needs only subjects and authors.
 * PB_ELIMIT past GITREPO_WALK_MAX commits.
 */
int gitrepo_range_load(struct gitrepo_range **out, struct gitrepo *repo,
		       const char *base, const char *head, size_t patch_limit);
void gitrepo_range_free(struct gitrepo_range *range);

/*
 * gitrepo_range_load() that renders no patch and no diffstat yet:
 * have_patches is set as it would be, but commits[i].patch (and files,
 * insertions, deletions) are filled only by gitrepo_range_patch(repo,
 * range, i), and emptied again by gitrepo_range_patch_release(), so that
 * a writer that mails one patch at a time (patchbridge format) holds one
 * in memory, as git format-patch does; range->diffstat is filled by
 * gitrepo_range_diffstat(), which the writer calls while the first
 * patches are rendered (patchahead.h).  patch_id stays empty: what needs
 * it, the pairing of gitrepo_range_diff(), needs every patch at once and
 * so a range from gitrepo_range_load().  gitrepo_range_patch() on a
 * filled patch, and gitrepo_range_diffstat() on a filled diffstat, do
 * nothing.  Between two threads, each with its own gitrepo, these
 * calls may run at the same time on different commits (or the diffstat)
 * of one range: each writes only what it fills and reads only what the
 * load wrote.
 */
int gitrepo_range_load_deferred(struct gitrepo_range **out,
				struct gitrepo *repo, const char *base,
				const char *head, size_t patch_limit);
int gitrepo_range_patch(struct gitrepo *repo, struct gitrepo_range *range,
			size_t i);
int gitrepo_range_diffstat(struct gitrepo *repo, struct gitrepo_range *range);
void gitrepo_range_patch_release(struct gitrepo_range *range, size_t i);

/*
 * Append the cover letter shortlog: "Name (N):\n  title\n...\n\n" per
 * author, authors sorted, titles oldest first and wrapped at 72 with
 * indents 2 and 4, as `git shortlog` in a git format-patch cover letter.
 */
int gitrepo_shortlog(struct buf *out, const struct gitrepo_range *range);

enum gitrepo_rd_status {
	GITREPO_RD_UNCHANGED, /* same patch-id and message */
	GITREPO_RD_MODIFIED, /* paired by title, content or message differ */
	GITREPO_RD_NEW, /* only in the new range */
	GITREPO_RD_DROPPED, /* only in the old range */
};

struct gitrepo_rd_entry {
	enum gitrepo_rd_status status;
	size_t old_idx; /* index into the old range, SIZE_MAX if none */
	size_t new_idx; /* index into the new range, SIZE_MAX if none */
	char *interdiff; /* MODIFIED: a short diff of the two, indented */
};

struct gitrepo_rangediff {
	/* In git range-diff's order: new-range order, a dropped patch
	 * as soon as all before it in the old range are shown. */
	struct gitrepo_rd_entry *entries;
	size_t nr;
};

/*
 * Pair the patches of two ranges like `git range-diff`, simplified:
 * equal patch-id first, then equal subject, in order; the rest are new
 * or dropped.  Both ranges must have patches.
 */
int gitrepo_range_diff(struct gitrepo_rangediff **out,
		       const struct gitrepo_range *old_range,
		       const struct gitrepo_range *new_range);
void gitrepo_rangediff_free(struct gitrepo_rangediff *rd);

/*
 * Append the range-diff in `git range-diff` notation:
 *	1:  abcdef1 = 1:  1234567 title
 *	2:  abcdef2 ! 2:  1234568 title
 *	    @@ ...interdiff...
 *	-:  ------- > 3:  1234569 title
 *	3:  abcdef3 < -:  ------- title
 */
int gitrepo_rangediff_render(struct buf *out,
			     const struct gitrepo_rangediff *rd,
			     const struct gitrepo_range *old_range,
			     const struct gitrepo_range *new_range);

/*
 * Apply patches as `git am` does (git's builtin/am.c), with libgit2:
 * each patch (git_diff_from_buffer(): the "diff --git" text of a mail)
 * is applied to the tree of the commit before it (git_apply_to_tree(),
 * no fuzz, as git apply), and committed on it with its author (name,
 * email, time and zone as given) and message, and committer as the
 * committer, now unless committer->time is set.  The first applies onto
 * base (a commit's full hex id).  No reference changes: out gets the
 * last commit's id (gitrepo_ref_set() then names it).  When a patch
 * does not apply: PB_EINVAL, *failed its index and err_msg() libgit2's
 * message (the caller names the patch and the base to the sender);
 * PB_ENOTFOUND when base is not in the repository.
 */
struct gitrepo_am_patch {
	struct gitrepo_person author;
	const char *message; /* the commit message, ending in "\n" */
	const char *patch; /* the diff */
	size_t patch_len;
};

int gitrepo_am(char out[GITREPO_HEXSZ + 1], size_t *failed,
	       struct gitrepo *repo, const char *base,
	       const struct gitrepo_am_patch *patches, size_t nr,
	       const struct gitrepo_person *committer);

/*
 * A mail archive epoch in public-inbox's v2 format (public-inbox-v2-
 * format(5)): a bare repository in which every commit holds one message,
 * byte for byte, as the blob "m" alone at the top of its tree, on
 * refs/heads/master.  gitrepo_epoch_create() makes the repository (path
 * must not exist, or be an empty directory); each gitrepo_epoch_add()
 * commits one message on top of the last, with author and committer
 * both set to who (name and email cleaned of what git refuses; time and
 * zone used as given), so the same messages give the same commits.
 * gitrepo_epoch_free() also releases a half-written epoch; what was
 * committed stays.
 */
struct gitrepo_epoch;

int gitrepo_epoch_create(struct gitrepo_epoch **out, const char *path);
int gitrepo_epoch_add(struct gitrepo_epoch *ep, const void *message, size_t len,
		      const struct gitrepo_person *who, const char *subject);
void gitrepo_epoch_free(struct gitrepo_epoch *ep);

#endif
