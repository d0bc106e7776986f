/*
 * patchahead - the patches of a range rendered ahead of the mails that
 * carry them, on a few threads, and handed over in the range's order.
 *
 * `patchbridge format` writes one mail per commit, in order, each made
 * from that commit's patch (gitrepo_range_patch()).  Rendering the patch
 * (the tree diff, rename detection, xdiff, the blobs read from the pack)
 * is four fifths of the work, making and writing the mail the rest; git
 * format-patch does both on one CPU.  patchahead_start() lets jobs - 1
 * threads render the next patches while the caller makes and writes the
 * mails, and the caller is the last of the jobs: patchahead_get(i)
 * renders a patch no thread has taken yet while patch i is not there.
 * Every thread has its own gitrepo, opened on the same path (libgit2:
 * "libgit2 objects cannot be safely accessed by multiple threads
 * simultaneously", its docs/threading.md; the pack files themselves are
 * shared within the process).  With jobs 1, or when no thread can be
 * started, the caller renders each patch as it asks for it: the serial
 * code, as when libgit2 was built without threads.
 *
 * Memory: at most PATCHAHEAD_MAX patches are rendered or being rendered
 * beyond the one the caller got last, and beyond jobs + 1 of them only
 * while those rendered and not put back hold fewer than
 * PATCHAHEAD_BYTES_MAX bytes.  patchahead_put(i) gives patch i back
 * (gitrepo_range_patch_release()).
 *
 * Ownership: the patchahead borrows the range, whose commits[].patch
 * (and files, insertions, deletions) it fills, and the caller's gitrepo,
 * until patchahead_free(); meanwhile the caller reads commits[i].patch
 * only between patchahead_get(i) and patchahead_put(i).  Other fields of
 * the range are read, never written, by the threads.
 * Thread safety: all four functions are the calling thread's; get(i) is
 * called with i increasing.
 * Errors: patchahead_get(i) returns what gitrepo_range_patch() returned
 * for commit i, with its message set in the caller's thread (err_msg()),
 * as if the caller had rendered it; no patch after a failed one is
 * started.  patchahead_start() fails only as gitrepo_open() does.
 */
#ifndef PB_OUTBOUND_PATCHAHEAD_H
#define PB_OUTBOUND_PATCHAHEAD_H

#include "outbound/gitrepo.h"

#include <stddef.h>

/* Threads rendering patches, the caller's included, at most; and by
 * default, when there are as many CPUs.  The second thread is the one
 * that pays on a series (the caller's own share of the work, the mails,
 * is a fifth of it); each further one costs its allocator arena and
 * libgit2 caches, some 5 MiB, which at 4 took the peak of format above
 * git format-patch's on this repository's history. */
#define PATCHAHEAD_JOBS_MAX 8
#define PATCHAHEAD_JOBS_DEFAULT 2
/* Patches rendered ahead of the caller, at most. */
#define PATCHAHEAD_MAX 128
/* Bytes of rendered patches not put back, past which no more than
 * jobs + 1 are rendered ahead. */
#define PATCHAHEAD_BYTES_MAX (4 * 1024 * 1024)

struct patchahead;

/*
 * Render the patches of range (loaded with gitrepo_range_load_deferred()
 * from repo, whose path is path) with jobs threads, the caller's among
 * them; jobs 0: one per online CPU, at most PATCHAHEAD_JOBS_DEFAULT.
 */
int patchahead_start(struct patchahead **out, struct gitrepo *repo,
		     const char *path, struct gitrepo_range *range,
		     unsigned jobs);
/* Wait for commits[i].patch, rendering others meanwhile. */
int patchahead_get(struct patchahead *pa, size_t i);
/* Done with commits[i].patch: released, and room for another. */
void patchahead_put(struct patchahead *pa, size_t i);
/* Stop the threads (each finishes the patch it renders) and free. */
void patchahead_free(struct patchahead *pa);

#endif
