#include "cmd/env.h"

#include "core/config.h"
#include "core/secret.h"
#include "forge/forge.h"
#include "forge/gitlab.h"
#include "outbound/outbound.h"
#include "outbound/submit.h"
#include "state/store.h"
#include "state/storeconf.h"
#include "util/err.h"

#include <string.h>

static const char *opt(const char *s)
{
	return s && *s ? s : NULL;
}

int env_forge_open(struct forge **out, struct buf *token,
		   const struct config *cfg, const volatile sig_atomic_t *stop)
{
	struct forge_gitlab_opts o;
	int rc;

	*out = NULL;
	rc = secret_read(token, config_str(cfg, CFG_FORGE_TOKEN_FILE), 0);
	if (rc)
		return err_prefix(rc, "[forge] token_file");
	memset(&o, 0, sizeof(o));
	o.base_url = config_str(cfg, CFG_FORGE_URL);
	o.token = token->data;
	o.ca_file = opt(config_str(cfg, CFG_FORGE_CA_FILE));
	o.connect_timeout_ms =
		(long)config_duration_ms(cfg, CFG_FORGE_CONNECT_TIMEOUT);
	o.timeout_ms = (long)config_duration_ms(cfg, CFG_FORGE_TIMEOUT);
	o.max_retries = (int)config_int(cfg, CFG_FORGE_MAX_RETRIES);
	o.retry_base_ms = config_duration_ms(cfg, CFG_FORGE_RETRY_BASE);
	o.retry_max_ms = config_duration_ms(cfg, CFG_FORGE_RETRY_MAX);
	o.body_max = config_size(cfg, CFG_FORGE_MAX_RESPONSE_SIZE);
	/* A stop cuts retries and hanging requests short (gitlab.h). */
	o.stop = stop;
	return forge_gitlab_new(out, &o);
}

static int open_submit(struct env *e)
{
	const struct config *cfg = e->cfg;
	struct buf password = BUF_INIT(SECRET_MAX + 1);
	struct submit_opts o;
	int rc = 0;

	memset(&o, 0, sizeof(o));
	o.url = config_str(cfg, CFG_SMTP_URL);
	o.starttls = config_bool(cfg, CFG_SMTP_STARTTLS);
	o.ca_file = opt(config_str(cfg, CFG_SMTP_CA_FILE));
	o.sendmail_path = opt(config_str(cfg, CFG_SMTP_SENDMAIL_PATH));
	o.timeout_ms = (long)config_duration_ms(cfg, CFG_SMTP_TIMEOUT);
	o.envelope_from = config_str(cfg, CFG_BRIDGE_ADDRESS);
	if (*config_str(cfg, CFG_SMTP_USERNAME)) {
		rc = secret_read(&password,
				 config_str(cfg, CFG_SMTP_PASSWORD_FILE), 0);
		if (rc) {
			err_prefix(rc, "[smtp] password_file");
			goto out;
		}
		o.username = config_str(cfg, CFG_SMTP_USERNAME);
		o.password = password.data;
	}
	rc = submit_new(&e->submit, &o);
	if (rc)
		err_prefix(rc, "[smtp]");
out:
	secret_wipe(&password);
	return rc;
}

int env_open(struct env *e, struct config *cfg,
	     const volatile sig_atomic_t *stop)
{
	struct outbound_opts oo;
	int rc;

	memset(e, 0, sizeof(*e));
	buf_init(&e->token, SECRET_MAX + 1);
	e->cfg = cfg;
	rc = env_forge_open(&e->forge, &e->token, e->cfg, stop);
	if (rc)
		goto out;
	rc = open_submit(e);
	if (rc)
		goto out;
	rc = storeconf_open(&e->store, cfg, STORE_RW);
	if (rc)
		goto out;
	memset(&oo, 0, sizeof(oo));
	oo.cfg = cfg;
	oo.store = e->store;
	oo.forge = e->forge;
	oo.submit = e->submit;
	oo.token = e->token.data;
	oo.stop = stop;
	rc = outbound_new(&e->ob, &oo);
out:
	if (rc)
		env_close(e);
	return rc;
}

void env_close(struct env *e)
{
	outbound_free(e->ob);
	store_free(e->store);
	submit_free(e->submit);
	forge_free(e->forge);
	config_free(e->cfg);
	secret_wipe(&e->token);
	memset(e, 0, sizeof(*e));
}
