#include "core/configdoc.h"
#include "util/buf.h"
#include "util/err.h"

#include <string.h>

void configdoc_duration(struct buf *out, int64_t ms)
{
	static const struct {
		int64_t mult;
		const char *unit;
	} units[] = { { 24 * 3600 * 1000LL, "d" },
		      { 3600 * 1000LL, "h" },
		      { 60 * 1000LL, "m" },
		      { 1000LL, "s" },
		      { 1, "ms" } };
	size_t i;

	if (ms == 0) {
		buf_adds(out, "0s");
		return;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ms % units[i].mult == 0) {
			buf_addf(out, "%lld%s", (long long)(ms / units[i].mult),
				 units[i].unit);
			return;
		}
	}
}

void configdoc_size(struct buf *out, int64_t bytes)
{
	static const struct {
		int64_t mult;
		const char *unit;
	} units[] = { { 1024LL * 1024 * 1024, "G" },
		      { 1024LL * 1024, "M" },
		      { 1024LL, "k" } };
	size_t i;

	for (i = 0; bytes && i < sizeof(units) / sizeof(units[0]); i++) {
		if (bytes % units[i].mult == 0) {
			buf_addf(out, "%lld%s",
				 (long long)(bytes / units[i].mult),
				 units[i].unit);
			return;
		}
	}
	buf_addf(out, "%lld", (long long)bytes);
}

void configdoc_number(struct buf *out, enum config_type t, int64_t v)
{
	if (t == CONFIG_DURATION)
		configdoc_duration(out, v);
	else if (t == CONFIG_SIZE)
		configdoc_size(out, v);
	else
		buf_addf(out, "%lld", (long long)v);
}

void configdoc_words(struct buf *out, const char *const *w, const char *quote)
{
	size_t i;

	for (i = 0; w[i]; i++)
		buf_addf(out, "%s%s%s%s", i ? ", " : "", quote, w[i], quote);
}

static int is_project_only(const struct config_param *p)
{
	return !strcmp(p->section, "project");
}

/*
 * Is p documented under the section named `section`, and how: 1 in its
 * own section, 2 in the [project] section, where a per-project parameter
 * defaults to the global one.
 */
static int documented_in(const struct config_param *p, const char *section)
{
	if (strcmp(section, "project"))
		return !strcmp(p->section, section);
	if (is_project_only(p) || (p->flags & CONFIG_PER_PROJECT))
		return 2;
	return 0;
}

/* The bounds column: "1s to 1h", "`a`, `b`", "at most 64 bytes". */
static void doc_bounds(struct buf *out, const struct config_param *p)
{
	switch (p->type) {
	case CONFIG_INT:
	case CONFIG_DURATION:
	case CONFIG_SIZE:
		configdoc_number(out, p->type, p->min);
		buf_adds(out, " to ");
		configdoc_number(out, p->type, p->max);
		break;
	case CONFIG_ENUM:
		configdoc_words(out, p->values, "`");
		break;
	case CONFIG_BOOL:
		buf_adds(out, "`yes`, `no`");
		break;
	case CONFIG_URL:
		configdoc_words(out, p->values, "`");
		buf_adds(out, " URL");
		break;
	case CONFIG_MAILER:
		configdoc_words(out, p->values, "`");
		buf_adds(out, " URL, or `sendmail`");
		break;
	case CONFIG_SOCKET:
		buf_adds(out, "`unix:/path`, `inet:port@host`, "
			      "`inet6:port@host`");
		break;
	case CONFIG_PATH:
		buf_adds(out, "absolute");
		break;
	default:
		buf_addf(out, "at most %lld bytes", (long long)p->max);
		break;
	}
}

/*
 * The default of p, as documented where `how` (documented_in()) puts it:
 * "`[forge] timeout`" in a project section, "required", the unset
 * wording, or "`30s`"; the Markdown table and the manual page word the
 * default differently, so `prefix` goes before the other two.
 */
static void doc_default(struct buf *out, const struct config_param *p, int how,
			const char *prefix, const char *unset)
{
	if (how == 2 && !is_project_only(p))
		buf_addf(out, "%s`[%s] %s`", prefix, p->section, p->key);
	else if (p->flags & CONFIG_REQUIRED)
		buf_adds(out, "required");
	else if (!p->def[0])
		buf_adds(out, unset);
	else
		buf_addf(out, "%s`%s`", prefix, p->def);
}

static int doc_row(struct buf *out, const struct config_param *p, int how)
{
	buf_addf(out, "| `%s` | %s | ", p->key, config_type_name(p->type));
	doc_default(out, p, how, "", "unset");
	buf_adds(out, " | ");
	doc_bounds(out, p);
	return buf_addf(out, " | %s |\n", p->desc);
}

/*
 * Write each section's heading (head()) and each of its parameters
 * (param()), in the table's order.  A full buffer shows as a failed last
 * append.
 */
static int doc_sections(struct buf *out,
			void (*head)(struct buf *out, const char *name,
				     const char *desc, int first),
			int (*param)(struct buf *out,
				     const struct config_param *p, int how))
{
	const char *name, *desc;
	size_t s, i;
	int how;

	for (s = 0; (name = config_section(s, &desc)); s++) {
		head(out, name, desc, !s);
		for (i = 0; i < CFG__COUNT; i++) {
			const struct config_param *p =
				config_param((enum config_id)i);

			how = documented_in(p, name);
			if (how && param(out, p, how))
				return err_set(PB_ELIMIT,
					       "documentation too long");
		}
	}
	if (buf_addch(out, '\0'))
		return err_set(PB_ELIMIT, "documentation too long");
	buf_truncate(out, out->len - 1);
	return 0;
}

static void md_head(struct buf *out, const char *name, const char *desc,
		    int first)
{
	if (!first)
		buf_addch(out, '\n');
	if (!strcmp(name, "project"))
		buf_adds(out, "### [project \"group/name\"]\n\n");
	else
		buf_addf(out, "### [%s]\n\n", name);
	buf_addf(out, "%s\n\n", desc);
	buf_adds(out, "| parameter | type | default | bounds | "
		      "description |\n"
		      "| --- | --- | --- | --- | --- |\n");
}

int configdoc_markdown(struct buf *out)
{
	return doc_sections(out, md_head, doc_row);
}

/* (configdoc.h) */
void configdoc_man_text(struct buf *out, const char *s)
{
	int bold = 0;

	for (; *s; s++) {
		if (*s == '\\')
			buf_adds(out, "\\e");
		else if (*s == '-')
			buf_adds(out, "\\-");
		else if (*s == '`')
			buf_adds(out, (bold = !bold) ? "\\fB" : "\\fR");
		else
			buf_addch(out, *s);
	}
	if (bold)
		buf_adds(out, "\\fR");
}

/* One parameter: ".TP", then "key (type, default; bounds)" and the
 * description, every line starting with \& so a value cannot become a
 * request. */
static int man_param(struct buf *out, const struct config_param *p, int how)
{
	struct buf cell = BUF_INIT(4096);
	int rc;

	buf_adds(out, ".TP\n\\&\\fB");
	configdoc_man_text(out, p->key);
	buf_addf(out, "\\fR (%s; ", config_type_name(p->type));
	doc_default(&cell, p, how, "default ", "unset by default");
	buf_adds(&cell, "; ");
	doc_bounds(&cell, p);
	rc = buf_error(&cell);
	if (!rc) {
		configdoc_man_text(out, cell.data);
		buf_adds(out, ")\n\\&");
		configdoc_man_text(out, p->desc);
		rc = buf_addch(out, '\n');
	}
	buf_release(&cell);
	return rc;
}

static void man_head(struct buf *out, const char *name, const char *desc,
		     int first)
{
	(void)first;
	if (!strcmp(name, "project"))
		buf_adds(out, ".SS \"[project \\(dqgroup/name\\(dq]\"\n");
	else
		buf_addf(out, ".SS \"[%s]\"\n", name);
	buf_adds(out, "\\&");
	configdoc_man_text(out, desc);
	buf_addch(out, '\n');
}

int configdoc_man(struct buf *out)
{
	return doc_sections(out, man_head, man_param);
}
