#include "outbound/gitrepo.h"

#include "mail/digest.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/printable.h"
#include "util/sdnotify.h"
#include "util/xalloc.h"

#include <git2.h>
#include <iconv.h>
#include <stdlib.h>
#include <string.h>

struct gitrepo {
	git_repository *repo;
};

/*
 * git_libgit2_init(), then no configuration search path: every libgit2
 * use here starts with it.
 */
static void lib_init(void)
{
	static const int levels[] = {
		GIT_CONFIG_LEVEL_PROGRAMDATA,
		GIT_CONFIG_LEVEL_SYSTEM,
		GIT_CONFIG_LEVEL_XDG,
		GIT_CONFIG_LEVEL_GLOBAL,
	};
	size_t i;

	git_libgit2_init();
	/*
	 * No configuration outside the repository: not $HOME/.gitconfig,
	 * not $XDG_CONFIG_HOME, not /etc/gitconfig.  The daemon's mirrors
	 * are its own; a user's or the system's url.insteadOf, proxy or
	 * safe.directory settings must not change what it fetches, and a
	 * $HOME it may not read (HOME=/root kept by su or sudo) must not
	 * make every fetch fail on "failed to stat '/root/.gitconfig'".
	 * An empty path is an empty list of directories.  Set at every
	 * init: the last shutdown resets libgit2's settings.
	 */
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, levels[i], "");
	/*
	 * No SHA-1 of every object read, as git reads them: libgit2 hashes
	 * each one by default (a third of `format`'s time, sha1dc being
	 * slow).  A fetch still checks what it receives (the indexer hashes
	 * every object it writes), and git fsck is the tool for the disk.
	 */
	git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
}

/*
 * Convert libgit2's error into ours, keeping libgit2's message: the one
 * place that does.  A temporary failure (a fetch: the network, the
 * server) is PB_ETEMP, worth retrying; otherwise by libgit2's code.
 */
static int git_fail(int code, int temporary, const char *what)
{
	const git_error *e = git_error_last();
	int rc;

	switch (code) {
	case GIT_ENOTFOUND:
		rc = PB_ENOTFOUND;
		break;
	case GIT_EAMBIGUOUS:
	case GIT_EINVALIDSPEC:
	case GIT_EINVALID:
		rc = PB_EINVAL;
		break;
	default:
		rc = PB_ERROR;
		break;
	}
	if (temporary)
		rc = PB_ETEMP;
	return err_set(rc, "%s: %s", what,
		       e && e->message ? e->message : "libgit2 error");
}

/* A repository that did not open: rc (ours) with its path, undone. */
static int open_failed(struct gitrepo *r, int rc, const char *path)
{
	char p[PB_LOG_QUOTE_MAX];

	err_prefix(rc, "%s", printable_copy(p, sizeof(p), path, strlen(path)));
	free(r);
	git_libgit2_shutdown();
	return rc;
}

int gitrepo_open(struct gitrepo **out, const char *path)
{
	struct gitrepo *r;
	int rc;

	*out = NULL;
	lib_init();
	r = xcalloc(1, sizeof(*r));
	rc = git_repository_open_ext(&r->repo, path,
				     GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc < 0)
		return open_failed(r, git_fail(rc, 0, "open repository"), path);
	*out = r;
	return 0;
}

void gitrepo_free(struct gitrepo *repo)
{
	if (!repo)
		return;
	git_repository_free(repo->repo);
	free(repo);
	git_libgit2_shutdown();
}

int gitrepo_threads(void)
{
	return !!(git_libgit2_features() & GIT_FEATURE_THREADS);
}

static int resolve_oid(git_oid *out, struct gitrepo *repo, const char *rev)
{
	git_object *obj = NULL, *peeled = NULL;
	char p[PB_LOG_QUOTE_MAX];
	int rc;

	rc = git_revparse_single(&obj, repo->repo, rev);
	if (rc < 0) {
		rc = git_fail(rc, 0, "resolve revision");
		goto out;
	}
	rc = git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT);
	if (rc < 0) {
		rc = git_fail(rc == GIT_ENOTFOUND ? GIT_EINVALID : rc, 0,
			      "not a commit");
		goto out;
	}
	git_oid_cpy(out, git_object_id(peeled));
out:
	if (rc)
		err_prefix(rc, "%s",
			   printable_copy(p, sizeof(p), rev, strlen(rev)));
	git_object_free(peeled);
	git_object_free(obj);
	return rc;
}

int gitrepo_resolve(char out[GITREPO_HEXSZ + 1], struct gitrepo *repo,
		    const char *rev)
{
	git_oid oid;
	int rc = resolve_oid(&oid, repo, rev);

	if (!rc)
		git_oid_tostr(out, GITREPO_HEXSZ + 1, &oid);
	return rc;
}

/* --- commit messages, as git's pretty.c prints them ------------------ */

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

/* One line of msg: its length without the LF and without trailing
 * whitespace (pretty.c is_blank_line); *next is where the next starts. */
static size_t msg_line(const char *msg, const char **next)
{
	const char *nl = strchr(msg, '\n');
	size_t len = nl ? (size_t)(nl - msg) : strlen(msg);

	*next = nl ? nl + 1 : msg + len;
	while (len && is_space((unsigned char)msg[len - 1]))
		len--;
	return len;
}

static int split_message(char **subject, char **body, const char *msg)
{
	struct buf s = BUF_INIT(GITREPO_PATCH_MAX);
	struct buf b = BUF_INIT(GITREPO_PATCH_MAX);
	const char *line, *next;
	size_t len;
	int rc = 0, first = 1;

	/* Leading blank lines go; the first paragraph is the subject, its
	 * lines joined by one space (pretty.c format_subject). */
	while (*msg) {
		len = msg_line(msg, &next);
		if (len)
			break;
		msg = next;
	}
	while (*msg && !rc) {
		line = msg;
		len = msg_line(line, &next);
		msg = next;
		if (!len)
			break;
		if (s.len)
			rc = buf_addch(&s, ' ');
		if (!rc)
			rc = buf_add(&s, line, len);
	}
	/* The rest, each line's trailing blanks trimmed, blank lines at
	 * the start dropped, the end trimmed (pretty.c pp_remainder). */
	while (*msg && !rc) {
		line = msg;
		len = msg_line(line, &next);
		msg = next;
		if (!len && first)
			continue;
		first = 0;
		rc = buf_add(&b, line, len);
		if (!rc)
			rc = buf_addch(&b, '\n');
	}
	buf_rtrim(&b);
	if (!rc && b.len)
		rc = buf_addch(&b, '\n');
	if (rc) {
		buf_release(&s);
		buf_release(&b);
		return err_prefix(rc, "commit message");
	}
	*subject = buf_detach(&s, NULL);
	*body = buf_detach(&b, NULL);
	return 0;
}

static int is_utf8_name(const char *enc)
{
	return !enc || !strcasecmp(enc, "UTF-8") || !strcasecmp(enc, "UTF8");
}

/*
 * A commit with an "encoding" header other than UTF-8 is shown in UTF-8,
 * as git format-patch does (i18n.logOutputEncoding defaults to UTF-8).
 * On a conversion failure the bytes are kept as they are.
 */
static char *to_utf8(const char *s, const char *enc)
{
	iconv_t cd;
	size_t inleft, outleft, cap;
	char *in, *outp, *res;

	if (is_utf8_name(enc))
		return xstrdup(s);
	cd = iconv_open("UTF-8", enc);
	if (cd == (iconv_t)-1)
		return xstrdup(s);
	inleft = strlen(s);
	if (inleft > (GITREPO_PATCH_MAX / 4)) {
		iconv_close(cd);
		return xstrdup(s);
	}
	cap = inleft * 4 + 1;
	res = xmalloc(cap);
	in = (char *)s;
	outp = res;
	outleft = cap - 1;
	if (iconv(cd, &in, &inleft, &outp, &outleft) == (size_t)-1) {
		free(res);
		iconv_close(cd);
		return xstrdup(s);
	}
	*outp = '\0';
	iconv_close(cd);
	return res;
}

static void person_fill(struct gitrepo_person *p, const git_signature *sig,
			const char *enc)
{
	p->name = to_utf8(sig->name ? sig->name : "", enc);
	p->email = xstrdup(sig->email ? sig->email : "");
	p->time = (int64_t)sig->when.time;
	p->tz_minutes = sig->when.offset;
}

static void person_release(struct gitrepo_person *p)
{
	free(p->name);
	free(p->email);
}

/* --- diffstat, as git's diff.c show_stats() prints it ---------------- */

struct filestat {
	char *name; /* print name: quoted, "{a => b}" for renames */
	size_t added; /* lines, or new size in bytes when binary */
	size_t deleted; /* lines, or old size in bytes when binary */
	int binary;
};

struct stats {
	struct filestat *files;
	size_t nr, alloc;
	struct buf summary; /* " create mode ..." lines */
};

static void stats_init(struct stats *st)
{
	memset(st, 0, sizeof(*st));
	buf_init(&st->summary, GITREPO_STAT_MAX);
}

static void stats_release(struct stats *st)
{
	size_t i;

	for (i = 0; i < st->nr; i++)
		free(st->files[i].name);
	free(st->files);
	buf_release(&st->summary);
	memset(st, 0, sizeof(*st));
}

/* git's quote_c_style() with core.quotePath on: a name with a control
 * character, a byte >= 0x80, '"' or '\\' is written as a C string. */
static int quote_path(struct buf *out, const char *name)
{
	const unsigned char *p;
	int need = 0, rc = 0;

	for (p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
			need = 1;
	if (!need)
		return buf_adds(out, name);
	rc = buf_addch(out, '"');
	for (p = (const unsigned char *)name; *p && !rc; p++) {
		switch (*p) {
		case '\a':
			rc = buf_adds(out, "\\a");
			break;
		case '\b':
			rc = buf_adds(out, "\\b");
			break;
		case '\t':
			rc = buf_adds(out, "\\t");
			break;
		case '\n':
			rc = buf_adds(out, "\\n");
			break;
		case '\v':
			rc = buf_adds(out, "\\v");
			break;
		case '\f':
			rc = buf_adds(out, "\\f");
			break;
		case '\r':
			rc = buf_adds(out, "\\r");
			break;
		case '"':
			rc = buf_adds(out, "\\\"");
			break;
		case '\\':
			rc = buf_adds(out, "\\\\");
			break;
		default:
			if (*p < 0x20 || *p >= 0x7f)
				rc = buf_addf(out, "\\%03o", *p);
			else
				rc = buf_addch(out, (char)*p);
		}
	}
	if (!rc)
		rc = buf_addch(out, '"');
	return rc;
}

static int path_needs_quote(const char *name)
{
	const unsigned char *p;

	for (p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
			return 1;
	return 0;
}

/* git's pprint_rename(): "dir/{old => new}/file". */
static int pprint_rename(struct buf *out, const char *a, const char *b)
{
	size_t len_a = strlen(a), len_b = strlen(b);
	size_t pfx = 0, sfx = 0, i, adj;
	long a_mid, b_mid;
	const char *pa, *pb;
	int rc;

	if (path_needs_quote(a) || path_needs_quote(b)) {
		rc = quote_path(out, a);
		if (!rc)
			rc = buf_adds(out, " => ");
		if (!rc)
			rc = quote_path(out, b);
		return rc;
	}
	for (i = 0; a[i] && b[i] && a[i] == b[i]; i++)
		if (a[i] == '/')
			pfx = i + 1;
	/* The common suffix must start at a slash; with a common prefix,
	 * the scan may run one into it to see that prefix's slash. */
	adj = pfx ? 1 : 0;
	pa = a + len_a;
	pb = b + len_b;
	while (pa >= a + pfx - adj && pb >= b + pfx - adj && *pa == *pb) {
		if (*pa == '/')
			sfx = len_a - (size_t)(pa - a);
		if (pa == a || pb == b)
			break;
		pa--;
		pb--;
	}
	a_mid = (long)len_a - (long)pfx - (long)sfx;
	b_mid = (long)len_b - (long)pfx - (long)sfx;
	if (a_mid < 0)
		a_mid = 0;
	if (b_mid < 0)
		b_mid = 0;
	rc = 0;
	if (pfx + sfx) {
		rc = buf_add(out, a, pfx);
		if (!rc)
			rc = buf_addch(out, '{');
	}
	if (!rc)
		rc = buf_add(out, a + pfx, (size_t)a_mid);
	if (!rc)
		rc = buf_adds(out, " => ");
	if (!rc)
		rc = buf_add(out, b + pfx, (size_t)b_mid);
	if (!rc && pfx + sfx) {
		rc = buf_addch(out, '}');
		if (!rc)
			rc = buf_add(out, a + len_a - sfx, sfx);
	}
	return rc;
}

static int decimal_width(size_t n)
{
	int w = 1;

	while (n >= 10) {
		n /= 10;
		w++;
	}
	return w;
}

static size_t scale_linear(size_t it, size_t width, size_t max_change)
{
	if (!it)
		return 0;
	/* At least one '+' or '-' for any change: scale as if one column
	 * narrower, then add one (diff.c). */
	return 1 + (it * (width - 1) / max_change);
}

static int add_run(struct buf *out, char c, size_t n)
{
	int rc = 0;

	while (n-- && !rc)
		rc = buf_addch(out, c);
	return rc;
}

static int stats_render(struct buf *out, const struct stats *st)
{
	size_t max_change = 0, max_len = 0, adds = 0, dels = 0, i, len;
	long width, name_width, graph_width, number_width = 0, bin_width = 0;
	int rc = 0;

	if (st->nr == 0)
		return buf_adds(out, " 0 files changed\n");
	for (i = 0; i < st->nr; i++) {
		const struct filestat *f = &st->files[i];

		len = strlen(f->name);
		if (max_len < len)
			max_len = len;
		if (f->binary) {
			/* "Bin XXX -> YYY bytes" */
			long w = 14 + decimal_width(f->added) +
				 decimal_width(f->deleted);

			if (bin_width < w)
				bin_width = w;
			number_width = 3;
			continue;
		}
		if (max_change < f->added + f->deleted)
			max_change = f->added + f->deleted;
	}
	width = GITREPO_STAT_WIDTH;
	if (decimal_width(max_change) > number_width)
		number_width = decimal_width(max_change);
	if (width < 16 + 6 + number_width)
		width = 16 + 6 + number_width;
	graph_width = (long)max_change + 4 > bin_width ? (long)max_change :
							 bin_width - 4;
	name_width = (long)max_len;
	if (name_width + number_width + 6 + graph_width > width) {
		if (graph_width > width * 3 / 8 - number_width - 6) {
			graph_width = width * 3 / 8 - number_width - 6;
			if (graph_width < 6)
				graph_width = 6;
		}
		if (name_width > width - number_width - 6 - graph_width)
			name_width = width - number_width - 6 - graph_width;
		else
			graph_width = width - number_width - 6 - name_width;
	}

	for (i = 0; i < st->nr && !rc; i++) {
		const struct filestat *f = &st->files[i];
		const char *name = f->name, *prefix = "";
		long nlen = (long)strlen(name), lw = name_width, padding;
		size_t add = f->added, del = f->deleted;

		if (name_width < nlen) {
			const char *slash;

			prefix = "...";
			lw -= 3;
			if (lw < 0)
				lw = 0;
			name += nlen - lw;
			slash = strchr(name, '/');
			if (slash)
				name = slash;
		}
		padding = lw - (long)strlen(name);
		if (padding < 0)
			padding = 0;
		if (f->binary) {
			rc = buf_addf(out, " %s%s%*s | %*s", prefix, name,
				      (int)padding, "", (int)number_width,
				      "Bin");
			if (!rc && (add || del))
				rc = buf_addf(out, " %zu -> %zu bytes", del,
					      add);
			if (!rc)
				rc = buf_addch(out, '\n');
			continue;
		}
		if ((size_t)graph_width <= max_change) {
			size_t total = scale_linear(
				add + del, (size_t)graph_width, max_change);

			if (total < 2 && add && del)
				total = 2;
			if (add < del) {
				add = scale_linear(add, (size_t)graph_width,
						   max_change);
				del = total - add;
			} else {
				del = scale_linear(del, (size_t)graph_width,
						   max_change);
				add = total - del;
			}
		}
		rc = buf_addf(out, " %s%s%*s | %*zu%s", prefix, name,
			      (int)padding, "", (int)number_width,
			      f->added + f->deleted,
			      f->added + f->deleted ? " " : "");
		if (!rc)
			rc = add_run(out, '+', add);
		if (!rc)
			rc = add_run(out, '-', del);
		if (!rc)
			rc = buf_addch(out, '\n');
	}
	for (i = 0; i < st->nr; i++) {
		if (!st->files[i].binary) {
			adds += st->files[i].added;
			dels += st->files[i].deleted;
		}
	}
	/* diff.c print_stat_summary_inserts_deletes() */
	if (!rc)
		rc = buf_addf(out,
			      st->nr == 1 ? " %zu file changed" :
					    " %zu files changed",
			      st->nr);
	if (!rc && (adds || dels == 0))
		rc = buf_addf(out,
			      adds == 1 ? ", %zu insertion(+)" :
					  ", %zu insertions(+)",
			      adds);
	if (!rc && (dels || adds == 0))
		rc = buf_addf(out,
			      dels == 1 ? ", %zu deletion(-)" :
					  ", %zu deletions(-)",
			      dels);
	if (!rc)
		rc = buf_addch(out, '\n');
	if (!rc)
		rc = buf_addbuf(out, &st->summary);
	return rc;
}

/* diff.c diff_summary(): the lines after the diffstat. */
static int summary_add(struct buf *out, const git_diff_delta *d)
{
	const char *path = d->new_file.path;
	int rc = 0;

	switch (d->status) {
	case GIT_DELTA_ADDED:
		rc = buf_addf(out, " create mode %06o ", d->new_file.mode);
		if (!rc)
			rc = quote_path(out, path);
		break;
	case GIT_DELTA_DELETED:
		rc = buf_addf(out, " delete mode %06o ", d->old_file.mode);
		if (!rc)
			rc = quote_path(out, d->old_file.path);
		break;
	case GIT_DELTA_RENAMED:
	case GIT_DELTA_COPIED:
		rc = buf_adds(out, d->status == GIT_DELTA_RENAMED ? " rename " :
								    " copy ");
		if (!rc)
			rc = pprint_rename(out, d->old_file.path, path);
		if (!rc)
			rc = buf_addf(out, " (%d%%)", d->similarity);
		if (!rc && d->old_file.mode != d->new_file.mode)
			rc = buf_addf(out, "\n mode change %06o => %06o",
				      d->old_file.mode, d->new_file.mode);
		break;
	default:
		if (d->old_file.mode && d->new_file.mode &&
		    d->old_file.mode != d->new_file.mode) {
			rc = buf_addf(out, " mode change %06o => %06o ",
				      d->old_file.mode, d->new_file.mode);
			if (!rc)
				rc = quote_path(out, path);
			break;
		}
		return 0;
	}
	if (!rc)
		rc = buf_addch(out, '\n');
	return rc;
}

static int blob_size(size_t *out, git_repository *repo, const git_oid *id)
{
	git_odb *odb = NULL;
	git_object_t type;
	size_t len = 0;
	int rc;

	*out = 0;
	if (git_oid_is_zero(id))
		return 0;
	rc = git_repository_odb(&odb, repo);
	if (!rc)
		rc = git_odb_read_header(&len, &type, odb, id);
	git_odb_free(odb);
	if (rc < 0)
		return git_fail(rc, 0, "blob size");
	*out = len;
	return 0;
}

static int stat_add(struct stats *st, git_repository *repo,
		    const git_diff_delta *d, git_patch *patch)
{
	struct buf name = BUF_INIT(GITREPO_STAT_MAX);
	struct filestat *f;
	size_t adds = 0, dels = 0;
	int rc;

	if (d->status == GIT_DELTA_RENAMED || d->status == GIT_DELTA_COPIED)
		rc = pprint_rename(&name, d->old_file.path, d->new_file.path);
	else
		rc = quote_path(&name, d->new_file.path);
	if (rc)
		goto out;
	ALLOC_GROW(st->files, st->nr + 1, st->alloc);
	f = &st->files[st->nr];
	memset(f, 0, sizeof(*f));
	if (d->flags & GIT_DIFF_FLAG_BINARY) {
		f->binary = 1;
		/* diff.c builtin_diffstat(): sizes only when the contents
		 * differ. */
		if (!git_oid_equal(&d->old_file.id, &d->new_file.id)) {
			rc = blob_size(&dels, repo, &d->old_file.id);
			if (!rc)
				rc = blob_size(&adds, repo, &d->new_file.id);
		}
	} else if (patch) {
		rc = git_patch_line_stats(NULL, &adds, &dels, patch);
		if (rc < 0)
			rc = git_fail(rc, 0, "line stats");
	}
	if (rc)
		goto out;
	f->added = adds;
	f->deleted = dels;
	f->name = buf_detach(&name, NULL);
	st->nr++;
	rc = summary_add(&st->summary, d);
out:
	buf_release(&name);
	return rc;
}

/* --- diffs ------------------------------------------------------------ */

static int diff_trees(git_diff **out, git_repository *repo, git_tree *old,
		      git_tree *new)
{
	git_diff_options dopts;
	git_diff_find_options fopts;
	int rc;

	git_diff_options_init(&dopts, GIT_DIFF_OPTIONS_VERSION);
	git_diff_find_options_init(&fopts, GIT_DIFF_FIND_OPTIONS_VERSION);

	/* git format-patch: binary patches, 3 lines of context, rename
	 * detection at git's default 50% and diff.renameLimit of 1000. */
	dopts.flags = GIT_DIFF_SHOW_BINARY;
	dopts.context_lines = 3;
	dopts.interhunk_lines = 0;
	dopts.id_abbrev = GITREPO_ABBREV;
	rc = git_diff_tree_to_tree(out, repo, old, new, &dopts);
	if (rc < 0)
		return git_fail(rc, 0, "diff");
	fopts.flags = GIT_DIFF_FIND_RENAMES;
	fopts.rename_limit = 1000;
	rc = git_diff_find_similar(*out, &fopts);
	if (rc < 0) {
		git_diff_free(*out);
		*out = NULL;
		return git_fail(rc, 0, "rename detection");
	}
	return 0;
}

struct delta_order {
	const char *path;
	size_t idx;
};

static int delta_order_cmp(const void *a, const void *b)
{
	const struct delta_order *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * The deltas in git's order: a rename sits where its new path sorts
 * (diffcore-rename puts the pair in the creation's place), everything
 * else by path.  libgit2 sorts renames by their old path.
 */
static struct delta_order *diff_order(git_diff *diff, size_t *nr)
{
	size_t i, n = git_diff_num_deltas(diff);
	struct delta_order *o = xcalloc(n ? n : 1, sizeof(*o));

	for (i = 0; i < n; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		o[i].path = d->new_file.path ? d->new_file.path :
					       d->old_file.path;
		o[i].idx = i;
	}
	qsort(o, n, sizeof(*o), delta_order_cmp);
	*nr = n;
	return o;
}

/*
 * The patch-id, computed from the lines of the patch text as they are
 * printed, so that each blob is read and diffed once: the sum (bytes
 * added with carry, first byte first) of one SHA-1 per file of its
 * lines without white space, the "index" line and the hunk headers and
 * "\ No newline" markers left out, each line cut at a NUL.  This is
 * what git_diff_patchid() computes (libgit2's diff.c: its
 * GIT_DIFF_FORMAT_PATCH_ID printing, strip_spaces(), flush_hunk()), the
 * same as `git patch-id --stable`; with no file, the SHA-1 of nothing.
 */
struct patchid {
	struct digest_sha1 *sha;
	unsigned char sum[DIGEST_SHA1_SIZE];
	int files; /* file headers hashed */
};

/* git__isspace() */
static int pid_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' ||
	       c == '\v';
}

/* Hash s[0..len) without its white space; returns 1 at a NUL. */
static int pid_add(struct patchid *p, const char *s, size_t len)
{
	char chunk[512];
	size_t n = 0, i;
	int nul = 0;

	for (i = 0; i < len; i++) {
		if (!s[i]) {
			nul = 1;
			break;
		}
		if (pid_space(s[i]))
			continue;
		chunk[n++] = s[i];
		if (n == sizeof(chunk)) {
			digest_sha1_update(p->sha, chunk, n);
			n = 0;
		}
	}
	if (n)
		digest_sha1_update(p->sha, chunk, n);
	return nul;
}

static void pid_flush(struct patchid *p)
{
	unsigned char h[DIGEST_SHA1_SIZE];
	unsigned carry = 0;
	size_t i;

	digest_sha1_final(p->sha, h);
	for (i = 0; i < DIGEST_SHA1_SIZE; i++) {
		carry += (unsigned)p->sum[i] + h[i];
		p->sum[i] = (unsigned char)carry;
		carry >>= 8;
	}
}

/* A file header without its "index" line. */
static void pid_header(struct patchid *p, const char *s, size_t len)
{
	const char *end = s + len, *nl;

	if (p->files++)
		pid_flush(p);
	while (s < end) {
		nl = memchr(s, '\n', (size_t)(end - s));
		nl = nl ? nl + 1 : end;
		if (!((size_t)(nl - s) >= 6 && !memcmp(s, "index ", 6)) &&
		    pid_add(p, s, (size_t)(nl - s)))
			break;
		s = nl;
	}
}

static void pid_line(struct patchid *p, const git_diff_line *line)
{
	switch (line->origin) {
	case GIT_DIFF_LINE_FILE_HDR:
		pid_header(p, line->content, line->content_len);
		break;
	case GIT_DIFF_LINE_HUNK_HDR:
	case GIT_DIFF_LINE_CONTEXT_EOFNL:
	case GIT_DIFF_LINE_ADD_EOFNL:
	case GIT_DIFF_LINE_DEL_EOFNL:
		break;
	case GIT_DIFF_LINE_ADDITION:
	case GIT_DIFF_LINE_DELETION: {
		char origin = (char)line->origin;

		pid_add(p, &origin, 1);
	}
		/* fall through */
	default:
		pid_add(p, line->content, line->content_len);
		break;
	}
}

static void pid_hex(char out[GITREPO_HEXSZ + 1], struct patchid *p)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	pid_flush(p);
	for (i = 0; i < DIGEST_SHA1_SIZE; i++) {
		out[2 * i] = hex[p->sum[i] >> 4];
		out[2 * i + 1] = hex[p->sum[i] & 15];
	}
	out[2 * DIGEST_SHA1_SIZE] = '\0';
}

struct print_ctx {
	struct buf *out;
	struct patchid *pid;
	int rc; /* ours, when the buffer refused */
};

/*
 * git_patch_print() callback: the text git_patch_to_buf() makes (the
 * origin of a context, added or removed line, then its content), and
 * the patch-id of the same lines.
 */
static int print_line(const git_diff_delta *delta, const git_diff_hunk *hunk,
		      const git_diff_line *line, void *payload)
{
	struct print_ctx *pc = payload;
	int rc = 0;

	(void)delta;
	(void)hunk;
	if (line->origin == GIT_DIFF_LINE_ADDITION ||
	    line->origin == GIT_DIFF_LINE_DELETION ||
	    line->origin == GIT_DIFF_LINE_CONTEXT)
		rc = buf_addch(pc->out, line->origin);
	if (!rc)
		rc = buf_add(pc->out, line->content, line->content_len);
	if (rc) {
		pc->rc = rc;
		return -1;
	}
	if (pc->pid)
		pid_line(pc->pid, line);
	return 0;
}

/*
 * Render a diff into out: diffstat and summary; then, with with_patch, a
 * blank line and the patch, and its patch-id into patch_id unless that
 * is NULL.  The
 * patches are all made before the diffstat is written (it needs their
 * line counts) and printed straight into out after it.
 */
static int diff_render(struct buf *out, int with_patch, char *patch_id,
		       git_repository *repo, git_diff *diff, size_t *files,
		       size_t *ins, size_t *del)
{
	struct stats st;
	struct delta_order *order;
	struct patchid pid;
	struct print_ctx pc = { out, patch_id ? &pid : NULL, 0 };
	git_patch **patches;
	size_t n, i;
	int rc = 0;

	memset(&pid, 0, sizeof(pid));
	stats_init(&st);
	order = diff_order(diff, &n);
	patches = xcalloc(n ? n : 1, sizeof(*patches));
	for (i = 0; i < n && !rc; i++) {
		const git_diff_delta *d =
			git_diff_get_delta(diff, order[i].idx);

		/* A patch is needed for line counts of text files. */
		if (with_patch || !(d->flags & GIT_DIFF_FLAG_BINARY)) {
			rc = git_patch_from_diff(&patches[i], diff,
						 order[i].idx);
			if (rc < 0) {
				rc = git_fail(rc, 0, "patch");
				break;
			}
		}
		rc = stat_add(&st, repo, d, patches[i]);
		/* Without the text, only the counts are kept. */
		if (!with_patch) {
			git_patch_free(patches[i]);
			patches[i] = NULL;
		}
	}
	if (!rc)
		rc = stats_render(out, &st);
	if (!rc && with_patch) {
		if (patch_id)
			pid.sha = digest_sha1_new();
		rc = buf_addch(out, '\n');
		for (i = 0; i < n && !rc; i++) {
			if (!patches[i])
				continue;
			rc = git_patch_print(patches[i], print_line, &pc);
			if (pc.rc)
				rc = pc.rc;
			else if (rc < 0)
				rc = git_fail(rc, 0, "patch text");
		}
		if (!rc && patch_id)
			pid_hex(patch_id, &pid);
	}
	if (!rc && files) {
		*files = st.nr;
		*ins = *del = 0;
		for (i = 0; i < st.nr; i++) {
			if (st.files[i].binary)
				continue;
			*ins += st.files[i].added;
			*del += st.files[i].deleted;
		}
	}
	for (i = 0; i < n; i++)
		git_patch_free(patches[i]);
	free(patches);
	free(order);
	stats_release(&st);
	digest_sha1_free(pid.sha);
	return rc;
}

/* The commit's text from "---" on; its patch-id too with with_id. */
static int commit_patch(struct gitrepo_commit *c, git_repository *repo,
			git_commit *commit, int with_id)
{
	git_tree *tree = NULL, *ptree = NULL;
	git_commit *parent = NULL;
	git_diff *diff = NULL;
	int rc;

	rc = git_commit_tree(&tree, commit);
	if (!rc && git_commit_parentcount(commit) == 1) {
		rc = git_commit_parent(&parent, commit, 0);
		if (!rc)
			rc = git_commit_tree(&ptree, parent);
	}
	if (rc < 0) {
		rc = git_fail(rc, 0, "commit tree");
		goto out;
	}
	rc = diff_trees(&diff, repo, ptree, tree);
	if (rc)
		goto out;
	rc = buf_adds(&c->patch, "---\n");
	if (!rc)
		rc = diff_render(&c->patch, 1, with_id ? c->patch_id : NULL,
				 repo, diff, &c->files, &c->insertions,
				 &c->deletions);
	if (rc)
		err_prefix(rc, "commit %.12s", c->sha);
out:
	git_diff_free(diff);
	git_tree_free(tree);
	git_tree_free(ptree);
	git_commit_free(parent);
	return rc;
}

/* --- ranges ----------------------------------------------------------- */

static void commit_release(struct gitrepo_commit *c)
{
	person_release(&c->author);
	person_release(&c->committer);
	free(c->subject);
	free(c->body);
	buf_release(&c->patch);
}

void gitrepo_range_free(struct gitrepo_range *range)
{
	size_t i;

	if (!range)
		return;
	for (i = 0; i < range->nr; i++)
		commit_release(&range->commits[i]);
	person_release(&range->head_committer);
	free(range->commits);
	buf_release(&range->diffstat);
	free(range);
}

/* Does the commit change nothing (same tree as its only parent)? */
static int commit_is_empty(git_commit *commit)
{
	git_commit *parent = NULL;
	int empty = 0;

	if (git_commit_parentcount(commit) != 1)
		return 0;
	if (git_commit_parent(&parent, commit, 0) == 0)
		empty = git_oid_equal(git_commit_tree_id(parent),
				      git_commit_tree_id(commit));
	git_commit_free(parent);
	return empty;
}

static int range_walk(git_oid **out, size_t *nr, struct gitrepo_range *r,
		      git_repository *repo, const git_oid *base,
		      const git_oid *head)
{
	git_revwalk *walk = NULL;
	git_oid oid, *list = NULL;
	size_t n = 0, alloc = 0;
	int rc;

	/* Oldest first; a parent always before its children; among
	 * independent commits, commit date order, which is what git
	 * format-patch produces for histories with sane dates. */
	rc = git_revwalk_new(&walk, repo);
	if (!rc)
		rc = git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL |
						       GIT_SORT_TIME |
						       GIT_SORT_REVERSE);
	if (!rc)
		rc = git_revwalk_push(walk, head);
	if (!rc)
		rc = git_revwalk_hide(walk, base);
	if (rc < 0) {
		rc = git_fail(rc, 0, "revision walk");
		goto out;
	}
	for (;;) {
		git_commit *c = NULL;

		rc = git_revwalk_next(&oid, walk);
		if (rc == GIT_ITEROVER) {
			rc = 0;
			break;
		}
		if (rc < 0) {
			rc = git_fail(rc, 0, "revision walk");
			goto out;
		}
		if (n + r->merges_skipped + r->empty_skipped >=
		    GITREPO_WALK_MAX) {
			rc = err_set(PB_ELIMIT,
				     "range holds more than %d commits",
				     GITREPO_WALK_MAX);
			goto out;
		}
		rc = git_commit_lookup(&c, repo, &oid);
		if (rc < 0) {
			rc = git_fail(rc, 0, "commit");
			goto out;
		}
		/* git format-patch leaves out merges, and commits that
		 * introduce no change (unless --always). */
		if (git_commit_parentcount(c) > 1)
			r->merges_skipped++;
		else if (commit_is_empty(c))
			r->empty_skipped++;
		else {
			ALLOC_GROW(list, n + 1, alloc);
			git_oid_cpy(&list[n++], &oid);
		}
		git_commit_free(c);
	}
out:
	git_revwalk_free(walk);
	if (rc) {
		free(list);
		return rc;
	}
	*out = list;
	*nr = n;
	return 0;
}

static int commit_load(struct gitrepo_commit *c, git_repository *repo,
		       const git_oid *oid, int with_patch)
{
	git_commit *commit = NULL;
	const char *enc;
	char *msg = NULL;
	int rc;

	buf_init(&c->patch, GITREPO_PATCH_MAX);
	git_oid_tostr(c->sha, sizeof(c->sha), oid);
	rc = git_commit_lookup(&commit, repo, oid);
	if (rc < 0)
		return git_fail(rc, 0, "commit");
	enc = git_commit_message_encoding(commit);
	person_fill(&c->author, git_commit_author(commit), enc);
	person_fill(&c->committer, git_commit_committer(commit), enc);
	msg = to_utf8(git_commit_message(commit) ? git_commit_message(commit) :
						   "",
		      enc);
	rc = split_message(&c->subject, &c->body, msg);
	if (!rc && with_patch)
		rc = commit_patch(c, repo, commit, 1);
	free(msg);
	git_commit_free(commit);
	return rc;
}

static int range_diffstat(struct gitrepo_range *r, git_repository *repo,
			  const git_oid *from, const git_oid *to)
{
	git_commit *a = NULL, *b = NULL;
	git_tree *ta = NULL, *tb = NULL;
	git_diff *diff = NULL;
	int rc = 0;

	if (from) {
		rc = git_commit_lookup(&a, repo, from);
		if (!rc)
			rc = git_commit_tree(&ta, a);
	}
	if (!rc)
		rc = git_commit_lookup(&b, repo, to);
	if (!rc)
		rc = git_commit_tree(&tb, b);
	if (rc < 0) {
		rc = git_fail(rc, 0, "range diffstat");
		goto out;
	}
	rc = diff_trees(&diff, repo, ta, tb);
	if (!rc)
		rc = diff_render(&r->diffstat, 0, NULL, repo, diff, NULL, NULL,
				 NULL);
out:
	git_diff_free(diff);
	git_tree_free(ta);
	git_tree_free(tb);
	git_commit_free(a);
	git_commit_free(b);
	return rc;
}

static int range_load(struct gitrepo_range **out, struct gitrepo *repo,
		      const char *base, const char *head, size_t patch_limit,
		      int deferred)
{
	struct gitrepo_range *r;
	git_oid base_oid, head_oid, mb;
	git_oid *list = NULL;
	git_commit *hc = NULL;
	size_t n = 0, i;
	int rc, have_mb = 0;

	*out = NULL;
	r = xcalloc(1, sizeof(*r));
	buf_init(&r->diffstat, GITREPO_STAT_MAX);
	rc = resolve_oid(&base_oid, repo, base);
	if (!rc)
		rc = resolve_oid(&head_oid, repo, head);
	if (rc)
		goto out;
	git_oid_tostr(r->base, sizeof(r->base), &base_oid);
	git_oid_tostr(r->head, sizeof(r->head), &head_oid);
	rc = git_commit_lookup(&hc, repo->repo, &head_oid);
	if (rc < 0) {
		rc = git_fail(rc, 0, "head commit");
		goto out;
	}
	person_fill(&r->head_committer, git_commit_committer(hc),
		    git_commit_message_encoding(hc));
	git_commit_free(hc);
	rc = git_merge_base(&mb, repo->repo, &base_oid, &head_oid);
	if (rc == 0) {
		have_mb = 1;
		git_oid_tostr(r->merge_base, sizeof(r->merge_base), &mb);
	} else if (rc != GIT_ENOTFOUND) {
		rc = git_fail(rc, 0, "merge base");
		goto out;
	}
	rc = range_walk(&list, &n, r, repo->repo, &base_oid, &head_oid);
	if (rc)
		goto out;
	r->have_patches = patch_limit == 0 || n <= patch_limit;
	r->commits = xcalloc(n ? n : 1, sizeof(*r->commits));
	for (i = 0; i < n && !rc; i++) {
		rc = commit_load(&r->commits[i], repo->repo, &list[i],
				 r->have_patches && !deferred);
		r->nr = i + 1;
	}
	/* Deferred, the caller asks for it (gitrepo_range_diffstat()). */
	if (!rc && !deferred)
		rc = range_diffstat(r, repo->repo, have_mb ? &mb : NULL,
				    &head_oid);
out:
	free(list);
	if (rc) {
		gitrepo_range_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int gitrepo_range_load(struct gitrepo_range **out, struct gitrepo *repo,
		       const char *base, const char *head, size_t patch_limit)
{
	return range_load(out, repo, base, head, patch_limit, 0);
}

int gitrepo_range_load_deferred(struct gitrepo_range **out,
				struct gitrepo *repo, const char *base,
				const char *head, size_t patch_limit)
{
	return range_load(out, repo, base, head, patch_limit, 1);
}

int gitrepo_range_diffstat(struct gitrepo *repo, struct gitrepo_range *range)
{
	git_oid mb, head;
	int rc;

	if (range->diffstat.len)
		return 0;
	rc = git_oid_fromstr(&head, range->head);
	if (!rc && range->merge_base[0])
		rc = git_oid_fromstr(&mb, range->merge_base);
	if (rc < 0)
		return git_fail(rc, 0, "range diffstat");
	return range_diffstat(range, repo->repo,
			      range->merge_base[0] ? &mb : NULL, &head);
}

int gitrepo_range_patch(struct gitrepo *repo, struct gitrepo_range *range,
			size_t i)
{
	struct gitrepo_commit *c = &range->commits[i];
	git_commit *commit = NULL;
	git_oid oid;
	int rc;

	BUG_ON(i >= range->nr || !range->have_patches);
	if (c->patch.len)
		return 0;
	rc = git_oid_fromstr(&oid, c->sha);
	if (!rc)
		rc = git_commit_lookup(&commit, repo->repo, &oid);
	if (rc < 0)
		return git_fail(rc, 0, "commit");
	rc = commit_patch(c, repo->repo, commit, 0);
	git_commit_free(commit);
	return rc;
}

void gitrepo_range_patch_release(struct gitrepo_range *range, size_t i)
{
	BUG_ON(i >= range->nr);
	buf_release(&range->commits[i].patch);
}

/* --- shortlog --------------------------------------------------------- */

static int name_cmp(const void *a, const void *b)
{
	const struct gitrepo_commit *const *x = a, *const *y = b;
	int c = strcmp((*x)->author.name, (*y)->author.name);

	if (c)
		return c;
	/* Stable: keep range order within one author. */
	return *x < *y ? -1 : *x > *y;
}

/* utf8.c strbuf_add_wrapped_text() for one-line text: words wrapped at
 * width, first line indented by in1, the others by in2. */
static int add_wrapped(struct buf *out, const char *text, size_t in1,
		       size_t in2, size_t width)
{
	size_t col, i = 0, j, wl;
	int rc = add_run(out, ' ', in1), first = 1;

	col = in1;
	while (!rc && text[i]) {
		while (text[i] == ' ')
			i++;
		for (j = i; text[j] && text[j] != ' '; j++)
			;
		if (j == i)
			break;
		wl = j - i;
		if (!first && col + 1 + wl > width) {
			rc = buf_addch(out, '\n');
			if (!rc)
				rc = add_run(out, ' ', in2);
			col = in2;
		} else if (!first) {
			rc = buf_addch(out, ' ');
			col++;
		}
		if (!rc)
			rc = buf_add(out, text + i, wl);
		col += wl;
		first = 0;
		i = j;
	}
	if (!rc)
		rc = buf_addch(out, '\n');
	return rc;
}

int gitrepo_shortlog(struct buf *out, const struct gitrepo_range *range)
{
	const struct gitrepo_commit **v;
	size_t i, j, n;
	int rc = 0;

	if (range->nr == 0)
		return 0;
	v = xcalloc(range->nr, sizeof(*v));
	for (i = 0; i < range->nr; i++)
		v[i] = &range->commits[i];
	qsort(v, range->nr, sizeof(*v), name_cmp);
	for (i = 0; i < range->nr && !rc; i = j) {
		for (j = i; j < range->nr &&
			    !strcmp(v[j]->author.name, v[i]->author.name);
		     j++)
			;
		n = j - i;
		rc = buf_addf(out, "%s (%zu):\n", v[i]->author.name, n);
		for (n = i; n < j && !rc; n++)
			rc = add_wrapped(out, v[n]->subject, 2, 4,
					 GITREPO_STAT_WIDTH);
		if (!rc)
			rc = buf_addch(out, '\n');
	}
	free(v);
	return rc;
}

/* --- range-diff ------------------------------------------------------- */

void gitrepo_rangediff_free(struct gitrepo_rangediff *rd)
{
	size_t i;

	if (!rd)
		return;
	for (i = 0; i < rd->nr; i++)
		free(rd->entries[i].interdiff);
	free(rd->entries);
	free(rd);
}

/*
 * What range-diff compares: the message, then the patch without the
 * "index" lines and hunk line numbers (which change with any unrelated
 * edit above), as `git range-diff` does.
 */
static int rd_text(struct buf *out, const struct gitrepo_commit *c)
{
	const char *p = c->patch.data, *end = p + c->patch.len, *nl;
	int rc, in_diff = 0;

	rc = buf_addf(out, "## Commit message ##\n%s\n\n%s", c->subject,
		      c->body);
	while (!rc && p < end) {
		size_t len;

		nl = memchr(p, '\n', (size_t)(end - p));
		len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (len >= 11 && !memcmp(p, "diff --git ", 11)) {
			in_diff = 1;
			rc = buf_adds(out, "\n## ");
			if (!rc)
				rc = buf_add(out, p + 11, len - 11);
			if (!rc)
				rc = buf_adds(out, " ##\n");
		} else if (!in_diff || (len >= 6 && !memcmp(p, "index ", 6))) {
			/* the diffstat, and index lines: left out */
		} else if (len >= 2 && !memcmp(p, "@@", 2)) {
			const char *q = len > 2 ? memchr(p + 2, '@', len - 2) :
						  NULL;

			rc = buf_adds(out, "@@");
			if (!rc && q && q + 2 <= p + len && q[1] == '@')
				rc = buf_add(out, q + 2,
					     (size_t)(p + len - q - 2));
			if (!rc)
				rc = buf_addch(out, '\n');
		} else {
			rc = buf_add(out, p, len);
			if (!rc)
				rc = buf_addch(out, '\n');
		}
		p = nl ? nl + 1 : end;
	}
	return rc;
}

static int interdiff(char **out, const struct gitrepo_commit *a,
		     const struct gitrepo_commit *b)
{
	struct buf ta = BUF_INIT(GITREPO_PATCH_MAX);
	struct buf tb = BUF_INIT(GITREPO_PATCH_MAX);
	struct buf res = BUF_INIT(GITREPO_PATCH_MAX);
	git_diff_options opts;
	git_patch *patch = NULL;
	git_buf gb = GIT_BUF_INIT;
	const char *p, *end, *nl;
	size_t lines = 0, more = 0;
	int rc, hunks = 0;

	*out = NULL;
	git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
	rc = rd_text(&ta, a);
	if (!rc)
		rc = rd_text(&tb, b);
	if (rc)
		goto out;
	opts.context_lines = 1;
	rc = git_patch_from_buffers(&patch, ta.data, ta.len, "old", tb.data,
				    tb.len, "new", &opts);
	if (rc < 0) {
		rc = git_fail(rc, 0, "interdiff");
		goto out;
	}
	rc = git_patch_to_buf(&gb, patch);
	if (rc < 0) {
		rc = git_fail(rc, 0, "interdiff");
		goto out;
	}
	/* Keep the hunks, indented by four like git range-diff; drop the
	 * file header lines. */
	p = gb.ptr;
	end = gb.ptr + gb.size;
	while (!rc && p < end) {
		size_t len;

		nl = memchr(p, '\n', (size_t)(end - p));
		len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (len >= 2 && !memcmp(p, "@@", 2))
			hunks = 1;
		if (hunks) {
			if (lines < GITREPO_INTERDIFF_LINES) {
				rc = buf_adds(&res, "    ");
				if (!rc)
					rc = buf_add(&res, p, len);
				if (!rc)
					rc = buf_addch(&res, '\n');
				lines++;
			} else {
				more++;
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (!rc && more)
		rc = buf_addf(&res, "    [... %zu more lines]\n", more);
	if (!rc)
		*out = buf_detach(&res, NULL);
out:
	git_buf_dispose(&gb);
	git_patch_free(patch);
	buf_release(&ta);
	buf_release(&tb);
	buf_release(&res);
	return rc;
}

static int same_message(const struct gitrepo_commit *a,
			const struct gitrepo_commit *b)
{
	return !strcmp(a->subject, b->subject) && !strcmp(a->body, b->body);
}

int gitrepo_range_diff(struct gitrepo_rangediff **out,
		       const struct gitrepo_range *old_range,
		       const struct gitrepo_range *new_range)
{
	size_t no = old_range->nr, nn = new_range->nr, i, j, k;
	size_t *pair_new = NULL, *pair_old = NULL;
	struct gitrepo_rangediff *rd = NULL;
	unsigned char *shown;
	int rc = 0;

	*out = NULL;
	if (!old_range->have_patches || !new_range->have_patches)
		return err_set(PB_EINVAL, "range-diff needs both patch sets");
	/* The interdiff uses libgit2 without a repository. */
	lib_init();
	pair_new = xcalloc(nn + 1, sizeof(*pair_new)); /* new -> old */
	pair_old = xcalloc(no + 1, sizeof(*pair_old)); /* old -> new */
	for (j = 0; j < nn; j++)
		pair_new[j] = SIZE_MAX;
	for (i = 0; i < no; i++)
		pair_old[i] = SIZE_MAX;
	/* Pass 1: the same change (patch-id), in order. */
	for (j = 0; j < nn; j++) {
		for (i = 0; i < no; i++) {
			if (pair_old[i] == SIZE_MAX &&
			    !strcmp(old_range->commits[i].patch_id,
				    new_range->commits[j].patch_id)) {
				pair_new[j] = i;
				pair_old[i] = j;
				break;
			}
		}
	}
	/* Pass 2: the same title, for patches whose content changed. */
	for (j = 0; j < nn; j++) {
		if (pair_new[j] != SIZE_MAX)
			continue;
		for (i = 0; i < no; i++) {
			if (pair_old[i] == SIZE_MAX &&
			    !strcmp(old_range->commits[i].subject,
				    new_range->commits[j].subject)) {
				pair_new[j] = i;
				pair_old[i] = j;
				break;
			}
		}
	}

	rd = xcalloc(1, sizeof(*rd));
	rd->entries = xcalloc(nn + no + 1, sizeof(*rd->entries));
	shown = xcalloc(no + 1, 1);
	/* git's range-diff.c output() order: an unmatched old patch shows
	 * once everything before it on the old side has been shown, new
	 * ones in their place, pairs in new order. */
	i = j = 0;
	while (!rc && (i < no || j < nn)) {
		struct gitrepo_rd_entry *e;

		while (i < no && shown[i])
			i++;
		if (i < no && pair_old[i] == SIZE_MAX) {
			e = &rd->entries[rd->nr++];
			e->status = GITREPO_RD_DROPPED;
			e->old_idx = i++;
			e->new_idx = SIZE_MAX;
			continue;
		}
		while (j < nn && pair_new[j] == SIZE_MAX) {
			e = &rd->entries[rd->nr++];
			e->status = GITREPO_RD_NEW;
			e->old_idx = SIZE_MAX;
			e->new_idx = j++;
		}
		if (j < nn) {
			k = pair_new[j];
			e = &rd->entries[rd->nr++];
			e->old_idx = k;
			e->new_idx = j;
			shown[k] = 1;
			if (!strcmp(old_range->commits[k].patch_id,
				    new_range->commits[j].patch_id) &&
			    same_message(&old_range->commits[k],
					 &new_range->commits[j])) {
				e->status = GITREPO_RD_UNCHANGED;
			} else {
				e->status = GITREPO_RD_MODIFIED;
				rc = interdiff(&e->interdiff,
					       &old_range->commits[k],
					       &new_range->commits[j]);
			}
			j++;
		}
	}
	free(shown);
	free(pair_new);
	free(pair_old);
	git_libgit2_shutdown();
	if (rc) {
		gitrepo_rangediff_free(rd);
		return rc;
	}
	*out = rd;
	return 0;
}

int gitrepo_rangediff_render(struct buf *out,
			     const struct gitrepo_rangediff *rd,
			     const struct gitrepo_range *old_range,
			     const struct gitrepo_range *new_range)
{
	size_t i, w,
		maxn = old_range->nr > new_range->nr ? old_range->nr :
						       new_range->nr;
	int rc = 0;

	w = (size_t)decimal_width(maxn);
	for (i = 0; i < rd->nr && !rc; i++) {
		const struct gitrepo_rd_entry *e = &rd->entries[i];
		const struct gitrepo_commit *oc =
			e->old_idx != SIZE_MAX ?
				&old_range->commits[e->old_idx] :
				NULL;
		const struct gitrepo_commit *nc =
			e->new_idx != SIZE_MAX ?
				&new_range->commits[e->new_idx] :
				NULL;
		static const char sym[] = { '=', '!', '>', '<' };

		if (oc)
			rc = buf_addf(out, "%*zu:  %.7s", (int)w,
				      e->old_idx + 1, oc->sha);
		else
			rc = buf_addf(out, "%*s:  -------", (int)w, "-");
		if (!rc)
			rc = buf_addf(out, " %c ", sym[e->status]);
		if (!rc && nc)
			rc = buf_addf(out, "%*zu:  %.7s %s\n", (int)w,
				      e->new_idx + 1, nc->sha, nc->subject);
		else if (!rc)
			rc = buf_addf(out, "%*s:  ------- %s\n", (int)w, "-",
				      oc->subject);
		if (!rc && e->interdiff)
			rc = buf_adds(out, e->interdiff);
	}
	return rc;
}

/* --- public-inbox v2 epochs ------------------------------------------------ */

struct gitrepo_epoch {
	git_repository *repo;
	git_oid tip;
	int have_tip;
};

int gitrepo_epoch_create(struct gitrepo_epoch **out, const char *path)
{
	git_repository_init_options opts;
	struct gitrepo_epoch *ep;
	int rc;

	*out = NULL;
	ep = xcalloc(1, sizeof(*ep));
	lib_init();
	git_repository_init_options_init(&opts,
					 GIT_REPOSITORY_INIT_OPTIONS_VERSION);
	opts.flags = GIT_REPOSITORY_INIT_BARE | GIT_REPOSITORY_INIT_MKPATH |
		     GIT_REPOSITORY_INIT_NO_REINIT;
	opts.initial_head = "master";
	rc = git_repository_init_ext(&ep->repo, path, &opts);
	if (rc) {
		rc = git_fail(rc == GIT_EEXISTS ? GIT_EINVALID : rc, 0,
			      "create repository");
		git_libgit2_shutdown();
		free(ep);
		return rc;
	}
	*out = ep;
	return 0;
}

/* A name or email git accepts: no '<', '>' or control bytes, trimmed,
 * never empty. */
static char *sig_part(const char *s, const char *fallback)
{
	size_t n = s ? strlen(s) : 0, i, j = 0;
	char *out = xmalloc(n + 1);

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '<' || c == '>' || c < 0x20 || c == 0x7f)
			continue;
		if (c == ' ' && (j == 0 || out[j - 1] == ' '))
			continue;
		out[j++] = (char)c;
	}
	while (j && out[j - 1] == ' ')
		j--;
	out[j] = '\0';
	if (!j) {
		free(out);
		out = xstrdup(fallback);
	}
	return out;
}

int gitrepo_epoch_add(struct gitrepo_epoch *ep, const void *message, size_t len,
		      const struct gitrepo_person *who, const char *subject)
{
	git_treebuilder *tb = NULL;
	git_signature *sig = NULL;
	git_tree *tree = NULL;
	git_commit *parent = NULL;
	git_oid blob, tree_id, commit;
	char *name = sig_part(who->name, "unknown");
	char *email = sig_part(who->email, "unknown");
	char *msg;
	int rc;

	msg = xasprintf("%s\n", subject && *subject ? subject : "(no subject)");
	rc = git_blob_create_from_buffer(&blob, ep->repo, message, len);
	if (rc) {
		rc = git_fail(rc, 0, "write message");
		goto out;
	}
	rc = git_treebuilder_new(&tb, ep->repo, NULL);
	if (!rc)
		rc = git_treebuilder_insert(NULL, tb, "m", &blob,
					    GIT_FILEMODE_BLOB);
	if (!rc)
		rc = git_treebuilder_write(&tree_id, tb);
	if (!rc)
		rc = git_tree_lookup(&tree, ep->repo, &tree_id);
	if (!rc)
		rc = git_signature_new(&sig, name, email, (git_time_t)who->time,
				       who->tz_minutes);
	if (!rc && ep->have_tip)
		rc = git_commit_lookup(&parent, ep->repo, &ep->tip);
	if (!rc)
		rc = git_commit_create_v(&commit, ep->repo, "refs/heads/master",
					 sig, sig, NULL, msg, tree,
					 parent ? 1 : 0, parent);
	if (rc) {
		rc = git_fail(rc, 0, "commit message");
		goto out;
	}
	git_oid_cpy(&ep->tip, &commit);
	ep->have_tip = 1;
out:
	git_commit_free(parent);
	git_tree_free(tree);
	git_signature_free(sig);
	git_treebuilder_free(tb);
	free(msg);
	free(name);
	free(email);
	return rc;
}

void gitrepo_epoch_free(struct gitrepo_epoch *ep)
{
	if (!ep)
		return;
	git_repository_free(ep->repo);
	git_libgit2_shutdown();
	free(ep);
}

/*
 * The mirror's primitives (outbound/mirror.h holds the policy: which
 * refs, which commits, where).
 */

int gitrepo_mirror_open(struct gitrepo **out, const char *path, int create)
{
	struct gitrepo *r;
	int rc;

	*out = NULL;
	lib_init();
	r = xcalloc(1, sizeof(*r));
	if (create)
		rc = git_repository_init(&r->repo, path, 1);
	else
		rc = git_repository_open_bare(&r->repo, path);
	if (rc < 0) {
		rc = git_fail(rc == GIT_ENOTFOUND ? GIT_ERROR : rc, 0,
			      create ? "create" : "open");
		return open_failed(r, rc, path);
	}
	*out = r;
	return 0;
}

int gitrepo_set_ca_file(const char *ca_file)
{
	int rc;

	lib_init();
	rc = git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, ca_file, NULL);
	if (rc < 0)
		rc = git_fail(rc, 0, "ca_file");
	git_libgit2_shutdown();
	return rc;
}

int gitrepo_ref_name_valid(const char *name)
{
	int valid = 0;

	if (git_reference_name_is_valid(&valid, name) < 0)
		return 0;
	return valid;
}

struct cred_state {
	const char *token;
	int tries;
};

/* Objects arrive: a long fetch is progress, not a hang (sdnotify.h). */
static int fetch_progress(const git_indexer_progress *stats, void *payload)
{
	(void)stats;
	(void)payload;
	sdnotify_watchdog();
	return 0;
}

static int cred_cb(git_credential **out, const char *url, const char *user,
		   unsigned int allowed, void *payload)
{
	struct cred_state *cs = payload;

	(void)url;
	(void)user;
	/* Offer the token once; a second call means it was refused. */
	if (!cs->token || cs->tries++ ||
	    !(allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT))
		return GIT_EAUTH;
	return git_credential_userpass_plaintext_new(out, "oauth2", cs->token);
}

/*
 * An anonymous remote that ignores url.*.insteadOf: the forge's URL is
 * the one configured, whatever a gitconfig on the host says.  (Skipping
 * that lookup also avoids a leak in libgit2 1.5's pcre2 matching of
 * config names.)
 */
static int anon_remote(git_remote **out, struct gitrepo *repo, const char *url)
{
	git_remote_create_options ro;
	int rc;

	rc = git_remote_create_options_init(&ro,
					    GIT_REMOTE_CREATE_OPTIONS_VERSION);
	if (rc >= 0) {
		ro.repository = repo->repo;
		ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF;
		rc = git_remote_create_with_opts(out, url, &ro);
	}
	return rc < 0 ? git_fail(rc, 0, "remote") : 0;
}

int gitrepo_fetch(struct gitrepo *repo, const char *url, const char *token,
		  const struct strlist *specs)
{
	git_fetch_options fo;
	git_remote *remote = NULL;
	git_strarray arr;
	struct cred_state cs = { token && *token ? token : NULL, 0 };
	int rc;

	/* The _INIT macro leaves fields out (-Wmissing-field-initializers). */
	rc = git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
	if (rc < 0) {
		rc = git_fail(rc, 0, "fetch options");
		goto out;
	}
	rc = anon_remote(&remote, repo, url);
	if (rc < 0)
		goto out;
	fo.callbacks.credentials = cred_cb;
	fo.callbacks.transfer_progress = fetch_progress;
	fo.callbacks.payload = &cs;
	fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	fo.prune = GIT_FETCH_NO_PRUNE;
	fo.update_fetchhead = 0;
	arr.strings = specs->items;
	arr.count = specs->nr;
	rc = git_remote_fetch(remote, &arr, &fo, "patchbridge: fetch");
	if (rc < 0)
		rc = git_fail(rc, 1, "fetch");
out:
	git_remote_free(remote);
	return rc;
}

struct push_state {
	struct cred_state cs;
	char *rejected; /* the server's status of a refused reference */
};

static int push_cred_cb(git_credential **out, const char *url, const char *user,
			unsigned int allowed, void *payload)
{
	struct push_state *ps = payload;

	return cred_cb(out, url, user, allowed, &ps->cs);
}

static int push_ref_cb(const char *refname, const char *status, void *payload)
{
	struct push_state *ps = payload;

	(void)refname;
	if (status && !ps->rejected)
		ps->rejected = xstrdup(status);
	return 0;
}

int gitrepo_push(struct gitrepo *repo, const char *url, const char *token,
		 const char *local_ref, const char *remote_ref, int force)
{
	git_push_options po;
	git_remote *remote = NULL;
	git_strarray arr;
	struct push_state ps = { { token && *token ? token : NULL, 0 }, NULL };
	const git_error *e;
	char *spec = NULL;
	int rc;

	if (!gitrepo_ref_name_valid(local_ref) ||
	    !gitrepo_ref_name_valid(remote_ref))
		return err_set(PB_EINVAL, "push: bad reference name");
	spec = xasprintf("%s%s:%s", force ? "+" : "", local_ref, remote_ref);
	rc = git_push_options_init(&po, GIT_PUSH_OPTIONS_VERSION);
	if (rc < 0) {
		rc = git_fail(rc, 0, "push options");
		goto out;
	}
	rc = anon_remote(&remote, repo, url);
	if (rc < 0)
		goto out;
	po.callbacks.credentials = push_cred_cb;
	po.callbacks.push_update_reference = push_ref_cb;
	po.callbacks.payload = &ps;
	arr.strings = &spec;
	arr.count = 1;
	rc = git_remote_push(remote, &arr, &po);
	e = rc < 0 ? git_error_last() : NULL;
	/* libgit2 1.5 says a 403 only in words: the role is missing */
	if (rc == GIT_EAUTH ||
	    (e && e->message && strstr(e->message, "status code: 403"))) {
		rc = err_set(PB_EPERM, "push: %s",
			     e && e->message ? e->message :
					       "the credentials were refused");
	} else if (rc < 0) {
		rc = git_fail(rc, 1, "push");
	} else if (ps.rejected) {
		rc = err_set(PB_ERROR, "push %s: refused: %s", remote_ref,
			     ps.rejected);
	}
out:
	free(ps.rejected);
	free(spec);
	git_remote_free(remote);
	return rc;
}

int gitrepo_has_commit(struct gitrepo *repo, const char *sha)
{
	git_commit *c = NULL;
	git_oid oid;

	if (!sha || git_oid_fromstr(&oid, sha) < 0)
		return 0;
	if (git_commit_lookup(&c, repo->repo, &oid) < 0)
		return 0;
	git_commit_free(c);
	return 1;
}

int gitrepo_ref_set(struct gitrepo *repo, const char *name, const char *sha,
		    const char *log_message)
{
	git_reference *ref = NULL;
	git_oid oid;
	int rc;

	if (!sha || git_oid_fromstr(&oid, sha) < 0)
		return err_set(PB_EINVAL, "set reference: bad commit id");
	rc = git_reference_create(&ref, repo->repo, name, &oid, 1, log_message);
	if (rc < 0)
		return git_fail(rc, 0, "set reference");
	git_reference_free(ref);
	return 0;
}

/* One patch of gitrepo_am() applied onto *tip, *tip moved to the commit. */
static int am_one(git_oid *tip, git_repository *repo,
		  const struct gitrepo_am_patch *p, const git_signature *cs)
{
	git_commit *parent = NULL;
	git_tree *ptree = NULL, *tree = NULL;
	git_diff *diff = NULL;
	git_index *index = NULL;
	git_signature *as = NULL;
	git_oid tree_id;
	char *name = sig_part(p->author.name, "unknown");
	char *email = sig_part(p->author.email, "unknown");
	int rc;

	rc = git_commit_lookup(&parent, repo, tip);
	if (!rc)
		rc = git_commit_tree(&ptree, parent);
	if (rc) {
		rc = git_fail(rc, 0, "read the commit to apply onto");
		goto out;
	}
	rc = git_diff_from_buffer(&diff, p->patch, p->patch_len);
	if (rc) {
		rc = git_fail(GIT_EINVALID, 0, "read the patch");
		goto out;
	}
	/* git apply's rules: the context must match, no fuzz */
	rc = git_apply_to_tree(&index, repo, ptree, diff, NULL);
	if (rc) {
		rc = git_fail(GIT_EINVALID, 0, "apply the patch");
		goto out;
	}
	rc = git_index_write_tree_to(&tree_id, index, repo);
	if (!rc)
		rc = git_tree_lookup(&tree, repo, &tree_id);
	if (!rc)
		rc = git_signature_new(&as, name, email,
				       (git_time_t)p->author.time,
				       p->author.tz_minutes);
	if (!rc)
		rc = git_commit_create_v(tip, repo, NULL, as, cs, NULL,
					 p->message, tree, 1, parent);
	if (rc)
		rc = git_fail(rc, 0, "commit the patch");
out:
	git_signature_free(as);
	git_tree_free(tree);
	git_index_free(index);
	git_diff_free(diff);
	git_tree_free(ptree);
	git_commit_free(parent);
	free(name);
	free(email);
	return rc;
}

int gitrepo_am(char out[GITREPO_HEXSZ + 1], size_t *failed,
	       struct gitrepo *repo, const char *base,
	       const struct gitrepo_am_patch *patches, size_t nr,
	       const struct gitrepo_person *committer)
{
	git_signature *cs = NULL;
	char *name = sig_part(committer->name, "patchbridge");
	char *email = sig_part(committer->email, "patchbridge");
	git_oid tip;
	size_t i;
	int rc;

	out[0] = '\0';
	*failed = 0;
	if (!base || git_oid_fromstr(&tip, base) < 0 ||
	    !gitrepo_has_commit(repo, base)) {
		rc = err_set(PB_ENOTFOUND, "base %s is not in the repository",
			     base ? base : "(none)");
		goto out;
	}
	rc = committer->time ? git_signature_new(&cs, name, email,
						 (git_time_t)committer->time,
						 committer->tz_minutes) :
			       git_signature_now(&cs, name, email);
	if (rc) {
		rc = git_fail(rc, 0, "committer");
		goto out;
	}
	for (i = 0; i < nr; i++) {
		rc = am_one(&tip, repo->repo, &patches[i], cs);
		if (rc) {
			*failed = i;
			goto out;
		}
	}
	git_oid_tostr(out, GITREPO_HEXSZ + 1, &tip);
out:
	git_signature_free(cs);
	free(name);
	free(email);
	return rc;
}
