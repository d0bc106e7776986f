#include "util/dirwatch.h"

#include "util/err.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <unistd.h>

struct dirwatch {
	int fd;
};

int dirwatch_open(struct dirwatch **out, const char *dir)
{
	struct dirwatch *w;
	int fd, e;

	*out = NULL;
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0)
		return err_set_errno(errno == EMFILE || errno == ENFILE ?
					     PB_ELIMIT :
					     PB_ERROR,
				     "inotify_init1");
	if (inotify_add_watch(fd, dir, IN_MOVED_TO | IN_CREATE | IN_ONLYDIR) <
	    0) {
		e = errno;
		close(fd);
		errno = e;
		return err_set_errno(e == ENOENT || e == ENOTDIR ?
					     PB_ENOTFOUND :
				     e == ENOSPC ? PB_ELIMIT :
						   PB_ERROR,
				     "watch %s", dir);
	}
	w = xcalloc(1, sizeof(*w));
	w->fd = fd;
	*out = w;
	return 0;
}

void dirwatch_free(struct dirwatch *w)
{
	if (!w)
		return;
	close(w->fd);
	free(w);
}

int dirwatch_fd(const struct dirwatch *w)
{
	return w->fd;
}

int dirwatch_drain(struct dirwatch *w)
{
	/* aligned as inotify(7) asks; the events themselves are not read */
	char buf[4096]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	int seen = 0;

	for (;;) {
		n = read(w->fd, buf, sizeof(buf));
		if (n > 0) {
			seen = 1;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		/* EAGAIN: drained; anything else: say so, the caller looks */
		if (n < 0 && errno != EAGAIN)
			seen = 1;
		return seen;
	}
}
