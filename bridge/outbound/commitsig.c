#include "outbound/commitsig.h"

#include "outbound/mailhdr.h"
#include "util/err.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdlib.h>

#include <string.h>

static int add_clean(struct buf *out, const char *s)
{
	return s ? mailhdr_sanitize(out, s, strlen(s)) : 0;
}

/* "Name <email>", "Name" or "<email>". */
static int add_person(struct buf *out, const char *name, const char *email)
{
	int rc = 0;

	if (name && *name)
		rc = add_clean(out, name);
	if (!rc && email && *email) {
		rc = buf_adds(out, name && *name ? " <" : "<");
		if (!rc)
			rc = add_clean(out, email);
		if (!rc)
			rc = buf_addch(out, '>');
	}
	return rc;
}

/* Whose key, as the forge says it for each kind (forge.h). */
static int add_whose(struct buf *out, const struct commitsig *c)
{
	const struct forge_signature *s = &c->sig;
	int rc = 0;

	if (!strcmp(s->type, "PGP")) {
		if ((s->name && *s->name) || (s->email && *s->email))
			rc = add_person(out, s->name, s->email);
		else
			rc = buf_adds(out, "a key no forge user has");
		if (!rc && s->key && *s->key) {
			rc = buf_adds(out, " (key ");
			if (!rc)
				rc = add_clean(out, s->key);
			if (!rc)
				rc = buf_addch(out, ')');
		}
	} else if (!strcmp(s->type, "SSH")) {
		if (s->key && *s->key) {
			rc = buf_adds(out, "key \"");
			if (!rc)
				rc = add_clean(out, s->key);
			if (!rc)
				rc = buf_adds(out, "\" of ");
		} else {
			rc = buf_adds(out, "a key no forge user has, ");
		}
		if (!rc)
			rc = buf_adds(out, "the committer ");
		if (!rc)
			rc = add_person(out, c->committer_name,
					c->committer_email);
	} else if (!strcmp(s->type, "X509")) {
		rc = buf_adds(out, "certificate of ");
		if (!rc)
			rc = add_clean(out,
				       s->email && *s->email ? s->email : "?");
		if (!rc && s->key && *s->key) {
			rc = buf_adds(out, " (");
			if (!rc)
				rc = add_clean(out, s->key);
			if (!rc)
				rc = buf_addch(out, ')');
		}
	} else {
		rc = buf_adds(out, "a kind of signature the bridge does not "
				   "read");
	}
	return rc;
}

int commitsig_cover(struct buf *out, const struct commitsig *c, size_t n)
{
	size_t i, signed_nr = 0;
	int width = 1, rc;

	for (i = 0; i < n; i++)
		if (c[i].state == COMMITSIG_SIGNED)
			signed_nr++;
	if (!signed_nr)
		return 0;
	for (i = n; i >= 10; i /= 10)
		width++;
	rc = buf_adds(out, "Commit signatures, as the forge verified them:\n");
	for (i = 0; !rc && i < n; i++) {
		const struct forge_signature *s = &c[i].sig;

		rc = buf_addf(out, "- %0*zu/%zu %.12s: ", width, i + 1, n,
			      c[i].sha);
		if (rc)
			break;
		if (c[i].state == COMMITSIG_UNSIGNED) {
			rc = buf_adds(out, "not signed\n");
			continue;
		}
		rc = add_clean(out,
			       !strcmp(s->type, "X509") ? "X.509" : s->type);
		if (!rc)
			rc = buf_adds(out, ", ");
		if (!rc)
			rc = add_clean(out, s->status && *s->status ?
						    s->status :
						    "no verdict");
		if (!rc)
			rc = buf_adds(out, ": ");
		if (!rc)
			rc = add_whose(out, &c[i]);
		if (!rc)
			rc = buf_addch(out, '\n');
	}
	if (!rc)
		rc = buf_addch(out, '\n');
	return rc;
}

int commitsig_load(char **out, struct forge *f, const char *project,
		   const struct gitrepo_range *r)
{
	struct commitsig *c;
	struct buf text = BUF_INIT(PB_TEXT_PART_MAX);
	size_t i, n = r->nr;
	int rc = 0;

	*out = NULL;
	c = xcalloc(n + 1, sizeof(*c));
	for (i = 0; i < n && !rc; i++) {
		const struct gitrepo_commit *g = &r->commits[i];

		c[i].sha = g->sha;
		c[i].committer_name = g->committer.name;
		c[i].committer_email = g->committer.email;
		rc = forge_commit_signature(&c[i].sig, f, project, g->sha);
		c[i].state = rc ? COMMITSIG_UNSIGNED : COMMITSIG_SIGNED;
		if (rc == PB_ENOTFOUND)
			rc = 0;
	}
	if (rc && !err_is_temporary(rc)) {
		log_warn("commit signatures not in the cover letter: %s",
			 err_msg());
		rc = 0;
	} else if (!rc && commitsig_cover(&text, c, n)) {
		log_warn("commit signatures not in the cover letter: %s",
			 err_msg());
	} else if (!rc && text.len) {
		*out = xstrdup(text.data);
	}
	for (i = 0; i < n; i++)
		forge_signature_release(&c[i].sig);
	free(c);
	buf_release(&text);
	return rc;
}
