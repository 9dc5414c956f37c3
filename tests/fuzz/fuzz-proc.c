/* SPDX-License-Identifier: GPL-2.0-or-later */
/* proc_stat_parse and proc_status_parse on arbitrary bytes: comm and Name stay
 * bounded and NUL-terminated, comm is exactly what lies between the first '(' and
 * the last ')' (cut to fit), ids are positive, and failures leave the output
 * alone. */
#include <string.h>
#include "fuzz.h"
#include "proc.h"

static void stat_(const char *s, size_t size) {
        struct proc_stat st, untouched;

        memset(&st, 0xa5, sizeof(st));
        untouched = st;
        if (proc_stat_parse(s, size, &st) < 0) {
                FUZZ_ASSERT(memcmp(&st, &untouched, sizeof(st)) == 0);
                return;
        }
        FUZZ_ASSERT(memchr(st.comm, 0, sizeof(st.comm)) != NULL);
        FUZZ_ASSERT(st.pid > 0);
        FUZZ_ASSERT(st.processor >= 0);
        {
                const char *open = memchr(s, '(', size), *close = NULL;
                size_t len;
                for (const char *p = s + size; p > s; p--)
                        if (p[-1] == ')') {
                                close = p - 1;
                                break;
                        }
                FUZZ_ASSERT(open && close && close > open);
                len = (size_t) (close - open - 1);
                if (len > sizeof(st.comm) - 1)
                        len = sizeof(st.comm) - 1;
                /* comm may hold a NUL from the input: compare the bytes. */
                FUZZ_ASSERT(memcmp(st.comm, open + 1, len) == 0 && st.comm[len] == 0);
        }
}

static void status_(const char *s, size_t size) {
        struct proc_status st, untouched;

        memset(&st, 0xa5, sizeof(st));
        untouched = st;
        if (proc_status_parse(s, size, &st) < 0) {
                FUZZ_ASSERT(memcmp(&st, &untouched, sizeof(st)) == 0);
                return;
        }
        FUZZ_ASSERT(memchr(st.name, 0, sizeof(st.name)) != NULL);
        FUZZ_ASSERT(st.pid > 0 && st.tgid > 0 && st.ppid >= 0);
        if (!st.has_mems_allowed)
                FUZZ_ASSERT(nodemask_empty(&st.mems_allowed));
        if (!st.has_cpus_allowed)
                FUZZ_ASSERT(cpumask_weight(&st.cpus_allowed) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        stat_((const char *) data, size);
        status_((const char *) data, size);
        return 0;
}
