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
#include <stdio.h>
#include <string.h>

/* check-config's state and forge checks ("forge-check [--database]
 * [--forge] FILE"), once the front has checked FILE and the host. */
static int forge_check(const char *config_path, int argc, char **argv)
{
	struct config *cfg = NULL;
	const char *file = config_path;
	int i, rc, database = 0, forge = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--database"))
			database = 1;
		else if (!strcmp(argv[i], "--forge"))
			forge = 1;
		else
			file = argv[i];
	}
	/* the old form: "forge-check FILE" asked the forge only */
	if (!database && !forge)
		forge = 1;
	rc = env_load_config(&cfg, file, 0);
	if (rc)
		return rc;
	if (database)
		rc = statecheck_run(cfg);
	if (!rc && forge) {
		fflush(stdout);
		rc = forgecheck_run(cfg);
	}
	config_free(cfg);
	return rc;
}

static const struct prog_command commands[] = {
	{ "run", cmd_run },
	{ "send", cmd_send },
	{ "status", cmd_status },
	{ "why", cmd_why },
	{ "replay", cmd_replay },
	{ "export", cmd_export },
	{ "forge-check", forge_check },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return prog_main("patchbridge-daemon", commands, argc, argv);
}
