/*
 * patatt: the canonical form, the signature and its check, against the
 * real patatt (Debian's python3-patatt, run from /usr/bin/python3 with
 * its PyNaCl): each mail of tests/data/patatt/ is signed by patatt with
 * a fixed key at a fixed time, and ed25519 being deterministic, ours
 * must be the same bytes; patatt's canonical body and header fields
 * must be ours; and what patatt signed must verify here, and fail here
 * with one byte changed.  Without patatt the test fails: the vectors
 * are patatt's, never frozen by hand.
 */
#include "cmocka_all.h"
#include "mail/mail.h"
#include "mail/patatt.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"
#define IDENTITY "patchbridge@lists.example.org"
#define T 1700000000
/* the seed 0, 1, ..., 31 */
#define SEED "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

/*
 * Ask patatt: "sign" prints the mail signed (time fixed), "body" the
 * canonical body, "headers" the relaxed fields of h=.
 */
static const char script[] =
	"import sys, time, patatt\n"
	"what, path = sys.argv[1], sys.argv[2]\n"
	"msg = open(path, 'rb').read()\n"
	"time.time = lambda: "
	"1700000000"
	"\n"
	"pm = patatt.PatattMessage(msg)\n"
	"if what == 'sign':\n"
	"    pm.sign('ed25519', b'" SEED "', '" IDENTITY "', None)\n"
	"    sys.stdout.buffer.write(pm.as_bytes())\n"
	"else:\n"
	"    pm.git_canonicalize()\n"
	"    if what == 'body':\n"
	"        sys.stdout.buffer.write(pm.canon_body)\n"
	"    else:\n"
	"        ds = patatt.DevsigHeader()\n"
	"        ds.set_headers(pm.canon_headers, mode='sign')\n"
	"        sys.stdout.buffer.write(b''.join(ds._headervals))\n";

static void run_patatt(struct buf *out, const char *what, const char *path)
{
	int fd[2];
	pid_t pid;
	int st;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execl(PYTHON, PYTHON, "-c", script, what, path, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	buf_reset(out);
	assert_int_equal(fd_read_all(out, fd[0]), 0);
	close(fd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail_msg("patatt (%s) failed on %s: is python3-patatt "
			 "installed?",
			 what, path);
}

static char *data_dir(void)
{
	const char *src = getenv("PB_SRC_DIR");

	return xasprintf("%s/tests/data/patatt", src ? src : ".");
}

struct mails {
	char *path[64];
	size_t n;
};

static void list_mails(struct mails *m)
{
	char *dir = data_dir();
	DIR *d = opendir(dir);
	struct dirent *e;

	assert_non_null(d);
	m->n = 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (l > 4 && !strcmp(e->d_name + l - 4, ".eml") && m->n < 64)
			m->path[m->n++] = xasprintf("%s/%s", dir, e->d_name);
	}
	closedir(d);
	free(dir);
	assert_true(m->n >= 10);
}

static void free_mails(struct mails *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->path[i]);
}

static struct patatt_key *test_key(void)
{
	struct patatt_key *k;

	assert_int_equal(patatt_key_new(&k, SEED "\n", strlen(SEED) + 1), 0);
	return k;
}

/*
 * Each mail of tests/data/patatt/ read, and what patatt makes of it
 * ("body", "headers" or "sign") next to it, handed to check().
 */
static void each_mail(const char *what,
		      void (*check)(const struct buf *mail, struct buf *want,
				    void *arg),
		      void *arg)
{
	struct mails m;
	struct buf mail = BUF_INIT(PATATT_MAIL_MAX);
	struct buf want = BUF_INIT(PATATT_MAIL_MAX);
	size_t i;

	list_mails(&m);
	for (i = 0; i < m.n; i++) {
		print_message("%s (%s)\n", m.path[i], what);
		buf_reset(&mail);
		assert_int_equal(file_read(&mail, m.path[i]), 0);
		run_patatt(&want, what, m.path[i]);
		check(&mail, &want, arg);
	}
	free_mails(&m);
	buf_release(&mail);
	buf_release(&want);
}

static void check_body(const struct buf *mail, struct buf *want, void *arg)
{
	struct buf got = BUF_INIT(PATATT_MAIL_MAX);

	(void)arg;
	assert_int_equal(patatt_canon_body(&got, mail->data, mail->len), 0);
	assert_int_equal(got.len, want->len);
	assert_memory_equal(got.data, want->data, got.len);
	buf_release(&got);
}

static void check_headers(const struct buf *mail, struct buf *want, void *arg)
{
	struct buf got = BUF_INIT(PATATT_MAIL_MAX);

	(void)arg;
	assert_int_equal(patatt_canon_headers(&got, mail->data, mail->len,
					      "from:subject:message-id"),
			 0);
	assert_string_equal(got.data, want->data);
	buf_release(&got);
}

static void test_canon_body(void **state)
{
	(void)state;
	each_mail("body", check_body, NULL);
	each_mail("headers", check_headers, NULL);
}

static void strip_cr(struct buf *b)
{
	size_t i, j = 0;

	for (i = 0; i < b->len; i++)
		if (b->data[i] != '\r')
			b->data[j++] = b->data[i];
	buf_truncate(b, j);
}

static void check_signed(const struct buf *mail, struct buf *want, void *arg)
{
	struct buf got = BUF_INIT(PATATT_MAIL_MAX);

	assert_int_equal(patatt_sign_mail(&got, mail->data, mail->len, arg,
					  IDENTITY, NULL, T),
			 0);
	/* patatt folds with LF even in a CRLF mail, where we fold with
	 * the mail's own line end */
	strip_cr(&got);
	strip_cr(want);
	assert_string_equal(got.data, want->data);
	buf_release(&got);
}

/* patatt's signed mail, byte for byte */
static void test_sign_as_patatt(void **state)
{
	struct patatt_key *k = test_key();

	(void)state;
	each_mail("sign", check_signed, k);
	patatt_key_free(k);
}

struct lookup_arg {
	unsigned char pub[PATATT_KEY_SIZE];
	int have;
	int calls;
};

static int lookup(unsigned char pub[PATATT_KEY_SIZE], char **src,
		  const char *identity, const char *selector, void *arg)
{
	struct lookup_arg *a = arg;

	a->calls++;
	if (!a->have || strcmp(identity, IDENTITY) ||
	    strcmp(selector, "default"))
		return PB_ENOTFOUND;
	memcpy(pub, a->pub, PATATT_KEY_SIZE);
	*src = xstrdup("test");
	return 0;
}

static void flip_body_byte(struct buf *b)
{
	char *body = strstr(b->data, "\n\n");

	if (!body)
		body = strstr(b->data, "\r\n\r\n");
	assert_non_null(body);
	body += 4;
	while (*body == '\n' || *body == '\r' || *body == ' ')
		body++;
	/* a letter made another, still a letter */
	*body = *body == 'x' ? 'y' : 'x';
}

/* what patatt signed verifies; one changed byte does not */
static void test_verify_patatt(void **state)
{
	struct mails m;
	struct buf signed_ = BUF_INIT(PATATT_MAIL_MAX);
	struct patatt_key *k = test_key();
	struct lookup_arg a = { .have = 1 };
	char pk[PATATT_KEY_B64_SIZE];
	size_t i;

	(void)state;
	patatt_key_public_b64(pk, k);
	assert_int_equal(patatt_pubkey_parse(a.pub, pk, strlen(pk)), 0);
	list_mails(&m);
	for (i = 0; i < m.n; i++) {
		struct patatt_verdict v;

		print_message("%s\n", m.path[i]);
		run_patatt(&signed_, "sign", m.path[i]);
		a.have = 1;
		assert_int_equal(patatt_verify(&v, signed_.data, signed_.len,
					       lookup, &a),
				 0);
		assert_int_equal(v.result, PATATT_VALID);
		assert_string_equal(v.identity, IDENTITY);
		assert_string_equal(v.selector, "default");
		assert_string_equal(v.key_src, "test");
		assert_int_equal(v.time, T);
		assert_int_equal(v.nsigs, 1);
		patatt_verdict_release(&v);

		a.have = 0;
		assert_int_equal(patatt_verify(&v, signed_.data, signed_.len,
					       lookup, &a),
				 0);
		assert_int_equal(v.result, PATATT_NOKEY);
		patatt_verdict_release(&v);

		a.have = 1;
		flip_body_byte(&signed_);
		assert_int_equal(patatt_verify(&v, signed_.data, signed_.len,
					       lookup, &a),
				 0);
		assert_int_equal(v.result, PATATT_BADSIG);
		patatt_verdict_release(&v);
	}
	free_mails(&m);
	patatt_key_free(k);
	buf_release(&signed_);
}

static void test_verify_kinds(void **state)
{
	static const char plain[] = "From: a@example.org\n"
				    "Subject: x\n\nbody\n";
	struct buf b = BUF_INIT(PATATT_MAIL_MAX);
	struct patatt_key *k = test_key();
	struct lookup_arg a = { .have = 1 };
	struct patatt_verdict v;
	char pk[PATATT_KEY_B64_SIZE];
	char *p;

	(void)state;
	patatt_key_public_b64(pk, k);
	assert_int_equal(patatt_pubkey_parse(a.pub, pk, strlen(pk)), 0);
	assert_int_equal(patatt_verify(&v, plain, strlen(plain), lookup, &a),
			 0);
	assert_int_equal(v.result, PATATT_NOSIG);
	assert_int_equal(v.nsigs, 0);
	patatt_verdict_release(&v);

	/* our own signature verifies, and a changed Subject fails it */
	assert_int_equal(patatt_sign_mail(&b, plain, strlen(plain), k, IDENTITY,
					  NULL, T),
			 0);
	assert_int_equal(patatt_verify(&v, b.data, b.len, lookup, &a), 0);
	assert_int_equal(v.result, PATATT_VALID);
	patatt_verdict_release(&v);
	p = strstr(b.data, "Subject: x");
	p[9] = 'y';
	assert_int_equal(patatt_verify(&v, b.data, b.len, lookup, &a), 0);
	assert_int_equal(v.result, PATATT_BADSIG);
	assert_string_equal(v.detail, "header validation failed");
	patatt_verdict_release(&v);

	/* another algorithm is an error, not a pass */
	buf_reset(&b);
	buf_adds(&b, "From: a@example.org\nSubject: x\nX-Developer-Signature:"
		     " v=1; a=openpgp-sha256; i=a@example.org;"
		     " h=from:subject; bh=x; b=y\n\nbody\n");
	assert_int_equal(patatt_verify(&v, b.data, b.len, lookup, &a), 0);
	assert_int_equal(v.result, PATATT_ERROR);
	patatt_verdict_release(&v);

	patatt_key_free(k);
	buf_release(&b);
}

/* Lines longer than the chunk the body is hashed in, CRs, a blank tail. */
static void test_canon_long_lines(void **state)
{
	struct buf mail = BUF_INIT(PATATT_MAIL_MAX);
	struct buf want = BUF_INIT(PATATT_MAIL_MAX);
	struct buf got = BUF_INIT(PATATT_MAIL_MAX);
	size_t i, k;

	(void)state;
	buf_adds(&mail, "From: a@example.org\nSubject: x\n\n");
	for (k = 0; k < 5; k++) {
		for (i = 0; i < 70000 + 13 * k; i++) {
			buf_addch(&mail, 'a' + (int)(i % 26));
			buf_addch(&want, 'a' + (int)(i % 26));
		}
		buf_adds(&mail, k == 2 ? "\r\r\n" : "\n");
		buf_adds(&want, "\r\n");
		buf_adds(&mail, "short\n");
		buf_adds(&want, "short\r\n");
	}
	buf_adds(&mail, "\n\n\r\n");
	assert_int_equal(buf_error(&mail), 0);
	assert_int_equal(patatt_canon_body(&got, mail.data, mail.len), 0);
	assert_int_equal(got.len, want.len);
	assert_memory_equal(got.data, want.data, got.len);
	buf_release(&mail);
	buf_release(&want);
	buf_release(&got);
}

static void test_keys(void **state)
{
	struct patatt_key *k, *k2;
	struct buf b = BUF_INIT(4096);
	char pk[PATATT_KEY_B64_SIZE], pk2[PATATT_KEY_B64_SIZE];

	(void)state;
	k = test_key();
	patatt_key_public_b64(pk, k);
	/* PyNaCl's public key of the seed 0..31 */
	assert_string_equal(pk, "A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=");
	assert_int_equal(patatt_key_private_b64(&b, k), 0);
	assert_string_equal(b.data, SEED);
	patatt_key_free(k);

	assert_int_equal(patatt_key_generate(&k), 0);
	buf_reset(&b);
	assert_int_equal(patatt_key_private_b64(&b, k), 0);
	assert_int_equal(patatt_key_new(&k2, b.data, b.len), 0);
	patatt_key_public_b64(pk, k);
	patatt_key_public_b64(pk2, k2);
	assert_string_equal(pk, pk2);
	patatt_key_free(k);
	patatt_key_free(k2);

	assert_int_equal(patatt_key_new(&k, "AAAA", 4), PB_EINVAL);
	assert_null(k);
	assert_int_equal(patatt_key_new(&k, "!!", 2), PB_EINVAL);

	buf_reset(&b);
	assert_int_equal(patatt_keyring_path(&b, "Dev.Bridge@Lists.Example.org",
					     NULL),
			 0);
	assert_string_equal(b.data,
			    "ed25519/lists.example.org/dev.bridge/default");
	buf_reset(&b);
	assert_int_equal(patatt_keyring_path(&b, "a/../b@x y", "2026 01"), 0);
	assert_string_equal(b.data, "ed25519/x+y/a%2F..%2Fb/2026+01");
	assert_int_equal(patatt_keyring_path(&b, "nodomain", NULL), PB_EINVAL);
	/* A signature's i= and s= name a file under the keyring: no
	 * component may climb out of it, nor be empty. */
	buf_reset(&b);
	assert_int_equal(patatt_keyring_path(&b, "..@..", "x"), PB_EINVAL);
	buf_reset(&b);
	assert_int_equal(patatt_keyring_path(&b, "a@example.org", ".."),
			 PB_EINVAL);
	buf_reset(&b);
	assert_int_equal(patatt_keyring_path(&b, ".@example.org", NULL),
			 PB_EINVAL);
	buf_reset(&b);
	assert_int_equal(patatt_keyring_path(&b, "@example.org", NULL),
			 PB_EINVAL);
	buf_reset(&b);
	assert_int_equal(patatt_keyring_path(&b, "a@", NULL), PB_EINVAL);
	buf_reset(&b);
	assert_int_equal(patatt_keyring_path(&b, "a..b@x..y", "..s"), 0);
	assert_string_equal(b.data, "ed25519/x..y/a..b/..s");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_canon_body),
		cmocka_unit_test(test_canon_long_lines),
		cmocka_unit_test(test_sign_as_patatt),
		cmocka_unit_test(test_verify_patatt),
		cmocka_unit_test(test_verify_kinds),
	};

	if (mail_init())
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
