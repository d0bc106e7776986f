/*
 * threadmap - the thread map as the mail layer reads it: which mail the
 * bridge sent is which patch (or cover letter) of which revision of which
 * merge request, and the diff it carried.
 *
 * An interface, a struct of function pointers, so that classification
 * (mail/classify.h) never knows where the map is kept: the state store
 * provides one over its database (store_threadmap() in state/store.h),
 * tests and a read-only cache can provide their own.  mail/ includes
 * this header, never a state header; tests/layering.sh checks that.
 *
 * Ownership: every row is filled into a caller-owned struct whose strings
 * it then owns (heap copies), released with threadmap_mail_release() /
 * threadmap_revision_list_release(); an init'ed or released row may be
 * filled again.  The interface itself is borrowed: ->arg outlives it.
 * Threads: as the provider says (the store: one thread at a time).
 * Errors: each call returns 0, PB_ENOTFOUND when there is no such row, or
 * another negative code with err_msg() set (the map is unavailable).
 */
#ifndef PB_CORE_THREADMAP_H
#define PB_CORE_THREADMAP_H

#include <stddef.h>
#include <stdint.h>

#define THREADMAP_PROJECT_MAX 1024 /* "group/sub/project" path */

/* One mail the bridge sent. */
struct threadmap_mail {
	char *message_id;
	char *project; /* "group/project" */
	int64_t iid; /* MR iid, > 0 */
	int revision; /* as mailed (1 = v1); 0: none */
	int patch; /* k: 0 = cover letter */
	int total; /* M; 0: unknown */
	char *diff; /* the diff (or the whole mail) as mailed; may be NULL */
	size_t diff_len;
};

/* One mailed revision of an MR. */
struct threadmap_revision {
	char *project;
	int64_t iid;
	int revision; /* 1 = v1 */
	int patches; /* patch mails (M); 0: unknown */
};

struct threadmap_revision_list {
	struct threadmap_revision *items;
	size_t nr;
	size_t alloc;
};

struct threadmap {
	/* The mail with this Message-ID (without <>). */
	int (*mail_get)(void *arg, struct threadmap_mail *out,
			const char *message_id);
	/* The cover letter (patch 0) or patch k of a mailed revision. */
	int (*mail_find)(void *arg, struct threadmap_mail *out,
			 const char *project, int64_t iid, int revision,
			 int patch);
	/* The highest-numbered revision of an MR. */
	int (*revision_latest)(void *arg, struct threadmap_revision *out,
			       const char *project, int64_t iid);
	/* Every mailed revision, by project, MR and revision (capped by the
	 * provider), appended to out. */
	int (*revision_list)(void *arg, struct threadmap_revision_list *out);
	void *arg;
};

void threadmap_mail_init(struct threadmap_mail *m);
void threadmap_mail_release(struct threadmap_mail *m);
void threadmap_revision_init(struct threadmap_revision *r);
void threadmap_revision_release(struct threadmap_revision *r);
/* Appends a copy of r's fields, taking ownership of its strings (r is
 * left init'ed). */
void threadmap_revision_list_take(struct threadmap_revision_list *list,
				  struct threadmap_revision *r);
void threadmap_revision_list_release(struct threadmap_revision_list *list);

#endif
