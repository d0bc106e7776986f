#include "cmd/prog.h"

#include "cmd/env.h"
#include "util/log.h"

#include <stdio.h>
#include <string.h>
#include <sysexits.h>

int prog_main(const char *prog, const struct prog_command *table, int argc,
	      char **argv)
{
	const struct prog_command *c;
	const char *config_path;
	int i;

	log_open("patchbridge", LOG_SINK_STDERR);
	config_path = env_config_path();
	for (i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) &&
		    i + 1 < argc)
			config_path = argv[++i];
		else if (!strncmp(argv[i], "--config=", 9))
			config_path = argv[i] + 9;
		else
			break;
	}
	for (c = table; i < argc && c->name; c++)
		if (!strcmp(c->name, argv[i]))
			break;
	if (i == argc || !c->name) {
		fprintf(stderr,
			"%s: usage: %s [-c FILE] COMMAND [ARGS] (run by "
			"patchbridge; see \"patchbridge help\")\n",
			prog, prog);
		return EX_USAGE;
	}
	return env_finish(c->run(config_path, argc - i, argv + i));
}
