/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A misplaced workload that changes under the daemon on a signal, for the scenarios of
 * the check before moving (scenarios/24x-stale-*.py). Like workload.c: SIZE MiB
 * first-touched on node TOUCH, threads reading it on node RUN; "<pid> <start-hex>
 * <length>" in READY_FILE once placed. Then:
 *
 *   SIGUSR1  mbind(2) of the region to node TOUCH (MPOL_BIND, no MPOL_MF_MOVE): what
 *            is on RUN already stays there, and nothing may go there any more;
 *            "bound" is appended to READY_FILE.bound when done.
 *   SIGUSR2  exec of itself, with the same arguments (same pid, start time and pidfd,
 *            a new address space). The new program maps its region at the same
 *            address, touches it on node TOUCH and runs there (its memory is local:
 *            no new plan moves it), and writes READY_FILE.exec. What a stale plan
 *            would move is then the new program's memory.
 *
 *   rebind SIZE_MB TOUCH_NODE RUN_NODE READY_FILE */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "pin.h"

static char *mem;
static size_t len;
static int run_node;
static volatile sig_atomic_t want_bind, want_exec;

static void on_signal(int sig) {
        if (sig == SIGUSR1)
                want_bind = 1;
        else
                want_exec = 1;
}

static void *reader(void *arg) {
        volatile uint64_t sum = 0;

        pin_to_node(run_node);
        for (;;) {
                for (size_t i = 0; i < len; i += 4096)
                        sum += (uint8_t) mem[i];
                usleep(20000);
        }
        return NULL;
}

static void write_ready(const char *path, const char *text) {
        char tmp[4096];
        FILE *f;

        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        f = fopen(tmp, "w");
        if (!f) {
                perror(tmp);
                exit(1);
        }
        fputs(text, f);
        fclose(f);
        rename(tmp, path);
}

int main(int argc, char **argv) {
        struct sigaction sa = { .sa_handler = on_signal };
        int touch_node;
        char text[128], path[4096];
        pthread_t t;

        if (argc != 5) {
                fprintf(stderr, "usage: rebind SIZE_MB TOUCH_NODE RUN_NODE READY_FILE\n");
                return 2;
        }
        len = (size_t) atol(argv[1]) << 20;
        touch_node = atoi(argv[2]);
        run_node = atoi(argv[3]);
        if (numa_available() < 0 || len == 0) {
                fprintf(stderr, "rebind: bad arguments\n");
                return 2;
        }
        sigaction(SIGUSR1, &sa, NULL);
        sigaction(SIGUSR2, &sa, NULL);
        if (getenv("REBIND_ADDR")) {
                /* After the exec: where the old program had its region, run locally. */
                void *at = (void *) (uintptr_t) strtoull(getenv("REBIND_ADDR"), NULL, 16);
                mem = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
                run_node = touch_node;
        } else
                mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        /* Base pages: a move call then moves what a batch holds, not a whole region of
         * huge pages at once, and the rate limit spreads the job over many calls. */
        madvise(mem, len, MADV_NOHUGEPAGE);
        pin_to_node(touch_node);
        memset(mem, 1, len);
        pin_to_node(run_node);
        snprintf(text, sizeof(text), "%d %lx %zu\n", (int) getpid(), (unsigned long) mem, len);
        snprintf(path, sizeof(path), "%s%s", argv[4], getenv("REBIND_ADDR") ? ".exec" : "");
        write_ready(path, text);
        pthread_create(&t, NULL, reader, NULL);

        for (;;) {
                if (want_bind) {
                        unsigned long mask = 1ul << touch_node;

                        want_bind = 0;
                        if (mbind(mem, len, MPOL_BIND, &mask, 64, 0) < 0) {
                                perror("mbind");
                                return 1;
                        }
                        snprintf(path, sizeof(path), "%s.bound", argv[4]);
                        write_ready(path, "bound\n");
                }
                if (want_exec) {
                        char addr[32];

                        snprintf(addr, sizeof(addr), "%lx", (unsigned long) mem);
                        setenv("REBIND_ADDR", addr, 1);
                        execv("/proc/self/exe", argv);
                        perror("execv");
                        return 1;
                }
                usleep(10000);
        }
}
