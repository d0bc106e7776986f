/*
 * core/postfix.h without Postfix: milter lists as main.cf writes them,
 * and where a chrooted or unchrooted service finds a unix: endpoint.
 * (Reading a real configuration with postconf is tests/install/
 * preflight.sh's.)
 */
#include "cmocka_all.h"
#include "core/postfix.h"
#include "util/buf.h"
#include "util/err.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void test_milter_lists(void **state)
{
	static const char v[] =
		"unix:/run/opendkim/opendkim.sock,\n\t"
		"{ inet:127.0.0.1:8893, default_action=tempfail "
		"},{unix:patchbridge/milter.sock,"
		"default_action=accept,connect_timeout=10s}  "
		"local:x";
	struct postfix_milter_list l;

	(void)state;
	assert_int_equal(postfix_milters_parse(&l, v), 0);
	assert_int_equal(l.nr, 4);
	assert_string_equal(l.v[0].endpoint,
			    "unix:/run/opendkim/opendkim.sock");
	assert_null(l.v[0].default_action);
	assert_string_equal(l.v[1].endpoint, "inet:127.0.0.1:8893");
	assert_string_equal(l.v[1].default_action, "tempfail");
	assert_string_equal(l.v[2].endpoint, "unix:patchbridge/milter.sock");
	assert_string_equal(l.v[2].default_action, "accept");
	assert_string_equal(l.v[3].endpoint, "local:x");
	/* the offsets let a fix replace the entry in place */
	assert_int_equal(strncmp(v + l.v[2].off, "unix:patchbridge/milter.sock",
				 l.v[2].len),
			 0);
	postfix_milter_list_release(&l);

	assert_int_equal(postfix_milters_parse(&l, ""), 0);
	assert_int_equal(l.nr, 0);
	postfix_milter_list_release(&l);
	assert_int_equal(postfix_milters_parse(&l, "{ unix:a, x=y"), PB_EINVAL);
	assert_int_equal(postfix_milters_parse(&l, "unix:a }"), PB_EINVAL);
	assert_int_equal(postfix_milters_parse(&l, "{ }"), PB_EINVAL);
	assert_int_equal(postfix_milters_parse(&l, "{ { unix:a } }"),
			 PB_EINVAL);
}

/* service chrooted or not, in the queue directory dir/queue */
static char *resolved(int chroot, const char *endpoint)
{
	char queue[PATH_MAX + 8];
	struct postfix_conf pc;
	struct postfix_service s;
	struct buf out = BUF_INIT(POSTFIX_PATH_MAX);
	char *r;

	snprintf(queue, sizeof(queue), "%s/queue", dir);
	memset(&pc, 0, sizeof(pc));
	memset(&s, 0, sizeof(s));
	pc.queue_dir = queue;
	s.chroot = chroot;
	if (postfix_resolve(&out, &pc, &s, endpoint))
		fail_msg("%s: %s", endpoint, err_msg());
	r = strdup(out.data);
	buf_release(&out);
	return r;
}

#define assert_resolves(chroot, endpoint, want)                              \
	do {                                                                 \
		char w_[2 * PATH_MAX], *g_ = resolved((chroot), (endpoint)); \
		snprintf(w_, sizeof(w_), "%s%s", dir, (want));               \
		assert_string_equal(g_, w_);                                 \
		free(g_);                                                    \
	} while (0)

static void test_resolve(void **state)
{
	char p[PATH_MAX], q[PATH_MAX];
	struct buf out = BUF_INIT(POSTFIX_PATH_MAX);

	(void)state;
	/* relative: below the queue directory, chrooted or not */
	assert_resolves(1, "unix:patchbridge/milter.sock",
			"/queue/patchbridge/milter.sock");
	assert_resolves(0, "unix:patchbridge/milter.sock",
			"/queue/patchbridge/milter.sock");
	assert_resolves(1, "local:./x/../patchbridge/m.sock",
			"/queue/patchbridge/m.sock");
	/* absolute: inside the jail when chrooted */
	snprintf(p, sizeof(p), "unix:%s/run/m.sock", dir);
	snprintf(q, sizeof(q), "/queue%s/run/m.sock", dir);
	assert_resolves(1, p, q);
	assert_resolves(0, p, "/run/m.sock");
	/* ".." does not leave the jail */
	assert_resolves(1, "unix:../../../etc/x.sock", "/queue/etc/x.sock");
	/* a symbolic link is followed where the process is: in the jail,
	 * an absolute target is below the queue directory */
	snprintf(p, sizeof(p), "%s/queue/link", dir);
	assert_int_equal(symlink("/pb", p), 0);
	assert_resolves(1, "unix:link/m.sock", "/queue/pb/m.sock");
	snprintf(p, sizeof(p), "%s/queue/rel", dir);
	assert_int_equal(symlink("patchbridge", p), 0);
	assert_resolves(1, "unix:rel/m.sock", "/queue/patchbridge/m.sock");
	assert_resolves(0, "unix:rel/m.sock", "/queue/patchbridge/m.sock");
	/* the milter's own spec: absolute only */
	snprintf(p, sizeof(p), "unix:%s/queue/rel/m.sock", dir);
	assert_int_equal(postfix_resolve_own(&out, p), 0);
	snprintf(q, sizeof(q), "%s/queue/patchbridge/m.sock", dir);
	assert_string_equal(out.data, q);
	assert_int_equal(postfix_resolve_own(&out, "unix:rel/m.sock"),
			 PB_EINVAL);
	assert_int_equal(postfix_resolve_own(&out, "inet:8891@localhost"),
			 PB_EINVAL);
	buf_release(&out);
}

static void test_inet(void **state)
{
	(void)state;
	assert_true(postfix_inet_same("inet:127.0.0.1:8893",
				      "inet:8893@127.0.0.1"));
	assert_true(postfix_inet_same("inet:localhost:8893",
				      "inet:8893@127.0.0.1"));
	assert_true(postfix_inet_same("inet:127.0.0.1:8893", "inet:8893"));
	assert_false(postfix_inet_same("inet:127.0.0.1:8894",
				       "inet:8893@127.0.0.1"));
	assert_false(
		postfix_inet_same("inet:10.0.0.1:8893", "inet:8893@127.0.0.1"));
	assert_false(postfix_inet_same("unix:x", "inet:8893"));
}

static int setup(void **state)
{
	const char *base = getenv("PB_TEST_TMP");
	char q[512];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/postfix.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(q, sizeof(q), "%s/queue", dir);
	if (mkdir(q, 0755))
		return -1;
	snprintf(q, sizeof(q), "%s/queue/patchbridge", dir);
	return mkdir(q, 0755);
}

static int teardown(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_milter_lists),
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_inet),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
