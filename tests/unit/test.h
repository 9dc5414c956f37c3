/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The C unit tests' harness: named test cases, systemd style.
 *
 *   TEST(parse_empty) {
 *           CHECK_INT(parse_u64("", 0, 10, &v), -EINVAL);
 *   }
 *   ...
 *   DEFINE_TEST_MAIN()
 *
 * Each TEST registers itself; DEFINE_TEST_MAIN() runs them in the order they are
 * written (or only those named on the command line), prints "ok NAME (N checks)" or
 * "FAIL NAME" for each, and a last line "N passed, N failed, N skipped (N checks)".
 * Each failed check prints file:line and what differed. The exit status is 0 when
 * every case passed, 1 otherwise (never the count: an exit status is taken modulo
 * 256), and 77 (meson's "skipped") when every case that ran called TEST_SKIP().
 *
 * A file whose cases share a fixture that is costly or may be missing (a temporary
 * tree, a stored topology) sets it up once with
 *
 *   DEFINE_TEST_MAIN_FULL(intro, outro)
 *
 * intro() runs before the first case and returns 0 to go on, or the exit status to
 * end with at once (77: the whole file is skipped); outro() runs after the last.
 * A file whose cases change a shared fixture gives each case a fresh one with
 *
 *   DEFINE_TEST_MAIN_EACH(intro, outro, before, after)
 *
 * before() runs before each case and after() after it, a failed or skipped one too
 * (a check failing in either counts against the case). No case may depend on another
 * having run: TEST_ORDER=reverse in the environment runs them last to first,
 * TEST_ORDER=N (a number) in an order shuffled by N, said on the first line. */
#pragma once
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures;      /* failed checks in the case that runs now */
static bool test_skipped;      /* the case that runs now called TEST_SKIP() */
static unsigned long test_checks;      /* CHECK*s evaluated in the case that runs now */

#define CHECK(cond) do {                                                        \
        test_checks++;                                                          \
        if (!(cond)) {                                                          \
                fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
                test_failures++;                                                \
        } } while (0)

#define CHECK_INT(a, b) do {                                                    \
        long long _a = (long long) (a), _b = (long long) (b);                   \
        test_checks++;                                                          \
        if (_a != _b) {                                                         \
                fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n",     \
                        __FILE__, __LINE__, #a, _a, #b, _b);                    \
                test_failures++;                                                \
        } } while (0)

#define CHECK_STR(a, b) do {                                                    \
        const char *_a = (a), *_b = (b);                                        \
        test_checks++;                                                          \
        if (!_a || !_b || strcmp(_a, _b) != 0) {                                \
                fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n",       \
                        __FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); \
                test_failures++;                                                \
        } } while (0)

/* A check whose failure says more than the condition: printf-style, what differed. */
#define CHECK_MSG(cond, ...) do {                                               \
        test_checks++;                                                          \
        if (!(cond)) {                                                          \
                fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                 \
                fprintf(stderr, __VA_ARGS__);                                   \
                fputc('\n', stderr);                                            \
                test_failures++;                                                \
        } } while (0)

/* A failure found by the test's own logic (a comparison no CHECK* expresses):
 * printf-style, what differed. */
#define TEST_FAIL(...) do {                                                     \
        int _e = errno;         /* for a %m in the message */                   \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                         \
        errno = _e;                                                             \
        fprintf(stderr, __VA_ARGS__);                                           \
        fputc('\n', stderr);                                                    \
        test_failures++;                                                        \
        } while (0)

/* Ends the running case as skipped, saying why. */
#define TEST_SKIP(...) do {                                                     \
        fprintf(stderr, "skip: " __VA_ARGS__);                                  \
        fputc('\n', stderr);                                                    \
        test_skipped = true;                                                    \
        return;                                                                 \
        } while (0)

struct test_case {
        const char *name;
        void (*fn)(void);
};

static void (*test_before_each)(void);  /* DEFINE_TEST_MAIN_EACH's, or NULL */
static void (*test_after_each)(void);

#define TEST_CASES_MAX 512
static struct test_case test_cases[TEST_CASES_MAX];
static unsigned test_n_cases;

static inline void test_register(const char *name, void (*fn)(void)) {
        if (test_n_cases == TEST_CASES_MAX) {
                fprintf(stderr, "test.h: more than %d cases\n", TEST_CASES_MAX);
                abort();
        }
        test_cases[test_n_cases++] = (struct test_case) { name, fn };
}

#define TEST(name)                                                              \
        static void test_##name(void);                                          \
        __attribute__((constructor)) static void test_register_##name(void) {   \
                test_register(#name, test_##name);                              \
        }                                                                       \
        static void test_##name(void)

static inline bool test_selected(int argc, char **argv, const char *name) {
        if (argc < 2)
                return true;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], name) == 0)
                        return true;
        return false;
}

/* order[]: the cases' indexes as TEST_ORDER says (unset: as written). */
static inline void test_order(unsigned *order) {
        const char *o = getenv("TEST_ORDER");
        unsigned long long seed;

        for (unsigned i = 0; i < test_n_cases; i++)
                order[i] = o && strcmp(o, "reverse") == 0 ? test_n_cases - 1 - i : i;
        if (!o || !*o || strcmp(o, "reverse") == 0) {
                if (o && *o)
                        printf("order: reverse\n");
                return;
        }
        seed = strtoull(o, NULL, 10);
        printf("order: shuffled by %llu\n", seed);
        for (unsigned i = test_n_cases; i > 1; i--) {
                unsigned j, t;
                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;  /* an LCG */
                j = (unsigned) ((seed >> 33) % i);
                t = order[i - 1];
                order[i - 1] = order[j];
                order[j] = t;
        }
}

/* Runs the registered cases; see the top of this file. */
static inline int test_run_all(int argc, char **argv) {
        unsigned passed = 0, failed = 0, skipped = 0, order[TEST_CASES_MAX];
        unsigned long checks = 0;

        test_order(order);
        for (unsigned k = 0; k < test_n_cases; k++) {
                unsigned i = order[k];
                if (!test_selected(argc, argv, test_cases[i].name))
                        continue;
                test_failures = 0;
                test_skipped = false;
                test_checks = 0;
                if (test_before_each)
                        test_before_each();
                test_cases[i].fn();
                if (test_after_each)
                        test_after_each();
                checks += test_checks;
                if (test_failures) {
                        printf("FAIL %s (%d check(s) failed)\n", test_cases[i].name, test_failures);
                        failed++;
                } else if (test_skipped) {
                        printf("skip %s\n", test_cases[i].name);
                        skipped++;
                } else {
                        printf("ok %s (%lu checks)\n", test_cases[i].name, test_checks);
                        passed++;
                }
                /* In order with the failures' lines on stderr. */
                fflush(stdout);
        }
        printf("%u passed, %u failed, %u skipped (%lu checks)\n", passed, failed, skipped, checks);
        fflush(stdout);
        if (failed)
                return 1;
        if (passed + failed + skipped == 0) {
                fprintf(stderr, "no test case matched\n");
                return 1;
        }
        return passed == 0 ? 77 : 0;
}

/* intro: 0 to run the cases, else the exit status; see the top of this file. */
static inline int test_main(int argc, char **argv, int (*intro)(void), void (*outro)(void)) {
        int r = intro ? intro() : 0;

        if (r != 0)
                return r;
        r = test_run_all(argc, argv);
        if (outro)
                outro();
        return r;
}

#define DEFINE_TEST_MAIN()                                                      \
        int main(int argc, char **argv) { return test_main(argc, argv, NULL, NULL); }

#define DEFINE_TEST_MAIN_FULL(intro, outro)                                     \
        int main(int argc, char **argv) { return test_main(argc, argv, intro, outro); }

#define DEFINE_TEST_MAIN_EACH(intro, outro, before, after)                      \
        int main(int argc, char **argv) {                                       \
                test_before_each = before;                                      \
                test_after_each = after;                                        \
                return test_main(argc, argv, intro, outro);                     \
        }

/* TEST_ASAN: built with AddressSanitizer (meson -Db_sanitize=address,...), whose
 * allocator a test must not replace: a file that defines malloc() leaves it out then
 * and skips the cases that need it. GCC says so with __SANITIZE_ADDRESS__, clang with
 * __has_feature. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifndef TEST_ASAN
#define TEST_ASAN 0
#endif

/* Directory of stored fixtures, passed by meson as TEST_DATA_DIR. */
#ifndef TEST_DATA_DIR
#define TEST_DATA_DIR "tests/data"
#endif
