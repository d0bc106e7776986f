/*
 * limits - every fixed cap in patchbridge, in one place.
 *
 * Each buffer names its cap here, so a reader can see at a glance how much
 * memory any input can make us hold.  Caps that an operator may want to
 * change are configuration parameters (bridge/core/config.c) whose
 * defaults and bounds come from the constants below.
 */
#ifndef PB_UTIL_LIMITS_H
#define PB_UTIL_LIMITS_H

/* Error and log messages. */
#define PB_ERRMSG_MAX 1024
#define PB_LOGLINE_MAX 2048
#define PB_LOG_CTX_MAX 256
/* Untrusted text quoted in one log line (after printable()). */
#define PB_LOG_QUOTE_MAX 200

/* Files we read whole: config, owners.yaml, templates. */
#define PB_CONFIG_FILE_MAX (1024 * 1024)
#define PB_CONFIG_LINE_MAX 4096
#define PB_TEMPLATE_MAX (256 * 1024)

/* Mail. */
#define PB_MAIL_MAX_DEFAULT (10 * 1024 * 1024)
#define PB_MAIL_MAX_MIN (64 * 1024)
#define PB_MAIL_MAX_MAX (100 * 1024 * 1024)
/* The milter's memory for mail, all connections together ([milter]
 * memory_limit); past it a mail being received goes to a file. */
#define PB_MILTER_MEMORY_MIN (64 * 1024)
#define PB_MILTER_MEMORY_MAX (64LL * 1024 * 1024 * 1024)
#define PB_HEADER_COUNT_MAX 500
#define PB_HEADER_VALUE_MAX (64 * 1024)
#define PB_MIME_DEPTH_MAX 8
#define PB_MIME_PARTS_MAX 100
/* Header fields of all MIME part headers together, and the bytes of
 * all the boundaries they declare (mail.c's pre-scan). */
#define PB_MIME_FIELDS_MAX 2000
#define PB_MIME_BOUNDARIES_MAX (64 * 1024)
/* Decoded text of the part read as the reply: a whole large reply. */
#define PB_TEXT_PART_MAX (8 * 1024 * 1024)
#define PB_MSGID_MAX 998 /* RFC 5322 2.1.1 line length */
#define PB_ADDR_MAX 320 /* RFC 3696 errata: 64 + 1 + 255 */
/* [milter] trusted_authres_fields: the verifiers' fields on top. */
#define PB_AUTHRES_FIELDS_MAX 8
#define PB_AUTHRES_FIELDS_DEFAULT 2

/* Forge HTTP. */
#define PB_HTTP_BODY_MAX_DEFAULT (16 * 1024 * 1024)
#define PB_HTTP_BODY_MAX_MIN (64 * 1024)
#define PB_HTTP_BODY_MAX_MAX (256 * 1024 * 1024)
#define PB_HTTP_HEADER_MAX (16 * 1024)
#define PB_HTTP_URL_MAX 8192
#define PB_NOTE_BODY_MAX 1000000 /* GitLab's own limit on a note body */
#define PB_PAGES_MAX 1000 /* pages followed in one listing */
/* Once a daemon is asked to stop: how long a forge request may still run,
 * and the longest nap between looks at the stop flag in a retry wait. */
#define PB_HTTP_STOP_GRACE_MS 5000
#define PB_FORGE_WAIT_SLICE_MS 100

/* Series. */
#define PB_SERIES_MAX_DEFAULT 100

/* JSON nesting accepted from the forge. */
#define PB_JSON_DEPTH_MAX 64

#endif
