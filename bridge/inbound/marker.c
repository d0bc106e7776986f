#include "inbound/marker.h"

#include "mail/digest.h"

#include <stdio.h>
#include <string.h>

void inbound_marker_key(char out[INBOUND_MARKER_KEY_SIZE],
			const char *message_id, int index)
{
	char h[DIGEST_HEX128_SIZE];

	digest_sha256_hex128(h, message_id, strlen(message_id));
	snprintf(out, INBOUND_MARKER_KEY_SIZE, "pb1-%s.%d", h, index);
}
