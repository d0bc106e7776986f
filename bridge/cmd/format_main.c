/*
 * patchbridge-format - `patchbridge format` (cmd_format.h), which needs
 * libgit2 but no forge, SMTP or state, and `patchbridge attest-key`
 * (cmd_attest.h), which needs the signing library format signs with and
 * the front must not load.  Installed under libexec and exec()ed by the
 * front; see "Programs" in main.c.
 */
#include "cmd/cmd_attest.h"
#include "cmd/cmd_format.h"
#include "cmd/env.h"
#include "cmd/prog.h"
#include "core/config.h"

#include <stddef.h>
#include <unistd.h>

static int format(const char *config_path, int argc, char **argv)
{
	(void)config_path; /* offline: no configuration */
	return cmd_format(argc, argv);
}

/* The configuration when there is one to read: the key file, the
 * bridge's address and the selector default to its. */
static int attest_key(const char *config_path, int argc, char **argv)
{
	struct config *cfg = NULL;
	int rc;

	if (!access(config_path, R_OK)) {
		rc = env_load_config(&cfg, config_path, 0);
		if (rc)
			return rc;
	}
	rc = cmd_attest_key(cfg, argc, argv);
	config_free(cfg);
	return rc;
}

static const struct prog_command commands[] = {
	{ "format", format },
	{ "attest-key", attest_key },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return prog_main("patchbridge-format", commands, argc, argv);
}
