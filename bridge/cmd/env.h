/*
 * env - what the daemon's commands (`send`, `run`) work with, built from
 * one loaded configuration: the forge token, the state store (read and
 * write), the GitLab client, the mail submitter and the outbound mailer.
 *
 * env_open() takes ownership of the config on success and on failure;
 * env_close() frees everything (NULL members allowed), wiping the token.
 * A daemon reloading its configuration builds a new env from the new
 * config and closes the old one only when the new one is complete, so a
 * broken file never leaves it without a working env.
 *
 * The forge token comes from [forge] token_file, the SMTP password from
 * [smtp] password_file; both must be readable by the daemon's user only
 * (core/secret.h refuses group- or world-readable files).
 *
 * Threads: one env belongs to the main thread.  Errors: 0 or a negative
 * code with err_msg() saying what could not be set up.
 */
#ifndef PB_CMD_ENV_H
#define PB_CMD_ENV_H

#include "util/buf.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct forge;
struct outbound;
struct store;
struct submit;

struct env {
	struct config *cfg;
	struct store *store;
	struct forge *forge;
	struct submit *submit;
	struct outbound *ob;
	struct buf token;
};

/* stop: the flag a signal handler sets (may be NULL); the outbound mailer
 * and the forge client look at it (gitlab.h: a stop cuts forge retries
 * and hanging requests short). */
int env_open(struct env *e, struct config *cfg,
	     const volatile sig_atomic_t *stop);
void env_close(struct env *e);

/*
 * Load the configuration file, printing every problem to stderr (as
 * check-config does) unless log is set, in which case they are logged.
 * Returns 0 or a sysexits.h code.
 */
int env_load_config(struct config **out, const char *path, int log);

/*
 * The GitLab client from [forge], as every command uses it: the token
 * read from token_file into token (the caller wipes it with
 * secret_wipe() after forge_free()).  stop: as for env_open() (may be
 * NULL).
 */
int env_forge_open(struct forge **out, struct buf *token,
		   const struct config *cfg, const volatile sig_atomic_t *stop);

/*
 * The one mapping of our error codes to sysexits.h, for every command:
 * env_exit_code() for a failed operation (PB_ENOTFOUND 66, PB_EINVAL and
 * PB_ELIMIT 65, PB_EPERM 77, PB_ETEMP 75, else 70), and
 * env_config_exit_code() for a configuration that did not load
 * (PB_EINVAL 78, unreadable 66, else 74).  0 maps to 0.
 */
int env_exit_code(int rc);
int env_config_exit_code(int rc);

/*
 * After a PB_EPERM opening path, tell the operator on stderr what is
 * closed to them and which group to join (core/preflight.h); prefix is
 * "patchbridge status" and the like.  Nothing for other codes.
 */
void env_perm_hint(int rc, const char *prefix, const char *path);

/* t (Unix seconds) as "2026-12-03T10:01:00Z" in UTC, or "-" for 0. */
void env_time(char *out, size_t size, int64_t t);

#endif
