/*
 * rawhttp - a raw HTTP/1.1 client for the tests of the daemon's HTTP
 * servers (test_httpd, test_webhook): exact bytes over a TCP socket to
 * 127.0.0.1, so a test can send a partial request, trickle it, or stay
 * idle.  Failures to connect or send fail the test (cmocka).
 */
#ifndef PB_TEST_RAWHTTP_H
#define PB_TEST_RAWHTTP_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
int64_t raw_now_ms(void);

/* A connected socket to 127.0.0.1:port, with a 5 s receive timeout. */
int raw_dial(unsigned port);

/* Send all of p. */
void raw_send(int fd, const char *p, size_t len);

struct raw_reply {
	int status; /* 0: the connection closed without an answer */
	char text[8192]; /* everything received, NUL-terminated */
	int closed; /* the server closed the connection */
};

/* Read until the server closes (the request said Connection: close) or
 * the 5 s receive timeout passes. */
void raw_read(struct raw_reply *out, int fd);

/* The server closed fd (EOF or reset) before deadline_ms (raw_now_ms());
 * what it sent meanwhile is read and dropped. */
int raw_closed_by(int fd, int64_t deadline_ms);

#endif
