/*
 * cmd_export - `patchbridge export [--mbox FILE] [--public-inbox DIR] MR`:
 * an MR's whole conversation from the state database's mail archive.
 * Takes the configuration file's path and the arguments (argv[0] is the
 * command name); returns a sysexits.h exit status.
 */
#ifndef PB_CMD_EXPORT_H
#define PB_CMD_EXPORT_H

int cmd_export(const char *config_path, int argc, char **argv);

extern const char cmd_export_synopsis[], cmd_export_summary[],
	cmd_export_help[];

#endif
