/*
 * owners.yaml: libyaml events -> a small tree -> struct owners.
 *
 * We read libyaml's event stream rather than its document API so that
 * every use of an alias keeps its own position (an error in `*alice` used
 * as a list should point at the alias, not at the anchor), and so that the
 * caps apply while parsing: depth before a collection is opened, node
 * count before a node is made, and the expanded size (every alias counted
 * as the whole subtree it stands for) before a child is attached.  Anchors
 * are registered when their node is complete, so an alias can never refer
 * to a node that contains it and the tree is acyclic.
 */
#include "core/owners.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/hashmap.h"
#include "util/limits.h"
#include "util/perm.h"
#include "util/printable.h"
#include "util/strlist.h"
#include "util/xalloc.h"

#include <fnmatch.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

static char *lower_dup(const char *s)
{
	char *d = xstrdup(s), *p;

	for (p = d; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return d;
}

/* ---- errors with a position ---- */

static int at_err(int code, const char *name, unsigned long line,
		  unsigned long col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int at_err(int code, const char *name, unsigned long line,
		  unsigned long col, const char *fmt, ...)
{
	char msg[PB_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return err_set(code, "%s:%lu:%lu: %s", name, line, col, msg);
}

/* 1-based line and column of a byte offset (for libyaml reader errors). */
static void offset_pos(const char *data, size_t len, size_t off,
		       unsigned long *line, unsigned long *col)
{
	size_t i;

	*line = 1;
	*col = 1;
	for (i = 0; i < off && i < len; i++) {
		if (data[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static int yaml_error(const char *name, const yaml_parser_t *p,
		      const char *data, size_t len)
{
	unsigned long line, col;
	const char *problem = p->problem ? p->problem : "YAML error";

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		return err_set(PB_ERROR, "%s: out of memory parsing YAML",
			       name);
	case YAML_READER_ERROR:
		offset_pos(data, len, p->problem_offset, &line, &col);
		if (p->problem_value != -1)
			return at_err(PB_EINVAL, name, line, col, "%s: #%X",
				      problem, (unsigned)p->problem_value);
		return at_err(PB_EINVAL, name, line, col, "%s", problem);
	default:
		break;
	}
	line = (unsigned long)p->problem_mark.line + 1;
	col = (unsigned long)p->problem_mark.column + 1;
	if (p->context)
		return at_err(PB_EINVAL, name, line, col, "%s (%s at %lu:%lu)",
			      problem, p->context,
			      (unsigned long)p->context_mark.line + 1,
			      (unsigned long)p->context_mark.column + 1);
	return at_err(PB_EINVAL, name, line, col, "%s", problem);
}

/* ---- the tree built from events ---- */

enum ykind { Y_SCALAR, Y_SEQ, Y_MAP };

struct ynode;

/* One use of a node: in place, or through an alias. */
struct yref {
	struct ynode *node;
	unsigned long line, col; /* where this use is, 1-based */
};

enum cooked_kind { COOKED_NONE, COOKED_PERSON, COOKED_REGEX };

struct ynode {
	enum ykind kind;
	int plain; /* scalar: plain style, no tag: may be null/bool */
	char *text; /* scalar: the value, terminated */
	size_t len; /* scalar: bytes (a NUL inside is possible) */
	struct yref *kids; /* sequence items; mapping keys and values */
	size_t nr;
	size_t alloc;
	size_t weight; /* nodes in this subtree with aliases expanded */
	/* What the loader made of this node, reused when aliased again. */
	enum cooked_kind cooked_kind;
	void *cooked;
};

struct yframe {
	struct ynode *node;
	unsigned long line, col;
	char *anchor; /* registered when the collection ends */
};

struct ytree {
	const char *name;
	struct ynode **nodes; /* every node, for freeing */
	size_t nodes_nr;
	size_t nodes_alloc;
	struct yref root; /* .node is NULL for an empty stream */
	size_t aliases;
	int docs;
	struct strmap anchors;
	struct yframe stack[OWNERS_DEPTH_MAX];
	size_t depth;
};

static void tree_release(struct ytree *t)
{
	size_t i;

	for (i = 0; i < t->nodes_nr; i++) {
		free(t->nodes[i]->text);
		free(t->nodes[i]->kids);
		free(t->nodes[i]);
	}
	free(t->nodes);
	for (i = 0; i < t->depth; i++)
		free(t->stack[i].anchor);
	strmap_release(&t->anchors);
}

static int node_new(struct ynode **out, struct ytree *t, enum ykind kind,
		    unsigned long line, unsigned long col)
{
	struct ynode *n;

	if (t->nodes_nr >= OWNERS_NODES_MAX)
		return at_err(PB_ELIMIT, t->name, line, col,
			      "more than %d YAML nodes", OWNERS_NODES_MAX);
	n = xcalloc(1, sizeof(*n));
	n->kind = kind;
	n->weight = 1;
	ALLOC_GROW(t->nodes, t->nodes_nr + 1, t->nodes_alloc);
	t->nodes[t->nodes_nr++] = n;
	*out = n;
	return 0;
}

/* Attach a finished node (or an alias of one) where the parser is. */
static int tree_attach(struct ytree *t, struct ynode *n, unsigned long line,
		       unsigned long col)
{
	struct ynode *parent;

	if (!t->depth) {
		if (t->root.node) /* cannot happen: one document, one root */
			return at_err(PB_EINVAL, t->name, line, col,
				      "more than one top-level node");
		t->root.node = n;
		t->root.line = line;
		t->root.col = col;
		return 0;
	}
	parent = t->stack[t->depth - 1].node;
	if (parent->weight > OWNERS_EXPANDED_MAX - n->weight)
		return at_err(PB_ELIMIT, t->name, line, col,
			      "more than %d nodes with aliases expanded",
			      OWNERS_EXPANDED_MAX);
	parent->weight += n->weight;
	ALLOC_GROW(parent->kids, parent->nr + 1, parent->alloc);
	parent->kids[parent->nr].node = n;
	parent->kids[parent->nr].line = line;
	parent->kids[parent->nr].col = col;
	parent->nr++;
	return 0;
}

static int tree_event(struct ytree *t, const yaml_event_t *ev, int *done)
{
	unsigned long line = (unsigned long)ev->start_mark.line + 1;
	unsigned long col = (unsigned long)ev->start_mark.column + 1;
	const yaml_char_t *anchor = NULL;
	struct ynode *n;
	struct yframe *f;
	char shown[64];
	int rc;

	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		*done = 1;
		return 0;
	case YAML_DOCUMENT_START_EVENT:
		if (t->docs++)
			return at_err(PB_EINVAL, t->name, line, col,
				      "more than one YAML document");
		return 0;
	case YAML_ALIAS_EVENT:
		if (++t->aliases > OWNERS_ALIASES_MAX)
			return at_err(PB_ELIMIT, t->name, line, col,
				      "more than %d aliases",
				      OWNERS_ALIASES_MAX);
		n = strmap_get(&t->anchors,
			       (const char *)ev->data.alias.anchor);
		if (!n) {
			const char *a = (const char *)ev->data.alias.anchor;

			return at_err(PB_EINVAL, t->name, line, col,
				      "unknown alias *%s",
				      printable_copy(shown, sizeof(shown), a,
						     strlen(a)));
		}
		return tree_attach(t, n, line, col);
	case YAML_SCALAR_EVENT:
		rc = node_new(&n, t, Y_SCALAR, line, col);
		if (rc)
			return rc;
		n->len = ev->data.scalar.length;
		n->text = xmalloc(n->len + 1);
		memcpy(n->text, ev->data.scalar.value, n->len);
		n->text[n->len] = '\0';
		n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
			   !ev->data.scalar.tag;
		if (ev->data.scalar.anchor)
			strmap_put(&t->anchors,
				   (const char *)ev->data.scalar.anchor, n);
		return tree_attach(t, n, line, col);
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (t->depth >= OWNERS_DEPTH_MAX)
			return at_err(PB_ELIMIT, t->name, line, col,
				      "nested deeper than %d levels",
				      OWNERS_DEPTH_MAX);
		if (ev->type == YAML_SEQUENCE_START_EVENT) {
			rc = node_new(&n, t, Y_SEQ, line, col);
			anchor = ev->data.sequence_start.anchor;
		} else {
			rc = node_new(&n, t, Y_MAP, line, col);
			anchor = ev->data.mapping_start.anchor;
		}
		if (rc)
			return rc;
		f = &t->stack[t->depth++];
		f->node = n;
		f->line = line;
		f->col = col;
		f->anchor = anchor ? xstrdup((const char *)anchor) : NULL;
		return 0;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (!t->depth) /* libyaml never does this */
			return at_err(PB_EINVAL, t->name, line, col,
				      "unbalanced end of a collection");
		f = &t->stack[--t->depth];
		n = f->node;
		if (f->anchor) {
			strmap_put(&t->anchors, f->anchor, n);
			free(f->anchor);
			f->anchor = NULL;
		}
		return tree_attach(t, n, f->line, f->col);
	default:
		return 0;
	}
}

static int tree_build(struct ytree *t, const char *data, size_t len)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int done = 0, rc = 0;

	if (!yaml_parser_initialize(&parser))
		return err_set(PB_ERROR, "%s: cannot set up the YAML parser",
			       t->name);
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			rc = yaml_error(t->name, &parser, data, len);
			goto out;
		}
		rc = tree_event(t, &ev, &done);
		yaml_event_delete(&ev);
		if (rc)
			goto out;
	}
out:
	yaml_parser_delete(&parser);
	return rc;
}

/* ---- struct owners ---- */

struct glob {
	char *pat; /* without trailing slashes */
	size_t len; /* strlen(pat) */
	int dir; /* had a trailing slash: covers what is below only */
	int literal; /* no wildcards: that path and what is below it */
};

struct owners_paths {
	struct glob *inc;
	size_t inc_nr, inc_alloc;
	const regex_t **re; /* borrowed from owners->regexes */
	size_t re_nr, re_alloc;
	struct glob *exc;
	size_t exc_nr, exc_alloc;
};

struct owners {
	struct owners_subsystem **subs;
	size_t subs_nr, subs_alloc;
	struct owners_person **people; /* every person, owned */
	size_t people_nr, people_alloc;
	regex_t **regexes; /* every compiled regex, owned */
	size_t regexes_nr, regexes_alloc;
	struct strmap by_email; /* lowercased email -> person (with gluser
				   when any entry gives one) */
	struct strmap by_label; /* labels.name -> subsystem */
	/* Every string of subs[] and people[]: the views point into these. */
	struct strlist strings;
};

/* Keep s (from xmalloc, may be NULL) with the owners; returns it. */
static const char *keep(struct owners *o, char *s)
{
	if (s)
		strlist_push_owned(&o->strings, s);
	return s;
}

static void globs_free(struct glob *g, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(g[i].pat);
	free(g);
}

static void subsystem_free(struct owners_subsystem *s)
{
	if (!s)
		return;
	free((void *)s->maintainers);
	free((void *)s->reviewers);
	if (s->paths) {
		globs_free(s->paths->inc, s->paths->inc_nr);
		globs_free(s->paths->exc, s->paths->exc_nr);
		free((void *)s->paths->re);
		free(s->paths);
	}
	free(s);
}

void owners_free(struct owners *o)
{
	size_t i;

	if (!o)
		return;
	for (i = 0; i < o->subs_nr; i++)
		subsystem_free(o->subs[i]);
	free(o->subs);
	for (i = 0; i < o->people_nr; i++)
		free(o->people[i]);
	free(o->people);
	for (i = 0; i < o->regexes_nr; i++) {
		regfree(o->regexes[i]);
		free(o->regexes[i]);
	}
	free(o->regexes);
	strmap_release(&o->by_email);
	strmap_release(&o->by_label);
	strlist_release(&o->strings);
	free(o);
}

/* ---- reading values from the tree ---- */

struct loader {
	const char *name;
	struct owners *o;
};

static int bad(const struct loader *L, const struct yref *r, int code,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int bad(const struct loader *L, const struct yref *r, int code,
	       const char *fmt, ...)
{
	char msg[PB_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return at_err(code, L->name, r->line, r->col, "%s", msg);
}

static const char *kind_name(enum ykind k)
{
	switch (k) {
	case Y_SCALAR:
		return "a scalar";
	case Y_SEQ:
		return "a list";
	default:
		return "a mapping";
	}
}

static int is_null(const struct ynode *n)
{
	if (n->kind != Y_SCALAR || !n->plain)
		return 0;
	return n->len == 0 || !strcmp(n->text, "~") ||
	       !strcmp(n->text, "null") || !strcmp(n->text, "Null") ||
	       !strcmp(n->text, "NULL");
}

/* True when the scalar key k is exactly s. */
static int key_is(const struct ynode *k, const char *s)
{
	return k->len == strlen(s) && !memcmp(k->text, s, k->len);
}

enum { OPTIONAL = 0, REQUIRED = 1 };

/*
 * A string value of at most max bytes, without control characters.
 * OPTIONAL: a null gives *out = NULL.  REQUIRED: null or "" is an error.
 */
static int want_string(char **out, const struct loader *L, const struct yref *r,
		       const char *what, size_t max, int required)
{
	const struct ynode *n = r->node;
	size_t i;

	*out = NULL;
	if (n->kind != Y_SCALAR)
		return bad(L, r, PB_EINVAL, "%s: expected a string, found %s",
			   what, kind_name(n->kind));
	if (is_null(n)) {
		if (required)
			return bad(L, r, PB_EINVAL, "%s: must not be empty",
				   what);
		return 0;
	}
	if (required && !n->len)
		return bad(L, r, PB_EINVAL, "%s: must not be empty", what);
	if (n->len > max)
		return bad(L, r, PB_EINVAL, "%s: longer than %zu bytes", what,
			   max);
	for (i = 0; i < n->len; i++) {
		unsigned char c = (unsigned char)n->text[i];

		if (c < 0x20 || c == 0x7f)
			return bad(L, r, PB_EINVAL,
				   "%s: contains a control character", what);
	}
	*out = xstrdup(n->text);
	return 0;
}

static int want_bool(int *out, const struct loader *L, const struct yref *r,
		     const char *what)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes",
					   "YES",  "on",   "On",   "ON" };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No",
					  "NO",	   "off",   "Off",   "OFF" };
	const struct ynode *n = r->node;
	size_t i;

	*out = 0;
	if (n->kind == Y_SCALAR && n->plain) {
		if (is_null(n))
			return 0;
		for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
			if (!strcmp(n->text, yes[i])) {
				*out = 1;
				return 0;
			}
		for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
			if (!strcmp(n->text, no[i]))
				return 0;
	}
	return bad(L, r, PB_EINVAL, "%s: expected true or false", what);
}

/* A sequence (or null: empty). */
static int want_list(const struct yref **items, size_t *nr,
		     const struct loader *L, const struct yref *r,
		     const char *what)
{
	const struct ynode *n = r->node;

	*items = NULL;
	*nr = 0;
	if (is_null(n))
		return 0;
	if (n->kind != Y_SEQ)
		return bad(L, r, PB_EINVAL, "%s: expected a list, found %s",
			   what, kind_name(n->kind));
	*items = n->kids;
	*nr = n->nr;
	return 0;
}

/*
 * A key we know must appear once per mapping: bit is its bit in *seen.
 */
static int check_key(const struct loader *L, const struct yref *k,
		     unsigned *seen, unsigned bit)
{
	char shown[64];

	if (*seen & bit)
		return bad(L, k, PB_EINVAL, "duplicate key %s",
			   printable_copy(shown, sizeof(shown), k->node->text,
					  k->node->len));
	*seen |= bit;
	return 0;
}

static int check_map(const struct loader *L, const struct yref *r,
		     const char *what)
{
	const struct ynode *n = r->node;
	size_t i;

	if (n->kind != Y_MAP)
		return bad(L, r, PB_EINVAL, "%s: expected a mapping, found %s",
			   what, kind_name(n->kind));
	for (i = 0; i < n->nr; i += 2) {
		const struct yref *k = &n->kids[i];

		if (k->node->kind != Y_SCALAR)
			return bad(L, k, PB_EINVAL,
				   "%s: expected a plain key, found %s", what,
				   kind_name(k->node->kind));
		if (k->node->plain && key_is(k->node, "<<"))
			return bad(L, k, PB_EINVAL,
				   "%s: merge keys (<<) are not supported",
				   what);
	}
	return 0;
}

/* An RFC 5321 mailbox as people write it: local@domain, plain ASCII. */
static int addr_ok(const char *s)
{
	const char *at = strchr(s, '@');
	const char *p;

	if (!at || at == s || !at[1] || strchr(at + 1, '@'))
		return 0;
	for (p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c <= ' ' || c >= 0x7f || strchr("<>()[],;:\"\\", c))
			return 0;
	}
	return 1;
}

static int want_addr(char **out, const struct loader *L, const struct yref *r,
		     const char *what, int required)
{
	int rc = want_string(out, L, r, what, PB_ADDR_MAX, required);

	if (rc || !*out)
		return rc;
	if (!addr_ok(*out)) {
		char shown[80];

		rc = bad(L, r, PB_EINVAL, "%s: not a mail address: %s", what,
			 printable_copy(shown, sizeof(shown), *out,
					strlen(*out)));
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* ---- people ---- */

enum { P_NAME = 1, P_EMAIL = 2, P_GLUSER = 4, P_RESTRICTED = 8 };

static int person_index(struct loader *L, const struct yref *at,
			struct owners_person *p)
{
	char *key = lower_dup(p->email);
	struct owners_person *old = strmap_get(&L->o->by_email, key);
	char s1[80], s2[80];
	int rc = 0;

	if (!old) {
		strmap_put(&L->o->by_email, key, p);
	} else if (old->gluser && p->gluser &&
		   strcasecmp(old->gluser, p->gluser)) {
		rc = bad(L, at, PB_EINVAL,
			 "gluser %s of %s conflicts with %s given earlier",
			 printable_copy(s1, sizeof(s1), p->gluser,
					strlen(p->gluser)),
			 p->email,
			 printable_copy(s2, sizeof(s2), old->gluser,
					strlen(old->gluser)));
	} else if (!old->gluser && p->gluser) {
		strmap_put(&L->o->by_email, key, p);
	}
	free(key);
	return rc;
}

static int load_person(const struct owners_person **out, struct loader *L,
		       const struct yref *r, const char *what)
{
	struct ynode *n = r->node;
	struct owners_person *p;
	char *name = NULL, *email = NULL, *gluser = NULL;
	int restricted = 0;
	const struct yref *gl_at = r;
	unsigned seen = 0;
	size_t i;
	int rc;

	if (n->kind != Y_MAP)
		return bad(L, r, PB_EINVAL,
			   "%s: expected a person (a mapping with name and "
			   "email), found %s",
			   what, kind_name(n->kind));
	if (n->cooked_kind == COOKED_PERSON) {
		*out = n->cooked;
		return 0;
	}
	rc = check_map(L, r, what);
	for (i = 0; !rc && i < n->nr; i += 2) {
		const struct yref *k = &n->kids[i], *v = &n->kids[i + 1];

		if (key_is(k->node, "name")) {
			rc = check_key(L, k, &seen, P_NAME);
			if (!rc)
				rc = want_string(&name, L, v, "name",
						 OWNERS_NAME_MAX, OPTIONAL);
		} else if (key_is(k->node, "email")) {
			rc = check_key(L, k, &seen, P_EMAIL);
			if (!rc)
				rc = want_addr(&email, L, v, "email", REQUIRED);
		} else if (key_is(k->node, "gluser")) {
			rc = check_key(L, k, &seen, P_GLUSER);
			if (!rc)
				rc = want_string(&gluser, L, v, "gluser",
						 OWNERS_NAME_MAX, OPTIONAL);
			if (!rc && gluser && strchr(gluser, ' '))
				rc = bad(L, v, PB_EINVAL,
					 "gluser: contains a space");
			gl_at = v;
		} else if (key_is(k->node, "restricted")) {
			rc = check_key(L, k, &seen, P_RESTRICTED);
			if (!rc)
				rc = want_bool(&restricted, L, v, "restricted");
		}
	}
	if (!rc && !email)
		rc = bad(L, r, PB_EINVAL, "%s: person without an email", what);
	if (rc) {
		free(name);
		free(email);
		free(gluser);
		return rc;
	}
	p = xcalloc(1, sizeof(*p));
	p->name = keep(L->o, name ? name : xstrdup(""));
	p->email = keep(L->o, email);
	p->gluser = keep(L->o, gluser);
	p->restricted = restricted;
	ALLOC_GROW(L->o->people, L->o->people_nr + 1, L->o->people_alloc);
	L->o->people[L->o->people_nr++] = p;
	n->cooked_kind = COOKED_PERSON;
	n->cooked = p;
	*out = p;
	return person_index(L, gl_at, p);
}

static int load_people(const struct owners_person *const **out, size_t *nr,
		       struct loader *L, const struct yref *r, const char *what)
{
	const struct owners_person **list;
	const struct yref *items;
	size_t n, i;
	int rc;

	rc = want_list(&items, &n, L, r, what);
	if (rc)
		return rc;
	list = n ? xcalloc(n, sizeof(*list)) : NULL;
	for (i = 0; i < n; i++) {
		rc = load_person(&list[i], L, &items[i], what);
		if (rc) {
			free(list);
			return rc;
		}
	}
	*out = list;
	*nr = n;
	return 0;
}

/* ---- path patterns ---- */

static int load_globs(struct glob **arr, size_t *nr, size_t *alloc,
		      struct loader *L, const struct yref *r, const char *what)
{
	const struct yref *items;
	size_t n, i;
	int rc;

	rc = want_list(&items, &n, L, r, what);
	for (i = 0; !rc && i < n; i++) {
		struct glob g = { 0 };
		size_t len;

		rc = want_string(&g.pat, L, &items[i], what, OWNERS_PATTERN_MAX,
				 REQUIRED);
		if (rc)
			break;
		len = strlen(g.pat);
		while (len && g.pat[len - 1] == '/') {
			g.pat[--len] = '\0';
			g.dir = 1;
		}
		if (!len) {
			free(g.pat);
			rc = bad(L, &items[i], PB_EINVAL,
				 "%s: a pattern of only slashes", what);
			break;
		}
		g.len = len;
		g.literal = !strpbrk(g.pat, "*?[\\");
		ALLOC_GROW(*arr, *nr + 1, *alloc);
		(*arr)[(*nr)++] = g;
	}
	return rc;
}

/*
 * glibc's regcomp expands x+ and x{m,n} by copying x, so stacked or nested
 * repetitions grow exponentially: fuzzing found "d++++...+" (66 pluses)
 * taking gigabytes.  Estimate the size of the expanded pattern and refuse
 * a big one.  Also refuse back-references: they are not POSIX ERE, and
 * they make glibc's regexec backtrack.  Returns why, or NULL when fine.
 */
#define REGEX_GROUPS_MAX 32

static const char *skip_bracket(const char *p)
{
	p++; /* '[' */
	if (*p == '^')
		p++;
	if (*p == ']')
		p++;
	while (*p && *p != ']') {
		if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
			char end = p[1];

			for (p += 2; *p && !(*p == end && p[1] == ']'); p++)
				;
			if (*p)
				p += 2;
			continue;
		}
		p++;
	}
	return *p ? p + 1 : p;
}

/* Parse "{m}", "{m,}" or "{m,n}" at p; the count it stands for, or 0. */
static size_t interval(const char **pp)
{
	const char *p = *pp + 1;
	size_t m = 0, n = 0;
	int open = 0;

	if (*p < '0' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9'; p++)
		m = m > 65536 ? m : m * 10 + (size_t)(*p - '0');
	if (*p == ',') {
		p++;
		open = *p == '}';
		for (; *p >= '0' && *p <= '9'; p++)
			n = n > 65536 ? n : n * 10 + (size_t)(*p - '0');
	} else {
		n = m;
	}
	if (*p != '}')
		return 0;
	*pp = p + 1;
	if (open)
		return m + 1;
	return (n > m ? n : m) + 1; /* {0} still costs one */
}

static const char *regex_vet(const char *re)
{
	size_t saved[REGEX_GROUPS_MAX];
	size_t cur = 0, last = 0, depth = 0, mult;
	const char *p = re;

	while (*p) {
		switch (*p) {
		case '\\':
			if (p[1] >= '1' && p[1] <= '9')
				return "back-references are not supported";
			p += p[1] ? 2 : 1;
			cur++;
			last = 1;
			break;
		case '[':
			p = skip_bracket(p);
			cur++;
			last = 1;
			break;
		case '(':
			if (depth == REGEX_GROUPS_MAX)
				return "groups nested too deep";
			saved[depth++] = cur;
			cur = 0;
			last = 0;
			p++;
			break;
		case ')':
			p++;
			if (!depth) {
				cur++;
				last = 1;
				break;
			}
			last = cur + 1;
			cur = saved[--depth] + last;
			break;
		case '|':
			cur++;
			last = 0;
			p++;
			break;
		case '*':
		case '?':
			cur++;
			last++;
			p++;
			break;
		case '+':
			cur += last + 1;
			last = 2 * last + 1;
			p++;
			break;
		case '{':
			mult = interval(&p);
			if (!mult) {
				p++;
				cur++;
				last = 1;
				break;
			}
			if (mult > OWNERS_REGEX_COST_MAX)
				return "too complex (a repetition too large)";
			cur += last * (mult - 1) + 1;
			last = last * mult + 1;
			break;
		default:
			cur++;
			last = 1;
			p++;
			break;
		}
		if (cur > OWNERS_REGEX_COST_MAX || last > OWNERS_REGEX_COST_MAX)
			return "too complex (nested repetitions)";
	}
	return NULL;
}

/* Compile one includeRegexes entry, once per node however often aliased. */
static int compile_regex(const regex_t **out, struct loader *L,
			 const struct yref *r, const char *what)
{
	struct ynode *n = r->node;
	const char *why;
	regex_t *re;
	char *text;
	int rc, err;

	if (n->kind == Y_SCALAR && n->cooked_kind == COOKED_REGEX) {
		*out = n->cooked;
		return 0;
	}
	rc = want_string(&text, L, r, what, OWNERS_REGEX_MAX, REQUIRED);
	if (rc)
		return rc;
	why = regex_vet(text);
	if (why) {
		free(text);
		return bad(L, r, PB_EINVAL, "%s: %s", what, why);
	}
	re = xmalloc(sizeof(*re));
	err = regcomp(re, text, REG_EXTENDED | REG_NOSUB);
	free(text);
	if (err) {
		char msg[128];

		regerror(err, re, msg, sizeof(msg));
		free(re);
		return bad(L, r, PB_EINVAL, "%s: bad regular expression: %s",
			   what, msg);
	}
	ALLOC_GROW(L->o->regexes, L->o->regexes_nr + 1, L->o->regexes_alloc);
	L->o->regexes[L->o->regexes_nr++] = re;
	n->cooked_kind = COOKED_REGEX;
	n->cooked = re;
	*out = re;
	return 0;
}

static int load_regexes(struct owners_paths *paths, struct loader *L,
			const struct yref *r, const char *what)
{
	const struct yref *items;
	const regex_t *re = NULL;
	size_t n, i;
	int rc;

	rc = want_list(&items, &n, L, r, what);
	for (i = 0; !rc && i < n; i++) {
		rc = compile_regex(&re, L, &items[i], what);
		if (rc)
			break;
		ALLOC_GROW(paths->re, paths->re_nr + 1, paths->re_alloc);
		paths->re[paths->re_nr++] = re;
	}
	return rc;
}

enum { PA_INC = 1, PA_RE = 2, PA_EXC = 4 };

static int load_paths(struct owners_paths *paths, struct loader *L,
		      const struct yref *r)
{
	const struct ynode *n = r->node;
	unsigned seen = 0;
	size_t i;
	int rc;

	if (is_null(n))
		return 0;
	rc = check_map(L, r, "paths");
	for (i = 0; !rc && i < n->nr; i += 2) {
		const struct yref *k = &n->kids[i], *v = &n->kids[i + 1];

		if (key_is(k->node, "includes")) {
			rc = check_key(L, k, &seen, PA_INC);
			if (!rc)
				rc = load_globs(&paths->inc, &paths->inc_nr,
						&paths->inc_alloc, L, v,
						"includes");
		} else if (key_is(k->node, "includeRegexes")) {
			rc = check_key(L, k, &seen, PA_RE);
			if (!rc)
				rc = load_regexes(paths, L, v,
						  "includeRegexes");
		} else if (key_is(k->node, "excludes")) {
			rc = check_key(L, k, &seen, PA_EXC);
			if (!rc)
				rc = load_globs(&paths->exc, &paths->exc_nr,
						&paths->exc_alloc, L, v,
						"excludes");
		}
	}
	return rc;
}

/* ---- subsystems ---- */

static int load_labels(struct owners_subsystem *s, struct loader *L,
		       const struct yref *r)
{
	const struct ynode *n = r->node;
	unsigned seen = 0;
	char *label = NULL;
	size_t i;
	int rc;

	rc = check_map(L, r, "labels");
	for (i = 0; !rc && i < n->nr; i += 2) {
		const struct yref *k = &n->kids[i], *v = &n->kids[i + 1];

		if (!key_is(k->node, "name"))
			continue;
		rc = check_key(L, k, &seen, 1);
		if (!rc)
			rc = want_string(&label, L, v, "labels.name",
					 OWNERS_NAME_MAX, REQUIRED);
		if (!rc && strmap_get(&L->o->by_label, label)) {
			char shown[80];

			rc = bad(L, v, PB_EINVAL,
				 "labels.name %s: used by an earlier "
				 "subsystem",
				 printable_copy(shown, sizeof(shown), label,
						strlen(label)));
		}
	}
	if (!rc && !label)
		rc = bad(L, r, PB_EINVAL, "labels: no name");
	if (rc) {
		free(label);
		return rc;
	}
	s->label = keep(L->o, label);
	return 0;
}

enum {
	S_TITLE = 1 << 0,
	S_LABELS = 1 << 1,
	S_STATUS = 1 << 2,
	S_REQUIRED = 1 << 3,
	S_MAINTAINERS = 1 << 4,
	S_REVIEWERS = 1 << 5,
	S_PATHS = 1 << 6,
	S_SCM = 1 << 7,
	S_LIST = 1 << 8,
};

static int load_subsystem_keys(struct owners_subsystem *s, struct loader *L,
			       const struct ynode *n)
{
	unsigned seen = 0;
	char *str;
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < n->nr; i += 2) {
		const struct yref *k = &n->kids[i], *v = &n->kids[i + 1];

		if (key_is(k->node, "subsystem")) {
			rc = check_key(L, k, &seen, S_TITLE);
			if (!rc)
				rc = want_string(&str, L, v, "subsystem",
						 OWNERS_NAME_MAX, REQUIRED);
			if (!rc)
				s->title = keep(L->o, str);
		} else if (key_is(k->node, "labels")) {
			rc = check_key(L, k, &seen, S_LABELS);
			if (!rc)
				rc = load_labels(s, L, v);
		} else if (key_is(k->node, "status")) {
			rc = check_key(L, k, &seen, S_STATUS);
			if (!rc)
				rc = want_string(&str, L, v, "status",
						 OWNERS_TEXT_MAX, OPTIONAL);
			if (!rc)
				s->status = keep(L->o, str);
		} else if (key_is(k->node, "requiredApproval")) {
			rc = check_key(L, k, &seen, S_REQUIRED);
			if (!rc)
				rc = want_bool(&s->required_approval, L, v,
					       "requiredApproval");
		} else if (key_is(k->node, "maintainers")) {
			rc = check_key(L, k, &seen, S_MAINTAINERS);
			if (!rc)
				rc = load_people(&s->maintainers,
						 &s->maintainers_nr, L, v,
						 "maintainers");
		} else if (key_is(k->node, "reviewers")) {
			rc = check_key(L, k, &seen, S_REVIEWERS);
			if (!rc)
				rc = load_people(&s->reviewers,
						 &s->reviewers_nr, L, v,
						 "reviewers");
		} else if (key_is(k->node, "paths")) {
			rc = check_key(L, k, &seen, S_PATHS);
			if (!rc)
				rc = load_paths(s->paths, L, v);
		} else if (key_is(k->node, "scm")) {
			rc = check_key(L, k, &seen, S_SCM);
			if (!rc)
				rc = want_string(&str, L, v, "scm",
						 OWNERS_TEXT_MAX, OPTIONAL);
			if (!rc)
				s->scm = keep(L->o, str);
		} else if (key_is(k->node, "mailingList")) {
			rc = check_key(L, k, &seen, S_LIST);
			if (!rc)
				rc = want_addr(&str, L, v, "mailingList",
					       OPTIONAL);
			if (!rc)
				s->mailing_list = keep(L->o, str);
		}
	}
	return rc;
}

static int load_subsystem(struct loader *L, const struct yref *r)
{
	const struct ynode *n = r->node;
	struct owners_subsystem *s;
	int rc;

	rc = check_map(L, r, "subsystems");
	if (rc)
		return rc;
	s = xcalloc(1, sizeof(*s));
	s->paths = xcalloc(1, sizeof(*s->paths));
	s->index = L->o->subs_nr;
	rc = load_subsystem_keys(s, L, n);
	if (!rc && !s->title)
		rc = bad(L, r, PB_EINVAL,
			 "subsystems: entry without a `subsystem` title");
	if (!rc && !s->label) {
		char shown[80];

		rc = bad(L, r, PB_EINVAL, "subsystem %s: no labels.name",
			 printable_copy(shown, sizeof(shown), s->title,
					strlen(s->title)));
	}
	if (rc) {
		subsystem_free(s);
		return rc;
	}
	strmap_put(&L->o->by_label, s->label, s);
	ALLOC_GROW(L->o->subs, L->o->subs_nr + 1, L->o->subs_alloc);
	L->o->subs[L->o->subs_nr++] = s;
	return 0;
}

static int load_root(struct loader *L, const struct yref *root)
{
	const struct ynode *n = root->node;
	const struct yref *items, *subs = NULL;
	unsigned seen = 0;
	size_t i, j, nr;
	int rc;

	if (!n || is_null(n))
		return at_err(PB_EINVAL, L->name, 1, 1,
			      "empty: expected a mapping with subsystems");
	rc = check_map(L, root, "top level");
	for (i = 0; !rc && i < n->nr; i += 2) {
		const struct yref *k = &n->kids[i], *v = &n->kids[i + 1];

		if (key_is(k->node, "users")) {
			rc = check_key(L, k, &seen, 1);
			if (!rc)
				rc = want_list(&items, &nr, L, v, "users");
			for (j = 0; !rc && j < nr; j++) {
				const struct owners_person *p;

				rc = load_person(&p, L, &items[j], "users");
			}
		} else if (key_is(k->node, "subsystems")) {
			rc = check_key(L, k, &seen, 2);
			subs = v;
		}
	}
	if (rc)
		return rc;
	if (!subs)
		return bad(L, root, PB_EINVAL, "no subsystems list");
	rc = want_list(&items, &nr, L, subs, "subsystems");
	for (j = 0; !rc && j < nr; j++)
		rc = load_subsystem(L, &items[j]);
	return rc;
}

int owners_load_mem(struct owners **out, const char *data, size_t len,
		    const char *name)
{
	struct ytree t;
	struct loader L;
	int rc;

	if (!name)
		name = "owners.yaml";
	if (!data && len)
		return err_set(PB_EINVAL, "%s: no data", name);
	if (!data)
		data = ""; /* libyaml wants a pointer even for nothing */
	if (len > OWNERS_FILE_MAX)
		return err_set(PB_ELIMIT, "%s: larger than %d bytes", name,
			       OWNERS_FILE_MAX);
	memset(&t, 0, sizeof(t));
	t.name = name;
	L.name = name;
	L.o = xcalloc(1, sizeof(*L.o));
	rc = tree_build(&t, data, len);
	if (rc)
		goto out;
	rc = load_root(&L, &t.root);
	if (rc)
		goto out;
	*out = L.o;
	L.o = NULL;
out:
	owners_free(L.o);
	tree_release(&t);
	return rc;
}

int owners_load(struct owners **out, const char *path)
{
	struct buf b = BUF_INIT(OWNERS_FILE_MAX);
	int rc;

	/* It decides who may approve: trusted like the configuration. */
	rc = perm_read_trusted(&b, path);
	if (rc == PB_ELIMIT)
		rc = err_set(PB_ELIMIT, "%s: larger than %d bytes", path,
			     OWNERS_FILE_MAX);
	if (!rc)
		rc = owners_load_mem(out, b.data, b.len, path);
	buf_release(&b);
	return rc;
}

size_t owners_count(const struct owners *o)
{
	return o ? o->subs_nr : 0;
}

const struct owners_subsystem *owners_get(const struct owners *o, size_t index)
{
	return o && index < o->subs_nr ? o->subs[index] : NULL;
}

const struct owners_subsystem *owners_find(const struct owners *o,
					   const char *label)
{
	return o && label ? strmap_get(&o->by_label, label) : NULL;
}

/* ---- matching ---- */

void owners_matches_init(struct owners_matches *m)
{
	m->items = NULL;
	m->nr = 0;
	m->alloc = 0;
}

void owners_matches_release(struct owners_matches *m)
{
	free((void *)m->items);
	owners_matches_init(m);
}

static int check_path(const char *path)
{
	size_t len;

	if (!path || !*path)
		return err_set(PB_EINVAL, "owners: empty path");
	len = strnlen(path, OWNERS_PATH_MAX + 1);
	if (len > OWNERS_PATH_MAX)
		return err_set(PB_EINVAL, "owners: path longer than %d bytes",
			       OWNERS_PATH_MAX);
	return 0;
}

/*
 * scratch holds a copy of path (len bytes + NUL) that a directory glob may
 * cut at each '/' to try the leading directories.
 */
static int glob_match(const struct glob *g, const char *path, size_t len,
		      char *scratch)
{
	size_t i;
	int hit;

	if (g->literal) {
		if (len < g->len || memcmp(path, g->pat, g->len))
			return 0;
		if (path[g->len] == '/')
			return 1;
		return !g->dir && path[g->len] == '\0';
	}
	if (!g->dir)
		return fnmatch(g->pat, path, FNM_PATHNAME) == 0;
	for (i = 1; i < len; i++) {
		if (scratch[i] != '/')
			continue;
		scratch[i] = '\0';
		hit = fnmatch(g->pat, scratch, FNM_PATHNAME) == 0;
		scratch[i] = '/';
		if (hit)
			return 1;
	}
	return 0;
}

static int covers(const struct owners_paths *p, const char *path, size_t len,
		  char *scratch)
{
	size_t i;
	int in = 0;

	for (i = 0; !in && i < p->inc_nr; i++)
		in = glob_match(&p->inc[i], path, len, scratch);
	for (i = 0; !in && i < p->re_nr; i++)
		in = regexec(p->re[i], path, 0, NULL, 0) == 0;
	if (!in)
		return 0;
	for (i = 0; i < p->exc_nr; i++)
		if (glob_match(&p->exc[i], path, len, scratch))
			return 0;
	return 1;
}

int owners_subsystem_covers(const struct owners_subsystem *s, const char *path)
{
	char scratch[OWNERS_PATH_MAX + 1];
	size_t len;

	if (!s || check_path(path))
		return 0;
	len = strlen(path);
	memcpy(scratch, path, len + 1);
	return covers(s->paths, path, len, scratch);
}

static int cmp_subsystem(const void *a, const void *b)
{
	const struct owners_subsystem *x =
		*(const struct owners_subsystem *const *)a;
	const struct owners_subsystem *y =
		*(const struct owners_subsystem *const *)b;

	return x->index < y->index ? -1 : x->index > y->index;
}

/* Sort into file order and drop duplicates. */
static void matches_tidy(struct owners_matches *m)
{
	size_t i, j;

	if (m->nr < 2)
		return;
	qsort((void *)m->items, m->nr, sizeof(*m->items), cmp_subsystem);
	for (i = 1, j = 1; i < m->nr; i++)
		if (m->items[i] != m->items[j - 1])
			m->items[j++] = m->items[i];
	m->nr = j;
}

static void match_one(struct owners_matches *out, const struct owners *o,
		      const char *path)
{
	char scratch[OWNERS_PATH_MAX + 1];
	size_t i, len = strlen(path);

	if (!o)
		return;
	memcpy(scratch, path, len + 1);
	for (i = 0; i < o->subs_nr; i++) {
		if (!covers(o->subs[i]->paths, path, len, scratch))
			continue;
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		out->items[out->nr++] = o->subs[i];
	}
}

int owners_match(struct owners_matches *out, const struct owners *o,
		 const char *path)
{
	int rc = check_path(path);

	if (rc)
		return rc;
	match_one(out, o, path);
	matches_tidy(out);
	return 0;
}

int owners_touched(struct owners_matches *out, const struct owners *o,
		   const char *const *paths, size_t n)
{
	size_t i;
	int rc;

	if (n && !paths)
		return err_set(PB_EINVAL, "owners: no paths");
	for (i = 0; i < n; i++) {
		rc = check_path(paths[i]);
		if (rc)
			return rc;
	}
	for (i = 0; i < n; i++)
		match_one(out, o, paths[i]);
	matches_tidy(out);
	return 0;
}

/* ---- routing ---- */

/* RFC 5322 3.2.3 specials: a display name holding one must be quoted. */
static int name_needs_quotes(const char *s)
{
	for (; *s; s++)
		if (strchr("()<>[]:;@\\,.\"", *s))
			return 1;
	return 0;
}

static char *format_person(const struct owners_person *p)
{
	const char *s;
	char *out, *d;

	if (!*p->name)
		return xstrdup(p->email);
	if (!name_needs_quotes(p->name))
		return xasprintf("%s <%s>", p->name, p->email);
	/* RFC 5322 3.2.4: quoted-string, with \ before " and \. */
	out = xmalloc(2 * strlen(p->name) + strlen(p->email) + 6);
	d = out;
	*d++ = '"';
	for (s = p->name; *s; s++) {
		if (*s == '"' || *s == '\\')
			*d++ = '\\';
		*d++ = *s;
	}
	sprintf(d, "\" <%s>", p->email);
	return out;
}

/* The address in an item of cc: inside the last <>, or the whole item. */
static char *item_addr(const char *item)
{
	const char *lt = strrchr(item, '<'), *gt;
	const char *b = item, *e = item + strlen(item);
	char *raw, *key;

	if (lt && (gt = strchr(lt, '>'))) {
		b = lt + 1;
		e = gt;
	}
	while (b < e && (*b == ' ' || *b == '\t'))
		b++;
	while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	raw = xstrndup(b, (size_t)(e - b));
	key = lower_dup(raw);
	free(raw);
	return key;
}

static void route_add(struct strlist *cc, struct strmap *seen,
		      const char *email, char *formatted)
{
	char *key = lower_dup(email);

	if (strmap_get(seen, key)) {
		free(formatted);
	} else {
		strmap_put(seen, key, (void *)seen);
		strlist_push_owned(cc, formatted);
	}
	free(key);
}

static void route_people(struct strlist *cc, struct strmap *seen,
			 const struct owners_person *const *people, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		route_add(cc, seen, people[i]->email, format_person(people[i]));
}

int owners_route(struct strlist *cc, const struct owners *o,
		 const char *const *paths, size_t n, unsigned flags)
{
	struct owners_matches m = OWNERS_MATCHES_INIT;
	struct strmap seen = { 0 };
	size_t i;
	int rc;

	rc = owners_touched(&m, o, paths, n);
	if (rc)
		goto out;
	for (i = 0; i < cc->nr; i++) {
		char *key = item_addr(cc->items[i]);

		strmap_put(&seen, key, (void *)&seen);
		free(key);
	}
	for (i = 0; i < m.nr; i++)
		route_people(cc, &seen, m.items[i]->maintainers,
			     m.items[i]->maintainers_nr);
	if (!(flags & OWNERS_ROUTE_NO_REVIEWERS))
		for (i = 0; i < m.nr; i++)
			route_people(cc, &seen, m.items[i]->reviewers,
				     m.items[i]->reviewers_nr);
	if (!(flags & OWNERS_ROUTE_NO_LISTS))
		for (i = 0; i < m.nr; i++)
			if (m.items[i]->mailing_list)
				route_add(cc, &seen, m.items[i]->mailing_list,
					  xstrdup(m.items[i]->mailing_list));
out:
	strmap_release(&seen);
	owners_matches_release(&m);
	return rc;
}

/* ---- authority ---- */

static int may_approve(const struct owners_person *const *people, size_t nr,
		       const char *email)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (!people[i]->restricted &&
		    !strcasecmp(people[i]->email, email))
			return 1;
	return 0;
}

int owners_is_approver(const struct owners_subsystem **out,
		       const struct owners *o, const char *const *paths,
		       size_t n, const char *email)
{
	struct owners_matches m = OWNERS_MATCHES_INIT;
	const struct owners_subsystem *s;
	size_t i;
	int rc;

	if (out)
		*out = NULL;
	if (!email)
		return err_set(PB_EINVAL, "owners: no email");
	rc = owners_touched(&m, o, paths, n);
	if (rc)
		goto out;
	for (i = 0; i < m.nr; i++) {
		s = m.items[i];
		if (may_approve(s->maintainers, s->maintainers_nr, email) ||
		    may_approve(s->reviewers, s->reviewers_nr, email)) {
			if (out)
				*out = s;
			rc = 1;
			break;
		}
	}
out:
	owners_matches_release(&m);
	return rc;
}

int owners_gluser(const char **out, const struct owners *o, const char *email)
{
	const struct owners_person *p;
	char *key;

	if (!email)
		return err_set(PB_EINVAL, "owners: no email");
	if (strnlen(email, PB_ADDR_MAX + 1) > PB_ADDR_MAX)
		return err_set(PB_ENOTFOUND, "owners: no such person");
	key = lower_dup(email);
	p = o ? strmap_get(&o->by_email, key) : NULL;
	free(key);
	if (!p || !p->gluser) {
		char shown[80];

		return err_set(PB_ENOTFOUND, "owners: no gluser for %s",
			       printable_copy(shown, sizeof(shown), email,
					      strlen(email)));
	}
	*out = p->gluser;
	return 0;
}
