/*
 * `patchbridge send GROUP/PROJECT!IID`: mail the MR's current revision
 * now, through the same code as the daemon (outbound.h), and say what
 * happened on stdout.
 */
#include "cmd/cmd_daemon.h"
#include "cmd/env.h"

#include "core/config.h"
#include "outbound/outbound.h"
#include "util/err.h"
#include "util/log.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

static int usage_error(const char *what)
{
	fprintf(stderr,
		"patchbridge send: %s\n"
		"usage: patchbridge send %s\n"
		"Try \"patchbridge send --help\".\n",
		what, cmd_send_synopsis);
	return EX_USAGE;
}

static int report(const char *spec, const struct outbound_report *rep)
{
	char when[32];

	switch (rep->outcome) {
	case OUTBOUND_NOTHING:
		printf("%s: not mailed: %s\n", spec, rep->reason);
		return EX_OK;
	case OUTBOUND_ALREADY:
		if (rep->sent)
			printf("%s: already mailed as v%d; its %d waiting "
			       "mail%s sent now\n",
			       spec, rep->revision, rep->sent,
			       rep->sent == 1 ? "" : "s");
		else
			printf("%s: already mailed as v%d\n", spec,
			       rep->revision);
		return EX_OK;
	case OUTBOUND_MAILED:
		printf("%s: mailed v%d (%d mail%s)\n", spec, rep->revision,
		       rep->mails, rep->mails == 1 ? "" : "s");
		return EX_OK;
	case OUTBOUND_PENDING:
		env_time(when, sizeof(when), rep->next_attempt);
		printf("%s: ", spec);
		if (rep->revision)
			printf("v%d: ", rep->revision);
		printf("%s: %d mail%s sent now, %d waiting", rep->reason,
		       rep->sent, rep->sent == 1 ? "" : "s", rep->deferred);
		if (rep->next_attempt)
			printf(" (next attempt %s)", when);
		printf(", %d failed for good\n", rep->failed);
		return rep->deferred ? EX_TEMPFAIL : EX_UNAVAILABLE;
	case OUTBOUND_WAITING:
		env_time(when, sizeof(when), rep->next_attempt);
		printf("%s: not mailed yet: %s (looked at again %s; --force "
		       "mails it now)\n",
		       spec, rep->reason, when);
		return EX_TEMPFAIL;
	}
	return EX_SOFTWARE;
}

int cmd_send(const char *config_path, int argc, char **argv)
{
	const struct config_project *proj;
	struct outbound_report rep;
	struct config *cfg = NULL;
	struct env env;
	char project[CONFIG_PROJECT_MAX + 1];
	const char *spec = NULL;
	unsigned flags = 0;
	int64_t iid;
	int i, rc, level;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--force"))
			flags |= OUTBOUND_FORCE;
		else if (!strcmp(argv[i], "--retry"))
			flags |= OUTBOUND_RETRY_FAILED;
		else if (argv[i][0] == '-')
			return usage_error("unknown option");
		else if (spec)
			return usage_error("one merge request at a time");
		else
			spec = argv[i];
	}
	if (!spec)
		return usage_error("which merge request?");
	if (outbound_parse_mr(project, sizeof(project), &iid, spec))
		return usage_error("want GROUP/PROJECT!IID");
	rc = env_load_config(&cfg, config_path, 0);
	if (rc)
		return rc;
	level = log_level_from_name(config_str(cfg, CFG_LOG_LEVEL));
	if (level >= 0)
		log_set_level(level);
	if (config_project_get(&proj, cfg, project)) {
		fprintf(stderr,
			"patchbridge send: %s has no [project \"%s\"] "
			"section in %s\n",
			project, project, config_path);
		config_free(cfg);
		return EX_USAGE;
	}
	/* A closed pipe to sendmail must be an error, not our death. */
	signal(SIGPIPE, SIG_IGN);
	rc = env_open(&env, cfg, NULL);
	if (rc) {
		fprintf(stderr, "patchbridge send: %s\n", err_msg());
		return rc == PB_EINVAL ? EX_CONFIG : env_exit_code(rc);
	}
	rc = outbound_mr(&rep, env.ob, project, iid, flags);
	if (rc) {
		fprintf(stderr, "patchbridge send: %s: %s\n", spec, err_msg());
		rc = env_exit_code(rc);
	} else {
		rc = report(spec, &rep);
	}
	env_close(&env);
	return rc;
}
