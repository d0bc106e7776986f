/*
 * emailnotice - the sender of a series posted to the list told what
 * became of it.  See emailnotice.h.
 */

#include "outbound/emailnotice.h"

#include "core/config.h"
#include "core/metrics.h"
#include "mail/mail.h"
#include "mail/notice.h"
#include "mail/review.h"
#include "outbound/noticemail.h"
#include "state/store.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SERIES_NOTICE_MAX (512 * 1024)
/* Series looked at for a reminder in one round, oldest first. */
#define REMIND_BATCH 100

/* One notice to decide, for tell_tx(). */
struct tell {
	const struct emailnotice_ctx *c;
	const char *key; /* the notices row: prefix + series_id */
	const char *series_id; /* the Message-ID answered */
	const char *raw; /* a mail of the series: screened, and its From
			  * and Subject used */
	size_t len;
	const char *to; /* the sender, lower case */
	const char *reason; /* what the notice says */
	const char *decision; /* out: "sent", why not, or NULL: told
			       * before */
	char notice_id[PB_MSGID_MAX + 1]; /* out, when sent */
};

/* Whether the notice may go: NULL, else the rule that holds it back. */
static int decide(const char **decision, char *why, size_t size,
		  struct store *st, const struct tell *t, const struct mail *m)
{
	const struct emailnotice_ctx *c = t->c;
	struct notice_screen_in sc;

	*decision = NULL;
	if (!config_project_bool(c->proj, CFG_INBOUND_NOTIFY_SENDER)) {
		*decision = "disabled";
		snprintf(why, size, "[inbound] notify_sender = no");
		return 0;
	}
	if (!t->to[0] || !strchr(t->to, '@')) {
		*decision = "no_address";
		snprintf(why, size, "the series has no sender address");
		return 0;
	}
	memset(&sc, 0, sizeof(sc));
	sc.raw = t->raw;
	sc.len = t->len;
	sc.list_address = config_project_str(c->proj, CFG_BRIDGE_LIST_ADDRESS);
	sc.bridge_address = config_str(c->cfg, CFG_BRIDGE_ADDRESS);
	sc.bridge_domain = config_str(c->cfg, CFG_BRIDGE_DOMAIN);
	sc.wrapped = m->wrapper.email && m->wrapper.email[0];
	*decision = notice_screen(&sc, why, size);
	if (*decision)
		return 0;
	return store_notice_allowed(decision, why, size, st, t->to,
				    config_int(c->cfg, CFG_INBOUND_NOTICE_RATE),
				    (int64_t)time(NULL));
}

/* Render the notice and queue it (a receipt of no merge request). */
static int queue_notice(struct store *st, struct tell *t, const struct mail *m)
{
	const struct emailnotice_ctx *c = t->c;
	struct buf id = BUF_INIT(PB_MSGID_MAX + 1);
	struct buf mail = BUF_INIT(SERIES_NOTICE_MAX);
	struct store_notice_place at = { config_project_name(c->proj), 0, 0,
					 0 };
	struct notice n;
	char date[64];
	time_t now = time(NULL);
	struct tm tm;
	int rc;

	notice_init(&n);
	rc = notice_message_id(&id, t->key,
			       config_str(c->cfg, CFG_BRIDGE_DOMAIN));
	if (rc)
		goto out;
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S +0000", &tm);
	n.kind = NOTICE_SERIES;
	n.to_name = m->from.name;
	n.to_email = t->to;
	n.reply_id = t->series_id;
	n.notice_id = id.data;
	n.subject = m->subject;
	n.mr = config_project_name(c->proj);
	n.link = "";
	n.date = date;
	strlist_push(&n.reasons, t->reason);
	rc = noticemail_render(&mail, &n, (void *)c->cfg);
	if (rc == PB_EINVAL || rc == PB_ELIMIT) {
		/* an address no header can carry: recorded, not retried */
		log_warn("notice to the sender of <%s> not rendered: %s",
			 t->series_id, err_msg());
		t->decision = "unrenderable";
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	rc = store_notice_queue(st, id.data, &at,
				config_str(c->cfg, CFG_BRIDGE_ADDRESS), t->to,
				mail.data, mail.len);
	if (rc == PB_EEXISTS)
		rc = 0; /* queued before: one notice */
	if (!rc)
		snprintf(t->notice_id, sizeof(t->notice_id), "%s", id.data);
out:
	notice_release(&n);
	buf_release(&id);
	buf_release(&mail);
	return rc;
}

static int tell_tx(struct store *st, void *arg)
{
	struct tell *t = arg;
	struct store_notice row;
	struct mail *m = NULL;
	char why[PB_ERRMSG_MAX];
	int rc;

	t->decision = NULL;
	t->notice_id[0] = '\0';
	why[0] = '\0';
	store_notice_init(&row);
	rc = store_notice_get(&row, st, t->key);
	store_notice_release(&row);
	if (rc != PB_ENOTFOUND)
		return rc; /* 0: decided before */
	rc = mail_parse(&m, t->raw, t->len, NULL);
	if (rc)
		return rc;
	rc = decide(&t->decision, why, sizeof(why), st, t, m);
	if (!rc && !t->decision) {
		t->decision = "sent";
		rc = queue_notice(st, t, m);
	}
	mail_free(m);
	if (rc)
		return rc;
	store_notice_init(&row);
	row.message_id = t->key;
	row.notice_id = t->notice_id[0] ? t->notice_id : NULL;
	row.recipient = t->to[0] ? t->to : NULL;
	row.decision = t->decision;
	row.reasons = t->reason;
	rc = store_notice_put(st, &row);
	store_notice_release(&row);
	return rc == PB_EEXISTS ? 0 : rc;
}

/* Decide, once, the notice prefix+series_id says reason. */
static int tell(const struct emailnotice_ctx *c, const char *prefix,
		const char *series_id, const char *sender, const char *raw,
		size_t len, const char *reason)
{
	struct tell t;
	char *to = xstrdup(sender ? sender : "");
	char shown[PB_LOG_QUOTE_MAX];
	size_t i;
	int rc;

	for (i = 0; to[i]; i++)
		to[i] = (char)tolower((unsigned char)to[i]);
	memset(&t, 0, sizeof(t));
	t.c = c;
	t.key = xasprintf("%s%s", prefix, series_id);
	t.series_id = series_id;
	t.raw = raw;
	t.len = len;
	t.to = to;
	t.reason = reason;
	rc = store_transaction(c->st, tell_tx, &t);
	printable_copy(shown, sizeof(shown), series_id, strlen(series_id));
	if (!rc && t.decision)
		metrics_inc1(MET_NOTICES, t.decision);
	if (!rc && t.decision && !strcmp(t.decision, "sent"))
		log_info("series <%s>: notice <%s> to its sender queued (%s)",
			 shown, t.notice_id, prefix);
	else if (!rc && t.decision)
		log_info("series <%s>: no notice to its sender (%s)", shown,
			 t.decision);
	free((char *)t.key);
	free(to);
	return rc;
}

/* The first line of a notices row's reasons, for err_msg(). */
static void first_line(char *out, size_t size, const char *s)
{
	size_t n = s ? strcspn(s, "\n") : 0;

	printable_copy(out, size, s ? s : "", n);
}

/* Refuse: tell the sender, and the code and message for the journal. */
static int refuse(const struct emailnotice_ctx *c, int code,
		  const char *series_id, const char *sender, const char *raw,
		  size_t len, const char *reason, const char *what)
{
	int rc = tell(c, EMAILNOTICE_REFUSED, series_id, sender, raw, len,
		      reason);

	if (rc)
		return rc; /* PB_ETEMP: the mail is tried again */
	return err_set(code, "refused: %s", what);
}

/* The limits of a series: 0 within them, else refused. */
static int limits(const struct emailnotice_ctx *c, const struct review *r,
		  const char *key, const char *sender, const char *raw,
		  size_t len)
{
	const struct config_project *p = c->proj;
	struct store_submission have;
	char reason[1024], what[256];
	int64_t max, n = 0;
	int total = r->subject.total > 0 ? r->subject.total : 1;
	int rc, exists;

	max = config_project_int(p, CFG_PROJECT_EMAIL_MAX_PATCHES);
	if (total > max) {
		snprintf(reason, sizeof(reason),
			 "Your series has %d patches; this project takes a "
			 "series of at most %lld by mail (email_max_patches), "
			 "so no merge request was opened. Send it as smaller "
			 "series, or open the merge request on the forge.",
			 total, (long long)max);
		snprintf(what, sizeof(what),
			 "%d patches, over email_max_patches (%lld)", total,
			 (long long)max);
		return refuse(c, PB_ELIMIT, key, sender, raw, len, reason,
			      what);
	}
	store_submission_init(&have);
	rc = store_submission_get(&have, c->st, key);
	exists = !rc;
	if (rc == PB_ENOTFOUND)
		rc = 0;
	if (!rc && exists &&
	    (have.state != STORE_SUBMISSION_COLLECTING ||
	     strcmp(have.sender, sender)))
		exists = -1; /* emailmr_collect() says why */
	store_submission_release(&have);
	if (rc || exists < 0)
		return rc;

	max = (int64_t)config_project_size(p, CFG_PROJECT_EMAIL_MAX_BYTES);
	if (exists)
		rc = store_submission_bytes(&n, c->st, key);
	if (rc)
		return rc;
	if (n + (int64_t)len > max) {
		snprintf(reason, sizeof(reason),
			 "Your series weighs more than %lld bytes, the most "
			 "this project takes by mail (email_max_bytes), so no "
			 "merge request was opened and its further mails are "
			 "not read. Send it as smaller series, or open the "
			 "merge request on the forge.",
			 (long long)max);
		snprintf(what, sizeof(what),
			 "%lld bytes, over email_max_bytes (%lld)",
			 (long long)(n + (int64_t)len), (long long)max);
		return refuse(c, PB_ELIMIT, key, sender, raw, len, reason,
			      what);
	}
	if (exists)
		return 0;
	max = config_project_int(p, CFG_PROJECT_EMAIL_SERIES_PER_HOUR);
	rc = store_submission_count_sender(&n, c->st, sender,
					   (int64_t)time(NULL) - 3600);
	if (rc)
		return rc;
	if (n >= max) {
		snprintf(reason, sizeof(reason),
			 "You posted %lld series to the list in the last hour, "
			 "the most this project takes from one sender by mail "
			 "(email_series_per_hour), so this one was not made a "
			 "merge request. Send it again later.",
			 (long long)n);
		snprintf(what, sizeof(what),
			 "%lld series in the last hour, at "
			 "email_series_per_hour (%lld)",
			 (long long)n, (long long)max);
		return refuse(c, PB_ELIMIT, key, sender, raw, len, reason,
			      what);
	}
	return 0;
}

int emailnotice_screen(const struct emailnotice_ctx *c,
		       enum emailmr_policy policy, const struct review *r,
		       const char *raw, size_t len)
{
	struct store_notice before;
	const struct mail *mail;
	char *key = NULL, *sender = NULL, *k, line[PB_ERRMSG_MAX / 2];
	size_t i;
	int rc;

	if (policy == EMAILMR_OFF)
		return 0; /* nobody, and nobody told */
	mail = r->mail;
	if (!r->submission || !mail->message_id || !mail->from.email[0])
		return 0; /* emailmr_collect() says why */
	key = emailmr_series_key(c->st, r);
	sender = xstrdup(mail->from.email);
	for (i = 0; sender[i]; i++)
		sender[i] = (char)tolower((unsigned char)sender[i]);

	/* a series refused once stays refused, and is told once */
	k = xasprintf("%s%s", EMAILNOTICE_REFUSED, key);
	store_notice_init(&before);
	rc = store_notice_get(&before, c->st, k);
	free(k);
	if (!rc) {
		first_line(line, sizeof(line), before.reasons);
		rc = err_set(PB_EPERM, "its series was refused: %s", line);
	} else if (rc == PB_ENOTFOUND) {
		rc = 0;
	}
	store_notice_release(&before);
	if (rc)
		goto out;

	if (policy == EMAILMR_VERIFIED && !r->auth.verified) {
		rc = refuse(
			c, PB_EPERM, key, sender, raw, len,
			"This project makes merge requests only of series "
			"whose sender the list host verifies (DKIM or DMARC; "
			"[project] email_submissions = verified), and it "
			"could not verify yours, so nothing was opened on "
			"the forge. Send the series from an address your "
			"mail server signs with DKIM, or open the merge "
			"request on the forge.",
			"the sender is not DKIM/DMARC-verified");
		goto out;
	}
	rc = limits(c, r, key, sender, raw, len);
out:
	free(key);
	free(sender);
	return rc;
}

int emailnotice_failed(void *arg, const struct emailmr_failure *f)
{
	const struct emailnotice_ctx *c = arg;
	char subject[256], git[PB_ERRMSG_MAX], base[128];
	struct buf reason = BUF_INIT(4096);
	int rc;

	if (f->not_attested) {
		printable_copy(git, sizeof(git), f->not_attested,
			       strlen(f->not_attested));
		buf_addf(&reason,
			 EMAILNOTICE_UNATTESTED
			 " (a patatt signature, as b4 and patatt make it, with "
			 "a key the project's keyring holds) or DKIM-verified, "
			 "and %s. Nothing was pushed. Sign the series (patatt "
			 "sign, or b4 send) with a key the project has, and "
			 "send it again as v%d.",
			 git, f->version + 1);
		goto tell;
	}
	if (f->taken_iid) {
		buf_addf(&reason,
			 "This series is v%d, and merge request !%lld has "
			 "taken v%d already: nothing was pushed. To update "
			 "the merge request, send the next version as v%d.",
			 f->version, (long long)f->taken_iid, f->taken_version,
			 f->taken_version + 1);
		goto tell;
	}
	printable_copy(subject, sizeof(subject),
		       f->patch_subject ? f->patch_subject : "",
		       f->patch_subject ? strlen(f->patch_subject) : 0);
	printable_copy(git, sizeof(git), f->git_message,
		       strlen(f->git_message));
	if (f->base_named)
		snprintf(base, sizeof(base), "the base-commit your mails name");
	else
		snprintf(base, sizeof(base), "the tip of %s", f->target_branch);
	buf_addf(&reason,
		 "Patch %d/%d \"%s\" does not apply on %.12s (%s): %s. No "
		 "merge request was opened. A fixed version is welcome: "
		 "rebase the series on %s and send it again as v%d.",
		 f->patch, f->total, subject, f->base, base, git,
		 f->target_branch, f->version + 1);
tell:
	rc = buf_error(&reason);
	if (!rc)
		rc = tell(c, EMAILNOTICE_FAILED, f->series_id, f->sender,
			  f->first, f->first_len, reason.data);
	buf_release(&reason);
	return rc;
}

int emailnotice_missing(struct buf *out, struct store *st,
			const char *series_id)
{
	struct store_submission sub;
	struct store_submitted_list mails = { 0 };
	unsigned char *have = NULL;
	int rc, k, cover = 0, n = 0;
	size_t i;

	store_submission_init(&sub);
	rc = store_submission_get(&sub, st, series_id);
	if (!rc)
		rc = store_submission_mails(&mails, st, series_id);
	if (rc)
		goto out;
	have = xcalloc((size_t)sub.total + 1, 1);
	for (i = 0; i < mails.nr; i++) {
		if (mails.items[i].patch == 0)
			cover = 1;
		else if (mails.items[i].patch <= sub.total)
			have[mails.items[i].patch] = 1;
		/* keyed by patch 1: the series has no cover letter */
		if (mails.items[i].patch == 1 &&
		    !strcmp(mails.items[i].message_id, series_id))
			cover = 1;
	}
	if (!cover && ++n)
		buf_adds(out, "the cover letter");
	for (k = 1; k <= sub.total; k++)
		if (!have[k])
			buf_addf(out, "%s%d/%d", n++ ? ", " : "", k, sub.total);
	rc = buf_error(out);
out:
	free(have);
	store_submitted_list_release(&mails);
	store_submission_release(&sub);
	return rc;
}

/* Tell the sender of one series what it still lacks. */
static int remind_one(const struct emailnotice_ctx *c,
		      const struct store_submission *sub)
{
	struct store_submitted_list mails = { 0 };
	struct buf missing = BUF_INIT(1024);
	struct buf reason = BUF_INIT(4096);
	char since[64];
	time_t t = (time_t)sub->created;
	struct tm tm;
	int rc;

	rc = emailnotice_missing(&missing, c->st, sub->series_id);
	if (!rc)
		rc = store_submission_mails(&mails, c->st, sub->series_id);
	if (rc || !mails.nr)
		goto out;
	gmtime_r(&t, &tm);
	strftime(since, sizeof(since), "%Y-%m-%d %H:%M UTC", &tm);
	buf_addf(&reason,
		 "Your series (v%d, %d patch%s) has waited since %s for %s; "
		 "the others came. It becomes a merge request once the "
		 "rest comes: send the missing mails to the list in reply "
		 "to <%s> (git send-email --in-reply-to).",
		 sub->version, sub->total, sub->total == 1 ? "" : "es", since,
		 missing.data, sub->series_id);
	rc = buf_error(&reason);
	if (!rc)
		rc = tell(c, EMAILNOTICE_MISSING, sub->series_id, sub->sender,
			  mails.items[0].message, mails.items[0].message_len,
			  reason.data);
out:
	store_submitted_list_release(&mails);
	buf_release(&missing);
	buf_release(&reason);
	return rc;
}

int emailnotice_remind(struct store *st, const struct config *cfg, int64_t now,
		       size_t *told)
{
	struct emailnotice_ctx c;
	size_t i, k;
	int rc = 0, rc1;

	if (told)
		*told = 0;
	memset(&c, 0, sizeof(c));
	c.st = st;
	c.cfg = cfg;
	for (i = 0; i < config_project_count(cfg); i++) {
		struct store_submission_list due = { 0 };
		int64_t wait;

		c.proj = config_project_at(cfg, i);
		if (!config_project_bool(c.proj, CFG_PROJECT_ENABLED) ||
		    config_project_enum(c.proj,
					CFG_PROJECT_EMAIL_SUBMISSIONS) ==
			    CONFIG_SUBMISSIONS_OFF)
			continue;
		wait = config_project_duration_ms(
			       c.proj, CFG_PROJECT_EMAIL_SERIES_WAIT) /
		       1000;
		rc1 = store_submission_list_due(
			&due, st, config_project_name(c.proj), now - wait,
			EMAILNOTICE_MISSING, EMAILNOTICE_REFUSED, REMIND_BATCH);
		for (k = 0; !rc1 && k < due.nr; k++) {
			rc1 = remind_one(&c, &due.items[k]);
			if (rc1)
				log_warn("series <%s>: %s",
					 due.items[k].series_id, err_msg());
			else if (told)
				(*told)++;
		}
		store_submission_list_release(&due);
		if (rc1 && !rc)
			rc = rc1;
	}
	return rc;
}
