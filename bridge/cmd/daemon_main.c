/*
 * patchbridge-daemon - the commands of `patchbridge` that use the state
 * database, the forge, git and SMTP (cmd_daemon.h, cmd_why.h,
 * cmd_replay.h, cmd_export.h).  Installed under libexec and exec()ed by
 * the front; see "Programs" in main.c.
 */
#include "cmd/cmd_daemon.h"
#include "cmd/cmd_export.h"
#include "cmd/cmd_replay.h"
#include "cmd/cmd_why.h"
#include "cmd/prog.h"

#include <stddef.h>

static const struct prog_command commands[] = {
	{ "run", cmd_run },	  { "send", cmd_send },
	{ "status", cmd_status }, { "why", cmd_why },
	{ "replay", cmd_replay }, { "export", cmd_export },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return prog_main("patchbridge-daemon", commands, argc, argv);
}
