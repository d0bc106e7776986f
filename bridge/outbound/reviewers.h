/*
 * reviewers - who must still review, per subsystem, for the cover letter.
 *
 * owners.yaml has two kinds of reviewers (core/owners.h): a subsystem with
 * requiredApproval wants an approval from one of its maintainers, and
 * everyone else it names - its reviewers, its restricted people (notified,
 * never required), the maintainers of a subsystem without
 * requiredApproval - is only told.  reviewers_cover() writes the cover
 * letter's {{reviewers}} block for a change to paths[0..n):
 *
 *	Reviewers of the subsystems touched:
 *	- net: required Mary Maintainer; optional Rob Reviewer
 *	- docs: optional Dana Docs
 *
 * one line per touched subsystem in owners.yaml order (its labels.name,
 * else its title), each person once per line (by email, ignoring case),
 * by name (the address when the file gives none), cleaned to one line.
 * Empty when no subsystem is touched or o is NULL.
 *
 * Thread safety: pure.  Errors: PB_EINVAL for a bad path (owners.h),
 * PB_ELIMIT from the output buf.
 */
#ifndef PB_OUTBOUND_REVIEWERS_H
#define PB_OUTBOUND_REVIEWERS_H

#include "core/owners.h"
#include "util/buf.h"

#include <stddef.h>

int reviewers_cover(struct buf *out, const struct owners *o,
		    const char *const *paths, size_t n);

#endif
