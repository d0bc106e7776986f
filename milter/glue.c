#include "milter/glue.h"

#include "milter/session.h"
#include "util/err.h"
#include "util/log.h"

#include <libmilter/mfapi.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/*
 * libmilter's signal thread sigwait()s for SIGHUP, SIGTERM and SIGINT and
 * stops the milter on any of them at once (libmilter/signal.c).  We
 * handle all three in main.c instead: SIGHUP reloads, SIGTERM and SIGINT
 * drain first (glue_drain()).  Blocking them in libmilter's threads is
 * not enough: a thread inside sigwait() accepts the signals it waits
 * for, and while the main thread runs its handler (that signal blocked
 * there) the kernel hands the next one of a burst to the sigwait()ing
 * thread.  So the executable provides sigwait(): libmilter's call binds
 * to this definition, which waits for the same set less those three -
 * an empty set with Debian's libmilter, so its signal thread just sleeps.
 * Nothing else in the program calls sigwait().
 */
int sigwait(const sigset_t *set, int *sig)
{
	sigset_t wait = *set;
	int n;

	sigdelset(&wait, SIGHUP);
	sigdelset(&wait, SIGTERM);
	sigdelset(&wait, SIGINT);
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

/*
 * The drain.  With Debian's worker pool, smfi_stop() ends the serving of
 * every open connection at once (libmilter/worker.c looks at the stop
 * flag before each command), so Postfix would wait in vain for the
 * answers to messages in flight and apply its default_action to them.
 * So a stop does not go through smfi_stop(): glue_drain() waits until no
 * message's content is open and no callback runs.  Every callback passes
 * this gate: it counts itself in "busy" while it runs, and on the way
 * out moves its session's message between the counts below.
 * libmilter writes a callback's answer only after the callback returned,
 * so the drain also waits until no callback has left the gate for
 * GATE_QUIET_MS: without that, the answer to the last end of message
 * could be lost with the process.  Once the gate is closed a callback
 * touches nothing and parks until the process ends; Postfix then sees
 * the milter gone, as for any milter that is down.
 *
 * Which messages are waited for.  Postfix sends a message's header,
 * body and end-of-message events only once the whole message is in its
 * queue file (cleanup(8) inspects it from there), so from the first
 * header on the rest comes at local speed and the drain waits for it:
 * "messages".  Between MAIL FROM and that first event ("envelopes") the
 * message is still on its way from the SMTP client, which may be slow or
 * idle for minutes; waiting for it would keep the socket gone, and every
 * new list mail meeting Postfix's default_action, for the whole drain.
 * So envelopes get only GATE_ENVELOPE_MS to reach their content (a
 * client on the same network does, and the quiet time above covers one
 * that just began); after that the drain stops waiting for them, and
 * Postfix applies its default_action to each when its headers find the
 * milter gone - exactly what happens to a message whose connection came
 * after the socket was removed.  No mail is lost either way.
 *
 * A callback that outlasts the whole drain (an end of message fsyncing
 * on a stalled disk, a huge MIME parse) is reported in
 * glue_drained.busy: the caller must then end the process without
 * releasing anything that callback may be using (main.c).
 *
 * The waits use CLOCK_MONOTONIC (the condition variable is made with
 * that clock in gate_init()), so stepping the wall clock changes no
 * wait.
 */
#define GATE_QUIET_MS 200
#define GATE_ENVELOPE_MS 2000

/* Where a session's message is, for the gate. */
enum gate_phase {
	GATE_NONE, /* no message open */
	GATE_ENVELOPE, /* MAIL FROM seen, no header, body or end of header */
	GATE_CONTENT, /* content arriving: until the answer to end of message */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t idle; /* busy and messages reached 0 (gate_init) */
	pthread_cond_t never; /* parked callbacks wait here for good */
	unsigned long busy; /* callbacks running */
	unsigned long envelopes; /* messages in GATE_ENVELOPE */
	unsigned long messages; /* messages in GATE_CONTENT */
	int64_t last_leave; /* when a callback last left, mono_ms() */
	int64_t busy_since; /* when busy last went from 0 to 1 */
	int closed;
} gate = {
	PTHREAD_MUTEX_INITIALIZER,
	PTHREAD_COND_INITIALIZER, /* replaced by gate_init() */
	PTHREAD_COND_INITIALIZER,
	0,
	0,
	0,
	0,
	0,
	0,
};

static pthread_once_t gate_once = PTHREAD_ONCE_INIT;

/* Before any callback can run (glue_open()) and in glue_drain(). */
static void gate_init(void)
{
	pthread_condattr_t attr;

	if (pthread_condattr_init(&attr) ||
	    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) ||
	    pthread_cond_init(&gate.idle, &attr))
		BUG("cannot make a condition variable on CLOCK_MONOTONIC");
	pthread_condattr_destroy(&attr);
}

static int64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static enum gate_phase phase_of(const struct session *s)
{
	if (!s || !s->conf)
		return GATE_NONE;
	return s->nr_headers || s->in_body ? GATE_CONTENT : GATE_ENVELOPE;
}

static void gate_enter(void)
{
	pthread_mutex_lock(&gate.lock);
	while (gate.closed)
		pthread_cond_wait(&gate.never, &gate.lock);
	if (!gate.busy++)
		gate.busy_since = mono_ms();
	pthread_mutex_unlock(&gate.lock);
}

/* The count a message in phase p is in; NULL for GATE_NONE. */
static unsigned long *gate_count(enum gate_phase p)
{
	if (p == GATE_ENVELOPE)
		return &gate.envelopes;
	if (p == GATE_CONTENT)
		return &gate.messages;
	return NULL;
}

/* was: the session's phase when the callback began. */
static void gate_leave(enum gate_phase was, const struct session *s)
{
	enum gate_phase now = phase_of(s);

	pthread_mutex_lock(&gate.lock);
	gate.busy--;
	gate.last_leave = mono_ms();
	if (now != was && gate_count(was))
		(*gate_count(was))--;
	if (now != was && gate_count(now))
		(*gate_count(now))++;
	if (!gate.busy && !gate.messages)
		pthread_cond_broadcast(&gate.idle);
	pthread_mutex_unlock(&gate.lock);
}

int glue_stalled(int64_t limit_ms)
{
	int64_t since;
	int stalled;

	pthread_mutex_lock(&gate.lock);
	since = gate.last_leave > gate.busy_since ? gate.last_leave :
						    gate.busy_since;
	stalled = gate.busy && !gate.closed && mono_ms() - since > limit_ms;
	pthread_mutex_unlock(&gate.lock);
	return stalled;
}

/* Connections numbered for the logs until a queue id is known. */
static atomic_ulong connections;

static char filter_name[] = "patchbridge-milter";
static char macro_i[] = "i";
static char macro_i_braced[] = "{i}";
static char header_name[] = SESSION_HEADER_NAME;
static char authres_name[] = AUTHRES_FIELD_NAME;

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

/*
 * Each callback starts with open_cb() and ends with close_cb(): the
 * gate, the session (made on first use, unless only looked up) and the
 * thread's log correlation id.
 */
static struct session *open_cb(SMFICTX *ctx, int make, enum gate_phase *was)
{
	struct session *s;

	gate_enter();
	s = make ? get(ctx) : smfi_getpriv(ctx);
	*was = phase_of(s);
	return s;
}

static sfsistat close_cb(enum gate_phase was, const struct session *s,
			 sfsistat rc)
{
	gate_leave(was, s);
	log_ctx_clear();
	return rc;
}

static void enter(struct session *s)
{
	log_ctx_set(session_log_id(s));
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
	struct session *s;
	enum gate_phase was;

	(void)host;
	(void)addr;
	s = open_cb(ctx, 1, &was);
	return close_cb(was, s, s ? SMFIS_CONTINUE : SMFIS_ACCEPT);
}

static sfsistat cb_envfrom(SMFICTX *ctx, char **argv)
{
	enum gate_phase was;
	struct session *s = open_cb(ctx, 1, &was);

	if (!s)
		return close_cb(was, s, SMFIS_ACCEPT);
	enter(s);
	if (session_begin(s, argv && argv[0] ? argv[0] : "")) {
		log_error("%s: mail passed on without the bridge", err_msg());
		return close_cb(was, s, SMFIS_ACCEPT);
	}
	take_queue_id(ctx, s);
	return close_cb(was, s, SMFIS_CONTINUE);
}

static sfsistat cb_header(SMFICTX *ctx, char *name, char *value)
{
	enum gate_phase was;
	struct session *s = open_cb(ctx, 1, &was);

	if (!s)
		return close_cb(was, s, SMFIS_ACCEPT);
	enter(s);
	session_header(s, name ? name : "", value ? value : "");
	return close_cb(was, s, SMFIS_CONTINUE);
}

static sfsistat cb_eoh(SMFICTX *ctx)
{
	enum gate_phase was;
	struct session *s = open_cb(ctx, 1, &was);

	if (!s)
		return close_cb(was, s, SMFIS_ACCEPT);
	take_queue_id(ctx, s);
	session_eoh(s);
	return close_cb(was, s, SMFIS_CONTINUE);
}

static sfsistat cb_body(SMFICTX *ctx, unsigned char *data, size_t len)
{
	enum gate_phase was;
	struct session *s = open_cb(ctx, 1, &was);

	if (!s)
		return close_cb(was, s, SMFIS_ACCEPT);
	enter(s);
	session_body(s, data, len);
	return close_cb(was, s, SMFIS_CONTINUE);
}

/*
 * Delete the forged Authentication-Results fields (authres.h), from the
 * last to the first: Postfix counts the fields of a name as they stand
 * (cleanup_milter.c, cleanup_del_header()), so an earlier deletion would
 * shift the later indexes.
 */
static void remove_forged(SMFICTX *ctx, const struct session *s)
{
	const size_t *idx;
	size_t nr;

	idx = session_forged(s, &nr);
	while (nr--)
		if (smfi_chgheader(ctx, authres_name, (int)idx[nr], NULL) !=
		    MI_SUCCESS)
			log_warn("could not remove the forged %s field #%zu",
				 AUTHRES_FIELD_NAME, idx[nr]);
}

static sfsistat cb_eom(SMFICTX *ctx)
{
	enum gate_phase was;
	struct session *s = open_cb(ctx, 1, &was);
	struct session_outcome out;
	sfsistat rc = SMFIS_CONTINUE;

	if (!s)
		return close_cb(was, s, SMFIS_ACCEPT);
	take_queue_id(ctx, s);
	session_eom(&out, s);
	if (out.action == SESSION_TEMPFAIL) {
		/* Postfix's own "451 4.7.1 try again later": the reason is
		 * in our log, not for the sender */
		rc = SMFIS_TEMPFAIL;
	} else {
		remove_forged(ctx, s);
		if (out.header[0] &&
		    smfi_addheader(ctx, header_name, out.header) != MI_SUCCESS)
			/* spooled already: the header is only a courtesy */
			log_warn("could not add the %s header",
				 SESSION_HEADER_NAME);
	}
	session_end(s);
	return close_cb(was, s, rc);
}

static sfsistat cb_abort(SMFICTX *ctx)
{
	enum gate_phase was;
	struct session *s = open_cb(ctx, 0, &was);

	if (s) {
		enter(s);
		session_end(s);
	}
	return close_cb(was, s, SMFIS_CONTINUE);
}

static sfsistat cb_close(SMFICTX *ctx)
{
	enum gate_phase was;
	struct session *s = open_cb(ctx, 0, &was);

	if (s) {
		enter(s);
		smfi_setpriv(ctx, NULL);
		session_free(s);
	}
	return close_cb(was, NULL, SMFIS_CONTINUE);
}

static struct smfiDesc desc = {
	.xxfi_name = filter_name,
	.xxfi_version = SMFI_VERSION,
	.xxfi_flags = SMFIF_ADDHDRS | SMFIF_CHGHDRS,
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

	pthread_once(&gate_once, gate_init);
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

/* A CLOCK_MONOTONIC time in ms as gate.idle's deadline. */
static struct timespec mono_deadline(int64_t at_ms)
{
	struct timespec t;

	t.tv_sec = (time_t)(at_ms / 1000);
	t.tv_nsec = (long)(at_ms % 1000) * 1000000;
	return t;
}

void glue_drain(struct glue_drained *out, int timeout_s)
{
	int64_t start = mono_ms(), now, until;
	int64_t end = start + (int64_t)timeout_s * 1000;
	int64_t grace = start + GATE_ENVELOPE_MS;
	struct timespec ts;

	pthread_once(&gate_once, gate_init);
	pthread_mutex_lock(&gate.lock);
	for (;;) {
		now = mono_ms();
		if (now >= end)
			break;
		until = end;
		if (!gate.busy && !gate.messages) {
			if (gate.envelopes && now < grace) {
				/* a message may reach its content yet */
				if (grace < until)
					until = grace;
			} else if (now - gate.last_leave >= GATE_QUIET_MS) {
				break;
			} else if (gate.last_leave + GATE_QUIET_MS < until) {
				until = gate.last_leave + GATE_QUIET_MS;
			}
		}
		ts = mono_deadline(until);
		pthread_cond_timedwait(&gate.idle, &gate.lock, &ts);
	}
	gate.closed = 1;
	out->messages = gate.messages;
	out->envelopes = gate.envelopes;
	out->busy = gate.busy;
	pthread_mutex_unlock(&gate.lock);
}

void glue_version(char *buf, size_t size)
{
	unsigned int major = 0, minor = 0, pl = 0;

	smfi_version(&major, &minor, &pl);
	snprintf(buf, size, "%u.%u.%u", major, minor, pl);
}
