/*
 * diffcache - parsed diffs of thread-map rows, kept between mails.
 *
 * A reply is placed on the diff of the patch it answers, which the thread
 * map holds as the patch mail as it was sent; making a struct diff of it
 * means a MIME parse of that mail and a diff parse.  The replies of a
 * series answer the same few patches again and again, so the milter keeps
 * what it parsed: under callgrind that parse was about 30 % of the
 * milter's instructions per corpus reply (tests/bench/README.md).
 *
 * An entry is keyed by the row's Message-ID and keeps a copy of the
 * row's text, which a lookup must match byte for byte, so a row written
 * again with other text is parsed again, never answered from the old one
 * (a memcmp: hashing the text, SHA-256 through GLib, cost half as much as
 * the parse it saves).  The cache is bounded: at most
 * DIFFCACHE_ENTRIES_MAX entries and DIFFCACHE_BYTES_MAX bytes (texts and
 * parsed diffs, diff_size()); past either the least recently used
 * entries go.  An entry bigger than a quarter of the byte bound is not
 * kept.  Each configuration generation has its own
 * (mconf.h), so a reload starts empty.
 *
 * diffcache_hooks() gives the struct classify_diffs that classify_eom()
 * calls (mail/classify.h).
 *
 * Ownership: the cache holds one reference to each diff it keeps
 * (diff_ref()); diffcache_get() returns a new one the caller drops with
 * diff_free().
 * Thread safety: every call may come from any thread (one mutex).
 * Errors: none; out of memory exits (xalloc.h).
 */
#ifndef PB_MILTER_DIFFCACHE_H
#define PB_MILTER_DIFFCACHE_H

#include "mail/classify.h"
#include "mail/diff.h"

#include <stddef.h>

#define DIFFCACHE_ENTRIES_MAX 1024
#define DIFFCACHE_BYTES_MAX (64 * 1024 * 1024)

struct diffcache;

struct diffcache *diffcache_new(void);
/* Drops every entry's reference; NULL is allowed. */
void diffcache_free(struct diffcache *c);

/* A new reference to the diff kept for row id with text[0..len), or
 * NULL. */
struct diff *diffcache_get(struct diffcache *c, const char *id,
			   const char *text, size_t len);
/* Keep d for row id with text[0..len) (a reference of the cache's own). */
void diffcache_put(struct diffcache *c, const char *id, const char *text,
		   size_t len, struct diff *d);

/* What the cache holds now: entries and bytes (for tests and logs). */
void diffcache_stats(struct diffcache *c, size_t *entries, size_t *bytes);

/* The hooks for struct classify_opts, with c as their argument. */
void diffcache_hooks(struct classify_diffs *out, struct diffcache *c);

#endif
