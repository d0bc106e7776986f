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
 * Directories others may write (the spool's dead/, which the milter's
 * group writes; a shared directory an export goes to) must not be able to
 * redirect a write: the temporary name is ".tmp.<name>.<12 random
 * characters>" (mkstemp(3)), created O_CREAT | O_EXCL | O_NOFOLLOW, so a
 * link or file planted there in advance is never opened; everything
 * happens relative to a descriptor of the directory (openat, renameat,
 * fsync), opened once with O_DIRECTORY | O_NOFOLLOW, so a directory
 * swapped for a link meanwhile changes nothing; and rename() replaces a
 * link at the target's own name instead of following it.  A path whose
 * last directory is a symbolic link is refused (PB_EPERM); links higher
 * up the path are the administrator's and are followed.
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
	int dirfd; /* the directory written into */
	int own_dirfd; /* file_atomic_open() opened dirfd: close it */
	char *dir; /* the directory, for messages */
	char *name; /* the target's name in dirfd */
	char *path; /* dir/name, for messages */
	char *tmp; /* the temporary's name in dirfd */
	int direct; /* file_output_open() on a device or FIFO: no rename */
};

int file_atomic_open(struct file_atomic *f, const char *path, mode_t mode);
/*
 * The same in the directory dirfd (borrowed: it stays open and the
 * caller's), whose name dir is used in messages only; name is a plain
 * file name, no "/".
 */
int file_atomic_openat(struct file_atomic *f, int dirfd, const char *dir,
		       const char *name, mode_t mode);
int file_atomic_write(struct file_atomic *f, const void *data, size_t len);
int file_atomic_commit(struct file_atomic *f);
void file_atomic_abort(struct file_atomic *f);

/*
 * A command's output file (`-o FILE`): file_atomic_open(), but a FILE that
 * exists and is a character device or a FIFO (/dev/null, a pipe) is
 * written in place - renaming over it would put a regular file where
 * the device was.  A symbolic link to one is refused (name it, or use
 * standard output), a directory too.  Commit and abort as above.
 */
int file_output_open(struct file_atomic *f, const char *path, mode_t mode);
int file_write_output(const char *path, const void *data, size_t len,
		      mode_t mode);

/* file_write_atomic() into the directory dirfd (see file_atomic_openat). */
int file_write_atomicat(int dirfd, const char *dir, const char *name,
			const void *data, size_t len, mode_t mode);

/*
 * Open the directory dir for *at() calls: O_DIRECTORY | O_NOFOLLOW, so a
 * symbolic link as its last component is refused with PB_EPERM.
 */
int dir_open_nofollow(int *out, const char *dir);
/* The same for name in the directory atfd (or AT_FDCWD); shown is the
 * name messages use. */
int dir_openat_nofollow(int *out, int atfd, const char *name,
			const char *shown);

/*
 * Remove name in the directory atfd and, if it is a directory, all that
 * is below it, never following a link: each directory is opened
 * O_NOFOLLOW from the descriptor of the one above and its entries are
 * removed with unlinkat(), so a link planted anywhere is removed itself,
 * never what it points at.  Gone already: 0.  Deeper than
 * FILE_TREE_DEPTH_MAX: PB_ELIMIT.
 */
#define FILE_TREE_DEPTH_MAX 64
int dir_remove_tree_at(int atfd, const char *name);

/* Read the whole file into out (appending); PB_ELIMIT past out->max. */
int file_read(struct buf *out, const char *path);

/* Read everything from fd into out (appending); PB_ELIMIT past max. */
int fd_read_all(struct buf *out, int fd);

/*
 * Read a non-blocking fd (a child's pipe) into out until EOF or until a
 * read would block.  What does not fit under out->max is dropped, the
 * head that fits is kept, and *over (when not NULL) is set to 1: a
 * child's output is read to its end either way, so the child never
 * blocks on a full pipe.  Returns 1 while the fd stays open, 0 at EOF or
 * on a read error (the caller closes it either way).
 */
int fd_drain(struct buf *out, int fd, int *over);

/* Write all of data to fd, retrying on EINTR and short writes. */
int fd_write_all(int fd, const void *data, size_t len);

/* fsync a directory so a rename or create in it is durable. */
int dir_fsync(const char *dir);

/* Create a directory and its parents (like mkdir -p). */
int dir_create(const char *path, mode_t mode);

/* The directory part of path ("." when there is none); caller frees. */
char *path_dir(const char *path);

/* Map an errno value to our codes. */
int err_from_errno(int e);

#endif
