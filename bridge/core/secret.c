#include "core/secret.h"

#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/perm.h"
#include "util/printable.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Keep the optimiser from dropping the wipe of memory about to be freed. */
static void *(*volatile wipe_memset)(void *, int, size_t) = memset;

void secret_wipe(struct buf *b)
{
	if (b->alloc)
		wipe_memset(b->data, 0, b->alloc);
	buf_release(b);
}

int secret_read(struct buf *out, const char *path, size_t max)
{
	char p[PB_LOG_QUOTE_MAX];
	struct buf raw = BUF_INIT(0);
	struct stat stb;
	size_t n;
	int fd = -1, rc;

	if (!max)
		max = SECRET_MAX;
	buf_reset(out);
	printable_copy(p, sizeof(p), path, strlen(path));
	raw.max = max + 2; /* room for the CRLF */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = err_set_errno(err_from_errno(errno), "secret file %s", p);
		goto out;
	}
	if (fstat(fd, &stb) < 0) {
		rc = err_set_errno(PB_ETEMP, "secret file %s", p);
		goto out;
	}
	if (!S_ISREG(stb.st_mode)) {
		rc = err_set(PB_EINVAL, "secret file %s: not a regular file",
			     p);
		goto out;
	}
	if (stb.st_mode & 077) {
		rc = err_set(PB_EPERM,
			     "secret file %s: mode %04o lets the group or "
			     "others in; chmod 600 it",
			     p, (unsigned)(stb.st_mode & 07777));
		goto out;
	}
	/* Owned by root or this user, in directories nobody else may
	 * write: a replaced token file would act as someone else. */
	rc = perm_check_trusted(fd, path);
	if (rc) {
		rc = err_prefix(PB_EPERM, "secret file");
		goto out;
	}
	rc = fd_read_all(&raw, fd);
	if (rc == PB_ELIMIT) {
		rc = err_set(PB_EINVAL, "secret file %s: longer than %zu bytes",
			     p, max);
		goto out;
	}
	if (rc) {
		err_prefix(rc, "secret file %s", p);
		goto out;
	}
	n = raw.len;
	if (n && raw.data[n - 1] == '\n')
		n--;
	if (n && raw.data[n - 1] == '\r')
		n--;
	if (!n || n > max || !printable_check(raw.data, n)) {
		rc = err_set(PB_EINVAL,
			     "secret file %s: want one line of 1-%zu printable "
			     "ASCII characters",
			     p, max);
		goto out;
	}
	rc = buf_add(out, raw.data, n);
out:
	if (fd >= 0)
		close(fd);
	secret_wipe(&raw);
	return rc;
}
