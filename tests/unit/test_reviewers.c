/*
 * reviewers_cover(): per subsystem a change touches, in owners.yaml
 * order, whose review is required (the maintainers of a subsystem with
 * requiredApproval, not restricted) and whose optional (everyone else
 * it names); each person once; nothing when nothing is touched.
 */
#include "cmocka_all.h"
#include "outbound/reviewers.h"
#include "util/buf.h"
#include "util/err.h"

#include <string.h>

static const char OWNERS[] = "users:\n"
			     "  - &mary\n"
			     "    name: Mary Maintainer\n"
			     "    email: mary@kernel.example\n"
			     "  - &rob\n"
			     "    name: Rob Reviewer\n"
			     "    email: rob@review.example\n"
			     "  - &ron\n"
			     "    name: Ron Restricted\n"
			     "    email: ron@example.org\n"
			     "    restricted: true\n"
			     "  - &nameless\n"
			     "    email: dana@docs.example\n"
			     "subsystems:\n"
			     "  - subsystem: Networking\n"
			     "    labels:\n"
			     "      name: net\n"
			     "    requiredApproval: true\n"
			     "    maintainers:\n"
			     "      - *mary\n"
			     "      - *ron\n"
			     "    reviewers:\n"
			     "      - *rob\n"
			     "      - *mary\n"
			     "    paths:\n"
			     "      includes:\n"
			     "        - net/\n"
			     "  - subsystem: Documentation\n"
			     "    labels:\n"
			     "      name: docs\n"
			     "    maintainers:\n"
			     "      - *nameless\n"
			     "    reviewers:\n"
			     "      - *rob\n"
			     "    paths:\n"
			     "      includes:\n"
			     "        - docs/\n"
			     "  - subsystem: Nobody's\n"
			     "    labels:\n"
			     "      name: orphan\n"
			     "    paths:\n"
			     "      includes:\n"
			     "        - orphan/\n";

static struct owners *load(void)
{
	struct owners *o = NULL;

	if (owners_load_mem(&o, OWNERS, strlen(OWNERS), "owners.yaml"))
		fail_msg("owners: %s", err_msg());
	return o;
}

static void per_subsystem(void **state)
{
	struct owners *o = load();
	const char *paths[] = { "docs/net.rst", "net/core.c", "orphan/x",
				"README" };
	struct buf out = BUF_INIT(4096);

	(void)state;
	assert_int_equal(reviewers_cover(&out, o, paths, 4), 0);
	assert_string_equal(out.data,
			    "Reviewers of the subsystems touched:\n"
			    "- net: required Mary Maintainer; optional Ron "
			    "Restricted, Rob Reviewer\n"
			    "- docs: optional dana@docs.example, Rob Reviewer\n"
			    "- orphan: nobody named\n"
			    "\n");
	owners_free(o);
	buf_release(&out);
}

static void nothing_touched(void **state)
{
	struct owners *o = load();
	const char *paths[] = { "README" };
	struct buf out = BUF_INIT(4096);

	(void)state;
	assert_int_equal(reviewers_cover(&out, o, paths, 1), 0);
	assert_int_equal(out.len, 0);
	assert_int_equal(reviewers_cover(&out, NULL, paths, 1), 0);
	assert_int_equal(out.len, 0);
	owners_free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(per_subsystem),
		cmocka_unit_test(nothing_touched),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
