/*
 * secret - read a credential from a file: the forge token, the webhook
 * secret, the SMTP password, the attestation key.
 *
 * The file holds the secret on its first line; one trailing LF (or CRLF)
 * is removed, nothing else is trimmed.  The secret must be 1 to max
 * bytes of printable ASCII (tokens and passwords are, and a stray control
 * character would end up in an HTTP header or an SMTP AUTH line).
 *
 * Permissions are checked before the file is read, the way ssh treats a
 * private key, by secret_open(): the one check of a secret file, which
 * the daemon runs at start and check-config runs as the daemon's user
 * (secret_check_as()), so that check-config passes exactly the files
 * run takes.  A secret file must be
 *
 *   - a regular file (a FIFO is refused, never waited on), readable by
 *     this program's user;
 *   - owned by root or that user: whoever owns it may change it;
 *   - without group or other bits (mode & 077): the daemon's state
 *     directory is shared with the milter's group (see store.h), and
 *     the milter must never hold a credential that can act on the forge
 *     (DESIGN.md, "Programs"), so a group-readable token is a
 *     configuration error, not a warning;
 *   - in directories nobody else may write (util/perm.h, links
 *     resolved), since a replaced token file would act as someone else.
 *
 * Each refusal is PB_EPERM (PB_EINVAL for what is no regular file) with
 * a message that names the fix as the owning user ("chown
 * patchbridge:patchbridge FILE; chmod 0600 FILE"), never as root.
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
#include <sys/types.h>

#define SECRET_MAX 4096
/* The webhook secret's cap, which check-config applies as run does
 * (forge/webhook.h's WEBHOOK_SECRET_MAX; cmd_run.c asserts they agree). */
#define SECRET_WEBHOOK_MAX 1024

/*
 * Open path for reading and check it (above); *fd is -1 on error, else
 * the caller's to close.
 */
int secret_open(int *fd, const char *path);

/*
 * secret_read() as the user uid (with group gid and uid's supplementary
 * groups), in a child process when that is not this one's, the secret
 * wiped unused: check-config run as root checks what the daemon's user
 * will find, the file's content included.  The child's code and
 * message come back as this call's; the secret never does.  Call it
 * before threads start.
 */
int secret_check_as(uid_t uid, gid_t gid, const char *path, size_t max);

/*
 * A check of what a secret file holds, run where it is read (in the
 * child of secret_check_text_as()): 0, or an error with err_set() whose
 * message says what is wrong and never quotes the secret.
 */
typedef int (*secret_text_fn)(const char *text, size_t len);

/* secret_check_as(), and check(text) on what the file holds. */
int secret_check_text_as(uid_t uid, gid_t gid, const char *path, size_t max,
			 secret_text_fn check);

/*
 * Is text[0..len) the base64 of 32 bytes and nothing else - 43
 * characters of the alphabet and "=" - as patatt genkey writes an
 * ed25519 key ([outbound] attest_key_file)?  0 or PB_EINVAL.
 */
int secret_key32_b64(const char *text, size_t len);

/* Read path into out (reset first); max: 0 for SECRET_MAX.  The file is
 * opened and checked by secret_open(). */
int secret_read(struct buf *out, const char *path, size_t max);

/* Overwrite the buffer's bytes and release it. */
void secret_wipe(struct buf *b);

#endif
