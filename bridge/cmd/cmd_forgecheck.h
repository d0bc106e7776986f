/*
 * `patchbridge check-config --forge`: what the forge token is and may do,
 * in words an operator acts on.
 *
 * Reads [forge] token_file (so it must run as the daemon's user), asks
 * GitLab who the token is (GET /user) and what it may do (GET
 * /personal_access_tokens/self), and tries acting as its own user through
 * Sudo, which is what approvals by mail need: an administrator's token
 * with the sudo scope, and the admin_mode scope where Admin Mode is on
 * (doc/api/rest/authentication.md "Sudo").  Each finding is one line on
 * stdout; a finding that keeps a configured feature from working makes
 * the check fail.
 *
 * Errors: returns a sysexits.h code: 0 when the token can do what the
 * configuration asks, 78 (EX_CONFIG) when it cannot, 69
 * (EX_UNAVAILABLE) when the forge cannot be asked, 77 (EX_NOPERM) or 66
 * when the token file cannot be read.
 */
#ifndef PB_CMD_FORGECHECK_H
#define PB_CMD_FORGECHECK_H

struct config;

int forgecheck_run(const struct config *cfg);

/* check-config's look at the state database of a valid configuration:
 * reachable, and of a schema this patchbridge uses or migrates; prints
 * what it found; returns an exit status. */
int statecheck_run(const struct config *cfg);

#endif
