#include "util/perm.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/printable.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *perm_user(char *buf, size_t size, uid_t uid)
{
	struct passwd pw, *found = NULL;
	char scratch[4096];

	if (getpwuid_r(uid, &pw, scratch, sizeof(scratch), &found) == 0 &&
	    found)
		snprintf(buf, size, "%s (uid %lu)", found->pw_name,
			 (unsigned long)uid);
	else
		snprintf(buf, size, "uid %lu", (unsigned long)uid);
	return buf;
}

const char *perm_group(char *buf, size_t size, gid_t gid)
{
	struct group gr, *found = NULL;
	char scratch[8192];

	if (getgrgid_r(gid, &gr, scratch, sizeof(scratch), &found) == 0 &&
	    found)
		snprintf(buf, size, "%s (gid %lu)", found->gr_name,
			 (unsigned long)gid);
	else
		snprintf(buf, size, "gid %lu", (unsigned long)gid);
	return buf;
}

/* Owned by root or by the program's own user. */
static int owner_ok(const struct stat *st)
{
	return st->st_uid == 0 || st->st_uid == geteuid();
}

/* "root", or "root or NAME (uid N)": who may own a trusted file. */
static const char *trusted_owners(char *buf, size_t size)
{
	char me[PERM_NAME_MAX];

	if (geteuid() == 0)
		snprintf(buf, size, "root");
	else
		snprintf(buf, size, "root or %s",
			 perm_user(me, sizeof(me), geteuid()));
	return buf;
}

/*
 * Run as root, a file another user owns is refused; the fix is seldom to
 * give it to root, but to run the program as that user, the one the
 * layout made it for: "; or run the program as NAME (runuser -u NAME
 * -- ...)".  Empty when not root.
 */
static const char *as_root_hint(char *buf, size_t size, const struct stat *st)
{
	char scratch[1024];
	struct passwd pw, *u = NULL;

	buf[0] = '\0';
	if (geteuid() != 0 || st->st_uid == 0)
		return buf;
	if (getpwuid_r(st->st_uid, &pw, scratch, sizeof(scratch), &u) || !u)
		return buf;
	snprintf(buf, size,
		 "; or run the program as %s, not as root (runuser -u %s "
		 "-- ...)",
		 u->pw_name, u->pw_name);
	return buf;
}

/* "its group (NAME)", "others", or both: who besides the owner writes. */
static const char *writers(char *buf, size_t size, const struct stat *st)
{
	char g[PERM_NAME_MAX];

	perm_group(g, sizeof(g), st->st_gid);
	if ((st->st_mode & 022) == 022)
		snprintf(buf, size, "its group %s and others", g);
	else if (st->st_mode & 020)
		snprintf(buf, size, "its group %s", g);
	else
		snprintf(buf, size, "others");
	return buf;
}

/*
 * Refuse path because of what (the file itself, or a directory above
 * it), whose stat is st.
 */
static int refuse(const char *path, const char *what, const struct stat *st,
		  int is_dir)
{
	char owner[PERM_NAME_MAX], me[PERM_NAME_MAX + 16];
	char who[2 * PERM_NAME_MAX], where[PATH_MAX + 64];
	char hint[2 * PERM_NAME_MAX + 64];

	perm_user(owner, sizeof(owner), st->st_uid);
	trusted_owners(me, sizeof(me));
	if (is_dir)
		snprintf(where, sizeof(where), "%s: the directory %s above it",
			 path, what);
	else
		snprintf(where, sizeof(where), "%s", path);
	if (!owner_ok(st))
		return err_set(PB_EINVAL,
			       "%s is owned by %s (mode %04o): a file this "
			       "program trusts, and every directory above "
			       "it, must be owned by %s, and not writable by "
			       "group or others%s",
			       where, owner, (unsigned)(st->st_mode & 07777),
			       me, as_root_hint(hint, sizeof(hint), st));
	return err_set(PB_EINVAL,
		       "%s is writable by %s (owner %s, mode %04o): a file "
		       "this program trusts, and every directory above it, "
		       "may be writable only by %s (chmod go-w %s%s)",
		       where, writers(who, sizeof(who), st), owner,
		       (unsigned)(st->st_mode & 07777), me,
		       is_dir ? what : path,
		       is_dir ? ", or make it sticky like /tmp" : "");
}

/* Check every directory above the resolved path real, nearest first. */
static int check_dirs(const char *path, char *real)
{
	struct stat st;
	char *slash;

	for (;;) {
		slash = strrchr(real, '/');
		if (!slash)
			return 0;
		if (slash == real)
			slash[1] = '\0'; /* "/" itself */
		else
			*slash = '\0';
		if (lstat(real, &st) < 0)
			return err_set_errno(err_from_errno(errno), "%s: %s",
					     path, real);
		if (!S_ISDIR(st.st_mode))
			return err_set(PB_EINVAL, "%s: %s is not a directory",
				       path, real);
		/* In a sticky directory only an entry's owner (already
		 * checked one level down) may replace it. */
		if (!owner_ok(&st) ||
		    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)))
			return refuse(path, real, &st, 1);
		if (!strcmp(real, "/"))
			return 0;
	}
}

int perm_check_trusted(int fd, const char *path)
{
	char shown[PATH_MAX], *real = NULL;
	struct stat st, again;
	int rc;

	printable_copy(shown, sizeof(shown), path, strlen(path));
	if (fstat(fd, &st) < 0)
		return err_set_errno(err_from_errno(errno), "%s", shown);
	if (!S_ISREG(st.st_mode))
		return err_set(PB_EINVAL, "%s: not a regular file", shown);
	if (!owner_ok(&st) || (st.st_mode & 022))
		return refuse(shown, NULL, &st, 0);
	real = realpath(path, NULL);
	if (!real)
		return err_set_errno(err_from_errno(errno), "%s", shown);
	/* The name must still lead to the file that was opened. */
	if (stat(real, &again) < 0 || again.st_dev != st.st_dev ||
	    again.st_ino != st.st_ino)
		rc = err_set(PB_EINVAL, "%s changed while it was checked",
			     shown);
	else
		rc = check_dirs(shown, real);
	free(real);
	return rc;
}

int perm_read_trusted(struct buf *out, const char *path)
{
	int fd, rc;

	/* Non-blocking: a FIFO at the name must not hang the open. */
	fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return err_set_errno(err_from_errno(errno), "open %s", path);
	rc = perm_check_trusted(fd, path);
	if (!rc) {
		rc = fd_read_all(out, fd);
		if (rc)
			rc = err_prefix(rc, "%s", path);
	}
	close(fd);
	return rc;
}

int perm_check_own_dir(const char *dir, const char *what,
		       const char *expected_mode)
{
	char owner[PERM_NAME_MAX], me[PERM_NAME_MAX], who[2 * PERM_NAME_MAX];
	struct stat st;

	if (stat(dir, &st) < 0)
		return err_set_errno(err_from_errno(errno), "%s %s", what, dir);
	if (!S_ISDIR(st.st_mode))
		return err_set(PB_ENOTFOUND, "%s %s is not a directory", what,
			       dir);
	perm_user(owner, sizeof(owner), st.st_uid);
	perm_user(me, sizeof(me), geteuid());
	if (!owner_ok(&st))
		return err_set(PB_EPERM,
			       "%s %s is owned by %s; expected owner %s, mode "
			       "%s (writable by its owner only)",
			       what, dir, owner, me, expected_mode);
	if (st.st_mode & 022)
		return err_set(PB_EPERM,
			       "%s %s is writable by %s (mode %04o); expected "
			       "owner %s, mode %s (writable by its owner only: "
			       "chmod go-w %s)",
			       what, dir, writers(who, sizeof(who), &st),
			       (unsigned)(st.st_mode & 07777), me,
			       expected_mode, dir);
	return 0;
}

/*
 * Refuse the directory shown (at st) on the way to what (the target
 * shown as target): not root's or this user's, or writable by others
 * where that lets them change what a name leads to.
 */
static int refuse_chain(const char *what, const char *target, const char *shown,
			const struct stat *st, int last)
{
	char owner[PERM_NAME_MAX], me[PERM_NAME_MAX + 16];
	char who[2 * PERM_NAME_MAX], hint[2 * PERM_NAME_MAX + 64];

	perm_user(owner, sizeof(owner), st->st_uid);
	trusted_owners(me, sizeof(me));
	if (!owner_ok(st))
		return err_set(PB_EPERM,
			       "%s %s: %s is owned by %s (mode %04o); it and "
			       "every directory above it must be owned by "
			       "%s, or another user could redirect what is "
			       "written there%s",
			       what, target, shown, owner,
			       (unsigned)(st->st_mode & 07777), me,
			       as_root_hint(hint, sizeof(hint), st));
	return err_set(PB_EPERM,
		       "%s %s: %s is writable by %s (owner %s, mode %04o); "
		       "only its owner may change it and every directory "
		       "above it%s (chmod go-w %s)",
		       what, target, shown, writers(who, sizeof(who), st),
		       owner, (unsigned)(st->st_mode & 07777),
		       last ? "" : ", unless sticky like /tmp", shown);
}

void perm_dir_init(struct perm_dir *d)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	d->parent = -1;
}

/* The next component of a path split by strtok_r(), "." skipped. */
static char *next_comp(char *s, char **save)
{
	char *c = strtok_r(s, "/", save);

	while (c && !strcmp(c, "."))
		c = strtok_r(NULL, "/", save);
	return c;
}

int perm_dir_open(struct perm_dir *d, const char *path, mode_t mode,
		  const char *what)
{
	char abs[PATH_MAX], raw[PATH_MAX], shown[PATH_MAX], target[PATH_MAX];
	char *comp, *next, *save = NULL;
	struct stat st, lst;
	size_t len;
	int cur = -1, fd = -1, rc = 0;

	perm_dir_init(d);
	printable_copy(target, sizeof(target), path, strlen(path));
	if (path[0] == '/') {
		len = (size_t)snprintf(abs, sizeof(abs), "%s", path);
	} else {
		if (!getcwd(abs, sizeof(abs)))
			return err_set_errno(err_from_errno(errno),
					     "%s %s: the current directory",
					     what, target);
		len = strlen(abs);
		len += (size_t)snprintf(abs + len, sizeof(abs) - len, "/%s",
					path);
	}
	if (len >= sizeof(abs))
		return err_set(PB_EINVAL, "%s %s: path too long", what, target);
	cur = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0 || fstat(cur, &st) < 0) {
		rc = err_set_errno(err_from_errno(errno), "%s %s: /", what,
				   target);
		goto out;
	}
	raw[0] = '\0';
	snprintf(shown, sizeof(shown), "/");
	comp = next_comp(abs, &save);
	if (!comp) {
		rc = err_set(PB_EINVAL, "%s %s: not a directory of its own",
			     what, target);
		goto out;
	}
	for (; comp; comp = next) {
		next = next_comp(NULL, &save);
		if (!strcmp(comp, "..")) {
			rc = err_set(PB_EINVAL,
				     "%s %s: give a path without \"..\"", what,
				     target);
			goto out;
		}
		/* cur (at st) holds the name comp: others could change what
		 * it leads to unless cur is root's or ours and writable by
		 * nobody else - or sticky, where only the entry's owner
		 * (checked one step on) may rename or remove it. */
		if (!owner_ok(&st) ||
		    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
			rc = refuse_chain(what, target, shown, &st, 0);
			goto out;
		}
		len = strlen(raw);
		snprintf(raw + len, sizeof(raw) - len, "/%s", comp);
		printable_copy(shown, sizeof(shown), raw, strlen(raw));
		if (fstatat(cur, comp, &lst, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT || next) {
				rc = err_set_errno(err_from_errno(errno),
						   "%s %s: %s", what, target,
						   shown);
				goto out;
			}
			/* Made here, so nobody else can have put anything
			 * in it. */
			if (mkdirat(cur, comp, mode) < 0) {
				rc = err_set_errno(err_from_errno(errno),
						   "%s %s: mkdir", what,
						   target);
				goto out;
			}
			d->made = 1;
		} else if (S_ISLNK(lst.st_mode)) {
			rc = err_set(PB_EPERM,
				     "%s %s: %s is a symbolic link: give the "
				     "real path (realpath %s); nothing is "
				     "written through a link",
				     what, target, shown, target);
			goto out;
		}
		/* O_NOFOLLOW: a link swapped in since is refused too. */
		rc = dir_openat_nofollow(&fd, cur, comp, shown);
		if (rc) {
			err_prefix(rc, "%s %s", what, target);
			goto out;
		}
		if (fstat(fd, &st) < 0) {
			rc = err_set_errno(err_from_errno(errno), "%s %s", what,
					   target);
			goto out;
		}
		if (next) {
			close(cur);
		} else {
			d->parent = cur;
			snprintf(d->name, sizeof(d->name), "%s", comp);
		}
		cur = fd;
		fd = -1;
	}
	/* The directory itself: everything is written there, so neither
	 * its group nor others may write it, sticky or not. */
	if (!owner_ok(&st) || (st.st_mode & 022)) {
		rc = refuse_chain(what, target, shown, &st, 1);
		goto out;
	}
	d->fd = cur;
	cur = -1;
out:
	if (fd >= 0)
		close(fd);
	if (cur >= 0)
		close(cur);
	if (rc) {
		if (d->made && d->parent >= 0)
			unlinkat(d->parent, d->name, AT_REMOVEDIR);
		perm_dir_close(d);
	}
	return rc;
}

void perm_dir_close(struct perm_dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	if (d->parent >= 0)
		close(d->parent);
	perm_dir_init(d);
}
