#include "state/storeconf.h"

#include "core/config.h"
#include "core/secret.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdio.h>
#include <string.h>

enum store_backend storeconf_backend(const struct config *cfg)
{
	return config_enum(cfg, CFG_STATE_BACKEND) ==
			       CONFIG_BACKEND_POSTGRESQL ?
		       STORE_BACKEND_POSTGRESQL :
		       STORE_BACKEND_SQLITE;
}

const char *storeconf_where(char *out, size_t size, const struct config *cfg)
{
	if (storeconf_backend(cfg) == STORE_BACKEND_POSTGRESQL)
		snprintf(out, size, "postgresql (conninfo_file %s)",
			 config_str(cfg, CFG_STATE_CONNINFO_FILE));
	else
		snprintf(out, size, "%s", config_str(cfg, CFG_STATE_PATH));
	return out;
}

/* The options [state] gives; conninfo holds the connection string. */
static int opts_from(struct store_opts *o, struct buf *conninfo,
		     const struct config *cfg, unsigned flags)
{
	const char *host = config_str(cfg, CFG_STATE_HOST);
	int rc;

	memset(o, 0, sizeof(*o));
	o->backend = storeconf_backend(cfg);
	o->flags = flags;
	o->busy_timeout_ms =
		(int)config_duration_ms(cfg, CFG_STATE_BUSY_TIMEOUT);
	o->host = host[0] ? host : NULL;
	o->lease = config_duration_ms(cfg, CFG_STATE_LEASE) / 1000;
	if (o->backend != STORE_BACKEND_POSTGRESQL) {
		o->target = config_str(cfg, CFG_STATE_PATH);
		return 0;
	}
	rc = secret_read(conninfo, config_str(cfg, CFG_STATE_CONNINFO_FILE), 0);
	if (rc)
		return err_prefix(rc, "[state] conninfo_file");
	o->target = conninfo->data;
	return 0;
}

int storeconf_open(struct store **out, const struct config *cfg, unsigned flags)
{
	struct buf conninfo = BUF_INIT(SECRET_MAX + 1);
	struct store_opts o;
	int rc;

	*out = NULL;
	rc = opts_from(&o, &conninfo, cfg, flags);
	if (!rc)
		rc = store_open_opts(out, &o);
	secret_wipe(&conninfo);
	return rc;
}

int storeconf_probe(int *version, char **name, const struct config *cfg)
{
	struct buf conninfo = BUF_INIT(SECRET_MAX + 1);
	struct store_opts o;
	int rc;

	*version = 0;
	*name = NULL;
	rc = opts_from(&o, &conninfo, cfg, STORE_RO);
	if (!rc)
		rc = store_probe(version, name, &o);
	secret_wipe(&conninfo);
	return rc;
}
