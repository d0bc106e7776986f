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
	[HEALTH_STORE] = "store",   [HEALTH_SPOOL] = "spool",
	[HEALTH_FORGE] = "forge",   [HEALTH_SMTP] = "smtp",
	[HEALTH_MILTER] = "milter",
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

/* "2026-12-07T01:00:00Z", or "never" for 0. */
static const char *when(char *out, size_t size, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!t || !gmtime_r(&tt, &tm) ||
	    !strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, size, "never");
	return out;
}

int health_milter_blind(char *out, size_t size, int64_t now, int64_t sent,
			int64_t last_seen)
{
	char s[32], l[32];

	if (!sent) {
		snprintf(out, size,
			 "no mail of the bridge's reached the MTA yet to tell "
			 "by (the milter last saw one %s)",
			 when(l, sizeof(l), last_seen));
		return 0;
	}
	if (last_seen >= sent - HEALTH_MILTER_SLACK_S) {
		snprintf(out, size,
			 "the milter sees the list's mail (it last saw one "
			 "%s; the bridge's last mail reached the MTA %s)",
			 when(l, sizeof(l), last_seen),
			 when(s, sizeof(s), sent));
		return 0;
	}
	if (now - sent < HEALTH_MILTER_BLIND_S) {
		snprintf(out, size,
			 "the bridge's last mail reached the MTA %s; the "
			 "milter has not shown it yet (it last saw one %s)",
			 when(s, sizeof(s), sent),
			 when(l, sizeof(l), last_seen));
		return 0;
	}
	snprintf(out, size,
		 "the milter is not seeing the list's mail: the bridge's last "
		 "mail reached the MTA at %s, %lld min ago, and the milter has "
		 "seen none since (its last: %s); is it running (systemctl "
		 "status patchbridge-milter), and does Postfix call it for "
		 "every mail (postconf smtpd_milters non_smtpd_milters; "
		 "patchbridge check-config)?",
		 when(s, sizeof(s), sent), (long long)((now - sent) / 60),
		 when(l, sizeof(l), last_seen));
	return 1;
}

int64_t health_milter_last_seen(const char *text, size_t len)
{
	const char *name = metrics_def(MET_MILTER_LAST_SEEN)->name;
	size_t nlen = strlen(name), i = 0;
	int64_t v = 0;

	while (i < len) {
		const char *line = text + i;
		const char *nl = memchr(line, '\n', len - i);
		size_t llen = nl ? (size_t)(nl - line) : len - i;

		if (llen > nlen + 1 && !memcmp(line, name, nlen) &&
		    line[nlen] == ' ') {
			size_t j;

			v = 0;
			for (j = nlen + 1; j < llen && line[j] >= '0' &&
					   line[j] <= '9' && v < INT64_MAX / 10;
			     j++)
				v = v * 10 + (line[j] - '0');
			return v;
		}
		i += llen + 1;
	}
	return 0;
}
