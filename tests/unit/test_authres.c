#include "cmocka_all.h"
#include "mail/authres.h"
#include "util/err.h"

#include <string.h>

static void test_parse(void **state)
{
	static const char v[] =
		"mx.example.net (version 1); dkim=pass (2048-bit key; "
		"unprotected) header.d=ibm.com header.i=@ibm.com "
		"header.a=rsa-sha256 header.s=pp1 header.b=dCM1Y2fW;\r\n"
		"\tspf=pass (sender SPF authorized) smtp.mailfrom=us.ibm.com "
		"(client-ip=148.163.156.1; helo=x);\r\n"
		"\tdmarc=fail (p=none dis=none) header.from=\"ibm.com\";"
		" arc=none smtp.client-ip=1.2.3.4";
	struct authres ar;

	assert_int_equal(authres_parse(&ar, v, strlen(v)), 0);
	assert_string_equal(ar.authserv_id, "mx.example.net");
	assert_int_equal(ar.nr, 4);
	assert_string_equal(ar.methods[0].method, "dkim");
	assert_int_equal(ar.methods[0].result, AR_PASS);
	assert_string_equal(ar.methods[0].header_d, "ibm.com");
	assert_string_equal(ar.methods[1].method, "spf");
	assert_string_equal(ar.methods[2].method, "dmarc");
	assert_int_equal(ar.methods[2].result, AR_FAIL);
	assert_string_equal(ar.methods[2].header_from, "ibm.com");
	assert_int_equal(ar.methods[3].result, AR_NONE);
}

static void test_odd_values(void **state)
{
	struct authres ar;

	assert_int_equal(authres_parse(&ar, "example.org; none", 17), 0);
	assert_int_equal(ar.nr, 0);
	assert_int_equal(authres_parse(&ar, "", 0), PB_EINVAL);
	assert_int_equal(authres_parse(&ar, " (comment only)", 15), PB_EINVAL);
	/* nested and unterminated comments, junk: no crash, bounded */
	assert_int_equal(authres_parse(&ar, "a.b; dkim=pass ((x) y", 21), 0);
	assert_int_equal(authres_parse(&ar, "a.b;;;=;dkim/1 = pass x.y=z", 27),
			 0);
	assert_int_equal(ar.nr, 1);
	assert_int_equal(ar.methods[0].result, AR_PASS);
	/* NUL inside is data, not an end */
	assert_int_equal(authres_parse(&ar, "a.b; dkim=pa\0ss", 15), 0);
}

static void eval(struct authres_summary *s, const char *v, const char *trust,
		 const char *from)
{
	const char *vals[1] = { v };
	size_t lens[1] = { strlen(v) };

	authres_evaluate(s, vals, lens, 1, trust, from);
}

static void test_evaluate(void **state)
{
	struct authres_summary s;

	/* nothing trusted: nothing verified, whatever the header says */
	eval(&s, "mx.example.net; dkim=pass header.d=example.org", NULL,
	     "example.org");
	assert_false(s.verified);
	assert_int_equal(s.dkim, AR_NONE);

	/* the trusted id, an aligned signature */
	eval(&s, "mx.example.net; dkim=pass header.d=example.org",
	     "MX.example.net", "example.org");
	assert_true(s.verified);
	assert_int_equal(s.dkim, AR_PASS);
	eval(&s, "mx.example.net; dkim=pass header.d=example.org",
	     "mx.example.net", "lists.example.org");
	assert_true(s.verified);

	/* another id claiming a pass is ignored */
	eval(&s, "evil.example; dkim=pass header.d=example.org",
	     "mx.example.net", "example.org");
	assert_false(s.verified);

	/* a list re-signing the post is not the sender */
	eval(&s, "mx.example.net; dkim=pass header.d=lists.example.com",
	     "mx.example.net", "example.org");
	assert_false(s.verified);
	assert_int_equal(s.dkim, AR_NEUTRAL);
	eval(&s, "mx.example.net; dkim=pass header.d=org", "mx.example.net",
	     "example.org");
	assert_false(s.verified);

	/* DMARC pass, and a DMARC pass for another From domain */
	eval(&s, "mx.example.net; dmarc=pass header.from=example.org",
	     "mx.example.net", "example.org");
	assert_true(s.verified);
	assert_int_equal(s.dmarc, AR_PASS);
	eval(&s, "mx.example.net; dmarc=pass header.from=example.com",
	     "mx.example.net", "example.org");
	assert_false(s.verified);

	/* failures */
	eval(&s, "mx.example.net; dkim=fail header.d=example.org",
	     "mx.example.net", "example.org");
	assert_false(s.verified);
	assert_int_equal(s.dkim, AR_FAIL);
	assert_string_equal(authres_result_name(s.dkim), "fail");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_odd_values),
		cmocka_unit_test(test_evaluate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
