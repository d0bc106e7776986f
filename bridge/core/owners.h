/*
 * owners - who owns which paths: the owners.yaml maintainers file.
 *
 * Reads the owners.yaml format of Red Hat's kernel projects (a `users`
 * registry of YAML anchors, and `subsystems` each with maintainers,
 * reviewers, path patterns and a mailing list) and answers two questions:
 * whom to Cc on a patch that touches some paths (owners_route), and whether
 * an address may approve a change to them (owners_is_approver).  The only
 * libyaml user.
 *
 * Loading is strict about what it uses and tolerant of what it does not:
 * unknown keys anywhere are ignored (the real files grow new fields), but
 * a known key with the wrong type, a person without an email, a bad glob or
 * regex, an unknown alias or a YAML syntax error fail the whole load with
 * PB_EINVAL and a message naming the place, 1-based (libyaml's own
 * errors too):
 *
 *	owners.yaml:14:18: maintainers: expected a list, found a scalar
 *	owners.yaml:8:6: did not find expected key (while parsing a block
 *	mapping at 2:5)
 *
 * Two entries for the same email (ignoring case) with different non-null
 * gluser values, and two subsystems with the same labels.name, are
 * PB_EINVAL too: both would make approvals ambiguous.  Hitting one of the
 * caps below is PB_ELIMIT, also with a place.
 *
 * The module never aborts on bad input.  A failed load leaves *out
 * untouched, so the owners loaded before stay usable: load into a fresh
 * pointer and swap it in only on success.  Callers that have no owners
 * at all keep mailing without owners-based Cc routing (and log why).
 *
 * Deliberate leniencies (the file is edited by people and read by Python
 * scripts that accept these): a missing or null list is an empty list, so
 * a subsystem may have no maintainers (status Unassigned); a null bool is
 * false; `status` is kept as written, not checked against a list.  Merge
 * keys (`<<`) are rejected rather than silently dropped.  Addresses
 * (`email`, `mailingList`) must be bare ASCII addr-specs; names may be
 * UTF-8 but hold no control characters, as they end up in headers.
 *
 * Path patterns follow the kernel's get_maintainer.pl F:/X: lines.  Paths
 * are repository-relative as git prints them ("drivers/net/x.c", no "a/"
 * or "./" prefix):
 *  - a glob is matched with fnmatch(3) and FNM_PATHNAME: `*` and `?` do not
 *    cross a `/`, `[...]` classes work, `\` escapes;
 *  - a glob ending in `/` covers everything below that directory (and not a
 *    file of the same name);
 *  - a glob without wildcards and without a trailing `/` names a file or a
 *    directory: it matches that exact path and everything below it
 *    (get_maintainer adds the `/` when the name is a directory on disk; a
 *    path with more components below it can only be a directory, so no
 *    tree is needed to decide);
 *  - includeRegexes are POSIX extended regular expressions, searched
 *    anywhere in the path (anchor them with ^ and $), compiled once at
 *    load; back-references, and patterns whose repetitions expand past
 *    OWNERS_REGEX_COST_MAX (glibc copies x for x+ and x{m,n}), are
 *    refused;
 *  - a path belongs to a subsystem when an include glob or regex matches
 *    it and no exclude glob does.
 *
 * Authority: owners_is_approver() accepts maintainers and reviewers of a
 * touched subsystem, except people marked `restricted`.  The note on the
 * format says restricted people are notified but never required
 * reviewers; we take the conservative reading that a restricted person's
 * emailed trailer never becomes an approval either (it stays a comment).
 * They are still Cc'd by owners_route().
 *
 * Every query accepts o == NULL (no owners.yaml loaded): nothing matches,
 * nobody is routed, nobody may approve, no gluser is known.
 *
 * Ownership: a struct owners owns everything reachable from it; pointers
 * returned by the query functions (subsystems, people, strings) are
 * borrowed and valid until owners_free().  struct owners_matches owns
 * only its array, not the subsystems it points at.
 *
 * Thread safety: a loaded struct owners is never modified; any number of
 * threads may query one concurrently (fnmatch and regexec are
 * thread-safe).  Replacing it on reload is the caller's business (swap the
 * pointer under the caller's own lock; free the old one when no reader
 * holds it).
 */
#ifndef PB_CORE_OWNERS_H
#define PB_CORE_OWNERS_H

#include "util/strlist.h"

#include <stddef.h>

/* Caps.  Larger input fails with PB_ELIMIT. */
#define OWNERS_FILE_MAX (4 * 1024 * 1024) /* bytes of owners.yaml */
#define OWNERS_DEPTH_MAX 64 /* nested collections */
#define OWNERS_NODES_MAX 250000 /* YAML nodes in the file */
#define OWNERS_ALIASES_MAX 50000 /* aliases (*name) in the file */
/* Nodes counted with every alias expanded: the billion-laughs guard. */
#define OWNERS_EXPANDED_MAX 1000000
/* Caps on single values; longer is PB_EINVAL. */
#define OWNERS_NAME_MAX 256 /* a person's name, a title, a label */
#define OWNERS_PATTERN_MAX 4096 /* a glob */
#define OWNERS_PATH_MAX 4096 /* a path to match; longer is PB_EINVAL */
#define OWNERS_REGEX_MAX 1024 /* an includeRegexes entry */
/* A regex's size with x+ and x{m,n} expanded, as glibc's regcomp does. */
#define OWNERS_REGEX_COST_MAX 2048
#define OWNERS_TEXT_MAX 4096 /* scm, status */

struct owners;
struct owners_paths; /* compiled patterns, private to owners.c */

/* A person as written in owners.yaml.  Read-only for callers. */
struct owners_person {
	const char *name; /* display name; "" when none given */
	const char *email; /* address, never NULL */
	const char *gluser; /* forge login; NULL when unknown */
	int restricted; /* notified, never approves (see above) */
};

/* One entry of `subsystems`.  Read-only for callers. */
struct owners_subsystem {
	size_t index; /* position in the subsystems list, from 0 */
	const char *title; /* `subsystem` */
	const char *label; /* `labels.name`: short, unique */
	const char *status; /* `status` as written; NULL when absent */
	int required_approval; /* `requiredApproval` */
	const struct owners_person *const *maintainers;
	size_t maintainers_nr;
	const struct owners_person *const *reviewers;
	size_t reviewers_nr;
	const char *scm; /* `scm`; NULL when absent */
	const char *mailing_list; /* `mailingList` address; NULL when absent */
	struct owners_paths *paths;
};

/* A set of subsystems, always in owners.yaml order without duplicates. */
struct owners_matches {
	const struct owners_subsystem **items;
	size_t nr;
	size_t alloc;
};

#define OWNERS_MATCHES_INIT \
	{                   \
		NULL, 0, 0  \
	}

void owners_matches_init(struct owners_matches *m);
void owners_matches_release(struct owners_matches *m);

/*
 * Load owners.yaml from path (at most OWNERS_FILE_MAX bytes).  Messages
 * name the file as given.  On success *out is a new object for
 * owners_free(); on failure *out is not touched.
 */
int owners_load(struct owners **out, const char *path);

/* Load from memory; name is used in messages ("owners.yaml"). */
int owners_load_mem(struct owners **out, const char *data, size_t len,
		    const char *name);

void owners_free(struct owners *o);

/* The subsystems, in file order; index < owners_count(). */
size_t owners_count(const struct owners *o);
const struct owners_subsystem *owners_get(const struct owners *o, size_t index);

/* The subsystem whose labels.name is label (exact), or NULL. */
const struct owners_subsystem *owners_find(const struct owners *o,
					   const char *label);

/* True when path belongs to s (an include matches, no exclude does). */
int owners_subsystem_covers(const struct owners_subsystem *s, const char *path);

/*
 * Add the subsystems path belongs to into out (which may already hold
 * some: the result is the union, in file order).  PB_EINVAL for a NULL,
 * empty or over-long path (out unchanged).
 */
int owners_match(struct owners_matches *out, const struct owners *o,
		 const char *path);

/* The same for n paths: the subsystems a change to them touches. */
int owners_touched(struct owners_matches *out, const struct owners *o,
		   const char *const *paths, size_t n);

enum owners_route_flags {
	OWNERS_ROUTE_NO_REVIEWERS = 1 << 0, /* maintainers (and lists) only */
	OWNERS_ROUTE_NO_LISTS = 1 << 1, /* leave out mailingList */
};

/*
 * Append to cc the addresses to Cc for a change to paths[0..n): the
 * maintainers, then the reviewers, then the mailing lists of every
 * touched subsystem, each group in file order.  People come as
 * "Name <email>" (the name quoted per RFC 5322 3.2.4 when it holds
 * specials; UTF-8 names are left for the mail layer to encode), or as the
 * bare address when they have no name; lists as the bare address.
 * Addresses are de-duplicated ignoring ASCII case, also against what cc
 * already holds (the part in <> of an item, or the whole item), so a
 * caller can pre-fill cc with the To: and author.  PB_EINVAL for a bad
 * path; cc is then unchanged.
 */
int owners_route(struct strlist *cc, const struct owners *o,
		 const char *const *paths, size_t n, unsigned flags);

/*
 * May email approve a change to paths[0..n)?  1 when it is the address of
 * a maintainer or reviewer, not restricted, of a subsystem those paths
 * touch (compared ignoring ASCII case); *out (optional) then gets the
 * first such subsystem in file order.  0 when not (*out = NULL).
 * PB_EINVAL for a bad path or a NULL email.
 */
int owners_is_approver(const struct owners_subsystem **out,
		       const struct owners *o, const char *const *paths,
		       size_t n, const char *email);

/*
 * The forge login (`gluser`) of the person with this email (ignoring ASCII
 * case), from any entry in the file that gives one.  PB_ENOTFOUND when no
 * entry has that email or none gives a gluser.
 */
int owners_gluser(const char **out, const struct owners *o, const char *email);

#endif
