/*
 * marker - the keys of the hidden markers the bridge's notes carry.
 *
 * Every forge write for an inbound mail is action (Message-ID, index)
 * (DESIGN.md rule 3).  Its marker key is "pb1-" + the first 32 hex digits
 * of SHA-256 (mail/digest.h) over the Message-ID (without <>) + "." + the index, e.g.
 * "pb1-9f86d081884c7d659a2feaa0c55ad015.1001": within the key alphabet of
 * forge_marker_key_check(), the same for every attempt, and distinct for
 * distinct mails - a cryptographic hash, because Message-IDs are chosen
 * by whoever sends the mail and a collision would let one mail's note
 * stand in for another's.  The outbound side takes a note for the
 * bridge's only with a key of exactly this form at its end
 * (outbound/forgetext.c, inbound_key()): a new form must be taught there
 * too (test_forgetext test_loop_filter_inbound_keys checks they agree).
 *
 * Pure and thread-safe; no errors.
 */
#ifndef PB_INBOUND_MARKER_H
#define PB_INBOUND_MARKER_H

#include <stddef.h>
#include <stdint.h>

/* "pb1-" + 32 hex + "." + up to 10 digits, and the terminator. */
#define INBOUND_MARKER_KEY_SIZE 64

void inbound_marker_key(char out[INBOUND_MARKER_KEY_SIZE],
			const char *message_id, int index);

#endif
