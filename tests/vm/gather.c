/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A process for the thread-placement scenarios (mode place): SIZE MiB first-touched on
 * node TOUCH (under MPOL_BIND to TOUCH with POLICY bind, else the default policy), then
 * THREADS threads that all read the whole of it, started on the CPUs of node START.
 * With AFFINITY free each thread then gives itself every online CPU back (as
 * `perf bench numa` does), so its affinity is no choice of the application's and the
 * scheduler may move it: it keeps running on START until something moves it. With
 * AFFINITY pinned the threads stay pinned to START: the application's own choice,
 * which the daemon must never touch. The main thread sleeps.
 *
 * Writes "<pid> <start-hex> <length> <tid>..." to READY_FILE once the threads run, and
 * runs until killed. On SIGUSR1 the first reader thread forks a child that execs
 * `sleep 3600` (it inherits that thread's CPU affinity, across the exec, as any child
 * of a placed thread does) and writes the child's pid to READY_FILE.child.
 *
 *   gather SIZE_MB TOUCH_NODE START_NODE THREADS free|pinned default|bind READY_FILE */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "pin.h"

#define THREADS_MAX 64

static char *mem;
static size_t len;
static int start_node;
static bool pinned;
static pthread_barrier_t started;
static pid_t tids[THREADS_MAX];
static volatile sig_atomic_t fork_asked;
static const char *ready_file;

static void on_usr1(int sig) {
        (void) sig;
        fork_asked = 1;
}

/* From reader 0: a child carrying this thread's affinity, its pid in READY_FILE.child. */
static void fork_child(void) {
        char path[4096], tmp[4200];
        FILE *f;
        pid_t pid = fork();

        if (pid == 0) {
                execl("/bin/sleep", "sleep", "3600", (char *) NULL);
                _exit(127);
        }
        if (pid < 0)
                return;
        snprintf(path, sizeof(path), "%s.child", ready_file);
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        f = fopen(tmp, "w");
        if (!f)
                return;
        fprintf(f, "%d\n", (int) pid);
        fclose(f);
        rename(tmp, path);
}

static void unpin(void) {
        cpu_set_t all;
        long n = sysconf(_SC_NPROCESSORS_CONF);

        CPU_ZERO(&all);
        for (long c = 0; c < n && c < CPU_SETSIZE; c++)
                CPU_SET(c, &all);
        if (sched_setaffinity(0, sizeof(all), &all) < 0) {
                perror("sched_setaffinity");
                exit(1);
        }
}

static void *reader(void *arg) {
        volatile uint64_t sum = 0;
        size_t i = (size_t) (intptr_t) arg;

        pin_to_node(start_node);
        if (!pinned)
                unpin();  /* runs on start_node until the scheduler or the daemon moves it */
        tids[i] = (pid_t) syscall(SYS_gettid);
        pthread_barrier_wait(&started);
        for (;;) {
                for (size_t off = 0; off < len; off += 64)
                        sum += (uint64_t) mem[off];
                if (i == 0 && fork_asked) {
                        fork_asked = 0;
                        fork_child();
                }
        }
        return NULL;
}

static void touch(int node, bool bind) {
        pin_to_node(node);
        mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
                perror("mmap");
                exit(1);
        }
        if (bind) {
                unsigned long mask = 1UL << node;
                if (mbind(mem, len, MPOL_BIND, &mask, sizeof(mask) * 8, 0) < 0) {
                        perror("mbind");
                        exit(1);
                }
        }
        memset(mem, 1, len);
        unpin();
}

int main(int argc, char **argv) {
        pthread_t th[THREADS_MAX];
        unsigned n;
        FILE *f;
        char tmp[4096];

        if (argc != 8) {
                fprintf(stderr, "usage: gather SIZE_MB TOUCH_NODE START_NODE THREADS free|pinned default|bind "
                                "READY_FILE\n");
                return 2;
        }
        len = strtoull(argv[1], NULL, 10) << 20;
        start_node = atoi(argv[3]);
        n = (unsigned) atoi(argv[4]);
        pinned = strcmp(argv[5], "pinned") == 0;
        if (n == 0 || n > THREADS_MAX || numa_available() < 0)
                return 2;
        ready_file = argv[7];
        signal(SIGUSR1, on_usr1);
        signal(SIGCHLD, SIG_IGN);   /* no zombies: the scenario kills the children */
        touch(atoi(argv[2]), strcmp(argv[6], "bind") == 0);
        pthread_barrier_init(&started, NULL, n + 1);
        for (unsigned i = 0; i < n; i++)
                if (pthread_create(&th[i], NULL, reader, (void *) (intptr_t) i) != 0)
                        return 1;
        pthread_barrier_wait(&started);
        snprintf(tmp, sizeof(tmp), "%s.tmp", argv[7]);
        f = fopen(tmp, "w");
        if (!f)
                return 1;
        fprintf(f, "%d %lx %zu", (int) getpid(), (unsigned long) (uintptr_t) mem, len);
        for (unsigned i = 0; i < n; i++)
                fprintf(f, " %d", (int) tids[i]);
        fprintf(f, "\n");
        fclose(f);
        rename(tmp, argv[7]);
        for (;;)
                pause();
}
