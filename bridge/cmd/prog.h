/*
 * prog - the main() of the programs under libexec that the `patchbridge`
 * front exec()s for the commands it does not run itself (see "Programs"
 * in main.c): patchbridge-daemon and patchbridge-format.
 *
 *	PROGRAM [-c FILE] COMMAND [ARGS]
 *
 * The front always passes -c; without it the configuration file is
 * found as the front finds it ($PATCHBRIDGE_CONFIG, else the default).
 * Help texts and the usage listing are the front's: these programs only
 * run commands.
 */
#ifndef PB_CMD_PROG_H
#define PB_CMD_PROG_H

struct prog_command {
	const char *name;
	/* argv[0] is the command's name; returns a sysexits.h status */
	int (*run)(const char *config_path, int argc, char **argv);
};

/* Run the command argv names from table (ended by a NULL name). */
int prog_main(const char *prog, const struct prog_command *table, int argc,
	      char **argv);

#endif
