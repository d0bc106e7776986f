/*
 * forge_commit_signature() of the GitLab client against the simulator
 * (GET /projects/:id/repository/commits/:sha/signature, doc/api/
 * commits.md "Get signature of a commit"): each kind of signature read
 * into struct forge_signature, an unsigned commit and an unknown one
 * PB_ENOTFOUND, a name that is not a commit id refused before any
 * request, a forge failing (503, the retries spent) PB_ETEMP, and an
 * answer that is no signature PB_EINVAL.
 *
 * Run through run-with-sim.sh, which exports PB_FORGESIM_URL; each test
 * starts from POST /_sim/reset.  (test_gitlab_client.c holds the rest of
 * the client's tests; this file keeps it from growing further.)
 */
#include "cmocka_all.h"
#include "simhttp.h"
#include "forge/forge.h"
#include "forge/gitlab.h"
#include "forge/http.h"
#include "forge/json.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROJECT "group/project"

static const char *sim_url;
static struct http_client *sim_http;

/* POST json to the control API; the head commit it answers, when asked. */
static void sim_post(const char *path, const char *json, char *head,
		     size_t size)
{
	struct http_response resp;
	struct http_request req;
	struct json_doc *doc = NULL;
	char *url = xasprintf("%s%s", sim_url, path), *h = NULL;

	memset(&req, 0, sizeof(req));
	req.method = HTTP_POST;
	req.url = url;
	req.body = json;
	req.body_len = strlen(json);
	http_response_init(&resp, 1024 * 1024);
	if (http_do(&resp, sim_http, &req) != 0 || resp.status >= 400)
		fail_msg("control call %s failed: %ld %s", path, resp.status,
			 resp.body.data);
	if (head) {
		assert_int_equal(
			json_parse(&doc, resp.body.data, resp.body.len, 16), 0);
		assert_int_equal(json_get_str(&h, json_doc_root(doc), "head"),
				 0);
		snprintf(head, size, "%s", h);
		free(h);
		json_doc_free(doc);
	}
	http_response_release(&resp);
	free(url);
}

/* A commit on a branch of its own, signed as sig says (or not). */
static void commit(char *sha, size_t size, const char *branch, const char *sig)
{
	char *body = xasprintf(
		"{\"branch\":\"%s\",\"start\":\"main\",\"message\":\"x\\n\","
		"\"files\":{\"%s.txt\":\"x\\n\"},\"author\":{\"name\":"
		"\"Alice Developer\",\"email\":\"alice@example.com\"}%s%s}",
		branch, branch, sig ? ",\"signature\":" : "", sig ? sig : "");

	sim_post("/_sim/projects/1/commits", body, sha, size);
	free(body);
}

static struct forge *client(int retries)
{
	struct forge_gitlab_opts o;
	struct forge *f = NULL;

	memset(&o, 0, sizeof(o));
	o.base_url = sim_url;
	o.token = "user-token";
	o.max_retries = retries;
	o.retry_base_ms = 1;
	o.retry_max_ms = 10;
	o.connect_timeout_ms = 2000;
	o.timeout_ms = 10000;
	if (forge_gitlab_new(&f, &o) != 0)
		fail_msg("forge_gitlab_new: %s", err_msg());
	return f;
}

static int reset(void **state)
{
	(void)state;
	sim_post("/_sim/reset", "{}", NULL, 0);
	return 0;
}

static void test_kinds(void **state)
{
	struct forge *f = client(1);
	struct forge_signature s;
	char sha[64];

	(void)state;
	commit(sha, sizeof(sha), "pgp",
	       "{\"type\":\"PGP\",\"user\":\"alice\"}");
	assert_int_equal(forge_commit_signature(&s, f, PROJECT, sha), 0);
	assert_string_equal(s.type, "PGP");
	assert_string_equal(s.status, "verified");
	assert_string_equal(s.name, "Alice Developer");
	assert_string_equal(s.email, "alice@example.com");
	assert_int_equal(strlen(s.key), 16);
	forge_signature_release(&s);

	commit(sha, sizeof(sha), "ssh",
	       "{\"type\":\"SSH\",\"user\":\"bob\",\"title\":\"laptop\"}");
	assert_int_equal(forge_commit_signature(&s, f, PROJECT, sha), 0);
	assert_string_equal(s.type, "SSH");
	assert_string_equal(s.status, "other_user");
	assert_string_equal(s.key, "laptop");
	assert_null(s.name);
	forge_signature_release(&s);

	/* A key no user has: GitLab answers the key as null. */
	commit(sha, sizeof(sha), "nokey", "{\"type\":\"SSH\"}");
	assert_int_equal(forge_commit_signature(&s, f, PROJECT, sha), 0);
	assert_string_equal(s.status, "unknown_key");
	assert_null(s.key);
	forge_signature_release(&s);

	commit(sha, sizeof(sha), "x509",
	       "{\"type\":\"X509\",\"user\":\"alice\"}");
	assert_int_equal(forge_commit_signature(&s, f, PROJECT, sha), 0);
	assert_string_equal(s.type, "X509");
	assert_string_equal(s.email, "alice@example.com");
	assert_string_equal(s.key, "CN=alice@example.com,OU=Example,O=World");
	forge_signature_release(&s);
	forge_free(f);
}

static void test_errors(void **state)
{
	struct forge *f = client(1);
	struct forge_signature s;
	char sha[64];

	(void)state;
	commit(sha, sizeof(sha), "plain", NULL);
	assert_int_equal(forge_commit_signature(&s, f, PROJECT, sha),
			 PB_ENOTFOUND);
	assert_null(s.type);
	assert_int_equal(forge_commit_signature(&s, f, PROJECT,
						"0000000000000000000000000000"
						"000000000000"),
			 PB_ENOTFOUND);
	/* A branch name is no commit id: not asked. */
	assert_int_equal(forge_commit_signature(&s, f, PROJECT, "main"),
			 PB_EINVAL);
	assert_int_equal(forge_commit_signature(&s, f, PROJECT, "../x"),
			 PB_EINVAL);

	/* An answer that is no signature. */
	sim_post("/_sim/faults",
		 "{\"kind\":\"error\",\"status\":200,\"count\":1,"
		 "\"method\":\"GET\",\"path\":\"/signature$\","
		 "\"content_type\":\"application/json\","
		 "\"body\":\"{\\\"verification_status\\\":\\\"verified\\\"}\"}",
		 NULL, 0);
	assert_int_equal(forge_commit_signature(&s, f, PROJECT, sha),
			 PB_EINVAL);
	assert_null(s.status);

	/* The forge failing: for now. */
	sim_post("/_sim/faults",
		 "{\"kind\":\"error\",\"status\":503,\"count\":5,"
		 "\"method\":\"GET\",\"path\":\"/signature$\"}",
		 NULL, 0);
	assert_int_equal(forge_commit_signature(&s, f, PROJECT, sha), PB_ETEMP);
	forge_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_kinds, reset),
		cmocka_unit_test_setup(test_errors, reset),
	};

	return simhttp_main("tests", tests, sizeof(tests) / sizeof(tests[0]),
			    &sim_url, &sim_http);
}
