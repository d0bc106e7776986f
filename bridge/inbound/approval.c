#include "inbound/approval.h"

#include <string.h>
#include <strings.h>

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int blank(int c)
{
	return c == ' ' || c == '\t' || c == '"';
}

/* a[0..an) and b[0..bn) are the same words: case and runs of blanks (and
 * the quotes of a quoted display name) ignored. */
static int same_name(const char *a, size_t an, const char *b, size_t bn)
{
	size_t i = 0, j = 0;

	for (;;) {
		while (i < an && blank((unsigned char)a[i]))
			i++;
		while (j < bn && blank((unsigned char)b[j]))
			j++;
		if (i == an || j == bn)
			return i == an && j == bn;
		while (i < an && j < bn && !blank((unsigned char)a[i]) &&
		       !blank((unsigned char)b[j])) {
			if (lower((unsigned char)a[i]) !=
			    lower((unsigned char)b[j]))
				return 0;
			i++;
			j++;
		}
		if ((i < an && !blank((unsigned char)a[i])) ||
		    (j < bn && !blank((unsigned char)b[j])))
			return 0;
	}
}

/* Is name the display name, as written or as Outlook's "Last, First"? */
static int is_display_name(const char *name, const char *display)
{
	size_t nl = strlen(name), dl = strlen(display);
	const char *comma = memchr(display, ',', dl);
	char swapped[512];
	size_t fl, ll;

	if (same_name(name, nl, display, dl))
		return 1;
	if (!comma ||
	    memchr(comma + 1, ',', dl - (size_t)(comma - display) - 1))
		return 0;
	ll = (size_t)(comma - display);
	fl = dl - ll - 1;
	if (fl + 1 + ll >= sizeof(swapped))
		return 0;
	memcpy(swapped, comma + 1, fl);
	swapped[fl] = ' ';
	memcpy(swapped + fl + 1, display, ll);
	return same_name(name, nl, swapped, fl + 1 + ll);
}

int approval_names_sender(const struct trailer *t, const struct mail_addr *from)
{
	if (!from || !from->email || !from->email[0])
		return 0;
	if (t->email && t->email[0])
		return !strcasecmp(t->email, from->email);
	/* A name alone counts only when it is the sender's own name: the
	 * From address then stands in for the one the trailer lacks. */
	return t->name && t->name[0] && from->name && from->name[0] &&
	       is_display_name(t->name, from->name);
}

int approval_same_trailer(const struct trailer *a, const struct trailer *b)
{
	if (!a->type || !b->type || strcmp(a->type, b->type))
		return 0;
	if (a->email && a->email[0] && b->email && b->email[0] &&
	    !strcasecmp(a->email, b->email))
		return 1;
	return a->name && a->name[0] && b->name && b->name[0] &&
	       (is_display_name(a->name, b->name) ||
		is_display_name(b->name, a->name));
}

enum approval_verdict approval_decide(const struct approval_facts *f)
{
	if (!f->type || !trailer_is_approval(f->type))
		return APPROVAL_NOT_APPROVAL;
	if (f->bot)
		return APPROVAL_BOT;
	if (f->nak)
		return APPROVAL_NAK;
	if (f->ambiguous)
		return APPROVAL_AMBIGUOUS;
	if (f->in_sentence)
		return APPROVAL_IN_SENTENCE;
	if (!f->in_block)
		return APPROVAL_NOT_IN_BLOCK;
	if (f->loose)
		return APPROVAL_LOOSE;
	if (!f->names_sender)
		return APPROVAL_NOT_SENDER;
	if (f->thread_conflict)
		return APPROVAL_THREAD_CONFLICT;
	if (f->quoted)
		return APPROVAL_QUOTED;
	if (f->unaccounted)
		return APPROVAL_UNACCOUNTED;
	if (f->require_auth && !f->verified)
		return APPROVAL_UNVERIFIED;
	if (f->policy == CONFIG_APPROVAL_NONE)
		return APPROVAL_DISABLED;
	if (!f->user || !f->user[0])
		return APPROVAL_UNMAPPED;
	if (f->policy == CONFIG_APPROVAL_OWNERS && !f->owner)
		return APPROVAL_NOT_OWNER;
	return APPROVAL_GRANT;
}

const char *approval_verdict_token(enum approval_verdict v)
{
	switch (v) {
	case APPROVAL_GRANT:
		return "grant";
	case APPROVAL_NOT_APPROVAL:
		return "not_approval";
	case APPROVAL_BOT:
		return "bot";
	case APPROVAL_NAK:
		return "nak";
	case APPROVAL_AMBIGUOUS:
		return "ambiguous";
	case APPROVAL_IN_SENTENCE:
		return "in_sentence";
	case APPROVAL_NOT_IN_BLOCK:
		return "not_in_block";
	case APPROVAL_LOOSE:
		return "loose";
	case APPROVAL_NOT_SENDER:
		return "not_sender";
	case APPROVAL_THREAD_CONFLICT:
		return "thread_conflict";
	case APPROVAL_QUOTED:
		return "quoted";
	case APPROVAL_UNACCOUNTED:
		return "unaccounted";
	case APPROVAL_UNVERIFIED:
		return "unverified";
	case APPROVAL_DISABLED:
		return "disabled";
	case APPROVAL_UNMAPPED:
		return "unmapped";
	case APPROVAL_NOT_OWNER:
		return "not_owner";
	case APPROVAL__COUNT:
		break;
	}
	return "unknown";
}

const char *approval_verdict_text(enum approval_verdict v)
{
	switch (v) {
	case APPROVAL_GRANT:
		return "";
	case APPROVAL_NOT_APPROVAL:
		return "not an approval";
	case APPROVAL_BOT:
		return "the sender is a review bot, whose trailers are read "
		       "as words, never as approvals";
	case APPROVAL_NAK:
		return "the same mail NAKs the patch, or mentions a NAK";
	case APPROVAL_AMBIGUOUS:
		return "the mail's MIME structure is ambiguous (parser "
		       "warnings), so other software may read it differently";
	case APPROVAL_IN_SENTENCE:
		return "the tag sits inside a sentence; an approval is a "
		       "trailer on a line of its own";
	case APPROVAL_NOT_IN_BLOCK:
		return "it is not in a trailer block; an approval stands in "
		       "a paragraph of trailer lines only, with a blank line "
		       "before and after it";
	case APPROVAL_LOOSE:
		return "it is not written exactly as \"Acked-by: Name "
		       "<address>\" (text after the address, no address, or "
		       "a hidden or direction-changing character)";
	case APPROVAL_NOT_SENDER:
		return "it names someone other than the sender, and only the "
		       "sender may approve by mail";
	case APPROVAL_THREAD_CONFLICT:
		return "the mail's In-Reply-To, References and subject do not "
		       "agree on one merge request and revision";
	case APPROVAL_QUOTED:
		return "the same trailer is in a mail this one answers, so it "
		       "is read as a quotation";
	case APPROVAL_UNACCOUNTED:
		return "the mail this one answers never reached the list, so "
		       "what it quotes cannot be told from the sender's own "
		       "words";
	case APPROVAL_UNVERIFIED:
		return "the sender is not verified";
	case APPROVAL_DISABLED:
		return "approvals by mail are disabled for this project";
	case APPROVAL_UNMAPPED:
		return "the address is not mapped to a forge user";
	case APPROVAL_NOT_OWNER:
		return "the address is not a maintainer or reviewer in "
		       "owners.yaml of the files this touches";
	case APPROVAL__COUNT:
		break;
	}
	return "unknown";
}
