#include "cmocka_all.h"
#include "core/msgid.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/limits.h"

#include <stdio.h>
#include <string.h>

static const char sha1[] = "0123456789abcdef0123456789abcdef01234567";
static const char sha2[] = "fedcba9876543210fedcba9876543210fedcba98";

/* RFC 5322 section 3.2.3 atext. */
static int is_atext(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || strchr("!#$%&'*+-/=?^_`{|}~", c);
}

/* dot-atom-text: atoms of atext separated by single dots. */
static int is_dot_atom(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || s[0] == '.' || s[len - 1] == '.')
		return 0;
	for (i = 0; i < len; i++) {
		if (s[i] == '.') {
			if (s[i + 1] == '.')
				return 0;
		} else if (!is_atext(s[i])) {
			return 0;
		}
	}
	return 1;
}

/* msg-id = "<" id-left "@" id-right ">", both dot-atom-text (section
 * 3.6.4), at most 998 octets on a line. */
static int valid_msgid(const char *id)
{
	const char *at = strchr(id, '@');

	return at && strchr(at + 1, '@') == NULL && strlen(id) < 900 &&
	       is_dot_atom(id, (size_t)(at - id)) &&
	       is_dot_atom(at + 1, strlen(at + 1));
}

static void make(struct buf *b, const char *project, uint64_t iid, unsigned rev,
		 unsigned k, unsigned m, const char *sha)
{
	struct msgid_parts p = {
		.project = project,
		.iid = iid,
		.revision = rev,
		.index = k,
		.total = m,
		.head_sha = sha,
		.domain = "bridge.example.org",
	};

	buf_reset(b);
	assert_int_equal(msgid_format(b, &p), 0);
}

static void test_format_example(void **state)
{
	struct buf b = BUF_INIT(PB_MSGID_MAX);

	make(&b, "group/project", 12, 3, 2, 7, sha1);
	assert_string_equal(
		b.data,
		"pb.v3.2-7.group.project.12.0123456789ab@bridge.example.org");
	assert_true(valid_msgid(b.data));
	buf_release(&b);
}

static void test_round_trip(void **state)
{
	struct buf b = BUF_INIT(PB_MSGID_MAX);
	struct msgid_parsed p;
	char bracketed[PB_MSGID_MAX + 3];

	make(&b, "group/sub/my-project_x", 4711, 12, 0, 123, sha2);
	assert_int_equal(msgid_parse(&p, b.data, b.len), 0);
	assert_string_equal(p.project, "group/sub/my-project_x");
	assert_int_equal(p.iid, 4711);
	assert_int_equal(p.revision, 12);
	assert_int_equal(p.index, 0);
	assert_int_equal(p.total, 123);
	assert_string_equal(p.head_sha, "fedcba987654");
	assert_string_equal(p.domain, "bridge.example.org");
	assert_int_equal(p.project_cut, 0);

	/* Angle brackets and blanks around it, as in a header. */
	snprintf(bracketed, sizeof(bracketed), " <%s>\t", b.data);
	memset(&p, 0, sizeof(p));
	assert_int_equal(msgid_parse(&p, bracketed, strlen(bracketed)), 0);
	assert_int_equal(p.iid, 4711);
	buf_release(&b);
}

static void test_unique(void **state)
{
	struct buf a = BUF_INIT(PB_MSGID_MAX), b = BUF_INIT(PB_MSGID_MAX);

	/* A force-push (new head) never reuses an id. */
	make(&a, "g/p", 1, 1, 1, 3, sha1);
	make(&b, "g/p", 1, 1, 1, 3, sha2);
	assert_string_not_equal(a.data, b.data);
	/* Every field counts. */
	make(&b, "g/p", 1, 1, 2, 3, sha1);
	assert_string_not_equal(a.data, b.data);
	make(&b, "g/p", 1, 2, 1, 3, sha1);
	assert_string_not_equal(a.data, b.data);
	make(&b, "g/p", 2, 1, 1, 3, sha1);
	assert_string_not_equal(a.data, b.data);
	make(&b, "g/q", 1, 1, 1, 3, sha1);
	assert_string_not_equal(a.data, b.data);
	/* "g/p" and "g.p" must not collide. */
	make(&b, "g.p", 1, 1, 1, 3, sha1);
	assert_string_not_equal(a.data, b.data);
	/* Deterministic. */
	make(&b, "g/p", 1, 1, 1, 3, sha1);
	assert_string_equal(a.data, b.data);
	buf_release(&a);
	buf_release(&b);
}

/*
 * Any project text formats to a valid Message-ID, but only a GitLab
 * project path comes back from one: letters, digits, "_", "-", "." and
 * the "/" between components (lib/gitlab/path_regex.rb, PATH_REGEX_STR).
 * An id that decodes to anything else is not ours.
 */
static void test_hostile_projects(void **state)
{
	static const char *const paths[] = {
		"a.b.c", "..", ".", "-", "_._", "group/sub.name/x.y-z_1",
	};
	static const char *const hostile[] = {
		"a//b",
		"/lead",
		"trail/",
		"a b",
		"x@y",
		"<>\"()",
		"caf\xc3\xa9/\xe2\x80\xae",
		"tab\there",
		"new\r\nline",
		"=3D",
		"~",
		"%41",
		"/",
		"//",
	};
	struct buf b = BUF_INIT(PB_MSGID_MAX);
	struct msgid_parsed p;
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		make(&b, paths[i], 9, 2, 1, 2, sha1);
		assert_true(valid_msgid(b.data));
		assert_int_equal(msgid_parse(&p, b.data, b.len), 0);
		assert_string_equal(p.project, paths[i]);
		assert_int_equal(p.project_cut, 0);
	}
	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		make(&b, hostile[i], 9, 2, 1, 2, sha1);
		assert_true(valid_msgid(b.data));
		assert_int_equal(msgid_parse(&p, b.data, b.len), PB_EINVAL);
	}
	buf_release(&b);
}

/*
 * A sender's Message-ID (In-Reply-To, References) is decoded as ours
 * only when its project is a GitLab path: "=0A" once became a newline
 * in the project name, which was logged raw and forged a log line.
 */
static void test_parse_no_control_bytes(void **state)
{
	static const char *const ids[] = {
		"<pb.v1.0-1.group.evil=0Ainfo=3A=20forged=20line.12."
		"0123456789ab@bridge.example.org>",
		"pb.v1.0-1.group.x=0D=0A.12.0123456789ab@bridge.example.org",
		"pb.v1.0-1.group.x=1B=5B31m.12.0123456789ab@bridge.example.org",
		"pb.v1.0-1.group.x=7F.12.0123456789ab@bridge.example.org",
		"pb.v1.0-1.group.x=C2=85.12.0123456789ab@bridge.example.org",
		"pb.v1.0-1.group.x=E2=80=A8.12.0123456789ab@bridge.example.org",
		"pb.v1.0-1.group.x=20y.12.0123456789ab@bridge.example.org",
		"pb.v1.0-1.group.x=2F.12.0123456789ab@bridge.example.org",
		"pb.v1.0-1.group.x=2e.12.0123456789ab@bridge.example.org",
	};
	static const char dot[] = "pb.v1.0-1.group.my=2Eproj.12.0123456789ab"
				  "@bridge.example.org";
	struct msgid_parsed p;
	size_t i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		assert_int_equal(msgid_parse(&p, ids[i], strlen(ids[i])),
				 PB_EINVAL);
	/* The one escape a project path needs: "." inside a component. */
	assert_int_equal(msgid_parse(&p, dot, strlen(dot)), 0);
	assert_string_equal(p.project, "group/my.proj");
}

static void test_long_project_is_cut(void **state)
{
	struct buf b = BUF_INIT(PB_MSGID_MAX);
	struct msgid_parsed p;
	char project[400];

	memset(project, 'a', sizeof(project) - 1);
	project[sizeof(project) - 1] = '\0';
	project[100] = '/';
	make(&b, project, 1, 1, 1, 1, sha1);
	assert_true(valid_msgid(b.data));
	assert_true(b.len < 300);
	assert_int_equal(msgid_parse(&p, b.data, b.len), 0);
	assert_int_equal(p.project_cut, 1);
	assert_int_equal(strncmp(p.project, project, strlen(p.project)), 0);

	/* A cut right after a "/" leaves no empty atom. */
	memset(project, 'b', sizeof(project) - 1);
	project[159] = '/';
	make(&b, project, 1, 1, 1, 1, sha1);
	assert_true(valid_msgid(b.data));
	assert_int_equal(msgid_parse(&p, b.data, b.len), 0);
	buf_release(&b);
}

static void test_format_rejects(void **state)
{
	struct buf b = BUF_INIT(PB_MSGID_MAX);
	struct msgid_parts p = {
		.project = "g/p",
		.iid = 1,
		.revision = 1,
		.index = 0,
		.total = 1,
		.head_sha = sha1,
		.domain = "example.org",
	};

	assert_int_equal(msgid_format(&b, &p), 0);
	p.domain = "bad domain";
	assert_int_equal(msgid_format(&b, &p), PB_EINVAL);
	p.domain = "x..y";
	assert_int_equal(msgid_format(&b, &p), PB_EINVAL);
	p.domain = "-x.org";
	assert_int_equal(msgid_format(&b, &p), PB_EINVAL);
	p.domain = "example.org";
	p.head_sha = "0123";
	assert_int_equal(msgid_format(&b, &p), PB_EINVAL);
	p.head_sha = "0123456789ABCDEF0123";
	assert_int_equal(msgid_format(&b, &p), PB_EINVAL);
	p.head_sha = sha1;
	p.index = 2;
	assert_int_equal(msgid_format(&b, &p), PB_EINVAL);
	p.index = 0;
	p.revision = 0;
	assert_int_equal(msgid_format(&b, &p), PB_EINVAL);
	p.revision = 1;
	p.iid = 0;
	assert_int_equal(msgid_format(&b, &p), PB_EINVAL);
	p.iid = 1;
	p.project = "";
	assert_int_equal(msgid_format(&b, &p), PB_EINVAL);
	buf_release(&b);
}

static void test_parse_rejects(void **state)
{
	static const char *const ids[] = {
		"",
		"<>",
		"20231114.1234@mail.example.org",
		"pb.v1.0-3.g.p.1.0123456789ab", /* no domain */
		"pb.v0.0-3.g.p.1.0123456789ab@x.org", /* revision 0 */
		"pb.v1.4-3.g.p.1.0123456789ab@x.org", /* k > M */
		"pb.v01.0-3.g.p.1.0123456789ab@x.org", /* leading zero */
		"pb.v1.0-3.g.p.0.0123456789ab@x.org", /* iid 0 */
		"pb.v1.0-3.g.p.1.0123456789AB@x.org", /* upper-case sha */
		"pb.v1.0-3.g.p.1.0123456789a@x.org", /* short sha */
		"pb.v1.0-3..1.0123456789ab@x.org", /* no project */
		"pb.v1.0-3.g..p.1.0123456789ab@x.org", /* empty atom */
		"pb.v1.0-3.g=ZZ.1.0123456789ab@x.org", /* bad escape */
		"pb.v1.0-3.g=00.1.0123456789ab@x.org", /* NUL */
		"pb.v1.0-3.g.p.1.0123456789ab@x..org", /* bad domain */
		"pb.v99999.0-3.g.p.1.0123456789ab@x.org", /* too big */
	};
	struct msgid_parsed p;
	size_t i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		assert_int_equal(msgid_parse(&p, ids[i], strlen(ids[i])),
				 PB_EINVAL);
}

/* As public-inbox escapes a Message-ID in its URLs (mid_escape). */
static void test_url_escape(void **state)
{
	struct buf b = BUF_INIT(1024);

	(void)state;
	assert_int_equal(msgid_url_escape(&b, "pb.v1.0-2.g.p.1.0123@x.org"), 0);
	assert_string_equal(b.data, "pb.v1.0-2.g.p.1.0123@x.org");
	buf_reset(&b);
	assert_int_equal(msgid_url_escape(&b, "a/b%c?d#e f\"g<>~!$&'()*+,;=:"),
			 0);
	assert_string_equal(b.data,
			    "a%2Fb%25c%3Fd%23e%20f%22g%3C%3E~!$&'()*+,;=:");
	buf_reset(&b);
	assert_int_equal(msgid_url_escape(&b, "\xc3\xa9@x"), 0);
	assert_string_equal(b.data, "%C3%A9@x");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_example),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_unique),
		cmocka_unit_test(test_hostile_projects),
		cmocka_unit_test(test_parse_no_control_bytes),
		cmocka_unit_test(test_long_project_is_cut),
		cmocka_unit_test(test_format_rejects),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_url_escape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
