#include "core/health.h"

#include "core/metrics.h"
#include "util/err.h"
#include "util/printable.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const names[HEALTH__COUNT] = {
	[HEALTH_STORE] = "store",
	[HEALTH_SPOOL] = "spool",
	[HEALTH_FORGE] = "forge",
	[HEALTH_SMTP] = "smtp",
};

static struct {
	pthread_mutex_t lock;
	struct health_state s[HEALTH__COUNT];
} table = { PTHREAD_MUTEX_INITIALIZER, { { 0, 0, 0, "" } } };

const char *health_check_name(enum health_check c)
{
	if ((unsigned)c >= HEALTH__COUNT)
		BUG("health check %d", (int)c);
	return names[c];
}

void health_report(enum health_check c, int ok, const char *fmt, ...)
{
	char reason[PB_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	/* it goes into an HTTP body and a log line: one printable line */
	printable_line(reason, strlen(reason));
	pthread_mutex_lock(&table.lock);
	table.s[c].known = 1;
	table.s[c].ok = !!ok;
	table.s[c].when = (int64_t)time(NULL);
	memcpy(table.s[c].reason, reason, sizeof(reason));
	pthread_mutex_unlock(&table.lock);
	metrics_set1(MET_READY, ok ? 1 : 0, health_check_name(c));
}

void health_get(struct health_state *out, enum health_check c)
{
	if ((unsigned)c >= HEALTH__COUNT)
		BUG("health check %d", (int)c);
	pthread_mutex_lock(&table.lock);
	*out = table.s[c];
	pthread_mutex_unlock(&table.lock);
}

void health_reset(void)
{
	size_t i;

	pthread_mutex_lock(&table.lock);
	memset(table.s, 0, sizeof(table.s));
	pthread_mutex_unlock(&table.lock);
	for (i = 0; i < HEALTH__COUNT; i++)
		metrics_set1(MET_READY, 0, names[i]);
}
