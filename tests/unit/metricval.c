#include "cmocka_all.h"
#include "metricval.h"

#include "core/metrics.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

long metric(const char *series)
{
	struct buf out = BUF_INIT(1 << 20);
	const char *at;
	long v = -1;

	assert_int_equal(metrics_render(&out, METRIC_DAEMON), 0);
	at = out.data ? strstr(out.data, series) : NULL;
	if (at && at[strlen(series)] == ' ')
		v = strtol(at + strlen(series) + 1, NULL, 10);
	buf_release(&out);
	return v;
}
