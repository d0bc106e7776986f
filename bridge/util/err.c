#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char err_buf[PB_ERRMSG_MAX];

/*
 * Every setter formats into a buffer of its own and only then replaces
 * err_buf, so a caller may pass err_msg() among the arguments
 * (err_set(code, "journaling %s: %s", name, err_msg())): the cause it
 * quotes is read whole before anything is written.  Formatting straight
 * into err_buf would read the buffer while overwriting it, and print the
 * new text, or what an earlier message (another mail's) left there,
 * instead of the cause.
 */
static __attribute__((format(printf, 1, 0))) void
err_vset(const char *fmt, va_list ap, const char *tail)
{
	char msg[PB_ERRMSG_MAX];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	if (tail) /* the old message (err_prefix) or strerror() */
		snprintf(msg + n, sizeof(msg) - n, ": %s", tail);
	memcpy(err_buf, msg, sizeof(err_buf));
}

int err_set(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(fmt, ap, NULL);
	va_end(ap);
	return code;
}

int err_set_errno(int code, const char *fmt, ...)
{
	int saved = errno;
	char why[256];
	va_list ap;

	/* strerror() may share a static buffer; copy it before formatting. */
	snprintf(why, sizeof(why), "%s", strerror(saved));
	va_start(ap, fmt);
	err_vset(fmt, ap, why);
	va_end(ap);
	errno = saved;
	return code;
}

int err_prefix(int code, const char *fmt, ...)
{
	char old[PB_ERRMSG_MAX];
	va_list ap;

	memcpy(old, err_buf, sizeof(old));
	va_start(ap, fmt);
	err_vset(fmt, ap, old);
	va_end(ap);
	return code;
}

const char *err_msg(void)
{
	return err_buf;
}

void err_clear(void)
{
	err_buf[0] = '\0';
}

const char *err_name(int code)
{
	switch (code) {
	case PB_OK:
		return "ok";
	case PB_ENOTFOUND:
		return "not found";
	case PB_EINVAL:
		return "invalid";
	case PB_ETEMP:
		return "temporary failure";
	case PB_EPERM:
		return "permission denied";
	case PB_ELIMIT:
		return "limit exceeded";
	case PB_EEXISTS:
		return "already exists";
	default:
		return "error";
	}
}

void pb_bug(const char *file, int line, const char *fmt, ...)
{
	char msg[PB_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_msg(LOG_CRIT, "BUG at %s:%d: %s", file, line, msg);
	abort();
}
