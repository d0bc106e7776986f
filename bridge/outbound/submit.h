/*
 * submit - hand a finished RFC 5322 message to the MTA.
 *
 * Two ways, chosen by [smtp] url:
 *
 *  - SMTP through libcurl: smtp://host[:port][/ehlo-name] (plain, or with
 *    STARTTLS required when opts->starttls is set: CURLUSESSL_ALL, never
 *    the downgradable "try"), or smtps://host[:port] (TLS from the first
 *    byte, RFC 8314).  Certificates are always verified (opts->ca_file or
 *    the system's store), TLS 1.2 at least.  AUTH (libcurl picks the best
 *    SASL mechanism the server offers) with username and password; the
 *    password never crosses the network in clear: submit_new() refuses
 *    credentials with plain smtp:// and no STARTTLS unless the host is a
 *    loopback address.  One submit object keeps its connection open
 *    between messages, so a series goes through one SMTP session.
 *  - a sendmail pipe: opts->sendmail_path is the program and any fixed
 *    arguments, split at blanks (no quoting, no shell), e.g.
 *    "/usr/sbin/sendmail -C /etc/postfix-out".  It runs as
 *    PROGRAM ARGS... -oi -f SENDER -- RCPT..., gets the message on its
 *    stdin, and its exit status is read as sysexits.h says.  Its stderr
 *    (bounded) becomes the error text.
 *
 * The message: msg[0..len) with LF or CRLF line ends, no NUL, no line
 * longer than 998 bytes (RFC 5322 2.1.1; like git send-email --validate,
 * rather than letting a relay fold a patch line).  SMTP gets it with
 * every line end made CRLF, because libcurl dot-stuffs only after CRLF
 * (RFC 5321 4.5.2: a lone "." after a bare LF could otherwise end the
 * data early); libcurl does the dot-stuffing and appends the final
 * ".".  sendmail gets it with LF line ends, its local convention, and -oi
 * so a "." line is data.  A CR right before a line end cannot survive
 * either way (it is the line end); other bytes arrive unchanged.
 *
 * Envelope addresses must be plain ASCII local@domain (dot-atom local
 * part, a DNS name or [address literal] after the @), at most PB_ADDR_MAX
 * bytes: nothing that could end an SMTP command line or a "<...>" early,
 * or pass for an option to sendmail.
 *
 * Results (RFC 5321 6.1: once the server says 250 to the end of data, the
 * message is its responsibility):
 *
 *	status          return      when
 *	ACCEPTED        0           250 to the end of data; sendmail exit 0
 *	TEMPFAIL        PB_ETEMP    4xx; connection refused or lost before
 *	                            the end of data; timeout before it; any
 *	                            session-level failure (greeting, EHLO,
 *	                            STARTTLS, TLS, AUTH failed or not
 *	                            offered while credentials are set, 530
 *	                            "authentication required"); sendmail exit
 *	                            EX_TEMPFAIL or EX_OSERR, or a local
 *	                            failure (as Postfix defers on a
 *	                            configuration error: not the message's
 *	                            fault, retry after it is fixed)
 *	REJECTED        PB_EINVAL   5xx to MAIL, to every RCPT, to DATA or to
 *	                            the end of data; any other sendmail exit
 *	                            status; a message or address we refuse
 *	                            to send (nothing was sent)
 *	UNKNOWN         PB_ETEMP    the whole message was handed over and no
 *	                            verdict came back (connection lost or
 *	                            timeout after the end of data; sendmail
 *	                            killed after reading it all): it may have
 *	                            been accepted.  Resending risks a
 *	                            duplicate (RFC 1047), which the
 *	                            deterministic Message-ID makes visible;
 *	                            the caller decides.
 *
 * When some recipients are refused and at least one is accepted, the
 * message is ACCEPTED for those, and res->refused names the others with
 * the server's reply ("addr: 550 5.1.1 ..."), so one bad Cc address does
 * not hold back a series.
 *
 * Logging: one line per message: its Message-ID (read from the header),
 * the number of recipients, the result, the queue id and, on failure, the
 * server's reply through printable().  Never the body, never the password.
 *
 * Ownership: submit_new() copies every string of opts; the password is
 * wiped when the object is freed.  A result owns its strings until
 * submit_result_release().
 * Threads: a submit object belongs to one thread at a time; different
 * objects may be used in parallel.  curl_global_init() runs once.  The
 * sendmail pipe blocks SIGPIPE in the calling thread while it writes, and
 * needs SIGCHLD not ignored (else its exit status is lost).
 * Errors: as in the table; err_msg() holds one line saying what happened.
 * submit_new() returns PB_EINVAL for bad options.
 */
#ifndef PB_OUTBOUND_SUBMIT_H
#define PB_OUTBOUND_SUBMIT_H

#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>

/* Caps of what a result keeps, and of what is read from sendmail. */
#define SUBMIT_QUEUE_ID_MAX 64
#define SUBMIT_REPLY_MAX 512
#define SUBMIT_STDERR_MAX 4096
/* Fixed arguments in sendmail_path, program included. */
#define SUBMIT_SENDMAIL_ARGS_MAX 32
/* RFC 5322 2.1.1: a line is at most 998 characters plus CRLF. */
#define SUBMIT_LINE_MAX 998
#define SUBMIT_DEFAULT_SENDMAIL "/usr/sbin/sendmail"
#define SUBMIT_DEFAULT_TIMEOUT_MS 60000L

struct submit_opts {
	/* "sendmail" (or NULL), or an smtp:// or smtps:// URL. */
	const char *url;
	/* smtp:// only: require STARTTLS before anything else. */
	int starttls;
	/* CA certificates for the server's TLS; NULL: the system's. */
	const char *ca_file;
	/* Program and fixed arguments; NULL: SUBMIT_DEFAULT_SENDMAIL. */
	const char *sendmail_path;
	/* SMTP AUTH; both or neither. */
	const char *username;
	const char *password;
	/* Longest time for one message; 0: SUBMIT_DEFAULT_TIMEOUT_MS. */
	long timeout_ms;
	/* Envelope sender when submit_send() is given none; may be NULL. */
	const char *envelope_from;
};

struct config;

/*
 * Options from [smtp] and, as the envelope sender, [bridge] address.  The
 * strings point into cfg, which must outlive opts; unset ones are NULL.
 * The password stays NULL: the caller reads [smtp] password_file.
 */
void submit_opts_from_config(struct submit_opts *opts,
			     const struct config *cfg);

enum submit_status {
	SUBMIT_ACCEPTED,
	SUBMIT_TEMPFAIL,
	SUBMIT_REJECTED,
	SUBMIT_UNKNOWN,
};

struct submit_result {
	enum submit_status status;
	/*
	 * SMTP: the code of the reply that decided (0: none came);
	 * sendmail: its exit status (-1: killed by a signal or never ran).
	 */
	int code;
	/* The MTA's queue id from its 250 reply; "" when it named none. */
	char queue_id[SUBMIT_QUEUE_ID_MAX + 1];
	/* The deciding reply or sendmail's stderr, printable(); or "". */
	char reply[SUBMIT_REPLY_MAX + 1];
	/* Refused recipients of an accepted message: "addr: reply". */
	struct strlist refused;
};

void submit_result_init(struct submit_result *res);
void submit_result_release(struct submit_result *res);
/* "accepted", "tempfail", "rejected", "unknown". */
const char *submit_status_name(enum submit_status st);

struct submit;

int submit_new(struct submit **out, const struct submit_opts *opts);
/* NULL is allowed. */
void submit_free(struct submit *s);

/*
 * Submit msg[0..len) to rcpts (at least one) with envelope sender
 * envelope_from (NULL: opts->envelope_from).  res must have been
 * initialised; it is reset first and always filled in.
 */
int submit_send(struct submit_result *res, struct submit *s,
		const char *envelope_from, const struct strlist *rcpts,
		const char *msg, size_t len);

/*
 * Is the MTA there?  For readiness checks (/readyz), from any thread: an
 * SMTP server must greet, take EHLO (and STARTTLS when required) and
 * answer NOOP with 250 within timeout_ms, through a connection of its
 * own (no AUTH: NOOP needs none); for sendmail the program must be
 * executable.  0, or PB_ETEMP with err_msg() saying what failed.
 */
int submit_probe(const struct submit_opts *opts, long timeout_ms);

/*
 * Pure helpers (no I/O; unit-tested).
 */

/* 0 when addr is a plain ASCII local@domain we can put on an envelope;
 * PB_EINVAL with the reason in err_msg() otherwise. */
int submit_addr_check(const char *addr);

/*
 * The message as it goes to the MTA: line ends made CRLF (crlf) or LF,
 * a line end added when the last line has none.  PB_EINVAL for a NUL
 * byte or a line over SUBMIT_LINE_MAX; PB_ELIMIT past out->max.
 */
int submit_canon(struct buf *out, const char *msg, size_t len, int crlf);

/* Parse one SMTP reply line "250-text" / "250 text" / "250" (RFC 5321
 * 4.2): 0 with *code and *last (1: the final line), else PB_EINVAL. */
int submit_reply_line(int *code, int *last, const char *line, size_t len);

/*
 * The queue id in the text of a 250 reply to the end of data, copied to
 * out (size > SUBMIT_QUEUE_ID_MAX): Postfix "Ok: queued as ID", Exim
 * "OK id=ID", Sendmail "ID Message accepted for delivery".
 * PB_ENOTFOUND when the reply names none.
 */
int submit_queue_id(char *out, size_t size, const char *text, size_t len);

/* The status a sendmail exit status stands for (sysexits.h), as Postfix
 * reads them: EX_TEMPFAIL and EX_OSERR are temporary. */
enum submit_status submit_exit_status(int exit_code);

/* Split sendmail_path at blanks into out (the program first, which must
 * be absolute); PB_EINVAL if empty, relative or too many arguments. */
int submit_split_args(struct strlist *out, const char *path);

/* The Message-ID header's value of msg, printable, in out (size >= 4);
 * "" when there is none.  For the log line. */
void submit_message_id(char *out, size_t size, const char *msg, size_t len);

#endif
