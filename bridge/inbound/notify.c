/*
 * notify - the notice to a reply's sender.  See notify.h.
 */

#include "inbound/notify.h"

#include "util/err.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOTICE_MAIL_MAX (512 * 1024)

/* What the sender can do about a trailer's verdict. */
static const char *advice(enum approval_verdict v)
{
	switch (v) {
	case APPROVAL_UNVERIFIED:
		return "Send the ack from the address your DKIM signs (a "
		       "mail server that signs for your domain), so that "
		       "the list host can verify it.";
	case APPROVAL_UNMAPPED:
		return "Ask an admin to link your address to your forge "
		       "account (or add it to your forge profile), then "
		       "send the ack again.";
	case APPROVAL_NOT_OWNER:
		return "Only the maintainers and reviewers that owners.yaml "
		       "names for these files approve by mail; ask one of "
		       "them, or approve on the forge.";
	case APPROVAL_NOT_SENDER:
		return "Only the sender approves by mail: the person it "
		       "names can send their own ack.";
	case APPROVAL_IN_SENTENCE:
	case APPROVAL_NOT_IN_BLOCK:
	case APPROVAL_LOOSE:
		return "Write it on a line of its own, as \"Acked-by: Your "
		       "Name <your@address>\", in a paragraph of trailers "
		       "with a blank line before and after it.";
	case APPROVAL_QUOTED:
	case APPROVAL_UNACCOUNTED:
	case APPROVAL_THREAD_CONFLICT:
		return "Reply to the patch mail on the list itself, with "
		       "the ack in your own words, not quoted.";
	case APPROVAL_AMBIGUOUS:
		return "Send it again as a plain text mail.";
	case APPROVAL_NAK:
		return "Send the ack in a mail of its own once the "
		       "objection is settled.";
	case APPROVAL_DISABLED:
		return "Approve on the forge.";
	case APPROVAL_BOT:
		return "A person's ack counts; a bot's report is shown as "
		       "words.";
	default:
		return "";
	}
}

void notify_plan_reasons(struct strlist *out, const struct review *r,
			 const struct plan *p)
{
	unsigned placed_plain = 0;
	const char *why;
	size_t i;

	for (i = 0; i < p->nr_verdicts && i < r->trailers.nr; i++) {
		enum approval_verdict v = p->verdict_of[i];
		const char *line = r->trailers.v[i].raw;
		char shown[256];

		if (v == APPROVAL_GRANT || v == APPROVAL_NOT_APPROVAL)
			continue;
		printable_copy(shown, sizeof(shown), line ? line : "",
			       line ? strlen(line) : 0);
		strlist_pushf(out,
			      "Your \"%s\" was not counted as an approval: "
			      "%s. %s",
			      shown, approval_verdict_text(v), advice(v));
	}
	/* plan.h: "possibly an objection, not acted on: " and why */
	why = p->nak_verdict && !strncmp(p->nak_verdict, "possibly", 8) ?
		      strstr(p->nak_verdict, "on: ") :
		      NULL;
	if (why)
		strlist_pushf(
			out,
			"Your mail mentions a NAK that the bridge did not "
			"act on: %s. It was posted as a comment that "
			"opens with \"Possibly an objection\". To block "
			"the merge request, reply with a paragraph that "
			"is NAK alone, or a Nacked-by: trailer.",
			why + 4);
	for (i = 0; i < p->nr; i++)
		placed_plain += p->v[i].kind == PLAN_NOTE;
	if (placed_plain)
		strlist_pushf(out,
			      "%u of your inline comments could not be placed "
			      "on a line of the merge request's diff, and %s "
			      "posted as a general comment quoting the file "
			      "and line. Comment under the line of the patch "
			      "as mailed to place it.",
			      placed_plain,
			      placed_plain > 1 ? "each was" : "it was");
}

void notify_apply_reasons(struct strlist *out, struct store *st,
			  const char *message_id,
			  const struct apply_result *res)
{
	struct store_action_list acts = { 0 };
	size_t i;
	int noted = 0;

	strlist_for_each (&res->approvals_refused, i)
		strlist_pushf(out,
			      "Your approval was not recorded on the forge: "
			      "%s",
			      res->approvals_refused.items[i]);
	/* An earlier attempt posted the note and died before it finished:
	 * the note on the forge says why. */
	if (!res->approvals_refused.nr &&
	    !store_action_list(&acts, st, message_id))
		for (i = 0; i < acts.nr; i++)
			noted |= acts.items[i].kind &&
				 !strcmp(acts.items[i].kind, "approve-note") &&
				 acts.items[i].state == STORE_ACTION_DONE;
	if (noted)
		strlist_push(out, "Your approval was not recorded on the "
				  "forge; the bridge's comment on the merge "
				  "request says why.");
	store_action_list_release(&acts);
	if (res->plain)
		strlist_pushf(out,
			      "The forge did not take the position of %u of "
			      "your inline comments; %s posted as a general "
			      "comment quoting the file and line.",
			      res->plain,
			      res->plain > 1 ? "each was" : "it was");
}

static void lower(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

static int join(struct buf *b, const struct strlist *l)
{
	size_t i;

	strlist_for_each (l, i)
		buf_addf(b, "%s\n", l->items[i]);
	return buf_error(b);
}

/* The decision for a reply with reasons; *mailit when it is mailed. */
static int decide(const char **decision, char *why, size_t size,
		  struct store *st, const struct notify_in *in, const char *to)
{
	struct notice_screen_in sc;
	const char *rule;
	int rc;

	*decision = NULL;
	why[0] = '\0';
	if (!in->proj ||
	    !config_project_bool(in->proj, CFG_INBOUND_NOTIFY_SENDER)) {
		*decision = "disabled";
		snprintf(why, size, "[inbound] notify_sender = no");
		return 0;
	}
	if (!to[0] || !strchr(to, '@')) {
		*decision = "no_address";
		snprintf(why, size, "the reply has no sender address");
		return 0;
	}
	memset(&sc, 0, sizeof(sc));
	sc.raw = in->raw;
	sc.len = in->raw_len;
	sc.envelope_sender = in->envelope_sender;
	sc.list_address = config_project_str(in->proj, CFG_BRIDGE_LIST_ADDRESS);
	sc.bridge_address = config_str(in->cfg, CFG_BRIDGE_ADDRESS);
	sc.bridge_domain = config_str(in->cfg, CFG_BRIDGE_DOMAIN);
	sc.wrapped = in->review->mail->wrapper.email &&
		     in->review->mail->wrapper.email[0];
	rule = notice_screen(&sc, why, size);
	if (rule) {
		*decision = rule;
		return 0;
	}
	rc = store_notice_allowed(decision, why, size, st, to,
				  config_int(in->cfg, CFG_INBOUND_NOTICE_RATE),
				  (int64_t)time(NULL));
	if (rc || *decision)
		return rc;
	*decision = "sent";
	return 0;
}

int notify_finish(struct store *st, struct notify_in *in)
{
	struct buf id = BUF_INIT(PB_MSGID_MAX + 1);
	struct buf mail = BUF_INIT(NOTICE_MAIL_MAX);
	struct buf reasons = BUF_INIT(STORE_NOTICE_REASONS_MAX);
	struct buf date = BUF_INIT(64);
	char to[STORE_NOTICE_ADDR_MAX + 1] = "";
	char why[PB_ERRMSG_MAX], shown[PB_ERRMSG_MAX];
	struct store_notice row;
	struct notice n;
	const char *decision;
	char tbuf[64];
	char key[STORE_NOTICE_ADDR_MAX + 1];
	time_t t = time(NULL);
	struct tm tm;
	size_t i;
	int rc = 0;

	in->decision = NULL;
	notice_init(&n);
	if (in->review && in->review->mail->from.email)
		snprintf(to, sizeof(to), "%s", in->review->mail->from.email);
	snprintf(key, sizeof(key), "%s", to);
	lower(key);
	if (in->request >= 0 && key[0]) {
		rc = store_notice_optout_set(st, key, in->request);
		if (rc)
			goto out;
	}
	if (!in->reasons || !in->reasons->nr || !in->review || !in->project)
		goto out;
	rc = decide(&decision, why, sizeof(why), st, in, key);
	if (rc)
		goto out;
	rc = notice_message_id(&id, in->message_id,
			       config_str(in->cfg, CFG_BRIDGE_DOMAIN));
	if (rc)
		goto out;
	if (!strcmp(decision, "sent") && !in->render) {
		decision = "disabled";
		snprintf(why, sizeof(why), "this program mails no notices");
	}
	if (!strcmp(decision, "sent")) {
		gmtime_r(&t, &tm);
		strftime(tbuf, sizeof(tbuf), "%a, %d %b %Y %H:%M:%S +0000",
			 &tm);
		buf_adds(&date, tbuf);
		strlist_for_each (in->reasons, i)
			strlist_push(&n.reasons, in->reasons->items[i]);
		n.to_name = in->review->mail->from.name;
		n.to_email = to;
		n.reply_id = in->message_id;
		n.notice_id = id.data;
		n.references = &in->review->mail->references;
		n.subject = in->review->mail->subject;
		n.mr = xasprintf("%s!%lld", in->project, (long long)in->iid);
		n.link = in->link;
		n.date = date.data;
		rc = in->render(&mail, &n, in->render_arg);
		free((char *)n.mr);
		if (rc == PB_EINVAL || rc == PB_ENOTFOUND || rc == PB_EPERM ||
		    rc == PB_ELIMIT) {
			/* The operator's template, or an address no header
			 * can carry: recorded, not retried. */
			log_warn("notice to the sender not rendered: %s",
				 err_msg());
			decision = "unrenderable";
			snprintf(why, sizeof(why), "%s", err_msg());
			rc = 0;
		} else if (rc) {
			goto out;
		} else {
			struct store_notice_place at = { in->project, in->iid,
							 in->revision,
							 in->patch };

			rc = store_notice_queue(st, id.data, &at,
						config_str(in->cfg,
							   CFG_BRIDGE_ADDRESS),
						to, mail.data, mail.len);
			if (rc == PB_EEXISTS)
				rc = 0; /* queued before: one notice */
			if (rc)
				goto out;
		}
	}
	rc = join(&reasons, in->reasons);
	if (rc == PB_ELIMIT) {
		buf_clear_error(&reasons);
		rc = 0;
	}
	store_notice_init(&row);
	row.message_id = in->message_id;
	row.notice_id = !strcmp(decision, "sent") ? id.data : NULL;
	row.recipient = key[0] ? key : NULL;
	row.decision = decision;
	row.reasons = reasons.data;
	rc = store_notice_put(st, &row);
	store_notice_release(&row);
	if (rc == PB_EEXISTS)
		rc = 0;
	if (rc)
		goto out;
	in->decision = decision;
	printable_copy(shown, sizeof(shown), why, strlen(why));
	if (!strcmp(decision, "sent"))
		log_info("inbound: notice <%s> to the sender queued (%zu "
			 "reason(s))",
			 id.data, in->reasons->nr);
	else
		log_info("inbound: no notice to the sender (%s): %s", decision,
			 shown);
out:
	notice_release(&n);
	buf_release(&id);
	buf_release(&mail);
	buf_release(&reasons);
	buf_release(&date);
	return rc;
}
