/*
 * patchbridge-daemon - the commands of `patchbridge` that use the state
 * database, the forge, git and SMTP (cmd_daemon.h, cmd_why.h,
 * cmd_replay.h, cmd_export.h), and "forge-check FILE", the part of
 * `check-config --forge` that asks the forge (cmd_forgecheck.h).
 * Installed under libexec and exec()ed by the front; see "Programs" in
 * main.c.
 */
#include "cmd/cmd_daemon.h"
#include "cmd/cmd_export.h"
#include "cmd/cmd_forgecheck.h"
#include "cmd/cmd_replay.h"
#include "cmd/cmd_why.h"
#include "cmd/env.h"
#include "cmd/prog.h"
#include "core/config.h"

#include <stddef.h>

/* check-config --forge, once the front has checked FILE and the host. */
static int forge_check(const char *config_path, int argc, char **argv)
{
	struct config *cfg = NULL;
	int rc;

	rc = env_load_config(&cfg, argc > 1 ? argv[1] : config_path, 0);
	if (rc)
		return rc;
	rc = forgecheck_run(cfg);
	config_free(cfg);
	return rc;
}

static const struct prog_command commands[] = {
	{ "run", cmd_run },	  { "send", cmd_send },
	{ "status", cmd_status }, { "why", cmd_why },
	{ "replay", cmd_replay }, { "export", cmd_export },
	{ "forge-check", forge_check }, { NULL, NULL },
};

int main(int argc, char **argv)
{
	return prog_main("patchbridge-daemon", commands, argc, argv);
}
