#include "cmocka_all.h"
#include "metricval.h"

#include "core/metrics.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

long metric(const char *series)
{
	struct buf out = BUF_INIT(1 << 20);
	size_t n = strlen(series);
	const char *at;
	long v = -1;

	assert_int_equal(metrics_render(&out, METRIC_DAEMON), 0);
	/* The sample line that starts with the series: the # HELP and
	 * # TYPE lines of a family without labels hold its name followed
	 * by a space too, and are not its value. */
	for (at = out.data; at && *at; at = strchr(at, '\n')) {
		if (*at == '\n')
			at++;
		if (!strncmp(at, series, n) && at[n] == ' ') {
			v = strtol(at + n + 1, NULL, 10);
			break;
		}
	}
	buf_release(&out);
	return v;
}
