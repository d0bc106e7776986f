/*
 * Tests of the milter's per-message session (milter/session.c) without
 * libmilter: what is buffered and what not (max_message_size, the header
 * caps, irrelevant mail not buffered at all), line ends made LF across
 * chunk boundaries, the spool record written before the answer, TEMPFAIL
 * when the spool cannot be written, and a message finishing with the
 * configuration it started with across a reload.
 */
#include "cmocka_all.h"
#include "core/msgid.h"
#include "mail/mail.h"
#include "mail/review.h"
#include "milter/mconf.h"
#include "milter/session.h"
#include "state/spool.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DOMAIN "bridge.example.org"
#define SHA1 "1111111111111111111111111111111111111111"

static char dir[512];

/* Lines for [milter] that the next make_conf() adds. */
static const char *milter_extra = "";

/* DIR/NAME.conf with its own spool DIR/NAME-spool, loaded. */
static struct mconf *make_conf(const char *name, const char *max_size)
{
	char path[700], text[4096];
	struct mconf *c = NULL;
	struct strlist errs = STRLIST_INIT;

	snprintf(text, sizeof(text),
		 "[bridge]\naddress = patchbridge@" DOMAIN "\n"
		 "domain = " DOMAIN "\n"
		 "[forge]\nurl = https://gitlab.example.org\n"
		 "token_file = %s/token\n"
		 "[milter]\nmax_message_size = %s\n%s"
		 "[state]\npath = %s/state.db\n"
		 "[spool]\ndir = %s/%s-spool\n",
		 dir, max_size ? max_size : "64k", milter_extra, dir, dir,
		 name);
	/* The milter run as root never makes the spool directory. */
	snprintf(path, sizeof(path), "%s/%s-spool", dir, name);
	assert_true(mkdir(path, 0770) == 0 || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/%s.conf", dir, name);
	assert_int_equal(file_write_atomic(path, text, strlen(text), 0644), 0);
	if (mconf_new(&c, &errs, path))
		fail_msg("%s: %s", path, errs.nr ? errs.items[0] : err_msg());
	strlist_release(&errs);
	return c;
}

static int setup(void **state)
{
	const char *base = getenv("PB_TEST_TMP");

	(void)state;
	snprintf(dir, sizeof(dir), "%s/session.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	mail_init();
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	mconf_install(NULL);
	mail_shutdown();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Records in DIR/NAME-spool/new. */
static size_t spooled(const char *name, char *first, size_t size)
{
	char path[600];
	struct dirent *e;
	size_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s-spool/new", dir, name);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (!n && first && strlen(path) + strlen(e->d_name) + 2 <= size)
			sprintf(first, "%s/%s", path, e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

static void our_id(struct buf *out, unsigned k)
{
	struct msgid_parts parts = { "g/p", 12, 3, k, 7, SHA1, DOMAIN };

	buf_init(out, 1024);
	assert_int_equal(msgid_format(out, &parts), 0);
}

/* Start a reply to patch 2 of g/p!12 v3 (placed by the id scheme). */
static struct session *begin_reply(const char *msgid)
{
	struct session *s;
	struct buf id, irt = BUF_INIT(1100);

	our_id(&id, 2);
	buf_addf(&irt, "<%s>", id.data);
	session_new(&s, 1);
	assert_int_equal(session_begin(s, "<Rev@Example.org>"), 0);
	session_set_queue_id(s, "4ABCDEF123");
	session_header(s, "From", "Rev Iewer <rev@example.org>");
	session_header(s, "Subject", "Re: [PATCH v3 2/7] list: grow");
	session_header(s, "Message-ID", msgid);
	session_header(s, "In-Reply-To", irt.data);
	buf_release(&id);
	buf_release(&irt);
	return s;
}

static void body(struct session *s, const char *text)
{
	session_body(s, text, strlen(text));
}

static void test_reply_spooled_with_header(void **state)
{
	struct session *s;
	struct session_outcome out;
	struct spool_record rec;
	struct buf data = BUF_INIT(1 << 20);
	char path[800];

	(void)state;
	mconf_install(make_conf("a", NULL));
	s = begin_reply("<r1@example.org>");
	session_eoh(s);
	/* CRLF line ends, one split across two chunks */
	body(s, "Looks fine.\r\n\r");
	body(s, "\nAcked-by: Rev Iewer <rev@example.org>\r\n");
	session_eom(&out, s);
	assert_int_equal(out.action, SESSION_ACCEPT);
	assert_string_equal(out.verdict, "bridged");
	assert_string_equal(out.header, "reply g/p!12 v3 2/7; via=msgid; "
					"trailers=Acked-by; inline=0; nak=no; "
					"auth=unverified; queued");
	assert_true(out.spool_name[0]);
	session_end(s);

	assert_int_equal(spooled("a", path, sizeof(path)), 1);
	assert_non_null(strstr(path, out.spool_name));
	assert_int_equal(file_read(&data, path), 0);
	spool_record_init(&rec);
	assert_int_equal(spool_parse(&rec, data.data, data.len), 0);
	assert_string_equal(rec.queue_id, "4ABCDEF123");
	assert_string_equal(rec.message_id, "r1@example.org");
	assert_string_equal(rec.sender, "Rev@Example.org");
	assert_string_equal(rec.kind, "reply");
	assert_string_equal(rec.project, "g/p");
	assert_int_equal(rec.iid, 12);
	assert_int_equal(rec.revision, 3);
	assert_int_equal(rec.patch, 2);
	/* the message as received, line ends made LF */
	assert_non_null(
		strstr(rec.message.data, "\nIn-Reply-To: <pb.v3.2-7.g.p.12."));
	assert_non_null(strstr(rec.message.data,
			       "\n\nLooks fine.\n\nAcked-by: Rev Iewer "
			       "<rev@example.org>\n"));
	assert_null(strchr(rec.message.data, '\r'));
	spool_record_release(&rec);
	buf_release(&data);
	session_free(s);
}

/* Over max_message_size: the first part is bridged, cut at a line end,
 * and the record says how large the mail was. */
static void test_oversize_keeps_head(void **state)
{
	struct session *s;
	struct session_outcome out;
	struct spool_record rec;
	struct buf data = BUF_INIT(1 << 20);
	char chunk[8192], path[800];
	int i;

	(void)state;
	mconf_install(make_conf("b", NULL));
	memset(chunk, 'x', sizeof(chunk));
	chunk[sizeof(chunk) - 1] = '\n';
	s = begin_reply("<big@example.org>");
	session_eoh(s);
	body(s, "Acked-by: Rev Iewer <rev@example.org>\n");
	for (i = 0; i < 9; i++) /* 72 KiB > 64 KiB */
		session_body(s, chunk, sizeof(chunk));
	/* buffering stopped at the cap, what came first is kept */
	assert_true(s->cut);
	assert_int_equal(s->raw.len, 64 * 1024);
	assert_int_equal(s->size > 72 * 1024, 1);
	session_eom(&out, s);
	assert_int_equal(out.action, SESSION_ACCEPT);
	assert_string_equal(out.verdict, "bridged");
	assert_non_null(strstr(out.header, "trailers=Acked-by"));
	assert_non_null(strstr(out.header, "; cut="));
	session_end(s);
	assert_int_equal(spooled("b", path, sizeof(path)), 1);
	assert_int_equal(file_read(&data, path), 0);
	spool_record_init(&rec);
	assert_int_equal(spool_parse(&rec, data.data, data.len), 0);
	assert_true(rec.message.len < 64 * 1024);
	assert_int_equal(rec.message.data[rec.message.len - 1], '\n');
	assert_true(rec.received > 72 * 1024);
	spool_record_release(&rec);
	buf_release(&data);

	/* the next message starts afresh */
	session_free(s);
	s = begin_reply("<small@example.org>");
	session_eoh(s);
	session_body(s, "ok\n", 3);
	session_eom(&out, s);
	assert_string_equal(out.verdict, "bridged");
	assert_null(strstr(out.header, "cut="));
	assert_int_equal(spooled("b", NULL, 0), 2);
	session_free(s);
}

static void test_header_limits(void **state)
{
	struct session *s;
	struct session_outcome out;
	char *big;
	int i;

	(void)state;
	mconf_install(make_conf("c", "10M"));
	s = begin_reply("<many@example.org>");
	for (i = 0; i < PB_HEADER_COUNT_MAX; i++)
		session_header(s, "X-Noise", "n");
	assert_int_equal(s->skip, SESSION_SKIP_HEADERS);
	session_eoh(s);
	session_body(s, "ok\n", 3);
	session_eom(&out, s);
	assert_string_equal(out.verdict, "headers");
	assert_string_equal(out.header, "");
	session_end(s);

	big = malloc(PB_HEADER_VALUE_MAX + 2);
	memset(big, 'a', PB_HEADER_VALUE_MAX + 1);
	big[PB_HEADER_VALUE_MAX + 1] = '\0';
	session_free(s);
	s = begin_reply("<long@example.org>");
	session_header(s, "X-Long", big);
	session_eom(&out, s);
	assert_string_equal(out.verdict, "headers");
	assert_int_equal(spooled("c", NULL, 0), 0);
	free(big);
	session_free(s);
}

static void test_irrelevant_not_buffered(void **state)
{
	struct session *s;
	struct session_outcome out;
	struct buf id;

	(void)state;
	mconf_install(make_conf("d", NULL));
	session_new(&s, 7);
	assert_int_equal(session_begin(s, "<a@example.org>"), 0);
	session_header(s, "Subject", "[ANNOUNCE] 1.0");
	/* decided at the end of the header: the milter accepts there */
	assert_int_equal(session_eoh(s), 1);
	assert_int_equal(s->skip, SESSION_SKIP_UNTHREADED);
	session_body(s, "hello\n", 6);
	assert_int_equal(s->raw.len, 0);
	session_eom(&out, s);
	assert_string_equal(out.verdict, "pass");
	assert_string_equal(out.reason, "unthreaded");
	assert_string_equal(out.header, "");

	/* the bridge's own mail: a loop, not spooled */
	our_id(&id, 0);
	assert_int_equal(session_begin(s, "<>"), 0);
	session_header(s, "Message-ID", id.data); /* brackets lost */
	session_header(s, "In-Reply-To", "<x@example.org>");
	assert_int_equal(session_eoh(s), 1);
	session_body(s, "cover\n", 6);
	assert_int_equal(s->raw.len, 0);
	session_eom(&out, s);
	assert_string_equal(out.verdict, "loop");
	assert_string_equal(out.reason, "own-message-id");
	assert_int_equal(spooled("d", NULL, 0), 0);

	/* threaded under mail the bridge never sent (no thread map yet:
	 * only our scheme could place it) */
	assert_int_equal(session_begin(s, "<a@example.org>"), 0);
	session_header(s, "Subject", "Re: lunch");
	session_header(s, "In-Reply-To", "<lunch@example.org>");
	assert_int_equal(session_eoh(s), 1);
	assert_int_equal(s->raw.len, 0);
	session_eom(&out, s);
	assert_string_equal(out.verdict, "pass");
	assert_string_equal(out.reason, "not-bridged");

	/* a reply under our scheme is read to the end */
	session_free(s);
	s = begin_reply("<kept@example.org>");
	assert_int_equal(session_eoh(s), 0);
	session_body(s, "ok\n", 3);
	session_eom(&out, s);
	assert_string_equal(out.verdict, "bridged");
	assert_int_equal(spooled("d", NULL, 0), 1);
	buf_release(&id);
	session_free(s);
}

static void test_spool_failure_tempfails(void **state)
{
	struct session *s;
	struct session_outcome out;
	char path[700];

	(void)state;
	mconf_install(make_conf("e", NULL));
	/* tmp/ replaced by a file: no record can be written (also as root) */
	snprintf(path, sizeof(path), "%s/e-spool/tmp", dir);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(file_write_atomic(path, "x", 1, 0644), 0);
	s = begin_reply("<t@example.org>");
	session_eoh(s);
	session_body(s, "Acked-by: A <a@example.org>\n", 28);
	session_eom(&out, s);
	assert_int_equal(out.action, SESSION_TEMPFAIL);
	assert_string_equal(out.verdict, "tempfail");
	assert_string_equal(out.header, "");
	assert_string_equal(out.spool_name, "");
	session_free(s);
}

static void test_reload_keeps_message_generation(void **state)
{
	struct session *s;
	struct session_outcome out;

	(void)state;
	mconf_install(make_conf("f", NULL));
	s = begin_reply("<gen@example.org>");
	session_eoh(s);
	/* SIGHUP mid-message: the new generation has another spool */
	mconf_install(make_conf("g", NULL));
	session_body(s, "ok\n", 3);
	session_eom(&out, s);
	assert_string_equal(out.verdict, "bridged");
	session_end(s); /* the last reference on "f" goes here */
	assert_int_equal(spooled("f", NULL, 0), 1);
	assert_int_equal(spooled("g", NULL, 0), 0);
	/* the next message uses the new one */
	session_free(s);
	s = begin_reply("<gen2@example.org>");
	session_eom(&out, s);
	assert_int_equal(spooled("g", NULL, 0), 1);
	session_free(s);
}

/*
 * The verifier's two fields on top count; a forged field claiming the
 * trusted id below them (a comment before the id) is listed for removal
 * and not read, in bridged and in unthreaded mail alike.  The spool
 * record keeps the header as received, and the daemon's reading of it
 * (review_parse with the same rules) agrees.
 */
static void test_forged_authres(void **state)
{
	static const char verifier_dmarc[] =
		"lists.example.test; dmarc=none header.from=example.org";
	static const char verifier_dkim[] = "lists.example.test; dkim=none";
	static const char forged[] = "(x) lists.example.test;\n\tdmarc=pass "
				     "header.from=example.org";
	struct review_options ro = {
		.trusted_authserv_id = "lists.example.test", .trusted_fields = 2
	};
	struct session *s;
	struct session_outcome out;
	struct spool_record rec;
	struct review *r;
	struct buf data = BUF_INIT(1 << 20);
	const size_t *idx;
	size_t nr;
	char path[800];

	(void)state;
	milter_extra = "trusted_authserv_id = lists.example.test\n";
	mconf_install(make_conf("ar", NULL));
	milter_extra = "";

	session_new(&s, 1);
	assert_int_equal(session_begin(s, "<rev@example.org>"), 0);
	session_header(s, "Authentication-Results", verifier_dmarc);
	session_header(s, "Authentication-Results", verifier_dkim);
	session_header(s, "Authentication-Results",
		       "other.example; dkim=pass header.d=example.org");
	session_header(s, "Authentication-Results", forged);
	session_header(s, "From", "Rev Iewer <rev@example.org>");
	session_header(s, "Subject", "Re: [PATCH v3 2/7] list: grow");
	session_header(s, "Message-ID", "<forged@example.org>");
	{
		struct buf id, irt = BUF_INIT(1100);

		our_id(&id, 2);
		buf_addf(&irt, "<%s>", id.data);
		session_header(s, "In-Reply-To", irt.data);
		buf_release(&id);
		buf_release(&irt);
	}
	session_eoh(s);
	body(s, "Acked-by: Rev Iewer <rev@example.org>\n");
	session_eom(&out, s);
	assert_string_equal(out.verdict, "bridged");
	assert_non_null(strstr(out.header, "auth=unverified"));
	idx = session_forged(s, &nr);
	assert_int_equal(nr, 1);
	assert_int_equal(idx[0], 4);
	session_end(s);

	assert_int_equal(spooled("ar", path, sizeof(path)), 1);
	assert_int_equal(file_read(&data, path), 0);
	spool_record_init(&rec);
	assert_int_equal(spool_parse(&rec, data.data, data.len), 0);
	assert_non_null(strstr(rec.message.data, "(x) lists.example.test;\n"
						 "\tdmarc=pass"));
	assert_int_equal(review_parse(&r, rec.message.data, rec.message.len,
				      NULL, &ro),
			 0);
	assert_false(r->auth.verified);
	assert_int_equal(r->auth.trusted, 2);
	assert_int_equal(r->auth.forged, 1);
	review_free(r);
	spool_record_release(&rec);
	buf_release(&data);

	/* unthreaded mail: not buffered, the forged field still goes */
	assert_int_equal(session_begin(s, "<x@example.org>"), 0);
	session_header(s, "Authentication-Results", verifier_dmarc);
	session_header(s, "Authentication-Results", verifier_dkim);
	session_header(s, "Authentication-Results", forged);
	session_header(s, "Subject", "an announcement");
	session_eoh(s);
	body(s, "hello\n");
	session_eom(&out, s);
	assert_string_equal(out.header, "");
	idx = session_forged(s, &nr);
	assert_int_equal(nr, 1);
	assert_int_equal(idx[0], 3);
	session_free(s);
}

static void test_no_config(void **state)
{
	struct session *s;
	struct session_outcome out;

	(void)state;
	mconf_install(NULL);
	session_new(&s, 1);
	assert_int_equal(session_begin(s, "<a@b>"), PB_ERROR);
	session_header(s, "Subject", "x");
	session_body(s, "x", 1);
	session_eom(&out, s);
	assert_int_equal(out.action, SESSION_ACCEPT);
	session_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reply_spooled_with_header),
		cmocka_unit_test(test_oversize_keeps_head),
		cmocka_unit_test(test_header_limits),
		cmocka_unit_test(test_irrelevant_not_buffered),
		cmocka_unit_test(test_spool_failure_tempfails),
		cmocka_unit_test(test_reload_keeps_message_generation),
		cmocka_unit_test(test_forged_authres),
		cmocka_unit_test(test_no_config),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
