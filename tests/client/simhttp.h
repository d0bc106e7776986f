/*
 * simhttp - what the client tests share to reach the GitLab simulator:
 * its URL from PB_FORGESIM_URL (run-with-sim.sh exports it) and an HTTP
 * client for its control API (/_sim/).
 *
 * simhttp_open() prints why and returns non-zero when the URL is not
 * set or the client cannot be made; the caller frees the client with
 * http_client_free().  simhttp_main() is a test program's main(): open,
 * run the group of n tests, free.
 */
#ifndef PB_TESTS_SIMHTTP_H
#define PB_TESTS_SIMHTTP_H

#include "forge/http.h"

#include <stddef.h>

int simhttp_open(const char **url, struct http_client **http);

struct CMUnitTest;
int simhttp_main(const char *name, const struct CMUnitTest *tests, size_t n,
		 const char **url, struct http_client **http);

#endif
