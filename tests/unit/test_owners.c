#include "cmocka_all.h"
#include "core/owners.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/strlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A private directory for the fixtures' copies (made once). */
static char copies[600];

static const char *copies_dir(void)
{
	const char *base = getenv("PB_TEST_TMP");

	if (!copies[0]) {
		snprintf(copies, sizeof(copies), "%s/owners.XXXXXX",
			 base ? base : "/tmp");
		assert_non_null(mkdtemp(copies));
	}
	return copies;
}

/*
 * tests/data/owners/FILE, copied to a directory this test made: an
 * owners file is read only when nobody but root and this user could
 * have written it (util/perm.h), and the checkout's modes are not the
 * test's to choose.
 */
static void fixture(char *out, size_t size, const char *file)
{
	const char *src = getenv("PB_SRC_DIR");
	struct buf b = BUF_INIT(1 << 20);
	char path[1024];

	snprintf(path, sizeof(path), "%s/tests/data/owners/%s", src ? src : ".",
		 file);
	assert_int_equal(file_read(&b, path), 0);
	snprintf(out, size, "%s/%s", copies_dir(), file);
	assert_int_equal(file_write_atomic(out, b.data, b.len, 0644), 0);
	buf_release(&b);
}

static void remove_copies(void)
{
	char cmd[700];

	if (!copies[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", copies);
	if (system(cmd) != 0)
		print_message("cannot remove %s\n", copies);
}

static struct owners *load_fixture(const char *file)
{
	char path[1024];
	struct owners *o = NULL;
	int rc;

	fixture(path, sizeof(path), file);
	rc = owners_load(&o, path);
	if (rc)
		fail_msg("%s: %s", file, err_msg());
	assert_non_null(o);
	return o;
}

/* Load from text; returns the code, leaves the message in err_msg(). */
static int load_text(struct owners **out, const char *text)
{
	*out = NULL;
	return owners_load_mem(out, text, strlen(text), "owners.yaml");
}

/* The Cc list for some paths, joined with "|" for easy comparison. */
static char *route(const struct owners *o, unsigned flags, const char *p1,
		   const char *p2)
{
	const char *paths[2] = { p1, p2 };
	struct strlist cc = STRLIST_INIT;
	size_t i, len = 1;
	char *out;

	assert_int_equal(owners_route(&cc, o, paths, p2 ? 2 : 1, flags), 0);
	for (i = 0; i < cc.nr; i++)
		len += strlen(cc.items[i]) + 1;
	out = calloc(1, len);
	for (i = 0; i < cc.nr; i++) {
		if (i)
			strcat(out, "|");
		strcat(out, cc.items[i]);
	}
	strlist_release(&cc);
	return out;
}

#define assert_route(o, flags, p1, p2, expect)                \
	do {                                                  \
		char *got_ = route((o), (flags), (p1), (p2)); \
		assert_string_equal(got_, (expect));          \
		free(got_);                                   \
	} while (0)

/* The labels of the subsystems one path belongs to, joined with ",". */
static void assert_labels(const struct owners *o, const char *path,
			  const char *expect)
{
	struct owners_matches m = OWNERS_MATCHES_INIT;
	char got[256] = "";
	size_t i;

	assert_int_equal(owners_match(&m, o, path), 0);
	for (i = 0; i < m.nr; i++) {
		if (i)
			strcat(got, ",");
		strcat(got, m.items[i]->label);
	}
	owners_matches_release(&m);
	if (strcmp(got, expect))
		fail_msg("%s: got \"%s\", expected \"%s\"", path, got, expect);
}

static void test_readme_example(void **state)
{
	struct owners *o = load_fixture("readme.yaml");
	const struct owners_subsystem *s;

	assert_int_equal(owners_count(o), 1);
	s = owners_get(o, 0);
	assert_string_equal(s->title, "Example NIC driver");
	assert_string_equal(s->label, "exnic");
	assert_string_equal(s->status, "Supported");
	assert_true(s->required_approval);
	assert_int_equal(s->maintainers_nr, 1);
	assert_string_equal(s->maintainers[0]->email, "alice@example.org");
	assert_string_equal(s->maintainers[0]->gluser, "alice-ex");
	assert_false(s->maintainers[0]->restricted);
	assert_int_equal(s->reviewers_nr, 2);
	assert_true(s->reviewers[0]->restricted);
	assert_string_equal(s->reviewers[1]->name, "Carol Inline");
	assert_string_equal(s->mailing_list, "exnic-devel@lists.example.org");
	assert_null(s->scm);
	assert_ptr_equal(owners_find(o, "exnic"), s);
	assert_null(owners_find(o, "nope"));
	assert_null(owners_get(o, 1));

	assert_labels(o, "drivers/net/ethernet/example/exnic/main.c", "exnic");
	assert_labels(o, "drivers/net/ethernet/example/exnic/sub/x.c", "exnic");
	assert_labels(o, "drivers/net/ethernet/example/exnic/firmware/fw.bin",
		      "");
	assert_labels(o, "drivers/net/ethernet/example/exnicity.c", "");
	assert_labels(o, "include/linux/exnic.h", "exnic");
	assert_labels(o, "include/linux/exnic.hx", "");
	assert_labels(o, "Documentation/networking/exnic.rst", "exnic");
	assert_labels(o, "Documentation/networking/device_drivers/exnic/a",
		      "exnic");
	assert_labels(o, "Documentation/other/exnic.rst", "");

	assert_route(o, 0, "drivers/net/ethernet/example/exnic/main.c", NULL,
		     "Alice Example <alice@example.org>|"
		     "Bob Sample <bob@example.org>|"
		     "Carol Inline <carol@example.org>|"
		     "exnic-devel@lists.example.org");
	assert_route(o, 0, "README", NULL, "");
	owners_free(o);
}

/*
 * The example in patchbridge.conf(5), OWNERS FILE, as an admin copies it
 * (between the owners-example markers, roff's \- and \e undone): it
 * loads, and does what the page says it does.
 */
static void test_man_page_example(void **state)
{
	const char *src = getenv("PB_SRC_DIR");
	const char *e1000[] = { "drivers/net/e1000/main.c" };
	const char *mk[] = { "Makefile" };
	const char *wifi[] = { "drivers/net/wireless/x.c" };
	char path[1024], line[512];
	struct owners *o = NULL;
	struct strlist cc = STRLIST_INIT;
	char *text = calloc(1, 65536);
	size_t len = 0;
	int in = 0;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/man/patchbridge.conf.5.in",
		 src ? src : ".");
	f = fopen(path, "r");
	if (!f)
		fail_msg("%s: cannot open", path);
	while (fgets(line, sizeof(line), f)) {
		const char *p;

		if (strstr(line, "owners-example-begin")) {
			in = 1;
			continue;
		}
		if (strstr(line, "owners-example-end"))
			break;
		if (!in)
			continue;
		for (p = line; *p; p++) {
			if (p[0] == '\\' && (p[1] == '-' || p[1] == 'e')) {
				text[len++] = p[1] == '-' ? '-' : '\\';
				p++;
				continue;
			}
			text[len++] = *p;
		}
		assert_true(len < 60000);
	}
	fclose(f);
	assert_true(in);
	if (owners_load_mem(&o, text, len, "patchbridge.conf(5)"))
		fail_msg("the man page's example: %s", err_msg());
	assert_int_equal(owners_count(o), 2);
	/* "Alice's Acked-by approves a patch to drivers/net/e1000/main.c
	 * or to the top-level Makefile, Bob's only the former, and
	 * Carol's never: she is copied with cc_owners." */
	assert_int_equal(
		owners_is_approver(NULL, o, e1000, 1, "alice@example.org"), 1);
	assert_int_equal(
		owners_is_approver(NULL, o, mk, 1, "alice@example.org"), 1);
	assert_int_equal(
		owners_is_approver(NULL, o, e1000, 1, "bob@example.org"), 1);
	assert_int_equal(owners_is_approver(NULL, o, mk, 1, "bob@example.org"),
			 0);
	assert_int_equal(owners_is_approver(NULL, o, e1000, 1,
					    "carol@contractor.example"),
			 0);
	assert_int_equal(owners_route(&cc, o, e1000, 1, 0), 0);
	assert_true(
		strlist_find(&cc,
			     "Carol Contractor <carol@contractor.example>") >=
		0);
	assert_true(strlist_find(&cc, "netdev@lists.example.org") >= 0);
	strlist_release(&cc);
	assert_labels(o, "drivers/net/wireless/x.c", "core");
	assert_int_equal(
		owners_is_approver(NULL, o, wifi, 1, "bob@example.org"), 0);
	assert_labels(o, "Documentation/networking/e1000.rst",
		      "net-drivers,core");
	assert_labels(o, "Documentation/networking/e1000.txt", "core");
	owners_free(o);
	free(text);
}

static void test_one_subsystem_only(void **state)
{
	struct owners *o = load_fixture("kernel.yaml");

	assert_int_equal(owners_count(o), 7);
	/* Networking's people and list, no one else's. */
	assert_route(o, 0, "net/core/dev.c", NULL,
		     "Dave Netdev <dave@example.net>|"
		     "Alice Example <alice@example.org>|"
		     "Bob Sample <bob@example.org>|"
		     "netdev@lists.example.org");
	/* Block: a name with specials is quoted (RFC 5322 3.2.4). */
	assert_route(o, 0, "block/blk-core.c", NULL,
		     "Erin Storage <Erin.Storage@Example.COM>|"
		     "\"Grace O'Hara, Jr.\" <grace@example.org>|"
		     "linux-block@lists.example.org");
	/* Staging: no maintainers, a null list: nobody. */
	assert_route(o, 0, "drivers/staging/foo/bar.c", NULL, "");
	owners_free(o);
}

static void test_globs_regexes_excludes(void **state)
{
	struct owners *o = load_fixture("kernel.yaml");

	/* Trailing slash: everything below, at any depth. */
	assert_labels(o, "block/blk-core.c", "block");
	assert_labels(o, "block/partitions/msdos.c", "block");
	assert_labels(o, "blockish/x.c", "");
	assert_labels(o, "block", "");
	/* An excluded file inside an included directory. */
	assert_labels(o, "block/partitions/efi.c", "");
	/* A wildcard does not cross '/'. */
	assert_labels(o, "include/linux/blkdev.h", "block");
	assert_labels(o, "include/linux/blk/sub.h", "");
	assert_labels(o, "include/linux/blkdev.c", "");
	/* No wildcard, no slash: the name itself or a directory. */
	assert_labels(o, "drivers/block", "block");
	assert_labels(o, "drivers/block/loop.c", "block");
	assert_labels(o, "drivers/block/zram/zram_drv.c", "block");
	assert_labels(o, "drivers/blocky.c", "");
	assert_labels(o, "include/linux/netdevice.h", "net");
	assert_labels(o, "include/linux/netdevice.h.orig", "");
	/* Excludes carve a directory out of a wider include ... */
	assert_labels(o, "drivers/net/ethernet/intel/e1000.c", "net");
	assert_labels(o, "drivers/net/wireless/ath/ath9k/main.c", "wireless");
	assert_labels(o, "mm/page_alloc.c", "mm");
	assert_labels(o, "mm/kasan/report.c", "kasan");
	/* ... and regex includes catch what globs do not. */
	assert_labels(o, "arch/x86/mm/init.c", "mm");
	assert_labels(o, "arch/x86/kernel/mm/init.c", "");
	assert_labels(o, "include/linux/ieee80211.h", "wireless");
	assert_labels(o, "include/linux/ieee80211.c", "");
	assert_labels(o, "Documentation/networking/bonding.rst", "net");
	assert_labels(o, "Documentation/admin-guide/README.rst", "docs");
	/* A path in two subsystems. */
	assert_labels(o, "include/net/ieee80211_radiotap.h", "net,wireless");
	assert_labels(o, "unowned/file.c", "");
	assert_true(owners_subsystem_covers(owners_find(o, "mm"), "mm/slab.c"));
	assert_false(owners_subsystem_covers(owners_find(o, "mm"),
					     "mm/kasan/init.c"));
	owners_free(o);
}

static void test_touched_and_order(void **state)
{
	struct owners *o = load_fixture("kernel.yaml");
	const char *paths[] = { "mm/slab.c", "block/bio.c", "mm/slub.c",
				"net/ipv4/tcp.c" };
	struct owners_matches m;

	owners_matches_init(&m);
	assert_int_equal(owners_touched(&m, o, paths, 4), 0);
	assert_int_equal(m.nr, 3);
	/* File order, not path order, and each once. */
	assert_string_equal(m.items[0]->label, "net");
	assert_string_equal(m.items[1]->label, "block");
	assert_string_equal(m.items[2]->label, "mm");
	/* Matching more merges into the set. */
	assert_int_equal(owners_match(&m, o, "Documentation/x.rst"), 0);
	assert_int_equal(owners_match(&m, o, "net/core/sock.c"), 0);
	assert_int_equal(m.nr, 4);
	assert_string_equal(m.items[3]->label, "docs");
	/* Bad paths are refused and leave the set alone. */
	assert_int_equal(owners_match(&m, o, NULL), PB_EINVAL);
	assert_int_equal(owners_match(&m, o, ""), PB_EINVAL);
	{
		const char *bad[] = { "mm/a.c", NULL };

		assert_int_equal(owners_touched(&m, o, bad, 2), PB_EINVAL);
	}
	assert_int_equal(m.nr, 4);
	owners_matches_release(&m);
	owners_free(o);
}

static void test_route_dedup(void **state)
{
	struct owners *o = load_fixture("kernel.yaml");
	struct strlist cc = STRLIST_INIT;
	const char *paths[] = { "net/core/dev.c",
				"drivers/net/wireless/ath/main.c" };

	/*
	 * Dave maintains net and reviews wireless: listed once, as a
	 * maintainer.  Maintainers first, then reviewers, then lists.
	 */
	assert_route(o, 0, paths[0], paths[1],
		     "Dave Netdev <dave@example.net>|"
		     "Ivan Radio <ivan@example.org>|"
		     "Alice Example <alice@example.org>|"
		     "Bob Sample <bob@example.org>|"
		     "netdev@lists.example.org|"
		     "wireless-devel@lists.example.org");
	/* Frank twice in mm (alias + inline, different case): once. */
	assert_route(o, 0, "mm/slab.c", NULL,
		     "Frank Memory <frank@example.org>|"
		     "Alice Example <alice@example.org>|"
		     "linux-mm@lists.example.org");
	/* Alice reviews mm and kasan. */
	assert_route(o, 0, "mm/slab.c", "mm/kasan/init.c",
		     "Frank Memory <frank@example.org>|"
		     "Kate Restricted <kate@example.org>|"
		     "Alice Example <alice@example.org>|"
		     "linux-mm@lists.example.org");
	/* Flags. */
	assert_route(o, OWNERS_ROUTE_NO_REVIEWERS, paths[0], NULL,
		     "Dave Netdev <dave@example.net>|"
		     "netdev@lists.example.org");
	assert_route(o, OWNERS_ROUTE_NO_LISTS, paths[0], NULL,
		     "Dave Netdev <dave@example.net>|"
		     "Alice Example <alice@example.org>|"
		     "Bob Sample <bob@example.org>");
	assert_route(o, OWNERS_ROUTE_NO_LISTS | OWNERS_ROUTE_NO_REVIEWERS,
		     paths[0], NULL, "Dave Netdev <dave@example.net>");

	/* What the caller put in cc counts, in either form and any case. */
	strlist_push(&cc, "A. Example <ALICE@example.org>");
	strlist_push(&cc, "NETDEV@lists.example.org");
	assert_int_equal(owners_route(&cc, o, paths, 1, 0), 0);
	assert_int_equal(cc.nr, 4);
	assert_string_equal(cc.items[2], "Dave Netdev <dave@example.net>");
	assert_string_equal(cc.items[3], "Bob Sample <bob@example.org>");
	/* A bad path: cc unchanged. */
	{
		const char *bad[] = { "net/x.c", "" };

		assert_int_equal(owners_route(&cc, o, bad, 2, 0), PB_EINVAL);
		assert_int_equal(cc.nr, 4);
	}
	strlist_release(&cc);
	owners_free(o);
}

static void test_is_approver(void **state)
{
	struct owners *o = load_fixture("kernel.yaml");
	const struct owners_subsystem *s = NULL;
	const char *net[] = { "net/ipv4/tcp.c" };
	const char *two[] = { "net/ipv4/tcp.c", "block/bio.c" };
	const char *kasan[] = { "mm/kasan/report.c" };

	/* A maintainer of the touched subsystem. */
	assert_int_equal(owners_is_approver(&s, o, net, 1, "dave@example.net"),
			 1);
	assert_non_null(s);
	assert_string_equal(s->label, "net");
	/* ... in any case. */
	assert_int_equal(owners_is_approver(&s, o, net, 1, "DAVE@Example.NET"),
			 1);
	/* A reviewer. */
	assert_int_equal(owners_is_approver(&s, o, net, 1, "alice@example.org"),
			 1);
	assert_string_equal(s->label, "net");
	/* A restricted reviewer: notified, but may not approve. */
	assert_int_equal(owners_is_approver(&s, o, net, 1, "bob@example.org"),
			 0);
	assert_null(s);
	/* A restricted maintainer neither. */
	assert_int_equal(
		owners_is_approver(&s, o, kasan, 1, "kate@example.org"), 0);
	/* A stranger. */
	assert_int_equal(
		owners_is_approver(&s, o, net, 1, "mallory@example.org"), 0);
	/* A maintainer of a subsystem the change does not touch. */
	assert_int_equal(owners_is_approver(&s, o, net, 1,
					    "erin.storage@example.com"),
			 0);
	/* ... who may approve once it does; out is optional. */
	assert_int_equal(owners_is_approver(&s, o, two, 2,
					    "erin.storage@example.com"),
			 1);
	assert_string_equal(s->label, "block");
	assert_int_equal(
		owners_is_approver(NULL, o, two, 2, "dave@example.net"), 1);
	/* No paths: nobody. */
	assert_int_equal(owners_is_approver(&s, o, NULL, 0, "dave@example.net"),
			 0);
	assert_int_equal(owners_is_approver(&s, o, net, 1, NULL), PB_EINVAL);
	owners_free(o);
}

static void test_gluser(void **state)
{
	struct owners *o = load_fixture("kernel.yaml");
	const char *gl = NULL;

	assert_int_equal(owners_gluser(&gl, o, "alice@example.org"), 0);
	assert_string_equal(gl, "alice-ex");
	assert_int_equal(owners_gluser(&gl, o, "erin.storage@EXAMPLE.com"), 0);
	assert_string_equal(gl, "erin");
	/* An inline person. */
	assert_int_equal(owners_gluser(&gl, o, "ivan@example.org"), 0);
	assert_string_equal(gl, "ivan");
	/* gluser: null, and a stranger. */
	assert_int_equal(owners_gluser(&gl, o, "frank@example.org"),
			 PB_ENOTFOUND);
	assert_int_equal(owners_gluser(&gl, o, "nobody@example.org"),
			 PB_ENOTFOUND);
	assert_int_equal(owners_gluser(&gl, o, NULL), PB_EINVAL);
	owners_free(o);
}

/* A malformed file fails with the message it must have. */
static void assert_bad_file(const char *file, int code, const char *expect)
{
	char path[1024], want[1200];
	struct owners *o = NULL;

	fixture(path, sizeof(path), file);
	assert_int_equal(owners_load(&o, path), code);
	assert_null(o);
	snprintf(want, sizeof(want), "%s:%s", path, expect);
	assert_string_equal(err_msg(), want);
}

static void test_malformed_files(void **state)
{
	assert_bad_file("bad-type.yaml", PB_EINVAL,
			"14:18: maintainers: expected a list, found a scalar");
	assert_bad_file("bad-alias.yaml", PB_EINVAL,
			"10:9: unknown alias *alcie");
	assert_bad_file("bad-syntax.yaml", PB_EINVAL,
			"8:6: did not find expected key "
			"(while parsing a block mapping at 2:5)");
	assert_bad_file("alias-bomb.yaml", PB_ELIMIT,
			"9:21: more than 1000000 nodes with aliases expanded");
}

/* Whoever may write the owners file decides who approves. */
static void test_untrusted_file(void **state)
{
	struct owners *o = NULL;
	char path[1024];

	(void)state;
	fixture(path, sizeof(path), "readme.yaml");
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(owners_load(&o, path), PB_EINVAL);
	assert_null(o);
	assert_non_null(strstr(err_msg(), "readme.yaml is writable by"));
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(owners_load(&o, path), 0);
	owners_free(o);
}

static void test_missing_file(void **state)
{
	struct owners *o = NULL;

	assert_int_equal(owners_load(&o, "/nonexistent/owners.yaml"),
			 PB_ENOTFOUND);
	assert_null(o);
}

/* One malformed text and the message it must give. */
struct bad_case {
	const char *text;
	int code;
	const char *msg;
};

static const struct bad_case bad_cases[] = {
	{ "", PB_EINVAL,
	  "owners.yaml:1:1: empty: expected a mapping with subsystems" },
	{ "- a\n", PB_EINVAL,
	  "owners.yaml:1:1: top level: expected a mapping, found a list" },
	{ "users: []\n", PB_EINVAL, "owners.yaml:1:1: no subsystems list" },
	{ "subsystems: {}\n", PB_EINVAL,
	  "owners.yaml:1:13: subsystems: expected a list, found a mapping" },
	{ "subsystems: [ {labels: {name: x}} ]\n", PB_EINVAL,
	  "owners.yaml:1:15: subsystems: entry without a `subsystem` "
	  "title" },
	{ "subsystems: [ {subsystem: X} ]\n", PB_EINVAL,
	  "owners.yaml:1:15: subsystem X: no labels.name" },
	{ "subsystems:\n"
	  "  - {subsystem: A, labels: {name: a}}\n"
	  "  - {subsystem: B, labels: {name: a}}\n",
	  PB_EINVAL,
	  "owners.yaml:3:35: labels.name a: used by an earlier subsystem" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    requiredApproval: maybe\n",
	  PB_EINVAL,
	  "owners.yaml:4:23: requiredApproval: expected true or false" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    maintainers:\n"
	  "      - name: No Mail\n",
	  PB_EINVAL, "owners.yaml:5:9: maintainers: person without an email" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    maintainers:\n"
	  "      - {name: X, email: \"x@example.org>\\r\\nBcc: y@z\"}\n",
	  PB_EINVAL, "owners.yaml:5:26: email: contains a control character" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    maintainers: [ {email: not-an-address} ]\n",
	  PB_EINVAL,
	  "owners.yaml:4:28: email: not a mail address: not-an-address" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    maintainers: [ {email: \"a\\0b@example.org\"} ]\n",
	  PB_EINVAL, "owners.yaml:4:28: email: contains a control character" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    paths: {includeRegexes: [\"(unclosed\"]}\n",
	  PB_EINVAL,
	  "owners.yaml:4:30: includeRegexes: bad regular expression: "
	  "Unmatched ( or \\(" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    paths: {includeRegexes: [\"^a/(b)\\\\1\"]}\n",
	  PB_EINVAL,
	  "owners.yaml:4:30: includeRegexes: back-references are not "
	  "supported" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    paths: {includeRegexes: [d+++++++++++++++++++++++++++++++]}\n",
	  PB_EINVAL,
	  "owners.yaml:4:30: includeRegexes: too complex (nested "
	  "repetitions)" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    paths: {includeRegexes: ['((a{1,40}){40})+']}\n",
	  PB_EINVAL,
	  "owners.yaml:4:30: includeRegexes: too complex (nested "
	  "repetitions)" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    paths: {includes: [//]}\n",
	  PB_EINVAL, "owners.yaml:4:24: includes: a pattern of only slashes" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    paths: {includes: a/}\n",
	  PB_EINVAL,
	  "owners.yaml:4:23: includes: expected a list, found a "
	  "scalar" },
	{ "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    scm: git x\n"
	  "    scm: git y\n",
	  PB_EINVAL, "owners.yaml:5:5: duplicate key scm" },
	{ "users:\n"
	  "  - &base {email: a@example.org}\n"
	  "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    maintainers: [ {<<: *base, name: A} ]\n",
	  PB_EINVAL,
	  "owners.yaml:6:21: maintainers: merge keys (<<) are not "
	  "supported" },
	{ "users:\n"
	  "  - {email: a@example.org, gluser: one}\n"
	  "  - {email: A@example.org, gluser: two}\n"
	  "subsystems: []\n",
	  PB_EINVAL,
	  "owners.yaml:3:36: gluser two of A@example.org conflicts with one "
	  "given earlier" },
	{ "users:\n"
	  "  - &a {email: a@example.org}\n"
	  "subsystems:\n"
	  "  - subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    reviewers: *a\n",
	  PB_EINVAL,
	  "owners.yaml:6:16: reviewers: expected a list, found a mapping" },
	{ "subsystems:\n"
	  "  - &s\n"
	  "    subsystem: A\n"
	  "    labels: {name: a}\n"
	  "    reviewers: [ *s ]\n",
	  PB_EINVAL, "owners.yaml:5:18: unknown alias *s" },
	{ "subsystems: []\n---\nsubsystems: []\n", PB_EINVAL,
	  "owners.yaml:2:1: more than one YAML document" },
	{ "subsystems: [\n", PB_EINVAL,
	  "owners.yaml:2:1: did not find expected node content "
	  "(while parsing a flow node at 2:1)" },
	{ "subsystems: []\n\x80\n", PB_EINVAL,
	  "owners.yaml:2:1: invalid leading UTF-8 octet: #80" },
};

static void test_malformed_texts(void **state)
{
	struct owners *o;
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		int rc = load_text(&o, bad_cases[i].text);

		if (rc != bad_cases[i].code ||
		    strcmp(err_msg(), bad_cases[i].msg))
			fail_msg("case %zu: got %d \"%s\", expected %d \"%s\"",
				 i, rc, err_msg(), bad_cases[i].code,
				 bad_cases[i].msg);
		assert_null(o);
	}
}

static void test_limits(void **state)
{
	struct owners *o;
	char *text;
	size_t i, n = 0;

	/* Nesting. */
	text = malloc(4096);
	n += (size_t)sprintf(text, "subsystems: ");
	for (i = 0; i < 100; i++)
		text[n++] = '[';
	for (i = 0; i < 100; i++)
		text[n++] = ']';
	text[n++] = '\n';
	assert_int_equal(owners_load_mem(&o, text, n, "deep.yaml"), PB_ELIMIT);
	assert_string_equal(err_msg(),
			    "deep.yaml:1:76: nested deeper than 64 levels");
	free(text);

	/* Size. */
	text = calloc(1, OWNERS_FILE_MAX + 1);
	assert_int_equal(owners_load_mem(&o, text, OWNERS_FILE_MAX + 1,
					 "big.yaml"),
			 PB_ELIMIT);
	free(text);
}

static void test_tolerant(void **state)
{
	static const char text[] =
		"schema: 7\n"
		"subsystems:\n"
		"  - subsystem: A\n"
		"    labels: {name: a, newLabels: [x], colour: blue}\n"
		"    somethingNew: {nested: [1, 2, {deep: true}]}\n"
		"    status: Whatever\n"
		"    requiredApproval:\n"
		"    maintainers:\n"
		"    reviewers: ~\n"
		"    paths:\n"
		"      includes: [a/]\n"
		"      includeGlobsOfTheFuture: [b/]\n"
		"      excludes:\n"
		"  - subsystem: B\n"
		"    labels: {name: b}\n"
		"    requiredApproval: yes\n"
		"    maintainers:\n"
		"      - name: 'Quoted: Name'\n"
		"        email: q@example.org\n"
		"        gluser: 12345\n"
		"        phone: unknown\n"
		"      - email: bare@example.org\n"
		"    paths:\n"
		"      includes: ['*.md', 'tools/*/Makefile']\n"
		"      includeRegexes:\n"
		"        - '^scripts/[[:alnum:]_]+\\.(sh|py)$'\n"
		"        - '^x{2,3}/(a|b)+$'\n";
	struct owners *o = NULL;
	const struct owners_subsystem *a, *b;
	const char *gl;

	if (load_text(&o, text))
		fail_msg("%s", err_msg());
	a = owners_find(o, "a");
	b = owners_find(o, "b");
	assert_non_null(a);
	assert_non_null(b);
	assert_false(a->required_approval);
	assert_true(b->required_approval);
	assert_string_equal(a->status, "Whatever");
	assert_null(b->status);
	assert_int_equal(a->maintainers_nr, 0);
	assert_int_equal(a->reviewers_nr, 0);
	assert_int_equal(owners_gluser(&gl, o, "q@example.org"), 0);
	assert_string_equal(gl, "12345");
	assert_labels(o, "a/b/c", "a");
	assert_labels(o, "b/c", "");
	assert_labels(o, "README.md", "b");
	assert_labels(o, "doc/README.md", "");
	assert_labels(o, "tools/perf/Makefile", "b");
	assert_labels(o, "tools/perf/x/Makefile", "");
	assert_labels(o, "scripts/check_x.py", "b");
	assert_labels(o, "scripts/sub/check.py", "");
	assert_labels(o, "xxx/abba", "b");
	assert_labels(o, "xxxx/abba", "");
	assert_route(o, 0, "README.md", NULL,
		     "\"Quoted: Name\" <q@example.org>|bare@example.org");
	owners_free(o);
}

static void test_failed_reload_keeps_old(void **state)
{
	struct owners *cur = load_fixture("readme.yaml");
	struct owners *before = cur;
	char path[1024];

	/* Loading into the pointer in use: a failure leaves it alone. */
	fixture(path, sizeof(path), "bad-type.yaml");
	assert_int_equal(owners_load(&cur, path), PB_EINVAL);
	assert_ptr_equal(cur, before);
	assert_labels(cur, "include/linux/exnic.h", "exnic");
	owners_free(cur);
	owners_free(NULL);
}

/* Callers without an owners.yaml still get answers: nobody. */
static void test_no_owners(void **state)
{
	const char *paths[] = { "net/core/dev.c" };
	struct owners_matches m = OWNERS_MATCHES_INIT;
	struct strlist cc = STRLIST_INIT;
	const struct owners_subsystem *s = NULL;
	const char *gl;
	struct owners *o = NULL;

	assert_int_equal(owners_count(NULL), 0);
	assert_null(owners_get(NULL, 0));
	assert_null(owners_find(NULL, "net"));
	assert_int_equal(owners_match(&m, NULL, paths[0]), 0);
	assert_int_equal(m.nr, 0);
	assert_int_equal(owners_route(&cc, NULL, paths, 1, 0), 0);
	assert_int_equal(cc.nr, 0);
	assert_int_equal(
		owners_is_approver(&s, NULL, paths, 1, "dave@example.net"), 0);
	assert_int_equal(owners_gluser(&gl, NULL, "dave@example.net"),
			 PB_ENOTFOUND);
	assert_int_equal(owners_load_mem(&o, NULL, 0, NULL), PB_EINVAL);
	assert_string_equal(
		err_msg(),
		"owners.yaml:1:1: empty: expected a mapping with subsystems");
	assert_null(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readme_example),
		cmocka_unit_test(test_man_page_example),
		cmocka_unit_test(test_one_subsystem_only),
		cmocka_unit_test(test_globs_regexes_excludes),
		cmocka_unit_test(test_touched_and_order),
		cmocka_unit_test(test_route_dedup),
		cmocka_unit_test(test_is_approver),
		cmocka_unit_test(test_gluser),
		cmocka_unit_test(test_malformed_files),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_untrusted_file),
		cmocka_unit_test(test_malformed_texts),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_tolerant),
		cmocka_unit_test(test_failed_reload_keeps_old),
		cmocka_unit_test(test_no_owners),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	remove_copies();
	return rc;
}
