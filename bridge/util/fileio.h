/*
 * fileio - bounded reads and crash-safe writes.
 *
 * file_write_atomic() is the only way patchbridge replaces a file: write a
 * temporary file in the same directory, fsync it, rename it over the
 * target, fsync the directory.  After a crash the target holds either the
 * old or the new contents, never a mix (the Maildir and Postfix queue
 * discipline).  Temporary names start with ".tmp." so a scan can ignore
 * and later remove leftovers.
 *
 * Errors: PB_ETEMP for I/O failures that may pass (ENOSPC, EIO …),
 * PB_ENOTFOUND for a missing file, PB_EPERM, PB_ELIMIT for a file larger
 * than the buffer's cap.  All set err_msg().
 */
#ifndef PB_UTIL_FILEIO_H
#define PB_UTIL_FILEIO_H

#include "util/buf.h"

#include <stddef.h>
#include <sys/types.h>

/* Replace path with data[0..len), created with mode (before umask). */
int file_write_atomic(const char *path, const void *data, size_t len,
		      mode_t mode);

/*
 * The same, written piece by piece: open the temporary file, write to it,
 * then commit (fsync, rename over path, fsync the directory) or abort
 * (remove it).  Commit and abort both release f, also on failure; after
 * a failed open there is nothing to release.
 */
struct file_atomic {
	int fd;
	char *path;
	char *dir;
	char *tmp;
};

int file_atomic_open(struct file_atomic *f, const char *path, mode_t mode);
int file_atomic_write(struct file_atomic *f, const void *data, size_t len);
int file_atomic_commit(struct file_atomic *f);
void file_atomic_abort(struct file_atomic *f);

/* Read the whole file into out (appending); PB_ELIMIT past out->max. */
int file_read(struct buf *out, const char *path);

/* Read everything from fd into out (appending); PB_ELIMIT past max. */
int fd_read_all(struct buf *out, int fd);

/* Write all of data to fd, retrying on EINTR and short writes. */
int fd_write_all(int fd, const void *data, size_t len);

/* fsync a directory so a rename or create in it is durable. */
int dir_fsync(const char *dir);

/* Create a directory and its parents (like mkdir -p). */
int dir_create(const char *path, mode_t mode);

/* Map an errno value to our codes. */
int err_from_errno(int e);

#endif
