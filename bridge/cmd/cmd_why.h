/*
 * cmd_why - `patchbridge why [--json] MESSAGE-ID`: what the bridge did
 * with one mail, in plain words.
 *
 * Puts together what the bridge keeps about a Message-ID: the inbound
 * journal row (classification, state, attempts, why it was ignored or
 * died), the forge action journal (each action's kind, state and the
 * note's address on the forge), the spool records carrying it (new/,
 * cur/, done/, dead/ and a dead letter's reason file), the mail itself
 * when its record is still there (its trailers, and which of them became
 * approvals), and, for a mail the bridge sent, the thread map and the
 * outbound queue.  Reads only: the state database is opened read-only and
 * the spool with SPOOL_INSPECT, so it is safe next to a running daemon
 * and needs no forge token.
 *
 * --json prints the same facts as one JSON object with stable keys (see
 * cmd_why_help and README.md).
 *
 * Exit status (sysexits.h): EX_OK when the bridge has any record of the
 * mail, whatever became of it; EX_NOINPUT when it has none (the milter
 * passed the mail on without spooling it, or it has not arrived);
 * EX_USAGE; EX_DATAERR for a Message-ID that cannot be one; EX_CONFIG;
 * EX_NOPERM, EX_TEMPFAIL or EX_SOFTWARE when the state database cannot
 * be read, or when the mail is not in it and the spool cannot be read.
 */
#ifndef PB_CMD_WHY_H
#define PB_CMD_WHY_H

int cmd_why(const char *config_path, int argc, char **argv);

extern const char cmd_why_synopsis[];
extern const char cmd_why_summary[];
extern const char cmd_why_help[];

#endif
