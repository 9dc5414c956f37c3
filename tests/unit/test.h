/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A minimal test harness: each check prints file:line and what differed, and the
 * test's exit status is the number of failed checks (0 = pass). */
#pragma once
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int test_failures;

#define CHECK(cond) do {                                                        \
        if (!(cond)) {                                                          \
                fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
                test_failures++;                                                \
        } } while (0)

#define CHECK_INT(a, b) do {                                                    \
        long long _a = (long long) (a), _b = (long long) (b);                   \
        if (_a != _b) {                                                         \
                fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n",     \
                        __FILE__, __LINE__, #a, _a, #b, _b);                    \
                test_failures++;                                                \
        } } while (0)

#define CHECK_STR(a, b) do {                                                    \
        const char *_a = (a), *_b = (b);                                        \
        if (!_a || !_b || strcmp(_a, _b) != 0) {                                \
                fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n",       \
                        __FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); \
                test_failures++;                                                \
        } } while (0)

#define TEST_MAIN_END() do {                                                    \
        if (test_failures)                                                      \
                fprintf(stderr, "%d check(s) failed\n", test_failures);         \
        return test_failures ? 1 : 0;                                           \
        } while (0)

/* Directory of stored fixtures, passed by meson as TEST_DATA_DIR. */
#ifndef TEST_DATA_DIR
#define TEST_DATA_DIR "tests/data"
#endif
