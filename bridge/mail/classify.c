#include "mail/classify.h"

#include "core/msgid.h"
#include "mail/hdrdecode.h"
#include "mail/mail.h"
#include "mail/review.h"
#include "mail/subject.h"
#include "util/err.h"
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

/* MRs the subject fallback looks at for one mail: those the threading
 * headers name, or all open revisions with the subject's vN and M (past
 * the cap the fallback gives up rather than guess). */
#define CLASSIFY_MRS_MAX 8
#define CLASSIFY_OPEN_MRS_MAX 32

void classify_input_init(struct classify_input *in)
{
	memset(in, 0, sizeof(*in));
	strlist_init(&in->references);
}

void classify_input_release(struct classify_input *in)
{
	free(in->message_id);
	free(in->in_reply_to);
	strlist_release(&in->references);
	free(in->from);
	free(in->sender);
	classify_input_init(in);
}

void classify_result_init(struct classify_result *res)
{
	memset(res, 0, sizeof(*res));
	res->verdict = CLASSIFY_PASS;
	res->reason = "";
}

void classify_result_release(struct classify_result *res)
{
	diff_free(res->parent);
	classify_result_init(res);
}

const char *classify_via_name(enum classify_via via)
{
	switch (via) {
	case CLASSIFY_VIA_THREAD_MAP:
		return "thread-map";
	case CLASSIFY_VIA_MSGID:
		return "msgid";
	case CLASSIFY_VIA_SUBJECT:
		return "subject";
	case CLASSIFY_VIA_NONE:
		break;
	}
	return "none";
}

/* ------------------------------------------------------------------ */
/* Header values */

static char *lower_dup(const char *p, size_t len)
{
	char *s = xstrndup(p, len);
	size_t i;

	for (i = 0; i < len; i++)
		s[i] = (char)tolower((unsigned char)s[i]);
	return s;
}

/* An id fit for the thread map: printable, no blanks, not over the cap. */
static int id_ok(const char *p, size_t len)
{
	size_t i;

	if (!len || len > PB_MSGID_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if ((unsigned char)p[i] <= ' ' || (unsigned char)p[i] >= 127)
			return 0;
	return 1;
}

/*
 * Call fn for every "<id>" in value, in order; stop when it returns
 * non-zero.  Text outside angle brackets (comments, phrases some old
 * clients put in In-Reply-To) is skipped; a value without any "<" is
 * taken as one bare id when it looks like one.
 */
static void each_id(const char *value, int (*fn)(const char *, size_t, void *),
		    void *arg)
{
	struct scan s;
	const char *tok;
	size_t len;

	scan_init(&s, value, strlen(value));
	if (!strchr(value, '<')) {
		/* leniency: a bare id, as a few broken clients write it */
		tok = value;
		len = strlen(value);
		mem_trim(&tok, &len);
		if (id_ok(tok, len) && memchr(tok, '@', len))
			fn(tok, len, arg);
		return;
	}
	while (!scan_eof(&s)) {
		if (!scan_until(&s, '<', &tok, &len))
			return;
		s.p++;
		if (!scan_until(&s, '>', &tok, &len))
			return;
		s.p++;
		mem_trim(&tok, &len);
		if (id_ok(tok, len) && fn(tok, len, arg))
			return;
	}
}

static int take_first(const char *p, size_t len, void *arg)
{
	char **out = arg;

	*out = xstrndup(p, len);
	return 1;
}

static int take_ref(const char *p, size_t len, void *arg)
{
	struct strlist *refs = arg;

	/* keep the newest: they are the closest ancestors */
	if (refs->nr == CLASSIFY_REFS_MAX)
		strlist_remove(refs, 0);
	strlist_pushn(refs, p, len);
	return 0;
}

/* The addr-spec of an envelope sender ("<a@b>" or "a@b"), lower case. */
static char *addr_of(const char *value)
{
	const char *p = value, *lt, *gt;
	size_t len;

	lt = strrchr(p, '<');
	if (lt) {
		gt = strchr(lt, '>');
		if (!gt)
			return NULL;
		p = lt + 1;
		len = (size_t)(gt - p);
	} else {
		/* "a@b" or "a@b (Name)" */
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		len = strcspn(p, " \t\r\n(,");
	}
	mem_trim(&p, &len);
	if (!len || len > PB_ADDR_MAX || !memchr(p, '@', len))
		return NULL;
	return lower_dup(p, len);
}

/* The From field's addr-spec, read as mail.c reads it, lower case. */
static char *from_addr(const char *value)
{
	struct hdrdecode_mailbox mb;
	char *out = NULL;

	hdrdecode_mailbox(&mb, value, strlen(value), mail_header_conv, NULL);
	if (mb.email[0])
		out = lower_dup(mb.email, strlen(mb.email));
	hdrdecode_mailbox_release(&mb);
	return out;
}

void classify_header(struct classify_input *in, const char *name,
		     const char *value)
{
	if (!strncasecmp(name, "X-Patchbridge", 13) &&
	    (name[13] == '\0' || name[13] == '-')) {
		in->pb_header = 1;
	} else if (!strcasecmp(name, "Message-ID")) {
		if (!in->message_id)
			each_id(value, take_first, &in->message_id);
	} else if (!strcasecmp(name, "In-Reply-To")) {
		if (!in->in_reply_to)
			each_id(value, take_first, &in->in_reply_to);
	} else if (!strcasecmp(name, "References")) {
		each_id(value, take_ref, &in->references);
	} else if (!strcasecmp(name, "Subject")) {
		struct subject subj;
		size_t len = strlen(value);

		/* "Re: [PATCH vN k/M]" may be placed by the subject fallback;
		 * an encoded subject is decoded only at end of message */
		subject_init(&subj);
		subject_parse(&subj, value,
			      len < SUBJECT_MAX ? len : SUBJECT_MAX);
		in->patch_reply =
			(subj.reply && subj.has_tag && subj.index >= 1) ||
			strstr(value, "=?") != NULL;
		in->patch_new =
			(subj.has_tag && !subj.reply && !subj.forward) ||
			strstr(value, "=?") != NULL;
		in->new_version = in->patch_new && !strstr(value, "=?") ?
					  subj.version :
					  0;
		in->subj_version = 0;
		in->subj_total = 0;
		if (in->patch_reply && !strstr(value, "=?")) {
			/* what subject_fallback() asks; -1: it cannot */
			int ok = subj.version >= 1 && subj.total >= subj.index;

			in->subj_version = ok ? subj.version : -1;
			in->subj_total = ok ? subj.total : -1;
		}
		subject_release(&subj);
	} else if (!strcasecmp(name, "From")) {
		if (!in->from)
			in->from = from_addr(value);
	} else if (!strcasecmp(name, "Auto-Submitted")) {
		const char *p = value;
		size_t len;

		len = strcspn(p, ";(");
		mem_trim(&p, &len);
		/* RFC 3834 5.2: an automatic answer to a mail (vacation,
		 * out of office) says auto-replied; a bot's report says
		 * auto-generated and is read like a person's words */
		if (mem_eq_icase(p, len, "auto-replied"))
			in->auto_replied = 1;
	}
}

void classify_sender(struct classify_input *in, const char *sender)
{
	free(in->sender);
	in->sender = sender ? addr_of(sender) : NULL;
}

/* ------------------------------------------------------------------ */
/* Verdicts */

static int our_msgid(struct msgid_parsed *out, const char *id,
		     const struct classify_opts *opts)
{
	if (!opts->domain || !opts->domain[0])
		return 0;
	if (msgid_parse(out, id, strlen(id)))
		return 0;
	return !strcasecmp(out->domain, opts->domain);
}

void classify_early(struct classify_result *res,
		    const struct classify_input *in,
		    const struct classify_opts *opts)
{
	struct msgid_parsed own;
	const char *addr = opts->address;

	res->verdict = CLASSIFY_LOOP;
	if (in->message_id && our_msgid(&own, in->message_id, opts)) {
		res->reason = "own-message-id";
		return;
	}
	if (in->pb_header) {
		res->reason = "x-patchbridge-header";
		return;
	}
	if (in->auto_replied) {
		res->reason = "auto-submitted";
		return;
	}
	if (addr && addr[0] &&
	    ((in->from && !strcasecmp(in->from, addr)) ||
	     (in->sender && !strcasecmp(in->sender, addr)))) {
		res->reason = "from-bridge";
		return;
	}
	if (!in->in_reply_to && !in->references.nr && !in->patch_reply &&
	    !(opts->submissions && in->patch_new)) {
		res->verdict = CLASSIFY_PASS;
		res->reason = "unthreaded";
		return;
	}
	res->verdict = CLASSIFY_CANDIDATE;
	res->reason = "threaded";
}

/* In-Reply-To, then References newest first; no repeats; capped. */
static void lookup_order(struct strlist *ids, const struct classify_input *in)
{
	size_t i;

	if (in->in_reply_to)
		strlist_push(ids, in->in_reply_to);
	for (i = in->references.nr; i-- > 0 && ids->nr < CLASSIFY_LOOKUPS_MAX;)
		if (strlist_find(ids, in->references.items[i]) < 0)
			strlist_push(ids, in->references.items[i]);
}

static void log_map_error(int rc, const char *what, const char *id)
{
	char safe[PB_LOG_QUOTE_MAX];

	printable_copy(safe, sizeof(safe), id, strlen(id));
	log_warn("thread map: %s <%s>: %s (%s); going on without it", what,
		 safe, err_msg(), err_name(rc));
}

/* A thread-map row's text starts with a mail header (or an mbox line). */
static int looks_like_mail(const char *p, size_t len)
{
	struct scan s;
	const char *line;
	size_t n, i;

	scan_init(&s, p, len);
	if (scan_left(&s) >= 5 && !memcmp(s.p, "From ", 5))
		scan_line(&s, &line, &n);
	if (!scan_line(&s, &line, &n) || !n)
		return 0;
	for (i = 0; i < n && line[i] != ':'; i++)
		if ((unsigned char)line[i] <= ' ' ||
		    (unsigned char)line[i] >= 127)
			return 0;
	return i > 0 && i < n && mem_find(p, len, "\n\n", 2) != NULL;
}

/*
 * The diff of a thread-map row, and its title when the row keeps the
 * whole mail (*title NULL otherwise).  PB_ENOTFOUND without a diff.
 */
static int row_diff(struct diff **out, char **title,
		    const struct threadmap_mail *m)
{
	struct mail *mail = NULL;
	struct subject subj;
	int rc;

	*out = NULL;
	if (title)
		*title = NULL;
	if (!m->diff || !m->diff_len)
		return PB_ENOTFOUND;
	if (!looks_like_mail(m->diff, m->diff_len))
		return diff_parse(out, m->diff, m->diff_len);
	rc = review_patch_diff(out, m->diff, m->diff_len);
	if (rc || !title)
		return rc;
	if (!mail_parse(&mail, m->diff, m->diff_len, NULL)) {
		subject_init(&subj);
		subject_parse(&subj, mail->subject, strlen(mail->subject));
		if (subj.has_tag)
			*title = xstrdup(subj.title);
		subject_release(&subj);
		mail_free(mail);
	}
	return 0;
}

/* row_diff() for the parent, through the caller's cache when it has one. */
static int parent_diff(struct diff **out, const struct threadmap_mail *m,
		       const struct classify_opts *opts)
{
	const struct classify_diffs *c = opts->diffs;
	int rc;

	if (c && m->diff && m->diff_len) {
		*out = c->get(c->arg, m->message_id, m->diff, m->diff_len);
		if (*out)
			return 0;
	}
	rc = row_diff(out, NULL, m);
	if (!rc && c && *out)
		c->put(c->arg, m->message_id, m->diff, m->diff_len, *out);
	return rc;
}

/* Copy a string into a fixed array, cutting what does not fit. */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t len = strlen(src);

	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

static void set_target(struct classify_result *res, const char *project,
		       int64_t iid, int revision, int patch, int total,
		       const char *id)
{
	copy_str(res->project, sizeof(res->project), project);
	res->iid = iid;
	res->revision = revision;
	res->patch = patch;
	res->total = total;
	copy_str(res->matched_id, sizeof(res->matched_id), id);
}

/*
 * The reply's quoted "+"/"-" lines, quote markers removed (pointers
 * into text).  Returns how many.
 */
static size_t quoted_diff_lines(struct diff_quote *q, size_t max,
				const char *text, size_t len)
{
	struct scan s;
	const char *line;
	size_t n, nq = 0;

	scan_init(&s, text, len);
	while (nq < max && scan_line(&s, &line, &n)) {
		int quoted = 0;

		while (n && (*line == ' ' || *line == '\t')) {
			line++;
			n--;
		}
		while (n && *line == '>') {
			quoted = 1;
			line++;
			n--;
			if (n && *line == ' ' && n > 1 && line[1] == '>') {
				line++;
				n--;
			}
		}
		if (!quoted)
			continue;
		/* "> +foo": one space after the markers belongs to them */
		if (n && *line == ' ' && n > 1 &&
		    (line[1] == '+' || line[1] == '-')) {
			line++;
			n--;
		}
		if (!n || (*line != '+' && *line != '-'))
			continue;
		if (n >= 3 &&
		    (!memcmp(line, "+++", 3) || !memcmp(line, "---", 3)))
			continue;
		if (n < 3) /* "+" or "-}" alone say nothing */
			continue;
		q[nq].p = line;
		q[nq].len = n;
		nq++;
	}
	return nq;
}

/* Do enough of the quoted lines land on lines of the same kind in d? */
static int fingerprint_matches(const struct diff *d, const struct diff_quote *q,
			       size_t nq)
{
	int *pos;
	size_t i, hit = 0;

	if (nq < CLASSIFY_MATCH_MIN)
		return 0;
	pos = xcalloc(nq, sizeof(*pos));
	if (diff_align(pos, d, q, nq)) {
		free(pos);
		return 0;
	}
	for (i = 0; i < nq; i++)
		if (pos[i] >= 0 && d->lines[pos[i]].kind == q[i].p[0])
			hit++;
	free(pos);
	return hit >= CLASSIFY_MATCH_MIN &&
	       hit * 100 >= nq * CLASSIFY_MATCH_PERCENT;
}

struct mr {
	char project[THREADMAP_PROJECT_MAX + 1];
	int64_t iid;
};

/* Every MR the threading headers name, through the map or our ids. */
static size_t threaded_mrs(struct mr *mrs, size_t max,
			   const struct strlist *ids,
			   const struct threadmap *tm,
			   const struct classify_opts *opts)
{
	struct threadmap_mail row;
	struct msgid_parsed pid;
	size_t i, j, nr = 0;

	threadmap_mail_init(&row);
	for (i = 0; i < ids->nr && nr < max; i++) {
		const char *project = NULL;
		int64_t iid = 0;

		if (!tm->mail_get(tm->arg, &row, ids->items[i])) {
			project = row.project;
			iid = row.iid;
		} else if (our_msgid(&pid, ids->items[i], opts) &&
			   !pid.project_cut) {
			project = pid.project;
			iid = (int64_t)pid.iid;
		}
		if (!project)
			continue;
		for (j = 0; j < nr; j++)
			if (mrs[j].iid == iid &&
			    !strcmp(mrs[j].project, project))
				break;
		if (j < nr)
			continue;
		copy_str(mrs[nr].project, sizeof(mrs[nr].project), project);
		mrs[nr].iid = iid;
		nr++;
	}
	threadmap_mail_release(&row);
	return nr;
}

/*
 * Every MR whose latest (open) revision is vN with M patches.  The list
 * comes by project, MR and revision, so an MR's last row is its latest.
 * Returns how many, or max + 1 when there are more than max.
 */
static size_t open_mrs(struct mr *mrs, size_t max, const struct threadmap *tm,
		       int version, int total, int *failed)
{
	struct threadmap_revision_list list = { 0 };
	size_t i, nr = 0;
	int rc;

	rc = tm->revision_list(tm->arg, &list);
	if (rc) {
		if (failed)
			*failed = rc;
		threadmap_revision_list_release(&list);
		return 0;
	}
	for (i = 0; i < list.nr; i++) {
		const struct threadmap_revision *r = &list.items[i];
		const struct threadmap_revision *next =
			i + 1 < list.nr ? &list.items[i + 1] : NULL;

		if (next && next->iid == r->iid &&
		    !strcmp(next->project, r->project))
			continue; /* not the latest */
		if (r->revision != version ||
		    (r->patches && r->patches != total))
			continue;
		if (nr == max) {
			nr++;
			break;
		}
		if (mrs) {
			copy_str(mrs[nr].project, sizeof(mrs[nr].project),
				 r->project);
			mrs[nr].iid = r->iid;
		}
		nr++;
	}
	threadmap_revision_list_release(&list);
	return nr;
}

/*
 * The subject fallback (see the header): among the MRs the threading
 * headers name (threaded) or all open ones, patch k of the subject's
 * revision whose diff holds the quoted lines.  On exactly one candidate
 * the result is set to it and 1 returned.
 */
static int subject_fallback(struct classify_result *res,
			    const struct strlist *ids, int threaded,
			    const char *raw, size_t len,
			    const struct threadmap *tm,
			    const struct classify_opts *opts)
{
	struct mail *m = NULL;
	struct subject subj;
	struct diff_quote *q = NULL;
	struct mr *mrs = NULL;
	struct threadmap_revision rev;
	struct threadmap_mail row;
	struct diff *found = NULL;
	char found_id[PB_MSGID_MAX + 1] = "";
	size_t nq, nmrs, i, candidates = 0;
	int64_t found_iid = 0;
	const char *found_project = NULL;
	int found_total = 0;

	subject_init(&subj);
	threadmap_revision_init(&rev);
	threadmap_mail_init(&row);
	if (mail_parse(&m, raw, len, NULL))
		goto out;
	subject_parse(&subj, m->subject, strlen(m->subject));
	if (!subj.reply || !subj.has_tag || subj.version < 1 ||
	    subj.index < 1 || subj.total < subj.index)
		goto out;
	q = xcalloc(CLASSIFY_QUOTED_MAX, sizeof(*q));
	nq = quoted_diff_lines(q, CLASSIFY_QUOTED_MAX, m->text.data,
			       m->text.len);
	if (nq < CLASSIFY_MATCH_MIN)
		goto out;

	if (threaded) {
		mrs = xcalloc(CLASSIFY_MRS_MAX, sizeof(*mrs));
		nmrs = threaded_mrs(mrs, CLASSIFY_MRS_MAX, ids, tm, opts);
	} else {
		mrs = xcalloc(CLASSIFY_OPEN_MRS_MAX, sizeof(*mrs));
		nmrs = open_mrs(mrs, CLASSIFY_OPEN_MRS_MAX, tm, subj.version,
				subj.total, NULL);
		if (nmrs > CLASSIFY_OPEN_MRS_MAX) {
			log_info("subject fallback: more than %d open series "
				 "are v%d with %d patches; not guessing",
				 CLASSIFY_OPEN_MRS_MAX, subj.version,
				 subj.total);
			goto out;
		}
	}
	for (i = 0; i < nmrs; i++) {
		struct diff *d = NULL;
		char *title = NULL;
		int ok;

		/* an open revision: the MR's latest one */
		if (tm->revision_latest(tm->arg, &rev, mrs[i].project,
					mrs[i].iid) ||
		    rev.revision != subj.version ||
		    (rev.patches && rev.patches != subj.total))
			continue;
		if (tm->mail_find(tm->arg, &row, mrs[i].project, mrs[i].iid,
				  subj.version, subj.index) ||
		    (row.total && row.total != subj.total))
			continue;
		if (row_diff(&d, &title, &row))
			continue;
		/* subject_parse() collapsed the titles' white space */
		ok = (!title || !strcasecmp(title, subj.title)) &&
		     fingerprint_matches(d, q, nq);
		free(title);
		if (!ok) {
			diff_free(d);
			continue;
		}
		candidates++;
		diff_free(found);
		found = d;
		found_project = mrs[i].project;
		found_iid = mrs[i].iid;
		found_total = row.total ? row.total : subj.total;
		copy_str(found_id, sizeof(found_id), row.message_id);
	}
	if (candidates == 1) {
		set_target(res, found_project, found_iid, subj.version,
			   subj.index, found_total, found_id);
		diff_free(res->parent);
		res->parent = found;
		found = NULL;
		res->via = CLASSIFY_VIA_SUBJECT;
		res->reason = "subject";
	} else if (candidates > 1) {
		log_info("subject fallback: %zu candidates for \"v%d %d/%d\", "
			 "not choosing",
			 candidates, subj.version, subj.index, subj.total);
	}
out:
	diff_free(found);
	free(mrs);
	free(q);
	threadmap_mail_release(&row);
	threadmap_revision_release(&rev);
	subject_release(&subj);
	mail_free(m);
	return candidates == 1;
}

void classify_headers(struct classify_result *res,
		      const struct classify_input *in,
		      const struct threadmap *tm,
		      const struct classify_opts *opts)
{
	struct strlist ids = STRLIST_INIT;
	struct threadmap_mail row;
	struct msgid_parsed pid;
	size_t i, n;
	int rc;

	threadmap_mail_init(&row);
	diff_free(res->parent);
	classify_result_init(res);
	classify_early(res, in, opts);
	if (res->verdict != CLASSIFY_CANDIDATE || !tm ||
	    (in->patch_reply && !in->subj_version))
		goto out; /* an encoded subject: read at the end */
	lookup_order(&ids, in);
	/* our scheme first: it needs no map */
	for (i = 0; i < ids.nr; i++)
		if (our_msgid(&pid, ids.items[i], opts) && !pid.project_cut)
			goto out;
	for (i = 0; i < ids.nr; i++) {
		rc = tm->mail_get(tm->arg, &row, ids.items[i]);
		if (rc == PB_ENOTFOUND)
			continue;
		if (rc) {
			log_map_error(rc, "looking up", ids.items[i]);
			res->map_failed = 1;
		}
		goto out; /* in the map, or the map failed: a candidate */
	}
	/* the subject fallback looks among the open revisions vN of M */
	if (in->patch_reply && in->subj_version > 0) {
		rc = 0;
		n = open_mrs(NULL, CLASSIFY_OPEN_MRS_MAX, tm, in->subj_version,
			     in->subj_total, &rc);
		if (rc) {
			log_warn("thread map: listing the open revisions: %s "
				 "(%s); going on without it",
				 err_msg(), err_name(rc));
			res->map_failed = 1;
			goto out;
		}
		if (n > 0 && n <= CLASSIFY_OPEN_MRS_MAX)
			goto out; /* the quote decides, at the end */
	}
	if (opts->submissions && in->patch_new) {
		res->reason = "submission"; /* the body decides */
		goto out;
	}
	res->verdict = CLASSIFY_PASS;
	res->reason = "not-bridged";
out:
	threadmap_mail_release(&row);
	strlist_release(&ids);
}

int classify_eom(struct classify_result *res, const struct classify_input *in,
		 const char *raw, size_t len, const struct threadmap *tm,
		 const struct classify_opts *opts)
{
	struct strlist ids = STRLIST_INIT;
	struct threadmap_mail row;
	struct msgid_parsed pid;
	size_t i;
	int rc, hit = 0;

	threadmap_mail_init(&row);
	diff_free(res->parent);
	classify_result_init(res);
	classify_early(res, in, opts);
	if (res->verdict != CLASSIFY_CANDIDATE)
		goto out;
	lookup_order(&ids, in);

	/* 1. the thread map */
	for (i = 0; tm && i < ids.nr && !hit; i++) {
		rc = tm->mail_get(tm->arg, &row, ids.items[i]);
		if (rc == PB_ENOTFOUND)
			continue;
		if (rc) {
			log_map_error(rc, "looking up", ids.items[i]);
			res->map_failed = 1;
			tm = NULL;
			break;
		}
		/* iid 0: the bridge's notice about a series that became no
		 * merge request - nothing to place a reply on */
		if (row.iid < 1)
			continue;
		set_target(res, row.project, row.iid, row.revision, row.patch,
			   row.total, ids.items[i]);
		res->via = CLASSIFY_VIA_THREAD_MAP;
		res->reason = "thread-map";
		hit = 1;
	}
	/* 2. our Message-ID scheme */
	for (i = 0; i < ids.nr && !hit; i++) {
		if (!our_msgid(&pid, ids.items[i], opts) || pid.project_cut)
			continue;
		set_target(res, pid.project, (int64_t)pid.iid,
			   (int)pid.revision, (int)pid.index, (int)pid.total,
			   ids.items[i]);
		res->via = CLASSIFY_VIA_MSGID;
		res->reason = "msgid-scheme";
		hit = 1;
	}
	/* 3. broken threading: nothing placed, or placed on a cover while
	 * the subject says k/M */
	if (!hit) {
		if (tm && subject_fallback(res, &ids, 0, raw, len, tm, opts)) {
			res->verdict = CLASSIFY_BRIDGE;
		} else if (opts->submissions && in->patch_new) {
			res->verdict = CLASSIFY_SUBMIT;
			res->reason = "submission";
		} else {
			res->verdict = CLASSIFY_PASS;
			res->reason = "not-bridged";
		}
		goto out;
	}
	/* a next version sent in reply to the last one (git send-email
	 * --in-reply-to=<v1 cover>, as contributors are told to) is a new
	 * series, not a reply to the mail it answers: the daemon finds the
	 * merge request it updates (emailmr.h) */
	if (opts->submissions && in->new_version >= 2) {
		set_target(res, "", 0, 0, 0, 0, "");
		res->via = CLASSIFY_VIA_NONE;
		res->verdict = CLASSIFY_SUBMIT;
		res->reason = "submission";
		goto out;
	}
	res->verdict = CLASSIFY_BRIDGE;
	if (tm && res->patch == 0 &&
	    subject_fallback(res, &ids, 1, raw, len, tm, opts))
		goto out;

	/* the diff as mailed, for inline positions */
	if (!tm || res->revision < 1)
		goto out;
	if (res->via != CLASSIFY_VIA_THREAD_MAP || !row.diff ||
	    row.patch != res->patch || row.revision != res->revision) {
		rc = tm->mail_find(tm->arg, &row, res->project, res->iid,
				   res->revision, res->patch);
		if (rc) {
			if (rc != PB_ENOTFOUND) {
				log_map_error(rc, "finding the patch of",
					      res->matched_id);
				res->map_failed = 1;
			}
			goto out;
		}
	}
	rc = parent_diff(&res->parent, &row, opts);
	if (rc && rc != PB_ENOTFOUND)
		log_warn("thread map: the diff of %s!%lld v%d %d does not "
			 "parse: %s",
			 res->project, (long long)res->iid, res->revision,
			 res->patch, err_msg());
out:
	threadmap_mail_release(&row);
	strlist_release(&ids);
	return 0;
}
