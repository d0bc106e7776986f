#include "outbound/forgemail.h"

#include "core/config.h"
#include "core/owners.h"
#include "core/msgid.h"
#include "core/version.h"
#include "forge/forge.h"
#include "mail/diff.h"
#include "outbound/cimail.h"
#include "outbound/fmlist.h"
#include "outbound/forgetext.h"
#include "outbound/mailhdr.h"
#include "outbound/openthreads.h"
#include "outbound/outbound.h"
#include "outbound/qp.h"
#include "outbound/reviewsin.h"
#include "state/store.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FORGEMAIL_TEXT_MAX (4 * 1024 * 1024) /* one mail, body and all */
/*
 * An MR whose mail failed for a reason that may pass (PB_ETEMP: the forge,
 * the store, the git mirror's fetch) waits in the project's pending
 * cursor, retried apart from the listing after FORGEMAIL_RETRY_BASE_MS,
 * doubling up to FORGEMAIL_RETRY_MAX_MS, so the MRs after it go on.  At
 * most FORGEMAIL_PENDING_MAX wait; one more stops the listing as before
 * (fmlist.h).
 * After FORGEMAIL_DEFER_MAX_MS of failures the applied mail stops
 * waiting for the mirror and names the tip only.
 */
#define FORGEMAIL_DEFER_MAX_MS (60 * 60 * 1000)

/* An owners file read this round (fm_owners()). */
struct fm_owners {
	char *path;
	struct owners *o; /* NULL: it did not load */
};

struct forgemail {
	const struct config *cfg;
	struct store *store;
	struct forge *forge;
	struct outbound *ob; /* the git mirror's owner; NULL: none */
	/* The token's user name as the forge gave it, when [forge]
	 * bot_username is empty; NULL: not known (yet). */
	char *bot;
	/* When the forge was last asked for it, 0: never. */
	time_t bot_asked;
	/* The forge's no-reply host (forge_commit_email_host()); NULL: not
	 * known, GitLab's default stands in.  Asked again after
	 * FORGEMAIL_NOREPLY_ASK_SECONDS, as an administrator may change it. */
	char *noreply;
	time_t noreply_asked;
	/* The owners files read this round, by path (fm_owners()). */
	struct fm_owners *owners;
	size_t nr_owners, alloc_owners;
};

/* One MR being looked at. */
struct mrctx {
	struct forgemail *fm;
	const struct config_project *proj;
	const char *project;
	int64_t iid;
	struct forge_mr mr;
	struct store_revision latest;
	/* The diff version of version_rev, for patch titles. */
	int version_rev;
	struct forge_version version;
	size_t queued;
	/* When this MR's mail began to fail for a reason that may pass
	 * (its pending entry), 0: it has not. */
	int64_t failing_since_ms;
	/* The MR's discussions as read, for an approval withdrawn. */
	const struct forge_discussion_list *dl;
};

/* A note with the discussion it belongs to. */
struct fnote {
	const struct forge_note *n;
	const char *discussion_id;
	/* Internal, or in an internal thread (or its visibility unknown). */
	int internal;
	/* Below the notes cursor, seen for the first time (struct idwin). */
	int late;
};

/* What one mail is made of. */
struct outmsg {
	const char *event; /* msgid_format_forge() event */
	uint64_t event_id;
	const char *who; /* display name, before " via " */
	int64_t date;
	const struct store_mail *parent;
	const char *root; /* the cover letter's id, or NULL */
	struct buf body;
	int64_t note_id;
	const char *discussion_id;
	const char *cursor_value; /* the notes cursor moves with the mail */
};

int forgemail_new(struct forgemail **out, const struct config *cfg,
		  struct store *store, struct forge *forge)
{
	struct forgemail *fm = xcalloc(1, sizeof(*fm));

	fm->cfg = cfg;
	fm->store = store;
	fm->forge = forge;
	*out = fm;
	return 0;
}

void forgemail_set_outbound(struct forgemail *fm, struct outbound *ob)
{
	fm->ob = ob;
}

void forgemail_free(struct forgemail *fm)
{
	size_t i;

	if (!fm)
		return;
	for (i = 0; i < fm->nr_owners; i++) {
		free(fm->owners[i].path);
		owners_free(fm->owners[i].o);
	}
	free(fm->owners);
	free(fm->bot);
	free(fm->noreply);
	free(fm);
}

/*
 * The owners file at path, read once a round (a forgemail object lives
 * for one), not once per MR: NULL, with the error set, when it does not
 * load.
 */
static const struct owners *fm_owners(struct forgemail *fm, const char *path)
{
	struct owners *o = NULL;
	size_t i;

	for (i = 0; i < fm->nr_owners; i++)
		if (!strcmp(fm->owners[i].path, path)) {
			if (!fm->owners[i].o)
				err_set(PB_ERROR, "%s did not load", path);
			return fm->owners[i].o;
		}
	if (owners_load(&o, path))
		o = NULL;
	ALLOC_GROW(fm->owners, fm->nr_owners + 1, fm->alloc_owners);
	fm->owners[fm->nr_owners].path = xstrdup(path);
	fm->owners[fm->nr_owners].o = o;
	fm->nr_owners++;
	return o;
}

/* How long a forge that could not say who the token is waits to be
 * asked again. */
#define FORGEMAIL_BOT_ASK_SECONDS 60

/*
 * The bridge's own forge user: [forge] bot_username, or else the token's
 * user as GET /user gives it (forge_whoami()).  The inbound side posts
 * its notes as that user, so a note of anybody else is never the
 * bridge's, whatever marker text it holds (forgetext_skip()).  NULL
 * while the forge cannot say: the marker alone decides then.
 */
static const char *bot_user(struct forgemail *fm)
{
	const char *bot = config_str(fm->cfg, CFG_FORGE_BOT_USERNAME);
	struct forge_whoami w;
	time_t now;

	if (bot && *bot)
		return bot;
	now = time(NULL);
	if (fm->bot ||
	    (fm->bot_asked && now - fm->bot_asked < FORGEMAIL_BOT_ASK_SECONDS))
		return fm->bot;
	fm->bot_asked = now;
	if (forge_whoami(&w, fm->forge) == 0 && w.user.username &&
	    *w.user.username) {
		fm->bot = xstrdup(w.user.username);
		log_info("forge: the bridge's user is %s", fm->bot);
	} else {
		log_warn("forge: cannot tell the bridge's user (%s); notes "
			 "are told by their marker alone",
			 err_msg());
	}
	forge_whoami_release(&w);
	return fm->bot;
}

static void notes_cursor_name(char *out, size_t size, const char *project,
			      int64_t iid)
{
	snprintf(out, size, "forgemail:notes:%s!%lld", project, (long long)iid);
}

static void seen_cursor_name(char *out, size_t size, const char *project,
			     int64_t iid)
{
	snprintf(out, size, "forgemail:seen:%s!%lld", project, (long long)iid);
}

/* --- subjects ------------------------------------------------------------ */

static const char *patch_title(struct mrctx *c, const struct store_mail *row)
{
	size_t i;
	struct store_revision rev;

	if (!row->commit_sha)
		return NULL;
	if (c->version_rev != row->revision) {
		forge_version_release(&c->version);
		c->version_rev = row->revision;
		store_revision_init(&rev);
		if (!store_revision_get(&rev, c->fm->store, c->project, c->iid,
					row->revision) &&
		    rev.version_id > 0 &&
		    forge_get_version(&c->version, c->fm->forge, c->project,
				      c->iid, rev.version_id))
			log_warn("version of v%d: %s", row->revision,
				 err_msg());
		store_revision_release(&rev);
	}
	for (i = 0; i < c->version.nr_commits; i++)
		if (c->version.commits[i].id &&
		    !strcmp(c->version.commits[i].id, row->commit_sha))
			return c->version.commits[i].title;
	return NULL;
}

/* "Re: [PATCH v2 1/3]" + the title of the mail replied to. */
static int add_subject(struct buf *hdr, struct mrctx *c,
		       const struct store_mail *parent)
{
	struct buf pfx = BUF_INIT(256);
	const char *tag =
		config_project_str(c->proj, CFG_OUTBOUND_SUBJECT_PREFIX);
	const char *title = NULL;
	struct store_mail row;
	int width = 1, t, rc;

	store_mail_init(&row);
	for (t = parent->total; t >= 10; t /= 10)
		width++;
	buf_addf(&pfx, "Re: [%s", tag);
	if (parent->revision > 1)
		buf_addf(&pfx, "%sv%d", *tag ? " " : "", parent->revision);
	if (parent->total > 1 || parent->patch == 0)
		buf_addf(&pfx, " %0*d/%d", width, parent->patch, parent->total);
	buf_addch(&pfx, ']');
	if (parent->patch > 0 &&
	    !store_mail_find(&row, c->fm->store, c->project, c->iid,
			     parent->revision, parent->patch))
		title = patch_title(c, &row);
	if (!title)
		title = c->mr.title ? c->mr.title : "";
	rc = buf_error(&pfx);
	if (!rc)
		rc = mailhdr_add_text(hdr, "Subject", pfx.data, title);
	store_mail_release(&row);
	buf_release(&pfx);
	return rc;
}

/* --- writing a mail ---------------------------------------------------- */

static int render(struct buf *text, struct mrctx *c, const struct outmsg *m,
		  const char *msgid)
{
	const struct config *cfg = c->fm->cfg;
	struct buf hdr = BUF_INIT(PB_HEADER_VALUE_MAX);
	struct buf mb = BUF_INIT(PB_HEADER_VALUE_MAX);
	struct buf via = BUF_INIT(PB_HEADER_VALUE_MAX);
	const char *list = config_project_str(c->proj, CFG_BRIDGE_LIST_ADDRESS);
	int rc;

	rc = buf_addf(&via, "%s via %s", m->who,
		      config_str(cfg, CFG_BRIDGE_NAME));
	if (!rc)
		rc = mailhdr_format_addr(&mb, via.data,
					 config_str(cfg, CFG_BRIDGE_ADDRESS));
	if (!rc)
		rc = mailhdr_add_raw(&hdr, "From", mb.data);
	if (!rc)
		rc = mailhdr_add_raw(&hdr, "To", list);
	if (!rc)
		rc = add_subject(&hdr, c, m->parent);
	if (!rc)
		rc = buf_adds(&hdr, "Date: ");
	if (!rc)
		rc = mailhdr_date(&hdr, m->date, 0);
	if (!rc)
		rc = buf_addf(&hdr, "\nMessage-ID: <%s>\nIn-Reply-To: <%s>\n",
			      msgid, m->parent->message_id);
	if (!rc) {
		buf_reset(&mb);
		if (m->root && strcmp(m->root, m->parent->message_id))
			buf_addf(&mb, "<%s> ", m->root);
		rc = buf_addf(&mb, "<%s>", m->parent->message_id);
		if (!rc)
			rc = mailhdr_add_raw(&hdr, "References", mb.data);
	}
	if (!rc)
		rc = buf_addf(&hdr, "X-Mailer: patchbridge %s\n", pb_version());
	if (!rc)
		rc = mailhdr_add_text(&hdr, "X-Patchbridge-Project", NULL,
				      c->project);
	if (!rc)
		rc = buf_addf(&hdr,
			      "X-Patchbridge-MR: %lld\n"
			      "X-Patchbridge-Revision: %d\n"
			      "X-Patchbridge-Origin: forge\n",
			      (long long)c->iid, m->parent->revision);
	if (!rc && m->note_id)
		rc = buf_addf(&hdr, "X-Patchbridge-Note: %lld\n",
			      (long long)m->note_id);
	if (rc)
		goto out;
	rc = buf_addbuf(text, &hdr);
	if (!rc)
		rc = qp_text_body(text, m->body.data, m->body.len);
out:
	buf_release(&hdr);
	buf_release(&mb);
	buf_release(&via);
	return rc;
}

struct queue_tx {
	struct mrctx *c;
	const struct outmsg *m;
	const struct store_mail *sm;
	const struct store_outmail *om;
	int queued; /* set afresh on each run */
};

static int queue_tx(struct store *st, void *arg)
{
	struct queue_tx *q = arg;
	char cname[STORE_CURSOR_NAME_MAX];
	int rc;

	q->queued = 0;
	rc = store_mail_put(st, q->sm);
	if (!rc) {
		rc = store_outmail_put(st, q->om);
		if (!rc)
			q->queued = 1;
	} else if (rc == PB_EEXISTS) {
		log_debug("<%s> mailed before", q->sm->message_id);
		rc = 0;
	}
	if (!rc && q->m->cursor_value) {
		notes_cursor_name(cname, sizeof(cname), q->c->project,
				  q->c->iid);
		rc = store_cursor_set(st, cname, q->m->cursor_value);
	}
	return rc;
}

/*
 * Record and queue one mail, moving the notes cursor with it, in one
 * transaction.  A mail whose id is in the thread map already is not
 * queued again.  Hosts that mirror the same comment at the same moment
 * race for its id: on PostgreSQL the loser meets a serialization
 * failure, runs the transaction again and finds the mail there - a
 * normal race, not a warning (store_transaction()).
 */
static int queue(struct mrctx *c, const struct outmsg *m)
{
	struct forgemail *fm = c->fm;
	struct buf id = BUF_INIT(PB_MSGID_MAX);
	struct buf text = BUF_INIT(FORGEMAIL_TEXT_MAX);
	struct buf rcpt = BUF_INIT(1024);
	struct store_mail sm = STORE_MAIL_INIT;
	struct store_outmail om;
	struct queue_tx q;
	int rc;

	rc = msgid_format_forge(&id, m->event, c->project, (uint64_t)c->iid,
				m->event_id,
				config_str(fm->cfg, CFG_BRIDGE_DOMAIN));
	if (!rc)
		rc = render(&text, c, m, id.data);
	if (rc)
		goto out;
	sm.message_id = id.data;
	sm.project = c->project;
	sm.iid = c->iid;
	sm.revision = m->parent->revision;
	sm.patch = m->parent->patch;
	sm.total = m->parent->total;
	sm.kind = STORE_MAIL_FORGE_COMMENT;
	sm.note_id = m->note_id;
	sm.discussion_id = m->discussion_id;
	sm.state = STORE_MAIL_PENDING;
	rc = buf_addf(&rcpt, "%s\n",
		      config_project_str(c->proj, CFG_BRIDGE_LIST_ADDRESS));
	if (rc)
		goto out;
	store_outmail_init(&om);
	om.message_id = id.data;
	om.envelope_from = config_str(fm->cfg, CFG_BRIDGE_ADDRESS);
	om.recipients = rcpt.data;
	om.message = text.data;
	om.message_len = text.len;
	q.c = c;
	q.m = m;
	q.sm = &sm;
	q.om = &om;
	rc = store_transaction(fm->store, queue_tx, &q);
	if (!rc && q.queued) {
		c->queued++;
		log_info("queued <%s> in reply to <%s>", id.data,
			 m->parent->message_id);
	}
out:
	buf_release(&id);
	buf_release(&text);
	buf_release(&rcpt);
	return rc;
}

/* --- threading lookups --------------------------------------------------- */

/* The cover letter of revision rev, else its first patch. */
static int find_cover(struct store_mail *out, struct mrctx *c, int rev)
{
	int rc = store_mail_find(out, c->fm->store, c->project, c->iid, rev, 0);

	if (rc == PB_ENOTFOUND)
		rc = store_mail_find(out, c->fm->store, c->project, c->iid, rev,
				     1);
	return rc;
}

/*
 * The patch mail of revision rev whose diff as mailed holds the line
 * (new side: the last patch touching the file has the head's numbers;
 * old side: the first has the base's), quoted into quote, and that diff
 * in *dp (the caller frees it).  Without such a line, the last patch
 * touching the path, unquoted, and no diff.
 */
static int find_patch(struct store_mail *out, struct buf *quote,
		      struct diff **dp, struct mrctx *c, int rev, int total,
		      const struct forge_position *p)
{
	const char *path = p->new_path ? p->new_path : p->old_path;
	int k, step = p->new_line > 0 ? -1 : 1, fallback = 0, rc;
	struct store_mail row;

	store_mail_init(&row);
	for (k = step < 0 ? total : 1; k >= 1 && k <= total; k += step) {
		struct diff *d = NULL;
		int found = 0;

		rc = store_mail_find(&row, c->fm->store, c->project, c->iid,
				     rev, k);
		if (rc == PB_ENOTFOUND)
			continue;
		if (rc)
			goto out;
		if (!row.diff || diff_parse(&d, row.diff, row.diff_len))
			continue;
		if (p->old_path && p->new_path &&
		    strcmp(p->old_path, p->new_path) && p->new_line <= 0)
			path = p->old_path;
		if (forgetext_has_path(d, path)) {
			if (!fallback || step > 0)
				fallback = fallback ? fallback : k;
			if (!forgetext_quote_hunk(quote, d, path, p->old_line,
						  p->new_line))
				found = 1;
		}
		if (found) {
			*dp = d;
			rc = store_mail_find(out, c->fm->store, c->project,
					     c->iid, rev, k);
			goto out;
		}
		diff_free(d);
	}
	rc = fallback ? store_mail_find(out, c->fm->store, c->project, c->iid,
					rev, fallback) :
			PB_ENOTFOUND;
out:
	store_mail_release(&row);
	return rc;
}

/*
 * A note on one commit of the MR: its position is that commit's own diff
 * (base and start its parent, head the commit), as GitLab makes it on
 * the MR's Commits tab and keeps it when a later commit changed the line
 * (DiffPositionableNote#update_position, app/models/concerns/
 * diff_positionable_note.rb, moves it to the MR's diff otherwise).  Its
 * lines are numbered in that commit's patch, not in the series' diff:
 * out is the patch mail of that commit (the newest revision that mailed
 * it) and quote its hunk.  PB_ENOTFOUND when the position is a
 * version's diff, or names no mailed commit.
 */
static int commit_patch(struct store_mail *out, struct buf *quote,
			struct mrctx *c, const struct forge_position *p)
{
	const char *path = p->new_path ? p->new_path : p->old_path;
	struct store_revision rev;
	struct store_mail row;
	struct diff *d = NULL;
	int r, k, rc = PB_ENOTFOUND;

	if (!p->head_sha || !p->base_sha || !path)
		return PB_ENOTFOUND;
	store_revision_init(&rev);
	store_mail_init(&row);
	/* The diff of a whole version: its head on its base (a retarget
	 * gives one head several bases). */
	if (!store_revision_by_base(&rev, c->fm->store, c->project, c->iid,
				    p->head_sha, p->base_sha))
		goto out;
	for (r = c->latest.revision; rc == PB_ENOTFOUND && r >= 1; r--) {
		store_revision_release(&rev);
		if (store_revision_get(&rev, c->fm->store, c->project, c->iid,
				       r))
			continue;
		for (k = 1; k <= rev.patches; k++) {
			store_mail_release(&row);
			if (!store_mail_find(&row, c->fm->store, c->project,
					     c->iid, r, k) &&
			    row.commit_sha &&
			    !strcmp(row.commit_sha, p->head_sha)) {
				rc = store_mail_find(out, c->fm->store,
						     c->project, c->iid, r, k);
				break;
			}
		}
	}
	if (!rc && row.diff && !diff_parse(&d, row.diff, row.diff_len)) {
		if (p->old_path && p->new_path &&
		    strcmp(p->old_path, p->new_path) && p->new_line <= 0)
			path = p->old_path;
		/* not in the patch as mailed: the patch, unquoted */
		if (forgetext_quote_hunk(quote, d, path, p->old_line,
					 p->new_line))
			buf_reset(quote);
		diff_free(d);
	}
out:
	store_mail_release(&row);
	store_revision_release(&rev);
	return rc;
}

/* --- notes ----------------------------------------------------------------- */

static const char *name_of(const struct forge_user *u)
{
	if (u->name && *u->name)
		return u->name;
	return u->username ? u->username : "someone";
}

static int64_t note_date(const struct forge_note *n)
{
	int64_t ms;

	if (n->created_at && !forge_time_parse(&ms, n->created_at))
		return ms / 1000;
	return (int64_t)time(NULL);
}

/* How long the forge's no-reply host is kept before it is asked again. */
#define FORGEMAIL_NOREPLY_ASK_SECONDS 3600

/*
 * The host of the no-reply address of a user who keeps the email private,
 * "ID-USERNAME@HOST" as GitLab makes it (lib/gitlab/private_commit_email.rb):
 * the forge's commit_email_hostname when the token may read it (an
 * administrator's), else GitLab's default for it, "users.noreply." and
 * the host of [forge] url (app/models/application_setting_implementation.rb
 * default_commit_email_hostname).  PB_ETEMP when the forge could not say
 * for now: the mail waits rather than carry a wrong address.
 */
static int noreply_host(char *out, size_t size, struct forgemail *fm)
{
	const char *url = config_str(fm->cfg, CFG_FORGE_URL);
	const char *p = strstr(url, "://"), *e;
	time_t now = time(NULL);
	char *host = NULL;
	int rc;

	if (!fm->noreply_asked ||
	    now - fm->noreply_asked >= FORGEMAIL_NOREPLY_ASK_SECONDS) {
		fm->noreply_asked = now;
		rc = forge_commit_email_host(&host, fm->forge);
		if (!rc) {
			free(fm->noreply);
			fm->noreply = host;
		} else if (rc == PB_ETEMP) {
			fm->noreply_asked = 0; /* ask with the next mail */
			return rc;
		} else {
			log_info("forge: no-reply host not read (%s); GitLab's "
				 "default stands in",
				 err_msg());
		}
	}
	if (fm->noreply) {
		snprintf(out, size, "%s", fm->noreply);
		return 0;
	}
	p = p ? p + 3 : url;
	for (e = p; *e && *e != '/' && *e != ':'; e++)
		;
	snprintf(out, size, "users.noreply.%.*s", (int)(e - p), p);
	return 0;
}

/* Whether the bridge made this approval for a trailer from the list. */
static int approval_from_list(struct mrctx *c, const struct forge_note *n)
{
	struct buf v = BUF_INIT(256);
	char *name;
	int found;

	if (!n->author.username)
		return 0;
	name = xasprintf(STORE_CURSOR_LIST_APPROVAL, c->project,
			 (long long)c->iid, n->author.username);
	/* "": the list's approval was withdrawn since (withdrawn()) */
	found = !store_cursor_get(&v, c->fm->store, name) && v.len;
	free(name);
	buf_release(&v);
	return found;
}

static int approval_body(struct buf *body, struct mrctx *c,
			 const struct forge_note *n, const char *trailer)
{
	struct forge_user u;
	char host[256];
	const char *name = name_of(&n->author);
	int rc;

	memset(&u, 0, sizeof(u));
	if (n->author.id > 0 && forge_get_user(&u, c->fm->forge, n->author.id))
		log_warn("approval by %s: %s", name, err_msg());
	rc = buf_addf(body,
		      "%s approved this merge request on the forge.\n"
		      "Given there by the user signed in to it, not by email: "
		      "no mail signature\n(DKIM or patch attestation) stands "
		      "behind it.\n\n",
		      name);
	if (rc)
		goto out;
	if (u.public_email && *u.public_email) {
		rc = buf_addf(body, "%s: %s <%s>\n", trailer, name,
			      u.public_email);
	} else {
		rc = noreply_host(host, sizeof(host), c->fm);
		if (!rc)
			rc = buf_addf(body, "%s: %s <%lld-%s@%s>\n", trailer,
				      name, (long long)n->author.id,
				      n->author.username ? n->author.username :
							   "user",
				      host);
	}
out:
	forge_user_release(&u);
	return rc;
}

/*
 * The applied mail's word on each approval the merged MR has, and where
 * it came from: a trailer mailed to the list that the bridge approved
 * for (the provenance apply.c kept beside the list-approval cursor:
 * the trailer and how its sender was verified), or the forge, where the
 * user signed in approved.  Nothing when the forge lists none or cannot
 * be asked (logged).
 */
static int approvals_block(struct buf *b, struct mrctx *c)
{
	struct forge_approvals a;
	struct buf via = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	size_t i;
	int rc;

	rc = forge_get_approvals(&a, c->fm->forge, c->project, c->iid);
	if (rc) {
		log_notice("merged: the applied mail names no approvals: %s",
			   err_msg());
		return 0;
	}
	if (a.nr_approved_by)
		rc = buf_adds(b, "\nApprovals:\n");
	for (i = 0; !rc && i < a.nr_approved_by; i++) {
		const struct forge_user *u = &a.approved_by[i];
		char *name = NULL;

		buf_reset(&via);
		if (u->username)
			name = xasprintf(STORE_CURSOR_LIST_APPROVAL_VIA,
					 c->project, (long long)c->iid,
					 u->username);
		rc = buf_adds(b, "- ");
		if (!rc)
			rc = mailhdr_sanitize(b, name_of(u),
					      strlen(name_of(u)));
		if (!rc && name &&
		    !store_cursor_get(&via, c->fm->store, name) && via.len) {
			rc = buf_adds(b, ": by email, ");
			if (!rc)
				rc = mailhdr_sanitize(b, via.data, via.len);
		} else if (!rc) {
			rc = buf_adds(b, ": on the forge");
		}
		if (!rc)
			rc = buf_addch(b, '\n');
		free(name);
	}
	forge_approvals_release(&a);
	buf_release(&via);
	return rc;
}

/* The newest approval of n's author before n, among the MR's notes. */
static const struct forge_note *approval_before(const struct mrctx *c,
						const struct forge_note *n)
{
	const struct forge_note *best = NULL;
	size_t i, j;

	for (i = 0; c->dl && i < c->dl->nr; i++)
		for (j = 0; j < c->dl->items[i].nr_notes; j++) {
			const struct forge_note *a = &c->dl->items[i].notes[j];

			if (a->system && a->id < n->id &&
			    a->author.id == n->author.id &&
			    forgetext_is_approval(a->body) &&
			    (!best || a->id > best->id))
				best = a;
		}
	return best;
}

/*
 * An approval withdrawn on the forge (the system note "unapproved this
 * merge request", SystemNotes::MergeRequestsService#unapprove_mr, made by
 * MergeRequests::RemoveApprovalService): the list holds that approval as
 * a trailer - the mail of the forge's approval (event "ack"), or the
 * reviewer's own trailer the bridge approved for - which no longer
 * counts.  Say so under that mail, or under the cover letter of the
 * revision the trailer was given on, once (event "unack", the note's
 * id).  1: the list never saw the approval, nothing to mail.
 */
static int withdrawn(struct mrctx *c, const struct forge_note *n,
		     const char *cursor_value)
{
	const struct forge_note *a = approval_before(c, n);
	struct store_mail parent, cover;
	struct store_revision rev;
	struct buf mid = BUF_INIT(PB_MSGID_MAX);
	struct buf head = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	struct outmsg m;
	char *name = NULL;
	int rc = 0, revision = 0, have_parent = 0;

	store_mail_init(&parent);
	store_mail_init(&cover);
	store_revision_init(&rev);
	memset(&m, 0, sizeof(m));
	buf_init(&m.body, 4096);
	if (a &&
	    !msgid_format_forge(&mid, "ack", c->project, (uint64_t)c->iid,
				(uint64_t)a->id,
				config_str(c->fm->cfg, CFG_BRIDGE_DOMAIN))) {
		rc = store_mail_get(&parent, c->fm->store, mid.data);
		if (!rc) {
			have_parent = 1;
			revision = parent.revision;
		} else if (rc != PB_ENOTFOUND) {
			goto out;
		}
		rc = 0;
	}
	if (!revision && n->author.username) {
		name = xasprintf(STORE_CURSOR_LIST_APPROVAL, c->project,
				 (long long)c->iid, n->author.username);
		rc = store_cursor_get(&head, c->fm->store, name);
		if (!rc && head.len)
			rc = store_revision_by_head(&rev, c->fm->store,
						    c->project, c->iid,
						    head.data);
		if (!rc && head.len)
			revision = rev.revision;
		if (rc == PB_ENOTFOUND)
			rc = 0;
		if (rc)
			goto out;
	}
	if (!revision) {
		log_info("note %lld: %s withdrew an approval the list never "
			 "saw; not mailed",
			 (long long)n->id, name_of(&n->author));
		rc = 1;
		goto out;
	}
	rc = find_cover(&cover, c, revision);
	if (!rc && !have_parent)
		rc = store_mail_get(&parent, c->fm->store, cover.message_id);
	if (!rc)
		rc = buf_addf(&m.body,
			      "%s withdrew the approval given on v%d (the "
			      "forge no longer counts it).\n",
			      name_of(&n->author), revision);
	if (rc)
		goto out;
	m.event = "unack";
	m.event_id = (uint64_t)n->id;
	m.who = name_of(&n->author);
	m.date = note_date(n);
	m.parent = &parent;
	m.root = cover.message_id;
	m.note_id = n->id;
	m.cursor_value = cursor_value;
	rc = queue(c, &m);
out:
	free(name);
	/* Whatever it was, the approval is gone: one given again on the
	 * forge is not the list's (its mail, and the applied mail's
	 * provenance). */
	if (rc >= 0 && n->author.username) {
		int via;

		for (via = 0; via <= 1; via++) {
			name = xasprintf(via ? STORE_CURSOR_LIST_APPROVAL_VIA :
					       STORE_CURSOR_LIST_APPROVAL,
					 c->project, (long long)c->iid,
					 n->author.username);
			if (store_cursor_set(c->fm->store, name, ""))
				log_warn("%s", err_msg());
			free(name);
		}
	}
	buf_release(&mid);
	buf_release(&head);
	buf_release(&m.body);
	store_mail_release(&parent);
	store_mail_release(&cover);
	store_revision_release(&rev);
	return rc;
}

/*
 * A note that stays on the forge: log it and count it for `status`
 * (cursor FORGEMAIL_KEPT_PREFIX P = "COUNT IID:NOTE").
 */
static int keep_back(struct mrctx *c, const struct forge_note *n)
{
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	char name[STORE_CURSOR_NAME_MAX], val[96];
	uint64_t count = 0;
	size_t len;
	int rc;

	log_notice("note %lld kept on the forge: internal (or its visibility "
		   "not given)",
		   (long long)n->id);
	snprintf(name, sizeof(name), "%s%s", FORGEMAIL_KEPT_PREFIX, c->project);
	rc = store_cursor_get(&v, c->fm->store, name);
	if (rc && rc != PB_ENOTFOUND)
		goto out;
	len = strcspn(v.data, " ");
	if (rc || !mem_to_u64(v.data, len, INT64_MAX, &count))
		count = 0;
	snprintf(val, sizeof(val), "%llu %lld:%lld",
		 (unsigned long long)count + 1, (long long)c->iid,
		 (long long)n->id);
	rc = store_cursor_set(c->fm->store, name, val);
out:
	buf_release(&v);
	return rc;
}

static int handle_note(struct mrctx *c, const struct fnote *fn,
		       const char *cursor_value)
{
	const struct forge_note *n = fn->n;
	const char *bot = bot_user(c->fm);
	const char *trailer =
		config_project_str(c->proj, CFG_OUTBOUND_APPROVAL_TRAILER);
	struct store_mail parent, cover;
	struct store_revision rev;
	struct outmsg m;
	struct buf quote = BUF_INIT(1024 * 1024);
	struct forgetext_suggest sg;
	struct diff *d = NULL;
	enum forgetext_skip why;
	int rc = 0, is_ack = 0, is_unack = 0;
	int by_bot = bot && *bot && n->author.username &&
		     !strcmp(n->author.username, bot);
	const char *body = n->body ? n->body : "";

	store_mail_init(&parent);
	store_mail_init(&cover);
	store_revision_init(&rev);
	memset(&m, 0, sizeof(m));
	buf_init(&m.body, FORGEMAIL_TEXT_MAX / 2);

	why = forgetext_skip(n, bot);
	if (why == FORGETEXT_SKIP_SYSTEM && forgetext_is_approval(n->body) &&
	    *trailer && !by_bot && !approval_from_list(c, n))
		is_ack = 1;
	else if (why == FORGETEXT_SKIP_SYSTEM &&
		 forgetext_is_unapproval(n->body) && !by_bot)
		is_unack = 1;
	else if (why != FORGETEXT_MAIL) {
		log_debug("note %lld not mailed: %s", (long long)n->id,
			  forgetext_skip_name(why));
		rc = 1;
		goto out;
	}
	/* Internal notes never leave the forge (and the cursor moves on). */
	if (fn->internal) {
		rc = keep_back(c, n);
		if (!rc)
			rc = 1;
		goto out;
	}
	if (is_unack) {
		rc = withdrawn(c, n, cursor_value);
		goto out;
	}
	rc = find_cover(&cover, c, c->latest.revision);
	if (rc)
		goto out;
	m.root = cover.message_id;
	if (is_ack) {
		m.event = "ack";
		rc = approval_body(&m.body, c, n, trailer);
		if (rc)
			goto out;
		rc = store_mail_get(&parent, c->fm->store, cover.message_id);
		goto send;
	}
	/* A later note of a discussion: under its newest mirrored mail. */
	if (fn->discussion_id &&
	    !store_mail_by_discussion(&parent, c->fm->store, c->project,
				      fn->discussion_id)) {
		if (parent.revision != cover.revision) {
			store_mail_release(&cover);
			if (!find_cover(&cover, c, parent.revision))
				m.root = cover.message_id;
		}
	} else if (n->has_position &&
		   (rc = commit_patch(&parent, &quote, c, &n->position)) !=
			   PB_ENOTFOUND) {
		if (rc)
			goto out;
		if (parent.revision != cover.revision) {
			store_mail_release(&cover);
			if (!find_cover(&cover, c, parent.revision))
				m.root = cover.message_id;
		}
	} else if (n->has_position) {
		int r = c->latest.revision, total = c->latest.patches;

		rc = 0;
		/* The revision of the note's version: its head on its
		 * base, else the newest with its head. */
		if (n->position.head_sha &&
		    (!store_revision_by_base(&rev, c->fm->store, c->project,
					     c->iid, n->position.head_sha,
					     n->position.base_sha) ||
		     !store_revision_by_head(&rev, c->fm->store, c->project,
					     c->iid, n->position.head_sha))) {
			r = rev.revision;
			total = rev.patches;
			store_mail_release(&cover);
			if (!find_cover(&cover, c, r))
				m.root = cover.message_id;
		}
		rc = find_patch(&parent, &quote, &d, c, r, total, &n->position);
		if (rc == PB_ENOTFOUND)
			rc = store_mail_get(&parent, c->fm->store,
					    cover.message_id);
		if (rc)
			goto out;
	} else {
		rc = store_mail_get(&parent, c->fm->store, cover.message_id);
		if (rc)
			goto out;
	}
	m.event = "note";
	if (quote.len) {
		rc = buf_addf(&m.body, "%s wrote on %s:\n", name_of(&n->author),
			      n->position.new_path ? n->position.new_path :
						     n->position.old_path);
		if (!rc)
			rc = buf_addbuf(&m.body, &quote);
		if (!rc)
			rc = buf_addch(&m.body, '\n');
	}
	/* A suggestion is GitLab's only on a DiffNote's new line
	 * (DiffNote#supports_suggestion?), a reply in its thread too. */
	memset(&sg, 0, sizeof(sg));
	if (n->has_position && n->position.new_line > 0 && n->type &&
	    !strcmp(n->type, "DiffNote")) {
		sg.path = n->position.new_path ? n->position.new_path :
						 n->position.old_path;
		sg.new_line = n->position.new_line;
		sg.stored = n->suggestions;
		sg.nr_stored = n->nr_suggestions;
		sg.diff = d;
	}
	if (!rc)
		rc = forgetext_markdown_note(&m.body, body, strlen(body),
					     sg.path ? &sg : NULL);
	if (!rc && c->mr.web_url)
		rc = buf_addf(&m.body, "\n-- \nOn the forge: %s#note_%lld\n",
			      c->mr.web_url, (long long)n->id);
send:
	if (rc)
		goto out;
	m.event_id = (uint64_t)n->id;
	m.who = name_of(&n->author);
	m.date = note_date(n);
	m.parent = &parent;
	m.note_id = n->id;
	/* A system note's discussion takes no replies: a list reply to the
	 * approval's mail starts its own discussion. */
	m.discussion_id = is_ack ? NULL : fn->discussion_id;
	m.cursor_value = cursor_value;
	rc = queue(c, &m);
out:
	diff_free(d);
	buf_release(&quote);
	buf_release(&m.body);
	store_mail_release(&parent);
	store_mail_release(&cover);
	store_revision_release(&rev);
	return rc;
}

static int cmp_fnote(const void *a, const void *b)
{
	int64_t x = ((const struct fnote *)a)->n->id;
	int64_t y = ((const struct fnote *)b)->n->id;

	return x < y ? -1 : x > y;
}

/* --- merge and close ------------------------------------------------------ */

/* Is the mail of this forge event in the thread map already? */
static int mailed_before(struct mrctx *c, const char *event, uint64_t id)
{
	struct buf mid = BUF_INIT(PB_MSGID_MAX);
	struct store_mail row;
	int found = 0;

	store_mail_init(&row);
	if (!msgid_format_forge(&mid, event, c->project, (uint64_t)c->iid, id,
				config_str(c->fm->cfg, CFG_BRIDGE_DOMAIN)))
		found = !store_mail_get(&row, c->fm->store, mid.data);
	store_mail_release(&row);
	buf_release(&mid);
	return found;
}

/* The patches of the latest revision as mailed: title and commit. */
struct applied {
	size_t n;
	char **title;
	char **sha; /* NULL entries: not known */
	struct outbound_landed *landed; /* where each landed; NULL: not paired */
};

static void applied_release(struct applied *a)
{
	size_t k;

	for (k = 0; k < a->n; k++) {
		free(a->title[k]);
		free(a->sha[k]);
	}
	free(a->title);
	free(a->sha);
	free(a->landed);
}

static int applied_load(struct applied *a, struct mrctx *c)
{
	struct store_mail row;
	const char *title;
	size_t k;
	int rc = 0;

	memset(a, 0, sizeof(*a));
	a->n = c->latest.patches > 0 ? (size_t)c->latest.patches : 0;
	a->title = xcalloc(a->n + 1, sizeof(*a->title));
	a->sha = xcalloc(a->n + 1, sizeof(*a->sha));
	store_mail_init(&row);
	for (k = 0; k < a->n && !rc; k++) {
		rc = store_mail_find(&row, c->fm->store, c->project, c->iid,
				     c->latest.revision, (int)k + 1);
		if (rc == PB_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc)
			break;
		title = patch_title(c, &row);
		a->title[k] = xstrdup(title ? title : "");
		if (row.commit_sha)
			a->sha[k] = xstrdup(row.commit_sha);
		store_mail_release(&row);
	}
	store_mail_release(&row);
	return rc;
}

/*
 * Pair the mailed commits with those the merge put on the target: the
 * mirror, by patch-id, over diff_refs base..sha (the MR's last version
 * is what was merged).  0 with a->landed set, PB_ETEMP to try the whole
 * mail again later, another error (logged) to say the SHAs were
 * rewritten without naming each.
 */
static int applied_pair(struct applied *a, struct mrctx *c)
{
	const struct forge_mr *mr = &c->mr;
	int rc;

	if (!c->fm->ob || !a->n)
		return err_set(PB_ENOTFOUND, "no git mirror to look in");
	if (!mr->sha || !mr->base_sha || !mr->head_sha ||
	    strcmp(mr->head_sha, mr->sha))
		return err_set(PB_ENOTFOUND, "the merged version is unknown");
	a->landed = xcalloc(a->n, sizeof(*a->landed));
	rc = outbound_landed(a->landed, c->fm->ob, c->project, c->iid,
			     c->mr.target_branch, (const char *const *)a->sha,
			     a->n, mr->base_sha, mr->sha);
	if (rc) {
		free(a->landed);
		a->landed = NULL;
	}
	return rc;
}

/* The wall clock in ms, as the pending cursor keeps it. */
static int64_t wall_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Has this MR's mail failed long enough to stop waiting for the mirror? */
static int deferred_too_long(const struct mrctx *c)
{
	return c->failing_since_ms > 0 &&
	       wall_ms() - c->failing_since_ms >= FORGEMAIL_DEFER_MAX_MS;
}

/*
 * "applied, thanks" with the truth about each patch's final commit
 * (docs/DESIGN.md "Merged: the applied mail"):
 *
 *  - squashed (squash_commit_sha, or squash asked for): the one commit,
 *    the merge commit if there is one too, and each patch as mailed;
 *  - the merged head is the mailed head: each patch's commit as mailed,
 *    and the merge commit (none for a fast-forward);
 *  - otherwise the commits were rewritten (rebased when merged): each
 *    patch's landed commit paired by patch-id, with the mailed one; when
 *    that cannot be worked out, the tip and the mailed commits.
 */
static int applied_body(struct buf *b, struct mrctx *c)
{
	const struct forge_mr *mr = &c->mr;
	const char *branch = mr->target_branch ? mr->target_branch : "?";
	const char *merge = mr->merge_commit_sha,
		   *squash = mr->squash_commit_sha;
	const char *head = c->latest.head_sha;
	struct applied a;
	size_t k, uncompared = 0;
	int rc, same, squashed, width = 1, t;

	rc = applied_load(&a, c);
	if (rc)
		goto out;
	for (t = (int)a.n; t >= 10; t /= 10)
		width++;
	squashed = (squash && *squash) || mr->squash;
	same = !squashed && mr->sha && head && !strcmp(mr->sha, head);
	if (!squashed && !same) {
		rc = applied_pair(&a, c);
		if (err_is_temporary(rc) && !deferred_too_long(c))
			goto out;
		if (err_is_temporary(rc))
			log_notice("merged: the git mirror has failed for %d "
				   "min (%s): the applied mail names the tip "
				   "only",
				   FORGEMAIL_DEFER_MAX_MS / 60000, err_msg());
		else if (rc)
			log_notice("merged: the final commit of each patch "
				   "is not known: %s",
				   err_msg());
		rc = 0;
	}
	for (k = 0; a.landed && k < a.n; k++)
		if (a.title[k] && a.landed[k].state == OUTBOUND_LANDED_UNKNOWN)
			uncompared++;
	buf_addf(b,
		 "Hello,\n\nThis series was applied to %s (%s) on the forge, "
		 "thanks!\n\n",
		 c->project, branch);
	if (squashed) {
		if (squash && *squash)
			buf_addf(b, "Squashed into one commit: %s\n", squash);
		else
			buf_adds(b, "Squashed into one commit.\n");
		if (merge && *merge && (!squash || strcmp(merge, squash)))
			buf_addf(b, "Merged in %s.\n", merge);
		buf_adds(b, "\nThe patches' own commits, as mailed:\n\n");
	} else if (!same && a.landed && !uncompared) {
		buf_addf(b,
			 "The commits were rewritten after they were mailed "
			 "(a rebase when merged,\nor a later push); each "
			 "patch's commit on %s is paired with the mailed\n"
			 "one by patch-id.\n\n",
			 branch);
	} else if (!same && a.landed) {
		buf_addf(b,
			 "The commits were rewritten after they were mailed "
			 "(a rebase when merged,\nor a later push); the "
			 "series ends at %s.\nEach patch's commit on %s is "
			 "paired with the mailed one by patch-id,\nwhere "
			 "the mailed commit could be compared.\n\n",
			 mr->sha ? mr->sha : "?", branch);
	} else if (!same) {
		buf_addf(b,
			 "The commits were rewritten after they were mailed "
			 "(a rebase when merged,\nor a later push); the "
			 "series ends at %s.\nThe commits as mailed:\n\n",
			 mr->sha ? mr->sha : "?");
	}
	for (k = 0; k < a.n; k++) {
		const char *mailed = a.sha[k] ? a.sha[k] : "?";

		if (!a.title[k])
			continue;
		buf_addf(b, "[%0*zu/%zu] %s\n", width, k + 1, a.n, a.title[k]);
		if (same)
			buf_addf(b, "      commit: %s\n", mailed);
		else if (a.landed &&
			 a.landed[k].state == OUTBOUND_LANDED_PAIRED)
			buf_addf(b, "      commit: %s\n      mailed as %s\n",
				 a.landed[k].sha, mailed);
		else if (a.landed && a.landed[k].state == OUTBOUND_LANDED_NONE)
			buf_addf(b,
				 "      commit: ? (none has its patch-id: it "
				 "changed after it was mailed)\n"
				 "      mailed as %s\n",
				 mailed);
		else if (a.landed)
			buf_addf(b,
				 "      commit: ? (the mailed commit could not "
				 "be compared)\n"
				 "      mailed as %s\n",
				 mailed);
		else
			buf_addf(b, "      mailed as %s\n", mailed);
	}
	if (!squashed && merge && *merge)
		buf_addf(b, "\nMerged in %s.\n", merge);
	else if (!squashed && same)
		buf_addf(b, "\nFast-forwarded: %s ends at %s.\n", branch,
			 mr->sha);
	rc = approvals_block(b, c);
	if (rc)
		goto out;
	if (mr->web_url)
		buf_addf(b, "\n-- \nOn the forge: %s\n", mr->web_url);
	rc = buf_error(b);
out:
	applied_release(&a);
	return rc;
}

static int state_event(struct mrctx *c)
{
	struct store_mail cover;
	struct outmsg m;
	int merged = !strcmp(c->mr.state, "merged"), rc = 0;

	if (!merged && strcmp(c->mr.state, "closed"))
		return 0;
	store_mail_init(&cover);
	memset(&m, 0, sizeof(m));
	buf_init(&m.body, FORGEMAIL_TEXT_MAX / 2);
	m.event = merged ? "merged" : "closed";
	m.event_id = merged ? 0 : (uint64_t)c->mr.updated_ms;
	/* Before any work (a fetch for the applied mail): done already? */
	if (mailed_before(c, m.event, m.event_id))
		goto out;
	rc = find_cover(&cover, c, c->latest.revision);
	if (rc)
		goto out;
	m.who = config_str(c->fm->cfg, CFG_BRIDGE_NAME);
	m.date = c->mr.updated_ms ? c->mr.updated_ms / 1000 : time(NULL);
	m.parent = &cover;
	m.root = cover.message_id;
	if (merged)
		rc = applied_body(&m.body, c);
	else
		rc = buf_adds(&m.body, "This merge request was closed on the "
				       "forge without being merged.\n");
	if (!rc)
		rc = queue(c, &m);
out:
	buf_release(&m.body);
	store_mail_release(&cover);
	return rc;
}

/* --- threads resolved ----------------------------------------------------- */

static void open_cursor_name(char *out, size_t size, const char *project,
			     int64_t iid)
{
	snprintf(out, size, "forgemail:open:%s!%lld", project, (long long)iid);
}

/*
 * The mail on the list a thread's resolution answers: its newest mail
 * from the forge (thread map), else the list reply whose inline comment
 * the bridge made into the thread (its action, and its record for the
 * patch it answered: the mail is that patch's row, under the reply's id
 * and time).
 */
struct thread_mail {
	struct store_mail mail;
	struct store_action act;
	struct store_inbound in;
};

static void thread_mail_init(struct thread_mail *t)
{
	store_mail_init(&t->mail);
	store_action_init(&t->act);
	store_inbound_init(&t->in);
}

static void thread_mail_release(struct thread_mail *t)
{
	store_mail_release(&t->mail);
	store_action_release(&t->act);
	store_inbound_release(&t->in);
}

static int thread_mail_find(struct thread_mail *t, struct mrctx *c,
			    const char *discussion_id)
{
	struct store *st = c->fm->store;
	int rc;

	thread_mail_release(t);
	rc = store_mail_by_discussion(&t->mail, st, c->project, discussion_id);
	if (rc != PB_ENOTFOUND)
		return rc;
	rc = store_action_by_discussion(&t->act, st, c->project, c->iid,
					discussion_id);
	if (!rc)
		rc = store_inbound_get(&t->in, st, t->act.message_id);
	if (!rc && t->in.revision <= 0)
		rc = err_set(PB_ENOTFOUND, "the reply's revision is unknown");
	if (!rc)
		rc = store_mail_find(&t->mail, st, c->project, c->iid,
				     t->in.revision, t->in.patch);
	if (!rc) {
		t->mail.message_id = t->act.message_id;
		t->mail.created = t->in.created;
	}
	return rc;
}

/*
 * A review thread mailed to the list and resolved on the forge since:
 * "This thread (PATH:LINE) was resolved by NAME on the forge." under the
 * thread's newest mail, once per thread (event "resolved", the id of its
 * first note).  A thread resolved before its newest mail was queued
 * (less poll_overlap, for the clocks) is not mailed: the list heard of
 * it already, or the thread is older than this notice.  1: nothing to
 * mail.
 */
static int resolved(struct mrctx *c, const struct forge_discussion *d,
		    const struct forge_note *r)
{
	const struct forge_note *first = &d->notes[0];
	const char *by = name_of(&r->resolved_by);
	struct thread_mail t;
	struct store_mail *parent = &t.mail, cover;
	struct buf where = BUF_INIT(4096 + 32);
	struct outmsg m;
	int64_t at = 0;
	int rc;

	thread_mail_init(&t);
	store_mail_init(&cover);
	memset(&m, 0, sizeof(m));
	buf_init(&m.body, 64 * 1024);
	if (mailed_before(c, "resolved", first->id)) {
		rc = 1;
		goto out;
	}
	rc = thread_mail_find(&t, c, d->id);
	if (rc == PB_ENOTFOUND)
		rc = 1;
	if (rc)
		goto out;
	if (!r->resolved_at || forge_time_parse(&at, r->resolved_at) ||
	    at / 1000 + config_duration_ms(c->fm->cfg,
					   CFG_OUTBOUND_POLL_OVERLAP) /
				    1000 <
		    parent->created) {
		log_debug("thread %s resolved before its last mail; not "
			  "mailed",
			  d->id);
		rc = 1;
		goto out;
	}
	if (!find_cover(&cover, c, parent->revision))
		m.root = cover.message_id;
	rc = openthreads_where(&where, first);
	if (!rc)
		rc = buf_addf(&m.body,
			      "This thread (%s) was resolved by %s on the "
			      "forge.\n",
			      where.data, by);
	if (!rc && c->mr.web_url)
		rc = buf_addf(&m.body, "\n-- \nOn the forge: %s#note_%lld\n",
			      c->mr.web_url, (long long)first->id);
	if (rc)
		goto out;
	m.event = "resolved";
	m.event_id = (uint64_t)first->id;
	m.who = by;
	m.date = at / 1000;
	m.parent = parent;
	/* A list reply to it goes on in the thread. */
	m.discussion_id = d->id;
	rc = queue(c, &m);
out:
	buf_release(&where);
	buf_release(&m.body);
	thread_mail_release(&t);
	store_mail_release(&cover);
	return rc;
}

/*
 * The MRs of a project with threads mailed and open (cursor
 * "forgemail:threads:P", decimal iids), which every poll reads again:
 * GitLab resolves a thread without touching the MR (forgesim's README,
 * "updated_at"), so the listing does not bring it.  At most
 * FORGEMAIL_OPEN_MRS_MAX; past them, the oldest entry is given up (its
 * resolutions are mailed when the MR changes next).
 */
#define FORGEMAIL_OPEN_MRS_MAX 64

struct open_mrs {
	int64_t iid[FORGEMAIL_OPEN_MRS_MAX];
	size_t nr;
};

static void open_mrs_name(char *out, size_t size, const char *project)
{
	snprintf(out, size, "forgemail:threads:%s", project);
}

static int open_mrs_load(struct open_mrs *l, struct forgemail *fm,
			 const char *project)
{
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	char name[STORE_CURSOR_NAME_MAX];
	struct scan sc;
	uint64_t id;
	int rc;

	l->nr = 0;
	open_mrs_name(name, sizeof(name), project);
	rc = store_cursor_get(&v, fm->store, name);
	if (rc == PB_ENOTFOUND)
		rc = 0;
	scan_init(&sc, v.data, v.len);
	while (!rc && l->nr < FORGEMAIL_OPEN_MRS_MAX) {
		scan_blanks(&sc);
		if (scan_eof(&sc) || !scan_u64(&sc, INT64_MAX, &id))
			break;
		l->iid[l->nr++] = (int64_t)id;
	}
	buf_release(&v);
	return rc;
}

static int open_mrs_mark(struct forgemail *fm, const char *project, int64_t iid,
			 int open)
{
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	char name[STORE_CURSOR_NAME_MAX];
	struct open_mrs l;
	size_t i, at;
	int rc = open_mrs_load(&l, fm, project);

	if (rc)
		goto out;
	for (at = 0; at < l.nr && l.iid[at] != iid; at++)
		;
	if ((at < l.nr) == !!open)
		goto out;
	if (open) {
		if (l.nr == FORGEMAIL_OPEN_MRS_MAX) {
			log_warn(
				"more than %d merge requests with open threads "
				"on the list: !%lld's resolutions wait for its "
				"next change",
				FORGEMAIL_OPEN_MRS_MAX, (long long)l.iid[0]);
			memmove(l.iid, l.iid + 1, --l.nr * sizeof(*l.iid));
		}
		l.iid[l.nr++] = iid;
	} else {
		memmove(l.iid + at, l.iid + at + 1,
			(--l.nr - at) * sizeof(*l.iid));
	}
	for (i = 0; i < l.nr; i++)
		buf_addf(&v, "%s%lld", i ? " " : "", (long long)l.iid[i]);
	rc = buf_error(&v);
	open_mrs_name(name, sizeof(name), project);
	if (!rc)
		rc = store_cursor_set(fm->store, name, v.data);
out:
	buf_release(&v);
	return rc;
}

/*
 * Mail the threads resolved since they were mailed ([outbound]
 * mail_resolved), and count those mailed and still open (cursor
 * "forgemail:open:P!IID"): while there are any, every reading of the MR
 * reads its discussions, as resolving a thread makes no note the quick
 * look would see (GitLab sets resolved_at on the notes, app/models/
 * concerns/resolvable_discussion.rb).
 */
static int resolutions(struct mrctx *c)
{
	char name[STORE_CURSOR_NAME_MAX], val[32];
	struct buf old = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	struct thread_mail row;
	size_t i, open = 0;
	int rc = 0, r;

	if (!config_project_bool(c->proj, CFG_OUTBOUND_MAIL_RESOLVED) || !c->dl)
		return 0;
	thread_mail_init(&row);
	for (i = 0; i < c->dl->nr && !err_is_temporary(rc); i++) {
		const struct forge_discussion *d = &c->dl->items[i];
		const struct forge_note *by = NULL;
		enum openthreads_state s = openthreads_state(d, &by);

		if (s == OPENTHREADS_OPEN) {
			if (!thread_mail_find(&row, c, d->id))
				open++;
			continue;
		}
		if (s != OPENTHREADS_RESOLVED || !by)
			continue;
		r = resolved(c, d, by);
		if (r < 0 && !err_is_temporary(r))
			log_error("thread %s: resolution not mailed: %s", d->id,
				  err_msg());
		if (r < 0)
			rc = r;
	}
	thread_mail_release(&row);
	if (err_is_temporary(rc))
		goto out;
	rc = 0;
	/* A merged or closed MR is no longer watched for them. */
	if (!c->mr.state || strcmp(c->mr.state, "opened"))
		open = 0;
	open_cursor_name(name, sizeof(name), c->project, c->iid);
	snprintf(val, sizeof(val), "%zu", open);
	r = store_cursor_get(&old, c->fm->store, name);
	if (r == PB_ENOTFOUND ? open > 0 : (!r && strcmp(old.data, val))) {
		rc = store_cursor_set(c->fm->store, name, val);
		if (!rc)
			rc = open_mrs_mark(c->fm, c->project, c->iid, open > 0);
	} else if (r && r != PB_ENOTFOUND) {
		rc = r;
	}
out:
	buf_release(&old);
	return rc;
}

/* Does the MR have threads mailed and open (see resolutions())? */
static int threads_open(struct mrctx *c)
{
	char name[STORE_CURSOR_NAME_MAX];
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	uint64_t n = 0;
	int rc;

	if (!config_project_bool(c->proj, CFG_OUTBOUND_MAIL_RESOLVED))
		return 0;
	open_cursor_name(name, sizeof(name), c->project, c->iid);
	rc = store_cursor_get(&v, c->fm->store, name);
	if (!rc && !mem_to_u64(v.data, v.len, INT64_MAX, &n))
		n = 0;
	buf_release(&v);
	return n > 0;
}

/* --- required reviews ----------------------------------------------------- */

/* The paths the latest revision's patches touch, as mailed. */
static int touched_paths(struct strlist *out, struct mrctx *c)
{
	struct store_mail row;
	struct diff *d = NULL;
	int k, rc = 0;

	store_mail_init(&row);
	for (k = 1; k <= c->latest.patches && !rc; k++) {
		store_mail_release(&row);
		rc = store_mail_find(&row, c->fm->store, c->project, c->iid,
				     c->latest.revision, k);
		if (rc == PB_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc || !row.diff || diff_parse(&d, row.diff, row.diff_len))
			continue;
		diff_paths(out, d);
		diff_free(d);
		d = NULL;
	}
	store_mail_release(&row);
	return rc;
}

/*
 * "All required reviews are in: net (Mary Maintainer)." as a reply to
 * the latest cover letter when the MR's required reviews (reviewsin.h)
 * are all given, and "The required reviews are no longer all in:
 * waiting for net." (or "a NAK blocks the merge request") when a NAK or
 * a withdrawn approval takes that back
 * ([outbound] mail_reviews_in, with [inbound] owners_file): once per
 * change of state.  Cursor "forgemail:reviews:P!IID" = "N in" or "N
 * out", N the changes mailed (the event id of the N-th mail, so a crash
 * between the mail and the cursor does not mail it twice).
 */
static int reviews(struct mrctx *c)
{
	const char *file = config_project_str(c->proj, CFG_INBOUND_OWNERS_FILE);
	const char *nak = config_project_str(c->proj, CFG_INBOUND_NAK_LABEL);
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	struct buf who = BUF_INIT(16 * 1024);
	struct strlist paths = STRLIST_INIT;
	char name[STORE_CURSOR_NAME_MAX], val[48];
	struct forge_approvals a;
	struct store_mail cover;
	const struct owners *o;
	struct outmsg m;
	uint64_t n = 0;
	size_t required = 0;
	int rc, in = 0, was = 0;

	memset(&a, 0, sizeof(a));
	memset(&m, 0, sizeof(m));
	store_mail_init(&cover);
	buf_init(&m.body, 64 * 1024);
	if (!config_project_bool(c->proj, CFG_OUTBOUND_MAIL_REVIEWS_IN) ||
	    !*file || !c->mr.state || strcmp(c->mr.state, "opened")) {
		rc = 0;
		goto out;
	}
	snprintf(name, sizeof(name), "forgemail:reviews:%s!%lld", c->project,
		 (long long)c->iid);
	rc = store_cursor_get(&v, c->fm->store, name);
	if (!rc) {
		size_t len = strcspn(v.data, " ");

		if (!mem_to_u64(v.data, len, INT64_MAX, &n))
			n = 0;
		was = !strcmp(v.data + len, " in");
	} else if (rc != PB_ENOTFOUND) {
		goto out;
	}
	o = fm_owners(c->fm, file);
	if (!o) {
		log_warn("%s; required reviews not told", err_msg());
		rc = 0;
		goto out;
	}
	rc = touched_paths(&paths, c);
	if (!rc)
		rc = forge_get_approvals(&a, c->fm->forge, c->project, c->iid);
	if (!rc)
		rc = reviewsin_check(
			&in, &required, &who, o,
			(const char *const *)paths.items, paths.nr, &a,
			*nak && strlist_find(&c->mr.labels, nak) >= 0);
	if (rc || in == was)
		goto out;
	rc = find_cover(&cover, c, c->latest.revision);
	if (!rc)
		rc = buf_addf(&m.body,
			      in ? "All required reviews are in: %s.\n" :
				   "The required reviews are no longer all in: "
				   "%s.\n",
			      who.data);
	if (!rc && c->mr.web_url)
		rc = buf_addf(&m.body, "\n-- \nOn the forge: %s\n",
			      c->mr.web_url);
	if (rc)
		goto out;
	m.event = "reviews";
	m.event_id = n + 1;
	m.who = config_str(c->fm->cfg, CFG_BRIDGE_NAME);
	m.date = (int64_t)time(NULL);
	m.parent = &cover;
	m.root = cover.message_id;
	rc = queue(c, &m);
	snprintf(val, sizeof(val), "%llu %s", (unsigned long long)n + 1,
		 in ? "in" : "out");
	if (!rc)
		rc = store_cursor_set(c->fm->store, name, val);
out:
	if (rc && !err_is_temporary(rc)) {
		log_error("required reviews not told: %s", err_msg());
		rc = 0;
	}
	forge_approvals_release(&a);
	strlist_release(&paths);
	store_mail_release(&cover);
	buf_release(&m.body);
	buf_release(&who);
	buf_release(&v);
	return rc;
}

/* --- one MR, every project ------------------------------------------------- */

/* The newest updated_at of n (ms), or keep *newest. */
static void note_newest(int64_t *newest, const struct forge_note *n)
{
	int64_t ms;

	if (n->updated_at && !forge_time_parse(&ms, n->updated_at) &&
	    ms > *newest)
		*newest = ms;
}

/*
 * The notes seen lately, for the notes that come late.  GitLab takes a
 * note's id from its sequence at INSERT, and on PostgreSQL nobody sees
 * the row before its transaction commits (app/services/notes/
 * create_service.rb saves the note and its position in one): a slow note,
 * a diff note most of all, appears after notes with higher ids, below the
 * notes cursor.  So each reading keeps the ids of the notes created
 * within poll_overlap of the newest it saw (cursor
 * "forgemail:ids:P!IID", decimal ids); a note below the notes cursor,
 * created within that window and not among them, came late and is
 * handled then, the cursor left where it is.  A note slower than
 * poll_overlap is not found.
 */
#define FORGEMAIL_IDS_MAX 96

struct idwin_seen {
	uint64_t id;
	int64_t ms; /* created_at */
};

struct idwin {
	int known; /* the cursor was there (else nothing counts as late) */
	uint64_t old[FORGEMAIL_IDS_MAX];
	size_t nr_old;
	int64_t floor_ms; /* created at or after it: in the window; 0: none */
	int64_t overlap_ms;
	struct idwin_seen *now; /* every note of this reading */
	size_t nr_now, alloc_now;
	struct buf value; /* the cursor as read */
};

static void ids_cursor_name(char *out, size_t size, const char *project,
			    int64_t iid)
{
	snprintf(out, size, "forgemail:ids:%s!%lld", project, (long long)iid);
}

static int64_t note_created_ms(const struct forge_note *n)
{
	int64_t ms;

	if (n->created_at && !forge_time_parse(&ms, n->created_at))
		return ms;
	return 0;
}

/* Read the cursor; seen is the newest updated_at the last reading saw. */
static int idwin_load(struct idwin *w, struct forgemail *fm, const char *name,
		      int64_t seen)
{
	struct scan sc;
	uint64_t id;
	int rc;

	memset(w, 0, sizeof(*w));
	buf_init(&w->value, STORE_CURSOR_VALUE_MAX);
	w->overlap_ms = config_duration_ms(fm->cfg, CFG_OUTBOUND_POLL_OVERLAP);
	if (seen > w->overlap_ms)
		w->floor_ms = seen - w->overlap_ms;
	rc = store_cursor_get(&w->value, fm->store, name);
	if (rc == PB_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	w->known = 1;
	scan_init(&sc, w->value.data, w->value.len);
	while (w->nr_old < FORGEMAIL_IDS_MAX) {
		scan_blanks(&sc);
		if (scan_eof(&sc) || !scan_u64(&sc, INT64_MAX, &id))
			break;
		w->old[w->nr_old++] = id;
	}
	return 0;
}

static void idwin_release(struct idwin *w)
{
	free(w->now);
	buf_release(&w->value);
}

static void idwin_note(struct idwin *w, const struct forge_note *n)
{
	if (n->id <= 0)
		return;
	ALLOC_GROW(w->now, w->nr_now + 1, w->alloc_now);
	w->now[w->nr_now].id = (uint64_t)n->id;
	w->now[w->nr_now].ms = note_created_ms(n);
	w->nr_now++;
}

/* A note at or below the notes cursor that no reading has seen. */
static int idwin_late(const struct idwin *w, const struct forge_note *n,
		      uint64_t last)
{
	size_t i;

	if (!w->known || !w->floor_ms || n->id <= 0 || (uint64_t)n->id > last ||
	    note_created_ms(n) < w->floor_ms)
		return 0;
	for (i = 0; i < w->nr_old; i++)
		if (w->old[i] == (uint64_t)n->id)
			return 0;
	return 1;
}

static int cmp_seen_newest(const void *a, const void *b)
{
	int64_t x = ((const struct idwin_seen *)a)->ms;
	int64_t y = ((const struct idwin_seen *)b)->ms;

	return x > y ? -1 : x < y;
}

/* Every note read is handled: keep the ids of those created within
 * poll_overlap of newest, the newest first, when they changed. */
static int idwin_save(struct idwin *w, struct forgemail *fm, const char *name,
		      int64_t newest)
{
	struct buf v = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	int64_t floor = newest > w->overlap_ms ? newest - w->overlap_ms : 0;
	size_t i, n = 0;
	int rc = 0;

	if (w->nr_now)
		qsort(w->now, w->nr_now, sizeof(*w->now), cmp_seen_newest);
	for (i = 0; i < w->nr_now && n < FORGEMAIL_IDS_MAX; i++) {
		if (w->now[i].ms < floor)
			break;
		if (buf_addf(&v, "%s%llu", n ? " " : "",
			     (unsigned long long)w->now[i].id))
			break;
		n++;
	}
	buf_clear_error(&v); /* the newest that fit: older ones may be
			      * handled twice, never skipped */
	if (i < w->nr_now && w->now[i].ms >= floor)
		log_debug("%zu notes in poll_overlap, %zu kept", w->nr_now, n);
	if (!w->known || strcmp(v.data, w->value.data))
		rc = store_cursor_set(fm->store, name, v.data);
	buf_release(&v);
	return rc;
}

/*
 * The quick look: the MR's notes newest first (updated_at, desc) down to
 * poll_overlap before the newest updated_at the last reading saw (seen,
 * cursor "forgemail:seen:P!IID").  A note created or edited since is
 * among them.  When every note above the notes cursor (last) is one
 * handle_note() skips by itself (ours, the bot's, a system note other
 * than an approval given or withdrawn), they are handled here: the notes
 * cursor moves past them, and the discussions are not read.  *full: a
 * note needs its discussion (a comment to mail, an internal one to keep
 * back, an approval given or withdrawn), or came late (struct idwin), or
 * there was no earlier
 * reading: read them all.
 */
static int quick_look(int *full, int64_t *newest, struct idwin *w,
		      struct mrctx *c, const char *cname, uint64_t last,
		      int64_t seen)
{
	const char *bot = bot_user(c->fm);
	struct forge_note_query q;
	struct forge_note_list nl;
	enum forgetext_skip why;
	uint64_t top = last;
	size_t i, skipped = 0;
	char val[32];
	int rc;

	*full = 1;
	if (seen <= 0)
		return 0;
	memset(&q, 0, sizeof(q));
	memset(&nl, 0, sizeof(nl));
	q.sort = "desc";
	q.order_by = "updated_at";
	q.stop_before_ms = seen - config_duration_ms(c->fm->cfg,
						     CFG_OUTBOUND_POLL_OVERLAP);
	if (q.stop_before_ms <= 0)
		return 0;
	rc = forge_list_notes(&nl, c->fm->forge, c->project, c->iid, &q);
	if (rc)
		return rc;
	for (i = 0; i < nl.nr; i++) {
		const struct forge_note *n = &nl.items[i];

		note_newest(newest, n);
		idwin_note(w, n);
		if (idwin_late(w, n, last))
			goto out; /* *full: it needs a look like a new one */
		if (n->id <= 0 || (uint64_t)n->id <= last)
			continue;
		/* Mailed, or an approval given or withdrawn: handle_note()
		 * looks further. */
		why = forgetext_skip(n, bot);
		if (why == FORGETEXT_MAIL ||
		    (why == FORGETEXT_SKIP_SYSTEM &&
		     (forgetext_is_approval(n->body) ||
		      forgetext_is_unapproval(n->body))))
			goto out; /* *full */
		log_debug("note %lld not mailed: %s", (long long)n->id,
			  forgetext_skip_name(why));
		skipped++;
		if ((uint64_t)n->id > top)
			top = (uint64_t)n->id;
	}
	*full = 0;
	if (top > last) {
		snprintf(val, sizeof(val), "%llu", (unsigned long long)top);
		rc = store_cursor_set(c->fm->store, cname, val);
	}
	if (!rc && skipped)
		log_debug("%zu new note(s), none to mail; the discussions "
			  "not read",
			  skipped);
out:
	forge_note_list_release(&nl);
	return rc;
}

/* forgemail_mr(), for an MR failing since since_ms (0: not failing). */
static int mr_once(struct forgemail *fm, const char *project, int64_t iid,
		   int64_t since_ms, size_t *queued)
{
	struct mrctx c;
	struct forge_discussion_list dl;
	struct fnote *notes = NULL;
	size_t nr = 0, alloc = 0, i, j;
	struct buf cur = BUF_INIT(STORE_CURSOR_VALUE_MAX);
	char cname[STORE_CURSOR_NAME_MAX], sname[STORE_CURSOR_NAME_MAX];
	char iname[STORE_CURSOR_NAME_MAX];
	char val[32], ctx[PB_LOG_CTX_MAX];
	struct idwin w;
	struct log_ctx_saved saved;
	uint64_t last = 0;
	int64_t seen = 0, newest = 0;
	int rc, full = 1;

	memset(&w, 0, sizeof(w));
	buf_init(&w.value, STORE_CURSOR_VALUE_MAX);
	/* Between two MRs too: what the caller serves meanwhile. */
	forge_pause(fm->forge);
	log_ctx_pushf(&saved, "%s!%lld", project, (long long)iid);
	memset(&c, 0, sizeof(c));
	memset(&dl, 0, sizeof(dl));
	c.fm = fm;
	c.project = project;
	c.iid = iid;
	c.failing_since_ms = since_ms;
	store_revision_init(&c.latest);
	rc = config_project_get(&c.proj, fm->cfg, project);
	if (rc)
		goto out;
	rc = store_revision_latest(&c.latest, fm->store, project, iid);
	if (rc == PB_ENOTFOUND) {
		rc = 0;
		goto out;
	}
	if (!rc)
		rc = forge_get_mr(&c.mr, fm->forge, project, iid);
	notes_cursor_name(cname, sizeof(cname), project, iid);
	if (!rc) {
		rc = store_cursor_get(&cur, fm->store, cname);
		if (rc == PB_ENOTFOUND)
			rc = 0;
		else if (!rc &&
			 !mem_to_u64(cur.data, cur.len, INT64_MAX, &last))
			last = 0;
	}
	seen_cursor_name(sname, sizeof(sname), project, iid);
	if (!rc) {
		buf_reset(&cur);
		rc = store_cursor_get(&cur, fm->store, sname);
		if (rc == PB_ENOTFOUND)
			rc = 0;
		else if (!rc &&
			 !mem_to_i64(cur.data, cur.len, 1, INT64_MAX, &seen))
			seen = 0;
	}
	ids_cursor_name(iname, sizeof(iname), project, iid);
	if (!rc) {
		idwin_release(&w);
		rc = idwin_load(&w, fm, iname, seen);
	}
	if (!rc && !threads_open(&c))
		rc = quick_look(&full, &newest, &w, &c, cname, last, seen);
	if (!rc && full) {
		w.nr_now = 0; /* the discussions have them all */
		rc = forge_list_discussions(&dl, fm->forge, project, iid);
	}
	if (rc)
		goto out;
	c.dl = &dl;
	for (i = 0; i < dl.nr; i++)
		for (j = 0; j < dl.items[i].nr_notes; j++) {
			const struct forge_note *n = &dl.items[i].notes[j];
			int late = idwin_late(&w, n, last);

			note_newest(&newest, n);
			idwin_note(&w, n);
			if (n->id <= 0 || ((uint64_t)n->id <= last && !late))
				continue;
			ALLOC_GROW(notes, nr + 1, alloc);
			notes[nr].late = late;
			/* An individual comment's discussion too: a list
			 * reply to its mail continues it (GitLab turns it
			 * into a thread), and so does a forge reply. */
			notes[nr].n = n;
			notes[nr].discussion_id = dl.items[i].id;
			/* A reply in an internal thread is internal, whatever
			 * it says of itself. */
			notes[nr].internal = n->internal ||
					     dl.items[i].notes[0].internal;
			nr++;
		}
	if (nr)
		qsort(notes, nr, sizeof(*notes), cmp_fnote);
	for (i = 0; i < nr; i++) {
		snprintf(val, sizeof(val), "%lld", (long long)notes[i].n->id);
		snprintf(ctx, sizeof(ctx), "%s!%lld note %s", project,
			 (long long)iid, val);
		log_ctx_set(ctx);
		/* A late note leaves the notes cursor where it is: past it. */
		if (notes[i].late)
			log_info("note %s came late (its id is below one seen "
				 "before it)",
				 val);
		rc = handle_note(&c, &notes[i], notes[i].late ? NULL : val);
		if (rc && rc != 1 && !err_is_temporary(rc))
			log_error("note %s not mailed: %s", val, err_msg());
		if (rc && !err_is_temporary(rc) && notes[i].late)
			rc = 0;
		else if (rc && !err_is_temporary(rc))
			rc = store_cursor_set(fm->store, cname, val);
		if (rc)
			goto out;
	}
	/* Every note read is handled: the next quick look starts here. */
	if (newest > seen) {
		snprintf(val, sizeof(val), "%lld", (long long)newest);
		rc = store_cursor_set(fm->store, sname, val);
		if (rc)
			goto out;
	}
	rc = idwin_save(&w, fm, iname, newest > seen ? newest : seen);
	if (rc)
		goto out;
	snprintf(ctx, sizeof(ctx), "%s!%lld", project, (long long)iid);
	log_ctx_set(ctx);
	if (full) {
		rc = resolutions(&c);
		if (rc)
			goto out;
	}
	rc = reviews(&c);
	if (rc)
		goto out;
	rc = state_event(&c);
	if (rc && !err_is_temporary(rc)) {
		log_error("%s: %s", c.mr.state, err_msg());
		rc = 0;
	}
out:
	if (queued)
		*queued += c.queued;
	free(notes);
	idwin_release(&w);
	buf_release(&cur);
	forge_discussion_list_release(&dl);
	forge_version_release(&c.version);
	forge_mr_release(&c.mr);
	store_revision_release(&c.latest);
	log_ctx_pop(&saved);
	return rc;
}

static int recent_remember(struct forgemail *fm, const char *project,
			   int64_t iid);

int forgemail_mr(struct forgemail *fm, const char *project, int64_t iid,
		 size_t *queued)
{
	int rc = mr_once(fm, project, iid, 0, queued);

	if (!err_is_temporary(rc)) {
		int r = recent_remember(fm, project, iid);

		if (!rc)
			rc = r;
	}
	return rc;
}

/* --- MRs waiting after a temporary failure (fmlist.h) --------------------- */

/* Retry the MRs whose time has come; drop those that went through. */
static void pending_retry(struct fmlist_pendings *pl, struct forgemail *fm,
			  const char *project, size_t *queued)
{
	int64_t now = wall_ms();
	size_t i = 0;
	int rc;

	while (i < pl->nr) {
		struct fmlist_pending *e = &pl->items[i];

		if (e->next_ms > now) {
			i++;
			continue;
		}
		rc = mr_once(fm, project, e->iid, e->first_ms, queued);
		if (rc && !err_is_temporary(rc))
			log_error("%s!%lld: %s; not retried", project,
				  (long long)e->iid, err_msg());
		else if (!rc)
			log_notice("%s!%lld: done after %lld failure(s)",
				   project, (long long)e->iid,
				   (long long)e->tries);
		if (!err_is_temporary(rc)) {
			fmlist_pending_drop(pl, e);
			continue;
		}
		fmlist_pending_failed(e, now);
		pl->changed = 1;
		log_warn("%s!%lld: %s (failing for %lld s, try %lld; "
			 "retried in %lld s)",
			 project, (long long)e->iid, err_msg(),
			 (long long)((now - e->first_ms) / 1000),
			 (long long)e->tries,
			 (long long)((e->next_ms - now) / 1000));
		i++;
	}
}

/* --- MRs read again for comments that did not move updated_at ---------- */

/* How long after a change an MR is read again: GitLab's touch interval,
 * and the poll overlap for the clocks' skew. */
static int64_t recent_window_ms(const struct config *cfg)
{
	return config_duration_ms(cfg, CFG_FORGE_TOUCH_INTERVAL) +
	       config_duration_ms(cfg, CFG_OUTBOUND_POLL_OVERLAP);
}

/* Has the MR a mailed revision (the only MRs whose comments are mailed)? */
static int mailed(struct forgemail *fm, const char *project, int64_t iid)
{
	struct store_revision rev;
	int found;

	store_revision_init(&rev);
	found = !store_revision_latest(&rev, fm->store, project, iid);
	store_revision_release(&rev);
	return found;
}

static int recent_remember(struct forgemail *fm, const char *project,
			   int64_t iid)
{
	struct fmlist_recents rl;
	int rc;

	if (!mailed(fm, project, iid))
		return 0;
	rc = fmlist_recent_load(&rl, fm->store, project);
	if (!rc) {
		fmlist_recent_note(&rl, iid,
				   wall_ms() + recent_window_ms(fm->cfg));
		rc = fmlist_recent_save(&rl, fm->store, project);
	}
	return rc;
}

/*
 * Read again the recent MRs this poll did not list: a comment within the
 * touch interval of the last change left updated_at - and so the listing
 * - as it was.  An entry past its time is read once more, then dropped.
 */
static void recent_rescan(struct fmlist_recents *rl, struct forgemail *fm,
			  const char *project, struct fmlist_pendings *pl,
			  size_t *queued)
{
	int64_t now = wall_ms();
	size_t i = 0;
	int rc;

	while (i < rl->nr) {
		struct fmlist_recent *e = &rl->items[i];

		if (fmlist_recent_seen(rl, e->iid) ||
		    fmlist_pending_find(pl, e->iid)) {
			i++;
			continue;
		}
		rc = mr_once(fm, project, e->iid, 0, queued);
		if (err_is_temporary(rc)) {
			log_warn("%s!%lld: %s (read again for comments at the "
				 "next poll)",
				 project, (long long)e->iid, err_msg());
			i++;
			continue;
		}
		if (rc)
			log_error("%s!%lld: %s", project, (long long)e->iid,
				  err_msg());
		if (e->until_ms <= now) {
			*e = rl->items[--rl->nr];
			rl->changed = 1;
			continue;
		}
		i++;
	}
}

/*
 * Read again the MRs with threads mailed and open that this poll has
 * not read (struct open_mrs), for the threads resolved meanwhile.
 */
static void open_rescan(struct forgemail *fm, const char *project,
			struct fmlist_recents *rl, struct fmlist_pendings *pl,
			size_t *queued)
{
	struct open_mrs l;
	size_t i, k;
	int rc;

	if (open_mrs_load(&l, fm, project)) {
		log_warn("%s: %s", project, err_msg());
		return;
	}
	for (i = 0; i < l.nr; i++) {
		int read = fmlist_recent_seen(rl, l.iid[i]) ||
			   fmlist_pending_find(pl, l.iid[i]);

		for (k = 0; !read && k < rl->nr; k++)
			read = rl->items[k].iid == l.iid[i];
		if (read)
			continue;
		rc = mr_once(fm, project, l.iid[i], 0, queued);
		if (rc)
			log_warn("%s!%lld: %s (its threads read again at the "
				 "next poll)",
				 project, (long long)l.iid[i], err_msg());
	}
}

/* --- every project ---------------------------------------------------------- */

struct pollctx {
	struct forgemail *fm;
	const char *project;
	size_t *queued;
	struct fmlist_pendings *pending;
	struct fmlist_recents *recent;
};

/*
 * One MR of the listing.  A temporary failure does not stop the listing
 * (the MRs after it would wait, their comments unmailed, for as long as
 * it lasts): the MR goes to the pending list, retried on its own, and
 * the watermark moves on.  An MR already pending waits for its retry.
 */
static int on_mr(const struct forge_mr *mr, void *arg)
{
	struct pollctx *p = arg;
	struct fmlist_pendings *pl = p->pending;
	struct fmlist_pending *e;
	int64_t now;
	int rc;

	if (fmlist_pending_find(pl, mr->iid))
		return 0;
	rc = mr_once(p->fm, p->project, mr->iid, 0, p->queued);
	if (!err_is_temporary(rc)) {
		if (mailed(p->fm, p->project, mr->iid))
			fmlist_recent_note(
				p->recent, mr->iid,
				wall_ms() + recent_window_ms(p->fm->cfg));
		return 0;
	}
	now = wall_ms();
	e = fmlist_pending_add(pl, mr->iid, now);
	if (!e)
		return rc; /* the listing stops here, as for a forge outage */
	log_warn("%s!%lld: %s (retried in %lld s; the other merge requests "
		 "go on)",
		 p->project, (long long)mr->iid, err_msg(),
		 (long long)((e->next_ms - now) / 1000));
	return 0;
}

int forgemail_poll(struct forgemail *fm, size_t *queued)
{
	size_t i, n = config_project_count(fm->cfg);
	struct log_ctx_saved saved;
	int rc = 0, first = 0;

	log_ctx_push(&saved, NULL);
	for (i = 0; i < n; i++) {
		const struct config_project *p = config_project_at(fm->cfg, i);
		const char *project = config_project_name(p);
		struct forge_mr_cursor cur;
		struct forge_mr_query q;
		struct fmlist_pendings pl;
		struct fmlist_recents rl;
		struct pollctx pc = { fm, project, queued, &pl, &rl };
		struct buf val = BUF_INIT(STORE_CURSOR_VALUE_MAX);
		char cname[STORE_CURSOR_NAME_MAX], num[32];
		uint64_t ms = 0;
		int r, r2;

		if (!config_project_bool(p, CFG_PROJECT_ENABLED) ||
		    !config_project_bool(p, CFG_OUTBOUND_FORGE_COMMENTS))
			continue;
		log_ctx_set(project);
		snprintf(cname, sizeof(cname), "forgemail:poll:%s", project);
		forge_mr_cursor_init(&cur);
		r = fmlist_pending_load(&pl, fm->store, project);
		if (!r)
			r = fmlist_recent_load(&rl, fm->store, project);
		if (r)
			goto next;
		pending_retry(&pl, fm, project, queued);
		log_ctx_set(project);
		r = store_cursor_get(&val, fm->store, cname);
		if (!r && mem_to_u64(val.data, val.len, INT64_MAX, &ms))
			cur.watermark_ms = (int64_t)ms;
		memset(&q, 0, sizeof(q));
		q.overlap_ms =
			config_duration_ms(fm->cfg, CFG_OUTBOUND_POLL_OVERLAP);
		r = forge_list_mrs(fm->forge, project, &cur, &q, on_mr, &pc);
		if (!r)
			recent_rescan(&rl, fm, project, &pl, queued);
		if (!r)
			open_rescan(fm, project, &rl, &pl, queued);
		log_ctx_set(project);
		if (rl.dropped)
			log_warn("%u merge request(s) changed within [forge] "
				 "touch_interval past the %d read again for "
				 "comments: a comment on them within GitLab's "
				 "minute waits for their next change",
				 rl.dropped, FORGEMAIL_RECENT_MAX);
		/* The pending MRs first: the watermark moves past them. */
		r2 = fmlist_pending_save(&pl, fm->store, project);
		if (!r)
			r = r2;
		r2 = fmlist_recent_save(&rl, fm->store, project);
		if (!r)
			r = r2;
		if (!r && cur.watermark_ms > 0) {
			snprintf(num, sizeof(num), "%lld",
				 (long long)cur.watermark_ms);
			r = store_cursor_set(fm->store, cname, num);
		}
next:
		if (r) {
			log_warn("forge comments of %s: %s", project,
				 err_msg());
			if (!first)
				first = r;
		}
		forge_mr_cursor_release(&cur);
		buf_release(&val);
	}
	log_ctx_pop(&saved);
	rc = first;
	return rc;
}

/* --- pipelines ------------------------------------------------------------ */

/* The largest job log read for its last lines (the rest is not quoted). */
#define FORGEMAIL_TRACE_MAX (8 * 1024 * 1024)

/* Is rev recent enough for its pipelines' results to be mailed? */
static int ci_recent(const struct mrctx *c, const struct store_revision *rev)
{
	int64_t window = FORGEMAIL_CI_WINDOW_S +
			 config_project_duration_ms(
				 c->proj, CFG_PROJECT_PIPELINE_WAIT_MAX) /
				 1000;

	return rev->created >= (int64_t)time(NULL) - window;
}

/* The end of the log of the job that failed first, cleaned (cimail.h);
 * *note says why there is none. */
static int ci_tail(struct buf *tail, const char **note, struct mrctx *c,
		   const struct forge_job *j)
{
	struct buf log = BUF_INIT(FORGEMAIL_TRACE_MAX);
	int rc;

	*note = NULL;
	rc = forge_job_trace(&log, c->fm->forge, c->project, j->id);
	if (rc == PB_ELIMIT || rc == PB_ENOTFOUND || rc == PB_EPERM) {
		log_warn("log of job %lld: %s; mailed without it",
			 (long long)j->id, err_msg());
		*note = "(The job's log could not be read; see its page.)";
		rc = 0;
	} else if (!rc) {
		rc = cimail_log_tail(tail, log.data, log.len);
		if (!rc && !tail->len)
			*note = "(The job's log is empty.)";
	}
	buf_release(&log);
	return rc;
}

/* Mail the result of p, which finished on the head of rev. */
static int ci_result(struct mrctx *c, const struct forge_pipeline *p,
		     const struct store_revision *rev)
{
	int passed = cimail_passed(p->status) == 1;
	struct forge_job_list jobs;
	const struct forge_job *first;
	struct store_mail cover;
	struct buf tail = BUF_INIT(4 * CIMAIL_TAIL_BYTES);
	const char *note = NULL;
	struct outmsg m;
	int64_t ms;
	int rc;

	memset(&jobs, 0, sizeof(jobs));
	store_mail_init(&cover);
	memset(&m, 0, sizeof(m));
	buf_init(&m.body, FORGEMAIL_TEXT_MAX / 2);
	rc = find_cover(&cover, c, rev->revision);
	if (rc == PB_ENOTFOUND) {
		/* Still being mailed: the next reading mails the result. */
		rc = 0;
		goto out;
	}
	/* The MR's title for the subject, read once a mail is due. */
	if (!rc && !c->mr.iid)
		rc = forge_get_mr(&c->mr, c->fm->forge, c->project, c->iid);
	if (!rc && !passed) {
		rc = forge_list_jobs(&jobs, c->fm->forge, c->project, p->id);
		first = rc ? NULL : cimail_first_failed(&jobs);
		if (first)
			rc = ci_tail(&tail, &note, c, first);
	}
	if (rc)
		goto out;
	m.event = passed ? "cipassed" : "cifailed";
	m.event_id = (uint64_t)p->id;
	m.who = "CI";
	m.date = p->updated_at && !forge_time_parse(&ms, p->updated_at) ?
			 ms / 1000 :
			 (int64_t)time(NULL);
	m.parent = &cover;
	m.root = cover.message_id;
	rc = cimail_body(&m.body, p, rev->revision, &jobs, tail.data, note);
	if (!rc)
		rc = queue(c, &m);
	if (!rc)
		log_info("pipeline %lld of v%d %s", (long long)p->id,
			 rev->revision, passed ? "passed" : "failed");
out:
	forge_job_list_release(&jobs);
	buf_release(&tail);
	buf_release(&m.body);
	store_mail_release(&cover);
	return rc;
}

/*
 * The MR's finished pipelines, oldest first, each on the head of a
 * recent mailed revision and not mailed yet: one mail per result (a
 * pipeline retried after it failed has a second result).
 */
static int ci_pipelines(struct mrctx *c)
{
	struct forge_pipeline_list pl;
	struct store_revision rev;
	size_t i;
	int rc;

	rc = forge_list_pipelines(&pl, c->fm->forge, c->project, c->iid);
	store_revision_init(&rev);
	for (i = pl.nr; !rc && i-- > 0;) {
		const struct forge_pipeline *p = &pl.items[i];
		int passed = cimail_passed(p->status);

		if (passed < 0 || !p->sha)
			continue;
		if (mailed_before(c, passed ? "cipassed" : "cifailed",
				  (uint64_t)p->id))
			continue;
		store_revision_release(&rev);
		store_revision_init(&rev);
		rc = store_revision_by_head(&rev, c->fm->store, c->project,
					    c->iid, p->sha);
		if (rc == PB_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (!rc && ci_recent(c, &rev))
			rc = ci_result(c, p, &rev);
	}
	store_revision_release(&rev);
	forge_pipeline_list_release(&pl);
	return rc;
}

int forgemail_pipelines(struct forgemail *fm, const char *project, int64_t iid,
			size_t *queued)
{
	struct log_ctx_saved saved;
	struct mrctx c;
	int rc;

	forge_pause(fm->forge);
	log_ctx_pushf(&saved, "%s!%lld", project, (long long)iid);
	memset(&c, 0, sizeof(c));
	c.fm = fm;
	c.project = project;
	c.iid = iid;
	store_revision_init(&c.latest);
	rc = config_project_get(&c.proj, fm->cfg, project);
	if (rc)
		goto out;
	if (!config_project_bool(c.proj, CFG_PROJECT_ENABLED) ||
	    !config_project_bool(c.proj, CFG_PROJECT_MAIL_PIPELINES))
		goto out;
	rc = store_revision_latest(&c.latest, fm->store, project, iid);
	if (rc == PB_ENOTFOUND) {
		rc = 0;
		goto out;
	}
	if (!rc && !ci_recent(&c, &c.latest))
		goto out;
	if (!rc)
		rc = ci_pipelines(&c);
out:
	if (queued)
		*queued += c.queued;
	forge_version_release(&c.version);
	forge_mr_release(&c.mr);
	store_revision_release(&c.latest);
	log_ctx_pop(&saved);
	return rc;
}

int forgemail_poll_pipelines(struct forgemail *fm, size_t *queued)
{
	size_t i, j, n = config_project_count(fm->cfg);
	struct log_ctx_saved saved;
	int rc = 0;

	log_ctx_push(&saved, NULL);
	for (i = 0; i < n && !rc; i++) {
		const struct config_project *p = config_project_at(fm->cfg, i);
		const char *project = config_project_name(p);
		struct store_revision_list rl;
		int r;

		if (!config_project_bool(p, CFG_PROJECT_ENABLED) ||
		    !config_project_bool(p, CFG_PROJECT_MAIL_PIPELINES))
			continue;
		memset(&rl, 0, sizeof(rl));
		r = store_revision_recent(
			&rl, fm->store, project,
			(int64_t)time(NULL) - FORGEMAIL_CI_WINDOW_S -
				config_project_duration_ms(
					p, CFG_PROJECT_PIPELINE_WAIT_MAX) /
					1000,
			0);
		for (j = 0; !r && j < rl.nr; j++) {
			r = forgemail_pipelines(fm, project, rl.items[j].iid,
						queued);
			if (r && err_is_temporary(r)) {
				log_warn("pipelines of %s!%lld: %s", project,
					 (long long)rl.items[j].iid, err_msg());
				r = 0;
			}
		}
		if (r) {
			log_warn("pipelines of %s: %s", project, err_msg());
			rc = r;
		}
		store_revision_list_release(&rl);
	}
	log_ctx_pop(&saved);
	return rc;
}
