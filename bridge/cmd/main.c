/*
 * patchbridge - the daemon and command-line program.
 *
 *	patchbridge [-c FILE] COMMAND [ARGS]
 *
 * Thin on purpose: it finds the configuration file, looks the command up
 * in commands[] and runs it.  A new verb is one more entry there, with its
 * own synopsis and help text; "patchbridge COMMAND --help" and the usage
 * listing come from the table.  Exit codes are those of <sysexits.h>.
 *
 * Programs.  This program is the front users run, and it links only what
 * the offline commands need: parse (GMime), check-config, dump-config,
 * list-params, help and version.  The commands that need git, the forge,
 * SMTP or the state database run in programs under libexec, which it
 * exec()s in its place (same pid, same arguments, the configuration path
 * passed on with -c):
 *
 *	patchbridge-format   format (libgit2)
 *	patchbridge-daemon   run, send, status, why, replay, export, and
 *	                     the forge half of check-config --forge
 *	                     (libgit2, libcurl and its TLS, SQLite,
 *	                     libmicrohttpd)
 *
 * A process that maps one library pays for loading and relocating it
 * and its dependencies whether it calls it or not: linked into one
 * program, those cost `patchbridge parse` about 55 shared objects and
 * 2-3 times the time of the parse, for nothing.  Separate programs keep
 * each command's start-up to what it uses, without dlopen() and its
 * hand-written symbol tables.  They are found next to this program, at
 * PB_LIBEXEC_REL from its directory (also in the build tree), else in
 * PB_LIBEXECDIR.
 */
#include "cmd/cmd_daemon.h"
#include "cmd/cmd_export.h"
#include "cmd/cmd_format.h"
#include "cmd/cmd_attest.h"
#include "cmd/cmd_parse.h"
#include "cmd/cmd_replay.h"
#include "cmd/cmd_why.h"
#include "cmd/env.h"
#include "core/config.h"
#include "core/configdoc.h"
#include "core/metrics.h"
#include "core/preflight.h"
#include "core/version.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/log.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

/* Where the programs under libexec are (set by the build). */
#ifndef PB_LIBEXEC_REL
#define PB_LIBEXEC_REL "../libexec/patchbridge"
#endif
#ifndef PB_LIBEXECDIR
#define PB_LIBEXECDIR "/usr/local/libexec/patchbridge"
#endif
#define PROG_FORMAT "patchbridge-format"
#define PROG_DAEMON "patchbridge-daemon"

struct command {
	const char *name; /* "check-config" */
	const char *alias; /* "--dump-config" style spelling, or NULL */
	const char *synopsis; /* arguments, for the usage listing */
	const char *summary; /* one line, for the usage listing */
	const char *help; /* the rest of "COMMAND --help" */
	int hidden; /* left out of the usage listing */
	/* argv[0] is the command's name; returns an exit code.  NULL: the
	 * command runs in program instead. */
	int (*run)(const struct command *cmd, int argc, char **argv);
	const char *program; /* under libexec; NULL: run here */
};

/* The configuration file: -c, else $PATCHBRIDGE_CONFIG, else the default. */
static const char *config_path;
/* -c or $PATCHBRIDGE_CONFIG named it. */
static int config_named;

static int cmd_check_config(const struct command *cmd, int argc, char **argv);
static int run_program(const char *name, int argc, char **argv);
/* The daemon program's hidden command behind check-config --forge. */
static char forge_check[] = "forge-check";
static char opt_database[] = "--database";
static char opt_forge[] = "--forge";
static int cmd_dump_config(const struct command *cmd, int argc, char **argv);
static int cmd_help(const struct command *cmd, int argc, char **argv);
static int cmd_version(const struct command *cmd, int argc, char **argv);
static int cmd_list_params(const struct command *cmd, int argc, char **argv);
static int cmd_list_metrics(const struct command *cmd, int argc, char **argv);
static int cmd_parse_entry(const struct command *cmd, int argc, char **argv);

static const struct command commands[] = {
	{ "attest-key", NULL, cmd_attest_key_synopsis, cmd_attest_key_summary,
	  cmd_attest_key_help, 0, NULL, PROG_FORMAT },
	{ "check-config", NULL,
	  "[--file-only | --no-postfix | --postfix-config DIR] "
	  "[--no-database] [--forge] [FILE]",
	  "check the configuration and report every error",
	  "Reads FILE (default: the configuration file) and checks every\n"
	  "line: syntax, known sections and keys, types, bounds, and the\n"
	  "rules between parameters.  Then what run checks at its start,\n"
	  "so that ok means it starts: the secret files read as the\n"
	  "daemon's user reads them, the files it opens and must own (the\n"
	  "spool's lock, waiting records, the state database and its\n"
	  "-journal, -wal and -shm files, its locks) and the ports of\n"
	  "[metrics] and [webhook].  Then what is around it: the files it\n"
	  "names exist (owners_file and user_map, the CA files; owners.yaml\n"
	  "is loaded), the spool's owners and modes, the milter socket's\n"
	  "directory, and whether Postfix will connect to the socket the\n"
	  "milter listens on (its settings read with postconf).  Prints\n"
	  "\"FILE: ok\" and exits 0, or prints every problem as\n"
	  "\"FILE:LINE: [section] key: message\" (host problems without\n"
	  "LINE, each naming its fix) and exits 78 (EX_CONFIG); 66\n"
	  "(EX_NOINPUT) when FILE cannot be read.  Warnings (Postfix not\n"
	  "configured for the milter yet) do not fail the check.  Then the\n"
	  "state database, opened read-only (with backend postgresql:\n"
	  "connected to with [state] conninfo_file): a \"state: ...\" line\n"
	  "gives its schema version, current, none yet or older (the\n"
	  "daemon creates or migrates it at start); it exits 75\n"
	  "(EX_TEMPFAIL) when the database cannot be reached, 77\n"
	  "(EX_NOPERM) when the login or the file's permissions are\n"
	  "refused, 78 when the schema is newer than this patchbridge.\n"
	  "Run it as the daemon's user.\n"
	  "\n"
	  "  --file-only            check the file alone, not the host\n"
	  "  --no-postfix           not the milter's socket and Postfix\n"
	  "                         (the daemon's unit: Postfix's wiring is\n"
	  "                         the milter's --check)\n"
	  "  --postfix-config DIR   the Postfix to read (default: postconf's,\n"
	  "                         or $MAIL_CONFIG)\n"
	  "  --no-database          not the state database\n"
	  "  --forge                then, when all is well, read the forge\n"
	  "                         token (as the daemon's user) and ask\n"
	  "                         GitLab what it may do: whose it is, its\n"
	  "                         scopes, and whether it can act as the\n"
	  "                         reviewers (Sudo), which approvals by mail\n"
	  "                         need (an administrator's token with the\n"
	  "                         api and sudo scopes, and admin_mode under\n"
	  "                         Admin Mode; gitlab.com gives none).  Exits\n"
	  "                         78 when it cannot do what the\n"
	  "                         configuration asks, 69 when the forge\n"
	  "                         cannot be asked.\n",
	  0, cmd_check_config, NULL },
	{ "dump-config", "--dump-config", "[-n]",
	  "print the effective configuration",
	  "Prints every parameter as \"[section] key = value\", with its\n"
	  "default when the file does not set it, then the parameters of\n"
	  "each [project \"group/name\"] section (inherited values\n"
	  "included).\n"
	  "\n"
	  "  -n    only the parameters the file sets\n",
	  0, cmd_dump_config, NULL },
	{ "export", NULL, cmd_export_synopsis, cmd_export_summary,
	  cmd_export_help, 0, NULL, PROG_DAEMON },
	{ "format", NULL, cmd_format_synopsis, cmd_format_summary,
	  cmd_format_help, 0, NULL, PROG_FORMAT },
	{ "help", "--help", "[COMMAND]", "show this list, or a command's help",
	  "", 0, cmd_help, NULL },
	{ "parse", NULL, cmd_parse_synopsis, cmd_parse_summary, cmd_parse_help,
	  0, cmd_parse_entry, NULL },
	{ "version", "--version", "", "print the version", "", 0, cmd_version,
	  NULL },
	{ "send", NULL, cmd_send_synopsis, cmd_send_summary, cmd_send_help, 0,
	  NULL, PROG_DAEMON },
	{ "run", NULL, cmd_run_synopsis, cmd_run_summary, cmd_run_help, 0, NULL,
	  PROG_DAEMON },
	{ "status", NULL, cmd_status_synopsis, cmd_status_summary,
	  cmd_status_help, 0, NULL, PROG_DAEMON },
	{ "why", NULL, cmd_why_synopsis, cmd_why_summary, cmd_why_help, 0, NULL,
	  PROG_DAEMON },
	{ "replay", NULL, cmd_replay_synopsis, cmd_replay_summary,
	  cmd_replay_help, 0, NULL, PROG_DAEMON },
	/* For the documentation check (tests/cli/params_documented.sh). */
	{ "list-params", "--list-params", "[--markdown | --man]",
	  "list every parameter as section.key",
	  "With --markdown, print the README's parameter tables instead;\n"
	  "with --man, the PARAMETERS section of patchbridge.conf(5).\n",
	  1, cmd_list_params, NULL },
	/* For the documentation check (tests/cli/metrics_documented.sh). */
	{ "list-metrics", "--list-metrics", "[--markdown | --man]",
	  "list every metric by name",
	  "With --markdown, print the README's metric table instead; with\n"
	  "--man, the METRICS paragraphs of patchbridge.conf(5).\n",
	  1, cmd_list_metrics, NULL },
	{ NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL },
};

static void usage(FILE *f)
{
	const struct command *c;

	fprintf(f,
		"usage: patchbridge [-c FILE] COMMAND [ARGS]\n"
		"\n"
		"Options:\n"
		"  -c, --config FILE     the configuration file (default: "
		"$%s,\n"
		"                        else %s)\n"
		"\n"
		"Commands:\n",
		CONFIG_ENV, CONFIG_DEFAULT_PATH);
	for (c = commands; c->name; c++) {
		char left[64];

		if (c->hidden)
			continue;
		snprintf(left, sizeof(left), "%s%s%s", c->name,
			 c->synopsis[0] ? " " : "", c->synopsis);
		/* A long synopsis gets a line of its own. */
		if (strlen(left) >= 22)
			fprintf(f, "  %s\n  %-22s%s\n", left, "", c->summary);
		else
			fprintf(f, "  %-22s%s\n", left, c->summary);
	}
	fprintf(f, "\nRun \"patchbridge COMMAND --help\" for a command's "
		   "help.\n");
}

static void command_help(FILE *f, const struct command *c)
{
	fprintf(f, "usage: patchbridge [-c FILE] %s%s%s\n\n%s\n", c->name,
		c->synopsis[0] ? " " : "", c->synopsis, c->summary);
	if (c->alias)
		fprintf(f, "Also spelt %s.\n", c->alias);
	if (c->help[0])
		fprintf(f, "\n%s", c->help);
}

static int bad_usage(const struct command *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Complain on stderr, show the usage there, return EX_USAGE. */
static int bad_usage(const struct command *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "patchbridge: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (c)
		command_help(stderr, c);
	else
		usage(stderr);
	return EX_USAGE;
}

/* Load path, printing every error; returns 0 or an exit code. */
static int load(struct config **out, const char *path)
{
	struct strlist errs = STRLIST_INIT;
	size_t i;
	int rc;

	rc = config_load(out, &errs, path);
	/* Problems in the file read "FILE:LINE: ...", like a compiler's. */
	strlist_for_each (&errs, i)
		fprintf(stderr, "%s%s\n",
			rc == PB_EINVAL ? "" : "patchbridge: ", errs.items[i]);
	strlist_release(&errs);
	return env_config_exit_code(rc);
}

static int cmd_check_config(const struct command *cmd, int argc, char **argv)
{
	struct preflight pf;
	struct config *cfg;
	const char *path = NULL, *postfix_dir = NULL;
	int i, rc, file_only = 0, no_postfix = 0, forge = 0, database = 1;
	size_t j;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--forge")) {
			forge = 1;
		} else if (!strcmp(argv[i], "--no-database")) {
			database = 0;
		} else if (!strcmp(argv[i], "--file-only")) {
			file_only = 1;
		} else if (!strcmp(argv[i], "--no-postfix")) {
			no_postfix = 1;
		} else if (!strcmp(argv[i], "--postfix-config")) {
			if (i + 1 == argc)
				return bad_usage(cmd, "%s needs a directory",
						 argv[i]);
			postfix_dir = argv[++i];
		} else if (argv[i][0] == '-') {
			return bad_usage(cmd, "unknown option: %s", argv[i]);
		} else if (path) {
			return bad_usage(cmd, "too many arguments: %s",
					 argv[i]);
		} else {
			path = argv[i];
		}
	}
	if (!path)
		path = config_path;
	rc = load(&cfg, path);
	if (rc)
		return rc;
	if (!file_only) {
		/* What is around the file (core/preflight.h). */
		preflight_init(&pf);
		/* What run checks at its start, first: "ok" means it starts. */
		preflight_start(&pf, cfg, PREFLIGHT_START_CHECK);
		preflight_files(&pf, cfg, PREFLIGHT_DAEMON);
		preflight_spool(&pf, cfg, PREFLIGHT_DAEMON);
		if (!no_postfix)
			preflight_socket(&pf, cfg,
					 config_str(cfg, CFG_MILTER_SOCKET),
					 postfix_dir, PREFLIGHT_DAEMON, 0117);
		strlist_for_each (&pf.warnings, j)
			fprintf(stderr, "%s: warning: %s\n", path,
				pf.warnings.items[j]);
		strlist_for_each (&pf.problems, j)
			fprintf(stderr, "%s: %s\n", path, pf.problems.items[j]);
		rc = pf.problems.nr ? EX_CONFIG : EX_OK;
		preflight_release(&pf);
	}
	if (!rc)
		printf("%s: ok\n", path);
	config_free(cfg);
	if (!rc && ((!file_only && database) || forge)) {
		/* the state and the forge are asked by the program that
		 * links their clients */
		char *args[5];
		int n = 0;

		args[n++] = forge_check;
		if (!file_only && database)
			args[n++] = opt_database;
		if (forge)
			args[n++] = opt_forge;
		args[n++] = (char *)path;
		args[n] = NULL;
		return run_program(PROG_DAEMON, n, args);
	}
	return rc;
}

static int cmd_dump_config(const struct command *cmd, int argc, char **argv)
{
	struct buf out = BUF_INIT(CONFIG_DUMP_MAX);
	struct config *cfg = NULL;
	unsigned flags = 0;
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n"))
			flags |= CONFIG_DUMP_SET_ONLY;
		else
			return bad_usage(cmd, "unknown argument: %s", argv[i]);
	}
	rc = load(&cfg, config_path);
	if (rc)
		goto out;
	if (config_dump(&out, cfg, flags)) {
		fprintf(stderr, "patchbridge: %s\n", err_msg());
		rc = EX_SOFTWARE;
		goto out;
	}
	fwrite(out.data, 1, out.len, stdout);
out:
	buf_release(&out);
	config_free(cfg);
	return rc;
}

static int cmd_version(const struct command *cmd, int argc, char **argv)
{
	if (argc > 1)
		return bad_usage(cmd, "unknown argument: %s", argv[1]);
	printf("patchbridge %s\n", pb_version());
	return EX_OK;
}

/* The documentation doc() writes, on standard output. */
static int print_doc(int (*doc)(struct buf *out))
{
	struct buf out = BUF_INIT(1024 * 1024);
	int rc = EX_OK;

	if (doc(&out)) {
		fprintf(stderr, "patchbridge: %s\n", err_msg());
		rc = EX_SOFTWARE;
	} else {
		fwrite(out.data, 1, out.len, stdout);
	}
	buf_release(&out);
	return rc;
}

static int cmd_list_params(const struct command *cmd, int argc, char **argv)
{
	size_t i;

	if (argc == 2 && !strcmp(argv[1], "--markdown"))
		return print_doc(configdoc_markdown);
	if (argc == 2 && !strcmp(argv[1], "--man"))
		return print_doc(configdoc_man);
	if (argc > 1)
		return bad_usage(cmd, "unknown argument: %s", argv[1]);
	/* Global parameters, then what a [project] section may set. */
	for (i = 0; i < CFG__COUNT; i++) {
		const struct config_param *p = config_param(i);

		if (strcmp(p->section, "project"))
			printf("%s.%s\n", p->section, p->key);
	}
	for (i = 0; i < CFG__COUNT; i++) {
		const struct config_param *p = config_param(i);

		if (!strcmp(p->section, "project") ||
		    (p->flags & CONFIG_PER_PROJECT))
			printf("project.%s\n", p->key);
	}
	return EX_OK;
}

static int cmd_list_metrics(const struct command *cmd, int argc, char **argv)
{
	size_t i;

	if (argc == 2 && !strcmp(argv[1], "--markdown"))
		return print_doc(metrics_doc_markdown);
	if (argc == 2 && !strcmp(argv[1], "--man"))
		return print_doc(metrics_doc_man);
	if (argc > 1)
		return bad_usage(cmd, "unknown argument: %s", argv[1]);
	for (i = 0; i < MET__COUNT; i++)
		printf("%s\n", metrics_def((enum metric_id)i)->name);
	return EX_OK;
}

/* parse works offline: a configuration only when one is named or the
 * default file is there to read. */
static int cmd_parse_entry(const struct command *cmd, int argc, char **argv)
{
	(void)cmd;
	return cmd_parse(
		config_named || !access(config_path, R_OK) ? config_path : NULL,
		argc, argv);
}

static const struct command *command_find(const char *name)
{
	const struct command *c;

	for (c = commands; c->name; c++)
		if (!strcmp(c->name, name) ||
		    (c->alias && !strcmp(c->alias, name)))
			return c;
	return NULL;
}

static int cmd_help(const struct command *cmd, int argc, char **argv)
{
	const struct command *c;

	if (argc > 2)
		return bad_usage(cmd, "too many arguments: %s", argv[2]);
	if (argc == 2) {
		c = command_find(argv[1]);
		if (!c)
			return bad_usage(NULL, "unknown command: %s", argv[1]);
		command_help(stdout, c);
		return EX_OK;
	}
	usage(stdout);
	return EX_OK;
}

/*
 * The program under libexec named name: next to this one first
 * (PB_LIBEXEC_REL from the directory of /proc/self/exe, which also works
 * in the build tree and in a DESTDIR staging tree), else in the
 * installed PB_LIBEXECDIR.  Returns a malloc'd path, or NULL.
 */
static char *program_path(const char *name)
{
	char self[PATH_MAX];
	char *slash, *path;
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			path = xasprintf("%s/%s/%s", self, PB_LIBEXEC_REL,
					 name);
			if (!access(path, X_OK))
				return path;
			free(path);
		}
	}
	path = xasprintf("%s/%s", PB_LIBEXECDIR, name);
	if (!access(path, X_OK))
		return path;
	free(path);
	return NULL;
}

/*
 * Run a command in its program under libexec, in this process's place:
 * "PROGRAM -c CONFIG COMMAND ARGS...".  Returns only on failure.
 */
static int run_program(const char *name, int argc, char **argv)
{
	char **args;
	char *path = program_path(name);
	int i;

	if (!path) {
		fprintf(stderr,
			"patchbridge: %s: not found next to patchbridge (%s) "
			"nor in %s; the installation is incomplete\n",
			name, PB_LIBEXEC_REL, PB_LIBEXECDIR);
		return EX_OSFILE;
	}
	args = xcalloc((size_t)argc + 4, sizeof(*args));
	args[0] = path;
	args[1] = xstrdup("-c");
	args[2] = xstrdup(config_path);
	for (i = 0; i < argc; i++)
		args[3 + i] = argv[i];
	fflush(NULL);
	execv(path, args);
	fprintf(stderr, "patchbridge: cannot run %s: %s\n", path,
		strerror(errno));
	free(args[1]);
	free(args[2]);
	free(args);
	free(path);
	return EX_OSERR;
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	int i, rc;

	log_open("patchbridge", LOG_SINK_STDERR);
	config_path = env_config_path();
	config_named = getenv(CONFIG_ENV) && getenv(CONFIG_ENV)[0];

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) {
			if (i + 1 == argc)
				return bad_usage(NULL, "%s needs a file name",
						 argv[i]);
			config_path = argv[++i];
			config_named = 1;
		} else if (!strncmp(argv[i], "--config=", 9)) {
			config_path = argv[i] + 9;
			config_named = 1;
		} else if (!strcmp(argv[i], "-h")) {
			usage(stdout);
			return EX_OK;
		} else {
			break;
		}
	}
	if (i == argc)
		return bad_usage(NULL, "no command given");
	cmd = command_find(argv[i]);
	if (!cmd)
		return bad_usage(NULL,
				 argv[i][0] == '-' ? "unknown option: %s" :
						     "unknown command: %s",
				 argv[i]);
	if (argc - i >= 2 &&
	    (!strcmp(argv[i + 1], "--help") || !strcmp(argv[i + 1], "-h"))) {
		command_help(stdout, cmd);
		rc = EX_OK;
	} else if (cmd->program) {
		rc = run_program(cmd->program, argc - i, argv + i);
	} else {
		rc = cmd->run(cmd, argc - i, argv + i);
	}
	return env_finish(rc);
}
