#include "mail/reply.h"
#include "mail/review.h"
#include "util/err.h"
#include "util/jsonw.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

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
static int has_diff(const char *p, size_t len)
{
	return mem_find(p, len, "\ndiff --git ", 12) ||
	       (mem_find(p, len, "\n--- ", 5) &&
		mem_find(p, len, "\n+++ ", 5) && mem_find(p, len, "\n@@ -", 5));
}

/* Does the text quote, "> " at the start of a line? */
static int has_quote(const char *p, size_t len)
{
	return (len >= 2 && p[0] == '>') || mem_find(p, len, "\n>", 2);
}

static enum review_kind classify(const struct review *r)
{
	const struct subject *s = &r->subject;
	const struct mail *m = r->mail;

	if (s->reply)
		return REVIEW_REPLY;
	/* a reply whose client kept the subject as it was: threaded, no
	 * diff of its own, quoting */
	if (s->has_tag && m->in_reply_to &&
	    !has_diff(m->text.data, m->text.len) &&
	    has_quote(m->text.data, m->text.len))
		return REVIEW_REPLY;
	if (s->has_tag && !s->forward)
		return s->index == 0 && s->total > 0 ? REVIEW_COVER :
						       REVIEW_PATCH;
	if (m->in_reply_to || m->references.nr)
		return REVIEW_REPLY;
	if (has_diff(m->text.data, m->text.len))
		return REVIEW_PATCH;
	return REVIEW_OTHER;
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

static void auth_of(struct review *r, const struct review_options *opts)
{
	const char *vals[64];
	size_t lens[64], n = 0, i;
	const char *v, *at;

	for (i = 0; n < 64 &&
		    (v = mail_header_get(r->mail, "Authentication-Results", i));
	     i++) {
		vals[n] = v;
		lens[n++] = strlen(v);
	}
	at = strrchr(r->mail->from.email, '@');
	authres_evaluate(&r->auth, vals, lens, n,
			 opts ? opts->trusted_authserv_id : NULL,
			 at ? at + 1 : NULL);
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

static int parse_reply(struct review *r, const struct diff *parent)
{
	struct reply *rp = NULL;
	struct diff *pseudo = NULL;
	const struct diff *d;
	struct buf own = BUF_INIT(REPLY_TEXT_MAX);
	struct buf body = BUF_INIT(REVIEW_COMMENT_MAX);
	struct buf comment = BUF_INIT(REVIEW_COMMENT_MAX);
	size_t i;
	int rc;

	rc = reply_parse(&rp, r->mail->text.data, r->mail->text.len,
			 r->mail->from.name, r->mail->from.email);
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
	r->nak = rp->nak;
	for (i = 0; i < r->trailers.nr; i++)
		if (trailer_is_nak(r->trailers.v[i].type))
			r->nak = 1;

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
			if (!rc && body.len)
				rc = add_inline(r, d, b->diff, &body);
			continue;
		}
		if (comment.len)
			rc = buf_adds(&comment, "\n\n");
		if (!rc)
			rc = reply_block_text(&comment, rp, i, 0);
	}
	if (rc == PB_ELIMIT)
		rc = 0; /* keep what fitted */
	r->comment = buf_detach(&comment, NULL);
out:
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
	int rc;

	*out = NULL;
	r = xcalloc(1, sizeof(*r));
	subject_init(&r->subject);
	trailer_list_init(&r->trailers);
	trailer_list_init(&r->own_trailers);
	rc = mail_parse(&r->mail, raw, len, NULL);
	if (rc)
		goto fail;
	subject_parse(&r->subject, r->mail->subject, strlen(r->mail->subject));
	r->kind = classify(r);
	auth_of(r, opts);
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
		if (rc && rc != PB_ELIMIT)
			goto fail;
		break;
	case REVIEW_COVER:
	case REVIEW_OTHER:
		break;
	}
	if (!r->comment)
		r->comment = xstrdup("");
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
	rc = diff_parse(out, m->text.data, m->text.len);
	mail_free(m);
	return rc;
}

/* ------------------------------------------------------------------ */

static void json_trailers(struct jsonw *w, const struct trailer_list *l)
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
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
}

static void json_num(struct jsonw *w, int v)
{
	if (v < 0)
		jsonw_null(w);
	else
		jsonw_int(w, v);
}

int review_to_json(struct buf *out, const struct review *r)
{
	const struct mail *m = r->mail;
	const struct subject *s = &r->subject;
	struct jsonw w;
	size_t i;

	jsonw_init(&w, out, 2);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "message_id");
	jsonw_strz(&w, m->message_id);
	jsonw_key(&w, "in_reply_to");
	jsonw_strz(&w, m->in_reply_to);

	jsonw_key(&w, "from");
	jsonw_obj_begin(&w);
	jsonw_key(&w, "name");
	jsonw_strz(&w, m->from.name);
	jsonw_key(&w, "email");
	jsonw_strz(&w, m->from.email);
	jsonw_obj_end(&w);

	jsonw_key(&w, "subject");
	jsonw_obj_begin(&w);
	jsonw_key(&w, "prefix");
	jsonw_strz(&w, s->prefix);
	jsonw_key(&w, "version");
	json_num(&w, s->version);
	jsonw_key(&w, "index");
	json_num(&w, s->index);
	jsonw_key(&w, "total");
	json_num(&w, s->total);
	jsonw_key(&w, "reply");
	jsonw_bool(&w, s->reply);
	jsonw_key(&w, "title");
	jsonw_strz(&w, s->title);
	jsonw_obj_end(&w);

	jsonw_key(&w, "kind");
	jsonw_strz(&w, review_kind_name(r->kind));
	jsonw_key(&w, "target");
	jsonw_null(&w); /* needs the thread map; offline there is none */
	jsonw_key(&w, "trailers");
	json_trailers(&w, &r->trailers);
	jsonw_key(&w, "own_trailers");
	json_trailers(&w, &r->own_trailers);
	jsonw_key(&w, "nak");
	jsonw_bool(&w, r->nak);

	jsonw_key(&w, "inline");
	jsonw_arr_begin(&w);
	for (i = 0; i < r->nr_inline; i++) {
		const struct review_inline *x = &r->inl[i];

		jsonw_obj_begin(&w);
		jsonw_key(&w, "path");
		jsonw_strz(&w, x->path);
		jsonw_key(&w, "old_path");
		jsonw_strz(&w, x->old_path);
		jsonw_key(&w, "old_line");
		json_num(&w, x->old_line ? x->old_line : -1);
		jsonw_key(&w, "new_line");
		json_num(&w, x->new_line ? x->new_line : -1);
		jsonw_key(&w, "body");
		jsonw_strz(&w, x->body);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);

	jsonw_key(&w, "comment");
	jsonw_strz(&w, r->comment);
	jsonw_key(&w, "auth");
	jsonw_obj_begin(&w);
	jsonw_key(&w, "dkim");
	jsonw_strz(&w, authres_result_name(r->auth.dkim));
	jsonw_key(&w, "dmarc");
	jsonw_strz(&w, authres_result_name(r->auth.dmarc));
	jsonw_key(&w, "verified");
	jsonw_bool(&w, r->auth.verified);
	jsonw_obj_end(&w);
	jsonw_obj_end(&w);
	return jsonw_finish(&w);
}
