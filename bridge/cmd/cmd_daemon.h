/*
 * cmd_daemon - the daemon's verbs: `send`, `run` and `status`.
 *
 *	patchbridge send [--force] [--retry] GROUP/PROJECT!IID
 *	patchbridge run [--once] [--foreground]
 *	patchbridge status
 *
 * Each takes the configuration file's path (main.c's -c) and its
 * arguments (argv[0] is the command name), and returns a sysexits.h exit
 * status.  The help texts below are what "patchbridge COMMAND --help"
 * prints (main.c's command table).
 */
#ifndef PB_CMD_DAEMON_H
#define PB_CMD_DAEMON_H

int cmd_send(const char *config_path, int argc, char **argv);
int cmd_run(const char *config_path, int argc, char **argv);
int cmd_status(const char *config_path, int argc, char **argv);

extern const char cmd_send_synopsis[], cmd_send_summary[], cmd_send_help[];
extern const char cmd_run_synopsis[], cmd_run_summary[], cmd_run_help[];
extern const char cmd_status_synopsis[], cmd_status_summary[],
	cmd_status_help[];

#endif
