#include "outbound/emailmr.h"

#include "forge/forge.h"
#include "mail/mail.h"
#include "mail/mailinfo.h"
#include "mail/review.h"
#include "mail/subject.h"
#include "outbound/emailattest.h"
#include "state/store.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/hashmap.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Lower-case letters and digits of s, other runs one dash, at most max
 * bytes; "x" when nothing is left. */
static void slug(struct buf *out, const char *s, size_t max)
{
	size_t n = 0;
	int dash = 0;

	for (; s && *s && n < max; s++) {
		int c = tolower((unsigned char)*s);

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
			dash = 1;
			continue;
		}
		if (dash && n && n + 1 < max) {
			buf_addch(out, '-');
			n++;
		}
		dash = 0;
		buf_addch(out, c);
		n++;
	}
	if (!n)
		buf_addch(out, 'x');
}

int emailmr_branch(char *out, size_t size, const char *prefix,
		   const char *sender, const char *title, const char *series_id)
{
	struct buf b = BUF_INIT(EMAILMR_BRANCH_MAX);
	const char *at = strrchr(sender, '@');
	char *local = at ? xstrndup(sender, (size_t)(at - sender)) :
			   xstrdup(sender);
	char *ref = NULL;
	int rc;

	buf_adds(&b, prefix);
	slug(&b, local, 40);
	buf_addch(&b, '/');
	slug(&b, title, 40);
	buf_addf(&b, "-%08x", (unsigned)hash_fnv1a_str(series_id));
	rc = buf_error(&b);
	if (!rc) {
		ref = xasprintf("refs/heads/%s", b.data);
		if (!gitrepo_ref_name_valid(ref) || b.len >= size)
			rc = err_set(PB_EINVAL,
				     "bad branch name for a series "
				     "(prefix \"%s\")",
				     prefix);
	} else {
		rc = err_set(PB_EINVAL, "branch name too long");
	}
	if (!rc)
		memcpy(out, b.data, b.len + 1);
	free(ref);
	free(local);
	buf_release(&b);
	return rc;
}

/* A Message-ID as the thread map keeps it: without "<" and ">". */
static char *bare_id(const char *id)
{
	size_t n = strlen(id);

	if (n >= 2 && id[0] == '<' && id[n - 1] == '>')
		return xstrndup(id + 1, n - 2);
	return xstrdup(id);
}

/* A "base-commit: SHA" line (git format-patch --base) in raw, or "". */
static void base_commit_of(char out[GITREPO_HEXSZ + 1], const char *raw,
			   size_t len)
{
	const char *p = raw, *end = raw + len;
	size_t i;

	while ((p = mem_find(p, (size_t)(end - p), "\nbase-commit: ", 14))) {
		p += 14;
		for (i = 0; i < GITREPO_HEXSZ && p + i < end &&
			    isxdigit((unsigned char)p[i]);
		     i++)
			;
		if (i == GITREPO_HEXSZ &&
		    (p + i == end || p[i] == '\n' || p[i] == '\r')) {
			memcpy(out, p, GITREPO_HEXSZ);
			out[GITREPO_HEXSZ] = '\0';
			return;
		}
	}
	out[0] = '\0';
}

/* What the merge request says: title, and the description's text. */
struct mr_text {
	struct buf title;
	struct buf body;
	char *name, *email; /* who sent it */
};

/* The cover letter's subject and text (its signature left out). */
static int cover_text(struct mr_text *t, const char *raw, size_t len)
{
	struct mail *m = NULL;
	const char *sig;
	size_t n;
	int rc = mail_parse(&m, raw, len, NULL);

	if (rc)
		return rc;
	rc = mailinfo_clean_subject(&t->title, m->subject, strlen(m->subject));
	n = m->text.len;
	sig = m->text.len >= 4 && !memcmp(m->text.data, "-- \n", 4) ?
		      m->text.data :
		      mem_find(m->text.data, n, "\n-- \n", 5);
	if (sig)
		n = (size_t)(sig - m->text.data) + (sig != m->text.data);
	if (!rc)
		rc = buf_add(&t->body, m->text.data, n);
	buf_rtrim(&t->body);
	t->name = xstrdup(m->from.name);
	t->email = xstrdup(m->from.email);
	mail_free(m);
	return rc;
}

/* A single patch: its title, and its message below the title. */
static int patch_text(struct mr_text *t, const struct mailinfo *mi)
{
	const char *p = mi->message.data;
	const char *nl = strchr(p, '\n');

	buf_sets(&t->title, mi->subject);
	if (nl)
		buf_adds(&t->body, nl + 1 + (nl[1] == '\n'));
	buf_rtrim(&t->body);
	t->name = xstrdup(mi->name);
	t->email = xstrdup(mi->email);
	return buf_error(&t->title) ? buf_error(&t->title) :
				      buf_error(&t->body);
}

struct series {
	struct store_submission sub;
	struct store_submitted_list mails;
	struct mailinfo *mi; /* mails.items[i] read, for patches */
	struct gitrepo_am_patch *am;
	size_t nr_patches;
	const struct store_submitted *cover; /* or NULL */
};

static void series_release(struct series *s)
{
	size_t i;

	for (i = 0; s->mi && i < s->mails.nr; i++)
		mailinfo_release(&s->mi[i]);
	free(s->mi);
	free(s->am);
	store_submitted_list_release(&s->mails);
	store_submission_release(&s->sub);
}

static int series_read(struct series *s, struct store *st, const char *id)
{
	size_t i;
	int rc;

	memset(s, 0, sizeof(*s));
	store_submission_init(&s->sub);
	rc = store_submission_get(&s->sub, st, id);
	if (!rc && s->sub.state != STORE_SUBMISSION_WHOLE &&
	    s->sub.state != STORE_SUBMISSION_OPENED)
		rc = err_set(PB_ENOTFOUND, "the series is %s, not whole",
			     store_submission_state_name(s->sub.state));
	if (!rc)
		rc = store_submission_mails(&s->mails, st, id);
	if (rc)
		return rc;
	s->mi = xcalloc(s->mails.nr, sizeof(*s->mi));
	s->am = xcalloc(s->mails.nr, sizeof(*s->am));
	for (i = 0; i < s->mails.nr; i++) {
		const struct store_submitted *m = &s->mails.items[i];
		struct gitrepo_am_patch *p;
		struct mailinfo *mi = &s->mi[i];

		mailinfo_init(mi);
		if (m->patch == 0) {
			s->cover = m;
			continue;
		}
		rc = mailinfo_read(mi, m->message, m->message_len);
		if (rc)
			return err_prefix(rc, "patch %d/%d", m->patch,
					  s->sub.total);
		p = &s->am[s->nr_patches++];
		p->author.name = mi->name;
		p->author.email = mi->email;
		p->author.time = mi->time;
		p->author.tz_minutes = mi->tz_minutes;
		p->message = mi->message.data;
		p->patch = mi->patch.data;
		p->patch_len = mi->patch.len;
	}
	return 0;
}

/* The base: a "base-commit:" the mirror has, else the target. */
static void pick_base(char out[GITREPO_HEXSZ + 1], const struct series *s,
		      const struct emailmr_ctx *c)
{
	char found[GITREPO_HEXSZ + 1];
	size_t i;

	for (i = s->mails.nr; i-- > 0;) {
		base_commit_of(found, s->mails.items[i].message,
			       s->mails.items[i].message_len);
		if (found[0] && gitrepo_has_commit(c->repo, found)) {
			memcpy(out, found, sizeof(found));
			return;
		}
	}
	snprintf(out, GITREPO_HEXSZ + 1, "%s", c->target_sha);
}

/* The forge's diff version of head (GitLab's base, start and head of
 * the MR's diff: what diff notes are placed in), when it has one yet. */
struct version_shas {
	char base[GITREPO_HEXSZ + 1], start[GITREPO_HEXSZ + 1];
	int64_t id;
};

static void forge_version_of(struct version_shas *v,
			     const struct emailmr_ctx *c, int64_t iid,
			     const char *base, const char *head)
{
	struct forge_version_list vl;
	size_t i;

	snprintf(v->base, sizeof(v->base), "%s", base);
	snprintf(v->start, sizeof(v->start), "%s", base);
	v->id = 0;
	memset(&vl, 0, sizeof(vl));
	if (forge_list_versions(&vl, c->forge, c->project, iid))
		return; /* logged by the caller's next step if it matters */
	for (i = 0; i < vl.nr; i++) {
		const struct forge_version *fv = &vl.items[i];

		if (!fv->head_sha || strcmp(fv->head_sha, head) ||
		    !fv->base_sha || !fv->start_sha)
			continue;
		snprintf(v->base, sizeof(v->base), "%s", fv->base_sha);
		snprintf(v->start, sizeof(v->start), "%s", fv->start_sha);
		v->id = fv->id;
		break;
	}
	forge_version_list_release(&vl);
}

/*
 * The merge request of the version this one follows: a vN (N > 1) whose
 * first mail (the cover letter, else patch 1) answers the first mail of
 * a series of the same sender and project, of a lower version, opened as
 * a merge request - git send-email --in-reply-to, as contributors send a
 * new version.  0 when there is none.
 */
static int64_t earlier_mr(const struct emailmr_ctx *c, const struct series *s)
{
	const struct store_submitted *first = s->mails.nr ? &s->mails.items[0] :
							    NULL;
	struct store_submission prev;
	struct mail *m = NULL;
	char *id = NULL;
	int64_t iid = 0;

	if (s->sub.version < 2 || !first ||
	    mail_parse(&m, first->message, first->message_len, NULL))
		return 0;
	if (m->in_reply_to)
		id = bare_id(m->in_reply_to);
	mail_free(m);
	store_submission_init(&prev);
	if (id && !store_submission_get(&prev, c->st, id) &&
	    prev.state == STORE_SUBMISSION_OPENED && prev.iid > 0 &&
	    !strcmp(prev.sender, s->sub.sender) &&
	    !strcmp(prev.project, c->project) && prev.version < s->sub.version)
		iid = prev.iid;
	store_submission_release(&prev);
	free(id);
	return iid;
}

/* How many of a sender's opened series a next version is compared with,
 * the last finished first. */
#define TOPIC_LOOKBACK 50
/* A change-id kept, at most (b4 writes "DATE-SLUG-HASH", 40 or so). */
#define CHANGE_ID_MAX 128

/* What names a topic over its versions, as b4 finds a series' earlier
 * revisions: the "change-id:" line b4 writes in the cover letter (in the
 * patch itself when it is a single one), else the title: the subject
 * of the cover letter, or of patch 1, cleaned of its [PATCH ...]. */
struct topic {
	char change_id[CHANGE_ID_MAX + 1]; /* "" when none */
	struct buf title;
};

/* A "change-id: ID" line of raw's text (below its header), or "". */
static void change_id_of(char *out, const char *raw, size_t len)
{
	const char *p = raw, *end = raw + len, *body;
	size_t n;

	out[0] = '\0';
	body = mem_find(raw, len, "\n\n", 2);
	if (!body)
		body = mem_find(raw, len, "\r\n\r\n", 4);
	if (!body)
		return;
	for (p = body + 1; p < end; p++) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			eol = end;
		if ((size_t)(eol - p) > 10 &&
		    !strncasecmp(p, "change-id:", 10)) {
			p += 10;
			while (p < eol && (*p == ' ' || *p == '\t'))
				p++;
			for (n = 0; p + n < eol && n < CHANGE_ID_MAX &&
				    (unsigned char)p[n] > ' ' && p[n] != 0x7f;
			     n++)
				;
			if (n && n < CHANGE_ID_MAX &&
			    (p + n == eol || p[n] == '\r' || p[n] == ' ')) {
				memcpy(out, p, n);
				out[n] = '\0';
			}
			return;
		}
		p = eol;
	}
}

/* The topic of a series, of its first mail (the cover letter, else
 * patch 1) and its length. */
static int topic_read(struct topic *tp, const struct store_submitted *first,
		      int total)
{
	struct mail *m = NULL;
	int rc;

	tp->change_id[0] = '\0';
	buf_reset(&tp->title);
	rc = mail_parse(&m, first->message, first->message_len, NULL);
	if (rc)
		return rc;
	rc = mailinfo_clean_subject(&tp->title, m->subject, strlen(m->subject));
	mail_free(m);
	if (first->patch == 0 || total == 1)
		change_id_of(tp->change_id, first->message, first->message_len);
	return rc;
}

/* Whether b is the topic of a: the change-id when a has one (a
 * different one, or none, is another topic), else the same title. */
static int same_topic(const struct topic *a, const struct topic *b)
{
	if (a->change_id[0])
		return !strcmp(a->change_id, b->change_id);
	return !b->change_id[0] && a->title.len &&
	       a->title.len == b->title.len &&
	       !strcmp(a->title.data, b->title.data);
}

/* The merge request iid is open, and from a branch under the prefix. */
static int mr_open_by_email(const struct emailmr_ctx *c, int64_t iid)
{
	struct forge_mr mr;
	int open;

	memset(&mr, 0, sizeof(mr));
	if (forge_get_mr(&mr, c->forge, c->project, iid))
		return 0;
	open = mr.state && !strcmp(mr.state, "opened") && mr.source_branch &&
	       !strncmp(mr.source_branch, c->branch_prefix,
			strlen(c->branch_prefix));
	forge_mr_release(&mr);
	return open;
}

/*
 * The merge request a next version (v2 or later) updates: the one of
 * the version it answers (earlier_mr()), else the one of the same
 * sender's topic (struct topic) that is still open.  Then it must be
 * newer than every version that merge request took: one that is not
 * (a v2 after v3, the same v2 sent again under other Message-IDs)
 * updates nothing, and is marked failed.  *iid 0: a merge request of
 * its own.
 */
static int tell_failed(const struct emailmr_ctx *c, const struct series *s,
		       size_t failed, const char *base, const char *msg);
static int tell_stale(const struct emailmr_ctx *c, const struct series *s,
		      int64_t iid, int latest);

static int next_version_mr(int64_t *iid, const struct emailmr_ctx *c,
			   const struct series *s, const char *safe)
{
	struct store_submission_list opened = { NULL, 0, 0 };
	struct topic mine = { "", BUF_INIT(SUBJECT_MAX) };
	struct topic theirs = { "", BUF_INIT(SUBJECT_MAX) };
	int latest = 0, rc = 0;
	size_t i;

	*iid = 0;
	if (s->sub.version < 2 || !s->mails.nr)
		return 0;
	*iid = earlier_mr(c, s);
	rc = store_submission_list_opened(&opened, c->st, c->project,
					  s->sub.sender, TOPIC_LOOKBACK);
	if (!rc && !*iid)
		rc = topic_read(&mine, &s->mails.items[0], s->sub.total);
	for (i = 0; !rc && !*iid && i < opened.nr; i++) {
		const struct store_submission *o = &opened.items[i];
		struct store_submitted first;

		if (!strcmp(o->series_id, s->sub.series_id) || o->iid < 1)
			continue;
		store_submitted_init(&first);
		rc = store_submission_first(&first, c->st, o->series_id);
		if (!rc)
			rc = topic_read(&theirs, &first, o->total);
		if (!rc && same_topic(&mine, &theirs) &&
		    mr_open_by_email(c, o->iid)) {
			*iid = o->iid;
			log_info("%s: series <%s> (v%d) is the topic of !%lld "
				 "(by its %s)",
				 c->project, safe, s->sub.version,
				 (long long)o->iid,
				 mine.change_id[0] ? "change-id" : "title");
		}
		store_submitted_release(&first);
	}
	for (i = 0; !rc && *iid && i < opened.nr; i++)
		if (opened.items[i].iid == *iid &&
		    strcmp(opened.items[i].series_id, s->sub.series_id) &&
		    opened.items[i].version > latest)
			latest = opened.items[i].version;
	if (!rc && *iid && s->sub.version <= latest) {
		if (s->sub.state == STORE_SUBMISSION_WHOLE) {
			/* the sender told first: a failure to queue the
			 * notice tries the series again */
			rc = tell_stale(c, s, *iid, latest);
			if (rc)
				goto out;
			(void)store_submission_finish(c->st, s->sub.series_id,
						      STORE_SUBMISSION_FAILED,
						      0);
		}
		rc = err_set(PB_EINVAL,
			     "series <%s>: v%d is not newer than v%d, which "
			     "%s!%lld has taken",
			     safe, s->sub.version, latest, c->project,
			     (long long)*iid);
		*iid = 0;
	}
out:
	store_submission_list_release(&opened);
	buf_release(&mine.title);
	buf_release(&theirs.title);
	return rc;
}

/*
 * Who opens the merge request: the sender's forge user (*user) when
 * c->map_user maps the sender's address to one and every mail of the
 * series is verified under c->ro, as an approval's sender must be;
 * else NULL, the bridge.  users (owner) keeps the name.
 */
static const char *opener(const struct emailmr_ctx *c, const struct series *s,
			  const struct emailattest *att, struct strlist *users)
{
	char user[EMAILMR_USER_MAX + 1];
	size_t i;

	if (!c->map_user || !c->ro || att->nr != s->mails.nr)
		return NULL;
	for (i = 0; i < att->nr; i++)
		if (!att->mails[i].verified)
			return NULL;
	user[0] = '\0';
	if (c->map_user(user, sizeof(user), c->project, s->sub.sender,
			c->map_arg)) {
		log_warn("%s: the forge user of %s: %s; the bridge opens the "
			 "merge request",
			 c->project, s->sub.sender, err_msg());
		return NULL;
	}
	return user[0] ? strlist_push(users, user) : NULL;
}

/* The thread map: the series' mails as the MR's next revision (1 for
 * a new MR). */
static int map_series(const struct emailmr_ctx *c, const struct series *s,
		      int64_t iid, const char *applied_on, const char *head)
{
	struct version_shas v;
	struct store_revision rev;
	struct store_mail m;
	char *cover = s->cover ? bare_id(s->cover->message_id) : NULL;
	char commit[GITREPO_HEXSZ + 1], spec[GITREPO_HEXSZ + 32];
	int revision = 0, rc;
	size_t i, k = 0;

	forge_version_of(&v, c, iid, applied_on, head);
	memset(&rev, 0, sizeof(rev));
	rev.project = c->project;
	rev.iid = iid;
	rev.head_sha = head;
	rev.base_sha = v.base;
	rev.start_sha = v.start;
	rev.version_id = v.id;
	rev.patches = (int)s->nr_patches;
	rev.cover_msgid = cover;
	rc = store_revision_start(&revision, c->st, &rev);
	if (rc == PB_EEXISTS)
		rc = 0; /* a run before this one got that far */
	for (i = 0; !rc && i < s->mails.nr; i++) {
		const struct store_submitted *sm = &s->mails.items[i];
		char *id = bare_id(sm->message_id);

		commit[0] = '\0';
		if (sm->patch) {
			snprintf(spec, sizeof(spec), "%s~%zu", head,
				 s->nr_patches - ++k);
			rc = gitrepo_resolve(commit, c->repo, spec);
		}
		store_mail_init(&m);
		m.message_id = id;
		m.project = c->project;
		m.iid = iid;
		m.revision = revision;
		m.patch = sm->patch;
		m.total = (int)s->nr_patches;
		m.kind = sm->patch ? STORE_MAIL_PATCH : STORE_MAIL_COVER;
		m.commit_sha = commit[0] ? commit : NULL;
		m.base_sha = v.base;
		m.start_sha = v.start;
		m.head_sha = head;
		m.version_id = v.id;
		/* the whole mail: the classifier reads its diff from it */
		m.diff = sm->message;
		m.diff_len = sm->message_len;
		m.state = STORE_MAIL_SENT;
		m.sent = sm->created;
		if (!rc)
			rc = store_mail_put(c->st, &m);
		if (rc == PB_EEXISTS)
			rc = 0;
		if (!rc) {
			/* the conversation's first mails (store_archive.h):
			 * what a reply quoting them is checked against */
			struct store_archived a;

			memset(&a, 0, sizeof(a));
			a.message_id = id;
			a.project = c->project;
			a.iid = iid;
			a.origin = STORE_ARCHIVE_LIST;
			a.message = sm->message;
			a.message_len = sm->message_len;
			a.created = sm->created;
			rc = store_archive_put(c->st, &a);
			if (rc == PB_EEXISTS)
				rc = 0;
		}
		store_mail_release(&m);
		free(id);
	}
	if (!rc)
		rc = store_revision_mark_sent(c->st, c->project, iid, revision);
	free(cover);
	return rc;
}

/* What every telling of a series that is no merge request holds. */
static void failure_init(struct emailmr_failure *f, const struct emailmr_ctx *c,
			 const struct series *s)
{
	memset(f, 0, sizeof(*f));
	f->series_id = s->sub.series_id;
	f->sender = s->sub.sender;
	f->version = s->sub.version;
	f->total = s->sub.total;
	f->target_branch = c->target_branch;
	if (s->mails.nr) {
		f->first = s->mails.items[0].message;
		f->first_len = s->mails.items[0].message_len;
	}
}

/*
 * What vouches for each mail of the series (emailattest.h), before
 * anything is pushed: PB_EINVAL when the project requires attestation
 * and a mail has none or a bad one; the sender is told (c->failed), then
 * the series marked failed.
 */
static int attest(struct emailattest *a, const struct emailmr_ctx *c,
		  const struct series *s, const char *safe,
		  const char *series_id)
{
	struct emailattest_opts o;
	struct buf why = BUF_INIT(PB_ERRMSG_MAX / 2);
	size_t i;
	int rc = 0;

	memset(&o, 0, sizeof(o));
	o.keyring = c->attest_keyring;
	o.ro = c->ro;
	o.sender = s->sub.sender;
	a->total = s->sub.total;
	for (i = 0; !rc && i < s->mails.nr; i++)
		rc = emailattest_add(a, s->mails.items[i].message,
				     s->mails.items[i].message_len,
				     s->mails.items[i].patch, &o);
	if (rc || !c->require_attestation || emailattest_ok(a))
		goto out;
	emailattest_why(&why, a);
	buf_clear_error(&why);
	if (s->sub.state == STORE_SUBMISSION_WHOLE) {
		if (c->failed) {
			struct emailmr_failure f;

			failure_init(&f, c, s);
			f.not_attested = why.data;
			rc = c->failed(c->failed_arg, &f);
			if (rc)
				goto out; /* tried again with the series */
		}
		(void)store_submission_finish(c->st, series_id,
					      STORE_SUBMISSION_FAILED, 0);
	}
	rc = err_set(PB_EINVAL,
		     "series <%s> refused (email_require_attestation): %s",
		     safe, why.data);
out:
	buf_release(&why);
	return rc;
}

/* The sender told that patch failed+1 does not apply (c->failed). */
static int tell_failed(const struct emailmr_ctx *c, const struct series *s,
		       size_t failed, const char *base, const char *msg)
{
	struct emailmr_failure f;
	size_t i, k = 0;

	if (!c->failed)
		return 0;
	failure_init(&f, c, s);
	f.patch = (int)failed + 1;
	f.base = base;
	f.base_named = strcmp(base, c->target_sha) != 0;
	f.git_message = msg;
	for (i = 0; i < s->mails.nr; i++) {
		if (!s->mails.items[i].patch)
			continue;
		if (k++ == failed)
			f.patch_subject = s->mi[i].subject;
	}
	return c->failed(c->failed_arg, &f);
}

/* The sender told that the series is a version no newer than latest,
 * which merge request iid has taken: nothing is pushed. */
static int tell_stale(const struct emailmr_ctx *c, const struct series *s,
		      int64_t iid, int latest)
{
	struct emailmr_failure f;

	if (!c->failed)
		return 0;
	failure_init(&f, c, s);
	f.taken_iid = iid;
	f.taken_version = latest;
	return c->failed(c->failed_arg, &f);
}

/* The description: the cover letter's text (the patch's), under "From:
 * NAME <ADDRESS> by email" when the bridge opens it, and what vouches
 * for the mails (emailattest.h). */
static void describe(struct buf *desc, const struct mr_text *t, int by_bridge,
		     const struct emailattest *att)
{
	buf_reset(desc);
	if (by_bridge)
		buf_addf(desc, "From: %s <%s> by email\n", t->name, t->email);
	emailattest_describe(desc, att);
	if (t->body.len)
		buf_addf(desc, "%s%s\n", desc->len ? "\n" : "", t->body.data);
	if (buf_error(desc)) {
		buf_clear_error(desc);
		buf_adds(desc, "\n(cut)\n");
	}
}

/* A note on merge request iid saying which version of the series came
 * by email and what vouches for its mails: once (its marker), also when
 * the daemon is killed between the push and the note. */
static int note_version(const struct emailmr_ctx *c, const struct series *s,
			int64_t iid, const struct emailattest *att)
{
	struct buf body = BUF_INIT(PB_NOTE_BODY_MAX);
	struct forge_note note;
	char key[64];
	int rc;

	buf_addf(&body, "v%d of this series came by email from %s.\n\n",
		 s->sub.version, s->sub.sender);
	emailattest_describe(&body, att);
	buf_rtrim(&body);
	buf_adds(&body, "\n");
	if (buf_error(&body)) {
		buf_release(&body);
		return err_set(PB_ELIMIT, "the version's note is too long");
	}
	snprintf(key, sizeof(key), "email-version:%08x",
		 (unsigned)hash_fnv1a_str(s->sub.series_id));
	memset(&note, 0, sizeof(note));
	rc = forge_create_note(&note, c->forge, c->project, iid, body.data,
			       key);
	forge_note_release(&note);
	buf_release(&body);
	return rc;
}

/* Open the merge request n (its description made here): as the
 * sender's forge user when opener() names one (GitLab's Sudo, as
 * approvals are given), else, or when the token may not act for
 * anyone, as the bridge. */
static int create_mr(struct forge_mr *mr, const struct emailmr_ctx *c,
		     const struct series *s, struct forge_mr_new *n,
		     const struct mr_text *t, const struct emailattest *att,
		     struct buf *desc)
{
	struct strlist users = STRLIST_INIT;
	const char *user = opener(c, s, att, &users);
	int rc = 0, rc2;

	if (user) {
		describe(desc, t, 0, att);
		n->description = desc->data;
		rc = forge_act_as(c->forge, user);
		if (!rc)
			rc = forge_create_mr(mr, c->forge, c->project, n);
		rc2 = forge_act_as(c->forge, NULL);
		if (!rc && rc2)
			rc = rc2;
		if (rc == PB_EPERM) {
			/* the token may not act for anyone, or the user may
			 * not open one: the bridge does, as for anyone */
			log_warn("%s: cannot open the merge request as %s: "
				 "%s; the bridge opens it",
				 c->project, user,
				 forge_sudo_problem(c->forge) ?
					 forge_sudo_problem_text(
						 forge_sudo_problem(c->forge)) :
					 err_msg());
			user = NULL;
		} else if (!rc) {
			log_info(
				"%s!%lld: opened as %s, the sender's forge user",
				c->project, (long long)mr->iid, user);
		}
	}
	if (!user) {
		describe(desc, t, 1, att);
		n->description = desc->data;
		rc = forge_create_mr(mr, c->forge, c->project, n);
	}
	strlist_release(&users);
	return rc;
}

int emailmr_open(int64_t *iid, const struct emailmr_ctx *c,
		 const char *series_id)
{
	struct series s;
	struct mr_text t = { BUF_INIT(SUBJECT_MAX),
			     BUF_INIT(PB_NOTE_BODY_MAX / 2), NULL, NULL };
	struct buf desc = BUF_INIT(PB_NOTE_BODY_MAX);
	struct strlist labels = STRLIST_INIT;
	struct forge_mr_new n;
	struct forge_mr mr;
	struct gitrepo_person who;
	char base[GITREPO_HEXSZ + 1], head[GITREPO_HEXSZ + 1];
	char branch[EMAILMR_BRANCH_MAX + 1], *local = NULL, *remote = NULL;
	char safe[PB_LOG_QUOTE_MAX];
	struct emailattest att;
	size_t failed = 0;
	int64_t earlier = 0;
	int rc;

	*iid = 0;
	memset(&mr, 0, sizeof(mr));
	emailattest_init(&att);
	printable_copy(safe, sizeof(safe), series_id, strlen(series_id));
	rc = series_read(&s, c->st, series_id);
	if (rc)
		goto out;
	if (!s.nr_patches) {
		rc = err_set(PB_EINVAL, "the series has no patch");
		goto out;
	}
	rc = s.cover ? cover_text(&t, s.cover->message, s.cover->message_len) :
		       patch_text(&t, &s.mi[0]);
	if (rc)
		goto out;
	if (!t.title.len)
		buf_sets(&t.title, "(no subject)");
	rc = attest(&att, c, &s, safe, series_id);
	if (rc)
		goto out;

	/* Apply: committed at the time the series became whole, so that a
	 * second run makes the same commits. */
	pick_base(base, &s, c);
	memset(&who, 0, sizeof(who));
	who.name = (char *)c->committer_name;
	who.email = (char *)c->committer_email;
	who.time = s.sub.updated;
	rc = gitrepo_am(head, &failed, c->repo, base, s.am, s.nr_patches, &who);
	if (rc == PB_EINVAL || rc == PB_ENOTFOUND) {
		char msg[PB_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", err_msg());
		if (s.sub.state == STORE_SUBMISSION_WHOLE) {
			rc = tell_failed(c, &s, failed, base, msg);
			if (rc)
				goto out; /* tried again with the series */
			(void)store_submission_finish(
				c->st, series_id, STORE_SUBMISSION_FAILED, 0);
		}
		rc = err_set(PB_EINVAL,
			     "series <%s>: patch %zu/%d does not apply on %s: "
			     "%s",
			     safe, failed + 1, s.sub.total, base, msg);
		goto out;
	}
	if (rc)
		goto out;

	/* Push: the series' own branch, or the earlier version's, forced
	 * (a second run's commits are the same, a later version's replace
	 * them, and GitLab shows the versions). */
	rc = next_version_mr(&earlier, c, &s, safe);
	if (rc)
		goto out;
	if (earlier) {
		rc = forge_get_mr(&mr, c->forge, c->project, earlier);
		if (rc)
			goto out;
		/* only ever under the prefix */
		if (!mr.source_branch ||
		    strncmp(mr.source_branch, c->branch_prefix,
			    strlen(c->branch_prefix)) ||
		    strlen(mr.source_branch) >= sizeof(branch)) {
			rc = err_set(PB_EINVAL,
				     "!%lld's branch is not under %s",
				     (long long)earlier, c->branch_prefix);
			goto out;
		}
		snprintf(branch, sizeof(branch), "%s", mr.source_branch);
	} else {
		rc = emailmr_branch(branch, sizeof(branch), c->branch_prefix,
				    s.sub.sender, t.title.data, series_id);
		if (rc)
			goto out;
	}
	local = xasprintf("refs/patchbridge/email/%08x",
			  (unsigned)hash_fnv1a_str(series_id));
	remote = xasprintf("refs/heads/%s", branch);
	rc = gitrepo_ref_set(c->repo, local, head, "patchbridge: email series");
	if (!rc)
		rc = gitrepo_push(c->repo, c->push_url, c->token, local, remote,
				  1);
	if (rc)
		goto out;

	if (earlier) {
		/* the push made the new version; what vouches for it on the
		 * merge request, as the description does for the first */
		rc = note_version(c, &s, earlier, &att);
		if (rc)
			goto out;
		goto mapped;
	}

	/* The merge request: found, not made again, after a restart. */
	if (c->label && *c->label)
		strlist_push(&labels, c->label);
	memset(&n, 0, sizeof(n));
	n.source_branch = branch;
	n.target_branch = c->target_branch;
	n.title = t.title.data;
	n.labels = &labels;
	rc = create_mr(&mr, c, &s, &n, &t, &att, &desc);
	if (rc)
		goto out;
mapped:
	*iid = mr.iid;
	rc = map_series(c, &s, mr.iid, base, head);
	if (!rc && s.sub.state == STORE_SUBMISSION_WHOLE) {
		rc = store_submission_finish(c->st, series_id,
					     STORE_SUBMISSION_OPENED, mr.iid);
		if (rc == PB_EEXISTS)
			rc = 0; /* another host finished it meanwhile */
	}
	if (!rc)
		log_info("%s!%lld: %s from the series <%s> (v%d, %zu "
			 "patches on %.12s, branch %s; %s)",
			 c->project, (long long)mr.iid,
			 earlier ? "updated" : "opened", safe, s.sub.version,
			 s.nr_patches, base, branch,
			 emailattest_ok(&att) ? "attested or DKIM-verified" :
						"not attested");
out:
	forge_mr_release(&mr);
	strlist_release(&labels);
	buf_release(&desc);
	buf_release(&t.title);
	buf_release(&t.body);
	free(t.name);
	free(t.email);
	free(local);
	free(remote);
	emailattest_release(&att);
	series_release(&s);
	return rc;
}

char *emailmr_series_key(struct store *st, const struct review *r)
{
	const struct mail *mail = r->mail;
	char *key = bare_id(r->kind == REVIEW_PATCH && mail->in_reply_to ?
				    mail->in_reply_to :
				    mail->message_id);

	if (r->kind == REVIEW_PATCH && mail->in_reply_to) {
		/* a vN patch sent in reply to an earlier version's mail
		 * starts a series of its own */
		struct store_submission have;

		store_submission_init(&have);
		if (!store_submission_get(&have, st, key) &&
		    have.version !=
			    (r->subject.version > 0 ? r->subject.version : 1)) {
			free(key);
			key = bare_id(mail->message_id);
		}
		store_submission_release(&have);
	}
	return key;
}

int emailmr_collect_parsed(int *whole, char *series_id, size_t size,
			   struct store *st, const char *project,
			   enum emailmr_policy policy, const struct review *r,
			   const char *raw, size_t len)
{
	struct store_submission sub;
	struct store_submitted m;
	const struct mail *mail;
	char *key = NULL, *sender = NULL, *id = NULL;
	size_t i;
	int rc;

	*whole = 0;
	if (size)
		series_id[0] = '\0';
	if (policy == EMAILMR_OFF)
		return err_set(PB_EPERM, "the project takes no series by mail");
	mail = r->mail;
	if (!r->submission)
		return err_set(PB_EPERM, "not a new series: %s",
			       r->submission_why);
	if (policy == EMAILMR_VERIFIED && !r->auth.verified)
		return err_set(PB_EPERM,
			       "the sender is not DKIM/DMARC-verified");
	if (!mail->message_id || !mail->from.email[0])
		return err_set(PB_EPERM, "no Message-ID or sender address");
	key = emailmr_series_key(st, r);
	sender = xstrdup(mail->from.email);
	for (i = 0; sender[i]; i++)
		sender[i] = (char)tolower((unsigned char)sender[i]);
	memset(&sub, 0, sizeof(sub));
	sub.series_id = key;
	sub.sender = sender;
	sub.project = project;
	sub.version = r->subject.version > 0 ? r->subject.version : 1;
	sub.total = r->subject.total > 0 ? r->subject.total : 1;
	memset(&m, 0, sizeof(m));
	id = bare_id(mail->message_id);
	m.message_id = id;
	m.patch = r->kind == REVIEW_COVER ? 0 :
		  r->subject.index > 0	  ? r->subject.index :
					    1;
	m.message = raw;
	m.message_len = len;
	rc = store_submission_add(whole, st, &sub, &m);
	if (!rc || rc == PB_EEXISTS)
		snprintf(series_id, size, "%s", key);
	free(id);
	free(key);
	free(sender);
	return rc;
}

int emailmr_collect(int *whole, char *series_id, size_t size, struct store *st,
		    const char *project, enum emailmr_policy policy,
		    const struct review_options *ro, const char *raw,
		    size_t len)
{
	struct review *r = NULL;
	int rc;

	*whole = 0;
	if (size)
		series_id[0] = '\0';
	if (policy != EMAILMR_OFF) {
		rc = review_parse(&r, raw, len, NULL, ro);
		if (rc)
			return rc;
	}
	rc = emailmr_collect_parsed(whole, series_id, size, st, project, policy,
				    r, raw, len);
	review_free(r);
	return rc;
}
