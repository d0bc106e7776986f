#include "cmd/cmd_format.h"

#include "cmd/env.h"

#include "core/msgid.h"
#include "core/secret.h"
#include "mail/patatt.h"
#include "outbound/gitrepo.h"
#include "outbound/mailhdr.h"
#include "outbound/mrjson.h"
#include "outbound/patchahead.h"
#include "outbound/series.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/scan.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

enum {
	OPT_REPO = 256,
	OPT_BASE,
	OPT_HEAD,
	OPT_VERSION,
	OPT_MR_JSON,
	OPT_RANGE_DIFF,
	OPT_PREV_VERSION,
	OPT_IN_REPLY_TO,
	OPT_TO,
	OPT_CC,
	OPT_PROJECT,
	OPT_IID,
	OPT_BRIDGE_NAME,
	OPT_BRIDGE_ADDRESS,
	OPT_FROM_AUTHOR,
	OPT_DOMAIN,
	OPT_COVER,
	OPT_MAX_SERIES,
	OPT_TEMPLATE,
	OPT_DATE,
	OPT_ATTEST_KEY,
	OPT_ATTEST_SELECTOR,
};

static const struct option long_opts[] = {
	{ "repo", required_argument, NULL, OPT_REPO },
	{ "base", required_argument, NULL, OPT_BASE },
	{ "head", required_argument, NULL, OPT_HEAD },
	{ "version", required_argument, NULL, OPT_VERSION },
	{ "mr-json", required_argument, NULL, OPT_MR_JSON },
	{ "range-diff", required_argument, NULL, OPT_RANGE_DIFF },
	{ "prev-version", required_argument, NULL, OPT_PREV_VERSION },
	{ "in-reply-to", required_argument, NULL, OPT_IN_REPLY_TO },
	{ "to", required_argument, NULL, OPT_TO },
	{ "cc", required_argument, NULL, OPT_CC },
	{ "project", required_argument, NULL, OPT_PROJECT },
	{ "iid", required_argument, NULL, OPT_IID },
	{ "bridge-name", required_argument, NULL, OPT_BRIDGE_NAME },
	{ "bridge-address", required_argument, NULL, OPT_BRIDGE_ADDRESS },
	{ "from-author", no_argument, NULL, OPT_FROM_AUTHOR },
	{ "domain", required_argument, NULL, OPT_DOMAIN },
	{ "cover-letter", no_argument, NULL, OPT_COVER },
	{ "max-series", required_argument, NULL, OPT_MAX_SERIES },
	{ "template", required_argument, NULL, OPT_TEMPLATE },
	{ "date", required_argument, NULL, OPT_DATE },
	{ "attest-key", required_argument, NULL, OPT_ATTEST_KEY },
	{ "attest-selector", required_argument, NULL, OPT_ATTEST_SELECTOR },
	{ "jobs", required_argument, NULL, 'j' },
	{ "output", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct format_args {
	const char *repo, *base, *head, *mr_json, *range_diff, *in_reply_to;
	const char *project, *bridge_name, *bridge_address, *domain;
	const char *template_path, *output;
	const char *attest_key, *attest_selector;
	uint64_t version, prev_version, iid, max_series, jobs;
	int64_t date;
	int have_date, from_author, cover;
	struct strlist to, cc;
};

static int usage_error(const char *what)
{
	fprintf(stderr,
		"patchbridge format: %s\n"
		"usage: patchbridge format %s\n"
		"Try \"patchbridge format --help\".\n",
		what, cmd_format_synopsis);
	return EX_USAGE;
}

static int parse_num(uint64_t *out, const char *s, uint64_t min, uint64_t max)
{
	return mem_to_u64(s, strlen(s), max, out) && *out >= min;
}

static int parse_args(struct format_args *a, int argc, char **argv)
{
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "j:o:h", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_REPO:
			a->repo = optarg;
			break;
		case OPT_BASE:
			a->base = optarg;
			break;
		case OPT_HEAD:
			a->head = optarg;
			break;
		case OPT_VERSION:
			if (!parse_num(&a->version, optarg, 1, MSGID_NUM_MAX))
				return usage_error("--version: 1-9999");
			break;
		case OPT_PREV_VERSION:
			if (!parse_num(&a->prev_version, optarg, 1,
				       MSGID_NUM_MAX))
				return usage_error("--prev-version: 1-9999");
			break;
		case OPT_MR_JSON:
			a->mr_json = optarg;
			break;
		case OPT_RANGE_DIFF:
			a->range_diff = optarg;
			break;
		case OPT_IN_REPLY_TO:
			a->in_reply_to = optarg;
			break;
		case OPT_TO:
			strlist_push(&a->to, optarg);
			break;
		case OPT_CC:
			strlist_push(&a->cc, optarg);
			break;
		case OPT_PROJECT:
			a->project = optarg;
			break;
		case OPT_IID:
			if (!parse_num(&a->iid, optarg, 1, UINT32_MAX))
				return usage_error("--iid: a positive number");
			break;
		case OPT_BRIDGE_NAME:
			a->bridge_name = optarg;
			break;
		case OPT_BRIDGE_ADDRESS:
			a->bridge_address = optarg;
			break;
		case OPT_FROM_AUTHOR:
			a->from_author = 1;
			break;
		case OPT_DOMAIN:
			a->domain = optarg;
			break;
		case OPT_COVER:
			a->cover = 1;
			break;
		case OPT_MAX_SERIES:
			if (!parse_num(&a->max_series, optarg, 1,
				       MSGID_NUM_MAX))
				return usage_error("--max-series: 1-9999");
			break;
		case OPT_TEMPLATE:
			a->template_path = optarg;
			break;
		case OPT_DATE:
			if (!mem_to_i64(optarg, strlen(optarg), 0,
					(int64_t)1 << 40, &a->date))
				return usage_error("--date: Unix seconds");
			a->have_date = 1;
			break;
		case OPT_ATTEST_KEY:
			a->attest_key = optarg;
			break;
		case OPT_ATTEST_SELECTOR:
			a->attest_selector = optarg;
			break;
		case 'j':
			if (!parse_num(&a->jobs, optarg, 1,
				       PATCHAHEAD_JOBS_MAX))
				return usage_error("--jobs: 1-8");
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'h':
			printf("usage: patchbridge format %s\n\n%s\n\n%s",
			       cmd_format_synopsis, cmd_format_summary,
			       cmd_format_help);
			return -1;
		default:
			return usage_error("unknown option");
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument");
	if (!a->repo || !a->base || !a->head)
		return usage_error("--repo, --base and --head are required");
	if (a->attest_selector && !a->attest_key)
		return usage_error("--attest-selector needs --attest-key");
	return 0;
}

/* A project name from the repository directory: ".../linux.git" ->
 * "linux". */
static char *project_from_repo(const char *dir)
{
	char *real = realpath(dir, NULL), *res;
	const char *repo = real ? real : dir;
	const char *p = repo + strlen(repo), *end;

	while (p > repo && p[-1] == '/')
		p--;
	end = p;
	while (p > repo && p[-1] != '/')
		p--;
	if (end - p > 4 && !memcmp(end - 4, ".git", 4))
		end -= 4;
	if (end > p && !(end - p == 4 && !memcmp(p, ".git", 4)) &&
	    !(end - p == 1 && *p == '.'))
		res = xstrndup(p, (size_t)(end - p));
	else
		res = xstrdup("local");
	free(real);
	return res;
}

/*
 * Each mail written as it is made (series_build_each()); without a
 * range-diff, each commit's patch rendered ahead of its mail on a few
 * threads (patchahead.h) and released after it.
 */
struct writer {
	int fd;
	struct buf b;
	struct patchahead *ahead; /* deferred patches, or NULL */
	const struct series_attest *attest; /* NULL: mails unsigned */
	struct buf signed_; /* the mail signed, when attest */
};

static int patch_before(void *arg, size_t i)
{
	struct writer *w = arg;

	return w->ahead ? patchahead_get(w->ahead, i) : 0;
}

static int write_mail(void *arg, const struct series_mail *m)
{
	struct writer *w = arg;
	int rc;

	if (w->ahead && m->index > 0)
		patchahead_put(w->ahead, m->index - 1);
	buf_reset(&w->b);
	if (w->attest) {
		struct series_mail sm = *m;

		buf_reset(&w->signed_);
		rc = series_attest_text(&w->signed_, m->text.data, m->text.len,
					m->date, w->attest);
		if (rc)
			return rc;
		sm.text = w->signed_;
		rc = series_mbox_append(&w->b, &sm);
	} else {
		rc = series_mbox_append(&w->b, m);
	}
	if (!rc)
		rc = fd_write_all(w->fd, w->b.data, w->b.len);
	return rc;
}

static int run(struct format_args *a)
{
	struct gitrepo *repo = NULL;
	struct gitrepo_range *range = NULL, *prev = NULL;
	struct series *s = NULL;
	struct series_opts o;
	struct mrjson mr;
	struct buf tmpl = BUF_INIT(PB_TEMPLATE_MAX);
	struct writer w = { 1, BUF_INIT(0), NULL, NULL, BUF_INIT(0) };
	struct series_attest attest;
	struct patatt_key *key = NULL;
	struct series_sink sink = { patch_before, write_mail, &w };
	char *project = NULL, *domain = NULL, *prev_base = NULL, *irt = NULL;
	const char *dots;
	int rc;

	memset(&mr, 0, sizeof(mr));
	series_opts_init(&o);
	if (a->mr_json) {
		rc = mrjson_read(&mr, a->mr_json);
		if (rc)
			goto out;
	}
	if (a->template_path) {
		rc = file_read(&tmpl, a->template_path);
		if (rc)
			goto out;
		o.cover_template = tmpl.data;
		o.cover_template_len = tmpl.len;
	}
	rc = gitrepo_open(&repo, a->repo);
	if (rc)
		goto out;
	/* A range-diff needs every patch at once; otherwise one at a
	 * time. */
	rc = (a->range_diff ? gitrepo_range_load : gitrepo_range_load_deferred)(
		&range, repo, a->base, a->head,
		a->max_series ? a->max_series : PB_SERIES_MAX_DEFAULT);
	if (rc)
		goto out;
	if (a->range_diff) {
		dots = strstr(a->range_diff, "..");
		if (!dots) {
			rc = err_set(PB_EINVAL, "--range-diff: want A..B");
			goto out;
		}
		prev_base =
			xstrndup(a->range_diff, (size_t)(dots - a->range_diff));
		rc = gitrepo_range_load(&prev, repo, prev_base, dots + 2,
					PB_SERIES_MAX_DEFAULT);
		if (rc)
			goto out;
	}

	if (a->project)
		project = xstrdup(a->project);
	else if (mr.project)
		project = xstrdup(mr.project);
	else
		project = project_from_repo(a->repo);
	o.project = project;
	o.iid = a->iid ? a->iid : mr.iid ? mr.iid : 1;
	o.revision = a->version ? (unsigned)a->version : 1;
	o.prev_revision = (unsigned)a->prev_version;
	o.title = mr.title;
	o.description = mr.description;
	o.url = mr.web_url;
	o.author_name = mr.author_name;
	o.author_username = mr.author_username;
	o.source_branch = mr.source_branch;
	o.target_branch = mr.target_branch;
	if (a->bridge_name)
		o.bridge_name = a->bridge_name;
	o.bridge_address = a->bridge_address ?
				   a->bridge_address :
				   "patchbridge@patchbridge.invalid";
	if (a->domain) {
		o.msgid_domain = a->domain;
	} else {
		const char *at = strrchr(o.bridge_address, '@');

		domain = xstrdup(at ? at + 1 : "");
		o.msgid_domain = domain;
	}
	o.from_mode = a->from_author ? SERIES_FROM_AUTHOR : SERIES_FROM_BRIDGE;
	o.to = &a->to;
	o.cc = &a->cc;
	if (a->in_reply_to) {
		const char *id = a->in_reply_to;
		size_t len = strlen(id);

		/* Accept "<id>" as well as "id". */
		if (len >= 2 && id[0] == '<' && id[len - 1] == '>')
			irt = xstrndup(id + 1, len - 2);
		else
			irt = xstrdup(id);
		o.in_reply_to = irt;
	}
	o.cover_single = a->cover;
	if (a->max_series)
		o.max_series = a->max_series;
	if (a->have_date) {
		o.date = a->date;
		o.date_tz = 0;
	} else {
		/* The head commit's committer date: fixed for a given head,
		 * so formatting twice gives the same bytes. */
		o.date = range->head_committer.time;
		o.date_tz = range->head_committer.tz_minutes;
	}
	o.prev_range = prev;
	if (a->attest_key) {
		struct buf text = BUF_INIT(SECRET_MAX + 1);

		/* the key file under the token's rules (core/secret.h) */
		rc = secret_read(&text, a->attest_key, 0);
		if (!rc)
			rc = patatt_key_new(&key, text.data, text.len);
		secret_wipe(&text);
		if (rc) {
			err_prefix(rc, "--attest-key %s", a->attest_key);
			goto out;
		}
		attest.key = key;
		attest.identity = o.bridge_address;
		attest.selector = a->attest_selector;
		w.attest = &attest;
		buf_init(&w.signed_, SERIES_MAIL_MAX + 1024);
	}

	/* One mail in memory at a time, as git format-patch: the series'
	 * mails are written as they are made. */
	buf_init(&w.b, SERIES_MAIL_MAX + 1024);
	if (!a->range_diff && range->have_patches) {
		rc = patchahead_start(&w.ahead, repo, a->repo, range,
				      (unsigned)a->jobs);
		if (rc)
			goto out;
	}
	/* The cover letter's, while the first patches are made. */
	rc = gitrepo_range_diffstat(repo, range);
	if (rc)
		goto out;
	if (a->output && strcmp(a->output, "-")) {
		struct file_atomic f;

		/* As export: never through a link planted in a shared
		 * directory, and no half-written mbox. */
		rc = file_output_open(&f, a->output, 0644);
		if (rc)
			goto out;
		w.fd = f.fd;
		rc = series_build_each(&s, range, &o, &sink);
		if (rc)
			file_atomic_abort(&f);
		else
			rc = file_atomic_commit(&f);
	} else {
		w.fd = 1;
		rc = series_build_each(&s, range, &o, &sink);
	}
out:
	patchahead_free(w.ahead);
	buf_release(&w.b);
	buf_release(&w.signed_);
	patatt_key_free(key);
	free(irt);
	series_free(s);
	gitrepo_range_free(range);
	gitrepo_range_free(prev);
	gitrepo_free(repo);
	mrjson_release(&mr);
	buf_release(&tmpl);
	free(project);
	free(domain);
	free(prev_base);
	return rc;
}

int cmd_format(int argc, char **argv)
{
	struct format_args a;
	int rc;

	memset(&a, 0, sizeof(a));
	strlist_init(&a.to);
	strlist_init(&a.cc);
	rc = parse_args(&a, argc, argv);
	if (rc == 0) {
		rc = run(&a);
		if (rc)
			fprintf(stderr, "patchbridge format: %s\n", err_msg());
		rc = env_exit_code(rc);
	} else if (rc < 0) {
		rc = EX_OK; /* --help */
	}
	strlist_release(&a.to);
	strlist_release(&a.cc);
	return rc;
}
