#include "inbound/plan.h"

#include "core/msgid.h"
#include "inbound/escape.h"
#include "util/err.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void plan_init(struct plan *p)
{
	memset(p, 0, sizeof(*p));
}

static void action_release(struct plan_action *a)
{
	free(a->body);
	free(a->fallback);
	free(a->discussion);
	free(a->old_path);
	free(a->new_path);
	free(a->user);
	free(a->who);
}

void plan_release(struct plan *p)
{
	size_t i;

	for (i = 0; i < p->nr; i++)
		action_release(&p->v[i]);
	free(p->v);
	strlist_release(&p->verdicts);
	free(p->verdict_of);
	free(p->nak_verdict);
	plan_init(p);
}

const char *plan_kind_name(enum plan_kind k)
{
	switch (k) {
	case PLAN_COMMENT:
		return "comment";
	case PLAN_DIFF_NOTE:
		return "diff-note";
	case PLAN_DIFF_REPLY:
		return "diff-reply";
	case PLAN_NOTE:
		return "note";
	case PLAN_APPROVE:
		return "approve";
	case PLAN_NAK_LABEL:
		return "nak-label";
	case PLAN_NAK_DISCUSSION:
		return "nak-discussion";
	case PLAN_UNAPPROVE:
		return "unapprove";
	}
	return "unknown";
}

static struct plan_action *add(struct plan *p, int index, enum plan_kind kind)
{
	struct plan_action *a;

	ALLOC_GROW(p->v, p->nr + 1, p->alloc);
	a = &p->v[p->nr++];
	memset(a, 0, sizeof(*a));
	a->index = index;
	a->kind = kind;
	return a;
}

static int adds_inline(struct buf *b, const char *s)
{
	return escape_inline(b, s ? s : "", s ? strlen(s) : 0);
}

static int adds_plain(struct buf *b, const char *s)
{
	return buf_adds(b, s ? s : "");
}

/* How untrusted text is written: escaped for a note, or as it is (the
 * verdicts kept for `why`, which makes them printable itself). */
struct style {
	int (*text)(struct buf *b, const char *s);
	const char *lt, *gt;
};

static const struct style markdown = { adds_inline, "&lt;", "&gt;" };
static const struct style plain = { adds_plain, "<", ">" };

/* "Name <email>"; either part may be missing. */
static int add_person_as(struct buf *b, const struct style *st,
			 const char *name, const char *email)
{
	int rc = 0;

	if (name && name[0]) {
		rc = st->text(b, name);
		if (!rc && email && email[0])
			rc = buf_addch(b, ' ');
	}
	if (!rc && email && email[0]) {
		rc = buf_adds(b, st->lt);
		if (!rc)
			rc = st->text(b, email);
		if (!rc)
			rc = buf_adds(b, st->gt);
	}
	if (!rc && (!name || !name[0]) && (!email || !email[0]))
		rc = buf_adds(b, "an unnamed sender");
	return rc;
}

/* The same, escaped. */
static int add_person(struct buf *b, const char *name, const char *email)
{
	return add_person_as(b, &markdown, name, email);
}

const char *plan_verified_by(const struct review *r)
{
	if (r->auth.verified && r->wrap_trusted)
		return "verified by the list, which wrapped the message for "
		       "DMARC";
	if (r->auth.verified)
		return r->auth.dkim == AR_PASS ? "DKIM verified" :
						 "DMARC verified";
	return "not verified";
}

int plan_footer(struct buf *out, const struct review *r,
		const struct plan_ctx *ctx)
{
	const char *id = ctx->authserv_id && ctx->authserv_id[0] ?
				 ctx->authserv_id :
				 NULL;
	const char *verdict = NULL;
	int rc;

	/* The bridge's word on who sent the mail and whether that was
	 * verified: in <sub>, raw HTML GitLab keeps (html-pipeline's
	 * sanitizer allows sub) and relayed text never holds, since
	 * escape.c writes every "<" of it as "&lt;".  A sender's line that
	 * copies the footer stays text of normal size in the note. */
	rc = buf_adds(out, "<sub>\xe2\x80\x94 "); /* em dash */
	if (!rc)
		rc = add_person(out, r->mail->from.name, r->mail->from.email);
	if (!rc)
		rc = buf_adds(out, " via email");
	if (!rc && ctx->revision > 0) {
		if (ctx->patch == 0)
			rc = buf_addf(out, ", on the v%d cover letter",
				      ctx->revision);
		else if (ctx->total > 0)
			rc = buf_addf(out, ", on v%d %d/%d", ctx->revision,
				      ctx->patch, ctx->total);
		else
			rc = buf_addf(out, ", on v%d patch %d", ctx->revision,
				      ctx->patch);
	}
	if (rc)
		return rc;
	if (r->auth.verified && r->wrap_trusted)
		verdict = " (verified by the list, which wrapped the message "
			  "for DMARC)";
	else if (r->auth.verified)
		verdict = r->auth.dkim == AR_PASS ? " (DKIM verified)" :
						    " (DMARC verified)";
	else if (r->mail->flags & MAIL_F_WRAPPED)
		verdict = r->wrap_trusted ?
				  " (not verified: the list found no "
				  "DKIM/DMARC pass for the sender)" :
				  " (not verified: the list wrapped the "
				  "message for DMARC; its verification of "
				  "the sender is not trusted)";
	else if (!id)
		verdict = " (not verified: no trusted authserv-id is "
			  "configured)";
	if (verdict) {
		rc = buf_adds(out, verdict);
	} else {
		rc = buf_adds(out, " (not verified: no DKIM/DMARC pass from ");
		if (!rc)
			rc = adds_inline(out, id);
		if (!rc)
			rc = buf_addch(out, ')');
	}
	if (!rc)
		rc = buf_adds(out, "</sub>");
	return rc;
}

/* "; what the Authentication-Results fields said", when there is more
 * to say than "no pass": forged fields ignored, passes that do not
 * align (authres.h). */
static int add_auth_why(struct buf *b, const struct style *st,
			const struct authres_summary *s, const char *id)
{
	struct buf why = BUF_INIT(1024);
	int rc = authres_summary_why(&why, s, id);

	if (!rc && why.len) {
		rc = buf_adds(b, "; ");
		if (!rc)
			rc = st->text(b, why.data);
	}
	buf_release(&why);
	return rc;
}

/* The reason a trailer was not honoured, with its particulars. */
static int add_reason(struct buf *b, const struct style *st,
		      enum approval_verdict v, const struct review *r,
		      const struct plan_ctx *ctx, const struct trailer *t)
{
	const char *id = ctx->authserv_id && ctx->authserv_id[0] ?
				 ctx->authserv_id :
				 NULL;
	int rc = 0;

	switch (v) {
	case APPROVAL_UNVERIFIED:
		rc = buf_adds(b, "the sender is not verified (");
		if (!rc && id) {
			rc = buf_adds(b, "no DKIM or DMARC pass from ");
			if (!rc)
				rc = st->text(b, id);
			if (!rc)
				rc = add_auth_why(b, st, &r->auth, id);
		} else if (!rc) {
			rc = buf_adds(b, "no trusted authserv-id is "
					 "configured");
		}
		if (!rc)
			rc = buf_addch(b, ')');
		return rc;
	case APPROVAL_NOT_SENDER:
		if (!t->email || !t->email[0]) {
			/* informal: "Reviewed by : Name", no address */
			rc = buf_adds(b, "it gives no address, and ");
			if (!rc)
				rc = add_person(b, t->name, NULL);
			if (!rc)
				rc = buf_adds(b, " is not the sender's name "
						 "in the From header");
			return rc;
		}
		rc = buf_adds(b, "it names ");
		if (!rc)
			rc = add_person_as(b, st, t->name, t->email);
		if (!rc)
			rc = buf_adds(b, ", not the sender; only the sender "
					 "may approve by mail");
		return rc;
	case APPROVAL_BOT:
		rc = buf_adds(b, "the sender is a review bot (");
		if (!rc)
			rc = st->text(b, ctx->bot);
		if (!rc)
			rc = buf_adds(b, "), whose trailers are read as words, "
					 "never as approvals");
		return rc;
	case APPROVAL_UNMAPPED:
		rc = buf_adds(b, "no forge user is known for ");
		if (!rc)
			rc = st->text(b, r->mail->from.email);
		return rc;
	case APPROVAL_NOT_OWNER:
		rc = st->text(b, r->mail->from.email);
		if (!rc)
			rc = buf_addf(b,
				      " is not a maintainer or reviewer in "
				      "owners.yaml of the files this %s "
				      "touches",
				      t->scope == TRAILER_SCOPE_SERIES ?
					      "series" :
					      "patch");
		return rc;
	default:
		return buf_adds(b, approval_verdict_text(v));
	}
}

/* The trailer as written, or rebuilt from its parts. */
static int add_trailer_text(struct buf *b, const struct trailer *t)
{
	int rc;

	if (t->raw && t->raw[0])
		return adds_inline(b, t->raw);
	rc = buf_addf(b, "%s: ", t->type);
	if (!rc)
		rc = add_person(b, t->name, t->email);
	return rc;
}

struct decided {
	enum approval_verdict v;
	const char *user; /* owned by the callback's owner */
	int first; /* the first grant for this user */
};

/* Is trailer i of r in a mail this one answers (plan_ctx quoted)? */
static int quoted(const struct review *r, size_t i, const struct plan_ctx *ctx)
{
	return ctx->quoted && i < r->trailers.nr && ctx->quoted[i];
}

/* Does the mail say NAK at all, acted on or not? */
static int says_nak(const struct review *r)
{
	return r->nak || r->nak_form != REVIEW_NAK_NONE;
}

/*
 * Why an explicit NAK is not acted on, or NULL when it is; also NULL
 * when the mail says no NAK in an explicit form.
 */
static const char *nak_refusal(const struct review *r,
			       const struct plan_ctx *ctx)
{
	size_t i;

	if (r->nak_form != REVIEW_NAK_EXPLICIT)
		return NULL;
	if (ctx->bot)
		return "the sender is a review bot, whose NAK is read as "
		       "words";
	if (r->mail->flags & MAIL_F_AMBIGUOUS)
		return approval_verdict_text(APPROVAL_AMBIGUOUS);
	if (ctx->thread_conflict)
		return approval_verdict_text(APPROVAL_THREAD_CONFLICT);
	if (ctx->parent_unknown)
		return approval_verdict_text(APPROVAL_UNACCOUNTED);
	for (i = 0; i < r->trailers.nr; i++)
		if (trailer_is_nak(r->trailers.v[i].type) && quoted(r, i, ctx))
			return "the Nacked-by trailer is in a mail this one "
			       "answers, so it is read as a quotation";
	if (ctx->ancestor_nak)
		return "a mail this one answers says NAK too, so the NAK "
		       "here may be a quotation";
	return NULL;
}

/* The mail's NAK is acted on: said explicitly, in the sender's words. */
static int acts_nak(const struct review *r, const struct plan_ctx *ctx)
{
	return r->nak_form == REVIEW_NAK_EXPLICIT && !nak_refusal(r, ctx);
}

static int decide_all(struct decided *d, const struct review *r,
		      const struct plan_ctx *ctx)
{
	const char *sender = r->mail->from.email;
	size_t i, j;
	int rc;

	for (i = 0; i < r->trailers.nr; i++) {
		const struct trailer *t = &r->trailers.v[i];
		struct approval_facts f;
		enum approval_verdict v;

		memset(&f, 0, sizeof(f));
		f.type = t->type;
		f.names_sender = approval_names_sender(t, &r->mail->from);
		f.bot = ctx->bot != NULL;
		/* an approval beside a NAK, even one only mentioned, is
		 * a mail that reads two ways */
		f.nak = says_nak(r);
		f.ambiguous = !!(r->mail->flags & MAIL_F_AMBIGUOUS);
		f.in_sentence = !!(t->flags & TRAILER_F_IN_SENTENCE);
		f.in_block = !!(t->flags & TRAILER_F_BLOCK);
		f.loose = !!(t->flags & TRAILER_F_LOOSE);
		f.thread_conflict = ctx->thread_conflict;
		f.quoted = quoted(r, i, ctx);
		f.unaccounted = ctx->parent_unknown;
		f.verified = r->auth.verified;
		f.require_auth = ctx->require_auth;
		f.policy = ctx->policy;
		/* Look up only what a later check will read. */
		v = approval_decide(&f);
		if (v == APPROVAL_UNMAPPED && ctx->map_user) {
			rc = ctx->map_user(&f.user, sender, ctx->arg);
			if (rc && rc != PB_ENOTFOUND)
				return rc;
			if (rc)
				f.user = NULL;
			f.owner = 1;
			v = approval_decide(&f);
			if (v == APPROVAL_GRANT &&
			    ctx->policy == CONFIG_APPROVAL_OWNERS) {
				f.owner = 0;
				if (ctx->is_owner) {
					rc = ctx->is_owner(&f.owner, sender,
							   t->scope, ctx->arg);
					if (rc)
						return rc;
				}
				v = approval_decide(&f);
			}
		}
		d[i].v = v;
		d[i].user = v == APPROVAL_GRANT ? f.user : NULL;
		d[i].first = v == APPROVAL_GRANT;
		for (j = 0; j < i && d[i].first; j++)
			if (d[j].first && !strcmp(d[j].user, d[i].user))
				d[i].first = 0;
	}
	return 0;
}

/* What became of each trailer, one bullet each. */
static int add_trailers(struct buf *b, const struct review *r,
			const struct plan_ctx *ctx, const struct decided *d)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < r->trailers.nr && !rc; i++) {
		const struct trailer *t = &r->trailers.v[i];

		rc = buf_adds(b, "* ");
		if (!rc)
			rc = add_trailer_text(b, t);
		if (rc)
			break;
		if (d[i].v == APPROVAL_GRANT) {
			rc = buf_adds(b, " \xe2\x80\x94 approval by GitLab "
					 "user ");
			if (!rc)
				rc = adds_inline(b, d[i].user);
		} else if (d[i].v != APPROVAL_NOT_APPROVAL &&
			   d[i].v != APPROVAL_NAK) {
			rc = buf_adds(b, " \xe2\x80\x94 not honoured as an "
					 "approval: ");
			if (!rc)
				rc = add_reason(b, &markdown, d[i].v, r, ctx,
						t);
		}
		if (!rc)
			rc = buf_addch(b, '\n');
	}
	return rc;
}

/* What became of each trailer, in plain words, for the journal. */
static void add_verdicts(struct strlist *out, const struct review *r,
			 const struct plan_ctx *ctx, const struct decided *d)
{
	size_t i;

	for (i = 0; i < r->trailers.nr; i++) {
		struct buf b = BUF_INIT(PB_ERRMSG_MAX);

		if (d[i].v == APPROVAL_GRANT)
			buf_addf(&b, "an approval as %s%s", d[i].user,
				 d[i].first ? "" :
					      " (made for an earlier trailer)");
		else if (d[i].v == APPROVAL_NOT_APPROVAL)
			buf_adds(&b, "not an approval: listed in the comment");
		else if (!buf_adds(&b, "not honoured as an approval: "))
			add_reason(&b, &plain, d[i].v, r, ctx,
				   &r->trailers.v[i]);
		strlist_push(out, b.data);
		buf_release(&b);
	}
}

/* The footer as a paragraph of its own after what b holds. */
static int add_footer(struct buf *b, const struct buf *foot)
{
	int rc = 0;

	if (b->len)
		rc = buf_addch(b, '\n');
	if (!rc)
		rc = buf_addbuf(b, foot);
	if (!rc)
		rc = buf_addch(b, '\n');
	return rc;
}

/* "\[...\] truncated, the whole mail is at LINK" as a paragraph. */
static int add_cut_notice(struct buf *b, const struct plan_ctx *ctx)
{
	const char *id = ctx->message_id ? ctx->message_id : "";
	struct buf url = BUF_INIT(PB_HTTP_URL_MAX);
	int rc;

	rc = buf_adds(b, "\\[...\\] truncated, the whole mail is ");
	if (!rc && ctx->archive_url && ctx->archive_url[0] && id[0]) {
		rc = buf_adds(&url, ctx->archive_url);
		if (!rc)
			rc = buf_addch(&url, '/');
		if (!rc)
			rc = msgid_url_escape(&url, id);
		if (!rc)
			rc = buf_addch(&url, '/');
		if (!rc)
			rc = buf_adds(b, "at ");
		if (!rc)
			rc = escape_inline(b, url.data, url.len);
	} else if (!rc && id[0]) {
		rc = buf_adds(b, "on the list as Message-ID &lt;");
		if (!rc)
			rc = adds_inline(b, id);
		if (!rc)
			rc = buf_adds(b, "&gt;");
	} else if (!rc) {
		rc = buf_adds(b, "on the list");
	}
	if (!rc)
		rc = buf_addch(b, '\n');
	buf_release(&url);
	return rc;
}

/* The end of the longest prefix of text[0..n) that ends a line, or n cut
 * back to a UTF-8 character when there is none. */
static size_t prefix_end(const char *text, size_t n)
{
	size_t i = n;

	while (i > 0 && text[i - 1] != '\n')
		i--;
	if (i)
		return i;
	while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/*
 * Append text[0..len), escaped, as far as it fits in room bytes: whole
 * lines from the start (the longest prefix, found by halving), *cut set
 * when some of it was left out.  Errors other than not fitting are
 * returned.
 */
static int add_fitting(struct buf *b, const char *text, size_t len, size_t room,
		       int *cut)
{
	struct buf t = BUF_INIT(room);
	size_t lo = 0, hi = len, mid;
	int rc = escape_markdown(&t, text, len);

	if (rc == PB_ELIMIT) {
		*cut = 1;
		while (lo < hi) {
			mid = lo + (hi - lo + 1) / 2;
			buf_reset(&t);
			if (escape_markdown(&t, text, prefix_end(text, mid)))
				hi = mid - 1;
			else
				lo = mid;
		}
		buf_reset(&t);
		rc = escape_markdown(&t, text, prefix_end(text, lo));
	}
	if (!rc)
		rc = buf_addbuf(b, &t);
	buf_release(&t);
	return rc;
}

/* Room left in a body of PLAN_BODY_MAX next to parts of used bytes. */
static size_t room_for(size_t used)
{
	return used < PLAN_BODY_MAX ? PLAN_BODY_MAX - used : 0;
}

static int is_blank(const char *s)
{
	for (; s && *s; s++)
		if (!strchr(" \t\r\n", *s))
			return 0;
	return 1;
}

/* Bytes of a diff line quoted in a plain discussion. */
#define PLAN_QUOTE_MAX 1024

/* The text of the diff line an inline comment sits on, or NULL. */
static const struct diff_line *find_line(const struct diff *d,
					 const struct review_inline *x)
{
	size_t i;

	if (!d)
		return NULL;
	for (i = 0; i < d->nr_lines; i++) {
		const struct diff_line *l = &d->lines[i];

		if (l->old_no == x->old_line && l->new_no == x->new_line &&
		    !strcmp(diff_line_path(d, l), x->path))
			return l;
	}
	return NULL;
}

/* "On file line N:" and the quoted line, for a plain discussion. */
static int add_where(struct buf *b, const struct review_inline *x,
		     const struct plan_ctx *ctx)
{
	const struct diff_line *l = find_line(ctx->parent, x);
	struct buf q = BUF_INIT(PLAN_BODY_MAX);
	int rc;

	rc = buf_adds(b, "On ");
	if (!rc)
		rc = adds_inline(b, x->path[0] ? x->path : "an unknown file");
	if (!rc && x->new_line)
		rc = buf_addf(b, " line %d", x->new_line);
	else if (!rc && x->old_line)
		rc = buf_addf(b, " line %d (before the change)", x->old_line);
	if (!rc)
		rc = buf_adds(b, ":\n\n");
	if (!rc && l) {
		/* a line too long to quote whole: its beginning */
		size_t n = l->len;

		if (n > PLAN_QUOTE_MAX) {
			n = PLAN_QUOTE_MAX;
			while (n > 0 &&
			       ((unsigned char)l->text[n] & 0xc0) == 0x80)
				n--;
		}
		rc = buf_addch(&q, l->kind);
		if (!rc)
			rc = buf_add(&q, l->text, n);
		if (!rc && n < l->len)
			rc = buf_adds(&q, " [...]");
		if (!rc)
			rc = escape_code_block(b, q.data, q.len, "diff");
		if (!rc)
			rc = buf_addch(b, '\n');
	}
	buf_release(&q);
	return rc;
}

/* The parent's thread at the position a diff note would take, or NULL. */
static const struct plan_thread *thread_at(const struct plan_ctx *ctx,
					   const struct plan_action *a)
{
	struct forge_position pos;
	size_t i;

	memset(&pos, 0, sizeof(pos));
	if (!ctx->nr_threads ||
	    forge_position_set_line(&pos, a->line_kind, a->old_line,
				    a->new_line))
		return NULL;
	for (i = 0; i < ctx->nr_threads; i++) {
		const struct plan_thread *t = &ctx->threads[i];

		if (t->discussion_id && t->old_path && t->new_path &&
		    t->old_line == pos.old_line &&
		    t->new_line == pos.new_line &&
		    !strcmp(t->old_path, a->old_path) &&
		    !strcmp(t->new_path, a->new_path))
			return t;
	}
	return NULL;
}

static int inline_action(struct plan *p, const struct review *r, size_t i,
			 const struct plan_ctx *ctx)
{
	const struct review_inline *x = &r->inl[i];
	const struct plan_thread *t;
	struct buf body = BUF_INIT(PLAN_BODY_MAX);
	struct buf fb = BUF_INIT(PLAN_BODY_MAX);
	struct buf foot = BUF_INIT(PLAN_BODY_MAX);
	struct buf where = BUF_INIT(PLAN_BODY_MAX / 2);
	struct buf cutn = BUF_INIT(PLAN_BODY_MAX / 2);
	enum forge_line_kind kind = FORGE_LINE_CONTEXT;
	int64_t old_line = 0, new_line = 0;
	struct plan_action *a;
	int rc, placed, cut = 0;

	rc = plan_footer(&foot, r, ctx);
	if (!rc)
		rc = add_cut_notice(&cutn, ctx);
	if (!rc)
		rc = add_where(&where, x, ctx);
	/* the comment fits next to the footer and the notice, and to where
	 * it is in the fallback */
	if (!rc)
		rc = add_fitting(&body, x->body, strlen(x->body),
				 room_for(where.len + foot.len + cutn.len + 8),
				 &cut);
	if (!rc && cut)
		rc = buf_addbuf(&body, &cutn);
	if (!rc)
		rc = buf_addbuf(&fb, &where);
	if (!rc)
		rc = buf_addbuf(&fb, &body);
	if (!rc)
		rc = add_footer(&body, &foot);
	if (!rc)
		rc = add_footer(&fb, &foot);
	if (rc)
		goto out;
	placed = x->path[0] && (x->old_line || x->new_line);
	if (placed && ctx->place) {
		placed = ctx->place(&kind, &old_line, &new_line, x, ctx->arg);
	} else if (placed) {
		old_line = x->old_line;
		new_line = x->new_line;
		kind = !x->old_line ? FORGE_LINE_ADDED :
		       !x->new_line ? FORGE_LINE_REMOVED :
				      FORGE_LINE_CONTEXT;
	}
	a = add(p, PLAN_IDX_INLINE(i), placed ? PLAN_DIFF_NOTE : PLAN_NOTE);
	if (!placed) {
		a->body = buf_detach(&fb, NULL);
		goto out;
	}
	a->body = buf_detach(&body, NULL);
	a->fallback = buf_detach(&fb, NULL);
	a->new_path = xstrdup(x->path);
	a->old_path = xstrdup(x->old_path ? x->old_path : x->path);
	a->old_line = old_line;
	a->new_line = new_line;
	a->line_kind = kind;
	t = thread_at(ctx, a);
	if (t) {
		a->kind = PLAN_DIFF_REPLY;
		a->discussion = xstrdup(t->discussion_id);
	}
out:
	buf_release(&body);
	buf_release(&fb);
	buf_release(&foot);
	buf_release(&where);
	buf_release(&cutn);
	return rc;
}

int plan_build(struct plan *out, const struct review *r,
	       const struct plan_ctx *ctx)
{
	struct buf body = BUF_INIT(PLAN_BODY_MAX);
	struct buf foot = BUF_INIT(PLAN_BODY_MAX);
	struct buf tl = BUF_INIT(PLAN_BODY_MAX / 2);
	struct buf cutn = BUF_INIT(PLAN_BODY_MAX / 2);
	struct decided *d = NULL;
	struct plan_action *a;
	const char *nak_user = NULL, *why_not;
	size_t i, fixed;
	int rc, fold, cut = 0, nak, maybe;

	plan_init(out);
	nak = acts_nak(r, ctx);
	maybe = says_nak(r) && !nak;
	why_not = r->nak_form == REVIEW_NAK_EXPLICIT ?
			  nak_refusal(r, ctx) :
			  "it is not in a form the bridge acts on: a "
			  "paragraph that is NAK or NACK alone, or a "
			  "Nacked-by: trailer in a trailer block";
	d = xcalloc(r->trailers.nr + 1, sizeof(*d));
	rc = decide_all(d, r, ctx);
	for (i = 0; !rc && i < r->trailers.nr; i++)
		if (d[i].v != APPROVAL_GRANT && d[i].v != APPROVAL_NOT_APPROVAL)
			out->refused[d[i].v]++;
	if (!rc)
		rc = plan_footer(&foot, r, ctx);
	if (rc)
		goto out;
	add_verdicts(&out->verdicts, r, ctx, d);
	out->verdict_of = xcalloc(r->trailers.nr + 1, sizeof(*out->verdict_of));
	out->nr_verdicts = r->trailers.nr;
	for (i = 0; i < r->trailers.nr; i++)
		out->verdict_of[i] = d[i].v;
	if (nak)
		out->nak_verdict = xstrdup("the mail NAKs the patch: the "
					   "merge request is blocked");
	else if (maybe) {
		struct buf v = BUF_INIT(PB_ERRMSG_MAX);

		buf_addf(&v, "possibly an objection, not acted on: %s",
			 why_not);
		out->nak_verdict = buf_detach(&v, NULL);
	}
	if (out->nak_verdict)
		strlist_push(&out->verdicts, out->nak_verdict);

	/* 0, or 2001 for a NAK: the sender's words and the trailers.  What
	 * became of the trailers, the NAK and the footer always fit; the
	 * sender's words get the room that is left. */
	fold = ctx->fold_inline || (nak && is_blank(r->comment));
	if (says_nak(r) || !is_blank(r->comment) || r->trailers.nr ||
	    (ctx->fold_inline && r->nr_inline) || r->truncated) {
		if (r->trailers.nr)
			rc = add_trailers(&tl, r, ctx, d);
		if (!rc)
			rc = add_cut_notice(&cutn, ctx);
		if (!rc && nak)
			rc = buf_adds(&body, is_blank(r->comment) ? "NAK.\n" :
								    "NAK:\n\n");
		if (!rc && maybe)
			rc = buf_addf(&body,
				      "**Possibly an objection:** this mail "
				      "mentions a NAK, which was not acted on: "
				      "%s.  No label was set and no approval "
				      "withdrawn; a maintainer decides.  To "
				      "block by mail, send a paragraph that is "
				      "`NAK` alone, or a trailer block with "
				      "`Nacked-by: Name <address>`.\n\n",
				      why_not);
		fixed = tl.len + foot.len + cutn.len + 8;
		if (!rc && !is_blank(r->comment))
			rc = add_fitting(&body, r->comment, strlen(r->comment),
					 room_for(body.len + fixed), &cut);
		/* A NAK said only inline, or a reply to a forge comment:
		 * the body quotes each line and what was said under it. */
		for (i = 0; fold && i < r->nr_inline && !rc && !cut; i++) {
			size_t at = body.len;

			if (body.len)
				rc = buf_addch(&body, '\n');
			if (!rc)
				rc = add_where(&body, &r->inl[i], ctx);
			if (!rc && body.len + fixed > PLAN_BODY_MAX)
				rc = PB_ELIMIT;
			if (!rc)
				rc = add_fitting(&body, r->inl[i].body,
						 strlen(r->inl[i].body),
						 room_for(body.len + fixed),
						 &cut);
			if (rc == PB_ELIMIT) { /* not even where it is */
				buf_truncate(&body, at);
				cut = 1;
				rc = 0;
			}
		}
		if (!rc && (cut || r->truncated)) {
			if (body.len)
				rc = buf_addch(&body, '\n');
			if (!rc)
				rc = buf_addbuf(&body, &cutn);
		}
		if (!rc && tl.len) {
			if (body.len)
				rc = buf_addch(&body, '\n');
			if (!rc)
				rc = buf_addbuf(&body, &tl);
		}
		if (!rc)
			rc = add_footer(&body, &foot);
		if (rc)
			goto out;
		if (!nak) {
			a = add(out, PLAN_IDX_COMMENT, PLAN_COMMENT);
			a->body = buf_detach(&body, NULL);
		}
	}

	for (i = 0; !ctx->fold_inline && i < r->nr_inline && !rc; i++)
		rc = inline_action(out, r, i, ctx);
	if (rc)
		goto out;

	for (i = 0; i < r->trailers.nr; i++) {
		const struct trailer *t = &r->trailers.v[i];
		struct buf who = BUF_INIT(TRAILER_LINE_MAX * 2);

		if (d[i].v != APPROVAL_GRANT || !d[i].first)
			continue;
		a = add(out, PLAN_IDX_APPROVE(i), PLAN_APPROVE);
		a->user = xstrdup(d[i].user);
		a->trailer = i;
		a->via = plan_verified_by(r);
		if (add_trailer_text(&who, t) == 0)
			a->who = buf_detach(&who, NULL);
		else
			a->who = xstrdup(t->type);
		buf_release(&who);
	}

	if (nak) {
		add(out, PLAN_IDX_NAK_LABEL, PLAN_NAK_LABEL);
		a = add(out, PLAN_IDX_NAK_DISCUSSION, PLAN_NAK_DISCUSSION);
		a->body = buf_detach(&body, NULL);
		/* Withdraw only the approval of a sender we can vouch for. */
		if ((r->auth.verified || !ctx->require_auth) && ctx->map_user &&
		    r->mail->from.email[0]) {
			rc = ctx->map_user(&nak_user, r->mail->from.email,
					   ctx->arg);
			if (rc == PB_ENOTFOUND)
				rc = 0;
			else if (!rc && nak_user) {
				a = add(out, PLAN_IDX_NAK_UNAPPROVE,
					PLAN_UNAPPROVE);
				a->user = xstrdup(nak_user);
			}
		}
	}
out:
	if (rc)
		plan_release(out);
	free(d);
	buf_release(&body);
	buf_release(&foot);
	buf_release(&tl);
	buf_release(&cutn);
	return rc;
}
