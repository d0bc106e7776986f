/*
 * `patchbridge why MESSAGE-ID`: the story of one mail.  See cmd_why.h.
 *
 * Two steps: gather every fact the state database and the spool hold
 * about the Message-ID into a struct why (nothing is printed meanwhile),
 * then tell it, as text or as JSON.  Every string that came from mail or
 * from the forge goes through printable_copy() before it reaches the
 * terminal; the JSON writer escapes on its own.
 */
#include "cmd/cmd_why.h"
#include "cmd/env.h"

#include "core/config.h"
#include "inbound/inbound.h"
#include "inbound/plan.h"
#include "mail/mail.h"
#include "mail/review.h"
#include "mail/trailers.h"
#include "outbound/emailnotice.h"
#include "state/spool.h"
#include "state/store.h"
#include "state/storeconf.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/jsonw.h"
#include "util/limits.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

/* Cap on a dead letter's reason file as read back. */
#define WHY_REASON_MAX (PB_ERRMSG_MAX + 256)
/* A forge link: base URL, project path, iid and note id. */
#define WHY_URL_MAX (CONFIG_PROJECT_MAX + 2048)

/* Everything known about one Message-ID. */
struct why {
	const struct config *cfg;
	char id[STORE_MSGID_MAX + 1]; /* without <> */
	int no_store; /* no state database yet */
	/* The inbound journal. */
	int have_row;
	struct store_inbound row;
	int total; /* M of the revision the row names; 0: unknown */
	struct store_action_list acts;
	struct strlist verdicts; /* per trailer, as applied (schema 5) */
	int have_notice; /* the notice to the sender (schema 10) */
	struct store_notice notice;
	/* The thread map, for mail the bridge sent, and its queue row. */
	int have_sent;
	struct store_mail sent;
	int have_queued;
	struct store_outmail queued;
	/* A mail of a series posted to the list, and its series. */
	int have_sub;
	struct store_submitted subm;
	struct store_submission sub;
	/* What its sender was told (emailnotice.h): by kind, as kinds[]
	 * in gather_series(); and the patches it still lacks. */
	struct store_notice told[3];
	int have_told[3];
	char missing[512];
	/* The spool. */
	int no_spool; /* no spool directory yet */
	int spool_rc; /* 0, or why the spool cannot be read: */
	char spool_err[PB_ERRMSG_MAX];
	struct spool_entry_list recs;
	struct strlist reasons; /* per rec: dead/NAME.reason, else "" */
	/* The mail, read back from its record. */
	int have_rec;
	struct spool_record rec;
	char parse_err[PB_ERRMSG_MAX]; /* why it does not parse; "" */
	struct review *review;
	int mail_up; /* mail_init() was called */
};

static void why_init(struct why *w, const struct config *cfg)
{
	memset(w, 0, sizeof(*w));
	w->cfg = cfg;
	store_inbound_init(&w->row);
	store_mail_init(&w->sent);
	store_outmail_init(&w->queued);
	store_submitted_init(&w->subm);
	store_submission_init(&w->sub);
	for (size_t k = 0; k < 3; k++)
		store_notice_init(&w->told[k]);
	strlist_init(&w->reasons);
	strlist_init(&w->verdicts);
	store_notice_init(&w->notice);
	spool_record_init(&w->rec);
}

static void why_release(struct why *w)
{
	store_inbound_release(&w->row);
	store_action_list_release(&w->acts);
	store_mail_release(&w->sent);
	store_outmail_release(&w->queued);
	store_submitted_release(&w->subm);
	store_submission_release(&w->sub);
	for (size_t k = 0; k < 3; k++)
		store_notice_release(&w->told[k]);
	spool_entry_list_release(&w->recs);
	strlist_release(&w->reasons);
	strlist_release(&w->verdicts);
	store_notice_release(&w->notice);
	spool_record_release(&w->rec);
	review_free(w->review);
}

/*
 * The Message-ID exactly as the inbound journal keys it
 * (inbound_message_id(): surrounding blanks, leading '<'s and trailing
 * '>'s off, other bytes kept), so an id the journal holds, "<<x@y>>",
 * blanks or 8-bit bytes inside included, can be asked for.  PB_EINVAL
 * when nothing is left, it is too long, or it holds a control character
 * (no mail's id does; it is a pasting accident).
 */
static int normalise_id(char *out, size_t size, const char *arg)
{
	const char *p;
	size_t len, i;

	inbound_message_id_span(&p, &len, arg);
	if (!len)
		return err_set(PB_EINVAL, "not a Message-ID: nothing is left "
					  "without the blanks and the <>");
	if (len >= size)
		return err_set(PB_EINVAL,
			       "not a Message-ID: longer than %zu bytes",
			       size - 1);
	for (i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return err_set(PB_EINVAL,
				       "not a Message-ID: it holds a control "
				       "character (byte %zu is 0x%02x)",
				       i + 1, (unsigned char)p[i]);
	memcpy(out, p, len);
	out[len] = '\0';
	return 0;
}

/* s made safe for the terminal ("" for NULL). */
static const char *pr(char *buf, size_t size, const char *s)
{
	return printable_copy(buf, size, s ? s : "", s ? strlen(s) : 0);
}

static const char *action_state_name(enum store_action_state s)
{
	switch (s) {
	case STORE_ACTION_INTENT:
		return "intent";
	case STORE_ACTION_DONE:
		return "done";
	case STORE_ACTION_FAILED:
		return "failed";
	}
	return "unknown";
}

/*
 * The web address of an MR (note 0) or of one of its notes, as GitLab
 * shows them: FORGE/PROJECT/-/merge_requests/IID#note_ID.  "" without a
 * project.
 */
static void forge_url(char *out, size_t size, const struct why *w,
		      const char *project, int64_t iid, int64_t note)
{
	const char *base = config_str(w->cfg, CFG_FORGE_URL);
	size_t blen = strlen(base);

	while (blen && base[blen - 1] == '/')
		blen--;
	if (!project || !*project || iid <= 0) {
		snprintf(out, size, "%s", "");
		return;
	}
	if (note > 0)
		snprintf(out, size, "%.*s/%s/-/merge_requests/%lld#note_%lld",
			 (int)blen, base, project, (long long)iid,
			 (long long)note);
	else
		snprintf(out, size, "%.*s/%s/-/merge_requests/%lld", (int)blen,
			 base, project, (long long)iid);
}

/* ---- gathering ------------------------------------------------------- */

/* The notices rows of a series' sender, by kind. */
static const char *const told_kinds[3] = { EMAILNOTICE_REFUSED,
					   EMAILNOTICE_FAILED,
					   EMAILNOTICE_MISSING };

/* A series posted to the list: what its sender was told, what it lacks. */
static int gather_series(struct why *w, struct store *st)
{
	struct buf miss = BUF_INIT(sizeof(w->missing));
	size_t k;
	int rc = 0;

	for (k = 0; !rc && k < 3; k++) {
		char *key = xasprintf("%s%s", told_kinds[k], w->sub.series_id);

		rc = store_notice_get(&w->told[k], st, key);
		w->have_told[k] = !rc;
		if (rc == PB_ENOTFOUND)
			rc = 0;
		free(key);
	}
	if (!rc && w->sub.state == STORE_SUBMISSION_COLLECTING) {
		rc = emailnotice_missing(&miss, st, w->sub.series_id);
		if (rc == PB_ELIMIT) /* what fitted */
			rc = 0;
		snprintf(w->missing, sizeof(w->missing), "%s", miss.data);
	}
	buf_release(&miss);
	return rc;
}

/* What the state database holds. */
static int gather_store(struct why *w)
{
	const struct config *cfg = w->cfg;
	struct store_revision rev;
	struct store *st = NULL;
	int rc;

	rc = storeconf_open(&st, cfg, STORE_RO);
	if (rc == PB_ENOTFOUND) {
		w->no_store = 1;
		return 0;
	}
	if (rc)
		return rc;
	store_revision_init(&rev);
	/* One snapshot: the daemon may be writing meanwhile. */
	rc = store_begin(st);
	if (rc)
		goto out;
	rc = store_inbound_get(&w->row, st, w->id);
	w->have_row = !rc;
	if (!rc || rc == PB_ENOTFOUND)
		rc = store_action_list(&w->acts, st, w->id);
	if (!rc && w->have_row)
		rc = store_verdicts_get(&w->verdicts, st, w->id);
	if (!rc && w->have_row) {
		rc = store_notice_get(&w->notice, st, w->id);
		w->have_notice = !rc;
	}
	if (rc == PB_ENOTFOUND)
		rc = 0;
	if (!rc && w->have_row && w->row.project) {
		rc = store_revision_get(&rev, st, w->row.project, w->row.iid,
					w->row.revision);
		if (!rc)
			w->total = rev.patches;
		if (rc == PB_ENOTFOUND)
			rc = 0;
	}
	if (!rc) {
		rc = store_mail_get(&w->sent, st, w->id);
		w->have_sent = !rc;
		if (rc == PB_ENOTFOUND)
			rc = 0;
	}
	if (!rc) {
		rc = store_submitted_get(&w->subm, st, w->id);
		if (!rc)
			rc = store_submission_get(&w->sub, st,
						  w->subm.series_id);
		w->have_sub = !rc;
		if (rc == PB_ENOTFOUND)
			rc = 0;
		if (!rc && w->have_sub)
			rc = gather_series(w, st);
	}
	if (!rc && w->have_sent && w->sent.state == STORE_MAIL_PENDING) {
		rc = store_outmail_get(&w->queued, st, w->id);
		w->have_queued = !rc;
		if (rc == PB_ENOTFOUND)
			rc = 0;
	}
	if (rc)
		store_rollback(st);
	else
		rc = store_commit(st);
out:
	store_revision_release(&rev);
	store_free(st);
	return rc;
}

/* Parse the mail of w->rec, for its sender, trailers and authentication. */
static void parse_mail(struct why *w)
{
	const struct config_project *proj;
	struct review_options ro;
	int rc;

	memset(&ro, 0, sizeof(ro));
	ro.trusted_authserv_id =
		config_str(w->cfg, CFG_MILTER_TRUSTED_AUTHSERV_ID);
	if (!ro.trusted_authserv_id[0])
		ro.trusted_authserv_id = NULL;
	ro.trusted_fields =
		(size_t)config_int(w->cfg, CFG_MILTER_TRUSTED_AUTHRES_FIELDS);
	if (w->have_rec && w->rec.project[0] &&
	    !config_project_get(&proj, w->cfg, w->rec.project)) {
		ro.list_authserv_id =
			config_project_str(proj, CFG_INBOUND_LIST_AUTHSERV_ID);
		ro.list_address =
			config_project_str(proj, CFG_BRIDGE_LIST_ADDRESS);
	}
	if (mail_init()) {
		snprintf(w->parse_err, sizeof(w->parse_err), "%s", err_msg());
		return;
	}
	w->mail_up = 1;
	rc = review_parse(&w->review, w->rec.message.data, w->rec.message.len,
			  NULL, &ro);
	if (rc)
		snprintf(w->parse_err, sizeof(w->parse_err), "%s", err_msg());
}

/*
 * What the spool holds: the records carrying the Message-ID, the reasons
 * of the dead ones, and the mail of the journaled record (else the
 * first).  A spool that cannot be read is reported, not fatal.
 */
static void gather_spool(struct why *w)
{
	struct spool *sp = NULL;
	size_t i, pick = 0, readable = 0;
	int rc;

	rc = spool_open(&sp, config_str(w->cfg, CFG_SPOOL_DIR), SPOOL_INSPECT);
	if (rc == PB_ENOTFOUND) {
		w->no_spool = 1; /* nothing was ever spooled here */
		return;
	}
	if (!rc) {
		rc = spool_find(&w->recs, sp, w->id);
		if (rc == PB_ENOTFOUND)
			rc = 0;
	}
	if (rc) {
		w->spool_rc = rc;
		snprintf(w->spool_err, sizeof(w->spool_err), "%s", err_msg());
		goto out;
	}
	for (i = 0; i < w->recs.nr; i++) {
		const struct spool_entry *e = &w->recs.items[i];
		struct buf reason = BUF_INIT(WHY_REASON_MAX);

		/* One that cannot be read may be another mail's. */
		if (e->area == SPOOL_DEAD && !e->read_errno &&
		    spool_dead_reason(&reason, sp, e->name)) {
			buf_reset(&reason);
			buf_addf(&reason, "(no reason file: %s)", err_msg());
		}
		strlist_push(&w->reasons, reason.data);
		buf_release(&reason);
		if (e->read_errno)
			continue;
		if (!readable++ ||
		    (w->have_row && !strcmp(e->name, w->row.spool_name)))
			pick = i;
	}
	if (!readable)
		goto out;
	rc = spool_load(&w->rec, sp, w->recs.items[pick].area,
			w->recs.items[pick].name);
	if (rc) {
		snprintf(w->parse_err, sizeof(w->parse_err), "%s", err_msg());
		goto out;
	}
	w->have_rec = 1;
	parse_mail(w);
out:
	spool_free(sp);
}

/* ---- the story ------------------------------------------------------- */

/* What a journal reason means, for the reasons the daemon gives. */
static const char *explain(const char *reason)
{
	static const struct {
		const char *prefix, *text;
	} known[] = {
		{ "nothing to apply",
		  "the mail has no text of its own, no inline comment, "
		  "trailer or NAK: only quotes, or a signature" },
		{ "not a reply",
		  "it is a patch or cover letter itself, not a reply to one" },
		{ "the bridge's own mail",
		  "the bridge sent it; its own mail is never bridged back "
		  "(loop guard)" },
		{ "project ", "the configuration does not bridge that project "
			      "(no [project] section, or enabled = no)" },
		{ "gave up after",
		  "the forge or the state kept failing until [inbound] "
		  "max_attempts was used up" },
		{ "spool record", "the mail's spool record is missing or "
				  "does not parse" },
		{ "the mail does not parse",
		  "the MIME parser refused the mail" },
		{ "planning:", "working out the forge actions failed" },
	};
	size_t i;

	if (!reason)
		return NULL;
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strncmp(reason, known[i].prefix, strlen(known[i].prefix)))
			return known[i].text;
	if (strstr(reason, "action(s) failed"))
		return "the forge refused an action for good; its answer is "
		       "with the action below";
	return NULL;
}

/* The first spool record that cannot be read (it may be the mail's). */
static const struct spool_entry *unreadable(const struct why *w)
{
	size_t i;

	for (i = 0; i < w->recs.nr; i++)
		if (w->recs.items[i].read_errno)
			return &w->recs.items[i];
	return NULL;
}

/* The one-word outcome, and the state database's part of the verdict. */
static const char *verdict(const struct why *w)
{
	size_t i, readable = 0;

	if (w->have_row)
		return store_inbound_state_name(w->row.state);
	for (i = 0; i < w->recs.nr; i++) {
		if (w->recs.items[i].read_errno)
			continue;
		if (w->recs.items[i].area == SPOOL_DEAD)
			return "dead";
		readable++;
	}
	if (readable)
		return "spooled";
	if (w->have_sent)
		return "sent-by-bridge";
	/* Not in the journal, but a record nobody can rule out. */
	if (unreadable(w))
		return "unreadable";
	return "unknown";
}

/* What action index of a mail stands for. */
static void action_role(char *out, size_t size, int index)
{
	if (index == PLAN_IDX_COMMENT)
		snprintf(out, size, "the comment");
	else if (index >= PLAN_IDX_INLINE(0) && index < PLAN_IDX_APPROVE(0))
		snprintf(out, size, "inline comment %d", index);
	else if (index >= PLAN_IDX_APPROVE(0) &&
		 index < PLAN_IDX_APPROVE_NOTE(0))
		snprintf(out, size, "approval for trailer %d",
			 index - PLAN_IDX_APPROVE(0) + 1);
	else if (index >= PLAN_IDX_APPROVE_NOTE(0) &&
		 index < PLAN_IDX_NAK_LABEL)
		snprintf(out, size, "why approval %d failed",
			 index - PLAN_IDX_APPROVE_NOTE(0) + 1);
	else if (index == PLAN_IDX_NAK_LABEL)
		snprintf(out, size, "NAK label");
	else if (index == PLAN_IDX_NAK_DISCUSSION)
		snprintf(out, size, "NAK discussion");
	else if (index == PLAN_IDX_NAK_UNAPPROVE)
		snprintf(out, size, "NAK: approval withdrawn");
	else
		snprintf(out, size, "action %d", index);
}

static const struct store_action *find_action(const struct why *w, int index)
{
	size_t i;

	for (i = 0; i < w->acts.nr; i++)
		if (w->acts.items[i].index == index)
			return &w->acts.items[i];
	return NULL;
}

/* The note that carries the mail's words: its comment, or a NAK's. */
static const struct store_action *comment_action(const struct why *w)
{
	const struct store_action *a = find_action(w, PLAN_IDX_COMMENT);

	return a ? a : find_action(w, PLAN_IDX_NAK_DISCUSSION);
}

static const char *area_story(enum spool_area a)
{
	switch (a) {
	case SPOOL_NEW:
		return "spooled, waiting for the daemon to read it";
	case SPOOL_CUR:
		return "claimed by the daemon: journaled, being applied or "
		       "waiting for a retry";
	case SPOOL_DONE:
		return "filed after it was applied or ignored";
	case SPOOL_DEAD:
		return "a dead letter, kept until an operator removes it";
	default:
		return "";
	}
}

/* The value of "Key: " in a reason file's text, into out ("" if none). */
static void reason_field(char *out, size_t size, const char *text,
			 const char *key)
{
	size_t klen = strlen(key), ll;
	const char *line;
	struct scan s;

	snprintf(out, size, "%s", "");
	scan_init(&s, text, strlen(text));
	while (scan_line(&s, &line, &ll))
		if (ll > klen && !strncmp(line, key, klen)) {
			printable_copy(out, size, line + klen, ll - klen);
			return;
		}
}

/* The first line of the verdict, as a sentence. */
static void tell_verdict(const struct why *w, const char *v)
{
	char e[PB_ERRMSG_MAX], t[32];
	const struct store_inbound *r = &w->row;

	if (!w->have_row) {
		if (!strcmp(v, "dead"))
			printf("  dead letter: the daemon could not read its "
			       "spool record (see below)\n");
		else if (!strcmp(v, "spooled"))
			printf("  spooled by the milter, not journaled by the "
			       "daemon yet\n");
		else if (!strcmp(v, "unreadable"))
			printf("  cannot tell: not in the state database, and "
			       "a spool record that may be this mail's exists "
			       "but cannot be read (see below)\n");
		return; /* a mail the bridge sent: tell_sent() */
	}
	pr(e, sizeof(e), r->last_error);
	switch (r->state) {
	case STORE_INBOUND_RECEIVED:
		printf("  waiting: journaled, to be applied at the daemon's "
		       "next pass\n");
		break;
	case STORE_INBOUND_APPLYING:
		printf("  being applied now (or the applier was stopped; the "
		       "daemon's next start takes it up again)\n");
		break;
	case STORE_INBOUND_APPLIED:
		printf("  applied to the forge: %s\n", e);
		break;
	case STORE_INBOUND_IGNORED:
		printf("  ignored: %s\n", e);
		break;
	case STORE_INBOUND_FAILED:
		env_time(t, sizeof(t), r->next_attempt);
		printf("  waiting for a retry after %d failed attempt%s, next "
		       "at %s: %s\n",
		       r->attempts, r->attempts == 1 ? "" : "s", t, e);
		printf("    (the daemon retries it then; with the daemon "
		       "stopped, `patchbridge replay --apply-now --retry-now`"
		       " retries it now: while the daemon runs, that only "
		       "leaves the spool to it)\n");
		return;
	case STORE_INBOUND_DEAD:
		printf("  dead letter: %s\n", e);
		break;
	}
	if (explain(r->last_error) && r->state != STORE_INBOUND_APPLIED)
		printf("    (%s)\n", explain(r->last_error));
}

static void tell_classification(const struct why *w)
{
	char p[PB_LOG_QUOTE_MAX], k[PB_LOG_QUOTE_MAX], c[32];
	const struct store_inbound *r = &w->row;
	const char *kind = r->classification ? r->classification : "reply";
	const char *a = strcmp(kind, "reply") ? "" : "a ";

	if (!w->have_row) {
		if (w->have_rec && w->rec.project[0])
			printf("  classified by the milter: %s to %s!%lld\n",
			       pr(k, sizeof(k), w->rec.kind),
			       pr(p, sizeof(p), w->rec.project),
			       (long long)w->rec.iid);
		return;
	}
	if (!r->project) {
		printf("  classified: %s, not placed on a merge request by "
		       "the milter\n",
		       pr(k, sizeof(k), kind));
		return;
	}
	if (r->patch > 0 && w->total)
		snprintf(c, sizeof(c), "patch %d/%d", r->patch, w->total);
	else if (r->patch > 0)
		snprintf(c, sizeof(c), "patch %d", r->patch);
	else
		snprintf(c, sizeof(c), "the cover letter");
	if (r->revision > 0)
		printf("  classified: %s%s to %s!%lld v%d, %s\n", a,
		       pr(k, sizeof(k), kind), pr(p, sizeof(p), r->project),
		       (long long)r->iid, r->revision, c);
	else
		printf("  classified: %s%s to %s!%lld (revision unknown), "
		       "%s\n",
		       a, pr(k, sizeof(k), kind), pr(p, sizeof(p), r->project),
		       (long long)r->iid, c);
}

static void tell_sender(const struct why *w)
{
	const struct review *rv = w->review;
	char n[PB_LOG_QUOTE_MAX], a[PB_LOG_QUOTE_MAX];

	if (!rv)
		return;
	printf("  from: %s <%s>, %s\n", pr(n, sizeof(n), rv->mail->from.name),
	       pr(a, sizeof(a), rv->mail->from.email),
	       rv->auth.verified ? "DKIM/DMARC verified" :
				   "not verified (no DKIM/DMARC pass from "
				   "the trusted authserv-id)");
}

/* Which host spooled and journaled the mail, which applied it (a shared
 * state has several; the names are [state] host). */
static void tell_hosts(const struct store_inbound *r)
{
	char a[PB_LOG_QUOTE_MAX], b[PB_LOG_QUOTE_MAX], t[32];

	if (!r->spooled_by && !r->claimed_by)
		return; /* journaled before hosts were recorded */
	printf("  hosts: spooled and journaled by %s",
	       r->spooled_by ? pr(a, sizeof(a), r->spooled_by) : "(unknown)");
	if (!r->claimed_by) {
		printf(", not claimed yet\n");
		return;
	}
	pr(b, sizeof(b), r->claimed_by);
	switch (r->state) {
	case STORE_INBOUND_APPLYING:
		env_time(t, sizeof(t), r->lease_until);
		printf("; being applied by %s (its claim runs to %s, then "
		       "another host takes it over)\n",
		       b, t);
		break;
	case STORE_INBOUND_APPLIED:
		printf("; applied by %s\n", b);
		break;
	case STORE_INBOUND_IGNORED:
	case STORE_INBOUND_DEAD:
		printf("; settled by %s\n", b);
		break;
	default:
		printf("; last tried by %s\n", b);
		break;
	}
}

static void tell_journal(const struct why *w)
{
	const struct store_inbound *r = &w->row;
	char c[32], u[32], s[PB_LOG_QUOTE_MAX];

	if (!w->have_row)
		return;
	env_time(c, sizeof(c), r->created);
	env_time(u, sizeof(u), r->updated);
	printf("  journal: %s, last changed %s, journaled %s, %d attempt%s, "
	       "spool record %s\n",
	       store_inbound_state_name(r->state), u, c, r->attempts,
	       r->attempts == 1 ? "" : "s", pr(s, sizeof(s), r->spool_name));
	if (storeconf_backend(w->cfg) == STORE_BACKEND_POSTGRESQL)
		tell_hosts(r);
}

static void tell_actions(const struct why *w)
{
	const char *project = w->have_row ? w->row.project : NULL;
	int64_t iid = w->have_row ? w->row.iid : 0;
	char url[WHY_URL_MAX], role[64], e[PB_ERRMSG_MAX];
	size_t i;

	if (!w->have_row)
		return;
	forge_url(url, sizeof(url), w, project, iid, 0);
	if (!w->acts.nr) {
		/* a series' mail: the series says what the forge got */
		if (!w->have_sub)
			printf("  forge: nothing was done on the forge\n");
		return;
	}
	printf("  forge: %zu action%s on %s\n", w->acts.nr,
	       w->acts.nr == 1 ? "" : "s", url[0] ? url : "the forge");
	for (i = 0; i < w->acts.nr; i++) {
		const struct store_action *a = &w->acts.items[i];

		action_role(role, sizeof(role), a->index);
		printf("    #%d %s (%s): %s", a->index,
		       pr(e, sizeof(e), a->kind), role,
		       action_state_name(a->state));
		if (a->attempts > 1)
			printf(" after %d attempts", a->attempts);
		if (a->state == STORE_ACTION_INTENT)
			printf(", outcome unknown: the next attempt looks for "
			       "its marker on the forge");
		if (a->note_id)
			printf(", note %lld", (long long)a->note_id);
		if (a->host &&
		    storeconf_backend(w->cfg) == STORE_BACKEND_POSTGRESQL)
			printf(", by %s", pr(e, sizeof(e), a->host));
		if (a->last_error && a->state != STORE_ACTION_DONE)
			printf(": %s", pr(e, sizeof(e), a->last_error));
		printf("\n");
		forge_url(url, sizeof(url), w, project, iid, a->note_id);
		if (a->note_id && url[0])
			printf("      %s\n", url);
	}
}

/* What the journal says became of trailer i, or NULL (applied before
 * verdicts were kept, or not applied yet). */
static const char *verdict_of(const struct why *w, size_t i)
{
	if (i >= w->verdicts.nr || !strcmp(w->verdicts.items[i], "-"))
		return NULL;
	return w->verdicts.items[i];
}

static void tell_trailers(const struct why *w)
{
	const struct store_action *c = comment_action(w);
	const struct mail *m = w->review ? w->review->mail : NULL;
	char t[PB_LOG_QUOTE_MAX], v[PB_ERRMSG_MAX];
	size_t i;

	if (!w->review || !w->review->trailers.nr)
		goto warnings;
	printf("  trailers:\n");
	for (i = 0; i < w->review->trailers.nr; i++) {
		const struct trailer *tr = &w->review->trailers.v[i];
		const struct store_action *a =
			find_action(w, PLAN_IDX_APPROVE(i));
		const struct store_action *n =
			find_action(w, PLAN_IDX_APPROVE_NOTE(i));
		const char *said = verdict_of(w, i);

		printf("    %s: ", pr(t, sizeof(t), tr->raw));
		if (a)
			printf("honoured: an approval (#%d %s)%s\n", a->index,
			       action_state_name(a->state),
			       n ? "; the forge refused it, a note says why" :
				   "");
		else if (said)
			printf("%s\n", pr(v, sizeof(v), said));
		else if (w->have_row && w->row.state == STORE_INBOUND_APPLIED &&
			 c)
			printf("not honoured as an approval; the comment "
			       "(#%d) says why\n",
			       c->index);
		else
			printf("not honoured\n");
	}
	/* the NAK's verdict follows the trailers' (plan.h nak_verdict) */
	if (w->verdicts.nr > w->review->trailers.nr)
		printf("  NAK: %s\n",
		       pr(v, sizeof(v),
			  w->verdicts.items[w->review->trailers.nr]));
	else if (w->review->nak)
		printf("  NAK: the mail NAKs the patch\n");
warnings:
	/* What the parser warned of: why a mail is "ambiguous". */
	if (!m || !m->notes.nr)
		return;
	printf("  the parser warned%s:\n",
	       m->flags & MAIL_F_AMBIGUOUS ?
		       " (critical: its MIME structure is ambiguous, so no "
		       "trailer of it becomes an approval)" :
		       "");
	for (i = 0; i < m->notes.nr; i++)
		printf("    %s\n", pr(v, sizeof(v), m->notes.items[i]));
}

/* What the sender was told (README "Notices to senders"). */
static const char *notice_why_not(const char *decision)
{
	static const struct {
		const char *token, *text;
	} v[] = {
		{ "disabled", "notices are off ([inbound] notify_sender)" },
		{ "opt_out", "the sender asked for no notices" },
		{ "rate_limit", "the sender had [inbound] notice_rate notices "
				"in the hour already" },
		{ "auto_submitted", "the reply is automatic (Auto-Submitted, "
				    "RFC 3834)" },
		{ "bounce", "the reply is a bounce" },
		{ "list", "the reply is a list robot's mail" },
		{ "ours", "the reply is the bridge's own mail" },
		{ "no_address", "the reply has no sender address" },
		{ "unrenderable", "the notice template failed" },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (!strcmp(v[i].token, decision))
			return v[i].text;
	return decision;
}

static void tell_notice(const struct why *w)
{
	const struct store_notice *n = &w->notice;
	char t[PB_ERRMSG_MAX];
	const char *p, *e;

	if (!w->have_row || w->row.state == STORE_INBOUND_APPLYING ||
	    w->row.state == STORE_INBOUND_RECEIVED ||
	    w->row.state == STORE_INBOUND_FAILED)
		return;
	if (!w->have_notice) {
		printf("  notice to the sender: none (nothing to tell)\n");
		return;
	}
	if (n->notice_id)
		printf("  notice to the sender: sent as <%s> to %s\n",
		       pr(t, sizeof(t), n->notice_id),
		       n->recipient ? n->recipient : "?");
	else
		printf("  notice to the sender: not sent: %s\n",
		       notice_why_not(n->decision));
	for (p = n->reasons ? n->reasons : ""; *p; p = *e ? e + 1 : e) {
		char line[PB_ERRMSG_MAX];

		e = p + strcspn(p, "\n");
		printable_copy(line, sizeof(line), p, (size_t)(e - p));
		printf("    - %s\n", line);
	}
}

static void tell_spool(const struct why *w)
{
	char s[PB_LOG_QUOTE_MAX], r[PB_ERRMSG_MAX], t[32];
	int seen = 0;
	size_t i;

	if (w->spool_err[0]) {
		printf("  spool: cannot be read: %s\n",
		       pr(r, sizeof(r), w->spool_err));
		return;
	}
	for (i = 0; i < w->recs.nr; i++) {
		const struct spool_entry *e = &w->recs.items[i];
		int mine = w->have_row && !strcmp(e->name, w->row.spool_name);

		seen |= mine;
		if (e->read_errno) {
			printf("  spool: %s/%s: %s, but it cannot be read: %s\n",
			       spool_area_name(e->area), e->name,
			       mine ? "the journaled record is there" :
				      "a record that may be this mail's is "
				      "there",
			       strerror(e->read_errno));
			continue;
		}
		printf("  spool: %s/%s: %s%s\n", spool_area_name(e->area),
		       e->name, area_story(e->area),
		       w->have_row && !mine ? " (another copy of the mail, "
					      "not applied again)" :
					      "");
		if (e->area != SPOOL_DEAD)
			continue;
		reason_field(r, sizeof(r), w->reasons.items[i], "Reason: ");
		reason_field(s, sizeof(s), w->reasons.items[i], "Dead-Time: ");
		env_time(t, sizeof(t), strtoll(s, NULL, 10));
		printf("    reason (%s.reason, %s): %s\n", e->name, t,
		       r[0] ? r : pr(r, sizeof(r), w->reasons.items[i]));
	}
	if (w->have_row && !seen)
		printf("  spool: record %s is no longer in the spool\n",
		       pr(s, sizeof(s), w->row.spool_name));
	if (w->parse_err[0] && w->recs.nr)
		printf("  the record's mail cannot be read back: %s\n",
		       pr(r, sizeof(r), w->parse_err));
}

static const char *mail_kind_story(enum store_mail_kind k)
{
	switch (k) {
	case STORE_MAIL_COVER:
		return "the cover letter";
	case STORE_MAIL_PATCH:
		return "a patch mail";
	case STORE_MAIL_FORGE_COMMENT:
		return "a forge comment mirrored to the list";
	case STORE_MAIL_RECEIPT:
		return "the bridge's receipt for a list reply";
	}
	return "a mail";
}

/* What the sender of a series was told, by kind (gather_series()). */
static void tell_told(const struct why *w)
{
	static const char *const what[3] = { "refused", "not opened",
					     "a patch missing" };
	char d[PB_LOG_QUOTE_MAX], t[32];
	size_t k;

	for (k = 0; k < 3; k++) {
		const struct store_notice *n = &w->told[k];
		struct buf text = BUF_INIT(STORE_NOTICE_REASONS_MAX + 1);

		if (!w->have_told[k])
			continue;
		buf_add(&text, n->reasons ? n->reasons : "",
			n->reasons ? strlen(n->reasons) : 0);
		buf_rtrim(&text);
		printf("    %s, its sender told at %s (notice: %s): %s\n",
		       what[k], (env_time(t, sizeof(t), n->created), t),
		       pr(d, sizeof(d), n->decision), text.data);
		buf_release(&text);
	}
}

/* A mail of a series posted to the list: its series and what became of
 * it (README "Contributing by email"). */
static void tell_submission(const struct why *w)
{
	const struct store_submission *sub = &w->sub;
	char p[PB_LOG_QUOTE_MAX], i[PB_LOG_QUOTE_MAX], a[PB_LOG_QUOTE_MAX];
	char url[WHY_URL_MAX];

	if (!w->have_sub)
		return;
	printf("  a new series posted to the list: %s %d of v%d, %d "
	       "patch%s, from %s, series <%s>\n",
	       w->subm.patch ? "patch" : "the cover letter", w->subm.patch,
	       sub->version, sub->total, sub->total == 1 ? "" : "es",
	       pr(a, sizeof(a), sub->sender), pr(i, sizeof(i), sub->series_id));
	switch (sub->state) {
	case STORE_SUBMISSION_COLLECTING:
		if (w->have_told[0]) {
			printf("    refused: no merge request is made of "
			       "it\n");
			break;
		}
		printf("    the series is not whole yet: the daemon waits for "
		       "%s\n",
		       w->missing[0] ? pr(a, sizeof(a), w->missing) :
				       "its other mails");
		break;
	case STORE_SUBMISSION_WHOLE:
		printf("    the series is whole; its merge request is not "
		       "open yet (the daemon's log says why)\n");
		break;
	case STORE_SUBMISSION_OPENED:
		forge_url(url, sizeof(url), w, sub->project, sub->iid, 0);
		printf("    opened as %s!%lld: %s\n",
		       pr(p, sizeof(p), sub->project), (long long)sub->iid,
		       url);
		break;
	case STORE_SUBMISSION_FAILED:
		if (w->have_told[1] && w->told[1].reasons &&
		    !strncmp(w->told[1].reasons, EMAILNOTICE_UNATTESTED,
			     strlen(EMAILNOTICE_UNATTESTED)))
			printf("    not opened: a mail is not attested, as "
			       "[project] email_require_attestation wants\n");
		else if (w->have_told[1])
			/* the notice below says why: it does not apply,
			 * or its merge request has a newer version */
			printf("    not opened: see what its sender was "
			       "told\n");
		else
			printf("    not opened: the series does not apply (the "
			       "daemon's log names the patch, git's message "
			       "and the base tried), or is a version not "
			       "newer than the latest its topic's merge "
			       "request took, or a mail is not attested "
			       "([project] email_require_attestation)\n");
		break;
	}
	tell_told(w);
}

static void tell_sent(const struct why *w)
{
	const struct store_mail *m = &w->sent;
	const struct store_outmail *q = &w->queued;
	char p[PB_LOG_QUOTE_MAX], e[PB_ERRMSG_MAX], t[32], url[WHY_URL_MAX];

	tell_submission(w);
	if (!w->have_sent)
		return;
	if (w->have_sub) {
		/* the contributor's mail, kept as the bridge keeps its own */
		printf("  in the thread map: %s of %s!%lld v%d %d/%d\n",
		       store_mail_kind_name(m->kind),
		       pr(p, sizeof(p), m->project), (long long)m->iid,
		       m->revision, m->patch, m->total);
		return;
	}
	printf("  sent by the bridge: %s (%s) of %s!%lld",
	       mail_kind_story(m->kind), store_mail_kind_name(m->kind),
	       pr(p, sizeof(p), m->project), (long long)m->iid);
	if (m->revision > 0)
		printf(" v%d", m->revision);
	if (m->kind == STORE_MAIL_PATCH || m->kind == STORE_MAIL_COVER)
		printf(" %d/%d", m->patch, m->total);
	printf("\n");
	if (m->commit_sha)
		printf("    commit %.12s\n", pr(p, sizeof(p), m->commit_sha));
	if (m->note_id) {
		forge_url(url, sizeof(url), w, m->project, m->iid, m->note_id);
		printf("    mirrors note %lld: %s\n", (long long)m->note_id,
		       url);
	}
	if (m->state == STORE_MAIL_SENT) {
		env_time(t, sizeof(t), m->sent);
		switch (m->sent_how) {
		case STORE_SENT_ARCHIVE:
			printf("    sent: found in the list archive at %s", t);
			if (m->sent_by)
				printf(" by %s", pr(p, sizeof(p), m->sent_by));
			printf(" - the MTA's answer was lost (the host or the "
			       "database went away while it\n"
			       "    was handed over), the archive showed the "
			       "list had it, so it was not sent again\n");
			return;
		case STORE_SENT_LATE:
			printf("    sent: the MTA accepted it; recorded at %s",
			       t);
			if (m->sent_by)
				printf(" by %s", pr(p, sizeof(p), m->sent_by));
			printf(", once the state database was back\n");
			return;
		case STORE_SENT_MTA:
			break;
		}
		printf("    sent: the MTA accepted it at %s", t);
		if (m->sent_by)
			printf(", handed over by %s",
			       pr(p, sizeof(p), m->sent_by));
		printf("\n");
		return;
	}
	if (!w->have_queued) {
		env_time(t, sizeof(t), m->created);
		printf("    pending since %s, not in the outbound queue\n", t);
		return;
	}
	pr(e, sizeof(e), q->last_error);
	switch (q->state) {
	case STORE_OUTMAIL_QUEUED:
		printf("    queued: not tried yet\n");
		break;
	case STORE_OUTMAIL_DEFERRED:
		env_time(t, sizeof(t), q->next_attempt);
		printf("    deferred after %d attempt%s, next at %s: %s\n",
		       q->attempts, q->attempts == 1 ? "" : "s", t, e);
		break;
	case STORE_OUTMAIL_FAILED:
		printf("    failed for good after %d attempt%s: %s\n"
		       "    (`patchbridge send --retry %s!%lld` queues it "
		       "again)\n",
		       q->attempts, q->attempts == 1 ? "" : "s", e,
		       pr(p, sizeof(p), m->project), (long long)m->iid);
		break;
	}
	if (q->handed) {
		env_time(t, sizeof(t), q->handed);
		printf("    handed to the MTA at %s by %s, outcome unknown: "
		       "the list archive is asked before it is sent again\n",
		       t,
		       q->claimed_by ? pr(p, sizeof(p), q->claimed_by) :
				       "a host");
	}
}

static void tell_unknown(const struct why *w)
{
	char e[PB_ERRMSG_MAX];

	if (w->spool_rc) {
		/* Not in the database, but the spool may hold it. */
		printf("  not in the state database%s, and the spool cannot "
		       "be read: %s\n",
		       w->no_store ? " (there is none yet)" : "",
		       pr(e, sizeof(e), w->spool_err));
		return;
	}
	printf("  unknown: the bridge has no record of this Message-ID.\n"
	       "  It is not a mail the bridge sent, the inbound journal has "
	       "no row for it\n"
	       "  and no spool record carries it.  The milter passes mail "
	       "that is not a\n"
	       "  reply to a bridged thread on to the list without spooling "
	       "it, so either\n"
	       "  it was such a mail (`patchbridge parse FILE.eml` shows how "
	       "the bridge\n"
	       "  reads it), or it has not reached this host's Postfix "
	       "yet.\n");
	if (w->no_store)
		printf("  (there is no state database yet: the daemon has not "
		       "run)\n");
	if (w->no_spool)
		printf("  (there is no spool directory yet: nothing was ever "
		       "spooled)\n");
}

static void tell_text(const struct why *w)
{
	const char *v = verdict(w);
	char id[STORE_MSGID_MAX + 1];

	/* Any bytes but control characters: not all of them printable. */
	printf("<%s>\n", pr(id, sizeof(id), w->id));
	if (!strcmp(v, "unknown")) {
		tell_unknown(w);
		return;
	}
	tell_verdict(w, v);
	tell_classification(w);
	tell_sender(w);
	tell_journal(w);
	tell_actions(w);
	tell_trailers(w);
	tell_notice(w);
	tell_spool(w);
	tell_sent(w);
}

/* ---- JSON ------------------------------------------------------------ */

static void json_time(struct jsonw *j, const char *key, int64_t t)
{
	char s[32];

	jsonw_key(j, key);
	if (!t) {
		jsonw_null(j);
		return;
	}
	env_time(s, sizeof(s), t);
	jsonw_strz(j, s);
}

static void json_url(struct jsonw *j, const struct why *w, const char *key,
		     const char *project, int64_t iid, int64_t note)
{
	char url[WHY_URL_MAX];

	forge_url(url, sizeof(url), w, project, iid, note);
	jsonw_key(j, key);
	jsonw_strz(j, url[0] ? url : NULL);
}

static void json_notice(struct jsonw *j, const struct why *w)
{
	jsonw_key(j, "notice");
	if (!w->have_notice) {
		jsonw_null(j);
		return;
	}
	jsonw_obj_begin(j);
	jsonw_key(j, "decision");
	jsonw_strz(j, w->notice.decision);
	jsonw_key(j, "message_id");
	jsonw_strz(j, w->notice.notice_id);
	jsonw_key(j, "recipient");
	jsonw_strz(j, w->notice.recipient);
	jsonw_key(j, "reasons");
	jsonw_strz(j, w->notice.reasons);
	jsonw_obj_end(j);
}

static void json_journal(struct jsonw *j, const struct why *w)
{
	const struct store_inbound *r = &w->row;

	jsonw_key(j, "classification");
	if (!w->have_row) {
		jsonw_null(j);
		jsonw_key(j, "journal");
		jsonw_null(j);
		return;
	}
	jsonw_obj_begin(j);
	jsonw_key(j, "kind");
	jsonw_strz(j, r->classification);
	jsonw_key(j, "project");
	jsonw_strz(j, r->project);
	jsonw_key(j, "mr");
	jsonw_int(j, r->iid);
	jsonw_key(j, "revision");
	jsonw_int(j, r->revision);
	jsonw_key(j, "patch");
	jsonw_int(j, r->patch);
	jsonw_key(j, "total");
	jsonw_int(j, w->total);
	json_url(j, w, "mr_url", r->project, r->iid, 0);
	jsonw_obj_end(j);

	jsonw_key(j, "journal");
	jsonw_obj_begin(j);
	jsonw_key(j, "state");
	jsonw_strz(j, store_inbound_state_name(r->state));
	jsonw_key(j, "reason");
	jsonw_strz(j, r->last_error);
	jsonw_key(j, "explanation");
	jsonw_strz(j, r->state == STORE_INBOUND_APPLIED ?
			      NULL :
			      explain(r->last_error));
	jsonw_key(j, "attempts");
	jsonw_int(j, r->attempts);
	json_time(j, "next_attempt",
		  r->state == STORE_INBOUND_FAILED ? r->next_attempt : 0);
	json_time(j, "created", r->created);
	json_time(j, "updated", r->updated);
	jsonw_key(j, "spool_name");
	jsonw_strz(j, r->spool_name);
	jsonw_key(j, "spooled_by");
	jsonw_strz(j, r->spooled_by);
	jsonw_key(j, "claimed_by");
	jsonw_strz(j, r->claimed_by);
	json_time(j, "lease_until",
		  r->state == STORE_INBOUND_APPLYING ? r->lease_until : 0);
	jsonw_obj_end(j);
}

static void json_actions(struct jsonw *j, const struct why *w)
{
	char role[64];
	size_t i;

	jsonw_key(j, "actions");
	jsonw_arr_begin(j);
	for (i = 0; i < w->acts.nr; i++) {
		const struct store_action *a = &w->acts.items[i];

		action_role(role, sizeof(role), a->index);
		jsonw_obj_begin(j);
		jsonw_key(j, "index");
		jsonw_int(j, a->index);
		jsonw_key(j, "kind");
		jsonw_strz(j, a->kind);
		jsonw_key(j, "role");
		jsonw_strz(j, role);
		jsonw_key(j, "state");
		jsonw_strz(j, action_state_name(a->state));
		jsonw_key(j, "attempts");
		jsonw_int(j, a->attempts);
		jsonw_key(j, "note_id");
		if (a->note_id)
			jsonw_int(j, a->note_id);
		else
			jsonw_null(j);
		jsonw_key(j, "discussion_id");
		jsonw_strz(j, a->discussion_id);
		if (a->note_id) {
			json_url(j, w, "url",
				 w->have_row ? w->row.project : NULL,
				 w->have_row ? w->row.iid : 0, a->note_id);
		} else {
			jsonw_key(j, "url");
			jsonw_null(j);
		}
		jsonw_key(j, "error");
		jsonw_strz(j, a->state == STORE_ACTION_DONE ? NULL :
							      a->last_error);
		jsonw_key(j, "host");
		jsonw_strz(j, a->host);
		jsonw_obj_end(j);
	}
	jsonw_arr_end(j);
}

static void json_mail(struct jsonw *j, const struct why *w)
{
	const struct review *rv = w->review;
	size_t i;

	jsonw_key(j, "from");
	if (!rv) {
		jsonw_null(j);
	} else {
		jsonw_obj_begin(j);
		jsonw_key(j, "name");
		jsonw_strz(j, rv->mail->from.name);
		jsonw_key(j, "email");
		jsonw_strz(j, rv->mail->from.email);
		jsonw_key(j, "verified");
		jsonw_bool(j, rv->auth.verified);
		jsonw_obj_end(j);
	}
	jsonw_key(j, "nak");
	jsonw_bool(j, rv && rv->nak);
	jsonw_key(j, "trailers");
	jsonw_arr_begin(j);
	for (i = 0; rv && i < rv->trailers.nr; i++) {
		const struct trailer *t = &rv->trailers.v[i];
		const struct store_action *a =
			find_action(w, PLAN_IDX_APPROVE(i));

		jsonw_obj_begin(j);
		jsonw_key(j, "type");
		jsonw_strz(j, t->type);
		jsonw_key(j, "name");
		jsonw_strz(j, t->name);
		jsonw_key(j, "email");
		jsonw_strz(j, t->email);
		jsonw_key(j, "honoured");
		jsonw_bool(j, a != NULL);
		jsonw_key(j, "approval");
		jsonw_strz(j, a ? action_state_name(a->state) : NULL);
		jsonw_key(j, "verdict");
		jsonw_strz(j, verdict_of(w, i));
		jsonw_obj_end(j);
	}
	jsonw_arr_end(j);
	jsonw_key(j, "warnings");
	jsonw_arr_begin(j);
	for (i = 0; rv && i < rv->mail->notes.nr; i++)
		jsonw_strz(j, rv->mail->notes.items[i]);
	jsonw_arr_end(j);
}

static void json_spool(struct jsonw *j, const struct why *w)
{
	char r[PB_ERRMSG_MAX], s[32];
	size_t i;

	jsonw_key(j, "spool_error");
	jsonw_strz(j, w->spool_err[0] ? w->spool_err : NULL);
	jsonw_key(j, "spool");
	jsonw_arr_begin(j);
	for (i = 0; i < w->recs.nr; i++) {
		const struct spool_entry *e = &w->recs.items[i];

		jsonw_obj_begin(j);
		jsonw_key(j, "area");
		jsonw_strz(j, spool_area_name(e->area));
		jsonw_key(j, "name");
		jsonw_strz(j, e->name);
		jsonw_key(j, "journaled");
		jsonw_bool(j,
			   w->have_row && !strcmp(e->name, w->row.spool_name));
		/* Set when the record cannot be read: then it may or may
		 * not be this mail's. */
		jsonw_key(j, "error");
		jsonw_strz(j, e->read_errno ? strerror(e->read_errno) : NULL);
		jsonw_key(j, "reason");
		if (e->area == SPOOL_DEAD && !e->read_errno) {
			reason_field(r, sizeof(r), w->reasons.items[i],
				     "Reason: ");
			jsonw_strz(j, r);
			reason_field(s, sizeof(s), w->reasons.items[i],
				     "Dead-Time: ");
			json_time(j, "dead_time", strtoll(s, NULL, 10));
		} else {
			jsonw_null(j);
		}
		jsonw_obj_end(j);
	}
	jsonw_arr_end(j);
}

static void json_sent(struct jsonw *j, const struct why *w)
{
	const struct store_mail *m = &w->sent;
	const struct store_outmail *q = &w->queued;

	jsonw_key(j, "sent");
	if (!w->have_sent) {
		jsonw_null(j);
		return;
	}
	jsonw_obj_begin(j);
	jsonw_key(j, "kind");
	jsonw_strz(j, store_mail_kind_name(m->kind));
	jsonw_key(j, "project");
	jsonw_strz(j, m->project);
	jsonw_key(j, "mr");
	jsonw_int(j, m->iid);
	jsonw_key(j, "revision");
	jsonw_int(j, m->revision);
	jsonw_key(j, "patch");
	jsonw_int(j, m->patch);
	jsonw_key(j, "total");
	jsonw_int(j, m->total);
	jsonw_key(j, "state");
	jsonw_strz(j, m->state == STORE_MAIL_SENT ? "sent" :
		      w->have_queued ? store_outmail_state_name(q->state) :
				       "pending");
	json_time(j, "sent", m->state == STORE_MAIL_SENT ? m->sent : 0);
	jsonw_key(j, "sent_by");
	jsonw_strz(j, m->sent_by);
	jsonw_key(j, "sent_how");
	jsonw_strz(j, m->state == STORE_MAIL_SENT ?
			      store_sent_how_name(m->sent_how) :
			      NULL);
	jsonw_key(j, "attempts");
	jsonw_int(j, w->have_queued ? q->attempts : 0);
	json_time(j, "next_attempt",
		  w->have_queued && q->state == STORE_OUTMAIL_DEFERRED ?
			  q->next_attempt :
			  0);
	json_time(j, "handed", w->have_queued ? q->handed : 0);
	jsonw_key(j, "error");
	jsonw_strz(j, w->have_queued ? q->last_error : NULL);
	jsonw_key(j, "note_id");
	if (m->note_id)
		jsonw_int(j, m->note_id);
	else
		jsonw_null(j);
	json_url(j, w, "url", m->project, m->iid, m->note_id);
	jsonw_obj_end(j);
}

/* A mail of a series posted to the list: as tell_submission() says. */
static void json_series(struct jsonw *j, const struct why *w)
{
	static const char *const kinds[3] = { "refused", "not_applied",
					      "missing" };
	const struct store_submission *sub = &w->sub;
	size_t k;

	jsonw_key(j, "series");
	if (!w->have_sub) {
		jsonw_null(j);
		return;
	}
	jsonw_obj_begin(j);
	jsonw_key(j, "series_id");
	jsonw_strz(j, sub->series_id);
	jsonw_key(j, "sender");
	jsonw_strz(j, sub->sender);
	jsonw_key(j, "version");
	jsonw_int(j, sub->version);
	jsonw_key(j, "total");
	jsonw_int(j, sub->total);
	jsonw_key(j, "patch");
	jsonw_int(j, w->subm.patch);
	jsonw_key(j, "state");
	jsonw_strz(j, store_submission_state_name(sub->state));
	jsonw_key(j, "mr");
	if (sub->iid)
		jsonw_int(j, sub->iid);
	else
		jsonw_null(j);
	jsonw_key(j, "missing");
	jsonw_strz(j, w->missing[0] ? w->missing : NULL);
	jsonw_key(j, "told");
	jsonw_obj_begin(j);
	for (k = 0; k < 3; k++) {
		jsonw_key(j, kinds[k]);
		if (!w->have_told[k]) {
			jsonw_null(j);
			continue;
		}
		jsonw_obj_begin(j);
		jsonw_key(j, "decision");
		jsonw_strz(j, w->told[k].decision);
		jsonw_key(j, "message_id");
		jsonw_strz(j, w->told[k].notice_id);
		jsonw_key(j, "reasons");
		jsonw_strz(j, w->told[k].reasons);
		json_time(j, "at", w->told[k].created);
		jsonw_obj_end(j);
	}
	jsonw_obj_end(j);
	jsonw_obj_end(j);
}

static int tell_json(const struct why *w)
{
	struct buf out = BUF_INIT(4 * 1024 * 1024);
	struct jsonw j;
	int rc;

	jsonw_init(&j, &out, 2);
	jsonw_obj_begin(&j);
	jsonw_key(&j, "message_id");
	jsonw_strz(&j, w->id);
	jsonw_key(&j, "verdict");
	jsonw_strz(&j, verdict(w));
	json_journal(&j, w);
	json_notice(&j, w);
	json_actions(&j, w);
	json_mail(&j, w);
	json_spool(&j, w);
	json_sent(&j, w);
	json_series(&j, w);
	jsonw_key(&j, "state_database");
	jsonw_bool(&j, !w->no_store);
	jsonw_obj_end(&j);
	rc = jsonw_finish(&j);
	if (!rc)
		fwrite(out.data, 1, out.len, stdout);
	buf_release(&out);
	return rc;
}

int cmd_why(const char *config_path, int argc, char **argv)
{
	struct config *cfg = NULL;
	const char *arg = NULL;
	struct why w;
	int i, json = 0, mail_up, rc, ex;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--") && i + 1 < argc && !arg) {
			arg = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr,
				"patchbridge why: unknown option: %s\n"
				"usage: patchbridge why %s\n",
				argv[i], cmd_why_synopsis);
			return EX_USAGE;
		} else if (!arg) {
			arg = argv[i];
		} else {
			fprintf(stderr,
				"patchbridge why: one Message-ID at a time\n");
			return EX_USAGE;
		}
	}
	if (!arg) {
		fprintf(stderr,
			"patchbridge why: no Message-ID given\n"
			"usage: patchbridge why %s\n",
			cmd_why_synopsis);
		return EX_USAGE;
	}
	ex = env_load_config(&cfg, config_path, 0);
	if (ex)
		return ex;
	why_init(&w, cfg);
	if (normalise_id(w.id, sizeof(w.id), arg)) {
		char shown[PB_LOG_QUOTE_MAX];

		fprintf(stderr, "patchbridge why: %s: %s\n",
			pr(shown, sizeof(shown), arg), err_msg());
		ex = EX_DATAERR;
		goto out;
	}
	rc = gather_store(&w);
	if (rc) {
		fprintf(stderr, "patchbridge why: %s\n", err_msg());
		env_perm_hint(rc, "patchbridge why",
			      config_str(cfg, CFG_STATE_PATH));
		ex = env_exit_code(rc);
		goto out;
	}
	gather_spool(&w);
	if (json) {
		rc = tell_json(&w);
		if (rc) {
			fprintf(stderr, "patchbridge why: %s\n", err_msg());
			ex = EX_SOFTWARE;
			goto out;
		}
	} else {
		tell_text(&w);
	}
	if (!strcmp(verdict(&w), "unreadable"))
		ex = env_exit_code(err_from_errno(unreadable(&w)->read_errno));
	else if (strcmp(verdict(&w), "unknown"))
		ex = EX_OK;
	else if (w.spool_rc)
		ex = env_exit_code(w.spool_rc); /* cannot tell */
	else
		ex = EX_NOINPUT;
out:
	mail_up = w.mail_up;
	why_release(&w);
	if (mail_up)
		mail_shutdown();
	config_free(cfg);
	return ex;
}
