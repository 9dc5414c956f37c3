/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A misplaced workload for the engine scenarios: first-touches SIZE MiB while running
 * on a CPU of node TOUCH (optionally under a memory policy), then moves its threads
 * to node RUN and keeps reading its memory there, so that the CPU time is on RUN and
 * the memory is not. It writes "<pid> <start-hex> <length>" to READY_FILE once the
 * memory is placed, and runs until killed.
 *
 *   workload SIZE_MB TOUCH_NODE RUN_NODE POLICY THREADS READY_FILE [PAGES]
 *   POLICY: default | bind:LIST | interleave:LIST | prefer:N | weighted:LIST (weighted
 *           interleave, 6.9+) | prefer-many:LIST (5.15+) | bind-balancing:LIST (MPOL_BIND
 *           with MPOL_F_NUMA_BALANCING): the memory's VMA policy (mbind; a kernel
 *           without the mode or flag refuses it: the workload exits 1 and says so);
 *           thread-bind:LIST and the like: no VMA policy, the memory is mapped
 *           and touched by a thread that gave itself that policy (set_mempolicy(2))
 *           and then reads it on RUN with the others (the main thread keeps default)
 *   PAGES:  system (default: whatever the system's THP setting gives, which on Debian's
 *           kernel is "always"), 4k (MADV_NOHUGEPAGE), thp (MADV_HUGEPAGE)
 *
 * WORKLOAD_RESERVE_GIB=N in the environment also maps N GiB (MAP_NORESERVE) and touches
 * its first 4 MiB on TOUCH: a huge, mostly empty mapping like ASan's shadow or a heap
 * reservation. Its start goes to READY_FILE as a fourth field.
 * WORKLOAD_MLOCK=1 locks the memory (mlock(2)) once it is placed.
 * WORKLOAD_GROW_MB=N: on SIGUSR1 the main thread maps N MiB more under the same VMA
 * policy, touches them on RUN (where it runs) and reads them with the rest from then
 * on; it writes "<start-hex> <length>" to READY_FILE.grown once they are placed (new
 * memory of a settled process).
 * WORKLOAD_HOT_MB=N: once placed, the readers read only the first N MiB (the rest is
 * cold: touched once, never again), for the DAMON scenario. */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "pin.h"

/* Newer than some numaif.h: the values are the kernel's (uapi/linux/mempolicy.h). */
#ifndef MPOL_PREFERRED_MANY
#define MPOL_PREFERRED_MANY 5          /* 5.15 */
#endif
#ifndef MPOL_WEIGHTED_INTERLEAVE
#define MPOL_WEIGHTED_INTERLEAVE 6     /* 6.9 */
#endif
#ifndef MPOL_F_NUMA_BALANCING
#define MPOL_F_NUMA_BALANCING (1 << 13) /* 5.12, with MPOL_BIND */
#endif

static char *mem;
static size_t len;
static int run_node;
/* WORKLOAD_GROW_MB: the memory added on SIGUSR1, published once touched. */
static volatile sig_atomic_t grow_requested;
static char *grown;
static size_t grown_len, grow_len;
static size_t read_len;         /* what the readers read: len, or WORKLOAD_HOT_MB */
static const char *ready_path;

/* What place() needs, set by main. */
static int touch_node, mode;
static unsigned long mask;
static const char *pages;
static bool thread_policy;
static int placed = -1;         /* place()'s result once it ran */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void grow(void);

/* arg non-NULL: the main thread's reader, which also grows the memory on SIGUSR1. */
static void *reader(void *arg) {
        volatile uint64_t sum = 0;
        pin_to_node(run_node);
        for (;;) {
                char *g = __atomic_load_n(&grown, __ATOMIC_ACQUIRE);

                if (arg && grow_requested && !g) {
                        grow();
                        continue;
                }
                for (size_t i = 0; i < read_len; i += 4096)
                        sum += (uint8_t) mem[i];
                for (size_t i = 0; g && i < grown_len; i += 4096)
                        sum += (uint8_t) g[i];
                /* Leave some CPU for the daemon and the guest on 1-vCPU nodes. */
                usleep(20000);
        }
        return NULL;
}

static int parse_policy(const char *s, int *ret_mode, unsigned long *ret_mask) {
        const char *colon;

        if (strncmp(s, "thread-", 7) == 0) {
                thread_policy = true;
                s += 7;
        }
        colon = strchr(s, ':');
        *ret_mask = 0;
        if (strcmp(s, "default") == 0) {
                *ret_mode = MPOL_DEFAULT;
                return 0;
        }
        if (!colon)
                return -1;
        /* Longer names first: "bind-balancing" before "bind", "prefer-many" before "prefer". */
        if (strncmp(s, "bind-balancing:", 15) == 0)
                *ret_mode = MPOL_BIND | MPOL_F_NUMA_BALANCING;
        else if (strncmp(s, "bind", 4) == 0)
                *ret_mode = MPOL_BIND;
        else if (strncmp(s, "interleave", 10) == 0)
                *ret_mode = MPOL_INTERLEAVE;
        else if (strncmp(s, "weighted", 8) == 0)
                *ret_mode = MPOL_WEIGHTED_INTERLEAVE;
        else if (strncmp(s, "prefer-many:", 12) == 0)
                *ret_mode = MPOL_PREFERRED_MANY;
        else if (strncmp(s, "prefer", 6) == 0)
                *ret_mode = MPOL_PREFERRED;
        else
                return -1;
        /* Test-only input: a short list like "0-1" or "1,3" (trusted, from the test). */
        for (const char *p = colon + 1; *p;) {
                char *end;
                long a = strtol(p, &end, 10), b = a;
                if (end == p || a < 0 || a > 63)
                        return -1;
                if (*end == '-') {
                        p = end + 1;
                        b = strtol(p, &end, 10);
                        if (end == p || b < a || b > 63)
                                return -1;
                }
                for (long x = a; x <= b; x++)
                        *ret_mask |= 1ul << x;
                p = *end == ',' ? end + 1 : end;
                if (*end && *end != ',')
                        return -1;
        }
        return 0;
}

/* Maps len bytes, 2 MiB aligned, under the policy (a VMA policy, or with thread_policy
 * the calling thread's own), and touches them on touch_node. 0 or 1 (said why). */
static int place(void) {
        char *raw;
        size_t head;

        if (thread_policy && mode != MPOL_DEFAULT && set_mempolicy(mode, &mask, 64) < 0) {
                perror("set_mempolicy");
                return 1;
        }
        /* 2 MiB aligned, as a large allocation from malloc would be, so that THP can
         * back it when the system or PAGES says so. */
        raw = mmap(NULL, len + (2u << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        /* Trim the slack so that the VMA starts where the test will look for it. */
        mem = (char *) (((uintptr_t) raw + (2u << 20) - 1) & ~(uintptr_t) ((2u << 20) - 1));
        head = (size_t) (mem - raw);
        if (head)
                munmap(raw, head);
        munmap(mem + len, (2u << 20) - head);
        if (strcmp(pages, "4k") == 0)
                madvise(mem, len, MADV_NOHUGEPAGE);
        else if (strcmp(pages, "thp") == 0)
                madvise(mem, len, MADV_HUGEPAGE);
        if (!thread_policy && mode != MPOL_DEFAULT && mbind(mem, len, mode, &mask, 64, 0) < 0) {
                perror("mbind");
                return 1;
        }
        pin_to_node(touch_node);
        memset(mem, 1, len);
        if (getenv("WORKLOAD_MLOCK") && mlock(mem, len) < 0) {
                perror("mlock");
                return 1;
        }
        return 0;
}

static void write_ready(const char *path, const char *text) {
        char tmp[4096];
        FILE *f;

        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        f = fopen(tmp, "w");
        if (!f) {
                perror("ready file");
                exit(1);
        }
        fputs(text, f);
        fclose(f);
        rename(tmp, path);
}

static void on_usr1(int sig) {
        grow_requested = 1;
}

/* WORKLOAD_GROW_MB more, placed from where this thread runs (RUN) under the same VMA
 * policy, then published to the readers and to READY_FILE.grown. */
static void grow(void) {
        char path[4096], text[64];
        char *g = mmap(NULL, grow_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (g == MAP_FAILED) {
                perror("workload: grow: mmap");
                exit(1);
        }
        if (!thread_policy && mode != MPOL_DEFAULT && mbind(g, grow_len, mode, &mask, 64, 0) < 0) {
                perror("workload: grow: mbind");
                exit(1);
        }
        memset(g, 1, grow_len);
        grown_len = grow_len;
        __atomic_store_n(&grown, g, __ATOMIC_RELEASE);
        snprintf(path, sizeof(path), "%s.grown", ready_path);
        snprintf(text, sizeof(text), "%lx %zu\n", (unsigned long) g, grow_len);
        write_ready(path, text);
}

/* The thread that places the memory under its own policy, then reads it on RUN. */
static void *placer(void *arg) {
        int r = place();

        /* On RUN before main says ready (see main). */
        if (r == 0)
                pin_to_node(run_node);
        pthread_mutex_lock(&lock);
        placed = r;
        pthread_cond_signal(&cond);
        pthread_mutex_unlock(&lock);
        if (r == 0)
                reader(NULL);
        return arg;
}

static int place_in_thread(void) {
        pthread_t t;

        if (pthread_create(&t, NULL, placer, NULL) != 0)
                return 1;
        pthread_mutex_lock(&lock);
        while (placed < 0)
                pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
        return placed;
}

int main(int argc, char **argv) {
        int threads;
        pthread_t t;
        char tmp[4096], *reserve = NULL;

        pages = argc > 7 ? argv[7] : "system";
        if (argc != 7 && argc != 8) {
                fprintf(stderr, "usage: workload SIZE_MB TOUCH_NODE RUN_NODE POLICY THREADS READY_FILE [system|4k|thp]\n");
                return 2;
        }
        len = (size_t) atol(argv[1]) << 20;
        touch_node = atoi(argv[2]);
        run_node = atoi(argv[3]);
        threads = atoi(argv[5]);
        if (numa_available() < 0 || parse_policy(argv[4], &mode, &mask) < 0 || len == 0 || threads < 1) {
                fprintf(stderr, "workload: bad arguments\n");
                return 2;
        }
        if (strcmp(pages, "4k") != 0 && strcmp(pages, "thp") != 0 && strcmp(pages, "system") != 0) {
                fprintf(stderr, "workload: PAGES must be system, 4k or thp\n");
                return 2;
        }
        if (thread_policy ? place_in_thread() : place())
                return 1;
        if (getenv("WORKLOAD_RESERVE_GIB")) {
                size_t rlen = (size_t) atol(getenv("WORKLOAD_RESERVE_GIB")) << 30;
                reserve = mmap(NULL, rlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
                if (rlen == 0 || reserve == MAP_FAILED) {
                        perror("workload: WORKLOAD_RESERVE_GIB");
                        return 1;
                }
                memset(reserve, 1, 4u << 20);
        }

        /* Every thread is on RUN before the ready file exists: a test reading where the
         * threads run right after it must not see the touch node (which made its memory
         * look local), and the threads created below inherit the pinning. */
        pin_to_node(run_node);
        ready_path = argv[6];
        read_len = len;
        if (getenv("WORKLOAD_HOT_MB")) {
                read_len = (size_t) atol(getenv("WORKLOAD_HOT_MB")) << 20;
                if (read_len == 0 || read_len > len) {
                        fprintf(stderr, "workload: bad WORKLOAD_HOT_MB\n");
                        return 2;
                }
        }
        if (getenv("WORKLOAD_GROW_MB")) {
                grow_len = (size_t) atol(getenv("WORKLOAD_GROW_MB")) << 20;
                if (grow_len == 0 || signal(SIGUSR1, on_usr1) == SIG_ERR) {
                        fprintf(stderr, "workload: bad WORKLOAD_GROW_MB\n");
                        return 2;
                }
        }
        if (reserve)
                snprintf(tmp, sizeof(tmp), "%d %lx %zu %lx\n", (int) getpid(), (unsigned long) mem, len,
                         (unsigned long) reserve);
        else
                snprintf(tmp, sizeof(tmp), "%d %lx %zu\n", (int) getpid(), (unsigned long) mem, len);
        write_ready(ready_path, tmp);

        for (int i = 1; i < threads; i++)
                pthread_create(&t, NULL, reader, NULL);
        reader(&grow_len);   /* non-NULL: this reader grows the memory */
        return 0;
}
