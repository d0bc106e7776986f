#include "cmd/cmd_parse.h"
#include "mail/diff.h"
#include "mail/mail.h"
#include "mail/review.h"
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
	"Offline there is no thread map and no trusted authserv-id: target\n"
	"is null and auth.verified is false.\n";

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr,
		"patchbridge parse: %s%s\nusage: patchbridge parse %s\n", what,
		arg, cmd_parse_synopsis);
	return EX_USAGE;
}

static int read_mail(struct buf *out, const char *path)
{
	int rc = file_read(out, path);

	if (!rc)
		return 0;
	fprintf(stderr, "patchbridge parse: %s: %s\n", path, err_msg());
	return rc == PB_ELIMIT ? EX_DATAERR : EX_NOINPUT;
}

int cmd_parse(int argc, char **argv)
{
	const char *file = NULL, *patch = NULL;
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
	rc = review_parse(&r, raw.data, raw.len, parent, NULL);
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
	return ex;
}

int cmd_parse_run(const struct command *cmd, int argc, char **argv)
{
	(void)cmd;
	return cmd_parse(argc, argv);
}
