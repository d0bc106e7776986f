/*
 * cmd_replay - `patchbridge replay [--apply-now] [--retry-now] [FILE.eml...]`.
 *
 * Feeds mail through the inbound pipeline as if patchbridge-milter had
 * seen it: each file is classified against the thread map by the
 * milter's own code (mail/classify.h, loop guard included) and, when it
 * is a reply to a bridged series, written to the spool with the same
 * record the milter writes.  The running daemon then applies it.  With
 * --apply-now the spool is drained and due mail applied at once
 * (inbound/inbound.h), unless another process is applying (the daemon):
 * then it is left to that one.  For operations (re-feeding mail the
 * milter missed), backfill and tests.
 *
 * Takes the configuration file's path and the arguments (argv[0] is the
 * command name).  Exit status (sysexits.h): EX_OK when every file was
 * spooled or is not a reply to a bridged series; EX_USAGE; EX_NOINPUT
 * when a file cannot be read; EX_TEMPFAIL when the spool refused one
 * (full, I/O); EX_CONFIG; EX_SOFTWARE when applying failed for a reason
 * other than the forge being down (the mail stays in the journal).
 */
#ifndef PB_CMD_REPLAY_H
#define PB_CMD_REPLAY_H

int cmd_replay(const char *config_path, int argc, char **argv);

extern const char cmd_replay_synopsis[];
extern const char cmd_replay_summary[];
extern const char cmd_replay_help[];

#endif
