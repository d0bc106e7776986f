#include "cmd/cmd_forgecheck.h"

#include "cmd/env.h"
#include "core/config.h"
#include "core/secret.h"
#include "forge/forge.h"
#include "outbound/detect.h"
#include "state/store.h"
#include "state/storeconf.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/printable.h"
#include "util/strlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <time.h>

/* Does any enabled project turn list trailers into approvals? */
static int approvals_wanted(const struct config *cfg)
{
	size_t i, n = config_project_count(cfg);

	for (i = 0; i < n; i++) {
		const struct config_project *p = config_project_at(cfg, i);

		if (config_project_bool(p, CFG_PROJECT_ENABLED) &&
		    config_project_enum(p, CFG_INBOUND_APPROVAL_POLICY) !=
			    CONFIG_APPROVAL_NONE)
			return 1;
	}
	return 0;
}

static void scopes_text(char *out, size_t size, const struct strlist *l)
{
	size_t i, used = 0;

	out[0] = '\0';
	for (i = 0; i < l->nr && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, "%s%s",
					 i ? ", " : "", l->items[i]);
	if (!l->nr)
		snprintf(out, size, "none");
}

/*
 * Try what approvals need: acting as a user through Sudo.  As the
 * token's own user, so nobody else is touched: GitLab checks the token
 * the same way whoever it acts as (lib/api/helpers.rb sudo!).  Returns
 * the problem found (FORGE_SUDO_OK: it works), or -1 when the forge
 * could not be asked.
 */
static int sudo_probe(struct forge *f, const struct forge_whoami *w)
{
	struct forge_user u;
	char id[32];
	int rc;

	snprintf(id, sizeof(id), "%lld", (long long)w->user.id);
	if (forge_act_as(f, id))
		return -1;
	rc = forge_get_user(&u, f, w->user.id);
	forge_user_release(&u);
	forge_act_as(f, NULL);
	if (!rc)
		return FORGE_SUDO_OK;
	if (forge_sudo_problem(f) != FORGE_SUDO_OK)
		return forge_sudo_problem(f);
	return -1;
}

/*
 * When the token expires (its expires_at, GET /personal_access_tokens/
 * self): since GitLab 16.0 every new token does, within a year.  From
 * FORGE_TOKEN_WARN_DAYS before, a warning (the daemon logs one daily);
 * not a problem yet, the token still works.
 */
static void expiry_say(const struct forge_whoami *w, const struct config *cfg)
{
	int64_t days;

	if (!w->expires_at) {
		printf("forge: the token has no expiry date (a GitLab before "
		       "16.0 made it): fine\n");
		return;
	}
	if (forge_token_days_left(&days, w->expires_at, (int64_t)time(NULL))) {
		printf("forge: note: its expiry date \"%s\" cannot be read\n",
		       w->expires_at);
		return;
	}
	if (days > FORGE_TOKEN_WARN_DAYS)
		printf("forge: the token expires on %s, in %lld days\n",
		       w->expires_at, (long long)days);
	else if (days > 0)
		printf("forge: warning: the token expires on %s, in %lld "
		       "day%s: make a new one and put it in %s ([forge] "
		       "token_file)\n",
		       w->expires_at, (long long)days, days == 1 ? "" : "s",
		       config_str(cfg, CFG_FORGE_TOKEN_FILE));
}

/*
 * With [webhook] enabled: the webhooks GitLab disabled after failed
 * deliveries (forge_hooks_problem()), per enabled project.  Returns the
 * number of problems found.
 */
static int hooks_check(const struct config *cfg, struct forge *f)
{
	struct buf b = BUF_INIT(PB_ERRMSG_MAX * 4);
	size_t i, n = config_project_count(cfg);
	int rc, problems = 0;

	if (!config_bool(cfg, CFG_WEBHOOK_ENABLED))
		return 0;
	for (i = 0; i < n; i++) {
		const struct config_project *p = config_project_at(cfg, i);
		const char *name = config_project_name(p);

		if (!config_project_bool(p, CFG_PROJECT_ENABLED))
			continue;
		buf_reset(&b);
		rc = forge_hooks_problem(&b, f, name);
		if (rc == PB_EPERM) {
			printf("forge: note: %s: its webhooks cannot be read "
			       "(GitLab shows them to Maintainers): whether "
			       "GitLab disabled the bridge's is not known\n",
			       name);
		} else if (rc) {
			printf("forge: note: %s: its webhooks cannot be read: "
			       "%s\n",
			       name, err_msg());
		} else if (b.len) {
			printf("forge: problem: %s: %s\n", name, b.data);
			problems++;
		}
	}
	buf_release(&b);
	return problems;
}

static int first_mr(const struct forge_mr *mr, void *arg)
{
	*(int64_t *)arg = mr->iid;
	return 1; /* one is enough */
}

/*
 * A project that requires approvers to re-authenticate (their password)
 * to approve refuses every approval made through the API (EE's
 * ApprovalService, ee/app/services/ee/merge_requests/approval_service.rb),
 * and a mail cannot carry a password: approvals by mail cannot work
 * there.  GitLab shows the setting on an MR's approvals, so it is read
 * from an open MR of each project that turns trailers into approvals.
 * Returns the number of problems found.
 */
static int reauth_check(const struct config *cfg, struct forge *f)
{
	size_t i, n = config_project_count(cfg);
	int problems = 0;

	for (i = 0; i < n; i++) {
		const struct config_project *p = config_project_at(cfg, i);
		const char *name = config_project_name(p);
		struct forge_mr_query q = { "opened", 0, 1 };
		struct forge_mr_cursor cur;
		struct forge_approvals a;
		int64_t iid = 0;
		int rc;

		if (!config_project_bool(p, CFG_PROJECT_ENABLED) ||
		    config_project_enum(p, CFG_INBOUND_APPROVAL_POLICY) ==
			    CONFIG_APPROVAL_NONE)
			continue;
		forge_mr_cursor_init(&cur);
		rc = forge_list_mrs(f, name, &cur, &q, first_mr, &iid);
		forge_mr_cursor_release(&cur);
		memset(&a, 0, sizeof(a));
		if (rc >= 0 && iid)
			rc = forge_get_approvals(&a, f, name, iid);
		if (rc < 0)
			printf("forge: %s: its approval settings cannot be "
			       "read: %s\n",
			       name, err_msg());
		else if (!iid)
			printf("forge: %s: no open merge request yet to read "
			       "its approval settings from\n",
			       name);
		else if (a.reauth_required) {
			printf("forge: problem: %s requires re-authentication "
			       "(a password) to approve: approvals by mail "
			       "cannot work there, a mail cannot carry a "
			       "password; turn that off in its merge request "
			       "approval settings, or set approval_policy = "
			       "none for it to have acks only listed\n",
			       name);
			problems++;
		}
		forge_approvals_release(&a);
	}
	return problems;
}

/* The state of the project's old name was not merged into this section's
 * (detect_project_follow()): the daemon's refusal, kept for the operator. */
static int followed_apart(struct store *st, const char *project)
{
	char name[STORE_CURSOR_NAME_MAX + 1];
	char p[STORE_CURSOR_VALUE_MAX * 4];
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	int found = 0;

	snprintf(name, sizeof(name), "%s%s", DETECT_FOLLOW_PREFIX, project);
	if (!store_cursor_get(&v, st, name) && v.len) {
		printf("forge: problem: %s\n",
		       printable_copy(p, sizeof(p), v.data, v.len));
		found = 1;
	}
	buf_release(&v);
	return found;
}

/*
 * Each enabled project as the forge has it: a configured path the project
 * no longer has is followed to it (GitLab redirects GETs on an old path,
 * lib/api/helpers.rb find_project!); the daemon goes on by the id, the
 * configuration is to be changed.  The id the daemon keeps in the state
 * is asked for when the state can be read: a project made later on the
 * old path is not ours.  The number of problems.
 */
static int projects_check(struct forge *f, const struct config *cfg)
{
	char text[5 * 1024], path[1024];
	struct store *st = NULL;
	int problems = 0;
	size_t i;

	if (storeconf_open(&st, cfg, STORE_RO))
		st = NULL; /* no state yet: by the configured paths */
	for (i = 0; i < config_project_count(cfg); i++) {
		const struct config_project *cp = config_project_at(cfg, i);
		const char *name = config_project_name(cp);
		struct forge_project p;

		if (!config_project_bool(cp, CFG_PROJECT_ENABLED))
			continue;
		if (st)
			detect_pin_stored(st, f, name);
		if (forge_get_project(&p, f, name)) {
			printf("forge: problem: project %s: %s\n", name,
			       err_msg());
			problems++;
			continue;
		}
		printable_copy(path, sizeof(path), p.path_with_namespace,
			       strlen(p.path_with_namespace));
		if (strcasecmp(p.path_with_namespace, name)) {
			detect_moved_text(text, sizeof(text), name, path);
			printf("forge: problem: %s (the bridge reaches it by "
			       "its id, %lld, meanwhile)\n",
			       text, (long long)p.id);
			problems++;
		} else {
			printf("forge: project %s (id %lld)\n", name,
			       (long long)p.id);
		}
		if (st && followed_apart(st, name))
			problems++;
		forge_project_release(&p);
	}
	store_free(st);
	return problems;
}

int forgecheck_run(const struct config *cfg)
{
	struct buf token = BUF_INIT(SECRET_MAX + 1);
	struct forge_whoami w;
	struct forge *f = NULL;
	const char *url = config_str(cfg, CFG_FORGE_URL);
	char name[256], scopes[512];
	int rc, sudo, problems = 0, want = approvals_wanted(cfg);

	memset(&w, 0, sizeof(w));
	rc = env_forge_open(&f, &token, cfg, NULL);
	if (rc) {
		printf("forge %s: %s\n", url, err_msg());
		rc = rc == PB_EPERM ? EX_NOPERM : env_exit_code(rc);
		goto out;
	}
	rc = forge_whoami(&w, f);
	if (rc && forge_token_problem(f) != FORGE_TOKEN_OK) {
		/* 401 invalid_token (lib/api/api_guard.rb), or the plain
		 * 401 of an unknown token (lib/api/helpers.rb): the
		 * operator's */
		printf("forge %s: problem: the token %s: make a new one and "
		       "put it in %s ([forge] token_file); replies wait "
		       "until then\n",
		       url, forge_token_problem_text(forge_token_problem(f)),
		       config_str(cfg, CFG_FORGE_TOKEN_FILE));
		rc = EX_CONFIG;
		goto out;
	}
	if (rc) {
		printf("forge %s: cannot tell who the token is: %s\n", url,
		       err_msg());
		rc = rc == PB_EPERM ? EX_CONFIG : EX_UNAVAILABLE;
		goto out;
	}
	printable_copy(name, sizeof(name), w.user.username,
		       strlen(w.user.username));
	printf("forge %s: the token is user \"%s\" (id %lld)%s\n", url, name,
	       (long long)w.user.id,
	       w.admin > 0 ? ", acting as an administrator" : "");
	if (w.token_known) {
		scopes_text(scopes, sizeof(scopes), &w.scopes);
		printf("forge: its scopes: %s%s%s\n", scopes,
		       w.expires_at ? "; expires " : "",
		       w.expires_at ? w.expires_at : "");
		expiry_say(&w, cfg);
		if (w.active == 0) {
			printf("forge: problem: the token is revoked or "
			       "expired: make a new one and put it in [forge] "
			       "token_file\n");
			problems++;
		}
		if (strlist_find(&w.scopes, "api") < 0) {
			printf("forge: problem: the token lacks the api scope: "
			       "the bridge cannot post comments or labels; "
			       "make a token with the api scope\n");
			problems++;
		}
	} else {
		printf("forge: its scopes cannot be read (GET "
		       "/personal_access_tokens/self: GitLab before 15.5, or "
		       "not a personal access token)\n");
	}

	sudo = sudo_probe(f, &w);
	if (sudo == FORGE_SUDO_OK) {
		printf("forge: it can act as other users (Sudo): approvals by "
		       "mail are made as the reviewer\n");
	} else {
		const char *what =
			sudo == FORGE_SUDO_NO_SCOPE ?
				"it is an administrator's token without the "
				"sudo scope: make one with the api and sudo "
				"scopes" :
			sudo == FORGE_SUDO_NOT_ADMIN ?
				"GitLab says \"Must be admin to use sudo\": "
				"the user is not an administrator, or Admin "
				"Mode is on and the token lacks the admin_mode "
				"scope; use an administrator's token with the "
				"api and sudo (and admin_mode) scopes - "
				"gitlab.com gives none" :
				"the forge did not answer the Sudo test";

		printf("forge: %s: it cannot act as other users (Sudo): %s\n",
		       want ? "problem" : "note", what);
		if (want) {
			printf("forge: without it no Acked-by, Reviewed-by or "
			       "Tested-by from the list becomes an approval; "
			       "or set approval_policy = none to have them "
			       "only listed\n");
			problems++;
		}
	}
	problems += projects_check(f, cfg);
	if (want)
		problems += reauth_check(cfg, f);
	if (w.admin <= 0)
		printf("forge: note: a reviewer's address is matched to a "
		       "forge user only by public email (or user_map, "
		       "owners.yaml): private and secondary emails need an "
		       "administrator's token\n");
	problems += hooks_check(cfg, f);
	rc = problems ? EX_CONFIG : EX_OK;
	printf("forge: %s\n", problems ? "the token cannot do what the "
					 "configuration asks" :
					 "ok");
out:
	forge_whoami_release(&w);
	forge_free(f);
	secret_wipe(&token);
	return rc;
}

/*
 * The state database of a valid configuration: reachable, and of a
 * schema this patchbridge uses or migrates.
 */
int statecheck_run(const struct config *cfg)
{
	char where[STORECONF_WHERE_MAX];
	char *name = NULL;
	int rc, version = 0, latest = store_schema_latest();

	fflush(stdout);
	storeconf_where(where, sizeof(where), cfg);
	rc = storeconf_probe(&version, &name, cfg);
	if (rc) {
		fprintf(stderr, "patchbridge: state %s: %s\n", where,
			err_msg());
		return env_exit_code(rc);
	}
	if (!name) {
		printf("state: %s: no database yet; patchbridge run creates "
		       "it\n",
		       where);
	} else if (version == 0) {
		printf("state: %s: no schema yet; patchbridge run creates "
		       "it\n",
		       name);
	} else if (version < latest) {
		printf("state: %s: schema version %d needs migration to %d; "
		       "patchbridge run migrates it at start\n",
		       name, version, latest);
	} else if (version > latest) {
		fprintf(stderr,
			"patchbridge: state %s: schema version %d is newer "
			"than this patchbridge knows (%d): run the newer "
			"patchbridge\n",
			name, version, latest);
		free(name);
		return EX_CONFIG;
	} else {
		printf("state: %s: schema version %d (current)\n", name,
		       version);
	}
	free(name);
	return EX_OK;
}
