/*
 * Tests of the milter's per-message session (milter/session.c) without
 * libmilter: what is buffered and what not (max_message_size, the header
 * caps, irrelevant mail not buffered at all), line ends made LF across
 * chunk boundaries, the spool record written before the answer, TEMPFAIL
 * when the spool cannot be written, a message finishing with the
 * configuration it started with across a reload, and the memory budget
 * ([milter] memory_limit): concurrent large mails past it go on in files
 * and give the same records as in memory, every end of a message gives
 * its share and its file back, and a file that fails cuts the mail
 * instead of losing it.
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
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

/* ---- the memory budget ---------------------------------------------- */

#define BUDGET_MAILS 6

/* Mail k's body: numbered CRLF lines to about size bytes, a trailer. */
static void budget_body(struct buf *out, int k, size_t size)
{
	int i;

	buf_init(out, 8 << 20);
	for (i = 0; out->len < size; i++)
		buf_addf(out, "line %d of mail %d: %s\r\n", i, k,
			 i % 3 ? "words words words" : "");
	buf_addf(out, "\r\nAcked-by: Rev Iewer <rev@example.org>\r\n");
	assert_int_equal(buf_error(out), 0);
}

/* Open file descriptors of the process. */
static size_t open_fds(void)
{
	struct dirent *e;
	size_t n = 0;
	DIR *d = opendir("/proc/self/fd");

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The record spool NAME holds as file, parsed into rec. */
static void load_record(struct spool_record *rec, const char *name,
			const char *file)
{
	struct buf data = BUF_INIT(16 << 20);
	char path[800];

	snprintf(path, sizeof(path), "%s/%s-spool/new/%s", dir, name, file);
	assert_int_equal(file_read(&data, path), 0);
	spool_record_init(rec);
	assert_int_equal(spool_parse(rec, data.data, data.len), 0);
	buf_release(&data);
}

/*
 * BUDGET_MAILS replies of about size bytes, received at once: chunks
 * of each in turn, as concurrent connections deliver them.  With limit
 * set, the memory held never passes it.  How many went to files is
 * returned.
 */
static int budget_run(struct session_outcome *outs, size_t size, size_t limit)
{
	struct session *s[BUDGET_MAILS];
	struct buf bodies[BUDGET_MAILS];
	size_t off[BUDGET_MAILS] = { 0 }, chunk = 7919, left;
	char mid[64];
	int k, files = 0;

	for (k = 0; k < BUDGET_MAILS; k++) {
		snprintf(mid, sizeof(mid), "<budget%d@example.org>", k);
		s[k] = begin_reply(mid);
		session_eoh(s[k]);
		budget_body(&bodies[k], k, size + (size_t)k * 1000);
	}
	do {
		left = 0;
		for (k = 0; k < BUDGET_MAILS; k++) {
			size_t n = bodies[k].len - off[k];

			if (n > chunk)
				n = chunk;
			session_body(s[k], bodies[k].data + off[k], n);
			off[k] += n;
			left += bodies[k].len - off[k];
			if (limit)
				assert_true(session_memory_held() <= limit);
		}
	} while (left);
	for (k = 0; k < BUDGET_MAILS; k++) {
		files += s[k]->fd >= 0;
		session_eom(&outs[k], s[k]);
		session_free(s[k]);
		buf_release(&bodies[k]);
	}
	assert_int_equal(session_memory_held(), 0);
	return files;
}

/* Mail k's outcome and record in spool a and b are the same. */
static void same_outcome(const struct session_outcome *a, const char *sa,
			 const struct session_outcome *b, const char *sb)
{
	struct spool_record ra, rb;

	assert_int_equal(a->action, SESSION_ACCEPT);
	assert_string_equal(a->verdict, "bridged");
	assert_string_equal(a->verdict, b->verdict);
	assert_string_equal(a->header, b->header);
	load_record(&ra, sa, a->spool_name);
	load_record(&rb, sb, b->spool_name);
	assert_string_equal(ra.message_id, rb.message_id);
	assert_string_equal(ra.kind, rb.kind);
	assert_string_equal(ra.project, rb.project);
	assert_int_equal(ra.iid, rb.iid);
	assert_int_equal(ra.received, rb.received);
	assert_int_equal(ra.message.len, rb.message.len);
	assert_memory_equal(ra.message.data, rb.message.data, ra.message.len);
	spool_record_release(&ra);
	spool_record_release(&rb);
}

/*
 * Six replies of 300 KiB and more at once against a budget of 256 KiB:
 * the memory held stays under it, most of them go on in files, and
 * each record is the one the same mail gives in memory, byte for byte;
 * so are those of mails over max_message_size, cut in their files.
 */
static void test_budget_shared(void **state)
{
	struct session_outcome mem[BUDGET_MAILS], file[BUDGET_MAILS];
	int k;

	(void)state;
	milter_extra = "memory_limit = 64M\n";
	mconf_install(make_conf("bm", "1M"));
	assert_int_equal(budget_run(mem, 300 * 1024, 0), 0);
	milter_extra = "memory_limit = 256k\n";
	mconf_install(make_conf("bf", "1M"));
	milter_extra = "";
	assert_true(budget_run(file, 300 * 1024, 256 * 1024) >=
		    BUDGET_MAILS - 1);
	for (k = 0; k < BUDGET_MAILS; k++)
		same_outcome(&mem[k], "bm", &file[k], "bf");

	/* over max_message_size (1M): cut alike, in memory and in files */
	milter_extra = "memory_limit = 64M\n";
	mconf_install(make_conf("cm", "1M"));
	assert_int_equal(budget_run(mem, 1100 * 1024, 0), 0);
	milter_extra = "memory_limit = 256k\n";
	mconf_install(make_conf("cf", "1M"));
	milter_extra = "";
	assert_true(budget_run(file, 1100 * 1024, 256 * 1024) >=
		    BUDGET_MAILS - 1);
	for (k = 0; k < BUDGET_MAILS; k++) {
		assert_non_null(strstr(file[k].header, "; cut="));
		same_outcome(&mem[k], "cm", &file[k], "cf");
	}
}

/* One connection of test_budget_threads: no cmocka call in a thread. */
struct budget_thread {
	pthread_t tid;
	int k;
	size_t limit;
	int over; /* the memory held passed the limit */
	int in_file;
	struct session_outcome out;
};

static void *budget_thread_run(void *arg)
{
	struct budget_thread *t = arg;
	struct session *s;
	struct buf b, id, irt = BUF_INIT(1100);
	char mid[64];
	size_t off, n;

	our_id(&id, 2);
	buf_addf(&irt, "<%s>", id.data);
	snprintf(mid, sizeof(mid), "<thread%d@example.org>", t->k);
	budget_body(&b, t->k, 200 * 1024);
	session_new(&s, (unsigned long)t->k);
	if (session_begin(s, "<rev@example.org>")) {
		t->over = -1;
		goto out;
	}
	session_header(s, "Subject", "Re: [PATCH v3 2/7] list: grow");
	session_header(s, "Message-ID", mid);
	session_header(s, "In-Reply-To", irt.data);
	session_eoh(s);
	for (off = 0; off < b.len; off += n) {
		n = b.len - off < 4096 ? b.len - off : 4096;
		session_body(s, b.data + off, n);
		if (session_memory_held() > t->limit)
			t->over = 1;
	}
	t->in_file = s->fd >= 0;
	session_eom(&t->out, s);
out:
	session_free(s);
	buf_release(&b);
	buf_release(&id);
	buf_release(&irt);
	return NULL;
}

/*
 * Eight connections on eight threads at once, as libmilter runs them:
 * the counter never passes the budget, every reply is bridged whole,
 * and all of it is given back.
 */
static void test_budget_threads(void **state)
{
	struct budget_thread t[8];
	int k, files = 0;

	(void)state;
	milter_extra = "memory_limit = 512k\n";
	mconf_install(make_conf("thr", "1M"));
	milter_extra = "";
	for (k = 0; k < 8; k++) {
		memset(&t[k], 0, sizeof(t[k]));
		t[k].k = k;
		t[k].limit = 512 * 1024;
		assert_int_equal(pthread_create(&t[k].tid, NULL,
						budget_thread_run, &t[k]),
				 0);
	}
	for (k = 0; k < 8; k++) {
		assert_int_equal(pthread_join(t[k].tid, NULL), 0);
		assert_int_equal(t[k].over, 0);
		assert_string_equal(t[k].out.verdict, "bridged");
		assert_non_null(strstr(t[k].out.header, "trailers=Acked-by"));
		assert_null(strstr(t[k].out.header, "cut="));
		files += t[k].in_file;
	}
	assert_int_equal(session_memory_held(), 0);
	assert_int_equal(spooled("thr", NULL, 0), 8);
	print_message("%d of 8 in files\n", files);
}

/*
 * Every end of a message gives its share of the budget and its file
 * back: an abort (session_end), a new MAIL FROM on the connection, the
 * connection closed (session_free), and a message found irrelevant.
 */
static void test_budget_released(void **state)
{
	struct session *s;
	struct buf big;
	size_t fds;

	(void)state;
	milter_extra = "memory_limit = 64k\n";
	mconf_install(make_conf("rel", "1M"));
	milter_extra = "";
	budget_body(&big, 0, 200 * 1024);
	fds = open_fds();

	/* abort */
	s = begin_reply("<abort@example.org>");
	session_eoh(s);
	session_body(s, big.data, big.len);
	assert_true(s->fd >= 0);
	assert_int_equal(open_fds(), fds + 1);
	session_end(s);
	assert_int_equal(session_memory_held(), 0);
	assert_int_equal(open_fds(), fds);

	/* a new message on the same connection, the old one open */
	session_free(s);
	s = begin_reply("<first@example.org>");
	session_eoh(s);
	session_body(s, big.data, 32 * 1024);
	assert_true(session_memory_held() > 0);
	assert_int_equal(session_begin(s, "<next@example.org>"), 0);
	assert_int_equal(session_memory_held(), 0);
	session_end(s);
	session_free(s);

	/* the connection closed mid-message */
	s = begin_reply("<closed@example.org>");
	session_eoh(s);
	session_body(s, big.data, big.len);
	assert_true(s->fd >= 0);
	session_free(s);
	assert_int_equal(session_memory_held(), 0);
	assert_int_equal(open_fds(), fds);
	assert_int_equal(spooled("rel", NULL, 0), 0);
	buf_release(&big);
}

/*
 * The file fails: a file size limit stops its writes, or no descriptor
 * is left to make it.  The mail is bridged from what was kept, said to
 * be cut, with the size it had: never lost, never tempfailed.
 */
static void test_budget_file_fails(void **state)
{
	struct session *s;
	struct session_outcome out;
	struct spool_record rec;
	struct rlimit old, lim;
	struct buf big;
	char path[800];

	(void)state;
	milter_extra = "memory_limit = 64k\n";
	mconf_install(make_conf("ff", "1M"));
	milter_extra = "";
	budget_body(&big, 0, 300 * 1024);
	signal(SIGXFSZ, SIG_IGN);

	/* writes stop at 100 KiB */
	s = begin_reply("<fsize@example.org>");
	session_eoh(s);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 100 * 1024;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	session_body(s, big.data, big.len);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_true(s->cut);
	session_eom(&out, s);
	assert_int_equal(out.action, SESSION_ACCEPT);
	assert_string_equal(out.verdict, "bridged");
	assert_non_null(strstr(out.header, "; cut="));
	session_free(s);
	assert_int_equal(session_memory_held(), 0);
	assert_int_equal(spooled("ff", path, sizeof(path)), 1);
	load_record(&rec, "ff", strrchr(path, '/') + 1);
	assert_true(rec.message.len > 60 * 1024);
	assert_true(rec.message.len <= 100 * 1024);
	assert_int_equal(rec.message.data[rec.message.len - 1], '\n');
	assert_true(rec.received > 300 * 1024);
	assert_non_null(strstr(rec.message.data, "\n\nline 0 of mail 0"));
	spool_record_release(&rec);

	/* no descriptor for the file: what the budget held is bridged */
	s = begin_reply("<nofile@example.org>");
	session_eoh(s);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	lim = old;
	{
		/* the lowest free descriptor is the first refused */
		int lowest = dup(0);

		assert_true(lowest >= 0);
		close(lowest);
		lim.rlim_cur = (rlim_t)lowest;
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
	session_body(s, big.data, big.len);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_true(s->cut);
	assert_true(s->fd < 0);
	session_eom(&out, s);
	assert_string_equal(out.verdict, "bridged");
	assert_non_null(strstr(out.header, "; cut="));
	session_free(s);
	assert_int_equal(session_memory_held(), 0);
	assert_int_equal(spooled("ff", NULL, 0), 2);
	buf_release(&big);
	signal(SIGXFSZ, SIG_DFL);
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
		cmocka_unit_test(test_budget_shared),
		cmocka_unit_test(test_budget_threads),
		cmocka_unit_test(test_budget_released),
		cmocka_unit_test(test_budget_file_fails),
		cmocka_unit_test(test_no_config),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
