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
 *	    session_eoh                      end of header: a verdict from
 *	                                     the headers and the thread map
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
 * rejected because of the bridge (DESIGN.md rules 1 and 8).
 *
 * The memory all sessions of the process hold for their messages is
 * bounded too, by [milter] memory_limit: libmilter serves each connection
 * in a thread of its own, so without a bound of its own N concurrent
 * large replies would hold N times max_message_size.  The bytes each
 * buffer has allocated are counted in one process-wide atomic counter
 * (session_memory_held()), taken before the buffer grows and given back
 * when the message ends, however it ends (session_end(): end of message,
 * abort, a new MAIL FROM, the connection closed).  A message whose
 * buffer would take the count over the limit moves what it holds to a
 * private file in the spool's tmp/ (spool_body_file()) and goes on
 * there, through a SESSION_STAGE_MAX staging buffer of its own; at end
 * of message the file is mapped and read exactly as the buffer would
 * have been, so the spool record is the same byte for byte.  Only
 * messages that grow pay for this: a small mail takes the counter once
 * per doubling of its buffer and nothing else.  If the file cannot be
 * made or written (disk full, a file size limit), the message is cut
 * where its file or buffer stopped, as over max_message_size, and that
 * is logged: never a rejection, never a tempfail for the budget's sake.
 *
 * A message
 * with more than PB_HEADER_COUNT_MAX header fields or a field over
 * PB_HEADER_VALUE_MAX bytes is accepted untouched and logged.  When the
 * headers already say the mail is no reply to a bridged series
 * (classify_headers(): the loop guard, no threading header, or none that
 * the thread map or our Message-ID scheme knows), its body is not
 * buffered and no MIME work is done; unless it carries a forged
 * Authentication-Results field (below), which only the end of message
 * may delete, session_eoh() says the message is decided and the milter
 * lets it go at once (SMFIS_ACCEPT) - session_eom() then only logs its
 * verdict.
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
/* A message kept in a file reaches it in writes of up to this much:
 * its one buffer outside the memory budget. */
#define SESSION_STAGE_MAX (32 * 1024)

/* Why a message passes untouched without end-of-message work. */
enum session_skip {
	SESSION_KEEP, /* buffering: may be relevant */
	SESSION_SKIP_LOOP, /* the bridge's own mail */
	SESSION_SKIP_UNTHREADED, /* no reply to a bridged series */
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
	size_t limit; /* [milter] memory_limit, from conf */
	size_t held; /* of the memory budget: raw's allocation */
	int fd; /* -1, or the file the message is kept in instead of raw */
	size_t fd_len; /* bytes written to fd */
	struct buf stage; /* bytes on their way to fd */
	char *map; /* at end of message: fd mapped, fd_len + 1 bytes */
	size_t map_len; /* the length of map */
	const char *msg; /* at end of message: the kept bytes, raw or map */
	size_t msg_len;
	size_t size; /* bytes offered, also past the cap */
	size_t nr_headers; /* header fields seen */
	int in_body; /* end of header seen */
	int pending_cr; /* the last body chunk ended in CR */
	int cut; /* max_message reached, or the file failed: the rest is
		  * not kept */
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
/* 1 when the message is decided (a skip): the rest of it is not needed,
 * only session_eom() for the verdict and its log line. */
int session_eoh(struct session *s);
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

/* Bytes all sessions of the process hold for their messages now. */
size_t session_memory_held(void);

#endif
