#include "core/postfix.h"

#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Symbolic links followed while resolving one path (as Linux's 40). */
#define RESOLVE_LINKS_MAX 40

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Run postconf with args (argv[0] is filled in here), stdout into out,
 * stderr into err.  0 when it exited 0.
 */
static int run_postconf(struct buf *out, struct buf *err, const char **argv)
{
	static const char *const where[] = { "postconf", "/usr/sbin/postconf" };
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int rc = 0, wst = 0, over = 0, open_fds = 2, reaped = 0;
	long deadline;
	pid_t pid = -1;
	size_t i;

	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		rc = err_set_errno(PB_ERROR, "postconf: pipe");
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
						POSIX_SPAWN_SETSIGDEF);
	rc = ENOENT;
	for (i = 0; i < sizeof(where) / sizeof(where[0]) && rc == ENOENT; i++) {
		argv[0] = where[i];
		rc = posix_spawnp(&pid, argv[0], &fa, &attr,
				  (char *const *)argv, environ);
	}
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	if (rc) {
		errno = rc;
		rc = err_set_errno(rc == ENOENT ? PB_ENOTFOUND : PB_ERROR,
				   "cannot run postconf");
		pid = -1;
		goto out;
	}
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	fcntl(pe[0], F_SETFL, O_NONBLOCK);
	deadline = now_ms() + POSTFIX_TIMEOUT_MS;
	while (open_fds) {
		struct pollfd fds[2] = { { po[0], POLLIN, 0 },
					 { pe[0], POLLIN, 0 } };
		long left = deadline - now_ms();

		if (left <= 0)
			break;
		if (poll(fds, 2, (int)left) < 0 && errno != EINTR)
			break;
		if (po[0] >= 0 && fds[0].revents &&
		    !fd_drain(out, po[0], &over)) {
			close(po[0]);
			po[0] = -1;
			open_fds--;
		}
		if (pe[0] >= 0 && fds[1].revents &&
		    !fd_drain(err, pe[0], &over)) {
			close(pe[0]);
			pe[0] = -1;
			open_fds--;
		}
	}
	if (open_fds) {
		kill(pid, SIGKILL);
		waitpid(pid, &wst, 0);
		reaped = 1;
		rc = err_set(PB_ERROR, "postconf did not finish in %d s",
			     POSTFIX_TIMEOUT_MS / 1000);
		goto out;
	}
	while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
		;
	reaped = 1;
	if (over) {
		rc = err_set(PB_ELIMIT, "postconf printed more than %d bytes",
			     POSTFIX_OUTPUT_MAX);
		goto out;
	}
	if (!WIFEXITED(wst) || WEXITSTATUS(wst)) {
		char e[PB_LOG_QUOTE_MAX];

		buf_rtrim(err);
		for (i = 0; i < err->len; i++)
			if (err->data[i] == '\n')
				err->data[i] = ' ';
		rc = err_set(PB_ERROR, "postconf failed: %s",
			     err->len ? printable_copy(e, sizeof(e), err->data,
						       err->len) :
					"no message");
	}
out:
	if (pid > 0 && !reaped)
		waitpid(pid, &wst, 0);
	for (i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return rc;
}

/* "key = value" lines: calls fn for each; PB_EINVAL for other lines. */
static int each_line(const struct buf *b,
		     int (*fn)(void *arg, const char *key, size_t klen,
			       const char *val, size_t vlen),
		     void *arg)
{
	struct scan s;
	const char *line;
	size_t len;

	scan_init(&s, b->data, b->len);
	while (scan_line(&s, &line, &len)) {
		const char *eq = memchr(line, '=', len);
		const char *k = line, *v;
		size_t kl, vl;
		int rc;

		if (!len)
			continue;
		if (!eq)
			return err_set(PB_EINVAL, "postconf printed a line "
						  "without '='");
		kl = (size_t)(eq - line);
		v = eq + 1;
		vl = len - kl - 1;
		mem_trim(&k, &kl);
		mem_trim(&v, &vl);
		rc = fn(arg, k, kl, v, vl);
		if (rc)
			return rc;
	}
	return 0;
}

static int key_is(const char *k, size_t kl, const char *want)
{
	return kl == strlen(want) && !memcmp(k, want, kl);
}

static int take_main(void *arg, const char *k, size_t kl, const char *v,
		     size_t vl)
{
	char **f = arg; /* queue, config, owner, version, smtpd, non_smtpd */
	static const char *const names[] = {
		"queue_directory", "config_directory", "mail_owner",
		"mail_version",	   "smtpd_milters",    "non_smtpd_milters",
	};
	size_t i;

	for (i = 0; i < 6; i++)
		if (key_is(k, kl, names[i])) {
			free(f[i]);
			f[i] = xstrndup(v, vl);
		}
	return 0;
}

/* "svc/type/field": the service part ("svc/type") and the field. */
static int split_key(const char *k, size_t kl, size_t *svc_len,
		     const char **field, size_t *flen)
{
	size_t i = kl;

	while (i && k[i - 1] != '/')
		i--;
	if (!i)
		return 0;
	*svc_len = i - 1;
	*field = k + i;
	*flen = kl - i;
	return memchr(k, '/', *svc_len) != NULL;
}

static struct postfix_service *find_service(struct postfix_conf *pf,
					    size_t *alloc, const char *name,
					    size_t len, int create)
{
	size_t i;

	for (i = 0; i < pf->nr; i++)
		if (strlen(pf->services[i].name) == len &&
		    !memcmp(pf->services[i].name, name, len))
			return &pf->services[i];
	if (!create)
		return NULL;
	ALLOC_GROW(pf->services, pf->nr + 1, *alloc);
	memset(&pf->services[pf->nr], 0, sizeof(pf->services[0]));
	pf->services[pf->nr].name = xstrndup(name, len);
	return &pf->services[pf->nr++];
}

struct fields_arg {
	struct postfix_conf *pf;
	size_t alloc;
	int old_default; /* Postfix < 3.0: "-" chroot means y */
};

static int take_field(void *arg, const char *k, size_t kl, const char *v,
		      size_t vl)
{
	struct fields_arg *fa = arg;
	struct postfix_service *s;
	const char *f;
	size_t sl, fl, w;

	if (!split_key(k, kl, &sl, &f, &fl))
		return err_set(PB_EINVAL, "postconf -F printed a line that "
					  "names no service");
	s = find_service(fa->pf, &fa->alloc, k, sl, 1);
	if (key_is(f, fl, "chroot")) {
		s->chroot = vl == 1 &&
			    (v[0] == 'y' || (v[0] == '-' && fa->old_default));
	} else if (key_is(f, fl, "command")) {
		for (w = 0; w < vl && v[w] != ' ' && v[w] != '\t'; w++)
			;
		free(s->command);
		s->command = xstrndup(v, w);
	}
	return 0;
}

static int take_override(void *arg, const char *k, size_t kl, const char *v,
			 size_t vl)
{
	struct fields_arg *fa = arg;
	struct postfix_service *s;
	const char *f;
	size_t sl, fl;

	if (!split_key(k, kl, &sl, &f, &fl))
		return err_set(PB_EINVAL, "postconf -P printed a line that "
					  "names no service");
	s = find_service(fa->pf, &fa->alloc, k, sl, 0);
	if (!s || !s->param || !key_is(f, fl, s->param))
		return 0;
	free(s->milters);
	s->milters = xstrndup(v, vl);
	s->override = 1;
	return 0;
}

void postfix_conf_free(struct postfix_conf *pf)
{
	size_t i;

	if (!pf)
		return;
	for (i = 0; i < pf->nr; i++) {
		free(pf->services[i].name);
		free(pf->services[i].command);
		free(pf->services[i].milters);
	}
	free(pf->services);
	free(pf->config_dir);
	free(pf->queue_dir);
	free(pf->mail_owner);
	free(pf->version);
	free(pf);
}

/*
 * postconf [-c config_dir] args..., its output in o (reset first).  Its
 * stderr is only kept for the message of a failure.
 */
static int ask(struct buf *o, const char *config_dir, const char *const *args)
{
	struct buf e = BUF_INIT(POSTFIX_OUTPUT_MAX);
	const char *argv[16];
	int n = 1, rc;

	if (config_dir) {
		argv[n++] = "-c";
		argv[n++] = config_dir;
	}
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	buf_reset(o);
	rc = run_postconf(o, &e, argv);
	buf_release(&e);
	return rc;
}

int postfix_read(struct postfix_conf **out, const char *config_dir)
{
	static const char *const main_args[] = {
		"-x",
		"queue_directory",
		"config_directory",
		"mail_owner",
		"mail_version",
		"smtpd_milters",
		"non_smtpd_milters",
		NULL,
	};
	static const char *const raw_args[] = { "non_smtpd_milters", NULL };
	static const char *const f_args[] = { "-F", NULL };
	static const char *const p_args[] = { "-Px", NULL };
	struct buf o = BUF_INIT(POSTFIX_OUTPUT_MAX);
	struct postfix_conf *pf = xcalloc(1, sizeof(*pf));
	struct fields_arg fa = { pf, 0, 0 };
	char *f[6] = { NULL };
	size_t i, keep;
	int rc;

	*out = NULL;
	rc = ask(&o, config_dir, main_args);
	if (!rc)
		rc = each_line(&o, take_main, f);
	if (rc)
		goto out;
	pf->queue_dir = f[0];
	pf->config_dir = f[1];
	pf->mail_owner = f[2];
	pf->version = f[3];
	f[0] = f[1] = f[2] = f[3] = NULL;
	if (!pf->queue_dir || pf->queue_dir[0] != '/' || !pf->mail_owner ||
	    !pf->version) {
		rc = err_set(PB_EINVAL, "postconf did not print "
					"queue_directory, mail_owner and "
					"mail_version");
		goto out;
	}
	fa.old_default = pf->version[0] >= '0' && pf->version[0] <= '2' &&
			 pf->version[1] == '.';

	/* As written: does it follow smtpd_milters? */
	rc = ask(&o, config_dir, raw_args);
	if (rc)
		goto out;
	buf_rtrim(&o);
	pf->non_smtpd_follows =
		buf_eqs(&o, "non_smtpd_milters = $smtpd_milters") ||
		buf_eqs(&o, "non_smtpd_milters = ${smtpd_milters}") ||
		buf_eqs(&o, "non_smtpd_milters = $(smtpd_milters)");

	/* master.cf: which services run smtpd and cleanup, chrooted? */
	rc = ask(&o, config_dir, f_args);
	if (!rc)
		rc = each_line(&o, take_field, &fa);
	if (rc)
		goto out;
	for (i = 0; i < pf->nr; i++) {
		struct postfix_service *s = &pf->services[i];
		const char *c = s->command ? s->command : "";

		if (!strcmp(c, "smtpd")) {
			s->param = "smtpd_milters";
			s->milters = xstrdup(f[4] ? f[4] : "");
		} else if (!strcmp(c, "cleanup")) {
			s->param = "non_smtpd_milters";
			s->milters = xstrdup(f[5] ? f[5] : "");
		}
	}
	/* Their -o overrides. */
	rc = ask(&o, config_dir, p_args);
	if (!rc)
		rc = each_line(&o, take_override, &fa);
	if (rc)
		goto out;
	/* Only the services that talk to milters stay. */
	for (i = keep = 0; i < pf->nr; i++) {
		if (pf->services[i].param) {
			pf->services[keep++] = pf->services[i];
			continue;
		}
		free(pf->services[i].name);
		free(pf->services[i].command);
		free(pf->services[i].milters);
	}
	pf->nr = keep;
	*out = pf;
	pf = NULL;
out:
	for (i = 0; i < 6; i++)
		free(f[i]);
	postfix_conf_free(pf);
	buf_release(&o);
	return rc;
}

void postfix_milter_list_release(struct postfix_milter_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++) {
		free(l->v[i].endpoint);
		free(l->v[i].default_action);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int is_sep(int c)
{
	return c == ' ' || c == '\t' || c == ',' || c == '\r' || c == '\n';
}

int postfix_milters_parse(struct postfix_milter_list *out, const char *value)
{
	const char *p = value;

	memset(out, 0, sizeof(*out));
	for (;;) {
		struct postfix_milter m;
		size_t alloc = out->alloc;
		const char *t;
		int group = 0;

		while (*p && is_sep((unsigned char)*p))
			p++;
		if (!*p)
			return 0;
		memset(&m, 0, sizeof(m));
		if (*p == '{') {
			group = 1;
			p++;
			while (*p && is_sep((unsigned char)*p))
				p++;
		}
		t = p;
		while (*p && !is_sep((unsigned char)*p) && *p != '{' &&
		       *p != '}')
			p++;
		if (p == t || *p == '{' || (!group && *p == '}')) {
			postfix_milter_list_release(out);
			return err_set(PB_EINVAL, "a brace out of place in "
						  "the milter list");
		}
		m.endpoint = xstrndup(t, (size_t)(p - t));
		m.off = (size_t)(t - value);
		m.len = (size_t)(p - t);
		while (group) {
			while (*p && is_sep((unsigned char)*p))
				p++;
			if (*p == '}') {
				p++;
				break;
			}
			t = p;
			while (*p && !is_sep((unsigned char)*p) && *p != '}' &&
			       *p != '{')
				p++;
			if (!*t || *p == '{' || p == t) {
				free(m.endpoint);
				free(m.default_action);
				postfix_milter_list_release(out);
				return err_set(PB_EINVAL,
					       "an unclosed '{' in the milter "
					       "list");
			}
			if ((size_t)(p - t) > 15 &&
			    !memcmp(t, "default_action=", 15)) {
				free(m.default_action);
				m.default_action =
					xstrndup(t + 15, (size_t)(p - t) - 15);
			}
		}
		ALLOC_GROW(out->v, out->nr + 1, alloc);
		out->alloc = alloc;
		out->v[out->nr++] = m;
	}
}

/*
 * Append path's components to out, resolving "." and ".." lexically and
 * every symbolic link that exists against root ("" for the host's): the
 * path a process whose root directory is root reaches, as the host
 * names it.  out holds root + an absolute path within it ("" for the
 * root itself).
 */
static int resolve_under(struct buf *out, const char *root, const char *path,
			 int depth)
{
	const char *p = path;
	size_t rootlen = strlen(root);
	int rc;

	if (depth > RESOLVE_LINKS_MAX)
		return err_set(PB_EINVAL, "too many symbolic links");
	if (*p == '/') {
		buf_reset(out);
		rc = buf_adds(out, root);
		if (rc)
			return rc;
	}
	while (*p) {
		const char *c;
		size_t n, before;
		struct stat stb;

		while (*p == '/')
			p++;
		c = p;
		while (*p && *p != '/')
			p++;
		n = (size_t)(p - c);
		if (!n || (n == 1 && c[0] == '.'))
			continue;
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			while (out->len > rootlen &&
			       out->data[out->len - 1] != '/')
				out->len--;
			if (out->len > rootlen)
				out->len--;
			out->data[out->len] = '\0';
			continue;
		}
		before = out->len;
		rc = buf_addch(out, '/');
		if (!rc)
			rc = buf_add(out, c, n);
		if (rc)
			return rc;
		if (lstat(out->data, &stb) == 0 && S_ISLNK(stb.st_mode)) {
			char target[POSTFIX_PATH_MAX];
			ssize_t tl =
				readlink(out->data, target, sizeof(target) - 1);

			if (tl < 0)
				return err_set_errno(PB_ERROR, "readlink");
			target[tl] = '\0';
			buf_truncate(out, before);
			rc = resolve_under(out, root, target, depth + 1);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int postfix_resolve(struct buf *out, const struct postfix_conf *pf,
		    const struct postfix_service *s, const char *endpoint)
{
	struct buf queue = BUF_INIT(POSTFIX_PATH_MAX);
	const char *path, *root;
	int rc;

	if (!strncmp(endpoint, "unix:", 5))
		path = endpoint + 5;
	else if (!strncmp(endpoint, "local:", 6))
		path = endpoint + 6;
	else
		return err_set(PB_EINVAL, "not a unix: endpoint");
	if (!*path)
		return err_set(PB_EINVAL, "an empty unix: path");
	/* The jail as the host sees it (queue_directory may be a link). */
	rc = resolve_under(&queue, "", pf->queue_dir, 0);
	if (rc)
		goto out;
	root = s->chroot ? queue.data : "";
	buf_reset(out);
	if (path[0] != '/') {
		/* The working directory: queue_directory, or the jail's /. */
		rc = buf_adds(out, s->chroot ? root : queue.data);
		if (rc)
			goto out;
	}
	rc = resolve_under(out, root, path, 0);
	if (!rc && !out->len)
		rc = buf_addch(out, '/');
out:
	buf_release(&queue);
	return rc;
}

int postfix_resolve_own(struct buf *out, const char *spec)
{
	const char *path;
	int rc;

	if (!strncmp(spec, "unix:", 5))
		path = spec + 5;
	else if (!strncmp(spec, "local:", 6))
		path = spec + 6;
	else
		return err_set(PB_EINVAL, "not a unix: socket");
	if (path[0] != '/')
		return err_set(PB_EINVAL, "a unix: socket must be absolute");
	buf_reset(out);
	rc = resolve_under(out, "", path, 0);
	if (!rc && !out->len)
		rc = buf_addch(out, '/');
	return rc;
}

static int loopback(const char *h, size_t n)
{
	return (n == 9 && !memcmp(h, "localhost", 9)) ||
	       (n == 9 && !memcmp(h, "127.0.0.1", 9)) ||
	       (n == 3 && !memcmp(h, "::1", 3)) ||
	       (n == 5 && !memcmp(h, "[::1]", 5));
}

int postfix_inet_same(const char *endpoint, const char *spec)
{
	const char *eh, *ep, *sh, *sp, *at;
	size_t ehl, epl, shl, spl;

	if (strncmp(endpoint, "inet:", 5))
		return 0;
	eh = endpoint + 5;
	ep = strrchr(eh, ':');
	if (!ep) {
		/* "inet:port" */
		ep = eh;
		ehl = 0;
	} else {
		ehl = (size_t)(ep - eh);
		ep++;
	}
	epl = strlen(ep);
	if (!strncmp(spec, "inet:", 5))
		sp = spec + 5;
	else if (!strncmp(spec, "inet6:", 6))
		sp = spec + 6;
	else
		return 0;
	at = strchr(sp, '@');
	spl = at ? (size_t)(at - sp) : strlen(sp);
	sh = at ? at + 1 : "";
	shl = strlen(sh);
	if (epl != spl || memcmp(ep, sp, spl))
		return 0;
	if (!shl)
		return 1;
	if (ehl == shl && !memcmp(eh, sh, shl))
		return 1;
	return loopback(eh, ehl) && loopback(sh, shl);
}
