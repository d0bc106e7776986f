/*
 * spool - the durable hand-off of inbound mail from milter to daemon.
 *
 * patchbridge-milter may not answer Postfix before a relevant mail is on
 * disk (DESIGN.md rule 2), yet it cannot write the daemon's SQLite state.
 * So it leaves each mail as one file in a Maildir-like spool directory,
 * and `patchbridge run` picks the files up, applies them and records them
 * in its inbound journal (store.h), which deduplicates by Message-ID.
 *
 * Layout of the spool directory DIR ([spool] dir):
 *
 *	DIR/tmp/   records being written by the milter, and the unnamed
 *	           files of mail it receives past its memory budget
 *	           (spool_body_file()); never read
 *	DIR/new/   complete records, waiting (the milter renames them here)
 *	DIR/cur/   records claimed by the daemon (renamed here from new/)
 *	DIR/done/  applied records, kept for `patchbridge why` and removed
 *	           by spool_prune() after a retention period
 *	DIR/dead/  dead letters: records that cannot be applied or parsed,
 *	           each with a NAME.reason file; never removed by the code
 *
 * Names are "<usec>.<id>.<pid>.<seq>": the spool time in microseconds
 * since the epoch as 16 digits (so names sort by age), the Postfix queue
 * id (or "m" and 16 hex digits of a hash of the Message-ID when there is
 * no usable queue id), the writer's pid and a per-process sequence
 * number, as in maildir(5): unique across processes and threads without
 * locks.  Names starting with "." are ignored everywhere; so are names
 * that are not of this form (spool_recover() logs them).  Only local
 * filesystems are supported (renames must be atomic, no NFS).
 *
 * Record format (version 2): a header block of "Key: value" lines in this
 * fixed order, an empty line, and the raw message exactly as received
 * (any bytes, NULs included), so the daemon can parse it again with newer
 * code and `patchbridge why` can show it:
 *
 *	PB-Spool: 1
 *	Spool-Time: 1733220000              Unix seconds
 *	Queue-Id: 4Y3ZQk1XyZz9abc           Postfix queue id, may be empty
 *	Message-Id: 20241203.x@example.org  may be empty
 *	Sender: dev@example.org             envelope sender, may be empty
 *	Kind: reply                         classification, [a-z0-9_-]*
 *	Project: group/name                 the target MR; empty: none
 *	MR: 12                              0 when no project
 *	Revision: 3                         0 = unknown
 *	Patch: 2                            0 = the cover letter
 *	Size: 5123                          bytes of raw message that follow
 *	Received-Size: 5123                 bytes of the mail as offered: more
 *	                                    than Size when the milter kept
 *	                                    only the first Size bytes
 *
 * Lines end in LF.  Values hold printable ASCII (space included); every
 * other byte and "%" itself are written as "%XX" (upper-case hex), so a
 * hostile Message-ID or sender (CR, LF, ESC, 8-bit bytes) can never break
 * the format and comes back byte for byte.  The reader is strict: the
 * keys must come exactly in this order, values must be well-formed and
 * within the caps below, and exactly Size bytes must follow the empty
 * line, so a truncated or corrupt record is recognised, never half used.
 * Version 1 records (written before Received-Size, which they lack) are
 * read as whole mails, so records waiting across an upgrade stay
 * readable; any other version is refused like a corrupt record: milter
 * and daemon are upgraded together.
 *
 * Writing (spool_put, the milter at end of message): create tmp/NAME,
 * write, fdatasync the file, rename it to new/NAME, fsync new/ - one
 * fsync of new/ for every writer that renamed while another one's was
 * running (a group commit: see "The fsync of new/" in spool.c), so a
 * record costs one fdatasync and at most one fsync.  After a crash
 * (kill -9, power loss) new/ holds only complete records; tmp/ may hold
 * partial ones, which readers ignore and spool_recover() removes once they
 * are older than a stale age.  spool_put() returns 0 only after the fsync
 * of new/: then, and only then, may the milter accept the mail.  On any
 * error it returns a negative code and the milter must answer TEMPFAIL;
 * nothing partial is visible.  (If only the final fsync of new/ fails the
 * complete record may stay in new/: the mail is then tempfailed and
 * spooled once more when the client resends, which the daemon's journal
 * deduplicates by Message-ID.)
 *
 * Reading (the daemon): spool_recover() once at start, before any claimer
 * runs; then repeatedly spool_claim_next() (oldest first; renames
 * new/NAME to cur/NAME, and rename is atomic, so two claimers never get
 * the same record), spool_read(), apply, and spool_done() or spool_dead()
 * (or spool_release() to put it back to new/, e.g. at shutdown).  A
 * daemon killed between claim and done leaves the record in cur/, and
 * spool_recover() moves it back to new/: records are applied at least
 * once, and the store's journal and forge markers make that exactly once
 * on the forge.  Claims are not fsynced (losing one after a crash just
 * means the record is still in new/); done, dead and release are.
 *
 * Permissions: the milter and the daemon run as different users.  The
 * daemon's user owns DIR and the five subdirectories; they share a group
 * (e.g. "patchbridge") and mode 2770 (setgid: files and directories
 * created inside take the directory's group, whichever user creates
 * them):
 *
 *	install -d -o patchbridge -g patchbridge -m 2770 /var/spool/patchbridge
 *	(and the same for DIR/tmp, new, cur, done and dead)
 *
 * The milter's group may write every area, so nothing in them is taken
 * on trust: before any record is read, moved or removed, spool_open()
 * opens DIR and each area it needs with O_DIRECTORY | O_NOFOLLOW and
 * checks the directory it opened: a real directory (not a symbolic
 * link), with DIR's owner and group, not writable by others; DIR itself
 * not writable by others and, for SPOOL_READER (the daemon), owned by
 * the calling user.  Anything else is PB_EPERM with a message naming
 * the expected owner, group and mode and the install -d command that
 * makes it so: the daemon refuses to start rather than clean up a
 * directory that a link sent elsewhere.  From then on every operation
 * is relative to those descriptors, records are opened O_NOFOLLOW, and
 * a dead letter's reason is written under a random temporary name
 * (fileio.h), so links planted in an area are never followed.
 *
 * spool_open() creates DIR (when its parent exists) and, when the caller
 * owns DIR, any missing subdirectory with mode 2770, whatever the umask;
 * a subdirectory made by another user (the milter) would be that user's
 * and refused by the daemon, so a caller that does not own DIR gets
 * PB_EPERM for a missing area it needs (and leaves alone one it does not
 * need).  It leaves the modes of existing directories alone.  Records
 * are created with mode 0640, so the
 * daemon's user can read them through the group; moving them needs only
 * write access to the directories.  The writer needs write and search
 * access to tmp/ and new/ (and read access to new/ to count it); the
 * reader needs them on all five directories.  spool_open() checks this
 * for the roles asked for and fails with PB_EPERM, naming the directory,
 * instead of failing later at the first mail.  A writer-only handle does
 * not open cur/, done/ and dead/: spool_count(), spool_find() and
 * spool_load() on those are PB_EPERM there, and calling a reader-only
 * function (claim, read, done, dead, release, recover, prune) or
 * spool_put() on a handle without that role is a bug (BUG()).
 *
 * A third role, SPOOL_INSPECT, is for `patchbridge status` and `why`,
 * which an operator runs next to the live programs: it looks and changes
 * nothing.  Alone, it creates no directory (a missing one is
 * PB_ENOTFOUND) and needs only read and search (r-x) access on new/,
 * cur/, done/ and dead/, e.g. through the group of the layout above.
 * spool_count(), spool_find(), spool_load(), spool_dead_reason() and
 * spool_each_header() work on such a handle.
 *
 * Limits (DESIGN.md rule 8): a raw message longer than the max message
 * size is PB_ELIMIT; when new/ already holds max_records records,
 * spool_put() logs it and returns PB_ELIMIT, so the milter tempfails
 * until the daemon catches up (Postfix keeps the mail queued at the
 * sender's side, nothing is lost).  A writer counts new/ at most once a
 * second and adds what it put since, and counts again before it
 * refuses; so new/ may go over the limit by what other processes and
 * concurrent writers put meanwhile.  The reader reads
 * at most SPOOL_HEADER_MAX + PB_MAIL_MAX_MAX bytes of a record, whatever
 * the configured message size, so a change of that setting does not turn
 * waiting records into dead letters.
 *
 * Ownership: struct spool is a heap object (spool_open / spool_free).  A
 * struct spool_record owns its strings and buffer; spool_record_release()
 * frees them and leaves it re-initialised; functions filling one release
 * what it held first.
 *
 * Thread safety: spool_put() may be called from any number of threads on
 * one struct spool at once (they share the count of new/ and the fsync
 * of new/, under the handle's lock).
 * The reader functions keep per-handle state (the claim batch): use one
 * struct spool per reader thread, or serialise them.  spool_set_limits()
 * is called before the handle is shared.
 *
 * Errors: 0 or a negative code from util/err.h with err_msg() set:
 *   PB_EINVAL    bad arguments (a field over its cap, a bad name), or a
 *                corrupt record (spool_read moves it to dead/ first)
 *   PB_ELIMIT    the message is too large, or new/ is full
 *   PB_ETEMP     I/O that may pass: disk full, quota, EIO, too many files
 *   PB_EPERM     the directory permissions do not allow the operation
 *   PB_ENOTFOUND no such record (claimed by someone else), nothing to
 *                claim, or a missing directory
 *   PB_ERROR     anything else
 */
#ifndef PB_STATE_SPOOL_H
#define PB_STATE_SPOOL_H

#include "util/buf.h"
#include "util/limits.h"

#include <stddef.h>
#include <stdint.h>

/* The record format this code writes and reads. */
#define SPOOL_FORMAT_VERSION 2

/* Caps on header values, after decoding; longer input is PB_EINVAL. */
#define SPOOL_QUEUE_ID_MAX 64
#define SPOOL_MSGID_MAX PB_MSGID_MAX
#define SPOOL_SENDER_MAX PB_MSGID_MAX /* no header line is longer */
#define SPOOL_KIND_MAX 32
#define SPOOL_PROJECT_MAX 1024 /* "group/sub/project", as config.h */
/* The whole header block, up to and including the empty line. */
#define SPOOL_HEADER_MAX (16 * 1024)
/* A record's file name (the dead/ reason file adds ".reason"). */
#define SPOOL_NAME_MAX 127
/* Queue ids longer than this are not put into names (the hash is). */
#define SPOOL_NAME_ID_MAX 32

/* Defaults for spool_set_limits() and the daemon's housekeeping. */
#define SPOOL_MAX_RECORDS_DEFAULT 10000
#define SPOOL_TMP_STALE_DEFAULT (60 * 60) /* seconds */
#define SPOOL_DONE_RETENTION_DEFAULT (7 * 24 * 60 * 60) /* seconds */
/* How many names one scan of new/ hands to spool_claim_next(). */
#define SPOOL_BATCH_MAX 1024

struct spool;

enum spool_flags {
	SPOOL_WRITER = 1 << 0, /* the milter: spool_put() */
	SPOOL_READER = 1 << 1, /* the daemon: claim, read, done, ... */
	SPOOL_INSPECT = 1 << 2, /* status, why: look, change nothing */
};

enum spool_area {
	SPOOL_TMP,
	SPOOL_NEW,
	SPOOL_CUR,
	SPOOL_DONE,
	SPOOL_DEAD,
	SPOOL_AREA_COUNT
};

/* "tmp", "new", "cur", "done", "dead". */
const char *spool_area_name(enum spool_area area);

/*
 * What the milter knows about a mail, written into the record's header.
 * Strings may be NULL (= empty); they are only read.
 */
struct spool_meta {
	const char *queue_id; /* Postfix queue id ({i} macro) */
	const char *message_id; /* as store.h keys it: without <> */
	const char *sender; /* envelope sender; "" for the null sender */
	const char *kind; /* classification: "reply", "cover" ... */
	const char *project; /* target MR's project; NULL/"": no target */
	int64_t iid; /* > 0 with a project, else 0 */
	int revision; /* >= 0; 0 = unknown */
	int patch; /* >= 0; 0 = the cover letter */
	size_t received; /* the mail's size as offered; 0: the bytes given */
};

/*
 * A record as read back.  After a successful read the strings are never
 * NULL ("" when empty); after a failed one the record is empty.
 */
struct spool_record {
	char name[SPOOL_NAME_MAX + 1]; /* "" when parsed from memory */
	int version;
	int64_t time; /* Spool-Time, Unix seconds */
	char *queue_id;
	char *message_id;
	char *sender;
	char *kind;
	char *project;
	int64_t iid;
	int revision;
	int patch;
	int64_t received; /* Received-Size: > message.len when cut */
	struct buf message; /* the raw mail, exactly as spooled */
};

void spool_record_init(struct spool_record *rec);
void spool_record_release(struct spool_record *rec);

/*
 * Open the spool at dir for the roles in flags (SPOOL_WRITER,
 * SPOOL_READER or both), creating missing directories and checking
 * permissions as described above.  The limits start at their defaults.
 */
int spool_open(struct spool **out, const char *dir, unsigned flags);
/* NULL is allowed. */
void spool_free(struct spool *sp);

/*
 * Writer limits: max_records in new/ ([spool] max_records) and the
 * largest raw message ([milter] max_message_size, at most
 * PB_MAIL_MAX_MAX).  0 keeps the default.  PB_EINVAL when out of range.
 */
int spool_set_limits(struct spool *sp, size_t max_records, size_t max_message);

/*
 * Spool one mail: meta and the raw message msg[0..len).  On success the
 * record is durable in new/ and, when name is not NULL, its file name is
 * copied there (size >= SPOOL_NAME_MAX + 1).  Thread-safe.
 */
int spool_put(char *name, size_t size, struct spool *sp,
	      const struct spool_meta *meta, const void *msg, size_t len);

/*
 * Claim the oldest record in new/ by moving it to cur/; its name goes to
 * name (size >= SPOOL_NAME_MAX + 1).  PB_ENOTFOUND when new/ is empty.
 */
int spool_claim_next(char *name, size_t size, struct spool *sp);

/*
 * Read the claimed record cur/NAME.  A record that does not parse is
 * moved to dead/ with the parse error as its reason and PB_EINVAL is
 * returned (the caller just goes on with the next); I/O errors leave it
 * in cur/.
 */
int spool_read(struct spool_record *out, struct spool *sp, const char *name);

/* cur/NAME -> done/NAME: applied. */
int spool_done(struct spool *sp, const char *name);

/*
 * cur/NAME -> dead/NAME, after writing dead/NAME.reason with the time
 * and reason (made printable and cut to PB_ERRMSG_MAX bytes).
 */
int spool_dead(struct spool *sp, const char *name, const char *reason);

/* cur/NAME -> new/NAME: give a claimed record back, to be claimed again. */
int spool_release(struct spool *sp, const char *name);

/*
 * At daemon start, before any claimer runs: move every record in cur/
 * back to new/ (*requeued of them) and remove files in tmp/ (and
 * temporary files in dead/, and reason files whose record is not in
 * dead/) whose last change is more than tmp_stale seconds before now
 * (*removed of them).  A live milter may be writing into tmp/, so
 * tmp_stale must be longer than any write takes
 * (SPOOL_TMP_STALE_DEFAULT).  requeued and removed may be NULL.
 */
int spool_recover(size_t *requeued, size_t *removed, struct spool *sp,
		  int64_t tmp_stale, int64_t now);

/*
 * Remove records from area (SPOOL_DONE or SPOOL_DEAD) moved there more
 * than retention seconds before now (by the file's change time, which
 * the rename into the area sets on Linux filesystems); a dead record's
 * reason goes with it.  removed may be NULL.
 */
int spool_prune(size_t *removed, struct spool *sp, enum spool_area area,
		int64_t retention, int64_t now);

/* How many records an area holds (for `patchbridge status`). */
int spool_count(size_t *out, struct spool *sp, enum spool_area area);

/*
 * In one walk of area (not SPOOL_TMP): how many records it holds and the
 * spool time of the oldest, in Unix seconds from its name (0 when the
 * area is empty).  For the daemon's metrics.
 */
int spool_area_stat(size_t *count, int64_t *oldest, struct spool *sp,
		    enum spool_area area);

/*
 * Can records be written?  On a SPOOL_READER or SPOOL_WRITER handle
 * (whose spool_open() checked the permissions): a file made in tmp/
 * without a name (O_TMPFILE, so nothing is left behind and no reader
 * sees it) takes a block of data.  0, or the error (PB_ETEMP for a full
 * or read-only file system) with err_msg() naming the directory.
 */
int spool_probe(struct spool *sp);

/*
 * A private file for a mail the writer is still receiving (the milter's
 * mail past its memory budget), open for reading and writing in *out;
 * the caller closes it.  It is made in tmp/ without a name (O_TMPFILE):
 * no reader ever sees it, and it is gone with its descriptor, also
 * after a crash.  On a file system without O_TMPFILE it gets a random
 * name starting with "." (ignored by every reader), created
 * O_CREAT | O_EXCL | O_NOFOLLOW and removed at once.  Mode 0600: the
 * writer's alone.  Not durable (never fsynced): spool_put() makes the
 * record.  Thread-safe.
 */
int spool_body_file(int *out, struct spool *sp);

/* One record found by spool_find(). */
struct spool_entry {
	enum spool_area area;
	char name[SPOOL_NAME_MAX + 1];
	/* 0: the record carries the Message-ID.  Else the errno that kept
	 * its header from being read (EACCES ...): it may carry it. */
	int read_errno;
};

struct spool_entry_list {
	struct spool_entry *items;
	size_t nr;
	size_t alloc;
};

void spool_entry_list_release(struct spool_entry_list *list);

/*
 * Every record in new/, cur/, done/ and dead/ whose Message-ID is
 * message_id, compared as the inbound journal keys mails (surrounding
 * blanks, leading '<'s and trailing '>'s ignored on either side),
 * appended to out in that order of areas, by name within each.  A record
 * whose header cannot be read (permissions, I/O) cannot be ruled out: it
 * is appended too, with its read_errno set.  Reads the header of every
 * record: for `patchbridge why`, not for hot paths.  PB_ENOTFOUND when
 * there is none of either.
 */
int spool_find(struct spool_entry_list *out, struct spool *sp,
	       const char *message_id);

/*
 * Read area/NAME without moving it anywhere (for `why` and `status`);
 * PB_EINVAL when it does not parse.
 */
int spool_load(struct spool_record *out, struct spool *sp, enum spool_area area,
	       const char *name);

/*
 * Call fn for every record of area (not SPOOL_TMP), oldest first, with
 * its header: hdr has every field but the message (left empty; only the
 * header block is read) and err is 0, or hdr is NULL and err says why,
 * with err_msg() naming the record: PB_EINVAL when the record is corrupt
 * (its header does not parse, it is not a regular file), another code
 * when it cannot be read (PB_EPERM for permissions, PB_ETEMP for I/O or
 * no descriptor left, ...).  Only records that move away during the
 * walk are skipped.  fn returns 0 to go on; anything else stops the walk
 * and is returned.  Reads one header per record: for `patchbridge
 * status`, not for hot paths.
 */
int spool_each_header(struct spool *sp, enum spool_area area,
		      int (*fn)(const char *name,
				const struct spool_record *hdr, int err,
				void *arg),
		      void *arg);

/* The text of dead/NAME.reason, appended to out. */
int spool_dead_reason(struct buf *out, struct spool *sp, const char *name);

/*
 * Parse a record from memory (what spool_read does after reading the
 * file; exposed for tests and fuzzing).  out->name is left "".
 */
int spool_parse(struct spool_record *out, const void *data, size_t len);

/*
 * The bytes of a record as spool_put() writes them (the inverse of
 * spool_parse()), into out (reset first; its cap must allow
 * SPOOL_HEADER_MAX + the message): what the daemon keeps in the state
 * database, so that another host can apply the mail.
 */
int spool_format(struct buf *out, const struct spool_record *rec);

/* True when name has the form of a record name (see above). */
int spool_name_valid(const char *name);

#endif
