/*
 * reviewsin - are all the required reviews of a change in?
 *
 * A subsystem of owners.yaml that a change touches requires a review when
 * it has requiredApproval and a maintainer who is not restricted
 * (reviewers.h); the review is in when one of those maintainers approved
 * the MR on the forge (an approval made from the list is one too: the
 * bridge makes it as the reviewer).  An approver is a maintainer when
 * the forge user's login is the person's gluser, or one of the user's
 * addresses the forge shows is the person's email (ignoring case).
 *
 * reviewsin_check() says whether every required review is in, with no
 * NAK blocking the MR, and writes what the list is told:
 *
 *  - all in: "net (Mary Maintainer), docs (Rob Reviewer)", each
 *    required subsystem and who approved for it;
 *  - not (any more): "waiting for net, docs", the subsystems still
 *    waiting, after "a NAK blocks the merge request; " when one does.
 *
 * A change that touches no subsystem requiring a review is never "all
 * in": there was nothing to wait for.
 *
 * Thread safety: pure.  Errors: PB_EINVAL for a bad path (owners.h),
 * PB_ELIMIT from the output buf.
 */
#ifndef PB_OUTBOUND_REVIEWSIN_H
#define PB_OUTBOUND_REVIEWSIN_H

#include "core/owners.h"
#include "forge/forge.h"
#include "util/buf.h"

#include <stddef.h>

/* *in: 1 all in, 0 not; *required: subsystems requiring a review. */
int reviewsin_check(int *in, size_t *required, struct buf *text,
		    const struct owners *o, const char *const *paths, size_t n,
		    const struct forge_approvals *a, int nak);

#endif
