#include "outbound/listarchive.h"

#include "core/msgid.h"
#include "forge/http.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A raw message as the archive serves it: the mail as mailed (at most
 * the largest mail we send) plus the mboxrd framing and escapes. */
#define LISTARCHIVE_BODY_MAX (PB_MAIL_MAX_MAX + PB_MAIL_MAX_MAX / 8)

struct listarchive {
	struct http_client *http;
};

int listarchive_new(struct listarchive **out, const char *ca_file,
		    const volatile sig_atomic_t *stop)
{
	struct http_opts o;
	struct listarchive *la;
	int rc;

	*out = NULL;
	memset(&o, 0, sizeof(o));
	o.token = NULL; /* public: never the forge's token */
	o.ca_file = ca_file;
	o.connect_timeout_ms = LISTARCHIVE_CONNECT_TIMEOUT_MS;
	o.timeout_ms = LISTARCHIVE_TIMEOUT_MS;
	o.stop = stop;
	la = xcalloc(1, sizeof(*la));
	rc = http_client_new(&la->http, &o);
	if (rc) {
		free(la);
		return rc;
	}
	*out = la;
	return 0;
}

void listarchive_free(struct listarchive *la)
{
	if (!la)
		return;
	http_client_free(la->http);
	free(la);
}

int listarchive_url(struct buf *out, const char *base, const char *message_id)
{
	size_t len = strlen(base);
	int rc;

	while (len && base[len - 1] == '/')
		len--;
	rc = buf_add(out, base, len);
	if (!rc)
		rc = buf_addch(out, '/');
	if (!rc)
		rc = msgid_url_escape(out, message_id);
	if (!rc)
		rc = buf_adds(out, "/raw");
	return rc;
}

/* Does the body name <id>? */
static int names_id(const struct buf *body, const char *id)
{
	size_t n = strlen(id), i;

	if (body->len < n + 2)
		return 0;
	for (i = 0; i + n + 2 <= body->len; i++)
		if (body->data[i] == '<' && body->data[i + n + 1] == '>' &&
		    !memcmp(body->data + i + 1, id, n))
			return 1;
	return 0;
}

int listarchive_has(int *found, struct listarchive *la, const char *base,
		    const char *message_id)
{
	struct buf url = BUF_INIT(PB_HTTP_URL_MAX);
	struct http_response resp;
	struct http_request req;
	int rc;

	*found = 0;
	http_response_init(&resp, LISTARCHIVE_BODY_MAX);
	if (!base || !*base || !message_id || !*message_id) {
		rc = err_set(PB_EINVAL, "list archive: no URL or Message-ID");
		goto out;
	}
	rc = listarchive_url(&url, base, message_id);
	if (rc)
		goto out;
	memset(&req, 0, sizeof(req));
	req.method = HTTP_GET;
	req.url = url.data;
	rc = http_do(&resp, la->http, &req);
	if (rc) {
		rc = err_set(PB_ETEMP, "list archive %s: %s", base, err_msg());
		goto out;
	}
	if (resp.status == 404) {
		log_debug("list archive %s: no <%s>", base, message_id);
		goto out;
	}
	if (resp.status == 200 && names_id(&resp.body, message_id)) {
		*found = 1;
		goto out;
	}
	rc = err_set(PB_ETEMP, "list archive %s: HTTP %ld%s", base, resp.status,
		     resp.status == 200 ? " without the message" : "");
out:
	http_response_release(&resp);
	buf_release(&url);
	return rc;
}
