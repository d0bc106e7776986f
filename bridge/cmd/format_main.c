/*
 * patchbridge-format - `patchbridge format` (cmd_format.h), which needs
 * libgit2 but no forge, SMTP or state.  Installed under libexec and
 * exec()ed by the front; see "Programs" in main.c.
 */
#include "cmd/cmd_format.h"
#include "cmd/prog.h"

#include <stddef.h>

static int format(const char *config_path, int argc, char **argv)
{
	(void)config_path; /* offline: no configuration */
	return cmd_format(argc, argv);
}

static const struct prog_command commands[] = {
	{ "format", format },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return prog_main("patchbridge-format", commands, argc, argv);
}
