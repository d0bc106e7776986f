/*
 * libFuzzer target for the small pure parsers of inbound mail:
 * mail/trailers.c (a whole text, and every line alone), mail/subject.c
 * and mail/authres.c, all on any bytes.
 *
 * They must never crash, hang, read past the input (ASan sees that: the
 * input is not NUL-terminated) or leak, and what they return must be
 * well-formed: a trailer always has a type and a name, an email only
 * when it holds an '@', and no line ends inside a name or an address.
 *
 *   fuzz_trailers -max_total_time=60 corpus/ SEEDS/
 * Seeds: texts of tests/data/corpus replies (see tests/fuzz/README.md).
 */
#include "mail/authres.h"
#include "mail/subject.h"
#include "mail/trailers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct trailer_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++) {
		const struct trailer *t = &l->v[i];

		if (!t->type || !t->name || !t->raw)
			abort();
		if (strchr(t->name, '\n') || strchr(t->raw, '\n'))
			abort();
		if (t->email &&
		    (!strchr(t->email, '@') || strchr(t->email, '\n') ||
		     strchr(t->email, ' ')))
			abort();
		if (t->scope != TRAILER_SCOPE_PATCH &&
		    t->scope != TRAILER_SCOPE_SERIES)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes: no terminator to lean on */
	char *p = malloc(size ? size : 1);
	struct trailer_list l;
	struct subject s;
	struct authres ar;
	size_t i, start;

	if (!p)
		return 0;
	memcpy(p, data, size);

	trailer_list_init(&l);
	trailers_scan(&l, p, size, 0);
	trailers_scan(&l, p, size, TRAILERS_SERIES);
	trailers_scan(&l, p, size, TRAILERS_OWN);
	check(&l);
	trailer_list_release(&l);

	for (start = 0, i = 0; i <= size; i++) {
		if (i < size && p[i] != '\n')
			continue;
		trailer_list_init(&l);
		trailers_parse_line(&l, p + start, i - start);
		check(&l);
		trailer_list_release(&l);
		start = i + 1;
	}

	subject_parse(&s, p, size);
	if (!s.prefix || !s.title)
		abort();
	if (s.has_tag && (s.version < 0 || s.index < 0 || s.total < 0))
		abort();
	subject_release(&s);

	if (authres_parse(&ar, p, size) == 0 && ar.nr > AUTHRES_METHODS_MAX)
		abort();
	/* the input as a header: every field claiming the id is either
	 * trusted or matched by the header_checks rule */
	{
		struct authres_judge j;
		struct authres_summary sum;

		authres_judge_init(&j, "lists.example.test", 2);
		authres_judge_header(&j, p, size);
		authres_judge_summary(&sum, &j, "example.org");
		if (sum.trusted > 2 || j.nr_forged > j.ar)
			abort();
		authres_judge_release(&j);
		if (authres_parse(&ar, p, size) == 0 &&
		    !strcasecmp(ar.authserv_id, "lists.example.test") &&
		    !authres_mentions(p, size, "lists.example.test"))
			abort();
	}
	free(p);
	return 0;
}
