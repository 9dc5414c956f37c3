/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include "nodemask.h"
#include "parse.h"
#include "test.h"

static void roundtrip(const char *in, const char *out) {
        nb_nodemask m;
        char buf[NODEMASK_STRMAX];
        int r = nodemask_parse(in, &m);
        CHECK_INT(r, 0);
        if (r == 0) {
                nodemask_format(&m, buf, sizeof(buf));
                CHECK_STR(buf, out);
        }
}

static void bad(const char *in, int err) {
        nb_nodemask m = {};
        nodemask_set(&m, 5);
        CHECK_INT(nodemask_parse(in, &m), err);
}

TEST(nodemask_parse_and_format_round_trip) {
        roundtrip("", "");
        roundtrip("\n", "");
        roundtrip("0", "0");
        roundtrip("0-3,8", "0-3,8");
        roundtrip("8,0-3", "0-3,8");
        roundtrip("1,2,3,5\n", "1-3,5");
        roundtrip("3-3", "3");
        roundtrip("1023", "1023");
        roundtrip("0-1023", "0-1023");
        roundtrip(" 0-1 ", "0-1");
}

TEST(nodemask_parse_rejects_malformed) {
        bad("x", -EINVAL);
        bad("1,", -EINVAL);
        bad(",1", -EINVAL);
        bad("1,,2", -EINVAL);
        bad("3-1", -EINVAL);
        bad("1-", -EINVAL);
        bad("-1", -EINVAL);
        bad("1-2-3", -EINVAL);
        bad("1 2", -EINVAL);
        bad("+1", -EINVAL);
        bad("0x1", -EINVAL);
}

TEST(nodemask_parse_rejects_out_of_range) {
        bad("1024", -ERANGE);
        bad("0-1024", -ERANGE);
        bad("99999999999999999999999", -ERANGE);
        bad("18446744073709551616", -ERANGE);
}

TEST(nodemask_operations) {
        nb_nodemask m, a, b;
        int seen = 0;

        CHECK_INT(nodemask_parse("0-3", &a), 0);
        CHECK_INT(nodemask_parse("2-5", &b), 0);
        nodemask_and(&m, &a, &b);
        CHECK_INT(nodemask_weight(&m), 2);
        CHECK(nodemask_test(&m, 2) && nodemask_test(&m, 3) && !nodemask_test(&m, 1));
        CHECK(nodemask_subset(&m, &a));
        CHECK(!nodemask_subset(&a, &b));
        CHECK_INT(nodemask_next(&m, 0), 2);
        CHECK_INT(nodemask_next(&m, 4), -1);
        NODEMASK_FOREACH(n, &a) seen += n;
        CHECK_INT(seen, 0 + 1 + 2 + 3);
}

/* Truncated output still says how long it needed. */
TEST(nodemask_format_truncated_says_the_length) {
        nb_nodemask a;
        char small[4];

        CHECK_INT(nodemask_parse("0-3", &a), 0);
        CHECK_INT(nodemask_format(&a, small, sizeof(small)), 3);
        CHECK_INT(nodemask_parse("0-3,8,10", &a), 0);
        CHECK_INT(nodemask_format(&a, small, sizeof(small)), 8);
        CHECK(strlen(small) < sizeof(small));
}

/* CPU masks go further. */
TEST(cpumask_up_to_8191) {
        nb_cpumask c;
        char buf[64];

        CHECK_INT(cpumask_parse("0-1,8191", &c), 0);
        CHECK_INT(cpumask_weight(&c), 3);
        cpumask_format(&c, buf, sizeof(buf));
        CHECK_STR(buf, "0-1,8191");
        CHECK_INT(cpumask_parse("8192", &c), -ERANGE);
}

TEST(parse_numbers_checked) {
        uint64_t v;
        int i;

        CHECK_INT(parse_u64("42", 0, 100, &v), 0);
        CHECK_INT(v, 42);
        CHECK_INT(parse_u64("101", 0, 100, &v), -ERANGE);
        CHECK_INT(parse_u64("", 0, 100, &v), -EINVAL);
        CHECK_INT(parse_u64("4 2", 0, 100, &v), -EINVAL);
        CHECK_INT(parse_u64("-1", 0, 100, &v), -EINVAL);
        CHECK_INT(parse_int("-5", -10, 10, &i), 0);
        CHECK_INT(i, -5);
        CHECK_INT(parse_int("-11", -10, 10, &i), -ERANGE);
        CHECK_INT(parse_int("2147483648", INT32_MIN, INT32_MAX, &i), -ERANGE);
}

TEST(parse_bool_size_hex) {
        uint64_t v;
        bool bo;

        CHECK_INT(parse_bool("yes", &bo), 0);
        CHECK(bo);
        CHECK_INT(parse_bool("yess", &bo), -EINVAL);
        CHECK_INT(parse_size("512M", 0, UINT64_MAX, &v), 0);
        CHECK_INT(v, 512ULL << 20);
        CHECK_INT(parse_size("M", 0, UINT64_MAX, &v), -EINVAL);
        CHECK_INT(parse_size("20000000000T", 0, UINT64_MAX, &v), -ERANGE);
        CHECK_INT(parse_hex_u64_n("7fffdead", 8, &v), 0);
        CHECK_INT(v, 0x7fffdead);
        CHECK_INT(parse_hex_u64_n("7g", 2, &v), -EINVAL);
}

DEFINE_TEST_MAIN()
