/*
 * metricval - read one series back from the daemon's metrics exposition
 * (core/metrics.h), for the tests that check what was counted.
 */
#ifndef PB_TESTS_METRICVAL_H
#define PB_TESTS_METRICVAL_H

/* The value of series ("name{label=\"v\"}" as rendered, or the bare name
 * of a family without labels) in the daemon's exposition: the sample line
 * that starts with it; -1 when absent.  Fails the test when it cannot
 * render. */
long metric(const char *series);

#endif
