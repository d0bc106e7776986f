#include "outbound/series.h"

#include "core/msgid.h"
#include "core/version.h"
#include "outbound/mailhdr.h"
#include "outbound/qp.h"
#include "outbound/template.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Text pieces (a title, a name, a block of the cover letter). */
#define SERIES_TEXT_MAX PB_TEXT_PART_MAX
#define SERIES_BLOCK_MAX GITREPO_STAT_MAX

void series_opts_init(struct series_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->revision = 1;
	opts->bridge_name = "patchbridge";
	opts->threading = SERIES_THREAD_SHALLOW;
	opts->from_mode = SERIES_FROM_BRIDGE;
	opts->max_series = PB_SERIES_MAX_DEFAULT;
}

struct ctx {
	const struct series_opts *o;
	const struct gitrepo_range *r;
	struct series *s;
	struct strlist to; /* formatted mailboxes */
	struct strlist cc;
	struct strlist root_refs; /* References of the first mail */
	const char *root_irt; /* its In-Reply-To, or NULL */
	unsigned total;
	int width; /* digits of total */
};

static void mail_release(struct series_mail *m)
{
	free(m->msgid);
	free(m->subject);
	buf_release(&m->text);
}

void series_free(struct series *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nr; i++)
		mail_release(&s->mails[i]);
	free(s->mails);
	free(s->root_msgid);
	free(s);
}

/* --- recipients ------------------------------------------------------- */

/*
 * Split "Name <addr>", "<addr>" or "addr" into name and addr (copies);
 * a quoted name loses its quotes and quoted-pairs.
 */
static int parse_mailbox(char **name, char **addr, const char *item)
{
	const char *lt = strrchr(item, '<'), *gt, *p = item;
	size_t len = strlen(item), nlen;
	struct buf n = BUF_INIT(PB_HEADER_VALUE_MAX);

	*name = NULL;
	*addr = NULL;
	if (!lt) {
		mem_trim(&p, &len);
		*addr = xstrndup(p, len);
		*name = xstrdup("");
		return 0;
	}
	gt = strchr(lt, '>');
	if (!gt)
		return err_set(PB_EINVAL, "recipient: '<' without '>'");
	*addr = xstrndup(lt + 1, (size_t)(gt - lt - 1));
	nlen = (size_t)(lt - item);
	mem_trim(&p, &nlen);
	if (nlen >= 2 && p[0] == '"' && p[nlen - 1] == '"') {
		size_t i;

		for (i = 1; i + 1 < nlen; i++) {
			if (p[i] == '\\' && i + 2 < nlen)
				i++;
			buf_addch(&n, p[i]);
		}
		if (buf_error(&n)) {
			free(*addr);
			*addr = NULL;
			buf_release(&n);
			return err_set(PB_EINVAL, "recipient: name too long");
		}
		*name = buf_detach(&n, NULL);
	} else {
		*name = xstrndup(p, nlen);
	}
	buf_release(&n);
	return 0;
}

static int add_recipients(struct strlist *out, struct strlist *seen,
			  const struct strlist *in, const char *what)
{
	struct buf mb = BUF_INIT(PB_HEADER_VALUE_MAX);
	char *name = NULL, *addr = NULL;
	size_t i;
	int rc = 0;

	if (!in)
		return 0;
	strlist_for_each (in, i) {
		rc = parse_mailbox(&name, &addr, in->items[i]);
		if (!rc && strlist_push_unique_icase(seen, addr)) {
			buf_reset(&mb);
			rc = mailhdr_format_addr(&mb, name, addr);
			if (!rc)
				strlist_push(out, mb.data);
		}
		free(name);
		free(addr);
		name = addr = NULL;
		if (rc) {
			err_prefix(rc, "%s entry %zu", what, i + 1);
			break;
		}
	}
	buf_release(&mb);
	return rc;
}

/* --- headers ---------------------------------------------------------- */

static int subject_prefix(struct buf *out, const struct ctx *c, unsigned index,
			  int numbered)
{
	const char *pfx = c->o->subject_prefix ? c->o->subject_prefix : "PATCH";
	int rc;

	rc = buf_addf(out, "[%s", pfx);
	if (!rc && c->o->revision > 1)
		rc = buf_addf(out, "%sv%u", *pfx ? " " : "", c->o->revision);
	if (!rc && numbered)
		rc = buf_addf(out, " %0*u/%u", c->width, index, c->total);
	if (!rc)
		rc = buf_addch(out, ']');
	return rc;
}

static int msgid_for(char **out, const struct ctx *c, unsigned index)
{
	struct buf b = BUF_INIT(PB_MSGID_MAX);
	struct msgid_parts p = {
		.project = c->o->project,
		.iid = c->o->iid,
		.revision = c->o->revision,
		.index = index,
		.total = c->total,
		.head_sha = c->r->head,
		.domain = c->o->msgid_domain,
	};
	int rc = msgid_format(&b, &p);

	if (rc) {
		buf_release(&b);
		return rc;
	}
	*out = buf_detach(&b, NULL);
	return 0;
}

/* "<a> <b> <c>" from a list of ids. */
static int id_list(struct buf *out, const struct strlist *ids, const char *last)
{
	size_t i;
	int rc = 0;

	strlist_for_each (ids, i) {
		rc = buf_addf(out, "%s<%s>", out->len ? " " : "",
			      ids->items[i]);
		if (rc)
			return rc;
	}
	if (last)
		rc = buf_addf(out, "%s<%s>", out->len ? " " : "", last);
	return rc;
}

static int from_header(struct buf *hdr, const struct ctx *c, const char *name,
		       const char *email, int *in_body)
{
	struct buf mb = BUF_INIT(PB_HEADER_VALUE_MAX);
	struct buf via = BUF_INIT(PB_HEADER_VALUE_MAX);
	int rc = PB_EINVAL;

	*in_body = 1;
	if (c->o->from_mode == SERIES_FROM_AUTHOR && email) {
		rc = mailhdr_format_addr(&mb, name, email);
		if (!rc)
			*in_body = 0;
		else
			err_clear();
	}
	if (*in_body) {
		/* DMARC-safe: the bridge's own address; the author's name
		 * says who wrote it (like lists that rewrite From). */
		rc = buf_addf(&via, "%s via %s", name && *name ? name : email,
			      c->o->bridge_name ? c->o->bridge_name :
						  "patchbridge");
		if (!rc)
			rc = mailhdr_format_addr(&mb, via.data,
						 c->o->bridge_address);
	}
	if (!rc)
		rc = mailhdr_add_raw(hdr, "From", mb.data);
	buf_release(&mb);
	buf_release(&via);
	return rc;
}

static int common_headers(struct buf *hdr, const struct ctx *c,
			  const struct series_mail *m, const char *prefix,
			  const char *title, const char *irt,
			  const struct strlist *refs)
{
	struct buf b = BUF_INIT(PB_HEADER_VALUE_MAX);
	int rc = 0;

	rc = mailhdr_add_addrs(hdr, "To", &c->to);
	if (!rc)
		rc = mailhdr_add_addrs(hdr, "Cc", &c->cc);
	if (!rc)
		rc = mailhdr_add_text(hdr, "Subject", prefix, title);
	if (!rc)
		rc = buf_adds(hdr, "Date: ");
	if (!rc)
		rc = mailhdr_date(hdr, c->o->date + (int64_t)m->index,
				  c->o->date_tz);
	if (!rc)
		rc = buf_addf(hdr, "\nMessage-ID: <%s>\n", m->msgid);
	if (!rc && irt)
		rc = buf_addf(hdr, "In-Reply-To: <%s>\n", irt);
	if (!rc && refs && refs->nr) {
		rc = id_list(&b, refs, NULL);
		if (!rc)
			rc = mailhdr_add_raw(hdr, "References", b.data);
	}
	if (!rc)
		rc = buf_addf(hdr, "X-Mailer: patchbridge %s\n", pb_version());
	if (!rc)
		rc = mailhdr_add_text(hdr, "X-Patchbridge-Project", NULL,
				      c->o->project);
	if (!rc)
		rc = buf_addf(hdr,
			      "X-Patchbridge-MR: %llu\n"
			      "X-Patchbridge-Revision: %u\n",
			      (unsigned long long)c->o->iid, c->o->revision);
	buf_release(&b);
	return rc;
}

/* Headers + MIME + blank line + body (8bit or quoted-printable). */
static int finish_mail(struct series_mail *m, const struct buf *hdr,
		       const struct buf *body)
{
	int qp = qp_needed(body->data, body->len), rc;

	rc = buf_addbuf(&m->text, hdr);
	if (!rc)
		rc = buf_addf(&m->text,
			      "MIME-Version: 1.0\n"
			      "Content-Type: text/plain; charset=UTF-8\n"
			      "Content-Transfer-Encoding: %s\n\n",
			      qp ? "quoted-printable" : "8bit");
	if (!rc && qp)
		rc = qp_encode(&m->text, body->data, body->len);
	else if (!rc)
		rc = buf_addbuf(&m->text, body);
	return rc;
}

static int signature(struct buf *body)
{
	return buf_addf(body, "-- \npatchbridge %s\n", pb_version());
}

/* --- patch mails ------------------------------------------------------ */

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

/* RFC 5322 specials that need a quoted-string in a display name. */
static int needs_quotes(const char *s)
{
	for (; *s; s++)
		if (strchr("()<>[]:;@\\,.\"", *s))
			return 1;
	return 0;
}

/*
 * The in-body "From: Name <email>" line, as git send-email writes it: raw
 * UTF-8 (the body's charset), quoted when the name has specials.  A name
 * holding "=?" would be decoded by git mailinfo, so it is RFC 2047
 * encoded instead; one with control characters loses them.
 */
static int inbody_from(struct buf *body, const struct gitrepo_person *a)
{
	struct buf n = BUF_INIT(SERIES_TEXT_MAX);
	const char *name = a->name;
	size_t i;
	int rc = 0;

	if (strstr(name, "=?")) {
		rc = mailhdr_format_addr(&n, name, a->email);
		if (!rc) {
			rc = buf_addf(body, "From: %s\n", n.data);
			goto out;
		}
		/* An address mailhdr will not take: write it raw. */
		err_clear();
		buf_reset(&n);
		rc = 0;
	}
	if (has_control(name)) {
		rc = mailhdr_sanitize(&n, name, strlen(name));
		name = n.data;
	}
	if (!rc)
		rc = buf_adds(body, "From: ");
	if (!rc && needs_quotes(name)) {
		rc = buf_addch(body, '"');
		for (i = 0; !rc && name[i]; i++) {
			if (name[i] == '"' || name[i] == '\\')
				rc = buf_addch(body, '\\');
			if (!rc)
				rc = buf_addch(body, name[i]);
		}
		if (!rc)
			rc = buf_addch(body, '"');
	} else if (!rc) {
		rc = buf_adds(body, name);
	}
	if (!rc)
		rc = buf_addf(body, " <%s>\n", a->email);
out:
	buf_release(&n);
	return rc;
}

static int patch_mail(struct ctx *c, struct series_mail *m,
		      const struct gitrepo_commit *cm, int numbered,
		      const char *irt, const struct strlist *refs)
{
	struct buf hdr = BUF_INIT(PB_HEADER_VALUE_MAX * 4);
	struct buf body = BUF_INIT(GITREPO_PATCH_MAX + 1024 * 1024);
	struct buf prefix = BUF_INIT(256);
	struct buf mdate = BUF_INIT(64), adate = BUF_INIT(64);
	int rc, in_body;

	memcpy(m->sha, cm->sha, sizeof(m->sha));
	m->subject = xstrdup(cm->subject);
	rc = subject_prefix(&prefix, c, m->index, numbered);
	if (!rc)
		rc = from_header(&hdr, c, cm->author.name, cm->author.email,
				 &in_body);
	if (!rc)
		rc = common_headers(&hdr, c, m, prefix.data, cm->subject, irt,
				    refs);
	/* git am takes authorship from in-body headers before the message
	 * (mailinfo.c check_inbody_header). */
	if (!rc && in_body)
		rc = inbody_from(&body, &cm->author);
	if (!rc)
		rc = mailhdr_date(&mdate, c->o->date + (int64_t)m->index,
				  c->o->date_tz);
	if (!rc)
		rc = mailhdr_date(&adate, cm->author.time,
				  cm->author.tz_minutes);
	if (!rc && strcmp(mdate.data, adate.data))
		rc = buf_addf(&body, "Date: %s\n", adate.data);
	if (!rc && body.len)
		rc = buf_addch(&body, '\n');
	if (!rc)
		rc = buf_adds(&body, cm->body);
	if (!rc)
		rc = buf_addbuf(&body, &cm->patch);
	if (!rc)
		rc = signature(&body);
	if (!rc)
		rc = finish_mail(m, &hdr, &body);
	if (rc)
		err_prefix(rc, "patch %u (%.12s)", m->index, cm->sha);
	buf_release(&hdr);
	buf_release(&body);
	buf_release(&prefix);
	buf_release(&mdate);
	buf_release(&adate);
	return rc;
}

/* --- the cover letter ------------------------------------------------- */

static int add_clean(struct buf *out, const char *s)
{
	return s ? mailhdr_sanitize(out, s, strlen(s)) : 0;
}

static int block_merge_request(struct buf *out, const struct series_opts *o)
{
	int rc;

	if (!o->url && !o->source_branch && !o->target_branch)
		return 0;
	rc = buf_adds(out, "Merge request: ");
	if (!rc)
		rc = add_clean(out, o->project);
	if (!rc)
		rc = buf_addf(out, "!%llu\n", (unsigned long long)o->iid);
	if (!rc && (o->author_name || o->author_username)) {
		rc = buf_adds(out, "Author: ");
		if (!rc)
			rc = add_clean(out, o->author_name);
		if (!rc && o->author_username) {
			rc = buf_adds(out, o->author_name ? " (@" : "@");
			if (!rc)
				rc = add_clean(out, o->author_username);
			if (!rc && o->author_name)
				rc = buf_addch(out, ')');
		}
		if (!rc)
			rc = buf_addch(out, '\n');
	}
	if (!rc && (o->source_branch || o->target_branch)) {
		rc = buf_adds(out, "Branches: ");
		if (!rc)
			rc = add_clean(
				out, o->source_branch ? o->source_branch : "?");
		if (!rc)
			rc = buf_adds(out, " -> ");
		if (!rc)
			rc = add_clean(
				out, o->target_branch ? o->target_branch : "?");
		if (!rc)
			rc = buf_addch(out, '\n');
	}
	if (!rc)
		rc = buf_addch(out, '\n');
	return rc;
}

static const char *rd_word(enum gitrepo_rd_status st)
{
	switch (st) {
	case GITREPO_RD_UNCHANGED:
		return "unchanged";
	case GITREPO_RD_MODIFIED:
		return "modified";
	case GITREPO_RD_NEW:
		return "new";
	case GITREPO_RD_DROPPED:
		return "dropped";
	}
	return "?";
}

static int block_changes(struct buf *out, const struct ctx *c)
{
	const struct series_opts *o = c->o;
	const struct gitrepo_range *prev = o->prev_range;
	unsigned pv = o->prev_revision ? o->prev_revision : o->revision - 1;
	struct gitrepo_rangediff *rd = NULL;
	size_t i;
	int rc;

	if (o->revision < 2)
		return 0;
	rc = buf_addf(out, "Changes in v%u:\n", o->revision);
	if (rc)
		return rc;
	if (!prev || !prev->have_patches || !c->r->have_patches)
		return buf_addf(out,
				"- v%u is not available to compare "
				"with.\n\n",
				pv);
	rc = gitrepo_range_diff(&rd, prev, c->r);
	for (i = 0; !rc && i < rd->nr; i++) {
		const struct gitrepo_rd_entry *e = &rd->entries[i];
		const struct gitrepo_commit *cm;

		if (e->status == GITREPO_RD_DROPPED) {
			cm = &prev->commits[e->old_idx];
			rc = buf_addf(out, "- v%u %zu/%zu \"", pv,
				      e->old_idx + 1, prev->nr);
		} else {
			cm = &c->r->commits[e->new_idx];
			rc = buf_addf(out, "- %zu/%u \"", e->new_idx + 1,
				      c->total);
		}
		if (!rc)
			rc = add_clean(out, cm->subject);
		if (!rc)
			rc = buf_addf(out, "\": %s\n", rd_word(e->status));
	}
	if (!rc)
		rc = buf_addf(out, "\nRange-diff against v%u:\n", pv);
	if (!rc)
		rc = gitrepo_rangediff_render(out, rd, prev, c->r);
	if (!rc)
		rc = buf_addch(out, '\n');
	gitrepo_rangediff_free(rd);
	return rc;
}

/* The repository to fetch from: given, or the MR URL's project part. */
static int fetch_url(struct buf *out, const struct series_opts *o)
{
	const char *cut;

	if (o->fetch_url)
		return add_clean(out, o->fetch_url);
	if (o->url && (cut = strstr(o->url, "/-/merge_requests/"))) {
		struct buf tmp = BUF_INIT(PB_HTTP_URL_MAX);
		int rc = buf_add(&tmp, o->url, (size_t)(cut - o->url));

		if (!rc)
			rc = add_clean(out, tmp.data);
		if (!rc)
			rc = buf_adds(out, ".git");
		buf_release(&tmp);
		return rc;
	}
	return buf_adds(out, "<repository>");
}

static int block_notes(struct buf *out, const struct ctx *c)
{
	const struct gitrepo_range *r = c->r;
	int rc = 0;

	if (c->s->cover_only) {
		rc = buf_addf(out,
			      "This revision has %u patches, more than the "
			      "%zu mailed to the list,\n"
			      "so only this cover letter is sent.  Fetch the "
			      "series with:\n\n  git fetch ",
			      c->total,
			      c->o->max_series ? c->o->max_series :
						 (size_t)PB_SERIES_MAX_DEFAULT);
		if (!rc)
			rc = fetch_url(out, c->o);
		if (!rc)
			rc = buf_addf(out,
				      " refs/merge-requests/%llu/head\n"
				      "  git log --reverse %.12s..%.12s\n\n",
				      (unsigned long long)c->o->iid,
				      r->merge_base[0] ? r->merge_base :
							 r->base,
				      r->head);
	}
	if (!rc && r->merges_skipped)
		rc = buf_addf(out,
			      "Note: %zu merge commit%s in this revision %s "
			      "not mailed (git format-patch\n"
			      "leaves merges out); the patches are the other "
			      "commits, in order.\n\n",
			      r->merges_skipped,
			      r->merges_skipped == 1 ? "" : "s",
			      r->merges_skipped == 1 ? "is" : "are");
	if (!rc && r->empty_skipped)
		rc = buf_addf(out,
			      "Note: %zu commit%s that change%s nothing %s "
			      "not mailed.\n\n",
			      r->empty_skipped,
			      r->empty_skipped == 1 ? "" : "s",
			      r->empty_skipped == 1 ? "s" : "",
			      r->empty_skipped == 1 ? "is" : "are");
	if (!rc && c->o->note && *c->o->note)
		rc = buf_addf(out, "%s\n", c->o->note);
	return rc;
}

static int cover_mail(struct ctx *c, struct series_mail *m, const char *irt,
		      const struct strlist *refs)
{
	const struct series_opts *o = c->o;
	const struct gitrepo_commit *head = &c->r->commits[c->r->nr - 1];
	struct buf hdr = BUF_INIT(PB_HEADER_VALUE_MAX * 4);
	struct buf body = BUF_INIT(SERIES_BLOCK_MAX * 4);
	struct buf prefix = BUF_INIT(256);
	struct buf desc = BUF_INIT(SERIES_TEXT_MAX);
	struct buf mr = BUF_INIT(SERIES_TEXT_MAX);
	struct buf changes = BUF_INIT(SERIES_BLOCK_MAX);
	struct buf notes = BUF_INIT(SERIES_TEXT_MAX);
	struct buf shortlog = BUF_INIT(SERIES_BLOCK_MAX);
	struct buf link = BUF_INIT(PB_HTTP_URL_MAX);
	struct buf title = BUF_INIT(SERIES_TEXT_MAX);
	struct buf author = BUF_INIT(SERIES_TEXT_MAX);
	struct buf ver = BUF_INIT(32), count = BUF_INIT(32), iid = BUF_INIT(32);
	const char *name = o->author_name ? o->author_name : head->author.name;
	const char *email = o->author_email ? o->author_email :
					      head->author.email;
	int rc, in_body;

	memcpy(m->sha, c->r->head, sizeof(m->sha));
	rc = add_clean(&title, o->title ? o->title : "*** SUBJECT HERE ***");
	m->subject = xstrdup(title.data);
	if (!rc)
		rc = subject_prefix(&prefix, c, 0, 1);
	if (!rc)
		rc = from_header(&hdr, c, name, email, &in_body);
	if (!rc)
		rc = common_headers(&hdr, c, m, prefix.data, title.data, irt,
				    refs);

	if (!rc && o->description && *o->description) {
		rc = template_wrap(&desc, o->description,
				   strlen(o->description), TEMPLATE_WRAP_WIDTH);
		if (!rc && desc.len)
			rc = buf_addch(&desc, '\n');
	} else if (!rc && !o->title) {
		rc = buf_adds(&desc, "*** BLURB HERE ***\n\n");
	}
	if (!rc)
		rc = block_merge_request(&mr, o);
	if (!rc)
		rc = block_changes(&changes, c);
	if (!rc)
		rc = block_notes(&notes, c);
	if (!rc)
		rc = gitrepo_shortlog(&shortlog, c->r);
	if (!rc && o->url) {
		rc = buf_adds(&link, "Link: ");
		if (!rc)
			rc = add_clean(&link, o->url);
		if (!rc)
			rc = buf_addch(&link, '\n');
	}
	if (!rc)
		rc = add_clean(&author, name);
	if (!rc && o->revision > 1)
		rc = buf_addf(&ver, "v%u", o->revision);
	if (!rc)
		rc = buf_addf(&count, "%u", c->total);
	if (!rc)
		rc = buf_addf(&iid, "%llu", (unsigned long long)o->iid);
	if (!rc) {
		const struct template_var vars[] = {
			{ "description", desc.data },
			{ "merge_request", mr.data },
			{ "changes", changes.data },
			{ "review_threads",
			  o->review_threads ? o->review_threads : "" },
			{ "reviewers", o->reviewers ? o->reviewers : "" },
			{ "signatures", o->signatures ? o->signatures : "" },
			{ "notes", notes.data },
			{ "shortlog", shortlog.data },
			{ "diffstat", c->r->diffstat.data },
			{ "base_commit",
			  c->r->merge_base[0] ? c->r->merge_base : c->r->base },
			{ "head_commit", c->r->head },
			{ "link", link.data },
			{ "title", title.data },
			{ "author", author.data },
			{ "project", o->project },
			{ "iid", iid.data },
			{ "version", ver.data },
			{ "count", count.data },
		};
		const char *t = o->cover_template ? o->cover_template :
						    series_cover_template;
		size_t tlen = o->cover_template ? o->cover_template_len :
						  series_cover_template_len;

		rc = template_render(&body, t, tlen, vars,
				     sizeof(vars) / sizeof(vars[0]));
	}
	if (!rc)
		rc = signature(&body);
	if (!rc)
		rc = finish_mail(m, &hdr, &body);
	if (rc)
		err_prefix(rc, "cover letter");
	buf_release(&hdr);
	buf_release(&body);
	buf_release(&prefix);
	buf_release(&desc);
	buf_release(&mr);
	buf_release(&changes);
	buf_release(&notes);
	buf_release(&shortlog);
	buf_release(&link);
	buf_release(&title);
	buf_release(&author);
	buf_release(&ver);
	buf_release(&count);
	buf_release(&iid);
	return rc;
}

/* --- the series ------------------------------------------------------- */

static int check_opts(const struct series_opts *o,
		      const struct gitrepo_range *r)
{
	if (!o->project || !*o->project)
		return err_set(PB_EINVAL, "series: no project");
	if (o->iid == 0)
		return err_set(PB_EINVAL, "series: no MR iid");
	if (o->revision < 1 || o->revision > MSGID_NUM_MAX)
		return err_set(PB_EINVAL, "series: revision out of range");
	if (!o->bridge_address)
		return err_set(PB_EINVAL, "series: no bridge address");
	if (!msgid_domain_ok(o->msgid_domain))
		return err_set(PB_EINVAL, "series: bad Message-ID domain");
	if (r->nr == 0)
		return err_set(PB_EINVAL, "series: the range has no patches");
	if (r->nr > MSGID_NUM_MAX)
		return err_set(PB_ELIMIT, "series: more than %d patches",
			       MSGID_NUM_MAX);
	return 0;
}

static void root_threading(struct ctx *c)
{
	const struct series_opts *o = c->o;
	const struct strlist *prev = o->prev_roots;
	size_t i;

	if (o->in_reply_to && *o->in_reply_to) {
		c->root_irt = o->in_reply_to;
		strlist_push(&c->root_refs, o->in_reply_to);
		return;
	}
	if (o->revision < 2 || !prev || prev->nr == 0)
		return;
	switch (o->threading) {
	case SERIES_THREAD_SHALLOW:
		c->root_irt = prev->items[0];
		strlist_push(&c->root_refs, prev->items[0]);
		break;
	case SERIES_THREAD_DEEP:
		c->root_irt = prev->items[prev->nr - 1];
		strlist_for_each (prev, i)
			strlist_push(&c->root_refs, prev->items[i]);
		break;
	case SERIES_THREAD_NONE:
		break;
	}
}

int series_build(struct series **out, const struct gitrepo_range *range,
		 const struct series_opts *opts)
{
	return series_build_each(out, range, opts, NULL);
}

int series_build_each(struct series **out, const struct gitrepo_range *range,
		      const struct series_opts *opts,
		      const struct series_sink *sink)
{
	struct strlist seen = STRLIST_INIT, patch_refs = STRLIST_INIT;
	struct ctx c;
	struct series *s;
	size_t max, i, k;
	int rc, cover;
	unsigned t;

	*out = NULL;
	rc = check_opts(opts, range);
	if (rc)
		return rc;
	memset(&c, 0, sizeof(c));
	c.o = opts;
	c.r = range;
	c.total = (unsigned)range->nr;
	for (t = c.total, c.width = 1; t >= 10; t /= 10)
		c.width++;
	s = xcalloc(1, sizeof(*s));
	c.s = s;
	s->total = c.total;
	max = opts->max_series ? opts->max_series : PB_SERIES_MAX_DEFAULT;
	s->cover_only = range->nr > max || !range->have_patches;
	cover = s->cover_only || range->nr > 1 || opts->cover_single;

	rc = add_recipients(&c.to, &seen, opts->to, "To");
	if (!rc)
		rc = add_recipients(&c.cc, &seen, opts->cc, "Cc");
	if (rc)
		goto out;

	s->mails = xcalloc(range->nr + 1, sizeof(*s->mails));
	for (i = 0; i < range->nr + 1; i++)
		buf_init(&s->mails[i].text, SERIES_MAIL_MAX);
	s->nr = (cover ? 1 : 0) + (s->cover_only ? 0 : range->nr);
	for (i = 0, k = cover ? 0 : 1; i < s->nr; i++, k++) {
		s->mails[i].index = (unsigned)k;
		s->mails[i].date = opts->date + (int64_t)k;
		rc = msgid_for(&s->mails[i].msgid, &c, (unsigned)k);
		if (rc)
			goto out;
	}
	s->root_msgid = xstrdup(s->mails[0].msgid);
	root_threading(&c);
	/* Patches reply to the first mail, References its own References
	 * then it (git send-email --thread --no-chain-reply-to). */
	strlist_for_each (&c.root_refs, i)
		strlist_push(&patch_refs, c.root_refs.items[i]);
	strlist_push(&patch_refs, s->root_msgid);

	for (i = 0; i < s->nr && !rc; i++) {
		struct series_mail *m = &s->mails[i];
		int first = i == 0;
		const char *irt = first ? c.root_irt : s->root_msgid;
		const struct strlist *refs = first ? &c.root_refs : &patch_refs;

		if (m->index == 0) {
			rc = cover_mail(&c, m, irt, refs);
		} else {
			if (sink && sink->before)
				rc = sink->before(sink->arg, m->index - 1);
			if (!rc)
				rc = patch_mail(&c, m,
						&range->commits[m->index - 1],
						cover, irt, refs);
		}
		if (!rc && sink) {
			rc = sink->each(sink->arg, m);
			buf_release(&m->text);
		}
	}
out:
	strlist_release(&seen);
	strlist_release(&patch_refs);
	strlist_release(&c.to);
	strlist_release(&c.cc);
	strlist_release(&c.root_refs);
	if (rc) {
		series_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int series_mbox_append(struct buf *out, const struct series_mail *mail)
{
	const char *p = mail->text.data, *end = p + mail->text.len, *nl;
	size_t start = out->len;
	int rc;

	/* git format-patch's separator: a fixed, magic date, so the file
	 * can be recognised (see git's Documentation/git-format-patch). */
	rc = buf_addf(out, "From %s Mon Sep 17 00:00:00 2001\n", mail->sha);
	while (!rc && p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		nl = nl ? nl + 1 : end;
		/* Never expected (such bodies are quoted-printable); kept
		 * so that a bug cannot split a message in an mbox. */
		if ((size_t)(end - p) >= 5 && !memcmp(p, "From ", 5))
			rc = buf_addch(out, '>');
		if (!rc)
			rc = buf_add(out, p, (size_t)(nl - p));
		p = nl;
	}
	if (!rc && mail->text.len && end[-1] != '\n')
		rc = buf_addch(out, '\n');
	if (!rc)
		rc = buf_addch(out, '\n');
	if (rc)
		buf_truncate(out, start);
	return rc;
}

int series_attest_text(struct buf *out, const char *text, size_t len,
		       int64_t date, const struct series_attest *a)
{
	int rc = patatt_sign_mail(out, text, len, a->key, a->identity,
				  a->selector, date);

	return rc ? err_prefix(rc, "attesting the mail") : 0;
}
