#include "mail/review.h"
#include "mail/classify.h"
#include "mail/mailtext.h"
#include "mail/reply.h"
#include "util/err.h"
#include "util/jsonw.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *review_kind_name(enum review_kind k)
{
	switch (k) {
	case REVIEW_COVER:
		return "cover";
	case REVIEW_PATCH:
		return "patch";
	case REVIEW_REPLY:
		return "reply";
	case REVIEW_OTHER:
		break;
	}
	return "other";
}

void review_free(struct review *r)
{
	size_t i;

	if (!r)
		return;
	mail_free(r->mail);
	subject_release(&r->subject);
	trailer_list_release(&r->trailers);
	trailer_list_release(&r->own_trailers);
	for (i = 0; i < r->nr_inline; i++) {
		free(r->inl[i].path);
		free(r->inl[i].old_path);
		free(r->inl[i].body);
	}
	free(r->inl);
	free(r->comment);
	free(r);
}

/* Does the text carry a unified diff? */
static int has_line(const char *p, size_t len, const char *start, size_t n)
{
	return (len >= n - 1 && !memcmp(p, start + 1, n - 1)) ||
	       mem_find(p, len, start, n);
}

static int has_diff(const char *p, size_t len)
{
	return has_line(p, len, "\ndiff --git ", 12) ||
	       (has_line(p, len, "\n--- ", 5) &&
		mem_find(p, len, "\n+++ ", 5) && mem_find(p, len, "\n@@ -", 5));
}

/* Does the text quote, "> " at the start of a line? */
static int has_quote(const char *p, size_t len)
{
	return (len >= 2 && p[0] == '>') || mem_find(p, len, "\n>", 2);
}

/* Where the mail's own diff is: its text, a patch attachment, or none. */
static enum review_diff diff_where(const struct mail *m)
{
	if (has_diff(m->text.data, m->text.len))
		return REVIEW_DIFF_BODY;
	if (m->patch_type && has_diff(m->patch.data, m->patch.len))
		return REVIEW_DIFF_ATTACHMENT;
	return REVIEW_DIFF_NONE;
}

/* A line "Name (N):" of git shortlog; N, or 0. */
static int shortlog_head(const char *line, size_t n)
{
	size_t i = n;
	uint64_t v;

	if (n < 5 || line[0] == ' ' || line[0] == '\t' || line[0] == '>' ||
	    line[n - 1] != ':' || line[n - 2] != ')')
		return 0;
	for (i = n - 2; i > 0 && line[i - 1] >= '0' && line[i - 1] <= '9';)
		i--;
	if (i < 2 || line[i - 1] != '(' || line[i - 2] != ' ' ||
	    !mem_to_u64(line + i, n - 2 - i, 9999, &v))
		return 0;
	return (int)v;
}

/* git request-pull's text: a pull request, not a series. */
static int request_pull_text(const char *p, size_t len)
{
	return mem_find(p, len, "The following changes since commit", 34) ||
	       mem_find(p, len, "are available in the Git repository at", 38);
}

/*
 * The shape of a cover letter (git format-patch --cover-letter, b4,
 * git send-email --compose with the shortlog pasted): a shortlog head
 * "Name (N):" followed by an indented title, and a diffstat summary
 * " N files changed", in the author's own (unquoted) lines.  A pull
 * request has both too, and is no cover letter.  Returns the number of
 * patches the shortlog counts, or 0.
 */
static int cover_shape(const char *p, size_t len)
{
	struct scan sc;
	const char *line;
	size_t n;
	int head = 0, shortlog = 0, stat = 0, total = 0;

	if (request_pull_text(p, len))
		return 0;
	scan_init(&sc, p, len);
	while (scan_line(&sc, &line, &n)) {
		if (head && n > 2 && (line[0] == ' ' || line[0] == '\t')) {
			shortlog = 1;
			total += head;
		}
		head = shortlog_head(line, n);
		if (n > 14 && line[0] == ' ' &&
		    (mem_find(line, n, " files changed", 14) ||
		     mem_find(line, n, " file changed", 13)))
			stat = 1;
	}
	return shortlog && stat ? total : 0;
}

/* local@domain with local "name" or "name+anything", ASCII case ignored */
static int addr_is(const char *addr, const char *name, const char *domain)
{
	size_t n = strlen(name);
	const char *at = strrchr(addr, '@');

	return at && !strncasecmp(addr, name, n) &&
	       (addr + n == at || addr[n] == '+') &&
	       !strcasecmp(at + 1, domain);
}

const char *review_bot(const struct mail *m)
{
	const char *as = mail_header_get(m, "Auto-Submitted", 0);
	const char *from = m->from.email;

	if (as) {
		size_t len = strcspn(as, ";(");

		mem_trim(&as, &len);
		/* RFC 3834 5.1: "no" is the only value a person sends */
		if (len && !mem_eq_icase(as, len, "no"))
			return "Auto-Submitted";
	}
	if (!from || !from[0])
		return NULL;
	/* the addresses these bots post from, as list archives show them
	 * (tests/data/parse/README.md) */
	if (!strcasecmp(from, "lkp@intel.com"))
		return "the kernel test robot";
	if (addr_is(from, "syzbot", "syzkaller.appspotmail.com"))
		return "syzbot";
	if (addr_is(from, "patchwork-bot", "kernel.org"))
		return "patchwork-bot";
	if (addr_is(from, "bot", "kernel.org"))
		return "a kernel.org CI bot";
	return NULL;
}

/*
 * The patches of the thread that answer this mail: the M of their
 * "k/M", or how many they are when they carry no number (an unnumbered
 * series: "[PATCH] a", "[PATCH] b" under a "[PATCH] cover"); 0 when
 * none does.  Replies ("Re: [PATCH] ...") are no patches of a series.
 */
static int answered_by_series(const struct review *r,
			      const struct review_options *o)
{
	const char *id = r->mail->message_id;
	int n = 0, total = 0;
	size_t i;

	for (i = 0; o && id && i < o->nr_thread; i++) {
		const struct review_thread_mail *t = &o->thread[i];

		if (t->reply || t->index < 1 || t->total < t->index)
			continue;
		if ((t->in_reply_to && !strcmp(t->in_reply_to, id)) ||
		    (t->root && !strcmp(t->root, id))) {
			n++;
			if (t->total > total)
				total = t->total;
		}
	}
	return n > total ? n : total;
}

static enum review_kind classify(const struct review *r,
				 const struct review_options *o, int *total)
{
	const struct subject *s = &r->subject;
	const struct mail *m = r->mail;
	int diff = r->diff != REVIEW_DIFF_NONE;

	*total = 0;
	if (s->reply)
		return REVIEW_REPLY;
	/* a reply whose client kept the subject as it was: threaded, no
	 * diff of its own, quoting */
	if (s->has_tag && m->in_reply_to && !diff &&
	    has_quote(m->text.data, m->text.len))
		return REVIEW_REPLY;
	/* a cover letter without "0/N" (git send-email --compose, a tag
	 * typed by hand): the patches answer it, or it reads like one */
	if (!diff && !s->forward && !(s->index == 0 && s->total > 0)) {
		*total = answered_by_series(r, o);
		if (!*total)
			*total = cover_shape(m->text.data, m->text.len);
		if (*total)
			return REVIEW_COVER;
	}
	if (s->has_tag && !s->forward)
		return s->index == 0 && s->total > 0 ? REVIEW_COVER :
						       REVIEW_PATCH;
	if (m->in_reply_to || m->references.nr)
		return REVIEW_REPLY;
	if (diff)
		return REVIEW_PATCH;
	return REVIEW_OTHER;
}

/* Is the word PULL (ASCII case ignored) in p[0..len)? */
static int has_pull_word(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i + 4 <= len; i++) {
		if (strncasecmp(p + i, "PULL", 4))
			continue;
		if ((i == 0 || !isalnum((unsigned char)p[i - 1])) &&
		    (i + 4 == len || !isalnum((unsigned char)p[i + 4])))
			return 1;
	}
	return 0;
}

/*
 * A pull request: a bracket before the title says PULL ("[GIT PULL]",
 * "[PULL 00/12]" as QEMU's maintainers send them, "[PULL REQUEST]"),
 * or the text is git request-pull's (with -p it carries a diff too).
 */
static int pull_request(const struct review *r)
{
	const char *p = r->mail->subject, *end;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != '[')
			break;
		end = strchr(p, ']');
		if (!end)
			break;
		if (has_pull_word(p + 1, (size_t)(end - p - 1)))
			return 1;
		p = end + 1;
	}
	return request_pull_text(r->mail->text.data, r->mail->text.len);
}

/*
 * The loop guard's reason when the bridge sent the mail itself
 * (classify_early() over the fields the mail keeps), else NULL.
 */
static const char *own_mail(const struct review *r,
			    const struct review_options *o)
{
	const struct mail *m = r->mail;
	struct classify_input in;
	struct classify_result res;
	struct classify_opts co;
	const char *why = NULL;
	size_t i;

	memset(&co, 0, sizeof(co));
	if (o) {
		co.domain = o->own_domain;
		co.address = o->own_address;
	}
	classify_input_init(&in);
	classify_result_init(&res);
	if (m->message_id)
		classify_header(&in, "Message-ID", m->message_id);
	if (m->from.email[0])
		classify_header(&in, "From", m->from.email);
	for (i = 0; i < m->nr_headers; i++)
		classify_header(&in, m->headers[i].name, m->headers[i].value);
	classify_early(&res, &in, &co);
	if (res.verdict == CLASSIFY_LOOP)
		why = res.reason;
	classify_result_release(&res);
	classify_input_release(&in);
	return why;
}

/* Why the mail is no submission (review.h), or NULL when it is one. */
static const char *not_submission(const struct review *r,
				  const struct review_options *o)
{
	if (r->kind == REVIEW_REPLY)
		return "reply";
	if (r->subject.forward)
		return "forward";
	if (pull_request(r))
		return "pull-request";
	if (r->kind != REVIEW_PATCH && r->kind != REVIEW_COVER)
		return "not-a-patch";
	if (!r->subject.has_tag)
		return "no-patch-tag";
	/* what git am reads: the diff in the mail's own text */
	if (r->kind == REVIEW_PATCH && r->diff != REVIEW_DIFF_BODY)
		return "diff-not-inline";
	if (r->truncated)
		return "truncated";
	if (r->bot)
		return "bot";
	return own_mail(r, o);
}

/* The commit message: the text above the first "---" line. */
static size_t commit_message_len(const char *p, size_t len)
{
	struct scan s;
	const char *line;
	size_t n;

	scan_init(&s, p, len);
	while (scan_line(&s, &line, &n)) {
		if ((n == 3 && !memcmp(line, "---", 3)) ||
		    (n > 11 && !memcmp(line, "diff --git ", 11)))
			return (size_t)(line - p);
	}
	return len;
}

/*
 * The commit message of a patch file (git format-patch's output: an
 * mbox "From " line and a mail header, then the message above "---"):
 * where its header ends, and how long the message is.
 */
static size_t patch_file_message(const char *p, size_t len, size_t *start)
{
	struct scan s;
	const char *line;
	size_t n;

	*start = 0;
	scan_init(&s, p, len);
	if (len >= 5 && !memcmp(p, "From ", 5)) {
		while (scan_line(&s, &line, &n) && n)
			;
		*start = (size_t)(s.p - p);
	}
	return commit_message_len(p + *start, len - *start);
}

/* The domain of an address, or NULL. */
static const char *domain_of(const char *email)
{
	const char *at = email ? strrchr(email, '@') : NULL;

	return at ? at + 1 : NULL;
}

/*
 * What the trusted verifier found, by the rules of authres.h over the
 * header as the milter received it (raw is what it spooled), about the
 * sender at email.
 */
static void judge_outer(struct authres_summary *out, const char *raw,
			size_t len, const char *id, size_t top,
			const char *email)
{
	struct authres_judge j;

	authres_judge_init(&j, id, top);
	authres_judge_header(&j, raw, len);
	authres_judge_summary(out, &j, domain_of(email));
	authres_judge_release(&j);
}

/*
 * The same over a wrap's inner message, of which the mail keeps the
 * Authentication-Results fields in order: the list host's verifier put
 * its own on top of the original, and its MTA removed copies claiming
 * its id before the list wrapped it (the same defence as ours).
 */
static void judge_inner(struct authres_summary *out, const struct mail *m,
			const char *id, size_t top)
{
	struct authres_judge j;
	const char *v;
	size_t i;

	authres_judge_init(&j, id, top);
	for (i = 0; (v = mail_inner_header_get(m, AUTHRES_FIELD_NAME, i)); i++)
		authres_judge_field(&j, AUTHRES_FIELD_NAME,
				    strlen(AUTHRES_FIELD_NAME), v, strlen(v));
	authres_judge_summary(out, &j, domain_of(m->from.email));
	authres_judge_release(&j);
}

/*
 * A list's DMARC wrap: the verifier saw the list's message, not the
 * sender's.  The inner sender is verified only when the operator trusts
 * the list's own verification of the original (list_authserv_id), the
 * outer message verifiably comes from the project's list address, and
 * the list's verifier passed the inner From's domain.
 */
static void auth_of(struct review *r, const char *raw, size_t len,
		    const struct review_options *opts)
{
	const struct mail *m = r->mail;
	const char *trusted = opts ? opts->trusted_authserv_id : NULL;
	const char *list_id = opts ? opts->list_authserv_id : NULL;
	const char *list = opts ? opts->list_address : NULL;
	size_t top = opts && opts->trusted_fields ? opts->trusted_fields :
						    AUTHRES_TOP_DEFAULT;
	struct authres_summary outer;

	if (!(m->flags & MAIL_F_WRAPPED)) {
		judge_outer(&r->auth, raw, len, trusted, top, m->from.email);
		return;
	}
	judge_outer(&outer, raw, len, trusted, top, m->wrapper.email);
	if (list_id && *list_id && list && *list && outer.verified &&
	    !strcasecmp(m->wrapper.email, list)) {
		judge_inner(&r->auth, m, list_id, top);
		r->wrap_trusted = 1;
		return;
	}
	r->auth = outer;
	r->auth.verified = 0;
}

static int add_inline(struct review *r, const struct diff *d, int line,
		      struct buf *body)
{
	const struct diff_line *l = &d->lines[line];
	const struct diff_file *f = &d->files[l->file];
	struct review_inline *x;

	if (r->nr_inline >= REVIEW_INLINE_MAX)
		return err_set(PB_ELIMIT, "more than %d inline comments",
			       REVIEW_INLINE_MAX);
	r->inl = xreallocarray(r->inl, r->nr_inline + 1, sizeof(*r->inl));
	x = &r->inl[r->nr_inline++];
	x->path = xstrdup(diff_line_path(d, l));
	x->old_path = f->old_path ? xstrdup(f->old_path) : NULL;
	x->old_line = l->old_no;
	x->new_line = l->new_no;
	x->body = buf_detach(body, NULL);
	return 0;
}

/* More than the reply parser reads (REPLY_TEXT_MAX, REPLY_LINES_MAX)? */
static int too_long(const char *p, size_t len)
{
	size_t lines = 0;
	const char *end = p + len;

	if (len > REPLY_TEXT_MAX)
		return 1;
	if (len && end[-1] != '\n')
		lines++; /* a last line without its end */
	while ((p = memchr(p, '\n', (size_t)(end - p))) && ++p)
		if (++lines > REPLY_LINES_MAX)
			return 1;
	return 0;
}

/*
 * The general comment gets one more block; full, it keeps what fitted
 * and takes no more (the note could not hold more anyway).
 */
static void add_general(struct review *r, struct buf *comment, int *full,
			const struct reply *rp, size_t block)
{
	size_t len = comment->len;
	int rc;

	if (*full)
		return;
	rc = comment->len ? buf_adds(comment, "\n\n") : 0;
	if (!rc)
		rc = reply_block_text(comment, rp, block, 0);
	if (rc) {
		if (comment->len == len + 2 || !comment->len)
			buf_truncate(comment, len); /* no blank tail */
		*full = 1;
		r->truncated = 1;
	}
}

static int parse_reply(struct review *r, const struct diff *parent)
{
	struct reply *rp = NULL;
	struct diff *pseudo = NULL;
	const struct diff *d;
	struct buf text = BUF_INIT(REPLY_TEXT_MAX);
	struct buf own = BUF_INIT(REPLY_TEXT_MAX);
	struct buf body = BUF_INIT(REVIEW_COMMENT_MAX);
	struct buf comment = BUF_INIT(REVIEW_COMMENT_MAX);
	size_t i;
	int rc, full = 0;

	/* too long to read whole: its beginning and its end, where the
	 * sign-off and trailers stand */
	if (too_long(r->mail->text.data, r->mail->text.len)) {
		rc = mailtext_elide(&text, r->mail->text.data,
				    r->mail->text.len, REPLY_TEXT_MAX,
				    REPLY_LINES_MAX);
		if (rc < 0)
			goto out;
		r->truncated = rc == 1;
		rc = reply_parse(&rp, text.data, text.len, r->mail->from.name,
				 r->mail->from.email);
	} else {
		rc = reply_parse(&rp, r->mail->text.data, r->mail->text.len,
				 r->mail->from.name, r->mail->from.email);
	}
	if (rc)
		goto out;
	rc = reply_anchor(rp, parent, parent ? NULL : &pseudo);
	if (rc)
		goto out;
	d = parent ? parent : pseudo;

	rc = reply_own_text(&own, rp);
	if (rc)
		goto out;
	rc = trailers_scan(&r->trailers, own.data, own.len,
			   r->subject.index == 0 && r->subject.total > 0 ?
				   TRAILERS_SERIES :
				   0);
	if (rc && rc != PB_ELIMIT)
		goto out;
	rc = 0;
	/*
	 * The bridge acts only on a NAK that cannot be misread: a NAK
	 * trailer standing in a trailer block as one address, or a
	 * paragraph that is the word alone.  Every other NAK the reader
	 * sees, and every mention of the word, is shown to a human as
	 * possibly an objection (docs/SECURITY.md).
	 */
	r->nak = rp->nak;
	if (rp->nak_alone)
		r->nak_form = REVIEW_NAK_EXPLICIT;
	for (i = 0; i < r->trailers.nr; i++) {
		const struct trailer *t = &r->trailers.v[i];

		if (!trailer_is_nak(t->type))
			continue;
		r->nak = 1;
		if ((t->flags & TRAILER_F_BLOCK) &&
		    !(t->flags & TRAILER_F_LOOSE))
			r->nak_form = REVIEW_NAK_EXPLICIT;
	}
	if (r->nak_form != REVIEW_NAK_EXPLICIT && (r->nak || rp->nak_mention))
		r->nak_form = REVIEW_NAK_MENTION;

	for (i = 0; i < rp->nr_blocks && !rc; i++) {
		const struct reply_block *b = &rp->blocks[i];
		int general = b->general;

		if (!b->substance)
			continue;
		/* a quote of no known file is no place for a diff note */
		if (!general && !parent &&
		    !diff_line_path(d, &d->lines[b->diff])[0])
			general = 1;
		if (!general) {
			buf_reset(&body);
			rc = reply_block_text(&body, rp, i, 1);
			if (rc == PB_ELIMIT) { /* keep what fitted */
				r->truncated = 1;
				rc = 0;
			}
			if (!rc && body.len)
				rc = add_inline(r, d, b->diff, &body);
			if (rc != PB_ELIMIT)
				continue;
			/* more inline comments than notes: in the comment */
			rc = 0;
		}
		add_general(r, &comment, &full, rp, i);
	}
	if (rp->truncated)
		r->truncated = 1;
	r->comment = buf_detach(&comment, NULL);
out:
	buf_release(&text);
	buf_release(&own);
	buf_release(&body);
	buf_release(&comment);
	diff_free(pseudo);
	reply_free(rp);
	return rc;
}

int review_parse(struct review **out, const char *raw, size_t len,
		 const struct diff *parent, const struct review_options *opts)
{
	struct review *r;
	int rc, total = 0;

	*out = NULL;
	r = xcalloc(1, sizeof(*r));
	subject_init(&r->subject);
	trailer_list_init(&r->trailers);
	trailer_list_init(&r->own_trailers);
	rc = mail_parse(&r->mail, raw, len, NULL);
	if (rc)
		goto fail;
	if (r->mail->flags & (MAIL_F_TRUNCATED | MAIL_F_LIMIT))
		r->truncated = 1;
	subject_parse(&r->subject, r->mail->subject, strlen(r->mail->subject));
	r->diff = diff_where(r->mail);
	r->kind = classify(r, opts, &total);
	r->bot = review_bot(r->mail);
	if (r->kind == REVIEW_COVER && total) {
		/* found by its thread or its shape: the series' numbers */
		r->subject.index = 0;
		r->subject.total = total;
	}
	auth_of(r, raw, len, opts);
	switch (r->kind) {
	case REVIEW_REPLY:
		rc = parse_reply(r, parent);
		if (rc)
			goto fail;
		break;
	case REVIEW_PATCH:
		rc = trailers_scan(&r->own_trailers, r->mail->text.data,
				   commit_message_len(r->mail->text.data,
						      r->mail->text.len),
				   TRAILERS_OWN);
		if (!rc && r->diff == REVIEW_DIFF_ATTACHMENT) {
			/* a format-patch file carries its own message */
			size_t start, n;

			n = patch_file_message(r->mail->patch.data,
					       r->mail->patch.len, &start);
			rc = trailers_scan(&r->own_trailers,
					   r->mail->patch.data + start, n,
					   TRAILERS_OWN);
		}
		if (rc && rc != PB_ELIMIT)
			goto fail;
		break;
	case REVIEW_COVER:
	case REVIEW_OTHER:
		break;
	}
	if (!r->comment)
		r->comment = xstrdup("");
	r->submission_why = not_submission(r, opts);
	r->submission = !r->submission_why;
	*out = r;
	return 0;
fail:
	review_free(r);
	return rc;
}

int review_patch_diff(struct diff **out, const char *raw, size_t len)
{
	struct mail *m;
	int rc;

	*out = NULL;
	rc = mail_parse(&m, raw, len, NULL);
	if (rc)
		return rc;
	if (diff_where(m) == REVIEW_DIFF_ATTACHMENT)
		rc = diff_parse(out, m->patch.data, m->patch.len);
	else
		rc = diff_parse(out, m->text.data, m->text.len);
	mail_free(m);
	return rc;
}

int review_thread_mail_read(struct review_thread_mail *out, struct strlist *ids,
			    const char *raw, size_t len)
{
	struct mail *m;
	struct subject subj;
	int rc;

	memset(out, 0, sizeof(*out));
	out->index = out->total = -1;
	rc = mail_parse(&m, raw, len, NULL);
	if (rc)
		return rc;
	subject_parse(&subj, m->subject, strlen(m->subject));
	if (subj.has_tag) {
		out->index = subj.index;
		out->total = subj.total;
	}
	out->reply = subj.reply;
	if (m->in_reply_to)
		out->in_reply_to = strlist_push(ids, m->in_reply_to);
	if (m->references.nr)
		out->root = strlist_push(ids, m->references.items[0]);
	subject_release(&subj);
	mail_free(m);
	return 0;
}

/* ------------------------------------------------------------------ */

/* How a reply's trailer is written (trailers.h): "block" alone is a
 * form the bridge may act on (docs/SECURITY.md). */
static const char *trailer_form(const struct trailer *t)
{
	if (t->flags & TRAILER_F_IN_SENTENCE)
		return "in_sentence";
	if (!(t->flags & TRAILER_F_BLOCK))
		return "not_in_block";
	if (t->flags & TRAILER_F_LOOSE)
		return "loose";
	return "block";
}

static void json_trailers(struct jsonw *w, const struct trailer_list *l,
			  int form)
{
	size_t i;

	jsonw_arr_begin(w);
	for (i = 0; i < l->nr; i++) {
		const struct trailer *t = &l->v[i];

		jsonw_obj_begin(w);
		jsonw_key(w, "type");
		jsonw_strz(w, t->type);
		jsonw_key(w, "name");
		jsonw_strz(w, t->name);
		jsonw_key(w, "email");
		jsonw_strz(w, t->email);
		jsonw_key(w, "scope");
		jsonw_strz(w, t->scope == TRAILER_SCOPE_SERIES ? "series" :
								 "patch");
		if (form) {
			jsonw_key(w, "form");
			jsonw_strz(w, trailer_form(t));
		}
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
}

static void json_diff_source(struct jsonw *w, const struct review *r)
{
	const struct mail *m = r->mail;

	if (r->diff == REVIEW_DIFF_NONE) {
		jsonw_null(w);
		return;
	}
	jsonw_obj_begin(w);
	jsonw_key(w, "part");
	if (r->diff == REVIEW_DIFF_BODY) {
		jsonw_strz(w, "body");
		jsonw_key(w, "type");
		jsonw_strz(w, m->text_type);
		jsonw_key(w, "filename");
		jsonw_null(w);
	} else {
		jsonw_strz(w, "attachment");
		jsonw_key(w, "type");
		jsonw_strz(w, m->patch_type);
		jsonw_key(w, "filename");
		jsonw_strz(w, m->patch_name);
	}
	jsonw_obj_end(w);
}

static void json_wrapped(struct jsonw *w, const struct review *r)
{
	const struct mail *m = r->mail;

	if (!(m->flags & MAIL_F_WRAPPED)) {
		jsonw_null(w);
		return;
	}
	jsonw_obj_begin(w);
	jsonw_key(w, "list");
	jsonw_obj_begin(w);
	jsonw_key(w, "name");
	jsonw_strz(w, m->wrapper.name);
	jsonw_key(w, "email");
	jsonw_strz(w, m->wrapper.email[0] ? m->wrapper.email : NULL);
	jsonw_obj_end(w);
	jsonw_key(w, "message_id");
	jsonw_strz(w, m->inner_message_id);
	jsonw_key(w, "trusted");
	jsonw_bool(w, r->wrap_trusted);
	jsonw_obj_end(w);
}

static void json_num(struct jsonw *w, int v)
{
	if (v < 0)
		jsonw_null(w);
	else
		jsonw_int(w, v);
}

/* The members of the parse result, into an open object. */
static void json_members(struct jsonw *w, const struct review *r)
{
	const struct mail *m = r->mail;
	const struct subject *s = &r->subject;
	size_t i;

	jsonw_key(w, "message_id");
	jsonw_strz(w, m->message_id);
	jsonw_key(w, "in_reply_to");
	jsonw_strz(w, m->in_reply_to);

	jsonw_key(w, "from");
	jsonw_obj_begin(w);
	jsonw_key(w, "name");
	jsonw_strz(w, m->from.name);
	jsonw_key(w, "email");
	jsonw_strz(w, m->from.email[0] ? m->from.email : NULL);
	jsonw_obj_end(w);

	jsonw_key(w, "subject");
	jsonw_obj_begin(w);
	jsonw_key(w, "prefix");
	jsonw_strz(w, s->prefix);
	jsonw_key(w, "version");
	json_num(w, s->version);
	jsonw_key(w, "index");
	json_num(w, s->index);
	jsonw_key(w, "total");
	json_num(w, s->total);
	jsonw_key(w, "reply");
	jsonw_bool(w, s->reply);
	jsonw_key(w, "title");
	jsonw_strz(w, s->title);
	jsonw_obj_end(w);

	jsonw_key(w, "kind");
	jsonw_strz(w, review_kind_name(r->kind));
	if (r->bot) {
		/* only for a bot: the other mails' output is unchanged */
		jsonw_key(w, "bot");
		jsonw_strz(w, r->bot);
	}
	jsonw_key(w, "submission");
	jsonw_bool(w, r->submission);
	jsonw_key(w, "target");
	jsonw_null(w); /* needs the thread map; offline there is none */
	jsonw_key(w, "trailers");
	json_trailers(w, &r->trailers, 1);
	jsonw_key(w, "own_trailers");
	json_trailers(w, &r->own_trailers, 0);
	jsonw_key(w, "nak");
	jsonw_bool(w, r->nak);
	jsonw_key(w, "nak_form");
	if (r->nak_form == REVIEW_NAK_EXPLICIT)
		jsonw_strz(w, "explicit");
	else if (r->nak_form == REVIEW_NAK_MENTION)
		jsonw_strz(w, "mention");
	else
		jsonw_null(w);

	jsonw_key(w, "inline");
	jsonw_arr_begin(w);
	for (i = 0; i < r->nr_inline; i++) {
		const struct review_inline *x = &r->inl[i];

		jsonw_obj_begin(w);
		jsonw_key(w, "path");
		jsonw_strz(w, x->path);
		jsonw_key(w, "old_path");
		jsonw_strz(w, x->old_path);
		jsonw_key(w, "old_line");
		json_num(w, x->old_line ? x->old_line : -1);
		jsonw_key(w, "new_line");
		json_num(w, x->new_line ? x->new_line : -1);
		jsonw_key(w, "body");
		jsonw_strz(w, x->body);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);

	jsonw_key(w, "comment");
	jsonw_strz(w, r->comment);
	jsonw_key(w, "diff_source");
	json_diff_source(w, r);
	jsonw_key(w, "wrapped");
	json_wrapped(w, r);
	/* What the parser warned of, when it did (mail.h, notes). */
	if (m->notes.nr) {
		jsonw_key(w, "warnings");
		jsonw_arr_begin(w);
		for (i = 0; i < m->notes.nr; i++)
			jsonw_strz(w, m->notes.items[i]);
		jsonw_arr_end(w);
	}
	jsonw_key(w, "auth");
	jsonw_obj_begin(w);
	jsonw_key(w, "dkim");
	jsonw_strz(w, authres_result_name(r->auth.dkim));
	jsonw_key(w, "dmarc");
	jsonw_strz(w, authres_result_name(r->auth.dmarc));
	jsonw_key(w, "verified");
	jsonw_bool(w, r->auth.verified);
	jsonw_key(w, "trusted_fields");
	jsonw_int(w, (int64_t)r->auth.trusted);
	jsonw_key(w, "forged_fields");
	jsonw_int(w, (int64_t)r->auth.forged);
	jsonw_obj_end(w);
	jsonw_key(w, "truncated");
	jsonw_bool(w, r->truncated);
}

int review_to_json(struct buf *out, const struct review *r)
{
	struct jsonw w;

	jsonw_init(&w, out, 2);
	jsonw_obj_begin(&w);
	json_members(&w, r);
	jsonw_obj_end(&w);
	return jsonw_finish(&w);
}

/* "file" and, for a mail of an mbox, "index": the start of a line. */
static void json_source(struct jsonw *w, const char *file, size_t index)
{
	jsonw_key(w, "file");
	jsonw_strz(w, file);
	if (index) {
		jsonw_key(w, "index");
		jsonw_int(w, (int64_t)index);
	}
}

int review_to_json_line(struct buf *out, const struct review *r,
			const char *file, size_t index)
{
	struct jsonw w;
	int rc;

	jsonw_init(&w, out, 0);
	jsonw_obj_begin(&w);
	json_source(&w, file, index);
	json_members(&w, r);
	jsonw_obj_end(&w);
	rc = jsonw_finish(&w);
	return rc ? rc : buf_addch(out, '\n');
}

int review_error_line(struct buf *out, const char *file, size_t index,
		      const char *error)
{
	struct jsonw w;
	int rc;

	jsonw_init(&w, out, 0);
	jsonw_obj_begin(&w);
	json_source(&w, file, index);
	jsonw_key(&w, "error");
	jsonw_strz(&w, error);
	jsonw_obj_end(&w);
	rc = jsonw_finish(&w);
	return rc ? rc : buf_addch(out, '\n');
}
