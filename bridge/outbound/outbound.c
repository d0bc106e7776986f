#include "outbound/outbound.h"

#include "core/config.h"
#include "core/secret.h"
#include "core/health.h"
#include "core/metrics.h"
#include "core/owners.h"
#include "forge/forge.h"
#include "mail/diff.h"
#include "mail/review.h"
#include "mail/subject.h"
#include "outbound/detect.h"
#include "outbound/emailmr.h"
#include "outbound/emailnotice.h"
#include "outbound/gitrepo.h"
#include "outbound/listarchive.h"
#include "outbound/mailhdr.h"
#include "outbound/mirror.h"
#include "outbound/openthreads.h"
#include "outbound/reviewers.h"
#include "outbound/commitsig.h"
#include "outbound/series.h"
#include "outbound/submit.h"
#include "state/store.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/sdnotify.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* How often the revision number may change under us (another process
 * started a revision of the same MR) before we give up for now. */
#define OUTBOUND_START_TRIES 3

struct outbound {
	const struct config *cfg;
	struct store *store;
	struct forge *forge;
	struct submit *submit;
	char *token;
	const volatile sig_atomic_t *stop;
	char *mirror_root;
	char *lock_path;
	int lock_fd;
	int locked; /* depth: outbound_mr() calls the delivery inside */
	/* Asks the list archive about a mail handed with the outcome
	 * unknown; made at its first use, without the forge's token. */
	struct listarchive *archive;
	/* Mails the MTA accepted whose acceptance the store could not
	 * record (the database went away): recorded before anything else
	 * is delivered, never sent again by this process. */
	struct strlist unrecorded;
	/* [outbound] attest: the key, read at start; key NULL: off. */
	struct patatt_key *attest_key;
	struct series_attest attest;
	/* Who a series posted to the list is opened as (emailmr.h);
	 * NULL: the bridge. */
	emailmr_user_fn map_user;
	void *map_arg;
};

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static int stopping(const struct outbound *ob)
{
	return ob->stop && *ob->stop;
}

/* "group/project!12 v3" on every log line from here on, until the
 * log_ctx_pop() of the entry point (outbound_mr, outbound_deliver_due). */
static void ctx_set(const char *project, int64_t iid, int revision)
{
	char ctx[PB_LOG_CTX_MAX];

	if (revision > 0)
		snprintf(ctx, sizeof(ctx), "%s!%lld v%d", project,
			 (long long)iid, revision);
	else
		snprintf(ctx, sizeof(ctx), "%s!%lld", project, (long long)iid);
	log_ctx_set(ctx);
}

int64_t outbound_backoff(int attempts)
{
	int64_t d = OUTBOUND_RETRY_BASE;

	while (--attempts > 0 && d < OUTBOUND_RETRY_MAX)
		d *= 2;
	return d < OUTBOUND_RETRY_MAX ? d : OUTBOUND_RETRY_MAX;
}

int outbound_parse_mr(char *project, size_t size, int64_t *iid,
		      const char *spec)
{
	const char *bang = strrchr(spec, '!');
	uint64_t n;
	size_t len;

	if (!bang || bang == spec)
		return err_set(PB_EINVAL, "want group/project!IID");
	len = (size_t)(bang - spec);
	if (len >= size ||
	    !mem_to_u64(bang + 1, strlen(bang + 1), INT64_MAX, &n) || n == 0)
		return err_set(PB_EINVAL, "want group/project!IID");
	memcpy(project, spec, len);
	project[len] = '\0';
	*iid = (int64_t)n;
	return 0;
}

/* --- set-up ------------------------------------------------------------ */

/*
 * The attestation key, read as the token is (core/secret.h: the same
 * permission rules), and tried once on a mail of two lines so that a
 * bad key, address or selector stops the start, not a revision.
 */
static int attest_open(struct outbound *ob)
{
	static const char probe[] = "From: probe@invalid\nSubject: probe\n"
				    "\nprobe\n";
	const char *path = config_str(ob->cfg, CFG_OUTBOUND_ATTEST_KEY_FILE);
	const char *sel = config_str(ob->cfg, CFG_OUTBOUND_ATTEST_SELECTOR);
	struct buf text = BUF_INIT(SECRET_MAX + 1);
	struct buf b = BUF_INIT(PB_HEADER_VALUE_MAX);
	int rc;

	rc = secret_read(&text, path, 0);
	if (!rc)
		rc = patatt_key_new(&ob->attest_key, text.data, text.len);
	secret_wipe(&text);
	if (rc)
		return err_prefix(rc, "[outbound] attest_key_file %s", path);
	ob->attest.key = ob->attest_key;
	ob->attest.identity = config_str(ob->cfg, CFG_BRIDGE_ADDRESS);
	ob->attest.selector = sel[0] ? sel : NULL;
	rc = patatt_sign(&b, probe, sizeof(probe) - 1, ob->attest.key,
			 ob->attest.identity, ob->attest.selector, 0);
	buf_release(&b);
	if (rc)
		return err_prefix(rc, "[outbound] attest");
	return 0;
}

int outbound_new(struct outbound **out, const struct outbound_opts *opts)
{
	const char *state = config_str(opts->cfg, CFG_STATE_PATH);
	const char *slash = strrchr(state, '/');
	struct outbound *ob;

	*out = NULL;
	ob = xcalloc(1, sizeof(*ob));
	ob->cfg = opts->cfg;
	ob->store = opts->store;
	ob->forge = opts->forge;
	ob->submit = opts->submit;
	ob->token = opts->token ? xstrdup(opts->token) : NULL;
	ob->stop = opts->stop;
	if (slash && slash != state)
		ob->mirror_root =
			xasprintf("%.*s/mirrors", (int)(slash - state), state);
	else
		ob->mirror_root = xstrdup(slash ? "/mirrors" : "mirrors");
	ob->lock_path = xasprintf("%s.lock", state);
	ob->lock_fd = open(ob->lock_path,
			   O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
			   0600);
	if (ob->lock_fd < 0) {
		int rc = err_set_errno(err_from_errno(errno), "open %s",
				       ob->lock_path);

		outbound_free(ob);
		return rc;
	}
	if (config_bool(ob->cfg, CFG_OUTBOUND_ATTEST)) {
		int rc = attest_open(ob);

		if (rc) {
			outbound_free(ob);
			return rc;
		}
	}
	*out = ob;
	return 0;
}

void outbound_free(struct outbound *ob)
{
	if (!ob)
		return;
	if (ob->lock_fd >= 0)
		close(ob->lock_fd);
	patatt_key_free(ob->attest_key);
	listarchive_free(ob->archive);
	strlist_release(&ob->unrecorded);
	if (ob->token) {
		volatile char *t = ob->token;

		while (*t)
			*t++ = '\0';
		free(ob->token);
	}
	free(ob->mirror_root);
	free(ob->lock_path);
	free(ob);
}

static int lock(struct outbound *ob)
{
	if (ob->locked++)
		return 0;
	while (flock(ob->lock_fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			ob->locked = 0;
			return err_set_errno(PB_ETEMP, "lock %s",
					     ob->lock_path);
		}
	}
	return 0;
}

static void unlock(struct outbound *ob)
{
	if (ob->locked && !--ob->locked)
		flock(ob->lock_fd, LOCK_UN);
}

/* --- delivery ------------------------------------------------------------ */

static void report_reason(struct outbound_report *rep, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void report_reason(struct outbound_report *rep, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rep->reason, sizeof(rep->reason), fmt, ap);
	va_end(ap);
}

/* Split the stored recipients (one per line) into rcpts. */
static void split_lines(struct strlist *out, const char *s)
{
	const char *nl;

	while (*s) {
		nl = strchr(s, '\n');
		if (!nl) {
			strlist_push(out, s);
			break;
		}
		if (nl > s)
			strlist_pushn(out, s, (size_t)(nl - s));
		s = nl + 1;
	}
}

/* The one-line error kept for status: the MTA's reply when it gave one. */
static void delivery_error(struct buf *out, const struct submit_result *res)
{
	buf_reset(out);
	if (res->reply[0])
		buf_addf(out, "%s: %s", submit_status_name(res->status),
			 res->reply);
	else
		buf_addf(out, "%s: %s", submit_status_name(res->status),
			 err_msg());
}

struct delivery {
	int sent, deferred, failed;
	int64_t next_due; /* earliest deferred due time, 0: none */
	int blocked; /* a mail of the revision being sent is waiting */
	int stopped; /* the stop flag was seen */
};

static void note_due(struct delivery *d, int64_t due)
{
	if (!d->next_due || due < d->next_due)
		d->next_due = due;
}

/* The MTA took the mail, or the list archive has it: record it sent. */
static int record_sent(struct outbound *ob, struct delivery *d,
		       const struct store_outmail *m, enum store_sent_how how)
{
	int rc, done = 0;

	rc = store_outmail_sent(&done, ob->store, m->message_id, how);
	if (rc)
		return rc;
	d->sent++;
	metrics_inc1(MET_MAILS_SENT, m->project);
	metrics_set0(MET_MAILS_LAST_SENT, (double)time(NULL));
	if (done) {
		metrics_inc1(MET_SERIES_SENT, m->project);
		log_notice("revision sent: all mails accepted");
	}
	return 0;
}

/*
 * Record the acceptances the store could not record before (the
 * database was gone): each is sent, whatever its row says now; a row
 * that is gone was recorded meanwhile.  PB_ETEMP while the database is
 * still away: nothing is delivered until they are recorded.
 */
static int record_unrecorded(struct outbound *ob)
{
	int rc, done;

	while (ob->unrecorded.nr) {
		const char *id = ob->unrecorded.items[0];

		rc = store_outmail_sent(&done, ob->store, id, STORE_SENT_LATE);
		if (rc == PB_ENOTFOUND) {
			rc = 0;
		} else if (rc) {
			return err_set(rc,
				       "the MTA's acceptance of <%s> is not "
				       "recorded yet: %s",
				       id, err_msg());
		} else {
			log_notice("mail <%s>: the MTA's acceptance is "
				   "recorded now%s",
				   id, done ? "; revision sent" : "");
		}
		strlist_remove(&ob->unrecorded, 0);
	}
	return 0;
}

/*
 * A mail handed to the MTA before whose outcome is unknown (its host
 * died or lost the database before the 250 was recorded, or the
 * connection was lost at the end of data): may it go again?  Asks the
 * list archive ([inbound] archive_url): there, it is recorded sent and
 * never sent again; not there, it waits until [outbound] archive_wait
 * after it was handed (the archive may lag behind the list) and then
 * goes again; the archive not answering, the same, with a warning.
 * Without an archive it goes again at once, as SMTP leaves no other
 * way.  *resend 1: send it now; 0: it was recorded or is waiting.
 */
static int unknown_outcome(int *resend, struct outbound *ob, struct delivery *d,
			   const struct store_outmail *m)
{
	const struct config_project *proj = NULL;
	const char *base = "";
	int64_t wait_s, until, t = now_s();
	int rc, found = 0;

	*resend = 0;
	if (!config_project_get(&proj, ob->cfg, m->project))
		base = config_project_str(proj, CFG_INBOUND_ARCHIVE_URL);
	if (!base[0]) {
		log_warn("mail <%s> was handed to the MTA %llds ago and "
			 "whether it took it is unknown; no list archive "
			 "([inbound] archive_url) to ask: sending it again, "
			 "the list may see it twice",
			 m->message_id, (long long)(t - m->handed));
		*resend = 1;
		return 0;
	}
	if (!ob->archive) {
		rc = listarchive_new(&ob->archive, NULL, ob->stop);
		if (rc)
			return rc;
	}
	rc = listarchive_has(&found, ob->archive, base, m->message_id);
	if (!rc && found) {
		rc = record_sent(ob, d, m, STORE_SENT_ARCHIVE);
		if (!rc)
			log_notice("mail <%s> found in the list archive: "
				   "recorded as sent, not sent again",
				   m->message_id);
		return rc == PB_ENOTFOUND ? 0 : rc; /* recorded meanwhile */
	}
	if (rc && stopping(ob)) {
		/* Cut short by a stop: leave it handed for the next look. */
		rc = store_outmail_wait(ob->store, m->message_id, t,
					"handed to the MTA, outcome unknown",
					0);
		return rc == PB_EEXISTS ? 0 : rc;
	}
	wait_s = config_duration_ms(ob->cfg, CFG_OUTBOUND_ARCHIVE_WAIT) / 1000;
	until = m->handed + wait_s;
	if (t < until) {
		struct buf why = BUF_INIT(PB_ERRMSG_MAX + 128);

		if (rc)
			buf_addf(&why,
				 "handed to the MTA, outcome unknown; the list "
				 "archive does not answer: %s",
				 err_msg());
		else
			buf_adds(&why, "handed to the MTA, outcome unknown; "
				       "not in the list archive yet");
		log_info("mail <%s>: %s; asking again in %llds", m->message_id,
			 why.data, (long long)(until - t));
		rc = store_outmail_wait(ob->store, m->message_id, until,
					why.data, 0);
		buf_release(&why);
		if (rc == PB_EEXISTS)
			rc = 0; /* taken over: that host decides */
		if (!rc) {
			d->deferred++;
			d->blocked = 1;
			note_due(d, until);
		}
		return rc;
	}
	if (rc)
		log_warn("mail <%s>: the list archive cannot say whether it "
			 "has it (%s), %llds after it was handed to the MTA: "
			 "sending it again, the list may see it twice",
			 m->message_id, err_msg(), (long long)(t - m->handed));
	else
		log_notice("mail <%s> is not in the list archive %llds after "
			   "it was handed to the MTA: sending it again",
			   m->message_id, (long long)(t - m->handed));
	*resend = 1;
	return 0;
}

/*
 * Hand one queued mail to the MTA and record the outcome.  Returns 0
 * whatever the MTA said (the delivery counts say it); an error only when
 * the store failed.  The mail is claimed first (store_outmail_claim()):
 * of several hosts sharing the state, one hands it to its MTA; a mail
 * another host is sending holds back the rest of its revision here.
 * Before the data goes out the store records it handed, so a host that
 * dies before it records the MTA's answer leaves a mail the next sender
 * looks for in the list archive first (unknown_outcome()).
 */
static int deliver_one(struct outbound *ob, struct delivery *d,
		       const struct store_outmail *item)
{
	struct store_outmail m;
	struct submit_result res;
	struct strlist rcpts = STRLIST_INIT;
	/* Room for the status, a message and "(gave up after N attempts)". */
	struct buf why = BUF_INIT(PB_ERRMSG_MAX + 64);
	int rc, srv, resend;
	size_t i;
	int64_t t, due;

	store_outmail_init(&m);
	submit_result_init(&res);
	rc = store_outmail_claim(ob->store, item->message_id);
	if (rc == PB_ENOTFOUND) {
		log_debug("mail <%s> was sent meanwhile", item->message_id);
		rc = 0;
		goto out;
	}
	if (rc == PB_EEXISTS) {
		/* Look again when the claim would expire: a host that died
		 * holding it leaves the mail to this one then. */
		log_info("%s", err_msg());
		d->deferred++;
		d->blocked = 1;
		note_due(d, item->lease_until > now_s() ? item->lease_until :
							  now_s() + 1);
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	rc = store_outmail_get(&m, ob->store, item->message_id);
	if (rc)
		goto out;
	if (m.handed) {
		rc = unknown_outcome(&resend, ob, d, &m);
		if (rc || !resend)
			goto out;
	}
	rc = store_outmail_hand(ob->store, m.message_id);
	if (rc == PB_EEXISTS) { /* taken over since the claim */
		log_info("%s", err_msg());
		d->deferred++;
		d->blocked = 1;
		note_due(d, now_s() + 1);
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	split_lines(&rcpts, m.recipients);
	srv = submit_send(&res, ob->submit, m.envelope_from, &rcpts, m.message,
			  m.message_len);
	sdnotify_watchdog(); /* the MTA answered or gave up: progress */
	if (!srv) {
		rc = record_sent(ob, d, &m, STORE_SENT_MTA);
		if (rc) {
			/* Accepted but not recorded: remembered, and
			 * recorded before anything else is sent. */
			strlist_push(&ob->unrecorded, m.message_id);
			log_error("mail <%s> accepted (queue id %s) but not "
				  "recorded as sent: %s; it is recorded when "
				  "the database is back, not sent again",
				  m.message_id, res.queue_id, err_msg());
			goto out;
		}
		health_report(HEALTH_SMTP, 1, "the MTA accepted the last mail");
		log_debug("accepted: mail %d (%s) <%s>%s%s", m.patch,
			  m.patch ? "patch" : "cover", m.message_id,
			  res.queue_id[0] ? ", queue id " : "", res.queue_id);
		strlist_for_each (&res.refused, i)
			log_warn("recipient refused: %s", res.refused.items[i]);
		goto out;
	}
	delivery_error(&why, &res);
	/* An SMTP answer (4xx, 5xx) or a refusal says the MTA is there; a
	 * lost connection or sendmail failing locally, not. */
	health_report(HEALTH_SMTP,
		      res.status == SUBMIT_REJECTED ||
			      (res.code >= 400 && res.code <= 599),
		      "the last submission: %s", why.data);
	metrics_inc1(MET_SMTP_FAILURES,
		     res.status == SUBMIT_REJECTED ? "rejected" :
		     res.status == SUBMIT_UNKNOWN  ? "unknown" :
						     "tempfail");
	t = now_s();
	if (res.status == SUBMIT_REJECTED ||
	    t - m.created > OUTBOUND_RETRY_LIFETIME) {
		if (res.status != SUBMIT_REJECTED)
			buf_addf(&why, " (gave up after %d attempts)",
				 m.attempts + 1);
		rc = store_outmail_fail(ob->store, m.message_id, why.data);
		if (!rc)
			d->failed++;
		else if (rc == PB_EEXISTS) /* taken over: that host decides */
			rc = 0;
		log_error("mail <%s> failed for good: %s", m.message_id,
			  why.data);
		goto out;
	}
	due = t + outbound_backoff(m.attempts + 1);
	/* No verdict after the whole message: it stays handed, and the
	 * next attempt asks the list archive first. */
	if (res.status == SUBMIT_UNKNOWN)
		rc = store_outmail_wait(ob->store, m.message_id, due, why.data,
					1);
	else
		rc = store_outmail_defer(ob->store, m.message_id, due,
					 why.data);
	if (!rc || rc == PB_EEXISTS) {
		d->deferred++;
		d->blocked = 1;
		note_due(d, due);
		rc = 0;
	}
	log_warn("mail <%s> deferred (attempt %d, next in %llds): %s%s",
		 m.message_id, m.attempts + 1, (long long)(due - t), why.data,
		 res.status == SUBMIT_UNKNOWN ?
			 "; it may have been delivered: the list archive is "
			 "asked before it is sent again" :
			 "");
out:
	submit_result_release(&res);
	strlist_release(&rcpts);
	buf_release(&why);
	store_outmail_release(&m);
	return rc;
}

/*
 * Deliver the queued mails of one MR (iid > 0) or of everything (project
 * NULL), in project, MR, revision, patch order.  A deferred mail that is
 * not due (unless force) holds back the rest of its revision, and so does
 * a temporary failure now.
 */
static int deliver(struct outbound *ob, struct delivery *d, const char *project,
		   int64_t iid, int force)
{
	struct store_outmail_list list = { 0 };
	const struct store_outmail *prev = NULL;
	size_t i;
	int rc;
	int64_t t = now_s();

	rc = record_unrecorded(ob);
	if (rc)
		goto out;
	rc = store_outmail_list(&list, ob->store, project, iid, 0);
	if (rc)
		goto out;
	for (i = 0; i < list.nr; i++) {
		const struct store_outmail *m = &list.items[i];

		if (!prev || prev->iid != m->iid ||
		    prev->revision != m->revision ||
		    strcmp(prev->project, m->project)) {
			d->blocked = 0; /* a new revision */
			ctx_set(m->project, m->iid, m->revision);
		}
		prev = m;
		if (m->state == STORE_OUTMAIL_FAILED) {
			d->failed++;
			continue;
		}
		if (d->blocked) {
			if (m->state == STORE_OUTMAIL_DEFERRED)
				note_due(d, m->next_attempt);
			d->deferred++;
			continue;
		}
		if (m->state == STORE_OUTMAIL_DEFERRED && !force &&
		    m->next_attempt > t) {
			note_due(d, m->next_attempt);
			d->deferred++;
			d->blocked = 1;
			continue;
		}
		if (stopping(ob)) {
			d->stopped = 1;
			break;
		}
		rc = deliver_one(ob, d, m);
		if (rc)
			break;
	}
out:
	store_outmail_list_release(&list);
	return rc;
}

int outbound_deliver_due(struct outbound *ob, int64_t *next_due, int *sent)
{
	struct log_ctx_saved saved;
	struct delivery d;
	int rc;

	memset(&d, 0, sizeof(d));
	*next_due = 0;
	if (sent)
		*sent = 0;
	rc = lock(ob);
	if (rc)
		return rc;
	log_ctx_push(&saved, NULL); /* deliver() sets one per revision */
	rc = deliver(ob, &d, NULL, 0, 0);
	unlock(ob);
	log_ctx_pop(&saved);
	*next_due = d.next_due;
	if (sent)
		*sent = d.sent;
	return rc;
}

/* --- Cc ---------------------------------------------------------------- */

/* Mailboxes as name + address, unique by address (ASCII case ignored). */
struct cc_list {
	struct strlist names;
	struct strlist addrs;
};

static void cc_release(struct cc_list *cc)
{
	strlist_release(&cc->names);
	strlist_release(&cc->addrs);
}

static void cc_add(struct cc_list *cc, const char *name, const char *addr)
{
	if (strlist_find_icase(&cc->addrs, addr) >= 0)
		return;
	strlist_push(&cc->names, name ? name : "");
	strlist_push(&cc->addrs, addr);
}

static void cc_copy(struct cc_list *dst, const struct cc_list *src)
{
	size_t i;

	strlist_for_each (&src->addrs, i)
		cc_add(dst, src->names.items[i], src->addrs.items[i]);
}

/* "Name <addr>", "\"Quoted, Name\" <addr>" or "addr" (owners_route()'s
 * output) into cc. */
static void cc_add_mailbox(struct cc_list *cc, const char *item)
{
	struct buf name = BUF_INIT(OWNERS_NAME_MAX * 2);
	const char *lt = strrchr(item, '<'), *p = item;
	char *addr;
	size_t n, i;

	if (!lt || !strchr(lt, '>')) {
		cc_add(cc, "", item);
		buf_release(&name);
		return;
	}
	addr = xstrndup(lt + 1, (size_t)(strchr(lt, '>') - lt - 1));
	n = (size_t)(lt - item);
	mem_trim(&p, &n);
	if (n >= 2 && p[0] == '"' && p[n - 1] == '"') {
		for (i = 1; i + 1 < n; i++) {
			if (p[i] == '\\' && i + 2 < n)
				i++;
			buf_addch(&name, p[i]);
		}
	} else {
		buf_add(&name, p, n);
	}
	/* A display name too long to keep whole: the address alone. */
	cc_add(cc, buf_error(&name) ? "" : name.data, addr);
	free(addr);
	buf_release(&name);
}

/* The user's public email as a mailbox; users without one are skipped. */
static void cc_add_user(struct cc_list *cc, struct forge *f,
			const struct forge_user *who, const char *role)
{
	struct forge_user u;
	char p[PB_LOG_QUOTE_MAX];
	int rc;

	memset(&u, 0, sizeof(u));
	if (who->id <= 0)
		return;
	rc = forge_get_user(&u, f, who->id);
	if (rc) {
		log_warn("cannot look up the %s %s: %s; not Cc'd", role,
			 printable_copy(p, sizeof(p), who->username,
					who->username ? strlen(who->username) :
							0),
			 err_msg());
		return;
	}
	/* Never the private address, even when the token may see it. */
	if (!u.public_email || !*u.public_email) {
		log_debug("the %s %s has no public email; not Cc'd", role,
			  u.username ? u.username : "?");
	} else if (submit_addr_check(u.public_email)) {
		log_warn("the %s's public email is unusable (%s); not Cc'd",
			 role, err_msg());
	} else {
		cc_add(cc, u.name ? u.name : "", u.public_email);
	}
	forge_user_release(&u);
}

/* The paths a rendered patch touches (both sides of renames). */
static void patch_paths(struct strlist *out, const struct gitrepo_commit *c)
{
	struct diff *d = NULL;

	if (!c->patch.len)
		return;
	if (diff_parse(&d, c->patch.data, c->patch.len)) {
		log_warn("commit %.12s: cannot read its diff for Cc routing: "
			 "%s",
			 c->sha, err_msg());
		return;
	}
	diff_paths(out, d);
	diff_free(d);
}

static void owners_cc(struct cc_list *cc, const struct owners *o,
		      const struct strlist *paths)
{
	struct strlist routed = STRLIST_INIT;
	size_t i;

	if (!o || !paths->nr)
		return;
	if (owners_route(&routed, o, (const char *const *)paths->items,
			 paths->nr, 0))
		log_warn("owners: %s", err_msg());
	strlist_for_each (&routed, i)
		cc_add_mailbox(cc, routed.items[i]);
	strlist_release(&routed);
}

/* Insert "Cc: ..." after the To field of a rendered mail. */
static int insert_cc(struct buf *text, const struct cc_list *cc)
{
	struct buf hdr = BUF_INIT(PB_HEADER_VALUE_MAX * 4);
	struct buf mb = BUF_INIT(PB_HEADER_VALUE_MAX);
	struct strlist boxes = STRLIST_INIT;
	struct buf rest = BUF_INIT(SERIES_MAIL_MAX);
	const char *to, *end, *hend;
	size_t i, at;
	int rc = 0;

	if (!cc->addrs.nr)
		goto out;
	strlist_for_each (&cc->addrs, i) {
		buf_reset(&mb);
		if (mailhdr_format_addr(&mb, cc->names.items[i],
					cc->addrs.items[i])) {
			log_warn("Cc %s left out: %s", cc->addrs.items[i],
				 err_msg());
			continue;
		}
		strlist_push(&boxes, mb.data);
	}
	rc = mailhdr_add_addrs(&hdr, "Cc", &boxes);
	if (rc)
		goto out;
	hend = strstr(text->data, "\n\n");
	to = !strncmp(text->data, "To: ", 4) ? text->data :
					       strstr(text->data, "\nTo: ");
	if (!to || !hend || to > hend)
		BUG("a rendered mail without a To field");
	if (*to == '\n')
		to++;
	/* The field ends before the first line that does not continue it. */
	end = strchr(to, '\n');
	while (end && (end[1] == ' ' || end[1] == '\t'))
		end = strchr(end + 1, '\n');
	at = (size_t)(end + 1 - text->data);
	rc = buf_add(&rest, text->data + at, text->len - at);
	if (!rc) {
		buf_truncate(text, at);
		rc = buf_addbuf(text, &hdr);
	}
	if (!rc)
		rc = buf_addbuf(text, &rest);
out:
	buf_release(&hdr);
	buf_release(&mb);
	buf_release(&rest);
	strlist_release(&boxes);
	return rc;
}

/* --- one revision ---------------------------------------------------- */

/* Everything needed to render and record one revision. */
struct job {
	const char *project;
	int64_t iid;
	const struct config_project *proj;
	struct forge_mr mr;
	struct forge_version ver; /* the current diff version (listed) */
	struct store_revision prev; /* the last mailed revision, if any */
	int have_prev;
	struct mirror *mirror;
	struct gitrepo *repo;
	struct gitrepo_range *range;
	struct gitrepo_range *prev_range;
	struct strlist prev_roots;
	struct owners *owners;
	struct cc_list cc_common; /* author, reviewers */
	struct series *series;
	struct cc_list *cc; /* per mail of the series */
	struct buf git_url;
	int64_t date;
	/* The cover letter's review threads (openthreads.h) and reviewers
	 * (reviewers.h); NULL: none. */
	char *threads;
	char *reviewers;
	char *signatures; /* commitsig.h; NULL: none */
	/* Why the revision is mailed before its pipeline passed
	 * (wait_for_pipeline); "" when it is not. */
	char ci_note[512];
};

static void job_release(struct job *j)
{
	size_t i;

	forge_mr_release(&j->mr);
	forge_version_release(&j->ver);
	store_revision_release(&j->prev);
	gitrepo_range_free(j->range);
	gitrepo_range_free(j->prev_range);
	gitrepo_free(j->repo);
	mirror_free(j->mirror);
	strlist_release(&j->prev_roots);
	owners_free(j->owners);
	free(j->threads);
	free(j->reviewers);
	free(j->signatures);
	cc_release(&j->cc_common);
	if (j->series && j->cc)
		for (i = 0; i < j->series->nr; i++)
			cc_release(&j->cc[i]);
	free(j->cc);
	series_free(j->series);
	buf_release(&j->git_url);
}

/* A project path as GitLab makes them (letters, digits, "_.-/"). */
static int plain_path(const char *p)
{
	if (!*p)
		return 0;
	for (; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.-/", *p))
			return 0;
	return 1;
}

/*
 * The project's git URL: the forge's base URL (without /api/v4) and the
 * project's path as the forge has it now.  After a rename or a move
 * (detect.h keeps the new path) the old path only redirects, and a
 * project made on it later takes it over (app/models/route.rb,
 * delete_conflicting_redirects): fetching from there would read another
 * repository.
 */
static int git_url(struct buf *out, struct outbound *ob, const char *project)
{
	const char *base = config_str(ob->cfg, CFG_FORGE_URL);
	char name[STORE_CURSOR_NAME_MAX + 1];
	struct buf now = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	size_t n = strlen(base);
	int rc;

	snprintf(name, sizeof(name), "%s%s", DETECT_MOVED_PREFIX, project);
	if (!store_cursor_get(&now, ob->store, name) && plain_path(now.data))
		project = now.data;
	while (n && base[n - 1] == '/')
		n--;
	if (n >= 7 && !memcmp(base + n - 7, "/api/v4", 7))
		n -= 7;
	rc = buf_addf(out, "%.*s/%s.git", (int)n, base, project);
	buf_release(&now);
	return rc;
}

/* Fetch and load the current range and the previous one. */
static int load_ranges(struct outbound *ob, struct job *j)
{
	struct mirror_opts mo;
	const char *need[4];
	size_t max =
		(size_t)config_project_int(j->proj, CFG_OUTBOUND_MAX_SERIES);
	int rc;

	memset(&mo, 0, sizeof(mo));
	rc = git_url(&j->git_url, ob, j->project);
	if (rc)
		return rc;
	mo.root = ob->mirror_root;
	mo.project = j->project;
	mo.url = j->git_url.data;
	mo.token = ob->token;
	mo.ca_file = config_str(ob->cfg, CFG_FORGE_CA_FILE);
	rc = mirror_open(&j->mirror, &mo);
	if (rc)
		return rc;
	need[0] = j->ver.head_sha;
	need[1] = j->ver.base_sha;
	need[2] = j->have_prev ? j->prev.head_sha : NULL;
	need[3] = j->have_prev ? j->prev.base_sha : NULL;
	rc = mirror_fetch_mr(j->mirror, j->iid, j->mr.target_branch, need, 4);
	if (rc)
		return rc;
	rc = gitrepo_open(&j->repo, mirror_path(j->mirror));
	if (rc)
		return rc;
	rc = gitrepo_range_load(&j->range, j->repo, j->ver.base_sha,
				j->ver.head_sha, max);
	if (rc)
		return rc;
	if (j->have_prev && j->prev.base_sha && j->prev.head_sha &&
	    gitrepo_range_load(&j->prev_range, j->repo, j->prev.base_sha,
			       j->prev.head_sha, max)) {
		log_warn("previous revision v%d cannot be loaded (%s); no "
			 "range-diff",
			 j->prev.revision, err_msg());
		j->prev_range = NULL;
	}
	if (j->prev_range && !j->prev_range->have_patches) {
		gitrepo_range_free(j->prev_range);
		j->prev_range = NULL;
	}
	return 0;
}

/* --- where a merge put the mailed commits ------------------------------ */

/* The patch-id of one commit, as `git patch-id --stable` of sha^..sha. */
static int commit_patch_id(char out[GITREPO_HEXSZ + 1], struct gitrepo *repo,
			   const char *sha)
{
	struct gitrepo_range *r = NULL;
	char base[GITREPO_HEXSZ + 2];
	int rc;

	snprintf(base, sizeof(base), "%.*s^", GITREPO_HEXSZ, sha);
	rc = gitrepo_range_load(&r, repo, base, sha, 1);
	if (!rc && (r->nr != 1 || !r->have_patches))
		rc = err_set(PB_EINVAL, "%.12s is not one patch", sha);
	if (!rc)
		memcpy(out, r->commits[0].patch_id, GITREPO_HEXSZ + 1);
	gitrepo_range_free(r);
	return rc;
}

/* The project's mirror opened; url gets its git URL. */
static int project_mirror(struct mirror **out, struct buf *url,
			  struct outbound *ob, const char *project)
{
	struct mirror_opts mo;
	int rc;

	*out = NULL;
	memset(&mo, 0, sizeof(mo));
	rc = git_url(url, ob, project);
	if (rc)
		return rc;
	mo.root = ob->mirror_root;
	mo.project = project;
	mo.url = url->data;
	mo.token = ob->token;
	mo.ca_file = config_str(ob->cfg, CFG_FORGE_CA_FILE);
	return mirror_open(out, &mo);
}

int outbound_landed(struct outbound_landed *landed, struct outbound *ob,
		    const char *project, int64_t iid, const char *target_branch,
		    const char *const *mailed, size_t n,
		    const char *landed_base, const char *landed_head)
{
	const struct config_project *proj;
	struct mirror *m = NULL;
	struct gitrepo *repo = NULL;
	struct gitrepo_range *r = NULL;
	struct buf url = BUF_INIT(PB_HTTP_URL_MAX);
	const char *need[2] = { landed_head, landed_base };
	char pid[GITREPO_HEXSZ + 1];
	unsigned char *used = NULL;
	size_t max, k, i;
	int rc;

	for (k = 0; k < n; k++) {
		landed[k].state = OUTBOUND_LANDED_NONE;
		landed[k].sha[0] = '\0';
	}
	rc = config_project_get(&proj, ob->cfg, project);
	if (rc)
		return rc;
	max = (size_t)config_project_int(proj, CFG_OUTBOUND_MAX_SERIES);
	rc = lock(ob);
	if (rc)
		return rc;
	rc = project_mirror(&m, &url, ob, project);
	if (!rc)
		rc = mirror_fetch_mr(m, iid, target_branch, need, 2);
	if (!rc)
		rc = gitrepo_open(&repo, mirror_path(m));
	if (!rc)
		rc = gitrepo_range_load(&r, repo, landed_base, landed_head,
					max);
	if (!rc && !r->have_patches)
		rc = err_set(PB_ELIMIT,
			     "%zu commits landed, more than max_series %zu",
			     r->nr, max);
	if (rc)
		goto out;
	used = xcalloc(r->nr + 1, 1);
	for (k = 0; k < n; k++) {
		if (!mailed[k]) {
			landed[k].state = OUTBOUND_LANDED_UNKNOWN;
			continue;
		}
		if (commit_patch_id(pid, repo, mailed[k])) {
			log_warn("mailed commit %.12s: %s", mailed[k],
				 err_msg());
			landed[k].state = OUTBOUND_LANDED_UNKNOWN;
			continue;
		}
		for (i = 0; i < r->nr; i++)
			if (!used[i] && !strcmp(r->commits[i].patch_id, pid))
				break;
		if (i == r->nr)
			continue;
		used[i] = 1;
		landed[k].state = OUTBOUND_LANDED_PAIRED;
		memcpy(landed[k].sha, r->commits[i].sha, GITREPO_HEXSZ + 1);
	}
out:
	free(used);
	gitrepo_range_free(r);
	gitrepo_free(repo);
	mirror_free(m);
	buf_release(&url);
	unlock(ob);
	return rc;
}

/* The Cc of every mail: common + the owners of what it touches. */
static void compute_cc(struct outbound *ob, struct job *j)
{
	const struct config_project *p = j->proj;
	const char *owners_file;
	const char *list = config_project_str(p, CFG_BRIDGE_LIST_ADDRESS);
	struct strlist all = STRLIST_INIT;
	size_t i;

	if (config_project_bool(p, CFG_OUTBOUND_CC_AUTHOR))
		cc_add_user(&j->cc_common, ob->forge, &j->mr.author, "author");
	if (config_project_bool(p, CFG_OUTBOUND_CC_REVIEWERS))
		for (i = 0; i < j->mr.nr_reviewers; i++)
			cc_add_user(&j->cc_common, ob->forge,
				    &j->mr.reviewers[i], "reviewer");
	if (config_project_bool(p, CFG_OUTBOUND_CC_OWNERS)) {
		owners_file = config_project_str(p, CFG_INBOUND_OWNERS_FILE);
		if (!*owners_file)
			log_warn("cc_owners is set but [inbound] owners_file "
				 "is not: no owners Cc");
		else if (owners_load(&j->owners, owners_file))
			log_error("%s; mailing without owners Cc", err_msg());
	}

	j->cc = xcalloc(j->series->nr, sizeof(*j->cc));
	if (j->owners)
		for (i = 0; i < j->range->nr; i++)
			patch_paths(&all, &j->range->commits[i]);
	for (i = 0; i < j->series->nr; i++) {
		const struct series_mail *m = &j->series->mails[i];
		struct strlist paths = STRLIST_INIT;

		/* The list is To already: a placeholder keeps it out. */
		cc_add(&j->cc[i], "", list);
		cc_copy(&j->cc[i], &j->cc_common);
		if (m->index == 0) {
			owners_cc(&j->cc[i], j->owners, &all);
		} else if (j->owners) {
			patch_paths(&paths, &j->range->commits[m->index - 1]);
			owners_cc(&j->cc[i], j->owners, &paths);
		}
		strlist_release(&paths);
		strlist_remove(&j->cc[i].names, 0);
		strlist_remove(&j->cc[i].addrs, 0);
	}
	strlist_release(&all);
}

static enum series_threading threading_of(const struct config_project *p)
{
	switch (config_project_enum(p, CFG_OUTBOUND_THREADING)) {
	case CONFIG_THREADING_DEEP:
		return SERIES_THREAD_DEEP;
	case CONFIG_THREADING_NONE:
		return SERIES_THREAD_NONE;
	default:
		return SERIES_THREAD_SHALLOW;
	}
}

/* The first mails of revisions 1..revision-1, oldest first. */
static int load_prev_roots(struct outbound *ob, struct job *j, int revision)
{
	struct store_revision r;
	int i, rc = 0;

	strlist_release(&j->prev_roots);
	store_revision_init(&r);
	for (i = 1; i < revision; i++) {
		rc = store_revision_get(&r, ob->store, j->project, j->iid, i);
		if (rc == PB_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc)
			break;
		if (r.cover_msgid && *r.cover_msgid)
			strlist_push(&j->prev_roots, r.cover_msgid);
	}
	store_revision_release(&r);
	return rc;
}

static int render(struct outbound *ob, struct job *j, int revision)
{
	const struct config *cfg = ob->cfg;
	const struct config_project *p = j->proj;
	struct strlist to = STRLIST_INIT;
	struct series_opts o;
	int rc;

	rc = load_prev_roots(ob, j, revision);
	if (rc)
		return rc;
	series_opts_init(&o);
	o.project = j->project;
	o.iid = (uint64_t)j->iid;
	o.revision = (unsigned)revision;
	o.title = j->mr.title;
	o.description = j->mr.description;
	o.url = j->mr.web_url;
	o.author_name = j->mr.author.name;
	o.author_username = j->mr.author.username;
	o.source_branch = j->mr.source_branch;
	o.target_branch = j->mr.target_branch;
	o.fetch_url = j->git_url.data;
	o.bridge_name = config_str(cfg, CFG_BRIDGE_NAME);
	o.bridge_address = config_str(cfg, CFG_BRIDGE_ADDRESS);
	o.msgid_domain = config_str(cfg, CFG_BRIDGE_DOMAIN);
	o.from_mode = config_project_enum(p, CFG_OUTBOUND_FROM_MODE) ==
				      CONFIG_FROM_AUTHOR ?
			      SERIES_FROM_AUTHOR :
			      SERIES_FROM_BRIDGE;
	o.subject_prefix = config_project_str(p, CFG_OUTBOUND_SUBJECT_PREFIX);
	strlist_push(&to, config_project_str(p, CFG_BRIDGE_LIST_ADDRESS));
	o.to = &to;
	o.cc = NULL; /* per mail, below */
	o.threading = threading_of(p);
	o.prev_roots = &j->prev_roots;
	o.cover_single =
		config_project_bool(p, CFG_OUTBOUND_COVER_LETTER_SINGLE);
	o.max_series = (size_t)config_project_int(p, CFG_OUTBOUND_MAX_SERIES);
	o.date = j->date;
	o.date_tz = 0;
	o.prev_range = j->prev_range;
	o.prev_revision = j->have_prev ? (unsigned)j->prev.revision : 0;
	o.review_threads = j->threads;
	o.reviewers = j->reviewers;
	o.signatures = j->signatures;
	o.note = j->ci_note[0] ? j->ci_note : NULL;
	rc = series_build(&j->series, j->range, &o);
	strlist_release(&to);
	return rc;
}

/* The thread-map row and the queue entry of mail i. */
static int record_mail(struct outbound *ob, struct job *j, int revision,
		       size_t i)
{
	const struct series *s = j->series;
	struct series_mail *m = &s->mails[i];
	const struct gitrepo_commit *c =
		m->index ? &j->range->commits[m->index - 1] : NULL;
	const char *list = config_project_str(j->proj, CFG_BRIDGE_LIST_ADDRESS);
	struct store_mail sm = STORE_MAIL_INIT;
	struct store_outmail om;
	struct buf rcpts = BUF_INIT(STORE_DIFF_MAX);
	struct buf attested = BUF_INIT(SERIES_MAIL_MAX);
	size_t k;
	int rc;

	/* The signature last, over the mail as the list will have it (its
	 * Cc added by start_revision(), once: this runs again when the
	 * transaction does); into a copy, so it signs the same text once. */
	rc = 0;
	if (ob->attest.key)
		rc = series_attest_text(&attested, m->text.data, m->text.len,
					m->date, &ob->attest);
	if (rc)
		goto out;
	sm.message_id = m->msgid;
	sm.project = j->project;
	sm.iid = j->iid;
	sm.revision = revision;
	sm.patch = (int)m->index;
	sm.total = (int)s->total;
	sm.kind = m->index ? STORE_MAIL_PATCH : STORE_MAIL_COVER;
	sm.commit_sha = c ? c->sha : NULL;
	sm.base_sha = j->ver.base_sha;
	sm.start_sha = j->ver.start_sha;
	sm.head_sha = j->ver.head_sha;
	sm.version_id = j->ver.id;
	if (c && c->patch.len) {
		sm.diff = c->patch.data;
		sm.diff_len = c->patch.len;
	}
	sm.state = STORE_MAIL_PENDING;
	rc = store_mail_put(ob->store, &sm);
	if (rc)
		goto out;
	buf_addf(&rcpts, "%s\n", list);
	strlist_for_each (&j->cc[i].addrs, k)
		buf_addf(&rcpts, "%s\n", j->cc[i].addrs.items[k]);
	rc = buf_error(&rcpts);
	if (rc)
		goto out;
	store_outmail_init(&om);
	om.message_id = m->msgid;
	om.envelope_from = config_str(ob->cfg, CFG_BRIDGE_ADDRESS);
	om.recipients = rcpts.data;
	om.message = attested.len ? attested.data : m->text.data;
	om.message_len = attested.len ? attested.len : m->text.len;
	rc = store_outmail_put(ob->store, &om);
out:
	buf_release(&attested);
	buf_release(&rcpts);
	return rc;
}

struct start_tx_arg {
	struct outbound *ob;
	struct job *j;
	const struct store_revision *rev;
	int planned;
	int *revision;
};

/* The revision and its mails, as one transaction (run again from the
 * start when it raced another host's: store_transaction()). */
static int start_tx(struct store *st, void *arg)
{
	struct start_tx_arg *a = arg;
	size_t i;
	int rc;

	*a->revision = 0;
	rc = store_revision_start(a->revision, st, a->rev);
	if (rc)
		return rc;
	if (*a->revision != a->planned)
		return 1;
	for (i = 0; i < a->j->series->nr && !rc; i++)
		rc = record_mail(a->ob, a->j, *a->revision, i);
	return rc;
}

/*
 * Render the series as revision `planned` and record it in one
 * transaction.  *revision gets the number the store allocated.  When that
 * is not `planned` (another process started a revision of the MR
 * meanwhile), nothing is kept and 1 is returned: render again with the
 * next number.  PB_EEXISTS when this head on this base was started
 * meanwhile.
 */
static int start_revision(struct outbound *ob, struct job *j, int planned,
			  int *revision)
{
	struct start_tx_arg tx;
	struct store_revision rev;
	size_t i;
	int rc;

	*revision = 0;
	if (j->series) {
		for (i = 0; i < j->series->nr; i++)
			cc_release(&j->cc[i]);
		free(j->cc);
		j->cc = NULL;
		series_free(j->series);
		j->series = NULL;
		cc_release(&j->cc_common);
		owners_free(j->owners);
		j->owners = NULL;
	}
	rc = render(ob, j, planned);
	if (rc)
		return rc;
	compute_cc(ob, j);
	/* Outside the transaction, which may run more than once. */
	for (i = 0; i < j->series->nr && !rc; i++)
		rc = insert_cc(&j->series->mails[i].text, &j->cc[i]);
	if (rc)
		return rc;

	store_revision_init(&rev);
	rev.project = j->project;
	rev.iid = j->iid;
	rev.head_sha = j->ver.head_sha;
	rev.base_sha = j->ver.base_sha;
	rev.start_sha = j->ver.start_sha;
	rev.version_id = j->ver.id;
	rev.patch_id = j->ver.patch_id_sha;
	rev.patches = (int)j->series->total;
	rev.cover_msgid = j->series->root_msgid;

	tx.ob = ob;
	tx.j = j;
	tx.rev = &rev;
	tx.planned = planned;
	tx.revision = revision;
	return store_transaction(ob->store, start_tx, &tx);
}

/* The delivery counts of the MR's revision into the report. */
static void report_delivery(struct outbound_report *rep,
			    const struct delivery *d)
{
	rep->sent += d->sent;
	rep->deferred = d->deferred;
	rep->failed = d->failed;
	rep->next_attempt = d->next_due;
}

/* Deliver what is queued for the MR; 1 when some of it must wait. */
static int deliver_mr(struct outbound *ob, struct outbound_report *rep,
		      const char *project, int64_t iid, unsigned flags)
{
	struct delivery d;
	int rc;

	memset(&d, 0, sizeof(d));
	rc = deliver(ob, &d, project, iid, !!(flags & OUTBOUND_FORCE));
	report_delivery(rep, &d);
	if (rc)
		return rc;
	if (d.stopped)
		return err_set(PB_ETEMP, "stopping");
	return d.deferred ? 1 : 0;
}

/* Decide on the current version; 0 with rep->outcome set when nothing is
 * to be mailed, 1 when a new revision is due. */
static int decide(struct outbound *ob, struct outbound_report *rep,
		  struct job *j, unsigned flags)
{
	struct forge_version_list vl = { 0 };
	struct store_revision r;
	char p[PB_LOG_QUOTE_MAX];
	int rc;

	rc = forge_get_mr(&j->mr, ob->forge, j->project, j->iid);
	if (rc)
		return rc;
	if (!j->mr.state || strcmp(j->mr.state, "opened")) {
		rep->outcome = OUTBOUND_NOTHING;
		report_reason(rep, "the merge request is %s",
			      printable_copy(p, sizeof(p), j->mr.state,
					     j->mr.state ? strlen(j->mr.state) :
							   0));
		return 0;
	}
	if (j->mr.draft && !(flags & OUTBOUND_FORCE) &&
	    config_project_bool(j->proj, CFG_OUTBOUND_SKIP_DRAFTS)) {
		rep->outcome = OUTBOUND_NOTHING;
		report_reason(rep, "a draft (skip_drafts = yes)");
		return 0;
	}
	rc = forge_list_versions(&vl, ob->forge, j->project, j->iid);
	if (rc)
		return rc;
	if (!vl.nr || !vl.items[0].head_sha || !vl.items[0].base_sha) {
		forge_version_list_release(&vl);
		rep->outcome = OUTBOUND_NOTHING;
		report_reason(rep, "no diff version yet");
		return 0;
	}
	j->ver = vl.items[0];
	memset(&vl.items[0], 0, sizeof(vl.items[0]));
	forge_version_list_release(&vl);

	/*
	 * A revision is a head on a base.  A retarget (app/models/
	 * merge_request.rb, after_update :reload_diff_if_branch_changed),
	 * or a push to the target branch that took some of the MR's
	 * commits (app/services/merge_requests/refresh_service.rb,
	 * reload_merge_requests), gives GitLab a new diff version with the
	 * same head on a new base, and another series of patches: a new
	 * revision.  Whether it is mailed is then the rebase rule's below,
	 * as for a push: with the same patch-ids it is a pure rebase.
	 */
	store_revision_init(&r);
	rc = store_revision_by_base(&r, ob->store, j->project, j->iid,
				    j->ver.head_sha, j->ver.base_sha);
	if (!rc) {
		rep->outcome = OUTBOUND_ALREADY;
		rep->revision = r.revision;
		rep->mails = r.patches;
		store_revision_release(&r);
		return 0;
	}
	store_revision_release(&r);
	if (rc != PB_ENOTFOUND)
		return rc;
	rc = store_revision_latest(&j->prev, ob->store, j->project, j->iid);
	if (rc && rc != PB_ENOTFOUND)
		return rc;
	j->have_prev = !rc;
	if (j->have_prev && j->prev.patch_id && j->ver.patch_id_sha &&
	    !strcmp(j->prev.patch_id, j->ver.patch_id_sha) &&
	    !config_project_bool(j->proj, CFG_OUTBOUND_MAIL_REBASES)) {
		rep->outcome = OUTBOUND_NOTHING;
		rep->revision = j->prev.revision;
		report_reason(rep,
			      "head %.12s is a pure rebase of v%d "
			      "(mail_rebases = no)",
			      j->ver.head_sha, j->prev.revision);
		return 0;
	}
	return 1;
}

struct rev_of_arg {
	struct outbound *ob;
	struct job *j;
};

/* The mailed revision of the diff version head on base (openthreads.h). */
static int rev_of(const char *head, const char *base, void *arg)
{
	struct rev_of_arg *a = arg;
	struct store_revision r;
	int rev = 0;

	if (!head)
		return 0;
	store_revision_init(&r);
	if ((base && !store_revision_by_base(&r, a->ob->store, a->j->project,
					     a->j->iid, head, base)) ||
	    !store_revision_by_head(&r, a->ob->store, a->j->project, a->j->iid,
				    head))
		rev = r.revision;
	store_revision_release(&r);
	return rev;
}

/*
 * The review threads of the earlier versions for the cover letter of the
 * next (openthreads.h), read once per revision: the threads still open
 * on the forge, and those resolved since the last revision was mailed.
 * A forge that fails for now makes the revision wait (nothing is mailed
 * without them); any other failure mails it without the list.
 */
static int load_threads(struct outbound *ob, struct job *j, int revision)
{
	struct forge_discussion_list dl;
	struct openthreads_opts o;
	struct rev_of_arg a = { ob, j };
	struct buf text = BUF_INIT(PB_TEXT_PART_MAX);
	struct forge_whoami w;
	const char *bot = config_str(ob->cfg, CFG_FORGE_BOT_USERNAME);
	int rc;

	memset(&w, 0, sizeof(w));
	if (!j->have_prev ||
	    !config_project_bool(j->proj, CFG_OUTBOUND_COVER_OPEN_THREADS))
		return 0;
	memset(&dl, 0, sizeof(dl));
	rc = forge_list_discussions(&dl, ob->forge, j->project, j->iid);
	if (err_is_temporary(rc))
		goto out;
	if (rc) {
		log_warn("review threads not listed in the cover letter: %s",
			 err_msg());
		rc = 0;
		goto out;
	}
	/* The bridge's user, as forgemail.c's bot_user() finds it. */
	if ((!bot || !*bot) && !forge_whoami(&w, ob->forge))
		bot = w.user.username;
	memset(&o, 0, sizeof(o));
	o.bot = bot;
	o.revision = revision;
	o.prev_revision = j->prev.revision;
	o.prev_ms = j->prev.created * 1000;
	o.url = j->mr.web_url;
	o.rev_of = rev_of;
	o.arg = &a;
	rc = openthreads_cover(&text, &dl, &o);
	if (rc) {
		log_warn("review threads not listed in the cover letter: %s",
			 err_msg());
		rc = 0;
	} else if (text.len) {
		j->threads = xstrdup(text.data);
	}
out:
	forge_whoami_release(&w);
	forge_discussion_list_release(&dl);
	buf_release(&text);
	return rc;
}

/*
 * Who must review, per subsystem the revision touches, for its cover
 * letter (reviewers.h), from [inbound] owners_file.  A file that does not
 * load mails the revision without the block, as the Cc does.
 */
static void load_reviewers(struct job *j)
{
	const char *file = config_project_str(j->proj, CFG_INBOUND_OWNERS_FILE);
	struct strlist paths = STRLIST_INIT;
	struct buf text = BUF_INIT(PB_TEXT_PART_MAX);
	struct owners *o = NULL;
	size_t i;

	if (!config_project_bool(j->proj, CFG_OUTBOUND_COVER_REVIEWERS) ||
	    !*file)
		return;
	if (owners_load(&o, file)) {
		log_error("%s; the cover letter names no reviewers", err_msg());
		return;
	}
	for (i = 0; i < j->range->nr; i++)
		patch_paths(&paths, &j->range->commits[i]);
	if (reviewers_cover(&text, o, (const char *const *)paths.items,
			    paths.nr))
		log_warn("reviewers not named in the cover letter: %s",
			 err_msg());
	else if (text.len)
		j->reviewers = xstrdup(text.data);
	owners_free(o);
	strlist_release(&paths);
	buf_release(&text);
}

/* The cover letter's commit signatures (commitsig.h). */
static int load_signatures(struct outbound *ob, struct job *j)
{
	if (!config_project_bool(j->proj, CFG_OUTBOUND_COVER_SIGNATURES) ||
	    j->range->nr > (size_t)config_project_int(j->proj,
						      CFG_OUTBOUND_MAX_SERIES))
		return 0;
	return commitsig_load(&j->signatures, ob->forge, j->project, j->range);
}

/*
 * [project] wait_for_pipeline: a new head is mailed once the newest of
 * the MR's pipelines on it passed, or pipeline_wait_max after the bridge
 * first saw it (cursor "ciwait:P!IID:HEAD", Unix time) with a note in the
 * cover letter saying why; meanwhile the MR is WAITING and looked at
 * again within a minute (a Pipeline Hook brings it sooner).  An
 * operator's send --force does not wait (and says so in the cover).
 * 1: mail now; 0: wait (rep says why); or an error.
 */
#define OUTBOUND_CI_RECHECK_S 60

/* "2 h 5 min", "7 min", "40 s". */
static void wait_words(char *out, size_t size, int64_t s)
{
	if (s >= 3600)
		snprintf(out, size, "%lld h %lld min", (long long)(s / 3600),
			 (long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(out, size, "%lld min", (long long)(s / 60));
	else
		snprintf(out, size, "%lld s", (long long)s);
}

static int pipeline_gate(struct outbound *ob, struct outbound_report *rep,
			 struct job *j, unsigned flags)
{
	struct forge_pipeline_list pl;
	const struct forge_pipeline *p = NULL;
	struct buf cur = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	char name[STORE_CURSOR_NAME_MAX], num[32], span[48];
	int64_t since = 0, now = now_s(), max, waited;
	size_t i;
	int rc;

	if (!config_project_bool(j->proj, CFG_PROJECT_WAIT_FOR_PIPELINE))
		return 1;
	if (flags & OUTBOUND_FORCE) {
		/* An operator asked (patchbridge send --force). */
		snprintf(j->ci_note, sizeof(j->ci_note),
			 "Note: mailed by hand, without waiting for its "
			 "pipeline.\n");
		return 1;
	}
	rc = forge_list_pipelines(&pl, ob->forge, j->project, j->iid);
	if (rc)
		return rc;
	for (i = 0; i < pl.nr && !p; i++)
		if (pl.items[i].sha &&
		    !strcmp(pl.items[i].sha, j->ver.head_sha))
			p = &pl.items[i];
	if (p && !strcmp(p->status, "success")) {
		log_info("pipeline %lld of %.12s passed", (long long)p->id,
			 j->ver.head_sha);
		rc = 1;
		goto out;
	}
	snprintf(name, sizeof(name), "ciwait:%s!%lld:%s", j->project,
		 (long long)j->iid, j->ver.head_sha);
	rc = store_cursor_get(&cur, ob->store, name);
	if (!rc && !mem_to_i64(cur.data, cur.len, 1, INT64_MAX, &since))
		since = 0;
	if (rc && rc != PB_ENOTFOUND)
		goto out;
	if (!since) {
		since = now;
		snprintf(num, sizeof(num), "%lld", (long long)since);
		rc = store_cursor_set(ob->store, name, num);
		if (rc)
			goto out;
	}
	max = config_project_duration_ms(j->proj,
					 CFG_PROJECT_PIPELINE_WAIT_MAX) /
	      1000;
	waited = now - since;
	if (waited >= max) {
		wait_words(span, sizeof(span), waited);
		if (!p)
			snprintf(j->ci_note, sizeof(j->ci_note),
				 "Note: mailed without a pipeline: none had "
				 "started after %s.\n",
				 span);
		else
			snprintf(j->ci_note, sizeof(j->ci_note),
				 "Note: mailed before its pipeline passed: "
				 "pipeline #%lld %s after %s.\n",
				 (long long)p->id,
				 !strcmp(p->status, "failed") ?
					 "failed" :
					 "had not finished",
				 span);
		log_notice("mailed without a passed pipeline (waited %lld s)",
			   (long long)waited);
		rc = 1;
		goto out;
	}
	rep->outcome = OUTBOUND_WAITING;
	rep->revision = 0;
	rep->next_attempt = since + max < now + OUTBOUND_CI_RECHECK_S ?
				    since + max :
				    now + OUTBOUND_CI_RECHECK_S;
	report_reason(rep,
		      "waiting for the pipeline of %.12s (%s) for at most "
		      "%lld s more (wait_for_pipeline)",
		      j->ver.head_sha, p ? p->status : "none yet",
		      (long long)(max - waited));
	rc = 0;
out:
	buf_release(&cur);
	forge_pipeline_list_release(&pl);
	return rc;
}

static int mail_new_revision(struct outbound *ob, struct outbound_report *rep,
			     struct job *j)
{
	int planned = j->have_prev ? j->prev.revision + 1 : 1;
	int tries, revision = 0, rc;

	rc = load_ranges(ob, j);
	if (rc)
		return rc;
	if (!j->range->nr) {
		rep->outcome = OUTBOUND_NOTHING;
		report_reason(rep,
			      "no patches between %.12s and %.12s (%zu merges, "
			      "%zu empty commits left out)",
			      j->ver.base_sha, j->ver.head_sha,
			      j->range->merges_skipped,
			      j->range->empty_skipped);
		return 0;
	}
	rc = load_threads(ob, j, planned);
	if (rc)
		return rc;
	load_reviewers(j);
	rc = load_signatures(ob, j);
	if (rc)
		return rc;
	/* The date of the revision: when it is first rendered. */
	j->date = now_s();
	for (tries = 0; tries < OUTBOUND_START_TRIES; tries++) {
		ctx_set(j->project, j->iid, planned);
		rc = start_revision(ob, j, planned, &revision);
		if (rc != 1)
			break;
		log_info("revision v%d was taken meanwhile; rendering v%d",
			 planned, revision + 1);
		planned = revision + 1;
	}
	if (rc == 1)
		return err_set(PB_ETEMP, "the revision number kept changing");
	if (rc == PB_EEXISTS) {
		/* Another process started this head on this base: deliver
		 * with it. */
		rep->outcome = OUTBOUND_ALREADY;
		rep->revision = revision;
		return 0;
	}
	if (rc)
		return rc;
	ctx_set(j->project, j->iid, revision);
	log_notice("new revision: head %.12s on base %.12s, %u patch(es), "
		   "%zu mail(s)%s",
		   j->ver.head_sha, j->ver.base_sha, j->series->total,
		   j->series->nr,
		   j->series->cover_only ? " (cover letter only: longer than "
					   "max_series)" :
					   "");
	if (mirror_pin(j->mirror, j->iid, revision, j->ver.head_sha))
		log_warn("%s", err_msg());
	rep->outcome = OUTBOUND_MAILED;
	rep->revision = revision;
	rep->mails = (int)j->series->nr;
	return 0;
}

int outbound_mr(struct outbound_report *rep, struct outbound *ob,
		const char *project, int64_t iid, unsigned flags)
{
	struct log_ctx_saved saved;
	struct job j;
	int rc, count;

	memset(rep, 0, sizeof(*rep));
	memset(&j, 0, sizeof(j));
	buf_init(&j.git_url, PB_HTTP_URL_MAX);
	j.project = project;
	j.iid = iid;
	log_ctx_push(&saved, NULL);
	ctx_set(project, iid, 0);
	rc = config_project_get(&j.proj, ob->cfg, project);
	if (rc)
		goto out;
	rc = lock(ob);
	if (rc)
		goto out;

	if (flags & OUTBOUND_RETRY_FAILED) {
		rc = store_outmail_requeue(&count, ob->store, project, iid);
		if (rc)
			goto unlock;
		if (count)
			log_notice("%d failed mail(s) queued again", count);
	}
	/* What an earlier run left: it goes out first, in order. */
	rc = deliver_mr(ob, rep, project, iid, flags);
	if (rc < 0)
		goto unlock;
	if (rc == 1) {
		rep->outcome = OUTBOUND_PENDING;
		report_reason(rep, "an earlier revision is still waiting for "
				   "the MTA");
		rc = 0;
		goto unlock;
	}
	rc = decide(ob, rep, &j, flags);
	if (rc <= 0)
		goto unlock;
	rc = pipeline_gate(ob, rep, &j, flags);
	if (rc <= 0)
		goto unlock;
	rc = mail_new_revision(ob, rep, &j);
	if (rc || rep->outcome == OUTBOUND_NOTHING)
		goto unlock;
	rc = deliver_mr(ob, rep, project, iid, flags);
	if (rc < 0)
		goto unlock;
	rc = 0;
unlock:
	if (!rc && (rep->deferred || rep->failed) &&
	    rep->outcome != OUTBOUND_NOTHING) {
		rep->outcome = OUTBOUND_PENDING;
		if (!rep->reason[0])
			report_reason(rep, "%s",
				      rep->deferred ? "the MTA failed for now" :
						      "the MTA refused");
	}
	unlock(ob);
out:
	job_release(&j);
	log_ctx_pop(&saved);
	return rc;
}

/* The project a series posted to the list is for (outbound.h). */
static int submission_project(const struct config_project **out,
			      const struct config *cfg, const char *raw,
			      size_t len)
{
	const struct config_project *p, *found = NULL;
	struct review *r = NULL;
	size_t i, takers = 0, matches = 0;
	int rc;

	*out = NULL;
	for (i = 0; i < config_project_count(cfg); i++) {
		p = config_project_at(cfg, i);
		if (!config_project_bool(p, CFG_PROJECT_ENABLED) ||
		    config_project_enum(p, CFG_PROJECT_EMAIL_SUBMISSIONS) ==
			    CONFIG_SUBMISSIONS_OFF)
			continue;
		takers++;
		found = p;
	}
	if (takers == 1) {
		*out = found;
		return 0;
	}
	if (!takers)
		return err_set(PB_EPERM, "no project takes series by mail");
	rc = review_parse(&r, raw, len, NULL, NULL);
	if (rc)
		return rc;
	found = NULL;
	for (i = 0; i < config_project_count(cfg); i++) {
		const char *want;
		size_t n;

		p = config_project_at(cfg, i);
		if (!config_project_bool(p, CFG_PROJECT_ENABLED) ||
		    config_project_enum(p, CFG_PROJECT_EMAIL_SUBMISSIONS) ==
			    CONFIG_SUBMISSIONS_OFF)
			continue;
		want = config_project_str(p, CFG_OUTBOUND_SUBJECT_PREFIX);
		n = strlen(want);
		/* "PATCH net" opens "PATCH net 1/3", not "PATCH net-next" */
		if (n && !strncmp(r->subject.prefix, want, n) &&
		    (r->subject.prefix[n] == '\0' ||
		     r->subject.prefix[n] == ' ')) {
			matches++;
			found = p;
		}
	}
	review_free(r);
	if (matches != 1)
		return err_set(PB_EPERM,
			       "%zu projects take series by mail and %zu "
			       "has the subject's prefix",
			       takers, matches);
	*out = found;
	return 0;
}

/* The mirror fetched, the target resolved, the series opened. */
static int submission_open(struct outbound *ob,
			   const struct config_project *proj,
			   const struct review_options *ro,
			   const char *series_id)
{
	const char *project = config_project_name(proj);
	const char *target =
		config_project_str(proj, CFG_PROJECT_EMAIL_TARGET_BRANCH);
	struct mirror *m = NULL;
	struct gitrepo *repo = NULL;
	struct strlist specs = STRLIST_INIT;
	struct buf url = BUF_INIT(PB_HTTP_URL_MAX);
	struct emailmr_ctx c;
	struct emailnotice_ctx nc;
	char sha[GITREPO_HEXSZ + 1], *ref, *spec;
	int64_t iid = 0;
	int rc;

	rc = lock(ob);
	if (rc)
		return rc;
	ref = xasprintf("refs/patchbridge/target/%s", target);
	spec = xasprintf("+refs/heads/%s:%s", target, ref);
	strlist_push(&specs, spec);
	free(spec);
	rc = project_mirror(&m, &url, ob, project);
	if (!rc)
		rc = gitrepo_open(&repo, mirror_path(m));
	if (!rc)
		rc = gitrepo_fetch(repo, url.data, ob->token, &specs);
	if (!rc)
		rc = gitrepo_resolve(sha, repo, ref);
	free(ref);
	if (rc)
		goto out;
	memset(&c, 0, sizeof(c));
	c.st = ob->store;
	c.forge = ob->forge;
	c.repo = repo;
	c.project = project;
	c.push_url = url.data;
	c.token = ob->token;
	c.target_branch = target;
	c.target_sha = sha;
	c.branch_prefix =
		config_project_str(proj, CFG_PROJECT_EMAIL_BRANCH_PREFIX);
	c.label = "from-email";
	c.committer_name = config_str(ob->cfg, CFG_BRIDGE_NAME);
	c.committer_email = config_str(ob->cfg, CFG_BRIDGE_ADDRESS);
	nc.st = ob->store;
	nc.cfg = ob->cfg;
	nc.proj = proj;
	c.failed = emailnotice_failed;
	c.failed_arg = &nc;
	c.map_user = ob->map_user;
	c.map_arg = ob->map_arg;
	c.ro = ro;
	c.attest_keyring = config_project_str(proj, CFG_PROJECT_ATTEST_KEYRING);
	c.require_attestation = config_project_bool(
		proj, CFG_PROJECT_EMAIL_REQUIRE_ATTESTATION);
	rc = emailmr_open(&iid, &c, series_id);
	if (rc == PB_EINVAL)
		log_warn("%s", err_msg()); /* failed: the series is closed */
out:
	strlist_release(&specs);
	buf_release(&url);
	gitrepo_free(repo);
	mirror_free(m);
	unlock(ob);
	return rc;
}

/* The series does not apply, and its sender was told (emailnotice.h). */
static int series_told_failed(struct store *st, const char *series_id)
{
	struct store_submission sub;
	struct store_notice told;
	char *key = xasprintf("%s%s", EMAILNOTICE_FAILED, series_id);
	int yes;

	store_submission_init(&sub);
	store_notice_init(&told);
	yes = !store_submission_get(&sub, st, series_id) &&
	      sub.state == STORE_SUBMISSION_FAILED &&
	      !store_notice_get(&told, st, key);
	store_notice_release(&told);
	store_submission_release(&sub);
	free(key);
	return yes;
}

void outbound_set_user_map(struct outbound *ob, emailmr_user_fn fn, void *arg)
{
	ob->map_user = fn;
	ob->map_arg = arg;
}

int outbound_submission(struct outbound *ob, char *project, size_t size,
			const char *raw, size_t len)
{
	const struct config_project *proj;
	struct review_options ro;
	struct review *r = NULL;
	struct emailnotice_ctx nc;
	enum emailmr_policy policy;
	char series[PB_MSGID_MAX + 1];
	int rc, whole = 0;

	rc = submission_project(&proj, ob->cfg, raw, len);
	if (rc)
		return rc;
	snprintf(project, size, "%s", config_project_name(proj));
	switch (config_project_enum(proj, CFG_PROJECT_EMAIL_SUBMISSIONS)) {
	case CONFIG_SUBMISSIONS_ANYONE:
		policy = EMAILMR_ANYONE;
		break;
	case CONFIG_SUBMISSIONS_VERIFIED:
		policy = EMAILMR_VERIFIED;
		break;
	default:
		policy = EMAILMR_OFF;
		break;
	}
	/* the trust rules of approvals (inbound.c) */
	memset(&ro, 0, sizeof(ro));
	ro.trusted_authserv_id =
		config_str(ob->cfg, CFG_MILTER_TRUSTED_AUTHSERV_ID);
	if (!ro.trusted_authserv_id[0])
		ro.trusted_authserv_id = NULL;
	ro.trusted_fields =
		(size_t)config_int(ob->cfg, CFG_MILTER_TRUSTED_AUTHRES_FIELDS);
	ro.list_authserv_id =
		config_project_str(proj, CFG_INBOUND_LIST_AUTHSERV_ID);
	ro.list_address = config_project_str(proj, CFG_BRIDGE_LIST_ADDRESS);
	ro.own_domain = config_str(ob->cfg, CFG_BRIDGE_DOMAIN);
	ro.own_address = config_str(ob->cfg, CFG_BRIDGE_ADDRESS);
	/* parsed once, for the screening and the collection */
	if (policy != EMAILMR_OFF) {
		rc = review_parse(&r, raw, len, NULL, &ro);
		if (rc)
			return rc;
	}
	/* the verified rule and the limits, the sender told once */
	nc.st = ob->store;
	nc.cfg = ob->cfg;
	nc.proj = proj;
	rc = emailnotice_screen(&nc, policy, r, raw, len);
	if (!rc)
		rc = emailmr_collect_parsed(&whole, series, sizeof(series),
					    ob->store,
					    config_project_name(proj), policy,
					    r, raw, len);
	review_free(r);
	if (rc == PB_EEXISTS && series[0]) {
		/* seen before: the mail that made its series whole, tried
		 * again after the merge request could not be opened */
		struct store_submission sub;

		store_submission_init(&sub);
		if (!store_submission_get(&sub, ob->store, series) &&
		    sub.state == STORE_SUBMISSION_WHOLE)
			whole = 1;
		store_submission_release(&sub);
		if (!whole)
			return err_set(PB_EEXISTS, "a mail of its series seen "
						   "already");
		rc = 0;
	}
	if (rc || !whole)
		return rc;
	rc = submission_open(ob, proj, &ro, series);
	if (rc == PB_EINVAL && series_told_failed(ob->store, series))
		rc = 0; /* the series' end, not the mail's: no dead letter */
	return rc;
}

int outbound_submission_remind(struct outbound *ob, size_t *told)
{
	return emailnotice_remind(ob->store, ob->cfg, now_s(), told);
}
