/*
 * cmd_parse - `patchbridge parse [--patch PARENT.eml] FILE.eml`.
 *
 * Offline: one mail in, one JSON object out (the stable schema of
 * DESIGN.md, "patchbridge parse output"), printed by mail/review.c.
 * --patch names the patch mail the reply answers, so inline comments
 * resolve to real line numbers even when the quote was trimmed.  No
 * configuration, no state: target is null and no Authentication-Results
 * field is trusted.
 *
 * argv[0] is the command name.  Returns the process exit status
 * (sysexits.h): EX_OK, EX_USAGE, EX_NOINPUT (a file cannot be read),
 * EX_DATAERR (not a mail, or over a limit), EX_SOFTWARE.
 */
#ifndef PB_CMD_PARSE_H
#define PB_CMD_PARSE_H

int cmd_parse(int argc, char **argv);

/* The same, in the shape of bridge/main.c's command table, and the texts
 * for its usage listing and "parse --help". */
struct command;
int cmd_parse_run(const struct command *cmd, int argc, char **argv);
extern const char cmd_parse_synopsis[];
extern const char cmd_parse_summary[];
extern const char cmd_parse_help[];

#endif
