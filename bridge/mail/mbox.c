#include "mail/mbox.h"

#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/printable.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct mbox {
	int fd;
	int own_fd; /* not standard input */
	char *blk; /* MBOX_BLOCK bytes; [pos, len) not consumed yet */
	size_t len, pos;
	int eof;
	int started; /* the first From_ line was read */
	int in_message; /* a From_ line was read, its message not returned */
	int mid_line; /* the last segment did not end its line */
	int skip_line; /* drop the rest of the line (a long From_ line) */
	char held[2]; /* an empty line held back: the separator? */
	size_t held_len; /* 0: none */
	size_t index; /* messages returned */
	char shown[PB_LOG_QUOTE_MAX]; /* the path, for messages */
};

int mbox_open(struct mbox **out, const char *path)
{
	struct mbox *mb;
	int fd;

	*out = NULL;
	if (!strcmp(path, "-")) {
		fd = STDIN_FILENO;
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return err_set_errno(err_from_errno(errno), "open %s",
					     path);
	}
	mb = xcalloc(1, sizeof(*mb));
	mb->fd = fd;
	mb->own_fd = fd != STDIN_FILENO;
	mb->blk = xmalloc(MBOX_BLOCK);
	printable_copy(mb->shown, sizeof(mb->shown), path, strlen(path));
	*out = mb;
	return 0;
}

void mbox_free(struct mbox *mb)
{
	if (!mb)
		return;
	if (mb->own_fd)
		close(mb->fd);
	free(mb->blk);
	free(mb);
}

size_t mbox_index(const struct mbox *mb)
{
	return mb->index;
}

/*
 * The next piece of a line: all of it, with its LF, when it fits in the
 * block (or the file ends without one), else a whole block of it
 * (*complete = 0).  So the start of a line is always seen with at least
 * min(its length, MBOX_BLOCK) bytes.  Returns 1, 0 at the end of the
 * file, or an error.
 */
static int segment(struct mbox *mb, const char **p, size_t *n, int *complete)
{
	const char *nl;
	ssize_t r;

	for (;;) {
		nl = memchr(mb->blk + mb->pos, '\n', mb->len - mb->pos);
		if (nl || (mb->eof && mb->pos < mb->len)) {
			*p = mb->blk + mb->pos;
			*n = nl ? (size_t)(nl + 1 - *p) : mb->len - mb->pos;
			mb->pos += *n;
			*complete = 1;
			return 1;
		}
		if (mb->eof)
			return 0;
		if (mb->pos == 0 && mb->len == MBOX_BLOCK) {
			*p = mb->blk;
			*n = mb->len;
			mb->pos = mb->len;
			*complete = 0;
			return 1;
		}
		memmove(mb->blk, mb->blk + mb->pos, mb->len - mb->pos);
		mb->len -= mb->pos;
		mb->pos = 0;
		r = read(mb->fd, mb->blk + mb->len, MBOX_BLOCK - mb->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return err_set_errno(err_from_errno(errno), "read %s",
					     mb->shown);
		if (r == 0)
			mb->eof = 1;
		mb->len += (size_t)r;
	}
}

/* "From " and something: a From_ line (at a line start after an empty
 * line, mboxrd quotes every other one). */
static int is_from_line(const char *p, size_t n)
{
	return n > 5 && !memcmp(p, "From ", 5) && p[5] != ' ' && p[5] != '\t' &&
	       p[5] != '\n' && p[5] != '\r';
}

static int is_empty_line(const char *p, size_t n)
{
	return (n == 1 && p[0] == '\n') ||
	       (n == 2 && p[0] == '\r' && p[1] == '\n');
}

/* Append what fits; past the cap the message is oversize. */
static void add(struct buf *msg, int *oversize, const char *p, size_t n)
{
	size_t room;

	if (*oversize)
		return;
	room = msg->max - msg->len;
	if (n <= room) {
		if (buf_add(msg, p, n))
			BUG("mbox: %zu bytes do not fit in %zu", n, room);
		return;
	}
	/* what fits, and no more: the buf's errors are sticky */
	if (buf_add(msg, p, room))
		BUG("mbox: %zu bytes do not fit in %zu", room, room);
	*oversize = 1;
}

int mbox_next(struct mbox *mb, struct buf *msg, int *oversize)
{
	const char *p;
	size_t n;
	int complete, rc;

	buf_reset(msg);
	*oversize = 0;
	if (!mb->started) {
		rc = segment(mb, &p, &n, &complete);
		if (rc < 0)
			return rc;
		if (!rc || !is_from_line(p, n))
			return err_set(PB_EINVAL,
				       "%s: not an mbox (it does not start "
				       "with a \"From \" line)",
				       mb->shown);
		mb->started = 1;
		mb->in_message = 1;
		mb->mid_line = mb->skip_line = !complete;
	}
	if (!mb->in_message)
		return err_set(PB_ENOTFOUND, "%s: no more messages", mb->shown);
	for (;;) {
		rc = segment(mb, &p, &n, &complete);
		if (rc < 0)
			return rc;
		if (!rc)
			break;
		if (mb->mid_line) {
			mb->mid_line = !complete;
			if (!mb->skip_line)
				add(msg, oversize, p, n);
			else if (complete)
				mb->skip_line = 0;
			continue;
		}
		if (mb->held_len && is_from_line(p, n)) {
			/* the separator and the next message's From_ line */
			mb->held_len = 0;
			mb->mid_line = mb->skip_line = !complete;
			mb->index++;
			return 0;
		}
		if (mb->held_len) {
			add(msg, oversize, mb->held, mb->held_len);
			mb->held_len = 0;
		}
		if (complete && is_empty_line(p, n)) {
			memcpy(mb->held, p, n);
			mb->held_len = n;
			continue;
		}
		/* mboxrd: ">From " -> "From ", ">>From " -> ">From " ... */
		if (p[0] == '>') {
			size_t i = 1;

			while (i < n && p[i] == '>')
				i++;
			if (n - i >= 5 && !memcmp(p + i, "From ", 5)) {
				p++;
				n--;
			}
		}
		add(msg, oversize, p, n);
		mb->mid_line = !complete;
	}
	/* the end of the file; a last empty line is the separator */
	mb->held_len = 0;
	mb->in_message = 0;
	mb->index++;
	return 0;
}
