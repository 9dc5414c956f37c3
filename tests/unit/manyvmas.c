/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A process with N separate VMAs (alternating protections over one mapping, so the
 * kernel cannot merge neighbours), each with its one page touched. Prints its pid and
 * waits for stdin to close.
 *   manyvmas N */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
        long n = argc > 1 ? strtol(argv[1], NULL, 10) : 0, page = sysconf(_SC_PAGESIZE);
        char *m, buf[16];

        if (n < 1 || n > 60000) {
                fprintf(stderr, "usage: manyvmas N (1..60000)\n");
                return 2;
        }
        m = mmap(NULL, (size_t) (n * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        for (long i = 0; i < n; i++) {
                m[i * page] = 1;
                if (i % 2 && mprotect(m + i * page, (size_t) page, PROT_READ) < 0) {
                        perror("mprotect");
                        return 1;
                }
        }
        printf("%d\n", getpid());
        fflush(stdout);
        while (read(0, buf, sizeof(buf)) > 0)
                ;
        return 0;
}
