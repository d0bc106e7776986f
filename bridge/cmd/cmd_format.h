/*
 * cmd_format - `patchbridge format`: a commit range (+ MR metadata) to the
 * series as an mbox, offline: no forge, no SMTP, no state.  The same
 * renderer as the daemon (series.h), so what it prints is what the list
 * would receive.
 *
 * argv[0] is the command name.  Returns the process exit status
 * (sysexits.h): EX_OK, EX_USAGE, or a failure code with the message on
 * stderr.
 */
#ifndef PB_CMD_FORMAT_H
#define PB_CMD_FORMAT_H

int cmd_format(int argc, char **argv);

/* The same, in the shape of bridge/main.c's command table, and the texts
 * for its usage listing and "format --help". */
struct command;
int cmd_format_run(const struct command *cmd, int argc, char **argv);
extern const char cmd_format_synopsis[];
extern const char cmd_format_summary[];
extern const char cmd_format_help[];

#endif
