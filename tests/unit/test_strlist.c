#include "cmocka_all.h"
#include "util/strlist.h"

static void test_push_find_remove(void **state)
{
	struct strlist sl = STRLIST_INIT;

	strlist_push(&sl, "b@example.org");
	strlist_pushf(&sl, "%s@%s", "a", "example.org");
	strlist_pushn(&sl, "cxyz", 1);
	assert_int_equal(sl.nr, 3);
	assert_string_equal(sl.items[2], "c");
	assert_int_equal(strlist_find(&sl, "a@example.org"), 1);
	assert_int_equal(strlist_find(&sl, "A@example.org"), -1);
	assert_int_equal(strlist_find_icase(&sl, "A@EXAMPLE.org"), 1);
	strlist_remove(&sl, 0);
	assert_string_equal(sl.items[0], "a@example.org");
	strlist_sort(&sl);
	assert_string_equal(sl.items[0], "a@example.org");
	strlist_release(&sl);
	assert_int_equal(sl.nr, 0);
}

static void test_unique_icase(void **state)
{
	struct strlist sl = STRLIST_INIT;

	assert_int_equal(strlist_push_unique_icase(&sl, "Maint@x.org"), 1);
	assert_int_equal(strlist_push_unique_icase(&sl, "maint@X.ORG"), 0);
	assert_int_equal(strlist_push_unique_icase(&sl, "other@x.org"), 1);
	assert_int_equal(sl.nr, 2);
	strlist_release(&sl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_find_remove),
		cmocka_unit_test(test_unique_icase),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
