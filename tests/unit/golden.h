/*
 * golden - helpers for data-driven tests (like curl's tests/data): read
 * the files of a directory under $PB_SRC_DIR/tests/data, compare an
 * output with its expected file, or rewrite the expected file when
 * PB_GOLDEN_UPDATE=1 (then review the diff before committing it).
 */
#ifndef PB_TEST_GOLDEN_H
#define PB_TEST_GOLDEN_H

#include "util/buf.h"
#include "util/strlist.h"

/* Names in dir ending in suffix, sorted; dir is relative to tests/data. */
void golden_list(struct strlist *out, const char *dir, const char *suffix);

/* The path of name in dir (static buffer). */
const char *golden_path(const char *dir, const char *name);

/* Read a whole file into out; fails the test when it cannot. */
void golden_read(struct buf *out, const char *path);

/* True when the file exists. */
int golden_exists(const char *path);

/*
 * Compare got with the file at path; print both on a mismatch.  Returns
 * 1 when they match (or the file was rewritten), 0 otherwise.
 */
int golden_check(const char *path, const struct buf *got);

#endif
