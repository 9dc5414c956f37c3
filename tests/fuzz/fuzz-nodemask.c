/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The list syntax and the checked number parsers on arbitrary bytes:
 * format(parse(x)) parses to the same set; weights agree with iteration; the
 * numbers print back to the same digits; failures leave the output alone. */
#include <inttypes.h>
#include <string.h>
#include "fuzz.h"
#include "nodemask.h"
#include "parse.h"

static void nodes(const char *s, size_t size) {
        nb_nodemask m, again, untouched;
        static char buf[NODEMASK_STRMAX];
        size_t n;
        unsigned w = 0;

        memset(&m, 0x5a, sizeof(m));
        untouched = m;
        if (nodemask_parse_n(s, size, &m) < 0) {
                FUZZ_ASSERT(memcmp(&m, &untouched, sizeof(m)) == 0);
                return;
        }
        n = nodemask_format(&m, buf, sizeof(buf));
        FUZZ_ASSERT(n < sizeof(buf) && strlen(buf) == n);
        FUZZ_ASSERT(nodemask_parse_n(buf, n, &again) == 0);
        FUZZ_ASSERT(nodemask_equal(&m, &again));
        NODEMASK_FOREACH(i, &m) {
                FUZZ_ASSERT(i < NB_NODES_MAX && nodemask_test(&m, (unsigned) i));
                w++;
        }
        FUZZ_ASSERT(w == nodemask_weight(&m));
        /* Formatting into a small buffer still says the full length. */
        {
                char small[8];
                FUZZ_ASSERT(nodemask_format(&m, small, sizeof(small)) == n);
                FUZZ_ASSERT(strlen(small) < sizeof(small));
        }
}

static void cpus(const char *s, size_t size) {
        static nb_cpumask m, again;
        static char buf[CPUMASK_STRMAX];
        size_t n;

        if (idlist_parse_n(s, size, m.w, NB_CPUS_MAX) < 0)
                return;
        n = cpumask_format(&m, buf, sizeof(buf));
        FUZZ_ASSERT(n < sizeof(buf));
        FUZZ_ASSERT(cpumask_parse(buf, &again) == 0);
        FUZZ_ASSERT(memcmp(&m, &again, sizeof(m)) == 0);
}

static void numbers(const char *s, size_t size) {
        uint64_t v = 12345, u = 12345;
        char buf[32];

        if (parse_u64_n(s, size, 0, UINT64_MAX, &v) == 0) {
                size_t z = 0;
                /* The same digits, less leading zeros. */
                while (z + 1 < size && s[z] == '0')
                        z++;
                snprintf(buf, sizeof(buf), "%" PRIu64, v);
                FUZZ_ASSERT(strlen(buf) == size - z && memcmp(buf, s + z, size - z) == 0);
        } else
                FUZZ_ASSERT(v == 12345);
        if (parse_hex_u64_n(s, size, &u) == 0) {
                FUZZ_ASSERT(size >= 1 && size <= 16);
                if (size < 16)
                        FUZZ_ASSERT(u >> (4 * size) == 0);
        } else
                FUZZ_ASSERT(u == 12345);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *s = (const char *) data;

        nodes(s, size);
        cpus(s, size);
        numbers(s, size);
        return 0;
}
