#include "cmocka_all.h"
#include "rawhttp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

int64_t raw_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int raw_dial(unsigned port)
{
	struct sockaddr_in sa;
	struct timeval tv = { 5, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

void raw_send(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

void raw_read(struct raw_reply *out, int fd)
{
	size_t len = 0;
	ssize_t n;

	memset(out, 0, sizeof(*out));
	for (;;) {
		n = recv(fd, out->text + len, sizeof(out->text) - 1 - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			out->closed = 1;
			break;
		}
		if (n < 0) {
			/* ECONNRESET also means it closed. */
			out->closed = errno == ECONNRESET;
			break;
		}
		len += (size_t)n;
		if (len == sizeof(out->text) - 1)
			break;
	}
	out->text[len] = '\0';
	if (!strncmp(out->text, "HTTP/1.", 7) && len >= 12)
		out->status = atoi(out->text + 9);
}

int raw_closed_by(int fd, int64_t deadline_ms)
{
	char scratch[512];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	for (;;) {
		int64_t left = deadline_ms - raw_now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return 0;
		n = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return 1;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return 1;
	}
}
