#include "cmocka_all.h"
#include "golden.h"
#include "mail/authres.h"
#include "util/buf.h"
#include "util/err.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ID "lists.example.test"

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

	/* what OpenDKIM and OpenDMARC write, job ids included */
	{
		static const char d[] = "mx.example.net/4Y3ZQk1XyZ; dmarc=pass "
					"(p=none dis=none) "
					"header.from=example.org";

		assert_int_equal(authres_parse(&ar, d, sizeof(d) - 1), 0);
	}
	assert_string_equal(ar.authserv_id, "mx.example.net");
	assert_string_equal(ar.job_id, "4Y3ZQk1XyZ");
	assert_string_equal(ar.methods[0].header_from, "example.org");
}

static void test_odd_values(void **state)
{
	struct authres ar;

	assert_int_equal(authres_parse(&ar, "example.org; none", 17), 0);
	assert_int_equal(ar.nr, 0);
	assert_int_equal(authres_parse(&ar, "", 0), PB_EINVAL);
	assert_int_equal(authres_parse(&ar, " (comment only)", 15), PB_EINVAL);
	/* a comment or a quoted string that never ends: unreadable */
	assert_int_equal(authres_parse(&ar, "a.b; dkim=pass ((x) y", 21),
			 PB_EINVAL);
	assert_int_equal(authres_parse(&ar, "\"a.b; dkim=pass", 15), PB_EINVAL);
	/* comments nested too deep: unreadable, bounded */
	{
		char v[200];
		int i, n, depth;

		for (depth = AUTHRES_COMMENT_DEPTH;
		     depth <= AUTHRES_COMMENT_DEPTH + 1; depth++) {
			n = 0;
			for (i = 0; i < depth; i++)
				v[n++] = '(';
			for (i = 0; i < depth; i++)
				v[n++] = ')';
			memcpy(v + n, " a.b; dkim=pass", 15);
			n += 15;
			assert_int_equal(
				authres_parse(&ar, v, (size_t)n),
				depth > AUTHRES_COMMENT_DEPTH ? PB_EINVAL : 0);
		}
	}
	assert_int_equal(authres_parse(&ar, "a.b;;;=;dkim/1 = pass x.y=z", 27),
			 0);
	assert_int_equal(ar.nr, 1);
	assert_int_equal(ar.methods[0].result, AR_PASS);
	/* NUL inside is data, not an end */
	assert_int_equal(authres_parse(&ar, "a.b; dkim=pa\0ss", 15), 0);
}

/*
 * Forged fields claiming the trusted id, in the forms of
 * tests/data/authres/forged.txt: comments, quoting, folding, case.  The
 * old header_checks rule (the bare id after the colon) let most of them
 * through, and the old parser trusted every field claiming the id
 * wherever it stood.
 */
#define FORMS_MAX 64
static char *forms[FORMS_MAX];
static size_t nforms;

/* One line of forged.txt with its escapes undone, into out. */
static void unescape(struct buf *out, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int c = p[i];

		if (c == '\\' && i + 1 < n) {
			c = p[++i];
			c = c == 'r' ? '\r' :
			    c == 'n' ? '\n' :
			    c == 't' ? '\t' :
				       c;
		}
		assert_int_equal(buf_addch(out, c), 0);
	}
}

static int load_forms(void **state)
{
	struct buf text = BUF_INIT(1 << 20), one = BUF_INIT(4096);
	const char *p, *nl;

	(void)state;
	golden_read(&text, golden_path("authres", "forged.txt"));
	for (p = text.data; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		if (nl == p || *p == '#')
			continue;
		buf_reset(&one);
		unescape(&one, p, (size_t)(nl - p));
		assert_true(nforms < FORMS_MAX);
		forms[nforms++] = buf_detach(&one, NULL);
	}
	buf_release(&text);
	buf_release(&one);
	return nforms >= 10 ? 0 : -1;
}

static int free_forms(void **state)
{
	(void)state;
	while (nforms)
		free(forms[--nforms]);
	return 0;
}

#define NFORMS nforms

/* The verifier's two fields, as OpenDKIM and OpenDMARC add them. */
#define VERIFIER                                                        \
	"Authentication-Results: " ID "; dmarc=none (p=none dis=none) " \
	"header.from=corp.example\n"                                    \
	"Authentication-Results: " ID "; dkim=none\n"

static void test_forms_claim(void **state)
{
	struct authres ar;
	size_t i;

	for (i = 0; i < NFORMS; i++) {
		const char *v = forms[i];

		if (authres_parse(&ar, v, strlen(v)) ||
		    strcasecmp(ar.authserv_id, ID))
			fail_msg("form %zu does not claim the id: %s", i + 1,
				 v);
		assert_int_equal(ar.nr, 1);
		assert_int_equal(ar.methods[0].result, AR_PASS);
		if (!authres_mentions(v, strlen(v), ID))
			fail_msg("form %zu is not matched: %s", i + 1, v);
	}
}

/* Below the verifier's fields, each form is forged: removed, ignored. */
static void test_forms_forged(void **state)
{
	struct authres_summary s;
	struct authres_judge j;
	struct buf raw = BUF_INIT(64 * 1024);
	size_t i;

	for (i = 0; i < NFORMS; i++) {
		const char *v = forms[i];
		const char *p;

		buf_reset(&raw);
		assert_int_equal(buf_adds(&raw, VERIFIER), 0);
		assert_int_equal(buf_adds(&raw, "Authentication-Results: "), 0);
		/* folding in the raw header: a line end, then a blank */
		for (p = v; *p; p++)
			if (*p != '\r')
				assert_int_equal(buf_addch(&raw, *p), 0);
		assert_int_equal(buf_adds(&raw,
					  "\nFrom: Ned <ned@corp.example>\n"
					  "Subject: Re: x\n\nAcked-by: Ned "
					  "<ned@corp.example>\n"),
				 0);
		authres_judge_init(&j, ID, 2);
		authres_judge_header(&j, raw.data, raw.len);
		authres_judge_summary(&s, &j, "corp.example");
		if (s.verified || s.forged != 1 || s.trusted != 2)
			fail_msg("form %zu: verified %d, forged %zu, trusted "
				 "%zu:\n%s",
				 i + 1, s.verified, s.forged, s.trusted,
				 raw.data);
		assert_int_equal(j.nr_forged, 1);
		assert_int_equal(j.forged[0], 3);
		authres_judge_release(&j);

		/* and one forged field on top of a verifier that adds one
		 * field only, when two are configured, is what
		 * header_checks are for; with the count right it is the
		 * second field and forged */
		authres_judge_init(&j, ID, 1);
		authres_judge_header(&j, raw.data, raw.len);
		authres_judge_summary(&s, &j, "corp.example");
		assert_false(s.verified);
		assert_int_equal(s.trusted, 1);
		assert_int_equal(s.forged, 2);
		authres_judge_release(&j);
	}
	buf_release(&raw);
}

static void judge(struct authres_summary *s, const char *header, size_t top,
		  const char *id, const char *from)
{
	struct authres_judge j;

	authres_judge_init(&j, id, top);
	authres_judge_header(&j, header, strlen(header));
	authres_judge_summary(s, &j, from);
	authres_judge_release(&j);
}

static void test_positions(void **state)
{
	static const char pass[] = "Authentication-Results: " ID "; dmarc=pass "
				   "header.from=corp.example\n"
				   "Authentication-Results: " ID
				   "; dkim=pass header.d=corp.example\n"
				   "From: Ned <ned@corp.example>\n\n";
	static const char below[] = "From: Ned <ned@corp.example>\n"
				    "Authentication-Results: " ID
				    "; dkim=pass header.d=corp.example\n"
				    "\n";
	static const char foreign_top[] =
		"Authentication-Results: other.example; dkim=pass "
		"header.d=corp.example\n"
		"Authentication-Results: " ID
		"; dkim=pass header.d=corp.example\n"
		"\n";
	static const char broken_top[] = "Authentication-Results: " ID
					 "; dkim=pass (no end\n"
					 "Authentication-Results: " ID
					 "; dkim=pass header.d=corp.example\n"
					 "\n";
	struct authres_summary s;
	struct authres_judge j;

	judge(&s, pass, 2, ID, "corp.example");
	assert_true(s.verified);
	assert_int_equal(s.trusted, 2);
	assert_int_equal(s.dkim, AR_PASS);
	assert_int_equal(s.dmarc, AR_PASS);
	/* one trusted field: the second one is the client's */
	judge(&s, pass, 1, ID, "corp.example");
	assert_true(s.verified);
	assert_int_equal(s.trusted, 1);
	assert_int_equal(s.forged, 1);
	assert_int_equal(s.dkim, AR_NONE);
	/* below another field: the client's */
	judge(&s, below, 2, ID, "corp.example");
	assert_false(s.verified);
	assert_int_equal(s.forged, 1);
	judge(&s, foreign_top, 2, ID, "corp.example");
	assert_false(s.verified);
	assert_int_equal(s.trusted, 0);
	assert_int_equal(s.forged, 1);
	/* an unreadable field ends the trusted block */
	judge(&s, broken_top, 2, ID, "corp.example");
	assert_false(s.verified);
	assert_int_equal(s.forged, 2);
	/* nothing trusted, nothing removed without an id */
	judge(&s, pass, 2, NULL, "corp.example");
	assert_false(s.verified);
	assert_int_equal(s.forged, 0);
	judge(&s, pass, 2, "", "corp.example");
	assert_false(s.verified);

	/* field by field, as the milter feeds it; names with blanks */
	authres_judge_init(&j, ID, 2);
#define FIELD(n, v) authres_judge_field(&j, (n), strlen(n), (v), strlen(v))
	assert_int_equal(FIELD("Authentication-Results ", ID "; dkim=none"),
			 AUTHRES_TRUSTED);
	assert_int_equal(FIELD("authentication-results",
			       "other.example; dkim=pass"),
			 AUTHRES_FOREIGN);
	assert_int_equal(FIELD("Authentication-Results",
			       "x; spf=pass smtp.mailfrom=" ID),
			 AUTHRES_FORGED);
	assert_int_equal(FIELD("From", "a@b.example"), AUTHRES_OTHER);
#undef FIELD
	assert_int_equal(j.nr_forged, 1);
	assert_int_equal(j.forged[0], 3);
	authres_judge_release(&j);
}

static void test_alignment(void **state)
{
	struct authres_summary s;
	char h[512];

#define ONE(v) \
	snprintf(h, sizeof(h), "Authentication-Results: " ID "; %s\n\n", (v))

	ONE("dkim=pass header.d=example.org");
	judge(&s, h, 2, "LISTS.example.test", "example.org");
	assert_true(s.verified);
	judge(&s, h, 2, ID, "lists.example.org");
	assert_true(s.verified); /* a parent domain aligns */
	judge(&s, h, 2, ID, "Example.ORG");
	assert_true(s.verified);
	/* a list re-signing the post is not the sender */
	ONE("dkim=pass header.d=lists.example.com");
	judge(&s, h, 2, ID, "example.org");
	assert_false(s.verified);
	assert_int_equal(s.dkim, AR_NEUTRAL);
	assert_true(s.why & AUTHRES_WHY_DKIM_UNALIGNED);
	ONE("dkim=pass header.d=org");
	judge(&s, h, 2, ID, "example.org");
	assert_false(s.verified);
	/* header.i alone is not an aligned header.d */
	ONE("dkim=pass header.i=@example.org");
	judge(&s, h, 2, ID, "example.org");
	assert_false(s.verified);
	/* DMARC: header.from must be there and be the From domain */
	ONE("dmarc=pass header.from=example.org");
	judge(&s, h, 2, ID, "example.org");
	assert_true(s.verified);
	assert_int_equal(s.dmarc, AR_PASS);
	ONE("dmarc=pass");
	judge(&s, h, 2, ID, "example.org");
	assert_false(s.verified);
	assert_true(s.why & AUTHRES_WHY_DMARC_NO_FROM);
	ONE("dmarc=pass header.from=example.com");
	judge(&s, h, 2, ID, "example.org");
	assert_false(s.verified);
	assert_true(s.why & AUTHRES_WHY_DMARC_OTHER_FROM);
	/* no From domain: nothing verifies */
	ONE("dmarc=pass header.from=example.org");
	judge(&s, h, 2, ID, "");
	assert_false(s.verified);
	/* failures */
	ONE("dkim=fail header.d=example.org");
	judge(&s, h, 2, ID, "example.org");
	assert_false(s.verified);
	assert_int_equal(s.dkim, AR_FAIL);
	assert_string_equal(authres_result_name(s.dkim), "fail");
#undef ONE
}

static void test_why(void **state)
{
	struct authres_summary s;
	struct buf b = BUF_INIT(1024);

	memset(&s, 0, sizeof(s));
	assert_int_equal(authres_summary_why(&b, &s, ID), 0);
	assert_int_equal(b.len, 0);
	s.forged = 1;
	s.why = AUTHRES_WHY_DMARC_NO_FROM;
	assert_int_equal(authres_summary_why(&b, &s, ID), 0);
	assert_string_equal(b.data,
			    "1 Authentication-Results field claiming " ID
			    " was not added by its verifier and was ignored; "
			    "a DMARC pass without header.from does not count");
	buf_reset(&b);
	s.forged = 3;
	s.why = 0;
	assert_int_equal(authres_summary_why(&b, &s, ID), 0);
	assert_non_null(strstr(b.data, "3 Authentication-Results fields "));
	assert_non_null(strstr(b.data, "were ignored"));
	buf_release(&b);
}

/* The header_checks rule as Postfix's regexp: table compiles it. */
static void compile_rule(regex_t *re, const char *id)
{
	struct buf rule = BUF_INIT(4096);
	char *pat;

	assert_int_equal(authres_header_checks(&rule, id), 0);
	assert_true(rule.len > 10);
	assert_int_equal(rule.data[0], '/');
	pat = strstr(rule.data, "/ IGNORE\n");
	assert_non_null(pat);
	assert_string_equal(pat, "/ IGNORE\n");
	*pat = '\0';
	assert_int_equal(regcomp(re, rule.data + 1,
				 REG_EXTENDED | REG_ICASE | REG_NOSUB),
			 0);
	buf_release(&rule);
}

static int rule_matches(const regex_t *re, const char *v)
{
	struct buf line = BUF_INIT(64 * 1024);
	int m;

	buf_adds(&line, "Authentication-Results: ");
	buf_adds(&line, v);
	m = regexec(re, line.data, 0, NULL, 0) == 0;
	buf_release(&line);
	return m;
}

/*
 * The shipped rule matches exactly what authres_mentions() matches, and
 * that is every field claiming the id: on the forms above and on random
 * values made of the id's pieces, quotes, comments and escapes.
 */
static void test_header_checks_rule(void **state)
{
	static const char *const bits[] = {
		"lists", ".",	"example", "test",	"LISTS", "EXAMPLE",
		"\\",	 "\\.", "\\l",	   "\"",	"(",	 ")",
		";",	 " ",	"\n\t",	   "/",		"1",	 ID,
		"x",	 "e",	"s",	   "dkim=pass", "=",
	};
	struct buf v = BUF_INIT(4096);
	struct authres ar;
	regex_t re;
	unsigned seed = 12345;
	size_t i;
	int k;

	compile_rule(&re, ID);
	for (i = 0; i < NFORMS; i++)
		if (!rule_matches(&re, forms[i]))
			fail_msg("the rule misses form %zu: %s", i + 1,
				 forms[i]);
	assert_false(rule_matches(&re, "lists.example.tes; dkim=pass"));
	assert_false(rule_matches(&re, "other.example; dkim=pass"));
	for (i = 0; i < 20000; i++) {
		int n = 1 + (int)(seed % 9);

		buf_reset(&v);
		for (k = 0; k < n; k++) {
			seed = seed * 1103515245u + 12345u;
			buf_adds(&v, bits[(seed >> 8) %
					  (sizeof(bits) / sizeof(bits[0]))]);
		}
		seed = seed * 1103515245u + 12345u;
		if (rule_matches(&re, v.data) !=
		    authres_mentions(v.data, v.len, ID))
			fail_msg("rule and code differ on: %s", v.data);
		if (!authres_parse(&ar, v.data, v.len) &&
		    !strcasecmp(ar.authserv_id, ID) &&
		    !authres_mentions(v.data, v.len, ID))
			fail_msg("claims the id, not matched: %s", v.data);
	}
	regfree(&re);
	buf_release(&v);

	/* regexp specials in an id are escaped */
	compile_rule(&re, "a+b.example");
	assert_true(rule_matches(&re, "A+B.example; dkim=pass"));
	assert_false(rule_matches(&re, "aab.example; dkim=pass"));
	assert_false(rule_matches(&re, "a+bxexample; dkim=pass"));
	regfree(&re);
	assert_int_equal(authres_header_checks(&v, ""), PB_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_odd_values),
		cmocka_unit_test(test_forms_claim),
		cmocka_unit_test(test_forms_forged),
		cmocka_unit_test(test_positions),
		cmocka_unit_test(test_alignment),
		cmocka_unit_test(test_why),
		cmocka_unit_test(test_header_checks_rule),
	};

	return cmocka_run_group_tests(tests, load_forms, free_forms);
}
