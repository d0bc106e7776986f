#include "cmocka_all.h"
#include "core/msgid.h"
#include "core/version.h"
#include "outbound/series.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD1 "aaaaaaaaaaaa0000000000000000000000000000"
#define HEAD2 "bbbbbbbbbbbb0000000000000000000000000000"

/* A range as gitrepo_range_load() would return it, without git. */
static struct gitrepo_range *fake_range(size_t n, const char *head,
					const char *variant)
{
	struct gitrepo_range *r = xcalloc(1, sizeof(*r));
	size_t i;

	buf_init(&r->diffstat, 1 << 20);
	buf_adds(&r->diffstat, " f | 1 +\n 1 file changed, 1 insertion(+)\n");
	memset(r->base, '1', 40);
	memcpy(r->head, head, 40);
	memcpy(r->merge_base, r->base, 41);
	r->commits = xcalloc(n, sizeof(*r->commits));
	r->nr = n;
	r->have_patches = 1;
	for (i = 0; i < n; i++) {
		struct gitrepo_commit *c = &r->commits[i];

		snprintf(c->sha, sizeof(c->sha), "%040zx", i + 1);
		c->author.name = xstrdup(i % 2 ? "Zo\xc3\xab \xc3\x87"
						 "elik" :
						 "Ada Lovelace");
		c->author.email =
			xstrdup(i % 2 ? "zoe@example.org" : "ada@example.org");
		c->author.time = 1700000000 + (int64_t)i * 60;
		c->author.tz_minutes = 60;
		c->committer.name = xstrdup("Committer");
		c->committer.email = xstrdup("c@example.org");
		c->subject = xasprintf("patch %zu", i + 1);
		c->body = xstrdup(i == 0 ? "" : "Some body text.\n");
		buf_init(&c->patch, 1 << 20);
		buf_addf(&c->patch,
			 "---\n f | 1 +\n 1 file changed, 1 insertion(+)\n\n"
			 "diff --git a/f b/f\nindex 1111111..2222222 100644\n"
			 "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n x\n+%s %zu\n",
			 variant, i + 1);
		snprintf(c->patch_id, sizeof(c->patch_id), "%040zx",
			 i + 1 + (strcmp(variant, "v1") ? 0 : 1000));
		c->files = 1;
		c->insertions = 1;
	}
	return r;
}

static void opts_base(struct series_opts *o)
{
	series_opts_init(o);
	o->project = "group/proj";
	o->iid = 7;
	o->title = "A title";
	o->bridge_address = "bridge@bridge.example.org";
	o->msgid_domain = "bridge.example.org";
	o->date = 1700003600;
	o->date_tz = 0;
	o->url = "https://gitlab.example.org/group/proj/-/merge_requests/7";
}

/* The value of header name in mail m (unfolded), or NULL. */
static char *header(const struct series_mail *m, const char *name)
{
	const char *p = m->text.data, *end = strstr(p, "\n\n");
	size_t nlen = strlen(name);
	struct buf v = BUF_INIT(1 << 16);

	assert_non_null(end);
	while (p < end) {
		if (!strncmp(p, name, nlen) && p[nlen] == ':') {
			p += nlen + 2;
			while (p < end) {
				if (*p == '\n' &&
				    (p[1] == ' ' || p[1] == '\t')) {
					p++;
					continue;
				}
				if (*p == '\n')
					break;
				buf_addch(&v, *p++);
			}
			return buf_detach(&v, NULL);
		}
		p = strchr(p, '\n') + 1;
	}
	buf_release(&v);
	return NULL;
}

static const char *body(const struct series_mail *m)
{
	return strstr(m->text.data, "\n\n") + 2;
}

static void assert_header(const struct series_mail *m, const char *name,
			  const char *want)
{
	char *v = header(m, name);

	if (!want) {
		assert_null(v);
		return;
	}
	assert_non_null(v);
	assert_string_equal(v, want);
	free(v);
}

static void test_subjects(void **state)
{
	struct gitrepo_range *r = fake_range(7, HEAD1, "v2");
	struct series_opts o;
	struct series *s;

	opts_base(&o);
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_int_equal(s->nr, 8);
	assert_header(&s->mails[0], "Subject", "[PATCH 0/7] A title");
	assert_header(&s->mails[3], "Subject", "[PATCH 3/7] patch 3");
	series_free(s);

	o.revision = 2;
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[0], "Subject", "[PATCH v2 0/7] A title");
	assert_header(&s->mails[3], "Subject", "[PATCH v2 3/7] patch 3");
	assert_header(&s->mails[3], "X-Patchbridge-Revision", "2");
	assert_header(&s->mails[3], "X-Patchbridge-MR", "7");
	assert_header(&s->mails[3], "X-Patchbridge-Project", "group/proj");
	series_free(s);
	gitrepo_range_free(r);

	/* Ten or more: zero-padded like git format-patch. */
	r = fake_range(12, HEAD1, "v2");
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[0], "Subject", "[PATCH v2 00/12] A title");
	assert_header(&s->mails[3], "Subject", "[PATCH v2 03/12] patch 3");
	series_free(s);
	/* Another prefix. */
	o.subject_prefix = "RFC PATCH";
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[12], "Subject",
		      "[RFC PATCH v2 12/12] patch 12");
	series_free(s);
	gitrepo_range_free(r);
}

static void test_single_patch(void **state)
{
	struct gitrepo_range *r = fake_range(1, HEAD1, "v2");
	struct series_opts o;
	struct series *s;

	opts_base(&o);
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_int_equal(s->nr, 1);
	assert_int_equal(s->mails[0].index, 1);
	assert_header(&s->mails[0], "Subject", "[PATCH] patch 1");
	assert_header(&s->mails[0], "In-Reply-To", NULL);
	assert_string_equal(s->root_msgid, s->mails[0].msgid);
	series_free(s);

	o.revision = 3;
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[0], "Subject", "[PATCH v3] patch 1");
	series_free(s);

	o.cover_single = 1;
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_int_equal(s->nr, 2);
	assert_header(&s->mails[0], "Subject", "[PATCH v3 0/1] A title");
	assert_header(&s->mails[1], "Subject", "[PATCH v3 1/1] patch 1");
	series_free(s);
	gitrepo_range_free(r);
}

static void test_threading(void **state)
{
	struct gitrepo_range *r = fake_range(3, HEAD1, "v2");
	struct strlist prev = STRLIST_INIT;
	struct series_opts o;
	struct series *s;
	char want[512];

	strlist_push(&prev, "v1root@bridge.example.org");
	strlist_push(&prev, "v2root@bridge.example.org");
	opts_base(&o);
	o.revision = 3;
	o.prev_roots = &prev;

	/* shallow (default): to v1's cover. */
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[0], "In-Reply-To",
		      "<v1root@bridge.example.org>");
	assert_header(&s->mails[0], "References",
		      "<v1root@bridge.example.org>");
	snprintf(want, sizeof(want), "<%s>", s->mails[0].msgid);
	assert_header(&s->mails[2], "In-Reply-To", want);
	snprintf(want, sizeof(want), "<v1root@bridge.example.org> <%s>",
		 s->mails[0].msgid);
	assert_header(&s->mails[2], "References", want);
	series_free(s);

	/* deep: to the previous cover, all covers in References. */
	o.threading = SERIES_THREAD_DEEP;
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[0], "In-Reply-To",
		      "<v2root@bridge.example.org>");
	assert_header(&s->mails[0], "References",
		      "<v1root@bridge.example.org> "
		      "<v2root@bridge.example.org>");
	series_free(s);

	/* none: a thread of its own. */
	o.threading = SERIES_THREAD_NONE;
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[0], "In-Reply-To", NULL);
	assert_header(&s->mails[0], "References", NULL);
	snprintf(want, sizeof(want), "<%s>", s->mails[0].msgid);
	assert_header(&s->mails[1], "In-Reply-To", want);
	assert_header(&s->mails[1], "References", want);
	series_free(s);

	/* An explicit In-Reply-To wins. */
	o.in_reply_to = "given@example.org";
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[0], "In-Reply-To", "<given@example.org>");
	series_free(s);

	/* v1 starts a thread whatever the setting. */
	o.in_reply_to = NULL;
	o.threading = SERIES_THREAD_SHALLOW;
	o.revision = 1;
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[0], "In-Reply-To", NULL);
	series_free(s);
	strlist_release(&prev);
	gitrepo_range_free(r);
}

static void test_message_ids(void **state)
{
	struct gitrepo_range *r = fake_range(3, HEAD1, "v2");
	struct gitrepo_range *r2 = fake_range(3, HEAD2, "v2");
	struct series_opts o;
	struct series *s, *s2;
	struct msgid_parsed p;
	size_t i;
	char want[256];

	opts_base(&o);
	o.revision = 4;
	assert_int_equal(series_build(&s, r, &o), 0);
	for (i = 0; i < s->nr; i++) {
		assert_int_equal(msgid_parse(&p, s->mails[i].msgid,
					     strlen(s->mails[i].msgid)),
				 0);
		assert_string_equal(p.project, "group/proj");
		assert_int_equal(p.iid, 7);
		assert_int_equal(p.revision, 4);
		assert_int_equal(p.index, i);
		assert_int_equal(p.total, 3);
		snprintf(want, sizeof(want), "<%s>", s->mails[i].msgid);
		assert_header(&s->mails[i], "Message-ID", want);
	}
	/* A force-push to the same revision number: new ids. */
	assert_int_equal(series_build(&s2, r2, &o), 0);
	for (i = 0; i < s->nr; i++)
		assert_string_not_equal(s->mails[i].msgid, s2->mails[i].msgid);
	series_free(s2);
	/* The same revision again: the same bytes. */
	assert_int_equal(series_build(&s2, r, &o), 0);
	for (i = 0; i < s->nr; i++) {
		assert_int_equal(s->mails[i].text.len, s2->mails[i].text.len);
		assert_memory_equal(s->mails[i].text.data,
				    s2->mails[i].text.data,
				    s->mails[i].text.len);
	}
	series_free(s2);
	series_free(s);
	gitrepo_range_free(r);
	gitrepo_range_free(r2);
}

static void test_recipients(void **state)
{
	struct gitrepo_range *r = fake_range(2, HEAD1, "v2");
	struct strlist to = STRLIST_INIT, cc = STRLIST_INIT;
	struct series_opts o;
	struct series *s;

	strlist_push(&to, "The List <list@lists.example.org>");
	strlist_push(&cc, "a@example.org");
	strlist_push(&cc, "Someone Else <A@EXAMPLE.ORG>");
	strlist_push(&cc, "LIST@lists.example.org");
	strlist_push(&cc, "\"Doe, Jr.\" <b@example.org>");
	strlist_push(&cc, "<b@Example.org>");
	strlist_push(&cc, "Zo\xc3\xab <z@example.org>");
	opts_base(&o);
	o.to = &to;
	o.cc = &cc;
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[1], "To", "The List <list@lists.example.org>");
	assert_header(&s->mails[1], "Cc",
		      "a@example.org, \"Doe, Jr.\" <b@example.org>, "
		      "=?UTF-8?q?Zo=C3=AB?= <z@example.org>");
	series_free(s);

	strlist_push(&cc, "broken <address");
	assert_int_equal(series_build(&s, r, &o), PB_EINVAL);
	strlist_release(&to);
	strlist_release(&cc);
	gitrepo_range_free(r);
}

static void test_from_and_inbody(void **state)
{
	struct gitrepo_range *r = fake_range(2, HEAD1, "v2");
	struct series_opts o;
	struct series *s;
	char want[1024];

	opts_base(&o);
	o.bridge_name = "GitLab Bridge";
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[1], "From",
		      "Ada Lovelace via GitLab Bridge "
		      "<bridge@bridge.example.org>");
	/* git am takes the author from the in-body lines. */
	snprintf(want, sizeof(want),
		 "From: Ada Lovelace <ada@example.org>\n"
		 "Date: Tue, 14 Nov 2023 23:13:20 +0100\n"
		 "\n"
		 "---\n f | 1 +\n 1 file changed, 1 insertion(+)\n\n"
		 "diff --git a/f b/f\nindex 1111111..2222222 100644\n"
		 "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n x\n+v2 1\n"
		 "-- \npatchbridge %s\n",
		 pb_version());
	assert_string_equal(body(&s->mails[1]), want);
	assert_header(&s->mails[2], "From",
		      "=?UTF-8?q?Zo=C3=AB_=C3=87elik_via_GitLab_Bridge?= "
		      "<bridge@bridge.example.org>");
	assert_non_null(strstr(body(&s->mails[2]),
			       "From: Zo\xc3\xab \xc3\x87"
			       "elik "
			       "<zoe@example.org>\n"
			       "Date: Tue, 14 Nov 2023 23:14:20 +0100\n\n"
			       "Some body text.\n---\n"));
	series_free(s);

	/* The author's own address: no in-body From. */
	o.from_mode = SERIES_FROM_AUTHOR;
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[1], "From", "Ada Lovelace <ada@example.org>");
	assert_int_equal(strncmp(body(&s->mails[1]), "Date: ", 6), 0);
	series_free(s);

	/* Mail date equal to the author date: no in-body Date either. */
	o.date = r->commits[0].author.time - 1;
	o.date_tz = 60;
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_int_equal(strncmp(body(&s->mails[1]), "---\n", 4), 0);
	series_free(s);

	/* An unusable author address falls back to the bridge's. */
	free(r->commits[0].author.email);
	r->commits[0].author.email = xstrdup("not an address");
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[1], "From",
		      "Ada Lovelace via GitLab Bridge "
		      "<bridge@bridge.example.org>");
	assert_int_equal(strncmp(body(&s->mails[1]),
				 "From: Ada Lovelace <not an address>\n", 36),
			 0);
	series_free(s);
	gitrepo_range_free(r);
}

static void test_dates(void **state)
{
	struct gitrepo_range *r = fake_range(2, HEAD1, "v2");
	struct series_opts o;
	struct series *s;

	opts_base(&o);
	assert_int_equal(series_build(&s, r, &o), 0);
	/* Mail k is dated one second after mail k-1. */
	assert_header(&s->mails[0], "Date", "Tue, 14 Nov 2023 23:13:20 +0000");
	assert_header(&s->mails[1], "Date", "Tue, 14 Nov 2023 23:13:21 +0000");
	assert_header(&s->mails[2], "Date", "Tue, 14 Nov 2023 23:13:22 +0000");
	series_free(s);
	gitrepo_range_free(r);
}

static void test_cover_only(void **state)
{
	struct gitrepo_range *r = fake_range(5, HEAD1, "v2");
	struct series_opts o;
	struct series *s;
	const char *b;

	opts_base(&o);
	o.max_series = 3;
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_int_equal(s->nr, 1);
	assert_int_equal(s->cover_only, 1);
	assert_header(&s->mails[0], "Subject", "[PATCH 0/5] A title");
	b = body(&s->mails[0]);
	assert_non_null(strstr(b, "This revision has 5 patches, more than the "
				  "3 mailed to the list"));
	assert_non_null(strstr(b,
			       "  git fetch https://gitlab.example.org/"
			       "group/proj.git refs/merge-requests/7/head\n"));
	series_free(s);
	gitrepo_range_free(r);
}

static void test_untrusted_title(void **state)
{
	struct gitrepo_range *r = fake_range(2, HEAD1, "v2");
	struct series_opts o;
	struct series *s;

	opts_base(&o);
	o.title = "Evil\r\nBcc: victim@example.org\r\n\r\nbody";
	o.description = "Line\rone\x1b[2J\n\nFrom me: hello";
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_header(&s->mails[0], "Subject",
		      "[PATCH 0/2] Evil Bcc: victim@example.org body");
	assert_header(&s->mails[0], "Bcc", NULL);
	/* "From " at a line start makes the body quoted-printable. */
	assert_header(&s->mails[0], "Content-Transfer-Encoding",
		      "quoted-printable");
	/* Controls gone, CR a line break, the paragraph re-wrapped. */
	assert_non_null(strstr(body(&s->mails[0]), "Line one[2J\n\n=46rom me"));
	series_free(s);
	gitrepo_range_free(r);
}

static void test_changes(void **state)
{
	struct gitrepo_range *v1 = fake_range(3, HEAD1, "v1");
	struct gitrepo_range *v2 = fake_range(3, HEAD2, "v2");
	struct series_opts o;
	struct series *s;
	const char *b;

	/* Patch 1 unchanged (same patch-id and message), patch 2 modified
	 * (same title), patch 3 new; v1's patch 3 dropped. */
	strcpy(v1->commits[0].patch_id, v2->commits[0].patch_id);
	buf_reset(&v1->commits[0].patch);
	buf_addbuf(&v1->commits[0].patch, &v2->commits[0].patch);
	free(v2->commits[2].subject);
	v2->commits[2].subject = xstrdup("a new patch");
	opts_base(&o);
	o.revision = 2;
	o.prev_range = v1;
	assert_int_equal(series_build(&s, v2, &o), 0);
	b = body(&s->mails[0]);
	assert_non_null(strstr(b, "Changes in v2:\n"
				  "- 1/3 \"patch 1\": unchanged\n"
				  "- 2/3 \"patch 2\": modified\n"
				  "- v1 3/3 \"patch 3\": dropped\n"
				  "- 3/3 \"a new patch\": new\n"
				  "\nRange-diff against v1:\n"));
	assert_non_null(strstr(b, "1:  0000000 = 1:  0000000 patch 1\n"));
	assert_non_null(strstr(b, "2:  0000000 ! 2:  0000000 patch 2\n"));
	assert_non_null(strstr(b, "    -+v1 2\n    ++v2 2\n"));
	assert_non_null(strstr(b, "3:  0000000 < -:  ------- patch 3\n"));
	assert_non_null(strstr(b, "-:  ------- > 3:  0000000 a new patch\n"));
	series_free(s);

	/* v2 without the previous revision says so. */
	o.prev_range = NULL;
	assert_int_equal(series_build(&s, v2, &o), 0);
	assert_non_null(strstr(body(&s->mails[0]),
			       "Changes in v2:\n- v1 is not available"));
	series_free(s);
	gitrepo_range_free(v1);
	gitrepo_range_free(v2);
}

static void test_bad_options(void **state)
{
	struct gitrepo_range *r = fake_range(2, HEAD1, "v2");
	struct series_opts o;
	struct series *s = NULL;

	opts_base(&o);
	o.msgid_domain = "not a domain";
	assert_int_equal(series_build(&s, r, &o), PB_EINVAL);
	assert_null(s);
	opts_base(&o);
	o.iid = 0;
	assert_int_equal(series_build(&s, r, &o), PB_EINVAL);
	opts_base(&o);
	o.cover_template = "{{nonsense}}\n";
	o.cover_template_len = strlen(o.cover_template);
	assert_int_equal(series_build(&s, r, &o), PB_EINVAL);
	r->nr = 0;
	opts_base(&o);
	assert_int_equal(series_build(&s, r, &o), PB_EINVAL);
	r->nr = 2;
	gitrepo_range_free(r);
}

static void test_mbox(void **state)
{
	struct gitrepo_range *r = fake_range(1, HEAD1, "v2");
	struct series_opts o;
	struct series *s;
	struct buf b = BUF_INIT(1 << 20);

	opts_base(&o);
	assert_int_equal(series_build(&s, r, &o), 0);
	assert_int_equal(series_mbox_append(&b, &s->mails[0]), 0);
	assert_int_equal(
		strncmp(b.data,
			"From 0000000000000000000000000000000000000001 "
			"Mon Sep 17 00:00:00 2001\nFrom: ",
			63),
		0);
	assert_string_equal(b.data + b.len - 2, "\n\n");
	series_free(s);
	buf_release(&b);
	gitrepo_range_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_subjects),
		cmocka_unit_test(test_single_patch),
		cmocka_unit_test(test_threading),
		cmocka_unit_test(test_message_ids),
		cmocka_unit_test(test_recipients),
		cmocka_unit_test(test_from_and_inbody),
		cmocka_unit_test(test_dates),
		cmocka_unit_test(test_cover_only),
		cmocka_unit_test(test_untrusted_title),
		cmocka_unit_test(test_changes),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_mbox),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
