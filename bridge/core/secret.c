#include "core/secret.h"

#include "core/preflight.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/perm.h"
#include "util/printable.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Keep the optimiser from dropping the wipe of memory about to be freed. */
static void *(*volatile wipe_memset)(void *, int, size_t) = memset;

void secret_wipe(struct buf *b)
{
	if (b->alloc)
		wipe_memset(b->data, 0, b->alloc);
	buf_release(b);
}

/* "patchbridge:patchbridge": this program's user and group, the owners
 * a secret file must have for it (names, or numbers without one). */
static const char *owner_pair(char *out, size_t size)
{
	char scratch[4096];
	struct passwd pw, *u = NULL;
	struct group gr, *g = NULL;
	char uname[PERM_NAME_MAX], gname[PERM_NAME_MAX];

	if (geteuid() == 0) {
		struct preflight_owner o;

		/* Never "chown root:root": the documented owner. */
		preflight_owner_dirs(&o, NULL, NULL, 0);
		snprintf(out, size, "%s:%s", o.user, o.group);
		return out;
	}
	if (getpwuid_r(geteuid(), &pw, scratch, sizeof(scratch), &u) || !u)
		snprintf(uname, sizeof(uname), "%lu", (unsigned long)geteuid());
	else
		snprintf(uname, sizeof(uname), "%s", u->pw_name);
	if (getgrgid_r(getegid(), &gr, scratch, sizeof(scratch), &g) || !g)
		snprintf(gname, sizeof(gname), "%lu", (unsigned long)getegid());
	else
		snprintf(gname, sizeof(gname), "%s", g->gr_name);
	snprintf(out, size, "%s:%s", uname, gname);
	return out;
}

int secret_open(int *out, const char *path)
{
	char p[PB_LOG_QUOTE_MAX], who[2 * PERM_NAME_MAX + 2];
	char me[PERM_NAME_MAX], owner[PERM_NAME_MAX];
	struct stat st;
	int fd, rc;

	*out = -1;
	printable_copy(p, sizeof(p), path, strlen(path));
	owner_pair(who, sizeof(who));
	/* Non-blocking: a FIFO at the name must not hang the start; it is
	 * refused below as not a regular file. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;

		if (e == EACCES)
			return err_set(PB_EPERM,
				       "secret file %s: %s: %s may not read "
				       "it: chown %s %s; chmod 0600 %s",
				       p, strerror(e),
				       perm_user(me, sizeof(me), geteuid()),
				       who, p, p);
		errno = e;
		return err_set_errno(err_from_errno(e), "secret file %s", p);
	}
	if (fstat(fd, &st) < 0) {
		rc = err_set_errno(PB_ETEMP, "secret file %s", p);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = err_set(PB_EINVAL,
			     "secret file %s: not a regular file: write the "
			     "secret into one: install -o %.*s -g %s -m 0600 "
			     "/dev/null %s",
			     p, (int)strcspn(who, ":"), who,
			     strchr(who, ':') + 1, p);
		goto out;
	}
	/* Owned by root or this user: whoever owns it may change its mode
	 * and what it says. */
	if (st.st_uid != 0 && geteuid() == 0) {
		perm_user(owner, sizeof(owner), st.st_uid);
		owner[strcspn(owner, " ")] = '\0';
		rc = err_set(PB_EPERM,
			     "secret file %s: owned by %s, and this program "
			     "runs as root, which trusts only root's files: "
			     "run the program as %s, not as root: "
			     "runuser -u %s -- COMMAND",
			     p, owner, owner, owner);
		goto out;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		rc = err_set(PB_EPERM,
			     "secret file %s: owned by %s, not by this "
			     "program's user %s: chown %s %s; chmod 0600 %s",
			     p, perm_user(owner, sizeof(owner), st.st_uid),
			     perm_user(me, sizeof(me), geteuid()), who, p, p);
		goto out;
	}
	/* As ssh treats a private key: the milter's group must never read
	 * a credential that can act on the forge. */
	if (st.st_mode & 077) {
		rc = err_set(PB_EPERM,
			     "secret file %s: mode %04o lets the group or "
			     "others in: chown %s %s; chmod 0600 %s",
			     p, (unsigned)(st.st_mode & 07777), who, p, p);
		goto out;
	}
	/* In directories nobody else may write: a replaced token file
	 * would act as someone else. */
	rc = perm_check_trusted(fd, path);
	if (rc)
		rc = err_prefix(PB_EPERM, "secret file");
out:
	if (rc)
		close(fd);
	else
		*out = fd;
	return rc;
}

/*
 * Drop to uid and gid with the user's supplementary groups, as the
 * service manager starts the daemon.  Returns 0 or -1 (errno).
 */
static int become(uid_t uid, gid_t gid)
{
	char scratch[4096];
	struct passwd pw, *found = NULL;

	if (getpwuid_r(uid, &pw, scratch, sizeof(scratch), &found) == 0 &&
	    found) {
		if (initgroups(found->pw_name, gid) < 0)
			return -1;
	} else if (setgroups(0, NULL) < 0) {
		return -1;
	}
	if (setgid(gid) < 0 || setuid(uid) < 0)
		return -1;
	/* Never back: the check must see only what uid may do. */
	if (uid != 0 && setuid(0) == 0)
		return -1;
	return 0;
}

/* secret_read() into a buffer of its own, wiped. */
static int read_and_wipe(const char *path, size_t max, secret_text_fn check)
{
	struct buf b = BUF_INIT(SECRET_MAX + 1);
	int rc = secret_read(&b, path, max);

	if (!rc && check) {
		rc = check(b.data, b.len);
		if (rc)
			err_prefix(rc, "secret file %s", path);
	}
	secret_wipe(&b);
	return rc;
}

int secret_key32_b64(const char *text, size_t len)
{
	size_t i;

	for (i = 0; len == 44 && i < 43; i++)
		if (!isalnum((unsigned char)text[i]) && text[i] != '+' &&
		    text[i] != '/')
			break;
	if (len != 44 || i != 43 || text[43] != '=')
		return err_set(PB_EINVAL,
			       "not an ed25519 private key (the base64 of 32 "
			       "bytes, as patatt genkey writes)");
	return 0;
}

int secret_check_as(uid_t uid, gid_t gid, const char *path, size_t max)
{
	return secret_check_text_as(uid, gid, path, max, NULL);
}

int secret_check_text_as(uid_t uid, gid_t gid, const char *path, size_t max,
			 secret_text_fn check)
{
	char msg[PB_ERRMSG_MAX];
	int fds[2], status, rc;
	ssize_t n;
	size_t got = 0;
	pid_t pid;

	if (uid == geteuid() && gid == getegid())
		return read_and_wipe(path, max, check);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_set_errno(PB_ETEMP, "pipe");
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return err_set_errno(PB_ETEMP, "fork");
	}
	if (pid == 0) {
		/* The child: the daemon's own check, its message back. */
		close(fds[0]);
		if (become(uid, gid) < 0) {
			rc = err_set_errno(PB_EPERM, "cannot become uid %lu",
					   (unsigned long)uid);
		} else {
			rc = read_and_wipe(path, max, check);
		}
		if (rc && fd_write_all(fds[1], err_msg(), strlen(err_msg())))
			_exit(127);
		_exit(rc ? -rc : 0);
	}
	close(fds[1]);
	while (got < sizeof(msg) - 1) {
		n = read(fds[0], msg + got, sizeof(msg) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	msg[got] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return err_set_errno(PB_ERROR, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 127)
		return err_set(PB_ERROR,
			       "secret file: the check as uid %lu "
			       "did not finish",
			       (unsigned long)uid);
	if (!WEXITSTATUS(status))
		return 0;
	return err_set(-(int)WEXITSTATUS(status), "%s", msg);
}

int secret_read(struct buf *out, const char *path, size_t max)
{
	char p[PB_LOG_QUOTE_MAX];
	struct buf raw = BUF_INIT(0);
	size_t n;
	int fd = -1, rc;

	if (!max)
		max = SECRET_MAX;
	buf_reset(out);
	printable_copy(p, sizeof(p), path, strlen(path));
	raw.max = max + 2; /* room for the CRLF */
	rc = secret_open(&fd, path);
	if (rc)
		goto out;
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
