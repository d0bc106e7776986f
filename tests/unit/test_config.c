#include "cmocka_all.h"
#include "core/config.h"
#include "core/configdoc.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/strlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Lines 1-9: what every valid file needs. */
#define BASE                                    \
	"[bridge]\n"                            \
	"address = bridge@example.org\n"        \
	"domain = example.org\n"                \
	"list_address = list@example.org\n"     \
	"[forge]\n"                             \
	"url = https://gitlab.example.org\n"    \
	"token_file = /etc/patchbridge/token\n" \
	"[inbound]\n"                           \
	"owners_file = /etc/patchbridge/owners.yaml\n"

static int load(struct config **cfg, struct strlist *errs, const char *text)
{
	return config_load_mem(cfg, errs, "t.conf", text, strlen(text));
}

/* Load BASE + text and expect exactly the given errors, in order. */
static void expect_errors(const char *text, const char *const *want)
{
	struct strlist errs = STRLIST_INIT;
	struct config *cfg = (struct config *)1;
	struct buf all = BUF_INIT(1024 * 1024);
	size_t i, n = 0;

	buf_adds(&all, BASE);
	buf_adds(&all, text);
	assert_int_equal(load(&cfg, &errs, all.data), PB_EINVAL);
	assert_null(cfg);
	while (want[n])
		n++;
	for (i = 0; i < errs.nr && i < n; i++)
		assert_string_equal(errs.items[i], want[i]);
	if (errs.nr != n) {
		for (i = 0; i < errs.nr; i++)
			print_message("got: %s\n", errs.items[i]);
		fail_msg("%zu errors, expected %zu", errs.nr, n);
	}
	strlist_release(&errs);
	buf_release(&all);
}

/* Load BASE + text, which must be valid. */
static struct config *load_ok(const char *text)
{
	struct strlist errs = STRLIST_INIT;
	struct config *cfg = NULL;
	struct buf all = BUF_INIT(1024 * 1024);
	size_t i;
	int rc;

	buf_adds(&all, BASE);
	buf_adds(&all, text);
	rc = load(&cfg, &errs, all.data);
	for (i = 0; i < errs.nr; i++)
		print_message("unexpected: %s\n", errs.items[i]);
	assert_int_equal(rc, 0);
	assert_non_null(cfg);
	strlist_release(&errs);
	buf_release(&all);
	return cfg;
}

/* BASE as (section, key, value), for check_value(). */
static const char *const base_params[][3] = {
	{ "bridge", "address", "bridge@example.org" },
	{ "bridge", "domain", "example.org" },
	{ "bridge", "list_address", "list@example.org" },
	{ "forge", "url", "https://gitlab.example.org" },
	{ "forge", "token_file", "/etc/patchbridge/token" },
	{ "inbound", "owners_file", "/etc/patchbridge/owners.yaml" },
};

/*
 * Load a valid file with section.key = value (in place of BASE's own
 * setting of it): want_err is the error expected, NULL for none.
 */
static void check_value(const char *section, const char *key, const char *value,
			const char *want_err)
{
	struct strlist errs = STRLIST_INIT;
	struct buf text = BUF_INIT(1024 * 1024);
	struct buf msg = BUF_INIT(1024 * 1024);
	struct config *cfg = NULL;
	unsigned line = 0;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(base_params) / sizeof(base_params[0]); i++) {
		if (!strcmp(base_params[i][0], section) &&
		    !strcmp(base_params[i][1], key))
			continue;
		buf_addf(&text, "[%s]\n%s = %s\n", base_params[i][0],
			 base_params[i][1], base_params[i][2]);
		line += 2;
	}
	buf_addf(&text, "[%s]\n%s = %s\n", section, key, value);
	line += 2;
	rc = load(&cfg, &errs, text.data);
	if (!want_err) {
		for (i = 0; i < errs.nr; i++)
			print_message("unexpected: %s\n", errs.items[i]);
		assert_int_equal(rc, 0);
		config_free(cfg);
	} else {
		buf_addf(&msg, "t.conf:%u: [%s] %s: %s", line, section, key,
			 want_err);
		assert_int_equal(rc, PB_EINVAL);
		assert_true(errs.nr >= 1);
		assert_string_equal(errs.items[0], msg.data);
		/* Only a missing required value may follow. */
		if (errs.nr > 1)
			assert_non_null(strstr(errs.items[1], "required"));
	}
	strlist_release(&errs);
	buf_release(&text);
	buf_release(&msg);
}

static void test_table(void **state)
{
	struct config *cfg;
	size_t i, j;

	for (i = 0; i < CFG__COUNT; i++) {
		const struct config_param *p = config_param(i);

		assert_non_null(p->section);
		assert_non_null(p->key);
		assert_non_null(p->def);
		assert_non_null(p->desc);
		assert_true(strlen(p->desc) > 10);
		assert_null(strchr(p->desc, '|')); /* a Markdown table cell */
		if (p->type == CONFIG_ENUM || p->type == CONFIG_URL ||
		    p->type == CONFIG_MAILER)
			assert_non_null(p->values);
		if (p->flags & CONFIG_REQUIRED)
			assert_string_equal(p->def, "");
		assert_true(p->min <= p->max);
		for (j = 0; j < i; j++) {
			const struct config_param *q = config_param(j);

			/* Unique per section, and among project keys. */
			if (!strcmp(p->section, q->section))
				assert_string_not_equal(p->key, q->key);
			if ((p->flags & CONFIG_PER_PROJECT ||
			     !strcmp(p->section, "project")) &&
			    (q->flags & CONFIG_PER_PROJECT ||
			     !strcmp(q->section, "project")))
				assert_string_not_equal(p->key, q->key);
		}
	}
	/* Defaults load (BUG() otherwise) and the enums count alike. */
	cfg = load_ok("");
	assert_int_equal(config_enum(cfg, CFG_OUTBOUND_THREADING),
			 CONFIG_THREADING_SHALLOW);
	assert_int_equal(config_enum(cfg, CFG_OUTBOUND_FROM_MODE),
			 CONFIG_FROM_BRIDGE);
	assert_int_equal(config_enum(cfg, CFG_INBOUND_APPROVAL_POLICY),
			 CONFIG_APPROVAL_OWNERS);
	config_free(cfg);
	cfg = load_ok("[outbound]\nthreading = none\nfrom_mode = author\n"
		      "[inbound]\napproval_policy = forge\n");
	assert_int_equal(config_enum(cfg, CFG_OUTBOUND_THREADING),
			 CONFIG_THREADING_NONE);
	assert_int_equal(config_enum(cfg, CFG_OUTBOUND_FROM_MODE),
			 CONFIG_FROM_AUTHOR);
	assert_int_equal(config_enum(cfg, CFG_INBOUND_APPROVAL_POLICY),
			 CONFIG_APPROVAL_FORGE);
	config_free(cfg);
	cfg = load_ok("[outbound]\nthreading = deep\n"
		      "[inbound]\napproval_policy = none\n");
	assert_int_equal(config_enum(cfg, CFG_OUTBOUND_THREADING),
			 CONFIG_THREADING_DEEP);
	assert_int_equal(config_enum(cfg, CFG_INBOUND_APPROVAL_POLICY),
			 CONFIG_APPROVAL_NONE);
	config_free(cfg);
}

static void test_valid_file(void **state)
{
	static const char text[] =
		"# A comment\r\n"
		"; another\n"
		"\n"
		"  [bridge]  # trailing comment\n"
		"\tname = Patch Bridge\n"
		"address=bridge@example.org\n"
		"domain = example.org ; the domain\n"
		"list_address = \"list@example.org\"\n"
		"[ forge ]\n"
		"url = https://gitlab.example.org/\n"
		"token_file = /etc/patchbridge/token\n"
		"timeout = 30s\n"
		"retry_base = 250ms\n"
		"max_response_size = 32M\n"
		"max_retries = 0\n"
		"[smtp]\n"
		"url = smtps://mail.example.org:465\n"
		"username = bridge\n"
		"password_file = /etc/patchbridge/smtp-password\n"
		"[milter]\n"
		"socket = inet:8891@127.0.0.1\n"
		"[log]\n"
		"level = DEBUG\n"
		"[webhook]\n"
		"enabled = on\n"
		"listen = [::1]:8080\n"
		"secret_file = /etc/patchbridge/webhook-secret\n"
		"[outbound]\n"
		"skip_drafts = false\n"
		"[inbound]\n"
		"approval_policy = none\n"
		"nak_label = \"Acks::NACKed\"\n";
	struct strlist errs = STRLIST_INIT;
	struct config *cfg;

	assert_int_equal(load(&cfg, &errs, text), 0);
	assert_int_equal(errs.nr, 0);
	assert_string_equal(config_file(cfg), "t.conf");
	assert_string_equal(config_str(cfg, CFG_BRIDGE_NAME), "Patch Bridge");
	assert_string_equal(config_str(cfg, CFG_BRIDGE_ADDRESS),
			    "bridge@example.org");
	assert_string_equal(config_str(cfg, CFG_BRIDGE_DOMAIN), "example.org");
	assert_string_equal(config_str(cfg, CFG_BRIDGE_LIST_ADDRESS),
			    "list@example.org");
	/* A base URL loses its trailing slash. */
	assert_string_equal(config_str(cfg, CFG_FORGE_URL),
			    "https://gitlab.example.org");
	assert_int_equal(config_duration_ms(cfg, CFG_FORGE_TIMEOUT), 30000);
	assert_int_equal(config_duration_ms(cfg, CFG_FORGE_RETRY_BASE), 250);
	assert_int_equal(config_duration_ms(cfg, CFG_FORGE_CONNECT_TIMEOUT),
			 10000);
	assert_int_equal(config_size(cfg, CFG_FORGE_MAX_RESPONSE_SIZE),
			 32 * 1024 * 1024);
	assert_int_equal(config_int(cfg, CFG_FORGE_MAX_RETRIES), 0);
	assert_string_equal(config_str(cfg, CFG_FORGE_CA_FILE), "");
	assert_string_equal(config_str(cfg, CFG_SMTP_URL),
			    "smtps://mail.example.org:465");
	assert_string_equal(config_str(cfg, CFG_MILTER_SOCKET),
			    "inet:8891@127.0.0.1");
	assert_string_equal(config_str(cfg, CFG_LOG_LEVEL), "debug");
	assert_true(config_bool(cfg, CFG_WEBHOOK_ENABLED));
	assert_false(config_bool(cfg, CFG_OUTBOUND_SKIP_DRAFTS));
	assert_true(config_bool(cfg, CFG_INBOUND_REQUIRE_AUTH));
	assert_string_equal(config_str(cfg, CFG_INBOUND_NAK_LABEL),
			    "Acks::NACKed");
	assert_string_equal(config_str(cfg, CFG_STATE_PATH),
			    "/var/lib/patchbridge/state.db");
	assert_int_equal(config_int(cfg, CFG_OUTBOUND_MAX_SERIES), 100);
	assert_int_equal(config_line(cfg, CFG_FORGE_TIMEOUT), 12);
	assert_int_equal(config_line(cfg, CFG_STATE_PATH), 0);
	assert_int_equal(config_project_count(cfg), 0);
	config_free(cfg);
	config_free(NULL);
}

static void test_quoting(void **state)
{
	struct config *cfg;

	cfg = load_ok("[outbound]\n"
		      "subject_prefix = \" PATCH # x ; \\\"y\\\" \\\\ \"  # c\n"
		      "[bridge]\n"
		      "name = a#b;c \"d\"\n");
	assert_string_equal(config_str(cfg, CFG_OUTBOUND_SUBJECT_PREFIX),
			    " PATCH # x ; \"y\" \\ ");
	/* Only a blank before # or ; starts a comment. */
	assert_string_equal(config_str(cfg, CFG_BRIDGE_NAME), "a#b;c \"d\"");
	config_free(cfg);

	cfg = load_ok("[forge]\nca_file = \"\"\n");
	assert_string_equal(config_str(cfg, CFG_FORGE_CA_FILE), "");
	config_free(cfg);

	{
		const char *want[] = {
			"t.conf:11: [outbound] subject_prefix: missing "
			"closing quote",
			"t.conf:12: [outbound] cc_author: unexpected text "
			"after the closing quote",
			"t.conf:14: [bridge] name: only \\\" and \\\\ may "
			"follow a backslash",
			NULL
		};

		expect_errors("[outbound]\n"
			      "subject_prefix = \"PATCH\n"
			      "cc_author = \"yes\" no\n"
			      "[bridge]\n"
			      "name = \"a\\nb\"\n",
			      want);
	}
}

static void test_durations(void **state)
{
	static const struct {
		const char *in;
		int64_t ms;
	} ok[] = {
		{ "1", 1000 },	    { "30", 30000 },	  { "30s", 30000 },
		{ "5m", 300000 },   { "1h", 3600000 },	  { "1500ms", 1500 },
		{ "2000ms", 2000 }, { "3600s", 3600000 },
	};
	struct config *cfg;
	char text[256];
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(text, sizeof(text), "[forge]\ntimeout = %s\n",
			 ok[i].in);
		cfg = load_ok(text);
		assert_int_equal(config_duration_ms(cfg, CFG_FORGE_TIMEOUT),
				 ok[i].ms);
		config_free(cfg);
	}
	cfg = load_ok("[milter]\ntimeout = 1d\n[state]\nbusy_timeout = 0\n");
	assert_int_equal(config_duration_ms(cfg, CFG_MILTER_TIMEOUT), 86400000);
	assert_int_equal(config_duration_ms(cfg, CFG_STATE_BUSY_TIMEOUT), 0);
	config_free(cfg);

	check_value("forge", "timeout", "0", "0 is below the minimum 1s");
	check_value("forge", "timeout", "999ms",
		    "999ms is below the minimum 1s");
	check_value("forge", "timeout", "2h", "2h is above the maximum 1h");
	check_value("forge", "connect_timeout", "301",
		    "301 is above the maximum 5m");
	check_value("forge", "retry_base", "5ms",
		    "5ms is below the minimum 10ms");
	check_value("milter", "timeout", "25h", "25h is above the maximum 1d");
	check_value("forge", "timeout", "abc",
		    "\"abc\" is not a duration (500ms, 30s, 5m, 2h, 1d; "
		    "plain seconds)");
	check_value("forge", "timeout", "-1s",
		    "\"-1s\" is not a duration (500ms, 30s, 5m, 2h, 1d; "
		    "plain seconds)");
	check_value("forge", "timeout", "5 m",
		    "\"5 m\" is not a duration (500ms, 30s, 5m, 2h, 1d; "
		    "plain seconds)");
	check_value("forge", "timeout", "5M",
		    "\"5M\" is not a duration (500ms, 30s, 5m, 2h, 1d; "
		    "plain seconds)");
	check_value("forge", "timeout", "99999999999999999999",
		    "99999999999999999999 is too large");
	check_value("forge", "timeout", "999999999999999d",
		    "999999999999999d is too large");
	check_value("forge", "timeout", "", "must not be empty");
}

/* What grows is pruned by default: dead/ after 90 days, the mail
 * archive after a year; 0 keeps for ever. */
static void test_retention(void **state)
{
	struct config *cfg = load_ok("");

	(void)state;
	assert_int_equal(config_duration_ms(cfg, CFG_SPOOL_KEEP_DONE),
			 30LL * 86400000);
	assert_int_equal(config_duration_ms(cfg, CFG_SPOOL_KEEP_DEAD),
			 90LL * 86400000);
	assert_int_equal(config_duration_ms(cfg, CFG_STATE_ARCHIVE_KEEP),
			 365LL * 86400000);
	config_free(cfg);
	cfg = load_ok("[spool]\nkeep_dead = 0\n[state]\narchive_keep = 0\n");
	assert_int_equal(config_duration_ms(cfg, CFG_SPOOL_KEEP_DEAD), 0);
	assert_int_equal(config_duration_ms(cfg, CFG_STATE_ARCHIVE_KEEP), 0);
	config_free(cfg);
	check_value("spool", "keep_dead", "3650d", NULL);
	check_value("spool", "keep_dead", "3651d",
		    "3651d is above the maximum 3650d");
	check_value("state", "archive_keep", "36501d",
		    "36501d is above the maximum 36500d");
}

static void test_sizes(void **state)
{
	static const struct {
		const char *in;
		size_t bytes;
	} ok[] = {
		{ "65536", 65536 },
		{ "64k", 65536 },
		{ "64K", 65536 },
		{ "10M", 10 * 1024 * 1024 },
		{ "10m", 10 * 1024 * 1024 },
		{ "100M", 100 * 1024 * 1024 },
	};
	struct config *cfg;
	char text[256];
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(text, sizeof(text),
			 "[milter]\nmax_message_size = %s\n", ok[i].in);
		cfg = load_ok(text);
		assert_int_equal(config_size(cfg, CFG_MILTER_MAX_MESSAGE_SIZE),
				 ok[i].bytes);
		config_free(cfg);
	}
	check_value("milter", "max_message_size", "1G",
		    "1G is above the maximum 100M");
	check_value("milter", "max_message_size", "65535",
		    "65535 is below the minimum 64k");
	check_value("forge", "max_response_size", "512k", NULL);
	check_value("webhook", "max_request_size", "1k",
		    "1k is below the minimum 4k");
	check_value("milter", "max_message_size", "10MB",
		    "\"10MB\" is not a size (512k, 10M, 1G; plain bytes)");
	check_value("milter", "max_message_size", "1.5M",
		    "\"1.5M\" is not a size (512k, 10M, 1G; plain bytes)");
	check_value("milter", "max_message_size", "99999999999G",
		    "99999999999G is too large");
}

static void test_ints_bools_enums(void **state)
{
	static const char *const yes[] = { "yes", "YES", "true", "on", "1" };
	static const char *const no[] = { "no", "False", "off", "0" };
	struct config *cfg;
	char text[256];
	size_t i;

	check_value("forge", "max_retries", "100", NULL);
	check_value("forge", "max_retries", "101",
		    "101 is above the maximum 100");
	check_value("forge", "max_retries", "-1", "-1 is below the minimum 0");
	check_value("forge", "max_retries", "5x", "\"5x\" is not an integer");
	check_value("forge", "max_retries", "99999999999999999999",
		    "99999999999999999999 is too large");
	check_value("outbound", "max_series", "0", "0 is below the minimum 1");
	check_value("spool", "max_records", "1000001",
		    "1000001 is above the maximum 1000000");

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		snprintf(text, sizeof(text), "[outbound]\ncc_author = %s\n",
			 yes[i]);
		cfg = load_ok(text);
		assert_true(config_bool(cfg, CFG_OUTBOUND_CC_AUTHOR));
		config_free(cfg);
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		snprintf(text, sizeof(text), "[outbound]\nskip_drafts = %s\n",
			 no[i]);
		cfg = load_ok(text);
		assert_false(config_bool(cfg, CFG_OUTBOUND_SKIP_DRAFTS));
		config_free(cfg);
	}
	check_value("outbound", "cc_author", "maybe",
		    "\"maybe\" is not a boolean (yes/no, true/false, "
		    "on/off, 1/0)");
	check_value("outbound", "threading", "sideways",
		    "\"sideways\" is not one of: shallow, deep, none");
	check_value("log", "level", "error",
		    "\"error\" is not one of: debug, info, notice, warning, "
		    "err");
	check_value("inbound", "approval_policy", "", "must not be empty");
}

static void test_strings(void **state)
{
	char longname[128];

	check_value("bridge", "address", "a.b+c@lists.example.org", NULL);
	check_value("bridge", "address", "bridge@localhost", NULL);
	check_value("bridge", "address", "bridge",
		    "\"bridge\" is not an email address (local@domain)");
	check_value("bridge", "address", "a..b@example.org",
		    "\"a..b@example.org\" is not an email address "
		    "(local@domain)");
	check_value("bridge", "address", "<a@example.org>",
		    "\"<a@example.org>\" is not an email address "
		    "(local@domain)");
	check_value("bridge", "address", "a@-example.org",
		    "\"a@-example.org\" is not an email address "
		    "(local@domain)");
	check_value("bridge", "address", "", "must not be empty");
	/* [inbound] bots: addresses, commas or blanks between them */
	check_value("inbound", "bots",
		    "ci@example.org, lint@example.org bot+x@example.org", NULL);
	check_value("inbound", "bots", "", NULL);
	check_value("bridge", "domain", "bridge.example.org", NULL);
	check_value("bridge", "domain", "exa_mple.org",
		    "\"exa_mple.org\" is not a domain name");
	check_value("bridge", "domain", "example..org",
		    "\"example..org\" is not a domain name");

	check_value("forge", "url", "http://127.0.0.1:8080/gitlab", NULL);
	check_value("forge", "url", "https://[::1]:8443", NULL);
	check_value("forge", "url", "ftp://gitlab.example.org",
		    "\"ftp://gitlab.example.org\" is not a valid URL: "
		    "scheme must be one of https, http");
	check_value("forge", "url", "https://user:pw@gitlab.example.org",
		    "\"https://user:pw@gitlab.example.org\" is not a valid "
		    "URL: must not contain a user name or password");
	check_value("forge", "url", "https://gitlab.example.org/?a=b",
		    "\"https://gitlab.example.org/?a=b\" is not a valid URL: "
		    "must not have a query or a fragment");
	check_value("forge", "url", "https://",
		    "\"https://\" is not a valid URL: has no valid "
		    "host[:port]");
	check_value("forge", "url", "https://gitlab.example.org:0",
		    "\"https://gitlab.example.org:0\" is not a valid URL: "
		    "has no valid host[:port]");

	check_value("smtp", "url", "sendmail", NULL);
	check_value("smtp", "url", "smtp://localhost:25", NULL);
	check_value("smtp", "url", "https://mail.example.org",
		    "\"https://mail.example.org\" is not a valid URL: scheme "
		    "must be one of smtp, smtps (or sendmail)");

	check_value("state", "path", "state.db",
		    "\"state.db\" is not an absolute path");
	check_value("state", "path", "", "must not be empty");
	check_value("forge", "ca_file", "", NULL);

	check_value("milter", "socket", "unix:/run/m.sock", NULL);
	check_value("milter", "socket", "local:/run/m.sock", NULL);
	check_value("milter", "socket", "inet:8891", NULL);
	check_value("milter", "socket", "inet6:8891@::1", NULL);
	check_value("milter", "socket", "unix:run/m.sock",
		    "\"unix:run/m.sock\" is not a milter socket (unix:/path, "
		    "inet:port@host, inet6:port@host)");
	check_value("milter", "socket", "inet:99999@localhost",
		    "\"inet:99999@localhost\" is not a milter socket "
		    "(unix:/path, inet:port@host, inet6:port@host)");

	check_value("webhook", "listen", "0.0.0.0:8080", NULL);
	check_value("webhook", "listen", "[::]:8080", NULL);
	check_value("webhook", "listen", "8080", "\"8080\" is not host:port");
	check_value("webhook", "listen", "localhost:http",
		    "\"localhost:http\" is not host:port");

	check_value("inbound", "nak_label", "Acks::NACKed \xc3\xa9", NULL);
	check_value("inbound", "nak_label", "a\x01z",
		    "contains a control character");
	memset(longname, 'x', 65);
	longname[65] = '\0';
	check_value("bridge", "name", longname, "longer than 64 bytes");
}

static void test_every_error_kind(void **state)
{
	static const char text[] = "[forge]\n" /* 10 */
				   "timeout = 0\n" /* 11 */
				   "tiemout = 5s\n" /* 12 */
				   "url = https://other.example.org\n" /* 13 */
				   "max_retries = many\n" /* 14 */
				   "just some words\n" /* 15 */
				   "[nosuch]\n" /* 16 */
				   "ignored = in an unknown section\n" /* 17 */
				   "[forge \"x\"]\n" /* 18 */
				   "[project]\n" /* 19 */
				   "[project \"noslash\"]\n" /* 20 */
				   "[bridge\n" /* 21 */
				   "[project \"g/p\"]\n" /* 22 */
				   "timeout = 5s\n" /* 23 */
				   "colour = blue\n" /* 24 */
				   "enabled = yes\n" /* 25 */
				   "enabled = no\n" /* 26 */
				   "[smtp]\n" /* 27 */
				   "username = bridge\n" /* 28 */
				   "[webhook]\n" /* 29 */
				   "enabled = yes\n" /* 30 */
				   "[forge]\n" /* 31 */
				   "retry_base = 10m\n" /* 32 */
				   "retry_max = 1m\n"; /* 33 */
	const char *want[] = {
		"t.conf:11: [forge] timeout: 0 is below the minimum 1s",
		"t.conf:12: [forge] tiemout: unknown key",
		"t.conf:13: [forge] url: duplicate key, first set on line 6",
		"t.conf:14: [forge] max_retries: \"many\" is not an integer",
		"t.conf:15: [forge]: malformed line: expected \"key = value\"",
		"t.conf:16: [nosuch]: unknown section",
		"t.conf:18: [forge \"x\"]: this section takes no name",
		"t.conf:19: [project]: needs a project path: "
		"[project \"group/name\"]",
		"t.conf:20: [project \"noslash\"]: not a GitLab project "
		"path (group/name)",
		"t.conf:21: malformed section header",
		"t.conf:23: [project \"g/p\"] timeout: cannot be set per "
		"project",
		"t.conf:24: [project \"g/p\"] colour: unknown key",
		"t.conf:26: [project \"g/p\"] enabled: duplicate key, first "
		"set on line 25",
		"t.conf:32: [forge] retry_base: 10m is above the maximum 1m",
		"t.conf:28: [smtp] username: needs password_file",
		"t.conf:30: [webhook] enabled: needs secret_file",
		NULL
	};
	struct strlist errs = STRLIST_INIT;
	struct config *cfg;

	expect_errors(text, want);

	/* err_msg() has the first error and the count of the others. */
	assert_int_equal(load(&cfg, NULL, "[forge]\ntimeout = 0\nx = 1\n"),
			 PB_EINVAL);
	assert_null(cfg);
	assert_string_equal(err_msg(),
			    "t.conf:2: [forge] timeout: 0 is below the minimum "
			    "1s (and 5 more)");
	/* Errors are appended after what the list holds. */
	strlist_push(&errs, "earlier");
	assert_int_equal(load(&cfg, &errs, ""), PB_EINVAL);
	assert_string_equal(errs.items[0], "earlier");
	assert_string_equal(errs.items[1],
			    "t.conf: [bridge] address: required, not set");
	assert_string_equal(errs.items[2],
			    "t.conf: [bridge] domain: required, not set");
	assert_string_equal(errs.items[3],
			    "t.conf: [forge] url: required, not set");
	assert_string_equal(errs.items[4],
			    "t.conf: [forge] token_file: required, not set");
	assert_int_equal(errs.nr, 5);
	strlist_release(&errs);
}

static void test_cross_checks(void **state)
{
	const char *retry[] = {
		"t.conf:12: [forge] retry_base: 2s is above retry_max 1s", NULL
	};
	const char *pass[] = {
		"t.conf:11: [smtp] password_file: needs username", NULL
	};
	const char *before[] = { "t.conf:1: key: set before any [section]",
				 NULL };
	struct strlist errs = STRLIST_INIT;
	struct config *cfg;

	/* The later of the two lines is blamed. */
	expect_errors("[forge]\nretry_max = 1s\nretry_base = 2s\n", retry);
	{
		const char *want[] = {
			"t.conf:12: [forge] retry_max: 1s is below "
			"retry_base 2s",
			NULL
		};

		expect_errors("[forge]\nretry_base = 2s\nretry_max = 1s\n",
			      want);
	}
	expect_errors("[smtp]\npassword_file = /etc/pw\n", pass);
	/* STARTTLS is for smtp://: neither sendmail nor smtps://. */
	{
		const char *want[] = {
			"t.conf:11: [smtp] starttls: needs an smtp:// url "
			"(smtps:// is TLS from the start)",
			NULL
		};

		expect_errors("[smtp]\nstarttls = yes\n", want);
		expect_errors("[smtp]\nstarttls = yes\n"
			      "url = smtps://mail.example.org\n",
			      want);
		config_free(load_ok("[smtp]\nstarttls = yes\n"
				    "url = smtp://mail.example.org:587\n"
				    "ca_file = /etc/ssl/mail-ca.pem\n"));
	}
	/* Attestation: a key to sign with, and no key left unused. */
	{
		const char *nokey[] = {
			"t.conf:11: [outbound] attest: needs attest_key_file",
			NULL
		};
		const char *unused[] = {
			"t.conf:11: [outbound] attest_key_file: is used only "
			"with attest = yes",
			NULL
		};
		struct config *c;

		expect_errors("[outbound]\nattest = yes\n", nokey);
		expect_errors("[outbound]\nattest_key_file = /etc/pb.key\n",
			      unused);
		c = load_ok("[outbound]\nattest = yes\n"
			    "attest_key_file = /etc/pb.key\n"
			    "attest_selector = 2026\n");
		assert_true(config_bool(c, CFG_OUTBOUND_ATTEST));
		assert_string_equal(config_str(c, CFG_OUTBOUND_ATTEST_SELECTOR),
				    "2026");
		config_free(c);
	}
	/* A bad value spares the follow-up complaints about it. */
	{
		const char *want[] = {
			"t.conf:11: [smtp] password_file: \"pw\" is not an "
			"absolute path",
			NULL
		};

		expect_errors("[smtp]\npassword_file = pw\nusername = u\n",
			      want);
	}
	assert_int_equal(load(&cfg, &errs, "key = value\n" BASE), PB_EINVAL);
	assert_int_equal(errs.nr, 1);
	assert_string_equal(errs.items[0], before[0]);
	strlist_release(&errs);
	/* A line that is not even a key. */
	assert_int_equal(load(&cfg, &errs, "= x\n" BASE), PB_EINVAL);
	assert_string_equal(errs.items[0],
			    "t.conf:1: malformed line: expected \"[section]\" "
			    "or \"key = value\"");
	strlist_release(&errs);
}

static void test_limits(void **state)
{
	struct strlist errs = STRLIST_INIT;
	struct buf text = BUF_INIT(PB_CONFIG_FILE_MAX + 100);
	struct config *cfg;
	size_t i;

	/* A NUL byte and an overlong line, each reported at its line. */
	buf_adds(&text, BASE);
	buf_add(&text, "[bridge]\nname = a\0b\n", 20);
	buf_adds(&text, "name = ");
	for (i = 0; i < PB_CONFIG_LINE_MAX; i++)
		buf_addch(&text, 'x');
	buf_addch(&text, '\n');
	assert_int_equal(config_load_mem(&cfg, &errs, "t.conf", text.data,
					 text.len),
			 PB_EINVAL);
	assert_int_equal(errs.nr, 2);
	assert_string_equal(errs.items[0],
			    "t.conf:11: line contains a NUL byte");
	assert_string_equal(errs.items[1],
			    "t.conf:12: line longer than 4096 bytes");
	strlist_release(&errs);

	/* The file size cap. */
	buf_reset(&text);
	while (text.len <= PB_CONFIG_FILE_MAX)
		buf_adds(&text, "# padding padding padding padding\n");
	assert_int_equal(config_load_mem(&cfg, &errs, "t.conf", text.data,
					 text.len),
			 PB_EINVAL);
	assert_int_equal(errs.nr, 1);
	assert_string_equal(errs.items[0],
			    "t.conf: larger than the maximum 1M");
	strlist_release(&errs);

	/* Errors stop being collected at some point. */
	buf_reset(&text);
	for (i = 0; i < 2000; i++)
		buf_adds(&text, "[nosuch]\n");
	assert_int_equal(config_load_mem(&cfg, &errs, "t.conf", text.data,
					 text.len),
			 PB_EINVAL);
	assert_int_equal(errs.nr, 1001);
	assert_string_equal(errs.items[1000],
			    "t.conf: too many errors, stopping");
	strlist_release(&errs);
	buf_release(&text);
}

static void test_projects(void **state)
{
	const struct config_project *p;
	struct config *cfg;

	cfg = load_ok("[project \"linux/net\"]\n"
		      "list_address = netdev@example.org\n"
		      "threading = deep\n"
		      "max_series = 300\n"
		      "cover_open_threads = no\n"
		      "mail_resolved = no\n"
		      "cover_reviewers = no\n"
		      "cover_signatures = no\n"
		      "mail_reviews_in = no\n"
		      "[project \"a/b\"]\n"
		      "[project \"group/sub/name.js\"]\n"
		      "enabled = no\n"
		      "[project \"linux/net\"]\n"
		      "email_submissions = off\n"
		      "approval_policy = forge\n"
		      "bots = ci@net.example.org\n"
		      "owners_file = /srv/net/owners.yaml\n");
	assert_int_equal(config_project_count(cfg), 3);
	assert_string_equal(config_project_name(config_project_at(cfg, 0)),
			    "a/b");
	assert_string_equal(config_project_name(config_project_at(cfg, 1)),
			    "group/sub/name.js");
	assert_string_equal(config_project_name(config_project_at(cfg, 2)),
			    "linux/net");

	assert_int_equal(config_project_get(&p, cfg, "linux/net"), 0);
	assert_string_equal(config_project_name(p), "linux/net");
	assert_string_equal(config_project_str(p, CFG_BRIDGE_LIST_ADDRESS),
			    "netdev@example.org");
	assert_int_equal(config_project_enum(p, CFG_OUTBOUND_THREADING),
			 CONFIG_THREADING_DEEP);
	assert_int_equal(config_project_int(p, CFG_OUTBOUND_MAX_SERIES), 300);
	assert_int_equal(config_project_enum(p, CFG_INBOUND_APPROVAL_POLICY),
			 CONFIG_APPROVAL_FORGE);
	assert_string_equal(config_project_str(p, CFG_INBOUND_OWNERS_FILE),
			    "/srv/net/owners.yaml");
	assert_string_equal(config_project_str(p, CFG_INBOUND_BOTS),
			    "ci@net.example.org");
	assert_true(config_project_bool(p, CFG_PROJECT_ENABLED));
	assert_false(config_project_bool(p, CFG_OUTBOUND_COVER_OPEN_THREADS));
	assert_false(config_project_bool(p, CFG_OUTBOUND_MAIL_RESOLVED));
	assert_false(config_project_bool(p, CFG_OUTBOUND_COVER_REVIEWERS));
	assert_false(config_project_bool(p, CFG_OUTBOUND_COVER_SIGNATURES));
	assert_false(config_project_bool(p, CFG_OUTBOUND_MAIL_REVIEWS_IN));
	assert_int_equal(config_project_enum(p, CFG_PROJECT_EMAIL_SUBMISSIONS),
			 CONFIG_SUBMISSIONS_OFF);
	/* Inherited: from the global section, else the default. */
	assert_int_equal(config_project_get(&p, cfg, "a/b"), 0);
	assert_string_equal(config_project_str(p, CFG_INBOUND_BOTS), "");
	assert_string_equal(config_project_str(p, CFG_BRIDGE_LIST_ADDRESS),
			    "list@example.org");
	assert_string_equal(config_project_str(p, CFG_INBOUND_OWNERS_FILE),
			    "/etc/patchbridge/owners.yaml");
	assert_string_equal(config_project_str(p, CFG_OUTBOUND_THREADING),
			    "shallow");
	assert_true(config_project_bool(p, CFG_OUTBOUND_SKIP_DRAFTS));
	/* What the list is told of threads and reviews: on by default. */
	assert_true(config_project_bool(p, CFG_OUTBOUND_COVER_OPEN_THREADS));
	assert_true(config_project_bool(p, CFG_OUTBOUND_MAIL_RESOLVED));
	assert_true(config_project_bool(p, CFG_OUTBOUND_COVER_REVIEWERS));
	assert_true(config_project_bool(p, CFG_OUTBOUND_COVER_SIGNATURES));
	assert_true(config_project_bool(p, CFG_OUTBOUND_MAIL_REVIEWS_IN));
	assert_int_equal(config_project_enum(p, CFG_PROJECT_EMAIL_SUBMISSIONS),
			 CONFIG_SUBMISSIONS_VERIFIED);
	assert_int_equal(config_project_get(&p, cfg, "group/sub/name.js"), 0);
	assert_false(config_project_bool(p, CFG_PROJECT_ENABLED));
	/* A project without a section is not bridged. */
	assert_int_equal(config_project_get(&p, cfg, "x/y"), PB_ENOTFOUND);
	assert_null(p);
	assert_true(config_bool(cfg, CFG_PROJECT_ENABLED));
	config_free(cfg);

	/* Pipelines: mailed by default, not waited for; the longest wait's
	 * default and bounds. */
	cfg = load_ok("[project \"g/ci\"]\n"
		      "wait_for_pipeline = yes\n"
		      "pipeline_wait_max = 30m\n"
		      "[project \"g/quiet\"]\n"
		      "mail_pipelines = no\n");
	assert_int_equal(config_project_get(&p, cfg, "g/ci"), 0);
	assert_true(config_project_bool(p, CFG_PROJECT_MAIL_PIPELINES));
	assert_true(config_project_bool(p, CFG_PROJECT_WAIT_FOR_PIPELINE));
	assert_int_equal(
		config_project_duration_ms(p, CFG_PROJECT_PIPELINE_WAIT_MAX),
		30 * 60 * 1000);
	assert_int_equal(config_project_get(&p, cfg, "g/quiet"), 0);
	assert_false(config_project_bool(p, CFG_PROJECT_MAIL_PIPELINES));
	assert_false(config_project_bool(p, CFG_PROJECT_WAIT_FOR_PIPELINE));
	assert_int_equal(
		config_project_duration_ms(p, CFG_PROJECT_PIPELINE_WAIT_MAX),
		2 * 3600 * 1000);
	config_free(cfg);
	{
		const char *want[] = {
			"t.conf:11: [project \"g/x\"] pipeline_wait_max: "
			"0 is below the minimum 1s",
			"t.conf:13: [project \"g/y\"] pipeline_wait_max: "
			"8d is above the maximum 7d",
			NULL
		};

		expect_errors("[project \"g/x\"]\npipeline_wait_max = 0\n"
			      "[project \"g/y\"]\npipeline_wait_max = 8d\n",
			      want);
	}

	/* Series posted to the list: the wait before a reminder and the
	 * limits, their defaults (email_max_patches as [outbound]
	 * max_series) and bounds. */
	cfg = load_ok("[project \"g/mail\"]\n"
		      "email_series_wait = 10m\n"
		      "email_max_patches = 20\n"
		      "email_max_bytes = 1M\n"
		      "email_series_per_hour = 3\n"
		      "[project \"g/plain\"]\n");
	assert_int_equal(config_project_get(&p, cfg, "g/mail"), 0);
	assert_int_equal(
		config_project_duration_ms(p, CFG_PROJECT_EMAIL_SERIES_WAIT),
		10 * 60 * 1000);
	assert_int_equal(config_project_int(p, CFG_PROJECT_EMAIL_MAX_PATCHES),
			 20);
	assert_int_equal(config_project_size(p, CFG_PROJECT_EMAIL_MAX_BYTES),
			 1024 * 1024);
	assert_int_equal(
		config_project_int(p, CFG_PROJECT_EMAIL_SERIES_PER_HOUR), 3);
	assert_int_equal(config_project_get(&p, cfg, "g/plain"), 0);
	assert_int_equal(
		config_project_duration_ms(p, CFG_PROJECT_EMAIL_SERIES_WAIT),
		3600 * 1000);
	assert_int_equal(config_project_int(p, CFG_PROJECT_EMAIL_MAX_PATCHES),
			 config_int(cfg, CFG_OUTBOUND_MAX_SERIES));
	assert_int_equal(config_project_size(p, CFG_PROJECT_EMAIL_MAX_BYTES),
			 20 * 1024 * 1024);
	assert_int_equal(
		config_project_int(p, CFG_PROJECT_EMAIL_SERIES_PER_HOUR), 10);
	config_free(cfg);
	check_value("project \"g/x\"", "email_series_wait", "0",
		    "0 is below the minimum 1s");
	check_value("project \"g/x\"", "email_max_patches", "1001",
		    "1001 is above the maximum 1000");
	check_value("project \"g/x\"", "email_max_bytes", "1k",
		    "1k is below the minimum 64k");
	check_value("project \"g/x\"", "email_series_per_hour", "0",
		    "0 is below the minimum 1");

	/* Each enabled project needs a list and, for owners, an owners file. */
	{
		static const char text[] =
			"[project \"g/ok\"]\n" /* 10 */
			"[project \"g/off\"]\n" /* 11 */
			"enabled = no\n" /* 12 */
			"[project \"g/bad\"]\n" /* 13 */
			"list_address = not-an-address\n"; /* 14 */
		const char *want[] = {
			"t.conf:14: [project \"g/bad\"] list_address: "
			"\"not-an-address\" is not an email address "
			"(local@domain)",
			NULL
		};
		struct strlist errs = STRLIST_INIT;

		expect_errors(text, want);
		assert_int_equal(
			load(&cfg, &errs,
			     "[bridge]\naddress = b@example.org\n"
			     "domain = example.org\n"
			     "[forge]\nurl = https://gitlab.example.org\n"
			     "token_file = /t\n"
			     "[project \"g/a\"]\n"
			     "[project \"g/b\"]\n"
			     "list_address = l@example.org\n"
			     "approval_policy = none\n"),
			PB_EINVAL);
		assert_int_equal(errs.nr, 2);
		assert_string_equal(errs.items[0],
				    "t.conf:7: [project \"g/a\"] list_address: "
				    "not set here nor in [bridge]");
		assert_string_equal(errs.items[1],
				    "t.conf:7: [project \"g/a\"] owners_file: "
				    "approval_policy is owners but no "
				    "owners_file is set here nor in [inbound]");
		strlist_release(&errs);
	}
	{
		const char *want[] = {
			"t.conf:10: [project \"g/-x\"]: not a GitLab project "
			"path (group/name)",
			"t.conf:11: [project \"g/x/\"]: not a GitLab project "
			"path (group/name)",
			"t.conf:12: [project \"g//x\"]: not a GitLab project "
			"path (group/name)",
			"t.conf:13: [project \"a\\\"b/c\"]: not a GitLab "
			"project path (group/name)",
			"t.conf:14: [project \"g/\\\\\"]: not a GitLab "
			"project path (group/name)",
			"t.conf:15: [project \"g/.x\"]: not a GitLab project "
			"path (group/name)",
			NULL
		};

		expect_errors("[project \"g/-x\"]\n[project \"g/x/\"]\n"
			      "[project \"g//x\"]\n[project \"a\\\"b/c\"]\n"
			      "[project \"g/\\\\\"]\n[project \"g/.x\"]\n",
			      want);
	}
}

static void test_dump(void **state)
{
	struct buf out = BUF_INIT(CONFIG_DUMP_MAX);
	struct config *cfg;

	cfg = load_ok("[outbound]\n"
		      "poll_interval = 120\n"
		      "subject_prefix = \"RFC # 1\"\n"
		      "[project \"g/a\"]\n"
		      "threading = none\n"
		      "[project \"g/b\"]\n");
	assert_int_equal(config_dump(&out, cfg, CONFIG_DUMP_SET_ONLY), 0);
	assert_string_equal(out.data,
			    "[bridge] address = bridge@example.org\n"
			    "[bridge] domain = example.org\n"
			    "[bridge] list_address = list@example.org\n"
			    "[forge] url = https://gitlab.example.org\n"
			    "[forge] token_file = /etc/patchbridge/token\n"
			    "[outbound] poll_interval = 2m\n"
			    "[outbound] subject_prefix = \"RFC # 1\"\n"
			    "[inbound] owners_file = "
			    "/etc/patchbridge/owners.yaml\n"
			    "[project \"g/a\"] threading = none\n"
			    "[project \"g/b\"]\n");

	buf_reset(&out);
	assert_int_equal(config_dump(&out, cfg, 0), 0);
	/* Every effective value, defaults included, in the file's units. */
	assert_non_null(strstr(out.data, "[bridge] name = patchbridge\n"));
	assert_non_null(strstr(out.data, "[forge] timeout = 1m\n"));
	assert_non_null(strstr(out.data, "[forge] retry_base = 500ms\n"));
	assert_non_null(strstr(out.data, "[forge] ca_file =\n"));
	assert_non_null(strstr(out.data, "[forge] max_response_size = 16M\n"));
	assert_non_null(strstr(out.data, "[milter] socket = "
					 "unix:/var/spool/postfix/patchbridge/"
					 "milter.sock\n"));
	assert_non_null(strstr(out.data, "[outbound] poll_interval = 2m\n"));
	assert_non_null(
		strstr(out.data, "[inbound] nak_label = Acks::NACKed\n"));
	assert_non_null(strstr(out.data, "[project \"g/a\"] threading = none\n"
					 "[project \"g/a\"] cover_letter_single"
					 " = no\n"));
	assert_non_null(strstr(out.data, "[project \"g/b\"] list_address = "
					 "list@example.org\n"));
	assert_non_null(strstr(out.data, "[project \"g/b\"] enabled = yes\n"));
	assert_null(strstr(out.data, "[project] "));
	/* One line per global parameter, one per project parameter. */
	{
		size_t lines = 0, i, global = 0, per = 0;

		for (i = 0; i < out.len; i++)
			lines += out.data[i] == '\n';
		for (i = 0; i < CFG__COUNT; i++) {
			const struct config_param *p = config_param(i);

			if (strcmp(p->section, "project"))
				global++;
			if (!strcmp(p->section, "project") ||
			    (p->flags & CONFIG_PER_PROJECT))
				per++;
		}
		assert_int_equal(lines, global + 2 * per);
	}
	config_free(cfg);

	/* The table's defaults are written as the dump writes them. */
	{
		size_t i;

		cfg = load_ok("");
		buf_reset(&out);
		assert_int_equal(config_dump(&out, cfg, 0), 0);
		for (i = 0; i < CFG__COUNT; i++) {
			const struct config_param *p = config_param(i);
			char line[512];

			if (!strcmp(p->section, "project") || !p->def[0])
				continue;
			snprintf(line, sizeof(line), "[%s] %s = %s\n",
				 p->section, p->key, p->def);
			if (!strstr(out.data, line))
				fail_msg("default not canonical: %s", line);
		}
		config_free(cfg);
	}

	/* The cap on the output. */
	{
		struct buf small = BUF_INIT(100);

		cfg = load_ok("");
		assert_int_equal(config_dump(&small, cfg, 0), PB_ELIMIT);
		config_free(cfg);
		buf_release(&small);
	}
	buf_release(&out);
}

static void test_files(void **state)
{
	const char *src = getenv("PB_SRC_DIR");
	const char *tmp = getenv("PB_TEST_TMP");
	struct strlist errs = STRLIST_INIT;
	struct config *cfg;
	char path[1024];

	if (!tmp)
		tmp = "/tmp";
	snprintf(path, sizeof(path), "%s/no-such-dir/patchbridge.conf", tmp);
	assert_int_equal(config_load(&cfg, &errs, path), PB_ENOTFOUND);
	assert_null(cfg);
	assert_int_equal(errs.nr, 1);
	assert_non_null(strstr(errs.items[0], path));
	strlist_release(&errs);

	/* A file over the cap is a configuration error. */
	{
		struct buf big = BUF_INIT(PB_CONFIG_FILE_MAX + 100);

		while (big.len <= PB_CONFIG_FILE_MAX)
			buf_adds(&big, "#\n");
		snprintf(path, sizeof(path), "%s/config-big.%d.conf", tmp,
			 (int)getpid());
		assert_int_equal(
			file_write_atomic(path, big.data, big.len, 0600), 0);
		assert_int_equal(config_load(&cfg, &errs, path), PB_EINVAL);
		assert_int_equal(errs.nr, 1);
		assert_non_null(
			strstr(errs.items[0], ": larger than the maximum 1M"));
		strlist_release(&errs);
		unlink(path);
		buf_release(&big);
	}

	/* The shipped example is valid (copied to a directory of ours: a
	 * checkout's modes are not the test's to choose). */
	if (src) {
		struct buf ex = BUF_INIT(PB_CONFIG_FILE_MAX);

		snprintf(path, sizeof(path),
			 "%s/contrib/patchbridge.conf.example", src);
		assert_int_equal(file_read(&ex, path), 0);
		snprintf(path, sizeof(path), "%s/config-example.%d.conf", tmp,
			 (int)getpid());
		assert_int_equal(file_write_atomic(path, ex.data, ex.len, 0644),
				 0);
		assert_int_equal(config_load(&cfg, &errs, path), 0);
		assert_string_equal(config_file(cfg), path);
		assert_true(config_project_count(cfg) >= 1);
		config_free(cfg);
		unlink(path);
		buf_release(&ex);
	}
}

/* Load path and expect it refused as untrusted, with parts of the
 * message. */
static void expect_untrusted(const char *path, const char *part1,
			     const char *part2)
{
	struct strlist errs = STRLIST_INIT;
	struct config *cfg = (struct config *)1;

	assert_int_equal(config_load(&cfg, &errs, path), PB_EINVAL);
	assert_null(cfg);
	assert_int_equal(errs.nr, 1);
	if (!strstr(errs.items[0], part1) || !strstr(errs.items[0], part2))
		fail_msg("message: %s", errs.items[0]);
	strlist_release(&errs);
}

/*
 * Whoever may write the configuration may change "[forge] url" and get
 * the admin token sent to a host of theirs.  A file, or a directory
 * above it, that others than root and this user may write is refused,
 * as OpenSSH's StrictModes does; a sticky directory (/tmp) is fine when
 * what is in it is ours.
 */
static void test_untrusted_files(void **state)
{
	const char *tmp = getenv("PB_TEST_TMP");
	static const char evil[] =
		"[bridge]\naddress = bridge@example.org\ndomain = example.org\n"
		"list_address = list@example.org\n[forge]\n"
		"url = https://gitlab.attacker.example\n"
		"token_file = /etc/patchbridge/token\n";
	struct strlist errs = STRLIST_INIT;
	char dir[700], sub[800], path[900], link[900];
	struct config *cfg;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/config-perm.XXXXXX", tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/patchbridge.conf", dir);
	assert_int_equal(file_write_atomic(path, evil, strlen(evil), 0644), 0);
	assert_int_equal(config_load(&cfg, &errs, path), 0);
	config_free(cfg);

	/* World-writable, then group-writable. */
	assert_int_equal(chmod(path, 0666), 0);
	expect_untrusted(path, "patchbridge.conf is writable by", "mode 0666");
	assert_int_equal(chmod(path, 0664), 0);
	expect_untrusted(path, "writable by its group", "chmod go-w");
	assert_int_equal(chmod(path, 0640), 0);

	/* A directory above it that others may write, sticky or not. */
	assert_int_equal(chmod(dir, 0777), 0);
	expect_untrusted(path, "the directory", "is writable by");
	assert_int_equal(chmod(dir, 01777), 0);
	assert_int_equal(config_load(&cfg, &errs, path), 0);
	config_free(cfg);
	assert_int_equal(chmod(dir, 0700), 0);

	/* Through a link: the real file's directories count. */
	snprintf(sub, sizeof(sub), "%s/open", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(chmod(sub, 0777), 0);
	snprintf(link, sizeof(link), "%s/open/real.conf", dir);
	assert_int_equal(file_write_atomic(link, evil, strlen(evil), 0644), 0);
	snprintf(path, sizeof(path), "%s/linked.conf", dir);
	assert_int_equal(symlink(link, path), 0);
	expect_untrusted(path, "/open above it", "and others");

	/* Another owner. */
	if (geteuid() == 0) {
		assert_int_equal(chown(link, 64001, 0), 0);
		assert_int_equal(chmod(sub, 0755), 0);
		expect_untrusted(path, "is owned by uid 64001",
				 "must be owned by root");
	}
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

static void test_doc_markdown(void **state)
{
	struct buf out = BUF_INIT(1024 * 1024);
	size_t i;

	assert_int_equal(configdoc_markdown(&out), 0);
	assert_non_null(strstr(out.data, "### [forge]\n"));
	assert_non_null(strstr(out.data, "### [project \"group/name\"]\n"));
	assert_non_null(strstr(out.data,
			       "| `timeout` | duration | `1m` | 1s to 1h | "));
	assert_non_null(strstr(out.data, "| `url` | url | required | "));
	assert_non_null(strstr(out.data, "| `threading` | enum | "
					 "`[outbound] threading` | "
					 "`shallow`, `deep`, `none` | "));
	for (i = 0; i < CFG__COUNT; i++) {
		const struct config_param *p = config_param(i);
		char row[128];

		snprintf(row, sizeof(row), "| `%s` | ", p->key);
		assert_non_null(strstr(out.data, row));
	}
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_valid_file),
		cmocka_unit_test(test_quoting),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_retention),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_ints_bools_enums),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_every_error_kind),
		cmocka_unit_test(test_cross_checks),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_projects),
		cmocka_unit_test(test_dump),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_untrusted_files),
		cmocka_unit_test(test_doc_markdown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
