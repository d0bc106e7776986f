/*
 * replynak - the author's NAK in a reply, read three ways (nak,
 * nak_alone, nak_mention: mail/reply.h says how), and
 * reply_line_is_nak().
 *
 * Internal to reply.c and replynak.c.  Pure and thread-safe.
 */
#ifndef PB_MAIL_REPLYNAK_H
#define PB_MAIL_REPLYNAK_H

#include "mail/reply.h"

/* Set r->nak, r->nak_alone and r->nak_mention from its own lines. */
void reply_read_nak(struct reply *r);

#endif
