/*
 * `patchbridge export GROUP/PROJECT!IID`: an MR's whole conversation -
 * every revision's series, every list reply, every forge comment mailed
 * to the list - as one mbox, or as a public-inbox v2 archive, in date
 * order and threaded by the mails' own headers.
 *
 * The mails come from the state database's archive (store.h): the bytes
 * the bridge sent and the bytes the list sent it, never re-rendered.  The
 * database is opened read-only, so this runs next to the daemon.
 *
 * The public-inbox directory is reached without following a link and
 * only through directories no other user may change (util/perm.h,
 * perm_dir_open()), and everything made there is made, renamed and, after
 * a failure, removed through descriptors (see struct sink below).
 */
#include "cmd/cmd_export.h"
#include "cmd/env.h"

#include "core/config.h"
#include "mail/mail.h"
#include "outbound/gitrepo.h"
#include "outbound/outbound.h"
#include "state/store.h"
#include "state/storeconf.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/perm.h"
#include "util/printable.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

/*
 * One archived mail.  The first pass keeps only what ordering and the
 * public-inbox commit need; the second loads each message again as it is
 * written, so memory holds one message at a time, whatever the MR's size.
 */
struct xmail {
	char *message_id;
	int64_t date; /* from its Date header, else when archived */
	struct gitrepo_person who;
	char *subject;
	size_t order; /* archiving order: ties on date keep it */
};

static int usage_error(const char *what)
{
	fprintf(stderr,
		"patchbridge export: %s\n"
		"usage: patchbridge export %s\n"
		"Try \"patchbridge export --help\".\n",
		what, cmd_export_synopsis);
	return EX_USAGE;
}

/* Does raw[0..len) have a Message-ID header in its header block? */
static int has_message_id(const char *raw, size_t len)
{
	const char *p = raw, *end = raw + len;

	while (p < end && *p != '\n' &&
	       !(*p == '\r' && p + 1 < end && p[1] == '\n')) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if ((size_t)(end - p) >= 11 &&
		    !strncasecmp(p, "Message-ID:", 11))
			return 1;
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}

/*
 * The text as written out: CRLF -> LF, ending in a newline, with a
 * Message-ID header put first when the mail came without one (the
 * archive's key is then the id the bridge gave it).
 */
static int normalise(struct buf *out, const struct store_archived *a)
{
	const char *p = a->message, *end = p + a->message_len;
	int rc = 0;

	buf_reset(out);
	if (!has_message_id(p, a->message_len))
		rc = buf_addf(out, "Message-ID: <%s>\n", a->message_id);
	while (!rc && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (n && p[n - 1] == '\r')
			n--;
		rc = buf_add(out, p, n);
		if (!rc)
			rc = buf_addch(out, '\n');
		p = nl ? nl + 1 : end;
	}
	return rc;
}

/* First pass: the date, sender and subject of one archived mail. */
static int describe(struct xmail *x, struct store *st, const char *message_id,
		    size_t order)
{
	struct store_archived a;
	struct mail *m = NULL;
	int rc;

	store_archived_init(&a);
	x->order = order;
	x->message_id = xstrdup(message_id);
	rc = store_archive_get(&a, st, message_id);
	if (rc)
		return rc;
	x->date = a.created;
	if (!mail_parse(&m, a.message, a.message_len, NULL)) {
		int64_t t;

		if (!mail_date_parse(&t, m->date) && t > 0)
			x->date = t;
		x->who.name = xstrdup(m->from.name);
		x->who.email = xstrdup(m->from.email);
		x->subject = xstrdup(m->subject);
		mail_free(m);
	}
	x->who.time = x->date;
	store_archived_release(&a);
	return 0;
}

static void xmail_release(struct xmail *x)
{
	free(x->message_id);
	free(x->who.name);
	free(x->who.email);
	free(x->subject);
}

static int cmp_date(const void *a, const void *b)
{
	const struct xmail *x = a, *y = b;

	if (x->date != y->date)
		return x->date < y->date ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* mboxrd: "From " lines quoted with one more '>' (">From ", ">>From "). */
static int mbox_add(struct buf *out, const struct buf *text)
{
	const char *p = text->data, *end = p + text->len;
	int rc = buf_adds(out, "From mboxrd@z Thu Jan  1 00:00:00 1970\n");

	while (!rc && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		const char *q = p;

		while (q < p + n && *q == '>')
			q++;
		if ((size_t)(p + n - q) >= 5 && !memcmp(q, "From ", 5))
			rc = buf_addch(out, '>');
		if (!rc)
			rc = buf_add(out, p, n);
		p += n;
	}
	if (!rc)
		rc = buf_addch(out, '\n');
	return rc;
}

/*
 * Where the mails go: an mbox file or stdout, and/or a public-inbox
 * epoch.  Both are written aside and put in place only when complete: the
 * mbox as a temporary file renamed over FILE, the epoch as
 * DIR/git/0.git.tmp renamed to DIR/git/0.git, so a failed export leaves
 * nothing that public-inbox-index or a reader could take for the whole
 * conversation.
 *
 * DIR is opened with perm_dir_open(): no link anywhere on its path, and
 * no directory there that another user could change, so nobody can
 * redirect a name below it.  What we make there (git/, 0.git.tmp/) is
 * made and renamed through descriptors, and a failed export is removed
 * through descriptors without following links (dir_remove_tree_at()).
 * libgit2 takes a path and follows links below it; it gets
 * DIR/git/0.git.tmp, a directory we just made in directories only this
 * user (or root) may change, so the path leads where the descriptors do.
 */
struct sink {
	const char *mbox;
	struct file_atomic file;
	int file_open;
	struct gitrepo_epoch *epoch;
	const char *inbox;
	struct perm_dir dir; /* DIR; dir.made: remove it after a failure */
	int git_fd; /* DIR/git, -1 until made */
	int git_made; /* we made DIR/git: remove it after a failure */
	int epoch_begun; /* the temporary epoch may exist */
	char epoch_tmp[PATH_MAX];
};

/* The directory fd has no entry (0), or has one (PB_EEXISTS). */
static int dir_empty(int fd, const char *shown)
{
	struct dirent *de;
	DIR *d;
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0), empty = 1;

	if (dup_fd < 0 || !(d = fdopendir(dup_fd))) {
		if (dup_fd >= 0)
			close(dup_fd);
		return err_set_errno(err_from_errno(errno), "%s", shown);
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			empty = 0;
			break;
		}
	closedir(d);
	return empty ? 0 :
		       err_set(PB_EEXISTS, "%s: exists and is not empty",
			       shown);
}

static int inbox_open(struct sink *k)
{
	int rc;

	rc = perm_dir_open(&k->dir, k->inbox, 0755, "public-inbox directory");
	if (!rc && !k->dir.made)
		rc = dir_empty(k->dir.fd, k->inbox);
	if (!rc && mkdirat(k->dir.fd, "git", 0755) < 0)
		rc = err_set_errno(err_from_errno(errno), "%s: mkdir git",
				   k->inbox);
	else if (!rc)
		k->git_made = 1;
	if (!rc) {
		rc = dir_openat_nofollow(&k->git_fd, k->dir.fd, "git", "git");
		if (rc)
			err_prefix(rc, "%s", k->inbox);
	}
	if (!rc && (size_t)snprintf(k->epoch_tmp, sizeof(k->epoch_tmp),
				    "%s/git/0.git.tmp",
				    k->inbox) >= sizeof(k->epoch_tmp))
		rc = err_set(PB_EINVAL, "%s: path too long", k->inbox);
	if (!rc && mkdirat(k->git_fd, "0.git.tmp", 0755) < 0)
		rc = err_set_errno(err_from_errno(errno), "%s: mkdir",
				   k->epoch_tmp);
	if (rc)
		return rc;
	k->epoch_begun = 1;
	rc = gitrepo_epoch_create(&k->epoch, k->epoch_tmp);
	if (rc)
		err_prefix(rc, "%s", k->epoch_tmp);
	return rc;
}

static int sink_open(struct sink *k)
{
	int rc;

	perm_dir_init(&k->dir);
	k->git_fd = -1;
	if (k->mbox && strcmp(k->mbox, "-")) {
		rc = file_output_open(&k->file, k->mbox, 0644);
		if (rc) {
			fprintf(stderr, "patchbridge export: %s\n", err_msg());
			return rc;
		}
		k->file_open = 1;
	}
	if (!k->inbox)
		return 0;
	rc = inbox_open(k);
	if (rc)
		fprintf(stderr, "patchbridge export: %s\n", err_msg());
	return rc;
}

/* Second pass: one mail, loaded again, to every output. */
static int sink_add(struct sink *k, struct store *st, const struct xmail *x,
		    struct buf *text, struct buf *mbox)
{
	struct store_archived a;
	int rc;

	store_archived_init(&a);
	rc = store_archive_get(&a, st, x->message_id);
	if (rc) {
		fprintf(stderr, "patchbridge export: %s\n", err_msg());
		return rc;
	}
	text->max = a.message_len + a.message_len / 2 + PB_MSGID_MAX + 64;
	rc = normalise(text, &a);
	store_archived_release(&a);
	if (!rc && k->mbox) {
		buf_reset(mbox);
		mbox->max = text->len * 2 + 64;
		rc = mbox_add(mbox, text);
		if (!rc && k->file_open)
			rc = file_atomic_write(&k->file, mbox->data, mbox->len);
		else if (!rc)
			rc = fd_write_all(1, mbox->data, mbox->len);
		if (rc)
			fprintf(stderr, "patchbridge export: %s: %s\n", k->mbox,
				err_msg());
	}
	if (!rc && k->epoch) {
		rc = gitrepo_epoch_add(k->epoch, text->data, text->len, &x->who,
				       x->subject);
		if (rc)
			fprintf(stderr, "patchbridge export: %s: %s\n",
				k->epoch_tmp, err_msg());
	}
	return rc;
}

/*
 * After a failure: remove the epoch being written and what we made,
 * through descriptors, never following a link.
 */
static void inbox_discard(struct sink *k)
{
	if (k->git_fd >= 0 && dir_remove_tree_at(k->git_fd, "0.git.tmp"))
		fprintf(stderr, "patchbridge export: cannot remove %s: %s\n",
			k->epoch_tmp, err_msg());
	if (k->git_made)
		unlinkat(k->dir.fd, "git", AT_REMOVEDIR);
	if (k->dir.made && k->dir.parent >= 0)
		unlinkat(k->dir.parent, k->dir.name, AT_REMOVEDIR);
}

/* A complete epoch: DIR/git/0.git.tmp -> DIR/git/0.git, made durable. */
static int inbox_commit(struct sink *k)
{
	if (renameat(k->git_fd, "0.git.tmp", k->git_fd, "0.git") < 0) {
		fprintf(stderr,
			"patchbridge export: rename to %s/git/0.git: "
			"%s\n",
			k->inbox, strerror(errno));
		return PB_ERROR;
	}
	if (fsync(k->git_fd) < 0) {
		fprintf(stderr, "patchbridge export: %s/git: fsync: %s\n",
			k->inbox, strerror(errno));
		return PB_ETEMP;
	}
	return 0;
}

/* Finish the outputs: put them in place, or remove them after a failure. */
static int sink_close(struct sink *k, int ok)
{
	int rc = 0;

	gitrepo_epoch_free(k->epoch);
	k->epoch = NULL;
	if (k->epoch_begun && ok)
		rc = inbox_commit(k);
	if (k->inbox && (!ok || rc))
		inbox_discard(k);
	k->epoch_begun = 0;
	if (k->git_fd >= 0)
		close(k->git_fd);
	k->git_fd = -1;
	perm_dir_close(&k->dir);
	if (k->file_open && ok && !rc) {
		rc = file_atomic_commit(&k->file);
		if (rc)
			fprintf(stderr, "patchbridge export: %s\n", err_msg());
	} else if (k->file_open) {
		file_atomic_abort(&k->file);
	}
	k->file_open = 0;
	return rc;
}

int cmd_export(const char *config_path, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mbox", required_argument, NULL, 'm' },
		{ "public-inbox", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	const char *mbox = NULL, *inbox = NULL;
	char project[STORE_PROJECT_MAX + 1];
	struct store_archived_list l;
	struct xmail *xs = NULL;
	struct sink sink;
	struct buf text = BUF_INIT(PB_MAIL_MAX_MAX);
	struct buf mboxbuf = BUF_INIT(PB_MAIL_MAX_MAX);
	struct config *cfg = NULL;
	struct store *st = NULL;
	size_t i, from_list = 0;
	int64_t iid, missing = 0;
	int c, rc, snapshot = 0, gmime = 0;

	memset(&l, 0, sizeof(l));
	memset(&sink, 0, sizeof(sink));
	optind = 1;
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			mbox = optarg;
			break;
		case 'p':
			inbox = optarg;
			break;
		default:
			return usage_error("unknown option");
		}
	}
	if (optind + 1 != argc)
		return usage_error("expected exactly one merge request");
	if (!mbox && !inbox)
		return usage_error("say where: --mbox FILE or "
				   "--public-inbox DIR");
	if ((mbox && !*mbox) || (inbox && !*inbox))
		return usage_error("empty output path");
	if (outbound_parse_mr(project, sizeof(project), &iid, argv[optind]))
		return usage_error("MR must be GROUP/PROJECT!IID");

	rc = env_load_config(&cfg, config_path, 0);
	if (rc)
		return rc;
	if (mail_init()) {
		fprintf(stderr, "patchbridge export: cannot start GMime\n");
		config_free(cfg);
		return EX_SOFTWARE;
	}
	gmime = 1;
	rc = storeconf_open(&st, cfg, STORE_RO);
	if (rc == PB_ENOTFOUND) {
		char where[STORECONF_WHERE_MAX];

		fprintf(stderr,
			"patchbridge export: %s: no state database "
			"yet\n",
			storeconf_where(where, sizeof(where), cfg));
		rc = EX_NOINPUT;
		goto out;
	}
	if (!rc) {
		rc = store_begin(st); /* one consistent snapshot */
		snapshot = !rc;
	}
	if (!rc)
		rc = store_archive_list(&l, st, project, iid, 0);
	if (!rc)
		rc = store_archive_missing(&missing, st, project, iid);
	if (rc) {
		fprintf(stderr, "patchbridge export: %s\n", err_msg());
		env_perm_hint(rc, "patchbridge export",
			      config_str(cfg, CFG_STATE_PATH));
		rc = env_exit_code(rc);
		goto out;
	}
	if (!l.nr && missing) {
		fprintf(stderr,
			"patchbridge export: %s!%lld: no archived mail; %lld "
			"predate%s the archive\n",
			project, (long long)iid, (long long)missing,
			missing == 1 ? "s" : "");
		rc = EX_NOINPUT;
		goto out;
	}
	if (!l.nr) {
		fprintf(stderr,
			"patchbridge export: %s!%lld: no archived mail\n",
			project, (long long)iid);
		rc = EX_NOINPUT;
		goto out;
	}
	xs = xcalloc(l.nr, sizeof(*xs));
	for (i = 0; i < l.nr && !rc; i++) {
		rc = describe(&xs[i], st, l.items[i].message_id, i);
		if (!rc && l.items[i].origin == STORE_ARCHIVE_LIST)
			from_list++;
	}
	if (rc) {
		fprintf(stderr, "patchbridge export: %s\n", err_msg());
		rc = env_exit_code(rc);
		goto out;
	}
	qsort(xs, l.nr, sizeof(*xs), cmp_date);
	if (missing)
		fprintf(stderr,
			"patchbridge export: %s!%lld: %lld mail%s from "
			"before the archive existed %s missing\n",
			project, (long long)iid, (long long)missing,
			missing == 1 ? "" : "s", missing == 1 ? "is" : "are");
	sink.mbox = mbox;
	sink.inbox = inbox;
	rc = sink_open(&sink);
	for (i = 0; i < l.nr && !rc; i++)
		rc = sink_add(&sink, st, &xs[i], &text, &mboxbuf);
	if (sink_close(&sink, !rc) || rc) {
		rc = EX_CANTCREAT;
		goto out;
	}
	fprintf(mbox && !strcmp(mbox, "-") ? stderr : stdout,
		"%s!%lld: %zu mails (%zu from the list, %zu from the "
		"bridge)%s%s%s%s\n",
		project, (long long)iid, l.nr, from_list, l.nr - from_list,
		mbox ? "; mbox " : "", mbox ? mbox : "",
		inbox ? "; public-inbox " : "", inbox ? inbox : "");
	rc = EX_OK;
out:
	if (xs)
		for (i = 0; i < l.nr; i++)
			xmail_release(&xs[i]);
	free(xs);
	buf_release(&text);
	buf_release(&mboxbuf);
	store_archived_list_release(&l);
	if (snapshot)
		store_rollback(st); /* read only: nothing to keep */
	store_free(st);
	config_free(cfg);
	if (gmime)
		mail_shutdown();
	return rc;
}
