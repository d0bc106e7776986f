#include "util/err.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

int err_from_errno(int e)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
		return PB_ENOTFOUND;
	case EACCES:
	case EPERM:
	case EROFS:
		return PB_EPERM;
	case EEXIST:
		return PB_EEXISTS;
	case ENOSPC:
	case EDQUOT:
	case EIO:
	case EINTR:
	case EAGAIN:
	case EMFILE:
	case ENFILE:
	case ENOMEM:
		return PB_ETEMP;
	default:
		return PB_ERROR;
	}
}

int fd_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return err_set_errno(err_from_errno(errno), "write");
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fd_read_all(struct buf *out, int fd)
{
	char chunk[65536];

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		int rc;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return err_set_errno(err_from_errno(errno), "read");
		}
		if (n == 0)
			return 0;
		rc = buf_add(out, chunk, (size_t)n);
		if (rc)
			return rc;
	}
}

int fd_drain(struct buf *out, int fd, int *over)
{
	char tmp[4096];

	for (;;) {
		ssize_t n = read(fd, tmp, sizeof(tmp));

		if (n > 0) {
			size_t room = out->max - out->len;

			if ((size_t)n > room && over)
				*over = 1;
			buf_add(out, tmp, (size_t)n < room ? (size_t)n : room);
			continue;
		}
		if (n == 0)
			return 0;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : 0;
	}
}

int file_read(struct buf *out, const char *path)
{
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set_errno(err_from_errno(errno), "open %s", path);
	rc = fd_read_all(out, fd);
	close(fd);
	if (rc)
		return err_prefix(rc, "%s", path);
	return 0;
}

int dir_fsync(const char *dir)
{
	int fd, rc = 0;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set_errno(err_from_errno(errno), "open %s", dir);
	if (fsync(fd) < 0)
		rc = err_set_errno(err_from_errno(errno), "fsync %s", dir);
	close(fd);
	return rc;
}

char *path_dir(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

int dir_openat_nofollow(int *out, int atfd, const char *name, const char *shown)
{
	struct stat st;
	int e;

	*out = openat(atfd, name,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*out >= 0)
		return 0;
	e = errno;
	/* Linux says ENOTDIR for a link with O_DIRECTORY, ELOOP without. */
	if ((e == ENOTDIR || e == ELOOP) &&
	    fstatat(atfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		return err_set(PB_EPERM,
			       "%s is a symbolic link, not a directory", shown);
	errno = e;
	if (e == ENOTDIR)
		return err_set(PB_ENOTFOUND, "%s is not a directory", shown);
	return err_set_errno(err_from_errno(e), "open %s", shown);
}

static int remove_tree(int atfd, const char *name, int depth)
{
	struct dirent *de;
	struct stat st;
	DIR *dir;
	int fd, rc = 0;

	if (fstatat(atfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ?
			       0 :
			       err_set_errno(err_from_errno(errno), "%s", name);
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(atfd, name, 0) < 0 && errno != ENOENT)
			return err_set_errno(err_from_errno(errno), "unlink %s",
					     name);
		return 0;
	}
	if (depth >= FILE_TREE_DEPTH_MAX)
		return err_set(PB_ELIMIT, "%s: more than %d levels deep", name,
			       FILE_TREE_DEPTH_MAX);
	/* O_NOFOLLOW: swapped for a link since, it is refused here and
	 * removed as a file by unlinkat() below. */
	fd = openat(atfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOTDIR && errno != ELOOP)
			return err_set_errno(err_from_errno(errno), "open %s",
					     name);
		if (unlinkat(atfd, name, 0) < 0 && errno != ENOENT)
			return err_set_errno(err_from_errno(errno), "unlink %s",
					     name);
		return 0;
	}
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return err_set_errno(err_from_errno(errno), "%s", name);
	}
	while (!rc && (de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = remove_tree(fd, de->d_name, depth + 1);
	closedir(dir);
	if (!rc && unlinkat(atfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = err_set_errno(err_from_errno(errno), "rmdir %s", name);
	return rc;
}

int dir_remove_tree_at(int atfd, const char *name)
{
	return remove_tree(atfd, name, 0);
}

int dir_open_nofollow(int *out, const char *dir)
{
	return dir_openat_nofollow(out, AT_FDCWD, dir, dir);
}

/* The longest part of a target's name kept in its temporary's name. */
#define TMP_BASE_MAX 200
/* Random characters in a temporary name, and tries before giving up. */
#define TMP_RANDOM_LEN 12
#define TMP_TRIES 100

/*
 * ".tmp.<name>.<12 random letters and digits>": unpredictable, so that
 * nobody who may write the directory can plant a link or a file at the
 * name in advance (mkstemp(3)); and opened O_EXCL | O_NOFOLLOW anyway.
 */
static int tmp_name(char *out, size_t size, const char *name)
{
	static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[TMP_RANDOM_LEN];
	char tail[TMP_RANDOM_LEN + 1];
	size_t i, got = 0;

	while (got < sizeof(rnd)) {
		ssize_t n = getrandom(rnd + got, sizeof(rnd) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return err_set_errno(PB_ETEMP, "getrandom");
		}
		got += (size_t)n;
	}
	for (i = 0; i < sizeof(rnd); i++)
		tail[i] = set[rnd[i] % (sizeof(set) - 1)];
	tail[sizeof(rnd)] = '\0';
	snprintf(out, size, ".tmp.%.*s.%s", TMP_BASE_MAX, name, tail);
	return 0;
}

static int atomic_create(struct file_atomic *f, mode_t mode)
{
	char tmp[TMP_BASE_MAX + TMP_RANDOM_LEN + 8];
	int tries, rc;

	for (tries = 0; tries < TMP_TRIES; tries++) {
		rc = tmp_name(tmp, sizeof(tmp), f->name);
		if (rc)
			return rc;
		f->fd = openat(f->dirfd, tmp,
			       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				       O_NOCTTY | O_CLOEXEC,
			       mode);
		if (f->fd >= 0) {
			f->tmp = xstrdup(tmp);
			return 0;
		}
		if (errno != EEXIST)
			return err_set_errno(err_from_errno(errno),
					     "create a temporary file in %s",
					     f->dir);
	}
	return err_set(PB_ETEMP, "%s: no free temporary name in %d tries",
		       f->dir, TMP_TRIES);
}

static int output_start(struct file_atomic *f, mode_t mode);

/* What open and openat share; dirfd is f's from now on. */
static int atomic_start(struct file_atomic *f, int dirfd, int own_dirfd,
			const char *dir, const char *name, mode_t mode,
			int output)
{
	int rc;

	f->dirfd = dirfd;
	f->own_dirfd = own_dirfd;
	f->dir = xstrdup(dir);
	f->name = xstrdup(name);
	f->path = xasprintf("%s/%s", dir, name);
	if (!*name || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		rc = err_set(PB_EINVAL, "%s: not a file name", f->path);
	else if (output)
		rc = output_start(f, mode);
	else
		rc = atomic_create(f, mode);
	if (rc)
		file_atomic_abort(f);
	return rc;
}

/* file_atomic_open() and file_output_open(): path split, its directory
 * opened without following a link. */
static int open_path(struct file_atomic *f, const char *path, mode_t mode,
		     int output)
{
	const char *base = strrchr(path, '/');
	char *dir = path_dir(path);
	int dirfd, rc;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->dirfd = -1;
	rc = dir_open_nofollow(&dirfd, dir);
	if (!rc)
		rc = atomic_start(f, dirfd, 1, dir, base ? base + 1 : path,
				  mode, output);
	free(dir);
	return rc;
}

int file_atomic_open(struct file_atomic *f, const char *path, mode_t mode)
{
	return open_path(f, path, mode, 0);
}

int file_atomic_openat(struct file_atomic *f, int dirfd, const char *dir,
		       const char *name, mode_t mode)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->dirfd = -1;
	return atomic_start(f, dirfd, 0, dir, name, mode, 0);
}

/* A device or FIFO at f's name, opened for writing in place. */
static int output_special(struct file_atomic *f, const struct stat *st)
{
	int flags;

	if (!S_ISCHR(st->st_mode) && !S_ISFIFO(st->st_mode))
		return err_set(PB_EINVAL,
			       "%s: not a regular file, a character device "
			       "or a FIFO",
			       f->path);
	/* O_NONBLOCK: a FIFO with no reader fails (ENXIO), never hangs. */
	f->fd = openat(f->dirfd, f->name,
		       O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC |
			       O_NONBLOCK);
	if (f->fd < 0)
		return err_set_errno(err_from_errno(errno), "open %s", f->path);
	flags = fcntl(f->fd, F_GETFL);
	if (flags < 0 || fcntl(f->fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		return err_set_errno(err_from_errno(errno), "fcntl %s",
				     f->path);
	f->direct = 1;
	return 0;
}

/* What file_output_open() finds at f's name, before any temporary. */
static int output_start(struct file_atomic *f, mode_t mode)
{
	struct stat st, target;

	if (fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    S_ISREG(st.st_mode))
		return atomic_create(f, mode); /* absent or a file */
	if (S_ISLNK(st.st_mode)) {
		/* A link is replaced, never followed; but not one that
		 * names a device (/dev/stdout as root). */
		if (fstatat(f->dirfd, f->name, &target, 0) < 0 ||
		    S_ISREG(target.st_mode))
			return atomic_create(f, mode);
		return err_set(PB_EINVAL,
			       "%s: a symbolic link to something other than "
			       "a file: name the file itself, or write to "
			       "standard output (-)",
			       f->path);
	}
	return output_special(f, &st);
}

int file_output_open(struct file_atomic *f, const char *path, mode_t mode)
{
	return open_path(f, path, mode, 1);
}

int file_atomic_write(struct file_atomic *f, const void *data, size_t len)
{
	return fd_write_all(f->fd, data, len);
}

int file_atomic_commit(struct file_atomic *f)
{
	int rc = 0;

	if (f->direct) {
		/* A device or FIFO: nothing to sync or rename. */
		if (close(f->fd) < 0)
			rc = err_set_errno(err_from_errno(errno), "close %s",
					   f->path);
		f->fd = -1;
		file_atomic_abort(f);
		return rc;
	}
	if (fsync(f->fd) < 0)
		rc = err_set_errno(err_from_errno(errno), "fsync %s/%s", f->dir,
				   f->tmp);
	if (close(f->fd) < 0 && !rc)
		rc = err_set_errno(err_from_errno(errno), "close %s/%s", f->dir,
				   f->tmp);
	f->fd = -1;
	/* rename() replaces a link at the target's name; never follows it. */
	if (!rc && renameat(f->dirfd, f->tmp, f->dirfd, f->name) < 0)
		rc = err_set_errno(err_from_errno(errno), "rename to %s",
				   f->path);
	if (!rc) {
		free(f->tmp); /* renamed: nothing to remove */
		f->tmp = NULL;
		if (fsync(f->dirfd) < 0)
			rc = err_set_errno(err_from_errno(errno), "fsync %s",
					   f->dir);
	}
	file_atomic_abort(f);
	return rc;
}

void file_atomic_abort(struct file_atomic *f)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->tmp && f->dirfd >= 0)
		unlinkat(f->dirfd, f->tmp, 0);
	if (f->own_dirfd && f->dirfd >= 0)
		close(f->dirfd);
	free(f->tmp);
	free(f->dir);
	free(f->name);
	free(f->path);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->dirfd = -1;
}

/* Write all of data to an open f, then commit it (or abort). */
static int write_commit(struct file_atomic *f, const void *data, size_t len)
{
	int rc = file_atomic_write(f, data, len);

	if (rc) {
		file_atomic_abort(f);
		return rc;
	}
	return file_atomic_commit(f);
}

int file_write_atomic(const char *path, const void *data, size_t len,
		      mode_t mode)
{
	struct file_atomic f;
	int rc = file_atomic_open(&f, path, mode);

	return rc ? rc : write_commit(&f, data, len);
}

int file_write_output(const char *path, const void *data, size_t len,
		      mode_t mode)
{
	struct file_atomic f;
	int rc = file_output_open(&f, path, mode);

	return rc ? rc : write_commit(&f, data, len);
}

int file_write_atomicat(int dirfd, const char *dir, const char *name,
			const void *data, size_t len, mode_t mode)
{
	struct file_atomic f;
	int rc = file_atomic_openat(&f, dirfd, dir, name, mode);

	return rc ? rc : write_commit(&f, data, len);
}

int dir_create(const char *path, mode_t mode)
{
	char *p = xstrdup(path);
	char *q;
	int rc = 0;

	for (q = p + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			rc = err_set_errno(err_from_errno(errno), "mkdir %s",
					   p);
			goto out;
		}
		*q = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		rc = err_set_errno(err_from_errno(errno), "mkdir %s", p);
out:
	free(p);
	return rc;
}
