/* The includes cmocka needs, in the order it needs them. */
#ifndef PB_TEST_CMOCKA_ALL_H
#define PB_TEST_CMOCKA_ALL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#endif
