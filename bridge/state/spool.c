/*
 * spool - the durable hand-off of inbound mail.  See spool.h.
 *
 * Every operation works relative to directory descriptors opened once by
 * spool_open() (openat, renameat, fsync on the directory), so paths are
 * built only for messages and a rename of the spool directory while we
 * run cannot send a record somewhere else.
 */
#include "state/spool.h"

#include "core/preflight.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/perm.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SPOOL_DIR_MODE 02770
#define SPOOL_FILE_MODE 0640
#define REASON_SUFFIX ".reason"
/* The largest record file a reader accepts. */
#define SPOOL_RECORD_MAX ((size_t)SPOOL_HEADER_MAX + PB_MAIL_MAX_MAX)

static const char *const area_names[SPOOL_AREA_COUNT] = {
	[SPOOL_TMP] = "tmp",   [SPOOL_NEW] = "new",   [SPOOL_CUR] = "cur",
	[SPOOL_DONE] = "done", [SPOOL_DEAD] = "dead",
};

struct spool {
	char *dir; /* as given to spool_open(), for messages */
	unsigned flags; /* enum spool_flags */
	int fd[SPOOL_AREA_COUNT]; /* O_DIRECTORY descriptors */
	size_t max_records; /* writer: records allowed in new/ */
	size_t max_message; /* writer: raw message bytes */
	/* Reader: the oldest names of new/ at the last scan, sorted, and
	 * the next one to try. */
	struct strlist batch;
	size_t batch_next;
	/* Writer: the records waiting in new/, as counted at waiting_ms
	 * (CLOCK_MONOTONIC; 0: never) plus those put since (see
	 * "Counting" in spool_put()); and the group commit of new/'s
	 * fsync (see "The fsync of new/").  Under lock. */
	pthread_mutex_t lock;
	pthread_cond_t synced_cond;
	size_t waiting;
	int64_t waiting_ms;
	uint64_t renamed; /* tickets handed out: renames into new/ */
	uint64_t synced; /* every ticket up to this one is durable */
	uint64_t failed; /* a ticket up to this one may not be */
	int syncing; /* a writer is in fsync(new/) for the others */
	int sync_errno; /* of the last failed fsync(new/) */
};

/* Makes names unique among the threads of a process (see spool.h). */
static atomic_ulong put_seq;

/* The header keys of format version 1, in their fixed order. */
enum hdr_key {
	HDR_VERSION,
	HDR_TIME,
	HDR_QUEUE_ID,
	HDR_MESSAGE_ID,
	HDR_SENDER,
	HDR_KIND,
	HDR_PROJECT,
	HDR_MR,
	HDR_REVISION,
	HDR_PATCH,
	HDR_SIZE,
	HDR_RECEIVED, /* version 2 on */
	HDR__COUNT
};

static const char *const hdr_keys[HDR__COUNT] = {
	[HDR_VERSION] = "PB-Spool",  [HDR_TIME] = "Spool-Time",
	[HDR_QUEUE_ID] = "Queue-Id", [HDR_MESSAGE_ID] = "Message-Id",
	[HDR_SENDER] = "Sender",     [HDR_KIND] = "Kind",
	[HDR_PROJECT] = "Project",   [HDR_MR] = "MR",
	[HDR_REVISION] = "Revision", [HDR_PATCH] = "Patch",
	[HDR_SIZE] = "Size",	     [HDR_RECEIVED] = "Received-Size",
};

const char *spool_area_name(enum spool_area area)
{
	BUG_ON((unsigned)area >= SPOOL_AREA_COUNT);
	return area_names[area];
}

/*
 * err_from_errno(), except that a file too large for RLIMIT_FSIZE is
 * temporary like a full disk: the milter must tempfail either way.
 */
static int spool_errno(int e)
{
	if (e == EFBIG)
		return PB_ETEMP;
	return err_from_errno(e);
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_alnum(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_kind_char(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || c == '-' || c == '_';
}

/* True when s[0..len) is a run of min..max bytes accepted by ok(). */
static int run_of(const char *s, size_t len, size_t min, size_t max,
		  int (*ok)(int c))
{
	size_t i;

	if (len < min || len > max)
		return 0;
	for (i = 0; i < len; i++)
		if (!ok((unsigned char)s[i]))
			return 0;
	return 1;
}

int spool_name_valid(const char *name)
{
	/* <16 digits>.<1..32 alnum>.<1..10 digits>.<1..20 digits> */
	static const struct {
		size_t min, max;
		int (*ok)(int c);
	} parts[] = {
		{ 16, 16, is_digit },
		{ 1, SPOOL_NAME_ID_MAX, is_alnum },
		{ 1, 10, is_digit },
		{ 1, 20, is_digit },
	};
	const char *p = name;
	size_t i;

	if (!name || strlen(name) > SPOOL_NAME_MAX)
		return 0;
	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);

		if ((dot != NULL) != (i + 1 < sizeof(parts) / sizeof(parts[0])))
			return 0;
		if (!run_of(p, len, parts[i].min, parts[i].max, parts[i].ok))
			return 0;
		p += len + 1;
	}
	return 1;
}

static int check_name(const char *name)
{
	char shown[PB_LOG_QUOTE_MAX];

	if (spool_name_valid(name))
		return 0;
	return err_set(PB_EINVAL, "spool: '%s' is not a record name",
		       printable_copy(shown, sizeof(shown), name,
				      name ? strlen(name) : 0));
}

/* ---- opening ---------------------------------------------------------- */

/*
 * Create name in dirfd with mode 2770 unless it exists.  mkdir() applies
 * the umask and ignores the setgid bit, hence the chmod.  *created is set
 * when we made it.
 */
static int make_dir(int *created, int dirfd, const char *name,
		    const char *shown)
{
	*created = 0;
	if (mkdirat(dirfd, name, SPOOL_DIR_MODE) < 0) {
		if (errno == EEXIST)
			return 0;
		return err_set_errno(err_from_errno(errno), "spool: mkdir %s",
				     shown);
	}
	*created = 1;
	if (fchmodat(dirfd, name, SPOOL_DIR_MODE, 0) < 0)
		return err_set_errno(err_from_errno(errno), "spool: chmod %s",
				     shown);
	return 0;
}

/* The access the roles in flags need on area (see spool.h). */
static int area_access(enum spool_area area, unsigned flags)
{
	int need = 0;

	if (flags & SPOOL_READER)
		need = R_OK | W_OK | X_OK;
	if ((flags & SPOOL_INSPECT) && area != SPOOL_TMP)
		need |= R_OK | X_OK;
	if (flags & SPOOL_WRITER) {
		if (area == SPOOL_TMP)
			need |= W_OK | X_OK;
		else if (area == SPOOL_NEW)
			need |= R_OK | W_OK | X_OK;
	}
	return need;
}

/* An inspecting handle creates nothing (see spool.h). */
static int inspect_only(unsigned flags)
{
	return flags == SPOOL_INSPECT;
}

/*
 * The layout every spool directory must have (see spool.h): a real
 * directory, with the spool's owner and group, that others may not
 * write.  what says how shown differs; the message names what is
 * expected, with the command that makes it so.
 */
static int refuse_dir(const char *shown, const char *what,
		      const struct stat *top)
{
	char owner[PERM_NAME_MAX], group[PERM_NAME_MAX];
	struct preflight_owner o;

	perm_user(owner, sizeof(owner), top->st_uid);
	perm_group(group, sizeof(group), top->st_gid);
	preflight_owner_stat(&o, top, 1);
	return err_set(PB_EPERM,
		       "spool: %s %s; expected a real directory, not a "
		       "symbolic link, owned by the spool's owner %s, group "
		       "%s, mode 2770 (never writable by others), as "
		       "`install -d -o %s -g %s -m 2770 %s` makes it; the "
		       "spool is not used until then",
		       shown, what, owner, group, o.user, o.group, shown);
}

/*
 * This user may not use shown as the role needs (need: R_OK, W_OK,
 * X_OK): say who it is and what the layout expects, so that the fix is
 * plain (a missing group membership, a directory made by root ...).
 */
static int access_refused(const char *shown, int need, const struct stat *top)
{
	char me[PERM_NAME_MAX], owner[PERM_NAME_MAX], group[PERM_NAME_MAX];

	struct preflight_owner o;

	perm_user(me, sizeof(me), geteuid());
	perm_user(owner, sizeof(owner), top->st_uid);
	perm_group(group, sizeof(group), top->st_gid);
	preflight_owner_stat(&o, top, 1);
	return err_set(PB_EPERM,
		       "spool: %s: %s lacks %s%s%s access; expected the "
		       "spool's owner %s, group %s (both programs' users in "
		       "it), mode 2770, as `install -d -o %s -g %s -m 2770 "
		       "%s` makes it",
		       shown, me, need & R_OK ? "r" : "",
		       need & W_OK ? "w" : "", need & X_OK ? "x" : "", owner,
		       group, o.user, o.group, shown);
}

/* How st differs from the layout of top (NULL: it does not). */
static const char *dir_differs(char *buf, size_t size, const struct stat *st,
			       const struct stat *top)
{
	char who[PERM_NAME_MAX];

	if (!S_ISDIR(st->st_mode))
		return "is not a directory";
	if (st->st_uid != top->st_uid) {
		snprintf(buf, size, "is owned by %s",
			 perm_user(who, sizeof(who), st->st_uid));
		return buf;
	}
	if (st->st_gid != top->st_gid) {
		snprintf(buf, size, "has the group %s",
			 perm_group(who, sizeof(who), st->st_gid));
		return buf;
	}
	if (st->st_mode & S_IWOTH) {
		snprintf(buf, size, "is writable by others (mode %04o)",
			 (unsigned)(st->st_mode & 07777));
		return buf;
	}
	return NULL;
}

/*
 * Create (when missing and ours to create), open and check the
 * subdirectory area of top, whose stat is top_st.  A link or anything
 * but a directory of the spool's owner, group and mode is refused before
 * any record in it is read, moved or removed.
 */
static int open_area(struct spool *sp, int top, const struct stat *top_st,
		     enum spool_area area, const char *shown, int *created)
{
	const char *name = area_names[area];
	int need = area_access(area, sp->flags), rc = 0;
	char why[PERM_NAME_MAX + 64];
	const char *differs;
	struct stat st;

	*created = 0;
	if (fstatat(top, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		int mine = top_st->st_uid == geteuid();

		if (errno != ENOENT)
			return err_set_errno(err_from_errno(errno), "spool: %s",
					     shown);
		if (!need && (!mine || inspect_only(sp->flags)))
			return 0; /* not ours to use, nor to make */
		if (inspect_only(sp->flags))
			return err_set(PB_ENOTFOUND, "spool: %s does not exist",
				       shown);
		/* Only the spool's owner makes its directories: one the
		 * milter made would be the milter's, which the daemon
		 * refuses (spool.h, "Permissions"). */
		if (!mine)
			return refuse_dir(shown, "is missing", top_st);
		rc = make_dir(created, top, name, shown);
		if (rc)
			return rc;
	} else if (S_ISLNK(st.st_mode)) {
		return refuse_dir(shown, "is a symbolic link", top_st);
	}
	if (!need)
		return 0; /* a writer has no business in cur/, done/, dead/ */
	rc = dir_openat_nofollow(&sp->fd[area], top, name, shown);
	if (rc && errno == EACCES)
		return access_refused(shown, need, top_st);
	if (rc == PB_EPERM) /* made a link since the look above */
		return refuse_dir(shown, "is a symbolic link", top_st);
	if (rc)
		return rc;
	/* What counts is the directory opened, not what the name showed. */
	if (fstat(sp->fd[area], &st) < 0)
		return err_set_errno(err_from_errno(errno), "spool: stat %s",
				     shown);
	differs = dir_differs(why, sizeof(why), &st, top_st);
	if (differs)
		return refuse_dir(shown, differs, top_st);
	if (faccessat(sp->fd[area], ".", need, AT_EACCESS) < 0) {
		if (errno == EACCES || errno == EPERM || errno == EROFS)
			return access_refused(shown, need, top_st);
		return err_set_errno(err_from_errno(errno), "spool: %s", shown);
	}
	return 0;
}

/*
 * The spool directory itself: a real directory that others may not
 * write, and for the daemon (SPOOL_READER) its own: whoever owns it may
 * rearrange what the daemon reads and removes.
 */
static int check_top(const char *dir, int top, struct stat *st, unsigned flags)
{
	char who[PERM_NAME_MAX], me[PERM_NAME_MAX];

	if (fstat(top, st) < 0)
		return err_set_errno(err_from_errno(errno), "spool: stat %s",
				     dir);
	if ((flags & SPOOL_READER) && st->st_uid != geteuid() &&
	    geteuid() == 0) {
		struct preflight_owner o;

		/* Root: not "give root the spool", but run as its owner. */
		preflight_owner_stat(&o, st, 0);
		return err_set(PB_EPERM,
			       "spool: %s is owned by %s: the daemon runs as "
			       "root; run it as %s: runuser -u %s -- "
			       "patchbridge run",
			       dir, perm_user(who, sizeof(who), st->st_uid),
			       o.user, o.user);
	}
	if ((flags & SPOOL_READER) && st->st_uid != geteuid()) {
		struct preflight_owner o;

		preflight_owner_dirs(&o, NULL, NULL, 1);
		return err_set(PB_EPERM,
			       "spool: %s is owned by %s: the daemon, running "
			       "as %s, must own its spool directory, mode "
			       "2770 (never writable by others) "
			       "(install -d -o %s -m 2770 %s)",
			       dir, perm_user(who, sizeof(who), st->st_uid),
			       perm_user(me, sizeof(me), geteuid()), o.user,
			       dir);
	}
	if (st->st_mode & S_IWOTH)
		return err_set(PB_EPERM,
			       "spool: %s is writable by others (mode %04o): "
			       "expected owner %s, mode 2770 (chmod o-w %s)",
			       dir, (unsigned)(st->st_mode & 07777),
			       perm_user(who, sizeof(who), st->st_uid), dir);
	return 0;
}

int spool_open(struct spool **out, const char *dir, unsigned flags)
{
	struct spool *sp;
	struct stat top_st;
	int top = -1, rc = 0, created, any = 0, i;

	*out = NULL;
	if (!dir || !*dir || !flags ||
	    (flags & ~(unsigned)(SPOOL_WRITER | SPOOL_READER | SPOOL_INSPECT)))
		return err_set(PB_EINVAL, "spool_open: bad arguments");
	sp = xcalloc(1, sizeof(*sp));
	pthread_mutex_init(&sp->lock, NULL);
	pthread_cond_init(&sp->synced_cond, NULL);
	sp->dir = xstrdup(dir);
	sp->flags = flags;
	sp->max_records = SPOOL_MAX_RECORDS_DEFAULT;
	sp->max_message = PB_MAIL_MAX_DEFAULT;
	strlist_init(&sp->batch);
	for (i = 0; i < SPOOL_AREA_COUNT; i++)
		sp->fd[i] = -1;

	if (!inspect_only(flags))
		rc = make_dir(&created, AT_FDCWD, dir, dir);
	if (!rc) {
		rc = dir_open_nofollow(&top, dir);
		if (rc && errno == EACCES && stat(dir, &top_st) == 0)
			rc = access_refused(dir, R_OK | X_OK, &top_st);
		else if (rc)
			rc = err_prefix(rc, "spool");
	} else {
		rc = err_prefix(rc, "spool");
	}
	if (rc)
		goto out;
	rc = check_top(dir, top, &top_st, flags);
	for (i = 0; !rc && i < SPOOL_AREA_COUNT; i++) {
		char *shown = xasprintf("%s/%s", dir, area_names[i]);

		rc = open_area(sp, top, &top_st, i, shown, &created);
		any |= created;
		free(shown);
	}
	if (rc)
		goto out;
	/* Make the new subdirectories durable before records go in. */
	if (any && fsync(top) < 0)
		rc = err_set_errno(err_from_errno(errno), "spool: fsync %s",
				   dir);
out:
	if (top >= 0)
		close(top);
	if (rc)
		spool_free(sp);
	else
		*out = sp;
	return rc;
}

void spool_free(struct spool *sp)
{
	int i;

	if (!sp)
		return;
	for (i = 0; i < SPOOL_AREA_COUNT; i++)
		if (sp->fd[i] >= 0)
			close(sp->fd[i]);
	strlist_release(&sp->batch);
	pthread_cond_destroy(&sp->synced_cond);
	pthread_mutex_destroy(&sp->lock);
	free(sp->dir);
	free(sp);
}

int spool_set_limits(struct spool *sp, size_t max_records, size_t max_message)
{
	if (max_message > PB_MAIL_MAX_MAX)
		return err_set(PB_EINVAL,
			       "spool: max message size %zu above %d bytes",
			       max_message, PB_MAIL_MAX_MAX);
	sp->max_records = max_records ? max_records : SPOOL_MAX_RECORDS_DEFAULT;
	sp->max_message = max_message ? max_message : PB_MAIL_MAX_DEFAULT;
	return 0;
}

/* ---- directory listing ------------------------------------------------ */

/* A writer-only handle has not opened cur/, done/ and dead/. */
static int check_area(struct spool *sp, enum spool_area area)
{
	BUG_ON((unsigned)area >= SPOOL_AREA_COUNT);
	if (sp->fd[area] < 0)
		return err_set(PB_EPERM,
			       "spool: %s/ needs a SPOOL_READER handle",
			       area_names[area]);
	return 0;
}

/*
 * Call fn for every entry of area whose name does not start with "."
 * (a fresh directory stream each time, so threads never share one).
 * fn returns 0 to go on, 1 to stop, or a negative error.
 */
static int each_entry(struct spool *sp, enum spool_area area,
		      int (*fn)(const char *name, void *arg), void *arg)
{
	struct dirent *e;
	DIR *d;
	int fd, rc = 0;

	rc = check_area(sp, area);
	if (rc)
		return rc;
	fd = openat(sp->fd[area], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set_errno(spool_errno(errno), "spool: open %s/%s",
				     sp->dir, area_names[area]);
	d = fdopendir(fd);
	if (!d) {
		rc = err_set_errno(spool_errno(errno), "spool: open %s/%s",
				   sp->dir, area_names[area]);
		close(fd);
		return rc;
	}
	for (;;) {
		errno = 0;
		e = readdir(d);
		if (!e) {
			if (errno)
				rc = err_set_errno(spool_errno(errno),
						   "spool: read %s/%s", sp->dir,
						   area_names[area]);
			break;
		}
		if (e->d_name[0] == '.')
			continue;
		rc = fn(e->d_name, arg);
		if (rc)
			break;
	}
	closedir(d);
	return rc < 0 ? rc : 0;
}

struct count_ctx {
	size_t n;
	size_t stop; /* 0: count all */
	int valid_only;
};

static int count_one(const char *name, void *arg)
{
	struct count_ctx *c = arg;

	if (c->valid_only && !spool_name_valid(name))
		return 0;
	c->n++;
	return c->stop && c->n >= c->stop;
}

int spool_count(size_t *out, struct spool *sp, enum spool_area area)
{
	struct count_ctx c = { 0, 0, area != SPOOL_TMP };
	int rc;

	*out = 0;
	rc = each_entry(sp, area, count_one, &c);
	if (!rc)
		*out = c.n;
	return rc;
}

struct stat_ctx {
	size_t n;
	char oldest[SPOOL_NAME_MAX + 1]; /* the smallest name: the oldest */
};

static int stat_one(const char *name, void *arg)
{
	struct stat_ctx *c = arg;

	if (!spool_name_valid(name))
		return 0;
	c->n++;
	if (!c->oldest[0] || strcmp(name, c->oldest) < 0)
		snprintf(c->oldest, sizeof(c->oldest), "%s", name);
	return 0;
}

int spool_area_stat(size_t *count, int64_t *oldest, struct spool *sp,
		    enum spool_area area)
{
	struct stat_ctx c;
	uint64_t usec;
	int rc;

	*count = 0;
	*oldest = 0;
	memset(&c, 0, sizeof(c));
	BUG_ON(area == SPOOL_TMP);
	rc = each_entry(sp, area, stat_one, &c);
	if (rc)
		return rc;
	*count = c.n;
	/* a valid name starts with 16 digits of microseconds */
	if (c.oldest[0] && mem_to_u64(c.oldest, 16, UINT64_MAX, &usec))
		*oldest = (int64_t)(usec / 1000000);
	return 0;
}

int spool_probe(struct spool *sp)
{
	char block[512];
	int fd, rc;

	rc = check_area(sp, SPOOL_TMP);
	if (rc)
		return rc;
	fd = openat(sp->fd[SPOOL_TMP], ".", O_TMPFILE | O_WRONLY | O_CLOEXEC,
		    0600);
	if (fd < 0) {
		/* a file system without O_TMPFILE: spool_open() checked the
		 * write permission, which is what can be known */
		if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)
			return 0;
		return err_set_errno(spool_errno(errno), "spool: %s/tmp",
				     sp->dir);
	}
	memset(block, 0, sizeof(block));
	rc = fd_write_all(fd, block, sizeof(block));
	if (rc)
		rc = err_prefix(rc, "spool: %s/tmp", sp->dir);
	close(fd);
	return rc;
}

/* spool_body_file() without O_TMPFILE: ".body.<16 random hex digits>". */
static int body_file_named(int *out, struct spool *sp)
{
	unsigned char rnd[8];
	char nm[32];
	int tries, fd;
	size_t i;

	for (tries = 0; tries < 8; tries++) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return err_set_errno(PB_ETEMP, "getrandom");
		memcpy(nm, ".body.", 6);
		for (i = 0; i < sizeof(rnd); i++)
			snprintf(nm + 6 + 2 * i, 3, "%02x", rnd[i]);
		fd = openat(sp->fd[SPOOL_TMP], nm,
			    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0)
			return err_set_errno(spool_errno(errno),
					     "spool: create %s/tmp/%s", sp->dir,
					     nm);
		if (unlinkat(sp->fd[SPOOL_TMP], nm, 0) < 0) {
			int e = errno;

			close(fd);
			return err_set_errno(spool_errno(e),
					     "spool: remove %s/tmp/%s", sp->dir,
					     nm);
		}
		*out = fd;
		return 0;
	}
	return err_set(PB_ETEMP, "spool: %s/tmp: no free name", sp->dir);
}

int spool_body_file(int *out, struct spool *sp)
{
	int fd, rc;

	*out = -1;
	rc = check_area(sp, SPOOL_TMP);
	if (rc)
		return rc;
	fd = openat(sp->fd[SPOOL_TMP], ".", O_TMPFILE | O_RDWR | O_CLOEXEC,
		    0600);
	if (fd < 0 &&
	    (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL))
		return body_file_named(out, sp);
	if (fd < 0)
		return err_set_errno(spool_errno(errno), "spool: %s/tmp",
				     sp->dir);
	*out = fd;
	return 0;
}

static int is_reason_name(const char *name)
{
	size_t len = strlen(name), slen = strlen(REASON_SUFFIX);

	return len > slen && strcmp(name + len - slen, REASON_SUFFIX) == 0;
}

struct list_ctx {
	struct strlist *names;
	struct spool *sp;
	enum spool_area area;
	int warn; /* log names that are not record names */
};

static int list_one(const char *name, void *arg)
{
	struct list_ctx *l = arg;
	char shown[PB_LOG_QUOTE_MAX];

	if (spool_name_valid(name)) {
		strlist_push(l->names, name);
		return 0;
	}
	if (l->area == SPOOL_DEAD && is_reason_name(name))
		return 0;
	if (l->warn)
		log_warn("spool: %s/%s: ignoring '%s', not a record name",
			 l->sp->dir, area_names[l->area],
			 printable_copy(shown, sizeof(shown), name,
					strlen(name)));
	return 0;
}

/* The record names of area, sorted oldest first. */
static int list_area(struct strlist *out, struct spool *sp,
		     enum spool_area area, int warn)
{
	struct list_ctx l = { out, sp, area, warn };
	int rc;

	rc = each_entry(sp, area, list_one, &l);
	if (!rc)
		strlist_sort(out);
	return rc;
}

/* ---- the record format ------------------------------------------------ */

static int hdr_add_str(struct buf *b, enum hdr_key key, const char *val)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)(val ? val : "");
	int rc;

	rc = buf_addf(b, "%s: ", hdr_keys[key]);
	for (; !rc && *p; p++) {
		if (*p >= 0x20 && *p <= 0x7e && *p != '%') {
			rc = buf_addch(b, *p);
		} else {
			char esc[3] = { '%', hex[*p >> 4], hex[*p & 15] };

			rc = buf_add(b, esc, sizeof(esc));
		}
	}
	return rc ? rc : buf_addch(b, '\n');
}

static int hdr_add_num(struct buf *b, enum hdr_key key, int64_t val)
{
	return buf_addf(b, "%s: %" PRId64 "\n", hdr_keys[key], val);
}

static int check_str(const char *what, const char *val, size_t max)
{
	if (val && strlen(val) > max)
		return err_set(PB_EINVAL, "spool: %s longer than %zu bytes",
			       what, max);
	return 0;
}

static int check_meta(const struct spool_meta *m)
{
	int rc;
	const char *kind = m->kind ? m->kind : "";
	int has_project = m->project && *m->project;

	if ((rc = check_str("queue id", m->queue_id, SPOOL_QUEUE_ID_MAX)) ||
	    (rc = check_str("Message-ID", m->message_id, SPOOL_MSGID_MAX)) ||
	    (rc = check_str("sender", m->sender, SPOOL_SENDER_MAX)) ||
	    (rc = check_str("project", m->project, SPOOL_PROJECT_MAX)))
		return rc;
	if (*kind &&
	    !run_of(kind, strlen(kind), 1, SPOOL_KIND_MAX, is_kind_char))
		return err_set(PB_EINVAL, "spool: kind is not a token");
	if (has_project ? m->iid <= 0 : m->iid != 0)
		return err_set(PB_EINVAL, "spool: MR %" PRId64 " %s a project",
			       m->iid, has_project ? "with" : "without");
	if (m->revision < 0 || m->patch < 0)
		return err_set(PB_EINVAL, "spool: negative revision or patch");
	return 0;
}

static int format_header(struct buf *b, const struct spool_meta *m, int64_t now,
			 size_t len)
{
	int rc;

	if ((rc = hdr_add_num(b, HDR_VERSION, SPOOL_FORMAT_VERSION)) ||
	    (rc = hdr_add_num(b, HDR_TIME, now)) ||
	    (rc = hdr_add_str(b, HDR_QUEUE_ID, m->queue_id)) ||
	    (rc = hdr_add_str(b, HDR_MESSAGE_ID, m->message_id)) ||
	    (rc = hdr_add_str(b, HDR_SENDER, m->sender)) ||
	    (rc = hdr_add_str(b, HDR_KIND, m->kind)) ||
	    (rc = hdr_add_str(b, HDR_PROJECT, m->project)) ||
	    (rc = hdr_add_num(b, HDR_MR, m->iid)) ||
	    (rc = hdr_add_num(b, HDR_REVISION, m->revision)) ||
	    (rc = hdr_add_num(b, HDR_PATCH, m->patch)) ||
	    (rc = hdr_add_num(b, HDR_SIZE, (int64_t)len)) ||
	    (rc = hdr_add_num(b, HDR_RECEIVED,
			      (int64_t)(m->received > len ? m->received :
							    len))) ||
	    (rc = buf_addch(b, '\n')))
		return err_set(rc, "spool: header longer than %d bytes",
			       SPOOL_HEADER_MAX);
	return 0;
}

void spool_record_init(struct spool_record *rec)
{
	memset(rec, 0, sizeof(*rec));
	buf_init(&rec->message, PB_MAIL_MAX_MAX);
}

void spool_record_release(struct spool_record *rec)
{
	free(rec->queue_id);
	free(rec->message_id);
	free(rec->sender);
	free(rec->kind);
	free(rec->project);
	buf_release(&rec->message);
	spool_record_init(rec);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1; /* lower case is not what the writer writes */
}

/* Decode a %XX-encoded value of at most max bytes into a new string. */
static int decode_value(char **out, const char *p, size_t len, size_t max,
			int line)
{
	struct buf b = BUF_INIT(max);
	size_t i;
	int rc = 0;

	for (i = 0; i < len && !rc; i++) {
		unsigned char c = (unsigned char)p[i];
		int hi, lo;

		if (c < 0x20 || c > 0x7e) {
			rc = err_set(PB_EINVAL, "line %d: raw byte 0x%02x",
				     line, c);
		} else if (c != '%') {
			rc = buf_addch(&b, c);
		} else if (i + 2 >= len) {
			rc = err_set(PB_EINVAL, "line %d: cut %%-escape", line);
		} else if ((hi = hexval((unsigned char)p[i + 1])) < 0 ||
			   (lo = hexval((unsigned char)p[i + 2])) < 0 ||
			   (hi == 0 && lo == 0)) {
			rc = err_set(PB_EINVAL, "line %d: bad %%-escape", line);
		} else {
			rc = buf_addch(&b, hi << 4 | lo);
			i += 2;
		}
		if (rc == PB_ELIMIT)
			rc = err_set(PB_EINVAL,
				     "line %d: value longer than %zu bytes",
				     line, max);
	}
	if (!rc)
		*out = buf_detach(&b, NULL);
	buf_release(&b);
	return rc;
}

/* A decimal number without sign or leading zeros, at most max. */
static int parse_num(int64_t *out, const char *p, size_t len, int64_t max,
		     int line)
{
	uint64_t v;

	if (len == 0 || len > 19 || (len > 1 && p[0] == '0') ||
	    !run_of(p, len, 1, 19, is_digit) ||
	    !mem_to_u64(p, len, (uint64_t)max, &v))
		return err_set(PB_EINVAL, "line %d: bad number", line);
	*out = (int64_t)v;
	return 0;
}

/*
 * Parse the header block of data[0..len) into rec (whose strings must be
 * NULL).  *hdr_len gets the header's length including the empty line,
 * *size the Size value.  Errors are PB_EINVAL.
 */
static int parse_header(struct spool_record *rec, size_t *hdr_len, size_t *size,
			const char *data, size_t len)
{
	static const int64_t num_max[HDR__COUNT] = {
		[HDR_VERSION] = 1000000,	[HDR_TIME] = INT64_MAX / 2,
		[HDR_MR] = INT64_MAX / 2,	[HDR_REVISION] = INT32_MAX,
		[HDR_PATCH] = INT32_MAX,	[HDR_SIZE] = PB_MAIL_MAX_MAX,
		[HDR_RECEIVED] = INT64_MAX / 2,
	};
	static const size_t str_max[HDR__COUNT] = {
		[HDR_QUEUE_ID] = SPOOL_QUEUE_ID_MAX,
		[HDR_MESSAGE_ID] = SPOOL_MSGID_MAX,
		[HDR_SENDER] = SPOOL_SENDER_MAX,
		[HDR_KIND] = SPOOL_KIND_MAX,
		[HDR_PROJECT] = SPOOL_PROJECT_MAX,
	};
	char **str_out[HDR__COUNT] = {
		[HDR_QUEUE_ID] = &rec->queue_id,
		[HDR_MESSAGE_ID] = &rec->message_id,
		[HDR_SENDER] = &rec->sender,
		[HDR_KIND] = &rec->kind,
		[HDR_PROJECT] = &rec->project,
	};
	int64_t num[HDR__COUNT] = { 0 };
	struct scan s;
	int k, rc;

	scan_init(&s, data, len < SPOOL_HEADER_MAX ? len : SPOOL_HEADER_MAX);
	for (k = 0; k < HDR__COUNT; k++) {
		const char *line, *val;
		size_t line_len, key_len = strlen(hdr_keys[k]), val_len;

		if (k == HDR_RECEIVED && num[HDR_VERSION] == 1) {
			num[k] = num[HDR_SIZE]; /* written whole */
			continue;
		}

		if (!scan_until(&s, '\n', &line, &line_len)) {
			if (len > SPOOL_HEADER_MAX)
				return err_set(PB_EINVAL,
					       "header longer than %d bytes",
					       SPOOL_HEADER_MAX);
			return err_set(PB_EINVAL, "line %d: header cut", k + 1);
		}
		scan_char(&s, '\n');
		if (line_len < key_len + 2 ||
		    memcmp(line, hdr_keys[k], key_len) != 0 ||
		    memcmp(line + key_len, ": ", 2) != 0)
			return err_set(PB_EINVAL, "line %d: expected \"%s: \"",
				       k + 1, hdr_keys[k]);
		val = line + key_len + 2;
		val_len = line_len - key_len - 2;
		if (str_out[k]) {
			rc = decode_value(str_out[k], val, val_len, str_max[k],
					  k + 1);
			if (rc)
				return rc;
			continue;
		}
		rc = parse_num(&num[k], val, val_len, num_max[k], k + 1);
		if (rc)
			return rc;
		if (k == HDR_VERSION && num[k] != SPOOL_FORMAT_VERSION &&
		    num[k] != 1)
			return err_set(PB_EINVAL,
				       "record format version %" PRId64
				       " (this program reads 1 and %d)",
				       num[k], SPOOL_FORMAT_VERSION);
	}
	if (!scan_char(&s, '\n'))
		return err_set(PB_EINVAL, "line %d: expected the empty line",
			       HDR__COUNT + 1);
	if (*rec->kind && !run_of(rec->kind, strlen(rec->kind), 1,
				  SPOOL_KIND_MAX, is_kind_char))
		return err_set(PB_EINVAL, "Kind is not a token");
	if (*rec->project ? num[HDR_MR] <= 0 : num[HDR_MR] != 0)
		return err_set(PB_EINVAL, "MR %" PRId64 " %s a project",
			       num[HDR_MR], *rec->project ? "with" : "without");
	if (num[HDR_RECEIVED] < num[HDR_SIZE])
		return err_set(PB_EINVAL,
			       "Received-Size %" PRId64 " below Size %" PRId64,
			       num[HDR_RECEIVED], num[HDR_SIZE]);
	rec->version = (int)num[HDR_VERSION];
	rec->received = num[HDR_RECEIVED];
	rec->time = num[HDR_TIME];
	rec->iid = num[HDR_MR];
	rec->revision = (int)num[HDR_REVISION];
	rec->patch = (int)num[HDR_PATCH];
	*hdr_len = (size_t)(s.p - data);
	*size = (size_t)num[HDR_SIZE];
	return 0;
}

/*
 * Parse the record in file (a whole record file) into out, moving the
 * message to the front of file's memory rather than copying it: records
 * can be large.  file is left empty.
 */
static int parse_buf(struct spool_record *out, struct buf *file)
{
	struct spool_record rec;
	size_t hdr_len, size;
	int rc;

	spool_record_init(&rec);
	rc = parse_header(&rec, &hdr_len, &size, file->data, file->len);
	if (rc)
		goto out;
	if (file->len - hdr_len != size) {
		rc = err_set(PB_EINVAL, "Size is %zu but %zu bytes follow",
			     size, file->len - hdr_len);
		goto out;
	}
	memmove(file->data, file->data + hdr_len, size);
	buf_truncate(file, size);
	buf_release(&rec.message);
	rec.message = *file;
	rec.message.max = PB_MAIL_MAX_MAX;
	buf_init(file, file->max);
	spool_record_release(out);
	*out = rec;
	return 0;
out:
	spool_record_release(&rec);
	spool_record_release(out);
	return rc;
}

int spool_parse(struct spool_record *out, const void *data, size_t len)
{
	struct buf file = BUF_INIT(SPOOL_RECORD_MAX);
	int rc;

	spool_record_release(out);
	rc = buf_add(&file, data, len);
	if (rc)
		rc = err_set(PB_EINVAL, "record longer than %zu bytes",
			     SPOOL_RECORD_MAX);
	else
		rc = parse_buf(out, &file);
	buf_release(&file);
	return rc;
}

int spool_format(struct buf *out, const struct spool_record *rec)
{
	struct spool_meta m;
	int rc;

	memset(&m, 0, sizeof(m));
	m.queue_id = rec->queue_id;
	m.message_id = rec->message_id;
	m.sender = rec->sender;
	m.kind = rec->kind;
	m.project = rec->project;
	m.iid = rec->iid;
	m.revision = rec->revision;
	m.patch = rec->patch;
	m.received = rec->received > 0 ? (size_t)rec->received : 0;
	buf_reset(out);
	rc = check_meta(&m);
	if (!rc)
		rc = format_header(out, &m, rec->time, rec->message.len);
	if (!rc && buf_add(out, rec->message.data, rec->message.len))
		rc = err_set(PB_ELIMIT, "spool: record longer than %zu bytes",
			     out->max);
	return rc;
}

/* ---- writing ---------------------------------------------------------- */

static void make_name(char *name, size_t size, const struct spool_meta *m,
		      const struct timespec *ts)
{
	const char *qid = m->queue_id ? m->queue_id : "";
	const char *mid = m->message_id ? m->message_id : "";
	int64_t usec = (int64_t)ts->tv_sec * 1000000 + ts->tv_nsec / 1000;
	char id[SPOOL_NAME_ID_MAX + 1];

	if (run_of(qid, strlen(qid), 1, SPOOL_NAME_ID_MAX, is_alnum))
		snprintf(id, sizeof(id), "%s", qid);
	else /* a record without a usable queue id: its Message-ID's hash */
		snprintf(id, sizeof(id), "m%016" PRIx64,
			 hash_fnv1a64(mid, strlen(mid)));
	snprintf(name, size, "%016" PRId64 ".%s.%ld.%lu", usec > 0 ? usec : 0,
		 id, (long)getpid(), atomic_fetch_add(&put_seq, 1));
}

static int write_all(int fd, const char *p, size_t len, const char *shown)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return err_set_errno(spool_errno(errno),
					     "spool: write %s", shown);
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* renameat2(RENAME_NOREPLACE) where the filesystem has it. */
static int rename_noreplace(int from_fd, const char *from, int to_fd,
			    const char *to)
{
	if (renameat2(from_fd, from, to_fd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	return renameat(from_fd, from, to_fd, to);
}

/*
 * Counting.  new/ must not hold more than max_records records, but
 * reading the directory for every record costs a readdir of up to
 * max_records names per mail.  So the writer counts new/ at most every
 * SPOOL_RECOUNT_MS and adds the records it put since; a count at the
 * limit is checked against the directory before a mail is refused (the
 * daemon may have taken records since).  Records other processes put
 * in between are seen at the next count, so new/ may go over the limit
 * by what they write in that time (and by what concurrent writers put
 * at once, as before).
 */
#define SPOOL_RECOUNT_MS 1000

static int64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* 0 when a record may go into new/ (and counts it), else PB_ELIMIT. */
static int room_in_new(struct spool *sp)
{
	struct count_ctx c = { 0, 0, 1 };
	int64_t now = mono_ms();
	int rc = 0;

	pthread_mutex_lock(&sp->lock);
	if (!sp->waiting_ms || now - sp->waiting_ms >= SPOOL_RECOUNT_MS ||
	    sp->waiting >= sp->max_records) {
		c.stop = sp->max_records;
		rc = each_entry(sp, SPOOL_NEW, count_one, &c);
		if (rc)
			goto out;
		sp->waiting = c.n;
		sp->waiting_ms = now;
	}
	if (sp->waiting >= sp->max_records) {
		rc = err_set(PB_ELIMIT,
			     "spool: %zu records wait in %s/new (max_records "
			     "%zu): is the daemon running?",
			     sp->waiting, sp->dir, sp->max_records);
		log_warn("%s", err_msg());
		goto out;
	}
	sp->waiting++;
out:
	pthread_mutex_unlock(&sp->lock);
	return rc;
}

/*
 * The fsync of new/.  A record's rename must be on disk before its mail
 * is accepted, but one fsync of the directory makes every rename done
 * before it durable.  So writers that renamed while another one was in
 * fsync(new/) do not each start their own: each takes a ticket after
 * its rename; a writer whose ticket is not yet covered either waits for
 * the fsync in progress to end, or - none running - starts one that
 * covers every ticket handed out so far.  No writer returns before an
 * fsync that began after its rename succeeded: no mail is accepted
 * before its record is durable.  A failed fsync fails every ticket it
 * was to cover (and, to be safe, any older one still waiting): those
 * writers return an error and their mails are tempfailed, as when each
 * did its own fsync.  With one writer at a time this is one fsync per
 * record; with N writing at once, fewer.
 */
static int sync_new(struct spool *sp)
{
	uint64_t ticket, upto;
	int rc = 0, e;

	pthread_mutex_lock(&sp->lock);
	ticket = ++sp->renamed;
	for (;;) {
		if (ticket <= sp->failed) {
			errno = sp->sync_errno;
			rc = err_set_errno(spool_errno(errno),
					   "spool: fsync %s/new", sp->dir);
			break;
		}
		if (ticket <= sp->synced)
			break;
		if (sp->syncing) {
			pthread_cond_wait(&sp->synced_cond, &sp->lock);
			continue;
		}
		sp->syncing = 1;
		upto = sp->renamed;
		pthread_mutex_unlock(&sp->lock);
		e = fsync(sp->fd[SPOOL_NEW]) < 0 ? errno : 0;
		pthread_mutex_lock(&sp->lock);
		sp->syncing = 0;
		if (e) {
			sp->failed = upto;
			sp->sync_errno = e;
		} else if (upto > sp->synced) {
			sp->synced = upto;
		}
		pthread_cond_broadcast(&sp->synced_cond);
	}
	pthread_mutex_unlock(&sp->lock);
	return rc;
}

int spool_put(char *name, size_t size, struct spool *sp,
	      const struct spool_meta *meta, const void *msg, size_t len)
{
	struct buf hdr = BUF_INIT(SPOOL_HEADER_MAX);
	char nm[SPOOL_NAME_MAX + 1], shown[PB_LOG_QUOTE_MAX];
	struct timespec ts;
	int fd = -1, in_tmp = 0, counted = 0, in_new = 0, rc;

	BUG_ON(!(sp->flags & SPOOL_WRITER));
	if ((name && size < sizeof(nm)) || !meta || (!msg && len))
		return err_set(PB_EINVAL, "spool_put: bad arguments");
	rc = check_meta(meta);
	if (rc)
		goto out;
	if (len > sp->max_message) {
		rc = err_set(PB_ELIMIT,
			     "spool: message of %zu bytes, max message size "
			     "%zu",
			     len, sp->max_message);
		goto out;
	}
	rc = room_in_new(sp);
	if (rc)
		goto out;
	counted = 1;

	clock_gettime(CLOCK_REALTIME, &ts);
	make_name(nm, sizeof(nm), meta, &ts);
	snprintf(shown, sizeof(shown), "tmp/%s", nm);
	rc = format_header(&hdr, meta, (int64_t)ts.tv_sec, len);
	if (rc)
		goto out;
	fd = openat(sp->fd[SPOOL_TMP], nm,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    SPOOL_FILE_MODE);
	if (fd < 0) {
		rc = err_set_errno(spool_errno(errno), "spool: create %s/%s",
				   sp->dir, shown);
		goto out;
	}
	in_tmp = 1;
	/* The umask must not keep the daemon's group from reading. */
	if (fchmod(fd, SPOOL_FILE_MODE) < 0) {
		rc = err_set_errno(spool_errno(errno), "spool: chmod %s",
				   shown);
		goto out;
	}
	if ((rc = write_all(fd, hdr.data, hdr.len, shown)) ||
	    (rc = write_all(fd, msg, len, shown)))
		goto out;
	/*
	 * The data must be on disk before the name makes it visible.
	 * fdatasync() writes the data and what is needed to read it back
	 * (the size, the blocks: POSIX "synchronized I/O data integrity"),
	 * not the times an fsync() would add.
	 */
	if (fdatasync(fd) < 0) {
		rc = err_set_errno(spool_errno(errno), "spool: fdatasync %s",
				   shown);
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = err_set_errno(spool_errno(errno), "spool: close %s",
				   shown);
		goto out;
	}
	fd = -1;
	if (rename_noreplace(sp->fd[SPOOL_TMP], nm, sp->fd[SPOOL_NEW], nm) <
	    0) {
		rc = err_set_errno(errno == EEXIST ? PB_ETEMP :
						     spool_errno(errno),
				   "spool: rename %s to new/", shown);
		goto out;
	}
	in_tmp = 0;
	in_new = 1;
	/* And the rename must be on disk before the milter says 250. */
	rc = sync_new(sp);
	if (rc)
		goto out;
	if (name)
		snprintf(name, size, "%s", nm);
out:
	if (fd >= 0)
		close(fd);
	if (in_tmp)
		unlinkat(sp->fd[SPOOL_TMP], nm, 0);
	if (rc && counted && !in_new) {
		pthread_mutex_lock(&sp->lock);
		if (sp->waiting)
			sp->waiting--;
		pthread_mutex_unlock(&sp->lock);
	}
	buf_release(&hdr);
	return rc;
}

/* ---- reading ---------------------------------------------------------- */

/* Refill sp->batch with the oldest names in new/. */
static int scan_new(struct spool *sp)
{
	struct strlist all = STRLIST_INIT;
	size_t i;
	int rc;

	strlist_release(&sp->batch);
	sp->batch_next = 0;
	rc = list_area(&all, sp, SPOOL_NEW, 0);
	for (i = 0; !rc && i < all.nr; i++) {
		if (i < SPOOL_BATCH_MAX) {
			strlist_push_owned(&sp->batch, all.items[i]);
			all.items[i] = NULL;
		}
	}
	strlist_release(&all);
	return rc;
}

int spool_claim_next(char *name, size_t size, struct spool *sp)
{
	struct stat st;
	int rc;

	BUG_ON(!(sp->flags & SPOOL_READER));
	if (size < SPOOL_NAME_MAX + 1)
		return err_set(PB_EINVAL, "spool_claim_next: name too small");
	for (;;) {
		if (sp->batch_next >= sp->batch.nr) {
			rc = scan_new(sp);
			if (rc)
				return rc;
			if (!sp->batch.nr)
				return err_set(PB_ENOTFOUND,
					       "spool: nothing waits in %s/new",
					       sp->dir);
		}
		while (sp->batch_next < sp->batch.nr) {
			const char *n = sp->batch.items[sp->batch_next++];

			if (renameat(sp->fd[SPOOL_NEW], n, sp->fd[SPOOL_CUR],
				     n) == 0) {
				snprintf(name, size, "%s", n);
				return 0;
			}
			/* ENOENT: another claimer was faster, unless the
			 * record is still there and cur/ is the problem. */
			if (errno != ENOENT ||
			    fstatat(sp->fd[SPOOL_NEW], n, &st,
				    AT_SYMLINK_NOFOLLOW) == 0)
				return err_set_errno(spool_errno(errno),
						     "spool: claim new/%s", n);
		}
	}
}

/*
 * Read area/name whole into file (cap SPOOL_RECORD_MAX).  PB_EINVAL when
 * the entry cannot be a record (too large, not a regular file).
 */
static int read_record_file(struct buf *file, struct spool *sp,
			    enum spool_area area, const char *name)
{
	struct stat st;
	int fd, rc;

	/* Non-blocking: a FIFO of a record's name must not hang us. */
	fd = openat(sp->fd[area], name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			return err_set(PB_EINVAL, "a symbolic link");
		return err_set_errno(spool_errno(errno), "spool: open %s/%s",
				     area_names[area], name);
	}
	if (fstat(fd, &st) < 0) {
		rc = err_set_errno(spool_errno(errno), "spool: stat %s/%s",
				   area_names[area], name);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = err_set(PB_EINVAL, "not a regular file");
		goto out;
	}
	if ((uint64_t)st.st_size > SPOOL_RECORD_MAX) {
		rc = err_set(PB_EINVAL, "%jd bytes, more than a record can be",
			     (intmax_t)st.st_size);
		goto out;
	}
	rc = buf_grow(file, (size_t)st.st_size);
	if (!rc)
		rc = fd_read_all(file, fd);
	if (rc == PB_ELIMIT)
		rc = err_set(PB_EINVAL, "more than a record can be");
	else if (rc)
		rc = err_prefix(rc, "spool: %s/%s", area_names[area], name);
out:
	close(fd);
	return rc;
}

int spool_load(struct spool_record *out, struct spool *sp, enum spool_area area,
	       const char *name)
{
	struct buf file = BUF_INIT(SPOOL_RECORD_MAX);
	int rc;

	spool_record_release(out);
	rc = check_area(sp, area);
	if (!rc)
		rc = check_name(name);
	if (rc)
		return rc;
	rc = read_record_file(&file, sp, area, name);
	if (!rc)
		rc = parse_buf(out, &file);
	if (!rc)
		snprintf(out->name, sizeof(out->name), "%s", name);
	buf_release(&file);
	return rc;
}

int spool_read(struct spool_record *out, struct spool *sp, const char *name)
{
	char reason[PB_ERRMSG_MAX];
	int rc;

	BUG_ON(!(sp->flags & SPOOL_READER));
	rc = check_name(name);
	if (rc)
		return rc;
	rc = spool_load(out, sp, SPOOL_CUR, name);
	if (rc != PB_EINVAL)
		return rc;
	snprintf(reason, sizeof(reason), "corrupt record: %s", err_msg());
	rc = spool_dead(sp, name, reason);
	if (rc)
		return err_prefix(rc,
				  "spool: cur/%s is corrupt (%s), and "
				  "moving it to dead/ failed",
				  name, reason);
	log_warn("spool: cur/%s moved to dead/: %s", name, reason);
	return err_set(PB_EINVAL, "spool: cur/%s moved to dead/: %s", name,
		       reason);
}

/* ---- moving ----------------------------------------------------------- */

static int move(struct spool *sp, enum spool_area from, enum spool_area to,
		const char *name)
{
	int rc;

	BUG_ON(!(sp->flags & SPOOL_READER));
	rc = check_name(name);
	if (rc)
		return rc;
	if (renameat(sp->fd[from], name, sp->fd[to], name) < 0)
		return err_set_errno(spool_errno(errno),
				     "spool: move %s/%s to %s/",
				     area_names[from], name, area_names[to]);
	if (fsync(sp->fd[to]) < 0 || fsync(sp->fd[from]) < 0)
		return err_set_errno(spool_errno(errno),
				     "spool: fsync after moving %s to %s/",
				     name, area_names[to]);
	return 0;
}

int spool_done(struct spool *sp, const char *name)
{
	return move(sp, SPOOL_CUR, SPOOL_DONE, name);
}

int spool_release(struct spool *sp, const char *name)
{
	return move(sp, SPOOL_CUR, SPOOL_NEW, name);
}

int spool_dead(struct spool *sp, const char *name, const char *reason)
{
	char text[PB_ERRMSG_MAX];
	char *path = NULL, *body = NULL, *dead_dir = NULL;
	struct stat st;
	int rc;

	BUG_ON(!(sp->flags & SPOOL_READER));
	rc = check_name(name);
	if (rc)
		return rc;
	if (fstatat(sp->fd[SPOOL_CUR], name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return err_set_errno(spool_errno(errno), "spool: cur/%s", name);
	reason = reason ? reason : "";
	printable_copy(text, sizeof(text), reason, strlen(reason));
	/* The reason first: a crash in between leaves the record in cur/,
	 * to be retried, and a reason that the next attempt replaces. */
	path = xasprintf("%s" REASON_SUFFIX, name);
	dead_dir = xasprintf("%s/dead", sp->dir);
	body = xasprintf("Dead-Time: %jd\nReason: %s\n", (intmax_t)time(NULL),
			 text);
	/* dead/ is writable by the milter's group: a random temporary
	 * name, O_EXCL | O_NOFOLLOW, relative to the descriptor. */
	rc = file_write_atomicat(sp->fd[SPOOL_DEAD], dead_dir, path, body,
				 strlen(body), SPOOL_FILE_MODE);
	if (rc) {
		rc = err_prefix(rc, "spool: reason for %s", name);
		goto out;
	}
	rc = move(sp, SPOOL_CUR, SPOOL_DEAD, name);
	if (rc && fstatat(sp->fd[SPOOL_DEAD], name, &st, AT_SYMLINK_NOFOLLOW))
		unlinkat(sp->fd[SPOOL_DEAD], path, 0);
out:
	free(body);
	free(dead_dir);
	free(path);
	return rc;
}

int spool_dead_reason(struct buf *out, struct spool *sp, const char *name)
{
	char reason_name[SPOOL_NAME_MAX + sizeof(REASON_SUFFIX)];
	int fd, rc;

	rc = check_area(sp, SPOOL_DEAD);
	if (!rc)
		rc = check_name(name);
	if (rc)
		return rc;
	snprintf(reason_name, sizeof(reason_name), "%s" REASON_SUFFIX, name);
	fd = openat(sp->fd[SPOOL_DEAD], reason_name,
		    O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_set_errno(spool_errno(errno), "spool: open dead/%s",
				     reason_name);
	rc = fd_read_all(out, fd);
	close(fd);
	return rc ? err_prefix(rc, "spool: dead/%s", reason_name) : 0;
}

/* ---- housekeeping ----------------------------------------------------- */

/* True when area/name exists and was last changed before cutoff. */
static int older_than(struct spool *sp, enum spool_area area, const char *name,
		      int64_t cutoff, int use_ctime)
{
	struct stat st;

	if (fstatat(sp->fd[area], name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return (int64_t)(use_ctime ? st.st_ctime : st.st_mtime) < cutoff;
}

struct sweep_ctx {
	struct spool *sp;
	int64_t cutoff;
	size_t removed;
	int err;
};

/* tmp/: anything old is a write that never finished. */
static int sweep_tmp(const char *name, void *arg)
{
	struct sweep_ctx *c = arg;

	if (older_than(c->sp, SPOOL_TMP, name, c->cutoff, 0) &&
	    unlinkat(c->sp->fd[SPOOL_TMP], name, 0) == 0)
		c->removed++;
	return 0;
}

/* dead/: reason files whose record is not there (crashed spool_dead). */
static int sweep_dead(const char *name, void *arg)
{
	struct sweep_ctx *c = arg;
	size_t len = strlen(name), slen = strlen(REASON_SUFFIX);
	char rec[SPOOL_NAME_MAX + 1];
	struct stat st;

	if (!is_reason_name(name) || len - slen > SPOOL_NAME_MAX)
		return 0;
	memcpy(rec, name, len - slen);
	rec[len - slen] = '\0';
	if (!spool_name_valid(rec) ||
	    fstatat(c->sp->fd[SPOOL_DEAD], rec, &st, AT_SYMLINK_NOFOLLOW) ==
		    0 ||
	    !older_than(c->sp, SPOOL_DEAD, name, c->cutoff, 0))
		return 0;
	if (unlinkat(c->sp->fd[SPOOL_DEAD], name, 0) == 0)
		c->removed++;
	return 0;
}

/* dead/.tmp.*: file_write_atomic() leftovers (each_entry skips them). */
static int sweep_dead_tmp(struct sweep_ctx *c)
{
	struct dirent *e;
	DIR *d;
	int fd;

	fd = openat(c->sp->fd[SPOOL_DEAD], ".",
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return err_set_errno(spool_errno(errno), "spool: open dead/");
	}
	while ((e = readdir(d)))
		if (strncmp(e->d_name, ".tmp.", 5) == 0 &&
		    older_than(c->sp, SPOOL_DEAD, e->d_name, c->cutoff, 0) &&
		    unlinkat(c->sp->fd[SPOOL_DEAD], e->d_name, 0) == 0)
			c->removed++;
	closedir(d);
	return 0;
}

int spool_recover(size_t *requeued, size_t *removed, struct spool *sp,
		  int64_t tmp_stale, int64_t now)
{
	struct strlist names = STRLIST_INIT;
	struct sweep_ctx c = { sp, now - tmp_stale, 0, 0 };
	size_t i, moved = 0;
	int rc;

	BUG_ON(!(sp->flags & SPOOL_READER));
	if (requeued)
		*requeued = 0;
	if (removed)
		*removed = 0;
	rc = list_area(&names, sp, SPOOL_CUR, 1);
	for (i = 0; !rc && i < names.nr; i++) {
		if (renameat(sp->fd[SPOOL_CUR], names.items[i],
			     sp->fd[SPOOL_NEW], names.items[i]) < 0)
			rc = err_set_errno(spool_errno(errno),
					   "spool: move cur/%s to new/",
					   names.items[i]);
		else
			moved++;
	}
	if (!rc && moved && fsync(sp->fd[SPOOL_NEW]) < 0)
		rc = err_set_errno(spool_errno(errno), "spool: fsync %s/new",
				   sp->dir);
	if (!rc)
		rc = each_entry(sp, SPOOL_TMP, sweep_tmp, &c);
	if (!rc)
		rc = each_entry(sp, SPOOL_DEAD, sweep_dead, &c);
	if (!rc)
		rc = sweep_dead_tmp(&c);
	strlist_release(&names);
	/* Start claiming from a fresh look at new/. */
	strlist_release(&sp->batch);
	sp->batch_next = 0;
	if (moved)
		log_notice("spool: %zu claimed records from %s/cur back to new",
			   moved, sp->dir);
	if (c.removed)
		log_notice("spool: removed %zu stale temporary files in %s",
			   c.removed, sp->dir);
	if (requeued)
		*requeued = moved;
	if (removed)
		*removed = c.removed;
	return rc;
}

int spool_prune(size_t *removed, struct spool *sp, enum spool_area area,
		int64_t retention, int64_t now)
{
	struct strlist names = STRLIST_INIT;
	char reason[SPOOL_NAME_MAX + sizeof(REASON_SUFFIX)];
	size_t i, n = 0;
	int rc;

	BUG_ON(!(sp->flags & SPOOL_READER));
	BUG_ON(area != SPOOL_DONE && area != SPOOL_DEAD);
	rc = list_area(&names, sp, area, 0);
	for (i = 0; !rc && i < names.nr; i++) {
		if (!older_than(sp, area, names.items[i], now - retention, 1) ||
		    unlinkat(sp->fd[area], names.items[i], 0) < 0)
			continue;
		n++;
		/* a dead record's reason goes with it (a reason left alone
		 * is swept by spool_recover()) */
		if (area == SPOOL_DEAD) {
			snprintf(reason, sizeof(reason), "%s" REASON_SUFFIX,
				 names.items[i]);
			unlinkat(sp->fd[area], reason, 0);
		}
	}
	strlist_release(&names);
	if (removed)
		*removed = n;
	return rc;
}

/* ---- finding ---------------------------------------------------------- */

/*
 * The Message-ID as the inbound journal keys it (inbound_message_id()):
 * without surrounding blanks, leading '<'s and trailing '>'s.
 */
static void key_span(const char **p, size_t *len)
{
	while (*len && strchr(" \t<", **p))
		(*p)++, (*len)--;
	while (*len && strchr(" \t>", (*p)[*len - 1]))
		(*len)--;
}

/*
 * Read the header block of area/name into rec (initialised, empty).
 * 0; PB_ENOTFOUND when it moved on meanwhile (ENOENT, and only that);
 * PB_EINVAL when it is corrupt (a symbolic link or no regular file, no
 * header, a header that does not parse); another code when it cannot be
 * read (permissions, I/O, no descriptor left), with *read_errno set to
 * the errno (else left 0).  Opened non-blocking, so a FIFO of a record's
 * name cannot hang the reader.
 */
static int load_header(struct spool_record *rec, int *read_errno,
		       struct spool *sp, enum spool_area area, const char *name)
{
	char head[SPOOL_HEADER_MAX];
	const char *an = area_names[area];
	size_t hdr_len, size;
	struct stat st;
	ssize_t n;
	int fd, e, rc;

	*read_errno = 0;
	fd = openat(sp->fd[area], name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT)
			return err_set(PB_ENOTFOUND, "spool: %s/%s is gone", an,
				       name);
		if (e == ELOOP)
			return err_set(PB_EINVAL,
				       "spool: %s/%s: a symbolic link", an,
				       name);
		goto unreadable;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		close(fd);
		goto unreadable;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(PB_EINVAL, "spool: %s/%s: not a regular file",
			       an, name);
	}
	do
		n = pread(fd, head, sizeof(head), 0);
	while (n < 0 && errno == EINTR);
	e = errno;
	close(fd);
	if (n < 0)
		goto unreadable;
	if (n == 0)
		return err_set(PB_EINVAL, "spool: %s/%s: no header", an, name);
	rc = parse_header(rec, &hdr_len, &size, head, (size_t)n);
	if (rc) {
		spool_record_release(rec);
		return err_prefix(rc, "spool: %s/%s", an, name);
	}
	snprintf(rec->name, sizeof(rec->name), "%s", name);
	return 0;

unreadable:
	*read_errno = e;
	rc = spool_errno(e);
	errno = e;
	return err_set_errno(rc == PB_ENOTFOUND || rc == PB_EINVAL ? PB_ERROR :
								     rc,
			     "spool: cannot read %s/%s", an, name);
}

/*
 * 1 when area/name is a record with the Message-ID want (in key form), 0
 * when it is not, is gone or is corrupt; 0 with *read_errno set when it
 * cannot be read, so it may be.
 */
static int header_matches(int *read_errno, struct spool *sp,
			  enum spool_area area, const char *name,
			  const char *want, size_t want_len)
{
	struct spool_record rec;
	size_t id_len;
	const char *id;
	int match = 0;

	spool_record_init(&rec);
	if (load_header(&rec, read_errno, sp, area, name) == 0) {
		id = rec.message_id;
		id_len = strlen(id);
		key_span(&id, &id_len);
		match = id_len == want_len && memcmp(id, want, id_len) == 0;
	}
	spool_record_release(&rec);
	return match;
}

void spool_entry_list_release(struct spool_entry_list *list)
{
	free(list->items);
	list->items = NULL;
	list->nr = list->alloc = 0;
}

int spool_find(struct spool_entry_list *out, struct spool *sp,
	       const char *message_id)
{
	static const enum spool_area areas[] = { SPOOL_NEW, SPOOL_CUR,
						 SPOOL_DONE, SPOOL_DEAD };
	struct strlist names = STRLIST_INIT;
	const char *want = message_id ? message_id : "";
	size_t want_len = strlen(want), a, i, found = 0;
	int rc = 0, read_errno;

	key_span(&want, &want_len);
	if (!want_len)
		return err_set(PB_EINVAL, "spool_find: empty Message-ID");
	for (a = 0; !rc && a < sizeof(areas) / sizeof(areas[0]); a++) {
		rc = list_area(&names, sp, areas[a], 0);
		for (i = 0; !rc && i < names.nr; i++) {
			struct spool_entry *e;

			if (!header_matches(&read_errno, sp, areas[a],
					    names.items[i], want, want_len) &&
			    !read_errno)
				continue;
			ALLOC_GROW(out->items, out->nr + 1, out->alloc);
			e = &out->items[out->nr++];
			e->area = areas[a];
			snprintf(e->name, sizeof(e->name), "%s",
				 names.items[i]);
			e->read_errno = read_errno;
			found++;
		}
		strlist_release(&names);
	}
	if (!rc && !found)
		rc = err_set(PB_ENOTFOUND,
			     "spool: no record of that Message-ID");
	return rc;
}

int spool_each_header(struct spool *sp, enum spool_area area,
		      int (*fn)(const char *name,
				const struct spool_record *hdr, int err,
				void *arg),
		      void *arg)
{
	struct strlist names = STRLIST_INIT;
	struct spool_record rec;
	size_t i;
	int rc, read_errno;

	BUG_ON(area == SPOOL_TMP);
	spool_record_init(&rec);
	rc = list_area(&names, sp, area, 0);
	for (i = 0; !rc && i < names.nr; i++) {
		rc = load_header(&rec, &read_errno, sp, area, names.items[i]);
		if (rc == PB_ENOTFOUND) {
			rc = 0; /* claimed, filed or pruned meanwhile */
			continue;
		}
		rc = fn(names.items[i], rc ? NULL : &rec, rc, arg);
		spool_record_release(&rec);
	}
	spool_record_release(&rec);
	strlist_release(&names);
	return rc;
}
