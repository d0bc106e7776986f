/*
 * The log facility's foreground lines: the prefix with and without a
 * correlation id, the id made printable and cut, nested scopes
 * (push/pop), the id per thread, the level filter, the time stamp of
 * a line written to a file, and repeated warnings logged once a window.
 * Lines are captured by pointing stderr at a temporary file around each
 * call.
 */
#include "capture.h"
#include "cmocka_all.h"
#include "util/limits.h"
#include "util/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* What one log_msg() call wrote to stderr, without the final newline. */
static char captured[PB_LOGLINE_MAX + PB_LOG_CTX_MAX + 64];

/* ... and without the final newline. */
#define CAPTURE(call)                                   \
	do {                                            \
		size_t len_;                            \
                                                        \
		CAPTURE_STDERR(captured, call);         \
		len_ = strlen(captured);                \
		if (len_ && captured[len_ - 1] == '\n') \
			captured[len_ - 1] = '\0';      \
	} while (0)

/*
 * log_open() with stderr at /dev/null, not a file: lines without a time
 * stamp, however this test's own stderr is redirected (a file, when run
 * as `test_log 2>FILE`, would have them stamped).
 */
static void open_unstamped(void)
{
	int saved = dup(2), null = open("/dev/null", O_WRONLY);

	assert_true(saved >= 0 && null >= 0);
	fflush(stderr);
	dup2(null, 2);
	log_open("pbtest", LOG_SINK_STDERR);
	dup2(saved, 2);
	close(saved);
	close(null);
}

static int setup(void **state)
{
	(void)state;
	open_unstamped();
	log_set_level(LOG_INFO);
	log_ctx_clear();
	return 0;
}

static void test_prefix(void **state)
{
	(void)state;
	CAPTURE(log_info("no id: %d", 1));
	assert_string_equal(captured, "pbtest: info: no id: 1");
	log_ctx_set("4Y3ZQk1XyZ");
	CAPTURE(log_warn("spooled"));
	assert_string_equal(captured, "pbtest: warning: 4Y3ZQk1XyZ: spooled");
	CAPTURE(log_error("x"));
	assert_string_equal(captured, "pbtest: error: 4Y3ZQk1XyZ: x");
	CAPTURE(log_notice("y"));
	assert_string_equal(captured, "pbtest: notice: 4Y3ZQk1XyZ: y");
	log_ctx_clear();
	CAPTURE(log_info("cleared"));
	assert_string_equal(captured, "pbtest: info: cleared");
	log_ctx_set("");
	assert_string_equal(log_ctx_get(), "");
	log_ctx_set(NULL);
	assert_string_equal(log_ctx_get(), "");
}

/* An id from a hostile Message-ID cannot forge or break a line. */
static void test_id_printable_and_cut(void **state)
{
	char big[2 * PB_LOG_CTX_MAX];

	(void)state;
	log_ctx_set("evil@x\nforged: line\x1b[31m");
	CAPTURE(log_info("t"));
	assert_string_equal(captured,
			    "pbtest: info: evil@x?forged: line?[31m: t");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_ctx_set(big);
	assert_int_equal(strlen(log_ctx_get()), PB_LOG_CTX_MAX - 1);
	assert_string_equal(log_ctx_get() + PB_LOG_CTX_MAX - 4, "...");
	log_ctx_clear();
}

/*
 * The log facility itself makes every argument printable, so a caller
 * that logs hostile text raw (a project name decoded from a sender's
 * Message-ID) cannot forge a line: control bytes, DEL, C1 controls,
 * Unicode line separators, bidirectional overrides and broken UTF-8
 * become '?', one per byte; well-formed UTF-8 text stays (Postfix's
 * printable() with smtputf8).
 */
static void test_arguments_printable(void **state)
{
	(void)state;
	log_ctx_set("q1");
	CAPTURE(log_info("reply to %s!%d", "group/evil\ninfo: forged line",
			 12));
	assert_string_equal(captured,
			    "pbtest: info: q1: reply to group/evil?info: "
			    "forged line!12");
	assert_null(strchr(captured, '\n'));
	CAPTURE(log_warn("%s|%s|%s|%s", "cr\rhere", "esc\x1b[2J", "del\x7f",
			 "tab\tbell\a"));
	assert_string_equal(captured, "pbtest: warning: q1: cr?here|esc?[2J|"
				      "del?|tab?bell?");
	CAPTURE(log_error("%s %s %s %s %s", "J\xc3\xb6rg", "nel\xc2\x85",
			  "ls\xe2\x80\xa8", "rlo\xe2\x80\xae", "bad\xff\xc3"));
	assert_string_equal(captured, "pbtest: error: q1: J\xc3\xb6rg nel?? "
				      "ls??? rlo??? bad??");
	/* The caller's own format string too. */
	CAPTURE(log_notice("two\nlines"));
	assert_string_equal(captured, "pbtest: notice: q1: two?lines");
	log_ctx_clear();
}

static void test_push_pop_nest(void **state)
{
	struct log_ctx_saved outer, inner;

	(void)state;
	log_ctx_push(&outer, "group/project!12");
	assert_string_equal(outer.id, "");
	log_ctx_pushf(&inner, "%s!%d v%d", "group/project", 12, 3);
	CAPTURE(log_info("inner"));
	assert_string_equal(captured,
			    "pbtest: info: group/project!12 v3: inner");
	log_ctx_pop(&inner);
	CAPTURE(log_info("outer"));
	assert_string_equal(captured, "pbtest: info: group/project!12: outer");
	/* a callee that clears inside its push/pop */
	log_ctx_push(&inner, NULL);
	assert_string_equal(log_ctx_get(), "");
	log_ctx_pop(&inner);
	assert_string_equal(log_ctx_get(), "group/project!12");
	log_ctx_pop(&outer);
	assert_string_equal(log_ctx_get(), "");
}

static void *other_thread(void *arg)
{
	char *seen = arg;

	strcpy(seen, log_ctx_get());
	log_ctx_set("thread two");
	return NULL;
}

static void test_per_thread(void **state)
{
	char seen[PB_LOG_CTX_MAX] = "unset";
	pthread_t t;

	(void)state;
	log_ctx_set("thread one");
	assert_int_equal(pthread_create(&t, NULL, other_thread, seen), 0);
	pthread_join(t, NULL);
	assert_string_equal(seen, "");
	assert_string_equal(log_ctx_get(), "thread one");
	log_ctx_clear();
}

static void test_level(void **state)
{
	(void)state;
	CAPTURE(log_debug("hidden"));
	assert_string_equal(captured, "");
	log_set_level(LOG_DEBUG);
	CAPTURE(log_debug("shown"));
	assert_string_equal(captured, "pbtest: debug: shown");
	log_set_level(LOG_WARNING);
	CAPTURE(log_notice("hidden"));
	assert_string_equal(captured, "");
	log_set_level(LOG_INFO);
	assert_int_equal(log_level_from_name("err"), LOG_ERR);
	assert_int_equal(log_level_from_name("warning"), LOG_WARNING);
	assert_int_equal(log_level_from_name("loud"), -1);
}

/* stderr a file at log_open(): each line begins with an RFC 3339 time. */
static void test_stamp_in_file(void **state)
{
	char *p;

	(void)state;
	CAPTURE({
		log_open("pbtest", LOG_SINK_STDERR);
		log_info("stamped");
	});
	/* 2026-12-03T10:00:05.123Z pbtest: info: stamped */
	assert_int_equal(strlen(captured),
			 24 + 1 + strlen("pbtest: info: stamped"));
	assert_true(captured[4] == '-' && captured[7] == '-' &&
		    captured[10] == 'T' && captured[13] == ':' &&
		    captured[16] == ':' && captured[19] == '.' &&
		    captured[23] == 'Z' && captured[24] == ' ');
	assert_int_equal(strtol(captured, &p, 10) >= 2024, 1);
	assert_string_equal(captured + 25, "pbtest: info: stamped");

	/* the journal's stream (systemd names it in $JOURNAL_STREAM) has
	 * its own time */
	CAPTURE({
		struct stat st;
		char js[64];

		assert_int_equal(fstat(2, &st), 0);
		snprintf(js, sizeof(js), "%llu:%llu",
			 (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
		setenv("JOURNAL_STREAM", js, 1);
		log_open("pbtest", LOG_SINK_STDERR);
		unsetenv("JOURNAL_STREAM");
		log_info("journal");
	});
	assert_string_equal(captured, "pbtest: info: journal");
	/* a device (a terminal, /dev/null) or a pipe: no stamp */
	open_unstamped();
	CAPTURE(log_info("plain"));
	assert_string_equal(captured, "pbtest: info: plain");
}

static int64_t fake_now;

static int64_t fake_clock(void)
{
	return fake_now;
}

/* The same warning every 5 s for 20 minutes: 4 lines, not 240. */
static void test_repeats(void **state)
{
	static char all[16384];
	int i;

	(void)state;
	fake_now = 1000;
	log_set_repeat_window(300, fake_clock);
	CAPTURE_STDERR(all, {
		for (i = 0; i < 240; i++) {
			log_warn("forge: %s", "connection refused");
			/* other text, or the same text at info: as it
			 * comes */
			if (i == 1)
				log_warn("forge: %s", "timed out");
			if (i < 2)
				log_info("forge: %s", "connection refused");
			fake_now += 5;
		}
	});
	assert_string_equal(all, "pbtest: warning: forge: connection refused\n"
				 "pbtest: info: forge: connection refused\n"
				 "pbtest: warning: forge: timed out\n"
				 "pbtest: info: forge: connection refused\n"
				 "pbtest: warning: forge: connection refused "
				 "(59 more like it)\n"
				 "pbtest: warning: forge: connection refused "
				 "(59 more like it)\n"
				 "pbtest: warning: forge: connection refused "
				 "(59 more like it)\n");
	/* the same text from another place, or with another id, is
	 * another line */
	CAPTURE(log_warn("forge: connection refused"));
	assert_string_equal(captured,
			    "pbtest: warning: forge: connection refused");
	log_ctx_set("group/p!1");
	CAPTURE(log_warn("forge: %s", "connection refused"));
	assert_string_equal(
		captured,
		"pbtest: warning: group/p!1: forge: connection refused");
	log_ctx_clear();
	/* window 0: every repeat */
	log_set_repeat_window(0, NULL);
	CAPTURE_STDERR(all, {
		log_error("%s", "x");
		log_error("%s", "x");
	});
	assert_string_equal(all, "pbtest: error: x\npbtest: error: x\n");
	log_set_repeat_window(PB_LOG_REPEAT_WINDOW, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_prefix, setup),
		cmocka_unit_test_setup(test_id_printable_and_cut, setup),
		cmocka_unit_test_setup(test_arguments_printable, setup),
		cmocka_unit_test_setup(test_push_pop_nest, setup),
		cmocka_unit_test_setup(test_per_thread, setup),
		cmocka_unit_test_setup(test_level, setup),
		cmocka_unit_test_setup(test_stamp_in_file, setup),
		cmocka_unit_test_setup(test_repeats, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
