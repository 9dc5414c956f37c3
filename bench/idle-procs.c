/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scripts/bench's scale scenario: N idle processes at little memory each, for counting
 * the daemon's cost per watched process up to 10,000 of them in a 2 GiB guest.
 *
 *   idle-procs N READY_FILE
 *
 * Forks N children that pause(); each shares the parent's pages (copy on write, never
 * written), so a child costs the kernel its task, stack and page tables, tens of KiB,
 * where `sleep` started N times cost each its own exec. Writes "<N>\n" to READY_FILE
 * once all are forked, then waits; SIGTERM (or the parent's death, for the children)
 * ends them all. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static void on_term(int sig) {
        /* Every child is in our process group: take them with us. */
        signal(SIGTERM, SIG_IGN);
        kill(0, SIGTERM);
        _exit(0);
}

int main(int argc, char **argv) {
        long n;
        char tmp[4096];
        FILE *f;

        if (argc != 3 || (n = atol(argv[1])) < 0 || n > 100000) {
                fprintf(stderr, "usage: idle-procs N READY_FILE (N at most 100000)\n");
                return 2;
        }
        setpgid(0, 0);
        signal(SIGTERM, on_term);
        for (long i = 0; i < n; i++) {
                pid_t pid = fork();
                if (pid < 0) {
                        perror("idle-procs: fork");
                        kill(0, SIGTERM);
                        return 1;
                }
                if (pid == 0) {
                        signal(SIGTERM, SIG_DFL);
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        for (;;)
                                pause();
                }
        }
        snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
        f = fopen(tmp, "w");
        if (!f || fprintf(f, "%ld\n", n) < 0 || fclose(f) != 0 || rename(tmp, argv[2]) < 0) {
                perror("idle-procs: ready file");
                kill(0, SIGTERM);
                return 1;
        }
        for (;;)
                pause();
}
