/*
 * cmd_parse - `patchbridge parse [--patch PARENT.eml] FILE.eml`.
 *
 * Offline: one mail in, one JSON object out (the stable schema of
 * DESIGN.md, "patchbridge parse output"), printed by mail/review.c.
 * --patch names the patch mail the reply answers, so inline comments
 * resolve to real line numbers even when the quote was trimmed.  No
 * state: target is null.
 *
 * With a configuration (config_path not NULL), Authentication-Results
 * fields are judged as the milter and the daemon judge them ([milter]
 * trusted_authserv_id and trusted_authres_fields, core/authres.h, the
 * same code): FILE is the mail as Postfix hands it to the milter, or a
 * spool record (which holds exactly that).  Without one nothing is
 * trusted.
 *
 * argv[0] is the command name.  Returns the process exit status
 * (sysexits.h): EX_OK, EX_USAGE, EX_NOINPUT (a file cannot be read),
 * EX_DATAERR (not a mail, or over a limit), EX_CONFIG (the configuration
 * does not load), EX_SOFTWARE.
 */
#ifndef PB_CMD_PARSE_H
#define PB_CMD_PARSE_H

int cmd_parse(const char *config_path, int argc, char **argv);

/* The texts for bridge/main.c's usage listing and "parse --help". */
extern const char cmd_parse_synopsis[];
extern const char cmd_parse_summary[];
extern const char cmd_parse_help[];

#endif
