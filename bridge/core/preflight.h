/*
 * preflight - what `patchbridge check-config` and `patchbridge-milter
 * --check` find wrong around a configuration that loads: the files it
 * names, the spool's owners and modes, the milter's socket directory,
 * and whether Postfix will connect to the socket the milter listens on.
 *
 * The secret files (token, webhook secret, SMTP password, connection
 * strings) get the very check the program runs at start, secret_open()
 * (secret.h), made as the daemon's user - the state directory's owner -
 * when root runs check-config, so check-config passes exactly the files
 * run takes.
 *
 * Each finding is one line, "[section] key: what is wrong: what to do",
 * the fix spelt out as a command where there is one.  A problem stops
 * the program that checks (check-config exits 78, --check with the code
 * of the first problem); a warning is printed and the check passes
 * (Postfix not configured for the milter yet, say, which is the normal
 * state before the first start).
 *
 * The layout the checks expect is the documented one (README,
 * "Installing"): the daemon's user owns the spool and the state
 * directory, and shares their group with the milter's user; the spool
 * and its five subdirectories are group-writable with the setgid bit
 * (2770); the socket directory belongs to the milter's user with
 * Postfix's group (2750).  The checks name users and groups as found on
 * the host; where they cannot know a name, they give the documented one
 * (patchbridge, patchbridge-milter).
 *
 * Root: patchbridge-milter never creates state as the wrong user.  Run
 * as root, it would create the spool's directories and records owned by
 * root, which the milter's own user then cannot write.  So
 * preflight_root() refuses root unless the spool directory exists and
 * belongs to root (a layout where root is the milter's user, as in
 * throw-away test set-ups); mconf.c calls it before anything opens the
 * spool, for every mode of the milter.  (The spool's own checks of
 * symbolic links, owners and modes of what it opens are spool.c's; these
 * come first and explain.)
 *
 * Ownership: struct preflight owns its lists.  Thread safety: none
 * shared; preflight_postfix() runs postconf (postfix.h), so call the
 * checks before threads start.  Errors: the check functions record
 * findings, they do not fail; preflight_root() and preflight_explain()
 * return 0 or a code with err_msg() set.
 */
#ifndef PB_CORE_PREFLIGHT_H
#define PB_CORE_PREFLIGHT_H

#include "util/buf.h"
#include "util/strlist.h"

#include <sys/stat.h>
#include <sys/types.h>

struct config;

/* The users the documentation installs (README, "Users and directories"). */
#define PREFLIGHT_DAEMON_USER "patchbridge"
#define PREFLIGHT_MILTER_USER "patchbridge-milter"
/* Room for a user or group name in struct preflight_owner. */
#define PREFLIGHT_NAME_MAX 96

/*
 * Who must own a file or directory of the programs: the documented owner
 * a fix names ("chown USER:GROUP FILE", "runuser -u USER --"), never root.
 */
struct preflight_owner {
	char user[PREFLIGHT_NAME_MAX]; /* a name, or the uid's number */
	char group[PREFLIGHT_NAME_MAX];
	uid_t uid; /* (uid_t)-1 when no such user exists here */
	gid_t gid; /* (gid_t)-1 likewise */
};

/* Who runs the check: the files and accesses each needs differ. */
enum preflight_who {
	PREFLIGHT_DAEMON, /* patchbridge check-config */
	PREFLIGHT_MILTER, /* patchbridge-milter --check */
};

struct preflight {
	struct strlist problems;
	struct strlist warnings;
	int code; /* the first problem's code (PB_EINVAL, PB_EPERM ...) */
};

/*
 * The documented owner of path, a file or directory the programs use.
 * The milter's socket ([milter] socket) and its directory: the milter's
 * user and that directory's group (Postfix's).  Anything else (the spool,
 * the state database and its files, the locks, the secrets): the
 * daemon's user and its group, which is the first that applies of
 *
 *   - the owner and group of the state directory, or else of the spool,
 *     when that owner is not root (the layout the admin made);
 *   - this process's user and group when it is not root (self: the
 *     daemon naming what it needs);
 *   - the documented user patchbridge, with its primary group, or the
 *     documented names when there is no such user.
 *
 * So a fix never says to run a program as root, or to give root a
 * file.  cfg may be NULL, and then state_dir and spool_dir (either may be
 * NULL) say where to look.
 */
void preflight_owner(struct preflight_owner *o, const struct config *cfg,
		     const char *path, int self);
void preflight_owner_dirs(struct preflight_owner *o, const char *state_dir,
			  const char *spool_dir, int self);
/* The same for a directory already looked at (its stat st). */
void preflight_owner_stat(struct preflight_owner *o, const struct stat *st,
			  int self);

void preflight_init(struct preflight *pf);
void preflight_release(struct preflight *pf);

/*
 * The files the configuration names exist (and owners.yaml loads):
 * token_file, password_file and secret_file when they are used, the CA
 * files, and for the global [inbound] section and every enabled project
 * the owners_file and user_map.  The milter only looks (stat); it never
 * opens the daemon's secrets.  For the daemon on PostgreSQL (several
 * hosts), a warning for each enabled project without an archive_url.
 */
void preflight_files(struct preflight *pf, const struct config *cfg,
		     enum preflight_who who);

/* Which program's start preflight_start() checks for. */
enum preflight_start {
	PREFLIGHT_START_CHECK, /* check-config: as run would start */
	PREFLIGHT_START_RUN, /* run: the daemon, with its ports */
	PREFLIGHT_START_ONCE, /* run --once: no ports */
	PREFLIGHT_START_FILES, /* status: the files alone, as problems */
};

/*
 * What stops the daemon at its start, checked the way it will meet it:
 * the secret files (secret_open(), as the daemon's user), the files it
 * opens or creates in the spool and beside the state database (the
 * spool's lock, the records in new/ and cur/, the database, its
 * -journal, -wal and -shm files, the run and outbound locks), which must
 * be the daemon's user's, and the ports of [metrics] and [webhook] when
 * enabled (not for PREFLIGHT_START_ONCE).  Run as root for
 * PREFLIGHT_START_RUN or _ONCE, on a state directory of another user: a
 * problem naming the runuser line.  PREFLIGHT_START_FILES checks the
 * files the daemon opens alone (for `patchbridge status`, run by anyone
 * who may read the state).  check-config runs it before its other
 * checks, and run before it opens anything, so that check-config's "ok"
 * means run will start.
 */
void preflight_start(struct preflight *pf, const struct config *cfg,
		     enum preflight_start what);

/*
 * The spool: [spool] dir and its subdirectories exist with the
 * documented owners and modes, and the user running the check (when it
 * is the daemon's, or the milter) can use them.  For the milter, the
 * daemon's files in the spool too (its lock, the waiting records, as
 * preflight_start() checks them), as warnings: they stop the daemon,
 * and must not keep the milter from starting.
 */
void preflight_spool(struct preflight *pf, const struct config *cfg,
		     enum preflight_who who);

/*
 * The socket spec (the [milter] socket, or -p's): its directory exists,
 * the milter can create the socket there (PREFLIGHT_MILTER), and no
 * service of the Postfix in postfix_dir (NULL: postconf's default, or
 * $MAIL_CONFIG) that runs milters has an entry meant for this one (the
 * same path, or one naming patchbridge) that it resolves to another path
 * (the chroot case: a problem, with the corrected postconf line).  When
 * Postfix does call the socket, its mail_owner must get through the
 * directories to it and, for the milter, be able to write the socket as
 * it will be made (sock_umask, the directory's setgid group).  Postfix
 * missing, or no smtpd calling the milter yet, is a warning.
 */
void preflight_socket(struct preflight *pf, const struct config *cfg,
		      const char *spec, const char *postfix_dir,
		      enum preflight_who who, mode_t sock_umask);

/*
 * Only the first part of preflight_socket() for the milter: can it make
 * the socket spec names?  For a failed bind, to say why.
 */
void preflight_socket_dir(struct preflight *pf, const char *spec);

/*
 * The milter's rule for root (see above): 0, or PB_EPERM with a message
 * that names the spool's owner and mode and the command to run instead.
 */
int preflight_root(const struct config *cfg);

/*
 * Why this process cannot use the spool directory dir: its and its
 * subdirectories' owners and modes, who we are, and what the layout
 * expects.  Appended to out; for a PB_EPERM from spool_open().
 */
int preflight_explain(struct buf *out, const char *dir);

/*
 * Why this process cannot read path (for a PB_EPERM from opening it):
 * the first directory on the way it cannot search, or the file it cannot
 * read, with its owner, group and mode, who we are, and the group to
 * join or the user to run as.  Appended to out; nothing when nothing on
 * the way is closed to us.
 */
int preflight_access_hint(struct buf *out, const char *path);

#endif
