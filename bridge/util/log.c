#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Set once in main() before threads start; read-only afterwards. */
static enum log_sink log_sink = LOG_SINK_STDERR;
static const char *log_ident = "patchbridge";
static int log_level = LOG_INFO;
static enum log_format log_format = LOG_FORMAT_TEXT;
/* Text lines to stderr begin with a time stamp: stderr is a file. */
static int log_stamp;

/*
 * Repeats of a warning or an error: the same text from the same place
 * (its format string) is logged once, then at most once a window, with
 * the count of the repeats left out in between.  A small table, looked
 * up by hash; a line whose slot another holds is logged as it comes.
 */
#define REPEAT_SLOTS 64
struct repeat {
	const char *fmt; /* the place; NULL: free slot */
	uint64_t hash; /* of the line and its id */
	int64_t logged; /* when it was last written (monotonic seconds) */
	unsigned long more; /* left out since then */
};
static struct repeat repeats[REPEAT_SLOTS];
static int64_t repeat_window = PB_LOG_REPEAT_WINDOW;
static pthread_mutex_t repeat_lock = PTHREAD_MUTEX_INITIALIZER;

static int64_t monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

static int64_t (*repeat_clock)(void) = monotonic_seconds;

static _Thread_local char log_ctx[PB_LOG_CTX_MAX];

static const char *const level_names[] = {
	[LOG_EMERG] = "emerg",	   [LOG_ALERT] = "alert",
	[LOG_CRIT] = "crit",	   [LOG_ERR] = "error",
	[LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info",	   [LOG_DEBUG] = "debug",
};

/*
 * Whether stderr is a log file of our own (the README's ">>FILE 2>&1"),
 * which has no time of its own: not a terminal, not a pipe to a
 * supervisor that stamps lines itself (runit's svlogd), not the
 * journal's stream (systemd names it in $JOURNAL_STREAM as
 * "DEVICE:INODE", systemd.exec(5)).
 */
static int stderr_is_file(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (fstat(2, &st) || !S_ISREG(st.st_mode))
		return 0;
	if (js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
	    dev == (unsigned long long)st.st_dev &&
	    ino == (unsigned long long)st.st_ino)
		return 0;
	return 1;
}

void log_open(const char *ident, enum log_sink sink)
{
	log_ident = ident;
	log_sink = sink;
	log_stamp = sink == LOG_SINK_STDERR && stderr_is_file();
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

void log_set_repeat_window(int64_t seconds, int64_t (*clock)(void))
{
	pthread_mutex_lock(&repeat_lock);
	repeat_window = seconds;
	repeat_clock = clock ? clock : monotonic_seconds;
	memset(repeats, 0, sizeof(repeats));
	pthread_mutex_unlock(&repeat_lock);
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

/* The time now as RFC 3339 (UTC, milliseconds) and a space. */
static void stamp(char *out, size_t cap)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

/* FNV-1a over s, continuing from h. */
static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/*
 * Whether the line (from the place fmt) is to be written: 1 with *more
 * set to the repeats left out before it, 0 when it is a repeat inside
 * the window.
 */
static int repeat_check(const char *fmt, const char *line, unsigned long *more)
{
	struct repeat *r;
	uint64_t h;
	int64_t now;
	int ok = 1;

	*more = 0;
	h = fnv1a(fnv1a(0xcbf29ce484222325ULL, log_ctx), line);
	pthread_mutex_lock(&repeat_lock);
	if (repeat_window <= 0) {
		pthread_mutex_unlock(&repeat_lock);
		return 1;
	}
	now = repeat_clock();
	r = &repeats[(h ^ (uint64_t)(uintptr_t)fmt) % REPEAT_SLOTS];
	if (r->fmt == fmt && r->hash == h) {
		if (now - r->logged < repeat_window) {
			r->more++;
			ok = 0;
		} else {
			*more = r->more;
			r->more = 0;
			r->logged = now;
		}
	} else if (!r->fmt || now - r->logged >= repeat_window) {
		/* free, or the one there is quiet: take the slot (its
		 * count of repeats, if any, is lost) */
		r->fmt = fmt;
		r->hash = h;
		r->logged = now;
		r->more = 0;
	}
	pthread_mutex_unlock(&repeat_lock);
	return ok;
}

void log_msg(int priority, const char *fmt, ...)
{
	char line[PB_LOGLINE_MAX], stamp_buf[64] = "";
	unsigned long more = 0;
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
	if (priority <= LOG_WARNING && !repeat_check(fmt, line, &more))
		return;
	if (more) {
		size_t len = strlen(line);

		snprintf(line + len, sizeof(line) - len, " (%lu more like it)",
			 more);
	}

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
	if (log_stamp)
		stamp(stamp_buf, sizeof(stamp_buf));
	if (log_ctx[0])
		fprintf(stderr, "%s%s: %s: %s: %s\n", stamp_buf, log_ident,
			level_names[priority & 7], log_ctx, line);
	else
		fprintf(stderr, "%s%s: %s: %s\n", stamp_buf, log_ident,
			level_names[priority & 7], line);
}
