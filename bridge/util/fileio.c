#include "util/err.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The directory part of path ("." when there is none); caller frees. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

/* Distinguishes temporary files of concurrent writers in one process. */
static atomic_ulong tmp_seq;

int file_atomic_open(struct file_atomic *f, const char *path, mode_t mode)
{
	const char *base = strrchr(path, '/');

	memset(f, 0, sizeof(*f));
	base = base ? base + 1 : path;
	f->path = xstrdup(path);
	f->dir = dir_of(path);
	f->tmp = xasprintf("%s/.tmp.%s.%ld.%lu", f->dir, base, (long)getpid(),
			   atomic_fetch_add(&tmp_seq, 1));
	f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (f->fd < 0) {
		int rc = err_set_errno(err_from_errno(errno), "create %s",
				       f->tmp);

		file_atomic_abort(f);
		return rc;
	}
	return 0;
}

int file_atomic_write(struct file_atomic *f, const void *data, size_t len)
{
	return fd_write_all(f->fd, data, len);
}

int file_atomic_commit(struct file_atomic *f)
{
	int rc = 0;

	if (fsync(f->fd) < 0)
		rc = err_set_errno(err_from_errno(errno), "fsync %s", f->tmp);
	if (close(f->fd) < 0 && !rc)
		rc = err_set_errno(err_from_errno(errno), "close %s", f->tmp);
	f->fd = -1;
	if (!rc && rename(f->tmp, f->path) < 0)
		rc = err_set_errno(err_from_errno(errno), "rename to %s",
				   f->path);
	if (!rc) {
		free(f->tmp); /* renamed: nothing to remove */
		f->tmp = NULL;
		rc = dir_fsync(f->dir);
	}
	file_atomic_abort(f);
	return rc;
}

void file_atomic_abort(struct file_atomic *f)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->tmp)
		unlink(f->tmp);
	free(f->tmp);
	free(f->dir);
	free(f->path);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

int file_write_atomic(const char *path, const void *data, size_t len,
		      mode_t mode)
{
	struct file_atomic f;
	int rc;

	rc = file_atomic_open(&f, path, mode);
	if (rc)
		return rc;
	rc = file_atomic_write(&f, data, len);
	if (rc) {
		file_atomic_abort(&f);
		return rc;
	}
	return file_atomic_commit(&f);
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
