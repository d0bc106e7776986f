/*
 * cmd_attest - `patchbridge attest-key`: the bridge's attestation key
 * ([outbound] attest, mail/patatt.h).  Makes a key (--generate FILE:
 * a new file, mode 0600, as patatt genkey writes it) or reads one (FILE,
 * else [outbound] attest_key_file), and prints its public key with what
 * an operator publishes: the file of the project's patatt keyring,
 * ed25519/DOMAIN/LOCAL/SELECTOR, and how b4 and patatt are pointed at
 * it.
 *
 * cfg may be NULL (no configuration file): the identity and selector
 * then come from the options alone.  argv[0] is the command name.
 * Returns the process exit status (sysexits.h): EX_OK, EX_USAGE,
 * EX_NOINPUT (no key file), EX_CANTCREAT (--generate over an existing
 * file), EX_NOPERM, EX_DATAERR (not a key), EX_CONFIG.
 */
#ifndef PB_CMD_ATTEST_H
#define PB_CMD_ATTEST_H

struct config;

int cmd_attest_key(const struct config *cfg, int argc, char **argv);

extern const char cmd_attest_key_synopsis[];
extern const char cmd_attest_key_summary[];
extern const char cmd_attest_key_help[];

#endif
