/*
 * perm - whom a file lets in: the checks that keep a file another local
 * user could have written from being trusted.
 *
 * A program trusts its configuration, and the files the configuration
 * names (the owners file, the user map, a secret), as far as it trusts
 * everybody who could have written them: whoever may change "[forge]
 * url" gets the forge token sent to a host of their choice.  A trusted
 * file is accepted only when
 *
 *   - it is a regular file owned by root or by the program's own user
 *     (the effective uid), which neither its group nor others may write;
 *   - every directory above it, up to "/", is owned by root or that user
 *     and is not writable by its group or others, since whoever may
 *     write a directory may replace the file in it.  A directory with the
 *     sticky bit (/tmp) is the exception: there only an entry's owner
 *     (or the directory's, or root) may rename or remove it, so it is
 *     enough that the entry below it passes the owner check.
 *
 * Symbolic links are resolved (realpath(3)) and the directories of the
 * real file are checked.  This is the rule of OpenSSH's StrictModes
 * (safe_path() in misc.c) and of Postfix's permission checks
 * (postfix-script), stricter than either about groups: a group-writable
 * file is refused whoever is in the group.
 *
 * Errors: PB_EINVAL when the file is not safe to trust, with err_msg()
 * naming the file or directory, its owner and mode, and what is
 * expected; an errno-mapped code (fileio.h) when it cannot be examined.
 * Thread safety: reentrant (getpwuid_r, getgrgid_r).
 */
#ifndef PB_UTIL_PERM_H
#define PB_UTIL_PERM_H

#include "util/buf.h"

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* Room for perm_user() and perm_group(). */
#define PERM_NAME_MAX 96

/*
 * Check that fd, opened from path, may be trusted (see above).  path is
 * used to find the directories and in messages.
 */
int perm_check_trusted(int fd, const char *path);

/*
 * Open path, check it with perm_check_trusted() and read it whole into
 * out (appending; PB_ELIMIT past out->max, as file_read()).
 */
int perm_read_trusted(struct buf *out, const char *path);

/*
 * A directory only this program's user may change, for the files it
 * creates there (the state database, its -wal and -shm files, locks, git
 * mirrors): owned by that user (or root), writable by neither group nor
 * others, sticky or not (whoever may create names there could plant a
 * database's -wal file).  what names it in messages ("state
 * directory"), expected_mode the documented mode ("2750").  PB_EPERM
 * when it is not so; an errno-mapped code when it cannot be examined.
 */
int perm_check_own_dir(const char *dir, const char *what,
		       const char *expected_mode);

/*
 * A directory this program writes below with *at() calls, opened
 * without following a link anywhere on its path: each component from
 * "/" is opened O_DIRECTORY|O_NOFOLLOW from the descriptor of the one
 * above, and each directory that holds the next one must be owned by
 * root or this user and not writable by group or others, unless sticky
 * (the entry below then passes the owner check, and only its owner may
 * rename it); the directory itself must be owned by root or this user
 * and be writable by neither group nor others, sticky or not.  So no
 * other local user can change what any name on the way, or in the
 * directory, leads to.  A link anywhere is refused (PB_EPERM), never
 * followed: the caller gives the real path.  "." is skipped, ".." is
 * refused.
 */
struct perm_dir {
	int fd; /* the directory; -1 when closed */
	int parent; /* the directory above it, for renameat(), unlinkat() */
	char name[NAME_MAX + 1]; /* its name in parent */
	int made; /* perm_dir_open() made it (mkdirat) */
};

void perm_dir_init(struct perm_dir *d);

/*
 * Open path into d, making its last component with mode when it does
 * not exist (d->made).  what names it in messages ("public-inbox
 * directory").  PB_EPERM when a link or a directory another user could
 * change is on the way, with err_msg() naming it, its owner and mode and
 * the fix; an errno-mapped code otherwise.  On error d is closed (and
 * what it made removed).
 */
int perm_dir_open(struct perm_dir *d, const char *path, mode_t mode,
		  const char *what);

/* Close d's descriptors (d->made is forgotten); d may be closed. */
void perm_dir_close(struct perm_dir *d);

/* "name (uid N)", or "uid N" for a uid without a name; returns buf. */
const char *perm_user(char *buf, size_t size, uid_t uid);

/* "name (gid N)", or "gid N"; returns buf. */
const char *perm_group(char *buf, size_t size, gid_t gid);

#endif
