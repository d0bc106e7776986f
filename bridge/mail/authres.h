/*
 * authres - read Authentication-Results header fields (RFC 8601).
 *
 * The bridge honours an approval only from an authenticated sender
 * (DESIGN.md rule 4): a DKIM or DMARC pass reported by the authserv-id
 * the operator trusts.  Anyone can write an Authentication-Results field,
 * so a field from any other authserv-id is ignored, and the MTA must
 * strip forged copies of the trusted one before mail reaches the milter
 * (see contrib/postfix/).
 *
 * authres_parse() reads one field value into methods and results;
 * authres_evaluate() looks at all of a message's fields and says what the
 * trusted authserv-id found.  With no trusted id nothing is trusted:
 * both results are "none" and verified is false.
 *
 * DKIM counts only when the signing domain (header.d) is the From
 * domain or a parent of it (relaxed alignment, RFC 7489 3.1.1; without
 * a public-suffix list a bare top-level domain never aligns), so a list
 * server that re-signs every post does not vouch for its posters.  DMARC
 * pass counts when its header.from, if given, is the From domain.
 *
 * Pure functions over (pointer, length), bounded, thread-safe.
 * Errors: authres_parse() returns PB_EINVAL for a value it cannot read.
 */
#ifndef PB_MAIL_AUTHRES_H
#define PB_MAIL_AUTHRES_H

#include <stddef.h>

#define AUTHRES_METHODS_MAX 32
#define AUTHRES_TOKEN_MAX 256

enum authres_result {
	AR_NONE,
	AR_PASS,
	AR_FAIL,
	AR_SOFTFAIL,
	AR_NEUTRAL,
	AR_TEMPERROR,
	AR_PERMERROR,
	AR_POLICY,
	AR_OTHER,
};

struct authres_method {
	char method[32]; /* "dkim", "dmarc", "spf" ... */
	enum authres_result result;
	char header_d[AUTHRES_TOKEN_MAX]; /* dkim: header.d, or "" */
	char header_from[AUTHRES_TOKEN_MAX]; /* dmarc: header.from, or "" */
};

struct authres {
	char authserv_id[AUTHRES_TOKEN_MAX];
	struct authres_method methods[AUTHRES_METHODS_MAX];
	size_t nr;
};

struct authres_summary {
	enum authres_result dkim; /* best aligned DKIM result */
	enum authres_result dmarc;
	int verified; /* an aligned DKIM pass or a DMARC pass */
};

int authres_parse(struct authres *out, const char *value, size_t len);

/*
 * Evaluate nr field values (message order) for a sender in from_domain,
 * trusting only trusted_id (NULL: trust nothing).
 */
void authres_evaluate(struct authres_summary *out, const char *const *values,
		      const size_t *lens, size_t nr, const char *trusted_id,
		      const char *from_domain);

/* "pass", "fail", "none" ... */
const char *authres_result_name(enum authres_result r);

#endif
