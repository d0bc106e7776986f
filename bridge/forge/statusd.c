#include "forge/statusd.h"

#include "forge/httpd.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct statusd {
	struct httpd *httpd;
	void (*on_get)(struct statusd_reply *r, const char *path, void *arg);
	void *arg;
};

/* Everything is decided from the head; a body is dropped unread. */
static int sd_request(struct httpd_req *req, enum httpd_call call,
		      const char *data, size_t len, void *arg)
{
	static const char text[] = "method not allowed\n";
	struct statusd *sd = arg;
	struct statusd_reply r;
	const char *method = httpd_method(req), *url = httpd_url(req);
	char path[256];
	int head = !strcmp(method, "HEAD");
	int ret;

	(void)data;
	(void)len;
	if (call != HTTPD_HEAD)
		return 0;
	if (!head && strcmp(method, "GET"))
		return httpd_answer(req, HTTPD_METHOD_NOT_ALLOWED,
				    "text/plain; charset=utf-8", text,
				    sizeof(text) - 1, "GET, HEAD",
				    HTTPD_NO_STORE);
	printable_copy(path, sizeof(path), url, strcspn(url, "?"));
	r.status = HTTPD_NOT_FOUND;
	r.content_type = "text/plain; charset=utf-8";
	buf_init(&r.body, STATUSD_BODY_MAX);
	sd->on_get(&r, path, sd->arg);
	if (r.status == HTTPD_NOT_FOUND && !r.body.len)
		buf_adds(&r.body, "not found\n");
	/* HEAD: the headers of the GET, Content-Length included. */
	ret = httpd_answer(req, r.status, r.content_type, r.body.data,
			   head ? 0 : r.body.len, NULL, HTTPD_NO_STORE);
	buf_release(&r.body);
	return ret;
}

int statusd_new(struct statusd **out, const struct statusd_opts *opts)
{
	struct httpd_opts ho;
	struct statusd *sd;
	int rc;

	*out = NULL;
	if (!opts->on_get || !opts->listen)
		return err_set(PB_EINVAL, "status server: no handler or "
					  "address");
	sd = xcalloc(1, sizeof(*sd));
	sd->on_get = opts->on_get;
	sd->arg = opts->arg;
	memset(&ho, 0, sizeof(ho));
	ho.listen = opts->listen;
	ho.name = "status server";
	ho.max_connections = opts->max_connections ?
				     opts->max_connections :
				     STATUSD_CONNECTIONS_DEFAULT;
	ho.threads = opts->threads ? opts->threads : STATUSD_THREADS_DEFAULT;
	ho.timeout_s = opts->timeout_s ? opts->timeout_s :
					 STATUSD_TIMEOUT_DEFAULT;
	ho.on_request = sd_request;
	ho.arg = sd;
	rc = httpd_new(&sd->httpd, &ho);
	if (rc) {
		free(sd);
		return rc;
	}
	log_info("status server: listening on %s (port %u): /metrics, "
		 "/healthz, /readyz",
		 opts->listen, httpd_port(sd->httpd));
	*out = sd;
	return 0;
}

void statusd_free(struct statusd *sd)
{
	if (!sd)
		return;
	httpd_free(sd->httpd);
	free(sd);
}

unsigned statusd_port(const struct statusd *sd)
{
	return httpd_port(sd->httpd);
}
