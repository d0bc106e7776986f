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
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

/* Mails read for --thread, at most. */
#define PARSE_THREAD_MAX 1000
/* Threads for many mails, at most (--jobs, and the default: one per
 * online CPU up to this). */
#define PARSE_JOBS_MAX 64
#define PARSE_JOBS_DEFAULT_MAX 8
/* Mails read ahead per thread, at most (the ring's slots per job). */
#define PARSE_SLOTS_PER_JOB 16
/* Bytes of mail read ahead beyond jobs + 2 mails, at most. */
#define PARSE_INFLIGHT_MAX (32 * 1024 * 1024)
/* A slot's buffer larger than this is given back once printed. */
#define PARSE_SLOT_KEEP (1024 * 1024)

const char cmd_parse_synopsis[] = "[OPTION...] FILE... | --mbox FILE";
const char cmd_parse_summary[] = "mail as JSON: what the inbound side "
				 "understands";
const char cmd_parse_help[] =
	"Parses each mail as the milter would (MIME, charsets, quotes,\n"
	"trailers, NAK, inline comments) and prints what it understood as\n"
	"JSON: message_id, in_reply_to, from, subject, kind, submission,\n"
	"target, trailers, own_trailers, nak, inline, comment, auth.  The\n"
	"format is a stable interface (see DESIGN.md).\n"
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
	"  -j, --jobs N         parse with N threads (JSON Lines; default:\n"
	"                       one per CPU, at most 8); the output is in\n"
	"                       the mails' order whatever N\n"
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

/* The mail at path into out, or a message on standard error (into err
 * when not NULL) and an exit status. */
static int read_mail(struct buf *out, const char *path, struct buf *err)
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
	if (err)
		buf_addf(err, "patchbridge parse: %s: %s\n", path, err_msg());
	else
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

/*
 * Many mails (FILE..., --mbox) are parsed by a few threads at once and
 * printed in their order: the main thread reads each mail into a free
 * slot of a ring, a worker parses it into the slot's JSON line and
 * error text, and the main thread prints finished slots in order and
 * reuses them.  review_parse() is safe to run in threads after
 * mail_init() (the milter does so); everything shared - the --patch
 * diff, the --thread mails, the trust rules - is only read.
 *
 * The ring lets the reader run ahead of the workers by
 * PARSE_SLOTS_PER_JOB mails per worker, so that a long mail holds no
 * worker idle behind it, and the threads wake each other in batches:
 * a worker waits for work only when none is read, and the reader,
 * when the ring is full, sleeps until the mail halfway through it is
 * parsed, then prints all that is done and reads until the ring is
 * full again (a handoff per mail cost up to a tenth of the CPU in
 * futex calls and context switches).  Memory: beyond jobs + 2 mails
 * (each up to PB_MAIL_MAX_DEFAULT and its JSON), the mails read ahead
 * hold PARSE_INFLIGHT_MAX bytes at most, and a slot gives back a
 * buffer larger than PARSE_SLOT_KEEP once it is printed.
 */
enum slot_kind { SLOT_MAIL, SLOT_UNREADABLE, SLOT_OVERSIZE };

struct slot {
	const char *file;
	size_t index; /* in the mbox, from 1; 0: a FILE */
	enum slot_kind kind;
	int read_ex; /* SLOT_UNREADABLE: the exit status */
	char why[PB_ERRMSG_MAX]; /* SLOT_UNREADABLE: err_msg() then */
	struct buf raw;
	struct buf out; /* what goes to standard output */
	struct buf err; /* what goes to standard error */
	int ex; /* this mail's failure, 0 if none */
	int done;
};

struct pipeline {
	struct parse_run *run;
	struct slot *slots;
	size_t nr_slots;
	size_t min_slots; /* read ahead whatever their size: jobs + 2 */
	size_t filled, taken, printed; /* counters of mails, not slots */
	size_t inflight; /* bytes of the mails filled and not printed */
	size_t wake_at; /* the mail the reader waits for; SIZE_MAX: none */
	int idle; /* workers waiting for work */
	int threaded; /* 0: the main thread parses each mail itself */
	int no_more;
	pthread_mutex_t lock;
	pthread_cond_t work; /* a slot was filled, or no_more */
	pthread_cond_t finished; /* mail wake_at is done */
};

static void failed(struct parse_run *run, int ex)
{
	if (!run->ex)
		run->ex = ex;
}

/* Name the mail in an error message: "FILE" or "FILE: mail N". */
static void where(struct buf *b, const struct slot *sl)
{
	buf_addf(b, "patchbridge parse: %s: ", sl->file);
	if (sl->index)
		buf_addf(b, "mail %zu: ", sl->index);
}

/* An error line for JSON Lines, saying why. */
static void error_line(struct parse_run *run, struct slot *sl, const char *why)
{
	if (run->lines && review_error_line(&sl->out, sl->file, sl->index, why))
		buf_reset(&sl->out);
}

/* What one mail says, or its error, into the slot (any thread). */
static void parse_slot(struct parse_run *run, struct slot *sl)
{
	struct review *r = NULL;
	int rc;

	buf_reset(&sl->out);
	sl->ex = 0;
	if (sl->kind == SLOT_UNREADABLE) {
		/* the reader put its message in sl->err already */
		sl->ex = sl->read_ex;
		error_line(run, sl, sl->why);
		return;
	}
	if (sl->kind == SLOT_OVERSIZE ?
		    err_set(PB_ELIMIT, "the mail is larger than %d bytes",
			    PB_MAIL_MAX_DEFAULT) :
		    review_parse(&r, sl->raw.data, sl->raw.len, run->parent,
				 &run->ro)) {
		/* a mail that cannot be parsed: err_msg() says why */
		where(&sl->err, sl);
		buf_addf(&sl->err, "%s\n", err_msg());
		sl->ex = EX_DATAERR;
		error_line(run, sl, err_msg());
		return;
	}
	if (run->lines)
		rc = review_to_json_line(&sl->out, r, sl->file, sl->index);
	else
		rc = review_to_json(&sl->out, r);
	review_free(r);
	if (rc) {
		buf_reset(&sl->out);
		buf_addf(&sl->err, "patchbridge parse: %s: %s\n", sl->file,
			 err_msg());
		sl->ex = EX_SOFTWARE;
	}
}

/* Print a finished slot (main thread). */
static void print_slot(struct parse_run *run, struct slot *sl)
{
	if (sl->err.len)
		fwrite(sl->err.data, 1, sl->err.len, stderr);
	if (sl->ex)
		failed(run, sl->ex);
	if (sl->out.len &&
	    fwrite(sl->out.data, 1, sl->out.len, stdout) != sl->out.len)
		failed(run, EX_IOERR);
}

static void *worker(void *arg)
{
	struct pipeline *pl = arg;
	struct slot *sl;
	size_t n;

	pthread_mutex_lock(&pl->lock);
	for (;;) {
		while (pl->taken == pl->filled && !pl->no_more) {
			pl->idle++;
			pthread_cond_wait(&pl->work, &pl->lock);
			pl->idle--;
		}
		if (pl->taken == pl->filled)
			break;
		n = pl->taken++;
		sl = &pl->slots[n % pl->nr_slots];
		pthread_mutex_unlock(&pl->lock);
		parse_slot(pl->run, sl);
		pthread_mutex_lock(&pl->lock);
		sl->done = 1;
		if (n == pl->wake_at)
			pthread_cond_signal(&pl->finished);
	}
	pthread_mutex_unlock(&pl->lock);
	return NULL;
}

/* No mail can be read before some are printed (lock held). */
static int ring_full(const struct pipeline *pl)
{
	size_t n = pl->filled - pl->printed;

	return n >= pl->nr_slots ||
	       (n >= pl->min_slots && pl->inflight >= PARSE_INFLIGHT_MAX);
}

/* A printed slot's buffers: a large one is given back. */
static void slot_recycle(struct slot *sl)
{
	if (sl->raw.alloc > PARSE_SLOT_KEEP)
		buf_release(&sl->raw);
	if (sl->out.alloc > PARSE_SLOT_KEEP)
		buf_release(&sl->out);
}

/*
 * Print the finished slots in order (main thread, lock held).  With
 * all, wait for every filled one; else wait only while the ring is
 * full, and then for the mail halfway through it, so that one wakeup
 * prints a batch.
 */
static void drain(struct pipeline *pl, int all)
{
	struct slot *sl;
	size_t target;

	for (;;) {
		while (pl->printed < pl->filled &&
		       pl->slots[pl->printed % pl->nr_slots].done) {
			sl = &pl->slots[pl->printed % pl->nr_slots];
			pthread_mutex_unlock(&pl->lock);
			print_slot(pl->run, sl);
			pthread_mutex_lock(&pl->lock);
			pl->inflight -= sl->raw.len;
			slot_recycle(sl);
			sl->done = 0;
			pl->printed++;
		}
		if (pl->printed == pl->filled || (!all && !ring_full(pl)))
			return;
		/* The oldest is not done (else it was printed): wait for
		 * it, or for the one halfway when that is not done either. */
		target = pl->printed + (pl->filled - pl->printed - 1) / 2;
		if (all || pl->slots[target % pl->nr_slots].done)
			target = pl->printed;
		pl->wake_at = target;
		while (!pl->slots[target % pl->nr_slots].done)
			pthread_cond_wait(&pl->finished, &pl->lock);
		pl->wake_at = SIZE_MAX;
	}
}

/* The slot the next mail is read into (main thread). */
static struct slot *next_slot(struct pipeline *pl)
{
	struct slot *sl;

	if (pl->threaded) {
		pthread_mutex_lock(&pl->lock);
		drain(pl, 0);
		pthread_mutex_unlock(&pl->lock);
	}
	sl = &pl->slots[pl->filled % pl->nr_slots];
	buf_reset(&sl->raw);
	buf_reset(&sl->err);
	sl->index = 0;
	sl->kind = SLOT_MAIL;
	return sl;
}

/* The slot's mail could not be read: err_msg() says why. */
static void unreadable(struct slot *sl, int ex)
{
	sl->kind = SLOT_UNREADABLE;
	sl->read_ex = ex;
	snprintf(sl->why, sizeof(sl->why), "%s", err_msg());
}

/* Hand the slot to a worker, or parse and print it here. */
static void submit(struct pipeline *pl, struct slot *sl)
{
	if (!pl->threaded) {
		parse_slot(pl->run, sl);
		print_slot(pl->run, sl);
		return;
	}
	pthread_mutex_lock(&pl->lock);
	pl->filled++;
	pl->inflight += sl->raw.len;
	if (pl->idle)
		pthread_cond_signal(&pl->work);
	pthread_mutex_unlock(&pl->lock);
}

static void read_files(struct pipeline *pl, char **files, int n)
{
	struct slot *sl;
	int i, rc;

	for (i = 0; i < n; i++) {
		sl = next_slot(pl);
		sl->file = files[i];
		rc = read_mail(&sl->raw, files[i], &sl->err);
		if (rc)
			unreadable(sl, rc);
		submit(pl, sl);
	}
}

static void read_mbox(struct pipeline *pl, const char *file)
{
	struct mbox *mb = NULL;
	struct slot *sl;
	int rc, oversize;

	rc = mbox_open(&mb, file);
	if (rc) {
		sl = next_slot(pl);
		sl->file = file;
		buf_addf(&sl->err, "patchbridge parse: %s\n", err_msg());
		unreadable(sl, EX_NOINPUT);
		submit(pl, sl);
		return;
	}
	for (;;) {
		sl = next_slot(pl);
		rc = mbox_next(mb, &sl->raw, &oversize);
		if (rc)
			break;
		sl->file = file;
		sl->index = mbox_index(mb);
		if (oversize)
			sl->kind = SLOT_OVERSIZE;
		submit(pl, sl);
	}
	if (rc != PB_ENOTFOUND) {
		/* the slot next_slot() gave is still free */
		sl->file = file;
		sl->index = 0;
		buf_addf(&sl->err, "patchbridge parse: %s\n", err_msg());
		unreadable(sl, rc == PB_EINVAL ? EX_DATAERR : EX_NOINPUT);
		submit(pl, sl);
	}
	mbox_free(mb);
}

/* Parse the FILEs, or the mbox, with jobs threads (1: this one). */
static void parse_all(struct parse_run *run, int jobs, char **files, int nfiles,
		      const char *mbox)
{
	struct pipeline pl;
	pthread_t *tids = NULL;
	int i, started = 0;
	size_t k;

	memset(&pl, 0, sizeof(pl));
	pl.run = run;
	pl.min_slots = (size_t)jobs + 2;
	pl.nr_slots = jobs > 1 ? (size_t)jobs * PARSE_SLOTS_PER_JOB : 1;
	pl.wake_at = SIZE_MAX;
	pl.slots = xcalloc(pl.nr_slots, sizeof(*pl.slots));
	for (k = 0; k < pl.nr_slots; k++) {
		buf_init(&pl.slots[k].raw, PB_MAIL_MAX_DEFAULT);
		buf_init(&pl.slots[k].out, REVIEW_JSON_MAX);
		buf_init(&pl.slots[k].err, PB_ERRMSG_MAX + PATH_MAX + 64);
	}
	pthread_mutex_init(&pl.lock, NULL);
	pthread_cond_init(&pl.work, NULL);
	pthread_cond_init(&pl.finished, NULL);
	if (jobs > 1) {
		tids = xcalloc((size_t)jobs, sizeof(*tids));
		for (i = 0; i < jobs; i++) {
			if (pthread_create(&tids[started], NULL, worker, &pl))
				break; /* fewer threads; at least this one */
			started++;
		}
	}
	pl.threaded = started > 0;
	if (mbox)
		read_mbox(&pl, mbox);
	else
		read_files(&pl, files, nfiles);
	if (pl.threaded) {
		pthread_mutex_lock(&pl.lock);
		pl.no_more = 1;
		pthread_cond_broadcast(&pl.work);
		drain(&pl, 1);
		pthread_mutex_unlock(&pl.lock);
		for (i = 0; i < started; i++)
			pthread_join(tids[i], NULL);
	}
	free(tids);
	pthread_cond_destroy(&pl.finished);
	pthread_cond_destroy(&pl.work);
	pthread_mutex_destroy(&pl.lock);
	for (k = 0; k < pl.nr_slots; k++) {
		buf_release(&pl.slots[k].raw);
		buf_release(&pl.slots[k].out);
		buf_release(&pl.slots[k].err);
	}
	free(pl.slots);
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
	/* the bridge's own mail is never a submission */
	ro->own_domain = config_str(*cfg, CFG_BRIDGE_DOMAIN);
	ro->own_address = config_str(*cfg, CFG_BRIDGE_ADDRESS);
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
	char **files, *end;
	const char *jobs_arg = NULL;
	size_t k;
	long jobs = 0;
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
		} else if ((!strcmp(argv[i], "--jobs") ||
			    !strcmp(argv[i], "-j")) &&
			   i + 1 == argc) {
			ex = usage_error("a number must follow ", argv[i]);
		} else if (!strcmp(argv[i], "--jobs") ||
			   !strcmp(argv[i], "-j")) {
			jobs_arg = argv[++i];
		} else if (!strncmp(argv[i], "--jobs=", 7)) {
			jobs_arg = argv[i] + 7;
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
	if (!ex && jobs_arg) {
		errno = 0;
		jobs = strtol(jobs_arg, &end, 10);
		if (errno || end == jobs_arg || *end || jobs < 1 ||
		    jobs > PARSE_JOBS_MAX)
			ex = usage_error("--jobs takes a number from 1 to "
					 "64, not ",
					 jobs_arg);
	}
	if (!ex) {
		memset(&run, 0, sizeof(run));
		ex = load_options(&run.ro, &cfg, config_path);
	}
	if (ex) {
		strlist_release(&thread_paths);
		config_free(cfg);
		return ex;
	}

	run.lines = jsonl || mbox || nfiles > 1;
	if (!jobs) {
		jobs = run.lines ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
		if (jobs < 1)
			jobs = 1;
		if (jobs > PARSE_JOBS_DEFAULT_MAX)
			jobs = PARSE_JOBS_DEFAULT_MAX;
	}
	if (!mbox && jobs > nfiles)
		jobs = nfiles; /* no idle threads for a few files */
	mail_init();
	if (patch) {
		run.ex = read_mail(&praw, patch, NULL);
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
	parse_all(&run, (int)jobs, files, nfiles, mbox);
out:
	free(thread.v);
	strlist_release(&thread.ids);
	strlist_release(&thread_paths);
	diff_free(parent);
	buf_release(&praw);
	mail_shutdown();
	config_free(cfg);
	return run.ex;
}
