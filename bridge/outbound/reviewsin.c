#include "outbound/reviewsin.h"

#include "util/utf8.h"

#include <string.h>
#include <strings.h>

static int same(const char *a, const char *b)
{
	return a && b && *a && !strcasecmp(a, b);
}

/* Is forge user u the person p? */
static int is(const struct forge_user *u, const struct owners_person *p)
{
	return (p->gluser && u->username && !strcmp(p->gluser, u->username)) ||
	       same(u->email, p->email) || same(u->public_email, p->email);
}

/* The maintainer of s who approved, or NULL. */
static const struct owners_person *approver(const struct owners_subsystem *s,
					    const struct forge_approvals *a)
{
	size_t i, k;

	for (i = 0; i < s->maintainers_nr; i++)
		for (k = 0;
		     !s->maintainers[i]->restricted && k < a->nr_approved_by;
		     k++)
			if (is(&a->approved_by[k], s->maintainers[i]))
				return s->maintainers[i];
	return NULL;
}

static int requires(const struct owners_subsystem *s)
{
	size_t i;

	for (i = 0; s->required_approval && i < s->maintainers_nr; i++)
		if (!s->maintainers[i]->restricted)
			return 1;
	return 0;
}

static int add_clean(struct buf *out, const char *s)
{
	return utf8_clean(out, s, strlen(s), UTF8_CLEAN_LINE);
}

int reviewsin_check(int *in, size_t *required, struct buf *text,
		    const struct owners *o, const char *const *paths, size_t n,
		    const struct forge_approvals *a, int nak)
{
	struct owners_matches m = OWNERS_MATCHES_INIT;
	size_t i, waiting = 0, said = 0;
	int rc;

	*in = 0;
	*required = 0;
	rc = o && n ? owners_touched(&m, o, paths, n) : 0;
	for (i = 0; !rc && i < m.nr; i++)
		if (requires(m.items[i])) {
			++*required;
			waiting += !approver(m.items[i], a);
		}
	*in = !rc && *required && !waiting && !nak;
	if (!rc && nak)
		rc = buf_adds(text, "a NAK blocks the merge request");
	if (!rc && !*in && waiting)
		rc = buf_adds(text, nak ? "; waiting for " : "waiting for ");
	for (i = 0; !rc && i < m.nr; i++) {
		const struct owners_subsystem *s = m.items[i];
		const struct owners_person *p;
		const char *label = s->label && *s->label ? s->label : s->title;

		if (!requires(s))
			continue;
		p = approver(s, a);
		if (*in ? !p : !!p)
			continue;
		rc = said++ ? buf_adds(text, ", ") : 0;
		if (!rc)
			rc = add_clean(text, label ? label : "?");
		if (!rc && p) {
			rc = buf_adds(text, " (");
			if (!rc)
				rc = add_clean(text,
					       *p->name ? p->name : p->email);
			if (!rc)
				rc = buf_addch(text, ')');
		}
	}
	owners_matches_release(&m);
	return rc;
}
