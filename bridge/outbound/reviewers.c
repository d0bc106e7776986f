#include "outbound/reviewers.h"

#include "util/strlist.h"
#include "util/utf8.h"

#include <string.h>
#include <strings.h>

/* Add p to the line (", " between names) unless its email is in seen. */
static int add_person(struct buf *out, struct strlist *seen, int *first,
		      const struct owners_person *p)
{
	const char *name = p->name && *p->name ? p->name : p->email;
	size_t i;
	int rc;

	for (i = 0; i < seen->nr; i++)
		if (!strcasecmp(seen->items[i], p->email))
			return 0;
	strlist_push(seen, p->email);
	rc = *first ? 0 : buf_adds(out, ", ");
	*first = 0;
	if (!rc)
		rc = utf8_clean(out, name, strlen(name), UTF8_CLEAN_LINE);
	return rc;
}

/* One subsystem's line. */
static int line(struct buf *out, const struct owners_subsystem *s)
{
	const char *label = s->label && *s->label ? s->label : s->title;
	struct strlist seen = STRLIST_INIT;
	int rc, first = 1, any = 0;
	size_t i;

	rc = buf_adds(out, "- ");
	if (!rc)
		rc = utf8_clean(out, label ? label : "?",
				strlen(label ? label : "?"), UTF8_CLEAN_LINE);
	if (!rc)
		rc = buf_addch(out, ':');
	for (i = 0; !rc && s->required_approval && i < s->maintainers_nr; i++) {
		const struct owners_person *p = s->maintainers[i];

		if (p->restricted)
			continue;
		if (first && !any)
			rc = buf_adds(out, " required ");
		any = 1;
		if (!rc)
			rc = add_person(out, &seen, &first, p);
	}
	if (!rc) {
		size_t before = out->len;
		int some = 0;

		rc = buf_adds(out, any ? "; optional " : " optional ");
		first = 1;
		for (i = 0; !rc && i < s->maintainers_nr; i++)
			if (!s->required_approval ||
			    s->maintainers[i]->restricted) {
				size_t at = out->len;

				rc = add_person(out, &seen, &first,
						s->maintainers[i]);
				some |= out->len > at;
			}
		for (i = 0; !rc && i < s->reviewers_nr; i++) {
			size_t at = out->len;

			rc = add_person(out, &seen, &first, s->reviewers[i]);
			some |= out->len > at;
		}
		if (!rc && !some) {
			buf_truncate(out, before); /* nobody to tell */
			if (!any)
				rc = buf_adds(out, " nobody named");
		}
	}
	if (!rc)
		rc = buf_addch(out, '\n');
	strlist_release(&seen);
	return rc;
}

int reviewers_cover(struct buf *out, const struct owners *o,
		    const char *const *paths, size_t n)
{
	struct owners_matches m = OWNERS_MATCHES_INIT;
	size_t i;
	int rc;

	if (!o || !n)
		return 0;
	rc = owners_touched(&m, o, paths, n);
	if (!rc && m.nr)
		rc = buf_adds(out, "Reviewers of the subsystems touched:\n");
	for (i = 0; !rc && i < m.nr; i++)
		rc = line(out, m.items[i]);
	if (!rc && m.nr)
		rc = buf_addch(out, '\n');
	owners_matches_release(&m);
	return rc;
}
