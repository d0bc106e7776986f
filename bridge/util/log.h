/*
 * log - the one log facility.
 *
 * In the foreground lines go to stderr; as a daemon to syslog facility
 * "mail" (where Postfix admins look).  Every line carries the calling
 * thread's correlation id (a Postfix queue id, a Message-ID, or
 * "group/project!12 v3"), set with log_ctx_set() and cleared with
 * log_ctx_clear(), or, in a function that may run inside a caller's
 * scope, set with log_ctx_push() and put back with log_ctx_pop().  In
 * the foreground a line reads "IDENT: LEVEL: ID: TEXT" ("IDENT: LEVEL:
 * TEXT" without an id); syslog adds its own ident and gets "ID: TEXT".
 * Never log tokens or whole message bodies.  Every line is passed
 * through printable_line() after formatting, so no argument (a sender's
 * header, a forge answer, an error message quoting either) can end the
 * line, forge another or hide in it: control bytes and broken UTF-8
 * become '?' (Postfix's printable() rule).  printable_copy() is still
 * the way to cut a long untrusted value to a quotable size.
 *
 * With log_set_format(LOG_FORMAT_JSON) ([log] format = json) each line
 * is instead one JSON object, for shops that ship logs to Loki or
 * Elasticsearch: {"time":"2026-12-03T10:00:05.123Z","level":"info",
 * "program":"patchbridge","pid":812,"id":"<correlation id>","msg":"..."}
 * ("id" only when one is set), to the same sink (syslog gets the object
 * as its message).  The text is made printable first, exactly as in the
 * text format, then escaped as RFC 8259 section 7 asks, so an object is
 * always one line of valid JSON whatever the arguments held.
 *
 * A text line written to a file (stderr redirected to a regular file
 * that is not the journal's stream, as the README's ">>FILE 2>&1")
 * begins with its time in RFC 3339, "2026-12-03T10:00:05.123Z ", which
 * syslog, the journal and a terminal do not need.
 *
 * Repeats: a warning or an error (LOG_WARNING and more important) with
 * the same text and id from the same place (format string) as one
 * logged less than PB_LOG_REPEAT_WINDOW seconds ago is left out and
 * counted; the first one after the window is logged with " (N more
 * like it)" appended.  So a fault retried every five seconds writes a
 * line every five minutes, not sixty (Postfix does the like for its
 * repeated warnings).  A line from another place or with another text
 * is logged as it comes.
 *
 * Thread safety: log_msg() may be called from any thread; log_open(),
 * log_set_level() and log_set_format() are called once from main()
 * before threads start.
 */
#ifndef PB_UTIL_LOG_H
#define PB_UTIL_LOG_H

#include "util/limits.h"

#include <stdint.h>
#include <syslog.h>

/* Seconds in which a repeated warning or error is logged once. */
#define PB_LOG_REPEAT_WINDOW 300

enum log_sink {
	LOG_SINK_STDERR,
	LOG_SINK_SYSLOG,
};

enum log_format {
	LOG_FORMAT_TEXT,
	LOG_FORMAT_JSON,
};

void log_open(const char *ident, enum log_sink sink);
void log_close(void);

/* Lines above this syslog priority (e.g. LOG_DEBUG) are dropped. */
void log_set_level(int priority);
int log_get_level(void);

/* The window for repeats in seconds (0: log every repeat) and the clock
 * it is measured with (NULL: CLOCK_MONOTONIC); forgets the repeats seen.
 * For tests. */
void log_set_repeat_window(int64_t seconds, int64_t (*clock)(void));

/* Parse "debug", "info", "notice", "warning", "err"; -1 when unknown. */
int log_level_from_name(const char *name);

/* The line format (set once, like the level); "text" or "json" parsed
 * by log_format_from_name(), -1 when unknown. */
void log_set_format(enum log_format format);
int log_format_from_name(const char *name);

void log_msg(int priority, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERR, __VA_ARGS__)

/* The calling thread's correlation id (copied, truncated to a safe
 * printable form).  NULL or "" clears it. */
void log_ctx_set(const char *ctx);
void log_ctx_clear(void);
const char *log_ctx_get(void);

/* The id of an enclosing scope, kept by log_ctx_push(). */
struct log_ctx_saved {
	char id[PB_LOG_CTX_MAX];
};

/*
 * Keep the calling thread's id in *saved and set ctx (as log_ctx_set(),
 * NULL or "" clears it); log_ctx_pop() puts the kept one back.  Pairs
 * nest: a callee's push/pop leaves its caller's id in place.
 */
void log_ctx_push(struct log_ctx_saved *saved, const char *ctx);
void log_ctx_pushf(struct log_ctx_saved *saved, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void log_ctx_pop(const struct log_ctx_saved *saved);

#endif
