/*
 * config - the patchbridge configuration file.
 *
 * One INI-style file (git-config syntax, Postfix discipline) read by both
 * programs:
 *
 *	# comment            ; comment too
 *	[forge]
 *	url = https://gitlab.example.org
 *	timeout = 30s
 *	[project "group/name"]
 *	list_address = "list@example.org"
 *
 * Every parameter lives in one static table in config.c (section, key,
 * type, default, bounds, description), like Postfix's {name, default, min,
 * max} tables; the table also drives `patchbridge --dump-config` and the
 * README check that every parameter is documented.  Parameters are named
 * in code by enum config_id, so a misspelt name is a compile error.
 *
 * Values are typed when the file is loaded: an accessor never parses and
 * never fails.  Asking for a parameter with the accessor of another type
 * (config_bool() on a duration) is a bug and aborts.  A parameter that is
 * not set has its default; optional string-like parameters default to ""
 * (unset).
 *
 * Some parameters may be overridden in a [project "group/name"] section
 * (config_param_per_project()); the config_project_*() accessors return
 * the project's own value, else the global one.  A few keys exist only in
 * project sections (CFG_PROJECT_*); their global value is the default.
 *
 * Ownership: config_load() returns one heap object owned by the caller and
 * freed with config_free(); every string and project an accessor returns
 * belongs to it and lives exactly as long.  A loaded config is never
 * modified, so a daemon reloads by loading a new one, swapping the pointer
 * and freeing the old one when no thread uses it any more.
 *
 * Thread safety: a loaded config may be read from any number of threads.
 *
 * Errors: config_load() reads the whole file and reports every problem,
 * not only the first, one line each in the form
 *
 *	FILE:LINE: [section] key: message
 *	patchbridge.conf:12: [forge] timeout: 0 is below the minimum 1s
 *
 * (without ":LINE" for a required parameter that is missing, without the
 * key for problems of a section header).  It returns PB_EINVAL when the
 * file has any error, PB_ENOTFOUND or PB_EPERM when it cannot be read;
 * err_msg() holds the first message.
 */
#ifndef PB_CORE_CONFIG_H
#define PB_CORE_CONFIG_H

#include "util/buf.h"
#include "util/strlist.h"

#include <stddef.h>
#include <stdint.h>

/* The build sets PB_SYSCONFDIR (cmake -DPB_SYSCONFDIR=..., default /etc). */
#ifndef PB_SYSCONFDIR
#define PB_SYSCONFDIR "/etc"
#endif
#define CONFIG_DEFAULT_PATH PB_SYSCONFDIR "/patchbridge/patchbridge.conf"
#define CONFIG_ENV "PATCHBRIDGE_CONFIG"
/* config_dump() output is capped here (PB_ELIMIT past it). */
#define CONFIG_DUMP_MAX (64 * 1024 * 1024)
/* A GitLab project path, "group/subgroup/name". */
#define CONFIG_PROJECT_MAX 1024

/*
 * Every parameter.  The order is the order of the dump and of the
 * documentation: by section, then as a reader would set them.
 */
enum config_id {
	/* [bridge] */
	CFG_BRIDGE_NAME,
	CFG_BRIDGE_ADDRESS,
	CFG_BRIDGE_DOMAIN,
	CFG_BRIDGE_LIST_ADDRESS,
	/* [forge] */
	CFG_FORGE_URL,
	CFG_FORGE_TOKEN_FILE,
	CFG_FORGE_BOT_USERNAME,
	CFG_FORGE_CA_FILE,
	CFG_FORGE_TIMEOUT,
	CFG_FORGE_CONNECT_TIMEOUT,
	CFG_FORGE_MAX_RETRIES,
	CFG_FORGE_RETRY_BASE,
	CFG_FORGE_RETRY_MAX,
	CFG_FORGE_MAX_RESPONSE_SIZE,
	CFG_FORGE_TOUCH_INTERVAL,
	/* [smtp] */
	CFG_SMTP_URL,
	CFG_SMTP_STARTTLS,
	CFG_SMTP_CA_FILE,
	CFG_SMTP_SENDMAIL_PATH,
	CFG_SMTP_USERNAME,
	CFG_SMTP_PASSWORD_FILE,
	CFG_SMTP_TIMEOUT,
	/* [milter] */
	CFG_MILTER_SOCKET,
	CFG_MILTER_MAX_MESSAGE_SIZE,
	CFG_MILTER_MEMORY_LIMIT,
	CFG_MILTER_TRUSTED_AUTHSERV_ID,
	CFG_MILTER_TRUSTED_AUTHRES_FIELDS,
	CFG_MILTER_TIMEOUT,
	CFG_MILTER_CONNINFO_FILE,
	CFG_MILTER_DB_TIMEOUT,
	/* [state] */
	CFG_STATE_BACKEND,
	CFG_STATE_PATH,
	CFG_STATE_CONNINFO_FILE,
	CFG_STATE_HOST,
	CFG_STATE_LEASE,
	CFG_STATE_BUSY_TIMEOUT,
	CFG_STATE_ARCHIVE_KEEP,
	/* [spool] */
	CFG_SPOOL_DIR,
	CFG_SPOOL_MAX_RECORDS,
	CFG_SPOOL_KEEP_DONE,
	CFG_SPOOL_KEEP_DEAD,
	CFG_SPOOL_WATCH,
	/* [log] */
	CFG_LOG_LEVEL,
	CFG_LOG_FORMAT,
	/* [webhook] */
	CFG_WEBHOOK_ENABLED,
	CFG_WEBHOOK_LISTEN,
	CFG_WEBHOOK_SECRET_FILE,
	CFG_WEBHOOK_MAX_REQUEST_SIZE,
	/* [metrics] */
	CFG_METRICS_ENABLED,
	CFG_METRICS_LISTEN,
	CFG_METRICS_MILTER_INTERVAL,
	/* [outbound] */
	CFG_OUTBOUND_POLL_INTERVAL,
	CFG_OUTBOUND_POLL_OVERLAP,
	CFG_OUTBOUND_SKIP_DRAFTS,
	CFG_OUTBOUND_SUBJECT_PREFIX,
	CFG_OUTBOUND_THREADING,
	CFG_OUTBOUND_COVER_LETTER_SINGLE,
	CFG_OUTBOUND_MAIL_REBASES,
	CFG_OUTBOUND_MAX_SERIES,
	CFG_OUTBOUND_FROM_MODE,
	CFG_OUTBOUND_CC_OWNERS,
	CFG_OUTBOUND_CC_AUTHOR,
	CFG_OUTBOUND_CC_REVIEWERS,
	CFG_OUTBOUND_FORGE_COMMENTS,
	CFG_OUTBOUND_APPROVAL_TRAILER,
	CFG_OUTBOUND_COVER_OPEN_THREADS,
	CFG_OUTBOUND_MAIL_RESOLVED,
	CFG_OUTBOUND_COVER_REVIEWERS,
	CFG_OUTBOUND_COVER_SIGNATURES,
	CFG_OUTBOUND_MAIL_REVIEWS_IN,
	CFG_OUTBOUND_ARCHIVE_WAIT,
	CFG_OUTBOUND_ATTEST,
	CFG_OUTBOUND_ATTEST_KEY_FILE,
	CFG_OUTBOUND_ATTEST_SELECTOR,
	/* [inbound] */
	CFG_INBOUND_APPROVAL_POLICY,
	CFG_INBOUND_OWNERS_FILE,
	CFG_INBOUND_NAK_LABEL,
	CFG_INBOUND_REQUIRE_AUTH,
	CFG_INBOUND_LIST_AUTHSERV_ID,
	CFG_INBOUND_BOTS,
	CFG_INBOUND_USER_MAP,
	CFG_INBOUND_ARCHIVE_URL,
	CFG_INBOUND_RETRY_BASE,
	CFG_INBOUND_RETRY_MAX,
	CFG_INBOUND_MAX_ATTEMPTS,
	CFG_INBOUND_NOTIFY_SENDER,
	CFG_INBOUND_NOTICE_RATE,
	CFG_INBOUND_NOTICE_TEMPLATE,
	/* [project "group/name"] only */
	CFG_PROJECT_ENABLED,
	CFG_PROJECT_EMAIL_SUBMISSIONS,
	CFG_PROJECT_EMAIL_BRANCH_PREFIX,
	CFG_PROJECT_EMAIL_TARGET_BRANCH,
	CFG_PROJECT_EMAIL_SERIES_WAIT,
	CFG_PROJECT_EMAIL_MAX_PATCHES,
	CFG_PROJECT_EMAIL_MAX_BYTES,
	CFG_PROJECT_EMAIL_SERIES_PER_HOUR,
	CFG_PROJECT_ATTEST_KEYRING,
	CFG_PROJECT_EMAIL_REQUIRE_ATTESTATION,
	CFG_PROJECT_MAIL_PIPELINES,
	CFG_PROJECT_WAIT_FOR_PIPELINE,
	CFG_PROJECT_PIPELINE_WAIT_MAX,

	CFG__COUNT
};

enum config_type {
	CONFIG_STRING, /* text without control characters */
	CONFIG_PATH, /* an absolute file name */
	CONFIG_BOOL, /* yes/no, true/false, on/off, 1/0 */
	CONFIG_INT, /* decimal integer */
	CONFIG_DURATION, /* 500ms, 30s, 5m, 2h, 1d; plain: seconds */
	CONFIG_SIZE, /* 512k, 10M, 1G (powers of 1024); plain: bytes */
	CONFIG_ENUM, /* one of a fixed list of words */
	CONFIG_EMAIL, /* addr-spec, dot-atom form: local@domain */
	CONFIG_URL, /* scheme://host[:port][/path], scheme from a list */
	CONFIG_DOMAIN, /* a DNS name */
	CONFIG_MAILER, /* smtp:// or smtps:// URL, or "sendmail" */
	CONFIG_SOCKET, /* milter socket: unix:/path, inet:port@host ... */
	CONFIG_HOSTPORT, /* host:port, [v6addr]:port */
};

enum config_param_flags {
	CONFIG_REQUIRED = 1 << 0, /* the file must set it */
	CONFIG_SECRET = 1 << 1, /* dump shows "(secret)", not the value */
	CONFIG_PER_PROJECT = 1 << 2, /* a [project] section may override it */
};

/*
 * One row of the parameter table.  Numbers are in the unit the accessor
 * returns: milliseconds for durations, bytes for sizes.  For string-like
 * types max is the length cap in bytes (min unused).
 */
struct config_param {
	const char *section; /* "forge"; "project" for CFG_PROJECT_* */
	const char *key;
	enum config_type type;
	const char *def; /* default as written in a file; "" unset */
	int64_t min, max; /* bounds, inclusive */
	const char *const *values; /* ENUM words / URL schemes, NULL-ended */
	unsigned flags; /* enum config_param_flags */
	const char *desc; /* one line, for --help and the README */
};

/* Values of the enum parameters, in the order config_enum() counts. */
enum config_threading {
	CONFIG_THREADING_SHALLOW,
	CONFIG_THREADING_DEEP,
	CONFIG_THREADING_NONE,
};
enum config_from_mode {
	CONFIG_FROM_BRIDGE,
	CONFIG_FROM_AUTHOR,
};
enum config_state_backend {
	CONFIG_BACKEND_SQLITE,
	CONFIG_BACKEND_POSTGRESQL,
};
enum config_approval_policy {
	CONFIG_APPROVAL_OWNERS,
	CONFIG_APPROVAL_FORGE,
	CONFIG_APPROVAL_NONE,
};
enum config_email_submissions {
	CONFIG_SUBMISSIONS_OFF,
	CONFIG_SUBMISSIONS_VERIFIED,
	CONFIG_SUBMISSIONS_ANYONE,
};

struct config;
struct config_project;

/*
 * Load path.  When errs is not NULL every error message is appended to
 * it (also when the file cannot be read).  On success *out is the config;
 * on failure *out is NULL.
 */
int config_load(struct config **out, struct strlist *errs, const char *path);

/* The same from memory; name stands for the file name in messages. */
int config_load_mem(struct config **out, struct strlist *errs, const char *name,
		    const char *data, size_t len);

/* NULL is allowed. */
void config_free(struct config *cfg);

/* The file name the config was loaded from, as given. */
const char *config_file(const struct config *cfg);

/*
 * Typed values.  config_str() serves every string-like type and ENUM
 * (the canonical word); the result is never NULL ("" when unset).
 */
const char *config_str(const struct config *cfg, enum config_id id);
int config_bool(const struct config *cfg, enum config_id id);
int64_t config_int(const struct config *cfg, enum config_id id);
int64_t config_duration_ms(const struct config *cfg, enum config_id id);
size_t config_size(const struct config *cfg, enum config_id id);
/* Index of the value among the parameter's values (enum config_...). */
int config_enum(const struct config *cfg, enum config_id id);
/* The line that set id, 0 when it has its default. */
unsigned config_line(const struct config *cfg, enum config_id id);

/*
 * Projects, sorted by path.  config_project_get() finds the [project
 * "path"] section (PB_ENOTFOUND when there is none); the bridge only
 * serves projects that have one.
 */
size_t config_project_count(const struct config *cfg);
const struct config_project *config_project_at(const struct config *cfg,
					       size_t i);
int config_project_get(const struct config_project **out,
		       const struct config *cfg, const char *path);
const char *config_project_name(const struct config_project *p);

/* A project's effective values; id must be CONFIG_PER_PROJECT or
 * CFG_PROJECT_*. */
const char *config_project_str(const struct config_project *p,
			       enum config_id id);
int config_project_bool(const struct config_project *p, enum config_id id);
int64_t config_project_int(const struct config_project *p, enum config_id id);
int config_project_enum(const struct config_project *p, enum config_id id);
/* Does an enabled project take series posted to the list ([project]
 * email_submissions other than off)? */
int config_takes_submissions(const struct config *cfg);
int64_t config_project_duration_ms(const struct config_project *p,
				   enum config_id id);
size_t config_project_size(const struct config_project *p, enum config_id id);

enum config_dump_flags {
	CONFIG_DUMP_SET_ONLY = 1 << 0, /* only what the file sets (-n) */
};

/*
 * Append "[section] key = value" lines to out: every effective value, or
 * with CONFIG_DUMP_SET_ONLY only those set in the file.  Projects follow
 * as [project "path"] lines.  Secret values are never shown.
 */
int config_dump(struct buf *out, const struct config *cfg, unsigned flags);

/* The parameter table. */
const struct config_param *config_param(enum config_id id);
/* "string", "duration", ... as the documentation names a type. */
const char *config_type_name(enum config_type type);

/*
 * The sections in the order of the dump and the documentation: the name
 * of the i-th ("project" last) and its one-line description in *desc;
 * NULL when i is past the last.  (configdoc.h writes the documentation.)
 */
const char *config_section(size_t i, const char **desc);

#endif
