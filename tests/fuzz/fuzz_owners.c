/*
 * libFuzzer target for bridge/core/owners.c: any bytes as owners.yaml.
 *
 * Loading must never crash, hang or leak, and whatever loads must answer
 * queries with well-formed results: every Cc item is printable apart from
 * UTF-8 names, and has no CR or LF (they go into mail headers).
 *
 * Seeds: the files in tests/data/owners/; dictionary: fuzz_owners.dict.
 *   fuzz_owners -dict=tests/fuzz/fuzz_owners.dict -max_total_time=60 \
 *       corpus/ tests/data/owners/
 */
#include "core/owners.h"
#include "util/strlist.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const paths[] = {
	"net/core/dev.c",
	"drivers/net/wireless/ath/main.c",
	"drivers/net/ethernet/example/exnic/main.c",
	"drivers/net/ethernet/example/exnic/firmware/fw.bin",
	"include/linux/exnic.h",
	"include/net/ieee80211_radiotap.h",
	"Documentation/networking/exnic.rst",
	"mm/kasan/report.c",
	"block/partitions/efi.c",
	"arch/x86/mm/init.c",
	"a",
	"a/b",
	".hidden/x",
};

#define NPATHS (sizeof(paths) / sizeof(paths[0]))

static void check_cc(const struct strlist *cc)
{
	size_t i;

	for (i = 0; i < cc->nr; i++)
		if (strpbrk(cc->items[i], "\r\n") || !cc->items[i][0])
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct owners *o = NULL;
	struct owners_matches m = OWNERS_MATCHES_INIT;
	struct strlist cc = STRLIST_INIT;
	const struct owners_subsystem *s;
	const char *gl;
	size_t i, j;

	if (owners_load_mem(&o, (const char *)data, size, "fuzz.yaml"))
		return 0;
	if (owners_touched(&m, o, paths, NPATHS))
		abort();
	for (i = 1; i < m.nr; i++)
		if (m.items[i - 1]->index >= m.items[i]->index)
			abort();
	for (i = 0; i < owners_count(o); i++) {
		s = owners_get(o, i);
		if (owners_find(o, s->label) != s)
			abort();
		for (j = 0; j < s->maintainers_nr; j++) {
			owners_gluser(&gl, o, s->maintainers[j]->email);
			owners_is_approver(NULL, o, paths, NPATHS,
					   s->maintainers[j]->email);
		}
	}
	if (owners_route(&cc, o, paths, NPATHS, 0))
		abort();
	check_cc(&cc);
	strlist_release(&cc);
	if (owners_route(&cc, o, paths, 1, OWNERS_ROUTE_NO_REVIEWERS))
		abort();
	check_cc(&cc);
	strlist_release(&cc);
	owners_matches_release(&m);
	owners_free(o);
	return 0;
}
