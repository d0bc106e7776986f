#include "milter/glue.h"

#include "milter/session.h"
#include "util/err.h"
#include "util/log.h"

#include <libmilter/mfapi.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/*
 * libmilter's signal thread sigwait()s for SIGHUP, SIGTERM and SIGINT and
 * stops the milter on any of them (libmilter/signal.c).  We reload on
 * SIGHUP instead, in main.c's handler.  Blocking SIGHUP in libmilter's
 * threads is not enough: a thread inside sigwait() accepts the signals it
 * waits for, and while the main thread runs its handler (SIGHUP blocked
 * there) the kernel hands the next SIGHUP of a burst to the sigwait()ing
 * thread, which stops the milter.  So the executable provides sigwait():
 * libmilter's call binds to this definition, which waits for the same set
 * less SIGHUP.  Nothing else in the program calls sigwait().
 */
int sigwait(const sigset_t *set, int *sig)
{
	sigset_t wait = *set;
	int n;

	sigdelset(&wait, SIGHUP);
	for (;;) {
		n = sigwaitinfo(&wait, NULL);
		if (n > 0) {
			*sig = n;
			return 0;
		}
		if (errno != EINTR)
			return errno;
	}
}

/* Connections numbered for the logs until a queue id is known. */
static atomic_ulong connections;

static char filter_name[] = "patchbridge-milter";
static char macro_i[] = "i";
static char macro_i_braced[] = "{i}";
static char header_name[] = SESSION_HEADER_NAME;

/* The session of a connection, made on first use if connect was missed. */
static struct session *get(SMFICTX *ctx)
{
	struct session *s = smfi_getpriv(ctx);

	if (s)
		return s;
	session_new(&s, atomic_fetch_add(&connections, 1) + 1);
	if (smfi_setpriv(ctx, s) != MI_SUCCESS) {
		log_error("smfi_setpriv failed: this connection's mail is "
			  "passed on without the bridge");
		session_free(s);
		return NULL;
	}
	return s;
}

static void enter(struct session *s)
{
	log_ctx_set(session_log_id(s));
}

static sfsistat leave(sfsistat rc)
{
	log_ctx_clear();
	return rc;
}

static void take_queue_id(SMFICTX *ctx, struct session *s)
{
	const char *qid = smfi_getsymval(ctx, macro_i);

	if (!qid)
		qid = smfi_getsymval(ctx, macro_i_braced);
	session_set_queue_id(s, qid);
	enter(s);
}

static sfsistat cb_connect(SMFICTX *ctx, char *host, _SOCK_ADDR *addr)
{
	(void)host;
	(void)addr;
	return get(ctx) ? SMFIS_CONTINUE : SMFIS_ACCEPT;
}

static sfsistat cb_envfrom(SMFICTX *ctx, char **argv)
{
	struct session *s = get(ctx);

	if (!s)
		return SMFIS_ACCEPT;
	enter(s);
	if (session_begin(s, argv && argv[0] ? argv[0] : "")) {
		log_error("%s: mail passed on without the bridge", err_msg());
		return leave(SMFIS_ACCEPT);
	}
	take_queue_id(ctx, s);
	return leave(SMFIS_CONTINUE);
}

static sfsistat cb_header(SMFICTX *ctx, char *name, char *value)
{
	struct session *s = get(ctx);

	if (!s)
		return SMFIS_ACCEPT;
	enter(s);
	session_header(s, name ? name : "", value ? value : "");
	return leave(SMFIS_CONTINUE);
}

static sfsistat cb_eoh(SMFICTX *ctx)
{
	struct session *s = get(ctx);

	if (!s)
		return SMFIS_ACCEPT;
	take_queue_id(ctx, s);
	session_eoh(s);
	return leave(SMFIS_CONTINUE);
}

static sfsistat cb_body(SMFICTX *ctx, unsigned char *data, size_t len)
{
	struct session *s = get(ctx);

	if (!s)
		return SMFIS_ACCEPT;
	enter(s);
	session_body(s, data, len);
	return leave(SMFIS_CONTINUE);
}

static sfsistat cb_eom(SMFICTX *ctx)
{
	struct session *s = get(ctx);
	struct session_outcome out;
	sfsistat rc = SMFIS_CONTINUE;

	if (!s)
		return SMFIS_ACCEPT;
	take_queue_id(ctx, s);
	session_eom(&out, s);
	if (out.action == SESSION_TEMPFAIL) {
		/* Postfix's own "451 4.7.1 try again later": the reason is
		 * in our log, not for the sender */
		rc = SMFIS_TEMPFAIL;
	} else if (out.header[0] &&
		   smfi_addheader(ctx, header_name, out.header) != MI_SUCCESS) {
		/* spooled already: the header is only a courtesy */
		log_warn("could not add the %s header", SESSION_HEADER_NAME);
	}
	session_end(s);
	return leave(rc);
}

static sfsistat cb_abort(SMFICTX *ctx)
{
	struct session *s = smfi_getpriv(ctx);

	if (s) {
		enter(s);
		session_end(s);
	}
	return leave(SMFIS_CONTINUE);
}

static sfsistat cb_close(SMFICTX *ctx)
{
	struct session *s = smfi_getpriv(ctx);

	if (s) {
		smfi_setpriv(ctx, NULL);
		session_free(s);
	}
	return SMFIS_CONTINUE;
}

static struct smfiDesc desc = {
	.xxfi_name = filter_name,
	.xxfi_version = SMFI_VERSION,
	.xxfi_flags = SMFIF_ADDHDRS,
	.xxfi_connect = cb_connect,
	.xxfi_envfrom = cb_envfrom,
	.xxfi_header = cb_header,
	.xxfi_eoh = cb_eoh,
	.xxfi_body = cb_body,
	.xxfi_eom = cb_eom,
	.xxfi_abort = cb_abort,
	.xxfi_close = cb_close,
};

int glue_open(const char *socket, int timeout_s, mode_t sock_umask)
{
	char spec[1100];
	mode_t old;
	int rc;

	if (strlen(socket) >= sizeof(spec))
		return err_set(PB_EINVAL, "socket spec too long");
	snprintf(spec, sizeof(spec), "%s", socket);
	if (smfi_register(desc) != MI_SUCCESS)
		return err_set(PB_ERROR, "smfi_register failed");
	if (smfi_setconn(spec) != MI_SUCCESS)
		return err_set(PB_EINVAL, "smfi_setconn refused %s", socket);
	if (smfi_settimeout(timeout_s) != MI_SUCCESS)
		return err_set(PB_ERROR, "smfi_settimeout(%d) failed",
			       timeout_s);
	smfi_setbacklog(128);
	/* The socket's mode comes from the umask when it is created. */
	old = umask(sock_umask);
	rc = smfi_opensocket(1);
	umask(old);
	if (rc != MI_SUCCESS)
		return err_set(PB_ERROR, "cannot create the socket %s", socket);
	return 0;
}

int glue_run(void)
{
	if (smfi_main() != MI_SUCCESS)
		return err_set(PB_ERROR, "smfi_main failed");
	return 0;
}

void glue_stop(void)
{
	smfi_stop();
}

void glue_version(char *buf, size_t size)
{
	unsigned int major = 0, minor = 0, pl = 0;

	smfi_version(&major, &minor, &pl);
	snprintf(buf, size, "%u.%u.%u", major, minor, pl);
}
