/*
 * glue - the only module that talks to libmilter.
 *
 * It turns libmilter's callbacks into session.h calls and nothing more
 * (the logic lives in session.c and runs from files in the test mode, as
 * in OpenDMARC), and wraps the start-up calls so main.c stays free of
 * libmilter types.
 *
 * Per-connection state lives only behind smfi_setpriv(): Debian's
 * libmilter is built with its worker pool (_FFR_WORKERS_POOL, sendmail's
 * libmilter/worker.c), so successive callbacks of one SMTP session may
 * run on different threads.  Each callback
 * sets the thread's log correlation id from the session and clears it
 * before returning.
 *
 * What Postfix is told (docs/DESIGN.md rules 1 and 2): CONTINUE, with an
 * X-Patchbridge header for a bridged reply (SMFIF_ADDHDRS); TEMPFAIL only
 * when a relevant mail could not be spooled; ACCEPT when the milter
 * cannot even keep state for a connection.  Never REJECT.
 *
 * Stopping: glue_drain() waits for the messages in flight to be answered
 * (their spool records written) and then lets no callback do anything
 * more; the process may exit then, without stopping libmilter (see "The
 * drain" in glue.c and main.c) - at once, without releasing anything, if
 * a callback still runs.
 *
 * Thread safety: glue_open() and glue_run() are called from one thread;
 * glue_drain() from another one (main.c's).
 * Errors: PB_EINVAL for a bad socket spec, PB_ERROR when libmilter
 * refuses (err_msg() says which call).
 */
#ifndef PB_MILTER_GLUE_H
#define PB_MILTER_GLUE_H

#include <stdint.h>
#include <sys/types.h>

/*
 * Register the filter, set the socket ("unix:/path", "local:/path",
 * "inet:port@host" ...) and I/O timeout, and create the socket now
 * (smfi_opensocket, removing a stale one) with sock_umask in force, so
 * Postfix can connect from the first connection and a bad spec fails at
 * start-up.
 */
int glue_open(const char *socket, int timeout_s, mode_t sock_umask);

/* Serve: smfi_main(); returns only on a fatal listener error. */
int glue_run(void);

/* What glue_drain() left behind when it closed the gate. */
struct glue_drained {
	/* messages whose content Postfix was sending (time ran out) */
	unsigned long messages;
	/* messages still between MAIL FROM and their first header: not
	 * waited for after a short grace (see "The drain" in glue.c) */
	unsigned long envelopes;
	/* callbacks still running: the process must end without releasing
	 * the configuration, GMime or the log (main.c) */
	unsigned long busy;
};

/*
 * Wait up to timeout_s seconds until no message is open from its first
 * header to the answer to its end of message (or an abort), no callback
 * runs and none has returned for a moment (libmilter writes the answer
 * after the callback returns); messages that have not reached their
 * headers yet are waited for only briefly.  Then close the gate for
 * good: callbacks that come later do nothing and never return, so
 * Postfix sees the milter as down.  *out says what was still open.
 * Call it once, then exit.
 */
void glue_drain(struct glue_drained *out, int timeout_s);

/*
 * True when callbacks are running and none has finished for limit_ms:
 * the milter is stuck (a deadlock, a stalled disk), and main.c stops
 * answering systemd's watchdog so the service is restarted.  An idle
 * milter, or one whose callbacks keep finishing, is not stalled.
 */
int glue_stalled(int64_t limit_ms);

/* libmilter's version, "8.17.1" style, into buf. */
void glue_version(char *buf, size_t size);

#endif
