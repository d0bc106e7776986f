/*
 * msgid - the deterministic Message-IDs of outbound mail.
 *
 * Every mail of a series gets an id that says what it is, so that the same
 * revision always yields the same ids (DESIGN.md rule 5), a force-push
 * never reuses one, and a reply can be placed even when the thread map
 * has no row for it (the map stays the authority; an id is never
 * authorisation):
 *
 *	pb.v<rev>.<k>-<M>.<project>.<iid>.<head12>@<domain>
 *
 *	<rev>	 revision number, 1-9999
 *	<k>-<M>	 patch k of M; k = 0 is the cover letter
 *	<project> the project path made atext: [A-Za-z0-9_-] stay, "/"
 *		 becomes "." (so "group/sub/proj" reads "group.sub.proj"),
 *		 every other byte, and a "/" that would leave an empty atom,
 *		 becomes "=XX"; cut to MSGID_PROJECT_ENC_MAX with a final "~".
 *		 A GitLab project path holds only letters, digits, "_", "-",
 *		 "." and "/" (GitLab's lib/gitlab/path_regex.rb), so its id
 *		 needs no escape but "=2E"; msgid_parse() decodes that one
 *		 and refuses every other "=XX" as not ours: a sender's
 *		 "=0A" never becomes a newline in a project name
 *	<iid>	 the MR's project-local number
 *	<head12> the first 12 hex digits of the revision's head commit
 *
 * The local part is an RFC 5322 dot-atom-text (section 3.4.1, msg-id in
 * section 3.6.4), the domain a dot-atom of letters, digits and hyphens.
 * Example: pb.v3.2-7.group.project.12.0123456789ab@bridge.example.org
 *
 * Errors: PB_EINVAL for out-of-range numbers, a bad domain or sha, and
 * for an id that does not follow the scheme; PB_ELIMIT from the buf.
 * Thread safety: pure functions.
 */
#ifndef PB_CORE_MSGID_H
#define PB_CORE_MSGID_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

#define MSGID_SHA_LEN 12
#define MSGID_NUM_MAX 9999 /* revisions and patch counts */
#define MSGID_PROJECT_ENC_MAX 160 /* encoded project, before "~" */
#define MSGID_PROJECT_MAX 255 /* decoded project */
#define MSGID_DOMAIN_MAX 253 /* RFC 1035 */

struct msgid_parts {
	const char *project; /* "group/project"; any bytes, non-empty */
	uint64_t iid; /* MR iid, > 0 */
	unsigned revision; /* 1..MSGID_NUM_MAX */
	unsigned index; /* 0 (cover) ..total */
	unsigned total; /* 1..MSGID_NUM_MAX */
	const char *head_sha; /* hex, at least MSGID_SHA_LEN digits */
	const char *domain; /* the bridge's domain */
};

/* Append the id (without angle brackets) for parts to out. */
int msgid_format(struct buf *out, const struct msgid_parts *parts);

struct msgid_parsed {
	char project[MSGID_PROJECT_MAX + 1]; /* decoded path */
	int project_cut; /* the encoded path was cut */
	uint64_t iid;
	unsigned revision;
	unsigned index;
	unsigned total;
	char head_sha[MSGID_SHA_LEN + 1];
	char domain[MSGID_DOMAIN_MAX + 1];
};

/*
 * Parse an id of our scheme, with or without "<" ">" and surrounding
 * blanks; PB_EINVAL (no message noise: it is the common case for other
 * people's mail) when it is not one of ours.  out is filled only on
 * success.  Callers compare out->domain with their own domain.
 */
int msgid_parse(struct msgid_parsed *out, const char *id, size_t len);

/* True when domain is usable as the right-hand side of our ids. */
int msgid_domain_ok(const char *domain);

/*
 * Forge events mirrored to the list (forgemail.h) get ids of their own,
 * derived only from what the forge says, so that a retry, a restart or a
 * re-read of the same note renders the same id and the thread map refuses
 * the second copy:
 *
 *	pb.f.<event>.<id>.<project>.<iid>@<domain>
 *
 *	<event>	 "note" (a comment), "ack" (an approval, id = the system
 *		 note's id), "unack" (an approval withdrawn, likewise),
 *		 "merged", "closed" (id = the event time in ms)
 *	<id>	 a decimal number; 0 when the event needs none
 *
 * msgid_parse() refuses these (they are not series mails).
 */
#define MSGID_EVENT_MAX 16 /* [a-z] only */

int msgid_format_forge(struct buf *out, const char *event, const char *project,
		       uint64_t iid, uint64_t id, const char *domain);

/*
 * Append id percent-encoded as one URL path segment, as public-inbox
 * links a mail (PublicInbox::MID::mid_escape: an RFC 3986 pchar stays,
 * every other byte - "/", "%", "?", "#", blanks, 8-bit - becomes %XX),
 * so ARCHIVE/ID/ and ARCHIVE/ID/raw find it.  PB_ELIMIT from the buf.
 */
int msgid_url_escape(struct buf *out, const char *id);

#endif
