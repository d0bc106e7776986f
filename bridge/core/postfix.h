/*
 * postfix - what the local Postfix will do with the milter's socket.
 *
 * Postfix names its milters in main.cf (smtpd_milters for mail that comes
 * in by SMTP, non_smtpd_milters for mail that cleanup(8) receives from
 * sendmail(1) and pickup) and, per service, with "-o" overrides in
 * master.cf.  smtpd connects to smtpd_milters itself, cleanup to
 * non_smtpd_milters.  Either may run chrooted in queue_directory
 * (master.cf's fifth column; Debian's master.cf chroots smtp, smtpd
 * services and cleanup; "-" means "n" since Postfix 3.0, master(5)).
 *
 * How a Postfix process finds "unix:PATH", from Postfix's source:
 * milter8_connect() (src/milter/milter8.c) splits the endpoint at its
 * first ':' and hands the rest to unix_connect() unchanged, so PATH is
 * resolved by the kernel against the process's root and working
 * directory.  Every server chdir()s to queue_directory before it enters
 * the jail (single_server.c, multi_server.c, event_server.c: "chdir
 * (var_queue_dir)", then chroot_uid()), and chroot_uid()
 * (src/util/chroot_uid.c) does chroot(queue_directory) then chdir("/").
 * So, chrooted or not, a relative PATH is found below queue_directory;
 * an absolute PATH is found below queue_directory when the process is
 * chrooted (MILTER_README: "an absolute pathname is interpreted relative
 * to the Postfix queue directory"), and as written when it is not.  A
 * symbolic link met on the way is resolved inside the jail too.  The
 * relative form (smtpd_milters = unix:patchbridge/milter.sock, the
 * socket at queue_directory/patchbridge/milter.sock) is the one that
 * works both ways.
 *
 * The settings are read with postconf(1) itself, never by parsing the
 * files: it knows the defaults, the compatibility level and $name
 * expansion ("postconf -x"), and honours MAIL_CONFIG as Postfix does.
 * postfix_read() runs "postconf [-c DIR] -x NAMES", "postconf
 * non_smtpd_milters" (is it "$smtpd_milters"?), "postconf -F" (the
 * master.cf fields) and "postconf -Px" (the -o overrides); each run's
 * output is capped at POSTFIX_OUTPUT_MAX and its time at
 * POSTFIX_TIMEOUT_MS.
 *
 * Ownership: struct postfix_conf and everything in it belong to the
 * caller (postfix_conf_free()).  Thread safety: none shared; reading
 * spawns processes, so call it before threads start.  Errors: 0 or a
 * negative code with err_msg() set: PB_ENOTFOUND (no postconf), PB_ERROR
 * (postconf failed; its complaint is in the message), PB_ELIMIT, PB_EINVAL
 * (output that is not postconf's).
 */
#ifndef PB_CORE_POSTFIX_H
#define PB_CORE_POSTFIX_H

#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>

#define POSTFIX_OUTPUT_MAX (1024 * 1024)
#define POSTFIX_TIMEOUT_MS 10000
/* Longest endpoint or path we compare; longer ones never match. */
#define POSTFIX_PATH_MAX 4096

/* A master.cf service that talks to milters. */
struct postfix_service {
	char *name; /* "smtp/inet" */
	char *command; /* "smtpd" or "cleanup" */
	int chroot; /* runs chrooted in queue_directory */
	const char *param; /* "smtpd_milters" or "non_smtpd_milters" */
	char *milters; /* the value in force for it, $names expanded */
	int override; /* the value is a master.cf -o override */
};

struct postfix_conf {
	char *config_dir; /* config_directory */
	char *queue_dir; /* queue_directory */
	char *mail_owner; /* the user its daemons run as */
	char *version; /* mail_version */
	/* non_smtpd_milters is "$smtpd_milters": it follows smtpd_milters */
	int non_smtpd_follows;
	struct postfix_service *services;
	size_t nr;
};

/*
 * Read the settings of the Postfix whose configuration is in config_dir
 * (NULL: postconf's default, or $MAIL_CONFIG).  postconf is run from
 * $PATH, else /usr/sbin/postconf.
 */
int postfix_read(struct postfix_conf **out, const char *config_dir);
void postfix_conf_free(struct postfix_conf *pf);

/*
 * One milter of a smtpd_milters-style value: its endpoint and, in the
 * "{ endpoint, name=value, ... }" form, its default_action.  Offsets
 * are into the value, so a fix can replace the endpoint in place.
 */
struct postfix_milter {
	char *endpoint; /* "unix:/run/x.sock", "inet:127.0.0.1:8891" */
	char *default_action; /* NULL: milter_default_action applies */
	size_t off, len; /* the endpoint's place in the value */
};

struct postfix_milter_list {
	struct postfix_milter *v;
	size_t nr;
	size_t alloc;
};

void postfix_milter_list_release(struct postfix_milter_list *l);

/*
 * Split a milter list (separators: blanks and commas; groups in braces).
 * PB_EINVAL for an unbalanced brace or an empty group.
 */
int postfix_milters_parse(struct postfix_milter_list *out, const char *value);

/*
 * Where a process of service s connects for a "unix:"/"local:"
 * endpoint: the path as the host sees it (every symbolic link that
 * exists resolved, inside the jail for a chrooted service).  PB_EINVAL
 * for other endpoints.
 */
int postfix_resolve(struct buf *out, const struct postfix_conf *pf,
		    const struct postfix_service *s, const char *endpoint);

/*
 * The same for the milter's own socket spec ("unix:/path", "local:/path"
 * as libmilter takes it): the path as the host sees it.
 */
int postfix_resolve_own(struct buf *out, const char *spec);

/*
 * Does endpoint (Postfix's syntax, "inet:host:port") name the TCP port
 * of spec (libmilter's, "inet:port@host")?  Hosts compare equal when
 * they are the same text, or both loopback, or spec has none.
 */
int postfix_inet_same(const char *endpoint, const char *spec);

#endif
