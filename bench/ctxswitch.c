/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A context-switch storm: two threads pinned to the same CPU pass a byte back and forth
 * over two pipes, so every hand-over is a sched_switch. Prints one JSON line: round
 * trips, switches (2 per round trip, at least), seconds, ns per switch.
 *
 *   ctxswitch CPU ROUND_TRIPS [READY_FILE]
 * With READY_FILE, writes its pid there and waits for SIGUSR1 before starting (so that
 * a benchmark can watch the pid first). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static long rounds;
static int cpu;

static void pin(void) {
        cpu_set_t s;
        CPU_ZERO(&s);
        CPU_SET(cpu, &s);
        if (sched_setaffinity(0, sizeof(s), &s) < 0) {
                perror("sched_setaffinity");
                exit(1);
        }
}

static void *echo(void *arg) {
        char c;
        pin();
        for (long i = 0; i < rounds; i++)
                if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
                        exit(1);
        return NULL;
}

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
        pthread_t t;
        double t0, t1;
        char c = 'x';

        if (argc < 3 || argc > 4) {
                fprintf(stderr, "usage: ctxswitch CPU ROUND_TRIPS [READY_FILE]\n");
                return 2;
        }
        cpu = atoi(argv[1]);
        rounds = atol(argv[2]);
        if (argc == 4) {
                sigset_t set;
                int sig;
                FILE *f;
                sigemptyset(&set);
                sigaddset(&set, SIGUSR1);
                sigprocmask(SIG_BLOCK, &set, NULL);
                f = fopen(argv[3], "w");
                if (!f || fprintf(f, "%d\n", (int) getpid()) < 0 || fclose(f) != 0) {
                        perror(argv[3]);
                        return 1;
                }
                sigwait(&set, &sig);
        }
        if (pipe(ping) < 0 || pipe(pong) < 0)
                return 1;
        pin();
        if (pthread_create(&t, NULL, echo, NULL) != 0)
                return 1;
        t0 = now();
        for (long i = 0; i < rounds; i++)
                if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
                        return 1;
        t1 = now();
        pthread_join(t, NULL);
        printf("{\"round_trips\": %ld, \"switches\": %ld, \"seconds\": %.3f, \"ns_per_switch\": %.1f}\n",
               rounds, 2 * rounds, t1 - t0, (t1 - t0) * 1e9 / (double) (2 * rounds));
        return 0;
}
