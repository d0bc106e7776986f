#include "cmocka_all.h"
#include "simhttp.h"

#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int simhttp_open(const char **url, struct http_client **http)
{
	struct http_opts ho;

	*url = getenv("PB_FORGESIM_URL");
	if (!*url || !**url) {
		fprintf(stderr, "PB_FORGESIM_URL is not set; run me through "
				"tests/forgesim/run-with-sim.sh\n");
		return 1;
	}
	memset(&ho, 0, sizeof(ho));
	ho.timeout_ms = 30000;
	if (http_client_new(http, &ho) != 0) {
		fprintf(stderr, "http_client_new: %s\n", err_msg());
		return 1;
	}
	return 0;
}

int simhttp_main(const char *name, const struct CMUnitTest *tests, size_t n,
		 const char **url, struct http_client **http)
{
	int rc;

	if (simhttp_open(url, http))
		return 1;
	rc = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	http_client_free(*http);
	return rc;
}
