#include "inbound/approval.h"

#include <strings.h>

int approval_names_sender(const struct trailer *t, const struct mail_addr *from)
{
	if (!from || !from->email || !from->email[0])
		return 0;
	if (t->email && t->email[0])
		return !strcasecmp(t->email, from->email);
	/* A name alone counts only when it is the sender's own name. */
	return t->name && t->name[0] && from->name && from->name[0] &&
	       !strcasecmp(t->name, from->name);
}

enum approval_verdict approval_decide(const struct approval_facts *f)
{
	if (!f->type || !trailer_is_approval(f->type))
		return APPROVAL_NOT_APPROVAL;
	if (f->nak)
		return APPROVAL_NAK;
	if (f->ambiguous)
		return APPROVAL_AMBIGUOUS;
	if (!f->names_sender)
		return APPROVAL_NOT_SENDER;
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

const char *approval_verdict_text(enum approval_verdict v)
{
	switch (v) {
	case APPROVAL_GRANT:
		return "";
	case APPROVAL_NOT_APPROVAL:
		return "not an approval";
	case APPROVAL_NAK:
		return "the same mail NAKs the patch";
	case APPROVAL_AMBIGUOUS:
		return "the mail's MIME structure is ambiguous (parser "
		       "warnings), so other software may read it differently";
	case APPROVAL_NOT_SENDER:
		return "it names someone other than the sender, and only the "
		       "sender may approve by mail";
	case APPROVAL_UNVERIFIED:
		return "the sender is not verified";
	case APPROVAL_DISABLED:
		return "approvals by mail are disabled for this project";
	case APPROVAL_UNMAPPED:
		return "the address is not mapped to a forge user";
	case APPROVAL_NOT_OWNER:
		return "the address is not a maintainer or reviewer in "
		       "owners.yaml of the files this touches";
	}
	return "unknown";
}
