/*
 * CAPTURE_STDERR(buf, call): run call with stderr pointed at a temporary
 * file, then put what it wrote into the char array buf (cut to fit,
 * terminated).  For the log facility's tests.
 */
#ifndef PB_TEST_CAPTURE_H
#define PB_TEST_CAPTURE_H

#include <stdio.h>
#include <unistd.h>

#define CAPTURE_STDERR(buf, call)                          \
	do {                                               \
		FILE *f_ = tmpfile();                      \
		int saved_ = dup(2);                       \
		size_t n_;                                 \
                                                           \
		assert_non_null(f_);                       \
		fflush(stderr);                            \
		dup2(fileno(f_), 2);                       \
		call;                                      \
		fflush(stderr);                            \
		dup2(saved_, 2);                           \
		close(saved_);                             \
		rewind(f_);                                \
		n_ = fread((buf), 1, sizeof(buf) - 1, f_); \
		(buf)[n_] = '\0';                          \
		fclose(f_);                                \
	} while (0)

#endif
