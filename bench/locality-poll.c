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
 * daemon it is not). This program does one read per file. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES 1024
#define BUF_SIZE (4u << 20)

static char buf[BUF_SIZE];

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads a whole small file into buf, NUL-terminated; -1 if it cannot be read. */
static ssize_t slurp(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        size_t len = 0;

        if (fd < 0)
                return -1;
        for (;;) {
                ssize_t n = read(fd, buf + len, BUF_SIZE - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t) n;
                if (len == BUF_SIZE - 1)
                        break;
        }
        close(fd);
        buf[len] = 0;
        return (ssize_t) len;
}

/* The nodes the threads of pid last ran on; false if the process is gone. */
static bool thread_nodes(int pid, bool nodes[MAX_NODES]) {
        char path[64];
        DIR *d;
        struct dirent *e;

        snprintf(path, sizeof(path), "/proc/%d/task", pid);
        d = opendir(path);
        if (!d)
                return false;
        memset(nodes, 0, MAX_NODES * sizeof(bool));
        while ((e = readdir(d))) {
                char statpath[300], *p;
                int field = 2, cpu, node;

                if (e->d_name[0] == '.')
                        continue;
                snprintf(statpath, sizeof(statpath), "/proc/%d/task/%s/stat", pid, e->d_name);
                if (slurp(statpath) < 0 || !(p = strrchr(buf, ')')))
                        continue;
                /* Field 39 is the CPU it last ran on; p points at the end of field 2. */
                while (field < 39 && (p = strchr(p + 1, ' ')))
                        field++;
                if (!p)
                        continue;
                cpu = atoi(p + 1);
                node = numa_node_of_cpu(cpu);
                if (node >= 0 && node < MAX_NODES)
                        nodes[node] = true;
        }
        closedir(d);
        return true;
}

/* The local share, or -1 if the process is gone. */
static double local_share(int pid) {
        static bool nodes[MAX_NODES];
        char path[64];
        double total = 0, local = 0;
        char *line, *save = NULL;

        if (!thread_nodes(pid, nodes))
                return -1;
        snprintf(path, sizeof(path), "/proc/%d/numa_maps", pid);
        if (slurp(path) < 0)
                return -1;
        for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                double kb = 4, pages[64];
                int node[64], n = 0;
                char *tok, *s2 = NULL;

                strtok_r(line, " ", &s2);     /* the address */
                while ((tok = strtok_r(NULL, " ", &s2))) {
                        if (strncmp(tok, "kernelpagesize_kB=", 18) == 0)
                                kb = atof(tok + 18);
                        else if (tok[0] == 'N' && tok[1] >= '0' && tok[1] <= '9' && strchr(tok, '=') && n < 64) {
                                node[n] = atoi(tok + 1);
                                pages[n] = atof(strchr(tok, '=') + 1);
                                n++;
                        }
                }
                for (int i = 0; i < n; i++) {
                        total += pages[i] * kb;
                        if (node[i] >= 0 && node[i] < MAX_NODES && nodes[node[i]])
                                local += pages[i] * kb;
                }
        }
        return total > 0 ? local / total : 0.0;
}

int main(int argc, char **argv) {
        int pid;
        double t0, interval, limit, done_after, t95 = -1;

        if (argc != 6 || numa_available() < 0) {
                fprintf(stderr, "usage: locality-poll PID T0 INTERVAL_MS LIMIT_S DONE_AFTER_S\n");
                return 2;
        }
        pid = atoi(argv[1]);
        t0 = atof(argv[2]);
        interval = atof(argv[3]) / 1000;
        limit = atof(argv[4]);
        done_after = atof(argv[5]);
        for (;;) {
                double t = now() - t0, share = local_share(pid);
                struct timespec ts;

                if (share < 0)
                        break;
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
