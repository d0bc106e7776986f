#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Set once in main() before threads start; read-only afterwards. */
static enum log_sink log_sink = LOG_SINK_STDERR;
static const char *log_ident = "patchbridge";
static int log_level = LOG_INFO;

static _Thread_local char log_ctx[PB_LOG_CTX_MAX];

static const char *const level_names[] = {
	[LOG_EMERG] = "emerg",	   [LOG_ALERT] = "alert",
	[LOG_CRIT] = "crit",	   [LOG_ERR] = "error",
	[LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info",	   [LOG_DEBUG] = "debug",
};

void log_open(const char *ident, enum log_sink sink)
{
	log_ident = ident;
	log_sink = sink;
	if (sink == LOG_SINK_SYSLOG)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_MAIL);
}

void log_close(void)
{
	if (log_sink == LOG_SINK_SYSLOG)
		closelog();
	log_sink = LOG_SINK_STDERR;
}

void log_set_level(int priority)
{
	log_level = priority;
}

int log_get_level(void)
{
	return log_level;
}

int log_level_from_name(const char *name)
{
	size_t i;

	if (!strcmp(name, "err"))
		return LOG_ERR;
	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (level_names[i] && !strcmp(level_names[i], name))
			return (int)i;
	return -1;
}

void log_ctx_set(const char *ctx)
{
	if (!ctx) {
		log_ctx[0] = '\0';
		return;
	}
	printable_copy(log_ctx, sizeof(log_ctx), ctx, strlen(ctx));
}

void log_ctx_clear(void)
{
	log_ctx[0] = '\0';
}

const char *log_ctx_get(void)
{
	return log_ctx;
}

void log_ctx_push(struct log_ctx_saved *saved, const char *ctx)
{
	memcpy(saved->id, log_ctx, sizeof(saved->id));
	log_ctx_set(ctx);
}

void log_ctx_pushf(struct log_ctx_saved *saved, const char *fmt, ...)
{
	char ctx[PB_LOG_CTX_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	log_ctx_push(saved, ctx);
}

void log_ctx_pop(const struct log_ctx_saved *saved)
{
	/* Already printable and terminated: it came from log_ctx. */
	memcpy(log_ctx, saved->id, sizeof(log_ctx));
}

void log_msg(int priority, const char *fmt, ...)
{
	char line[PB_LOGLINE_MAX];
	va_list ap;

	if (priority > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Whatever the arguments held (a sender's Message-ID, a forge
	 * answer, an error message quoting either), the line stays one
	 * line: no caller has to remember printable_copy(). */
	printable_line(line, strlen(line));

	if (log_sink == LOG_SINK_SYSLOG) {
		if (log_ctx[0])
			syslog(priority, "%s: %s", log_ctx, line);
		else
			syslog(priority, "%s", line);
		return;
	}
	/* One fprintf per line so concurrent threads do not interleave. */
	if (log_ctx[0])
		fprintf(stderr, "%s: %s: %s: %s\n", log_ident,
			level_names[priority & 7], log_ctx, line);
	else
		fprintf(stderr, "%s: %s: %s\n", log_ident,
			level_names[priority & 7], line);
}
