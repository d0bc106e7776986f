/*
 * session - one SMTP connection's state in the milter, and what happens
 * to each of its messages.
 *
 * The libmilter glue (glue.c) and the test mode (testmode.c) drive the
 * same functions, so the callbacks' logic runs from files without an MTA
 * (as in OpenDMARC):
 *
 *	session_new                          connect
 *	  session_begin(sender)              MAIL FROM: new message
 *	    session_set_queue_id(qid)        whenever {i} is known
 *	    session_header(name, value)  *N  each header field
 *	    session_eoh                      end of header: cheap verdict
 *	    session_body(chunk)          *N  body chunks
 *	    session_eom(&outcome)            classify, parse, spool
 *	  session_end                        after EOM, or abort
 *	session_free                         close
 *
 * The message is buffered as the milter receives it: header fields as
 * "Name: value" lines, an empty line, the body; line ends are LF (SMTP's
 * CRLF and Postfix's LF in folded fields are made the same).  The buffer
 * is capped at [milter] max_message_size: past it buffering stops and
 * the message is cut there - what was buffered, up to its last line end,
 * is handled like a whole mail and spooled with the size Postfix offered
 * (Received-Size), so the daemon says the comment is cut and where the
 * whole mail is; nothing is lost for being large, and list mail is never
 * rejected because of the bridge (DESIGN.md rules 1 and 8).  A message
 * with more than PB_HEADER_COUNT_MAX header fields or a field over
 * PB_HEADER_VALUE_MAX bytes is accepted untouched and logged.  When the
 * headers already say the mail is irrelevant (classify_early()), the
 * body is not buffered at all and no store or MIME work is done.
 *
 * Every header field also goes through the Authentication-Results rules
 * of authres.h as it arrives: the fields the trusted verifiers added on
 * top are the only ones that count, and every other field that mentions
 * the trusted authserv-id is forged.  session_forged() lists those for
 * the caller to delete at end of message (smfi_chgheader), for every
 * mail, bridged or not, so no forged result reaches the list either.
 *
 * session_eom() for a relevant mail: classify (thread map, Message-ID
 * scheme, subject), review_parse() against the target patch's diff as
 * mailed, then spool_put() - durable before the milter answers - and the
 * X-Patchbridge header value.  If the spool write fails the outcome is
 * SESSION_TEMPFAIL, so Postfix never accepts a reply that was not
 * spooled; any other internal problem (store down, parse error) still
 * spools or accepts, and logs.
 *
 * Ownership: struct session is a heap object (session_new/session_free)
 * owned by the caller (behind smfi_setpriv in the milter).  A message
 * holds a reference on the configuration generation current at MAIL FROM
 * (mconf.h) until session_end().
 * Threads: a session is used by one thread at a time, but not always the
 * same one (Debian's libmilter worker pool); it keeps no thread-local
 * state.  The log correlation id is set by the caller on each callback
 * from session_log_id().
 * Errors: session_begin() returns PB_ERROR when no configuration is
 * loaded; the other calls do not fail - problems become the outcome.
 */
#ifndef PB_MILTER_SESSION_H
#define PB_MILTER_SESSION_H

#include "mail/authres.h"
#include "mail/classify.h"
#include "milter/mconf.h"
#include "state/spool.h"
#include "util/buf.h"

#include <stddef.h>

/* The X-Patchbridge header value (its line stays under RFC 5322's 998). */
#define SESSION_HEADER_MAX 900
#define SESSION_HEADER_NAME "X-Patchbridge"
/* A project path as the header shows it (longer ones are cut). */
#define SESSION_PROJECT_SHOWN_MAX 200
/* The log correlation id: a queue id or "conn N". */
#define SESSION_LOG_ID_MAX 80

/* Why a message passes untouched without end-of-message work. */
enum session_skip {
	SESSION_KEEP, /* buffering: may be relevant */
	SESSION_SKIP_LOOP, /* the bridge's own mail */
	SESSION_SKIP_UNTHREADED, /* nothing ties it to a series */
	SESSION_SKIP_HEADERS, /* too many or too long header fields */
};

/* Per connection and, below "message", per message (cf. Postfix's
 * cleanup.h): everything the callbacks share. */
struct session {
	unsigned long id; /* connection number, for logs */
	unsigned long messages; /* messages begun on this connection */
	char log_id[SESSION_LOG_ID_MAX]; /* queue id, else "conn N" */
	/* message */
	struct mconf *conf; /* generation held; NULL between messages */
	size_t max_message; /* the cap of raw, from conf */
	char queue_id[SPOOL_QUEUE_ID_MAX + 1]; /* Postfix {i}; "" unknown */
	char *sender; /* envelope sender without <>, as given; owned */
	struct classify_input in; /* the headers classification reads */
	struct classify_result early; /* classify_early() at end of header */
	struct buf raw; /* header, empty line, body; LF ends; capped */
	size_t size; /* bytes offered, also past the cap */
	size_t nr_headers; /* header fields seen */
	int in_body; /* end of header seen */
	int pending_cr; /* the last body chunk ended in CR */
	int cut; /* raw reached max_message: the rest is not kept */
	struct authres_judge judge; /* the A-R rules over the fields */
	enum session_skip skip; /* set once, never cleared in a message */
};

enum session_action {
	SESSION_ACCEPT, /* continue: the mail goes on (header maybe) */
	SESSION_TEMPFAIL, /* 4xx: the spool write failed */
};

struct session_outcome {
	enum session_action action;
	/* "bridged", "pass", "loop", "headers", "tempfail" */
	const char *verdict;
	const char *reason; /* classify's reason token, or a detail */
	/* what the mail was taken for: "cover", "patch", "reply", "other"
	 * (about a bridged MR), "own", "unrelated"; "" when not classified
	 * (oversize, header limits) */
	const char *kind;
	char header[SESSION_HEADER_MAX]; /* X-Patchbridge value; "" none */
	char spool_name[SPOOL_NAME_MAX + 1]; /* "" when not spooled */
};

int session_new(struct session **out, unsigned long id);
/* Ends a message still open.  NULL is allowed. */
void session_free(struct session *s);

/* MAIL FROM: start a message (ending one still open). */
int session_begin(struct session *s, const char *sender);
void session_set_queue_id(struct session *s, const char *qid);
void session_header(struct session *s, const char *name, const char *value);
void session_eoh(struct session *s);
void session_body(struct session *s, const void *data, size_t len);
/* End of message: decide, spool, and say what to answer. */
void session_eom(struct session_outcome *out, struct session *s);
/* After EOM or on abort: drop the message and its config reference. */
void session_end(struct session *s);

/*
 * The forged Authentication-Results fields of the message, as 1-based
 * indexes among the message's Authentication-Results fields in the order
 * received (smfi_chgheader's index), ascending; *nr of them.
 */
const size_t *session_forged(const struct session *s, size_t *nr);

/* The correlation id for log lines: the queue id once known. */
const char *session_log_id(const struct session *s);

#endif
