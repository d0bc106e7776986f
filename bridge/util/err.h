/*
 * err - error codes and a thread-local error message.
 *
 * Every fallible function returns an int: 0 on success or one of the few
 * negative codes below.  The function that detects a failure records a
 * one-line message with err_set(); callers propagate the code unchanged
 * and may add context with err_prefix().  The message lives in thread-local
 * storage, so it is valid until the next err_set() on the same thread.
 * err_msg() may be an argument of the setters themselves
 * (err_set(code, "journaling %s: %s", name, err_msg())): each formats the
 * whole new message before it replaces the old one.
 *
 * Bugs are not errors: a broken invariant calls BUG(), which logs and
 * aborts.  Untrusted input must never reach BUG().
 */
#ifndef PB_UTIL_ERR_H
#define PB_UTIL_ERR_H

enum pb_err {
	PB_OK = 0,
	PB_ERROR = -1, /* generic failure */
	PB_ENOTFOUND = -2, /* the thing asked for does not exist */
	PB_EINVAL = -3, /* bad input: a caller or a peer sent garbage */
	PB_ETEMP = -4, /* temporary: retry later may succeed */
	PB_EPERM = -5, /* not allowed */
	PB_ELIMIT = -6, /* a configured limit was hit */
	PB_EEXISTS = -7, /* already exists / already done */
};

/* Record the message for the current thread; returns code. */
int err_set(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Like err_set(), appending ": strerror(errno)" (errno read on entry). */
int err_set_errno(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prepend "context: " to the current message; returns code unchanged. */
int err_prefix(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The current thread's last message; never NULL (may be ""). */
const char *err_msg(void);

/* Forget the current message. */
void err_clear(void);

/* A short name for a code, e.g. "not found". */
const char *err_name(int code);

/* True for codes a caller may retry. */
static inline int err_is_temporary(int code)
{
	return code == PB_ETEMP;
}

/* Abort on a broken invariant (a bug, never bad input). */
#define BUG(...) pb_bug(__FILE__, __LINE__, __VA_ARGS__)
#define BUG_ON(cond)                                             \
	do {                                                     \
		if (cond)                                        \
			pb_bug(__FILE__, __LINE__, "%s", #cond); \
	} while (0)

_Noreturn void pb_bug(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
