#include "inbound/usermap.h"

#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/perm.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct usermap_entry {
	char *email;
	char *user;
};

struct usermap {
	struct usermap_entry *v;
	size_t nr, alloc;
};

void usermap_free(struct usermap *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nr; i++) {
		free(m->v[i].email);
		free(m->v[i].user);
	}
	free(m->v);
	free(m);
}

static int is_user_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

static int is_blank_char(int c)
{
	return c == ' ' || c == '\t';
}

static int not_blank(int c)
{
	return !is_blank_char(c);
}

/* local@domain: printable ASCII without blanks or <>, one "@" inside. */
static int email_ok(const char *p, size_t len)
{
	const char *at = memchr(p, '@', len);
	size_t i;

	if (!at || at == p || at == p + len - 1 || len > PB_ADDR_MAX)
		return 0;
	if (memchr(at + 1, '@', len - (size_t)(at - p) - 1))
		return 0;
	for (i = 0; i < len; i++)
		if (p[i] <= ' ' || p[i] >= 0x7f || p[i] == '<' || p[i] == '>')
			return 0;
	return 1;
}

static int add_line(struct usermap *m, const char *name, unsigned lineno,
		    const char *line, size_t len)
{
	const char *email, *user;
	size_t el, ul, i;
	struct scan s;

	scan_init(&s, line, len);
	scan_blanks(&s);
	if (scan_eof(&s) || scan_peek(&s) == '#')
		return 0;
	if (!scan_span(&s, not_blank, &email, &el))
		return 0;
	scan_blanks(&s);
	if (!scan_span(&s, not_blank, &user, &ul) || !email_ok(email, el))
		return err_set(PB_EINVAL, "%s:%u: expected \"email username\"",
			       name, lineno);
	scan_blanks(&s);
	if (!scan_eof(&s) && scan_peek(&s) != '#')
		return err_set(PB_EINVAL, "%s:%u: text after the username",
			       name, lineno);
	if (ul > USERMAP_USER_MAX)
		return err_set(PB_EINVAL, "%s:%u: username too long", name,
			       lineno);
	for (i = 0; i < ul; i++)
		if (!is_user_char((unsigned char)user[i]))
			return err_set(PB_EINVAL, "%s:%u: bad username", name,
				       lineno);
	for (i = 0; i < m->nr; i++) {
		if (strlen(m->v[i].email) != el ||
		    strncasecmp(m->v[i].email, email, el))
			continue;
		if (strlen(m->v[i].user) == ul &&
		    !memcmp(m->v[i].user, user, ul))
			return 0;
		return err_set(PB_EINVAL,
			       "%s:%u: address mapped twice, to different "
			       "users",
			       name, lineno);
	}
	ALLOC_GROW(m->v, m->nr + 1, m->alloc);
	m->v[m->nr].email = xstrndup(email, el);
	m->v[m->nr].user = xstrndup(user, ul);
	m->nr++;
	return 0;
}

int usermap_load_mem(struct usermap **out, const char *data, size_t len,
		     const char *name)
{
	struct usermap *m;
	const char *line;
	unsigned lineno = 0;
	struct scan s;
	size_t ll;
	int rc = 0;

	*out = NULL;
	if (len > USERMAP_FILE_MAX)
		return err_set(PB_ELIMIT, "%s: larger than %d bytes", name,
			       USERMAP_FILE_MAX);
	if (memchr(data, '\0', len))
		return err_set(PB_EINVAL, "%s: holds a NUL byte", name);
	m = xcalloc(1, sizeof(*m));
	scan_init(&s, data, len);
	while (!rc && scan_line(&s, &line, &ll))
		rc = add_line(m, name, ++lineno, line, ll);
	if (rc) {
		usermap_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

int usermap_load(struct usermap **out, const char *path)
{
	struct buf b = BUF_INIT(USERMAP_FILE_MAX);
	int rc;

	*out = NULL;
	/* It decides as whom an approval is made: trusted like the
	 * configuration. */
	rc = perm_read_trusted(&b, path);
	if (rc) {
		if (rc == PB_ELIMIT)
			err_set(rc, "%s: larger than %d bytes", path,
				USERMAP_FILE_MAX);
		buf_release(&b);
		return rc;
	}
	rc = usermap_load_mem(out, b.data, b.len, path);
	buf_release(&b);
	return rc;
}

const char *usermap_lookup(const struct usermap *m, const char *email)
{
	size_t i;

	if (!m || !email)
		return NULL;
	for (i = 0; i < m->nr; i++)
		if (!strcasecmp(m->v[i].email, email))
			return m->v[i].user;
	return NULL;
}
