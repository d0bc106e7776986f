#include "cmd/cmd_replay.h"
#include "cmd/env.h"

#include "core/config.h"
#include "core/secret.h"
#include "forge/forge.h"
#include "inbound/inbound.h"
#include "outbound/detect.h"
#include "outbound/noticemail.h"
#include "mail/classify.h"
#include "mail/mail.h"
#include "state/spool.h"
#include "state/store.h"
#include "state/storeconf.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/scan.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <time.h>

static void usage_error(const char *what, const char *arg)
{
	fprintf(stderr,
		"patchbridge replay: %s%s\nusage: patchbridge replay %s\n",
		what, arg, cmd_replay_synopsis);
}

/* Each header field of raw to classify_header(), unfolded. */
static void feed_headers(struct classify_input *in, const char *raw, size_t len)
{
	struct buf name = BUF_INIT(1024), value = BUF_INIT(PB_HEADER_VALUE_MAX);
	const char *line, *colon;
	size_t ll, fields = 0;
	struct scan s;
	int have = 0;

	scan_init(&s, raw, len);
	while (scan_line(&s, &line, &ll)) {
		if (ll && (line[0] == ' ' || line[0] == '\t')) {
			if (have && buf_add(&value, line, ll))
				have = 0; /* over the cap: drop it */
			continue;
		}
		if (have && fields++ < PB_HEADER_COUNT_MAX)
			classify_header(in, name.data, value.data);
		have = 0;
		if (!ll)
			break; /* the body starts */
		colon = memchr(line, ':', ll);
		if (!colon || colon == line)
			continue;
		/* A name or value over its cap: the field is dropped. */
		have = !buf_set(&name, line, (size_t)(colon - line));
		colon++;
		while (colon < line + ll && (*colon == ' ' || *colon == '\t'))
			colon++;
		have = have &&
		       !buf_set(&value, colon, (size_t)(line + ll - colon));
	}
	if (have && fields < PB_HEADER_COUNT_MAX)
		classify_header(in, name.data, value.data);
	buf_release(&name);
	buf_release(&value);
}

/* The envelope sender the MTA recorded, when the file kept it. */
static void feed_sender(struct classify_input *in, const char *raw, size_t len)
{
	const char *line;
	size_t ll;
	struct scan s;

	scan_init(&s, raw, len);
	while (scan_line(&s, &line, &ll) && ll) {
		if (ll > 12 && !strncasecmp(line, "Return-Path:", 12)) {
			char *v = xstrndup(line + 12, ll - 12);
			char *p = v;

			while (*p == ' ' || *p == '\t')
				p++;
			classify_sender(in, p);
			free(v);
			return;
		}
	}
}

struct replay {
	const struct config *cfg;
	struct store *st;
	struct spool *sp;
	size_t max_message;
	unsigned spooled, skipped;
};

/* Classify and spool one file; returns an exit status. */
static int replay_file(struct replay *rp, const char *path)
{
	struct buf raw = BUF_INIT(rp->max_message);
	struct classify_input in;
	struct classify_result res;
	struct threadmap tm;
	struct classify_opts opts;
	struct spool_meta meta;
	struct log_ctx_saved saved;
	char name[SPOOL_NAME_MAX + 1];
	int rc, ex = EX_OK;

	/* The file, then its Message-ID, as the milter's queue id. */
	log_ctx_push(&saved, path);
	classify_input_init(&in);
	classify_result_init(&res);
	rc = file_read(&raw, path);
	if (rc) {
		fprintf(stderr, "patchbridge replay: %s: %s\n", path,
			rc == PB_ELIMIT ? "larger than [milter] "
					  "max_message_size" :
					  err_msg());
		ex = rc == PB_ELIMIT ? EX_DATAERR : EX_NOINPUT;
		goto out;
	}
	feed_headers(&in, raw.data, raw.len);
	feed_sender(&in, raw.data, raw.len);
	if (in.message_id && *in.message_id)
		log_ctx_set(in.message_id);
	opts.domain = config_str(rp->cfg, CFG_BRIDGE_DOMAIN);
	opts.address = config_str(rp->cfg, CFG_BRIDGE_ADDRESS);
	opts.diffs = NULL;
	/* a series posted to the list: spooled for the daemon to collect,
	 * as the milter does */
	opts.submissions = config_takes_submissions(rp->cfg);
	classify_early(&res, &in, &opts);
	if (res.verdict == CLASSIFY_CANDIDATE) {
		if (rp->st)
			store_threadmap(&tm, rp->st);
		classify_eom(&res, &in, raw.data, raw.len, rp->st ? &tm : NULL,
			     &opts);
	}
	if (res.verdict != CLASSIFY_BRIDGE && res.verdict != CLASSIFY_SUBMIT) {
		printf("%s: not bridged (%s: %s)\n", path,
		       res.verdict == CLASSIFY_LOOP ? "the bridge's own mail" :
						      "not a reply to a "
						      "bridged series",
		       res.reason ? res.reason : "");
		rp->skipped++;
		goto out;
	}
	memset(&meta, 0, sizeof(meta));
	meta.message_id = in.message_id;
	meta.sender = in.sender;
	meta.kind = res.verdict == CLASSIFY_SUBMIT ? "submission" : "reply";
	meta.project = res.project;
	meta.iid = res.iid;
	meta.revision = res.revision > 0 ? res.revision : 0;
	meta.patch = res.patch > 0 ? res.patch : 0;
	rc = spool_put(name, sizeof(name), rp->sp, &meta, raw.data, raw.len);
	if (rc) {
		fprintf(stderr, "patchbridge replay: %s: cannot spool: %s\n",
			path, err_msg());
		ex = EX_TEMPFAIL;
		goto out;
	}
	rp->spooled++;
	printf("%s: spooled as %s (%s!%lld v%d patch %d, by %s)\n", path, name,
	       res.project, (long long)res.iid, res.revision, res.patch,
	       res.reason);
out:
	classify_result_release(&res);
	classify_input_release(&in);
	buf_release(&raw);
	log_ctx_pop(&saved);
	return ex;
}

/* Drain the spool and apply what is due; returns an exit status. */
static int apply_now(struct replay *rp, int retry_now)
{
	struct buf token = BUF_INIT(SECRET_MAX + 1);
	struct forge *forge = NULL;
	struct inbound *ib = NULL;
	struct inbound_opts o;
	struct inbound_stats s;
	size_t i;
	int rc, ex = EX_OK;

	rc = env_forge_open(&forge, &token, rp->cfg, NULL);
	if (rc) {
		fprintf(stderr, "patchbridge replay: %s\n", err_msg());
		ex = env_exit_code(rc);
		goto out;
	}
	/* Renamed projects are written to by id, as the daemon does. */
	for (i = 0; i < config_project_count(rp->cfg); i++)
		detect_pin_stored(
			rp->st, forge,
			config_project_name(config_project_at(rp->cfg, i)));
	memset(&o, 0, sizeof(o));
	o.cfg = rp->cfg;
	o.store = rp->st;
	o.forge = forge;
	o.retry_now = retry_now;
	/* notices are queued; the daemon mails them */
	o.render_notice = noticemail_render;
	o.render_arg = (void *)rp->cfg;
	rc = inbound_new(&ib, &o);
	if (rc == PB_ETEMP) {
		printf("%s; it applies the spooled mail\n", err_msg());
		goto out;
	}
	if (!rc)
		rc = inbound_run_once(ib, (int64_t)time(NULL));
	if (ib) {
		inbound_get_stats(&s, ib);
		printf("applied %lu, ignored %lu, waiting for a retry %lu, "
		       "dead %lu; duplicates %lu, unreadable records %lu\n",
		       s.applied, s.ignored, s.retried, s.dead, s.duplicates,
		       s.corrupt);
	}
	if (rc) {
		fprintf(stderr, "patchbridge replay: %s\n", err_msg());
		ex = rc == PB_ETEMP ? EX_TEMPFAIL : EX_SOFTWARE;
	}
out:
	inbound_free(ib);
	forge_free(forge);
	secret_wipe(&token);
	return ex;
}

int cmd_replay(const char *config_path, int argc, char **argv)
{
	struct config *cfg = NULL;
	struct replay rp;
	int i, rc, ex = EX_OK, apply = 0, retry = 0, files = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--apply-now"))
			apply = 1;
		else if (!strcmp(argv[i], "--retry-now"))
			retry = 1;
		else if (!strcmp(argv[i], "--"))
			break;
		else if (argv[i][0] == '-' && argv[i][1]) {
			usage_error("unknown option: ", argv[i]);
			return EX_USAGE;
		} else
			files++;
	}
	if (retry && !apply) {
		usage_error("--retry-now needs --apply-now", "");
		return EX_USAGE;
	}
	if (!files && !apply && i == argc) {
		usage_error("no mail given", "");
		return EX_USAGE;
	}
	ex = env_load_config(&cfg, config_path, 0);
	if (ex)
		return ex;
	memset(&rp, 0, sizeof(rp));
	rp.cfg = cfg;
	rp.max_message = config_size(cfg, CFG_MILTER_MAX_MESSAGE_SIZE);
	if (mail_init()) {
		fprintf(stderr, "patchbridge replay: %s\n", err_msg());
		config_free(cfg);
		return EX_SOFTWARE;
	}
	rc = storeconf_open(&rp.st, cfg, STORE_RW);
	if (!rc)
		rc = spool_open(&rp.sp, config_str(cfg, CFG_SPOOL_DIR),
				SPOOL_WRITER);
	if (!rc)
		rc = spool_set_limits(
			rp.sp, (size_t)config_int(cfg, CFG_SPOOL_MAX_RECORDS),
			rp.max_message);
	if (rc) {
		fprintf(stderr, "patchbridge replay: %s\n", err_msg());
		ex = env_exit_code(rc);
		goto out;
	}
	for (i = 1; i < argc; i++) {
		int fex;

		if (!strcmp(argv[i], "--")) {
			for (i++; i < argc; i++)
				if ((fex = replay_file(&rp, argv[i])) && !ex)
					ex = fex;
			break;
		}
		if (argv[i][0] == '-' && argv[i][1])
			continue;
		fex = replay_file(&rp, argv[i]);
		if (fex && !ex)
			ex = fex;
	}
	if (apply) {
		int aex = apply_now(&rp, retry);

		if (aex && !ex)
			ex = aex;
	}
out:
	spool_free(rp.sp);
	store_free(rp.st);
	mail_shutdown();
	config_free(cfg);
	return ex;
}
