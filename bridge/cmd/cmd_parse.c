#include "cmd/cmd_parse.h"
#include "core/config.h"
#include "mail/diff.h"
#include "mail/mail.h"
#include "mail/mbox.h"
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

const char cmd_parse_synopsis[] = "[OPTION...] FILE... | --mbox FILE";
const char cmd_parse_summary[] = "mail as JSON: what the inbound side "
				 "understands";
const char cmd_parse_help[] =
	"Parses each mail as the milter would (MIME, charsets, quotes,\n"
	"trailers, NAK, inline comments) and prints what it understood as\n"
	"JSON: message_id, in_reply_to, from, subject, kind, target,\n"
	"trailers, own_trailers, nak, inline, comment, auth.  The format is\n"
	"a stable interface (see DESIGN.md).\n"
	"\n"
	"One FILE prints one indented object.  Several FILEs, or --mbox,\n"
	"print JSON Lines: one compact object per mail and line, in order,\n"
	"starting with \"file\" (and \"index\", the mail's number in the\n"
	"mbox from 1); a mail that cannot be read or parsed gets a line\n"
	"with \"error\" instead, and the others go on.  One process parses\n"
	"them all, which is much faster than one process per mail.\n"
	"\n"
	"  --mbox FILE          every mail of an mbox (mboxrd, as export,\n"
	"                       public-inbox and b4 write it; \"-\": standard\n"
	"                       input)\n"
	"  --jsonl              JSON Lines even for one FILE\n"
	"  --patch PARENT.eml   the patch mail the replies answer: inline\n"
	"                       comments are placed on its diff, so trimmed\n"
	"                       quotes still land on the right line\n"
	"  --thread PATH        other mails of the thread (a file, or a\n"
	"                       directory of *.eml; repeatable): numbered\n"
	"                       patches that answer a mail make it the\n"
	"                       cover letter even without 0/N in its subject\n"
	"\n"
	"Authentication-Results fields are judged as the milter and the\n"
	"daemon judge them, with the configuration's [milter]\n"
	"trusted_authserv_id and trusted_authres_fields: read FILE as the mail\n"
	"the milter received (its header as Postfix passes it), or give a\n"
	"spool record, which holds exactly that.  The configuration is the\n"
	"one -c or $PATCHBRIDGE_CONFIG names, else the default file when it\n"
	"exists; without one no field is trusted.  Offline there is no\n"
	"thread map: target is null.  Exit status: 0, or 66 (EX_NOINPUT)\n"
	"when a file could not be read, 65 (EX_DATAERR) when a mail did not\n"
	"parse (with JSON Lines, after every other mail), 78 (EX_CONFIG)\n"
	"when the configuration does not load.\n";

/* What one run prints to, and the first failure's exit status. */
struct parse_run {
	const struct diff *parent;
	struct review_options ro; /* the --thread mails, the trust rules */
	int lines; /* JSON Lines */
	int ex;
	struct buf json;
};

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

static void failed(struct parse_run *run, int ex)
{
	if (!run->ex)
		run->ex = ex;
}

/* Print what one mail says, or its error line. */
static void emit(struct parse_run *run, const char *file, size_t index,
		 const char *raw, size_t len)
{
	struct review *r = NULL;
	int rc;

	buf_reset(&run->json);
	if (review_parse(&r, raw, len, run->parent, &run->ro)) {
		if (index)
			fprintf(stderr, "patchbridge parse: %s: mail %zu: %s\n",
				file, index, err_msg());
		else
			fprintf(stderr, "patchbridge parse: %s: %s\n", file,
				err_msg());
		failed(run, EX_DATAERR);
		if (!run->lines)
			return;
		rc = review_error_line(&run->json, file, index, err_msg());
	} else if (run->lines) {
		rc = review_to_json_line(&run->json, r, file, index);
	} else {
		rc = review_to_json(&run->json, r);
	}
	review_free(r);
	if (rc) {
		fprintf(stderr, "patchbridge parse: %s: %s\n", file, err_msg());
		failed(run, EX_SOFTWARE);
		return;
	}
	if (fwrite(run->json.data, 1, run->json.len, stdout) != run->json.len)
		failed(run, EX_IOERR);
}

static void unreadable(struct parse_run *run, const char *file, int ex)
{
	buf_reset(&run->json);
	failed(run, ex);
	if (run->lines && !review_error_line(&run->json, file, 0, err_msg()))
		fwrite(run->json.data, 1, run->json.len, stdout);
}

static void parse_files(struct parse_run *run, char **files, int n)
{
	struct buf raw = BUF_INIT(PB_MAIL_MAX_DEFAULT);
	int i, ex;

	for (i = 0; i < n; i++) {
		buf_reset(&raw);
		ex = read_mail(&raw, files[i]);
		if (ex)
			unreadable(run, files[i], ex);
		else
			emit(run, files[i], 0, raw.data, raw.len);
	}
	buf_release(&raw);
}

static void parse_mbox(struct parse_run *run, const char *file)
{
	struct buf raw = BUF_INIT(PB_MAIL_MAX_DEFAULT);
	struct mbox *mb = NULL;
	int rc, oversize;

	rc = mbox_open(&mb, file);
	if (rc) {
		fprintf(stderr, "patchbridge parse: %s\n", err_msg());
		unreadable(run, file, EX_NOINPUT);
		goto out;
	}
	while (!(rc = mbox_next(mb, &raw, &oversize))) {
		if (!oversize) {
			emit(run, file, mbox_index(mb), raw.data, raw.len);
			continue;
		}
		err_set(PB_ELIMIT, "the mail is larger than %d bytes",
			PB_MAIL_MAX_DEFAULT);
		fprintf(stderr, "patchbridge parse: %s: mail %zu: %s\n", file,
			mbox_index(mb), err_msg());
		failed(run, EX_DATAERR);
		buf_reset(&run->json);
		if (!review_error_line(&run->json, file, mbox_index(mb),
				       err_msg()))
			fwrite(run->json.data, 1, run->json.len, stdout);
	}
	if (rc != PB_ENOTFOUND) {
		fprintf(stderr, "patchbridge parse: %s\n", err_msg());
		unreadable(run, file,
			   rc == PB_EINVAL ? EX_DATAERR : EX_NOINPUT);
	}
out:
	mbox_free(mb);
	buf_release(&raw);
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
	const char *patch = NULL, *mbox = NULL;
	struct config *cfg = NULL;
	struct buf praw = BUF_INIT(PB_MAIL_MAX_DEFAULT);
	struct diff *parent = NULL;
	struct parse_run run;
	struct thread thread = { NULL, 0, 0, STRLIST_INIT };
	struct strlist thread_paths = STRLIST_INIT;
	char **files;
	size_t k;
	int i, nfiles = 0, rc, jsonl = 0, ex = 0;

	/* The FILE arguments, in order, are collected in argv[1..]: a slot
	 * is reused only after it was read. */
	files = argv + 1;
	for (i = 1; i < argc && !ex; i++) {
		if ((!strcmp(argv[i], "--patch") ||
		     !strcmp(argv[i], "--mbox") ||
		     !strcmp(argv[i], "--thread")) &&
		    i + 1 == argc) {
			ex = usage_error(argv[i][2] == 't' ?
						 "a path must follow " :
						 "a file name must follow ",
					 argv[i]);
		} else if (!strcmp(argv[i], "--thread")) {
			strlist_push(&thread_paths, argv[++i]);
		} else if (!strncmp(argv[i], "--thread=", 9)) {
			strlist_push(&thread_paths, argv[i] + 9);
		} else if (!strcmp(argv[i], "--patch")) {
			patch = argv[++i];
		} else if (!strcmp(argv[i], "--mbox")) {
			if (mbox)
				ex = usage_error("more than one --mbox", "");
			mbox = argv[++i];
		} else if (!strncmp(argv[i], "--patch=", 8)) {
			patch = argv[i] + 8;
		} else if (!strncmp(argv[i], "--mbox=", 7)) {
			if (mbox)
				ex = usage_error("more than one --mbox", "");
			mbox = argv[i] + 7;
		} else if (!strcmp(argv[i], "--jsonl")) {
			jsonl = 1;
		} else if (!strcmp(argv[i], "--")) {
			while (++i < argc)
				files[nfiles++] = argv[i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			ex = usage_error("unknown option: ", argv[i]);
		} else {
			files[nfiles++] = argv[i];
		}
	}
	if (!ex && mbox && nfiles)
		ex = usage_error("--mbox and FILE arguments do not go "
				 "together: ",
				 files[0]);
	if (!ex && !mbox && !nfiles)
		ex = usage_error("no mail given", "");
	if (!ex) {
		memset(&run, 0, sizeof(run));
		ex = load_options(&run.ro, &cfg, config_path);
	}
	if (ex) {
		strlist_release(&thread_paths);
		config_free(cfg);
		return ex;
	}

	buf_init(&run.json, REVIEW_JSON_MAX);
	run.lines = jsonl || mbox || nfiles > 1;
	mail_init();
	if (patch) {
		run.ex = read_mail(&praw, patch);
		if (run.ex)
			goto out;
		rc = review_patch_diff(&parent, praw.data, praw.len);
		if (rc) {
			fprintf(stderr, "patchbridge parse: %s: %s\n", patch,
				err_msg());
			run.ex = EX_DATAERR;
			goto out;
		}
		run.parent = parent;
	}
	for (k = 0; k < thread_paths.nr; k++)
		thread_add(&thread, thread_paths.items[k]);
	run.ro.thread = thread.v;
	run.ro.nr_thread = thread.nr;
	if (mbox)
		parse_mbox(&run, mbox);
	else
		parse_files(&run, files, nfiles);
out:
	free(thread.v);
	strlist_release(&thread.ids);
	strlist_release(&thread_paths);
	diff_free(parent);
	buf_release(&praw);
	buf_release(&run.json);
	mail_shutdown();
	config_free(cfg);
	return run.ex;
}
