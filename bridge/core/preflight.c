#include "core/preflight.h"

#include "core/config.h"
#include "core/owners.h"
#include "core/postfix.h"
#include "core/secret.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* The names the documented layout gives (contrib/systemd, sysusers). */
#define LAYOUT_DAEMON PREFLIGHT_DAEMON_USER
#define LAYOUT_MILTER PREFLIGHT_MILTER_USER
#define LAYOUT_SOCKDIR "patchbridge"
#define LAYOUT_SOCKNAME "milter.sock"
/* One finding, as printed. */
#define FINDING_MAX 2048
/* Unreadable spool records named one by one, then counted. */
#define SPOOL_RECORDS_SHOWN 5
/* Supplementary groups looked at. */
#define GROUPS_MAX 256

static const char *const spool_subdirs[] = { "tmp", "new", "cur", "done",
					     "dead" };

void preflight_init(struct preflight *pf)
{
	strlist_init(&pf->problems);
	strlist_init(&pf->warnings);
	pf->code = 0;
}

void preflight_release(struct preflight *pf)
{
	strlist_release(&pf->problems);
	strlist_release(&pf->warnings);
	pf->code = 0;
}

static void add(struct strlist *l, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void add(struct strlist *l, const char *fmt, va_list ap)
{
	char line[FINDING_MAX];

	vsnprintf(line, sizeof(line), fmt, ap);
	strlist_push(l, line);
}

static void problem(struct preflight *pf, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void warning(struct preflight *pf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void problem(struct preflight *pf, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add(&pf->problems, fmt, ap);
	va_end(ap);
	if (!pf->code)
		pf->code = code;
}

static void warning(struct preflight *pf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add(&pf->warnings, fmt, ap);
	va_end(ap);
}

static const char *user_name(char *out, size_t size, uid_t uid)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		snprintf(out, size, "%s", pw->pw_name);
	else
		snprintf(out, size, "%lu", (unsigned long)uid);
	return out;
}

static const char *group_name(char *out, size_t size, gid_t gid)
{
	struct group *gr = getgrgid(gid);

	if (gr)
		snprintf(out, size, "%s", gr->gr_name);
	else
		snprintf(out, size, "%lu", (unsigned long)gid);
	return out;
}

/* "patchbridge:patchbridge 2770" */
static const char *describe(char *out, size_t size, const struct stat *st)
{
	char u[64], g[64];

	/* Names cut so that the mode always fits the callers' 128 bytes. */
	snprintf(out, size, "%.60s:%.60s %04o",
		 user_name(u, sizeof(u), st->st_uid),
		 group_name(g, sizeof(g), st->st_gid),
		 (unsigned)(st->st_mode & 07777));
	return out;
}

static int in_groups(gid_t gid)
{
	gid_t g[GROUPS_MAX];
	int n, i;

	if (getegid() == gid)
		return 1;
	n = getgroups(GROUPS_MAX, g);
	for (i = 0; i < n; i++)
		if (g[i] == gid)
			return 1;
	return 0;
}

/* "uid 998 (patchbridge-milter), groups patchbridge-milter, patchbridge" */
static const char *who_am_i(char *out, size_t size)
{
	gid_t g[GROUPS_MAX];
	char u[64], name[64];
	size_t len;
	int n, i;

	snprintf(out, size, "uid %lu (%s), groups %s", (unsigned long)geteuid(),
		 user_name(u, sizeof(u), geteuid()),
		 group_name(name, sizeof(name), getegid()));
	n = getgroups(GROUPS_MAX, g);
	for (i = 0; i < n; i++) {
		if (g[i] == getegid())
			continue;
		len = strlen(out);
		snprintf(out + len, size - len, ", %s",
			 group_name(name, sizeof(name), g[i]));
	}
	return out;
}

/* --- who must own what ----------------------------------------------------- */

/* o's names and ids from uid and gid. */
static void owner_set(struct preflight_owner *o, uid_t uid, gid_t gid)
{
	char scratch[4096];
	struct passwd pw, *u = NULL;
	struct group gr, *g = NULL;

	o->uid = uid;
	o->gid = gid;
	if (getpwuid_r(uid, &pw, scratch, sizeof(scratch), &u) || !u)
		snprintf(o->user, sizeof(o->user), "%lu", (unsigned long)uid);
	else
		snprintf(o->user, sizeof(o->user), "%s", u->pw_name);
	if (getgrgid_r(gid, &gr, scratch, sizeof(scratch), &g) || !g)
		snprintf(o->group, sizeof(o->group), "%lu", (unsigned long)gid);
	else
		snprintf(o->group, sizeof(o->group), "%s", g->gr_name);
}

/* The documented user name's ids, or the names alone without them. */
static void owner_documented(struct preflight_owner *o, const char *user,
			     const char *group)
{
	char scratch[4096];
	struct passwd pw, *u = NULL;

	if (!getpwnam_r(user, &pw, scratch, sizeof(scratch), &u) && u) {
		owner_set(o, u->pw_uid, u->pw_gid);
		return;
	}
	o->uid = (uid_t)-1;
	o->gid = (gid_t)-1;
	snprintf(o->user, sizeof(o->user), "%s", user);
	snprintf(o->group, sizeof(o->group), "%s", group);
}

/* dir's owner and group when dir exists and root does not own it. */
static int owner_from_dir(struct preflight_owner *o, const char *dir)
{
	struct stat st;

	if (!dir || !dir[0] || stat(dir, &st) < 0 || st.st_uid == 0)
		return 0;
	owner_set(o, st.st_uid, st.st_gid);
	return 1;
}

void preflight_owner_stat(struct preflight_owner *o, const struct stat *st,
			  int self)
{
	if (st->st_uid != 0)
		owner_set(o, st->st_uid, st->st_gid);
	else
		preflight_owner_dirs(o, NULL, NULL, self);
}

void preflight_owner_dirs(struct preflight_owner *o, const char *state_dir,
			  const char *spool_dir, int self)
{
	if (owner_from_dir(o, state_dir) || owner_from_dir(o, spool_dir))
		return;
	if (self && geteuid() != 0) {
		owner_set(o, geteuid(), getegid());
		return;
	}
	owner_documented(o, LAYOUT_DAEMON, LAYOUT_DAEMON);
}

/* The directory of path into out ("" when it has none). */
static void dir_of(char *out, size_t size, const char *path)
{
	const char *slash = strrchr(path, '/');

	out[0] = '\0';
	if (slash && (size_t)(slash - path) < size) {
		memcpy(out, path, (size_t)(slash - path));
		out[slash - path] = '\0';
	}
}

void preflight_owner(struct preflight_owner *o, const struct config *cfg,
		     const char *path, int self)
{
	char state[PATH_MAX], sock[PATH_MAX];
	const char *spec;
	size_t len;

	if (!cfg) {
		preflight_owner_dirs(o, NULL, NULL, self);
		return;
	}
	spec = config_str(cfg, CFG_MILTER_SOCKET);
	if (path &&
	    (!strncmp(spec, "unix:", 5) || !strncmp(spec, "local:", 6))) {
		const char *at = strchr(spec, ':') + 1;

		/* The socket's directory and the socket: nothing else is
		 * the milter's, even below that directory. */
		dir_of(sock, sizeof(sock), at);
		len = strlen(sock);
		if (len && (!strcmp(path, sock) || !strcmp(path, at))) {
			struct stat st;

			if (stat(sock, &st) == 0 && st.st_uid != 0) {
				owner_set(o, st.st_uid, st.st_gid);
				return;
			}
			owner_documented(o, LAYOUT_MILTER, "postfix");
			snprintf(o->group, sizeof(o->group), "postfix");
			return;
		}
	}
	dir_of(state, sizeof(state), config_str(cfg, CFG_STATE_PATH));
	preflight_owner_dirs(o, state, config_str(cfg, CFG_SPOOL_DIR), self);
}

/* --- the files the configuration names ----------------------------------- */

/*
 * path must be a regular file.  Returns 1 when it is, 0 after recording
 * a problem, -1 when this process cannot tell (a directory on the way is
 * closed to it).
 */
static int need_file(struct preflight *pf, const char *where, const char *path,
		     const char *fix)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		if (errno == EACCES)
			return -1;
		problem(pf, errno == ENOENT ? PB_ENOTFOUND : PB_ERROR,
			"%s: %s: %s: %s", where, path, strerror(errno), fix);
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		problem(pf, PB_EINVAL, "%s: %s is not a regular file: %s",
			where, path, fix);
		return 0;
	}
	return 1;
}

/*
 * The daemon's user and its primary group, for the checks made on its
 * behalf: the state directory's owner (as daemon_user() below), else
 * this process.
 */
static void daemon_ids(const struct config *cfg, uid_t *uid, gid_t *gid)
{
	char dir[PATH_MAX];
	const char *state = config_str(cfg, CFG_STATE_PATH);
	const char *slash = strrchr(state, '/');
	struct passwd *pw;
	struct stat st;

	*uid = geteuid();
	*gid = getegid();
	if (!slash || slash == state || (size_t)(slash - state) >= sizeof(dir))
		return;
	memcpy(dir, state, (size_t)(slash - state));
	dir[slash - state] = '\0';
	if (stat(dir, &st) < 0 || st.st_uid == geteuid())
		return;
	*uid = st.st_uid;
	pw = getpwuid(st.st_uid);
	*gid = pw ? pw->pw_gid : st.st_gid;
}

/*
 * A secret file: the very check and read the program makes at start
 * (secret_read(), max as there), as the user that will read it - the
 * daemon's when root checks for it.  Only a missing file gets this
 * key's fix instead.
 */
static void check_secret_text(struct preflight *pf, const char *where,
			      const char *path, size_t max, uid_t uid,
			      gid_t gid, const char *fix, secret_text_fn check)
{
	struct stat st;
	int rc;

	if (stat(path, &st) < 0 && errno == ENOENT) {
		problem(pf, PB_ENOTFOUND, "%s: %s: %s: %s", where, path,
			strerror(errno), fix);
		return;
	}
	if (uid != geteuid() && geteuid() != 0) {
		char u[64];

		/* Only root can take the daemon's place to look. */
		warning(pf,
			"%s: %s not checked: what the daemon's user %s may "
			"read is seen only as that user; run check-config "
			"as %s to check it",
			where, path, user_name(u, sizeof(u), uid), u);
		return;
	}
	rc = secret_check_text_as(uid, gid, path, max, check);
	if (rc)
		problem(pf, rc, "%s: %s", where, err_msg());
}

static void check_secret(struct preflight *pf, const char *where,
			 const char *path, size_t max, uid_t uid, gid_t gid,
			 const char *fix)
{
	check_secret_text(pf, where, path, max, uid, gid, fix, NULL);
}

static void check_owners(struct preflight *pf, const char *where,
			 const char *path, const char *why,
			 enum preflight_who who, struct strlist *seen)
{
	char fix[FINDING_MAX];
	struct owners *o = NULL;

	if (!path[0] || strlist_find(seen, path) >= 0)
		return;
	strlist_push(seen, path);
	snprintf(fix, sizeof(fix),
		 "write it (%s; its format is in patchbridge.conf(5), "
		 "OWNERS FILE), or set approval_policy = forge or none "
		 "and cc_owners = no",
		 why);
	if (need_file(pf, where, path, fix) != 1 || who != PREFLIGHT_DAEMON)
		return;
	if (owners_load(&o, path)) {
		problem(pf, PB_EINVAL, "%s: %s", where, err_msg());
		return;
	}
	owners_free(o);
}

static void check_usermap(struct preflight *pf, const char *where,
			  const char *path, struct strlist *seen)
{
	if (!path[0] || strlist_find(seen, path) >= 0)
		return;
	strlist_push(seen, path);
	need_file(pf, where, path,
		  "write it (one \"email username\" line per sender) or "
		  "unset user_map");
}

/*
 * A project's keyring for series posted to the list (README "Contributing
 * by email"): a directory; and something that can verify a mail when
 * attestation is required, or every series is refused.
 */
static void check_keyring(struct preflight *pf, const struct config *cfg,
			  const struct config_project *p)
{
	const char *dir = config_project_str(p, CFG_PROJECT_ATTEST_KEYRING);
	const char *name = config_project_name(p);
	struct stat st;

	if (dir[0] && stat(dir, &st) < 0 && errno != EACCES)
		problem(pf, errno == ENOENT ? PB_ENOTFOUND : PB_ERROR,
			"[project \"%s\"] attest_keyring: %s: %s: check out "
			"the project's keyring there (ed25519/DOMAIN/LOCAL/"
			"SELECTOR), or unset attest_keyring",
			name, dir, strerror(errno));
	else if (dir[0] && !S_ISDIR(st.st_mode))
		problem(pf, PB_EINVAL,
			"[project \"%s\"] attest_keyring: %s is not a "
			"directory",
			name, dir);
	if (config_project_bool(p, CFG_PROJECT_EMAIL_REQUIRE_ATTESTATION) &&
	    !dir[0] && !config_str(cfg, CFG_MILTER_TRUSTED_AUTHSERV_ID)[0])
		warning(pf,
			"project %s: email_require_attestation = yes, but "
			"neither attest_keyring nor [milter] "
			"trusted_authserv_id is set: every series posted to "
			"the list is refused",
			name);
}

void preflight_files(struct preflight *pf, const struct config *cfg,
		     enum preflight_who who)
{
	struct strlist seen = STRLIST_INIT;
	char where[CONFIG_PROJECT_MAX + 64], why[CONFIG_PROJECT_MAX + 64];
	size_t i;

	if (who == PREFLIGHT_DAEMON) {
		/* The secrets are preflight_start()'s: they stop the start. */
		if (config_str(cfg, CFG_FORGE_CA_FILE)[0])
			need_file(pf, "[forge] ca_file",
				  config_str(cfg, CFG_FORGE_CA_FILE),
				  "name the CA bundle, or unset ca_file");
		if (config_str(cfg, CFG_SMTP_CA_FILE)[0])
			need_file(pf, "[smtp] ca_file",
				  config_str(cfg, CFG_SMTP_CA_FILE),
				  "name the CA bundle, or unset ca_file");
	}
	/* The milter reads its own connection string as itself. */
	if (who == PREFLIGHT_MILTER &&
	    config_str(cfg, CFG_MILTER_CONNINFO_FILE)[0])
		check_secret(pf, "[milter] conninfo_file",
			     config_str(cfg, CFG_MILTER_CONNINFO_FILE), 0,
			     geteuid(), getegid(),
			     "write the connection string into it, mode 0600");
	check_owners(pf, "[inbound] owners_file",
		     config_str(cfg, CFG_INBOUND_OWNERS_FILE),
		     "[inbound] names it", who, &seen);
	check_usermap(pf, "[inbound] user_map",
		      config_str(cfg, CFG_INBOUND_USER_MAP), &seen);
	for (i = 0; i < config_project_count(cfg); i++) {
		const struct config_project *p = config_project_at(cfg, i);
		const char *name = config_project_name(p);

		if (!config_project_bool(p, CFG_PROJECT_ENABLED))
			continue;
		snprintf(where, sizeof(where), "[project \"%s\"] owners_file",
			 name);
		snprintf(why, sizeof(why), "project %s uses it", name);
		check_owners(pf, where,
			     config_project_str(p, CFG_INBOUND_OWNERS_FILE),
			     why, who, &seen);
		snprintf(where, sizeof(where), "[project \"%s\"] user_map",
			 name);
		check_usermap(pf, where,
			      config_project_str(p, CFG_INBOUND_USER_MAP),
			      &seen);
		if (who == PREFLIGHT_DAEMON)
			check_keyring(pf, cfg, p);
		if (who == PREFLIGHT_DAEMON &&
		    config_enum(cfg, CFG_STATE_BACKEND) ==
			    CONFIG_BACKEND_POSTGRESQL &&
		    !config_project_str(p, CFG_INBOUND_ARCHIVE_URL)[0])
			warning(pf,
				"project %s: no [inbound] archive_url: with "
				"several hosts, a mail whose acceptance by the "
				"MTA was not recorded (its host died at the end "
				"of the data) is sent again without asking the "
				"list archive, and the list may see it twice; "
				"set archive_url to the list's public-inbox",
				name);
	}
	strlist_release(&seen);
}

/* --- what stops the daemon at start --------------------------------------- */

/* The secret files run reads, as the daemon's user uid reads them. */
static void check_secrets(struct preflight *pf, const struct config *cfg,
			  uid_t uid, gid_t gid, const struct preflight_owner *o)
{
	const char *tok = config_str(cfg, CFG_FORGE_TOKEN_FILE);
	char fix[FINDING_MAX];

	snprintf(fix, sizeof(fix),
		 "create it for the daemon's user alone and write the "
		 "token into it: install -o %s -g %s -m 0600 /dev/null %s",
		 o->user, o->group, tok);
	check_secret(pf, "[forge] token_file", tok, 0, uid, gid, fix);
	if (config_str(cfg, CFG_SMTP_USERNAME)[0])
		check_secret(pf, "[smtp] password_file",
			     config_str(cfg, CFG_SMTP_PASSWORD_FILE), 0, uid,
			     gid, "write the SMTP password into it, mode 0600");
	if (config_bool(cfg, CFG_OUTBOUND_ATTEST))
		check_secret_text(pf, "[outbound] attest_key_file",
				  config_str(cfg, CFG_OUTBOUND_ATTEST_KEY_FILE),
				  0, uid, gid,
				  "make the key as the daemon's user: "
				  "patchbridge attest-key --generate FILE",
				  secret_key32_b64);
	if (config_bool(cfg, CFG_WEBHOOK_ENABLED))
		check_secret(pf, "[webhook] secret_file",
			     config_str(cfg, CFG_WEBHOOK_SECRET_FILE),
			     SECRET_WEBHOOK_MAX, uid, gid,
			     "write the webhook's secret token into it, mode "
			     "0600, or set enabled = no");
	if (config_enum(cfg, CFG_STATE_BACKEND) == CONFIG_BACKEND_POSTGRESQL)
		check_secret(pf, "[state] conninfo_file",
			     config_str(cfg, CFG_STATE_CONNINFO_FILE), 0, uid,
			     gid,
			     "write the connection string into it, mode 0600");
}

/* A problem (PB_EPERM), or only a warning when as_warning. */
static void finding(struct preflight *pf, int as_warning, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void finding(struct preflight *pf, int as_warning, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add(as_warning ? &pf->warnings : &pf->problems, fmt, ap);
	va_end(ap);
	if (!as_warning && !pf->code)
		pf->code = PB_EPERM;
}

/*
 * A file the daemon (uid) opens for writing, when it exists: it must be
 * the daemon's user's, or the daemon gets "Permission denied" (or, for a
 * lock, refuses a file another user could hold).
 */
static void check_own_file(struct preflight *pf, const char *where,
			   const char *path, uid_t uid,
			   const struct preflight_owner *o, const char *what,
			   int as_warning)
{
	char d[128];
	struct stat st;

	if (lstat(path, &st) < 0 || st.st_uid == uid)
		return;
	finding(pf, as_warning,
		"%s: %s is %s, not the daemon's user's (%s): %s: "
		"chown %s:%s %s",
		where, path, describe(d, sizeof(d), &st), o->user, what,
		o->user, o->group, path);
}

/* Records in the spool's area sub that the daemon's user cannot read. */
static void check_records(struct preflight *pf, const char *dir,
			  const char *sub, const struct stat *top,
			  const struct preflight_owner *o, int as_warning,
			  int *reported)
{
	char path[PATH_MAX], d[128];
	struct dirent *e;
	struct stat st;
	DIR *dh;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	dh = opendir(path);
	if (!dh)
		return;
	while ((e = readdir(dh))) {
		int ok;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, e->d_name);
		if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		/* What the daemon (the spool's owner) may read: all, for
		 * root (a single-user layout, as in test set-ups). */
		if (top->st_uid == 0)
			ok = 1;
		else if (st.st_uid == top->st_uid)
			ok = (st.st_mode & 0400) != 0;
		else if (st.st_gid == top->st_gid)
			ok = (st.st_mode & 0040) != 0;
		else
			ok = (st.st_mode & 0004) != 0;
		/* A record root made in a spool that is not root's. */
		if (st.st_uid == 0 && top->st_uid != 0)
			ok = 0;
		if (ok || ++*reported > SPOOL_RECORDS_SHOWN)
			continue;
		finding(pf, as_warning,
			"[spool] dir: the record %s is %s, which the daemon's "
			"user %s cannot read or move on: chown %s:%s %s",
			path, describe(d, sizeof(d), &st), o->user, o->user,
			o->group, path);
	}
	closedir(dh);
}

/*
 * The spool's files the daemon opens: its lock and the records waiting
 * in new/ and cur/.  The daemon is the spool's owner (spool.h).  What
 * each finding is: a problem, or a warning (the milter's check, which
 * must not keep the milter from starting for the daemon's files; a
 * record at the daemon's start, which it sets aside).
 */
static void check_spool_files(struct preflight *pf, const struct config *cfg,
			      int lock_warns, int records_warn)
{
	const char *dir = config_str(cfg, CFG_SPOOL_DIR);
	char path[PATH_MAX];
	struct preflight_owner o;
	struct stat top;
	int reported = 0;

	if (stat(dir, &top) < 0 || !S_ISDIR(top.st_mode))
		return; /* preflight_spool() says so */
	preflight_owner(&o, cfg, dir, 1);
	snprintf(path, sizeof(path), "%s/.inbound.lock", dir);
	check_own_file(pf, "[spool] dir", path, top.st_uid, &o,
		       "the daemon cannot take the spool's lock (\"Permission "
		       "denied\" every five seconds, no reply applied)",
		       lock_warns);
	check_records(pf, dir, "new", &top, &o, records_warn, &reported);
	check_records(pf, dir, "cur", &top, &o, records_warn, &reported);
	if (reported > SPOOL_RECORDS_SHOWN)
		finding(pf, records_warn,
			"[spool] dir: %d more records the daemon's user cannot "
			"read: chown %s:%s %s/new/* %s/cur/*",
			reported - SPOOL_RECORDS_SHOWN, o.user, o.group, dir,
			dir);
}

/* The state database's files and the locks beside it. */
static void check_state_files(struct preflight *pf, const struct config *cfg,
			      uid_t uid, const struct preflight_owner *o)
{
	static const char *const db_files[] = { "", "-journal", "-wal",
						"-shm" };
	static const char *const locks[] = { ".run.lock", ".lock" };
	const char *state = config_str(cfg, CFG_STATE_PATH);
	char path[PATH_MAX];
	size_t i;

	if (config_enum(cfg, CFG_STATE_BACKEND) != CONFIG_BACKEND_POSTGRESQL)
		for (i = 0; i < sizeof(db_files) / sizeof(db_files[0]); i++) {
			snprintf(path, sizeof(path), "%s%s", state,
				 db_files[i]);
			check_own_file(pf, "[state] path", path, uid, o,
				       "the daemon cannot write the state "
				       "(\"attempt to write a readonly "
				       "database\", or no start)",
				       0);
		}
	for (i = 0; i < sizeof(locks) / sizeof(locks[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", state, locks[i]);
		check_own_file(pf, "[state] path", path, uid, o,
			       "the daemon cannot take its lock", 0);
	}
}

/* Can the daemon listen on addr ("host:port")? */
static void check_port(struct preflight *pf, const char *where,
		       const char *addr)
{
	struct addrinfo hints, *res = NULL, *ai;
	char host[256];
	const char *colon = strrchr(addr, ':');
	const char *h = addr;
	size_t hlen;
	int fd, one = 1, saved = 0, bound = 0;

	if (!colon || !strcmp(colon + 1, "0"))
		return; /* a bad address is the configuration's problem */
	hlen = (size_t)(colon - addr);
	if (h[0] == '[' && hlen >= 2 && colon[-1] == ']') {
		h++;
		hlen -= 2;
	}
	if (hlen >= sizeof(host))
		return;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if (getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res))
		return;
	for (ai = res; ai && !bound; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		/* As the daemon binds (httpd.c): TIME_WAIT is no obstacle. */
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			bound = 1;
		else
			saved = errno;
		close(fd);
	}
	freeaddrinfo(res);
	if (bound)
		return;
	if (saved == EADDRINUSE)
		problem(pf, PB_ETEMP,
			"%s: %s: %s: another program listens there (ss -ltnp "
			"'sport = :%s' names it), and the daemon would not "
			"start: stop it, or set listen to a free port",
			where, addr, strerror(saved), colon + 1);
	else
		problem(pf, PB_EPERM, "%s: %s: %s: the daemon would not start",
			where, addr, strerror(saved));
}

void preflight_start(struct preflight *pf, const struct config *cfg,
		     enum preflight_start what)
{
	struct preflight_owner o;
	char state[PATH_MAX];
	uid_t uid;
	gid_t gid;

	daemon_ids(cfg, &uid, &gid);
	dir_of(state, sizeof(state), config_str(cfg, CFG_STATE_PATH));
	preflight_owner(&o, cfg, state, 1);
	if ((what == PREFLIGHT_START_RUN || what == PREFLIGHT_START_ONCE) &&
	    geteuid() == 0 && uid != 0) {
		/* What root would make there stops the daemon's user. */
		problem(pf, PB_EPERM,
			"running as root, but the state directory %s is %s's: "
			"what root makes there (the database's journal, "
			"locks, the spool's lock) would be root's and stop "
			"the daemon run as %s; run it as %s: runuser -u %s -- "
			"patchbridge run%s",
			state, o.user, o.user, o.user, o.user,
			what == PREFLIGHT_START_ONCE ? " --once" : "");
		return;
	}
	if (what != PREFLIGHT_START_FILES)
		check_secrets(pf, cfg, uid, gid, &o);
	check_state_files(pf, cfg, uid, &o);
	check_spool_files(pf, cfg, 0,
			  what == PREFLIGHT_START_RUN ||
				  what == PREFLIGHT_START_ONCE);
	if (what == PREFLIGHT_START_ONCE || what == PREFLIGHT_START_FILES)
		return;
	if (config_bool(cfg, CFG_METRICS_ENABLED))
		check_port(pf, "[metrics] listen",
			   config_str(cfg, CFG_METRICS_LISTEN));
	if (config_bool(cfg, CFG_WEBHOOK_ENABLED))
		check_port(pf, "[webhook] listen",
			   config_str(cfg, CFG_WEBHOOK_LISTEN));
}

/* --- the spool ------------------------------------------------------------ */

/* The state directory's owner, or (uid_t)-1 when there is none. */
static uid_t state_dir_uid(const struct config *cfg, char *dir, size_t size)
{
	struct stat st;

	dir_of(dir, size, config_str(cfg, CFG_STATE_PATH));
	if (!dir[0] || stat(dir, &st) < 0)
		return (uid_t)-1;
	return st.st_uid;
}

void preflight_spool(struct preflight *pf, const struct config *cfg,
		     enum preflight_who who)
{
	const char *dir = config_str(cfg, CFG_SPOOL_DIR);
	char d[128], u[64], g[64], me[512], sub[PATH_MAX], sdir[PATH_MAX];
	struct preflight_owner o;
	struct stat st, ss;
	uid_t duid;
	size_t i;

	duid = state_dir_uid(cfg, sdir, sizeof(sdir));
	preflight_owner(&o, cfg, dir, 0);
	if (stat(dir, &st) < 0) {
		if (errno == EACCES)
			return;
		problem(pf, errno == ENOENT ? PB_ENOTFOUND : PB_ERROR,
			"[spool] dir: %s: %s: create it and its areas for the "
			"daemon's user and the group it shares with the "
			"milter: install -d -o %s -g %s -m 2770 %s %s/tmp "
			"%s/new %s/cur %s/done %s/dead",
			dir, strerror(errno), o.user, o.group, dir, dir, dir,
			dir, dir, dir);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		problem(pf, PB_EINVAL, "[spool] dir: %s is not a directory",
			dir);
		return;
	}
	user_name(u, sizeof(u), st.st_uid);
	group_name(g, sizeof(g), st.st_gid);
	describe(d, sizeof(d), &st);
	if (who == PREFLIGHT_DAEMON && geteuid() == 0 && duid != (uid_t)-1 &&
	    duid != st.st_uid)
		problem(pf, PB_EPERM,
			"[spool] dir: %s belongs to %s, the state directory "
			"%s to %s: the daemon's user owns both: chown %s:%s %s",
			dir, u, sdir, user_name(me, sizeof(me), duid), o.user,
			o.group, duid == 0 ? sdir : dir);
	if (geteuid() && st.st_uid != geteuid() && !in_groups(st.st_gid))
		problem(pf, PB_EPERM,
			"[spool] dir: %s is %s, and this process (%s) is "
			"neither its owner nor in its group: the spool is the "
			"daemon's user's, shared with the milter through its "
			"group: chown %s:%s %s; run the daemon as %s and the "
			"milter as a member of group %s",
			dir, d, who_am_i(me, sizeof(me)), o.user, o.group, dir,
			o.user, o.group);
	/* What the daemon opens there; check-config: preflight_start(). */
	if (who == PREFLIGHT_MILTER)
		check_spool_files(pf, cfg, 1, 1);
	/*
	 * A spool root owns is a single-user layout (root runs both, as
	 * test set-ups do): no group to share.  Otherwise daemon and milter
	 * share it through its group.
	 */
	if (st.st_uid == 0)
		return;
	if ((st.st_mode & 02070) != 02070)
		problem(pf, PB_EPERM,
			"[spool] dir: %s is %s; the milter writes it through "
			"the group, and what it creates must keep that group: "
			"chmod 2770 %s",
			dir, d, dir);
	if (st.st_mode & 0002)
		problem(pf, PB_EPERM,
			"[spool] dir: %s is %s: anyone may write records "
			"into it: chmod o-rwx %s",
			dir, d, dir);
	for (i = 0; i < sizeof(spool_subdirs) / sizeof(spool_subdirs[0]); i++) {
		snprintf(sub, sizeof(sub), "%s/%s", dir, spool_subdirs[i]);
		if (stat(sub, &ss) < 0 || !S_ISDIR(ss.st_mode))
			continue; /* made when first needed */
		describe(d, sizeof(d), &ss);
		if (ss.st_uid == 0)
			problem(pf, PB_EPERM,
				"[spool] dir: %s is %s, made by a run as "
				"root; the spool is %s's: chown %s:%s %s",
				sub, d, o.user, o.user, o.group, sub);
		else if (ss.st_uid != st.st_uid)
			problem(pf, PB_EPERM,
				"[spool] dir: %s is %s, not the spool's owner's "
				"(the daemon refuses an area of another owner): "
				"chown %s:%s %s",
				sub, d, u, g, sub);
		else if (ss.st_gid != st.st_gid)
			problem(pf, PB_EPERM,
				"[spool] dir: %s is %s, not of the spool's "
				"group %s: chgrp %s %s; chmod 2770 %s",
				sub, d, g, g, sub, sub);
		else if ((ss.st_mode & 0070) != 0070)
			problem(pf, PB_EPERM,
				"[spool] dir: %s is %s; daemon and milter "
				"share it through the group: chmod 2770 %s",
				sub, d, sub);
		if (who == PREFLIGHT_DAEMON && geteuid() &&
		    geteuid() == st.st_uid && access(sub, R_OK | W_OK | X_OK))
			problem(pf, PB_EPERM,
				"[spool] dir: the daemon (%s) cannot use %s "
				"(%s): chown %s:%s %s; chmod 2770 %s",
				who_am_i(me, sizeof(me)), sub, d, u, g, sub,
				sub);
	}
}

int preflight_root(const struct config *cfg)
{
	const char *dir = config_str(cfg, CFG_SPOOL_DIR);
	char d[128];
	struct stat st;

	if (geteuid() != 0)
		return 0;
	if (stat(dir, &st) < 0)
		return err_set(PB_EPERM,
			       "running as root, and [spool] dir %s does not "
			       "exist (%s): what root makes there would be "
			       "root's, and the milter's user could not write "
			       "it; create it and its areas for the daemon's "
			       "user and the group it shares with the milter "
			       "(install -d -o " LAYOUT_DAEMON
			       " -g " LAYOUT_DAEMON
			       " -m 2770 %s %s/tmp %s/new %s/cur %s/done "
			       "%s/dead) and run the milter as its own user: "
			       "runuser -u " LAYOUT_MILTER
			       " -- patchbridge-milter ...",
			       dir, strerror(errno), dir, dir, dir, dir, dir,
			       dir);
	if (st.st_uid != 0)
		return err_set(
			PB_EPERM,
			"running as root, but [spool] dir %s is %s: "
			"what root makes there (tmp/, new/, records) "
			"would be root's, and the milter's user could "
			"not write it; run the milter as its own user, "
			"a member of that group: runuser -u " LAYOUT_MILTER
			" -- patchbridge-milter ...",
			dir, describe(d, sizeof(d), &st));
	return 0;
}

int preflight_explain(struct buf *out, const char *dir)
{
	char d[128], me[512], sub[PATH_MAX];
	struct stat st;
	size_t i;
	int rc;

	if (stat(dir, &st) < 0)
		return buf_addf(out, "%s: %s", dir, strerror(errno));
	rc = buf_addf(out, "%s is %s", dir, describe(d, sizeof(d), &st));
	for (i = 0; !rc && i < sizeof(spool_subdirs) / sizeof(spool_subdirs[0]);
	     i++) {
		snprintf(sub, sizeof(sub), "%s/%s", dir, spool_subdirs[i]);
		if (stat(sub, &st) == 0)
			rc = buf_addf(out, ", %s/ %s", spool_subdirs[i],
				      describe(d, sizeof(d), &st));
	}
	if (!rc)
		rc = buf_addf(out,
			      "; this process is %s; the layout is the "
			      "daemon's user as owner, a group shared with "
			      "the milter's user, mode 2770 on the spool and "
			      "its subdirectories (" LAYOUT_DAEMON
			      ":" LAYOUT_DAEMON " 2770, " LAYOUT_MILTER
			      " in group " LAYOUT_DAEMON ")",
			      who_am_i(me, sizeof(me)));
	return rc;
}

int preflight_access_hint(struct buf *out, const char *path)
{
	char dir[PATH_MAX], d[128], me[512], u[64], g[64];
	size_t len = strlen(path), i;
	struct stat st;

	if (len >= sizeof(dir) || path[0] != '/')
		return 0;
	memcpy(dir, path, len + 1);
	for (i = 1; i <= len; i++) {
		int last = dir[i] == '\0';

		if (dir[i] != '/' && !last)
			continue;
		dir[i] = '\0';
		if (stat(dir, &st) < 0)
			return 0; /* missing: not a permission problem */
		if (access(dir, last && !S_ISDIR(st.st_mode) ? R_OK : X_OK)) {
			unsigned bit = S_ISDIR(st.st_mode) ? 1 : 4;
			char self[64];

			user_name(u, sizeof(u), st.st_uid);
			group_name(g, sizeof(g), st.st_gid);
			user_name(self, sizeof(self), geteuid());
			buf_addf(out,
				 "%s is %s, and this process (%s) may not %s "
				 "it: ",
				 dir, describe(d, sizeof(d), &st),
				 who_am_i(me, sizeof(me)),
				 S_ISDIR(st.st_mode) ? "enter" : "read");
			if (st.st_uid == 0 || st.st_gid == 0) {
				struct preflight_owner o;

				/* Never "run it as root": the layout's owner. */
				preflight_owner_dirs(&o, NULL, NULL, 0);
				return buf_addf(
					out,
					"it is root's, not the daemon's "
					"user's: chown %s:%s %s (the layout: "
					"state directory 2750, files 0640, "
					"spool 2770), then join its group %s "
					"(adduser %s %s, then log in again), "
					"or run it as %s (runuser -u %s -- "
					"patchbridge ...)",
					o.user, o.group, dir, o.group, self,
					o.group, o.user, o.user);
			}
			if (((st.st_mode >> 3) & bit) && !in_groups(st.st_gid))
				return buf_addf(
					out,
					"join its group %s (adduser %s "
					"%s, then log in again), or "
					"run it as %s (runuser -u %s -- "
					"patchbridge ...)",
					g, self, g, u, u);
			return buf_addf(out,
					"only its owner may; run it as %s "
					"(runuser -u %s -- patchbridge ...), "
					"or let the group in as the layout "
					"does (state directory 2750, files "
					"0640, spool 2770)",
					u, u);
		}
		if (!last)
			dir[i] = '/';
	}
	return 0;
}

/* --- the socket and Postfix ------------------------------------------------ */

/* Can user pw (with its groups) do what bits (4 r, 2 w, 1 x) ask on st? */
static int user_may(const struct passwd *pw, const gid_t *groups, int ngroups,
		    const struct stat *st, unsigned bits)
{
	int i;

	if (pw->pw_uid == 0)
		return 1;
	if (st->st_uid == pw->pw_uid)
		return ((st->st_mode >> 6) & bits) == bits;
	for (i = 0; i < ngroups; i++)
		if (groups[i] == st->st_gid)
			return ((st->st_mode >> 3) & bits) == bits;
	return (st->st_mode & bits) == bits;
}

/* Every directory on the way to path's directory searchable by pw? */
static void check_reach(struct preflight *pf, const char *path,
			const char *owner, mode_t sock_umask,
			enum preflight_who who)
{
	char dir[PATH_MAX], d[128], g[64];
	gid_t groups[GROUPS_MAX];
	int ngroups = GROUPS_MAX;
	struct passwd *pw = getpwnam(owner);
	struct stat st, sd;
	size_t i, len;

	if (!pw) {
		warning(pf,
			"[milter] socket: Postfix's mail_owner %s is not a "
			"user here: its access to %s was not checked",
			owner, path);
		return;
	}
	if (getgrouplist(owner, pw->pw_gid, groups, &ngroups) < 0)
		ngroups = 0;
	len = strlen(path);
	if (len >= sizeof(dir))
		return;
	memcpy(dir, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (dir[i] != '/' && dir[i] != '\0')
			continue;
		if (dir[i] == '\0')
			break; /* the socket itself, below */
		dir[i] = '\0';
		if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
		    !user_may(pw, groups, ngroups, &st, 1)) {
			problem(pf, PB_EPERM,
				"[milter] socket: Postfix's user %s cannot "
				"reach %s: %s is %s; give the socket's "
				"directory Postfix's group (chgrp %s DIR; "
				"chmod 2750 DIR) and let it through the "
				"directories above",
				owner, path, dir, describe(d, sizeof(d), &st),
				group_name(g, sizeof(g), pw->pw_gid));
			return;
		}
		dir[i] = '/';
	}
	if (stat(path, &st) == 0) {
		/* The milter runs: the socket as it is. */
		if (S_ISSOCK(st.st_mode) &&
		    !user_may(pw, groups, ngroups, &st, 2))
			problem(pf, PB_EPERM,
				"[milter] socket: Postfix's user %s cannot "
				"write the socket %s (%s): it gets "
				"\"Permission denied\"; make the socket's "
				"directory group %s with the setgid bit "
				"(chmod 2750), so that the socket gets that "
				"group",
				owner, path, describe(d, sizeof(d), &st),
				group_name(g, sizeof(g), pw->pw_gid));
		return;
	}
	if (who != PREFLIGHT_MILTER)
		return;
	/* The socket as this process will make it. */
	{
		char *slash;

		memcpy(dir, path, len + 1);
		slash = strrchr(dir, '/');
		if (!slash)
			return;
		*slash = '\0';
		if (stat(dir[0] ? dir : "/", &sd) < 0)
			return;
		memset(&st, 0, sizeof(st));
		st.st_uid = geteuid();
		st.st_gid = (sd.st_mode & S_ISGID) ? sd.st_gid : getegid();
		st.st_mode = S_IFSOCK | (0777 & ~sock_umask);
		if (!user_may(pw, groups, ngroups, &st, 2))
			problem(pf, PB_EPERM,
				"[milter] socket: the socket will be %s, "
				"which Postfix's user %s cannot write "
				"(\"Permission denied\" at every connection): "
				"chgrp %s %s; chmod 2750 %s",
				describe(d, sizeof(d), &st), owner,
				group_name(g, sizeof(g), pw->pw_gid),
				dir[0] ? dir : "/", dir[0] ? dir : "/");
	}
}

static void check_sockdir(struct preflight *pf, const char *path,
			  enum preflight_who who)
{
	char dir[PATH_MAX], d[128], me[512];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if (!dir[0])
		strcpy(dir, "/");
	if (stat(dir, &st) < 0) {
		if (errno == EACCES)
			return;
		problem(pf, errno == ENOENT ? PB_ENOTFOUND : PB_ERROR,
			"[milter] socket: the socket's directory %s: %s: "
			"create it for the milter's user with Postfix's "
			"group: install -d -o " LAYOUT_MILTER
			" -g postfix -m 2750 %s",
			dir, strerror(errno), dir);
		return;
	}
	if (who != PREFLIGHT_MILTER || !access(dir, W_OK | X_OK))
		return;
	if (errno == EROFS)
		problem(pf, PB_EPERM,
			"[milter] socket: %s is read-only for this process: "
			"under systemd's ProtectSystem=strict the milter "
			"needs ReadWritePaths=%s (systemctl edit "
			"patchbridge-milter)",
			dir, dir);
	else
		problem(pf, PB_EPERM,
			"[milter] socket: the milter (%s) cannot create its "
			"socket in %s (%s): the layout gives it the milter's "
			"user with Postfix's group: chown " LAYOUT_MILTER
			":postfix %s; chmod 2750 %s",
			who_am_i(me, sizeof(me)), dir,
			describe(d, sizeof(d), &st), dir, dir);
}

/* Is a milter entry (that reaches elsewhere) meant to be this one? */
static int meant_for_us(const char *endpoint, const char *spec)
{
	const char *ep = strchr(endpoint, ':');
	const char *sp = strchr(spec, ':');

	if (!ep || !sp)
		return 0;
	if (!strcmp(ep, sp))
		return 1;
	return strstr(endpoint, "patchbridge") != NULL;
}

/* A milter entry meant for this milter that reaches another path. */
struct wrong {
	const struct postfix_service *s;
	char *endpoint;
	char *at;
	size_t off, len;
	int done;
};

/* "postconf -e 'PARAM = VALUE-with-the-entry-replaced'" for w. */
static void add_fix_cmd(struct buf *fix, const struct wrong *w,
			const char *with)
{
	const struct postfix_service *s = w->s;

	if (fix->len)
		buf_adds(fix, "; ");
	if (s->override)
		buf_addf(fix, "postconf -P '%s/%s=", s->name, s->param);
	else
		buf_addf(fix, "postconf -e '%s = ", s->param);
	buf_addf(fix, "%.*s%s%s'", (int)w->off, s->milters, with,
		 s->milters + w->off + w->len);
}

/* One problem for the services in ws that share w's endpoint and path. */
static void report_wrong(struct preflight *pf, const struct postfix_conf *pc,
			 struct wrong *ws, size_t nr, size_t first,
			 const char *ours, const char *queue)
{
	struct buf fix = BUF_INIT(FINDING_MAX);
	struct buf cmds = BUF_INIT(FINDING_MAX);
	struct buf with = BUF_INIT(FINDING_MAX);
	struct buf names = BUF_INIT(FINDING_MAX);
	struct strlist seen = STRLIST_INIT;
	const struct wrong *w = &ws[first];
	size_t ql = strlen(queue), i;
	int inside = !strncmp(ours, queue, ql) && ours[ql] == '/';
	int chroot = w->s->chroot, smtpd_main = 0;

	for (i = first; i < nr; i++)
		if (!strcmp(ws[i].endpoint, w->endpoint) &&
		    !strcmp(ws[i].at, w->at) && !ws[i].s->override &&
		    !strcmp(ws[i].s->command, "smtpd"))
			smtpd_main = 1;
	if (inside)
		buf_addf(&with, "unix:%s", ours + ql + 1);
	else if (chroot)
		buf_adds(&with, "unix:" LAYOUT_SOCKDIR "/" LAYOUT_SOCKNAME);
	else
		buf_addf(&with, "unix:%s", ours);
	for (i = first; i < nr; i++) {
		struct wrong *x = &ws[i];

		if (x->done || strcmp(x->endpoint, w->endpoint) ||
		    strcmp(x->at, w->at))
			continue;
		x->done = 1;
		buf_addf(&names, "%s%s (%s)", names.len ? ", " : "", x->s->name,
			 x->s->command);
		/* non_smtpd_milters = $smtpd_milters follows the fix */
		if (!x->s->override && !strcmp(x->s->command, "cleanup") &&
		    pc->non_smtpd_follows && smtpd_main)
			continue;
		if (!x->s->override && strlist_find(&seen, x->s->param) >= 0)
			continue;
		if (!x->s->override)
			strlist_push(&seen, x->s->param);
		add_fix_cmd(&cmds, x, with.data);
	}
	if (!inside && chroot)
		buf_addf(
			&fix,
			"put the socket inside the queue directory and name "
			"it relative to it: [milter] socket = unix:%s/" LAYOUT_SOCKDIR
			"/" LAYOUT_SOCKNAME " (install -d -o " LAYOUT_MILTER
			" -g postfix -m 2750 %s/" LAYOUT_SOCKDIR "), then ",
			queue, queue);
	else if (!inside)
		buf_addf(&fix, "set [milter] socket = unix:%s, or ", w->at);
	buf_addf(&fix, "%s; postfix reload", cmds.data);
	problem(pf, PB_EINVAL,
		"[milter] socket: Postfix's %s %s %s connect%s to %s at %s, "
		"but the milter listens on %s: %s",
		names.data,
		chroot ? "chrooted in" : "not chrooted, working directory",
		queue, strchr(names.data, ',') ? "" : "s", w->endpoint, w->at,
		ours, fix.data);
	strlist_release(&seen);
	buf_release(&fix);
	buf_release(&cmds);
	buf_release(&with);
	buf_release(&names);
}

static void check_postfix(struct preflight *pf, const char *spec,
			  const char *ours, const char *postfix_dir,
			  enum preflight_who who, mode_t sock_umask)
{
	struct buf at = BUF_INIT(POSTFIX_PATH_MAX);
	struct buf queue = BUF_INIT(POSTFIX_PATH_MAX);
	struct postfix_conf *pc = NULL;
	struct wrong *ws = NULL;
	size_t nr_ws = 0, alloc_ws = 0, i, j;
	int smtpd = 0, smtpd_ok = 0, cleanup = 0, cleanup_ok = 0;

	if (postfix_read(&pc, postfix_dir)) {
		warning(pf,
			"[milter] socket: Postfix's settings were not checked: "
			"%s%s",
			err_msg(),
			postfix_dir ?
				"" :
				" (for another instance: --postfix-config "
				"DIR)");
		goto out;
	}
	/* The queue directory as the host sees it (it may be a link). */
	{
		char q[PATH_MAX + 8];

		snprintf(q, sizeof(q), "unix:%s", pc->queue_dir);
		if (postfix_resolve_own(&queue, q)) {
			warning(pf,
				"[milter] socket: Postfix's queue_directory "
				"%s: %s",
				pc->queue_dir, err_msg());
			goto out;
		}
	}
	for (i = 0; i < pc->nr; i++) {
		const struct postfix_service *s = &pc->services[i];
		struct postfix_milter_list l;
		int reached = 0, wrong = 0;

		if (!strcmp(s->command, "smtpd"))
			smtpd++;
		else
			cleanup++;
		if (postfix_milters_parse(&l, s->milters)) {
			warning(pf, "[milter] socket: Postfix's %s: %s: %s",
				s->name, s->param, err_msg());
			continue;
		}
		for (j = 0; j < l.nr && !reached; j++) {
			const struct postfix_milter *m = &l.v[j];

			if (!ours) {
				reached = postfix_inet_same(m->endpoint, spec);
				continue;
			}
			if (postfix_resolve(&at, pc, s, m->endpoint))
				continue;
			if (!strcmp(at.data, ours)) {
				reached = 1;
			} else if (!wrong && meant_for_us(m->endpoint, spec)) {
				wrong = 1;
				ALLOC_GROW(ws, nr_ws + 1, alloc_ws);
				ws[nr_ws].s = s;
				ws[nr_ws].endpoint = xstrdup(m->endpoint);
				ws[nr_ws].at = xstrdup(at.data);
				ws[nr_ws].off = m->off;
				ws[nr_ws].len = m->len;
				ws[nr_ws].done = 0;
				nr_ws++;
			}
		}
		if (reached && !strcmp(s->command, "smtpd"))
			smtpd_ok++;
		else if (reached)
			cleanup_ok++;
		/* a service that reaches it through another entry is fine */
		if (reached && wrong) {
			nr_ws--;
			free(ws[nr_ws].endpoint);
			free(ws[nr_ws].at);
		}
		postfix_milter_list_release(&l);
	}
	for (i = 0; i < nr_ws; i++)
		if (!ws[i].done)
			report_wrong(pf, pc, ws, nr_ws, i, ours, queue.data);
	/* Postfix calls this socket: can its user get through to it? */
	if (ours && (smtpd_ok || cleanup_ok))
		check_reach(pf, ours, pc->mail_owner, sock_umask, who);
	if (smtpd && !smtpd_ok && !nr_ws)
		warning(pf,
			"[milter] socket: no smtpd of Postfix (%s) calls the "
			"milter yet, so no reply is bridged: postconf -e "
			"'smtpd_milters = ... unix:%s'; postfix reload "
			"(README, \"Installing\")",
			pc->config_dir ? pc->config_dir : "",
			ours && !strncmp(ours, queue.data, queue.len) &&
					ours[queue.len] == '/' ?
				ours + queue.len + 1 :
				(ours ? ours : spec));
	if (cleanup && !cleanup_ok && smtpd_ok && !nr_ws)
		warning(pf,
			"[milter] socket: Postfix's cleanup does not call the "
			"milter: mail submitted with sendmail(1) is not seen: "
			"postconf -e 'non_smtpd_milters = $smtpd_milters'");
out:
	for (i = 0; i < nr_ws; i++) {
		free(ws[i].endpoint);
		free(ws[i].at);
	}
	free(ws);
	postfix_conf_free(pc);
	buf_release(&at);
	buf_release(&queue);
}

void preflight_socket_dir(struct preflight *pf, const char *spec)
{
	struct buf ours = BUF_INIT(POSTFIX_PATH_MAX);

	if (!postfix_resolve_own(&ours, spec))
		check_sockdir(pf, ours.data, PREFLIGHT_MILTER);
	buf_release(&ours);
}

void preflight_socket(struct preflight *pf, const struct config *cfg,
		      const char *spec, const char *postfix_dir,
		      enum preflight_who who, mode_t sock_umask)
{
	struct buf ours = BUF_INIT(POSTFIX_PATH_MAX);
	int is_unix;

	(void)cfg;
	is_unix = !strncmp(spec, "unix:", 5) || !strncmp(spec, "local:", 6);
	if (is_unix) {
		if (postfix_resolve_own(&ours, spec)) {
			problem(pf, PB_EINVAL, "[milter] socket: %s: %s", spec,
				err_msg());
			goto out;
		}
		check_sockdir(pf, ours.data, who);
	}
	check_postfix(pf, spec, is_unix ? ours.data : NULL, postfix_dir, who,
		      sock_umask);
out:
	buf_release(&ours);
}
