/*
 * authres - which Authentication-Results fields to trust (RFC 8601).
 *
 * The bridge honours an approval only from an authenticated sender
 * (DESIGN.md rule 4): a DKIM or DMARC pass reported by the verifier the
 * operator trusts.  Anyone can write an Authentication-Results field,
 * with any authserv-id, so a field counts only when it was added by that
 * verifier on the way in.  The verifiers this is made for (OpenDKIM,
 * OpenDMARC) are milters placed before patchbridge-milter; each inserts
 * its field with smfi_insheader(ctx, 1, ...), right under Postfix's own
 * Received: field, which milters do not see (Postfix milter8.c hides the
 * first header; cleanup_milter.c puts index 1 below it).  So the fields
 * a later milter sees first, before any field the client sent, are the
 * verifiers' own - the last one added on top (OpenDMARC's, after
 * OpenDKIM's).  Measured with Postfix 3.7 (tests/milter/postfix.sh).
 *
 * The rules, applied by the milter to the fields Postfix hands it and by
 * the daemon and `patchbridge parse` to the same header as spooled:
 *
 *  - A field claims the trusted id when its authserv-id, read per RFC
 *    8601 section 2.2 (CFWS with nested comments and quoted-pairs,
 *    folding, a token or a quoted-string, compared without regard to
 *    case), is that id; a "/job-id" suffix (OpenDKIM's and OpenDMARC's
 *    AuthservIDWithJobID) is allowed and not compared.
 *  - Trusted: the fields at the very top of the header, one after the
 *    other, each claiming the trusted id, at most `top_max` of them
 *    ([milter] trusted_authres_fields: how many the verifiers add).
 *  - Every other field that mentions the trusted id - the id's letters in
 *    a row, in any case, each perhaps after a backslash (a quoted-pair),
 *    anywhere in the value - is forged: the milter removes it from the
 *    mail (smfi_chgheader) and nothing reads it.  This is a superset of
 *    "claims the id" (a token or quoted-string holding the id shows its
 *    letters that way, comments cannot split it), so no reading of the
 *    field by another parser can make it claim the id.  It is also
 *    exactly what authres_header_checks() writes as a Postfix regexp, so
 *    the header_checks rule, which removes client copies before any
 *    milter sees them, matches what this code matches.
 *
 * What the trusted fields count for (RFC 7489 section 3.1 alignment,
 * relaxed): dkim=pass when header.d is the From domain or a parent of it
 * (a parent with at least one dot: without a public-suffix list "org"
 * never aligns; header.i alone is not enough); dmarc=pass only with a
 * header.from equal to the From domain (OpenDMARC writes it; a pass
 * without it could be about any From).  Either makes the sender verified.
 *
 * Everything here is pure and bounded: values are read up to their
 * length (NULs included), comments nest at most AUTHRES_COMMENT_DEPTH.
 * A struct authres_judge owns what it copies (authres_judge_release()).
 * Thread safety: no shared state.
 * Errors: authres_parse() returns PB_EINVAL for a value it cannot read
 * (an unterminated comment or quoted string, no authserv-id, comments
 * nested too deep); such a field is never trusted.
 */
#ifndef PB_MAIL_AUTHRES_H
#define PB_MAIL_AUTHRES_H

#include "util/buf.h"
#include "util/limits.h"

#include <stddef.h>

#define AUTHRES_METHODS_MAX 32
#define AUTHRES_TOKEN_MAX 256
#define AUTHRES_COMMENT_DEPTH 16
/* Bounds of [milter] trusted_authres_fields. */
#define AUTHRES_TOP_MAX PB_AUTHRES_FIELDS_MAX
#define AUTHRES_TOP_DEFAULT PB_AUTHRES_FIELDS_DEFAULT
#define AUTHRES_FIELD_NAME "Authentication-Results"

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
	char method[32]; /* "dkim", "dmarc", "spf" ... lower case */
	enum authres_result result;
	char header_d[AUTHRES_TOKEN_MAX]; /* dkim: header.d, or "" */
	char header_from[AUTHRES_TOKEN_MAX]; /* dmarc: header.from, or "" */
};

struct authres {
	char authserv_id[AUTHRES_TOKEN_MAX]; /* quoted-pairs undone */
	char job_id[AUTHRES_TOKEN_MAX]; /* after "id/", or "" */
	struct authres_method methods[AUTHRES_METHODS_MAX];
	size_t nr;
};

/* Parse one field value (folded or not). */
int authres_parse(struct authres *out, const char *value, size_t len);

/* "pass", "fail", "none" ... */
const char *authres_result_name(enum authres_result r);

/*
 * True when value[0..len) mentions id as described above (case
 * insensitive, each letter perhaps after one backslash).  id "" or NULL
 * is mentioned nowhere.
 */
int authres_mentions(const char *value, size_t len, const char *id);

/*
 * Append the Postfix header_checks rule (a regexp: table line) that
 * IGNOREs every Authentication-Results field mentioning id, and a line
 * end.  PB_EINVAL for an empty id; PB_ELIMIT from the buf.
 */
int authres_header_checks(struct buf *out, const char *id);

/* What became of one header field. */
enum authres_field {
	AUTHRES_OTHER, /* not an Authentication-Results field */
	AUTHRES_TRUSTED, /* the trusted verifier's, at the top */
	AUTHRES_FOREIGN, /* another authserv-id: ignored, kept */
	AUTHRES_FORGED, /* mentions the trusted id: ignored, removed */
};

/*
 * The rules over one message's header, fed field by field in message
 * order: by the milter from Postfix's header callbacks, by
 * authres_judge_header() from a raw message.
 */
struct authres_judge {
	const char *id; /* borrowed; NULL: nothing trusted or removed */
	size_t top_max;
	size_t fields; /* header fields seen */
	size_t ar; /* Authentication-Results fields seen */
	int top_open; /* every field so far was trusted */
	char *trusted[AUTHRES_TOP_MAX]; /* their values, owned */
	size_t nr_trusted;
	size_t *forged; /* 1-based ordinals among the A-R fields */
	size_t nr_forged, alloc_forged;
	size_t nr_foreign;
};

/* id: the trusted authserv-id (NULL or "": none); top_max 1..TOP_MAX. */
void authres_judge_init(struct authres_judge *j, const char *id,
			size_t top_max);
void authres_judge_release(struct authres_judge *j);

/* Judge the next header field: name (trailing blanks allowed) and its
 * value, folded or not. */
enum authres_field authres_judge_field(struct authres_judge *j,
				       const char *name, size_t nlen,
				       const char *value, size_t vlen);

/*
 * Judge every field of the header of the raw message raw[0..len) (an
 * mbox "From " line first is skipped; the header ends at the first empty
 * line or line that is no field, as Postfix reads it).
 */
void authres_judge_header(struct authres_judge *j, const char *raw, size_t len);

/* Why a sender is not verified, when the trusted fields say pass. */
#define AUTHRES_WHY_DKIM_UNALIGNED 0x1 /* dkim=pass for another domain */
#define AUTHRES_WHY_DMARC_NO_FROM 0x2 /* dmarc=pass without header.from */
#define AUTHRES_WHY_DMARC_OTHER_FROM 0x4 /* ... for another From domain */

struct authres_summary {
	enum authres_result dkim; /* best aligned DKIM result */
	enum authres_result dmarc;
	int verified; /* an aligned DKIM pass or a DMARC pass */
	unsigned why; /* AUTHRES_WHY_* seen in the trusted fields */
	size_t trusted; /* fields trusted */
	size_t forged; /* fields claiming the id, ignored (and removed) */
};

/* What the trusted fields say about a sender in from_domain (NULL or
 * "": nothing verifies). */
void authres_judge_summary(struct authres_summary *out,
			   const struct authres_judge *j,
			   const char *from_domain);

/*
 * Append, for a sender that is not verified, what the fields said:
 * "2 Authentication-Results fields claiming ID were not added by its
 * verifier and were ignored", "a DMARC pass without header.from does not
 * count" ...; nothing when there is nothing to say.  Parts are joined
 * with "; ".  PB_ELIMIT from the buf.
 */
int authres_summary_why(struct buf *out, const struct authres_summary *s,
			const char *id);

#endif
