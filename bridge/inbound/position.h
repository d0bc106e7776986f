/*
 * position - a line of one patch of a series, on the MR version's diff.
 *
 * A reviewer comments on patch k as it was mailed: its line numbers are
 * those of the file before and after commit k.  A GitLab diff note sits
 * on the MR version, whose diff runs from the base to the head of the
 * whole series.  The numbers agree only when no other patch of the
 * series touches the file; otherwise they are carried through the other
 * patches' hunks: the old side back through patches k-1 .. 1 to the
 * base, the new side forward through patches k+1 .. M to the head.
 *
 * On the way a line can change its nature, as GitLab sees it: a context
 * line of patch k that an earlier patch added is an added line of the
 * series (new side only); one a later patch removes is a removed line
 * (old side only).  A line added by patch k and removed by a later one,
 * or removed by patch k after an earlier one added it, is on neither
 * side of the series' diff: it cannot be placed, and the caller posts
 * the comment as a discussion quoting the line instead.  So does a file
 * that another patch renames.
 *
 * Pure and thread-safe; the diffs are borrowed.
 */
#ifndef PB_INBOUND_POSITION_H
#define PB_INBOUND_POSITION_H

#include "forge/forge.h"
#include "mail/diff.h"

#include <stddef.h>
#include <stdint.h>

/*
 * patches[0..nr) are the series' diffs in order (NULL entries: unknown,
 * which makes every file they might touch unplaceable), k the index of
 * the patch commented on.  old_path is the file's name before patch k
 * (NULL: created by it), new_path after it; old_no / new_no the line's
 * numbers in patch k (0: that side is absent).  On success returns 1
 * with the kind and the numbers on the series' diff (0 for an absent
 * side); returns 0 when the line cannot be placed.
 */
int position_map(enum forge_line_kind *kind, int64_t *old_line,
		 int64_t *new_line, const struct diff *const *patches,
		 size_t nr, size_t k, const char *old_path,
		 const char *new_path, int old_no, int new_no);

#endif
