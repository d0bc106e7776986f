/*
 * patchbridge-milter - the Postfix milter of patchbridge.
 *
 *	patchbridge-milter [-c FILE] [-f] [-p SOCKET] [-P PIDFILE] [-m UMASK]
 *	patchbridge-milter [-c FILE] --check
 *	patchbridge-milter [-c FILE] --test FILE.eml...
 *	patchbridge-milter [-c FILE] --header-checks [-o FILE]
 *
 * Thin on purpose: options, configuration, signals, then libmilter
 * (glue.c) or the test mode (testmode.c).  Exit codes: <sysexits.h>.
 *
 * Signals.  libmilter starts its own thread that sigwait()s for SIGHUP,
 * SIGTERM and SIGINT and stops the milter on any of them (sendmail's
 * libmilter/signal.c); we want SIGHUP to reload and a stop to drain
 * first.  The main thread never blocks the three signals and catches
 * them with a handler that only writes to a self-pipe, while smfi_main()
 * runs in a second thread created with the signals blocked (libmilter's
 * threads inherit that mask).  That alone is not enough: while the
 * handler runs, the signal is blocked in the main thread and the kernel
 * gives the next one to a thread that sigwait()s for it.  glue.c
 * therefore provides the sigwait() libmilter calls, waiting for its set
 * less these three, so only the main thread acts on them.
 * tests/milter/miltertest.sh checks this with a burst of SIGHUPs.
 *
 * Stop (SIGTERM, SIGINT): the unix socket is removed at once, so new
 * connections find the milter down and Postfix applies its
 * default_action; the messages in flight are finished - spooled and
 * answered - for up to MILTER_DRAIN_S seconds (glue_drain(); a message
 * whose SMTP client has not sent it yet is waited for only briefly, see
 * "The drain" in glue.c); then the process exits.  It does not wait for
 * smfi_main() to return: after smfi_stop() libmilter's listener looks at
 * its stop flag only every 5 s (and smfi_stop() itself waits for that, on
 * the listener's mutex), while after the drain no callback touches
 * anything any more, so there is nothing left to wait for.  Unless one
 * still runs when the time is up: then the process ends with _exit() at
 * once, releasing nothing that callback may be using.  (An inet: socket
 * cannot be removed: connections accepted during the drain are served
 * like the others.)
 * tests/milter/sigterm.sh checks this under load.
 *
 * Metrics: with [metrics] enabled the main thread writes the milter's
 * counters (core/metrics.h) every [metrics] milter_interval to
 * METRICS_MILTER_FILE in the spool directory, atomically, for the
 * daemon to serve on its /metrics: the milter opens no port of its own.
 *
 * systemd (Type=notify, util/sdnotify.h): READY=1 once the socket
 * accepts connections, RELOADING=1 and READY=1 around a reload,
 * STOPPING=1 at a stop; with WatchdogSec= the main thread sends
 * WATCHDOG=1 from its loop, but not while callbacks run and none has
 * finished for half the watchdog interval (glue_stalled()): a milter
 * stuck in a callback is then restarted by systemd.
 *
 * Reload: a new generation (mconf.h) is loaded from the same file and
 * installed; messages in flight finish with the one they started with.
 * A file with errors is refused with one log line per error and the old
 * generation is kept.  The socket, the umask, the I/O timeout and the
 * log level are read only at start.
 */
#include "core/config.h"
#include "core/metrics.h"
#include "core/preflight.h"
#include "core/version.h"
#include "mail/authres.h"
#include "mail/mail.h"
#include "milter/glue.h"
#include "milter/mconf.h"
#include "milter/session.h"
#include "milter/testmode.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/sdnotify.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#define PROG "patchbridge-milter"
/* Socket mode 0660: Postfix reaches it through the socket's group. */
#define SOCK_UMASK_DEFAULT 0117
/* How long a stop waits for the messages in flight (with libmilter's 5 s
 * stop poll, within the unit's TimeoutStopSec=30s). */
#define MILTER_DRAIN_S 20

/* The self-pipe: the signal handler and the serving thread write. */
static int wake_fd[2] = { -1, -1 };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [-c FILE] [-f] [-p SOCKET] [-P PIDFILE] "
		"[-m UMASK]\n"
		"       " PROG " [-c FILE] [--postfix-config DIR] --check\n"
		"       " PROG " [-c FILE] [--sender ADDR] [--queue-id ID] "
		"--test FILE.eml...\n"
		"       " PROG " [-c FILE] --header-checks [-o FILE]\n"
		"\n"
		"The Postfix milter of patchbridge: places list replies on the "
		"bridged\nseries they answer, spools them for the daemon and "
		"adds an\nX-Patchbridge header saying what it understood.\n"
		"\n"
		"Options:\n"
		"  -c, --config FILE   the configuration file (default: "
		"$%s,\n"
		"                      else %s)\n"
		"  -f, --foreground    log to stderr (else syslog, facility "
		"mail, in the\n"
		"                      background)\n"
		"  -p, --socket SPEC   listen here instead of [milter] socket "
		"(unix:/path;\n"
		"                      inet:port@host works but stalls ~40 ms "
		"twice a mail)\n"
		"  -P, --pidfile FILE  write the pid here once the socket "
		"accepts connections\n"
		"  -m, --umask UMASK   umask the unix socket is created with "
		"(default %04o:\n"
		"                      mode 0660, Postfix connects through "
		"the group)\n"
		"      --check         load the configuration, open the thread "
		"map and the\n"
		"                      spool as the milter would, check the "
		"files it names,\n"
		"                      the spool's owners and modes, the "
		"socket's directory\n"
		"                      and what Postfix connects to, then "
		"exit\n"
		"      --postfix-config DIR  the Postfix whose settings --check "
		"reads (default:\n"
		"                      postconf's, or $MAIL_CONFIG)\n"
		"      --test FILE...  run the callbacks on mail files without "
		"an MTA: classify,\n"
		"                      parse, spool, print the header that "
		"would be added\n"
		"      --sender ADDR   envelope sender for --test (default: "
		"<>)\n"
		"      --queue-id ID   queue id for --test (default: none)\n"
		"      --header-checks print the Postfix header_checks rule "
		"that removes\n"
		"                      every Authentication-Results field "
		"the milter takes\n"
		"                      as forged ([milter] "
		"trusted_authserv_id)\n"
		"  -o, --output FILE   write the --header-checks table to FILE "
		"(replaced\n"
		"                      whole, and only when it succeeds)\n"
		"  -V, --version       print the version\n"
		"  -h, --help          this help\n"
		"\n"
		"Signals: HUP reloads the configuration (a broken file is "
		"refused and the\nold one kept); TERM and INT remove the "
		"socket, finish the mails in flight\n(up to %d s) and "
		"stop.\n",
		CONFIG_ENV, CONFIG_DEFAULT_PATH, SOCK_UMASK_DEFAULT,
		MILTER_DRAIN_S);
}

static int load_exit_code(int rc)
{
	switch (rc) {
	case PB_EINVAL:
		return EX_CONFIG;
	case PB_ENOTFOUND:
		return EX_NOINPUT;
	case PB_EPERM:
		return EX_NOPERM;
	default:
		return EX_CANTCREAT;
	}
}

/* Load a generation; every problem goes to the log. */
static int load(struct mconf **out, const char *path)
{
	struct strlist errs = STRLIST_INIT;
	size_t i;
	int rc;

	rc = mconf_new(out, &errs, path);
	strlist_for_each (&errs, i)
		log_error("%s", errs.items[i]);
	if (rc && !errs.nr)
		log_error("%s", err_msg());
	strlist_release(&errs);
	return rc;
}

static int socket_ok(const char *spec)
{
	if (!strncmp(spec, "unix:/", 6) || !strncmp(spec, "local:/", 7))
		return 1;
	if (!strncmp(spec, "inet:", 5) || !strncmp(spec, "inet6:", 6)) {
		log_warn("listening on %s: over TCP, libmilter and Postfix "
			 "stall on Nagle's algorithm for ~40 ms twice per "
			 "mail; a unix: socket avoids it",
			 spec);
		return 1;
	}
	return 0;
}

/* The path of a unix socket spec, or NULL. */
static const char *socket_path(const char *spec)
{
	if (!strncmp(spec, "unix:", 5))
		return spec + 5;
	if (!strncmp(spec, "local:", 6))
		return spec + 6;
	return NULL;
}

/* A preflight problem's exit code. */
static int preflight_exit_code(int rc)
{
	switch (rc) {
	case PB_ENOTFOUND:
		return EX_NOINPUT;
	case PB_EPERM:
		return EX_NOPERM;
	default:
		return EX_CONFIG;
	}
}

static int run_check(const char *path, const char *sockspec,
		     const char *postfix_dir, mode_t sock_umask)
{
	struct preflight pf;
	struct mconf *c;
	struct store *st = NULL;
	enum mconf_map which;
	const struct config *cfg;
	const char *spec;
	size_t i;
	int rc, ex = EX_OK;

	rc = load(&c, path);
	if (rc)
		return load_exit_code(rc);
	cfg = mconf_view(c)->cfg;
	spec = sockspec ? sockspec : config_str(cfg, CFG_MILTER_SOCKET);
	if (!socket_ok(spec)) {
		/* the file's socket was checked when it loaded: -p's */
		log_error("bad milter socket %s", spec);
		mconf_unref(c);
		return sockspec ? EX_USAGE : EX_CONFIG;
	}
	rc = mconf_store_get(&st, &which, c);
	if (rc == PB_ENOTFOUND) {
		/* logged: replies are placed by Message-ID only */
		rc = 0;
	} else if (rc) {
		mconf_unref(c);
		return rc == PB_EPERM ? EX_NOPERM : EX_UNAVAILABLE;
	}
	if (st)
		log_info("thread map: %s", store_name(st));
	mconf_store_put(c, st, which, 0);
	/* What is around the configuration (preflight.h). */
	preflight_init(&pf);
	preflight_files(&pf, cfg, PREFLIGHT_MILTER);
	preflight_spool(&pf, cfg, PREFLIGHT_MILTER);
	preflight_socket(&pf, cfg, spec, postfix_dir, PREFLIGHT_MILTER,
			 sock_umask);
	strlist_for_each (&pf.warnings, i)
		log_warn("%s", pf.warnings.items[i]);
	strlist_for_each (&pf.problems, i)
		log_error("%s", pf.problems.items[i]);
	if (pf.problems.nr)
		ex = preflight_exit_code(pf.code);
	preflight_release(&pf);
	mconf_unref(c);
	if (!ex)
		printf("%s: ok\n", path);
	return ex;
}

/*
 * The header_checks table for the configured authserv-id: the same match
 * as the milter's own (authres.h), written as a Postfix regexp, to
 * stdout or, with out, into that file (replaced atomically: on a failure
 * the file is left as it was, or not made).  Without a trusted id the
 * milter believes no Authentication-Results field, so there is nothing
 * to remove: the table holds only a comment, which Postfix reads as
 * empty, and main.cf may name it before the id is chosen.
 */
static int run_header_checks(const char *path, const char *out)
{
	struct strlist errs = STRLIST_INIT;
	struct buf rule = BUF_INIT(4096);
	struct buf text = BUF_INIT(8192);
	struct config *cfg = NULL;
	const char *id;
	size_t i;
	int rc, ex = EX_OK;

	rc = config_load(&cfg, &errs, path);
	strlist_for_each (&errs, i)
		log_error("%s", errs.items[i]);
	if (rc) {
		if (!errs.nr)
			log_error("%s", err_msg());
		ex = load_exit_code(rc);
		goto out;
	}
	id = config_str(cfg, CFG_MILTER_TRUSTED_AUTHSERV_ID);
	if (!id[0]) {
		log_notice("%s: [milter] trusted_authserv_id is not set: no "
			   "Authentication-Results field is trusted, the "
			   "table removes none (run this again once it is "
			   "set)",
			   path);
		buf_adds(
			&text,
			"# [milter] trusted_authserv_id is not set: the milter "
			"trusts no\n"
			"# Authentication-Results field, so none is removed "
			"here.  Run\n"
			"# " PROG " --header-checks again once it is set "
			"(see\n# contrib/postfix/README.md).\n");
	} else {
		rc = authres_header_checks(&rule, id);
		if (rc) {
			log_error("%s", err_msg());
			ex = EX_SOFTWARE;
			goto out;
		}
		buf_addf(&text,
			 "# Remove every Authentication-Results field that "
			 "mentions the\n"
			 "# trusted authserv-id %s before any milter sees the "
			 "mail\n"
			 "# (generated by " PROG " --header-checks; see\n"
			 "# contrib/postfix/README.md).\n%s",
			 id, rule.data);
	}
	if (buf_error(&text)) {
		log_error("the header_checks table does not fit in memory");
		ex = EX_SOFTWARE;
		goto out;
	}
	if (!out) {
		fputs(text.data, stdout);
		if (fflush(stdout) || ferror(stdout)) {
			log_error("cannot write the table: %s",
				  strerror(errno));
			ex = EX_IOERR;
		}
	} else if (file_write_output(out, text.data, text.len, 0644)) {
		log_error("%s", err_msg());
		ex = EX_CANTCREAT;
	}
out:
	strlist_release(&errs);
	buf_release(&rule);
	buf_release(&text);
	config_free(cfg);
	return ex;
}

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (write(wake_fd[1], &c, 1) < 0) {
		/* full pipe: a wake-up is pending anyway */
	}
	errno = saved;
}

/* The serving thread: smfi_main(), then wake the main thread. */
static void *serve(void *arg)
{
	int *rc = arg;
	char c = 0;

	*rc = glue_run();
	if (*rc)
		log_error("%s", err_msg());
	if (write(wake_fd[1], &c, 1) < 0) {
		/* the main thread polls with a timeout as well */
	}
	return NULL;
}

static int setup_signals(void)
{
	struct sigaction sa;
	int i;

	if (pipe(wake_fd) < 0)
		return err_set_errno(PB_ERROR, "pipe");
	for (i = 0; i < 2; i++) {
		fcntl(wake_fd[i], F_SETFL,
		      fcntl(wake_fd[i], F_GETFL) | O_NONBLOCK);
		fcntl(wake_fd[i], F_SETFD, FD_CLOEXEC);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGHUP, &sa, NULL) || sigaction(SIGTERM, &sa, NULL) ||
	    sigaction(SIGINT, &sa, NULL))
		return err_set_errno(PB_ERROR, "sigaction");
	/*
	 * A write past a file size limit (RLIMIT_FSIZE, systemd's
	 * LimitFSIZE=) raises SIGXFSZ, whose default ends the process with
	 * every connection in it.  Ignored, the write fails with EFBIG
	 * instead: a spool record then tempfails, a mail kept in a file past
	 * [milter] memory_limit is cut there (session.h).
	 */
	signal(SIGXFSZ, SIG_IGN);
	return 0;
}

static void reload(const char *path)
{
	struct mconf *c;

	sdnotify_send("RELOADING=1");
	if (load(&c, path)) {
		log_error("reload: %s has errors; keeping the running "
			  "configuration",
			  path);
		sdnotify_send("READY=1");
		return;
	}
	mconf_install(c);
	log_notice("reload: configuration %s loaded (socket, umask, "
		   "timeout and log level and format changes need a "
		   "restart)",
		   path);
	sdnotify_send("READY=1");
}

/*
 * SIGTERM or SIGINT: no new connections, and the messages in flight
 * finished.  Signals that come meanwhile wait in the pipe.  Returns the
 * number of callbacks still running (see serve_forever()).
 */
static unsigned long stop(int sig, const char *sock_path)
{
	struct glue_drained d;

	log_notice("stopping (signal %d)", sig);
	if (sock_path && unlink(sock_path) < 0 && errno != ENOENT)
		log_warn("cannot remove the socket %s: %s", sock_path,
			 strerror(errno));
	glue_drain(&d, MILTER_DRAIN_S);
	if (d.messages)
		log_warn("%lu message(s) still in flight after %d s: "
			 "Postfix applies its default_action to them",
			 d.messages, MILTER_DRAIN_S);
	if (d.envelopes)
		log_notice("%lu message(s) not sent yet by their SMTP "
			   "clients were not waited for: Postfix applies its "
			   "default_action to them",
			   d.envelopes);
	return d.busy;
}

/*
 * Every [metrics] milter_interval (when enabled): the counters to the
 * spool directory's METRICS_MILTER_FILE, for the daemon.  *next is when
 * the next write is due (monotonic seconds); a failure is logged once
 * until a write works again.
 */
static void write_stats(int64_t now, int64_t *next, int *failing)
{
	struct mconf *c = mconf_current();
	const struct config *cfg;
	struct buf out = BUF_INIT(METRICS_MILTER_FILE_MAX);
	char *path = NULL;
	int rc;

	if (!c)
		return;
	cfg = mconf_view(c)->cfg;
	if (!config_bool(cfg, CFG_METRICS_ENABLED) || now < *next)
		goto out;
	*next = now +
		config_duration_ms(cfg, CFG_METRICS_MILTER_INTERVAL) / 1000;
	path = xasprintf("%s/%s", config_str(cfg, CFG_SPOOL_DIR),
			 METRICS_MILTER_FILE);
	metrics_set0(MET_MILTER_MEMORY_HELD, (double)session_memory_held());
	rc = metrics_render(&out, METRIC_MILTER);
	if (!rc)
		rc = file_write_atomic(path, out.data, out.len, 0640);
	if (rc && !*failing)
		log_warn("metrics: cannot write %s: %s (the daemon's "
			 "/metrics lacks the milter's counters meanwhile)",
			 path, err_msg());
	else if (!rc && *failing)
		log_notice("metrics: %s written again", path);
	*failing = rc != 0;
out:
	free(path);
	buf_release(&out);
	mconf_unref(c);
}

static int64_t mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec;
}

static int write_pidfile(const char *path)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "%ld\n", (long)getpid());

	return file_write_atomic(path, line, (size_t)n, 0644);
}

static int serve_forever(const char *path, const char *spec, int foreground,
			 const char *pidfile, mode_t sock_umask)
{
	struct mconf *c = mconf_current();
	const struct mconf_view *v = mconf_view(c);
	int timeout_s, serve_rc = 0, stopped = 0, done = 0;
	int stats_failing = 0;
	int64_t watchdog_ms = 0, next_stats = 0;
	unsigned long busy = 0;
	const char *sock_path = socket_path(spec);
	sigset_t block, old;
	pthread_t tid;
	int rc;

	timeout_s =
		(int)(config_duration_ms(v->cfg, CFG_MILTER_TIMEOUT) / 1000);
	mconf_unref(c);
	rc = glue_open(spec, timeout_s, sock_umask);
	if (rc) {
		struct preflight pf;
		size_t i;

		log_error("%s", err_msg());
		/* Why: the directory, its owner and mode, the fix. */
		preflight_init(&pf);
		preflight_socket_dir(&pf, spec);
		strlist_for_each (&pf.problems, i)
			log_error("%s", pf.problems.items[i]);
		preflight_release(&pf);
		return rc == PB_EINVAL ? EX_CONFIG : EX_UNAVAILABLE;
	}
	if (!foreground && daemon(0, 0) < 0) {
		log_error("cannot go to the background: %s", strerror(errno));
		return EX_OSERR;
	}
	/* After the fork: the notifications come from this process. */
	if (sdnotify_init())
		log_warn("systemd notification: %s", err_msg());
	watchdog_ms = sdnotify_watchdog_usec() / 1000;
	if (setup_signals()) {
		log_error("%s", err_msg());
		return EX_OSERR;
	}
	/* libmilter's threads must not take our signals: they inherit this
	 * mask from the serving thread. */
	sigemptyset(&block);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	rc = pthread_create(&tid, NULL, serve, &serve_rc);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		log_error("cannot start the serving thread: %s", strerror(rc));
		return EX_OSERR;
	}
	if (pidfile && write_pidfile(pidfile))
		log_warn("pid file %s: %s", pidfile, err_msg());
	log_notice("listening on %s (patchbridge %s)", spec, pb_version());
	sdnotify_send("READY=1");

	while (!done) {
		struct pollfd pfd = { wake_fd[0], POLLIN, 0 };
		char sigs[64];
		ssize_t n, i;
		int wait_ms = 1000;

		/* progress: every callback that started has finished, or
		 * some finish */
		if (watchdog_ms) {
			if (!glue_stalled(watchdog_ms / 2))
				sdnotify_watchdog();
			if (wait_ms > watchdog_ms / 4)
				wait_ms = (int)(watchdog_ms / 4);
		}
		write_stats(mono_s(), &next_stats, &stats_failing);
		if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR)
			break;
		n = read(wake_fd[0], sigs, sizeof(sigs));
		for (i = 0; i < n && !done; i++) {
			if (sigs[i] == SIGHUP) {
				reload(path);
			} else if (sigs[i] == SIGTERM || sigs[i] == SIGINT) {
				sdnotify_send("STOPPING=1");
				busy = stop(sigs[i], sock_path);
				stopped = done = 1;
			} else if (sigs[i] == 0) {
				done = 1;
			}
		}
	}
	/* After a stop the serving thread is left in libmilter's listener
	 * (see the top of this file); otherwise smfi_main() has failed. */
	if (!stopped) {
		pthread_join(tid, NULL);
		if (sock_path)
			unlink(sock_path);
	}
	if (pidfile)
		unlink(pidfile);
	if (busy) {
		/*
		 * A callback outlasted the drain (a stalled disk, a huge
		 * parse) and still uses the configuration, the spool and
		 * GMime: main()'s teardown would free them under it.  End
		 * here instead, as a crash would, and as safely: Postfix
		 * applies default_action to its message, and a record left
		 * half-written stays in tmp/ where no reader looks.  Nothing
		 * needs flushing: the log's stderr is unbuffered and each
		 * syslog() line is sent as it is made.
		 */
		log_warn("%lu callback(s) still running after %d s: exiting "
			 "without releasing what they use",
			 busy, MILTER_DRAIN_S);
		log_notice("stopped");
		fflush(stderr);
		_exit(EX_OK);
	}
	log_notice("stopped");
	return stopped || !serve_rc ? EX_OK : EX_SOFTWARE;
}

int main(int argc, char **argv)
{
	enum {
		OPT_CHECK = 256,
		OPT_TEST,
		OPT_SENDER,
		OPT_QUEUE_ID,
		OPT_POSTFIX_CONFIG,
		OPT_HEADER_CHECKS,
	};
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 'p' },
		{ "pidfile", required_argument, NULL, 'P' },
		{ "umask", required_argument, NULL, 'm' },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "test", no_argument, NULL, OPT_TEST },
		{ "sender", required_argument, NULL, OPT_SENDER },
		{ "queue-id", required_argument, NULL, OPT_QUEUE_ID },
		{ "postfix-config", required_argument, NULL,
		  OPT_POSTFIX_CONFIG },
		{ "header-checks", no_argument, NULL, OPT_HEADER_CHECKS },
		{ "output", required_argument, NULL, 'o' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *sockspec = NULL, *pidfile = NULL;
	const char *sender = NULL, *queue_id = NULL, *postfix_dir = NULL;
	const char *output = NULL;
	char abspath[PATH_MAX], libv[32];
	int foreground = 0, check = 0, test = 0, hchecks = 0, opt, rc, ex;
	mode_t sock_umask = SOCK_UMASK_DEFAULT;
	struct mconf *c;

	while ((opt = getopt_long(argc, argv, "c:fp:P:m:o:Vh", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'f':
			foreground = 1;
			break;
		case 'p':
			sockspec = optarg;
			break;
		case 'P':
			pidfile = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 'm': {
			char *end;
			unsigned long m = strtoul(optarg, &end, 8);

			if (!*optarg || *end || m > 0777) {
				fprintf(stderr, PROG ": bad umask %s\n",
					optarg);
				return EX_USAGE;
			}
			sock_umask = (mode_t)m;
			break;
		}
		case OPT_CHECK:
			check = 1;
			break;
		case OPT_TEST:
			test = 1;
			break;
		case OPT_SENDER:
			sender = optarg;
			break;
		case OPT_QUEUE_ID:
			queue_id = optarg;
			break;
		case OPT_POSTFIX_CONFIG:
			postfix_dir = optarg;
			break;
		case OPT_HEADER_CHECKS:
			hchecks = 1;
			break;
		case 'V':
			glue_version(libv, sizeof(libv));
			printf(PROG " %s (libmilter %s)\n", pb_version(), libv);
			return EX_OK;
		case 'h':
			usage(stdout);
			return EX_OK;
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if ((test ? optind == argc : optind != argc) || (output && !hchecks)) {
		usage(stderr);
		return EX_USAGE;
	}
	if (!path)
		path = getenv(CONFIG_ENV);
	if (!path || !*path)
		path = CONFIG_DEFAULT_PATH;
	/* daemon() changes to /: reloads must find the same file */
	if (!foreground && !check && !test && !hchecks && path[0] != '/' &&
	    realpath(path, abspath))
		path = abspath;

	log_open(PROG, foreground || check || test || hchecks ?
			       LOG_SINK_STDERR :
			       LOG_SINK_SYSLOG);
	if (check)
		return run_check(path, sockspec, postfix_dir, sock_umask);
	if (hchecks)
		return run_header_checks(path, output);

	/* GMime is set up once, before any thread starts (mail.h). */
	if (mail_init()) {
		log_error("cannot initialise the MIME parser");
		return EX_SOFTWARE;
	}
	rc = load(&c, path);
	if (rc) {
		mail_shutdown();
		return load_exit_code(rc);
	}
	/* [log] level: set once, before any thread (log.h) */
	rc = log_level_from_name(config_str(mconf_view(c)->cfg, CFG_LOG_LEVEL));
	if (rc >= 0)
		log_set_level(rc);
	rc = log_format_from_name(
		config_str(mconf_view(c)->cfg, CFG_LOG_FORMAT));
	if (rc >= 0)
		log_set_format((enum log_format)rc);
	metrics_start(METRIC_MILTER, pb_version());
	mconf_install(c);
	if (test) {
		ex = testmode_run(argv + optind, argc - optind, sender,
				  queue_id);
	} else {
		c = mconf_current();
		if (!sockspec)
			sockspec = config_str(mconf_view(c)->cfg,
					      CFG_MILTER_SOCKET);
		if (socket_ok(sockspec)) {
			ex = serve_forever(path, sockspec, foreground, pidfile,
					   sock_umask);
		} else {
			log_error("bad milter socket %s (unix:/path, "
				  "local:/path, inet:port@host)",
				  sockspec);
			ex = EX_USAGE;
		}
		mconf_unref(c);
	}
	mconf_install(NULL);
	mail_shutdown();
	log_close();
	return ex;
}
