/*
 * test_milter - a small libmilter filter for the private Postfix test bed.
 *
 * For every message it adds, at the end of the header,
 *
 *     X-Test-Milter: seen qid=<Postfix queue id>
 *
 * and otherwise accepts everything.  It exists so that tests can prove a
 * message really went through the milter path of a Postfix instance
 * (smtpd_milters or non_smtpd_milters) and can match the archived copy to
 * the queue id Postfix logged.
 *
 * Usage: test_milter -p unix:/path/to.sock [-P pidfile] [-m umask]
 *                    [-d eom_delay_ms] [-t io_timeout_s] [-v]
 *                    [-A authserv-id -D domain [-D domain]...]
 *
 * With -A it also stands in for a DKIM/DMARC verifier pair, OpenDKIM
 * then OpenDMARC, placed before patchbridge-milter in smtpd_milters.  Like
 * them it inserts its fields with smfi_insheader(ctx, 1, ...), right
 * under Postfix's own Received: (opendkim.c dkimf_add_ar_fields,
 * opendmarc.c mlfi_eom), OpenDKIM's first and OpenDMARC's on top of it.
 * For a message whose From: domain is one of the -D domains:
 *
 *     Authentication-Results: <authserv-id>; dmarc=pass (p=none
 *             dis=none) header.from=<domain>
 *     Authentication-Results: <authserv-id>; dkim=pass header.d=<domain>
 *             header.i=@<domain>
 *
 * and for any other message dkim=none and dmarc=none (as OpenDKIM with
 * AlwaysAddARHeader).  Tests use it to play "this sender's signature
 * verified" without real keys and DNS.
 *
 * The socket is created with the given umask (default 0111, i.e. mode
 * 0666) so that Postfix's smtpd and cleanup (user postfix) can connect from
 * the very first connection.  The pid file, if asked for, is written only
 * after the socket exists: once it is there, the milter is ready.
 *
 * libmilter handles SIGTERM/SIGHUP (graceful stop) and SIGINT itself; its
 * listener checks the stop flag every 5 s, so expect up to ~5 s between
 * SIGTERM and exit.  Callers must wait for the pid, not sleep.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE 1

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <libmilter/mfapi.h>

#define QID_MAX 64
#define HELO_MAX 256
#define HDR_VALUE_MAX 128
#define FROM_MAX 512
#define DOMAINS_MAX 16

/* Per-connection state; only ever reached through smfi_getpriv(). */
struct conn_state {
	unsigned long conn_no;
	unsigned long msgs; /* messages completed on this connection */
	unsigned long headers; /* header fields seen in current message */
	unsigned long long body; /* body bytes seen in current message */
	char helo[HELO_MAX];
	char from[FROM_MAX]; /* From: of the current message, truncated */
};

static unsigned long conn_counter; /* atomically incremented */
static unsigned int eom_delay_ms;
static bool verbose;
static const char *ar_id; /* -A: act as a verifier with this authserv-id */
static const char *ar_domains[DOMAINS_MAX]; /* -D: domains that "pass" */
static size_t ar_ndomains;

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void logmsg(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "test_milter[%ld]: %s\n", (long)getpid(), buf);
}

/* Copy src into a fixed buffer, truncating and never overflowing. */
static void copy_bounded(char *dst, size_t dstsz, const char *src)
{
	size_t n;

	if (dstsz == 0)
		return;
	if (src == NULL)
		src = "";
	n = strnlen(src, dstsz - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static struct conn_state *get_state(SMFICTX *ctx)
{
	struct conn_state *st = smfi_getpriv(ctx);

	if (st != NULL)
		return st;
	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return NULL;
	st->conn_no = __atomic_add_fetch(&conn_counter, 1, __ATOMIC_RELAXED);
	if (smfi_setpriv(ctx, st) != MI_SUCCESS) {
		free(st);
		return NULL;
	}
	return st;
}

static void reset_message(struct conn_state *st)
{
	st->headers = 0;
	st->body = 0;
	st->from[0] = '\0';
}

/* The domain of the From: address: after the last '@', up to '>' or end. */
static void from_domain(char *dst, size_t dstsz, const char *from)
{
	const char *at = strrchr(from, '@');
	size_t n = 0;

	dst[0] = '\0';
	if (at == NULL)
		return;
	for (at++; *at && *at != '>' && *at != ' ' && n + 1 < dstsz; at++)
		dst[n++] = (char)(*at >= 'A' && *at <= 'Z' ? *at + 32 : *at);
	dst[n] = '\0';
}

static sfsistat add_auth_results(SMFICTX *ctx, struct conn_state *st)
{
	static char hname[] = "Authentication-Results";
	char dom[256], dkim[1024], dmarc[1024];
	size_t i;
	int pass = 0, n, m;

	from_domain(dom, sizeof(dom), st->from);
	for (i = 0; i < ar_ndomains; i++)
		if (dom[0] && strcmp(dom, ar_domains[i]) == 0)
			pass = 1;
	if (pass)
		n = snprintf(dkim, sizeof(dkim),
			     "%s; dkim=pass header.d=%s header.i=@%s", ar_id,
			     dom, dom);
	else
		n = snprintf(dkim, sizeof(dkim), "%s; dkim=none", ar_id);
	m = snprintf(dmarc, sizeof(dmarc),
		     "%s; dmarc=%s (p=none dis=none) header.from=%s", ar_id,
		     pass ? "pass" : "none", dom[0] ? dom : "unknown");
	if (n < 0 || (size_t)n >= sizeof(dkim) || m < 0 ||
	    (size_t)m >= sizeof(dmarc))
		return SMFIS_TEMPFAIL;
	/* OpenDKIM's, then OpenDMARC's on top of it */
	if (smfi_insheader(ctx, 1, hname, dkim) != MI_SUCCESS ||
	    smfi_insheader(ctx, 1, hname, dmarc) != MI_SUCCESS)
		return SMFIS_TEMPFAIL;
	return SMFIS_CONTINUE;
}

static sfsistat tm_connect(SMFICTX *ctx, char *hostname, _SOCK_ADDR *addr)
{
	struct conn_state *st = get_state(ctx);

	(void)addr;
	if (st == NULL)
		return SMFIS_TEMPFAIL;
	if (verbose)
		logmsg("conn %lu: connect from %s", st->conn_no,
		       hostname != NULL ? hostname : "?");
	return SMFIS_CONTINUE;
}

static sfsistat tm_helo(SMFICTX *ctx, char *name)
{
	struct conn_state *st = get_state(ctx);

	if (st == NULL)
		return SMFIS_TEMPFAIL;
	copy_bounded(st->helo, sizeof(st->helo), name);
	return SMFIS_CONTINUE;
}

static sfsistat tm_envfrom(SMFICTX *ctx, char **argv)
{
	struct conn_state *st = get_state(ctx);

	(void)argv;
	if (st == NULL)
		return SMFIS_TEMPFAIL;
	reset_message(st);
	return SMFIS_CONTINUE;
}

static sfsistat tm_header(SMFICTX *ctx, char *name, char *value)
{
	struct conn_state *st = get_state(ctx);

	if (st == NULL)
		return SMFIS_TEMPFAIL;
	if (strcasecmp(name, "From") == 0)
		copy_bounded(st->from, sizeof(st->from), value);
	st->headers++;
	return SMFIS_CONTINUE;
}

static sfsistat tm_body(SMFICTX *ctx, unsigned char *chunk, size_t len)
{
	struct conn_state *st = get_state(ctx);

	(void)chunk;
	if (st == NULL)
		return SMFIS_TEMPFAIL;
	st->body += len;
	return SMFIS_CONTINUE;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static sfsistat tm_eom(SMFICTX *ctx)
{
	static char hname[] = "X-Test-Milter";
	static char macro_i[] = "i"; /* libmilter wants non-const char * */
	struct conn_state *st = get_state(ctx);
	char qid[QID_MAX];
	char value[HDR_VALUE_MAX];
	int n;

	if (st == NULL)
		return SMFIS_TEMPFAIL;
	copy_bounded(qid, sizeof(qid), smfi_getsymval(ctx, macro_i));
	if (qid[0] == '\0')
		copy_bounded(qid, sizeof(qid), "unknown");
	if (eom_delay_ms > 0)
		sleep_ms(eom_delay_ms);
	n = snprintf(value, sizeof(value), "seen qid=%s", qid);
	if (n < 0 || (size_t)n >= sizeof(value))
		return SMFIS_TEMPFAIL;
	if (smfi_addheader(ctx, hname, value) != MI_SUCCESS) {
		logmsg("conn %lu: smfi_addheader failed", st->conn_no);
		return SMFIS_TEMPFAIL;
	}
	if (ar_id != NULL && add_auth_results(ctx, st) != SMFIS_CONTINUE) {
		logmsg("conn %lu: smfi_insheader failed", st->conn_no);
		return SMFIS_TEMPFAIL;
	}
	st->msgs++;
	logmsg("conn %lu: qid=%s headers=%lu body=%llu helo=%s", st->conn_no,
	       qid, st->headers, st->body, st->helo[0] ? st->helo : "-");
	reset_message(st);
	return SMFIS_CONTINUE;
}

static sfsistat tm_abort(SMFICTX *ctx)
{
	struct conn_state *st = smfi_getpriv(ctx);

	if (st != NULL)
		reset_message(st);
	return SMFIS_CONTINUE;
}

static sfsistat tm_close(SMFICTX *ctx)
{
	struct conn_state *st = smfi_getpriv(ctx);

	if (st != NULL) {
		if (verbose)
			logmsg("conn %lu: close after %lu message(s)",
			       st->conn_no, st->msgs);
		smfi_setpriv(ctx, NULL);
		free(st);
	}
	return SMFIS_CONTINUE;
}

/* Write "<pid>\n" to path via a temporary file and rename(2). */
static int write_pidfile(const char *path)
{
	char tmp[PATH_MAX];
	char line[32];
	int fd, n, len;
	ssize_t w;

	n = snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	len = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	if (len < 0 || (size_t)len >= sizeof(line))
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	do {
		w = write(fd, line, (size_t)len);
	} while (w < 0 && errno == EINTR);
	if (w != (ssize_t)len || close(fd) != 0) {
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int parse_uint(const char *s, int base, unsigned long max,
		      unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, base);
	if (errno != 0 || end == s || *end != '\0' || v > max || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: test_milter -p unix:/path/to.sock [-P pidfile] "
			"[-m umask] [-d eom_delay_ms] [-t io_timeout_s] [-v]\n"
			"       [-A authserv-id -D domain [-D domain]...]\n");
}

int main(int argc, char **argv)
{
	static char filter_name[] = "test_milter";
	struct smfiDesc desc;
	char *conn = NULL;
	const char *pidfile = NULL;
	unsigned long sock_umask = 0111, timeout = 30, v;
	mode_t old_umask;
	int c, rc;

	while ((c = getopt(argc, argv, "p:P:m:d:t:vA:D:h")) != -1) {
		switch (c) {
		case 'p':
			conn = optarg;
			break;
		case 'P':
			pidfile = optarg;
			break;
		case 'm':
			if (parse_uint(optarg, 8, 0777, &sock_umask) != 0) {
				fprintf(stderr, "bad umask: %s\n", optarg);
				return 2;
			}
			break;
		case 'd':
			if (parse_uint(optarg, 10, 600000, &v) != 0) {
				fprintf(stderr, "bad delay: %s\n", optarg);
				return 2;
			}
			eom_delay_ms = (unsigned int)v;
			break;
		case 't':
			if (parse_uint(optarg, 10, 86400, &timeout) != 0 ||
			    timeout == 0) {
				fprintf(stderr, "bad timeout: %s\n", optarg);
				return 2;
			}
			break;
		case 'v':
			verbose = true;
			break;
		case 'A':
			ar_id = optarg;
			break;
		case 'D':
			if (ar_ndomains == DOMAINS_MAX) {
				fprintf(stderr, "too many -D domains\n");
				return 2;
			}
			ar_domains[ar_ndomains++] = optarg;
			break;
		default:
			usage();
			return c == 'h' ? 0 : 2;
		}
	}
	if (conn == NULL || optind != argc) {
		usage();
		return 2;
	}

	memset(&desc, 0, sizeof(desc));
	desc.xxfi_name = filter_name;
	desc.xxfi_version = SMFI_VERSION;
	desc.xxfi_flags = SMFIF_ADDHDRS;
	desc.xxfi_connect = tm_connect;
	desc.xxfi_helo = tm_helo;
	desc.xxfi_envfrom = tm_envfrom;
	desc.xxfi_header = tm_header;
	desc.xxfi_body = tm_body;
	desc.xxfi_eom = tm_eom;
	desc.xxfi_abort = tm_abort;
	desc.xxfi_close = tm_close;

	if (smfi_setconn(conn) != MI_SUCCESS) {
		logmsg("smfi_setconn(%s) failed", conn);
		return 1;
	}
	if (smfi_register(desc) != MI_SUCCESS) {
		logmsg("smfi_register failed");
		return 1;
	}
	smfi_setbacklog(64);
	smfi_settimeout((int)timeout);

	/* The socket gets its mode from the umask at creation time. */
	old_umask = umask((mode_t)sock_umask);
	rc = smfi_opensocket(true);
	umask(old_umask);
	if (rc != MI_SUCCESS) {
		logmsg("cannot open socket %s", conn);
		return 1;
	}
	if (pidfile != NULL && write_pidfile(pidfile) != 0) {
		logmsg("cannot write pid file %s: %s", pidfile,
		       strerror(errno));
		return 1;
	}
	logmsg("listening on %s", conn);

	rc = smfi_main();
	/* libmilter leaves the unix socket behind; remove it. */
	if (strncmp(conn, "unix:", 5) == 0)
		unlink(conn + 5);
	else if (strncmp(conn, "local:", 6) == 0)
		unlink(conn + 6);
	if (pidfile != NULL)
		unlink(pidfile);
	logmsg("stopped (%s)", rc == MI_SUCCESS ? "ok" : "error");
	return rc == MI_SUCCESS ? 0 : 1;
}
