/*
 * listarchive - ask the list's public archive whether it holds a mail.
 *
 * A mail handed to the MTA whose outcome is unknown (state/store.h: a
 * host died, or lost the database, before it recorded the MTA's 250)
 * may be on the list already.  SMTP cannot tell; the list archive can.
 * [inbound] archive_url is a public-inbox (or anything answering the
 * same way): GET ARCHIVE/MESSAGE-ID/raw answers 200 with the message
 * (an mboxrd of every message with that Message-ID) when the inbox has
 * it and 404 when it does not (public-inbox's PublicInbox::WWW, "raw"
 * of a message; the Message-ID escaped as PublicInbox::MID::mid_escape,
 * core/msgid.h msgid_url_escape()).
 *
 * Found means a 200 whose body names the Message-ID (<id> as a header
 * value): a catch-all page answering 200 to anything is not taken for
 * the mail.  Missing means a 404.  Anything else - no answer, another
 * status, a 200 without the id - is PB_ETEMP: the archive cannot say.
 *
 * Secrets: the archive is public.  Its requests go through an HTTP
 * client of their own, made without a token (forge/http.h), so the
 * forge token is never sent to the archive's host.
 *
 * Ownership: listarchive_new() copies what it is given.
 * Threads: one listarchive belongs to one thread at a time.
 * Errors: 0, or a negative code from util/err.h with err_msg() set.
 */
#ifndef PB_OUTBOUND_LISTARCHIVE_H
#define PB_OUTBOUND_LISTARCHIVE_H

#include "util/buf.h"

#include <signal.h>

/* Time for one look-up: the archive only helps when it answers fast. */
#define LISTARCHIVE_TIMEOUT_MS 15000L
#define LISTARCHIVE_CONNECT_TIMEOUT_MS 5000L

struct listarchive;

/* ca_file: CA certificates for an https archive (NULL: the system's);
 * stop: a signal handler's flag that cuts a look-up short (may be NULL). */
int listarchive_new(struct listarchive **out, const char *ca_file,
		    const volatile sig_atomic_t *stop);
void listarchive_free(struct listarchive *la);

/*
 * Does the archive at base (an http or https URL, a trailing "/"
 * allowed) hold message_id?  *found 1 or 0; PB_ETEMP when it cannot
 * say; PB_EINVAL for an empty base or Message-ID.
 */
int listarchive_has(int *found, struct listarchive *la, const char *base,
		    const char *message_id);

/* The URL of message_id's raw message below base, appended to out. */
int listarchive_url(struct buf *out, const char *base, const char *message_id);

#endif
