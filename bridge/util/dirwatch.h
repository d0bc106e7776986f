/*
 * dirwatch - be woken when a name appears in a directory.
 *
 * The daemon takes the milter's records from the spool's new/ as they
 * come, instead of only when it next looks (every few seconds): a
 * record arrives by rename(2) into new/, which inotify(7) reports as
 * IN_MOVED_TO (IN_CREATE too, for writers that create in place).  The
 * watch only says "something may have arrived": the caller reads the
 * directory itself, so a lost or merged event (the queue overflowing,
 * IN_Q_OVERFLOW) costs nothing but a look, and a periodic look stays
 * the fallback.
 *
 * Ownership: struct dirwatch is a heap object (dirwatch_open /
 * dirwatch_free) owning its descriptor.  Threads: one at a time.
 * Errors: dirwatch_open() returns 0 or a negative code with err_msg()
 * (PB_ENOTFOUND no such directory, PB_ELIMIT out of inotify watches or
 * instances, PB_ERROR otherwise).
 */
#ifndef PB_UTIL_DIRWATCH_H
#define PB_UTIL_DIRWATCH_H

struct dirwatch;

int dirwatch_open(struct dirwatch **out, const char *dir);
/* NULL allowed. */
void dirwatch_free(struct dirwatch *w);

/* A descriptor that becomes readable (poll POLLIN) on an arrival. */
int dirwatch_fd(const struct dirwatch *w);

/* Read the pending events without blocking: 1 when something arrived
 * (or events were lost), 0 when nothing did. */
int dirwatch_drain(struct dirwatch *w);

#endif
