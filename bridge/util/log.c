#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Set once in main() before threads start; read-only afterwards. */
static enum log_sink log_sink = LOG_SINK_STDERR;
static const char *log_ident = "patchbridge";
static int log_level = LOG_INFO;
static enum log_format log_format = LOG_FORMAT_TEXT;

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

void log_set_format(enum log_format format)
{
	log_format = format;
}

int log_format_from_name(const char *name)
{
	if (!strcmp(name, "text"))
		return LOG_FORMAT_TEXT;
	if (!strcmp(name, "json"))
		return LOG_FORMAT_JSON;
	return -1;
}

/* Append s to out[*pos..cap) as the inside of a JSON string (RFC 8259
 * section 7); what does not fit is cut at a character boundary. */
static void json_add(char *out, size_t *pos, size_t cap, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	char esc[7];
	size_t n, i, cont;

	for (; *p; p++) {
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			n = 2;
		} else if (*p < 0x20 || *p == 0x7f) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[*p >> 4];
			esc[5] = hex[*p & 15];
			n = 6;
		} else {
			/* a whole UTF-8 sequence (printable_line() left
			 * only well-formed ones), or stop before it */
			for (cont = 0; (p[cont + 1] & 0xc0) == 0x80 &&
				       cont < 3 && *p >= 0xc0;
			     cont++)
				;
			if (*pos + cont + 1 >= cap)
				return;
			for (i = 0; i <= cont; i++)
				out[(*pos)++] = (char)p[i];
			p += cont;
			continue;
		}
		if (*pos + n >= cap)
			return;
		memcpy(out + *pos, esc, n);
		*pos += n;
	}
}

/* Append raw text; cut when it does not fit. */
static void raw_add(char *out, size_t *pos, size_t cap, const char *s)
{
	size_t n = strlen(s);

	if (*pos + n >= cap)
		return;
	memcpy(out + *pos, s, n);
	*pos += n;
}

/*
 * One log line as a JSON object into out (cap bytes, terminated).  The
 * free text goes in last and is cut first: the object stays whole.
 */
static void json_line(char *out, size_t cap, int priority, const char *line)
{
	struct timespec ts;
	struct tm tm;
	char head[160];
	size_t pos = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(head, sizeof(head),
		 "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\","
		 "\"level\":\"%s\",\"program\":\"",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
		 level_names[priority & 7]);
	raw_add(out, &pos, cap, head);
	json_add(out, &pos, cap / 4, log_ident);
	snprintf(head, sizeof(head), "\",\"pid\":%ld", (long)getpid());
	raw_add(out, &pos, cap, head);
	if (log_ctx[0]) {
		raw_add(out, &pos, cap, ",\"id\":\"");
		json_add(out, &pos, cap / 2, log_ctx);
		raw_add(out, &pos, cap, "\"");
	}
	raw_add(out, &pos, cap, ",\"msg\":\"");
	json_add(out, &pos, cap - 3, line);
	raw_add(out, &pos, cap, "\"}");
	out[pos] = '\0';
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

	if (log_format == LOG_FORMAT_JSON) {
		char obj[2 * PB_LOGLINE_MAX + 2 * PB_LOG_CTX_MAX + 256];

		json_line(obj, sizeof(obj), priority, line);
		if (log_sink == LOG_SINK_SYSLOG)
			syslog(priority, "%s", obj);
		else
			fprintf(stderr, "%s\n", obj);
		return;
	}
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
