/*
 * Tests for state/spool: the record format, the claim protocol across
 * processes, crash recovery, limits, permissions and the kill -9
 * invariant (new/ never shows a partial record).
 */
#include "cmocka_all.h"
#include "state/spool.h"
#include "util/buf.h"
#include "util/err.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

static char dir[512]; /* per test, removed afterwards */
static char spdir[600]; /* dir/spool */

static int setup(void **state)
{
	const char *base = getenv("PB_TEST_TMP");

	snprintf(dir, sizeof(dir), "%s/spool.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(spdir, sizeof(spdir), "%s/spool", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[1100];

	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s'; rm -rf '%s'", dir,
		 dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct spool *open_rw(void)
{
	struct spool *sp = NULL;
	int rc = spool_open(&sp, spdir, SPOOL_WRITER | SPOOL_READER);

	if (rc)
		print_message("spool_open: %s\n", err_msg());
	assert_int_equal(rc, 0);
	return sp;
}

static size_t count(struct spool *sp, enum spool_area area)
{
	size_t n = 99999;

	assert_int_equal(spool_count(&n, sp, area), 0);
	return n;
}

/* Entries of spdir/sub whose name starts with prefix ("" for all). */
static int entries(const char *sub, const char *prefix)
{
	char path[700];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/%s", spdir, sub);
	d = opendir(path);
	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

static void write_file(const char *sub, const char *name, const void *data,
		       size_t len)
{
	char path[800];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", spdir, sub, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static const struct spool_meta plain_meta = {
	.queue_id = "4Y3ZQk1XyZz9",
	.message_id = "20241203.1234@example.org",
	.sender = "dev@example.org",
	.kind = "reply",
	.project = "group/sub/project",
	.iid = 12,
	.revision = 3,
	.patch = 2,
};

/*
 * spool_body_file(): a file for reading and writing, private to the
 * writer, that leaves nothing in tmp/ for a reader to see or for a
 * crash to leave behind; refused on a handle without tmp/.
 */
static void test_body_file(void **state)
{
	struct spool *sp = open_rw(), *ro = NULL;
	struct stat st;
	char back[6];
	int fd = -1;

	(void)state;
	assert_int_equal(spool_body_file(&fd, sp), 0);
	assert_true(fd >= 0);
	assert_int_equal(entries("tmp", ""), 0);
	assert_int_equal(write(fd, "hello\n", 6), 6);
	assert_int_equal(pread(fd, back, 6, 0), 6);
	assert_memory_equal(back, "hello\n", 6);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_nlink, 0);
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(fd);
	assert_int_equal(entries("tmp", ""), 0);
	spool_free(sp);

	assert_int_equal(spool_open(&ro, spdir, SPOOL_INSPECT), 0);
	assert_int_equal(spool_body_file(&fd, ro), PB_EPERM);
	assert_int_equal(fd, -1);
	spool_free(ro);
}

static void test_round_trip(void **state)
{
	static const char msg[] = "From: Dev <dev@example.org>\r\n"
				  "Subject: Re: [PATCH v3 2/7] x\r\n"
				  "\r\n"
				  "body with a NUL \0 byte\r\n"
				  ".\r\n";
	struct spool *sp = open_rw();
	struct spool_record rec;
	struct spool_entry_list found = { 0 };
	char name[SPOOL_NAME_MAX + 1], claimed[SPOOL_NAME_MAX + 1];
	char path[800];
	struct stat st;

	assert_int_equal(spool_put(name, sizeof(name), sp, &plain_meta, msg,
				   sizeof(msg) - 1),
			 0);
	assert_true(spool_name_valid(name));
	assert_non_null(strstr(name, ".4Y3ZQk1XyZz9."));
	assert_int_equal(count(sp, SPOOL_NEW), 1);
	assert_int_equal(count(sp, SPOOL_TMP), 0);

	/* Directories 2770, the record 0640. */
	assert_int_equal(stat(spdir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 02770);
	snprintf(path, sizeof(path), "%s/new", spdir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 02770);
	snprintf(path, sizeof(path), "%s/new/%s", spdir, name);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);

	assert_int_equal(spool_claim_next(claimed, sizeof(claimed), sp), 0);
	assert_string_equal(claimed, name);
	assert_int_equal(spool_claim_next(claimed, sizeof(claimed), sp),
			 PB_ENOTFOUND);
	assert_int_equal(count(sp, SPOOL_CUR), 1);

	spool_record_init(&rec);
	assert_int_equal(spool_read(&rec, sp, name), 0);
	assert_string_equal(rec.name, name);
	assert_int_equal(rec.version, SPOOL_FORMAT_VERSION);
	assert_true(rec.time > 1700000000 && rec.time <= time(NULL));
	assert_string_equal(rec.queue_id, plain_meta.queue_id);
	assert_string_equal(rec.message_id, plain_meta.message_id);
	assert_string_equal(rec.sender, plain_meta.sender);
	assert_string_equal(rec.kind, "reply");
	assert_string_equal(rec.project, "group/sub/project");
	assert_int_equal(rec.iid, 12);
	assert_int_equal(rec.revision, 3);
	assert_int_equal(rec.patch, 2);
	assert_int_equal(rec.message.len, sizeof(msg) - 1);
	assert_memory_equal(rec.message.data, msg, sizeof(msg) - 1);

	assert_int_equal(spool_done(sp, name), 0);
	assert_int_equal(count(sp, SPOOL_CUR), 0);
	assert_int_equal(count(sp, SPOOL_DONE), 1);
	assert_int_equal(spool_done(sp, name), PB_ENOTFOUND);

	/* `why`: found in done/, with or without the angle brackets. */
	assert_int_equal(spool_find(&found, sp, "<20241203.1234@example.org>"),
			 0);
	assert_int_equal(found.nr, 1);
	assert_int_equal(found.items[0].area, SPOOL_DONE);
	assert_string_equal(found.items[0].name, name);
	assert_int_equal(spool_find(&found, sp, "20241203.1234@example.org"),
			 0);
	assert_int_equal(found.nr, 2);
	spool_entry_list_release(&found);
	assert_int_equal(spool_find(&found, sp, "other@example.org"),
			 PB_ENOTFOUND);
	assert_int_equal(spool_load(&rec, sp, SPOOL_DONE, name), 0);
	assert_memory_equal(rec.message.data, msg, sizeof(msg) - 1);
	assert_string_equal(spool_area_name(SPOOL_DONE), "done");

	/* An empty message and empty fields are fine too. */
	{
		struct spool_meta m = { 0 };

		assert_int_equal(spool_put(name, sizeof(name), sp, &m, NULL, 0),
				 0);
		assert_non_null(strstr(name, ".m"));
		assert_int_equal(spool_claim_next(claimed, sizeof(claimed), sp),
				 0);
		assert_int_equal(spool_read(&rec, sp, claimed), 0);
		assert_string_equal(rec.message_id, "");
		assert_string_equal(rec.project, "");
		assert_int_equal(rec.iid, 0);
		assert_int_equal(rec.message.len, 0);
	}
	spool_record_release(&rec);
	spool_free(sp);
	spool_free(NULL);
}

/* Records are claimed oldest first. */
static void test_claim_order(void **state)
{
	struct spool *sp = open_rw();
	char names[20][SPOOL_NAME_MAX + 1], got[SPOOL_NAME_MAX + 1];
	int i;

	for (i = 0; i < 20; i++)
		assert_int_equal(spool_put(names[i], sizeof(names[i]), sp,
					   &plain_meta, "x", 1),
				 0);
	for (i = 0; i < 20; i++) {
		assert_int_equal(spool_claim_next(got, sizeof(got), sp), 0);
		assert_string_equal(got, names[i]);
		if (i == 5) {
			/* Given back, it is the oldest again after a
			 * rescan; later claims still go in order. */
			assert_int_equal(spool_release(sp, got), 0);
			assert_int_equal(count(sp, SPOOL_NEW), 20 - i);
		}
	}
	assert_int_equal(spool_claim_next(got, sizeof(got), sp), 0);
	assert_string_equal(got, names[5]);
	assert_int_equal(spool_claim_next(got, 4, sp), PB_EINVAL);
	spool_free(sp);
}

static void test_hostile_fields(void **state)
{
	const struct spool_meta evil = {
		.queue_id = "../../etc/passwd",
		.message_id =
			"<a\r\nPB-Spool: 1\r\nSize: 0\n\n%41%\x1b[2J\xff>",
		.sender = "x\n\nFrom: root\r\n@\x7f\x80%",
		.kind = "reply",
		.project = "g/p\nMR: 99",
		.iid = 7,
	};
	static const char msg[] = "Message-ID: <a\r\nPB-Spool: 1>\n\n"
				  "PB-Spool: 1\nSize: 3\n\nabc";
	struct spool *sp = open_rw();
	struct spool_record rec;
	struct spool_meta bad;
	char name[SPOOL_NAME_MAX + 1], path[800], big[2000];
	struct buf file = BUF_INIT(1 << 20);
	size_t i, lines = 0;

	assert_int_equal(spool_put(name, sizeof(name), sp, &evil, msg,
				   sizeof(msg) - 1),
			 0);
	/* The queue id is no file name; the Message-ID hash is used. */
	assert_true(spool_name_valid(name));
	assert_null(strchr(name, '/'));

	/* The header block is 11 lines of printable ASCII and an empty
	 * line, whatever the values hold. */
	{
		FILE *f;
		char chunk[4096];
		size_t n;

		snprintf(path, sizeof(path), "%s/new/%s", spdir, name);
		f = fopen(path, "rb");
		assert_non_null(f);
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			assert_int_equal(buf_add(&file, chunk, n), 0);
		fclose(f);
	}
	for (i = 0; i < file.len; i++) {
		unsigned char c = (unsigned char)file.data[i];

		if (c == '\n') {
			lines++;
			if (i > 0 && file.data[i - 1] == '\n')
				break;
			continue;
		}
		assert_true(c >= 0x20 && c < 0x7f);
	}
	assert_int_equal(lines, 13); /* 12 fields and the empty line */
	assert_int_equal(file.len - i - 1, sizeof(msg) - 1);
	buf_release(&file);

	spool_record_init(&rec);
	assert_int_equal(spool_load(&rec, sp, SPOOL_NEW, name), 0);
	assert_string_equal(rec.queue_id, evil.queue_id);
	assert_string_equal(rec.message_id, evil.message_id);
	assert_string_equal(rec.sender, evil.sender);
	assert_string_equal(rec.project, evil.project);
	assert_int_equal(rec.iid, 7);
	assert_int_equal(rec.message.len, sizeof(msg) - 1);
	assert_memory_equal(rec.message.data, msg, sizeof(msg) - 1);

	/* Found by its hostile Message-ID, too. */
	{
		struct spool_entry_list found = { 0 };

		assert_int_equal(spool_find(&found, sp, evil.message_id), 0);
		assert_int_equal(found.nr, 1);
		spool_entry_list_release(&found);
	}

	/* Values over their caps and inconsistent targets are refused, and
	 * leave nothing behind. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	bad = plain_meta;
	bad.message_id = big;
	assert_int_equal(spool_put(NULL, 0, sp, &bad, "x", 1), PB_EINVAL);
	bad = plain_meta;
	bad.sender = big;
	assert_int_equal(spool_put(NULL, 0, sp, &bad, "x", 1), PB_EINVAL);
	bad = plain_meta;
	bad.kind = "Reply!";
	assert_int_equal(spool_put(NULL, 0, sp, &bad, "x", 1), PB_EINVAL);
	bad = plain_meta;
	bad.project = NULL;
	assert_int_equal(spool_put(NULL, 0, sp, &bad, "x", 1), PB_EINVAL);
	bad = plain_meta;
	bad.iid = 0;
	assert_int_equal(spool_put(NULL, 0, sp, &bad, "x", 1), PB_EINVAL);
	bad = plain_meta;
	bad.patch = -1;
	assert_int_equal(spool_put(NULL, 0, sp, &bad, "x", 1), PB_EINVAL);
	assert_int_equal(spool_put(name, 5, sp, &plain_meta, "x", 1),
			 PB_EINVAL);
	assert_int_equal(count(sp, SPOOL_NEW), 1);
	assert_int_equal(count(sp, SPOOL_TMP), 0);

	/* Names from outside never reach the file system. */
	assert_int_equal(spool_done(sp, "../new/x"), PB_EINVAL);
	assert_int_equal(spool_read(&rec, sp, "../../etc/passwd"), PB_EINVAL);
	assert_false(spool_name_valid("0000000000000001.a.1.1.reason"));
	assert_false(spool_name_valid("000000000000001.a.1.1"));
	assert_false(spool_name_valid("0000000000000001..1.1"));
	assert_false(spool_name_valid("0000000000000001.a-b.1.1"));
	assert_false(spool_name_valid(".0000000000000001.a.1.1"));
	assert_true(spool_name_valid("0000000000000001.a.1.1"));
	spool_record_release(&rec);
	spool_free(sp);
}

/* A valid record's bytes, for the corruption tests. */
static void valid_record(struct buf *out)
{
	static const char rec[] = "PB-Spool: 1\n"
				  "Spool-Time: 1733220000\n"
				  "Queue-Id: 4Y3ZQk\n"
				  "Message-Id: a@b\n"
				  "Sender: s@b\n"
				  "Kind: reply\n"
				  "Project: g/p\n"
				  "MR: 1\n"
				  "Revision: 2\n"
				  "Patch: 0\n"
				  "Size: 5\n"
				  "\n"
				  "hello";

	buf_reset(out);
	assert_int_equal(buf_add(out, rec, sizeof(rec) - 1), 0);
}

/*
 * Version 2 records carry Received-Size: a record of the first Size bytes
 * of a larger mail says how large it was; version 1 records stay readable
 * as whole mails.
 */
static void test_received_size(void **state)
{
	struct buf b = BUF_INIT(1 << 20);
	struct spool_record rec;
	char *at;

	spool_record_init(&rec);
	valid_record(&b);
	assert_int_equal(spool_parse(&rec, b.data, b.len), 0);
	assert_int_equal(rec.version, 1);
	assert_int_equal(rec.received, 5);
	b.data[10] = '2';
	at = strstr(b.data, "Size: 5\n");
	assert_non_null(at);
	{
		struct buf t = BUF_INIT(1 << 20);

		buf_add(&t, b.data, (size_t)(at - b.data) + 8);
		buf_adds(&t, "Received-Size: 7340032\n");
		buf_adds(&t, at + 8);
		assert_int_equal(spool_parse(&rec, t.data, t.len), 0);
		assert_int_equal(rec.version, 2);
		assert_int_equal(rec.received, 7340032);
		/* the copy kept in the state database says it too */
		{
			struct buf f = BUF_INIT(1 << 20);
			struct spool_record again;

			spool_record_init(&again);
			assert_int_equal(spool_format(&f, &rec), 0);
			assert_int_equal(spool_parse(&again, f.data, f.len), 0);
			assert_int_equal(again.received, 7340032);
			assert_int_equal(again.message.len, 5);
			spool_record_release(&again);
			buf_release(&f);
		}
		/* never below Size */
		buf_reset(&t);
		buf_add(&t, b.data, (size_t)(at - b.data) + 8);
		buf_adds(&t, "Received-Size: 4\n");
		buf_adds(&t, at + 8);
		assert_int_equal(spool_parse(&rec, t.data, t.len), PB_EINVAL);
		buf_release(&t);
	}
	spool_record_release(&rec);
	buf_release(&b);
}

static void test_parse_strict(void **state)
{
	static const struct {
		const char *from, *to; /* replace the first from by to */
	} cases[] = {
		{ "PB-Spool: 1", "PB-Spool: 3" },
		{ "PB-Spool: 1", "PB-Spool: 2" }, /* 2 needs Received-Size */
		{ "PB-Spool: 1", "PB-Spool: 01" },
		{ "PB-Spool: 1", "X-Spool: 1" },
		{ "Size: 5", "Size: 6" },
		{ "Size: 5", "Size: 4" },
		{ "Size: 5", "Size: -5" },
		{ "Size: 5", "Size: 5 " },
		{ "Size: 5", "Size: 999999999999" },
		{ "Message-Id: a@b", "Message-Id: a%0a@b" },
		{ "Message-Id: a@b", "Message-Id: a%00@b" },
		{ "Message-Id: a@b", "Message-Id: a%4" },
		{ "Message-Id: a@b", "Message-Id: a\x01@b" },
		{ "Message-Id: a@b", "Message-Id:a@b" },
		{ "Message-Id: a@b\n", "" },
		{ "Sender: s@b\n", "Sender: s@b\nSender: t@b\n" },
		{ "Kind: reply", "Kind: Re ply" },
		{ "MR: 1", "MR: 0" },
		{ "Project: g/p", "Project: " },
		{ "Revision: 2", "Revision: 2147483648" },
		{ "Patch: 0\n", "Patch: 0\r\n" },
		{ "\n\nhello", "\nhello" },
		{ "PB-Spool: 1\n", "" },
	};
	struct buf b = BUF_INIT(1 << 20);
	struct spool_record rec;
	size_t i;

	spool_record_init(&rec);
	valid_record(&b);
	assert_int_equal(spool_parse(&rec, b.data, b.len), 0);
	assert_string_equal(rec.message.data, "hello");
	assert_int_equal(rec.revision, 2);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *at;
		struct buf t = BUF_INIT(1 << 20);

		valid_record(&b);
		at = strstr(b.data, cases[i].from);
		assert_non_null(at);
		buf_add(&t, b.data, (size_t)(at - b.data));
		buf_adds(&t, cases[i].to);
		buf_adds(&t, at + strlen(cases[i].from));
		if (spool_parse(&rec, t.data, t.len) != PB_EINVAL)
			fail_msg("case %zu (%s) parsed", i, cases[i].to);
		assert_null(rec.message_id); /* left empty */
		buf_release(&t);
	}
	/* Every truncation of a valid record is refused. */
	valid_record(&b);
	for (i = 0; i < b.len; i++)
		assert_int_equal(spool_parse(&rec, b.data, i), PB_EINVAL);
	/* Random damage never crashes (the sanitizer build checks the
	 * memory accesses) and either parses or is PB_EINVAL. */
	srand(42);
	for (i = 0; i < 20000; i++) {
		int rc, k, n = 1 + rand() % 4;

		valid_record(&b);
		for (k = 0; k < n; k++) {
			size_t at = (size_t)rand() % b.len;

			switch (rand() % 3) {
			case 0:
				b.data[at] = (char)(rand() % 256);
				break;
			case 1:
				buf_truncate(&b, at);
				break;
			default:
				buf_addch(&b, rand() % 256);
				break;
			}
			if (!b.len)
				break;
		}
		rc = spool_parse(&rec, b.data, b.len);
		assert_true(rc == 0 || rc == PB_EINVAL);
	}
	spool_record_release(&rec);
	buf_release(&b);
}

static void test_corrupt_goes_dead(void **state)
{
	struct spool *sp = open_rw();
	struct spool_record rec;
	struct buf b = BUF_INIT(1 << 20), reason = BUF_INIT(4096);
	char name[SPOOL_NAME_MAX + 1], path[800], target[800];
	int i, bad = 0;

	spool_record_init(&rec);
	/* A few corrupt records of valid names, and one good one. */
	valid_record(&b);
	write_file("new", "0000000000000001.q.1.1", "garbage", 7);
	write_file("new", "0000000000000001.q.1.2", b.data, b.len - 1);
	write_file("new", "0000000000000001.q.1.3", "", 0);
	{
		char head[SPOOL_HEADER_MAX + 10];

		memset(head, 'A', sizeof(head));
		memcpy(head, "PB-Spool: 1\nSpool-Time: ", 24);
		write_file("new", "0000000000000001.q.1.4", head, sizeof(head));
	}
	snprintf(path, sizeof(path), "%s/new/0000000000000001.q.1.5", spdir);
	snprintf(target, sizeof(target), "%s/new/0000000000000001.q.1.1",
		 spdir);
	assert_int_equal(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/new/0000000000000001.q.1.6", spdir);
	assert_int_equal(mkdir(path, 0700), 0);
	write_file("new", "0000000000000002.q.1.1", b.data, b.len);
	/* A stranger's file is left alone. */
	write_file("new", "README", "hi", 2);

	for (i = 0; i < 7; i++) {
		int rc;

		assert_int_equal(spool_claim_next(name, sizeof(name), sp), 0);
		rc = spool_read(&rec, sp, name);
		if (rc == 0) {
			assert_string_equal(name, "0000000000000002.q.1.1");
			assert_int_equal(spool_done(sp, name), 0);
			continue;
		}
		assert_int_equal(rc, PB_EINVAL);
		assert_non_null(strstr(err_msg(), "moved to dead/"));
		assert_null(rec.message_id);
		bad++;
		buf_reset(&reason);
		assert_int_equal(spool_dead_reason(&reason, sp, name), 0);
		assert_non_null(
			strstr(reason.data, "Reason: corrupt record: "));
	}
	assert_int_equal(bad, 6);
	assert_int_equal(spool_claim_next(name, sizeof(name), sp),
			 PB_ENOTFOUND);
	assert_int_equal(count(sp, SPOOL_DEAD), 6);
	assert_int_equal(count(sp, SPOOL_DONE), 1);
	assert_int_equal(entries("new", "README"), 1);
	/* dead/ holds each record and its reason. */
	assert_int_equal(entries("dead", ""), 12);
	assert_int_equal(entries("dead", "."), 0);

	/* spool_dead() by the daemon: the reason is made printable. */
	assert_int_equal(spool_put(name, sizeof(name), sp, &plain_meta, "x", 1),
			 0);
	assert_int_equal(spool_claim_next(name, sizeof(name), sp), 0);
	assert_int_equal(spool_dead(sp, name, "forge said 400\n\x1b[31mX"), 0);
	buf_reset(&reason);
	assert_int_equal(spool_dead_reason(&reason, sp, name), 0);
	assert_non_null(strstr(reason.data, "Reason: forge said 400??[31mX\n"));
	assert_int_equal(spool_load(&rec, sp, SPOOL_DEAD, name), 0);
	assert_int_equal(count(sp, SPOOL_DEAD), 7);
	assert_int_equal(spool_dead(sp, name, "again"), PB_ENOTFOUND);
	assert_int_equal(count(sp, SPOOL_DEAD), 7);

	spool_record_release(&rec);
	buf_release(&b);
	buf_release(&reason);
	spool_free(sp);
}

/* Two processes claim 500 records: each is claimed exactly once. */
static void test_claim_exclusive(void **state)
{
	enum { RECORDS = 500, CLAIMERS = 2 };
	struct spool *sp = open_rw();
	char claims[CLAIMERS][700];
	char *seen[RECORDS] = { 0 };
	size_t nseen = 0;
	pid_t pids[CLAIMERS];
	int c, i;

	for (i = 0; i < RECORDS; i++)
		assert_int_equal(
			spool_put(NULL, 0, sp, &plain_meta, "body\n", 5), 0);
	for (c = 0; c < CLAIMERS; c++) {
		snprintf(claims[c], sizeof(claims[c]), "%s/claims.%d", dir, c);
		pids[c] = fork();
		assert_true(pids[c] >= 0);
		if (pids[c] == 0) {
			struct spool *mine;
			struct spool_record rec;
			char name[SPOOL_NAME_MAX + 1];
			FILE *f = fopen(claims[c], "w");
			int rc;

			if (!f || spool_open(&mine, spdir, SPOOL_READER))
				_exit(2);
			spool_record_init(&rec);
			while ((rc = spool_claim_next(name, sizeof(name),
						      mine)) == 0) {
				if (spool_read(&rec, mine, name) ||
				    spool_done(mine, name))
					_exit(3);
				fprintf(f, "%s\n", name);
			}
			_exit(rc == PB_ENOTFOUND && fclose(f) == 0 ? 0 : 4);
		}
	}
	for (c = 0; c < CLAIMERS; c++) {
		int status;
		FILE *f;
		char line[256];
		size_t mine = 0;

		assert_int_equal(waitpid(pids[c], &status, 0), pids[c]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		f = fopen(claims[c], "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			assert_true(nseen < RECORDS);
			seen[nseen++] = strdup(line);
			mine++;
		}
		fclose(f);
		print_message("claimer %d: %zu records\n", c, mine);
	}
	assert_int_equal(nseen, RECORDS);
	for (i = 0; i < RECORDS; i++) {
		int j;

		for (j = i + 1; j < RECORDS; j++)
			if (!strcmp(seen[i], seen[j]))
				fail_msg("claimed twice: %s", seen[i]);
	}
	for (i = 0; i < RECORDS; i++)
		free(seen[i]);
	assert_int_equal(count(sp, SPOOL_DONE), RECORDS);
	assert_int_equal(count(sp, SPOOL_NEW), 0);
	assert_int_equal(count(sp, SPOOL_CUR), 0);
	spool_free(sp);
}

struct put_thread {
	struct spool *sp;
	char names[50][SPOOL_NAME_MAX + 1];
	int rc;
};

static void *put_many(void *arg)
{
	struct put_thread *t = arg;
	int i;

	for (i = 0; i < 50 && !t->rc; i++)
		t->rc = spool_put(t->names[i], sizeof(t->names[i]), t->sp,
				  &plain_meta, "t", 1);
	return NULL;
}

/* Concurrent spool_put() on one handle: unique names, all complete. */
static void test_threads(void **state)
{
	enum { THREADS = 8 };
	struct spool *sp = open_rw();
	static struct put_thread t[THREADS];
	pthread_t tid[THREADS];
	int i, j, k, l;

	for (i = 0; i < THREADS; i++) {
		t[i].sp = sp;
		t[i].rc = 0;
		assert_int_equal(pthread_create(&tid[i], NULL, put_many, &t[i]),
				 0);
	}
	for (i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(tid[i], NULL), 0);
		assert_int_equal(t[i].rc, 0);
	}
	assert_int_equal(count(sp, SPOOL_NEW), THREADS * 50);
	for (i = 0; i < THREADS; i++)
		for (j = 0; j < 50; j++)
			for (k = i; k < THREADS; k++)
				for (l = k == i ? j + 1 : 0; l < 50; l++)
					assert_string_not_equal(t[i].names[j],
								t[k].names[l]);
	spool_free(sp);
}

static void set_age(const char *sub, const char *name, time_t age)
{
	char path[800];
	struct timespec ts[2];

	snprintf(path, sizeof(path), "%s/%s/%s", spdir, sub, name);
	ts[0].tv_sec = ts[1].tv_sec = time(NULL) - age;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* A daemon crash leaves records in cur/, a milter crash files in tmp/. */
/* area keeps its records until they are an hour old, then loses all n. */
static void assert_prunes(struct spool *sp, enum spool_area area, size_t n)
{
	size_t removed = 99;

	assert_int_equal(spool_prune(&removed, sp, area, 3600, time(NULL)), 0);
	assert_int_equal(removed, 0);
	assert_int_equal(
		spool_prune(&removed, sp, area, 3600, time(NULL) + 7200), 0);
	assert_int_equal(removed, n);
	assert_int_equal(count(sp, area), 0);
}

static void test_recover(void **state)
{
	struct spool *sp = open_rw();
	struct spool_record rec;
	char name[SPOOL_NAME_MAX + 1];
	size_t requeued = 99, removed = 99;
	int i;

	for (i = 0; i < 3; i++)
		assert_int_equal(spool_put(NULL, 0, sp, &plain_meta, "abc", 3),
				 0);
	assert_int_equal(spool_claim_next(name, sizeof(name), sp), 0);
	assert_int_equal(spool_claim_next(name, sizeof(name), sp), 0);
	write_file("tmp", "0000000000000001.q.1.1", "PB-Spool: 1\nSpo", 16);
	set_age("tmp", "0000000000000001.q.1.1", 2 * 3600);
	write_file("tmp", "0000000000000001.q.1.2", "PB-Spool: 1\n", 12);
	write_file("dead", ".tmp.x.reason.1.1", "Dead", 4);
	set_age("dead", ".tmp.x.reason.1.1", 2 * 3600);
	write_file("dead", "0000000000000003.q.1.1.reason", "Reason: x\n", 10);
	set_age("dead", "0000000000000003.q.1.1.reason", 2 * 3600);
	/* A reason whose record is there stays, however old. */
	write_file("dead", "0000000000000004.q.1.1", "x", 1);
	write_file("dead", "0000000000000004.q.1.1.reason", "Reason: x\n", 10);
	set_age("dead", "0000000000000004.q.1.1.reason", 2 * 3600);

	/* Readers never see tmp/. */
	assert_int_equal(count(sp, SPOOL_TMP), 2);
	assert_int_equal(count(sp, SPOOL_NEW), 1);
	assert_int_equal(count(sp, SPOOL_CUR), 2);

	assert_int_equal(spool_recover(&requeued, &removed, sp,
				       SPOOL_TMP_STALE_DEFAULT, time(NULL)),
			 0);
	assert_int_equal(requeued, 2);
	assert_int_equal(removed, 3);
	assert_int_equal(count(sp, SPOOL_CUR), 0);
	assert_int_equal(count(sp, SPOOL_NEW), 3);
	assert_int_equal(entries("tmp", ""), 1); /* the fresh one */
	assert_int_equal(entries("dead", ""), 2);

	spool_record_init(&rec);
	for (i = 0; i < 3; i++) {
		assert_int_equal(spool_claim_next(name, sizeof(name), sp), 0);
		assert_int_equal(spool_read(&rec, sp, name), 0);
		assert_memory_equal(rec.message.data, "abc", 3);
		assert_int_equal(spool_done(sp, name), 0);
	}
	/* Nothing to do is fine; NULL counters are allowed. */
	assert_int_equal(spool_recover(NULL, NULL, sp, 0, time(NULL) + 10), 0);
	assert_int_equal(entries("tmp", ""), 0);

	/* done/ is pruned after the retention period only, and so is
	 * dead/ ([spool] keep_dead), a record with its reason. */
	i = count(sp, SPOOL_DEAD);
	assert_int_equal(spool_put(NULL, 0, sp, &plain_meta, "x", 1), 0);
	assert_int_equal(spool_claim_next(name, sizeof(name), sp), 0);
	assert_int_equal(spool_dead(sp, name, "forge said 400"), 0);
	assert_int_equal(count(sp, SPOOL_DEAD), i + 1);
	assert_prunes(sp, SPOOL_DONE, 3);
	assert_prunes(sp, SPOOL_DEAD, i + 1);
	assert_int_equal(entries("dead", ""), 0); /* no reason left */
	spool_record_release(&rec);
	spool_free(sp);
}

static void test_limits(void **state)
{
	struct spool *sp = open_rw();
	char name[SPOOL_NAME_MAX + 1];
	char *big;
	int i;

	assert_int_equal(spool_set_limits(sp, 3, 64 * 1024), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(spool_put(NULL, 0, sp, &plain_meta, "x", 1),
				 0);
	assert_int_equal(spool_put(NULL, 0, sp, &plain_meta, "x", 1),
			 PB_ELIMIT);
	assert_non_null(strstr(err_msg(), "max_records"));
	assert_int_equal(count(sp, SPOOL_NEW), 3);
	/* Claimed records no longer count. */
	assert_int_equal(spool_claim_next(name, sizeof(name), sp), 0);
	assert_int_equal(spool_put(NULL, 0, sp, &plain_meta, "x", 1), 0);

	assert_int_equal(spool_set_limits(sp, 100, 64 * 1024), 0);
	big = calloc(1, 64 * 1024 + 1);
	assert_non_null(big);
	assert_int_equal(spool_put(NULL, 0, sp, &plain_meta, big, 64 * 1024),
			 0);
	assert_int_equal(spool_put(NULL, 0, sp, &plain_meta, big,
				   64 * 1024 + 1),
			 PB_ELIMIT);
	free(big);
	assert_int_equal(spool_set_limits(sp, 0, (size_t)PB_MAIL_MAX_MAX + 1),
			 PB_EINVAL);
	assert_int_equal(spool_set_limits(sp, 0, 0), 0);
	assert_int_equal(count(sp, SPOOL_TMP), 0);
	spool_free(sp);
}

/* A full disk (here: RLIMIT_FSIZE) is PB_ETEMP and leaves no trace. */
static void test_disk_full(void **state)
{
	struct spool *sp = open_rw();
	pid_t pid;
	int status;

	spool_free(sp);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 4096, 4096 };
		static char msg[64 * 1024];
		int rc;

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) ||
		    spool_open(&sp, spdir, SPOOL_WRITER))
			_exit(2);
		rc = spool_put(NULL, 0, sp, &plain_meta, msg, sizeof(msg));
		if (rc != PB_ETEMP) {
			fprintf(stderr, "put: %d %s\n", rc, err_msg());
			_exit(3);
		}
		/* Small ones still pass. */
		_exit(spool_put(NULL, 0, sp, &plain_meta, msg, 100) ? 4 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(entries("tmp", ""), 0);
	assert_int_equal(entries("new", ""), 1);
}

static void test_bad_dirs(void **state)
{
	struct spool *sp = (struct spool *)1;
	char path[800];
	int fd;

	/* Missing parent. */
	snprintf(path, sizeof(path), "%s/no/such/spool", dir);
	assert_int_equal(spool_open(&sp, path, SPOOL_WRITER), PB_ENOTFOUND);
	assert_null(sp);
	assert_non_null(strstr(err_msg(), "no/such"));
	/* A file where the directory should be. */
	snprintf(path, sizeof(path), "%s/file", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_true(spool_open(&sp, path, SPOOL_WRITER) < 0);
	assert_null(sp);
	/* Bad flags. */
	assert_int_equal(spool_open(&sp, spdir, 0), PB_EINVAL);
	assert_int_equal(spool_open(&sp, spdir, 8), PB_EINVAL);
	assert_int_equal(spool_open(&sp, "", SPOOL_READER), PB_EINVAL);

	/* A writer-only handle does not touch the reader's areas. */
	{
		struct spool_entry_list found = { 0 };
		struct spool_record rec;
		size_t n;

		spool_record_init(&rec);
		assert_int_equal(spool_open(&sp, spdir, SPOOL_WRITER), 0);
		assert_int_equal(spool_put(NULL, 0, sp, &plain_meta, "x", 1),
				 0);
		assert_int_equal(spool_count(&n, sp, SPOOL_NEW), 0);
		assert_int_equal(n, 1);
		assert_int_equal(spool_count(&n, sp, SPOOL_CUR), PB_EPERM);
		assert_int_equal(spool_find(&found, sp, "x@y"), PB_EPERM);
		assert_int_equal(spool_load(&rec, sp, SPOOL_DONE,
					    "0000000000000001.a.1.1"),
				 PB_EPERM);
		spool_free(sp);
	}
}

/*
 * Run fn in a child process as an unprivileged user (uid, gid), or in
 * this process when we are not root.  Returns the child's exit status.
 */
static int as_user(uid_t uid, gid_t gid, int (*fn)(void))
{
	pid_t pid;
	int status;

	if (geteuid() != 0)
		return fn();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(gid) || setuid(uid))
			_exit(99);
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int open_expect_eperm(void)
{
	struct spool *sp;
	int rc = spool_open(&sp, spdir, SPOOL_WRITER);

	if (rc != PB_EPERM) {
		fprintf(stderr, "open: %d %s\n", rc, err_msg());
		return 1;
	}
	return strstr(err_msg(), spdir) ? 0 : 2;
}

/* A read-only spool fails at open, with PB_EPERM and the directory. */
static void test_read_only(void **state)
{
	char path[800];

	assert_int_equal(chmod(dir, 0755), 0);
	/* No subdirectories, and no right to make them. */
	assert_int_equal(mkdir(spdir, 0555), 0);
	assert_int_equal(as_user(65534, 65534, open_expect_eperm), 0);
	/* Subdirectories that exist but are read-only. */
	assert_int_equal(chmod(spdir, 0755), 0);
	spool_free(open_rw());
	snprintf(path, sizeof(path), "%s/new", spdir);
	assert_int_equal(chmod(path, 0555), 0);
	snprintf(path, sizeof(path), "%s/tmp", spdir);
	assert_int_equal(chmod(path, 0777), 0);
	assert_int_equal(as_user(65534, 65534, open_expect_eperm), 0);
}

/* The documented layout: two users sharing a setgid group directory. */
enum { MILTER_UID = 64001, DAEMON_UID = 64002, OTHER_UID = 64003 };
enum { SPOOL_GID = 64999, OTHER_GID = 64998 };

static int milter_side(void)
{
	struct spool *sp;

	umask(077); /* must not keep the daemon from reading */
	if (spool_open(&sp, spdir, SPOOL_WRITER))
		return 1;
	if (spool_put(NULL, 0, sp, &plain_meta, "one", 3) ||
	    spool_put(NULL, 0, sp, &plain_meta, "two", 3))
		return 2;
	spool_free(sp);
	return 0;
}

static int daemon_side(void)
{
	struct spool *sp;
	struct spool_record rec;
	char name[SPOOL_NAME_MAX + 1];
	int rc = 0;

	umask(077);
	if (spool_open(&sp, spdir, SPOOL_READER))
		return 1;
	spool_record_init(&rec);
	if (spool_claim_next(name, sizeof(name), sp) ||
	    spool_read(&rec, sp, name) || spool_done(sp, name))
		rc = 2;
	else if (spool_claim_next(name, sizeof(name), sp) ||
		 spool_dead(sp, name, "test") ||
		 spool_recover(NULL, NULL, sp, 0, time(NULL) + 10) ||
		 spool_prune(NULL, sp, SPOOL_DONE, 0, time(NULL) + 10))
		rc = 3;
	if (rc)
		fprintf(stderr, "daemon: %s\n", err_msg());
	spool_record_release(&rec);
	spool_free(sp);
	return rc;
}

static int other_side(void)
{
	struct spool *sp;

	if (spool_open(&sp, spdir, SPOOL_READER) != PB_EPERM)
		return 1;
	/* An operator outside the group is told what the layout wants. */
	if (spool_open(&sp, spdir, SPOOL_INSPECT) != PB_EPERM)
		return 2;
	if (!strstr(err_msg(), "uid 64003") || !strstr(err_msg(), "lacks") ||
	    !strstr(err_msg(), "gid 64999") || !strstr(err_msg(), "2770")) {
		fprintf(stderr, "other: %s\n", err_msg());
		return 3;
	}
	return 0;
}

/* Before the daemon: subdirectories are the spool owner's to make. */
static int milter_before_daemon(void)
{
	struct spool *sp;

	if (spool_open(&sp, spdir, SPOOL_WRITER) != PB_EPERM)
		return 1;
	if (!strstr(err_msg(), "/tmp is missing") ||
	    !strstr(err_msg(), "uid 64002") || !strstr(err_msg(), "2770"))
		return 2;
	return 0;
}

static int daemon_open(void)
{
	struct spool *sp;

	umask(077);
	if (spool_open(&sp, spdir, SPOOL_READER))
		return 1;
	spool_free(sp);
	return 0;
}

static void test_shared_group(void **state)
{
	char path[800];
	struct stat st;

	if (geteuid() != 0) {
		print_message("not root: cannot switch users, skipped\n");
		skip();
	}
	assert_int_equal(chmod(dir, 0755), 0);
	/* What the admin does: install -d -o DAEMON -g GROUP -m 2770 DIR. */
	assert_int_equal(mkdir(spdir, 0700), 0);
	assert_int_equal(chown(spdir, DAEMON_UID, SPOOL_GID), 0);
	assert_int_equal(chmod(spdir, 02770), 0);
	/* The milter cannot make the subdirectories: they would be its. */
	assert_int_equal(as_user(MILTER_UID, SPOOL_GID, milter_before_daemon),
			 0);
	/* The daemon makes them (as tmpfiles.d does at boot). */
	assert_int_equal(as_user(DAEMON_UID, SPOOL_GID, daemon_open), 0);
	snprintf(path, sizeof(path), "%s/cur", spdir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, DAEMON_UID);
	assert_int_equal(st.st_gid, SPOOL_GID);
	assert_int_equal(st.st_mode & 07777, 02770);
	assert_int_equal(as_user(MILTER_UID, SPOOL_GID, milter_side), 0);
	assert_int_equal(entries("new", ""), 2);
	assert_int_equal(as_user(DAEMON_UID, SPOOL_GID, daemon_side), 0);
	assert_int_equal(entries("done", ""), 0); /* pruned */
	assert_int_equal(entries("dead", ""), 2);
	snprintf(path, sizeof(path), "%s/dead", spdir);
	{
		DIR *d = opendir(path);
		struct dirent *e;

		assert_non_null(d);
		while ((e = readdir(d))) {
			char p[1200];

			if (e->d_name[0] == '.' || strstr(e->d_name, ".reason"))
				continue;
			snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
			assert_int_equal(stat(p, &st), 0);
			assert_int_equal(st.st_uid, MILTER_UID);
			assert_int_equal(st.st_gid, SPOOL_GID);
			assert_int_equal(st.st_mode & 0777, 0640);
		}
		closedir(d);
	}
	assert_int_equal(as_user(OTHER_UID, OTHER_GID, other_side), 0);
}

/*
 * The kill -9 invariant: a writer killed at random points never leaves a
 * partial record in new/ (only tmp/ may hold one).  Each body is a
 * pattern derived from the Message-ID, so a record is checked whole.
 */
static void fill_body(char *body, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		body[i] = (char)((seed * 31 + i * 7) % 251);
}

static void test_kill9(void **state)
{
	const char *env = getenv("PB_SPOOL_KILL_ROUNDS");
	int rounds = env ? atoi(env) : 40, r;
	struct spool *sp = open_rw();
	struct spool_record rec;
	char name[SPOOL_NAME_MAX + 1], *body;
	size_t records = 0, leftovers;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	srand((unsigned)time(NULL));
	for (r = 0; r < rounds; r++) {
		unsigned wait_us = 500 + (unsigned)rand() % 30000;
		pid_t pid = fork();
		int status;

		assert_true(pid >= 0);
		if (pid == 0) {
			struct spool *w;
			static char buf[512 * 1024];
			unsigned i, seed = (unsigned)getpid() * 1000u;

			if (spool_open(&w, spdir, SPOOL_WRITER) ||
			    spool_set_limits(w, 1000000, sizeof(buf)))
				_exit(2);
			for (i = 0;; i++) {
				struct spool_meta m = plain_meta;
				char id[64];
				size_t len =
					(size_t)(seed + i) * 7919 % sizeof(buf);

				snprintf(id, sizeof(id), "%u.%zu@kill9",
					 seed + i, len);
				m.message_id = id;
				fill_body(buf, len, seed + i);
				if (spool_put(NULL, 0, w, &m, buf, len))
					_exit(3);
			}
		}
		usleep(wait_us);
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
	}

	/* Every record in new/ is whole. */
	body = malloc(512 * 1024);
	assert_non_null(body);
	spool_record_init(&rec);
	while (spool_claim_next(name, sizeof(name), sp) == 0) {
		unsigned seed;
		size_t len;
		char tail[16];

		assert_int_equal(spool_read(&rec, sp, name), 0);
		assert_int_equal(sscanf(rec.message_id, "%u.%zu@kill%15s",
					&seed, &len, tail),
				 3);
		assert_int_equal(rec.message.len, len);
		fill_body(body, len, seed);
		assert_memory_equal(rec.message.data, body, len);
		assert_int_equal(spool_done(sp, name), 0);
		records++;
	}
	free(body);
	spool_record_release(&rec);
	assert_int_equal(count(sp, SPOOL_DEAD), 0);
	leftovers = count(sp, SPOOL_TMP);
	assert_true(leftovers <= (size_t)rounds);
	assert_int_equal(spool_recover(NULL, NULL, sp, 0, time(NULL) + 10), 0);
	assert_int_equal(count(sp, SPOOL_TMP), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	print_message("kill -9: %d rounds, %zu whole records, %zu partial in "
		      "tmp/, %.1f s\n",
		      rounds, records, leftovers,
		      (double)(t1.tv_sec - t0.tv_sec) +
			      (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	assert_true(records > 0);
	spool_free(sp);
}

/* status and why: an inspecting handle looks and changes nothing. */
struct walk {
	int records, unreadable, in_project;
	int corrupt, cannot_read, last_err; /* of the unreadable */
};

static int walk_one(const char *name, const struct spool_record *hdr, int err,
		    void *arg)
{
	struct walk *w = arg;

	assert_true(spool_name_valid(name));
	w->records++;
	if (!hdr) {
		assert_true(err < 0);
		assert_non_null(strstr(err_msg(), name));
		w->unreadable++;
		w->corrupt += err == PB_EINVAL;
		w->cannot_read += err != PB_EINVAL;
		w->last_err = err;
		return 0;
	}
	assert_int_equal(err, 0);
	assert_string_equal(hdr->name, name);
	assert_int_equal(hdr->message.len, 0);
	if (!strcmp(hdr->project, plain_meta.project) && hdr->iid == 12)
		w->in_project++;
	return 0;
}

static int stop_at_first(const char *name, const struct spool_record *hdr,
			 int err, void *arg)
{
	(void)name;
	(void)hdr;
	(void)err;
	(*(int *)arg)++;
	return 7;
}

static int inspect_read_only(void)
{
	struct spool_entry_list found = { 0 };
	struct walk w = { 0 };
	struct spool *sp;
	size_t n;

	if (spool_open(&sp, spdir, SPOOL_INSPECT))
		return 1;
	if (spool_count(&n, sp, SPOOL_DONE) || n != 1 ||
	    spool_find(&found, sp, plain_meta.message_id) || found.nr != 3 ||
	    spool_each_header(sp, SPOOL_NEW, walk_one, &w) || w.records != 1)
		return 2;
	spool_entry_list_release(&found);
	spool_free(sp);
	/* A reader needs write access, which this user lacks (when the
	 * test runs as root and this is another user). */
	if (!access(spdir, W_OK))
		return 0;
	return spool_open(&sp, spdir, SPOOL_READER) == PB_EPERM ? 0 : 3;
}

static void test_inspect(void **state)
{
	struct spool_meta other = plain_meta;
	struct spool_entry_list found = { 0 };
	struct buf reason = BUF_INIT(4096);
	struct spool *sp = NULL, *rw;
	struct walk w = { 0 };
	char name[SPOOL_NAME_MAX + 1], path[800];
	struct stat st;
	int calls = 0;
	size_t n;

	/* A missing spool is not created. */
	assert_int_equal(spool_open(&sp, spdir, SPOOL_INSPECT), PB_ENOTFOUND);
	assert_null(sp);
	assert_int_equal(stat(spdir, &st), -1);

	rw = open_rw();
	other.project = "group/other";
	other.message_id = "other@example.org";
	assert_int_equal(spool_put(NULL, 0, rw, &plain_meta, "a", 1), 0);
	assert_int_equal(spool_put(NULL, 0, rw, &other, "b", 1), 0);
	assert_int_equal(spool_put(NULL, 0, rw, &plain_meta, "c", 1), 0);
	assert_int_equal(spool_put(NULL, 0, rw, &plain_meta, "d", 1), 0);
	/* One in cur/, one in done/, one in dead/ with its reason. */
	assert_int_equal(spool_claim_next(name, sizeof(name), rw), 0);
	assert_int_equal(spool_claim_next(name, sizeof(name), rw), 0);
	assert_int_equal(spool_claim_next(name, sizeof(name), rw), 0);
	assert_int_equal(spool_done(rw, name), 0);
	assert_int_equal(spool_claim_next(name, sizeof(name), rw), 0);
	assert_int_equal(spool_dead(rw, name, "the forge said 403"), 0);
	write_file("new", "0000000000000001.q.1.1", "garbage", 7);

	assert_int_equal(spool_open(&sp, spdir, SPOOL_INSPECT), 0);
	assert_int_equal(spool_count(&n, sp, SPOOL_NEW), 0);
	assert_int_equal(n, 1);
	assert_int_equal(spool_count(&n, sp, SPOOL_CUR), 0);
	assert_int_equal(n, 2);
	assert_int_equal(spool_count(&n, sp, SPOOL_TMP), PB_EPERM);
	assert_int_equal(spool_each_header(sp, SPOOL_CUR, walk_one, &w), 0);
	assert_int_equal(w.records, 2);
	assert_int_equal(w.in_project, 1);
	assert_int_equal(w.unreadable, 0);
	memset(&w, 0, sizeof(w));
	assert_int_equal(spool_each_header(sp, SPOOL_NEW, walk_one, &w), 0);
	assert_int_equal(w.records, 1);
	assert_int_equal(w.unreadable, 1);
	assert_int_equal(w.corrupt, 1);
	assert_int_equal(
		spool_each_header(sp, SPOOL_CUR, stop_at_first, &calls), 7);
	assert_int_equal(calls, 1);
	assert_int_equal(spool_find(&found, sp, "<20241203.1234@example.org>"),
			 0);
	assert_int_equal(found.nr, 3);
	assert_int_equal(found.items[2].area, SPOOL_DEAD);
	assert_int_equal(spool_dead_reason(&reason, sp, found.items[2].name),
			 0);
	assert_non_null(strstr(reason.data, "Reason: the forge said 403\n"));
	spool_entry_list_release(&found);
	spool_free(sp);
	spool_free(rw);

	/* Read and search access is enough; nothing is created. */
	snprintf(path, sizeof(path), "%s/tmp", spdir);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(path, sizeof(path), "chmod -R 0755 '%s'", spdir);
	assert_int_equal(system(path), 0);
	assert_int_equal(as_user(65534, 65534, inspect_read_only), 0);
	snprintf(path, sizeof(path), "%s/tmp", spdir);
	assert_int_equal(stat(path, &st), -1);
	buf_release(&reason);
}

/*
 * What the inspecting walk and spool_find() make of records they cannot
 * use: corrupt ones (garbage, a FIFO, a directory or a symbolic link of a
 * record's name) are told as corrupt, without hanging on the FIFO; one
 * that cannot be read (mode 000, read by another user) is told as
 * unreadable, and spool_find() cannot rule it out.  Neither stops the
 * walk, and neither is skipped as gone.
 */
static char locked[SPOOL_NAME_MAX + 1]; /* the record made mode 000 */

static int inspect_unreadable(void)
{
	struct spool_entry_list found = { 0 };
	struct walk w = { 0 };
	struct spool *sp;
	size_t i, bad = 0, good = 0;

	if (spool_open(&sp, spdir, SPOOL_INSPECT))
		return 1;
	if (spool_each_header(sp, SPOOL_NEW, walk_one, &w))
		return 2;
	/* 4 records, 1 of them unreadable, and 4 corrupt entries. */
	if (w.records != 8 || w.in_project != 3 || w.corrupt != 4 ||
	    w.cannot_read != 1 || w.last_err != PB_EPERM)
		return 3;
	if (spool_find(&found, sp, plain_meta.message_id))
		return 4;
	for (i = 0; i < found.nr; i++) {
		if (found.items[i].read_errno == EACCES &&
		    !strcmp(found.items[i].name, locked))
			bad++;
		else if (!found.items[i].read_errno)
			good++;
	}
	if (found.nr != 3 || bad != 1 || good != 2)
		return 5;
	spool_entry_list_release(&found);
	/* Nothing else carries this id, but the locked one may. */
	if (spool_find(&found, sp, "nobody-sent@example.org") ||
	    found.nr != 1 || found.items[0].read_errno != EACCES)
		return 6;
	spool_entry_list_release(&found);
	spool_free(sp);
	return 0;
}

static void test_walk_errors(void **state)
{
	struct spool_meta odd = plain_meta, other = plain_meta;
	struct spool_entry_list found = { 0 };
	struct spool *sp = open_rw(), *in;
	struct walk w = { 0 };
	char path[800];

	/* As the milter spools "<<odd@example.org>>". */
	odd.message_id = "<odd@example.org";
	other.message_id = "other@example.org";
	other.project = "group/other";
	assert_int_equal(spool_put(NULL, 0, sp, &plain_meta, "a", 1), 0);
	assert_int_equal(spool_put(NULL, 0, sp, &odd, "b", 1), 0);
	assert_int_equal(spool_put(locked, sizeof(locked), sp, &other, "c", 1),
			 0);
	write_file("new", "0000000000000001.q.1.1", "garbage", 7);
	snprintf(path, sizeof(path), "%s/new/0000000000000002.q.1.2", spdir);
	assert_int_equal(mkfifo(path, 0644), 0);
	snprintf(path, sizeof(path), "%s/new/0000000000000003.q.1.3", spdir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/new/0000000000000004.q.1.4", spdir);
	assert_int_equal(symlink("/nonexistent", path), 0);

	/* Readable: the corrupt entries are told as such, none skipped. */
	assert_int_equal(spool_open(&in, spdir, SPOOL_INSPECT), 0);
	assert_int_equal(spool_each_header(in, SPOOL_NEW, walk_one, &w), 0);
	assert_int_equal(w.records, 7);
	assert_int_equal(w.corrupt, 4);
	assert_int_equal(w.cannot_read, 0);
	assert_int_equal(w.in_project, 2);
	/* The journal's key finds the record, as does the raw header. */
	assert_int_equal(spool_find(&found, in, "odd@example.org"), 0);
	assert_int_equal(found.nr, 1);
	assert_int_equal(found.items[0].read_errno, 0);
	assert_int_equal(spool_find(&found, in, " <<odd@example.org>> "), 0);
	assert_int_equal(found.nr, 2);
	spool_entry_list_release(&found);
	assert_int_equal(spool_find(&found, in, "<>"), PB_EINVAL);
	/* The daemon's read does not hang on the FIFO either. */
	{
		struct spool_record rec;

		spool_record_init(&rec);
		assert_int_equal(spool_load(&rec, in, SPOOL_NEW,
					    "0000000000000002.q.1.2"),
				 PB_EINVAL);
		spool_record_release(&rec);
	}
	spool_free(in);

	/* One record this user cannot read, and one more for the count. */
	assert_int_equal(spool_put(NULL, 0, sp, &plain_meta, "d", 1), 0);
	spool_free(sp);
	snprintf(path, sizeof(path), "chmod -R 0755 '%s'", dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/new/%s", spdir, locked);
	assert_int_equal(chmod(path, 0), 0);
	assert_int_equal(as_user(65534, 65534, inspect_unreadable), 0);
}

/* Plain text in dir/name, and what a path holds. */
static void put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void assert_text(const char *path, const char *text)
{
	char got[256] = "";
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(got, 1, sizeof(got) - 1, f);
	got[n] = '\0';
	fclose(f);
	assert_string_equal(got, text);
}

/*
 * dead/ is writable by the milter's group.  The daemon wrote a dead
 * letter's reason through a temporary of a predictable name
 * (".tmp.NAME.reason.<pid>.<seq>", O_CREAT | O_TRUNC, following links):
 * links planted at those names made it overwrite its own state
 * database.  Links at every such name, and at the reason's own name,
 * are now neither followed nor removed, and the reason is a file.
 */
static void test_dead_planted_links(void **state)
{
	struct spool *sp = open_rw();
	struct buf reason = BUF_INIT(4096);
	char name[SPOOL_NAME_MAX + 1], victim[700], link[1000];
	struct stat st;
	int seq;

	(void)state;
	snprintf(victim, sizeof(victim), "%s/state.db", dir);
	put_text(victim, "SQLite format 3");
	assert_int_equal(spool_put(NULL, 0, sp, &plain_meta, "x", 1), 0);
	assert_int_equal(spool_claim_next(name, sizeof(name), sp), 0);
	for (seq = 0; seq < 256; seq++) {
		snprintf(link, sizeof(link), "%s/dead/.tmp.%s.reason.%ld.%d",
			 spdir, name, (long)getpid(), seq);
		assert_int_equal(symlink(victim, link), 0);
	}
	snprintf(link, sizeof(link), "%s/dead/%s.reason", spdir, name);
	assert_int_equal(symlink(victim, link), 0);

	assert_int_equal(spool_dead(sp, name, "the forge said 400"), 0);
	assert_text(victim, "SQLite format 3");
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(spool_dead_reason(&reason, sp, name), 0);
	assert_non_null(strstr(reason.data, "Reason: the forge said 400\n"));
	/* The planted links are still there, the record and its reason. */
	assert_int_equal(entries("dead", ".tmp."), 256);
	assert_int_equal(entries("dead", ""), 256 + 2);
	buf_release(&reason);
	spool_free(sp);
}

/*
 * A spool directory replaced by a symbolic link (the spool's top is
 * writable by the milter's group): the daemon's start-up clean-up of
 * stale temporary files then removed files elsewhere, a "gitlab-token"
 * among them.  Every spool directory must now be a real directory with
 * the spool's owner and no write access for others, or the spool does
 * not open, with a message naming what is expected.
 */
static void test_symlinked_area(void **state)
{
	char etc[700], token[800], tmp[700], moved[700];
	struct spool *sp = NULL;
	struct utimbuf old;
	int rc;

	(void)state;
	spool_free(open_rw());
	snprintf(etc, sizeof(etc), "%s/etc", dir);
	assert_int_equal(mkdir(etc, 0750), 0);
	snprintf(token, sizeof(token), "%s/gitlab-token", etc);
	put_text(token, "glpat-secret\n");
	old.actime = old.modtime = time(NULL) - 2 * 3600;
	assert_int_equal(utime(token, &old), 0);
	snprintf(tmp, sizeof(tmp), "%s/tmp", spdir);
	snprintf(moved, sizeof(moved), "%s/tmp.away", spdir);
	assert_int_equal(rename(tmp, moved), 0);
	assert_int_equal(symlink(etc, tmp), 0);

	rc = spool_open(&sp, spdir, SPOOL_READER);
	if (rc == 0) /* what the daemon did next */
		spool_recover(NULL, NULL, sp, SPOOL_TMP_STALE_DEFAULT,
			      time(NULL));
	assert_text(token, "glpat-secret\n");
	assert_int_equal(rc, PB_EPERM);
	assert_null(sp);
	assert_non_null(strstr(err_msg(), "/tmp is a symbolic link"));
	assert_non_null(strstr(err_msg(), "mode 2770"));
	/* Nor does the milter write through it. */
	assert_int_equal(spool_open(&sp, spdir, SPOOL_WRITER), PB_EPERM);
	assert_int_equal(spool_open(&sp, spdir, SPOOL_INSPECT), PB_EPERM);
	assert_int_equal(unlink(tmp), 0);
	assert_int_equal(rename(moved, tmp), 0);
	spool_free(open_rw());

	/* The spool directory itself as a link. */
	snprintf(moved, sizeof(moved), "%s/spool.link", dir);
	assert_int_equal(symlink(spdir, moved), 0);
	assert_int_equal(spool_open(&sp, moved, SPOOL_READER), PB_EPERM);
	assert_non_null(strstr(err_msg(), "symbolic link"));
}

/*
 * The owner and mode of each spool directory, checked before anything
 * is cleaned up: another owner than the spool's, another group, or
 * write access for others is refused with the expected owner and mode.
 */
static void test_area_owner_mode(void **state)
{
	char path[700];
	struct spool *sp = NULL;
	struct stat st;

	(void)state;
	spool_free(open_rw());
	assert_int_equal(stat(spdir, &st), 0);

	snprintf(path, sizeof(path), "%s/dead", spdir);
	assert_int_equal(chmod(path, 02777), 0);
	assert_int_equal(spool_open(&sp, spdir, SPOOL_READER), PB_EPERM);
	assert_non_null(strstr(err_msg(), "/dead"));
	assert_non_null(strstr(err_msg(), "writable by others"));
	assert_non_null(strstr(err_msg(), "mode 2770"));
	assert_int_equal(chmod(path, 02770), 0);
	assert_int_equal(chmod(spdir, 01777), 0);
	assert_int_equal(spool_open(&sp, spdir, SPOOL_READER), PB_EPERM);
	assert_int_equal(chmod(spdir, 02770), 0);

	if (geteuid() != 0) {
		print_message("not root: owners not changed, skipped\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/tmp", spdir);
	assert_int_equal(chown(path, 64001, st.st_gid), 0);
	assert_int_equal(spool_open(&sp, spdir, SPOOL_READER), PB_EPERM);
	assert_non_null(strstr(err_msg(), "/tmp"));
	assert_non_null(strstr(err_msg(), "uid 64001"));
	assert_non_null(strstr(err_msg(), "expected"));
	assert_int_equal(chown(path, st.st_uid, 64999), 0);
	assert_int_equal(spool_open(&sp, spdir, SPOOL_READER), PB_EPERM);
	assert_non_null(strstr(err_msg(), "gid 64999"));
	assert_int_equal(chown(path, st.st_uid, st.st_gid), 0);
	/* The daemon's spool is its own. */
	assert_int_equal(chown(spdir, 64002, st.st_gid), 0);
	assert_int_equal(spool_open(&sp, spdir, SPOOL_READER), PB_EPERM);
	assert_non_null(strstr(err_msg(), "uid 64002"));
	assert_int_equal(chown(spdir, st.st_uid, st.st_gid), 0);
	sp = open_rw();
	spool_free(sp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_body_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_round_trip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_claim_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hostile_fields, setup,
						teardown),
		cmocka_unit_test(test_parse_strict),
		cmocka_unit_test(test_received_size),
		cmocka_unit_test_setup_teardown(test_corrupt_goes_dead, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_claim_exclusive, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disk_full, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_dirs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_shared_group, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kill9, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inspect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_planted_links, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_symlinked_area, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_area_owner_mode, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_walk_errors, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
