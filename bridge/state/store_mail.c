/*
 * store_mail - the thread map: every mail the bridge made, its copy
 * on another store, and core/threadmap.h over it.  See store_mail.h.
 */

#include "state/storeq.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mail_kind_names[] = {
	[STORE_MAIL_COVER] = "cover",
	[STORE_MAIL_PATCH] = "patch",
	[STORE_MAIL_FORGE_COMMENT] = "forge-comment",
	[STORE_MAIL_RECEIPT] = "receipt",
};

static const char *const mail_state_names[] = {
	[STORE_MAIL_PENDING] = "pending",
	[STORE_MAIL_SENT] = "sent",
};

static const char *const sent_how_names[] = {
	[STORE_SENT_MTA] = "mta",
	[STORE_SENT_ARCHIVE] = "archive",
	[STORE_SENT_LATE] = "late",
};

/* Thread map. */

#define MAIL(k, ...) COL_##k(struct store_mail, __VA_ARGS__)
/* A row of MAIL_READ_COLS. */
static const struct col mail_cols[] = {
	[MC_MSGID] = MAIL(TEXT, message_id),
	[MC_PROJECT] = MAIL(TEXT, project),
	[MC_IID] = MAIL(INT, iid),
	[MC_REVISION] = MAIL(INT, revision),
	[MC_PATCH] = MAIL(INT, patch),
	[MC_TOTAL] = MAIL(INT, total),
	[MC_KIND] = MAIL(ENUM, kind, mail_kind_names),
	[MC_COMMIT] = MAIL(TEXT, commit_sha),
	[MC_BASE] = MAIL(TEXT, base_sha),
	[MC_START] = MAIL(TEXT, start_sha),
	[MC_HEAD] = MAIL(TEXT, head_sha),
	[MC_VERSION] = MAIL(INT, version_id),
	[MC_DIFF] = MAIL(BLOB, diff, diff_len),
	[MC_DISCUSSION] = MAIL(TEXT, discussion_id),
	[MC_NOTE] = MAIL(INT, note_id),
	[MC_STATE] = MAIL(ENUM, state, mail_state_names),
	[MC_CREATED] = MAIL(INT, created),
	[MC_SENT] = MAIL(INT, sent),
	[MC_SENT_BY] = MAIL(TEXT, sent_by),
	/* NULL: the MTA's answer, as every row from before schema 8 */
	[MC_SENT_HOW] = MAIL(ENUM_NULL, sent_how, sent_how_names),
};
static const struct row_type mail_row = ROW_TYPE(struct store_mail, mail_cols);

/* store_mail_init(), _release() and _list_release() */
ROW_FUNCTIONS(mail, mail_row);

const char *store_mail_kind_name(enum store_mail_kind kind)
{
	return name_of(mail_kind_names, ARRAY_SIZE(mail_kind_names),
		       (size_t)kind);
}

static int mail_check(const struct store_mail *m)
{
	int rc, series;

	if ((rc = check_str("Message-ID", m->message_id, STORE_MSGID_MAX, 1)) ||
	    /* a receipt of no merge request: the notice to the sender
	     * of a series that became none (schema 12) */
	    (rc = m->kind == STORE_MAIL_RECEIPT && m->iid == 0 ?
			  check_str("project", m->project, STORE_PROJECT_MAX,
				    1) :
			  check_mr(m->project, m->iid)) ||
	    (rc = check_sha("commit", m->commit_sha, 0)) ||
	    (rc = check_sha("base sha", m->base_sha, 0)) ||
	    (rc = check_sha("start sha", m->start_sha, 0)) ||
	    (rc = check_sha("head sha", m->head_sha, 0)) ||
	    (rc = check_str("discussion id", m->discussion_id,
			    STORE_FORGE_ID_MAX, 0)))
		return rc;
	if ((size_t)m->kind >= ARRAY_SIZE(mail_kind_names) ||
	    (size_t)m->state >= ARRAY_SIZE(mail_state_names))
		return err_set(PB_EINVAL, "state db: bad mail kind or state");
	if (m->revision < 0 || m->patch < 0 || m->total < 0 ||
	    m->patch > m->total || m->version_id < 0 || m->note_id < 0)
		return err_set(PB_EINVAL,
			       "state db: bad mail numbers (v%d %d/%d)",
			       m->revision, m->patch, m->total);
	series = m->kind == STORE_MAIL_COVER || m->kind == STORE_MAIL_PATCH;
	if (series && (m->revision == 0 ||
		       (m->kind == STORE_MAIL_COVER) != (m->patch == 0)))
		return err_set(PB_EINVAL,
			       "state db: a %s mail cannot be v%d %d/%d",
			       mail_kind_names[m->kind], m->revision, m->patch,
			       m->total);
	if ((!m->diff && m->diff_len) || m->diff_len > STORE_DIFF_MAX)
		return err_set(PB_EINVAL, "state db: bad diff (%zu bytes)",
			       m->diff_len);
	return 0;
}

/* The columns of a thread-map row but its times and sender host. */
static void bind_mail(struct query *q, const struct store_mail *m)
{
	q_text(q, 1 + MC_MSGID, m->message_id);
	q_text(q, 1 + MC_PROJECT, m->project);
	q_int(q, 1 + MC_IID, m->iid);
	q_int_or_null(q, 1 + MC_REVISION, m->revision);
	q_int(q, 1 + MC_PATCH, m->patch);
	q_int(q, 1 + MC_TOTAL, m->total);
	q_text(q, 1 + MC_KIND, mail_kind_names[m->kind]);
	q_opt(q, 1 + MC_COMMIT, m->commit_sha);
	q_opt(q, 1 + MC_BASE, m->base_sha);
	q_opt(q, 1 + MC_START, m->start_sha);
	q_opt(q, 1 + MC_HEAD, m->head_sha);
	q_int_or_null(q, 1 + MC_VERSION, m->version_id);
	q_textn(q, 1 + MC_DIFF, m->diff, m->diff_len);
	q_opt(q, 1 + MC_DISCUSSION, m->discussion_id);
	q_int_or_null(q, 1 + MC_NOTE, m->note_id);
	q_text(q, 1 + MC_STATE, mail_state_names[m->state]);
}

int store_mail_put(struct store *st, const struct store_mail *m)
{
	struct query q;
	int64_t t = now();
	int rc;

	rc = mail_check(m);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_MAIL_PUT, "record mail");
	if (rc)
		return rc;
	bind_mail(&q, m);
	q_int(&q, 1 + MC_CREATED, t);
	if (m->state == STORE_MAIL_SENT) {
		q_int(&q, 1 + MC_SENT, m->sent ? m->sent : t);
		q_text(&q, 1 + MC_SENT_BY, st->host);
	} else {
		q_int_or_null(&q, 1 + MC_SENT, 0);
		q_text(&q, 1 + MC_SENT_BY, NULL);
	}
	rc = q_exec(&q);
	if (!rc && q.changes == 0) {
		char qb[PB_LOG_QUOTE_MAX];

		rc = err_set(PB_EEXISTS, "state db: mail <%s> already recorded",
			     quote(qb, sizeof(qb), m->message_id));
	}
	q_end(&q);
	return rc;
}

const char *store_sent_how_name(enum store_sent_how how)
{
	return name_of(sent_how_names, ARRAY_SIZE(sent_how_names), (size_t)how);
}

int mail_mark_sent(struct store *st, const char *message_id,
		   enum store_sent_how how)
{
	struct query q;
	int rc;

	rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);
	if (rc)
		return rc;
	if ((size_t)how >= ARRAY_SIZE(sent_how_names))
		return err_set(PB_EINVAL,
			       "state db: no such way of knowing "
			       "a mail was sent: %d",
			       (int)how);
	rc = q_start(&q, st, S_MAIL_MARK_SENT, "mark mail sent");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	q_int(&q, 2, now());
	q_text(&q, 3, st->host);
	/* the usual case stays NULL, as every row from before schema 8 */
	q_opt(&q, 4, how == STORE_SENT_MTA ? NULL : sent_how_names[how]);
	rc = q_exec(&q);
	if (!rc && q.changes == 0) {
		char qb[PB_LOG_QUOTE_MAX];

		rc = err_set(PB_ENOTFOUND, "state db: no mail <%s>",
			     quote(qb, sizeof(qb), message_id));
	}
	q_end(&q);
	return rc;
}

int store_mail_mark_sent(struct store *st, const char *message_id)
{
	return mail_mark_sent(st, message_id, STORE_SENT_MTA);
}

int store_mail_last_sent(int64_t *out, struct store *st)
{
	struct query q;
	int rc;

	*out = 0;
	rc = q_start(&q, st, S_MAIL_LAST_SENT, "find the last mail sent");
	if (rc)
		return rc;
	return q_scalar(&q, out);
}

/* Fetch at most one mail row of a started query into out. */
static int mail_one(struct store_mail *out, struct query *q,
		    const char *missing)
{
	int rc = row_get(&mail_row, out, q);

	if (rc == 0)
		rc = err_set(PB_ENOTFOUND, "state db: %s", missing);
	return rc < 0 ? rc : 0;
}

int store_mail_get(struct store_mail *out, struct store *st,
		   const char *message_id)
{
	char qb[PB_LOG_QUOTE_MAX], missing[PB_LOG_QUOTE_MAX + 32];
	struct query q;
	int rc;

	rc = q_start_msgid(&q, st, S_MAIL_GET, "look up mail", message_id);
	if (rc)
		return rc;
	snprintf(missing, sizeof(missing), "no mail <%s>",
		 quote(qb, sizeof(qb), message_id));
	return mail_one(out, &q, missing);
}

int store_mail_find(struct store_mail *out, struct store *st,
		    const char *project, int64_t iid, int revision, int patch)
{
	char missing[PB_LOG_QUOTE_MAX + 64], qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	rc = q_start_mr(&q, st, S_MAIL_FIND, "find mail", project, iid);
	if (rc)
		return rc;
	q_int(&q, 3, revision);
	q_int(&q, 4, patch);
	snprintf(missing, sizeof(missing), "no mail %s!%lld v%d %d",
		 quote(qb, sizeof(qb), project), (long long)iid, revision,
		 patch);
	return mail_one(out, &q, missing);
}

int store_mail_list_revision(struct store_mail_list *out, struct store *st,
			     const char *project, int64_t iid, int revision)
{
	struct query q;
	int rc;

	rc = q_start_mr(&q, st, S_MAIL_LIST_REVISION, "list mails", project,
			iid);
	if (rc)
		return rc;
	q_int(&q, 3, revision);
	ROW_LIST_READ(rc, &mail_row, out, &q);
	q_end(&q);
	return rc;
}

/* ---- the thread map's copy on another store ---------------------------- */

/* One page of the thread map after (created, message_id), in order. */
static int mail_page(struct store_mail_list *out, struct store *st,
		     int64_t created, const char *after, int64_t limit)
{
	struct query q;
	int rc;

	rc = q_start(&q, st, S_MAIL_SINCE, "list the thread map");
	if (rc)
		return rc;
	q_int(&q, 1, created);
	q_text(&q, 2, after);
	q_int(&q, 3, limit);
	ROW_LIST_READ(rc, &mail_row, out, &q);
	q_end(&q);
	return rc;
}

static int mirror_mail(struct store *dst, const struct store_mail *m)
{
	struct query q;
	int rc;

	rc = q_start(&q, dst, S_MIRROR_MAIL, "copy a mail");
	if (rc)
		return rc;
	bind_mail(&q, m);
	q_int(&q, 1 + MC_CREATED, m->created);
	q_int_or_null(&q, 1 + MC_SENT, m->sent);
	q_opt(&q, 1 + MC_SENT_BY, m->sent_by);
	rc = q_exec(&q);
	q_end(&q);
	if (rc)
		return rc;
	rc = q_start(&q, dst, S_MIRROR_MAIL_STATE, "copy a mail's state");
	if (rc)
		return rc;
	q_text(&q, 1, m->message_id);
	q_text(&q, 2, mail_state_names[m->state]);
	q_int_or_null(&q, 3, m->sent);
	q_opt(&q, 4, m->sent_by);
	rc = q_exec(&q);
	q_end(&q);
	return rc;
}

/* One page into dst, in one transaction, with the revisions it names. */
static int mirror_page(struct store *dst, struct store *src,
		       const struct store_mail_list *page)
{
	struct store_revision rev;
	size_t i;
	int rc;

	store_revision_init(&rev);
	rc = store_begin(dst);
	if (rc)
		return rc;
	for (i = 0; !rc && i < page->nr; i++) {
		const struct store_mail *m = &page->items[i];

		if (m->revision > 0 &&
		    (!rev.project || strcmp(rev.project, m->project) ||
		     rev.iid != m->iid || rev.revision != m->revision)) {
			rc = store_revision_get(&rev, src, m->project, m->iid,
						m->revision);
			if (!rc)
				rc = revision_mirror(dst, &rev);
		}
		if (!rc)
			rc = mirror_mail(dst, m);
	}
	store_revision_release(&rev);
	if (rc) {
		store_rollback(dst);
		return rc;
	}
	return store_commit(dst);
}

int store_threadmap_mirror(struct store *dst, struct store *src, int64_t *since,
			   size_t *copied)
{
	struct store_mail_list page = { 0 };
	int64_t created = *since > 0 ? *since : 0, newest = *since;
	char *after = xstrdup("");
	size_t n = 0;
	int rc;

	if (dst->flags != STORE_RW)
		BUG("store_threadmap_mirror into a read-only store");
	for (;;) {
		store_mail_list_release(&page);
		rc = mail_page(&page, src, created, after, STORE_MIRROR_PAGE);
		if (rc || !page.nr)
			break;
		rc = mirror_page(dst, src, &page);
		if (rc)
			break;
		n += page.nr;
		created = page.items[page.nr - 1].created;
		free(after);
		after = xstrdup(page.items[page.nr - 1].message_id);
		if (created > newest)
			newest = created;
		if (page.nr < STORE_MIRROR_PAGE)
			break;
	}
	store_mail_list_release(&page);
	free(after);
	if (copied)
		*copied = n;
	if (!rc)
		*since = newest;
	return rc;
}

int store_mail_by_discussion(struct store_mail *out, struct store *st,
			     const char *project, const char *discussion_id)
{
	char missing[PB_LOG_QUOTE_MAX + 64], qb[PB_LOG_QUOTE_MAX];
	struct query q;
	int rc;

	if ((rc = check_str("project", project, STORE_PROJECT_MAX, 1)) ||
	    (rc = check_str("discussion id", discussion_id, STORE_FORGE_ID_MAX,
			    1)))
		return rc;
	rc = q_start(&q, st, S_MAIL_BY_DISCUSSION, "find discussion mail");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_text(&q, 2, discussion_id);
	snprintf(missing, sizeof(missing), "no mail for discussion %s",
		 quote(qb, sizeof(qb), discussion_id));
	return mail_one(out, &q, missing);
}

int store_mail_by_note(struct store_mail *out, struct store *st,
		       const char *project, int64_t note_id)
{
	char missing[64];
	struct query q;
	int rc;

	rc = check_str("project", project, STORE_PROJECT_MAX, 1);
	if (rc)
		return rc;
	rc = q_start(&q, st, S_MAIL_BY_NOTE, "find note mail");
	if (rc)
		return rc;
	q_text(&q, 1, project);
	q_int(&q, 2, note_id);
	snprintf(missing, sizeof(missing), "no mail for note %lld",
		 (long long)note_id);
	return mail_one(out, &q, missing);
}

/* The thread map interface (core/threadmap.h) over the store. */

static void tm_mail_copy(struct threadmap_mail *out, const struct store_mail *m)
{
	threadmap_mail_release(out);
	out->message_id = xstrdup(m->message_id ? m->message_id : "");
	out->project = xstrdup(m->project ? m->project : "");
	out->iid = m->iid;
	out->revision = m->revision;
	out->patch = m->patch;
	out->total = m->total;
	if (m->diff && m->diff_len) {
		out->diff = xmalloc(m->diff_len + 1);
		memcpy(out->diff, m->diff, m->diff_len);
		out->diff[m->diff_len] = '\0';
		out->diff_len = m->diff_len;
	}
}

static int tm_mail_get(void *arg, struct threadmap_mail *out,
		       const char *message_id)
{
	struct store_mail m;
	int rc;

	store_mail_init(&m);
	rc = store_mail_get(&m, arg, message_id);
	if (!rc)
		tm_mail_copy(out, &m);
	store_mail_release(&m);
	return rc;
}

static int tm_mail_find(void *arg, struct threadmap_mail *out,
			const char *project, int64_t iid, int revision,
			int patch)
{
	struct store_mail m;
	int rc;

	store_mail_init(&m);
	rc = store_mail_find(&m, arg, project, iid, revision, patch);
	if (!rc)
		tm_mail_copy(out, &m);
	store_mail_release(&m);
	return rc;
}

static void tm_revision_copy(struct threadmap_revision *out,
			     const struct store_revision *r)
{
	threadmap_revision_release(out);
	out->project = xstrdup(r->project ? r->project : "");
	out->iid = r->iid;
	out->revision = r->revision;
	out->patches = r->patches;
}

static int tm_revision_latest(void *arg, struct threadmap_revision *out,
			      const char *project, int64_t iid)
{
	struct store_revision r;
	int rc;

	store_revision_init(&r);
	rc = store_revision_latest(&r, arg, project, iid);
	if (!rc)
		tm_revision_copy(out, &r);
	store_revision_release(&r);
	return rc;
}

static int tm_revision_list(void *arg, struct threadmap_revision_list *out)
{
	struct store_revision_list list = { 0 };
	struct threadmap_revision r;
	size_t i;
	int rc;

	rc = store_revision_list(&list, arg, NULL, 0);
	threadmap_revision_init(&r);
	for (i = 0; !rc && i < list.nr; i++) {
		tm_revision_copy(&r, &list.items[i]);
		threadmap_revision_list_take(out, &r);
	}
	store_revision_list_release(&list);
	return rc;
}

void store_threadmap(struct threadmap *out, struct store *st)
{
	out->mail_get = tm_mail_get;
	out->mail_find = tm_mail_find;
	out->revision_latest = tm_revision_latest;
	out->revision_list = tm_revision_list;
	out->arg = st;
}
