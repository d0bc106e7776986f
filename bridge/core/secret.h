/*
 * secret - read a credential from a file: the forge token, the webhook
 * secret, the SMTP password.
 *
 * The file holds the secret on its first line; one trailing LF (or CRLF)
 * is removed, nothing else is trimmed.  The secret must be 1 to max
 * bytes of printable ASCII (tokens and passwords are, and a stray control
 * character would end up in an HTTP header or an SMTP AUTH line).
 *
 * Permissions are checked before the file is read, the way ssh treats a
 * private key: a secret file that the group or others may read or write
 * (mode & 077) is refused with PB_EPERM.  The daemon's state directory is
 * shared with the milter's group (see store.h), and the milter must never
 * hold a credential that can act on the forge (DESIGN.md, "Programs"), so
 * a group-readable token is a configuration error, not a warning.  Like
 * the configuration (util/perm.h), the file must be owned by root or
 * this user, in directories nobody else may write; else PB_EPERM too.
 *
 * Ownership: the secret is appended to the caller's buf; the caller wipes
 * it with secret_wipe() before releasing the buf.  Errors: PB_ENOTFOUND,
 * PB_EPERM (mode, or unreadable), PB_EINVAL (empty, too long, or not
 * printable), PB_ETEMP for I/O errors; err_msg() names the file, never
 * the secret.  Thread safety: none shared.
 */
#ifndef PB_CORE_SECRET_H
#define PB_CORE_SECRET_H

#include "util/buf.h"

#include <stddef.h>

#define SECRET_MAX 4096

/* Read path into out (reset first); max: 0 for SECRET_MAX. */
int secret_read(struct buf *out, const char *path, size_t max);

/* Overwrite the buffer's bytes and release it. */
void secret_wipe(struct buf *b);

#endif
