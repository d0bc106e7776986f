/*
 * simhttp - what the client tests share to reach the GitLab simulator:
 * its URL from PB_FORGESIM_URL (run-with-sim.sh exports it) and an HTTP
 * client for its control API (/_sim/).
 *
 * simhttp_open() prints why and returns non-zero when the URL is not
 * set or the client cannot be made; the caller frees the client with
 * http_client_free().
 */
#ifndef PB_TESTS_SIMHTTP_H
#define PB_TESTS_SIMHTTP_H

#include "forge/http.h"

int simhttp_open(const char **url, struct http_client **http);

#endif
