/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An LD_PRELOAD library for tests: sysconf(_SC_PAGESIZE) answers
 * $NUMABALANCED_TEST_PAGE_SIZE, so that a test on a 4 KiB-page machine sees what a
 * program sees on an arm64 kernel with 16 or 64 KiB pages (lib/pagesize.h asks
 * sysconf). Everything else goes to the C library. */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

long sysconf(int name) {
        static long (*real)(int);
        const char *e = getenv("NUMABALANCED_TEST_PAGE_SIZE");

        if (name == _SC_PAGESIZE && e && atol(e) > 0)
                return atol(e);
        if (!real)
                real = (long (*)(int)) dlsym(RTLD_NEXT, "sysconf");
        return real ? real(name) : -1;
}
