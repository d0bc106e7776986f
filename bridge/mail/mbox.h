/*
 * mbox - reading an mbox file one message at a time, for
 * `patchbridge parse --mbox`.
 *
 * The flavour read is mboxrd, as `patchbridge export`, public-inbox and
 * b4 write it (docs/INTEROP.md): a message starts at a "From " line at
 * the start of the file or after an empty line (the "From_" line, which
 * is not part of the message); the empty line before it is the
 * separator and is dropped too; a body line ">From ", ">>From " ... loses
 * one '>'.  git format-patch's mbox reads the same way (it quotes
 * nothing; its "From <sha> Mon Sep 17 00:00:00 2001" lines start the
 * messages).  Line ends are kept as they are (LF or CRLF).
 *
 * The file is read in blocks, never whole, so an mbox of any size takes
 * the memory of one message: a message longer than the caller's cap is
 * skipped to its end and reported as oversize (its Message-ID unknown),
 * the rest go on.  A file that does not start with a From_ line is not
 * an mbox (PB_EINVAL), so a single mail given by mistake is refused
 * instead of read as nothing.
 *
 * Ownership: struct mbox is a heap object (mbox_open / mbox_free) that
 * owns its file descriptor and block.  Threads: one thread at a time.
 * Errors: 0 or a negative code with err_msg() set: PB_ENOTFOUND (no such
 * file; mbox_next: no more messages), PB_EPERM, PB_EINVAL (not an mbox),
 * PB_ETEMP (an I/O error).
 */
#ifndef PB_MAIL_MBOX_H
#define PB_MAIL_MBOX_H

#include "util/buf.h"

#include <stddef.h>

/* Bytes read from the file at a time (also the longest line a From_ or
 * ">From " check looks at the start of). */
#define MBOX_BLOCK (64 * 1024)

struct mbox;

/* Open path for reading ("-": standard input, which is not closed). */
int mbox_open(struct mbox **out, const char *path);
/* NULL allowed. */
void mbox_free(struct mbox *mb);

/*
 * The next message into msg (reset first; its cap is the largest message
 * kept).  *oversize is set when the message did not fit: msg then holds
 * its first msg->max bytes.  Returns 0, PB_ENOTFOUND after the last
 * message, or an error.
 */
int mbox_next(struct mbox *mb, struct buf *msg, int *oversize);

/* The number of the message mbox_next() returned last, from 1. */
size_t mbox_index(const struct mbox *mb);

#endif
