/*
 * The parts of env.h that every program uses - the exit codes, loading
 * the configuration, times - kept apart from env_open() so that the
 * `patchbridge` front links them without the forge client, the store and
 * the mailer (see "Programs" in main.c).
 */
#include "cmd/env.h"

#include "core/config.h"
#include "core/preflight.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/strlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <sysexits.h>
#include <time.h>

void env_time(char *out, size_t size, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!t || !gmtime_r(&tt, &tm) ||
	    !strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, size, "-");
}

void env_perm_hint(int rc, const char *prefix, const char *path)
{
	struct buf hint = BUF_INIT(PB_LOGLINE_MAX);

	if (rc != PB_EPERM)
		return;
	if (!preflight_access_hint(&hint, path) && hint.len)
		fprintf(stderr, "%s: %s\n", prefix, hint.data);
	buf_release(&hint);
}

int env_exit_code(int rc)
{
	switch (rc) {
	case 0:
		return EX_OK;
	case PB_ENOTFOUND:
		return EX_NOINPUT;
	case PB_EINVAL:
	case PB_ELIMIT:
		return EX_DATAERR;
	case PB_EPERM:
		return EX_NOPERM;
	case PB_ETEMP:
		return EX_TEMPFAIL;
	default:
		return EX_SOFTWARE;
	}
}

int env_config_exit_code(int rc)
{
	switch (rc) {
	case 0:
		return EX_OK;
	case PB_EINVAL:
		return EX_CONFIG;
	case PB_ENOTFOUND:
	case PB_EPERM:
		return EX_NOINPUT;
	default:
		return EX_IOERR;
	}
}

int env_load_config(struct config **out, const char *path, int log)
{
	struct strlist errs = STRLIST_INIT;
	size_t i;
	int rc;

	rc = config_load(out, &errs, path);
	strlist_for_each (&errs, i) {
		if (log)
			log_error("%s", errs.items[i]);
		else
			fprintf(stderr, "%s%s\n",
				rc == PB_EINVAL ? "" : "patchbridge: ",
				errs.items[i]);
	}
	strlist_release(&errs);
	return env_config_exit_code(rc);
}

const char *env_config_path(void)
{
	const char *path = getenv(CONFIG_ENV);

	return path && path[0] ? path : CONFIG_DEFAULT_PATH;
}

int env_finish(int rc)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr,
			"patchbridge: write error on standard output\n");
		return rc ? rc : EX_IOERR;
	}
	return rc;
}
