#include "cmd/cmd_parse.h"
#include "core/config.h"
#include "mail/diff.h"
#include "mail/mail.h"
#include "mail/review.h"
#include "state/spool.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"

#include <stdio.h>
#include <string.h>
#include <sysexits.h>

const char cmd_parse_synopsis[] = "[OPTION] FILE";
const char cmd_parse_summary[] = "one mail as JSON: what the inbound side "
				 "understands";
const char cmd_parse_help[] =
	"Parses FILE (one mail) as the milter would (MIME, charsets, quotes,\n"
	"trailers, NAK, inline comments) and prints one JSON object:\n"
	"message_id, in_reply_to, from, subject, kind, target, trailers,\n"
	"own_trailers, nak, inline, comment, auth.  The format is a stable\n"
	"interface (see DESIGN.md).\n"
	"\n"
	"  --patch PARENT.eml   the patch mail the reply answers: inline\n"
	"                       comments are placed on its diff, so trimmed\n"
	"                       quotes still land on the right line\n"
	"\n"
	"Authentication-Results fields are judged as the milter and the\n"
	"daemon judge them, with the configuration's [milter]\n"
	"trusted_authserv_id and trusted_authres_fields: read FILE as the mail\n"
	"the milter received (its header as Postfix passes it), or give a\n"
	"spool record, which holds exactly that.  The configuration is the\n"
	"one -c or $PATCHBRIDGE_CONFIG names, else the default file when it\n"
	"exists; without one no field is trusted.  Offline there is no\n"
	"thread map: target is null.\n";

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr,
		"patchbridge parse: %s%s\nusage: patchbridge parse %s\n", what,
		arg, cmd_parse_synopsis);
	return EX_USAGE;
}

/* A spool record holds the mail as the milter received it. */
#define SPOOL_MAGIC "PB-Spool: "

static int read_mail(struct buf *out, const char *path)
{
	struct spool_record rec;
	int rc = file_read(out, path);

	if (!rc && out->len >= strlen(SPOOL_MAGIC) &&
	    !memcmp(out->data, SPOOL_MAGIC, strlen(SPOOL_MAGIC))) {
		spool_record_init(&rec);
		rc = spool_parse(&rec, out->data, out->len);
		if (!rc)
			rc = buf_set(out, rec.message.data, rec.message.len);
		spool_record_release(&rec);
		if (rc == PB_EINVAL)
			rc = PB_ELIMIT; /* a data error, as for a mail */
	}
	if (!rc)
		return 0;
	fprintf(stderr, "patchbridge parse: %s: %s\n", path, err_msg());
	return rc == PB_ELIMIT ? EX_DATAERR : EX_NOINPUT;
}

/* The milter's rules for Authentication-Results from the configuration. */
static int load_options(struct review_options *ro, struct config **cfg,
			const char *path)
{
	struct strlist errs = STRLIST_INIT;
	size_t i;
	int rc;

	memset(ro, 0, sizeof(*ro));
	if (!path)
		return EX_OK;
	rc = config_load(cfg, &errs, path);
	strlist_for_each (&errs, i)
		fprintf(stderr, "%s\n", errs.items[i]);
	if (rc && !errs.nr)
		fprintf(stderr, "patchbridge parse: %s: %s\n", path, err_msg());
	strlist_release(&errs);
	if (rc)
		return rc == PB_ENOTFOUND ? EX_NOINPUT : EX_CONFIG;
	ro->trusted_authserv_id =
		config_str(*cfg, CFG_MILTER_TRUSTED_AUTHSERV_ID);
	if (!ro->trusted_authserv_id[0])
		ro->trusted_authserv_id = NULL;
	ro->trusted_fields =
		(size_t)config_int(*cfg, CFG_MILTER_TRUSTED_AUTHRES_FIELDS);
	return EX_OK;
}

int cmd_parse(const char *config_path, int argc, char **argv)
{
	const char *file = NULL, *patch = NULL;
	struct review_options ro;
	struct config *cfg = NULL;
	struct buf raw = BUF_INIT(PB_MAIL_MAX_DEFAULT);
	struct buf praw = BUF_INIT(PB_MAIL_MAX_DEFAULT);
	struct buf json = BUF_INIT(REVIEW_JSON_MAX);
	struct diff *parent = NULL;
	struct review *r = NULL;
	int i, rc, ex = EX_OK;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--patch")) {
			if (i + 1 == argc)
				return usage_error("a file name must follow ",
						   argv[i]);
			patch = argv[++i];
		} else if (!strncmp(argv[i], "--patch=", 8)) {
			patch = argv[i] + 8;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return usage_error("unknown option: ", argv[i]);
		} else if (file) {
			return usage_error("more than one mail: ", argv[i]);
		} else {
			file = argv[i];
		}
	}
	if (!file)
		return usage_error("no mail given", "");
	ex = load_options(&ro, &cfg, config_path);
	if (ex)
		return ex;

	mail_init();
	ex = read_mail(&raw, file);
	if (ex)
		goto out;
	if (patch) {
		ex = read_mail(&praw, patch);
		if (ex)
			goto out;
		rc = review_patch_diff(&parent, praw.data, praw.len);
		if (rc) {
			fprintf(stderr, "patchbridge parse: %s: %s\n", patch,
				err_msg());
			ex = EX_DATAERR;
			goto out;
		}
	}
	rc = review_parse(&r, raw.data, raw.len, parent, &ro);
	if (rc) {
		fprintf(stderr, "patchbridge parse: %s: %s\n", file, err_msg());
		ex = EX_DATAERR;
		goto out;
	}
	rc = review_to_json(&json, r);
	if (rc) {
		fprintf(stderr, "patchbridge parse: %s: %s\n", file, err_msg());
		ex = EX_SOFTWARE;
		goto out;
	}
	if (fwrite(json.data, 1, json.len, stdout) != json.len)
		ex = EX_IOERR;
out:
	review_free(r);
	diff_free(parent);
	buf_release(&raw);
	buf_release(&praw);
	buf_release(&json);
	mail_shutdown();
	config_free(cfg);
	return ex;
}
