/*
 * outbound/submit.c: the pure helpers (envelope addresses, line ends,
 * reply lines, queue ids, sysexits), the option checks, and the sendmail
 * pipe against small shell scripts standing in for sendmail (exit codes,
 * stderr, a reader that goes away, a timeout).  SMTP against real
 * servers is tests/outbound/submit_e2e.sh.
 */
#include "cmocka_all.h"
#include "core/config.h"
#include "outbound/submit.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/strlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void test_addr_ok(void **state)
{
	static const char *const good[] = {
		"a@example.org",       "first.last+tag@sub.example.co",
		"o'brien@example.org", "x_y-z=1@a-b.example",
		"bot@[127.0.0.1]",     "bot@[IPv6:2001:db8::1]",
		"u@localhost",
	};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(submit_addr_check(good[i]), 0);
}

static void test_addr_bad(void **state)
{
	static const char *const bad[] = {
		"",
		"a",
		"@example.org",
		"a@",
		"a b@example.org",
		/* SMTP command injection: a second command line. */
		"a@example.org\r\nRCPT TO:<evil@example.net>",
		"a@example.org\n",
		"a@example.org>",
		"<a@example.org>",
		"a>@example.org",
		"a@example.org> SIZE=1",
		"a@exa mple.org",
		"a..b@example.org",
		".a@example.org",
		"a.@example.org",
		"a@-example.org",
		"a@example-.org",
		"a@example..org",
		"a@example.org.",
		"\"quoted\"@example.org",
		"caf\xc3\xa9@example.org",
		"a@ex\xc3\xa4mple.org",
		"a@[1.2.3.4",
		"a@[1.2.3.4>]",
		"a\t@example.org",
	};
	char local[80], label[80], addr[400];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (submit_addr_check(bad[i]) != PB_EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
	}
	assert_int_equal(submit_addr_check(NULL), PB_EINVAL);

	/* 64 bytes of local part are fine, 65 are not (RFC 5321). */
	memset(local, 'l', 64);
	snprintf(local + 64, sizeof(local) - 64, "@x.org");
	assert_int_equal(submit_addr_check(local), 0);
	memset(local, 'l', 65);
	snprintf(local + 65, sizeof(local) - 65, "@x.org");
	assert_int_equal(submit_addr_check(local), PB_EINVAL);
	/* A 63-byte label is fine, 64 not. */
	memset(label, 'd', 63);
	snprintf(label + 63, sizeof(label) - 63, ".org");
	snprintf(addr, sizeof(addr), "a@%s", label);
	assert_int_equal(submit_addr_check(addr), 0);
	memset(label, 'd', 64);
	snprintf(label + 64, sizeof(label) - 64, ".org");
	snprintf(addr, sizeof(addr), "a@%s", label);
	assert_int_equal(submit_addr_check(addr), PB_EINVAL);
	/* Past PB_ADDR_MAX in total. */
	snprintf(addr, sizeof(addr), "x@");
	for (i = 0; i < 33; i++)
		strcat(addr, "abcdefghi.");
	strcat(addr, "org");
	assert_true(strlen(addr) > PB_ADDR_MAX);
	assert_int_equal(submit_addr_check(addr), PB_EINVAL);
}

static void expect_canon(const char *in, int crlf, const char *want)
{
	struct buf b = BUF_INIT(4096);

	assert_int_equal(submit_canon(&b, in, strlen(in), crlf), 0);
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.data, want, b.len);
	buf_release(&b);
}

static void test_canon(void **state)
{
	expect_canon("a\nb\n", 1, "a\r\nb\r\n");
	expect_canon("a\r\nb\r\n", 1, "a\r\nb\r\n");
	expect_canon("a\r\nb\nc", 1, "a\r\nb\r\nc\r\n");
	/* Dots are left alone: libcurl stuffs them after CRLF. */
	expect_canon(".\n..\n.x\n", 1, ".\r\n..\r\n.x\r\n");
	/* A CR that is not before LF is data. */
	expect_canon("a\rb\n", 1, "a\rb\r\n");
	expect_canon("a\r\r\n", 1, "a\r\r\n");
	expect_canon("\n\n", 1, "\r\n\r\n");
	expect_canon("", 1, "");
	/* For sendmail: LF. */
	expect_canon("a\r\nb\nc", 0, "a\nb\nc\n");
	expect_canon("From x\n.\n", 0, "From x\n.\n");
	/* 8-bit bytes pass unchanged. */
	expect_canon("Gr\xc3\xbc\xc3\x9f\x65\n", 1,
		     "Gr\xc3\xbc\xc3\x9f\x65\r\n");
}

static void test_canon_limits(void **state)
{
	char line[SUBMIT_LINE_MAX + 4];
	struct buf b = BUF_INIT(8192);
	struct buf small = BUF_INIT(5);

	/* 998 bytes plus the line end: fine, with LF or CRLF. */
	memset(line, 'x', SUBMIT_LINE_MAX);
	memcpy(line + SUBMIT_LINE_MAX, "\r\n", 2);
	assert_int_equal(submit_canon(&b, line, SUBMIT_LINE_MAX + 2, 1), 0);
	assert_int_equal(b.len, SUBMIT_LINE_MAX + 2);
	buf_reset(&b);
	line[SUBMIT_LINE_MAX] = '\n';
	assert_int_equal(submit_canon(&b, line, SUBMIT_LINE_MAX + 1, 1), 0);
	buf_reset(&b);
	/* 999 bytes: refused, also as the last line without a line end. */
	line[SUBMIT_LINE_MAX] = 'x';
	line[SUBMIT_LINE_MAX + 1] = '\n';
	assert_int_equal(submit_canon(&b, line, SUBMIT_LINE_MAX + 2, 1),
			 PB_EINVAL);
	assert_non_null(strstr(err_msg(), "line 1"));
	buf_reset(&b);
	assert_int_equal(submit_canon(&b, line, SUBMIT_LINE_MAX + 1, 0),
			 PB_EINVAL);
	buf_reset(&b);
	/* NUL bytes cannot travel. */
	assert_int_equal(submit_canon(&b, "a\nb\0c\n", 6, 1), PB_EINVAL);
	assert_non_null(strstr(err_msg(), "line 2"));
	/* The buffer's cap. */
	assert_int_equal(submit_canon(&small, "abcdef\n", 7, 1), PB_ELIMIT);
	buf_release(&b);
	buf_release(&small);
}

static void expect_reply(const char *line, int code, int last)
{
	int c = -1, l = -1;

	assert_int_equal(submit_reply_line(&c, &l, line, strlen(line)), 0);
	assert_int_equal(c, code);
	assert_int_equal(l, last);
}

static void test_reply_line(void **state)
{
	static const char *const bad[] = {
		"", "25", "abc", "250x", "199 x", "600 x", "2a0 x", " 250 x"
	};
	size_t i;
	int c, l;

	expect_reply("250 2.0.0 Ok: queued as ABC", 250, 1);
	expect_reply("250-PIPELINING", 250, 0);
	expect_reply("250", 250, 1);
	expect_reply("354 End data with <CR><LF>.<CR><LF>", 354, 1);
	expect_reply("421 4.3.2 Service shutting down", 421, 1);
	expect_reply("550-5.1.1 first", 550, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(submit_reply_line(&c, &l, bad[i],
						   strlen(bad[i])),
				 PB_EINVAL);
}

static void expect_qid(const char *text, const char *want)
{
	char id[SUBMIT_QUEUE_ID_MAX + 1];
	int rc = submit_queue_id(id, sizeof(id), text, strlen(text));

	if (!want) {
		assert_int_equal(rc, PB_ENOTFOUND);
		assert_string_equal(id, "");
		return;
	}
	assert_int_equal(rc, 0);
	assert_string_equal(id, want);
}

static void test_queue_id(void **state)
{
	char big[200];

	/* Postfix, short and long queue ids. */
	expect_qid("250 2.0.0 Ok: queued as 70529A7A811", "70529A7A811");
	expect_qid("250 2.0.0 Ok: queued as 4Xb9Qz3ZkVz9rxL",
		   "4Xb9Qz3ZkVz9rxL");
	expect_qid("250 Ok: Queued As abc123 (extra)", "abc123");
	/* Exim. */
	expect_qid("250 OK id=1q2w3e-000abc-Xy", "1q2w3e-000abc-Xy");
	/* Sendmail. */
	expect_qid("250 2.0.0 3AB1cD9x012345 Message accepted for delivery",
		   "3AB1cD9x012345");
	/* Nothing to find, or nothing that looks like an id. */
	expect_qid("250 2.0.0 Ok", NULL);
	expect_qid("250 2.0.0 Message accepted for delivery", NULL);
	expect_qid("250 ok: queued as ", NULL);
	expect_qid("250 queued as <x@y>", NULL);
	expect_qid("250 queued as a@b", NULL);
	expect_qid("250 Ok valid=1", NULL);
	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "250 queued as ", 14);
	expect_qid(big, NULL);
}

static void test_exit_status(void **state)
{
	assert_int_equal(submit_exit_status(0), SUBMIT_ACCEPTED);
	assert_int_equal(submit_exit_status(75),
			 SUBMIT_TEMPFAIL); /* TEMPFAIL */
	assert_int_equal(submit_exit_status(71), SUBMIT_TEMPFAIL); /* OSERR */
	assert_int_equal(submit_exit_status(64), SUBMIT_REJECTED); /* USAGE */
	assert_int_equal(submit_exit_status(65), SUBMIT_REJECTED); /* DATAERR */
	assert_int_equal(submit_exit_status(67), SUBMIT_REJECTED); /* NOUSER */
	assert_int_equal(submit_exit_status(69), SUBMIT_REJECTED);
	assert_int_equal(submit_exit_status(74), SUBMIT_REJECTED); /* IOERR */
	assert_int_equal(submit_exit_status(78), SUBMIT_REJECTED); /* CONFIG */
	assert_int_equal(submit_exit_status(1), SUBMIT_REJECTED);
	assert_int_equal(submit_exit_status(127), SUBMIT_REJECTED);
}

static void test_split_args(void **state)
{
	struct strlist sl = STRLIST_INIT;
	struct buf many = BUF_INIT(1024);
	int i;

	assert_int_equal(submit_split_args(&sl, "/usr/sbin/sendmail"), 0);
	assert_int_equal(sl.nr, 1);
	strlist_release(&sl);
	assert_int_equal(submit_split_args(&sl, "  /usr/sbin/sendmail\t-C  "
						"/srv/pf/etc "),
			 0);
	assert_int_equal(sl.nr, 3);
	assert_string_equal(sl.items[0], "/usr/sbin/sendmail");
	assert_string_equal(sl.items[1], "-C");
	assert_string_equal(sl.items[2], "/srv/pf/etc");
	strlist_release(&sl);
	assert_int_equal(submit_split_args(&sl, ""), PB_EINVAL);
	strlist_release(&sl);
	assert_int_equal(submit_split_args(&sl, " \t "), PB_EINVAL);
	strlist_release(&sl);
	assert_int_equal(submit_split_args(&sl, "sendmail -t"), PB_EINVAL);
	strlist_release(&sl);
	buf_adds(&many, "/bin/x");
	for (i = 1; i < SUBMIT_SENDMAIL_ARGS_MAX; i++)
		buf_adds(&many, " a");
	assert_int_equal(submit_split_args(&sl, many.data), 0);
	strlist_release(&sl);
	buf_adds(&many, " one-too-many");
	assert_int_equal(submit_split_args(&sl, many.data), PB_EINVAL);
	strlist_release(&sl);
	buf_release(&many);
}

static void expect_msgid(const char *msg, const char *want)
{
	char id[64];

	submit_message_id(id, sizeof(id), msg, strlen(msg));
	assert_string_equal(id, want);
}

static void test_message_id(void **state)
{
	expect_msgid("From: a\nMessage-ID: <pb-1@x.org>\n\nbody\n",
		     "<pb-1@x.org>");
	expect_msgid("message-id:   <a@b>  \r\nSubject: x\r\n\r\n", "<a@b>");
	expect_msgid("Message-ID:\n <folded@x.org>\nSubject: x\n\n",
		     "<folded@x.org>");
	expect_msgid("Subject: x\n\nMessage-ID: <in-body@x>\n", "");
	expect_msgid("Subject: x\n", "");
	expect_msgid("Message-ID: <a\x1b[31m@b>\n\n", "<a?[31m@b>");
}

static void test_new_checks(void **state)
{
	struct submit_opts o = { 0 };
	struct submit *s = (struct submit *)1;

	/* Credentials never go in clear to another host. */
	o.url = "smtp://mail.example.org:587";
	o.username = "bot";
	o.password = "pw";
	assert_int_equal(submit_new(&s, &o), PB_EINVAL);
	assert_null(s);
	assert_non_null(strstr(err_msg(), "clear text"));
	o.starttls = 1;
	assert_int_equal(submit_new(&s, &o), 0);
	submit_free(s);
	o.starttls = 0;
	o.url = "smtps://mail.example.org";
	assert_int_equal(submit_new(&s, &o), 0);
	submit_free(s);
	o.url = "smtp://127.0.0.1:2525";
	assert_int_equal(submit_new(&s, &o), 0);
	submit_free(s);
	o.url = "smtp://[::1]:25";
	assert_int_equal(submit_new(&s, &o), 0);
	submit_free(s);
	o.url = "smtp://localhost";
	assert_int_equal(submit_new(&s, &o), 0);
	submit_free(s);
	o.url = "smtp://127.0.0.1.example.org";
	assert_int_equal(submit_new(&s, &o), PB_EINVAL);
	o.url = "smtp://localhost.example.org";
	assert_int_equal(submit_new(&s, &o), PB_EINVAL);
	/* Half the credentials. */
	o.url = "smtps://mail.example.org";
	o.password = NULL;
	assert_int_equal(submit_new(&s, &o), PB_EINVAL);
	o.username = NULL;
	/* STARTTLS is for smtp://. */
	o.starttls = 1;
	assert_int_equal(submit_new(&s, &o), PB_EINVAL);
	o.starttls = 0;
	/* Other schemes, blanks. */
	o.url = "http://mail.example.org";
	assert_int_equal(submit_new(&s, &o), PB_EINVAL);
	o.url = "smtp://mail.example.org/\r\nQUIT";
	assert_int_equal(submit_new(&s, &o), PB_EINVAL);
	/* AUTH needs SMTP. */
	o.url = "sendmail";
	o.username = "bot";
	o.password = "pw";
	assert_int_equal(submit_new(&s, &o), PB_EINVAL);
	o.username = o.password = NULL;
	/* A bad default sender, a relative sendmail. */
	o.envelope_from = "bridge@example.org\r\n";
	assert_int_equal(submit_new(&s, &o), PB_EINVAL);
	o.envelope_from = NULL;
	o.sendmail_path = "sendmail";
	assert_int_equal(submit_new(&s, &o), PB_EINVAL);
	o.timeout_ms = -1;
	o.sendmail_path = NULL;
	assert_int_equal(submit_new(&s, &o), PB_EINVAL);
	submit_free(NULL);
}

static void test_opts_from_config(void **state)
{
	static const char text[] =
		"[bridge]\naddress = bridge@example.org\n"
		"domain = example.org\n"
		"[forge]\nurl = https://gitlab.example.org\n"
		"token_file = /etc/pb/token\n"
		"[smtp]\nurl = smtp://mail.example.org:587\nstarttls = yes\n"
		"username = bot\npassword_file = /etc/pb/smtp-password\n"
		"timeout = 90s\n"
		"sendmail_path = /usr/sbin/sendmail -C /etc/postfix-out\n";
	struct submit_opts o;
	struct config *cfg;
	struct submit *s;

	assert_int_equal(config_load_mem(&cfg, NULL, "t.conf", text,
					 sizeof(text) - 1),
			 0);
	submit_opts_from_config(&o, cfg);
	assert_string_equal(o.url, "smtp://mail.example.org:587");
	assert_true(o.starttls);
	assert_null(o.ca_file);
	assert_string_equal(o.username, "bot");
	assert_null(o.password);
	assert_int_equal(o.timeout_ms, 90000);
	assert_string_equal(o.envelope_from, "bridge@example.org");
	assert_string_equal(o.sendmail_path,
			    "/usr/sbin/sendmail -C /etc/postfix-out");
	o.password = "from the file";
	assert_int_equal(submit_new(&s, &o), 0);
	submit_free(s);
	config_free(cfg);
}

/* Arguments are checked before anything is sent: the server is a closed
 * port that would make any attempt fail as TEMPFAIL instead. */
static void test_send_checks(void **state)
{
	struct submit_opts o = { .url = "smtp://127.0.0.1:1",
				 .timeout_ms = 2000 };
	struct strlist to = STRLIST_INIT;
	struct submit_result res;
	struct submit *s;
	const char *msg = "Subject: x\n\nbody\n";
	char longline[1200];

	submit_result_init(&res);
	assert_int_equal(submit_new(&s, &o), 0);
	assert_int_equal(submit_send(&res, s, NULL, &to, msg, strlen(msg)),
			 PB_EINVAL);
	assert_int_equal(res.status, SUBMIT_REJECTED);
	assert_int_equal(submit_send(&res, s, "a@example.org", &to, msg,
				     strlen(msg)),
			 PB_EINVAL);
	strlist_push(&to, "list@example.org");
	strlist_push(&to, "evil@example.org>\r\nRCPT TO:<x@example.net");
	assert_int_equal(submit_send(&res, s, "a@example.org", &to, msg,
				     strlen(msg)),
			 PB_EINVAL);
	assert_non_null(strstr(err_msg(), "recipient 2"));
	strlist_remove(&to, 1);
	assert_int_equal(submit_send(&res, s, "a@example.org", &to, "", 0),
			 PB_EINVAL);
	memset(longline, 'x', sizeof(longline));
	memcpy(longline, "Subject: x\n\n", 12);
	assert_int_equal(submit_send(&res, s, "a@example.org", &to, longline,
				     sizeof(longline)),
			 PB_EINVAL);
	assert_int_equal(res.status, SUBMIT_REJECTED);
	/* Well-formed: now it tries, and the closed port is temporary. */
	assert_int_equal(submit_send(&res, s, "a@example.org", &to, msg,
				     strlen(msg)),
			 PB_ETEMP);
	assert_int_equal(res.status, SUBMIT_TEMPFAIL);
	assert_int_equal(res.code, 0);
	submit_result_release(&res);
	submit_free(s);
	strlist_release(&to);
}

/*
 * The sendmail pipe, against shell scripts.
 */

static char tmpdir[512];

static int setup_tmp(void **state)
{
	const char *base = getenv("PB_TEST_TMP");

	snprintf(tmpdir, sizeof(tmpdir), "%s/test_submit.XXXXXX",
		 base && *base ? base : "/tmp");
	assert_non_null(mkdtemp(tmpdir));
	return 0;
}

static int teardown_tmp(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Write an executable script; returns its path (static buffer). */
static const char *script(const char *name, const char *body)
{
	static char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
	return path;
}

static int run_sendmail(struct submit_result *res, const char *path,
			long timeout_ms, const char *msg, size_t len)
{
	struct submit_opts o = { .url = "sendmail",
				 .sendmail_path = path,
				 .timeout_ms = timeout_ms,
				 .envelope_from = "bridge@example.org" };
	struct strlist to = STRLIST_INIT;
	struct submit *s;
	int rc;

	strlist_push(&to, "list@example.org");
	strlist_push(&to, "-oQ@example.org"); /* not an option, after -- */
	assert_int_equal(submit_new(&s, &o), 0);
	rc = submit_send(res, s, NULL, &to, msg, len);
	submit_free(s);
	strlist_release(&to);
	return rc;
}

static void slurp(struct buf *out, const char *name)
{
	char path[600];
	FILE *f;
	char tmp[4096];
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		assert_int_equal(buf_add(out, tmp, n), 0);
	fclose(f);
}

static void test_sendmail_ok(void **state)
{
	struct submit_result res;
	struct buf got = BUF_INIT(1 << 20);
	const char *msg = "Subject: x\r\n\r\n.\r\n..dot\r\nFrom me\r\n";
	char body[700];
	const char *p;

	snprintf(
		body, sizeof(body),
		"d=%s\n"
		"for a in \"$@\"; do printf '%%s\\n' \"$a\"; done >\"$d/args\"\n"
		"cat >\"$d/msg\"\n"
		"exit 0",
		tmpdir);
	p = script("ok.sh", body);
	/* Fixed arguments after the program. */
	snprintf(body, sizeof(body), "%s -C /srv/pf/etc", p);
	submit_result_init(&res);
	assert_int_equal(run_sendmail(&res, body, 5000, msg, strlen(msg)), 0);
	assert_int_equal(res.status, SUBMIT_ACCEPTED);
	assert_int_equal(res.code, 0);
	slurp(&got, "args");
	assert_string_equal(got.data, "-C\n/srv/pf/etc\n-oi\n-f\n"
				      "bridge@example.org\n--\n"
				      "list@example.org\n-oQ@example.org\n");
	buf_reset(&got);
	/* LF line ends, dots untouched (-oi). */
	slurp(&got, "msg");
	assert_string_equal(got.data, "Subject: x\n\n.\n..dot\nFrom me\n");
	submit_result_release(&res);
	buf_release(&got);
}

static void test_sendmail_exit(void **state)
{
	struct submit_result res;
	const char *msg = "Subject: x\n\nbody\n";
	const char *p;

	submit_result_init(&res);
	p = script("temp.sh", "cat >/dev/null\n"
			      "echo 'postdrop: warning: queue full' >&2\n"
			      "exit 75");
	assert_int_equal(run_sendmail(&res, p, 5000, msg, strlen(msg)),
			 PB_ETEMP);
	assert_int_equal(res.status, SUBMIT_TEMPFAIL);
	assert_int_equal(res.code, 75);
	assert_string_equal(res.reply, "postdrop: warning: queue full");
	assert_non_null(strstr(err_msg(), "status 75"));

	p = script("perm.sh", "cat >/dev/null\n"
			      "printf 'bad\\033[31m\\naddress\\n' >&2\n"
			      "exit 67");
	assert_int_equal(run_sendmail(&res, p, 5000, msg, strlen(msg)),
			 PB_EINVAL);
	assert_int_equal(res.status, SUBMIT_REJECTED);
	assert_int_equal(res.code, 67);
	/* stderr on one printable line. */
	assert_string_equal(res.reply, "bad?[31m address");

	/* A lot of stderr is cut, and does not block the writer. */
	p = script("noisy.sh",
		   "i=0; while [ $i -lt 2000 ]; do "
		   "echo 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' "
		   ">&2; i=$((i+1)); done; cat >/dev/null; exit 1");
	assert_int_equal(run_sendmail(&res, p, 10000, msg, strlen(msg)),
			 PB_EINVAL);
	assert_int_equal(res.code, 1);
	assert_int_equal(strlen(res.reply), SUBMIT_REPLY_MAX);

	/* No such program. */
	snprintf(res.reply, sizeof(res.reply), "junk");
	assert_int_equal(run_sendmail(&res, "/nonexistent/sendmail", 5000, msg,
				      strlen(msg)),
			 PB_ETEMP);
	assert_int_equal(res.status, SUBMIT_TEMPFAIL);
	assert_string_equal(res.reply, "");
	submit_result_release(&res);
}

static void test_sendmail_epipe(void **state)
{
	struct submit_result res;
	size_t len = 512 * 1024, i;
	char *msg = malloc(len);
	const char *p;

	/* 512 KiB: more than a pipe holds, so the write meets EPIPE. */
	assert_non_null(msg);
	for (i = 0; i < len; i++)
		msg[i] = i % 80 == 79 ? '\n' : 'm';
	submit_result_init(&res);
	p = script("early.sh", "exit 75");
	assert_int_equal(run_sendmail(&res, p, 5000, msg, len), PB_ETEMP);
	assert_int_equal(res.status, SUBMIT_TEMPFAIL);
	/* Exit 0 without reading all of it: it may have queued a part. */
	p = script("early0.sh", "head -c 1000 >/dev/null; exit 0");
	assert_int_equal(run_sendmail(&res, p, 5000, msg, len), PB_ETEMP);
	assert_int_equal(res.status, SUBMIT_UNKNOWN);
	/* The process survived the SIGPIPE that a plain write would get. */
	submit_result_release(&res);
	free(msg);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_sendmail_timeout(void **state)
{
	struct submit_result res;
	const char *msg = "Subject: x\n\nbody\n";
	const char *p;
	long t0;

	submit_result_init(&res);
	/* Hangs before reading: killed, nothing handed over. */
	p = script("hang.sh", "sleep 30");
	t0 = now_ms();
	assert_int_equal(run_sendmail(&res, p, 500, msg, strlen(msg)),
			 PB_ETEMP);
	/* Killed, not waited for: well before the 30 s sleep ends (a bound
	 * a loaded machine keeps, not a timing). */
	assert_true(now_ms() - t0 < 25000);
	/* The small message fit in the pipe: all of it was handed over. */
	assert_int_equal(res.status, SUBMIT_UNKNOWN);
	assert_int_equal(res.code, -1);
	/* Ignores SIGTERM: SIGKILL after the grace period; its child in
	 * the same process group goes too. */
	p = script("stubborn.sh", "trap '' TERM\nsleep 30 & wait; sleep 30");
	t0 = now_ms();
	assert_int_equal(run_sendmail(&res, p, 300, msg, strlen(msg)),
			 PB_ETEMP);
	assert_true(now_ms() - t0 < 25000);
	submit_result_release(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_ok),
		cmocka_unit_test(test_addr_bad),
		cmocka_unit_test(test_canon),
		cmocka_unit_test(test_canon_limits),
		cmocka_unit_test(test_reply_line),
		cmocka_unit_test(test_queue_id),
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_split_args),
		cmocka_unit_test(test_message_id),
		cmocka_unit_test(test_new_checks),
		cmocka_unit_test(test_opts_from_config),
		cmocka_unit_test(test_send_checks),
		cmocka_unit_test(test_sendmail_ok),
		cmocka_unit_test(test_sendmail_exit),
		cmocka_unit_test(test_sendmail_epipe),
		cmocka_unit_test(test_sendmail_timeout),
	};

	log_open("test_submit", LOG_SINK_STDERR);
	log_set_level(LOG_ERR);
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
