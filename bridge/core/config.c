#include "core/config.h"
#include "core/configdoc.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/perm.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Units, in what the accessors return: milliseconds and bytes. */
#define SEC 1000LL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)
#define KIB 1024LL
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)

/* Caps on string-like values, in bytes. */
#define PATH_LEN_MAX 4095
#define DOMAIN_LEN_MAX 253 /* RFC 1035 2.3.4, without the final dot */
#define URL_LEN_MAX 2048
#define NAME_LEN_MAX 255 /* user names, labels, authserv-ids */
/* config_load() stops collecting after this many errors. */
#define ERRORS_MAX 1000

static const char *const http_schemes[] = { "https", "http", NULL };
static const char *const smtp_schemes[] = { "smtp", "smtps", NULL };
static const char *const log_levels[] = { "debug",   "info", "notice",
					  "warning", "err",  NULL };
/* Order matches enum log_format (util/log.h). */
static const char *const log_formats[] = { "text", "json", NULL };
/* Orders match enum config_threading, _from_mode, _approval_policy,
 * _email_submissions. */
static const char *const threading_values[] = { "shallow", "deep", "none",
						NULL };
static const char *const from_values[] = { "bridge", "author", NULL };
static const char *const backend_values[] = { "sqlite", "postgresql", NULL };
static const char *const approval_values[] = { "owners", "forge", "none",
					       NULL };
static const char *const submission_values[] = { "off", "verified", "anyone",
						 NULL };

/* The sections, in the order of the dump and the documentation. */
static const struct {
	const char *name;
	const char *desc;
} sections[] = {
	{ "bridge", "Who the bridge is on the list." },
	{ "forge", "The GitLab instance and how to talk to it." },
	{ "smtp", "How the daemon submits mail." },
	{ "milter", "The Postfix milter (`patchbridge-milter`)." },
	{ "state", "The state database of the daemon." },
	{ "spool", "The spool that carries actions from the milter to the "
		   "daemon." },
	{ "log", "Logging (stderr in the foreground, syslog `mail` as a "
		 "daemon)." },
	{ "webhook", "The optional webhook receiver (the daemon polls in any "
		     "case)." },
	{ "metrics", "Prometheus metrics and health checks of the daemon, "
		     "and the milter's counters for it." },
	{ "outbound", "Forge to list: how merge requests become patch "
		      "series." },
	{ "inbound", "List to forge: how replies become comments, approvals "
		     "and NAKs." },
	{ "project", "One section per bridged GitLab project, named by its "
		     "path.  Only projects with a section are bridged." },
};
#define SECTIONS_NR (sizeof(sections) / sizeof(sections[0]))
#define SECTION_PROJECT (SECTIONS_NR - 1)

#define PP CONFIG_PER_PROJECT

/* One entry per parameter, as in Postfix's tables. */
/* clang-format off */
static const struct config_param params[CFG__COUNT] = {
	[CFG_BRIDGE_NAME] = {
		"bridge", "name", CONFIG_STRING, "patchbridge", 0, 64, NULL, 0,
		"Display name on mail the bridge sends as itself" },
	[CFG_BRIDGE_ADDRESS] = {
		"bridge", "address", CONFIG_EMAIL, "", 0, PB_ADDR_MAX, NULL,
		CONFIG_REQUIRED,
		"The bridge's own address: From of its mail, envelope sender" },
	[CFG_BRIDGE_DOMAIN] = {
		"bridge", "domain", CONFIG_DOMAIN, "", 0, DOMAIN_LEN_MAX, NULL,
		CONFIG_REQUIRED,
		"Right-hand side of the Message-IDs the bridge makes" },
	[CFG_BRIDGE_LIST_ADDRESS] = {
		"bridge", "list_address", CONFIG_EMAIL, "", 0, PB_ADDR_MAX,
		NULL, PP,
		"Posting address of the list that series are mailed to" },

	[CFG_FORGE_URL] = {
		"forge", "url", CONFIG_URL, "", 0, URL_LEN_MAX, http_schemes,
		CONFIG_REQUIRED,
		"Base URL of the GitLab instance" },
	[CFG_FORGE_TOKEN_FILE] = {
		"forge", "token_file", CONFIG_PATH, "", 0, PATH_LEN_MAX, NULL,
		CONFIG_REQUIRED,
		"File with the API token (readable by the daemon, not the "
		"milter)" },
	[CFG_FORGE_BOT_USERNAME] = {
		"forge", "bot_username", CONFIG_STRING, "", 0, NAME_LEN_MAX,
		NULL, 0,
		"The token's GitLab user name; empty: asked from the forge" },
	[CFG_FORGE_CA_FILE] = {
		"forge", "ca_file", CONFIG_PATH, "", 0, PATH_LEN_MAX, NULL, 0,
		"CA certificates for the forge's TLS; empty: the system's" },
	[CFG_FORGE_TIMEOUT] = {
		"forge", "timeout", CONFIG_DURATION, "1m", 1 * SEC, 1 * HOUR,
		NULL, 0,
		"Longest time one API request may take" },
	[CFG_FORGE_CONNECT_TIMEOUT] = {
		"forge", "connect_timeout", CONFIG_DURATION, "10s", 1 * SEC,
		5 * MIN, NULL, 0,
		"Longest time to connect to the forge" },
	[CFG_FORGE_MAX_RETRIES] = {
		"forge", "max_retries", CONFIG_INT, "5", 0, 100, NULL, 0,
		"Retries, with backoff, of a request that failed temporarily" },
	[CFG_FORGE_RETRY_BASE] = {
		"forge", "retry_base", CONFIG_DURATION, "500ms", 10, 1 * MIN,
		NULL, 0,
		"Delay before the first retry; doubles with each retry" },
	[CFG_FORGE_RETRY_MAX] = {
		"forge", "retry_max", CONFIG_DURATION, "5m", 1 * SEC, 1 * HOUR,
		NULL, 0,
		"Longest delay between two retries" },
	[CFG_FORGE_MAX_RESPONSE_SIZE] = {
		"forge", "max_response_size", CONFIG_SIZE, "16M",
		PB_HTTP_BODY_MAX_MIN, PB_HTTP_BODY_MAX_MAX, NULL, 0,
		"Largest API response accepted" },
	[CFG_FORGE_TOUCH_INTERVAL] = {
		"forge", "touch_interval", CONFIG_DURATION, "1m", 0, 1 * HOUR,
		NULL, 0,
		"GitLab's ThrottledTouch interval: a comment this soon after "
		"the last leaves updated_at as it was, so merge requests' "
		"comments are read again this long after their last change" },

	[CFG_SMTP_URL] = {
		"smtp", "url", CONFIG_MAILER, "sendmail", 0, URL_LEN_MAX,
		smtp_schemes, 0,
		"Where mail goes: smtp://host[:port], smtps://host[:port] "
		"or sendmail" },
	[CFG_SMTP_STARTTLS] = {
		"smtp", "starttls", CONFIG_BOOL, "no", 0, 0, NULL, 0,
		"With an smtp:// url: require STARTTLS before anything else" },
	[CFG_SMTP_CA_FILE] = {
		"smtp", "ca_file", CONFIG_PATH, "", 0, PATH_LEN_MAX, NULL, 0,
		"CA certificates for the SMTP server's TLS; empty: the "
		"system's" },
	[CFG_SMTP_SENDMAIL_PATH] = {
		"smtp", "sendmail_path", CONFIG_PATH, "/usr/sbin/sendmail", 0,
		PATH_LEN_MAX, NULL, 0,
		"The sendmail program for url = sendmail, then any fixed "
		"arguments, split at blanks (`/usr/sbin/sendmail -C /etc/pf2`)" },
	[CFG_SMTP_USERNAME] = {
		"smtp", "username", CONFIG_STRING, "", 0, NAME_LEN_MAX, NULL, 0,
		"SMTP AUTH user; empty: no authentication" },
	[CFG_SMTP_PASSWORD_FILE] = {
		"smtp", "password_file", CONFIG_PATH, "", 0, PATH_LEN_MAX, NULL,
		0,
		"File with the SMTP AUTH password (needed with username)" },
	[CFG_SMTP_TIMEOUT] = {
		"smtp", "timeout", CONFIG_DURATION, "1m", 1 * SEC, 1 * HOUR,
		NULL, 0,
		"Longest time to submit one message" },

	[CFG_MILTER_SOCKET] = {
		"milter", "socket", CONFIG_SOCKET,
		"unix:/var/spool/postfix/patchbridge/milter.sock", 0,
		PATH_LEN_MAX, NULL, 0,
		"Where the milter listens for Postfix (in Postfix's queue "
		"directory, which a chrooted smtpd sees)" },
	[CFG_MILTER_MAX_MESSAGE_SIZE] = {
		"milter", "max_message_size", CONFIG_SIZE, "10M",
		PB_MAIL_MAX_MIN, PB_MAIL_MAX_MAX, NULL, 0,
		"Larger mail is bridged from its first bytes, said to be "
		"cut" },
	[CFG_MILTER_MEMORY_LIMIT] = {
		"milter", "memory_limit", CONFIG_SIZE, "256M",
		PB_MILTER_MEMORY_MIN, PB_MILTER_MEMORY_MAX, NULL, 0,
		"Mail bytes all connections together hold in memory; a mail "
		"that would pass it is kept in a file in the spool's tmp/" },
	[CFG_MILTER_TRUSTED_AUTHSERV_ID] = {
		"milter", "trusted_authserv_id", CONFIG_STRING, "", 0,
		NAME_LEN_MAX, NULL, 0,
		"Authentication-Results authserv-id to trust; empty: none" },
	[CFG_MILTER_TRUSTED_AUTHRES_FIELDS] = {
		"milter", "trusted_authres_fields", CONFIG_INT, "2", 1,
		PB_AUTHRES_FIELDS_MAX, NULL, 0,
		"How many Authentication-Results fields the verifiers before "
		"the milter add on top (OpenDKIM 1, OpenDMARC 1)" },
	[CFG_MILTER_TIMEOUT] = {
		"milter", "timeout", CONFIG_DURATION, "2h", 10 * SEC, 1 * DAY,
		NULL, 0,
		"Idle time after which the milter drops a Postfix connection" },
	[CFG_MILTER_CONNINFO_FILE] = {
		"milter", "conninfo_file", CONFIG_PATH, "", 0, PATH_LEN_MAX,
		NULL, 0,
		"File with a PostgreSQL connection string (a role that may "
		"read the thread map) for the milter (backend postgresql); "
		"empty: it reads this host's copy only" },
	[CFG_MILTER_DB_TIMEOUT] = {
		"milter", "db_timeout", CONFIG_DURATION, "1s", 100, 10 * SEC,
		NULL, 0,
		"Longest wait for PostgreSQL per read; then the milter reads "
		"this host's copy of the thread map for 30 seconds" },

	[CFG_STATE_BACKEND] = {
		"state", "backend", CONFIG_ENUM, "sqlite", 0, 0,
		backend_values, 0,
		"Where the state is: sqlite (one host), postgresql (shared by "
		"several hosts)" },
	[CFG_STATE_PATH] = {
		"state", "path", CONFIG_PATH, "/var/lib/patchbridge/state.db",
		0, PATH_LEN_MAX, NULL, 0,
		"The SQLite state database (backend sqlite), or this host's "
		"copy of the thread map for the milter (backend postgresql); "
		"its directory also holds the git mirrors" },
	[CFG_STATE_CONNINFO_FILE] = {
		"state", "conninfo_file", CONFIG_PATH, "", 0, PATH_LEN_MAX,
		NULL, 0,
		"File with the PostgreSQL connection string, TLS settings "
		"included (backend postgresql)" },
	[CFG_STATE_HOST] = {
		"state", "host", CONFIG_DOMAIN, "", 0, DOMAIN_LEN_MAX, NULL, 0,
		"This host's name in the state: who spooled, claimed, sent; "
		"empty: the host name" },
	[CFG_STATE_LEASE] = {
		"state", "lease", CONFIG_DURATION, "10m", 1 * SEC, 1 * DAY,
		NULL, 0,
		"How long a claim on a reply or a mail outlives a host that "
		"stopped: then another takes over" },
	[CFG_STATE_BUSY_TIMEOUT] = {
		"state", "busy_timeout", CONFIG_DURATION, "5s", 0, 10 * MIN,
		NULL, 0,
		"How long a database access waits for another's lock" },
	[CFG_STATE_ARCHIVE_KEEP] = {
		"state", "archive_keep", CONFIG_DURATION, "365d", 0,
		36500 * DAY, NULL, 0,
		"How long archived mail is kept for export and for the "
		"threads of replies to it (0: for ever)" },

	[CFG_SPOOL_DIR] = {
		"spool", "dir", CONFIG_PATH, "/var/spool/patchbridge", 0,
		PATH_LEN_MAX, NULL, 0,
		"Directory of the records the milter leaves for the daemon" },
	[CFG_SPOOL_MAX_RECORDS] = {
		"spool", "max_records", CONFIG_INT, "10000", 1, 1000000, NULL,
		0,
		"Past this many waiting records the milter spools no more" },
	[CFG_SPOOL_KEEP_DONE] = {
		"spool", "keep_done", CONFIG_DURATION, "30d", 0, 3650 * DAY,
		NULL, 0,
		"How long applied records stay in done/ (0: for ever)" },
	[CFG_SPOOL_KEEP_DEAD] = {
		"spool", "keep_dead", CONFIG_DURATION, "90d", 0, 3650 * DAY,
		NULL, 0,
		"How long records that could not be applied stay in dead/ "
		"for replay (0: for ever)" },
	[CFG_SPOOL_WATCH] = {
		"spool", "watch", CONFIG_BOOL, "yes", 0, 0, NULL, 0,
		"The daemon watches new/ (inotify) and takes a record as it "
		"comes; no: it looks every 5 seconds only" },

	[CFG_LOG_LEVEL] = {
		"log", "level", CONFIG_ENUM, "info", 0, 0, log_levels, 0,
		"Least important messages logged" },
	[CFG_LOG_FORMAT] = {
		"log", "format", CONFIG_ENUM, "text", 0, 0, log_formats, 0,
		"One line of text per event, or one JSON object (same "
		"correlation ids)" },

	[CFG_WEBHOOK_ENABLED] = {
		"webhook", "enabled", CONFIG_BOOL, "no", 0, 0, NULL, 0,
		"Receive GitLab merge request, note and pipeline webhooks" },
	[CFG_WEBHOOK_LISTEN] = {
		"webhook", "listen", CONFIG_HOSTPORT, "127.0.0.1:8787", 0,
		NAME_LEN_MAX, NULL, 0,
		"Address and port of the webhook receiver" },
	[CFG_WEBHOOK_SECRET_FILE] = {
		"webhook", "secret_file", CONFIG_PATH, "", 0, PATH_LEN_MAX,
		NULL, 0,
		"File with the webhook's secret token (needed when enabled)" },
	[CFG_WEBHOOK_MAX_REQUEST_SIZE] = {
		"webhook", "max_request_size", CONFIG_SIZE, "1M", 4 * KIB,
		64 * MIB, NULL, 0,
		"Largest webhook request accepted" },

	[CFG_METRICS_ENABLED] = {
		"metrics", "enabled", CONFIG_BOOL, "no", 0, 0, NULL, 0,
		"Serve /metrics, /healthz and /readyz, and have the milter "
		"write its counters for the daemon" },
	[CFG_METRICS_LISTEN] = {
		"metrics", "listen", CONFIG_HOSTPORT, "127.0.0.1:9818", 0,
		NAME_LEN_MAX, NULL, 0,
		"Address and port of the metrics and health server" },
	[CFG_METRICS_MILTER_INTERVAL] = {
		"metrics", "milter_interval", CONFIG_DURATION, "15s", 1 * SEC,
		10 * MIN, NULL, 0,
		"How often the milter writes its counters to the spool "
		"directory" },

	[CFG_OUTBOUND_POLL_INTERVAL] = {
		"outbound", "poll_interval", CONFIG_DURATION, "1m", 5 * SEC,
		1 * DAY, NULL, 0,
		"How often the forge is polled for revisions and comments" },
	[CFG_OUTBOUND_POLL_OVERLAP] = {
		"outbound", "poll_overlap", CONFIG_DURATION, "2m", 0, 1 * HOUR,
		NULL, 0,
		"Each poll looks back this far before the last (clock skew, "
		"notes that come late)" },
	[CFG_OUTBOUND_SKIP_DRAFTS] = {
		"outbound", "skip_drafts", CONFIG_BOOL, "yes", 0, 0, NULL, PP,
		"Do not mail draft merge requests" },
	[CFG_OUTBOUND_SUBJECT_PREFIX] = {
		"outbound", "subject_prefix", CONFIG_STRING, "PATCH", 0, 64,
		NULL, PP,
		"Subject tag, as in [PATCH v2 1/3]" },
	[CFG_OUTBOUND_THREADING] = {
		"outbound", "threading", CONFIG_ENUM, "shallow", 0, 0,
		threading_values, PP,
		"vN's cover letter replies to v1's (shallow), v(N-1)'s "
		"(deep), or nothing" },
	[CFG_OUTBOUND_COVER_LETTER_SINGLE] = {
		"outbound", "cover_letter_single", CONFIG_BOOL, "no", 0, 0,
		NULL, PP,
		"Send a cover letter for a one-patch series too" },
	[CFG_OUTBOUND_MAIL_REBASES] = {
		"outbound", "mail_rebases", CONFIG_BOOL, "yes", 0, 0, NULL, PP,
		"Mail a revision whose patches equal the last mailed ones" },
	[CFG_OUTBOUND_MAX_SERIES] = {
		"outbound", "max_series", CONFIG_INT, "100", 1, 1000, NULL, PP,
		"A merge request with more commits is not mailed" },
	[CFG_OUTBOUND_FROM_MODE] = {
		"outbound", "from_mode", CONFIG_ENUM, "bridge", 0, 0,
		from_values, PP,
		"From: the bridge, the author in the body (bridge); or the "
		"author" },
	[CFG_OUTBOUND_CC_OWNERS] = {
		"outbound", "cc_owners", CONFIG_BOOL, "no", 0, 0, NULL, PP,
		"Cc the owners (owners.yaml) of the paths a series touches" },
	[CFG_OUTBOUND_CC_AUTHOR] = {
		"outbound", "cc_author", CONFIG_BOOL, "no", 0, 0, NULL, PP,
		"Cc the merge request's author" },
	[CFG_OUTBOUND_CC_REVIEWERS] = {
		"outbound", "cc_reviewers", CONFIG_BOOL, "no", 0, 0, NULL, PP,
		"Cc the merge request's reviewers" },
	[CFG_OUTBOUND_FORGE_COMMENTS] = {
		"outbound", "forge_comments", CONFIG_BOOL, "yes", 0, 0, NULL,
		PP,
		"Mail forge comments, approvals, merges and closes to the "
		"list" },
	[CFG_OUTBOUND_APPROVAL_TRAILER] = {
		"outbound", "approval_trailer", CONFIG_STRING, "Acked-by", 0,
		64, NULL, PP,
		"Trailer of the reply that mails a forge approval; empty: "
		"approvals are not mailed" },
	[CFG_OUTBOUND_COVER_OPEN_THREADS] = {
		"outbound", "cover_open_threads", CONFIG_BOOL, "yes", 0, 0,
		NULL, PP,
		"From v2 on, list in the cover letter the review threads of "
		"earlier versions still open on the forge, and those resolved "
		"since the last version" },
	[CFG_OUTBOUND_MAIL_RESOLVED] = {
		"outbound", "mail_resolved", CONFIG_BOOL, "yes", 0, 0, NULL, PP,
		"Mail a reply in its thread when a review thread mailed to "
		"the list is resolved on the forge" },
	[CFG_OUTBOUND_COVER_REVIEWERS] = {
		"outbound", "cover_reviewers", CONFIG_BOOL, "yes", 0, 0, NULL,
		PP,
		"List in the cover letter, per subsystem touched, whose review "
		"is required and whose optional ([inbound] owners_file)" },
	[CFG_OUTBOUND_COVER_SIGNATURES] = {
		"outbound", "cover_signatures", CONFIG_BOOL, "yes", 0, 0, NULL,
		PP,
		"Say in the cover letter, per commit, whether the forge "
		"verified a signature on it and whose key made it" },
	[CFG_OUTBOUND_MAIL_REVIEWS_IN] = {
		"outbound", "mail_reviews_in", CONFIG_BOOL, "yes", 0, 0, NULL,
		PP,
		"Reply to the cover letter when all required reviews are in "
		"([inbound] owners_file), and when that is taken back" },
	[CFG_OUTBOUND_ARCHIVE_WAIT] = {
		"outbound", "archive_wait", CONFIG_DURATION, "5m", 0, 1 * DAY,
		NULL, 0,
		"A mail the MTA may have taken (a host died before its 250 "
		"was recorded) is sent again only once the list archive "
		"([inbound] archive_url) has not shown it for this long" },
	[CFG_OUTBOUND_ATTEST] = {
		"outbound", "attest", CONFIG_BOOL, "no", 0, 0, NULL, 0,
		"Sign each patch and cover letter as patatt does, with the "
		"key in attest_key_file, for [bridge] address (b4 and "
		"patatt validate check it; publish the public key first: "
		"patchbridge attest-key)" },
	[CFG_OUTBOUND_ATTEST_KEY_FILE] = {
		"outbound", "attest_key_file", CONFIG_PATH, "", 0, PATH_LEN_MAX,
		NULL, 0,
		"The bridge's ed25519 private key, as patatt genkey or "
		"patchbridge attest-key --generate writes it (readable by the "
		"daemon, not the milter)" },
	[CFG_OUTBOUND_ATTEST_SELECTOR] = {
		"outbound", "attest_selector", CONFIG_STRING, "", 0, 64, NULL,
		0,
		"The key's name in the keyring (s=); empty: patatt's "
		"\"default\".  A new key gets a new selector" },

	[CFG_INBOUND_APPROVAL_POLICY] = {
		"inbound", "approval_policy", CONFIG_ENUM, "owners", 0, 0,
		approval_values, PP,
		"Who approves by mail: owners.yaml, the forge's rules, "
		"nobody" },
	[CFG_INBOUND_OWNERS_FILE] = {
		"inbound", "owners_file", CONFIG_PATH, "", 0, PATH_LEN_MAX,
		NULL, PP,
		"owners.yaml mapping paths to owners (approval_policy "
		"owners)" },
	[CFG_INBOUND_NAK_LABEL] = {
		"inbound", "nak_label", CONFIG_STRING, "Acks::NACKed", 0,
		NAME_LEN_MAX, NULL, PP,
		"Label put on a merge request that receives a NAK" },
	[CFG_INBOUND_REQUIRE_AUTH] = {
		"inbound", "require_auth", CONFIG_BOOL, "yes", 0, 0, NULL, PP,
		"Honour Acked-by etc. only from DKIM/DMARC-verified senders" },
	[CFG_INBOUND_LIST_AUTHSERV_ID] = {
		"inbound", "list_authserv_id", CONFIG_STRING, "", 0,
		NAME_LEN_MAX, NULL, PP,
		"authserv-id of the list server whose Authentication-Results "
		"vouch for the sender of a post the list wrapped for DMARC "
		"(From list_address, verified); empty: such a sender is never "
		"verified" },
	[CFG_INBOUND_BOTS] = {
		"inbound", "bots", CONFIG_STRING, "", 0, 4096, NULL, PP,
		"Addresses of review bots, separated by commas or blanks: "
		"their mail is read for comments, never for approvals or "
		"NAKs (besides Auto-Submitted mail and the well-known bots)" },
	[CFG_INBOUND_USER_MAP] = {
		"inbound", "user_map", CONFIG_PATH, "", 0, PATH_LEN_MAX, NULL,
		PP,
		"File of \"email username\" lines mapping senders to forge "
		"users (of replies, and of series posted to the list)" },
	[CFG_INBOUND_ARCHIVE_URL] = {
		"inbound", "archive_url", CONFIG_URL, "", 0, URL_LEN_MAX,
		http_schemes, PP,
		"The list archive, as URL/MESSAGE-ID/ finds a mail (public-"
		"inbox); a comment cut to fit the forge links it there; a "
		"mail the MTA may have taken is looked up there before it is "
		"sent again" },
	[CFG_INBOUND_RETRY_BASE] = {
		"inbound", "retry_base", CONFIG_DURATION, "30s", 1 * SEC,
		1 * HOUR, NULL, 0,
		"First wait before applying a mail again while the forge "
		"fails" },
	[CFG_INBOUND_RETRY_MAX] = {
		"inbound", "retry_max", CONFIG_DURATION, "1h", 1 * SEC, 1 * DAY,
		NULL, 0,
		"Longest wait between attempts (the wait doubles up to it)" },
	[CFG_INBOUND_MAX_ATTEMPTS] = {
		"inbound", "max_attempts", CONFIG_INT, "30", 1, 1000, NULL, 0,
		"Attempts before a mail becomes a dead letter" },
	[CFG_INBOUND_NOTIFY_SENDER] = {
		"inbound", "notify_sender", CONFIG_BOOL, "yes", 0, 0, NULL, PP,
		"Mail the sender of a reply, privately, when the bridge did "
		"not do all it asked (README \"Notices to senders\")" },
	[CFG_INBOUND_NOTICE_RATE] = {
		"inbound", "notice_rate", CONFIG_INT, "5", 1, 1000, NULL, 0,
		"Notices mailed to one sender in an hour, at most; the "
		"others are recorded, not mailed" },
	[CFG_INBOUND_NOTICE_TEMPLATE] = {
		"inbound", "notice_template", CONFIG_PATH, "", 0, PATH_LEN_MAX,
		NULL, 0,
		"Template of the notice to senders (templates/sender-notice."
		"txt); empty: the built-in one" },

	[CFG_PROJECT_ENABLED] = {
		"project", "enabled", CONFIG_BOOL, "yes", 0, 0, NULL, 0,
		"Bridge this project (no: keep the section, stop bridging)" },
	[CFG_PROJECT_EMAIL_SUBMISSIONS] = {
		"project", "email_submissions", CONFIG_ENUM, "verified", 0, 0,
		submission_values, 0,
		"Who may open a merge request by posting a series to the "
		"list: nobody, DKIM/DMARC-verified senders (as for "
		"approvals), anyone" },
	[CFG_PROJECT_EMAIL_BRANCH_PREFIX] = {
		"project", "email_branch_prefix", CONFIG_STRING, "email/", 0,
		64, NULL, 0,
		"Branches of series posted to the list are pushed under "
		"this prefix (then the sender's local part, the title cut "
		"to [a-z0-9-] and a hash)" },
	[CFG_PROJECT_EMAIL_TARGET_BRANCH] = {
		"project", "email_target_branch", CONFIG_STRING, "main", 0,
		255, NULL, 0,
		"The branch a series posted to the list is applied onto and "
		"targets when its mails name no base-commit the mirror has" },
	[CFG_PROJECT_EMAIL_SERIES_WAIT] = {
		"project", "email_series_wait", CONFIG_DURATION, "1h", 1 * SEC,
		30 * DAY, NULL, 0,
		"How long after its first mail a series posted to the list "
		"that still lacks a patch has its sender told which (once; "
		"the series still waits for them)" },
	[CFG_PROJECT_EMAIL_MAX_PATCHES] = {
		"project", "email_max_patches", CONFIG_INT, "100", 1, 1000,
		NULL, 0,
		"A series posted to the list with more patches is refused "
		"(the sender is told); as [outbound] max_series the other "
		"way" },
	[CFG_PROJECT_EMAIL_MAX_BYTES] = {
		"project", "email_max_bytes", CONFIG_SIZE, "20M", 64 * KIB,
		1 * GIB, NULL, 0,
		"A series posted to the list whose mails weigh more is "
		"refused (the sender is told)" },
	[CFG_PROJECT_EMAIL_SERIES_PER_HOUR] = {
		"project", "email_series_per_hour", CONFIG_INT, "10", 1, 1000,
		NULL, 0,
		"Series one sender may post to the list in an hour; a further "
		"one is refused (the sender is told)" },
	[CFG_PROJECT_ATTEST_KEYRING] = {
		"project", "attest_keyring", CONFIG_PATH, "", 0, PATH_LEN_MAX,
		NULL, 0,
		"Directory of the contributors' public keys in patatt's "
		"layout (ed25519/DOMAIN/LOCAL/SELECTOR), against which the "
		"mails of a series posted to the list are checked" },
	[CFG_PROJECT_EMAIL_REQUIRE_ATTESTATION] = {
		"project", "email_require_attestation", CONFIG_BOOL, "no", 0,
		0, NULL, 0,
		"Open a series posted to the list only when each of its mails "
		"is attested (patatt, a key of attest_keyring) or DKIM/DMARC-"
		"verified, and none carries a signature that fails" },
	[CFG_PROJECT_MAIL_PIPELINES] = {
		"project", "mail_pipelines", CONFIG_BOOL, "yes", 0, 0, NULL, 0,
		"Mail each finished pipeline's result (passed, or failed with "
		"its failed jobs) in reply to the cover letter of the "
		"revision it ran on" },
	[CFG_PROJECT_WAIT_FOR_PIPELINE] = {
		"project", "wait_for_pipeline", CONFIG_BOOL, "no", 0, 0, NULL,
		0,
		"Mail a revision only once its pipeline passed, or after "
		"pipeline_wait_max with a note in the cover letter" },
	[CFG_PROJECT_PIPELINE_WAIT_MAX] = {
		"project", "pipeline_wait_max", CONFIG_DURATION, "2h", 1 * SEC,
		7 * DAY, NULL, 0,
		"Longest wait for a revision's pipeline (wait_for_pipeline)" },
};
/* clang-format on */

struct config_value {
	char *text; /* canonical text; NULL: not set */
	int64_t num; /* BOOL 0/1, INT, DURATION ms, SIZE bytes, ENUM index */
	unsigned line; /* the line that set it; 0: the default */
	int bad; /* set on that line, but to an invalid value */
};

struct config_project {
	const struct config *cfg; /* for the global fallback */
	char *name;
	unsigned line; /* of the first section header */
	struct config_value v[CFG__COUNT]; /* only per-project ids used */
};

struct config {
	char *file;
	struct config_value v[CFG__COUNT]; /* every id, defaults filled in */
	struct config_project **projects; /* sorted by name */
	size_t projects_nr, projects_alloc;
};

/* The state of one config_load(). */
struct parser {
	struct config *cfg;
	struct strlist *errs;
	const char *name; /* file name for messages */
	unsigned line; /* current line */
	int section; /* index in sections[], or -1 */
	int skip; /* in a bad section: ignore keys */
	struct config_project *proj; /* in a [project] section */
	struct buf label; /* "[forge]", "[project \"a/b\"]" */
	size_t nerr; /* errors reported so far */
};

static int is_project_only(enum config_id id)
{
	return !strcmp(params[id].section, "project");
}

static int is_string_like(enum config_type t)
{
	switch (t) {
	case CONFIG_BOOL:
	case CONFIG_INT:
	case CONFIG_DURATION:
	case CONFIG_SIZE:
	case CONFIG_ENUM:
		return 0;
	default:
		return 1;
	}
}

const char *config_type_name(enum config_type type)
{
	switch (type) {
	case CONFIG_STRING:
		return "string";
	case CONFIG_PATH:
		return "path";
	case CONFIG_BOOL:
		return "bool";
	case CONFIG_INT:
		return "int";
	case CONFIG_DURATION:
		return "duration";
	case CONFIG_SIZE:
		return "size";
	case CONFIG_ENUM:
		return "enum";
	case CONFIG_EMAIL:
		return "email";
	case CONFIG_URL:
		return "url";
	case CONFIG_DOMAIN:
		return "domain";
	case CONFIG_MAILER:
		return "mailer";
	case CONFIG_SOCKET:
		return "milter socket";
	case CONFIG_HOSTPORT:
		return "host:port";
	}
	return "?";
}

const struct config_param *config_param(enum config_id id)
{
	BUG_ON((unsigned)id >= CFG__COUNT);
	return &params[id];
}

const char *config_section(size_t i, const char **desc)
{
	if (i >= SECTIONS_NR)
		return NULL;
	*desc = sections[i].desc;
	return sections[i].name;
}

/* "value" quoted for a message: printable, cut when long. */
static const char *quoted(char *dst, size_t size, const char *v, size_t len)
{
	printable_copy(dst, size, v, len);
	return dst;
}

/* Character classes. */
static int is_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

static int is_key_char(int c)
{
	return is_alnum(c) || c == '_' || c == '-' || c == '.';
}

static int is_section_char(int c)
{
	return is_alnum(c) || c == '_' || c == '-';
}

static int is_atext(int c)
{
	/* RFC 5322 3.2.3 atext */
	return is_alnum(c) || (c && strchr("!#$%&'*+-/=?^_`{|}~", c));
}

static int has_control(const char *v, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c < 0x20 || c == 0x7f)
			return 1;
	}
	return 0;
}

/* A DNS name: labels of letters, digits and inner hyphens (RFC 1123 2.1). */
static int valid_domain(const char *v, size_t len)
{
	size_t i, label = 0;

	if (len == 0 || len > DOMAIN_LEN_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		int c = (unsigned char)v[i];

		if (c == '.') {
			if (label == 0 || v[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!is_alnum(c) && c != '-')
			return 0;
		if (c == '-' && label == 0)
			return 0;
		if (++label > 63)
			return 0;
	}
	return label > 0 && v[len - 1] != '-';
}

/* An IPv6 address, loosely: hex digits, colons, dots; at least 2 colons. */
static int valid_ipv6(const char *v, size_t len)
{
	size_t i, colons = 0;

	if (len < 2 || len > 45)
		return 0;
	for (i = 0; i < len; i++) {
		int c = (unsigned char)v[i];

		if (c == ':')
			colons++;
		else if (!(is_alnum(c) &&
			   strchr("0123456789abcdefABCDEF", c)) &&
			 c != '.')
			return 0;
	}
	return colons >= 2;
}

/* host, or [IPv6] when brackets is set. */
static int valid_host(const char *v, size_t len, int brackets)
{
	if (brackets && len >= 2 && v[0] == '[' && v[len - 1] == ']')
		return valid_ipv6(v + 1, len - 2);
	return valid_domain(v, len);
}

static int valid_port(const char *v, size_t len)
{
	uint64_t port;

	return mem_to_u64(v, len, 65535, &port) && port > 0;
}

/* host:port or [v6]:port */
static int valid_hostport(const char *v, size_t len)
{
	const char *colon = NULL;
	size_t i;

	for (i = len; i > 0; i--) {
		if (v[i - 1] == ':') {
			colon = v + i - 1;
			break;
		}
	}
	if (!colon)
		return 0;
	return valid_host(v, (size_t)(colon - v), 1) &&
	       valid_port(colon + 1, len - (size_t)(colon - v) - 1);
}

/* RFC 5322 addr-spec in its dot-atom form (no quoted local parts). */
static int valid_email(const char *v, size_t len)
{
	const char *at = NULL;
	size_t i, local;

	for (i = len; i > 0; i--) {
		if (v[i - 1] == '@') {
			at = v + i - 1;
			break;
		}
	}
	if (!at)
		return 0;
	local = (size_t)(at - v);
	if (local == 0 || local > 64 || v[0] == '.' || v[local - 1] == '.')
		return 0;
	for (i = 0; i < local; i++) {
		if (v[i] == '.') {
			if (v[i + 1] == '.')
				return 0;
		} else if (!is_atext((unsigned char)v[i])) {
			return 0;
		}
	}
	return valid_domain(at + 1, len - local - 1);
}

/*
 * scheme://host[:port][/path] with the scheme from schemes.  No user
 * information (credentials belong in files), no query, no fragment.  On
 * failure why says what is wrong.
 */
static int valid_url(struct buf *why, const char *v, size_t len,
		     const char *const *schemes)
{
	struct scan s;
	const char *host, *slash;
	size_t i, hostlen;
	int ok = 0;

	scan_init(&s, v, len);
	for (i = 0; schemes[i]; i++) {
		if (scan_lit_icase(&s, schemes[i]) && scan_lit(&s, "://")) {
			ok = 1;
			break;
		}
		scan_init(&s, v, len);
	}
	if (!ok) {
		buf_adds(why, "scheme must be one of ");
		configdoc_words(why, schemes, "");
		return 0;
	}
	if (mem_find(v, len, "?", 1) || mem_find(v, len, "#", 1)) {
		buf_adds(why, "must not have a query or a fragment");
		return 0;
	}
	for (i = 0; i < len; i++) {
		if ((unsigned char)v[i] <= ' ' || (unsigned char)v[i] >= 0x7f) {
			buf_adds(why, "must not contain spaces or non-ASCII "
				      "bytes");
			return 0;
		}
	}
	host = s.p;
	slash = memchr(host, '/', scan_left(&s));
	hostlen = slash ? (size_t)(slash - host) : scan_left(&s);
	if (memchr(host, '@', hostlen)) {
		buf_adds(why, "must not contain a user name or password");
		return 0;
	}
	if (!valid_host(host, hostlen, 1) && !valid_hostport(host, hostlen)) {
		buf_adds(why, "has no valid host[:port]");
		return 0;
	}
	return 1;
}

/* libmilter's smfi_setconn() forms that Postfix's smtpd_milters uses. */
static int valid_socket(const char *v, size_t len)
{
	struct scan s;
	const char *port, *host;
	size_t portlen, hostlen;
	int v6;

	scan_init(&s, v, len);
	if (scan_lit(&s, "unix:") || scan_lit(&s, "local:"))
		return scan_peek(&s) == '/' && scan_left(&s) > 1;
	if (scan_lit(&s, "inet6:"))
		v6 = 1;
	else if (scan_lit(&s, "inet:"))
		v6 = 0;
	else
		return 0;
	if (!scan_until(&s, '@', &port, &portlen))
		return valid_port(s.p, scan_left(&s));
	s.p++;
	host = s.p;
	hostlen = scan_left(&s);
	if (!valid_port(port, portlen))
		return 0;
	return v6 ? valid_ipv6(host, hostlen) || valid_domain(host, hostlen) :
		    valid_domain(host, hostlen);
}

/* A GitLab project path: group[/subgroup...]/name. */
static int valid_project(const char *v, size_t len)
{
	size_t i, seg = 0, segs = 1;

	if (len == 0 || len > CONFIG_PROJECT_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		int c = (unsigned char)v[i];

		if (c == '/') {
			if (seg == 0 || v[i - 1] == '.')
				return 0;
			seg = 0;
			segs++;
			continue;
		}
		if (!is_alnum(c) && c != '_' && c != '-' && c != '.')
			return 0;
		if (seg == 0 && (c == '-' || c == '.'))
			return 0;
		seg++;
	}
	return segs >= 2 && seg > 0 && v[len - 1] != '.';
}

static int parse_bool(int64_t *out, const char *v, size_t len)
{
	static const char *const yes[] = { "yes", "true", "on", "1", NULL };
	static const char *const no[] = { "no", "false", "off", "0", NULL };
	size_t i;

	for (i = 0; yes[i]; i++) {
		if (mem_eq_icase(v, len, yes[i])) {
			*out = 1;
			return 1;
		}
		if (mem_eq_icase(v, len, no[i])) {
			*out = 0;
			return 1;
		}
	}
	return 0;
}

/* Digits and a unit from units; 0 for a bad form, -1 for overflow. */
static int parse_scaled(int64_t *out, const char *v, size_t len,
			const char *const *names, const int64_t *mults)
{
	struct scan s;
	uint64_t n;
	int64_t mult = -1;
	size_t i;

	scan_init(&s, v, len);
	if (scan_peek(&s) < '0' || scan_peek(&s) > '9')
		return 0;
	if (!scan_u64(&s, INT64_MAX, &n))
		return -1;
	for (i = 0; names[i]; i++) {
		if (scan_left(&s) == strlen(names[i]) &&
		    !memcmp(s.p, names[i], scan_left(&s))) {
			mult = mults[i];
			break;
		}
	}
	if (mult < 0)
		return 0;
	if (n > (uint64_t)(INT64_MAX / mult))
		return -1;
	*out = (int64_t)n * mult;
	return 1;
}

/* Like parse_scaled(): 1, 0 for a bad form, -1 for overflow. */
static int parse_int(int64_t *out, const char *v, size_t len)
{
	size_t i = len && v[0] == '-';

	if (mem_to_i64(v, len, INT64_MIN, INT64_MAX, out))
		return 1;
	if (i == len)
		return 0;
	for (; i < len; i++)
		if (v[i] < '0' || v[i] > '9')
			return 0;
	return -1; /* digits only, yet not an int64_t */
}

static int parse_duration(int64_t *out, const char *v, size_t len)
{
	static const char *const names[] = {
		"", "ms", "s", "m", "h", "d", NULL
	};
	static const int64_t mults[] = { SEC, 1, SEC, MIN, HOUR, DAY };

	return parse_scaled(out, v, len, names, mults);
}

static int parse_size(int64_t *out, const char *v, size_t len)
{
	static const char *const names[] = { "",  "k", "K", "m",
					     "M", "g", "G", NULL };
	static const int64_t mults[] = { 1, KIB, KIB, MIB, MIB, GIB, GIB };

	return parse_scaled(out, v, len, names, mults);
}

/* What a value of type t looks like, for "\"x\" is not ..." messages. */
static const char *type_syntax(enum config_type t)
{
	switch (t) {
	case CONFIG_PATH:
		return "an absolute path";
	case CONFIG_BOOL:
		return "a boolean (yes/no, true/false, on/off, 1/0)";
	case CONFIG_INT:
		return "an integer";
	case CONFIG_DURATION:
		return "a duration (500ms, 30s, 5m, 2h, 1d; plain seconds)";
	case CONFIG_SIZE:
		return "a size (512k, 10M, 1G; plain bytes)";
	case CONFIG_EMAIL:
		return "an email address (local@domain)";
	case CONFIG_DOMAIN:
		return "a domain name";
	case CONFIG_SOCKET:
		return "a milter socket (unix:/path, inet:port@host, "
		       "inet6:port@host)";
	case CONFIG_HOSTPORT:
		return "host:port";
	default:
		return config_type_name(t);
	}
}

/*
 * A string-like value: check it; *len becomes the length of its
 * canonical form.  0, or -1 with the reason in why.
 */
static int text_check(const struct config_param *p, const char *v, size_t *len,
		      const char *q, struct buf *why)
{
	struct buf reason = BUF_INIT(256);
	int ok = 1;

	if ((int64_t)*len > p->max) {
		buf_addf(why, "longer than %lld bytes", (long long)p->max);
		return -1;
	}
	if (has_control(v, *len)) {
		buf_adds(why, "contains a control character");
		return -1;
	}
	switch (p->type) {
	case CONFIG_PATH:
		ok = v[0] == '/';
		break;
	case CONFIG_EMAIL:
		ok = valid_email(v, *len);
		break;
	case CONFIG_DOMAIN:
		ok = valid_domain(v, *len);
		break;
	case CONFIG_SOCKET:
		ok = valid_socket(v, *len);
		break;
	case CONFIG_HOSTPORT:
		ok = valid_hostport(v, *len);
		break;
	case CONFIG_MAILER:
		if (*len == 8 && !memcmp(v, "sendmail", 8))
			break;
		__attribute__((fallthrough));
	case CONFIG_URL:
		if (!valid_url(&reason, v, *len, p->values)) {
			buf_addf(why, "\"%s\" is not a valid URL: %s%s", q,
				 reason.data,
				 p->type == CONFIG_MAILER ? " (or sendmail)" :
							    "");
			buf_release(&reason);
			return -1;
		}
		/* A base URL: the client appends paths to it. */
		while (*len && v[*len - 1] == '/')
			(*len)--;
		break;
	default:
		break;
	}
	buf_release(&reason);
	if (!ok) {
		buf_addf(why, "\"%s\" is not %s", q, type_syntax(p->type));
		return -1;
	}
	return 0;
}

/* INT, DURATION, SIZE: parse and check the bounds. */
static int number_parse(int64_t *out, const struct config_param *p,
			const char *v, size_t len, const char *q,
			struct buf *why)
{
	int rc;

	if (p->type == CONFIG_INT)
		rc = parse_int(out, v, len);
	else if (p->type == CONFIG_DURATION)
		rc = parse_duration(out, v, len);
	else
		rc = parse_size(out, v, len);
	if (rc < 0) {
		buf_addf(why, "%s is too large", q);
		return -1;
	}
	if (rc == 0) {
		buf_addf(why, "\"%s\" is not %s", q, type_syntax(p->type));
		return -1;
	}
	if (*out < p->min) {
		buf_addf(why, "%s is below the minimum ", q);
		configdoc_number(why, p->type, p->min);
		return -1;
	}
	if (*out > p->max) {
		buf_addf(why, "%s is above the maximum ", q);
		configdoc_number(why, p->type, p->max);
		return -1;
	}
	return 0;
}

/*
 * Check and convert v[0..len) for parameter p into out (text and num).
 * On failure return -1 with the reason in why.  Used for the file and
 * for the table's own defaults.
 */
static int value_parse(struct config_value *out, const struct config_param *p,
		       const char *v, size_t len, struct buf *why)
{
	struct buf text = BUF_INIT(64);
	char q[PB_LOG_QUOTE_MAX];
	int64_t n = 0;
	size_t i;

	quoted(q, sizeof(q), v, len);
	out->text = NULL;
	out->num = 0;
	if (len == 0) {
		if (p->def[0] || (p->flags & CONFIG_REQUIRED)) {
			buf_adds(why, "must not be empty");
			return -1;
		}
		return 0; /* optional: unset */
	}
	switch (p->type) {
	case CONFIG_BOOL:
		if (!parse_bool(&n, v, len)) {
			buf_addf(why, "\"%s\" is not %s", q,
				 type_syntax(p->type));
			return -1;
		}
		out->text = xstrdup(n ? "yes" : "no");
		break;
	case CONFIG_ENUM:
		for (i = 0; p->values[i]; i++)
			if (mem_eq_icase(v, len, p->values[i]))
				break;
		if (!p->values[i]) {
			buf_addf(why, "\"%s\" is not one of: ", q);
			configdoc_words(why, p->values, "");
			return -1;
		}
		out->text = xstrdup(p->values[i]);
		n = (int64_t)i;
		break;
	case CONFIG_INT:
	case CONFIG_DURATION:
	case CONFIG_SIZE:
		if (number_parse(&n, p, v, len, q, why))
			return -1;
		configdoc_number(&text, p->type, n);
		if (buf_error(&text))
			BUG("a number does not fit in %zu bytes", text.max);
		out->text = buf_detach(&text, NULL);
		break;
	default:
		if (text_check(p, v, &len, q, why))
			return -1;
		out->text = xstrndup(v, len);
		break;
	}
	out->num = n;
	return 0;
}

static void value_release(struct config_value *v)
{
	free(v->text);
	v->text = NULL;
	v->num = 0;
	v->line = 0;
	v->bad = 0;
}

static void perr(struct parser *ps, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record one error, prefixed "FILE:LINE: " (no ":LINE" when line is 0). */
static void perr(struct parser *ps, unsigned line, const char *fmt, ...)
{
	struct buf b = BUF_INIT(PB_ERRMSG_MAX);
	va_list ap;

	if (ps->nerr > ERRORS_MAX)
		return;
	if (ps->nerr++ == ERRORS_MAX) {
		strlist_pushf(ps->errs, "%s: too many errors, stopping",
			      ps->name);
		return;
	}
	if (line)
		buf_addf(&b, "%s:%u: ", ps->name, line);
	else
		buf_addf(&b, "%s: ", ps->name);
	va_start(ap, fmt);
	(void)buf_vaddf(&b, fmt, ap);
	va_end(ap);
	/* A message too long for the buffer says that it was cut. */
	if (buf_error(&b))
		strlist_pushf(ps->errs, "%s [...]", b.data);
	else
		strlist_push_owned(ps->errs, buf_detach(&b, NULL));
	buf_release(&b);
}

static void project_free(struct config_project *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < CFG__COUNT; i++)
		value_release(&p->v[i]);
	free(p->name);
	free(p);
}

void config_free(struct config *cfg)
{
	size_t i;

	if (!cfg)
		return;
	for (i = 0; i < CFG__COUNT; i++)
		value_release(&cfg->v[i]);
	for (i = 0; i < cfg->projects_nr; i++)
		project_free(cfg->projects[i]);
	free(cfg->projects);
	free(cfg->file);
	free(cfg);
}

/* Index where name is, or would be inserted; *found says which. */
static size_t project_find(const struct config *cfg, const char *name,
			   int *found)
{
	size_t lo = 0, hi = cfg->projects_nr;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, cfg->projects[mid]->name);

		if (!c) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static struct config_project *project_add(struct config *cfg, const char *name,
					  unsigned line)
{
	struct config_project *p;
	int found;
	size_t i = project_find(cfg, name, &found);

	if (found)
		return cfg->projects[i];
	p = xcalloc(1, sizeof(*p));
	p->cfg = cfg;
	p->name = xstrdup(name);
	p->line = line;
	ALLOC_GROW(cfg->projects, cfg->projects_nr + 1, cfg->projects_alloc);
	memmove(cfg->projects + i + 1, cfg->projects + i,
		(cfg->projects_nr - i) * sizeof(*cfg->projects));
	cfg->projects[i] = p;
	cfg->projects_nr++;
	return p;
}

/* Append "[section]" or [project "name"] (escaped as in the file). */
static void fmt_label(struct buf *out, const char *section, const char *sub)
{
	buf_addf(out, "[%s", section);
	if (sub) {
		buf_adds(out, " \"");
		for (; *sub; sub++) {
			if (*sub == '"' || *sub == '\\')
				buf_addch(out, '\\');
			buf_addch(out, *sub);
		}
		buf_addch(out, '"');
	}
	buf_addch(out, ']');
}

/*
 * Take a double-quoted string at s (just after the opening quote) into
 * out, undoing \" and \\.  Returns an error message or NULL.
 */
static const char *unquote(struct buf *out, struct scan *s)
{
	int c;

	for (;;) {
		c = scan_peek(s);
		if (c < 0)
			return "missing closing quote";
		s->p++;
		if (c == '"')
			return NULL;
		if (c == '\\') {
			c = scan_peek(s);
			if (c != '"' && c != '\\')
				return "only \\\" and \\\\ may follow a "
				       "backslash";
			s->p++;
		}
		buf_addch(out, c);
	}
}

/* After a value or header only blanks and a comment may follow. */
static int at_line_end(struct scan *s)
{
	scan_blanks(s);
	return scan_eof(s) || scan_peek(s) == '#' || scan_peek(s) == ';';
}

static void section_header(struct parser *ps, struct scan *s)
{
	struct buf sub = BUF_INIT(PB_CONFIG_LINE_MAX);
	char q[PB_LOG_QUOTE_MAX];
	const char *name, *msg;
	size_t len, i;
	int has_sub = 0;

	ps->section = -1;
	ps->proj = NULL;
	ps->skip = 1;
	buf_reset(&ps->label);
	scan_blanks(s);
	if (!scan_span(s, is_section_char, &name, &len)) {
		perr(ps, ps->line, "malformed section header");
		goto out;
	}
	scan_blanks(s);
	if (scan_char(s, '"')) {
		has_sub = 1;
		msg = unquote(&sub, s);
		if (!msg && buf_error(&sub))
			msg = "name too long";
		if (msg) {
			perr(ps, ps->line, "malformed section header: %s", msg);
			goto out;
		}
		scan_blanks(s);
	}
	if (!scan_char(s, ']') || !at_line_end(s)) {
		perr(ps, ps->line, "malformed section header");
		goto out;
	}
	quoted(q, sizeof(q), name, len);
	for (i = 0; i < SECTIONS_NR; i++)
		if (strlen(sections[i].name) == len &&
		    !memcmp(sections[i].name, name, len))
			break;
	if (i == SECTIONS_NR) {
		perr(ps, ps->line, "[%s]: unknown section", q);
		goto out;
	}
	if (has_sub) {
		char sq[PB_LOG_QUOTE_MAX];

		/* Label as written, escapes and all, but printable. */
		quoted(sq, sizeof(sq), sub.data, sub.len);
		fmt_label(&ps->label, q, sq);
	}
	if (i != SECTION_PROJECT && has_sub) {
		perr(ps, ps->line, "%s: this section takes no name",
		     ps->label.data);
		goto out;
	}
	if (i == SECTION_PROJECT && !has_sub) {
		perr(ps, ps->line,
		     "[project]: needs a project path: "
		     "[project \"group/name\"]");
		goto out;
	}
	if (i == SECTION_PROJECT && !valid_project(sub.data, sub.len)) {
		perr(ps, ps->line, "%s: not a GitLab project path (group/name)",
		     ps->label.data);
		goto out;
	}
	buf_reset(&ps->label);
	ps->section = (int)i;
	ps->skip = 0;
	if (i == SECTION_PROJECT) {
		ps->proj = project_add(ps->cfg, sub.data, ps->line);
		fmt_label(&ps->label, "project", sub.data);
	} else {
		fmt_label(&ps->label, sections[i].name, NULL);
	}
out:
	buf_release(&sub);
}

/* The parameter key names in the current section, or CFG__COUNT. */
static enum config_id param_lookup(const struct parser *ps, const char *key,
				   size_t len)
{
	size_t i;

	for (i = 0; i < CFG__COUNT; i++) {
		const struct config_param *p = &params[i];

		if (strlen(p->key) != len || memcmp(p->key, key, len))
			continue;
		if (!strcmp(p->section, sections[ps->section].name))
			return (enum config_id)i;
		if (ps->proj && (p->flags & CONFIG_PER_PROJECT))
			return (enum config_id)i;
	}
	return CFG__COUNT;
}

static void assignment(struct parser *ps, struct scan *s)
{
	struct buf val = BUF_INIT(PB_CONFIG_LINE_MAX);
	struct buf why = BUF_INIT(PB_ERRMSG_MAX);
	struct config_value nv = { 0 };
	struct config_value *slot;
	char kq[PB_LOG_QUOTE_MAX];
	const char *key, *v, *c, *msg;
	enum config_id id;
	size_t klen, vlen;

	if (scan_span(s, is_key_char, &key, &klen))
		scan_blanks(s);
	else
		klen = 0;
	if (!klen || !scan_char(s, '=')) {
		if (ps->section < 0 && !ps->skip)
			perr(ps, ps->line,
			     "malformed line: expected "
			     "\"[section]\" or \"key = value\"");
		else if (!ps->skip)
			perr(ps, ps->line,
			     "%s: malformed line: expected "
			     "\"key = value\"",
			     ps->label.data);
		goto out;
	}
	quoted(kq, sizeof(kq), key, klen);
	if (ps->skip)
		goto out;
	if (ps->section < 0) {
		perr(ps, ps->line, "%s: set before any [section]", kq);
		goto out;
	}

	/* The value: "quoted", or the rest of the line up to a comment. */
	scan_blanks(s);
	if (scan_char(s, '"')) {
		msg = unquote(&val, s);
		if (!msg && buf_error(&val))
			msg = "value too long";
		if (!msg && !at_line_end(s))
			msg = "unexpected text after the closing quote";
		if (msg) {
			perr(ps, ps->line, "%s %s: %s", ps->label.data, kq,
			     msg);
			goto out;
		}
	} else {
		v = s->p;
		vlen = scan_left(s);
		/* A comment starts at # or ; after a blank (git-config). */
		for (c = v; c < s->end; c++) {
			if ((*c == '#' || *c == ';') &&
			    (c[-1] == ' ' || c[-1] == '\t')) {
				vlen = (size_t)(c - v);
				break;
			}
		}
		mem_trim(&v, &vlen);
		if (buf_add(&val, v, vlen)) {
			perr(ps, ps->line, "%s %s: value too long",
			     ps->label.data, kq);
			goto out;
		}
	}

	id = param_lookup(ps, key, klen);
	if (id == CFG__COUNT) {
		int elsewhere = 0;
		size_t i;

		for (i = 0; ps->proj && i < CFG__COUNT; i++)
			if (strlen(params[i].key) == klen &&
			    !memcmp(params[i].key, key, klen))
				elsewhere = 1;
		perr(ps, ps->line, "%s %s: %s", ps->label.data, kq,
		     elsewhere ? "cannot be set per project" : "unknown key");
		goto out;
	}
	slot = ps->proj ? &ps->proj->v[id] : &ps->cfg->v[id];
	if (slot->line) {
		perr(ps, ps->line, "%s %s: duplicate key, first set on line %u",
		     ps->label.data, kq, slot->line);
		goto out;
	}
	value_release(slot);
	slot->line = ps->line;
	if (value_parse(&nv, &params[id], val.data, val.len, &why)) {
		/* Remembered, for duplicates and to spare follow-up errors. */
		slot->bad = 1;
		perr(ps, ps->line, "%s %s: %s%s", ps->label.data, kq, why.data,
		     buf_error(&why) ? " [...]" : "");
		goto out;
	}
	slot->text = nv.text;
	slot->num = nv.num;
out:
	buf_release(&why);
	buf_release(&val);
}

static void parse_lines(struct parser *ps, const char *data, size_t len)
{
	struct scan all, s;
	const char *line;
	size_t n;

	scan_init(&all, data, len);
	while (scan_line(&all, &line, &n)) {
		ps->line++;
		if (n > PB_CONFIG_LINE_MAX) {
			perr(ps, ps->line, "line longer than %d bytes",
			     PB_CONFIG_LINE_MAX);
			continue;
		}
		if (memchr(line, '\0', n)) {
			perr(ps, ps->line, "line contains a NUL byte");
			continue;
		}
		mem_trim(&line, &n);
		if (n == 0 || line[0] == '#' || line[0] == ';')
			continue;
		scan_init(&s, line, n);
		if (scan_char(&s, '['))
			section_header(ps, &s);
		else
			assignment(ps, &s);
	}
}

/* "[section] key: " for a global parameter. */
static void perr_param(struct parser *ps, unsigned line, enum config_id id,
		       const char *msg)
{
	perr(ps, line, "[%s] %s: %s", params[id].section, params[id].key, msg);
}

/* Not set, and not set to a bad value either (which was reported). */
static int missing(const struct config_value *v)
{
	return !v->text && !v->bad;
}

static const struct config_value *project_value(const struct config_project *p,
						enum config_id id,
						enum config_type type);

/* The latest line of those that set ids (0: all defaults). */
static unsigned latest_line(const struct config_value *v,
			    const enum config_id *ids, size_t n)
{
	unsigned line = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (v[ids[i]].line > line)
			line = v[ids[i]].line;
	return line;
}

static const char *value_text(const struct config_value *v, enum config_id id)
{
	return v[id].text ? v[id].text : params[id].def;
}

/*
 * Hosts sharing a database: a claim must outlast the longest that one
 * claimed piece of work can take while its host is alive and working,
 * or another host takes it over and both do it.  (One host on SQLite has
 * one applier and one sender: no other claimer.)
 *
 * A reply's claim is renewed before each forge request's every try once
 * a quarter of the lease has gone (apply.c, keep_claim(); the forge
 * client asks before each try, forge_set_guard()).  Between two checks
 * lie at most one try (T: [forge] timeout, the longest of one request)
 * and one wait (M: retry_max, none when [forge] max_retries is 0; the
 * forge client caps every wait, Retry-After included, at retry_max),
 * and a check may find the last
 * renewal a quarter of a lease old: lease x 3/4 > T + M.  A mail's claim
 * covers one submission to the MTA: [smtp] timeout.
 */
static void check_lease(struct parser *ps)
{
	static const enum config_id forge_ids[] = { CFG_STATE_LEASE,
						    CFG_FORGE_TIMEOUT,
						    CFG_FORGE_MAX_RETRIES,
						    CFG_FORGE_RETRY_MAX };
	static const enum config_id smtp_ids[] = { CFG_STATE_LEASE,
						   CFG_SMTP_TIMEOUT };
	const struct config_value *v = ps->cfg->v;
	struct buf worst = BUF_INIT(64);
	int64_t lease = v[CFG_STATE_LEASE].num, step;
	size_t i;

	for (i = 0; i < sizeof(forge_ids) / sizeof(forge_ids[0]); i++)
		if (v[forge_ids[i]].bad)
			goto smtp;
	step = v[CFG_FORGE_TIMEOUT].num;
	if (v[CFG_FORGE_MAX_RETRIES].num > 0)
		step += v[CFG_FORGE_RETRY_MAX].num;
	if (lease * 3 <= step * 4) {
		/* the shortest lease that passes, in whole seconds */
		int64_t need = step * 4 / 3 + 1;

		configdoc_duration(&worst, (need + SEC - 1) / SEC * SEC);
		if (v[CFG_FORGE_MAX_RETRIES].num > 0)
			perr(ps, latest_line(v, forge_ids, 4),
			     "[state] lease: %s is too short for a forge "
			     "request and the wait before its retry, [forge] "
			     "timeout %s + retry_max %s, with the claim renewed "
			     "after a quarter of the lease; set lease to %s or "
			     "more, or lower [forge] timeout or retry_max",
			     value_text(v, CFG_STATE_LEASE),
			     value_text(v, CFG_FORGE_TIMEOUT),
			     value_text(v, CFG_FORGE_RETRY_MAX), worst.data);
		else
			perr(ps, latest_line(v, forge_ids, 4),
			     "[state] lease: %s is too short for a forge "
			     "request, [forge] timeout %s (max_retries 0), with "
			     "the claim renewed after a quarter of the lease; "
			     "set lease to %s or more, or lower [forge] timeout",
			     value_text(v, CFG_STATE_LEASE),
			     value_text(v, CFG_FORGE_TIMEOUT), worst.data);
	}
smtp:
	if (!v[CFG_STATE_LEASE].bad && !v[CFG_SMTP_TIMEOUT].bad &&
	    lease <= v[CFG_SMTP_TIMEOUT].num)
		perr(ps, latest_line(v, smtp_ids, 2),
		     "[state] lease: %s is not longer than [smtp] timeout %s, "
		     "the longest submission of a mail under one claim; set "
		     "lease above %s, or lower [smtp] timeout",
		     value_text(v, CFG_STATE_LEASE),
		     value_text(v, CFG_SMTP_TIMEOUT),
		     value_text(v, CFG_SMTP_TIMEOUT));
	buf_release(&worst);
}

/* Rules that involve more than one parameter. */
static void check_combinations(struct parser *ps)
{
	struct config *cfg = ps->cfg;
	struct config_value *v = cfg->v;
	struct config_value *base = &v[CFG_FORGE_RETRY_BASE];
	struct config_value *max = &v[CFG_FORGE_RETRY_MAX];
	struct config_value *user = &v[CFG_SMTP_USERNAME];
	struct config_value *pass = &v[CFG_SMTP_PASSWORD_FILE];
	size_t i;

	for (i = 0; i < CFG__COUNT; i++)
		if ((params[i].flags & CONFIG_REQUIRED) && missing(&v[i]))
			perr_param(ps, 0, (enum config_id)i,
				   "required, not set");

	if (!base->bad && !max->bad && base->num > max->num) {
		/* Blame the one the file sets (the later one if both). */
		if (base->line > max->line)
			perr(ps, base->line,
			     "[forge] retry_base: %s is above retry_max %s",
			     base->text, max->text);
		else
			perr(ps, max->line,
			     "[forge] retry_max: %s is below retry_base %s",
			     max->text, base->text);
	}
	base = &v[CFG_INBOUND_RETRY_BASE];
	max = &v[CFG_INBOUND_RETRY_MAX];
	if (!base->bad && !max->bad && base->num > max->num) {
		if (base->line > max->line)
			perr(ps, base->line,
			     "[inbound] retry_base: %s is above retry_max %s",
			     base->text, max->text);
		else
			perr(ps, max->line,
			     "[inbound] retry_max: %s is below retry_base %s",
			     max->text, base->text);
	}
	if (user->text && missing(pass))
		perr_param(ps, user->line, CFG_SMTP_USERNAME,
			   "needs password_file");
	if (pass->text && missing(user))
		perr_param(ps, pass->line, CFG_SMTP_PASSWORD_FILE,
			   "needs username");
	if (v[CFG_SMTP_STARTTLS].num && !v[CFG_SMTP_URL].bad &&
	    (!v[CFG_SMTP_URL].text ||
	     strncasecmp(v[CFG_SMTP_URL].text, "smtp://", 7)))
		perr_param(ps, v[CFG_SMTP_STARTTLS].line, CFG_SMTP_STARTTLS,
			   "needs an smtp:// url (smtps:// is TLS from the "
			   "start)");
	if (v[CFG_OUTBOUND_ATTEST].num &&
	    missing(&v[CFG_OUTBOUND_ATTEST_KEY_FILE]))
		perr_param(ps, v[CFG_OUTBOUND_ATTEST].line, CFG_OUTBOUND_ATTEST,
			   "needs attest_key_file");
	/* A key the bridge would not use: say so rather than let it look
	 * used (turning signing on is a step of its own: the public key
	 * is published first). */
	if (!v[CFG_OUTBOUND_ATTEST].num &&
	    !missing(&v[CFG_OUTBOUND_ATTEST_KEY_FILE]) &&
	    !v[CFG_OUTBOUND_ATTEST_KEY_FILE].bad)
		perr_param(ps, v[CFG_OUTBOUND_ATTEST_KEY_FILE].line,
			   CFG_OUTBOUND_ATTEST_KEY_FILE,
			   "is used only with attest = yes");
	if (v[CFG_WEBHOOK_ENABLED].num && missing(&v[CFG_WEBHOOK_SECRET_FILE]))
		perr_param(ps, v[CFG_WEBHOOK_ENABLED].line, CFG_WEBHOOK_ENABLED,
			   "needs secret_file");
	if (!v[CFG_STATE_BACKEND].bad &&
	    v[CFG_STATE_BACKEND].num == CONFIG_BACKEND_POSTGRESQL &&
	    missing(&v[CFG_STATE_CONNINFO_FILE]))
		perr_param(ps, v[CFG_STATE_BACKEND].line, CFG_STATE_BACKEND,
			   "postgresql needs conninfo_file");
	/* A milter connection string on one SQLite host would be ignored:
	 * say so rather than let it look used. */
	if (!v[CFG_STATE_BACKEND].bad &&
	    v[CFG_STATE_BACKEND].num != CONFIG_BACKEND_POSTGRESQL &&
	    !missing(&v[CFG_MILTER_CONNINFO_FILE]) &&
	    !v[CFG_MILTER_CONNINFO_FILE].bad)
		perr_param(ps, v[CFG_MILTER_CONNINFO_FILE].line,
			   CFG_MILTER_CONNINFO_FILE,
			   "needs [state] backend = postgresql");
	if (!v[CFG_STATE_BACKEND].bad &&
	    v[CFG_STATE_BACKEND].num == CONFIG_BACKEND_POSTGRESQL) {
		check_lease(ps);
	}
	if (v[CFG_WEBHOOK_ENABLED].num && v[CFG_METRICS_ENABLED].num &&
	    !v[CFG_WEBHOOK_LISTEN].bad && !v[CFG_METRICS_LISTEN].bad) {
		const char *wl = v[CFG_WEBHOOK_LISTEN].text ?
					 v[CFG_WEBHOOK_LISTEN].text :
					 params[CFG_WEBHOOK_LISTEN].def;
		const char *ml = v[CFG_METRICS_LISTEN].text ?
					 v[CFG_METRICS_LISTEN].text :
					 params[CFG_METRICS_LISTEN].def;
		size_t wlen = strlen(wl);

		/* port 0 picks a free port for each */
		if (!strcmp(wl, ml) &&
		    !(wlen >= 2 && !strcmp(wl + wlen - 2, ":0")))
			perr_param(ps, v[CFG_METRICS_LISTEN].line,
				   CFG_METRICS_LISTEN,
				   "is [webhook] listen too");
	}

	for (i = 0; i < cfg->projects_nr; i++) {
		const struct config_project *p = cfg->projects[i];
		struct buf label = BUF_INIT(CONFIG_PROJECT_MAX + 64);
		const struct config_value *policy;

		if (!project_value(p, CFG_PROJECT_ENABLED, CONFIG_BOOL)->num)
			continue;
		fmt_label(&label, "project", p->name);
		if (missing(project_value(p, CFG_BRIDGE_LIST_ADDRESS,
					  CONFIG_EMAIL)))
			perr(ps, p->line,
			     "%s list_address: not set here nor "
			     "in [bridge]",
			     label.data);
		policy = project_value(p, CFG_INBOUND_APPROVAL_POLICY,
				       CONFIG_ENUM);
		if (!policy->bad && policy->num == CONFIG_APPROVAL_OWNERS &&
		    missing(project_value(p, CFG_INBOUND_OWNERS_FILE,
					  CONFIG_PATH)))
			perr(ps, p->line,
			     "%s owners_file: approval_policy is "
			     "owners but no owners_file is set "
			     "here nor in [inbound]",
			     label.data);
		buf_release(&label);
	}
}

/* Fill every value with the table's default. */
static void set_defaults(struct config *cfg)
{
	struct buf why = BUF_INIT(PB_ERRMSG_MAX);
	size_t i;

	for (i = 0; i < CFG__COUNT; i++) {
		const struct config_param *p = &params[i];

		BUG_ON(!p->section || !p->key || !p->desc);
		if (!p->def[0])
			continue; /* optional or required: unset */
		if (value_parse(&cfg->v[i], p, p->def, strlen(p->def), &why))
			BUG("default of %s.%s: %s", p->section, p->key,
			    why.data);
	}
	buf_release(&why);
}

/* Load data[0..len) named name; data NULL: the file was too large. */
static int load(struct config **out, struct strlist *errs, const char *name,
		const char *data, size_t len)
{
	struct strlist own = STRLIST_INIT;
	struct parser ps = { 0 };
	size_t first = errs ? errs->nr : 0;
	int rc = 0;

	*out = NULL;
	ps.cfg = xcalloc(1, sizeof(*ps.cfg));
	ps.cfg->file = xstrdup(name);
	ps.errs = errs ? errs : &own;
	ps.name = name;
	ps.section = -1;
	buf_init(&ps.label, CONFIG_PROJECT_MAX + 64);
	set_defaults(ps.cfg);

	if (!data || len > PB_CONFIG_FILE_MAX) {
		struct buf m = BUF_INIT(64);

		configdoc_size(&m, PB_CONFIG_FILE_MAX);
		perr(&ps, 0, "larger than the maximum %s", m.data);
		buf_release(&m);
	} else {
		parse_lines(&ps, data, len);
		check_combinations(&ps);
	}

	if (ps.errs->nr > first) {
		size_t more = ps.errs->nr - first - 1;

		if (more)
			err_set(PB_EINVAL, "%s (and %zu more)",
				ps.errs->items[first], more);
		else
			err_set(PB_EINVAL, "%s", ps.errs->items[first]);
		rc = PB_EINVAL;
		config_free(ps.cfg);
		goto out;
	}
	*out = ps.cfg;
out:
	buf_release(&ps.label);
	strlist_release(&own);
	return rc;
}

int config_load_mem(struct config **out, struct strlist *errs, const char *name,
		    const char *data, size_t len)
{
	return load(out, errs, name, data, len);
}

int config_load(struct config **out, struct strlist *errs, const char *path)
{
	struct buf b = BUF_INIT(PB_CONFIG_FILE_MAX);
	int rc;

	*out = NULL;
	/* Refused when others than root and this user may write it: the
	 * file names the forge the token goes to (perm.h). */
	rc = perm_read_trusted(&b, path);
	if (rc == PB_ELIMIT)
		rc = load(out, errs, path, NULL, 0);
	else if (rc && errs)
		strlist_push(errs, err_msg()); /* names the file */
	else if (!rc)
		rc = load(out, errs, path, b.data, b.len);
	buf_release(&b);
	return rc;
}

const char *config_file(const struct config *cfg)
{
	return cfg->file;
}

static const struct config_value *
global(const struct config *cfg, enum config_id id, enum config_type type)
{
	BUG_ON((unsigned)id >= CFG__COUNT);
	if (type == CONFIG_STRING)
		BUG_ON(!is_string_like(params[id].type) &&
		       params[id].type != CONFIG_ENUM);
	else
		BUG_ON(params[id].type != type);
	return &cfg->v[id];
}

static const struct config_value *project_value(const struct config_project *p,
						enum config_id id,
						enum config_type type)
{
	BUG_ON((unsigned)id >= CFG__COUNT);
	BUG_ON(!(params[id].flags & CONFIG_PER_PROJECT) &&
	       !is_project_only(id));
	if (p->v[id].line)
		return &p->v[id];
	return global(p->cfg, id, type);
}

const char *config_str(const struct config *cfg, enum config_id id)
{
	const struct config_value *v = global(cfg, id, CONFIG_STRING);

	return v->text ? v->text : "";
}

int config_bool(const struct config *cfg, enum config_id id)
{
	return (int)global(cfg, id, CONFIG_BOOL)->num;
}

int64_t config_int(const struct config *cfg, enum config_id id)
{
	return global(cfg, id, CONFIG_INT)->num;
}

int64_t config_duration_ms(const struct config *cfg, enum config_id id)
{
	return global(cfg, id, CONFIG_DURATION)->num;
}

size_t config_size(const struct config *cfg, enum config_id id)
{
	return (size_t)global(cfg, id, CONFIG_SIZE)->num;
}

int config_enum(const struct config *cfg, enum config_id id)
{
	return (int)global(cfg, id, CONFIG_ENUM)->num;
}

unsigned config_line(const struct config *cfg, enum config_id id)
{
	BUG_ON((unsigned)id >= CFG__COUNT);
	return cfg->v[id].line;
}

size_t config_project_count(const struct config *cfg)
{
	return cfg->projects_nr;
}

const struct config_project *config_project_at(const struct config *cfg,
					       size_t i)
{
	BUG_ON(i >= cfg->projects_nr);
	return cfg->projects[i];
}

int config_project_get(const struct config_project **out,
		       const struct config *cfg, const char *path)
{
	int found;
	size_t i = project_find(cfg, path, &found);

	*out = NULL;
	if (!found) {
		char q[PB_LOG_QUOTE_MAX];

		return err_set(PB_ENOTFOUND, "no [project \"%s\"] in %s",
			       quoted(q, sizeof(q), path, strlen(path)),
			       cfg->file);
	}
	*out = cfg->projects[i];
	return 0;
}

const char *config_project_name(const struct config_project *p)
{
	return p->name;
}

const char *config_project_str(const struct config_project *p,
			       enum config_id id)
{
	const struct config_value *v = project_value(p, id, CONFIG_STRING);

	return v->text ? v->text : "";
}

int config_project_bool(const struct config_project *p, enum config_id id)
{
	return (int)project_value(p, id, CONFIG_BOOL)->num;
}

int64_t config_project_int(const struct config_project *p, enum config_id id)
{
	return project_value(p, id, CONFIG_INT)->num;
}

int64_t config_project_duration_ms(const struct config_project *p,
				   enum config_id id)
{
	return project_value(p, id, CONFIG_DURATION)->num;
}

size_t config_project_size(const struct config_project *p, enum config_id id)
{
	return (size_t)project_value(p, id, CONFIG_SIZE)->num;
}

int config_project_enum(const struct config_project *p, enum config_id id)
{
	return (int)project_value(p, id, CONFIG_ENUM)->num;
}

int config_takes_submissions(const struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->projects_nr; i++) {
		const struct config_project *p = cfg->projects[i];

		if (config_project_bool(p, CFG_PROJECT_ENABLED) &&
		    config_project_enum(p, CFG_PROJECT_EMAIL_SUBMISSIONS) !=
			    CONFIG_SUBMISSIONS_OFF)
			return 1;
	}
	return 0;
}

/* Append v as the file would spell it: quoted when it has to be. */
static void dump_value(struct buf *out, const char *v)
{
	size_t len = strlen(v);
	int quote = len && (v[0] == ' ' || v[0] == '\t' || v[0] == '"' ||
			    v[len - 1] == ' ' || v[len - 1] == '\t' ||
			    strpbrk(v, "#;\\\""));

	if (!quote) {
		buf_adds(out, v);
		return;
	}
	buf_addch(out, '"');
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			buf_addch(out, '\\');
		buf_addch(out, *v);
	}
	buf_addch(out, '"');
}

static int dump_line(struct buf *out, const char *label, enum config_id id,
		     const struct config_value *v)
{
	buf_addf(out, "%s %s =", label, params[id].key);
	if (params[id].flags & CONFIG_SECRET) {
		buf_adds(out, " (secret)");
	} else if (v->text) {
		buf_addch(out, ' ');
		dump_value(out, v->text);
	}
	return buf_addch(out, '\n');
}

int config_dump(struct buf *out, const struct config *cfg, unsigned flags)
{
	struct buf label = BUF_INIT(CONFIG_PROJECT_MAX + 64);
	int set_only = flags & CONFIG_DUMP_SET_ONLY;
	size_t i, j, n;
	int rc = 0;

	for (i = 0; i < CFG__COUNT; i++) {
		if (is_project_only((enum config_id)i))
			continue;
		if (set_only && !cfg->v[i].line)
			continue;
		buf_reset(&label);
		fmt_label(&label, params[i].section, NULL);
		rc = buf_error(&label);
		if (!rc)
			rc = dump_line(out, label.data, (enum config_id)i,
				       &cfg->v[i]);
		if (rc)
			goto out;
	}
	for (j = 0; j < cfg->projects_nr; j++) {
		const struct config_project *p = cfg->projects[j];

		buf_reset(&label);
		fmt_label(&label, "project", p->name);
		rc = buf_error(&label);
		if (rc)
			goto out;
		for (i = 0, n = 0; i < CFG__COUNT; i++) {
			if (!(params[i].flags & CONFIG_PER_PROJECT) &&
			    !is_project_only((enum config_id)i))
				continue;
			if (set_only && !p->v[i].line)
				continue;
			rc = dump_line(out, label.data, (enum config_id)i,
				       p->v[i].line ? &p->v[i] : &cfg->v[i]);
			if (rc)
				goto out;
			n++;
		}
		/* The section alone matters: it makes the project bridged. */
		if (!n) {
			rc = buf_addf(out, "%s\n", label.data);
			if (rc)
				goto out;
		}
	}
out:
	buf_release(&label);
	if (rc)
		return err_set(rc, "configuration dump larger than %zu bytes",
			       out->max);
	return 0;
}
