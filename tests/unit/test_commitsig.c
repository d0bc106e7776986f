/*
 * commitsig_cover(): the cover letter's line per commit of what the forge
 * said of its signature (GitLab's commit signature API: PGP with the
 * key's user, SSH with the key's title, X.509 with the certificate's
 * email), the verdict quoted, text from the forge cleaned to one line;
 * nothing when no commit is signed.  commitsig_load() against the fake
 * forge: a 404 is "not signed", a failure for now makes the caller wait.
 */
#include "cmocka_all.h"
#include "fakeforge.h"
#include "outbound/commitsig.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

/* Literal text in a struct of owned strings the test never frees. */
#define S(x) ((char *)(x))

#define SHA1 "0123456789abcdef0123456789abcdef01234567"
#define SHA2 "89abcdef0123456789abcdef0123456789abcdef"
#define SHA3 "fedcba9876543210fedcba9876543210fedcba98"

static void test_cover_lines(void **state)
{
	struct commitsig c[4];
	struct buf out = BUF_INIT(4096);

	(void)state;
	memset(c, 0, sizeof(c));
	c[0].sha = SHA1;
	c[0].state = COMMITSIG_SIGNED;
	c[0].sig.type = S("PGP");
	c[0].sig.status = S("verified");
	c[0].sig.name = S("John Doe");
	c[0].sig.email = S("johndoe@example.com");
	c[0].sig.key = S("8254AAB3FBD54AC9");
	c[1].sha = SHA2;
	c[1].state = COMMITSIG_UNSIGNED;
	c[2].sha = SHA3;
	c[2].state = COMMITSIG_SIGNED;
	c[2].committer_name = "Ann\nAuthor";
	c[2].committer_email = "ann@example.org";
	c[2].sig.type = S("SSH");
	c[2].sig.status = S("verified");
	c[2].sig.key = S("laptop\r\n");
	c[3].sha = SHA1;
	c[3].state = COMMITSIG_SIGNED;
	c[3].sig.type = S("X509");
	c[3].sig.status = S("unverified");
	c[3].sig.email = S("gitlab@example.org");
	c[3].sig.key = S("CN=gitlab@example.org,OU=Example,O=World");
	assert_int_equal(commitsig_cover(&out, c, 4), 0);
	assert_string_equal(
		out.data,
		"Commit signatures, as the forge verified them:\n"
		"- 1/4 0123456789ab: PGP, verified: John Doe "
		"<johndoe@example.com> (key 8254AAB3FBD54AC9)\n"
		"- 2/4 89abcdef0123: not signed\n"
		"- 3/4 fedcba987654: SSH, verified: key \"laptop\" of the "
		"committer Ann Author <ann@example.org>\n"
		"- 4/4 0123456789ab: X.509, unverified: certificate of "
		"gitlab@example.org (CN=gitlab@example.org,OU=Example,"
		"O=World)\n"
		"\n");
	buf_release(&out);
}

static void test_none_signed(void **state)
{
	struct commitsig c[2];
	struct buf out = BUF_INIT(4096);

	(void)state;
	memset(c, 0, sizeof(c));
	c[0].sha = SHA1;
	c[1].sha = SHA2;
	assert_int_equal(commitsig_cover(&out, c, 2), 0);
	assert_int_equal(out.len, 0);
	buf_release(&out);
}

static void test_load(void **state)
{
	struct fakeforge ff;
	struct gitrepo_commit commits[2];
	struct gitrepo_range r;
	static const char *const shas[] = { SHA2 };
	struct forge_signature sig = { 0 };
	char *text = NULL;

	(void)state;
	memset(commits, 0, sizeof(commits));
	memset(&r, 0, sizeof(r));
	strcpy(commits[0].sha, SHA1);
	strcpy(commits[1].sha, SHA2);
	r.commits = commits;
	r.nr = 2;
	fakeforge_init(&ff);
	sig.type = S("PGP");
	sig.status = S("other_user");
	sig.name = S("Mallory");
	ff.signed_shas = shas;
	ff.signatures = &sig;
	ff.nr_signatures = 1;
	assert_int_equal(commitsig_load(&text, &ff.base, "g/p", &r), 0);
	assert_non_null(text);
	assert_string_equal(text,
			    "Commit signatures, as the forge verified them:\n"
			    "- 1/2 0123456789ab: not signed\n"
			    "- 2/2 89abcdef0123: PGP, other_user: Mallory\n"
			    "\n");
	free(text);
	assert_int_equal(fakeforge_count(&ff, FAKE_COMMIT_SIGNATURE), 2);
	assert_string_equal(fakeforge_call(&ff, FAKE_COMMIT_SIGNATURE, 1)->arg,
			    SHA2);

	/* The forge failing for now: the revision waits. */
	fakeforge_clear_calls(&ff);
	fakeforge_script(&ff, FAKE_COMMIT_SIGNATURE, FAKE_5XX, 0, NULL);
	assert_int_equal(commitsig_load(&text, &ff.base, "g/p", &r), PB_ETEMP);
	assert_null(text);
	/* Another failure: no block, the revision goes. */
	fakeforge_script(&ff, FAKE_COMMIT_SIGNATURE, FAKE_FAIL, PB_EINVAL,
			 "bad answer");
	assert_int_equal(commitsig_load(&text, &ff.base, "g/p", &r), 0);
	assert_null(text);
	fakeforge_release(&ff);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cover_lines),
		cmocka_unit_test(test_none_signed),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
