#include "cmd/cmd_attest.h"
#include "cmd/env.h"
#include "core/config.h"
#include "core/secret.h"
#include "mail/patatt.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

enum { OPT_GENERATE = 256, OPT_IDENTITY, OPT_SELECTOR, OPT_PUBLIC };

static const struct option long_opts[] = {
	{ "generate", no_argument, NULL, OPT_GENERATE },
	{ "identity", required_argument, NULL, OPT_IDENTITY },
	{ "selector", required_argument, NULL, OPT_SELECTOR },
	{ "public", no_argument, NULL, OPT_PUBLIC },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int usage_error(const char *what)
{
	fprintf(stderr,
		"patchbridge attest-key: %s\n"
		"usage: patchbridge attest-key %s\n",
		what, cmd_attest_key_synopsis);
	return EX_USAGE;
}

/* A new key file: never over an existing one, never through a link. */
static int write_new_key(const char *path, const struct patatt_key *key)
{
	struct buf text = BUF_INIT(PATATT_KEY_B64_SIZE + 1);
	int fd, rc;

	rc = patatt_key_private_b64(&text, key);
	if (rc)
		goto out;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		rc = err_set_errno(errno == EEXIST ? PB_EEXISTS :
						     err_from_errno(errno),
				   "%s", path);
		goto out;
	}
	rc = fd_write_all(fd, text.data, text.len);
	if (!rc && fsync(fd) < 0)
		rc = err_set_errno(PB_ETEMP, "fsync %s", path);
	if (close(fd) < 0 && !rc)
		rc = err_set_errno(PB_ETEMP, "close %s", path);
	if (rc)
		unlink(path);
out:
	secret_wipe(&text);
	return rc;
}

static int exit_code(int rc)
{
	return rc == PB_EEXISTS ? EX_CANTCREAT : env_exit_code(rc);
}

int cmd_attest_key(const struct config *cfg, int argc, char **argv)
{
	const char *path = NULL, *identity = NULL, *selector = NULL;
	int generate = 0, public_only = 0, c, rc;
	struct patatt_key *key = NULL;
	struct buf text = BUF_INIT(SECRET_MAX + 1);
	struct buf rel = BUF_INIT(PB_HEADER_VALUE_MAX);
	char pk[PATATT_KEY_B64_SIZE];

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_GENERATE:
			generate = 1;
			break;
		case OPT_IDENTITY:
			identity = optarg;
			break;
		case OPT_SELECTOR:
			selector = optarg;
			break;
		case OPT_PUBLIC:
			public_only = 1;
			break;
		case 'h':
			printf("usage: patchbridge attest-key %s\n\n%s\n\n%s",
			       cmd_attest_key_synopsis, cmd_attest_key_summary,
			       cmd_attest_key_help);
			return EX_OK;
		default:
			return usage_error("unknown option");
		}
	}
	if (optind + 1 < argc)
		return usage_error("one FILE at most");
	path = optind < argc ? argv[optind] : NULL;
	if (!path && cfg && *config_str(cfg, CFG_OUTBOUND_ATTEST_KEY_FILE))
		path = config_str(cfg, CFG_OUTBOUND_ATTEST_KEY_FILE);
	if (!path)
		return usage_error(
			"no FILE, and no [outbound] attest_key_file");
	if (!identity && cfg && *config_str(cfg, CFG_BRIDGE_ADDRESS))
		identity = config_str(cfg, CFG_BRIDGE_ADDRESS);
	if (!selector && cfg && *config_str(cfg, CFG_OUTBOUND_ATTEST_SELECTOR))
		selector = config_str(cfg, CFG_OUTBOUND_ATTEST_SELECTOR);
	if (!selector)
		selector = PATATT_SELECTOR_DEFAULT;

	if (generate) {
		rc = patatt_key_generate(&key);
		if (!rc)
			rc = write_new_key(path, key);
	} else {
		rc = secret_read(&text, path, 0);
		if (!rc)
			rc = patatt_key_new(&key, text.data, text.len);
		if (rc)
			err_prefix(rc, "%s", path);
	}
	if (rc)
		goto out;
	patatt_key_public_b64(pk, key);
	if (public_only) {
		printf("%s\n", pk);
		goto out;
	}
	if (generate)
		printf("wrote a new ed25519 key to %s (keep it the daemon's "
		       "user's alone)\n\n",
		       path);
	printf("public key:  %s\n", pk);
	if (!identity) {
		printf("\n(no identity: give --identity or [bridge] address "
		       "for the keyring path)\n");
		goto out;
	}
	rc = patatt_keyring_path(&rel, identity, selector);
	if (rc) {
		err_prefix(rc, "identity %s", identity);
		goto out;
	}
	printf("identity:    %s\n"
	       "selector:    %s\n"
	       "keyring:     %s\n"
	       "\n"
	       "Publish it in the project's patatt keyring (a git repository\n"
	       "or its .keys directory), then turn [outbound] attest on:\n"
	       "\n"
	       "    mkdir -p .keys/%.*s\n"
	       "    echo %s > .keys/%s\n"
	       "    git add .keys/%s && git commit -m 'keys: %s'\n"
	       "\n"
	       "b4 and patatt look in the .keys directory of the repository\n"
	       "they run in (patatt's default key source ref:::.keys); for a\n"
	       "keyring repository of its own, readers add it:\n"
	       "\n"
	       "    git config --add patatt.keyringsrc ref:KEYRING.git:refs/heads/main:\n",
	       identity, selector, rel.data,
	       (int)(strrchr(rel.data, '/') - rel.data), rel.data, pk, rel.data,
	       rel.data, identity);
	if (strcmp(selector, PATATT_SELECTOR_DEFAULT) &&
	    !(cfg && *config_str(cfg, CFG_OUTBOUND_ATTEST_SELECTOR)))
		printf("\nand sign under this selector: [outbound] "
		       "attest_selector = %s\n",
		       selector);
out:
	if (rc)
		fprintf(stderr, "patchbridge attest-key: %s\n", err_msg());
	secret_wipe(&text);
	buf_release(&rel);
	patatt_key_free(key);
	return exit_code(rc);
}
