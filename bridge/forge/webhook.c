#include "forge/webhook.h"

#include "forge/json.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/hashmap.h"
#include "util/limits.h"
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
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* libmicrohttpd's per-connection pool: request line and headers. */
#define WH_CONN_MEMORY (32 * 1024)
#define WH_LISTEN_BACKLOG 64
#define WH_PEER_MAX 64
#define WH_DEDUPE_MAX (1024 * 1024)

/*
 * Delivery keys seen recently: a fixed table of entries on a recency list
 * (newest first) and in a hash map sized for all of them.  Only requests
 * that carried the right token reach it, so a plain FNV-1a hash is
 * enough.
 */
#define LRU_NIL UINT32_MAX
/* "i:" (Idempotency-Key) or "e:" (event UUID), the key, NUL */
#define LRU_KEY_MAX (WEBHOOK_KEY_MAX + 3)

struct lru_entry {
	struct hashmap_entry ent;
	char key[LRU_KEY_MAX];
	uint32_t newer, older; /* recency list */
};

struct lru {
	struct lru_entry *e;
	struct hashmap map;
	uint32_t cap, used;
	uint32_t newest, oldest;
};

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

struct webhook {
	struct MHD_Daemon *daemon;
	struct guard guard; /* slowloris */
	int listen_fd; /* ours until MHD starts with it */
	unsigned port;
	char *path;
	size_t max_request;
	unsigned timeout_s;
	/* The secret, zero-padded, so every compare reads the same bytes. */
	unsigned char secret[WEBHOOK_SECRET_MAX];
	size_t secret_len;
	int (*on_event)(const struct webhook_event *ev, void *arg);
	void *arg;

	/* Everything below is guarded by lock. */
	pthread_mutex_t lock;
	pthread_cond_t drained; /* signalled when inflight drops to 0 */
	int stopping;
	struct lru seen;
	struct webhook_stats stats;
};

/* One request, from its headers to its completion. */
struct wh_req {
	struct buf body;
	char peer[WH_PEER_MAX];
	char event[WEBHOOK_NAME_MAX + 1]; /* X-Gitlab-Event, printable */
	char key[LRU_KEY_MAX]; /* "i:…"/"e:…", "" when none */
	int answered; /* a response was queued */
	/* An authenticated body over the cap: read and thrown away, then
	 * answered 200 (see on_oversized()). */
	int discarding;
	uint64_t discarded;
};

/*
 * Constant-time comparison.
 */

/* a and b are WEBHOOK_SECRET_MAX bytes, zero-padded past their lengths. */
static int ct_equal(const unsigned char *a, size_t alen, const unsigned char *b,
		    size_t blen)
{
	volatile unsigned char d = 0;
	size_t i;

	for (i = 0; i < WEBHOOK_SECRET_MAX; i++)
		d |= a[i] ^ b[i];
	/* The lengths are compared without a branch on the bytes above;
	 * anything past the padded size never matches. */
	return (d == 0) & (alen == blen) & (alen <= WEBHOOK_SECRET_MAX);
}

/* Copy s into a padded buffer; *len is WEBHOOK_SECRET_MAX + 1 (never a
 * match) when s is longer than the buffer. */
static void ct_pad(unsigned char *dst, size_t *len, const char *s)
{
	size_t n = strnlen(s, WEBHOOK_SECRET_MAX + 1);

	memset(dst, 0, WEBHOOK_SECRET_MAX);
	memcpy(dst, s, n > WEBHOOK_SECRET_MAX ? WEBHOOK_SECRET_MAX : n);
	*len = n;
}

int webhook_secret_equal(const char *a, const char *b)
{
	unsigned char pa[WEBHOOK_SECRET_MAX], pb[WEBHOOK_SECRET_MAX];
	size_t alen, blen;
	int eq;

	ct_pad(pa, &alen, a);
	ct_pad(pb, &blen, b);
	eq = ct_equal(pa, alen, pb, blen);
	explicit_bzero(pa, sizeof(pa));
	explicit_bzero(pb, sizeof(pb));
	return eq;
}

/*
 * The de-duplication table.
 */

static void lru_init(struct lru *l, size_t cap)
{
	l->e = xcalloc(cap, sizeof(*l->e));
	/* sized for every entry: it never grows while serving */
	hashmap_init(&l->map, cap);
	l->cap = (uint32_t)cap;
	l->used = 0;
	l->newest = l->oldest = LRU_NIL;
}

static void lru_release(struct lru *l)
{
	free(l->e);
	hashmap_release(&l->map);
	memset(l, 0, sizeof(*l));
}

static void lru_unlink(struct lru *l, uint32_t i)
{
	struct lru_entry *e = &l->e[i];

	if (e->newer != LRU_NIL)
		l->e[e->newer].older = e->older;
	else
		l->newest = e->older;
	if (e->older != LRU_NIL)
		l->e[e->older].newer = e->newer;
	else
		l->oldest = e->newer;
}

static void lru_push_newest(struct lru *l, uint32_t i)
{
	struct lru_entry *e = &l->e[i];

	e->newer = LRU_NIL;
	e->older = l->newest;
	if (l->newest != LRU_NIL)
		l->e[l->newest].newer = i;
	l->newest = i;
	if (l->oldest == LRU_NIL)
		l->oldest = i;
}

static uint32_t lru_find(struct lru *l, const char *key)
{
	struct hashmap_entry *h;

	for (h = hashmap_first(&l->map, hash_fnv1a_str(key)); h;
	     h = hashmap_next(h)) {
		struct lru_entry *e = CONTAINER_OF(h, struct lru_entry, ent);

		if (!strcmp(e->key, key))
			return (uint32_t)(e - l->e);
	}
	return LRU_NIL;
}

static void lru_touch(struct lru *l, uint32_t i)
{
	lru_unlink(l, i);
	lru_push_newest(l, i);
}

static void lru_add(struct lru *l, const char *key)
{
	struct lru_entry *e;
	uint32_t i;

	if (l->used < l->cap) {
		i = l->used++;
	} else {
		/* Evict the oldest: off the recency list and the map. */
		i = l->oldest;
		lru_unlink(l, i);
		hashmap_remove(&l->map, &l->e[i].ent);
	}
	e = &l->e[i];
	snprintf(e->key, sizeof(e->key), "%s", key);
	hashmap_add(&l->map, &e->ent, hash_fnv1a_str(e->key));
	lru_push_newest(l, i);
}

/*
 * Payload parsing.
 */

static const char *const action_names[] = {
	[WEBHOOK_ACTION_OTHER] = "other",
	[WEBHOOK_ACTION_OPEN] = "open",
	[WEBHOOK_ACTION_CLOSE] = "close",
	[WEBHOOK_ACTION_REOPEN] = "reopen",
	[WEBHOOK_ACTION_UPDATE] = "update",
	[WEBHOOK_ACTION_MERGE] = "merge",
	[WEBHOOK_ACTION_APPROVED] = "approved",
	[WEBHOOK_ACTION_UNAPPROVED] = "unapproved",
	[WEBHOOK_ACTION_APPROVAL] = "approval",
	[WEBHOOK_ACTION_UNAPPROVAL] = "unapproval",
	[WEBHOOK_ACTION_CREATE] = "create",
};

#define NR_ACTIONS (sizeof(action_names) / sizeof(action_names[0]))

const char *webhook_action_name(enum webhook_action a)
{
	if ((unsigned)a >= NR_ACTIONS)
		return "other";
	return action_names[a];
}

static enum webhook_action action_from_name(const char *s)
{
	size_t i;

	for (i = 1; i < NR_ACTIONS; i++)
		if (!strcmp(s, action_names[i]))
			return (enum webhook_action)i;
	return WEBHOOK_ACTION_OTHER;
}

static enum webhook_kind kind_from_header(const char *event)
{
	if (!event)
		return WEBHOOK_IGNORED;
	if (!strcmp(event, "Merge Request Hook"))
		return WEBHOOK_MR;
	if (!strcmp(event, "Note Hook"))
		return WEBHOOK_NOTE;
	return WEBHOOK_IGNORED;
}

/*
 * Copy the string member key of obj into dst (size bytes).  Absent or
 * null: "" (an error when required).  Too long, holding anything but
 * printable ASCII, or not a string: PB_EINVAL.
 */
static int copy_str(char *dst, size_t size, const struct json_value *obj,
		    const char *key, int required)
{
	const struct json_value *v = json_member(obj, key);
	const char *s;
	size_t len;
	int rc;

	dst[0] = '\0';
	if (!v) {
		if (required)
			return err_set(PB_EINVAL, "field '%s' missing", key);
		return 0;
	}
	rc = json_value_strref(&s, &len, v, key);
	if (rc)
		return rc;
	if (len >= size)
		return err_set(PB_EINVAL, "field '%s': longer than %zu bytes",
			       key, size - 1);
	if (!printable_check(s, len))
		return err_set(PB_EINVAL, "field '%s': not printable ASCII",
			       key);
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

static int is_sha(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return s[n] == '\0' && (n == 40 || n == 64);
}

/* project.path_with_namespace and project.id */
static int parse_project(struct webhook_event *out,
			 const struct json_value *root)
{
	const struct json_value *project;
	int rc;

	rc = json_get_obj(&project, root, "project");
	if (rc)
		return rc;
	rc = copy_str(out->project, sizeof(out->project), project,
		      "path_with_namespace", 1);
	if (!rc && !out->project[0])
		rc = err_set(PB_EINVAL, "field 'path_with_namespace': empty");
	if (!rc)
		rc = json_get_int(&out->project_id, project, "id");
	if (rc)
		return err_prefix(rc, "project");
	return 0;
}

/* The MR's iid (required) and last_commit.id (optional), from mr. */
static int parse_mr_common(struct webhook_event *out,
			   const struct json_value *mr, const char *what)
{
	const struct json_value *lc;
	int rc;

	rc = json_get_int(&out->iid, mr, "iid");
	if (!rc && out->iid < 1)
		rc = err_set(PB_EINVAL, "field 'iid': %lld is not positive",
			     (long long)out->iid);
	if (!rc)
		rc = json_get_obj_opt(&lc, mr, "last_commit");
	if (!rc && lc) {
		rc = copy_str(out->last_commit, sizeof(out->last_commit), lc,
			      "id", 0);
		if (!rc && out->last_commit[0] && !is_sha(out->last_commit))
			rc = err_set(PB_EINVAL, "field 'last_commit.id': "
						"not a commit SHA");
	}
	if (rc)
		return err_prefix(rc, "%s", what);
	return 0;
}

static int parse_mr(struct webhook_event *out, const struct json_value *oa)
{
	const struct json_value *oldrev;
	const char *s;
	size_t len;
	int rc;

	rc = parse_mr_common(out, oa, "object_attributes");
	if (rc)
		return rc;
	rc = copy_str(out->action_name, sizeof(out->action_name), oa, "action",
		      0);
	/* oldrev comes only when code changed (a push): the cue for a new
	 * revision.  It must be a string when it is there. */
	oldrev = json_member(oa, "oldrev");
	if (!rc && oldrev) {
		rc = json_value_strref(&s, &len, oldrev, "oldrev");
		out->code_changed = 1;
	}
	if (rc)
		return err_prefix(rc, "object_attributes");
	out->action = action_from_name(out->action_name);
	return 0;
}

/* 1: a note on a merge request, 0: on something else, or an error. */
static int parse_note(struct webhook_event *out, const struct json_value *root,
		      const struct json_value *oa)
{
	const struct json_value *mr;
	int rc;

	rc = json_get_int(&out->note_id, oa, "id");
	if (!rc)
		rc = copy_str(out->noteable_type, sizeof(out->noteable_type),
			      oa, "noteable_type", 1);
	if (rc)
		return err_prefix(rc, "object_attributes");
	/* Issues, commits and snippets have notes too; not ours. */
	if (strcmp(out->noteable_type, "MergeRequest"))
		return 0;
	rc = copy_str(out->action_name, sizeof(out->action_name), oa, "action",
		      0);
	if (!rc)
		rc = copy_str(out->discussion_id, sizeof(out->discussion_id),
			      oa, "discussion_id", 0);
	if (!rc)
		rc = copy_str(out->note_type, sizeof(out->note_type), oa,
			      "type", 0);
	if (!rc)
		rc = json_get_bool_opt(&out->system_note, oa, "system");
	if (rc)
		return err_prefix(rc, "object_attributes");
	out->action = action_from_name(out->action_name);
	rc = json_get_obj(&mr, root, "merge_request");
	if (!rc)
		rc = parse_mr_common(out, mr, "merge_request");
	return rc ? rc : 1;
}

int webhook_parse(struct webhook_event *out, const char *event_header,
		  const char *body, size_t len)
{
	enum webhook_kind kind = kind_from_header(event_header);
	const struct json_value *root, *oa;
	struct json_doc *doc = NULL;
	char object_kind[WEBHOOK_NAME_MAX + 1];
	const char *want;
	int rc;

	memset(out, 0, sizeof(*out));
	if (kind == WEBHOOK_IGNORED)
		return 0;
	rc = json_parse(&doc, body, len, PB_JSON_DEPTH_MAX);
	if (rc)
		goto out;
	root = json_doc_root(doc);
	rc = json_expect(root, JSON_OBJECT, "payload");
	if (rc)
		goto out;
	rc = copy_str(object_kind, sizeof(object_kind), root, "object_kind", 1);
	if (rc)
		goto out;
	want = kind == WEBHOOK_MR ? "merge_request" : "note";
	if (strcmp(object_kind, want)) {
		rc = err_set(PB_EINVAL,
			     "object_kind \"%s\" does not match \"%s\"",
			     object_kind, event_header);
		goto out;
	}
	rc = parse_project(out, root);
	if (rc)
		goto out;
	rc = json_get_obj(&oa, root, "object_attributes");
	if (rc)
		goto out;
	if (kind == WEBHOOK_MR) {
		rc = parse_mr(out, oa);
	} else {
		rc = parse_note(out, root, oa);
		if (rc == 0)
			kind = WEBHOOK_IGNORED;
		if (rc > 0)
			rc = 0;
	}
	if (!rc)
		out->kind = kind;
out:
	json_doc_free(doc);
	if (rc) {
		memset(out, 0, sizeof(*out));
		return err_prefix(rc, "%s payload", event_header);
	}
	return 0;
}

/*
 * The server.
 */

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
	char host[WH_PEER_MAX];
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

static const char *header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

/*
 * Queue a short text/plain answer.  close: the connection ends after it
 * (libmicrohttpd honours our "Connection: close").
 */
static enum MHD_Result answer(struct wh_req *r, struct MHD_Connection *conn,
			      unsigned status, const char *text, int close)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	r->answered = 1;
	/* PERSISTENT: the text is a literal, never copied or freed. */
	resp = MHD_create_response_from_buffer(strlen(text), (void *)text,
					       MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "POST");
	if (close)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION,
					"close");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void count(struct webhook *wh, uint64_t *counter)
{
	pthread_mutex_lock(&wh->lock);
	wh->stats.requests++;
	if (counter)
		(*counter)++;
	pthread_mutex_unlock(&wh->lock);
}

/* A refusal before the body is read: log, count, answer, close. */
static enum MHD_Result refuse(struct webhook *wh, struct wh_req *r,
			      struct MHD_Connection *conn, unsigned status,
			      const char *text, const char *why)
{
	int prio = status == MHD_HTTP_UNAUTHORIZED ? LOG_WARNING : LOG_NOTICE;

	log_msg(prio, "webhook: %s: %u, %s", r->peer, status, why);
	count(wh, status == MHD_HTTP_UNAUTHORIZED ? &wh->stats.unauthorized :
		  status == MHD_HTTP_SERVICE_UNAVAILABLE ? NULL :
							   &wh->stats.rejected);
	return answer(r, conn, status, text, 1);
}

/* "application/json", optionally with parameters (charset=utf-8). */
static int is_json_type(const char *v)
{
	const char *semi;
	size_t len;

	if (!v)
		return 0;
	semi = strchr(v, ';');
	len = semi ? (size_t)(semi - v) : strlen(v);
	mem_trim(&v, &len);
	return mem_eq_icase(v, len, "application/json");
}

/* The delivery key into r->key ("i:"/"e:" prefixed); 0 or -1 if bad. */
static int take_key(struct wh_req *r, struct MHD_Connection *conn)
{
	const char *v = header(conn, "Idempotency-Key");
	const char *prefix = "i:";
	size_t len;

	if (!v || !*v) {
		v = header(conn, "X-Gitlab-Event-UUID");
		prefix = "e:";
	}
	if (!v || !*v)
		return 0;
	len = strlen(v);
	if (len > WEBHOOK_KEY_MAX || !printable_check(v, len))
		return -1;
	snprintf(r->key, sizeof(r->key), "%s%s", prefix, v);
	return 0;
}

/* The first call: everything that can be decided from the headers. */
static enum MHD_Result on_headers(struct webhook *wh, struct wh_req *r,
				  struct MHD_Connection *conn, const char *url,
				  const char *method)
{
	unsigned char given[WEBHOOK_SECRET_MAX];
	char shown[PB_LOG_QUOTE_MAX], shown2[PB_LOG_QUOTE_MAX];
	const char *token, *cl, *event;
	size_t given_len;
	uint64_t length;
	int stopping, ok;

	pthread_mutex_lock(&wh->lock);
	stopping = wh->stopping;
	pthread_mutex_unlock(&wh->lock);
	if (stopping)
		return refuse(wh, r, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			      "shutting down\n", "shutting down");
	if (strcmp(url, wh->path)) {
		log_debug("webhook: %s: 404 for %s %s", r->peer,
			  printable_copy(shown, sizeof(shown), method,
					 strlen(method)),
			  printable_copy(shown2, sizeof(shown2), url,
					 strlen(url)));
		count(wh, &wh->stats.rejected);
		return answer(r, conn, MHD_HTTP_NOT_FOUND, "not found\n", 0);
	}
	if (strcmp(method, MHD_HTTP_METHOD_POST)) {
		log_debug("webhook: %s: 405 for %s", r->peer,
			  printable_copy(shown, sizeof(shown), method,
					 strlen(method)));
		count(wh, &wh->stats.rejected);
		return answer(r, conn, MHD_HTTP_METHOD_NOT_ALLOWED,
			      "method not allowed\n", 0);
	}

	/*
	 * The token before anything else about the request: a peer without
	 * it learns nothing and gets nothing read.  Both sides are padded to
	 * WEBHOOK_SECRET_MAX, so neither a differing byte nor a differing
	 * length ends the comparison early.
	 */
	token = header(conn, "X-Gitlab-Token");
	ct_pad(given, &given_len, token ? token : "");
	ok = ct_equal(wh->secret, wh->secret_len, given, given_len);
	explicit_bzero(given, sizeof(given));
	if (!token)
		return refuse(wh, r, conn, MHD_HTTP_UNAUTHORIZED,
			      "unauthorized\n", "no X-Gitlab-Token");
	if (!ok)
		return refuse(wh, r, conn, MHD_HTTP_UNAUTHORIZED,
			      "unauthorized\n", "wrong X-Gitlab-Token");

	cl = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl) {
		if (!mem_to_u64(cl, strlen(cl), UINT64_MAX, &length))
			return refuse(wh, r, conn, MHD_HTTP_BAD_REQUEST,
				      "bad Content-Length\n",
				      "bad Content-Length");
		if (length > WEBHOOK_DISCARD_MAX) {
			char why[96];

			snprintf(why, sizeof(why),
				 "body of %llu bytes, more than GitLab ever "
				 "sends",
				 (unsigned long long)length);
			return refuse(wh, r, conn, MHD_HTTP_CONTENT_TOO_LARGE,
				      "payload too large\n", why);
		}
		if (length > wh->max_request) {
			event = header(conn, "X-Gitlab-Event");
			printable_copy(r->event, sizeof(r->event),
				       event ? event : "?",
				       strlen(event ? event : "?"));
			r->discarding = 1;
			return MHD_YES;
		}
		if (buf_grow(&r->body, (size_t)length))
			BUG("body cap checked above");
	}
	if (!is_json_type(header(conn, MHD_HTTP_HEADER_CONTENT_TYPE)))
		return refuse(wh, r, conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
			      "expected application/json\n",
			      "Content-Type is not application/json");
	event = header(conn, "X-Gitlab-Event");
	if (!event || !*event)
		return refuse(wh, r, conn, MHD_HTTP_BAD_REQUEST,
			      "no X-Gitlab-Event\n", "no X-Gitlab-Event");
	printable_copy(r->event, sizeof(r->event), event, strlen(event));
	if (take_key(r, conn))
		return refuse(wh, r, conn, MHD_HTTP_BAD_REQUEST,
			      "bad delivery key\n",
			      "Idempotency-Key or X-Gitlab-Event-UUID "
			      "too long or unprintable");
	return MHD_YES;
}

/* Log one line for an event; ctx is "project!iid". */
static void log_event(int prio, const struct wh_req *r,
		      const struct webhook_event *ev, unsigned status,
		      const char *outcome)
{
	struct log_ctx_saved saved;

	log_ctx_pushf(&saved, "%s!%lld", ev->project, (long long)ev->iid);
	if (ev->kind == WEBHOOK_MR)
		log_msg(prio,
			"webhook: %s: %s %s%s head %s delivery %s: %u, %s",
			r->peer, r->event,
			ev->action_name[0] ? ev->action_name : "-",
			ev->code_changed ? " (code changed)" : "",
			ev->last_commit[0] ? ev->last_commit : "-",
			r->key[0] ? r->key + 2 : "-", status, outcome);
	else
		log_msg(prio,
			"webhook: %s: %s %s note %lld%s%s delivery %s: %u, %s",
			r->peer, r->event,
			ev->action_name[0] ? ev->action_name : "-",
			(long long)ev->note_id, ev->note_type[0] ? " " : "",
			ev->note_type, r->key[0] ? r->key + 2 : "-", status,
			outcome);
	log_ctx_pop(&saved);
}

/* The last call: the whole body is here. */
/*
 * A delivery over max_request_size from a peer that knows the secret:
 * GitLab itself, with a big MR (a long description, many changes).  An
 * error would count against the hook: GitLab treats every answer but a
 * 2xx or 3xx as a failure (app/services/web_hook_service.rb
 * response_category) and backs the hook off, then disables it, after a
 * few in a row (app/services/web_hooks/log_execution_service.rb,
 * app/models/concerns/web_hooks/auto_disabling.rb) - and every later
 * delivery, small ones too, would be lost.  So the body is read and
 * thrown away, the answer is 200, and the log says so: polling reads the
 * MR in any case.
 */
static enum MHD_Result on_oversized(struct webhook *wh, struct wh_req *r,
				    struct MHD_Connection *conn)
{
	log_warn("webhook: %s: %s of %llu bytes over [webhook] "
		 "max_request_size (%zu): answered 200 and not read; the next "
		 "poll picks up what it said",
		 r->peer, r->event, (unsigned long long)r->discarded,
		 wh->max_request);
	count(wh, &wh->stats.oversized);
	return answer(r, conn, MHD_HTTP_OK, "too large, ignored\n", 0);
}

static enum MHD_Result on_body(struct webhook *wh, struct wh_req *r,
			       struct MHD_Connection *conn)
{
	struct webhook_event ev;
	char why[PB_LOG_QUOTE_MAX];
	uint32_t seen;
	int rc;

	rc = webhook_parse(&ev, r->event, r->body.data, r->body.len);
	if (rc) {
		log_notice("webhook: %s: 400, %s", r->peer,
			   printable_copy(why, sizeof(why), err_msg(),
					  strlen(err_msg())));
		count(wh, &wh->stats.rejected);
		return answer(r, conn, MHD_HTTP_BAD_REQUEST, "bad payload\n",
			      0);
	}
	if (ev.kind == WEBHOOK_IGNORED) {
		/* 2xx: GitLab disables hooks that keep failing. */
		log_debug("webhook: %s: %s%s%s: 200, ignored", r->peer,
			  r->event, ev.noteable_type[0] ? " on " : "",
			  ev.noteable_type);
		count(wh, &wh->stats.ignored);
		return answer(r, conn, MHD_HTTP_OK, "ignored\n", 0);
	}
	if (r->key[0])
		snprintf(ev.delivery, sizeof(ev.delivery), "%s", r->key + 2);

	pthread_mutex_lock(&wh->lock);
	wh->stats.requests++;
	seen = r->key[0] ? lru_find(&wh->seen, r->key) : LRU_NIL;
	if (seen != LRU_NIL) {
		lru_touch(&wh->seen, seen);
		wh->stats.duplicates++;
		pthread_mutex_unlock(&wh->lock);
		log_event(LOG_INFO, r, &ev, MHD_HTTP_OK, "duplicate, ignored");
		return answer(r, conn, MHD_HTTP_OK, "duplicate\n", 0);
	}
	/* Under the lock: a concurrent retry of the same delivery waits
	 * here and then finds the key.  The callback only enqueues. */
	rc = wh->on_event(&ev, wh->arg);
	if (rc == 0) {
		if (r->key[0])
			lru_add(&wh->seen, r->key);
		wh->stats.queued++;
	} else {
		wh->stats.failed++;
	}
	pthread_mutex_unlock(&wh->lock);

	if (rc) {
		log_event(LOG_WARNING, r, &ev, MHD_HTTP_SERVICE_UNAVAILABLE,
			  "could not queue");
		return answer(r, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			      "try again later\n", 0);
	}
	log_event(LOG_INFO, r, &ev, MHD_HTTP_OK,
		  r->key[0] ? "queued" : "queued (no delivery key)");
	return answer(r, conn, MHD_HTTP_OK, "ok\n", 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct webhook *wh = cls;
	struct wh_req *r = *con_cls;

	if (!r) {
		r = xcalloc(1, sizeof(*r));
		buf_init(&r->body, wh->max_request);
		peer_name(r->peer, sizeof(r->peer), conn);
		*con_cls = r;
		guard_busy(&wh->guard, conn, 1);
		pthread_mutex_lock(&wh->lock);
		wh->stats.inflight++;
		pthread_mutex_unlock(&wh->lock);
		return on_headers(wh, r, conn, url, method);
	}
	if (r->answered) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size && r->discarding) {
		r->discarded += *upload_size;
		*upload_size = 0;
		if (r->discarded > WEBHOOK_DISCARD_MAX) {
			/* More than GitLab ever sends: not GitLab. */
			log_notice("webhook: %s: body over %d bytes, "
				   "connection closed",
				   r->peer, WEBHOOK_DISCARD_MAX);
			count(wh, &wh->stats.rejected);
			r->answered = 1;
			return MHD_NO;
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (buf_add(&r->body, upload, *upload_size)) {
			/* A chunked body past the cap: the rest is thrown
			 * away, as for a Content-Length over it. */
			r->discarding = 1;
			r->discarded = r->body.len + *upload_size;
			buf_reset(&r->body);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->discarding)
		return on_oversized(wh, r, conn);
	return on_body(wh, r, conn);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct webhook *wh = cls;
	struct wh_req *r = *con_cls;

	guard_busy(&wh->guard, conn, 0);
	if (!r)
		return;
	if (!r->answered) {
		/* Timed out, the peer went away, or the server is stopping. */
		log_notice("webhook: %s: request dropped before it was "
			   "complete (%s)",
			   r->peer,
			   toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ?
				   "timeout" :
			   toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ?
				   "shutdown" :
				   "connection closed");
		count(wh, NULL);
	}
	buf_release(&r->body);
	free(r);
	*con_cls = NULL;
	pthread_mutex_lock(&wh->lock);
	if (--wh->stats.inflight == 0)
		pthread_cond_broadcast(&wh->drained);
	pthread_mutex_unlock(&wh->lock);
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
		    listen(fd, WH_LISTEN_BACKLOG) == 0)
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

static int check_opts(const struct webhook_opts *o)
{
	size_t len;

	if (!o->on_event)
		return err_set(PB_EINVAL, "webhook: no event callback");
	if (!o->secret || !*o->secret)
		return err_set(PB_EINVAL, "webhook: the secret is empty");
	len = strlen(o->secret);
	if (len > WEBHOOK_SECRET_MAX)
		return err_set(PB_EINVAL,
			       "webhook: the secret is longer than %d bytes",
			       WEBHOOK_SECRET_MAX);
	/* A header value cannot carry these; a trailing newline from the
	 * secret file is the usual culprit. */
	if (!printable_check(o->secret, len))
		return err_set(PB_EINVAL,
			       "webhook: the secret holds a control, "
			       "non-ASCII or newline byte");
	if (o->path &&
	    (o->path[0] != '/' || !printable_check(o->path, strlen(o->path))))
		return err_set(PB_EINVAL, "webhook: the path must start "
					  "with '/' and be printable");
	if (o->dedupe_entries > WH_DEDUPE_MAX)
		return err_set(PB_EINVAL,
			       "webhook: more than %d de-duplication entries",
			       WH_DEDUPE_MAX);
	if (o->threads && o->max_connections && o->max_connections < o->threads)
		return err_set(PB_EINVAL, "webhook: fewer connections than "
					  "threads");
	return 0;
}

/*
 * The server on listen_fd: internal threads, each an epoll loop over its
 * share of the connections (so a slow client holds no thread); ITC so
 * the daemon can be quiesced for a clean stop.  g guards conns
 * connections (above); libmicrohttpd's own limit is twice that, room
 * for those the guard shut down until their threads close them.  done
 * may be NULL; name is the server's in the log.  NULL when
 * libmicrohttpd will not start.
 */
static struct MHD_Daemon *
mhd_start(int listen_fd, unsigned conns, unsigned threads, unsigned timeout_s,
	  struct guard *g, MHD_AccessHandlerCallback handler, void *cls,
	  MHD_RequestCompletedCallback done, const char *name)
{
	if (conns < threads)
		threads = conns;
	if (guard_start(g, conns, timeout_s, name))
		return NULL;
	return MHD_start_daemon(
		MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG,
		0, NULL, NULL, handler, cls, MHD_OPTION_EXTERNAL_LOGGER,
		(MHD_LogCallback)mhd_log, (void *)name,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
		MHD_OPTION_THREAD_POOL_SIZE, threads,
		MHD_OPTION_CONNECTION_LIMIT, 2 * conns,
		MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)WH_CONN_MEMORY,
		MHD_OPTION_NOTIFY_CONNECTION, guard_notify, g,
		MHD_OPTION_NOTIFY_COMPLETED, done, cls, MHD_OPTION_END);
}

int webhook_new(struct webhook **out, const struct webhook_opts *opts)
{
	struct webhook *wh;
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	rc = check_opts(opts);
	if (rc)
		return rc;

	wh = xcalloc(1, sizeof(*wh));
	wh->listen_fd = -1;
	wh->path = xstrdup(opts->path ? opts->path : WEBHOOK_PATH_DEFAULT);
	wh->max_request = opts->max_request_size ? opts->max_request_size :
						   WEBHOOK_MAX_REQUEST_DEFAULT;
	wh->timeout_s = opts->timeout_s ? opts->timeout_s :
					  WEBHOOK_TIMEOUT_DEFAULT;
	ct_pad(wh->secret, &wh->secret_len, opts->secret);
	wh->on_event = opts->on_event;
	wh->arg = opts->arg;
	pthread_mutex_init(&wh->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wh->drained, &ca);
	pthread_condattr_destroy(&ca);
	lru_init(&wh->seen, opts->dedupe_entries ? opts->dedupe_entries :
						   WEBHOOK_DEDUPE_DEFAULT);

	rc = listen_on(&wh->listen_fd, &wh->port,
		       opts->listen ? opts->listen : WEBHOOK_LISTEN_DEFAULT);
	if (rc)
		goto out;

	wh->daemon = mhd_start(
		wh->listen_fd,
		opts->max_connections ? opts->max_connections :
					WEBHOOK_CONNECTIONS_DEFAULT,
		opts->threads ? opts->threads : WEBHOOK_THREADS_DEFAULT,
		wh->timeout_s, &wh->guard, on_request, wh, on_completed,
		"webhook");
	if (!wh->daemon) {
		rc = err_set(PB_ERROR,
			     "webhook: libmicrohttpd did not start "
			     "on %s",
			     opts->listen ? opts->listen :
					    WEBHOOK_LISTEN_DEFAULT);
		goto out;
	}
	log_info("webhook: listening on %s (port %u), path %s",
		 opts->listen ? opts->listen : WEBHOOK_LISTEN_DEFAULT, wh->port,
		 wh->path);
	*out = wh;
	wh = NULL;
out:
	webhook_free(wh);
	return rc;
}

void webhook_free(struct webhook *wh)
{
	struct timespec deadline;
	MHD_socket fd = MHD_INVALID_SOCKET;

	if (!wh)
		return;
	if (wh->daemon) {
		pthread_mutex_lock(&wh->lock);
		wh->stopping = 1;
		pthread_mutex_unlock(&wh->lock);
		/* No new connections; the listening socket comes back. */
		fd = MHD_quiesce_daemon(wh->daemon);
		/* Let requests in flight finish, for a while. */
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += (time_t)wh->timeout_s;
		pthread_mutex_lock(&wh->lock);
		while (wh->stats.inflight > 0)
			if (pthread_cond_timedwait(&wh->drained, &wh->lock,
						   &deadline) == ETIMEDOUT)
				break;
		pthread_mutex_unlock(&wh->lock);
		MHD_stop_daemon(wh->daemon);
		if (fd != MHD_INVALID_SOCKET)
			close(fd);
	} else if (wh->listen_fd >= 0) {
		close(wh->listen_fd);
	}
	guard_stop(&wh->guard);
	explicit_bzero(wh->secret, sizeof(wh->secret));
	lru_release(&wh->seen);
	pthread_cond_destroy(&wh->drained);
	pthread_mutex_destroy(&wh->lock);
	free(wh->path);
	free(wh);
}

unsigned webhook_port(const struct webhook *wh)
{
	return wh->port;
}

void webhook_stats(struct webhook_stats *out, struct webhook *wh)
{
	pthread_mutex_lock(&wh->lock);
	*out = wh->stats;
	pthread_mutex_unlock(&wh->lock);
}

/*
 * The status server.
 */

struct statusd {
	struct MHD_Daemon *daemon;
	struct guard guard; /* slowloris */
	int listen_fd; /* ours until MHD starts with it */
	unsigned port;
	void (*on_get)(struct statusd_reply *r, const char *path, void *arg);
	void *arg;
};

static enum MHD_Result sd_queue(struct MHD_Connection *conn, unsigned status,
				const char *type, const char *data, size_t len,
				int head)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	/* HEAD: the headers of the GET, Content-Length included. */
	resp = MHD_create_response_from_buffer(head ? 0 : len, (void *)data,
					       MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
					"GET, HEAD");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result sd_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	static int seen; /* a marker: the request's first call is done */
	struct statusd *sd = cls;
	struct statusd_reply r;
	char path[256];
	int head = !strcmp(method, MHD_HTTP_METHOD_HEAD);
	enum MHD_Result ret;

	(void)version;
	(void)upload;
	if (*con_cls) {
		/* a body nobody asked for: dropped, the answer is queued */
		*upload_size = 0;
		return MHD_YES;
	}
	*con_cls = &seen;
	guard_busy(&sd->guard, conn, 1);
	if (!head && strcmp(method, MHD_HTTP_METHOD_GET)) {
		static const char text[] = "method not allowed\n";

		return sd_queue(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				"text/plain; charset=utf-8", text,
				sizeof(text) - 1, 0);
	}
	printable_copy(path, sizeof(path), url, strcspn(url, "?"));
	r.status = MHD_HTTP_NOT_FOUND;
	r.content_type = "text/plain; charset=utf-8";
	buf_init(&r.body, STATUSD_BODY_MAX);
	sd->on_get(&r, path, sd->arg);
	if (r.status == MHD_HTTP_NOT_FOUND && !r.body.len)
		buf_adds(&r.body, "not found\n");
	ret = sd_queue(conn, r.status, r.content_type, r.body.data, r.body.len,
		       head);
	buf_release(&r.body);
	return ret;
}

/* An answer sent: the connection is idle again. */
static void sd_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct statusd *sd = cls;

	(void)con_cls;
	(void)toe;
	guard_busy(&sd->guard, conn, 0);
}

int statusd_new(struct statusd **out, const struct statusd_opts *opts)
{
	struct statusd *sd;
	int rc;

	*out = NULL;
	if (!opts->on_get || !opts->listen)
		return err_set(PB_EINVAL, "status server: no handler or "
					  "address");
	sd = xcalloc(1, sizeof(*sd));
	sd->listen_fd = -1;
	sd->on_get = opts->on_get;
	sd->arg = opts->arg;
	rc = listen_on(&sd->listen_fd, &sd->port, opts->listen);
	if (rc)
		goto out;
	sd->daemon = mhd_start(
		sd->listen_fd,
		opts->max_connections ? opts->max_connections :
					STATUSD_CONNECTIONS_DEFAULT,
		opts->threads ? opts->threads : STATUSD_THREADS_DEFAULT,
		opts->timeout_s ? opts->timeout_s : STATUSD_TIMEOUT_DEFAULT,
		&sd->guard, sd_request, sd, sd_completed, "status server");
	if (!sd->daemon) {
		rc = err_set(PB_ERROR,
			     "status server: libmicrohttpd did not start on %s",
			     opts->listen);
		goto out;
	}
	sd->listen_fd = -1; /* MHD's now */
	log_info("status server: listening on %s (port %u): /metrics, "
		 "/healthz, /readyz",
		 opts->listen, sd->port);
	*out = sd;
	sd = NULL;
out:
	statusd_free(sd);
	return rc;
}

void statusd_free(struct statusd *sd)
{
	if (!sd)
		return;
	if (sd->daemon)
		MHD_stop_daemon(sd->daemon);
	if (sd->listen_fd >= 0)
		close(sd->listen_fd);
	guard_stop(&sd->guard);
	free(sd);
}

unsigned statusd_port(const struct statusd *sd)
{
	return sd->port;
}
