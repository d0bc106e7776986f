#include "milter/session.h"

#include "core/metrics.h"
#include "mail/review.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* The buffer before the first message knows its cap. */
#define SESSION_IDLE_MAX 0

/*
 * The memory budget (session.h): the bytes every session's raw buffer
 * has allocated, all sessions of the process together.  Like the
 * metrics' counters it is process-wide state, and must be: the bound is
 * on the process, whichever thread serves whichever connection.
 */
static atomic_size_t held_total;

size_t session_memory_held(void)
{
	return atomic_load_explicit(&held_total, memory_order_relaxed);
}

/* Take n bytes of the budget if the total stays within limit. */
static int budget_take(size_t n, size_t limit)
{
	size_t cur = atomic_load_explicit(&held_total, memory_order_relaxed);

	do {
		if (n > limit || cur > limit - n)
			return 0;
	} while (!atomic_compare_exchange_weak(&held_total, &cur, cur + n));
	return 1;
}

static void budget_give(size_t n)
{
	if (n)
		atomic_fetch_sub(&held_total, n);
}

static void set_log_id(struct session *s)
{
	if (s->queue_id[0])
		snprintf(s->log_id, sizeof(s->log_id), "%s", s->queue_id);
	else
		snprintf(s->log_id, sizeof(s->log_id), "conn %lu", s->id);
}

int session_new(struct session **out, unsigned long id)
{
	struct session *s = xcalloc(1, sizeof(*s));

	s->id = id;
	classify_input_init(&s->in);
	classify_result_init(&s->early);
	buf_init(&s->raw, SESSION_IDLE_MAX);
	buf_init(&s->stage, SESSION_STAGE_MAX);
	s->fd = -1;
	authres_judge_init(&s->judge, NULL, 1);
	set_log_id(s);
	*out = s;
	return 0;
}

void session_free(struct session *s)
{
	if (!s)
		return;
	session_end(s);
	free(s);
}

/* Let go of what the message kept, in memory or in its file. */
static void drop_kept(struct session *s)
{
	buf_release(&s->raw);
	s->raw.max = SESSION_IDLE_MAX;
	budget_give(s->held);
	s->held = 0;
	if (s->map)
		munmap(s->map, s->map_len);
	s->map = NULL;
	s->map_len = 0;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->fd_len = 0;
	buf_release(&s->stage);
	s->msg = NULL;
	s->msg_len = 0;
}

void session_end(struct session *s)
{
	mconf_unref(s->conf);
	s->conf = NULL;
	free(s->sender);
	s->sender = NULL;
	classify_input_release(&s->in);
	classify_result_release(&s->early);
	authres_judge_release(&s->judge);
	/* a big message's memory, budget and file go back now, not at the
	 * next one */
	drop_kept(s);
	s->queue_id[0] = '\0';
	s->size = 0;
	s->nr_headers = 0;
	s->in_body = 0;
	s->pending_cr = 0;
	s->cut = 0;
	s->skip = SESSION_KEEP;
	set_log_id(s);
}

int session_begin(struct session *s, const char *sender)
{
	const char *p = sender ? sender : "";
	size_t len;

	session_end(s);
	s->conf = mconf_current();
	if (!s->conf)
		return err_set(PB_ERROR, "no configuration loaded");
	s->messages++;
	s->max_message = mconf_view(s->conf)->max_message;
	s->limit = mconf_view(s->conf)->memory_limit;
	authres_judge_init(&s->judge, mconf_view(s->conf)->authserv_id,
			   mconf_view(s->conf)->authres_fields);
	s->raw.max = s->max_message;
	/* "<a@b>" -> "a@b"; "<>" -> "" */
	len = strlen(p);
	if (len >= 2 && p[0] == '<' && p[len - 1] == '>') {
		p++;
		len -= 2;
	}
	s->sender = xstrndup(p, len);
	classify_sender(&s->in, s->sender);
	return 0;
}

void session_set_queue_id(struct session *s, const char *qid)
{
	size_t len;

	if (!qid || !qid[0] || s->queue_id[0])
		return;
	len = strlen(qid);
	/* Postfix ids are short and alphanumeric; anything else is cut to
	 * what the spool accepts and only ever logged through printable */
	if (len > SPOOL_QUEUE_ID_MAX)
		len = SPOOL_QUEUE_ID_MAX;
	memcpy(s->queue_id, qid, len);
	s->queue_id[len] = '\0';
	set_log_id(s);
}

const size_t *session_forged(const struct session *s, size_t *nr)
{
	*nr = s->judge.nr_forged < PB_HEADER_COUNT_MAX ? s->judge.nr_forged :
							 PB_HEADER_COUNT_MAX;
	return s->judge.forged;
}

const char *session_log_id(const struct session *s)
{
	return s->log_id;
}

static void mark(struct session *s, enum session_skip why)
{
	if (s->skip != SESSION_KEEP)
		return;
	s->skip = why;
	drop_kept(s);
}

static const char *safe(char *dst, size_t size, const char *s)
{
	return s ? printable_copy(dst, size, s, strlen(s)) : "";
}

/* Bytes of the message kept so far, in memory or in its file. */
static size_t kept(const struct session *s)
{
	return s->fd >= 0 ? s->fd_len + s->stage.len : s->raw.len;
}

/*
 * The file failed: the message is cut where it stopped, as over
 * max_message_size (what was written is bridged at end of message).
 */
static void file_failed(struct session *s)
{
	char mid[PB_LOG_QUOTE_MAX];

	buf_release(&s->stage);
	s->cut = 1;
	log_error("<%s>: cannot keep the mail in a file past [milter] "
		  "memory_limit (%s): the first %zu bytes are bridged, said "
		  "to be cut",
		  safe(mid, sizeof(mid), s->in.message_id), err_msg(), kept(s));
}

/* Write the staged bytes to the file. */
static int flush_stage(struct session *s)
{
	int rc;

	if (!s->stage.len)
		return 0;
	rc = fd_write_all(s->fd, s->stage.data, s->stage.len);
	if (rc) {
		file_failed(s);
		return rc;
	}
	s->fd_len += s->stage.len;
	buf_reset(&s->stage);
	return 0;
}

/*
 * Move the message from memory to a file: the budget is spent.  On
 * failure the message stays as it is in memory, cut there.
 */
static int to_file(struct session *s)
{
	int rc, fd;

	rc = spool_body_file(&fd, mconf_view(s->conf)->spool);
	if (!rc && s->raw.len)
		rc = fd_write_all(fd, s->raw.data, s->raw.len);
	if (rc) {
		if (fd >= 0)
			close(fd);
		file_failed(s);
		return rc;
	}
	log_info("%zu bytes held by the milter's messages, [milter] "
		 "memory_limit %zu: this one goes on in a file",
		 session_memory_held(), s->limit);
	metrics_inc0(MET_MILTER_MAILS_IN_FILES);
	s->fd = fd;
	s->fd_len = s->raw.len;
	buf_release(&s->raw);
	budget_give(s->held);
	s->held = 0;
	return 0;
}

/*
 * Keep p[0..len) (within max_message): in raw while the budget allows
 * its growth, else in the file.
 */
static void keep(struct session *s, const char *p, size_t len)
{
	size_t want;

	if (!len)
		return;
	if (s->fd < 0) {
		want = buf_grown_size(&s->raw, len);
		if (want <= s->held || budget_take(want - s->held, s->limit)) {
			if (want > s->held)
				s->held = want;
			buf_add(&s->raw, p, len);
			return;
		}
		if (to_file(s))
			return;
	}
	if (s->stage.len + len > SESSION_STAGE_MAX && flush_stage(s))
		return;
	if (len < SESSION_STAGE_MAX) {
		buf_add(&s->stage, p, len);
		return;
	}
	if (fd_write_all(s->fd, p, len)) {
		file_failed(s);
		return;
	}
	s->fd_len += len;
}

/* Append what fits of p[0..len); past the cap the message is cut. */
static void add_capped(struct session *s, const char *p, size_t len)
{
	size_t room;

	/* the common case first: room in what the budget granted, under
	 * the cap (raw.max is max_message while the message is in raw) */
	if (s->fd < 0 && len < s->raw.alloc - s->raw.len &&
	    len <= s->raw.max - s->raw.len) {
		buf_add(&s->raw, p, len);
		return;
	}
	room = s->max_message - kept(s);

	if (len > room) {
		keep(s, p, room);
		s->cut = 1;
		return;
	}
	keep(s, p, len);
}

/* Append bytes, dropping a CR before LF (and tracking one split across
 * calls); past the cap the message is cut. */
static void add_text(struct session *s, const char *p, size_t len)
{
	const char *cr;

	while (len && s->skip == SESSION_KEEP && !s->cut) {
		if (s->pending_cr) {
			s->pending_cr = 0;
			if (*p != '\n')
				add_capped(s, "\r", 1);
			continue;
		}
		cr = memchr(p, '\r', len);
		if (!cr) {
			add_capped(s, p, len);
			return;
		}
		add_capped(s, p, (size_t)(cr - p));
		len -= (size_t)(cr - p) + 1;
		p = cr + 1;
		s->pending_cr = 1;
	}
}

static void flush_cr(struct session *s)
{
	if (s->pending_cr && s->skip == SESSION_KEEP && !s->cut)
		add_capped(s, "\r", 1);
	s->pending_cr = 0;
}

void session_header(struct session *s, const char *name, const char *value)
{
	size_t nlen = strlen(name), vlen = strlen(value);

	if (!s->conf)
		return;
	/* every field, whatever becomes of the message */
	authres_judge_field(&s->judge, name, nlen, value, vlen);
	s->size += nlen + vlen + 3;
	if (++s->nr_headers > PB_HEADER_COUNT_MAX ||
	    vlen > PB_HEADER_VALUE_MAX) {
		mark(s, SESSION_SKIP_HEADERS);
		return;
	}
	if (s->skip != SESSION_KEEP)
		return;
	classify_header(&s->in, name, value);
	add_text(s, name, nlen);
	add_text(s, ": ", 2);
	add_text(s, value, vlen);
	flush_cr(s);
	add_text(s, "\n", 1);
}

/*
 * The thread map for classify_headers(), borrowed from the pool only if
 * it is asked (a reply under our Message-ID scheme needs none).  No
 * database yet (PB_ENOTFOUND) answers every lookup "no such row": the
 * scheme alone decides, as at the end of message.
 */
struct lazy_map {
	struct mconf *conf;
	struct store *st;
	struct threadmap tm;
	enum mconf_map which; /* the database it came from */
	int rc; /* of mconf_store_get() */
	int opened;
};

static int lazy_open(struct lazy_map *lm)
{
	if (!lm->opened) {
		lm->opened = 1;
		lm->rc = mconf_store_get(&lm->st, &lm->which, lm->conf);
		if (!lm->rc)
			store_threadmap(&lm->tm, lm->st);
	}
	return lm->rc; /* logged by mconf */
}

static int lazy_mail_get(void *arg, struct threadmap_mail *out,
			 const char *message_id)
{
	struct lazy_map *lm = arg;
	int rc = lazy_open(lm);

	return rc ? rc : lm->tm.mail_get(lm->tm.arg, out, message_id);
}

/* No database: no revision either. */
static int lazy_revision_list(void *arg, struct threadmap_revision_list *out)
{
	struct lazy_map *lm = arg;
	int rc = lazy_open(lm);

	if (rc == PB_ENOTFOUND)
		return 0;
	return rc ? rc : lm->tm.revision_list(lm->tm.arg, out);
}

static void classify_at_eoh(struct session *s, const struct classify_opts *opts)
{
	struct lazy_map lm;
	struct threadmap tm;

	memset(&lm, 0, sizeof(lm));
	lm.conf = s->conf;
	memset(&tm, 0, sizeof(tm));
	/* the calls classify_headers() makes */
	tm.mail_get = lazy_mail_get;
	tm.revision_list = lazy_revision_list;
	tm.arg = &lm;
	classify_headers(&s->early, &s->in, &tm, opts);
	/* a failed map leaves the mail to the end of message, which
	 * tries this host's copy too */
	mconf_store_put(s->conf, lm.st, lm.which, s->early.map_failed);
}

/*
 * A skipped message is decided unless a forged Authentication-Results
 * field is to be deleted: only the end of message may do that.
 */
static int decided(const struct session *s)
{
	return s->skip != SESSION_KEEP && !s->judge.nr_forged;
}

int session_eoh(struct session *s)
{
	const struct mconf_view *v;
	struct classify_opts opts;

	if (!s->conf)
		return 1;
	if (s->in_body)
		return decided(s);
	s->in_body = 1;
	s->size += 1;
	if (s->skip != SESSION_KEEP)
		return decided(s);
	v = mconf_view(s->conf);
	opts.domain = v->domain;
	opts.address = v->address;
	opts.diffs = v->diffs;
	opts.submissions = v->submissions;
	classify_at_eoh(s, &opts);
	if (s->early.verdict == CLASSIFY_LOOP)
		mark(s, SESSION_SKIP_LOOP);
	else if (s->early.verdict == CLASSIFY_PASS)
		mark(s, SESSION_SKIP_UNTHREADED);
	else
		add_text(s, "\n", 1);
	return decided(s);
}

void session_body(struct session *s, const void *data, size_t len)
{
	if (!s->conf)
		return;
	if (!s->in_body)
		(void)session_eoh(s);
	s->size += len;
	if (s->skip == SESSION_KEEP)
		add_text(s, data, len);
}

/* ------------------------------------------------------------------ */
/* The X-Patchbridge value */

/* Untrusted or odd bytes in what the header shows become '?'. */
static void add_token(struct buf *b, const char *p, size_t max)
{
	size_t i;

	for (i = 0; p[i] && i < max; i++) {
		int c = (unsigned char)p[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '-' || c == '_' ||
			 c == '.' || c == '/';

		buf_addch(b, ok ? c : '?');
	}
	if (p[i])
		buf_adds(b, "~");
}

static void format_target(struct buf *b, const char *kind,
			  const struct classify_result *res)
{
	buf_adds(b, kind);
	/* a series posted to the list answers no merge request yet */
	if (res->verdict == CLASSIFY_SUBMIT)
		goto via;
	buf_addch(b, ' ');
	add_token(b, res->project, SESSION_PROJECT_SHOWN_MAX);
	buf_addf(b, "!%lld", (long long)res->iid);
	if (res->revision > 0) {
		buf_addf(b, " v%d %d", res->revision, res->patch);
		if (res->total > 0)
			buf_addf(b, "/%d", res->total);
	}
via:
	buf_addf(b, "; via=%s", classify_via_name(res->via));
}

static void format_review(struct buf *b, const struct review *r)
{
	const char *seen[8]; /* types shown, at most */
	size_t i, j, nseen = 0;

	buf_adds(b, "; trailers=");
	for (i = 0; i < r->trailers.nr; i++) {
		const char *t = r->trailers.v[i].type;

		for (j = 0; j < nseen && strcmp(seen[j], t); j++)
			;
		if (j < nseen || nseen == sizeof(seen) / sizeof(seen[0]))
			continue;
		if (nseen)
			buf_addch(b, ',');
		seen[nseen++] = t;
		add_token(b, t, 40);
	}
	if (!nseen)
		buf_adds(b, "none");
	buf_addf(b, "; inline=%zu; nak=%s; auth=%s", r->nr_inline,
		 r->nak ? "yes" : "no",
		 r->auth.verified ? "verified" : "unverified");
}

/* ------------------------------------------------------------------ */
/* End of message */

static void outcome_init(struct session_outcome *out)
{
	memset(out, 0, sizeof(*out));
	out->action = SESSION_ACCEPT;
	out->verdict = "pass";
	out->reason = "";
	out->kind = "";
}

/* The end of one message in the metrics (core/metrics.c, the milter's). */
static void count(const struct session_outcome *out, size_t bytes)
{
	metrics_inc0(MET_MILTER_MAILS_SEEN);
	/* The daemon tells by it whether Postfix calls us (core/health.h). */
	metrics_set0(MET_MILTER_LAST_SEEN, (double)time(NULL));
	if (out->kind[0])
		metrics_inc1(MET_MILTER_MAILS_CLASSIFIED, out->kind);
	if (out->action == SESSION_TEMPFAIL) {
		metrics_inc0(MET_MILTER_TEMPFAILS);
	} else if (out->spool_name[0]) {
		metrics_inc0(MET_MILTER_MAILS_SPOOLED);
		metrics_add0(MET_MILTER_SPOOLED_BYTES, (double)bytes);
	} else {
		metrics_inc1(
			MET_MILTER_MAILS_IGNORED,
			!strcmp(out->verdict, "oversize") ? "oversize" :
			!strcmp(out->verdict, "headers")  ? "header-limits" :
							    out->reason);
	}
}

/*
 * The file read back into raw, when it cannot be mapped: over the
 * budget, since the mail is here and must not be lost.
 */
static void read_back(struct session *s)
{
	size_t got = 0, want = buf_grown_size(&s->raw, s->fd_len);
	ssize_t n;

	atomic_fetch_add(&held_total, want);
	s->held = want;
	buf_grow(&s->raw, s->fd_len);
	while (got < s->fd_len) {
		n = pread(s->fd, s->raw.data + got, s->fd_len - got,
			  (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_error("cannot read back the mail's file: %s",
				  n ? strerror(errno) : "end of file");
			s->cut = 1;
			break;
		}
		got += (size_t)n;
	}
	s->raw.len = got;
	s->raw.data[got] = '\0';
}

/*
 * At end of message: what was kept as one NUL-terminated text in
 * s->msg[0..msg_len), as the parsers take it.  That is raw itself, or
 * the file mapped privately with one zero byte after it (the file grows
 * by that byte, so the mapping never reaches past the file's end).
 */
static void view(struct session *s)
{
	char *map;

	if (s->fd >= 0) {
		(void)flush_stage(s); /* a failure cuts the mail there */
		map = MAP_FAILED;
		if (ftruncate(s->fd, (off_t)s->fd_len + 1) == 0)
			map = mmap(NULL, s->fd_len + 1, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE, s->fd, 0);
		if (map != MAP_FAILED) {
			s->map = map;
			s->map_len = s->fd_len + 1;
			map[s->fd_len] = '\0';
			s->msg = map;
			s->msg_len = s->fd_len;
			return;
		}
		log_error("cannot map the mail's file (%s): reading it back "
			  "into memory",
			  strerror(errno));
		read_back(s);
	}
	s->msg = s->raw.data;
	s->msg_len = s->raw.len;
}

/* Shorten the text view() made to its first len bytes. */
static void view_truncate(struct session *s, size_t len)
{
	if (s->map) {
		s->map[len] = '\0';
	} else {
		buf_truncate(&s->raw, len);
		s->msg = s->raw.data;
	}
	s->msg_len = len;
}

/* The relevant mail: parse, spool, say what was understood. */
static void bridge(struct session_outcome *out, struct session *s,
		   const struct classify_result *res)
{
	const struct mconf_view *v = mconf_view(s->conf);
	struct review_options ropts = { .trusted_authserv_id = v->authserv_id,
					.trusted_fields = v->authres_fields };
	struct review *r = NULL;
	struct spool_meta meta;
	struct buf hdr = BUF_INIT(SESSION_HEADER_MAX - 1);
	char mid[PB_LOG_QUOTE_MAX];
	int rc;

	rc = review_parse(&r, s->msg, s->msg_len, res->parent, &ropts);
	if (rc)
		log_warn("message <%s> to %s!%lld does not parse (%s); "
			 "spooling it for the daemon anyway",
			 safe(mid, sizeof(mid), s->in.message_id), res->project,
			 (long long)res->iid, err_msg());

	memset(&meta, 0, sizeof(meta));
	meta.queue_id = s->queue_id;
	meta.message_id = s->in.message_id;
	meta.sender = s->sender && strlen(s->sender) <= SPOOL_SENDER_MAX ?
			      s->sender :
			      NULL;
	/* a series posted to the list: the daemon collects it */
	meta.kind = res->verdict == CLASSIFY_SUBMIT ? "submission" :
		    r ? review_kind_name(r->kind) :
			"reply";
	out->kind = meta.kind;
	meta.project = res->project;
	meta.iid = res->iid;
	meta.revision = res->revision > 0 ? res->revision : 0;
	meta.patch = res->patch > 0 ? res->patch : 0;
	meta.received = s->cut ? s->size : s->msg_len;

	/* What the header says is taken from the parse now, and the parse
	 * let go: it is several times the mail, and spool_put() may wait
	 * for other writers' fsync (the group commit). */
	format_target(&hdr, meta.kind, res);
	if (r)
		format_review(&hdr, r);
	else
		buf_adds(&hdr, "; parse=failed");
	if (s->cut)
		buf_addf(&hdr, "; cut=%zu/%zu", s->msg_len, s->size);
	review_free(r);
	r = NULL;

	rc = spool_put(out->spool_name, sizeof(out->spool_name), v->spool,
		       &meta, s->msg, s->msg_len);
	if (rc) {
		log_error("cannot spool the reply <%s> to %s!%lld: %s (%s); "
			  "answering tempfail",
			  safe(mid, sizeof(mid), s->in.message_id),
			  res->project, (long long)res->iid, err_msg(),
			  err_name(rc));
		out->action = SESSION_TEMPFAIL;
		out->verdict = "tempfail";
		out->reason = "spool";
		out->spool_name[0] = '\0';
		goto out;
	}

	/* Every part is bounded (SESSION_PROJECT_SHOWN_MAX, eight trailer
	 * types of 40 bytes) well under the cap: a cut would be a bug, said
	 * in the log rather than hidden. */
	if (buf_adds(&hdr, "; queued"))
		log_warn("<%s>: X-Patchbridge header cut: %s",
			 safe(mid, sizeof(mid), s->in.message_id), err_msg());
	snprintf(out->header, sizeof(out->header), "%s", hdr.data);
	out->verdict = "bridged";
	out->reason = res->reason;
	log_info("<%s>: %s; spooled as %s",
		 safe(mid, sizeof(mid), s->in.message_id), out->header,
		 out->spool_name);
out:
	buf_release(&hdr);
	review_free(r);
}

static void eom(struct session_outcome *out, struct session *s)
{
	const struct mconf_view *v;
	struct classify_opts opts;
	struct classify_result res;
	struct threadmap tm;
	struct store *st = NULL;
	enum mconf_map which;
	char mid[PB_LOG_QUOTE_MAX];
	int rc;

	outcome_init(out);
	if (!s->conf)
		return;
	if (!s->in_body)
		(void)session_eoh(s);
	flush_cr(s);
	v = mconf_view(s->conf);
	if (s->judge.nr_forged)
		log_notice("<%s>: %zu Authentication-Results field%s claiming "
			   "%s not added by its verifier: removed, not read",
			   safe(mid, sizeof(mid), s->in.message_id),
			   s->judge.nr_forged,
			   s->judge.nr_forged == 1 ? "" : "s", v->authserv_id);
	switch (s->skip) {
	case SESSION_KEEP:
		break;
	case SESSION_SKIP_HEADERS:
		out->verdict = "headers";
		out->reason = "header_limits";
		log_notice("<%s>: more than %d header fields or one over %d "
			   "bytes: passed on untouched, not bridged",
			   safe(mid, sizeof(mid), s->in.message_id),
			   PB_HEADER_COUNT_MAX, PB_HEADER_VALUE_MAX);
		return;
	case SESSION_SKIP_LOOP:
		out->verdict = "loop";
		out->kind = "own";
		out->reason = s->early.reason;
		log_info("<%s>: the bridge's own mail (%s), not bridged back",
			 safe(mid, sizeof(mid), s->in.message_id),
			 s->early.reason);
		return;
	case SESSION_SKIP_UNTHREADED:
		out->kind = "unrelated";
		out->reason = s->early.reason;
		log_debug("<%s>: %s", safe(mid, sizeof(mid), s->in.message_id),
			  s->early.reason);
		return;
	}

	view(s);
	if (s->cut) {
		/* what fits is bridged: up to its last line end */
		const char *nl = memrchr(s->msg, '\n', s->msg_len);

		view_truncate(s, nl ? (size_t)(nl + 1 - s->msg) : 0);
		log_notice(
			"<%s>: %zu bytes is over [milter] max_message_size "
			"(%zu) or its file failed: the first %zu are bridged",
			safe(mid, sizeof(mid), s->in.message_id), s->size,
			s->max_message, s->msg_len);
	}
	opts.domain = v->domain;
	opts.address = v->address;
	opts.diffs = v->diffs;
	opts.submissions = v->submissions;
	classify_result_init(&res);
	rc = mconf_store_get(&st, &which, s->conf);
	if (rc)
		st = NULL; /* logged; the Message-ID scheme still works */
	if (st)
		store_threadmap(&tm, st);
	classify_eom(&res, &s->in, s->msg, s->msg_len, st ? &tm : NULL, &opts);
	mconf_store_put(s->conf, st, which, res.map_failed);
	if (st && which == MCONF_SHARED && res.map_failed) {
		/* the database failed or was slow: this host's copy */
		classify_result_release(&res);
		classify_result_init(&res);
		rc = mconf_store_get(&st, &which, s->conf);
		if (rc)
			st = NULL;
		if (st)
			store_threadmap(&tm, st);
		classify_eom(&res, &s->in, s->msg, s->msg_len, st ? &tm : NULL,
			     &opts);
		mconf_store_put(s->conf, st, which, res.map_failed);
	}
	switch (res.verdict) {
	case CLASSIFY_BRIDGE:
	case CLASSIFY_SUBMIT:
		bridge(out, s, &res);
		break;
	case CLASSIFY_LOOP:
		out->verdict = "loop";
		out->kind = "own";
		out->reason = res.reason;
		break;
	case CLASSIFY_PASS:
	case CLASSIFY_CANDIDATE:
		out->kind = "unrelated";
		out->reason = res.reason;
		log_debug("<%s>: %s", safe(mid, sizeof(mid), s->in.message_id),
			  res.reason);
		break;
	}
	classify_result_release(&res);
}

void session_eom(struct session_outcome *out, struct session *s)
{
	int had_conf = s->conf != NULL;

	eom(out, s);
	if (had_conf)
		count(out, s->msg_len);
}
