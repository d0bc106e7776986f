#include "inbound/position.h"

#include <string.h>

#define RENAMED (-2)

/* The index of the file called path in d, -1 for none, RENAMED when a
 * patch renames it (we do not follow lines across renames). */
static long file_of(const struct diff *d, const char *path)
{
	size_t i;

	for (i = 0; i < d->nr_files; i++) {
		const char *o = d->files[i].old_path, *n = d->files[i].new_path;

		if ((o && !strcmp(o, path)) || (n && !strcmp(n, path)))
			return o && n && strcmp(o, n) ? RENAMED : (long)i;
	}
	return -1;
}

/*
 * Carry line n of a file through one patch: forward from its old side
 * to its new side, or back.  0 when the line does not survive (removed
 * going forward, added going back) or falls in a hunk we do not have
 * whole.
 */
static int carry(const struct diff *d, size_t file, int n, int forward)
{
	long delta = 0;
	size_t i, j;

	for (i = 0; i < d->nr_hunks; i++) {
		const struct diff_hunk *h = &d->hunks[i];
		int start = forward ? h->old_start : h->new_start;
		int count = forward ? h->old_count : h->new_count;
		int other = forward ? h->new_count : h->old_count;

		if (h->file != file)
			continue;
		/* An empty side names the line before the change. */
		if (count == 0 ? n <= start : n < start)
			break;
		if (n >= start + count) {
			delta += other - count;
			continue;
		}
		if (!h->complete)
			return 0;
		for (j = h->first; j < h->first + h->nr; j++) {
			const struct diff_line *l = &d->lines[j];
			int here = forward ? l->old_no : l->new_no;

			if (here != n)
				continue;
			if (l->kind == ' ')
				return forward ? l->new_no : l->old_no;
			if (l->kind == (forward ? '-' : '+'))
				return 0;
		}
		return 0;
	}
	return n + (int)delta;
}

/* One step of walk(): 0 when nothing is sure any more. */
static int step(int *n, const struct diff *d, const char *path, int forward)
{
	long f;

	if (!d)
		return 0; /* a patch we do not know */
	f = file_of(d, path);
	if (f == RENAMED)
		return 0;
	if (f >= 0 && *n)
		*n = carry(d, (size_t)f, *n, forward);
	return 1;
}

/* Carry *n from patch k to the head (forward) or to the base (back). */
static int walk(int *n, const struct diff *const *patches, size_t k, size_t nr,
		const char *path, int forward)
{
	size_t j;

	if (forward) {
		for (j = k + 1; j < nr; j++)
			if (!step(n, patches[j], path, 1))
				return 0;
	} else {
		for (j = k; j-- > 0;)
			if (!step(n, patches[j], path, 0))
				return 0;
	}
	return 1;
}

int position_map(enum forge_line_kind *kind, int64_t *old_line,
		 int64_t *new_line, const struct diff *const *patches,
		 size_t nr, size_t k, const char *old_path,
		 const char *new_path, int old_no, int new_no)
{
	int o = old_path ? old_no : 0, n = new_path ? new_no : 0;

	*old_line = *new_line = 0;
	if (k >= nr || (!o && !n))
		return 0;
	if (old_path && !walk(&o, patches, k, nr, old_path, 0))
		return 0;
	if (new_path && !walk(&n, patches, k, nr, new_path, 1))
		return 0;
	if (o && n)
		*kind = FORGE_LINE_CONTEXT;
	else if (n)
		*kind = FORGE_LINE_ADDED;
	else if (o)
		*kind = FORGE_LINE_REMOVED;
	else
		return 0;
	*old_line = o;
	*new_line = n;
	return 1;
}
