#include "forge/http.h"

#include "core/version.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <curl/curl.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct http_client {
	CURL *curl;
	char *token;
	char *ca_file;
	char *user_agent;
	long connect_timeout_ms;
	long timeout_ms;
	const volatile sig_atomic_t *stop;
	long stop_grace_ms;
	char errbuf[CURL_ERROR_SIZE];
};

/* One transfer's view of the stop flag (the progress callback's arg). */
struct watch {
	const struct http_client *c;
	struct http_response *out;
	int64_t seen_ms; /* monotonic time the flag was first seen; 0: not */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Header values we send must not smuggle in another header. */
static int header_value_ok(const char *s)
{
	for (; *s; s++)
		if (*s == '\r' || *s == '\n' || (unsigned char)*s < 0x20)
			return 0;
	return 1;
}

int http_client_new(struct http_client **out, const struct http_opts *opts)
{
	struct http_client *c;

	*out = NULL;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return err_set(PB_ERROR, "curl_global_init: %s",
			       curl_easy_strerror(global_rc));
	if (opts->token && (!*opts->token || !header_value_ok(opts->token)))
		return err_set(PB_EINVAL, "the forge token is empty or holds "
					  "control characters");
	if (opts->user_agent && !header_value_ok(opts->user_agent))
		return err_set(PB_EINVAL, "bad User-Agent");

	c = xcalloc(1, sizeof(*c));
	c->curl = curl_easy_init();
	if (!c->curl) {
		free(c);
		return err_set(PB_ERROR, "curl_easy_init failed");
	}
	c->token = opts->token ? xstrdup(opts->token) : NULL;
	c->ca_file = opts->ca_file ? xstrdup(opts->ca_file) : NULL;
	c->user_agent = opts->user_agent ?
				xstrdup(opts->user_agent) :
				xasprintf("patchbridge/%s", pb_version());
	c->connect_timeout_ms =
		opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 10000;
	c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 60000;
	c->stop = opts->stop;
	c->stop_grace_ms = opts->stop_grace_ms > 0 ? opts->stop_grace_ms :
						     PB_HTTP_STOP_GRACE_MS;
	*out = c;
	return 0;
}

void http_client_free(struct http_client *c)
{
	if (!c)
		return;
	curl_easy_cleanup(c->curl);
	if (c->token) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	free(c->ca_file);
	free(c->user_agent);
	free(c);
}

const char *http_method_name(enum http_method m)
{
	switch (m) {
	case HTTP_GET:
		return "GET";
	case HTTP_POST:
		return "POST";
	case HTTP_PUT:
		return "PUT";
	case HTTP_DELETE:
		return "DELETE";
	}
	return "?";
}

void http_response_init(struct http_response *r, size_t body_max)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->body, body_max);
}

static void free_headers(struct http_response *r)
{
	free(r->content_type);
	free(r->link);
	free(r->next_page);
	free(r->total);
	free(r->retry_after);
	free(r->ratelimit_reset);
	free(r->ratelimit_remaining);
	free(r->location);
	r->content_type = r->link = r->next_page = r->total = NULL;
	r->retry_after = r->ratelimit_reset = r->ratelimit_remaining = NULL;
	r->location = NULL;
	r->header_bytes = 0;
}

void http_response_reset(struct http_response *r)
{
	free_headers(r);
	buf_reset(&r->body);
	r->status = 0;
	r->maybe_sent = 0;
	r->too_large = 0;
	r->stopped = 0;
}

void http_response_release(struct http_response *r)
{
	free_headers(r);
	buf_release(&r->body);
	r->status = 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http_response *r = arg;
	size_t n = size * nmemb;

	/* Returning short makes libcurl abort with CURLE_WRITE_ERROR. */
	if (buf_add(&r->body, data, n) < 0) {
		r->too_large = 1;
		return 0;
	}
	return n;
}

static void keep_header(char **slot, const char *v, size_t len)
{
	free(*slot);
	*slot = xstrndup(v, len);
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	static const struct {
		const char *name;
		size_t off;
	} wanted[] = {
		{ "Content-Type",
		  offsetof(struct http_response, content_type) },
		{ "Link", offsetof(struct http_response, link) },
		{ "X-Next-Page", offsetof(struct http_response, next_page) },
		{ "X-Total", offsetof(struct http_response, total) },
		{ "Retry-After", offsetof(struct http_response, retry_after) },
		{ "RateLimit-Reset",
		  offsetof(struct http_response, ratelimit_reset) },
		{ "RateLimit-Remaining",
		  offsetof(struct http_response, ratelimit_remaining) },
		{ "Location", offsetof(struct http_response, location) },
	};
	struct http_response *r = arg;
	size_t n = size * nmemb, i, namelen, vlen;
	const char *name, *v;
	struct scan s;

	r->header_bytes += n;
	if (r->header_bytes > PB_HTTP_HEADER_MAX) {
		r->too_large = 1;
		return 0;
	}
	scan_init(&s, data, n);
	/* A new status line (after 1xx): forget the interim headers. */
	if (scan_lit(&s, "HTTP/")) {
		size_t bytes = r->header_bytes;

		free_headers(r);
		r->header_bytes = bytes;
		return n;
	}
	if (!scan_until(&s, ':', &name, &namelen))
		return n;
	scan_char(&s, ':');
	v = s.p;
	vlen = scan_left(&s);
	mem_trim(&v, &vlen);
	while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n'))
		vlen--;
	mem_trim(&v, &vlen);
	for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		if (strlen(wanted[i].name) == namelen &&
		    mem_eq_icase(name, namelen, wanted[i].name)) {
			keep_header((char **)((char *)r + wanted[i].off), v,
				    vlen);
			break;
		}
	}
	return n;
}

static int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * libcurl calls this at least once a second while a transfer runs, idle
 * or not.  Non-zero abandons the transfer (CURLE_ABORTED_BY_CALLBACK).
 * The grace counts from when this transfer first saw the flag, so a
 * forge that answers still completes the request it was sent.
 */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct watch *w = arg;
	int64_t now;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if (!*w->c->stop)
		return 0;
	now = monotonic_ms();
	if (!w->seen_ms)
		w->seen_ms = now;
	if (now - w->seen_ms < w->c->stop_grace_ms)
		return 0;
	w->out->stopped = 1;
	return 1;
}

/* True for failures that happen before any byte of the request is sent. */
static int fails_before_send(CURLcode rc)
{
	switch (rc) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
		return 1;
	default:
		return 0;
	}
}

static int map_curl_error(struct http_client *c, struct http_response *out,
			  CURLcode rc)
{
	const char *what = c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc);
	curl_off_t pretransfer = 0;
	long reqsize = 0;

	curl_easy_getinfo(c->curl, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
	curl_easy_getinfo(c->curl, CURLINFO_REQUEST_SIZE, &reqsize);
	/*
	 * Once the transfer phase began, the request may have been
	 * delivered and acted on even though no answer came back.
	 */
	out->maybe_sent = !fails_before_send(rc) &&
			  (pretransfer > 0 || reqsize > 0);

	if (out->too_large || rc == CURLE_FILESIZE_EXCEEDED) {
		out->too_large = 1;
		if (out->header_bytes > PB_HTTP_HEADER_MAX)
			return err_set(PB_ELIMIT,
				       "response headers exceed %d "
				       "bytes",
				       PB_HTTP_HEADER_MAX);
		return err_set(PB_ELIMIT, "response body exceeds %zu bytes",
			       out->body.max);
	}
	if (rc == CURLE_ABORTED_BY_CALLBACK && out->stopped)
		return err_set(
			PB_ETEMP,
			"abandoned %s: stopping, and no answer in %ld ms",
			out->maybe_sent ? "after sending" : "while connecting",
			c->stop_grace_ms);
	switch (rc) {
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return err_set(PB_EINVAL, "bad URL: %s", what);
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return err_set(PB_ETEMP, "cannot resolve host: %s", what);
	case CURLE_COULDNT_CONNECT:
		return err_set(PB_ETEMP, "cannot connect: %s", what);
	case CURLE_OPERATION_TIMEDOUT:
		return err_set(PB_ETEMP, "timed out %s: %s",
			       out->maybe_sent ? "after sending" :
						 "while connecting",
			       what);
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
		return err_set(PB_ETEMP, "TLS failure: %s", what);
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		return err_set(PB_ETEMP, "connection lost: %s", what);
	default:
		return err_set(PB_ETEMP, "%s", what);
	}
}

static struct curl_slist *add_header(struct curl_slist *list, const char *h)
{
	struct curl_slist *l = curl_slist_append(list, h);

	if (!l)
		BUG("curl_slist_append: out of memory");
	return l;
}

int http_do(struct http_response *out, struct http_client *c,
	    const struct http_request *req)
{
	struct curl_slist *headers = NULL;
	struct watch w = { c, out, 0 };
	char *h = NULL;
	CURLcode rc;
	CURL *k = c->curl;
	long status = 0;
	int ret = 0;

	http_response_reset(out);
	if (strlen(req->url) > PB_HTTP_URL_MAX)
		return err_set(PB_ELIMIT, "URL longer than %d bytes",
			       PB_HTTP_URL_MAX);
	if (req->sudo && (!*req->sudo || !header_value_ok(req->sudo)))
		return err_set(PB_EINVAL, "bad Sudo user");

	/* A reset keeps the connection cache, so connections are reused. */
	curl_easy_reset(k);
	c->errbuf[0] = '\0';
	curl_easy_setopt(k, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(k, CURLOPT_URL, req->url);
	curl_easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(k, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(k, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(k, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(k, CURLOPT_SSL_VERIFYHOST, 2L);
	if (c->ca_file)
		curl_easy_setopt(k, CURLOPT_CAINFO, c->ca_file);
	curl_easy_setopt(k, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(k, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(k, CURLOPT_MAXFILESIZE_LARGE,
			 (curl_off_t)out->body.max);
	curl_easy_setopt(k, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(k, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(k, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(k, CURLOPT_HEADERDATA, out);
	if (req->fresh_connection)
		curl_easy_setopt(k, CURLOPT_FRESH_CONNECT, 1L);
	if (c->stop) {
		curl_easy_setopt(k, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(k, CURLOPT_XFERINFODATA, &w);
		curl_easy_setopt(k, CURLOPT_NOPROGRESS, 0L);
	}

	headers = add_header(headers, "Accept: application/json");
	/* No "Expect: 100-continue" round trip before larger bodies. */
	headers = add_header(headers, "Expect:");
	if (c->token) {
		h = xasprintf("PRIVATE-TOKEN: %s", c->token);
		headers = add_header(headers, h);
		explicit_bzero(h, strlen(h));
		free(h);
	}
	if (req->sudo) {
		h = xasprintf("Sudo: %s", req->sudo);
		headers = add_header(headers, h);
		free(h);
	}

	switch (req->method) {
	case HTTP_GET:
		curl_easy_setopt(k, CURLOPT_HTTPGET, 1L);
		break;
	case HTTP_POST:
	case HTTP_PUT:
	case HTTP_DELETE:
		if (req->method != HTTP_POST)
			curl_easy_setopt(k, CURLOPT_CUSTOMREQUEST,
					 http_method_name(req->method));
		if (req->body || req->method != HTTP_DELETE) {
			headers = add_header(headers, "Content-Type: "
						      "application/json");
			curl_easy_setopt(
				k, CURLOPT_POSTFIELDSIZE_LARGE,
				(curl_off_t)(req->body ? req->body_len : 0));
			curl_easy_setopt(k, CURLOPT_POSTFIELDS,
					 req->body ? req->body : "");
		}
		break;
	}
	curl_easy_setopt(k, CURLOPT_HTTPHEADER, headers);

	rc = curl_easy_perform(k);
	if (rc != CURLE_OK) {
		ret = map_curl_error(c, out, rc);
		goto out;
	}
	curl_easy_getinfo(k, CURLINFO_RESPONSE_CODE, &status);
	out->status = status;
out:
	/* Drop the list (it held the token) before the handle is reused. */
	curl_easy_setopt(k, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	return ret;
}

/*
 * Pure helpers.
 */

static int is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

int http_escape(struct buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t start = out->len;
	int rc = 0;

	for (; *s && !rc; s++) {
		unsigned char c = (unsigned char)*s;

		if (is_unreserved(c)) {
			rc = buf_addch(out, c);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };

			rc = buf_add(out, e, 3);
		}
	}
	if (rc) {
		buf_truncate(out, start);
		return err_set(rc, "escaped text exceeds %zu bytes", out->max);
	}
	return 0;
}

static int is_token_char(int c)
{
	return c > 0x20 && c < 0x7f && !strchr("\"(),/:;<=>?@[\\]{}", c);
}

/* Does the rel parameter value (space-separated types) contain rel? */
static int rel_matches(const char *v, size_t len, const char *rel)
{
	struct scan s;
	const char *t;
	size_t tlen;

	scan_init(&s, v, len);
	while (!scan_eof(&s)) {
		scan_blanks(&s);
		t = s.p;
		while (!scan_eof(&s) && scan_peek(&s) != ' ')
			s.p++;
		tlen = (size_t)(s.p - t);
		if (tlen && strlen(rel) == tlen && mem_eq_icase(t, tlen, rel))
			return 1;
	}
	return 0;
}

int http_link_find(struct buf *out, const char *link, const char *rel)
{
	const char *uri, *pname, *pval;
	size_t urilen, plen, vlen;
	struct scan s;
	int found;

	scan_init(&s, link, strlen(link));
	for (;;) {
		/* Skip empty list elements (RFC 9110 section 5.6.1). */
		while (scan_blanks(&s) || scan_char(&s, ','))
			;
		if (scan_eof(&s))
			return err_set(PB_ENOTFOUND, "no rel=\"%s\" link", rel);
		if (!scan_char(&s, '<') || !scan_until(&s, '>', &uri, &urilen))
			return err_set(PB_EINVAL, "garbled Link header");
		scan_char(&s, '>');
		found = 0;
		/* Parameters: ; name=value or ; name="value" */
		for (;;) {
			scan_blanks(&s);
			if (!scan_char(&s, ';'))
				break;
			scan_blanks(&s);
			if (!scan_span(&s, is_token_char, &pname, &plen))
				return err_set(PB_EINVAL,
					       "garbled Link header");
			scan_blanks(&s);
			if (!scan_char(&s, '='))
				continue; /* a parameter without value */
			scan_blanks(&s);
			if (scan_char(&s, '"')) {
				if (!scan_until(&s, '"', &pval, &vlen))
					return err_set(PB_EINVAL,
						       "garbled Link header");
				scan_char(&s, '"');
			} else if (!scan_span(&s, is_token_char, &pval,
					      &vlen)) {
				return err_set(PB_EINVAL,
					       "garbled Link header");
			}
			if (plen == 3 && mem_eq_icase(pname, plen, "rel") &&
			    rel_matches(pval, vlen, rel))
				found = 1;
		}
		scan_blanks(&s);
		if (!scan_eof(&s) && scan_peek(&s) != ',')
			return err_set(PB_EINVAL, "garbled Link header");
		if (found) {
			if (buf_add(out, uri, urilen) < 0)
				return err_set(PB_ELIMIT, "link too long");
			return 0;
		}
	}
}

/*
 * The origin of a URL (RFC 6454: scheme, host, port), judged by curl_url()
 * - the parser that makes the connection - so that no URL can name one
 * host to us and another to libcurl.  Only http and https; a URL with
 * userinfo has no origin here (we never put credentials in URLs, and
 * refuse those that do).  The parts are lower-cased; the port is
 * explicit (CURLU_DEFAULT_PORT).
 */
struct origin {
	char *scheme, *host, *port;
};

static void origin_release(struct origin *o)
{
	curl_free(o->scheme);
	curl_free(o->host);
	curl_free(o->port);
	memset(o, 0, sizeof(*o));
}

static int origin_parse(struct origin *o, const char *url)
{
	CURLU *u = curl_url();
	char *user = NULL;
	int rc = -1;

	memset(o, 0, sizeof(*o));
	if (!u)
		return -1;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &o->scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &o->host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &o->port, CURLU_DEFAULT_PORT) !=
		    CURLUE_OK)
		goto out;
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
		curl_free(user);
		goto out;
	}
	if (strcasecmp(o->scheme, "http") && strcasecmp(o->scheme, "https"))
		goto out;
	rc = 0;
out:
	if (rc)
		origin_release(o);
	curl_url_cleanup(u);
	return rc;
}

int http_same_origin(const char *a, const char *b)
{
	struct origin oa, ob;
	int same = 0;

	if (origin_parse(&oa, a) < 0)
		return 0;
	if (origin_parse(&ob, b) == 0) {
		same = !strcasecmp(oa.scheme, ob.scheme) &&
		       !strcasecmp(oa.host, ob.host) &&
		       !strcmp(oa.port, ob.port);
		origin_release(&ob);
	}
	origin_release(&oa);
	return same;
}

int http_parse_uint(int64_t *out, const char *v)
{
	const char *p = v;
	size_t len = strlen(v);
	uint64_t n;

	*out = 0;
	mem_trim(&p, &len);
	if (len == 0 || !mem_to_u64(p, len, INT64_MAX, &n))
		return err_set(PB_EINVAL, "not a number");
	*out = (int64_t)n;
	return 0;
}

int http_parse_retry_after(int64_t *out_s, const char *v)
{
	return http_parse_uint(out_s, v);
}

int http_retry_delay(int64_t *out_ms, const struct http_backoff *p,
		     unsigned attempt, const char *retry_after,
		     const char *ratelimit_reset, int64_t now_ms,
		     uint32_t jitter)
{
	int64_t v, d, half;

	*out_ms = 0;
	/* 1. Retry-After: seconds to wait (the server knows best). */
	if (retry_after && http_parse_retry_after(&v, retry_after) == 0) {
		d = v > INT64_MAX / 1000 ? INT64_MAX : v * 1000;
		goto asked;
	}
	/* 2. RateLimit-Reset: the epoch second the window reopens. */
	if (ratelimit_reset && http_parse_uint(&v, ratelimit_reset) == 0 &&
	    v <= INT64_MAX / 1000 && v * 1000 > now_ms) {
		d = v * 1000 - now_ms;
		goto asked;
	}
	/* 3. Exponential backoff with equal jitter, capped. */
	d = p->base_ms > 0 ? p->base_ms : 1;
	while (attempt-- > 1 && d < p->max_ms)
		d *= 2;
	if (d > p->max_ms)
		d = p->max_ms;
	half = d / 2;
	*out_ms = d - half + (int64_t)((uint64_t)jitter % (uint64_t)(half + 1));
	return 0;
asked:
	*out_ms = d;
	if (d > p->max_ms)
		return err_set(PB_ELIMIT, "server asks to wait %lld ms",
			       (long long)d);
	return 0;
}
