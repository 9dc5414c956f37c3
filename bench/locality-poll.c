/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The benchmarks' observer: the local share of one process, polled at a fixed interval,
 * as numabalancectl show computes it (the share of its resident memory in
 * /proc/PID/numa_maps on the nodes of the CPUs its threads last ran on).
 *
 *   locality-poll PID T0 INTERVAL_MS LIMIT_S DONE_AFTER_S
 *
 * T0: the start of the clock, in seconds since the epoch (CLOCK_REALTIME, as Python's
 * time.time()). Prints "SECONDS SHARE" per poll and stops once SECONDS passes LIMIT_S,
 * DONE_AFTER_S after the first share of 0.95 or more, or when the process is gone.
 *
 * Why not Python: the same poll in the bench's Python took 10.9 ms of a vCPU in the TCG
 * guest, 9.8% of a CPU at 10 polls a second, and in a 2n1c guest that CPU is either the
 * daemon's only service CPU or the workload's: the observer slowed whichever balancer
 * shared a CPU with it (with the kernel's balancing CPU 0 is otherwise idle, with the
 * daemon it is not). The share is computed by the project's own readers and
 * lib/locality.c, the code numabalancectl show uses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cleanup.h"
#include "locality.h"
#include "numa_maps.h"
#include "proc.h"
#include "topology.h"

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The local share of pid, or -errno (-ESRCH and -ENOENT: gone). */
static int local_share(const struct topology *t, pid_t pid, double *ret) {
        _cleanup_free_ pid_t *tids = NULL;
        _cleanup_free_ int *cpus = NULL;
        _cleanup_(numa_maps_freep) struct numa_maps *maps = NULL;
        struct locality loc;
        size_t n = 0, n_cpus = 0;
        int r;

        r = proc_list_tasks("/proc", pid, &tids, &n);
        if (r < 0)
                return r;
        cpus = calloc(n ? n : 1, sizeof(*cpus));
        if (!cpus)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct proc_stat st;
                /* A thread may exit between the listing and the read: skip it. */
                if (proc_read_task_stat("/proc", pid, tids[i], &st) == 0)
                        cpus[n_cpus++] = st.processor;
        }
        r = numa_maps_read("/proc", pid, &maps);
        if (r < 0)
                return r;
        r = locality_compute(t, maps, cpus, n_cpus, &loc);
        if (r < 0)
                return r;
        *ret = locality_share(&loc);
        locality_done(&loc);
        return 0;
}

int main(int argc, char **argv) {
        _cleanup_(topology_freep) struct topology *topo = NULL;
        pid_t pid;
        double t0, interval, limit, done_after, t95 = -1;

        if (argc != 6 || topology_read("/sys", &topo) < 0) {
                fprintf(stderr, "usage: locality-poll PID T0 INTERVAL_MS LIMIT_S DONE_AFTER_S\n");
                return 2;
        }
        pid = (pid_t) atoi(argv[1]);
        t0 = atof(argv[2]);
        interval = atof(argv[3]) / 1000;
        limit = atof(argv[4]);
        done_after = atof(argv[5]);
        for (;;) {
                double t = now() - t0, share;
                struct timespec ts;
                int r = local_share(topo, pid, &share);

                if (r < 0) {
                        if (r == -ESRCH || r == -ENOENT)
                                break;      /* the process is gone: the timeline ends */
                        fprintf(stderr, "locality-poll: pid %d: %s\n", (int) pid, strerror(-r));
                        return 1;
                }
                printf("%.3f %.4f\n", t, share);
                fflush(stdout);
                if (t95 < 0 && share >= 0.95)
                        t95 = t;
                if (t > limit || (t95 >= 0 && t > t95 + done_after))
                        break;
                ts.tv_sec = (time_t) interval;
                ts.tv_nsec = (long) ((interval - (double) ts.tv_sec) * 1e9);
                nanosleep(&ts, NULL);
        }
        return 0;
}
