#include "cmd/cmd_parse.h"
#include "core/config.h"
#include "mail/diff.h"
#include "mail/mail.h"
#include "mail/review.h"
#include "state/spool.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>

/* Mails read for --thread, at most. */
#define PARSE_THREAD_MAX 1000

const char cmd_parse_synopsis[] = "[OPTION] FILE";
const char cmd_parse_summary[] = "one mail as JSON: what the inbound side "
				 "understands";
const char cmd_parse_help[] =
	"Parses FILE (one mail) as the milter would (MIME, charsets, quotes,\n"
	"trailers, NAK, inline comments) and prints one JSON object:\n"
	"message_id, in_reply_to, from, subject, kind, target, trailers,\n"
	"own_trailers, nak, inline, comment, auth.  The format is a stable\n"
	"interface (see DESIGN.md).\n"
	"\n"
	"  --patch PARENT.eml   the patch mail the reply answers: inline\n"
	"                       comments are placed on its diff, so trimmed\n"
	"                       quotes still land on the right line\n"
	"  --thread PATH        other mails of the thread (a file, or a\n"
	"                       directory of *.eml; repeatable): numbered\n"
	"                       patches that answer FILE make it the cover\n"
	"                       letter even without 0/N in its subject\n"
	"\n"
	"Authentication-Results fields are judged as the milter and the\n"
	"daemon judge them, with the configuration's [milter]\n"
	"trusted_authserv_id and trusted_authres_fields: read FILE as the mail\n"
	"the milter received (its header as Postfix passes it), or give a\n"
	"spool record, which holds exactly that.  The configuration is the\n"
	"one -c or $PATCHBRIDGE_CONFIG names, else the default file when it\n"
	"exists; without one no field is trusted.  Offline there is no\n"
	"thread map: target is null.\n";

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr,
		"patchbridge parse: %s%s\nusage: patchbridge parse %s\n", what,
		arg, cmd_parse_synopsis);
	return EX_USAGE;
}

/* A spool record holds the mail as the milter received it. */
#define SPOOL_MAGIC "PB-Spool: "

static int read_mail(struct buf *out, const char *path)
{
	struct spool_record rec;
	int rc = file_read(out, path);

	if (!rc && out->len >= strlen(SPOOL_MAGIC) &&
	    !memcmp(out->data, SPOOL_MAGIC, strlen(SPOOL_MAGIC))) {
		spool_record_init(&rec);
		rc = spool_parse(&rec, out->data, out->len);
		if (!rc)
			rc = buf_set(out, rec.message.data, rec.message.len);
		spool_record_release(&rec);
		if (rc == PB_EINVAL)
			rc = PB_ELIMIT; /* a data error, as for a mail */
	}
	if (!rc)
		return 0;
	fprintf(stderr, "patchbridge parse: %s: %s\n", path, err_msg());
	return rc == PB_ELIMIT ? EX_DATAERR : EX_NOINPUT;
}

/* Where thread mails place themselves: their threading headers and the
 * counter of their subjects (review.h struct review_thread_mail). */
struct thread {
	struct review_thread_mail *v;
	size_t nr, alloc;
	struct strlist ids; /* owns the strings v points into */
};

static void thread_add_file(struct thread *t, const char *path)
{
	struct buf raw = BUF_INIT(PB_MAIL_MAX_DEFAULT);

	if (t->nr < PARSE_THREAD_MAX && !file_read(&raw, path)) {
		ALLOC_GROW(t->v, t->nr + 1, t->alloc);
		if (!review_thread_mail_read(&t->v[t->nr], &t->ids, raw.data,
					     raw.len))
			t->nr++;
	}
	buf_release(&raw);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A file, or the *.eml files of a directory (in name order). */
static void thread_add(struct thread *t, const char *path)
{
	struct strlist names = STRLIST_INIT;
	struct dirent *de;
	struct stat st;
	DIR *d;
	size_t i;

	if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
		thread_add_file(t, path);
		return;
	}
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) && names.nr < PARSE_THREAD_MAX) {
		size_t n = strlen(de->d_name);

		if (n > 4 && !strcmp(de->d_name + n - 4, ".eml"))
			strlist_pushf(&names, "%s/%s", path, de->d_name);
	}
	closedir(d);
	qsort(names.items, names.nr, sizeof(*names.items), by_name);
	for (i = 0; i < names.nr; i++)
		thread_add_file(t, names.items[i]);
	strlist_release(&names);
}


/* The milter's rules for Authentication-Results from the configuration. */
static int load_options(struct review_options *ro, struct config **cfg,
			const char *path)
{
	struct strlist errs = STRLIST_INIT;
	size_t i;
	int rc;

	memset(ro, 0, sizeof(*ro));
	if (!path)
		return EX_OK;
	rc = config_load(cfg, &errs, path);
	strlist_for_each (&errs, i)
		fprintf(stderr, "%s\n", errs.items[i]);
	if (rc && !errs.nr)
		fprintf(stderr, "patchbridge parse: %s: %s\n", path, err_msg());
	strlist_release(&errs);
	if (rc)
		return rc == PB_ENOTFOUND ? EX_NOINPUT : EX_CONFIG;
	ro->trusted_authserv_id =
		config_str(*cfg, CFG_MILTER_TRUSTED_AUTHSERV_ID);
	if (!ro->trusted_authserv_id[0])
		ro->trusted_authserv_id = NULL;
	ro->trusted_fields =
		(size_t)config_int(*cfg, CFG_MILTER_TRUSTED_AUTHRES_FIELDS);
	return EX_OK;
}

int cmd_parse(const char *config_path, int argc, char **argv)
{
	const char *file = NULL, *patch = NULL;
	struct review_options ro;
	struct config *cfg = NULL;
	struct buf raw = BUF_INIT(PB_MAIL_MAX_DEFAULT);
	struct buf praw = BUF_INIT(PB_MAIL_MAX_DEFAULT);
	struct buf json = BUF_INIT(REVIEW_JSON_MAX);
	struct diff *parent = NULL;
	struct review *r = NULL;
	struct thread thread = { NULL, 0, 0, STRLIST_INIT };
	struct strlist thread_paths = STRLIST_INIT;
	size_t k;
	int i, rc, ex = EX_OK;

	for (i = 1; i < argc && !ex; i++) {
		if (!strcmp(argv[i], "--thread")) {
			if (i + 1 == argc)
				ex = usage_error("a path must follow ",
						 argv[i]);
			else
				strlist_push(&thread_paths, argv[++i]);
		} else if (!strncmp(argv[i], "--thread=", 9)) {
			strlist_push(&thread_paths, argv[i] + 9);
		} else if (!strcmp(argv[i], "--patch")) {
			if (i + 1 == argc)
				ex = usage_error("a file name must follow ",
						 argv[i]);
			else
				patch = argv[++i];
		} else if (!strncmp(argv[i], "--patch=", 8)) {
			patch = argv[i] + 8;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			ex = usage_error("unknown option: ", argv[i]);
		} else if (file) {
			ex = usage_error("more than one mail: ", argv[i]);
		} else {
			file = argv[i];
		}
	}
	if (!ex && !file)
		ex = usage_error("no mail given", "");
	if (!ex)
		ex = load_options(&ro, &cfg, config_path);
	if (ex)
		goto out;

	mail_init();
	ex = read_mail(&raw, file);
	if (ex)
		goto out;
	if (patch) {
		ex = read_mail(&praw, patch);
		if (ex)
			goto out;
		rc = review_patch_diff(&parent, praw.data, praw.len);
		if (rc) {
			fprintf(stderr, "patchbridge parse: %s: %s\n", patch,
				err_msg());
			ex = EX_DATAERR;
			goto out;
		}
	}
	for (k = 0; k < thread_paths.nr; k++)
		thread_add(&thread, thread_paths.items[k]);
	ro.thread = thread.v;
	ro.nr_thread = thread.nr;
	rc = review_parse(&r, raw.data, raw.len, parent, &ro);
	if (rc) {
		fprintf(stderr, "patchbridge parse: %s: %s\n", file, err_msg());
		ex = EX_DATAERR;
		goto out;
	}
	rc = review_to_json(&json, r);
	if (rc) {
		fprintf(stderr, "patchbridge parse: %s: %s\n", file, err_msg());
		ex = EX_SOFTWARE;
		goto out;
	}
	if (fwrite(json.data, 1, json.len, stdout) != json.len)
		ex = EX_IOERR;
out:
	review_free(r);
	diff_free(parent);
	free(thread.v);
	strlist_release(&thread.ids);
	strlist_release(&thread_paths);
	buf_release(&raw);
	buf_release(&praw);
	buf_release(&json);
	mail_shutdown();
	config_free(cfg);
	return ex;
}
