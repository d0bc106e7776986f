#include "forge/httpd.h"

#include "util/err.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <microhttpd.h>

#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* libmicrohttpd's per-connection pool: request line and headers. */
#define HTTPD_CONN_MEMORY (32 * 1024)
#define HTTPD_LISTEN_BACKLOG 64
#define HTTPD_PEER_MAX 64

/*
 * The connection guard of both listeners: slowloris.  libmicrohttpd's
 * idle timeout restarts at every byte, and a full server refuses the
 * newest connection, so a local user with a few dozen clients that send
 * nothing, or one byte a second, could hold every slot for ever and keep
 * /healthz (and GitLab's deliveries) out.  The guard keeps a list of the
 * server's connections, oldest first, and
 *
 *   - gives each one header_ms to deliver a whole request head, from its
 *     connect or from the end of its previous request, however it
 *     trickles: a reaper thread shuts down one that is late;
 *   - when more than limit are open, shuts down the oldest one that is
 *     not being answered: a new client always gets a slot, and to keep
 *     it from the health check an attacker would have to open limit
 *     connections between the check's connect and its request.
 *
 * A connection is cut with shutdown(2) on a descriptor of our own (a
 * dup() of its socket, taken when it starts): libmicrohttpd sees the end
 * of the stream and closes it in its own thread, and the socket cannot
 * be another one's by then, since our descriptor keeps it until the
 * connection's close notice.  No per-address limit: on loopback, and
 * behind a TLS terminator, the health check, GitLab and an attacker all
 * come from one address.
 */
struct guard_conn {
	struct guard_conn *prev, *next; /* the list, oldest first */
	int fd; /* our dup() of the socket; -1: none */
	int busy; /* its request head is in: being answered */
	int cut; /* shut down already */
	int64_t since_ms; /* connected, or its last request done */
};

struct guard {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t reaper;
	int started, stop;
	struct guard_conn list; /* sentinel */
	unsigned count, limit;
	int64_t header_ms;
	const char *name; /* the server's, in the log */
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void guard_unlink(struct guard_conn *c)
{
	c->prev->next = c->next;
	c->next->prev = c->prev;
}

static void guard_append(struct guard *g, struct guard_conn *c)
{
	c->next = &g->list;
	c->prev = g->list.prev;
	g->list.prev->next = c;
	g->list.prev = c;
}

/* Shut c down (the lock held); libmicrohttpd closes it. */
static void guard_cut(struct guard_conn *c)
{
	if (c->cut || c->fd < 0)
		return;
	c->cut = 1;
	shutdown(c->fd, SHUT_RDWR);
}

static void *guard_reap(void *arg)
{
	struct guard *g = arg;
	struct guard_conn *c;
	struct timespec until;
	int64_t now, tick = g->header_ms / 4;
	unsigned late;

	if (tick < 50)
		tick = 50;
	if (tick > 500)
		tick = 500;
	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		now = mono_ms();
		late = 0;
		for (c = g->list.next; c != &g->list; c = c->next)
			if (!c->busy && !c->cut &&
			    now - c->since_ms >= g->header_ms) {
				guard_cut(c);
				late++;
			}
		if (late)
			log_info("%s: closed %u connection%s that sent no "
				 "whole request in %lld ms",
				 g->name, late, late == 1 ? "" : "s",
				 (long long)g->header_ms);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)(tick / 1000);
		until.tv_nsec += (long)(tick % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&g->wake, &g->lock, &until);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

static int guard_start(struct guard *g, unsigned limit, unsigned header_s,
		       const char *name)
{
	pthread_condattr_t ca;

	memset(g, 0, sizeof(*g));
	g->list.next = g->list.prev = &g->list;
	g->limit = limit;
	g->header_ms = (int64_t)header_s * 1000;
	g->name = name;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&g->reaper, NULL, guard_reap, g))
		return err_set(PB_ERROR, "%s: cannot start a thread", name);
	g->started = 1;
	return 0;
}

/* After the server stopped: the reaper and what is left of the list. */
static void guard_stop(struct guard *g)
{
	struct guard_conn *c;

	if (!g->list.next)
		return; /* never started */
	if (g->started) {
		pthread_mutex_lock(&g->lock);
		g->stop = 1;
		pthread_cond_signal(&g->wake);
		pthread_mutex_unlock(&g->lock);
		pthread_join(g->reaper, NULL);
	}
	while ((c = g->list.next) != &g->list) {
		guard_unlink(c);
		if (c->fd >= 0)
			close(c->fd);
		free(c);
	}
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	memset(g, 0, sizeof(*g));
}

/* MHD_OPTION_NOTIFY_CONNECTION: a connection starts or is closed. */
static void guard_notify(void *cls, struct MHD_Connection *conn,
			 void **socket_context,
			 enum MHD_ConnectionNotificationCode toe)
{
	struct guard *g = cls;
	struct guard_conn *c = *socket_context, *old;
	const union MHD_ConnectionInfo *ci;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!c)
			return;
		pthread_mutex_lock(&g->lock);
		guard_unlink(c);
		g->count--;
		pthread_mutex_unlock(&g->lock);
		if (c->fd >= 0)
			close(c->fd);
		free(c);
		*socket_context = NULL;
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->fd = -1;
	c->since_ms = mono_ms();
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		c->fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0);
	if (c->fd < 0 && ci) {
		/* Out of descriptors: this one cannot be watched, so it is
		 * not kept (we are in its thread, its socket is valid). */
		shutdown(ci->connect_fd, SHUT_RDWR);
		c->cut = 1;
	}
	*socket_context = c;
	pthread_mutex_lock(&g->lock);
	guard_append(g, c);
	g->count++;
	if (g->count > g->limit) {
		/* Full: the oldest that is not being answered makes room,
		 * else the oldest of all. */
		for (old = g->list.next; old != c; old = old->next)
			if (!old->busy && !old->cut)
				break;
		if (old == c)
			for (old = g->list.next; old != c && old->cut;
			     old = old->next)
				;
		if (old != c)
			guard_cut(old);
	}
	pthread_mutex_unlock(&g->lock);
}

/* A request's head is in (busy), or its answer is done (idle again: the
 * connection's next request head must come within header_ms). */
static void guard_busy(struct guard *g, struct MHD_Connection *conn, int busy)
{
	const union MHD_ConnectionInfo *ci;
	struct guard_conn *c;

	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (!ci || !ci->socket_context)
		return;
	c = ci->socket_context;
	pthread_mutex_lock(&g->lock);
	c->busy = busy;
	if (!busy) {
		c->since_ms = mono_ms();
		/* the newest idle connection now: last in line to go */
		guard_unlink(c);
		guard_append(g, c);
	}
	pthread_mutex_unlock(&g->lock);
}

struct httpd {
	struct MHD_Daemon *daemon;
	struct guard guard; /* slowloris */
	int listen_fd; /* ours until MHD starts with it, or after quiesce */
	unsigned port;
	const char *name;
	int (*on_request)(struct httpd_req *req, enum httpd_call call,
			  const char *data, size_t len, void *arg);
	void (*on_done)(struct httpd_req *req, enum httpd_end how, void *arg);
	void *arg;
};

/* One request, from its head to its completion. */
struct httpd_req {
	struct MHD_Connection *conn;
	const char *url, *method; /* libmicrohttpd's, for the request */
	void *data; /* the caller's */
	int answered;
};

/* cls: the server's name for the log ("webhook", "status server"). */
__attribute__((format(printf, 2, 0))) static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512], clean[512];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		n--;
	log_notice("%s: libmicrohttpd: %s", (const char *)cls,
		   printable_copy(clean, sizeof(clean), line, n));
}

static void peer_name(char *dst, size_t size, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci;
	char host[HTTPD_PEER_MAX];
	socklen_t len;

	snprintf(dst, size, "?");
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr)
		return;
	len = ci->client_addr->sa_family == AF_INET6 ?
		      sizeof(struct sockaddr_in6) :
		      sizeof(struct sockaddr_in);
	if (getnameinfo(ci->client_addr, len, host, sizeof(host), NULL, 0,
			NI_NUMERICHOST) == 0)
		snprintf(dst, size, "%s", host);
}

const char *httpd_header(struct httpd_req *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *httpd_url(const struct httpd_req *req)
{
	return req->url;
}

const char *httpd_method(const struct httpd_req *req)
{
	return req->method;
}

void httpd_req_set_data(struct httpd_req *req, void *data)
{
	req->data = data;
}

void *httpd_req_data(const struct httpd_req *req)
{
	return req->data;
}

void httpd_peer(struct httpd_req *req, char *dst, size_t size)
{
	peer_name(dst, size, req->conn);
}

int httpd_answer(struct httpd_req *req, unsigned status, const char *type,
		 const char *body, size_t len, const char *allow,
		 unsigned flags)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	req->answered = 1;
	resp = MHD_create_response_from_buffer(len, (void *)body,
					       flags & HTTPD_STATIC ?
						       MHD_RESPMEM_PERSISTENT :
						       MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return -1;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (flags & HTTPD_NO_STORE)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
					"no-store");
	if (allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
	if (flags & HTTPD_CLOSE)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION,
					"close");
	ret = MHD_queue_response(req->conn, status, resp);
	MHD_destroy_response(resp);
	return ret == MHD_YES ? 0 : -1;
}

/*
 * libmicrohttpd's access handler: the first call (no request yet) has
 * the head, later ones the body in pieces, the last one none.  Once
 * answered, the rest of the body is dropped here.
 */
static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn,
				 const char *url, const char *method,
				 const char *version, const char *upload,
				 size_t *upload_size, void **con_cls)
{
	struct httpd *h = cls;
	struct httpd_req *req = *con_cls;
	enum httpd_call call;
	size_t len;

	(void)version;
	if (!req) {
		req = xcalloc(1, sizeof(*req));
		req->conn = conn;
		req->url = url;
		req->method = method;
		*con_cls = req;
		guard_busy(&h->guard, conn, 1);
		call = HTTPD_HEAD;
		len = 0;
	} else {
		len = *upload_size;
		*upload_size = 0;
		if (req->answered)
			return MHD_YES;
		call = len ? HTTPD_DATA : HTTPD_END;
	}
	req->conn = conn;
	return h->on_request(req, call, len ? upload : NULL, len, h->arg) ?
		       MHD_NO :
		       MHD_YES;
}

/* The request is over: the connection is idle again. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct httpd *h = cls;
	struct httpd_req *req = *con_cls;

	guard_busy(&h->guard, conn, 0);
	if (!req)
		return;
	if (h->on_done)
		h->on_done(req,
			   toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ?
				   HTTPD_END_TIMEOUT :
			   toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ?
				   HTTPD_END_SHUTDOWN :
				   HTTPD_END_CLOSED,
			   h->arg);
	free(req);
	*con_cls = NULL;
}

/*
 * Setup and teardown.
 */

/* Split "host:port" / "[v6]:port" into host and port (0 allowed). */
static int split_listen(char **host, char **port, const char *addr)
{
	const char *colon, *h = addr, *hend;
	uint64_t n;
	size_t len;

	*host = *port = NULL;
	colon = strrchr(addr, ':');
	if (!colon)
		goto bad;
	hend = colon;
	if (h[0] == '[') {
		if (colon == h || colon[-1] != ']')
			goto bad;
		h++;
		hend--;
	}
	len = strlen(colon + 1);
	if (hend <= h || !mem_to_u64(colon + 1, len, 65535, &n))
		goto bad;
	*host = xstrndup(h, (size_t)(hend - h));
	*port = xstrdup(colon + 1);
	return 0;
bad:
	return err_set(PB_EINVAL, "listen address \"%s\": expected host:port",
		       addr);
}

/* A listening, non-blocking socket; the port bound in *port. */
static int listen_on(int *fd_out, unsigned *port, const char *addr)
{
	struct addrinfo hints, *res = NULL, *ai;
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	char *host, *service;
	int rc, fd = -1, one = 1, saved = 0;

	*fd_out = -1;
	rc = split_listen(&host, &service, addr);
	if (rc)
		return rc;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc) {
		rc = err_set(rc == EAI_AGAIN ? PB_ETEMP : PB_EINVAL,
			     "listen address \"%s\": %s", addr,
			     gai_strerror(rc));
		goto out;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family,
			    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		/* A restarted daemon must not wait out TIME_WAIT. */
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, HTTPD_LISTEN_BACKLOG) == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		errno = saved;
		rc = err_set_errno(err_from_errno(saved), "cannot listen on %s",
				   addr);
		goto out;
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &sslen) != 0) {
		rc = err_set_errno(PB_ERROR, "getsockname");
		close(fd);
		goto out;
	}
	*port = ss.ss_family == AF_INET6 ?
			ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) :
			ntohs(((struct sockaddr_in *)&ss)->sin_port);
	*fd_out = fd;
	rc = 0;
out:
	if (res)
		freeaddrinfo(res);
	free(host);
	free(service);
	return rc;
}

/*
 * The server on listen_fd: internal threads, each an epoll loop over its
 * share of the connections (so a slow client holds no thread); ITC so
 * the daemon can be quiesced for a clean stop.  The guard watches conns
 * connections (above); libmicrohttpd's own limit is twice that, room
 * for those the guard shut down until their threads close them.  NULL
 * when libmicrohttpd will not start.
 */
static struct MHD_Daemon *mhd_start(struct httpd *h, unsigned conns,
				    unsigned threads, unsigned timeout_s)
{
	if (conns < threads)
		threads = conns;
	if (guard_start(&h->guard, conns, timeout_s, h->name))
		return NULL;
	return MHD_start_daemon(
		MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG,
		0, NULL, NULL, on_access, h, MHD_OPTION_EXTERNAL_LOGGER,
		(MHD_LogCallback)mhd_log, (void *)h->name,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)h->listen_fd,
		MHD_OPTION_THREAD_POOL_SIZE, threads,
		MHD_OPTION_CONNECTION_LIMIT, 2 * conns,
		MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTPD_CONN_MEMORY,
		MHD_OPTION_NOTIFY_CONNECTION, guard_notify, &h->guard,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
}

int httpd_new(struct httpd **out, const struct httpd_opts *opts)
{
	struct httpd *h;
	int rc;

	*out = NULL;
	h = xcalloc(1, sizeof(*h));
	h->listen_fd = -1;
	h->name = opts->name;
	h->on_request = opts->on_request;
	h->on_done = opts->on_done;
	h->arg = opts->arg;
	rc = listen_on(&h->listen_fd, &h->port, opts->listen);
	if (rc)
		goto out;
	h->daemon = mhd_start(h, opts->max_connections, opts->threads,
			      opts->timeout_s);
	if (!h->daemon) {
		rc = err_set(PB_ERROR, "%s: libmicrohttpd did not start on %s",
			     h->name, opts->listen);
		goto out;
	}
	h->listen_fd = -1; /* MHD's now */
	*out = h;
	h = NULL;
out:
	httpd_free(h);
	return rc;
}

void httpd_quiesce(struct httpd *h)
{
	MHD_socket fd;

	if (!h->daemon || h->listen_fd >= 0)
		return;
	/* No new connections; the listening socket comes back to us. */
	fd = MHD_quiesce_daemon(h->daemon);
	if (fd != MHD_INVALID_SOCKET)
		h->listen_fd = fd;
}

void httpd_free(struct httpd *h)
{
	if (!h)
		return;
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	guard_stop(&h->guard);
	free(h);
}

unsigned httpd_port(const struct httpd *h)
{
	return h->port;
}
